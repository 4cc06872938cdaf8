// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_mem.c - memory regions: DMA MRs, user MRs pinned with ib_umem
 * (and re-registered), and fast-registration MRs for kernel consumers (alloc_mr + map_mr_sg);
 * and every data-path access to them: one check of PD, key, rights and
 * range (vrdma_mr_get, as siw_check_mem), copies to and from MRs and
 * scatter/gather lists, REG_MR and invalidation (remote atomics:
 * vrdma_atomic.c).
 *
 * Keys: the upper 24 bits index the device's MR xarray (allocated
 * cyclically from a random start), the low 8 bits are random and change
 * with ib_update_fast_reg_key(); a key is only valid when both match, so
 * keys are not guessable from one another.
 */
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"
#include "vrdma_verbs.h"
#include "vt_wire.h"

#define VRDMA_MR_IDX_MAX	0xffffff

#define VRDMA_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)

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

/*
 * The data path looks a key up per packet, twice for a WRITE (the
 * sender's pages, the receiver's rkey check, whose MR its copy then uses:
 * vrdma_mr_lookup()): xa_load() was 6% of a bulk transfer's kernel
 * instructions when each packet took three (profile --insn). Each CPU
 * remembers the last entries it found, per device and key index, valid
 * while vrdma_mr_gen is what it was when they were found: every erase
 * from an MR xarray (any device) bumps it, after the erase and before the
 * synchronize_rcu() that lets the entry be freed. A lookup reads the
 * generation first (acquire: it then sees the erase that bumped it), so
 * it never caches an erased entry under a current generation, and an
 * entry it takes from the cache was in the xarray when its RCU section
 * began, exactly what xa_load() would have given. Only entries are
 * cached; every check of vrdma_mr_get() still runs.
 */
#define VRDMA_MR_CACHE	8	/* a power of two */

struct vrdma_mr_cached {
	const struct vrdma_verbs_dev *vd;
	unsigned long gen;
	void *entry;
	u32 idx;
};

static DEFINE_PER_CPU(struct vrdma_mr_cached[VRDMA_MR_CACHE], vrdma_mr_cache);
static atomic_long_t vrdma_mr_gen;

/* After an entry left an MR xarray: no cache hands it out again. */
static void vrdma_mr_erased(void)
{
	smp_mb__before_atomic();	/* the erase, then the generation */
	atomic_long_inc(&vrdma_mr_gen);
}

static struct vrdma_mr_cached *vrdma_mr_slot(const struct vrdma_verbs_dev *vd,
					     u32 idx)
{
	return this_cpu_ptr(&vrdma_mr_cache[(idx ^ hash_ptr(vd, 3)) &
					    (VRDMA_MR_CACHE - 1)]);
}

/* xa_load(&vd->mr_xa, @idx), through this CPU's cache. Caller holds RCU. */
static void *vrdma_mr_entry(struct vrdma_verbs_dev *vd, u32 idx)
{
	unsigned long gen = atomic_long_read_acquire(&vrdma_mr_gen);
	struct vrdma_mr_cached *c;
	unsigned long flags;
	void *entry;

	/*
	 * irqs off: a lookup in an interrupt must not see half an update,
	 * nor a miss's fill be torn by one (xa_load() takes no lock)
	 */
	local_irq_save(flags);
	c = vrdma_mr_slot(vd, idx);
	if (c->vd == vd && c->idx == idx && c->gen == gen) {
		entry = c->entry;
	} else {
		entry = xa_load(&vd->mr_xa, idx);
		if (entry) {
			c->vd = vd;
			c->idx = idx;
			c->gen = gen;
			c->entry = entry;
		}
	}
	local_irq_restore(flags);
	return entry;
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
	if (xa_cmpxchg_irq(&vd->mr_xa, mr->ibmr.lkey >> 8, mr, NULL, 0) ==
	    mr) {
		/* a failed registration: a lookup may hold it (a bad key) */
		vrdma_mr_erased();
		synchronize_rcu();
	}
	atomic_dec(&vd->n_mr);
	kvfree(mr->upages);
	kfree(mr->pages);
	kfree(mr);
}

