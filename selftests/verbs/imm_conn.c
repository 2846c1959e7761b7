// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * imm_conn -- RFC 7306 immediate data on a connected pair (run by
 * selftests/guest/datapath.sh in two network namespaces, with the kiwi
 * module parameter rfc7306_imm set):
 *
 *	imm_conn -s ADDR PORT		server: receives
 *	imm_conn -c ADDR PORT		client: sends
 *	imm_conn -x			no connection: with rfc7306_imm off,
 *					WRs with immediate data fail locally
 *
 * Phase 1: the client posts, through ibv_post_send, an RDMA WRITE with
 * immediate data (16 bytes), a SEND with immediate data (no payload), a
 * zero-length WRITE with immediate data, then through ibv_wr_* a WRITE
 * with immediate and a SEND with immediate, then 20 WRITEs with
 * immediate in a row.  The server checks that each consumed exactly one
 * receive WQE, in order, with the right opcode, IBV_WC_WITH_IMM, the
 * value (ibv_wc_read_imm_data, network order), byte_len (the WRITE's
 * length; 0 for a SEND) and the WRITE's data in place.
 * Phase 2: solicited events.  The server arms its CQ for solicited
 * completions only; a WRITE with immediate data without
 * IBV_SEND_SOLICITED must not wake it, one with it must, and so must a
 * solicited SEND with immediate data.
 * Phase 3: an Immediate Data message that finds no receive WQE: the
 * server's QP must terminate (its QP in error) and the client's QP is
 * flushed (its spare receive completes with IBV_WC_WR_FLUSH_ERR).
 * Exit status 0 on success; diagnostics on stderr.
 */
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

#include "cm_pair.h"

const char cm_pair_prog[] = "imm_conn";

#define NBURST		20	/* WRITEs with immediate data in a row */
#define NRECV		(5 + NBURST + 3)	/* all the server posts */
#define GO_BASE		(1u << 20)	/* client: wr_ids of "go" receives */

struct side {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *cq;		/* receive CQ, with the channel */
	struct ibv_cq *scq;		/* send CQ */
	struct ibv_qp_ex *qx;
	struct ibv_mr *mr;
	char buf[8192];
};

struct wc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t byte_len;
	unsigned int flags;
	uint32_t imm;			/* host order */
};

/* Next receive completion through the cq_ex interface, within 10 s. */
static struct wc next_rwc(struct side *s)
{
	struct wc w;

	cm_pair_start_poll(s->cq, 10, "receive");
	w.wr_id = s->cq->wr_id;
	w.status = s->cq->status;
	w.opcode = ibv_wc_read_opcode(s->cq);
	w.byte_len = ibv_wc_read_byte_len(s->cq);
	w.flags = ibv_wc_read_wc_flags(s->cq);
	w.imm = ntohl(ibv_wc_read_imm_data(s->cq));
	ibv_end_poll(s->cq);
	return w;
}

/* Next send completion (plain ibv_poll_cq), within 10 s. */
static struct ibv_wc next_swc(struct side *s)
{
	return cm_pair_wc(s->scq, 10, "send");
}

static void setup_qp(struct side *s, uint64_t send_ops)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64,
					  .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 64,
				  .max_send_sge = 1, .max_recv_sge = 1,
				  .max_inline_data = 64 };

	s->pd = ibv_alloc_pd(s->id->verbs);
	s->ch = ibv_create_comp_channel(s->id->verbs);
	if (!s->pd || !s->ch)
		DIE("pd/channel: %s", strerror(errno));
	ca.channel = s->ch;
	s->cq = ibv_create_cq_ex(s->id->verbs, &ca);
	s->scq = ibv_create_cq(s->id->verbs, 64, NULL, NULL, 0);
	if (!s->cq || !s->scq)
		DIE("cq: %s", strerror(errno));
	s->qx = cm_pair_qp(s->id, s->pd, s->scq, ibv_cq_ex_to_cq(s->cq), cap,
			   send_ops);
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		DIE("reg_mr: %s", strerror(errno));
}

static void post_recv(struct side *s, uint64_t wr_id, size_t off)
{
	cm_pair_post_recv(s->id->qp, wr_id, s->buf + off, 64, s->mr->lkey);
}

/* One WR through ibv_post_send; @len 0 posts no SGE at all. */
static int post(struct side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		size_t off, uint32_t len, uint32_t imm, uint64_t raddr,
		uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED | flags,
		.imm_data = htonl(imm),
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->id->qp, &wr, &bad);
}

static const uint64_t imm_ops = IBV_QP_EX_WITH_SEND |
				IBV_QP_EX_WITH_RDMA_WRITE |
				IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				IBV_QP_EX_WITH_SEND_WITH_IMM;

