// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_ud.c - the UD and GSI data path: unreliable datagrams, one packet
 * per message (VT_OP_UD_SEND, docs/wire-protocol.md), outside the
 * transport core's reliable engine. The GSI QP (QPN 1) carries the MADs
 * of ib_mad, hence ib_cm and rdma_cm.
 *
 * Send: every valid SQ slot is taken at once (copied, released), its AH
 * resolved to an IPv4/IPv6 route from the GIDs, its SGEs or inline bytes
 * gathered into one datagram, and it completes when sent. A user QP's
 * doorbell sends in the system call; a kernel QP sends from a work item,
 * because ib_mad posts with interrupts disabled and under its own lock.
 * UC QPs send through the same loop (vrdma_uc_send_one, vrdma_uc.c).
 *
 * Receive (softirq): the QP is found by destination QPN under RCU (destroy
 * waits for a grace period before freeing the rings), the qkey checked,
 * one RQ or SRQ WQE taken and filled as RoCEv2 does: 40 bytes of GRH
 * area (an IPv6 header, or an IPv4 header in its last 20 bytes), then the
 * payload. Unknown QPN, wrong qkey, or no WQE: the datagram is dropped
 * and counted (UD has no RNR).
 */
#include <linux/highmem.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <net/ipv6.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "rdma/vrdma_wqe.h"
#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_ud.h"
#include "vrdma_uc.h"

#define VRDMA_UD_GRH_LEN	40	/* sizeof(struct ib_grh) */
#define VRDMA_QKEY_USE_QP	0x80000000	/* IBA 10.2.5: use the QP's qkey */

static_assert(sizeof(struct ib_grh) == VRDMA_UD_GRH_LEN);
static_assert(sizeof(union rdma_network_hdr) == VRDMA_UD_GRH_LEN);

/* ---- send --------------------------------------------------------------- */

/*
 * The route to the AH's destination GID from its source GID. The AH is
 * read under the xarray lock: destroy_ah erases it there before the core
 * frees it, and it holds its source GID entry until then.
 */
static enum ib_wc_status vrdma_ud_route(struct vrdma_qp *qp, u32 ah_num,
					struct vrdma_route *r)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	enum ib_wc_status st = IB_WC_LOC_QP_OP_ERR;
	struct ib_global_route grh;
	union ib_gid sgid;
	struct vrdma_ah *ah;
	unsigned long flags;

	xa_lock_irqsave(&vd->ah_xa, flags);
	ah = xa_load(&vd->ah_xa, ah_num);
	if (ah && ah->ibah.pd != qp->ibqp.pd) {
		st = IB_WC_LOC_PROT_ERR;	/* IBA 11.6.2: PD mismatch */
	} else if (ah && ah->ibah.sgid_attr) {
		grh = *rdma_ah_read_grh(&ah->attr);
		sgid = ah->ibah.sgid_attr->gid;
		st = IB_WC_SUCCESS;
	}
	xa_unlock_irqrestore(&vd->ah_xa, flags);
	if (st)
		return st;

	/* mixed families, or multicast (not supported) */
	if (vrdma_net_route_gid(r, &sgid, &grh))
		return IB_WC_LOC_QP_OP_ERR;
	if (r->family == AF_INET ?
	    ipv4_is_multicast(r->daddr.v4) || ipv4_is_lbcast(r->daddr.v4) :
	    ipv6_addr_is_multicast(&r->daddr.v6))
		return IB_WC_LOC_QP_OP_ERR;
	return IB_WC_SUCCESS;
}

/* Send one WQE (a private copy). */
static enum ib_wc_status vrdma_ud_send_one(struct vrdma_qp *qp,
					   const struct vrdma_sqe *s,
					   u32 *lenp)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct vt_data_hdr h = {};
	struct vrdma_route r;
	struct sk_buff *skb;
	void *payload;
	enum ib_wc_status st;
	u32 mtu, qkey;
	u64 total;

	/* the shape, as the provider checked it when posting */
	st = (enum ib_wc_status)vrdma_sqe_check(s, s->flags, VRDMA_SQE_QP_UD,
						 !qp->user, &total);
	if (st)
		return st;
	/* one packet per message: at most the port's MTU */
	mtu = ib_mtu_enum_to_int(vrdma_mtu_from_netdev(READ_ONCE(vdev->netdev_mtu)));
	if (total > mtu)
		return IB_WC_LOC_LEN_ERR;
	*lenp = total;

	st = vrdma_ud_route(qp, s->ah, &r);
	if (st)
		return st;

	qkey = s->remote_qkey;
	if (qkey & VRDMA_QKEY_USE_QP)
		qkey = READ_ONCE(qp->attr.qkey);
	h.opcode = VT_OP_UD_SEND;
	h.flags = VT_F_SOM | VT_F_EOM;
	h.payload_len = total;
	h.msg_len = total;
	h.dst_conn = s->remote_qpn & VT_UD_QPN_MASK;
	h.msg_id = qp->ibqp.qp_num;	/* source QPN */
	h.rkey = qkey;
	h.tx_ts = ktime_get_ns();
	if (s->opcode == VRDMA_OP_SEND_WITH_IMM) {
		h.flags |= VT_F_IMM;
		h.imm = s->ex;
	}
	if (s->flags & VRDMA_WQE_SOLICITED)
		h.flags |= VT_F_SE;

	skb = vrdma_net_alloc_skb(vdev, &r, VT_DATA_HDR_LEN + total);
	if (!skb) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR, 1);
		return IB_WC_SUCCESS;	/* a lost datagram */
	}
	if (vt_data_hdr_encode(&h, skb_put(skb, VT_DATA_HDR_LEN),
			       VT_DATA_HDR_LEN) < 0) {
		kfree_skb(skb);
		return IB_WC_LOC_QP_OP_ERR;
	}
	payload = skb_put(skb, total);
	if (s->flags & VRDMA_WQE_INLINE) {
		memcpy(payload, s->sge, total);
	} else {
		struct vrdma_buf b = VRDMA_BUF(payload);

		st = vrdma_sge_copy(qp, s->sge, s->num_sge, 0, &b, total,
				    false);
	}
	if (st) {
		kfree_skb(skb);
		return st;
	}
	/* ephemeral source port per QP; a failed send is a lost datagram */
	vrdma_net_xmit(vdev, &r, vrdma_net_sport(qp->ibqp.qp_num, 0), skb);
	return IB_WC_SUCCESS;
}

