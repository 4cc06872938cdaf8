// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Runs the fuzz target without libFuzzer (any compiler): over the files
 * given as arguments, or over seeded pseudo-random inputs biased towards
 * valid headers.  ctest runs it so that gcc builds exercise the target too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	static uint8_t buf[VT_DATA_HDR_LEN + 4096];
	struct vt_data_hdr h;
	struct vt_ack a;
	long iters = 200000, i;
	size_t len, j;

	if (argc > 1) {
		for (i = 1; i < argc; i++) {
			FILE *f = fopen(argv[i], "rb");

			if (!f)
				return 2;
			len = fread(buf, 1, sizeof(buf), f);
			fclose(f);
			LLVMFuzzerTestOneInput(buf, len);
		}
		return 0;
	}
	for (i = 0; i < iters; i++) {
		switch (i % 4) {
		case 0: /* valid data header, then mutated */
			memset(&h, 0, sizeof(h));
			h.opcode = 1 + next() % 2;
			h.flags = VT_F_SOM | VT_F_EOM;
			h.payload_len = next() % 64;
			h.msg_len = h.payload_len;
			h.psn = (uint32_t)next();
			h.tx_ts = next();
			len = VT_DATA_HDR_LEN + h.payload_len;
			vt_data_hdr_encode(&h, buf, sizeof(buf));
			break;
		case 1: /* valid ACK, then mutated */
			memset(&a, 0, sizeof(a));
			a.opcode = VT_OP_ACK;
			a.cum_psn = (uint32_t)next();
			a.echo_ts = next() % 100000;
			a.rwnd = next();
			a.sack[0] = next() & ~1ULL;
			a.sack[1] = next();
			if (next() & 1) {
				a.opcode = VT_OP_NACK;
				a.nack_code = 1 + next() % VT_NACK_MAX;
			}
			len = VT_ACK_LEN;
			vt_ack_encode(&a, buf, sizeof(buf));
			break;
		default:
			len = 1 + next() % 160;
			for (j = 0; j < len; j++)
				buf[j] = (uint8_t)next();
			buf[0] = VT_WIRE_VERSION;
			break;
		}
		if (i % 8 >= 4 && len) /* flip a byte or cut the buffer */
			buf[next() % len] ^= (uint8_t)(1 + next() % 255);
		if (i % 16 == 15)
			len = next() % (len + 1);
		LLVMFuzzerTestOneInput(buf, len ? len : 1);
	}
	printf("fuzz_replay: %ld inputs, no crash\n", iters);
	return 0;
}
