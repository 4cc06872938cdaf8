// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_rx_cpu.c - placing received packets on another CPU than the one
 * whose backlog they arrived in, both experimental and off by default:
 * the receive hand-off (rx_handoff: a worker places batches, another
 * takes the ACKs they cause) and receive steering (rx_steer: a tasklet,
 * scheduled by an IPI, places a stream of small messages). On one kernel
 * a veth delivers into the backlog of the CPU that sent, so without them
 * one QP's whole chain runs on one CPU. The namespace's UDP socket
 * (vrdma_net.c) calls in from its receive path. Whether a connection's
 * packets are steered is decided here, from its state read without its
 * lock: a hint.
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/smp.h>
#include <net/udp.h>

#include "vrdma.h"
#include "vrdma_rc.h"
#include "vrdma_rx_cpu.h"
#include "vt_wire.h"

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
 * stay where they arrive. The ACKs of a stream that arrive on another CPU
 * than the one its process posts from are taken there, by a second such
 * tasklet (vrdma_rc_ack_steer()): what their runs send then leaves from
 * the doorbells' CPU, in order.
 */
static bool rx_steer;
module_param(rx_steer, bool, 0644);
MODULE_PARM_DESC(rx_steer, "single-packet messages of a stream are placed on another CPU, woken by an IPI (experimental, default N)");

/*
 * Experimental: a hand-off worker whose queue ran empty polls it this
 * long before it sleeps, so that a stream's batches find it awake: no
 * wake-up (an IPI) per batch. Data and ACK workers apart; at most
 * VRDMA_RX_SPIN_MAX_US, as the work pool's other items wait meanwhile.
 */
#define VRDMA_RX_SPIN_MAX_US	10000

static unsigned int rx_spin_us;
module_param(rx_spin_us, uint, 0644);
MODULE_PARM_DESC(rx_spin_us, "the data hand-off worker polls its empty queue this long before it sleeps (experimental, default 0)");

static unsigned int rx_ack_spin_us;
module_param(rx_ack_spin_us, uint, 0644);
MODULE_PARM_DESC(rx_ack_spin_us, "the ACK hand-off worker polls its empty queue this long before it sleeps (experimental, default 0)");

static struct workqueue_struct *vrdma_rx_wq;

/* This CPU runs a data hand-off worker (set around each of its skbs). */
static DEFINE_PER_CPU(bool, vrdma_rx_placing);

static void vrdma_skbq_init(struct vrdma_skbq *sq)
{
	skb_queue_head_init(&sq->q);
	sq->bytes = 0;
}

/* Under @sq's lock: queue @skb, or false if it would overfill @sq. */
static bool vrdma_skbq_put(struct vrdma_skbq *sq, struct sk_buff *skb)
{
	if (sq->bytes + skb->truesize > VRDMA_UDP_RCVBUF)
		return false;
	__skb_queue_tail(&sq->q, skb);
	sq->bytes += skb->truesize;
	return true;
}

/* A full queue drops, as a full socket would. */
static void vrdma_skbq_drop(struct sock *sk, struct sk_buff *skb)
{
	vrdma_udp_count(sk, UDP_MIB_RCVBUFERRORS);
	kfree_skb(skb);
}

static struct sk_buff *vrdma_skbq_take(struct vrdma_skbq *sq)
{
	struct sk_buff *skb;

	spin_lock(&sq->q.lock);
	skb = __skb_dequeue(&sq->q);
	if (skb)
		sq->bytes -= skb->truesize;
	spin_unlock(&sq->q.lock);
	return skb;
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
	bool queued, polling;

