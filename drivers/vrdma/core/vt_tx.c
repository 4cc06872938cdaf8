// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_tx.c - sender half: windows, RTT estimation, time-based loss
 * detection (RACK, RFC 8985), tail loss probe, RTO with exponential
 * backoff, retry and RNR limits, selective repeat or go-back-N.
 */
#include "vt_core.h"

#define VT_PKT_INFLIGHT	0x01	/* counted in tx.inflight */
#define VT_PKT_SACKED	0x02	/* delivered, waiting for cumulative ACK */
#define VT_PKT_LOST	0x04	/* marked lost, retransmit pending */
#define VT_PKT_SPUR	0x08	/* its spurious retransmit was counted */
#define VT_PKT_UNDO	0x10	/* retransmitted in the episode undo tracks */

#define VT_BACKOFF_MAX	16

static struct vt_tx_pkt *slot(struct vt_tx *t, u32 psn)
{
	return &t->ring[psn % VT_WIN];
}

static bool is_gbn(const struct vt_conn *c)
{
	return c->ops->flags & VT_CCF_GBN;
}

static u32 outstanding(const struct vt_tx *t)
{
	return t->snd_nxt - t->snd_una;
}

static bool in_flight_range(const struct vt_tx *t, u32 psn)
{
	return psn - t->snd_una < outstanding(t);
}

static void fail(struct vt_conn *c, int err)
{
	c->tx.error = err;
	c->tx.rto_deadline = VT_NEVER;
	c->tx.tlp_deadline = VT_NEVER;
	c->tx.reo_deadline = VT_NEVER;
}

/*
 * The longest the receiver may hold the ACK of what is in flight: its ACK
 * delay, or while the end of a lazy message that did not ask is in flight
 * with no packet that asks after it (its hold starts the receiver's ACK
 * deadline, which later packets do not move), twice its lazy one:
 * its timer and ours are both late at times (softirqs, a busy guest), and
 * ours, due at once after its, would then run first and resend what its
 * ACK was about to cover, as it did for 1 message in 2,000 in a TCG
 * guest with only the lazy delay.
 */
static u64 ack_hold(const struct vt_conn *c)
{
	u64 lazy = c->cfg.lazy_ack_delay_ns;

	if (c->tx.lazy_out && !vt_psn_lt(c->tx.lazy_end, c->tx.snd_una) &&
	    lazy > c->cfg.ack_delay_ns)
		return 2 * lazy;
	return c->cfg.ack_delay_ns;
}

/*
 * Before any RTT sample: the initial RTO, or the receiver's longest hold
 * if that is longer. A lazy message asks for its ACK until then
 * (do_send()), so the hold is the ordinary ACK delay.
 */
static u64 first_rto(const struct vt_conn *c)
{
	return VT_MAX(c->cfg.rto_init_ns, ack_hold(c));
}

/* RTO = max(rto_min, srtt + 4 * rttvar + ack delay) << backoff, <= rto_max */
u64 vt_tx_rto(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;
	u64 rto;

	if (is_gbn(c))
		return c->cfg.gbn_rto_ns;
	/*
	 * RTT samples exclude the receiver's hold time, so the longest ACK
	 * delay is added back: a coalesced ACK must not look like a loss.
	 */
	rto = t->srtt ? t->srtt + 4 * t->rttvar + ack_hold(c) : first_rto(c);
	rto = VT_MAX(rto, c->cfg.rto_min_ns);
	if (rto > (c->cfg.rto_max_ns >> t->backoff))
		return c->cfg.rto_max_ns;
	return VT_MIN(rto << t->backoff, c->cfg.rto_max_ns);
}

static u64 pto(const struct vt_conn *c)
{
	if (!c->tx.srtt)
		return first_rto(c);
	return VT_MAX(2 * c->tx.srtt + ack_hold(c), c->cfg.tlp_min_ns);
}

static u64 reo_wnd(const struct vt_conn *c)
{
	u64 w = (c->tx.min_rtt >> 2) * c->tx.reo_mult;

	return VT_MIN(w, c->tx.srtt);
}

/* TX window = min(cwnd, receiver window, configured maximum) */
u32 vt_tx_wnd(const struct vt_conn *c)
{
	u32 w = c->tx.cwnd_fp >> VT_FP_SHIFT;

	w = VT_MIN(w, c->tx.rwnd);
	w = VT_MIN(w, is_gbn(c) ? c->cfg.gbn_wnd : c->cfg.max_wnd);
	return VT_MAX(w, 1U);
}

bool vt_tx_idle(const struct vt_conn *c)
{
	return !outstanding(&c->tx) && c->tx.mq_head == c->tx.mq_tail;
}

/* Messages queued that are not all sent yet (new data waits). */
bool vt_tx_unsent(const struct vt_conn *c)
{
	return c->tx.mq_head != c->tx.mq_tail;
}

u32 vt_tx_acked_psn(const struct vt_conn *c)
{
	return c->tx.snd_una - 1;
}

int vt_tx_enqueue_ex(struct vt_conn *c, u32 msg_id, u32 msg_len, u32 flags)
{
	struct vt_tx *t = &c->tx;
	struct vt_msgq_ent *e = &t->mq[t->mq_tail % VT_MSGQ];

	if (t->error)
		return t->error;
	if (t->mq_tail - t->mq_head >= VT_MSGQ)
		return VT_ERR_FULL;
	e->id = msg_id;
	e->len = msg_len;
	e->flags = flags;
	t->mq_tail++;
	return 0;
}

