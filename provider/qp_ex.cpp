// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: extended send posting (ibv_wr_start .. ibv_wr_complete)
// straight into the mapped send ring.
//
// ibv_wr_start takes the send queue lock and ibv_wr_complete/abort drop
// it.  Each opcode call begins a WQE in the next free slot after those
// published (the header carries qp_ex->wr_id and wr_flags); set_sge* and
// set_inline_data* fill its payload.  Nothing is published before
// ibv_wr_complete, which publishes the whole batch at once and rings the
// doorbell at most once -- or, if any call in the batch failed, posts
// nothing and returns that call's error.  ibv_post_send() must not be
// called between ibv_wr_start and its complete/abort (as for every
// provider).
#include <cerrno>
#include <cstring>

#include "objects.h"

namespace kiwi {
namespace {

Qp &qp_of(ibv_qp_ex *q) noexcept
{
	return *Qp::from(q);
}

void fail(Qp &qp, int err) noexcept
{
	if (!qp.batch.err)
		qp.batch.err = err;
	qp.batch.open = false;
}

void wr_start(ibv_qp_ex *q) noexcept
{
	Qp &qp = qp_of(q);

	qp.sq_lock.lock();
	qp.batch = {};
	if (!sq_postable(qp.state()))
		qp.batch.err = ENOTCONN;
}

int wr_complete(ibv_qp_ex *q) noexcept
{
	Qp &qp = qp_of(q);
	const int err = qp.batch.err;

	if (!err)
		qp.sq_published(qp.batch.count);
	qp.batch = {};
	qp.sq_lock.unlock();
	return err;
}

void wr_abort(ibv_qp_ex *q) noexcept
{
	Qp &qp = qp_of(q);

	qp.batch = {};
	qp.sq_lock.unlock();
}

// Start a WQE in the next slot; false (batch failed) if there is none.
bool begin(ibv_qp_ex *q, uint8_t opcode, uint32_t rkey, uint64_t raddr,
	   uint32_t inv_rkey_or_imm) noexcept
{
	Qp &qp = qp_of(q);
	WrBatch &b = qp.batch;
	kiwi_usqe h{};

	b.open = false;
	if (b.err)
		return false;
	if (b.count >= qp.sq_prod.space()) {
		fail(qp, ENOMEM);
		return false;
	}
	h.wr_id = q->wr_id;
	h.opcode = opcode;
	h.flags = uwr_flags(q->wr_flags) & ~KIWI_UWR_F_INLINE;
	h.rkey = rkey;
	h.raddr = raddr;
	h.inv_rkey = inv_rkey_or_imm;	// one field (kiwi-abi.h)
	put_sqe_header(qp.sq_prod.slot(b.count++), h);
	b.open = true;
	return true;
}

// The WQE being built, or an empty span after a failure.
std::span<std::byte> current(Qp &qp) noexcept
{
	if (!qp.batch.open) {
		fail(qp, EINVAL);	// data without an opcode call
		return {};
	}
	return qp.sq_prod.slot(qp.batch.count - 1);
}

void wr_send(ibv_qp_ex *q) noexcept
{
	begin(q, KIWI_UWR_SEND, 0, 0, 0);
}

void wr_send_inv(ibv_qp_ex *q, uint32_t invalidate_rkey) noexcept
{
	begin(q, KIWI_UWR_SEND_INV, 0, 0, invalidate_rkey);
}

void wr_rdma_write(ibv_qp_ex *q, uint32_t rkey, uint64_t raddr) noexcept
{
	begin(q, KIWI_UWR_RDMA_WRITE, rkey, raddr, 0);
}

void wr_rdma_read(ibv_qp_ex *q, uint32_t rkey, uint64_t raddr) noexcept
{
	begin(q, KIWI_UWR_RDMA_READ, rkey, raddr, 0);
}

// Immediate data (RFC 7306), where the QP may send it; it rides in the
// header field a SEND_INV uses for its STag (kiwi-abi.h).
void wr_rdma_write_imm(ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		       __be32 imm_data) noexcept
{
	if (!qp_of(q).sq.imm) {
		fail(qp_of(q), EOPNOTSUPP);
		return;
	}
	begin(q, KIWI_UWR_RDMA_WRITE_IMM, rkey, raddr, be32toh(imm_data));
}

void wr_send_imm(ibv_qp_ex *q, __be32 imm_data) noexcept
{
	if (!qp_of(q).sq.imm) {
		fail(qp_of(q), EOPNOTSUPP);
		return;
	}
	begin(q, KIWI_UWR_SEND_IMM, 0, 0, be32toh(imm_data));
}

// RFC 7306 atomics, where the QP may send them: the operands go after
// the one SGE (kiwi-abi.h), which the WR's wr_set_sge then supplies.
void begin_atomic(ibv_qp_ex *q, uint8_t opcode, uint32_t rkey,
		  uint64_t raddr, uint64_t compare_add, uint64_t swap) noexcept
{
	Qp &qp = qp_of(q);

	if (!qp.sq.atomic) {
		fail(qp, EOPNOTSUPP);
		return;
	}
	if (begin(q, opcode, rkey, raddr, 0))
		put_atomic(current(qp), compare_add, swap);
}

void wr_atomic_cmp_swp(ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
		       uint64_t compare, uint64_t swap) noexcept
{
	begin_atomic(q, KIWI_UWR_ATOMIC_CSWAP, rkey, raddr, compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
			 uint64_t add) noexcept
{
	begin_atomic(q, KIWI_UWR_ATOMIC_FADD, rkey, raddr, add, 0);
}

// Windows (type 2 only: ibv_bind_mw() binds type 1), where the kernel
// has them.  Neither takes SGEs or inline data.
bool mw_ok(Qp &qp) noexcept
{
	if (!qp.sq.mw)
		fail(qp, EOPNOTSUPP);
	return qp.sq.mw;
}

void wr_bind_mw(ibv_qp_ex *q, ibv_mw *mw, uint32_t rkey,
		const ibv_mw_bind_info *bi) noexcept
{
	Qp &qp = qp_of(q);

	if (!mw_ok(qp))
		return;
	if (!bi || !mw || mw->type != IBV_MW_TYPE_2 || validate_bind(mw, *bi)) {
		fail(qp, EINVAL);
		return;
	}
	if (begin(q, KIWI_UWR_BIND_MW, mw->rkey, bi->addr, rkey))
		put_bind(current(qp), *bi);
}

void wr_local_inv(ibv_qp_ex *q, uint32_t invalidate_rkey) noexcept
{
	if (mw_ok(qp_of(q)))
		begin(q, KIWI_UWR_LOCAL_INV, 0, 0, invalidate_rkey);
}

// The opcodes that carry no data at all.
bool no_payload(uint8_t opcode) noexcept
{
	return opcode == KIWI_UWR_BIND_MW || opcode == KIWI_UWR_LOCAL_INV;
}

void set_sge_list(ibv_qp_ex *q, size_t num, const ibv_sge *list) noexcept
{
	Qp &qp = qp_of(q);
	std::span<std::byte> slot = current(qp);

	if (slot.empty())
		return;
	kiwi_usqe h = get_sqe_header(slot);
	const bool atomic = h.opcode == KIWI_UWR_ATOMIC_FADD ||
			    h.opcode == KIWI_UWR_ATOMIC_CSWAP;
	if (num > qp.sq.max_sge || (num && !list) || no_payload(h.opcode) ||
	    (h.opcode == KIWI_UWR_RDMA_READ && num > 1) ||
	    (atomic && (num != 1 || list[0].length != 8))) {
		fail(qp, EINVAL);
		return;
	}
	for (size_t i = 0; h.opcode == KIWI_UWR_SEND_IMM && i < num; i++) {
		if (list[i].length) {	// no payload: RFC 7306
			fail(qp, EINVAL);
			return;
		}
	}
	put_sges(slot, {list, num});
	h.num_sge = static_cast<uint8_t>(num);
	h.flags &= ~KIWI_UWR_F_INLINE;
	h.length = 0;
	put_sqe_header(slot, h);
}

void set_sge(ibv_qp_ex *q, uint32_t lkey, uint64_t addr,
	     uint32_t length) noexcept
{
	const ibv_sge sge{.addr = addr, .length = length, .lkey = lkey};

	set_sge_list(q, 1, &sge);
}

void set_inline_data_list(ibv_qp_ex *q, size_t num,
			  const ibv_data_buf *bufs) noexcept
{
	Qp &qp = qp_of(q);
	std::span<std::byte> slot = current(qp);
	uint64_t total = 0;

	if (slot.empty())
		return;
	kiwi_usqe h = get_sqe_header(slot);
	for (size_t i = 0; i < num; i++)
		total += bufs[i].length;
	if (h.opcode == KIWI_UWR_RDMA_READ || no_payload(h.opcode) ||
	    h.opcode == KIWI_UWR_ATOMIC_FADD ||
	    h.opcode == KIWI_UWR_ATOMIC_CSWAP || total > qp.sq.max_inline ||
	    (num && !bufs) || (h.opcode == KIWI_UWR_SEND_IMM && total)) {
		fail(qp, EINVAL);
		return;
	}
	std::byte *p = sqe_payload(slot).data();
	for (size_t i = 0; i < num; i++) {
		std::memcpy(p, bufs[i].addr, bufs[i].length);
		p += bufs[i].length;
	}
	h.flags |= KIWI_UWR_F_INLINE;
	h.num_sge = 0;
	h.length = static_cast<uint32_t>(total);
	put_sqe_header(slot, h);
}

void set_inline_data(ibv_qp_ex *q, void *addr, size_t length) noexcept
{
	const ibv_data_buf buf{.addr = addr, .length = length};

	set_inline_data_list(q, 1, &buf);
}

// What iWARP (RDMAP v1) or kiwi cannot do: the batch fails with
// EOPNOTSUPP.  create_qp_ex already refuses these send_ops_flags; the
// stubs only make a stray call fail cleanly instead of jumping to NULL.
void unsupported(ibv_qp_ex *q) noexcept
{
	fail(qp_of(q), EOPNOTSUPP);
}

void no_send_tso(ibv_qp_ex *q, void *, uint16_t, uint16_t) noexcept
{
	unsupported(q);
}

void no_ud_addr(ibv_qp_ex *q, ibv_ah *, uint32_t, uint32_t) noexcept
{
	unsupported(q);
}

void no_xrc_srqn(ibv_qp_ex *q, uint32_t) noexcept
{
	unsupported(q);
}

void no_atomic_write(ibv_qp_ex *q, uint32_t, uint64_t, const void *) noexcept
{
	unsupported(q);
}

} // namespace

void install_qp_ex_ops(ibv_qp_ex &q) noexcept
{
	q.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q.wr_atomic_fetch_add = wr_atomic_fetch_add;
	q.wr_bind_mw = wr_bind_mw;
	q.wr_local_inv = wr_local_inv;
	q.wr_rdma_read = wr_rdma_read;
	q.wr_rdma_write = wr_rdma_write;
	q.wr_rdma_write_imm = wr_rdma_write_imm;
	q.wr_send = wr_send;
	q.wr_send_imm = wr_send_imm;
	q.wr_send_inv = wr_send_inv;
	q.wr_send_tso = no_send_tso;
	q.wr_set_ud_addr = no_ud_addr;
	q.wr_set_xrc_srqn = no_xrc_srqn;
	q.wr_set_inline_data = set_inline_data;
	q.wr_set_inline_data_list = set_inline_data_list;
	q.wr_set_sge = set_sge;
	q.wr_set_sge_list = set_sge_list;
	q.wr_start = wr_start;
	q.wr_complete = wr_complete;
	q.wr_abort = wr_abort;
	q.wr_atomic_write = no_atomic_write;
}

} // namespace kiwi
