// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * atomic_conn -- RFC 7306 atomics on connected pairs (run by
 * selftests/guest/datapath.sh in two network namespaces, with the kiwi
 * module parameter rfc7306_atomics set):
 *
 *	atomic_conn -s ADDR PORT	server: owns the target words
 *	atomic_conn -c ADDR PORT	client: sends the atomics
 *	atomic_conn -x			no connection: with rfc7306_atomics
 *					off, atomic WRs fail locally
 *
 * The server accepts NCONN connections on one PD and passes, in each
 * accept's private data, its target region (REMOTE_ATOMIC) and a second
 * region registered without REMOTE_ATOMIC.
 *
 * Connection 1: fetch-and-add and compare-and-swap through ibv_post_send
 * and ibv_wr_atomic_*: each original value lands in the local 8 bytes,
 * completions say IBV_WC_FETCH_ADD / IBV_WC_COMP_SWAP, a compare that
 * misses leaves the word alone, an RDMA READ of the word agrees.
 * Connections 1 and 2 then hammer one counter from two threads, NADD
 * fetch-and-adds of 1 each, up to NOUT outstanding (beyond the ORD of
 * 4 they queue): every value 0 .. 2*NADD-1 must come back exactly once,
 * and the server finds 2*NADD in the word.
 * Connections 3-5: an atomic to the region without REMOTE_ATOMIC, to a
 * misaligned offset and past the region's end: each completes with
 * IBV_WC_REM_ACCESS_ERR and leaves the QP in error (the server's
 * TERMINATEs are checked in the kernel log by datapath.sh).
 * Exit status 0 on success; diagnostics on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm_pair.h"

const char cm_pair_prog[] = "atomic_conn";

#define NCONN		5
#define NADD		500	/* fetch-and-adds per hammering thread */
#define NOUT		16	/* outstanding per thread */
#define REGION		4096
#define W_BASIC		0	/* word offsets in the target region */
#define W_COUNTER	64

struct peer_info {
	uint64_t addr;		/* REMOTE_ATOMIC region */
	uint64_t plain;		/* region without REMOTE_ATOMIC */
	uint32_t rkey;
	uint32_t plain_rkey;
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_qp_ex *qx;
	struct ibv_mr *mr;		/* local sinks */
	uint64_t *sink;			/* NOUT words */
	struct peer_info pi;
	uint64_t *seen;			/* hammer: fetched values */
};

static struct ibv_wc next_wc(struct conn *c)
{
	return cm_pair_wc(c->cq, 20, "");
}

static const uint64_t atomic_ops = IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;

static void make_qp(struct conn *c, struct ibv_pd *pd, uint64_t ops)
{
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 4,
				  .max_send_sge = 1, .max_recv_sge = 1 };

	c->cq = ibv_create_cq(c->id->verbs, 128, NULL, NULL, 0);
	if (!c->cq)
		DIE("cq: %s", strerror(errno));
	c->qx = cm_pair_qp(c->id, pd, c->cq, c->cq, cap, ops);
}

/* ---- server ---- */

