// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: PD, MR, CQ, QP and SRQ verbs.  The control path goes
// through the uverbs commands of libibverbs; the data path through the
// mapped rings (ring.h), with a uverbs POST_SEND of no WRs as the send
// doorbell.
#include <algorithm>
#include <cerrno>

#include <unistd.h>

#include "objects.h"

namespace kiwi {

namespace {

// The doorbell: uverbs POST_SEND with no WRs, written straight to the
// command fd.  libibverbs' ibv_cmd_post_send() would route it through the
// ioctl INVOKE_WRITE method, whose attribute handling costs more than the
// legacy write path on every doorbell; the kernel runs the same handler.
struct DoorbellCmd {
	ib_uverbs_cmd_hdr hdr;
	ib_uverbs_post_send body;
};
static_assert(sizeof(DoorbellCmd) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send));

void ring_doorbell(ibv_qp *qp) noexcept
{
	ib_uverbs_post_send_resp resp{};
	DoorbellCmd cmd{};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.body.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.body.qp_handle = qp->handle;
	cmd.body.wqe_size = sizeof(ib_uverbs_send_wr);
	// WQEs are posted either way; a failed doorbell (QP just left RTS)
	// is followed by a flush.
	(void)!write(qp->context->cmd_fd, &cmd, sizeof(cmd));
}

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

int Cq::attach(int cmd_fd, const kiwi_uresp_create_cq &resp) noexcept
{
	Mapping m;
	Ring ring;

	if (resp.cqe_size != sizeof(kiwi_ucqe))
		return EPROTO;
	if (int err = m.map(cmd_fd, resp.mmap_offset, resp.mmap_len))
		return err;
	if (int err = ring.attach(m.bytes(), resp.num_cqe, resp.cqe_size))
		return err;
	map = std::move(m);	// unmaps a ring replaced by resize
	reader.attach(ring);
	num_cqe = resp.num_cqe;
	return 0;
}

int Cq::poll(std::span<ibv_wc> wc) noexcept
{
	// Busy pollers mostly find nothing: say so without the lock.
	if (reader.looks_empty())
		return 0;
	std::lock_guard guard(lock);
	uint32_t n = std::min<uint32_t>(reader.ready(),
					static_cast<uint32_t>(wc.size()));

	for (uint32_t i = 0; i < n; i++)
		cqe_to_wc(reader.peek(i), wc[i]);
	if (n)
		reader.consume(n);
	return static_cast<int>(n);
}

int Cq::arm(bool solicited_only) noexcept
{
	return ibv_cmd_req_notify_cq(ibv(), solicited_only);
}

int Qp::attach(int cmd_fd, const kiwi_uresp_create_qp &resp) noexcept
{
	Ring ring;

	if (int err = sq_map.map(cmd_fd, resp.sq_mmap_offset, resp.sq_mmap_len))
		return err;
	if (int err = ring.attach(sq_map.bytes(), resp.num_sqe, resp.sq_stride))
		return err;
	sq_prod.attach(ring);
	// Never trust the grant beyond what a slot really holds.
	const uint32_t room = resp.sq_stride - sizeof(kiwi_usqe);
	sq.depth = resp.num_sqe;
	sq.max_sge = std::min<uint32_t>(sq.max_sge, room / sizeof(kiwi_usge));
	sq.max_inline = std::min(sq.max_inline, room);
	if (!resp.num_rqe)
		return 0;
	if (int err = rq_map.map(cmd_fd, resp.rq_mmap_offset, resp.rq_mmap_len))
		return err;
	if (int err = ring.attach(rq_map.bytes(), resp.num_rqe, resp.rq_stride))
		return err;
	rq_prod.attach(ring);
	rq.depth = resp.num_rqe;
	rq.max_sge = std::min<uint32_t>(
		rq.max_sge, (resp.rq_stride - sizeof(kiwi_urqe)) / sizeof(kiwi_usge));
	return 0;
}

void Qp::sq_published(uint32_t n) noexcept
{
	if (!n)
		return;
	sq_prod.publish(n);
	// Pairs with the kernel's "clear BUSY, full barrier, re-read prod":
	// either it sees our WQEs or we see BUSY clear (rings.rst).
	std::atomic_thread_fence(std::memory_order_seq_cst);
	const Ring &r = sq_prod.ring();
	if (sq_needs_doorbell(r.flags().load(std::memory_order_relaxed),
			      r.qp_state().load(std::memory_order_relaxed)))
		ring_doorbell(ibv());
}

int Qp::post_send(ibv_send_wr *wr, ibv_send_wr **bad) noexcept
{
	if (int err = validate_send_chain(wr, sq, bad))
		return err;

	std::lock_guard guard(sq_lock);
	if (!sq_postable(state())) {
		*bad = wr;
		return ENOTCONN;
	}
	const uint32_t space = sq_prod.space();
	uint32_t n = 0;
	int err = 0;

	for (; wr; wr = wr->next) {
		if (n == space) {
			*bad = wr;
			err = ENOMEM;
			break;
		}
		encode_send_wr(*wr, sq_prod.slot(n++));
	}
	sq_published(n);
	return err;
}

int Qp::post_bind(ibv_mw *mw, uint32_t new_rkey,
		  const ibv_mw_bind &bind) noexcept
{
	if (!sq.mw)
		return EOPNOTSUPP;
	if (bind.send_flags & IBV_SEND_INLINE)
		return EINVAL;

	std::lock_guard guard(sq_lock);
	if (!sq_postable(state()))
		return ENOTCONN;
	if (!sq_prod.space())
		return ENOMEM;
	const std::span<std::byte> slot = sq_prod.slot(0);
	kiwi_usqe h = bind_header(*mw, new_rkey, bind.bind_info);

	h.wr_id = bind.wr_id;
	h.flags = uwr_flags(bind.send_flags);
	put_bind(slot, bind.bind_info);
	put_sqe_header(slot, h);
	sq_published(1);
	return 0;
}

namespace {

// Posts a validated receive chain into a producer ring; returns the
// count posted and sets *err / *bad if the ring filled up.
uint32_t post_recv_chain(Producer &prod, ibv_recv_wr *wr, ibv_recv_wr **bad,
			 int *err) noexcept
{
	const uint32_t space = prod.space();
	uint32_t n = 0;

	for (; wr; wr = wr->next) {
		if (n == space) {
			*bad = wr;
			*err = ENOMEM;
			break;
		}
		encode_recv_wr(*wr, prod.slot(n++));
	}
	prod.publish(n);
	return n;
}

} // namespace

int Qp::post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept
{
	if (vqp.qp.srq) {	// receives go to the SRQ
		*bad = wr;
		return EINVAL;
	}
	if (int err = validate_recv_chain(wr, rq, bad))
		return err;

	int err = 0;
	std::lock_guard guard(rq_lock);
	if (post_recv_chain(rq_prod, wr, bad, &err)) {
		// A failing QP flushes receives only when told (rings.rst).
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (rq_needs_doorbell(sq_prod.ring().qp_state().load(
			    std::memory_order_relaxed)))
			ring_doorbell(ibv());
	}
	return err;
}

int Srq::attach(int cmd_fd, const kiwi_uresp_create_srq &resp) noexcept
{
	Ring ring;

	if (int err = map.map(cmd_fd, resp.mmap_offset, resp.mmap_len))
		return err;
	if (int err = ring.attach(map.bytes(), resp.num_rqe, resp.stride))
		return err;
	prod.attach(ring);
	max_sge = std::min<uint32_t>(
		max_sge, (resp.stride - sizeof(kiwi_urqe)) / sizeof(kiwi_usge));
	return 0;
}

int Srq::post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept
{
	const QueueLimits lim{depth, max_sge, 0};

	if (int err = validate_recv_chain(wr, lim, bad))
		return err;

	int err = 0;
	std::lock_guard guard(lock);
	post_recv_chain(prod, wr, bad, &err);
	return err;
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

// -------------------------------------------------------------------- MW

ibv_mw *alloc_mw(ibv_pd *pd, ibv_mw_type type) noexcept
{
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return fail(EINVAL);
	return guarded_create([&]() -> ibv_mw * {
		auto mw = std::make_unique<Mw>();
		struct ibv_alloc_mw cmd {};
		ib_uverbs_alloc_mw_resp resp{};

		// Fills in the rkey the kernel drew (its key part random).
		if (int err = ibv_cmd_alloc_mw(pd, type, &mw->mw, &cmd,
					       sizeof(cmd), &resp,
					       sizeof(resp)))
			return fail(err);
		return &hand_over(std::move(mw))->mw;
	});
}

int dealloc_mw(ibv_mw *mw) noexcept
{
	if (int err = ibv_cmd_dealloc_mw(mw))
		return err;
	take_back<Mw>(mw);
	return 0;
}

// Type 1 (libibverbs' ibv_bind_mw() checked the type and the PDs): the
// window's next STag is the current one with the key incremented, as
// every provider does it; mw->rkey takes it once the WQE is posted, and
// the WR's completion says whether the bind took.
int bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *mw_bind) noexcept
{
	const uint32_t rkey = ibv_inc_rkey(mw->rkey);

	if (int err = validate_bind(mw, mw_bind->bind_info))
		return err;
	if (int err = Qp::from(qp)->post_bind(mw, rkey, *mw_bind))
		return err;
	mw->rkey = rkey;
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
		if (int err = cq->attach(ctx->cmd_fd, drv)) {
			ibv_cmd_destroy_cq(cq->ibv());
			return fail(err);
		}
		return hand_over(std::move(cq))->ibv();
	});
}

