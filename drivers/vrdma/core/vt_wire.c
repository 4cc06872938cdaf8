// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_wire.c - encode and decode vrdma transport packets (version 1).
 * See docs/wire-protocol.md for the byte layout.
 */
#include "vt_wire.h"

static void put16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put64(u8 *p, u64 v)
{
	put32(p, v >> 32);
	put32(p + 4, (u32)v);
}

static u16 get16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static u32 get32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static u64 get64(const u8 *p)
{
	return (u64)get32(p) << 32 | get32(p + 4);
}

/*
 * An unreliable datagram: one packet per message, outside the reliable
 * engine, so everything that engine would read must be zero.
 */
static int ud_check(const struct vt_data_hdr *h)
{
	if (h->flags & ~(VT_F_SOM | VT_F_EOM | VT_F_IMM | VT_F_SE))
		return VT_ERR_FIELD;
	if ((h->flags & (VT_F_SOM | VT_F_EOM)) != (VT_F_SOM | VT_F_EOM))
		return VT_ERR_FIELD;
	if (h->payload_len > VT_MAX_PAYLOAD)
		return VT_ERR_LEN;
	if (!(h->flags & VT_F_IMM) && h->imm)
		return VT_ERR_FIELD;
	if (h->path || h->psn || h->va || h->msg_off ||
	    h->msg_len != h->payload_len)
		return VT_ERR_FIELD;
	if ((h->dst_conn | h->msg_id) & ~VT_UD_QPN_MASK)
		return VT_ERR_FIELD;
	return 0;
}

static int data_check(const struct vt_data_hdr *h)
{
	u64 end = (u64)h->msg_off + h->payload_len;

	if (h->opcode == VT_OP_UD_SEND)
		return ud_check(h);
	if (vt_op_is_uc(h->opcode) &&
	    (((h->dst_conn | h->psn) & ~VT_UD_QPN_MASK) ||
	     (h->flags & (VT_F_ACKREQ | VT_F_RETX | VT_F_INV))))
		return VT_ERR_FIELD;
	if (!vt_op_is_data(h->opcode) && !vt_op_is_uc(h->opcode))
		return VT_ERR_OPCODE;
	if (h->flags & ~VT_F_DATA_MASK)
		return VT_ERR_FIELD;
	if (h->payload_len > VT_MAX_PAYLOAD)
		return VT_ERR_LEN;
	if (!(h->flags & VT_F_IMM) && h->imm)
		return VT_ERR_FIELD;
	/* invalidate: SEND only, never with immediate data */
	if ((h->flags & VT_F_INV) &&
	    (h->opcode != VT_OP_SEND || (h->flags & VT_F_IMM)))
		return VT_ERR_FIELD;
	/*
	 * solicited event: on the last packet of a message that consumes a
	 * receive WQE (SEND, WRITE with immediate) only
	 */
	if ((h->flags & VT_F_SE) &&
	    (!(h->flags & VT_F_EOM) ||
	     !(h->opcode == VT_OP_SEND || h->opcode == VT_OP_UC_SEND ||
	       ((h->opcode == VT_OP_WRITE || h->opcode == VT_OP_UC_WRITE) &&
		(h->flags & VT_F_IMM)))))
		return VT_ERR_FIELD;
	/* atomics: one packet of a fixed size, no immediate */
	if (h->opcode == VT_OP_ATOMIC_REQ || h->opcode == VT_OP_ATOMIC_RESP) {
		u32 n = h->opcode == VT_OP_ATOMIC_REQ ? VT_ATOMIC_REQ_LEN :
			VT_ATOMIC_RESP_LEN;

		if (h->payload_len != n || h->msg_len != n || h->msg_off ||
		    (h->flags & VT_F_IMM) ||
		    (h->flags & (VT_F_SOM | VT_F_EOM)) != (VT_F_SOM | VT_F_EOM))
			return VT_ERR_FIELD;
		return 0;
	}
	/* a READ request carries no payload: msg_len is the read length */
	if (h->opcode == VT_OP_READ_REQ) {
		if (h->payload_len || h->msg_off ||
		    (h->flags & (VT_F_SOM | VT_F_EOM)) != (VT_F_SOM | VT_F_EOM))
			return VT_ERR_FIELD;
		return 0;
	}
	if (end > h->msg_len)
		return VT_ERR_FIELD;
	if ((h->flags & VT_F_SOM) && h->msg_off)
		return VT_ERR_FIELD;
	if ((h->flags & VT_F_EOM) && end != h->msg_len)
		return VT_ERR_FIELD;
	if (!(h->flags & VT_F_EOM) && end == h->msg_len)
		return VT_ERR_FIELD;
	return 0;
}

