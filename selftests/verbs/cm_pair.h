/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * cm_pair.h -- what the connected-pair programs (ring_conn, imm_conn,
 * atomic_conn: a server and a client joined by rdma_cm, run by
 * selftests/guest/datapath.sh) share: dying with the program's name and
 * role, a monotonic clock, waiting a bounded time for one completion,
 * and resolving an address.
 *
 * Define CM_PAIR_PROG (the program's name) before including it; set
 * cm_pair_role ("server", "client", ...) once the role is known.
 */
#ifndef KIWI_CM_PAIR_H
#define KIWI_CM_PAIR_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static const char *cm_pair_role = "?";

#define DIE(...)							\
	do {								\
		fprintf(stderr, CM_PAIR_PROG " %s: ", cm_pair_role);	\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		exit(1);						\
	} while (0)

static inline double cm_pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next completion of @cq (plain ibv_poll_cq); dies after @secs. */
static inline struct ibv_wc cm_pair_wc(struct ibv_cq *cq, double secs,
				       const char *what)
{
	double end = cm_pair_now() + secs;
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		if (cm_pair_now() > end)
			DIE("no %s%scompletion within %.0f s", what, *what ? " " : "", secs);
		usleep(200);
	}
	if (n < 0)
		DIE("poll_cq: %d", n);
	return wc;
}

/* Wait until @cq (an ibv_cq_ex) has a completion to read; dies after @secs. */
static inline void cm_pair_start_poll(struct ibv_cq_ex *cq, double secs,
				      const char *what)
{
	struct ibv_poll_cq_attr pa = {};
	double end = cm_pair_now() + secs;

	while (ibv_start_poll(cq, &pa) == ENOENT) {
		if (cm_pair_now() > end)
			DIE("no %s%scompletion within %.0f s", what, *what ? " " : "", secs);
		usleep(200);
	}
}

static inline struct rdma_addrinfo *cm_pair_resolve(const char *addr,
						    const char *port,
						    bool passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP,
				       .ai_flags = passive ? RAI_PASSIVE : 0 };
	struct rdma_addrinfo *res;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		DIE("rdma_getaddrinfo %s:%s: %s", addr, port, strerror(errno));
	return res;
}

typedef int cm_pair_side(const char *addr, const char *port);

/*
 * The usual command line, "-s ADDR PORT" (server) or "-c ADDR PORT"
 * (client): that side's result, or -1 for the caller to try its own
 * options (and print its usage).
 */
static inline int cm_pair_main(int argc, char **argv, cm_pair_side *server,
			       cm_pair_side *client)
{
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], argv[3]);
	return -1;
}

#endif
