/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_dp.h - the RC data path: a QP's connection to the transport core.
 */
#ifndef VRDMA_DP_H
#define VRDMA_DP_H

#include <linux/hrtimer.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "rdma/vrdma-abi.h"
#include "vrdma.h"
#include "vt_core.h"

struct vrdma_qp;

/*
 * Messages a connection keeps track of at once, per direction: the sender
 * never has more unacknowledged messages than this, so the receiver's
 * message table (indexed by msg_id modulo this) cannot alias.
 */
#define VRDMA_DP_MSGS		256
#define VRDMA_DP_READS		16	/* VRDMA_MAX_RD_ATOMIC */

/* A send WQE the transport took: a private copy of the user-writable slot. */
struct vrdma_swqe {
	struct vrdma_sqe sqe;
	u32 len;		/* message bytes */
	u32 msg_id;
	u32 ssn;		/* SEND: the receive WQE it lands in */
	u8 state;		/* enum vrdma_swqe_state */
	u8 status;		/* enum ib_wc_status once done */
};

/* A sender-side message: a send WQE or a READ response we owe. */
struct vrdma_tmsg {
	u8 kind;		/* enum vrdma_tmsg_kind */
	u32 sq_idx;		/* VRDMA_TMSG_SQ: absolute SQ index */
	u32 rkey;		/* VRDMA_TMSG_READ_RESP: source */
	u64 va;
	u32 len;
	u32 req_msg_id;		/* the READ/atomic request it answers */
	u64 orig;		/* VRDMA_TMSG_ATOMIC_RESP: original value */
	/*
	 * VRDMA_TMSG_SQ READ/atomic request (else 0): its wire opcode, with
	 * rkey/va/len and the operands, since the WQE may complete (on its
	 * response) and its slot be reused before the request is acknowledged
	 * and can no longer be retransmitted.
	 */
	u8 req_op;
	struct vt_atomic atomic;
};

/* A receiver-side message being placed. */
struct vrdma_rmsg {
	u32 msg_id;
	bool valid;
	bool has_rqe;
	u8 op;			/* wire opcode */
	u8 status;		/* enum ib_wc_status for its completion */
	u32 len;
	u32 imm;
	bool with_imm;
	bool with_inv;		/* SEND: invalidate rkey when complete */
	bool se;		/* SE: its receive completion is solicited */
	u32 rkey;		/* READ/atomic request; SEND: rkey to invalidate */
	u64 va;
	struct vt_atomic atomic; /* atomic request operands */
	struct vrdma_rqe rqe;	/* SEND: receive WQE it lands in */
};

struct vrdma_rd_out {
	u32 msg_id;		/* our READ request */
	u32 sq_idx;
	bool used;
};

struct vrdma_xp {
	struct vrdma_qp *qp;
	spinlock_t lock;		/* everything below; BH-safe */
	struct vt_conn *c;
	struct hrtimer timer;
	u64 timer_at;			/* expiry the timer was last armed for */
	struct work_struct work;
	struct vrdma_route route;
	struct list_head stats_node;	/* vdev->conns, under conn_lock */
	u16 sport_base;
	u32 dest_qpn;
	bool dead;			/* QP left RTR/RTS: touch nothing */
	bool started;			/* RTS: the send queue runs */
	u8 error;			/* ib_wc_status that failed the QP */
	bool has_event;			/* raise @event when entering ERR */
	u8 event;			/* enum ib_event_type */
	u64 bp_until;			/* socket queue full: look again then */
	u64 bp_wait_ns;			/* current back-off of those looks */

	/*
	 * Responder that sent a fatal NACK (remote access, invalid request):
	 * it takes no more requests, answers each with the same NACK (also
	 * from ERR, so a lost NACK is repeated, not turned into a retry
	 * error at the requester) and enters ERR once the responses it owes
	 * for the requests before it are delivered.
	 */
	u8 resp_nack;			/* VT_NACK_* or 0 */
	u32 resp_nack_psn;

	/* sender */
	u32 tx_msg_next;		/* next message id */
	u32 tx_msg_acked;		/* messages acknowledged, in order */
	u32 ssn_next;			/* next send sequence number */
	u32 sq_taken;			/* SQ slots taken (absolute index) */
	struct vrdma_swqe *swqe;	/* [sq.num] */
	struct vrdma_tmsg tmsg[VRDMA_DP_MSGS];
	struct vrdma_rd_out rd_out[VRDMA_DP_READS];
	u32 rd_outstanding;
	/*
	 * A READ/atomic response is awaited: the QP fails with RETRY_EXC
	 * if the peer sends nothing until then (0: none awaited).
	 */
	u64 resp_deadline;
	u64 resp_timeout_ns;
	/* a remote failure waits in a WQE behind READs still answered */
	bool fail_marked;
	/* READ responses to queue: [rdq_head, rdq_tail) */
	struct vrdma_tmsg rdq[VRDMA_DP_READS];
	u32 rdq_head, rdq_tail;
	u32 rd_in;			/* READ requests taken, not yet queued */

	/* receiver */
	u32 rx_msg_next;		/* next message to complete in order */
	u32 rq_ssn_done;		/* receive WQEs completed */
	/* SRQ: WQEs taken in ssn order, [rq_ssn_done, srq_taken) */
	u32 srq_taken;
	struct vrdma_rqe srq_rqe[VRDMA_DP_MSGS];
	struct vrdma_rmsg rmsg[VRDMA_DP_MSGS];
};

int vrdma_dp_init(void);
void vrdma_dp_exit(void);
int vrdma_dp_connect(struct vrdma_qp *qp);
int vrdma_dp_start(struct vrdma_qp *qp);
void vrdma_dp_quiesce(struct vrdma_qp *qp);
bool vrdma_dp_failed(struct vrdma_qp *qp);
void vrdma_dp_destroy(struct vrdma_qp *qp);
void vrdma_dp_kick(struct vrdma_qp *qp);
void vrdma_dp_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh, const struct vt_ack *ack);

/* vrdma_stats.c */
void vrdma_stats_conn_add(struct vrdma_dev *vdev, struct vrdma_xp *xp);
void vrdma_stats_conn_del(struct vrdma_dev *vdev, struct vrdma_xp *xp);

#endif /* VRDMA_DP_H */