static int server(const char *addr, const char *port)
{
	static uint64_t target[REGION / 8] __attribute__((aligned(4096)));
	static uint64_t plain[REGION / 8] __attribute__((aligned(4096)));
	struct rdma_conn_param cp;
	struct conn conns[NCONN] = { 0 };
	struct rdma_cm_id *listen;
	struct ibv_mr *tmr = NULL, *pmr = NULL;
	struct ibv_pd *pd = NULL;
	struct peer_info pi;
	uint64_t want = 2 * NADD;
	double end;
	int i;

	cm_pair_role = "server";
	listen = cm_pair_listen(addr, port, NCONN);
	target[W_BASIC / 8] = 1000;
	for (i = 0; i < NCONN; i++) {
		struct conn *c = &conns[i];

		c->id = cm_pair_request(listen, "get_request %d", i);
		if (!pd) {
			pd = ibv_alloc_pd(c->id->verbs);
			if (!pd)
				DIE("pd: %s", strerror(errno));
			tmr = ibv_reg_mr(pd, target, sizeof(target),
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_ATOMIC);
			pmr = ibv_reg_mr(pd, plain, sizeof(plain),
					 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_WRITE);
			if (!tmr || !pmr)
				DIE("reg_mr: %s", strerror(errno));
		}
		make_qp(c, pd, IBV_QP_EX_WITH_SEND);
		pi = (struct peer_info){ (uintptr_t)target, (uintptr_t)plain,
					 tmr->rkey, pmr->rkey };
		cp = cm_pair_param(false, &pi, sizeof(pi));
		cm_pair_accept(c->id, &cp, "accept %d", i);
	}
	/* The client is done when the counter is; then it disconnects. */
	for (end = cm_pair_now() + 90; cm_pair_now() < end; usleep(10000))
		if (__atomic_load_n(&target[W_COUNTER / 8], __ATOMIC_RELAXED) ==
		    want)
			break;
	if (target[W_COUNTER / 8] != want)
		DIE("counter %lu, want %lu", (unsigned long)target[W_COUNTER / 8],
		    (unsigned long)want);
	for (i = 0; i < (int)(sizeof(plain) / 8); i++)
		if (plain[i])
			DIE("region without REMOTE_ATOMIC changed at %d", i);
	fprintf(stderr, "atomic_conn server: counter %lu after %d x %d fetch-and-adds; nothing changed without REMOTE_ATOMIC\n",
		(unsigned long)want, 2, NADD);
	sleep(2);	/* let the client's error cases end on our side */
	return 0;
}

/* ---- client ---- */

static void post_atomic(struct conn *c, enum ibv_wr_opcode op, uint64_t id,
			int slot, uint64_t raddr, uint32_t rkey,
			uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)&c->sink[slot], 8, c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rv;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	rv = ibv_post_send(c->id->qp, &wr, &bad);
	if (rv)
		DIE("post atomic %lu: %s", (unsigned long)id, strerror(rv));
}

