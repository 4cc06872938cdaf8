// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_cc.c - congestion control behind one ops table, chosen per QP:
 * Swift (delay-based default), DCQCN (ECN, rate-based RoCE baseline) and a
 * fixed-window go-back-N baseline that behaves like Soft-RoCE.  All
 * arithmetic is fixed point (VT_FP_ONE == 1.0).
 */
#include "vt_core.h"

static void cwnd_clamp(struct vt_conn *c, u64 cwnd)
{
	u64 max = (u64)c->cfg.max_wnd << VT_FP_SHIFT;

	if (cwnd < c->cfg.swift_min_cwnd_fp)
		cwnd = c->cfg.swift_min_cwnd_fp;
	if (cwnd > max)
		cwnd = max;
	if (cwnd < c->tx.cwnd_fp)
		c->stats[VT_STAT_CC_DECREASES]++;
	c->tx.cwnd_fp = (u32)cwnd;
}

static u64 fp_mul(u64 a, u32 f)
{
	return (a * f) >> VT_FP_SHIFT;
}

/* ---- Swift ---- */

static void swift_init(struct vt_conn *c, u64 now)
{
	(void)now;
	cwnd_clamp(c, (u64)c->cfg.init_cwnd << VT_FP_SHIFT);
	c->tx.cc.swift.last_decrease = VT_NEVER;
	c->tx.cc.swift.high_since = VT_NEVER;
}

/* Swift decreases at most once per RTT. */
static bool swift_can_decrease(const struct vt_conn *c, u64 now)
{
	u64 last = c->tx.cc.swift.last_decrease;

	return last == VT_NEVER || now - last >= c->tx.srtt;
}

static void swift_decrease(struct vt_conn *c, u64 now, u32 factor_fp)
{
	u32 min_factor = VT_FP_ONE - c->cfg.swift_max_mdf_fp;

	cwnd_clamp(c, fp_mul(c->tx.cwnd_fp, VT_MAX(factor_fp, min_factor)));
	c->tx.cc.swift.last_decrease = now;
	c->tx.cc.swift.ss_done = true;
}

/*
 * The standing delay: the smallest sample of at least the last srtt/2 (as
 * Copa's), the smaller of the current srtt/2 window's minimum and the one
 * before it, so that a window's first sample alone is never the verdict (a
 * spike there cut the window about once per RTT where samples spread over
 * milliseconds). The window before counts only while it is the one just
 * ended: after a pause its minimum says nothing.
 */
static u64 swift_standing(struct vt_conn *c, u64 now, u64 d)
{
	u64 *stand = &c->tx.cc.swift.stand_delay;
	u64 *start = &c->tx.cc.swift.stand_start;
	u64 *prev = &c->tx.cc.swift.stand_prev;
	u64 half = c->tx.srtt / 2;

	if (!*stand || now - *start > half) {
		*prev = *stand && now - *start <= 2 * half ? *stand : 0;
		*stand = d;
		*start = now;
	} else if (d < *stand) {
		*stand = d;
	}
	return *prev && *prev < *stand ? *prev : *stand;
}

/*
 * Queue-delay mode: the standing queueing delay, and a target raised by the
 * jitter of the path.  The base RTT of a VM path is unknown and often far
 * above the target (vswitch, virtio, emulation): use the delay above the
 * smallest sample seen (as NSCC), and take the standing delay, the minimum
 * over at least the last srtt/2 (as Copa: swift_standing()), so that host
 * jitter, which lifts single
 * samples but not every sample of half an RTT, is not read as a queue.
 * Jitter wider than that (a VM whose delays spread over milliseconds)
 * still lifts the minimum of a few samples: the target grows by
 * swift_jitter_mult x the mean difference of consecutive samples.  A queue
 * changes little from one sample to the next, noise changes a lot, so a
 * real queue still meets the plain target.
 */
