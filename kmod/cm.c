// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: connection management -- the endpoint core: the endpoints'
 * lifetime and references, the list of them all, their work queue and
 * timer, the socket callbacks, the half-open quotas and the requests
 * the iw_cm holds, going to RTS (and repeating the RTR after it), and
 * the actions of the state machine's table, kiwi_ep_do(): a connection
 * ended, a connect failed, a reject sent.  Device removal and module
 * unload close what is left.
 *
 * The CM's files, callers above callees (what they share is cm.h):
 *
 *   iwcm.c    the iw_cm's calls, which start and finish endpoints
 *   cmwork.c  each endpoint's work: socket events per state, the
 *             active and passive sides of the MPA exchange
 *   cm.c      this file
 *   cmstate.c the state's one writer; events traced, logged, upcalled
 *   cmparam.c the module parameters of connection setup
 *   mpa.c     the MPA frames and the TCP socket under them
 *
 * Every endpoint (kiwi_ep) has one work item; socket callbacks, timeouts
 * and local requests only set event bits and queue it, so most state
 * changes of an endpoint happen in its work function (cmwork.c), the
 * rest in the iw_cm's calls (iwcm.c); all under ep->lock, and all
 * through one writer, kiwi_ep_next() (cmstate.c), driven by the table
 * of include/kiwi/epfsm.h.
 * Lock order: ep->lock, then qp->state_lock.
 *
 * Anyone who can reach a listening port can make endpoints, so what
 * they may cost is bounded: a connection that has not reached RTS (a
 * "half-open" one) counts against its listener (its backlog) and its
 * device (max_half_open), beyond which new connections are reset at
 * once; it may take mpa_timeout_ms to send its MPA request; and until
 * RTS its receive window is clamped small, so it cannot park more than
 * a few KiB in the socket.  Every endpoint is on kiwi_ep_list, so that
 * device removal and module unload can close what is left.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"

static struct workqueue_struct *kiwi_cm_wq;

/*
 * Connection requests the iw_cm holds, by cookie: each entry owns one
 * reference to its endpoint, which accept, reject, the request timeout
 * or device removal takes -- whichever erases the entry first; the
 * others find it gone.  The iw_cm sees the cookie, never the pointer,
 * so a late accept or reject cannot reach a freed endpoint.
 */
static DEFINE_XARRAY_ALLOC1(kiwi_req_xa);
static u32 kiwi_req_next;

/* Every endpoint alive, for device removal and module unload. */
static LIST_HEAD(kiwi_ep_list);
static DEFINE_SPINLOCK(kiwi_ep_list_lock);
static atomic_t kiwi_ep_live = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(kiwi_ep_freed);

/* /sys/module/kiwi/parameters/cm_endpoints: how many are alive. */
static int kiwi_ep_live_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&kiwi_ep_live));
}

static const struct kernel_param_ops kiwi_ep_live_ops = {
	.get = kiwi_ep_live_get,
};
module_param_cb(cm_endpoints, &kiwi_ep_live_ops, NULL, 0444);
MODULE_PARM_DESC(cm_endpoints,
		 "Connection endpoints alive: listeners, connections in setup and established ones (read-only)");

/* ---- endpoint lifetime ---- */

static void kiwi_ep_free(struct kref *ref);

void kiwi_ep_put(struct kiwi_ep *ep)
{
	kref_put(&ep->ref, kiwi_ep_free);
}

static void kiwi_ep_free(struct kref *ref)
{
	struct kiwi_ep *ep = container_of(ref, struct kiwi_ep, ref);

	spin_lock(&kiwi_ep_list_lock);
	list_del(&ep->entry);
	spin_unlock(&kiwi_ep_list_lock);
	if (ep->listener)
		kiwi_ep_put(ep->listener);
	kfree(ep);
	if (atomic_dec_and_test(&kiwi_ep_live))
		wake_up(&kiwi_ep_freed);
}

