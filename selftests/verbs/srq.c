// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Shared receive queues.
 */
#include "kv.h"

static struct ibv_srq *create_srq(struct ibv_pd *pd, uint32_t wr, uint32_t sge)
{
	struct ibv_srq_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = wr;
	ia.attr.max_sge = sge;
	return ibv_create_srq(pd, &ia);
}

TEST(srq_attrs)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	TH_LOG("max_srq=%d max_srq_wr=%d max_srq_sge=%d", a.max_srq,
	       a.max_srq_wr, a.max_srq_sge);
	EXPECT_GT(a.max_srq, 0);
	EXPECT_GT(a.max_srq_wr, 0);
	EXPECT_GT(a.max_srq_sge, 0);
	ibv_close_device(ctx);
}

TEST(srq_create_query_modify_destroy)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = 64;
	ia.attr.max_sge = 2;
	ia.srq_context = (void *)0x9abc;
	srq = ibv_create_srq(pd, &ia);
	ASSERT_NONNULL(srq);
	/* Actual values are written back. */
	EXPECT_GE(ia.attr.max_wr, 64);
	EXPECT_GE(ia.attr.max_sge, 2);
	EXPECT_TRUE(srq->srq_context == (void *)0x9abc);
	EXPECT_TRUE(srq->pd == pd);

	memset(&sa, 0, sizeof(sa));
	ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
	EXPECT_GE(sa.max_wr, 64);
	EXPECT_GE(sa.max_sge, 2);
	EXPECT_EQ(sa.srq_limit, 0);

	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 16;
	ASSERT_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	memset(&sa, 0, sizeof(sa));
	ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
	EXPECT_EQ(sa.srq_limit, 16);
	EXPECT_GE(sa.max_wr, 64);

	/* Back to 0 (disarm). */
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 0;
	EXPECT_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
	EXPECT_EQ(sa.srq_limit, 0);

	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(srq_limit_over_max_wr_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_srq_attr sa;
	struct ibv_srq *srq = create_srq(pd, 64, 1);

	ASSERT_NONNULL(srq);
	ASSERT_EQ(ibv_query_srq(srq, &sa), 0);
	sa.srq_limit = sa.max_wr + 1;
	EXPECT_ERRNO(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(srq_over_max_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	EXPECT_FAILS_WITH(create_srq(pd, a.max_srq_wr + 1, 1), EINVAL);
	EXPECT_FAILS_WITH(create_srq(pd, 16, a.max_srq_sge + 1), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(srq_zero_depth_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);

	EXPECT_FAILS_WITH(create_srq(pd, 0, 1), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(srq_resize_eopnotsupp)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_srq *srq = create_srq(pd, 32, 1);
	struct ibv_srq_attr sa;

	ASSERT_NONNULL(srq);
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 64;
	EXPECT_ERRNO(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EOPNOTSUPP);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(qp_with_srq)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_cq *cq = kv_create_cq(ctx, 32);
	struct ibv_srq *srq = create_srq(pd, 32, 1);
	struct ibv_qp_init_attr ia = kv_rc_attr(cq);
	struct ibv_qp *qp;
	int ret;

	ASSERT_NONNULL(srq);
	ia.srq = srq;
	ia.cap.max_recv_wr = 0;
	ia.cap.max_recv_sge = 0;
	qp = ibv_create_qp(pd, &ia);
	ASSERT_NONNULL(qp);
	EXPECT_TRUE(qp->srq == srq);
	ret = ibv_destroy_srq(srq);
	TH_LOG("ibv_destroy_srq with a QP attached returned %d (%s)", ret,
	       ret ? kt_errname(ret) : "success");
	EXPECT_ERRNO(ret, EBUSY);
	if (kt_shared->failed)
		return;
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

KT_MAIN()