static u64 swift_queue_delay(struct vt_conn *c, const struct vt_cc_sample *s,
			     u64 *target)
{
	u64 *base = &c->tx.cc.swift.min_delay;
	u64 *prev = &c->tx.cc.swift.prev_delay;
	u64 *jit = &c->tx.cc.swift.jitter;
	u64 d = s->delay_ns, diff;

	if (*prev) {
		diff = d > *prev ? d - *prev : *prev - d;
		*jit = *jit - (*jit >> 3) + (diff >> 3);
	}
	*prev = d ? d : 1;
	*target += c->cfg.swift_jitter_mult * *jit;
	if (!*base || d < *base)
		*base = d ? d : 1;
	return swift_standing(c, s->now, d) - *base;
}

/*
 * floor(sqrt(@x)), by Newton's method from a power of two at or above the
 * root: the steps fall monotonically to it, in 5-6 divisions. Swift's
 * flow scaling takes three roots per ACK; the bit-by-bit method (32
 * rounds) made them 1% of a bulk transfer's kernel instructions.
 */
static u64 isqrt64(u64 x)
{
	u64 r, y;

	if (x < 2)
		return x;
	r = 1ULL << ((vt_fls64(x) + 1) / 2);
	for (;;) {
		y = (r + vt_div64(x, r)) >> 1;
		if (y >= r)
			return r;
		r = y;
	}
}

/* 1 / sqrt(cwnd) of a fixed-point window, fixed point */
static u64 inv_sqrt_fp(u64 cwnd_fp)
{
	return vt_div64(1ULL << (VT_FP_SHIFT + VT_FP_SHIFT / 2),
			VT_MAX(isqrt64(cwnd_fp), 1ULL));
}

/*
 * Swift's flow scaling: a smaller window gets a higher target.  Of N
 * flows sharing a queue, those below the fair share keep growing while
 * those above it already back off, which converges windows that the
 * plain law (same increase for all, a cut of a few percent just above
 * target) would keep apart; and a fan-in of many flows, each far below
 * one BDP, holds a queue the buffer can absorb instead of cutting every
 * window to the floor.
 */
u64 vt_swift_fs_target(const struct vt_config *cfg, u32 cwnd_fp)
{
	u64 lo = cfg->swift_fs_min_cwnd_fp;
	u64 hi = (u64)cfg->swift_fs_max_cwnd << VT_FP_SHIFT;
	u64 w = cwnd_fp, inv_lo, inv_hi;

	if (!cfg->swift_fs_range_ns)
		return 0;
	w = VT_MIN(VT_MAX(w, lo), hi);
	inv_lo = inv_sqrt_fp(lo);
	inv_hi = inv_sqrt_fp(hi);
	return vt_div64(cfg->swift_fs_range_ns * (inv_sqrt_fp(w) - inv_hi),
			inv_lo - inv_hi);
}

/*
 * A sender paced at the link rate may not fill its window (the link, not
 * the window, limits it): grow only a window that was in use (RFC 7661),
 * or a flow alone on a path whose queue its pacing keeps empty grows it
 * without bound and brings that excess to the next bottleneck it shares.
 */
static bool swift_window_used(const struct vt_conn *c,
			      const struct vt_cc_sample *s)
{
	u32 used = c->tx.inflight + s->acked_pkts;
	u32 wnd = c->tx.cwnd_fp >> VT_FP_SHIFT;

	if (!c->cfg.swift_pace_mbps)
		return true;
	return used + (wnd >> 3) >= wnd;
}

/*
 * The additive increase for @acked packets: ai per window above one
 * packet, ai per acked packet below it.
 */
static u64 swift_ai(const struct vt_conn *c, u64 cwnd, u32 acked)
{
	if (cwnd >= VT_FP_ONE)
		return vt_div64((u64)c->cfg.swift_ai_fp * acked * VT_FP_ONE,
				cwnd);
	return (u64)c->cfg.swift_ai_fp * acked;
}

