// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rc_req.c - the RC requester: takes send WQEs from the SQ ring and
 * queues them as messages of the transport core, builds and sends the
 * data packets the core decides on (also the READ/atomic responses the
 * responder queued, which share the transmit message table), processes
 * ACKs and NACKs, places READ/atomic responses, and completes send WQEs
 * in order. Every function runs with rc->lock held.
 *
 * Message fields on the wire (docs/wire-protocol.md): SEND carries its
 * send sequence number (the receive WQE it lands in) in va; WRITE and
 * READ requests carry rkey/va; a READ response carries the msg_id of the
 * request it answers in va. Atomics (ATOMIC_REQ/ATOMIC_RESP) work like a
 * one-packet READ: the request carries rkey/va and its operands as
 * payload, the response the original value and the request's msg_id in
 * va. SEND_WITH_INV is a SEND with VT_F_INV and the rkey to invalidate.
 */
#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "rdma/vrdma_wqe.h"
#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"

/* ---- completion ------------------------------------------------------ */

/*
 * Complete finished send WQEs in order, releasing their ring slots. CQEs
 * are pushed outside sq_lock: a kernel consumer's completion handler may
 * post again.
 */
static void vrdma_req_complete_sq(struct vrdma_rc_conn *rc)
{
	struct vrdma_qp *qp = rc->qp;
	struct vrdma_ring *r = &qp->sq;
	struct vrdma_cq *cq = to_vcq(qp->ibqp.send_cq);
	unsigned long flags;

	lockdep_assert_held(&rc->lock);
	for (;;) {
		struct vrdma_swqe *sw;
		struct vrdma_cqe cqe = {};

		spin_lock_irqsave(&qp->sq_lock, flags);
		sw = vrdma_rc_swqe(rc, r->cons);
		/* after a failure, everything behind it is flushed */
		if (r->cons == rc->req.sq_taken || sw->state != VRDMA_SW_DONE ||
		    rc->error) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			return;
		}
		vrdma_slot_set(vrdma_ring_slot(r, r->cons), 0);
		r->cons++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		sw->state = VRDMA_SW_FREE;
		/* failed before its CQE is visible: query_qp then says ERR */
		if (sw->status != IB_WC_SUCCESS)
			vrdma_rc_fail(rc, sw->status);
		if (sw->status != IB_WC_SUCCESS ||
		    (sw->sqe.flags & VRDMA_WQE_SIGNALED)) {
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

/* The send WQE @sw is finished with @status: complete what is in order. */
static void vrdma_req_done(struct vrdma_rc_conn *rc, struct vrdma_swqe *sw,
			   enum ib_wc_status status)
{
	sw->state = VRDMA_SW_DONE;
	sw->status = status;
	vrdma_req_complete_sq(rc);
}

/*
 * The oldest unfinished send WQE fails with @status; the QP goes to ERR.
 * A remote error (a NACK of the responder) names the first request not
 * yet acknowledged: READs and atomics before it were accepted, and the
 * responder delivers their responses before it fails. Their WQEs
 * complete first; the failed one then completes in order, its error
 * moving the QP to ERR (or the response timer fails the QP).
 */
void vrdma_req_fail_oldest(struct vrdma_rc_conn *rc, enum ib_wc_status status)
{
	bool remote = status == IB_WC_REM_ACCESS_ERR ||
		      status == IB_WC_REM_INV_REQ_ERR;
	struct vrdma_qp *qp = rc->qp;
	bool waiting = false, marked = false;
	u32 i;

	/*
	 * Only the first failure completes a WQE in error: a later NACK
	 * (for a WQE behind the failed one) must leave it to the flush.
	 */
	if (rc->error) {
		vrdma_rc_fail(rc, status);
		return;
	}
	if (rc->req.fail_marked)
		return;
	for (i = qp->sq.cons; i != rc->req.sq_taken; i++) {
		struct vrdma_swqe *sw = vrdma_rc_swqe(rc, i);

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
	vrdma_req_complete_sq(rc);
	if (waiting && marked) {
		rc->req.fail_marked = true;
		return;
	}
	vrdma_rc_fail(rc, status);
}

/* The work completion status of a transport error (enum vt_err). */
enum ib_wc_status vrdma_req_err_status(int err)
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
	case VT_ERR_REM_OP:
		return IB_WC_REM_OP_ERR;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

/* No response to an accepted READ/atomic request: the peer is gone. */
void vrdma_req_resp_expired(struct vrdma_rc_conn *rc)
{
	struct vrdma_qp *qp = rc->qp;
	u32 i;

	rc->req.resp_deadline = 0;
	for (i = qp->sq.cons; i != rc->req.sq_taken; i++) {
		struct vrdma_swqe *sw = vrdma_rc_swqe(rc, i);

		if (sw->state != VRDMA_SW_WAIT_RESP)
			continue;
		vrdma_count(qp->vdev, VRDMA_CNT_RESP_TIMEOUTS, 1);
		vrdma_req_done(rc, sw, IB_WC_RETRY_EXC_ERR);
		vrdma_rc_fail(rc, IB_WC_RETRY_EXC_ERR);
		return;
	}
}

/* ---- taking send WQEs -------------------------------------------------- */

/* A well-formed WQE that must stay in its slot for now. */
static bool vrdma_req_must_wait(struct vrdma_rc_conn *rc,
				const struct vrdma_swqe *sw)
{
	struct vrdma_qp *qp = rc->qp;
	u32 max_rd = max_t(u32, 1, qp->attr.max_rd_atomic);

	/* IB_SEND_FENCE: wait for outstanding READs and atomics */
	if ((sw->sqe.flags & VRDMA_WQE_FENCE) && rc->req.rd_outstanding)
		return true;
	/* max_rd_atomic: wait for a response */
	if (vrdma_op_has_resp(sw->sqe.opcode) &&
	    rc->req.rd_outstanding >= max_rd)
		return true;
	/*
	 * Earlier WQEs may still be retransmitted from the MR a LOCAL_INV
	 * invalidates: it runs once they are all complete.
	 */
	return sw->sqe.opcode == VRDMA_OP_LOCAL_INV &&
	       rc->req.sq_taken != qp->sq.cons;
}

/* LOCAL_INV, REG_MR and BIND_MW execute when taken, complete in order. */
static enum ib_wc_status vrdma_req_local_op(struct vrdma_rc_conn *rc,
					    const struct vrdma_sqe *sqe)
{
	int rv;

	if (sqe->opcode == VRDMA_OP_LOCAL_INV)
		rv = vrdma_mr_invalidate(rc->qp, sqe->ex);
	else if (sqe->opcode == VRDMA_OP_BIND_MW)
		rv = vrdma_mw_bind(rc->qp, sqe);
	else
		rv = vrdma_mr_fast_reg(rc->qp, sqe);
	return rv ? IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
}

/* A READ/atomic request: what its retransmissions are built from. */
static void vrdma_req_note_read(struct vrdma_rc_conn *rc,
				struct vrdma_swqe *sw, struct vrdma_tmsg *tm)
{
	struct vrdma_rc_req *req = &rc->req;
	bool cas = sw->sqe.opcode == VRDMA_OP_ATOMIC_CMP_AND_SWP;
	u32 i;

	for (i = 0; i < VRDMA_RC_READS; i++) {
		if (req->rd_out[i].used)
			continue;
		req->rd_out[i].used = true;
		req->rd_out[i].msg_id = sw->msg_id;
		req->rd_out[i].sq_idx = tm->sq_idx;
		break;
	}
	req->rd_outstanding++;

	tm->rkey = sw->sqe.rkey;
	tm->va = sw->sqe.raddr;
	tm->len = sw->len;
	tm->req_op = VT_OP_READ_REQ;
	if (vrdma_op_is_atomic(sw->sqe.opcode)) {
		tm->req_op = VT_OP_ATOMIC_REQ;
		tm->atomic.op = cas ? VT_ATOMIC_CMP_SWP : VT_ATOMIC_FETCH_ADD;
		tm->atomic.swap_add = cas ? sw->sqe.swap : sw->sqe.compare_add;
		tm->atomic.compare = cas ? sw->sqe.compare_add : 0;
	}
}

/* Bytes the core carries for a message: a READ request carries none. */
static u32 vrdma_req_wire_len(const struct vrdma_swqe *sw)
{
	if (sw->sqe.opcode == VRDMA_OP_RDMA_READ)
		return 0;
	if (vrdma_op_is_atomic(sw->sqe.opcode))
		return VT_ATOMIC_REQ_LEN;
	return sw->len;
}

/*
 * Nobody waits for the ACK of an unsignaled SEND or WRITE: it makes no
 * CQE, and the provider rings the doorbell for the WQEs behind it once it
 * is taken (VRDMA_WQE_TAKEN; a kernel QP's every post kicks). So it asks
 * for no immediate ACK when it drains the queue, and the receiver
 * coalesces its ACK (by count, bytes, time, or the reverse data that
 * carries it: vrdma_rc_run_at()). Where every message is its own packet,
 * as with small messages posted one at a time, that halves the packets.
 * READs and atomics keep asking (their response ends them), and so does
 * a ring half in use: its slots come back with the ACK.
 */
static bool vrdma_req_lazy_ack(const struct vrdma_rc_conn *rc,
			       const struct vrdma_swqe *sw)
{
	const struct vrdma_qp *qp = rc->qp;

	if ((qp->user && !qp->sq_mark_taken) ||
	    (sw->sqe.flags & VRDMA_WQE_SIGNALED) ||
	    vrdma_op_has_resp(sw->sqe.opcode))
		return false;
	return rc->req.sq_taken - qp->sq.cons < qp->sq.num / 2;
}

/* Hand a taken WQE to the core as message msg_next; false: core full. */
static bool vrdma_req_queue(struct vrdma_rc_conn *rc, struct vrdma_swqe *sw,
			    u32 sq_idx)
{
	struct vrdma_rc_req *req = &rc->req;
	struct vrdma_tmsg *tm;
	u8 op = sw->sqe.opcode;

	sw->msg_id = req->msg_next;
	if (vt_tx_enqueue_ex(&rc->vt, sw->msg_id, vrdma_req_wire_len(sw),
			     vrdma_req_lazy_ack(rc, sw) ? VT_MSG_LAZY_ACK : 0))
		return false;
	if (op == VRDMA_OP_SEND || op == VRDMA_OP_SEND_WITH_IMM ||
	    op == VRDMA_OP_SEND_WITH_INV)
		sw->ssn = req->ssn_next++;	/* in va on the wire */
	else if (op == VRDMA_OP_RDMA_WRITE_WITH_IMM)
		req->ssn_next++;		/* consumes a receive WQE too */

	tm = &req->tmsg[sw->msg_id % VRDMA_RC_MSGS];
	tm->kind = VRDMA_TMSG_SQ;
	tm->sq_idx = sq_idx;
	tm->req_op = 0;
	if (vrdma_op_has_resp(op))
		vrdma_req_note_read(rc, sw, tm);
	sw->state = VRDMA_SW_QUEUED;
	req->msg_next++;
	return true;
}

/*
 * Tell the provider that the WQE in @slot is taken (uapi VRDMA_WQE_TAKEN):
 * it rings the doorbell for the WQEs behind it, since no ACK may come soon
 * to make a run look (vrdma_req_lazy_ack()). The fence pairs with the
 * provider's between publishing its WQEs and reading this flag: either
 * this run's next look sees them, or the provider sees the flag.
 */
static void vrdma_req_mark_taken(struct vrdma_rc_conn *rc, void *slot, u32 f)
{
	if (!rc->qp->sq_mark_taken)
		return;
	vrdma_slot_set(slot, f | VRDMA_WQE_TAKEN);
	smp_mb();	/* the flag before our next look at the SQ */
}

/* Take the WQE in slot sq_taken; false when the sender must stop here. */
static bool vrdma_req_take_one(struct vrdma_rc_conn *rc)
{
	struct vrdma_rc_req *req = &rc->req;
	void *slot = vrdma_ring_slot(&rc->qp->sq, req->sq_taken);
	struct vrdma_swqe *sw = vrdma_rc_swqe(rc, req->sq_taken);
	enum ib_wc_status st;
	u32 f = vrdma_slot_flags(slot);
	bool local;
	u64 len = 0;

	if (!(f & VRDMA_WQE_VALID))
		return false;
	/* a private copy: the slot stays writable by its process */
	memcpy(&sw->sqe, slot, sizeof(sw->sqe));
	sw->sqe.flags = f;
	sw->status = IB_WC_SUCCESS;

	/* the shape, as the provider checked it when posting */
	st = (enum ib_wc_status)vrdma_sqe_check(&sw->sqe, f, VRDMA_SQE_QP_RC,
						 !rc->qp->user, &len);
	if (st == IB_WC_SUCCESS && vrdma_req_must_wait(rc, sw))
		return false;
	local = sw->sqe.opcode == VRDMA_OP_LOCAL_INV ||
		sw->sqe.opcode == VRDMA_OP_REG_MR ||
		sw->sqe.opcode == VRDMA_OP_BIND_MW;
	if (st == IB_WC_SUCCESS && local)
		st = vrdma_req_local_op(rc, &sw->sqe);
	sw->len = st ? 0 : len;
	if (st || local) {
		/* local operations and refused WQEs complete here, in order */
		sw->msg_id = req->msg_next;
		req->sq_taken++;
		vrdma_req_done(rc, sw, st);
		/*
		 * Its slot may be released now, and the provider skipped
		 * the doorbell of a WQE behind it if it saw the slot still
		 * in use: the caller's next look must follow the release
		 * (the full fence of vrdma_req_take_sq()).
		 */
		smp_mb();
		return st == IB_WC_SUCCESS;
	}
	/* core message queue full: retake this slot later */
	if (!vrdma_req_queue(rc, sw, req->sq_taken))
		return false;
	vrdma_req_mark_taken(rc, slot, f);
	req->sq_taken++;
	return true;
}

/* Take new send WQEs from the SQ ring and queue them as messages. */
void vrdma_req_take_sq(struct vrdma_rc_conn *rc)
{
	struct vrdma_rc_req *req = &rc->req;
	struct vrdma_ring *r = &rc->qp->sq;

	lockdep_assert_held(&rc->lock);
	/*
	 * Pairs with the provider's fence between publishing WQEs and
	 * reading whether the last one before them is finished: a slot
	 * cleared by vrdma_req_complete_sq is visible before we look for
	 * new WQEs, so the provider rings the doorbell or we see its WQEs.
	 */
	smp_mb();
	/* read first: a slot released while we take makes the next run look */
	req->sq_seen = READ_ONCE(r->cons);
	while (rc->started && !rc->error && !rc->resp.nack &&
	       req->msg_next - req->msg_acked < VRDMA_RC_MSGS &&
	       req->sq_taken - r->cons < r->num)
		if (!vrdma_req_take_one(rc))
			break;
	req->sq_blocked = vrdma_slot_flags(vrdma_ring_slot(r, req->sq_taken)) &
			  VRDMA_WQE_VALID;
}

/*
 * May a doorbell hold the WQEs that wait in the SQ back (vrdma_rc_defer())?
 * Fewer than VRDMA_SQ_DB_EVERY wait (the provider rings again at that
 * many), and the first is a SEND or WRITE of at most one packet. Read
 * from the process's slots, which it may still change: a hint, not a
 * check.
 */
bool vrdma_req_sq_holdable(const struct vrdma_rc_conn *rc)
{
	struct vrdma_ring *r = &rc->qp->sq;
	u32 head = rc->req.sq_taken, i, n;
	struct vrdma_sqe *sqe = vrdma_ring_slot(r, head);
	u32 f = vrdma_slot_flags(sqe);
	u8 op = READ_ONCE(sqe->opcode);
	u64 len = 0;

	if (!(f & VRDMA_WQE_VALID) ||
	    (op != VRDMA_OP_SEND && op != VRDMA_OP_SEND_WITH_IMM &&
	     op != VRDMA_OP_RDMA_WRITE && op != VRDMA_OP_RDMA_WRITE_WITH_IMM))
		return false;
	if (f & VRDMA_WQE_INLINE) {
		len = READ_ONCE(sqe->inline_len);
	} else {
		n = min_t(u32, READ_ONCE(sqe->num_sge), VRDMA_MAX_SGE);
		for (i = 0; i < n; i++)
			len += READ_ONCE(sqe->sge[i].length);
	}
	if (len > rc->vt.cfg.mtu)
		return false;
	n = min_t(u32, VRDMA_SQ_DB_EVERY, r->num);
	for (i = 1; i < n; i++)
		if (!(vrdma_slot_flags(vrdma_ring_slot(r, head + i)) &
		      VRDMA_WQE_VALID))
			return true;
	return false;
}

/*
 * Does a run that no doorbell asked for (a receive, a timer) owe the SQ
 * a look? The provider skips its doorbell only while the slot before its
 * new WQEs is not yet released, counting on the run that releases it to
 * look (vrdma_req_take_sq). So a look is owed where a slot was released
 * since the last one, or where the last one stopped at a WQE it could
 * not take yet. Any other WQE found has its doorbell on the way: taken
 * here it went out from this CPU, in a softirq of the peer's traffic,
 * and in a ping-pong both directions' work then ran on one CPU, its
 * process held up and the other's doorbell spinning on our lock.
 */
bool vrdma_req_sq_owed(const struct vrdma_rc_conn *rc)
{
	return rc->req.sq_blocked ||
	       rc->req.sq_seen != READ_ONCE(rc->qp->sq.cons);
}

/*
 * Queue the READ/atomic responses the responder owes. One of a packet asks
 * for no ACK (a lazy message): the requester holds it for its next request
 * to carry, where an ACK of its own cost a READ ping-pong a fourth skb
 * (docs/benchmarks.md, "The READ ping-pong"). Its loss then waits for the
 * lazy allowance, unless the requester's retransmission of the request
 * says so first (vrdma_resp_rx_data()).
 */
void vrdma_req_take_reads(struct vrdma_rc_conn *rc)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	struct vrdma_rc_req *req = &rc->req;

	while (resp->rdq_head != resp->rdq_tail &&
	       req->msg_next - req->msg_acked < VRDMA_RC_MSGS) {
		struct vrdma_tmsg *q = &resp->rdq[resp->rdq_head %
						  VRDMA_RC_READS];
		u32 id = req->msg_next;

		if (vt_tx_enqueue_ex(&rc->vt, id, q->len,
				     q->len <= rc->vt.cfg.mtu ?
				     VT_MSG_LAZY_ACK : 0))
			return;
		req->tmsg[id % VRDMA_RC_MSGS] = *q;
		req->msg_next++;
		resp->rdq_head++;
		resp->rd_in--;
	}
}

/* ---- transmit ------------------------------------------------------------ */

/* The header of a send WQE's packet, from the WQE's private copy. */
static void vrdma_req_sq_hdr(const struct vrdma_swqe *sw,
			     struct vt_data_hdr *h)
{
	switch (sw->sqe.opcode) {
	case VRDMA_OP_SEND_WITH_IMM:
		h->flags |= VT_F_IMM;
		h->imm = sw->sqe.ex;
		fallthrough;
	case VRDMA_OP_SEND:
		h->opcode = VT_OP_SEND;
		h->va = sw->ssn;
		break;
	case VRDMA_OP_SEND_WITH_INV:
		h->opcode = VT_OP_SEND;
		h->flags |= VT_F_INV;
		h->rkey = sw->sqe.ex;
		h->va = sw->ssn;
		break;
	case VRDMA_OP_RDMA_WRITE_WITH_IMM:
		h->flags |= VT_F_IMM;
		h->imm = sw->sqe.ex;
		fallthrough;
	case VRDMA_OP_RDMA_WRITE:
		h->opcode = VT_OP_WRITE;
		h->rkey = sw->sqe.rkey;
		h->va = sw->sqe.raddr;
		break;
	}
}

/*
 * The header of the packet of decision @d for message @tm; the send WQE
 * whose payload it carries, or NULL (requests and responses built from
 * @tm alone).
 */
static struct vrdma_swqe *vrdma_req_hdr(struct vrdma_rc_conn *rc,
					const struct vrdma_tmsg *tm,
					const struct vt_tx_decision *d,
					struct vt_data_hdr *h)
{
	struct vrdma_swqe *sw = NULL;

	memset(h, 0, sizeof(*h));
	h->flags = d->flags;
	h->path = d->path;
	h->payload_len = d->len;
	h->dst_conn = rc->dest_qpn;
	h->psn = d->psn;
	h->tx_ts = d->ts;
	h->msg_id = d->msg_id;
	h->msg_off = d->msg_off;
	h->msg_len = d->msg_len;

	if (tm->kind == VRDMA_TMSG_READ_RESP) {
		h->opcode = VT_OP_READ_RESP;
		h->va = tm->req_msg_id;
	} else if (tm->kind == VRDMA_TMSG_ATOMIC_RESP) {
		h->opcode = VT_OP_ATOMIC_RESP;
		h->va = tm->req_msg_id;
	} else if (tm->req_op) {
		/* READ/atomic request: from its copy, never from the slot */
		h->opcode = tm->req_op;
		h->rkey = tm->rkey;
		h->va = tm->va;
		if (h->opcode == VT_OP_READ_REQ)
			h->msg_len = tm->len;
	} else {
		sw = vrdma_rc_swqe(rc, tm->sq_idx);
		vrdma_req_sq_hdr(sw, h);
		/*
		 * IBA 9.2: SE on the last packet of a message that consumes a
		 * receive WQE (retransmissions are rebuilt here: they too)
		 */
		if ((sw->sqe.flags & VRDMA_WQE_SOLICITED) &&
		    (h->flags & VT_F_EOM) &&
		    (h->opcode == VT_OP_SEND || (h->flags & VT_F_IMM)))
			h->flags |= VT_F_SE;
	}
	return sw;
}

/* Fill the packet's payload; IB_WC_SUCCESS or the status it fails with. */
static enum ib_wc_status vrdma_req_payload(struct vrdma_rc_conn *rc,
					   const struct vrdma_tmsg *tm,
					   const struct vrdma_swqe *sw,
					   const struct vt_data_hdr *h,
					   void *payload)
{
	struct vrdma_buf b = VRDMA_BUF(payload);
	u32 off = h->msg_off, len = h->payload_len;

	if (tm->kind == VRDMA_TMSG_READ_RESP)
		return vrdma_mr_rw(rc->qp, tm->rkey, IB_ACCESS_REMOTE_READ,
				   tm->va + off, &b, len, false) ?
		       IB_WC_REM_ACCESS_ERR : IB_WC_SUCCESS;
	if (tm->kind == VRDMA_TMSG_ATOMIC_RESP)
		return vt_atomic_resp_encode(tm->orig, payload, len) < 0 ?
		       IB_WC_REM_OP_ERR : IB_WC_SUCCESS;
	if (h->opcode == VT_OP_ATOMIC_REQ)
		return len != VT_ATOMIC_REQ_LEN ||
		       vt_atomic_encode(&tm->atomic, payload, len) < 0 ?
		       IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
	if (h->opcode == VT_OP_READ_REQ || !len)
		return IB_WC_SUCCESS;
	if (sw->sqe.flags & VRDMA_WQE_INLINE) {
		if (off + len > sw->len)
			return IB_WC_LOC_LEN_ERR;
		memcpy(payload, (u8 *)sw->sqe.sge + off, len);
		return IB_WC_SUCCESS;
	}
	return vrdma_sge_copy(rc->qp, sw->sqe.sge, sw->sqe.num_sge, off, &b,
			      len, false);
}

/*
 * The payload's pages, to attach to the packet instead of copying it: a
 * READ response from its MR, a SEND's or WRITE's from its gather list.
 * False when it must be copied (inline, kernel and DMA MRs, atomics, an
 * access fault that the copy then reports).
 */
static bool vrdma_req_frags(struct vrdma_rc_conn *rc,
			    const struct vrdma_tmsg *tm,
			    const struct vrdma_swqe *sw,
			    const struct vt_data_hdr *h, struct vrdma_frags *fr)
{
	u32 off = h->msg_off, len = h->payload_len;

	if (!len || !vrdma_rc_zcopy())
		return false;
	if (tm->kind == VRDMA_TMSG_READ_RESP)
		return vrdma_mr_frags(rc->qp, tm->rkey, IB_ACCESS_REMOTE_READ,
				      tm->va + off, len, fr, &rc->req.mr_hint);
	if (!sw || (sw->sqe.flags & VRDMA_WQE_INLINE) ||
	    (h->opcode != VT_OP_SEND && h->opcode != VT_OP_WRITE))
		return false;
	return vrdma_sge_frags(rc->qp, sw->sqe.sge, sw->sqe.num_sge, off, len,
			       fr, &rc->req.mr_hint);
}

/*
 * In place of a packet that cannot be sent: its header alone at an
 * acknowledged PSN (snd_una - 1), which the requester can only take as a
 * duplicate and answers with an immediate ACK. If it holds the packet,
 * that ACK ends the retransmissions at once; were the packet left unsent
 * instead, nothing else might make it ACK (its ACK was lost, and a window
 * that holds the packet lets nothing new go), and each retransmission
 * timeout would double until the retry count failed the QP. If it truly
 * lacks the packet, the retransmissions go on and fail it, as they must.
 */
static void vrdma_req_ack_probe(struct vrdma_rc_conn *rc,
				struct vt_data_hdr *h, u32 entropy,
				struct vrdma_frags *fr)
{
	void *buf = vrdma_frag_alloc(VT_DATA_HDR_LEN);

	vrdma_frags_put(fr);	/* the probe carries no payload */
	if (!buf)
		return;
	h->psn = vt_tx_acked_psn(&rc->vt);
	h->payload_len = 0;
	h->msg_off = 0;
	h->flags = VT_F_ACKREQ | VT_F_RETX;
	if (vt_data_hdr_encode(h, buf, VT_DATA_HDR_LEN) < 0) {
		skb_free_frag(buf);
		return;
	}
	vrdma_batch_add(rc->qp->vdev, &rc->route, &rc->req.batch,
			vrdma_net_sport(rc->qp->ibqp.qp_num, entropy), buf,
			VT_DATA_HDR_LEN, fr);
}

/*
 * Build the packet of one SEND/RETX decision and add it to the run's
 * batch (sent by vrdma_rc_run_at() at the end of the run, or when the
 * next packet does not fit). A payload that cannot be read fails the QP;
 * a packet the stack drops (no memory, no route) is lost like on the
 * wire, and the core retransmits it.
 */
void vrdma_req_xmit_data(struct vrdma_rc_conn *rc,
			 const struct vt_tx_decision *d)
{
	struct vrdma_qp *qp = rc->qp;
	struct vrdma_tmsg *tm = &rc->req.tmsg[d->msg_id % VRDMA_RC_MSGS];
	enum ib_wc_status st = IB_WC_SUCCESS;
	struct vrdma_frags fr vrdma_noinit;
	struct vrdma_swqe *sw;
	struct vt_data_hdr h vrdma_noinit;	/* vrdma_req_hdr() clears it */
	u32 copy;
	void *buf;
	bool zc;

	vrdma_frags_init(&fr);
	sw = vrdma_req_hdr(rc, tm, d, &h);
	zc = vrdma_req_frags(rc, tm, sw, &h, &fr);
	/* with the payload in page fragments, the buffer holds the header */
	copy = VT_DATA_HDR_LEN + (zc ? 0 : d->len);
	buf = vrdma_frag_alloc(copy);
	if (!buf) {
		vrdma_frags_put(&fr);
		return;
	}
	if (vt_data_hdr_encode(&h, buf, VT_DATA_HDR_LEN) < 0) {
		vrdma_frags_put(&fr);
		skb_free_frag(buf);
		return;
	}
	if (zc)
		vrdma_count(qp->vdev, VRDMA_CNT_TX_ZCOPY, 1);
	else
		st = vrdma_req_payload(rc, tm, sw, &h,
				       (u8 *)buf + VT_DATA_HDR_LEN);
	if (st != IB_WC_SUCCESS) {
		skb_free_frag(buf);
		/*
		 * A resent READ response whose MR is gone: the requester
		 * may well hold it already (its ACK was lost) and have let
		 * the MR go, as NVMe-oF's SEND_WITH_INV does once the READ
		 * completed. Failing the QP here broke such connections;
		 * an ACK probe goes instead.
		 */
		if (!sw && tm->kind == VRDMA_TMSG_READ_RESP &&
		    d->action == VT_TX_RETX) {
			vrdma_count(qp->vdev, VRDMA_CNT_RETX_RESP_GONE, 1);
			vrdma_req_ack_probe(rc, &h, d->entropy, &fr);
			return;
		}
		if (sw)
			vrdma_req_fail_oldest(rc, st);
		else
			vrdma_rc_fail(rc, st);
		return;
	}
	vrdma_batch_add(qp->vdev, &rc->route, &rc->req.batch,
			vrdma_net_sport(qp->ibqp.qp_num, d->entropy), buf, copy,
			&fr);
	/* a full batch went: the next packet's batch starts a new burst */
	if (!rc->req.batch.skb)
		vt_path_end_burst(&rc->vt);
}

/* ---- ACKs ----------------------------------------------------------------- */

/*
 * Message @tm was acknowledged. A READ's or atomic's response may have
 * come before this ACK: the WQE is complete then, and its slot may hold
 * a newer WQE already.
 */
static void vrdma_req_acked(struct vrdma_rc_conn *rc, struct vrdma_tmsg *tm,
			    u64 now)
{
	struct vrdma_rc_req *req = &rc->req;
	struct vrdma_swqe *sw = vrdma_rc_swqe(rc, tm->sq_idx);

	if (tm->kind != VRDMA_TMSG_SQ || sw->msg_id != req->msg_acked ||
	    sw->state != VRDMA_SW_QUEUED)
		return;
	if (!vrdma_op_has_resp(sw->sqe.opcode)) {
		sw->state = VRDMA_SW_DONE;
		return;
	}
	sw->state = VRDMA_SW_WAIT_RESP;
	if (!req->resp_deadline)
		req->resp_deadline = now + req->resp_timeout_ns;
}

void vrdma_req_rx_ack(struct vrdma_rc_conn *rc, const struct vt_ack *ack,
		      u64 now)
{
	struct vrdma_rc_req *req = &rc->req;
	struct vt_ack_result r;
	u32 i;

	lockdep_assert_held(&rc->lock);
	if (vt_tx_on_ack(&rc->vt, now, ack, &r) < 0 && !r.error)
		return;
	for (i = 0; i < r.msgs_done; i++) {
		struct vrdma_tmsg *tm = &req->tmsg[req->msg_acked %
						   VRDMA_RC_MSGS];

		vrdma_req_acked(rc, tm, now);
		tm->kind = VRDMA_TMSG_NONE;
		req->msg_acked++;
	}
	if (r.msgs_done)
		vrdma_req_complete_sq(rc);
	if (r.error)
		vrdma_req_fail_oldest(rc, vrdma_req_err_status(r.error));
	if (r.msgs_done)
		vrdma_resp_fail_check(rc);	/* responses delivered */
	/* the window opened: vrdma_rc_rx_flush() sends */
}

/* ---- READ and atomic responses ---------------------------------------------- */

/*
 * First packet of a response to our READ/atomic request h->va: bind it
 * to the request's rd_out slot (in rm->va). A response to nothing, or of
 * the wrong kind, is an invalid request.
 */
enum vt_nack_code vrdma_req_resp_first(struct vrdma_rc_conn *rc,
				       const struct vt_data_hdr *h,
				       struct vrdma_rmsg *rm,
				       const struct sk_buff *skb)
{
	bool atomic = h->opcode == VT_OP_ATOMIC_RESP;
	u32 i;

	for (i = 0; i < VRDMA_RC_READS; i++) {
		struct vrdma_rd_out *ro = &rc->req.rd_out[i];
		u8 op;

		if (!ro->used || ro->msg_id != (u32)h->va)
			continue;
		op = vrdma_rc_swqe(rc, ro->sq_idx)->sqe.opcode;
		if (vrdma_op_is_atomic(op) != atomic)
			return VT_NACK_INV_REQ;
		rm->va = i;
		return VT_NACK_NONE;
	}
	return VT_NACK_INV_REQ;
}

/* Place a response's payload into the request's local buffers. */
enum ib_wc_status vrdma_req_resp_place(struct vrdma_rc_conn *rc,
				       const struct vt_data_hdr *h,
				       struct vrdma_rmsg *rm,
				       struct vrdma_mr *mr,
				       const struct sk_buff *skb)
{
	struct vrdma_rd_out *ro = &rc->req.rd_out[rm->va];
	struct vrdma_swqe *sw = vrdma_rc_swqe(rc, ro->sq_idx);
	struct vrdma_buf b = VRDMA_SKB_BUF(skb, vrdma_rx_payload(skb));
	u8 buf[VT_ATOMIC_RESP_LEN];
	const void *p;
	u64 orig;

	if (h->opcode == VT_OP_READ_RESP) {
		if (h->msg_off + h->payload_len > sw->len)
			return IB_WC_LOC_LEN_ERR;
		return vrdma_sge_copy(rc->qp, sw->sqe.sge, sw->sqe.num_sge,
				      h->msg_off, &b, h->payload_len, true);
	}
	p = skb_header_pointer(skb, vrdma_rx_payload(skb), sizeof(buf), buf);
	if (!p || vt_atomic_resp_decode(p, h->payload_len, &orig) < 0)
		return IB_WC_BAD_RESP_ERR;
	/* host order, like a local 64-bit load */
	b = VRDMA_BUF(&orig);
	return vrdma_sge_copy(rc->qp, sw->sqe.sge, sw->sqe.num_sge, 0, &b,
			      sizeof(orig), true);
}

/* A response is complete, in order: its WQE completes. */
void vrdma_req_resp_done(struct vrdma_rc_conn *rc, struct vrdma_rmsg *rm)
{
	struct vrdma_rc_req *req = &rc->req;
	struct vrdma_rd_out *ro = &req->rd_out[rm->va];
	struct vrdma_swqe *sw = vrdma_rc_swqe(rc, ro->sq_idx);

	ro->used = false;
	req->rd_outstanding--;
	if (!req->rd_outstanding)
		req->resp_deadline = 0;
	vrdma_req_done(rc, sw, rm->status);
}
