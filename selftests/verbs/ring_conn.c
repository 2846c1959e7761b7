// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ring_conn -- the mapped rings on a connected pair (run by
 * selftests/guest/datapath.sh in two network namespaces):
 *
 *	ring_conn -s ADDR PORT		server
 *	ring_conn -c ADDR PORT		client
 *
 * Both sides use ibv_create_qp_ex (send_ops_flags) and ibv_create_cq_ex
 * through rdma_cm.  Phase 1: the client posts one ibv_wr_* batch -- an
 * inline RDMA WRITE, an RDMA READ and a SEND -- and checks the three
 * completions and the data READ back; the server checks the SEND's
 * completion (cq_ex accessors) and the WRITE's data.  Phase 2: the
 * client corrupts the opcode of a WQE in its mapped send ring after
 * building it; the kernel must complete that WQE with
 * IBV_WC_LOC_QP_OP_ERR and fail the QP (the server sees its receive
 * flushed), with no kernel warning (the guest harness checks dmesg).
 * Exit status 0 on success; diagnostics on stderr.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/kiwi-abi.h>
#include <rdma/rdma_cma.h>

#include "cm_pair.h"

const char cm_pair_prog[] = "ring_conn";

struct side {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *qx;
	struct ibv_mr *mr;
	char buf[4096];
};

/* Next completion through the cq_ex interface, waiting up to 10 s. */
static void next_wc(struct side *s, uint64_t *wr_id, int *status, int *opcode,
		    uint32_t *byte_len)
{
	cm_pair_start_poll(s->cq, 10, "");
	*wr_id = s->cq->wr_id;
	*status = s->cq->status;
	*opcode = ibv_wc_read_opcode(s->cq);
	*byte_len = ibv_wc_read_byte_len(s->cq);
	if (ibv_wc_read_qp_num(s->cq) != s->id->qp->qp_num)
		DIE("completion for QP %u, ours is %u",
		    ibv_wc_read_qp_num(s->cq), s->id->qp->qp_num);
	ibv_end_poll(s->cq);	/* consumes just this one */
}

static void setup_qp(struct side *s)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64,
					  .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16,
				  .max_send_sge = 1, .max_recv_sge = 1,
				  .max_inline_data = 64 };
	struct ibv_cq *cq;

	s->pd = ibv_alloc_pd(s->id->verbs);
	s->cq = ibv_create_cq_ex(s->id->verbs, &ca);
	if (!s->pd || !s->cq)
		DIE("pd/cq_ex: %s", strerror(errno));
	cq = ibv_cq_ex_to_cq(s->cq);
	s->qx = cm_pair_qp(s->id, s->pd, cq, cq, cap,
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_READ);
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

static int server(const char *addr, const char *port)
{
	static struct side s;
	struct rdma_conn_param cp;
	struct rdma_cm_id *listen;
	struct cm_pair_region pi;
	uint64_t wr_id;
	uint32_t len;
	int st, op;

	cm_pair_role = "server";
	listen = cm_pair_listen(addr, port, 1);
	s.id = cm_pair_request(listen, "get_request");
	setup_qp(&s);
	strcpy(s.buf + 2048, "server-data-1234");
	post_recv(&s, 1, 1024);
	post_recv(&s, 2, 1536);
	pi = (struct cm_pair_region){ (uintptr_t)s.buf, s.mr->rkey, 0 };
	cp = cm_pair_param(false, &pi, sizeof(pi));
	cm_pair_accept(s.id, &cp, "accept");

	next_wc(&s, &wr_id, &st, &op, &len);
	if (wr_id != 1 || st != IBV_WC_SUCCESS || op != IBV_WC_RECV || len != 5)
		DIE("recv: wr_id %lu status %d opcode %d len %u",
		    (unsigned long)wr_id, st, op, len);
	if (memcmp(s.buf + 1024, "ping!", 5) || strcmp(s.buf, "written-inline"))
		DIE("data: recv '%.5s', written '%.15s'", s.buf + 1024, s.buf);
	fprintf(stderr, "ring_conn server: phase 1 ok (SEND + inline WRITE)\n");

	/* Phase 2: the client's bad WQE fails both QPs; ours flushes. */
	next_wc(&s, &wr_id, &st, &op, &len);
	if (wr_id != 2 || st == IBV_WC_SUCCESS)
		DIE("phase 2: wr_id %lu status %d", (unsigned long)wr_id, st);
	fprintf(stderr, "ring_conn server: phase 2 ok (receive %s)\n",
		ibv_wc_status_str(st));
	return 0;
}

