/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * peer.h -- one end of an rdma_cm connection for the kiwi error-path
 * tests (selftests/errors/iwerr.c): connection set-up, the event loop
 * over CM events, affiliated async events and both CQs, and bookkeeping
 * of every completion.
 */
#ifndef KIWI_ERRORS_PEER_H
#define KIWI_ERRORS_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MR_LEN		4096		/* the responder's exposed region */
#define BUF_LEN		(2 * MR_LEN)	/* plus an unregistered guard page */
#define OP_LEN		64		/* size of the single operations */
#define NRECV		4		/* receives outstanding at the error */
#define STREAM_LEN	4096		/* size of each streamed WR */
#define STREAM_RECV	256		/* receives a streaming responder posts */
#define SQ_DEPTH	64
#define RBUF_LEN	(STREAM_RECV * STREAM_LEN)

/* wr_ids: small ones are tracked one by one, streamed ones counted. */
#define MAX_WRID	64
#define WR_RECV		32		/* NRECV receives: 32, 33, ... */
#define WR_STREAM	1000		/* stream: 1000 + 2 * n + is_send */
#define WR_SRECV	100000		/* streaming responder's receives */

/* Fill patterns. */
#define PAT_SRV		0x5a		/* the responder's region */
#define PAT_GUARD	0xa5		/* the page after it, unregistered */
#define PAT_CLI		0xc1		/* valid writes */
#define PAT_BAD		0xee		/* the offending operations */

#define IWERR_MAGIC	0x6b697769	/* "kiwi" */

/* The responder's region(s), in the accept's private data. */
struct wire_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint64_t addr2;			/* second region (mr2), if any */
	uint32_t rkey2;
	uint32_t magic;
};

/* Completion counts of one CQ. */
struct cq_stat {
	unsigned int n;			/* completions */
	unsigned int ok;
	unsigned int flush;		/* IBV_WC_WR_FLUSH_ERR */
	unsigned int err;		/* other errors */
	unsigned int ok_after_err;	/* successes after a failure */
	int first_bad;			/* status of the first failure, or -1 */
	unsigned int out_of_order;	/* completions before earlier WRs' */
	uint64_t last;			/* last wr_id seen (ordered ones) */
};

struct peer;
typedef void (*wc_hook)(struct peer *p, const struct ibv_wc *wc, bool recv);

struct peer {
	bool server;
	const char *who;		/* "requester" or "responder" */
	double t0;
	double timeout;			/* seconds, for each wait */
	int nfail;

	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;		/* listener (responder) */
	struct rdma_cm_id *id;		/* the connection */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	uint8_t *buf;			/* BUF_LEN bytes, page aligned */
	struct ibv_mr *mr;
	uint8_t *rbuf;			/* receive buffers */
	struct ibv_mr *rmr;
	int mr_access;			/* responder: access of mr */
	uint8_t *buf2;			/* MR_LEN bytes for mr2 */
	struct ibv_mr *mr2;		/* a second MR, if mr2_access >= 0 */
	int mr2_access;
	struct ibv_pd *pd2;		/* mr2's PD if mr2_other_pd */
	bool mr2_other_pd;
	struct wire_info remote;	/* requester: the responder's region */

	/* What happened. */
	uint32_t cm_seen;		/* 1 << RDMA_CM_EVENT_* */
	int cm_error;			/* a failing CM event, or -1 */
	bool disconnected;
	double disc_t;
	int disc_status;
	int async_ev;			/* first affiliated QP error event, or -1 */
	double async_t;
	int state_at_async;		/* QP state then, or -1 */
	unsigned int n_async;
	int wc[MAX_WRID];		/* status by wr_id, -1 while none */
	struct cq_stat ss, rs;		/* send and receive CQ */
	unsigned int s_posted, r_posted;
	wc_hook hook;
	void *hook_data;
};

/* Output: TAP diagnostics, "# <who>: ...". */
void say(struct peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool check(struct peer *p, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int fail(struct peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
double now(void);
double elapsed(struct peer *p);
const char *wc_name(int status);
const char *ev_name(int type);
const char *qps_name(int state);

/* Set-up and tear-down. */
int peer_init(struct peer *p, bool server, double timeout);
int peer_listen(struct peer *p, const char *addr, int port);
int peer_accept(struct peer *p, int recvs, int recv_len);
int peer_connect(struct peer *p, const char *addr, int port, int recvs,
		 int recv_len);
void peer_destroy(struct peer *p);

/* The event loop. */
void pump(struct peer *p, int ms);
bool wait_until(struct peer *p, bool (*pred)(struct peer *p), double secs);
bool wait_wr(struct peer *p, uint64_t wr_id);
void poll_all(struct peer *p);
int qp_state(struct peer *p);

/* Posting; each returns 0 or an errno value. */
int post_recv(struct peer *p, uint64_t wr_id, void *addr, uint32_t len);
void set_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct peer *p,
	    uint64_t wr_id, enum ibv_wr_opcode op, void *laddr, uint32_t len,
	    uint64_t raddr, uint32_t rkey);
int post_send_chain(struct peer *p, struct ibv_send_wr *wr);
int post_one(struct peer *p, uint64_t wr_id, enum ibv_wr_opcode op,
	     void *laddr, uint32_t len, uint64_t raddr, uint32_t rkey);

#endif