/*
 * Competitive mode (Copa's, in Swift's terms).  A delay-based flow next to a
 * loss-based one (TCP CUBIC) cuts on a queue the other keeps filling: its
 * window falls to the floor while the queue stands, and it keeps a percent
 * of the link.  When the delay has stayed above the unscaled target for
 * swift_compete_rtts RTTs with the window at one packet or below (the VM
 * profile's floor is one packet), and the queue grew by at least that
 * target meanwhile, it stops reading delay and ECN and runs the loss-based
 * law of its competitor: slow start until the first loss (the competitor
 * holds a queue of many windows; additive growth of a packet per RTT from
 * the floor would take hundreds of its RTTs to reach a share), then
 * additive increase, the max_mdf cut on loss (swift_on_loss), until a
 * delay below the target shows the queue drained.  Returns true when the
 * window was handled here.
 */
static bool swift_compete(struct vt_conn *c, const struct vt_cc_sample *s,
			  u64 d, u64 target)
{
	u64 cwnd = c->tx.cwnd_fp;
	u64 *since = &c->tx.cc.swift.high_since;

	if (d < target) {
		*since = VT_NEVER;
		c->tx.cc.swift.compete = false;
		return false;
	}
	if (!c->tx.cc.swift.compete) {
		if (cwnd > VT_MAX(VT_FP_ONE, c->cfg.swift_min_cwnd_fp)) {
			*since = VT_NEVER;
			return false;
		}
		if (*since == VT_NEVER) {
			*since = s->now;
			c->tx.cc.swift.high_min = d;
		}
		if (d < c->tx.cc.swift.high_min)
			c->tx.cc.swift.high_min = d;
		/*
		 * and the queue grew by the target since its lowest point:
		 * delay-based flows at their floor (an incast) hold a queue,
		 * they do not keep adding to it
		 */
		if (s->now - *since <
		    (u64)c->cfg.swift_compete_rtts * c->tx.srtt ||
		    d < c->tx.cc.swift.high_min + target)
			return false;
		c->tx.cc.swift.compete = true;
		c->tx.cc.swift.compete_ss = true;
	}
	c->tx.cc.swift.low_delay = false;	/* a loss is congestion */
	if (c->tx.cc.swift.compete_ss)
		cwnd += (u64)s->acked_pkts * VT_FP_ONE;
	else
		cwnd += swift_ai(c, cwnd, s->acked_pkts);
	cwnd_clamp(c, cwnd);
	return true;
}

/*
 * swift_bdp_pct % of the path's bandwidth-delay product, fixed point:
 * the smallest RTT seen times the pacing rate (the host link's), in
 * packets of the MTU with their headers
 */
static u64 swift_bdp(const struct vt_conn *c)
{
	u64 pkt_ns = vt_div64((u64)(c->cfg.mtu + VT_DATA_HDR_LEN + 28) * 8000,
			      c->cfg.swift_pace_mbps);

	return vt_div64(c->tx.min_rtt * c->cfg.swift_bdp_pct * VT_FP_ONE,
			100 * VT_MAX(pkt_ns, 1ULL));
}

/*
 * The start.  A first window is a guess (init_cwnd, half a datacenter BDP,
 * small for a fan-in's sake); the additive and proportional increases take
 * ~8 RTTs to find the line from it, and a 2 MB flow lasts ~12.  The first
 * delay samples tell the path's base RTT: when those of swift_bdp_wait_pct
 * % of an SRTT were all below the target and unmarked (no fan-in's queue in
 * them), the window is lifted once to swift_bdp_pct % of min RTT x the
 * pacing rate.  A fan-in's samples hold everyone's first windows within
 * that time (above the target; a sender near the receiver may see its
 * first ACK before the far ones' packets arrive, hence the wait): no lift
 * there; a short path's BDP is below init_cwnd: no change there.
 *
 * A delay at or above the target or a CE mark within the wait, a cut, a
 * loss or a timeout ends the start for good: from then on the Swift law
 * alone.  Returns true when the window was handled here.
 */
