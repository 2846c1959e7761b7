// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The connection endpoint's state machine of include/kiwi/epfsm.h, in
 * user space: every (state, event) cell against the rows written out
 * again below (a cell not listed must be refused), the table's own
 * invariants, and whole sequences -- both handshakes, a reject either
 * way, a timeout and a peer's reset in each state, a close during
 * setup, every sequence of five events -- run through a small model of
 * kmod/cmstate.c's kiwi_ep_next() and kmod/cm.c's kiwi_ep_do().
 */
#include "../kiwi_test.h"
#include <kiwi/epfsm.h>

#define IDLE		KIWI_EP_IDLE
#define LISTEN		KIWI_EP_LISTEN
#define CONNECTING	KIWI_EP_CONNECTING
#define AWAIT_REP	KIWI_EP_AWAIT_REP
#define AWAIT_REQ	KIWI_EP_AWAIT_REQ
#define RECVD_REQ	KIWI_EP_RECVD_REQ
#define RTS		KIWI_EP_RTS
#define CLOSING		KIWI_EP_CLOSING
#define CLOSED		KIWI_EP_CLOSED

#define W		KIWI_EPA_WRITE
#define STOP		KIWI_EPA_STOP_TIMER
#define REL		KIWI_EPA_RELEASE
#define RST		KIWI_EPA_RST
#define ID		KIWI_EPA_DROP_ID
#define TO		KIWI_EPA_TIMED_OUT
/* the initiator's connect fails: CONNECT_REPLY(error), reset */
#define CFAIL		(W | STOP | KIWI_EPA_FAIL_CONNECT | REL | RST | ID)
/* an established connection ends: the QP and the iw_cm told */
#define END		(W | STOP | KIWI_EPA_DISCONNECT | REL | ID)
/* a connection nobody was told of yet: reset, forgotten */
#define DROP		(W | STOP | REL | RST)
/* the device goes from under an endpoint not connecting or connected */
#define GONE		(W | STOP | REL | RST | ID)
#define IGNORED		0x10000		/* legal, nothing at all */

