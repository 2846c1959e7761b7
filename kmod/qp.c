// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: queue pairs -- the verbs (create, modify, query, destroy), the
 * events the connection reports (connected, disconnected), and the
 * actions the data path's events leave to the QP's work item.  The
 * state's one writer and the data path's one event function are
 * qpev.c's; the send queue engine is sq.c, the receive queues and SRQs
 * rq.c, work request posting post.c.
 *
 * Send queues, receive queues and SRQs are rings in the format of
 * include/uapi/rdma/kiwi-abi.h (see Documentation/rings.rst).  User QPs
 * and SRQs share them with the provider, which writes WQEs directly;
 * kernel consumers' WRs are encoded into the same format by post_send /
 * post_recv.  Either way a WQE is copied out of its ring slot once, when
 * the kernel starts it, and validated on that copy: ring contents and the
 * producer index are never trusted.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/netlink.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "qp.h"
#include "verbs.h"

#define KIWI_QPN_MAX	((1U << 24) - 1)

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

static void kiwi_qp_reset_msn(struct kiwi_qp *qp)
{
	int i;

	for (i = 0; i < KIWI_QN_COUNT; i++)
		qp->tx.msn[i] = 1;	/* RFC 5041 5.1: MSNs start at one */
}

static int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to);

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
	kiwi_qp_reset_msn(qp);
	qp->crc = crc;
	qp->large_fpdu = large;
	qp->mk_tx = markers & KIWI_MK_F_TX;
	qp->mk_rx = markers & KIWI_MK_F_RX;
	kiwi_tx_markers_init(qp);
	qp->tx.rtr_pending = rtr;
	/* RFC 5044 7.1.2 rule 4: a responder speaks second (tx.c). */
	qp->tx.await_peer = responder;
	qp->tx.term_pending = false;
	qp->tx.irq_head = 0;
	qp->tx.irq_count = 0;
	qp->tx.t_bell = 0;
	qp->tx.cpu = KIWI_TX_CPU_PICK;	/* at the first kick */
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
 * Stop transmit on @sock for good: a pending TERMINATE gets a short
 * chance to leave first, then the socket is shut down and detached.
 */
static void kiwi_qp_drain(struct kiwi_qp *qp, struct socket *sock)
{
	/*
	 * Until the TERMINATE is out and the sender has let go of the
	 * socket: the worker wakes tx.idle after releasing tx.mutex.  At
	 * most a second: a peer that does not read may never take it.
	 */
	if (!wait_event_timeout(qp->tx.idle, !READ_ONCE(qp->tx.term_pending) &&
				!mutex_is_locked(&qp->tx.mutex), HZ))
		kiwi_qp_dbg(qp, "sender still busy after 1 s%s: socket shut down\n",
			    READ_ONCE(qp->tx.term_pending) ?
			    ", TERMINATE unsent" : "");
	/*
	 * A sender stuck in TCP for want of room (a peer that stopped
	 * reading or ACKing: it can last forever) holds tx.mutex: make it
	 * fail and let go.  After the shutdown every send fails at once.
	 */
	kernel_sock_shutdown(sock, SHUT_RDWR);
	kiwi_tx_unblock(sock);
	/*
	 * Senders read qp->sock under tx.mutex (the worker, a doorbell):
	 * once it is cleared under the same mutex, none still uses it.
	 */
	mutex_lock(&qp->tx.mutex);
	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->sock, NULL);
	mutex_unlock(&qp->state_lock);
	mutex_unlock(&qp->tx.mutex);
	flush_work(&qp->tx.work);
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
		kiwi_qp_drain(qp, sock);
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

/* ---- create / destroy ---- */