/* ---- server: the receiving side ---- */

static void expect(struct side *s, uint64_t wr_id, int opcode,
		   uint32_t len, uint32_t imm)
{
	struct wc w = next_rwc(s);

	if (w.wr_id != wr_id || w.status != IBV_WC_SUCCESS ||
	    w.opcode != opcode || w.byte_len != len ||
	    !(w.flags & IBV_WC_WITH_IMM) || w.imm != imm)
		DIE("receive: wr_id %lu status %s opcode %d len %u flags %#x imm %#x; want wr_id %lu opcode %d len %u imm %#x",
		    (unsigned long)w.wr_id, ibv_wc_status_str(w.status),
		    w.opcode, w.byte_len, w.flags, w.imm,
		    (unsigned long)wr_id, opcode, len, imm);
}

/* A "go" SEND to the client (5 bytes from buf + 7000). */
static void go(struct side *s, uint64_t wr_id)
{
	struct ibv_wc wc;

	if (post(s, IBV_WR_SEND, wr_id, 7000, 5, 0, 0, 0, 0))
		DIE("post go: %s", strerror(errno));
	wc = next_swc(s);
	if (wc.status != IBV_WC_SUCCESS)
		DIE("go: %s", ibv_wc_status_str(wc.status));
}

/* Is a completion event pending within @ms?  Consumed and acked if so. */
static bool event_within(struct side *s, int ms)
{
	struct pollfd pfd = { .fd = s->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&pfd, 1, ms) <= 0)
		return false;
	if (ibv_get_cq_event(s->ch, &cq, &ctx))
		DIE("get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(cq, 1);
	return true;
}

static void arm_solicited(struct side *s)
{
	if (ibv_req_notify_cq(ibv_cq_ex_to_cq(s->cq), 1))
		DIE("req_notify_cq: %s", strerror(errno));
}

static void server_phase1(struct side *s)
{
	char want[16];
	int i;

	expect(s, 1, IBV_WC_RECV_RDMA_WITH_IMM, 16, 0x11111111);
	if (memcmp(s->buf + 2048, "write-with-imm!", 16))
		DIE("WRITE data not placed: '%.16s'", s->buf + 2048);
	expect(s, 2, IBV_WC_RECV, 0, 0x22222222);
	expect(s, 3, IBV_WC_RECV_RDMA_WITH_IMM, 0, 0x33333333);
	expect(s, 4, IBV_WC_RECV_RDMA_WITH_IMM, 8, 0x44444444);
	if (memcmp(s->buf + 2100, "wr-api!", 8))
		DIE("ibv_wr WRITE data not placed: '%.8s'", s->buf + 2100);
	expect(s, 5, IBV_WC_RECV, 0, 0x55555555);
	for (i = 0; i < NBURST; i++) {
		expect(s, 6 + i, IBV_WC_RECV_RDMA_WITH_IMM, 4, 1000 + i);
		snprintf(want, sizeof(want), "%03d", i);
		if (memcmp(s->buf + 4096 + 4 * i, want, 4))
			DIE("burst WRITE %d: '%.4s'", i, s->buf + 4096 + 4 * i);
	}
	fprintf(stderr, "imm_conn server: phase 1 ok (write/send with imm, zero-length, ibv_wr_*, %d in order)\n",
		NBURST);
}

static void server_phase2(struct side *s)
{
	uint64_t r = 6 + NBURST;

	arm_solicited(s);
	go(s, 901);
	expect(s, r, IBV_WC_RECV_RDMA_WITH_IMM, 0, 0x66666666);
	if (event_within(s, 300))
		DIE("a WRITE with immediate data without SE woke a CQ armed for solicited events");
	go(s, 902);
	if (!event_within(s, 10000))
		DIE("no event for a solicited WRITE with immediate data");
	expect(s, r + 1, IBV_WC_RECV_RDMA_WITH_IMM, 0, 0x77777777);
	arm_solicited(s);
	go(s, 903);
	if (!event_within(s, 10000))
		DIE("no event for a solicited SEND with immediate data");
	expect(s, r + 2, IBV_WC_RECV, 0, 0x88888888);
	fprintf(stderr, "imm_conn server: phase 2 ok (solicited events)\n");
}

/* Every receive is used: the next Immediate Data must terminate us. */
static void server_phase3(struct side *s)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	double end;

	go(s, 904);
	for (end = cm_pair_now() + 10; cm_pair_now() < end; usleep(10000)) {
		if (ibv_query_qp(s->id->qp, &qa, IBV_QP_STATE, &ia))
			DIE("query_qp: %s", strerror(errno));
		if (qa.qp_state == IBV_QPS_ERR)
			break;
	}
	if (qa.qp_state != IBV_QPS_ERR)
		DIE("QP still in state %d after an Immediate Data message with no receive",
		    qa.qp_state);
	fprintf(stderr, "imm_conn server: phase 3 ok (no receive WQE -> TERMINATE, QP in error)\n");
}

