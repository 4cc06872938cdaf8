// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rc_resp.c - the RC responder: every data packet of the peer goes
 * through one check chain (as rxe_resp.c's check_psn -> check_op_seq ->
 * ... -> execute), each step a small function that answers with a NACK
 * code or lets the packet on:
 *
 *   new PSN?  (the core; duplicates and old packets go straight to it)
 *   vrdma_resp_check_msg    the message is within the window
 *   vrdma_resp_check_op     first packet: the opcode's own checks bind the
 *                           message (rights, MR, receive WQE, resources);
 *                           later packets: same opcode as the first
 *   vrdma_resp_check_rkey   WRITE: each packet's range in the MR
 *   vt_rx_on_data           the core's verdict: accept, duplicate, NACK
 *   vrdma_resp_execute      place the payload
 *   vrdma_resp_complete     in message order: complete the receive WQE,
 *                           queue the READ response, execute the atomic
 *
 * What an opcode does at each step is one row of vrdma_resp_ops[] (siw's
 * iwarp_pktinfo[]); READ and atomic responses to our own requests take
 * the same path with the requester's handlers (vrdma_rc_req.c). Also
 * here: ACKs and the repeated fatal NACK of a failed responder. Every
 * function runs with rc->lock held.
 */
#include <linux/skbuff.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"

/* ---- ACKs and NACKs ---------------------------------------------------- */

/*
 * Send an ACK or NACK for QP @qpn on @r; a lost one is recovered by the
 * sender's timers. Also what a closed connection answers with
 * (vrdma_rc_grave.c), from a route that outlived the QP.
 */
void vrdma_resp_xmit_ack_on(struct vrdma_dev *vdev, struct vrdma_route *r,
			    u32 qpn, const struct vt_ack *a)
{
	struct sk_buff *skb;

	skb = vrdma_net_alloc_skb(vdev, r, VT_ACK_LEN);
	if (!skb)
		return;
	if (vt_ack_encode(a, skb_put(skb, VT_ACK_LEN), VT_ACK_LEN) < 0) {
		kfree_skb(skb);
		return;
	}
	vrdma_net_xmit(vdev, r, vrdma_net_sport(qpn, 0), skb);
}

static void vrdma_resp_xmit_ack(struct vrdma_rc_conn *rc,
				const struct vt_ack *a)
{
	vrdma_resp_xmit_ack_on(rc->qp->vdev, &rc->route, rc->qp->ibqp.qp_num, a);
}

/* @a into the run's batch on @sport's path; false: no buffer for it. */
static bool vrdma_resp_ack_add(struct vrdma_rc_conn *rc,
			       const struct vt_ack *a, __be16 sport)
{
	struct vrdma_frags fr vrdma_noinit;
	void *buf;

	vrdma_frags_init(&fr);
	buf = vrdma_frag_alloc(VT_ACK_LEN);
	if (!buf)
		return false;
	if (vt_ack_encode(a, buf, VT_ACK_LEN) < 0) {
		skb_free_frag(buf);	/* lost, as on the wire */
		return true;
	}
	vrdma_count(rc->qp->vdev, VRDMA_CNT_ACKS_IN_DATA, 1);
	vrdma_batch_add(rc->qp->vdev, &rc->route, &rc->req.batch, sport, buf,
			VT_ACK_LEN, &fr);
	return true;
}

/*
 * The ACK as the last packet of the run's open batch, on the path of the
 * data before it: one skb through both stacks instead of two, and one
 * pass of the peer's receive path (socket, QP lookup, lock, clock) for
 * its reply and our ACK. The data header has no room for an ACK (no wire
 * change: the receiver takes each packet of a batch on its own). It must
 * be no longer than the batch's packets, which a GSO skb allows only of
 * its last (16 B of payload or more: the ACK is 72 bytes, a data header
 * 56). False: not taken.
 */
static bool vrdma_resp_ack_in_batch(struct vrdma_rc_conn *rc,
				    const struct vt_ack *a)
{
	struct vrdma_batch *b = &rc->req.batch;

	return vrdma_batch_room(b, VT_ACK_LEN) &&
	       vrdma_resp_ack_add(rc, a, b->sport);
}

