// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_uc.c - the UC data path: unreliable connected QPs (IBA 9.8.3).
 * SEND and RDMA WRITE, with or without immediate data; no READ, no
 * atomics (the SQE check refuses them when posting). Packets carry a PSN
 * but are never acknowledged or retransmitted (VT_OP_UC_SEND and
 * VT_OP_UC_WRITE, docs/wire-protocol.md).
 *
 * Send: the datagram send loop of vrdma_ud.c takes the SQ slots; each
 * message is cut into packets as an RC message is (vrdma_rc_payload),
 * handed to the wire, and its WQE completes at once.
 *
 * Receive (softirq), as rxe's responder does for UC: a packet whose PSN
 * is not the next one expected, or any packet after such a gap, is
 * discarded until the first packet of a message, which starts afresh
 * from its own PSN. A message that lost a packet, or that the QP cannot
 * take (no receive WQE, too long for it, an rkey that fails), is
 * silently dropped: an RQ WQE stays at the head of the ring for the next
 * message, an SRQ WQE taken for it is kept for the next SEND.
 */
#include <linux/delay.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "rdma/vrdma_wqe.h"
#include "vrdma.h"
#include "vrdma_rc.h"
#include "vrdma_uc.h"

/* how long a sender waits for a full socket queue, per packet */
#define VRDMA_UC_BP_TRIES	200	/* of 20-50 us each */

/* ---- send --------------------------------------------------------------- */

/* Wait (a little) for TX back-pressure: a UC packet is not resent. */
static void vrdma_uc_tx_wait(struct vrdma_qp *qp, struct vrdma_uc *uc)
{
	int i;

	for (i = 0; i < VRDMA_UC_BP_TRIES &&
		    vrdma_net_tx_busy(qp->vdev, &uc->route); i++)
		usleep_range(20, 50);
}

/* One packet of @s: the @h->payload_len bytes at @h->msg_off. */
static enum ib_wc_status vrdma_uc_xmit(struct vrdma_qp *qp,
				       struct vrdma_uc *uc,
				       const struct vrdma_sqe *s,
				       struct vt_data_hdr *h)
{
	struct vrdma_dev *vdev = qp->vdev;
	enum ib_wc_status st = IB_WC_SUCCESS;
	u32 n = h->payload_len;
	struct sk_buff *skb;
	void *p;

	h->psn = uc->tx_psn;
	uc->tx_psn = (uc->tx_psn + 1) & VRDMA_PSN_MASK;
	h->tx_ts = ktime_get_ns();
	vrdma_uc_tx_wait(qp, uc);
	skb = vrdma_net_alloc_skb(vdev, &uc->route, VT_DATA_HDR_LEN + n);
	if (!skb) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR, 1);
		return IB_WC_SUCCESS;	/* a lost packet */
	}
	if (vt_data_hdr_encode(h, skb_put(skb, VT_DATA_HDR_LEN),
			       VT_DATA_HDR_LEN) < 0) {
		kfree_skb(skb);
		return IB_WC_LOC_QP_OP_ERR;
	}
	p = skb_put(skb, n);
	if (s->flags & VRDMA_WQE_INLINE) {
		memcpy(p, (const u8 *)s->sge + h->msg_off, n);
	} else {
		struct vrdma_buf b = VRDMA_BUF(p);

		st = vrdma_sge_copy(qp, s->sge, s->num_sge, h->msg_off, &b, n,
				    false);
	}
	if (st) {
		kfree_skb(skb);
		return st;
	}
	vrdma_net_xmit(vdev, &uc->route, vrdma_net_sport(qp->ibqp.qp_num, 0),
		       skb);
	return IB_WC_SUCCESS;
}