/*
 * Index the pages of a user MR, in the order of its sg table, so the data
 * path finds a packet's page in O(1): walking the table from its start
 * for every packet makes a large message quadratic. An index that cannot
 * be allocated (a huge MR) leaves the walk.
 */
static void vrdma_mr_index_pages(struct vrdma_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	size_t n = ib_umem_num_pages(umem);
	struct sg_page_iter piter;
	u32 i = 0;

	if (n > U32_MAX)
		return;
	mr->upages = kvmalloc_array(n, sizeof(*mr->upages),
				    GFP_KERNEL | __GFP_NOWARN);
	if (!mr->upages)
		return;
	for_each_sgtable_page(&umem->sgt_append.sgt, &piter, 0) {
		if (i == n)
			break;
		mr->upages[i++] = sg_page_iter_page(&piter);
	}
	mr->n_upages = i;
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
	vrdma_mr_index_pages(mr);
	return &mr->ibmr;
}

/*
 * ibv_rereg_mr. A new PD (the core swaps ibmr.pd) or new rights are set in
 * place, keeping the keys; a new translation, or a write right over pages
 * pinned read-only, needs a new pin: a new MR with new keys replaces this
 * one (the core then destroys it). Either way a remote access checks the
 * PD and rights of the moment (vrdma_mr_get).
 */
struct ib_mr *vrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 len, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	int rv;

	if (mr->type != VRDMA_MR_USER)
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	rv = vrdma_check_access(access);
	if (rv)
		return ERR_PTR(rv);
	if (flags & IB_MR_REREG_TRANS)
		return vrdma_reg_user_mr(pd, start, len, iova, access, udata);
	if ((access & IB_ACCESS_LOCAL_WRITE) && !mr->umem->writable)
		return vrdma_reg_user_mr(pd, mr->umem->address, ibmr->length,
					 ibmr->iova, access, udata);
	WRITE_ONCE(mr->access, access);
	return NULL;
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
 * activates the MR (vrdma_mr_fast_reg), LOCAL_INV or SEND_WITH_INV frees it.
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
	vrdma_mr_erased();
	synchronize_rcu();
	ib_umem_release(mr->umem);
	vrdma_mr_del(mr, ibmr->device);
	return 0;
}

/* ---- data-path access ----------------------------------------------- */

#define VRDMA_REMOTE_ACCESS (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			     IB_ACCESS_REMOTE_ATOMIC)

static bool vrdma_mr_covers(struct vrdma_mr *mr, u64 iova, u64 len)
{
	u64 off;

	if (mr->type == VRDMA_MR_DMA)
		return true;
	if (iova < mr->ibmr.iova)
		return false;
	off = iova - mr->ibmr.iova;
	return off <= mr->ibmr.length && len <= mr->ibmr.length - off;
}

/*
 * The one check of every data-path access: the MR of @key in @qp's PD,
 * by its rkey when @access asks for a remote right (else its lkey), that
 * grants @access (0: read locally) over [@iova, @iova + @len). NULL when
 * any of it fails. A fast-registration MR is usable between its REG_MR
 * and its invalidation, by the key of that REG_MR. Caller holds RCU.
 */
static struct vrdma_mr *vrdma_mw_get(struct vrdma_qp *qp,
				     struct vrdma_mw *mw, u32 key, int access,
				     u64 iova, u64 len);

static struct vrdma_mr *vrdma_mr_get(struct vrdma_qp *qp, u32 key,
				     int access, u64 iova, u64 len)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	void *entry = vrdma_mr_entry(vd, key >> 8);
	bool remote = access & VRDMA_REMOTE_ACCESS;
	struct vrdma_mr *mr = entry;

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "MR lookup without RCU");
	if (xa_pointer_tag(entry) == VRDMA_KEY_MW)
		/* a window grants remote access only (IBA 10.6.7) */
		return remote ? vrdma_mw_get(qp, xa_untag_pointer(entry), key,
					     access, iova, len) : NULL;
	if (!mr || mr->ibmr.pd != qp->ibqp.pd)
		return NULL;
	if (mr->type == VRDMA_MR_FAST) {
		/* pairs with vrdma_mr_fast_reg()'s release: key, access */
		if (!smp_load_acquire(&mr->fast_valid) ||
		    READ_ONCE(mr->fast_key) != key)
			return NULL;
	} else if ((remote ? mr->ibmr.rkey : mr->ibmr.lkey) != key) {
		return NULL;
	}
	if (access && !(READ_ONCE(mr->access) & access))
		return NULL;
	return vrdma_mr_covers(mr, iova, len) ? mr : NULL;
}

