// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_cq.c - completion queues.
 *
 * Every CQ, kernel or user, is a ring of struct vrdma_cqe followed by a
 * struct vrdma_cq_ctrl (uapi vrdma-abi.h). The transport produces CQEs
 * with vrdma_cq_push(); a user consumer polls the mapped ring without a
 * system call and arms the CQ by writing ctrl->notify, a kernel consumer
 * does the same through vrdma_poll_cq()/vrdma_req_notify_cq(). Also the
 * completion opcode of each send opcode (vrdma_sq_wc_opcode), for the
 * data paths and the flush.
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"

static int vrdma_cq_ring_alloc(struct vrdma_cq *cq, struct vrdma_ring *r,
			       u32 cqe, struct ib_udata *udata, u64 *key)
{
	int rv;

	rv = vrdma_ring_alloc(r, cqe, sizeof(struct vrdma_cqe),
			      sizeof(struct vrdma_cq_ctrl));
	if (rv)
		return rv;
	if (udata) {
		rv = vrdma_ring_mmap_key(r, udata, key);
		if (rv)
			vrdma_ring_free(r);
	}
	return rv;
}

int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibcq->device);
	struct vrdma_create_cq_resp resp = {};
	struct vrdma_create_cq_cmd cmd;
	struct vrdma_cq *cq = to_vcq(ibcq);
	int rv;

	rv = vrdma_udata_in_empty(udata, &cmd, sizeof(cmd));
	if (rv)
		return rv;
	if (udata && udata->outlen < offsetofend(typeof(resp), cq_size))
		return -EINVAL;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > vrdma_limits.max_cqe)
		return -EINVAL;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	rv = vrdma_take(&vd->n_cq, vrdma_limits.max_cq);
	if (rv)
		return rv;

	spin_lock_init(&cq->lock);
	cq->user = !!udata;
	rv = vrdma_cq_ring_alloc(cq, &cq->ring, attr->cqe, udata,
				 &resp.cq_key);
	if (rv)
		goto err_count;
	cq->ctrl = vrdma_ring_ctrl(&cq->ring);
	ibcq->cqe = cq->ring.num;

	if (udata) {
		resp.cq_id = 0;
		resp.num_cqe = cq->ring.num;
		resp.cq_size = cq->ring.size;
		rv = vrdma_udata_out(udata, &resp, sizeof(resp));
		if (rv)
			goto err_ring;
	}
	return 0;

err_ring:
	vrdma_ring_free(&cq->ring);
err_count:
	atomic_dec(&vd->n_cq);
	return rv;
}

int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrdma_cq *cq = to_vcq(ibcq);

	vrdma_ring_free(&cq->ring);
	atomic_dec(&vrdma_vdev(ibcq->device)->n_cq);
	return 0;
}

/*
 * Resize: a new ring; the unpolled CQEs, which form one run of VALID slots
 * ending at the producer index, move to its start, and the consumer
 * restarts at index 0 (the provider holds its CQ lock across the call).
 */
int vrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_resize_cq_resp resp = {};
	struct vrdma_ring new, old;
	struct vrdma_cq_ctrl *ctrl;
	u32 pending = 0, i, first;
	int rv;

	if (udata) {
		if (udata->inlen &&
		    !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EOPNOTSUPP;
		if (udata->outlen < offsetofend(typeof(resp), cq_size))
			return -EINVAL;
	}
	if (cqe < 1 || cqe > vrdma_limits.max_cqe)
		return -EINVAL;

	rv = vrdma_cq_ring_alloc(cq, &new, cqe, udata, &resp.cq_key);
	if (rv)
		return rv;

	spin_lock_irq(&cq->lock);
	/* count the unpolled run that ends at the producer index */
	while (pending < cq->ring.num) {
		struct vrdma_cqe *c = vrdma_ring_slot(&cq->ring,
						      cq->ring.prod - pending - 1);

		if (!(vrdma_slot_flags(c) & VRDMA_CQE_VALID))
			break;
		pending++;
	}
	if (pending > new.num) {
		spin_unlock_irq(&cq->lock);
		vrdma_ring_free(&new);
		return -EINVAL;	/* would lose completions */
	}
	first = cq->ring.prod - pending;
	for (i = 0; i < pending; i++)
		memcpy(vrdma_ring_slot(&new, i),
		       vrdma_ring_slot(&cq->ring, first + i),
		       sizeof(struct vrdma_cqe));
	new.prod = pending;
	new.cons = 0;
	ctrl = vrdma_ring_ctrl(&new);
	ctrl->notify = READ_ONCE(cq->ctrl->notify);
	old = cq->ring;
	cq->ring = new;
	cq->ctrl = ctrl;
	ibcq->cqe = cq->ring.num;
	spin_unlock_irq(&cq->lock);

	vrdma_ring_free(&old);

	if (udata) {
		resp.num_cqe = cq->ring.num;
		resp.cq_size = cq->ring.size;
		rv = vrdma_udata_out(udata, &resp, sizeof(resp));
	}
	return rv;
}

/*
 * Produce one completion. On overflow (the consumer did not keep up) the
 * CQE is lost, counted, and IB_EVENT_CQ_ERR raised: there is nothing a
 * producer could do about it, so nothing is returned.
 *
 * An armed CQ calls its completion handler: NEXT for any completion,
 * SOLICITED for one with VRDMA_CQE_SOLICITED (the message carried SE) or
 * one in error (IBA 11.4.2.2: an unsuccessful completion is reported
 * under solicited arming too).
 */
