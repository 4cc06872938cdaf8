/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vrdma_abi_layout.h - the sizes and key offsets of every struct of
 * vrdma-abi.h, fixed by VRDMA_UVERBS_ABI_VERSION: one list, asserted at
 * build time by the kernel (drivers/vrdma/vrdma_abi_check.h) and by the
 * provider (userspace/provider/vrdma_abi_check.h), so a header whose
 * layout drifted fails to compile on both sides instead of corrupting
 * rings at run time. Not an API: the includer defines
 * VRDMA_ABI_CHECK(expr) as its static assertion and has offsetof().
 */
#ifndef VRDMA_ABI_LAYOUT_H
#define VRDMA_ABI_LAYOUT_H

#include "vrdma-abi.h"

#define VRDMA_ABI_SIZE(s, n)	VRDMA_ABI_CHECK(sizeof(struct s) == (n))
#define VRDMA_ABI_OFF(s, f, n)	VRDMA_ABI_CHECK(offsetof(struct s, f) == (n))

/* Ring slots: the flags word first (ownership), then 8-byte-aligned u64s. */
VRDMA_ABI_SIZE(vrdma_sge, 16);
VRDMA_ABI_OFF(vrdma_sge, addr, 0);
VRDMA_ABI_OFF(vrdma_sge, length, 8);
VRDMA_ABI_OFF(vrdma_sge, lkey, 12);

VRDMA_ABI_SIZE(vrdma_sqe, 160);
VRDMA_ABI_OFF(vrdma_sqe, flags, 0);
VRDMA_ABI_OFF(vrdma_sqe, opcode, 4);
VRDMA_ABI_OFF(vrdma_sqe, num_sge, 5);
VRDMA_ABI_OFF(vrdma_sqe, wr_id, 8);
VRDMA_ABI_OFF(vrdma_sqe, raddr, 16);
VRDMA_ABI_OFF(vrdma_sqe, rkey, 24);
VRDMA_ABI_OFF(vrdma_sqe, ex, 28);
VRDMA_ABI_OFF(vrdma_sqe, compare_add, 32);
VRDMA_ABI_OFF(vrdma_sqe, swap, 40);
VRDMA_ABI_OFF(vrdma_sqe, ah, 48);
VRDMA_ABI_OFF(vrdma_sqe, inline_len, 60);
VRDMA_ABI_OFF(vrdma_sqe, sge, 64);
/* an inline payload lives in sge[] */
VRDMA_ABI_CHECK(sizeof(((struct vrdma_sqe *)0)->sge) >= VRDMA_MAX_INLINE);

VRDMA_ABI_SIZE(vrdma_rqe, 112);
VRDMA_ABI_OFF(vrdma_rqe, flags, 0);
VRDMA_ABI_OFF(vrdma_rqe, num_sge, 4);
VRDMA_ABI_OFF(vrdma_rqe, wr_id, 8);
VRDMA_ABI_OFF(vrdma_rqe, sge, 16);

VRDMA_ABI_SIZE(vrdma_cqe, 40);
VRDMA_ABI_OFF(vrdma_cqe, flags, 0);
VRDMA_ABI_OFF(vrdma_cqe, opcode, 4);
VRDMA_ABI_OFF(vrdma_cqe, status, 5);
VRDMA_ABI_OFF(vrdma_cqe, wr_id, 8);
VRDMA_ABI_OFF(vrdma_cqe, byte_len, 16);
VRDMA_ABI_OFF(vrdma_cqe, network_hdr_type, 33);

/* Control areas behind the slots of a CQ ring and an RQ ring. */
VRDMA_ABI_SIZE(vrdma_cq_ctrl, 16);
VRDMA_ABI_OFF(vrdma_cq_ctrl, notify, 0);
VRDMA_ABI_OFF(vrdma_cq_ctrl, reserved_40, 8);
VRDMA_ABI_SIZE(vrdma_rq_ctrl, 16);
VRDMA_ABI_OFF(vrdma_rq_ctrl, qp_state, 0);
VRDMA_ABI_OFF(vrdma_rq_ctrl, reserved_40, 8);

/* Commands and responses: comp_mask first. */
VRDMA_ABI_SIZE(vrdma_alloc_ucontext_resp, 48);
VRDMA_ABI_OFF(vrdma_alloc_ucontext_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_alloc_ucontext_resp, cqe_size, 40);

VRDMA_ABI_SIZE(vrdma_create_cq_cmd, 8);
VRDMA_ABI_OFF(vrdma_create_cq_cmd, comp_mask, 0);
VRDMA_ABI_SIZE(vrdma_create_cq_resp, 32);
VRDMA_ABI_OFF(vrdma_create_cq_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_create_cq_resp, cq_key, 16);
VRDMA_ABI_OFF(vrdma_create_cq_resp, cq_size, 24);
VRDMA_ABI_SIZE(vrdma_resize_cq_resp, 24);
VRDMA_ABI_OFF(vrdma_resize_cq_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_resize_cq_resp, cq_key, 8);
VRDMA_ABI_OFF(vrdma_resize_cq_resp, cq_size, 16);

VRDMA_ABI_SIZE(vrdma_create_qp_cmd, 8);
VRDMA_ABI_OFF(vrdma_create_qp_cmd, comp_mask, 0);
VRDMA_ABI_SIZE(vrdma_create_qp_resp, 48);
VRDMA_ABI_OFF(vrdma_create_qp_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_create_qp_resp, sq_key, 16);
VRDMA_ABI_OFF(vrdma_create_qp_resp, sq_size, 24);
VRDMA_ABI_OFF(vrdma_create_qp_resp, rq_key, 32);
VRDMA_ABI_OFF(vrdma_create_qp_resp, rq_size, 40);

VRDMA_ABI_SIZE(vrdma_create_srq_cmd, 8);
VRDMA_ABI_OFF(vrdma_create_srq_cmd, comp_mask, 0);
VRDMA_ABI_SIZE(vrdma_create_srq_resp, 24);
VRDMA_ABI_OFF(vrdma_create_srq_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_create_srq_resp, srq_key, 8);
VRDMA_ABI_OFF(vrdma_create_srq_resp, srq_size, 16);

VRDMA_ABI_SIZE(vrdma_create_ah_resp, 8);
VRDMA_ABI_OFF(vrdma_create_ah_resp, comp_mask, 0);
VRDMA_ABI_OFF(vrdma_create_ah_resp, ah_num, 4);

#undef VRDMA_ABI_OFF
#undef VRDMA_ABI_SIZE

#endif /* VRDMA_ABI_LAYOUT_H */