/*
 * Remote access through a bound window: its key, PD, QP (type 2B), rights
 * and range, then the MR it is bound to, which must still be the one of
 * the bind (same key) and cover the range. Caller holds RCU.
 */
static struct vrdma_mr *vrdma_mw_get(struct vrdma_qp *qp,
				     struct vrdma_mw *mw, u32 key, int access,
				     u64 iova, u64 len)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	unsigned long flags;
	struct vrdma_mr *mr;
	u32 mr_key = 0;
	bool ok;

	spin_lock_irqsave(&mw->lock, flags);
	ok = mw->bound && mw->rkey == key && mw->ibmw.pd == qp->ibqp.pd &&
	     (mw->ibmw.type == IB_MW_TYPE_1 || mw->qpn == qp->ibqp.qp_num) &&
	     (mw->access & access) && iova >= mw->addr &&
	     iova - mw->addr <= mw->len && len <= mw->len - (iova - mw->addr);
	if (ok)
		mr_key = mw->mr_key;
	spin_unlock_irqrestore(&mw->lock, flags);
	if (!ok)
		return NULL;
	mr = xa_load(&vd->mr_xa, mr_key >> 8);
	if (!mr || xa_pointer_tag(mr) || mr->type != VRDMA_MR_USER ||
	    mr->ibmr.lkey != mr_key || mr->ibmr.pd != qp->ibqp.pd)
		return NULL;
	return vrdma_mr_covers(mr, iova, len) ? mr : NULL;
}

/*
 * vrdma_mr_get() through @hint (may be NULL): the MR the same @key and
 * @access found earlier in this hold of the connection's lock needs only
 * its range checked again. A hold runs with preemption off, itself an RCU
 * read-side section, so the MR cannot be freed before it ends (a
 * deregistration waits in synchronize_rcu()). Only a user MR found by its
 * own key is kept: a fast-registration MR's key can be invalidated by a
 * WQE of the same run, and a window has a range and rights of its own.
 * Every other check ran when it was kept: a change of rights or PD racing
 * with the hold applies from the next one, as it would from the next
 * packet (no order is defined between the two).
 */
static struct vrdma_mr *vrdma_mr_get_hint(struct vrdma_qp *qp, u32 key,
					  int access, u64 iova, u64 len,
					  struct vrdma_mr_hint *hint)
{
	struct vrdma_mr *mr;

	if (hint && hint->mr && hint->key == key && hint->access == access)
		return vrdma_mr_covers(hint->mr, iova, len) ? hint->mr : NULL;
	mr = vrdma_mr_get(qp, key, access, iova, len);
	if (hint && mr && mr->type == VRDMA_MR_USER &&
	    ((access & VRDMA_REMOTE_ACCESS) ? mr->ibmr.rkey :
					       mr->ibmr.lkey) == key) {
		hint->mr = mr;
		hint->key = key;
		hint->access = access;
	}
	return mr;
}

/*
 * vrdma_mr_get() for a caller that goes on to copy into the MR within the
 * same RCU read-side section (vrdma_mr_write()): a deregistration frees
 * the MR and its pages only after synchronize_rcu(), so one lookup serves
 * the check and the copy of a packet; @hint (or NULL) as
 * vrdma_mr_get_hint().
 */
struct vrdma_mr *vrdma_mr_lookup(struct vrdma_qp *qp, u32 key, int access,
				 u64 iova, u64 len,
				 struct vrdma_mr_hint *hint)
{
	return vrdma_mr_get_hint(qp, key, access, iova, len, hint);
}

bool vrdma_mr_check(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		    u64 len)
{
	bool ok;

	rcu_read_lock();
	ok = vrdma_mr_get(qp, key, access, iova, len);
	rcu_read_unlock();
	return ok;
}