/* The legal cells; next only matters with W. */
static const struct cell {
	unsigned int state, ev, next, act;
} legal[] = {
	{ IDLE, KIWI_EPE_LISTEN, LISTEN, W },
	{ IDLE, KIWI_EPE_CONNECT, CONNECTING, W },
	{ IDLE, KIWI_EPE_TCP_ACCEPTED, AWAIT_REQ, W },
	{ IDLE, KIWI_EPE_DEVICE_GONE, CLOSED, GONE },

	{ LISTEN, KIWI_EPE_LISTENER_DESTROYED, CLOSED, W | REL | ID },
	{ LISTEN, KIWI_EPE_DEVICE_GONE, CLOSED, GONE },

	{ CONNECTING, KIWI_EPE_TCP_CONNECTED, AWAIT_REP, W },
	{ CONNECTING, KIWI_EPE_CONNECT_ERROR, CLOSED,
	  W | STOP | REL | RST | ID },
	{ CONNECTING, KIWI_EPE_SOCK_RESET, CLOSED, CFAIL },
	{ CONNECTING, KIWI_EPE_TIMEOUT, CLOSED, CFAIL | TO },
	{ CONNECTING, KIWI_EPE_DEVICE_GONE, CLOSED, CFAIL },

	{ AWAIT_REP, KIWI_EPE_MPA_SEND_FAILED, CLOSED, CFAIL },
	{ AWAIT_REP, KIWI_EPE_MPA_REPLY_BAD, CLOSED, CFAIL },
	{ AWAIT_REP, KIWI_EPE_MPA_REJECTED, CLOSED, CFAIL },
	{ AWAIT_REP, KIWI_EPE_QP_REFUSED, CLOSED, CFAIL },
	{ AWAIT_REP, KIWI_EPE_RTS_REACHED, RTS, W },
	{ AWAIT_REP, KIWI_EPE_TIMEOUT, CLOSED, CFAIL | TO },
	{ AWAIT_REP, KIWI_EPE_DEVICE_GONE, CLOSED, CFAIL },

	{ AWAIT_REQ, KIWI_EPE_MPA_REQUEST, RECVD_REQ, W },
	{ AWAIT_REQ, KIWI_EPE_MPA_REQUEST_BAD, CLOSED, DROP },
	/* the timer that fired is not cancelled */
	{ AWAIT_REQ, KIWI_EPE_TIMEOUT, CLOSED, W | TO | REL | RST },
	{ AWAIT_REQ, KIWI_EPE_DEVICE_GONE, CLOSED, GONE },

	{ RECVD_REQ, KIWI_EPE_REQUEST_UNDELIVERED, CLOSED,
	  DROP | KIWI_EPA_DROP_REQ },
	{ RECVD_REQ, KIWI_EPE_SOCK_RESET, 0, REL | RST },
	{ RECVD_REQ, KIWI_EPE_RTS_REACHED, RTS, W },
	{ RECVD_REQ, KIWI_EPE_ACCEPT_FAILED, CLOSED, DROP },
	{ RECVD_REQ, KIWI_EPE_REJECT, CLOSED,
	  W | STOP | KIWI_EPA_SEND_REJECT | REL },
	{ RECVD_REQ, KIWI_EPE_TIMEOUT, CLOSED,
	  W | TO | KIWI_EPA_TAKE_REQ | REL | RST },
	{ RECVD_REQ, KIWI_EPE_DEVICE_GONE, CLOSED,
	  GONE | KIWI_EPA_DROP_REQ },

	{ RTS, KIWI_EPE_LOCAL_CLOSE, CLOSING, W | KIWI_EPA_SHUT_WR },
	{ RTS, KIWI_EPE_LOCAL_ABORT, CLOSED, END },
	{ RTS, KIWI_EPE_PEER_FIN, CLOSED, END | KIWI_EPA_DRAIN },
	{ RTS, KIWI_EPE_SOCK_RESET, CLOSED, END | RST },
	{ RTS, KIWI_EPE_TIMEOUT, 0, KIWI_EPA_NUDGE },
	{ RTS, KIWI_EPE_DEVICE_GONE, CLOSED, END | RST },

	{ CLOSING, KIWI_EPE_LOCAL_CLOSE, 0, IGNORED },
	{ CLOSING, KIWI_EPE_LOCAL_ABORT, CLOSED, END },
	{ CLOSING, KIWI_EPE_PEER_FIN, CLOSED, END | KIWI_EPA_DRAIN },
	{ CLOSING, KIWI_EPE_SOCK_RESET, CLOSED, END | RST },
	{ CLOSING, KIWI_EPE_TIMEOUT, CLOSED, END | RST | TO },
	{ CLOSING, KIWI_EPE_DEVICE_GONE, CLOSED, END | RST },

	{ CLOSED, KIWI_EPE_LISTENER_DESTROYED, 0, IGNORED },
	{ CLOSED, KIWI_EPE_ACCEPT_FAILED, 0, IGNORED },
	{ CLOSED, KIWI_EPE_REJECT, 0, IGNORED },
	{ CLOSED, KIWI_EPE_LOCAL_CLOSE, 0, IGNORED },
	{ CLOSED, KIWI_EPE_LOCAL_ABORT, 0, IGNORED },
	{ CLOSED, KIWI_EPE_TIMEOUT, 0, IGNORED },
	{ CLOSED, KIWI_EPE_DEVICE_GONE, 0, IGNORED },
};

#define NLEGAL	(sizeof(legal) / sizeof(legal[0]))

static const struct cell *documented(unsigned int state, unsigned int ev)
{
	size_t i;

	for (i = 0; i < NLEGAL; i++)
		if (legal[i].state == state && legal[i].ev == ev)
			return &legal[i];
	return NULL;
}

TEST(matrix)
{
	unsigned int s, e, cells = 0, refused = 0;

	for (s = 0; s < KIWI_EP_NSTATES; s++) {
		for (e = 0; e < KIWI_EPE_NEVENTS; e++) {
			struct kiwi_epfsm_step st = kiwi_epfsm(s, e);
			const struct cell *c = documented(s, e);

			cells++;
			if (!c) {
				if (st.legal)
					EXPECT_FAIL("%s in %s: legal, documented refused",
						    kiwi_ep_event_name(e),
						    kiwi_ep_state_name(s));
				refused++;
				continue;
			}
			if (!st.legal) {
				EXPECT_FAIL("%s in %s: refused, documented legal",
					    kiwi_ep_event_name(e),
					    kiwi_ep_state_name(s));
				continue;
			}
			if (c->act == IGNORED) {
				EXPECT_EQ(st.act, 0);
				continue;
			}
			if (st.act != c->act)
				EXPECT_FAIL("%s in %s: actions 0x%x, documented 0x%x",
					    kiwi_ep_event_name(e),
					    kiwi_ep_state_name(s), st.act,
					    c->act);
			if (c->act & W)
				EXPECT_EQ(st.next, c->next);
		}
	}
	EXPECT_EQ(cells, 198U);
	EXPECT_EQ(cells - refused, (unsigned int)NLEGAL);
}

