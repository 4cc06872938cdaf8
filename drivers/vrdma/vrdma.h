/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma.h - device-level structures shared by every file of vrdma.ko.
 * Object structures (PD, CQ, QP, MR, ...) live in vrdma_verbs.h.
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "compat.h"

#define VRDMA_NODE_DESC "vrdma elastic RDMA"
#define VRDMA_VENDOR_ID 0xffffff	/* no OUI: software device */
#define VRDMA_VENDOR_PART_ID 0x7672
#define VRDMA_HW_REV 1
#define VRDMA_FW_VER 0x0001000000000000ULL	/* 1.0.0 */
#define VRDMA_GID_TBL_LEN 32

/*
 * Per-packet encapsulation below the IB MTU: outer IPv6 (40, the worst
 * case) + UDP (8) + vrdma data header and a worst-case RDMA extension.
 */
#define VRDMA_ENCAP_OVERHEAD (40 + 8 + 64)

struct vrdma_dev {
	struct ib_device ibdev;		/* must be first: ib_alloc_device */
	struct net_device *netdev;	/* referenced by ib_device_set_netdev */
	struct list_head list;		/* vrdma_dev_list, under vrdma_dev_mutex */
	enum ib_port_state port_state;
	u32 netdev_mtu;
	u8 mac[ETH_ALEN];
	void *priv;			/* verbs-level state (vrdma_verbs.c) */
};

static inline struct vrdma_dev *to_vrdma_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vrdma_dev, ibdev);
}

/* Active IB MTU the netdev can carry after encapsulation. */
static inline enum ib_mtu vrdma_mtu_from_netdev(u32 netdev_mtu)
{
	u32 room = netdev_mtu > VRDMA_ENCAP_OVERHEAD ?
		   netdev_mtu - VRDMA_ENCAP_OVERHEAD : 0;

	if (room >= 4096)
		return IB_MTU_4096;
	if (room >= 2048)
		return IB_MTU_2048;
	if (room >= 1024)
		return IB_MTU_1024;
	if (room >= 512)
		return IB_MTU_512;
	return IB_MTU_256;
}

/* vrdma_verbs.c */
extern const struct ib_device_ops vrdma_dev_ops;
int vrdma_verbs_dev_init(struct vrdma_dev *vdev);
void vrdma_verbs_dev_cleanup(struct vrdma_dev *vdev);

#endif /* VRDMA_H */