/* Copy @n bytes between @mem and @b, advancing @b. */
static void vrdma_copy(void *mem, struct vrdma_buf *b, u32 n, bool to_mr)
{
	if (b->skb) {
		/* an skb is only ever a source, of a receive */
		if (to_mr)
			vrdma_rx_copy(b->skb, b->off, mem, n);
		b->off += n;
		return;
	}
	if (to_mr)
		memcpy(mem, b->p, n);
	else
		memcpy(b->p, mem, n);
	b->p += n;
}

/* The page of byte @pos of a user MR's umem (counted from its first page). */
struct page *vrdma_umem_page(struct vrdma_mr *mr, u64 pos)
{
	struct sg_page_iter piter;
	u64 idx = pos >> PAGE_SHIFT;

	if (mr->upages)
		return idx < mr->n_upages ? mr->upages[idx] : NULL;
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &piter, idx)
		return sg_page_iter_page(&piter);
	return NULL;
}

static int vrdma_umem_copy(struct vrdma_mr *mr, u64 iova, struct vrdma_buf *b,
			   u32 len, bool to_mr)
{
	u64 pos = iova - mr->ibmr.iova + ib_umem_offset(mr->umem);

	while (len) {
		u32 poff = pos & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - poff);
		struct page *page = vrdma_umem_page(mr, pos);
		void *va;

		if (!page)
			return -EFAULT;
		va = kmap_local_page(page);
		vrdma_copy(va + poff, b, n, to_mr);
		kunmap_local(va);
		len -= n;
		pos += n;
	}
	return 0;
}

static int vrdma_fast_copy(struct vrdma_mr *mr, u64 iova, struct vrdma_buf *b,
			   u32 len, bool to_mr)
{
	u64 psz = mr->ibmr.page_size;
	u64 pos = iova - mr->ibmr.iova + (mr->ibmr.iova & (psz - 1));

	while (len) {
		u64 idx = div64_u64(pos, psz);
		u32 poff = pos - idx * psz;
		u32 n = min_t(u64, len, psz - poff);

		if (idx >= mr->npages)
			return -EFAULT;
		vrdma_copy((void *)(uintptr_t)(mr->pages[idx] + poff), b, n,
			   to_mr);
		len -= n;
		pos += n;
	}
	return 0;
}

/* Copy @len bytes between @b and a checked @mr at @iova. */
static int vrdma_mr_copy(struct vrdma_mr *mr, u64 iova, struct vrdma_buf *b,
			 u32 len, bool to_mr)
{
	if (!len)
		return 0;
	switch (mr->type) {
	case VRDMA_MR_DMA:
		vrdma_copy((void *)(uintptr_t)iova, b, len, to_mr);
		return 0;
	case VRDMA_MR_USER:
		return vrdma_umem_copy(mr, iova, b, len, to_mr);
	case VRDMA_MR_FAST:
		return vrdma_fast_copy(mr, iova, b, len, to_mr);
	}
	return -EFAULT;
}

/*
 * Copy @len bytes from @b into @mr at @iova, a range vrdma_mr_lookup()
 * checked in the caller's still open RCU read-side section. 0 or -EFAULT.
 */
int vrdma_mr_write(struct vrdma_mr *mr, u64 iova, struct vrdma_buf *b,
		   u32 len)
{
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "MR write without RCU");
	return vrdma_mr_copy(mr, iova, b, len, true);
}

/*
 * Copy @len bytes between @b and the MR of @key at @iova, checked for
 * @access (IB_ACCESS_LOCAL_WRITE or a remote right when @to_mr, 0 or
 * IB_ACCESS_REMOTE_READ otherwise). 0 or -EFAULT.
 */
int vrdma_mr_rw(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		struct vrdma_buf *b, u32 len, bool to_mr)
{
	struct vrdma_mr *mr;
	int rv = -EFAULT;

	rcu_read_lock();
	mr = vrdma_mr_get(qp, key, access, iova, len);
	if (mr)
		rv = vrdma_mr_copy(mr, iova, b, len, to_mr);
	rcu_read_unlock();
	return rv;
}