/*
 * Send every valid SQ slot. A slot is released when taken: the WQE is
 * done once its datagram left, and a flush racing with us (the QP entering
 * ERR) then never sees it twice. UC QPs send here too (vrdma_uc.c), one
 * sender at a time: a message's packets leave in PSN order, unmixed.
 */
static void vrdma_ud_tx_ring(struct vrdma_qp *qp)
{
	struct vrdma_ring *r = &qp->sq;
	struct vrdma_cq *cq = to_vcq(qp->ibqp.send_cq);
	bool uc = vrdma_qp_is_uc(qp);

	for (;;) {
		struct vrdma_cqe cqe = {};
		struct vrdma_sqe s;
		unsigned long flags;
		void *slot;
		enum ib_wc_status st;
		u32 f, len = 0;

		/*
		 * Pairs with the provider's fence between publishing WQEs and
		 * reading whether the one before them was taken: the slot we
		 * cleared is visible before we look at the next one, so
		 * either the provider rings again or we see its WQE (a kick
		 * at RTS runs outside the provider's lock).
		 */
		smp_mb();
		spin_lock_irqsave(&qp->sq_lock, flags);
		slot = vrdma_ring_slot(r, r->cons);
		f = vrdma_slot_flags(slot);
		if (READ_ONCE(qp->state) != IB_QPS_RTS ||
		    !(f & VRDMA_WQE_VALID)) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			return;
		}
		memcpy(&s, slot, sizeof(s));
		s.flags = f;
		vrdma_slot_set(slot, 0);
		r->cons++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		st = uc ? vrdma_uc_send_one(qp, &s, &len) :
			  vrdma_ud_send_one(qp, &s, &len);
		if (st || (f & VRDMA_WQE_SIGNALED)) {
			cqe.wr_id = s.wr_id;
			cqe.opcode = vrdma_sq_wc_opcode(s.opcode);
			cqe.status = st;
			cqe.byte_len = len;
			cqe.qp_num = qp->ibqp.qp_num;
			vrdma_cq_push(cq, &cqe);
		}
		cond_resched();
	}
}

static void vrdma_ud_tx(struct vrdma_qp *qp)
{
	if (!vrdma_qp_is_uc(qp)) {
		vrdma_ud_tx_ring(qp);
		return;
	}
	mutex_lock(&qp->uc_tx_lock);
	vrdma_ud_tx_ring(qp);
	mutex_unlock(&qp->uc_tx_lock);
}

static void vrdma_ud_work(struct work_struct *work)
{
	vrdma_ud_tx(container_of(work, struct vrdma_qp, ud_work));
}

/*
 * New send WQEs (or the QP reached RTS). A user QP sends in its doorbell
 * system call, so the ring is drained when the call returns (the
 * provider rings again only when the previous slot was taken); a kernel
 * QP may post from any context and sends from a work item.
 */
void vrdma_ud_kick(struct vrdma_qp *qp)
{
	if (qp->user)
		vrdma_ud_tx(qp);
	else
		queue_work(system_highpri_wq, &qp->ud_work);
}

void vrdma_ud_create(struct vrdma_qp *qp)
{
	INIT_WORK(&qp->ud_work, vrdma_ud_work);
}

/* After the QP left the QP xarray: no receive path or send work left. */
void vrdma_ud_destroy(struct vrdma_qp *qp)
{
	synchronize_rcu();
	cancel_work_sync(&qp->ud_work);
}

/* ---- receive ------------------------------------------------------------ */

