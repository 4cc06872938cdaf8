// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Wire format: byte layout, round trips, and rejection of every malformed input.
#include "vt_test.h"

#include <gtest/gtest.h>
#include <random>
#include <vector>

using namespace vtt;

namespace {

vt_data_hdr full_hdr()
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = VT_OP_SEND;
	h.flags = VT_F_SOM | VT_F_IMM;
	h.path = 7;
	h.payload_len = 100;
	h.dst_conn = 0x11223344;
	h.psn = 0xfffffffe;
	h.tx_ts = 0x0102030405060708ull;
	h.msg_id = 0xaabbccdd;
	h.msg_off = 0;
	h.msg_len = 256;
	h.rkey = 0x55667788;
	h.va = 0x1122334455667788ull;
	h.imm = 0xdeadbeef;
	return h;
}

std::vector<uint8_t> enc(const vt_data_hdr &h)
{
	std::vector<uint8_t> b(VT_DATA_HDR_LEN + h.payload_len, 0xee);
	EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
	return b;
}

vt_ack full_ack()
{
	vt_ack a;
	memset(&a, 0, sizeof(a));
	a.opcode = VT_OP_NACK;
	a.flags = VT_AF_DUP;
	a.echo_path = 3;
	a.nack_code = VT_NACK_RNR;
	a.ce_count = 9;
	a.rwnd = 512;
	a.rnr_wait_us = 640;
	a.dst_conn = 77;
	a.cum_psn = 0x80000000u;
	a.trig_psn = 0x80000005u;
	a.hold_ns = 1234;
	a.echo_ts = 987654321;
	a.sack[0] = 0x2;
	a.sack[3] = 1ull << 63;
	return a;
}

std::vector<uint8_t> enc(const vt_ack &a)
{
	std::vector<uint8_t> b(VT_ACK_LEN);
	EXPECT_EQ(vt_ack_encode(&a, b.data(), b.size()), VT_ACK_LEN);
	return b;
}

} // namespace

TEST(Psn, WraparoundComparisons)
{
	EXPECT_TRUE(vt_psn_lt(0xffffffffu, 0));
	EXPECT_FALSE(vt_psn_lt(0, 0xffffffffu));
	EXPECT_EQ(vt_psn_diff(2, 0xfffffffeu), 4);
	EXPECT_EQ(vt_psn_diff(0xfffffffeu, 2), -4);
	EXPECT_TRUE(vt_psn_le(5, 5));
	EXPECT_TRUE(vt_psn_lt(0x7fffffffu, 0xfffffffeu));
	EXPECT_FALSE(vt_psn_lt(0x7fffffffu, 0x80000000u + 0x7fffffffu + 1));
}

TEST(Wire, DataByteLayoutIsBigEndianAndDocumented)
{
	auto b = enc(full_hdr());
	EXPECT_EQ(b[0], VT_WIRE_VERSION);
	EXPECT_EQ(b[1], VT_OP_SEND);
	EXPECT_EQ(b[2], VT_F_SOM | VT_F_IMM);
	EXPECT_EQ(b[3], 7);
	EXPECT_EQ(b[4], 0x11);
	EXPECT_EQ(b[7], 0x44);
	EXPECT_EQ(b[8], 0xff);
	EXPECT_EQ(b[11], 0xfe);
	EXPECT_EQ(b[12], 0);
	EXPECT_EQ(b[13], 100);
	EXPECT_EQ(b[16], 0x01);
	EXPECT_EQ(b[23], 0x08);
	EXPECT_EQ(b[24], 0xaa);
	EXPECT_EQ(b[36], 0x55);
	EXPECT_EQ(b[40], 0x11);
	EXPECT_EQ(b[48], 0xde);
	EXPECT_EQ(b[55], 0);
	EXPECT_EQ(b[56], 0xee); // encode writes the header only
}

TEST(Wire, DataRoundTrip)
{
	vt_data_hdr h = full_hdr(), o;
	auto b = enc(h);
	ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.opcode, h.opcode);
	EXPECT_EQ(o.flags, h.flags);
	EXPECT_EQ(o.path, h.path);
	EXPECT_EQ(o.payload_len, h.payload_len);
	EXPECT_EQ(o.dst_conn, h.dst_conn);
	EXPECT_EQ(o.msg_id, h.msg_id);
	EXPECT_EQ(o.msg_off, h.msg_off);
	EXPECT_EQ(o.msg_len, h.msg_len);
	EXPECT_EQ(o.rkey, h.rkey);
	EXPECT_EQ(o.psn, h.psn);
	EXPECT_EQ(o.tx_ts, h.tx_ts);
	EXPECT_EQ(o.va, h.va);
	EXPECT_EQ(o.imm, h.imm);
}