	spin_lock(&q->sq.q.lock);
	if (!force && !q->pending) {
		spin_unlock(&q->sq.q.lock);
		return false;
	}
	queued = vrdma_skbq_put(&q->sq, skb);
	q->pending += queued;
	polling = q->polling;
	spin_unlock(&q->sq.q.lock);
	if (!queued) {
		vrdma_skbq_drop(q->sk, skb);
		return true;
	}
	if (!polling)
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
bool vrdma_rx_handoff(struct sock *sk, struct sk_buff *skb)
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
 * The worker's queue ran empty: with rx_spin_us (rx_ack_spin_us for the
 * ACK worker) it polls the queue that long before it sleeps, and marks
 * itself polling so that vrdma_rxq_add() does not queue it again. A
 * stream's next batch then finds it awake: no wake-up, which under TCG
 * is an IPI and a thread switch per batch (docs/benchmarks.md, "Receive
 * hand-off"). True: something came (looked at under the lock, after the
 * mark is gone, so nothing is left behind unseen).
 */
static bool vrdma_rxq_spin(struct vrdma_rxq *q)
{
	unsigned int us = q->data ? READ_ONCE(rx_spin_us) :
				    READ_ONCE(rx_ack_spin_us);
	bool more;
	u64 end;

	if (!us)
		return false;
	us = min(us, VRDMA_RX_SPIN_MAX_US);
	spin_lock_bh(&q->sq.q.lock);
	q->polling = true;
	spin_unlock_bh(&q->sq.q.lock);
	end = local_clock() + (u64)us * NSEC_PER_USEC;
	while (skb_queue_empty_lockless(&q->sq.q) && !need_resched() &&
	       local_clock() < end)
		cpu_relax();
	spin_lock_bh(&q->sq.q.lock);
	q->polling = false;
	more = !skb_queue_empty(&q->sq.q);
	spin_unlock_bh(&q->sq.q.lock);
	return more;
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
	enum vrdma_rx_how how = VRDMA_RX_HANDED;
	struct sk_buff *skb;

	for (;;) {
		preempt_disable();
		local_bh_disable();
		skb = vrdma_skbq_take(&q->sq);
		if (!skb) {
			local_bh_enable();
			preempt_enable();
			if (!vrdma_rxq_spin(q))
				return;
			how = VRDMA_RX_POLLED;
			continue;
		}
		__this_cpu_write(vrdma_rx_placing, q->data);
		vrdma_udp_rcv(q->sk, skb, how);
		how = VRDMA_RX_HANDED;
		spin_lock(&q->sq.q.lock);
		q->pending--;
		spin_unlock(&q->sq.q.lock);
		/* the softirqs it raised (its ACKs) run here, still marked */
		local_bh_enable();
		__this_cpu_write(vrdma_rx_placing, false);
		preempt_enable();
		cond_resched();
	}
}

static void vrdma_rxq_init(struct vrdma_rxq *q, bool data)
{
	vrdma_skbq_init(&q->sq);
	q->pending = 0;
	q->polling = false;
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
	skb_queue_purge(&q->sq.q);
	q->sq.bytes = 0;
	q->pending = 0;
	sock_put(q->sk);
	q->sk = NULL;
}

/*
 * rx_steer: whether a data packet (or batch) for @qpn is
 * placed on the steering CPU. It must while earlier ones of its connection
 * wait or are being placed there, which keeps their order; it may when it
 * is a whole message in one packet (@one) and the connection holds an ACK
 * for data before it: a stream of small messages, not a ping-pong. Counted
 * until vrdma_rc_rx_steered(). The ACK test reads without the lock: a hint.
 */
static bool vrdma_rc_rx_steer(struct vrdma_dev *vdev, u32 qpn, bool one)
{
	struct vrdma_rc_conn *rc;
	bool ret = false;

	rcu_read_lock();
	rc = vrdma_rc_lookup(vdev, qpn);
	if (rc && (atomic_read(&rc->rx_steered) ||
		   (one && vt_rx_ack_pending(&rc->vt)))) {
		atomic_inc(&rc->rx_steered);
		ret = true;
	}
	rcu_read_unlock();
	return ret;
}

