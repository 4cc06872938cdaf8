// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_restrack.c - per-QP transport state in "rdma resource show qp":
 * the driver attributes (-dd) of an RC QP with a connection are its
 * congestion control, RTT estimates, windows, sequence numbers, path
 * state and counters. A snapshot is taken under the connection's lock
 * and written to the netlink message after it is dropped.
 */
#include <linux/ktime.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"

struct vrdma_qp_snap {
	const char *cc;
	u32 cwnd_fp, wnd, rate_mbps, peer_rwnd, pkt_payload;
	u32 snd_una, snd_nxt, inflight, lost, rcv_nxt;
	u32 backoff, retries, rnr_count;
	bool in_recovery, started, dead;
	u8 error;
	int tx_error;
	u64 srtt, rttvar, min_rtt, rto;
	u32 msgs_acked, msgs_next, rx_msgs_done;
	u32 num_paths, paths_in_use;
	struct {
		u32 gen;
		u64 penalty_ns;		/* left, 0 when usable */
	} path[VT_MAX_PATHS];
	u64 stats[VT_STAT_MAX];
};

/* Per-QP counters shown, by the core's names (vt_stat_names[]). */
static const u8 vrdma_qp_stats[] = {
	VT_STAT_TX_PKTS, VT_STAT_TX_BYTES, VT_STAT_RETX_PKTS,
	VT_STAT_RETX_RACK, VT_STAT_RETX_TLP, VT_STAT_RETX_RTO,
	VT_STAT_RETX_NACK, VT_STAT_RETX_RNR, VT_STAT_TIMEOUTS,
	VT_STAT_SPURIOUS, VT_STAT_ACKS_RCVD, VT_STAT_NACKS_RCVD,
	VT_STAT_RNR_RCVD, VT_STAT_ACKS_STALE, VT_STAT_ACKS_INVALID,
	VT_STAT_ECN_CE_RCVD, VT_STAT_CC_DECREASES, VT_STAT_CWND_UNDO,
	VT_STAT_RTO_UNDO, VT_STAT_REPATHS,
	VT_STAT_RX_PKTS, VT_STAT_RX_BYTES, VT_STAT_RX_DUP, VT_STAT_RX_OOO,
	VT_STAT_RX_OUT_OF_WND, VT_STAT_RX_CE, VT_STAT_ACKS_SENT,
	VT_STAT_NACKS_SENT, VT_STAT_RNR_SENT,
};

static void vrdma_qp_snapshot(struct vrdma_rc_conn *rc, struct vrdma_qp_snap *s)
{
	const struct vt_conn *c = &rc->vt;
	u64 now = ktime_get_ns();
	u32 i;

	s->cc = c->ops->name;
	s->cwnd_fp = c->tx.cwnd_fp;
	s->wnd = vt_tx_wnd(c);
	s->pkt_payload = c->cfg.mtu;
	s->rate_mbps = c->cfg.cc == VT_CC_DCQCN ? c->tx.cc.dcqcn.rc : 0;
	s->peer_rwnd = c->tx.rwnd;
	s->snd_una = c->tx.snd_una;
	s->snd_nxt = c->tx.snd_nxt;
	s->inflight = c->tx.inflight;
	s->lost = c->tx.lost;
	s->rcv_nxt = c->rx.epsn;
	s->backoff = c->tx.backoff;
	s->retries = c->tx.retries;
	s->rnr_count = c->tx.rnr_count;
	s->in_recovery = c->tx.in_recovery;
	s->tx_error = c->tx.error;
	s->started = rc->started;
	s->dead = rc->dead;
	s->error = rc->error;
	s->srtt = c->tx.srtt;
	s->rttvar = c->tx.rttvar;
	s->min_rtt = c->tx.min_rtt;
	s->rto = vt_tx_rto(c);
	s->msgs_acked = rc->req.msg_acked;
	s->msgs_next = rc->req.msg_next;
	s->rx_msgs_done = rc->resp.msg_next;
	s->num_paths = min_t(u32, c->cfg.num_paths, VT_MAX_PATHS);
	s->paths_in_use = vt_paths_in_use(c, now);
	for (i = 0; i < s->num_paths; i++) {
		u64 until = c->tx.path[i].penalty_until;

		s->path[i].gen = c->tx.path[i].gen;
		s->path[i].penalty_ns = until > now ? until - now : 0;
	}
	memcpy(s->stats, c->stats, sizeof(s->stats));
}

