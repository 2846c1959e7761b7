/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the iWARP QP state machine as data -- for each (state, event),
 * either the next state and the actions the transition asks for, or
 * nothing: an event the table lacks is refused.
 *
 * States are the RDMAC verbs' iWARP QP states (as mirrored to the
 * provider, enum kiwi_uqp_state): IDLE covers the IB states RESET,
 * INIT and RTR (no connection yet), RTS is connected, CLOSING a
 * graceful close under way (IB SQD), TERMINATE a TERMINATE sent or
 * received (IB ERR, the connection being aborted), ERROR the end (IB
 * ERR, work requests flushed).
 *
 * Events are every reason kiwi changes a QP's state: modify_qp to each
 * IB state (destroy_qp asks for ERR the same way), the CM's connection
 * established and gone, an error the data path detects (with or
 * without a TERMINATE to send) and a TERMINATE from the peer.
 *
 * A row either moves (KIWI_QPA_WRITE: the state word is written, traced
 * and published to the provider, even when it names the same state --
 * ERROR -> ERROR repeats an error, IDLE -> IDLE moves among RESET, INIT
 * and RTR) or is ignored (legal, nothing written, no action: an error
 * the data path reports after the QP already left RTS, an SQD while the
 * connection is already going down).
 *
 * The kernel performs the actions (kmod/qpev.c's kiwi_qp_next() writes
 * the state; qpev.c and qp.c act); the unit test
 * (selftests/wire/qpfsm.c) checks the whole matrix in user space.
 * Compiles in the kernel and in user space, like iwarp.h.
 */
#ifndef KIWI_QPFSM_H
#define KIWI_QPFSM_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <linux/types.h>
#endif
#include <rdma/kiwi-abi.h>

/* iWARP verbs QP states (RDMAC verbs 6.2), as mirrored to user space. */
enum kiwi_qp_state {
	KIWI_QP_IDLE = KIWI_UQP_IDLE,
	KIWI_QP_RTS = KIWI_UQP_RTS,
	KIWI_QP_CLOSING = KIWI_UQP_CLOSING,
	KIWI_QP_TERMINATE = KIWI_UQP_TERMINATE,
	KIWI_QP_ERROR = KIWI_UQP_ERROR,
};
#define KIWI_QP_NSTATES		(KIWI_QP_ERROR + 1)

/* Why a QP's state changes. */
enum kiwi_qp_event {
	/* modify_qp's target state (IB_QP_STATE); destroy_qp asks for ERR */
	KIWI_QPE_MODIFY_RESET,
	KIWI_QPE_MODIFY_INIT,
	KIWI_QPE_MODIFY_RTR,
	KIWI_QPE_MODIFY_RTS,
	KIWI_QPE_MODIFY_SQD,
	KIWI_QPE_MODIFY_SQE,
	KIWI_QPE_MODIFY_ERR,
	/* the CM (cm.c): MPA connection established, connection gone */
	KIWI_QPE_CONNECTED,
	KIWI_QPE_DISCONNECTED,
	/* the data path (rx.c, tx.c, sq.c; kiwi_qp_fail_all()) */
	KIWI_QPE_LOCAL_ERROR,	/* protocol error: send a TERMINATE */
	KIWI_QPE_LLP_ERROR,	/* the TCP stream failed: no TERMINATE */
	KIWI_QPE_TERMINATE_RECEIVED,
};
#define KIWI_QPE_NEVENTS	(KIWI_QPE_TERMINATE_RECEIVED + 1)

/*
 * The IB state a transition reports (query_qp): the values of the
 * kernel's enum ib_qp_state and of the uverbs ABI's IB_UVERBS_QPS_*
 * (qp.c checks that they agree).
 */
enum kiwi_qp_ib_state {
	KIWI_IBS_RESET = 0,
	KIWI_IBS_INIT = 1,
	KIWI_IBS_RTR = 2,
	KIWI_IBS_RTS = 3,
	KIWI_IBS_SQD = 4,
	KIWI_IBS_SQE = 5,
	KIWI_IBS_ERR = 6,
};

