// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrdma: rdma-core provider for the vrdma kernel driver.
 *
 * Shaped like providers/siw: every queue is allocated by the kernel and
 * mmapped here through the key it returns; slot ownership moves with a
 * release store of the slot's VALID bit and is observed with an acquire
 * load (see uapi vrdma-abi.h). Posting receives, polling and arming a CQ
 * take no system call; posting sends rings a doorbell only when the
 * kernel had finished everything posted before.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "vrdma.h"
#include "vrdma_abi_check.h"
#include "vrdma_wqe.h"

static void vrdma_free_context(struct ibv_context *ibctx);

static int vrdma_ring_map(struct vrdma_ring *r, struct ibv_context *ctx,
			  uint64_t key, uint64_t size, uint32_t num_slots,
			  uint32_t slot_size)
{
	if (key == VRDMA_INVAL_MMAP_KEY || !num_slots ||
	    size < (uint64_t)num_slots * slot_size)
		return -EINVAL;

	r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      ctx->cmd_fd, key);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->map_size = size;
	r->num_slots = num_slots;
	r->slot_size = slot_size;
	r->head = 0;
	return 0;
}

static void vrdma_ring_unmap(struct vrdma_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_size);
	r->map = NULL;
}

static int vrdma_query_device(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int vrdma_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *vrdma_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd = {};
	struct ibv_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	errno = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
	if (errno) {
		free(pd);
		return NULL;
	}
	return pd;
}

static int vrdma_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *vrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				   uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct vrdma_mr *mr;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;

	errno = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, &mr->vmr, &cmd,
			       sizeof(cmd), &resp, sizeof(resp));
	if (errno) {
		free(mr);
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

static int vrdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(to_vmr(vmr));
	return ret;
}

static struct ibv_cq *vrdma_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct vrdma_ucmd_create_cq_resp resp = {};
	struct vrdma_ucmd_create_cq cmd = {};
	struct vrdma_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	ret = -vrdma_ring_map(&cq->ring, ctx, resp.drv.cq_key, resp.drv.cq_size,
			     resp.drv.num_cqe, sizeof(struct vrdma_cqe));
	cq->ctrl = ret ? NULL : vrdma_ring_ctrl(&cq->ring,
						sizeof(*cq->ctrl));
	if (!cq->ctrl) {
		verbs_err(verbs_get_ctx(ctx), "libvrdma: CQ mapping failed\n");
		vrdma_ring_unmap(&cq->ring);
		ibv_cmd_destroy_cq(&cq->ibv_cq);
		free(cq);
		errno = ret ? ret : EINVAL;
		return NULL;
	}
	cq->cq_id = resp.drv.cq_id;
	pthread_spin_init(&cq->ring.lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->ibv_cq;
}

static int vrdma_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vrdma_ucmd_resize_cq_resp resp = {};
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct ibv_resize_cq cmd = {};
	struct vrdma_ring new_ring = {};
	int ret;

	pthread_spin_lock(&cq->ring.lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto out;
	/* The kernel moved every unpolled CQE to the start of a new ring. */
	ret = -vrdma_ring_map(&new_ring, ibcq->context, resp.drv.cq_key,
			     resp.drv.cq_size, resp.drv.num_cqe,
			     sizeof(struct vrdma_cqe));
	if (ret)
		goto out;
	if (!vrdma_ring_ctrl(&new_ring, sizeof(*cq->ctrl))) {
		vrdma_ring_unmap(&new_ring);
		ret = EINVAL;
		goto out;
	}
	vrdma_ring_unmap(&cq->ring);
	cq->ring.map = new_ring.map;
	cq->ring.map_size = new_ring.map_size;
	cq->ring.num_slots = new_ring.num_slots;
	cq->ring.head = 0;
	cq->ctrl = vrdma_ring_ctrl(&cq->ring, sizeof(*cq->ctrl));
out:
	pthread_spin_unlock(&cq->ring.lock);
	return ret;
}

static int vrdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	vrdma_ring_unmap(&cq->ring);
	pthread_spin_destroy(&cq->ring.lock);
	free(cq);
	return 0;
}

