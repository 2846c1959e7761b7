// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * mw_conn -- memory windows on connected pairs (run by
 * selftests/guest/datapath.sh in two network namespaces):
 *
 *	mw_conn -s ADDR PORT	server: owns the regions and windows
 *	mw_conn -H ADDR PORT	the same, then holds them until killed
 *	mw_conn -c ADDR PORT	client: reaches them through the windows
 *
 * The server binds windows on its side of each connection and tells the
 * client their STags in SEND messages; the client writes and reads
 * through them.  One connection per scenario (a refused access leaves
 * both QPs in error); the client names the scenario in its connect
 * private data.  Every region is registered without remote access: only
 * the windows grant it.
 *
 *  1 type 1 (ibv_bind_mw), VA-based: WRITE + READ back through it, data
 *    in place and nothing around it touched; the rkey's index stays and
 *    its key changes on every bind; ibv_dereg_mr of the region fails
 *    (EBUSY) while the window is bound; after a rebind elsewhere the new
 *    STag reads the new place and the old STag is refused
 *    (IBV_WC_REM_ACCESS_ERR, QP in error).
 *  2 type 2 (ibv_wr_bind_mw), zero-based: WRITE at offset 0, READ at 500,
 *    then a WRITE across the window's end: refused, nothing placed past
 *    it, both QPs in error.
 *  3 type 2 (ibv_post_send IBV_WR_BIND_MW), then IBV_WR_LOCAL_INV: a READ
 *    after it is refused.
 *  4 type 2, remote invalidation: the client's SEND with invalidate
 *    names the window; the server's receive says IBV_WC_WITH_INV and the
 *    STag; the (free again) window binds anew; the old STag is refused.
 *  5 bind in a region without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR.
 *  6 a window granting REMOTE_WRITE in a region without LOCAL_WRITE:
 *    IBV_WC_MW_BIND_ERR.
 *  7 a type 2 window is usable only from its QP's connection: a READ
 *    through it over a second connection (scenario 8, same PD) is
 *    refused, on its own connection it works.  Before it, a type 1 bind
 *    of length 0 unbinds a window, and its region deregisters.
 *  9 a type 2 window outlives its QP: bound on this connection and read
 *    through once, then the server disconnects and destroys the QP.  The
 *    window stays bound to the dead QP (as in rxe: nothing but
 *    ibv_dealloc_mw frees it), so ibv_dereg_mr of its region is still
 *    EBUSY; a READ of its STag over a new connection (scenario 10, same
 *    PD) is refused; then ibv_dealloc_mw and ibv_dereg_mr succeed.
 * The client also checks max_mw > 0 and IBV_DEVICE_MEM_WINDOW.  The
 * server exits with a type 1 and a type 2 window still bound in a
 * region it never deregisters: closing the device must free all three
 * (datapath.sh looks for leftover regions).
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
#include <rdma/rdma_cma.h>

#include "cm_pair.h"

const char cm_pair_prog[] = "mw_conn";

#define NSCEN		8	/* scenarios the client runs (8, 10: probes) */
#define NRECV		4
#define BUF		16384
#define WR_RECV		1000	/* + slot */

enum { M_INFO = 1, M_DONE };

struct msg {
	uint32_t kind;
	uint32_t rkey;
	uint32_t old_rkey;
	uint32_t pad;
	uint64_t addr;
	uint64_t len;
	uint64_t old_addr;
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *scq;		/* send completions */
	struct ibv_cq *rcq;		/* receive completions */
	struct ibv_qp_ex *qx;
	struct ibv_mr *mmr;		/* msgs */
	struct msg msgs[NRECV];
	struct ibv_wc last;		/* the last receive completion */
};

static struct ibv_pd *pd;

static void make_qp(struct conn *c)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = NRECV,
				  .max_send_sge = 1, .max_recv_sge = 1,
				  .max_inline_data = sizeof(struct msg) };
	int i;

	if (!pd) {
		pd = ibv_alloc_pd(c->id->verbs);
		if (!pd)
			DIE("pd: %s", strerror(errno));
	}
	c->scq = ibv_create_cq(c->id->verbs, 32, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->id->verbs, 32, NULL, NULL, 0);
	if (!c->scq || !c->rcq)
		DIE("cq: %s", strerror(errno));
	c->qx = cm_pair_qp(c->id, pd, c->scq, c->rcq, cap,
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
			   IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_READ |
			   IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV);
	c->mmr = ibv_reg_mr(pd, c->msgs, sizeof(c->msgs),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!c->mmr)
		DIE("qp_ex/msg mr: %s", strerror(errno));
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { (uintptr_t)&c->msgs[i],
				       sizeof(struct msg), c->mmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = WR_RECV + i,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->id->qp, &wr, &bad))
			DIE("post_recv: %s", strerror(errno));
	}
}

