// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_qp.c - queue pairs: creation, the state machine, WQE posting.
 *
 * SQ and RQ are rings of struct vrdma_sqe / struct vrdma_rqe (uapi
 * vrdma-abi.h), mapped by user processes; kernel consumers post through
 * vrdma_post_send()/vrdma_post_recv(), which fill the same rings. The
 * transport (data path) consumes them; this file only queues WQEs and
 * flushes them when the QP enters the error state (IBA 10.3.1).
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"
#include "vrdma_ud.h"
#include "vrdma_uc.h"
#include "rdma/vrdma_wqe.h"

static const char * const vrdma_qp_state_name[] = {
	[IB_QPS_RESET] = "RESET",
	[IB_QPS_INIT] = "INIT",
	[IB_QPS_RTR] = "RTR",
	[IB_QPS_RTS] = "RTS",
	[IB_QPS_SQD] = "SQD",
	[IB_QPS_SQE] = "SQE",
	[IB_QPS_ERR] = "ERR",
};

static int vrdma_qp_check_cap(struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (cap->max_send_wr > vrdma_limits.max_qp_wr ||
	    cap->max_send_sge > VRDMA_MAX_SGE ||
	    cap->max_inline_data > VRDMA_MAX_INLINE)
		return -EINVAL;
	/* Verbs 11.2.4.1: RQ attributes are ignored with an SRQ */
	if (!attr->srq && (cap->max_recv_wr > vrdma_limits.max_qp_wr ||
			   cap->max_recv_sge > VRDMA_MAX_SGE))
		return -EINVAL;
	return 0;
}

