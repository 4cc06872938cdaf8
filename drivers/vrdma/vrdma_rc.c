// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rc.c - an RC QP's reliable connection: its life cycle (connect at
 * RTR, start at RTS, quiesce, destroy), the run loop that the doorbell,
 * the receive softirq, the soft hrtimer and the work item share, the
 * receive entry point that finds the connection of a packet, failing the
 * QP, and the module parameters of new connections. The requester and
 * responder live in vrdma_rc_req.c and vrdma_rc_resp.c; vrdma_rc.h has
 * the map and the lock order.
 *
 * Calls go one way: vrdma_qp.c drives the connection through the
 * vrdma_rc_* entry points; the connection reaches the QP layer only
 * through the qp_fail callback it was given at connect.
 */
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/stringify.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"

#define VRDMA_RC_BUDGET		64	/* packets per run of the sender */
#define VRDMA_RC_CLOCK_EVERY	8	/* packets sent per clock read */
#define VRDMA_RC_BP_POLL_NS	20000	/* back-pressure: look again after, */
#define VRDMA_RC_BP_POLL_MAX_NS	1000000	/* doubling up to this */
#define VRDMA_RC_RESP_MIN_NS	(8 * NSEC_PER_SEC)
#define VRDMA_RC_PRECISE_NS	NSEC_PER_SEC	/* precise loss timers after a retransmission */
#define VRDMA_RC_LATE_NS	250000	/* a timer this late past its slack: a stall */
#define VRDMA_RC_HOLD_UNPAID	3	/* holds in a row that gathered nothing, */
#define VRDMA_RC_HOLD_OFF	64	/* then none for this many tx_coalesce_us */

static struct workqueue_struct *vrdma_rc_wq;

static char *cc = "swift";
module_param(cc, charp, 0644);
MODULE_PARM_DESC(cc, "congestion control of new RC QPs: swift (default), dcqcn, gbn (Soft-RoCE-like baseline)");

static uint swift_target_us = VT_VM_SWIFT_TARGET_US;
module_param(swift_target_us, uint, 0644);
MODULE_PARM_DESC(swift_target_us, "Swift target queueing delay, us (default "
		 __stringify(VT_VM_SWIFT_TARGET_US) ")");

static uint swift_compete_rtts;
module_param(swift_compete_rtts, uint, 0644);
MODULE_PARM_DESC(swift_compete_rtts, "Swift competitive mode next to loss-based TCP: RTTs of a growing standing queue with the window at its floor before the flow turns loss-based; 0: off (default, experimental)");

static uint tx_defer = 16;
module_param(tx_defer, uint, 0644);
MODULE_PARM_DESC(tx_defer, "RC packets in flight: new ones wait until this many (at most half the window) fit, one batch per ACK (default 16); 0: off");

/*
 * A stream of small messages posted one at a time (perftest's ib_send_bw,
 * a producer of small records) costs a system call, a run of the sender
 * and an skb through both stacks per message: on a veth the whole round
 * trip completes inside each doorbell, so nothing is ever in flight for
 * later posts to join. Held back, the doorbell leaves its WQEs untaken;
 * the provider skips the doorbells of the WQEs posted behind them (their
 * slot is not VRDMA_WQE_TAKEN) but rings again at VRDMA_SQ_DB_EVERY of
 * them, and that doorbell (or the connection's timer, for a stream's
 * tail) sends them all as one batch, as TCP's autocorking joins small
 * writes. Only while earlier messages are in flight, where the last look
 * at the SQ was within 4x the delay and no data came in within that time
 * (a request-response exchange, a ping-pong, answers what it receives
 * and is not held), where holds have been gathering batches
 * (vrdma_rc_hold_end()), and only for single-packet SENDs and WRITEs.
 */
static uint tx_coalesce_us = 50;
module_param(tx_coalesce_us, uint, 0644);
MODULE_PARM_DESC(tx_coalesce_us, "a user RC QP's doorbell for a small SEND or WRITE posted while earlier messages are in flight and no data came in since is held back at most this many us (or until VRDMA_SQ_DB_EVERY WQEs wait), so that the messages leave together (default 50); 0: off");

static uint ack_delay_us = VT_VM_ACK_DELAY_US;
module_param(ack_delay_us, uint, 0644);
MODULE_PARM_DESC(ack_delay_us, "longest delay of a coalesced ACK, us (default "
		 __stringify(VT_VM_ACK_DELAY_US) ")");

static uint lazy_ack_delay_us = VT_VM_LAZY_ACK_DELAY_US;
module_param(lazy_ack_delay_us, uint, 0644);
MODULE_PARM_DESC(lazy_ack_delay_us, "longest delay of the ACK of unsignaled SENDs and WRITEs, which nobody waits for, us (default "
		 __stringify(VT_VM_LAZY_ACK_DELAY_US) ")");

/*
 * A QP's packets leave from one UDP source port per path slot, so that a
 * fabric's ECMP spreads them. A flow-queueing qdisc (fq_codel, fq) on the
 * way counts each port as a flow: next to one TCP stream, four paths take
 * about four fifths of a shared link. One path is one flow there.
 */
static uint paths = 4;
module_param(paths, uint, 0644);
MODULE_PARM_DESC(paths, "UDP source ports (path entropies) a new RC QP sprays over, 1-16 (default 4); 1: one flow to a flow-queueing qdisc, as one TCP stream");

