// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: each endpoint's work -- what the events its socket, its timer
 * and its QP raise mean in each state: on a listener, accepting TCP
 * connections (within the half-open quotas); the passive side's MPA
 * request, handed to the iw_cm as a connection request; the active
 * side's TCP connect and MPA reply, up to RTS.  What an event then
 * does is the row of the state machine's table (kiwi_ep_do(), cm.c).
 *
 * The work and the handlers it dispatches to are in one file, above
 * cm.c: they call cm.c, and cm.c calls nothing here (the work function
 * reaches it as kiwi_ep_new()'s argument).  The work runs under
 * ep->lock.
 */
#include <linux/string.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"

/* ---- active side ---- */

static void kiwi_active_connected(struct kiwi_ep *ep)
{
	const void *pd = ep->mpa_buf + sizeof(struct kiwi_mpa_rr);
	int rv;

	kiwi_ep_next(ep, KIWI_EPE_TCP_CONNECTED);
	kiwi_sock_clamp(ep);
	kiwi_ep_event(ep, "mpa_request_sent", 0);
	/* The request was staged in mpa_buf by kiwi_connect(). */
	rv = kiwi_mpa_send(ep, true, kiwi_mpa_flags(ep), pd, ep->mpa_got);
	ep->mpa_got = 0;
	if (rv)
		kiwi_ep_do(ep, KIWI_EPE_MPA_SEND_FAILED, rv, NULL, 0);
}

static void kiwi_active_reply(struct kiwi_ep *ep)
{
	struct kiwi_mpa_info *m = &ep->mpa;
	int rv = kiwi_mpa_recv(ep, false);

	if (!rv)
		return;
	if (rv < 0) {
		kiwi_ep_do(ep, KIWI_EPE_MPA_REPLY_BAD,
			   rv == -EPROTO ? -ECONNREFUSED : rv, NULL, 0);
		return;
	}
	if (m->reject) {
		kiwi_ep_event(ep, "mpa_rejected", -ECONNREFUSED);
		kiwi_stat_add(ep->kdev, KIWI_STAT_MPA_REJECT_RX, 1);
		kiwi_ep_do(ep, KIWI_EPE_MPA_REJECTED, -ECONNREFUSED,
			   kiwi_mpa_ulp_pd(ep), m->ulp_pd_len);
		return;
	}
	/* Either side asking for CRC makes both use it (RFC 5044 7.1). */
	ep->crc = ep->crc || m->crc;
	ep->large = ep->large && m->large;
	/* The responder's M asks us, the initiator, for markers. */
	ep->mk_tx = m->markers;
	if (m->enhanced) {
		ep->ord = min_t(u16, ep->ord, m->ird);
		ep->ird = min_t(u16, ep->ird, KIWI_MAX_IRD);
		/*
		 * Exactly one RTR kind must have been chosen, and one we
		 * offered: peer-to-peer only if we asked for it.
		 */
		if (m->p2p && (hweight16(m->rtr) != 1 || !(m->rtr & ep->rtr))) {
			kiwi_ep_dbg(ep, "MPA reply refused: RTR %#x chosen, %#x offered\n",
				    m->rtr, ep->rtr);
			kiwi_ep_do(ep, KIWI_EPE_MPA_REPLY_BAD, -ECONNREFUSED,
				   NULL, 0);
			return;
		}
		ep->rtr = m->p2p ? m->rtr : 0;
	} else {
		/*
		 * A revision 1 reply (or one without RFC 6581 data) knows
		 * no RTR: ep->rtr still holds every kind we offered, which
		 * would send the peer an unsolicited zero-length WRITE.
		 */
		ep->rtr = 0;
	}
	rv = kiwi_ep_go_rts(ep, ep->rtr);
	if (rv) {
		kiwi_ep_do(ep, KIWI_EPE_QP_REFUSED, rv, NULL, 0);
		return;
	}
	kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
		    kiwi_mpa_ulp_pd(ep), m->ulp_pd_len);
}

/* ---- passive side ---- */

static int kiwi_req_upcall(struct kiwi_ep *ep, struct kiwi_ep *l)
{
	unsigned int drop = READ_ONCE(kiwi_fault_drop_req);

	if (drop && cmpxchg(&kiwi_fault_drop_req, drop, drop - 1) == drop) {
		kiwi_ep_event(ep, "fault_drop_conn_req", 0);
		return 0;	/* as the iw_cm does: no error, no answer */
	}
	return kiwi_upcall(ep, l->cm_id, IW_CM_EVENT_CONNECT_REQUEST, 0,
			   kiwi_mpa_ulp_pd(ep), ep->mpa.ulp_pd_len);
}