TEST(Wire, DataDecodeRejectsEveryTruncation)
{
	auto b = enc(full_hdr());
	vt_data_hdr o;
	for (size_t l = 0; l < VT_DATA_HDR_LEN; l++)
		EXPECT_EQ(vt_data_hdr_decode(b.data(), l, &o), VT_ERR_TRUNC) << l;
	// header complete but payload short
	for (size_t l = VT_DATA_HDR_LEN; l < b.size(); l++)
		EXPECT_EQ(vt_data_hdr_decode(b.data(), l, &o), VT_ERR_LEN) << l;
}

TEST(Wire, DataDecodeRejectsOversized)
{
	auto b = enc(full_hdr());
	b.push_back(0);
	vt_data_hdr o;
	EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_ERR_LEN);
	// a payload_len above the jumbo bound, even with a matching buffer
	vt_data_hdr h = full_hdr();
	h.flags = VT_F_SOM;
	h.imm = 0;
	h.payload_len = VT_MAX_PAYLOAD + 1;
	h.msg_len = 100000;
	std::vector<uint8_t> big(VT_DATA_HDR_LEN + h.payload_len);
	EXPECT_EQ(vt_data_hdr_encode(&h, big.data(), big.size()), VT_ERR_LEN);
	h.payload_len = 100;
	ASSERT_EQ(vt_data_hdr_encode(&h, big.data(), big.size()), VT_DATA_HDR_LEN);
	big[12] = (VT_MAX_PAYLOAD + 1) >> 8;
	big[13] = (VT_MAX_PAYLOAD + 1) & 0xff;
	EXPECT_EQ(vt_data_hdr_decode(big.data(), big.size(), &o), VT_ERR_LEN);
}

TEST(Wire, DataDecodeRejectsBadFields)
{
	vt_data_hdr o;
	struct Case {
		size_t off;
		uint8_t val;
		int err;
	} cases[] = {
		{0, 0, VT_ERR_VERSION},  {0, 2, VT_ERR_VERSION},
		{1, 0, VT_ERR_OPCODE},   {1, 0x0a, VT_ERR_OPCODE},
		{1, VT_OP_ACK, VT_ERR_OPCODE},
		{2, VT_F_SE | VT_F_SOM, VT_ERR_FIELD}, // SE before EOM
		{2, 0x80 | VT_F_SOM, VT_ERR_FIELD},
		{2, VT_F_INV | VT_F_IMM | VT_F_SOM, VT_ERR_FIELD}, // INV with IMM
		{14, 1, VT_ERR_FIELD},   {15, 1, VT_ERR_FIELD},
		{52, 1, VT_ERR_FIELD},   {55, 1, VT_ERR_FIELD},
		{2, VT_F_SOM, VT_ERR_FIELD},      // imm set without VT_F_IMM
		{31, 1, VT_ERR_FIELD},            // SOM with a non-zero offset
		{2, VT_F_IMM | VT_F_SOM | VT_F_EOM, VT_ERR_FIELD}, // EOM but not at end
		{34, 0, VT_ERR_FIELD},            // msg_len below offset + payload
	};
	for (auto &c : cases) {
		auto b = enc(full_hdr());
		b[c.off] = c.val;
		EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), c.err) << c.off;
	}
	// last packet of a message that claims not to be the last
	vt_data_hdr h = full_hdr();
	h.flags = VT_F_SOM;
	h.imm = 0;
	h.msg_len = 100;
	std::vector<uint8_t> b(VT_DATA_HDR_LEN + 100);
	EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
	h.flags |= VT_F_EOM;
	EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
	EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
}

TEST(Wire, ReadRequestCarriesNoPayload)
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = VT_OP_READ_REQ;
	h.flags = VT_F_SOM | VT_F_EOM;
	h.msg_len = 1 << 20;
	uint8_t b[VT_DATA_HDR_LEN];
	vt_data_hdr o;
	ASSERT_EQ(vt_data_hdr_encode(&h, b, sizeof(b)), VT_DATA_HDR_LEN);
	ASSERT_EQ(vt_data_hdr_decode(b, sizeof(b), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.msg_len, 1u << 20);
	h.flags = VT_F_SOM;
	EXPECT_EQ(vt_data_hdr_encode(&h, b, sizeof(b)), VT_ERR_FIELD);
	h.flags = VT_F_SOM | VT_F_EOM;
	h.msg_off = 4;
	EXPECT_EQ(vt_data_hdr_encode(&h, b, sizeof(b)), VT_ERR_FIELD);
}

