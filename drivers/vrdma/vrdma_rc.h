/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_rc.h - the RC data path: an RC QP's reliable connection, the
 * kernel shell around the transport core (drivers/vrdma/core).
 *
 * The core decides what to send, retransmit and acknowledge; the shell
 * owns skbs, the timer, the work item and the locks, in three files:
 *   vrdma_rc.c       connect, start, quiesce, destroy; the run loop that
 *                    the doorbell, the timer, the work and the receive
 *                    path share; failing the QP; module parameters
 *   vrdma_rc_req.c   the requester: taking SQ WQEs, building and sending
 *                    data packets (also the READ/atomic responses the
 *                    responder queued), ACK processing, READ/atomic
 *                    response placement, SQ completion
 *   vrdma_rc_resp.c  the responder: the receive check chain, placement
 *                    into MRs and receive WQEs, receive completion,
 *                    executing atomics, ACKs and NACK replay
 * Memory access goes through vrdma_mem.c (vrdma_mr_check, vrdma_sge_copy).
 *
 * Locks (in this order; never the reverse):
 *   qp->state_lock (mutex, verbs only) -> rc->lock (BH-safe spinlock:
 *   the core and every field of struct vrdma_rc_conn; taken by the
 *   doorbell, the receive softirq, the soft hrtimer and the work) ->
 *   qp->sq_lock / qp->rq_lock / srq->lock -> cq->lock;
 *   vdev->conn_lock -> rc->lock (counter reads, vrdma_stats.c).
 * rc->lock is taken with BHs off (the receive path and the timer run in
 * softirq); the ring and CQ locks with interrupts off (kernel consumers
 * post and poll from any context). Event and completion handlers are
 * called outside the ring and CQ locks.
 * A kernel consumer's completion handler runs under rc->lock and may
 * post again: posting never takes rc->lock from there (vrdma_rc_kick).
 */
#ifndef VRDMA_RC_H
#define VRDMA_RC_H

#include <linux/hrtimer.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "rdma/vrdma-abi.h"
#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vt_core.h"

/*
 * Messages a connection keeps track of at once, per direction: the sender
 * never has more unacknowledged messages than this, so the receiver's
 * message table (indexed by msg_id modulo this) cannot alias. A power of
 * two. 64: the three tables it sizes (tmsg, srq_rqe, rmsg) were 69 KB of
 * every QP at 256, and 64 B ib_send_bw runs as fast with 64 (A/B in
 * docs/benchmarks.md, "Memory").
 */
#define VRDMA_RC_MSGS		64
#define VRDMA_RC_READS		16	/* VRDMA_MAX_RD_ATOMIC */

enum vrdma_swqe_state {
	VRDMA_SW_FREE = 0,
	VRDMA_SW_QUEUED,	/* handed to the core, not yet acknowledged */
	VRDMA_SW_WAIT_RESP,	/* READ: request acknowledged, data pending */
	VRDMA_SW_DONE,
};

/* A send WQE the transport took: a private copy of the user-writable slot. */
struct vrdma_swqe {
	struct vrdma_sqe sqe;
	u32 len;		/* message bytes */
	u32 msg_id;
	u32 ssn;		/* SEND: the receive WQE it lands in */
	enum vrdma_swqe_state state;
	enum ib_wc_status status;	/* once done */
};

enum vrdma_tmsg_kind {
	VRDMA_TMSG_NONE = 0,
	VRDMA_TMSG_SQ,			/* a send WQE */
	VRDMA_TMSG_READ_RESP,		/* a READ response we owe */
	VRDMA_TMSG_ATOMIC_RESP,		/* an atomic response we owe */
};

