// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vt_conn.c - configuration defaults, connection setup and telemetry.
 * The reason behind each default is in docs/transport.md.
 */
#include "vt_core.h"

void vt_config_default(struct vt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 4096;
	cfg->max_wnd = 256;
	cfg->init_cwnd = 32;
	cfg->rx_wnd = VT_WIN;
	cfg->cc = VT_CC_SWIFT;
	cfg->num_paths = 4;
	cfg->path_burst = 1;
	cfg->rto_min_ns = 300000;
	cfg->rto_max_ns = 100000000;
	cfg->rto_init_ns = 1000000;
	cfg->retry_cnt = 7;
	cfg->rnr_retry = 7;
	cfg->rnr_delay_ns = 100000;
	cfg->tlp_min_ns = 50000;
	cfg->ack_coalesce_bytes = 16384;
	cfg->ack_coalesce_pkts = 16;
	cfg->ack_batch_end = 1;
	cfg->ack_delay_ns = 4000;
	cfg->reo_mult_max = 8;
	cfg->rack_slack_pct = 25;
	cfg->path_penalty_ns = 50000;
	cfg->path_reps = VT_REPS_MAX;
	cfg->retx_conserve = 1;
	cfg->ack_spray = 1;
	cfg->plb_rounds = 5;
	cfg->plb_cong_pct = 50;
	cfg->swift_target_ns = 25000;
	cfg->swift_ai_fp = VT_FP_ONE;
	cfg->swift_beta_fp = (VT_FP_ONE * 4) / 5;	/* 0.8 */
	cfg->swift_max_mdf_fp = VT_FP_ONE / 2;		/* 0.5 */
	cfg->swift_min_cwnd_fp = VT_FP_ONE / 100;	/* 0.01 packet */
	cfg->swift_qa_mult = 4;
	cfg->swift_use_ecn = 1;
	cfg->swift_rto_reset = 5;
	cfg->swift_jitter_mult = 4;
	cfg->swift_fs_range_ns = 100000;
	cfg->swift_fs_min_cwnd_fp = VT_FP_ONE / 10;
	cfg->swift_fs_max_cwnd = 100;
	cfg->swift_pi_pct = 100;
	cfg->swift_pace_mbps = 100000;	/* the datacenter profile's links */
	cfg->swift_compete_rtts = 0;	/* measured, not kept: docs/simulation.md */
	cfg->swift_bdp_pct = 130;	/* the start: docs/simulation.md, 2026-12-06 */
	cfg->swift_bdp_wait_pct = 50;
	cfg->dcqcn_line_mbps = 25000;
	cfg->dcqcn_min_mbps = 100;
	cfg->dcqcn_rai_mbps = 40;
	cfg->dcqcn_g_shift = 8;
	cfg->dcqcn_timer_ns = 55000;
	cfg->dcqcn_cnp_ns = 50000;
	cfg->dcqcn_f = 5;
	cfg->gbn_wnd = 128;
	cfg->gbn_rto_ns = 4096ULL << 14;	/* rxe: 4.096 us * 2^14 */
}

/*
 * What vrdma.ko runs on a VM path (vrdma_rc.c, before its module
 * parameters and the MTU): one function, so that the simulator can run
 * exactly the kernel's defaults (vrdma-sim --profile vm).  A VM path's
 * base delay is unknown and its host jitter large: Swift on the queueing
 * delay above the minimum, a VM-sized target, a window of at least one
 * packet (no sub-packet pacing), ACKs coalesced over a VM-sized delay
 * (each is a packet through the whole stack), and a spray that turns
 * every 16 packets (a run to one path leaves as one UDP GSO skb).
 */
