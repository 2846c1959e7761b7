// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Unit tests for the device-independent provider logic (logic.h).
#include <fnmatch.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "logic.h"

using namespace kiwi;

namespace {

// What libibverbs v44 does for a device registered with
// RDMA_DRIVER_UNKNOWN (init.c: match_device): driver-id matching is
// skipped, the name is tried as "rdma_device:N<name>" against the
// MODALIAS entries, then match_device() decides, then the ABI range.
bool libibverbs_would_bind(verbs_sysfs_dev &dev)
{
	std::string name_ma = std::string("rdma_device:N") + dev.ibdev_name;

	dev.match = nullptr;
	for (const verbs_match_ent *e = kMatchTable;
	     e->kind != VERBS_MATCH_SENTINEL; e++)
		if (e->kind == VERBS_MATCH_MODALIAS &&
		    fnmatch(e->u.modalias, name_ma.c_str(), 0) == 0) {
			dev.match = e;
			break;
		}
	if (!match_device(dev))
		return false;
	return dev.abi_ver >= kMinAbi && dev.abi_ver <= kMaxAbi;
}

verbs_sysfs_dev sysfs_dev(const char *name, uint32_t abi = KIWI_ABI_VERSION)
{
	verbs_sysfs_dev dev{};

	strncpy(dev.ibdev_name, name, sizeof(dev.ibdev_name) - 1);
	dev.abi_ver = abi;
	dev.driver_id = 0; // RDMA_DRIVER_UNKNOWN
	return dev;
}

ibv_qp_init_attr rc_attr(ibv_cq *cq)
{
	ibv_qp_init_attr a{};

	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
		 .max_recv_sge = 1, .max_inline_data = 0};
	return a;
}

} // namespace

// ------------------------------------------------------------- matching

TEST(Matching, NamePrefixRule)
{
	EXPECT_TRUE(is_kiwi_ibdev_name("kiwi0"));
	EXPECT_TRUE(is_kiwi_ibdev_name("kiwi_roce1"));
	EXPECT_FALSE(is_kiwi_ibdev_name("kiwi"));
	EXPECT_FALSE(is_kiwi_ibdev_name("kiw"));
	EXPECT_FALSE(is_kiwi_ibdev_name(""));
	EXPECT_FALSE(is_kiwi_ibdev_name("siw0"));
	EXPECT_FALSE(is_kiwi_ibdev_name("xkiwi0"));
	EXPECT_FALSE(is_kiwi_ibdev_name("KIWI0"));
}

TEST(Matching, TableIsOneModaliasEntryAndSentinel)
{
	EXPECT_EQ(kMatchTable[0].kind, VERBS_MATCH_MODALIAS);
	EXPECT_STREQ(kMatchTable[0].u.modalias, "rdma_device:Nkiwi*");
	EXPECT_EQ(kMatchTable[1].kind, VERBS_MATCH_SENTINEL);
}

TEST(Matching, TablePatternAgainstPseudoModalias)
{
	const char *pat = kMatchTable[0].u.modalias;

	EXPECT_EQ(fnmatch(pat, "rdma_device:Nkiwi0", 0), 0);
	EXPECT_EQ(fnmatch(pat, "rdma_device:Nkiwi12", 0), 0);
	EXPECT_NE(fnmatch(pat, "rdma_device:Nsiw0", 0), 0);
	EXPECT_NE(fnmatch(pat, "rdma_device:Nxkiwi0", 0), 0);
	// A real parent-device modalias never matches.
	EXPECT_NE(fnmatch(pat, "pci:v00001AF4d00001000sv*", 0), 0);
}

TEST(Matching, LibibverbsFlowBindsKiwiDevicesOnly)
{
	auto kiwi0 = sysfs_dev("kiwi0");
	auto siw0 = sysfs_dev("siw0");
	auto rxe0 = sysfs_dev("rxe0");
	auto bare = sysfs_dev("kiwi");

	EXPECT_TRUE(libibverbs_would_bind(kiwi0));
	EXPECT_EQ(kiwi0.match, &kMatchTable[0]);
	EXPECT_FALSE(libibverbs_would_bind(siw0));
	EXPECT_FALSE(libibverbs_would_bind(rxe0));
	EXPECT_FALSE(libibverbs_would_bind(bare));
}