namespace {

vt_data_hdr ud_hdr()
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = VT_OP_UD_SEND;
	h.flags = VT_F_SOM | VT_F_EOM | VT_F_IMM;
	h.payload_len = 256;
	h.msg_len = 256;
	h.dst_conn = 1;		// the GSI QP
	h.msg_id = 0xabcdef;	// source QPN
	h.rkey = 0x80010000;	// qkey
	h.tx_ts = 42;
	h.imm = 0x01020304;
	return h;
}

} // namespace

TEST(Wire, UdSendRoundTripAndLayout)
{
	vt_data_hdr h = ud_hdr(), o;
	auto b = enc(h);
	EXPECT_EQ(b[1], VT_OP_UD_SEND);
	EXPECT_EQ(b[2], VT_F_SOM | VT_F_EOM | VT_F_IMM);
	EXPECT_EQ(b[7], 1);	// dst_conn = destination QPN
	EXPECT_EQ(b[25], 0xab); // msg_id = source QPN
	EXPECT_EQ(b[36], 0x80); // rkey = qkey
	EXPECT_EQ(b[48], 0x01); // imm
	ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.opcode, VT_OP_UD_SEND);
	EXPECT_EQ(vt_ud_src_qpn(&o), 0xabcdefu);
	EXPECT_EQ(vt_ud_qkey(&o), 0x80010000u);
	EXPECT_EQ(o.dst_conn, 1u);
	EXPECT_EQ(o.imm, h.imm);
	EXPECT_EQ(vt_pkt_opcode(b.data(), b.size()), VT_OP_UD_SEND);
	// without immediate, and empty
	h.flags = VT_F_SOM | VT_F_EOM;
	h.imm = 0;
	h.payload_len = h.msg_len = 0;
	b = enc(h);
	ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.payload_len, 0);
	// the largest payload
	h.payload_len = h.msg_len = VT_MAX_PAYLOAD;
	b = enc(h);
	ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
}

TEST(Wire, UdSendRejectsReliableFields)
{
	vt_data_hdr o;
	struct Case {
		size_t off;
		uint8_t val;
		int err;
	} cases[] = {
		{2, VT_F_SOM | VT_F_IMM, VT_ERR_FIELD},   // not a single packet
		{2, VT_F_EOM | VT_F_IMM, VT_ERR_FIELD},
		{2, VT_F_SOM | VT_F_EOM, VT_ERR_FIELD},   // imm without VT_F_IMM
		{2, 0x1f, VT_ERR_FIELD},                  // ACKREQ | RETX
		{2, 0x20 | 0x13, VT_ERR_FIELD},           // reserved flag
		{3, 1, VT_ERR_FIELD},                     // path
		{4, 1, VT_ERR_FIELD},                     // dst QPN above 24 bits
		{11, 1, VT_ERR_FIELD},                    // psn
		{24, 1, VT_ERR_FIELD},                    // src QPN above 24 bits
		{31, 1, VT_ERR_FIELD},                    // offset
		{35, 1, VT_ERR_FIELD},                    // msg_len != payload
		{47, 1, VT_ERR_FIELD},                    // va
		{14, 1, VT_ERR_FIELD},   {52, 1, VT_ERR_FIELD},
	};
	for (auto &c : cases) {
		auto b = enc(ud_hdr());
		b[c.off] = c.val;
		EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), c.err) << c.off;
	}
	// every truncation, and a trailing byte
	auto b = enc(ud_hdr());
	for (size_t l = 0; l < b.size(); l++)
		EXPECT_LT(vt_data_hdr_decode(b.data(), l, &o), 0) << l;
	b.push_back(0);
	EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_ERR_LEN);
	// the encoder applies the same rules
	vt_data_hdr h = ud_hdr();
	std::vector<uint8_t> x(VT_DATA_HDR_LEN + h.payload_len);
	h.psn = 7;
	EXPECT_EQ(vt_data_hdr_encode(&h, x.data(), x.size()), VT_ERR_FIELD);
	h = ud_hdr();
	h.dst_conn = 0x1000000;
	EXPECT_EQ(vt_data_hdr_encode(&h, x.data(), x.size()), VT_ERR_FIELD);
	h = ud_hdr();
	h.payload_len = h.msg_len = VT_MAX_PAYLOAD + 1;
	EXPECT_EQ(vt_data_hdr_encode(&h, x.data(), x.size()), VT_ERR_LEN);
}

