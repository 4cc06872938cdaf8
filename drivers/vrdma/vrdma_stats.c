// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_stats.c - device counters for "rdma statistic show".
 *
 * Two kinds: counters the device keeps itself (atomic64, enum
 * vrdma_counter: datagrams, drops before a connection is found, transmit
 * errors), and the transport core's per-connection counters (struct
 * vt_conn.stats, updated under the connection's lock at no extra cost).
 * The latter are summed at read time over the live connections, plus
 * what destroyed connections left in conn_retired: the data path pays
 * nothing, a read costs one lock round per RC QP.
 */
#include <linux/list.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_rc.h"

static const struct rdma_stat_desc vrdma_counter_descs[] = {
	[VRDMA_CNT_RX_PKTS].name = "rx_packets",
	[VRDMA_CNT_RX_BYTES].name = "rx_bytes",
	[VRDMA_CNT_RX_BAD].name = "rx_dropped_malformed",
	[VRDMA_CNT_RX_NO_QP].name = "rx_dropped_no_qp",
	[VRDMA_CNT_RX_BAD_PEER].name = "rx_dropped_bad_peer",
	[VRDMA_CNT_TX_PKTS].name = "tx_packets",
	[VRDMA_CNT_TX_BYTES].name = "tx_bytes",
	[VRDMA_CNT_TX_ERR].name = "tx_errors",
	[VRDMA_CNT_TIMER_RUNS].name = "timer_runs",
	[VRDMA_CNT_RX_BAD_QKEY].name = "rx_dropped_bad_qkey",
	[VRDMA_CNT_RX_NO_RECV].name = "rx_dropped_no_recv_wqe",
	[VRDMA_CNT_TX_BLOCKED].name = "tx_blocked",
	[VRDMA_CNT_RESP_TIMEOUTS].name = "resp_timeouts",
	[VRDMA_CNT_FATAL_NACK_REPLAYS].name = "fatal_nack_replays",
	[VRDMA_CNT_TX_ZCOPY].name = "tx_zcopy_packets",
	[VRDMA_CNT_TX_BATCHES].name = "tx_batches",
	[VRDMA_CNT_RX_BATCHES].name = "rx_batches",
	[VRDMA_CNT_RX_UC_DROP].name = "rx_uc_msgs_dropped",
	[VRDMA_CNT_RETX_RESP_GONE].name = "retx_read_resp_mr_gone",
	[VRDMA_CNT_RX_HANDOFF].name = "rx_handed_off",
	[VRDMA_CNT_CLOSED_ACKS].name = "closed_acks",
	[VRDMA_CNT_ACKS_IN_DATA].name = "acks_in_data",
	[VRDMA_CNT_RX_POLLED].name = "rx_handoff_polled",
	[VRDMA_CNT_TX_FRAG_LISTS].name = "tx_frag_lists",
	[VRDMA_CNT_TX_DB_DEFERRED].name = "tx_db_deferred",
	[VRDMA_CNT_TX_DB_BACKOFF].name = "tx_db_backoffs",
};

static_assert(ARRAY_SIZE(vrdma_counter_descs) == VRDMA_CNT_MAX);

