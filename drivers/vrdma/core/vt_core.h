/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vt_core.h - the vrdma transport engine: a functional core.
 *
 * Every entry point takes the current time (u64 ns, caller's monotonic
 * clock) and one event, updates the connection and returns decisions:
 * what to send or retransmit, when to wake up, what to acknowledge.  The
 * core never allocates, sleeps, locks or reads a clock; the caller embeds
 * struct vt_conn (sizeof is documented in docs/transport.md) and
 * serialises calls on one connection.  Algorithms and defaults:
 * docs/transport.md.
 */
#ifndef VT_CORE_H
#define VT_CORE_H

#include "vt_platform.h"
#include "vt_wire.h"

/* packets in flight per connection, a power of two; PSN metadata ring */
#ifndef VT_WIN
#define VT_WIN		1024
#endif
#define VT_WIN_WORDS	(VT_WIN / 64)
#define VT_MAX_PATHS	16
#define VT_REPS_MAX	64	/* clean entropies a sender keeps (REPS) */
#define VT_REPS_SPACE	4096	/* fresh entropies are below this */
#define VT_MSGQ		64	/* queued, not yet fully sent messages */
#define VT_NEVER	(~(u64)0)
#define VT_FP_SHIFT	16	/* fixed point: 1.0 == 1 << 16 */
#define VT_FP_ONE	(1U << VT_FP_SHIFT)

enum vt_cc_algo {
	VT_CC_SWIFT = 0,	/* delay-based default (Swift/NSCC family) */
	VT_CC_DCQCN = 1,	/* ECN rate-based RoCE baseline */
	VT_CC_GBN = 2,		/* fixed window go-back-N, like Soft-RoCE */
	VT_CC_MAX,
};

