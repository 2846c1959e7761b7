// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * iwerr -- kiwi error-path test peer.  One run is one end of one rdma_cm
 * connection, the responder (-s, passive) or the requester (active), and
 * one case:
 *
 *   bad_stag        RDMA WRITE to an STag the responder never registered
 *   oob_write       RDMA WRITE straddling the end of the responder's MR
 *   read_noaccess   RDMA READ of an MR registered without REMOTE_READ
 *   send_norecv     SEND while the responder has no receive posted
 *   send_toolong    SEND longer than the responder's receive buffer
 *   other_pd        RDMA WRITE to an MR of another PD of the responder
 *   qp_noread       RDMA READ through a responder QP whose access flags
 *                   lack REMOTE_READ (the MR allows it)
 *   read_sink_noaccess  RDMA READ into a local MR without LOCAL_WRITE
 *   write_bad_lkey  RDMA WRITE from a local lkey that does not exist
 *   kill_responder  the responder SIGKILLs itself mid-stream
 *   kill_requester  the requester SIGKILLs itself mid-stream
 *
 * The responder registers a 4 KiB region (followed by an unregistered
 * guard page) and passes addr/rkey/len in the accept's private data.
 * In the protocol-error cases the requester first proves the connection
 * works (a valid WRITE, and READ where allowed), then posts the offending
 * WR chained with one more WR, and both sides check what the verbs
 * consumer must see: completion statuses, an affiliated async error
 * event, the QP in ERR, outstanding receives flushed, WRs posted after
 * the error flushed, RDMA_CM_EVENT_DISCONNECTED, and no stray placement.
 *
 * Output: "# " diagnostic lines (TAP), the last one "# <who> summary:".
 * Exit status 0 if every check passed, 1 if not, 2 on usage errors.
 * selftests/guest/errors.sh runs the pairs and checks the kernel log.
 *
 * usage: iwerr [-s] -c CASE [-a ADDR] [-p PORT] [-t SECS] [-r FILE]
 *   -t SECS  time limit of each wait (default 20); the whole run is
 *            limited to 20 times that (SIGALRM)
 *   -r FILE  responder: write "listening" to FILE (a FIFO) once listening
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"

enum tcase {
	C_BAD_STAG,
	C_OOB_WRITE,
	C_READ_NOACCESS,
	C_SEND_NORECV,
	C_SEND_TOOLONG,
	C_OTHER_PD,
	C_QP_NOREAD,
	C_READ_SINK_NOACCESS,
	C_WRITE_BAD_LKEY,
	C_KILL_RESPONDER,
	C_KILL_REQUESTER,
	C_MAX
};

static const char *const case_names[C_MAX] = {
	"bad_stag", "oob_write", "read_noaccess", "send_norecv",
	"send_toolong", "other_pd",
	"qp_noread", "read_sink_noaccess", "write_bad_lkey",
	"kill_responder", "kill_requester",
};

/* Requester buffer layout (offsets into p->buf). */
#define SRC_OK		0		/* valid WRITE source, PAT_CLI */
#define SRC_BAD		256		/* offending WRITE/SEND source */
#define SINK_OK		1024		/* valid READ sink */
#define SINK_BAD	2048		/* offending READ sink */
#define SINK_NEXT	3072		/* sink of the READ chained after */
#define SRC_LONG	4096		/* send_toolong: LONG_LEN bytes */
#define LONG_LEN	1024		/* > the responder's 256-byte receives */

/* Tracked wr_ids. */
enum {
	WR_OK_WRITE = 1,
	WR_OK_READ,
	WR_BAD,
	WR_NEXT,
	WR_AFTER_SEND,
	WR_AFTER_READ,
	WR_AFTER_RECV = 40,
};

#define KILL_AFTER	16		/* SENDs into the stream */
#define MAX_SENDS	200		/* < STREAM_RECV: never short of buffers */

static char summary[2048];

