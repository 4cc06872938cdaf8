// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_stats.c - device counters for "rdma statistic show".
 */
#include <rdma/ib_verbs.h>

#include "vrdma.h"

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
};

static_assert(ARRAY_SIZE(vrdma_counter_descs) == VRDMA_CNT_MAX);

static struct rdma_hw_stats *vrdma_alloc_hw_port_stats(struct ib_device *ibdev,
							u32 port)
{
	return rdma_alloc_hw_stats_struct(vrdma_counter_descs,
					  ARRAY_SIZE(vrdma_counter_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int vrdma_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);
	int i;

	for (i = 0; i < VRDMA_CNT_MAX; i++)
		stats->value[i] = atomic64_read(&vdev->counters[i]);
	return VRDMA_CNT_MAX;
}

const struct ib_device_ops vrdma_stats_ops = {
	.alloc_hw_port_stats = vrdma_alloc_hw_port_stats,
	.get_hw_stats = vrdma_get_hw_stats,
};
