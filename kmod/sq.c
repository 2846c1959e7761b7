// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the send queue engine -- what tx.c drives.  WQEs are taken from
 * the send ring (copied out of their slot once, then validated: wqe.h),
 * transmitted by tx.c, and retired in order with their completions;
 * outbound READs wait here for their responses (the ORQ); a QP that
 * fails flushes what is left.
 */
#include <kiwi/wqe.h>

#include "cq.h"
#include "qp.h"
#include "stag.h"

/*
 * WQEs posted and not retired, as the producer index claims.  A claim
 * beyond the ring (a corrupted index) is clamped; *@sane says so.
 */
static u32 kiwi_sq_posted(struct kiwi_qp *qp, bool *sane)
{
	u32 n;

	*sane = kiwi_ring_avail(&qp->sq_ring, &n);
	return *sane ? n : qp->sq_size;
}

static enum ib_wc_opcode kiwi_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		return IB_WC_RDMA_READ;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_SEND;
	}
}

static void kiwi_sq_complete(struct kiwi_qp *qp, u64 wr_id, u8 wr_opcode,
			     enum ib_wc_status status)
{
	struct kiwi_cqe cqe = {
		.wr_id = wr_id,
		.qp = &qp->ibqp,
		.opcode = kiwi_wc_opcode(wr_opcode),
		.status = status,
	};

	kiwi_qp_cq_add(qp, qp->scq, &cqe, false);
}

/*
 * Retire the oldest WQE (under sq_lock).  The slot is handed back to the
 * producer before its completion is queued, so a process that sees the
 * completion also sees the free slot.
 */
static void kiwi_sq_advance(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->sq_lock);
	kiwi_ring_consume(&qp->sq_ring);
}

static const u8 kiwi_uwr_to_ib[KIWI_UWR_NUM_OPCODES] = {
	[KIWI_UWR_SEND] = IB_WR_SEND,
	[KIWI_UWR_SEND_INV] = IB_WR_SEND_WITH_INV,
	[KIWI_UWR_RDMA_WRITE] = IB_WR_RDMA_WRITE,
	[KIWI_UWR_RDMA_READ] = IB_WR_RDMA_READ,
	[KIWI_UWR_RDMA_WRITE_IMM] = IB_WR_RDMA_WRITE_WITH_IMM,
	[KIWI_UWR_SEND_IMM] = IB_WR_SEND_WITH_IMM,
	[KIWI_UWR_ATOMIC_FADD] = IB_WR_ATOMIC_FETCH_AND_ADD,
	[KIWI_UWR_ATOMIC_CSWAP] = IB_WR_ATOMIC_CMP_AND_SWP,
	[KIWI_UWR_LOCAL_INV] = IB_WR_LOCAL_INV,
	[KIWI_UWR_BIND_MW] = IB_WR_BIND_MW,
};

static const u8 kiwi_kwr_to_ib[KIWI_KWR_END - KIWI_KWR_FIRST] = {
	[KIWI_KWR_READ_INV - KIWI_KWR_FIRST] = IB_WR_RDMA_READ_WITH_INV,
	[KIWI_KWR_LOCAL_INV - KIWI_KWR_FIRST] = IB_WR_LOCAL_INV,
	[KIWI_KWR_REG_MR - KIWI_KWR_FIRST] = IB_WR_REG_MR,
};

static u8 kiwi_ib_opcode(u8 uwr_opcode)
{
	if (uwr_opcode < KIWI_UWR_NUM_OPCODES)
		return kiwi_uwr_to_ib[uwr_opcode];
	if (uwr_opcode >= KIWI_KWR_FIRST && uwr_opcode < KIWI_KWR_END)
		return kiwi_kwr_to_ib[uwr_opcode - KIWI_KWR_FIRST];
	return IB_WR_SEND;
}