struct vt_config {
	u32 mtu;		/* payload bytes per packet */
	u32 max_wnd;		/* packets, <= VT_WIN */
	u32 init_cwnd;		/* packets, Swift initial window */
	u32 rx_wnd;		/* receive reorder window, packets <= VT_WIN */
	u32 cc;			/* enum vt_cc_algo */
	u32 num_paths;		/* 1 = single path + PLB, else spraying */
	u32 path_burst;		/* new packets per path before the spray turns */
	u64 rto_min_ns;
	u64 rto_max_ns;
	u64 rto_init_ns;	/* before the first RTT sample */
	u32 retry_cnt;		/* verbs retry_cnt, 0..7 */
	/*
	 * RETRY_EXC also waits until this long after the first of the
	 * timeouts in a row (the verbs local ACK timeout x (retry_cnt + 1));
	 * 0: retry_cnt timeouts alone decide
	 */
	u64 fail_after_ns;
	u32 rnr_retry;		/* verbs rnr_retry, 7 = infinite */
	u64 rnr_delay_ns;	/* RNR wait when the NACK suggests none */
	u64 tlp_min_ns;
	u32 ack_coalesce_bytes;
	u32 ack_coalesce_pkts;	/* ACK at once after this many packets */
	u64 ack_delay_ns;
	/*
	 * The ACK of a lone packet that ends a message without asking (the
	 * sender's VT_MSG_LAZY_ACK: nobody waits for it) waits this long,
	 * to be coalesced with the next ones; 0: ack_delay_ns.
	 */
	u64 lazy_ack_delay_ns;
	/*
	 * 1: the ACK a batch (several packets of one receive run) left
	 * pending is due at its end (vt_rx_run_end()); 0: coalescing, the
	 * sender's requests and the delay decide, as for lone packets
	 */
	u32 ack_batch_end;
	u32 reo_mult_max;	/* RACK reorder window cap, in min_rtt/4 */
	u32 rack_slack_pct;	/* RACK waits this % of srtt more, per path */
	u64 path_penalty_ns;	/* base penalty (ECN); x2 loss, x4 RTO */
	/*
	 * resend a loss per packet delivered even with the window full;
	 * RTO from the oldest packet in flight
	 */
	u32 retx_conserve;
	/*
	 * with packets in flight, new packets wait until this many (at most
	 * half the window) fit: one batch per ACK, not a few; 0 = off
	 */
	u32 tx_defer_pkts;
	/*
	 * sprayed: an entropy per packet, up to this many clean ones reused
	 * (REPS); 0 = one entropy per path slot
	 */
	u32 path_reps;
	/*
	 * each ACK its own pseudo-random entropy (vt_rx_ack_entropy), so
	 * that a connection's ACKs spread over the paths instead of queueing
	 * behind other flows' data on one; 0 = one entropy for all ACKs
	 */
	u32 ack_spray;
	u32 plb_rounds;		/* congested rounds before repathing */
	u32 plb_cong_pct;	/* % congested packets making a round bad */
	/* Swift */
	u64 swift_target_ns;
	u32 swift_ai_fp;	/* additive increase, packets, fixed point */
	u32 swift_beta_fp;
	u32 swift_max_mdf_fp;
	u32 swift_min_cwnd_fp;
	u32 swift_qa_mult;	/* fast decrease when delay > mult*target */
	u32 swift_use_ecn;
	u32 swift_rto_reset;	/* consecutive RTOs before min cwnd */
	u32 swift_queue_delay;	/* 1: compare delay above its minimum */
	u32 swift_jitter_mult;	/* queue-delay mode: target += mult * jitter */
	/*
	 * Flow scaling: target += range * (1/sqrt(cwnd) - 1/sqrt(max)) /
	 * (1/sqrt(min) - 1/sqrt(max)), cwnd clamped to [min, max]; 0 = off
	 */
	u64 swift_fs_range_ns;
	u32 swift_fs_min_cwnd_fp;
	u32 swift_fs_max_cwnd;	/* packets */
	/* below target also + pct% x (target - delay) / target per acked
	 * packet (NSCC), 0 = off
	 */
	u32 swift_pi_pct;
	/* pace at most at this rate (the link's), grow only a used window;
	 * 0 = bursts
	 */
	u32 swift_pace_mbps;
	/*
	 * Competitive mode: once the delay has stayed above the (unscaled)
	 * target for this many RTTs with the window below one packet and
	 * grew by the target meanwhile, a queue this flow cannot drain
	 * stands (a loss-based flow fills it):
	 * grow additively and cut on loss only, until the delay falls below
	 * the target again; 0 = off
	 */
	u32 swift_compete_rtts;
	/*
	 * Once the delay samples of swift_bdp_wait_pct % of an SRTT from
	 * the first one were all below the target and unmarked, the window
	 * is lifted to swift_bdp_pct % of the path's BDP (smallest RTT x
	 * pacing rate) when it is below; 0 = off
	 */
	u32 swift_bdp_pct;
	u32 swift_bdp_wait_pct;
	/* DCQCN */
	u32 dcqcn_line_mbps;
	u32 dcqcn_min_mbps;
	u32 dcqcn_rai_mbps;
	u32 dcqcn_g_shift;	/* g = 1 / 2^shift */
	u64 dcqcn_timer_ns;	/* alpha and rate increase period */
	u64 dcqcn_cnp_ns;	/* at most one cut per interval */
	u32 dcqcn_f;		/* fast recovery stages */
	/* go-back-N baseline */
	u32 gbn_wnd;
	u64 gbn_rto_ns;
};

struct vt_conn;

struct vt_cc_sample {
	u64 now;
	u64 delay_ns;		/* fabric delay sample, valid if has_delay */
	u32 acked_pkts;
	u32 ce_count;
	bool has_delay;
};

#define VT_CCF_GBN	0x1	/* go-back-N recovery, in-order receiver */

struct vt_cc_ops {
	const char *name;
	u32 flags;
	void (*init)(struct vt_conn *c, u64 now);
	void (*on_ack)(struct vt_conn *c, const struct vt_cc_sample *s);
	void (*on_loss)(struct vt_conn *c, u64 now);
	void (*on_timeout)(struct vt_conn *c, u64 now);
	/* the timeouts since the last progress were spurious: undo them */
	void (*on_rto_undo)(struct vt_conn *c, u64 now);
	u64 (*pacing_gap)(const struct vt_conn *c, u32 len);
};