static bool fill_mtu = true;
module_param(fill_mtu, bool, 0644);
MODULE_PARM_DESC(fill_mtu, "RC QPs whose path MTU is the port's active MTU send packets as large as the netdev MTU allows (default Y); N: path MTU sized");

/*
 * Payload of user MRs leaves as referenced pages: no zeroed buffer and no
 * copy on the sending CPU, which one QP's traffic keeps the busiest.
 */
static bool zcopy = true;
module_param(zcopy, bool, 0644);
MODULE_PARM_DESC(zcopy, "RC packets carry payload from user MRs as page fragments, without a copy (default Y); N: copy");

/*
 * ECN-capable transport: an AQM that marks (fq_codel, the default qdisc of
 * a systemd host's NIC queues; fq_codel or fq with ECN on a shared
 * bottleneck) marks an RC packet CE instead of dropping it, and Swift
 * answers the marks (swift_use_ecn). UD and UC, which have no congestion
 * control, stay Not-ECT.
 */
static bool ecn = true;
module_param(ecn, bool, 0644);
MODULE_PARM_DESC(ecn, "RC packets are sent ECT(0), so an ECN-marking qdisc marks them instead of dropping (default Y)");

bool vrdma_rc_zcopy(void)
{
	return READ_ONCE(zcopy);
}

static u32 vrdma_rc_cc(void)
{
	if (sysfs_streq(cc, "dcqcn"))
		return VT_CC_DCQCN;
	if (sysfs_streq(cc, "gbn"))
		return VT_CC_GBN;
	return VT_CC_SWIFT;
}

u64 vrdma_rc_now(void)
{
	return ktime_get_ns();
}

static struct vrdma_rc_conn *qp_rc(struct vrdma_qp *qp)
{
	return READ_ONCE(qp->rc);
}

/*
 * The connection failed with @status (the first failure is kept): the
 * work moves the QP to ERR, which flushes what is left.
 */
void vrdma_rc_fail(struct vrdma_rc_conn *rc, enum ib_wc_status status)
{
	const struct vt_conn *c = &rc->vt;

	lockdep_assert_held(&rc->lock);
	if (!rc->error) {
		rc->error = status ? status : IB_WC_GENERAL_ERR;
		ibdev_info(&rc->qp->vdev->ibdev,
			   "qp %u failed: %s; snd_una %u snd_nxt %u inflight %u lost %u retries %u rto %llu ns, rx epsn %u, msgs tx %u/%u rx %u\n",
			   rc->qp->ibqp.qp_num, ib_wc_status_msg(rc->error),
			   c->tx.snd_una, c->tx.snd_nxt, c->tx.inflight,
			   c->tx.lost, c->tx.retries, vt_tx_rto(c), c->rx.epsn,
			   rc->req.msg_acked, rc->req.msg_next,
			   rc->resp.msg_next);
	}
	queue_work(vrdma_rc_wq, &rc->work);
}

/* Send what a locked section queued; BH is off. */
static void vrdma_rc_tx_out(struct vrdma_rc_conn *rc, struct sk_buff_head *q)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(q)))
		vrdma_net_xmit_now(rc->qp->vdev, &rc->route,
				   *(__be16 *)skb->cb, skb);
}

/*
 * Unlock, then send what the section built: the transmit (IP, UDP, the
 * netdev and, on a veth, the peer's receive path) runs unlocked, so a
 * doorbell or a receive softirq on another CPU need not wait for it.
 */
static void vrdma_rc_unlock(struct vrdma_rc_conn *rc)
{
	struct sk_buff_head q;

	__skb_queue_head_init(&q);
	skb_queue_splice_init(&rc->txq, &q);
	spin_unlock(&rc->lock);
	vrdma_rc_tx_out(rc, &q);
}

static void vrdma_rc_unlock_bh(struct vrdma_rc_conn *rc)
{
	vrdma_rc_unlock(rc);
	local_bh_enable();
}

/*
 * The loss timers turn precise after a retransmission, for a second, and
 * back as soon as every retransmission since has proven needless (an ACK
 * showed that the first copy had arrived: VT_STAT_SPURIOUS). A ping-
 * pong's tail loss probe that fired early, its ACK behind a busy vCPU,
 * had left them precise: each message then programmed the local APIC,
 * and once ACKed the timer still fired, an interrupt and a run of the
 * sender for nothing (docs/benchmarks.md, "Timers in a ping-pong").
 */
static void vrdma_rc_precise(struct vrdma_rc_conn *rc, u64 now)
{
	u64 real = rc->vt.stats[VT_STAT_RETX_PKTS] -
		   rc->vt.stats[VT_STAT_SPURIOUS];

	if (real > rc->retx_seen) {
		if (now >= rc->precise_until)
			rc->precise_base = rc->retx_seen;
		rc->precise_until = now + VRDMA_RC_PRECISE_NS;
	} else if (real <= rc->precise_base) {
		rc->precise_until = 0;
	}
	rc->retx_seen = real;
}

