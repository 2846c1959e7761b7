// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: PD, MR, CQ, QP and SRQ verbs.  Control path and (for now)
// data path both go through the uverbs commands of libibverbs.
#include <algorithm>
#include <cerrno>

#include "objects.h"

namespace kiwi {

namespace {

// Driver response layouts (see DrvResp): no padding between the parts.
using CqResp = DrvResp<ib_uverbs_create_cq_resp, kiwi_uresp_create_cq>;
using ResizeResp = DrvResp<ib_uverbs_resize_cq_resp, kiwi_uresp_create_cq>;
using QpResp = DrvResp<ib_uverbs_create_qp_resp, kiwi_uresp_create_qp>;
using SrqResp = DrvResp<ib_uverbs_create_srq_resp, kiwi_uresp_create_srq>;
static_assert(packed_resp<ib_uverbs_create_cq_resp, kiwi_uresp_create_cq>);
static_assert(packed_resp<ib_uverbs_resize_cq_resp, kiwi_uresp_create_cq>);
static_assert(packed_resp<ib_uverbs_create_qp_resp, kiwi_uresp_create_qp>);
static_assert(packed_resp<ib_uverbs_create_srq_resp, kiwi_uresp_create_srq>);

// Runs a create path; the only thing in it that can throw is the
// allocation, which becomes ENOMEM instead of crossing the C ABI.
template <class F> auto guarded_create(F &&f) noexcept -> decltype(f())
{
	try {
		return f();
	} catch (const std::bad_alloc &) {
		errno = ENOMEM;
	} catch (...) {
		errno = EIO;
	}
	return nullptr;
}

// For the create paths: fail with errno set, return NULL.
std::nullptr_t fail(int err) noexcept
{
	errno = err;
	return nullptr;
}

} // namespace

// ------------------------------------------------------------- data path
// The only functions that change when the queues get mapped to user space.

int Cq::poll(std::span<ibv_wc> wc) noexcept
{
	return ibv_cmd_poll_cq(ibv(), static_cast<int>(wc.size()), wc.data());
}

int Cq::arm(bool solicited_only) noexcept
{
	return ibv_cmd_req_notify_cq(ibv(), solicited_only);
}

int Qp::post_send(ibv_send_wr *wr, ibv_send_wr **bad) noexcept
{
	if (int err = validate_send_chain(wr, sq, bad))
		return err;
	return ibv_cmd_post_send(ibv(), wr, bad);
}

int Qp::post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept
{
	if (vqp.qp.srq) {	// receives go to the SRQ
		*bad = wr;
		return EINVAL;
	}
	if (int err = validate_recv_chain(wr, rq, bad))
		return err;
	return ibv_cmd_post_recv(ibv(), wr, bad);
}

int Srq::post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept
{
	const QueueLimits lim{depth.load(std::memory_order_relaxed), max_sge, 0};

	if (int err = validate_recv_chain(wr, lim, bad))
		return err;
	return ibv_cmd_post_srq_recv(ibv(), wr, bad);
}

namespace ops {

// -------------------------------------------------------------------- PD

ibv_pd *alloc_pd(ibv_context *ctx) noexcept
{
	return guarded_create([&]() -> ibv_pd * {
		auto pd = std::make_unique<Pd>();
		struct ibv_alloc_pd cmd {};
		ib_uverbs_alloc_pd_resp resp{};

		if (int err = ibv_cmd_alloc_pd(ctx, &pd->pd, &cmd, sizeof(cmd),
					       &resp, sizeof(resp)))
			return fail(err);
		return &hand_over(std::move(pd))->pd;
	});
}

int dealloc_pd(ibv_pd *ibpd) noexcept
{
	if (int err = ibv_cmd_dealloc_pd(ibpd))
		return err;
	take_back<Pd>(ibpd);
	return 0;
}

// -------------------------------------------------------------------- MR

ibv_mr *reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
	       int access) noexcept
{
	return guarded_create([&]() -> ibv_mr * {
		auto mr = std::make_unique<Mr>();
		struct ibv_reg_mr cmd {};
		ib_uverbs_reg_mr_resp resp{};

		// hca_va is the iova of ibv_reg_mr_iova2(); plain
		// ibv_reg_mr() passes addr.  The kernel owns the mapping.
		if (int err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access,
					     &mr->vmr, &cmd, sizeof(cmd),
					     &resp, sizeof(resp)))
			return fail(err);
		return &hand_over(std::move(mr))->vmr.ibv_mr;
	});
}

int dereg_mr(verbs_mr *vmr) noexcept
{
	if (int err = ibv_cmd_dereg_mr(vmr))
		return err;
	take_back<Mr>(vmr);
	return 0;
}

// -------------------------------------------------------------------- CQ

ibv_cq *create_cq(ibv_context *ctx, int cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept
{
	if (int err = validate_create_cq(cqe, comp_vector,
					 ctx->num_comp_vectors))
		return fail(err);

	return guarded_create([&]() -> ibv_cq * {
		auto cq = std::make_unique<Cq>();
		struct ibv_create_cq cmd {};
		CqResp resp{};

		if (int err = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector,
						cq->ibv(), &cmd, sizeof(cmd),
						resp.core(), resp.size))
			return fail(err);
		const kiwi_uresp_create_cq drv = resp.drv();
		cq->cq_id = drv.cq_id;
		cq->num_cqe = drv.num_cqe;
		return hand_over(std::move(cq))->ibv();
	});
}

