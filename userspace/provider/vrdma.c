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

/*
 * A new PD or new rights keep the keys; a new translation gets new ones
 * (the kernel replaces the MR): the response carries them either way.
 */
static int vrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			  void *addr, size_t len, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};
	int ret;

	ret = ibv_cmd_rereg_mr(vmr, flags, addr, len, (uintptr_t)addr, access,
			       pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret)
		errno = ret;
	return ret;
}

static struct ibv_mw *vrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	errno = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
	if (errno) {
		free(mw);
		return NULL;
	}
	return mw;
}

static int vrdma_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

static int vrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr);

/* ibv_bind_mw (type 1): a BIND_MW on the send queue with the next key. */
static int vrdma_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {}, *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1) {
		errno = EINVAL;
		return errno;
	}
	wr.opcode = IBV_WR_BIND_MW;
	wr.wr_id = mw_bind->wr_id;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = vrdma_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

static int vrdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(to_vmr(vmr));
	return ret;
}

/* Map the ring of a CQ the kernel just created; destroys it on failure. */
static int vrdma_cq_map(struct vrdma_cq *cq, struct ibv_context *ctx,
			const struct vrdma_create_cq_resp *drv)
{
	int ret;

	ret = -vrdma_ring_map(&cq->ring, ctx, drv->cq_key, drv->cq_size,
			     drv->num_cqe, sizeof(struct vrdma_cqe));
	cq->ctrl = ret ? NULL : vrdma_ring_ctrl(&cq->ring,
						sizeof(*cq->ctrl));
	if (!cq->ctrl) {
		verbs_err(verbs_get_ctx(ctx), "libvrdma: CQ mapping failed\n");
		vrdma_ring_unmap(&cq->ring);
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		return ret ? ret : EINVAL;
	}
	cq->cq_id = drv->cq_id;
	pthread_spin_init(&cq->ring.lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
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

	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (!ret)
		ret = vrdma_cq_map(cq, ctx, &resp.drv);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

/*
 * Extended polling reads the CQE in its ring slot: start_poll takes the
 * ring lock and the first valid slot, next_poll hands the slot back and
 * takes the next one, end_poll hands back the last and unlocks. The
 * kernel cannot rewrite a slot before it is handed back.
 */
/* The next valid CQE, or NULL; the caller holds ring.lock. */
static struct vrdma_cqe *vrdma_cq_peek(struct vrdma_cq *cq)
{
	struct vrdma_cqe *cqe = vrdma_ring_slot(&cq->ring, cq->ring.head);

	return vrdma_slot_flags(cqe) & VRDMA_CQE_VALID ? cqe : NULL;
}

/* Hand the CQE at the consumer index back to the kernel. */
static void vrdma_cq_consume(struct vrdma_cq *cq)
{
	vrdma_slot_set(vrdma_ring_slot(&cq->ring, cq->ring.head), 0);
	cq->ring.head++;
}

/* Take the next valid CQE for the readers: 0, or ENOENT if there is none. */
static int vrdma_cq_ex_take(struct vrdma_cq *cq)
{
	struct vrdma_cqe *cqe = vrdma_cq_peek(cq);
	int ret = ENOENT;

	cq->cur = cqe;
	if (cqe) {
		cq->vcq.cq_ex.wr_id = cqe->wr_id;
		cq->vcq.cq_ex.status = cqe->status;
		ret = 0;
	}
	return ret;
}

static int vrdma_start_poll(struct ibv_cq_ex *ibcq,
			    struct ibv_poll_cq_attr *attr)
{
	struct vrdma_cq *cq = to_vcq_ex(ibcq);
	int ret = EINVAL;

	if (attr->comp_mask)
		return ret;
	pthread_spin_lock(&cq->ring.lock);
	ret = vrdma_cq_ex_take(cq);
	if (ret)
		pthread_spin_unlock(&cq->ring.lock);	/* no end_poll follows */
	return ret;
}

static int vrdma_next_poll(struct ibv_cq_ex *ibcq)
{
	struct vrdma_cq *cq = to_vcq_ex(ibcq);

	if (cq->cur)
		vrdma_cq_consume(cq);
	return vrdma_cq_ex_take(cq);
}

static void vrdma_end_poll(struct ibv_cq_ex *ibcq)
{
	struct vrdma_cq *cq = to_vcq_ex(ibcq);

	if (cq->cur)
		vrdma_cq_consume(cq);
	cq->cur = NULL;
	pthread_spin_unlock(&cq->ring.lock);
}

static enum ibv_wc_opcode vrdma_wc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_vcq_ex(ibcq)->cur->opcode;
}

static uint32_t vrdma_wc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint32_t vrdma_wc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_vcq_ex(ibcq)->cur->byte_len;
}