enum vt_cause {
	VT_CAUSE_NONE = 0,
	VT_CAUSE_RACK,		/* time-based loss detection */
	VT_CAUSE_TLP,		/* tail loss probe */
	VT_CAUSE_RTO,
	VT_CAUSE_NACK,		/* sequence-error NACK */
	VT_CAUSE_RNR,
	VT_CAUSE_MAX,
};

enum vt_stat {
	VT_STAT_TX_PKTS,
	VT_STAT_TX_BYTES,
	VT_STAT_RETX_PKTS,
	VT_STAT_RETX_RACK,
	VT_STAT_RETX_TLP,
	VT_STAT_RETX_RTO,
	VT_STAT_RETX_NACK,
	VT_STAT_RETX_RNR,
	VT_STAT_TIMEOUTS,
	VT_STAT_TLP_PROBES,
	VT_STAT_SPURIOUS,
	VT_STAT_ACKS_RCVD,
	VT_STAT_NACKS_RCVD,
	VT_STAT_ACKS_STALE,	/* cum_psn before snd_una: old, reordered */
	VT_STAT_ACKS_INVALID,	/* cum_psn beyond snd_nxt: forged, corrupt */
	VT_STAT_ECN_CE_RCVD,
	VT_STAT_CC_DECREASES,	/* window (DCQCN: rate) cuts by the CC law */
	VT_STAT_RNR_RCVD,
	VT_STAT_REPATHS,
	VT_STAT_MSGS_DONE,
	VT_STAT_RX_PKTS,
	VT_STAT_RX_BYTES,
	VT_STAT_RX_DUP,
	VT_STAT_RX_OOO,
	VT_STAT_RX_OUT_OF_WND,
	VT_STAT_RX_CE,
	VT_STAT_RNR_SENT,	/* RNR NACKs among NACKS_SENT */
	VT_STAT_ACKS_SENT,
	VT_STAT_NACKS_SENT,
	VT_STAT_CWND_UNDO,
	VT_STAT_RTO_UNDO,	/* timeouts found spurious by the echo, undone */
	VT_STAT_RTO_STALLS,	/* timeouts and probes put off: the host had stalled */
	/* gauges */
	VT_STAT_CWND_FP,
	VT_STAT_RATE_MBPS,
	VT_STAT_SRTT_NS,
	VT_STAT_RTTVAR_NS,
	VT_STAT_MIN_RTT_NS,
	VT_STAT_RTO_NS,
	VT_STAT_INFLIGHT,
	VT_STAT_PATHS_IN_USE,
	VT_STAT_MAX,
};

extern const char *const vt_stat_names[VT_STAT_MAX];

/* per-PSN sender metadata (32 bytes) */
struct vt_tx_pkt {
	u64 xmit_ts;		/* last transmission */
	u32 msg_id;
	u32 msg_off;
	u32 msg_len;
	u16 len;
	u8 flags;		/* VT_PKT_* */
	u8 wflags;		/* VT_F_SOM / VT_F_EOM */
	u8 path;
	u8 retx;		/* retransmissions so far */
	u8 cause;		/* enum vt_cause of a pending retransmit */
	u8 pad;
	u16 entropy;		/* path_reps: the entropy it was sent with */
};

struct vt_msgq_ent {
	u32 id;
	u32 len;
	u32 flags;		/* VT_MSG_* */
};

struct vt_path {
	u64 penalty_until;
	u64 undo_until;		/* penalty_until before the first timeout */
	u32 gen;		/* entropy generation, bumped on repath */
	u32 undo_gen;		/* gen before the first timeout */
	u64 rtt;		/* recent RTT here: up at once, down by 1/8 */
};

