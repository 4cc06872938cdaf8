// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rc_grave.c - what a closed RC connection still answers.
 *
 * A responder's last ACK may be lost after its application saw the data
 * and closed the QP: ibv_rc_pingpong's server exits once its own last
 * send completes, and the client's last message, delivered, was then
 * retried into a QP that was gone until the client failed it with
 * RETRY_EXC (1% netem loss did it in CI). TCP keeps a closed socket in
 * TIME_WAIT for the same reason. So a closed connection answers its
 * former peer's retransmission of what it had received with an ACK up to
 * there (vt_rx_closed_ack): a QP in ERR from its own state, one destroyed
 * or reset from a grave, a few bytes kept per QPN for VRDMA_GRAVE_SECS
 * (a requester's retransmissions come at most 100 ms apart, its RTO's
 * ceiling, for as long as it retries: the first after the close well
 * within that). Anything else stays unanswered, as before; nothing is
 * delivered any more.
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "vrdma.h"
#include "vrdma_rc.h"
#include "vrdma_verbs.h"

#define VRDMA_GRAVE_SECS	4
/* a bound on the memory (~100 B each) a storm of closes may pin */
#define VRDMA_GRAVES_MAX	65536

struct vrdma_grave {
	struct rcu_head rcu;
	struct vrdma_route route;	/* no dst cache: a lookup per ACK */
	u32 dest_qpn;
	u32 epsn;			/* the receive side stopped here */
	unsigned long expires;		/* jiffies */
};

/*
 * Answer @dh, a data packet of the former peer (the caller checked its
 * address) of the closed QP @qpn, from @r. False when it is not a
 * retransmission of something received: nothing was sent.
 */
bool vrdma_grave_ack(struct vrdma_dev *vdev, struct vrdma_route *r, u32 qpn,
		     u32 dest_qpn, u32 epsn, const struct vt_data_hdr *dh)
{
	struct vt_ack a;

	if (!vt_rx_closed_ack(epsn, dest_qpn, dh, &a))
		return false;
	vrdma_count(vdev, VRDMA_CNT_CLOSED_ACKS, 1);
	vrdma_resp_xmit_ack_on(vdev, r, qpn, &a);
	return true;
}

/*
 * A data packet for @qpn, which has no connection: answered from its
 * grave when it is one. Softirq. False when nothing was sent.
 */
bool vrdma_grave_rx(struct vrdma_dev *vdev, struct sk_buff *skb,
		    const struct vt_data_hdr *dh)
{
	struct vrdma_verbs_dev *vd = vdev->priv;
	struct vrdma_grave *g;
	bool sent = false;

	if (!vd)
		return false;
	rcu_read_lock();
	g = xa_load(&vd->grave_xa, dh->dst_conn);
	if (g && time_before(jiffies, g->expires) &&
	    vrdma_route_from_peer(&g->route, skb))
		sent = vrdma_grave_ack(vdev, &g->route, dh->dst_conn,
				       g->dest_qpn, g->epsn, dh);
	rcu_read_unlock();
	return sent;
}

static void vrdma_grave_free(struct vrdma_verbs_dev *vd, struct vrdma_grave *g)
{
	atomic_dec(&vd->n_graves);
	kfree_rcu(g, rcu);
}

/*
 * The connection of @qp goes (destroy, or RESET): leave its grave, if its
 * peer ever sent it anything. Process context, the connection quiesced.
 */
void vrdma_grave_add(struct vrdma_qp *qp, struct vrdma_rc_conn *rc)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	struct vrdma_grave *g, *old;

	if (!vd || !vt_rx_accepted(&rc->vt))
		return;
	if (atomic_inc_return(&vd->n_graves) > VRDMA_GRAVES_MAX) {
		atomic_dec(&vd->n_graves);
		return;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		atomic_dec(&vd->n_graves);
		return;
	}
	g->route.family = rc->route.family;
	g->route.saddr = rc->route.saddr;
	g->route.daddr = rc->route.daddr;
	g->route.tos = rc->route.tos;
	g->route.ttl = rc->route.ttl;
	g->route.flow_label = rc->route.flow_label;
	g->dest_qpn = rc->dest_qpn;
	spin_lock_bh(&rc->lock);
	g->epsn = vt_rx_cum_psn(&rc->vt);
	spin_unlock_bh(&rc->lock);
	g->expires = jiffies + VRDMA_GRAVE_SECS * HZ;
	old = xa_store(&vd->grave_xa, qp->ibqp.qp_num, g, GFP_KERNEL);
	if (xa_is_err(old)) {
		vrdma_grave_free(vd, g);
		return;
	}
	if (old)
		vrdma_grave_free(vd, old);
	queue_delayed_work(system_wq, &vd->grave_gc, VRDMA_GRAVE_SECS * HZ);
}

/*
 * Bury the expired graves; again later while any is left. Under the
 * xarray's lock: vrdma_grave_add() cannot replace (and free) a grave
 * this walk holds.
 */
static void vrdma_grave_gc(struct work_struct *work)
{
	struct vrdma_verbs_dev *vd = container_of(to_delayed_work(work),
						  struct vrdma_verbs_dev,
						  grave_gc);
	struct vrdma_grave *g;
	unsigned long qpn;
	bool left;

	xa_lock(&vd->grave_xa);
	xa_for_each(&vd->grave_xa, qpn, g) {
		if (time_before(jiffies, g->expires))
			continue;
		__xa_erase(&vd->grave_xa, qpn);
		vrdma_grave_free(vd, g);
	}
	left = !xa_empty(&vd->grave_xa);
	xa_unlock(&vd->grave_xa);
	if (left)
		queue_delayed_work(system_wq, &vd->grave_gc, HZ);
}

void vrdma_graves_init(struct vrdma_verbs_dev *vd)
{
	xa_init(&vd->grave_xa);
	INIT_DELAYED_WORK(&vd->grave_gc, vrdma_grave_gc);
}

/* The device goes: no QP, and no receive path, is left to add or look. */
void vrdma_graves_cleanup(struct vrdma_verbs_dev *vd)
{
	struct vrdma_grave *g;
	unsigned long qpn;

	cancel_delayed_work_sync(&vd->grave_gc);
	xa_lock(&vd->grave_xa);
	xa_for_each(&vd->grave_xa, qpn, g) {
		__xa_erase(&vd->grave_xa, qpn);
		vrdma_grave_free(vd, g);
	}
	xa_unlock(&vd->grave_xa);
	xa_destroy(&vd->grave_xa);
}