vt_data_hdr atomic_hdr(uint8_t op)
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = op;
	h.flags = VT_F_SOM | VT_F_EOM;
	h.payload_len = op == VT_OP_ATOMIC_REQ ? VT_ATOMIC_REQ_LEN :
						 VT_ATOMIC_RESP_LEN;
	h.msg_len = h.payload_len;
	h.rkey = 0x1234;
	h.va = 0x1000;
	return h;
}

TEST(Wire, UcPacketsRoundTripWithoutReliableFields)
{
	for (uint8_t op : {uint8_t(VT_OP_UC_SEND), uint8_t(VT_OP_UC_WRITE)}) {
		vt_data_hdr h = full_hdr(), o;
		h.opcode = op;
		h.dst_conn = 0x123456;
		h.psn = 0xffffff;
		h.flags = VT_F_SOM | VT_F_EOM | VT_F_IMM | VT_F_SE;
		h.msg_len = h.payload_len;
		auto b = enc(h);
		ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
		EXPECT_EQ(o.opcode, op);
		EXPECT_EQ(o.psn, 0xffffffu);
		EXPECT_EQ(vt_pkt_opcode(b.data(), b.size()), op);
		// 24-bit QPN and PSN; never ACK-requested, retransmitted, INV
		std::vector<uint8_t> w(VT_DATA_HDR_LEN + h.payload_len);
		vt_data_hdr bad = h;
		bad.psn = 0x1000000;
		EXPECT_EQ(vt_data_hdr_encode(&bad, w.data(), w.size()), VT_ERR_FIELD);
		bad = h;
		bad.dst_conn = 0x1000000;
		EXPECT_EQ(vt_data_hdr_encode(&bad, w.data(), w.size()), VT_ERR_FIELD);
		for (uint8_t f : {uint8_t(VT_F_ACKREQ), uint8_t(VT_F_RETX),
				  uint8_t(VT_F_INV)}) {
			bad = h;
			bad.flags |= f;
			EXPECT_EQ(vt_data_hdr_encode(&bad, w.data(), w.size()),
				  VT_ERR_FIELD);
		}
	}
	// a solicited event needs a receive WQE: not on a plain WRITE
	vt_data_hdr h = full_hdr();
	std::vector<uint8_t> w(VT_DATA_HDR_LEN + h.payload_len);
	h.opcode = VT_OP_UC_WRITE;
	h.dst_conn = 1;
	h.psn = 1;
	h.flags = VT_F_SOM | VT_F_EOM | VT_F_SE;
	h.imm = 0;
	h.msg_len = h.payload_len;
	EXPECT_EQ(vt_data_hdr_encode(&h, w.data(), w.size()), VT_ERR_FIELD);
}

TEST(Wire, AtomicPacketsAreOneFixedSizePacket)
{
	for (uint8_t op : {uint8_t(VT_OP_ATOMIC_REQ), uint8_t(VT_OP_ATOMIC_RESP)}) {
		vt_data_hdr h = atomic_hdr(op), o;
		std::vector<uint8_t> b(VT_DATA_HDR_LEN + h.payload_len);
		ASSERT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
		EXPECT_EQ(b[1], op);
		ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
		EXPECT_EQ(o.opcode, op);
		EXPECT_EQ(vt_pkt_opcode(b.data(), b.size()), op);
		// not one packet, wrong sizes, immediate data
		h = atomic_hdr(op);
		h.flags = VT_F_SOM;
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
		h = atomic_hdr(op);
		h.msg_len += 8;
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
		h = atomic_hdr(op);
		h.payload_len -= 1;
		h.msg_len -= 1;
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
		h = atomic_hdr(op);
		h.flags |= VT_F_IMM;
		h.imm = 1;
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
		h = atomic_hdr(op);
		h.flags |= VT_F_INV;
		EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_ERR_FIELD);
		// a decoded buffer one byte short of the payload
		h = atomic_hdr(op);
		ASSERT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
		EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size() - 1, &o), VT_ERR_LEN);
	}
}

