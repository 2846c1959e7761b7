// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * qp_reconnect -- one QP, two connections (run by
 * selftests/guest/datapath.sh in two network namespaces):
 *
 *	qp_reconnect -s ADDR PORT	server
 *	qp_reconnect -c ADDR PORT	client
 *
 * Each side creates its QP with ibv_create_qp(), not rdma_create_qp(),
 * and hands it to rdma_cm by number (rdma_conn_param.qp_num; the iw_cm
 * finds it through the driver's iw_get_qp).  Per round, on a fresh
 * cm_id each time:
 *
 *   - QP to INIT (with remote access), receives posted, connected with
 *     responder_resources = initiator_depth = DEPTH[round];
 *   - each side SENDs the other its buffer's address and rkey, then
 *     posts DEPTH[round] RDMA READs at once (each an own piece of the
 *     peer's buffer, so the peer's inbound READ queue holds that many)
 *     and checks every byte, then a closing SEND each way;
 *   - disconnect, destroy the cm_id (the QP stays), the QP to RESET
 *     (retried while the connection is still letting go of it), its
 *     CQs drained.
 *
 * The second round asks for another depth than the first, so the QP's
 * inbound READ queue, sized to the IRD agreed at the first connection,
 * must be replaced (kmod/tx.c: kiwi_tx_irq_alloc()); a third round
 * goes back to the first depth.  Exit status 0 on success; diagnostics
 * on stderr.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm_pair.h"

const char cm_pair_prog[] = "qp_reconnect";

#define NROUNDS		3
#define NRECV		4
#define BUF		16384
#define PIECE		(BUF / 8)	/* one READ's bytes; DEPTH <= 8 */
#define WR_RECV		1000	/* + slot */
#define WR_READ		2000	/* + piece */

static const uint8_t depth[NROUNDS] = { 2, 6, 2 };

enum { M_INFO = 1, M_DONE };

struct msg {
	uint32_t kind;
	uint32_t rkey;
	uint64_t addr;
	uint32_t seed;
	uint32_t round;
};

static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;
static struct ibv_mr *mr, *mmr;
static char lbuf[BUF] __attribute__((aligned(4096)));	/* the peer reads */
static char rbuf[BUF] __attribute__((aligned(4096)));	/* we read into */
static struct msg msgs[NRECV];
static bool server_side;
static uint32_t ird[NROUNDS];	/* agreed, as ibv_query_qp() says */

static char pattern(uint32_t seed, size_t i)
{
	return (char)(seed * 131 + i * 7 + (i >> 8));
}

/* PD, CQs, the QP and the regions, once: every round reuses them. */
static void make_qp(struct ibv_context *ctx)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = sizeof(struct msg) },
	};

	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!pd || !scq || !rcq)
		DIE("pd/cq: %s", strerror(errno));
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		DIE("ibv_create_qp: %s", strerror(errno));
	mr = ibv_reg_mr(pd, lbuf, sizeof(lbuf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ);
	mmr = ibv_reg_mr(pd, msgs, sizeof(msgs), IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !mmr)
		DIE("reg_mr: %s", strerror(errno));
	fprintf(stderr, "qp_reconnect %s: QP %u from ibv_create_qp\n",
		cm_pair_role, qp->qp_num);
}

static void post_recv(int slot)
{
	struct ibv_sge sge = { (uintptr_t)&msgs[slot], sizeof(struct msg),
			       mmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV + slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		DIE("post_recv: %s", strerror(errno));
}

/* RESET (or new) -> INIT with remote access, receives posted. */
static void qp_init(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_WRITE };
	int i;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS))
		DIE("modify_qp INIT: %s", strerror(errno));
	for (i = 0; i < NRECV; i++)
		post_recv(i);
}

static struct ibv_wc next_wc(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc = cm_pair_wc(cq, 20, what);

	if (wc.status != IBV_WC_SUCCESS)
		DIE("%s: wr %lu status %s", what, (unsigned long)wc.wr_id,
		    ibv_wc_status_str(wc.status));
	return wc;
}

static void send_msg(const struct msg *m)
{
	struct ibv_sge sge = { (uintptr_t)m, sizeof(*m), 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		DIE("post SEND: %s", strerror(errno));
	wc = next_wc(scq, "SEND");
	if (wc.wr_id != 1 || wc.opcode != IBV_WC_SEND)
		DIE("SEND: completion wr %lu opcode %d",
		    (unsigned long)wc.wr_id, wc.opcode);
}

static struct msg recv_msg(uint32_t kind, uint32_t round)
{
	struct ibv_wc wc = next_wc(rcq, "receive");
	int slot = (int)wc.wr_id - WR_RECV;
	struct msg m;

	if (slot < 0 || slot >= NRECV || wc.byte_len != sizeof(m))
		DIE("receive: wr %lu, %u bytes", (unsigned long)wc.wr_id,
		    wc.byte_len);
	m = msgs[slot];
	if (m.kind != kind || m.round != round)
		DIE("message kind %u round %u, want %u round %u", m.kind,
		    m.round, kind, round);
	post_recv(slot);
	return m;
}

static struct ibv_mr *rmr;

/* DEPTH READs at once, one piece of the peer's buffer each, checked. */
static void reads(const struct msg *peer, uint32_t n, uint32_t round)
{
	struct ibv_send_wr wr[8], *bad;
	struct ibv_sge sge[8];
	uint32_t i;
	size_t b;

	memset(rbuf, 0, sizeof(rbuf));
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)rbuf + i * PIECE, PIECE,
					   rmr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = WR_READ + i, .sg_list = &sge[i],
			.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = peer->addr + i * PIECE;
		wr[i].wr.rdma.rkey = peer->rkey;
	}
	if (ibv_post_send(qp, wr, &bad))
		DIE("round %u: post %u READs: %s", round, n, strerror(errno));
	for (i = 0; i < n; i++) {
		struct ibv_wc wc = next_wc(scq, "READ");

		if (wc.wr_id != WR_READ + i || wc.opcode != IBV_WC_RDMA_READ)
			DIE("round %u: READ completion wr %lu, want %u",
			    round, (unsigned long)wc.wr_id, WR_READ + i);
	}
	for (b = 0; b < n * PIECE; b++)
		if (rbuf[b] != pattern(peer->seed, b))
			DIE("round %u: byte %zu read %#x, want %#x", round, b,
			    (unsigned char)rbuf[b],
			    (unsigned char)pattern(peer->seed, b));
}