/* ibv_wc_read_invalidated_rkey() takes this too, through be32toh() */
static __be32 vrdma_wc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	struct vrdma_cqe *cqe = to_vcq_ex(ibcq)->cur;

	if (cqe->flags & VRDMA_CQE_WITH_INV)
		return htobe32(cqe->ex);
	return (__be32)cqe->ex;	/* immediate data: already big-endian */
}

static uint32_t vrdma_wc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_vcq_ex(ibcq)->cur->qp_num;
}

static uint32_t vrdma_wc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_vcq_ex(ibcq)->cur->src_qp;
}

/* The wc_flags of a CQE whose flags word read @flags. */
static unsigned int vrdma_cqe_wc_flags(uint32_t flags)
{
	unsigned int wc_flags = 0;

	if (flags & VRDMA_CQE_WITH_IMM)
		wc_flags |= IBV_WC_WITH_IMM;
	else if (flags & VRDMA_CQE_WITH_INV)
		wc_flags |= IBV_WC_WITH_INV;
	if (flags & VRDMA_CQE_GRH)
		wc_flags |= IBV_WC_GRH;
	return wc_flags;
}

/*
 * The sl of a CQE. RoCE has no SL on the wire; for a UD receive with a GRH
 * it reports the packet type as mlx5 does (PRM: bit 3 UDP, bits 2:0 the L3
 * header: 1 IPv6, 2 IPv4), which UCX before 1.18 reads from wc.sl to find
 * the destination GID in the GRH area: left at 0, it takes every IPv4
 * datagram for IPv6 and drops it (its UD_VERBS_ETH_DGID_CHECK).
 */
#define VRDMA_SL_ROCE_UDP	0x8
#define VRDMA_SL_ROCE_IPV6	0x1
#define VRDMA_SL_ROCE_IPV4	0x2
#define VRDMA_NET_IPV4		2	/* enum rdma_network_type */
#define VRDMA_NET_IPV6		3

static uint8_t vrdma_cqe_sl(const struct vrdma_cqe *cqe, uint32_t flags)
{
	if (!(flags & VRDMA_CQE_GRH))
		return cqe->sl;
	if (cqe->network_hdr_type == VRDMA_NET_IPV4)
		return VRDMA_SL_ROCE_UDP | VRDMA_SL_ROCE_IPV4;
	if (cqe->network_hdr_type == VRDMA_NET_IPV6)
		return VRDMA_SL_ROCE_UDP | VRDMA_SL_ROCE_IPV6;
	return cqe->sl;
}

static unsigned int vrdma_wc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return vrdma_cqe_wc_flags(to_vcq_ex(ibcq)->cur->flags);
}

/* RoCE-like: no LIDs */
static uint32_t vrdma_wc_read_slid(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint8_t vrdma_wc_read_sl(struct ibv_cq_ex *ibcq)
{
	struct vrdma_cqe *cqe = to_vcq_ex(ibcq)->cur;

	return vrdma_cqe_sl(cqe, cqe->flags);
}

static uint8_t vrdma_wc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return 0;
}

/*
 * What a CQE carries. A CQE has no completion time, so the timestamp
 * flags are refused rather than answered with a made-up clock.
 */
enum {
	VRDMA_CQ_WC_FLAGS = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			    IBV_WC_EX_WITH_DLID_PATH_BITS,
	/* a parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is not supported */
	VRDMA_CQ_INIT_MASK = IBV_CQ_INIT_ATTR_MASK_FLAGS,
	/*
	 * SINGLE_THREADED only allows a provider to drop its locks, which
	 * we keep; IGNORE_OVERRUN the kernel refuses (a full CQ is an
	 * overrun there).
	 */
	VRDMA_CQ_CREATE_FLAGS = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
};

static struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *ctx,
					    struct ibv_cq_init_attr_ex *attr)
{
	struct vrdma_ucmd_create_cq_ex_resp resp = {};
	struct vrdma_ucmd_create_cq_ex cmd = {};
	struct ibv_cq_ex *ex;
	struct vrdma_cq *cq;
	int ret;