int vt_tx_enqueue(struct vt_conn *c, u32 msg_id, u32 msg_len)
{
	return vt_tx_enqueue_ex(c, msg_id, msg_len, 0);
}

/*
 * Batch deferral, as TCP defers a TSO segment the window cannot fill: once
 * a burst has filled the window, with packets in flight an ACK is on its
 * way (the packet that filled a small window asked for it), and the next
 * burst waits until tx_defer_pkts slots (at most half the window) are
 * free instead of sending the few the last ACK freed.  Else a sender
 * clocked by ACKs sends as many packets per run as each ACK freed, the
 * receiver ACKs each of those small runs, and the batches stay small: in
 * a VM, where each skb costs a trip through the stack, ib_write_bw of 1 MB
 * messages ran at 3.5 packets per batch and half the bandwidth of 64 KB
 * ones.  A message's last few packets go at once: nothing would join them.
 */
static bool defer_new(const struct vt_conn *c, u32 wnd)
{
	const struct vt_tx *t = &c->tx;
	const struct vt_msgq_ent *e = &t->mq[t->mq_head % VT_MSGQ];
	u32 want = VT_MIN(c->cfg.tx_defer_pkts, wnd / 2);

	if (!want || t->burst || !t->inflight || t->inflight + want <= wnd)
		return false;
	return t->mq_tail - t->mq_head > 1 ||
	       e->len - t->mq_off >= (u64)want * c->cfg.mtu;
}

static bool new_allowed(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;
	u32 out = outstanding(t), wnd = vt_tx_wnd(c);

	if (t->mq_head == t->mq_tail || out >= VT_WIN || out >= t->rwnd)
		return false;
	if (is_gbn(c))
		return out < wnd;
	return t->inflight < wnd && !defer_new(c, wnd);
}

/*
 * A retransmission fits the window, or (retx_conserve) takes the place of
 * a packet the last ACK showed delivered: packet conservation, as PRR
 * (RFC 6937).  A fan-in drops the tail of every first window; those
 * packets count as in flight until something sent after them arrives,
 * and a window cut to a packet or two is full of them, so without this
 * the loss RACK did find waits for the RTO.
 */
static bool retx_allowed(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;

	return t->lost && (!t->inflight || t->inflight < vt_tx_wnd(c) ||
			   t->retx_credit || t->retx_force);
}

static bool can_send(const struct vt_conn *c)
{
	if (c->tx.frto_wait)
		return false;
	return retx_allowed(c) || c->tx.tlp_pending || new_allowed(c);
}

/*
 * The loss timers among the wakeups (RTO, tail loss probe): deadlines that
 * act only when a packet or its ACK is lost, so a platform may serve them
 * late, from a coarse timer (as TCP's RTO and probe timers are), where
 * programming a precise one for every message costs more than the late
 * recovery of a rare loss. VT_NEVER when none is set. The other wakeups
 * (pacing, RNR wait, RACK's reorder window: vt_tx_fine_wakeup()) want
 * their time; vt_tx_next_wakeup() is the earlier of the two.
 */
u64 vt_tx_loss_wakeup(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;

	if (t->error)
		return VT_NEVER;
	return VT_MIN(t->rto_deadline, t->tlp_deadline);
}

u64 vt_tx_fine_wakeup(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;
	u64 w;

	if (t->error)
		return VT_NEVER;
	w = t->reo_deadline;
	if (can_send(c))
		w = VT_MIN(w, VT_MAX(t->next_send_ts, t->rnr_until));
	return w;
}

u64 vt_tx_next_wakeup(const struct vt_conn *c)
{
	return VT_MIN(vt_tx_fine_wakeup(c), vt_tx_loss_wakeup(c));
}

static void rtt_update(struct vt_tx *t, u64 rtt)
{
	u64 delta;

	if (!rtt)
		rtt = 1;
	t->last_rtt = rtt;
	if (!t->srtt) {
		t->srtt = rtt;
		t->rttvar = rtt / 2;
	} else {
		delta = t->srtt > rtt ? t->srtt - rtt : rtt - t->srtt;
		t->rttvar = (3 * t->rttvar + delta) / 4;
		t->srtt = (7 * t->srtt + rtt) / 8;
	}
	if (!t->min_rtt || rtt < t->min_rtt)
		t->min_rtt = rtt;
}

/*
 * Sprayed paths queue differently: a packet on a deep path arrives after
 * later ones on a shallow path, by more than RACK's reorder window, and
 * is retransmitted for nothing.  Each path's recent RTT (it follows a
 * growing queue at once, a draining one over a few samples) is what a
 * packet sent there is given before RACK calls it lost.
 */
static void path_rtt_update(struct vt_tx *t, u32 path, u64 rtt)
{
	u64 *r = &t->path[path % VT_MAX_PATHS].rtt;

	if (rtt >= *r)
		*r = rtt;
	else
		*r -= (*r - rtt) >> 3;
}

/* No tail loss probe now: go-back-N, a probe out or due, a backed-off RTO. */
static bool tlp_held(const struct vt_conn *c)
{
	const struct vt_tx *t = &c->tx;

	return is_gbn(c) || t->tlp_out || t->tlp_pending || t->backoff;
}

