// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: queue pairs -- references and the iw_cm's lookup, the state
 * changes the verbs and the connection ask for (modify_qp's and
 * destroy_qp's, connected, disconnected), and the actions the data
 * path's events leave to the QP's work item.  The state's one writer
 * and the data path's one event function are qpev.c's; the QP verbs'
 * entry points (create, destroy, modify, query) qpverbs.c's; the send
 * queue engine is sq.c, the receive queues and SRQs rq.c, work request
 * posting post.c.
 */
#include <rdma/rdma_cm.h>

#include "qp.h"
#include "verbs.h"

/* ---- reference counting (shared with the iw_cm) ---- */

static void kiwi_qp_release(struct kref *ref)
{
	complete(&container_of(ref, struct kiwi_qp, ref)->freed);
}

void kiwi_qp_get(struct ib_qp *ibqp)
{
	kref_get(&to_kqp(ibqp)->ref);
}

void kiwi_qp_put(struct ib_qp *ibqp)
{
	kref_put(&to_kqp(ibqp)->ref, kiwi_qp_release);
}

/*
 * Does the kernel consumer's rdma_cm id behind @id bind @qp?  An iw_cm id
 * made by the rdma_cm has the rdma_cm's id as its context, and struct
 * rdma_id_private begins with the struct rdma_cm_id; a kernel consumer's
 * rdma_create_qp() puts its QP there.  A process's rdma_cm id (ucma)
 * never has one: user QPs are created through uverbs.
 */
static bool kiwi_cm_id_names_qp(struct iw_cm_id *id, struct kiwi_qp *qp)
{
	const struct rdma_cm_id *cma = id->context;

	return cma && READ_ONCE(cma->qp) == &qp->ibqp;
}

/*
 * Is the caller the QP's owner: the process that created a user QP, or
 * a kernel consumer for a kernel QP?  Kernel consumers mostly connect
 * from kernel threads; one that connects from a process's system call
 * (the SMB Direct client, from mount) is recognised by its rdma_cm id
 * (@id), which the iw_cm passes only after its get_qp: there @id is NULL
 * and the decision waits for kiwi_qp_find().
 */
static bool kiwi_qp_caller_owns(struct kiwi_qp *qp, struct iw_cm_id *id)
{
	if (qp->user)
		return qp->owner == task_tgid(current);
	if (current->flags & PF_KTHREAD)
		return true;
	return !id || kiwi_cm_id_names_qp(id, qp);
}

/*
 * The QP numbered @qpn, referenced, if the caller owns it; NULL if not.
 * Only its owner may bind it: QP numbers are easy to guess, and a
 * connection bound to another process's QP would let the peer send into
 * its receive queue and read and write its memory regions.
 */
static struct kiwi_qp *kiwi_qp_lookup(struct kiwi_device *kdev, int qpn,
				      struct iw_cm_id *id)
{
	struct kiwi_qp *qp;

	/*
	 * Under the xarray's lock, not only RCU: the core frees a QP as
	 * soon as kiwi_destroy_qp() returns, with no grace period, and
	 * destroy's xa_erase() takes this lock before it drops its own
	 * reference.  So a QP seen here is still alive, and the reference
	 * taken here is one destroy then waits for.
	 */
	xa_lock(&kdev->qp_xa);
	qp = xa_load(&kdev->qp_xa, qpn);
	if (qp && !kref_get_unless_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&kdev->qp_xa);
	if (!qp)
		return NULL;
	if (!kiwi_qp_caller_owns(qp, id)) {
		kiwi_stat_add(kdev, KIWI_STAT_QP_NOT_OWNER, 1);
		ibdev_warn_ratelimited(&kdev->ibdev,
				       "QP %d not bound to a connection for %s[%d]: not its owner\n",
				       qpn, current->comm,
				       task_tgid_nr(current));
		kiwi_qp_put(&qp->ibqp);
		return NULL;
	}
	return qp;
}

/*
 * iw_get_qp: the QP numbered @qpn for the iw_cm to bind to a connection,
 * in the context of rdma_connect() or rdma_accept().  The iw_cm takes
 * its reference (iw_add_ref, kiwi_iw_add_ref()) only after this returns,
 * and a concurrent destroy_qp could drop the last one in between; so
 * the reference is taken here, under RCU, and handed over: the
 * iw_add_ref that follows every successful iw_get_qp (iwcm.c calls them
 * back to back under one lock) takes it instead of a new one.
 */
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn)
{
	struct kiwi_qp *qp = kiwi_qp_lookup(to_kdev(ibdev), qpn, NULL);

	if (!qp)
		return NULL;
	atomic_inc(&qp->lookup_refs);
	return &qp->ibqp;
}