static bool kiwi_uwr_is_imm(u8 uwr_opcode)
{
	return uwr_opcode == KIWI_UWR_RDMA_WRITE_IMM ||
	       uwr_opcode == KIWI_UWR_SEND_IMM;
}

/*
 * Opcodes a QP may use: the kernel-only ones never come from a user
 * ring, immediate data only where the peer takes it (kiwi_qp.imm_tx),
 * atomics likewise (kiwi_qp.atomic).
 */
static bool kiwi_uwr_opcode_ok(struct kiwi_qp *qp, u8 uwr_opcode)
{
	if (kiwi_uwr_is_imm(uwr_opcode))
		return qp->imm_tx;
	if (uwr_opcode == KIWI_UWR_ATOMIC_FADD ||
	    uwr_opcode == KIWI_UWR_ATOMIC_CSWAP)
		return qp->atomic;
	return uwr_opcode < KIWI_UWR_NUM_OPCODES ||
	       (!qp->user && uwr_opcode >= KIWI_KWR_FIRST &&
		uwr_opcode < KIWI_KWR_END);
}

/* What a flush needs of a WQE the kernel never started. */
static void kiwi_sq_unstarted(struct kiwi_qp *qp, u32 idx,
			      struct kiwi_sq_slot *e)
{
	struct kiwi_usqe w;

	memcpy(&w, kiwi_ring_slot(&qp->sq_ring, idx), sizeof(w));
	memset(e, 0, sizeof(*e));
	e->wr_id = w.wr_id;
	e->opcode = kiwi_ib_opcode(w.opcode);
	e->state = KIWI_SQE_QUEUED;
}

/*
 * Under sq_lock: the status WR @st completes with.  Once one WR of the
 * queue has completed in error, every later one is IB_WC_WR_FLUSH_ERR,
 * even one that had finished (a SEND transmitted behind READs that
 * failed): the verbs promise a consumer that after its first error
 * completion the rest of the send queue is flushed.  Until RESET.
 */
static enum ib_wc_status kiwi_sq_status(struct kiwi_qp *qp,
					enum ib_wc_status st)
{
	lockdep_assert_held(&qp->sq_lock);
	if (st == IB_WC_SUCCESS)
		return qp->sq_failed ? IB_WC_WR_FLUSH_ERR : st;
	qp->sq_failed = true;
	return st;
}

/*
 * Complete every outstanding send WR, in order: with its own status if
 * it finished (kiwi_sq_status()), else IB_WC_WR_FLUSH_ERR.  WQEs never
 * started are read from the ring (only their wr_id and opcode).  Only
 * called when the transmit path is stopped (or was never started).
 */