static void arm_timers(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u64 p;

	if (!outstanding(t)) {
		t->rto_deadline = VT_NEVER;
		t->tlp_deadline = VT_NEVER;
		t->reo_deadline = VT_NEVER;
		return;
	}
	if (t->rto_deadline == VT_NEVER)
		t->rto_deadline = VT_MAX(now, t->rnr_until) + vt_tx_rto(c);
	/*
	 * no probe while retransmissions are pending or the RTO backs off;
	 * but (retx_conserve) a loss the window holds back while nothing
	 * in flight may still be delivered is a tail loss too: probe it
	 */
	if (tlp_held(c) || t->tlp_deadline != VT_NEVER)
		return;
	if (t->lost && (!c->cfg.retx_conserve || retx_allowed(c)))
		return;
	p = now + pto(c);
	if (p < t->rto_deadline)
		t->tlp_deadline = p;
}

static void mark_lost(struct vt_conn *c, u32 psn, u8 cause, u64 now)
{
	struct vt_tx *t = &c->tx;
	struct vt_tx_pkt *p = slot(t, psn);

	if (p->flags & (VT_PKT_SACKED | VT_PKT_LOST))
		return;
	if (p->flags & VT_PKT_INFLIGHT) {
		p->flags &= ~VT_PKT_INFLIGHT;
		t->inflight--;
	}
	p->flags |= VT_PKT_LOST;
	p->cause = cause;
	t->lost++;
	t->tlp_deadline = VT_NEVER;
	if (vt_psn_lt(psn, t->retx_hint))
		t->retx_hint = psn;
	if (cause == VT_CAUSE_RACK || cause == VT_CAUSE_NACK)
		vt_path_penalize(c, p->path, now, 2);
}

/* A packet was delivered (cumulatively or selectively) for the first time. */
static void deliver(struct vt_conn *c, u32 psn, struct vt_tx_pkt *p, u64 now,
		    struct vt_ack_result *r)
{
	struct vt_tx *t = &c->tx;

	r->acked_pkts++;
	/* REPS: a first transmission's entropy that delivered without CE */
	if (vt_reps_on(c) && t->ack_clean && !p->retx)
		vt_reps_recycle(c, p->entropy);
	if (p->flags & VT_PKT_INFLIGHT)
		t->inflight--;
	if (p->flags & VT_PKT_LOST)
		t->lost--;
	p->flags = (p->flags & (VT_PKT_SPUR | VT_PKT_UNDO)) | VT_PKT_SACKED;
	/* RACK: remember the latest-sent delivered packet (RFC 8985 6.2) */
	if (p->retx && now - p->xmit_ts < t->min_rtt)
		return;	/* may be the ACK of an earlier copy */
	if (!t->rack_valid || p->xmit_ts > t->rack_xmit_ts ||
	    (p->xmit_ts == t->rack_xmit_ts && vt_psn_lt(t->rack_psn, psn))) {
		t->rack_valid = true;
		t->rack_xmit_ts = p->xmit_ts;
		t->rack_psn = psn;
		t->rack_rtt = now - p->xmit_ts;
	}
}

/*
 * RACK: a packet is lost when one sent after it was delivered and
 * max(rack_rtt, its path's RTT) + reo_wnd + rack_slack_pct of srtt passed
 * since it was sent; otherwise the reorder timer is armed for the earliest
 * such deadline.  The slack: a path's RTT lags its queue (it is learnt
 * from packets sent before this one), and in a fan-in each path's queue
 * grows packet by packet; without it a sprayed 15->1 incast still
 * retransmitted ~100 packets for nothing, all by RACK.  A real loss is
 * found a quarter srtt later.
 */
static u32 rack_detect(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u64 reo = reo_wnd(c), deadline;
	u64 slack = vt_div64(t->srtt * c->cfg.rack_slack_pct, 100);
	u32 psn, n = 0;
	struct vt_tx_pkt *p;

	t->reo_deadline = VT_NEVER;
	if (!t->rack_valid)
		return 0;
	for (psn = t->snd_una; psn != t->snd_nxt; psn++) {
		p = slot(t, psn);
		if (!(p->flags & VT_PKT_INFLIGHT))
			continue;
		if (p->xmit_ts > t->rack_xmit_ts ||
		    (p->xmit_ts == t->rack_xmit_ts &&
		     !vt_psn_lt(psn, t->rack_psn)))
			continue;
		deadline = p->xmit_ts + VT_MAX(t->rack_rtt, t->path[p->path].rtt) +
			   reo + slack;
		if (now >= deadline) {
			mark_lost(c, psn, VT_CAUSE_RACK, now);
			n++;
		} else if (deadline < t->reo_deadline) {
			t->reo_deadline = deadline;
		}
	}
	return n;
}

static void enter_recovery(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u32 before = t->cwnd_fp;

	if (t->in_recovery)
		return;
	t->in_recovery = true;
	t->recovery_end = t->snd_nxt;
	c->ops->on_loss(c, now);
	/* remember what to restore if every retransmit proves spurious */
	t->undo_cwnd_fp = t->cwnd_fp < before ? before : 0;
	t->undo_retx = 0;
}

/*
 * Losses were found (by an ACK or by RACK's timer).  When none of the
 * flight's retransmissions is still out, one resend may leave past the
 * window (retx_conserve), as PRR's forced fast retransmit (RFC 6937,
 * Linux tcp_cwnd_reduction): a fan-in drops the tail of a first window,
 * those packets fill a cut window as "in flight", nothing sent after
 * them is left to be delivered, and the loss RACK's timer finds would
 * otherwise wait for the RTO.  The resend's ACK restarts the clock: RACK
 * then finds the rest, and each delivery lets one more go.  One per
 * flight at a time, not one per lost packet: resends into the full queue
 * that dropped the originals are lost again.
 */
