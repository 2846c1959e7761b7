// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: ibv_cq_ex polling (ibv_start_poll / ibv_next_poll /
// ibv_end_poll and the ibv_wc_read_* accessors) over the mapped CQ ring.
//
// start_poll takes the CQ lock and end_poll releases it (libibverbs'
// rule: no end_poll after a start_poll that returned ENOENT).  Each
// completion is copied out of the ring when it becomes current and its
// slot is handed back when the next one is requested or polling ends.
#include <cerrno>

#include "objects.h"

namespace kiwi {
namespace {

Cq &cq_of(ibv_cq_ex *c) noexcept
{
	return *Cq::from(c);
}

// Make the oldest unconsumed completion current, if there is one.
int load_next(Cq &cq, ibv_cq_ex *c) noexcept
{
	if (!cq.reader.ready()) {
		cq.ex_taken = 0;
		return ENOENT;
	}
	cq.ex_cur = cq.reader.peek(0);
	cq.ex_taken = 1;
	c->wr_id = cq.ex_cur.wr_id;
	c->status = static_cast<ibv_wc_status>(cq.ex_cur.status);
	return 0;
}

int start_poll(ibv_cq_ex *c, ibv_poll_cq_attr *attr) noexcept
{
	Cq &cq = cq_of(c);

	if (attr && attr->comp_mask)
		return EINVAL;
	cq.lock.lock();
	if (int err = load_next(cq, c)) {
		cq.lock.unlock();
		return err;
	}
	return 0;
}

int next_poll(ibv_cq_ex *c) noexcept
{
	Cq &cq = cq_of(c);

	if (cq.ex_taken)
		cq.reader.consume(1);
	return load_next(cq, c);
}

void end_poll(ibv_cq_ex *c) noexcept
{
	Cq &cq = cq_of(c);

	if (cq.ex_taken)
		cq.reader.consume(1);
	cq.ex_taken = 0;
	cq.lock.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex *c) noexcept
{
	return static_cast<ibv_wc_opcode>(cq_of(c).ex_cur.opcode);
}

uint32_t read_byte_len(ibv_cq_ex *c) noexcept
{
	return cq_of(c).ex_cur.byte_len;
}

// The immediate data in network order; ibv_wc_read_invalidated_rkey()
// returns this same field unconverted for an invalidated STag.
__be32 read_imm_data(ibv_cq_ex *c) noexcept
{
	const kiwi_ucqe &e = cq_of(c).ex_cur;

	if (e.flags & KIWI_UCQE_F_WITH_IMM)
		return static_cast<__be32>(htobe32(e.imm_data));
	return e.flags & KIWI_UCQE_F_WITH_INV ? static_cast<__be32>(e.inv_rkey) : 0;
}

uint32_t read_qp_num(ibv_cq_ex *c) noexcept
{
	return cq_of(c).ex_cur.qp_num;
}

unsigned int read_wc_flags(ibv_cq_ex *c) noexcept
{
	return cqe_wc_flags(cq_of(c).ex_cur);
}

// iWARP has no vendor error, source QP, LIDs or service levels: the
// standard fields are honestly zero, as in an ibv_wc.
uint32_t read_zero32(ibv_cq_ex *) noexcept
{
	return 0;
}

uint8_t read_zero8(ibv_cq_ex *) noexcept
{
	return 0;
}

// Never requested (create_cq_ex refuses these wc_flags), never garbage.
uint64_t read_zero64(ibv_cq_ex *) noexcept
{
	return 0;
}

uint16_t read_zero16(ibv_cq_ex *) noexcept
{
	return 0;
}

void read_tm_info(ibv_cq_ex *, ibv_wc_tm_info *info) noexcept
{
	*info = ibv_wc_tm_info{};
}

} // namespace

void install_cq_ex_ops(ibv_cq_ex &c) noexcept
{
	c.start_poll = start_poll;
	c.next_poll = next_poll;
	c.end_poll = end_poll;
	c.read_opcode = read_opcode;
	c.read_vendor_err = read_zero32;
	c.read_byte_len = read_byte_len;
	c.read_imm_data = read_imm_data;
	c.read_qp_num = read_qp_num;
	c.read_src_qp = read_zero32;
	c.read_wc_flags = read_wc_flags;
	c.read_slid = read_zero32;
	c.read_sl = read_zero8;
	c.read_dlid_path_bits = read_zero8;
	c.read_completion_ts = read_zero64;
	c.read_cvlan = read_zero16;
	c.read_flow_tag = read_zero32;
	c.read_tm_info = read_tm_info;
	c.read_completion_wallclock_ns = read_zero64;
}

} // namespace kiwi