void kiwi_qp_flush_sq(struct kiwi_qp *qp)
{
	u32 started, posted, i;
	unsigned long flags;
	bool sane;

	spin_lock_irqsave(&qp->sq_lock, flags);
	started = qp->sq_tx + qp->sq_loaded;
	posted = max(kiwi_sq_posted(qp, &sane), started);
	for (i = 0; i < posted; i++) {
		u32 idx = kiwi_sq_idx(qp, 0);
		struct kiwi_sq_slot e = *kiwi_sq_slot(qp, idx);
		enum ib_wc_status status;

		if (i >= started)
			kiwi_sq_unstarted(qp, idx, &e);
		kiwi_sq_advance(qp);
		status = kiwi_sq_status(qp, e.state == KIWI_SQE_DONE ?
					e.status : IB_WC_WR_FLUSH_ERR);
		if (e.signaled || status != IB_WC_SUCCESS)
			kiwi_sq_complete(qp, e.wr_id, e.opcode, status);
	}
	qp->sq_tx = 0;
	qp->sq_loaded = false;
	qp->sq_orq_count = 0;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* Retire finished SQEs from the head, in order, posting completions. */
void kiwi_qp_retire_sq(struct kiwi_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	while (qp->sq_tx) {
		struct kiwi_sq_slot *slot = kiwi_sq_at(qp, 0);
		enum ib_wc_status status;

		if (slot->state != KIWI_SQE_DONE)
			break;
		kiwi_sq_advance(qp);
		qp->sq_tx--;
		status = kiwi_sq_status(qp, slot->status);
		if (slot->signaled || status != IB_WC_SUCCESS)
			kiwi_sq_complete(qp, slot->wr_id, slot->opcode, status);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/*
 * Under sq_lock: the oldest READ or atomic awaiting its response, or
 * NULL.  Responses come in request order (RFC 7306 section 5), so this
 * is the one the next READ or Atomic Response must answer.
 */
static struct kiwi_sq_slot *kiwi_sq_oldest_read(struct kiwi_qp *qp)
{
	u32 i;

	lockdep_assert_held(&qp->sq_lock);

	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sq_slot *slot = kiwi_sq_at(qp, i);

		if (slot->state == KIWI_SQE_WAIT_RESP)
			return slot;
	}
	return NULL;
}

/* The sink of our oldest outstanding READ, for its response. */
bool kiwi_qp_orq_head(struct kiwi_qp *qp, struct kiwi_sge *sink, u32 *bytes)
{
	struct kiwi_sq_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = kiwi_sq_oldest_read(qp);
	if (slot && !kiwi_wr_is_read(slot->opcode))
		slot = NULL;	/* an atomic is due first */
	if (slot) {
		sink->addr = slot->sink_addr;
		sink->lkey = slot->sink_lkey;
		sink->len = slot->bytes;
		*bytes = slot->bytes;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return slot;
}

/*
 * The oldest outstanding READ is over: its last response was placed
 * (@status IB_WC_SUCCESS), or it failed locally, e.g. its sink is not
 * writable.  A READ with local invalidate invalidates its sink STag
 * before the consumer hears.  (rdma_rw fills ex.invalidate_rkey before
 * it bumps the MR's key, so the sink SGE is the reliable name for it.)
 */
static void kiwi_qp_read_end(struct kiwi_qp *qp, enum ib_wc_status status)
{
	struct kiwi_sq_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = kiwi_sq_oldest_read(qp);
	if (slot) {
		slot->state = KIWI_SQE_DONE;
		slot->status = status;
		if (!status && slot->opcode == IB_WR_RDMA_READ_WITH_INV &&
		    kiwi_mem_invalidate(qp, slot->sink_lkey))
			slot->status = IB_WC_LOC_PROT_ERR;
		qp->sq_orq_count--;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/*
 * Is send queue work waiting, maybe for an ORD credit or a fence?  The
 * receive path asks after a READ or Atomic Response freed a credit, and
 * wakes the sender only then.
 */
bool kiwi_sq_waiting(struct kiwi_qp *qp)
{
	unsigned long flags;
	bool sane = true, waiting;

	spin_lock_irqsave(&qp->sq_lock, flags);
	waiting = qp->sq_loaded || kiwi_sq_posted(qp, &sane) > qp->sq_tx;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return waiting || !sane;
}

/* The caller wakes the sender if a WQE waits (kiwi_sq_waiting()). */
void kiwi_qp_read_done(struct kiwi_qp *qp)
{
	kiwi_qp_read_end(qp, IB_WC_SUCCESS);
	kiwi_qp_retire_sq(qp);
}

/* Completes with @status when the QP is flushed, which follows. */
void kiwi_qp_read_failed(struct kiwi_qp *qp, enum ib_wc_status status)
{
	kiwi_qp_read_end(qp, status);
}

/*
 * An Atomic Response arrived: it must answer our oldest outstanding
 * READ or atomic, and that must be the atomic with its Request
 * Identifier; -EPROTO if not.  The original value goes to the WR's
 * local 8 bytes, checked now; if they are gone, the WR fails with a
 * local protection error and this returns -EFAULT.  Either way the
 * caller terminates the stream.  On success the caller wakes the sender
 * if a WQE waits (kiwi_sq_waiting()), as for a READ.
 */
int kiwi_qp_atomic_done(struct kiwi_qp *qp, u32 req_id, u64 orig)
{
	enum ib_wc_status status = IB_WC_LOC_PROT_ERR;
	struct kiwi_sq_slot *slot;
	struct kiwi_mem *mem;
	unsigned long flags;
	u64 addr;
	u64 gen;
	u32 lkey;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = kiwi_sq_oldest_read(qp);
	if (slot && (!kiwi_wr_is_atomic(slot->opcode) ||
		     slot->req_id != req_id))
		slot = NULL;
	if (slot) {
		addr = slot->sink_addr;
		lkey = slot->sink_lkey;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (!slot)
		return -EPROTO;

	/* Only rxops.c completes ORQ entries, so the slot is still ours. */
	mem = kiwi_mem_get(qp->kdev, lkey);
	if (mem) {
		if (!kiwi_mem_check(mem, qp->ibqp.pd, addr, KIWI_ATOMIC_LEN,
				    IB_ACCESS_LOCAL_WRITE, &gen) &&
		    kiwi_mem_copy_in(mem, gen, addr, &orig, KIWI_ATOMIC_LEN))
			status = IB_WC_SUCCESS;
		kiwi_mem_put(mem);
	}
	kiwi_qp_read_end(qp, status);
	if (status != IB_WC_SUCCESS)
		return -EFAULT;	/* completes when the QP is flushed */
	kiwi_qp_retire_sq(qp);
	return 0;
}

static u32 kiwi_ib_send_flags(u8 uflags)
{
	return (uflags & KIWI_UWR_F_SIGNALED ? IB_SEND_SIGNALED : 0) |
	       (uflags & KIWI_UWR_F_SOLICITED ? IB_SEND_SOLICITED : 0) |
	       (uflags & KIWI_UWR_F_FENCE ? IB_SEND_FENCE : 0) |
	       (uflags & KIWI_UWR_F_INLINE ? IB_SEND_INLINE : 0);
}

/* The SGE list of a checked header: copied once, then trusted. */
static int kiwi_sqe_sges(const void *payload, u32 num, struct kiwi_sqe *sqe)
{
	struct kiwi_usge usge[KIWI_MAX_SGE];
	u32 i;

	memcpy(usge, payload, num * sizeof(usge[0]));
	if (kiwi_usge_total(usge, num, &sqe->bytes))
		return -EINVAL;
	for (i = 0; i < num; i++) {
		sqe->sge[i].addr = usge[i].addr;
		sqe->sge[i].len = usge[i].length;
		sqe->sge[i].lkey = usge[i].lkey;
	}
	sqe->num_sge = num;
	return 0;
}

/*
 * An atomic WQE: exactly one 8-byte sink SGE, then its operands, which
 * the slot has room for on a QP with atomics (kiwi_qp_alloc_queues()).
 */
static int kiwi_sqe_atomic(struct kiwi_qp *qp, const u8 *payload,
			   struct kiwi_sqe *sqe)
{
	struct kiwi_uatomic a;

	if (sqe->num_sge != 1 || sqe->bytes != KIWI_ATOMIC_LEN ||
	    qp->sq_ring.stride < sizeof(struct kiwi_usqe) + KIWI_USGE_SIZE +
				 sizeof(a))
		return -EINVAL;
	memcpy(&a, payload + KIWI_USGE_SIZE, sizeof(a));
	sqe->compare_add = a.compare_add;
	sqe->swap = a.swap;
	return 0;
}

/*
 * A BIND_MW WQE: the header names the window, its new STag and where it
 * starts; struct kiwi_ubind follows (every slot has room: one SGE's).
 * The copy is checked as far as it can be without the window and the
 * region (wqe.h: kiwi_ubind_check(), fuzzed); mw.c checks the rest.
 */
static int kiwi_sqe_bind(struct kiwi_qp *qp, const struct kiwi_usqe *h,
			 const u8 *payload, struct kiwi_sqe *sqe)
{
	struct kiwi_ubind ub;

	BUILD_BUG_ON(sizeof(ub) != KIWI_USGE_SIZE);
	BUILD_BUG_ON(KIWI_UBIND_LOCAL_WRITE != IB_ACCESS_LOCAL_WRITE ||
		     KIWI_UBIND_REMOTE_WRITE != IB_ACCESS_REMOTE_WRITE ||
		     KIWI_UBIND_REMOTE_READ != IB_ACCESS_REMOTE_READ ||
		     KIWI_UBIND_REMOTE_ATOMIC != IB_ACCESS_REMOTE_ATOMIC ||
		     KIWI_UBIND_ZERO_BASED != IB_ZERO_BASED);
	if (!kiwi_ubind_in_slot(qp->sq_ring.stride))
		return -EINVAL;
	memcpy(&ub, payload, sizeof(ub));
	if (kiwi_ubind_check(h, &ub))
		return -EINVAL;
	sqe->bind.mw_stag = h->rkey;
	sqe->bind.new_stag = h->inv_rkey;
	sqe->bind.mr_lkey = ub.mr_lkey;
	sqe->bind.access = ub.access;
	sqe->bind.addr = h->raddr;
	sqe->bind.len = ub.length;
	return 0;
}

/*
 * SGEs a WQE of @opcode may carry (0: no inline data either).  A
 * LOCAL_INV's are ignored, as they always were for kernel consumers.
 */
static u32 kiwi_sqe_max_sge(u32 opcode)
{
	if (opcode == IB_WR_BIND_MW)
		return 0;
	return kiwi_wr_takes_ord(opcode) ? KIWI_MAX_SGE_RD : KIWI_MAX_SGE;
}

/*
 * Copy send WQE @idx out of the ring into @sqe and validate the copy.
 * The slot state is filled first, so even a malformed WQE completes
 * (in error) under its own wr_id.
 */
static int kiwi_sqe_load(struct kiwi_qp *qp, u32 idx, struct kiwi_sqe *sqe,
			 struct kiwi_sq_slot *slot)
{
	const u8 *w = kiwi_ring_slot(&qp->sq_ring, idx);
	struct kiwi_wqe_limits lim;
	struct kiwi_usqe h;
	bool no_inline;
	int rv;

	memcpy(&h, w, sizeof(h));
	memset(slot, 0, sizeof(*slot));
	slot->wr_id = h.wr_id;
	slot->opcode = kiwi_ib_opcode(h.opcode);
	slot->signaled = (h.flags & KIWI_UWR_F_SIGNALED) ||
			 qp->sq_sig_type == IB_SIGNAL_ALL_WR;
	slot->state = KIWI_SQE_QUEUED;
	if (!kiwi_uwr_opcode_ok(qp, h.opcode))
		return -EINVAL;
	lim.stride = qp->sq_ring.stride;
	lim.max_sge = qp->cap.max_send_sge;
	lim.max_inline = qp->cap.max_inline_data;
	no_inline = kiwi_wr_takes_ord(slot->opcode) ||
		    !kiwi_sqe_max_sge(slot->opcode);
	if (kiwi_usqe_check(&h, &lim, kiwi_sqe_max_sge(slot->opcode),
			    no_inline))
		return -EINVAL;

	memset(sqe, 0, sizeof(*sqe));
	sqe->wr_id = h.wr_id;
	sqe->opcode = slot->opcode;
	sqe->flags = kiwi_ib_send_flags(h.flags) |
		     (slot->signaled ? IB_SEND_SIGNALED : 0);
	sqe->rkey = h.rkey;
	sqe->raddr = h.raddr;
	sqe->ex = h.inv_rkey;
	if (h.flags & KIWI_UWR_F_INLINE) {
		memcpy(qp->sq_inline, w + sizeof(h), h.length);
		sqe->inline_data = qp->sq_inline;
		sqe->bytes = h.length;
	} else {
		rv = kiwi_sqe_sges(w + sizeof(h), h.num_sge, sqe);
		if (rv)
			return rv;
	}
	if (sqe->opcode == IB_WR_BIND_MW) {
		rv = kiwi_sqe_bind(qp, &h, w + sizeof(h), sqe);
		if (rv)
			return rv;
	}
	/* RFC 7306 has no SEND with immediate data and a payload. */
	if (sqe->opcode == IB_WR_SEND_WITH_IMM && sqe->bytes)
		return -EINVAL;
	if (kiwi_wr_is_atomic(sqe->opcode)) {
		rv = kiwi_sqe_atomic(qp, w + sizeof(h), sqe);
		if (rv)
			return rv;
		/* Its Request Identifier: the WQE's index, unique in the ORQ. */
		slot->req_id = idx;
		sqe->ex = idx;
	}
	slot->bytes = sqe->bytes;
	if (kiwi_wr_takes_ord(sqe->opcode)) {
		slot->sink_addr = sqe->sge[0].addr;
		slot->sink_lkey = sqe->sge[0].lkey;
	}
	return 0;
}

/*
 * Under sq_lock, with nothing left to start: a user QP's send processing
 * goes idle.  Clear BUSY, then re-read the producer index behind a full
 * barrier; the provider publishes prod, then (full barrier) reads BUSY,
 * so either we see its WQE here or it sees BUSY clear and rings.
 */
static bool kiwi_sq_go_idle(struct kiwi_qp *qp)
{
	bool sane;

	lockdep_assert_held(&qp->sq_lock);

	if (!qp->user)
		return true;
	kiwi_ring_set_flags(&qp->sq_ring, 0);
	/* Pairs with the full fence in the provider's sq_published(). */
	smp_mb();
	if (kiwi_sq_posted(qp, &sane) <= qp->sq_tx && sane)
		return true;
	kiwi_ring_set_flags(&qp->sq_ring, KIWI_RING_F_BUSY);
	return false;
}

/*
 * Under sq_lock: make sq_cur the WQE after the transmitted ones.  0 if
 * there is one, -EAGAIN if none, -EINVAL if it (or the ring) is bad.
 */
static int kiwi_sq_load_next(struct kiwi_qp *qp)
{
	u32 idx = kiwi_sq_idx(qp, qp->sq_tx);
	struct kiwi_sq_slot *slot = kiwi_sq_slot(qp, idx);
	bool sane;
	int rv;

	lockdep_assert_held(&qp->sq_lock);

	if (qp->sq_loaded)
		return 0;
	for (;;) {
		u32 posted = kiwi_sq_posted(qp, &sane);

		if (!sane) {
			kiwi_qp_dbg(qp, "send ring's producer index out of bounds\n");
			return -EINVAL;
		}
		if (posted > qp->sq_tx)
			break;
		if (kiwi_sq_go_idle(qp))
			return -EAGAIN;
	}
	rv = kiwi_sqe_load(qp, idx, &qp->sq_cur, slot);
	if (rv) {
		/* Completes with an error once retired; the QP fails. */
		kiwi_qp_dbg(qp, "WQE %u malformed: LOC_QP_OP_ERR\n", idx);
		slot->state = KIWI_SQE_DONE;
		slot->status = IB_WC_LOC_QP_OP_ERR;
		qp->sq_tx++;
		return rv;
	}
	qp->sq_loaded = true;
	return 0;
}

/*
 * Under sq_lock: is a READ or atomic of ours still waiting for its
 * response with its sink in @stag's region (same index: a fast-register
 * region keeps it across new keys)?
 */
static bool kiwi_sq_sink_open(struct kiwi_qp *qp, u32 stag)
{
	u32 i;

	lockdep_assert_held(&qp->sq_lock);

	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sq_slot *slot = kiwi_sq_at(qp, i);

		if (slot->state == KIWI_SQE_WAIT_RESP &&
		    (slot->sink_lkey >> 8) == (stag >> 8))
			return true;
	}
	return false;
}

/*
 * Under sq_lock: must @sqe wait for READs or atomics of ours?  The rest
 * of the send queue is in order already: one WQE at a time, and local
 * operations (BIND_MW, LOCAL_INV, REG_MR) take effect when their turn
 * comes, after every earlier WQE was transmitted.  Only outbound READs
 * and atomics stay open past that, until their responses land in their
 * sinks, so only those are waited for:
 *  - all of them for IB_SEND_FENCE on any WR (IBA 10.8.3.3), a BIND_MW
 *    or a LOCAL_INV included: a consumer that rebinds or invalidates
 *    something a READ still depends on asks for the fence;
 *  - by a LOCAL_INV even without it, those whose sink it invalidates
 *    (a kernel consumer's fast-register region), as the local
 *    invalidate fence of IBA 10.6.5.1 would, which rxe always applies:
 *    the response must still find its sink.  Only those: waiting for
 *    every READ would serialize a storage target's READs (rdma_rw
 *    chains LOCAL_INV, REG_MR and READ for each I/O).
 * A window is never a sink (an lkey); its accesses are the peer's, which
 * no fence of this queue orders: a copy through an STag invalidated or
 * rebound meanwhile stops at its next piece (mem.c: generations).
 */
static bool kiwi_sq_fenced(struct kiwi_qp *qp, const struct kiwi_sqe *sqe)
{
	lockdep_assert_held(&qp->sq_lock);

	if (!qp->sq_orq_count)
		return false;
	if (sqe->flags & IB_SEND_FENCE)
		return true;
	return sqe->opcode == IB_WR_LOCAL_INV &&
	       kiwi_sq_sink_open(qp, sqe->ex);
}

/*
 * Next SQE to transmit, or NULL if none, blocked (ORD, fence) or bad.
 * A bad WQE or a corrupted ring moves the QP to error.
 */
struct kiwi_sqe *kiwi_sq_next(struct kiwi_qp *qp)
{
	struct kiwi_sqe *sqe = &qp->sq_cur;
	unsigned long flags;
	int rv;

	spin_lock_irqsave(&qp->sq_lock, flags);
	rv = kiwi_sq_load_next(qp);
	if (rv)
		sqe = NULL;
	else if (kiwi_sq_fenced(qp, sqe))
		sqe = NULL;
	else if (kiwi_wr_takes_ord(sqe->opcode) &&
		 qp->sq_orq_count >= max(qp->ord, 1U))
		sqe = NULL;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (rv == -EINVAL) {
		kiwi_qp_retire_sq(qp);
		kiwi_qp_error(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			      KIWI_RC_CATASTROPHIC_STREAM);
	}
	return sqe;
}

/* sq_cur has been transmitted (or failed locally). */
void kiwi_sq_sent(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
		  enum ib_wc_status status)
{
	struct kiwi_sq_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = kiwi_sq_at(qp, qp->sq_tx);
	slot->state = KIWI_SQE_DONE;
	slot->status = status;
	qp->sq_tx++;
	qp->sq_loaded = false;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	kiwi_qp_retire_sq(qp);
}

/*
 * A READ is marked outstanding before its request leaves: the response
 * can arrive (on another CPU) before the send call even returns.  sq_cur
 * stays intact until the transmit path asks for the next WQE.
 */
void kiwi_sq_read_posted(struct kiwi_qp *qp, struct kiwi_sqe *sqe)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	kiwi_sq_at(qp, qp->sq_tx)->state = KIWI_SQE_WAIT_RESP;
	qp->sq_tx++;
	qp->sq_loaded = false;
	qp->sq_orq_count++;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}
