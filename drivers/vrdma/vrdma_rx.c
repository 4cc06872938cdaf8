// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rx.c - receive dispatch: every UDP payload that reaches the vrdma
 * port is decoded by the transport core's wire decoders, which check each
 * length and field. Malformed packets are dropped and counted.
 *
 * An skb may carry a batch: a UDP GSO packet of a batching sender, or a
 * GRO aggregate, whose segments are vrdma packets of gso_size bytes (the
 * last one shorter). It is walked segment by segment where it lies, never
 * segmented or linearized: the headers are read through
 * skb_header_pointer(), the payload is copied once, into its memory
 * region, from wherever it sits (head, page fragments, frag list).
 *
 * Decoded packets go to the data path (vrdma_rc.c, or vrdma_ud.c for
 * unreliable datagrams, vrdma_uc.c for UC), which finds the QP by destination connection id.
 */
#include <linux/skbuff.h>

#include "vrdma.h"
#include "vt_wire.h"
#include "vrdma_rc.h"
#include "vrdma_ud.h"
#include "vrdma_uc.h"

/* the longest header a decoder reads */
#define VRDMA_RX_HDR_MAX	VT_ACK_LEN
static_assert(VRDMA_RX_HDR_MAX >= VT_DATA_HDR_LEN);

/* One packet: @len bytes at offset @off of @skb. False if malformed. */
static bool vrdma_rx_one(struct vrdma_dev *vdev, struct sk_buff *skb,
			 u32 off, u32 len, struct vrdma_rc_rxb *b)
{
	u8 buf[VRDMA_RX_HDR_MAX];
	const void *p;
	struct vt_data_hdr dh;
	struct vt_ack ack;
	int op;

	VRDMA_RX_CB(skb)->off = off;
	p = skb_header_pointer(skb, off, min_t(u32, len, sizeof(buf)), buf);
	if (!p)
		return false;
	op = vt_pkt_opcode(p, len);
	if (op < 0)
		return false;
	if (op == VT_OP_ACK || op == VT_OP_NACK) {
		if (vt_ack_decode(p, len, &ack) < 0)
			return false;
		vrdma_rc_rx(vdev, skb, NULL, &ack, b);
		return true;
	}
	if (vt_data_hdr_decode(p, len, &dh) < 0)
		return false;
	if (dh.opcode == VT_OP_UD_SEND) {
		vrdma_rc_rx_flush(b);	/* no RC lock held into UD */
		vrdma_ud_rx(vdev, skb, &dh);
	} else if (vt_op_is_uc(dh.opcode)) {
		vrdma_rc_rx_flush(b);	/* nor into UC */
		vrdma_uc_rx(vdev, skb, &dh);
	} else {
		vrdma_rc_rx(vdev, skb, &dh, NULL, b);
	}
	return true;
}

/* Takes @skb (the UDP payload: one packet, or a batch of gso_size ones). */
void vrdma_rx(struct vrdma_dev *vdev, struct sk_buff *skb)
{
	struct vrdma_rc_rxb b = {};
	u32 seg = skb->len, off, n;

	if (skb_is_gso(skb) && skb_shinfo(skb)->gso_size) {
		seg = skb_shinfo(skb)->gso_size;
		vrdma_count(vdev, VRDMA_CNT_RX_BATCHES, 1);
	}
	vrdma_count(vdev, VRDMA_CNT_RX_BYTES, skb->len);
	if (!skb->len) {
		vrdma_count(vdev, VRDMA_CNT_RX_PKTS, 1);
		vrdma_count(vdev, VRDMA_CNT_RX_BAD, 1);
	}
	for (off = 0; off < skb->len; off += n) {
		n = min_t(u32, seg, skb->len - off);
		vrdma_count(vdev, VRDMA_CNT_RX_PKTS, 1);
		if (!vrdma_rx_one(vdev, skb, off, n, &b))
			vrdma_count(vdev, VRDMA_CNT_RX_BAD, 1);
	}
	vrdma_rc_rx_flush(&b);
	consume_skb(skb);
}
