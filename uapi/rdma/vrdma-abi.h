/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vrdma user/kernel ABI, shared by vrdma.ko and libvrdma.
 *
 * Rules (efa discipline, include/uapi/rdma/efa-abi.h):
 * - every struct's size is a multiple of 8 bytes, and every 64-bit field
 *   is an __aligned_u64 at an offset that is a multiple of 8, so the
 *   layout is the same for 32- and 64-bit userspace;
 * - comp_mask is the first field of every command and response, the
 *   flags word the first of every ring slot;
 * - a reserved field is named reserved_XXX, where XXX is its offset in
 *   bits from the start of its struct, in lower-case hex without leading
 *   zeros (a field at byte 44 is reserved_160, at byte 4 reserved_20).
 *   It is a __u8 array, except an __aligned_u64 that gives a struct with
 *   no other 64-bit field its 8-byte alignment. Reserved fields are
 *   written as zero; the kernel refuses a command whose reserved bytes
 *   are not (-EOPNOTSUPP), readers of slots and responses ignore them;
 * - sizes and key offsets are asserted at build time on both sides
 *   (drivers/vrdma/vrdma_abi_check.h, userspace/provider/vrdma_abi_check.h);
 * - VRDMA_UVERBS_ABI_VERSION is bumped only when an old provider would
 *   break: a layout change is such a break, a renamed field is not.
 *
 * Queues shared with userspace (siw style): the kernel allocates every SQ,
 * RQ, SRQ and CQ ring and hands out an mmap key (rdma_user_mmap_entry).
 * Ownership of a ring slot is carried by VRDMA_WQE_VALID / VRDMA_CQE_VALID
 * in its flags word: the producer fills the slot and then sets the bit
 * with a release store; the consumer tests it with an acquire load, reads
 * the slot and clears the bit with a release store. The flags word is the
 * first 32 bits of every slot type. Besides the slots, a CQ ring carries
 * struct vrdma_cq_ctrl and an RQ ring struct vrdma_rq_ctrl; posting a
 * receive and polling a CQ take no system call.
 */
#ifndef VRDMA_ABI_USER_H
#define VRDMA_ABI_USER_H

#include <linux/types.h>

#define VRDMA_UVERBS_ABI_VERSION 1

/*
 * Out of tree, vrdma has no entry in enum rdma_driver_id; this private value
 * is the ib_device's ops.driver_id, and uverbs rejects (-EINVAL) every ioctl
 * whose header carries another one, so the provider must use it too.
 */
#define VRDMA_UVERBS_DRIVER_ID 0x7672

/* Name prefix the provider matches on (VERBS_NAME_MATCH). */
#define VRDMA_IBDEV_PREFIX "vrdma"

/* UDP destination port of the vrdma transport (not RoCEv2's 4791). */
#define VRDMA_UDP_PORT 4793

/* Ring geometry limits, advertised again through query_device. */
#define VRDMA_MAX_SGE		6
#define VRDMA_MAX_INLINE	(VRDMA_MAX_SGE * 16)

/* The longest message, advertised as max_msg_sz (IBA's limit, 2^31). */
#define VRDMA_MAX_MSG_SIZE	(1U << 31)

/* An mmap key that is never valid: the kernel could not map the queue. */
#define VRDMA_INVAL_MMAP_KEY	(~0ULL)

struct vrdma_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* flags of struct vrdma_sqe and struct vrdma_rqe */
enum vrdma_wqe_flags {
	VRDMA_WQE_VALID		= 1 << 0,
	VRDMA_WQE_SIGNALED	= 1 << 1,
	VRDMA_WQE_SOLICITED	= 1 << 2,
	VRDMA_WQE_INLINE	= 1 << 3,
	VRDMA_WQE_FENCE		= 1 << 4,
	/*
	 * SQEs only, set by the kernel (release store) once it has taken the
	 * WQE, on QPs created with VRDMA_CREATE_QP_CMD_SQ_TAKEN: a provider
	 * whose new WQEs follow a TAKEN slot rings the doorbell, since the
	 * kernel may not look at the SQ again on its own (it coalesces the
	 * ACKs of unsignaled WQEs, whose release then comes late).
	 */
	VRDMA_WQE_TAKEN		= 1 << 5,
};

