// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_dp.c - the RC data path: the kernel shell around the transport
 * core (drivers/vrdma/core). The core decides what to send, retransmit
 * and acknowledge; this file owns the skbs, the timer, the work item and
 * the locks, turns send WQEs into messages, places received payload into
 * memory regions and produces completions, in order.
 *
 * Per QP, one spinlock (xp->lock) serialises the core, the receive path
 * (softirq), the timer and the transmit work. Lock order:
 * xp->lock -> qp->sq_lock / qp->rq_lock / srq->lock -> cq->lock.
 *
 * Message fields on the wire (docs/wire-protocol.md): SEND carries its
 * send sequence number (the receive WQE it lands in) in va; WRITE and
 * READ requests carry rkey/va; a READ response carries the msg_id of the
 * request it answers in va. Atomics (ATOMIC_REQ/ATOMIC_RESP) work like a
 * one-packet READ: the request carries rkey/va and its operands as
 * payload, the response the original value and the request's msg_id in
 * va. SEND_WITH_INV is a SEND with VT_F_INV and the rkey to invalidate.
 */
#include <linux/highmem.h>
#include <linux/moduleparam.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_dp.h"
#include "vrdma_ud.h"

#define VRDMA_DP_BUDGET		64	/* packets per run of the work */
#define VRDMA_DP_CLOCK_EVERY	8	/* packets sent per clock read */
#define VRDMA_DP_BP_POLL_NS	20000	/* back-pressure: look again after, */
#define VRDMA_DP_BP_POLL_MAX_NS	1000000	/* doubling up to this */
#define VRDMA_DP_RESP_MIN_NS	(8 * NSEC_PER_SEC)

enum vrdma_swqe_state {
	VRDMA_SW_FREE = 0,
	VRDMA_SW_QUEUED,	/* handed to the core, not yet acknowledged */
	VRDMA_SW_WAIT_RESP,	/* READ: request acknowledged, data pending */
	VRDMA_SW_DONE,
};

enum vrdma_tmsg_kind {
	VRDMA_TMSG_SQ = 1,
	VRDMA_TMSG_READ_RESP,
	VRDMA_TMSG_ATOMIC_RESP,
};

/*
 * Remote atomics execute under one lock for all devices (IB_ATOMIC_HCA,
 * as rxe): atomic against each other, not against the CPUs.
 */
static DEFINE_SPINLOCK(vrdma_atomic_lock);

static bool vrdma_op_is_atomic(u8 op)
{
	return op == VRDMA_OP_ATOMIC_CMP_AND_SWP ||
	       op == VRDMA_OP_ATOMIC_FETCH_AND_ADD;
}

/* READ and atomics: complete on their response, count in max_rd_atomic */
static bool vrdma_op_has_resp(u8 op)
{
	return op == VRDMA_OP_RDMA_READ || vrdma_op_is_atomic(op);
}

static struct workqueue_struct *vrdma_dp_wq;

static char *cc = "swift";
module_param(cc, charp, 0644);
MODULE_PARM_DESC(cc, "congestion control of new RC QPs: swift (default), dcqcn, gbn (Soft-RoCE-like baseline)");

static uint swift_target_us = 100;
module_param(swift_target_us, uint, 0644);
MODULE_PARM_DESC(swift_target_us, "Swift target queueing delay, us (default 100)");

static uint ack_delay_us = 100;
module_param(ack_delay_us, uint, 0644);
MODULE_PARM_DESC(ack_delay_us, "longest delay of a coalesced ACK, us (default 100)");

static bool fill_mtu = true;
module_param(fill_mtu, bool, 0644);
MODULE_PARM_DESC(fill_mtu, "RC QPs whose path MTU is the port's active MTU send packets as large as the netdev MTU allows (default Y); N: path MTU sized");

static u32 vrdma_dp_cc(void)
{
	if (sysfs_streq(cc, "dcqcn"))
		return VT_CC_DCQCN;
	if (sysfs_streq(cc, "gbn"))
		return VT_CC_GBN;
	return VT_CC_SWIFT;
}

static u64 vrdma_now(void)
{
	return ktime_get_ns();
}

static struct vrdma_xp *qp_xp(struct vrdma_qp *qp)
{
	return READ_ONCE(qp->xp);
}

/* ---- memory access ------------------------------------------------- */

/* An MR for @key with @access in the QP's PD; caller holds RCU. */
static struct vrdma_mr *vrdma_dp_mr(struct vrdma_qp *qp, u32 key, int access,
				    bool remote)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	struct vrdma_mr *mr = xa_load(&vd->mr_xa, key >> 8);

	if (!mr || mr->ibmr.pd != qp->ibqp.pd)
		return NULL;
	if (mr->type == VRDMA_MR_FAST) {
		/* usable between REG_MR and its invalidation, by its key */
		if (!smp_load_acquire(&mr->fast_valid) ||
		    READ_ONCE(mr->fast_key) != key)
			return NULL;
	} else if ((remote ? mr->ibmr.rkey : mr->ibmr.lkey) != key) {
		return NULL;
	}
	if (access && !(READ_ONCE(mr->access) & access))
		return NULL;
	return mr;
}

static bool vrdma_mr_covers(struct vrdma_mr *mr, u64 iova, u64 len)
{
	u64 off;

	if (mr->type == VRDMA_MR_DMA)
		return true;
	if (iova < mr->ibmr.iova)
		return false;
	off = iova - mr->ibmr.iova;
	return off <= mr->ibmr.length && len <= mr->ibmr.length - off;
}

static void vrdma_copy(void *mem, void *buf, u32 n, bool to_mr)
{
	if (to_mr)
		memcpy(mem, buf, n);
	else
		memcpy(buf, mem, n);
}

/* Copy @len bytes between @buf and @mr at @iova (bounds checked). */
static int vrdma_mr_copy(struct vrdma_mr *mr, u64 iova, void *buf, u32 len,
			 bool to_mr)
{
	u64 pos;

	if (!len)
		return 0;
	if (!vrdma_mr_covers(mr, iova, len))
		return -EFAULT;

	switch (mr->type) {
	case VRDMA_MR_DMA:
		vrdma_copy((void *)(uintptr_t)iova, buf, len, to_mr);
		return 0;
	case VRDMA_MR_USER: {
		struct ib_umem *umem = mr->umem;
		struct sg_page_iter piter;
		u32 poff;

		pos = iova - mr->ibmr.iova + ib_umem_offset(umem);
		poff = pos & ~PAGE_MASK;
		for_each_sgtable_page(&umem->sgt_append.sgt, &piter,
				      pos >> PAGE_SHIFT) {
			u32 n = min_t(u32, len, PAGE_SIZE - poff);
			void *va = kmap_local_page(sg_page_iter_page(&piter));

			vrdma_copy(va + poff, buf, n, to_mr);
			kunmap_local(va);
			buf += n;
			len -= n;
			poff = 0;
			if (!len)
				break;
		}
		return len ? -EFAULT : 0;
	}
	case VRDMA_MR_FAST: {
		u64 psz = mr->ibmr.page_size;

		pos = iova - mr->ibmr.iova + (mr->ibmr.iova & (psz - 1));
		while (len) {
			u64 idx = div64_u64(pos, psz);
			u32 poff = pos - idx * psz;
			u32 n = min_t(u64, len, psz - poff);

			if (idx >= mr->npages)
				return -EFAULT;
			vrdma_copy((void *)(uintptr_t)(mr->pages[idx] + poff),
				   buf, n, to_mr);
			buf += n;
			len -= n;
			pos += n;
		}
		return 0;
	}
	}
	return -EFAULT;
}

/*
 * Execute an atomic on the 8 aligned bytes at @iova of @mr; @orig gets
 * the value before. Called with xp->lock held (BHs off).
 */
static int vrdma_mr_atomic(struct vrdma_mr *mr, u64 iova,
			   const struct vt_atomic *a, u64 *orig)
{
	void *map = NULL;
	u64 *p = NULL;
	u64 pos;

	if ((iova & 7) || !vrdma_mr_covers(mr, iova, 8))
		return -EFAULT;
	switch (mr->type) {
	case VRDMA_MR_DMA:
		p = (u64 *)(uintptr_t)iova;
		break;
	case VRDMA_MR_USER: {
		struct ib_umem *umem = mr->umem;
		struct sg_page_iter piter;

		pos = iova - mr->ibmr.iova + ib_umem_offset(umem);
		for_each_sgtable_page(&umem->sgt_append.sgt, &piter,
				      pos >> PAGE_SHIFT) {
			map = kmap_local_page(sg_page_iter_page(&piter));
			p = map + (pos & ~PAGE_MASK);
			break;
		}
		break;
	}
	case VRDMA_MR_FAST: {
		u64 psz = mr->ibmr.page_size, idx;

		pos = iova - mr->ibmr.iova + (mr->ibmr.iova & (psz - 1));
		idx = div64_u64(pos, psz);
		if (idx < mr->npages)
			p = (u64 *)(uintptr_t)(mr->pages[idx] + pos - idx * psz);
		break;
	}
	}
	/* an MR whose iova and address differ in alignment: refuse */
	if (!p || ((uintptr_t)p & 7)) {
		if (map)
			kunmap_local(map);
		return -EFAULT;
	}
	spin_lock(&vrdma_atomic_lock);
	*orig = READ_ONCE(*p);
	if (a->op == VT_ATOMIC_CMP_SWP) {
		if (*orig == a->compare)
			WRITE_ONCE(*p, a->swap_add);
	} else {
		WRITE_ONCE(*p, *orig + a->swap_add);
	}
	spin_unlock(&vrdma_atomic_lock);
	if (map)
		kunmap_local(map);
	return 0;
}