static int vrdma_qp_put(struct sk_buff *msg, const struct vrdma_qp_snap *s)
{
	char name[16], val[48];
	u32 i;

	if (rdma_nl_put_driver_string(msg, "cc", s->cc) ||
	    rdma_nl_put_driver_string(msg, "state",
				      s->error ? "failed" :
				      s->dead ? "stopped" :
				      s->started ? "sending" : "receiving") ||
	    (s->error &&
	     rdma_nl_put_driver_u32(msg, "wc_status", s->error)) ||
	    rdma_nl_put_driver_u32(msg, "cwnd_pkts", s->cwnd_fp >> VT_FP_SHIFT) ||
	    rdma_nl_put_driver_u32(msg, "cwnd_fp", s->cwnd_fp) ||
	    rdma_nl_put_driver_u32(msg, "wnd", s->wnd) ||
	    rdma_nl_put_driver_u32(msg, "peer_rwnd", s->peer_rwnd) ||
	    rdma_nl_put_driver_u32(msg, "pkt_payload", s->pkt_payload) ||
	    (s->rate_mbps &&
	     rdma_nl_put_driver_u32(msg, "rate_mbps", s->rate_mbps)) ||
	    rdma_nl_put_driver_u64(msg, "srtt_ns", s->srtt) ||
	    rdma_nl_put_driver_u64(msg, "rttvar_ns", s->rttvar) ||
	    rdma_nl_put_driver_u64(msg, "min_rtt_ns", s->min_rtt) ||
	    rdma_nl_put_driver_u64(msg, "rto_ns", s->rto) ||
	    rdma_nl_put_driver_u32(msg, "snd_una", s->snd_una) ||
	    rdma_nl_put_driver_u32(msg, "snd_nxt", s->snd_nxt) ||
	    rdma_nl_put_driver_u32(msg, "inflight", s->inflight) ||
	    rdma_nl_put_driver_u32(msg, "lost", s->lost) ||
	    rdma_nl_put_driver_u32(msg, "rcv_nxt", s->rcv_nxt) ||
	    rdma_nl_put_driver_u32(msg, "in_recovery", s->in_recovery) ||
	    rdma_nl_put_driver_u32(msg, "backoff", s->backoff) ||
	    rdma_nl_put_driver_u32(msg, "retries", s->retries) ||
	    rdma_nl_put_driver_u32(msg, "rnr_retries", s->rnr_count) ||
	    rdma_nl_put_driver_u32(msg, "msgs_acked", s->msgs_acked) ||
	    rdma_nl_put_driver_u32(msg, "msgs_queued", s->msgs_next) ||
	    rdma_nl_put_driver_u32(msg, "msgs_received", s->rx_msgs_done) ||
	    rdma_nl_put_driver_u32(msg, "paths", s->num_paths) ||
	    rdma_nl_put_driver_u32(msg, "paths_in_use", s->paths_in_use))
		return -EMSGSIZE;
	for (i = 0; i < s->num_paths; i++) {
		snprintf(name, sizeof(name), "path%u", i);
		if (s->path[i].penalty_ns)
			snprintf(val, sizeof(val), "gen%u,penalized_%lluus",
				 s->path[i].gen,
				 div_u64(s->path[i].penalty_ns, NSEC_PER_USEC));
		else
			snprintf(val, sizeof(val), "gen%u,ok", s->path[i].gen);
		if (rdma_nl_put_driver_string(msg, name, val))
			return -EMSGSIZE;
	}
	for (i = 0; i < ARRAY_SIZE(vrdma_qp_stats); i++)
		if (rdma_nl_put_driver_u64(msg, vt_stat_names[vrdma_qp_stats[i]],
					   s->stats[vrdma_qp_stats[i]]))
			return -EMSGSIZE;
	return 0;
}

static int vrdma_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_qp_snap *s;
	struct vrdma_rc_conn *rc;
	struct nlattr *table;
	int rv = 0;

	s = kmalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	/* vrdma_rc_destroy() frees the connection after an RCU grace period */
	rcu_read_lock();
	rc = READ_ONCE(qp->rc);
	if (rc) {
		spin_lock_bh(&rc->lock);
		vrdma_qp_snapshot(rc, s);
		spin_unlock_bh(&rc->lock);
	}
	rcu_read_unlock();
	if (!rc)
		goto out;	/* no connection: nothing beyond the core's view */

	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table) {
		rv = -EMSGSIZE;
		goto out;
	}
	rv = vrdma_qp_put(msg, s);
	if (rv)
		nla_nest_cancel(msg, table);
	else
		nla_nest_end(msg, table);
out:
	kfree(s);
	return rv;
}

const struct ib_device_ops vrdma_restrack_ops = {
	.fill_res_qp_entry = vrdma_fill_res_qp_entry,
};