ibv_cq_ex *create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr) noexcept
{
	if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS))
		return fail(EOPNOTSUPP);	// parent domains
	if (attr->wc_flags & ~kSupportedWcFlags)
		return fail(EOPNOTSUPP);	// timestamps, VLAN, tags
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)))
		return fail(EOPNOTSUPP);
	if (int err = validate_create_cq(static_cast<int>(attr->cqe),
					 static_cast<int>(attr->comp_vector),
					 ctx->num_comp_vectors))
		return fail(err);

	return guarded_create([&]() -> ibv_cq_ex * {
		auto cq = std::make_unique<Cq>();
		struct ibv_create_cq cmd {};
		CqResp resp{};

		// The legacy command suffices: ibv_cq_ex begins with ibv_cq,
		// and libibverbs initialises the common part afterwards.
		if (int err = ibv_cmd_create_cq(ctx, static_cast<int>(attr->cqe),
						attr->channel,
						static_cast<int>(attr->comp_vector),
						cq->ibv(), &cmd, sizeof(cmd),
						resp.core(), resp.size))
			return fail(err);
		const kiwi_uresp_create_cq drv = resp.drv();
		cq->cq_id = drv.cq_id;
		cq->wc_flags = attr->wc_flags;
		if (int err = cq->attach(ctx->cmd_fd, drv)) {
			ibv_cmd_destroy_cq(cq->ibv());
			return fail(err);
		}
		install_cq_ex_ops(cq->vcq.cq_ex);
		return &hand_over(std::move(cq))->vcq.cq_ex;
	});
}