/*
 * Arm the timer for the core's next deadline. A timer already queued to
 * fire by the latest moment every deadline allows stays: firing early
 * only runs the sender once more, which re-arms it, while reprogramming
 * the clock event for every packet (the deadlines move with each ACK)
 * costs a clock read and a timer write each time.
 *
 * On a connection that has not retransmitted for a second (retransmissions
 * proven needless not counted: vrdma_rc_precise()), the loss
 * timers (RTO, tail loss probe, a READ's response timeout) get a tick of
 * slack, as TCP's jiffies timers have: the timer may then fire from the
 * next tick instead of its own clock event. Armed after nearly every
 * message of a ping-pong, a precise one reprogrammed the local APIC each
 * time and, once the ACK had come, fired for nothing (an emulated device
 * access and an interrupt each under TCG; docs/benchmarks.md, "Where a
 * ping-pong's time goes"). Where packets are being lost, the timers
 * are precise again: there a tail loss found a tick late cost the
 * ping-pong's p99 2.5-4x at 5% loss. A lazy ACK hold has half its length
 * (vt_rx_ack_slack()). The other deadlines (ACK delay, pacing, RACK's
 * reorder window, back-pressure) always keep their time.
 */
static void vrdma_rc_arm(struct vrdma_rc_conn *rc, u64 now)
{
	/*
	 * Held back by a full socket queue, the sender's own deadlines
	 * (send now, RTO) wait for the next look at the queue: firing for
	 * them would only find it full again, a timer storm that starves
	 * the softirqs which drain the queue.
	 */
	u64 fine = rc->bp_until ? rc->bp_until : vt_tx_fine_wakeup(&rc->vt);
	u64 loss = rc->bp_until ? VT_NEVER : vt_tx_loss_wakeup(&rc->vt);
	u64 ack = vt_rx_next_wakeup(&rc->vt);
	u64 ack_slack = vt_rx_ack_slack(&rc->vt);
	u64 w, latest;

	/*
	 * A failed connection's deadlines stay where they were, in the
	 * past: armed, the soft hrtimer would fire again at once, forever
	 * (a soft lockup on one CPU, where the work item that fails the QP
	 * never got to run). The work item takes it from here.
	 */
	if (rc->error || rc->dead)
		return;
	if (rc->req.db_due)
		fine = min(fine, rc->req.db_due);
	if (rc->req.resp_deadline)
		loss = min(loss, rc->req.resp_deadline);
	w = min3(fine, loss, ack);
	if (w == VT_NEVER)
		return;
	/* the latest the timer may fire and still serve every deadline */
	vrdma_rc_precise(rc, now);
	latest = min(fine, ack_slack ? ack + ack_slack : ack);
	if (loss != VT_NEVER)
		latest = min(latest, now >= rc->precise_until ?
					     loss + TICK_NSEC : loss);
	/*
	 * A queued timer that fires by then serves them all, even one that
	 * is due before it: each may be served that late. Moved for every
	 * new deadline instead, it was armed twice a READ in a ping-pong
	 * (the request's loss timers, the held ACK of its response), each
	 * time programming the local APIC (docs/benchmarks.md, "The READ
	 * ping-pong").
	 */
	if (hrtimer_is_queued(&rc->timer) && rc->timer_end <= latest)
		return;
	rc->timer_end = latest;
	hrtimer_start_range_ns(&rc->timer, ns_to_ktime(w), latest - w,
			       HRTIMER_MODE_ABS_SOFT);
}

/*
 * TX back-pressure: the namespace's packets still queued below the socket
 * (qdisc, driver ring, a veth peer's backlog) are at their limit. Send
 * nothing more now and look again shortly (backing off to 1 ms); the
 * sender's deadlines wait for that look (vrdma_rc_arm), the receive
 * side's ACKs do not. True while blocked.
 */
static bool vrdma_rc_blocked(struct vrdma_rc_conn *rc, u64 now)
{
	if (!vrdma_net_tx_busy(rc->qp->vdev, &rc->route)) {
		rc->bp_wait_ns = 0;
		return false;
	}
	if (vt_tx_idle(&rc->vt))
		return true;
	/* one count per wait */
	if (!rc->bp_wait_ns)
		vrdma_count(rc->qp->vdev, VRDMA_CNT_TX_BLOCKED, 1);
	rc->bp_wait_ns = rc->bp_wait_ns ?
			 min_t(u64, rc->bp_wait_ns * 2,
			       VRDMA_RC_BP_POLL_MAX_NS) :
			 VRDMA_RC_BP_POLL_NS;
	rc->bp_until = now + rc->bp_wait_ns;
	return true;
}

/*
 * The timer is due since well before @now, past its slack (it is running
 * late, or is queued and overdue): this CPU did not run for a while, and
 * an ACK may wait behind the stall. The core puts a timeout off once
 * (vt_tx_timer_late()). A timer within its slack is on time: the loss
 * timers are served late on purpose (vrdma_rc_arm()).
 */
static void vrdma_rc_late(struct vrdma_rc_conn *rc, u64 now)
{
	if (now > rc->timer_end + VRDMA_RC_LATE_NS)
		vt_tx_timer_late(&rc->vt, now);
}

/*
 * A doorbell hold ends with this look at the SQ, which took @taken WQEs.
 * It paid if it gathered a batch: the provider's ring at
 * VRDMA_SQ_DB_EVERY WQEs, or half that many by the timer. One that
 * gathered less held a message back for nothing (a short burst, a
 * request in a few messages): after VRDMA_RC_HOLD_UNPAID of them in a row,
 * no hold for a while, twice as long each time (up to a second) until
 * one pays again, so that such a pattern pays the delay rarely, not
 * once a message, while a stream keeps its batches.
 */