/*
 * In the data's skb where it fits, else on its own behind that data (the
 * batch goes first): the peer waits for the data, not for the ACK.
 */
void vrdma_resp_send_ack(struct vrdma_rc_conn *rc, u64 now)
{
	struct vt_ack ack vrdma_noinit;	/* vt_rx_build_ack() clears it */

	vt_rx_build_ack(&rc->vt, now, &ack);
	ack.dst_conn = rc->dest_qpn;
	if (vrdma_resp_ack_in_batch(rc, &ack))
		return;
	vrdma_batch_send(rc->qp->vdev, &rc->route, &rc->req.batch);
	vrdma_resp_xmit_ack(rc, &ack);
}

/*
 * The ACK first in a new batch on the path of @entropy, that of the packet
 * the run sends next, which is shorter than an ACK (a READ request, an
 * atomic response: no payload or 8 bytes) and so cannot take it behind
 * itself in a GSO skb. The peer takes both in one pass of its receive
 * path, the ACK first.
 */
void vrdma_resp_send_ack_first(struct vrdma_rc_conn *rc, u64 now,
			       u16 entropy)
{
	struct vt_ack ack vrdma_noinit;	/* vt_rx_build_ack() clears it */
	__be16 sport = vrdma_net_sport(rc->qp->ibqp.qp_num, entropy);

	vt_rx_build_ack(&rc->vt, now, &ack);
	ack.dst_conn = rc->dest_qpn;
	if (!vrdma_resp_ack_add(rc, &ack, sport))
		vrdma_resp_xmit_ack(rc, &ack);
}

/*
 * A READ or atomic response of one packet is owed: the ACK its request
 * asked for may go right behind it, in its skb, not in an skb of its own
 * that the requester must take first, on its way to the response it
 * waits for (docs/benchmarks.md, "The READ ping-pong"). Behind a longer
 * response the ACK would wait for a batch of it: it goes first.
 */
bool vrdma_resp_short_owed(const struct vrdma_rc_conn *rc)
{
	const struct vrdma_rc_resp *resp = &rc->resp;

	return resp->rdq_head != resp->rdq_tail &&
	       resp->rdq[resp->rdq_head % VRDMA_RC_READS].len <=
	       rc->vt.cfg.mtu;
}

/*
 * An ACK is owed (due, or held for the run's data to carry) and the run's
 * next packet opens a batch but is shorter than an ACK: a GSO skb's
 * packets but its last are all of one size, so the ACK cannot follow it
 * there. It goes in front of it instead, in the same skb, not in an skb
 * of its own (vrdma_resp_send_ack_first()): a READ ping-pong's requester
 * holds the ACK of each response until its next request.
 */
bool vrdma_resp_ack_first(const struct vrdma_rc_conn *rc,
			  const struct vt_tx_decision *d)
{
	return !rc->req.batch.skb && VT_DATA_HDR_LEN + d->len < VT_ACK_LEN &&
	       vt_rx_ack_pending(&rc->vt) && vrdma_batch_on();
}

/*
 * A failed responder answers a data packet of its peer with its fatal
 * NACK again: the first one may have been lost, and the requester would
 * otherwise retry into a QP in ERR until RETRY_EXC.
 */
void vrdma_resp_replay_nack(struct vrdma_rc_conn *rc,
			    const struct vt_data_hdr *h)
{
	struct vt_ack a = {};

	a.opcode = VT_OP_NACK;
	a.nack_code = rc->resp.nack;
	a.dst_conn = rc->dest_qpn;
	a.cum_psn = rc->resp.nack_psn;
	a.trig_psn = rc->resp.nack_psn;
	a.echo_ts = h->tx_ts;
	a.echo_path = h->path;
	a.rwnd = 1;
	vrdma_count(rc->qp->vdev, VRDMA_CNT_FATAL_NACK_REPLAYS, 1);
	vrdma_resp_xmit_ack(rc, &a);
}

/*
 * A responder that sent a fatal NACK enters ERR once the READ and atomic
 * responses it owes for the requests before it are delivered (or fail).
 */
