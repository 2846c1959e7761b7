/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * kiwi: software iWARP RNIC -- user/kernel ABI.
 *
 * This header is shared verbatim by the kernel module (kmod/) and the
 * libibverbs provider (provider/).  Every structure here either crosses
 * the uverbs boundary as the driver-specific part of a response, or lives
 * in memory mapped into both the kernel and the process (the queue
 * rings).  Layouts are fixed-size, naturally aligned and padded
 * explicitly; all integers are in host byte order.
 *
 * Versioning: KIWI_ABI_VERSION is reported by the kernel as the uverbs
 * ABI version of every kiwi device (sysfs abi_version).  The provider
 * refuses devices whose version it does not know.  Any incompatible
 * change to this file bumps the version.
 *
 * The ring protocol is described in Documentation/rings.rst; the short
 * form is in the comments below.
 */
#ifndef KIWI_ABI_USER_H
#define KIWI_ABI_USER_H

#include <linux/types.h>

/* 1: uverbs commands for every post and poll.  2: mapped rings. */
#define KIWI_ABI_VERSION	2

/*
 * Device names created with "rdma link add NAME type kiwi" should start
 * with this prefix: the provider binds to devices by name, since kiwi has
 * no driver id of its own in the kernel's rdma_driver_id enumeration.
 */
#define KIWI_DEV_NAME_PREFIX	"kiwi"

/* Vendor id reported in device attributes: ASCII "kiw". */
#define KIWI_VENDOR_ID		0x6b6977
#define KIWI_VENDOR_PART_ID	1

/* Limits shared by both halves. */
#define KIWI_MAX_SGE		8	/* send and receive SGEs per WR */
#define KIWI_MAX_INLINE		256	/* bytes of inline send data */

/* ------------------------------------------------------------------ */
/* Mapped rings                                                        */
/* ------------------------------------------------------------------ */

/*
 * Every user send queue, receive queue, shared receive queue and
 * completion queue is one mapping: a struct kiwi_ring_ctl, then the
 * slots, each `stride` bytes, starting at KIWI_RING_CTL_SIZE.  The
 * number of slots is a power of two.  The create response gives the
 * mmap offset and length; the provider maps that range of the uverbs
 * command fd with PROT_READ | PROT_WRITE and MAP_SHARED.
 *
 * Indices are free-running 32-bit counters: slot = index & (slots - 1);
 * the number of entries in a ring is prod - cons (mod 2^32), at most the
 * number of slots.
 *
 *   ring           producer (writes prod, slots)  consumer (writes cons)
 *   SQ, RQ, SRQ    provider                       kernel
 *   CQ             kernel                         provider
 *
 * Ordering: the producer writes a slot, then stores prod with release
 * semantics; the consumer loads prod with acquire semantics, then reads
 * the slot (copying it), then stores cons with release semantics; the
 * producer loads cons with acquire semantics before reusing a slot.
 *
 * The kernel never trusts anything the process can write: it keeps its
 * own copy of every index it owns, reads prod (SQ, RQ, SRQ) or cons (CQ)
 * only to learn how far the other side claims to be, and treats a claim
 * of more than `slots` entries as a corrupted ring (the queue's QP goes
 * to error; a CQ overflows).  Each WQE is copied out of the ring once
 * and validated before use.
 */
#define KIWI_RING_CTL_SIZE	256

struct kiwi_ring_ctl {
	/* Cache line 0: written by the producer only. */
	__u32 prod;		/* entries ever produced */
	__u32 rsvd_prod[15];
	/* Cache line 1: written by the consumer only. */
	__u32 cons;		/* entries ever consumed */
	__u32 rsvd_cons[15];
	/* Cache line 2: written by the kernel only (status for the user). */
	__u32 flags;		/* KIWI_RING_F_* */
	__u32 qp_state;		/* SQ only: enum kiwi_uqp_state */
	__u32 rsvd_kern[14];
	/* Cache line 3: unused. */
	__u32 rsvd[16];
};

/* kiwi_ring_ctl.flags */
enum {
	/*
	 * SQ: the kernel's send processing is running and will see any WQE
	 * published before it stops; no doorbell needed.  The kernel clears
	 * it, then (full barrier) re-reads prod before going idle.  The
	 * provider stores prod, then (full barrier) reads this flag; if it
	 * is clear, it rings the doorbell: a uverbs POST_SEND with no WRs.
	 */
	KIWI_RING_F_BUSY = 1 << 0,
	/* CQ: a completion was lost because the ring was full (CQ error). */
	KIWI_RING_F_OVERFLOW = 1 << 1,
};

