/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * cm_pair.h -- the connected-pair fixture: what the programs that join
 * a server and a client by rdma_cm (ring_conn, imm_conn, atomic_conn,
 * mw_conn, qp_reconnect; run by selftests/guest/datapath.sh) share.
 * cm_pair.c is compiled once and linked into each of them.
 *
 *  - dying with the program's name and role (DIE);
 *  - a monotonic clock, and waiting a bounded time for one completion;
 *  - the -s/-c ADDR PORT command line;
 *  - the connection: a listening endpoint, a connect request taken and
 *    accepted, or an endpoint resolved and connected, with the pairs'
 *    usual parameters and the server's private data read back;
 *  - an RC QP on a connection's cm_id (rdma_create_qp_ex, extended send
 *    operations), one receive posted, and the first kiwi device for the
 *    modes that run without a peer.
 *
 * Each program defines cm_pair_prog (its name) and sets cm_pair_role
 * ("server", "client", ...) once the role is known.  Every function here
 * dies on failure; where a step may fail for several reasons the caller
 * names it (the @what format, printed before ": " and strerror(errno)).
 */
#ifndef KIWI_CM_PAIR_H
#define KIWI_CM_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

extern const char cm_pair_prog[];	/* defined by each program */
extern const char *cm_pair_role;	/* "?" until set */

/* "PROG ROLE: message" on stderr, then exit(1). */
void cm_pair_die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
#define DIE(...) cm_pair_die(__VA_ARGS__)

double cm_pair_now(void);

/* The next completion of @cq (plain ibv_poll_cq); dies after @secs. */
struct ibv_wc cm_pair_wc(struct ibv_cq *cq, double secs, const char *what);

/* Wait until @cq (an ibv_cq_ex) has a completion to read; dies after @secs. */
void cm_pair_start_poll(struct ibv_cq_ex *cq, double secs, const char *what);

struct rdma_addrinfo *cm_pair_resolve(const char *addr, const char *port,
				      bool passive);

typedef int cm_pair_side(const char *addr, const char *port);

/*
 * The usual command line, "-s ADDR PORT" (server) or "-c ADDR PORT"
 * (client): that side's result, or -1 for the caller to try its own
 * options (and print its usage).
 */
int cm_pair_main(int argc, char **argv, cm_pair_side *server,
		 cm_pair_side *client);

/* A region of one side, as the server sends it in its private data. */
struct cm_pair_region {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

/*
 * The pairs' usual connection parameters: 4 inbound and 4 outbound
 * READs (or atomics); a client (@active) asks for 7 retries.  @priv,
 * @len: the private data to send, or NULL, 0.
 */
struct rdma_conn_param cm_pair_param(bool active, const void *priv,
				     uint8_t len);

/* Server: an endpoint listening on @addr:@port ("listen: ..." if not). */
struct rdma_cm_id *cm_pair_listen(const char *addr, const char *port,
				  int backlog);
/* Server: the next connect request on @listen, its cm_id. */
struct rdma_cm_id *cm_pair_request(struct rdma_cm_id *listen,
				   const char *what, ...)
	__attribute__((format(printf, 2, 3)));
void cm_pair_accept(struct rdma_cm_id *id, const struct rdma_conn_param *cp,
		    const char *what, ...)
	__attribute__((format(printf, 3, 4)));

/* Client: an endpoint resolved to @addr:@port, for a QP and a connect. */
struct rdma_cm_id *cm_pair_endpoint(const char *addr, const char *port,
				    const char *what, ...)
	__attribute__((format(printf, 3, 4)));
void cm_pair_connect(struct rdma_cm_id *id, const struct rdma_conn_param *cp,
		     const char *what, ...)
	__attribute__((format(printf, 3, 4)));
/* Client, connected: the server's private data, @len bytes of it. */
void cm_pair_peer_data(struct rdma_cm_id *id, void *buf, size_t len);

/*
 * An RC QP on @id (rdma_create_qp_ex) with @cap, the extended send
 * operations @send_ops, in @pd, completing on @scq and @rcq: its
 * ibv_qp_ex (id->qp is the QP).
 */
struct ibv_qp_ex *cm_pair_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_cq *scq, struct ibv_cq *rcq,
			     struct ibv_qp_cap cap, uint64_t send_ops);

/* One receive of @len bytes at @addr (region @lkey) on @qp. */
void cm_pair_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr,
		       uint32_t len, uint32_t lkey);

/* The first kiwi device, opened ("no kiwi device" if none). */
struct ibv_context *cm_pair_kiwi(void);

#endif
