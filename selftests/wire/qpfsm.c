// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The QP state machine of include/kiwi/qpfsm.h, in user space: every
 * (state, event) cell against the rows written out again below (a
 * cell not listed must be refused), the table's own invariants, and
 * whole sequences -- connect, graceful close, peer TERMINATE, local
 * error, ERR from every state, every sequence of five events -- run
 * through a small model of kmod/qp.c's kiwi_qp_next().
 */
#include "../kiwi_test.h"
#include <kiwi/qpfsm.h>

#define IDLE	KIWI_QP_IDLE
#define RTS	KIWI_QP_RTS
#define CLOSING	KIWI_QP_CLOSING
#define TERM	KIWI_QP_TERMINATE
#define ERROR	KIWI_QP_ERROR

#define W	KIWI_QPA_WRITE
#define MODERR	(W | KIWI_QPA_FLUSH_RQ | KIWI_QPA_ABORT | KIWI_QPA_FLUSH_SQ)
#define GONE	(W | KIWI_QPA_DRAIN | KIWI_QPA_FLUSH_RQ | KIWI_QPA_FLUSH_SQ)
#define FAILED	(W | KIWI_QPA_FLUSH_RQ | KIWI_QPA_FATAL | KIWI_QPA_ABORT)
#define STAY	0xffff		/* legal, ignored */

/* The legal cells; next and ib only matter with W. */
static const struct cell {
	unsigned int state, ev, next, ib, act;
} legal[] = {
	{ IDLE, KIWI_QPE_MODIFY_RESET, IDLE, KIWI_IBS_RESET,
	  W | KIWI_QPA_RESET },
	{ IDLE, KIWI_QPE_MODIFY_INIT, IDLE, KIWI_IBS_INIT, W },
	{ IDLE, KIWI_QPE_MODIFY_RTR, IDLE, KIWI_IBS_RTR, W },
	{ IDLE, KIWI_QPE_MODIFY_ERR, ERROR, KIWI_IBS_ERR, MODERR },
	{ IDLE, KIWI_QPE_CONNECTED, RTS, KIWI_IBS_RTS, W | KIWI_QPA_START_TX },
	{ IDLE, KIWI_QPE_DISCONNECTED, ERROR, KIWI_IBS_ERR, GONE },
	{ IDLE, KIWI_QPE_LOCAL_ERROR, 0, 0, STAY },
	{ IDLE, KIWI_QPE_LLP_ERROR, 0, 0, STAY },
	{ IDLE, KIWI_QPE_TERMINATE_RECEIVED, 0, 0, STAY },

	{ RTS, KIWI_QPE_MODIFY_RTS, 0, 0, STAY },
	{ RTS, KIWI_QPE_MODIFY_SQD, CLOSING, KIWI_IBS_SQD,
	  W | KIWI_QPA_CLOSE },
	{ RTS, KIWI_QPE_MODIFY_ERR, ERROR, KIWI_IBS_ERR, MODERR },
	{ RTS, KIWI_QPE_DISCONNECTED, ERROR, KIWI_IBS_ERR, GONE },
	{ RTS, KIWI_QPE_LOCAL_ERROR, TERM, KIWI_IBS_ERR,
	  FAILED | KIWI_QPA_SEND_TERM },
	{ RTS, KIWI_QPE_LLP_ERROR, TERM, KIWI_IBS_ERR, FAILED },
	{ RTS, KIWI_QPE_TERMINATE_RECEIVED, TERM, KIWI_IBS_ERR,
	  FAILED | KIWI_QPA_FAIL_WR },

	{ CLOSING, KIWI_QPE_MODIFY_RESET, IDLE, KIWI_IBS_RESET,
	  W | KIWI_QPA_RESET },
	{ CLOSING, KIWI_QPE_MODIFY_SQD, 0, 0, STAY },
	{ CLOSING, KIWI_QPE_MODIFY_ERR, ERROR, KIWI_IBS_ERR, MODERR },
	{ CLOSING, KIWI_QPE_DISCONNECTED, ERROR, KIWI_IBS_ERR, GONE },
	{ CLOSING, KIWI_QPE_LOCAL_ERROR, TERM, KIWI_IBS_ERR,
	  FAILED | KIWI_QPA_SEND_TERM },
	{ CLOSING, KIWI_QPE_LLP_ERROR, TERM, KIWI_IBS_ERR, FAILED },
	{ CLOSING, KIWI_QPE_TERMINATE_RECEIVED, TERM, KIWI_IBS_ERR,
	  FAILED | KIWI_QPA_FAIL_WR },

	{ TERM, KIWI_QPE_MODIFY_RESET, IDLE, KIWI_IBS_RESET,
	  W | KIWI_QPA_RESET },
	{ TERM, KIWI_QPE_MODIFY_SQD, 0, 0, STAY },
	{ TERM, KIWI_QPE_MODIFY_ERR, ERROR, KIWI_IBS_ERR, MODERR },
	{ TERM, KIWI_QPE_DISCONNECTED, ERROR, KIWI_IBS_ERR, GONE },
	{ TERM, KIWI_QPE_LOCAL_ERROR, 0, 0, STAY },
	{ TERM, KIWI_QPE_LLP_ERROR, 0, 0, STAY },
	{ TERM, KIWI_QPE_TERMINATE_RECEIVED, 0, 0, STAY },

	{ ERROR, KIWI_QPE_MODIFY_RESET, IDLE, KIWI_IBS_RESET,
	  W | KIWI_QPA_RESET },
	{ ERROR, KIWI_QPE_MODIFY_SQD, 0, 0, STAY },
	{ ERROR, KIWI_QPE_MODIFY_ERR, ERROR, KIWI_IBS_ERR, MODERR },
	{ ERROR, KIWI_QPE_DISCONNECTED, ERROR, KIWI_IBS_ERR, GONE },
	{ ERROR, KIWI_QPE_LOCAL_ERROR, 0, 0, STAY },
	{ ERROR, KIWI_QPE_LLP_ERROR, 0, 0, STAY },
	{ ERROR, KIWI_QPE_TERMINATE_RECEIVED, 0, 0, STAY },
};