int poll_cq(ibv_cq *ibcq, int num_entries, ibv_wc *wc) noexcept
{
	if (num_entries < 0 || (num_entries > 0 && !wc)) {
		errno = EINVAL;
		return -1;
	}
	Cq *cq = Cq::from(ibcq);
	return cq->poll({wc, static_cast<std::size_t>(num_entries)});
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
	Cq *cq = Cq::from(ibcq);

	// The kernel moves unpolled completions to a new ring; nobody may
	// poll the old one meanwhile.  libibverbs updates ibcq->cqe.
	std::lock_guard guard(cq->lock);
	if (int err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd),
					resp.core(), resp.size))
		return err;
	return cq->attach(ibcq->context->cmd_fd, resp.drv());
}

int destroy_cq(ibv_cq *cq) noexcept
{
	if (int err = ibv_cmd_destroy_cq(cq))
		return err;
	take_back<Cq>(cq);
	return 0;
}

// -------------------------------------------------------------------- QP

namespace {

// After the kernel created the QP: limits and rings.  On failure the
// kernel QP is destroyed again.
int finish_qp(Qp &qp, const ibv_qp_cap &cap, bool has_srq,
	      const kiwi_uresp_create_qp &drv) noexcept
{
	qp.qp_id = drv.qp_id;
	qp.sq = {drv.num_sqe, cap.max_send_sge, cap.max_inline_data,
		 (drv.flags & KIWI_UQP_F_IMM) != 0,
		 (drv.flags & KIWI_UQP_F_ATOMIC) != 0,
		 (drv.flags & KIWI_UQP_F_MW) != 0};
	qp.rq = {has_srq ? 0 : drv.num_rqe, cap.max_recv_sge, 0};
	if (int err = qp.attach(qp.ibv()->context->cmd_fd, drv)) {
		ibv_cmd_destroy_qp(qp.ibv());
		return err;
	}
	return 0;
}

} // namespace

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
		if (int err = finish_qp(*qp, attr->cap, attr->srq, resp.drv()))
			return fail(err);
		return hand_over(std::move(qp))->ibv();
	});
}