static int kiwi_qp_check_cap(struct kiwi_device *kdev,
			     struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC || attr->create_flags) {
		kiwi_dev_dbg(kdev, "QP type %d, create flags %#x: RC only, no flags\n",
			     attr->qp_type, attr->create_flags);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		kiwi_dev_dbg(kdev, "a QP needs a send and a receive CQ\n");
		return -EINVAL;
	}
	if (cap->max_send_wr > kdev->lim.max_qp_wr ||
	    cap->max_send_sge > KIWI_MAX_SGE ||
	    cap->max_inline_data > KIWI_MAX_INLINE) {
		kiwi_dev_dbg(kdev, "send queue of %u WRs, %u SGEs, %u inline bytes: at most %u, %u, %u\n",
			     cap->max_send_wr, cap->max_send_sge,
			     cap->max_inline_data, kdev->lim.max_qp_wr,
			     KIWI_MAX_SGE, KIWI_MAX_INLINE);
		return -EINVAL;
	}
	if (attr->srq)
		return 0;
	if (cap->max_recv_wr > kdev->lim.max_qp_wr ||
	    cap->max_recv_sge > KIWI_MAX_SGE) {
		kiwi_dev_dbg(kdev, "receive queue of %u WRs, %u SGEs: at most %u, %u\n",
			     cap->max_recv_wr, cap->max_recv_sge,
			     kdev->lim.max_qp_wr, KIWI_MAX_SGE);
		return -EINVAL;
	}
	return 0;
}

/*
 * RFC 7306 has no in-band negotiation of its extensions: section 1.1
 * leaves it to the ULP, out of band, to know that the peer has them.
 * Sending Immediate Data to a peer without them (Linux siw) ends the
 * connection with a TERMINATE, so WRs with immediate data are refused
 * locally unless this says the peers do.  Read when a QP is created:
 * a per-QP default that may be changed between QPs.  Receiving them
 * is always on.  (rfc7306_atomics is main.c's: changing it changes what
 * the devices report.)
 */
static bool kiwi_imm_default;
module_param_named(rfc7306_imm, kiwi_imm_default, bool, 0644);
MODULE_PARM_DESC(rfc7306_imm,
		 "QPs created from now on may send RFC 7306 immediate data: their peers support it (default: off)");

