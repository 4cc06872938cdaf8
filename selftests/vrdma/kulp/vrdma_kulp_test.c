// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_kulp_test - a kernel ULP exercising a vrdma device through the
 * in-kernel verbs API, the way NVMe-oF, iSER or RDS would: PD, CQ (with
 * the ib_cq polling context), RC QP, DMA lkey, fast-registration MR with
 * ib_map_mr_sg, posting, and ib_drain_qp (which relies on the flush of
 * the error state). Results go to the kernel log as "vrdma_kulp: ok|FAIL".
 * Test-only module, loaded by selftests/vrdma/verbs_kernel.sh.
 *
 * With pair_a/pair_b (device names) and gid_a/gid_b (their IPv4 GID
 * indexes) it instead connects an RC QP on each and runs the kernel-only
 * work requests across them (selftests/vrdma/dp_kernel.sh): REG_MR of a
 * fast-registration MR, an RDMA WRITE into it, SEND_WITH_INV (the receive
 * reports IB_WC_WITH_INVALIDATE and the MR is dead), REG_MR again,
 * LOCAL_INV, a READ followed by a fenced WRITE, and solicited events: a
 * receive CQ armed with IB_CQ_SOLICITED calls its completion handler for
 * a SEND with IB_SEND_SOLICITED, not for one without.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static int failures;
static int flushed;

static char *pair_a, *pair_b;
static int gid_a = -1, gid_b = -1;
module_param(pair_a, charp, 0444);
module_param(pair_b, charp, 0444);
module_param(gid_a, int, 0444);
module_param(gid_b, int, 0444);
static struct ib_device *pdev_a, *pdev_b;

static void vrdma_kulp_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		flushed++;
}

static struct ib_cqe vrdma_kulp_cqe = { .done = vrdma_kulp_done };

#define CHECK(cond, what) do {						\
	if (cond)							\
		pr_info("vrdma_kulp: ok - %s\n", what);			\
	else {								\
		pr_info("vrdma_kulp: FAIL - %s\n", what);		\
		failures++;						\
	}								\
} while (0)

static void vrdma_kulp_run(struct ib_device *dev)
{
	struct ib_qp_init_attr ia = {};
	struct ib_qp_attr attr = {};
	struct scatterlist sg;
	struct ib_recv_wr rwr = {};
	const struct ib_recv_wr *bad;
	struct ib_sge sge;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_mr *mr;
	void *buf;
	int n;

	pd = ib_alloc_pd(dev, 0);
	CHECK(!IS_ERR(pd), "ib_alloc_pd");
	if (IS_ERR(pd))
		return;
	cq = ib_alloc_cq(dev, NULL, 16, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "ib_alloc_cq");
	if (IS_ERR(cq))
		goto out_pd;

	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IB_QPT_RC;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	qp = ib_create_qp(pd, &ia);
	CHECK(!IS_ERR(qp), "ib_create_qp RC");
	if (IS_ERR(qp))
		goto out_cq;
	CHECK(qp->qp_num >= 16, "kernel QP number outside the reserved range");

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = 1;
	attr.pkey_index = 0;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	CHECK(!ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PORT |
			    IB_QP_PKEY_INDEX | IB_QP_ACCESS_FLAGS),
	      "RESET -> INIT");

	buf = kzalloc(2 * PAGE_SIZE, GFP_KERNEL);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK(!IS_ERR(mr), "ib_alloc_mr MEM_REG");
	if (!IS_ERR(mr) && buf) {
		sg_init_one(&sg, buf, 2 * PAGE_SIZE);
		CHECK(ib_dma_map_sg(dev, &sg, 1, DMA_BIDIRECTIONAL) == 1,
		      "ib_dma_map_sg");
		n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
		pr_info("vrdma_kulp: map_mr_sg %d iova %llx length %llu\n",
			n, mr->iova, mr->length);
		CHECK(n == 1 && mr->length == 2 * PAGE_SIZE &&
		      mr->iova == sg_dma_address(&sg),
		      "ib_map_mr_sg maps 2 pages");
		ib_dma_unmap_sg(dev, &sg, 1, DMA_BIDIRECTIONAL);
		CHECK(IS_ERR(ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 100000)),
		      "ib_alloc_mr above max_fast_reg_page_list_len fails");
	}

	/* a receive posted in INIT, then drained through the error state */
	sge.addr = (u64)(uintptr_t)buf;
	sge.length = 64;
	sge.lkey = pd->local_dma_lkey;
	rwr.wr_cqe = &vrdma_kulp_cqe;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK(!ib_post_recv(qp, &rwr, &bad), "ib_post_recv in INIT");
	ib_drain_rq(qp);
	CHECK(flushed == 1, "ib_drain_rq flushed the posted receive");

	if (!IS_ERR(mr))
		CHECK(!ib_dereg_mr(mr), "ib_dereg_mr");
	kfree(buf);
	CHECK(!ib_destroy_qp(qp), "ib_destroy_qp");