/* Flags of the last packet: immediate data and solicited event. */
static void vrdma_uc_tail(const struct vrdma_sqe *s, struct vt_data_hdr *h)
{
	h->flags |= VT_F_EOM;
	if (s->opcode == VRDMA_OP_SEND_WITH_IMM ||
	    s->opcode == VRDMA_OP_RDMA_WRITE_WITH_IMM) {
		h->flags |= VT_F_IMM;
		h->imm = s->ex;
	}
	if ((s->flags & VRDMA_WQE_SOLICITED) &&
	    (h->opcode == VT_OP_UC_SEND || (h->flags & VT_F_IMM)))
		h->flags |= VT_F_SE;
}

/*
 * Send one WQE (a private copy) of a QP at RTS; the caller holds
 * qp->uc_tx_lock. *@lenp: the message length, for the completion.
 */
enum ib_wc_status vrdma_uc_send_one(struct vrdma_qp *qp,
				    const struct vrdma_sqe *s, u32 *lenp)
{
	struct vrdma_uc *uc = qp->uc;
	struct vt_data_hdr h = {};
	enum ib_wc_status st;
	u32 mtu, off = 0;
	u64 total;

	lockdep_assert_held(&qp->uc_tx_lock);
	st = (enum ib_wc_status)vrdma_sqe_check(s, s->flags, VRDMA_SQE_QP_UC,
						 !qp->user, &total);
	if (st)
		return st;
	if (!uc)
		return IB_WC_WR_FLUSH_ERR;
	*lenp = total;
	mtu = vrdma_rc_payload(qp, uc->route.family);
	h.dst_conn = uc->dest_qpn;
	h.msg_id = uc->tx_msg++;
	h.msg_len = total;
	h.opcode = VT_OP_UC_SEND;
	if (s->opcode == VRDMA_OP_RDMA_WRITE ||
	    s->opcode == VRDMA_OP_RDMA_WRITE_WITH_IMM) {
		h.opcode = VT_OP_UC_WRITE;
		h.rkey = s->rkey;
		h.va = s->raddr;
	}
	do {
		h.msg_off = off;
		h.payload_len = min_t(u64, mtu, total - off);
		h.flags = off ? 0 : VT_F_SOM;
		if (off + h.payload_len == total)
			vrdma_uc_tail(s, &h);
		st = vrdma_uc_xmit(qp, uc, s, &h);
		off += h.payload_len;
	} while (!st && off < total);
	return st;
}

/* ---- receive ------------------------------------------------------------ */

/* The receive WQE of the message: kept from a lost one, or the next. */
static bool vrdma_uc_get_rqe(struct vrdma_qp *qp, struct vrdma_uc *uc)
{
	if (uc->has_rqe)
		return true;
	if (qp->ibqp.srq)
		uc->has_rqe = vrdma_srq_take(to_vsrq(qp->ibqp.srq), &uc->rqe);
	else
		uc->has_rqe = vrdma_rq_peek(qp, 0, &uc->rqe);
	return uc->has_rqe;
}

/* The WQE is done: an RQ slot goes back before its CQE is visible. */
static void vrdma_uc_put_rqe(struct vrdma_qp *qp, struct vrdma_uc *uc)
{
	if (!qp->ibqp.srq)
		vrdma_rq_release(qp);
	uc->has_rqe = false;
}

/* The message being placed is lost; the next packets wait for a SOM. */
static void vrdma_uc_drop(struct vrdma_qp *qp, struct vrdma_uc *uc)
{
	vrdma_count(qp->vdev, VRDMA_CNT_RX_UC_DROP, 1);
	uc->in_msg = false;
	uc->drop = true;
	if (!qp->ibqp.srq)
		uc->has_rqe = false;	/* still the RQ's head: peeked again */
}

