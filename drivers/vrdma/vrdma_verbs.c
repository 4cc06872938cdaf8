// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_verbs.c - verbs entry points and the ib_device_ops table: device
 * and port queries, ucontext and mmap, PD, AH. CQ, QP, SRQ and MR live in
 * vrdma_cq.c, vrdma_qp.c, vrdma_srq.c and vrdma_mem.c.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vrdma_rc.h"
#include "rdma/vrdma-abi.h"
#include "vrdma_abi_check.h"

struct vrdma_limits vrdma_limits = {
	.max_qp = VRDMA_MAX_QP,
	.max_cq = VRDMA_MAX_CQ,
	.max_mr = VRDMA_MAX_MR,
	.max_pd = VRDMA_MAX_PD,
	.max_srq = VRDMA_MAX_SRQ,
	.max_ah = VRDMA_MAX_AH,
	.max_qp_wr = VRDMA_MAX_QP_WR,
	.max_cqe = VRDMA_MAX_CQE,
};

/* Lower limits (read at object creation) let tests exhaust them cheaply. */
module_param_named(max_qp, vrdma_limits.max_qp, uint, 0444);
MODULE_PARM_DESC(max_qp, "QPs per device (default 16384)");
module_param_named(max_cq, vrdma_limits.max_cq, uint, 0444);
MODULE_PARM_DESC(max_cq, "CQs per device (default 16384)");
module_param_named(max_mr, vrdma_limits.max_mr, uint, 0444);
MODULE_PARM_DESC(max_mr, "MRs per device (default 65536)");
module_param_named(max_pd, vrdma_limits.max_pd, uint, 0444);
MODULE_PARM_DESC(max_pd, "PDs per device (default 16384)");
module_param_named(max_srq, vrdma_limits.max_srq, uint, 0444);
MODULE_PARM_DESC(max_srq, "SRQs per device (default 4096)");
module_param_named(max_ah, vrdma_limits.max_ah, uint, 0444);
MODULE_PARM_DESC(max_ah, "AHs per device (default 65536)");
module_param_named(max_qp_wr, vrdma_limits.max_qp_wr, uint, 0444);
MODULE_PARM_DESC(max_qp_wr, "WRs per SQ, RQ or SRQ (default 16384)");
module_param_named(max_cqe, vrdma_limits.max_cqe, uint, 0444);
MODULE_PARM_DESC(max_cqe, "CQEs per CQ (default 65536)");

static void vrdma_clamp_limits(void)
{
	struct vrdma_limits *l = &vrdma_limits;

	l->max_qp = clamp_t(u32, l->max_qp, 1, VRDMA_MAX_QP);
	l->max_cq = clamp_t(u32, l->max_cq, 1, VRDMA_MAX_CQ);
	l->max_mr = clamp_t(u32, l->max_mr, 1, VRDMA_MAX_MR);
	l->max_pd = clamp_t(u32, l->max_pd, 1, VRDMA_MAX_PD);
	l->max_srq = clamp_t(u32, l->max_srq, 1, VRDMA_MAX_SRQ);
	l->max_ah = clamp_t(u32, l->max_ah, 1, VRDMA_MAX_AH);
	l->max_qp_wr = clamp_t(u32, l->max_qp_wr, 1, VRDMA_MAX_QP_WR);
	l->max_cqe = clamp_t(u32, l->max_cqe, 1, VRDMA_MAX_CQE);
}