TEST(Matching, AbiRangeIsExactlyKiwiAbi)
{
	auto old_dev = sysfs_dev("kiwi0", KIWI_ABI_VERSION - 1);
	auto new_dev = sysfs_dev("kiwi0", KIWI_ABI_VERSION + 1);

	EXPECT_FALSE(libibverbs_would_bind(old_dev));
	EXPECT_FALSE(libibverbs_would_bind(new_dev));
}

TEST(Matching, MatchDeviceNeedsTableHitAndName)
{
	auto dev = sysfs_dev("kiwi0");

	dev.match = nullptr;
	EXPECT_FALSE(match_device(dev));
	dev.match = &kMatchTable[0];
	EXPECT_TRUE(match_device(dev));

	// kiwi's sysfs attribute makes any name kiwi's ("eth0_kiwi").
	auto renamed = sysfs_dev("eth0_kiwi");
	EXPECT_FALSE(match_device(renamed, false));
	EXPECT_TRUE(match_device(renamed, true));

	// A table hit from some other path with a foreign name is refused.
	auto other = sysfs_dev("mlx5_0");
	other.match = &kMatchTable[0];
	EXPECT_FALSE(match_device(other));
}

TEST(Matching, UnterminatedNameIsBounded)
{
	verbs_sysfs_dev dev{};

	memset(dev.ibdev_name, 'k', sizeof(dev.ibdev_name));
	dev.match = &kMatchTable[0];
	EXPECT_FALSE(match_device(dev));
	memcpy(dev.ibdev_name, "kiwi", 4);
	EXPECT_TRUE(match_device(dev)); // "kiwikkk..." of 64 chars
}

// ------------------------------------------------------------------ ABI

TEST(Abi, SupportedVersions)
{
	// ABI 2 (mapped rings) is not compatible with 1 (all uverbs).
	EXPECT_EQ(kMinAbi, 2u);
	EXPECT_EQ(kMaxAbi, 2u);
	EXPECT_FALSE(abi_supported(0));
	EXPECT_FALSE(abi_supported(1));
	EXPECT_TRUE(abi_supported(2));
	EXPECT_FALSE(abi_supported(3));
}

TEST(Abi, ContextResponse)
{
	kiwi_uresp_alloc_ctx resp{};

	EXPECT_EQ(check_context_resp(resp), EPROTO); // no driver data sent
	resp.abi_version = KIWI_ABI_VERSION;
	EXPECT_EQ(check_context_resp(resp), 0);
	resp.abi_version = KIWI_ABI_VERSION + 1;
	EXPECT_EQ(check_context_resp(resp), EPROTO);
}

TEST(Abi, DriverResponseSitsRightAfterCore)
{
	using Q = DrvResp<ib_uverbs_create_qp_resp, kiwi_uresp_create_qp>;
	Q resp;

	EXPECT_EQ(Q::size, sizeof(ib_uverbs_create_qp_resp) +
				   sizeof(kiwi_uresp_create_qp));
	// Emulate the kernel: core response, then the driver part.
	auto *bytes = reinterpret_cast<unsigned char *>(resp.core());
	kiwi_uresp_create_qp sent{};
	sent.qp_id = 7;
	sent.num_sqe = 64;
	sent.num_rqe = 32;
	resp.core()->qpn = 0x1234;
	memcpy(bytes + sizeof(ib_uverbs_create_qp_resp), &sent, sizeof(sent));

	const kiwi_uresp_create_qp got = resp.drv();
	EXPECT_EQ(got.qp_id, 7u);
	EXPECT_EQ(got.num_sqe, 64u);
	EXPECT_EQ(got.num_rqe, 32u);
	EXPECT_EQ(resp.core()->qpn, 0x1234u);
	// Zeroed until written: a kernel sending no driver data reads as 0.
	DrvResp<ib_uverbs_get_context_resp, kiwi_uresp_alloc_ctx> ctx;
	EXPECT_EQ(ctx.drv().abi_version, 0u);
}

