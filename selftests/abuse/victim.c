// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * victim -- the kiwi side of the abuse tests (selftests/guest/abuse.sh):
 * an ordinary rdma_cm server that a hostile peer (fpdu_peer.c) talks to.
 *
 *   victim -a ADDR [-p PORT] [-i IRD] [-d] [-t SECS]
 *
 * It listens, accepts one connection with responder_resources (IRD)
 * -i (default 1), and passes the address, rkey and length of a 64 KiB
 * region (REMOTE_WRITE | REMOTE_READ) in the accept's private data
 * (struct victim_info).  Then:
 *
 *   -R  once the connection is up, post two receives of
 *       PEER_SEND_LEN bytes and RDMA READ PEER_READ_LEN bytes of the
 *       peer's (fpdu_peer -m resp_interleave, which answers with SENDs
 *       between and after the READ Response's FPDUs): all three must
 *       complete successfully, the READ sink hold PAT_RESP1 then
 *       PAT_RESP2, the receives PAT_SEND1 and PAT_SEND2, in order.
 *   -d  one second after the connection is up (the peer has sent part
 *       of an FPDU by then and stalled), ibv_dereg_mr() the region and
 *       time it: it must return promptly whatever the peer does,
 *       although the peer's WRITE still names the region.
 *   -X HOW  two seconds after the connection is up (fpdu_peer -m
 *       read_stop has asked for the whole region by then and stopped
 *       reading, so kiwi's sender is blocked in TCP), tear down and time
 *       it (kiwi.rst, "Liveness"): "destroy" rdma_destroy_qp() at once,
 *       which must return within TEARDOWN_ABORT_MS; "disconnect"
 *       rdma_disconnect(), then DISCONNECTED must come and
 *       rdma_destroy_qp() return within TEARDOWN_CLOSE_MS in all;
 *       "exit" exits without cleaning up (the harness checks that the
 *       kernel let everything go).
 *   -L BYTES  the region's length (default 64 KiB).
 *   -A  the region also grants REMOTE_ATOMIC.
 *   -S  one second after the connection is up (fpdu_peer -m
 *       atomic_stale has sent an Atomic Request on the region but its
 *       CRC by then), deregister the region and register a read-only
 *       page of other memory at the region's address, with no access at
 *       all; with kiwi's test_stag_reuse it gets the region's STag.  When
 *       the connection has ended, that page must be unchanged: the
 *       request was checked against the region, never against this.
 *
 * Either way it waits (up to -t seconds, default 20) for the connection
 * to fail or end -- the peer is hostile, so it must -- and reports the
 * QP state and the async events seen.
 *
 *   -l SECS  instead: listen for SECS seconds (or until SIGTERM) and
 *            accept whatever requests come, expecting nothing of them
 *            (an accept may fail: the peer abuses the handshake); exit 0
 *            at the end.
 *
 *   victim -c WANT[/PDATA][,...] -a ADDR [-p PORT] [-w MS] [-P PDATA]
 *          [-t SECS]
 *
 * makes it the initiator instead, against a peer listening at ADDR:PORT
 * (fpdu_peer -l, the hostile MPA responder): one connection per WANT,
 * in turn, each an rdma_connect() with private data whose first CM
 * event must be WANT -- established (then DISCONNECTED within -t
 * seconds: the peer closes), rejected, unreachable, error
 * (CONNECT_ERROR) or fail (any of those three) -- within -w
 * milliseconds (default -t seconds).  PDATA (or -P, for all): a
 * REJECTED event must carry it as private data (its first bytes).
 * After each connection kiwi's endpoints (cm_endpoints) and the TCP
 * sockets (/proc/slabinfo) must be back at their counts before it
 * within 10 s.  One "victim: [N] WANT ok" (or FAILED) line each.
 *
 * Output: "# " lines and a final "victim: ..." summary.  Exit status 0 if everything went as above, 1
 * if not, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
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
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

#define REGION_LEN	(64 * 1024)

static int timeout_s = 20;

/*
 * Teardown bounds with a peer that stopped reading (kiwi.rst,
 * "Liveness"): an abortive one waits at most 1 s for a TERMINATE to
 * leave; a graceful one also waits mpa_timeout_ms (10 s) for the peer's
 * FIN.  Both with 4 s to spare for a loaded emulator.
 */
#define TEARDOWN_ABORT_MS	5000
#define TEARDOWN_CLOSE_MS	15000
static volatile sig_atomic_t stop;	/* -l: SIGTERM ends the listening */

static void on_term(int sig __attribute__((unused)))
{
	stop = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * -X: tear the connection down the way @how says while kiwi's sender
 * is blocked (see the header), and time it.  Returns true if within the
 * bound.  "exit" does not return.
 */
static bool teardown(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		     const char *how)
{
	struct rdma_cm_event *ev;
	double t0 = now_ms(), ms;
	int bound = TEARDOWN_ABORT_MS, got = -1;

	if (!strcmp(how, "exit")) {
		printf("# exiting with the connection up\n");
		fflush(stdout);
		_exit(0);
	}
	if (!strcmp(how, "disconnect")) {
		bound = TEARDOWN_CLOSE_MS;
		if (rdma_disconnect(id))
			perror("victim: rdma_disconnect");
		ev = abuse_cm_poll(ch, bound);
		if (ev) {
			got = ev->event;
			rdma_ack_cm_event(ev);
		}
		printf("# cm event after rdma_disconnect: %s after %.0f ms\n",
		       got < 0 ? "none" : rdma_event_str(got), now_ms() - t0);
	}
	rdma_destroy_qp(id);
	ms = now_ms() - t0;
	printf("# %s: the QP destroyed after %.0f ms (bound %d ms)\n", how, ms,
	       bound);
	if (ms > bound || (!strcmp(how, "disconnect") &&
			   got != RDMA_CM_EVENT_DISCONNECTED)) {
		printf("# FAIL: %s with a peer that does not read\n", how);
		return false;
	}
	return true;
}

#define SWAP_PAT	0xa5a5a5a5a5a5a5a5ULL

/*
 * -S: replace the region @mr (at @buf) by a read-only page of other
 * memory at the same address, registered with no access rights.
 * Returns the page through *@page; false if it could not be done.
 */
static bool swap_in_page(struct ibv_pd *pd, struct ibv_mr *mr, void *buf,
			 uint64_t **page)
{
	uint32_t rkey = mr->rkey;
	struct ibv_mr *smr;
	uint64_t *p;
	size_t i;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	for (i = 0; i < 4096 / 8; i++)
		p[i] = SWAP_PAT;
	if (mprotect(p, 4096, PROT_READ) || ibv_dereg_mr(mr)) {
		perror("victim: mprotect/dereg");
		return false;
	}
	smr = ibv_reg_mr_iova(pd, p, 4096, (uintptr_t)buf, 0);
	if (!smr) {
		perror("victim: register the read-only page");
		return false;
	}
	printf("# region 0x%x deregistered; a read-only page registered without access as 0x%x%s\n",
	       rkey, smr->lkey,
	       smr->lkey == rkey ? " (the same STag)" :
	       " (another STag: test_stag_reuse is off?)");
	fflush(stdout);
	*page = p;
	return smr->lkey == rkey;
}

/* -S: the swapped-in page must hold its pattern still. */
static bool page_intact(const uint64_t *p)
{
	size_t i;

	for (i = 0; i < 4096 / 8; i++) {
		if (p[i] != SWAP_PAT) {
			printf("# FAIL: word %zu of a page registered without access is %016llx, not %016llx: an Atomic Request ran on it\n",
			       i, (unsigned long long)p[i],
			       (unsigned long long)SWAP_PAT);
			return false;
		}
	}
	printf("# the read-only page is unchanged\n");
	return true;
}

/* Drain async events for up to @ms; true if the QP got a fatal one. */
static bool async_fatal(struct ibv_context *ctx, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	bool fatal = false;

	while (poll(&pfd, 1, ms) == 1 && !ibv_get_async_event(ctx, &ev)) {
		printf("# async event: %s\n", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_QP_FATAL)
			fatal = true;
		ibv_ack_async_event(&ev);
		ms = 0;
	}
	return fatal;
}

static const char *qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return "?";
	switch (a.qp_state) {
	case IBV_QPS_ERR:
		return "ERR";
	case IBV_QPS_RTS:
		return "RTS";
	case IBV_QPS_SQD:
		return "SQD";
	default:
		return "other";
	}
}

/* -l: accept what comes for @secs, tolerating failures. */
static int listen_only(struct rdma_event_channel *ch, int secs)
{
	double end = now_ms() + secs * 1000.0;
	struct sigaction sa = { .sa_handler = on_term };	/* no SA_RESTART */
	struct rdma_cm_event *ev;
	int n = 0, failed = 0;

	sigaction(SIGTERM, &sa, NULL);
	while (now_ms() < end && !stop) {
		struct rdma_conn_param cp = { .responder_resources = 1,
					      .initiator_depth = 1 };
		struct ibv_qp_init_attr qa = { 0 };
		struct rdma_cm_id *id;

		ev = abuse_cm_poll(ch, 200);
		if (!ev)
			continue;
		id = ev->id;
		printf("# cm event %s\n", rdma_event_str(ev->event));
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		rdma_ack_cm_event(ev);
		n++;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (rdma_create_qp(id, NULL, &qa) || rdma_accept(id, &cp)) {
			printf("# accept %d failed: %s\n", n, strerror(errno));
			failed++;
		}
	}
	printf("victim: %d requests, %d accepts failed\n", n, failed);
	return 0;
}

/*
 * -c: the initiator, connection @n of the list.  Resolve, create a QP,
 * rdma_connect() with private data; the first CM event after that must
 * be @want: "established" (then DISCONNECTED must follow within -t
 * seconds: the peer closes), "rejected", "unreachable", "error"
 * (CONNECT_ERROR) or "fail" (any of those three), within @bound_ms.
 * With @pd, a REJECTED event must carry it as private data.
 */
static int client(int n, const struct sockaddr_in *sin, const char *want,
		  int bound_ms, const char *pd)
{
	static const char hello[] = "victim -c";
	struct rdma_conn_param cp = { .private_data = hello,
				      .private_data_len = sizeof(hello),
				      .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7 };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id = NULL;
	enum rdma_cm_event_type t;
	bool ok;
	double t0, ms;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000))
		goto fail;
	ev = abuse_cm_poll(ch, 5000);
	if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		goto fail;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		goto fail;
	ev = abuse_cm_poll(ch, 5000);
	if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto fail;
	rdma_ack_cm_event(ev);
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa) || rdma_connect(id, &cp))
		goto fail;
	t0 = now_ms();
	ev = abuse_cm_poll(ch, bound_ms);
	ms = now_ms() - t0;
	if (!ev) {
		printf("# [%d] no CM event within %d ms of rdma_connect()\n",
		       n, bound_ms);
		return 1;	/* the process ends soon: it cleans up */
	}
	t = ev->event;
	printf("# [%d] cm event %s, status %d, after %.0f ms, %u bytes of private data\n",
	       n, rdma_event_str(t), ev->status, ms,
	       ev->param.conn.private_data_len);
	if (!strcmp(want, "established"))
		ok = t == RDMA_CM_EVENT_ESTABLISHED;
	else if (!strcmp(want, "rejected"))
		ok = t == RDMA_CM_EVENT_REJECTED;
	else if (!strcmp(want, "unreachable"))
		ok = t == RDMA_CM_EVENT_UNREACHABLE;
	else if (!strcmp(want, "error"))
		ok = t == RDMA_CM_EVENT_CONNECT_ERROR;
	else
		ok = t == RDMA_CM_EVENT_REJECTED ||
		     t == RDMA_CM_EVENT_UNREACHABLE ||
		     t == RDMA_CM_EVENT_CONNECT_ERROR;
	if (ok && pd && t == RDMA_CM_EVENT_REJECTED &&
	    (ev->param.conn.private_data_len < strlen(pd) ||
	     memcmp(ev->param.conn.private_data, pd, strlen(pd)))) {
		printf("# [%d] the reject's private data is not \"%s\": \"%.*s\"\n",
		       n, pd, (int)ev->param.conn.private_data_len,
		       (const char *)ev->param.conn.private_data);
		ok = false;
	}
	rdma_ack_cm_event(ev);
	if (ok && t == RDMA_CM_EVENT_ESTABLISHED) {
		/* The peer ends it: DISCONNECTED. */
		ev = abuse_cm_poll(ch, timeout_s * 1000);
		printf("# [%d] then cm event %s\n", n,
		       ev ? rdma_event_str(ev->event) : "none");
		ok = ev && ev->event == RDMA_CM_EVENT_DISCONNECTED;
		if (ev)
			rdma_ack_cm_event(ev);
		rdma_disconnect(id);
	}
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return ok ? 0 : 1;
fail:
	printf("# [%d] connect setup failed: %s\n", n, strerror(errno));
	return 1;
}

