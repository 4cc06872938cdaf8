// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_net.c - the UDP glue: one socket pair (IPv4, IPv6) per
 * network namespace that holds a vrdma device, the route and UDP source
 * port of a QP's packets (one helper each for RC and UD), route lookup,
 * transmit on the netdev's queues with TX back-pressure (one packet, or a
 * batch of them as one GSO skb, built in vrdma_batch.c), and receive from
 * the socket in softirq.
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
#include <net/gro.h>
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
#include "vrdma_rx_cpu.h"
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

static bool rx_encap = true;
module_param(rx_encap, bool, 0444);
MODULE_PARM_DESC(rx_encap, "receive in the UDP socket's encap hook (default Y); N: through its queue, drained in sk_data_ready");

struct vrdma_net {
	struct mutex lock;		/* socket creation */
	struct socket __rcu *sk4;
	struct socket __rcu *sk6;
	struct vrdma_rxs rx4;
	struct vrdma_rxs rx6;
};

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

void vrdma_udp_count(struct sock *sk, int field)
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
 * A datagram from the socket, its encap hook's or its queue's: checksum
 * (where no one verified it), the device of the netdev it came in on
 * (skb_iif: the queue reuses skb->dev), then the transport. Once per
 * skb, which may be a batch of packets.
 */
void vrdma_udp_rcv(struct sock *sk, struct sk_buff *skb,
		   enum vrdma_rx_how how)
{
	/* the encap hook's were verified and counted by UDP before it */
	bool queued = !READ_ONCE(udp_sk(sk)->encap_type);
	struct ib_device *ibdev = NULL;
	struct net_device *ndev;

	if (queued && !udp_skb_csum_unnecessary(skb) &&
	    __udp_lib_checksum_complete(skb)) {
		vrdma_udp_count(sk, UDP_MIB_CSUMERRORS);
		vrdma_udp_count(sk, UDP_MIB_INERRORS);
		goto drop;
	}
	/* what udp_recvmsg() counts: netstat -su stays true */
	if (queued)
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
	if (how != VRDMA_RX_INLINE) {
		vrdma_count(to_vrdma_dev(ibdev), VRDMA_CNT_RX_HANDOFF, 1);
		if (how == VRDMA_RX_POLLED)
			vrdma_count(to_vrdma_dev(ibdev), VRDMA_CNT_RX_POLLED, 1);
	} else if (vrdma_rx_steer(sk, to_vrdma_dev(ibdev), skb))
		return;		/* with its reference to the device */
	vrdma_rx(to_vrdma_dev(ibdev), skb);
	ib_device_put(ibdev);
	return;

drop:
	kfree_skb(skb);
}

struct vrdma_rxs *vrdma_rxs_of(struct sock *sk)
{
	struct vrdma_net *vn = vrdma_pernet(sock_net(sk));

	return sk->sk_family == AF_INET6 ? &vn->rx6 : &vn->rx4;
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
			vrdma_udp_rcv(sk, skb, VRDMA_RX_INLINE);
}

/*
 * rx_encap: UDP calls this for every datagram (checksum verified, the
 * UDP header still in front), where the queue path runs the socket's
 * filter, its memory accounting, the enqueue and the wakeup, then
 * vrdma_udp_data_ready()'s dequeue. 0: taken.
 */
static int vrdma_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	skb_pull_rcsum(skb, sizeof(struct udphdr));
	if (!vrdma_rx_handoff(sk, skb))
		vrdma_udp_rcv(sk, skb, VRDMA_RX_INLINE);
	return 0;
}

/*
 * rx_encap: a NIC's GRO aggregate of our packets is completed as plain
 * UDP GRO would (udp_gro_complete_segment()), but marked as a tunnel's,
 * which udp_gro_complete() does for a socket with this hook: so the
 * encap socket takes it whole, as the queue did, instead of segmenting
 * it first (udp_unexpected_gso()). Not an encapsulation: no inner
 * headers, and the flag that would say so is cleared.
 */
static int vrdma_udp_gro_complete(struct sock *sk, struct sk_buff *skb,
				  int nhoff)
{
	struct udphdr *uh = (struct udphdr *)(skb->data + nhoff) - 1;

	skb->csum_start = (unsigned char *)uh - skb->head;
	skb->csum_offset = offsetof(struct udphdr, check);
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb_shinfo(skb)->gso_segs = NAPI_GRO_CB(skb)->count;
	skb_shinfo(skb)->gso_type |= SKB_GSO_UDP_L4;
	skb->encapsulation = 0;
	return 0;
}

/*
 * The address @r sends to belongs to the namespace at the other end of
 * @dev, a veth: a packet sent there is delivered, not forwarded.
 */
static bool vrdma_peer_local(struct net_device *dev,
			     const struct vrdma_route *r)
{
	struct net_device *peer;
	bool local = false;

	if (!dev->netdev_ops->ndo_get_peer_dev)
		return false;
	rcu_read_lock();
	peer = dev->netdev_ops->ndo_get_peer_dev(dev);
	if (peer && r->family == AF_INET)
		local = !!__ip_dev_find(dev_net(peer), r->daddr.v4, false);
#if IS_ENABLED(CONFIG_IPV6)
	else if (peer)
		local = !IS_ERR_OR_NULL(ipv6_stub->ipv6_dev_find(dev_net(peer),
							&r->daddr.v6, NULL));
#endif
	rcu_read_unlock();
	return local;
}