TEST(Abi, DriverResponsesNeedNoPadding)
{
	EXPECT_TRUE((packed_resp<ib_uverbs_create_qp_resp, kiwi_uresp_create_qp>));
	EXPECT_TRUE((packed_resp<ib_uverbs_create_cq_resp, kiwi_uresp_create_cq>));
	EXPECT_TRUE((packed_resp<ib_uverbs_resize_cq_resp, kiwi_uresp_create_cq>));
	EXPECT_TRUE((packed_resp<ib_uverbs_create_srq_resp, kiwi_uresp_create_srq>));
	EXPECT_TRUE((packed_resp<ib_uverbs_get_context_resp, kiwi_uresp_alloc_ctx>));
	// A driver struct that would need padding after the core is caught.
	struct Wide { uint64_t x; };
	EXPECT_FALSE((packed_resp<ib_uverbs_alloc_pd_resp, Wide>));
}

TEST(Abi, FirmwareVersionString)
{
	std::array<char, 64> buf{};

	format_fw_ver(0x0000000100020003ull, buf);
	EXPECT_STREQ(buf.data(), "1.2.3");
	format_fw_ver(0, buf);
	EXPECT_STREQ(buf.data(), "0.0.0");

	std::array<char, 4> small{};
	format_fw_ver(0x0000000100020003ull, small);
	EXPECT_STREQ(small.data(), "1.2"); // truncated, still terminated
	format_fw_ver(1, std::span<char>{}); // must not write anywhere
}

// ----------------------------------------------------------- validation

TEST(Validate, CreateCq)
{
	EXPECT_EQ(validate_create_cq(0, 0, 1), EINVAL);
	EXPECT_EQ(validate_create_cq(-5, 0, 1), EINVAL);
	EXPECT_EQ(validate_create_cq(1, 0, 1), 0);
	EXPECT_EQ(validate_create_cq(64, -1, 1), EINVAL);
	EXPECT_EQ(validate_create_cq(64, 1, 1), EINVAL);
	EXPECT_EQ(validate_create_cq(64, 3, 4), 0);
	EXPECT_EQ(validate_create_cq(64, 3, 0), 0); // count unknown: kernel decides
	EXPECT_EQ(validate_resize_cq(0), EINVAL);
	EXPECT_EQ(validate_resize_cq(128), 0);
}

TEST(Validate, OnlyRcQpsAreSupported)
{
	ibv_qp_init_attr a{};

	// Type is judged first: no CQs needed to get EOPNOTSUPP.
	for (ibv_qp_type t : {IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
			      IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV,
			      IBV_QPT_DRIVER}) {
		a.qp_type = t;
		EXPECT_EQ(validate_create_qp(&a, KIWI_MAX_INLINE), EOPNOTSUPP)
			<< "qp_type " << t;
	}
	EXPECT_EQ(validate_create_qp(nullptr, KIWI_MAX_INLINE), EINVAL);
}

TEST(Validate, CreateRcQp)
{
	ibv_cq cq{};
	auto a = rc_attr(&cq);

	EXPECT_EQ(validate_create_qp(&a, KIWI_MAX_INLINE), 0);

	a.cap.max_send_sge = KIWI_MAX_SGE;
	a.cap.max_recv_sge = KIWI_MAX_SGE;
	a.cap.max_inline_data = KIWI_MAX_INLINE;
	EXPECT_EQ(validate_create_qp(&a, KIWI_MAX_INLINE), 0);

	auto b = a;
	b.cap.max_send_sge = KIWI_MAX_SGE + 1;
	EXPECT_EQ(validate_create_qp(&b, KIWI_MAX_INLINE), EINVAL);
	b = a;
	b.cap.max_recv_sge = KIWI_MAX_SGE + 1;
	EXPECT_EQ(validate_create_qp(&b, KIWI_MAX_INLINE), EINVAL);
	b = a;
	b.cap.max_inline_data = KIWI_MAX_INLINE + 1;
	EXPECT_EQ(validate_create_qp(&b, KIWI_MAX_INLINE), EINVAL);
	// The context's limit, not the compile-time one, is what counts.
	EXPECT_EQ(validate_create_qp(&a, 64), EINVAL);
	b = a;
	b.send_cq = nullptr;
	EXPECT_EQ(validate_create_qp(&b, KIWI_MAX_INLINE), EINVAL);
	b = a;
	b.recv_cq = nullptr;
	EXPECT_EQ(validate_create_qp(&b, KIWI_MAX_INLINE), EINVAL);
}