/* The timer's reference passes to the work it queues. */
static void kiwi_ep_timer(struct work_struct *work)
{
	struct kiwi_ep *ep = container_of(to_delayed_work(work),
					  struct kiwi_ep, timer);

	set_bit(KIWI_EV_TIMEOUT, &ep->events);
	if (!queue_work(kiwi_cm_wq, &ep->work))
		kiwi_ep_put(ep);	/* already queued, with its own */
}

/* A new endpoint starts where the state machine does: kzalloc'd, IDLE. */
static_assert(KIWI_EP_IDLE == 0);

/*
 * A new endpoint whose work is @work: cmwork.c's, which passes it
 * (kiwi_ep_alloc()) so that this file names nothing of that one.
 */
struct kiwi_ep *kiwi_ep_new(struct kiwi_device *kdev, work_func_t work)
{
	struct kiwi_ep *ep = kzalloc(sizeof(*ep), GFP_KERNEL);

	if (!ep)
		return NULL;
	kref_init(&ep->ref);
	mutex_init(&ep->lock);
	INIT_WORK(&ep->work, work);
	INIT_DELAYED_WORK(&ep->timer, kiwi_ep_timer);
	ep->kdev = kdev;	/* and, zeroed, in state IDLE */
	atomic_inc(&kiwi_ep_live);
	spin_lock(&kiwi_ep_list_lock);
	list_add_tail(&ep->entry, &kiwi_ep_list);
	spin_unlock(&kiwi_ep_list_lock);
	return ep;
}

/* ---- half-open connections: the quotas ---- */

static bool kiwi_same_host(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/* Whether @peer holds its share of @kdev's half-open slots already. */
static bool kiwi_half_open_src_full(struct kiwi_device *kdev,
				    const struct sockaddr_storage *peer)
{
	unsigned int quota = min(READ_ONCE(kiwi_max_half_open_src),
				 max(READ_ONCE(kiwi_max_half_open) / 2, 1U));
	unsigned int n = 0;
	struct kiwi_ep *ep;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		/* half_open changes under ep->lock: a count, not a bound */
		if (ep->kdev == kdev && READ_ONCE(ep->half_open) &&
		    kiwi_same_host(&ep->remote, peer) && ++n >= quota)
			break;
	}
	spin_unlock(&kiwi_ep_list_lock);
	return n >= quota;
}

/*
 * A new passive connection takes a half-open slot of its listener and
 * its device; false (nothing taken) if either is full, or if its source
 * has its share.
 */
bool kiwi_half_open_get(struct kiwi_ep *l,
			const struct sockaddr_storage *peer)
{
	if (kiwi_half_open_src_full(l->kdev, peer))
		return false;
	if (!atomic_add_unless(&l->children, 1, l->max_children))
		return false;
	if (!atomic_add_unless(&l->kdev->half_open, 1,
			       READ_ONCE(kiwi_max_half_open))) {
		atomic_dec(&l->children);
		return false;
	}
	return true;
}

/* Give back the slot: the connection reached RTS or is gone. */
static void kiwi_half_open_put(struct kiwi_ep *ep)
{
	if (!ep->half_open)
		return;
	WRITE_ONCE(ep->half_open, false);
	atomic_dec(&ep->listener->children);
	atomic_dec(&ep->kdev->half_open);
}

/* ---- the work and the timer ---- */

/* Queue the endpoint's work; the queued work owns one reference. */
void kiwi_ep_kick(struct kiwi_ep *ep, int event)
{
	set_bit(event, &ep->events);
	kiwi_ep_get(ep);
	if (!queue_work(kiwi_cm_wq, &ep->work))
		kiwi_ep_put(ep);
}