static void sum(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void sum(const char *fmt, ...)
{
	size_t n = strlen(summary);
	va_list ap;

	if (n && n < sizeof(summary) - 2) {
		strcat(summary, ", ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(summary + n, sizeof(summary) - n, fmt, ap);
	va_end(ap);
}

static bool all_bytes(const uint8_t *b, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

static bool in(int status, const int *set, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (status == set[i])
			return true;
	return false;
}

/* ---- common checks after the error ---- */

static bool error_seen(struct peer *p)
{
	return p->async_ev >= 0 || p->disconnected;
}

static bool recvs_done(struct peer *p)
{
	return p->rs.n >= p->r_posted;
}

static bool sends_done(struct peer *p)
{
	return p->ss.n >= p->s_posted;
}

static bool all_settled(struct peer *p)
{
	return p->disconnected && recvs_done(p) && sends_done(p);
}

/* An affiliated async error event arrived, with the QP in ERR then. */
static void check_async(struct peer *p, bool required)
{
	if (required)
		check(p, p->async_ev >= 0,
		      "affiliated async error event: %s after %.3f s",
		      ev_name(p->async_ev), p->async_t);
	if (p->async_ev >= 0)
		check(p, p->state_at_async == IBV_QPS_ERR,
		      "QP state when the event arrived: %s",
		      qps_name(p->state_at_async));
	sum("async %s", ev_name(p->async_ev));
}

static void check_disconnected(struct peer *p)
{
	int st = qp_state(p);

	check(p, p->disconnected,
	      "RDMA_CM_EVENT_DISCONNECTED (status %d) at %.3f s",
	      p->disc_status, p->disc_t);
	check(p, st == IBV_QPS_ERR, "QP state afterwards: %s", qps_name(st));
	sum("qp %s", qps_name(st));
	sum(p->disconnected ? "DISCONNECTED" : "no DISCONNECTED");
}

/*
 * Receives outstanding at the error: every one completed, @n_ok of them
 * successfully (consumed before the error), the rest flushed.
 */
static void check_recvs(struct peer *p, unsigned int n_ok)
{
	unsigned int posted = p->r_posted;

	check(p, p->rs.n == posted && p->rs.ok == n_ok &&
	      p->rs.flush == posted - n_ok,
	      "%u receives: %u completed, %u ok, %u WR_FLUSH_ERR (want %u ok, rest flushed)",
	      posted, p->rs.n, p->rs.ok, p->rs.flush, n_ok);
	if (posted > n_ok)
		sum("recv flushed %u/%u", p->rs.flush, posted - n_ok);
}

static void check_flushed(struct peer *p, uint64_t wr_id, const char *what,
			  int rv)
{
	if (rv) {
		check(p, false, "posting %s after the error: %s", what,
		      strerror(rv));
		sum("after-error %s post failed (%s)", what, strerror(rv));
		return;
	}
	wait_wr(p, wr_id);
	check(p, p->wc[wr_id] == IBV_WC_WR_FLUSH_ERR,
	      "%s posted after the error: %s", what, wc_name(p->wc[wr_id]));
	sum("after-error %s %s", what, wc_name(p->wc[wr_id]));
}

/*
 * Completions of each queue come in the order the WRs were posted.
 * Not @strict: only reported (a known kiwi bug that a killed peer hits
 * by chance, see send_toolong, must not make the suite flaky).
 */
static void check_order(struct peer *p, bool strict)
{
	bool ok = !p->ss.out_of_order && !p->rs.out_of_order;

	if (strict)
		check(p, ok,
		      "completions in posting order (%u send, %u recv out of order)",
		      p->ss.out_of_order, p->rs.out_of_order);
	else if (!ok)
		say(p, "note: %u send, %u recv completions out of posting order (not counted)",
		    p->ss.out_of_order, p->rs.out_of_order);
	if (!ok)
		sum("OUT OF ORDER completions");
}

/* WRs posted to a QP in error complete with IBV_WC_WR_FLUSH_ERR. */
static void check_post_after(struct peer *p, bool read)
{
	int rv;

	rv = post_recv(p, WR_AFTER_RECV, p->rbuf, OP_LEN);
	check_flushed(p, WR_AFTER_RECV, "RECV", rv);
	rv = post_one(p, WR_AFTER_SEND, IBV_WR_SEND, p->buf + SRC_OK, OP_LEN,
		      0, 0);
	check_flushed(p, WR_AFTER_SEND, "SEND", rv);
	if (!read)
		return;
	rv = post_one(p, WR_AFTER_READ, IBV_WR_RDMA_READ, p->buf + SINK_NEXT,
		      OP_LEN, p->remote.addr, p->remote.rkey);
	check_flushed(p, WR_AFTER_READ, "READ", rv);
}

/* ---- the protocol-error cases: requester ---- */

/* Cases whose offending WR is a READ. */
static bool bad_is_read(enum tcase tc)
{
	return tc == C_READ_NOACCESS || tc == C_QP_NOREAD ||
	       tc == C_READ_SINK_NOACCESS;
}

static bool got_go(struct peer *p)
{
	return p->rs.n > 0;
}

static bool positive_control(struct peer *p, bool read)
{
	uint64_t ra = p->remote.addr;
	uint32_t rk = p->remote.rkey;
	int rv;

	memset(p->buf + SRC_OK, PAT_CLI, OP_LEN);
	rv = post_one(p, WR_OK_WRITE, IBV_WR_RDMA_WRITE, p->buf + SRC_OK,
		      OP_LEN, ra, rk);
	if (rv || !wait_wr(p, WR_OK_WRITE) ||
	    !check(p, p->wc[WR_OK_WRITE] == IBV_WC_SUCCESS,
		   "valid RDMA WRITE: %s", wc_name(p->wc[WR_OK_WRITE])))
		return false;
	if (!read)
		return true;
	rv = post_one(p, WR_OK_READ, IBV_WR_RDMA_READ, p->buf + SINK_OK,
		      OP_LEN, ra, rk);
	if (rv || !wait_wr(p, WR_OK_READ) ||
	    !check(p, p->wc[WR_OK_READ] == IBV_WC_SUCCESS,
		   "valid RDMA READ: %s", wc_name(p->wc[WR_OK_READ])))
		return false;
	return check(p, all_bytes(p->buf + SINK_OK, OP_LEN, PAT_CLI),
		     "valid READ returned the bytes just written");
}

/* An STag nobody registered: other index, other key. */
#define FOREIGN(key)	((key) ^ 0x00ff00ff)

/* The offending WR into wr/sge. */
static void set_bad(struct peer *p, enum tcase tc, struct ibv_send_wr *wr,
		    struct ibv_sge *sge)
{
	uint64_t ra = p->remote.addr;
	uint32_t rk = p->remote.rkey, len = p->remote.len;
	uint8_t *b = p->buf;

	switch (tc) {
	case C_BAD_STAG:
		say(p, "WRITE to rkey 0x%x (registered: 0x%x)", FOREIGN(rk),
		    rk);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_WRITE, b + SRC_BAD,
		       OP_LEN, ra + 128, FOREIGN(rk));
		break;
	case C_OOB_WRITE:
		say(p, "WRITE of %u bytes at offset %u of a %u-byte region",
		    OP_LEN, len - 16, len);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_WRITE, b + SRC_BAD,
		       OP_LEN, ra + len - 16, rk);
		break;
	case C_OTHER_PD:
		say(p, "WRITE to rkey 0x%x (registered in another PD)",
		    p->remote.rkey2);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_WRITE, b + SRC_BAD,
		       OP_LEN, p->remote.addr2 + 128, p->remote.rkey2);
		break;
	case C_READ_NOACCESS:
	case C_QP_NOREAD:
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_READ, b + SINK_BAD,
		       OP_LEN, ra + 128, rk);
		break;
	case C_READ_SINK_NOACCESS:
		say(p, "READ into lkey 0x%x (access 0: no LOCAL_WRITE)",
		    p->mr2->lkey);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_READ, p->buf2, OP_LEN,
		       ra + 128, rk);
		sge->lkey = p->mr2->lkey;
		break;
	case C_WRITE_BAD_LKEY:
		say(p, "WRITE from lkey 0x%x (registered: 0x%x)",
		    FOREIGN(p->mr->lkey), p->mr->lkey);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_RDMA_WRITE, b + SRC_BAD,
		       OP_LEN, ra + 128, rk);
		sge->lkey = FOREIGN(p->mr->lkey);
		break;
	case C_SEND_TOOLONG:
		say(p, "SEND of %u bytes into %u-byte receives", LONG_LEN, 256);
		memset(b + SRC_LONG, PAT_BAD, LONG_LEN);
		set_wr(wr, sge, p, WR_BAD, IBV_WR_SEND, b + SRC_LONG,
		       LONG_LEN, 0, 0);
		break;
	default:
		set_wr(wr, sge, p, WR_BAD, IBV_WR_SEND, b + SRC_BAD, OP_LEN,
		       0, 0);
		break;
	}
}

