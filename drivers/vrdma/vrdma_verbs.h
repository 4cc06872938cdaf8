/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrdma_verbs.h - verbs objects and the limits the device advertises.
 */
#ifndef VRDMA_VERBS_H
#define VRDMA_VERBS_H

#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "rdma/vrdma-abi.h"	/* VRDMA_MAX_SGE, _INLINE, _MSG_SIZE */
#include "vrdma.h"

#define VRDMA_MAX_QP		(16 * 1024)
#define VRDMA_MAX_QP_WR		(16 * 1024)
#define VRDMA_MAX_CQ		(16 * 1024)
#define VRDMA_MAX_CQE		(64 * 1024)
#define VRDMA_MAX_MR		(64 * 1024)
#define VRDMA_MAX_PD		(16 * 1024)
#define VRDMA_MAX_SRQ		(4 * 1024)
#define VRDMA_MAX_AH		(64 * 1024)
#define VRDMA_MAX_RD_ATOMIC	16
#define VRDMA_MAX_FRMR_PAGES	512
#define VRDMA_MAX_MR_SIZE	(1ULL << 40)

#define VRDMA_QPN_MAX		0xffffff
#define VRDMA_QPN_MIN		16	/* 0 and 1 are special, keep a gap */
#define VRDMA_PSN_MASK		0xffffff

/*
 * Object limits in force, set from module parameters at load time
 * (defaults: the VRDMA_MAX_* values) so tests can exhaust them cheaply.
 */
struct vrdma_limits {
	u32 max_qp, max_cq, max_mr, max_pd, max_srq, max_ah;
	u32 max_qp_wr, max_cqe;
};

extern struct vrdma_limits vrdma_limits;

/* Verbs-level per-device state, hung off vrdma_dev->priv. */
struct vrdma_verbs_dev {
	struct xarray qp_xa;		/* qp_num -> vrdma_qp */
	struct xarray mr_xa;		/* key index -> vrdma_mr */
	struct xarray ah_xa;		/* ah_num -> vrdma_ah */
	/* qp_num -> what a closed RC connection answers (vrdma_rc_grave.c) */
	struct xarray grave_xa;
	struct delayed_work grave_gc;
	atomic_t n_graves;
	u32 next_qpn;
	u32 next_mr;
	u32 next_ah;
	atomic_t n_pd, n_cq, n_qp, n_mr, n_srq, n_ah;
};

struct vrdma_ucontext {
	struct ib_ucontext ibuc;
};

struct vrdma_pd {
	struct ib_pd ibpd;
};

/* A kernel-allocated ring, optionally mapped by a user process. */
struct vrdma_ring {
	void *buf;			/* vmalloc_user(), zeroed */
	size_t size;			/* bytes, page multiple */
	u32 num;			/* slots, power of two */
	u32 slot_size;
	u32 cons;			/* kernel consumer index */
	u32 prod;			/* kernel producer index */
	struct rdma_user_mmap_entry *entry;
};

struct vrdma_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *addr;
};

/*
 * Slot ownership (uapi vrdma-abi.h): the first u32 of every slot is its
 * flags word. The acquire load pairs with the producer's release store,
 * so a VALID slot's contents are visible once its flag is; the release
 * store orders our writes (or reads) of the slot before handing it over.
 */
static inline u32 vrdma_slot_flags(void *slot)
{
	/* acquire: pairs with vrdma_slot_set() / the provider's release */
	return smp_load_acquire((u32 *)slot);
}

static inline void vrdma_slot_set(void *slot, u32 flags)
{
	/* release: slot contents before the ownership flag */
	smp_store_release((u32 *)slot, flags);
}

static inline void *vrdma_ring_slot(struct vrdma_ring *r, u32 idx)
{
	return r->buf + (size_t)(idx & (r->num - 1)) * r->slot_size;
}

/* The control area behind the slots (vrdma_ring_alloc's @extra bytes). */
static inline void *vrdma_ring_ctrl(struct vrdma_ring *r)
{
	return r->buf + (size_t)r->num * r->slot_size;
}


struct vrdma_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* producer side and kernel poll */
	struct vrdma_ring ring;
	struct vrdma_cq_ctrl *ctrl;	/* after the CQEs, shared */
	bool user;
	u64 overflows;
};

struct vrdma_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;
	struct vrdma_ring ring;
	u32 max_wr;			/* what the consumer asked for */
	u32 limit;			/* armed when non-zero */
	bool user;
};

struct vrdma_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
	u32 ah_num;
};

enum vrdma_mr_type {
	VRDMA_MR_DMA,
	VRDMA_MR_USER,
	VRDMA_MR_FAST,
};