/* The GRH area of a UD receive, as RoCEv2 fills it (rxe_resp.c). */
static u8 vrdma_ud_grh(struct sk_buff *skb, union rdma_network_hdr *grh)
{
	memset(grh, 0, sizeof(*grh));
	if (skb->protocol == htons(ETH_P_IP) &&
	    skb_network_header(skb) + sizeof(struct iphdr) <= skb->data) {
		memcpy(&grh->roce4grh, ip_hdr(skb), sizeof(grh->roce4grh));
		return RDMA_NETWORK_IPV4;
	}
	if (skb->protocol == htons(ETH_P_IPV6) &&
	    skb_network_header(skb) + sizeof(struct ipv6hdr) <= skb->data) {
		memcpy(&grh->ibgrh, ipv6_hdr(skb), sizeof(grh->ibgrh));
		return RDMA_NETWORK_IPV6;
	}
	return 0;
}

/* Fill a taken receive WQE: GRH area, then payload. */
static enum ib_wc_status vrdma_ud_place(struct vrdma_qp *qp,
					const struct vrdma_rqe *rqe,
					union rdma_network_hdr *grh,
					const struct sk_buff *skb, u32 len)
{
	struct vrdma_buf b = VRDMA_BUF(grh);
	enum ib_wc_status st;
	u64 room = 0;
	u32 i;

	if (rqe->num_sge > VRDMA_MAX_SGE)
		return IB_WC_LOC_QP_OP_ERR;
	for (i = 0; i < rqe->num_sge; i++)
		room += rqe->sge[i].length;
	if (room < VRDMA_UD_GRH_LEN + (u64)len)
		return IB_WC_LOC_LEN_ERR;
	st = vrdma_sge_copy(qp, rqe->sge, rqe->num_sge, 0, &b,
			    VRDMA_UD_GRH_LEN, true);
	b = VRDMA_SKB_BUF(skb, vrdma_rx_payload(skb));
	if (!st)
		st = vrdma_sge_copy(qp, rqe->sge, rqe->num_sge,
				    VRDMA_UD_GRH_LEN, &b, len, true);
	return st;
}

/*
 * A decoded VT_OP_UD_SEND from softirq; the caller frees @skb. The
 * decoder checked every header field and that the payload fills the rest
 * of the datagram (linear or in page fragments).
 */
void vrdma_ud_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		 const struct vt_data_hdr *dh)
{
	struct vrdma_verbs_dev *vd = vdev->priv;
	union rdma_network_hdr grh;
	struct vrdma_cqe cqe = {};
	struct vrdma_rqe rqe;
	enum ib_qp_state state;
	struct vrdma_qp *qp;
	u8 net_type;
	u32 qkey;

	rcu_read_lock();
	qp = vd ? xa_load(&vd->qp_xa, dh->dst_conn) : NULL;
	if (!qp || !vrdma_qp_is_ud(qp)) {
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
		goto out;
	}
	state = READ_ONCE(qp->state);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS) {
		vrdma_count(vdev, VRDMA_CNT_RX_NO_QP, 1);
		goto out;
	}
	qkey = qp->ibqp.qp_type == IB_QPT_GSI ? IB_QP1_QKEY :
						READ_ONCE(qp->attr.qkey);
	if (vt_ud_qkey(dh) != qkey) {
		vrdma_count(vdev, VRDMA_CNT_RX_BAD_QKEY, 1);
		goto out;
	}
	/*
	 * ib_mad never reposts a receive that completed in error: a MAD
	 * that cannot fit is dropped before it costs a WQE.
	 */
	if (qp->ibqp.qp_type == IB_QPT_GSI &&
	    dh->payload_len > IB_MGMT_MAD_SIZE) {
		vrdma_count(vdev, VRDMA_CNT_RX_BAD, 1);
		goto out;
	}
	net_type = vrdma_ud_grh(skb, &grh);
	if (!net_type) {
		vrdma_count(vdev, VRDMA_CNT_RX_BAD, 1);
		goto out;
	}
	if (!vrdma_rq_take(qp, &rqe)) {
		vrdma_count(vdev, VRDMA_CNT_RX_NO_RECV, 1);
		goto out;
	}

	cqe.status = vrdma_ud_place(qp, &rqe, &grh, skb, dh->payload_len);
	cqe.wr_id = rqe.wr_id;
	cqe.opcode = IB_WC_RECV;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = vt_ud_src_qpn(dh);
	cqe.flags = VRDMA_CQE_GRH;
	cqe.network_hdr_type = net_type;
	if (!cqe.status)
		cqe.byte_len = VRDMA_UD_GRH_LEN + dh->payload_len;
	if (dh->flags & VT_F_IMM) {
		cqe.flags |= VRDMA_CQE_WITH_IMM;
		cqe.ex = dh->imm;
	}
	if (dh->flags & VT_F_SE)
		cqe.flags |= VRDMA_CQE_SOLICITED;
	vrdma_cq_push(to_vcq(qp->ibqp.recv_cq), &cqe);
out:
	rcu_read_unlock();
}