/* The offending WR, chained with a valid one: a WRITE after a READ. */
static int post_bad(struct peer *p, enum tcase tc)
{
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	uint64_t ra = p->remote.addr;
	uint32_t rk = p->remote.rkey;
	uint8_t *b = p->buf;

	memset(b + SRC_BAD, PAT_BAD, OP_LEN);
	memset(b + SINK_BAD, 0, OP_LEN);
	memset(b + SINK_NEXT, 0, OP_LEN);
	set_bad(p, tc, &wr[0], &sge[0]);
	if (bad_is_read(tc))
		set_wr(&wr[1], &sge[1], p, WR_NEXT, IBV_WR_RDMA_WRITE,
		       b + SRC_BAD, OP_LEN, ra + 256, rk);
	else
		set_wr(&wr[1], &sge[1], p, WR_NEXT, IBV_WR_RDMA_READ,
		       b + SINK_NEXT, OP_LEN, ra, rk);
	wr[0].next = &wr[1];
	return post_send_chain(p, wr);
}

/*
 * The offending WR.  A READ waits for its response, so a remote
 * protection error is its completion status, and a local one (its
 * sink) is a local protection error; so is a WRITE whose source is
 * not registered.  WRITE and SEND are not acknowledged on iWARP
 * (RFC 5041 5.4: complete once the LLP has them): success is expected
 * for remote errors; a remote error status derived from the TERMINATE
 * is tolerated.
 */
