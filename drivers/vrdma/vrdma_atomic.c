// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_atomic.c - remote atomics (FETCH_ADD, CMP_SWAP) on the 8 aligned
 * bytes of an MR, checked by vrdma_mem.c's one data-path check.
 */
#include <linux/highmem.h>
#include <linux/math64.h>
#include <linux/spinlock.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vt_wire.h"

/*
 * Remote atomics execute under one lock for all devices (IB_ATOMIC_HCA,
 * as rxe): atomic against each other, not against the CPUs.
 */
static DEFINE_SPINLOCK(vrdma_atomic_lock);

/* The kernel address of the 8 aligned bytes at @iova of @mr, or NULL. */
static u64 *vrdma_mr_word(struct vrdma_mr *mr, u64 iova, void **map)
{
	struct page *page;
	u64 pos, psz, idx;

	*map = NULL;
	switch (mr->type) {
	case VRDMA_MR_DMA:
		return (u64 *)(uintptr_t)iova;
	case VRDMA_MR_USER:
		pos = iova - mr->ibmr.iova + ib_umem_offset(mr->umem);
		page = vrdma_umem_page(mr, pos);
		if (!page)
			return NULL;
		*map = kmap_local_page(page);
		return *map + (pos & ~PAGE_MASK);
	case VRDMA_MR_FAST:
		psz = mr->ibmr.page_size;
		pos = iova - mr->ibmr.iova + (mr->ibmr.iova & (psz - 1));
		idx = div64_u64(pos, psz);
		if (idx >= mr->npages)
			return NULL;
		return (u64 *)(uintptr_t)(mr->pages[idx] + pos - idx * psz);
	}
	return NULL;
}

/*
 * Execute a remote atomic on the 8 aligned bytes at @iova of the MR of
 * @rkey; @orig gets the value before. 0 or -EFAULT. BHs are off (the
 * caller holds its connection's lock).
 */
int vrdma_mr_atomic(struct vrdma_qp *qp, u32 rkey, u64 iova,
		    const struct vt_atomic *a, u64 *orig)
{
	struct vrdma_mr *mr;
	void *map = NULL;
	u64 *p = NULL;

	if (iova & 7)
		return -EFAULT;
	rcu_read_lock();
	mr = vrdma_mr_lookup(qp, rkey, IB_ACCESS_REMOTE_ATOMIC, iova, 8, NULL);
	if (mr)
		p = vrdma_mr_word(mr, iova, &map);
	/* an MR whose iova and address differ in alignment: refuse */
	if (p && !((uintptr_t)p & 7)) {
		spin_lock(&vrdma_atomic_lock);
		*orig = READ_ONCE(*p);
		if (a->op == VT_ATOMIC_CMP_SWP) {
			if (*orig == a->compare)
				WRITE_ONCE(*p, a->swap_add);
		} else {
			WRITE_ONCE(*p, *orig + a->swap_add);
		}
		spin_unlock(&vrdma_atomic_lock);
	} else {
		p = NULL;
	}
	if (map)
		kunmap_local(map);
	rcu_read_unlock();
	return p ? 0 : -EFAULT;
}
