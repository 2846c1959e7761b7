// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Mapped rings (Documentation/rings.rst) without a connection: posting
 * receives and polling make no system call (checked under a seccomp
 * filter that kills the process on any), WRs posted to a QP in error are
 * flushed through the rings, extended send posting (ibv_wr_*) and
 * extended CQ polling (ibv_start_poll & co.), CQ overflow, and rings
 * corrupted on purpose by writing the mapped memory directly.
 */
#include "kv.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[4096];
};

static void setup(struct env *e, int cqe)
{
	struct ibv_qp_init_attr ia;

	e->ctx = kv_open();
	e->pd = kv_alloc_pd(e->ctx);
	e->cq = kv_create_cq(e->ctx, cqe);
	ia = kv_rc_attr(e->cq);
	e->qp = ibv_create_qp(e->pd, &ia);
	ASSERT_NONNULL(e->qp);
	e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf),
			   IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(e->mr);
}

static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
}

static int post_recv(struct env *e, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

static int post_send(struct env *e, uint64_t wr_id, enum ibv_wr_opcode op)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf, .length = 16, .lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(e->qp, &wr, &bad);
}

/* Polls until n completions arrived (or 5 s passed); returns the count. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	double end = kv_now() + 5;
	int got = 0;

	while (got < n && kv_now() < end) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (!r)
			usleep(1000);
	}
	return got;
}

/*
 * Runs fn(arg) in a child that any system call kills (SIGSYS): only
 * exit_group is allowed.  Returns fn's result (0..255), or -1 if the
 * child was killed, i.e. fn made a system call.
 */
static int without_syscalls(int (*fn)(void *), void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
			_exit(200);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -2;
	if (WIFSIGNALED(st)) {
		TH_LOG("child killed by signal %d (SIGSYS = a system call)",
		       WTERMSIG(st));
		return -1;
	}
	return WEXITSTATUS(st);
}

static int call_getppid(void *arg)
{
	(void)arg;
	return getppid() > 0 ? 0 : 1;
}

static int post_4_recvs(void *arg)
{
	struct env *e = arg;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 4; i++)
		if (post_recv(e, 100 + i))
			return 10 + i;
	/* Nothing completed yet: the CQ is empty. */
	return ibv_poll_cq(e->cq, 1, &wc) == 0 ? 0 : 20;
}

static int poll_4_flushed(void *arg)
{
	struct env *e = arg;
	struct ibv_wc wc[8];
	int n = 0, i, spins = 0;

	/* Busy-poll: even sleeping would be a system call. */
	while (n < 4 && spins++ < 100000000) {
		int r = ibv_poll_cq(e->cq, 8 - n, wc + n);

		if (r < 0)
			return 30;
		n += r;
	}
	if (n != 4)
		return 40 + n;
	for (i = 0; i < 4; i++)
		if (wc[i].wr_id != 100u + i ||
		    wc[i].status != IBV_WC_WR_FLUSH_ERR ||
		    wc[i].opcode != IBV_WC_RECV ||
		    wc[i].qp_num != e->qp->qp_num)
			return 50 + i;
	return 0;
}

TEST(post_recv_and_poll_make_no_syscall)
{
	static struct env e;

	setup(&e, 64);
	/* The filter itself works: a plain getpid() is fatal. */
	EXPECT_EQ(without_syscalls(call_getppid, NULL), -1);
	EXPECT_EQ(without_syscalls(post_4_recvs, &e), 0);
	/* The posts reached the kernel through the ring: flushed on error. */
	to_err(e.qp);
	EXPECT_EQ(without_syscalls(poll_4_flushed, &e), 0);
}

static int post_srq(void *arg)
{
	struct ibv_srq *srq = arg;
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;
	int i;

	for (i = 0; i < 8; i++)
		if (ibv_post_srq_recv(srq, &wr, &bad))
			return 10 + i;
	/* The ring holds 8: the ninth does not fit (still no syscall). */
	if (ibv_post_srq_recv(srq, &wr, &bad) != ENOMEM || bad != &wr)
		return 20;
	return 0;
}