static void loss_found(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u32 psn;

	if (c->cfg.retx_conserve && !is_gbn(c)) {
		for (psn = t->snd_una; psn != t->snd_nxt; psn++)
			if ((slot(t, psn)->flags & VT_PKT_INFLIGHT) &&
			    slot(t, psn)->retx)
				break;
		t->retx_force = psn == t->snd_nxt;
	}
	enter_recovery(c, now);
}

/*
 * Every retransmission of the last recovery episode turned out spurious
 * (reordering, not loss): undo its window cut (RFC 8985 with DSACK,
 * Linux tcp_try_undo_recovery; Eifel, RFC 3522).
 */
static void try_undo(struct vt_conn *c)
{
	struct vt_tx *t = &c->tx;

	if (!t->undo_cwnd_fp || t->undo_retx)
		return;
	if (t->cwnd_fp < t->undo_cwnd_fp)
		t->cwnd_fp = t->undo_cwnd_fp;
	t->undo_cwnd_fp = 0;
	c->stats[VT_STAT_CWND_UNDO]++;
}

static void spurious_check(struct vt_conn *c, const struct vt_ack *a)
{
	struct vt_tx *t = &c->tx;
	struct vt_tx_pkt *p;

	if (!in_flight_range(t, a->trig_psn))
		return;
	p = slot(t, a->trig_psn);
	if (!p->retx || (p->flags & VT_PKT_SPUR))
		return;
	/* an earlier copy arrived, or the retransmission was a duplicate */
	if (a->echo_ts < p->xmit_ts || (a->flags & VT_AF_DUP)) {
		p->flags |= VT_PKT_SPUR;
		c->stats[VT_STAT_SPURIOUS]++;
		t->reo_mult = VT_MIN(t->reo_mult + 1, c->cfg.reo_mult_max);
		t->reo_clean = 0;
		if (t->undo_retx && (p->flags & VT_PKT_UNDO)) {
			t->undo_retx--;
			try_undo(c);
		}
	}
}

/*
 * The first progress after one or more timeouts came from a transmission
 * sent before the first of them (Eifel detection with timestamps, RFC
 * 3522; Linux tcp_try_undo_loss): the packets were delayed, not lost, and
 * every timeout since was spurious.  Restore the window and the CC state,
 * the backoff and the path penalties and entropies; the packets the
 * timeout marked lost and that were not resent yet are in flight again.
 * Those still in flight are left to RACK and the next RTO, as before.
 */
static void rto_undo(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	struct vt_tx_pkt *p;
	u32 psn, i;

	if (t->cwnd_fp < t->rto_undo_cwnd_fp)
		t->cwnd_fp = t->rto_undo_cwnd_fp;
	c->ops->on_rto_undo(c, now);
	for (i = 0; i < c->cfg.num_paths; i++) {
		if (!(t->rto_undo_paths & (1U << i)))
			continue;
		t->path[i].penalty_until = t->path[i].undo_until;
		t->path[i].gen = t->path[i].undo_gen;
	}
	for (psn = t->snd_una; psn != t->snd_nxt; psn++) {
		p = slot(t, psn);
		if (!(p->flags & VT_PKT_LOST) || p->cause != VT_CAUSE_RTO)
			continue;
		p->flags = (p->flags & ~VT_PKT_LOST) | VT_PKT_INFLIGHT;
		t->lost--;
		t->inflight++;
	}
	t->backoff = 0;
	t->in_recovery = false;
	c->stats[VT_STAT_RTO_UNDO]++;
}

static void on_nack(struct vt_conn *c, u64 now, const struct vt_ack *a)
{
	struct vt_tx *t = &c->tx;
	u32 psn, from;
	u64 wait;

	switch (a->nack_code) {
	case VT_NACK_RNR:
		c->stats[VT_STAT_RNR_RCVD]++;
		t->rnr_count++;
		if (c->cfg.rnr_retry != 7 && t->rnr_count > c->cfg.rnr_retry) {
			fail(c, VT_ERR_RNR_RETRY_EXC);
			return;
		}
		wait = a->rnr_wait_us ? (u64)a->rnr_wait_us * 1000 :
		       c->cfg.rnr_delay_ns << VT_MIN(t->rnr_count - 1, 6U);
		t->rnr_until = now + wait;
		from = in_flight_range(t, a->trig_psn) ? a->trig_psn :
		       t->snd_una;
		for (psn = from; psn != t->snd_nxt; psn++)
			mark_lost(c, psn, VT_CAUSE_RNR, now);
		t->rto_deadline = VT_NEVER;
		break;
	case VT_NACK_SEQ:
		if (!outstanding(t))
			break;
		if (is_gbn(c)) {
			for (psn = t->snd_una; psn != t->snd_nxt; psn++)
				mark_lost(c, psn, VT_CAUSE_NACK, now);
		} else {
			mark_lost(c, t->snd_una, VT_CAUSE_NACK, now);
		}
		break;
	case VT_NACK_REM_ACCESS:
		fail(c, VT_ERR_REM_ACCESS);
		break;
	case VT_NACK_REM_OP:
		fail(c, VT_ERR_REM_OP);
		break;
	default:
		fail(c, VT_ERR_REM_INV_REQ);
		break;
	}
}

/*
 * PLB's delay signal: an RTT above the target, or, in queue-delay mode,
 * what Swift's ACK just decided (the standing queue against the
 * jitter-raised target). A VM's raw RTT is mostly its host's scheduling,
 * above 100 us on every round: PLB moved a single path to a new source
 * port every five rounds for no queue at all (131 ports in one 20 MB
 * transfer in the QEMU guest), a new flow each time to a qdisc.
 */
