// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "ring.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>

namespace kiwi {

static_assert(sizeof(kiwi_ring_ctl) == KIWI_RING_CTL_SIZE);
static_assert(offsetof(kiwi_ring_ctl, cons) == 64);
static_assert(offsetof(kiwi_ring_ctl, flags) == 128);
static_assert(sizeof(kiwi_usqe) == 32 && sizeof(kiwi_urqe) == 16);
static_assert(sizeof(kiwi_usge) == 16 && sizeof(kiwi_ucqe) == 24);
// A bind's payload fits every slot: one SGE's room (kiwi-abi.h).
static_assert(sizeof(kiwi_ubind) == sizeof(kiwi_usge));
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);

// --------------------------------------------------------------- Mapping

Mapping::~Mapping()
{
	if (addr_)
		munmap(addr_, len_);
}

void Mapping::swap(Mapping &o) noexcept
{
	std::swap(addr_, o.addr_);
	std::swap(len_, o.len_);
}

int Mapping::map(int fd, uint64_t offset, uint64_t len) noexcept
{
	*this = Mapping();
	if (!len)
		return EPROTO;
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       static_cast<off_t>(offset));
	if (p == MAP_FAILED)
		return errno;
	addr_ = static_cast<std::byte *>(p);
	len_ = len;
	return 0;
}

// ------------------------------------------------------------------ Ring

int Ring::attach(std::span<std::byte> mem, uint32_t slots,
		 uint32_t stride) noexcept
{
	if (!std::has_single_bit(slots) || stride < sizeof(kiwi_ucqe) ||
	    stride % alignof(kiwi_usqe) ||
	    mem.size() < KIWI_RING_CTL_SIZE + uint64_t(slots) * stride)
		return EPROTO;
	ctl_ = reinterpret_cast<kiwi_ring_ctl *>(mem.data());
	base_ = mem.data() + KIWI_RING_CTL_SIZE;
	slots_ = slots;
	stride_ = stride;
	return 0;
}

kiwi_ucqe CqReader::peek(uint32_t k) const noexcept
{
	kiwi_ucqe c;

	std::memcpy(&c, ring_.slot(head_ + k).data(), sizeof(c));
	return c;
}

// ------------------------------------------------------------ encodings

bool uwr_opcode(ibv_wr_opcode op, uint8_t *out) noexcept
{
	switch (op) {
	case IBV_WR_SEND:
		*out = KIWI_UWR_SEND;
		return true;
	case IBV_WR_SEND_WITH_INV:
		*out = KIWI_UWR_SEND_INV;
		return true;
	case IBV_WR_RDMA_WRITE:
		*out = KIWI_UWR_RDMA_WRITE;
		return true;
	case IBV_WR_RDMA_READ:
		*out = KIWI_UWR_RDMA_READ;
		return true;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = KIWI_UWR_RDMA_WRITE_IMM;
		return true;
	case IBV_WR_SEND_WITH_IMM:
		*out = KIWI_UWR_SEND_IMM;
		return true;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = KIWI_UWR_ATOMIC_FADD;
		return true;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = KIWI_UWR_ATOMIC_CSWAP;
		return true;
	case IBV_WR_LOCAL_INV:
		*out = KIWI_UWR_LOCAL_INV;
		return true;
	case IBV_WR_BIND_MW:
		*out = KIWI_UWR_BIND_MW;
		return true;
	default:	// TSO
		return false;
	}
}

uint8_t uwr_flags(unsigned int f) noexcept
{
	return (f & IBV_SEND_SIGNALED ? KIWI_UWR_F_SIGNALED : 0) |
	       (f & IBV_SEND_SOLICITED ? KIWI_UWR_F_SOLICITED : 0) |
	       (f & IBV_SEND_FENCE ? KIWI_UWR_F_FENCE : 0) |
	       (f & IBV_SEND_INLINE ? KIWI_UWR_F_INLINE : 0);
}

void put_sqe_header(std::span<std::byte> slot, const kiwi_usqe &h) noexcept
{
	std::memcpy(slot.data(), &h, sizeof(h));
}

kiwi_usqe get_sqe_header(std::span<const std::byte> slot) noexcept
{
	kiwi_usqe h;

	std::memcpy(&h, slot.data(), sizeof(h));
	return h;
}

void put_sges(std::span<std::byte> slot, std::span<const ibv_sge> sges) noexcept
{
	std::byte *p = sqe_payload(slot).data();

	for (const ibv_sge &s : sges) {
		const kiwi_usge u{.addr = s.addr, .length = s.length,
				  .lkey = s.lkey};

		std::memcpy(p, &u, sizeof(u));
		p += sizeof(u);
	}
}

void put_atomic(std::span<std::byte> slot, uint64_t compare_add,
		uint64_t swap) noexcept
{
	const kiwi_uatomic a{.compare_add = compare_add, .swap = swap};

	std::memcpy(sqe_payload(slot).data() + sizeof(kiwi_usge), &a,
		    sizeof(a));
}

