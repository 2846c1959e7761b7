// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Provider checks against a live kiwi device (run in the test guest).
// Skipped when no kiwi device is present, e.g. on the build host.  The
// provider under test is the one built next to this binary, loaded via
// RDMAV_DRIVERS unless the caller set it.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/kiwi-abi.h>

namespace {

struct Closer {
	void operator()(ibv_context *c) const noexcept { ibv_close_device(c); }
};
struct PdFree {
	void operator()(ibv_pd *p) const noexcept { ibv_dealloc_pd(p); }
};
struct CqFree {
	void operator()(ibv_cq *c) const noexcept { ibv_destroy_cq(c); }
};
struct QpFree {
	void operator()(ibv_qp *q) const noexcept { ibv_destroy_qp(q); }
};
struct SrqFree {
	void operator()(ibv_srq *s) const noexcept { ibv_destroy_srq(s); }
};
struct MrFree {
	void operator()(ibv_mr *m) const noexcept { ibv_dereg_mr(m); }
};

std::unique_ptr<ibv_context, Closer> open_kiwi()
{
	// Our provider, not an installed one (libibverbs appends the suffix).
	setenv("RDMAV_DRIVERS", KIWI_PROVIDER_STEM, 0);

	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	std::unique_ptr<ibv_context, Closer> ctx;

	for (int i = 0; list && i < n && !ctx; i++)
		if (!strncmp(ibv_get_device_name(list[i]),
			     KIWI_DEV_NAME_PREFIX, strlen(KIWI_DEV_NAME_PREFIX)))
			ctx.reset(ibv_open_device(list[i]));
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

class Device : public ::testing::Test {
protected:
	void SetUp() override
	{
		ctx_ = open_kiwi();
		if (!ctx_)
			GTEST_SKIP() << "no kiwi device (or provider not bound)";
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_NE(pd_, nullptr) << strerror(errno);
		cq_.reset(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_NE(cq_, nullptr) << strerror(errno);
	}

	ibv_qp_init_attr rc_attr(ibv_srq *srq = nullptr)
	{
		ibv_qp_init_attr a{};
		a.send_cq = a.recv_cq = cq_.get();
		a.srq = srq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = 8;
		a.cap.max_recv_wr = srq ? 0 : 8;
		a.cap.max_send_sge = 2;
		a.cap.max_recv_sge = srq ? 0 : 2;
		a.cap.max_inline_data = 32;
		return a;
	}

	std::unique_ptr<ibv_context, Closer> ctx_;
	std::unique_ptr<ibv_pd, PdFree> pd_;
	std::unique_ptr<ibv_cq, CqFree> cq_;
	std::vector<char> buf_ = std::vector<char>(4096);
};

TEST_F(Device, BoundToKiwiProvider)
{
	EXPECT_EQ(ctx_->device->transport_type, IBV_TRANSPORT_IWARP);

	ibv_device_attr_ex attr{};
	ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &attr), 0);
	EXPECT_EQ(attr.orig_attr.vendor_id, unsigned(KIWI_VENDOR_ID));
	EXPECT_EQ(attr.orig_attr.vendor_part_id, unsigned(KIWI_VENDOR_PART_ID));
	EXPECT_NE(attr.orig_attr.fw_ver[0], '\0'); // filled by the provider

	ibv_port_attr port{};
	ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port), 0);
	EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
}

