/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the queue rings -- struct kiwi_ring (the format of kiwi-abi.h,
 * shared with the provider for user objects), the helpers that alone
 * touch its shared indices, and ring.c's calls.  Included by ring.c,
 * and by cq.h and qp.h for the rings they embed (so by cq.c, qpev.c,
 * qpverbs.c, sq.c, rq.c and post.c, which use them).  The mmap entry points are in
 * verbs.h.
 */
#ifndef KIWI_RING_H
#define KIWI_RING_H

#include "kiwi.h"

/*
 * A queue ring: the kiwi_ring_ctl block of kiwi-abi.h, then @size slots
 * of @stride bytes.  Mapped into the process for user objects.
 */
struct kiwi_ring {
	void *buf;
	struct kiwi_ring_ctl *ctl;	/* == buf */
	u32 size;			/* slots; power of two */
	u32 stride;			/* bytes per slot */
	struct rdma_user_mmap_entry *mentry;	/* user rings only */
};

static inline void *kiwi_ring_slot(const struct kiwi_ring *r, u32 idx)
{
	return r->buf + KIWI_RING_CTL_SIZE +
	       (size_t)(idx & (r->size - 1)) * r->stride;
}

/*
 * The ring's shared indices and status words are touched only through
 * these and ring.c (kiwi_ring_avail()): each index has one writer (the
 * table in kiwi-abi.h), published with release semantics after the
 * slots it covers, and read with acquire semantics before the slots.
 * The other side is a process and may write anything at any time, so
 * every value read here is bounded by the caller before use.
 */

/* We consumed up to @cons (SQ, RQ, SRQ): the slots are the producer's. */
static inline void kiwi_ring_consumed(struct kiwi_ring *r, u32 cons)
{
	/* Pairs with the producer's acquire of cons (provider: space()). */
	smp_store_release(&r->ctl->cons, cons);
}

/* We produced up to @prod (CQ; a kernel QP's own SQ and RQ). */
static inline void kiwi_ring_produced(struct kiwi_ring *r, u32 prod)
{
	/*
	 * Pairs with the consumer's acquire of prod: the provider's CQ
	 * ready(), or kiwi_ring_avail() for a kernel QP's SQ and RQ.
	 */
	smp_store_release(&r->ctl->prod, prod);
}

/* The producer index of a ring we produce into: ours, so no barrier. */
static inline u32 kiwi_ring_own_prod(const struct kiwi_ring *r)
{
	return r->ctl->prod;
}

/*
 * Entries of a ring we produce into that the consumer has not taken,
 * given our @prod; false for a consumer index that cannot be true.
 */
static inline bool kiwi_ring_unconsumed(const struct kiwi_ring *r, u32 prod,
					u32 *n)
{
	/* Pairs with the consumer's release of cons (provider: consume()). */
	*n = prod - smp_load_acquire(&r->ctl->cons);
	return *n <= r->size;
}

/* Whether the consumer has caught up with @prod (no barrier: a hint). */
static inline bool kiwi_ring_drained(const struct kiwi_ring *r, u32 prod)
{
	return READ_ONCE(r->ctl->cons) == prod;
}

static inline void kiwi_ring_set_flags(struct kiwi_ring *r, u32 flags)
{
	WRITE_ONCE(r->ctl->flags, flags);
}

static inline u32 kiwi_ring_flags(const struct kiwi_ring *r)
{
	return READ_ONCE(r->ctl->flags);
}

/* SQ rings also tell the provider the QP state (enum kiwi_uqp_state). */
static inline void kiwi_ring_set_qp_state(struct kiwi_ring *r, u32 state)
{
	WRITE_ONCE(r->ctl->qp_state, state);
}

/* ring.c: queue rings and their mapping */
int kiwi_ring_init(struct kiwi_ring *r, struct ib_udata *udata, u32 size,
		   u32 stride);
void kiwi_ring_destroy(struct kiwi_ring *r);
u64 kiwi_ring_mmap_offset(const struct kiwi_ring *r);
u64 kiwi_ring_mmap_len(const struct kiwi_ring *r);
bool kiwi_ring_avail(const struct kiwi_ring *r, u32 cons, u32 *n);

#endif /* KIWI_RING_H */
