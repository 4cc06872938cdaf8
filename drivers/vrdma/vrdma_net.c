// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_net.c - the UDP glue: one socket pair (IPv4, IPv6) per
 * network namespace that holds a vrdma device, the route and UDP source
 * port of a QP's packets (one helper each for RC and UD), route lookup,
 * transmit on the netdev's queues with TX back-pressure (one packet, or a
 * batch of them as one GSO skb), and receive from the socket in softirq.
 *
 * Unlike rxe (sockets in init_net only), sockets are per netns, so a
 * device bound to a netdev inside a container's namespace works there.
 */
#include <linux/hashtable.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_rc.h"
#include "vrdma_verbs.h"
#include "vt_wire.h"
#include "rdma/vrdma-abi.h"

static unsigned short udp_port = VRDMA_UDP_PORT;
module_param(udp_port, ushort, 0444);
MODULE_PARM_DESC(udp_port, "UDP destination port of the vrdma transport");

static unsigned int tx_queue_kb = 1024;
module_param(tx_queue_kb, uint, 0644);
MODULE_PARM_DESC(tx_queue_kb,
		 "KB of vrdma packets (truesize) a network namespace may have queued below its socket (qdisc, driver, veth peer) before RC senders wait; 0: no limit (default 1024)");

#define VRDMA_UDP_RCVBUF	(8 << 20)

static uint tx_batch = VRDMA_BATCH_MAX;
module_param(tx_batch, uint, 0644);
MODULE_PARM_DESC(tx_batch, "most RC packets of a run sent as one UDP GSO skb (default and most: 16); 1: one skb per packet");

/*
 * Off by default: measured on the single-namespace wire (docs/benchmarks.md,
 * "Receive hand-off"), it splits one QP's bulk work over two vCPUs but
 * halves its bandwidth, the ACKs of a pipelined receiver breaking the
 * sender's batches into small ones.
 */
static bool rx_handoff;
module_param(rx_handoff, bool, 0644);
MODULE_PARM_DESC(rx_handoff, "received batches of data are placed by a worker on another CPU, and the ACKs that worker causes are taken on another CPU than its own (experimental, default N)");

/*
 * Experimental (docs/benchmarks.md, "Receive steering"): a one-packet RC
 * message of a connection that is receiving a stream (it holds an ACK for
 * data before it), and what follows it of that connection while it waits,
 * is placed in a tasklet on another CPU, scheduled there by an IPI as
 * receive packet steering does: the sender's CPU no longer runs both ends
 * of a stream of small messages. A ping-pong's packets and bulk batches
 * stay where they arrive.
 */
static bool rx_steer;
module_param(rx_steer, bool, 0644);
MODULE_PARM_DESC(rx_steer, "single-packet messages of a stream are placed on another CPU, woken by an IPI (experimental, default N)");

/*
 * A receive hand-off queue: skbs taken off a socket in softirq, processed
 * in order by a worker on another CPU. @pending counts those queued or
 * being processed: while it is not zero, later ones queue behind them.
 */
struct vrdma_rxq {
	struct sk_buff_head q;
	unsigned int pending;		/* under q.lock */
	unsigned int bytes;		/* truesize queued, under q.lock */
	bool data;			/* places data (else takes ACKs) */
	struct sock *sk;		/* held while the socket is open */
	struct work_struct work;
};

/*
 * rx_steer's queue: skbs with their device (a reference each, in
 * VRDMA_RX_CB), drained in order by a tasklet that an IPI schedules on
 * another CPU.
 */
struct vrdma_steer {
	struct sk_buff_head q;
	unsigned int bytes;		/* truesize queued, under q.lock */
	struct tasklet_struct tasklet;
	call_single_data_t csd;
	atomic_t ipi;			/* 1: the IPI is on its way */
};

/* One socket's hand-off queues. */
struct vrdma_rxs {
	struct vrdma_rxq data;
	struct vrdma_rxq ack;
	struct vrdma_steer steer;
};

struct vrdma_net {
	struct mutex lock;		/* socket creation */
	struct socket __rcu *sk4;
	struct socket __rcu *sk6;
	struct vrdma_rxs rx4;
	struct vrdma_rxs rx6;
};

static struct workqueue_struct *vrdma_rx_wq;

/* This CPU runs a data hand-off worker (set around each of its skbs). */
static DEFINE_PER_CPU(bool, vrdma_rx_placing);

static unsigned int vrdma_net_id;

static struct vrdma_net *vrdma_pernet(struct net *net)
{
	return net_generic(net, vrdma_net_id);
}

/*
 * The netdev owning local address @skb was sent to, in the socket's
 * namespace. A packet between two local addresses (two QPs of one device,
 * or two devices of one namespace) is routed through the loopback netdev
 * (vrdma_net_oif4/6()), which no device is bound to: it belongs to the
 * device of the netdev that holds its destination address, as it would
 * had it come in on the wire. Only local senders reach the loopback
 * netdev, so no remote packet gets here. Called under RCU (UDP receive).
 */
static struct net_device *vrdma_loopback_dev(struct sock *sk,
					     struct sk_buff *skb)
{
	struct net *net = sock_net(sk);

	if (skb->protocol == htons(ETH_P_IP))
		return __ip_dev_find(net, ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	if (skb->protocol == htons(ETH_P_IPV6))
		return ipv6_stub->ipv6_dev_find(net, &ipv6_hdr(skb)->daddr,
						NULL);
#endif
	return NULL;
}

/* The vrdma device of @ndev (or of the VLAN's real device), with a reference. */
static struct ib_device *vrdma_ibdev_of(struct net_device *ndev)
{
	struct ib_device *ibdev = ib_device_get_by_netdev(ndev, VRDMA_DRIVER_ID);