/* Add [@off, @off + @n) of @page to @fr, merging with the previous one. */
static bool vrdma_frags_add(struct vrdma_frags *fr, struct page *page,
			    u32 off, u32 n)
{
	if (fr->n && fr->f[fr->n - 1].page == page &&
	    fr->f[fr->n - 1].off + fr->f[fr->n - 1].len == off) {
		fr->f[fr->n - 1].len += n;
	} else {
		if (fr->n == VRDMA_FRAGS_MAX || !sendpage_ok(page))
			return false;
		get_page(page);
		fr->f[fr->n].page = page;
		fr->f[fr->n].off = off;
		fr->f[fr->n].len = n;
		fr->n++;
	}
	fr->len += n;
	return true;
}

/* Drop the page references @fr holds (its pages were not attached). */
void vrdma_frags_put(struct vrdma_frags *fr)
{
	while (fr->n)
		put_page(fr->f[--fr->n].page);
	fr->len = 0;
}

/*
 * The pages of [@iova, @iova + @len) of the MR of @key, checked for
 * @access, appended to @fr with a reference each, for transmitting them
 * without a copy (as siw does): the skb keeps the pages alive after the
 * MR is deregistered or its process gone. Only user MRs with a page
 * index qualify; false (and @fr as it was) for anything else, which the
 * caller then copies, and for any access fault, which the copy reports.
 * @hint (or NULL): the caller's connection's, as vrdma_mr_get_hint().
 */
bool vrdma_mr_frags(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		    u32 len, struct vrdma_frags *fr,
		    struct vrdma_mr_hint *hint)
{
	u32 n0 = fr->n, len0 = fr->len;
	u32 last0 = n0 ? fr->f[n0 - 1].len : 0;
	struct vrdma_mr *mr;
	bool ok = true;
	u64 pos;

	rcu_read_lock();
	mr = vrdma_mr_get_hint(qp, key, access, iova, len, hint);
	if (!mr || mr->type != VRDMA_MR_USER || !mr->upages) {
		rcu_read_unlock();
		return false;
	}
	pos = iova - mr->ibmr.iova + ib_umem_offset(mr->umem);
	while (len && ok) {
		u32 poff = pos & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - poff);
		struct page *page = vrdma_umem_page(mr, pos);

		ok = page && vrdma_frags_add(fr, page, poff, n);
		len -= n;
		pos += n;
	}
	rcu_read_unlock();
	if (ok)
		return true;
	/* undo what this call added, also to a fragment it extended */
	while (fr->n > n0)
		put_page(fr->f[--fr->n].page);
	if (n0)
		fr->f[n0 - 1].len = last0;
	fr->len = len0;
	return false;
}

/*
 * The fast-registration MR of @key in @qp's PD, for LOCAL_INV and
 * SEND_WITH_INV (IBA 9.4.1.4.1: only an FRMR of our PD); caller holds RCU.
 */
static struct vrdma_mr *vrdma_mr_inv_get(struct vrdma_qp *qp, u32 key)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	struct vrdma_mr *mr = xa_load(&vd->mr_xa, key >> 8);

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "FRMR lookup without RCU");
	if (!mr || xa_pointer_tag(mr) || mr->ibmr.pd != qp->ibqp.pd || mr->type != VRDMA_MR_FAST ||
	    READ_ONCE(mr->fast_key) != key)
		return NULL;
	return mr;
}

/*
 * A type 2B window bound by @qp under @key (IBA 10.6.7.2.4: invalidated
 * by LOCAL_INV or SEND_WITH_INV through its QP; type 1 windows are not).
 * With @inv it is unbound. Caller holds RCU.
 */
static bool vrdma_mw_inv(struct vrdma_qp *qp, u32 key, bool inv)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	void *entry = xa_load(&vd->mr_xa, key >> 8);
	struct vrdma_mw *mw;
	unsigned long flags;
	bool ok;

	if (xa_pointer_tag(entry) != VRDMA_KEY_MW)
		return false;
	mw = xa_untag_pointer(entry);
	spin_lock_irqsave(&mw->lock, flags);
	ok = mw->ibmw.type == IB_MW_TYPE_2 && mw->bound && mw->rkey == key &&
	     mw->ibmw.pd == qp->ibqp.pd && mw->qpn == qp->ibqp.qp_num;
	if (ok && inv)
		mw->bound = false;
	spin_unlock_irqrestore(&mw->lock, flags);
	return ok;
}

