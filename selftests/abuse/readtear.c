// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * readtear -- a connection torn down while RDMA READs are outstanding.
 * For selftests/guest/abuse.sh: one run is the responder (-s, passive),
 * one the requester, with the same options, in two namespaces.
 *
 *   readtear [-s] -a ADDR [-p PORT] [-n ROUNDS] -k responder|requester
 *
 * Round i (port PORT + i) is one connection, set up by a child process
 * of each side: the responder offers IRD 32 and a 2 MiB region
 * (REMOTE_READ, filled with PAT_VICTIM); the requester posts 32 RDMA
 * READs of 64 KiB each, then a SEND ("go", which reaches the responder
 * once all READ requests did, while the responses are on their way).
 * Then the side -k names, after a random delay of up to 4 ms (the
 * responder: after the "go" arrived),
 *
 *   even rounds: destroys its QP (rdma_destroy_qp), then everything else,
 *                and exits normally;
 *   odd rounds:  exits at once (_exit), leaving it all to the kernel.
 *
 * The other side must see the end within a bound: the requester every
 * READ and the SEND completed exactly once, READs that succeeded (their
 * 64 KiB all PAT_VICTIM) before any that failed, the QP in ERR and
 * DISCONNECTED; the responder DISCONNECTED and its QP in ERR.  A SEND
 * completed successfully after READs posted before it failed fails the
 * round ("late SEND success"): after the first error completion the
 * rest of the queue is flushed (kiwi_qp_flush_sq).  Each child has 40 s
 * (SIGALRM): a hung verb ends it, and the round fails.  What is checked
 * in the kernel (no warning, nothing leaked) is abuse.sh's part.
 *
 * Output: "# " lines for anything odd, then "readtear: ..." with the
 * totals.  Exit status 0 if no round failed, 1 if some did, 2 on usage
 * errors.
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
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

#define NREADS		32
#define READ_LEN	(64 * 1024)
#define REGION_LEN	(NREADS * READ_LEN)
#define WR_GO		1
#define WR_READ		100		/* + index */
#define WAIT_MS		20000		/* for the survivor to see the end */

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *gmr;
	uint8_t *buf;
	uint32_t go;
	bool disconnected;
};

static int round_no;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The next CM event within @ms; DISCONNECTED is noted on the way. */
static enum rdma_cm_event_type cm_next(struct conn *c, int ms,
				       struct rdma_cm_id **id, void *pdata,
				       size_t plen)
{
	struct pollfd pfd = { .fd = c->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(c->ch, &ev))
		return (enum rdma_cm_event_type)-1;
	t = ev->event;
	if (id)
		*id = ev->id;
	if (pdata && ev->param.conn.private_data_len >= plen)
		memcpy(pdata, ev->param.conn.private_data, plen);
	if (t == RDMA_CM_EVENT_DISCONNECTED)
		c->disconnected = true;
	rdma_ack_cm_event(ev);
	return t;
}

static bool cm_until(struct conn *c, enum rdma_cm_event_type want, int ms)
{
	double end = now_ms() + ms;
	enum rdma_cm_event_type t;

	while (now_ms() < end) {
		t = cm_next(c, (int)(end - now_ms()) + 1, NULL, NULL, 0);
		if (t == want)
			return true;
		if ((int)t == -1)
			break;
		if (t != RDMA_CM_EVENT_DISCONNECTED &&
		    t != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			printf("# round %d: cm event %s, waiting for %s\n",
			       round_no, rdma_event_str(t), rdma_event_str(want));
		if (t == RDMA_CM_EVENT_REJECTED ||
		    t == RDMA_CM_EVENT_UNREACHABLE)
			break;
	}
	return false;
}

/* PD, CQ, region (@access), the "go" buffer and an RC QP on @id. */
static int resources(struct conn *c, struct rdma_cm_id *id, int access)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };

	c->pd = ibv_alloc_pd(id->verbs);
	c->cq = c->pd ? ibv_create_cq(id->verbs, 2 * NREADS + 8, NULL, NULL, 0)
		      : NULL;
	c->mr = c->cq ? ibv_reg_mr(c->pd, c->buf, REGION_LEN, access) : NULL;
	c->gmr = c->mr ? ibv_reg_mr(c->pd, &c->go, sizeof(c->go),
				    IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!c->gmr)
		return -1;
	qa.send_cq = qa.recv_cq = c->cq;
	qa.cap.max_send_wr = NREADS + 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	return rdma_create_qp(id, c->pd, &qa);
}

/* Everything of @c destroyed; its buffer stays. */
static void teardown(struct conn *c)
{
	uint8_t *buf = c->buf;

	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->gmr)
		ibv_dereg_mr(c->gmr);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->lid)
		rdma_destroy_id(c->lid);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	memset(c, 0, sizeof(*c));
	c->buf = buf;
}

/* The dying side's end: QP destroyed (even rounds) or process gone. */
static int die(struct conn *c, unsigned int *seed)
{
	usleep(rand_r(seed) % 4000);
	fflush(stdout);
	if (round_no % 2)
		_exit(0);
	rdma_destroy_qp(c->id);
	teardown(c);
	return 0;
}