/* Outside the table: refused, never read out of bounds. */
TEST(out_of_range)
{
	EXPECT_FALSE(kiwi_epfsm(KIWI_EP_NSTATES, KIWI_EPE_TIMEOUT).legal);
	EXPECT_FALSE(kiwi_epfsm(KIWI_EP_RTS, KIWI_EPE_NEVENTS).legal);
	EXPECT_FALSE(kiwi_epfsm(~0U, ~0U).legal);
	EXPECT_EQ(kiwi_ep_state_name(KIWI_EP_NSTATES)[0], '?');
	EXPECT_EQ(kiwi_ep_event_name(KIWI_EPE_NEVENTS)[0], '?');
}

TEST(names)
{
	unsigned int i, j;

	for (i = 0; i < KIWI_EP_NSTATES; i++) {
		EXPECT_NE(kiwi_ep_state_name(i)[0], '?');
		for (j = i + 1; j < KIWI_EP_NSTATES; j++)
			EXPECT_STRNE(kiwi_ep_state_name(i),
				     kiwi_ep_state_name(j));
	}
	for (i = 0; i < KIWI_EPE_NEVENTS; i++) {
		EXPECT_NE(kiwi_ep_event_name(i)[0], '?');
		for (j = i + 1; j < KIWI_EPE_NEVENTS; j++)
			EXPECT_STRNE(kiwi_ep_event_name(i),
				     kiwi_ep_event_name(j));
	}
}

/* CLOSED is the end: nothing leaves it, nothing is done in it. */
TEST(closed_is_terminal)
{
	unsigned int e;

	for (e = 0; e < KIWI_EPE_NEVENTS; e++) {
		struct kiwi_epfsm_step st = kiwi_epfsm(CLOSED, e);

		if (st.legal)
			EXPECT_EQ(st.act, 0);
	}
}

