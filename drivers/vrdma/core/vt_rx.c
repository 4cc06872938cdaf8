// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_rx.c - receiver half: out-of-order acceptance within a window,
 * duplicate detection, in-order delivery, ACK/NACK generation with
 * coalescing by bytes and time.
 */
#include "vt_core.h"

static bool bit_test(const u64 *bm, u32 psn)
{
	u32 i = psn % VT_WIN;

	return (bm[i / 64] >> (i % 64)) & 1;
}

static void bit_set(u64 *bm, u32 psn)
{
	u32 i = psn % VT_WIN;

	bm[i / 64] |= 1ULL << (i % 64);
}

static void bit_clear(u64 *bm, u32 psn)
{
	u32 i = psn % VT_WIN;

	bm[i / 64] &= ~(1ULL << (i % 64));
}

/* The 64 bits of @bm from @psn on (bit j: psn + j), around the ring. */
static u64 bits_from(const u64 *bm, u32 psn)
{
	u32 i = psn % VT_WIN, w = i / 64, s = i % 64;

	if (!s)
		return bm[w];
	return bm[w] >> s | bm[(w + 1) % VT_WIN_WORDS] << (64 - s);
}

static u32 rx_accept(struct vt_conn *c, const struct vt_data_hdr *h,
		     struct vt_rx_verdict *v)
{
	struct vt_rx *rx = &c->rx;
	u32 off = h->psn - rx->epsn;
	bool urgent = false;

	rx->accepted = true;
	bit_set(rx->rcvd, h->psn);
	if (h->flags & VT_F_EOM)
		bit_set(rx->eom, h->psn);
	c->stats[VT_STAT_RX_BYTES] += h->payload_len;
	if (off) {
		/*
		 * A hole before this packet. News for the sender when a new
		 * hole opens (the packet skips past the highest one received)
		 * or an old one shrinks (it lands below it): tell it at once.
		 * A packet that merely continues after a known hole waits for
		 * coalescing, or a 1% loss costs an ACK per packet until the
		 * hole is filled.
		 */
		c->stats[VT_STAT_RX_OOO]++;
		if (h->psn != rx->high_psn + 1)
			urgent = true;
	} else if (bit_test(rx->rcvd, h->psn + 1)) {
		urgent = true;	/* filled a hole */
	}
	if (vt_psn_lt(rx->high_psn, h->psn))
		rx->high_psn = h->psn;
	while (bit_test(rx->rcvd, rx->epsn) && v->deliver_cnt < VT_WIN) {
		if (bit_test(rx->eom, rx->epsn))
			v->msgs_done++;
		bit_clear(rx->rcvd, rx->epsn);
		bit_clear(rx->eom, rx->epsn);
		rx->epsn++;
		v->deliver_cnt++;
	}
	if (v->deliver_cnt)
		rx->seq_nacked = false;
	/*
	 * The end of a message alone does not force an ACK: the sender asks
	 * (ACKREQ) when it waits for one, and coalescing bounds the rest.
	 */
	if (h->flags & (VT_F_ACKREQ | VT_F_RETX))
		urgent = true;
	rx->pend_pkts++;
	rx->pend_bytes += h->payload_len;
	if (rx->pend_bytes >= c->cfg.ack_coalesce_bytes ||
	    (c->cfg.ack_coalesce_pkts &&
	     rx->pend_pkts >= c->cfg.ack_coalesce_pkts))
		urgent = true;
	return urgent;
}

/*
 * How long the ACK of @h may wait: a message's end that did not ask is a
 * lazy one (vt_tx_enqueue_ex()) or, rarely, one with more queued behind
 * it, whose packets then come in the same run (vt_rx_run_end() ACKs it).
 */
static u64 ack_delay(const struct vt_conn *c, const struct vt_data_hdr *h)
{
	u64 lazy = c->cfg.lazy_ack_delay_ns;

	if ((h->flags & VT_F_EOM) && lazy > c->cfg.ack_delay_ns)
		return lazy;
	return c->cfg.ack_delay_ns;
}