TEST(Wire, AtomicPayloadRoundTripAndRejects)
{
	vt_atomic a = {VT_ATOMIC_CMP_SWP, 0x1122334455667788ull, 0x99aabbccddeeff00ull}, o;
	uint8_t b[VT_ATOMIC_REQ_LEN + 1] = {};
	ASSERT_EQ(vt_atomic_encode(&a, b, sizeof(b)), VT_ATOMIC_REQ_LEN);
	EXPECT_EQ(b[0], VT_ATOMIC_CMP_SWP);
	EXPECT_EQ(b[8], 0x11);
	EXPECT_EQ(b[16], 0x99);
	ASSERT_EQ(vt_atomic_decode(b, VT_ATOMIC_REQ_LEN, &o), VT_ATOMIC_REQ_LEN);
	EXPECT_EQ(o.op, a.op);
	EXPECT_EQ(o.swap_add, a.swap_add);
	EXPECT_EQ(o.compare, a.compare);
	EXPECT_EQ(vt_atomic_decode(b, VT_ATOMIC_REQ_LEN - 1, &o), VT_ERR_TRUNC);
	EXPECT_EQ(vt_atomic_decode(b, VT_ATOMIC_REQ_LEN + 1, &o), VT_ERR_LEN);
	EXPECT_EQ(vt_atomic_encode(&a, b, VT_ATOMIC_REQ_LEN - 1), VT_ERR_NOSPC);
	for (size_t i = 1; i < 8; i++) {	// reserved bytes
		uint8_t c[VT_ATOMIC_REQ_LEN];
		memcpy(c, b, sizeof(c));
		c[i] = 1;
		EXPECT_EQ(vt_atomic_decode(c, sizeof(c), &o), VT_ERR_FIELD) << i;
	}
	for (uint8_t op : {0, 3, 255}) {
		b[0] = op;
		EXPECT_EQ(vt_atomic_decode(b, VT_ATOMIC_REQ_LEN, &o), VT_ERR_OPCODE);
	}
	// FETCH_ADD carries no compare operand
	a = {VT_ATOMIC_FETCH_ADD, 5, 1};
	EXPECT_EQ(vt_atomic_encode(&a, b, sizeof(b)), VT_ERR_FIELD);
	a.compare = 0;
	ASSERT_EQ(vt_atomic_encode(&a, b, sizeof(b)), VT_ATOMIC_REQ_LEN);
	b[23] = 1;
	EXPECT_EQ(vt_atomic_decode(b, VT_ATOMIC_REQ_LEN, &o), VT_ERR_FIELD);
	EXPECT_EQ(vt_atomic_encode(nullptr, b, sizeof(b)), VT_ERR_INVAL);
	EXPECT_EQ(vt_atomic_decode(nullptr, VT_ATOMIC_REQ_LEN, &o), VT_ERR_INVAL);

	uint64_t v = 0;
	ASSERT_EQ(vt_atomic_resp_encode(0x0102030405060708ull, b, 8), VT_ATOMIC_RESP_LEN);
	EXPECT_EQ(b[0], 1);
	EXPECT_EQ(b[7], 8);
	ASSERT_EQ(vt_atomic_resp_decode(b, 8, &v), VT_ATOMIC_RESP_LEN);
	EXPECT_EQ(v, 0x0102030405060708ull);
	EXPECT_EQ(vt_atomic_resp_decode(b, 7, &v), VT_ERR_TRUNC);
	EXPECT_EQ(vt_atomic_resp_decode(b, 9, &v), VT_ERR_LEN);
	EXPECT_EQ(vt_atomic_resp_encode(1, b, 7), VT_ERR_NOSPC);
}

TEST(Wire, SendWithInvalidate)
{
	vt_data_hdr h = full_hdr(), o;
	h.flags = VT_F_SOM | VT_F_INV;
	h.imm = 0;
	h.rkey = 0xabcdef01;
	auto b = enc(h);
	ASSERT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.flags, VT_F_SOM | VT_F_INV);
	EXPECT_EQ(o.rkey, 0xabcdef01u);
	h.opcode = VT_OP_WRITE;
	std::vector<uint8_t> w(VT_DATA_HDR_LEN + h.payload_len);
	EXPECT_EQ(vt_data_hdr_encode(&h, w.data(), w.size()), VT_ERR_FIELD);
}