/* The survivor's last checks: DISCONNECTED, QP in ERR; then clean up. */
static int survived(struct conn *c, bool ok)
{
	if (!c->disconnected &&
	    !cm_until(c, RDMA_CM_EVENT_DISCONNECTED, WAIT_MS)) {
		printf("# round %d: no DISCONNECTED within %d s\n", round_no,
		       WAIT_MS / 1000);
		ok = false;
	}
	if (!abuse_qp_in_err(c->id->qp)) {
		printf("# round %d: QP not in ERR\n", round_no);
		ok = false;
	}
	teardown(c);
	return ok ? 0 : 1;
}

static int responder(struct conn *c, struct sockaddr_in *sin, bool dies,
		     unsigned int *seed)
{
	struct rdma_conn_param cp = { .responder_resources = NREADS,
				      .initiator_depth = 1 };
	struct victim_info info = { .magic = htonl(VICTIM_MAGIC),
				    .len = htonl(REGION_LEN) };
	struct ibv_sge sge = { .addr = (uintptr_t)&c->go, .length = 4 };
	struct ibv_recv_wr rwr = { .wr_id = WR_GO, .sg_list = &sge,
				   .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	double end;
	int n = 0;

	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(c->lid, (struct sockaddr *)sin) ||
	    rdma_listen(c->lid, 4)) {
		printf("# round %d: listen: %s\n", round_no, strerror(errno));
		return 1;
	}
	if (cm_next(c, WAIT_MS, &c->id, NULL, 0) !=
	    RDMA_CM_EVENT_CONNECT_REQUEST) {
		printf("# round %d: no connect request\n", round_no);
		c->id = NULL;
		return 1;
	}
	memset(c->buf, PAT_VICTIM, REGION_LEN);
	if (resources(c, c->id, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_READ))
		return 1;
	sge.lkey = c->gmr->lkey;
	info.rkey = htonl(c->mr->rkey);
	info.addr = htobe64((uintptr_t)c->buf);
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	if (ibv_post_recv(c->id->qp, &rwr, &bad) || rdma_accept(c->id, &cp) ||
	    !cm_until(c, RDMA_CM_EVENT_ESTABLISHED, WAIT_MS)) {
		printf("# round %d: accept failed\n", round_no);
		return 1;
	}
	if (!dies)
		return survived(c, true);
	/* All READ requests are in once "go" is: the responses are going. */
	for (end = now_ms() + WAIT_MS; !n && now_ms() < end; usleep(200))
		n = ibv_poll_cq(c->cq, 1, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		printf("# round %d: no \"go\" (%s)\n", round_no,
		       n == 1 ? ibv_wc_status_str(wc.status) : "timeout");
		return 1;
	}
	return die(c, seed);
}

/* Resolve, connect (retrying while the responder is not listening yet). */
static int connect_to(struct conn *c, struct sockaddr_in *sin,
		      struct victim_info *vi)
{
	struct rdma_conn_param cp = { .initiator_depth = NREADS,
				      .responder_resources = 1 };
	double end = now_ms() + WAIT_MS;
	enum rdma_cm_event_type t;

	do {
		teardown(c);
		c->ch = rdma_create_event_channel();
		if (!c->ch || rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sin, 5000) ||
		    !cm_until(c, RDMA_CM_EVENT_ADDR_RESOLVED, 10000) ||
		    rdma_resolve_route(c->id, 5000) ||
		    !cm_until(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000))
			return -1;
		if (resources(c, c->id, IBV_ACCESS_LOCAL_WRITE) ||
		    rdma_connect(c->id, &cp))
			return -1;
		t = cm_next(c, WAIT_MS, NULL, vi, sizeof(*vi));
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			return ntohl(vi->magic) == VICTIM_MAGIC ? 0 : -1;
		usleep(50000);
	} while ((t == RDMA_CM_EVENT_REJECTED ||
		  t == RDMA_CM_EVENT_UNREACHABLE ||
		  t == RDMA_CM_EVENT_CONNECT_ERROR) && now_ms() < end);
	printf("# round %d: connect: %s\n", round_no,
	       (int)t == -1 ? "timeout" : rdma_event_str(t));
	return -1;
}