void put_bind(std::span<std::byte> slot, const ibv_mw_bind_info &bi) noexcept
{
	const kiwi_ubind b{.length = bi.length,
			   .mr_lkey = bi.mr ? bi.mr->lkey : 0,
			   .access = bi.mw_access_flags};

	std::memcpy(sqe_payload(slot).data(), &b, sizeof(b));
}

kiwi_usqe bind_header(const ibv_mw &mw, uint32_t new_rkey,
		      const ibv_mw_bind_info &bi) noexcept
{
	kiwi_usqe h{};

	h.opcode = KIWI_UWR_BIND_MW;
	h.rkey = mw.rkey;
	h.inv_rkey = new_rkey;
	h.raddr = bi.addr;
	return h;
}

void encode_send_wr(const ibv_send_wr &wr, std::span<std::byte> slot) noexcept
{
	const auto sg = std::span<const ibv_sge>(
		wr.sg_list, static_cast<std::size_t>(wr.num_sge));
	kiwi_usqe h{};

	if (wr.opcode == IBV_WR_BIND_MW) {
		h = bind_header(*wr.bind_mw.mw, wr.bind_mw.rkey,
				wr.bind_mw.bind_info);
		h.wr_id = wr.wr_id;
		h.flags = uwr_flags(wr.send_flags);
		put_bind(slot, wr.bind_mw.bind_info);
		put_sqe_header(slot, h);
		return;
	}
	h.wr_id = wr.wr_id;
	uwr_opcode(wr.opcode, &h.opcode);
	h.flags = uwr_flags(wr.send_flags);
	if (wr.opcode == IBV_WR_RDMA_WRITE || wr.opcode == IBV_WR_RDMA_READ ||
	    wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		h.rkey = wr.wr.rdma.rkey;
		h.raddr = wr.wr.rdma.remote_addr;
	}
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		h.rkey = wr.wr.atomic.rkey;
		h.raddr = wr.wr.atomic.remote_addr;
		put_atomic(slot, wr.wr.atomic.compare_add, wr.wr.atomic.swap);
	}
	if (wr.opcode == IBV_WR_SEND_WITH_INV ||
	    wr.opcode == IBV_WR_LOCAL_INV)
		h.inv_rkey = wr.invalidate_rkey;
	else if (wr.opcode == IBV_WR_SEND_WITH_IMM ||
		 wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		h.imm_data = be32toh(wr.imm_data);
	if (h.flags & KIWI_UWR_F_INLINE) {
		std::byte *p = sqe_payload(slot).data();

		for (const ibv_sge &s : sg) {
			std::memcpy(p + h.length,
				    reinterpret_cast<const void *>(s.addr),
				    s.length);
			h.length += s.length;
		}
	} else if (wr.opcode != IBV_WR_LOCAL_INV) {
		h.num_sge = static_cast<uint8_t>(sg.size());
		put_sges(slot, sg);
	}
	put_sqe_header(slot, h);
}

void encode_recv_wr(const ibv_recv_wr &wr, std::span<std::byte> slot) noexcept
{
	const kiwi_urqe h{.wr_id = wr.wr_id,
			  .num_sge = static_cast<uint32_t>(wr.num_sge),
			  .rsvd = 0};
	std::byte *p = slot.data() + sizeof(h);

	std::memcpy(slot.data(), &h, sizeof(h));
	for (int i = 0; i < wr.num_sge; i++) {
		const ibv_sge &s = wr.sg_list[i];
		const kiwi_usge u{.addr = s.addr, .length = s.length,
				  .lkey = s.lkey};

		std::memcpy(p, &u, sizeof(u));
		p += sizeof(u);
	}
}

unsigned int cqe_wc_flags(const kiwi_ucqe &c) noexcept
{
	return (c.flags & KIWI_UCQE_F_WITH_INV ? IBV_WC_WITH_INV : 0) |
	       (c.flags & KIWI_UCQE_F_WITH_IMM ? IBV_WC_WITH_IMM : 0);
}

void cqe_to_wc(const kiwi_ucqe &c, ibv_wc &wc) noexcept
{
	wc = ibv_wc{};
	wc.wr_id = c.wr_id;
	wc.status = static_cast<ibv_wc_status>(c.status);
	wc.opcode = static_cast<ibv_wc_opcode>(c.opcode);
	wc.byte_len = c.byte_len;
	wc.qp_num = c.qp_num;
	wc.wc_flags = cqe_wc_flags(c);
	if (wc.wc_flags & IBV_WC_WITH_INV)
		wc.invalidated_rkey = c.inv_rkey;
	else if (wc.wc_flags & IBV_WC_WITH_IMM)
		wc.imm_data = htobe32(c.imm_data);
}

} // namespace kiwi