	if ((attr->wc_flags & ~(uint64_t)VRDMA_CQ_WC_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)VRDMA_CQ_INIT_MASK) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)VRDMA_CQ_CREATE_FLAGS))) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq_ex(ctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (!ret)
		ret = vrdma_cq_map(cq, ctx, &resp.drv);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}

	/* every accessor, whether its wc_flag was asked for or not */
	ex = &cq->vcq.cq_ex;
	ex->start_poll = vrdma_start_poll;
	ex->next_poll = vrdma_next_poll;
	ex->end_poll = vrdma_end_poll;
	ex->read_opcode = vrdma_wc_read_opcode;
	ex->read_vendor_err = vrdma_wc_read_vendor_err;
	ex->read_byte_len = vrdma_wc_read_byte_len;
	ex->read_imm_data = vrdma_wc_read_imm_data;
	ex->read_qp_num = vrdma_wc_read_qp_num;
	ex->read_src_qp = vrdma_wc_read_src_qp;
	ex->read_wc_flags = vrdma_wc_read_wc_flags;
	ex->read_slid = vrdma_wc_read_slid;
	ex->read_sl = vrdma_wc_read_sl;
	ex->read_dlid_path_bits = vrdma_wc_read_dlid_path_bits;
	return ex;
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
	struct vrdma_cqe *cqe;
	int n = 0;

	pthread_spin_lock(&cq->ring.lock);
	for (; n < num && (cqe = vrdma_cq_peek(cq)); n++, wc++) {
		uint32_t flags = cqe->flags;	/* read after peek's acquire */

		wc->wr_id = cqe->wr_id;
		wc->status = cqe->status;
		wc->opcode = cqe->opcode;
		wc->vendor_err = 0;
		wc->byte_len = cqe->byte_len;
		wc->qp_num = cqe->qp_num;
		wc->src_qp = cqe->src_qp;
		wc->pkey_index = cqe->pkey_index;
		wc->slid = 0;
		wc->sl = vrdma_cqe_sl(cqe, flags);
		wc->dlid_path_bits = 0;
		wc->wc_flags = vrdma_cqe_wc_flags(flags);
		wc->imm_data = 0;
		if (flags & VRDMA_CQE_WITH_IMM)
			wc->imm_data = cqe->ex;
		else if (flags & VRDMA_CQE_WITH_INV)
			wc->invalidated_rkey = cqe->ex;

		vrdma_cq_consume(cq);
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

static void vrdma_set_qp_send_ops(struct vrdma_qp *qp, uint64_t ops);

/*
 * ibv_qp_to_qp_ex() tests VERBS_QP_EX in verbs_qp.comp_mask, which follows
 * struct ibv_qp_ex. We build with rdma-core 56.1's headers, whose ibv_qp_ex
 * ends with wr_flush, and run on Debian 12's libibverbs (44.0, the same
 * private ABI), whose ibv_qp_ex ends before it: that library reads the
 * mask where 56.1 has wr_flush. Set it in both places. FLUSH is never
 * offered, so no application may call wr_flush.
 */
static void vrdma_qp_mark_ex(struct vrdma_qp *qp)
{
	uint32_t *mask44 = (uint32_t *)((uint8_t *)&qp->vqp.qp_ex +
					offsetof(struct ibv_qp_ex, wr_flush));

	qp->vqp.comp_mask |= VERBS_QP_EX;
	*mask44 |= VERBS_QP_EX;
}

/* create_qp and create_qp_ex: @attr has been checked. */
static struct ibv_qp *vrdma_create_qp_common(struct ibv_context *ctx,
					     struct ibv_qp_init_attr_ex *attr)
{
	struct vrdma_ucmd_create_qp_resp resp = {};
	struct vrdma_ucmd_create_qp cmd = {};
	struct vrdma_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	/* only where the kernel said it takes the flag: older ones refuse it */
	if (to_vctx(ctx)->sq_taken)
		cmd.drv.comp_mask |= VRDMA_CREATE_QP_CMD_SQ_TAKEN;

	ret = ibv_cmd_create_qp_ex(ctx, &qp->vqp, attr, &cmd.ibv_cmd,
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
	qp->db_req.qp_handle = qp->vqp.qp.handle;
	qp->db_req.wqe_size = sizeof(struct ibv_send_wr);

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		vrdma_set_qp_send_ops(qp, attr->send_ops_flags);
		vrdma_qp_mark_ex(qp);
	}

	/* report the real ring sizes back like the kernel does */
	attr->cap.max_send_wr = resp.drv.num_sqe;
	if (!attr->srq)
		attr->cap.max_recv_wr = resp.drv.num_rqe;
	return &qp->vqp.qp;
err:
	verbs_err(verbs_get_ctx(ctx), "libvrdma: QP mapping failed\n");
	vrdma_ring_unmap(&qp->sq);
	vrdma_ring_unmap(&qp->rq);
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	free(qp);
	errno = ret;
	return NULL;
}

static struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = vrdma_create_qp_common(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/*
 * The ibv_wr_* operations of each QP type: what post_send carries (RC:
 * also BIND_MW and LOCAL_INV, of type 2B windows). TSO, ATOMIC_WRITE and
 * FLUSH have no SQE opcode.
 */
enum {
	VRDMA_QP_EX_OPS_UD = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	VRDMA_QP_EX_OPS_UC = VRDMA_QP_EX_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	VRDMA_QP_EX_OPS_RC = VRDMA_QP_EX_OPS_UD |
			     IBV_QP_EX_WITH_SEND_WITH_INV |
			     IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ |
			     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			     IBV_QP_EX_WITH_BIND_MW |
			     IBV_QP_EX_WITH_LOCAL_INV,
	VRDMA_QP_INIT_MASK = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
};

static struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *ctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = attr->qp_type == IBV_QPT_RC ? VRDMA_QP_EX_OPS_RC :
		       attr->qp_type == IBV_QPT_UC ? VRDMA_QP_EX_OPS_UC :
		       attr->qp_type == IBV_QPT_UD ? VRDMA_QP_EX_OPS_UD : 0;
	uint32_t mask = attr->comp_mask;
	struct ibv_qp *qp;

	/* the kernel refuses every create flag (-EOPNOTSUPP) */
	if ((mask & ~(uint32_t)VRDMA_QP_INIT_MASK) ||
	    ((mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* no create flags: ibv_cmd_create_qp_ex() takes no such mask bit */
	attr->comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = vrdma_create_qp_common(ctx, attr);
	attr->comp_mask = mask;
	return qp;
}

static int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/*
 * Remove the CQEs of QP @qpn from @cq, as mlx5's provider does when a QP
 * goes to RESET or is destroyed (its flushed WRs must not be polled after
 * it). Under the ring lock, the valid CQEs from the consumer index to the
 * newest are walked from the newest: those of other QPs move towards the
 * newest end, over the removed ones, and the consumer index advances past
 * the slots this frees. The kernel writes only at its producer index,
 * into a slot whose VALID is clear: after the newest CQE seen here, or
 * into a freed slot once everything else moved out of it, so it never
 * sees a hole and never races a slot rewritten here.
 */
static void vrdma_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_ring *r = &cq->ring;
	uint32_t end, n, dst;

	pthread_spin_lock(&r->lock);
	for (end = r->head; end - r->head < r->num_slots; end++)
		if (!(vrdma_slot_flags(vrdma_ring_slot(r, end)) &
		      VRDMA_CQE_VALID))
			break;
	dst = end;
	for (n = end; n != r->head;) {
		struct vrdma_cqe *src = vrdma_ring_slot(r, --n);

		if (src->qp_num == qpn)
			continue;
		if (--dst != n)
			memcpy(vrdma_ring_slot(r, dst), src, sizeof(*src));
	}
	for (n = r->head; n != dst; n++)
		vrdma_slot_set(vrdma_ring_slot(r, n), 0);
	r->head = dst;
	pthread_spin_unlock(&r->lock);
}

/* The QP's CQEs go when it is reset or destroyed. */
static void vrdma_qp_clean_cqs(struct ibv_qp *qp, uint32_t qpn)
{
	if (qp->recv_cq)
		vrdma_cq_clean(qp->recv_cq, qpn);
	if (qp->send_cq && qp->send_cq != qp->recv_cq)
		vrdma_cq_clean(qp->send_cq, qpn);
}

static int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET)
		vrdma_qp_clean_cqs(qp, qp->qp_num);
	return ret;
}

static int vrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	vrdma_qp_clean_cqs(ibqp, ibqp->qp_num);	/* the CQs outlive it */
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
	case IBV_WR_BIND_MW:
		return VRDMA_OP_BIND_MW;
	default:
		return -1;
	}
}

