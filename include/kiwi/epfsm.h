/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the connection endpoint's state machine as data -- for each
 * (state, event), either the next state and the actions the transition
 * asks for, or nothing: an event the table lacks is refused.
 *
 * An endpoint (kmod/cm.h, struct kiwi_ep) is a listener, or one TCP
 * connection from its connect or accept through the MPA exchange
 * (RFC 5044 section 7, RFC 6581) to RTS, where its socket belongs to a
 * QP, and on to its close.  CLOSED is the end: no event leaves it.
 *
 * Events are every reason kiwi changes an endpoint's state: the iw_cm's
 * calls (kmod/iwcm.c), what the TCP socket reports, the MPA exchange's
 * outcomes (kmod/cmwork.c, kmod/cm.c, kmod/mpa.c), the QP's requests to
 * close, the timer, and the device going away.
 *
 * A row either moves (KIWI_EPA_WRITE: the state is written and traced;
 * a move to CLOSED is written last, once the row's actions are done,
 * because the receive path finds the QP through the state until the
 * socket is released) or stays, with or without actions: an event that
 * comes late (a QP's close after the connection ended, a timer that
 * fired as the endpoint closed) is ignored; a timer in RTS repeats the
 * ready-to-receive message; a reset socket under a pending connect
 * request is released, and the consumer's accept then fails.
 *
 * What an event means is its caller's work (connect starts the TCP
 * connect, TCP_CONNECTED sends the MPA request, RTS_REACHED hands the
 * socket to the QP); the actions are what the table decides, state by
 * state: how the endpoint ends, whom it tells, whether its socket goes
 * with a FIN or a RST.
 *
 * The kernel (kmod/cmstate.c's kiwi_ep_next(), kmod/cm.c's kiwi_ep_do())
 * performs the actions; the unit test (selftests/wire/epfsm.c) checks
 * the whole matrix in user space.  Compiles in the kernel and in user
 * space, like qpfsm.h.
 */
#ifndef KIWI_EPFSM_H
#define KIWI_EPFSM_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <linux/types.h>
#endif

/* The states of a connection endpoint. */
enum kiwi_ep_state {
	KIWI_EP_IDLE,			/* allocated, nothing started */
	KIWI_EP_LISTEN,			/* a listener */
	KIWI_EP_CONNECTING,		/* active: TCP connect in progress */
	KIWI_EP_AWAIT_REP,		/* active: MPA request sent */
	KIWI_EP_AWAIT_REQ,		/* passive: reading MPA request */
	KIWI_EP_RECVD_REQ,		/* passive: consumer to accept/reject */
	KIWI_EP_RTS,			/* QP bound, data flowing */
	KIWI_EP_CLOSING,		/* local graceful close, FIN sent */
	KIWI_EP_CLOSED,			/* the end */
};
#define KIWI_EP_NSTATES		(KIWI_EP_CLOSED + 1)

/* Why an endpoint's state changes. */
enum kiwi_ep_event {
	/* the iw_cm's calls (iwcm.c) */
	KIWI_EPE_LISTEN,		/* iw_create_listen */
	KIWI_EPE_LISTENER_DESTROYED,	/* iw_destroy_listen */
	KIWI_EPE_CONNECT,		/* iw_connect: TCP connect started */
	KIWI_EPE_CONNECT_ERROR,		/* ... and failed at once */
	KIWI_EPE_ACCEPT_FAILED,		/* iw_accept could not complete */
	KIWI_EPE_REJECT,		/* iw_reject */
	/* the TCP socket */
	KIWI_EPE_TCP_ACCEPTED,		/* a listener's new connection */
	KIWI_EPE_TCP_CONNECTED,		/* active: the TCP connect completed */
	KIWI_EPE_PEER_FIN,		/* the peer closed its side */
	KIWI_EPE_SOCK_RESET,		/* refused, reset or failed */
	/* the MPA exchange (cmwork.c, cm.c, mpa.c) */
	KIWI_EPE_MPA_SEND_FAILED,	/* active: the request could not go */
	KIWI_EPE_MPA_REQUEST,		/* passive: a valid request came */
	KIWI_EPE_MPA_REQUEST_BAD,	/* ... malformed, or the socket died */
	KIWI_EPE_REQUEST_UNDELIVERED,	/* ... the consumer cannot be asked */
	KIWI_EPE_MPA_REPLY_BAD,		/* active: a reply we cannot take */
	KIWI_EPE_MPA_REJECTED,		/* active: the reply has Reject set */
	KIWI_EPE_QP_REFUSED,		/* active: the QP could not go RTS */
	KIWI_EPE_RTS_REACHED,		/* the QP is connected: hand it over */
	/* the QP (kiwi_cm_qp_closing()) */
	KIWI_EPE_LOCAL_CLOSE,		/* QP to SQD: graceful close */
	KIWI_EPE_LOCAL_ABORT,		/* QP to ERROR or TERMINATE */
	/* the endpoint's timer, the device */
	KIWI_EPE_TIMEOUT,
	KIWI_EPE_DEVICE_GONE,		/* device removal, module unload */
};
#define KIWI_EPE_NEVENTS	(KIWI_EPE_DEVICE_GONE + 1)