int poll_cq(ibv_cq *ibcq, int num_entries, ibv_wc *wc) noexcept
{
	if (num_entries < 0 || (num_entries > 0 && !wc)) {
		errno = EINVAL;
		return -1;
	}
	Cq *cq = Cq::from(ibcq);
	// More than the capacity can never be returned; bounding the request
	// also bounds the response buffer libibverbs allocates per call.
	uint32_t cap = std::max(cq->num_cqe, static_cast<uint32_t>(ibcq->cqe));
	auto n = std::min(static_cast<uint32_t>(num_entries), cap);

	return cq->poll({wc, n});
}

int req_notify_cq(ibv_cq *cq, int solicited_only) noexcept
{
	return Cq::from(cq)->arm(solicited_only != 0);
}

int resize_cq(ibv_cq *ibcq, int cqe) noexcept
{
	if (int err = validate_resize_cq(cqe))
		return err;

	struct ibv_resize_cq cmd {};
	ResizeResp resp{};

	// libibverbs updates ibcq->cqe from the core response.
	if (int err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd),
					resp.core(), resp.size))
		return err;
	Cq::from(ibcq)->num_cqe = resp.drv().num_cqe;
	return 0;
}

int destroy_cq(ibv_cq *cq) noexcept
{
	if (int err = ibv_cmd_destroy_cq(cq))
		return err;
	take_back<Cq>(cq);
	return 0;
}

// -------------------------------------------------------------------- QP

ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) noexcept
{
	Context *ctx = Context::from(pd->context);

	if (int err = validate_create_qp(attr, ctx->max_inline))
		return fail(err);

	return guarded_create([&]() -> ibv_qp * {
		auto qp = std::make_unique<Qp>();
		struct ibv_create_qp cmd {};
		QpResp resp{};

		// On success libibverbs has copied the granted sizes from the
		// core response into attr->cap.
		if (int err = ibv_cmd_create_qp(pd, qp->ibv(), attr, &cmd,
						sizeof(cmd), resp.core(), resp.size))
			return fail(err);

		const ibv_qp_cap &cap = attr->cap;
		const kiwi_uresp_create_qp drv = resp.drv();
		qp->qp_id = drv.qp_id;
		qp->sq = {std::max(cap.max_send_wr, drv.num_sqe),
			  cap.max_send_sge, cap.max_inline_data};
		qp->rq = {attr->srq ? 0 : std::max(cap.max_recv_wr, drv.num_rqe),
			  cap.max_recv_sge, 0};
		return hand_over(std::move(qp))->ibv();
	});
}

int query_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept
{
	struct ibv_query_qp cmd {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask) noexcept
{
	struct ibv_modify_qp cmd {};

	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
}

int destroy_qp(ibv_qp *qp) noexcept
{
	if (int err = ibv_cmd_destroy_qp(qp))
		return err;
	take_back<Qp>(qp);
	return 0;
}

int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept
{
	ibv_send_wr *ignored;

	return Qp::from(qp)->post_send(wr, bad_wr ? bad_wr : &ignored);
}

int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	ibv_recv_wr *ignored;

	return Qp::from(qp)->post_recv(wr, bad_wr ? bad_wr : &ignored);
}

// ------------------------------------------------------------------- SRQ

ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) noexcept
{
	if (int err = validate_create_srq(attr))
		return fail(err);

	return guarded_create([&]() -> ibv_srq * {
		auto srq = std::make_unique<Srq>();
		struct ibv_create_srq cmd {};
		SrqResp resp{};

		srq->vsrq.srq_type = IBV_SRQT_BASIC;
		if (int err = ibv_cmd_create_srq(pd, srq->ibv(), attr, &cmd,
						 sizeof(cmd), resp.core(), resp.size))
			return fail(err);

		const kiwi_uresp_create_srq drv = resp.drv();
		srq->srq_id = drv.srq_id;
		srq->max_sge = attr->attr.max_sge;
		srq->depth = std::max(attr->attr.max_wr, drv.num_rqe);
		return hand_over(std::move(srq))->ibv();
	});
}

int query_srq(ibv_srq *srq, ibv_srq_attr *attr) noexcept
{
	struct ibv_query_srq cmd {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int modify_srq(ibv_srq *ibsrq, ibv_srq_attr *attr, int attr_mask) noexcept
{
	struct ibv_modify_srq cmd {};

	if (int err = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd,
					 sizeof(cmd)))
		return err;
	if (attr_mask & IBV_SRQ_MAX_WR) {
		// The kernel may round the new size; learn the real one.
		ibv_srq_attr now{};

		if (query_srq(ibsrq, &now) == 0)
			Srq::from(ibsrq)->depth.store(now.max_wr,
						      std::memory_order_relaxed);
	}
	return 0;
}

int destroy_srq(ibv_srq *srq) noexcept
{
	if (int err = ibv_cmd_destroy_srq(srq))
		return err;
	take_back<Srq>(srq);
	return 0;
}

int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
		  ibv_recv_wr **bad_wr) noexcept
{
	ibv_recv_wr *ignored;

	return Srq::from(srq)->post_recv(wr, bad_wr ? bad_wr : &ignored);
}

} // namespace ops
} // namespace kiwi