void kiwi_iw_add_ref(struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	if (!atomic_add_unless(&qp->lookup_refs, -1, 0))
		kiwi_qp_get(ibqp);
}

/*
 * For kiwi's own connect and accept on @id, which run after the iw_cm
 * bound the QP (so it holds a reference): the QP @qpn names, not
 * referenced, if the caller may bind it (now knowing @id).
 */
struct kiwi_qp *kiwi_qp_find(struct iw_cm_id *id, int qpn)
{
	struct kiwi_qp *qp = kiwi_qp_lookup(to_kdev(id->device), qpn, id);

	if (qp)
		kiwi_qp_put(&qp->ibqp);
	return qp;
}

static void kiwi_qp_fatal_event(struct kiwi_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.event = IB_EVENT_QP_FATAL,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * What kiwi_qp_event() left to process context (qpev.c): the actions
 * that reach up from the data path -- the receive queue's flush, the
 * sender's wake-up for the TERMINATE, the consumer's QP_FATAL, the CM's
 * abort -- in the table's order, and the failure a lost completion
 * calls for, unless a reset since forgot it (KIWI_QPA_RESET).  Flushed
 * before the QP leaves its endpoint (kiwi_qp_unbind()), cancelled before
 * it goes (kiwi_destroy_qp()).
 */
static void kiwi_qp_ev_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, ev_work);
	unsigned long todo = atomic_long_xchg(&qp->ev_todo, 0);

	if (todo & BIT(KIWI_QPT_FLUSH_RQ))
		kiwi_qp_flush_rq(qp);
	if (todo & BIT(KIWI_QPT_KICK_TX))
		kiwi_tx_kick(qp);
	if (todo & BIT(KIWI_QPT_FATAL))
		kiwi_qp_fatal_event(qp);
	if (todo & BIT(KIWI_QPT_ABORT))
		kiwi_cm_qp_closing(qp, true);
	if ((todo & BIT(KIWI_QPT_CQ_OVERFLOW)) && READ_ONCE(qp->cq_overflow))
		kiwi_qp_error(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			      KIWI_RC_CATASTROPHIC_STREAM);
}

/*
 * A new QP's state: IDLE, reported as INIT (an RNIC's QP starts there;
 * rdma-core's tests.test_qp expects it), with its lock, its event work
 * and its MSNs.
 */
void kiwi_qp_init_state(struct kiwi_qp *qp)
{
	mutex_init(&qp->state_lock);
	INIT_WORK(&qp->ev_work, kiwi_qp_ev_work);
	qp->st = KIWI_QP_ST(KIWI_QP_IDLE, IB_QPS_INIT);
	kiwi_tx_reset(qp);
}

/* The next QP after number *@qpn, referenced (as kiwi_qp_lookup()). */
static struct kiwi_qp *kiwi_qp_next_ref(struct kiwi_device *kdev,
					unsigned long *qpn)
{
	struct kiwi_qp *qp;

	xa_lock(&kdev->qp_xa);
	do {
		qp = xa_find_after(&kdev->qp_xa, qpn, ULONG_MAX, XA_PRESENT);
	} while (qp && !kref_get_unless_zero(&qp->ref));
	xa_unlock(&kdev->qp_xa);
	return qp;
}

/*
 * The device's netdev is going away (deleted, or its namespace is):
 * no segment of any connection will pass again, so every connected QP
 * fails now, as on a lost link (flushed, IB_EVENT_QP_FATAL, connection
 * aborted), rather than minutes later when TCP gives up.  A kernel ULP
 * then tears down at once: NVMe-oF's controller shutdown waited its
 * 60 s admin timeout for a target on the same, departing device.
 */