/*
 * What a transition asks of the kernel, in the order cm.c does it:
 *
 * WRITE         the state is written and traced (a move to CLOSED
 *               after everything below)
 * TIMED_OUT     the "timeout" trace event, counted in cm_timeouts
 * NUDGE         repeat the ready-to-receive message if the peer has
 *               sent nothing yet (kiwi_ep_nudge())
 * SHUT_WR       our FIN now; the consumer asked for the close, so no
 *               DISCONNECT follows; the close timer runs
 * TAKE_REQ      take the connect request back from the iw_cm; if accept
 *               or reject has taken it already, the event is ignored
 *               (they finish the endpoint)
 * DROP_REQ      end the iw_cm's hold on the connect request (an accept
 *               or reject that took it finds the endpoint closed)
 * STOP_TIMER    cancel the endpoint's timer
 * FAIL_CONNECT  the active connect failed: CONNECT_REPLY with the error
 *               to the iw_cm, the QP's reference dropped
 * DISCONNECT    the connection ends for the consumer: the QP is told
 *               and unbound, the iw_cm hears DISCONNECT (unless SHUT_WR
 *               stood for it) and CLOSE
 * DRAIN         with DISCONNECT: place what the peer sent before its FIN
 *               while the QP still owns the socket
 * SEND_REJECT   the consumer's MPA reply with the Reject bit
 * RELEASE       release the socket: with a FIN ...
 * RST           ... or, with this, a RST
 * DROP_ID       drop the endpoint's iw_cm id
 */
enum kiwi_ep_action {
	KIWI_EPA_WRITE = 1 << 0,
	KIWI_EPA_TIMED_OUT = 1 << 1,
	KIWI_EPA_NUDGE = 1 << 2,
	KIWI_EPA_SHUT_WR = 1 << 3,
	KIWI_EPA_TAKE_REQ = 1 << 4,
	KIWI_EPA_DROP_REQ = 1 << 5,
	KIWI_EPA_STOP_TIMER = 1 << 6,
	KIWI_EPA_FAIL_CONNECT = 1 << 7,
	KIWI_EPA_DISCONNECT = 1 << 8,
	KIWI_EPA_DRAIN = 1 << 9,
	KIWI_EPA_SEND_REJECT = 1 << 10,
	KIWI_EPA_RELEASE = 1 << 11,
	KIWI_EPA_RST = 1 << 12,
	KIWI_EPA_DROP_ID = 1 << 13,
};

/* One cell of the table. */
struct kiwi_epfsm_step {
	__u8 legal;		/* 0: the event is refused in this state */
	__u8 next;		/* enum kiwi_ep_state, if KIWI_EPA_WRITE */
	__u16 act;		/* enum kiwi_ep_action */
};

/* Actions shared by several rows. */
#define KIWI_EPA_RELEASE_RST	(KIWI_EPA_RELEASE | KIWI_EPA_RST)
/* The active connect fails: tell the iw_cm, reset the connection. */
#define KIWI_EPA_CONNECT_FAILED	(KIWI_EPA_STOP_TIMER | \
				 KIWI_EPA_FAIL_CONNECT | \
				 KIWI_EPA_RELEASE_RST | KIWI_EPA_DROP_ID)