TEST(post_srq_recv_makes_no_syscall)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);

	ASSERT_NONNULL(srq);
	EXPECT_EQ(without_syscalls(post_srq, srq), 0);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

TEST(post_send_unconnected_enotconn)
{
	static struct env e;

	setup(&e, 64);
	EXPECT_ERRNO(post_send(&e, 1, IBV_WR_SEND), ENOTCONN);
}

TEST(send_and_recv_in_error_are_flushed)
{
	static struct env e;
	struct ibv_wc wc[4];

	setup(&e, 64);
	to_err(e.qp);
	EXPECT_EQ(post_send(&e, 7, IBV_WR_RDMA_WRITE), 0);
	EXPECT_EQ(post_recv(&e, 8), 0);
	ASSERT_EQ(poll_n(e.cq, wc, 2), 2);
	EXPECT_EQ(wc[0].wr_id, 7);
	EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(wc[1].wr_id, 8);
	EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	EXPECT_EQ(ibv_poll_cq(e.cq, 4, wc), 0);
}

TEST(unsupported_send_opcodes)
{
	static struct env e;

	setup(&e, 64);
	to_err(e.qp);
	EXPECT_ERRNO(post_send(&e, 1, IBV_WR_SEND_WITH_IMM), EOPNOTSUPP);
	EXPECT_ERRNO(post_send(&e, 1, IBV_WR_ATOMIC_FETCH_AND_ADD),
		     EOPNOTSUPP);
}

/* ------------------------------------------------------- extended verbs */

static struct ibv_qp *create_qp_ex(struct env *e, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd, .send_ops_flags = ops,
	};

	return ibv_create_qp_ex(e->ctx, &ia);
}

TEST(qp_ex_rejects_immediate_and_atomics)
{
	static struct env e;

	setup(&e, 64);
	EXPECT_FAILS_WITH(create_qp_ex(&e, IBV_QP_EX_WITH_SEND |
				       IBV_QP_EX_WITH_SEND_WITH_IMM),
			  EOPNOTSUPP);
	EXPECT_FAILS_WITH(create_qp_ex(&e, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM),
			  EOPNOTSUPP);
	EXPECT_FAILS_WITH(create_qp_ex(&e, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP),
			  EOPNOTSUPP);
}

