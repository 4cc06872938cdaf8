// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rx.c - receive dispatch: every UDP payload that reaches the vrdma
 * port is decoded by the transport core's wire decoders, which check each
 * length and field. Malformed packets are dropped and counted.
 *
 * Decoded packets go to the data path (vrdma_rc.c, or vrdma_ud.c for
 * unreliable datagrams), which finds the QP by destination connection id.
 */
#include <linux/skbuff.h>

#include "vrdma.h"
#include "vt_wire.h"
#include "vrdma_rc.h"
#include "vrdma_ud.h"

void vrdma_rx(struct vrdma_dev *vdev, struct sk_buff *skb)
{
	struct vt_data_hdr dh;
	struct vt_ack ack;
	int op, rv;

	vrdma_count(vdev, VRDMA_CNT_RX_PKTS, 1);
	vrdma_count(vdev, VRDMA_CNT_RX_BYTES, skb->len);

	/*
	 * Decoders read a flat buffer: the headers are pulled into the
	 * linear area, the payload stays where it is (page fragments of a
	 * copy-free sender) and is copied once, into its memory region.
	 */
	if (!pskb_may_pull(skb, 2))
		goto bad;
	op = vt_pkt_opcode(skb->data, skb->len);
	if (op < 0)
		goto bad;
	if (op == VT_OP_ACK || op == VT_OP_NACK) {
		if (!pskb_may_pull(skb, min_t(u32, skb->len, VT_ACK_LEN)))
			goto bad;
		rv = vt_ack_decode(skb->data, skb->len, &ack);
		if (rv < 0)
			goto bad;
		vrdma_rc_rx(vdev, skb, NULL, &ack);
	} else {
		if (!pskb_may_pull(skb, min_t(u32, skb->len, VT_DATA_HDR_LEN)))
			goto bad;
		rv = vt_data_hdr_decode(skb->data, skb->len, &dh);
		if (rv < 0)
			goto bad;
		if (dh.opcode == VT_OP_UD_SEND)
			vrdma_ud_rx(vdev, skb, &dh);
		else
			vrdma_rc_rx(vdev, skb, &dh, NULL);
	}
	consume_skb(skb);
	return;

bad:
	vrdma_count(vdev, VRDMA_CNT_RX_BAD, 1);
	kfree_skb(skb);
}