/* kiwi's endpoints alive (all devices) and the TCP sockets, or -1. */
static long ep_live(void)
{
	FILE *f = fopen("/sys/module/kiwi/parameters/cm_endpoints", "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static long tcp_socks(void)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "TCP ", 4) && sscanf(line + 4, "%ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/*
 * -c LIST: one connection per element, WANT or WANT/PDATA, in turn;
 * after each, kiwi's endpoints and the TCP sockets must be back at
 * their counts before it (within 10 s).  "victim: [n] WANT ok" or
 * "FAILED" for each, then "victim: ok" if all were.
 */
static int clients(const struct sockaddr_in *sin, char *list, int bound_ms,
		   const char *pd)
{
	char *w, *save, *slash;
	int n = 0, bad = 0, r, i;

	for (w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		long e0 = ep_live(), t0 = tcp_socks(), e1, t1;
		const char *p = pd;

		slash = strchr(w, '/');
		if (slash) {
			*slash = 0;
			p = slash + 1;
		}
		r = client(++n, sin, w, bound_ms, p);
		for (i = 0; i < 50; i++) {
			e1 = ep_live();
			t1 = tcp_socks();
			if (e1 <= e0 && t1 <= t0)
				break;
			usleep(200000);
		}
		if (i == 50) {
			printf("# [%d] left: endpoints %ld -> %ld, TCP sockets %ld -> %ld\n",
			       n, e0, e1, t0, t1);
			r = 1;
		}
		printf("victim: [%d] %s %s\n", n, w, r ? "FAILED" : "ok");
		fflush(stdout);
		bad += r;
	}
	printf("victim: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/*
 * -R: a READ from the peer, answered with SENDs interleaved (see the
 * head of the file).  The region's first PEER_READ_LEN bytes are the
 * READ's sink, the receives go after it.
 */
static bool read_from_peer(struct rdma_cm_id *id, struct ibv_cq *cq,
			   struct ibv_mr *mr, uint8_t *buf)
{
	uint8_t *rbuf = buf + PEER_READ_LEN;
	struct ibv_sge sge = { .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1 }, *bsw;
	struct ibv_wc wc;
	int got = 0, nrecv = 0, i, n;
	double t0 = now_ms();
	bool ok = true;

	memset(buf, 0, PEER_READ_LEN + 2 * PEER_SEND_LEN);
	for (i = 0; i < 2; i++) {
		sge.addr = (uintptr_t)(rbuf + i * PEER_SEND_LEN);
		sge.length = PEER_SEND_LEN;
		rwr.wr_id = 1 + i;
		if (ibv_post_recv(id->qp, &rwr, &brw))
			return false;
	}
	sge.addr = (uintptr_t)buf;
	sge.length = PEER_READ_LEN;
	swr.wr_id = 9;
	swr.opcode = IBV_WR_RDMA_READ;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.rdma.remote_addr = PEER_READ_TO;
	swr.wr.rdma.rkey = PEER_READ_STAG;
	if (ibv_post_send(id->qp, &swr, &bsw))
		return false;
	while (got < 3 && now_ms() - t0 < timeout_s * 1000.0) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n <= 0) {
			usleep(1000);
			continue;
		}
		got++;
		printf("# completion %d: wr_id %llu %s, %u bytes\n", got,
		       (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), wc.byte_len);
		if (wc.status != IBV_WC_SUCCESS)
			ok = false;
		else if (wc.wr_id != 9 && (wc.wr_id != (uint64_t)++nrecv ||
					   wc.byte_len != PEER_SEND_LEN))
			ok = false;
	}
	for (i = 0; i < PEER_READ_LEN; i++)
		ok &= buf[i] == (i < PEER_READ_LEN / 2 ? PAT_RESP1 : PAT_RESP2);
	for (i = 0; i < 2 * PEER_SEND_LEN; i++)
		ok &= rbuf[i] == (i < PEER_SEND_LEN ? PAT_SEND1 : PAT_SEND2);
	printf("# READ of %d bytes from the peer and 2 receives: %d of 3 completions, data %s\n",
	       PEER_READ_LEN, got, ok ? "in place" : "WRONG");
	fflush(stdout);
	return ok && got == 3;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *rej_pd = NULL, *how = NULL;
	uint64_t *swapped = NULL;
	bool swap = false;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	size_t region_len = REGION_LEN;
	char *want = NULL;
	int port = ABUSE_PORT, ird = 1, c, ok = 1, listen_s = 0, bound = 0;
	bool dereg = false, rpeer = false;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct victim_info info = { 0 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;
	double t0, ms;

	while ((c = getopt(argc, argv, "a:p:i:dRt:l:c:w:P:X:L:AS")) != -1) {
		switch (c) {
		case 'A': access |= IBV_ACCESS_REMOTE_ATOMIC; break;
		case 'S': swap = true; break;
		case 'X': how = optarg; break;
		case 'L': region_len = strtoul(optarg, NULL, 0); break;
		case 'c': want = optarg; break;
		case 'w': bound = atoi(optarg); break;
		case 'P': rej_pd = optarg; break;
		case 'l': listen_s = atoi(optarg); break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'i': ird = atoi(optarg); break;
		case 'd': dereg = true; break;
		case 'R': rpeer = true; break;
		case 't': timeout_s = atoi(optarg); break;
		default: addr = NULL; optind = argc; break;
		}
	}
	if (!addr || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    !region_len || region_len % 4096 ||
	    (how && strcmp(how, "destroy") && strcmp(how, "disconnect") &&
	     strcmp(how, "exit"))) {
		fprintf(stderr, "usage: victim -a ADDR [-p PORT] [-i IRD] [-L BYTES] [-A] [-d | -R | -S | -X destroy|disconnect|exit] [-t SECS] | -l SECS\n"
			"       victim -c WANT[/PDATA][,...] -a ADDR [-p PORT] [-w MS] [-P PDATA] [-t SECS]\n"
			"       (WANT: established rejected unreachable error fail)\n");
		return 2;
	}
	sin.sin_port = htons(port);
	if (want) {
		alarm(120);
		return clients(&sin, want, bound ? bound : timeout_s * 1000,
			       rej_pd);
	}
	/* A hung verb ends the run, visibly. */
	alarm(listen_s ? listen_s + 30 : 3 * timeout_s);

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) || rdma_listen(lid, 64)) {
		perror("victim: listen");
		return 1;
	}
	printf("# listening on %s:%d\n", addr, port);
	fflush(stdout);
	if (listen_s)
		return listen_only(ch, listen_s);
	ev = abuse_cm_poll(ch, timeout_s * 1000);
	if (!ev || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		printf("victim: no connect request\n");
		return 1;
	}
	id = ev->id;
	rdma_ack_cm_event(ev);

	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 64, NULL, NULL, 0) : NULL;
	buf = aligned_alloc(4096, region_len);
	if (!cq || !buf)
		return 1;
	memset(buf, PAT_VICTIM, region_len);
	mr = ibv_reg_mr(pd, buf, region_len, access);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!mr || rdma_create_qp(id, pd, &qa)) {
		perror("victim: mr/qp");
		return 1;
	}
	info.magic = htonl(VICTIM_MAGIC);
	info.rkey = htonl(mr->rkey);
	info.addr = htobe64((uintptr_t)buf);
	info.len = htonl(region_len);
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	cp.responder_resources = ird;
	cp.initiator_depth = 1;
	if (rdma_accept(id, &cp)) {
		perror("victim: accept");
		return 1;
	}
	ev = abuse_cm_poll(ch, timeout_s * 1000);
	if (!ev || ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		printf("victim: not established (%s)\n",
		       ev ? rdma_event_str(ev->event) : "timeout");
		return 1;
	}
	rdma_ack_cm_event(ev);
	printf("# established, qp %u, rkey 0x%x, IRD %d\n", id->qp->qp_num,
	       mr->rkey, ird);
	fflush(stdout);

	if (rpeer && !read_from_peer(id, cq, mr, buf))
		ok = 0;
	if (dereg) {
		sleep(1);
		t0 = now_ms();
		c = ibv_dereg_mr(mr);
		ms = now_ms() - t0;
		printf("# ibv_dereg_mr: %d after %.0f ms\n", c, ms);
		if (c || ms > 3000) {
			printf("# FAIL: dereg under a stalled FPDU took %.0f ms (rc %d)\n",
			       ms, c);
			ok = 0;
		}
		fflush(stdout);
	}

	if (swap) {
		sleep(1);
		if (!swap_in_page(pd, mr, buf, &swapped))
			ok = 0;
	}
	if (how) {
		sleep(2);
		ok = teardown(ch, id, how);
		printf("victim: %s\n", ok ? "ok" : "FAILED");
		return ok ? 0 : 1;
	}

	/* The peer is hostile: the connection must fail or end. */
	ev = abuse_cm_poll(ch, timeout_s * 1000);
	printf("# cm event: %s\n", ev ? rdma_event_str(ev->event) : "none");
	if (!ev || ev->event != RDMA_CM_EVENT_DISCONNECTED)
		ok = 0;
	if (ev)
		rdma_ack_cm_event(ev);
	async_fatal(id->verbs, 200);
	printf("# qp state %s\n", qp_state(id->qp));
	if (swapped && !page_intact(swapped))
		ok = 0;
	printf("victim: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