static int kiwi_qp_resp(struct kiwi_qp *qp, struct ib_udata *udata)
{
	struct kiwi_uresp_create_qp resp = {
		.qp_id = qp->ibqp.qp_num,
		.num_sqe = qp->sq_size,
		.sq_stride = qp->sq_ring.stride,
		.sq_mmap_offset = kiwi_ring_mmap_offset(&qp->sq_ring),
		.sq_mmap_len = kiwi_ring_mmap_len(&qp->sq_ring),
		.flags = (qp->imm_tx ? KIWI_UQP_F_IMM : 0) |
			 (qp->atomic ? KIWI_UQP_F_ATOMIC : 0) | KIWI_UQP_F_MW,
	};

	if (!qp->srq) {
		resp.num_rqe = qp->rq_ring.size;
		resp.rq_stride = qp->rq_ring.stride;
		resp.rq_mmap_offset = kiwi_ring_mmap_offset(&qp->rq_ring);
		resp.rq_mmap_len = kiwi_ring_mmap_len(&qp->rq_ring);
	}
	/* Without the ring offsets a user QP is unusable. */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * Allocate the rings (mapped for user QPs) and grant what the slot
 * sizes really hold; the caller sees the grant in attr->cap.
 */
static int kiwi_qp_alloc_queues(struct kiwi_qp *qp,
				struct ib_qp_init_attr *attr,
				struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &attr->cap;
	u32 payload = kiwi_sq_payload(cap->max_send_sge, cap->max_inline_data);
	int rv;

	/* An atomic WQE: its sink SGE, then struct kiwi_uatomic. */
	if (qp->atomic)
		payload = max_t(u32, payload, KIWI_USGE_SIZE +
				sizeof(struct kiwi_uatomic));

	qp->sq_size = kiwi_ring_slots(cap->max_send_wr);
	rv = kiwi_ring_init(&qp->sq_ring, udata, qp->sq_size,
			    sizeof(struct kiwi_usqe) + payload);
	if (rv)
		return rv;
	qp->sq = kvcalloc(qp->sq_size, sizeof(*qp->sq), GFP_KERNEL_ACCOUNT);
	if (!qp->sq)
		return -ENOMEM;
	cap->max_send_wr = qp->sq_size;
	cap->max_send_sge = min_t(u32, payload / KIWI_USGE_SIZE, KIWI_MAX_SGE);
	cap->max_inline_data = min_t(u32, payload, KIWI_MAX_INLINE);
	if (qp->srq)
		return 0;
	cap->max_recv_sge = max(cap->max_recv_sge, 1U);
	rv = kiwi_ring_init(&qp->rq_ring, udata,
			    kiwi_ring_slots(cap->max_recv_wr),
			    kiwi_rq_stride(cap->max_recv_sge));
	if (rv)
		return rv;
	cap->max_recv_wr = qp->rq_ring.size;
	return 0;
}

static void kiwi_qp_free_queues(struct kiwi_qp *qp)
{
	if (qp->sq_ring.buf)
		kiwi_ring_destroy(&qp->sq_ring);
	if (qp->rq_ring.buf)
		kiwi_ring_destroy(&qp->rq_ring);
	kvfree(qp->sq);
	qp->sq = NULL;
}

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibqp->device);
	struct kiwi_qp *qp = to_kqp(ibqp);
	u32 qpn;
	int rv;

	rv = kiwi_qp_check_cap(kdev, attr);
	if (rv)
		return rv;
	if (!kiwi_res_get(&kdev->num_qp, kdev->lim.max_qp)) {
		kiwi_dev_dbg(kdev, "max_qp (%u) QPs exist already\n",
			     kdev->lim.max_qp);
		return -ENOMEM;
	}

	qp->kdev = kdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	mutex_init(&qp->state_lock);
	INIT_WORK(&qp->ev_work, kiwi_qp_ev_work);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	/* An RNIC's QP starts in INIT (rdma-core tests.test_qp expects it). */
	qp->st = KIWI_QP_ST(KIWI_QP_IDLE, IB_QPS_INIT);
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	qp->sq_sig_type = attr->sq_sig_type;
	qp->user = !!udata;
	if (udata)
		qp->owner = get_task_pid(current, PIDTYPE_TGID);
	qp->ird = KIWI_MAX_IRD;
	qp->ord = KIWI_MAX_ORD;
	qp->imm_tx = READ_ONCE(kiwi_imm_default);
	qp->atomic = READ_ONCE(kdev->atomics);

	rv = kiwi_qp_alloc_queues(qp, attr, udata);
	if (rv)
		goto err;
	rv = kiwi_tx_init(qp);
	if (rv)
		goto err;
	kiwi_rx_init(qp);
	kiwi_qp_reset_msn(qp);
	kiwi_qp_publish_state(qp);
	qp->cap = attr->cap;

	/*
	 * Reserve the number (a NULL entry, which lookups do not see) and
	 * publish the QP only once nothing can fail: the response copy can,
	 * and the core frees the QP when we fail, while a thread of the
	 * same process could already have bound it by its predicted number.
	 */
	rv = xa_alloc_cyclic(&kdev->qp_xa, &qpn, NULL,
			     XA_LIMIT(1, KIWI_QPN_MAX), &kdev->qp_next,
			     GFP_KERNEL);
	if (rv < 0) {
		rv = rv == -EBUSY ? -ENOMEM : rv;
		goto err;
	}
	ibqp->qp_num = qpn;

	if (udata) {
		rv = kiwi_qp_resp(qp, udata);
		if (rv) {
			xa_erase(&kdev->qp_xa, qpn);
			goto err;
		}
	}
	/* The slot exists, so storing into it allocates nothing. */
	xa_store(&kdev->qp_xa, qpn, qp, GFP_KERNEL);
	return 0;