static int vrdma_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int n = 0;

	pthread_spin_lock(&cq->ring.lock);
	for (; n < num; n++, wc++) {
		struct vrdma_cqe *cqe = vrdma_ring_slot(&cq->ring,
							 cq->ring.head);
		uint32_t flags = vrdma_slot_flags(cqe);

		if (!(flags & VRDMA_CQE_VALID))
			break;

		wc->wr_id = cqe->wr_id;
		wc->status = cqe->status;
		wc->opcode = cqe->opcode;
		wc->vendor_err = 0;
		wc->byte_len = cqe->byte_len;
		wc->qp_num = cqe->qp_num;
		wc->src_qp = cqe->src_qp;
		wc->pkey_index = cqe->pkey_index;
		wc->slid = 0;
		wc->sl = cqe->sl;
		wc->dlid_path_bits = 0;
		wc->wc_flags = 0;
		wc->imm_data = 0;
		if (flags & VRDMA_CQE_WITH_IMM) {
			wc->wc_flags |= IBV_WC_WITH_IMM;
			wc->imm_data = cqe->ex;
		} else if (flags & VRDMA_CQE_WITH_INV) {
			wc->wc_flags |= IBV_WC_WITH_INV;
			wc->invalidated_rkey = cqe->ex;
		}
		if (flags & VRDMA_CQE_GRH)
			wc->wc_flags |= IBV_WC_GRH;

		/* hand the slot back to the kernel */
		vrdma_slot_set(cqe, 0);
		cq->ring.head++;
	}
	pthread_spin_unlock(&cq->ring.lock);
	return n;
}

static int vrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	uint32_t want = solicited_only ? VRDMA_CQ_NOTIFY_SOLICITED :
			VRDMA_CQ_NOTIFY_SOLICITED | VRDMA_CQ_NOTIFY_NEXT;

	atomic_store_explicit((_Atomic(uint32_t) *)&cq->ctrl->notify, want,
			      memory_order_release);
	return 0;
}

static struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct vrdma_ucmd_create_srq_resp resp = {};
	struct vrdma_ucmd_create_srq cmd = {};
	struct vrdma_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	ret = -vrdma_ring_map(&srq->ring, pd->context, resp.drv.srq_key,
			     resp.drv.srq_size, resp.drv.num_rqe,
			     sizeof(struct vrdma_rqe));
	if (ret) {
		verbs_err(verbs_get_ctx(pd->context),
			  "libvrdma: SRQ mapping failed\n");
		ibv_cmd_destroy_srq(&srq->ibv_srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	pthread_spin_init(&srq->ring.lock, PTHREAD_PROCESS_PRIVATE);
	return &srq->ibv_srq;
}

static int vrdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(srq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int vrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	vrdma_ring_unmap(&srq->ring);
	pthread_spin_destroy(&srq->ring.lock);
	free(srq);
	return 0;
}

static struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct vrdma_ucmd_create_qp_resp resp = {};
	struct vrdma_ucmd_create_qp cmd = {};
	struct ibv_context *ctx = pd->context;
	struct vrdma_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp->qp_id = resp.drv.qp_id;
	qp->sq_sig_all = attr->sq_sig_all;

	ret = -vrdma_ring_map(&qp->sq, ctx, resp.drv.sq_key, resp.drv.sq_size,
			     resp.drv.num_sqe, sizeof(struct vrdma_sqe));
	if (ret)
		goto err;
	if (attr->srq) {
		qp->srq = to_vsrq(attr->srq);
	} else {
		ret = -vrdma_ring_map(&qp->rq, ctx, resp.drv.rq_key,
				     resp.drv.rq_size, resp.drv.num_rqe,
				     sizeof(struct vrdma_rqe));
		if (ret)
			goto err;
		if (resp.drv.comp_mask & VRDMA_CREATE_QP_RESP_RQ_CTRL)
			qp->rq_ctrl = vrdma_ring_ctrl(&qp->rq,
						      sizeof(*qp->rq_ctrl));
	}
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);

	qp->db_req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	qp->db_req.hdr.in_words = sizeof(qp->db_req) / 4;
	qp->db_req.hdr.out_words = sizeof(qp->db_resp) / 4;
	qp->db_req.response = (uintptr_t)&qp->db_resp;
	qp->db_req.qp_handle = qp->ibv_qp.handle;
	qp->db_req.wqe_size = sizeof(struct ibv_send_wr);

	/* report the real ring sizes back like the kernel does */
	attr->cap.max_send_wr = resp.drv.num_sqe;
	if (!attr->srq)
		attr->cap.max_recv_wr = resp.drv.num_rqe;
	return &qp->ibv_qp;