void kiwi_qp_fail_all(struct kiwi_device *kdev)
{
	unsigned long qpn = 0;
	struct kiwi_qp *qp;

	while ((qp = kiwi_qp_next_ref(kdev, &qpn))) {
		kiwi_qp_error(qp, KIWI_TL_LLP, 0, KIWI_LC_TCP_ERR);
		/*
		 * What the failure leaves to the QP's work (RQ flushed,
		 * QP_FATAL, the CM's abort) is done before the device's
		 * unregistration is queued, as when it all ran inline: a
		 * ULP's removal must find its queues failed, not post its
		 * shutdown command to a QP whose abort has not started
		 * (NVMe-oF's host then waited out its 60 s admin timeout).
		 * The work takes no RTNL, which our caller holds.
		 */
		flush_work(&qp->ev_work);
		kiwi_qp_put(&qp->ibqp);
	}
}

/* The CM has an established MPA connection for this QP. */
int kiwi_qp_connected(struct kiwi_qp *qp, struct kiwi_ep *ep,
		      struct socket *sock, bool crc, bool large, u8 markers,
		      u8 rtr, bool responder)
{
	int rv = 0;
	int act;

	mutex_lock(&qp->state_lock);
	/* Only an IDLE QP bound to no other endpoint: checked first. */
	if (qp->ep || !kiwi_qpfsm(kiwi_qp_state(qp), KIWI_QPE_CONNECTED).legal) {
		kiwi_qp_refused(qp, KIWI_QPE_CONNECTED, kiwi_qp_state(qp));
		rv = -EINVAL;
		goto out;
	}
	rv = kiwi_tx_irq_alloc(qp, qp->ird);
	if (rv)
		goto out;
	kiwi_rx_reset(qp);
	/* A responder that chose a SEND RTR waits for the initiator's. */
	if (!rtr && qp->rtr == KIWI_MPA_RTR_SEND)
		kiwi_rx_expect_rtr_send(qp);
	/*
	 * An initiator whose RTR is a zero-length READ (RFC 6581) takes the
	 * first zero-length READ Response as its answer.  Set here, before
	 * RTS and before the socket delivers to the QP, so the first FPDU
	 * finds it; the transmit path sends that READ first of all (the
	 * peer can answer no READ of ours before it).
	 */
	if (rtr == KIWI_MPA_RTR_READ)
		kiwi_rx_expect_rtr_read(qp);
	kiwi_tx_reset(qp);
	qp->crc = crc;
	qp->large_fpdu = large;
	qp->mk_tx = markers & KIWI_MK_F_TX;
	qp->mk_rx = markers & KIWI_MK_F_RX;
	/* RFC 5044 7.1.2 rule 4: a responder speaks second (tx.c). */
	kiwi_tx_connect(qp, rtr, responder);
	qp->rx_cpu = -1;
	WRITE_ONCE(qp->sock, sock);
	WRITE_ONCE(qp->ep, ep);
	/* IDLE changes only under state_lock: this cannot fail. */
	act = kiwi_qp_next(qp, KIWI_QPE_CONNECTED);
	WARN_ON_ONCE(act < 0);
	if (act > 0 && (act & KIWI_QPA_START_TX)) {
		/* WQEs posted before the connection are sent now. */
		kiwi_ring_set_flags(&qp->sq_ring, KIWI_RING_F_BUSY);
		kiwi_tx_start(qp);
	}
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

/*
 * The responder's wait for the initiator's first FPDU is over (CM
 * timer, kiwi_first_fpdu_ms): send.  Returns true if it was still
 * waiting.
 */
bool kiwi_qp_hold_over(struct kiwi_qp *qp)
{
	bool held;

	mutex_lock(&qp->state_lock);
	held = kiwi_qp_state(qp) == KIWI_QP_RTS &&
	       READ_ONCE(qp->tx.await_peer);
	if (held)
		kiwi_tx_peer_spoke(qp);
	mutex_unlock(&qp->state_lock);
	return held;
}

/*
 * The connection is going away (CM context, socket still attached):
 * stop transmit, flush everything.  The QP stays bound to the endpoint
 * (qp->ep) until kiwi_qp_unbind(), once the socket no longer calls the
 * receive path: until then it cannot be reset or connected again.
 */
void kiwi_qp_disconnected(struct kiwi_qp *qp)
{
	struct socket *sock;
	int act;

	mutex_lock(&qp->state_lock);
	sock = qp->sock;
	act = kiwi_qp_next(qp, KIWI_QPE_DISCONNECTED);
	mutex_unlock(&qp->state_lock);
	/* Never refused; without a socket nothing was started. */
	if (!sock || act <= 0)
		return;
	if (act & KIWI_QPA_DRAIN)
		kiwi_tx_disconnect(qp, sock);
	if (act & KIWI_QPA_FLUSH_RQ)
		kiwi_qp_flush_rq(qp);
	if (act & KIWI_QPA_FLUSH_SQ)
		kiwi_qp_flush_sq(qp);
}

/*
 * The endpoint is done with the QP: its socket is released and the
 * receive path let go (kiwi_rx_release()).  Now it may be reset.
 */
void kiwi_qp_unbind(struct kiwi_qp *qp)
{
	/*
	 * The connection's engines are stopped: no event of this
	 * connection is still to come, and what the last ones left (an
	 * abort, which reads qp->ep) is done before the endpoint goes.
	 * The handler only queues the CM's work, never takes ep->lock.
	 */
	flush_work(&qp->ev_work);
	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->ep, NULL);
	mutex_unlock(&qp->state_lock);
	kiwi_tx_drop_cpu(qp);
}