/* Send and receive completions apart: a reply may beat a SEND's. */
static struct ibv_wc next_wc(struct conn *c)
{
	return cm_pair_wc(c->scq, 20, "send");
}

static struct ibv_wc next_rwc(struct conn *c)
{
	return cm_pair_wc(c->rcq, 20, "receive");
}

/* The completion of send WR @id, which must succeed with @opcode. */
static void expect_ok(struct conn *c, uint64_t id, int opcode, const char *what)
{
	struct ibv_wc wc = next_wc(c);

	if (wc.wr_id != id || wc.status != IBV_WC_SUCCESS ||
	    (int)wc.opcode != opcode)
		DIE("%s: wr %lu status %s opcode %d; want wr %lu success opcode %d",
		    what, (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
		    wc.opcode, (unsigned long)id, opcode);
}

static void send_msg(struct conn *c, const struct msg *m)
{
	struct ibv_sge sge = { (uintptr_t)m, sizeof(*m), 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE }, *bad;

	if (ibv_post_send(c->id->qp, &wr, &bad))
		DIE("post SEND: %s", strerror(errno));
	expect_ok(c, 1, IBV_WC_SEND, "SEND");
}

/* The next message from the peer (its completion in c->last). */
static struct msg recv_msg(struct conn *c, uint32_t kind)
{
	struct ibv_wc wc = next_rwc(c);
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = wc.wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	struct msg m;
	int slot = (int)wc.wr_id - WR_RECV;

	if (wc.status != IBV_WC_SUCCESS || slot < 0 || slot >= NRECV)
		DIE("receive: wr %lu status %s", (unsigned long)wc.wr_id,
		    ibv_wc_status_str(wc.status));
	c->last = wc;
	m = c->msgs[slot];
	if (m.kind != kind)
		DIE("message kind %u, want %u", m.kind, kind);
	sge = (struct ibv_sge){ (uintptr_t)&c->msgs[slot], sizeof(m),
				c->mmr->lkey };
	if (ibv_post_recv(c->id->qp, &wr, &bad))
		DIE("repost recv: %s", strerror(errno));
	return m;
}

/*
 * Wait for the QP to be flushed: a receive completes in error (every
 * side keeps receives posted), then the QP is in ERR.
 */
static void wait_dead(struct conn *c, const char *what)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;

	do
		wc = next_rwc(c);
	while (wc.status == IBV_WC_SUCCESS);
	if (ibv_query_qp(c->id->qp, &qa, IBV_QP_STATE, &ia) ||
	    qa.qp_state != IBV_QPS_ERR)
		DIE("%s: QP not in error", what);
	fprintf(stderr, "mw_conn %s: %s -> QP in error (%s)\n", cm_pair_role,
		what, ibv_wc_status_str(wc.status));
}

/* ---- server ---- */

static char sbuf[BUF] __attribute__((aligned(4096)));

static struct ibv_mr *region(int access)
{
	struct ibv_mr *mr;

	memset(sbuf, 0, sizeof(sbuf));
	mr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), access);
	if (!mr)
		DIE("reg_mr: %s", strerror(errno));
	return mr;
}

static struct ibv_mw *window(enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, type);

	if (!mw)
		DIE("alloc_mw type %d: %s", type, strerror(errno));
	return mw;
}

static void bind1(struct conn *c, struct ibv_mw *mw, struct ibv_mr *mr,
		  uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = 100, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = access },
	};
	uint32_t old = mw->rkey;
	int rv = ibv_bind_mw(c->id->qp, mw, &b);

	if (rv)
		DIE("ibv_bind_mw: %s", strerror(rv));
	expect_ok(c, 100, IBV_WC_BIND_MW, "type 1 bind");
	if ((mw->rkey >> 8) != (old >> 8) || (mw->rkey & 0xff) == (old & 0xff))
		DIE("rkey %#x after bind, was %#x: want the same index, a new key",
		    mw->rkey, old);
}