/*
 * Building an SQE, for post_send and for the ibv_wr_* calls alike: init,
 * then the operation's fields and its data, then vrdma_sqe_finish(),
 * which checks it and stages its flags word (VALID still clear) for
 * vrdma_sq_publish(). The slot is ours: the kernel cleared it, and looks
 * at nothing in a slot without VALID.
 */
static uint32_t vrdma_sqe_init(struct vrdma_qp *qp, struct vrdma_sqe *sqe,
			       uint8_t op, uint64_t wr_id,
			       unsigned int send_flags)
{
	uint32_t flags = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= VRDMA_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= VRDMA_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= VRDMA_WQE_FENCE;

	sqe->opcode = op;
	sqe->wr_id = wr_id;
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
	return flags;
}

static int vrdma_sqe_set_atomic(struct vrdma_sqe *sqe, uint32_t rkey,
				uint64_t raddr, uint64_t compare_add,
				uint64_t swap)
{
	/* the remote word must be naturally aligned */
	if (raddr & 7)
		return -EINVAL;
	sqe->raddr = raddr;
	sqe->rkey = rkey;
	sqe->compare_add = compare_add;
	sqe->swap = swap;
	return 0;
}

static int vrdma_sqe_set_ud(struct vrdma_sqe *sqe, struct ibv_ah *ah,
			    uint32_t remote_qpn, uint32_t remote_qkey)
{
	if (!ah)
		return -EINVAL;
	sqe->ah = to_vah(ah)->ah_num;
	sqe->remote_qpn = remote_qpn;
	sqe->remote_qkey = remote_qkey;
	return 0;
}