TEST(Wire, EncodeChecksArguments)
{
	vt_data_hdr h = full_hdr();
	uint8_t b[VT_ACK_LEN + 8];
	EXPECT_EQ(vt_data_hdr_encode(&h, b, VT_DATA_HDR_LEN - 1), VT_ERR_NOSPC);
	EXPECT_EQ(vt_data_hdr_encode(nullptr, b, sizeof(b)), VT_ERR_INVAL);
	EXPECT_EQ(vt_data_hdr_decode(nullptr, 100, &h), VT_ERR_INVAL);
	h.opcode = 0x0a;	/* the first unassigned data opcode */
	EXPECT_EQ(vt_data_hdr_encode(&h, b, sizeof(b)), VT_ERR_OPCODE);
	vt_ack a = full_ack();
	EXPECT_EQ(vt_ack_encode(&a, b, VT_ACK_LEN - 1), VT_ERR_NOSPC);
	EXPECT_EQ(vt_ack_encode(nullptr, b, sizeof(b)), VT_ERR_INVAL);
	EXPECT_EQ(vt_ack_decode(nullptr, VT_ACK_LEN, &a), VT_ERR_INVAL);
	a.opcode = VT_OP_SEND;
	EXPECT_EQ(vt_ack_encode(&a, b, sizeof(b)), VT_ERR_OPCODE);
}

TEST(Wire, AckRoundTripAndLayout)
{
	vt_ack a = full_ack(), o;
	auto b = enc(a);
	EXPECT_EQ(b[1], VT_OP_NACK);
	EXPECT_EQ(b[8], 0x80);
	EXPECT_EQ(b[28], VT_NACK_RNR);
	EXPECT_EQ(b[29], 9);
	EXPECT_EQ(b[47], 0x02);  // sack word 0, big-endian, bit 1
	EXPECT_EQ(b[64], 0x80);  // sack word 3, bit 63
	ASSERT_EQ(vt_ack_decode(b.data(), b.size(), &o), VT_ACK_LEN);
	EXPECT_EQ(o.cum_psn, a.cum_psn);
	EXPECT_EQ(o.trig_psn, a.trig_psn);
	EXPECT_EQ(o.echo_ts, a.echo_ts);
	EXPECT_EQ(o.hold_ns, a.hold_ns);
	EXPECT_EQ(o.rwnd, a.rwnd);
	EXPECT_EQ(o.rnr_wait_us, a.rnr_wait_us);
	EXPECT_EQ(o.echo_path, 3);
	EXPECT_EQ(o.flags, VT_AF_DUP);
	for (int i = 0; i < VT_SACK_WORDS; i++)
		EXPECT_EQ(o.sack[i], a.sack[i]);
	EXPECT_TRUE(vt_sack_test(o.sack, 1));
	EXPECT_TRUE(vt_sack_test(o.sack, 255));
	EXPECT_FALSE(vt_sack_test(o.sack, 254));
	EXPECT_FALSE(vt_sack_test(o.sack, 256));
}

TEST(Wire, AckDecodeRejectsTruncatedOversizedAndGarbage)
{
	auto b = enc(full_ack());
	vt_ack o;
	for (size_t l = 0; l < VT_ACK_LEN; l++)
		EXPECT_EQ(vt_ack_decode(b.data(), l, &o), VT_ERR_TRUNC) << l;
	b.push_back(0);
	EXPECT_EQ(vt_ack_decode(b.data(), b.size(), &o), VT_ERR_LEN);
	b.pop_back();
	struct Case {
		size_t off;
		uint8_t val;
		int err;
	} cases[] = {
		{0, 3, VT_ERR_VERSION}, {1, VT_OP_SEND, VT_ERR_OPCODE},
		{1, 0x12, VT_ERR_OPCODE}, {2, 0x2, VT_ERR_FIELD},
		{28, 0, VT_ERR_FIELD},  {28, VT_NACK_MAX + 1, VT_ERR_FIELD},
		{28, VT_NACK_SEQ, VT_ERR_FIELD}, // rnr wait on a non-RNR NACK
		{34, 1, VT_ERR_FIELD},  {39, 1, VT_ERR_FIELD},
		{47, 0x03, VT_ERR_FIELD}, // SACK bit 0 (cum_psn) set
	};
	for (auto &c : cases) {
		auto x = b;
		x[c.off] = c.val;
		EXPECT_EQ(vt_ack_decode(x.data(), x.size(), &o), c.err) << c.off;
	}
	// an ACK opcode with a NACK code, or with an RNR wait
	vt_ack a = full_ack();
	a.opcode = VT_OP_ACK;
	EXPECT_EQ(vt_ack_encode(&a, b.data(), b.size()), VT_ERR_FIELD);
	a.nack_code = 0;
	EXPECT_EQ(vt_ack_encode(&a, b.data(), b.size()), VT_ERR_FIELD);
	a.rnr_wait_us = 0;
	EXPECT_EQ(vt_ack_encode(&a, b.data(), b.size()), VT_ACK_LEN);
}