/*
 * Hold the ACK for @delay from @now. A lazy hold (longer than the ACK
 * delay) may be served up to half its length late: its sender allows
 * twice the lazy delay (vt_tx.c, ack_hold()), and half of one is left for
 * the way back and that sender's own timer being early. The ordinary
 * delay has no such margin: the sender's loss timers allow just it.
 */
static void hold_ack(struct vt_conn *c, u64 now, u64 delay)
{
	c->rx.ack_deadline = now + delay;
	c->rx.ack_slack = delay > c->cfg.ack_delay_ns ? delay / 2 : 0;
}

/*
 * One data packet arrived at @now.  @ce: the IP header carried ECN CE.
 * @nack: a NACK code the caller wants for this packet (RNR when no receive
 * WQE is posted, remote access or invalid request after its checks), or 0;
 * it is ignored for duplicates.  A fatal one (remote access, invalid
 * request) for a packet beyond the next expected PSN drops the packet
 * instead, so fatal NACKs go out in order.  The verdict says whether to place the
 * payload, which PSNs and messages became deliverable in order, and when
 * an ACK is due.
 */
int vt_rx_on_data(struct vt_conn *c, u64 now, const struct vt_data_hdr *h,
		  bool ce, u8 nack, struct vt_rx_verdict *v)
{
	struct vt_rx *rx = &c->rx;
	u32 off;
	bool urgent = false;

	if (!h || !v || nack > VT_NACK_MAX)
		return VT_ERR_INVAL;
	memset(v, 0, sizeof(*v));
	v->deliver_psn = rx->epsn;
	off = h->psn - rx->epsn;
	c->stats[VT_STAT_RX_PKTS]++;
	if (ce) {
		c->stats[VT_STAT_RX_CE]++;
		rx->ce_pend++;
		urgent = true;
	}
	rx->last_ts = h->tx_ts;
	rx->last_arrival = now;
	rx->last_path = h->path;
	rx->last_psn = h->psn;
	rx->last_dup = false;

	if (vt_psn_lt(h->psn, rx->epsn) ||
	    (off < rx->rwnd && bit_test(rx->rcvd, h->psn))) {
		c->stats[VT_STAT_RX_DUP]++;
		rx->last_dup = true;
		v->result = VT_RX_DUP;
		urgent = true;
	} else if (off >= rx->rwnd) {
		c->stats[VT_STAT_RX_OUT_OF_WND]++;
		rx->nack = VT_NACK_SEQ;
		v->result = VT_RX_OUT_OF_WND;
		urgent = true;
	} else if (nack && nack != VT_NACK_RNR && off) {
		/*
		 * A fatal NACK waits for its turn: the requester fails the
		 * message at cum_psn, and what comes before it must complete
		 * first. Not taken, not SACKed: its retransmission after the
		 * hole is filled is checked again, in order.
		 */
		c->stats[VT_STAT_RX_OOO]++;
		v->result = VT_RX_DROP;
	} else if (nack) {
		rx->nack = nack;
		v->result = VT_RX_NACKED;
		urgent = true;
	} else if (rx->strict && off) {
		/* go-back-N: drop, one sequence NACK per expected PSN */
		c->stats[VT_STAT_RX_OOO]++;
		v->result = VT_RX_DROP;
		if (!rx->seq_nacked) {
			rx->seq_nacked = true;
			rx->nack = VT_NACK_SEQ;
			urgent = true;
		}
	} else {
		v->result = VT_RX_ACCEPT;
		urgent |= rx_accept(c, h, v);
	}

	if (urgent)
		rx->ack_now = true;
	else if (rx->ack_deadline == VT_NEVER && v->result == VT_RX_ACCEPT)
		hold_ack(c, now, ack_delay(c, h));
	v->ack_now = rx->ack_now;
	v->ack_at = rx->ack_now ? now : rx->ack_deadline;
	return 0;
}

/*
 * @pkts data packets arrived together and were taken: one UDP GSO batch or
 * GRO aggregate, what one run of the sender produced. An ACK they left
 * pending is due now when they were several: the sender has nothing more
 * on its way from that run, and a batch is ACKed once, as TCP ACKs a GRO
 * aggregate, instead of waiting for the next batch or for the ACK delay
 * (a timer per batch where a timer is costly, and a sender that waits on
 * it meanwhile). A lone packet coalesces as before: small messages keep
 * their one ACK per 16. Only with ack_batch_end (off in the VM profile).
 */
