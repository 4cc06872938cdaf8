// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdma_queue.c - rings shared with userspace, their mmap entries, and the
 * udata checks every verb uses (efa discipline).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "vrdma_verbs.h"

/*
 * Allocate a zeroed ring of @num slots (rounded up to a power of two) of
 * @slot_size bytes plus @extra bytes of control area behind the slots.
 * vmalloc_user() memory can be remapped to userspace page by page; the
 * pages stay referenced by a user mapping after vfree().
 */
int vrdma_ring_alloc(struct vrdma_ring *r, u32 num, u32 slot_size,
		     size_t extra)
{
	size_t size;

	memset(r, 0, sizeof(*r));
	if (!num)
		num = 1;
	num = roundup_pow_of_two(num);
	size = PAGE_ALIGN((size_t)num * slot_size + extra);
	r->buf = vmalloc_user(size);
	if (!r->buf)
		return -ENOMEM;
	r->size = size;
	r->num = num;
	r->slot_size = slot_size;
	return 0;
}

void vrdma_ring_free(struct vrdma_ring *r)
{
	if (r->entry) {
		rdma_user_mmap_entry_remove(r->entry);
		r->entry = NULL;
	}
	vfree(r->buf);
	r->buf = NULL;
}

/* Publish @r for mmap() by the process owning @udata; *key is the offset. */
int vrdma_ring_mmap_key(struct vrdma_ring *r, struct ib_udata *udata,
			u64 *key)
{
	struct vrdma_ucontext *uc = rdma_udata_to_drv_context(udata,
				struct vrdma_ucontext, ibuc);
	struct vrdma_mmap_entry *e;
	int rv;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->addr = r->buf;
	rv = rdma_user_mmap_entry_insert(&uc->ibuc, &e->rdma_entry, r->size);
	if (rv) {
		kfree(e);
		return rv;
	}
	r->entry = &e->rdma_entry;
	*key = rdma_user_mmap_get_offset(r->entry);
	return 0;
}

int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct vrdma_mmap_entry *e;
	size_t size = vma->vm_end - vma->vm_start;
	int rv = -EINVAL;

	/* rings are never executable and are mapped shared, whole */
	if ((vma->vm_flags & VM_EXEC) || !(vma->vm_flags & VM_SHARED))
		return -EPERM;

	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	e = container_of(rentry, struct vrdma_mmap_entry, rdma_entry);
	if (size == rentry->npages * PAGE_SIZE)
		rv = remap_vmalloc_range(vma, e->addr, 0);
	rdma_user_mmap_entry_put(rentry);
	return rv;
}

void vrdma_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	kfree(container_of(rentry, struct vrdma_mmap_entry, rdma_entry));
}

/*
 * Copy the driver part of a command. It must hold at least @min_size
 * bytes (up to and including its last mandatory field); bytes we do not
 * know must be zero. A shorter known part is zero-extended.
 */
int vrdma_udata_in(struct ib_udata *udata, void *cmd, size_t cmd_size,
		   size_t min_size)
{
	memset(cmd, 0, cmd_size);
	if (!udata)
		return 0;
	if (udata->inlen < min_size)
		return -EINVAL;
	if (udata->inlen > cmd_size &&
	    !ib_is_udata_cleared(udata, cmd_size, udata->inlen - cmd_size))
		return -EOPNOTSUPP;
	if (ib_copy_from_udata(cmd, udata, min_t(size_t, cmd_size,
						 udata->inlen)))
		return -EFAULT;
	return 0;
}

/*
 * The create commands of CQ, QP and SRQ carry only comp_mask and reserved
 * bytes so far: every byte must be zero.
 */
int vrdma_udata_in_empty(struct ib_udata *udata, void *cmd, size_t cmd_size)
{
	int rv = vrdma_udata_in(udata, cmd, cmd_size, 0);

	if (rv)
		return rv;
	return memchr_inv(cmd, 0, cmd_size) ? -EOPNOTSUPP : 0;
}

int vrdma_udata_out(struct ib_udata *udata, void *resp,
		    size_t resp_size)
{
	if (!udata || !udata->outlen)
		return 0;
	if (ib_copy_to_udata(udata, resp, min(resp_size, udata->outlen)))
		return -EFAULT;
	return 0;
}
