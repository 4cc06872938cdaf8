// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_path.c - multipath: per-packet spraying over num_paths path slots with
 * penalties on paths that saw ECN, loss or a timeout, each packet on its
 * own recycled entropy (REPS) or on its slot's; single-path mode repaths
 * PLB-style (Linux net/ipv4/tcp_plb.c) after plb_rounds congested rounds.
 */
#include "vt_core.h"

/* The UDP source port offset for a path slot; changes when it repaths. */
u16 vt_path_entropy(const struct vt_conn *c, u32 path)
{
	if (path >= c->cfg.num_paths)
		return 0;
	return (u16)(path + c->cfg.num_paths * c->tx.path[path].gen);
}

u32 vt_paths_in_use(const struct vt_conn *c, u64 now)
{
	u32 i, n = 0;

	for (i = 0; i < c->cfg.num_paths; i++)
		if (c->tx.path[i].penalty_until <= now)
			n++;
	return n;
}

void vt_path_repath(struct vt_conn *c, u32 path)
{
	if (path >= c->cfg.num_paths)
		return;
	c->tx.path[path].gen++;
	c->stats[VT_STAT_REPATHS]++;
}

/*
 * Keep a path out of the spray for mult * max(path_penalty, srtt).  A
 * timeout (mult >= 4) also recycles its entropy: the flow hash that led
 * into a black hole is abandoned.
 */
void vt_path_penalize(struct vt_conn *c, u32 path, u64 now, u32 mult)
{
	struct vt_path *p;
	u64 until;

	if (c->cfg.num_paths == 1 || path >= c->cfg.num_paths)
		return;
	p = &c->tx.path[path];
	until = now + VT_MAX(c->cfg.path_penalty_ns, c->tx.srtt) * mult;
	if (until > p->penalty_until)
		p->penalty_until = until;
	if (mult >= 4)
		vt_path_repath(c, path);
}

/*
 * Round-robin over the paths that are not penalised, skipping @avoid (the
 * path a lost packet took) when another is usable.  If every path is
 * penalised, take the one whose penalty ends first.
 */
static u32 path_rr(struct vt_conn *c, u64 now, int avoid)
{
	u32 n = c->cfg.num_paths, i, p, best = 0;
	u64 best_until = VT_NEVER;

	for (i = 0; i < n; i++) {
		p = (c->tx.path_rr + i) % n;
		if ((int)p == avoid)
			continue;
		if (c->tx.path[p].penalty_until <= now) {
			c->tx.path_rr = p + 1;
			return p;
		}
		if (c->tx.path[p].penalty_until < best_until) {
			best_until = c->tx.path[p].penalty_until;
			best = p;
		}
	}
	c->tx.path_rr = best + 1;
	return best;
}

/*
 * The path of a packet. New packets (@avoid < 0) stay on one path for
 * path_burst packets while it is not penalised, so that a run of them can
 * leave as one batch (one GSO skb); a retransmission turns at once.
 */
u32 vt_path_pick(struct vt_conn *c, u64 now, int avoid)
{
	struct vt_tx *t = &c->tx;

	if (c->cfg.num_paths == 1)
		return 0;
	if (avoid < 0 && t->path_left &&
	    t->path[t->path_cur].penalty_until <= now) {
		t->path_left--;
		return t->path_cur;
	}
	if (avoid >= 0)
		return path_rr(c, now, avoid);
	t->path_cur = path_rr(c, now, -1);
	t->path_left = c->cfg.path_burst - 1;
	return t->path_cur;
}

/*
 * The run of new packets on the current path ends here: the next one
 * turns.  The kernel calls this when a batch (one GSO skb) is full before
 * path_burst packets filled it, so that the next skb starts a new burst
 * instead of taking the burst's last few packets alone.
 */
void vt_path_end_burst(struct vt_conn *c)
{
	c->tx.path_left = 0;
}

/*
 * PLB: a round ends when snd_una passes the PSN that was next at its start.
 * A round is congested when >= plb_cong_pct of its acked packets carried
 * CE or a delay above target; plb_rounds congested rounds in a row repath.
 */
void vt_plb_on_ack(struct vt_conn *c, u32 acked, u32 congested)
{
	struct vt_tx *t = &c->tx;

	if (c->cfg.num_paths != 1)
		return;
	t->round_pkts += acked;
	t->round_cong += VT_MIN(congested, acked);
	if (vt_psn_lt(t->snd_una, t->round_end) || !t->round_pkts)
		return;
	if ((u64)t->round_cong * 100 >=
	    (u64)c->cfg.plb_cong_pct * t->round_pkts)
		t->plb_bad++;
	else
		t->plb_bad = 0;
	if (t->plb_bad >= c->cfg.plb_rounds) {
		vt_path_repath(c, 0);
		t->plb_bad = 0;
	}
	t->round_end = t->snd_nxt;
	t->round_pkts = 0;
	t->round_cong = 0;
}

/*
 * REPS (recycled entropy packet spraying, as UEC's): every packet gets an
 * entropy of its own.  One whose ACK came back without CE is reused by a
 * later packet, so routes that deliver cleanly keep their share; one that
 * saw CE, a loss or a timeout is not, and a fresh pseudo-random entropy
 * tries another route.  Four fixed entropies per connection collide on
 * hashed links, and a sprayed flow is then held to its slowest path; a
 * window of recycled ones spreads like per-packet spraying and still
 * steers around hot links.  The path slot (the header's path field)
 * stays, for RACK's per-path RTT and the penalties.
 */
bool vt_reps_on(const struct vt_conn *c)
{
	return c->cfg.path_reps && c->cfg.num_paths > 1;
}

u16 vt_reps_next(struct vt_conn *c)
{
	struct vt_tx *t = &c->tx;
	u32 x;

	if (t->reps_head != t->reps_tail)
		return t->reps[t->reps_head++ % VT_REPS_MAX];
	/* xorshift32: no random source in the core, none needed */
	x = t->reps_rand ? t->reps_rand : 0x9e3779b9U;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	t->reps_rand = x;
	return (u16)(x % VT_REPS_SPACE);
}

void vt_reps_recycle(struct vt_conn *c, u16 entropy)
{
	struct vt_tx *t = &c->tx;

	if (t->reps_tail - t->reps_head >= c->cfg.path_reps)
		return;
	t->reps[t->reps_tail++ % VT_REPS_MAX] = entropy;
}
