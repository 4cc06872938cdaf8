/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrdma: rdma-core provider for the vrdma kernel driver.
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>

#include "vrdma-abi.h"

/* Commands and responses: the core uverbs part, then ours. */
struct vrdma_ucmd_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct vrdma_alloc_ucontext_resp drv;
};

struct vrdma_ucmd_create_cq {
	struct ibv_create_cq ibv_cmd;
	struct vrdma_create_cq_cmd drv;
};

struct vrdma_ucmd_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct vrdma_create_cq_resp drv;
};

/* ibv_create_cq_ex: the same driver command and response */
struct vrdma_ucmd_create_cq_ex {
	struct ibv_create_cq_ex ibv_cmd;
	struct vrdma_create_cq_cmd drv;
};

struct vrdma_ucmd_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct vrdma_create_cq_resp drv;
};

struct vrdma_ucmd_resize_cq_resp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct vrdma_resize_cq_resp drv;
};

struct vrdma_ucmd_create_qp {
	struct ibv_create_qp ibv_cmd;
	struct vrdma_create_qp_cmd drv;
};

struct vrdma_ucmd_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct vrdma_create_qp_resp drv;
};

struct vrdma_ucmd_create_srq {
	struct ibv_create_srq ibv_cmd;
	struct vrdma_create_srq_cmd drv;
};

struct vrdma_ucmd_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct vrdma_create_srq_resp drv;
};

struct vrdma_ucmd_create_ah_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct vrdma_create_ah_resp drv;
};

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
	uint32_t max_sge;
	uint32_t max_inline;
	bool sq_taken;		/* the kernel marks taken SQEs (uapi) */
};

/* A mapped ring: slots of slot_size bytes, num_slots of them. */
struct vrdma_ring {
	void *map;
	size_t map_size;
	uint32_t num_slots;
	uint32_t slot_size;
	uint32_t head;		/* our running index (producer or consumer) */
	pthread_spinlock_t lock;
};

struct vrdma_cq {
	struct verbs_cq vcq;		/* ibv_cq, or ibv_cq_ex from create_cq_ex */
	uint32_t cq_id;
	struct vrdma_ring ring;
	struct vrdma_cq_ctrl *ctrl;
	/* start_poll..end_poll (ring.lock held): the CQE being read */
	struct vrdma_cqe *cur;
};

struct vrdma_srq {
	struct ibv_srq ibv_srq;
	struct vrdma_ring ring;
};

struct vrdma_qp {
	struct verbs_qp vqp;		/* ibv_qp, or ibv_qp_ex from create_qp_ex */
	uint32_t qp_id;
	int sq_sig_all;
	struct vrdma_ring sq;
	struct vrdma_ring rq;
	struct vrdma_srq *srq;
	/* the kernel's QP state behind the RQ slots; NULL from older kernels */
	struct vrdma_rq_ctrl *rq_ctrl;
	/* send doorbell: a zero-WR post_send on the write() path */
	struct ibv_post_send db_req;
	struct ib_uverbs_post_send_resp db_resp;
	/* WQEs posted since the last doorbell (VRDMA_SQ_DB_EVERY) */
	uint32_t db_skipped;
	/*
	 * ibv_wr_*, between wr_start and wr_complete/wr_abort (sq.lock held):
	 * wr_n SQEs built from sq.head on, not yet published; the last one,
	 * wr_cur, not yet checked; wr_err the first error, which makes
	 * wr_complete discard them all.
	 */
	uint32_t wr_n;
	struct vrdma_sqe *wr_cur;
	uint32_t wr_cur_flags;		/* its flags word, VALID clear */
	bool wr_ud_addr;		/* wr_set_ud_addr() for wr_cur */
	int wr_err;
};

struct vrdma_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;
};

struct vrdma_mr {
	struct verbs_mr vmr;
};

static inline struct vrdma_context *to_vctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_cq *to_vcq(struct ibv_cq *cq)
{
	return container_of(cq, struct vrdma_cq, vcq.cq);
}

static inline struct vrdma_cq *to_vcq_ex(struct ibv_cq_ex *cq)
{
	return container_of(cq, struct vrdma_cq, vcq.cq_ex);
}

static inline struct vrdma_qp *to_vqp(struct ibv_qp *qp)
{
	return container_of(qp, struct vrdma_qp, vqp.qp);
}

static inline struct vrdma_qp *to_vqp_ex(struct ibv_qp_ex *qp)
{
	return container_of(qp, struct vrdma_qp, vqp.qp_ex);
}

static inline struct vrdma_srq *to_vsrq(struct ibv_srq *srq)
{
	return container_of(srq, struct vrdma_srq, ibv_srq);
}

static inline struct vrdma_ah *to_vah(struct ibv_ah *ah)
{
	return container_of(ah, struct vrdma_ah, ibv_ah);
}

static inline struct vrdma_mr *to_vmr(struct verbs_mr *vmr)
{
	return container_of(vmr, struct vrdma_mr, vmr);
}

static inline void *vrdma_ring_slot(struct vrdma_ring *r, uint32_t idx)
{
	return (uint8_t *)r->map + (size_t)(idx % r->num_slots) * r->slot_size;
}

/* The control area of @size bytes behind the slots; NULL if not mapped. */
static inline void *vrdma_ring_ctrl(struct vrdma_ring *r, size_t size)
{
	size_t off = (size_t)r->num_slots * r->slot_size;

	return r->map && r->map_size >= off + size ?
	       (uint8_t *)r->map + off : NULL;
}

/*
 * Slot ownership: the first 32-bit word of every slot is its flags word.
 * The kernel's primitives of the same names do the same.
 */
static inline uint32_t vrdma_slot_flags(void *slot)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)slot,
				    memory_order_acquire);
}

static inline void vrdma_slot_set(void *slot, uint32_t flags)
{
	atomic_store_explicit((_Atomic(uint32_t) *)slot, flags,
			      memory_order_release);
}

#endif /* VRDMA_PROVIDER_H */