/* Append @len bytes at @addr to the inline payload (*flags has INLINE). */
static int vrdma_sqe_add_inline(struct vrdma_context *ctx,
				struct vrdma_sqe *sqe, const void *addr,
				size_t len)
{
	/* keeps the copy inside sge[] */
	if (len > ctx->max_inline - sqe->inline_len)
		return -EINVAL;
	memcpy((uint8_t *)sqe->sge + sqe->inline_len, addr, len);
	sqe->inline_len += len;
	return 0;
}

static int vrdma_sqe_add_sge(struct vrdma_context *ctx, struct vrdma_sqe *sqe,
			     uint64_t addr, uint32_t length, uint32_t lkey)
{
	/* keeps the copy inside sge[] */
	if (sqe->num_sge >= ctx->max_sge || sqe->num_sge >= VRDMA_MAX_SGE)
		return -EINVAL;
	sqe->sge[sqe->num_sge].addr = addr;
	sqe->sge[sqe->num_sge].length = length;
	sqe->sge[sqe->num_sge].lkey = lkey;
	sqe->num_sge++;
	return 0;
}

/* The transport service of @qp, for vrdma_sqe_check(). */
static enum vrdma_sqe_qp vrdma_sqe_service(struct vrdma_qp *qp)
{
	switch (qp->vqp.qp.qp_type) {
	case IBV_QPT_UD:
		return VRDMA_SQE_QP_UD;
	case IBV_QPT_UC:
		return VRDMA_SQE_QP_UC;
	default:
		return VRDMA_SQE_QP_RC;
	}
}

static int vrdma_sqe_finish(struct vrdma_qp *qp, struct vrdma_sqe *sqe,
			    uint32_t flags)
{
	__u64 len;	/* vrdma_sqe_check() speaks uapi types */

	/* the kernel's own check, run again when it takes the slot */
	if (vrdma_sqe_check(sqe, flags, vrdma_sqe_service(qp), 0,
			    &len) != VRDMA_SQE_OK)
		return -EINVAL;
	atomic_store_explicit((_Atomic(uint32_t) *)&sqe->flags,
			      flags & ~VRDMA_WQE_VALID, memory_order_relaxed);
	return 0;
}

/*
 * The free slot for the @n-th SQE built from sq.head on, or NULL when the
 * send queue is full (the kernel still owns it, or @n went round).
 */
static struct vrdma_sqe *vrdma_sq_next(struct vrdma_qp *qp, uint32_t n)
{
	struct vrdma_sqe *sqe = vrdma_ring_slot(&qp->sq, qp->sq.head + n);

	if (n >= qp->sq.num_slots ||
	    (vrdma_slot_flags(sqe) & VRDMA_WQE_VALID))
		return NULL;
	return sqe;
}

static int vrdma_ring_doorbell(struct vrdma_qp *qp)
{
	ssize_t n = write(qp->vqp.qp.context->cmd_fd, &qp->db_req,
			  sizeof(qp->db_req));

	return n == sizeof(qp->db_req) ? 0 : errno;
}

/*
 * Publish the @n SQEs built and finished from sq.head on, in order, and
 * ring the doorbell if the kernel may be idle; sq.lock held. Returns 0 or
 * the doorbell's errno (the SQEs are posted either way).
 */
static int vrdma_sq_publish(struct vrdma_qp *qp, uint32_t n)
{
	uint32_t start = qp->sq.head, i;
	bool idle = true;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		struct vrdma_sqe *sqe = vrdma_ring_slot(&qp->sq, start + i);

		vrdma_slot_set(sqe, sqe->flags | VRDMA_WQE_VALID);
	}
	qp->sq.head += n;

	/*
	 * Had the kernel finished everything posted before, or taken it
	 * (then it may be idle, and must be told)? Asked after publishing
	 * the new WQEs, with a full fence: the kernel clears a finished slot
	 * or marks a taken one, fences, then looks for new WQEs, so either
	 * it sees ours or we see its flag. Asked before publishing, a
	 * completion in between left the new WQEs unseen with no doorbell,
	 * for good. Behind a WQE not yet taken, the run that takes it looks
	 * on; but every VRDMA_SQ_DB_EVERY WQEs ring anyway, for a kernel
	 * that held the first back to send them together.
	 */
	if (start) {
		uint32_t f;

		atomic_thread_fence(memory_order_seq_cst);
		f = vrdma_slot_flags(vrdma_ring_slot(&qp->sq, start - 1));
		/* only a QP created with SQ_TAKEN ever has the flag */
		idle = !(f & VRDMA_WQE_VALID) || (f & VRDMA_WQE_TAKEN);
	}
	qp->db_skipped += n;
	if (idle || n >= qp->sq.num_slots ||
	    qp->db_skipped >= VRDMA_SQ_DB_EVERY) {
		qp->db_skipped = 0;
		return vrdma_ring_doorbell(qp);
	}
	return 0;
}