struct vt_tx {
	u32 snd_una;		/* oldest unacknowledged PSN */
	u32 snd_nxt;		/* next new PSN */
	u32 inflight;		/* sent, not delivered, not marked lost */
	u32 lost;		/* marked lost, not yet retransmitted */
	u32 retx_hint;		/* no lost packet below this PSN */
	u32 rwnd;
	u32 cwnd_fp;		/* packets, fixed point */
	int error;		/* sticky VT_ERR_*, 0 while healthy */
	u32 mq_head, mq_tail, mq_off;
	u32 backoff, retries, rnr_count, consec_rto;
	u64 retry_since;	/* when the first timeout since progress fired */
	u32 recovery_end;
	bool in_recovery;
	bool tlp_pending;	/* probe to send at next poll */
	bool tlp_out;		/* probe in flight, no TLP until progress */
	bool burst;		/* new packets fill the window: no deferral */
	/*
	 * lazy_end: the PSN of the last lazy message end sent without ACKREQ,
	 * whose ACK the receiver may hold (lazy_ack_delay_ns) while it is
	 * unacknowledged and no packet that asks has followed it (lazy_out)
	 */
	bool lazy_out;
	u32 lazy_end;
	u32 reo_mult;
	u32 reo_clean;		/* packets acked since the last spurious */
	u32 undo_cwnd_fp;	/* cwnd before the recovery cut, 0 = no undo */
	u32 undo_retx;		/* retransmits of that episode not yet found spurious */
	bool rto_undo;		/* timeouts since the last progress may be undone */
	u32 rto_undo_cwnd_fp;	/* cwnd before the first of them */
	u32 rto_undo_paths;	/* paths they penalised or repathed */
	u64 rto_undo_ts;	/* when the first fired: later sends echo >= */
	/*
	 * F-RTO (RFC 5682): after the first timeout since progress, one
	 * retransmission, then nothing until an ACK says whether the timeout
	 * was spurious (frto: the next retransmission is that one;
	 * frto_wait: it is out).
	 */
	bool frto, frto_wait;
	u32 path_rr;
	u32 reps_head, reps_tail;	/* reps[]: clean entropies, FIFO */
	u32 reps_rand;			/* xorshift state for fresh ones */
	bool ack_clean;			/* the ACK in hand carried no CE */
	u32 retx_credit;		/* resends the last ACK's deliveries allow */
	bool retx_force;		/* one resend past a full window */
	u16 reps[VT_REPS_MAX];
	u32 path_cur, path_left;	/* the spray's path and packets left on it */
	u32 round_end, round_pkts, round_cong, plb_bad;
	u32 dlv_cur, dlv_prev;	/* packets delivered this / last RTT */
	u64 dlv_start;
	u64 next_send_ts;
	u64 rto_deadline, tlp_deadline, reo_deadline, rnr_until;
	u64 rto_stall_to, tlp_stall_to;	/* deadlines as vt_tx_timer_late() set them */
	u64 rack_xmit_ts, rack_rtt;
	u32 rack_psn;
	bool rack_valid;		/* some packet was delivered */
	u64 srtt, rttvar, min_rtt, last_rtt;
	union {
		struct {
			u64 last_decrease;
			u64 min_delay;	/* swift_queue_delay: base */
			u64 stand_delay; /* min since stand_start */
			u64 stand_start; /* the current srtt/2 window */
			u64 stand_prev;	/* min of the window before, or 0 */
			u64 prev_delay;	/* previous raw sample */
			u64 jitter;	/* EWMA of |sample - previous| */
			bool low_delay;	/* last verdict: delay below target */
			bool compete;	/* swift_compete_rtts: loss-driven */
			bool compete_ss; /* and in slow start: no loss yet */
			u64 high_since;	/* delay above target since */
			u64 high_min;	/* the lowest delay since then */
			u64 undo_decrease; /* last_decrease before a timeout */
			bool ss_done;	/* the start has ended (lift or not) */
			u64 ss_first;	/* the start's first sample */
		} swift;
		struct {
			u32 rc, rt, alpha_fp, stage;
			u64 last_cut, last_alpha, last_inc;
		} dcqcn;
	} cc;
	struct vt_msgq_ent mq[VT_MSGQ];
	struct vt_path path[VT_MAX_PATHS];
	struct vt_tx_pkt ring[VT_WIN];
};