static void vrdma_rc_hold_end(struct vrdma_rc_conn *rc, u64 now, u32 taken)
{
	struct vrdma_rc_req *req = &rc->req;
	u64 ns = (u64)READ_ONCE(tx_coalesce_us) * NSEC_PER_USEC;

	req->db_due = 0;
	if (taken >= VRDMA_SQ_DB_EVERY / 2) {
		req->db_unpaid = 0;
		req->db_off_ns = 0;
		return;
	}
	if (++req->db_unpaid < VRDMA_RC_HOLD_UNPAID)
		return;
	req->db_unpaid = VRDMA_RC_HOLD_UNPAID;
	req->db_off_ns = req->db_off_ns ?
			 min_t(u64, req->db_off_ns * 2, NSEC_PER_SEC) :
			 VRDMA_RC_HOLD_OFF * ns;
	req->db_off_until = now + req->db_off_ns;
	vrdma_count(rc->qp->vdev, VRDMA_CNT_TX_DB_BACKOFF, 1);
}

/*
 * Runs the sender with rc->lock held: timers, owed ACKs, new WQEs, then
 * the core's send decisions, at most a budget of packets. It runs where
 * the event happens (the doorbell system call, the receive softirq, the
 * soft hrtimer), so no thread wakeup sits between an event and its packet.
 * New WQEs are taken where @look_sq says so (a doorbell, the work) or
 * where this run owes the SQ a look (vrdma_req_sq_owed()).
 * Returns true when the budget ran out and more may be sent.
 */
bool vrdma_rc_run_at(struct vrdma_rc_conn *rc, u64 now, bool look_sq)
{
	struct vt_tx_decision d vrdma_noinit;	/* vt_tx_poll() clears it */
	bool ack_after = false;
	int n;

	lockdep_assert_held(&rc->lock);
	if (rc->dead)
		return false;
	if (now >= vt_tx_next_wakeup(&rc->vt)) {
		if (hrtimer_is_queued(&rc->timer))
			vrdma_rc_late(rc, now);
		vt_tx_on_timer(&rc->vt, now);
	}
	if (vt_rx_ack_due(&rc->vt, now)) {
		if (vrdma_resp_short_owed(rc))
			ack_after = true;
		else
			vrdma_resp_send_ack(rc, now);
	}
	if (rc->req.resp_deadline && now >= rc->req.resp_deadline)
		vrdma_req_resp_expired(rc);
	vrdma_req_take_reads(rc);
	if (rc->req.db_due && now >= rc->req.db_due)
		look_sq = true;		/* a deferred doorbell's */
	if (look_sq)
		rc->req.db_last = now;
	if (look_sq || vrdma_req_sq_owed(rc)) {
		u32 taken = rc->req.sq_taken;

		vrdma_req_take_sq(rc);
		if (rc->req.db_due)
			vrdma_rc_hold_end(rc, now, rc->req.sq_taken - taken);
	}

	rc->bp_until = 0;
	vrdma_mr_hint_clear(&rc->req.mr_hint);
	for (n = 0; n < VRDMA_RC_BUDGET && !rc->error; n++) {
		/* a clock read per packet is costly where the clock is emulated */
		if (n && !(n % VRDMA_RC_CLOCK_EVERY))
			now = vrdma_rc_now();
		/*
		 * The socket's charge grows as batches leave: a packet that
		 * joins an open batch needs no look (each packet looked for
		 * 28 kernel instructions per KB of a 64 KB WRITE). A batch
		 * sent for a path change is seen a batch late, at most one
		 * batch past the limit.
		 */
		if ((!n || !rc->req.batch.skb) && vrdma_rc_blocked(rc, now))
			break;
		vt_tx_poll(&rc->vt, now, &d);
		if (d.action == VT_TX_SEND || d.action == VT_TX_RETX) {
			if (vrdma_resp_ack_first(rc, &d)) {
				ack_after = false;
				vrdma_resp_send_ack_first(rc, now, d.entropy);
			}
			vrdma_req_xmit_data(rc, &d);
			if (ack_after) {
				ack_after = false;
				vrdma_resp_send_ack(rc, now);
			}
			continue;
		}
		if (d.action == VT_TX_ERROR)
			vrdma_req_fail_oldest(rc,
					      vrdma_req_err_status(d.error));
		break;
	}
	/*
	 * Data went out while an ACK of the peer's data is held back: the
	 * ACK goes with it, as a reply would carry it, and a request-response
	 * exchange waits on no ACK timer. It leaves after the data: the
	 * peer's process waits for our data, not for the ACK of an
	 * unsignaled message, and placed first the ACK put its whole receive
	 * path (~20 us a round trip under TCG) in front of the reply
	 * (docs/benchmarks.md, "Lazy ACKs"). In the data's skb where it fits.
	 */
	if ((n || ack_after) && vt_rx_ack_pending(&rc->vt))
		vrdma_resp_send_ack(rc, now);
	vrdma_batch_send(rc->qp->vdev, &rc->route, &rc->req.batch);
	vrdma_rc_arm(rc, now);
	if (n == VRDMA_RC_BUDGET || rc->error)
		queue_work(vrdma_rc_wq, &rc->work);
	return n == VRDMA_RC_BUDGET;
}

/* A run for a doorbell, the work or RTS: new WQEs are looked for. */
static bool vrdma_rc_run(struct vrdma_rc_conn *rc)
{
	return vrdma_rc_run_at(rc, vrdma_rc_now(), true);
}

/*
 * Process context: the rest of a run that used up its budget, and the
 * transition to ERR after a failure.
 */