struct vrdma_mr {
	struct ib_mr ibmr;
	enum vrdma_mr_type type;
	struct ib_umem *umem;
	/*
	 * USER: the umem's pages in order (NULL when too large to index):
	 * a packet's page found in O(1), not by walking the sg table.
	 */
	struct page **upages;
	u32 n_upages;
	u64 *pages;			/* FAST: page addresses of map_mr_sg */
	u32 max_pages;
	u32 npages;
	int access;			/* FAST: set by REG_MR */
	u32 fast_key;			/* FAST: the key of the last REG_MR */
	bool fast_valid;		/* FAST: registered, not invalidated */
};

/*
 * A memory window (type 1 or 2B) in the MR key space: its xarray entry is
 * tagged VRDMA_KEY_MW. The binding is read and written under @lock; it
 * names its MR by key, looked up again at every access, so deregistering
 * the MR leaves nothing dangling.
 */
struct vrdma_mw {
	struct ib_mw ibmw;
	spinlock_t lock;		/* the binding below */
	u32 rkey;
	bool bound;
	u32 mr_key;
	u32 qpn;			/* type 2B: the QP that bound it */
	u64 addr;
	u64 len;
	int access;
};

#define VRDMA_KEY_MW	1		/* xa_pointer_tag() of a vrdma_mw */

/* Lock order of QP, ring, CQ and connection locks: vrdma_rc.h. */
struct vrdma_qp {
	struct ib_qp ibqp;
	struct vrdma_dev *vdev;
	struct mutex state_lock;	/* modify_qp, query_qp */
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* what modify_qp accepted */
	struct ib_qp_cap cap;
	enum ib_sig_type sq_sig_type;
	spinlock_t sq_lock;
	spinlock_t rq_lock;
	struct vrdma_ring sq;
	struct vrdma_ring rq;		/* unused with an SRQ */
	bool user;
	/* the provider rings for WQEs behind a TAKEN slot (uapi) */
	bool sq_mark_taken;
	u64 doorbells;
	struct vrdma_rc_conn *rc;	/* RC: the connection (vrdma_rc.c) */
	struct vrdma_uc *uc;		/* UC: the connection (vrdma_uc.c) */
	struct mutex uc_tx_lock;	/* UC: one sender at a time; qp->uc */
	/* UD/GSI/UC kernel QP: send (vrdma_ud.c) */
	struct work_struct ud_work;
};

static inline struct vrdma_verbs_dev *vrdma_vdev(struct ib_device *ibdev)
{
	return to_vrdma_dev(ibdev)->priv;
}

static inline struct vrdma_ucontext *to_vuc(struct ib_ucontext *uc)
{
	return container_of(uc, struct vrdma_ucontext, ibuc);
}

static inline struct vrdma_cq *to_vcq(struct ib_cq *cq)
{
	return container_of(cq, struct vrdma_cq, ibcq);
}

static inline struct vrdma_qp *to_vqp(struct ib_qp *qp)
{
	return container_of(qp, struct vrdma_qp, ibqp);
}

static inline struct vrdma_srq *to_vsrq(struct ib_srq *srq)
{
	return container_of(srq, struct vrdma_srq, ibsrq);
}

static inline struct vrdma_mw *to_vmw(struct ib_mw *mw)
{
	return container_of(mw, struct vrdma_mw, ibmw);
}

static inline struct vrdma_mr *to_vmr(struct ib_mr *mr)
{
	return container_of(mr, struct vrdma_mr, ibmr);
}

static inline struct vrdma_ah *to_vah(struct ib_ah *ah)
{
	return container_of(ah, struct vrdma_ah, ibah);
}

/* Counted object limits: take one or fail with -ENOMEM. */
static inline int vrdma_take(atomic_t *n, u32 max)
{
	if (atomic_inc_return(n) > max) {
		atomic_dec(n);
		return -ENOMEM;
	}
	return 0;
}

/* vrdma_queue.c: rings, their mmap entries, udata checks */
int vrdma_ring_alloc(struct vrdma_ring *r, u32 num, u32 slot_size,
		     size_t extra);
void vrdma_ring_free(struct vrdma_ring *r);
int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void vrdma_mmap_free(struct rdma_user_mmap_entry *rentry);
int vrdma_ring_mmap_key(struct vrdma_ring *r, struct ib_udata *udata,
			u64 *key);
/* Driver data of a command: known part present, unknown tail zero. */
int vrdma_udata_in(struct ib_udata *udata, void *cmd, size_t cmd_size,
		   size_t min_size);
int vrdma_udata_in_empty(struct ib_udata *udata, void *cmd, size_t cmd_size);
int vrdma_udata_out(struct ib_udata *udata, void *resp,
		    size_t resp_size);

/* vrdma_cq.c */
int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int vrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int vrdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void vrdma_cq_push(struct vrdma_cq *cq, const struct vrdma_cqe *cqe);
void vrdma_cq_clean(struct vrdma_cq *cq, u32 qpn);
enum ib_wc_opcode vrdma_sq_wc_opcode(u8 op);