static void expect(struct conn *c, uint64_t id, int opcode, int slot,
		   uint64_t orig)
{
	struct ibv_wc wc = next_wc(c);

	if (wc.wr_id != id || wc.status != IBV_WC_SUCCESS ||
	    (int)wc.opcode != opcode || c->sink[slot] != orig)
		DIE("wr %lu: status %s opcode %d value %lu; want wr %lu opcode %d value %lu",
		    (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
		    wc.opcode, (unsigned long)c->sink[slot], (unsigned long)id,
		    opcode, (unsigned long)orig);
}

static void connect_one(struct conn *c, const char *addr, const char *port,
			struct ibv_pd **pd)
{
	struct rdma_conn_param cp = cm_pair_param(true, NULL, 0);

	c->id = cm_pair_endpoint(addr, port, "create_ep");
	if (!*pd) {
		*pd = ibv_alloc_pd(c->id->verbs);
		if (!*pd)
			DIE("pd: %s", strerror(errno));
	}
	make_qp(c, *pd, atomic_ops);
	c->sink = aligned_alloc(64, NOUT * 8);
	c->mr = ibv_reg_mr(*pd, c->sink, NOUT * 8, IBV_ACCESS_LOCAL_WRITE);
	if (!c->sink || !c->mr)
		DIE("sink: %s", strerror(errno));
	cm_pair_connect(c->id, &cp, "connect");
	cm_pair_peer_data(c->id, &c->pi, sizeof(c->pi));
}

static void client_basic(struct conn *c)
{
	uint64_t w = c->pi.addr + W_BASIC;
	struct ibv_sge sge = { (uintptr_t)&c->sink[5], 8, c->mr->lkey };
	struct ibv_send_wr rd = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	post_atomic(c, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, w, c->pi.rkey, 5, 0);
	expect(c, 1, IBV_WC_FETCH_ADD, 0, 1000);
	post_atomic(c, IBV_WR_ATOMIC_CMP_AND_SWP, 2, 1, w, c->pi.rkey, 1005,
		    77);
	expect(c, 2, IBV_WC_COMP_SWAP, 1, 1005);
	/* A miss: the word stays 77, the value found comes back. */
	post_atomic(c, IBV_WR_ATOMIC_CMP_AND_SWP, 3, 2, w, c->pi.rkey, 1, 9);
	expect(c, 3, IBV_WC_COMP_SWAP, 2, 77);
	/* The extended verbs: fetch-and-add of 2^40, then a swap back. */
	ibv_wr_start(c->qx);
	c->qx->wr_flags = IBV_SEND_SIGNALED;
	c->qx->wr_id = 4;
	ibv_wr_atomic_fetch_add(c->qx, c->pi.rkey, w, 1ULL << 40);
	ibv_wr_set_sge(c->qx, c->mr->lkey, (uintptr_t)&c->sink[3], 8);
	c->qx->wr_id = 5;
	ibv_wr_atomic_cmp_swp(c->qx, c->pi.rkey, w, 77 + (1ULL << 40), 42);
	ibv_wr_set_sge(c->qx, c->mr->lkey, (uintptr_t)&c->sink[4], 8);
	if (ibv_wr_complete(c->qx))
		DIE("ibv_wr_complete: %s", strerror(errno));
	expect(c, 4, IBV_WC_FETCH_ADD, 3, 77);
	expect(c, 5, IBV_WC_COMP_SWAP, 4, 77 + (1ULL << 40));
	/* A READ sees what the atomics left. */
	rd.wr.rdma.remote_addr = w;
	rd.wr.rdma.rkey = c->pi.rkey;
	if (ibv_post_send(c->id->qp, &rd, &bad))
		DIE("post READ: %s", strerror(errno));
	expect(c, 9, IBV_WC_RDMA_READ, 5, 42);
	fprintf(stderr, "atomic_conn client: fetch-add, cmp-swap hit and miss, ibv_wr_atomic_*, READ back ok\n");
}

/* NADD fetch-and-adds of 1, NOUT in flight; every value recorded. */
static void *hammer(void *arg)
{
	struct conn *c = arg;
	uint64_t w = c->pi.addr + W_COUNTER;
	int posted = 0, done = 0;

	while (done < NADD) {
		while (posted < NADD && posted - done < NOUT) {
			post_atomic(c, IBV_WR_ATOMIC_FETCH_AND_ADD, posted,
				    posted % NOUT, w, c->pi.rkey, 1, 0);
			posted++;
		}
		struct ibv_wc wc = next_wc(c);

		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)done ||
		    wc.opcode != IBV_WC_FETCH_ADD)
			DIE("hammer wr %lu: %s (want wr %d in order)",
			    (unsigned long)wc.wr_id,
			    ibv_wc_status_str(wc.status), done);
		c->seen[done] = c->sink[done % NOUT];
		done++;
	}
	return NULL;
}

static void client_hammer(struct conn *a, struct conn *b)
{
	static uint8_t hit[2 * NADD];
	pthread_t ta, tb;
	int i;

	a->seen = calloc(NADD, 8);
	b->seen = calloc(NADD, 8);
	if (pthread_create(&ta, NULL, hammer, a) ||
	    pthread_create(&tb, NULL, hammer, b))
		DIE("pthread_create");
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	for (i = 0; i < 2 * NADD; i++) {
		uint64_t v = i < NADD ? a->seen[i] : b->seen[i - NADD];

		if (v >= 2 * NADD || hit[v]++)
			DIE("fetched value %lu %s", (unsigned long)v,
			    v >= 2 * NADD ? "out of range" : "seen twice");
	}
	fprintf(stderr, "atomic_conn client: 2 QPs x %d fetch-and-adds, %d in flight each: every value 0..%d seen once\n",
		NADD, NOUT, 2 * NADD - 1);
}