/*
 * The fast-registration MR of @key in @qp's PD, for LOCAL_INV and
 * SEND_WITH_INV; caller holds RCU.
 */
static struct vrdma_mr *vrdma_dp_inv_mr(struct vrdma_qp *qp, u32 key)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	struct vrdma_mr *mr = xa_load(&vd->mr_xa, key >> 8);

	if (!mr || mr->ibmr.pd != qp->ibqp.pd || mr->type != VRDMA_MR_FAST ||
	    READ_ONCE(mr->fast_key) != key)
		return NULL;
	return mr;
}

/* Invalidate the FRMR of @key: 0, or -EINVAL when there is none. */
static int vrdma_dp_invalidate(struct vrdma_qp *qp, u32 key)
{
	struct vrdma_mr *mr;

	rcu_read_lock();
	mr = vrdma_dp_inv_mr(qp, key);
	if (mr)
		/* pairs with vrdma_dp_mr()'s acquire */
		smp_store_release(&mr->fast_valid, false);
	rcu_read_unlock();
	return mr ? 0 : -EINVAL;
}

/*
 * REG_MR of a kernel QP: sqe.raddr is the ib_mr (a kernel pointer, so
 * never taken from a user QP's ring), rkey its new key, ex the access.
 */
static int vrdma_dp_reg_mr(struct vrdma_qp *qp, const struct vrdma_sqe *sqe)
{
	struct vrdma_mr *mr;

	if (qp->user || !sqe->raddr)
		return -EINVAL;
	mr = to_vmr((struct ib_mr *)(uintptr_t)sqe->raddr);
	if (mr->ibmr.pd != qp->ibqp.pd || mr->type != VRDMA_MR_FAST ||
	    (sqe->rkey >> 8) != (mr->ibmr.lkey >> 8) ||
	    READ_ONCE(mr->fast_valid))
		return -EINVAL;
	WRITE_ONCE(mr->access, sqe->ex);
	WRITE_ONCE(mr->fast_key, sqe->rkey);
	/* key and access before the MR can be found valid */
	smp_store_release(&mr->fast_valid, true);
	return 0;
}

/*
 * Copy @len bytes between @buf and a WQE's scatter/gather list, starting
 * @off bytes into it. Returns 0, or an ib_wc_status for the failure.
 */
int vrdma_sge_copy(struct vrdma_qp *qp, const struct vrdma_sge *sge,
		   u32 nsge, u32 off, void *buf, u32 len, bool to_mr)
{
	u32 i;

	rcu_read_lock();
	for (i = 0; i < nsge && len; i++) {
		struct vrdma_mr *mr;
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		mr = vrdma_dp_mr(qp, sge[i].lkey,
				 to_mr ? IB_ACCESS_LOCAL_WRITE : 0, false);
		if (!mr || vrdma_mr_copy(mr, sge[i].addr + off, buf, n,
					 to_mr)) {
			rcu_read_unlock();
			return IB_WC_LOC_PROT_ERR;
		}
		buf += n;
		len -= n;
		off = 0;
	}
	rcu_read_unlock();
	return len ? IB_WC_LOC_LEN_ERR : 0;
}

static u64 vrdma_sge_total(const struct vrdma_sge *sge, u32 nsge)
{
	u64 total = 0;
	u32 i;

	for (i = 0; i < nsge; i++)
		total += sge[i].length;
	return total;
}

/* ---- completions ---------------------------------------------------- */

static void vrdma_dp_fail(struct vrdma_xp *xp, u8 status)
{
	const struct vt_conn *c = xp->c;

	if (!xp->error) {
		xp->error = status ? status : IB_WC_GENERAL_ERR;
		ibdev_info(&xp->qp->vdev->ibdev,
			   "qp %u failed: %s; snd_una %u snd_nxt %u inflight %u lost %u retries %u rto %llu ns, rx epsn %u, msgs tx %u/%u rx %u\n",
			   xp->qp->ibqp.qp_num, ib_wc_status_msg(xp->error),
			   c->tx.snd_una, c->tx.snd_nxt, c->tx.inflight,
			   c->tx.lost, c->tx.retries, vt_tx_rto(c), c->rx.epsn,
			   xp->tx_msg_acked, xp->tx_msg_next, xp->rx_msg_next);
	}
	queue_work(vrdma_dp_wq, &xp->work);
}

/*
 * Complete finished send WQEs in order, releasing their ring slots. CQEs
 * are pushed outside sq_lock: a kernel consumer's completion handler may
 * post again.
 */
static void vrdma_dp_complete_sq(struct vrdma_xp *xp)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_ring *r = &qp->sq;
	struct vrdma_cq *cq = to_vcq(qp->ibqp.send_cq);
	unsigned long flags;

	for (;;) {
		struct vrdma_swqe *sw;
		struct vrdma_cqe cqe = {};
		bool report;

		spin_lock_irqsave(&qp->sq_lock, flags);
		sw = &xp->swqe[r->cons & (r->num - 1)];
		/* after a failure, everything behind it is flushed */
		if (r->cons == xp->sq_taken || sw->state != VRDMA_SW_DONE ||
		    xp->error) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			return;
		}
		vrdma_slot_set(vrdma_ring_slot(r, r->cons), 0);
		r->cons++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		sw->state = VRDMA_SW_FREE;
		/* failed before its CQE is visible: query_qp then says ERR */
		if (sw->status != IB_WC_SUCCESS)
			vrdma_dp_fail(xp, sw->status);
		report = sw->status != IB_WC_SUCCESS ||
			 (sw->sqe.flags & VRDMA_WQE_SIGNALED);
		if (report) {
			cqe.wr_id = sw->sqe.wr_id;
			cqe.opcode = vrdma_sq_wc_opcode(sw->sqe.opcode);
			cqe.status = sw->status;
			cqe.qp_num = qp->ibqp.qp_num;
			if (vrdma_op_has_resp(sw->sqe.opcode))
				cqe.byte_len = sw->len;
			vrdma_cq_push(cq, &cqe);
		}
		if (sw->status != IB_WC_SUCCESS)
			return;	/* the rest is flushed when the QP enters ERR */
	}
}

/*
 * The oldest unfinished send WQE fails with @status; the QP goes to ERR.
 * A remote error (a NACK of the responder) names the first request not
 * yet acknowledged: READs and atomics before it were accepted, and the
 * responder delivers their responses before it fails. Their WQEs
 * complete first; the failed one then completes in order, its error
 * moving the QP to ERR (or the response timer fails the QP).
 */
static void vrdma_dp_fail_oldest(struct vrdma_xp *xp, u8 status)
{
	bool remote = status == IB_WC_REM_ACCESS_ERR ||
		      status == IB_WC_REM_INV_REQ_ERR;
	struct vrdma_qp *qp = xp->qp;
	bool waiting = false, marked = false;
	u32 i;

	/*
	 * Only the first failure completes a WQE in error: a later NACK
	 * (for a WQE behind the failed one) must leave it to the flush.
	 */
	if (xp->error) {
		vrdma_dp_fail(xp, status);
		return;
	}
	if (xp->fail_marked)
		return;
	for (i = qp->sq.cons; i != xp->sq_taken; i++) {
		struct vrdma_swqe *sw = &xp->swqe[i & (qp->sq.num - 1)];

		if (remote && sw->state == VRDMA_SW_WAIT_RESP) {
			waiting = true;
			continue;
		}
		if (sw->state != VRDMA_SW_DONE) {
			sw->state = VRDMA_SW_DONE;
			sw->status = status;
			marked = true;
			break;
		}
	}
	if (waiting && marked) {
		xp->fail_marked = true;
		vrdma_dp_complete_sq(xp);
		return;
	}
	vrdma_dp_complete_sq(xp);
	vrdma_dp_fail(xp, status);
}

