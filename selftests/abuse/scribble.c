// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * scribble -- a process that writes garbage over its own mapped rings
 * while the kernel consumes them.  For selftests/guest/abuse.sh; the
 * other end is `victim`.
 *
 *   scribble -a ADDR [-p PORT] [-t SECS] [-r SEED]
 *
 * A child connects (rdma_cm) to the victim, finds its send, receive and
 * completion rings among its mappings of the uverbs device, and for -t
 * seconds (default 10) mixes: random 32-bit values at random offsets of
 * the rings (control words -- producer/consumer indices, flags -- and
 * WQE/CQE slots alike), RDMA WRITEs and SENDs posted the ordinary way
 * (each ends in a doorbell the kernel must answer), receives posted, and
 * CQ polls.  The provider may well crash on what it reads back: that is
 * the process breaking itself.  The kernel must copy each WQE once,
 * bound every index, and break at most this QP: the parent reports how
 * the child ended, and abuse.sh checks the kernel log, that other QPs
 * kept working, and that the module unloads.  Exit status 0 unless the
 * setup failed (2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

/* Shared with the child: set once it starts scribbling on its rings. */
static volatile int *scribbling;

struct umap {
	uint8_t *start;
	unsigned long off;
	size_t len;
};

/* The process's mappings of the uverbs device. */
static int uverbs_maps(struct umap *m, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long a, b, off;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx %*s %lx", &a, &b, &off) != 3)
			continue;
		m[n].start = (uint8_t *)a;
		m[n].off = off;
		m[n++].len = b - a;
	}
	if (f)
		fclose(f);
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct rdma_cm_event *cm_wait(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, 20000) != 1 || rdma_get_cm_event(ch, &ev))
		exit(2);
	return ev;
}

static int child(struct sockaddr_in *sin, int secs, unsigned int seed)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct ibv_qp_init_attr qa = { 0 };
	struct umap before[32], rings[32];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct victim_info vi;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	static char buf[4096];
	unsigned long ops = 0, writes = 0, posted = 0;
	int nb, na, nr = 0, i, j;
	double end;

	srand(seed);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 5000))
		return 2;
	rdma_ack_cm_event(cm_wait(ch));
	if (rdma_resolve_route(id, 5000))
		return 2;
	rdma_ack_cm_event(cm_wait(ch));
	pd = ibv_alloc_pd(id->verbs);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	nb = uverbs_maps(before, 32);
	cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = 64;
	if (!mr || !cq || rdma_create_qp(id, pd, &qa) || rdma_connect(id, &cp))
		return 2;
	ev = cm_wait(ch);
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED ||
	    ev->param.conn.private_data_len < sizeof(vi))
		return 2;
	memcpy(&vi, ev->param.conn.private_data, sizeof(vi));
	rdma_ack_cm_event(ev);

	/* The rings: mappings that appeared with the CQ and the QP. */
	na = uverbs_maps(rings, 32);
	for (i = 0; i < na; i++) {
		bool old = false;

		for (j = 0; j < nb; j++)
			old |= before[j].off == rings[i].off;
		if (!old)
			rings[nr++] = rings[i];
	}
	printf("# %d rings mapped (CQ, SQ, RQ); scribbling for %d s\n", nr,
	       secs);
	fflush(stdout);
	if (!nr)
		return 2;

	*scribbling = 1;	/* a signal from here on is the scribbling's */
	end = now() + secs;
	while (now() < end) {
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
		struct ibv_wc wc[8];
		struct umap *m = &rings[rand() % nr];
		uint32_t v = rand();

		ops++;
		/* Mostly traffic, so the kernel has work in flight. */
		switch (rand() % 20) {
		case 0:	/* anywhere in a ring, control block included */
			memcpy(m->start + (rand() % (m->len / 4)) * 4, &v, 4);
			writes++;
			break;
		case 1:	/* the control block: indices and flags */
			memcpy(m->start + (rand() % 16) * 4, &v, 4);
			writes++;
			break;
		case 2 ... 11:
			wr.wr_id = ops;
			wr.opcode = rand() & 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = be64toh(vi.addr) + (rand() % 64) * 64;
			wr.wr.rdma.rkey = ntohl(vi.rkey);
			posted += !ibv_post_send(id->qp, &wr, &bad);
			break;
		case 12 ... 15:
			rwr.wr_id = ops;
			ibv_post_recv(id->qp, &rwr, &rbad);
			break;
		default:
			ibv_poll_cq(cq, 8, wc);
			break;
		}
	}
	printf("# %lu operations: %lu ring words overwritten, %lu WRs posted\n",
	       ops, writes, posted);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(ABUSE_PORT) };
	unsigned int seed = time(NULL);
	int c, secs = 10, st;
	pid_t pid;

	while ((c = getopt(argc, argv, "a:p:t:r:")) != -1) {
		if (c == 'a')
			inet_pton(AF_INET, optarg, &sin.sin_addr);
		else if (c == 'p')
			sin.sin_port = htons(atoi(optarg));
		else if (c == 't')
			secs = atoi(optarg);
		else if (c == 'r')
			seed = strtoul(optarg, NULL, 0);
	}
	if (!sin.sin_addr.s_addr) {
		fprintf(stderr, "usage: scribble -a ADDR [-p PORT] [-t SECS] [-r SEED]\n");
		return 2;
	}
	printf("# seed %u\n", seed);
	fflush(stdout);
	scribbling = mmap(NULL, sizeof(*scribbling), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (scribbling == MAP_FAILED)
		return 2;
	pid = fork();
	if (pid == 0)
		_exit(child(&sin, secs, seed));
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 2;
	if (WIFSIGNALED(st) && !*scribbling) {
		/* Before any ring was touched: the provider or setup crashed. */
		printf("scribble: died before scribbling (signal %d)\n", WTERMSIG(st));
		return 1;
	}
	if (WIFSIGNALED(st))
		printf("scribble: the process broke itself (signal %d); the kernel must not care\n",
		       WTERMSIG(st));
	else if (WEXITSTATUS(st) == 2)
		return 2;
	else
		printf("scribble: done (exit %d)\n", WEXITSTATUS(st));
	return 0;
}