void kiwi_ep_arm_timer_ms(struct kiwi_ep *ep, unsigned int ms)
{
	/* An expiry of the deadline this replaces is stale: on_timeout. */
	WRITE_ONCE(ep->timer_due, jiffies + msecs_to_jiffies(ms));
	kiwi_ep_get(ep);
	if (!mod_delayed_work(kiwi_cm_wq, &ep->timer, msecs_to_jiffies(ms)))
		return;
	kiwi_ep_put(ep);	/* was already pending: keep one reference */
}

void kiwi_ep_arm_timer(struct kiwi_ep *ep)
{
	kiwi_ep_arm_timer_ms(ep, kiwi_mpa_timeout_ms);
}

void kiwi_ep_cancel_timer(struct kiwi_ep *ep)
{
	if (cancel_delayed_work(&ep->timer))
		kiwi_ep_put(ep);
}

/* ---- socket callbacks ---- */

static void kiwi_sk_event(struct sock *sk)
{
	struct kiwi_ep *ep;

	read_lock_bh(&sk->sk_callback_lock);
	ep = __locked_read_sk_user_data_with_flags(sk, 0);
	if (ep)
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A listener's user data is marked NOCOPY: the sockets TCP clones from
 * it start with none, so no callback of theirs can reach the listener
 * endpoint (which may be going away) before they have one of their own.
 */
void kiwi_sk_assoc(struct kiwi_ep *ep, struct socket *sock)
{
	struct sock *sk = sock->sk;

	kiwi_ep_get(ep);	/* held while the socket points at us */
	ep->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	ep->saved_data_ready = sk->sk_data_ready;
	ep->saved_state_change = sk->sk_state_change;
	ep->saved_write_space = sk->sk_write_space;
	__rcu_assign_sk_user_data_with_flags(sk, ep,
		ep->state == KIWI_EP_LISTEN ? SK_USER_DATA_NOCOPY : 0);
	sk->sk_data_ready = kiwi_sk_event;
	sk->sk_state_change = kiwi_sk_event;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Detach from the socket; once this returns no callback of ours runs or
 * will run for it.  Then release it, aborting the connection if asked.
 * The caller holds its own reference: this drops the socket's.
 */
void kiwi_sk_release(struct kiwi_ep *ep, bool abort)
{
	struct socket *sock = ep->sock;
	struct sock *sk;

	if (!sock)
		return;
	sk = sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_data_ready = ep->saved_data_ready;
	sk->sk_state_change = ep->saved_state_change;
	sk->sk_write_space = ep->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	if (ep->qp)
		kiwi_rx_stop(ep->qp);	/* its worker is done with sk */

	/* What the network cost this connection (tcp_info's total_retrans). */
	if (ep->qp)
		kiwi_qp_stat_add(ep->qp, KIWI_STAT_TCP_RETRANS,
				 READ_ONCE(tcp_sk(sk)->total_retrans));
	else
		kiwi_stat_add(ep->kdev, KIWI_STAT_TCP_RETRANS,
			      READ_ONCE(tcp_sk(sk)->total_retrans));
	if (abort)
		sock_no_linger(sk);	/* close with RST */
	else
		kernel_sock_shutdown(sock, SHUT_RDWR);
	ep->sock = NULL;
	sock_release(sock);
	kiwi_half_open_put(ep);
	kiwi_ep_put(ep);
}

/* ---- binding a connection to its QP ---- */

/*
 * The initiator's zero-length RDMA WRITE ready-to-receive message is
 * repeated while the responder stays silent, at these delays after RTS
 * (ms).  Linux siw, as the responder, sends its MPA reply and only then
 * installs the callback that reads the RTR (siw_accept(): send the
 * reply, then siw_sk_assign_rtr_upcalls()); an RTR that lands in
 * between is left in the socket, unread, until more bytes arrive.  Its
 * cm_id then never gets ESTABLISHED: a consumer that waits for the
 * responder to speak first (librdmacm's ucmatose) hangs, and when the
 * connection is closed siw reports CLOSE for a cm_id the iw_cm still
 * has in CONN_RECV -- a kernel BUG in cm_close_handler().  kiwi, quick
 * to answer the reply, hit that window within a few connections.  A
 * zero-length WRITE names no buffer (RFC 5040 section 4.3; siw and kiwi
 * skip it at once), so a repeat is harmless to a responder that did
 * read the first one; any byte from the peer shows it is running and
 * ends the repeats.  So does anything of ours beyond the RTR messages
 * (20 bytes on the wire each, 24 with a marker; every other FPDU but a
 * zero-length SEND is longer than KIWI_RTR_MAX): a repeat never goes
 * between the FPDUs of a message, and the consumer's data wakes siw too.
 */
#define KIWI_RTR_MAX	28
static const unsigned int kiwi_rtr_nudge_ms[] = { 50, 300, 1500 };

static void kiwi_ep_nudge_arm(struct kiwi_ep *ep)
{
	if (ep->rtr_nudges < ARRAY_SIZE(kiwi_rtr_nudge_ms))
		kiwi_ep_arm_timer_ms(ep, kiwi_rtr_nudge_ms[ep->rtr_nudges]);
}

/* Timer in RTS, responder: the initiator had its time to speak first. */
static void kiwi_ep_hold_over(struct kiwi_ep *ep)
{
	lockdep_assert_held(&ep->lock);
	if (ep->qp && ep->sock && kiwi_qp_hold_over(ep->qp))
		kiwi_ep_event(ep, "first_fpdu_wait_over", 0);
}

/*
 * Timer in RTS: as initiator, repeat the RTR if the peer has sent
 * nothing yet; as responder, stop waiting for the initiator's first
 * FPDU.
 */
static void kiwi_ep_nudge(struct kiwi_ep *ep)
{
	struct kiwi_qp *qp = ep->qp;
	struct tcp_sock *tp;

	lockdep_assert_held(&ep->lock);
	if (!ep->initiator) {
		kiwi_ep_hold_over(ep);
		return;
	}
	if (!qp || !ep->sock || ep->rtr != KIWI_MPA_RTR_WRITE)
		return;
	tp = tcp_sk(ep->sock->sk);
	if (READ_ONCE(tp->bytes_received) != ep->rtr_rx_mark ||
	    READ_ONCE(tp->write_seq) - ep->rtr_tx_mark >
	    KIWI_RTR_MAX * (ep->rtr_nudges + 1))
		return;
	mutex_lock(&qp->state_lock);
	if (kiwi_qp_state(qp) == KIWI_QP_RTS)
		kiwi_tx_rtr_repeat(qp);
	mutex_unlock(&qp->state_lock);
	kiwi_ep_event(ep, "rtr_repeat", ep->rtr_nudges);
	ep->rtr_nudges++;
	kiwi_ep_nudge_arm(ep);
}

int kiwi_ep_go_rts(struct kiwi_ep *ep, u8 send_rtr)
{
	struct sock *sk = ep->sock->sk;
	int rv;

	lockdep_assert_held(&ep->lock);	/* ep->lock, then the QP's */
	if (kiwi_ep_step(ep, KIWI_EPE_RTS_REACHED) < 0)
		return -EINVAL;
	kiwi_ep_cancel_timer(ep);
	ep->qp->ird = max_t(u16, ep->ird, 1);
	ep->qp->ord = max_t(u16, ep->ord, 1);
	ep->qp->rtr = ep->rtr;	/* either side: "rdma res show qp -dd" */
	rv = kiwi_qp_connected(ep->qp, ep, ep->sock, ep->crc, ep->large,
			       (ep->mk_tx ? KIWI_MK_F_TX : 0) |
			       (ep->mk_rx ? KIWI_MK_F_RX : 0),
			       send_rtr, !ep->initiator);
	if (rv)
		return rv;
	kiwi_ep_dbg(ep, "MPA rev %u agreed: CRC %d, markers to peer %d from peer %d, large FPDUs %d, IRD %u ORD %u, RTR %#x\n",
		    ep->mpa.rev, ep->crc, ep->mk_tx, ep->mk_rx, ep->large,
		    ep->qp->ird, ep->qp->ord, ep->rtr);

	/* Hand data delivery to the QP's receive path. */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = kiwi_rx_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	kiwi_ep_next(ep, KIWI_EPE_RTS_REACHED);
	kiwi_half_open_put(ep);
	kiwi_sock_unclamp(ep);
	if (send_rtr == KIWI_MPA_RTR_WRITE) {
		ep->rtr_rx_mark = READ_ONCE(tcp_sk(sk)->bytes_received);
		ep->rtr_tx_mark = READ_ONCE(tcp_sk(sk)->write_seq);
		kiwi_ep_nudge_arm(ep);
	} else if (!ep->initiator && !ep->rtr) {
		unsigned int ms = READ_ONCE(kiwi_first_fpdu_ms);

		if (ms)
			kiwi_ep_arm_timer_ms(ep, ms);
	}
	kiwi_ep_event(ep, "established", 0);
	kiwi_stat_add(ep->kdev, KIWI_STAT_CM_ESTABLISHED, 1);

	/* Bytes that arrived right behind the MPA frame are waiting. */
	lock_sock(sk);
	kiwi_rx_data_ready(sk);
	release_sock(sk);
	/*
	 * So may the peer's FIN or RST: if it came before RTS -- even in
	 * the same work run as the MPA frame -- no state change is left
	 * to tell us, and the connection would stay up, half-closed,
	 * until the consumer destroyed the QP.  One that comes from now on
	 * raises its own event.
	 */
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
	return 0;
}

/*
 * Event @ev ends an established connection (a row with DISCONNECT,
 * actions @act): unbind the QP, tell the consumer the connection is
 * gone (@status), release the socket -- with a RST if the row says so,
 * else with a FIN -- and only then leave RTS or CLOSING: until the
 * socket is released the receive path finds the QP through the state.
 */
static void kiwi_ep_close(struct kiwi_ep *ep, enum kiwi_ep_event ev, int act,
			  int status)
{
	struct kiwi_qp *qp = ep->qp;
	bool reset = act & KIWI_EPA_RST;

	kiwi_ep_event(ep, reset ? "abort" : "close", status);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	/* A FIN ends the stream after the peer's last message: place it. */
	if (qp && (act & KIWI_EPA_DRAIN) && ep->sock)
		kiwi_rx_drain(qp, ep->sock->sk);
	if (qp)
		kiwi_qp_disconnected(qp);
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, reset);
	if (qp) {
		/* No receive callback can run any more. */
		kiwi_rx_release(qp);
		kiwi_qp_unbind(qp);
		ep->qp = NULL;
		kiwi_qp_put(&qp->ibqp);
	}
	if (ep->cm_id && (act & KIWI_EPA_DISCONNECT)) {
		if (!ep->disconnected)
			kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_DISCONNECT,
				    status, NULL, 0);
		kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CLOSE, 0, NULL, 0);
	}
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