/* kiwi_ring_ctl.qp_state of an SQ: the iWARP (RDMAC verbs) QP state. */
enum kiwi_uqp_state {
	KIWI_UQP_IDLE = 0,	/* not connected: posting fails (ENOTCONN) */
	KIWI_UQP_RTS = 1,	/* connected */
	KIWI_UQP_CLOSING = 2,	/* graceful close: posting fails */
	KIWI_UQP_TERMINATE = 3,	/* failing: posted WRs complete in error */
	KIWI_UQP_ERROR = 4,	/* posted WRs are flushed after a doorbell */
};

/* A scatter/gather element inside a WQE. */
struct kiwi_usge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Send WQE opcodes (kiwi_usqe.opcode). */
enum kiwi_uwr_opcode {
	KIWI_UWR_SEND = 0,
	KIWI_UWR_SEND_INV = 1,
	KIWI_UWR_RDMA_WRITE = 2,
	KIWI_UWR_RDMA_READ = 3,	/* exactly one (sink) SGE, no inline */
	/*
	 * RFC 7306 immediate data (imm_data), only on a QP whose create
	 * response has KIWI_UQP_F_IMM: a WRITE followed by an Immediate
	 * Data message; SEND_IMM has no payload (length 0): the Immediate
	 * Data message alone.  Added in ABI 2 without a bump: an older
	 * kernel never sets KIWI_UQP_F_IMM, so a provider never posts them.
	 */
	KIWI_UWR_RDMA_WRITE_IMM = 4,
	KIWI_UWR_SEND_IMM = 5,
	/*
	 * RFC 7306 atomics, only on a QP whose create response has
	 * KIWI_UQP_F_ATOMIC: one 8-byte SGE (where the original remote
	 * value goes), not inline, then struct kiwi_uatomic at payload
	 * offset sizeof(struct kiwi_usge).  Such a QP's sq_stride always
	 * has room for both.  Added in ABI 2 like the *_IMM opcodes.
	 */
	KIWI_UWR_ATOMIC_FADD = 6,
	KIWI_UWR_ATOMIC_CSWAP = 7,
	/*
	 * Memory windows, only on a QP whose create response has
	 * KIWI_UQP_F_MW.  LOCAL_INV: inv_rkey is the window STag to
	 * invalidate, nothing else.  BIND_MW: rkey is the window's STag as
	 * the process knows it (only its index counts), inv_rkey the STag
	 * the bind gives it (same index, a new key), raddr the address in
	 * the memory region where the window starts, then struct
	 * kiwi_ubind as the payload (num_sge 0, not inline; every slot has
	 * room for it: it is one kiwi_usge long).  Added in ABI 2 like the
	 * *_IMM opcodes.
	 */
	KIWI_UWR_LOCAL_INV = 8,
	KIWI_UWR_BIND_MW = 9,
	KIWI_UWR_NUM_OPCODES
};

/* kiwi_usqe.flags */
enum {
	KIWI_UWR_F_SIGNALED = 1 << 0,
	KIWI_UWR_F_SOLICITED = 1 << 1,
	KIWI_UWR_F_FENCE = 1 << 2,
	KIWI_UWR_F_INLINE = 1 << 3,	/* payload is `length` data bytes */
	KIWI_UWR_F_ALL = (1 << 4) - 1
};

/*
 * Send queue slot: this header, then the payload, up to the QP's
 * sq_stride: num_sge struct kiwi_usge, or with KIWI_UWR_F_INLINE
 * `length` bytes of data (num_sge then 0).
 */
struct kiwi_usqe {
	__aligned_u64 wr_id;
	__u8 opcode;		/* enum kiwi_uwr_opcode */
	__u8 flags;		/* KIWI_UWR_F_* */
	__u8 num_sge;
	__u8 rsvd;
	__u32 length;		/* inline data bytes; ignored otherwise */
	__u32 rkey;		/* RDMA WRITE/READ: remote STag */
	union {
		__u32 inv_rkey;	/* SEND_INV: STag the peer invalidates */
		__u32 imm_data;	/* *_IMM: immediate data, host order */
	};
	__aligned_u64 raddr;	/* RDMA WRITE/READ: remote tagged offset */
};