err:
	verbs_err(verbs_get_ctx(ctx), "libvrdma: QP mapping failed\n");
	vrdma_ring_unmap(&qp->sq);
	vrdma_ring_unmap(&qp->rq);
	ibv_cmd_destroy_qp(&qp->ibv_qp);
	free(qp);
	errno = ret;
	return NULL;
}

static int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int vrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	vrdma_ring_unmap(&qp->sq);
	vrdma_ring_unmap(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}

/* The SQE opcode of @op; the QP type is vrdma_sqe_check()'s to judge. */
static int vrdma_sq_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return VRDMA_OP_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return VRDMA_OP_SEND_WITH_IMM;
	case IBV_WR_RDMA_WRITE:
		return VRDMA_OP_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return VRDMA_OP_RDMA_WRITE_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return VRDMA_OP_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return VRDMA_OP_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return VRDMA_OP_ATOMIC_FETCH_AND_ADD;
	case IBV_WR_SEND_WITH_INV:
		return VRDMA_OP_SEND_WITH_INV;
	case IBV_WR_LOCAL_INV:
		return VRDMA_OP_LOCAL_INV;
	default:
		return -1;
	}
}

/* Fill one SQE; the caller publishes it by setting VRDMA_WQE_VALID. */
static int vrdma_build_sqe(struct vrdma_qp *qp, struct ibv_send_wr *wr,
			   struct vrdma_sqe *sqe, uint32_t *flags)
{
	struct vrdma_context *ctx = to_vctx(qp->ibv_qp.context);
	int ud = qp->ibv_qp.qp_type == IBV_QPT_UD;
	int op = vrdma_sq_opcode(wr->opcode);
	__u64 len;	/* vrdma_sqe_check() speaks uapi types */
	int i;

	if (op < 0 || wr->num_sge < 0)
		return -EINVAL;

	*flags = VRDMA_WQE_VALID;
	if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		*flags |= VRDMA_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		*flags |= VRDMA_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		*flags |= VRDMA_WQE_FENCE;

	sqe->opcode = op;
	sqe->wr_id = wr->wr_id;
	sqe->num_sge = 0;
	sqe->raddr = 0;
	sqe->rkey = 0;
	sqe->ex = 0;
	sqe->compare_add = 0;
	sqe->swap = 0;
	sqe->ah = 0;
	sqe->remote_qpn = 0;
	sqe->remote_qkey = 0;
	sqe->inline_len = 0;

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		sqe->ex = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		sqe->ex = wr->invalidate_rkey;
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		sqe->raddr = wr->wr.rdma.remote_addr;
		sqe->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* the remote word must be naturally aligned */
		if (wr->wr.atomic.remote_addr & 7)
			return -EINVAL;
		sqe->raddr = wr->wr.atomic.remote_addr;
		sqe->rkey = wr->wr.atomic.rkey;
		sqe->compare_add = wr->wr.atomic.compare_add;
		sqe->swap = wr->wr.atomic.swap;
		break;
	default:
		break;
	}
	/* only a SEND has a UD address: elsewhere wr.ud aliases wr.rdma */
	if (ud && (wr->opcode == IBV_WR_SEND ||
		   wr->opcode == IBV_WR_SEND_WITH_IMM)) {
		if (!wr->wr.ud.ah)
			return -EINVAL;
		sqe->ah = to_vah(wr->wr.ud.ah)->ah_num;
		sqe->remote_qpn = wr->wr.ud.remote_qpn;
		sqe->remote_qkey = wr->wr.ud.remote_qkey;
	}

	if (wr->send_flags & IBV_SEND_INLINE &&
	    wr->opcode != IBV_WR_RDMA_READ &&
	    wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
		uint8_t *dst = (uint8_t *)sqe->sge;
		uint32_t bytes = 0;

		for (i = 0; i < wr->num_sge; i++) {
			uint32_t l = wr->sg_list[i].length;

			/* keeps the copy inside sge[] */
			if (l > ctx->max_inline - bytes)
				return -EINVAL;
			memcpy(dst + bytes,
			       (void *)(uintptr_t)wr->sg_list[i].addr, l);
			bytes += l;
		}
		*flags |= VRDMA_WQE_INLINE;
		sqe->inline_len = bytes;
	} else {
		/* keeps the copy inside sge[] */
		if ((uint32_t)wr->num_sge > ctx->max_sge ||
		    wr->num_sge > VRDMA_MAX_SGE)
			return -EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			sqe->sge[i].addr = wr->sg_list[i].addr;
			sqe->sge[i].length = wr->sg_list[i].length;
			sqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		sqe->num_sge = wr->num_sge;
	}

	/* the kernel's own check, run again when it takes the slot */
	if (vrdma_sqe_check(sqe, *flags, ud ? VRDMA_SQE_QP_UD : VRDMA_SQE_QP_RC,
			    0, &len) != VRDMA_SQE_OK)
		return -EINVAL;
	return 0;
}