	if (!ibdev && is_vlan_dev(ndev))
		ibdev = ib_device_get_by_netdev(vlan_dev_real_dev(ndev),
						VRDMA_DRIVER_ID);
	return ibdev;
}

static void vrdma_udp_count(struct sock *sk, int field)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6) {
		__UDP6_INC_STATS(sock_net(sk), field, 0);
		return;
	}
#endif
	__UDP_INC_STATS(sock_net(sk), field, 0);
}

/*
 * A datagram taken off the socket: checksum (where no one verified it),
 * the device of the netdev it came in on (skb->dev is reused by the UDP
 * queue: skb_iif names it), then the transport. Once per skb, which may
 * be a batch of packets.
 */
static bool vrdma_rx_steer(struct sock *sk, struct vrdma_dev *vdev,
			   struct sk_buff *skb);

static void vrdma_udp_rcv(struct sock *sk, struct sk_buff *skb, bool handed)
{
	struct ib_device *ibdev = NULL;
	struct net_device *ndev;

	if (!udp_skb_csum_unnecessary(skb) &&
	    __udp_lib_checksum_complete(skb)) {
		vrdma_udp_count(sk, UDP_MIB_CSUMERRORS);
		vrdma_udp_count(sk, UDP_MIB_INERRORS);
		goto drop;
	}
	/* what udp_recvmsg() counts: netstat -su stays true */
	vrdma_udp_count(sk, UDP_MIB_INDATAGRAMS);
	rcu_read_lock();
	ndev = dev_get_by_index_rcu(sock_net(sk), skb->skb_iif);
	if (ndev && (ndev->flags & IFF_LOOPBACK))
		ndev = vrdma_loopback_dev(sk, skb);
	if (ndev && !IS_ERR(ndev))
		ibdev = vrdma_ibdev_of(ndev);
	rcu_read_unlock();
	if (!ibdev)
		goto drop;
	if (handed)
		vrdma_count(to_vrdma_dev(ibdev), VRDMA_CNT_RX_HANDOFF, 1);
	else if (vrdma_rx_steer(sk, to_vrdma_dev(ibdev), skb))
		return;		/* with its reference to the device */
	vrdma_rx(to_vrdma_dev(ibdev), skb);
	ib_device_put(ibdev);
	return;

drop:
	kfree_skb(skb);
}

static struct vrdma_rxs *vrdma_rxs_of(struct sock *sk)
{
	struct vrdma_net *vn = vrdma_pernet(sock_net(sk));

	return sk->sk_family == AF_INET6 ? &vn->rx6 : &vn->rx4;
}

/* A CPU other than this one: the next online one, wrapping around. */
static int vrdma_rx_other_cpu(void)
{
	int cpu = cpumask_next(smp_processor_id(), cpu_online_mask);

	return cpu < nr_cpu_ids ? cpu : cpumask_first(cpu_online_mask);
}

/*
 * Queue @skb on @q if it must go there: @force, or something queued
 * before it still waits (the queue keeps the socket's order). False: the
 * caller processes it. A full queue drops it, as a full socket would.
 */
static bool vrdma_rxq_add(struct vrdma_rxq *q, struct sk_buff *skb,
			  bool force)
{
	bool full;

	spin_lock(&q->q.lock);
	if (!force && !q->pending) {
		spin_unlock(&q->q.lock);
		return false;
	}
	full = q->bytes + skb->truesize > VRDMA_UDP_RCVBUF;
	if (!full) {
		__skb_queue_tail(&q->q, skb);
		q->pending++;
		q->bytes += skb->truesize;
	}
	spin_unlock(&q->q.lock);
	if (full) {
		vrdma_udp_count(q->sk, UDP_MIB_RCVBUFERRORS);
		kfree_skb(skb);
		return true;
	}
	queue_work_on(vrdma_rx_other_cpu(), vrdma_rx_wq, &q->work);
	return true;
}

/*
 * Where a datagram goes, in the receive softirq (see vrdma_rxq_work()):
 * data that comes as a batch to the data worker, an ACK that the data
 * worker's own packets caused to the ACK worker, and anything that must
 * follow what waits in either queue behind it. Everything else, a ping-
 * pong's single packets among it, stays here: no thread wakeup between
 * a packet and its answer.
 */
static bool vrdma_rx_handoff(struct sock *sk, struct sk_buff *skb)
{
	struct vrdma_rxs *rxs;
	u8 buf[2];		/* version and opcode */
	const void *p;
	int op;

	/* off (the default): nothing on the receive path but this test */
	if (!READ_ONCE(rx_handoff) || num_online_cpus() < 2)
		return false;
	rxs = vrdma_rxs_of(sk);
	p = skb_header_pointer(skb, 0, sizeof(buf), buf);
	op = p ? vt_pkt_opcode(p, sizeof(buf)) : -1;
	if (op < 0)
		return false;		/* malformed: dropped where it is */
	if (op == VT_OP_ACK || op == VT_OP_NACK)
		return vrdma_rxq_add(&rxs->ack, skb,
				     __this_cpu_read(vrdma_rx_placing));
	return vrdma_rxq_add(&rxs->data, skb,
			     skb_shinfo(skb)->gso_size &&
			     skb->len > skb_shinfo(skb)->gso_size);
}