/* The transport's counters, in the order they follow the device's. */
static const struct {
	const char *name;
	u8 stat;		/* enum vt_stat */
} vrdma_conn_counters[] = {
	/* sender */
	{ "retx_packets", VT_STAT_RETX_PKTS },
	{ "retx_rack", VT_STAT_RETX_RACK },
	{ "retx_tlp", VT_STAT_RETX_TLP },
	{ "retx_rto", VT_STAT_RETX_RTO },
	{ "retx_nack", VT_STAT_RETX_NACK },
	{ "retx_rnr", VT_STAT_RETX_RNR },
	{ "timeouts", VT_STAT_TIMEOUTS },
	{ "tlp_probes", VT_STAT_TLP_PROBES },
	{ "spurious_retx", VT_STAT_SPURIOUS },
	{ "acks_rcvd", VT_STAT_ACKS_RCVD },
	{ "nacks_rcvd", VT_STAT_NACKS_RCVD },
	{ "rnr_naks_rcvd", VT_STAT_RNR_RCVD },
	{ "rx_stale_acks", VT_STAT_ACKS_STALE },
	{ "rx_dropped_bad_ack", VT_STAT_ACKS_INVALID },
	{ "repaths", VT_STAT_REPATHS },
	{ "cc_ce_echoed", VT_STAT_ECN_CE_RCVD },
	{ "cc_window_decreases", VT_STAT_CC_DECREASES },
	{ "cc_window_undos", VT_STAT_CWND_UNDO },
	{ "rto_undos", VT_STAT_RTO_UNDO },
	{ "rto_stalls", VT_STAT_RTO_STALLS },
	/* receiver */
	{ "rx_data_packets", VT_STAT_RX_PKTS },
	{ "rx_out_of_sequence", VT_STAT_RX_OOO },
	{ "rx_duplicates", VT_STAT_RX_DUP },
	{ "rx_dropped_out_of_window", VT_STAT_RX_OUT_OF_WND },
	{ "cc_ce_marked", VT_STAT_RX_CE },
	{ "acks_sent", VT_STAT_ACKS_SENT },
	{ "nacks_sent", VT_STAT_NACKS_SENT },
	{ "rnr_naks_sent", VT_STAT_RNR_SENT },
};

#define VRDMA_NUM_COUNTERS (VRDMA_CNT_MAX + ARRAY_SIZE(vrdma_conn_counters))

static struct rdma_stat_desc vrdma_descs[VRDMA_NUM_COUNTERS];

void vrdma_stats_dev_init(struct vrdma_dev *vdev)
{
	spin_lock_init(&vdev->conn_lock);
	INIT_LIST_HEAD(&vdev->conns);
}

/* A connection starts counting: before it is published. */
void vrdma_stats_conn_add(struct vrdma_dev *vdev, struct vrdma_rc_conn *rc)
{
	spin_lock_bh(&vdev->conn_lock);
	list_add_tail(&rc->stats_node, &vdev->conns);
	spin_unlock_bh(&vdev->conn_lock);
}

/* A connection nothing runs on any more leaves its counts behind. */
void vrdma_stats_conn_del(struct vrdma_dev *vdev, struct vrdma_rc_conn *rc)
{
	int i;

	spin_lock_bh(&vdev->conn_lock);
	for (i = 0; i < VT_STAT_MAX; i++)
		vdev->conn_retired[i] += rc->vt.stats[i];
	list_del(&rc->stats_node);
	spin_unlock_bh(&vdev->conn_lock);
}

static struct rdma_hw_stats *vrdma_alloc_hw_port_stats(struct ib_device *ibdev,
							u32 port)
{
	return rdma_alloc_hw_stats_struct(vrdma_descs, ARRAY_SIZE(vrdma_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int vrdma_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);
	u64 *out = stats->value + VRDMA_CNT_MAX;
	struct vrdma_rc_conn *rc;
	int i;

	for (i = 0; i < VRDMA_CNT_MAX; i++)
		stats->value[i] = atomic64_read(&vdev->counters[i]);

	spin_lock_bh(&vdev->conn_lock);
	for (i = 0; i < ARRAY_SIZE(vrdma_conn_counters); i++)
		out[i] = vdev->conn_retired[vrdma_conn_counters[i].stat];
	list_for_each_entry(rc, &vdev->conns, stats_node) {
		spin_lock(&rc->lock);
		for (i = 0; i < ARRAY_SIZE(vrdma_conn_counters); i++)
			out[i] += rc->vt.stats[vrdma_conn_counters[i].stat];
		spin_unlock(&rc->lock);
	}
	spin_unlock_bh(&vdev->conn_lock);
	return VRDMA_NUM_COUNTERS;
}

/* Module init: one name table for every device. */
void vrdma_stats_init(void)
{
	int i;

	for (i = 0; i < VRDMA_CNT_MAX; i++)
		vrdma_descs[i] = vrdma_counter_descs[i];
	for (i = 0; i < ARRAY_SIZE(vrdma_conn_counters); i++)
		vrdma_descs[VRDMA_CNT_MAX + i].name =
			vrdma_conn_counters[i].name;
}

const struct ib_device_ops vrdma_stats_ops = {
	.alloc_hw_port_stats = vrdma_alloc_hw_port_stats,
	.get_hw_stats = vrdma_get_hw_stats,
};
