// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_main.c - module init, rdma_link_ops, netdev notifier and device
 * lifetime.
 *
 * A vrdma device is created by "rdma link add NAME type vrdma netdev DEV"
 * or, for netdevs matching the "netdevs" module parameter, automatically
 * when the netdev registers (at load for existing ones). It goes away with
 * "rdma link del", when its netdev unregisters, and on module unload.
 */
#include <linux/etherdevice.h>
#include <linux/glob.h>
#include <linux/if_arp.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>

#include "vrdma.h"
#include "vrdma_rc.h"
#include "rdma/vrdma-abi.h"

static char *netdevs;
module_param(netdevs, charp, 0444);
MODULE_PARM_DESC(netdevs,
		 "comma-separated glob patterns of netdev names to bind automatically (e.g. \"eth1,ens*\")");

/* Every live vrdma device; serialises creation against duplicates. */
static LIST_HEAD(vrdma_dev_list);
static DEFINE_MUTEX(vrdma_dev_mutex);
static struct workqueue_struct *vrdma_wq;

struct vrdma_bind_work {
	struct work_struct work;
	struct net_device *netdev;	/* dev_hold()'d until the work ran */
};

/*
 * A netdev qualifies if it is Ethernet-like (RoCEv2-style GIDs need a MAC
 * and IP addresses) and has an IPv4 or IPv6 layer to carry our UDP.
 */
static int vrdma_netdev_check(struct net_device *netdev)
{
	bool has_ip;

	if (netdev->type != ARPHRD_ETHER || (netdev->flags & IFF_LOOPBACK))
		return -EOPNOTSUPP;

	rcu_read_lock();
	has_ip = __in_dev_get_rcu(netdev) != NULL;
#if IS_ENABLED(CONFIG_IPV6)
	has_ip = has_ip || __in6_dev_get(netdev) != NULL;
#endif
	rcu_read_unlock();

	return has_ip ? 0 : -EAFNOSUPPORT;
}

static void vrdma_dealloc_driver(struct ib_device *ibdev)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);

	mutex_lock(&vrdma_dev_mutex);
	list_del_init(&vdev->list);
	mutex_unlock(&vrdma_dev_mutex);

	/* ib_dealloc_device() also gets here when vrdma_dev_alloc() failed. */
	if (vdev->verbs_ready)
		vrdma_verbs_dev_cleanup(vdev);
}

static const struct ib_device_ops vrdma_main_ops = {
	.owner = THIS_MODULE,
	.driver_id = VRDMA_DRIVER_ID,
	.uverbs_abi_ver = VRDMA_UVERBS_ABI_VERSION,
	.dealloc_driver = vrdma_dealloc_driver,
};

static struct vrdma_dev *vrdma_dev_alloc(struct net_device *netdev)
{
	struct vrdma_dev *vdev;
	struct ib_device *ibdev;
	int rv;

	vdev = ib_alloc_device(vrdma_dev, ibdev);
	if (!vdev)
		return ERR_PTR(-ENOMEM);
	ibdev = &vdev->ibdev;
	INIT_LIST_HEAD(&vdev->list);
	vdev->netdev = netdev;
	vdev->netdev_mtu = READ_ONCE(netdev->mtu);

	if (netdev->addr_len >= ETH_ALEN)
		ether_addr_copy(vdev->mac, netdev->dev_addr);
	else
		eth_random_addr(vdev->mac);
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, vdev->mac);

	ibdev->node_type = RDMA_NODE_IB_CA;
	strscpy(ibdev->node_desc, VRDMA_NODE_DESC, sizeof(ibdev->node_desc));
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;

	ib_set_device_ops(ibdev, &vrdma_dev_ops);
	ib_set_device_ops(ibdev, &vrdma_main_ops);
	ib_set_device_ops(ibdev, &vrdma_stats_ops);
	ib_set_device_ops(ibdev, &vrdma_restrack_ops);
	vrdma_stats_dev_init(vdev);

	vrdma_set_initial_netns(ibdev, dev_net(netdev));

	rv = ib_device_set_netdev(ibdev, netdev, 1);
	if (rv)
		goto err_dealloc;

	rv = vrdma_verbs_dev_init(vdev);
	if (rv)
		goto err_dealloc;
	vdev->verbs_ready = true;

	return vdev;

err_dealloc:
	ib_dealloc_device(ibdev);
	return ERR_PTR(rv);
}

/*
 * Create and register a device on @netdev. @name may hold "%d". Never
 * called with RTNL held: registration takes locks RTNL nests inside.
 */
static int vrdma_add(const char *name, struct net_device *netdev)
{
	struct ib_device *existing;
	struct vrdma_dev *vdev;
	bool dead;
	int rv;

	rv = vrdma_netdev_check(netdev);
	if (rv)
		return rv;

	rv = vrdma_net_attach(dev_net(netdev));
	if (rv)
		return rv;

	mutex_lock(&vrdma_dev_mutex);
	/* The core would say ENFILE for a taken name: say what it is. */
	existing = strchr(name, '%') ? NULL :
		   ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (!existing)
		existing = ib_device_get_by_netdev(netdev, VRDMA_DRIVER_ID);
	if (existing) {
		ib_device_put(existing);
		rv = -EEXIST;
		goto out_unlock;
	}

	vdev = vrdma_dev_alloc(netdev);
	if (IS_ERR(vdev)) {
		rv = PTR_ERR(vdev);
		goto out_unlock;
	}
	/* Listed before registration so dealloc_driver always finds it. */
	list_add_tail(&vdev->list, &vrdma_dev_list);

	rv = ib_register_device(&vdev->ibdev, name, NULL);
	if (rv) {
		mutex_unlock(&vrdma_dev_mutex);
		/* Runs vrdma_dealloc_driver(), which takes the mutex. */
		ib_dealloc_device(&vdev->ibdev);
		return rv;
	}
	mutex_unlock(&vrdma_dev_mutex);

	/*
	 * The netdev may have started unregistering while we registered;
	 * its NETDEV_UNREGISTER may have missed us. Undo in that case.
	 */
	rtnl_lock();
	dead = netdev->reg_state != NETREG_REGISTERED;
	rtnl_unlock();
	if (dead) {
		ib_unregister_device(&vdev->ibdev);
		return -ENODEV;
	}

	dev_info(&vdev->ibdev.dev, "vrdma: bound to %s\n", netdev->name);
	return 0;

out_unlock:
	mutex_unlock(&vrdma_dev_mutex);
	return rv;
}