static void check_bad_wc(struct peer *p, enum tcase tc)
{
	static const int w_ok[] = { IBV_WC_SUCCESS, IBV_WC_REM_ACCESS_ERR };
	static const int s_ok[] = {
		IBV_WC_SUCCESS, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR,
	};
	static const int q_ok[] = {
		IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR,
	};
	int st = p->wc[WR_BAD];

	switch (tc) {
	case C_READ_NOACCESS:
		check(p, st == IBV_WC_REM_ACCESS_ERR,
		      "offending READ: %s (want REM_ACCESS_ERR)", wc_name(st));
		break;
	case C_QP_NOREAD:
		check(p, in(st, q_ok, 2),
		      "offending READ: %s (want REM_ACCESS_ERR or REM_INV_REQ_ERR)",
		      wc_name(st));
		break;
	case C_READ_SINK_NOACCESS:
	case C_WRITE_BAD_LKEY:
		check(p, st == IBV_WC_LOC_PROT_ERR,
		      "offending %s: %s (want LOC_PROT_ERR)",
		      tc == C_WRITE_BAD_LKEY ? "WRITE" : "READ", wc_name(st));
		break;
	case C_SEND_NORECV:
	case C_SEND_TOOLONG:
		check(p, in(st, s_ok, 3), "offending SEND: %s", wc_name(st));
		break;
	default:
		check(p, in(st, w_ok, 2), "offending WRITE: %s", wc_name(st));
		break;
	}
	sum("%s %s", tc == C_SEND_NORECV || tc == C_SEND_TOOLONG ? "SEND" :
	    bad_is_read(tc) ? "READ" : "WRITE", wc_name(st));
}