/* ---- a connect that failed ---- */

/*
 * Event @ev ends an active connect (a row with FAIL_CONNECT, actions
 * @act): the iw_cm hears CONNECT_REPLY with @status (and a reject's
 * private data @pd), the QP's reference goes, the socket is reset.
 */
static void kiwi_active_fail(struct kiwi_ep *ep, enum kiwi_ep_event ev,
			     int act, int status, const void *pd, u32 pd_len)
{
	kiwi_ep_event(ep, "connect_failed", status);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	if (ep->cm_id)
		kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CONNECT_REPLY, status,
			    pd, pd_len);
	if (ep->qp) {
		kiwi_qp_put(&ep->qp->ibqp);
		ep->qp = NULL;
	}
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, act & KIWI_EPA_RST);
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

/* ---- connection requests the iw_cm holds ---- */

int kiwi_req_publish(struct kiwi_ep *ep)
{
	kiwi_ep_get(ep);
	if (xa_alloc_cyclic(&kiwi_req_xa, &ep->req_id, ep, xa_limit_31b,
			    &kiwi_req_next, GFP_KERNEL) < 0) {
		kiwi_ep_put(ep);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Under ep->lock: end the iw_cm's hold; false if accept or reject has
 * taken it (and then waits for ep->lock to finish the request).
 */
static bool kiwi_req_drop(struct kiwi_ep *ep)
{
	u32 id = ep->req_id;

	lockdep_assert_held(&ep->lock);
	ep->req_id = 0;
	if (!id || xa_erase(&kiwi_req_xa, id) != ep)
		return false;
	kiwi_ep_put(ep);	/* the caller holds its own */
	return true;
}

/* Accept or reject for @id's request: its endpoint, referenced, or NULL. */
struct kiwi_ep *kiwi_req_take(struct iw_cm_id *id)
{
	unsigned long cookie = (uintptr_t)id->provider_data;

	id->provider_data = NULL;
	return cookie ? xa_erase(&kiwi_req_xa, cookie) : NULL;
}

/* ---- the table's actions ---- */

/*
 * Event @ev for @ep, as its row of the table asks, the state written
 * last: a failed active connect (FAIL_CONNECT: @status, a reject's
 * private data @pd), an established connection's end (DISCONNECT), or
 * the row's own list -- a repeat of the RTR, our FIN, the iw_cm's hold
 * on a request ended, the consumer's reject (@pd) sent, the socket
 * released.  A refused event is counted and changes nothing; an
 * ignored one does nothing.  Under ep->lock.
 */
void kiwi_ep_do(struct kiwi_ep *ep, enum kiwi_ep_event ev, int status,
		const void *pd, u32 pd_len)
{
	int act = kiwi_ep_step(ep, ev);

	if (act <= 0)
		return;
	if (act & KIWI_EPA_TIMED_OUT) {
		kiwi_ep_event(ep, "timeout", -ETIMEDOUT);
		kiwi_stat_add(ep->kdev, KIWI_STAT_CM_TIMEOUT, 1);
	}
	if (act & KIWI_EPA_NUDGE)
		kiwi_ep_nudge(ep);
	if (act & KIWI_EPA_SHUT_WR) {
		/* Graceful: FIN now, wait (bounded) for the peer's FIN. */
		ep->disconnected = true;
		kernel_sock_shutdown(ep->sock, SHUT_WR);
		kiwi_ep_arm_timer(ep);
	}
	if (act & KIWI_EPA_FAIL_CONNECT) {
		kiwi_active_fail(ep, ev, act, status, pd, pd_len);
		return;
	}
	if (act & KIWI_EPA_DISCONNECT) {
		kiwi_ep_close(ep, ev, act, status);
		return;
	}
	if ((act & KIWI_EPA_TAKE_REQ) && !kiwi_req_drop(ep))
		return;		/* accept or reject has it: theirs to end */
	if (act & KIWI_EPA_DROP_REQ)
		kiwi_req_drop(ep);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	if ((act & KIWI_EPA_SEND_REJECT) && ep->sock) {
		kiwi_ep_event(ep, "reject", 0);
		kiwi_mpa_send(ep, false, KIWI_MPA_FLAG_R, pd, pd_len);
		kiwi_stat_add(ep->kdev, KIWI_STAT_MPA_REJECT_TX, 1);
	}
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, act & KIWI_EPA_RST);
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

/*
 * Called by the QP when it leaves RTS: to SQD (graceful) or to ERROR /
 * TERMINATE (abort).  Runs with the QP state lock held: defer.
 */
void kiwi_cm_qp_closing(struct kiwi_qp *qp, bool abort)
{
	struct kiwi_ep *ep = qp->ep;

	if (ep)
		kiwi_ep_kick(ep, abort ? KIWI_EV_ABORT : KIWI_EV_CLOSE);
}

/* For the receive path, under sk_callback_lock: the bound QP. */
struct kiwi_qp *kiwi_cm_ep_qp(struct kiwi_ep *ep)
{
	return ep->state == KIWI_EP_RTS || ep->state == KIWI_EP_CLOSING ?
	       ep->qp : NULL;
}

/*
 * Under ep->lock: end whatever the endpoint is doing, at once (every
 * state but CLOSED goes to CLOSED on DEVICE_GONE).  A connect fails
 * with ENODEV, a connection is aborted.
 */
static void kiwi_ep_shut(struct kiwi_ep *ep)
{
	int act = kiwi_epfsm(ep->state, KIWI_EPE_DEVICE_GONE).act;

	kiwi_ep_do(ep, KIWI_EPE_DEVICE_GONE,
		   act & KIWI_EPA_FAIL_CONNECT ? -ENODEV : -ECONNABORTED,
		   NULL, 0);
}

/* An endpoint of @kdev (any, if NULL) not yet closed, referenced. */
static struct kiwi_ep *kiwi_ep_find_open(struct kiwi_device *kdev)
{
	struct kiwi_ep *ep, *found = NULL;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		if ((kdev && ep->kdev != kdev) ||
		    READ_ONCE(ep->state) == KIWI_EP_CLOSED)
			continue;
		if (kref_get_unless_zero(&ep->ref)) {
			found = ep;
			break;
		}
	}
	spin_unlock(&kiwi_ep_list_lock);
	return found;
}

/*
 * @kdev is going away; its iw_cm ids are gone already.  Close every
 * endpoint still on it -- half-open connections, requests never
 * answered -- so that none uses the device or its sockets again.
 */
void kiwi_cm_dev_close(struct kiwi_device *kdev)
{
	struct kiwi_ep *ep;

	while ((ep = kiwi_ep_find_open(kdev))) {
		mutex_lock(&ep->lock);
		kiwi_ep_shut(ep);	/* CLOSED already: ignored */
		mutex_unlock(&ep->lock);
		kiwi_ep_put(ep);
	}
}

int kiwi_cm_init(void)
{
	kiwi_cm_wq = alloc_workqueue("kiwi_cm", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return kiwi_cm_wq ? 0 : -ENOMEM;
}

/* An endpoint whose timer is pending, referenced; NULL if none. */
static struct kiwi_ep *kiwi_ep_find_timer(void)
{
	struct kiwi_ep *ep, *found = NULL;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		if (delayed_work_pending(&ep->timer) &&
		    kref_get_unless_zero(&ep->ref)) {
			found = ep;
			break;
		}
	}
	spin_unlock(&kiwi_ep_list_lock);
	return found;
}

/*
 * Module unload, every device gone: close what is left, take back the
 * timers that have not fired (a pending timer would queue work on a
 * workqueue that no longer exists), run the works still queued (they
 * find their endpoints closed and drop their references), and wait for
 * the last endpoint.  None of our code runs for an endpoint afterwards,
 * and no socket calls us: each was released with its callbacks restored.
 */
void kiwi_cm_exit(void)
{
	struct kiwi_ep *ep;

	kiwi_cm_dev_close(NULL);
	while ((ep = kiwi_ep_find_timer())) {
		if (cancel_delayed_work(&ep->timer))
			kiwi_ep_put(ep);	/* the timer's */
		kiwi_ep_put(ep);
	}
	destroy_workqueue(kiwi_cm_wq);
	xa_destroy(&kiwi_req_xa);
	if (!wait_event_timeout(kiwi_ep_freed, !atomic_read(&kiwi_ep_live),
				10 * HZ))
		WARN(1, "kiwi: %d connection endpoint(s) leaked\n",
		     atomic_read(&kiwi_ep_live));
}