/* An established connection ends: tell the QP and the iw_cm. */
#define KIWI_EPA_CONN_END	(KIWI_EPA_STOP_TIMER | \
				 KIWI_EPA_DISCONNECT | \
				 KIWI_EPA_RELEASE | KIWI_EPA_DROP_ID)
/* The device goes: whatever the endpoint holds, reset and dropped. */
#define KIWI_EPA_DEV_GONE	(KIWI_EPA_STOP_TIMER | \
				 KIWI_EPA_RELEASE_RST | KIWI_EPA_DROP_ID)

/* The cell for @ev in @state; refused (legal 0) if either is unknown. */
static inline struct kiwi_epfsm_step kiwi_epfsm(unsigned int state,
						 unsigned int ev)
{
#define KIWI_GO(to, acts)	{ 1, KIWI_EP_##to, KIWI_EPA_WRITE | (acts) }
#define KIWI_STAY(acts)		{ 1, 0, (acts) }
	static const struct kiwi_epfsm_step
		table[KIWI_EP_NSTATES][KIWI_EPE_NEVENTS] = {
	[KIWI_EP_IDLE] = {
		/* A new endpoint becomes a listener or a connection. */
		[KIWI_EPE_LISTEN] = KIWI_GO(LISTEN, 0),
		[KIWI_EPE_CONNECT] = KIWI_GO(CONNECTING, 0),
		[KIWI_EPE_TCP_ACCEPTED] = KIWI_GO(AWAIT_REQ, 0),
		/*
		 * The device may go while a connect is still setting its
		 * endpoint up.  Everything else: refused (no timer, no
		 * socket, no QP yet).
		 */
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_DEV_GONE),
	},
	[KIWI_EP_LISTEN] = {
		/*
		 * Destroyed by the iw_cm (the listening socket closed, no
		 * RST to anyone), or reset with the device.  A listener
		 * has no timer: a timeout is refused.
		 */
		[KIWI_EPE_LISTENER_DESTROYED] = KIWI_GO(CLOSED,
							KIWI_EPA_RELEASE |
							KIWI_EPA_DROP_ID),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_DEV_GONE),
	},
	[KIWI_EP_CONNECTING] = {
		[KIWI_EPE_TCP_CONNECTED] = KIWI_GO(AWAIT_REP, 0),
		/*
		 * kernel_connect() failed at once: iw_connect returns the
		 * error itself, the iw_cm hears no CONNECT_REPLY.
		 */
		[KIWI_EPE_CONNECT_ERROR] = KIWI_GO(CLOSED,
						   KIWI_EPA_STOP_TIMER |
						   KIWI_EPA_RELEASE_RST |
						   KIWI_EPA_DROP_ID),
		/* Refused, unreachable, timed out: CONNECT_REPLY says so. */
		[KIWI_EPE_SOCK_RESET] = KIWI_GO(CLOSED,
						KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_TIMEOUT] = KIWI_GO(CLOSED, KIWI_EPA_TIMED_OUT |
					     KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED,
						 KIWI_EPA_CONNECT_FAILED),
	},
	[KIWI_EP_AWAIT_REP] = {
		/*
		 * Every way the MPA exchange can fail for the initiator
		 * ends it the same way: CONNECT_REPLY with the error (and
		 * the reject's private data), the connection reset.
		 */
		[KIWI_EPE_MPA_SEND_FAILED] = KIWI_GO(CLOSED,
						     KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_MPA_REPLY_BAD] = KIWI_GO(CLOSED,
						   KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_MPA_REJECTED] = KIWI_GO(CLOSED,
						  KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_QP_REFUSED] = KIWI_GO(CLOSED,
						KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_RTS_REACHED] = KIWI_GO(RTS, 0),
		[KIWI_EPE_TIMEOUT] = KIWI_GO(CLOSED, KIWI_EPA_TIMED_OUT |
					     KIWI_EPA_CONNECT_FAILED),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED,
						 KIWI_EPA_CONNECT_FAILED),
	},
	[KIWI_EP_AWAIT_REQ] = {
		/*
		 * Nobody has heard of this connection yet: whatever ends
		 * it, it is reset and forgotten.
		 */
		[KIWI_EPE_MPA_REQUEST] = KIWI_GO(RECVD_REQ, 0),
		[KIWI_EPE_MPA_REQUEST_BAD] = KIWI_GO(CLOSED,
						     KIWI_EPA_STOP_TIMER |
						     KIWI_EPA_RELEASE_RST),
		/*
		 * The timer fired: it is not cancelled (if the first byte
		 * re-armed it in the same run, it fires again, into CLOSED).
		 */
		[KIWI_EPE_TIMEOUT] = KIWI_GO(CLOSED, KIWI_EPA_TIMED_OUT |
					     KIWI_EPA_RELEASE_RST),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_DEV_GONE),
	},
	[KIWI_EP_RECVD_REQ] = {
		/*
		 * The listener is gone, or the iw_cm refused the request:
		 * end our hold on it (if it was published) and reset.
		 */
		[KIWI_EPE_REQUEST_UNDELIVERED] = KIWI_GO(CLOSED,
							 KIWI_EPA_DROP_REQ |
							 KIWI_EPA_STOP_TIMER |
							 KIWI_EPA_RELEASE_RST),
		/*
		 * The peer went while the consumer decides: release the
		 * socket now, the endpoint waits for accept (which then
		 * fails), reject or its timer.
		 */
		[KIWI_EPE_SOCK_RESET] = KIWI_STAY(KIWI_EPA_RELEASE_RST),
		[KIWI_EPE_RTS_REACHED] = KIWI_GO(RTS, 0),
		/* iw_accept's failure resets: no reject follows it. */
		[KIWI_EPE_ACCEPT_FAILED] = KIWI_GO(CLOSED,
						   KIWI_EPA_STOP_TIMER |
						   KIWI_EPA_RELEASE_RST),
		/* A reject is a reply: sent, then the socket closed (FIN). */
		[KIWI_EPE_REJECT] = KIWI_GO(CLOSED, KIWI_EPA_STOP_TIMER |
					    KIWI_EPA_SEND_REJECT |
					    KIWI_EPA_RELEASE),
		/* accept_timeout_ms: unless accept or reject came first. */
		[KIWI_EPE_TIMEOUT] = KIWI_GO(CLOSED, KIWI_EPA_TIMED_OUT |
					     KIWI_EPA_TAKE_REQ |
					     KIWI_EPA_RELEASE_RST),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_DROP_REQ |
						 KIWI_EPA_DEV_GONE),
	},
	[KIWI_EP_RTS] = {
		/* SQD: FIN now, then wait (bounded) for the peer's. */
		[KIWI_EPE_LOCAL_CLOSE] = KIWI_GO(CLOSING, KIWI_EPA_SHUT_WR),
		/*
		 * The QP failed: the consumer hears at once, but the
		 * socket closes with a FIN -- a RST could discard what
		 * kiwi already reported sent (the TERMINATE too).
		 */
		[KIWI_EPE_LOCAL_ABORT] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END),
		/* The peer's last messages are placed before the QP goes. */
		[KIWI_EPE_PEER_FIN] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
					      KIWI_EPA_DRAIN),
		[KIWI_EPE_SOCK_RESET] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
						KIWI_EPA_RST),
		/* The RTR repeat timer (kiwi_rtr_nudge_ms). */
		[KIWI_EPE_TIMEOUT] = KIWI_STAY(KIWI_EPA_NUDGE),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
						 KIWI_EPA_RST),
	},
	[KIWI_EP_CLOSING] = {
		/* Closing already, as asked. */
		[KIWI_EPE_LOCAL_CLOSE] = KIWI_STAY(0),
		[KIWI_EPE_LOCAL_ABORT] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END),
		/* The peer's FIN ends the close we began. */
		[KIWI_EPE_PEER_FIN] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
					      KIWI_EPA_DRAIN),
		[KIWI_EPE_SOCK_RESET] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
						KIWI_EPA_RST),
		/* The peer never sent its FIN: reset. */
		[KIWI_EPE_TIMEOUT] = KIWI_GO(CLOSED, KIWI_EPA_TIMED_OUT |
					     KIWI_EPA_CONN_END | KIWI_EPA_RST),
		[KIWI_EPE_DEVICE_GONE] = KIWI_GO(CLOSED, KIWI_EPA_CONN_END |
						 KIWI_EPA_RST),
	},
	[KIWI_EP_CLOSED] = {
		/*
		 * Terminal.  What may still arrive is ignored: the QP's
		 * close or abort queued before the connection ended, a
		 * timer that fired as it closed, an accept or reject that
		 * took the request as the endpoint was reset, a listener
		 * the device's removal closed first.
		 */
		[KIWI_EPE_LISTENER_DESTROYED] = KIWI_STAY(0),
		[KIWI_EPE_ACCEPT_FAILED] = KIWI_STAY(0),
		[KIWI_EPE_REJECT] = KIWI_STAY(0),
		[KIWI_EPE_LOCAL_CLOSE] = KIWI_STAY(0),
		[KIWI_EPE_LOCAL_ABORT] = KIWI_STAY(0),
		[KIWI_EPE_TIMEOUT] = KIWI_STAY(0),
		[KIWI_EPE_DEVICE_GONE] = KIWI_STAY(0),
	},
	};