/* A message we transmit: a send WQE or a READ/atomic response. */
struct vrdma_tmsg {
	enum vrdma_tmsg_kind kind;
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

/* A message we receive, being placed. */
struct vrdma_rmsg {
	u32 msg_id;
	bool valid;
	bool has_rqe;
	u8 op;			/* wire opcode */
	enum ib_wc_status status;	/* for its completion */
	u32 len;
	u32 imm;
	bool with_imm;
	bool with_inv;		/* SEND: invalidate rkey when complete */
	bool se;		/* SE: its receive completion is solicited */
	u32 rkey;		/* READ/atomic request; SEND: rkey to invalidate */
	u64 va;			/* request; READ/atomic response: rd_out slot */
	struct vt_atomic atomic; /* atomic request operands */
	struct vrdma_rqe rqe;	/* SEND: receive WQE it lands in */
};

/* One of our READ/atomic requests whose response is due. */
struct vrdma_rd_out {
	u32 msg_id;
	u32 sq_idx;
	bool used;
};

/*
 * The requester: our send queue and the messages we transmit, in msg_id
 * order (send WQEs, and the READ/atomic responses the responder queued
 * in rdq, interleaved as they were taken).
 */
struct vrdma_rc_req {
	u32 msg_next;			/* next message id */
	u32 msg_acked;			/* messages acknowledged, in order */
	u32 ssn_next;			/* next send sequence number */
	u32 sq_taken;			/* SQ slots taken (absolute index) */
	/*
	 * The SQ as the last look left it (vrdma_req_sq_owed): the
	 * consumer index then, and whether it stopped at a WQE it could
	 * not take yet.
	 */
	u32 sq_seen;
	bool sq_blocked;
	struct vrdma_swqe *swqe;	/* [sq.num] */
	struct vrdma_tmsg tmsg[VRDMA_RC_MSGS];
	struct vrdma_rd_out rd_out[VRDMA_RC_READS];
	u32 rd_outstanding;
	/*
	 * A READ/atomic response is awaited: the QP fails with RETRY_EXC
	 * if the peer sends nothing until then (0: none awaited).
	 */
	u64 resp_deadline;
	u64 resp_timeout_ns;
	/* a remote failure waits in a WQE behind READs still answered */
	bool fail_marked;
	/*
	 * Doorbell coalescing (tx_coalesce_us, vrdma_rc_defer()): the
	 * last look at the SQ for new WQEs, the last data received, the
	 * time a deferred doorbell's look is due (0: none), and the
	 * back-off after holds that gathered nothing: no hold until
	 * db_off_until, the next back-off db_off_ns (0: the first).
	 */
	u64 db_last;
	u64 db_rx_at;
	u64 db_due;
	u64 db_off_until;
	u64 db_off_ns;
	u8 db_unpaid;		/* holds in a row that gathered nothing */
	/* packets of this run not sent yet: empty outside rc->lock */
	struct vrdma_batch batch;
	/* the payload's MR, kept for one run's packets (vrdma_rc_run_at()) */
	struct vrdma_mr_hint mr_hint;
};

/* The responder: the messages we receive and the responses we owe. */
struct vrdma_rc_resp {
	/*
	 * A fatal NACK sent (remote access, invalid request): the responder
	 * takes no more requests, answers each with the same NACK (also
	 * from ERR, so a lost NACK is repeated, not turned into a retry
	 * error at the requester) and enters ERR once the responses it owes
	 * for the requests before it are delivered.
	 */
	enum vt_nack_code nack;		/* or VT_NACK_NONE */
	u32 nack_psn;
	/* READ/atomic responses for the requester to send: [rdq_head, rdq_tail) */
	struct vrdma_tmsg rdq[VRDMA_RC_READS];
	u32 rdq_head, rdq_tail;
	u32 rd_in;			/* READ requests taken, not yet queued */
	u32 msg_next;			/* next message to complete in order */
	u32 ssn_done;			/* receive WQEs completed */
	/*
	 * SRQ: WQEs taken in ssn order, [ssn_done, srq_taken); the table
	 * (VRDMA_RC_MSGS entries) exists only for a QP with an SRQ.
	 */
	u32 srq_taken;
	struct vrdma_rqe *srq_rqe;
	struct vrdma_rmsg rmsg[VRDMA_RC_MSGS];
	/* a WRITE's MR, kept for one receive run (vrdma_rc_rx_conn()) */
	struct vrdma_mr_hint mr_hint;
};

/* Moves the QP to ERR; 0, or -EAGAIN to be called again (vrdma_qp.c). */
typedef int (*vrdma_rc_fail_fn)(struct vrdma_qp *qp);

/* An RC QP's reliable connection (qp->rc), from RTR until RESET/destroy. */
struct vrdma_rc_conn {
	struct vrdma_qp *qp;
	spinlock_t lock;		/* everything below; BH-safe */
	struct hrtimer timer;
	u64 timer_end;			/* the latest the armed timer fires */
	u64 retx_seen;			/* retransmissions not proven needless */
	u64 precise_base;		/* and before the precise timers began */
	u64 precise_until;		/* loss timers without slack until */
	struct work_struct work;
	vrdma_rc_fail_fn qp_fail;	/* the work's way to ERR */
	struct vrdma_route route;
	struct list_head stats_node;	/* vdev->conns, under conn_lock */
	u32 dest_qpn;
	bool dead;			/* QP left RTR/RTS: touch nothing */
	bool started;			/* RTS: the send queue runs */
	enum ib_wc_status error;	/* failed the QP (0: not failed) */
	bool has_event;			/* raise @event when entering ERR */
	enum ib_event_type event;
	u64 bp_until;			/* socket queue full: look again then */
	u64 bp_wait_ns;			/* current back-off of those looks */
	struct vrdma_rc_req req;
	struct vrdma_rc_resp resp;
	struct sk_buff_head txq;	/* built under lock, sent after it */
	atomic_t rx_steered;		/* rx_steer: queued or being placed */
	int tx_cpu;			/* rx_steer: the CPU of the last user doorbell */
	/*
	 * The transport core's state, last and in the same allocation: one
	 * zeroed block per connection (28 KB, an order-3 page block) instead
	 * of two (32 + 16 KB).
	 */
	struct vt_conn vt;
};

static inline bool vrdma_op_is_atomic(u8 op)
{
	return op == VRDMA_OP_ATOMIC_CMP_AND_SWP ||
	       op == VRDMA_OP_ATOMIC_FETCH_AND_ADD;
}

/* READ and atomics: complete on their response, count in max_rd_atomic */
static inline bool vrdma_op_has_resp(u8 op)
{
	return op == VRDMA_OP_RDMA_READ || vrdma_op_is_atomic(op);
}

static inline struct vrdma_swqe *vrdma_rc_swqe(struct vrdma_rc_conn *rc,
					       u32 sq_idx)
{
	return &rc->req.swqe[sq_idx & (rc->qp->sq.num - 1)];
}

/* vrdma_rc.c: life cycle (called by vrdma_qp.c) and the run loop */
int vrdma_rc_init(void);
void vrdma_rc_exit(void);
int vrdma_rc_connect(struct vrdma_qp *qp, vrdma_rc_fail_fn qp_fail);
int vrdma_rc_start(struct vrdma_qp *qp);
void vrdma_rc_quiesce(struct vrdma_qp *qp);
bool vrdma_rc_failed(struct vrdma_qp *qp);
void vrdma_rc_destroy(struct vrdma_qp *qp);
void vrdma_rc_kick(struct vrdma_qp *qp);

/*
 * The connection the receive path holds across the packets of one skb (a
 * batch): one lookup, one lock, one clock read and one sender run per run
 * of packets for the same QP instead of per packet. Locked (and under
 * RCU) while rc is set; vrdma_rc_rx_flush() ends it.
 */
struct vrdma_rc_rxb {
	struct vrdma_rc_conn *rc;
	u32 qpn;
	u32 data;		/* data packets of the run */
	u64 now;
};

void vrdma_rc_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh, const struct vt_ack *ack,
		 struct vrdma_rc_rxb *b);
