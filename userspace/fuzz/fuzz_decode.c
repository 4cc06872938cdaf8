// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target over the wire decoders.  Whatever decodes must re-encode
 * to the same bytes (the format is canonical), and must be safe to feed to
 * a fresh receiver or a sender with packets in flight; every ACK a receiver
 * builds must encode.
 */
#include <stdint.h>
#include <stdlib.h>

#include "vt_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static void feed_receiver(const struct vt_data_hdr *h, const uint8_t *data)
{
	struct vt_conn *c = calloc(1, sizeof(*c));
	struct vt_config cfg;
	struct vt_rx_verdict v;
	struct vt_ack a;
	uint8_t out[VT_ACK_LEN];

	vt_config_default(&cfg);
	cfg.cc = data[3] % VT_CC_MAX;
	check(c && vt_conn_init(c, &cfg, 1, 2, 0, h->psn - data[2], 0) == 0);
	check(vt_rx_on_data(c, 1000, h, data[5] & 1, data[6] % 5, &v) == 0);
	check(v.result <= VT_RX_NACKED);
	vt_rx_build_ack(c, 2000, &a);
	check(vt_ack_encode(&a, out, sizeof(out)) == VT_ACK_LEN);
	free(c);
}

static void feed_sender(const struct vt_ack *a, const uint8_t *data)
{
	struct vt_conn *c = calloc(1, sizeof(*c));
	struct vt_config cfg;
	struct vt_tx_decision d;
	struct vt_ack_result r;
	uint64_t now;
	int i;

	vt_config_default(&cfg);
	cfg.cc = data[2] % VT_CC_MAX;
	cfg.num_paths = 1 + data[3] % 8;
	cfg.mtu = 1000;
	check(c && vt_conn_init(c, &cfg, 1, 2, a->cum_psn - data[5] % 40,
				0, 0) == 0);
	check(vt_tx_enqueue(c, 1, 40 * 1000) == 0);
	for (i = 0; i < 40; i++)
		vt_tx_poll(c, i * 100, &d);
	now = 10000 + (a->echo_ts & 0xfffff);
	vt_tx_on_ack(c, now, a, &r);
	check(c->tx.inflight <= 40 && c->tx.lost <= 40);
	for (i = 0; i < 50; i++) {
		if (vt_tx_poll(c, now, &d) == VT_TX_WAIT) {
			now = d.wake_at;
			vt_tx_on_timer(c, now);
		} else if (d.action != VT_TX_SEND && d.action != VT_TX_RETX) {
			break;
		}
	}
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_data_hdr h;
	struct vt_ack a;
	uint8_t out[VT_DATA_HDR_LEN];
	int rc;

	rc = vt_pkt_opcode(data, size);
	check(rc >= VT_ERR_OPCODE || rc == VT_ERR_INVAL);
	rc = vt_data_hdr_decode(data, size, &h);
	if (rc > 0) {
		check(rc == VT_DATA_HDR_LEN);
		check(vt_data_hdr_encode(&h, out, sizeof(out)) == rc);
		check(!memcmp(out, data, VT_DATA_HDR_LEN));
		/* UD_SEND bypasses the reliable engine */
		if (h.opcode != VT_OP_UD_SEND)
			feed_receiver(&h, data);
	}
	if (size >= VT_ATOMIC_REQ_LEN) {
		struct vt_atomic at;
		uint8_t atout[VT_ATOMIC_REQ_LEN];

		/* the atomic payload is canonical too */
		if (vt_atomic_decode(data, VT_ATOMIC_REQ_LEN, &at) > 0) {
			check(vt_atomic_encode(&at, atout, sizeof(atout)) ==
			      VT_ATOMIC_REQ_LEN);
			check(!memcmp(atout, data, VT_ATOMIC_REQ_LEN));
		}
	}
	rc = vt_ack_decode(data, size, &a);
	if (rc > 0) {
		uint8_t aout[VT_ACK_LEN];

		check(rc == VT_ACK_LEN);
		check(vt_ack_encode(&a, aout, sizeof(aout)) == rc);
		check(!memcmp(aout, data, VT_ACK_LEN));
		feed_sender(&a, data);
	}
	return 0;
}