/*
 * The WR chained after it.  A READ can never be answered now: an error
 * or flush status, and nothing placed in its sink (strictly a flush if
 * the offending WR never left).  A WRITE may have left before the
 * TERMINATE came back (then it completed locally).
 */
static void check_next_wc(struct peer *p, enum tcase tc)
{
	static const int r_ok[] = {
		IBV_WC_WR_FLUSH_ERR, IBV_WC_REM_ACCESS_ERR,
		IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR,
	};
	int st = p->wc[WR_NEXT];

	if (bad_is_read(tc)) {
		check(p, st != -1, "WRITE chained after it: %s", wc_name(st));
		check(p, all_bytes(p->buf + SINK_BAD, OP_LEN, 0) &&
		      (!p->buf2 || all_bytes(p->buf2, MR_LEN, 0)),
		      "nothing placed in the offending READ's sink");
		sum("next WRITE %s", wc_name(st));
		return;
	}
	if (tc == C_WRITE_BAD_LKEY)
		check(p, st == IBV_WC_WR_FLUSH_ERR,
		      "READ chained after it: %s (never sent: want WR_FLUSH_ERR)",
		      wc_name(st));
	else
		check(p, in(st, r_ok, 4), "READ chained after it: %s",
		      wc_name(st));
	check(p, all_bytes(p->buf + SINK_NEXT, OP_LEN, 0),
	      "nothing placed in that READ's sink");
	sum("next READ %s", wc_name(st));
}

static bool bad_done(struct peer *p)
{
	return p->wc[WR_BAD] != -1 || error_seen(p);
}

/*
 * A READ that should have failed was answered: no error will come.
 * Close the connection so that both sides finish their checks (which
 * fail) quickly.
 */
static void no_error_coming(struct peer *p)
{
	check(p, false, "offending READ answered: no error to wait for");
	p->timeout = 3;
	rdma_disconnect(p->id);
}

static int requester_error_case(struct peer *p, enum tcase tc)
{
	bool go = tc == C_QP_NOREAD;
	int rv;

	/* qp_noread: the responder SENDs once it has restricted its QP. */
	if (go && !check(p, wait_until(p, got_go, p->timeout) &&
			 p->rs.ok == 1, "responder's go-ahead SEND arrived"))
		return -1;
	if (!positive_control(p, !bad_is_read(tc)))
		return -1;
	rv = post_bad(p, tc);
	if (rv)
		return fail(p, "posting the offending WR: %s", strerror(rv));
	wait_until(p, bad_done, p->timeout);
	if (bad_is_read(tc) && p->wc[WR_BAD] == IBV_WC_SUCCESS)
		no_error_coming(p);
	check(p, wait_until(p, error_seen, p->timeout),
	      "the error surfaced (async event or disconnect)");
	wait_until(p, all_settled, p->timeout);
	check_bad_wc(p, tc);
	check_next_wc(p, tc);
	check_async(p, true);
	check_recvs(p, go);
	check_disconnected(p);
	check_post_after(p, true);
	check_order(p, true);
	return 0;
}

/* ---- the protocol-error cases: responder ---- */

/*
 * Only the valid WRITE landed: the offending op and all after it not.
 * (read_sink_noaccess: the requester detects the error, in the READ
 * response; the WRITE chained after the READ is valid and may be
 * placed before the requester's TERMINATE arrives.)
 */
static void check_region(struct peer *p, enum tcase tc)
{
	uint8_t *next = p->buf + 256;

	if (tc == C_READ_SINK_NOACCESS && all_bytes(next, OP_LEN, PAT_BAD)) {
		say(p, "the WRITE chained after the READ was placed");
		memset(next, PAT_SRV, OP_LEN);
	}
	check(p, all_bytes(p->buf, OP_LEN, PAT_CLI),
	      "the valid WRITE was placed");
	check(p, all_bytes(p->buf + OP_LEN, MR_LEN - OP_LEN, PAT_SRV),
	      "nothing else placed in the region");
	check(p, all_bytes(p->buf + MR_LEN, BUF_LEN - MR_LEN, PAT_GUARD),
	      "guard page after the region untouched");
	if (p->buf2)
		check(p, all_bytes(p->buf2, MR_LEN, PAT_SRV),
		      "nothing placed in the other PD's region");
}

