// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: queue pairs, shared receive queues and work request posting.
 *
 * Send queues, receive queues and SRQs are rings in the format of
 * include/uapi/rdma/kiwi-abi.h (see Documentation/rings.rst).  User QPs
 * and SRQs share them with the provider, which writes WQEs directly;
 * kernel consumers' WRs are encoded into the same format by post_send /
 * post_recv.  Either way a WQE is copied out of its ring slot once, when
 * the kernel starts it, and validated on that copy: ring contents and the
 * producer index are never trusted.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/netlink.h>
#include <rdma/restrack.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>

#include "kiwi.h"
#include "trace.h"

#define KIWI_QPN_MAX	((1U << 24) - 1)

#define KIWI_USGE_SIZE	sizeof(struct kiwi_usge)

static u32 kiwi_ring_slots(u32 wr)
{
	return roundup_pow_of_two(max(wr, 1U));
}

/*
 * Payload bytes per send slot: room for the SGEs or the inline data,
 * whichever is larger.  Whatever fits is granted, so a QP asking for
 * one SGE and no inline data costs 48 bytes per slot.
 */
static u32 kiwi_sq_payload(u32 max_sge, u32 max_inline)
{
	return max_t(u32, max(max_sge, 1U) * KIWI_USGE_SIZE,
		     ALIGN(max_inline, KIWI_USGE_SIZE));
}

static u32 kiwi_rq_stride(u32 max_sge)
{
	return sizeof(struct kiwi_urqe) + max(max_sge, 1U) * KIWI_USGE_SIZE;
}

/*
 * Tell the provider the QP state: it decides ENOTCONN and doorbells from
 * it.  Out of RTS nothing transmits, so BUSY is cleared as well; the
 * barrier orders both before any flush that follows, which pairs with
 * the provider's "publish prod, full barrier, read state and BUSY": a
 * WQE the flush misses is seen to need a doorbell.
 */
static void kiwi_qp_publish_state(struct kiwi_qp *qp)
{
	enum kiwi_qp_state state = kiwi_qp_state(qp);

	kiwi_ring_set_qp_state(&qp->sq_ring, state);
	if (state != KIWI_QP_RTS)
		kiwi_ring_set_flags(&qp->sq_ring, 0);
	smp_mb();
}

static const char *const kiwi_qp_state_names[] = {
	[KIWI_QP_IDLE] = "IDLE",
	[KIWI_QP_RTS] = "RTS",
	[KIWI_QP_CLOSING] = "CLOSING",
	[KIWI_QP_TERMINATE] = "TERMINATE",
	[KIWI_QP_ERROR] = "ERROR",
};

/*
 * @qp went from iWARP state @from to @to: the kiwi_qp_state tracepoint
 * and, with dynamic debug on (module kiwi +p), a kernel log line.
 */
static void kiwi_qp_state_event(struct kiwi_qp *qp, int from, int to)
{
	if (from == to)
		return;
	trace_kiwi_qp_state(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num,
			    from, to);
	ibdev_dbg(qp->ibqp.device, "QP %u: %s -> %s\n", qp->ibqp.qp_num,
		  kiwi_qp_state_names[from], kiwi_qp_state_names[to]);
}

#define KIWI_QPS(s)	BIT(KIWI_QP_##s)
#define KIWI_QPS_ANY	(KIWI_QPS(IDLE) | KIWI_QPS(RTS) | KIWI_QPS(CLOSING) | \
			 KIWI_QPS(TERMINATE) | KIWI_QPS(ERROR))

/*
 * The iWARP QP state machine (RFC 5040 section 6 and the verbs): where
 * each state may go.  IDLE covers the IB states RESET, INIT and RTR
 * (no connection yet), RTS is connected, CLOSING a graceful close
 * (IB SQD) under way, TERMINATE a TERMINATE sent or received.  IDLE to
 * IDLE moves among RESET, INIT and RTR; ERROR to ERROR repeats an error.
 */
static const u8 kiwi_qp_next_ok[] = {
	[KIWI_QP_IDLE] = KIWI_QPS(IDLE) | KIWI_QPS(RTS) | KIWI_QPS(ERROR),
	[KIWI_QP_RTS] = KIWI_QPS(CLOSING) | KIWI_QPS(TERMINATE) |
			KIWI_QPS(ERROR),
	[KIWI_QP_CLOSING] = KIWI_QPS(TERMINATE) | KIWI_QPS(ERROR) |
			    KIWI_QPS(IDLE),
	[KIWI_QP_TERMINATE] = KIWI_QPS(ERROR) | KIWI_QPS(IDLE),
	[KIWI_QP_ERROR] = KIWI_QPS(ERROR) | KIWI_QPS(IDLE),
};

/*
 * The one function that changes a QP's state: from any of the states in
 * @from (a mask of KIWI_QPS()) to @to, with @ib_to as the IB state, in
 * one atomic step.  Returns the state left, or -EAGAIN if the QP is not
 * in @from (it moved first: a race the caller expects), or -EINVAL,
 * counted, if the table forbids the move.  Any context.
 */
static int kiwi_qp_next(struct kiwi_qp *qp, unsigned int from,
			enum kiwi_qp_state to, enum ib_qp_state ib_to)
{
	u32 old = READ_ONCE(qp->st);
	enum kiwi_qp_state cur;

	do {
		cur = old & 0xff;
		if (!(from & BIT(cur)))
			return -EAGAIN;
		if (!(kiwi_qp_next_ok[cur] & BIT(to))) {
			kiwi_stat_add(qp->kdev, KIWI_STAT_QP_BAD_TRANSITION, 1);
			return -EINVAL;
		}
	} while (!try_cmpxchg(&qp->st, &old, KIWI_QP_ST(to, ib_to)));
	kiwi_qp_state_event(qp, cur, to);
	kiwi_qp_publish_state(qp);
	return cur;
}