static int vrdma_ring_doorbell(struct vrdma_qp *qp)
{
	ssize_t n = write(qp->ibv_qp.context->cmd_fd, &qp->db_req,
			  sizeof(qp->db_req));

	return n == sizeof(qp->db_req) ? 0 : errno;
}

static int vrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	uint32_t start, posted = 0;
	bool idle = true;
	int ret = 0;

	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.head;
	for (; wr; wr = wr->next) {
		struct vrdma_sqe *sqe = vrdma_ring_slot(&qp->sq, qp->sq.head);
		uint32_t flags;

		if (vrdma_slot_flags(sqe) & VRDMA_WQE_VALID) {
			ret = ENOMEM;	/* send queue full */
			break;
		}
		ret = -vrdma_build_sqe(qp, wr, sqe, &flags);
		if (ret)
			break;
		vrdma_slot_set(sqe, flags);
		qp->sq.head++;
		posted++;
	}
	if (ret)
		*bad_wr = wr;

	/*
	 * Had the kernel finished everything posted before (then it may be
	 * idle, and must be told)? Asked after publishing the new WQEs, with
	 * a full fence: the kernel clears a finished slot, fences, then looks
	 * for new WQEs, so either it sees ours or we see its cleared slot.
	 * Asked before publishing, a completion in between left the new WQEs
	 * unseen with no doorbell, for good.
	 */
	if (posted && start) {
		atomic_thread_fence(memory_order_seq_cst);
		idle = !(vrdma_slot_flags(vrdma_ring_slot(&qp->sq, start - 1)) &
			 VRDMA_WQE_VALID);
	}
	if (posted && (idle || posted >= qp->sq.num_slots)) {
		int db = vrdma_ring_doorbell(qp);

		if (db && !ret) {
			ret = db;
			*bad_wr = wr;
		}
	}
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static int vrdma_post_rqe(struct vrdma_ring *rq, struct ibv_context *ibctx,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct vrdma_context *ctx = to_vctx(ibctx);
	int ret = 0, i;

	pthread_spin_lock(&rq->lock);
	for (; wr; wr = wr->next) {
		struct vrdma_rqe *rqe = vrdma_ring_slot(rq, rq->head);

		if (vrdma_slot_flags(rqe) & VRDMA_WQE_VALID) {
			ret = ENOMEM;	/* receive queue full */
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > ctx->max_sge ||
		    wr->num_sge > VRDMA_MAX_SGE) {
			ret = EINVAL;
			break;
		}
		rqe->wr_id = wr->wr_id;
		rqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			rqe->sge[i].addr = wr->sg_list[i].addr;
			rqe->sge[i].length = wr->sg_list[i].length;
			rqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		vrdma_slot_set(rqe, VRDMA_WQE_VALID);
		rq->head++;
	}
	if (ret)
		*bad_wr = wr;
	pthread_spin_unlock(&rq->lock);
	return ret;
}