struct vt_rx {
	u32 epsn;		/* next expected PSN; all before received */
	u32 pend_pkts, pend_bytes;
	u32 ce_pend;
	u32 last_psn;
	u32 high_psn;		/* highest PSN accepted (epsn - 1 at first) */
	u64 last_ts, last_arrival;
	u64 ack_deadline;	/* VT_NEVER when no ACK is owed */
	u64 ack_slack;		/* how late it may be served: vt_rx_ack_slack() */
	bool ack_now;
	bool last_dup;
	bool strict;		/* in-order only (go-back-N) */
	bool seq_nacked;	/* a sequence NACK for epsn went out */
	bool accepted;		/* some packet was accepted */
	u8 last_path;
	u8 nack;
	u16 rnr_wait_us;
	u32 rwnd;
	u32 ack_rand;		/* ack_spray: xorshift state */
	u64 rcvd[VT_WIN_WORDS];
	u64 eom[VT_WIN_WORDS];
};

struct vt_conn {
	struct vt_config cfg;
	const struct vt_cc_ops *ops;
	u32 local_id, remote_id;
	struct vt_tx tx;
	struct vt_rx rx;
	u64 stats[VT_STAT_MAX];
};

/* ---- setup ---- */
void vt_config_default(struct vt_config *cfg);
/* the kernel module's defaults for VM paths (vt_config_default + VM) */
void vt_config_vm(struct vt_config *cfg);
/* vt_config_vm()'s Swift target, us: also the module parameter's default */
#define VT_VM_SWIFT_TARGET_US	500
/* and its ACK delays, us: also the module parameters' defaults */
#define VT_VM_ACK_DELAY_US	100
#define VT_VM_LAZY_ACK_DELAY_US	1000
int vt_config_check(const struct vt_config *cfg);
int vt_conn_init(struct vt_conn *c, const struct vt_config *cfg,
		 u32 local_id, u32 remote_id, u32 init_psn, u32 peer_psn,
		 u64 now);
const struct vt_cc_ops *vt_cc_get(u32 algo);
/* Swift's flow-scaled addition to its target for this window, ns */
u64 vt_swift_fs_target(const struct vt_config *cfg, u32 cwnd_fp);

/* ---- sender ---- */
enum vt_tx_action {
	VT_TX_IDLE = 0,		/* nothing to do until a new event */
	VT_TX_WAIT,		/* nothing now, call vt_tx_on_timer at wake_at */
	VT_TX_SEND,		/* transmit new PSN */
	VT_TX_RETX,		/* retransmit PSN (cause) */
	VT_TX_ERROR,		/* connection failed: error */
};

struct vt_tx_decision {
	u32 action;		/* enum vt_tx_action */
	u32 psn;
	u32 len;		/* payload bytes */
	u32 msg_id, msg_off, msg_len;
	u8 flags;		/* wire flags: VT_F_SOM/EOM/ACKREQ/RETX */
	u8 path;		/* path slot: put it in the header */
	u16 entropy;		/* add to the UDP source port base */
	u8 cause;		/* enum vt_cause for VT_TX_RETX */
	u64 ts;			/* put it in tx_ts */
	u64 wake_at;		/* VT_TX_WAIT */
	int error;		/* VT_TX_ERROR */
};

struct vt_ack_result {
	u32 acked_pkts;		/* newly delivered (cumulative + SACK) */
	u32 cum_advanced;	/* snd_una moved by this many PSNs */
	u32 msgs_done;		/* messages fully acked, in order */
	u32 newly_lost;
	int error;		/* VT_ERR_* when the ACK failed the QP */
};

int vt_tx_enqueue(struct vt_conn *c, u32 msg_id, u32 msg_len);
/*
 * VT_MSG_LAZY_ACK: nobody waits for this message's ACK (an unsignaled
 * WQE whose doorbell does not depend on its release): draining the queue
 * with it asks for no immediate ACK, and the receiver coalesces it.
 */
#define VT_MSG_LAZY_ACK	(1U << 0)
int vt_tx_enqueue_ex(struct vt_conn *c, u32 msg_id, u32 msg_len, u32 flags);
int vt_tx_poll(struct vt_conn *c, u64 now, struct vt_tx_decision *d);
int vt_tx_on_ack(struct vt_conn *c, u64 now, const struct vt_ack *a,
		 struct vt_ack_result *r);