static int vrdma_newlink(const char *ibdev_name, struct net_device *netdev)
{
	return vrdma_add(ibdev_name, netdev);
}

static struct rdma_link_ops vrdma_link_ops = {
	.type = "vrdma",
	.newlink = vrdma_newlink,
};

static bool vrdma_autobind_match(const char *ifname)
{
	char pat[IFNAMSIZ * 4];
	const char *p = netdevs;

	if (!p || !*p)
		return false;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len && len < sizeof(pat)) {
			memcpy(pat, p, len);
			pat[len] = '\0';
			if (glob_match(pat, ifname))
				return true;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

static void vrdma_bind_worker(struct work_struct *work)
{
	struct vrdma_bind_work *bw =
		container_of(work, struct vrdma_bind_work, work);
	int rv;

	rv = vrdma_add("vrdma%d", bw->netdev);
	if (rv && rv != -EEXIST)
		netdev_info(bw->netdev, "vrdma: automatic bind failed: %d\n",
			    rv);
	dev_put(bw->netdev);
	kfree(bw);
}

static void vrdma_queue_bind(struct net_device *netdev)
{
	struct vrdma_bind_work *bw;

	bw = kzalloc(sizeof(*bw), GFP_KERNEL);
	if (!bw)
		return;
	INIT_WORK(&bw->work, vrdma_bind_worker);
	bw->netdev = netdev;
	dev_hold(netdev);
	queue_work(vrdma_wq, &bw->work);
}

static void vrdma_port_event(struct vrdma_dev *vdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &vdev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&event);
}

static void vrdma_update_port(struct vrdma_dev *vdev)
{
	struct net_device *netdev = vdev->netdev;
	enum ib_port_state state;

	state = netif_running(netdev) && netif_carrier_ok(netdev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;
	if (state == vdev->port_state)
		return;
	vdev->port_state = state;
	vrdma_port_event(vdev, state == IB_PORT_ACTIVE ?
			 IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

static int vrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *arg)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(arg);
	struct ib_device *ibdev;
	struct vrdma_dev *vdev;

	if (event == NETDEV_REGISTER) {
		if (vrdma_autobind_match(netdev->name) &&
		    !vrdma_netdev_check(netdev))
			vrdma_queue_bind(netdev);
		return NOTIFY_DONE;
	}

	ibdev = ib_device_get_by_netdev(netdev, VRDMA_DRIVER_ID);
	if (!ibdev)
		return NOTIFY_DONE;
	vdev = to_vrdma_dev(ibdev);

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		vrdma_update_port(vdev);
		break;
	case NETDEV_CHANGEMTU:
		WRITE_ONCE(vdev->netdev_mtu, READ_ONCE(netdev->mtu));
		/* Consumers re-query the port on this event. */
		if (vdev->port_state == IB_PORT_ACTIVE)
			vrdma_port_event(vdev, IB_EVENT_PORT_ACTIVE);
		break;
	case NETDEV_CHANGEADDR:
		if (netdev->addr_len >= ETH_ALEN)
			ether_addr_copy(vdev->mac, netdev->dev_addr);
		vrdma_port_event(vdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_UNREGISTER:
		ib_unregister_device_queued(ibdev);
		break;
	default:
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block vrdma_netdev_nb = {
	.notifier_call = vrdma_netdev_event,
};

static int __init vrdma_init(void)
{
	int rv;

	vrdma_stats_init();
	rv = vrdma_rc_init();
	if (rv)
		return rv;

	rv = vrdma_net_init();
	if (rv)
		goto err_dp;

	vrdma_wq = alloc_ordered_workqueue("vrdma", 0);
	if (!vrdma_wq) {
		rv = -ENOMEM;
		goto err_net;
	}

	/* Replays NETDEV_REGISTER for existing netdevs: load-time binding. */
	rv = register_netdevice_notifier(&vrdma_netdev_nb);
	if (rv)
		goto err_wq;

	rdma_link_register(&vrdma_link_ops);
	pr_info("vrdma: loaded\n");
	return 0;

err_wq:
	destroy_workqueue(vrdma_wq);
err_net:
	vrdma_net_exit();
err_dp:
	vrdma_rc_exit();
	return rv;
}

static void __exit vrdma_exit(void)
{
	rdma_link_unregister(&vrdma_link_ops);
	unregister_netdevice_notifier(&vrdma_netdev_nb);
	/* Pending automatic binds run to completion, then get undone below. */
	destroy_workqueue(vrdma_wq);
	ib_unregister_driver(VRDMA_DRIVER_ID);
	WARN_ON(!list_empty(&vrdma_dev_list));
	vrdma_net_exit();
	vrdma_rc_exit();
	vrdma_frag_exit();	/* nothing left to send packets */
	pr_info("vrdma: unloaded\n");
}

module_init(vrdma_init);
module_exit(vrdma_exit);

MODULE_AUTHOR("vrdma developers");
MODULE_DESCRIPTION("vrdma: elastic RDMA over UDP for cloud virtual NICs");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("vrdma");