/* Type 2 through ibv_wr_bind_mw; mw->rkey follows (the caller's job). */
static void bind2(struct conn *c, struct ibv_mw *mw, struct ibv_mr *mr,
		  uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = addr, .length = len,
				       .mw_access_flags = access };
	uint32_t rkey = ibv_inc_rkey(mw->rkey);

	ibv_wr_start(c->qx);
	c->qx->wr_id = 200;
	c->qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(c->qx, mw, rkey, &bi);
	if (ibv_wr_complete(c->qx))
		DIE("ibv_wr_bind_mw: %s", strerror(errno));
	expect_ok(c, 200, IBV_WC_BIND_MW, "type 2 bind");
	mw->rkey = rkey;
}

static void tell(struct conn *c, uint32_t rkey, uint64_t addr, uint64_t len,
		 uint32_t old_rkey, uint64_t old_addr)
{
	struct msg m = { .kind = M_INFO, .rkey = rkey, .old_rkey = old_rkey,
			 .addr = addr, .len = len, .old_addr = old_addr };

	send_msg(c, &m);
}

static void check_bytes(size_t from, size_t to, char want, const char *what)
{
	size_t i;

	for (i = from; i < to; i++)
		if (sbuf[i] != want)
			DIE("%s: byte %zu is %#x, want %#x", what, i,
			    (unsigned char)sbuf[i], (unsigned char)want);
}

static void release(struct ibv_mw *mw, struct ibv_mr *mr)
{
	if (ibv_dealloc_mw(mw))
		DIE("dealloc_mw: %s", strerror(errno));
	if (ibv_dereg_mr(mr))
		DIE("dereg_mr after dealloc_mw: %s", strerror(errno));
}

static void srv_type1(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_1);
	uint32_t old;
	int rv;

	bind1(c, mw, mr, (uintptr_t)sbuf + 4096, 4096,
	      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	tell(c, mw->rkey, (uintptr_t)sbuf + 4096, 4096, 0, 0);
	recv_msg(c, M_DONE);
	check_bytes(4096, 8192, 'W', "type 1 window");
	check_bytes(0, 4096, 0, "before the window");
	check_bytes(8192, BUF, 0, "after the window");
	memset(sbuf + 8192, 'S', 4096);
	old = mw->rkey;
	bind1(c, mw, mr, (uintptr_t)sbuf + 8192, 4096, IBV_ACCESS_REMOTE_READ);
	rv = ibv_dereg_mr(mr);
	if (rv != EBUSY)
		DIE("dereg_mr with a bound window: %d (%s), want EBUSY", rv,
		    strerror(rv));
	tell(c, mw->rkey, (uintptr_t)sbuf + 8192, 4096, old,
	     (uintptr_t)sbuf + 4096);
	wait_dead(c, "type 1: old STag refused");
	release(mw, mr);
	fprintf(stderr, "mw_conn server: type 1 bind, key rotation, dereg EBUSY while bound, dealloc ok\n");
}

static void srv_zero_based(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_2);

	bind2(c, mw, mr, (uintptr_t)sbuf + 100, 1000,
	      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
	      IBV_ACCESS_ZERO_BASED);
	tell(c, mw->rkey, 0, 1000, 0, 0);
	recv_msg(c, M_DONE);
	check_bytes(100, 1100, 'Z', "zero-based window");
	check_bytes(0, 100, 0, "before the window");
	wait_dead(c, "zero-based: WRITE across the end refused");
	check_bytes(1100, BUF, 0, "after the window");
	release(mw, mr);
	fprintf(stderr, "mw_conn server: type 2 zero-based, bounds enforced\n");
}