static bool swift_start(struct vt_conn *c, const struct vt_cc_sample *s,
			u64 target)
{
	u64 bdp;

	if (c->tx.cc.swift.ss_done)
		return false;
	if (s->ce_count || s->delay_ns >= target) {
		c->tx.cc.swift.ss_done = true;
		return false;
	}
	if (!c->tx.cc.swift.ss_first)
		c->tx.cc.swift.ss_first = s->now ? s->now : 1;
	/* not yet: the Swift law meanwhile */
	if (s->now - c->tx.cc.swift.ss_first <
	    vt_div64(c->tx.srtt * c->cfg.swift_bdp_wait_pct, 100))
		return false;
	c->tx.cc.swift.ss_done = true;
	bdp = swift_bdp(c);
	if (c->tx.cwnd_fp < bdp)
		cwnd_clamp(c, bdp);
	return true;
}

static void swift_on_ack(struct vt_conn *c, const struct vt_cc_sample *s)
{
	const struct vt_config *cfg = &c->cfg;
	u64 target = cfg->swift_target_ns, d = s->delay_ns, cwnd = c->tx.cwnd_fp;
	u64 md, achieved, fs = vt_swift_fs_target(cfg, c->tx.cwnd_fp);

	target += fs;

	if (!s->has_delay)
		return;
	if (cfg->swift_queue_delay)
		d = swift_queue_delay(c, s, &target);
	c->tx.cc.swift.low_delay = d < target;
	if (cfg->swift_compete_rtts && swift_compete(c, s, d, target - fs))
		return;
	if (cfg->swift_bdp_pct && cfg->swift_pace_mbps &&
	    !cfg->swift_queue_delay &&
	    swift_start(c, s, target - fs))
		return;
	if (d > cfg->swift_qa_mult * target) {
		/*
		 * Incast: delay far above target.  Cut to what the network
		 * actually delivered in the last RTT (NSCC QuickAdapt), at
		 * least by max_mdf.
		 */
		if (!swift_can_decrease(c, s->now))
			return;
		md = fp_mul(cwnd, VT_FP_ONE - cfg->swift_max_mdf_fp);
		achieved = (u64)c->tx.dlv_prev << VT_FP_SHIFT;
		if (achieved && achieved < md)
			md = achieved;
		cwnd_clamp(c, md);
		c->tx.cc.swift.last_decrease = s->now;
		return;
	}
	if (d < target) {
		/*
		 * NSCC: ECN while delay is low means change path, not rate.
		 * Only below the unscaled target: a window that flow scaling
		 * lifted above it is below its share and must still grow, or
		 * a queue held above the ECN threshold (a fan-in) freezes
		 * every window where a timeout left it (0.01 packet, starved).
		 */
		if (cfg->swift_use_ecn && s->ce_count &&
		    d < target - fs)
			return;
		if (!swift_window_used(c, s))
			return;
		cwnd += swift_ai(c, cwnd, s->acked_pkts);
		/*
		 * NSCC's proportional increase: far below target the window
		 * grows by up to pi_pct % of the acked packets (per RTT, of
		 * itself), near it by little.  A window one BDP short takes
		 * a few RTTs, not one RTT per packet: a 2 MB flow at 100
		 * Gbps lasts ~12 RTTs, and the additive increase alone
		 * left it at 32-45 of the ~46-60 packets it needed.  Only
		 * in the lower half of the headroom between the base delay
		 * and the target: a queue nearer the target is shared, and
		 * pushing it up costs the short flows behind it.
		 */
		if (cfg->swift_pi_pct && 2 * d < target +
		    (cfg->swift_queue_delay ? 0 : c->tx.min_rtt))
			cwnd += vt_div64((u64)s->acked_pkts * VT_FP_ONE *
					 cfg->swift_pi_pct * (target - d),
					 100 * target);
		cwnd_clamp(c, cwnd);
		return;
	}
	if (!swift_can_decrease(c, s->now))
		return;
	/* cwnd *= max(1 - beta * (d - target) / d, 1 - max_mdf) */
	swift_decrease(c, s->now, VT_FP_ONE -
		       (u32)vt_div64((u64)cfg->swift_beta_fp * (d - target), d));
}

/*
 * A loss while the delay is below target is not congestion (a flaky link,
 * a dropped frame in a host): the window stays, the path was already
 * penalised.  With the delay at or above target, the queue is ours to
 * drain: max_mdf, at most once per RTT.
 */
