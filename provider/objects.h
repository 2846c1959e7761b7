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
// Data path: the queues are rings mapped from the kernel (ring.h,
// Documentation/rings.rst).  Posting a receive and polling a CQ are plain
// memory operations; posting a send writes the ring and makes a system
// call (the doorbell) only when the kernel's send processing is idle.
// Each queue has its own lock, so the verbs are thread-safe.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include <mutex>

#include "ibverbs_private.h"
#include "logic.h"
#include "ring.h"

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

struct Mw {
	ibv_mw mw;

	static Mw *from(ibv_mw *m) noexcept
	{
		return reinterpret_cast<Mw *>(m);
	}
};
KIWI_C_FIRST(Mw, mw);

struct Cq {
	verbs_cq vcq;
	uint32_t cq_id;		// kernel's id, for diagnostics
	uint32_t num_cqe;	// actual capacity
	uint64_t wc_flags;	// ibv_create_cq_ex(): fields the user reads
	std::mutex lock;	// poll, resize, the cq_ex poll sequence
	Mapping map;
	CqReader reader;
	uint32_t ex_taken;	// cq_ex: entries consumed since start_poll
	uint32_t ex_ready;	// cq_ex: entries known available
	kiwi_ucqe ex_cur;	// cq_ex: the current completion

	static Cq *from(ibv_cq *c) noexcept
	{
		return reinterpret_cast<Cq *>(c);
	}
	static Cq *from(ibv_cq_ex *c) noexcept
	{
		return reinterpret_cast<Cq *>(c);
	}
	ibv_cq *ibv() noexcept { return &vcq.cq; }

	// Maps the ring the create/resize response describes.
	int attach(int cmd_fd, const kiwi_uresp_create_cq &resp) noexcept;
	int poll(std::span<ibv_wc> wc) noexcept;
	int arm(bool solicited_only) noexcept;
};
KIWI_C_FIRST(Cq, vcq);

// The send-side state of an ibv_wr_start() .. ibv_wr_complete() batch.
struct WrBatch {
	uint32_t count;		// WQEs started
	int err;		// first error; the batch then posts nothing
	bool open;		// a WQE is being built (count - 1)
};

struct Qp {
	verbs_qp vqp;
	uint32_t qp_id;
	QueueLimits sq;		// checked before every post_send
	QueueLimits rq;		// depth 0 when the QP uses an SRQ
	std::mutex sq_lock;
	std::mutex rq_lock;
	Mapping sq_map;
	Mapping rq_map;
	Producer sq_prod;
	Producer rq_prod;
	WrBatch batch;		// extended (ibv_wr_*) posting, under sq_lock

	static Qp *from(ibv_qp *q) noexcept
	{
		return reinterpret_cast<Qp *>(q);
	}
	static Qp *from(ibv_qp_ex *q) noexcept
	{
		return reinterpret_cast<Qp *>(q);
	}
	ibv_qp *ibv() noexcept { return &vqp.qp; }

	int attach(int cmd_fd, const kiwi_uresp_create_qp &resp) noexcept;
	uint32_t state() const noexcept
	{
		return sq_prod.ring().qp_state().load(std::memory_order_acquire);
	}
	int post_send(ibv_send_wr *wr, ibv_send_wr **bad) noexcept;
	// ibv_bind_mw() of a type 1 window: one BIND_MW WQE.
	int post_bind(ibv_mw *mw, uint32_t new_rkey,
		      const ibv_mw_bind &bind) noexcept;
	int post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) noexcept;
	// After publishing n send WQEs (under sq_lock): ring if needed.
	void sq_published(uint32_t n) noexcept;
};
KIWI_C_FIRST(Qp, vqp);

struct Srq {
	verbs_srq vsrq;
	uint32_t srq_id;
	uint32_t max_sge;
	uint32_t depth = 0;	// fixed: the kernel cannot resize an SRQ
	std::mutex lock;
	Mapping map;
	Producer prod;

	static Srq *from(ibv_srq *s) noexcept
	{
		return reinterpret_cast<Srq *>(s);
	}
	ibv_srq *ibv() noexcept { return &vsrq.srq; }

	int attach(int cmd_fd, const kiwi_uresp_create_srq &resp) noexcept;
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
ibv_mw *alloc_mw(ibv_pd *pd, ibv_mw_type type) noexcept;
int dealloc_mw(ibv_mw *mw) noexcept;
int bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *mw_bind) noexcept;
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
ibv_cq_ex *create_cq_ex(ibv_context *ctx,
			ibv_cq_init_attr_ex *attr) noexcept;
ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr) noexcept;
} // namespace ops

// ex.cpp: the ibv_wr_* and ibv_cq_ex function tables.
void install_qp_ex_ops(ibv_qp_ex &qpx) noexcept;
void install_cq_ex_ops(ibv_cq_ex &cqx) noexcept;
// Which wc_flags / send_ops_flags kiwi can honour.
inline constexpr uint64_t kSupportedWcFlags = IBV_WC_STANDARD_FLAGS;
inline constexpr uint64_t kSupportedSendOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
	IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
// The send_ops_flags that need kiwi_uresp_create_qp.flags KIWI_UQP_F_MW.
inline constexpr uint64_t kMwSendOps =
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
// The send_ops_flags that need kiwi_uresp_create_qp.flags KIWI_UQP_F_ATOMIC.
inline constexpr uint64_t kAtomicSendOps =
	IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
// The send_ops_flags that need kiwi_uresp_create_qp.flags KIWI_UQP_F_IMM.
inline constexpr uint64_t kImmSendOps =
	IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_IMM;

} // namespace kiwi