int vt_data_hdr_encode(const struct vt_data_hdr *h, void *buf, size_t len)
{
	u8 *p = buf;
	int rc;

	if (!h || !buf)
		return VT_ERR_INVAL;
	if (len < VT_DATA_HDR_LEN)
		return VT_ERR_NOSPC;
	rc = data_check(h);
	if (rc)
		return rc;
	p[0] = VT_WIRE_VERSION;
	p[1] = h->opcode;
	p[2] = h->flags;
	p[3] = h->path;
	put32(p + 4, h->dst_conn);
	put32(p + 8, h->psn);
	put16(p + 12, h->payload_len);
	put16(p + 14, 0);
	put64(p + 16, h->tx_ts);
	put32(p + 24, h->msg_id);
	put32(p + 28, h->msg_off);
	put32(p + 32, h->msg_len);
	put32(p + 36, h->rkey);
	put64(p + 40, h->va);
	put32(p + 48, h->imm);
	put32(p + 52, 0);
	return VT_DATA_HDR_LEN;
}

/*
 * @len is the length of the whole datagram payload: header plus data.
 * Returns the header length (the data follows it) or a VT_ERR_* code.
 */
int vt_data_hdr_decode(const void *buf, size_t len, struct vt_data_hdr *h)
{
	const u8 *p = buf;
	int rc;

	if (!buf || !h)
		return VT_ERR_INVAL;
	if (len < VT_DATA_HDR_LEN)
		return VT_ERR_TRUNC;
	if (p[0] != VT_WIRE_VERSION)
		return VT_ERR_VERSION;
	if (get16(p + 14) || get32(p + 52))
		return VT_ERR_FIELD;
	h->opcode = p[1];
	h->flags = p[2];
	h->path = p[3];
	h->dst_conn = get32(p + 4);
	h->psn = get32(p + 8);
	h->payload_len = get16(p + 12);
	h->tx_ts = get64(p + 16);
	h->msg_id = get32(p + 24);
	h->msg_off = get32(p + 28);
	h->msg_len = get32(p + 32);
	h->rkey = get32(p + 36);
	h->va = get64(p + 40);
	h->imm = get32(p + 48);
	if (len - VT_DATA_HDR_LEN != h->payload_len)
		return VT_ERR_LEN;
	rc = data_check(h);
	if (rc)
		return rc;
	return VT_DATA_HDR_LEN;
}

static int ack_check(const struct vt_ack *a)
{
	if (a->opcode == VT_OP_ACK) {
		if (a->nack_code != VT_NACK_NONE || a->rnr_wait_us)
			return VT_ERR_FIELD;
	} else if (a->opcode == VT_OP_NACK) {
		if (a->nack_code == VT_NACK_NONE || a->nack_code > VT_NACK_MAX)
			return VT_ERR_FIELD;
		if (a->nack_code != VT_NACK_RNR && a->rnr_wait_us)
			return VT_ERR_FIELD;
	} else {
		return VT_ERR_OPCODE;
	}
	if (a->flags & ~VT_AF_MASK)
		return VT_ERR_FIELD;
	/* cum_psn itself is missing by definition */
	if (a->sack[0] & 1)
		return VT_ERR_FIELD;
	return 0;
}

int vt_ack_encode(const struct vt_ack *a, void *buf, size_t len)
{
	u8 *p = buf;
	int rc, i;

	if (!a || !buf)
		return VT_ERR_INVAL;
	if (len < VT_ACK_LEN)
		return VT_ERR_NOSPC;
	rc = ack_check(a);
	if (rc)
		return rc;
	p[0] = VT_WIRE_VERSION;
	p[1] = a->opcode;
	p[2] = a->flags;
	p[3] = a->echo_path;
	put32(p + 4, a->dst_conn);
	put32(p + 8, a->cum_psn);
	put32(p + 12, a->trig_psn);
	put64(p + 16, a->echo_ts);
	put32(p + 24, a->hold_ns);
	p[28] = a->nack_code;
	p[29] = a->ce_count;
	put16(p + 30, a->rwnd);
	put16(p + 32, a->rnr_wait_us);
	put16(p + 34, 0);
	put32(p + 36, 0);
	for (i = 0; i < VT_SACK_WORDS; i++)
		put64(p + 40 + 8 * i, a->sack[i]);
	return VT_ACK_LEN;
}