static u8 vrdma_dp_err_status(int err)
{
	switch (err) {
	case VT_ERR_RETRY_EXC:
		return IB_WC_RETRY_EXC_ERR;
	case VT_ERR_RNR_RETRY_EXC:
		return IB_WC_RNR_RETRY_EXC_ERR;
	case VT_ERR_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case VT_ERR_REM_INV_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

/* ---- transmit --------------------------------------------------------- */

/* Send an ACK or NACK; a lost one is recovered by the sender's timers. */
static void vrdma_dp_xmit_ack(struct vrdma_xp *xp, const struct vt_ack *a)
{
	struct vrdma_dev *vdev = xp->qp->vdev;
	struct sk_buff *skb;

	skb = vrdma_net_alloc_skb(vdev, &xp->route, VT_ACK_LEN);
	if (!skb)
		return;
	if (vt_ack_encode(a, skb_put(skb, VT_ACK_LEN), VT_ACK_LEN) < 0) {
		kfree_skb(skb);
		return;
	}
	vrdma_net_xmit(vdev, &xp->route, htons(xp->sport_base), skb);
}

static void vrdma_dp_send_ack(struct vrdma_xp *xp, u64 now)
{
	struct vt_ack ack;

	vt_rx_build_ack(xp->c, now, &ack);
	ack.dst_conn = xp->dest_qpn;
	vrdma_dp_xmit_ack(xp, &ack);
}

/*
 * A failed responder answers a data packet of its peer with its fatal
 * NACK again: the first one may have been lost, and the requester would
 * otherwise retry into a QP in ERR until RETRY_EXC.
 */
static void vrdma_dp_replay_nack(struct vrdma_xp *xp,
				 const struct vt_data_hdr *h)
{
	struct vt_ack a = {};

	a.opcode = VT_OP_NACK;
	a.nack_code = xp->resp_nack;
	a.dst_conn = xp->dest_qpn;
	a.cum_psn = xp->resp_nack_psn;
	a.trig_psn = xp->resp_nack_psn;
	a.echo_ts = h->tx_ts;
	a.echo_path = h->path;
	a.rwnd = 1;
	vrdma_count(xp->qp->vdev, VRDMA_CNT_FATAL_NACK_REPLAYS, 1);
	vrdma_dp_xmit_ack(xp, &a);
}

/*
 * A responder that sent a fatal NACK enters ERR once the READ and atomic
 * responses it owes for the requests before it are delivered (or fail).
 */
static void vrdma_dp_resp_fail_check(struct vrdma_xp *xp)
{
	u32 i;

	if (!xp->resp_nack || xp->error)
		return;
	if (xp->rdq_head != xp->rdq_tail || xp->rd_in)
		return;
	for (i = xp->tx_msg_acked; i != xp->tx_msg_next; i++) {
		u8 k = xp->tmsg[i % VRDMA_DP_MSGS].kind;

		if (k == VRDMA_TMSG_READ_RESP || k == VRDMA_TMSG_ATOMIC_RESP)
			return;
	}
	/* an affiliated error: no completion carries it */
	xp->has_event = true;
	xp->event = xp->resp_nack == VT_NACK_REM_ACCESS ?
		    IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_REQ_ERR;
	vrdma_dp_fail(xp, xp->resp_nack == VT_NACK_REM_ACCESS ?
			  IB_WC_REM_ACCESS_ERR : IB_WC_REM_INV_REQ_ERR);
}

/* No response to an accepted READ/atomic request: the peer is gone. */
static void vrdma_dp_resp_expired(struct vrdma_xp *xp)
{
	struct vrdma_qp *qp = xp->qp;
	u32 i;

	xp->resp_deadline = 0;
	for (i = qp->sq.cons; i != xp->sq_taken; i++) {
		struct vrdma_swqe *sw = &xp->swqe[i & (qp->sq.num - 1)];

		if (sw->state != VRDMA_SW_WAIT_RESP)
			continue;
		vrdma_count(qp->vdev, VRDMA_CNT_RESP_TIMEOUTS, 1);
		sw->state = VRDMA_SW_DONE;
		sw->status = IB_WC_RETRY_EXC_ERR;
		vrdma_dp_complete_sq(xp);
		vrdma_dp_fail(xp, IB_WC_RETRY_EXC_ERR);
		return;
	}
}

/* Take new send WQEs from the SQ ring and queue them as messages. */
static void vrdma_dp_take_sq(struct vrdma_xp *xp)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_ring *r = &qp->sq;
	u32 max_rd = max_t(u32, 1, qp->attr.max_rd_atomic);

	/*
	 * Pairs with the provider's fence between publishing WQEs and
	 * reading whether the last one before them is finished: a slot
	 * cleared by vrdma_dp_complete_sq is visible before we look for new
	 * WQEs, so the provider rings the doorbell or we see its WQEs.
	 */
	smp_mb();
	while (xp->started && !xp->error && !xp->resp_nack &&
	       xp->tx_msg_next - xp->tx_msg_acked < VRDMA_DP_MSGS &&
	       xp->sq_taken - r->cons < r->num) {
		void *slot = vrdma_ring_slot(r, xp->sq_taken);
		struct vrdma_swqe *sw = &xp->swqe[xp->sq_taken & (r->num - 1)];
		struct vrdma_tmsg *tm;
		u32 f = vrdma_slot_flags(slot);
		u8 err = 0;
		u64 len;

		if (!(f & VRDMA_WQE_VALID))
			break;
		/* a private copy: the slot stays writable by its process */
		memcpy(&sw->sqe, slot, sizeof(sw->sqe));
		sw->sqe.flags = f;
		sw->status = IB_WC_SUCCESS;

		if (f & VRDMA_WQE_INLINE)
			len = min_t(u32, sw->sqe.inline_len, VRDMA_MAX_INLINE);
		else if (sw->sqe.num_sge > VRDMA_MAX_SGE)
			len = U64_MAX;
		else
			len = vrdma_sge_total(sw->sqe.sge, sw->sqe.num_sge);

		/* IB_SEND_FENCE: wait for outstanding READs and atomics */
		if ((f & VRDMA_WQE_FENCE) && xp->rd_outstanding)
			return;

		switch (sw->sqe.opcode) {
		case VRDMA_OP_SEND:
		case VRDMA_OP_SEND_WITH_IMM:
		case VRDMA_OP_SEND_WITH_INV:
		case VRDMA_OP_RDMA_WRITE:
		case VRDMA_OP_RDMA_WRITE_WITH_IMM:
			break;
		case VRDMA_OP_ATOMIC_CMP_AND_SWP:
		case VRDMA_OP_ATOMIC_FETCH_AND_ADD:
			/* one 8-byte local buffer for the original value */
			if (!(f & VRDMA_WQE_INLINE) &&
			    (sw->sqe.num_sge != 1 || len != 8))
				err = IB_WC_LOC_LEN_ERR;
			fallthrough;
		case VRDMA_OP_RDMA_READ:
			if (f & VRDMA_WQE_INLINE)
				err = IB_WC_LOC_QP_OP_ERR;
			if (!err && xp->rd_outstanding >= max_rd)
				return;	/* max_rd_atomic: wait for a response */
			break;
		case VRDMA_OP_LOCAL_INV:
			/*
			 * Earlier WQEs may still be retransmitted from the MR
			 * it invalidates: it runs once they are all complete.
			 */
			if (xp->sq_taken != r->cons)
				return;
			if (vrdma_dp_invalidate(qp, sw->sqe.ex))
				err = IB_WC_LOC_QP_OP_ERR;
			len = 0;
			break;
		case VRDMA_OP_REG_MR:
			if (vrdma_dp_reg_mr(qp, &sw->sqe))
				err = IB_WC_LOC_QP_OP_ERR;
			len = 0;
			break;
		default:
			err = IB_WC_LOC_QP_OP_ERR;
			break;
		}
		if (!err && len > VRDMA_MAX_MSG_SIZE)
			err = IB_WC_LOC_LEN_ERR;

		sw->len = err ? 0 : len;
		sw->msg_id = xp->tx_msg_next;
		xp->sq_taken++;
		if (err || sw->sqe.opcode == VRDMA_OP_LOCAL_INV ||
		    sw->sqe.opcode == VRDMA_OP_REG_MR) {
			/* local operations complete here, in order */
			sw->state = VRDMA_SW_DONE;
			sw->status = err;
			vrdma_dp_complete_sq(xp);
			if (err)
				return;
			continue;
		}

		if (vt_tx_enqueue(xp->c, sw->msg_id,
				  sw->sqe.opcode == VRDMA_OP_RDMA_READ ? 0 :
				  vrdma_op_is_atomic(sw->sqe.opcode) ?
				  VT_ATOMIC_REQ_LEN : sw->len)) {
			/* core message queue full: retake this slot later */
			xp->sq_taken--;
			return;
		}
		if (sw->sqe.opcode == VRDMA_OP_SEND ||
		    sw->sqe.opcode == VRDMA_OP_SEND_WITH_IMM ||
		    sw->sqe.opcode == VRDMA_OP_SEND_WITH_INV) {
			/* the receive WQE it consumes: in va on the wire */
			sw->ssn = xp->ssn_next++;
		} else if (sw->sqe.opcode == VRDMA_OP_RDMA_WRITE_WITH_IMM) {
			xp->ssn_next++;
		} else if (vrdma_op_has_resp(sw->sqe.opcode)) {
			u32 i;

			for (i = 0; i < VRDMA_DP_READS; i++) {
				if (xp->rd_out[i].used)
					continue;
				xp->rd_out[i].used = true;
				xp->rd_out[i].msg_id = sw->msg_id;
				xp->rd_out[i].sq_idx = xp->sq_taken - 1;
				break;
			}
			xp->rd_outstanding++;
		}
		tm = &xp->tmsg[sw->msg_id % VRDMA_DP_MSGS];
		tm->kind = VRDMA_TMSG_SQ;
		tm->sq_idx = xp->sq_taken - 1;
		tm->req_op = 0;
		if (vrdma_op_has_resp(sw->sqe.opcode)) {
			bool cas = sw->sqe.opcode == VRDMA_OP_ATOMIC_CMP_AND_SWP;

			tm->rkey = sw->sqe.rkey;
			tm->va = sw->sqe.raddr;
			tm->len = sw->len;
			tm->req_op = VT_OP_READ_REQ;
			if (vrdma_op_is_atomic(sw->sqe.opcode)) {
				tm->req_op = VT_OP_ATOMIC_REQ;
				tm->atomic.op = cas ? VT_ATOMIC_CMP_SWP :
						VT_ATOMIC_FETCH_ADD;
				tm->atomic.swap_add = cas ? sw->sqe.swap :
							    sw->sqe.compare_add;
				tm->atomic.compare = cas ? sw->sqe.compare_add : 0;
			}
		}
		sw->state = VRDMA_SW_QUEUED;
		xp->tx_msg_next++;
	}
}

/* Queue the READ responses the receive side owes. */
static void vrdma_dp_take_reads(struct vrdma_xp *xp)
{
	while (xp->rdq_head != xp->rdq_tail &&
	       xp->tx_msg_next - xp->tx_msg_acked < VRDMA_DP_MSGS) {
		struct vrdma_tmsg *q = &xp->rdq[xp->rdq_head % VRDMA_DP_READS];
		u32 id = xp->tx_msg_next;

		if (vt_tx_enqueue(xp->c, id, q->len))
			return;
		xp->tmsg[id % VRDMA_DP_MSGS] = *q;
		xp->tx_msg_next++;
		xp->rdq_head++;
		xp->rd_in--;
	}
}

/* Build and send the packet of one SEND/RETX decision. */
static int vrdma_dp_xmit_data(struct vrdma_xp *xp,
			      const struct vt_tx_decision *d)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_tmsg *tm = &xp->tmsg[d->msg_id % VRDMA_DP_MSGS];
	struct vrdma_swqe *sw = NULL;
	struct vt_data_hdr h = {};
	struct sk_buff *skb;
	void *payload;
	int st = 0;

	h.flags = d->flags;
	h.path = d->path;
	h.payload_len = d->len;
	h.dst_conn = xp->dest_qpn;
	h.psn = d->psn;
	h.tx_ts = d->ts;
	h.msg_id = d->msg_id;
	h.msg_off = d->msg_off;
	h.msg_len = d->msg_len;

	if (tm->kind == VRDMA_TMSG_READ_RESP) {
		h.opcode = VT_OP_READ_RESP;
		h.va = tm->req_msg_id;
	} else if (tm->kind == VRDMA_TMSG_ATOMIC_RESP) {
		h.opcode = VT_OP_ATOMIC_RESP;
		h.va = tm->req_msg_id;
	} else if (tm->req_op) {
		/* READ/atomic request: from its copy, never from the slot */
		h.opcode = tm->req_op;
		h.rkey = tm->rkey;
		h.va = tm->va;
		if (h.opcode == VT_OP_READ_REQ)
			h.msg_len = tm->len;
	} else {
		sw = &xp->swqe[tm->sq_idx & (qp->sq.num - 1)];
		switch (sw->sqe.opcode) {
		case VRDMA_OP_SEND_WITH_IMM:
			h.flags |= VT_F_IMM;
			h.imm = sw->sqe.ex;
			fallthrough;
		case VRDMA_OP_SEND:
			h.opcode = VT_OP_SEND;
			h.va = sw->ssn;
			break;
		case VRDMA_OP_SEND_WITH_INV:
			h.opcode = VT_OP_SEND;
			h.flags |= VT_F_INV;
			h.rkey = sw->sqe.ex;
			h.va = sw->ssn;
			break;
		case VRDMA_OP_RDMA_WRITE_WITH_IMM:
			h.flags |= VT_F_IMM;
			h.imm = sw->sqe.ex;
			fallthrough;
		case VRDMA_OP_RDMA_WRITE:
			h.opcode = VT_OP_WRITE;
			h.rkey = sw->sqe.rkey;
			h.va = sw->sqe.raddr;
			break;
		}
		/* IBA 9.2: SE on the last packet of a receiving message */
		if ((sw->sqe.flags & VRDMA_WQE_SOLICITED) &&
		    (h.flags & VT_F_EOM) &&
		    (h.opcode == VT_OP_SEND || (h.flags & VT_F_IMM)))
			h.flags |= VT_F_SE;
	}

	skb = vrdma_net_alloc_skb(qp->vdev, &xp->route,
				  VT_DATA_HDR_LEN + d->len);
	if (!skb)
		return -ENOMEM;
	if (vt_data_hdr_encode(&h, skb_put(skb, VT_DATA_HDR_LEN),
			       VT_DATA_HDR_LEN) < 0) {
		kfree_skb(skb);
		return -EINVAL;
	}
	payload = skb_put(skb, d->len);

	if (tm->kind == VRDMA_TMSG_READ_RESP) {
		struct vrdma_mr *mr;

		rcu_read_lock();
		mr = vrdma_dp_mr(qp, tm->rkey, IB_ACCESS_REMOTE_READ, true);
		if (!mr || vrdma_mr_copy(mr, tm->va + d->msg_off, payload,
					 d->len, false))
			st = IB_WC_REM_ACCESS_ERR;
		rcu_read_unlock();
	} else if (tm->kind == VRDMA_TMSG_ATOMIC_RESP) {
		if (vt_atomic_resp_encode(tm->orig, payload, d->len) < 0)
			st = IB_WC_REM_OP_ERR;
	} else if (h.opcode == VT_OP_ATOMIC_REQ) {
		if (d->len != VT_ATOMIC_REQ_LEN ||
		    vt_atomic_encode(&tm->atomic, payload, d->len) < 0)
			st = IB_WC_LOC_QP_OP_ERR;
	} else if (h.opcode == VT_OP_READ_REQ) {
		/* no payload */
	} else if (d->len && (sw->sqe.flags & VRDMA_WQE_INLINE)) {
		if (d->msg_off + d->len > sw->len)
			st = IB_WC_LOC_LEN_ERR;
		else
			memcpy(payload, (u8 *)sw->sqe.sge + d->msg_off, d->len);
	} else if (d->len) {
		st = vrdma_sge_copy(qp, sw->sqe.sge, sw->sqe.num_sge,
				    d->msg_off, payload, d->len, false);
	}
	if (st) {
		kfree_skb(skb);
		if (sw)
			vrdma_dp_fail_oldest(xp, st);
		else
			vrdma_dp_fail(xp, st);
		return -EFAULT;
	}
	return vrdma_net_xmit(qp->vdev, &xp->route,
			      htons(xp->sport_base + d->entropy), skb);
}