static bool delay_congested(const struct vt_conn *c, u64 rtt)
{
	if (c->cfg.cc == VT_CC_SWIFT && c->cfg.swift_queue_delay)
		return !c->tx.cc.swift.low_delay;
	return rtt > c->cfg.swift_target_ns;
}

int vt_tx_on_ack(struct vt_conn *c, u64 now, const struct vt_ack *a,
		 struct vt_ack_result *r)
{
	struct vt_tx *t = &c->tx;
	struct vt_cc_sample s;
	struct vt_tx_pkt *p;
	u32 psn, w, congested = 0;
	bool has_delay, delayed;
	u64 rtt = 0;

	memset(r, 0, sizeof(*r));
	if (t->error) {
		r->error = t->error;
		return t->error;
	}
	c->stats[a->opcode == VT_OP_NACK ? VT_STAT_NACKS_RCVD :
		 VT_STAT_ACKS_RCVD]++;
	if (vt_psn_lt(t->snd_nxt, a->cum_psn)) {
		/* acknowledges what was never sent: forged or corrupt */
		c->stats[VT_STAT_ACKS_INVALID]++;
		return 0;
	}
	if (vt_psn_lt(a->cum_psn, t->snd_una)) {
		c->stats[VT_STAT_ACKS_STALE]++;
		return 0;
	}
	t->rwnd = VT_MAX((u32)a->rwnd, 1U);
	/* the answer F-RTO waited for: undone below, or the timeout stands */
	t->frto = false;
	t->frto_wait = false;
	/*
	 * An RTT sample only from the echo of a packet still outstanding,
	 * and no later than its last transmission: the answers to forged,
	 * duplicate or out-of-window packets echo timestamps this side never
	 * sent, which would poison srtt and with it RTO, TLP and Swift.
	 */
	has_delay = a->echo_ts <= now && in_flight_range(t, a->trig_psn) &&
		    a->echo_ts <= slot(t, a->trig_psn)->xmit_ts;
	if (has_delay) {
		rtt = now - a->echo_ts;
		rtt = rtt > a->hold_ns ? rtt - a->hold_ns : 1;
		rtt_update(t, rtt);
		path_rtt_update(t, slot(t, a->trig_psn)->path, rtt);
	}
	spurious_check(c, a);
	t->ack_clean = !a->ce_count;
	/* echoes a transmission from before the timeout (Eifel) */
	delayed = t->rto_undo && in_flight_range(t, a->trig_psn) &&
		  a->echo_ts < t->rto_undo_ts;

	/* cumulative part */
	for (psn = t->snd_una; psn != a->cum_psn; psn++) {
		p = slot(t, psn);
		if (!(p->flags & VT_PKT_SACKED))
			deliver(c, psn, p, now, r);
		if (p->wflags & VT_F_EOM)
			r->msgs_done++;
		p->flags = 0;
	}
	r->cum_advanced = a->cum_psn - t->snd_una;
	t->snd_una = a->cum_psn;
	if (vt_psn_lt(t->retx_hint, t->snd_una))
		t->retx_hint = t->snd_una;

	/* selective part: the set bits only (most ACKs have none) */
	for (w = 0; w < VT_SACK_WORDS && !is_gbn(c); w++) {
		u64 bits = a->sack[w] & (w ? ~0ULL : ~1ULL);

		for (; bits; bits &= bits - 1) {
			psn = a->cum_psn + 64 * w + vt_ctz64(bits);
			if (!in_flight_range(t, psn))
				continue;
			p = slot(t, psn);
			if (!(p->flags & VT_PKT_SACKED))
				deliver(c, psn, p, now, r);
		}
	}

	/* the first progress after a timeout tells whether it was spurious */
	if (t->rto_undo && r->cum_advanced) {
		t->rto_undo = false;
		if (delayed)
			rto_undo(c, now);
	}

	if (r->cum_advanced) {
		t->backoff = 0;
		t->retries = 0;
		t->consec_rto = 0;
		t->rnr_count = 0;
		t->tlp_out = false;
		t->rto_deadline = VT_NEVER;
		t->tlp_deadline = VT_NEVER;
		t->reo_clean += r->cum_advanced;
		if (t->reo_clean >= 16 * c->cfg.max_wnd && t->reo_mult > 1) {
			t->reo_mult--;
			t->reo_clean = 0;
		}
		c->stats[VT_STAT_MSGS_DONE] += r->msgs_done;
	}
	if (t->in_recovery && vt_psn_le(t->recovery_end, t->snd_una))
		t->in_recovery = false;

	if (now - t->dlv_start >= t->srtt) {
		t->dlv_prev = t->dlv_cur;
		t->dlv_cur = 0;
		t->dlv_start = now;
	}
	t->dlv_cur += r->acked_pkts;

	if (a->ce_count) {
		c->stats[VT_STAT_ECN_CE_RCVD] += a->ce_count;
		/* with REPS a slot is no route: its entropies are dropped */
		if (!vt_reps_on(c))
			vt_path_penalize(c, a->echo_path, now, 1);
	}
	if (a->opcode == VT_OP_NACK) {
		on_nack(c, now, a);
		if (t->error) {
			r->error = t->error;
			return t->error;
		}
	}
	if (!is_gbn(c))
		r->newly_lost = rack_detect(c, now);
	t->retx_credit = c->cfg.retx_conserve && !is_gbn(c) ? r->acked_pkts : 0;

	s.now = now;
	s.delay_ns = rtt;
	s.has_delay = has_delay;
	s.acked_pkts = r->acked_pkts;
	s.ce_count = a->ce_count;
	if (r->acked_pkts || a->ce_count)
		c->ops->on_ack(c, &s);
	if (r->newly_lost)
		loss_found(c, now);

