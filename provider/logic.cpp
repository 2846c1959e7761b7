// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "logic.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kiwi {

namespace {

constexpr std::string_view kPrefix = KIWI_DEV_NAME_PREFIX;

} // namespace

const verbs_match_ent kMatchTable[2] = {
	{
		.driver_data = nullptr,
		.u = {.modalias = kNameModalias},
		.vendor = 0,
		.device = 0,
		.kind = VERBS_MATCH_MODALIAS,
	},
	{}, // VERBS_MATCH_SENTINEL
};

namespace {

// Shared by the send/recv/srq-recv chain walkers: both WR types have
// next/sg_list/num_sge; only send WRs can carry inline data.
template <class Wr>
int validate_chain(Wr *wr, const QueueLimits &lim, Wr **bad,
		   auto inline_of, auto check_op) noexcept
{
	uint32_t count = 0;

	for (const Wr *i = wr; i; i = i->next) {
		int err = ++count > lim.depth ? ENOMEM : check_op(*i);

		if (!err)
			err = validate_sge_list(i->sg_list, i->num_sge,
						lim.max_sge, inline_of(*i),
						lim.max_inline);
		if (err) {
			*bad = wr;
			return err;
		}
	}
	return 0;
}

} // namespace

bool is_kiwi_ibdev_name(std::string_view name) noexcept
{
	return name.size() > kPrefix.size() && name.starts_with(kPrefix);
}

bool match_device(const verbs_sysfs_dev &dev, bool has_kiwi_attr) noexcept
{
	// ibdev_name is NUL-terminated by libibverbs; strnlen guards anyway.
	std::string_view name(dev.ibdev_name,
			      strnlen(dev.ibdev_name, sizeof(dev.ibdev_name)));

	if (has_kiwi_attr)
		return true;
	return dev.match == &kMatchTable[0] && is_kiwi_ibdev_name(name);
}

int check_context_resp(const kiwi_uresp_alloc_ctx &resp) noexcept
{
	return abi_supported(resp.abi_version) ? 0 : EPROTO;
}

void format_fw_ver(uint64_t raw, std::span<char> out) noexcept
{
	if (out.empty())
		return;
	snprintf(out.data(), out.size(), "%u.%u.%u",
		 static_cast<unsigned>((raw >> 32) & 0xffff),
		 static_cast<unsigned>((raw >> 16) & 0xffff),
		 static_cast<unsigned>(raw & 0xffff));
}

int validate_create_cq(int cqe, int comp_vector, int num_comp_vectors) noexcept
{
	if (cqe < 1)
		return EINVAL;
	if (comp_vector < 0 ||
	    (num_comp_vectors > 0 && comp_vector >= num_comp_vectors))
		return EINVAL;
	return 0;
}

int validate_resize_cq(int cqe) noexcept
{
	return cqe < 1 ? EINVAL : 0;
}

int validate_create_qp(const ibv_qp_init_attr *attr,
		       uint32_t max_inline) noexcept
{
	if (!attr)
		return EINVAL;
	// Decided before anything else: other types never reach the kernel.
	if (attr->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	if (!attr->send_cq || !attr->recv_cq)
		return EINVAL;
	if (attr->cap.max_send_sge > KIWI_MAX_SGE ||
	    attr->cap.max_recv_sge > KIWI_MAX_SGE)
		return EINVAL;
	if (attr->cap.max_inline_data > max_inline)
		return EINVAL;
	return 0;
}

int validate_create_srq(const ibv_srq_init_attr *attr) noexcept
{
	if (!attr)
		return EINVAL;
	if (attr->attr.max_sge > KIWI_MAX_SGE)
		return EINVAL;
	return 0;
}

int validate_sge_list(const ibv_sge *list, int num_sge, uint32_t max_sge,
		      bool inline_data, uint32_t max_inline) noexcept
{
	if (num_sge < 0 || static_cast<uint32_t>(num_sge) > max_sge)
		return EINVAL;
	if (num_sge > 0 && !list)
		return EINVAL;
	if (inline_data) {
		uint64_t bytes = 0;

		for (const ibv_sge &sge : sges(list, num_sge))
			bytes += sge.length;
		if (bytes > max_inline)
			return EINVAL;
	}
	return 0;
}

int validate_send_chain(ibv_send_wr *wr, const QueueLimits &lim,
			ibv_send_wr **bad) noexcept
{
	return validate_chain(
		wr, lim, bad,
		[](const ibv_send_wr &w) {
			return (w.send_flags & IBV_SEND_INLINE) != 0;
		},
		[&lim](const ibv_send_wr &w) {
			return validate_send_op(w, lim.imm, lim.atomic,
						lim.mw);
		});
}

int validate_recv_chain(ibv_recv_wr *wr, const QueueLimits &lim,
			ibv_recv_wr **bad) noexcept
{
	return validate_chain(
		wr, lim, bad, [](const ibv_recv_wr &) { return false; },
		[](const ibv_recv_wr &) { return 0; });
}

int validate_bind(const ibv_mw *mw, const ibv_mw_bind_info &bi) noexcept
{
	if (!mw)
		return EINVAL;
	if (!bi.length)
		return mw->type == IBV_MW_TYPE_1 ? 0 : EINVAL;
	return bi.mr ? 0 : EINVAL;
}

int validate_send_op(const ibv_send_wr &wr, bool imm, bool atomic,
		     bool mw) noexcept
{
	uint64_t bytes = 0;

	switch (wr.opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return imm ? 0 : EOPNOTSUPP;
	case IBV_WR_SEND_WITH_IMM:
		if (!imm)
			return EOPNOTSUPP;
		if (wr.num_sge < 0 || (wr.num_sge && !wr.sg_list))
			return EINVAL;
		for (const ibv_sge &sge : sges(wr.sg_list, wr.num_sge))
			bytes += sge.length;
		return bytes ? EINVAL : 0;
	case IBV_WR_RDMA_READ:
		// One sink, and nothing to send inline.
		return wr.num_sge > 1 || (wr.send_flags & IBV_SEND_INLINE) ?
			       EINVAL : 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		// RFC 7306 atomics, where the peer is known to take them.
		if (!atomic)
			return EOPNOTSUPP;
		return wr.num_sge != 1 || !wr.sg_list ||
			       wr.sg_list[0].length != 8 ||
			       (wr.send_flags & IBV_SEND_INLINE) ?
			       EINVAL : 0;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		if (!mw)
			return EOPNOTSUPP;
		if (wr.send_flags & IBV_SEND_INLINE)
			return EINVAL;
		if (wr.opcode == IBV_WR_LOCAL_INV)
			return 0;
		if (!wr.bind_mw.mw || wr.bind_mw.mw->type != IBV_MW_TYPE_2)
			return EINVAL;
		return validate_bind(wr.bind_mw.mw, wr.bind_mw.bind_info);
	default:	// TSO
		return EOPNOTSUPP;
	}
}

} // namespace kiwi