static int vrdma_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);

	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = VRDMA_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = VRDMA_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = VRDMA_VENDOR_ID;
	attr->vendor_part_id = VRDMA_VENDOR_PART_ID;
	attr->hw_ver = VRDMA_HW_REV;
	attr->max_qp = vrdma_limits.max_qp;
	attr->max_qp_wr = vrdma_limits.max_qp_wr;
	attr->max_send_sge = VRDMA_MAX_SGE;
	attr->max_recv_sge = VRDMA_MAX_SGE;
	attr->max_sge_rd = VRDMA_MAX_SGE;
	attr->max_cq = vrdma_limits.max_cq;
	attr->max_cqe = vrdma_limits.max_cqe;
	attr->max_mr = vrdma_limits.max_mr;
	attr->max_pd = vrdma_limits.max_pd;
	attr->max_qp_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = VRDMA_MAX_RD_ATOMIC * vrdma_limits.max_qp;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_srq = vrdma_limits.max_srq;
	attr->max_srq_wr = vrdma_limits.max_qp_wr;
	attr->max_srq_sge = VRDMA_MAX_SGE;
	attr->max_ah = vrdma_limits.max_ah;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->max_fast_reg_page_list_len = VRDMA_MAX_FRMR_PAGES;
	attr->max_pi_fast_reg_page_list_len = 0;
	/* Lets "rdma link del" remove us (nldev_dellink). */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_mw = vrdma_limits.max_mr;	/* MRs and MWs share the keys */
	(void)vdev;
	return 0;
}

static int vrdma_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);
	struct net_device *netdev = vdev->netdev;
	bool up = netif_running(netdev) && netif_carrier_ok(netdev);
	int rv;

	/* The core zeroed *attr. */
	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = vrdma_mtu_from_netdev(READ_ONCE(vdev->netdev_mtu));
	attr->gid_tbl_len = VRDMA_GID_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP |
			       IB_PORT_VENDOR_CLASS_SUP;
	attr->max_msg_sz = VRDMA_MAX_MSG_SIZE;
	attr->bad_pkey_cntr = 0;
	attr->qkey_viol_cntr = 0;
	attr->pkey_tbl_len = 1;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->lmc = 0;
	attr->max_vl_num = 1;
	attr->ip_gids = true;

	rv = ib_get_eth_speed(ibdev, port, &attr->active_speed,
			      &attr->active_width);
	return rv;
}

static int vrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr = {};
	int rv;

	rv = ib_query_port(ibdev, port, &attr);
	if (rv)
		return rv;

	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int vrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int vrdma_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct vrdma_alloc_ucontext_resp resp = {};

	/* the provider sends no driver data: anything there must be zero */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	resp.comp_mask = VRDMA_UCTX_RESP_SQ_TAKEN;
	resp.abi_version = VRDMA_UVERBS_ABI_VERSION;
	resp.max_qp = vrdma_limits.max_qp;
	resp.max_cq = vrdma_limits.max_cq;
	resp.max_qp_wr = vrdma_limits.max_qp_wr;
	resp.max_cqe = vrdma_limits.max_cqe;
	resp.max_sge = VRDMA_MAX_SGE;
	resp.max_inline = VRDMA_MAX_INLINE;
	resp.sqe_size = sizeof(struct vrdma_sqe);
	resp.rqe_size = sizeof(struct vrdma_rqe);
	resp.cqe_size = sizeof(struct vrdma_cqe);

	if (udata->outlen &&
	    ib_copy_to_udata(udata, &resp,
			     min_t(size_t, sizeof(resp), udata->outlen)))
		return -EFAULT;
	return 0;
}

static void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The device may go away (rdma link del, netdev removal, rmmod) while a
 * process holds a context: uverbs then destroys every object itself and
 * zaps the ring mappings (rdma_user_mmap_entry), so nothing is left here.
 */
static void vrdma_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibpd->device);

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	return vrdma_take(&vd->n_pd, vrdma_limits.max_pd);
}

static int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&vrdma_vdev(ibpd->device)->n_pd);
	return 0;
}

/*
 * Address handles: RoCE v2 style, a GRH is mandatory (the peer is named
 * by its GID). The core resolved the destination MAC and took a
 * reference on the source GID entry for the AH's lifetime.
 */