	if (a->ce_count || (s.has_delay && delay_congested(c, rtt)))
		congested = r->acked_pkts;
	vt_plb_on_ack(c, r->acked_pkts, congested);
	arm_timers(c, now);
	return 0;
}

/*
 * The RTO is armed when an ACK makes progress; a packet sent since (a
 * paced retransmission: a window below one packet sends one per rtt /
 * cwnd, which can be longer than the RTO) has not had its RTO yet.  As
 * Linux's tcp_rearm_rto, time out only when the oldest packet in flight
 * has been out an RTO; with nothing in flight and every loss known, the
 * sender waits for its pacing, not for an answer.  True, re-armed, when
 * the timer fired too early.
 */
static bool rto_early(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u64 oldest = VT_NEVER;
	u32 psn;

	if (!t->inflight) {
		if (!t->lost || t->next_send_ts <= now)
			return false;
		t->rto_deadline = t->next_send_ts + vt_tx_rto(c);
		return true;
	}
	for (psn = t->snd_una; psn != t->snd_nxt; psn++)
		if ((slot(t, psn)->flags & VT_PKT_INFLIGHT) &&
		    slot(t, psn)->xmit_ts < oldest)
			oldest = slot(t, psn)->xmit_ts;
	if (oldest == VT_NEVER || oldest + vt_tx_rto(c) <= now)
		return false;
	t->rto_deadline = oldest + vt_tx_rto(c);
	return true;
}

/*
 * A requester gives up (RETRY_EXC) after retry_cnt timeouts in a row, and
 * not before fail_after_ns since the first of them: what the verbs user
 * asked for, its local ACK timeout x (retry_cnt + 1), which an RC QP on a
 * NIC waits. The backed-off RTOs alone (at most rto_max_ns each) add up
 * to ~230 ms, shorter than a VM's pause for live migration or a host's
 * stall; until then they keep probing, rto_max_ns apart at most.
 */
static bool retries_spent(const struct vt_conn *c, u64 now)
{
	const struct vt_tx *t = &c->tx;

	return t->retries > c->cfg.retry_cnt &&
	       now - t->retry_since >= c->cfg.fail_after_ns;
}

static void on_rto(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	u32 psn, paths = 0, i;

	t->rto_deadline = VT_NEVER;
	/* too early is no timeout: F-RTO keeps waiting for its answer */
	if (c->cfg.retx_conserve && !is_gbn(c) && outstanding(t) &&
	    rto_early(c, now))
		return;
	t->frto_wait = false;	/* never past a timeout */
	if (!outstanding(t))
		return;
	c->stats[VT_STAT_TIMEOUTS]++;
	if (!t->retries)
		t->retry_since = now;
	t->retries++;
	t->consec_rto++;
	if (retries_spent(c, now)) {
		fail(c, VT_ERR_RETRY_EXC);
		return;
	}
	/*
	 * F-RTO: resending the whole window at once (the cut window's worth)
	 * wastes it when the timeout was spurious, which on a VM whose CPU
	 * runs sender, wire and receiver is the common case; one packet
	 * first, and the rest once an ACK has shown the timeout real.
	 */
	t->frto = !t->rto_undo && !is_gbn(c);
	if (!t->rto_undo) {
		/* the first timeout since progress: what an undo restores */
		t->rto_undo_cwnd_fp = t->cwnd_fp;
		t->rto_undo_ts = now;
		t->rto_undo_paths = 0;
		for (i = 0; i < c->cfg.num_paths; i++) {
			t->path[i].undo_until = t->path[i].penalty_until;
			t->path[i].undo_gen = t->path[i].gen;
		}
	}
	for (psn = t->snd_una; psn != t->snd_nxt; psn++) {
		if (slot(t, psn)->flags & VT_PKT_SACKED)
			continue;
		paths |= 1U << slot(t, psn)->path;
		mark_lost(c, psn, VT_CAUSE_RTO, now);
	}
	if (c->cfg.num_paths == 1)
		vt_path_repath(c, 0);	/* PLB repaths on RTO */
	for (i = 0; i < c->cfg.num_paths; i++)
		if (paths & (1U << i))
			vt_path_penalize(c, i, now, 4);
	if (!is_gbn(c) && t->backoff < VT_BACKOFF_MAX)
		t->backoff++;
	c->ops->on_timeout(c, now);
	/* a recovery's undo needs all retransmits spurious: rto_undo instead */
	t->undo_cwnd_fp = 0;
	/* go-back-N stays the Soft-RoCE baseline: no undo */
	t->rto_undo = !is_gbn(c);
	t->rto_undo_paths |= paths;
	t->tlp_pending = false;
	t->tlp_out = false;
	t->tlp_deadline = VT_NEVER;
	t->in_recovery = true;
	t->recovery_end = t->snd_nxt;
	t->rto_deadline = now + vt_tx_rto(c);
}

/*
 * The platform's timer ran well after its time: the host did not run this
 * connection's CPU for a while (a VM's vCPU descheduled by a busy host, a
 * long softirq), so the ACK that would have cancelled a timeout due now
 * may be waiting behind the stall, received but not yet processed. A
 * timeout due at @now waits one RTO more, and a tail loss probe one PTO,
 * counted from @now: they measure time the host ran. Once per deadline:
 * if the put-off one passes too, late or not, it acts. Under TCG on a
 * loaded 2-core host nearly every timeout came 1-20 ms late and ~80 %
 * were undone as spurious (docs/transport.md, "Late timers").
 */