TEST(wr_api_posts_and_flushes)
{
	static struct env e;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[8];
	char data[32] = "inline";
	struct ibv_sge two[2] = {
		{ (uintptr_t)e.buf, 8, 0 }, { (uintptr_t)e.buf + 8, 8, 0 },
	};

	setup(&e, 64);
	qp = create_qp_ex(&e, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
			  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ);
	ASSERT_NONNULL(qp);
	qx = ibv_qp_to_qp_ex(qp);
	ASSERT_NONNULL(qx);
	two[0].lkey = two[1].lkey = e.mr->lkey;

	/* Unconnected: the batch fails as a whole. */
	ibv_wr_start(qx);
	qx->wr_id = 1;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, e.mr->lkey, (uintptr_t)e.buf, 8);
	EXPECT_ERRNO(ibv_wr_complete(qx), ENOTCONN);

	to_err(qp);
	/* Four WQEs in one batch, one doorbell. */
	ibv_wr_start(qx);
	qx->wr_id = 11;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge_list(qx, 2, two);
	qx->wr_id = 12;
	ibv_wr_rdma_write(qx, 0x1234, 0x5000);
	ibv_wr_set_inline_data(qx, data, sizeof(data));
	qx->wr_id = 13;
	ibv_wr_rdma_read(qx, 0x1234, 0x6000);
	ibv_wr_set_sge(qx, e.mr->lkey, (uintptr_t)e.buf, 64);
	qx->wr_id = 14;
	ibv_wr_send_inv(qx, 0x4321);
	ibv_wr_set_sge(qx, e.mr->lkey, (uintptr_t)e.buf, 4);
	EXPECT_EQ(ibv_wr_complete(qx), 0);
	ASSERT_EQ(poll_n(e.cq, wc, 4), 4);
	EXPECT_EQ(wc[0].wr_id, 11);
	EXPECT_EQ(wc[0].opcode, IBV_WC_SEND);
	EXPECT_EQ(wc[1].wr_id, 12);
	EXPECT_EQ(wc[1].opcode, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(wc[2].wr_id, 13);
	EXPECT_EQ(wc[2].opcode, IBV_WC_RDMA_READ);
	EXPECT_EQ(wc[3].wr_id, 14);
	EXPECT_EQ(wc[3].status, IBV_WC_WR_FLUSH_ERR);

	/* Aborted: nothing posted. */
	ibv_wr_start(qx);
	qx->wr_id = 21;
	ibv_wr_send(qx);
	ibv_wr_abort(qx);
	/* Bad batch (inline too long, READ with two SGEs): nothing posted. */
	ibv_wr_start(qx);
	qx->wr_id = 22;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, e.buf, 4096);
	EXPECT_ERRNO(ibv_wr_complete(qx), EINVAL);
	ibv_wr_start(qx);
	qx->wr_id = 23;
	ibv_wr_rdma_read(qx, 1, 2);
	ibv_wr_set_sge_list(qx, 2, two);
	EXPECT_ERRNO(ibv_wr_complete(qx), EINVAL);
	/* An opcode iWARP lacks fails the batch. */
	ibv_wr_start(qx);
	qx->wr_id = 24;
	ibv_wr_send_imm(qx, 0);
	EXPECT_ERRNO(ibv_wr_complete(qx), EOPNOTSUPP);
	usleep(100000);
	EXPECT_EQ(ibv_poll_cq(e.cq, 8, wc), 0);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST(cq_ex_polling)
{
	static struct env e;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_qp_init_attr ia;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_cq_ex *cqx;
	int i, n = 0;

	e.ctx = kv_open();
	e.pd = kv_alloc_pd(e.ctx);
	ca.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	EXPECT_FAILS_WITH(ibv_create_cq_ex(e.ctx, &ca), EOPNOTSUPP);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqx = ibv_create_cq_ex(e.ctx, &ca);
	ASSERT_NONNULL(cqx);
	e.cq = ibv_cq_ex_to_cq(cqx);
	EXPECT_ERRNO(ibv_start_poll(cqx, &pa), ENOENT);

	ia = kv_rc_attr(e.cq);
	e.qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(e.qp);
	e.mr = ibv_reg_mr(e.pd, e.buf, sizeof(e.buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(e.mr);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(post_recv(&e, 300 + i), 0);
	to_err(e.qp);
	usleep(100000);

	ASSERT_EQ(ibv_start_poll(cqx, &pa), 0);
	do {
		EXPECT_EQ(cqx->wr_id, 300u + n);
		EXPECT_EQ(cqx->status, IBV_WC_WR_FLUSH_ERR);
		EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
		EXPECT_EQ(ibv_wc_read_qp_num(cqx), e.qp->qp_num);
		EXPECT_EQ(ibv_wc_read_byte_len(cqx), 0);
		EXPECT_EQ(ibv_wc_read_wc_flags(cqx), 0);
		EXPECT_EQ(ibv_wc_read_src_qp(cqx), 0);
		EXPECT_EQ(ibv_wc_read_vendor_err(cqx), 0);
		n++;
	} while (ibv_next_poll(cqx) == 0);
	ibv_end_poll(cqx);
	EXPECT_EQ(n, 3);
	/* All consumed. */
	EXPECT_ERRNO(ibv_start_poll(cqx, &pa), ENOENT);
	EXPECT_EQ(ibv_destroy_qp(e.qp), 0);
	EXPECT_EQ(ibv_destroy_cq(e.cq), 0);
}

/* ------------------------------------------------------ notification */

/* Whether a completion event arrives on the channel within ms. */
static bool cq_event(struct ibv_comp_channel *ch, struct ibv_cq *want,
		     int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;

	if (poll(&pfd, 1, ms) != 1)
		return false;
	if (ibv_get_cq_event(ch, &cq, &cq_ctx))
		return false;
	ibv_ack_cq_events(cq, 1);
	return cq == want;
}

TEST(cq_arming_with_channel)
{
	static struct env e;
	struct ibv_comp_channel *ch;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc[4];

	e.ctx = kv_open();
	e.pd = kv_alloc_pd(e.ctx);
	ch = ibv_create_comp_channel(e.ctx);
	ASSERT_NONNULL(ch);
	e.cq = ibv_create_cq(e.ctx, 16, NULL, ch, 0);
	ASSERT_NONNULL(e.cq);
	ia = kv_rc_attr(e.cq);
	e.qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(e.qp);
	e.mr = ibv_reg_mr(e.pd, e.buf, sizeof(e.buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(e.mr);

	/* Solicited-only arming fires for an error completion. */
	ASSERT_EQ(post_recv(&e, 1), 0);
	ASSERT_EQ(ibv_req_notify_cq(e.cq, 1), 0);
	EXPECT_FALSE(cq_event(ch, e.cq, 100));	/* nothing completed yet */
	to_err(e.qp);
	EXPECT_TRUE(cq_event(ch, e.cq, 5000));
	EXPECT_EQ(poll_n(e.cq, wc, 1), 1);
	/* Not re-armed: a further completion raises no event ... */
	ASSERT_EQ(post_recv(&e, 2), 0);
	EXPECT_EQ(poll_n(e.cq, wc, 1), 1);
	EXPECT_FALSE(cq_event(ch, e.cq, 200));
	/* ... and one event per arming, however many completions follow. */
	ASSERT_EQ(ibv_req_notify_cq(e.cq, 0), 0);
	ASSERT_EQ(post_recv(&e, 3), 0);
	ASSERT_EQ(post_recv(&e, 4), 0);
	EXPECT_TRUE(cq_event(ch, e.cq, 5000));
	EXPECT_EQ(poll_n(e.cq, wc, 2), 2);
	EXPECT_FALSE(cq_event(ch, e.cq, 200));
	EXPECT_EQ(ibv_destroy_qp(e.qp), 0);
	EXPECT_EQ(ibv_destroy_cq(e.cq), 0);
	EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* ---------------------------------------------------------- overflow */

/* Waits up to 5 s for an async event of the given type. */
static bool wait_async(struct ibv_context *ctx, enum ibv_event_type type)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	double end = kv_now() + 5;

	while (kv_now() < end) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			return false;
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return true;
	}
	return false;
}

TEST(cq_overflow_reported_not_overwritten)
{
	static struct env e;
	struct ibv_wc wc[16];
	int i;

	setup(&e, 4);
	ASSERT_EQ(e.cq->cqe, 4);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(post_recv(&e, i), 0);
	to_err(e.qp);	/* eight flush completions for four slots */
	EXPECT_TRUE(wait_async(e.ctx, IBV_EVENT_CQ_ERR));
	ASSERT_EQ(ibv_poll_cq(e.cq, 16, wc), 4);
	for (i = 0; i < 4; i++)	/* the oldest survive, untouched */
		EXPECT_EQ(wc[i].wr_id, i);
}

/* ------------------------------------------------- corrupted rings */

/*
 * The mappings of the uverbs device in this process, from
 * /proc/self/maps: start address and file offset, in map order.
 */
struct umap {
	uintptr_t start;
	unsigned long off;
	size_t len;
};

static int uverbs_maps(struct umap *m, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long a, b, off;

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %*s %lx", &a, &b, &off) != 3)
			continue;
		m[n].start = a;
		m[n].off = off;
		m[n].len = b - a;
		n++;
	}
	fclose(f);
	return n;
}

/* The mapping at the highest offset created by fn: the QP's RQ ring. */
static struct umap newest_map(int before_n, const struct umap *before,
			      const struct umap *after, int after_n, int nth)
{
	struct umap found[8];
	int n = 0, i, j;

	for (i = 0; i < after_n; i++) {
		bool old = false;

		for (j = 0; j < before_n; j++)
			old |= before[j].off == after[i].off;
		if (!old && n < 8)
			found[n++] = after[i];
	}
	/* Sort by offset: the kernel hands out offsets in creation order. */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (found[j].off < found[i].off) {
				struct umap t = found[i];

				found[i] = found[j];
				found[j] = t;
			}
	if (nth >= n)
		FAIL("expected %d new ring mappings, found %d", nth + 1, n);
	return found[nth];
}

static void create_and_find_rings(struct env *e, struct kiwi_ring_ctl **sq,
				  struct kiwi_ring_ctl **rq)
{
	struct umap before[32], after[32];
	struct ibv_qp_init_attr ia;
	int nb, na;

	e->ctx = kv_open();
	e->pd = kv_alloc_pd(e->ctx);
	e->cq = kv_create_cq(e->ctx, 64);
	e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(e->mr);
	nb = uverbs_maps(before, 32);
	ia = kv_rc_attr(e->cq);
	e->qp = ibv_create_qp(e->pd, &ia);
	ASSERT_NONNULL(e->qp);
	na = uverbs_maps(after, 32);
	*sq = (void *)newest_map(nb, before, after, na, 0).start;
	*rq = (void *)newest_map(nb, before, after, na, 1).start;
}

TEST(corrupt_rq_index_is_clamped)
{
	static struct env e;
	struct kiwi_ring_ctl *sq, *rq;
	struct ibv_wc wc[64];
	int n;

	create_and_find_rings(&e, &sq, &rq);
	ASSERT_EQ(post_recv(&e, 5), 0);
	EXPECT_EQ(rq->prod, 1);	/* really the RQ ring */
	/* Claim four billion receives, and garbage in the next slots. */
	rq->prod = 0xfffffff0u;
	memset((char *)rq + KIWI_RING_CTL_SIZE + 32, 0xa5, 32 * 3);
	to_err(e.qp);
	usleep(200000);
	/* The flush is bounded by the ring (16 slots), no more. */
	n = ibv_poll_cq(e.cq, 64, wc);
	TH_LOG("flush after a corrupted RQ index: %d completions", n);
	EXPECT_GE(n, 1);
	EXPECT_LE(n, 16);
	EXPECT_EQ(wc[0].wr_id, 5);
	EXPECT_EQ(ibv_destroy_qp(e.qp), 0);
}

TEST(corrupt_sq_in_error_is_bounded)
{
	static struct env e;
	struct kiwi_ring_ctl *sq, *rq;
	struct ibv_wc wc[64];
	int n, i;
	bool mine = false;

	create_and_find_rings(&e, &sq, &rq);
	to_err(e.qp);
	EXPECT_EQ(sq->qp_state, KIWI_UQP_ERROR);
	/* Garbage WQEs and a huge producer index ... */
	memset((char *)sq + KIWI_RING_CTL_SIZE, 0xff, 4096 - KIWI_RING_CTL_SIZE);
	sq->prod = 0x7fffffffu;
	/* ... then a doorbell: posting a receive to a QP in error rings. */
	EXPECT_EQ(post_recv(&e, 77), 0);
	usleep(200000);
	n = ibv_poll_cq(e.cq, 64, wc);
	TH_LOG("flush after a corrupted SQ: %d completions", n);
	EXPECT_GE(n, 2);
	EXPECT_LE(n, 17);	/* a ring's worth (16) per doorbell at most */
	for (i = 0; i < n; i++)
		mine |= wc[i].wr_id == 77 && wc[i].opcode == IBV_WC_RECV;
	EXPECT_TRUE(mine);
	EXPECT_EQ(ibv_destroy_qp(e.qp), 0);
}

KT_MAIN()