/* vrdma_qp.c */
int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		    struct ib_udata *udata);
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_udata *udata);
int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init_attr);
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/* vrdma_srq.c */
int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		     struct ib_udata *udata);
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
bool vrdma_srq_take(struct vrdma_srq *srq, struct vrdma_rqe *out);
bool vrdma_rq_peek(struct vrdma_qp *qp, u32 ahead, struct vrdma_rqe *out);
void vrdma_rq_release(struct vrdma_qp *qp);
bool vrdma_rq_take(struct vrdma_qp *qp, struct vrdma_rqe *out);
int vrdma_ring_post_recv(struct vrdma_ring *r, spinlock_t *lock,
			 const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);
int vrdma_build_rqe(struct vrdma_rqe *rqe, const struct ib_recv_wr *wr,
		    u32 max_sge);

/* vrdma_mem.c */
struct ib_mr *vrdma_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *vrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *vrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 len, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
int vrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int vrdma_dealloc_mw(struct ib_mw *ibmw);
int vrdma_mw_bind(struct vrdma_qp *qp, const struct vrdma_sqe *sqe);
struct ib_mr *vrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		    unsigned int *sg_offset);
int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct vt_atomic;

/*
 * One side of a data-path copy: a flat buffer, or (copying into memory
 * only) the bytes of an skb from @off on, which may be in page fragments.
 */
struct vrdma_buf {
	void *p;
	const struct sk_buff *skb;
	u32 off;
};

#define VRDMA_BUF(ptr)		((struct vrdma_buf){ .p = (ptr) })
#define VRDMA_SKB_BUF(s, o)	((struct vrdma_buf){ .skb = (s), .off = (o) })

/*
 * Pages of a payload to attach to an skb instead of copying it. One
 * packet's: a 9000-byte MTU's payload spans at most 4 pages of one SGE,
 * and a payload gathered from more pieces than this is copied. It lives
 * on the stack of every packet sent: at MAX_SKB_FRAGS entries (280
 * bytes) its zeroing was a cost of its own (vrdma_frags_init()).
 */
#define VRDMA_FRAGS_MAX		8

struct vrdma_frags {
	u32 n;
	u32 len;
	struct {
		struct page *page;
		u32 off;
		u32 len;
	} f[VRDMA_FRAGS_MAX];
};

/*
 * Empty: the count and length only. Debian's 6.1 builds with
 * CONFIG_INIT_STACK_ALL_ZERO, which zeroes every local the code does not
 * initialise; the array is written before it is read, so a declaration
 * with vrdma_noinit skips that.
 */
static inline void vrdma_frags_init(struct vrdma_frags *fr)
{
	fr->n = 0;
	fr->len = 0;
}

/*
 * The MR a key last resolved to on a connection's data path, for the
 * next packets of the same hold of its lock (vrdma_mr_get_hint()): a
 * 64 KB message is ~46 packets of one key. The lock's owner clears it
 * when a hold begins (vrdma_mr_hint_clear()).
 */
struct vrdma_mr_hint {
	struct vrdma_mr *mr;		/* NULL: none */
	u32 key;
	int access;
};

static inline void vrdma_mr_hint_clear(struct vrdma_mr_hint *hint)
{
	hint->mr = NULL;
}

bool vrdma_mr_check(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		    u64 len);
struct page *vrdma_umem_page(struct vrdma_mr *mr, u64 pos);
struct vrdma_mr *vrdma_mr_lookup(struct vrdma_qp *qp, u32 key, int access,
				 u64 iova, u64 len,
				 struct vrdma_mr_hint *hint);
int vrdma_mr_write(struct vrdma_mr *mr, u64 iova, struct vrdma_buf *b,
		   u32 len);
int vrdma_mr_rw(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		struct vrdma_buf *b, u32 len, bool to_mr);
bool vrdma_mr_frags(struct vrdma_qp *qp, u32 key, int access, u64 iova,
		    u32 len, struct vrdma_frags *fr,
		    struct vrdma_mr_hint *hint);
void vrdma_frags_put(struct vrdma_frags *fr);
int vrdma_mr_atomic(struct vrdma_qp *qp, u32 rkey, u64 iova,
		    const struct vt_atomic *a, u64 *orig);
bool vrdma_mr_can_invalidate(struct vrdma_qp *qp, u32 key);
int vrdma_mr_invalidate(struct vrdma_qp *qp, u32 key);
int vrdma_mr_fast_reg(struct vrdma_qp *qp, const struct vrdma_sqe *sqe);
enum ib_wc_status vrdma_sge_copy(struct vrdma_qp *qp,
				 const struct vrdma_sge *sge, u32 nsge,
				 u32 off, struct vrdma_buf *b, u32 len,
				 bool to_mr);
bool vrdma_sge_frags(struct vrdma_qp *qp, const struct vrdma_sge *sge,
		     u32 nsge, u32 off, u32 len, struct vrdma_frags *fr,
		     struct vrdma_mr_hint *hint);
u64 vrdma_sge_total(const struct vrdma_sge *sge, u32 nsge);

#endif /* VRDMA_VERBS_H */