/*
 * What a transition asks of the kernel, in the order qp.c does it:
 *
 * WRITE      the state word is written, traced and published
 * RESET      forget the last connection: receive state, MSNs, CQ
 *            overflow, failed SQ
 * START_TX   transmit the WRs posted before the connection
 * DRAIN      let a pending TERMINATE out, shut the socket down, detach it
 * FLUSH_RQ   receive WRs complete flushed
 * SEND_TERM  queue a TERMINATE to the peer
 * FAIL_WR    the oldest sent WR fails with the peer's TERMINATE's reason
 * FATAL      IB_EVENT_QP_FATAL to the consumer
 * CLOSE      the CM closes gracefully (FIN once the SQ is out)
 * ABORT      the CM aborts the connection (RST); the SQ flushes when it
 *            is gone
 * FLUSH_SQ   send WRs complete flushed (with ABORT, for modify_qp: only
 *            if there is no connection to abort)
 */
enum kiwi_qp_action {
	KIWI_QPA_WRITE = 1 << 0,
	KIWI_QPA_RESET = 1 << 1,
	KIWI_QPA_START_TX = 1 << 2,
	KIWI_QPA_DRAIN = 1 << 3,
	KIWI_QPA_FLUSH_RQ = 1 << 4,
	KIWI_QPA_SEND_TERM = 1 << 5,
	KIWI_QPA_FAIL_WR = 1 << 6,
	KIWI_QPA_FATAL = 1 << 7,
	KIWI_QPA_CLOSE = 1 << 8,
	KIWI_QPA_ABORT = 1 << 9,
	KIWI_QPA_FLUSH_SQ = 1 << 10,
};

/* One cell of the table. */
struct kiwi_qpfsm_step {
	__u8 legal;		/* 0: the event is refused in this state */
	__u8 next;		/* enum kiwi_qp_state, if KIWI_QPA_WRITE */
	__u8 ib;		/* enum kiwi_qp_ib_state, if KIWI_QPA_WRITE */
	__u16 act;		/* enum kiwi_qp_action */
};

/* Actions shared by several rows. */
#define KIWI_QPA_MODIFY_ERR	(KIWI_QPA_WRITE | KIWI_QPA_FLUSH_RQ | \
				 KIWI_QPA_ABORT | KIWI_QPA_FLUSH_SQ)
#define KIWI_QPA_GONE		(KIWI_QPA_WRITE | KIWI_QPA_DRAIN | \
				 KIWI_QPA_FLUSH_RQ | KIWI_QPA_FLUSH_SQ)
#define KIWI_QPA_FAIL		(KIWI_QPA_WRITE | KIWI_QPA_FLUSH_RQ | \
				 KIWI_QPA_FATAL | KIWI_QPA_ABORT)

/*
 * Does the event happen only under the QP's state_lock?  The modify
 * verbs and the CM's events do; the data path's errors come from any
 * context and race the others (the state word is changed with a
 * compare-and-exchange).  No unlocked event moves a QP out of IDLE, so
 * a holder of state_lock that sees IDLE sees it stay (kiwi_qp_connected()
 * prepares the connection before it moves).
 */
static inline bool kiwi_qpfsm_locked(unsigned int ev)
{
	return ev < KIWI_QPE_LOCAL_ERROR;
}

/* The cell for @ev in @state; refused (legal 0) if either is unknown. */
static inline struct kiwi_qpfsm_step kiwi_qpfsm(unsigned int state,
						 unsigned int ev)
{
#define KIWI_GO(to, ib_to, acts)	{ 1, KIWI_QP_##to, KIWI_IBS_##ib_to, \
					  KIWI_QPA_WRITE | (acts) }