/*
 * A stream: more than two messages unacknowledged, or data or WQEs that
 * wait to be sent. Not a ping-pong, which has at most two (the one just
 * answered, whose ACK follows the answer, and the next) and whose ACK's
 * run sends nothing. Read without the lock: a hint.
 */
static bool vrdma_rc_streaming(struct vrdma_rc_conn *rc)
{
	return READ_ONCE(rc->req.msg_next) - READ_ONCE(rc->req.msg_acked) > 2 ||
	       vt_tx_unsent(&rc->vt) || READ_ONCE(rc->req.sq_blocked);
}

/*
 * rx_steer: the CPU an ACK for @qpn is taken on, or -1 for this one. A
 * stream whose process posts on another CPU takes its ACKs there. Taken
 * here, the run an ACK causes (new data, WQEs it let in, a RACK resend)
 * sent from here, into this CPU's backlog, while the doorbells send into
 * the other's, and two backlogs drain independently: with the steered
 * placement's ACKs coming from the steering CPU, 1-2 % of a 64 B stream
 * reached the peer out of sequence, ~190 packets resent in 6 s; taken on
 * the posting CPU, 2 packets and 4 (docs/benchmarks.md, "Receive
 * steering").
 */
static int vrdma_rc_ack_steer(struct vrdma_dev *vdev, u32 qpn)
{
	struct vrdma_rc_conn *rc;
	int cpu = -1;

	rcu_read_lock();
	rc = vrdma_rc_lookup(vdev, qpn);
	if (rc && vrdma_rc_streaming(rc)) {
		cpu = READ_ONCE(rc->tx_cpu);
		if (cpu < 0 || cpu == smp_processor_id() || !cpu_online(cpu))
			cpu = -1;
	}
	rcu_read_unlock();
	return cpu;
}

/* A steered packet (or batch) for @qpn was placed. */
static void vrdma_rc_rx_steered(struct vrdma_dev *vdev, u32 qpn)
{
	struct vrdma_rc_conn *rc;

	rcu_read_lock();
	rc = vrdma_rc_lookup(vdev, qpn);
	if (rc)
		atomic_dec_if_positive(&rc->rx_steered);
	rcu_read_unlock();
}

/* rx_steer: on the other CPU, in its IPI handler */
static void vrdma_steer_ipi(void *info)
{
	struct vrdma_steer *st = info;

	tasklet_schedule(&st->tasklet);
	atomic_set_release(&st->ipi, 0);	/* the last touch of @st */
}