/* An atomic the server must refuse: REM_ACCESS_ERR, QP in error. */
static void client_refused(struct conn *c, const char *what, uint64_t raddr,
			   uint32_t rkey)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;

	post_atomic(c, IBV_WR_ATOMIC_FETCH_AND_ADD, 77, 0, raddr, rkey, 1, 0);
	wc = next_wc(c);
	if (wc.wr_id != 77 || wc.status != IBV_WC_REM_ACCESS_ERR)
		DIE("%s: wr %lu status %s, want IBV_WC_REM_ACCESS_ERR", what,
		    (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
	if (ibv_query_qp(c->id->qp, &qa, IBV_QP_STATE, &ia) ||
	    qa.qp_state != IBV_QPS_ERR)
		DIE("%s: QP not in error", what);
	fprintf(stderr, "atomic_conn client: %s -> IBV_WC_REM_ACCESS_ERR, QP in error\n",
		what);
}

static int client(const char *addr, const char *port)
{
	static struct conn c[NCONN];
	struct ibv_pd *pd = NULL;
	int i;

	cm_pair_role = "client";
	for (i = 0; i < NCONN; i++)
		connect_one(&c[i], addr, port, &pd);
	client_basic(&c[0]);
	client_hammer(&c[0], &c[1]);
	client_refused(&c[2], "no REMOTE_ATOMIC", c[2].pi.plain,
		       c[2].pi.plain_rkey);
	client_refused(&c[3], "misaligned", c[3].pi.addr + 4, c[3].pi.rkey);
	client_refused(&c[4], "out of bounds", c[4].pi.addr + REGION,
		       c[4].pi.rkey);
	for (i = 0; i < NCONN; i++)
		rdma_disconnect(c[i].id);
	return 0;
}

/* ---- -x: atomics refused locally where not enabled ---- */

static int local_refusal(void)
{
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = atomic_ops,
	};
	static struct conn c;
	static uint64_t sink[NOUT];
	struct ibv_sge sge = { (uintptr_t)sink, 8, 0 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
	}, *bad;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	int rv;

	cm_pair_role = "local";
	ctx = cm_pair_kiwi();
	if (ibv_query_device(ctx, &da) || da.atomic_cap != IBV_ATOMIC_NONE)
		DIE("atomic_cap %d with rfc7306_atomics off, want NONE",
		    da.atomic_cap);
	pd = ibv_alloc_pd(ctx);
	c.cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !c.cq)
		DIE("pd/cq: %s", strerror(errno));
	qa.pd = pd;
	qa.send_cq = qa.recv_cq = c.cq;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (qp || errno != EOPNOTSUPP)
		DIE("create_qp_ex with atomic ops: %s, want EOPNOTSUPP",
		    qp ? "created" : strerror(errno));
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ibv_create_qp_ex(ctx, &qa);
	if (!qp)
		DIE("create_qp_ex: %s", strerror(errno));
	c.mr = ibv_reg_mr(pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		DIE("reg_mr: %s", strerror(errno));
	sge.lkey = c.mr->lkey;
	wr.wr.atomic.remote_addr = 0x1000;
	wr.wr.atomic.rkey = 1;
	rv = ibv_post_send(qp, &wr, &bad);
	if (rv != EOPNOTSUPP)
		DIE("fetch-and-add: %d (%s), want EOPNOTSUPP", rv,
		    strerror(rv));
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	rv = ibv_post_send(qp, &wr, &bad);
	if (rv != EOPNOTSUPP)
		DIE("compare-and-swap: %d (%s), want EOPNOTSUPP", rv,
		    strerror(rv));
	fprintf(stderr, "atomic_conn local: atomic_cap NONE, atomics refused with EOPNOTSUPP (rfc7306_atomics off)\n");
	return 0;
}

/* -a: with rfc7306_atomics on, the device reports IBV_ATOMIC_HCA. */
static int cap_hca(void)
{
	struct ibv_context *ctx;
	struct ibv_device_attr da;

	cm_pair_role = "cap";
	ctx = cm_pair_kiwi();
	if (ibv_query_device(ctx, &da))
		DIE("no kiwi device");
	if (da.atomic_cap != IBV_ATOMIC_HCA)
		DIE("atomic_cap %d, want IBV_ATOMIC_HCA", da.atomic_cap);
	fprintf(stderr, "atomic_conn cap: atomic_cap HCA, max_qp_rd_atom %d, max_qp_init_rd_atom %d\n",
		da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	return 0;
}

int main(int argc, char **argv)
{
	int rv = cm_pair_main(argc, argv, server, client);

	if (rv >= 0)
		return rv;
	if (argc == 2 && !strcmp(argv[1], "-x"))
		return local_refusal();
	if (argc == 2 && !strcmp(argv[1], "-a"))
		return cap_hca();
	fprintf(stderr, "usage: atomic_conn -s|-c ADDR PORT | -x | -a\n");
	return 2;
}