/* qp_noread: take REMOTE_READ off the QP, then tell the requester. */
static int restrict_qp(struct peer *p)
{
	struct ibv_qp_attr a = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp_init_attr init;
	int rv;

	rv = ibv_modify_qp(p->qp, &a, IBV_QP_ACCESS_FLAGS);
	if (rv)
		return fail(p, "ibv_modify_qp(access REMOTE_WRITE): %s",
			    strerror(rv));
	memset(&a, 0, sizeof(a));
	if (!ibv_query_qp(p->qp, &a, IBV_QP_ACCESS_FLAGS, &init))
		say(p, "QP access flags now 0x%x (region: 0x%x)",
		    a.qp_access_flags, p->mr_access);
	rv = post_one(p, WR_OK_WRITE, IBV_WR_SEND, p->buf, 16, 0, 0);
	if (rv || !wait_wr(p, WR_OK_WRITE) ||
	    !check(p, p->wc[WR_OK_WRITE] == IBV_WC_SUCCESS,
		   "go-ahead SEND: %s", wc_name(p->wc[WR_OK_WRITE])))
		return -1;
	return 0;
}

/*
 * send_toolong: the receive the SEND consumed completes with a local
 * length error (nothing placed: RFC 5041 7.1 validates a segment before
 * placing it), the others are flushed.
 */
static void check_toolong_recv(struct peer *p)
{
	int st = p->wc[WR_RECV];

	check(p, st == IBV_WC_LOC_LEN_ERR,
	      "receive the SEND was too long for: %s (want LOC_LEN_ERR)",
	      wc_name(st));
	check(p, p->rs.n == p->r_posted && p->rs.flush == p->r_posted - 1,
	      "%u receives: %u completed, %u WR_FLUSH_ERR (want all but one)",
	      p->r_posted, p->rs.n, p->rs.flush);
	check(p, all_bytes(p->rbuf, 256, 0),
	      "nothing placed in that receive's buffer");
	sum("recv %s + %u WR_FLUSH_ERR", wc_name(st), p->rs.flush);
}

static int responder_error_case(struct peer *p, enum tcase tc)
{
	if (tc == C_QP_NOREAD && restrict_qp(p))
		return -1;
	check(p, wait_until(p, error_seen, 3 * p->timeout),
	      "the error surfaced (async event or disconnect)");
	wait_until(p, all_settled, p->timeout);
	check_async(p, true);
	if (tc == C_SEND_TOOLONG)
		check_toolong_recv(p);
	else
		check_recvs(p, 0);
	check_disconnected(p);
	check_region(p, tc);
	check_post_after(p, false);
	check_order(p, true);
	return 0;
}

/* ---- killed peer: streaming ---- */

struct stream {
	unsigned int n;			/* WRs posted */
	unsigned int sends;		/* SENDs posted */
	unsigned int sends_ok;		/* SENDs completed successfully */
	bool kill_self;
};

static void die_now(struct peer *p, const char *what, unsigned int n)
{
	say(p, "SIGKILL to myself after %u %s", n, what);
	kill(getpid(), SIGKILL);
}

static void stream_hook(struct peer *p, const struct ibv_wc *wc, bool recv)
{
	struct stream *s = p->hook_data;

	if (recv || wc->status != IBV_WC_SUCCESS || wc->wr_id < WR_STREAM ||
	    !(wc->wr_id & 1))
		return;
	if (++s->sends_ok == KILL_AFTER && s->kill_self)
		die_now(p, "completed SENDs", s->sends_ok);
}

/*
 * One more WR of the stream: seven 4 KiB WRITEs, then a SEND, all from
 * the same source bytes (never modified while WRs are outstanding: with
 * MPA CRCs a change under an in-flight WR is a CRC error at the peer).
 */
