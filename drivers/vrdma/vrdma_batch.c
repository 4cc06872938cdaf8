// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_batch.c - transmit batches: a run of RC packets of one connection
 * to one path built as one skb (payload in page fragments, a frag list
 * where the netdev takes one) and sent as UDP GSO through vrdma_net.c.
 * vrdma_rc_req.c and vrdma_rc_resp.c fill them; vrdma_net.c owns the
 * sockets and the xmit.
 */
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/udp.h>

#include "vrdma.h"
#include "vrdma_verbs.h"

static uint tx_batch = VRDMA_BATCH_MAX;
module_param(tx_batch, uint, 0644);
MODULE_PARM_DESC(tx_batch, "most RC packets of a run sent as one UDP GSO skb (default and most: 32); 1: one skb per packet");

/*
 * Append @len bytes of @page at @off, whose reference passes to @skb, to
 * its payload. The UDP checksum covers them where it is computed (the
 * device, or skb_checksum in software); a device without scatter/gather
 * gets the skb linearized by the stack.
 */
static void vrdma_net_skb_frag(struct sk_buff *skb, struct page *page,
			       u32 off, u32 len)
{
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
}

/* The skb that takes the next packet's fragments: the frag list's last. */
static struct sk_buff *vrdma_batch_cur(const struct vrdma_batch *b)
{
	return b->tail ? b->tail : b->skb;
}

static bool vrdma_batch_fits(const struct vrdma_batch *b, __be16 sport,
			     u32 len, u32 nfrags)
{
	const struct sk_buff *skb = b->skb;

	return b->sport == sport && !b->closed && len <= b->seg &&
	       b->n < VRDMA_BATCH_MAX &&
	       (b->list || skb_shinfo(vrdma_batch_cur(b))->nr_frags +
			   nfrags <= MAX_SKB_FRAGS) &&
	       skb->len + len <= VRDMA_BATCH_BYTES;
}

/*
 * The most fragments a next packet like the one just added to @b can
 * take: its header buffer, and for payload by page reference (@fr held
 * some) every page a full segment can touch.  A batch without room for
 * that is sent at once, full, so the sender's next packet starts a new
 * batch (and a new path burst, vt_path_end_burst()) rather than
 * overflowing it: copy-free packets take 2-3 fragments, 17 hold 5-7 of
 * them, and bursts of 16 packets per path left as 7 + 7 + 2.
 */
static u32 vrdma_pkt_frags_max(const struct vrdma_batch *b, bool paged)
{
	return 1 + (paged ? DIV_ROUND_UP(b->seg, PAGE_SIZE) + 1 : 0);
}

/* Runs of packets share skbs (tx_batch above 1). */
bool vrdma_batch_on(void)
{
	return READ_ONCE(tx_batch) > 1;
}

/* @b is open and takes one more @len-byte packet on its path. */
bool vrdma_batch_room(const struct vrdma_batch *b, u32 len)
{
	return b->skb && vrdma_batch_fits(b, b->sport, len, 1);
}

/*
 * The skb of @b that takes @nfrags more fragments: the head or the last
 * of its frag list, or a new one appended to the list (no data of its
 * own, as skb_segment() wants it). NULL when none can.
 *
 * A copy-free packet takes 2-3 fragments (its header buffer, the one or
 * two pages of its payload), so 17 fragments held 6.5 packets of a
 * 16-packet burst: each skb costs ~8,000 instructions on its way through
 * both stacks (IP, UDP, the veth, the socket), 29 % of a 64 KB WRITE's
 * at that size (docs/benchmarks.md, "What one skb costs"). A netdev with
 * NETIF_F_FRAGLIST (veth, loopback) carries a frag list whole to the
 * receiving socket, which takes it whole; elsewhere the stack would
 * segment it in software before the driver, losing a NIC's UDP
 * segmentation offload, so a batch grows a frag list only where the
 * netdev takes one (b->list).
 */
static struct sk_buff *vrdma_batch_skb(struct vrdma_dev *vdev,
				       struct vrdma_route *r,
				       struct vrdma_batch *b, u32 nfrags)
{
	struct sk_buff *cur = vrdma_batch_cur(b);

	if (skb_shinfo(cur)->nr_frags + nfrags <= MAX_SKB_FRAGS)
		return cur;
	if (!b->list)
		return NULL;
	cur = vrdma_net_alloc_skb(vdev, r, 0);
	if (!cur)
		return NULL;
	if (b->tail)
		b->tail->next = cur;
	else
		skb_shinfo(b->skb)->frag_list = cur;
	b->tail = cur;
	b->skb->truesize += cur->truesize;
	return cur;
}