int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		    struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibqp->device);
	struct vrdma_verbs_dev *vd = vdev->priv;
	struct vrdma_create_qp_resp resp = {};
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_create_qp_cmd cmd;
	u32 qpn;
	int rv;

	rv = vrdma_udata_in(udata, &cmd, sizeof(cmd), 0);
	if (rv)
		return rv;
	if ((cmd.comp_mask & ~VRDMA_CREATE_QP_CMD_SQ_TAKEN) ||
	    memchr_inv(cmd.reserved_20, 0, sizeof(cmd.reserved_20)))
		return -EOPNOTSUPP;
	if (udata && udata->outlen < offsetofend(typeof(resp), rq_size))
		return -EINVAL;

	switch (attr->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata || attr->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (attr->create_flags)
		return -EOPNOTSUPP;
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	rv = vrdma_qp_check_cap(attr);
	if (rv)
		return rv;

	rv = vrdma_take(&vd->n_qp, vrdma_limits.max_qp);
	if (rv)
		return rv;

	qp->vdev = vdev;
	qp->user = !!udata;
	qp->sq_mark_taken = !!(cmd.comp_mask & VRDMA_CREATE_QP_CMD_SQ_TAKEN);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = attr->sq_sig_type;
	mutex_init(&qp->state_lock);
	mutex_init(&qp->uc_tx_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);

	rv = vrdma_ring_alloc(&qp->sq, attr->cap.max_send_wr,
			      sizeof(struct vrdma_sqe), 0);
	if (rv)
		goto err_count;
	if (!attr->srq) {
		rv = vrdma_ring_alloc(&qp->rq, attr->cap.max_recv_wr,
				      sizeof(struct vrdma_rqe),
				      sizeof(struct vrdma_rq_ctrl));
		if (rv)
			goto err_sq;
	}

	if (attr->qp_type == IB_QPT_GSI) {
		qpn = 1;
		rv = xa_insert_irq(&vd->qp_xa, qpn, qp, GFP_KERNEL);
	} else {
		rv = xa_alloc_cyclic_irq(&vd->qp_xa, &qpn, qp,
					 XA_LIMIT(VRDMA_QPN_MIN, VRDMA_QPN_MAX),
					 &vd->next_qpn, GFP_KERNEL);
		if (rv > 0)
			rv = 0;
	}
	if (rv)
		goto err_rq;
	ibqp->qp_num = qpn;
	if (vrdma_qp_ud_tx(qp))
		vrdma_ud_create(qp);

	/* report what we really provide */
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_send_sge = VRDMA_MAX_SGE;
	attr->cap.max_inline_data = VRDMA_MAX_INLINE;
	if (!attr->srq) {
		attr->cap.max_recv_wr = qp->rq.num;
		attr->cap.max_recv_sge = VRDMA_MAX_SGE;
	}
	qp->cap = attr->cap;

	if (udata) {
		rv = vrdma_ring_mmap_key(&qp->sq, udata, &resp.sq_key);
		if (rv)
			goto err_xa;
		resp.rq_key = VRDMA_INVAL_MMAP_KEY;
		if (!attr->srq) {
			rv = vrdma_ring_mmap_key(&qp->rq, udata, &resp.rq_key);
			if (rv)
				goto err_xa;
			resp.num_rqe = qp->rq.num;
			resp.rq_size = qp->rq.size;
			resp.comp_mask |= VRDMA_CREATE_QP_RESP_RQ_CTRL;
		}
		resp.qp_id = qpn;
		resp.num_sqe = qp->sq.num;
		resp.sq_size = qp->sq.size;
		rv = vrdma_udata_out(udata, &resp, sizeof(resp));
		if (rv)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_irq(&vd->qp_xa, qpn);
err_rq:
	vrdma_ring_free(&qp->rq);
err_sq:
	vrdma_ring_free(&qp->sq);
err_count:
	atomic_dec(&vd->n_qp);
	return rv;
}

/* RESET and destroy: the QP's CQEs leave its (kernel) CQs. */
static void vrdma_qp_clean_cqs(struct vrdma_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;

	vrdma_cq_clean(to_vcq(ibqp->recv_cq), ibqp->qp_num);
	if (ibqp->send_cq != ibqp->recv_cq)
		vrdma_cq_clean(to_vcq(ibqp->send_cq), ibqp->qp_num);
}

int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_verbs_dev *vd = qp->vdev->priv;

	xa_erase_irq(&vd->qp_xa, ibqp->qp_num);
	/*
	 * Receive paths look the QP up under RCU: wait for them before it
	 * is freed. The UD/UC and connected-RC teardowns wait themselves;
	 * an RC QP that never connected has no teardown to do it.
	 */
	if (vrdma_qp_ud_tx(qp))
		vrdma_ud_destroy(qp);
	else if (!READ_ONCE(qp->rc))
		synchronize_rcu_expedited();	/* as vrdma_rc_destroy() */
	vrdma_rc_destroy(qp);
	vrdma_uc_destroy(qp);
	vrdma_qp_clean_cqs(qp);
	vrdma_ring_free(&qp->rq);
	vrdma_ring_free(&qp->sq);
	atomic_dec(&vd->n_qp);
	return 0;
}

/*
 * Complete every queued WQE of @r with IB_WC_WR_FLUSH_ERR (IBA 10.8.3.3:
 * in the error state, outstanding and newly posted WRs are flushed).
 * Slots may be written by a user process concurrently: only wr_id and
 * opcode are read, and the opcode is mapped through a closed table.
 */
static void vrdma_flush_ring(struct vrdma_qp *qp, struct vrdma_ring *r,
			     bool sq, struct vrdma_cq *cq)
{
	u32 n;

	for (n = 0; n < r->num; n++) {
		void *slot = vrdma_ring_slot(r, r->cons);
		u32 *flags = slot;
		struct vrdma_cqe cqe = {};

		if (!(vrdma_slot_flags(flags) & VRDMA_WQE_VALID))
			break;
		if (sq) {
			struct vrdma_sqe *s = slot;

			cqe.wr_id = READ_ONCE(s->wr_id);
			cqe.opcode = vrdma_sq_wc_opcode(READ_ONCE(s->opcode));
		} else {
			struct vrdma_rqe *q = slot;

			cqe.wr_id = READ_ONCE(q->wr_id);
			cqe.opcode = IB_WC_RECV;
		}
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.qp_num = qp->ibqp.qp_num;
		/* a full CQ loses the flush CQE; the CQ reports CQ_ERR */
		vrdma_cq_push(cq, &cqe);
		vrdma_slot_set(flags, 0);
		r->cons++;
	}
}