/* The mapped send ring slot holding a WQE with this wr_id, or NULL. */
static struct kiwi_usqe *find_wqe(uint64_t wr_id)
{
	FILE *f = fopen("/proc/self/maps", "r");
	struct kiwi_usqe *found = NULL;
	char line[512];

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long a, b, off;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx %*s %lx", &a, &b, &off) != 3)
			continue;
		/* Every stride is a multiple of 16 bytes. */
		for (a += KIWI_RING_CTL_SIZE; a + sizeof(*found) <= b; a += 16)
			if (((struct kiwi_usqe *)a)->wr_id == wr_id) {
				found = (void *)a;
				break;
			}
	}
	if (f)
		fclose(f);
	return found;
}

static int client(const char *addr, const char *port)
{
	static struct side s;
	struct rdma_conn_param cp = cm_pair_param(true, NULL, 0);
	struct cm_pair_region pi;
	static char text[] = "written-inline";
	struct kiwi_usqe *w;
	uint64_t wr_id, raddr;
	uint32_t len, rkey;
	int st, op, i;
	const int want_op[] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
				IBV_WC_SEND };

	cm_pair_role = "client";
	s.id = cm_pair_endpoint(addr, port, "create_ep");
	setup_qp(&s);
	strcpy(s.buf, "ping!");
	cm_pair_connect(s.id, &cp, "connect");
	cm_pair_peer_data(s.id, &pi, sizeof(pi));
	raddr = pi.addr;
	rkey = pi.rkey;

	/* Phase 1: one batch, one doorbell at most. */
	ibv_wr_start(s.qx);
	s.qx->wr_flags = IBV_SEND_SIGNALED;
	s.qx->wr_id = 10;
	ibv_wr_rdma_write(s.qx, rkey, raddr);
	ibv_wr_set_inline_data(s.qx, text, sizeof(text));
	s.qx->wr_id = 11;
	ibv_wr_rdma_read(s.qx, rkey, raddr + 2048);
	ibv_wr_set_sge(s.qx, s.mr->lkey, (uintptr_t)s.buf + 512, 17);
	s.qx->wr_id = 12;
	ibv_wr_send(s.qx);
	ibv_wr_set_sge(s.qx, s.mr->lkey, (uintptr_t)s.buf, 5);
	if (ibv_wr_complete(s.qx))
		DIE("wr_complete: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		next_wc(&s, &wr_id, &st, &op, &len);
		if (wr_id != 10u + i || st != IBV_WC_SUCCESS || op != want_op[i])
			DIE("completion %d: wr_id %lu status %s opcode %d", i,
			    (unsigned long)wr_id, ibv_wc_status_str(st), op);
	}
	if (strcmp(s.buf + 512, "server-data-1234"))
		DIE("READ brought '%.17s'", s.buf + 512);
	fprintf(stderr, "ring_conn client: phase 1 ok (WRITE, READ, SEND)\n");

	/* Phase 2: garble the opcode of a built, unpublished WQE. */
	ibv_wr_start(s.qx);
	s.qx->wr_id = 0x6b69776936363636ull;
	ibv_wr_send(s.qx);
	ibv_wr_set_sge(s.qx, s.mr->lkey, (uintptr_t)s.buf, 5);
	w = find_wqe(s.qx->wr_id);
	if (!w)
		DIE("WQE not found in the mapped ring");
	w->opcode = 0xee;
	w->num_sge = 0xff;
	if (ibv_wr_complete(s.qx))
		DIE("wr_complete (phase 2): %s", strerror(errno));
	next_wc(&s, &wr_id, &st, &op, &len);
	if (wr_id != 0x6b69776936363636ull || st != IBV_WC_LOC_QP_OP_ERR)
		DIE("bad WQE completed: wr_id %#lx status %s",
		    (unsigned long)wr_id, ibv_wc_status_str(st));
	fprintf(stderr, "ring_conn client: phase 2 ok (bad WQE -> %s)\n",
		ibv_wc_status_str(st));
	return 0;
}

int main(int argc, char **argv)
{
	int rv = cm_pair_main(argc, argv, server, client);

	if (rv >= 0)
		return rv;
	fprintf(stderr, "usage: ring_conn -s|-c ADDR PORT\n");
	return 2;
}