/*
 * rx_encap: a batch of ours on its way out of @dev. An encap socket takes
 * a GSO skb whole only if it is marked as a tunnel's (udp_unexpected_gso());
 * any other it segments first. A batch is marked only where it is
 * delivered whole to the receiving socket: across a veth (which carries
 * tunnel GSO whole) to an address of the namespace at its other end.
 * Never where it could be forwarded to a NIC, whose tunnel offload would
 * look for inner headers that are not there; skb->encapsulation stays 0,
 * so software segmentation, should it happen, cuts it as plain UDP GSO.
 */
static void vrdma_gso_mark(struct sk_buff *skb, struct net_device *dev,
			   const struct vrdma_route *r)
{
	const netdev_features_t f = NETIF_F_GSO_UDP_L4 | NETIF_F_GSO_UDP_TUNNEL;

	if (rx_encap && skb_is_gso(skb) && (dev->features & f) == f &&
	    vrdma_peer_local(dev, r))
		skb_shinfo(skb)->gso_type |= SKB_GSO_UDP_TUNNEL;
}

/*
 * The namespace's UDP socket. With rx_encap (the default) UDP hands it
 * every datagram in the encap hook, as a tunnel's: no socket filter,
 * receive-buffer accounting, enqueue, wakeup and dequeue per skb (the
 * 64 B ib_send_bw rate +7 %, median of 13 A/B rounds, docs/benchmarks.md).
 * 6.1's udp_unexpected_gso() segments a GSO skb for such a socket unless
 * it is marked as a tunnel's, which our batches over a veth and a NIC's
 * GRO aggregates of our packets are (vrdma_gso_mark(),
 * vrdma_udp_gro_complete()), so a batch still arrives as one skb: one
 * trip through IP and UDP for a run of packets, which vrdma_rx() walks
 * in place. rx_encap=N takes the socket's queue instead, drained in its
 * sk_data_ready (UDP_GRO and udp_allow_gso() let it take GSO and GRO
 * skbs whole). Neither sets the tunnel socket's inet_inc_convert_csum,
 * which made receive-side segmentation checksum every segment.
 */
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
	if (rx_encap) {
		WRITE_ONCE(udp_sk(sock->sk)->encap_type, 1);
		WRITE_ONCE(udp_sk(sock->sk)->encap_rcv, vrdma_udp_encap_rcv);
		WRITE_ONCE(udp_sk(sock->sk)->gro_complete,
			   vrdma_udp_gro_complete);
		udp_tunnel_encap_enable(sock->sk);
	}
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
	vrdma_rxs_init(&vn->rx4);
	vrdma_rxs_init(&vn->rx6);
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
	vrdma_rxs_stop(rxs);
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
 * bytes of vrdma header + payload (which the caller skb_put()s). Its head
 * comes from the per-CPU page fragment cache where it fits in a page, as
 * a driver's receive buffers do: alloc_skb()'s kmalloc'ed head is zeroed
 * whole by init_on_alloc (Debian's default), 512 bytes for a batch's or
 * an ACK's few header bytes.
 */
struct sk_buff *vrdma_net_alloc_skb(struct vrdma_dev *vdev,
				    const struct vrdma_route *r,
				    unsigned int len)
{
	unsigned int hdr = LL_RESERVED_SPACE(vdev->netdev) +
			   sizeof(struct udphdr) +
			   (r->family == AF_INET6 ? sizeof(struct ipv6hdr) :
						    sizeof(struct iphdr));
	unsigned int size = SKB_DATA_ALIGN(hdr + len) +
			    SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb;
	void *data;

	if (size > PAGE_SIZE) {
		skb = alloc_skb(hdr + len, GFP_ATOMIC);
	} else {
		/*
		 * Not __netdev_alloc_skb(): it sets skb->dev, which
		 * iptunnel_xmit() counts as a tunnel device's stats (see
		 * vrdma_xmit6(); a veth counted every packet twice).
		 */
		data = vrdma_frag_alloc(size);
		skb = data ? vrdma_build_skb(data, size) : NULL;
		if (data && !skb)
			skb_free_frag(data);
	}
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

static u32 vrdma_flow_seed __read_mostly;

/*
 * The flow hash of a connection's packets (RC, UC), set as skb->hash: one
 * per QP, whatever source port the transport sprays each packet from.
 * What queues per flow on this host reads it, and would otherwise take
 * it from the 5-tuple: fq_codel and fq counted a QP spraying over four
 * ports as four flows and gave it two thirds of a link next to one TCP
 * connection (docs/benchmarks.md, "Next to TCP"), and the TX queue
 * choice spread one QP over a NIC's queues, which may reorder it.
 * Switches still hash the ports they see.
 */
u32 vrdma_net_flow_hash(u32 qpn, u32 dest_qpn)
{
	return jhash_2words(qpn, dest_qpn, vrdma_flow_seed) ?: 1;
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

	vrdma_gso_mark(skb, rt->dst.dev, r);
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
	vrdma_gso_mark(skb, dst->dev, r);
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
	if (r->flow_hash)	/* L4: the tunnel's output keeps it */
		skb_set_hash(skb, r->flow_hash, PKT_HASH_TYPE_L4);
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
	int rv = vrdma_rx_cpu_init();

	vrdma_flow_seed = get_random_u32();
	if (rv)
		return rv;
	rv = register_pernet_subsys(&vrdma_net_ops);
	if (rv)
		vrdma_rx_cpu_exit();
	return rv;
}

void vrdma_net_exit(void)
{
	unregister_pernet_subsys(&vrdma_net_ops);
	vrdma_rx_cpu_exit();
}