/* The connection is gone: the QP may go back to RESET (and is drained). */
static void qp_reset(uint32_t round)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	double end = cm_pair_now() + 10;
	struct ibv_wc wc;

	while (ibv_modify_qp(qp, &a, IBV_QP_STATE)) {
		if (cm_pair_now() > end)
			DIE("round %u: modify_qp RESET: %s", round,
			    strerror(errno));
		usleep(10000);
	}
	/* The receives left were flushed before; nothing else is due. */
	while (ibv_poll_cq(rcq, 1, &wc) > 0)
		if (wc.status == IBV_WC_SUCCESS)
			DIE("round %u: a receive after the exchange", round);
	if (ibv_poll_cq(scq, 1, &wc) > 0)
		DIE("round %u: a send completion after the exchange (wr %lu %s)",
		    round, (unsigned long)wc.wr_id,
		    ibv_wc_status_str(wc.status));
}

/* What both sides do on a connection: exchange, read, close. */
static void exchange(struct rdma_cm_id *id, uint32_t round)
{
	uint32_t seed = round * 2 + server_side;
	struct msg m = { .kind = M_INFO, .rkey = mr->rkey,
			 .addr = (uintptr_t)lbuf, .seed = seed,
			 .round = round }, peer;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	size_t b;

	if (ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC,
			 &ia) || qa.qp_state != IBV_QPS_RTS)
		DIE("round %u: QP not RTS after the connection", round);
	/* Else the READ queue would not be replaced: no test of that. */
	ird[round] = qa.max_dest_rd_atomic;
	if (round && depth[round] != depth[round - 1] &&
	    ird[round] == ird[round - 1])
		DIE("round %u: IRD %u again for depth %u (was %u): not renegotiated",
		    round, ird[round], depth[round], depth[round - 1]);
	for (b = 0; b < BUF; b++)
		lbuf[b] = pattern(seed, b);
	send_msg(&m);
	peer = recv_msg(M_INFO, round);
	reads(&peer, depth[round], round);
	m.kind = M_DONE;
	send_msg(&m);
	recv_msg(M_DONE, round);
	/* Synchronous: returns with the DISCONNECTED event. */
	if (rdma_disconnect(id))
		DIE("round %u: disconnect: %s", round, strerror(errno));
	fprintf(stderr, "qp_reconnect %s: round %u: QP %u, depth %u (IRD %u): %u READs checked, SENDs both ways\n",
		cm_pair_role, round, qp->qp_num, depth[round], ird[round],
		depth[round]);
}

static struct rdma_conn_param conn_param(uint32_t round)
{
	struct rdma_conn_param cp = { .responder_resources = depth[round],
				      .initiator_depth = depth[round],
				      .retry_count = 7,
				      .qp_num = qp->qp_num };

	return cp;
}

/*
 * Before each round's connect or accept: the QP (and its receive
 * region) made on the first, on @id's device, and moved to INIT; the
 * round's connection parameters.
 */
static struct rdma_conn_param round_setup(struct rdma_cm_id *id,
					  uint32_t round)
{
	if (!qp) {
		make_qp(id->verbs);
		rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf),
				 IBV_ACCESS_LOCAL_WRITE);
		if (!rmr)
			DIE("reg_mr: %s", strerror(errno));
	}
	if (id->verbs != qp->context)
		DIE("round %u: another device context", round);
	qp_init();
	return conn_param(round);
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *listen, *id;
	uint32_t round;

	cm_pair_role = "server";
	server_side = true;
	listen = cm_pair_listen(addr, port, 2);
	for (round = 0; round < NROUNDS; round++) {
		struct rdma_conn_param cp;

		id = cm_pair_request(listen, "round %u: get_request", round);
		cp = round_setup(id, round);
		cm_pair_accept(id, &cp, "round %u: accept with QP %u", round,
			       qp->qp_num);
		exchange(id, round);
		rdma_destroy_id(id);
		qp_reset(round);
	}
	rdma_destroy_ep(listen);
	return 0;
}

static int client(const char *addr, const char *port)
{
	uint32_t round;

	cm_pair_role = "client";
	for (round = 0; round < NROUNDS; round++) {
		struct rdma_conn_param cp;
		struct rdma_cm_id *id;

		id = cm_pair_endpoint(addr, port, "round %u: create_ep", round);
		cp = round_setup(id, round);
		cm_pair_connect(id, &cp, "round %u: connect with QP %u", round,
				qp->qp_num);
		exchange(id, round);
		rdma_destroy_ep(id);
		qp_reset(round);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rv = cm_pair_main(argc, argv, server, client);

	if (rv >= 0)
		return rv;
	fprintf(stderr, "usage: qp_reconnect -s|-c ADDR PORT\n");
	return 2;
}