static const struct cell *documented(unsigned int state, unsigned int ev)
{
	size_t i;

	for (i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		if (legal[i].state == state && legal[i].ev == ev)
			return &legal[i];
	return NULL;
}

/* The IB state each iWARP state reports. */
static bool ib_fits(unsigned int state, unsigned int ib)
{
	switch (state) {
	case IDLE:
		return ib == KIWI_IBS_RESET || ib == KIWI_IBS_INIT ||
		       ib == KIWI_IBS_RTR;
	case RTS:
		return ib == KIWI_IBS_RTS;
	case CLOSING:
		return ib == KIWI_IBS_SQD;
	default:
		return ib == KIWI_IBS_ERR;
	}
}

TEST(matrix)
{
	unsigned int s, e, cells = 0, refused = 0;

	for (s = 0; s < KIWI_QP_NSTATES; s++) {
		for (e = 0; e < KIWI_QPE_NEVENTS; e++) {
			struct kiwi_qpfsm_step st = kiwi_qpfsm(s, e);
			const struct cell *c = documented(s, e);

			cells++;
			if (!c) {
				if (st.legal)
					EXPECT_FAIL("%s in %s: legal, documented refused",
						    kiwi_qp_event_name(e),
						    kiwi_qp_state_name(s));
				refused++;
				continue;
			}
			if (!st.legal) {
				EXPECT_FAIL("%s in %s: refused, documented legal",
					    kiwi_qp_event_name(e),
					    kiwi_qp_state_name(s));
				continue;
			}
			if (c->act == STAY) {
				EXPECT_EQ(st.act, 0);
				continue;
			}
			EXPECT_EQ(st.act, c->act);
			EXPECT_EQ(st.next, c->next);
			EXPECT_EQ(st.ib, c->ib);
		}
	}
	EXPECT_EQ(cells, 60U);
	EXPECT_EQ(cells - refused,
		  (unsigned int)(sizeof(legal) / sizeof(legal[0])));
}

/* Outside the table: refused, never read out of bounds. */
TEST(out_of_range)
{
	EXPECT_FALSE(kiwi_qpfsm(KIWI_QP_NSTATES, KIWI_QPE_MODIFY_ERR).legal);
	EXPECT_FALSE(kiwi_qpfsm(KIWI_QP_RTS, KIWI_QPE_NEVENTS).legal);
	EXPECT_FALSE(kiwi_qpfsm(~0U, ~0U).legal);
	EXPECT_EQ(kiwi_qp_state_name(KIWI_QP_NSTATES)[0], '?');
	EXPECT_EQ(kiwi_qp_event_name(KIWI_QPE_NEVENTS)[0], '?');
}

/* What every row must hold, whatever its reason. */
TEST(invariants)
{
	unsigned int s, e;

	for (s = 0; s < KIWI_QP_NSTATES; s++) {
		for (e = 0; e < KIWI_QPE_NEVENTS; e++) {
			struct kiwi_qpfsm_step st = kiwi_qpfsm(s, e);

			/* iWARP has no SQE. */
			if (e == KIWI_QPE_MODIFY_SQE)
				EXPECT_FALSE(st.legal);
			/* The data path's errors are never refused (they
			 * race everything) and never leave IDLE, which
			 * only state_lock holders change. */
			if (!kiwi_qpfsm_locked(e)) {
				EXPECT_TRUE(st.legal);
				if (s == IDLE)
					EXPECT_EQ(st.act, 0);
			}
			if (!st.legal || !(st.act & W)) {
				EXPECT_EQ(st.act, 0);
				continue;
			}
			EXPECT_TRUE(st.next < KIWI_QP_NSTATES);
			EXPECT_TRUE(ib_fits(st.next, st.ib));
			/* Only the CM makes a QP RTS, only from IDLE. */
			if (st.next == RTS)
				EXPECT_TRUE(e == KIWI_QPE_CONNECTED && s == IDLE);
			/* Only RESET returns to IDLE from elsewhere. */
			if (st.next == IDLE && s != IDLE)
				EXPECT_EQ(e, KIWI_QPE_MODIFY_RESET);
			/* One TERMINATE, one QP_FATAL per connection. */
			if (st.act & (KIWI_QPA_SEND_TERM | KIWI_QPA_FATAL))
				EXPECT_TRUE(s == RTS || s == CLOSING);
			/* Never answer a TERMINATE with one. */
			if (e == KIWI_QPE_TERMINATE_RECEIVED ||
			    e == KIWI_QPE_LLP_ERROR)
				EXPECT_FALSE(st.act & KIWI_QPA_SEND_TERM);
		}
	}
}

TEST(names)
{
	unsigned int i, j;

	for (i = 0; i < KIWI_QP_NSTATES; i++)
		for (j = i + 1; j < KIWI_QP_NSTATES; j++)
			EXPECT_STRNE(kiwi_qp_state_name(i),
				     kiwi_qp_state_name(j));
	for (i = 0; i < KIWI_QPE_NEVENTS; i++) {
		EXPECT_NE(kiwi_qp_event_name(i)[0], '?');
		for (j = i + 1; j < KIWI_QPE_NEVENTS; j++)
			EXPECT_STRNE(kiwi_qp_event_name(i),
				     kiwi_qp_event_name(j));
	}
}

/* A QP as kmod/qp.c keeps it: iWARP state, IB state, refusals. */
struct qp {
	unsigned int state, ib, refused;
};

/* kiwi_qp_next() without the atomics: the actions, or -1 if refused. */
static int next(struct qp *qp, unsigned int ev)
{
	struct kiwi_qpfsm_step st = kiwi_qpfsm(qp->state, ev);

	if (!st.legal) {
		qp->refused++;
		return -1;
	}
	if (st.act & W) {
		qp->state = st.next;
		qp->ib = st.ib;
	}
	return st.act;
}

/* A fresh QP: IDLE, IB INIT (kiwi_create_qp()). */
static struct qp fresh(void)
{
	struct qp qp = { IDLE, KIWI_IBS_INIT, 0 };

	return qp;
}

TEST(connect)
{
	struct qp qp = fresh();

	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RTR), W);
	EXPECT_EQ(qp.ib, KIWI_IBS_RTR);
	/* The verbs' RTR -> RTS is the CM's to make. */
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RTS), -1);
	EXPECT_EQ(next(&qp, KIWI_QPE_CONNECTED), W | KIWI_QPA_START_TX);
	EXPECT_EQ(qp.state, RTS);
	EXPECT_EQ(qp.ib, KIWI_IBS_RTS);
	/* rdma_accept()'s own RTS after the CM's: fine. */
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RTS), 0);
	/* A second connection on a connected QP: refused. */
	EXPECT_EQ(next(&qp, KIWI_QPE_CONNECTED), -1);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RESET), -1);
	EXPECT_EQ(qp.state, RTS);
	EXPECT_EQ(qp.refused, 3U);
}