static void kiwi_passive_request(struct kiwi_ep *ep)
{
	struct kiwi_ep *l = ep->listener;
	int rv = kiwi_mpa_recv(ep, true);

	if (!ep->got_first && ep->mpa_got) {
		/* Talking: the MPA timeout for the rest of the request. */
		ep->got_first = true;
		if (rv == 0 && READ_ONCE(kiwi_first_byte_ms))
			kiwi_ep_arm_timer(ep);
	}
	if (!rv)
		return;
	kiwi_ep_event(ep, rv < 0 ? "mpa_request_bad" : "mpa_request", rv);
	if (rv < 0) {
		kiwi_ep_do(ep, KIWI_EPE_MPA_REQUEST_BAD, rv, NULL, 0);
		return;
	}

	kiwi_ep_cancel_timer(ep);
	ep->crc = ep->mpa.crc || READ_ONCE(kiwi_crc_default);
	ep->large = ep->mpa.large && READ_ONCE(kiwi_large_fpdu);
	/* The initiator's M asks us for markers; ours asks it. */
	ep->mk_tx = ep->mpa.markers;
	ep->mk_rx = kiwi_mk_request(false);
	ep->ird = ep->mpa.enhanced ? ep->mpa.ird : KIWI_MAX_IRD;
	ep->ord = ep->mpa.enhanced ? ep->mpa.ord : KIWI_MAX_ORD;
	kiwi_ep_next(ep, KIWI_EPE_MPA_REQUEST);

	/*
	 * Lock order: a connection's lock, then its listener's.  Only
	 * kiwi_listen_accept() takes a child's under its listener's, for a
	 * child that nothing else can lock yet but kiwi_cm_dev_close(),
	 * which takes no listener's (see there).
	 */
	mutex_lock_nested(&l->lock, SINGLE_DEPTH_NESTING);
	if (l->state != KIWI_EP_LISTEN || !l->cm_id) {
		mutex_unlock(&l->lock);
		goto drop;
	}
	/* The iw_cm's reference to us lasts until accept or reject. */
	rv = kiwi_req_publish(ep);
	if (!rv)
		rv = kiwi_req_upcall(ep, l);
	mutex_unlock(&l->lock);
	if (rv)
		goto drop;
	if (READ_ONCE(kiwi_req_timeout_ms))
		kiwi_ep_arm_timer_ms(ep, READ_ONCE(kiwi_req_timeout_ms));
	return;
drop:
	/* The listener is gone or the iw_cm refused: end our hold, reset. */
	kiwi_ep_do(ep, KIWI_EPE_REQUEST_UNDELIVERED, rv, NULL, 0);
}

/*
 * An accepted socket is a clone of the listener and has kiwi's callbacks
 * with it: give it the listener's own (TCP's) first, so that those, not
 * ours, are what kiwi_sk_assoc() saves and kiwi_sk_release() restores.
 */
static void kiwi_sk_defaults(struct kiwi_ep *l, struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = l->saved_data_ready;
	sk->sk_state_change = l->saved_state_change;
	sk->sk_write_space = l->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* A new passive connection's timer: first_byte_ms, then the rest. */
static void kiwi_ep_arm_first_byte(struct kiwi_ep *ep)
{
	unsigned int fb = READ_ONCE(kiwi_first_byte_ms);

	if (fb && fb < READ_ONCE(kiwi_mpa_timeout_ms))
		kiwi_ep_arm_timer_ms(ep, fb);
	else
		kiwi_ep_arm_timer(ep);
}

static void kiwi_listen_accept(struct kiwi_ep *l)
{
	struct sockaddr_storage peer;
	struct socket *ns;
	struct kiwi_ep *ep;

	while (l->state == KIWI_EP_LISTEN &&
	       !kernel_accept(l->sock, &ns, O_NONBLOCK)) {
		memset(&peer, 0, sizeof(peer));
		kernel_getpeername(ns, (struct sockaddr *)&peer);
		if (!kiwi_half_open_get(l, &peer)) {
			kiwi_stat_add(l->kdev, KIWI_STAT_CM_HALF_OPEN_REFUSED, 1);
			kiwi_ep_event(l, "half_open_refused", -EBUSY);
			sock_no_linger(ns->sk);		/* RST */
			sock_release(ns);
			continue;
		}
		ep = kiwi_ep_alloc(l->kdev);
		if (!ep) {
			atomic_dec(&l->children);
			atomic_dec(&l->kdev->half_open);
			sock_release(ns);
			continue;
		}
		tcp_sock_set_nodelay(ns->sk);	/* buffers: inherited */
		kiwi_sk_defaults(l, ns->sk);
		ep->remote = peer;
		kernel_getsockname(ns, (struct sockaddr *)&ep->local);
		/*
		 * The child's lock under its listener's, against the order
		 * kiwi_passive_request() keeps: safe while the child is
		 * new -- its work is not queued and no socket callback
		 * reaches it before kiwi_sk_assoc(); the one other taker,
		 * kiwi_cm_dev_close(), takes no listener's lock.
		 */
		mutex_lock_nested(&ep->lock, SINGLE_DEPTH_NESTING);
		if (kiwi_ep_next(ep, KIWI_EPE_TCP_ACCEPTED) < 0) {
			/* The device's removal closed it first. */
			mutex_unlock(&ep->lock);
			atomic_dec(&l->children);
			atomic_dec(&l->kdev->half_open);
			sock_release(ns);
			kiwi_ep_put(ep);
			continue;
		}
		kiwi_ep_get(l);
		ep->listener = l;
		WRITE_ONCE(ep->half_open, true);
		kiwi_sk_assoc(ep, ns);
		kiwi_sock_clamp(ep);
		kiwi_ep_arm_first_byte(ep);
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
		mutex_unlock(&ep->lock);
		kiwi_ep_put(ep);	/* queued work and timer hold it */
	}
}

/* ---- the work ---- */

static void kiwi_ep_on_sock(struct kiwi_ep *ep)
{
	struct sock *sk = ep->sock ? ep->sock->sk : NULL;

	if (!sk)
		return;
	switch (ep->state) {
	case KIWI_EP_LISTEN:
		kiwi_listen_accept(ep);
		break;
	case KIWI_EP_CONNECTING:
		if (sk->sk_state == TCP_ESTABLISHED)
			kiwi_active_connected(ep);
		else if (sk->sk_state == TCP_CLOSE)
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET,
				   sock_error(sk) ?: -ECONNREFUSED, NULL, 0);
		break;
	case KIWI_EP_AWAIT_REP:
		kiwi_active_reply(ep);
		break;
	case KIWI_EP_AWAIT_REQ:
		kiwi_passive_request(ep);
		break;
	case KIWI_EP_RECVD_REQ:
		if (sk->sk_state != TCP_ESTABLISHED)	/* accept will fail */
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET, 0, NULL, 0);
		break;
	case KIWI_EP_RTS:
		if (sk->sk_state == TCP_CLOSE_WAIT)
			kiwi_ep_do(ep, KIWI_EPE_PEER_FIN, 0, NULL, 0);
		else if (sk->sk_state != TCP_ESTABLISHED)	/* reset, timeout */
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET,
				   sock_error(sk) ?: -ECONNRESET, NULL, 0);
		break;
	case KIWI_EP_CLOSING:
		/* Our FIN is out; done once the peer's arrived. */
		if (sk->sk_state == TCP_CLOSE)
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET, 0, NULL, 0);
		else if (sk->sk_shutdown & RCV_SHUTDOWN ||
			 sk->sk_state == TCP_TIME_WAIT)
			kiwi_ep_do(ep, KIWI_EPE_PEER_FIN, 0, NULL, 0);
		break;
	default:
		break;
	}
}

