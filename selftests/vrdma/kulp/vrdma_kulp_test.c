// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_kulp_test - a kernel ULP exercising a vrdma device through the
 * in-kernel verbs API, the way NVMe-oF, iSER or RDS would: PD, CQ (with
 * the ib_cq polling context), RC QP, DMA lkey, fast-registration MR with
 * ib_map_mr_sg, posting, and ib_drain_qp (which relies on the flush of
 * the error state). Results go to the kernel log as "vrdma_kulp: ok|FAIL".
 * Test-only module, loaded by selftests/vrdma/verbs_kernel.sh.
 */
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

static int failures;
static int flushed;

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

static int vrdma_kulp_add(struct ib_device *dev)
{
	if (strncmp(dev_name(&dev->dev), "vrdma", 5))
		return -EOPNOTSUPP;
	vrdma_kulp_run(dev);
	pr_info("vrdma_kulp: %s %s (%d failures)\n", dev_name(&dev->dev),
		failures ? "FAILED" : "PASSED", failures);
	return 0;
}

static void vrdma_kulp_remove(struct ib_device *dev, void *data)
{
}

static struct ib_client vrdma_kulp_client = {
	.name = "vrdma_kulp_test",
	.add = vrdma_kulp_add,
	.remove = vrdma_kulp_remove,
};

static int __init vrdma_kulp_init(void)
{
	return ib_register_client(&vrdma_kulp_client);
}

static void __exit vrdma_kulp_exit(void)
{
	ib_unregister_client(&vrdma_kulp_client);
}

module_init(vrdma_kulp_init);
module_exit(vrdma_kulp_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("vrdma selftest: kernel verbs consumer");