static void vrdma_rc_work(struct work_struct *work)
{
	struct vrdma_rc_conn *rc = container_of(work, struct vrdma_rc_conn,
						work);
	struct vrdma_qp *qp = rc->qp;
	enum ib_event_type event;
	bool error, has_event;

	spin_lock_bh(&rc->lock);
	if (!rc->error)
		vrdma_rc_run(rc);
	error = rc->error && !rc->dead;
	has_event = rc->has_event;
	event = rc->event;
	vrdma_rc_unlock_bh(rc);

	/*
	 * modify_qp(RESET) holds state_lock while it waits for this work:
	 * the QP layer never blocks on it, we come back instead.
	 */
	if (!error)
		return;
	if (rc->qp_fail(qp) == -EAGAIN) {
		queue_work(vrdma_rc_wq, &rc->work);
		return;
	}
	if (has_event && qp->ibqp.event_handler) {
		struct ib_event ev = {
			.device = qp->ibqp.device,
			.element.qp = &qp->ibqp,
			.event = event,
		};

		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/* A soft hrtimer: runs in softirq context like the receive path. */
static enum hrtimer_restart vrdma_rc_timer(struct hrtimer *t)
{
	struct vrdma_rc_conn *rc = container_of(t, struct vrdma_rc_conn,
						timer);

	u64 now = vrdma_rc_now();

	vrdma_count(rc->qp->vdev, VRDMA_CNT_TIMER_RUNS, 1);
	spin_lock(&rc->lock);
	vrdma_rc_late(rc, now);
	vrdma_rc_run_at(rc, now, false);
	vrdma_rc_unlock(rc);
	return HRTIMER_NORESTART;
}

/*
 * Hold this doorbell back (tx_coalesce_us)? Its WQEs then wait for the
 * provider's next doorbell or the timer, which vrdma_rc_run_at() turns
 * into a look at the SQ.
 */
static bool vrdma_rc_defer(struct vrdma_rc_conn *rc, u64 now)
{
	u64 ns = (u64)READ_ONCE(tx_coalesce_us) * NSEC_PER_USEC;
	struct vrdma_rc_req *req = &rc->req;

	if (!ns || rc->error)
		return false;
	/*
	 * A stream: the last look was recent, no data came in lately (an
	 * exchange answers what it receives, often in more than one
	 * message: UCX's synchronous send acknowledges, then replies),
	 * holds have been paying (vrdma_rc_hold_end()), and messages are
	 * still in flight, whose ACK will run the sender (a process that
	 * waits for each completion before its next post has none: its
	 * messages are never held). Held already, the provider's ring at
	 * VRDMA_SQ_DB_EVERY WQEs ends the hold.
	 */
	if (!req->db_due &&
	    (now - req->db_rx_at < 4 * ns || now < req->db_off_until ||
	     !req->db_last || now - req->db_last >= 4 * ns ||
	     req->sq_taken == READ_ONCE(rc->qp->sq.cons)))
		return false;
	if (!vrdma_req_sq_holdable(rc))
		return false;
	if (req->db_due)
		return true;		/* the timer looks then */
	req->db_due = now + ns;
	vrdma_count(rc->qp->vdev, VRDMA_CNT_TX_DB_DEFERRED, 1);
	vrdma_rc_arm(rc, now);
	return true;
}

/* The doorbell: new send WQEs (or a new state) for the sender. */
void vrdma_rc_kick(struct vrdma_qp *qp)
{
	struct vrdma_rc_conn *rc = qp_rc(qp);
	u64 now;

	if (!rc || !READ_ONCE(rc->started))
		return;
	/*
	 * A user doorbell (a system call, never inside our lock) waits for
	 * the lock: its holder is a short run on another CPU, typically the
	 * receive softirq answering the peer, and handing over to the work
	 * would put a thread wakeup between the post and its packet. A
	 * kernel consumer may post from hard interrupt context, or from a
	 * completion handler that we call with rc->lock held: hand over to
	 * the work when the lock is taken then.
	 */
	if (qp->user && !in_interrupt() && !irqs_disabled()) {
		WRITE_ONCE(rc->tx_cpu, raw_smp_processor_id());
		spin_lock_bh(&rc->lock);
		now = vrdma_rc_now();
		/* a user stream's doorbell may be held (tx_coalesce_us) */
		if (!rc->dead && !vrdma_rc_defer(rc, now))
			vrdma_rc_run_at(rc, now, true);
		vrdma_rc_unlock_bh(rc);
		return;
	}
	if (in_hardirq() || irqs_disabled() || !spin_trylock_bh(&rc->lock)) {
		queue_work(vrdma_rc_wq, &rc->work);
		return;
	}
	vrdma_rc_run(rc);
	vrdma_rc_unlock_bh(rc);
}

/* The packet comes from the connected peer's address (RC and UC). */
bool vrdma_route_from_peer(const struct vrdma_route *r,
			   const struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return r->family == AF_INET && ip_hdr(skb)->saddr == r->daddr.v4;
	if (skb->protocol == htons(ETH_P_IPV6))
		return r->family == AF_INET6 &&
		       ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &r->daddr.v6);
	return false;
}

/*
 * The end of a run of packets for one connection: run its sender once (new
 * READ responses, a window the ACKs opened, freed read slots, the ACK the
 * run's data asked for, which a batch always does: vt_rx_run_end()),
 * unlock.
 *
 * After a run of several data packets the clock is read again: they were
 * all stamped with the run's start (b->now, one read per run), and the
 * ACK's hold time (from the last arrival to the ACK) must cover their
 * placement, which the sender would otherwise take for queueing in the
 * network: under TCG a 16-packet run takes longer than Swift's whole
 * target, and the window shrank to a few packets on an idle wire. A
 * single packet's placement is short, and a clock read is not (an
 * emulated device access in a TCG guest): its ACK keeps b->now.
 */
void vrdma_rc_rx_flush(struct vrdma_rc_rxb *b)
{
	struct vrdma_rc_conn *rc = b->rc;

	if (!rc)
		return;
	b->rc = NULL;
	if (b->data) {
		/* an exchange: no holds, and a pending one ends now */
		rc->req.db_rx_at = b->now;
		if (rc->req.db_due)
			rc->req.db_due = b->now;
	}
	vt_rx_run_end(&rc->vt, b->data);
	vrdma_rc_run_at(rc, b->data > 1 ? vrdma_rc_now() : b->now, false);
	vrdma_rc_unlock_bh(rc);
	rcu_read_unlock();
}

/* The RC connection of @qpn, or NULL; under rcu_read_lock(). */
struct vrdma_rc_conn *vrdma_rc_lookup(struct vrdma_dev *vdev, u32 qpn)
{
	struct vrdma_verbs_dev *vd = vdev->priv;
	struct vrdma_qp *qp = vd ? xa_load(&vd->qp_xa, qpn) : NULL;

	return qp && qp->ibqp.qp_type == IB_QPT_RC ? qp_rc(qp) : NULL;
}

/* Take (or keep) the connection of @qpn in @b; NULL if there is none. */
static struct vrdma_rc_conn *vrdma_rc_rx_conn(struct vrdma_dev *vdev,
					      u32 qpn, struct vrdma_rc_rxb *b)
{
	struct vrdma_rc_conn *rc;

	if (b->rc && b->qpn == qpn)
		return b->rc;
	vrdma_rc_rx_flush(b);
	rcu_read_lock();
	rc = vrdma_rc_lookup(vdev, qpn);
	if (!rc) {
		rcu_read_unlock();
		return NULL;
	}
	spin_lock_bh(&rc->lock);
	vrdma_mr_hint_clear(&rc->resp.mr_hint);
	b->rc = rc;
	b->qpn = qpn;
	b->data = 0;
	b->now = vrdma_rc_now();
	return rc;
}

/*
 * A packet for a closed connection: @rc in ERR (its lock held), or none
 * (destroyed, reset, never there). A retransmission of data it received
 * is acknowledged (vrdma_rc_grave.c); anything else is dropped.
 */
static void vrdma_rc_rx_closed(struct vrdma_dev *vdev, struct sk_buff *skb,
			       const struct vt_data_hdr *dh,
			       struct vrdma_rc_conn *rc)
{
	bool sent = false;

	if (dh && !rc)
		sent = vrdma_grave_rx(vdev, skb, dh);
	else if (dh && vrdma_route_from_peer(&rc->route, skb))
		sent = vrdma_grave_ack(vdev, &rc->route, rc->qp->ibqp.qp_num,
				       rc->dest_qpn, vt_rx_cum_psn(&rc->vt), dh);
	if (!sent)
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
}

/*
 * A decoded packet for this device, from softirq. Exactly one of @dh and
 * @ack is set. Consumes nothing: the caller frees @skb, and ends the run
 * with vrdma_rc_rx_flush().
 */
void vrdma_rc_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh, const struct vt_ack *ack,
		 struct vrdma_rc_rxb *b)
{
	u32 qpn = dh ? dh->dst_conn : ack->dst_conn;
	struct vrdma_rc_conn *rc = vrdma_rc_rx_conn(vdev, qpn, b);