TEST(graceful_close_and_reconnect)
{
	struct qp qp = fresh();

	next(&qp, KIWI_QPE_CONNECTED);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_SQD), W | KIWI_QPA_CLOSE);
	EXPECT_EQ(qp.state, CLOSING);
	EXPECT_EQ(qp.ib, KIWI_IBS_SQD);
	/* rdma_disconnect() again, as librdmacm does: no error. */
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_SQD), 0);
	EXPECT_EQ(next(&qp, KIWI_QPE_DISCONNECTED), GONE);
	EXPECT_EQ(qp.state, ERROR);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_SQD), 0);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RESET), W | KIWI_QPA_RESET);
	EXPECT_EQ(qp.state, IDLE);
	EXPECT_EQ(qp.ib, KIWI_IBS_RESET);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_INIT), W);
	EXPECT_EQ(next(&qp, KIWI_QPE_CONNECTED), W | KIWI_QPA_START_TX);
	EXPECT_EQ(qp.state, RTS);
	EXPECT_EQ(qp.refused, 0U);
}

TEST(peer_terminate)
{
	struct qp qp = fresh();

	next(&qp, KIWI_QPE_CONNECTED);
	EXPECT_EQ(next(&qp, KIWI_QPE_TERMINATE_RECEIVED),
		  FAILED | KIWI_QPA_FAIL_WR);
	EXPECT_EQ(qp.state, TERM);
	EXPECT_EQ(qp.ib, KIWI_IBS_ERR);
	/* What follows finds the QP failed already: ignored. */
	EXPECT_EQ(next(&qp, KIWI_QPE_LOCAL_ERROR), 0);
	EXPECT_EQ(next(&qp, KIWI_QPE_TERMINATE_RECEIVED), 0);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_SQD), 0);
	EXPECT_EQ(qp.state, TERM);
	EXPECT_EQ(next(&qp, KIWI_QPE_DISCONNECTED), GONE);
	EXPECT_EQ(qp.state, ERROR);
	EXPECT_EQ(qp.refused, 0U);
}

