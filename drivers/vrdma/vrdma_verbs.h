/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_verbs.h - verbs objects and the limits the device advertises.
 */
#ifndef VRDMA_VERBS_H
#define VRDMA_VERBS_H

#include <rdma/ib_verbs.h>

#include "rdma/vrdma-abi.h"	/* VRDMA_MAX_SGE, VRDMA_MAX_INLINE */

#define VRDMA_MAX_QP		(16 * 1024)
#define VRDMA_MAX_QP_WR		(16 * 1024)
#define VRDMA_MAX_CQ		(16 * 1024)
#define VRDMA_MAX_CQE		(64 * 1024)
#define VRDMA_MAX_MR		(64 * 1024)
#define VRDMA_MAX_PD		(16 * 1024)
#define VRDMA_MAX_SRQ		(4 * 1024)
#define VRDMA_MAX_AH		(64 * 1024)
#define VRDMA_MAX_RD_ATOMIC	16
#define VRDMA_MAX_FRMR_PAGES	512
#define VRDMA_MAX_MR_SIZE	(1ULL << 40)
#define VRDMA_MAX_MSG_SIZE	(1U << 31)

struct vrdma_ucontext {
	struct ib_ucontext ibuc;
};

struct vrdma_pd {
	struct ib_pd ibpd;
};

#endif /* VRDMA_VERBS_H */