static int server(const char *addr, const char *port)
{
	static struct side s;
	struct rdma_conn_param cp;
	struct rdma_cm_id *listen;
	struct cm_pair_region pi;
	int i;

	cm_pair_role = "server";
	listen = cm_pair_listen(addr, port, 1);
	s.id = cm_pair_request(listen, "get_request");
	setup_qp(&s, imm_ops);
	for (i = 1; i <= NRECV; i++)
		post_recv(&s, i, 64 * i);	/* below 2048: not the targets */
	memcpy(s.buf + 7000, "go!!", 5);
	pi = (struct cm_pair_region){ (uintptr_t)s.buf, s.mr->rkey, 0 };
	cp = cm_pair_param(false, &pi, sizeof(pi));
	cm_pair_accept(s.id, &cp, "accept");
	server_phase1(&s);
	server_phase2(&s);
	server_phase3(&s);
	return 0;
}

/* ---- client: the sending side ---- */

static void sent(struct side *s, uint64_t wr_id, int opcode)
{
	struct ibv_wc wc = next_swc(s);

	if (wc.wr_id != wr_id || wc.status != IBV_WC_SUCCESS ||
	    (int)wc.opcode != opcode)
		DIE("send completion: wr_id %lu status %s opcode %d; want wr_id %lu opcode %d",
		    (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
		    wc.opcode, (unsigned long)wr_id, opcode);
}

static void wait_go(struct side *s, uint64_t wr_id)
{
	struct wc w = next_rwc(s);

	if (w.wr_id != wr_id || w.status != IBV_WC_SUCCESS)
		DIE("go %lu: wr_id %lu status %s", (unsigned long)wr_id,
		    (unsigned long)w.wr_id, ibv_wc_status_str(w.status));
}

static void client_phase1(struct side *s, uint64_t raddr, uint32_t rkey)
{
	int i;

	strcpy(s->buf, "write-with-imm!");
	strcpy(s->buf + 100, "wr-api!");
	if (post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 101, 0, 16, 0x11111111,
		 raddr + 2048, rkey, 0) ||
	    post(s, IBV_WR_SEND_WITH_IMM, 102, 0, 0, 0x22222222, 0, 0, 0) ||
	    post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 103, 0, 0, 0x33333333, 0, 0,
		 0))
		DIE("post_send with immediate data: %s", strerror(errno));
	ibv_wr_start(s->qx);
	s->qx->wr_flags = IBV_SEND_SIGNALED;
	s->qx->wr_id = 104;
	ibv_wr_rdma_write_imm(s->qx, rkey, raddr + 2100, htonl(0x44444444));
	ibv_wr_set_sge(s->qx, s->mr->lkey, (uintptr_t)s->buf + 100, 8);
	s->qx->wr_id = 105;
	ibv_wr_send_imm(s->qx, htonl(0x55555555));
	ibv_wr_set_sge_list(s->qx, 0, NULL);
	if (ibv_wr_complete(s->qx))
		DIE("ibv_wr_complete: %s", strerror(errno));
	for (i = 0; i < NBURST; i++) {
		snprintf(s->buf + 1024 + 4 * i, 5, "%03d", i);
		if (post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 200 + i, 1024 + 4 * i,
			 4, 1000 + i, raddr + 4096 + 4 * i, rkey, 0))
			DIE("post_send burst %d: %s", i, strerror(errno));
	}
	sent(s, 101, IBV_WC_RDMA_WRITE);
	sent(s, 102, IBV_WC_SEND);
	sent(s, 103, IBV_WC_RDMA_WRITE);
	sent(s, 104, IBV_WC_RDMA_WRITE);
	sent(s, 105, IBV_WC_SEND);
	for (i = 0; i < NBURST; i++)
		sent(s, 200 + i, IBV_WC_RDMA_WRITE);
	/* RFC 7306 has no SEND with immediate data and a payload. */
	if (post(s, IBV_WR_SEND_WITH_IMM, 199, 0, 4, 1, 0, 0, 0) != EINVAL)
		DIE("SEND with immediate data and a payload was accepted");
	fprintf(stderr, "imm_conn client: phase 1 ok\n");
}