/*
 * A provider that skips the doorbell behind a WQE not yet taken still
 * rings once this many WQEs have been posted since its last doorbell: a
 * kernel that holds a doorbell back to send a stream of small messages
 * together (module parameter tx_coalesce_us) takes them all then, in the
 * system call, rather than in its timer. A kernel that never holds one
 * back takes each WQE before the next is posted, and never sees these.
 */
#define VRDMA_SQ_DB_EVERY	16

/* opcodes of struct vrdma_sqe (values of enum ib_wr_opcode) */
enum vrdma_sq_opcode {
	VRDMA_OP_RDMA_WRITE		= 0,
	VRDMA_OP_RDMA_WRITE_WITH_IMM	= 1,
	VRDMA_OP_SEND			= 2,
	VRDMA_OP_SEND_WITH_IMM		= 3,
	VRDMA_OP_RDMA_READ		= 4,
	VRDMA_OP_ATOMIC_CMP_AND_SWP	= 5,
	VRDMA_OP_ATOMIC_FETCH_AND_ADD	= 6,
	VRDMA_OP_LOCAL_INV		= 7,
	VRDMA_OP_BIND_MW		= 8,	/* raddr, compare_add (len), swap (rights) */
	VRDMA_OP_SEND_WITH_INV		= 9,
	VRDMA_OP_REG_MR			= 0x20,	/* kernel QPs only */
};

/* One send queue entry. With VRDMA_WQE_INLINE, sge[] holds the payload. */
struct vrdma_sqe {
	__u32 flags;
	__u8 opcode;
	__u8 num_sge;
	__u8 reserved_30[2];
	__aligned_u64 wr_id;
	__aligned_u64 raddr;		/* RDMA/atomic remote address */
	__u32 rkey;
	__u32 ex;			/* immediate data (be) or invalidate rkey */
	__aligned_u64 compare_add;	/* atomics */
	__aligned_u64 swap;		/* atomics */
	__u32 ah;			/* UD: ah_num from create_ah */
	__u32 remote_qpn;		/* UD */
	__u32 remote_qkey;		/* UD */
	__u32 inline_len;		/* VRDMA_WQE_INLINE: payload bytes */
	struct vrdma_sge sge[VRDMA_MAX_SGE];
};

/* One receive queue entry (QP RQ or SRQ). */
struct vrdma_rqe {
	__u32 flags;
	__u8 num_sge;
	__u8 reserved_28[3];
	__aligned_u64 wr_id;
	struct vrdma_sge sge[VRDMA_MAX_SGE];
};

enum vrdma_cqe_flags {
	VRDMA_CQE_VALID		= 1 << 0,
	VRDMA_CQE_WITH_IMM	= 1 << 1,
	VRDMA_CQE_WITH_INV	= 1 << 2,
	VRDMA_CQE_GRH		= 1 << 3,
	VRDMA_CQE_SOLICITED	= 1 << 4,
};

/*
 * One completion. opcode and status carry the values of enum ib_wc_opcode
 * and enum ib_wc_status, which equal libibverbs' ibv_wc_opcode/status.
 */
struct vrdma_cqe {
	__u32 flags;			/* first, like every ring slot */
	__u8 opcode;
	__u8 status;
	__u16 pkey_index;
	__aligned_u64 wr_id;
	__u32 byte_len;
	__u32 ex;			/* immediate data (be) or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;			/* UD */
	__u8 sl;
	/*
	 * UD/GSI receive with VRDMA_CQE_GRH: enum rdma_network_type of the
	 * header in the first 40 bytes of the buffer (2 IPv4, 3 IPv6).
	 */
	__u8 network_hdr_type;
	__u8 reserved_110[6];
};

/* CQ arming, written by the consumer, cleared by the kernel when it fires. */
enum vrdma_cq_notify {
	VRDMA_CQ_NOTIFY_NONE		= 0,
	VRDMA_CQ_NOTIFY_SOLICITED	= 1 << 0,
	VRDMA_CQ_NOTIFY_NEXT		= 1 << 1,
};

/* Follows the CQE array of every CQ ring in the same mapping. */
struct vrdma_cq_ctrl {
	__u32 notify;
	__u8 reserved_20[4];
	__aligned_u64 reserved_40;	/* keeps the struct 8-byte aligned */
};