/* @key names an FRMR or a window of @qp that SEND_WITH_INV may invalidate. */
bool vrdma_mr_can_invalidate(struct vrdma_qp *qp, u32 key)
{
	bool ok;

	rcu_read_lock();
	ok = vrdma_mr_inv_get(qp, key) || vrdma_mw_inv(qp, key, false);
	rcu_read_unlock();
	return ok;
}

/* Invalidate the FRMR or window of @key: 0, or -EINVAL when there is none. */
int vrdma_mr_invalidate(struct vrdma_qp *qp, u32 key)
{
	struct vrdma_mr *mr;
	bool ok;

	rcu_read_lock();
	mr = vrdma_mr_inv_get(qp, key);
	if (mr)
		/* pairs with vrdma_mr_get()'s acquire */
		smp_store_release(&mr->fast_valid, false);
	ok = mr || vrdma_mw_inv(qp, key, true);
	rcu_read_unlock();
	return ok ? 0 : -EINVAL;
}

/* ---- memory windows -------------------------------------------------- */

int vrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibmw->device);
	struct vrdma_mw *mw = to_vmw(ibmw);
	u32 idx;
	int rv;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	rv = vrdma_take(&vd->n_mr, vrdma_limits.max_mr);
	if (rv)
		return rv;
	spin_lock_init(&mw->lock);
	rv = xa_alloc_cyclic_irq(&vd->mr_xa, &idx,
				 xa_tag_pointer(mw, VRDMA_KEY_MW),
				 XA_LIMIT(1, VRDMA_MR_IDX_MAX), &vd->next_mr,
				 GFP_KERNEL);
	if (rv < 0) {
		atomic_dec(&vd->n_mr);
		return rv;
	}
	mw->rkey = (idx << 8) | (get_random_u32() & 0xff);
	ibmw->rkey = mw->rkey;
	return 0;
}

int vrdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct vrdma_verbs_dev *vd = vrdma_vdev(ibmw->device);
	struct vrdma_mw *mw = to_vmw(ibmw);

	/* the data path looks windows up under RCU: let it finish first */
	xa_erase_irq(&vd->mr_xa, mw->rkey >> 8);
	vrdma_mr_erased();
	synchronize_rcu();
	atomic_dec(&vd->n_mr);
	return 0;
}

/*
 * BIND_MW from the send queue (type 1 through ibv_bind_mw, type 2B as
 * IBV_WR_BIND_MW): sqe.ex a key of the window (its index names it),
 * sqe.rkey the key it gets, raddr and compare_add the range, swap the
 * rights (remote ones; local write is ignored), sge[0].lkey the MR, which
 * must be a user MR of the QP's PD with MW_BIND that covers the range
 * (IBA 10.6.7.2). A zero length
 * unbinds a type 1 window; a type 2B window binds only when free.
 * Zero-based windows are not offered. 0 or -EINVAL.
 */
