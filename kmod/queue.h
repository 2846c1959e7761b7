/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: struct kiwi_q, the one index type of every queue, and the
 * ordering rules of the indices only the module sees.  A queue is an
 * array of 2^n entries and a struct kiwi_q beside it:
 *  - the queues only the module sees: a kernel consumer's CQ (cq.c) and
 *    the inbound READ and Atomic queue (tx.c);
 *  - the rings of kiwi-abi.h (SQ, RQ, SRQ, user CQ): the struct kiwi_q
 *    in each struct kiwi_ring is the kernel's own copy of the indices
 *    it owns (of a user ring, one of the two: struct kiwi_ring says
 *    which), moved only by ring.h's helpers.  What is shared with the
 *    process (its index, the copy of ours it reads, the slots) follows
 *    ring.h's rules, which are not repeated here.
 *
 * prod and cons run free and wrap; entries [cons, prod) are queued, the
 * one of index i at i & mask.  How the two sides are ordered, once for
 * every struct kiwi_q:
 *  - Entries and indices are written, and entries read, only under the
 *    lock of the queue's owner (cq->lock, tx.irq_lock; a ring's, ring.h).
 *    The lock orders an entry against the index that covers it: no
 *    barriers here.
 *  - Outside it, only the queue's one producer or its one consumer may
 *    look, and only at the number queued (kiwi_q_peek()): its own index
 *    cannot move meanwhile, the other is read once, so the answer is a
 *    hint between 0 and the size -- never too low for the producer,
 *    never too high for the consumer.  Writers update the indices with
 *    WRITE_ONCE() for this.  (Nothing peeks at a ring's.)
 */
#ifndef KIWI_QUEUE_H
#define KIWI_QUEUE_H

#include <linux/compiler.h>
#include <linux/types.h>

struct kiwi_q {
	u32 prod;			/* next entry to fill */
	u32 cons;			/* oldest entry queued */
	u32 mask;			/* entries - 1; a power of two */
};

/* Empty, for an array of @size entries, a power of two. */
static inline void kiwi_q_init(struct kiwi_q *q, u32 size)
{
	WRITE_ONCE(q->prod, 0);
	WRITE_ONCE(q->cons, 0);
	q->mask = size - 1;
}

/*
 * The @count entries queued were copied to indices 0 .. @count - 1 of a
 * new array of @size entries (a power of two, at least @count).
 */
static inline void kiwi_q_moved(struct kiwi_q *q, u32 size, u32 count)
{
	kiwi_q_init(q, size);
	WRITE_ONCE(q->prod, count);
}

static inline u32 kiwi_q_size(const struct kiwi_q *q)
{
	return q->mask + 1;
}

/* Entries queued (under the owner's lock). */
static inline u32 kiwi_q_count(const struct kiwi_q *q)
{
	return q->prod - q->cons;
}

/* Entries queued, without the lock: the hint the comment above allows. */
static inline u32 kiwi_q_peek(const struct kiwi_q *q)
{
	return READ_ONCE(q->prod) - READ_ONCE(q->cons);
}

static inline bool kiwi_q_full(const struct kiwi_q *q)
{
	return kiwi_q_count(q) == kiwi_q_size(q);
}

/* The array index of the oldest entry (if any). */
static inline u32 kiwi_q_head(const struct kiwi_q *q)
{
	return q->cons & q->mask;
}

/* The array index of the @i-th entry from the oldest. */
static inline u32 kiwi_q_at(const struct kiwi_q *q, u32 i)
{
	return (q->cons + i) & q->mask;
}

/* The array index the next entry goes to (if not full). */
static inline u32 kiwi_q_tail(const struct kiwi_q *q)
{
	return q->prod & q->mask;
}

/* The entry at kiwi_q_tail() is written: it is queued.  The new prod. */
static inline u32 kiwi_q_push(struct kiwi_q *q)
{
	u32 prod = q->prod + 1;

	WRITE_ONCE(q->prod, prod);
	return prod;
}

/* The entry at kiwi_q_head() is taken: its slot is free.  The new cons. */
static inline u32 kiwi_q_pop(struct kiwi_q *q)
{
	u32 cons = q->cons + 1;

	WRITE_ONCE(q->cons, cons);
	return cons;
}

#endif /* KIWI_QUEUE_H */
