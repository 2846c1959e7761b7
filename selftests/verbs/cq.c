// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Completion queues and completion channels.
 */
#include "kv.h"

#include <fcntl.h>
#include <poll.h>

TEST(create_destroy_cq)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_cq *cq;
	struct ibv_wc wc;
	int sizes[] = { 1, 2, 15, 16, 100, 256, 1000 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cq = ibv_create_cq(ctx, sizes[i], NULL, NULL, 0);
		ASSERT_NONNULL(cq);
		EXPECT_GE(cq->cqe, sizes[i]);
		EXPECT_TRUE(cq->context == ctx);
		/* A new CQ is empty. */
		EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
		ASSERT_EQ(ibv_destroy_cq(cq), 0);
	}
	ibv_close_device(ctx);
}

TEST(create_cq_max_cqe)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct ibv_cq *cq;

	kv_query_device(ctx, &a);
	if (a.max_cqe > (1 << 20))
		TH_LOG("max_cqe %d: exact-maximum CQ may take a while", a.max_cqe);
	cq = ibv_create_cq(ctx, a.max_cqe, NULL, NULL, 0);
	ASSERT_NONNULL(cq);
	EXPECT_GE(cq->cqe, a.max_cqe);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
	ibv_close_device(ctx);
}

TEST(create_cq_over_max_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	EXPECT_FAILS_WITH(ibv_create_cq(ctx, a.max_cqe + 1, NULL, NULL, 0),
			  EINVAL);
	ibv_close_device(ctx);
}

TEST(create_cq_zero_einval)
{
	struct ibv_context *ctx = kv_open();

	EXPECT_FAILS_WITH(ibv_create_cq(ctx, 0, NULL, NULL, 0), EINVAL);
	ibv_close_device(ctx);
}

TEST(create_cq_bad_vector_einval)
{
	struct ibv_context *ctx = kv_open();

	EXPECT_FAILS_WITH(ibv_create_cq(ctx, 16, NULL, NULL,
					ctx->num_comp_vectors + 7), EINVAL);
	ibv_close_device(ctx);
}

TEST(resize_cq)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct ibv_cq *cq;
	struct ibv_wc wc;

	kv_query_device(ctx, &a);
	cq = kv_create_cq(ctx, 64);
	/* Up. */
	ASSERT_EQ(ibv_resize_cq(cq, 512), 0);
	EXPECT_GE(cq->cqe, 512);
	/* Down. */
	ASSERT_EQ(ibv_resize_cq(cq, 32), 0);
	EXPECT_GE(cq->cqe, 32);
	EXPECT_LT(cq->cqe, 512);
	/* Up to the maximum. */
	ASSERT_EQ(ibv_resize_cq(cq, a.max_cqe), 0);
	EXPECT_GE(cq->cqe, a.max_cqe);
	ASSERT_EQ(ibv_resize_cq(cq, 8), 0);
	EXPECT_GE(cq->cqe, 8);
	EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
	ibv_close_device(ctx);
}

TEST(resize_cq_over_max_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;
	struct ibv_cq *cq;
	int before;

	kv_query_device(ctx, &a);
	cq = kv_create_cq(ctx, 64);
	before = cq->cqe;
	EXPECT_ERRNO(ibv_resize_cq(cq, a.max_cqe + 1), EINVAL);
	/* A failed resize leaves the CQ as it was. */
	EXPECT_EQ(cq->cqe, before);
	EXPECT_EQ(ibv_resize_cq(cq, 128), 0);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
	ibv_close_device(ctx);
}

TEST(comp_channel)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *cq2;
	struct pollfd pfd;
	int flags;

	ASSERT_NONNULL(ch);
	EXPECT_GE(ch->fd, 0);
	cq = ibv_create_cq(ctx, 32, (void *)0x1234, ch, 0);
	ASSERT_NONNULL(cq);
	EXPECT_TRUE(cq->channel == ch);
	EXPECT_TRUE(cq->cq_context == (void *)0x1234);
	cq2 = ibv_create_cq(ctx, 32, NULL, ch, 0);
	ASSERT_NONNULL(cq2);
	EXPECT_EQ(ibv_req_notify_cq(cq, 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq2, 1), 0);
	/* Nothing completed: the channel must not be readable. */
	flags = fcntl(ch->fd, F_GETFL);
	ASSERT_EQ(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	EXPECT_EQ(poll(&pfd, 1, 50), 0);
	/* Still in use by CQs: libibverbs refuses to destroy it. */
	EXPECT_ERRNO(ibv_destroy_comp_channel(ch), EBUSY);
	EXPECT_EQ(ibv_destroy_cq(cq2), 0);
	EXPECT_EQ(ibv_destroy_cq(cq), 0);
	EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
	ibv_close_device(ctx);
}

TEST(many_cqs)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_cq *cq[32];
	int i;

	for (i = 0; i < 32; i++)
		cq[i] = kv_create_cq(ctx, 16 + i);
	for (i = 0; i < 32; i += 2)
		EXPECT_EQ(ibv_destroy_cq(cq[i]), 0);
	for (i = 1; i < 32; i += 2)
		EXPECT_EQ(ibv_destroy_cq(cq[i]), 0);
	ibv_close_device(ctx);
}

KT_MAIN()