void vrdma_cq_push(struct vrdma_cq *cq, const struct vrdma_cqe *cqe)
{
	bool solicited = (cqe->flags & VRDMA_CQE_SOLICITED) ||
			 cqe->status != IB_WC_SUCCESS;
	struct vrdma_cqe *slot;
	unsigned long flags;
	u32 notify;

	spin_lock_irqsave(&cq->lock, flags);
	slot = vrdma_ring_slot(&cq->ring, cq->ring.prod);
	if (vrdma_slot_flags(slot) & VRDMA_CQE_VALID) {
		cq->overflows++;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return;
	}
	/* the slot is ours while VALID is clear: fill it, then publish */
	memcpy(slot, cqe, sizeof(*slot));
	slot->flags = 0;
	vrdma_slot_set(slot, cqe->flags | VRDMA_CQE_VALID);
	cq->ring.prod++;

	notify = READ_ONCE(cq->ctrl->notify);
	if ((notify & VRDMA_CQ_NOTIFY_NEXT) ||
	    ((notify & VRDMA_CQ_NOTIFY_SOLICITED) && solicited))
		WRITE_ONCE(cq->ctrl->notify, VRDMA_CQ_NOTIFY_NONE);
	else
		notify = 0;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/*
 * Remove the CQEs of QP @qpn from a kernel consumer's CQ: the QP went to
 * RESET or is being destroyed, and what it flushed must not be polled
 * after it (nor name a QPN that a new QP may take). The kept CQEs move
 * towards the newest end over the removed ones and the consumer index
 * advances; producer and kernel poll are both under cq->lock. A user
 * CQ's consumer index is the provider's, which does this itself.
 */
void vrdma_cq_clean(struct vrdma_cq *cq, u32 qpn)
{
	struct vrdma_ring *r = &cq->ring;
	unsigned long flags;
	u32 n, dst;

	if (cq->user)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	dst = r->prod;
	for (n = r->prod; n != r->cons;) {
		struct vrdma_cqe *src = vrdma_ring_slot(r, --n);

		if (src->qp_num == qpn)
			continue;
		if (--dst != n)
			memcpy(vrdma_ring_slot(r, dst), src, sizeof(*src));
	}
	for (n = r->cons; n != dst; n++)
		vrdma_slot_set(vrdma_ring_slot(r, n), 0);
	r->cons = dst;
	spin_unlock_irqrestore(&cq->lock, flags);
}

/* The completion opcode of a send WQE's opcode (enum vrdma_sq_opcode). */
enum ib_wc_opcode vrdma_sq_wc_opcode(u8 op)
{
	switch (op) {
	case VRDMA_OP_RDMA_WRITE:
	case VRDMA_OP_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case VRDMA_OP_RDMA_READ:
		return IB_WC_RDMA_READ;
	case VRDMA_OP_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case VRDMA_OP_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case VRDMA_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case VRDMA_OP_REG_MR:
		return IB_WC_REG_MR;
	case VRDMA_OP_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

static enum ib_wc_opcode vrdma_wc_opcode(u8 op)
{
	return (enum ib_wc_opcode)op;
}

/* Kernel consumers only: user CQs are polled from the mapped ring. */
int vrdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num; n++, wc++) {
		struct vrdma_cqe *c = vrdma_ring_slot(&cq->ring, cq->ring.cons);
		u32 cf = vrdma_slot_flags(c);
		struct vrdma_qp *qp;

		if (!(cf & VRDMA_CQE_VALID))
			break;
		memset(wc, 0, sizeof(*wc));
		wc->wr_id = c->wr_id;
		wc->status = c->status;
		wc->opcode = vrdma_wc_opcode(c->opcode);
		wc->byte_len = c->byte_len;
		wc->src_qp = c->src_qp;
		wc->pkey_index = c->pkey_index;
		wc->sl = c->sl;
		wc->port_num = 1;
		if (cf & VRDMA_CQE_WITH_IMM) {
			wc->wc_flags |= IB_WC_WITH_IMM;
			wc->ex.imm_data = (__force __be32)c->ex;
		} else if (cf & VRDMA_CQE_WITH_INV) {
			wc->wc_flags |= IB_WC_WITH_INVALIDATE;
			wc->ex.invalidate_rkey = c->ex;
		}
		if (cf & VRDMA_CQE_GRH)
			wc->wc_flags |= IB_WC_GRH;
		/* ib_init_ah_attr_from_wc finds a RoCEv2 GID with it */
		if ((cf & VRDMA_CQE_GRH) && c->network_hdr_type) {
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			wc->network_hdr_type = c->network_hdr_type;
		}
		qp = xa_load(&vd->qp_xa, c->qp_num);
		wc->qp = qp ? &qp->ibqp : NULL;
		vrdma_slot_set(c, 0);
		cq->ring.cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	unsigned long irqf;
	u32 want;
	int rv = 0;

	want = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		VRDMA_CQ_NOTIFY_SOLICITED :
		VRDMA_CQ_NOTIFY_SOLICITED | VRDMA_CQ_NOTIFY_NEXT;

	spin_lock_irqsave(&cq->lock, irqf);
	WRITE_ONCE(cq->ctrl->notify, want);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		struct vrdma_cqe *c = vrdma_ring_slot(&cq->ring, cq->ring.cons);

		rv = !!(vrdma_slot_flags(c) & VRDMA_CQE_VALID);
	}
	spin_unlock_irqrestore(&cq->lock, irqf);
	return rv;
}