static int stream_post(struct peer *p, struct stream *s)
{
	bool send = s->n % 8 == 7 && s->sends < MAX_SENDS;
	uint64_t wr_id = WR_STREAM + 2 * (uint64_t)s->n + send;
	int rv;

	rv = post_one(p, wr_id, send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
		      p->buf, STREAM_LEN, p->remote.addr, p->remote.rkey);
	if (!rv) {
		s->n++;
		s->sends += send;
	}
	return rv;
}

static bool stream_error(struct peer *p)
{
	return p->ss.flush || p->ss.err || p->rs.n || error_seen(p);
}

/* Keep SQ_DEPTH WRs in flight until an error shows. */
static bool stream(struct peer *p, struct stream *s, double secs)
{
	double end = now() + secs;
	int rv;

	for (;;) {
		poll_all(p);
		if (stream_error(p))
			return true;
		while (p->s_posted - p->ss.n < SQ_DEPTH) {
			rv = stream_post(p, s);
			if (rv) {
				say(p, "ibv_post_send failed: %s after %u WRs",
				    strerror(rv), s->n);
				return true;
			}
		}
		if (now() > end)
			return false;
		pump(p, 1);
	}
}

/* What a survivor's send queue must show: successes, then flushes. */
static void check_stream_sq(struct peer *p, struct stream *s)
{
	say(p, "streamed %u WRs (%u SENDs): %u ok, %u WR_FLUSH_ERR, %u other errors (first failure %s)",
	    s->n, s->sends, p->ss.ok, p->ss.flush, p->ss.err,
	    wc_name(p->ss.first_bad));
	check(p, p->ss.ok >= KILL_AFTER,
	      "WRs completed before the peer died: %u", p->ss.ok);
	check(p, p->ss.n == p->s_posted,
	      "every posted WR completed: %u of %u", p->ss.n, p->s_posted);
	check(p, !p->ss.ok_after_err, "no success after the first failure");
	check(p, !p->ss.err, "failed WRs are WR_FLUSH_ERR (%u other)",
	      p->ss.err);
	sum("stream: %u ok, %u WR_FLUSH_ERR, %u other", p->ss.ok,
	    p->ss.flush, p->ss.err);
}

static int requester_kill_case(struct peer *p, enum tcase tc)
{
	struct stream s = { .kill_self = tc == C_KILL_REQUESTER };

	p->hook = stream_hook;
	p->hook_data = &s;
	if (!stream(p, &s, 8 * p->timeout))
		return fail(p, "no error within %.0f s of streaming",
			    8 * p->timeout);
	if (s.kill_self)
		return fail(p, "the stream failed before I could die");
	wait_until(p, all_settled, p->timeout);
	check_stream_sq(p, &s);
	check_async(p, false);
	check_recvs(p, 0);
	check_disconnected(p);
	check_post_after(p, true);
	check_order(p, true);
	return 0;
}

/* Responder side: count receives; repost them, or die after some. */
static void recv_hook(struct peer *p, const struct ibv_wc *wc, bool recv)
{
	struct stream *s = p->hook_data;
	uint64_t i = wc->wr_id - WR_SRECV;

	if (!recv || wc->status != IBV_WC_SUCCESS)
		return;
	s->sends_ok++;
	if (!s->kill_self)
		return;
	post_recv(p, wc->wr_id, p->rbuf + i * STREAM_LEN, STREAM_LEN);
	if (s->sends_ok == KILL_AFTER)
		die_now(p, "received SENDs", s->sends_ok);
}