void vrdma_resp_fail_check(struct vrdma_rc_conn *rc)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	u32 i;

	if (!resp->nack || rc->error)
		return;
	if (resp->rdq_head != resp->rdq_tail || resp->rd_in)
		return;
	for (i = rc->req.msg_acked; i != rc->req.msg_next; i++) {
		enum vrdma_tmsg_kind k = rc->req.tmsg[i % VRDMA_RC_MSGS].kind;

		if (k == VRDMA_TMSG_READ_RESP || k == VRDMA_TMSG_ATOMIC_RESP)
			return;
	}
	/* an affiliated error: no completion carries it */
	rc->has_event = true;
	rc->event = resp->nack == VT_NACK_REM_ACCESS ?
		    IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_REQ_ERR;
	vrdma_rc_fail(rc, resp->nack == VT_NACK_REM_ACCESS ?
			  IB_WC_REM_ACCESS_ERR : IB_WC_REM_INV_REQ_ERR);
}

/* ---- receive WQEs ---------------------------------------------------------- */

/* Take the receive WQE of send sequence number @ssn (RQ) or any (SRQ). */
static bool vrdma_resp_take_rqe(struct vrdma_rc_conn *rc, u32 ssn,
				struct vrdma_rqe *out)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	struct vrdma_qp *qp = rc->qp;

	if (!qp->ibqp.srq)
		return vrdma_rq_peek(qp, ssn - resp->ssn_done, out);
	/*
	 * Messages may arrive out of order, but take SRQ WQEs in message
	 * (ssn) order, as an in-order fabric would: the ones before @ssn
	 * are kept for their messages.
	 */
	if (ssn - resp->ssn_done >= VRDMA_RC_MSGS)
		return false;
	while (resp->srq_taken - resp->ssn_done <= ssn - resp->ssn_done) {
		if (!vrdma_srq_take(to_vsrq(qp->ibqp.srq),
				    &resp->srq_rqe[resp->srq_taken %
						   VRDMA_RC_MSGS]))
			return false;
		resp->srq_taken++;
	}
	*out = resp->srq_rqe[ssn % VRDMA_RC_MSGS];
	return true;
}

/* The oldest receive WQE is done (SRQ slots were released when taken). */
static void vrdma_resp_release_rqe(struct vrdma_rc_conn *rc)
{
	rc->resp.ssn_done++;
	if (!rc->qp->ibqp.srq)
		vrdma_rq_release(rc->qp);
}

/*
 * @cflags: VRDMA_CQE_WITH_IMM (@ex the immediate) or _WITH_INV (the rkey),
 * and VRDMA_CQE_SOLICITED
 */
static void vrdma_resp_recv_cqe(struct vrdma_rc_conn *rc,
				const struct vrdma_rqe *rqe,
				enum ib_wc_opcode opcode,
				enum ib_wc_status status, u32 len, u32 cflags,
				u32 ex)
{
	struct vrdma_qp *qp = rc->qp;
	struct vrdma_cqe cqe = {};

	cqe.wr_id = rqe->wr_id;
	cqe.opcode = opcode;
	cqe.status = status;
	cqe.byte_len = len;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = rc->dest_qpn;
	if (cflags && status == IB_WC_SUCCESS) {
		cqe.flags = cflags;
		cqe.ex = ex;
	}
	vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
}

/* The QP is quiesced: SRQ WQEs taken for messages that never complete. */
void vrdma_resp_flush_srq(struct vrdma_rc_conn *rc)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	struct vrdma_qp *qp = rc->qp;

	while (qp->ibqp.srq && (s32)(resp->srq_taken - resp->ssn_done) > 0) {
		struct vrdma_cqe cqe = {};

		cqe.wr_id = resp->srq_rqe[resp->ssn_done % VRDMA_RC_MSGS].wr_id;
		cqe.opcode = IB_WC_RECV;
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.qp_num = qp->ibqp.qp_num;
		vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
		resp->ssn_done++;
	}
}

/* ---- per-opcode steps ---------------------------------------------------------- */