/* What every row must hold, whatever its reason. */
TEST(invariants)
{
	unsigned int s, e;

	for (s = 0; s < KIWI_EP_NSTATES; s++) {
		/*
		 * kiwi_cm_dev_close() shuts endpoints until none is open:
		 * DEVICE_GONE must end every one.
		 */
		struct kiwi_epfsm_step gone;

		gone = kiwi_epfsm(s, KIWI_EPE_DEVICE_GONE);
		EXPECT_TRUE(gone.legal);
		if (s != CLOSED) {
			EXPECT_TRUE(gone.act & W);
			EXPECT_EQ(gone.next, CLOSED);
		}
		for (e = 0; e < KIWI_EPE_NEVENTS; e++) {
			struct kiwi_epfsm_step st = kiwi_epfsm(s, e);
			unsigned int a = st.act;

			/*
			 * The QP's close and abort race the connection's
			 * end: never refused once a QP can be bound.
			 */
			if ((e == KIWI_EPE_LOCAL_CLOSE ||
			     e == KIWI_EPE_LOCAL_ABORT) &&
			    (s == RTS || s == CLOSING || s == CLOSED))
				EXPECT_TRUE(st.legal);
			if (!st.legal) {
				EXPECT_EQ(a, 0);
				continue;
			}
			if (!(a & W))
				EXPECT_EQ(st.next, 0);
			else
				EXPECT_TRUE(st.next < KIWI_EP_NSTATES);
			/* Only the QP's connection makes RTS. */
			if ((a & W) && st.next == RTS)
				EXPECT_TRUE(e == KIWI_EPE_RTS_REACHED &&
					    (s == AWAIT_REP || s == RECVD_REQ));
			/* CLOSED holds no socket: every way in releases. */
			if ((a & W) && st.next == CLOSED)
				EXPECT_TRUE(a & REL);
			/* A RST is a way to release. */
			if (a & RST)
				EXPECT_TRUE(a & REL);
			/* CONNECT_REPLY only while the initiator waits. */
			if (a & KIWI_EPA_FAIL_CONNECT)
				EXPECT_TRUE((s == CONNECTING ||
					     s == AWAIT_REP) &&
					    st.next == CLOSED);
			/* DISCONNECT/CLOSE only for a connection. */
			if (a & KIWI_EPA_DISCONNECT)
				EXPECT_TRUE((s == RTS || s == CLOSING) &&
					    st.next == CLOSED);
			/* ... and every end of one tells the consumer. */
			if ((s == RTS || s == CLOSING) && (a & W) &&
			    st.next == CLOSED)
				EXPECT_TRUE(a & KIWI_EPA_DISCONNECT);
			/* Draining needs the stream to end in a FIN. */
			if (a & KIWI_EPA_DRAIN)
				EXPECT_TRUE((a & KIWI_EPA_DISCONNECT) &&
					    !(a & RST) &&
					    e == KIWI_EPE_PEER_FIN);
			/* The reject frame must arrive: FIN, not RST. */
			if (a & KIWI_EPA_SEND_REJECT)
				EXPECT_TRUE(e == KIWI_EPE_REJECT && !(a & RST));
			/* Only a pending request is the iw_cm's. */
			if (a & (KIWI_EPA_TAKE_REQ | KIWI_EPA_DROP_REQ))
				EXPECT_EQ(s, RECVD_REQ);
			if (a & (TO | KIWI_EPA_NUDGE))
				EXPECT_EQ(e, KIWI_EPE_TIMEOUT);
			if (a & KIWI_EPA_SHUT_WR)
				EXPECT_TRUE(s == RTS && st.next == CLOSING);
		}
	}
}

/* An endpoint as kmod/cm.c keeps it, and what was done to it. */
struct ep {
	unsigned int state, refused;
	bool sock;			/* a socket is held */
	unsigned int connect_reply;	/* CONNECT_REPLY with an error */
	unsigned int disconnect;	/* DISCONNECT/CLOSE to the iw_cm */
	unsigned int releases, resets, rejects, drains, fins;
};

/* kiwi_ep_do() (or kiwi_ep_next()): the actions, or -1 if refused. */
static int ev(struct ep *ep, unsigned int e)
{
	struct kiwi_epfsm_step st = kiwi_epfsm(ep->state, e);
	int a = st.act;

	if (!st.legal) {
		ep->refused++;
		return -1;
	}
	/* The events that bring a socket. */
	if (e == KIWI_EPE_LISTEN || e == KIWI_EPE_CONNECT ||
	    e == KIWI_EPE_TCP_ACCEPTED)
		ep->sock = true;
	if (a & KIWI_EPA_SHUT_WR)
		ep->fins++;
	if (a & KIWI_EPA_FAIL_CONNECT)
		ep->connect_reply++;
	if (a & KIWI_EPA_DISCONNECT)
		ep->disconnect++;
	if (a & KIWI_EPA_DRAIN)
		ep->drains++;
	if ((a & KIWI_EPA_SEND_REJECT) && ep->sock)
		ep->rejects++;
	if ((a & REL) && ep->sock) {
		ep->releases++;
		ep->resets += !!(a & RST);
		ep->sock = false;
	}
	if (a & W)
		ep->state = st.next;
	return a;
}

static struct ep fresh(void)
{
	struct ep ep = { .state = IDLE };

	return ep;
}

/* Run @evs (ended by KIWI_EPE_NEVENTS) from a fresh endpoint. */
static struct ep run(const unsigned int *evs)
{
	struct ep ep = fresh();

	while (*evs != KIWI_EPE_NEVENTS)
		ev(&ep, *evs++);
	return ep;
}

#define RUN(...) run((const unsigned int[]){ __VA_ARGS__, KIWI_EPE_NEVENTS })