/* Open @b for a first packet of @len bytes to @sport. False: no memory. */
static bool vrdma_batch_open(struct vrdma_dev *vdev, struct vrdma_route *r,
			     struct vrdma_batch *b, __be16 sport, u32 len)
{
	b->skb = vrdma_net_alloc_skb(vdev, r, 0);
	if (!b->skb)
		return false;
	b->tail = NULL;
	b->sport = sport;
	b->seg = len;
	b->n = 0;
	b->closed = false;
	b->list = !!(READ_ONCE(vdev->netdev->features) & NETIF_F_FRAGLIST);
	return true;
}

/*
 * Add a packet for UDP source port @sport to @b: the @buf_len bytes at
 * @buf (from vrdma_frag_alloc()), then the pages of @fr. A packet that
 * does not fit sends the batch first; a packet shorter than the batch's
 * first ends it (a GSO skb's last segment may be short, no other). Takes
 * @buf and @fr's references in every case; a failed allocation loses the
 * packet like the wire would.
 */
void vrdma_batch_add(struct vrdma_dev *vdev, struct vrdma_route *r,
		     struct vrdma_batch *b, __be16 sport, void *buf,
		     u32 buf_len, struct vrdma_frags *fr)
{
	u32 len = buf_len + fr->len, max = READ_ONCE(tx_batch), i;
	struct page *page = virt_to_head_page(buf);
	struct sk_buff *skb = NULL;
	bool paged = fr->n;

	if (b->skb && !vrdma_batch_fits(b, sport, len, 1 + fr->n))
		vrdma_batch_send(vdev, r, b);
	if (b->skb) {
		skb = vrdma_batch_skb(vdev, r, b, 1 + fr->n);
		if (!skb)
			vrdma_batch_send(vdev, r, b);
	}
	if (!skb) {
		if (!vrdma_batch_open(vdev, r, b, sport, len)) {
			skb_free_frag(buf);
			vrdma_frags_put(fr);
			return;
		}
		skb = b->skb;
	}
	vrdma_net_skb_frag(skb, page, (u8 *)buf - (u8 *)page_address(page),
			   buf_len);
	for (i = 0; i < fr->n; i++)
		vrdma_net_skb_frag(skb, fr->f[i].page, fr->f[i].off,
				   fr->f[i].len);
	fr->n = 0;
	fr->len = 0;
	if (skb != b->skb) {	/* in the frag list: the head counts it too */
		b->skb->len += len;
		b->skb->data_len += len;
		b->skb->truesize += len;
	}
	b->n++;
	if (len < b->seg)
		b->closed = true;
	/* ended, at tx_batch, or without room for one more full packet */
	if (b->n >= max ||
	    !vrdma_batch_fits(b, sport, b->seg, vrdma_pkt_frags_max(b, paged)))
		vrdma_batch_send(vdev, r, b);
}

/*
 * Send what @b holds: one packet as it is, several as one UDP GSO skb
 * (SKB_GSO_UDP_L4, gso_size = one packet, the checksum left to the device
 * or to segmentation), the way QUIC stacks use UDP GSO. veth and loopback
 * carry it whole to the receiving socket, which takes it whole; a NIC with
 * UDP segmentation offload cuts it in hardware; for any other device the
 * stack segments it just before the driver, without a copy. Each packet
 * keeps its own header (PSN, timestamp): loss recovery sees packets, and a
 * lost skb is a burst of lost packets.
 */
void vrdma_batch_send(struct vrdma_dev *vdev, struct vrdma_route *r,
		      struct vrdma_batch *b)
{
	struct sk_buff *skb = b->skb;

	if (!skb)
		return;
	b->skb = NULL;
	b->tail = NULL;
	if (b->n > 1) {
		skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
		skb_shinfo(skb)->gso_size = b->seg;
		skb_shinfo(skb)->gso_segs = b->n;
		/* the UDP header goes just before the data */
		skb->ip_summed = CHECKSUM_PARTIAL;
		skb->csum_start = skb_headroom(skb) - sizeof(struct udphdr);
		skb->csum_offset = offsetof(struct udphdr, check);
		vrdma_count(vdev, VRDMA_CNT_TX_BATCHES, 1);
		if (skb_has_frag_list(skb))
			vrdma_count(vdev, VRDMA_CNT_TX_FRAG_LISTS, 1);
	}
	vrdma_net_xmit(vdev, r, b->sport, skb);
}