/*
 * The SGEs of a receive WQE that a @len-byte message fills: each one's
 * lkey must grant local write over it (the check the placement repeats),
 * before the message is accepted, so that the sender hears of a failure.
 */
static bool vrdma_resp_rqe_keys_ok(struct vrdma_rc_conn *rc,
				   const struct vrdma_rqe *rqe, u64 len)
{
	u32 i;

	for (i = 0; i < rqe->num_sge && len; i++) {
		u32 n = min_t(u64, len, rqe->sge[i].length);

		if (n && !vrdma_mr_check(rc->qp, rqe->sge[i].lkey,
					 IB_ACCESS_LOCAL_WRITE,
					 rqe->sge[i].addr, n))
			return false;
		len -= n;
	}
	return true;
}

/*
 * A receive WQE the message cannot use completes with @status and the QP
 * fails; the sender gets a NACK (invalid request for a length error,
 * remote operational error for a protection error). When the WQE is the
 * next one in order it completes here; one behind incomplete messages is
 * flushed (RQ ring, or the SRQ WQEs taken ahead).
 */
static enum vt_nack_code vrdma_resp_rqe_fail(struct vrdma_rc_conn *rc,
					     struct vrdma_rmsg *rm, u32 ssn,
					     enum ib_wc_status status)
{
	vrdma_rc_fail(rc, status);
	if (ssn == rc->resp.ssn_done) {
		vrdma_resp_release_rqe(rc);
		vrdma_resp_recv_cqe(rc, &rm->rqe, IB_WC_RECV, status, 0, 0, 0);
	}
	return status == IB_WC_LOC_PROT_ERR ? VT_NACK_REM_OP : VT_NACK_INV_REQ;
}

static enum vt_nack_code vrdma_resp_send_first(struct vrdma_rc_conn *rc,
					       const struct vt_data_hdr *h,
					       struct vrdma_rmsg *rm,
					       const struct sk_buff *skb)
{
	u32 ssn = (u32)h->va;

	if (h->flags & VT_F_INV) {
		/* IBA 9.4.1.4.1: only an FRMR of our PD is invalidated */
		if (!vrdma_mr_can_invalidate(rc->qp, h->rkey))
			return VT_NACK_INV_REQ;
		rm->with_inv = true;
		rm->rkey = h->rkey;
	}
	if (!vrdma_resp_take_rqe(rc, ssn, &rm->rqe))
		return VT_NACK_RNR;
	rm->has_rqe = true;
	if (rm->rqe.num_sge > VRDMA_MAX_SGE ||
	    h->msg_len > vrdma_sge_total(rm->rqe.sge, rm->rqe.num_sge))
		/* IBA 9.7.5.2.4 */
		return vrdma_resp_rqe_fail(rc, rm, ssn, IB_WC_LOC_LEN_ERR);
	if (!vrdma_resp_rqe_keys_ok(rc, &rm->rqe, h->msg_len))
		/* IBA 9.7.5.2.4: a local protection error, NAKed as such */
		return vrdma_resp_rqe_fail(rc, rm, ssn, IB_WC_LOC_PROT_ERR);
	return VT_NACK_NONE;
}

