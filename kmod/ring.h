/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the queue rings -- struct kiwi_ring (the format of kiwi-abi.h,
 * shared with the provider for user objects, and the kernel's own
 * indices), the helpers that alone move its indices, the rings'
 * ordering rules, and ring.c's calls.  Included by ring.c, and by cq.h
 * and qp.h for the rings they embed (so by cq.c, qpev.c, qpverbs.c,
 * sq.c, rq.c and post.c, which use them).  The mmap entry points are
 * in verbs.h.
 */
#ifndef KIWI_RING_H
#define KIWI_RING_H

#include "kiwi.h"
#include "queue.h"

/*
 * A queue ring: the kiwi_ring_ctl block of kiwi-abi.h, then 2^n slots of
 * @stride bytes.  Mapped into the process for user objects.  @q is the
 * kernel's own copy of each index it owns (queue.h): q.cons of the rings
 * it consumes (SQ, RQ, SRQ), q.prod of those it produces into (user CQ;
 * a kernel QP's SQ and RQ, a kernel SRQ, where the kernel is both sides
 * and q has both); the other side's index is only ever read from the
 * shared page.  q.mask is the slot count - 1.
 */
struct kiwi_ring {
	void *buf;
	struct kiwi_ring_ctl *ctl;	/* == buf */
	struct kiwi_q q;		/* our indices; see above */
	u32 stride;			/* bytes per slot */
	struct rdma_user_mmap_entry *mentry;	/* user rings only */
};

static inline u32 kiwi_ring_size(const struct kiwi_ring *r)
{
	return kiwi_q_size(&r->q);
}

/* The slot of free-running index @idx. */
static inline void *kiwi_ring_slot(const struct kiwi_ring *r, u32 idx)
{
	size_t off = (size_t)(idx & r->q.mask) * r->stride;

	return r->buf + KIWI_RING_CTL_SIZE + off;
}

/*
 * How the rings are ordered, once for all of them; struct kiwi_q's own
 * rules are queue.h's and not repeated here.
 *  - r->q is the ring owner's alone, read and written under its lock
 *    (qp->sq_lock, qp->rq_lock, srq->lock, cq->lock): never peeked at,
 *    never read back from the shared page.
 *  - The shared indices and status words are touched only through the
 *    helpers below.  Each index has one writer (the table in
 *    kiwi-abi.h); ours are published from r->q with release semantics
 *    after the slots they cover, the other side's read with acquire
 *    semantics before its slots are.
 *  - The other side is a process and may write anything at any time:
 *    an index read from the page is checked against the ring's size
 *    here (kiwi_ring_avail(), kiwi_ring_unconsumed()) before use, and a
 *    slot is copied out once and validated by the caller.
 */

/* Our consumer index: the oldest slot not consumed (SQ, RQ, SRQ). */
static inline u32 kiwi_ring_cons(const struct kiwi_ring *r)
{
	return r->q.cons;
}

/*
 * How many entries the producer claims are in the ring beyond our
 * consumer index (SQ, RQ, SRQ).  False for a claim that cannot be true,
 * i.e. a corrupted producer index.
 */
static inline bool kiwi_ring_avail(const struct kiwi_ring *r, u32 *n)
{
	/*
	 * Pairs with the producer's release of prod: the provider's
	 * publish(), or kiwi_ring_produce() for a kernel QP's SQ and RQ.
	 */
	*n = smp_load_acquire(&r->ctl->prod) - r->q.cons;
	return *n <= kiwi_ring_size(r);
}

/* We copied the slot at kiwi_ring_cons(): it is the producer's again. */
static inline void kiwi_ring_consume(struct kiwi_ring *r)
{
	u32 cons = kiwi_q_pop(&r->q);

	/* Pairs with the producer's acquire of cons (provider: space()). */
	smp_store_release(&r->ctl->cons, cons);
}

/* Where our next entry goes (user CQ; kernel QP's SQ and RQ, kernel SRQ). */
static inline u32 kiwi_ring_prod(const struct kiwi_ring *r)
{
	return r->q.prod;
}

/* We wrote the slot at kiwi_ring_prod(): the consumer may take it. */
static inline void kiwi_ring_produce(struct kiwi_ring *r)
{
	u32 prod = kiwi_q_push(&r->q);

	/*
	 * Pairs with the consumer's acquire of prod: the provider's CQ
	 * ready(), or kiwi_ring_avail() for a kernel QP's SQ and RQ.
	 */
	smp_store_release(&r->ctl->prod, prod);
}

/*
 * A new ring (kiwi_ring_init()) whose slots 0 .. @count - 1 we filled:
 * a resized CQ's entries, moved over.
 */
static inline void kiwi_ring_moved(struct kiwi_ring *r, u32 count)
{
	kiwi_q_moved(&r->q, kiwi_ring_size(r), count);
	/* As in kiwi_ring_produce(): the slots before their index. */
	smp_store_release(&r->ctl->prod, count);
}

/*
 * Entries of a ring we produce into that the consumer has not taken;
 * false for a consumer index that cannot be true.
 */
static inline bool kiwi_ring_unconsumed(const struct kiwi_ring *r, u32 *n)
{
	/* Pairs with the consumer's release of cons (provider: consume()). */
	*n = r->q.prod - smp_load_acquire(&r->ctl->cons);
	return *n <= kiwi_ring_size(r);
}

/* Whether the consumer has caught up with us (no barrier: a hint). */
static inline bool kiwi_ring_drained(const struct kiwi_ring *r)
{
	return READ_ONCE(r->ctl->cons) == r->q.prod;
}

/*
 * Entries queued in a ring the kernel both produces into and consumes
 * (a kernel QP's SQ and RQ, a kernel SRQ): both indices are in r->q, so
 * nothing is read from the page.
 */
static inline u32 kiwi_ring_queued(const struct kiwi_ring *r)
{
	return kiwi_q_count(&r->q);
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

#endif /* KIWI_RING_H */