/* Fill one SQE from @wr and finish it. */
/*
 * BIND_MW (vrdma_wqe.h): ex the window's key (its index names it), rkey
 * the key it gets, the range in raddr/compare_add, the rights in swap,
 * the MR in sge[0].lkey. Without an MR (a type 1 unbind) lkey is 0.
 */
static void vrdma_sqe_set_bind(struct vrdma_sqe *sqe, struct ibv_mw *mw,
			       uint32_t rkey,
			       const struct ibv_mw_bind_info *bi)
{
	sqe->ex = mw ? mw->rkey : 0;
	sqe->rkey = rkey;
	sqe->raddr = bi->addr;
	sqe->compare_add = bi->length;
	sqe->swap = bi->mw_access_flags;
	sqe->sge[0].lkey = bi->mr ? bi->mr->lkey : 0;
}

static int vrdma_build_sqe(struct vrdma_qp *qp, struct ibv_send_wr *wr,
			   struct vrdma_sqe *sqe)
{
	struct vrdma_context *ctx = to_vctx(qp->vqp.qp.context);
	int ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	int op = vrdma_sq_opcode(wr->opcode);
	uint32_t flags;
	int i, ret;

	if (op < 0 || wr->num_sge < 0)
		return -EINVAL;

	flags = vrdma_sqe_init(qp, sqe, op, wr->wr_id, wr->send_flags);

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
		ret = vrdma_sqe_set_atomic(sqe, wr->wr.atomic.rkey,
					   wr->wr.atomic.remote_addr,
					   wr->wr.atomic.compare_add,
					   wr->wr.atomic.swap);
		if (ret)
			return ret;
		break;
	case IBV_WR_BIND_MW:
		vrdma_sqe_set_bind(sqe, wr->bind_mw.mw, wr->bind_mw.rkey,
				   &wr->bind_mw.bind_info);
		return vrdma_sqe_finish(qp, sqe, flags);
	default:
		break;
	}
	/* only a SEND has a UD address: elsewhere wr.ud aliases wr.rdma */
	if (ud && (wr->opcode == IBV_WR_SEND ||
		   wr->opcode == IBV_WR_SEND_WITH_IMM)) {
		ret = vrdma_sqe_set_ud(sqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				       wr->wr.ud.remote_qkey);
		if (ret)
			return ret;
	}

	if (wr->send_flags & IBV_SEND_INLINE &&
	    wr->opcode != IBV_WR_RDMA_READ &&
	    wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
		flags |= VRDMA_WQE_INLINE;
		for (i = 0; i < wr->num_sge; i++) {
			ret = vrdma_sqe_add_inline(ctx, sqe,
				(void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
			if (ret)
				return ret;
		}
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			ret = vrdma_sqe_add_sge(ctx, sqe, wr->sg_list[i].addr,
						wr->sg_list[i].length,
						wr->sg_list[i].lkey);
			if (ret)
				return ret;
		}
	}
	return vrdma_sqe_finish(qp, sqe, flags);
}

/*
 * The QP's state for the posting checks: the kernel's (struct vrdma_rq_ctrl)
 * where the RQ ring carries it, else the last one ibv_modify_qp set.
 */
static enum ibv_qp_state vrdma_qp_state(struct vrdma_qp *qp)
{
	if (qp->rq_ctrl)
		return atomic_load_explicit((_Atomic(uint32_t) *)
					    &qp->rq_ctrl->qp_state,
					    memory_order_relaxed);
	return qp->vqp.qp.state;
}

/* IBA C10-97.2.1 (as rxe): no send before RTS, no receive in RESET. */
static bool vrdma_qp_can_send(struct vrdma_qp *qp)
{
	enum ibv_qp_state st = vrdma_qp_state(qp);

	return st != IBV_QPS_RESET && st != IBV_QPS_INIT && st != IBV_QPS_RTR;
}

static int vrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	uint32_t n = 0;
	int ret = 0, db;

	if (!vrdma_qp_can_send(qp)) {
		*bad_wr = wr;
		errno = EINVAL;
		return errno;
	}

	pthread_spin_lock(&qp->sq.lock);
	for (; wr; wr = wr->next, n++) {
		struct vrdma_sqe *sqe = vrdma_sq_next(qp, n);

		if (!sqe) {
			ret = ENOMEM;	/* send queue full */
			break;
		}
		ret = -vrdma_build_sqe(qp, wr, sqe);
		if (ret)
			break;
	}
	if (ret)
		*bad_wr = wr;
	db = vrdma_sq_publish(qp, n);
	if (db && !ret) {
		ret = db;
		*bad_wr = wr;	/* NULL: every WR was posted */
	}
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