static enum vt_nack_code vrdma_resp_write_first(struct vrdma_rc_conn *rc,
						const struct vt_data_hdr *h,
						struct vrdma_rmsg *rm,
						const struct sk_buff *skb)
{
	if (!(rc->qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return VT_NACK_REM_ACCESS;
	return VT_NACK_NONE;
}

/* READs and atomics share one max_dest_rd_atomic budget. */
static enum vt_nack_code vrdma_resp_rd_budget(struct vrdma_rc_conn *rc,
					      const struct vt_data_hdr *h,
					      struct vrdma_rmsg *rm)
{
	if (rc->resp.rd_in >= VRDMA_RC_READS)
		return VT_NACK_INV_REQ;	/* beyond max_dest_rd_atomic */
	rc->resp.rd_in++;
	rm->rkey = h->rkey;
	rm->va = h->va;
	return VT_NACK_NONE;
}

static enum vt_nack_code vrdma_resp_read_first(struct vrdma_rc_conn *rc,
					       const struct vt_data_hdr *h,
					       struct vrdma_rmsg *rm,
					       const struct sk_buff *skb)
{
	if (!(rc->qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ) ||
	    !vrdma_mr_check(rc->qp, h->rkey, IB_ACCESS_REMOTE_READ, h->va,
			    h->msg_len))
		return VT_NACK_REM_ACCESS;
	return vrdma_resp_rd_budget(rc, h, rm);
}

static enum vt_nack_code vrdma_resp_atomic_first(struct vrdma_rc_conn *rc,
						 const struct vt_data_hdr *h,
						 struct vrdma_rmsg *rm,
						 const struct sk_buff *skb)
{
	u8 buf[VT_ATOMIC_REQ_LEN];
	const void *p;

	if (!(rc->qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC))
		return VT_NACK_REM_ACCESS;
	p = skb_header_pointer(skb, vrdma_rx_payload(skb), sizeof(buf), buf);
	/* rxe: a misaligned address is an invalid request */
	if (!p || vt_atomic_decode(p, h->payload_len, &rm->atomic) < 0 ||
	    (h->va & 7))
		return VT_NACK_INV_REQ;
	if (!vrdma_mr_check(rc->qp, h->rkey, IB_ACCESS_REMOTE_ATOMIC, h->va, 8))
		return VT_NACK_REM_ACCESS;
	return vrdma_resp_rd_budget(rc, h, rm);
}

static enum ib_wc_status vrdma_resp_send_place(struct vrdma_rc_conn *rc,
					       const struct vt_data_hdr *h,
					       struct vrdma_rmsg *rm,
					       struct vrdma_mr *mr,
					       const struct sk_buff *skb)
{
	struct vrdma_buf b = VRDMA_SKB_BUF(skb, vrdma_rx_payload(skb));

	return vrdma_sge_copy(rc->qp, rm->rqe.sge, rm->rqe.num_sge,
			      h->msg_off, &b, h->payload_len, true);
}

static enum ib_wc_status vrdma_resp_write_place(struct vrdma_rc_conn *rc,
						const struct vt_data_hdr *h,
						struct vrdma_rmsg *rm,
						struct vrdma_mr *mr,
						const struct sk_buff *skb)
{
	struct vrdma_buf b = VRDMA_SKB_BUF(skb, vrdma_rx_payload(skb));

	if (!mr || vrdma_mr_write(mr, h->va + h->msg_off, &b, h->payload_len))
		return IB_WC_REM_ACCESS_ERR;
	return IB_WC_SUCCESS;
}

/* The sender asked for a solicited event (IBA 11.4.2.2). */
static u32 vrdma_resp_se(const struct vrdma_rmsg *rm)
{
	return rm->se ? VRDMA_CQE_SOLICITED : 0;
}

static void vrdma_resp_send_done(struct vrdma_rc_conn *rc,
				 struct vrdma_rmsg *rm)
{
	/* the slot goes back before the CQE is visible */
	vrdma_resp_release_rqe(rc);
	if (rm->with_inv && !rm->status &&
	    vrdma_mr_invalidate(rc->qp, rm->rkey))
		rm->status = IB_WC_REM_INV_REQ_ERR;
	vrdma_resp_recv_cqe(rc, &rm->rqe, IB_WC_RECV, rm->status, rm->len,
			    vrdma_resp_se(rm) |
			    (rm->with_imm ? VRDMA_CQE_WITH_IMM :
			     rm->with_inv ? VRDMA_CQE_WITH_INV : 0),
			    rm->with_imm ? rm->imm : rm->rkey);
}

static void vrdma_resp_write_done(struct vrdma_rc_conn *rc,
				  struct vrdma_rmsg *rm)
{
	struct vrdma_rqe rqe;

	if (!rm->with_imm)
		return;
	/* the next receive WQE in order: its ssn is ssn_done */
	if (!vrdma_resp_take_rqe(rc, rc->resp.ssn_done, &rqe)) {
		vrdma_rc_fail(rc, IB_WC_LOC_QP_OP_ERR);
		return;
	}
	vrdma_resp_release_rqe(rc);
	vrdma_resp_recv_cqe(rc, &rqe, IB_WC_RECV_RDMA_WITH_IMM, rm->status,
			    rm->len, vrdma_resp_se(rm) | VRDMA_CQE_WITH_IMM,
			    rm->imm);
}

/* A response for the requester to send, in message order. */
static struct vrdma_tmsg *vrdma_resp_owe(struct vrdma_rc_conn *rc,
					 struct vrdma_rmsg *rm,
					 enum vrdma_tmsg_kind kind, u32 len)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	struct vrdma_tmsg *q = &resp->rdq[resp->rdq_tail % VRDMA_RC_READS];

	q->kind = kind;
	q->len = len;
	q->req_msg_id = rm->msg_id;
	resp->rdq_tail++;
	return q;
}

static void vrdma_resp_read_done(struct vrdma_rc_conn *rc,
				 struct vrdma_rmsg *rm)
{
	struct vrdma_tmsg *q = vrdma_resp_owe(rc, rm, VRDMA_TMSG_READ_RESP,
					      rm->len);

	q->rkey = rm->rkey;
	q->va = rm->va;
}

/*
 * Executed here, once: the message completes once, in order (a
 * retransmitted request is a duplicate PSN and never gets this far), and
 * its response is a reliable message itself.
 */
static void vrdma_resp_atomic_done(struct vrdma_rc_conn *rc,
				   struct vrdma_rmsg *rm)
{
	u64 orig = 0;

	if (vrdma_mr_atomic(rc->qp, rm->rkey, rm->va, &rm->atomic, &orig)) {
		/* the MR went away after the request was accepted */
		vrdma_rc_fail(rc, IB_WC_REM_ACCESS_ERR);
		return;
	}
	vrdma_resp_owe(rc, rm, VRDMA_TMSG_ATOMIC_RESP,
		       VT_ATOMIC_RESP_LEN)->orig = orig;
}

/* What each wire opcode does at the steps of the chain. */
struct vrdma_resp_op {
	/* first packet: bind the message, or the NACK that refuses it */
	enum vt_nack_code (*first)(struct vrdma_rc_conn *rc,
				   const struct vt_data_hdr *h,
				   struct vrdma_rmsg *rm,
				   const struct sk_buff *skb);
	/*
	 * each accepted packet with payload (NULL: nothing to place); @mr:
	 * the MR the chain found for a WRITE's range, under the caller's RCU
	 */
	enum ib_wc_status (*place)(struct vrdma_rc_conn *rc,
				   const struct vt_data_hdr *h,
				   struct vrdma_rmsg *rm, struct vrdma_mr *mr,
				   const struct sk_buff *skb);
	/* the message is complete and every one before it too */
	void (*done)(struct vrdma_rc_conn *rc, struct vrdma_rmsg *rm);
};

static const struct vrdma_resp_op vrdma_resp_ops[] = {
	[VT_OP_SEND] = { vrdma_resp_send_first, vrdma_resp_send_place,
			 vrdma_resp_send_done },
	[VT_OP_WRITE] = { vrdma_resp_write_first, vrdma_resp_write_place,
			  vrdma_resp_write_done },
	[VT_OP_READ_REQ] = { vrdma_resp_read_first, NULL,
			     vrdma_resp_read_done },
	[VT_OP_ATOMIC_REQ] = { vrdma_resp_atomic_first, NULL,
			       vrdma_resp_atomic_done },
	[VT_OP_READ_RESP] = { vrdma_req_resp_first, vrdma_req_resp_place,
			      vrdma_req_resp_done },
	[VT_OP_ATOMIC_RESP] = { vrdma_req_resp_first, vrdma_req_resp_place,
				vrdma_req_resp_done },
};

static const struct vrdma_resp_op *vrdma_resp_op(u8 opcode)
{
	if (opcode >= ARRAY_SIZE(vrdma_resp_ops) ||
	    !vrdma_resp_ops[opcode].first)
		return NULL;	/* VT_OP_UD_SEND, ACKs: not an RC message */
	return &vrdma_resp_ops[opcode];
}

/* ---- the check chain ------------------------------------------------------------ */

/* The message's slot: within the window and not held by another one. */
static enum vt_nack_code vrdma_resp_check_msg(struct vrdma_rc_conn *rc,
					      const struct vt_data_hdr *h,
					      struct vrdma_rmsg **rmp)
{
	struct vrdma_rmsg *rm = &rc->resp.rmsg[h->msg_id % VRDMA_RC_MSGS];

	if (h->msg_id - rc->resp.msg_next >= VRDMA_RC_MSGS ||
	    (rm->valid && rm->msg_id != h->msg_id))
		return VT_NACK_INV_REQ;
	*rmp = rm;
	return VT_NACK_NONE;
}

/*
 * The first packet of a message to arrive (in any order) binds it with
 * its opcode's checks; a later one must carry the same opcode.
 */
static enum vt_nack_code vrdma_resp_check_op(struct vrdma_rc_conn *rc,
					     const struct vt_data_hdr *h,
					     struct vrdma_rmsg *rm,
					     const struct sk_buff *skb)
{
	const struct vrdma_resp_op *op = vrdma_resp_op(h->opcode);
	enum vt_nack_code nack;

	if (!op)
		return VT_NACK_INV_REQ;
	if (rm->valid)
		return rm->op == h->opcode ? VT_NACK_NONE : VT_NACK_INV_REQ;
	memset(rm, 0, sizeof(*rm));
	rm->msg_id = h->msg_id;
	rm->op = h->opcode;
	rm->len = h->msg_len;
	rm->with_imm = !!(h->flags & VT_F_IMM);
	rm->imm = h->imm;
	nack = op->first(rc, h, rm, skb);
	rm->valid = nack == VT_NACK_NONE;
	return nack;
}

/*
 * WRITE: every packet's own range must lie in the MR, which *@mrp then
 * holds for the placement (caller holds RCU from here to there; the
 * key is looked up once per run, vrdma_mr_lookup()'s hint). A zero-length
 * WRITE needs no rkey (IBA C9-88): UCX flushes an RC QP with one, rkey 0.
 */
static enum vt_nack_code vrdma_resp_check_rkey(struct vrdma_rc_conn *rc,
					       const struct vt_data_hdr *h,
					       struct vrdma_mr **mrp)
{
	if (h->opcode != VT_OP_WRITE || !h->msg_len)
		return VT_NACK_NONE;
	*mrp = vrdma_mr_lookup(rc->qp, h->rkey, IB_ACCESS_REMOTE_WRITE,
			       h->va + h->msg_off, h->payload_len,
			       &rc->resp.mr_hint);
	return *mrp ? VT_NACK_NONE : VT_NACK_REM_ACCESS;
}

/*
 * The chain for a packet the core has not seen; @rmp: its message, @mrp:
 * a WRITE's MR. Caller holds RCU.
 */
static enum vt_nack_code vrdma_resp_check(struct vrdma_rc_conn *rc,
					  const struct vt_data_hdr *h,
					  const struct sk_buff *skb,
					  struct vrdma_rmsg **rmp,
					  struct vrdma_mr **mrp)
{
	enum vt_nack_code nack;

	nack = vrdma_resp_check_msg(rc, h, rmp);
	if (!nack)
		nack = vrdma_resp_check_op(rc, h, *rmp, skb);
	if (!nack)
		nack = vrdma_resp_check_rkey(rc, h, mrp);
	return nack;
}

/* An accepted packet: its payload goes where it belongs. Caller holds RCU. */
static void vrdma_resp_execute(struct vrdma_rc_conn *rc,
			       const struct vt_data_hdr *h,
			       struct vrdma_rmsg *rm, struct vrdma_mr *mr,
			       const struct sk_buff *skb)
{
	const struct vrdma_resp_op *op = vrdma_resp_op(rm->op);
	enum ib_wc_status st;

	/* only on the last packet, which may arrive first */
	if (h->flags & VT_F_SE)
		rm->se = true;
	if (!h->payload_len || !op->place)
		return;
	st = op->place(rc, h, rm, mr, skb);
	if (st != IB_WC_SUCCESS && !rm->status)
		rm->status = st;
}

/* @n more messages are complete, in order. */
static void vrdma_resp_complete(struct vrdma_rc_conn *rc, u32 n)
{
	struct vrdma_rc_resp *resp = &rc->resp;

	for (; n; n--, resp->msg_next++) {
		struct vrdma_rmsg *rm = &resp->rmsg[resp->msg_next %
						    VRDMA_RC_MSGS];

		if (!rm->valid || rm->msg_id != resp->msg_next)
			continue;
		vrdma_resp_op(rm->op)->done(rc, rm);
		rm->valid = false;
	}
}

static bool vrdma_resp_ce(struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return INET_ECN_is_ce(ip_hdr(skb)->tos);
	if (skb->protocol == htons(ETH_P_IPV6))
		return INET_ECN_is_ce(ipv6_get_dsfield(ipv6_hdr(skb)));
	return false;
}

/* A data packet of the connected peer. */
void vrdma_resp_rx_data(struct vrdma_rc_conn *rc, struct sk_buff *skb,
			const struct vt_data_hdr *h, u64 now)
{
	struct vrdma_rc_resp *resp = &rc->resp;
	enum vt_nack_code nack = VT_NACK_NONE;
	struct vrdma_rmsg *rm = NULL;
	struct vrdma_mr *mr = NULL;
	struct vt_rx_verdict v;

	lockdep_assert_held(&rc->lock);
	if (rc->req.resp_deadline)	/* peer alive */
		rc->req.resp_deadline = now + rc->req.resp_timeout_ns;
	if (resp->nack) {
		vrdma_resp_replay_nack(rc, h);
		return;
	}
	/* the peer's first message may start where we were never told */
	if (!h->msg_id && !h->msg_off && (h->flags & VT_F_SOM))
		vt_rx_adopt_psn(&rc->vt, h->psn);
	/*
	 * The run's RCU section (vrdma_rc_rx_conn()): the MR the check
	 * finds is the one placed into.
	 */
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "receive outside its run");
	if (vt_rx_is_new(&rc->vt, h->psn))
		nack = vrdma_resp_check(rc, h, skb, &rm, &mr);

	vt_rx_on_data(&rc->vt, now, h, vrdma_resp_ce(skb), nack, &v);
	/*
	 * A request we answered, sent again: its response (or the ACK in
	 * its skb) was lost. Resent now, not at the loss timers, which give
	 * a one-packet response's ACK twice the lazy delay (vrdma_rc_req.c,
	 * vrdma_req_take_reads()).
	 */
	if (v.result == VT_RX_DUP && (h->flags & VT_F_RETX) &&
	    (h->opcode == VT_OP_READ_REQ || h->opcode == VT_OP_ATOMIC_REQ))
		vt_tx_probe_now(&rc->vt, now);
	if (v.result == VT_RX_ACCEPT && rm && rm->valid)
		vrdma_resp_execute(rc, h, rm, mr, skb);
	vrdma_resp_complete(rc, v.msgs_done);
	/*
	 * An ACK for accepted data waits for the end of the run (the core
	 * keeps it due; vrdma_rc_rx_flush() sends it): it would not leave
	 * before the unlock there anyway, and built then it acknowledges
	 * the whole run with a hold time that covers its placement.
	 * Duplicates, NACKs and drops answer at once, as the packet found.
	 */
	if (v.ack_now && v.result != VT_RX_ACCEPT)
		vrdma_resp_send_ack(rc, now);
	if (v.result == VT_RX_NACKED &&
	    (nack == VT_NACK_REM_ACCESS || nack == VT_NACK_INV_REQ ||
	     nack == VT_NACK_REM_OP)) {
		/* in order (the core defers it otherwise): the QP fails */
		resp->nack = nack;
		resp->nack_psn = h->psn;
		vrdma_resp_fail_check(rc);
	}
	/* READ responses and freed read slots: vrdma_rc_rx_flush() sends */
}