static void client_phase2(struct side *s, uint64_t raddr, uint32_t rkey)
{
	wait_go(s, GO_BASE + 1);
	if (post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 301, 0, 0, 0x66666666, 0, 0,
		 0))
		DIE("post 301: %s", strerror(errno));
	sent(s, 301, IBV_WC_RDMA_WRITE);
	wait_go(s, GO_BASE + 2);
	if (post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 302, 0, 0, 0x77777777, 0, 0,
		 IBV_SEND_SOLICITED))
		DIE("post 302: %s", strerror(errno));
	sent(s, 302, IBV_WC_RDMA_WRITE);
	wait_go(s, GO_BASE + 3);
	if (post(s, IBV_WR_SEND_WITH_IMM, 303, 0, 0, 0x88888888, 0, 0,
		 IBV_SEND_SOLICITED))
		DIE("post 303: %s", strerror(errno));
	sent(s, 303, IBV_WC_SEND);
	(void)raddr;
	(void)rkey;
	fprintf(stderr, "imm_conn client: phase 2 ok\n");
}

static void client_phase3(struct side *s)
{
	struct wc w;

	wait_go(s, GO_BASE + 4);
	if (post(s, IBV_WR_RDMA_WRITE_WITH_IMM, 401, 0, 0, 0x99999999, 0, 0,
		 0))
		DIE("post 401: %s", strerror(errno));
	/* Sent or flushed: either way the stream then ends. */
	next_swc(s);
	w = next_rwc(s);
	if (w.wr_id != GO_BASE + 5 || w.status != IBV_WC_WR_FLUSH_ERR)
		DIE("spare receive: wr_id %lu status %s, want flushed",
		    (unsigned long)w.wr_id, ibv_wc_status_str(w.status));
	fprintf(stderr, "imm_conn client: phase 3 ok (peer terminated, receive flushed)\n");
}

static int client(const char *addr, const char *port)
{
	static struct side s;
	struct rdma_conn_param cp = cm_pair_param(true, NULL, 0);
	struct cm_pair_region pi;
	uint64_t raddr;
	uint32_t rkey;
	int i;

	cm_pair_role = "client";
	s.id = cm_pair_endpoint(addr, port, "create_ep");
	setup_qp(&s, imm_ops);
	for (i = 1; i <= 5; i++)	/* go 1-4, then one to be flushed */
		post_recv(&s, GO_BASE + i, 6000 + 64 * i);
	cm_pair_connect(s.id, &cp, "connect");
	cm_pair_peer_data(s.id, &pi, sizeof(pi));
	raddr = pi.addr;
	rkey = pi.rkey;
	client_phase1(&s, raddr, rkey);
	client_phase2(&s, raddr, rkey);
	client_phase3(&s);
	return 0;
}

/* ---- -x: immediate data refused locally where not enabled ---- */

static int local_refusal(void)
{
	struct ibv_context *ctx;
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = imm_ops,
	};
	static struct side s;
	struct ibv_qp *qp;
	int rv;

	cm_pair_role = "local";
	ctx = cm_pair_kiwi();
	s.pd = ibv_alloc_pd(ctx);
	s.scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!s.pd || !s.scq)
		DIE("pd/cq: %s", strerror(errno));
	qa.pd = s.pd;
	qa.send_cq = qa.recv_cq = s.scq;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (qp || errno != EOPNOTSUPP)
		DIE("create_qp_ex with immediate data ops: %s, want EOPNOTSUPP",
		    qp ? "created" : strerror(errno));
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (!qp)
		DIE("create_qp_ex: %s", strerror(errno));
	s.mr = ibv_reg_mr(s.pd, s.buf, sizeof(s.buf), IBV_ACCESS_LOCAL_WRITE);
	if (!s.mr)
		DIE("reg_mr: %s", strerror(errno));
	s.id = &(struct rdma_cm_id){ .qp = qp };
	rv = post(&s, IBV_WR_RDMA_WRITE_WITH_IMM, 1, 0, 4, 7, 0x1000, 1, 0);
	if (rv != EOPNOTSUPP)
		DIE("WRITE with immediate data: %d (%s), want EOPNOTSUPP", rv,
		    strerror(rv));
	rv = post(&s, IBV_WR_SEND_WITH_IMM, 2, 0, 0, 7, 0, 0, 0);
	if (rv != EOPNOTSUPP)
		DIE("SEND with immediate data: %d (%s), want EOPNOTSUPP", rv,
		    strerror(rv));
	fprintf(stderr, "imm_conn local: immediate data refused with EOPNOTSUPP (rfc7306_imm off)\n");
	return 0;
}

int main(int argc, char **argv)
{
	int rv = cm_pair_main(argc, argv, server, client);

	if (rv >= 0)
		return rv;
	if (argc == 2 && !strcmp(argv[1], "-x"))
		return local_refusal();
	fprintf(stderr, "usage: imm_conn -s|-c ADDR PORT | -x\n");
	return 2;
}
