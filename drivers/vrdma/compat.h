/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat.h - the one place that absorbs RDMA-core and netdev API
 * differences between the kernels vrdma is built for (DKMS, out of tree).
 * Each shim names the kernel version that needs it.
 */
#ifndef VRDMA_COMPAT_H
#define VRDMA_COMPAT_H

#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>

#include "rdma/vrdma-abi.h"	/* VRDMA_UVERBS_DRIVER_ID */

/*
 * Out of tree, vrdma has no entry in enum rdma_driver_id. A private value
 * far above the in-tree ones keeps ib_device_get_by_netdev() and
 * ib_unregister_driver() from ever matching another driver's devices.
 * Userspace matches us by device-name prefix (VERBS_NAME_MATCH); the
 * provider puts the same id in its ioctl headers, hence the uapi define.
 */
#define VRDMA_DRIVER_ID ((enum rdma_driver_id)VRDMA_UVERBS_DRIVER_ID)

/* < 5.3: no MODULE_ALIAS_RDMA_LINK helper. */
#ifndef MODULE_ALIAS_RDMA_LINK
#define MODULE_ALIAS_RDMA_LINK(type) MODULE_ALIAS("rdma-link-" type)
#endif

/*
 * In exclusive netns mode (ib_core netns_mode=0) a device is only usable
 * from its own namespace, but every new device starts in init_net and
 * moving it needs "rdma dev set ... netns", which also requires
 * disassociate_ucontext. A vrdma device belongs where its netdev is, so
 * place it there before registration; in shared mode (the default)
 * nothing changes. No kernel up to 6.12 has an API for this: the
 * coredev's rdma_net is what rdma_dev_access_netns() and the class
 * namespace use, and the core moves the device back to init_net itself
 * when that namespace is dismantled (rdma_dev_exit_net).
 */
static inline void vrdma_set_initial_netns(struct ib_device *ibdev,
					   struct net *net)
{
	if (net_eq(net, &init_net) || rdma_dev_access_netns(ibdev, net))
		return;
	write_pnet(&ibdev->coredev.rdma_net, net);
}

/*
 * A local that the code writes before it reads, left out of
 * CONFIG_INIT_STACK_ALL_ZERO's zeroing (GCC 12 and clang; the kernel has
 * no such macro up to 6.12). Elsewhere it is zeroed, as any other local.
 */
#if __has_attribute(__uninitialized__)
#define vrdma_noinit __attribute__((__uninitialized__))
#else
#define vrdma_noinit
#endif

#endif /* VRDMA_COMPAT_H */