ibv_qp *create_qp_ex(ibv_context *ibctx, ibv_qp_init_attr_ex *attr) noexcept
{
	Context *ctx = Context::from(ibctx);
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if (attr->comp_mask & ~known)
		return fail(EOPNOTSUPP);	// XRC, RSS, TSO, create flags
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return fail(EINVAL);
	const bool ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	// Immediate data and atomics per QP, checked once it exists.
	if (ex && (attr->send_ops_flags & ~kSupportedSendOps))
		return fail(EOPNOTSUPP);
	ibv_qp_init_attr legacy{};
	legacy.send_cq = attr->send_cq;
	legacy.recv_cq = attr->recv_cq;
	legacy.srq = attr->srq;
	legacy.cap = attr->cap;
	legacy.qp_type = attr->qp_type;
	if (int err = validate_create_qp(&legacy, ctx->max_inline))
		return fail(err);

	return guarded_create([&]() -> ibv_qp * {
		auto qp = std::make_unique<Qp>();
		struct ibv_create_qp cmd {};
		QpResp resp{};

		if (int err = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd,
						   sizeof(cmd), resp.core(),
						   resp.size))
			return fail(err);
		if (int err = finish_qp(*qp, attr->cap, attr->srq, resp.drv()))
			return fail(err);
		// Immediate data asked for where the peer is not known to take
		// it (module parameter rfc7306_imm): refused, not promised.
		if (ex && (attr->send_ops_flags & kImmSendOps) && !qp->sq.imm) {
			ibv_cmd_destroy_qp(qp->ibv());
			return fail(EOPNOTSUPP);
		}
		// Atomics likewise (module parameter rfc7306_atomics), and
		// windows on a kernel without them.
		if (ex && (((attr->send_ops_flags & kAtomicSendOps) &&
			    !qp->sq.atomic) ||
			   ((attr->send_ops_flags & kMwSendOps) && !qp->sq.mw))) {
			ibv_cmd_destroy_qp(qp->ibv());
			return fail(EOPNOTSUPP);
		}
		if (ex) {
			qp->vqp.comp_mask |= VERBS_QP_EX;
			install_qp_ex_ops(qp->vqp.qp_ex);
		}
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
		srq->max_sge = std::max(attr->attr.max_sge, 1U);
		srq->depth = drv.num_rqe;
		if (int err = srq->attach(pd->context->cmd_fd, drv)) {
			ibv_cmd_destroy_srq(srq->ibv());
			return fail(err);
		}
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

	// Only srq_limit can change: the kernel refuses IBV_SRQ_MAX_WR
	// (EOPNOTSUPP), so the ring never changes size under us.
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
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