/*
 * The hand-off worker. On one CPU, a QP's receive placement, the ACK it
 * sends, that ACK's processing at the sender and the sender's next batch
 * form one serial chain: a veth (or loopback) delivers into the backlog of
 * the CPU that sent, so bulk traffic between two QPs of one kernel ran on
 * one CPU with the other idle. Placing batches here, on another CPU, and
 * taking the ACKs they cause on yet another (the next one: the first CPU
 * again when there are two) splits the chain into a placing and a sending
 * side. The bound, high-priority worker runs softirq-like: bottom halves
 * off around each skb, so the receive path's locking is unchanged.
 */
static void vrdma_rxq_work(struct work_struct *work)
{
	struct vrdma_rxq *q = container_of(work, struct vrdma_rxq, work);
	struct sk_buff *skb;

	for (;;) {
		preempt_disable();
		local_bh_disable();
		spin_lock(&q->q.lock);
		skb = __skb_dequeue(&q->q);
		if (skb)
			q->bytes -= skb->truesize;
		spin_unlock(&q->q.lock);
		if (!skb) {
			local_bh_enable();
			preempt_enable();
			return;
		}
		__this_cpu_write(vrdma_rx_placing, q->data);
		vrdma_udp_rcv(q->sk, skb, true);
		spin_lock(&q->q.lock);
		q->pending--;
		spin_unlock(&q->q.lock);
		/* the softirqs it raised (its ACKs) run here, still marked */
		local_bh_enable();
		__this_cpu_write(vrdma_rx_placing, false);
		preempt_enable();
		cond_resched();
	}
}

static void vrdma_rxq_init(struct vrdma_rxq *q, bool data)
{
	skb_queue_head_init(&q->q);
	q->pending = 0;
	q->bytes = 0;
	q->data = data;
	q->sk = NULL;
	INIT_WORK(&q->work, vrdma_rxq_work);
}

/* The socket is closed (no more data_ready): stop the worker, drop the rest. */
static void vrdma_rxq_stop(struct vrdma_rxq *q)
{
	if (!q->sk)
		return;
	cancel_work_sync(&q->work);
	skb_queue_purge(&q->q);
	q->pending = 0;
	q->bytes = 0;
	sock_put(q->sk);
	q->sk = NULL;
}

/* rx_steer: on the other CPU, in its IPI handler */
static void vrdma_steer_ipi(void *info)
{
	struct vrdma_steer *st = info;

	tasklet_schedule(&st->tasklet);
	atomic_set_release(&st->ipi, 0);	/* the last touch of @st */
}

static struct sk_buff *vrdma_steer_take(struct vrdma_steer *st)
{
	struct sk_buff *skb;

	spin_lock(&st->q.lock);
	skb = __skb_dequeue(&st->q);
	if (skb)
		st->bytes -= skb->truesize;
	spin_unlock(&st->q.lock);
	return skb;
}

/* rx_steer: place what was queued, in order, 64 at a time */
static void vrdma_steer_tasklet(struct tasklet_struct *t)
{
	struct vrdma_steer *st = from_tasklet(st, t, tasklet);
	struct sk_buff *skb;
	int budget = 64;

	while (budget-- && (skb = vrdma_steer_take(st))) {
		struct vrdma_dev *vdev = VRDMA_RX_CB(skb)->vdev;
		u32 qpn = VRDMA_RX_CB(skb)->qpn;

		vrdma_count(vdev, VRDMA_CNT_RX_HANDOFF, 1);
		vrdma_rx(vdev, skb);
		vrdma_rc_rx_steered(vdev, qpn);
		ib_device_put(&vdev->ibdev);
	}
	if (budget < 0)
		tasklet_schedule(t);
}

/* An RC data packet or batch that rx_steer places elsewhere (its qpn in cb). */
static bool vrdma_rx_stream(struct vrdma_dev *vdev, struct sk_buff *skb)
{
	u8 buf[VT_DATA_HDR_LEN];
	struct vt_data_hdr dh;
	const void *p;
	u32 len = skb->len;
	bool one;

	if (skb_is_gso(skb) && skb_shinfo(skb)->gso_size)
		len = min_t(u32, len, skb_shinfo(skb)->gso_size);
	if (len < VT_DATA_HDR_LEN)
		return false;
	p = skb_header_pointer(skb, 0, VT_DATA_HDR_LEN, buf);
	if (!p || vt_data_hdr_decode(p, len, &dh) < 0 ||
	    dh.opcode == VT_OP_UD_SEND || vt_op_is_uc(dh.opcode))
		return false;
	one = len == skb->len && (dh.flags & VT_F_SOM) && (dh.flags & VT_F_EOM);
	VRDMA_RX_CB(skb)->qpn = dh.dst_conn;
	return vrdma_rc_rx_steer(vdev, dh.dst_conn, one);
}

/*
 * rx_steer: queue @skb for the other CPU if its connection says so
 * (vrdma_rc_rx_steer()). True: taken, with the caller's reference to
 * @vdev.
 */
static bool vrdma_rx_steer(struct sock *sk, struct vrdma_dev *vdev,
			   struct sk_buff *skb)
{
	struct vrdma_steer *st = &vrdma_rxs_of(sk)->steer;
	bool full;