static int responder_kill_case(struct peer *p, enum tcase tc)
{
	struct stream s = { .kill_self = tc == C_KILL_RESPONDER };

	p->hook = recv_hook;
	p->hook_data = &s;
	if (s.kill_self) {
		wait_until(p, error_seen, 8 * p->timeout);
		return fail(p, "connection failed after %u SENDs, before %u",
			    s.sends_ok, KILL_AFTER);
	}
	check(p, wait_until(p, error_seen, 8 * p->timeout),
	      "the error surfaced (async event or disconnect)");
	wait_until(p, all_settled, p->timeout);
	check(p, p->rs.ok >= 1, "SENDs received before the peer died: %u",
	      p->rs.ok);
	check(p, p->rs.n == p->r_posted,
	      "every receive completed: %u of %u (%u WR_FLUSH_ERR)",
	      p->rs.n, p->r_posted, p->rs.flush);
	check(p, !p->rs.ok_after_err && !p->rs.err,
	      "receives: successes, then only WR_FLUSH_ERR (%u other errors)",
	      p->rs.err);
	sum("recv: %u ok, %u WR_FLUSH_ERR, %u other", p->rs.ok, p->rs.flush,
	    p->rs.err);
	check_async(p, false);
	check_disconnected(p);
	check(p, all_bytes(p->buf + MR_LEN, BUF_LEN - MR_LEN, PAT_GUARD),
	      "guard page after the region untouched");
	check_post_after(p, false);
	check_order(p, false);
	return 0;
}

/* ---- main ---- */

static int parse_case(const char *name)
{
	int i;

	for (i = 0; i < C_MAX; i++)
		if (!strcmp(name, case_names[i]))
			return i;
	return -1;
}

static void usage(void)
{
	int i;

	fprintf(stderr,
		"usage: iwerr [-s] -c CASE [-a ADDR] [-p PORT] [-t SECS] [-r FILE]\n"
		"  -s       responder (listens on ADDR); default: requester\n"
		"  -t SECS  limit of each wait (default 20)\n"
		"  -r FILE  tell FILE (a FIFO) when listening\n"
		"cases:");
	for (i = 0; i < C_MAX; i++)
		fprintf(stderr, " %s", case_names[i]);
	fprintf(stderr, "\n");
	exit(2);
}

static const char *ready_path;

/* The shell waits for this instead of polling for the listener. */
static void tell_ready(void)
{
	int fd;

	if (!ready_path)
		return;
	fd = open(ready_path, O_WRONLY);
	if (fd < 0 || write(fd, "listening\n", 10) != 10)
		perror(ready_path);
	if (fd >= 0)
		close(fd);
}

static int run(struct peer *p, enum tcase tc, const char *addr, int port)
{
	bool kill = tc == C_KILL_RESPONDER || tc == C_KILL_REQUESTER;
	bool norecv = tc == C_SEND_NORECV;

	if (p->server) {
		p->mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		if (tc != C_READ_NOACCESS)
			p->mr_access |= IBV_ACCESS_REMOTE_READ;
		if (tc == C_OTHER_PD) {
			p->mr2_access = p->mr_access;
			p->mr2_other_pd = true;
		}
		if (peer_listen(p, addr, port))
			return -1;
		tell_ready();
		if (peer_accept(p, kill ? STREAM_RECV : norecv ? 0 : NRECV,
				kill ? STREAM_LEN : 256))
			return -1;
		return kill ? responder_kill_case(p, tc) :
			      responder_error_case(p, tc);
	}
	if (tc == C_READ_SINK_NOACCESS)
		p->mr2_access = 0;
	if (peer_connect(p, addr, port, NRECV, 256))
		return -1;
	return kill ? requester_kill_case(p, tc) :
		      requester_error_case(p, tc);
}

int main(int argc, char **argv)
{
	const char *addr = "10.91.0.2";
	double secs = 20;
	bool server = false;
	int port = 7300, tc = -1, c, rv;
	struct peer p;

	while ((c = getopt(argc, argv, "sc:a:p:t:r:")) != -1) {
		switch (c) {
		case 's':
			server = true;
			break;
		case 'c':
			tc = parse_case(optarg);
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'r':
			ready_path = optarg;
			break;
		default:
			usage();
		}
	}
	if (tc < 0 || optind != argc || secs <= 0)
		usage();
	alarm((unsigned int)(20 * secs));	/* never hang the suite */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (peer_init(&p, server, secs))
		return 1;
	say(&p, "case %s", case_names[tc]);
	rv = run(&p, tc, addr, port);
	printf("# %s summary: %s\n", p.who, summary[0] ? summary : "-");
	peer_destroy(&p);
	return rv || p.nfail ? 1 : 0;
}