void vt_rx_run_end(struct vt_conn *c, u32 pkts)
{
	if (c->cfg.ack_batch_end && pkts > 1 && c->rx.pend_pkts)
		c->rx.ack_now = true;
}

bool vt_rx_ack_due(const struct vt_conn *c, u64 now)
{
	return c->rx.ack_now || now >= c->rx.ack_deadline;
}

/*
 * Data arrived that no ACK has covered yet: a sender about to send data
 * of its own sends it now (the ACK a reply would carry, were there room
 * for one in the data header), so a coalesced ACK waits for nothing in a
 * request-response exchange.
 */
bool vt_rx_ack_pending(const struct vt_conn *c)
{
	return c->rx.ack_deadline != VT_NEVER || c->rx.ack_now;
}

u64 vt_rx_next_wakeup(const struct vt_conn *c)
{
	return c->rx.ack_now ? 0 : c->rx.ack_deadline;
}

/*
 * How late after vt_rx_next_wakeup() a timer may serve the ACK: a
 * platform whose timers cost less with slack (the kernel's range
 * hrtimers: no clock event programmed for each) need not arm an exact one
 * for every held ACK. 0: exactly then.
 */
u64 vt_rx_ack_slack(const struct vt_conn *c)
{
	return c->rx.ack_now || c->rx.ack_deadline == VT_NEVER ?
	       0 : c->rx.ack_slack;
}

void vt_rx_set_rwnd(struct vt_conn *c, u32 rwnd)
{
	c->rx.rwnd = VT_MAX(1U, VT_MIN(rwnd, c->cfg.rx_wnd));
}

/*
 * The ACK a closed connection, whose receive side stopped at @epsn, gives
 * a data packet @h of its former peer: everything before @epsn arrived,
 * so a retransmission of it is acknowledged, as TCP's TIME_WAIT answers a
 * retransmitted FIN (the last ACK may have been lost after the
 * application closed). False for anything else, which stays unanswered.
 * A window of one packet: new data has nowhere to go, and it is the
 * sender's retry count, not a closed window, that ends it.
 */
bool vt_rx_closed_ack(u32 epsn, u32 remote_id, const struct vt_data_hdr *h,
		      struct vt_ack *a)
{
	if (!vt_op_is_data(h->opcode) || !vt_psn_lt(h->psn, epsn))
		return false;
	memset(a, 0, sizeof(*a));
	a->opcode = VT_OP_ACK;
	a->flags = VT_AF_DUP;
	a->echo_path = h->path;
	a->dst_conn = remote_id;
	a->cum_psn = epsn;
	a->trig_psn = h->psn;
	a->echo_ts = h->tx_ts;
	a->rwnd = 1;
	return true;
}

/* Where the receive side stands: every PSN before this one arrived. */
u32 vt_rx_cum_psn(const struct vt_conn *c)
{
	return c->rx.epsn;
}

/* Some packet was accepted since the connection started. */
bool vt_rx_accepted(const struct vt_conn *c)
{
	return c->rx.accepted;
}

/* The wait advertised in RNR NACKs (us); 0 lets the sender choose. */
void vt_rx_set_rnr_wait(struct vt_conn *c, u16 wait_us)
{
	c->rx.rnr_wait_us = wait_us;
}