	if (!READ_ONCE(rx_steer) || num_online_cpus() < 2)
		return false;
	if (!vrdma_rx_stream(vdev, skb))
		return false;
	VRDMA_RX_CB(skb)->vdev = vdev;
	spin_lock(&st->q.lock);
	full = st->bytes + skb->truesize > VRDMA_UDP_RCVBUF;
	if (!full) {
		__skb_queue_tail(&st->q, skb);
		st->bytes += skb->truesize;
	}
	spin_unlock(&st->q.lock);
	if (full) {
		vrdma_udp_count(sk, UDP_MIB_RCVBUFERRORS);
		vrdma_rc_rx_steered(vdev, VRDMA_RX_CB(skb)->qpn);
		kfree_skb(skb);
		ib_device_put(&vdev->ibdev);
		return true;
	}
	/* a scheduled tasklet will see it; a running one looks again */
	if (test_bit(TASKLET_STATE_SCHED, &st->tasklet.state) ||
	    atomic_xchg(&st->ipi, 1))
		return true;
	if (smp_call_function_single_async(vrdma_rx_other_cpu(), &st->csd)) {
		atomic_set(&st->ipi, 0);
		tasklet_schedule(&st->tasklet);
	}
	return true;
}

static void vrdma_steer_init(struct vrdma_steer *st)
{
	skb_queue_head_init(&st->q);
	st->bytes = 0;
	tasklet_setup(&st->tasklet, vrdma_steer_tasklet);
	INIT_CSD(&st->csd, vrdma_steer_ipi, st);
	atomic_set(&st->ipi, 0);
}

/* The socket is closed: wait for the IPI and the tasklet, drop the rest. */
static void vrdma_steer_stop(struct vrdma_steer *st)
{
	struct sk_buff *skb;

	while (atomic_read_acquire(&st->ipi))
		cpu_relax();
	tasklet_kill(&st->tasklet);
	local_bh_disable();	/* the queue's lock is a softirq one */
	while ((skb = vrdma_steer_take(st))) {
		struct vrdma_dev *vdev = VRDMA_RX_CB(skb)->vdev;

		vrdma_rc_rx_steered(vdev, VRDMA_RX_CB(skb)->qpn);
		ib_device_put(&vdev->ibdev);
		kfree_skb(skb);
	}
	local_bh_enable();
}

/*
 * The socket has data: drain it here, in the softirq that queued it, so
 * no thread wakeup sits between a packet and its processing, except for
 * what vrdma_rx_handoff() sends to another CPU.
 */
static void vrdma_udp_data_ready(struct sock *sk)
{
	struct sk_buff *skb;
	int err;

	while ((skb = skb_recv_udp(sk, MSG_DONTWAIT, &err)))
		if (!vrdma_rx_handoff(sk, skb))
			vrdma_udp_rcv(sk, skb, false);
}

/*
 * A plain UDP socket that takes GSO and GRO batches whole, not an encap
 * (tunnel) socket: Debian's 6.1 udp_unexpected_gso() segments every GSO
 * packet for a socket with an encap_rcv hook (a new skb and a copy per
 * segment), while a socket with UDP_GRO gets a batch as one skb: one trip
 * through IP and UDP for a run of packets, which vrdma_rx() walks in
 * place. It also leaves out the encap socket's inet_inc_convert_csum,
 * which made receive-side segmentation checksum every segment.
 */
/* The hand-off queues of a new socket hold it until it closes. */
static void vrdma_rxs_start(struct vrdma_rxs *rxs, struct sock *sk)
{
	sock_hold(sk);
	rxs->data.sk = sk;
	sock_hold(sk);
	rxs->ack.sk = sk;
}

static struct socket *vrdma_udp_open(struct net *net, bool ipv6,
				     struct vrdma_rxs *rxs)
{
	struct udp_port_cfg udp_cfg = {};
	struct socket *sock;
	int one = 1, rv;

	if (ipv6) {
		udp_cfg.family = AF_INET6;
		udp_cfg.ipv6_v6only = 1;
	} else {
		udp_cfg.family = AF_INET;
	}
	udp_cfg.local_udp_port = htons(udp_port);

	rv = udp_sock_create(net, &udp_cfg, &sock);
	if (rv < 0)
		return ERR_PTR(rv);
	rv = sock->ops->setsockopt(sock, SOL_UDP, UDP_GRO,
				   KERNEL_SOCKPTR(&one), sizeof(one));
	if (rv < 0) {
		udp_tunnel_sock_release(sock);
		return ERR_PTR(rv);
	}
	udp_allow_gso(sock->sk);	/* also frag-list GRO aggregates */
	lock_sock(sock->sk);
	/* drained as it fills: the queue only holds what CPUs race to add */
	sock->sk->sk_rcvbuf = VRDMA_UDP_RCVBUF;
	sock->sk->sk_userlocks |= SOCK_RCVBUF_LOCK;
	vrdma_rxs_start(rxs, sock->sk);
	sock->sk->sk_data_ready = vrdma_udp_data_ready;
	release_sock(sock->sk);
	return sock;
}



/*
 * Make sure @net has its vrdma sockets. Called when a device is bound to
 * a netdev of @net; the sockets then live as long as the namespace (or
 * the module). IPv6 is optional: a namespace without it works on IPv4.
 */