out_cq:
	ib_free_cq(cq);
out_pd:
	ib_dealloc_pd(pd);
}


/* ---- two devices: the kernel-only work requests ---------------------- */

struct kside {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;		/* sends */
	struct ib_cq *rcq;		/* receives: armed with ib_req_notify_cq */
	atomic_t events;		/* rcq's completion handler calls */
	struct ib_qp *qp;
	union ib_gid gid;
	int gid_index;
	u8 *buf;
};

/* One completion of @cq within 10 s. */
static bool kpoll(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + 10 * HZ;

	while (time_before(jiffies, end)) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return true;
		usleep_range(200, 1000);
	}
	pr_info("vrdma_kulp: no completion\n");
	return false;
}

static bool kwc(struct ib_cq *cq, enum ib_wc_status st, enum ib_wc_opcode op)
{
	struct ib_wc wc;

	if (!kpoll(cq, &wc))
		return false;
	if (wc.status != st || (st == IB_WC_SUCCESS && wc.opcode != op)) {
		pr_info("vrdma_kulp: completion status %d opcode %d\n",
			wc.status, wc.opcode);
		return false;
	}
	return true;
}

static void kside_comp(struct ib_cq *cq, void *ctx)
{
	struct kside *k = ctx;

	atomic_inc(&k->events);
}

static int kside_init(struct kside *k, struct ib_device *dev, int gid)
{
	struct ib_cq_init_attr ca = { .cqe = 64 };
	struct ib_qp_init_attr ia = {};

	k->dev = dev;
	k->gid_index = gid;
	if (rdma_query_gid(dev, 1, gid, &k->gid))
		return -EINVAL;
	k->buf = kzalloc(4 * PAGE_SIZE, GFP_KERNEL);
	if (!k->buf)
		return -ENOMEM;
	k->pd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(k->pd))
		return PTR_ERR(k->pd);
	k->cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(k->cq))
		return PTR_ERR(k->cq);
	/* the legacy API: ib_alloc_cq's handlers do not take arming */
	k->rcq = ib_create_cq(dev, kside_comp, NULL, k, &ca);
	if (IS_ERR(k->rcq))
		return PTR_ERR(k->rcq);
	ia.send_cq = k->cq;
	ia.recv_cq = k->rcq;
	ia.qp_type = IB_QPT_RC;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	k->qp = ib_create_qp(k->pd, &ia);
	return PTR_ERR_OR_ZERO(k->qp);
}