	b->data += !!dh;
	if (!rc)
		vrdma_rc_rx_closed(vdev, skb, dh, NULL);
	else if (rc->dead && dh && rc->resp.nack && vrdma_route_from_peer(&rc->route, skb))
		vrdma_resp_replay_nack(rc, dh);	/* in ERR after a fatal NACK */
	else if (rc->dead)
		vrdma_rc_rx_closed(vdev, skb, dh, rc);
	else if (!vrdma_route_from_peer(&rc->route, skb))
		vrdma_count(vdev, VRDMA_CNT_RX_BAD_PEER, 1);
	else if (dh)
		vrdma_resp_rx_data(rc, skb, dh, b->now);
	else
		vrdma_req_rx_ack(rc, ack, b->now);
}

/* ---- life cycle ---------------------------------------------------------- */

/* The route to the QP's primary path (RC and UC). */
int vrdma_rc_route(struct vrdma_qp *qp, struct vrdma_route *r)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(&qp->attr.ah_attr);
	union ib_gid sgid;
	int rv;

	rv = rdma_query_gid(&qp->vdev->ibdev, 1, grh->sgid_index, &sgid);
	if (!rv)
		rv = vrdma_net_route_gid(r, &sgid, grh);
	if (!rv)
		r->flow_hash = vrdma_net_flow_hash(qp->ibqp.qp_num,
						   qp->attr.dest_qp_num);
	return rv;
}

/*
 * Payload bytes per packet. An IB MTU is a power of two and the netdev
 * carries more: 1024 bytes of payload where a 1500-byte frame has room
 * for 1416, 4096 where a 9000-byte one has 8916. A QP given the port's
 * active MTU (what perftest and rdma_cm set) asked for the largest
 * packets the port takes, and gets packets that fill the netdev MTU; the
 * receiver places each by its offset, whatever its size. A smaller path
 * MTU is the user's choice and is kept.
 */
