/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_uc.h - the UC data path (vrdma_uc.c): connected, unreliable.
 */
#ifndef VRDMA_UC_H
#define VRDMA_UC_H

#include <linux/skbuff.h>
#include <linux/spinlock.h>

#include "rdma/vrdma-abi.h"
#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vt_wire.h"

/*
 * A UC QP's connection (qp->uc), from RTR until RESET or destroy. The
 * sender's fields are under qp->uc_tx_lock, the receiver's under @lock.
 */
struct vrdma_uc {
	struct vrdma_route route;
	u32 dest_qpn;
	/* sender */
	u32 tx_psn;
	u32 tx_msg;
	/* receiver, from softirq */
	spinlock_t lock;
	bool dead;		/* the QP left RTR/RTS: place nothing */
	u32 rx_psn;		/* the PSN expected next */
	bool drop;		/* a packet was lost: discard until a SOM */
	bool in_msg;		/* a message is being placed */
	u8 op;			/* its wire opcode */
	u32 msg_len;
	u32 off;		/* bytes placed */
	u32 rkey;		/* WRITE: its target */
	u64 va;
	bool has_rqe;		/* @rqe taken (SRQ) or peeked (RQ) */
	struct vrdma_rqe rqe;
};

static inline bool vrdma_qp_is_uc(struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UC;
}

int vrdma_uc_connect(struct vrdma_qp *qp);
void vrdma_uc_start(struct vrdma_qp *qp);
void vrdma_uc_quiesce(struct vrdma_qp *qp);
void vrdma_uc_destroy(struct vrdma_qp *qp);
enum ib_wc_status vrdma_uc_send_one(struct vrdma_qp *qp,
				    const struct vrdma_sqe *s, u32 *lenp);
void vrdma_uc_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh);

#endif /* VRDMA_UC_H */
