// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The user side of the mapped rings without a kernel: a heap buffer with
// the kiwi-abi.h layout stands in for the mapping and the tests play the
// kernel's part.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "objects.h"
#include "ring.h"

namespace kiwi {
namespace {

// A zeroed, suitably aligned ring image.
struct Image {
	Image(uint32_t slots, uint32_t stride)
		: mem(KIWI_RING_CTL_SIZE + std::size_t(slots) * stride + 64)
	{
		EXPECT_EQ(ring.attach(bytes(), slots, stride), 0);
	}
	std::span<std::byte> bytes()
	{
		return {reinterpret_cast<std::byte *>(mem.data()),
			mem.size() * sizeof(uint64_t)};
	}
	kiwi_ring_ctl &ctl() { return *reinterpret_cast<kiwi_ring_ctl *>(mem.data()); }

	std::vector<uint64_t> mem;	// 8-byte aligned
	Ring ring;
};

TEST(Ring, GeometryIsChecked)
{
	std::vector<uint64_t> mem(1024);
	std::span<std::byte> b(reinterpret_cast<std::byte *>(mem.data()), 8192);
	Ring r;

	EXPECT_EQ(r.attach(b, 16, 48), 0);
	EXPECT_EQ(r.slot(17).data() - b.data(), KIWI_RING_CTL_SIZE + 48);
	EXPECT_EQ(r.attach(b, 12, 48), EPROTO);		// not a power of two
	EXPECT_EQ(r.attach(b, 0, 48), EPROTO);
	EXPECT_EQ(r.attach(b, 256, 48), EPROTO);	// beyond the mapping
	EXPECT_EQ(r.attach(b, 16, 44), EPROTO);		// misaligned slots
	EXPECT_EQ(r.attach(b.first(KIWI_RING_CTL_SIZE + 16 * 48), 16, 48), 0);
}

TEST(Ring, ProducerSpaceAndWrapAround)
{
	Image im(4, 48);
	// Indices are free-running: start just below 2^32.
	im.ctl().prod = im.ctl().cons = 0xfffffffeu;
	Producer p;

	p.attach(im.ring);
	EXPECT_EQ(p.space(), 4u);
	EXPECT_EQ(p.slot(0).data(), im.ring.slot(2).data());
	p.publish(3);
	EXPECT_EQ(im.ctl().prod, 1u);	// wrapped
	EXPECT_EQ(p.space(), 1u);
	p.publish(1);
	EXPECT_EQ(p.space(), 0u);
	im.ctl().cons = 0;		// the kernel retired two
	EXPECT_EQ(p.space(), 2u);
	// A consumer index claiming the impossible never yields space.
	im.ctl().cons = 0x80000000u;
	EXPECT_EQ(p.space(), 0u);
}

TEST(Ring, CqReaderReadyPeekConsume)
{
	Image im(4, sizeof(kiwi_ucqe));
	CqReader r;

	r.attach(im.ring);
	EXPECT_EQ(r.ready(), 0u);
	EXPECT_TRUE(r.looks_empty());
	for (uint32_t i = 0; i < 3; i++) {	// the kernel produces three
		kiwi_ucqe c{};
		c.wr_id = 100 + i;
		std::memcpy(im.ring.slot(i).data(), &c, sizeof(c));
	}
	im.ctl().prod = 3;
	EXPECT_FALSE(r.looks_empty());
	EXPECT_EQ(r.ready(), 3u);
	EXPECT_EQ(r.peek(2).wr_id, 102u);
	r.consume(2);
	EXPECT_EQ(im.ctl().cons, 2u);
	EXPECT_EQ(r.ready(), 1u);
	EXPECT_EQ(r.peek(0).wr_id, 102u);
	r.consume(1);
	EXPECT_TRUE(r.looks_empty());
	// Never more than the ring holds, whatever prod says.
	im.ctl().prod = 1000;
	EXPECT_FALSE(r.looks_empty());
	EXPECT_EQ(r.ready(), 4u);
}

TEST(Ring, DoorbellDecisions)
{
	EXPECT_FALSE(sq_needs_doorbell(KIWI_RING_F_BUSY, KIWI_UQP_RTS));
	EXPECT_TRUE(sq_needs_doorbell(0, KIWI_UQP_RTS));
	// Out of RTS only a doorbell flushes, busy or not.
	EXPECT_TRUE(sq_needs_doorbell(KIWI_RING_F_BUSY, KIWI_UQP_ERROR));
	EXPECT_TRUE(sq_needs_doorbell(KIWI_RING_F_BUSY, KIWI_UQP_TERMINATE));
	EXPECT_TRUE(sq_postable(KIWI_UQP_RTS));
	EXPECT_TRUE(sq_postable(KIWI_UQP_ERROR));
	EXPECT_TRUE(sq_postable(KIWI_UQP_TERMINATE));
	EXPECT_FALSE(sq_postable(KIWI_UQP_IDLE));
	EXPECT_FALSE(sq_postable(KIWI_UQP_CLOSING));
	EXPECT_FALSE(rq_needs_doorbell(KIWI_UQP_RTS));
	EXPECT_FALSE(rq_needs_doorbell(KIWI_UQP_IDLE));
	EXPECT_TRUE(rq_needs_doorbell(KIWI_UQP_ERROR));
	EXPECT_TRUE(rq_needs_doorbell(KIWI_UQP_TERMINATE));
}

TEST(Encode, SendWithSges)
{
	std::array<std::byte, 96> slot{};
	std::array<ibv_sge, 2> sg{{{0x1000, 10, 7}, {0x2000, 20, 8}}};
	ibv_send_wr wr{};

	wr.wr_id = 42;
	wr.sg_list = sg.data();
	wr.num_sge = 2;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	wr.wr.rdma.rkey = 0x1234;
	wr.wr.rdma.remote_addr = 0xabcdef;
	encode_send_wr(wr, slot);

	const kiwi_usqe h = get_sqe_header(slot);
	EXPECT_EQ(h.wr_id, 42u);
	EXPECT_EQ(h.opcode, KIWI_UWR_RDMA_WRITE);
	EXPECT_EQ(h.flags, KIWI_UWR_F_SIGNALED | KIWI_UWR_F_FENCE);
	EXPECT_EQ(h.num_sge, 2);
	EXPECT_EQ(h.rkey, 0x1234u);
	EXPECT_EQ(h.raddr, 0xabcdefu);
	kiwi_usge u[2];
	std::memcpy(u, slot.data() + sizeof(kiwi_usqe), sizeof(u));
	EXPECT_EQ(u[1].addr, 0x2000u);
	EXPECT_EQ(u[1].length, 20u);
	EXPECT_EQ(u[1].lkey, 8u);
}

TEST(Encode, Atomic)
{
	std::array<std::byte, 64> slot{};
	ibv_sge sg{0x3000, 8, 9};
	ibv_send_wr wr{};

	wr.wr_id = 7;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.rkey = 0x55;
	wr.wr.atomic.remote_addr = 0x10008;
	wr.wr.atomic.compare_add = 3;
	wr.wr.atomic.swap = 4;
	encode_send_wr(wr, slot);

	const kiwi_usqe h = get_sqe_header(slot);
	EXPECT_EQ(h.opcode, KIWI_UWR_ATOMIC_CSWAP);
	EXPECT_EQ(h.num_sge, 1);
	EXPECT_EQ(h.rkey, 0x55u);
	EXPECT_EQ(h.raddr, 0x10008u);
	kiwi_usge u;
	kiwi_uatomic a;
	std::memcpy(&u, slot.data() + sizeof(kiwi_usqe), sizeof(u));
	std::memcpy(&a, slot.data() + sizeof(kiwi_usqe) + sizeof(u),
		    sizeof(a));
	EXPECT_EQ(u.addr, 0x3000u);
	EXPECT_EQ(u.length, 8u);
	EXPECT_EQ(a.compare_add, 3u);
	EXPECT_EQ(a.swap, 4u);
}

TEST(Encode, InlineSendInv)
{
	std::array<std::byte, 96> slot{};
	const char a[] = "hello, ", b[] = "ring";
	std::array<ibv_sge, 2> sg{{{reinterpret_cast<uintptr_t>(a), 7, 0},
				   {reinterpret_cast<uintptr_t>(b), 4, 0}}};
	ibv_send_wr wr{};

	wr.sg_list = sg.data();
	wr.num_sge = 2;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED;
	wr.invalidate_rkey = 0x77;
	encode_send_wr(wr, slot);

	const kiwi_usqe h = get_sqe_header(slot);
	EXPECT_EQ(h.opcode, KIWI_UWR_SEND_INV);
	EXPECT_EQ(h.flags, KIWI_UWR_F_INLINE | KIWI_UWR_F_SOLICITED);
	EXPECT_EQ(h.num_sge, 0);
	EXPECT_EQ(h.length, 11u);
	EXPECT_EQ(h.inv_rkey, 0x77u);
	EXPECT_EQ(std::memcmp(slot.data() + sizeof(kiwi_usqe), "hello, ring", 11), 0);
}

TEST(Encode, Recv)
{
	std::array<std::byte, 48> slot{};
	std::array<ibv_sge, 2> sg{{{0x10, 1, 2}, {0x20, 3, 4}}};
	ibv_recv_wr wr{.wr_id = 9, .next = nullptr, .sg_list = sg.data(),
		       .num_sge = 2};
	kiwi_urqe h;
	kiwi_usge u[2];

	encode_recv_wr(wr, slot);
	std::memcpy(&h, slot.data(), sizeof(h));
	std::memcpy(u, slot.data() + sizeof(h), sizeof(u));
	EXPECT_EQ(h.wr_id, 9u);
	EXPECT_EQ(h.num_sge, 2u);
	EXPECT_EQ(u[0].addr, 0x10u);
	EXPECT_EQ(u[1].lkey, 4u);
}

TEST(Encode, BindMw)
{
	std::vector<std::byte> buf(sizeof(kiwi_usqe) + sizeof(kiwi_usge));
	std::span<std::byte> slot(buf);
	ibv_mw mw{};
	ibv_mr mr{};
	ibv_send_wr wr{};
	kiwi_usqe h;
	kiwi_ubind b;

	mw.rkey = 0x123407;
	mw.type = IBV_MW_TYPE_2;
	mr.lkey = 0x5501;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = &mw;
	wr.bind_mw.rkey = 0x123408;
	wr.bind_mw.bind_info = {.mr = &mr, .addr = 0x7000, .length = 4096,
				.mw_access_flags = IBV_ACCESS_REMOTE_READ};
	encode_send_wr(wr, slot);
	std::memcpy(&h, slot.data(), sizeof(h));
	std::memcpy(&b, slot.data() + sizeof(h), sizeof(b));
	EXPECT_EQ(h.opcode, KIWI_UWR_BIND_MW);
	EXPECT_EQ(h.wr_id, 3u);
	EXPECT_EQ(h.flags, KIWI_UWR_F_SIGNALED);
	EXPECT_EQ(h.num_sge, 0u);
	EXPECT_EQ(h.rkey, 0x123407u);
	EXPECT_EQ(h.inv_rkey, 0x123408u);
	EXPECT_EQ(h.raddr, 0x7000u);
	EXPECT_EQ(b.length, 4096u);
	EXPECT_EQ(b.mr_lkey, 0x5501u);
	EXPECT_EQ(b.access, unsigned(IBV_ACCESS_REMOTE_READ));
}

TEST(Encode, SendOpcodeRules)
{
	ibv_send_wr wr{};
	uint8_t op;

	wr.opcode = IBV_WR_RDMA_READ;
	wr.num_sge = 1;
	EXPECT_EQ(validate_send_op(wr), 0);
	wr.num_sge = 2;
	EXPECT_EQ(validate_send_op(wr), EINVAL);	// one sink only
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(validate_send_op(wr), EINVAL);
	wr.send_flags = 0;
	wr.opcode = IBV_WR_TSO;
	EXPECT_EQ(validate_send_op(wr, true, true, true), EOPNOTSUPP);
	EXPECT_FALSE(uwr_opcode(IBV_WR_TSO, &op));
	// Windows: only where the kernel has them (KIWI_UQP_F_MW).
	for (auto mwop : {IBV_WR_LOCAL_INV, IBV_WR_BIND_MW}) {
		wr.opcode = mwop;
		EXPECT_EQ(validate_send_op(wr, true, true), EOPNOTSUPP) << mwop;
		EXPECT_TRUE(uwr_opcode(mwop, &op));
	}
	wr.opcode = IBV_WR_LOCAL_INV;
	EXPECT_EQ(validate_send_op(wr, false, false, true), 0);
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(validate_send_op(wr, false, false, true), EINVAL);
	wr.send_flags = 0;
	// BIND_MW: type 2 windows only, with a region unless unbinding.
	ibv_mw mw{};
	ibv_mr mr{};
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = &mw;
	wr.bind_mw.bind_info.length = 8;
	mw.type = IBV_MW_TYPE_1;
	wr.bind_mw.bind_info.mr = &mr;
	EXPECT_EQ(validate_send_op(wr, false, false, true), EINVAL);
	mw.type = IBV_MW_TYPE_2;
	EXPECT_EQ(validate_send_op(wr, false, false, true), 0);
	wr.bind_mw.bind_info.mr = nullptr;
	EXPECT_EQ(validate_send_op(wr, false, false, true), EINVAL);
	wr.bind_mw.bind_info.length = 0;
	EXPECT_EQ(validate_send_op(wr, false, false, true), EINVAL);
	mw.type = IBV_MW_TYPE_1;
	EXPECT_EQ(validate_bind(&mw, wr.bind_mw.bind_info), 0);
	wr.bind_mw = {};
	// Atomics: only on a QP that may send them (KIWI_UQP_F_ATOMIC),
	// with exactly one 8-byte SGE, not inline.
	ibv_sge asge{.addr = 0x1000, .length = 8, .lkey = 1};
	for (auto at : {IBV_WR_ATOMIC_CMP_AND_SWP,
			IBV_WR_ATOMIC_FETCH_AND_ADD}) {
		wr.opcode = at;
		wr.sg_list = &asge;
		wr.num_sge = 1;
		EXPECT_EQ(validate_send_op(wr), EOPNOTSUPP) << at;
		EXPECT_EQ(validate_send_op(wr, true), EOPNOTSUPP) << at;
		EXPECT_EQ(validate_send_op(wr, false, true), 0) << at;
		asge.length = 4;
		EXPECT_EQ(validate_send_op(wr, false, true), EINVAL) << at;
		asge.length = 8;
		wr.num_sge = 2;
		EXPECT_EQ(validate_send_op(wr, false, true), EINVAL) << at;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_INLINE;
		EXPECT_EQ(validate_send_op(wr, false, true), EINVAL) << at;
		wr.send_flags = 0;
		EXPECT_TRUE(uwr_opcode(at, &op));
	}
	wr.sg_list = nullptr;
	// Immediate data: only on a QP that may send it (KIWI_UQP_F_IMM).
	wr.num_sge = 0;
	for (auto imm : {IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM}) {
		wr.opcode = imm;
		EXPECT_EQ(validate_send_op(wr), EOPNOTSUPP) << imm;
		EXPECT_EQ(validate_send_op(wr, true), 0) << imm;
		EXPECT_TRUE(uwr_opcode(imm, &op));
	}
	// A SEND with immediate data carries no payload (RFC 7306).
	ibv_sge sge{.addr = 0x1000, .length = 1, .lkey = 1};
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	EXPECT_EQ(validate_send_op(wr, true), EINVAL);
	sge.length = 0;
	EXPECT_EQ(validate_send_op(wr, true), 0);
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	sge.length = 100;
	EXPECT_EQ(validate_send_op(wr, true), 0);
	EXPECT_TRUE(uwr_opcode(IBV_WR_SEND, &op));
	EXPECT_EQ(op, KIWI_UWR_SEND);
}

TEST(Encode, CqeToWc)
{
	kiwi_ucqe c{};
	ibv_wc wc;

	c.wr_id = 5;
	c.qp_num = 0x123;
	c.byte_len = 77;
	c.opcode = IBV_WC_RECV;
	c.status = IBV_WC_SUCCESS;
	cqe_to_wc(c, wc);
	EXPECT_EQ(wc.wr_id, 5u);
	EXPECT_EQ(wc.qp_num, 0x123u);
	EXPECT_EQ(wc.byte_len, 77u);
	EXPECT_EQ(wc.opcode, IBV_WC_RECV);
	EXPECT_EQ(wc.wc_flags, 0u);
	c.flags = KIWI_UCQE_F_WITH_INV;
	c.inv_rkey = 0xfeed;
	c.status = IBV_WC_REM_INV_REQ_ERR;
	cqe_to_wc(c, wc);
	EXPECT_EQ(wc.wc_flags, unsigned(IBV_WC_WITH_INV));
	EXPECT_EQ(wc.invalidated_rkey, 0xfeedu);
	EXPECT_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
	// Immediate data: host order in the ring, network order in the wc.
	c.flags = KIWI_UCQE_F_WITH_IMM;
	c.imm_data = 0x11223344;
	c.status = IBV_WC_SUCCESS;
	c.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	cqe_to_wc(c, wc);
	EXPECT_EQ(wc.wc_flags, unsigned(IBV_WC_WITH_IMM));
	EXPECT_EQ(wc.imm_data, htobe32(0x11223344));
	EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
}

// The cq_ex function table over a ring the test fills like the kernel.
TEST(CqEx, StartNextEndAndAccessors)
{
	Image im(8, sizeof(kiwi_ucqe));
	auto cq = std::make_unique<Cq>();
	ibv_cq_ex *cx = &cq->vcq.cq_ex;
	ibv_poll_cq_attr attr{};

	cq->reader.attach(im.ring);
	install_cq_ex_ops(*cx);
	EXPECT_EQ(ibv_start_poll(cx, &attr), ENOENT);	// lock released
	for (uint32_t i = 0; i < 3; i++) {
		kiwi_ucqe c{};
		c.wr_id = 10 + i;
		c.qp_num = 99;
		c.byte_len = i * 100;
		c.opcode = i == 2 ? IBV_WC_RDMA_READ : IBV_WC_RECV;
		c.status = i == 1 ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
		if (i == 0) {
			c.flags = KIWI_UCQE_F_WITH_INV;
			c.inv_rkey = 0xabc;
		}
		std::memcpy(im.ring.slot(i).data(), &c, sizeof(c));
	}
	im.ctl().prod = 3;

	ASSERT_EQ(ibv_start_poll(cx, &attr), 0);
	EXPECT_EQ(cx->wr_id, 10u);
	EXPECT_EQ(cx->status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_wc_read_opcode(cx), IBV_WC_RECV);
	EXPECT_EQ(ibv_wc_read_wc_flags(cx), unsigned(IBV_WC_WITH_INV));
	EXPECT_EQ(ibv_wc_read_invalidated_rkey(cx), 0xabcu);
	EXPECT_EQ(ibv_wc_read_qp_num(cx), 99u);
	EXPECT_EQ(ibv_wc_read_src_qp(cx), 0u);
	EXPECT_EQ(ibv_wc_read_slid(cx), 0u);
	EXPECT_EQ(im.ctl().cons, 0u);	// still ours
	ASSERT_EQ(ibv_next_poll(cx), 0);
	EXPECT_EQ(im.ctl().cons, 1u);	// the first slot is handed back
	EXPECT_EQ(cx->wr_id, 11u);
	EXPECT_EQ(cx->status, IBV_WC_WR_FLUSH_ERR);
	EXPECT_EQ(ibv_wc_read_byte_len(cx), 100u);
	EXPECT_EQ(ibv_wc_read_wc_flags(cx), 0u);
	ibv_end_poll(cx);
	EXPECT_EQ(im.ctl().cons, 2u);

	ASSERT_EQ(ibv_start_poll(cx, &attr), 0);
	EXPECT_EQ(cx->wr_id, 12u);
	EXPECT_EQ(ibv_wc_read_opcode(cx), IBV_WC_RDMA_READ);
	EXPECT_EQ(ibv_next_poll(cx), ENOENT);
	ibv_end_poll(cx);
	EXPECT_EQ(im.ctl().cons, 3u);
	EXPECT_EQ(ibv_start_poll(cx, &attr), ENOENT);
}

// The doorbell protocol of Documentation/rings.rst, with a thread playing
// the kernel's send work: however the two interleave, no WQE may be left
// in the ring while the "kernel" sleeps waiting for a doorbell.
TEST(Doorbell, NoLostWakeup)
{
	Image im(64, 48);
	Producer prod;
	std::atomic<uint32_t> kicks{0};
	std::atomic<bool> stop{false};
	constexpr uint32_t kTotal = 200000;
	uint32_t doorbells = 0;

	prod.attach(im.ring);
	std::thread kernel([&] {
		const Ring &r = im.ring;
		uint32_t head = 0, seen = 0;

		while (!stop.load(std::memory_order_acquire)) {
			if (kicks.load(std::memory_order_acquire) == seen) {
				std::this_thread::yield();	// asleep
				continue;
			}
			seen = kicks.load(std::memory_order_acquire);
			for (;;) {	// the work item
				while (r.prod().load(std::memory_order_acquire) != head)
					r.cons().store(++head, std::memory_order_release);
				r.flags().store(0, std::memory_order_relaxed);
				std::atomic_thread_fence(std::memory_order_seq_cst);
				if (r.prod().load(std::memory_order_relaxed) == head)
					break;
				r.flags().store(KIWI_RING_F_BUSY,
						std::memory_order_relaxed);
			}
		}
	});

	const auto deadline = std::chrono::steady_clock::now() +
			      std::chrono::seconds(60);
	uint32_t posted = 0;
	bool timed_out = false;
	while (posted < kTotal && !timed_out) {
		uint32_t n = std::min<uint32_t>(prod.space(), 1 + posted % 7);

		timed_out = std::chrono::steady_clock::now() > deadline;
		if (!n)
			continue;	// ring full: the kernel is draining
		prod.publish(n);
		posted += n;
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (sq_needs_doorbell(im.ring.flags().load(std::memory_order_relaxed),
				      KIWI_UQP_RTS)) {
			im.ring.flags().store(KIWI_RING_F_BUSY,
					      std::memory_order_relaxed);
			kicks.fetch_add(1, std::memory_order_release);
			doorbells++;
		}
	}
	// Everything posted must drain without another doorbell.
	while (im.ring.cons().load(std::memory_order_acquire) != posted &&
	       std::chrono::steady_clock::now() < deadline)
		std::this_thread::yield();
	stop.store(true, std::memory_order_release);
	kernel.join();
	EXPECT_FALSE(timed_out);
	EXPECT_EQ(im.ring.cons().load(), posted);
	EXPECT_LT(doorbells, posted);	// batching worked at least sometimes
	RecordProperty("doorbells", static_cast<int>(doorbells));
}

} // namespace
} // namespace kiwi