TEST(Wire, PeekOpcode)
{
	auto d = enc(full_hdr());
	auto a = enc(full_ack());
	EXPECT_EQ(vt_pkt_opcode(d.data(), d.size()), VT_OP_SEND);
	EXPECT_EQ(vt_pkt_opcode(a.data(), a.size()), VT_OP_NACK);
	EXPECT_EQ(vt_pkt_opcode(a.data(), 1), VT_ERR_TRUNC);
	EXPECT_EQ(vt_pkt_opcode(nullptr, 10), VT_ERR_INVAL);
	a[0] = 9;
	EXPECT_EQ(vt_pkt_opcode(a.data(), a.size()), VT_ERR_VERSION);
	a[0] = 1;
	a[1] = 0x42;
	EXPECT_EQ(vt_pkt_opcode(a.data(), a.size()), VT_ERR_OPCODE);
}

// Random garbage of every length: no crash, and whatever decodes re-encodes
// to the very same bytes (the format is canonical).
TEST(Wire, RandomGarbageIsRejectedOrCanonical)
{
	std::mt19937_64 rng(42);
	int data_ok = 0, ack_ok = 0;
	for (int iter = 0; iter < 200000; iter++) {
		size_t len = 1 + rng() % 200;
		std::vector<uint8_t> b(len);
		for (auto &x : b)
			x = rng();
		if (len && (iter & 1))
			b[0] = VT_WIRE_VERSION; // get past the first check
		if (len > 1 && (iter & 2))
			b[1] = (iter & 4) ? VT_OP_ACK : VT_OP_WRITE;
		vt_data_hdr h;
		int rc = vt_data_hdr_decode(b.data(), b.size(), &h);
		ASSERT_TRUE(rc == VT_DATA_HDR_LEN || (rc < 0 && rc >= VT_ERR_FIELD));
		if (rc > 0) {
			data_ok++;
			std::vector<uint8_t> r(b.size());
			ASSERT_EQ(vt_data_hdr_encode(&h, r.data(), r.size()), rc);
			ASSERT_EQ(0, memcmp(r.data(), b.data(), VT_DATA_HDR_LEN));
		}
		vt_ack a;
		rc = vt_ack_decode(b.data(), b.size(), &a);
		ASSERT_TRUE(rc == VT_ACK_LEN || (rc < 0 && rc >= VT_ERR_FIELD));
		if (rc > 0) {
			ack_ok++;
			std::vector<uint8_t> r(VT_ACK_LEN);
			ASSERT_EQ(vt_ack_encode(&a, r.data(), r.size()), rc);
			ASSERT_EQ(0, memcmp(r.data(), b.data(), VT_ACK_LEN));
		}
	}
	// random bytes practically never form a valid header
	EXPECT_LT(data_ok, 10);
	EXPECT_LT(ack_ok, 10);
}

namespace {

// One packet of @op: the whole message (SOM|EOM), or its first part (SOM).
vt_data_hdr msg_hdr(uint8_t op, uint8_t flags, bool last = true)
{
	vt_data_hdr h;
	memset(&h, 0, sizeof(h));
	h.opcode = op;
	h.flags = VT_F_SOM | flags;
	h.payload_len = 100;
	h.msg_len = 100;
	if (last)
		h.flags |= VT_F_EOM;
	else
		h.msg_len = 300;
	if (flags & VT_F_IMM)
		h.imm = 0x01020304;
	if (flags & VT_F_INV)
		h.rkey = 0x1234;
	return h;
}

// Encode @h, then set VT_F_SE in the flags byte and decode.
int decode_with_se(const vt_data_hdr &h, vt_data_hdr *o)
{
	std::vector<uint8_t> b(VT_DATA_HDR_LEN + h.payload_len);
	EXPECT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
	b[2] |= VT_F_SE;
	return vt_data_hdr_decode(b.data(), b.size(), o);
}

} // namespace

