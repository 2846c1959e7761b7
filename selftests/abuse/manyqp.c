// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * manyqp -- many connected QPs at once, each moving verified data.  For
 * selftests/guest/load.sh.
 *
 *   manyqp -s ADDR PORT N [HOLD]   accept N connections, then serve them
 *   manyqp -c ADDR PORT N GOFILE [HOLD]
 *                                  connect N, wait for GOFILE, exchange
 *   manyqp -x ADDR PORT N          try N more connections than the
 *                                  device allows: report how many the
 *                                  kernel refused (ENOMEM), cleanly
 *
 * Per connection i (client side numbering, sent in the private data):
 * the client SENDs 256 bytes of pattern(i) and the server checks every
 * byte, then SENDs back pattern(~i), which the client checks.  All QPs
 * of a process share one PD, MR and CQ.  With HOLD, a file name, each
 * side keeps its connections open after the exchange until HOLD exists
 * (at most HOLD_MAX_S seconds), so that the kernel memory of connected
 * QPs that have moved data can be measured (make bench).  Output: "# "
 * lines and a final "manyqp: ..." line.  Exit status 0 if every
 * connection carried its data intact (for -x: if every attempt either
 * connected or was refused with a clean error), 1 if not, 2 on setup
 * errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MSG	256
#define HOLD_MAX_S	300

struct conn {
	struct rdma_cm_id *id;
	uint32_t tag;
	bool got;
};

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;			/* 2 * MSG per connection */
static struct conn *conns;
static int nconn;

static void pattern(uint8_t *p, uint32_t tag)
{
	uint32_t x = tag * 2654435761U + 1, i;

	for (i = 0; i < MSG; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = x;
	}
}

static struct rdma_cm_event *cm_next(int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static int setup_verbs(struct ibv_context *ctx, int n)
{
	if (pd)
		return 0;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4 * n + 16, NULL, NULL, 0) : NULL;
	buf = calloc(n, 2 * MSG);
	mr = cq && buf ? ibv_reg_mr(pd, buf, (size_t)n * 2 * MSG,
				    IBV_ACCESS_LOCAL_WRITE) : NULL;
	return mr ? 0 : -1;
}

static int make_qp(struct rdma_cm_id *id, int i)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_sge sge = { (uintptr_t)(buf + i * 2 * MSG + MSG), MSG,
			       mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &qa))
		return -errno;
	return ibv_post_recv(id->qp, &wr, &bad) ? -EIO : 0;
}

static int send_tag(int i, uint32_t tag)
{
	struct ibv_sge sge = { (uintptr_t)(buf + i * 2 * MSG), MSG, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	pattern(buf + i * 2 * MSG, tag);
	return ibv_post_send(conns[i].id->qp, &wr, &bad);
}

/* Poll until every connection's receive came in (checked) or time out. */
static int receive_all(bool server, int *bad)
{
	int left = nconn, idle = 0;
	uint8_t want[MSG];

	while (left && idle < 600) {
		struct ibv_wc wc[32];
		int n = ibv_poll_cq(cq, 32, wc), k;

		idle = n ? 0 : idle + 1;
		if (!n)
			usleep(50000);
		for (k = 0; k < n; k++) {
			int i = wc[k].wr_id;

			if (wc[k].status != IBV_WC_SUCCESS) {
				printf("# conn %d: %s\n", i,
				       ibv_wc_status_str(wc[k].status));
				(*bad)++;
				if (wc[k].opcode & IBV_WC_RECV)
					left--;
				continue;
			}
			if (!(wc[k].opcode & IBV_WC_RECV))
				continue;
			left--;
			pattern(want, server ? conns[i].tag : ~conns[i].tag);
			if (wc[k].byte_len != MSG ||
			    memcmp(want, buf + i * 2 * MSG + MSG, MSG)) {
				printf("# conn %d: data corrupted\n", i);
				(*bad)++;
				continue;
			}
			conns[i].got = true;
			if (server && send_tag(i, ~conns[i].tag))
				(*bad)++;
		}
	}
	return left;
}

/* Keep the connections open until @hold exists; bounded, never fatal. */
static void hold_open(const char *hold)
{
	int i;

	if (!hold)
		return;
	printf("# exchanged; holding until %s\n", hold);
	fflush(stdout);
	for (i = 0; i < HOLD_MAX_S * 10 && access(hold, F_OK); i++)
		usleep(100000);
	if (access(hold, F_OK))
		printf("# %s did not appear in %d s; closing\n", hold,
		       HOLD_MAX_S);
}

static int server(struct sockaddr_in *sin, int n, const char *hold)
{
	struct rdma_cm_id *lid;
	int accepted = 0, bad = 0, left;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)sin) ||
	    rdma_listen(lid, 128))
		return 2;
	printf("# listening for %d\n", n);
	fflush(stdout);
	while (accepted < n) {
		struct rdma_cm_event *ev = cm_next(120000);
		struct rdma_cm_id *id;

		if (!ev)
			break;
		id = ev->id;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			uint32_t tag = 0;

			if (ev->param.conn.private_data_len >= 4)
				memcpy(&tag, ev->param.conn.private_data, 4);
			rdma_ack_cm_event(ev);
			if (setup_verbs(id->verbs, n) ||
			    make_qp(id, accepted) || rdma_accept(id, NULL)) {
				rdma_reject(id, NULL, 0);
				bad++;
				continue;
			}
			conns[accepted].id = id;
			conns[accepted++].tag = ntohl(tag);
			continue;
		}
		rdma_ack_cm_event(ev);
	}
	nconn = accepted;
	printf("# accepted %d\n", accepted);
	fflush(stdout);
	left = receive_all(true, &bad);
	printf("manyqp: server: %d connections, %d messages verified, %d missing, %d bad\n",
	       nconn, nconn - left - bad, left, bad);
	hold_open(hold);
	return accepted == n && !left && !bad ? 0 : 1;
}