TEST(local_error)
{
	struct qp qp = fresh();

	next(&qp, KIWI_QPE_CONNECTED);
	next(&qp, KIWI_QPE_MODIFY_SQD);
	/* During a graceful close: it becomes an abort, TERMINATE sent. */
	EXPECT_EQ(next(&qp, KIWI_QPE_LOCAL_ERROR), FAILED | KIWI_QPA_SEND_TERM);
	EXPECT_EQ(qp.state, TERM);
	EXPECT_EQ(next(&qp, KIWI_QPE_LLP_ERROR), 0);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_ERR), MODERR);
	EXPECT_EQ(qp.state, ERROR);
	EXPECT_EQ(next(&qp, KIWI_QPE_DISCONNECTED), GONE);
	EXPECT_EQ(qp.state, ERROR);

	/* A TCP failure: no TERMINATE can go out. */
	qp = fresh();
	next(&qp, KIWI_QPE_CONNECTED);
	EXPECT_EQ(next(&qp, KIWI_QPE_LLP_ERROR), FAILED);
	EXPECT_EQ(qp.state, TERM);

	/* A departing netdev fails idle QPs too: nothing happens. */
	qp = fresh();
	EXPECT_EQ(next(&qp, KIWI_QPE_LLP_ERROR), 0);
	EXPECT_EQ(qp.state, IDLE);
	EXPECT_EQ(qp.refused, 0U);
}