int vrdma_net_attach(struct net *net)
{
	struct vrdma_net *vn = vrdma_pernet(net);
	struct socket *sock;
	int rv = 0;

	mutex_lock(&vn->lock);
	if (!rcu_access_pointer(vn->sk4)) {
		sock = vrdma_udp_open(net, false, &vn->rx4);
		if (IS_ERR(sock)) {
			rv = PTR_ERR(sock);
			pr_warn("vrdma: cannot open UDP port %u: %d\n",
				udp_port, rv);
			goto out;
		}
		rcu_assign_pointer(vn->sk4, sock);
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (!rcu_access_pointer(vn->sk6)) {
		sock = vrdma_udp_open(net, true, &vn->rx6);
		if (!IS_ERR(sock))
			rcu_assign_pointer(vn->sk6, sock);
	}
#endif
out:
	mutex_unlock(&vn->lock);
	return rv;
}

static __net_init int vrdma_net_ns_init(struct net *net)
{
	struct vrdma_net *vn = vrdma_pernet(net);

	mutex_init(&vn->lock);
	RCU_INIT_POINTER(vn->sk4, NULL);
	RCU_INIT_POINTER(vn->sk6, NULL);
	vrdma_steer_init(&vn->rx4.steer);
	vrdma_steer_init(&vn->rx6.steer);
	vrdma_rxq_init(&vn->rx4.data, true);
	vrdma_rxq_init(&vn->rx4.ack, false);
	vrdma_rxq_init(&vn->rx6.data, true);
	vrdma_rxq_init(&vn->rx6.ack, false);
	return 0;
}

static void vrdma_udp_close(struct socket __rcu **slot, struct vrdma_rxs *rxs)
{
	struct socket *sock = rcu_dereference_protected(*slot, true);

	if (!sock)
		return;
	RCU_INIT_POINTER(*slot, NULL);
	/* Waits for RCU readers, including vrdma_net_xmit(). */
	udp_tunnel_sock_release(sock);
	/* each worker only fills the other's queue from data_ready: none now */
	vrdma_rxq_stop(&rxs->data);
	vrdma_rxq_stop(&rxs->ack);
	vrdma_steer_stop(&rxs->steer);
}

static __net_exit void vrdma_net_ns_exit(struct net *net)
{
	struct vrdma_net *vn = vrdma_pernet(net);

	mutex_lock(&vn->lock);
	vrdma_udp_close(&vn->sk4, &vn->rx4);
	vrdma_udp_close(&vn->sk6, &vn->rx6);
	mutex_unlock(&vn->lock);
}

static struct pernet_operations vrdma_net_ops = {
	.init = vrdma_net_ns_init,
	.exit = vrdma_net_ns_exit,
	.id = &vrdma_net_id,
	.size = sizeof(struct vrdma_net),
};

/*
 * Allocate an skb with room for link, IP and UDP headers before @len
 * bytes of vrdma header + payload (which the caller skb_put()s).
 */
struct sk_buff *vrdma_net_alloc_skb(struct vrdma_dev *vdev,
				    const struct vrdma_route *r,
				    unsigned int len)
{
	unsigned int hdr = LL_RESERVED_SPACE(vdev->netdev) +
			   sizeof(struct udphdr) +
			   (r->family == AF_INET6 ? sizeof(struct ipv6hdr) :
						    sizeof(struct iphdr));
	struct sk_buff *skb;

	skb = alloc_skb(hdr + len, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, hdr);
	return skb;
}

/*
 * The route from source GID @sgid to the destination GID of @grh, with
 * its traffic class, hop limit and flow label: both GIDs IPv4-mapped
 * (IPv4) or both not (IPv6), else -EINVAL. One helper for RC (the QP's
 * address vector) and UD (each WQE's AH).
 */
int vrdma_net_route_gid(struct vrdma_route *r, const union ib_gid *sgid,
			const struct ib_global_route *grh)
{
	const struct in6_addr *d = (const struct in6_addr *)grh->dgid.raw;
	const struct in6_addr *s = (const struct in6_addr *)sgid->raw;

	memset(r, 0, sizeof(*r));
	if (ipv6_addr_v4mapped(d) != ipv6_addr_v4mapped(s))
		return -EINVAL;
	if (ipv6_addr_v4mapped(d)) {
		r->family = AF_INET;
		r->daddr.v4 = d->s6_addr32[3];
		r->saddr.v4 = s->s6_addr32[3];
	} else {
		r->family = AF_INET6;
		r->daddr.v6 = *d;
		r->saddr.v6 = *s;
	}
	r->tos = grh->traffic_class;
	r->ttl = grh->hop_limit;
	r->flow_label = cpu_to_be32(grh->flow_label & 0xfffff);
	return 0;
}

/*
 * The UDP source port of @qpn's packets: a base in the ephemeral range,
 * one per QP (64 apart), plus the transport's path entropy, so that
 * networks hashing on the port spread QPs and paths.
 */
__be16 vrdma_net_sport(u32 qpn, u16 entropy)
{
	u16 base = 0xc000 | ((qpn * 64) & 0x3fc0);

	return htons((u16)(base + entropy));
}

/*
 * Append the pages of @fr, whose references pass to @skb, to its payload.
 * The UDP checksum covers them where it is computed (the device, or
 * skb_checksum in software); a device without scatter/gather gets the
 * skb linearized by the stack.
 */
static void vrdma_net_skb_frag(struct sk_buff *skb, struct page *page,
			       u32 off, u32 len)
{
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
}

void vrdma_net_skb_frags(struct sk_buff *skb, struct vrdma_frags *fr)
{
	u32 i;

	for (i = 0; i < fr->n; i++)
		vrdma_net_skb_frag(skb, fr->f[i].page, fr->f[i].off,
				   fr->f[i].len);
	fr->n = 0;
	fr->len = 0;
}

/*
 * Room for one packet's bytes (its header, and its payload unless page
 * fragments carry it), from the per-CPU page fragment cache: no zeroed
 * buffer per packet (init_on_alloc zeroes every new skb head), pages
 * reused once the skbs that held them are freed. NULL if none.
 */
void *vrdma_batch_alloc(u32 len)
{
	return netdev_alloc_frag(len);
}

void vrdma_batch_free(void *buf)
{
	skb_free_frag(buf);
}

static bool vrdma_batch_fits(const struct vrdma_batch *b, __be16 sport,
			     u32 len, u32 nfrags)
{
	const struct sk_buff *skb = b->skb;

	return b->sport == sport && !b->closed && len <= b->seg &&
	       b->n < VRDMA_BATCH_MAX &&
	       skb_shinfo(skb)->nr_frags + nfrags <= MAX_SKB_FRAGS &&
	       skb->len + len <= VRDMA_BATCH_BYTES;
}

/*
 * Add a packet for UDP source port @sport to @b: the @buf_len bytes at
 * @buf (from vrdma_batch_alloc()), then the pages of @fr. A packet that
 * does not fit sends the batch first; a packet shorter than the batch's
 * first ends it (a GSO skb's last segment may be short, no other). Takes
 * @buf and @fr's references in every case; a failed allocation loses the
 * packet like the wire would.
 */
void vrdma_batch_add(struct vrdma_dev *vdev, struct vrdma_route *r,
		     struct vrdma_batch *b, __be16 sport, void *buf,
		     u32 buf_len, struct vrdma_frags *fr)
{
	u32 len = buf_len + fr->len, max = READ_ONCE(tx_batch);
	struct page *page = virt_to_head_page(buf);
	struct sk_buff *skb;

	if (b->skb && !vrdma_batch_fits(b, sport, len, 1 + fr->n))
		vrdma_batch_send(vdev, r, b);
	if (!b->skb) {
		b->skb = vrdma_net_alloc_skb(vdev, r, 0);
		if (!b->skb) {
			vrdma_batch_free(buf);
			vrdma_frags_put(fr);
			return;
		}
		b->sport = sport;
		b->seg = len;
		b->n = 0;
		b->closed = false;
	}
	skb = b->skb;
	vrdma_net_skb_frag(skb, page, (u8 *)buf - (u8 *)page_address(page),
			   buf_len);
	vrdma_net_skb_frags(skb, fr);
	b->n++;
	if (len < b->seg)
		b->closed = true;
	if (b->closed || b->n >= min_t(u32, max, VRDMA_BATCH_MAX))
		vrdma_batch_send(vdev, r, b);
}

/*
 * Send what @b holds: one packet as it is, several as one UDP GSO skb
 * (SKB_GSO_UDP_L4, gso_size = one packet, the checksum left to the device
 * or to segmentation), the way QUIC stacks use UDP GSO. veth and loopback
 * carry it whole to the receiving socket, which takes it whole; a NIC with
 * UDP segmentation offload cuts it in hardware; for any other device the
 * stack segments it just before the driver, without a copy. Each packet
 * keeps its own header (PSN, timestamp): loss recovery sees packets, and a
 * lost skb is a burst of lost packets.
 */
void vrdma_batch_send(struct vrdma_dev *vdev, struct vrdma_route *r,
		      struct vrdma_batch *b)
{
	struct sk_buff *skb = b->skb;

	if (!skb)
		return;
	b->skb = NULL;
	if (b->n > 1) {
		skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
		skb_shinfo(skb)->gso_size = b->seg;
		skb_shinfo(skb)->gso_segs = b->n;
		/* the UDP header goes just before the data */
		skb->ip_summed = CHECKSUM_PARTIAL;
		skb->csum_start = skb_headroom(skb) - sizeof(struct udphdr);
		skb->csum_offset = offsetof(struct udphdr, check);
		vrdma_count(vdev, VRDMA_CNT_TX_BATCHES, 1);
	}
	vrdma_net_xmit(vdev, r, b->sport, skb);
}

/*
 * The dst caches of connections' routes. A route lookup's key is the
 * device (its netdev and namespace), the addresses and the TOS, so the
 * connections with one key share one cache: the lookup (policy rules,
 * FIB) is done once per key and CPU, not per packet, and the cache drops
 * a dst that a routing change made obsolete. One cache per connection
 * was a per-CPU allocation per QP, 8% of the setup rate of 10,000
 * rdma_cm connections (docs/benchmarks.md, "10,000 connections"). The
 * lookup ignores the source port, so a guest-local multipath route that
 * hashes on it sees one port per key.
 */
struct vrdma_route_key {
	struct vrdma_dev *vdev;
	int family;
	struct in6_addr saddr, daddr;	/* or the IPv4 address, zero-padded */
	u8 tos;
};

struct vrdma_route_cache {
	struct hlist_node node;		/* vrdma_route_caches */
	struct vrdma_route_key key;
	unsigned int users;
	struct dst_cache dst;
};

static DEFINE_HASHTABLE(vrdma_route_caches, 8);
static DEFINE_MUTEX(vrdma_route_mutex);	/* the table and users */

static void vrdma_route_key(struct vrdma_dev *vdev, const struct vrdma_route *r,
			    struct vrdma_route_key *k)
{
	BUILD_BUG_ON(sizeof(r->saddr) != sizeof(k->saddr));
	memset(k, 0, sizeof(*k));	/* compared and hashed whole */
	k->vdev = vdev;
	k->family = r->family;
	memcpy(&k->saddr, &r->saddr, sizeof(k->saddr));
	memcpy(&k->daddr, &r->daddr, sizeof(k->daddr));
	k->tos = r->tos;
}

/*
 * Give @r the cache of its key (after its addresses and TOS are set). On
 * failure the route works without one: a lookup per packet.
 */
int vrdma_net_route_init(struct vrdma_dev *vdev, struct vrdma_route *r)
{
	struct vrdma_route_cache *c;
	struct vrdma_route_key k;
	u32 h;

	vrdma_route_key(vdev, r, &k);
	h = jhash(&k, sizeof(k), 0);
	mutex_lock(&vrdma_route_mutex);
	hash_for_each_possible(vrdma_route_caches, c, node, h)
		if (!memcmp(&c->key, &k, sizeof(k)))
			goto found;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		goto fail;
	if (dst_cache_init(&c->dst, GFP_KERNEL)) {
		kfree(c);
		goto fail;
	}
	c->key = k;
	hash_add(vrdma_route_caches, &c->node, h);
found:
	c->users++;
	mutex_unlock(&vrdma_route_mutex);
	r->cache = c;
	return 0;
fail:
	mutex_unlock(&vrdma_route_mutex);
	r->cache = NULL;
	return -ENOMEM;
}

/* The route's user is gone; no transmit on @r is in flight. */
void vrdma_net_route_destroy(struct vrdma_route *r)
{
	struct vrdma_route_cache *c = r->cache;

	if (!c)
		return;
	r->cache = NULL;
	mutex_lock(&vrdma_route_mutex);
	if (--c->users)
		c = NULL;
	else
		hash_del(&c->node);
	mutex_unlock(&vrdma_route_mutex);
	if (c) {
		dst_cache_destroy(&c->dst);
		kfree(c);
	}
}

/*
 * The output interface of a route lookup. A port sends on its own netdev,
 * except to an address of this namespace: such a packet is for a local
 * device (loopback), and the lookup is left to the routing rules, which
 * take it through the loopback netdev (an interface bound to our netdev
 * would instead send it out of it, towards an address the other end
 * takes for a martian, or ARP for it). Once per connection for RC (the
 * dst is cached), once per datagram for UD, under RCU.
 */
static int vrdma_net_oif4(struct net_device *ndev, __be32 daddr)
{
	return __ip_dev_find(dev_net(ndev), daddr, false) ? 0 : ndev->ifindex;
}

#if IS_ENABLED(CONFIG_IPV6)
static int vrdma_net_oif6(struct net_device *ndev, const struct in6_addr *daddr)
{
	struct net_device *dev;

	dev = ipv6_stub->ipv6_dev_find(dev_net(ndev), daddr, NULL);
	return dev && !IS_ERR(dev) ? 0 : ndev->ifindex;
}
#endif

static int vrdma_xmit4(struct vrdma_dev *vdev, struct sock *sk,
		       struct vrdma_route *r, __be16 sport,
		       struct sk_buff *skb)
{
	struct net_device *ndev = vdev->netdev;
	struct flowi4 fl = {};
	struct rtable *rt = NULL;
	__be32 saddr;

	if (r->cache)
		rt = dst_cache_get_ip4(&r->cache->dst, &saddr);
	if (!rt) {
		fl.flowi4_oif = vrdma_net_oif4(ndev, r->daddr.v4);
		fl.flowi4_proto = IPPROTO_UDP;
		fl.flowi4_tos = RT_TOS(r->tos);
		fl.saddr = r->saddr.v4;
		fl.daddr = r->daddr.v4;
		fl.fl4_sport = sport;
		fl.fl4_dport = htons(udp_port);

		rt = ip_route_output_key(dev_net(ndev), &fl);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		if (r->cache)
			dst_cache_set_ip4(&r->cache->dst, &rt->dst, fl.saddr);
	}

	/* sized to the MTU: DF, never fragmented (ignore_df would be scrubbed) */
	udp_tunnel_xmit_skb(rt, sk, skb, r->saddr.v4, r->daddr.v4, r->tos,
			    r->ttl ? r->ttl : ip4_dst_hoplimit(&rt->dst),
			    htons(IP_DF), sport, htons(udp_port), false, false);
	return 0;
}

#if IS_ENABLED(CONFIG_IPV6)
static int vrdma_xmit6(struct vrdma_dev *vdev, struct sock *sk,
		       struct vrdma_route *r, __be16 sport,
		       struct sk_buff *skb)
{
	struct net_device *ndev = vdev->netdev;
	struct in6_addr saddr = r->saddr.v6, daddr = r->daddr.v6, cached;
	struct dst_entry *dst = NULL;
	struct flowi6 fl6 = {};

	if (r->cache)
		dst = dst_cache_get_ip6(&r->cache->dst, &cached);
	if (!dst) {
		fl6.flowi6_oif = vrdma_net_oif6(ndev, &daddr);
		fl6.flowi6_proto = IPPROTO_UDP;
		fl6.saddr = saddr;
		fl6.daddr = daddr;
		fl6.fl6_sport = sport;
		fl6.fl6_dport = htons(udp_port);

		dst = ipv6_stub->ipv6_dst_lookup_flow(dev_net(ndev), sk, &fl6,
						      NULL);
		if (IS_ERR(dst))
			return PTR_ERR(dst);
		if (dst->error) {
			int rv = dst->error;

			dst_release(dst);
			return rv;
		}
		if (r->cache)
			dst_cache_set_ip6(&r->cache->dst, dst, &saddr);
	}

	/*
	 * No device: udp_tunnel6_xmit_skb() counts the packet in the
	 * per-CPU tunnel stats (dev->tstats) of the one it is given, which
	 * must be a tunnel netdev's. dst->dev is not: on the loopback
	 * netdev (QPs of one namespace) the 32-byte update overran its
	 * 16-byte pcpu_lstats and corrupted the next per-CPU allocation;
	 * on a veth it counted each packet twice. The IPv4 path passes
	 * none either (iptunnel_xmit() takes skb->dev, NULL here).
	 */
	return udp_tunnel6_xmit_skb(dst, sk, skb, NULL, &saddr, &daddr,
				    r->tos,
				    r->ttl ? r->ttl : ip6_dst_hoplimit(dst),
				    r->flow_label, sport, htons(udp_port),
				    false);
}
#endif

/*
 * TX back-pressure. Every packet is charged to the namespace's socket
 * until the layer below frees it (a NIC's TX completion, a qdisc drop, a
 * veth peer done with it), so the socket's wmem is what sits in queues we
 * cannot see into. udp_tunnel_xmit_skb() returns no qdisc verdict: this
 * is how a full qdisc or TX ring throttles the senders instead of
 * dropping their packets.
 */
bool vrdma_net_tx_busy(struct vrdma_dev *vdev, const struct vrdma_route *r)
{
	struct vrdma_net *vn = vrdma_pernet(dev_net(vdev->netdev));
	unsigned int lim = READ_ONCE(tx_queue_kb);
	struct socket *sock;
	bool busy = false;

	if (!lim)
		return false;
	rcu_read_lock();
	sock = r->family == AF_INET6 ? rcu_dereference(vn->sk6) :
				       rcu_dereference(vn->sk4);
	if (sock)
		busy = refcount_read(&sock->sk->sk_wmem_alloc) >
		       (u64)lim * 1024;
	rcu_read_unlock();
	return busy;
}

/*
 * Charge a deferred @skb to the namespace's socket now: the back-pressure
 * check (vrdma_net_tx_busy) must count what waits in a defer queue, or a
 * run queues a whole budget past the limit.
 */
static void vrdma_net_charge(struct vrdma_dev *vdev, struct vrdma_route *r,
			     struct sk_buff *skb)
{
	struct vrdma_net *vn = vrdma_pernet(dev_net(vdev->netdev));
	struct socket *sock;

	rcu_read_lock();
	sock = r->family == AF_INET6 ? rcu_dereference(vn->sk6) :
				       rcu_dereference(vn->sk4);
	if (sock)
		skb_set_owner_w(skb, sock->sk);
	rcu_read_unlock();
}

/*
 * Send @skb (vrdma header + payload, headroom from vrdma_net_alloc_skb)
 * to @r from UDP source port @sport, which is the path entropy the
 * transport core chose. Consumes @skb in every case. A route with a
 * defer queue (an RC connection's, filled under its lock) only queues it:
 * its owner sends the queue with vrdma_net_xmit_now() once unlocked.
 */
int vrdma_net_xmit(struct vrdma_dev *vdev, struct vrdma_route *r,
		   __be16 sport, struct sk_buff *skb)
{
	if (r->defer) {
		vrdma_net_charge(vdev, r, skb);
		*(__be16 *)skb->cb = sport;
		__skb_queue_tail(r->defer, skb);
		return 0;
	}
	return vrdma_net_xmit_now(vdev, r, sport, skb);
}

/* vrdma_net_xmit() without the defer queue. */
int vrdma_net_xmit_now(struct vrdma_dev *vdev, struct vrdma_route *r,
		       __be16 sport, struct sk_buff *skb)
{
	struct vrdma_net *vn = vrdma_pernet(dev_net(vdev->netdev));
	unsigned int len = skb->len, pkts = skb_shinfo(skb)->gso_segs ?: 1;
	struct socket *sock;
	int rv = -EAFNOSUPPORT;

	/*
	 * BHs off: the route's dst cache is per CPU and shared with other
	 * connections, whose softirq sends must not interleave with ours
	 * (a UC QP sends from process context).
	 */
	local_bh_disable();
	rcu_read_lock();
	if (r->family == AF_INET6)
		sock = rcu_dereference(vn->sk6);
	else
		sock = rcu_dereference(vn->sk4);
	if (!sock)
		goto drop;
	skb_set_owner_w(skb, sock->sk);		/* back-pressure accounting */
	if (r->family == AF_INET)
		rv = vrdma_xmit4(vdev, sock->sk, r, sport, skb);
#if IS_ENABLED(CONFIG_IPV6)
	else if (r->family == AF_INET6)
		rv = vrdma_xmit6(vdev, sock->sk, r, sport, skb);
#endif
	if (rv)
		goto drop;
	rcu_read_unlock();
	local_bh_enable();

	vrdma_count(vdev, VRDMA_CNT_TX_PKTS, pkts);
	vrdma_count(vdev, VRDMA_CNT_TX_BYTES, len);
	return 0;

drop:
	rcu_read_unlock();
	local_bh_enable();
	vrdma_count(vdev, VRDMA_CNT_TX_ERR, 1);
	kfree_skb(skb);
	return rv;
}

int vrdma_net_init(void)
{
	int rv;

	/* receive must progress under memory pressure (NVMe-oF, NFS) */
	vrdma_rx_wq = alloc_workqueue("vrdma_rx", WQ_HIGHPRI | WQ_MEM_RECLAIM,
				      0);
	if (!vrdma_rx_wq)
		return -ENOMEM;
	rv = register_pernet_subsys(&vrdma_net_ops);
	if (rv)
		destroy_workqueue(vrdma_rx_wq);
	return rv;
}

void vrdma_net_exit(void)
{
	unregister_pernet_subsys(&vrdma_net_ops);
	destroy_workqueue(vrdma_rx_wq);
}