/* The operands of an atomic WQE, after its SGE (host order). */
struct kiwi_uatomic {
	__aligned_u64 compare_add;	/* FADD: the addend; CSWAP: compare */
	__aligned_u64 swap;		/* CSWAP: the new value */
};

/* The rest of a BIND_MW WQE, at payload offset 0 (host order). */
struct kiwi_ubind {
	__aligned_u64 length;	/* window bytes; 0 unbinds a type 1 window */
	__u32 mr_lkey;		/* the memory region the window lies in */
	__u32 access;		/* IB_ACCESS_REMOTE_*, IB_ACCESS_ZERO_BASED */
};

/*
 * Receive queue and SRQ slot: this header, then num_sge struct
 * kiwi_usge, up to the queue's stride.
 */
struct kiwi_urqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 rsvd;
};

/* kiwi_ucqe.flags */
enum {
	KIWI_UCQE_F_WITH_INV = 1 << 0,	/* inv_rkey is valid */
	KIWI_UCQE_F_WITH_IMM = 1 << 1,	/* imm_data is valid */
};

/* Completion queue slot (stride sizeof(struct kiwi_ucqe)). */
struct kiwi_ucqe {
	__aligned_u64 wr_id;
	__u32 qp_num;
	__u32 byte_len;
	union {
		__u32 inv_rkey;	/* with KIWI_UCQE_F_WITH_INV */
		__u32 imm_data;	/* with KIWI_UCQE_F_WITH_IMM, host order */
	};
	__u8 opcode;		/* enum ib_uverbs_wc_opcode */
	__u8 status;		/* enum ib_wc_status (= enum ibv_wc_status) */
	__u8 flags;		/* KIWI_UCQE_F_* */
	__u8 rsvd;
};

/* ------------------------------------------------------------------ */
/* Responses                                                           */
/* ------------------------------------------------------------------ */

/* Response to ibv_get_context(). */
struct kiwi_uresp_alloc_ctx {
	__u32 abi_version;	/* KIWI_ABI_VERSION of the running kernel */
	__u32 dev_id;		/* device index, for diagnostics */
	__u32 max_inline;	/* KIWI_MAX_INLINE */
	__u32 reserved;
};

/* Response to ibv_create_cq() and ibv_resize_cq(). */
struct kiwi_uresp_create_cq {
	__u32 cq_id;
	__u32 num_cqe;		/* ring slots (actual capacity) */
	__aligned_u64 mmap_offset;	/* CQ ring (a new one after resize) */
	__aligned_u64 mmap_len;
	__u32 cqe_size;		/* sizeof(struct kiwi_ucqe) */
	__u32 reserved;
};

/* Response to ibv_create_qp(). */
struct kiwi_uresp_create_qp {
	__u32 qp_id;
	__u32 num_sqe;		/* send queue slots */
	__u32 num_rqe;		/* receive queue slots (0 with SRQ) */
	__u32 sq_stride;	/* bytes per send queue slot */
	__u32 rq_stride;	/* bytes per receive queue slot (0 with SRQ) */
	__u32 flags;		/* KIWI_UQP_F_*; 0 from kernels before them */
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 sq_mmap_len;
	__aligned_u64 rq_mmap_offset;	/* 0 with SRQ */
	__aligned_u64 rq_mmap_len;	/* 0 with SRQ */
};

/* kiwi_uresp_create_qp.flags */
enum {
	/* WRs with immediate data may be posted (module parameter
	 * rfc7306_imm was set when the QP was created). */
	KIWI_UQP_F_IMM = 1 << 0,
	/* Atomic WRs may be posted (module parameter rfc7306_atomics). */
	KIWI_UQP_F_ATOMIC = 1 << 1,
	/* LOCAL_INV and BIND_MW WQEs may be posted (memory windows). */
	KIWI_UQP_F_MW = 1 << 2,
};

/* Response to ibv_create_srq(). */
struct kiwi_uresp_create_srq {
	__u32 srq_id;
	__u32 num_rqe;		/* ring slots */
	__u32 stride;		/* bytes per slot */
	__u32 reserved;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_len;
};

#endif /* KIWI_ABI_USER_H */