static void srv_local_inv(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_2);
	struct ibv_send_wr wr = { .wr_id = 300, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_send_wr inv = { .wr_id = 301, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED };

	memset(sbuf, 'L', 4096);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)sbuf, .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ };
	if (ibv_post_send(c->id->qp, &wr, &bad))
		DIE("post BIND_MW: %s", strerror(errno));
	expect_ok(c, 300, IBV_WC_BIND_MW, "IBV_WR_BIND_MW");
	mw->rkey = wr.bind_mw.rkey;
	tell(c, mw->rkey, (uintptr_t)sbuf, 4096, 0, 0);
	recv_msg(c, M_DONE);
	inv.invalidate_rkey = mw->rkey;
	if (ibv_post_send(c->id->qp, &inv, &bad))
		DIE("post LOCAL_INV: %s", strerror(errno));
	expect_ok(c, 301, IBV_WC_LOCAL_INV, "IBV_WR_LOCAL_INV");
	tell(c, mw->rkey, (uintptr_t)sbuf, 4096, 0, 0);
	wait_dead(c, "local invalidation: READ refused");
	release(mw, mr);
	fprintf(stderr, "mw_conn server: IBV_WR_BIND_MW, IBV_WR_LOCAL_INV\n");
}

static void srv_remote_inv(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_2);
	uint32_t old;

	memset(sbuf, 'R', 8192);
	bind2(c, mw, mr, (uintptr_t)sbuf, 4096, IBV_ACCESS_REMOTE_READ);
	tell(c, mw->rkey, (uintptr_t)sbuf, 4096, 0, 0);
	recv_msg(c, M_DONE);	/* the SEND with invalidate */
	if (!(c->last.wc_flags & IBV_WC_WITH_INV) ||
	    c->last.invalidated_rkey != mw->rkey)
		DIE("SEND with invalidate: flags %#x rkey %#x, want WITH_INV %#x",
		    c->last.wc_flags, c->last.invalidated_rkey, mw->rkey);
	old = mw->rkey;
	bind2(c, mw, mr, (uintptr_t)sbuf + 4096, 4096, IBV_ACCESS_REMOTE_READ);
	tell(c, mw->rkey, (uintptr_t)sbuf + 4096, 4096, old, (uintptr_t)sbuf);
	wait_dead(c, "remote invalidation: old STag refused");
	release(mw, mr);
	fprintf(stderr, "mw_conn server: SEND with invalidate of a window, rebind after\n");
}

