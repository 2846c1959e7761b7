// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Ownership plumbing of objects.h: C handle <-> C++ object round trips.
#include <gtest/gtest.h>

#include "objects.h"

using namespace kiwi;

TEST(Objects, CHandleIsTheObject)
{
	auto cq = std::make_unique<Cq>();
	Cq *raw = cq.get();

	EXPECT_EQ(static_cast<void *>(raw->ibv()), static_cast<void *>(raw));
	EXPECT_EQ(Cq::from(raw->ibv()), raw);

	auto qp = std::make_unique<Qp>();
	EXPECT_EQ(Qp::from(qp->ibv()), qp.get());
	auto srq = std::make_unique<Srq>();
	EXPECT_EQ(Srq::from(srq->ibv()), srq.get());
	auto mr = std::make_unique<Mr>();
	EXPECT_EQ(Mr::from(&mr->vmr), mr.get());
}

TEST(Objects, ContextFromPublicHandle)
{
	// ibv_context sits at the end of verbs_context; from() must undo
	// that offset, a plain cast would point into the ops.
	Context ctx{};

	EXPECT_NE(offsetof(verbs_context, context), 0u);
	EXPECT_EQ(Context::from(&ctx.vctx.context), &ctx);
	EXPECT_EQ(Context::from(&ctx.vctx), &ctx);
}

TEST(Objects, CreatedZeroed)
{
	// libibverbs asserts untouched fields are NULL (e.g. ibv_device's
	// _ops) and ibv_cmd_create_qp leaves verbs_qp.comp_mask alone.
	auto dev = std::make_unique<Device>();
	EXPECT_EQ(dev->vdev.device._ops._dummy1, nullptr);
	EXPECT_EQ(dev->vdev.ops, nullptr);
	auto qp = std::make_unique<Qp>();
	EXPECT_EQ(qp->vqp.comp_mask, 0u);
	EXPECT_EQ(qp->sq.depth, 0u);
	auto srq = std::make_unique<Srq>();
	EXPECT_EQ(srq->depth, 0u);
}

TEST(Objects, HandOverAndTakeBack)
{
	auto pd = std::make_unique<Pd>();
	Pd *expect = pd.get();

	ibv_pd *handle = &hand_over(std::move(pd))->pd;
	EXPECT_EQ(pd, nullptr);
	std::unique_ptr<Pd> back = take_back<Pd>(handle);
	EXPECT_EQ(back.get(), expect);
}