void vt_config_vm(struct vt_config *cfg)
{
	vt_config_default(cfg);
	/*
	 * 256-packet windows both ways (the default profile's max_wnd):
	 * the kernel builds its rings for no more (Kbuild's VT_WIN).
	 */
	cfg->max_wnd = 256;
	cfg->rx_wnd = 256;
	cfg->swift_queue_delay = 1;
	/*
	 * 500 us (VT_VM_SWIFT_TARGET_US): a software path drains in
	 * bursts (a vCPU takes a batch of packets per softirq, a delay
	 * qdisc releases them per timer), and with 100 us that burst
	 * read as a queue and held the window
	 * below what the receiver takes: 64 KB WRITE at netem 100 us
	 * delay 0.35 -> 0.54 Gb/s, 1 % loss 0.44-0.74 -> 0.75-0.83,
	 * lossless level (docs/benchmarks.md, "The queue-delay target").
	 */
	cfg->swift_target_ns = VT_VM_SWIFT_TARGET_US * 1000ULL;
	cfg->swift_min_cwnd_fp = VT_FP_ONE;
	cfg->ack_delay_ns = VT_VM_ACK_DELAY_US * 1000ULL;
	/*
	 * A batch is many packets (up to 32 on a veth, 6-7 copy-free ones
	 * where the netdev takes no frag list): ACKing each made as many ACK
	 * skbs as data skbs, half the stack's per-skb work, and Swift cut
	 * twice as often. The sender asks when its window fills or a
	 * message ends with nothing queued (ackreq_wanted()), so nothing
	 * waits on the delay that would not wait anyway. Measured in a TCG
	 * guest (docs/benchmarks.md, "Instructions per KB"): 64 KB WRITE
	 * +9 %, 1 MB +18 % in every round, 13 % fewer instructions per KB.
	 */
	cfg->ack_batch_end = 0;
	/* unsignaled small messages: an ACK per 16, not per timer */
	cfg->lazy_ack_delay_ns = VT_VM_LAZY_ACK_DELAY_US * 1000ULL;
	cfg->path_burst = 32;	/* the module's VRDMA_BATCH_MAX */
	cfg->tx_defer_pkts = 16;	/* a batch: one UDP GSO skb */
	/*
	 * Not yet measured in a VM, so as before: an entropy per path slot,
	 * the RTO and the window as they were for retransmissions, the
	 * additive increase alone, and bursts (pacing needs a timer per
	 * packet, and a VM's link rate is not known).
	 */
	cfg->path_reps = 0;
	cfg->retx_conserve = 0;
	cfg->ack_spray = 0;
	cfg->swift_pi_pct = 0;
	cfg->swift_pace_mbps = 0;
	cfg->swift_bdp_pct = 0;	/* needs the pacing rate, inert without it */
}

int vt_config_check(const struct vt_config *cfg)
{
	if (!cfg)
		return VT_ERR_INVAL;
	if (!cfg->mtu || cfg->mtu > VT_MAX_PAYLOAD)
		return VT_ERR_INVAL;
	if (!cfg->max_wnd || cfg->max_wnd > VT_WIN || !cfg->init_cwnd)
		return VT_ERR_INVAL;
	if (!cfg->rx_wnd || cfg->rx_wnd > VT_WIN)
		return VT_ERR_INVAL;
	if (cfg->cc >= VT_CC_MAX)
		return VT_ERR_INVAL;
	if (!cfg->num_paths || cfg->num_paths > VT_MAX_PATHS || !cfg->path_burst)
		return VT_ERR_INVAL;
	if (!cfg->rto_min_ns || cfg->rto_min_ns > cfg->rto_max_ns ||
	    !cfg->rto_init_ns)
		return VT_ERR_INVAL;
	if (cfg->retry_cnt > 7 || cfg->rnr_retry > 7)
		return VT_ERR_INVAL;
	if (!cfg->swift_target_ns || !cfg->swift_min_cwnd_fp ||
	    cfg->swift_max_mdf_fp > VT_FP_ONE ||
	    cfg->swift_beta_fp > VT_FP_ONE)
		return VT_ERR_INVAL;
	if (cfg->swift_fs_range_ns &&
	    (!cfg->swift_fs_min_cwnd_fp || cfg->swift_fs_max_cwnd > VT_WIN ||
	     ((u64)cfg->swift_fs_max_cwnd << VT_FP_SHIFT) <=
	     cfg->swift_fs_min_cwnd_fp))
		return VT_ERR_INVAL;
	if (!cfg->dcqcn_line_mbps || !cfg->dcqcn_min_mbps ||
	    cfg->dcqcn_min_mbps > cfg->dcqcn_line_mbps ||
	    cfg->dcqcn_g_shift > 16 || !cfg->dcqcn_timer_ns)
		return VT_ERR_INVAL;
	if (!cfg->gbn_wnd || cfg->gbn_wnd > VT_WIN || !cfg->gbn_rto_ns)
		return VT_ERR_INVAL;
	if (cfg->path_reps > VT_REPS_MAX || cfg->swift_pi_pct > 1000 ||
	    cfg->swift_bdp_pct > 1000 || cfg->swift_bdp_wait_pct > 1000)
		return VT_ERR_INVAL;
	if (!cfg->reo_mult_max || !cfg->plb_rounds || cfg->plb_cong_pct > 100 ||
	    cfg->rack_slack_pct > 100)
		return VT_ERR_INVAL;
	return 0;
}

int vt_conn_init(struct vt_conn *c, const struct vt_config *cfg,
		 u32 local_id, u32 remote_id, u32 init_psn, u32 peer_psn,
		 u64 now)
{
	int rc = vt_config_check(cfg);

	if (rc)
		return rc;
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	c->ops = vt_cc_get(cfg->cc);
	c->local_id = local_id;
	c->remote_id = remote_id;

	c->tx.snd_una = init_psn;
	c->tx.snd_nxt = init_psn;
	c->tx.retx_hint = init_psn;
	c->tx.round_end = init_psn;
	c->tx.rwnd = cfg->rx_wnd;
	c->tx.reo_mult = 1;
	c->tx.dlv_start = now;
	c->tx.rto_deadline = VT_NEVER;
	c->tx.tlp_deadline = VT_NEVER;
	c->tx.reo_deadline = VT_NEVER;
	c->tx.reps_rand = (local_id * 0x9e3779b9U) ^ remote_id ^ init_psn;
	c->ops->init(c, now);

	c->rx.epsn = peer_psn;
	c->rx.high_psn = peer_psn - 1;
	c->rx.ack_deadline = VT_NEVER;
	c->rx.rwnd = cfg->rx_wnd;
	c->rx.ack_rand = (remote_id * 0x9e3779b9U) ^ local_id ^ peer_psn;
	c->rx.strict = !!(c->ops->flags & VT_CCF_GBN);
	return 0;
}

