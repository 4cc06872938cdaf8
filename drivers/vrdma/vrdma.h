/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma.h - device-level structures shared by every file of vrdma.ko.
 * Object structures (PD, CQ, QP, MR, ...) live in vrdma_verbs.h.
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/in6.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "compat.h"
#include "vt_core.h"	/* VT_STAT_MAX: the transport's counters */

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

/*
 * Device-level counters, exported through "rdma statistic show" next to
 * the transport's per-connection counters (vrdma_stats.c).
 */
enum vrdma_counter {
	VRDMA_CNT_RX_PKTS,
	VRDMA_CNT_RX_BYTES,
	VRDMA_CNT_RX_BAD,	/* malformed: too short, bad version/length */
	VRDMA_CNT_RX_NO_QP,	/* well formed but no QP to take it */
	VRDMA_CNT_RX_BAD_PEER,	/* not from the connected peer's address */
	VRDMA_CNT_TX_PKTS,
	VRDMA_CNT_TX_BYTES,
	VRDMA_CNT_TX_ERR,	/* no route, no socket, qdisc drop */
	VRDMA_CNT_TIMER_RUNS,	/* transport timer expirations */
	VRDMA_CNT_RX_BAD_QKEY,	/* UD: qkey does not match the QP's */
	VRDMA_CNT_RX_NO_RECV,	/* UD: no receive WQE posted */
	VRDMA_CNT_TX_BLOCKED,	/* RC sender waited for the socket queue */
	VRDMA_CNT_RESP_TIMEOUTS, /* READ/atomic response never came */
	VRDMA_CNT_FATAL_NACK_REPLAYS, /* failed responder re-sent its NACK */
	VRDMA_CNT_TX_ZCOPY,	/* RC data packets sent without a payload copy */
	VRDMA_CNT_TX_BATCHES,	/* skbs sent that carry several packets (GSO) */
	VRDMA_CNT_RX_BATCHES,	/* skbs received that carry several packets */
	VRDMA_CNT_RX_UC_DROP,	/* UC: messages lost (a PSN gap, no WQE, ...) */
	VRDMA_CNT_RETX_RESP_GONE, /* resent READ response whose MR is gone */
	VRDMA_CNT_RX_HANDOFF,	/* skbs a hand-off worker processed */
	VRDMA_CNT_CLOSED_ACKS,	/* ACKs a closed RC QP gave its old peer */
	VRDMA_CNT_ACKS_IN_DATA,	/* ACKs sent in the skb of data before them */
	VRDMA_CNT_RX_POLLED,	/* hand-off skbs a polling worker found */
	VRDMA_CNT_TX_FRAG_LISTS, /* batches sent with a frag list */
	VRDMA_CNT_TX_DB_DEFERRED, /* doorbells left for the timer (tx_coalesce_us) */
	VRDMA_CNT_TX_DB_BACKOFF, /* holds put off after some that gathered nothing */
	VRDMA_CNT_MAX
};

struct vrdma_dev {
	struct ib_device ibdev;		/* must be first: ib_alloc_device */
	struct net_device *netdev;	/* referenced by ib_device_set_netdev */
	struct list_head list;		/* vrdma_dev_list, under vrdma_dev_mutex */
	enum ib_port_state port_state;
	u32 netdev_mtu;
	u8 mac[ETH_ALEN];
	void *priv;			/* verbs-level state (vrdma_verbs.c) */
	bool verbs_ready;		/* vrdma_verbs_dev_init() succeeded */
	atomic64_t counters[VRDMA_CNT_MAX];
	/*
	 * Transport counters are kept per connection by the core; a read
	 * sums the live connections (conns) and conn_retired, where each
	 * connection's counters go when it is destroyed.
	 */
	spinlock_t conn_lock;		/* conns, conn_retired */
	struct list_head conns;		/* vrdma_rc_conn.stats_node */
	u64 conn_retired[VT_STAT_MAX];
};

static inline void vrdma_count(struct vrdma_dev *vdev, enum vrdma_counter c,
			       u64 n)
{
	atomic64_add(n, &vdev->counters[c]);
}

struct vrdma_route_cache;

/* A resolved peer address: what vrdma_net_xmit() needs. */
struct vrdma_route {
	int family;			/* AF_INET or AF_INET6 */
	union {
		__be32 v4;
		struct in6_addr v6;
	} saddr, daddr;
	u8 tos;				/* IPv4 TOS / IPv6 traffic class */
	u8 ttl;				/* hop limit; 0: route default */
	__be32 flow_label;		/* IPv6 only */
	u32 flow_hash;			/* skb->hash of its packets; 0: the stack's */
	/* the dst cache it shares with its key's routes (vrdma_net_route_init) */
	struct vrdma_route_cache *cache;
	/* set: vrdma_net_xmit() queues here; the owner sends after unlock */
	struct sk_buff_head *defer;
};