#define KIWI_STAY			{ 1, 0, 0, 0 }
	static const struct kiwi_qpfsm_step
		table[KIWI_QP_NSTATES][KIWI_QPE_NEVENTS] = {
	[KIWI_QP_IDLE] = {
		/*
		 * The verbs allow RESET from every state, INIT and RTR
		 * only on the way up; kiwi also takes RESET -> RTR and
		 * RTR -> INIT, none of which touches a connection.
		 */
		[KIWI_QPE_MODIFY_RESET] = KIWI_GO(IDLE, RESET, KIWI_QPA_RESET),
		[KIWI_QPE_MODIFY_INIT] = KIWI_GO(IDLE, INIT, 0),
		[KIWI_QPE_MODIFY_RTR] = KIWI_GO(IDLE, RTR, 0),
		/*
		 * RTS: refused -- only a connection (the CM, entering
		 * RDMA mode, RFC 5040 section 6.1) makes an iWARP QP RTS.
		 * SQD: refused -- no connection to close.
		 * SQE: refused here and everywhere: iWARP has no SQE.
		 */
		[KIWI_QPE_MODIFY_ERR] = KIWI_GO(ERROR, ERR, KIWI_QPA_MODIFY_ERR),
		[KIWI_QPE_CONNECTED] = KIWI_GO(RTS, RTS, KIWI_QPA_START_TX),
		/*
		 * A connection that failed before RTS (MPA rejected,
		 * timed out) had the QP bound: it ends in ERROR.
		 */
		[KIWI_QPE_DISCONNECTED] = KIWI_GO(ERROR, ERR, KIWI_QPA_GONE),
		/*
		 * No connection, nothing to fail: kiwi_qp_fail_all()
		 * reaches every QP of a departing netdev.
		 */
		[KIWI_QPE_LOCAL_ERROR] = KIWI_STAY,
		[KIWI_QPE_LLP_ERROR] = KIWI_STAY,
		[KIWI_QPE_TERMINATE_RECEIVED] = KIWI_STAY,
	},
	[KIWI_QP_RTS] = {
		/*
		 * RESET, INIT, RTR: refused while connected (the verbs'
		 * RESET from RTS would cut a live connection's receive
		 * path; disconnect first).  CONNECTED: refused, one
		 * connection per QP at a time.
		 */
		[KIWI_QPE_MODIFY_RTS] = KIWI_STAY,	/* already */
		/*
		 * IB SQD on iWARP: the ULP's graceful close (RFC 5040
		 * section 6.2): the CM sends the FIN once the SQ is out.
		 */
		[KIWI_QPE_MODIFY_SQD] = KIWI_GO(CLOSING, SQD, KIWI_QPA_CLOSE),
		[KIWI_QPE_MODIFY_ERR] = KIWI_GO(ERROR, ERR, KIWI_QPA_MODIFY_ERR),
		[KIWI_QPE_DISCONNECTED] = KIWI_GO(ERROR, ERR, KIWI_QPA_GONE),
		/*
		 * RFC 5040 sections 6.2 and 7: an error tears the
		 * stream down, with a TERMINATE to the peer if the LLP
		 * can still carry it (not after a TCP failure, and not
		 * in answer to the peer's own, section 7.2); the
		 * consumer hears QP_FATAL.
		 */
		[KIWI_QPE_LOCAL_ERROR] = KIWI_GO(TERMINATE, ERR,
						 KIWI_QPA_FAIL |
						 KIWI_QPA_SEND_TERM),
		[KIWI_QPE_LLP_ERROR] = KIWI_GO(TERMINATE, ERR, KIWI_QPA_FAIL),
		[KIWI_QPE_TERMINATE_RECEIVED] = KIWI_GO(TERMINATE, ERR,
							KIWI_QPA_FAIL |
							KIWI_QPA_FAIL_WR),
	},
	[KIWI_QP_CLOSING] = {
		/*
		 * RESET: the verbs allow it from any state; qp.c also
		 * requires the connection wholly gone (which makes the
		 * QP ERROR first, so this row is not reached today).
		 */
		[KIWI_QPE_MODIFY_RESET] = KIWI_GO(IDLE, RESET, KIWI_QPA_RESET),
		/*
		 * RTS: refused, a close cannot be undone.  SQD: going
		 * down already, as asked (librdmacm's rdma_disconnect()
		 * asks again after the peer closed).
		 */
		[KIWI_QPE_MODIFY_SQD] = KIWI_STAY,
		[KIWI_QPE_MODIFY_ERR] = KIWI_GO(ERROR, ERR, KIWI_QPA_MODIFY_ERR),
		[KIWI_QPE_DISCONNECTED] = KIWI_GO(ERROR, ERR, KIWI_QPA_GONE),
		/*
		 * An error during the graceful close aborts it, as in
		 * RTS: the stream is still up until the FIN.
		 */
		[KIWI_QPE_LOCAL_ERROR] = KIWI_GO(TERMINATE, ERR,
						 KIWI_QPA_FAIL |
						 KIWI_QPA_SEND_TERM),
		[KIWI_QPE_LLP_ERROR] = KIWI_GO(TERMINATE, ERR, KIWI_QPA_FAIL),
		[KIWI_QPE_TERMINATE_RECEIVED] = KIWI_GO(TERMINATE, ERR,
							KIWI_QPA_FAIL |
							KIWI_QPA_FAIL_WR),
	},
	[KIWI_QP_TERMINATE] = {
		[KIWI_QPE_MODIFY_RESET] = KIWI_GO(IDLE, RESET, KIWI_QPA_RESET),
		/* SQD: the connection is going down anyway. */
		[KIWI_QPE_MODIFY_SQD] = KIWI_STAY,
		[KIWI_QPE_MODIFY_ERR] = KIWI_GO(ERROR, ERR, KIWI_QPA_MODIFY_ERR),
		[KIWI_QPE_DISCONNECTED] = KIWI_GO(ERROR, ERR, KIWI_QPA_GONE),
		/*
		 * The first error won: after a TERMINATE the stream
		 * only ends (RFC 5040 section 7), one QP_FATAL per
		 * connection.
		 */
		[KIWI_QPE_LOCAL_ERROR] = KIWI_STAY,
		[KIWI_QPE_LLP_ERROR] = KIWI_STAY,
		[KIWI_QPE_TERMINATE_RECEIVED] = KIWI_STAY,
	},
	[KIWI_QP_ERROR] = {
		/* Only RESET leaves ERROR (the verbs: ERR -> RESET). */
		[KIWI_QPE_MODIFY_RESET] = KIWI_GO(IDLE, RESET, KIWI_QPA_RESET),
		/*
		 * librdmacm's rdma_disconnect() asks for SQD even after
		 * the peer closed or the QP failed: the connection is
		 * down, as asked, so that is no error.
		 */
		[KIWI_QPE_MODIFY_SQD] = KIWI_STAY,
		/* ERR again flushes again: WRs posted since complete. */
		[KIWI_QPE_MODIFY_ERR] = KIWI_GO(ERROR, ERR, KIWI_QPA_MODIFY_ERR),
		/*
		 * The consumer's ERR came first; the connection's end
		 * still drains and detaches the socket.
		 */
		[KIWI_QPE_DISCONNECTED] = KIWI_GO(ERROR, ERR, KIWI_QPA_GONE),
		[KIWI_QPE_LOCAL_ERROR] = KIWI_STAY,
		[KIWI_QPE_LLP_ERROR] = KIWI_STAY,
		[KIWI_QPE_TERMINATE_RECEIVED] = KIWI_STAY,
	},
	};
