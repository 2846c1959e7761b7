// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// kiwi provider: the C++ objects behind the verbs handles.
//
// Ownership model: each object embeds the C struct libibverbs sees as its
// *first* member and is standard-layout, so the C pointer and the object
// pointer are interconvertible.  Objects are created as std::unique_ptr;
// ownership is released only when the C pointer is returned to
// libibverbs (hand_over) and is taken back in the matching destroy
// callback (take_back) -- and only once the kernel object is gone, so a
// failed destroy leaves everything intact for a retry.
//
// Data path: in this version every post/poll is a uverbs system call
// (ibv_cmd_post_send & co.).  Those calls live only in Cq::poll/arm,
// Qp::post_send/post_recv and Srq::post_recv; mapping the rings into user
// space later replaces just those bodies (plus the mmap in the create
// paths), not the callbacks or the ownership plumbing.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include "ibverbs_private.h"
#include "logic.h"

namespace kiwi {

// Pass ownership of a provider object to libibverbs; returns the object.
template <class T> T *hand_over(std::unique_ptr<T> obj) noexcept
{
	return obj.release();
}

// Reclaim ownership of the object whose C struct is `c` (first member).
template <class T, class C> std::unique_ptr<T> take_back(C *c) noexcept
{
	return std::unique_ptr<T>(T::from(c));
}

// Checks the two properties the pointer casts in from() rely on.
#define KIWI_C_FIRST(T, member)                                            \
	static_assert(std::is_standard_layout_v<T>);                        \
	static_assert(offsetof(T, member) == 0)

struct Device {
	verbs_device vdev;	// libibverbs' view; filled after alloc_device

	static Device *from(verbs_device *v) noexcept
	{
		return reinterpret_cast<Device *>(v);
	}
};
KIWI_C_FIRST(Device, vdev);

// Unlike the other objects the context's memory comes from libibverbs
// (_verbs_init_and_alloc_context callocs it so it can initialise the
// embedded verbs_context), so Context must stay an implicit-lifetime
// aggregate and is released with verbs_uninit_context() + free().
struct Context {
	verbs_context vctx;
	uint32_t dev_id;	// kernel device index, for diagnostics
	uint32_t max_inline;	// from the get_context response

	static Context *from(verbs_context *c) noexcept
	{
		return reinterpret_cast<Context *>(c);
	}
	// Note: the public ibv_context is the *last* member of verbs_context
	// (the extended ops grow downwards in front of it), so this is a
	// container_of, not a cast.
	static Context *from(ibv_context *c) noexcept
	{
		auto *bytes = reinterpret_cast<unsigned char *>(c);
		return from(reinterpret_cast<verbs_context *>(
			bytes - offsetof(verbs_context, context)));
	}
};
KIWI_C_FIRST(Context, vctx);
static_assert(std::is_trivially_copyable_v<Context> &&
	      std::is_trivially_destructible_v<Context>);

struct ContextDeleter {
	void operator()(Context *ctx) const noexcept
	{
		verbs_uninit_context(&ctx->vctx);
		std::free(ctx);
	}
};
using ContextPtr = std::unique_ptr<Context, ContextDeleter>;

struct Pd {
	ibv_pd pd;

	static Pd *from(ibv_pd *p) noexcept
	{
		return reinterpret_cast<Pd *>(p);
	}
};
KIWI_C_FIRST(Pd, pd);

struct Mr {
	verbs_mr vmr;

	static Mr *from(verbs_mr *m) noexcept
	{
		return reinterpret_cast<Mr *>(m);
	}
};
KIWI_C_FIRST(Mr, vmr);

struct Cq {
	verbs_cq vcq;
	uint32_t cq_id;		// kernel's id, for diagnostics
	uint32_t num_cqe;	// actual capacity

	static Cq *from(ibv_cq *c) noexcept
	{
		return reinterpret_cast<Cq *>(c);
	}
	ibv_cq *ibv() noexcept { return &vcq.cq; }

	int poll(std::span<ibv_wc> wc) noexcept;
	int arm(bool solicited_only) noexcept;
};
KIWI_C_FIRST(Cq, vcq);

struct Qp {
	verbs_qp vqp;
	uint32_t qp_id;
	QueueLimits sq;		// checked before every post_send
	QueueLimits rq;		// depth 0 when the QP uses an SRQ

	static Qp *from(ibv_qp *q) noexcept
	{
		return reinterpret_cast<Qp *>(q);
	}
	ibv_qp *ibv() noexcept { return &vqp.qp; }

	int post_send(ibv_send_wr *wr, ibv_send_wr **bad) noexcept;
	int post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept;
};
KIWI_C_FIRST(Qp, vqp);

struct Srq {
	verbs_srq vsrq;
	uint32_t srq_id;
	uint32_t max_sge;
	// ibv_modify_srq(IBV_SRQ_MAX_WR) may grow the queue while another
	// thread posts, hence atomic.
	std::atomic<uint32_t> depth;

	static Srq *from(ibv_srq *s) noexcept
	{
		return reinterpret_cast<Srq *>(s);
	}
	ibv_srq *ibv() noexcept { return &vsrq.srq; }

	int post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept;
};
KIWI_C_FIRST(Srq, vsrq);

// ------------------------------------------------- context op callbacks
// Defined in verbs.cpp; wired into the ops table in device.cpp.  All are
// noexcept: failures become NULL + errno or an errno return value.
namespace ops {
ibv_pd *alloc_pd(ibv_context *ctx) noexcept;
int dealloc_pd(ibv_pd *pd) noexcept;
ibv_mr *reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
	       int access) noexcept;
int dereg_mr(verbs_mr *vmr) noexcept;
ibv_cq *create_cq(ibv_context *ctx, int cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept;
int poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc) noexcept;
int req_notify_cq(ibv_cq *cq, int solicited_only) noexcept;
int resize_cq(ibv_cq *cq, int cqe) noexcept;
int destroy_cq(ibv_cq *cq) noexcept;
ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) noexcept;
int query_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept;
int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask) noexcept;
int destroy_qp(ibv_qp *qp) noexcept;
int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept;
int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept;
ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) noexcept;
int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int attr_mask) noexcept;
int query_srq(ibv_srq *srq, ibv_srq_attr *attr) noexcept;
int destroy_srq(ibv_srq *srq) noexcept;
int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr,
		  ibv_recv_wr **bad_wr) noexcept;
} // namespace ops

} // namespace kiwi