/*
 * The endpoint's timer: a connect fails with ETIMEDOUT; a close that
 * timed out reports 0 (the consumer asked for it, and heard at SQD).
 */
static void kiwi_ep_on_timeout(struct kiwi_ep *ep)
{
	int act = kiwi_epfsm(ep->state, KIWI_EPE_TIMEOUT).act;

	/*
	 * The timer fired for a deadline since replaced (an RTS timer
	 * just before a close armed its own): the new one is pending.
	 */
	if (time_before(jiffies, READ_ONCE(ep->timer_due)))
		return;
	kiwi_ep_dbg(ep, "timer expired in %s\n", kiwi_ep_state_name(ep->state));
	kiwi_ep_do(ep, KIWI_EPE_TIMEOUT,
		   act & KIWI_EPA_FAIL_CONNECT ? -ETIMEDOUT : 0, NULL, 0);
}

static void kiwi_ep_work(struct work_struct *work)
{
	struct kiwi_ep *ep = container_of(work, struct kiwi_ep, work);

	mutex_lock(&ep->lock);
	/*
	 * The QP left RTS for ERROR or TERMINATE.  The connection ends at
	 * once for the consumer, but its socket is closed with a FIN, not
	 * a RST: kiwi completes a send as soon as TCP has the bytes, so a
	 * reset could still discard a message (or the TERMINATE) already
	 * reported sent.  TCP delivers what it holds, then lets the orphan
	 * go (bounded by its own retry and FIN-WAIT limits); if the peer's
	 * data is left unread, tcp_close() resets anyway.
	 */
	if (test_and_clear_bit(KIWI_EV_ABORT, &ep->events))
		kiwi_ep_do(ep, KIWI_EPE_LOCAL_ABORT, -ECONNABORTED, NULL, 0);
	if (test_and_clear_bit(KIWI_EV_CLOSE, &ep->events))
		kiwi_ep_do(ep, KIWI_EPE_LOCAL_CLOSE, 0, NULL, 0);
	if (test_and_clear_bit(KIWI_EV_SOCK, &ep->events))
		kiwi_ep_on_sock(ep);
	if (test_and_clear_bit(KIWI_EV_TIMEOUT, &ep->events))
		kiwi_ep_on_timeout(ep);
	mutex_unlock(&ep->lock);
	kiwi_ep_put(ep);
}

/*
 * A new endpoint, in state IDLE, whose work is this file's: cm.c makes
 * it (kiwi_ep_new()) and names nothing of this file.
 */
struct kiwi_ep *kiwi_ep_alloc(struct kiwi_device *kdev)
{
	return kiwi_ep_new(kdev, kiwi_ep_work);
}