/* A bind the region does not allow: IBV_WC_MW_BIND_ERR. */
static void srv_bind_refused(struct conn *c, int mr_access,
			     unsigned int mw_access, const char *what)
{
	struct ibv_mr *mr = region(mr_access);
	struct ibv_mw *mw = window(IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi = { .mr = mr, .addr = (uintptr_t)sbuf,
				       .length = 4096,
				       .mw_access_flags = mw_access };
	struct ibv_wc wc;

	ibv_wr_start(c->qx);
	c->qx->wr_id = 400;
	c->qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(c->qx, mw, ibv_inc_rkey(mw->rkey), &bi);
	if (ibv_wr_complete(c->qx))
		DIE("%s: ibv_wr_complete: %s", what, strerror(errno));
	wc = next_wc(c);
	if (wc.wr_id != 400 || wc.status != IBV_WC_MW_BIND_ERR)
		DIE("%s: wr %lu status %s, want IBV_WC_MW_BIND_ERR", what,
		    (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
	wait_dead(c, what);
	release(mw, mr);
}

/* A type 1 bind of length 0 unbinds; the region may go then. */
static void unbind_type1(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_1);
	struct ibv_mw_bind b = { .wr_id = 101,
				 .send_flags = IBV_SEND_SIGNALED };
	uint32_t old;
	int rv;

	bind1(c, mw, mr, (uintptr_t)sbuf, 4096, IBV_ACCESS_REMOTE_READ);
	old = mw->rkey;
	rv = ibv_bind_mw(c->id->qp, mw, &b);
	if (rv)
		DIE("ibv_bind_mw (unbind): %s", strerror(rv));
	expect_ok(c, 101, IBV_WC_BIND_MW, "type 1 unbind");
	if (mw->rkey == old)
		DIE("rkey %#x unchanged by the unbind", mw->rkey);
	if (ibv_dereg_mr(mr))
		DIE("dereg_mr after the unbind: %s", strerror(errno));
	if (ibv_dealloc_mw(mw))
		DIE("dealloc_mw: %s", strerror(errno));
}

/* Windows bound in a region, all left for the process exit. */
static void leave_bound(struct conn *c)
{
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);

	bind1(c, window(IBV_MW_TYPE_1), mr, (uintptr_t)sbuf, 4096,
	      IBV_ACCESS_REMOTE_READ);
	bind2(c, window(IBV_MW_TYPE_2), mr, (uintptr_t)sbuf + 4096, 4096,
	      IBV_ACCESS_REMOTE_WRITE);
}

static void srv_qp_bound(struct conn *c, struct rdma_cm_id *listen)
{
	struct rdma_conn_param cp = cm_pair_param(false, NULL, 0);
	struct conn probe = { 0 };
	struct ibv_mr *mr;
	struct ibv_mw *mw;

	/* Before the client hears anything: it disconnects when done. */
	unbind_type1(c);
	leave_bound(c);
	mr = region(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = window(IBV_MW_TYPE_2);

	memset(sbuf, 'Q', 4096);
	bind2(c, mw, mr, (uintptr_t)sbuf, 4096, IBV_ACCESS_REMOTE_READ);
	tell(c, mw->rkey, (uintptr_t)sbuf, 4096, 0, 0);
	/* The client's second connection, on the same PD. */
	probe.id = cm_pair_request(listen, "get_request (probe)");
	make_qp(&probe);
	cm_pair_accept(probe.id, &cp, "accept (probe)");
	wait_dead(&probe, "type 2 window from another QP refused");
	recv_msg(c, M_DONE);
	release(mw, mr);
	rdma_disconnect(probe.id);
	fprintf(stderr, "mw_conn server: type 2 window usable from its own QP only\n");
}

/*
 * The window's QP goes first: kiwi names the QP of a type 2 window by a
 * token that no later QP has, so the window keeps no QP alive and no
 * QP's memory is looked at for it; a READ over any other QP is refused.
 */
static void srv_qp_gone(struct conn *c, struct rdma_cm_id *listen)
{
	struct rdma_conn_param cp = cm_pair_param(false, NULL, 0);
	struct ibv_mr *mr = region(IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = window(IBV_MW_TYPE_2);
	struct conn probe = { 0 };
	int rv;

	memset(sbuf, 'G', 4096);
	bind2(c, mw, mr, (uintptr_t)sbuf, 4096, IBV_ACCESS_REMOTE_READ);
	tell(c, mw->rkey, (uintptr_t)sbuf, 4096, 0, 0);
	recv_msg(c, M_DONE);
	rdma_disconnect(c->id);		/* the QP must be closed to go */
	rdma_destroy_qp(c->id);
	c->qx = NULL;
	rv = ibv_dereg_mr(mr);
	if (rv != EBUSY)
		DIE("dereg_mr, window bound to a destroyed QP: %d (%s), want EBUSY",
		    rv, strerror(rv));
	/* The client connects again only now, on a QP of the same PD. */
	probe.id = cm_pair_request(listen, "get_request (probe)");
	make_qp(&probe);
	cm_pair_accept(probe.id, &cp, "accept (probe)");
	wait_dead(&probe, "type 2 window of a destroyed QP refused");
	release(mw, mr);
	rdma_disconnect(probe.id);
	fprintf(stderr, "mw_conn server: type 2 window outlives its QP, refused, dealloc and dereg ok\n");
}

static int server(const char *addr, const char *port, bool hold)
{
	struct rdma_conn_param cp = cm_pair_param(false, NULL, 0);
	struct rdma_cm_id *listen;
	int n;

	cm_pair_role = "server";
	listen = cm_pair_listen(addr, port, 4);
	for (n = 0; n < NSCEN; n++) {
		struct conn *c = calloc(1, sizeof(*c));
		uint32_t scen;

		if (!c)
			DIE("get_request: %s", strerror(errno));
		c->id = cm_pair_request(listen, "get_request");
		if (!c->id->event ||
		    c->id->event->param.conn.private_data_len < sizeof(scen))
			DIE("no scenario in the connect request");
		memcpy(&scen, c->id->event->param.conn.private_data,
		       sizeof(scen));
		make_qp(c);
		cm_pair_accept(c->id, &cp, "accept");
		switch (scen) {
		case 1: srv_type1(c); break;
		case 2: srv_zero_based(c); break;
		case 3: srv_local_inv(c); break;
		case 4: srv_remote_inv(c); break;
		case 5:
			srv_bind_refused(c, IBV_ACCESS_LOCAL_WRITE,
					 IBV_ACCESS_REMOTE_READ,
					 "region without MW_BIND");
			break;
		case 6:
			srv_bind_refused(c, IBV_ACCESS_MW_BIND,
					 IBV_ACCESS_REMOTE_WRITE,
					 "REMOTE_WRITE window, region not writable");
			break;
		case 7: srv_qp_bound(c, listen); break;
		case 9: srv_qp_gone(c, listen); break;
		default: DIE("scenario %u", scen);
		}
		/* Synchronous: it waits for the event, which comes once. */
		if (scen != 9)
			rdma_disconnect(c->id);
	}
	if (hold) {	/* abuse.sh unloads kiwi under us */
		fprintf(stderr, "mw_conn server: holding\n");
		for (;;)
			pause();
	}
	return 0;
}

/* ---- client ---- */

static char cbuf[BUF] __attribute__((aligned(4096)));
static struct ibv_mr *cmr;

static struct conn *connect_one(const char *addr, const char *port,
				uint32_t scen)
{
	struct rdma_conn_param cp = cm_pair_param(true, &scen, sizeof(scen));
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		DIE("create_ep: %s", strerror(errno));
	c->id = cm_pair_endpoint(addr, port, "create_ep");
	make_qp(c);
	if (!cmr) {
		cmr = ibv_reg_mr(pd, cbuf, sizeof(cbuf),
				 IBV_ACCESS_LOCAL_WRITE);
		if (!cmr)
			DIE("reg_mr: %s", strerror(errno));
	}
	cm_pair_connect(c->id, &cp, "connect (scenario %u)", scen);
	return c;
}

static void post_rw(struct conn *c, enum ibv_wr_opcode op, uint64_t id,
		    size_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)cbuf + off, len, cmr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		DIE("post %s: %s", op == IBV_WR_RDMA_READ ? "READ" : "WRITE",
		    strerror(errno));
}

static void read_ok(struct conn *c, uint64_t raddr, uint32_t rkey,
		    uint32_t len, char want, const char *what)
{
	uint32_t i;

	memset(cbuf + 8192, 0, len);
	post_rw(c, IBV_WR_RDMA_READ, 20, 8192, len, raddr, rkey);
	expect_ok(c, 20, IBV_WC_RDMA_READ, what);
	for (i = 0; i < len; i++)
		if (cbuf[8192 + i] != want)
			DIE("%s: byte %u read %#x, want %#x", what, i,
			    (unsigned char)cbuf[8192 + i], (unsigned char)want);
}

static void read_refused(struct conn *c, uint64_t raddr, uint32_t rkey,
			 const char *what)
{
	struct ibv_wc wc;

	post_rw(c, IBV_WR_RDMA_READ, 30, 8192, 64, raddr, rkey);
	wc = next_wc(c);
	if (wc.wr_id != 30 || wc.status != IBV_WC_REM_ACCESS_ERR)
		DIE("%s: wr %lu status %s, want IBV_WC_REM_ACCESS_ERR", what,
		    (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
	wait_dead(c, what);
}

static void done(struct conn *c)
{
	struct msg m = { .kind = M_DONE };

	send_msg(c, &m);
}

static void cli_type1(struct conn *c)
{
	struct msg m = recv_msg(c, M_INFO);

	memset(cbuf, 'W', 4096);
	post_rw(c, IBV_WR_RDMA_WRITE, 10, 0, 4096, m.addr, m.rkey);
	expect_ok(c, 10, IBV_WC_RDMA_WRITE, "WRITE through type 1");
	read_ok(c, m.addr, m.rkey, 4096, 'W', "READ back through type 1");
	done(c);
	m = recv_msg(c, M_INFO);
	read_ok(c, m.addr, m.rkey, 4096, 'S', "READ after the rebind");
	read_refused(c, m.old_addr, m.old_rkey, "type 1: STag before rebind");
}

static void cli_zero_based(struct conn *c)
{
	struct msg m = recv_msg(c, M_INFO);

	if (m.addr)
		DIE("zero-based window at %#lx", (unsigned long)m.addr);
	memset(cbuf, 'Z', 4096);
	post_rw(c, IBV_WR_RDMA_WRITE, 10, 0, 1000, 0, m.rkey);
	expect_ok(c, 10, IBV_WC_RDMA_WRITE, "WRITE at offset 0");
	read_ok(c, 500, m.rkey, 500, 'Z', "READ at offset 500");
	done(c);
	post_rw(c, IBV_WR_RDMA_WRITE, 11, 0, 200, 900, m.rkey);
	post_rw(c, IBV_WR_RDMA_READ, 12, 8192, 8, 0, m.rkey);
	wait_dead(c, "zero-based: WRITE across the end");
}

static void cli_local_inv(struct conn *c)
{
	struct msg m = recv_msg(c, M_INFO);

	read_ok(c, m.addr, m.rkey, 4096, 'L', "READ through IBV_WR_BIND_MW");
	done(c);
	m = recv_msg(c, M_INFO);
	read_refused(c, m.addr, m.rkey, "READ after LOCAL_INV");
}

static void cli_remote_inv(struct conn *c)
{
	struct msg m = recv_msg(c, M_INFO), d = { .kind = M_DONE };
	struct ibv_sge sge = { (uintptr_t)&d, sizeof(d), 0 };
	struct ibv_send_wr wr = { .wr_id = 40, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE }, *bad;

	read_ok(c, m.addr, m.rkey, 4096, 'R', "READ before remote invalidation");
	wr.invalidate_rkey = m.rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		DIE("post SEND_WITH_INV: %s", strerror(errno));
	expect_ok(c, 40, IBV_WC_SEND, "SEND with invalidate");
	m = recv_msg(c, M_INFO);
	read_ok(c, m.addr, m.rkey, 4096, 'R', "READ after the rebind");
	read_refused(c, m.old_addr, m.old_rkey, "invalidated STag");
}

static void cli_qp_bound(struct conn *c, const char *addr, const char *port)
{
	struct msg m = recv_msg(c, M_INFO);
	struct conn *probe = connect_one(addr, port, 8);

	read_refused(probe, m.addr, m.rkey, "type 2 window from another QP");
	read_ok(c, m.addr, m.rkey, 4096, 'Q', "type 2 window from its QP");
	done(c);
	rdma_disconnect(probe->id);
}

static void cli_qp_gone(struct conn *c, const char *addr, const char *port)
{
	struct msg m = recv_msg(c, M_INFO);
	struct conn *probe;

	read_ok(c, m.addr, m.rkey, 4096, 'G', "type 2 window before its QP goes");
	done(c);
	/* Accepted only once the server destroyed the window's QP. */
	probe = connect_one(addr, port, 10);
	read_refused(probe, m.addr, m.rkey, "type 2 window of a destroyed QP");
	rdma_disconnect(probe->id);
}

static void check_attrs(struct ibv_context *ctx)
{
	struct ibv_device_attr da;

	if (ibv_query_device(ctx, &da))
		DIE("query_device: %s", strerror(errno));
	if (da.max_mw <= 0 || !(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW))
		DIE("max_mw %d, cap flags %#x: want windows", da.max_mw,
		    da.device_cap_flags);
	fprintf(stderr, "mw_conn client: max_mw %d, IBV_DEVICE_MEM_WINDOW%s\n",
		da.max_mw, da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B ?
		", type 2B" : "");
}

static int client(const char *addr, const char *port)
{
	static const uint32_t scens[NSCEN] = { 1, 2, 3, 4, 5, 6, 7, 9 };
	uint32_t i, s;

	cm_pair_role = "client";
	for (i = 0; i < NSCEN; i++) {
		struct conn *c;

		s = scens[i];
		c = connect_one(addr, port, s);

		if (s == 1)
			check_attrs(c->id->verbs);
		switch (s) {
		case 1: cli_type1(c); break;
		case 2: cli_zero_based(c); break;
		case 3: cli_local_inv(c); break;
		case 4: cli_remote_inv(c); break;
		case 5: wait_dead(c, "server's bind without MW_BIND"); break;
		case 6: wait_dead(c, "server's bind beyond the region's rights"); break;
		case 7: cli_qp_bound(c, addr, port); break;
		case 9: cli_qp_gone(c, addr, port); break;
		}
		rdma_disconnect(c->id);
		fprintf(stderr, "mw_conn client: scenario %u ok\n", s);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(argv[2], argv[3], false);
	if (argc == 4 && !strcmp(argv[1], "-H"))
		return server(argv[2], argv[3], true);
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: mw_conn -s|-H|-c ADDR PORT\n");
	return 2;
}