/* The first packet of a message: can the QP take it? */
static bool vrdma_uc_first(struct vrdma_qp *qp, struct vrdma_uc *uc,
			   const struct vt_data_hdr *h)
{
	uc->op = h->opcode;
	uc->msg_len = h->msg_len;
	uc->off = 0;
	if (h->opcode == VT_OP_UC_WRITE) {
		uc->rkey = h->rkey;
		uc->va = h->va;
		if (!(READ_ONCE(qp->attr.qp_access_flags) &
		      IB_ACCESS_REMOTE_WRITE))
			return false;
		return !h->msg_len ||
		       vrdma_mr_check(qp, h->rkey, IB_ACCESS_REMOTE_WRITE,
				      h->va, h->msg_len);
	}
	if (!vrdma_uc_get_rqe(qp, uc)) {
		vrdma_count(qp->vdev, VRDMA_CNT_RX_NO_RECV, 1);
		return false;
	}
	return uc->rqe.num_sge <= VRDMA_MAX_SGE &&
	       h->msg_len <= vrdma_sge_total(uc->rqe.sge, uc->rqe.num_sge);
}

static enum ib_wc_status vrdma_uc_place(struct vrdma_qp *qp,
					struct vrdma_uc *uc,
					const struct vt_data_hdr *h,
					const struct sk_buff *skb)
{
	struct vrdma_buf b = VRDMA_SKB_BUF(skb, vrdma_rx_payload(skb));

	if (!h->payload_len)
		return IB_WC_SUCCESS;
	if (uc->op == VT_OP_UC_SEND)
		return vrdma_sge_copy(qp, uc->rqe.sge, uc->rqe.num_sge, uc->off,
				      &b, h->payload_len, true);
	if (vrdma_mr_rw(qp, uc->rkey, IB_ACCESS_REMOTE_WRITE,
			uc->va + uc->off, &b, h->payload_len, true))
		return IB_WC_REM_ACCESS_ERR;
	return IB_WC_SUCCESS;
}

/* The last packet was placed: complete the receive WQE, if it has one. */
static void vrdma_uc_complete(struct vrdma_qp *qp, struct vrdma_uc *uc,
			      const struct vt_data_hdr *h)
{
	struct vrdma_cqe cqe = {};

	uc->in_msg = false;
	cqe.opcode = IB_WC_RECV;
	if (uc->op == VT_OP_UC_WRITE) {
		if (!(h->flags & VT_F_IMM))
			return;
		/* no WQE for the immediate: the message is lost (class D) */
		if (!vrdma_uc_get_rqe(qp, uc)) {
			vrdma_count(qp->vdev, VRDMA_CNT_RX_NO_RECV, 1);
			vrdma_count(qp->vdev, VRDMA_CNT_RX_UC_DROP, 1);
			return;
		}
		cqe.opcode = IB_WC_RECV_RDMA_WITH_IMM;
	}
	cqe.wr_id = uc->rqe.wr_id;
	cqe.byte_len = uc->msg_len;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = uc->dest_qpn;
	if (h->flags & VT_F_IMM) {
		cqe.flags |= VRDMA_CQE_WITH_IMM;
		cqe.ex = h->imm;
	}
	if (h->flags & VT_F_SE)
		cqe.flags |= VRDMA_CQE_SOLICITED;
	vrdma_uc_put_rqe(qp, uc);
	vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
}

/* A packet of the peer, in PSN order or not; under uc->lock. */
static void vrdma_uc_rx_pkt(struct vrdma_qp *qp, struct vrdma_uc *uc,
			    const struct sk_buff *skb,
			    const struct vt_data_hdr *h)
{
	bool som = h->flags & VT_F_SOM;

	if (h->psn != uc->rx_psn || uc->drop) {
		if (!som) {
			if (uc->in_msg || !uc->drop)
				vrdma_uc_drop(qp, uc);
			return;
		}
		uc->drop = false;	/* a new message: start again from it */
	}
	uc->rx_psn = (h->psn + 1) & VRDMA_PSN_MASK;
	if (som) {
		if (uc->in_msg)		/* its last packets never came */
			vrdma_uc_drop(qp, uc);
		uc->drop = false;
		if (!vrdma_uc_first(qp, uc, h)) {
			vrdma_uc_drop(qp, uc);
			return;
		}
		uc->in_msg = true;
	} else if (!uc->in_msg || h->opcode != uc->op ||
		   h->msg_len != uc->msg_len || h->msg_off != uc->off) {
		vrdma_uc_drop(qp, uc);
		return;
	}
	if (vrdma_uc_place(qp, uc, h, skb)) {
		vrdma_uc_drop(qp, uc);
		return;
	}
	uc->off += h->payload_len;
	if (h->flags & VT_F_EOM)
		vrdma_uc_complete(qp, uc, h);
}