/* vrdma_net.c */
int vrdma_net_init(void);
void vrdma_net_exit(void);
int vrdma_net_attach(struct net *net);
struct sk_buff *vrdma_net_alloc_skb(struct vrdma_dev *vdev,
				    const struct vrdma_route *r,
				    unsigned int len);
int vrdma_net_route_gid(struct vrdma_route *r, const union ib_gid *sgid,
			const struct ib_global_route *grh);
__be16 vrdma_net_sport(u32 qpn, u16 entropy);
u32 vrdma_net_flow_hash(u32 qpn, u32 dest_qpn);
struct vrdma_frags;

/*
 * A batch: consecutive RC packets of one connection to one path (UDP
 * source port), all as long as the first but the last, sent as one skb
 * (vrdma_batch_send() in vrdma_batch.c says how).
 */
#define VRDMA_BATCH_MAX		32		/* packets */
#define VRDMA_BATCH_BYTES	(48 * 1024)	/* far below IP's 64 KB */

struct vrdma_batch {
	struct sk_buff *skb;
	struct sk_buff *tail;	/* the last skb of its frag list, or NULL */
	__be16 sport;
	u16 n;		/* packets in it */
	u32 seg;	/* bytes of each packet but the last */
	bool closed;	/* a shorter packet ended it */
	bool list;	/* the netdev takes frag lists: it may grow one */
};

/* vrdma_frag.c */
void *vrdma_frag_alloc(unsigned int len);
void vrdma_frag_exit(void);
struct sk_buff *vrdma_build_skb(void *data, unsigned int size);
void vrdma_consume_skb(struct sk_buff *skb);

/* vrdma_batch.c */
void vrdma_batch_add(struct vrdma_dev *vdev, struct vrdma_route *r,
		     struct vrdma_batch *b, __be16 sport, void *buf,
		     u32 buf_len, struct vrdma_frags *fr);
void vrdma_batch_send(struct vrdma_dev *vdev, struct vrdma_route *r,
		      struct vrdma_batch *b);
bool vrdma_batch_on(void);
bool vrdma_batch_room(const struct vrdma_batch *b, u32 len);

/* vrdma_net.c */
int vrdma_net_route_init(struct vrdma_dev *vdev, struct vrdma_route *r);
void vrdma_net_route_destroy(struct vrdma_route *r);
bool vrdma_net_tx_busy(struct vrdma_dev *vdev, const struct vrdma_route *r);
int vrdma_net_xmit(struct vrdma_dev *vdev, struct vrdma_route *r,
		   __be16 sport, struct sk_buff *skb);
int vrdma_net_xmit_now(struct vrdma_dev *vdev, struct vrdma_route *r,
		       __be16 sport, struct sk_buff *skb);

/* vrdma_rx.c */
void vrdma_rx(struct vrdma_dev *vdev, struct sk_buff *skb);
int vrdma_rx_copy(const struct sk_buff *skb, u32 off, void *to, u32 len);

/*
 * The packet of a received skb that the data path is given: an skb may
 * carry a batch of them (vrdma_rx.c), so offsets count from its start.
 */
struct vrdma_rx_cb {
	u32 off;
	struct vrdma_dev *vdev;		/* rx_steer: queued with a reference */
	u32 qpn;			/* rx_steer: its connection */
	/*
	 * the read cursor (vrdma_rx_copy()): the skb (the head or one of its
	 * frag list), a fragment of it and that fragment's offset
	 */
	const struct sk_buff *cur;
	u32 frag;
	u32 frag_start;
};

static_assert(sizeof(struct vrdma_rx_cb) <= sizeof_field(struct sk_buff, cb));

/* VRDMA_RX_CB's qpn of a steered ACK: it counts in no rx_steered */
#define VRDMA_RX_NO_QPN		U32_MAX

#define VRDMA_RX_CB(skb)	((struct vrdma_rx_cb *)(skb)->cb)

/* Where the payload of the packet in hand starts in @skb. */
static inline u32 vrdma_rx_payload(const struct sk_buff *skb)
{
	return VRDMA_RX_CB(skb)->off + VT_DATA_HDR_LEN;
}

/* vrdma_stats.c */
struct vrdma_rc_conn;
extern const struct ib_device_ops vrdma_stats_ops;
void vrdma_stats_init(void);
void vrdma_stats_dev_init(struct vrdma_dev *vdev);
void vrdma_stats_conn_add(struct vrdma_dev *vdev, struct vrdma_rc_conn *rc);
void vrdma_stats_conn_del(struct vrdma_dev *vdev, struct vrdma_rc_conn *rc);

/* vrdma_restrack.c */
extern const struct ib_device_ops vrdma_restrack_ops;

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
