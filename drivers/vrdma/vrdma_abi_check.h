/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_abi_check.h - build-time checks of the user/kernel ABI.
 *
 * The layout of uapi/rdma/vrdma-abi.h is fixed by VRDMA_UVERBS_ABI_VERSION:
 * a change to a size or an offset below breaks every installed provider.
 * The list is uapi/rdma/vrdma_abi_layout.h, shared with the provider;
 * here also what only the kernel can check. Included once, from
 * vrdma_verbs.c.
 */
#ifndef VRDMA_ABI_CHECK_H
#define VRDMA_ABI_CHECK_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <rdma/ib_verbs.h>

#include "rdma/vrdma-abi.h"
#include "rdma/vrdma_wqe.h"

#define VRDMA_ABI_CHECK(e)	static_assert(e, #e)

#include "rdma/vrdma_abi_layout.h"

/* vrdma_sqe_check() returns completion statuses, handed on as they are. */
VRDMA_ABI_CHECK((int)VRDMA_SQE_OK == (int)IB_WC_SUCCESS);
VRDMA_ABI_CHECK((int)VRDMA_SQE_LOC_LEN_ERR == (int)IB_WC_LOC_LEN_ERR);
VRDMA_ABI_CHECK((int)VRDMA_SQE_LOC_QP_OP_ERR == (int)IB_WC_LOC_QP_OP_ERR);

#undef VRDMA_ABI_CHECK

#endif /* VRDMA_ABI_CHECK_H */
