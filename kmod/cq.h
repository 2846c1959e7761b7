/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: completion queues (cq.c) -- the CQ and its entries, and the call
 * that queues one.  Included by cq.c, by the files that complete work
 * requests (qpev.c, qpverbs.c, sq.c, rq.c, rxops.c) and by main.c (the
 * object's size).
 * The CQ verbs are in verbs.h.
 */
#ifndef KIWI_CQ_H
#define KIWI_CQ_H

#include "queue.h"
#include "ring.h"

/* Completion queue entry, kept compact; converted to ib_wc on poll. */
struct kiwi_cqe {
	u64 wr_id;
	struct ib_qp *qp;
	u32 byte_len;
	u32 ex;				/* invalidated rkey or immediate */
	u8 opcode;			/* enum ib_wc_opcode */
	u8 status;			/* enum ib_wc_status */
	u8 flags;			/* IB_WC_* flags */
	u8 pad;
};

/*
 * A CQ of a kernel consumer is a private queue of kiwi_cqe (queue.h); a
 * user CQ is a mapped ring of struct kiwi_ucqe that the provider polls
 * directly.  Both under lock.
 */
struct kiwi_cq {
	struct ib_cq ibcq;
	spinlock_t lock;
	struct kiwi_cqe *cqes;		/* kernel CQs: the entries, */
	struct kiwi_q q;		/* and their index */
	struct kiwi_ring uring;		/* user CQs (uring.buf != NULL) */
	u8 armed;			/* IB_CQ_SOLICITED / IB_CQ_NEXT_COMP */
	bool overflow;
};

static inline struct kiwi_cq *to_kcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_cq, ibcq);
}

/* cq.c: queueing a completion */
int kiwi_cq_add(struct kiwi_cq *cq, const struct kiwi_cqe *cqe,
		bool solicited);

#endif /* KIWI_CQ_H */
