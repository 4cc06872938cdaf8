// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_mem.c - memory regions: DMA MRs, user MRs pinned with ib_umem,
 * and fast-registration MRs for kernel consumers (alloc_mr + map_mr_sg).
 *
 * Keys: the upper 24 bits index the device's MR xarray (allocated
 * cyclically from a random start), the low 8 bits are random and change
 * with ib_update_fast_reg_key(); a key is only valid when both match, so
 * keys are not guessable from one another.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"

#define VRDMA_MR_IDX_MAX	0xffffff

#define VRDMA_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static int vrdma_check_access(int access)
{
	access &= ~IB_ACCESS_OPTIONAL;	/* hints we may ignore */
	if (access & ~VRDMA_MR_ACCESS)
		return -EOPNOTSUPP;
	/* IBA 10.6.3.1: remote write/atomic need local write */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static struct vrdma_mr *vrdma_mr_new(struct ib_pd *ibpd,
				     enum vrdma_mr_type type, int access)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibpd->device);
	struct vrdma_mr *mr;
	u32 idx, key;
	int rv;

	rv = vrdma_take(&vd->n_mr, vrdma_limits.max_mr);
	if (rv)
		return ERR_PTR(rv);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		rv = -ENOMEM;
		goto err_count;
	}
	rv = xa_alloc_cyclic_irq(&vd->mr_xa, &idx, mr,
				 XA_LIMIT(1, VRDMA_MR_IDX_MAX), &vd->next_mr,
				 GFP_KERNEL);
	if (rv < 0)
		goto err_free;
	key = (idx << 8) | (get_random_u32() & 0xff);
	mr->type = type;
	mr->access = access;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&vd->n_mr);
	return ERR_PTR(rv);
}

static void vrdma_mr_del(struct vrdma_mr *mr, struct ib_device *ibdev)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibdev);

	/* dereg_mr may have erased it already; never erase a successor */
	xa_cmpxchg_irq(&vd->mr_xa, mr->ibmr.lkey >> 8, mr, NULL, 0);
	atomic_dec(&vd->n_mr);
	kfree(mr->pages);
	kfree(mr);
}

struct ib_mr *vrdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct vrdma_mr *mr;
	int rv;

	rv = vrdma_check_access(access);
	if (rv)
		return ERR_PTR(rv);
	mr = vrdma_mr_new(ibpd, VRDMA_MR_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->ibmr.length = U64_MAX;
	return &mr->ibmr;
}

struct ib_mr *vrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				u64 iova, int access, struct ib_udata *udata)
{
	struct ib_umem *umem;
	struct vrdma_mr *mr;
	u64 end;
	int rv;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);
	rv = vrdma_check_access(access);
	if (rv)
		return ERR_PTR(rv);
	if (!len || len > VRDMA_MAX_MR_SIZE ||
	    check_add_overflow(start, len, &end) ||
	    check_add_overflow(iova, len, &end))
		return ERR_PTR(-EINVAL);

	umem = ib_umem_get(ibpd->device, start, len, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);

	mr = vrdma_mr_new(ibpd, VRDMA_MR_USER, access);
	if (IS_ERR(mr)) {
		ib_umem_release(umem);
		return ERR_CAST(mr);
	}
	mr->umem = umem;
	mr->ibmr.iova = iova;
	mr->ibmr.length = len;
	mr->ibmr.page_size = PAGE_SIZE;
	return &mr->ibmr;
}

struct ib_mr *vrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct vrdma_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > VRDMA_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);

	mr = vrdma_mr_new(ibpd, VRDMA_MR_FAST, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->pages = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	if (!mr->pages) {
		vrdma_mr_del(mr, ibpd->device);
		return ERR_PTR(-ENOMEM);
	}
	mr->max_pages = max_num_sg;
	/* free until a REG_MR work request registers it */
	mr->fast_key = mr->ibmr.lkey;
	return &mr->ibmr;
}

static int vrdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrdma_mr *mr = to_vmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

/*
 * ib_sg_to_pages() fills iova, length and page list; a REG_MR work request
 * activates the MR (vrdma_dp.c), LOCAL_INV or SEND_WITH_INV frees it.
 */
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		    unsigned int *sg_offset)
{
	struct vrdma_mr *mr = to_vmr(ibmr);

	if (mr->type != VRDMA_MR_FAST)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, nents, sg_offset, vrdma_set_page);
}

int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibmr->device);

	/* the data path looks MRs up under RCU: let it finish first */
	xa_erase_irq(&vd->mr_xa, mr->ibmr.lkey >> 8);
	synchronize_rcu();
	ib_umem_release(mr->umem);
	vrdma_mr_del(mr, ibmr->device);
	return 0;
}