static void vrdma_qp_flush(struct vrdma_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	vrdma_flush_ring(qp, &qp->sq, true, to_vcq(qp->ibqp.send_cq));
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (qp->ibqp.srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	vrdma_flush_ring(qp, &qp->rq, false, to_vcq(qp->ibqp.recv_cq));
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/*
 * Every state change goes through here: the provider reads the state from
 * the RQ ring's vrdma_rq_ctrl (uapi) to learn that a receive it posted
 * needs a doorbell. The barrier orders the store before the flush that
 * follows a change to ERR, against the provider's post-fence-read.
 */
static void vrdma_qp_set_state(struct vrdma_qp *qp, enum ib_qp_state state)
{
	qp->state = state;
	if (qp->rq.buf) {
		struct vrdma_rq_ctrl *ctrl = vrdma_ring_ctrl(&qp->rq);

		WRITE_ONCE(ctrl->qp_state, state);
		/* pairs with the provider's fence after posting RQEs */
		smp_mb();
	}
}

/* RESET drops queued WQEs without completions (IBA 10.3.1: "Reset"). */
static void vrdma_discard_ring(struct vrdma_ring *r, spinlock_t *lock)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(lock, flags);
	for (n = 0; n < r->num; n++) {
		u32 *f = vrdma_ring_slot(r, r->cons);

		if (!(vrdma_slot_flags(f) & VRDMA_WQE_VALID))
			break;
		vrdma_slot_set(f, 0);
		r->cons++;
	}
	spin_unlock_irqrestore(lock, flags);
}

/*
 * The data path failed the QP (retry exceeded, remote error, ...): enter
 * ERR and flush. Never blocks on state_lock: -EAGAIN asks to retry.
 */
static int vrdma_qp_set_error(struct vrdma_qp *qp)
{
	if (!mutex_trylock(&qp->state_lock))
		return -EAGAIN;
	if (qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET) {
		vrdma_qp_set_state(qp, IB_QPS_ERR);
		vrdma_rc_quiesce(qp);
		vrdma_qp_flush(qp);
	}
	mutex_unlock(&qp->state_lock);
	return 0;
}

/* Check every attribute of @mask; the state table is ib_modify_qp_is_ok. */
static int vrdma_check_qp_attr(struct vrdma_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != qp->state)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	/* LOCAL_WRITE is meaningless on a QP, but perftest sets it */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if (mask & IB_QP_AV) {
		struct rdma_ah_attr *ah = &attr->ah_attr;

		if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
		    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
		    rdma_ah_get_port_num(ah) != 1 ||
		    rdma_ah_read_grh(ah)->sgid_index >= VRDMA_GID_TBL_LEN)
			return -EINVAL;
	}
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && (attr->rq_psn & ~VRDMA_PSN_MASK))
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && (attr->sq_psn & ~VRDMA_PSN_MASK))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && (attr->dest_qp_num & ~VRDMA_QPN_MAX))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	/* no alternate path (APM), no QP resize, no rate limit */
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE | IB_QP_CAP |
		    IB_QP_RATE_LIMIT))
		return -EOPNOTSUPP;
	return 0;
}

/* The data path of a connected QP: connect at RTR, send from RTS. */
static int vrdma_qp_connect(struct vrdma_qp *qp, enum ib_qp_state cur,
			    enum ib_qp_state next)
{
	bool uc = vrdma_qp_is_uc(qp);

	if (next == IB_QPS_RTR)
		return uc ? vrdma_uc_connect(qp) :
			    vrdma_rc_connect(qp, vrdma_qp_set_error);
	if (next != IB_QPS_RTS || cur != IB_QPS_RTR)
		return 0;
	if (!uc)
		return vrdma_rc_start(qp);
	vrdma_uc_start(qp);
	return 0;
}

