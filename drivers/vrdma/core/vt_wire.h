/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vt_wire.h - vrdma transport wire format, version 1.
 *
 * Byte diagrams and the meaning of every field: docs/wire-protocol.md.
 * All multi-byte fields are big-endian (network order).  Decoders take the
 * whole UDP payload and check every length and field; a malformed packet
 * yields a negative VT_ERR_* code and never an out-of-bounds read.
 */
#ifndef VT_WIRE_H
#define VT_WIRE_H

#include "vt_platform.h"

#define VT_WIRE_VERSION		1
#define VT_DATA_HDR_LEN		56
#define VT_ACK_LEN		72
#define VT_MAX_PAYLOAD		9216	/* jumbo frame payload bound */
#define VT_SACK_BITS		256
#define VT_UD_QPN_MASK		0xffffff	/* UD_SEND: 24-bit QPNs */
#define VT_SACK_WORDS		(VT_SACK_BITS / 64)

/* error codes shared by the whole core (negative return values) */
enum vt_err {
	VT_OK = 0,
	VT_ERR_TRUNC = -1,	/* buffer shorter than the header */
	VT_ERR_LEN = -2,	/* length fields disagree with the buffer */
	VT_ERR_VERSION = -3,	/* unknown protocol version */
	VT_ERR_OPCODE = -4,	/* unknown or unexpected opcode */
	VT_ERR_FIELD = -5,	/* reserved bits set or inconsistent field */
	VT_ERR_NOSPC = -6,	/* encode buffer too small */
	VT_ERR_INVAL = -7,	/* bad argument */
	VT_ERR_FULL = -8,	/* message queue full, retry later */
	VT_ERR_RETRY_EXC = -9,	/* -> IBV_WC_RETRY_EXC_ERR */
	VT_ERR_RNR_RETRY_EXC = -10, /* -> IBV_WC_RNR_RETRY_EXC_ERR */
	VT_ERR_REM_ACCESS = -11, /* -> IBV_WC_REM_ACCESS_ERR */
	VT_ERR_REM_INV_REQ = -12, /* -> IBV_WC_REM_INV_REQ_ERR */
	VT_ERR_REM_OP = -13,	/* -> IBV_WC_REM_OP_ERR */
};

enum vt_opcode {
	VT_OP_SEND = 0x01,
	VT_OP_WRITE = 0x02,
	VT_OP_READ_REQ = 0x03,
	VT_OP_READ_RESP = 0x04,
	VT_OP_DATA_LAST = VT_OP_READ_RESP,
	VT_OP_UD_SEND = 0x05,	/* unreliable datagram: no PSN, no ACK */
	VT_OP_ATOMIC_REQ = 0x06,
	VT_OP_ATOMIC_RESP = 0x07,
	VT_OP_UC_SEND = 0x08,	/* unreliable connected: PSN, no ACK */
	VT_OP_UC_WRITE = 0x09,
	VT_OP_ACK = 0x10,
	VT_OP_NACK = 0x11,
};

/* data packet flags */
#define VT_F_SOM	0x01	/* first packet of a message */
#define VT_F_EOM	0x02	/* last packet of a message */
#define VT_F_ACKREQ	0x04	/* ask for an immediate ACK */
#define VT_F_RETX	0x08	/* this is a retransmission */
#define VT_F_IMM	0x10	/* imm field is valid */
#define VT_F_INV	0x20	/* SEND: rkey is an rkey to invalidate */
/*
 * Solicited event (IBA 9.2 BTH SE): the receive completion this message
 * produces is solicited. Only on the EOM packet of a SEND, a WRITE with
 * immediate or a UD_SEND.
 */
#define VT_F_SE		0x40
#define VT_F_DATA_MASK	0x7f

/* ACK flags */
#define VT_AF_DUP	0x01	/* triggering packet was a duplicate */
#define VT_AF_MASK	0x01

enum vt_nack_code {
	VT_NACK_NONE = 0,
	VT_NACK_RNR = 1,	/* receiver not ready (no receive WQE) */
	VT_NACK_SEQ = 2,	/* sequence error: resend from cum_psn */
	VT_NACK_REM_ACCESS = 3,	/* rkey/va check failed */
	VT_NACK_INV_REQ = 4,	/* invalid request */
	VT_NACK_REM_OP = 5,	/* remote operational error (receive WQE) */
	VT_NACK_MAX = VT_NACK_REM_OP,
};

/*
 * VT_OP_UD_SEND reuses the data header: dst_conn is the destination QPN,
 * msg_id the source QPN, rkey the qkey; one packet per message (SOM|EOM,
 * offset 0, msg_len = payload_len), psn, path and va zero. The reliable
 * engine never sees it (vt_ud_* below name the fields).
 */
