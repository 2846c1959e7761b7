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
};

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

#endif /* KIWI_WQE_H */