TEST(active_handshake_and_close)
{
	struct ep ep = fresh();

	EXPECT_EQ(ev(&ep, KIWI_EPE_CONNECT), W);
	EXPECT_EQ(ep.state, CONNECTING);
	EXPECT_EQ(ev(&ep, KIWI_EPE_TCP_CONNECTED), W);
	EXPECT_EQ(ep.state, AWAIT_REP);
	EXPECT_EQ(ev(&ep, KIWI_EPE_RTS_REACHED), W);
	EXPECT_EQ(ep.state, RTS);
	/* The RTR repeats: the state stays. */
	EXPECT_EQ(ev(&ep, KIWI_EPE_TIMEOUT), KIWI_EPA_NUDGE);
	EXPECT_EQ(ep.state, RTS);
	/* rdma_disconnect(): SQD, our FIN, then the peer's. */
	EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_CLOSE), W | KIWI_EPA_SHUT_WR);
	EXPECT_EQ(ep.state, CLOSING);
	EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_CLOSE), 0);
	EXPECT_EQ(ev(&ep, KIWI_EPE_PEER_FIN), END | KIWI_EPA_DRAIN);
	EXPECT_EQ(ep.state, CLOSED);
	/* The QP's abort queued meanwhile, the last timer: ignored. */
	EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_ABORT), 0);
	EXPECT_EQ(ev(&ep, KIWI_EPE_TIMEOUT), 0);
	EXPECT_EQ(ep.state, CLOSED);
	EXPECT_EQ(ep.disconnect, 1U);
	EXPECT_EQ(ep.connect_reply, 0U);
	EXPECT_EQ(ep.releases, 1U);
	EXPECT_EQ(ep.resets, 0U);
	EXPECT_EQ(ep.refused, 0U);
}

TEST(passive_handshake_and_close)
{
	struct ep l = fresh(), ep = fresh();

	EXPECT_EQ(ev(&l, KIWI_EPE_LISTEN), W);
	EXPECT_EQ(l.state, LISTEN);
	EXPECT_EQ(ev(&ep, KIWI_EPE_TCP_ACCEPTED), W);
	EXPECT_EQ(ep.state, AWAIT_REQ);
	EXPECT_EQ(ev(&ep, KIWI_EPE_MPA_REQUEST), W);
	EXPECT_EQ(ep.state, RECVD_REQ);
	/* rdma_accept() */
	EXPECT_EQ(ev(&ep, KIWI_EPE_RTS_REACHED), W);
	EXPECT_EQ(ep.state, RTS);
	/* The peer closes first. */
	EXPECT_EQ(ev(&ep, KIWI_EPE_PEER_FIN), END | KIWI_EPA_DRAIN);
	EXPECT_EQ(ep.state, CLOSED);
	EXPECT_EQ(ep.drains, 1U);
	EXPECT_EQ(ep.resets, 0U);
	/* rdma_destroy_id() on the listener. */
	EXPECT_EQ(ev(&l, KIWI_EPE_LISTENER_DESTROYED), W | REL | ID);
	EXPECT_EQ(l.state, CLOSED);
	EXPECT_EQ(l.resets, 0U);
	EXPECT_EQ(ep.refused + l.refused, 0U);
}

TEST(reject)
{
	struct ep ep = RUN(KIWI_EPE_TCP_ACCEPTED, KIWI_EPE_MPA_REQUEST);

	EXPECT_EQ(ev(&ep, KIWI_EPE_REJECT),
		  W | STOP | KIWI_EPA_SEND_REJECT | REL);
	EXPECT_EQ(ep.state, CLOSED);
	EXPECT_EQ(ep.rejects, 1U);
	EXPECT_EQ(ep.resets, 0U);
	/* A late timer, or a second answer: nothing. */
	EXPECT_EQ(ev(&ep, KIWI_EPE_TIMEOUT), 0);
	EXPECT_EQ(ev(&ep, KIWI_EPE_ACCEPT_FAILED), 0);
	EXPECT_EQ(ev(&ep, KIWI_EPE_REJECT), 0);
	EXPECT_EQ(ep.rejects, 1U);

	/* The peer rejects ours: CONNECT_REPLY with the error, reset. */
	ep = RUN(KIWI_EPE_CONNECT, KIWI_EPE_TCP_CONNECTED);
	EXPECT_EQ(ev(&ep, KIWI_EPE_MPA_REJECTED), CFAIL);
	EXPECT_EQ(ep.state, CLOSED);
	EXPECT_EQ(ep.connect_reply, 1U);
	EXPECT_EQ(ep.resets, 1U);
	EXPECT_EQ(ep.refused, 0U);
}