/* Connect one; 0, or a negative errno (from the QP) / -ECONNREFUSED. */
static int connect_one(struct sockaddr_in *sin, int i, uint32_t tag, int n)
{
	struct rdma_conn_param cp = { .private_data = &tag,
				      .private_data_len = 4 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int rv;

	tag = htonl(tag);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 5000))
		return -EIO;
	ev = cm_next(10000);
	if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return -EIO;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 5000))
		return -EIO;
	ev = cm_next(10000);
	if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -EIO;
	rdma_ack_cm_event(ev);
	if (setup_verbs(id->verbs, n))
		return -EIO;
	rv = make_qp(id, i);
	if (rv) {
		rdma_destroy_id(id);
		return rv;
	}
	if (rdma_connect(id, &cp))
		return -EIO;
	ev = cm_next(30000);
	rv = ev && ev->event == RDMA_CM_EVENT_ESTABLISHED ? 0 : -ECONNREFUSED;
	if (ev)
		rdma_ack_cm_event(ev);
	conns[i].id = id;
	conns[i].tag = ntohl(tag);
	return rv;
}

static int client(struct sockaddr_in *sin, int n, const char *go,
		  const char *hold)
{
	int i, bad = 0, left;

	for (i = 0; i < n; i++) {
		int rv = connect_one(sin, i, getpid() * 4096 + i, n);

		if (rv) {
			printf("manyqp: client: connection %d failed: %s\n", i,
			       strerror(-rv));
			return 1;
		}
	}
	nconn = n;
	printf("# %d connected; waiting for %s\n", n, go);
	fflush(stdout);
	while (access(go, F_OK))
		usleep(100000);
	for (i = 0; i < n; i++)
		if (send_tag(i, conns[i].tag))
			bad++;
	left = receive_all(false, &bad);
	printf("manyqp: client: %d connections, %d replies verified, %d missing, %d bad\n",
	       n, n - left - bad, left, bad);
	hold_open(hold);
	return !left && !bad ? 0 : 1;
}

/* Attempts beyond the device's max_qp: each is refused, cleanly. */
static int excess(struct sockaddr_in *sin, int n)
{
	int i, ok = 0, refused = 0, other = 0;

	for (i = 0; i < n; i++) {
		int rv = connect_one(sin, i, 0xe0000000 + i, n);

		if (!rv)
			ok++;
		else if (rv == -ENOMEM)
			refused++;
		else
			other++;
	}
	printf("manyqp: excess: %d attempts, %d connected, %d refused with ENOMEM, %d other\n",
	       n, ok, refused, other);
	/* Every attempt beyond the limit refused, none connected. */
	return ok || other || !refused ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int n;

	if (argc < 5 || inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1 ||
	    (n = atoi(argv[4])) <= 0 || (argv[1][1] == 'c' && argc < 6)) {
		fprintf(stderr, "usage: manyqp -s ADDR PORT N [HOLD] | -c ADDR PORT N GOFILE [HOLD] | -x ADDR PORT N\n");
		return 2;
	}
	sin.sin_port = htons(atoi(argv[3]));
	ch = rdma_create_event_channel();
	conns = calloc(n, sizeof(*conns));
	if (!ch || !conns)
		return 2;
	switch (argv[1][1]) {
	case 's':
		return server(&sin, n, argc > 5 ? argv[5] : NULL);
	case 'c':
		return client(&sin, n, argv[5], argc > 6 ? argv[6] : NULL);
	case 'x':
		return excess(&sin, n);
	}
	return 2;
}