void vrdma_rc_rx_flush(struct vrdma_rc_rxb *b);
struct vrdma_rc_conn *vrdma_rc_lookup(struct vrdma_dev *vdev, u32 qpn);
bool vrdma_rc_run_at(struct vrdma_rc_conn *rc, u64 now, bool look_sq);
void vrdma_rc_fail(struct vrdma_rc_conn *rc, enum ib_wc_status status);
u64 vrdma_rc_now(void);
bool vrdma_rc_zcopy(void);
/* also the UC data path's (vrdma_uc.c) */
int vrdma_rc_route(struct vrdma_qp *qp, struct vrdma_route *r);
u32 vrdma_rc_payload(struct vrdma_qp *qp, int family);
bool vrdma_route_from_peer(const struct vrdma_route *r,
			   const struct sk_buff *skb);

/* vrdma_rc_grave.c: what a closed connection still answers */
struct vrdma_verbs_dev;
bool vrdma_grave_ack(struct vrdma_dev *vdev, struct vrdma_route *r, u32 qpn,
		     u32 dest_qpn, u32 epsn, const struct vt_data_hdr *dh);
bool vrdma_grave_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		    const struct vt_data_hdr *dh);
void vrdma_grave_add(struct vrdma_qp *qp, struct vrdma_rc_conn *rc);
void vrdma_graves_init(struct vrdma_verbs_dev *vd);
void vrdma_graves_cleanup(struct vrdma_verbs_dev *vd);