static int vrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int ret;

	if (qp->srq) {
		*bad_wr = wr;
		errno = EINVAL;
		return errno;
	}
	ret = vrdma_post_rqe(&qp->rq, ibqp->context, wr, bad_wr);
	/*
	 * A QP in ERR flushes new receives, but the kernel does not see
	 * this post: after a full fence (the RQEs are published), read the
	 * state it wrote before its own flush, and on ERR ring the doorbell,
	 * which flushes (uapi: struct vrdma_rq_ctrl).
	 */
	if (qp->rq_ctrl && (!ret || *bad_wr != wr)) {
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit((_Atomic(uint32_t) *)
					 &qp->rq_ctrl->qp_state,
					 memory_order_relaxed) == IBV_QPS_ERR)
			vrdma_ring_doorbell(qp);
	}
	return ret;
}

static int vrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	return vrdma_post_rqe(&to_vsrq(ibsrq)->ring, ibsrq->context, wr,
			      bad_wr);
}

static struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct vrdma_ucmd_create_ah_resp resp = {};
	struct vrdma_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibv_ah;
}

static int vrdma_destroy_ah(struct ibv_ah *ibah)
{
	int ret = ibv_cmd_destroy_ah(ibah);

	if (!ret)
		free(to_vah(ibah));
	return ret;
}

static void vrdma_async_event(struct ibv_context *ctx,
			      struct ibv_async_event *event)
{
}

static const struct verbs_context_ops vrdma_ctx_ops = {
	.alloc_pd = vrdma_alloc_pd,
	.async_event = vrdma_async_event,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_qp = vrdma_create_qp,
	.create_srq = vrdma_create_srq,
	.dealloc_pd = vrdma_dealloc_pd,
	.dereg_mr = vrdma_dereg_mr,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	.free_context = vrdma_free_context,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_device_ex = vrdma_query_device,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.reg_mr = vrdma_reg_mr,
	.req_notify_cq = vrdma_req_notify_cq,
	.resize_cq = vrdma_resize_cq,
};

static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd, void *private_data)
{
	struct vrdma_ucmd_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct vrdma_context *ctx;

	/* uverbs checks this against the kernel device's driver_id */
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   (enum rdma_driver_id)VRDMA_UVERBS_DRIVER_ID);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err;

	if (resp.drv.abi_version != VRDMA_UVERBS_ABI_VERSION ||
	    resp.drv.sqe_size != sizeof(struct vrdma_sqe) ||
	    resp.drv.rqe_size != sizeof(struct vrdma_rqe) ||
	    resp.drv.cqe_size != sizeof(struct vrdma_cqe)) {
		verbs_err(&ctx->ibv_ctx,
			  "libvrdma: kernel ABI %u (sqe %u rqe %u cqe %u) does not match ours %u\n",
			  resp.drv.abi_version, resp.drv.sqe_size,
			  resp.drv.rqe_size, resp.drv.cqe_size,
			  VRDMA_UVERBS_ABI_VERSION);
		errno = EPROTO;
		goto err;
	}
	ctx->max_sge = resp.drv.max_sge;
	ctx->max_inline = resp.drv.max_inline;
	if (ctx->max_inline > VRDMA_MAX_INLINE)
		ctx->max_inline = VRDMA_MAX_INLINE;

	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	return &ctx->ibv_ctx;
err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx = to_vctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *vrdma_device_alloc(struct verbs_sysfs_dev *sdev)
{
	struct vrdma_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void vrdma_device_free(struct verbs_device *vdev)
{
	free(container_of(vdev, struct vrdma_device, ibv_dev));
}

/* The kernel has no RDMA_DRIVER_ID for vrdma: match the device name. */
static const struct verbs_match_ent vrdma_match_table[] = {
	VERBS_NAME_MATCH(VRDMA_IBDEV_PREFIX, NULL),
	{},
};

static const struct verbs_device_ops vrdma_dev_ops = {
	.name = "vrdma",
	.match_min_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_table = vrdma_match_table,
	.alloc_device = vrdma_device_alloc,
	.uninit_device = vrdma_device_free,
	.alloc_context = vrdma_alloc_context,
};

PROVIDER_DRIVER(vrdma, vrdma_dev_ops);