int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	enum ib_qp_state cur, next;
	int rv;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (next > IB_QPS_ERR ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		rv = -EINVAL;
		goto out;
	}
	rv = vrdma_check_qp_attr(qp, attr, mask);
	if (rv)
		goto out;

	if (mask & IB_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		qp->attr.ah_attr.grh.sgid_attr = NULL;	/* not referenced */
	}
	if (mask & IB_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;

	if (next != cur) {
		ibdev_dbg(ibqp->device, "qp %u: %s -> %s\n", ibqp->qp_num,
			  vrdma_qp_state_name[cur], vrdma_qp_state_name[next]);
		rv = vrdma_qp_connect(qp, cur, next);
		if (rv)
			goto out;
		vrdma_qp_set_state(qp, next);
		/* a UD/UC doorbell rung before RTS left its WQEs queued */
		if (next == IB_QPS_RTS && vrdma_qp_ud_tx(qp))
			vrdma_ud_kick(qp);
		if (next == IB_QPS_ERR) {
			vrdma_rc_quiesce(qp);
			vrdma_uc_quiesce(qp);
			vrdma_qp_flush(qp);
		} else if (next == IB_QPS_RESET) {
			vrdma_rc_destroy(qp);
			vrdma_uc_destroy(qp);
			vrdma_discard_ring(&qp->sq, &qp->sq_lock);
			if (!ibqp->srq)
				vrdma_discard_ring(&qp->rq, &qp->rq_lock);
			vrdma_qp_clean_cqs(qp);
			memset(&qp->attr, 0, sizeof(qp->attr));
		}
	}
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init_attr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	/* an error completion may be visible before the work moved the QP */
	if ((qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS) &&
	    vrdma_rc_failed(qp))
		attr->qp_state = IB_QPS_ERR;
	attr->cur_qp_state = attr->qp_state;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->cap = qp->cap;
	if (!attr->port_num)
		attr->port_num = 1;
	mutex_unlock(&qp->state_lock);

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->event_handler = ibqp->event_handler;
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->cap;
	init_attr->sq_sig_type = qp->sq_sig_type;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->port_num = 1;
	return 0;
}

/*
 * Fill @sqe from @wr for a kernel QP; the caller publishes it by setting
 * VRDMA_WQE_VALID (*flags). The shape of the result is checked by the same
 * vrdma_sqe_check() the provider runs and the data path runs again when it
 * takes the slot; what it refuses is -EINVAL here.
 */