static struct kiwi_sq_slot *kiwi_sq_slot(struct kiwi_qp *qp, u32 idx)
{
	return &qp->sq[idx & (qp->sq_size - 1)];
}

/*
 * WQEs posted and not retired, as the producer index claims.  A claim
 * beyond the ring (a corrupted index) is clamped; *@sane says so.
 */
static u32 kiwi_sq_posted(struct kiwi_qp *qp, bool *sane)
{
	u32 n;

	*sane = kiwi_ring_avail(&qp->sq_ring, qp->sq_head, &n);
	return *sane ? n : qp->sq_size;
}

/* ---- reference counting (shared with the iw_cm) ---- */

static void kiwi_qp_release(struct kref *ref)
{
	complete(&container_of(ref, struct kiwi_qp, ref)->freed);
}

void kiwi_qp_get(struct ib_qp *ibqp)
{
	kref_get(&to_kqp(ibqp)->ref);
}

void kiwi_qp_put(struct ib_qp *ibqp)
{
	kref_put(&to_kqp(ibqp)->ref, kiwi_qp_release);
}

/*
 * Is the caller the QP's owner: the process that created a user QP, or
 * the kernel for a kernel consumer's QP (whose rdma_cm handlers run in
 * kernel threads)?
 */
static bool kiwi_qp_caller_owns(struct kiwi_qp *qp)
{
	if (qp->user)
		return qp->owner == task_tgid(current);
	return current->flags & PF_KTHREAD;
}

/*
 * The QP numbered @qpn, for the iw_cm to bind to a connection, in the
 * context of rdma_connect() or rdma_accept().  Only its owner may: QP
 * numbers are easy to guess, and a connection bound to another
 * process's QP would let the peer send into its receive queue and read
 * and write its memory regions.
 */
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn)
{
	struct kiwi_qp *qp = xa_load(&to_kdev(ibdev)->qp_xa, qpn);

	if (!qp)
		return NULL;
	if (!kiwi_qp_caller_owns(qp)) {
		kiwi_stat_add(qp->kdev, KIWI_STAT_QP_NOT_OWNER, 1);
		ibdev_warn_ratelimited(ibdev,
				       "QP %d not bound to a connection for %s[%d]: not its owner\n",
				       qpn, current->comm,
				       task_tgid_nr(current));
		return NULL;
	}
	return &qp->ibqp;
}

/* ---- completions and flushing ---- */

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
	default:
		return IB_WC_SEND;
	}
}

/*
 * Queue a completion of @qp on @cq.  A full CQ loses it: the CQ reports
 * IB_EVENT_CQ_ERR (cq.c), and the QP must not go on as if its consumer
 * had heard.  It fails, from its transmit worker: callers hold queue
 * locks here, and failing the QP flushes those queues.
 */
void kiwi_qp_cq_add(struct kiwi_qp *qp, struct kiwi_cq *cq,
		    const struct kiwi_cqe *cqe, bool solicited)
{
	if (kiwi_cq_add(cq, cqe, solicited) != -ENOSPC)
		return;
	kiwi_stat_add(qp->kdev, KIWI_STAT_CQ_OVERFLOW, 1);
	if (!xchg(&qp->cq_overflow, true))
		kiwi_tx_kick(qp);
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
 * Retire the WQE at sq_head (under sq_lock).  The slot is handed back to
 * the producer before its completion is queued, so a process that sees
 * the completion also sees the free slot.
 */
static void kiwi_sq_advance(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->sq_lock);
	qp->sq_head++;
	kiwi_ring_consumed(&qp->sq_ring, qp->sq_head);
}