/*
 * Arm the timer for the core's next deadline. A timer already queued for
 * that moment or earlier stays: firing early only runs the sender once
 * more, which re-arms it, while reprogramming the clock event for every
 * packet (the deadlines move with each ACK) costs a clock read and a
 * timer write each time.
 */
static void vrdma_dp_arm(struct vrdma_xp *xp)
{
	/*
	 * Held back by a full socket queue, the sender's own deadlines
	 * (send now, RTO) wait for the next look at the queue: firing for
	 * them would only find it full again, a timer storm that starves
	 * the softirqs which drain the queue.
	 */
	u64 w = xp->bp_until ? xp->bp_until : vt_tx_next_wakeup(xp->c);

	w = min(w, vt_rx_next_wakeup(xp->c));
	if (xp->resp_deadline)
		w = min(w, xp->resp_deadline);
	if (w == VT_NEVER)
		return;
	if (hrtimer_is_queued(&xp->timer) && xp->timer_at <= w)
		return;
	xp->timer_at = w;
	hrtimer_start(&xp->timer, ns_to_ktime(w), HRTIMER_MODE_ABS_SOFT);
}

/*
 * Runs the sender with xp->lock held: timers, owed ACKs, new WQEs, then
 * the core's send decisions, at most a budget of packets. It runs where
 * the event happens (the doorbell system call, the receive softirq, the
 * soft hrtimer), so no thread wakeup sits between an event and its packet.
 * Returns true when the budget ran out and more may be sent.
 */