u32 vrdma_rc_payload(struct vrdma_qp *qp, int family)
{
	enum ib_mtu path_mtu = qp->attr.path_mtu ? qp->attr.path_mtu :
						   IB_MTU_1024;
	u32 netdev_mtu = READ_ONCE(qp->vdev->netdev_mtu);
	u32 hdrs, room;

	hdrs = sizeof(struct udphdr) + VT_DATA_HDR_LEN +
	       (family == AF_INET6 ? sizeof(struct ipv6hdr) :
				     sizeof(struct iphdr));
	/*
	 * Packets go out with DF and are never fragmented (iptunnel_xmit
	 * clears ignore_df): each must fit the netdev MTU. One that cannot
	 * carry 64 bytes of payload is not worth a connection; its packets
	 * are dropped and the QP fails with RETRY_EXC.
	 */
	room = netdev_mtu >= hdrs + 64 ? netdev_mtu - hdrs : 64;
	if (fill_mtu && path_mtu >= vrdma_mtu_from_netdev(netdev_mtu))
		return min_t(u32, room, VT_MAX_PAYLOAD);
	return min_t(u32, ib_mtu_enum_to_int(path_mtu), room);
}

static void vrdma_rc_config(struct vrdma_qp *qp, int family,
			    struct vt_config *cfg)
{
	/*
	 * The VM profile (vt_config_vm: queue-delay Swift, 100 us target,
	 * one-packet floor, 100 us ACK delay, a spray turn per 16 packets),
	 * which vrdma-sim --profile vm runs too; the module parameters
	 * default to the same values.
	 */
	vt_config_vm(cfg);
	cfg->mtu = vrdma_rc_payload(qp, family);
	cfg->cc = vrdma_rc_cc();
	cfg->swift_target_ns = (u64)swift_target_us * NSEC_PER_USEC;
	cfg->swift_compete_rtts = swift_compete_rtts;
	cfg->tx_defer_pkts = tx_defer;
	/*
	 * Each ACK is a packet through the whole stack: coalesce them over
	 * a VM-sized delay (the sender asks with ACKREQ where it waits; its
	 * PTO and RTO allow for this delay).
	 */
	cfg->ack_delay_ns = (u64)ack_delay_us * NSEC_PER_USEC;
	/*
	 * Unsignaled messages ask for no ACK (vrdma_req_lazy_ack()): where
	 * they come one per system call, 100 us is shorter than the gap
	 * between them in a TCG guest, and the timer would send an ACK per
	 * message all the same.
	 */
	cfg->lazy_ack_delay_ns = (u64)lazy_ack_delay_us * NSEC_PER_USEC;
	/* spray by batch, not by packet: a run to one path is one skb */
	cfg->path_burst = VRDMA_BATCH_MAX;
	cfg->num_paths = clamp_t(u32, READ_ONCE(paths), 1, VT_MAX_PATHS);
	/* until RTS sets them: a responder may answer READs from RTR */
	cfg->retry_cnt = 7;
	cfg->rnr_retry = 7;
}

static void vrdma_rc_free(struct vrdma_rc_conn *rc)
{
	vrdma_net_route_destroy(&rc->route);
	kvfree(rc->resp.srq_rqe);
	kvfree(rc->req.swqe);
	kvfree(rc);
}

/*
 * INIT -> RTR of an RC QP: resolve the peer and start its connection.
 * @qp_fail moves the QP to ERR when the connection fails.
 */