/* ---- state machine ---- */

/* modify_qp's target states as events. */
static const u8 kiwi_qp_modify_event[] = {
	[IB_QPS_RESET] = KIWI_QPE_MODIFY_RESET,
	[IB_QPS_INIT] = KIWI_QPE_MODIFY_INIT,
	[IB_QPS_RTR] = KIWI_QPE_MODIFY_RTR,
	[IB_QPS_RTS] = KIWI_QPE_MODIFY_RTS,
	[IB_QPS_SQD] = KIWI_QPE_MODIFY_SQD,
	[IB_QPS_SQE] = KIWI_QPE_MODIFY_SQE,
	[IB_QPS_ERR] = KIWI_QPE_MODIFY_ERR,
};

/*
 * modify_qp's state change, under qp->state_lock: the table decides
 * (only the CM makes a QP RTS; SQD starts a graceful close; ERR aborts),
 * and RESET also needs the connection wholly gone (receive path let go,
 * kiwi_qp_unbind()).  Refusals are counted.
 */
int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to)
{
	unsigned int ev = KIWI_QPE_NEVENTS;	/* unknown: refused */
	int act;

	lockdep_assert_held(&qp->state_lock);
	if ((unsigned int)to < ARRAY_SIZE(kiwi_qp_modify_event))
		ev = kiwi_qp_modify_event[to];
	/* Not while a connection (its receive path) still holds it. */
	if (ev == KIWI_QPE_MODIFY_RESET && (qp->sock || qp->ep)) {
		kiwi_qp_refused(qp, ev, kiwi_qp_state(qp));
		return -EINVAL;
	}
	/*
	 * A TERMINATE racing an SQD wins either way: the lookup is redone
	 * on the state the compare-and-exchange found.
	 */
	act = kiwi_qp_next(qp, ev);
	if (act < 0)
		return -EINVAL;
	if (act & KIWI_QPA_RESET) {
		qp->cq_overflow = false;
		qp->sq_failed = false;	/* no WR is outstanding in RESET */
		kiwi_rx_reset(qp);
		kiwi_tx_reset(qp);
	}
	if (act & KIWI_QPA_CLOSE)
		kiwi_cm_qp_closing(qp, false);
	if (act & KIWI_QPA_FLUSH_RQ)
		kiwi_qp_flush_rq(qp);
	/* With a connection the SQ is flushed when it is gone. */
	if ((act & KIWI_QPA_ABORT) && qp->sock)
		kiwi_cm_qp_closing(qp, true);
	else if (act & KIWI_QPA_FLUSH_SQ)
		kiwi_qp_flush_sq(qp);
	return 0;
}