#undef KIWI_GO
#undef KIWI_STAY
	static const struct kiwi_qpfsm_step refused;

	if (state >= KIWI_QP_NSTATES || ev >= KIWI_QPE_NEVENTS)
		return refused;
	return table[state][ev];
}

static inline const char *kiwi_qp_state_name(unsigned int state)
{
	static const char *const names[KIWI_QP_NSTATES] = {
		[KIWI_QP_IDLE] = "IDLE",
		[KIWI_QP_RTS] = "RTS",
		[KIWI_QP_CLOSING] = "CLOSING",
		[KIWI_QP_TERMINATE] = "TERMINATE",
		[KIWI_QP_ERROR] = "ERROR",
	};

	return state < KIWI_QP_NSTATES ? names[state] : "?";
}

static inline const char *kiwi_qp_event_name(unsigned int ev)
{
	static const char *const names[KIWI_QPE_NEVENTS] = {
		[KIWI_QPE_MODIFY_RESET] = "MODIFY_RESET",
		[KIWI_QPE_MODIFY_INIT] = "MODIFY_INIT",
		[KIWI_QPE_MODIFY_RTR] = "MODIFY_RTR",
		[KIWI_QPE_MODIFY_RTS] = "MODIFY_RTS",
		[KIWI_QPE_MODIFY_SQD] = "MODIFY_SQD",
		[KIWI_QPE_MODIFY_SQE] = "MODIFY_SQE",
		[KIWI_QPE_MODIFY_ERR] = "MODIFY_ERR",
		[KIWI_QPE_CONNECTED] = "CONNECTED",
		[KIWI_QPE_DISCONNECTED] = "DISCONNECTED",
		[KIWI_QPE_LOCAL_ERROR] = "LOCAL_ERROR",
		[KIWI_QPE_LLP_ERROR] = "LLP_ERROR",
		[KIWI_QPE_TERMINATE_RECEIVED] = "TERMINATE_RECEIVED",
	};

	return ev < KIWI_QPE_NEVENTS ? names[ev] : "?";
}

#endif /* KIWI_QPFSM_H */