int vt_ack_decode(const void *buf, size_t len, struct vt_ack *a)
{
	const u8 *p = buf;
	int i;

	if (!buf || !a)
		return VT_ERR_INVAL;
	if (len < VT_ACK_LEN)
		return VT_ERR_TRUNC;
	if (len != VT_ACK_LEN)
		return VT_ERR_LEN;
	if (p[0] != VT_WIRE_VERSION)
		return VT_ERR_VERSION;
	if (get16(p + 34) || get32(p + 36))
		return VT_ERR_FIELD;
	a->opcode = p[1];
	a->flags = p[2];
	a->echo_path = p[3];
	a->dst_conn = get32(p + 4);
	a->cum_psn = get32(p + 8);
	a->trig_psn = get32(p + 12);
	a->echo_ts = get64(p + 16);
	a->hold_ns = get32(p + 24);
	a->nack_code = p[28];
	a->ce_count = p[29];
	a->rwnd = get16(p + 30);
	a->rnr_wait_us = get16(p + 32);
	for (i = 0; i < VT_SACK_WORDS; i++)
		a->sack[i] = get64(p + 40 + 8 * i);
	i = ack_check(a);
	return i ? i : VT_ACK_LEN;
}

/* Peek at a datagram: its opcode, after checking the version byte. */
int vt_pkt_opcode(const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!buf)
		return VT_ERR_INVAL;
	if (len < 2)
		return VT_ERR_TRUNC;
	if (p[0] != VT_WIRE_VERSION)
		return VT_ERR_VERSION;
	if (vt_op_is_data(p[1]) || p[1] == VT_OP_UD_SEND || vt_op_is_uc(p[1]) ||
	    p[1] == VT_OP_ACK || p[1] == VT_OP_NACK)
		return p[1];
	return VT_ERR_OPCODE;
}

int vt_atomic_encode(const struct vt_atomic *a, void *buf, size_t len)
{
	u8 *p = buf;

	if (!a || !buf)
		return VT_ERR_INVAL;
	if (len < VT_ATOMIC_REQ_LEN)
		return VT_ERR_NOSPC;
	if (a->op != VT_ATOMIC_CMP_SWP && a->op != VT_ATOMIC_FETCH_ADD)
		return VT_ERR_OPCODE;
	if (a->op == VT_ATOMIC_FETCH_ADD && a->compare)
		return VT_ERR_FIELD;
	p[0] = a->op;
	p[1] = 0;
	put16(p + 2, 0);
	put32(p + 4, 0);
	put64(p + 8, a->swap_add);
	put64(p + 16, a->compare);
	return VT_ATOMIC_REQ_LEN;
}

/* @len must be the exact payload length. */
int vt_atomic_decode(const void *buf, size_t len, struct vt_atomic *a)
{
	const u8 *p = buf;

	if (!buf || !a)
		return VT_ERR_INVAL;
	if (len < VT_ATOMIC_REQ_LEN)
		return VT_ERR_TRUNC;
	if (len != VT_ATOMIC_REQ_LEN)
		return VT_ERR_LEN;
	if (p[1] || get16(p + 2) || get32(p + 4))
		return VT_ERR_FIELD;
	a->op = p[0];
	a->swap_add = get64(p + 8);
	a->compare = get64(p + 16);
	if (a->op != VT_ATOMIC_CMP_SWP && a->op != VT_ATOMIC_FETCH_ADD)
		return VT_ERR_OPCODE;
	if (a->op == VT_ATOMIC_FETCH_ADD && a->compare)
		return VT_ERR_FIELD;
	return VT_ATOMIC_REQ_LEN;
}

int vt_atomic_resp_encode(u64 orig, void *buf, size_t len)
{
	if (!buf)
		return VT_ERR_INVAL;
	if (len < VT_ATOMIC_RESP_LEN)
		return VT_ERR_NOSPC;
	put64(buf, orig);
	return VT_ATOMIC_RESP_LEN;
}

int vt_atomic_resp_decode(const void *buf, size_t len, u64 *orig)
{
	if (!buf || !orig)
		return VT_ERR_INVAL;
	if (len < VT_ATOMIC_RESP_LEN)
		return VT_ERR_TRUNC;
	if (len != VT_ATOMIC_RESP_LEN)
		return VT_ERR_LEN;
	*orig = get64(buf);
	return VT_ATOMIC_RESP_LEN;
}