static int post_reads(struct conn *c, struct victim_info *vi)
{
	struct ibv_sge sge = { .length = READ_LEN, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int i;

	for (i = 0; i < NREADS; i++) {
		sge.addr = (uintptr_t)c->buf + i * READ_LEN;
		wr.wr_id = WR_READ + i;
		wr.wr.rdma.remote_addr = be64toh(vi->addr) + i * READ_LEN;
		wr.wr.rdma.rkey = ntohl(vi->rkey);
		if (ibv_post_send(c->id->qp, &wr, &bad))
			return -1;
	}
	sge.addr = (uintptr_t)&c->go;
	sge.length = sizeof(c->go);
	sge.lkey = c->gmr->lkey;
	wr.wr_id = WR_GO;
	wr.opcode = IBV_WR_SEND;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/*
 * The survivor's send queue: NREADS + 1 completions within the bound,
 * each WR once, READ successes first (their data intact), then errors;
 * *@late: the SEND succeeded after a READ failed.
 */
static bool reads_completed(struct conn *c, int *nok, int *late)
{
	uint8_t seen[NREADS + 1] = { 0 };
	double end = now_ms() + WAIT_MS;
	bool ok = true, failed = false;
	struct ibv_wc wc[8];
	int n = 0, got, i, k;
	uint8_t *sink;

	*nok = *late = 0;
	while (n < NREADS + 1 && now_ms() < end) {
		got = ibv_poll_cq(c->cq, 8, wc);
		if (got <= 0) {
			usleep(1000);
			continue;
		}
		for (i = 0; i < got; i++, n++) {
			k = wc[i].wr_id == WR_GO ? NREADS : wc[i].wr_id - WR_READ;
			if (k < 0 || k > NREADS || seen[k]++) {
				printf("# round %d: completion of WR %#llx again or unknown\n",
				       round_no, (unsigned long long)wc[i].wr_id);
				ok = false;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				failed = true;
				continue;
			}
			if (failed && k == NREADS) {
				printf("# round %d: the SEND succeeded after READs ahead of it failed\n",
				       round_no);
				*late = 1;
				ok = false;
			} else if (failed) {
				printf("# round %d: READ %d succeeded after an error\n",
				       round_no, k);
				ok = false;
			}
			sink = c->buf + k * READ_LEN;
			if (k < NREADS && (sink[0] != PAT_VICTIM ||
					   memcmp(sink, sink + 1, READ_LEN - 1))) {
				printf("# round %d: READ %d succeeded, its data wrong\n",
				       round_no, k);
				ok = false;
			}
			*nok += k < NREADS;
		}
	}
	if (n != NREADS + 1) {
		printf("# round %d: %d of %d WRs completed within %d s\n",
		       round_no, n, NREADS + 1, WAIT_MS / 1000);
		ok = false;
	}
	return ok;
}

static int requester(struct conn *c, struct sockaddr_in *sin, bool dies,
		     unsigned int *seed)
{
	struct victim_info vi;
	int nok, late;

	if (connect_to(c, sin, &vi))
		return 1;
	memset(c->buf, 0, REGION_LEN);
	if (post_reads(c, &vi)) {
		printf("# round %d: posting the READs failed\n", round_no);
		return 1;
	}
	if (dies)
		return die(c, seed);
	if (!reads_completed(c, &nok, &late))
		return survived(c, false);
	/* For the totals: READs answered before the end, late SENDs. */
	printf("ok %d %d\n", nok, late);
	return survived(c, true);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *addr = NULL, *kill_side = NULL;
	int port = ABUSE_PORT, rounds = 20, failed = 0, c, i, st, p[2];
	int answered = 0, lates = 0, k, l;
	bool server = false, dies;
	char line[256];
	pid_t pid, w;

	while ((c = getopt(argc, argv, "sa:p:n:k:")) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		case 'k': kill_side = optarg; break;
		default: addr = NULL; optind = argc; break;
		}
	}
	if (!addr || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    rounds < 1 || !kill_side || (strcmp(kill_side, "responder") &&
					 strcmp(kill_side, "requester"))) {
		fprintf(stderr, "usage: readtear [-s] -a ADDR [-p PORT] [-n ROUNDS] -k responder|requester\n");
		return 2;
	}
	dies = server == !strcmp(kill_side, "responder");
	for (i = 0; i < rounds; i++) {
		unsigned int seed = i * 7919u + (server ? 17 : 1);
		struct conn conn = { 0 };

		round_no = i;
		sin.sin_port = htons(port + i);
		fflush(stdout);
		if (pipe(p))
			return 2;
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			dup2(p[1], STDOUT_FILENO);
			alarm(40);	/* a hung verb ends the round, visibly */
			conn.buf = aligned_alloc(4096, REGION_LEN);
			if (!conn.buf)
				_exit(2);
			st = server ? responder(&conn, &sin, dies, &seed) :
				      requester(&conn, &sin, dies, &seed);
			fflush(stdout);
			_exit(st);
		}
		close(p[1]);
		/* The child's "#" lines go on; its "ok N" is counted. */
		{
			FILE *f = fdopen(p[0], "r");

			while (f && fgets(line, sizeof(line), f)) {
				if (sscanf(line, "ok %d %d", &k, &l) == 2) {
					answered += k;
					lates += l;
				}
				else
					fputs(line, stdout);
			}
			if (f)
				fclose(f);
		}
		w = waitpid(pid, &st, 0);
		if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("# round %d (%s): child %s %d\n", i,
			       i % 2 ? "exit" : "destroy",
			       WIFSIGNALED(st) ? "killed by signal" : "exit",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			failed++;
		}
	}
	printf("readtear: %s, %s dies, %d rounds, %d failed", server ?
	       "responder" : "requester", kill_side, rounds, failed);
	if (!server && !dies)
		printf(", %d of %d READs answered before the end, %d late SEND successes",
		       answered, rounds * NREADS, lates);
	printf("\n");
	return failed ? 1 : 0;
}