static bool vrdma_dp_run_at(struct vrdma_xp *xp, u64 now)
{
	struct vt_tx_decision d;
	int n;

	if (xp->dead)
		return false;
	if (now >= vt_tx_next_wakeup(xp->c))
		vt_tx_on_timer(xp->c, now);
	if (vt_rx_ack_due(xp->c, now))
		vrdma_dp_send_ack(xp, now);
	if (xp->resp_deadline && now >= xp->resp_deadline)
		vrdma_dp_resp_expired(xp);
	vrdma_dp_take_reads(xp);
	vrdma_dp_take_sq(xp);

	xp->bp_until = 0;
	for (n = 0; n < VRDMA_DP_BUDGET && !xp->error; n++) {
		/* a clock read per packet is costly where the clock is emulated */
		if (n && !(n % VRDMA_DP_CLOCK_EVERY))
			now = vrdma_now();
		/*
		 * TX back-pressure: the namespace's packets still queued below
		 * the socket (qdisc, driver ring, a veth peer's backlog) are
		 * at their limit. Send nothing more now and look again
		 * shortly; the sender's deadlines wait for that look
		 * (vrdma_dp_arm), the receive side's ACKs do not.
		 */
		if (vrdma_net_tx_busy(xp->qp->vdev, &xp->route)) {
			if (vt_tx_idle(xp->c))
				break;
			/* one count per wait; the checks back off to 1 ms */
			if (!xp->bp_wait_ns)
				vrdma_count(xp->qp->vdev,
					    VRDMA_CNT_TX_BLOCKED, 1);
			xp->bp_wait_ns = xp->bp_wait_ns ?
					 min_t(u64, xp->bp_wait_ns * 2,
					       VRDMA_DP_BP_POLL_MAX_NS) :
					 VRDMA_DP_BP_POLL_NS;
			xp->bp_until = now + xp->bp_wait_ns;
			break;
		}
		xp->bp_wait_ns = 0;
		vt_tx_poll(xp->c, now, &d);
		if (d.action == VT_TX_SEND || d.action == VT_TX_RETX) {
			vrdma_dp_xmit_data(xp, &d);
			continue;
		}
		if (d.action == VT_TX_ERROR)
			vrdma_dp_fail_oldest(xp, vrdma_dp_err_status(d.error));
		break;
	}
	vrdma_dp_arm(xp);
	if (n == VRDMA_DP_BUDGET || xp->error)
		queue_work(vrdma_dp_wq, &xp->work);
	return n == VRDMA_DP_BUDGET;
}

static bool vrdma_dp_run(struct vrdma_xp *xp)
{
	return vrdma_dp_run_at(xp, vrdma_now());
}

/*
 * Process context: the rest of a run that used up its budget, and the
 * transition to ERR after a failure.
 */
static void vrdma_dp_work(struct work_struct *work)
{
	struct vrdma_xp *xp = container_of(work, struct vrdma_xp, work);
	u8 error;

	bool has_event;
	u8 event;

	spin_lock_bh(&xp->lock);
	if (!xp->error)
		vrdma_dp_run(xp);
	error = xp->error && !xp->dead;
	has_event = xp->has_event;
	event = xp->event;
	spin_unlock_bh(&xp->lock);

	/*
	 * modify_qp(RESET) holds state_lock while it waits for this work:
	 * never block on it, come back instead.
	 */
	if (!error)
		return;
	if (vrdma_qp_set_error(xp->qp) == -EAGAIN) {
		queue_work(vrdma_dp_wq, &xp->work);
		return;
	}
	if (has_event && xp->qp->ibqp.event_handler) {
		struct ib_event ev = {
			.device = xp->qp->ibqp.device,
			.element.qp = &xp->qp->ibqp,
			.event = event,
		};

		xp->qp->ibqp.event_handler(&ev, xp->qp->ibqp.qp_context);
	}
}

/* A soft hrtimer: runs in softirq context like the receive path. */
static enum hrtimer_restart vrdma_dp_timer(struct hrtimer *t)
{
	struct vrdma_xp *xp = container_of(t, struct vrdma_xp, timer);

	vrdma_count(xp->qp->vdev, VRDMA_CNT_TIMER_RUNS, 1);
	spin_lock(&xp->lock);
	vrdma_dp_run(xp);
	spin_unlock(&xp->lock);
	return HRTIMER_NORESTART;
}

/* The doorbell: new send WQEs (or a new state) for the sender. */
void vrdma_dp_kick(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp = qp_xp(qp);

	if (!xp || !READ_ONCE(xp->started))
		return;
	/*
	 * A user doorbell (a system call, never inside our lock) waits for
	 * the lock: its holder is a short run on another CPU, typically the
	 * receive softirq answering the peer, and handing over to the work
	 * would put a thread wakeup between the post and its packet. A
	 * kernel consumer may post from hard interrupt context, or from a
	 * completion handler that we call with xp->lock held: hand over to
	 * the work when the lock is taken then.
	 */
	if (qp->user && !in_interrupt() && !irqs_disabled()) {
		spin_lock_bh(&xp->lock);
	} else if (in_hardirq() || irqs_disabled() ||
		   !spin_trylock_bh(&xp->lock)) {
		queue_work(vrdma_dp_wq, &xp->work);
		return;
	}
	vrdma_dp_run(xp);
	spin_unlock_bh(&xp->lock);
}

/* ---- receive ---------------------------------------------------------- */

static struct vrdma_rmsg *vrdma_dp_rmsg(struct vrdma_xp *xp, u32 msg_id)
{
	struct vrdma_rmsg *rm;

	if (msg_id - xp->rx_msg_next >= VRDMA_DP_MSGS)
		return NULL;
	rm = &xp->rmsg[msg_id % VRDMA_DP_MSGS];
	if (rm->valid && rm->msg_id != msg_id)
		return NULL;
	return rm;
}

/* Take the receive WQE of send sequence number @ssn (RQ) or any (SRQ). */
static bool vrdma_dp_take_rqe(struct vrdma_xp *xp, u32 ssn,
			      struct vrdma_rqe *out)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_ring *r = &qp->rq;
	unsigned long flags;
	void *slot;
	bool ok = false;

	if (qp->ibqp.srq) {
		/*
		 * Messages may arrive out of order, but take SRQ WQEs in
		 * message (ssn) order, as an in-order fabric would: the ones
		 * before @ssn are kept for their messages.
		 */
		if (ssn - xp->rq_ssn_done >= VRDMA_DP_MSGS)
			return false;
		while (xp->srq_taken - xp->rq_ssn_done <=
		       ssn - xp->rq_ssn_done) {
			if (!vrdma_srq_take(to_vsrq(qp->ibqp.srq),
					    &xp->srq_rqe[xp->srq_taken %
							 VRDMA_DP_MSGS]))
				return false;
			xp->srq_taken++;
		}
		*out = xp->srq_rqe[ssn % VRDMA_DP_MSGS];
		return true;
	}
	if (ssn - xp->rq_ssn_done >= r->num)
		return false;
	spin_lock_irqsave(&qp->rq_lock, flags);
	slot = vrdma_ring_slot(r, r->cons + (ssn - xp->rq_ssn_done));
	if (vrdma_slot_flags(slot) & VRDMA_WQE_VALID) {
		memcpy(out, slot, sizeof(*out));
		ok = true;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return ok;
}

