// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the QP's state word and what the engines report to their QP --
 * the one writer of the state (kiwi_qp_next(), driven by the table of
 * include/kiwi/qpfsm.h) and the one event function the data path calls
 * (kiwi_qp_event(): a local protocol error, a failed TCP stream, the
 * peer's TERMINATE, a completion lost to a full CQ).
 *
 * This file sits below the engines (rx.c, rxterm.c, tx.c, sq.c, rq.c)
 * and calls none of them, nor qp.c or the CM: an event changes the state
 * and records its TERMINATE or the peer's status at once, and leaves
 * every action that reaches up (flush the receive queue, wake the
 * sender, tell the consumer, abort the connection) to the QP's work
 * item, whose handler is qp.c's.  The engines report from the socket
 * callback, rx_work, the transmit worker and with queue spinlocks held:
 * nothing here sleeps.
 */
#include "cq.h"
#include "qp.h"
#include "trace.h"

/*
 * Tell the provider the QP state: it decides ENOTCONN and doorbells from
 * it.  Out of RTS nothing transmits, so BUSY is cleared as well; the
 * barrier orders both before any flush that follows, which pairs with
 * the provider's "publish prod, full barrier, read state and BUSY": a
 * WQE the flush misses is seen to need a doorbell.
 */
void kiwi_qp_publish_state(struct kiwi_qp *qp)
{
	enum kiwi_qp_state state = kiwi_qp_state(qp);

	kiwi_ring_set_qp_state(&qp->sq_ring, state);
	if (state != KIWI_QP_RTS)
		kiwi_ring_set_flags(&qp->sq_ring, 0);
	/* Pairs with the provider's fences in sq_published(), post_recv(). */
	smp_mb();
}

/* The table's IB states are the kernel's (and the uverbs ABI's). */
#define KIWI_IBS_IS(s)	((int)KIWI_IBS_##s == (int)IB_QPS_##s)
static_assert(KIWI_IBS_IS(RESET) && KIWI_IBS_IS(INIT) && KIWI_IBS_IS(RTR) &&
	      KIWI_IBS_IS(RTS) && KIWI_IBS_IS(SQD) && KIWI_IBS_IS(SQE) &&
	      KIWI_IBS_IS(ERR));

/*
 * @qp went from iWARP state @from to @to on @ev: the kiwi_qp_state
 * tracepoint and, with dynamic debug on (module kiwi +p), a kernel log
 * line.
 */
static void kiwi_qp_state_event(struct kiwi_qp *qp, enum kiwi_qp_event ev,
				int from, int to)
{
	if (from == to)
		return;
	trace_kiwi_qp_state(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num,
			    from, to, ev);
	kiwi_qp_dbg(qp, "%s -> %s on %s\n", kiwi_qp_state_name(from),
		    kiwi_qp_state_name(to), kiwi_qp_event_name(ev));
}

/*
 * Event @ev is illegal for @qp in @state: counted in
 * qp_illegal_transitions, which counts exactly these refusals.
 */
void kiwi_qp_refused(struct kiwi_qp *qp, unsigned int ev, int state)
{
	kiwi_qp_stat_add(qp, KIWI_STAT_QP_BAD_TRANSITION, 1);
	kiwi_qp_dbg(qp, "%s refused in %s\n", kiwi_qp_event_name(ev),
		    kiwi_qp_state_name(state));
}

/*
 * The one function that changes a QP's state: event @ev, looked up for
 * the current state in the table (include/kiwi/qpfsm.h) and applied in
 * one atomic step.  Returns the actions (KIWI_QPA_*) the transition asks
 * the caller to perform -- 0 if the table ignores @ev in this state --
 * or -EINVAL, counted, if the table refuses it.  The modify verbs' and
 * the CM's events hold state_lock; the data path's come from any
 * context, and the compare-and-exchange orders them.
 */
int kiwi_qp_next(struct kiwi_qp *qp, enum kiwi_qp_event ev)
{
	u32 old = READ_ONCE(qp->st);
	struct kiwi_qpfsm_step step;
	enum kiwi_qp_state cur;

	if (kiwi_qpfsm_locked(ev))
		lockdep_assert_held(&qp->state_lock);
	do {
		cur = old & 0xff;
		step = kiwi_qpfsm(cur, ev);
		if (!step.legal) {
			kiwi_qp_refused(qp, ev, cur);
			return -EINVAL;
		}
		if (!(step.act & KIWI_QPA_WRITE))
			return 0;
	} while (!try_cmpxchg(&qp->st, &old, KIWI_QP_ST(step.next, step.ib)));
	kiwi_qp_state_event(qp, ev, cur, step.next);
	kiwi_qp_publish_state(qp);
	return step.act;
}

/* Status for the requester's failed WR, from the peer's TERMINATE. */
static enum ib_wc_status kiwi_term_status(u32 ctrl)
{
	u8 layer = ctrl >> KIWI_TERM_LAYER_SHIFT;
	u8 etype = (ctrl >> KIWI_TERM_ETYPE_SHIFT) & 0xf;

	if ((layer == KIWI_TL_RDMAP && etype == KIWI_RT_PROTECTION) ||
	    (layer == KIWI_TL_DDP && etype == KIWI_DT_TAGGED))
		return IB_WC_REM_ACCESS_ERR;
	if (layer == KIWI_TL_DDP && etype == KIWI_DT_UNTAGGED)
		return IB_WC_REM_INV_REQ_ERR;
	return IB_WC_REM_OP_ERR;
}

/*
 * Fail the oldest transmitted WR with @status (the peer's TERMINATE).
 * Now, not later: the transmit worker flushes the send queue as soon as
 * it sees the QP out of RTS, and the WR must carry the peer's reason,
 * not a flush.
 */
static void kiwi_qp_fail_oldest(struct kiwi_qp *qp, enum ib_wc_status status)
{
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sq_slot *slot = kiwi_sq_at(qp, i);

		if (slot->state != KIWI_SQE_DONE) {
			slot->state = KIWI_SQE_DONE;
			slot->status = status;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* Leave the actions in @todo (BIT(KIWI_QPT_*)) to the QP's work item. */
static void kiwi_qp_later(struct kiwi_qp *qp, unsigned long todo)
{
	if (!todo)
		return;
	atomic_long_or(todo, &qp->ev_todo);
	/*
	 * kiwi_wq, not system_wq: it has WQ_MEM_RECLAIM, and a kernel
	 * ULP's ib_drain_qp() during writeback (NVMe-oF, NFS over RDMA)
	 * waits for the flushes this work starts.
	 */
	queue_work(kiwi_wq, &qp->ev_work);
}

/*
 * The data path's error @ev (a state machine event): leave RTS or
 * CLOSING for TERMINATE -- nothing if the QP had already left (the first
 * error won) or was never connected -- and now record the TERMINATE
 * @term_ctrl to send, or fail the oldest WR with the peer's status.  The
 * rest of what the table asks (flush the RQ, wake the sender for the
 * TERMINATE, QP_FATAL, the CM's abort) is left to the QP's work item.
 */
static void kiwi_qp_fail(struct kiwi_qp *qp, enum kiwi_qp_event ev,
			 u32 term_ctrl)
{
	unsigned long todo = 0;
	int act = kiwi_qp_next(qp, ev);

	if (act <= 0)
		return;
	if (act & KIWI_QPA_FLUSH_RQ)
		todo |= BIT(KIWI_QPT_FLUSH_RQ);
	if (act & KIWI_QPA_SEND_TERM) {
		kiwi_qp_dbg(qp, "TERMINATE to send: layer %u type %u code 0x%02x\n",
			    term_ctrl >> KIWI_TERM_LAYER_SHIFT,
			    (term_ctrl >> KIWI_TERM_ETYPE_SHIFT) & 0xf,
			    (term_ctrl >> KIWI_TERM_ECODE_SHIFT) & 0xff);
		kiwi_tx_terminate(&qp->tx, term_ctrl);
		todo |= BIT(KIWI_QPT_KICK_TX);
	}
	if (act & KIWI_QPA_FAIL_WR) {
		kiwi_qp_dbg(qp, "peer's TERMINATE: the oldest WR sent fails: %s\n",
			    ib_wc_status_msg(kiwi_term_status(term_ctrl)));
		kiwi_qp_fail_oldest(qp, kiwi_term_status(term_ctrl));
	}
	if (act & KIWI_QPA_FATAL)
		todo |= BIT(KIWI_QPT_FATAL);
	if (act & KIWI_QPA_ABORT)
		todo |= BIT(KIWI_QPT_ABORT);
	kiwi_qp_later(qp, todo);
}

/*
 * What the engines report to their QP (any context, no sleeping; queue
 * spinlocks may be held): a protocol error found locally, to answer
 * with the TERMINATE @term_ctrl; the TCP stream failed; the peer's
 * TERMINATE @term_ctrl arrived (kiwi_qp_fail()); a completion was lost
 * to a full CQ, for which the QP's work item fails the QP.
 */
void kiwi_qp_event(struct kiwi_qp *qp, enum kiwi_qp_ev ev, u32 term_ctrl)
{
	static const u8 fsm_ev[] = {
		[KIWI_QP_EV_LOCAL_ERROR] = KIWI_QPE_LOCAL_ERROR,
		[KIWI_QP_EV_LLP_ERROR] = KIWI_QPE_LLP_ERROR,
		[KIWI_QP_EV_PEER_TERM] = KIWI_QPE_TERMINATE_RECEIVED,
	};

	if (ev == KIWI_QP_EV_CQ_OVERFLOW)
		kiwi_qp_later(qp, BIT(KIWI_QPT_CQ_OVERFLOW));
	else
		kiwi_qp_fail(qp, fsm_ev[ev], term_ctrl);
}

/*
 * Queue a completion of @qp on @cq.  A full CQ loses it: the CQ reports
 * IB_EVENT_CQ_ERR (cq.c), and the QP must not go on as if its consumer
 * had heard.  It fails, from its work item: callers hold queue locks
 * here, and failing the QP flushes those queues.
 */
void kiwi_qp_cq_add(struct kiwi_qp *qp, struct kiwi_cq *cq,
		    const struct kiwi_cqe *cqe, bool solicited)
{
	if (kiwi_cq_add(cq, cqe, solicited) != -ENOSPC)
		return;
	kiwi_qp_stat_add(qp, KIWI_STAT_CQ_OVERFLOW, 1);
	if (!xchg(&qp->cq_overflow, true)) {
		kiwi_qp_dbg(qp, "CQ %u full: a completion is lost, the QP fails\n",
			    cq->ibcq.res.id);
		kiwi_qp_event(qp, KIWI_QP_EV_CQ_OVERFLOW, 0);
	}
}
