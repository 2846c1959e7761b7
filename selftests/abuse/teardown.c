// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * teardown -- a QP torn down from every side at once, over and over.
 * For selftests/guest/abuse.sh; the other end is `victim -l` (accepts
 * whatever comes).
 *
 *   teardown -a ADDR [-p PORT] [-n ROUNDS]
 *
 * Each round connects one RC QP (rdma_cm), then, in a pattern that
 * changes from round to round and with random delays of up to 2 ms:
 *
 *   - an RDMA WRITE with an rkey the peer never gave out, which the peer
 *     answers with a TERMINATE (our QP: peer terminated);
 *   - ibv_modify_qp(IBV_QPS_SQD), a graceful close of the send side;
 *   - rdma_disconnect();
 *
 * from three threads at once (patterns 0-2) or one after the other in
 * varying order (3-5), and in pattern 6 the QP destroyed right after
 * posting a 64 KiB WRITE, no disconnect.  After each round: every call
 * returned (alarm otherwise), the QP ends in ERR (pattern 6: destroyed),
 * the signaled WRITE completed exactly once (success -- iWARP completes
 * a WRITE once TCP has it -- or an error), and the QP, its CQ, MR, PD
 * and cm_id are destroyed.  What is checked in the kernel (nothing
 * leaked, no warning) is abuse.sh's part.
 *
 * Output: "# " lines for anything odd, then "teardown: N rounds, M
 * failed".  Exit status 0 if none failed, 1 if some did, 2 on setup or
 * usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

#define BUF_LEN		(64 * 1024)
#define NPATTERNS	7

struct round {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;
	unsigned int seed;
	int pattern;
	int write_rc, sqd_rc, disc_rc;
};

/* Wait for event @want (others are acknowledged and skipped). */
static bool cm_expect(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, int ms)
{
	struct rdma_cm_event *ev;

	while ((ev = abuse_cm_poll(ch, ms))) {
		enum rdma_cm_event_type got = ev->event;

		rdma_ack_cm_event(ev);
		if (got == want)
			return true;
		if (got != RDMA_CM_EVENT_DISCONNECTED &&
		    got != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			printf("# cm event %s, waiting for %s\n",
			       rdma_event_str(got), rdma_event_str(want));
	}
	return false;
}

static void jitter(struct round *r)
{
	usleep(rand_r(&r->seed) % 2000);
}

static int post_write(struct round *r, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = len,
			       .lkey = r->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x7e57, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		/* Nothing the peer handed out: it must TERMINATE. */
		.wr.rdma = { .remote_addr = 0x1000, .rkey = 0xdead5eed },
	}, *bad;

	return ibv_post_send(r->id->qp, &wr, &bad);
}

static int to_sqd(struct round *r)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD };

	return ibv_modify_qp(r->id->qp, &a, IBV_QP_STATE);
}

static void *t_write(void *p)
{
	struct round *r = p;

	jitter(r);
	r->write_rc = post_write(r, 4096);
	return NULL;
}

static void *t_sqd(void *p)
{
	struct round *r = p;

	jitter(r);
	r->sqd_rc = to_sqd(r);
	return NULL;
}

static void *t_disc(void *p)
{
	struct round *r = p;

	jitter(r);
	r->disc_rc = rdma_disconnect(r->id);
	return NULL;
}

static int connect_one(struct round *r, struct sockaddr_in *sin)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };

	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, NULL, (struct sockaddr *)sin, 5000) ||
	    !cm_expect(r->ch, RDMA_CM_EVENT_ADDR_RESOLVED, 10000) ||
	    rdma_resolve_route(r->id, 5000) ||
	    !cm_expect(r->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000))
		return -1;
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 16, NULL, NULL, 0) : NULL;
	r->mr = r->cq ? ibv_reg_mr(r->pd, r->buf, BUF_LEN,
				   IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!r->mr)
		return -1;
	qa.send_cq = qa.recv_cq = r->cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(r->id, r->pd, &qa) || rdma_connect(r->id, &cp) ||
	    !cm_expect(r->ch, RDMA_CM_EVENT_ESTABLISHED, 20000))
		return -1;
	return 0;
}

