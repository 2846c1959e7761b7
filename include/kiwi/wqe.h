/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: validation of the work queue entries a process writes into its
 * mapped send and receive rings (layout: include/uapi/rdma/kiwi-abi.h).
 *
 * The process can rewrite a slot at any moment, so the kernel copies
 * each part of a WQE out of the ring exactly once -- the header, then
 * the scatter/gather list or inline data it announces -- and checks the
 * copies with these functions before it trusts a single field.  A check
 * that passes guarantees that the announced list or inline data lies
 * inside the ring slot and that the lengths add up without overflow;
 * the opcode's meaning and the STags are the kernel's to check later.
 *
 * Compiles in the kernel and in user space (selftests/fuzz/fuzz_wqe.c).
 */
#ifndef KIWI_WQE_H
#define KIWI_WQE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#endif
#include <rdma/kiwi-abi.h>

/* What one queue's slots may hold, fixed when the queue is created. */
struct kiwi_wqe_limits {
	__u32 stride;		/* bytes per slot, header included */
	__u32 max_sge;		/* <= KIWI_MAX_SGE */
	__u32 max_inline;	/* <= KIWI_MAX_INLINE (send queue only) */
};

enum kiwi_wqe_err {
	KIWI_WQE_OK = 0,
	KIWI_WQE_BAD_FLAGS,	/* unknown flag bits */
	KIWI_WQE_BAD_INLINE,	/* inline on a READ, with SGEs, too long */
	KIWI_WQE_BAD_SGE_COUNT,	/* more SGEs than the queue or op allows */
	KIWI_WQE_OUTSIDE_SLOT,	/* announced payload beyond the slot */
	KIWI_WQE_LEN_OVERFLOW,	/* SGE lengths add up beyond 2^32 - 1 */
	KIWI_WQE_BAD_ACCESS,	/* a bind asks for rights a window has not */
	KIWI_WQE_BAD_STAG,	/* a bind's new STag is another window's */
	KIWI_WQE_RANGE_WRAP,	/* a bind's addr + length wraps */
};

/*
 * The access bits of struct kiwi_ubind: the kernel's IB_ACCESS_* values
 * (kmod/sq.c checks that they agree), which are libibverbs' too.  A
 * window grants remote rights only; LOCAL_WRITE is accepted, as the
 * verbs pass the region's flags through, and means nothing here.
 */
#define KIWI_UBIND_LOCAL_WRITE		(1u << 0)
#define KIWI_UBIND_REMOTE_WRITE		(1u << 1)
#define KIWI_UBIND_REMOTE_READ		(1u << 2)
#define KIWI_UBIND_REMOTE_ATOMIC	(1u << 3)
#define KIWI_UBIND_ZERO_BASED		(1u << 5)
#define KIWI_UBIND_ACCESS_ALL                                                \
	(KIWI_UBIND_LOCAL_WRITE | KIWI_UBIND_REMOTE_WRITE |                   \
	 KIWI_UBIND_REMOTE_READ | KIWI_UBIND_REMOTE_ATOMIC |                  \
	 KIWI_UBIND_ZERO_BASED)

/*
 * A send WQE header, already copied out of the ring.  @max_sge_op is
 * what the opcode allows (1 for a READ: one sink), @no_inline whether
 * the opcode forbids inline data (a READ has nothing to send).
 */
static inline enum kiwi_wqe_err
kiwi_usqe_check(const struct kiwi_usqe *h, const struct kiwi_wqe_limits *lim,
		__u32 max_sge_op, bool no_inline)
{
	__u32 room = lim->stride > sizeof(*h) ? lim->stride - sizeof(*h) : 0;

	if (h->flags & ~KIWI_UWR_F_ALL)
		return KIWI_WQE_BAD_FLAGS;
	if (h->flags & KIWI_UWR_F_INLINE) {
		if (no_inline || h->num_sge || h->length > lim->max_inline ||
		    h->length > KIWI_MAX_INLINE)
			return KIWI_WQE_BAD_INLINE;
		return h->length > room ? KIWI_WQE_OUTSIDE_SLOT : KIWI_WQE_OK;
	}
	if (h->num_sge > lim->max_sge || h->num_sge > max_sge_op ||
	    h->num_sge > KIWI_MAX_SGE)
		return KIWI_WQE_BAD_SGE_COUNT;
	if (h->num_sge * sizeof(struct kiwi_usge) > room)
		return KIWI_WQE_OUTSIDE_SLOT;
	return KIWI_WQE_OK;
}

/* A receive WQE header, already copied out of the ring. */
static inline enum kiwi_wqe_err
kiwi_urqe_check(const struct kiwi_urqe *h, const struct kiwi_wqe_limits *lim)
{
	__u32 room = lim->stride > sizeof(*h) ? lim->stride - sizeof(*h) : 0;

	if (h->num_sge > lim->max_sge || h->num_sge > KIWI_MAX_SGE)
		return KIWI_WQE_BAD_SGE_COUNT;
	if (h->num_sge * sizeof(struct kiwi_usge) > room)
		return KIWI_WQE_OUTSIDE_SLOT;
	return KIWI_WQE_OK;
}

/* The total length of @n SGEs (copied out of the ring) into @bytes. */
static inline enum kiwi_wqe_err kiwi_usge_total(const struct kiwi_usge *sge,
						__u32 n, __u32 *bytes)
{
	__u32 i, sum = 0;

	for (i = 0; i < n; i++) {
		if (sum + sge[i].length < sum)
			return KIWI_WQE_LEN_OVERFLOW;
		sum += sge[i].length;
	}
	*bytes = sum;
	return KIWI_WQE_OK;
}

/*
 * A BIND_MW WQE's payload, struct kiwi_ubind, fits in a slot of @stride
 * bytes: it must before it is copied out.
 */
static inline bool kiwi_ubind_in_slot(__u32 stride)
{
	return stride >= sizeof(struct kiwi_usqe) + sizeof(struct kiwi_ubind);
}

/*
 * A BIND_MW WQE, header and payload already copied out of the ring (the
 * header passed kiwi_usqe_check() for an opcode without SGEs or inline
 * data).  The header names the window (rkey), its new STag (inv_rkey)
 * and where the window starts (raddr); the payload its length, the
 * region's lkey and the rights.  What is checked here needs no kernel
 * state: the rights are ones a window can have, the new STag keeps the
 * window's index (only its key may change: an STag names one window),
 * and the range does not wrap.  The kernel checks the rest: that the
 * window and region exist and belong together, the window's type
 * (zero-based and length 0 depend on it), that the key changes, and
 * that the region holds the range.
 */
static inline enum kiwi_wqe_err kiwi_ubind_check(const struct kiwi_usqe *h,
						 const struct kiwi_ubind *ub)
{
	if (ub->access & ~KIWI_UBIND_ACCESS_ALL)
		return KIWI_WQE_BAD_ACCESS;
	if ((h->inv_rkey >> 8) != (h->rkey >> 8))
		return KIWI_WQE_BAD_STAG;
	if (h->raddr + ub->length < h->raddr)
		return KIWI_WQE_RANGE_WRAP;
	return KIWI_WQE_OK;
}

#endif /* KIWI_WQE_H */