int vrdma_mw_bind(struct vrdma_qp *qp, const struct vrdma_sqe *sqe)
{
	struct vrdma_verbs_dev *vd = qp->vdev->priv;
	u64 addr = sqe->raddr, len = sqe->compare_add;
	int access = (int)sqe->swap;
	struct vrdma_mr *mr = NULL;
	unsigned long flags;
	struct vrdma_mw *mw;
	void *entry;
	int rv = -EINVAL;

	/* local write means nothing to a window (rxe and mlx5 accept it) */
	if (access & ~(VRDMA_REMOTE_ACCESS | IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	access &= VRDMA_REMOTE_ACCESS;
	rcu_read_lock();
	entry = xa_load(&vd->mr_xa, sqe->ex >> 8);
	if (xa_pointer_tag(entry) != VRDMA_KEY_MW)
		goto out;
	mw = xa_untag_pointer(entry);
	if (mw->ibmw.pd != qp->ibqp.pd || (sqe->rkey >> 8) != (mw->rkey >> 8))
		goto out;
	if (len || mw->ibmw.type == IB_MW_TYPE_2) {
		mr = xa_load(&vd->mr_xa, sqe->sge[0].lkey >> 8);
		if (!mr || xa_pointer_tag(mr) || mr->type != VRDMA_MR_USER ||
		    mr->ibmr.lkey != sqe->sge[0].lkey ||
		    mr->ibmr.pd != qp->ibqp.pd ||
		    !(READ_ONCE(mr->access) & IB_ACCESS_MW_BIND) ||
		    !vrdma_mr_covers(mr, addr, len))
			goto out;
		/* IBA 10.6.3.1: remote write/atomic need local write */
		if ((access & (IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_ATOMIC)) &&
		    !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE))
			goto out;
	}
	spin_lock_irqsave(&mw->lock, flags);
	if (mw->ibmw.type == IB_MW_TYPE_2 && mw->bound) {
		spin_unlock_irqrestore(&mw->lock, flags);
		goto out;
	}
	mw->rkey = sqe->rkey;
	mw->bound = !!mr;
	mw->mr_key = mr ? mr->ibmr.lkey : 0;
	mw->qpn = qp->ibqp.qp_num;
	mw->addr = addr;
	mw->len = len;
	mw->access = access;
	WRITE_ONCE(mw->ibmw.rkey, sqe->rkey);
	spin_unlock_irqrestore(&mw->lock, flags);
	rv = 0;
out:
	rcu_read_unlock();
	return rv;
}

/*
 * REG_MR of a kernel QP: sqe.raddr is the ib_mr (a kernel pointer, so
 * never taken from a user QP's ring), rkey its new key, ex the access.
 * 0 or -EINVAL.
 */
int vrdma_mr_fast_reg(struct vrdma_qp *qp, const struct vrdma_sqe *sqe)
{
	struct vrdma_mr *mr;

	if (qp->user || !sqe->raddr)
		return -EINVAL;
	mr = to_vmr((struct ib_mr *)(uintptr_t)sqe->raddr);
	if (mr->ibmr.pd != qp->ibqp.pd || mr->type != VRDMA_MR_FAST ||
	    (sqe->rkey >> 8) != (mr->ibmr.lkey >> 8) ||
	    READ_ONCE(mr->fast_valid))
		return -EINVAL;
	WRITE_ONCE(mr->access, sqe->ex);
	WRITE_ONCE(mr->fast_key, sqe->rkey);
	/* key and access before the MR can be found valid */
	smp_store_release(&mr->fast_valid, true);
	return 0;
}

/*
 * Copy @len bytes between @b and a WQE's scatter/gather list, starting
 * @off bytes into it, each SGE checked by its lkey (LOCAL_WRITE to
 * write). IB_WC_SUCCESS, LOC_PROT_ERR or LOC_LEN_ERR (list too short).
 */
enum ib_wc_status vrdma_sge_copy(struct vrdma_qp *qp,
				 const struct vrdma_sge *sge, u32 nsge,
				 u32 off, struct vrdma_buf *b, u32 len,
				 bool to_mr)
{
	int access = to_mr ? IB_ACCESS_LOCAL_WRITE : 0;
	u32 i;

	for (i = 0; i < nsge && len; i++) {
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		if (vrdma_mr_rw(qp, sge[i].lkey, access, sge[i].addr + off, b,
				n, to_mr))
			return IB_WC_LOC_PROT_ERR;
		len -= n;
		off = 0;
	}
	return len ? IB_WC_LOC_LEN_ERR : IB_WC_SUCCESS;
}

/*
 * The pages of @len bytes of a send WQE's gather list from @off, into
 * @fr (empty), for a transmit without a copy; false (nothing held) when
 * any part does not qualify (vrdma_mr_frags) and must be copied. @hint as
 * vrdma_mr_frags().
 */
bool vrdma_sge_frags(struct vrdma_qp *qp, const struct vrdma_sge *sge,
		     u32 nsge, u32 off, u32 len, struct vrdma_frags *fr,
		     struct vrdma_mr_hint *hint)
{
	u32 i;

	for (i = 0; i < nsge && len; i++) {
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		if (!vrdma_mr_frags(qp, sge[i].lkey, 0, sge[i].addr + off, n,
				    fr, hint)) {
			vrdma_frags_put(fr);
			return false;
		}
		len -= n;
		off = 0;
	}
	if (len)
		vrdma_frags_put(fr);
	return !len;
}

u64 vrdma_sge_total(const struct vrdma_sge *sge, u32 nsge)
{
	u64 total = 0;
	u32 i;

	for (i = 0; i < nsge; i++)
		total += sge[i].length;
	return total;
}