/* The events that bring a fresh endpoint to each state. */
static const unsigned int to_state[KIWI_EP_NSTATES][5] = {
	[IDLE] = { KIWI_EPE_NEVENTS },
	[LISTEN] = { KIWI_EPE_LISTEN, KIWI_EPE_NEVENTS },
	[CONNECTING] = { KIWI_EPE_CONNECT, KIWI_EPE_NEVENTS },
	[AWAIT_REP] = { KIWI_EPE_CONNECT, KIWI_EPE_TCP_CONNECTED,
			KIWI_EPE_NEVENTS },
	[AWAIT_REQ] = { KIWI_EPE_TCP_ACCEPTED, KIWI_EPE_NEVENTS },
	[RECVD_REQ] = { KIWI_EPE_TCP_ACCEPTED, KIWI_EPE_MPA_REQUEST,
			KIWI_EPE_NEVENTS },
	[RTS] = { KIWI_EPE_CONNECT, KIWI_EPE_TCP_CONNECTED,
		  KIWI_EPE_RTS_REACHED, KIWI_EPE_NEVENTS },
	[CLOSING] = { KIWI_EPE_CONNECT, KIWI_EPE_TCP_CONNECTED,
		      KIWI_EPE_RTS_REACHED, KIWI_EPE_LOCAL_CLOSE,
		      KIWI_EPE_NEVENTS },
	[CLOSED] = { KIWI_EPE_LISTEN, KIWI_EPE_LISTENER_DESTROYED,
		     KIWI_EPE_NEVENTS },
};

static struct ep in_state(unsigned int s)
{
	struct ep ep = run(to_state[s]);

	if (ep.state != s || ep.refused)
		EXPECT_FAIL("could not reach %s", kiwi_ep_state_name(s));
	return ep;
}

TEST(timeout_in_each_state)
{
	unsigned int s;

	for (s = 0; s < KIWI_EP_NSTATES; s++) {
		struct ep ep = in_state(s);
		int a = ev(&ep, KIWI_EPE_TIMEOUT);

		switch (s) {
		case IDLE:
		case LISTEN:	/* no timer runs there */
			EXPECT_EQ(a, -1);
			EXPECT_EQ(ep.state, s);
			break;
		case CONNECTING:
		case AWAIT_REP:	/* mpa_timeout_ms: the connect fails */
			EXPECT_EQ(a, CFAIL | TO);
			EXPECT_EQ(ep.connect_reply, 1U);
			break;
		case AWAIT_REQ:	/* first_byte_ms or mpa_timeout_ms */
		case RECVD_REQ:	/* accept_timeout_ms */
			EXPECT_TRUE(a & TO);
			EXPECT_EQ(ep.resets, 1U);
			EXPECT_EQ(ep.state, CLOSED);
			break;
		case RTS:	/* the RTR repeats */
			EXPECT_EQ(a, KIWI_EPA_NUDGE);
			EXPECT_EQ(ep.state, RTS);
			break;
		case CLOSING:	/* the peer's FIN never came */
			EXPECT_EQ(a, END | RST | TO);
			EXPECT_EQ(ep.disconnect, 1U);
			break;
		case CLOSED:
			EXPECT_EQ(a, 0);
			break;
		}
		if (s != IDLE && s != LISTEN && s != RTS)
			EXPECT_EQ(ep.state, CLOSED);
	}
}