/* vrdma_rc_req.c: the requester */
void vrdma_req_take_sq(struct vrdma_rc_conn *rc);
bool vrdma_req_sq_owed(const struct vrdma_rc_conn *rc);
bool vrdma_req_sq_holdable(const struct vrdma_rc_conn *rc);
void vrdma_req_take_reads(struct vrdma_rc_conn *rc);
void vrdma_req_xmit_data(struct vrdma_rc_conn *rc,
			 const struct vt_tx_decision *d);
void vrdma_req_fail_oldest(struct vrdma_rc_conn *rc,
			   enum ib_wc_status status);
enum ib_wc_status vrdma_req_err_status(int err);
void vrdma_req_resp_expired(struct vrdma_rc_conn *rc);
void vrdma_req_rx_ack(struct vrdma_rc_conn *rc, const struct vt_ack *ack,
		      u64 now);
enum vt_nack_code vrdma_req_resp_first(struct vrdma_rc_conn *rc,
				       const struct vt_data_hdr *h,
				       struct vrdma_rmsg *rm,
				       const struct sk_buff *skb);
enum ib_wc_status vrdma_req_resp_place(struct vrdma_rc_conn *rc,
				       const struct vt_data_hdr *h,
				       struct vrdma_rmsg *rm,
				       struct vrdma_mr *mr,
				       const struct sk_buff *skb);
void vrdma_req_resp_done(struct vrdma_rc_conn *rc, struct vrdma_rmsg *rm);

/* vrdma_rc_resp.c: the responder */
void vrdma_resp_rx_data(struct vrdma_rc_conn *rc, struct sk_buff *skb,
			const struct vt_data_hdr *h, u64 now);
void vrdma_resp_xmit_ack_on(struct vrdma_dev *vdev, struct vrdma_route *r,
			    u32 qpn, const struct vt_ack *a);
void vrdma_resp_send_ack(struct vrdma_rc_conn *rc, u64 now);
void vrdma_resp_send_ack_first(struct vrdma_rc_conn *rc, u64 now,
			       u16 entropy);
bool vrdma_resp_short_owed(const struct vrdma_rc_conn *rc);
bool vrdma_resp_ack_first(const struct vrdma_rc_conn *rc,
			  const struct vt_tx_decision *d);
void vrdma_resp_replay_nack(struct vrdma_rc_conn *rc,
			    const struct vt_data_hdr *h);
void vrdma_resp_fail_check(struct vrdma_rc_conn *rc);
void vrdma_resp_flush_srq(struct vrdma_rc_conn *rc);

#endif /* VRDMA_RC_H */