int vrdma_rc_connect(struct vrdma_qp *qp, vrdma_rc_fail_fn qp_fail)
{
	struct vrdma_rc_conn *rc;
	struct vt_config cfg;
	int rv;

	if (qp->ibqp.qp_type != IB_QPT_RC)
		return 0;
	rc = kvzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return -ENOMEM;
	rc->req.swqe = kvcalloc(qp->sq.num, sizeof(*rc->req.swqe),
				GFP_KERNEL);
	if (qp->ibqp.srq)
		rc->resp.srq_rqe = kvcalloc(VRDMA_RC_MSGS,
					    sizeof(*rc->resp.srq_rqe),
					    GFP_KERNEL);
	if (!rc->req.swqe || (qp->ibqp.srq && !rc->resp.srq_rqe)) {
		rv = -ENOMEM;
		goto err;
	}
	rv = vrdma_rc_route(qp, &rc->route);
	if (rv)
		goto err;
	if (READ_ONCE(ecn))	/* the application's DSCP stays */
		rc->route.tos = (rc->route.tos & ~INET_ECN_MASK) | INET_ECN_ECT_0;
	/* after the TOS, a part of its key; without it: a lookup per packet */
	vrdma_net_route_init(qp->vdev, &rc->route);
	rc->route.defer = &rc->txq;	/* sent by vrdma_rc_unlock() */

	vrdma_rc_config(qp, rc->route.family, &cfg);
	if (vt_conn_init(&rc->vt, &cfg, qp->ibqp.qp_num, qp->attr.dest_qp_num,
			 qp->attr.sq_psn, qp->attr.rq_psn, vrdma_rc_now())) {
		rv = -EINVAL;
		goto err;
	}

	rc->qp = qp;
	rc->tx_cpu = -1;
	rc->qp_fail = qp_fail;
	rc->dest_qpn = qp->attr.dest_qp_num;
	/*
	 * The SQ ring keeps its indices across RESET (the provider's producer
	 * index runs on): a QP reset and connected again takes from where
	 * the discarded WQEs ended, not from slot 0.
	 */
	rc->req.sq_taken = qp->sq.cons;
	spin_lock_init(&rc->lock);
	__skb_queue_head_init(&rc->txq);
	hrtimer_init(&rc->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	rc->timer.function = vrdma_rc_timer;
	INIT_WORK(&rc->work, vrdma_rc_work);
	vrdma_stats_conn_add(qp->vdev, rc);
	/* published last: the receive path may see it at once */
	smp_store_release(&qp->rc, rc);
	return 0;

err:
	vrdma_rc_free(rc);
	return rv;
}

/*
 * The local ACK timeout (4.096 us * 2^timeout) times retry_cnt + 1: how
 * long an RC QP on a NIC waits for a silent peer before RETRY_EXC, at
 * most a minute. 0 for timeout 0, which the spec calls infinite.
 */
static u64 vrdma_rc_ack_span(const struct vrdma_qp *qp)
{
	if (!qp->attr.timeout)
		return 0;
	return min_t(u64, (4096ULL << min_t(u8, qp->attr.timeout, 31)) *
			  (qp->attr.retry_cnt + 1), 60 * NSEC_PER_SEC);
}

/*
 * How long a requester waits for any packet of its peer while a READ or
 * atomic response is due: the span above, but never under
 * VRDMA_RC_RESP_MIN_NS (an emulated or loaded VM stalls longer than a
 * NIC). The peer's retransmissions and other traffic count as signs of
 * life.
 */
static u64 vrdma_rc_resp_timeout(const struct vrdma_qp *qp)
{
	return max_t(u64, vrdma_rc_ack_span(qp), VRDMA_RC_RESP_MIN_NS);
}

/* RTR -> RTS: the send queue runs from sq_psn. */
int vrdma_rc_start(struct vrdma_qp *qp)
{
	struct vrdma_rc_conn *rc = qp_rc(qp);

	if (!rc)
		return 0;
	spin_lock_bh(&rc->lock);
	/*
	 * Refused when READ responses already went out from RTR: the peer
	 * adopted that PSN space (vt_rx_adopt_psn), so it stays.
	 */
	vt_tx_set_psn(&rc->vt, qp->attr.sq_psn);
	/* IB_QP_RETRY_CNT and IB_QP_RNR_RETRY come with RTS */
	rc->vt.cfg.retry_cnt = qp->attr.retry_cnt;
	rc->vt.cfg.rnr_retry = qp->attr.rnr_retry;
	/*
	 * Timeouts in a row fail the QP only after the span the user set
	 * (vt_tx.c, retries_spent()): the RTO's own backoff gives up in
	 * ~230 ms, which a migrating or stalled VM outlasts.
	 */
	rc->vt.cfg.fail_after_ns = vrdma_rc_ack_span(qp);
	rc->req.resp_timeout_ns = vrdma_rc_resp_timeout(qp);
	rc->started = true;
	vrdma_rc_run(rc);
	vrdma_rc_unlock_bh(rc);
	return 0;
}

/*
 * The data path failed the QP and its move to ERR is under way: what
 * query_qp reports from the error completion on. Caller holds state_lock.
 */
bool vrdma_rc_failed(struct vrdma_qp *qp)
{
	struct vrdma_rc_conn *rc = qp_rc(qp);

	lockdep_assert_held(&qp->state_lock);
	return rc && READ_ONCE(rc->error);
}

/*
 * Stop producing completions (the QP enters ERR or RESET): the caller
 * flushes what is left. Never waits for the work.
 */
void vrdma_rc_quiesce(struct vrdma_qp *qp)
{
	struct vrdma_rc_conn *rc = qp_rc(qp);

	if (!rc)
		return;
	spin_lock_bh(&rc->lock);
	/* the ACK owed for what arrived: the peer may wait on it */
	if (!rc->dead && vt_rx_next_wakeup(&rc->vt) != VT_NEVER)
		vrdma_resp_send_ack(rc, vrdma_rc_now());
	rc->dead = true;
	vrdma_resp_flush_srq(rc);
	vrdma_rc_unlock_bh(rc);
	hrtimer_try_to_cancel(&rc->timer);
}

/* The QP goes to RESET or is destroyed: no user of the connection left. */
void vrdma_rc_destroy(struct vrdma_qp *qp)
{
	struct vrdma_rc_conn *rc = qp_rc(qp);

	if (!rc)
		return;
	vrdma_rc_quiesce(qp);
	vrdma_grave_add(qp, rc);
	WRITE_ONCE(qp->rc, NULL);
	/*
	 * Receive paths that found it are done. Expedited: a normal grace
	 * period (~20 ms in a TCG guest) per destroy made tearing down 1000
	 * rdma_cm connections take 40 s, the server's event loop blocked in
	 * it; rxe, which waits on a reference count, took 2.7 s.
	 */
	synchronize_rcu_expedited();
	hrtimer_cancel(&rc->timer);
	cancel_work_sync(&rc->work);
	hrtimer_cancel(&rc->timer);
	vrdma_stats_conn_del(qp->vdev, rc);
	vrdma_rc_free(rc);
}

int vrdma_rc_init(void)
{
	vrdma_rc_wq = alloc_workqueue("vrdma_rc", WQ_UNBOUND | WQ_HIGHPRI, 0);
	return vrdma_rc_wq ? 0 : -ENOMEM;
}

void vrdma_rc_exit(void)
{
	destroy_workqueue(vrdma_rc_wq);
}