/*
 * The ibv_wr_* calls build into the same slots, between wr_start and
 * wr_complete with sq.lock held: each operation call starts an SQE (and
 * finishes the one before), the setters fill its data. wr_complete
 * finishes the last and publishes them all like post_send; after an error
 * it publishes none and returns it. wr_abort publishes none.
 */
static void vrdma_wr_fail(struct vrdma_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

static void vrdma_wr_finish_cur(struct vrdma_qp *qp)
{
	struct vrdma_sqe *sqe = qp->wr_cur;
	int ret;

	if (!sqe)
		return;
	qp->wr_cur = NULL;
	if (qp->wr_err)
		return;
	/* only a SEND has a UD address */
	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !qp->wr_ud_addr)
		ret = -EINVAL;
	else
		ret = vrdma_sqe_finish(qp, sqe, qp->wr_cur_flags);
	if (ret)
		vrdma_wr_fail(qp, -ret);
	else
		qp->wr_n++;
}

/* The next SQE, of opcode @op; NULL after an error. */
static struct vrdma_sqe *vrdma_wr_new(struct ibv_qp_ex *ibqp, uint8_t op)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);
	struct vrdma_sqe *sqe;

	vrdma_wr_finish_cur(qp);
	if (qp->wr_err)
		return NULL;
	sqe = vrdma_sq_next(qp, qp->wr_n);
	if (!sqe) {
		vrdma_wr_fail(qp, ENOMEM);	/* send queue full */
		return NULL;
	}
	qp->wr_cur_flags = vrdma_sqe_init(qp, sqe, op, ibqp->wr_id,
					  ibqp->wr_flags);
	qp->wr_ud_addr = false;
	qp->wr_cur = sqe;
	return sqe;
}

static void vrdma_wr_start(struct ibv_qp_ex *ibqp)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_n = 0;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
}

static int vrdma_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);
	int ret;

	vrdma_wr_finish_cur(qp);
	ret = qp->wr_err;
	if (!ret && qp->wr_n && !vrdma_qp_can_send(qp))
		ret = EINVAL;
	if (!ret)
		ret = vrdma_sq_publish(qp, qp->wr_n);
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static void vrdma_wr_abort(struct ibv_qp_ex *ibqp)
{
	/* nothing was published: sq.head has not moved */
	pthread_spin_unlock(&to_vqp_ex(ibqp)->sq.lock);
}

static void vrdma_wr_send(struct ibv_qp_ex *ibqp)
{
	vrdma_wr_new(ibqp, VRDMA_OP_SEND);
}

static void vrdma_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, VRDMA_OP_SEND_WITH_IMM);

	if (sqe)
		sqe->ex = imm_data;
}

static void vrdma_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, VRDMA_OP_SEND_WITH_INV);

	if (sqe)
		sqe->ex = invalidate_rkey;
}

static void vrdma_wr_rdma(struct ibv_qp_ex *ibqp, uint8_t op, uint32_t rkey,
			  uint64_t remote_addr, uint32_t ex)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, op);

	if (!sqe)
		return;
	sqe->raddr = remote_addr;
	sqe->rkey = rkey;
	sqe->ex = ex;
}

static void vrdma_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr)
{
	vrdma_wr_rdma(ibqp, VRDMA_OP_RDMA_WRITE, rkey, remote_addr, 0);
}

static void vrdma_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	vrdma_wr_rdma(ibqp, VRDMA_OP_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		      (__u32)imm_data);
}

static void vrdma_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	vrdma_wr_rdma(ibqp, VRDMA_OP_RDMA_READ, rkey, remote_addr, 0);
}

static void vrdma_wr_atomic(struct ibv_qp_ex *ibqp, uint8_t op, uint32_t rkey,
			    uint64_t remote_addr, uint64_t compare_add,
			    uint64_t swap)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, op);
	int ret;

	if (!sqe)
		return;
	ret = vrdma_sqe_set_atomic(sqe, rkey, remote_addr, compare_add, swap);
	if (ret)
		vrdma_wr_fail(to_vqp_ex(ibqp), -ret);
}

static void vrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	vrdma_wr_atomic(ibqp, VRDMA_OP_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			compare, swap);
}

static void vrdma_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	vrdma_wr_atomic(ibqp, VRDMA_OP_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			add, 0);
}

