// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * peer.c -- one end of an rdma_cm connection for the kiwi error-path
 * tests: see peer.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "peer.h"

/* ---- output ---- */

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double elapsed(struct peer *p)
{
	return now() - p->t0;
}

void say(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	printf("# %s: [%6.3f] ", p->who, elapsed(p));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Records one expectation; prints failures (and passes, briefly). */
bool check(struct peer *p, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("# %s: %s: ", p->who, ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		p->nfail++;
	return ok;
}

/* A failed step: records it and returns -1. */
int fail(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	printf("# %s: FAIL: ", p->who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	p->nfail++;
	return -1;
}

#define NAME(x) [x] = #x

const char *wc_name(int status)
{
	static const char *const names[] = {
		NAME(IBV_WC_SUCCESS), NAME(IBV_WC_LOC_LEN_ERR),
		NAME(IBV_WC_LOC_QP_OP_ERR), NAME(IBV_WC_LOC_PROT_ERR),
		NAME(IBV_WC_WR_FLUSH_ERR), NAME(IBV_WC_BAD_RESP_ERR),
		NAME(IBV_WC_LOC_ACCESS_ERR), NAME(IBV_WC_REM_INV_REQ_ERR),
		NAME(IBV_WC_REM_ACCESS_ERR), NAME(IBV_WC_REM_OP_ERR),
		NAME(IBV_WC_RETRY_EXC_ERR), NAME(IBV_WC_RNR_RETRY_EXC_ERR),
		NAME(IBV_WC_REM_ABORT_ERR), NAME(IBV_WC_FATAL_ERR),
		NAME(IBV_WC_GENERAL_ERR),
	};
	static char other[32];

	if (status == -1)
		return "none";
	if (status >= 0 && status < (int)(sizeof(names) / sizeof(names[0])) &&
	    names[status])
		return names[status] + 7;	/* without "IBV_WC_" */
	snprintf(other, sizeof(other), "status_%d", status);
	return other;
}

const char *ev_name(int type)
{
	static const char *const names[] = {
		NAME(IBV_EVENT_CQ_ERR), NAME(IBV_EVENT_QP_FATAL),
		NAME(IBV_EVENT_QP_REQ_ERR), NAME(IBV_EVENT_QP_ACCESS_ERR),
		NAME(IBV_EVENT_COMM_EST), NAME(IBV_EVENT_SQ_DRAINED),
		NAME(IBV_EVENT_PATH_MIG), NAME(IBV_EVENT_PATH_MIG_ERR),
		NAME(IBV_EVENT_DEVICE_FATAL), NAME(IBV_EVENT_PORT_ACTIVE),
		NAME(IBV_EVENT_PORT_ERR), NAME(IBV_EVENT_SRQ_ERR),
		NAME(IBV_EVENT_SRQ_LIMIT_REACHED),
		NAME(IBV_EVENT_QP_LAST_WQE_REACHED), NAME(IBV_EVENT_GID_CHANGE),
	};
	static char other[32];

	if (type == -1)
		return "none";
	if (type >= 0 && type < (int)(sizeof(names) / sizeof(names[0])) &&
	    names[type])
		return names[type] + 10;	/* without "IBV_EVENT_" */
	snprintf(other, sizeof(other), "event_%d", type);
	return other;
}

const char *qps_name(int state)
{
	static const char *const names[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	if (state >= 0 && state < (int)(sizeof(names) / sizeof(names[0])))
		return names[state];
	return state == -1 ? "unknown" : "other";
}

/* ---- events ---- */

int qp_state(struct peer *p)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (!p->qp || ibv_query_qp(p->qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

static void cm_established(struct peer *p, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *c = &ev->param.conn;

	if (p->server)
		return;
	if (c->private_data_len >= sizeof(p->remote))
		memcpy(&p->remote, c->private_data, sizeof(p->remote));
	else
		say(p, "ESTABLISHED with %u bytes of private data",
		    c->private_data_len);
}

static void cm_event(struct peer *p, struct rdma_cm_event *ev)
{
	say(p, "cm event %s (status %d)", rdma_event_str(ev->event),
	    ev->status);
	if (ev->event < 32)
		p->cm_seen |= 1u << ev->event;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (!p->id)
			p->id = ev->id;
		else
			rdma_reject(ev->id, NULL, 0);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		cm_established(p, ev);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!p->disconnected) {
			p->disconnected = true;
			p->disc_t = elapsed(p);
			p->disc_status = ev->status;
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (p->cm_error < 0)
			p->cm_error = ev->event;
		break;
	default:
		break;
	}
}

static void async_event(struct peer *p, struct ibv_async_event *ev)
{
	int t = ev->event_type;
	bool qp_err = t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR ||
		      t == IBV_EVENT_QP_ACCESS_ERR;

	p->n_async++;
	if (qp_err && ev->element.qp == p->qp && p->async_ev < 0) {
		p->async_ev = t;
		p->async_t = elapsed(p);
		p->state_at_async = qp_state(p);
	}
	say(p, "async event %s%s", ev_name(t),
	    qp_err && ev->element.qp != p->qp ? " (not our QP)" : "");
}

static void handle_fds(struct peer *p)
{
	struct rdma_cm_event *cev;
	struct ibv_async_event aev;

	while (!rdma_get_cm_event(p->ch, &cev)) {
		cm_event(p, cev);
		rdma_ack_cm_event(cev);
	}
	while (p->ctx && !ibv_get_async_event(p->ctx, &aev)) {
		async_event(p, &aev);
		ibv_ack_async_event(&aev);
	}
}

/* Wait up to @ms for a CM or async event and handle what is there. */
void pump(struct peer *p, int ms)
{
	struct pollfd pfd[2] = {
		{ .fd = p->ch->fd, .events = POLLIN },
		{ .fd = p->ctx ? p->ctx->async_fd : -1, .events = POLLIN },
	};

	poll(pfd, 2, ms);
	handle_fds(p);
}

/* wr_ids posted in increasing order (reposted receives are not). */
static bool ordered_wr(uint64_t wr_id)
{
	return wr_id < MAX_WRID || (wr_id >= WR_STREAM && wr_id < WR_SRECV);
}

/*
 * Within each range wr_ids grow in posting order; the small ones posted
 * after a stream (after the error) start a new sequence.
 */
static void count_wc(struct cq_stat *s, uint64_t wr_id, int status)
{
	if (ordered_wr(wr_id)) {
		if (wr_id < s->last &&
		    (wr_id < MAX_WRID) == (s->last < MAX_WRID))
			s->out_of_order++;
		s->last = wr_id;
	}
	s->n++;
	if (status == IBV_WC_SUCCESS) {
		s->ok++;
		if (s->flush || s->err)
			s->ok_after_err++;
		return;
	}
	if (s->first_bad < 0)
		s->first_bad = status;
	if (status == IBV_WC_WR_FLUSH_ERR)
		s->flush++;
	else
		s->err++;
}

static void on_wc(struct peer *p, const struct ibv_wc *wc, bool recv)
{
	struct cq_stat *s = recv ? &p->rs : &p->ss;

	if (wc->wr_id < MAX_WRID) {
		p->wc[wc->wr_id] = wc->status;
		say(p, "%s completion wr_id %llu: %s", recv ? "recv" : "send",
		    (unsigned long long)wc->wr_id, wc_name(wc->status));
	} else if (wc->status != IBV_WC_SUCCESS && s->first_bad < 0) {
		say(p, "first failed %s completion (wr_id %llu): %s",
		    recv ? "recv" : "send", (unsigned long long)wc->wr_id,
		    wc_name(wc->status));
	}
	count_wc(s, wc->wr_id, wc->status);
	if (p->hook)
		p->hook(p, wc, recv);
}

static void drain_cq(struct peer *p, struct ibv_cq *cq, bool recv)
{
	struct ibv_wc wc[16];
	int i, n;

	do {
		n = ibv_poll_cq(cq, 16, wc);
		if (n < 0) {
			check(p, false, "ibv_poll_cq: %d", n);
			return;
		}
		for (i = 0; i < n; i++)
			on_wc(p, &wc[i], recv);
	} while (n == 16);
}

static void drain_cqs(struct peer *p)
{
	if (p->scq)
		drain_cq(p, p->scq, false);
	if (p->rcq)
		drain_cq(p, p->rcq, true);
}

/* Handle whatever is there, without waiting. */
void poll_all(struct peer *p)
{
	drain_cqs(p);
	handle_fds(p);
}

/* Run the loop until @pred holds (true) or @secs have passed (false). */
bool wait_until(struct peer *p, bool (*pred)(struct peer *p), double secs)
{
	double end = now() + secs;

	for (;;) {
		drain_cqs(p);
		if (pred(p))
			return true;
		if (now() > end)
			return false;
		pump(p, 2);
	}
}

static uint64_t waited_wr;

static bool wr_done(struct peer *p)
{
	return p->wc[waited_wr] != -1;
}

bool wait_wr(struct peer *p, uint64_t wr_id)
{
	waited_wr = wr_id;
	return wait_until(p, wr_done, p->timeout);
}

static bool cm_pending(struct peer *p)
{
	return p->cm_error >= 0;
}

/* Wait for CM event @type; false on a CM error or timeout. */
static bool wait_cm(struct peer *p, enum rdma_cm_event_type type, double secs)
{
	double end = now() + secs;

	while (!(p->cm_seen & (1u << type))) {
		if (cm_pending(p) || now() > end) {
			check(p, false, "waiting for %s: %s",
			      rdma_event_str(type),
			      p->cm_error >= 0 ? rdma_event_str(p->cm_error) :
						 "timed out");
			return false;
		}
		pump(p, 10);
	}
	return true;
}

/* ---- posting ---- */

int post_recv(struct peer *p, uint64_t wr_id, void *addr, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = p->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rv;

	if (wr_id < MAX_WRID)
		p->wc[wr_id] = -1;
	rv = ibv_post_recv(p->qp, &wr, &bad);
	if (!rv)
		p->r_posted++;
	return rv;
}

void set_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, struct peer *p,
	    uint64_t wr_id, enum ibv_wr_opcode op, void *laddr, uint32_t len,
	    uint64_t raddr, uint32_t rkey)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)laddr;
	sge->length = len;
	sge->lkey = p->mr->lkey;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
}

int post_send_chain(struct peer *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *w, *bad = NULL;
	int rv;

	for (w = wr; w; w = w->next)
		if (w->wr_id < MAX_WRID)
			p->wc[w->wr_id] = -1;
	rv = ibv_post_send(p->qp, wr, &bad);
	for (w = wr; w && w != bad; w = w->next)
		p->s_posted++;
	return rv;
}

int post_one(struct peer *p, uint64_t wr_id, enum ibv_wr_opcode op,
	     void *laddr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	set_wr(&wr, &sge, p, wr_id, op, laddr, len, raddr, rkey);
	return post_send_chain(p, &wr);
}

/* ---- set-up ---- */

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int peer_init(struct peer *p, bool server, double timeout)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->server = server;
	p->who = server ? "responder" : "requester";
	p->t0 = now();
	p->timeout = timeout;
	p->cm_error = -1;
	p->async_ev = -1;
	p->state_at_async = -1;
	p->mr2_access = -1;
	p->ss.first_bad = -1;
	p->rs.first_bad = -1;
	for (i = 0; i < MAX_WRID; i++)
		p->wc[i] = -1;
	p->ch = rdma_create_event_channel();
	if (!p->ch || nonblock(p->ch->fd)) {
		check(p, false, "rdma_create_event_channel: %s",
		      strerror(errno));
		return -1;
	}
	return 0;
}

static void *alloc_pages(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* The optional second region: other access rights, or another PD. */
static int setup_mr2(struct peer *p)
{
	struct ibv_pd *pd = p->pd;

	if (p->mr2_access < 0)
		return 0;
	p->buf2 = alloc_pages(MR_LEN);
	if (!p->buf2)
		return -1;
	memset(p->buf2, p->server ? PAT_SRV : 0, MR_LEN);
	if (p->mr2_other_pd) {
		p->pd2 = ibv_alloc_pd(p->ctx);
		pd = p->pd2;
	}
	p->mr2 = pd ? ibv_reg_mr(pd, p->buf2, MR_LEN, p->mr2_access) : NULL;
	return p->mr2 ? 0 : -1;
}

/* PD, CQs, QP (through rdma_cm), buffers and MRs on p->id's device. */
static int setup_verbs(struct peer *p)
{
	struct ibv_qp_init_attr qa = {
		.cap = {
			.max_send_wr = SQ_DEPTH, .max_recv_wr = STREAM_RECV,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	p->ctx = p->id->verbs;
	if (nonblock(p->ctx->async_fd))
		return fail(p, "async fd: %s", strerror(errno));
	p->pd = ibv_alloc_pd(p->ctx);
	p->scq = ibv_create_cq(p->ctx, SQ_DEPTH * 2, NULL, NULL, 0);
	p->rcq = ibv_create_cq(p->ctx, STREAM_RECV * 2, NULL, NULL, 0);
	p->buf = alloc_pages(BUF_LEN);
	p->rbuf = alloc_pages(RBUF_LEN);
	if (!p->pd || !p->scq || !p->rcq || !p->buf || !p->rbuf)
		return fail(p, "verbs objects: %s", strerror(errno));
	/* The requester's MR covers all of buf; the responder's MR_LEN. */
	if (!p->mr_access)
		p->mr_access = IBV_ACCESS_LOCAL_WRITE;
	if (p->server) {
		memset(p->buf, PAT_SRV, MR_LEN);
		memset(p->buf + MR_LEN, PAT_GUARD, BUF_LEN - MR_LEN);
	}
	p->mr = ibv_reg_mr(p->pd, p->buf, p->server ? MR_LEN : BUF_LEN,
			   p->mr_access);
	p->rmr = ibv_reg_mr(p->pd, p->rbuf, RBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr || !p->rmr || setup_mr2(p))
		return fail(p, "ibv_reg_mr: %s", strerror(errno));
	qa.send_cq = p->scq;
	qa.recv_cq = p->rcq;
	if (rdma_create_qp(p->id, p->pd, &qa))
		return fail(p, "rdma_create_qp: %s", strerror(errno));
	p->qp = p->id->qp;
	say(p, "qp_num %u on %s", p->qp->qp_num,
	    ibv_get_device_name(p->ctx->device));
	return 0;
}

static int post_recvs(struct peer *p, int n, int len)
{
	int i, rv;

	for (i = 0; i < n; i++) {
		uint64_t wr_id = len == STREAM_LEN ? WR_SRECV + i : WR_RECV + i;

		rv = post_recv(p, wr_id, p->rbuf + (size_t)i * len, len);
		if (rv)
			return fail(p, "ibv_post_recv: %s", strerror(rv));
	}
	return 0;
}

static void set_sin(struct sockaddr_in *sin, const char *addr, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, addr, &sin->sin_addr);
}

int peer_listen(struct peer *p, const char *addr, int port)
{
	struct sockaddr_in sin;

	set_sin(&sin, addr, port);
	if (rdma_create_id(p->ch, &p->lid, p, RDMA_PS_TCP) ||
	    rdma_bind_addr(p->lid, (struct sockaddr *)&sin) ||
	    rdma_listen(p->lid, 4))
		return fail(p, "listen on %s:%d: %s", addr, port,
			    strerror(errno));
	say(p, "listening on %s:%d", addr, port);
	return 0;
}

/* Take the first connect request, post @recvs receives, accept. */
int peer_accept(struct peer *p, int recvs, int recv_len)
{
	struct wire_info info;
	struct rdma_conn_param cp = {
		.private_data = &info, .private_data_len = sizeof(info),
		.responder_resources = 4, .initiator_depth = 4,
	};

	if (!wait_cm(p, RDMA_CM_EVENT_CONNECT_REQUEST, 60) ||
	    setup_verbs(p) || post_recvs(p, recvs, recv_len))
		return -1;
	memset(&info, 0, sizeof(info));
	info.addr = (uintptr_t)p->buf;
	info.rkey = p->mr->rkey;
	info.len = MR_LEN;
	info.magic = IWERR_MAGIC;
	if (p->mr2) {
		info.addr2 = (uintptr_t)p->buf2;
		info.rkey2 = p->mr2->rkey;
	}
	if (rdma_accept(p->id, &cp))
		return fail(p, "rdma_accept: %s", strerror(errno));
	if (!wait_cm(p, RDMA_CM_EVENT_ESTABLISHED, p->timeout))
		return -1;
	say(p, "connected: region addr 0x%llx rkey 0x%x len %u",
	    (unsigned long long)info.addr, info.rkey, info.len);
	return 0;
}

int peer_connect(struct peer *p, const char *addr, int port, int recvs,
		 int recv_len)
{
	struct sockaddr_in sin;
	struct rdma_conn_param cp = {
		.responder_resources = 4, .initiator_depth = 4,
	};

	set_sin(&sin, addr, port);
	if (rdma_create_id(p->ch, &p->id, p, RDMA_PS_TCP) ||
	    rdma_resolve_addr(p->id, NULL, (struct sockaddr *)&sin, 5000))
		return fail(p, "resolve %s: %s", addr, strerror(errno));
	if (!wait_cm(p, RDMA_CM_EVENT_ADDR_RESOLVED, p->timeout))
		return -1;
	if (rdma_resolve_route(p->id, 5000))
		return fail(p, "rdma_resolve_route: %s", strerror(errno));
	if (!wait_cm(p, RDMA_CM_EVENT_ROUTE_RESOLVED, p->timeout) ||
	    setup_verbs(p) || post_recvs(p, recvs, recv_len))
		return -1;
	if (rdma_connect(p->id, &cp))
		return fail(p, "rdma_connect: %s", strerror(errno));
	if (!wait_cm(p, RDMA_CM_EVENT_ESTABLISHED, p->timeout))
		return -1;
	if (!check(p, p->remote.magic == IWERR_MAGIC,
		   "responder's region in the private data (addr 0x%llx rkey 0x%x len %u)",
		   (unsigned long long)p->remote.addr, p->remote.rkey,
		   p->remote.len))
		return -1;
	return 0;
}

void peer_destroy(struct peer *p)
{
	if (p->qp)
		rdma_destroy_qp(p->id);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->mr2)
		ibv_dereg_mr(p->mr2);
	if (p->pd2)
		ibv_dealloc_pd(p->pd2);
	if (p->rmr)
		ibv_dereg_mr(p->rmr);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->id)
		rdma_destroy_id(p->id);
	if (p->lid)
		rdma_destroy_id(p->lid);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	if (p->buf)
		munmap(p->buf, BUF_LEN);
	if (p->rbuf)
		munmap(p->rbuf, RBUF_LEN);
	if (p->buf2)
		munmap(p->buf2, MR_LEN);
}