TEST(peer_reset_in_each_state)
{
	unsigned int s;

	for (s = 0; s < KIWI_EP_NSTATES; s++) {
		struct ep ep = in_state(s);
		int a = ev(&ep, KIWI_EPE_SOCK_RESET);

		switch (s) {
		case CONNECTING:	/* refused or unreachable */
			EXPECT_EQ(a, CFAIL);
			EXPECT_EQ(ep.connect_reply, 1U);
			break;
		case AWAIT_REP:		/* read as a failed reply */
			EXPECT_EQ(a, -1);
			EXPECT_EQ(ev(&ep, KIWI_EPE_MPA_REPLY_BAD), CFAIL);
			break;
		case AWAIT_REQ:		/* read as a failed request */
			EXPECT_EQ(a, -1);
			EXPECT_EQ(ev(&ep, KIWI_EPE_MPA_REQUEST_BAD), DROP);
			break;
		case RECVD_REQ:
			/* The socket goes, the request stays ... */
			EXPECT_EQ(a, REL | RST);
			EXPECT_EQ(ep.state, RECVD_REQ);
			EXPECT_FALSE(ep.sock);
			/* ... until the consumer's accept fails. */
			EXPECT_EQ(ev(&ep, KIWI_EPE_ACCEPT_FAILED), DROP);
			EXPECT_EQ(ep.releases, 1U);
			break;
		case RTS:
		case CLOSING:
			EXPECT_EQ(a, END | RST);
			EXPECT_EQ(ep.disconnect, 1U);
			break;
		default:	/* no connection: no such event */
			EXPECT_EQ(a, -1);
			EXPECT_EQ(ep.state, s);
			break;
		}
		if (s >= CONNECTING)
			EXPECT_EQ(ep.state, CLOSED);
		EXPECT_FALSE(ep.sock && ep.state == CLOSED);
	}
}

/* The device or the listener goes, the QP closes, during setup. */
TEST(close_during_setup)
{
	unsigned int s;

	for (s = 0; s < KIWI_EP_NSTATES; s++) {
		struct ep ep = in_state(s);
		int a;

		/* No QP is bound before RTS: its close cannot come. */
		if (s < RTS) {
			EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_CLOSE), -1);
			EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_ABORT), -1);
			EXPECT_EQ(ep.state, s);
		}
		a = ev(&ep, KIWI_EPE_DEVICE_GONE);
		EXPECT_EQ(ep.state, CLOSED);
		EXPECT_FALSE(ep.sock);
		if (s == CONNECTING || s == AWAIT_REP)
			EXPECT_EQ(ep.connect_reply, 1U);
		if (s == RTS || s == CLOSING)
			EXPECT_EQ(ep.disconnect, 1U);
		if (s == CLOSED)
			EXPECT_EQ(a, 0);
		else
			EXPECT_TRUE(a & RST);
	}

	/* The listener is gone when the request comes in. */
	{
		struct ep ep = in_state(RECVD_REQ);

		EXPECT_EQ(ev(&ep, KIWI_EPE_REQUEST_UNDELIVERED),
			  DROP | KIWI_EPA_DROP_REQ);
		EXPECT_EQ(ep.state, CLOSED);
	}
	/* kernel_connect() fails at once: iw_connect says so, no upcall. */
	{
		struct ep ep = in_state(CONNECTING);

		EXPECT_EQ(ev(&ep, KIWI_EPE_CONNECT_ERROR),
			  W | STOP | REL | RST | ID);
		EXPECT_EQ(ep.connect_reply, 0U);
		EXPECT_EQ(ep.state, CLOSED);
	}
	/* The QP fails on a connection: FIN, not RST. */
	{
		struct ep ep = in_state(RTS);

		EXPECT_EQ(ev(&ep, KIWI_EPE_LOCAL_ABORT), END);
		EXPECT_EQ(ep.resets, 0U);
		EXPECT_EQ(ep.disconnect, 1U);
	}
}

/*
 * Every sequence of up to five events from a fresh endpoint: once
 * CLOSED it stays, holding no socket; the iw_cm hears of the end of one
 * endpoint at most once (CONNECT_REPLY with an error or DISCONNECT, not
 * both); one FIN of ours, one reject frame.
 */
static unsigned int walk_bad;

static void walk(struct ep ep, unsigned int depth)
{
	unsigned int e;

	if (ep.state == CLOSED && ep.sock)
		walk_bad++;
	if (ep.connect_reply + ep.disconnect > 1 || ep.fins > 1 ||
	    ep.rejects > 1 || ep.releases > 1)
		walk_bad++;
	if (!depth)
		return;
	for (e = 0; e < KIWI_EPE_NEVENTS; e++) {
		struct ep n = ep;

		ev(&n, e);
		if (ep.state == CLOSED && n.state != CLOSED)
			walk_bad++;
		walk(n, depth - 1);
	}
}

TEST(every_short_sequence)
{
	walk(fresh(), 5);
	EXPECT_EQ(walk_bad, 0U);
}

KT_MAIN()