/* Release the oldest RQ slot (SRQ slots were released when taken). */
static void vrdma_dp_release_rqe(struct vrdma_xp *xp)
{
	struct vrdma_qp *qp = xp->qp;
	unsigned long flags;

	xp->rq_ssn_done++;
	if (qp->ibqp.srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	vrdma_slot_set(vrdma_ring_slot(&qp->rq, qp->rq.cons), 0);
	qp->rq.cons++;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/*
 * @cflags: VRDMA_CQE_WITH_IMM (@ex the immediate) or _WITH_INV (the rkey),
 * and VRDMA_CQE_SOLICITED
 */
static void vrdma_dp_recv_cqe(struct vrdma_xp *xp, const struct vrdma_rqe *rqe,
			      u8 opcode, u8 status, u32 len, u32 cflags,
			      u32 ex)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_cqe cqe = {};

	cqe.wr_id = rqe->wr_id;
	cqe.opcode = opcode;
	cqe.status = status;
	cqe.byte_len = len;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = xp->dest_qpn;
	if (cflags && status == IB_WC_SUCCESS) {
		cqe.flags = cflags;
		cqe.ex = ex;
	}
	vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
}

/*
 * Our READ or atomic request @msg_id that a response answers: its rd_out
 * slot, or -1 when there is none of that kind.
 */
static int vrdma_dp_rd_slot(struct vrdma_xp *xp, u32 msg_id, bool atomic)
{
	u32 i;

	for (i = 0; i < VRDMA_DP_READS; i++) {
		struct vrdma_rd_out *ro = &xp->rd_out[i];
		u8 op;

		if (!ro->used || ro->msg_id != msg_id)
			continue;
		op = xp->swqe[ro->sq_idx & (xp->qp->sq.num - 1)].sqe.opcode;
		return vrdma_op_is_atomic(op) == atomic ? i : -1;
	}
	return -1;
}

/*
 * First packet of a message to arrive (in any order): bind it to what it
 * needs. Returns a VT_NACK_* code when the message cannot be taken.
 */
static u8 vrdma_dp_rx_first(struct vrdma_xp *xp, const struct vt_data_hdr *h,
			    struct vrdma_rmsg *rm, const void *payload)
{
	struct vrdma_qp *qp = xp->qp;
	int qp_access = qp->attr.qp_access_flags;
	struct vrdma_mr *mr;

	memset(rm, 0, sizeof(*rm));
	rm->msg_id = h->msg_id;
	rm->op = h->opcode;
	rm->len = h->msg_len;
	rm->with_imm = !!(h->flags & VT_F_IMM);
	rm->imm = h->imm;

	switch (h->opcode) {
	case VT_OP_SEND:
		if (h->flags & VT_F_INV) {
			/* IBA 9.4.1.4.1: only an FRMR of our PD is invalidated */
			rcu_read_lock();
			mr = vrdma_dp_inv_mr(qp, h->rkey);
			rcu_read_unlock();
			if (!mr)
				return VT_NACK_INV_REQ;
			rm->with_inv = true;
			rm->rkey = h->rkey;
		}
		if (!vrdma_dp_take_rqe(xp, (u32)h->va, &rm->rqe))
			return VT_NACK_RNR;
		rm->has_rqe = true;
		if (rm->rqe.num_sge > VRDMA_MAX_SGE ||
		    h->msg_len > vrdma_sge_total(rm->rqe.sge,
						 rm->rqe.num_sge)) {
			/*
			 * IBA 9.7.5.2.4: the receive WQE completes in error and
			 * the QP fails. When it is the next one in order it
			 * completes here; one behind incomplete messages is
			 * flushed (RQ ring, or the SRQ WQEs taken ahead).
			 */
			vrdma_dp_fail(xp, IB_WC_LOC_LEN_ERR);
			if ((u32)h->va == xp->rq_ssn_done) {
				vrdma_dp_release_rqe(xp);
				vrdma_dp_recv_cqe(xp, &rm->rqe, IB_WC_RECV,
						  IB_WC_LOC_LEN_ERR, 0, 0, 0);
			}
			return VT_NACK_INV_REQ;
		}
		break;
	case VT_OP_WRITE:
		if (!(qp_access & IB_ACCESS_REMOTE_WRITE))
			return VT_NACK_REM_ACCESS;
		break;
	case VT_OP_READ_REQ:
		if (!(qp_access & IB_ACCESS_REMOTE_READ))
			return VT_NACK_REM_ACCESS;
		rcu_read_lock();
		mr = vrdma_dp_mr(qp, h->rkey, IB_ACCESS_REMOTE_READ, true);
		if (!mr || !vrdma_mr_covers(mr, h->va, h->msg_len)) {
			rcu_read_unlock();
			return VT_NACK_REM_ACCESS;
		}
		rcu_read_unlock();
		if (xp->rd_in >= VRDMA_DP_READS)
			return VT_NACK_INV_REQ;	/* beyond max_dest_rd_atomic */
		xp->rd_in++;
		rm->rkey = h->rkey;
		rm->va = h->va;
		break;
	case VT_OP_ATOMIC_REQ:
		if (!(qp_access & IB_ACCESS_REMOTE_ATOMIC))
			return VT_NACK_REM_ACCESS;
		/* rxe: a misaligned address is an invalid request */
		if (vt_atomic_decode(payload, h->payload_len, &rm->atomic) < 0 ||
		    (h->va & 7))
			return VT_NACK_INV_REQ;
		rcu_read_lock();
		mr = vrdma_dp_mr(qp, h->rkey, IB_ACCESS_REMOTE_ATOMIC, true);
		if (!mr || !vrdma_mr_covers(mr, h->va, 8)) {
			rcu_read_unlock();
			return VT_NACK_REM_ACCESS;
		}
		rcu_read_unlock();
		/* one max_dest_rd_atomic budget for READs and atomics */
		if (xp->rd_in >= VRDMA_DP_READS)
			return VT_NACK_INV_REQ;
		xp->rd_in++;
		rm->rkey = h->rkey;
		rm->va = h->va;
		break;
	case VT_OP_READ_RESP:
	case VT_OP_ATOMIC_RESP: {
		int i = vrdma_dp_rd_slot(xp, (u32)h->va,
					 h->opcode == VT_OP_ATOMIC_RESP);

		if (i < 0)
			return VT_NACK_INV_REQ;
		rm->va = i;	/* rd_out slot */
		break;
	}
	default:
		return VT_NACK_INV_REQ;
	}
	rm->valid = true;
	return VT_NACK_NONE;
}

/* Put an accepted packet's payload where it belongs. */
static int vrdma_dp_place(struct vrdma_xp *xp, const struct vt_data_hdr *h,
			  struct vrdma_rmsg *rm, void *payload)
{
	struct vrdma_qp *qp = xp->qp;
	struct vrdma_mr *mr;
	int st = 0;

	if (!h->payload_len)
		return 0;
	switch (h->opcode) {
	case VT_OP_SEND:
		return vrdma_sge_copy(qp, rm->rqe.sge, rm->rqe.num_sge,
				      h->msg_off, payload, h->payload_len, true);
	case VT_OP_WRITE:
		rcu_read_lock();
		mr = vrdma_dp_mr(qp, h->rkey, IB_ACCESS_REMOTE_WRITE, true);
		if (!mr || vrdma_mr_copy(mr, h->va + h->msg_off, payload,
					 h->payload_len, true))
			st = IB_WC_REM_ACCESS_ERR;
		rcu_read_unlock();
		return st;
	case VT_OP_READ_RESP: {
		struct vrdma_rd_out *ro = &xp->rd_out[rm->va];
		struct vrdma_swqe *sw = &xp->swqe[ro->sq_idx &
						  (qp->sq.num - 1)];

		if (h->msg_off + h->payload_len > sw->len)
			return IB_WC_LOC_LEN_ERR;
		return vrdma_sge_copy(qp, sw->sqe.sge, sw->sqe.num_sge,
				      h->msg_off, payload, h->payload_len,
				      true);
	}
	case VT_OP_ATOMIC_RESP: {
		struct vrdma_rd_out *ro = &xp->rd_out[rm->va];
		struct vrdma_swqe *sw = &xp->swqe[ro->sq_idx &
						  (qp->sq.num - 1)];
		u64 orig;

		if (vt_atomic_resp_decode(payload, h->payload_len, &orig) < 0)
			return IB_WC_BAD_RESP_ERR;
		/* host order, like a local 64-bit load */
		return vrdma_sge_copy(qp, sw->sqe.sge, sw->sqe.num_sge, 0,
				      &orig, sizeof(orig), true);
	}
	}
	return 0;
}

/* A message is complete and every one before it too. */
static void vrdma_dp_rx_complete(struct vrdma_xp *xp, struct vrdma_rmsg *rm)
{
	struct vrdma_qp *qp = xp->qp;
	u32 se = rm->se ? VRDMA_CQE_SOLICITED : 0;
	struct vrdma_rqe rqe;

	switch (rm->op) {
	case VT_OP_SEND:
		/*
		 * The slot goes back before the CQE is visible: a consumer
		 * that reposts as soon as it sees the completion must find
		 * it free (perftest's latency tests post into one slot).
		 */
		vrdma_dp_release_rqe(xp);
		if (rm->with_inv && !rm->status &&
		    vrdma_dp_invalidate(qp, rm->rkey))
			rm->status = IB_WC_REM_INV_REQ_ERR;
		vrdma_dp_recv_cqe(xp, &rm->rqe, IB_WC_RECV, rm->status,
				  rm->len,
				  se | (rm->with_imm ? VRDMA_CQE_WITH_IMM :
					rm->with_inv ? VRDMA_CQE_WITH_INV : 0),
				  rm->with_imm ? rm->imm : rm->rkey);
		break;
	case VT_OP_WRITE:
		if (!rm->with_imm)
			break;
		/* the next receive WQE in order: its ssn is rq_ssn_done */
		if (!vrdma_dp_take_rqe(xp, xp->rq_ssn_done, &rqe)) {
			vrdma_dp_fail(xp, IB_WC_LOC_QP_OP_ERR);
			break;
		}
		vrdma_dp_release_rqe(xp);
		vrdma_dp_recv_cqe(xp, &rqe, IB_WC_RECV_RDMA_WITH_IMM,
				  rm->status, rm->len, se | VRDMA_CQE_WITH_IMM,
				  rm->imm);
		break;
	case VT_OP_READ_REQ: {
		struct vrdma_tmsg *q = &xp->rdq[xp->rdq_tail % VRDMA_DP_READS];

		q->kind = VRDMA_TMSG_READ_RESP;
		q->rkey = rm->rkey;
		q->va = rm->va;
		q->len = rm->len;
		q->req_msg_id = rm->msg_id;
		xp->rdq_tail++;
		break;
	}
	case VT_OP_ATOMIC_REQ: {
		struct vrdma_tmsg *q = &xp->rdq[xp->rdq_tail % VRDMA_DP_READS];
		struct vrdma_mr *mr;
		int rv = -EFAULT;
		u64 orig = 0;

		/*
		 * Executed here, once: the message completes once, in order
		 * (a retransmitted request is a duplicate PSN and never gets
		 * this far), and its response is a reliable message itself.
		 */
		rcu_read_lock();
		mr = vrdma_dp_mr(qp, rm->rkey, IB_ACCESS_REMOTE_ATOMIC, true);
		if (mr)
			rv = vrdma_mr_atomic(mr, rm->va, &rm->atomic, &orig);
		rcu_read_unlock();
		if (rv) {
			/* the MR went away after the request was accepted */
			vrdma_dp_fail(xp, IB_WC_REM_ACCESS_ERR);
			break;
		}
		q->kind = VRDMA_TMSG_ATOMIC_RESP;
		q->len = VT_ATOMIC_RESP_LEN;
		q->orig = orig;
		q->req_msg_id = rm->msg_id;
		xp->rdq_tail++;
		break;
	}
	case VT_OP_READ_RESP:
	case VT_OP_ATOMIC_RESP: {
		struct vrdma_rd_out *ro = &xp->rd_out[rm->va];
		struct vrdma_swqe *sw = &xp->swqe[ro->sq_idx &
						  (qp->sq.num - 1)];

		sw->state = VRDMA_SW_DONE;
		sw->status = rm->status;
		ro->used = false;
		xp->rd_outstanding--;
		if (!xp->rd_outstanding)
			xp->resp_deadline = 0;
		vrdma_dp_complete_sq(xp);
		break;
	}
	}
	rm->valid = false;
}

static bool vrdma_dp_ce(struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return INET_ECN_is_ce(ip_hdr(skb)->tos);
	if (skb->protocol == htons(ETH_P_IPV6))
		return INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb)));
	return false;
}

