/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat.h - the one place that absorbs RDMA-core and netdev API
 * differences between the kernels vrdma is built for (DKMS, out of tree).
 * Each shim names the kernel version that needs it.
 */
#ifndef VRDMA_COMPAT_H
#define VRDMA_COMPAT_H

#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>

/*
 * Out of tree, vrdma has no entry in enum rdma_driver_id. A private value
 * far above the in-tree ones keeps ib_device_get_by_netdev() and
 * ib_unregister_driver() from ever matching another driver's devices.
 * Userspace matches us by device-name prefix instead (VERBS_NAME_MATCH).
 */
#define VRDMA_DRIVER_ID ((enum rdma_driver_id)0x7672)

/* < 5.3: no MODULE_ALIAS_RDMA_LINK helper. */
#ifndef MODULE_ALIAS_RDMA_LINK
#define MODULE_ALIAS_RDMA_LINK(type) MODULE_ALIAS("rdma-link-" type)
#endif

#endif /* VRDMA_COMPAT_H */