static int vrdma_create_ah(struct ib_ah *ibah,
			   struct rdma_ah_init_attr *init_attr,
			   struct ib_udata *udata)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibah->device);
	struct rdma_ah_attr *attr = init_attr->ah_attr;
	gfp_t gfp = (init_attr->flags & RDMA_CREATE_AH_SLEEPABLE) ?
		    GFP_KERNEL : GFP_ATOMIC;
	struct vrdma_create_ah_resp resp = {};
	struct vrdma_ah *ah = to_vah(ibah);
	int rv;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (udata && udata->outlen < offsetofend(typeof(resp), ah_num))
		return -EINVAL;
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(attr) != 1 ||
	    rdma_ah_read_grh(attr)->sgid_index >= VRDMA_GID_TBL_LEN)
		return -EINVAL;

	rv = vrdma_take(&vd->n_ah, vrdma_limits.max_ah);
	if (rv)
		return rv;
	rv = xa_alloc_cyclic_irq(&vd->ah_xa, &ah->ah_num, ah,
				 XA_LIMIT(1, U32_MAX), &vd->next_ah, gfp);
	if (rv < 0)
		goto err_count;
	ah->attr = *attr;

	if (udata) {
		resp.ah_num = ah->ah_num;
		rv = vrdma_udata_out(udata, &resp, sizeof(resp));
		if (rv)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_irq(&vd->ah_xa, ah->ah_num);
err_count:
	atomic_dec(&vd->n_ah);
	return rv;
}

static int vrdma_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct vrdma_ah *ah = to_vah(ibah);

	*attr = ah->attr;
	attr->grh.sgid_attr = NULL;
	return 0;
}

static int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibah->device);

	xa_erase_irq(&vd->ah_xa, to_vah(ibah)->ah_num);
	atomic_dec(&vd->n_ah);
	return 0;
}

int vrdma_verbs_dev_init(struct vrdma_dev *vdev)
{
	struct vrdma_verbs_dev *vd;

	vrdma_clamp_limits();
	/* the provider's send doorbell is a zero-WR post_send write() */
	vdev->ibdev.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);
	vd = kzalloc(sizeof(*vd), GFP_KERNEL);
	if (!vd)
		return -ENOMEM;
	xa_init_flags(&vd->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&vd->mr_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&vd->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	vrdma_graves_init(vd);
	/* start MR and QP numbering at random points */
	vd->next_mr = get_random_u32() & 0xffffff;
	vd->next_qpn = VRDMA_QPN_MIN + (get_random_u32() & 0xffff);
	vdev->priv = vd;
	return 0;
}

void vrdma_verbs_dev_cleanup(struct vrdma_dev *vdev)
{
	struct vrdma_verbs_dev *vd = vdev->priv;

	if (!vd)
		return;
	/* the core destroyed every object before dealloc_driver */
	WARN_ON(!xa_empty(&vd->qp_xa) || !xa_empty(&vd->mr_xa) ||
		!xa_empty(&vd->ah_xa));
	xa_destroy(&vd->qp_xa);
	xa_destroy(&vd->mr_xa);
	xa_destroy(&vd->ah_xa);
	vrdma_graves_cleanup(vd);
	kfree(vd);
	vdev->priv = NULL;
}

const struct ib_device_ops vrdma_dev_ops = {
	.alloc_mr = vrdma_alloc_mr,
	.alloc_pd = vrdma_alloc_pd,
	.alloc_ucontext = vrdma_alloc_ucontext,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_qp = vrdma_create_qp,
	.create_srq = vrdma_create_srq,
	.create_user_ah = vrdma_create_ah,
	.dealloc_pd = vrdma_dealloc_pd,
	.dealloc_ucontext = vrdma_dealloc_ucontext,
	.dereg_mr = vrdma_dereg_mr,
	.disassociate_ucontext = vrdma_disassociate_ucontext,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	.get_dma_mr = vrdma_get_dma_mr,
	.get_link_layer = vrdma_get_link_layer,
	.get_port_immutable = vrdma_get_port_immutable,
	.map_mr_sg = vrdma_map_mr_sg,
	.mmap = vrdma_mmap,
	.mmap_free = vrdma_mmap_free,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_ah = vrdma_query_ah,
	.query_device = vrdma_query_device,
	.query_pkey = vrdma_query_pkey,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.alloc_mw = vrdma_alloc_mw,
	.dealloc_mw = vrdma_dealloc_mw,
	.reg_user_mr = vrdma_reg_user_mr,
	.rereg_user_mr = vrdma_rereg_user_mr,
	.req_notify_cq = vrdma_req_notify_cq,
	.resize_cq = vrdma_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vrdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
};