static const u8 kiwi_uwr_to_ib[KIWI_UWR_NUM_OPCODES] = {
	[KIWI_UWR_SEND] = IB_WR_SEND,
	[KIWI_UWR_SEND_INV] = IB_WR_SEND_WITH_INV,
	[KIWI_UWR_RDMA_WRITE] = IB_WR_RDMA_WRITE,
	[KIWI_UWR_RDMA_READ] = IB_WR_RDMA_READ,
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

/* Opcodes a QP may use: the kernel-only ones never come from a user ring. */
static bool kiwi_uwr_opcode_ok(struct kiwi_qp *qp, u8 uwr_opcode)
{
	return uwr_opcode < KIWI_UWR_NUM_OPCODES ||
	       (!qp->user && uwr_opcode >= KIWI_KWR_FIRST &&
		uwr_opcode < KIWI_KWR_END);
}

static void kiwi_rq_complete(struct kiwi_qp *qp, u64 wr_id,
			     enum ib_wc_status status)
{
	struct kiwi_cqe cqe = {
		.wr_id = wr_id,
		.qp = &qp->ibqp,
		.opcode = IB_WC_RECV,
		.status = status,
	};

	kiwi_qp_cq_add(qp, qp->rcq, &cqe, false);
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
 * Complete every outstanding send WR: those already finished with their
 * own status, the rest with IB_WC_WR_FLUSH_ERR.  WQEs never started are
 * read from the ring (only their wr_id and opcode).  Only called when
 * the transmit path is stopped (or was never started).
 */
static void kiwi_qp_flush_sq(struct kiwi_qp *qp)
{
	u32 started, posted, i;
	unsigned long flags;
	bool sane;

	spin_lock_irqsave(&qp->sq_lock, flags);
	started = qp->sq_tx + qp->sq_loaded;
	posted = max(kiwi_sq_posted(qp, &sane), started);
	for (i = 0; i < posted; i++) {
		struct kiwi_sq_slot e = *kiwi_sq_slot(qp, qp->sq_head);

		if (i >= started)
			kiwi_sq_unstarted(qp, qp->sq_head, &e);
		kiwi_sq_advance(qp);
		if (e.state != KIWI_SQE_DONE)
			kiwi_sq_complete(qp, e.wr_id, e.opcode,
					 IB_WC_WR_FLUSH_ERR);
		else if (e.signaled || e.status != IB_WC_SUCCESS)
			kiwi_sq_complete(qp, e.wr_id, e.opcode, e.status);
	}
	qp->sq_tx = 0;
	qp->sq_loaded = false;
	qp->orq_count = 0;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* The wr_id of the receive WQE at @idx, from whatever the ring holds. */
static u64 kiwi_rq_wr_id(const struct kiwi_ring *r, u32 idx)
{
	u64 wr_id;

	memcpy(&wr_id, kiwi_ring_slot(r, idx), sizeof(wr_id));
	return wr_id;
}

static void kiwi_qp_flush_rq(struct kiwi_qp *qp)
{
	unsigned long flags;
	u32 n;

	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	if (!kiwi_ring_avail(&qp->rq_ring, qp->rq_head, &n))
		n = qp->rq_ring.size;
	while (n--) {
		u64 wr_id = kiwi_rq_wr_id(&qp->rq_ring, qp->rq_head);

		qp->rq_head++;
		kiwi_ring_consumed(&qp->rq_ring, qp->rq_head);
		kiwi_rq_complete(qp, wr_id, IB_WC_WR_FLUSH_ERR);
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

static void kiwi_qp_reset_msn(struct kiwi_qp *qp)
{
	int i;

	for (i = 0; i < KIWI_QN_COUNT; i++)
		qp->tx_msn[i] = 1;	/* RFC 5041 5.1: MSNs start at one */
}

static int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to);

/* ---- data path hooks ---- */

/* Retire finished SQEs from the head, in order, posting completions. */
void kiwi_qp_retire_sq(struct kiwi_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	while (qp->sq_tx) {
		struct kiwi_sq_slot *slot = kiwi_sq_slot(qp, qp->sq_head);

		if (slot->state != KIWI_SQE_DONE)
			break;
		kiwi_sq_advance(qp);
		qp->sq_tx--;
		if (slot->signaled || slot->status != IB_WC_SUCCESS)
			kiwi_sq_complete(qp, slot->wr_id, slot->opcode,
					 slot->status);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* Under sq_lock: the oldest READ awaiting its response, or NULL. */
static struct kiwi_sq_slot *kiwi_sq_oldest_read(struct kiwi_qp *qp)
{
	u32 i;

	lockdep_assert_held(&qp->sq_lock);

	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sq_slot *slot = kiwi_sq_slot(qp, qp->sq_head + i);

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
		qp->orq_count--;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* Is send queue work waiting, maybe for an ORD credit or a fence? */
static bool kiwi_sq_waiting(struct kiwi_qp *qp)
{
	unsigned long flags;
	bool sane = true, waiting;

	spin_lock_irqsave(&qp->sq_lock, flags);
	waiting = qp->sq_loaded || kiwi_sq_posted(qp, &sane) > qp->sq_tx;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return waiting || !sane;
}

void kiwi_qp_read_done(struct kiwi_qp *qp)
{
	kiwi_qp_read_end(qp, IB_WC_SUCCESS);
	kiwi_qp_retire_sq(qp);
	/*
	 * The freed ORD credit matters only to a WQE already waiting; an
	 * idle send queue needs no worker wake-up (one per READ otherwise).
	 */
	if (kiwi_sq_waiting(qp))
		kiwi_tx_kick(qp);
}

/* Completes with @status when the QP is flushed, which follows. */
void kiwi_qp_read_failed(struct kiwi_qp *qp, enum ib_wc_status status)
{
	kiwi_qp_read_end(qp, status);
}

/* ---- send WQEs: from the ring into the transmit path ---- */

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
	bool is_read;
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
	is_read = kiwi_wr_is_read(slot->opcode);
	if (kiwi_usqe_check(&h, &lim, is_read ? KIWI_MAX_SGE_RD : KIWI_MAX_SGE,
			    is_read))
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
	slot->bytes = sqe->bytes;
	if (kiwi_wr_is_read(sqe->opcode)) {
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
	u32 idx = qp->sq_head + qp->sq_tx;
	struct kiwi_sq_slot *slot = kiwi_sq_slot(qp, idx);
	bool sane;
	int rv;

	lockdep_assert_held(&qp->sq_lock);

	if (qp->sq_loaded)
		return 0;
	for (;;) {
		u32 posted = kiwi_sq_posted(qp, &sane);

		if (!sane)
			return -EINVAL;
		if (posted > qp->sq_tx)
			break;
		if (kiwi_sq_go_idle(qp))
			return -EAGAIN;
	}
	rv = kiwi_sqe_load(qp, idx, &qp->sq_cur, slot);
	if (rv) {
		/* Completes with an error once retired; the QP fails. */
		slot->state = KIWI_SQE_DONE;
		slot->status = IB_WC_LOC_QP_OP_ERR;
		qp->sq_tx++;
		return rv;
	}
	qp->sq_loaded = true;
	return 0;
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
	else if ((sqe->flags & IB_SEND_FENCE) && qp->orq_count)
		sqe = NULL;
	else if (kiwi_wr_is_read(sqe->opcode) &&
		 qp->orq_count >= max(qp->ord, 1U))
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
	slot = kiwi_sq_slot(qp, qp->sq_head + qp->sq_tx);
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
	kiwi_sq_slot(qp, qp->sq_head + qp->sq_tx)->state = KIWI_SQE_WAIT_RESP;
	qp->sq_tx++;
	qp->sq_loaded = false;
	qp->orq_count++;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* ---- receive WQEs ---- */

/* Copy receive WQE @idx out of @r into @rqe and validate the copy. */
static int kiwi_rqe_load(const struct kiwi_ring *r, u32 idx, u32 max_sge,
			 struct kiwi_rqe *rqe)
{
	struct kiwi_wqe_limits lim = { .stride = r->stride, .max_sge = max_sge };
	const u8 *w = kiwi_ring_slot(r, idx);
	struct kiwi_usge usge[KIWI_MAX_SGE];
	struct kiwi_urqe h;
	u32 i, bytes;

	memcpy(&h, w, sizeof(h));
	rqe->wr_id = h.wr_id;
	rqe->num_sge = 0;
	if (kiwi_urqe_check(&h, &lim))
		return -EINVAL;
	memcpy(usge, w + sizeof(h), h.num_sge * sizeof(usge[0]));
	if (kiwi_usge_total(usge, h.num_sge, &bytes))
		return -EINVAL;
	for (i = 0; i < h.num_sge; i++) {
		rqe->sge[i].addr = usge[i].addr;
		rqe->sge[i].len = usge[i].length;
		rqe->sge[i].lkey = usge[i].lkey;
	}
	rqe->num_sge = h.num_sge;
	return 0;
}

static bool kiwi_qp_take_own_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe)
{
	struct kiwi_ring *r = &qp->rq_ring;
	unsigned long flags;
	bool ok = false;
	u32 n;

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (kiwi_ring_avail(r, qp->rq_head, &n) && n) {
		int rv = kiwi_rqe_load(r, qp->rq_head, qp->cap.max_recv_sge,
				       rqe);

		qp->rq_head++;
		kiwi_ring_consumed(r, qp->rq_head);
		if (rv)		/* the caller fails the QP: no buffer */
			kiwi_rq_complete(qp, rqe->wr_id, IB_WC_LOC_QP_OP_ERR);
		ok = !rv;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return ok;
}

static void kiwi_srq_limit_event(struct kiwi_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
		.element.srq = &srq->ibsrq,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

static bool kiwi_qp_take_srq_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe)
{
	struct kiwi_srq *srq = qp->srq;
	struct kiwi_ring *r = &srq->ring;
	bool limit = false, ok = false;
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&srq->lock, flags);
	if (kiwi_ring_avail(r, srq->head, &n) && n) {
		int rv = kiwi_rqe_load(r, srq->head, srq->max_sge, rqe);

		srq->head++;
		kiwi_ring_consumed(r, srq->head);
		if (rv)
			kiwi_rq_complete(qp, rqe->wr_id, IB_WC_LOC_QP_OP_ERR);
		ok = !rv;
		if (srq->limit && n - 1 < srq->limit) {
			srq->limit = 0;	/* one event per arming */
			limit = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (limit)
		kiwi_srq_limit_event(srq);
	return ok;
}

/*
 * Take the next receive WQE (from the SRQ if the QP has one).  False if
 * there is none or it is malformed (then it has completed in error).
 */
bool kiwi_qp_take_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe)
{
	return qp->srq ? kiwi_qp_take_srq_rqe(qp, rqe) :
			 kiwi_qp_take_own_rqe(qp, rqe);
}

static void kiwi_qp_fatal_event(struct kiwi_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.event = IB_EVENT_QP_FATAL,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* Leave RTS for good from the data path (any context). */
static bool kiwi_qp_kill(struct kiwi_qp *qp)
{
	if (kiwi_qp_next(qp, KIWI_QPS(RTS) | KIWI_QPS(CLOSING),
			 KIWI_QP_TERMINATE, IB_QPS_ERR) < 0)
		return false;
	kiwi_qp_flush_rq(qp);
	return true;
}

/*
 * A protocol error was detected locally: send TERMINATE with the given
 * code, move to error, and have the CM abort the connection.
 */
void kiwi_qp_error(struct kiwi_qp *qp, u8 layer, u8 etype, u8 ecode)
{
	if (!kiwi_qp_kill(qp))
		return;
	if (layer != KIWI_TL_LLP || ecode != KIWI_LC_TCP_ERR) {
		qp->term_ctrl = kiwi_term_ctrl(layer, etype, ecode);
		WRITE_ONCE(qp->term_pending, true);
		kiwi_tx_kick(qp);
	}
	kiwi_qp_fatal_event(qp);
	kiwi_cm_qp_closing(qp, true);
}

/* Status for the requester's failed WR, from the peer's TERMINATE. */
static enum ib_wc_status kiwi_term_status(u32 ctrl)
{
	u8 layer = ctrl >> KIWI_TERM_LAYER_SHIFT;
	u8 etype = (ctrl >> KIWI_TERM_ETYPE_SHIFT) & 0xf;

	if ((layer == KIWI_TL_RDMAP && etype == KIWI_RT_PROTECTION) ||
	    (layer == KIWI_TL_DDP && etype == KIWI_DT_TAGGED))
		return IB_WC_REM_ACCESS_ERR;
	if (layer == KIWI_TL_DDP && etype == KIWI_DT_UNTAGGED)
		return IB_WC_REM_INV_REQ_ERR;
	return IB_WC_REM_OP_ERR;
}

/* The peer terminated: fail the oldest transmitted WR with its reason. */
void kiwi_qp_peer_terminated(struct kiwi_qp *qp, u32 term_ctrl)
{
	enum ib_wc_status status = kiwi_term_status(term_ctrl);
	unsigned long flags;
	u32 i;

	if (!kiwi_qp_kill(qp))
		return;
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sq_slot *slot = kiwi_sq_slot(qp, qp->sq_head + i);

		if (slot->state != KIWI_SQE_DONE) {
			slot->state = KIWI_SQE_DONE;
			slot->status = status;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	kiwi_qp_fatal_event(qp);
	kiwi_cm_qp_closing(qp, true);
}

/* The CM has an established MPA connection for this QP. */
int kiwi_qp_connected(struct kiwi_qp *qp, struct kiwi_ep *ep,
		      struct socket *sock, bool crc, bool large, u8 rtr)
{
	int rv = 0;

	mutex_lock(&qp->state_lock);
	if (kiwi_qp_state(qp) != KIWI_QP_IDLE || qp->ep) {
		rv = -EINVAL;
		goto out;
	}
	kiwi_rx_reset(qp);
	kiwi_qp_reset_msn(qp);
	qp->crc = crc;
	qp->large_fpdu = large;
	qp->rtr_pending = rtr;
	qp->term_pending = false;
	qp->irq_head = 0;
	qp->irq_count = 0;
	qp->tx_cpu = KIWI_TX_CPU_PICK;	/* at the first kick */
	qp->rx_cpu = -1;
	WRITE_ONCE(qp->sock, sock);
	WRITE_ONCE(qp->ep, ep);
	/* IDLE changes only under state_lock: this cannot fail. */
	WARN_ON_ONCE(kiwi_qp_next(qp, KIWI_QPS(IDLE), KIWI_QP_RTS,
				  IB_QPS_RTS) < 0);
	/* WQEs posted before the connection are sent now. */
	kiwi_ring_set_flags(&qp->sq_ring, KIWI_RING_F_BUSY);
	kiwi_tx_start(qp);
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

/*
 * The connection is going away (CM context, socket still attached):
 * stop transmit, flush everything.  A pending TERMINATE gets a short
 * chance to leave first.  The QP stays bound to the endpoint (qp->ep)
 * until kiwi_qp_unbind(), once the socket no longer calls the receive
 * path: until then it cannot be reset or connected again.
 */
void kiwi_qp_disconnected(struct kiwi_qp *qp)
{
	struct socket *sock;

	mutex_lock(&qp->state_lock);
	sock = qp->sock;
	kiwi_qp_next(qp, KIWI_QPS_ANY, KIWI_QP_ERROR, IB_QPS_ERR);
	mutex_unlock(&qp->state_lock);
	if (!sock)
		return;

	/*
	 * Until the TERMINATE is out and the sender has let go of the
	 * socket: the worker wakes tx_idle after releasing tx_mutex.  At
	 * most a second: a peer that does not read may never take it.
	 */
	wait_event_timeout(qp->tx_idle, !READ_ONCE(qp->term_pending) &&
			   !mutex_is_locked(&qp->tx_mutex), HZ);
	kernel_sock_shutdown(sock, SHUT_RDWR);	/* unblocks a stuck send */
	/*
	 * Senders read qp->sock under tx_mutex (the worker, a doorbell):
	 * once it is cleared under the same mutex, none still uses it.
	 */
	mutex_lock(&qp->tx_mutex);
	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->sock, NULL);
	mutex_unlock(&qp->state_lock);
	mutex_unlock(&qp->tx_mutex);
	flush_work(&qp->tx_work);

	kiwi_qp_flush_rq(qp);
	kiwi_qp_flush_sq(qp);
}

/*
 * The endpoint is done with the QP: its socket is released and the
 * receive path let go (kiwi_rx_release()).  Now it may be reset.
 */
void kiwi_qp_unbind(struct kiwi_qp *qp)
{
	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->ep, NULL);
	mutex_unlock(&qp->state_lock);
}

/* ---- create / destroy ---- */

static int kiwi_qp_check_cap(struct kiwi_device *kdev,
			     struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;
	if (attr->create_flags)
		return -EOPNOTSUPP;
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	if (cap->max_send_wr > kdev->lim.max_qp_wr ||
	    cap->max_send_sge > KIWI_MAX_SGE ||
	    cap->max_inline_data > KIWI_MAX_INLINE)
		return -EINVAL;
	if (attr->srq)
		return 0;
	if (cap->max_recv_wr > kdev->lim.max_qp_wr ||
	    cap->max_recv_sge > KIWI_MAX_SGE)
		return -EINVAL;
	return 0;
}

static int kiwi_qp_resp(struct kiwi_qp *qp, struct ib_udata *udata)
{
	struct kiwi_uresp_create_qp resp = {
		.qp_id = qp->ibqp.qp_num,
		.num_sqe = qp->sq_size,
		.sq_stride = qp->sq_ring.stride,
		.sq_mmap_offset = kiwi_ring_mmap_offset(&qp->sq_ring),
		.sq_mmap_len = kiwi_ring_mmap_len(&qp->sq_ring),
	};

	if (!qp->srq) {
		resp.num_rqe = qp->rq_ring.size;
		resp.rq_stride = qp->rq_ring.stride;
		resp.rq_mmap_offset = kiwi_ring_mmap_offset(&qp->rq_ring);
		resp.rq_mmap_len = kiwi_ring_mmap_len(&qp->rq_ring);
	}
	/* Without the ring offsets a user QP is unusable. */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * Allocate the rings (mapped for user QPs) and grant what the slot
 * sizes really hold; the caller sees the grant in attr->cap.
 */
static int kiwi_qp_alloc_queues(struct kiwi_qp *qp,
				struct ib_qp_init_attr *attr,
				struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &attr->cap;
	u32 payload = kiwi_sq_payload(cap->max_send_sge, cap->max_inline_data);
	int rv;

	qp->sq_size = kiwi_ring_slots(cap->max_send_wr);
	rv = kiwi_ring_init(&qp->sq_ring, udata, qp->sq_size,
			    sizeof(struct kiwi_usqe) + payload);
	if (rv)
		return rv;
	qp->sq = kvcalloc(qp->sq_size, sizeof(*qp->sq), GFP_KERNEL);
	if (!qp->sq)
		return -ENOMEM;
	cap->max_send_wr = qp->sq_size;
	cap->max_send_sge = min_t(u32, payload / KIWI_USGE_SIZE, KIWI_MAX_SGE);
	cap->max_inline_data = min_t(u32, payload, KIWI_MAX_INLINE);
	if (qp->srq)
		return 0;
	cap->max_recv_sge = max(cap->max_recv_sge, 1U);
	rv = kiwi_ring_init(&qp->rq_ring, udata,
			    kiwi_ring_slots(cap->max_recv_wr),
			    kiwi_rq_stride(cap->max_recv_sge));
	if (rv)
		return rv;
	cap->max_recv_wr = qp->rq_ring.size;
	return 0;
}

static void kiwi_qp_free_queues(struct kiwi_qp *qp)
{
	if (qp->sq_ring.buf)
		kiwi_ring_destroy(&qp->sq_ring);
	if (qp->rq_ring.buf)
		kiwi_ring_destroy(&qp->rq_ring);
	kvfree(qp->sq);
	qp->sq = NULL;
}

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibqp->device);
	struct kiwi_qp *qp = to_kqp(ibqp);
	u32 qpn;
	int rv;

	rv = kiwi_qp_check_cap(kdev, attr);
	if (rv)
		return rv;
	if (!kiwi_res_get(&kdev->num_qp, kdev->lim.max_qp))
		return -ENOMEM;

	qp->kdev = kdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	/* An RNIC's QP starts in INIT (rdma-core tests.test_qp expects it). */
	qp->st = KIWI_QP_ST(KIWI_QP_IDLE, IB_QPS_INIT);
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	qp->sq_sig_type = attr->sq_sig_type;
	qp->user = !!udata;
	if (udata)
		qp->owner = get_task_pid(current, PIDTYPE_TGID);
	qp->ird = KIWI_MAX_IRD;
	qp->ord = KIWI_MAX_ORD;

	rv = kiwi_qp_alloc_queues(qp, attr, udata);
	if (rv)
		goto err;
	rv = kiwi_tx_init(qp);
	if (rv)
		goto err;
	kiwi_rx_init(qp);
	kiwi_qp_reset_msn(qp);
	kiwi_qp_publish_state(qp);
	qp->cap = attr->cap;

	rv = xa_alloc_cyclic(&kdev->qp_xa, &qpn, qp, XA_LIMIT(1, KIWI_QPN_MAX),
			     &kdev->qp_next, GFP_KERNEL);
	if (rv < 0) {
		rv = rv == -EBUSY ? -ENOMEM : rv;
		goto err;
	}
	ibqp->qp_num = qpn;

	if (udata) {
		rv = kiwi_qp_resp(qp, udata);
		if (rv) {
			xa_erase(&kdev->qp_xa, qpn);
			goto err;
		}
	}
	return 0;

err:
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return rv;
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_device *kdev = qp->kdev;

	mutex_lock(&qp->state_lock);
	kiwi_qp_set_state(qp, IB_QPS_ERR);
	mutex_unlock(&qp->state_lock);

	xa_erase(&kdev->qp_xa, ibqp->qp_num);

	/* The iw_cm may still hold references until the connection ends. */
	kiwi_qp_put(ibqp);
	wait_for_completion(&qp->freed);

	cancel_work_sync(&qp->tx_work);
	kiwi_rx_stop(qp);
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return 0;
}

/* ---- state machine ---- */

/*
 * modify_qp's state change, under qp->state_lock.  The iWARP rules: only
 * the CM makes a QP RTS (a connection); SQD starts a graceful close;
 * ERR aborts; RESET needs the connection wholly gone (receive path let
 * go, kiwi_qp_unbind()).
 */
static int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to)
{
	enum ib_qp_state from = kiwi_qp_ib_state(qp);
	int rv;

	lockdep_assert_held(&qp->state_lock);

	switch (to) {
	case IB_QPS_RESET:
		/* Not while a connection (its receive path) still holds it. */
		if (qp->sock || qp->ep)
			return -EINVAL;
		rv = kiwi_qp_next(qp, KIWI_QPS_ANY & ~KIWI_QPS(RTS),
				  KIWI_QP_IDLE, IB_QPS_RESET);
		if (rv < 0)
			return -EINVAL;
		qp->cq_overflow = false;
		kiwi_rx_reset(qp);
		kiwi_qp_reset_msn(qp);
		return 0;
	case IB_QPS_INIT:
	case IB_QPS_RTR:
		if (from != IB_QPS_RESET && from != IB_QPS_INIT &&
		    from != IB_QPS_RTR)
			return -EINVAL;
		rv = kiwi_qp_next(qp, KIWI_QPS(IDLE), KIWI_QP_IDLE, to);
		return rv < 0 ? -EINVAL : 0;
	case IB_QPS_RTS:
		/* Only a connection (the CM) makes an iWARP QP RTS. */
		return kiwi_qp_state(qp) == KIWI_QP_RTS ? 0 : -EINVAL;
	case IB_QPS_SQD:
		/*
		 * librdmacm's rdma_disconnect() asks for SQD even when the
		 * peer has already closed or the QP has failed: the
		 * connection is going down as asked, so that is no error.
		 * A TERMINATE racing this wins either way (kiwi_qp_next()).
		 */
		rv = kiwi_qp_next(qp, KIWI_QPS(RTS), KIWI_QP_CLOSING,
				  IB_QPS_SQD);
		if (rv >= 0)
			kiwi_cm_qp_closing(qp, false);
		else if (kiwi_qp_state(qp) == KIWI_QP_IDLE)
			return -EINVAL;
		return 0;
	case IB_QPS_ERR:
		kiwi_qp_next(qp, KIWI_QPS_ANY, KIWI_QP_ERROR, IB_QPS_ERR);
		kiwi_qp_flush_rq(qp);
		if (qp->sock)
			kiwi_cm_qp_closing(qp, true);	/* SQ flushed then */
		else
			kiwi_qp_flush_sq(qp);
		return 0;
	default:
		return -EINVAL;
	}
}

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	int rv = 0;

	if (mask & ~(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |
		     IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_MAX_QP_RD_ATOMIC |
		     IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_EN_SQD_ASYNC_NOTIFY))
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > KIWI_MAX_ORD)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > KIWI_MAX_IRD)
		return -EINVAL;

	mutex_lock(&qp->state_lock);
	if ((mask & IB_QP_CUR_STATE) &&
	    attr->cur_qp_state != kiwi_qp_ib_state(qp)) {
		rv = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_STATE) {
		rv = kiwi_qp_set_state(qp, attr->qp_state);
		if (rv) {
			kiwi_stat_add(qp->kdev, KIWI_STAT_QP_BAD_TRANSITION, 1);
			goto out;
		}
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	attr->qp_state = kiwi_qp_ib_state(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->port_num = 1;
	attr->path_mtu = ib_mtu_int_to_enum(READ_ONCE(qp->kdev->netdev->mtu));
	attr->path_mig_state = IB_MIG_MIGRATED;

	init->qp_type = IB_QPT_RC;
	init->send_cq = &qp->scq->ibcq;
	init->recv_cq = &qp->rcq->ibcq;
	init->srq = qp->srq ? &qp->srq->ibsrq : NULL;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = qp->cap;
	return 0;
}

/*
 * Driver attributes of "rdma resource show qp -dd": what the MPA
 * exchange settled for the current connection (0 without one).
 */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	bool crc, large;
	struct nlattr *nest;
	u32 ird, ord;

	mutex_lock(&qp->state_lock);
	crc = qp->sock && qp->crc;
	large = qp->sock && qp->large_fpdu;
	ird = qp->ird;
	ord = qp->ord;
	mutex_unlock(&qp->state_lock);

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "mpa_crc", crc) ||
	    rdma_nl_put_driver_u32(msg, "large_fpdu", large) ||
	    rdma_nl_put_driver_u32(msg, "ird", ird) ||
	    rdma_nl_put_driver_u32(msg, "ord", ord)) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}

/* ---- posting ---- */

/*
 * A user QP's doorbell: uverbs POST_SEND with no WRs (user QPs post
 * through the mapped ring).  Starts the send processing, or flushes a
 * QP in error so that WRs posted there complete.
 */
static int kiwi_qp_doorbell(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr)
{
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	switch (kiwi_qp_state(qp)) {
	case KIWI_QP_RTS:
		kiwi_ring_set_flags(&qp->sq_ring, KIWI_RING_F_BUSY);
		kiwi_tx_now(qp);
		return 0;
	case KIWI_QP_TERMINATE:
	case KIWI_QP_ERROR:
		/* With a socket, kiwi_qp_disconnected() flushes soon. */
		if (!READ_ONCE(qp->sock)) {
			kiwi_qp_flush_rq(qp);
			kiwi_qp_flush_sq(qp);
		}
		return 0;
	default:
		return -ENOTCONN;
	}
}

static u8 kiwi_uwr_flags(const struct ib_send_wr *wr)
{
	int f = wr->send_flags;

	return (f & IB_SEND_SIGNALED ? KIWI_UWR_F_SIGNALED : 0) |
	       (f & IB_SEND_SOLICITED ? KIWI_UWR_F_SOLICITED : 0) |
	       (f & IB_SEND_FENCE ? KIWI_UWR_F_FENCE : 0) |
	       (f & IB_SEND_INLINE ? KIWI_UWR_F_INLINE : 0);
}

/* Inline data of a kernel consumer's WR: its SGEs are kernel addresses. */
static int kiwi_usqe_inline(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    struct kiwi_usqe *h, u8 *data)
{
	u32 i, len = 0;

	if (kiwi_wr_is_read(wr->opcode))
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > qp->cap.max_inline_data - len)
			return -EINVAL;
		memcpy(data + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	h->length = len;
	return 0;
}

/* Encode a kernel consumer's send WR into ring slot @w. */
static int kiwi_usqe_from_wr(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			     u8 *w)
{
	struct kiwi_usqe h = {
		.wr_id = wr->wr_id,
		.flags = kiwi_uwr_flags(wr),
	};
	struct kiwi_usge *sge = (void *)(w + sizeof(h));
	int i, rv = 0;

	switch (wr->opcode) {
	case IB_WR_SEND:
		h.opcode = KIWI_UWR_SEND;
		break;
	case IB_WR_SEND_WITH_INV:
		h.opcode = KIWI_UWR_SEND_INV;
		h.inv_rkey = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		h.opcode = wr->opcode == IB_WR_RDMA_WRITE ? KIWI_UWR_RDMA_WRITE :
			   wr->opcode == IB_WR_RDMA_READ ? KIWI_UWR_RDMA_READ :
			   KIWI_KWR_READ_INV;
		h.rkey = rdma_wr(wr)->rkey;
		h.raddr = rdma_wr(wr)->remote_addr;
		break;
	case IB_WR_LOCAL_INV:
		h.opcode = KIWI_KWR_LOCAL_INV;
		h.inv_rkey = wr->ex.invalidate_rkey;
		memcpy(w, &h, sizeof(h));
		return 0;
	case IB_WR_REG_MR:
		/* The MR by its STag, the new key, the access rights. */
		h.opcode = KIWI_KWR_REG_MR;
		h.rkey = reg_wr(wr)->mr->lkey;
		h.inv_rkey = reg_wr(wr)->key;
		h.raddr = reg_wr(wr)->access;
		memcpy(w, &h, sizeof(h));
		return 0;
	default:
		return -EOPNOTSUPP;
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge ||
	    (kiwi_wr_is_read(wr->opcode) && wr->num_sge > KIWI_MAX_SGE_RD))
		return -EINVAL;
	if (h.flags & KIWI_UWR_F_INLINE) {
		rv = kiwi_usqe_inline(qp, wr, &h, w + sizeof(h));
	} else {
		h.num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
	}
	memcpy(w, &h, sizeof(h));
	return rv;
}

int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	enum kiwi_qp_state state = kiwi_qp_state(qp);
	struct kiwi_ring *r = &qp->sq_ring;
	unsigned long flags;
	bool kick = false;
	int rv = 0;

	if (qp->user)
		return kiwi_qp_doorbell(qp, wr, bad_wr);
	if (state != KIWI_QP_RTS && state != KIWI_QP_ERROR &&
	    state != KIWI_QP_TERMINATE) {
		*bad_wr = wr;
		return -ENOTCONN;
	}
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		u32 prod = kiwi_ring_own_prod(r);

		if (prod - qp->sq_head == r->size) {
			rv = -ENOMEM;
			break;
		}
		rv = kiwi_usqe_from_wr(qp, wr, kiwi_ring_slot(r, prod));
		if (rv)
			break;
		kiwi_ring_produced(r, prod + 1);
		kick = true;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (kick) {
		if (kiwi_qp_state(qp) == KIWI_QP_RTS)
			kiwi_tx_kick(qp);
		else if (!READ_ONCE(qp->sock))
			kiwi_qp_flush_sq(qp);	/* errored: flush in order */
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}

/* Append a kernel consumer's receive WR to @r (under its lock). */
static int kiwi_urqe_post(struct kiwi_ring *r, u32 head, u32 max_wr,
			  u32 max_sge, const struct ib_recv_wr *wr)
{
	u32 prod = kiwi_ring_own_prod(r);
	u8 *w = kiwi_ring_slot(r, prod);
	struct kiwi_usge *sge = (void *)(w + sizeof(struct kiwi_urqe));
	struct kiwi_urqe h = {
		.wr_id = wr->wr_id,
		.num_sge = wr->num_sge,
	};
	int i;

	if (prod - head >= max_wr)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	memcpy(w, &h, sizeof(h));
	kiwi_ring_produced(r, prod + 1);
	return 0;
}

/* User QPs and SRQs post receives through their rings only. */
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	unsigned long flags;
	int rv = 0;

	if (qp->srq || qp->user) {
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (kiwi_qp_state(qp) == KIWI_QP_ERROR)
			kiwi_rq_complete(qp, wr->wr_id, IB_WC_WR_FLUSH_ERR);
		else
			rv = kiwi_urqe_post(&qp->rq_ring, qp->rq_head,
					    qp->rq_ring.size,
					    qp->cap.max_recv_sge, wr);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		if (rv)
			break;
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}

/* ---- shared receive queues ---- */

static int kiwi_srq_resp(struct kiwi_srq *srq, struct ib_udata *udata)
{
	struct kiwi_uresp_create_srq resp = {
		.srq_id = srq->ibsrq.res.id,
		.num_rqe = srq->ring.size,
		.stride = srq->ring.stride,
		.mmap_offset = kiwi_ring_mmap_offset(&srq->ring),
		.mmap_len = kiwi_ring_mmap_len(&srq->ring),
	};

	if (!udata)
		return 0;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibsrq->device);
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int rv;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > kdev->lim.max_srq_wr ||
	    attr->max_sge > KIWI_MAX_SGE || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (!kiwi_res_get(&kdev->num_srq, kdev->lim.max_srq))
		return -ENOMEM;

	spin_lock_init(&srq->lock);
	srq->max_wr = attr->max_wr;
	srq->max_sge = max(attr->max_sge, 1U);
	srq->limit = attr->srq_limit;
	rv = kiwi_ring_init(&srq->ring, udata, kiwi_ring_slots(attr->max_wr),
			    kiwi_rq_stride(srq->max_sge));
	if (rv)
		goto err;
	rv = kiwi_srq_resp(srq, udata);
	if (rv)
		goto err_ring;
	return 0;
err_ring:
	kiwi_ring_destroy(&srq->ring);
err:
	atomic_dec(&kdev->num_srq);
	return rv;
}

int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	kiwi_ring_destroy(&srq->ring);
	atomic_dec(&to_kdev(ibsrq->device)->num_srq);
	return 0;
}

int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;
	int rv = 0;

	/* Resizing an SRQ is not supported. */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;

	spin_lock_irqsave(&srq->lock, flags);
	if (attr->srq_limit > srq->max_wr)
		rv = -EINVAL;
	else
		srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return rv;
}

int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;
	int rv = 0;

	if (srq->ring.mentry) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		rv = kiwi_urqe_post(&srq->ring, srq->head, srq->max_wr,
				    srq->max_sge, wr);
		if (rv)
			break;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (rv)
		*bad_wr = wr;
	return rv;
}
