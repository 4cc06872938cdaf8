/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_rx_cpu.h - the receive hand-off and steering queues of a
 * namespace's UDP socket (vrdma_rx_cpu.c), and what they call back in
 * vrdma_net.c.
 */
#ifndef VRDMA_RX_CPU_H
#define VRDMA_RX_CPU_H

#include <linux/interrupt.h>
#include <linux/skbuff.h>
#include <linux/smp.h>
#include <linux/workqueue.h>

#include "vrdma.h"

/* the socket's receive buffer, and the most each queue below holds */
#define VRDMA_UDP_RCVBUF	(8 << 20)

/* skbs and their truesize, at most VRDMA_UDP_RCVBUF */
struct vrdma_skbq {
	struct sk_buff_head q;
	unsigned int bytes;		/* under q.lock */
};

/*
 * A receive hand-off queue: skbs taken off a socket in softirq, processed
 * in order by a worker on another CPU. @pending counts those queued or
 * being processed: while it is not zero, later ones queue behind them.
 */
struct vrdma_rxq {
	struct vrdma_skbq sq;
	unsigned int pending;		/* under sq.q.lock */
	bool polling;			/* under sq.q.lock: the worker polls */
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
	struct vrdma_skbq sq;
	struct tasklet_struct tasklet;
	call_single_data_t csd;
	atomic_t ipi;			/* 1: the IPI is on its way */
};

/* One socket's hand-off queues. */
struct vrdma_rxs {
	struct vrdma_rxq data;
	struct vrdma_rxq ack;
	struct vrdma_steer steer;
	struct vrdma_steer ack_steer;	/* ACKs, to the sender's CPU */
};

/* How a datagram came to vrdma_udp_rcv(). */
enum vrdma_rx_how {
	VRDMA_RX_INLINE,		/* in the softirq that queued it */
	VRDMA_RX_HANDED,		/* a hand-off worker, woken for it */
	VRDMA_RX_POLLED,		/* a hand-off worker polling its queue */
};

/* vrdma_net.c */
void vrdma_udp_rcv(struct sock *sk, struct sk_buff *skb,
		   enum vrdma_rx_how how);
void vrdma_udp_count(struct sock *sk, int field);
struct vrdma_rxs *vrdma_rxs_of(struct sock *sk);

/* vrdma_rx_cpu.c */
int vrdma_rx_cpu_init(void);
void vrdma_rx_cpu_exit(void);
void vrdma_rxs_init(struct vrdma_rxs *rxs);
void vrdma_rxs_start(struct vrdma_rxs *rxs, struct sock *sk);
void vrdma_rxs_stop(struct vrdma_rxs *rxs);
bool vrdma_rx_handoff(struct sock *sk, struct sk_buff *skb);
bool vrdma_rx_steer(struct sock *sk, struct vrdma_dev *vdev,
		    struct sk_buff *skb);

#endif
