// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_srq.c - shared receive queues: a ring of struct vrdma_rqe like a
 * QP's RQ, plus the limit (IBA 10.2.9.6: armed by modify_srq, fires
 * IB_EVENT_SRQ_LIMIT_REACHED once when fewer WQEs than the limit remain,
 * then disarms); and the receive WQE routines both data paths (RC and
 * UD) take receive WQEs with, from a QP's RQ or its SRQ.
 */
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"

int vrdma_build_rqe(struct vrdma_rqe *rqe, const struct ib_recv_wr *wr,
		    u32 max_sge)
{
	int i;

	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	rqe->wr_id = wr->wr_id;
	rqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		rqe->sge[i].addr = wr->sg_list[i].addr;
		rqe->sge[i].length = wr->sg_list[i].length;
		rqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		     struct ib_udata *udata)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibsrq->device);
	struct vrdma_create_srq_resp resp = {};
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_create_srq_cmd cmd;
	int rv;

	rv = vrdma_udata_in_empty(udata, &cmd, sizeof(cmd));
	if (rv)
		return rv;
	if (udata && udata->outlen < offsetofend(typeof(resp), srq_size))
		return -EINVAL;
	if (attr->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->attr.max_wr || attr->attr.max_wr > vrdma_limits.max_qp_wr ||
	    attr->attr.max_sge > VRDMA_MAX_SGE ||
	    attr->attr.srq_limit > attr->attr.max_wr)
		return -EINVAL;

	rv = vrdma_take(&vd->n_srq, vrdma_limits.max_srq);
	if (rv)
		return rv;

	spin_lock_init(&srq->lock);
	srq->user = !!udata;
	rv = vrdma_ring_alloc(&srq->ring, attr->attr.max_wr,
			      sizeof(struct vrdma_rqe), 0);
	if (rv)
		goto err_count;
	srq->max_wr = srq->ring.num;
	srq->limit = attr->attr.srq_limit;
	attr->attr.max_wr = srq->ring.num;
	attr->attr.max_sge = VRDMA_MAX_SGE;

	if (udata) {
		rv = vrdma_ring_mmap_key(&srq->ring, udata, &resp.srq_key);
		if (rv)
			goto err_ring;
		resp.num_rqe = srq->ring.num;
		resp.srq_size = srq->ring.size;
		rv = vrdma_udata_out(udata, &resp, sizeof(resp));
		if (rv)
			goto err_ring;
	}
	return 0;

err_ring:
	vrdma_ring_free(&srq->ring);
err_count:
	atomic_dec(&vd->n_srq);
	return rv;
}

int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	vrdma_ring_free(&srq->ring);
	atomic_dec(&vrdma_vdev(ibsrq->device)->n_srq);
	return 0;
}

/* WQEs still queued, counted from the kernel consumer index. */
static u32 vrdma_srq_count(struct vrdma_srq *srq)
{
	u32 n;

	for (n = 0; n < srq->ring.num; n++) {
		u32 *f = vrdma_ring_slot(&srq->ring, srq->ring.cons + n);

		if (!(vrdma_slot_flags(f) & VRDMA_WQE_VALID))
			break;
	}
	return n;
}

int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	/* resizing a ring a process has mapped is not supported */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return -EINVAL;
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = attr->srq_limit;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	return 0;
}

int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = VRDMA_MAX_SGE;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

/*
 * Take the next receive WQE (data path). Fires the limit event when the
 * queue drops below an armed limit. Returns false when the SRQ is empty.
 */
bool vrdma_srq_take(struct vrdma_srq *srq, struct vrdma_rqe *out)
{
	struct vrdma_rqe *rqe;
	unsigned long flags;
	bool fire = false;

	spin_lock_irqsave(&srq->lock, flags);
	rqe = vrdma_ring_slot(&srq->ring, srq->ring.cons);
	if (!(vrdma_slot_flags(rqe) & VRDMA_WQE_VALID)) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return false;
	}
	memcpy(out, rqe, sizeof(*out));
	vrdma_slot_set(rqe, 0);
	srq->ring.cons++;
	if (srq->limit && vrdma_srq_count(srq) < srq->limit) {
		srq->limit = 0;
		fire = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (fire && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return true;
}

/*
 * Post a kernel consumer's receive WRs into @r, an RQ or SRQ ring, under
 * @lock (the ring's producer lock).
 */
int vrdma_ring_post_recv(struct vrdma_ring *r, spinlock_t *lock,
			 const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int rv = 0;

	spin_lock_irqsave(lock, flags);
	for (; wr; wr = wr->next) {
		struct vrdma_rqe *rqe = vrdma_ring_slot(r, r->prod);

		if (vrdma_slot_flags(rqe) & VRDMA_WQE_VALID) {
			rv = -ENOMEM;
			break;
		}
		rv = vrdma_build_rqe(rqe, wr, VRDMA_MAX_SGE);
		if (rv)
			break;
		vrdma_slot_set(rqe, VRDMA_WQE_VALID);
		r->prod++;
	}
	spin_unlock_irqrestore(lock, flags);
	if (rv)
		*bad_wr = wr;
	return rv;
}

/*
 * Copy the receive WQE @ahead slots past the RQ's consumer index (0: the
 * next one in order); with @take (only for the next one) also hand its
 * slot back, under the same lock hold, so a flush racing with us (the QP
 * entering ERR) never completes it a second time.
 */
static bool vrdma_rq_get(struct vrdma_qp *qp, u32 ahead,
			 struct vrdma_rqe *out, bool take)
{
	struct vrdma_ring *r = &qp->rq;
	unsigned long flags;
	bool ok = false;
	void *slot;

	if (ahead >= r->num)
		return false;
	spin_lock_irqsave(&qp->rq_lock, flags);
	slot = vrdma_ring_slot(r, r->cons + ahead);
	if (vrdma_slot_flags(slot) & VRDMA_WQE_VALID) {
		memcpy(out, slot, sizeof(*out));
		ok = true;
		if (take) {
			vrdma_slot_set(slot, 0);
			r->cons++;
		}
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return ok;
}

/* Copy the receive WQE @ahead slots past the next one, leaving it posted. */
bool vrdma_rq_peek(struct vrdma_qp *qp, u32 ahead, struct vrdma_rqe *out)
{
	return vrdma_rq_get(qp, ahead, out, false);
}

/*
 * Hand the RQ's oldest slot, peeked before, back to its producer (the RC
 * responder, which a flush never races: the QP is quiesced first).
 * Released before the completion is visible: a consumer that reposts as
 * soon as it sees the CQE must find the slot free (perftest's latency
 * tests post into one slot).
 */
void vrdma_rq_release(struct vrdma_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->rq_lock, flags);
	vrdma_slot_set(vrdma_ring_slot(&qp->rq, qp->rq.cons), 0);
	qp->rq.cons++;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/* Take the next receive WQE of @qp, from its SRQ or its RQ. */
bool vrdma_rq_take(struct vrdma_qp *qp, struct vrdma_rqe *out)
{
	if (qp->ibqp.srq)
		return vrdma_srq_take(to_vsrq(qp->ibqp.srq), out);
	return vrdma_rq_get(qp, 0, out, true);
}

int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	if (srq->user) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return vrdma_ring_post_recv(&srq->ring, &srq->lock, wr, bad_wr);
}