/* The packet comes from the connected peer's address. */
static bool vrdma_dp_from_peer(struct vrdma_xp *xp, struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return xp->route.family == AF_INET &&
		       ip_hdr(skb)->saddr == xp->route.daddr.v4;
	if (skb->protocol == htons(ETH_P_IPV6))
		return xp->route.family == AF_INET6 &&
		       ipv6_addr_equal(&ipv6_hdr(skb)->saddr,
				       &xp->route.daddr.v6);
	return false;
}

static void vrdma_dp_rx_data(struct vrdma_xp *xp, struct sk_buff *skb,
			     const struct vt_data_hdr *h, u64 now)
{
	struct vrdma_rmsg *rm = NULL;
	struct vt_rx_verdict v;
	u8 nack = VT_NACK_NONE;
	u32 i;

	if (xp->resp_deadline)
		xp->resp_deadline = now + xp->resp_timeout_ns; /* peer alive */
	if (xp->resp_nack) {
		vrdma_dp_replay_nack(xp, h);
		return;
	}
	/* the peer's first message may start where we were never told */
	if (!h->msg_id && !h->msg_off && (h->flags & VT_F_SOM))
		vt_rx_adopt_psn(xp->c, h->psn);
	if (vt_rx_is_new(xp->c, h->psn)) {
		rm = vrdma_dp_rmsg(xp, h->msg_id);
		if (!rm)
			nack = VT_NACK_INV_REQ;
		else if (!rm->valid)
			nack = vrdma_dp_rx_first(xp, h, rm,
						 skb->data + VT_DATA_HDR_LEN);
		else if (rm->op != h->opcode)
			nack = VT_NACK_INV_REQ;
		if (!nack && h->opcode == VT_OP_WRITE) {
			struct vrdma_mr *mr;

			rcu_read_lock();
			mr = vrdma_dp_mr(xp->qp, h->rkey,
					 IB_ACCESS_REMOTE_WRITE, true);
			if (!mr || !vrdma_mr_covers(mr, h->va + h->msg_off,
						    h->payload_len))
				nack = VT_NACK_REM_ACCESS;
			rcu_read_unlock();
		}
	}

	vt_rx_on_data(xp->c, now, h, vrdma_dp_ce(skb), nack, &v);
	if (v.result == VT_RX_ACCEPT && rm && rm->valid) {
		int st = vrdma_dp_place(xp, h, rm,
					skb->data + VT_DATA_HDR_LEN);

		if (st && !rm->status)
			rm->status = st;
		/* only on the last packet, which may arrive first */
		if (h->flags & VT_F_SE)
			rm->se = true;
	}
	for (i = 0; i < v.msgs_done; i++) {
		rm = &xp->rmsg[xp->rx_msg_next % VRDMA_DP_MSGS];
		if (rm->valid && rm->msg_id == xp->rx_msg_next)
			vrdma_dp_rx_complete(xp, rm);
		xp->rx_msg_next++;
	}
	if (v.ack_now)
		vrdma_dp_send_ack(xp, now);
	if (v.result == VT_RX_NACKED &&
	    (nack == VT_NACK_REM_ACCESS || nack == VT_NACK_INV_REQ)) {
		/* in order (the core defers it otherwise): the QP fails */
		xp->resp_nack = nack;
		xp->resp_nack_psn = h->psn;
		vrdma_dp_resp_fail_check(xp);
	}
	vrdma_dp_run_at(xp, now);	/* READ responses, freed read slots */
}

static void vrdma_dp_rx_ack(struct vrdma_xp *xp, const struct vt_ack *ack,
			    u64 now)
{
	struct vrdma_qp *qp = xp->qp;
	struct vt_ack_result r;
	u32 i;

	if (vt_tx_on_ack(xp->c, now, ack, &r) < 0 && !r.error)
		return;
	for (i = 0; i < r.msgs_done; i++) {
		struct vrdma_tmsg *tm =
			&xp->tmsg[xp->tx_msg_acked % VRDMA_DP_MSGS];

		if (tm->kind == VRDMA_TMSG_SQ) {
			struct vrdma_swqe *sw =
				&xp->swqe[tm->sq_idx & (qp->sq.num - 1)];

			/*
			 * A READ's or atomic's response may have come before
			 * this ACK: the WQE is complete then, and its slot may
			 * hold a newer WQE already.
			 */
			if (sw->msg_id == xp->tx_msg_acked &&
			    sw->state == VRDMA_SW_QUEUED) {
				sw->state = vrdma_op_has_resp(sw->sqe.opcode) ?
					    VRDMA_SW_WAIT_RESP : VRDMA_SW_DONE;
				if (sw->state == VRDMA_SW_WAIT_RESP &&
				    !xp->resp_deadline)
					xp->resp_deadline =
						now + xp->resp_timeout_ns;
			}
		}
		tm->kind = 0;
		xp->tx_msg_acked++;
	}
	if (r.msgs_done)
		vrdma_dp_complete_sq(xp);
	if (r.error)
		vrdma_dp_fail_oldest(xp, vrdma_dp_err_status(r.error));
	if (r.msgs_done)
		vrdma_dp_resp_fail_check(xp);	/* responses delivered */
	vrdma_dp_run_at(xp, now);	/* the window opened */
}

/*
 * A decoded packet for this device, from softirq. Exactly one of @dh and
 * @ack is set. Consumes nothing: the caller frees @skb.
 */
void vrdma_dp_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh, const struct vt_ack *ack)
{
	struct vrdma_verbs_dev *vd = vdev->priv;
	u32 qpn = dh ? dh->dst_conn : ack->dst_conn;
	struct vrdma_qp *qp;
	struct vrdma_xp *xp;

	rcu_read_lock();
	qp = vd ? xa_load(&vd->qp_xa, qpn) : NULL;
	xp = qp && qp->ibqp.qp_type == IB_QPT_RC ? qp_xp(qp) : NULL;
	if (!xp) {
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
		goto out;
	}
	spin_lock_bh(&xp->lock);
	if (xp->dead && dh && xp->resp_nack && vrdma_dp_from_peer(xp, skb))
		vrdma_dp_replay_nack(xp, dh);	/* in ERR after a fatal NACK */
	else if (xp->dead)
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
	else if (!vrdma_dp_from_peer(xp, skb))
		vrdma_count(vdev, VRDMA_CNT_RX_BAD_PEER, 1);
	else if (dh)
		vrdma_dp_rx_data(xp, skb, dh, vrdma_now());
	else
		vrdma_dp_rx_ack(xp, ack, vrdma_now());
	spin_unlock_bh(&xp->lock);
out:
	rcu_read_unlock();
}

/* ---- life cycle ------------------------------------------------------- */