TEST_F(Device, RegMrHonoursIova)
{
	const auto addr = reinterpret_cast<uintptr_t>(buf_.data());
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	// kiwi wants iova and addr at the same offset within a page.
	const uint64_t iova = 0x100000000ull + (addr & 0xfff);
	std::unique_ptr<ibv_mr, MrFree> mr(ibv_reg_mr_iova2(
		pd_.get(), buf_.data(), buf_.size(), iova, access));

	ASSERT_NE(mr, nullptr) << strerror(errno);
	EXPECT_EQ(mr->addr, buf_.data());
	EXPECT_EQ(mr->length, buf_.size());
	EXPECT_EQ(mr->pd, pd_.get());

	// Proof the iova reaches the kernel (rather than addr): an iova at a
	// different page offset is refused there.
	errno = 0;
	std::unique_ptr<ibv_mr, MrFree> off(ibv_reg_mr_iova2(
		pd_.get(), buf_.data(), buf_.size(), iova + 1, access));
	EXPECT_EQ(off, nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(Device, CqPollArmResize)
{
	ibv_wc wc[4];

	EXPECT_GE(cq_->cqe, 16);
	EXPECT_EQ(ibv_poll_cq(cq_.get(), 4, wc), 0);	// nothing yet
	EXPECT_EQ(ibv_req_notify_cq(cq_.get(), 0), 0);
	EXPECT_EQ(ibv_poll_cq(cq_.get(), -1, wc), -1);	// user-side check
	if (ibv_resize_cq(cq_.get(), 64) == 0) {
		EXPECT_GE(cq_->cqe, 64);
	}
	EXPECT_EQ(ibv_resize_cq(cq_.get(), 0), EINVAL);
}

TEST_F(Device, NonRcQpsRejected)
{
	auto a = rc_attr();

	for (ibv_qp_type t : {IBV_QPT_UD, IBV_QPT_UC, IBV_QPT_RAW_PACKET}) {
		a.qp_type = t;
		errno = 0;
		EXPECT_EQ(ibv_create_qp(pd_.get(), &a), nullptr);
		EXPECT_EQ(errno, EOPNOTSUPP) << "qp_type " << t;
	}
	a = rc_attr();
	a.cap.max_send_sge = KIWI_MAX_SGE + 1;
	errno = 0;
	EXPECT_EQ(ibv_create_qp(pd_.get(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(Device, PostChainsAreValidatedWhole)
{
	auto a = rc_attr();
	std::unique_ptr<ibv_qp, QpFree> qp(ibv_create_qp(pd_.get(), &a));
	ASSERT_NE(qp, nullptr) << strerror(errno);

	std::unique_ptr<ibv_mr, MrFree> mr(ibv_reg_mr(
		pd_.get(), buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE));
	ASSERT_NE(mr, nullptr);
	ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data()), 64, mr->lkey};

	// Second WR has too many SGEs: nothing posted, bad_wr = first.
	ibv_recv_wr r2{.wr_id = 2, .next = nullptr, .sg_list = &sge,
		       .num_sge = int(a.cap.max_recv_sge) + 1};
	ibv_recv_wr r1{.wr_id = 1, .next = &r2, .sg_list = &sge, .num_sge = 1};
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(qp.get(), &r1, &bad), EINVAL);
	EXPECT_EQ(bad, &r1);

	// A valid receive goes to the kernel (RESET/INIT QPs may refuse).
	r1.next = nullptr;
	int ret = ibv_post_recv(qp.get(), &r1, &bad);
	EXPECT_TRUE(ret == 0 || ret == EINVAL) << ret;

	ibv_send_wr s{};
	s.wr_id = 3;
	s.sg_list = &sge;
	s.num_sge = 1;
	s.opcode = IBV_WR_SEND;
	s.send_flags = IBV_SEND_INLINE;
	sge.length = a.cap.max_inline_data + 1;
	ibv_send_wr *sbad = nullptr;
	EXPECT_EQ(ibv_post_send(qp.get(), &s, &sbad), EINVAL);
	EXPECT_EQ(sbad, &s);
}

TEST_F(Device, SrqLifecycle)
{
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 2;
	std::unique_ptr<ibv_srq, SrqFree> srq(ibv_create_srq(pd_.get(), &sa));
	if (!srq && errno == EOPNOTSUPP)
		GTEST_SKIP() << "kernel has no SRQ";
	ASSERT_NE(srq, nullptr) << strerror(errno);
	EXPECT_GE(sa.attr.max_wr, 16u);

	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq.get(), &q), 0);
	EXPECT_GE(q.max_wr, 16u);

	std::unique_ptr<ibv_mr, MrFree> mr(ibv_reg_mr(
		pd_.get(), buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE));
	ASSERT_NE(mr, nullptr);
	ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data()), 64, mr->lkey};
	ibv_recv_wr r{.wr_id = 9, .next = nullptr, .sg_list = &sge, .num_sge = 1};
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_srq_recv(srq.get(), &r, &bad), 0);
	r.num_sge = KIWI_MAX_SGE + 1;
	EXPECT_EQ(ibv_post_srq_recv(srq.get(), &r, &bad), EINVAL);
	EXPECT_EQ(bad, &r);

	// A QP on the SRQ takes no receives of its own.
	auto a = rc_attr(srq.get());
	std::unique_ptr<ibv_qp, QpFree> qp(ibv_create_qp(pd_.get(), &a));
	ASSERT_NE(qp, nullptr) << strerror(errno);
	r.num_sge = 1;
	EXPECT_EQ(ibv_post_recv(qp.get(), &r, &bad), EINVAL);
	qp.reset();
}

TEST_F(Device, QpStateMachineThroughProvider)
{
	auto a = rc_attr();
	std::unique_ptr<ibv_qp, QpFree> qp(ibv_create_qp(pd_.get(), &a));
	ASSERT_NE(qp, nullptr) << strerror(errno);

	ibv_qp_attr qa{};
	ibv_qp_init_attr qia{};
	ASSERT_EQ(ibv_query_qp(qp.get(), &qa, IBV_QP_STATE, &qia), 0);
	EXPECT_TRUE(qa.qp_state == IBV_QPS_RESET || qa.qp_state == IBV_QPS_INIT);

	qa = {};
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.pkey_index = 0;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int ret = ibv_modify_qp(qp.get(), &qa,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	EXPECT_EQ(ret, 0) << strerror(ret);
	if (ret == 0) {
		EXPECT_EQ(qp->state, IBV_QPS_INIT);
	}
}

} // namespace