/* The racing part of a round. */
static void race(struct round *r)
{
	void *(*fn[3])(void *) = { t_write, t_sqd, t_disc };
	pthread_t t[3];
	int i, k;

	r->write_rc = r->sqd_rc = r->disc_rc = -1;
	switch (r->pattern) {
	case 0: case 1: case 2:
		for (i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, fn[(i + r->pattern) % 3], r);
		for (i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		break;
	case 3: case 4: case 5:
		for (i = 0; i < 3; i++) {
			k = (i + r->pattern) % 3;
			fn[k](r);
		}
		break;
	}
}

/* Completions of the WRITE within @ms (then 20 ms more for a second). */
static int write_completions(struct round *r, int ms)
{
	struct ibv_wc wc[4];
	int n = 0, got, i, waited = 0;

	for (;;) {
		got = ibv_poll_cq(r->cq, 4, wc);
		if (got < 0)
			return -1;
		for (i = 0; i < got; i++) {
			if (wc[i].wr_id != 0x7e57)
				printf("# completion of an unknown WR %#llx\n",
				       (unsigned long long)wc[i].wr_id);
			n++;
		}
		if (got)
			continue;
		if (waited >= ms)
			return n;
		usleep(10000);
		waited += 10;
		if (n && ms > waited + 20)
			ms = waited + 20;
	}
}

static void teardown(struct round *r)
{
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
}

static bool one_round(struct round *r, struct sockaddr_in *sin, int n)
{
	bool ok = true;
	int done;

	if (connect_one(r, sin)) {
		printf("# round %d: connect failed: %s\n", n, strerror(errno));
		teardown(r);
		return false;
	}
	if (r->pattern == 6) {
		/* Destroyed with a WRITE in flight; no disconnect. */
		post_write(r, BUF_LEN);
		jitter(r);
		teardown(r);
		return true;
	}
	race(r);
	if (r->disc_rc) {
		printf("# round %d: rdma_disconnect: %d\n", n, r->disc_rc);
		ok = false;
	}
	if (!abuse_qp_in_err(r->id->qp))
		ok = false;
	done = write_completions(r, r->write_rc == 0 ? 2000 : 0);
	if (r->write_rc == 0 && done != 1) {
		printf("# round %d (pattern %d): the WRITE completed %d times\n",
		       n, r->pattern, done);
		ok = false;
	}
	if (!ok)
		printf("# round %d pattern %d: write %d sqd %d disconnect %d\n",
		       n, r->pattern, r->write_rc, r->sqd_rc, r->disc_rc);
	teardown(r);
	return ok;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(ABUSE_PORT) };
	const char *addr = NULL;
	int rounds = 100, failed = 0, c, i;
	void *buf;

	while ((c = getopt(argc, argv, "a:p:n:")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': sin.sin_port = htons(atoi(optarg)); break;
		case 'n': rounds = atoi(optarg); break;
		default: addr = NULL; optind = argc; break;
		}
	}
	if (!addr || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    rounds < 1) {
		fprintf(stderr, "usage: teardown -a ADDR [-p PORT] [-n ROUNDS]\n");
		return 2;
	}
	buf = aligned_alloc(4096, BUF_LEN);
	if (!buf)
		return 2;
	memset(buf, PAT_PEER, BUF_LEN);
	alarm(30 + rounds * 10);	/* a hung verb ends the run, visibly */
	for (i = 0; i < rounds; i++) {
		struct round r = { .buf = buf, .seed = i * 7919u + 1,
				   .pattern = i % NPATTERNS };

		if (!one_round(&r, &sin, i))
			failed++;
		fflush(stdout);
	}
	printf("teardown: %d rounds, %d failed\n", rounds, failed);
	return failed ? 1 : 0;
}