// IBA 9.2 SE: on the last packet of a message that completes a receive WQE.
TEST(Wire, SolicitedEventOnLastPacketOfReceivingMessages)
{
	vt_data_hdr ok[] = {
		msg_hdr(VT_OP_SEND, 0),
		msg_hdr(VT_OP_SEND, VT_F_IMM),
		msg_hdr(VT_OP_SEND, VT_F_INV),
		msg_hdr(VT_OP_WRITE, VT_F_IMM),
		ud_hdr(),
	};
	ok[4].flags &= ~VT_F_IMM;
	ok[4].imm = 0;
	for (auto &h : ok) {
		vt_data_hdr o;
		ASSERT_EQ(decode_with_se(h, &o), VT_DATA_HDR_LEN) << int(h.opcode);
		EXPECT_EQ(o.flags, h.flags | VT_F_SE);
		// the encoder takes it too, in the documented bit
		std::vector<uint8_t> b(VT_DATA_HDR_LEN + o.payload_len);
		ASSERT_EQ(vt_data_hdr_encode(&o, b.data(), b.size()), VT_DATA_HDR_LEN);
		EXPECT_EQ(b[2], h.flags | 0x40);
	}
	// a UD_SEND with immediate data
	vt_data_hdr o;
	EXPECT_EQ(decode_with_se(ud_hdr(), &o), VT_DATA_HDR_LEN);
	EXPECT_EQ(o.flags, VT_F_SOM | VT_F_EOM | VT_F_IMM | VT_F_SE);
	// a multi-packet SEND: only its last packet
	vt_data_hdr h = msg_hdr(VT_OP_SEND, 0);
	h.msg_off = 200;
	h.flags = VT_F_EOM;
	h.msg_len = 300;
	EXPECT_EQ(decode_with_se(h, &o), VT_DATA_HDR_LEN);
}

TEST(Wire, SolicitedEventRejectedElsewhere)
{
	vt_data_hdr bad[] = {
		msg_hdr(VT_OP_SEND, 0, false),		// not the last packet
		msg_hdr(VT_OP_SEND, VT_F_IMM, false),
		msg_hdr(VT_OP_WRITE, VT_F_IMM, false),
		msg_hdr(VT_OP_WRITE, 0),		// no receive WQE
		msg_hdr(VT_OP_READ_RESP, 0),
		atomic_hdr(VT_OP_ATOMIC_REQ),
		atomic_hdr(VT_OP_ATOMIC_RESP),
	};
	for (auto &h : bad) {
		vt_data_hdr o;
		EXPECT_EQ(decode_with_se(h, &o), VT_ERR_FIELD) << int(h.opcode);
		vt_data_hdr e = h;
		e.flags |= VT_F_SE;
		std::vector<uint8_t> b(VT_DATA_HDR_LEN + e.payload_len);
		EXPECT_EQ(vt_data_hdr_encode(&e, b.data(), b.size()), VT_ERR_FIELD)
			<< int(h.opcode);
	}
	// a middle packet of a SEND
	vt_data_hdr h = msg_hdr(VT_OP_SEND, 0, false), o;
	h.flags = 0;
	h.msg_off = 100;
	EXPECT_EQ(decode_with_se(h, &o), VT_ERR_FIELD);
	// a READ request
	h = msg_hdr(VT_OP_READ_REQ, 0);
	h.payload_len = 0;
	h.msg_len = 4096;
	EXPECT_EQ(decode_with_se(h, &o), VT_ERR_FIELD);
	// bit 7 stays reserved, with or without SE
	h = msg_hdr(VT_OP_SEND, 0);
	std::vector<uint8_t> b(VT_DATA_HDR_LEN + h.payload_len);
	ASSERT_EQ(vt_data_hdr_encode(&h, b.data(), b.size()), VT_DATA_HDR_LEN);
	b[2] |= 0x80;
	EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_ERR_FIELD);
	b[2] |= VT_F_SE;
	EXPECT_EQ(vt_data_hdr_decode(b.data(), b.size(), &o), VT_ERR_FIELD);
	// a UD_SEND still takes nothing beyond SOM, EOM, IMM and SE
	auto u = enc(ud_hdr());
	u[2] |= VT_F_SE | VT_F_ACKREQ;
	EXPECT_EQ(vt_data_hdr_decode(u.data(), u.size(), &o), VT_ERR_FIELD);
}