/* A decoded VT_OP_UC_SEND or VT_OP_UC_WRITE; the caller frees @skb. */
void vrdma_uc_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh)
{
	struct vrdma_verbs_dev *vd = vdev->priv;
	struct vrdma_qp *qp;
	struct vrdma_uc *uc;

	rcu_read_lock();
	qp = vd ? xa_load(&vd->qp_xa, dh->dst_conn) : NULL;
	/* pairs with the release in vrdma_uc_connect() */
	uc = qp && vrdma_qp_is_uc(qp) ? smp_load_acquire(&qp->uc) : NULL;
	if (!uc) {
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
	} else if (!vrdma_route_from_peer(&uc->route, skb)) {
		vrdma_count(vdev, VRDMA_CNT_RX_BAD_PEER, 1);
	} else {
		spin_lock_bh(&uc->lock);
		if (uc->dead)
			vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
		else
			vrdma_uc_rx_pkt(qp, uc, skb, dh);
		spin_unlock_bh(&uc->lock);
	}
	rcu_read_unlock();
}

/* ---- life cycle (vrdma_qp.c, under qp->state_lock) ---------------------- */

/* INIT -> RTR: resolve the peer; packets are taken from rq_psn on. */
int vrdma_uc_connect(struct vrdma_qp *qp)
{
	struct vrdma_uc *uc;
	int rv;

	uc = kzalloc(sizeof(*uc), GFP_KERNEL);
	if (!uc)
		return -ENOMEM;
	rv = vrdma_rc_route(qp, &uc->route);
	if (rv) {
		kfree(uc);
		return rv;
	}
	vrdma_net_route_init(qp->vdev, &uc->route);
	uc->dest_qpn = qp->attr.dest_qp_num;
	uc->rx_psn = qp->attr.rq_psn;
	uc->tx_psn = qp->attr.sq_psn;
	spin_lock_init(&uc->lock);
	/* published last: the receive path may see it at once */
	smp_store_release(&qp->uc, uc);
	return 0;
}

/* RTR -> RTS: the sender starts at sq_psn. */
void vrdma_uc_start(struct vrdma_qp *qp)
{
	mutex_lock(&qp->uc_tx_lock);
	if (qp->uc)
		qp->uc->tx_psn = qp->attr.sq_psn;
	mutex_unlock(&qp->uc_tx_lock);
}

/*
 * The QP enters ERR (the caller flushes the rings next) or RESET: place
 * nothing more; an SRQ WQE kept for the next message is flushed.
 */
void vrdma_uc_quiesce(struct vrdma_qp *qp)
{
	struct vrdma_uc *uc = qp->uc;

	if (!uc)
		return;
	spin_lock_bh(&uc->lock);
	uc->dead = true;
	uc->in_msg = false;
	if (qp->ibqp.srq && uc->has_rqe) {
		struct vrdma_cqe cqe = {};

		cqe.wr_id = uc->rqe.wr_id;
		cqe.opcode = IB_WC_RECV;
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.qp_num = qp->ibqp.qp_num;
		vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
	}
	uc->has_rqe = false;
	spin_unlock_bh(&uc->lock);
}

/* RESET or destroy: no sender and no receive path is left using it. */
void vrdma_uc_destroy(struct vrdma_qp *qp)
{
	struct vrdma_uc *uc = qp->uc;

	if (!uc)
		return;
	vrdma_uc_quiesce(qp);
	mutex_lock(&qp->uc_tx_lock);
	WRITE_ONCE(qp->uc, NULL);
	mutex_unlock(&qp->uc_tx_lock);
	synchronize_rcu();	/* receive paths that found it are done */
	vrdma_net_route_destroy(&uc->route);
	kfree(uc);
}