void vt_tx_timer_late(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;
	bool late = false;

	if (t->error || !outstanding(t))
		return;
	if (t->rto_deadline <= now && t->rto_deadline != t->rto_stall_to) {
		t->rto_deadline = now + vt_tx_rto(c);
		t->rto_stall_to = t->rto_deadline;
		late = true;
	}
	if (t->tlp_deadline <= now && t->tlp_deadline != t->tlp_stall_to) {
		u64 p = now + pto(c);

		t->tlp_deadline = p < t->rto_deadline ? p : VT_NEVER;
		t->tlp_stall_to = t->tlp_deadline;
		late = true;
	}
	if (late)
		c->stats[VT_STAT_RTO_STALLS]++;
}

void vt_tx_on_timer(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;

	if (t->error)
		return;
	if (t->reo_deadline <= now && rack_detect(c, now)) {
		loss_found(c, now);
		if (c->cfg.retx_conserve)
			arm_timers(c, now);	/* the probe of arm_timers */
	}
	if (t->tlp_deadline <= now) {
		t->tlp_deadline = VT_NEVER;
		if (outstanding(t))
			t->tlp_pending = true;
	}
	if (t->rto_deadline <= now)
		on_rto(c, now);
}

/*
 * The peer retransmitted a request that our tail answers (a READ, an
 * atomic): its response, sent as a lazy message whose loss timers allow
 * the peer twice the lazy delay for its ACK, or the ACK in front of it,
 * did not arrive. Probe the tail now, once, as the tail loss probe
 * would, rather than that long after; not while losses are being
 * repaired or a probe is out. Taken before the retransmission, an ACK
 * that came with it has removed a response it covers.
 */
void vt_tx_probe_now(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;

	if (t->error || !outstanding(t) || t->lost || tlp_held(c))
		return;
	t->tlp_deadline = now;
}

static void fill(struct vt_conn *c, struct vt_tx_decision *d, u32 psn,
		 const struct vt_tx_pkt *p, u64 now)
{
	d->psn = psn;
	d->len = p->len;
	d->msg_id = p->msg_id;
	d->msg_off = p->msg_off;
	d->msg_len = p->msg_len;
	d->flags = p->wflags;
	d->path = p->path;
	d->entropy = vt_reps_on(c) ? p->entropy : vt_path_entropy(c, p->path);
	d->ts = now;
}

static void sent(struct vt_conn *c, u64 now, u32 len)
{
	u64 gap = c->ops->pacing_gap(c, len);

	c->tx.next_send_ts = gap ? now + gap : 0;
	c->stats[VT_STAT_TX_PKTS]++;
	c->stats[VT_STAT_TX_BYTES] += len;
	arm_timers(c, now);
}

static void do_retx(struct vt_conn *c, u64 now, u32 psn, u8 cause,
		    struct vt_tx_decision *d)
{
	struct vt_tx *t = &c->tx;
	struct vt_tx_pkt *p = slot(t, psn);

	if (p->flags & VT_PKT_LOST) {
		p->flags &= ~VT_PKT_LOST;
		t->lost--;
	}
	if (t->retx_credit && t->inflight >= vt_tx_wnd(c))
		t->retx_credit--;
	t->retx_force = false;
	if (!(p->flags & VT_PKT_INFLIGHT)) {
		p->flags |= VT_PKT_INFLIGHT;
		t->inflight++;
	}
	if (p->retx < 255)
		p->retx++;
	if (t->frto) {
		t->frto = false;
		t->frto_wait = true;
	}
	if (t->undo_cwnd_fp && !(p->flags & VT_PKT_UNDO)) {
		p->flags |= VT_PKT_UNDO;
		t->undo_retx++;
	}
	p->path = (u8)vt_path_pick(c, now, p->path);
	if (vt_reps_on(c))
		p->entropy = vt_reps_next(c);
	p->xmit_ts = now;
	fill(c, d, psn, p, now);
	d->action = VT_TX_RETX;
	d->cause = cause;
	d->flags |= VT_F_RETX;
	t->lazy_out = false;	/* a retransmission is ACKed at once */
	c->stats[VT_STAT_RETX_PKTS]++;
	c->stats[VT_STAT_RETX_RACK + cause - VT_CAUSE_RACK]++;
	sent(c, now, p->len);
}

/*
 * Ask for an immediate ACK when the sender will wait for it: a small
 * window is now full (the receiver's packet count might not be reached),
 * or this packet ends the last queued message.  New work posted behind a
 * busy queue is taken when the next ACK comes, so a queue that drains
 * must be answered at once; a queue that stays busy (the sender is the
 * bottleneck) lets the receiver coalesce by bytes, packets and time.
 */
static bool ackreq_wanted(const struct vt_conn *c, const struct vt_tx_pkt *p,
			  bool lazy)
{
	const struct vt_tx *t = &c->tx;
	u32 wnd = vt_tx_wnd(c), pkts = c->cfg.ack_coalesce_pkts;

	/* a window of 2 x the receiver's count gets ACKs by count anyway */
	if (t->inflight >= wnd && (!pkts || wnd < 2 * pkts))
		return true;
	return !lazy && (p->wflags & VT_F_EOM) && t->mq_head == t->mq_tail;
}

/*
 * A lazy message's end went out: loss timers armed before, with the
 * receiver's ordinary ACK delay allowed, would fire while it holds the
 * ACK (a spurious timeout, and a repath); they wait for the longer hold.
 */