static int vrdma_dp_route(struct vrdma_qp *qp, struct vrdma_route *r)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(&qp->attr.ah_attr);
	const struct in6_addr *d = (const struct in6_addr *)grh->dgid.raw;
	union ib_gid sgid;
	struct in6_addr *s = (struct in6_addr *)sgid.raw;
	int rv;

	rv = rdma_query_gid(&qp->vdev->ibdev, 1, grh->sgid_index, &sgid);
	if (rv)
		return rv;
	memset(r, 0, sizeof(*r));
	if (ipv6_addr_v4mapped(d)) {
		if (!ipv6_addr_v4mapped(s))
			return -EINVAL;
		r->family = AF_INET;
		r->daddr.v4 = d->s6_addr32[3];
		r->saddr.v4 = s->s6_addr32[3];
	} else {
		if (ipv6_addr_v4mapped(s))
			return -EINVAL;
		r->family = AF_INET6;
		r->daddr.v6 = *d;
		r->saddr.v6 = *s;
	}
	r->tos = grh->traffic_class;
	r->ttl = grh->hop_limit;
	r->flow_label = cpu_to_be32(grh->flow_label & 0xfffff);
	return 0;
}

/* INIT -> RTR of an RC QP: resolve the peer and start its connection. */
int vrdma_dp_connect(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp;
	struct vt_config cfg;
	u32 netdev_mtu, hdrs, room;
	enum ib_mtu path_mtu;
	int rv;

	if (qp->ibqp.qp_type != IB_QPT_RC)
		return 0;
	xp = kvzalloc(sizeof(*xp), GFP_KERNEL);
	if (!xp)
		return -ENOMEM;
	xp->c = kvzalloc(sizeof(*xp->c), GFP_KERNEL);
	xp->swqe = kvcalloc(qp->sq.num, sizeof(*xp->swqe), GFP_KERNEL);
	if (!xp->c || !xp->swqe) {
		rv = -ENOMEM;
		goto err;
	}
	rv = vrdma_dp_route(qp, &xp->route);
	if (rv)
		goto err;
	vrdma_net_route_init(&xp->route);	/* without it: a lookup per packet */

	vt_config_default(&cfg);
	path_mtu = qp->attr.path_mtu ? qp->attr.path_mtu : IB_MTU_1024;
	netdev_mtu = READ_ONCE(qp->vdev->netdev_mtu);
	hdrs = sizeof(struct udphdr) + VT_DATA_HDR_LEN +
	       (xp->route.family == AF_INET6 ? sizeof(struct ipv6hdr) :
					       sizeof(struct iphdr));
	/* below 256 bytes of room the IP layer fragments (ignore_df) */
	room = netdev_mtu >= hdrs + 256 ? netdev_mtu - hdrs : 256;
	/*
	 * An IB MTU is a power of two and the netdev carries more: 1024
	 * bytes of payload where a 1500-byte frame has room for 1416, 4096
	 * where a 9000-byte one has 8916. A QP given the port's active MTU
	 * (what perftest and rdma_cm set) asked for the largest packets the
	 * port takes, and gets packets that fill the netdev MTU; the
	 * receiver places each by its offset, whatever its size. A smaller
	 * path MTU is the user's choice and is kept.
	 */
	if (fill_mtu && path_mtu >= vrdma_mtu_from_netdev(netdev_mtu))
		cfg.mtu = min_t(u32, room, VT_MAX_PAYLOAD);
	else
		cfg.mtu = min_t(u32, ib_mtu_enum_to_int(path_mtu), room);
	/*
	 * A VM path's base delay is unknown and its host jitter large:
	 * Swift on queueing delay above the minimum, with a VM-sized target
	 * and a window of at least one packet (no sub-packet pacing).
	 */
	cfg.cc = vrdma_dp_cc();
	cfg.swift_queue_delay = 1;
	cfg.swift_target_ns = (u64)swift_target_us * NSEC_PER_USEC;
	cfg.swift_min_cwnd_fp = VT_FP_ONE;
	/*
	 * Each ACK is a packet through the whole stack: coalesce them over
	 * a VM-sized delay (the sender asks with ACKREQ where it waits; its
	 * PTO and RTO allow for this delay).
	 */
	cfg.ack_delay_ns = (u64)ack_delay_us * NSEC_PER_USEC;
	/* until RTS sets them: a responder may answer READs from RTR */
	cfg.retry_cnt = 7;
	cfg.rnr_retry = 7;
	rv = vt_conn_init(xp->c, &cfg, qp->ibqp.qp_num, qp->attr.dest_qp_num,
			  qp->attr.sq_psn, qp->attr.rq_psn, vrdma_now());
	if (rv) {
		rv = -EINVAL;
		goto err;
	}

	xp->qp = qp;
	xp->dest_qpn = qp->attr.dest_qp_num;
	/* ephemeral range; the core adds the path entropy */
	xp->sport_base = 0xc000 | ((qp->ibqp.qp_num * 64) & 0x3fc0);
	spin_lock_init(&xp->lock);
	hrtimer_init(&xp->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	xp->timer.function = vrdma_dp_timer;
	INIT_WORK(&xp->work, vrdma_dp_work);
	vrdma_stats_conn_add(qp->vdev, xp);
	/* published last: the receive path may see it at once */
	smp_store_release(&qp->xp, xp);
	return 0;

err:
	vrdma_net_route_destroy(&xp->route);
	kvfree(xp->swqe);
	kvfree(xp->c);
	kvfree(xp);
	return rv;
}

/*
 * How long a requester waits for any packet of its peer while a READ or
 * atomic response is due: the local ACK timeout (4.096 us * 2^timeout)
 * times retry_cnt + 1, but never under VRDMA_DP_RESP_MIN_NS (an
 * emulated or loaded VM stalls longer than a NIC) nor over a minute. The
 * peer's retransmissions and other traffic count as signs of life.
 */
static u64 vrdma_dp_resp_timeout(struct vrdma_qp *qp)
{
	u64 t = 0;

	if (qp->attr.timeout)
		t = (4096ULL << min_t(u8, qp->attr.timeout, 31)) *
		    (qp->attr.retry_cnt + 1);
	return clamp_t(u64, t, VRDMA_DP_RESP_MIN_NS, 60 * NSEC_PER_SEC);
}

/* RTR -> RTS: the send queue runs from sq_psn. */
int vrdma_dp_start(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp = qp_xp(qp);

	if (!xp)
		return 0;
	spin_lock_bh(&xp->lock);
	/*
	 * Refused when READ responses already went out from RTR: the peer
	 * adopted that PSN space (vt_rx_adopt_psn), so it stays.
	 */
	vt_tx_set_psn(xp->c, qp->attr.sq_psn);
	/* IB_QP_RETRY_CNT and IB_QP_RNR_RETRY come with RTS */
	xp->c->cfg.retry_cnt = qp->attr.retry_cnt;
	xp->c->cfg.rnr_retry = qp->attr.rnr_retry;
	xp->resp_timeout_ns = vrdma_dp_resp_timeout(qp);
	xp->started = true;
	vrdma_dp_run(xp);
	spin_unlock_bh(&xp->lock);
	return 0;
}

/*
 * The data path failed the QP and its move to ERR is under way: what
 * query_qp reports from the error completion on. Caller holds state_lock.
 */
bool vrdma_dp_failed(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp = qp_xp(qp);

	return xp && READ_ONCE(xp->error);
}

/*
 * Stop producing completions (the QP enters ERR or RESET): the caller
 * flushes what is left. Never waits for the work.
 */
void vrdma_dp_quiesce(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp = qp_xp(qp);

	if (!xp)
		return;
	spin_lock_bh(&xp->lock);
	xp->dead = true;
	/* SRQ WQEs taken for messages that will never complete: flushed */
	while (qp->ibqp.srq && (s32)(xp->srq_taken - xp->rq_ssn_done) > 0) {
		struct vrdma_cqe cqe = {};

		cqe.wr_id = xp->srq_rqe[xp->rq_ssn_done % VRDMA_DP_MSGS].wr_id;
		cqe.opcode = IB_WC_RECV;
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.qp_num = qp->ibqp.qp_num;
		vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
		xp->rq_ssn_done++;
	}
	spin_unlock_bh(&xp->lock);
	hrtimer_try_to_cancel(&xp->timer);
}

/* The QP goes to RESET or is destroyed: no user of the connection left. */
void vrdma_dp_destroy(struct vrdma_qp *qp)
{
	struct vrdma_xp *xp = qp_xp(qp);

	if (!xp)
		return;
	vrdma_dp_quiesce(qp);
	WRITE_ONCE(qp->xp, NULL);
	synchronize_rcu();	/* receive paths that found it are done */
	hrtimer_cancel(&xp->timer);
	cancel_work_sync(&xp->work);
	hrtimer_cancel(&xp->timer);
	vrdma_net_route_destroy(&xp->route);
	vrdma_stats_conn_del(qp->vdev, xp);
	kvfree(xp->swqe);
	kvfree(xp->c);
	kvfree(xp);
}

int vrdma_dp_init(void)
{
	vrdma_dp_wq = alloc_workqueue("vrdma_dp", WQ_UNBOUND | WQ_HIGHPRI, 0);
	return vrdma_dp_wq ? 0 : -ENOMEM;
}

void vrdma_dp_exit(void)
{
	destroy_workqueue(vrdma_dp_wq);
}