/* The SQE a setter fills, its data reset; NULL without one or after an error. */
static struct vrdma_sqe *vrdma_wr_data(struct vrdma_qp *qp, bool inl)
{
	struct vrdma_sqe *sqe = qp->wr_cur;

	if (qp->wr_err)
		return NULL;
	if (!sqe) {
		vrdma_wr_fail(qp, EINVAL);	/* a setter before any operation */
		return NULL;
	}
	sqe->num_sge = 0;
	sqe->inline_len = 0;
	if (inl)
		qp->wr_cur_flags |= VRDMA_WQE_INLINE;
	else
		qp->wr_cur_flags &= ~VRDMA_WQE_INLINE;
	return sqe;
}

static void vrdma_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);
	int ret;

	if (qp->wr_err || !qp->wr_cur || qp->vqp.qp.qp_type != IBV_QPT_UD)
		return;
	ret = vrdma_sqe_set_ud(qp->wr_cur, ah, remote_qpn, remote_qkey);
	if (ret)
		vrdma_wr_fail(qp, -ret);
	else
		qp->wr_ud_addr = true;
}

static void vrdma_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);
	struct vrdma_context *ctx = to_vctx(qp->vqp.qp.context);
	struct vrdma_sqe *sqe = vrdma_wr_data(qp, false);
	size_t i;
	int ret = 0;

	for (i = 0; sqe && !ret && i < num_sge; i++)
		ret = vrdma_sqe_add_sge(ctx, sqe, sg_list[i].addr,
					sg_list[i].length, sg_list[i].lkey);
	if (ret)
		vrdma_wr_fail(qp, -ret);
}

static void vrdma_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vrdma_wr_set_sge_list(ibqp, 1, &sge);
}

static void vrdma_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct vrdma_qp *qp = to_vqp_ex(ibqp);
	struct vrdma_context *ctx = to_vctx(qp->vqp.qp.context);
	struct vrdma_sqe *sqe = vrdma_wr_data(qp, true);
	size_t i;
	int ret = 0;

	for (i = 0; sqe && !ret && i < num_buf; i++)
		ret = vrdma_sqe_add_inline(ctx, sqe, buf_list[i].addr,
					   buf_list[i].length);
	if (ret)
		vrdma_wr_fail(qp, -ret);
}

static void vrdma_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vrdma_wr_set_inline_data_list(ibqp, 1, &buf);
}

static void vrdma_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, VRDMA_OP_BIND_MW);

	if (sqe)
		vrdma_sqe_set_bind(sqe, mw, rkey, bind_info);
}

static void vrdma_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct vrdma_sqe *sqe = vrdma_wr_new(ibqp, VRDMA_OP_LOCAL_INV);

	if (sqe)
		sqe->ex = invalidate_rkey;
}

static void vrdma_set_qp_send_ops(struct vrdma_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;

	if (ops & IBV_QP_EX_WITH_SEND)
		ex->wr_send = vrdma_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = vrdma_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = vrdma_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = vrdma_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = vrdma_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = vrdma_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = vrdma_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = vrdma_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = vrdma_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = vrdma_wr_local_inv;

	ex->wr_set_ud_addr = vrdma_wr_set_ud_addr;
	ex->wr_set_sge = vrdma_wr_set_sge;
	ex->wr_set_sge_list = vrdma_wr_set_sge_list;
	ex->wr_set_inline_data = vrdma_wr_set_inline_data;
	ex->wr_set_inline_data_list = vrdma_wr_set_inline_data_list;
	ex->wr_start = vrdma_wr_start;
	ex->wr_complete = vrdma_wr_complete;
	ex->wr_abort = vrdma_wr_abort;
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
	if (vrdma_qp_state(qp) == IBV_QPS_RESET) {
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
	.alloc_mw = vrdma_alloc_mw,
	.alloc_pd = vrdma_alloc_pd,
	.async_event = vrdma_async_event,
	.bind_mw = vrdma_bind_mw,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_cq_ex = vrdma_create_cq_ex,
	.create_qp = vrdma_create_qp,
	.create_qp_ex = vrdma_create_qp_ex,
	.create_srq = vrdma_create_srq,
	.dealloc_mw = vrdma_dealloc_mw,
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
	.rereg_mr = vrdma_rereg_mr,
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
	ctx->sq_taken = resp.drv.comp_mask & VRDMA_UCTX_RESP_SQ_TAKEN;
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

/*
 * The kernel reports vrdma's private driver id over netlink, which
 * libibverbs matches first: a device named anything ("rdma link add eni0
 * type vrdma ...") is ours. The name prefix is for a libibverbs that
 * learns no driver id.
 */
static const struct verbs_match_ent vrdma_match_table[] = {
	VERBS_DRIVER_ID((enum rdma_driver_id)VRDMA_UVERBS_DRIVER_ID),
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