struct vt_data_hdr {
	u8 opcode;
	u8 flags;
	u8 path;		/* path slot id, echoed by the ACK */
	u16 payload_len;
	u32 dst_conn;
	u32 psn;
	u64 tx_ts;		/* sender clock, ns */
	/* message (RDMA) fields: opaque to the transport */
	u32 msg_id;
	u32 msg_off;
	u32 msg_len;
	u32 rkey;
	u64 va;
	u32 imm;
};

struct vt_ack {
	u8 opcode;		/* VT_OP_ACK or VT_OP_NACK */
	u8 flags;		/* VT_AF_* */
	u8 echo_path;
	u8 nack_code;		/* VT_NACK_*, 0 for ACK */
	u8 ce_count;		/* CE-marked packets since last ACK (sat.) */
	u16 rwnd;		/* packets beyond cum_psn the receiver takes */
	u16 rnr_wait_us;	/* RNR: suggested wait, 0 = sender default */
	u32 dst_conn;
	u32 cum_psn;		/* every PSN before this one was received */
	u32 trig_psn;		/* PSN of the packet whose tx_ts is echoed */
	u32 hold_ns;		/* receiver hold time of that packet */
	u64 echo_ts;
	u64 sack[VT_SACK_WORDS]; /* bit i = PSN cum_psn + i received */
};

/*
 * ATOMIC_REQ payload (VT_ATOMIC_REQ_LEN bytes): op, 7 reserved bytes, the
 * swap (CMP_SWP) or add (FETCH_ADD) operand, the compare operand. The
 * ATOMIC_RESP payload is the 8-byte original value (VT_ATOMIC_RESP_LEN).
 */
#define VT_ATOMIC_REQ_LEN	24
#define VT_ATOMIC_RESP_LEN	8

enum vt_atomic_op {
	VT_ATOMIC_CMP_SWP = 1,
	VT_ATOMIC_FETCH_ADD = 2,
};

struct vt_atomic {
	u8 op;			/* enum vt_atomic_op */
	u64 swap_add;
	u64 compare;		/* CMP_SWP only, else 0 */
};

static inline bool vt_op_is_data(u8 op)
{
	return (op >= VT_OP_SEND && op <= VT_OP_DATA_LAST) ||
	       op == VT_OP_ATOMIC_REQ || op == VT_OP_ATOMIC_RESP;
}

/*
 * VT_OP_UC_SEND and VT_OP_UC_WRITE carry the fields of SEND and WRITE
 * (msg_off, msg_len, rkey, va, imm) for an unreliable connected QP:
 * dst_conn is the destination QPN, psn counts the QP's packets (24 bits),
 * msg_id its messages. Never ACKed or retransmitted; the reliable engine
 * never sees them.
 */
static inline bool vt_op_is_uc(u8 op)
{
	return op == VT_OP_UC_SEND || op == VT_OP_UC_WRITE;
}

int vt_atomic_encode(const struct vt_atomic *a, void *buf, size_t len);
int vt_atomic_decode(const void *buf, size_t len, struct vt_atomic *a);
int vt_atomic_resp_encode(u64 orig, void *buf, size_t len);
int vt_atomic_resp_decode(const void *buf, size_t len, u64 *orig);

int vt_data_hdr_encode(const struct vt_data_hdr *h, void *buf, size_t len);
int vt_data_hdr_decode(const void *buf, size_t len, struct vt_data_hdr *h);
int vt_ack_encode(const struct vt_ack *a, void *buf, size_t len);
int vt_ack_decode(const void *buf, size_t len, struct vt_ack *a);
int vt_pkt_opcode(const void *buf, size_t len);

static inline u32 vt_ud_src_qpn(const struct vt_data_hdr *h)
{
	return h->msg_id;
}

static inline u32 vt_ud_qkey(const struct vt_data_hdr *h)
{
	return h->rkey;
}

/* wraparound-safe 32-bit PSN arithmetic */
static inline s32 vt_psn_diff(u32 a, u32 b)
{
	return (s32)(a - b);
}

static inline bool vt_psn_lt(u32 a, u32 b)
{
	return vt_psn_diff(a, b) < 0;
}

static inline bool vt_psn_le(u32 a, u32 b)
{
	return vt_psn_diff(a, b) <= 0;
}

static inline bool vt_sack_test(const u64 *sack, u32 i)
{
	return i < VT_SACK_BITS && ((sack[i / 64] >> (i % 64)) & 1);
}

#endif /* VT_WIRE_H */