static void swift_on_loss(struct vt_conn *c, u64 now)
{
	c->tx.cc.swift.compete_ss = false;
	c->tx.cc.swift.ss_done = true;
	if (c->tx.cc.swift.low_delay)
		return;
	if (swift_can_decrease(c, now))
		swift_decrease(c, now, 0);
}

static void swift_on_timeout(struct vt_conn *c, u64 now)
{
	/* the first timeout since progress: what an undo restores */
	if (!c->tx.rto_undo)
		c->tx.cc.swift.undo_decrease = c->tx.cc.swift.last_decrease;
	c->tx.cc.swift.ss_done = true;
	if (c->tx.consec_rto >= c->cfg.swift_rto_reset) {
		cwnd_clamp(c, c->cfg.swift_min_cwnd_fp);
		c->tx.cc.swift.last_decrease = now;
		return;
	}
	swift_decrease(c, now, 0);
}

/*
 * The timeouts were spurious (the core restored the window): a cut that
 * never should have been made does not hold off the next real one.
 */
static void swift_on_rto_undo(struct vt_conn *c, u64 now)
{
	(void)now;
	c->tx.cc.swift.last_decrease = c->tx.cc.swift.undo_decrease;
}

/*
 * Below one packet of window, send one packet every rtt / cwnd.  The rtt is
 * the smaller of srtt and the latest sample: once a standing queue drains,
 * the sender must not keep waiting for an average inflated by it.
 */
static u64 swift_pacing_gap(const struct vt_conn *c, u32 len)
{
	u64 rtt = c->tx.srtt ? c->tx.srtt : c->cfg.swift_target_ns;
	u64 line = 0;

	/*
	 * At most the link rate (payload, vrdma, UDP and IPv4 headers): a
	 * window leaves as a train the link can carry, not as a burst into
	 * the NIC queue, where it delays this host's ACKs for the flows it
	 * receives (they queue behind it and read as congestion there) and
	 * its own RTT samples.
	 */
	if (c->cfg.swift_pace_mbps)
		line = vt_div64((u64)(len + VT_DATA_HDR_LEN + 28) * 8000,
				c->cfg.swift_pace_mbps);
	if (c->tx.last_rtt && c->tx.last_rtt < rtt)
		rtt = c->tx.last_rtt;
	if (c->tx.cwnd_fp >= VT_FP_ONE)
		return line;
	return VT_MAX(VT_MIN(vt_div64(rtt * VT_FP_ONE, c->tx.cwnd_fp),
			     c->cfg.rto_max_ns), line);
}

/* ---- DCQCN reaction point (CE counts in ACKs stand in for CNPs) ---- */

static void dcqcn_init(struct vt_conn *c, u64 now)
{
	c->tx.cc.dcqcn.rc = c->cfg.dcqcn_line_mbps;
	c->tx.cc.dcqcn.rt = c->cfg.dcqcn_line_mbps;
	c->tx.cc.dcqcn.alpha_fp = VT_FP_ONE;
	c->tx.cc.dcqcn.stage = 0;
	c->tx.cc.dcqcn.last_cut = VT_NEVER;
	c->tx.cc.dcqcn.last_alpha = now;
	c->tx.cc.dcqcn.last_inc = now;
	c->tx.cwnd_fp = c->cfg.max_wnd << VT_FP_SHIFT;
}

/* elapsed timer periods since *last, at most 64; advances *last */
static u32 periods(u64 now, u64 *last, u64 period)
{
	u64 n;

	if (now <= *last)
		return 0;
	n = vt_div64(now - *last, period);
	if (n > 64) {
		*last = now;
		return 64;
	}
	*last += n * period;
	return (u32)n;
}

