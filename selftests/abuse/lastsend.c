// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * lastsend -- a message that completed at the sender must reach the
 * receiver even if the sender destroys its QP right afterwards.  For
 * selftests/guest/abuse.sh.
 *
 *   lastsend -l [-p PORT] [-n ROUNDS] [-s BYTES]     the sender
 *   lastsend -a ADDR [-p PORT] [-n ROUNDS] [-s BYTES] the receiver
 *
 * Each round the receiver connects (rdma_cm) with one receive posted.
 * The sender accepts, posts one signaled SEND of BYTES (default 1 MiB,
 * a pattern that changes from round to round), waits for its success
 * completion and at once destroys its QP and cm_id -- no
 * rdma_disconnect(), as perftest and many programs end.  kiwi completes
 * a send once TCP has the bytes, so the QP's end must not throw them
 * away: the receiver's receive must complete with success, BYTES long,
 * every byte right, within 30 s.  With a delay on the link (netem),
 * most of the message is still in the sender's socket when the QP goes.
 *
 * Output: "# " lines for anything wrong, then "lastsend: N rounds, M
 * failed".  Exit status 0 if none failed, 1 if some did, 2 on setup or
 * usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static uint32_t len = 1 << 20;

/* Wait for @want; anything else is a failure ("# " line). */
static bool cm_expect(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev = abuse_cm_poll(ch, 20000);
	enum rdma_cm_event_type got;

	if (!ev) {
		printf("# no cm event, waiting for %s\n", rdma_event_str(want));
		return false;
	}
	got = ev->event;
	if (id)
		*id = ev->id;
	if (got != want)
		printf("# cm event %s (status %d), waiting for %s\n",
		       rdma_event_str(got), ev->status, rdma_event_str(want));
	rdma_ack_cm_event(ev);
	return got == want;
}

static uint8_t pat(unsigned int round, uint32_t i)
{
	return (uint8_t)(round * 131 + i * 7 + (i >> 12));
}

/* PD, CQ, QP, MR on @id. */
static int conn_setup(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	c->id = id;
	c->pd = ibv_alloc_pd(id->verbs);
	c->cq = c->pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
	c->buf = malloc(len);
	if (!c->cq || !c->buf)
		return -1;
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &qa))
		return -1;
	c->mr = ibv_reg_mr(c->pd, c->buf, len, IBV_ACCESS_LOCAL_WRITE);
	return c->mr ? 0 : -1;
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/* One completion within 30 s, or false. */
static bool cq_wait(struct conn *c, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n)
			return n == 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 30)
			return false;
		usleep(200);
	}
}

static bool send_round(struct rdma_event_channel *ch, unsigned int round)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .num_sge = 1, .sg_list = &sge,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	struct rdma_cm_id *id;
	struct conn c = {};
	struct ibv_wc wc;
	bool ok = false;
	uint32_t i;

	if (!cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &id))
		return false;
	if (conn_setup(&c, id) || rdma_accept(id, &cp)) {
		printf("# round %u: accept: %s\n", round, strerror(errno));
		goto out;
	}
	if (!cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;
	for (i = 0; i < len; i++)
		c.buf[i] = pat(round, i);
	sge = (struct ibv_sge){ (uintptr_t)c.buf, len, c.mr->lkey };
	if (ibv_post_send(id->qp, &wr, &bad) || !cq_wait(&c, &wc) ||
	    wc.status != IBV_WC_SUCCESS) {
		printf("# round %u: the SEND did not complete with success\n",
		       round);
		goto out;
	}
	ok = true;
out:
	conn_free(&c);		/* at once: no rdma_disconnect() */
	return ok;
}

static bool recv_round(const char *addr, int port, unsigned int round)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7 };
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .num_sge = 1, .sg_list = &sge }, *bad;
	struct rdma_cm_id *id;
	struct conn c = {};
	struct ibv_wc wc;
	bool ok = false;
	uint32_t i;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return false;
	inet_pton(AF_INET, addr, &sin.sin_addr);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
	    !cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(id, 2000) ||
	    !cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) ||
	    conn_setup(&c, id)) {
		printf("# round %u: setup failed\n", round);
		if (!c.id)
			rdma_destroy_id(id);
		goto out;
	}
	memset(c.buf, 0, len);
	sge = (struct ibv_sge){ (uintptr_t)c.buf, len, c.mr->lkey };
	if (ibv_post_recv(id->qp, &wr, &bad) || rdma_connect(id, &cp) ||
	    !cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;
	if (!cq_wait(&c, &wc)) {
		printf("# round %u: no receive completion in 30 s\n", round);
		goto out;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != len) {
		printf("# round %u: receive %s, %u of %u bytes: a message the sender saw complete was lost\n",
		       round, ibv_wc_status_str(wc.status), wc.byte_len, len);
		goto out;
	}
	for (i = 0; i < len && c.buf[i] == pat(round, i); i++)
		;
	if (i < len) {
		printf("# round %u: byte %u wrong\n", round, i);
		goto out;
	}
	ok = true;
out:
	conn_free(&c);
	rdma_destroy_event_channel(ch);
	return ok;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *lid = NULL;
	const char *addr = NULL;
	unsigned int rounds = 10, r, failed = 0;
	bool listen_mode = false;
	int port = 7410, opt;

	while ((opt = getopt(argc, argv, "la:p:n:s:")) != -1) {
		switch (opt) {
		case 'l': listen_mode = true; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': rounds = strtoul(optarg, NULL, 0); break;
		case 's': len = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (listen_mode == !!addr || !len || !rounds) {
		fprintf(stderr, "usage: lastsend -l | -a ADDR [-p PORT] [-n ROUNDS] [-s BYTES]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (listen_mode) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons(port) };

		ch = rdma_create_event_channel();
		if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
		    rdma_listen(lid, 4)) {
			perror("lastsend: listen");
			return 2;
		}
	}
	for (r = 0; r < rounds; r++)
		if (!(listen_mode ? send_round(ch, r) : recv_round(addr, port, r)))
			failed++;
	if (lid)
		rdma_destroy_id(lid);
	if (ch)
		rdma_destroy_event_channel(ch);
	printf("lastsend: %u rounds, %u failed\n", rounds, failed);
	return failed ? 1 : 0;
}