static void lazy_timers(struct vt_conn *c, u64 now)
{
	struct vt_tx *t = &c->tx;

	if (t->rto_deadline != VT_NEVER)
		t->rto_deadline = VT_MAX(t->rto_deadline, now + vt_tx_rto(c));
	if (t->tlp_deadline != VT_NEVER)
		t->tlp_deadline = VT_MAX(t->tlp_deadline, now + pto(c));
}

static void do_send(struct vt_conn *c, u64 now, struct vt_tx_decision *d)
{
	struct vt_tx *t = &c->tx;
	struct vt_msgq_ent *e = &t->mq[t->mq_head % VT_MSGQ];
	u32 psn = t->snd_nxt++;
	struct vt_tx_pkt *p = slot(t, psn);
	u32 len = VT_MIN(c->cfg.mtu, e->len - t->mq_off);
	/*
	 * Before the first RTT sample a lazy end asks all the same: held, its
	 * ACK raced the first RTO against the peer application's first round
	 * (a responder's first READ response, held by a requester whose
	 * first iteration took 4 ms under TCG: an undone timeout at the start
	 * of every READ connection). One ACK, and the sample sizes the RTO.
	 */
	bool lazy = (e->flags & VT_MSG_LAZY_ACK) && t->srtt;

	memset(p, 0, sizeof(*p));
	p->xmit_ts = now;
	p->msg_id = e->id;
	p->msg_off = t->mq_off;
	p->msg_len = e->len;
	p->len = (u16)len;
	p->wflags = t->mq_off ? 0 : VT_F_SOM;
	p->path = (u8)vt_path_pick(c, now, -1);
	if (vt_reps_on(c))
		p->entropy = vt_reps_next(c);
	p->flags = VT_PKT_INFLIGHT;
	t->inflight++;
	/* a burst goes on until the window is full (defer_new()) */
	t->burst = t->inflight < vt_tx_wnd(c);
	t->mq_off += len;
	if (t->mq_off == e->len) {
		p->wflags |= VT_F_EOM;
		t->mq_head++;
		t->mq_off = 0;
	}
	fill(c, d, psn, p, now);
	d->action = VT_TX_SEND;
	if (ackreq_wanted(c, p, lazy))
		d->flags |= VT_F_ACKREQ;
	if (d->flags & VT_F_ACKREQ) {
		t->lazy_out = false;
	} else if (lazy && (d->flags & VT_F_EOM)) {
		t->lazy_out = true;
		t->lazy_end = psn;
		lazy_timers(c, now);
	}
	sent(c, now, len);
}

/* The highest unacknowledged packet, probed by TLP; false if none. */
static bool tlp_target(struct vt_tx *t, u32 *out)
{
	u32 psn;

	for (psn = t->snd_nxt - 1; psn != t->snd_una - 1; psn--) {
		if (!(slot(t, psn)->flags & VT_PKT_SACKED)) {
			*out = psn;
			return true;
		}
	}
	return false;
}

/*
 * What to transmit now: retransmissions first (lowest PSN first), then a
 * pending tail loss probe, then new data, each within the window and the
 * pacing and RNR gates.  Call until it returns VT_TX_IDLE or VT_TX_WAIT.
 */
int vt_tx_poll(struct vt_conn *c, u64 now, struct vt_tx_decision *d)
{
	struct vt_tx *t = &c->tx;
	bool retx, fresh;	/* each tested once: a call per packet */
	u32 psn;

	memset(d, 0, sizeof(*d));
	d->wake_at = VT_NEVER;
	if (t->error) {
		d->action = VT_TX_ERROR;
		d->error = t->error;
		return d->action;
	}
	if (t->frto_wait) {
		d->action = VT_TX_WAIT;
		d->wake_at = vt_tx_next_wakeup(c);
		return d->action;
	}
	retx = retx_allowed(c);
	fresh = new_allowed(c);
	if ((retx || t->tlp_pending || fresh) &&
	    (now < t->rnr_until || now < t->next_send_ts)) {
		d->action = VT_TX_WAIT;
		d->wake_at = vt_tx_next_wakeup(c);
		return d->action;
	}
	if (retx) {
		for (psn = t->retx_hint; psn != t->snd_nxt; psn++) {
			if (slot(t, psn)->flags & VT_PKT_LOST) {
				t->retx_hint = psn + 1;
				do_retx(c, now, psn, slot(t, psn)->cause, d);
				return d->action;
			}
		}
		VT_ASSERT(0);	/* lost count without a lost packet */
	}
	if (t->tlp_pending) {
		t->tlp_pending = false;
		t->tlp_out = true;
		c->stats[VT_STAT_TLP_PROBES]++;
		/*
		 * RFC 8985 7.3: after a probe the RTO counts from now. Left
		 * at the tail's first transmission it fires an RTO - PTO
		 * after the probe, often before the probe's ACK can return:
		 * a spurious timeout (backoff, window cut, repath) for
		 * nearly every tail loss the probe had already repaired.
		 */
		t->rto_deadline = now + vt_tx_rto(c);
		if (fresh) {
			do_send(c, now, d);
			d->flags |= VT_F_ACKREQ;
			t->lazy_out = false;
			return d->action;
		}
		if (tlp_target(t, &psn)) {
			do_retx(c, now, psn, VT_CAUSE_TLP, d);
			return d->action;
		}
	}
	if (fresh) {
		do_send(c, now, d);
		return d->action;
	}
	d->wake_at = vt_tx_next_wakeup(c);
	d->action = d->wake_at == VT_NEVER ? VT_TX_IDLE : VT_TX_WAIT;
	return d->action;
}