const char *const vt_stat_names[VT_STAT_MAX] = {
	[VT_STAT_TX_PKTS] = "tx_pkts",
	[VT_STAT_TX_BYTES] = "tx_bytes",
	[VT_STAT_RETX_PKTS] = "retx_pkts",
	[VT_STAT_RETX_RACK] = "retx_rack",
	[VT_STAT_RETX_TLP] = "retx_tlp",
	[VT_STAT_RETX_RTO] = "retx_rto",
	[VT_STAT_RETX_NACK] = "retx_nack",
	[VT_STAT_RETX_RNR] = "retx_rnr",
	[VT_STAT_TIMEOUTS] = "timeouts",
	[VT_STAT_TLP_PROBES] = "tlp_probes",
	[VT_STAT_SPURIOUS] = "spurious_retx",
	[VT_STAT_ACKS_RCVD] = "acks_rcvd",
	[VT_STAT_NACKS_RCVD] = "nacks_rcvd",
	[VT_STAT_ACKS_STALE] = "acks_stale",
	[VT_STAT_ACKS_INVALID] = "acks_invalid",
	[VT_STAT_ECN_CE_RCVD] = "ecn_ce_echoed",
	[VT_STAT_CC_DECREASES] = "cc_decreases",
	[VT_STAT_RNR_RCVD] = "rnr_nacks_rcvd",
	[VT_STAT_REPATHS] = "repaths",
	[VT_STAT_MSGS_DONE] = "msgs_done",
	[VT_STAT_RX_PKTS] = "rx_pkts",
	[VT_STAT_RX_BYTES] = "rx_bytes",
	[VT_STAT_RX_DUP] = "rx_dup",
	[VT_STAT_RX_OOO] = "rx_ooo",
	[VT_STAT_RX_OUT_OF_WND] = "rx_out_of_wnd",
	[VT_STAT_RX_CE] = "rx_ce",
	[VT_STAT_RNR_SENT] = "rnr_nacks_sent",
	[VT_STAT_ACKS_SENT] = "acks_sent",
	[VT_STAT_NACKS_SENT] = "nacks_sent",
	[VT_STAT_CWND_UNDO] = "cwnd_undos",
	[VT_STAT_RTO_UNDO] = "rto_undos",
	[VT_STAT_RTO_STALLS] = "rto_stalls",
	[VT_STAT_CWND_FP] = "cwnd_fp",
	[VT_STAT_RATE_MBPS] = "rate_mbps",
	[VT_STAT_SRTT_NS] = "srtt_ns",
	[VT_STAT_RTTVAR_NS] = "rttvar_ns",
	[VT_STAT_MIN_RTT_NS] = "min_rtt_ns",
	[VT_STAT_RTO_NS] = "rto_ns",
	[VT_STAT_INFLIGHT] = "inflight",
	[VT_STAT_PATHS_IN_USE] = "paths_in_use",
};

/* Copy counters and fill gauges: @vals has VT_STAT_MAX entries. */
void vt_stats_read(const struct vt_conn *c, u64 now, u64 *vals)
{
	memcpy(vals, c->stats, sizeof(c->stats));
	vals[VT_STAT_CWND_FP] = c->tx.cwnd_fp;
	vals[VT_STAT_RATE_MBPS] = c->cfg.cc == VT_CC_DCQCN ?
				  c->tx.cc.dcqcn.rc : 0;
	vals[VT_STAT_SRTT_NS] = c->tx.srtt;
	vals[VT_STAT_RTTVAR_NS] = c->tx.rttvar;
	vals[VT_STAT_MIN_RTT_NS] = c->tx.min_rtt;
	vals[VT_STAT_RTO_NS] = vt_tx_rto(c);
	vals[VT_STAT_INFLIGHT] = c->tx.inflight;
	vals[VT_STAT_PATHS_IN_USE] = vt_paths_in_use(c, now);
}

/*
 * Move the sender's initial PSN before it sent anything. The verbs give
 * the receive PSN at RTR and the send PSN only at RTS, while the
 * connection must receive from RTR on.
 */
int vt_tx_set_psn(struct vt_conn *c, u32 psn)
{
	struct vt_tx *t = &c->tx;

	if (t->snd_nxt != t->snd_una || c->stats[VT_STAT_TX_PKTS])
		return VT_ERR_INVAL;
	t->snd_una = psn;
	t->snd_nxt = psn;
	t->retx_hint = psn;
	t->round_end = psn;
	return 0;
}
