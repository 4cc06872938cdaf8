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

/*
 * A batch is read front to back, packet by packet, and most of it sits in
 * page fragments (a header buffer and one or two MR pages per packet),
 * of the skb and, for a batch longer than 17 fragments, of the skbs of
 * its frag list (vrdma_batch_skb()). skb_copy_bits() and
 * skb_header_pointer() walk the fragments from the first on every call:
 * a batch of 16 fragments cost 6% of a bulk transfer's instructions in
 * that walk. The skb's cb keeps a cursor, the skb and fragment the last
 * read was in; vrdma_rx() starts it at the first. The cursor moves under
 * a const skb: it is a cache of where a byte lies, in the cb this layer
 * owns, never what the skb holds.
 */
static void vrdma_rx_cursor_init(struct sk_buff *skb)
{
	VRDMA_RX_CB(skb)->cur = skb;
	VRDMA_RX_CB(skb)->frag = 0;
	VRDMA_RX_CB(skb)->frag_start = skb_headlen(skb);
}

/*
 * The page fragment of @skb, or of an skb of its frag list, that holds
 * byte @off (at or past the head), found from the cursor, which moves
 * there; NULL past the fragments, or where a frag list skb has a head of
 * its own (a GRO aggregate's: the caller falls back to the kernel's
 * walk).
 */
static const skb_frag_t *vrdma_rx_seek(const struct sk_buff *skb, u32 off,
				       u32 *foff)
{
	struct vrdma_rx_cb *cb = (struct vrdma_rx_cb *)skb->cb;
	const struct sk_buff *cur = cb->cur;
	u32 i = cb->frag, start = cb->frag_start;
	const struct skb_shared_info *si;

	if (off < start) {
		cur = skb;
		i = 0;
		start = skb_headlen(skb);
	}
	for (;;) {
		si = skb_shinfo(cur);
		while (i < si->nr_frags &&
		       off - start >= skb_frag_size(&si->frags[i]))
			start += skb_frag_size(&si->frags[i++]);
		if (i < si->nr_frags)
			break;
		cur = cur == skb ? si->frag_list : cur->next;
		if (!cur || skb_headlen(cur))
			return NULL;
		i = 0;
	}
	cb->cur = cur;
	cb->frag = i;
	cb->frag_start = start;
	*foff = off - start;
	return &si->frags[i];
}

/*
 * Where byte @foff of fragment @f lies in the kernel's address space; NULL
 * for a highmem page (the caller goes through skb_copy_bits()).
 */
static void *vrdma_frag_addr(const skb_frag_t *f, u32 foff)
{
	struct page *page = skb_frag_page(f);

	if (PageHighMem(page))
		return NULL;
	return page_address(page) + skb_frag_off(f) + foff;
}

/*
 * Copy @len bytes at @off of @skb (taken by vrdma_rx()) to @to, as
 * skb_copy_bits() does, from the cursor on. 0, or -EFAULT past the end.
 */
int vrdma_rx_copy(const struct sk_buff *skb, u32 off, void *to, u32 len)
{
	u32 head = skb_headlen(skb), n, foff;
	const skb_frag_t *f;
	void *from;

	if (off > skb->len || len > skb->len - off)
		return -EFAULT;
	if (off < head) {
		n = min(len, head - off);
		memcpy(to, skb->data + off, n);
		to += n;
		off += n;
		len -= n;
	}
	while (len) {
		f = vrdma_rx_seek(skb, off, &foff);
		if (!f)
			return skb_copy_bits(skb, off, to, len);
		n = min(len, skb_frag_size(f) - foff);
		from = vrdma_frag_addr(f, foff);
		if (from)
			memcpy(to, from, n);
		else
			skb_copy_bits(skb, off, to, n);
		to += n;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * @len bytes at @off of @skb: where they lie when that is one piece (the
 * head or one fragment), else copied to @buf. NULL past the end.
 */
static const void *vrdma_rx_ptr(struct sk_buff *skb, u32 off, u32 len,
				void *buf)
{
	const skb_frag_t *f;
	void *p;
	u32 foff;

	if (off <= skb_headlen(skb) && len <= skb_headlen(skb) - off)
		return skb->data + off;
	if (off >= skb_headlen(skb)) {
		f = vrdma_rx_seek(skb, off, &foff);
		p = f && len <= skb_frag_size(f) - foff ?
		    vrdma_frag_addr(f, foff) : NULL;
		if (p)
			return p;
	}
	return vrdma_rx_copy(skb, off, buf, len) ? NULL : buf;
}

/*
 * One packet: @len bytes at offset @off of @skb. False if malformed. Its
 * header is read for what a data packet needs first (a header buffer of
 * the sender's holds just that, where it lies), an ACK's again whole.
 */
static bool vrdma_rx_one(struct vrdma_dev *vdev, struct sk_buff *skb,
			 u32 off, u32 len, struct vrdma_rc_rxb *b)
{
	/* read only where a copy or a successful decode wrote them */
	u8 buf[VRDMA_RX_HDR_MAX] vrdma_noinit;
	struct vt_data_hdr dh vrdma_noinit;
	struct vt_ack ack vrdma_noinit;
	const void *p;
	int op;

	VRDMA_RX_CB(skb)->off = off;
	p = vrdma_rx_ptr(skb, off, min_t(u32, len, VT_DATA_HDR_LEN), buf);
	if (!p)
		return false;
	op = vt_pkt_opcode(p, len);
	if (op < 0)
		return false;
	if (op == VT_OP_ACK || op == VT_OP_NACK) {
		p = vrdma_rx_ptr(skb, off, min_t(u32, len, VRDMA_RX_HDR_MAX),
				 buf);
		if (!p || vt_ack_decode(p, len, &ack) < 0)
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
	vrdma_rx_cursor_init(skb);
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
	vrdma_consume_skb(skb);
}