/* Build the ACK (or NACK) owed now and clear the pending state. */
void vt_rx_build_ack(struct vt_conn *c, u64 now, struct vt_ack *a)
{
	struct vt_rx *rx = &c->rx;
	u32 w, lim = VT_MIN(rx->rwnd, (u32)VT_SACK_BITS);
	u64 hold = now > rx->last_arrival ? now - rx->last_arrival : 0;

	memset(a, 0, sizeof(*a));
	a->opcode = rx->nack ? VT_OP_NACK : VT_OP_ACK;
	a->nack_code = rx->nack;
	a->rnr_wait_us = rx->nack == VT_NACK_RNR ? rx->rnr_wait_us : 0;
	a->flags = rx->last_dup ? VT_AF_DUP : 0;
	a->echo_path = rx->last_path;
	a->dst_conn = c->remote_id;
	a->cum_psn = rx->epsn;
	a->trig_psn = rx->last_psn;
	a->echo_ts = rx->last_ts;
	a->hold_ns = (u32)VT_MIN(hold, (u64)0xffffffffU);
	a->ce_count = (u8)VT_MIN(rx->ce_pend, 255U);
	a->rwnd = (u16)VT_MIN(rx->rwnd, 0xffffU);
	/*
	 * A word at a time (bit by bit, this loop was a tenth of a bulk
	 * transfer's instructions): bits 1 .. lim - 1, epsn itself is
	 * missing by definition.
	 */
	for (w = 0; w < VT_SACK_WORDS && 64 * w < lim; w++) {
		a->sack[w] = bits_from(rx->rcvd, rx->epsn + 64 * w);
		if (lim - 64 * w < 64)
			a->sack[w] &= (1ULL << (lim - 64 * w)) - 1;
	}
	a->sack[0] &= ~1ULL;

	c->stats[rx->nack ? VT_STAT_NACKS_SENT : VT_STAT_ACKS_SENT]++;
	if (rx->nack == VT_NACK_RNR)
		c->stats[VT_STAT_RNR_SENT]++;
	rx->pend_pkts = 0;
	rx->pend_bytes = 0;
	rx->ce_pend = 0;
	rx->ack_now = false;
	rx->ack_deadline = VT_NEVER;
	rx->nack = VT_NACK_NONE;
	rx->last_dup = false;
}

/*
 * Would vt_rx_on_data() accept a packet with @psn as new? Lets the caller
 * bind resources (a receive WQE, an rkey check) only to packets that
 * will be placed, never to duplicates or packets beyond the window.
 */
bool vt_rx_is_new(const struct vt_conn *c, u32 psn)
{
	const struct vt_rx *rx = &c->rx;
	u32 off = psn - rx->epsn;

	if (vt_psn_lt(psn, rx->epsn) || off >= rx->rwnd)
		return false;
	if (rx->strict && off)
		return false;	/* go-back-N drops what is out of order */
	return !bit_test(rx->rcvd, psn);
}

/*
 * Take @psn as the first PSN of the peer when nothing was accepted yet.
 * A verbs responder may answer RDMA READs from RTR, before (or without)
 * ever being given its send PSN, so the requester cannot know where the
 * responses start: the first packet of the peer's first message tells.
 * Packets of the foreign space seen before it were counted as duplicates
 * or beyond the window, never accepted. Returns VT_ERR_INVAL once any
 * packet was accepted.
 */
int vt_rx_adopt_psn(struct vt_conn *c, u32 psn)
{
	struct vt_rx *rx = &c->rx;

	if (rx->accepted)
		return VT_ERR_INVAL;
	rx->epsn = psn;
	rx->high_psn = psn - 1;
	memset(rx->rcvd, 0, sizeof(rx->rcvd));
	memset(rx->eom, 0, sizeof(rx->eom));
	rx->nack = VT_NACK_NONE;
	return 0;
}

/*
 * The entropy (UDP source port offset) for the ACK just built: with
 * ack_spray a fresh pseudo-random one per ACK, else (and for go-back-N)
 * 0: one path for all of a connection's ACKs.  On a fabric the data of a permutation loads
 * to ~100 %, the ACKs of a connection on one path queue behind other
 * flows' data there and read as congestion at the sender; sprayed, they
 * meet the average queue.  A platform that does not call this sends
 * every ACK on one path, as before.
 */
u16 vt_rx_ack_entropy(struct vt_conn *c)
{
	u32 x;

	/* the go-back-N baseline stays rxe: one source port */
	if (!c->cfg.ack_spray || (c->ops->flags & VT_CCF_GBN))
		return 0;
	x = c->rx.ack_rand ? c->rx.ack_rand : 0x9e3779b9U;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->rx.ack_rand = x;
	return (u16)(x % VT_REPS_SPACE);
}