static int kside_connect(struct kside *k, struct kside *peer)
{
	struct ib_qp_attr a = {};
	int rv;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	rv = ib_modify_qp(k->qp, &a, IB_QP_STATE | IB_QP_PORT |
			  IB_QP_PKEY_INDEX | IB_QP_ACCESS_FLAGS);
	if (rv)
		return rv;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &peer->gid, 0, k->gid_index, 64, 0);
	rv = ib_modify_qp(k->qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			  IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			  IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (rv)
		return rv;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100;
	a.max_rd_atomic = 4;
	return ib_modify_qp(k->qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static void kside_free(struct kside *k)
{
	if (!IS_ERR_OR_NULL(k->qp))
		ib_destroy_qp(k->qp);
	if (!IS_ERR_OR_NULL(k->cq))
		ib_free_cq(k->cq);
	if (!IS_ERR_OR_NULL(k->rcq))
		ib_destroy_cq(k->rcq);
	if (!IS_ERR_OR_NULL(k->pd))
		ib_dealloc_pd(k->pd);
	kfree(k->buf);
}

/* REG_MR on B's QP: @mr covers B's buffer with a fresh key. */
static bool kreg(struct kside *b, struct ib_mr *mr, int access)
{
	const struct ib_send_wr *bad;
	struct ib_reg_wr reg = {};

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = access;
	return !ib_post_send(b->qp, &reg.wr, &bad) &&
	       kwc(b->cq, IB_WC_SUCCESS, IB_WC_REG_MR);
}

/* A posts an RDMA WRITE of @len bytes (pattern @seed) to @va/@rkey on B. */
static void kwrite(struct kside *a, u64 va, u32 rkey, u32 len, u8 seed,
		   int flags)
{
	struct ib_rdma_wr w = {};
	const struct ib_send_wr *bad;
	struct ib_sge sge;

	memset(a->buf, seed, len);
	sge.addr = (u64)(uintptr_t)a->buf;
	sge.length = len;
	sge.lkey = a->pd->local_dma_lkey;
	w.wr.opcode = IB_WR_RDMA_WRITE;
	w.wr.send_flags = IB_SEND_SIGNALED | flags;
	w.wr.sg_list = &sge;
	w.wr.num_sge = 1;
	w.remote_addr = va;
	w.rkey = rkey;
	if (ib_post_send(a->qp, &w.wr, &bad))
		pr_info("vrdma_kulp: post WRITE failed\n");
}

static bool kfilled(const u8 *p, u32 len, u8 seed)
{
	return !memchr_inv(p, seed, len);
}

/*
 * A SENDs to B, with @flags, after B armed its receive CQ with @arm: the
 * receive completes; true when B's completion handler ran for it.
 */
static bool ksend_event(struct kside *a, struct kside *b,
			enum ib_cq_notify_flags arm, int flags)
{
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_send_wr s = {};
	struct ib_recv_wr r = {};
	int before = atomic_read(&b->events);
	unsigned long end;
	struct ib_sge sge;
	struct ib_wc wc;

	sge.addr = (u64)(uintptr_t)(b->buf + 3 * PAGE_SIZE);
	sge.length = 256;
	sge.lkey = b->pd->local_dma_lkey;
	r.sg_list = &sge;
	r.num_sge = 1;
	if (ib_post_recv(b->qp, &r, &rbad) || ib_req_notify_cq(b->rcq, arm))
		return false;
	s.opcode = IB_WR_SEND;
	s.send_flags = IB_SEND_SIGNALED | flags;
	if (ib_post_send(a->qp, &s, &bad) ||
	    !kwc(a->cq, IB_WC_SUCCESS, IB_WC_SEND))
		pr_info("vrdma_kulp: SEND failed\n");
	if (!kpoll(b->rcq, &wc) || wc.status != IB_WC_SUCCESS)
		pr_info("vrdma_kulp: no receive completion\n");
	/* the handler runs right after the CQE is published */
	end = jiffies + (flags & IB_SEND_SOLICITED || arm == IB_CQ_NEXT_COMP ?
			 10 * HZ : HZ / 2);
	while (atomic_read(&b->events) == before && time_before(jiffies, end))
		usleep_range(1000, 2000);
	return atomic_read(&b->events) != before;
}

/* Solicited events for a kernel consumer (IBA 11.4.2.2). */
static void ksolicited(struct kside *a, struct kside *b)
{
	CHECK(!ksend_event(a, b, IB_CQ_SOLICITED, 0),
	      "pair: SEND, CQ armed IB_CQ_SOLICITED: no comp_handler call");
	CHECK(ksend_event(a, b, IB_CQ_SOLICITED, IB_SEND_SOLICITED),
	      "pair: SOLICITED SEND, CQ armed IB_CQ_SOLICITED: comp_handler called");
	CHECK(ksend_event(a, b, IB_CQ_NEXT_COMP, 0),
	      "pair: SEND, CQ armed IB_CQ_NEXT_COMP: comp_handler called");
}

static void vrdma_kulp_pair(struct ib_device *da, struct ib_device *db)
{
	struct kside a = {}, b = {};
	const int acc = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	const struct ib_send_wr *bad;
	const struct ib_recv_wr *rbad;
	struct ib_send_wr s = {};
	struct ib_recv_wr r = {};
	struct scatterlist sg;
	struct ib_sge sge;
	struct ib_mr *mr;
	struct ib_wc wc;
	u32 old;
	bool ok;

	CHECK(!kside_init(&a, da, gid_a) && !kside_init(&b, db, gid_b),
	      "pair: PD, CQ, RC QP on both devices");
	if (IS_ERR_OR_NULL(a.qp) || IS_ERR_OR_NULL(b.qp))
		goto out;
	CHECK(!kside_connect(&a, &b) && !kside_connect(&b, &a),
	      "pair: QPs connected (RTS)");

	mr = ib_alloc_mr(b.pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK(!IS_ERR(mr), "pair: ib_alloc_mr on B");
	if (IS_ERR(mr))
		goto out;
	sg_init_one(&sg, b.buf, 2 * PAGE_SIZE);
	CHECK(ib_dma_map_sg(db, &sg, 1, DMA_BIDIRECTIONAL) == 1 &&
	      ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) == 1,
	      "pair: ib_map_mr_sg of B's buffer");

	CHECK(kreg(&b, mr, acc), "pair: REG_MR completes with IB_WC_REG_MR");
	kwrite(&a, mr->iova + 100, mr->rkey, 5000, 0x22, 0);
	CHECK(kwc(a.cq, IB_WC_SUCCESS, IB_WC_RDMA_WRITE) &&
	      kfilled(b.buf + 100, 5000, 0x22),
	      "pair: WRITE of 5000 bytes through the FRMR (2 pages) lands");

	/* SEND_WITH_INV: the receive reports the invalidated rkey */
	sge.addr = (u64)(uintptr_t)(b.buf + 3 * PAGE_SIZE);
	sge.length = 256;
	sge.lkey = b.pd->local_dma_lkey;
	r.sg_list = &sge;
	r.num_sge = 1;
	r.wr_id = 7;
	CHECK(!ib_post_recv(b.qp, &r, &rbad), "pair: post_recv on B");
	s.opcode = IB_WR_SEND_WITH_INV;
	s.send_flags = IB_SEND_SIGNALED;
	s.ex.invalidate_rkey = mr->rkey;
	CHECK(!ib_post_send(a.qp, &s, &bad) &&
	      kwc(a.cq, IB_WC_SUCCESS, IB_WC_SEND),
	      "pair: SEND_WITH_INV completes with IB_WC_SEND");
	ok = kpoll(b.rcq, &wc);
	CHECK(ok && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RECV &&
	      (wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
	      wc.ex.invalidate_rkey == mr->rkey,
	      "pair: receive has IB_WC_WITH_INVALIDATE and the rkey");

	/* registered again; then LOCAL_INV on B, and the old key is dead */
	CHECK(kreg(&b, mr, acc), "pair: REG_MR again after the invalidation");
	kwrite(&a, mr->iova, mr->rkey, 64, 0x33, 0);
	CHECK(kwc(a.cq, IB_WC_SUCCESS, IB_WC_RDMA_WRITE) &&
	      kfilled(b.buf, 64, 0x33), "pair: WRITE with the new key lands");
	memset(&s, 0, sizeof(s));
	s.opcode = IB_WR_LOCAL_INV;
	s.send_flags = IB_SEND_SIGNALED;
	s.ex.invalidate_rkey = mr->rkey;
	CHECK(!ib_post_send(b.qp, &s, &bad) &&
	      kwc(b.cq, IB_WC_SUCCESS, IB_WC_LOCAL_INV),
	      "pair: LOCAL_INV completes with IB_WC_LOCAL_INV");

	/* a READ, then a fenced WRITE: both complete, in order */
	{
		struct ib_rdma_wr rd = {};

		memset(b.buf + 2 * PAGE_SIZE, 0x44, 512);
		sge.addr = (u64)(uintptr_t)(a.buf + PAGE_SIZE);
		sge.length = 512;
		sge.lkey = a.pd->local_dma_lkey;
		rd.wr.opcode = IB_WR_RDMA_READ;
		rd.wr.send_flags = IB_SEND_SIGNALED;
		rd.wr.sg_list = &sge;
		rd.wr.num_sge = 1;
		rd.wr.wr_id = 1;
		rd.remote_addr = (u64)(uintptr_t)(b.buf + 2 * PAGE_SIZE);
		rd.rkey = b.pd->unsafe_global_rkey;
		CHECK(!ib_post_send(a.qp, &rd.wr, &bad), "pair: post READ");
		kwrite(&a, (u64)(uintptr_t)(b.buf + 2 * PAGE_SIZE + 1024),
		       b.pd->unsafe_global_rkey, 64, 0x55, IB_SEND_FENCE);
		ok = kpoll(a.cq, &wc) && wc.status == IB_WC_SUCCESS &&
		     wc.opcode == IB_WC_RDMA_READ;
		CHECK(ok && kfilled(a.buf + PAGE_SIZE, 512, 0x44),
		      "pair: READ completes first with its data");
		CHECK(kwc(a.cq, IB_WC_SUCCESS, IB_WC_RDMA_WRITE) &&
		      kfilled(b.buf + 2 * PAGE_SIZE + 1024, 64, 0x55),
		      "pair: the fenced WRITE after it completes");
	}

	ksolicited(&a, &b);

	/* the invalidated key: REM_ACCESS_ERR (A's QP fails; last check) */
	old = mr->rkey;
	kwrite(&a, mr->iova, old, 64, 0x66, 0);
	CHECK(kwc(a.cq, IB_WC_REM_ACCESS_ERR, 0) && !kfilled(b.buf, 64, 0x66),
	      "pair: WRITE with the LOCAL_INV'd key: REM_ACCESS_ERR, no data");

	ib_dma_unmap_sg(db, &sg, 1, DMA_BIDIRECTIONAL);
	ib_dereg_mr(mr);
out:
	kside_free(&a);
	kside_free(&b);
}

static int vrdma_kulp_add(struct ib_device *dev)
{
	if (strncmp(dev_name(&dev->dev), "vrdma", 5))
		return -EOPNOTSUPP;
	if (pair_a && pair_b) {
		/* the pair runs from module init, once both are known */
		if (!strcmp(dev_name(&dev->dev), pair_a))
			pdev_a = dev;
		else if (!strcmp(dev_name(&dev->dev), pair_b))
			pdev_b = dev;
		return 0;
	}
	vrdma_kulp_run(dev);
	pr_info("vrdma_kulp: %s %s (%d failures)\n", dev_name(&dev->dev),
		failures ? "FAILED" : "PASSED", failures);
	return 0;
}

static void vrdma_kulp_remove(struct ib_device *dev, void *data)
{
	if (dev == pdev_a)
		pdev_a = NULL;
	if (dev == pdev_b)
		pdev_b = NULL;
}

static struct ib_client vrdma_kulp_client = {
	.name = "vrdma_kulp_test",
	.add = vrdma_kulp_add,
	.remove = vrdma_kulp_remove,
};

static int __init vrdma_kulp_init(void)
{
	int rv = ib_register_client(&vrdma_kulp_client);

	if (rv || !pair_a || !pair_b)
		return rv;
	if (pdev_a && pdev_b && gid_a >= 0 && gid_b >= 0)
		vrdma_kulp_pair(pdev_a, pdev_b);
	else
		CHECK(false, "pair: both devices and GID indexes given");
	pr_info("vrdma_kulp: pair %s %s %s (%d failures)\n", pair_a, pair_b,
		failures ? "FAILED" : "PASSED", failures);
	return 0;
}

static void __exit vrdma_kulp_exit(void)
{
	ib_unregister_client(&vrdma_kulp_client);
}

module_init(vrdma_kulp_init);
module_exit(vrdma_kulp_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("vrdma selftest: kernel verbs consumer");
