/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_ud.h - the UD and GSI data path (vrdma_ud.c).
 */
#ifndef VRDMA_UD_H
#define VRDMA_UD_H

#include <linux/skbuff.h>

#include "rdma/vrdma-abi.h"
#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vt_wire.h"

static inline bool vrdma_qp_is_ud(struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* The QP sends through vrdma_ud_tx(): UD, GSI and UC (vrdma_uc.c). */
static inline bool vrdma_qp_ud_tx(struct vrdma_qp *qp)
{
	return vrdma_qp_is_ud(qp) || qp->ibqp.qp_type == IB_QPT_UC;
}

void vrdma_ud_create(struct vrdma_qp *qp);
void vrdma_ud_destroy(struct vrdma_qp *qp);
void vrdma_ud_kick(struct vrdma_qp *qp);
void vrdma_ud_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh);

#endif /* VRDMA_UD_H */
