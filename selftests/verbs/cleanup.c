// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process that dies with verbs objects open leaves nothing behind:
 * `rdma res show DEV` counts return to the baseline.
 */
#include "kv.h"

static const char *const kinds[] = { "ctx", "pd", "cq", "qp", "mr", "srq" };
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void snapshot(long *v)
{
	unsigned int i;

	kv_res_counts(kinds, NKINDS, v);
	for (i = 0; i < NKINDS; i++)
		if (v[i] < 0)
			FAIL("cannot count %s objects with `rdma res show %s`",
			     kinds[i], kv_dev_name());
}

/* Opens a bit of everything, n times over. Returns 0 or an error. */
static int open_everything(int n)
{
	static char buf[16][8192];
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_context *ctx = kv_open();
		struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 32, NULL, ch, 0) : NULL;
		struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf[i % 16], sizeof(buf[0]),
						    IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_WRITE) : NULL;
		struct ibv_srq_init_attr sia = { .attr = { .max_wr = 8, .max_sge = 1 } };
		struct ibv_srq *srq = pd ? ibv_create_srq(pd, &sia) : NULL;
		struct ibv_qp_init_attr ia;
		struct ibv_qp *qp, *qp2;

		if (!ch || !pd || !cq || !mr || !srq)
			return 1;
		ia = kv_rc_attr(cq);
		qp = ibv_create_qp(pd, &ia);
		ia = kv_rc_attr(cq);
		ia.srq = srq;
		qp2 = ibv_create_qp(pd, &ia);
		if (!qp || !qp2)
			return 1;
		if (ibv_req_notify_cq(cq, 0))
			return 1;
	}
	return 0;
}

/* Teardown after process exit may be asynchronous: poll up to secs. */
static bool wait_baseline(const long *base, long *now, double secs)
{
	double deadline = kv_now() + secs;
	unsigned int i;
	bool same;

	for (;;) {
		snapshot(now);
		same = true;
		for (i = 0; i < NKINDS; i++)
			same &= now[i] == base[i];
		if (same || kv_now() > deadline)
			return same;
		usleep(200 * 1000);
	}
}

static void check_back_to(const long *base)
{
	long now[NKINDS];
	unsigned int i;

	if (!wait_baseline(base, now, 15))
		for (i = 0; i < NKINDS; i++)
			EXPECT_EQ(now[i], base[i]);
}

/* Child opens everything, reports readiness, then is killed. */
static void killed_child(int contexts, bool sigkill)
{
	long base[NKINDS], during[NKINDS];
	int p[2], go[2], st;
	char c = 0;
	pid_t pid;

	snapshot(base);
	ASSERT_EQ(pipe(p), 0);
	ASSERT_EQ(pipe(go), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		close(go[1]);
		c = open_everything(contexts) ? 'E' : 'R';
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		if (c != 'R')
			_exit(2);
		/* Wait for the parent's look at restrack (or SIGKILL). */
		if (read(go[0], &c, 1) < 0)
			_exit(4);
		_exit(0); /* exit without destroying anything */
	}
	close(p[1]);
	close(go[0]);
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, 'R');
	snapshot(during);
	TH_LOG("baseline ctx/pd/cq/qp/mr/srq = %ld/%ld/%ld/%ld/%ld/%ld, "
	       "with child %ld/%ld/%ld/%ld/%ld/%ld", base[0], base[1],
	       base[2], base[3], base[4], base[5], during[0], during[1],
	       during[2], during[3], during[4], during[5]);
	/* The child's objects are visible in restrack. */
	EXPECT_GE(during[1], base[1] + contexts);
	EXPECT_GE(during[3], base[3] + 2 * contexts);
	EXPECT_GE(during[4], base[4] + contexts);
	if (sigkill)
		ASSERT_EQ(kill(pid, SIGKILL), 0);
	else
		ASSERT_EQ(write(go[1], "x", 1), 1);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	if (sigkill) {
		EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	} else {
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	check_back_to(base);
}

TEST(sigkill_one_context)
{
	killed_child(1, true);
}

TEST(sigkill_many_contexts)
{
	killed_child(8, true);
}

TEST(exit_without_cleanup)
{
	killed_child(3, false);
}

KT_MAIN()