/* ucontext */
enum vrdma_alloc_ucontext_resp_mask {
	/* create_qp takes VRDMA_CREATE_QP_CMD_SQ_TAKEN */
	VRDMA_UCTX_RESP_SQ_TAKEN	= 1 << 0,
};

struct vrdma_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 abi_version;
	__u32 max_qp;
	__u32 max_cq;
	__u32 max_qp_wr;
	__u32 max_cqe;
	__u32 max_sge;
	__u32 max_inline;
	__u32 sqe_size;			/* sizeof(struct vrdma_sqe) */
	__u32 rqe_size;			/* sizeof(struct vrdma_rqe) */
	__u32 cqe_size;			/* sizeof(struct vrdma_cqe) */
	__u8 reserved_160[4];
};

/* CQ: the request carries nothing beyond comp_mask. */
struct vrdma_create_cq_cmd {
	__u32 comp_mask;
	__u8 reserved_20[4];
};

struct vrdma_create_cq_resp {
	__u32 comp_mask;
	__u32 cq_id;
	__u32 num_cqe;			/* ring slots (>= the requested cqe) */
	__u8 reserved_60[4];
	__aligned_u64 cq_key;		/* mmap offset of cqes + vrdma_cq_ctrl */
	__aligned_u64 cq_size;		/* bytes to map */
};

/* resize_cq: a new ring; unpolled CQEs move to its start (consumer index 0) */
struct vrdma_resize_cq_resp {
	__u32 comp_mask;
	__u32 num_cqe;
	__aligned_u64 cq_key;
	__aligned_u64 cq_size;
};

enum vrdma_create_qp_cmd_mask {
	/*
	 * The provider rings the doorbell for WQEs behind a VRDMA_WQE_TAKEN
	 * slot (only where the context announced VRDMA_UCTX_RESP_SQ_TAKEN).
	 */
	VRDMA_CREATE_QP_CMD_SQ_TAKEN	= 1 << 0,
};

struct vrdma_create_qp_cmd {
	__u32 comp_mask;		/* enum vrdma_create_qp_cmd_mask */
	__u8 reserved_20[4];
};

enum vrdma_create_qp_resp_mask {
	/* the RQ mapping ends with struct vrdma_rq_ctrl (rq_size covers it) */
	VRDMA_CREATE_QP_RESP_RQ_CTRL	= 1 << 0,
};

/*
 * Behind the RQE array of a QP's RQ ring (at num_rqe * rqe_size), in the
 * same mapping, when VRDMA_CREATE_QP_RESP_RQ_CTRL is set. The kernel
 * writes qp_state (enum ib_qp_state) at every state change, and on
 * entering ERR does so, with a full barrier, before it flushes the rings.
 * Posting a receive takes no system call, so a provider that posts to a
 * QP in ERR must tell the kernel: after publishing the RQEs it fences and
 * reads qp_state, and on ERR rings the send doorbell, which flushes both
 * queues. Either the kernel's flush sees the new RQEs or the provider
 * sees ERR.
 */
struct vrdma_rq_ctrl {
	__u32 qp_state;
	__u8 reserved_20[4];
	__aligned_u64 reserved_40;	/* keeps the struct 8-byte aligned */
};

struct vrdma_create_qp_resp {
	__u32 comp_mask;		/* enum vrdma_create_qp_resp_mask */
	__u32 qp_id;
	__u32 num_sqe;
	__u32 num_rqe;			/* 0 with an SRQ */
	__aligned_u64 sq_key;
	__aligned_u64 sq_size;
	__aligned_u64 rq_key;		/* VRDMA_INVAL_MMAP_KEY with an SRQ */
	__aligned_u64 rq_size;
};

struct vrdma_create_srq_cmd {
	__u32 comp_mask;
	__u8 reserved_20[4];
};

struct vrdma_create_srq_resp {
	__u32 comp_mask;
	__u32 num_rqe;
	__aligned_u64 srq_key;
	__aligned_u64 srq_size;
};

struct vrdma_create_ah_resp {
	__u32 comp_mask;
	__u32 ah_num;			/* goes into vrdma_sqe.ah */
};

#endif /* VRDMA_ABI_USER_H */
