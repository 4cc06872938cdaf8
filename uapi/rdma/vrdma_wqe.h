/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * The shape check of a send queue entry, one copy for vrdma.ko and
 * libvrdma. The provider and the kernel run it when they post (a refused
 * WQE is -EINVAL from post_send); the kernel runs it again when its data
 * path takes a slot, because a user process may have written anything
 * there, and completes a refused WQE with the status it returns.
 *
 * Header only, uapi types only: it compiles as kernel C and as userspace C.
 */
#ifndef VRDMA_WQE_H
#define VRDMA_WQE_H

#include <linux/types.h>

#include "vrdma-abi.h"

/* Values of enum ib_wc_status / ibv_wc_status, so callers can hand them on. */
enum vrdma_sqe_status {
	VRDMA_SQE_OK		= 0,
	VRDMA_SQE_LOC_LEN_ERR	= 1,	/* IB_WC_LOC_LEN_ERR */
	VRDMA_SQE_LOC_QP_OP_ERR	= 2,	/* IB_WC_LOC_QP_OP_ERR */
};

/* The transport service of the QP that owns the SQ (GSI counts as UD). */
enum vrdma_sqe_qp {
	VRDMA_SQE_QP_RC,
	VRDMA_SQE_QP_UD,
	VRDMA_SQE_QP_UC,
};

static inline int vrdma_sqe_is_atomic(__u8 opcode)
{
	return opcode == VRDMA_OP_ATOMIC_CMP_AND_SWP ||
	       opcode == VRDMA_OP_ATOMIC_FETCH_AND_ADD;
}

/*
 * Check @sqe, whose flags word read @flags (the kernel reads it with an
 * acquire load, apart from its private copy of the slot), for a QP of
 * service @qp; @kernel says whether the QP belongs to a kernel ULP. On
 * VRDMA_SQE_OK, *len is the message length: the inline payload, the sum of
 * the SGE lengths, or 0 for a local operation; otherwise it is 0.
 *
 * IBA 11.6.2 names the two statuses: Local QP Operation Error for a WQE
 * the QP cannot carry out, Local Length Error for a WQE whose data does
 * not fit what the QP advertised. An opcode fault is reported before a
 * length fault.
 */
static inline enum vrdma_sqe_status
vrdma_sqe_check(const struct vrdma_sqe *sqe, __u32 flags, enum vrdma_sqe_qp qp,
		int kernel, __u64 *len)
{
	int inl = !!(flags & VRDMA_WQE_INLINE);
	__u64 total = 0;
	__u32 i;

	*len = 0;
	switch (sqe->opcode) {
	case VRDMA_OP_SEND:
	case VRDMA_OP_SEND_WITH_IMM:
		/* the only operations of the UD service (IBA 9.8) */
		break;
	case VRDMA_OP_RDMA_WRITE:
	case VRDMA_OP_RDMA_WRITE_WITH_IMM:
		/* UC: SEND and RDMA WRITE, with or without immediate (IBA 9.8) */
		if (qp == VRDMA_SQE_QP_UD)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		break;
	case VRDMA_OP_SEND_WITH_INV:
		if (qp != VRDMA_SQE_QP_RC)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		break;
	case VRDMA_OP_RDMA_READ:
	case VRDMA_OP_ATOMIC_CMP_AND_SWP:
	case VRDMA_OP_ATOMIC_FETCH_AND_ADD:
		if (qp != VRDMA_SQE_QP_RC)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		/*
		 * Inline data is a gather list sent by value: a READ or an
		 * atomic scatters its response, so it needs real SGEs.
		 */
		if (inl)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		break;
	case VRDMA_OP_LOCAL_INV:
		/* the UD and UC data paths manage no memory regions */
		if (qp != VRDMA_SQE_QP_RC)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		return VRDMA_SQE_OK;	/* no data: sge[] is ignored */
	case VRDMA_OP_BIND_MW:
		/* sge[0].lkey names the MR; no data moves */
		if (qp != VRDMA_SQE_QP_RC)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		return VRDMA_SQE_OK;
	case VRDMA_OP_REG_MR:
		/* raddr carries a kernel pointer to the MR: never from a user */
		if (qp != VRDMA_SQE_QP_RC || !kernel)
			return VRDMA_SQE_LOC_QP_OP_ERR;
		return VRDMA_SQE_OK;
	default:
		return VRDMA_SQE_LOC_QP_OP_ERR;
	}

	if (inl) {
		/* the payload lives in sge[]: at most max_inline_data bytes */
		if (sqe->inline_len > VRDMA_MAX_INLINE)
			return VRDMA_SQE_LOC_LEN_ERR;
		*len = sqe->inline_len;
		return VRDMA_SQE_OK;
	}

	/* no more than the max_send_sge the QP advertised */
	if (sqe->num_sge > VRDMA_MAX_SGE)
		return VRDMA_SQE_LOC_LEN_ERR;
	for (i = 0; i < sqe->num_sge; i++)
		total += sqe->sge[i].length;

	/*
	 * An atomic operates on one 64-bit word: its original value lands
	 * in exactly one 8-byte local buffer. (That the remote word is
	 * 8-byte aligned is checked when posting, where it is -EINVAL.)
	 */
	if (vrdma_sqe_is_atomic(sqe->opcode) &&
	    (sqe->num_sge != 1 || total != 8))
		return VRDMA_SQE_LOC_LEN_ERR;

	/* a message is at most max_msg_sz bytes (IBA: 2^31) */
	if (total > VRDMA_MAX_MSG_SIZE)
		return VRDMA_SQE_LOC_LEN_ERR;

	*len = total;
	return VRDMA_SQE_OK;
}

#endif /* VRDMA_WQE_H */
