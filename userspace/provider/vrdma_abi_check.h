/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrdma: build-time checks of the user/kernel ABI.
 *
 * The layout list is vrdma_abi_layout.h (uapi/rdma/, shared with the
 * kernel); here also what only the provider can check. Included once,
 * from vrdma.c.
 */
#ifndef VRDMA_PROVIDER_ABI_CHECK_H
#define VRDMA_PROVIDER_ABI_CHECK_H

#include <assert.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#include "vrdma-abi.h"
#include "vrdma_wqe.h"

#define VRDMA_ABI_CHECK(e)	static_assert(e, #e)

#include "vrdma_abi_layout.h"

/* vrdma_sqe_check() returns completion statuses, handed on as they are. */
VRDMA_ABI_CHECK((int)VRDMA_SQE_OK == (int)IBV_WC_SUCCESS);
VRDMA_ABI_CHECK((int)VRDMA_SQE_LOC_LEN_ERR == (int)IBV_WC_LOC_LEN_ERR);
VRDMA_ABI_CHECK((int)VRDMA_SQE_LOC_QP_OP_ERR == (int)IBV_WC_LOC_QP_OP_ERR);

#undef VRDMA_ABI_CHECK

#endif /* VRDMA_PROVIDER_ABI_CHECK_H */