TEST(Validate, CreateSrq)
{
	ibv_srq_init_attr a{};

	a.attr.max_wr = 64;
	a.attr.max_sge = KIWI_MAX_SGE;
	EXPECT_EQ(validate_create_srq(&a), 0);
	a.attr.max_sge = KIWI_MAX_SGE + 1;
	EXPECT_EQ(validate_create_srq(&a), EINVAL);
	EXPECT_EQ(validate_create_srq(nullptr), EINVAL);
}

TEST(Validate, SgeList)
{
	std::array<ibv_sge, 3> sg{{{0x1000, 100, 1}, {0x2000, 100, 1},
				   {0x3000, 56, 1}}};

	EXPECT_EQ(validate_sge_list(sg.data(), 3, 8, false, 0), 0);
	EXPECT_EQ(validate_sge_list(sg.data(), 3, 2, false, 0), EINVAL);
	EXPECT_EQ(validate_sge_list(sg.data(), -1, 8, false, 0), EINVAL);
	EXPECT_EQ(validate_sge_list(nullptr, 1, 8, false, 0), EINVAL);
	EXPECT_EQ(validate_sge_list(nullptr, 0, 8, false, 0), 0);
	// Inline: 256 bytes in total fits 256, not 255.
	EXPECT_EQ(validate_sge_list(sg.data(), 3, 8, true, 256), 0);
	EXPECT_EQ(validate_sge_list(sg.data(), 3, 8, true, 255), EINVAL);
	// Lengths are summed without 32-bit wrap-around.
	std::array<ibv_sge, 2> huge{{{0, 0xffffffffu, 1}, {0, 2, 1}}};
	EXPECT_EQ(validate_sge_list(huge.data(), 2, 8, true, 256), EINVAL);
}

TEST(Validate, SendChainIsAllOrNothing)
{
	std::array<ibv_sge, 1> sg{{{0x1000, 8, 1}}};
	std::vector<ibv_send_wr> wr(3);
	for (size_t i = 0; i < wr.size(); i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = sg.data();
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].next = i + 1 < wr.size() ? &wr[i + 1] : nullptr;
	}
	const QueueLimits lim{.depth = 4, .max_sge = 1, .max_inline = 16};
	ibv_send_wr *bad = nullptr;

	EXPECT_EQ(validate_send_chain(&wr[0], lim, &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(validate_send_chain(nullptr, lim, &bad), 0);

	// A bad WR in the middle fails the call before anything is posted,
	// so bad_wr must name the first WR.
	wr[1].num_sge = 2;
	EXPECT_EQ(validate_send_chain(&wr[0], lim, &bad), EINVAL);
	EXPECT_EQ(bad, &wr[0]);
	wr[1].num_sge = 1;

	// Inline send over the QP's inline limit.
	sg[0].length = 17;
	wr[2].send_flags = IBV_SEND_INLINE;
	bad = nullptr;
	EXPECT_EQ(validate_send_chain(&wr[0], lim, &bad), EINVAL);
	EXPECT_EQ(bad, &wr[0]);
	sg[0].length = 16;
	EXPECT_EQ(validate_send_chain(&wr[0], lim, &bad), 0);

	// A chain longer than the send queue can never be accepted.
	const QueueLimits shallow{.depth = 2, .max_sge = 1, .max_inline = 16};
	EXPECT_EQ(validate_send_chain(&wr[0], shallow, &bad), ENOMEM);
	EXPECT_EQ(bad, &wr[0]);
}

TEST(Validate, RecvChain)
{
	std::array<ibv_sge, 2> sg{{{0x1000, 8, 1}, {0x2000, 8, 1}}};
	ibv_recv_wr second{.wr_id = 2, .next = nullptr, .sg_list = sg.data(),
			   .num_sge = 2};
	ibv_recv_wr first{.wr_id = 1, .next = &second, .sg_list = sg.data(),
			  .num_sge = 1};
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(validate_recv_chain(&first, {8, 2, 0}, &bad), 0);
	EXPECT_EQ(validate_recv_chain(&first, {8, 1, 0}, &bad), EINVAL);
	EXPECT_EQ(bad, &first);
	EXPECT_EQ(validate_recv_chain(&first, {1, 2, 0}, &bad), ENOMEM);
	// A receive queue of depth 0 (QP on an SRQ) accepts nothing.
	EXPECT_EQ(validate_recv_chain(&first, {0, 2, 0}, &bad), ENOMEM);
}
