// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * bindflood -- keep a connected QP's send queue full of unsignaled
 * memory-window binds, which put nothing on the wire and never sleep in
 * the kernel (security audit F6), and check that kiwi still lets the CPU
 * go (selftests/guest/abuse.sh, case bind_flood).
 *
 *   bindflood -a ADDR [-p PORT] [-s SECS] [-t THREADS]
 *
 * Connects to an rdma_cm listener at ADDR:PORT (victim -l), then for SECS
 * seconds (default 20) THREADS threads (default 2) each bind their own
 * type 1 window over a region again and again (ibv_bind_mw, unsignaled:
 * a new key each time), the ring refilled as fast as kiwi drains it.  A
 * heartbeat thread sleeps 10 ms at a time and records the longest gap
 * between its wake-ups.  kiwi must drain the binds in bounded runs: the
 * guest's watchdog reports a soft lockup otherwise (vm/run.sh fails the
 * boot on it), and neither a bind call nor the heartbeat may wait 5 s.
 * (On b68d605 this did not fail in the guest either: two threads do not
 * outpace kiwi's loop there.  It stays as a liveness check of the
 * bounded runs.)
 *
 * Prints "# binds N, longest bind call X ms, longest heartbeat gap Y ms"
 * and "bindflood: ok" or "bindflood: FAILED ...".  Exit status 0 on
 * success, 1 on failure, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

#define REGION		(64 * 1024)
#define MAX_THREADS	8
/*
 * A thread held off a CPU by kiwi for this long fails the run.  The
 * emulator, on a busy host, alone delays a thread by up to ~1 s; a CPU
 * that kiwi never gives up shows as a soft lockup after 20 s.
 */
#define GAP_LIMIT_MS	5000.0

static struct ibv_qp *qp;
static struct ibv_mr *mr;
static double end_s;
static atomic_long binds;
static _Atomic double worst_call_ms, worst_gap_ms;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note_max(_Atomic double *max, double v)
{
	double old = atomic_load(max);

	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

static void *binder(void *arg)
{
	struct ibv_mw *mw = ibv_alloc_mw(qp->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = { 0 };
	long i = (long)arg;
	double t;
	int rv;

	if (!mw) {
		perror("bindflood: ibv_alloc_mw");
		exit(1);
	}
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)mr->addr + (i % 16) * 4096;
	b.bind_info.length = 4096;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	while (now_s() < end_s) {
		t = now_s();
		rv = ibv_bind_mw(qp, mw, &b);
		note_max(&worst_call_ms, (now_s() - t) * 1e3);
		if (rv == ENOMEM) {	/* ring full: kiwi drains it */
			sched_yield();
			continue;
		}
		if (rv) {
			fprintf(stderr, "bindflood: ibv_bind_mw: %s\n",
				strerror(rv));
			exit(1);
		}
		atomic_fetch_add(&binds, 1);
	}
	return NULL;
}

static void *heartbeat(void *arg)
{
	double t = now_s(), t1;

	(void)arg;
	while (t < end_s) {
		usleep(10000);
		t1 = now_s();
		note_max(&worst_gap_ms, (t1 - t) * 1e3 - 10);
		t = t1;
	}
	return NULL;
}

static struct rdma_cm_id *connect_to(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	void *buf;

	if (!ch || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 5000))
		return NULL;
	if (!(ev = abuse_cm_poll(ch, 10000)) ||
	    ev->event != RDMA_CM_EVENT_ADDR_RESOLVED || rdma_ack_cm_event(ev) ||
	    rdma_resolve_route(id, 5000))
		return NULL;
	if (!(ev = abuse_cm_poll(ch, 10000)) ||
	    ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED || rdma_ack_cm_event(ev))
		return NULL;
	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	buf = aligned_alloc(4096, REGION);
	if (!cq || !buf)
		return NULL;
	mr = ibv_reg_mr(pd, buf, REGION, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 0;
	qa.cap.max_send_wr = 1024;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!mr || rdma_create_qp(id, pd, &qa) || rdma_connect(id, &cp))
		return NULL;
	if (!(ev = abuse_cm_poll(ch, 10000)) ||
	    ev->event != RDMA_CM_EVENT_ESTABLISHED)
		return NULL;
	rdma_ack_cm_event(ev);
	return id;
}

int main(int argc, char **argv)
{
	const char *addr = NULL;
	int port = ABUSE_PORT, secs = 20, nthr = 2, c;
	pthread_t th[MAX_THREADS + 1];
	struct rdma_cm_id *id;
	long i;

	while ((c = getopt(argc, argv, "a:p:s:t:")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 's': secs = atoi(optarg); break;
		case 't': nthr = atoi(optarg); break;
		default: addr = NULL; optind = argc; break;
		}
	}
	if (!addr || secs < 1 || nthr < 1 || nthr > MAX_THREADS) {
		fprintf(stderr, "usage: bindflood -a ADDR [-p PORT] [-s SECS] [-t THREADS (1..%d)]\n",
			MAX_THREADS);
		return 2;
	}
	alarm(secs + 60);	/* a hung verb ends the run, visibly */
	id = connect_to(addr, port);
	if (!id) {
		printf("bindflood: FAILED: no connection to %s:%d\n", addr, port);
		return 1;
	}
	qp = id->qp;
	end_s = now_s() + secs;
	pthread_create(&th[nthr], NULL, heartbeat, NULL);
	for (i = 0; i < nthr; i++)
		pthread_create(&th[i], NULL, binder, (void *)i);
	for (i = 0; i <= nthr; i++)
		pthread_join(th[i], NULL);
	printf("# binds %ld, longest bind call %.0f ms, longest heartbeat gap %.0f ms\n",
	       atomic_load(&binds), atomic_load(&worst_call_ms),
	       atomic_load(&worst_gap_ms));
	if (atomic_load(&worst_gap_ms) > GAP_LIMIT_MS ||
	    atomic_load(&worst_call_ms) > GAP_LIMIT_MS || !atomic_load(&binds)) {
		printf("bindflood: FAILED: the CPU was held (or nothing bound)\n");
		return 1;
	}
	printf("bindflood: ok\n");
	return 0;
}
