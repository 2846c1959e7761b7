/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the transmit path as the rest of the module sees it -- each
 * QP's transmit side (struct kiwi_tx, with the queue of inbound READ
 * and Atomic requests it answers) and the calls of tx.c (DDP and RDMAP:
 * which message, its headers, the work loop) and fpdu.c (MPA: framing,
 * CRC, the push to TCP) that the QP layer, the receive path and the CM
 * make.  qp.h includes it for struct kiwi_qp; the files that call tx.c
 * or fpdu.c get it from there.
 *
 * What only tx.c and fpdu.c share -- fpdu.c's FPDU builder, its header
 * slot and page batches -- is in fpdu.h, not here: every file that
 * sees a QP sees this header, and the builder is for tx.c alone.
 */
#ifndef KIWI_TX_H
#define KIWI_TX_H

#include <kiwi/iwarp.h>

#include "kiwi.h"
#include "queue.h"

struct kiwi_qp;

/*
 * An inbound RDMA READ request awaiting its response, or an executed
 * RFC 7306 atomic awaiting its Atomic Response: one queue, so responses
 * leave in the order the requests came (RFC 7306 section 5: atomic and
 * READ responses in request order), and one IRD for both.
 */
struct kiwi_irqe {
	u32 src_stag;
	u32 sink_stag;
	u64 src_to;
	u64 sink_to;
	u32 len;
	u32 sent;
	bool atomic;			/* an Atomic Response: */
	u32 req_id;
	u64 orig;			/* the value before the operation */
};

struct kiwi_tx_batch;

/*
 * A QP's transmit side (tx.c, fpdu.c): one work item serialises all
 * sending; inbound READ requests wait in irq until answered (a queue of
 * queue.h: the receive path its one producer, the sender holding owned
 * its one consumer, under irq_lock).
 *
 * Who writes it: tx.c and fpdu.c alone (and kiwi_tx_terminate() below,
 * inline for qpev.c).  The other layers read only await_peer, and ask
 * for the rest: init, free and stop (create, destroy), reset, connect
 * and disconnect (the QP's state changes, qp.c), the RTR repeat (cm.c).
 */
struct kiwi_tx {
	struct work_struct work;
	wait_queue_head_t idle;		/* woken when work finds no more */
	int cpu;			/* where work runs: keeps order */
	struct mutex mutex;		/* one sender: worker or doorbell */
	unsigned long owned;		/* bit 0: a sender is active */
	spinlock_t irq_lock;
	struct kiwi_irqe *irq;		/* inbound READs: the entries, */
	struct kiwi_q irq_q;		/* their index (IRD rounded up), */
	u32 irq_ird;			/* and the IRD agreed; 0 before */
	u32 msn[KIWI_QN_COUNT];		/* next MSN per untagged queue */
	u32 term_ctrl;			/* TERMINATE to send, if term_pending */
	bool term_pending;
	u8 rtr_pending;			/* KIWI_MPA_RTR_* message to send */
	bool await_peer;		/* responder: peer's first FPDU due */
	u64 t_bell;			/* ns: a doorbell no WQE answered yet */
	struct kiwi_tx_batch *batch;	/* FPDUs gathered for one send */
};

/* tx.c, fpdu.c: transmit (fpdu.h has what only the two share) */
int kiwi_tx_init(struct kiwi_qp *qp);
void kiwi_tx_free(struct kiwi_qp *qp);
void kiwi_tx_reset(struct kiwi_qp *qp);
int kiwi_tx_irq_alloc(struct kiwi_qp *qp, u32 ird);
void kiwi_tx_connect(struct kiwi_qp *qp, u8 rtr, bool responder);
void kiwi_tx_disconnect(struct kiwi_qp *qp, struct socket *sock);
void kiwi_tx_stop(struct kiwi_qp *qp);
void kiwi_tx_rtr_repeat(struct kiwi_qp *qp);
void kiwi_tx_kick(struct kiwi_qp *qp);
void kiwi_tx_drop_cpu(struct kiwi_qp *qp);
void kiwi_tx_bell(struct kiwi_qp *qp);
void kiwi_tx_start(struct kiwi_qp *qp);
void kiwi_tx_peer_spoke(struct kiwi_qp *qp);
void kiwi_tx_now(struct kiwi_qp *qp);
bool kiwi_tx_irq_full(struct kiwi_qp *qp);
void kiwi_tx_queue_resp(struct kiwi_qp *qp, const struct kiwi_irqe *e);
void kiwi_tx_respond(struct kiwi_qp *qp, struct sock *sk);
void kiwi_tx_work(struct work_struct *work);

/*
 * The QP moved to TERMINATE for a local error (qpev.c, any context, no
 * lock): the TERMINATE @ctrl goes out before anything else; the caller
 * has the sender kicked.  Inline, as qpev.c sits below tx.c and calls
 * none of it.
 */
static inline void kiwi_tx_terminate(struct kiwi_tx *tx, u32 ctrl)
{
	tx->term_ctrl = ctrl;
	/* A sender running now may see it: term_ctrl first (tx.c). */
	smp_store_release(&tx->term_pending, true);
}

#endif /* KIWI_TX_H */