static void dcqcn_on_ack(struct vt_conn *c, const struct vt_cc_sample *s)
{
	const struct vt_config *cfg = &c->cfg;
	u32 *rc = &c->tx.cc.dcqcn.rc, *rt = &c->tx.cc.dcqcn.rt;
	u32 *alpha = &c->tx.cc.dcqcn.alpha_fp, n;
	u64 cut;

	/* alpha decays by (1 - g) every period without congestion */
	n = periods(s->now, &c->tx.cc.dcqcn.last_alpha, cfg->dcqcn_timer_ns);
	while (n--)
		*alpha -= *alpha >> cfg->dcqcn_g_shift;

	if (s->ce_count &&
	    (c->tx.cc.dcqcn.last_cut == VT_NEVER ||
	     s->now - c->tx.cc.dcqcn.last_cut >= cfg->dcqcn_cnp_ns)) {
		*rt = *rc;
		cut = ((u64)*rc * *alpha) >> (VT_FP_SHIFT + 1);
		*rc = (u32)VT_MAX((u64)cfg->dcqcn_min_mbps, *rc - cut);
		c->stats[VT_STAT_CC_DECREASES]++;
		*alpha = *alpha - (*alpha >> cfg->dcqcn_g_shift) +
			 (VT_FP_ONE >> cfg->dcqcn_g_shift);
		c->tx.cc.dcqcn.stage = 0;
		c->tx.cc.dcqcn.last_cut = s->now;
		c->tx.cc.dcqcn.last_inc = s->now;
		c->tx.cc.dcqcn.last_alpha = s->now;
		return;
	}
	/* fast recovery for dcqcn_f periods, then additive increase */
	n = periods(s->now, &c->tx.cc.dcqcn.last_inc, cfg->dcqcn_timer_ns);
	while (n--) {
		if (++c->tx.cc.dcqcn.stage > cfg->dcqcn_f)
			*rt = VT_MIN(*rt + cfg->dcqcn_rai_mbps,
				     cfg->dcqcn_line_mbps);
		*rc = (u32)(((u64)*rt + *rc) / 2);
	}
}

static void cc_nop(struct vt_conn *c, u64 now)
{
	(void)c;
	(void)now;
}

static u64 dcqcn_pacing_gap(const struct vt_conn *c, u32 len)
{
	/* bytes * 8 / Mbit/s = us; * 1000 = ns */
	return vt_div64((u64)(len ? len : 1) * 8000, c->tx.cc.dcqcn.rc);
}

/* ---- go-back-N with a fixed window (Soft-RoCE behaviour) ---- */

static void gbn_init(struct vt_conn *c, u64 now)
{
	(void)now;
	c->tx.cwnd_fp = c->cfg.gbn_wnd << VT_FP_SHIFT;
}

static void gbn_on_ack(struct vt_conn *c, const struct vt_cc_sample *s)
{
	(void)c;
	(void)s;
}

static u64 no_pacing(const struct vt_conn *c, u32 len)
{
	(void)c;
	(void)len;
	return 0;
}

static const struct vt_cc_ops vt_cc_table[VT_CC_MAX] = {
	[VT_CC_SWIFT] = {
		.name = "swift",
		.init = swift_init,
		.on_ack = swift_on_ack,
		.on_loss = swift_on_loss,
		.on_timeout = swift_on_timeout,
		.on_rto_undo = swift_on_rto_undo,
		.pacing_gap = swift_pacing_gap,
	},
	[VT_CC_DCQCN] = {
		.name = "dcqcn",
		.init = dcqcn_init,
		.on_ack = dcqcn_on_ack,
		.on_loss = cc_nop,
		.on_timeout = cc_nop,
		.on_rto_undo = cc_nop,
		.pacing_gap = dcqcn_pacing_gap,
	},
	[VT_CC_GBN] = {
		.name = "gbn",
		.flags = VT_CCF_GBN,
		.init = gbn_init,
		.on_ack = gbn_on_ack,
		.on_loss = cc_nop,
		.on_timeout = cc_nop,
		.on_rto_undo = cc_nop,
		.pacing_gap = no_pacing,
	},
};

const struct vt_cc_ops *vt_cc_get(u32 algo)
{
	return &vt_cc_table[algo < VT_CC_MAX ? algo : VT_CC_SWIFT];
}