/* modify_qp(ERR) (and destroy_qp) from every state: ERROR, flushed. */
TEST(modify_err_everywhere)
{
	static const unsigned int to[][3] = {
		/* events that bring a fresh QP to each state */
		{ KIWI_QPE_NEVENTS },
		{ KIWI_QPE_CONNECTED, KIWI_QPE_NEVENTS },
		{ KIWI_QPE_CONNECTED, KIWI_QPE_MODIFY_SQD, KIWI_QPE_NEVENTS },
		{ KIWI_QPE_CONNECTED, KIWI_QPE_LOCAL_ERROR, KIWI_QPE_NEVENTS },
		{ KIWI_QPE_MODIFY_ERR, KIWI_QPE_NEVENTS },
	};
	unsigned int s, i;

	for (s = 0; s < KIWI_QP_NSTATES; s++) {
		struct qp qp = fresh();

		for (i = 0; to[s][i] != KIWI_QPE_NEVENTS; i++)
			next(&qp, to[s][i]);
		ASSERT_EQ(qp.state, s);
		EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_ERR), MODERR);
		EXPECT_EQ(qp.state, ERROR);
		EXPECT_EQ(qp.ib, KIWI_IBS_ERR);
		EXPECT_EQ(qp.refused, 0U);
	}
}

/* selftests/guest/abuse.sh's illegal_transition, on the table. */
TEST(illegal_transition)
{
	struct qp qp = fresh();

	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_RTS), -1);
	EXPECT_EQ(qp.state, IDLE);
	EXPECT_EQ(qp.ib, KIWI_IBS_INIT);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_ERR), MODERR);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_INIT), -1);
	EXPECT_EQ(next(&qp, KIWI_QPE_MODIFY_SQE), -1);
	EXPECT_EQ(qp.state, ERROR);
	EXPECT_EQ(qp.refused, 3U);
}

/*
 * Every sequence of up to five events from a fresh QP: the IB state
 * always fits the iWARP state, and one connection sees at most one
 * TERMINATE sent, one QP_FATAL and one start of transmit.
 */
struct walk {
	struct qp qp;
	unsigned int term, fatal, start;
};

static unsigned int walk_bad;

static void walk(struct walk w, unsigned int depth)
{
	unsigned int e;

	if (!ib_fits(w.qp.state, w.qp.ib) || w.term > 1 || w.fatal > 1 ||
	    w.start > 1)
		walk_bad++;
	if (!depth)
		return;
	for (e = 0; e < KIWI_QPE_NEVENTS; e++) {
		struct walk n = w;
		int act = next(&n.qp, e);

		if (act > 0 && (act & KIWI_QPA_RESET))
			n.start = 0;
		if (act > 0 && (act & KIWI_QPA_START_TX)) {
			n.term = 0;
			n.fatal = 0;
			n.start++;
		}
		if (act > 0 && (act & KIWI_QPA_SEND_TERM))
			n.term++;
		if (act > 0 && (act & KIWI_QPA_FATAL))
			n.fatal++;
		walk(n, depth - 1);
	}
}

TEST(every_short_sequence)
{
	struct walk w = { fresh(), 0, 0, 0 };

	walk(w, 5);
	EXPECT_EQ(walk_bad, 0U);
}

KT_MAIN()