#undef KIWI_GO
#undef KIWI_STAY
	static const struct kiwi_epfsm_step refused;

	if (state >= KIWI_EP_NSTATES || ev >= KIWI_EPE_NEVENTS)
		return refused;
	return table[state][ev];
}

static inline const char *kiwi_ep_state_name(unsigned int state)
{
	static const char *const names[KIWI_EP_NSTATES] = {
		[KIWI_EP_IDLE] = "IDLE",
		[KIWI_EP_LISTEN] = "LISTEN",
		[KIWI_EP_CONNECTING] = "CONNECTING",
		[KIWI_EP_AWAIT_REP] = "AWAIT_REP",
		[KIWI_EP_AWAIT_REQ] = "AWAIT_REQ",
		[KIWI_EP_RECVD_REQ] = "RECVD_REQ",
		[KIWI_EP_RTS] = "RTS",
		[KIWI_EP_CLOSING] = "CLOSING",
		[KIWI_EP_CLOSED] = "CLOSED",
	};

	return state < KIWI_EP_NSTATES ? names[state] : "?";
}

static inline const char *kiwi_ep_event_name(unsigned int ev)
{
	static const char *const names[KIWI_EPE_NEVENTS] = {
		[KIWI_EPE_LISTEN] = "LISTEN",
		[KIWI_EPE_LISTENER_DESTROYED] = "LISTENER_DESTROYED",
		[KIWI_EPE_CONNECT] = "CONNECT",
		[KIWI_EPE_CONNECT_ERROR] = "CONNECT_ERROR",
		[KIWI_EPE_ACCEPT_FAILED] = "ACCEPT_FAILED",
		[KIWI_EPE_REJECT] = "REJECT",
		[KIWI_EPE_TCP_ACCEPTED] = "TCP_ACCEPTED",
		[KIWI_EPE_TCP_CONNECTED] = "TCP_CONNECTED",
		[KIWI_EPE_PEER_FIN] = "PEER_FIN",
		[KIWI_EPE_SOCK_RESET] = "SOCK_RESET",
		[KIWI_EPE_MPA_SEND_FAILED] = "MPA_SEND_FAILED",
		[KIWI_EPE_MPA_REQUEST] = "MPA_REQUEST",
		[KIWI_EPE_MPA_REQUEST_BAD] = "MPA_REQUEST_BAD",
		[KIWI_EPE_REQUEST_UNDELIVERED] = "REQUEST_UNDELIVERED",
		[KIWI_EPE_MPA_REPLY_BAD] = "MPA_REPLY_BAD",
		[KIWI_EPE_MPA_REJECTED] = "MPA_REJECTED",
		[KIWI_EPE_QP_REFUSED] = "QP_REFUSED",
		[KIWI_EPE_RTS_REACHED] = "RTS_REACHED",
		[KIWI_EPE_LOCAL_CLOSE] = "LOCAL_CLOSE",
		[KIWI_EPE_LOCAL_ABORT] = "LOCAL_ABORT",
		[KIWI_EPE_TIMEOUT] = "TIMEOUT",
		[KIWI_EPE_DEVICE_GONE] = "DEVICE_GONE",
	};

	return ev < KIWI_EPE_NEVENTS ? names[ev] : "?";
}

#endif /* KIWI_EPFSM_H */
