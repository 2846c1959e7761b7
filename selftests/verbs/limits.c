// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Resource limits: creating objects until failure must stop exactly at
 * the device attribute (max_qp, max_cq, max_mr, max_pd, max_srq) minus
 * what already exists on the device, with ENOMEM.
 *
 * Meant to run with small module parameters, e.g.
 *	modprobe kiwi max_qp=8 max_cq=8 max_mr=8 max_pd=8 max_srq=8
 * Limits above KIWI_LIMIT_MAX (default 4096) are skipped with a reason.
 */
#include "kv.h"

static long limit_cap(void)
{
	const char *s = getenv("KIWI_LIMIT_MAX");

	return s ? strtol(s, NULL, 0) : 4096;
}

/* The device attribute must equal the module parameter, if there is one. */
static void check_param(const char *param, int attr)
{
	char path[128];
	long v;

	if (strncmp(kv_dev_name(), KIWI_DEV_NAME_PREFIX,
		    strlen(KIWI_DEV_NAME_PREFIX)))
		return;
	snprintf(path, sizeof(path), "/sys/module/kiwi/parameters/%s", param);
	if (!kv_read_long(path, &v)) {
		EXPECT_FAIL("%s unreadable: kiwi module parameter %s missing",
			    path, param);
		return;
	}
	TH_LOG("module parameter %s=%ld, device attribute %d", param, v, attr);
	EXPECT_EQ(attr, v);
}

static long baseline(const char *kind)
{
	long n = kv_res_count(kind);

	if (n < 0)
		FAIL("cannot count %s objects with `rdma res show %s`", kind,
		     kv_dev_name());
	return n;
}

typedef void *(*make_fn)(void *arg);
typedef int (*free_fn)(void *obj);

/*
 * Creates objects until make() fails; checks the count and errno;
 * checks one more can be made after freeing one; frees all.
 */
static void exhaust(const char *kind, const char *param, int max,
		    make_fn make, free_fn destroy, void *arg)
{
	long existing, created = 0, expect, i;
	void **objs;
	void *o;
	int err;

	check_param(param, max);
	if (max <= 0)
		FAIL("device reports %s=%d", param, max);
	if (max > limit_cap())
		SKIP("%s=%d too large for an exhaustion test (load kiwi with a small %s=)",
		     param, max, param);
	existing = baseline(kind);
	expect = max - existing;
	TH_LOG("%s: limit %d, %ld already exist, expect %ld more", kind, max,
	       existing, expect);
	ASSERT_GE(expect, 1);
	objs = calloc(max + 2, sizeof(*objs));
	ASSERT_NONNULL(objs);
	for (;;) {
		errno = 0;
		o = make(arg);
		if (!o)
			break;
		objs[created++] = o;
		if (created > expect) {
			EXPECT_FAIL("created %ld %s objects, limit allows only %ld",
				    created, kind, expect);
			break;
		}
	}
	err = errno;
	TH_LOG("%s: created %ld, then errno %d (%s)", kind, created, err,
	       kt_errname(err));
	EXPECT_EQ(created, expect);
	if (!o)
		EXPECT_ERRNO(err, ENOMEM);
	EXPECT_EQ(kv_res_count(kind), existing + created);

	/* A freed slot can be reused. */
	if (created > 0) {
		ASSERT_EQ(destroy(objs[--created]), 0);
		o = make(arg);
		EXPECT_NONNULL(o);
		if (o)
			objs[created++] = o;
		errno = 0;
		EXPECT_NULL(make(arg));
	}
	for (i = created - 1; i >= 0; i--)
		EXPECT_EQ(destroy(objs[i]), 0);
	EXPECT_EQ(kv_res_count(kind), existing);
	free(objs);
}

static void *make_pd(void *ctx)
{
	return ibv_alloc_pd(ctx);
}

static int free_pd(void *pd)
{
	return ibv_dealloc_pd(pd);
}

TEST(limit_pd)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	exhaust("pd", "max_pd", a.max_pd, make_pd, free_pd, ctx);
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

static void *make_cq(void *ctx)
{
	return ibv_create_cq(ctx, 4, NULL, NULL, 0);
}

static int free_cq(void *cq)
{
	return ibv_destroy_cq(cq);
}

TEST(limit_cq)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	exhaust("cq", "max_cq", a.max_cq, make_cq, free_cq, ctx);
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

static char mr_buf[4096] __attribute__((aligned(4096)));

static void *make_mr(void *pd)
{
	return ibv_reg_mr(pd, mr_buf, sizeof(mr_buf), IBV_ACCESS_LOCAL_WRITE);
}

static int free_mr(void *mr)
{
	return ibv_dereg_mr(mr);
}

TEST(limit_mr)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct ibv_pd *pd;

	kv_query_device(ctx, &a);
	pd = kv_alloc_pd(ctx);
	exhaust("mr", "max_mr", a.max_mr, make_mr, free_mr, pd);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

struct qp_arg {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static void *make_qp(void *p)
{
	struct qp_arg *qa = p;
	struct ibv_qp_init_attr ia = kv_rc_attr(qa->cq);

	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	return ibv_create_qp(qa->pd, &ia);
}

static int free_qp(void *qp)
{
	return ibv_destroy_qp(qp);
}

TEST(limit_qp)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct qp_arg qa;

	kv_query_device(ctx, &a);
	qa.pd = kv_alloc_pd(ctx);
	qa.cq = kv_create_cq(ctx, 16);
	exhaust("qp", "max_qp", a.max_qp, make_qp, free_qp, &qa);
	EXPECT_EQ(ibv_destroy_cq(qa.cq), 0);
	EXPECT_EQ(ibv_dealloc_pd(qa.pd), 0);
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

static void *make_srq(void *pd)
{
	struct ibv_srq_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = 4;
	ia.attr.max_sge = 1;
	return ibv_create_srq(pd, &ia);
}

static int free_srq(void *srq)
{
	return ibv_destroy_srq(srq);
}

TEST(limit_srq)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct ibv_pd *pd;

	kv_query_device(ctx, &a);
	pd = kv_alloc_pd(ctx);
	exhaust("srq", "max_srq", a.max_srq, make_srq, free_srq, pd);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

/* Limits are per device, shared by all contexts (processes). */
TEST(limit_pd_across_contexts)
{
	struct ibv_context *c1 = kv_open(), *c2 = kv_open();
	struct ibv_device_attr a;
	struct ibv_pd **pds;
	long existing, i, n = 0;

	kv_query_device(c1, &a);
	if (a.max_pd > limit_cap())
		SKIP("max_pd=%d too large for an exhaustion test", a.max_pd);
	existing = baseline("pd");
	pds = calloc(a.max_pd + 2, sizeof(*pds));
	ASSERT_NONNULL(pds);
	for (i = 0; i < a.max_pd + 1; i++) {
		pds[n] = ibv_alloc_pd(i % 2 ? c2 : c1);
		if (!pds[n])
			break;
		n++;
	}
	EXPECT_EQ(n, a.max_pd - existing);
	for (i = 0; i < n; i++)
		EXPECT_EQ(ibv_dealloc_pd(pds[i]), 0);
	ibv_close_device(c2);
	ibv_close_device(c1);
}

KT_MAIN()
