// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_verbs.c - verbs entry points and the ib_device_ops table.
 */
#include <linux/netdevice.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "rdma/vrdma-abi.h"

static int vrdma_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vrdma_dev(ibdev);

	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = VRDMA_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = VRDMA_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = VRDMA_VENDOR_ID;
	attr->vendor_part_id = VRDMA_VENDOR_PART_ID;
	attr->hw_ver = VRDMA_HW_REV;
	attr->max_qp = VRDMA_MAX_QP;
	attr->max_qp_wr = VRDMA_MAX_QP_WR;
	attr->max_send_sge = VRDMA_MAX_SGE;
	attr->max_recv_sge = VRDMA_MAX_SGE;
	attr->max_sge_rd = VRDMA_MAX_SGE;
	attr->max_cq = VRDMA_MAX_CQ;
	attr->max_cqe = VRDMA_MAX_CQE;
	attr->max_mr = VRDMA_MAX_MR;
	attr->max_pd = VRDMA_MAX_PD;
	attr->max_qp_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = VRDMA_MAX_RD_ATOMIC * VRDMA_MAX_QP;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->max_srq = VRDMA_MAX_SRQ;
	attr->max_srq_wr = VRDMA_MAX_QP_WR;
	attr->max_srq_sge = VRDMA_MAX_SGE;
	attr->max_ah = VRDMA_MAX_AH;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->max_fast_reg_page_list_len = VRDMA_MAX_FRMR_PAGES;
	attr->max_pi_fast_reg_page_list_len = 0;
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS;
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

	resp.abi_version = VRDMA_UVERBS_ABI_VERSION;
	resp.max_qp = VRDMA_MAX_QP;
	resp.max_cq = VRDMA_MAX_CQ;
	resp.max_qp_wr = VRDMA_MAX_QP_WR;
	resp.max_cqe = VRDMA_MAX_CQE;
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

static int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

static int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

int vrdma_verbs_dev_init(struct vrdma_dev *vdev)
{
	return 0;
}

void vrdma_verbs_dev_cleanup(struct vrdma_dev *vdev)
{
}

const struct ib_device_ops vrdma_dev_ops = {
	.alloc_pd = vrdma_alloc_pd,
	.alloc_ucontext = vrdma_alloc_ucontext,
	.dealloc_pd = vrdma_dealloc_pd,
	.dealloc_ucontext = vrdma_dealloc_ucontext,
	.get_link_layer = vrdma_get_link_layer,
	.get_port_immutable = vrdma_get_port_immutable,
	.query_device = vrdma_query_device,
	.query_pkey = vrdma_query_pkey,
	.query_port = vrdma_query_port,

	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
};