/* rx_steer: place what was queued, in order, 64 at a time */
static void vrdma_steer_tasklet(struct tasklet_struct *t)
{
	struct vrdma_steer *st = from_tasklet(st, t, tasklet);
	struct sk_buff *skb;
	int budget = 64;

	while (budget-- && (skb = vrdma_skbq_take(&st->sq))) {
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
 * Queue @skb (the caller's reference to @vdev with it) on @st, whose
 * tasklet an IPI schedules on @cpu unless it is scheduled already.
 */
static void vrdma_steer_queue(struct sock *sk, struct vrdma_steer *st,
			      struct vrdma_dev *vdev, struct sk_buff *skb,
			      int cpu)
{
	bool queued;

	VRDMA_RX_CB(skb)->vdev = vdev;
	spin_lock(&st->sq.q.lock);
	queued = vrdma_skbq_put(&st->sq, skb);
	spin_unlock(&st->sq.q.lock);
	if (!queued) {
		vrdma_rc_rx_steered(vdev, VRDMA_RX_CB(skb)->qpn);
		vrdma_skbq_drop(sk, skb);
		ib_device_put(&vdev->ibdev);
		return;
	}
	/* a scheduled tasklet will see it; a running one looks again */
	if (test_bit(TASKLET_STATE_SCHED, &st->tasklet.state) ||
	    atomic_xchg(&st->ipi, 1))
		return;
	if (smp_call_function_single_async(cpu, &st->csd)) {
		atomic_set(&st->ipi, 0);
		tasklet_schedule(&st->tasklet);
	}
}

/* An ACK for a connection whose sender runs on another CPU: its CPU. */
static int vrdma_rx_ack_cpu(struct vrdma_dev *vdev, struct sk_buff *skb)
{
	u8 buf[VT_ACK_LEN];
	struct vt_ack a;
	const void *p;

	if (skb_is_gso(skb) || skb->len < VT_ACK_LEN)
		return -1;
	p = skb_header_pointer(skb, 0, VT_ACK_LEN, buf);
	if (!p || vt_pkt_opcode(p, skb->len) != VT_OP_ACK ||
	    vt_ack_decode(p, skb->len, &a) < 0)
		return -1;
	VRDMA_RX_CB(skb)->qpn = VRDMA_RX_NO_QPN;
	return vrdma_rc_ack_steer(vdev, a.dst_conn);
}

/*
 * rx_steer: queue @skb for another CPU if its connection says so: a
 * stream's ACK for the CPU its process posts from (vrdma_rc_ack_steer()),
 * a stream's data for the other CPU (vrdma_rc_rx_steer()). True: taken,
 * with the caller's reference to @vdev.
 */
bool vrdma_rx_steer(struct sock *sk, struct vrdma_dev *vdev,
		    struct sk_buff *skb)
{
	struct vrdma_rxs *rxs = vrdma_rxs_of(sk);
	int cpu;

	if (!READ_ONCE(rx_steer) || num_online_cpus() < 2)
		return false;
	cpu = vrdma_rx_ack_cpu(vdev, skb);
	if (cpu >= 0) {
		vrdma_steer_queue(sk, &rxs->ack_steer, vdev, skb, cpu);
		return true;
	}
	if (!vrdma_rx_stream(vdev, skb))
		return false;
	vrdma_steer_queue(sk, &rxs->steer, vdev, skb, vrdma_rx_other_cpu());
	return true;
}

static void vrdma_steer_init(struct vrdma_steer *st)
{
	vrdma_skbq_init(&st->sq);
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
	while ((skb = vrdma_skbq_take(&st->sq))) {
		struct vrdma_dev *vdev = VRDMA_RX_CB(skb)->vdev;

		vrdma_rc_rx_steered(vdev, VRDMA_RX_CB(skb)->qpn);
		ib_device_put(&vdev->ibdev);
		kfree_skb(skb);
	}
	local_bh_enable();
}

/* The hand-off queues of a new socket hold it until it closes. */
void vrdma_rxs_start(struct vrdma_rxs *rxs, struct sock *sk)
{
	sock_hold(sk);
	rxs->data.sk = sk;
	sock_hold(sk);
	rxs->ack.sk = sk;
}

void vrdma_rxs_init(struct vrdma_rxs *rxs)
{
	vrdma_rxq_init(&rxs->data, true);
	vrdma_rxq_init(&rxs->ack, false);
	vrdma_steer_init(&rxs->steer);
	vrdma_steer_init(&rxs->ack_steer);
}

/* The socket is closed: no more data_ready, so none of them fills another. */
void vrdma_rxs_stop(struct vrdma_rxs *rxs)
{
	vrdma_rxq_stop(&rxs->data);
	vrdma_rxq_stop(&rxs->ack);
	vrdma_steer_stop(&rxs->steer);
	vrdma_steer_stop(&rxs->ack_steer);
}

int vrdma_rx_cpu_init(void)
{
	/* receive must progress under memory pressure (NVMe-oF, NFS) */
	vrdma_rx_wq = alloc_workqueue("vrdma_rx", WQ_HIGHPRI | WQ_MEM_RECLAIM,
				      0);
	return vrdma_rx_wq ? 0 : -ENOMEM;
}

void vrdma_rx_cpu_exit(void)
{
	destroy_workqueue(vrdma_rx_wq);
}