err:
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return rv;
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_device *kdev = qp->kdev;

	mutex_lock(&qp->state_lock);
	kiwi_qp_set_state(qp, IB_QPS_ERR);
	mutex_unlock(&qp->state_lock);

	xa_erase(&kdev->qp_xa, ibqp->qp_num);

	/* The iw_cm may still hold references until the connection ends. */
	kiwi_qp_put(ibqp);
	wait_for_completion(&qp->freed);

	/*
	 * No endpoint has the QP any more (the CM's reference is gone), so
	 * no socket delivers to it and no sender has a socket.  The event
	 * work goes first, as its handler may kick tx.work; and in ERROR,
	 * where the ERR above put the QP, every data-path event is ignored
	 * (qpfsm.h), so nothing but a lost completion could queue it again,
	 * and nothing completes without a connection.
	 */
	cancel_work_sync(&qp->ev_work);
	cancel_work_sync(&qp->tx.work);
	kiwi_tx_drop_cpu(qp);
	kiwi_rx_stop(qp);
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return 0;
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
static int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to)
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
		kiwi_qp_reset_msn(qp);
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

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	int known = IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |
		    IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_MAX_QP_RD_ATOMIC |
		    IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_EN_SQD_ASYNC_NOTIFY;
	int rv = 0;

	if (mask & ~known) {
		kiwi_qp_dbg(qp, "attribute mask %#x: %#x not supported\n",
			    mask, mask & ~known);
		return -EOPNOTSUPP;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != 1) {
		kiwi_qp_dbg(qp, "port %u: the device has port 1 only\n",
			    attr->port_num);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > KIWI_MAX_ORD) {
		kiwi_qp_dbg(qp, "ORD %u: at most %u\n", attr->max_rd_atomic,
			    KIWI_MAX_ORD);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > KIWI_MAX_IRD) {
		kiwi_qp_dbg(qp, "IRD %u: at most %u\n",
			    attr->max_dest_rd_atomic, KIWI_MAX_IRD);
		return -EINVAL;
	}

	mutex_lock(&qp->state_lock);
	if ((mask & IB_QP_CUR_STATE) &&
	    attr->cur_qp_state != kiwi_qp_ib_state(qp)) {
		kiwi_qp_dbg(qp, "cur_qp_state %d given, the QP is in %d (enum ib_qp_state)\n",
			    attr->cur_qp_state, kiwi_qp_ib_state(qp));
		rv = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_STATE) {
		rv = kiwi_qp_set_state(qp, attr->qp_state);	/* counted */
		if (rv)
			goto out;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	attr->qp_state = kiwi_qp_ib_state(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->port_num = 1;
	attr->path_mtu = ib_mtu_int_to_enum(READ_ONCE(qp->kdev->netdev->mtu));
	attr->path_mig_state = IB_MIG_MIGRATED;

	init->qp_type = IB_QPT_RC;
	init->send_cq = &qp->scq->ibcq;
	init->recv_cq = &qp->rcq->ibcq;
	init->srq = qp->srq ? &qp->srq->ibsrq : NULL;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = qp->cap;
	return 0;
}

/*
 * Driver attributes of "rdma resource show qp -dd": what the MPA
 * exchange settled for the current connection (0 without one).
 */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	bool crc, large, mk_tx, mk_rx, await;
	struct nlattr *nest;
	u32 ird, ord, rtr;

	mutex_lock(&qp->state_lock);
	crc = qp->sock && qp->crc;
	large = qp->sock && qp->large_fpdu;
	mk_tx = qp->sock && qp->mk_tx;
	mk_rx = qp->sock && qp->mk_rx;
	ird = qp->ird;
	ord = qp->ord;
	rtr = qp->sock ? qp->rtr : 0;
	await = qp->sock && READ_ONCE(qp->tx.await_peer);
	mutex_unlock(&qp->state_lock);

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "mpa_crc", crc) ||
	    rdma_nl_put_driver_u32(msg, "large_fpdu", large) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_tx", mk_tx) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_rx", mk_rx) ||
	    rdma_nl_put_driver_u32(msg, "ird", ird) ||
	    rdma_nl_put_driver_u32(msg, "ord", ord) ||
	    rdma_nl_put_driver_u32(msg, "p2p_rtr", rtr) ||
	    rdma_nl_put_driver_u32(msg, "await_first_fpdu", await) ||
	    rdma_nl_put_driver_u32(msg, "rfc7306_imm", qp->imm_tx) ||
	    rdma_nl_put_driver_u32(msg, "rfc7306_atomics", qp->atomic)) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}
