// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: the user side of the mapped rings of kiwi-abi.h (see
// Documentation/rings.rst) -- mapping ownership, index arithmetic and the
// WQE/CQE encodings.  No system calls except mmap/munmap, no libibverbs
// calls, so provider/tests can drive it against a buffer standing in for
// the kernel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include <infiniband/verbs.h>
#include <rdma/kiwi-abi.h>

namespace kiwi {

// Owner of one mmap()ed ring: unmapped when destroyed.
class Mapping {
public:
	Mapping() noexcept = default;
	~Mapping();
	Mapping(Mapping &&o) noexcept { swap(o); }
	Mapping &operator=(Mapping &&o) noexcept
	{
		Mapping tmp(static_cast<Mapping &&>(o));
		swap(tmp);
		return *this;
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;

	// Maps `len` bytes at `offset` of the uverbs command fd, shared and
	// writable.  Returns 0 or an errno value; on failure *this is empty.
	int map(int fd, uint64_t offset, uint64_t len) noexcept;
	std::span<std::byte> bytes() const noexcept { return {addr_, len_}; }

private:
	void swap(Mapping &o) noexcept;
	std::byte *addr_ = nullptr;
	std::size_t len_ = 0;
};

// A ring laid out as in kiwi-abi.h: control block, then `slots` slots of
// `stride` bytes.  Does not own the memory.
class Ring {
public:
	// Checks that the geometry fits the memory: 0 or EPROTO.
	int attach(std::span<std::byte> mem, uint32_t slots,
		   uint32_t stride) noexcept;
	bool attached() const noexcept { return ctl_ != nullptr; }
	uint32_t slots() const noexcept { return slots_; }
	uint32_t stride() const noexcept { return stride_; }
	std::span<std::byte> slot(uint32_t idx) const noexcept
	{
		return {base_ + std::size_t(idx & (slots_ - 1)) * stride_,
			stride_};
	}
	std::atomic_ref<uint32_t> prod() const noexcept
	{
		return std::atomic_ref<uint32_t>(ctl_->prod);
	}
	std::atomic_ref<uint32_t> cons() const noexcept
	{
		return std::atomic_ref<uint32_t>(ctl_->cons);
	}
	std::atomic_ref<uint32_t> flags() const noexcept
	{
		return std::atomic_ref<uint32_t>(ctl_->flags);
	}
	std::atomic_ref<uint32_t> qp_state() const noexcept
	{
		return std::atomic_ref<uint32_t>(ctl_->qp_state);
	}

private:
	kiwi_ring_ctl *ctl_ = nullptr;
	std::byte *base_ = nullptr;
	uint32_t slots_ = 0;
	uint32_t stride_ = 0;
};

// The provider as producer (SQ, RQ, SRQ): fill slots beyond prod, then
// publish them with a release store.  Not thread-safe: callers lock.
class Producer {
public:
	void attach(const Ring &r) noexcept
	{
		ring_ = r;
		next_ = r.prod().load(std::memory_order_relaxed);
	}
	const Ring &ring() const noexcept { return ring_; }
	// Slots the consumer has handed back (acquire: it is done reading).
	uint32_t space() const noexcept
	{
		uint32_t used = next_ - ring_.cons().load(std::memory_order_acquire);

		return used >= ring_.slots() ? 0 : ring_.slots() - used;
	}
	// The k-th slot after the published ones.
	std::span<std::byte> slot(uint32_t k) const noexcept
	{
		return ring_.slot(next_ + k);
	}
	void publish(uint32_t n) noexcept
	{
		next_ += n;
		ring_.prod().store(next_, std::memory_order_release);
	}

private:
	Ring ring_;
	uint32_t next_ = 0;
};

// The provider as CQ consumer.  Not thread-safe: callers lock.
class CqReader {
public:
	void attach(const Ring &r) noexcept
	{
		ring_ = r;
		head_ = r.cons().load(std::memory_order_relaxed);
	}
	const Ring &ring() const noexcept { return ring_; }
	// Completions available now (acquire: their slots are written).
	uint32_t ready() const noexcept
	{
		uint32_t n = ring_.prod().load(std::memory_order_acquire) - head_;

		return n > ring_.slots() ? ring_.slots() : n;
	}
	// No completion to take, as far as can be seen without the poll
	// lock: the shared cons only grows, so a stale value errs towards
	// "not empty" and the locked ready() decides.
	bool looks_empty() const noexcept
	{
		return ring_.prod().load(std::memory_order_relaxed) ==
		       ring_.cons().load(std::memory_order_relaxed);
	}
	// Copy of the k-th unconsumed completion; k < ready().
	kiwi_ucqe peek(uint32_t k) const noexcept;
	// Hand n slots back to the kernel.
	void consume(uint32_t n) noexcept
	{
		head_ += n;
		ring_.cons().store(head_, std::memory_order_release);
	}

private:
	Ring ring_;
	uint32_t head_ = 0;
};

// ------------------------------------------------------------ encodings

// Whether a QP in this kiwi_uqp_state accepts send WRs (else ENOTCONN).
constexpr bool sq_postable(uint32_t state) noexcept
{
	return state == KIWI_UQP_RTS || state == KIWI_UQP_TERMINATE ||
	       state == KIWI_UQP_ERROR;
}

// After publishing send WQEs: does the kernel need the doorbell?  Yes
// unless its send processing is running (BUSY) on a connected QP; out
// of RTS the doorbell is what flushes the WQEs.
constexpr bool sq_needs_doorbell(uint32_t flags, uint32_t state) noexcept
{
	return !(flags & KIWI_RING_F_BUSY) || state != KIWI_UQP_RTS;
}

// After publishing receive WQEs: a failing QP flushes them only on a
// doorbell.
constexpr bool rq_needs_doorbell(uint32_t state) noexcept
{
	return state == KIWI_UQP_TERMINATE || state == KIWI_UQP_ERROR;
}

// KIWI_UWR_* for a verbs send opcode; false if kiwi cannot send it.
bool uwr_opcode(ibv_wr_opcode op, uint8_t *out) noexcept;
// KIWI_UWR_F_* for ibv_send_flags.
uint8_t uwr_flags(unsigned int send_flags) noexcept;

// Payload bytes of a send slot, i.e. after the header.
inline std::span<std::byte> sqe_payload(std::span<std::byte> slot) noexcept
{
	return slot.subspan(sizeof(kiwi_usqe));
}

void put_sqe_header(std::span<std::byte> slot, const kiwi_usqe &h) noexcept;
kiwi_usqe get_sqe_header(std::span<const std::byte> slot) noexcept;
// SGEs into the payload (the caller checked they fit).
void put_sges(std::span<std::byte> slot,
	      std::span<const ibv_sge> sges) noexcept;

// An atomic WQE's operands, after its one SGE (the slot has room).
void put_atomic(std::span<std::byte> slot, uint64_t compare_add,
		uint64_t swap) noexcept;
// A BIND_MW WQE: the header (without wr_id and flags) and the payload.
kiwi_usqe bind_header(const ibv_mw &mw, uint32_t new_rkey,
		      const ibv_mw_bind_info &bi) noexcept;
void put_bind(std::span<std::byte> slot, const ibv_mw_bind_info &bi) noexcept;
// Encodes a validated send WR (validate_send_chain) into a slot.
void encode_send_wr(const ibv_send_wr &wr, std::span<std::byte> slot) noexcept;
// Encodes a validated receive WR into an RQ/SRQ slot.
void encode_recv_wr(const ibv_recv_wr &wr, std::span<std::byte> slot) noexcept;

// ibv_wc_flags of a completion.
unsigned int cqe_wc_flags(const kiwi_ucqe &c) noexcept;
// The ibv_wc the kernel's completion stands for.
void cqe_to_wc(const kiwi_ucqe &c, ibv_wc &wc) noexcept;

} // namespace kiwi