void vt_tx_on_timer(struct vt_conn *c, u64 now);
void vt_tx_timer_late(struct vt_conn *c, u64 now);
void vt_tx_probe_now(struct vt_conn *c, u64 now);
u64 vt_tx_next_wakeup(const struct vt_conn *c);
u64 vt_tx_loss_wakeup(const struct vt_conn *c);
u64 vt_tx_fine_wakeup(const struct vt_conn *c);
u32 vt_tx_wnd(const struct vt_conn *c);
bool vt_tx_idle(const struct vt_conn *c);
bool vt_tx_unsent(const struct vt_conn *c);
/* A PSN the peer has acknowledged (snd_una - 1): a sure duplicate there. */
u32 vt_tx_acked_psn(const struct vt_conn *c);
u64 vt_tx_rto(const struct vt_conn *c);
int vt_tx_set_psn(struct vt_conn *c, u32 psn);
u16 vt_path_entropy(const struct vt_conn *c, u32 path);
u32 vt_paths_in_use(const struct vt_conn *c, u64 now);
void vt_path_end_burst(struct vt_conn *c);

/* ---- receiver ---- */
enum vt_rx_result {
	VT_RX_ACCEPT = 0,	/* new: place the payload */
	VT_RX_DUP,		/* already received: drop the payload */
	VT_RX_OUT_OF_WND,	/* beyond the window: drop */
	VT_RX_DROP,		/* out of order in strict mode: drop */
	VT_RX_NACKED,		/* rejected with the caller's NACK code */
};

struct vt_rx_verdict {
	u32 result;		/* enum vt_rx_result */
	u32 deliver_psn;	/* [deliver_psn, +deliver_cnt) now in order */
	u32 deliver_cnt;
	u32 msgs_done;		/* messages completed in order */
	bool ack_now;		/* build and send an ACK now */
	u64 ack_at;		/* else an ACK is due at (VT_NEVER: none) */
};

int vt_rx_on_data(struct vt_conn *c, u64 now, const struct vt_data_hdr *h,
		  bool ce, u8 nack, struct vt_rx_verdict *v);
void vt_rx_run_end(struct vt_conn *c, u32 pkts);
bool vt_rx_ack_due(const struct vt_conn *c, u64 now);
bool vt_rx_ack_pending(const struct vt_conn *c);
u64 vt_rx_next_wakeup(const struct vt_conn *c);
u64 vt_rx_ack_slack(const struct vt_conn *c);
void vt_rx_build_ack(struct vt_conn *c, u64 now, struct vt_ack *a);
u16 vt_rx_ack_entropy(struct vt_conn *c);
void vt_rx_set_rwnd(struct vt_conn *c, u32 rwnd);
bool vt_rx_is_new(const struct vt_conn *c, u32 psn);
int vt_rx_adopt_psn(struct vt_conn *c, u32 psn);
void vt_rx_set_rnr_wait(struct vt_conn *c, u16 wait_us);
bool vt_rx_closed_ack(u32 epsn, u32 remote_id, const struct vt_data_hdr *h,
		      struct vt_ack *a);
u32 vt_rx_cum_psn(const struct vt_conn *c);
bool vt_rx_accepted(const struct vt_conn *c);

/* ---- telemetry ---- */
void vt_stats_read(const struct vt_conn *c, u64 now, u64 *vals);

/* ---- internal, shared between core files ---- */
void vt_path_penalize(struct vt_conn *c, u32 path, u64 now, u32 mult);
u32 vt_path_pick(struct vt_conn *c, u64 now, int avoid);
bool vt_reps_on(const struct vt_conn *c);
u16 vt_reps_next(struct vt_conn *c);
void vt_reps_recycle(struct vt_conn *c, u16 entropy);
void vt_plb_on_ack(struct vt_conn *c, u32 acked, u32 congested);
void vt_path_repath(struct vt_conn *c, u32 path);

#endif /* VT_CORE_H */