static int vrdma_build_sqe(struct vrdma_qp *qp, struct vrdma_sqe *sqe,
			   const struct ib_send_wr *wr, u32 *flags)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	bool ud = type == IB_QPT_UD || type == IB_QPT_GSI;
	enum vrdma_sqe_qp service = ud ? VRDMA_SQE_QP_UD :
				    type == IB_QPT_UC ? VRDMA_SQE_QP_UC :
							VRDMA_SQE_QP_RC;
	u64 len;
	int i;

	if (wr->num_sge < 0)
		return -EINVAL;
	memset(sqe, 0, sizeof(*sqe));
	*flags = VRDMA_WQE_VALID;
	if ((wr->send_flags & IB_SEND_SIGNALED) ||
	    qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		*flags |= VRDMA_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		*flags |= VRDMA_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		*flags |= VRDMA_WQE_FENCE;
	sqe->wr_id = wr->wr_id;
	sqe->opcode = wr->opcode;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		if (wr->opcode == IB_WR_SEND_WITH_IMM)
			sqe->ex = (__force u32)wr->ex.imm_data;
		if (ud) {
			const struct ib_ud_wr *udw = ud_wr(wr);

			if (!udw->ah)
				return -EINVAL;
			sqe->ah = to_vah(udw->ah)->ah_num;
			sqe->remote_qpn = udw->remote_qpn;
			sqe->remote_qkey = udw->remote_qkey;
		}
		break;
	case IB_WR_SEND_WITH_INV:
		sqe->ex = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		sqe->ex = (__force u32)wr->ex.imm_data;
		fallthrough;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
		if (ud)
			break;	/* refused below; a UD WR has no rdma_wr */
		sqe->raddr = rdma_wr(wr)->remote_addr;
		sqe->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		if (ud)
			break;
		/* the remote word must be naturally aligned */
		if (atomic_wr(wr)->remote_addr & 7)
			return -EINVAL;
		sqe->raddr = atomic_wr(wr)->remote_addr;
		sqe->rkey = atomic_wr(wr)->rkey;
		sqe->compare_add = atomic_wr(wr)->compare_add;
		sqe->swap = atomic_wr(wr)->swap;
		break;
	case IB_WR_LOCAL_INV:
		sqe->ex = wr->ex.invalidate_rkey;
		goto check;
	case IB_WR_REG_MR:
		if (ud)
			break;
		/* kernel QP: the MR is a kernel pointer the data path owns */
		sqe->raddr = (u64)(uintptr_t)reg_wr(wr)->mr;
		sqe->rkey = reg_wr(wr)->key;
		sqe->ex = reg_wr(wr)->access;
		goto check;
	default:
		return -EINVAL;
	}

	/*
	 * Inline data is taken by value for the operations that send data;
	 * a READ or an atomic ignores IB_SEND_INLINE, as the provider does.
	 */
	if ((wr->send_flags & IB_SEND_INLINE) &&
	    wr->opcode != IB_WR_RDMA_READ &&
	    wr->opcode != IB_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IB_WR_ATOMIC_FETCH_AND_ADD) {
		u8 *dst = (u8 *)sqe->sge;
		u32 bytes = 0;

		for (i = 0; i < wr->num_sge; i++) {
			u32 l = wr->sg_list[i].length;

			/* keeps the copy inside sge[] */
			if (l > VRDMA_MAX_INLINE - bytes)
				return -EINVAL;
			memcpy(dst + bytes,
			       (void *)(uintptr_t)wr->sg_list[i].addr, l);
			bytes += l;
		}
		*flags |= VRDMA_WQE_INLINE;
		sqe->inline_len = bytes;
		goto check;
	}
	/* keeps the copy inside sge[] */
	if (wr->num_sge > VRDMA_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		sqe->sge[i].addr = wr->sg_list[i].addr;
		sqe->sge[i].length = wr->sg_list[i].length;
		sqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	sqe->num_sge = wr->num_sge;
check:
	if (vrdma_sqe_check(sqe, *flags, service, 1, &len) != VRDMA_SQE_OK)
		return -EINVAL;
	return 0;
}

/* New send WQEs: the data path of the QP's type takes them. */
static void vrdma_qp_kick(struct vrdma_qp *qp)
{
	if (vrdma_qp_ud_tx(qp))
		vrdma_ud_kick(qp);
	else
		vrdma_rc_kick(qp);
}

/*
 * Kernel QPs queue @wr into the SQ ring. For a user QP, a post_send with
 * no WR is the provider's doorbell: the SQ ring holds new WQEs.
 */
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	unsigned long flags;
	int rv = 0;

	if (qp->user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		qp->doorbells++;
		if (READ_ONCE(qp->state) == IB_QPS_ERR)
			vrdma_qp_flush(qp);
		else
			vrdma_qp_kick(qp);
		return 0;
	}
	if (READ_ONCE(qp->state) < IB_QPS_RTS &&
	    READ_ONCE(qp->state) != IB_QPS_ERR) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		struct vrdma_sqe *sqe = vrdma_ring_slot(&qp->sq, qp->sq.prod);
		u32 f;

		if (vrdma_slot_flags(sqe) & VRDMA_WQE_VALID) {
			rv = -ENOMEM;
			break;
		}
		rv = vrdma_build_sqe(qp, sqe, wr, &f);
		if (rv)
			break;
		vrdma_slot_set(sqe, f);
		qp->sq.prod++;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (rv)
		*bad_wr = wr;
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		vrdma_qp_flush(qp);
	else
		vrdma_qp_kick(qp);
	return rv;
}

int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int rv;

	if (qp->user || ibqp->srq || READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	rv = vrdma_ring_post_recv(&qp->rq, &qp->rq_lock, wr, bad_wr);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		vrdma_qp_flush(qp);
	return rv;
}
