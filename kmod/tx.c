// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: transmit path, DDP and RDMAP (RFC 5041, RFC 5040) -- which
 * message goes next, its segmentation into FPDUs and their headers;
 * fpdu.c frames each FPDU (MPA) and hands it to TCP.
 *
 * One work item per QP does all sending, so FPDUs of different messages
 * never interleave on the stream.  Inbound READ responses and TERMINATE
 * go before new send queue work.  FPDUs are copied out of the registered
 * memory into pages that TCP then takes by reference (fpdu.c), so a
 * work request may complete as soon as its FPDUs are queued.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <net/tcp.h>

#include "fpdu.h"
#include "stag.h"
#include "trace.h"

/* ---- message senders ---- */

/*
 * RFC 7306 Immediate Data (with SE if the WR is solicited): the WR's
 * 32 bits in the message's 8, a receive WQE at the peer, queue 0.
 */
static int kiwi_tx_imm(struct kiwi_qp *qp, struct socket *sock,
		       struct kiwi_sqe *sqe)
{
	union kiwi_tx_hdr hdr = {};
	struct kiwi_src none = { .qp = qp };
	u8 op = sqe->flags & IB_SEND_SOLICITED ? KIWI_OP_IMM_SE : KIWI_OP_IMM;

	kiwi_tx_hdr_untagged(&hdr, op, true, KIWI_QN_SEND,
			     qp->tx.msn[KIWI_QN_SEND]++, 0, 0);
	kiwi_imm_build(&hdr.u.imm, sqe->ex);
	return kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(op), &none, 0, 0,
			    false);
}

static bool kiwi_wr_has_imm(u32 opcode)
{
	return opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	       opcode == IB_WR_SEND_WITH_IMM;
}

/*
 * Send a SEND* or WRITE message, segmenting at the FPDU size; a WR with
 * immediate data then sends its Immediate Data message right behind it
 * (a SEND with immediate data is that message alone: no payload).
 */
static int kiwi_tx_message(struct kiwi_qp *qp, struct socket *sock,
			   struct kiwi_sqe *sqe)
{
	struct kiwi_src src = {
		.qp = qp, .sge = sqe->sge, .num_sge = sqe->num_sge,
		.kbuf = sqe->inline_data,
	};
	union kiwi_tx_hdr hdr = {};
	bool imm = kiwi_wr_has_imm(sqe->opcode);
	bool tagged = sqe->opcode == IB_WR_RDMA_WRITE ||
		      sqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	u8 op;
	u32 hdr_len, seg;
	int rv;

	if (sqe->opcode == IB_WR_SEND_WITH_IMM)
		return kiwi_tx_imm(qp, sock, sqe);
	if (tagged)
		op = KIWI_OP_WRITE;
	else if (sqe->opcode == IB_WR_SEND_WITH_INV)
		op = sqe->flags & IB_SEND_SOLICITED ? KIWI_OP_SEND_SE_INV :
						      KIWI_OP_SEND_INV;
	else
		op = sqe->flags & IB_SEND_SOLICITED ? KIWI_OP_SEND_SE :
						      KIWI_OP_SEND;
	hdr_len = kiwi_hdr_len(op);
	seg = kiwi_tx_max_payload(qp, sock, hdr_len);

	do {
		u32 len = min(seg, sqe->bytes - sqe->sent);
		bool last = sqe->sent + len == sqe->bytes;

		if (tagged)
			kiwi_tx_hdr_tagged(&hdr, op, last, sqe->rkey,
					   sqe->raddr + sqe->sent);
		else
			kiwi_tx_hdr_untagged(&hdr, op, last, KIWI_QN_SEND,
					     qp->tx.msn[KIWI_QN_SEND], sqe->sent,
					     kiwi_op(op)->invalidate ?
					     sqe->ex : 0);
		rv = kiwi_tx_fpdu(qp, sock, &hdr, hdr_len, &src, sqe->sent,
				  len, !last || imm);
		if (rv)
			return rv;
		sqe->sent += len;
	} while (sqe->sent < sqe->bytes);

	if (!tagged)
		qp->tx.msn[KIWI_QN_SEND]++;
	return imm ? kiwi_tx_imm(qp, sock, sqe) : 0;
}

static int kiwi_tx_read_req(struct kiwi_qp *qp, struct socket *sock,
			    u32 sink_stag, u64 sink_to, u32 len,
			    u32 src_stag, u64 src_to)
{
	union kiwi_tx_hdr hdr = {};
	struct kiwi_read_req *rr = &hdr.u.read_req;
	struct kiwi_src none = { .qp = qp };

	kiwi_tx_hdr_untagged(&hdr, KIWI_OP_READ_REQ, true, KIWI_QN_READ_REQ,
			     qp->tx.msn[KIWI_QN_READ_REQ]++, 0, 0);
	rr->sink_stag = cpu_to_be32(sink_stag);
	rr->sink_to = cpu_to_be64(sink_to);
	rr->size = cpu_to_be32(len);
	rr->src_stag = cpu_to_be32(src_stag);
	rr->src_to = cpu_to_be64(src_to);
	return kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(KIWI_OP_READ_REQ),
			    &none, 0, 0, false);
}

/* Answer one inbound READ; the source was validated on receipt. */
static int kiwi_tx_read_resp(struct kiwi_qp *qp, struct socket *sock,
			     struct kiwi_irqe *e)
{
	u32 hdr_len = kiwi_hdr_len(KIWI_OP_READ_RESP);
	u32 seg = kiwi_tx_max_payload(qp, sock, hdr_len);
	struct kiwi_src src = { .qp = qp };
	union kiwi_tx_hdr hdr = {};
	int rv = 0;

	if (e->len) {
		src.mem = kiwi_mem_get(qp->kdev, e->src_stag);
		if (!src.mem)
			return -EINVAL;
		src.addr = e->src_to;
		rv = kiwi_mem_check_qp(src.mem, qp, e->src_to, e->len,
				       IB_ACCESS_REMOTE_READ, &src.gen);
		if (rv) {
			kiwi_mem_put(src.mem);
			return -EINVAL;
		}
	}
	do {
		u32 len = min(seg, e->len - e->sent);
		bool last = e->sent + len == e->len;

		kiwi_tx_hdr_tagged(&hdr, KIWI_OP_READ_RESP, last, e->sink_stag,
				   e->sink_to + e->sent);
		rv = kiwi_tx_fpdu(qp, sock, &hdr, hdr_len, &src, e->sent, len,
				  !last);
		if (rv)
			break;
		e->sent += len;
	} while (e->sent < e->len);
	if (src.mem)
		kiwi_mem_put(src.mem);
	if (!rv)
		kiwi_qp_stat_add(qp, KIWI_STAT_READ_SERVED, 1);
	return rv;
}

/* An RFC 7306 Atomic Request for WR @sqe, queue 3. */
static int kiwi_tx_atomic_req(struct kiwi_qp *qp, struct socket *sock,
			      struct kiwi_sqe *sqe, u32 req_id)
{
	union kiwi_tx_hdr hdr = {};
	struct kiwi_src none = { .qp = qp };
	bool cmp_swap = sqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP;

	kiwi_tx_hdr_untagged(&hdr, KIWI_OP_ATOMIC_REQ, true, KIWI_QN_ATOMIC_REQ,
			     qp->tx.msn[KIWI_QN_ATOMIC_REQ]++, 0, 0);
	/* verbs: compare_add is the addend, or the compare value. */
	kiwi_atomic_req_build(&hdr.u.atomic_req, cmp_swap, req_id,
			      sqe->rkey, sqe->raddr,
			      cmp_swap ? sqe->swap : sqe->compare_add,
			      sqe->compare_add);
	return kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(KIWI_OP_ATOMIC_REQ),
			    &none, 0, 0, false);
}

/* The Atomic Response to an executed request, queue 4. */
static int kiwi_tx_atomic_resp(struct kiwi_qp *qp, struct socket *sock,
			       const struct kiwi_irqe *e)
{
	union kiwi_tx_hdr hdr = {};
	struct kiwi_src none = { .qp = qp };
	int rv;

	kiwi_tx_hdr_untagged(&hdr, KIWI_OP_ATOMIC_RESP, true,
			     KIWI_QN_ATOMIC_RESP,
			     qp->tx.msn[KIWI_QN_ATOMIC_RESP], 0, 0);
	kiwi_atomic_resp_build(&hdr.u.atomic_resp, e->req_id, e->orig);
	rv = kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(KIWI_OP_ATOMIC_RESP),
			  &none, 0, 0, false);
	/*
	 * -EAGAIN from the receive path's atomic attempt: nothing went on
	 * the wire and the worker sends this response again, which must
	 * carry the same MSN.
	 */
	if (rv != -EAGAIN)
		qp->tx.msn[KIWI_QN_ATOMIC_RESP]++;
	return rv;
}

/* Answer the inbound READ or atomic @e. */
static int kiwi_tx_respond_one(struct kiwi_qp *qp, struct socket *sock,
			       struct kiwi_irqe *e)
{
	if (e->atomic)
		return kiwi_tx_atomic_resp(qp, sock, e);
	return kiwi_tx_read_resp(qp, sock, e);
}

static int kiwi_tx_send_term(struct kiwi_qp *qp, struct socket *sock,
			     u32 ctrl)
{
	union kiwi_tx_hdr hdr = {};
	struct kiwi_src none = { .qp = qp };

	static const enum kiwi_stat by_layer[] = {
		[KIWI_TL_RDMAP] = KIWI_STAT_TERM_TX_RDMAP,
		[KIWI_TL_DDP] = KIWI_STAT_TERM_TX_DDP,
		[KIWI_TL_LLP] = KIWI_STAT_TERM_TX_LLP,
	};
	u8 layer = ctrl >> KIWI_TERM_LAYER_SHIFT;

	if (layer < ARRAY_SIZE(by_layer))
		kiwi_qp_stat_add(qp, by_layer[layer], 1);
	trace_kiwi_terminate(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num,
			     true, ctrl);
	kiwi_tx_hdr_untagged(&hdr, KIWI_OP_TERMINATE, true, KIWI_QN_TERMINATE,
			     qp->tx.msn[KIWI_QN_TERMINATE]++, 0, 0);
	hdr.u.term.ctrl = cpu_to_be32(ctrl);
	return kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(KIWI_OP_TERMINATE),
			    &none, 0, 0, false);
}

/* RFC 6581 ready-to-receive: the zero-length message the peer chose. */
static int kiwi_tx_send_rtr(struct kiwi_qp *qp, struct socket *sock, u8 kind)
{
	struct kiwi_src none = { .qp = qp };
	union kiwi_tx_hdr hdr = {};

	switch (kind) {
	case KIWI_MPA_RTR_READ:	/* rx expects its response (qp.c) */
		return kiwi_tx_read_req(qp, sock, 0, 0, 0, 0, 0);
	case KIWI_MPA_RTR_SEND:
		kiwi_tx_hdr_untagged(&hdr, KIWI_OP_SEND, true, KIWI_QN_SEND,
				     qp->tx.msn[KIWI_QN_SEND]++, 0, 0);
		return kiwi_tx_fpdu(qp, sock, &hdr, kiwi_hdr_len(KIWI_OP_SEND),
				    &none, 0, 0, false);
	default:
		kiwi_tx_hdr_tagged(&hdr, KIWI_OP_WRITE, true, 0, 0);
		return kiwi_tx_fpdu(qp, sock, &hdr,
				    kiwi_hdr_len(KIWI_OP_WRITE), &none, 0, 0,
				    false);
	}
}

/* ---- the work loop ---- */

/*
 * Take the next inbound READ to answer.  Its IRD slot is freed before
 * the response goes out: the peer may issue its next READ the moment
 * the last response byte arrives, before the send call returns here.
 */
/* Under irq_lock: drop the oldest inbound READ. */
static void kiwi_irq_pop(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->tx.irq_lock);
	kiwi_q_pop(&qp->tx.irq_q);
}

static bool kiwi_irq_take(struct kiwi_qp *qp, struct kiwi_irqe *e)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&qp->tx.irq_lock, flags);
	if (kiwi_q_count(&qp->tx.irq_q)) {
		*e = qp->tx.irq[kiwi_q_head(&qp->tx.irq_q)];
		kiwi_irq_pop(qp);
		ok = true;
	}
	spin_unlock_irqrestore(&qp->tx.irq_lock, flags);
	return ok;
}

static int kiwi_tx_sqe(struct kiwi_qp *qp, struct socket *sock,
		       struct kiwi_sqe *sqe)
{
	int rv;

	switch (sqe->opcode) {
	case IB_WR_REG_MR:
		rv = kiwi_mem_fast_reg(qp, sqe->rkey, sqe->ex, sqe->raddr);
		kiwi_sq_sent(qp, sqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS);
		return rv;
	case IB_WR_LOCAL_INV:
		rv = kiwi_mem_invalidate(qp, sqe->ex);
		kiwi_sq_sent(qp, sqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS);
		return rv;
	case IB_WR_BIND_MW:
		rv = kiwi_mem_bind_mw(qp, &sqe->bind);
		kiwi_sq_sent(qp, sqe, rv ? IB_WC_MW_BIND_ERR : IB_WC_SUCCESS);
		return rv;
	default:
		break;
	}
	if (kiwi_wr_is_read(sqe->opcode)) {
		/* The local sink is checked when the response arrives. */
		kiwi_sq_read_posted(qp, sqe);
		return kiwi_tx_read_req(qp, sock, sqe->sge[0].lkey,
					sqe->sge[0].addr, sqe->bytes,
					sqe->rkey, sqe->raddr);
	}
	if (kiwi_wr_is_atomic(sqe->opcode)) {
		/* Like a READ: outstanding before the request leaves. */
		kiwi_sq_read_posted(qp, sqe);
		return kiwi_tx_atomic_req(qp, sock, sqe, sqe->ex);
	}
	rv = kiwi_tx_message(qp, sock, sqe);
	if (rv == -EINVAL) {
		kiwi_sq_sent(qp, sqe, IB_WC_LOC_PROT_ERR);
		return rv;
	}
	if (!rv)
		kiwi_sq_sent(qp, sqe, IB_WC_SUCCESS);
	return rv;
}

/*
 * A doorbell rang (a user's post, or a kernel consumer's): the clock of
 * the tx_wqe_us_* histogram starts, unless an earlier doorbell's runs.
 */
void kiwi_tx_bell(struct kiwi_qp *qp)
{
	if (!READ_ONCE(qp->tx.t_bell))
		WRITE_ONCE(qp->tx.t_bell, ktime_get_ns());
}

/*
 * A work request starts out: it answers the doorbell that waited.  Not
 * after TCP took it: over veth and loopback the peer's whole receive
 * path, and often its answer, runs inside that call, in our softirq.
 */
static void kiwi_tx_answered(struct kiwi_qp *qp)
{
	u64 t;

	if (!READ_ONCE(qp->tx.t_bell))	/* no locked op per WR for nothing */
		return;
	t = xchg(&qp->tx.t_bell, 0);
	if (t)
		kiwi_qp_lat(qp, KIWI_STAT_TX_LAT, t);
}

/*
 * tx.owned bit 0 is held while FPDUs are built and sent: by a process
 * context sender (under tx.mutex, for a whole run, sleeping in TCP
 * at times), or by the receive path answering a READ, which only tries
 * and never waits.  The latter holds it briefly with bottom halves off,
 * so spinning here for it is short.  Why a bit and not a lock lockdep
 * could follow: the owner may sleep (in TCP), which rules out a
 * spinlock, and the other side is a softirq, where mutex_trylock() is
 * not allowed; a bit taken with acquire/release semantics is the one
 * primitive that is both.  Its two users are these three functions.
 */
static bool kiwi_tx_try_own(struct kiwi_qp *qp)
{
	return !test_and_set_bit_lock(0, &qp->tx.owned);
}

static void kiwi_tx_own(struct kiwi_qp *qp)
{
	while (!kiwi_tx_try_own(qp))
		cpu_relax();
}

static void kiwi_tx_disown(struct kiwi_qp *qp)
{
	clear_bit_unlock(0, &qp->tx.owned);
}

/* What a failed send means for the QP. */
static void kiwi_tx_failed(struct kiwi_qp *qp, int rv)
{
	if (rv == -EINVAL) {
		/* Our own bad source: a local error, report and stop. */
		kiwi_qp_dbg(qp, "local protection error in a WR: the QP fails\n");
		kiwi_qp_error(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			      KIWI_RC_CATASTROPHIC_STREAM);
	} else if (rv) {
		kiwi_qp_dbg(qp, "TCP send failed (%d): the stream is lost\n",
			    rv);
		kiwi_qp_error(qp, KIWI_TL_LLP, 0, KIWI_LC_TCP_ERR);
	}
}

/*
 * What a WQE costs a doorbell's budget: the bytes it puts on the wire,
 * but never less than KIWI_TX_WQE_COST -- a READ request is small
 * whatever it asks, and a window bind sends nothing at all, yet each
 * takes work: a ring of them must not run on unbounded.
 */
#define KIWI_TX_WQE_COST	64

static u32 kiwi_sqe_cost(const struct kiwi_sqe *sqe)
{
	u32 wire = kiwi_wr_takes_ord(sqe->opcode) ? 0 : sqe->bytes;

	return max_t(u32, wire, KIWI_TX_WQE_COST);
}

/*
 * Work items one run handles at most before it lets the CPU go: the
 * worker queues itself again (kiwi_tx_work()), so a send queue kept full
 * of work that never sleeps (binds) cannot hold a CPU, and the work
 * item's other users get their turn.
 */
#define KIWI_TX_RUN_ITEMS	256

/*
 * Send what is due: a TERMINATE, the RTR message, READ responses, then
 * send queue work.  With a @budget (bytes, from the doorbell) stop before
 * READ responses or a WQE that would exceed it.  Returns true if work is
 * left for the worker.  Under tx.mutex and tx.owned: one sender per QP.
 */
static bool __kiwi_tx_run(struct kiwi_qp *qp, struct socket *sock,
			  u32 budget)
{
	bool inline_tx = budget, left = false;
	u32 items = KIWI_TX_RUN_ITEMS;
	struct kiwi_irqe e;
	struct kiwi_sqe *sqe;
	int rv = 0;

	/* Acquire: pairs with kiwi_tx_terminate()'s release (term_ctrl). */
	if (smp_load_acquire(&qp->tx.term_pending)) {
		WRITE_ONCE(qp->tx.term_pending, false);
		kiwi_tx_send_term(qp, sock, qp->tx.term_ctrl);
		return false;
	}
	if (qp->tx.rtr_pending) {
		rv = kiwi_tx_send_rtr(qp, sock, qp->tx.rtr_pending);
		qp->tx.rtr_pending = 0;
	}
	/*
	 * A responder sends nothing until the initiator's first FPDU has
	 * arrived whole and passed its checks (RFC 5044 7.1.2, rule 4):
	 * the initiator may still be reading our MPA reply, and one that
	 * reads it with an FPDU behind it may fail the connection (siw
	 * does).  With RFC 6581 that FPDU is the RTR; without, whatever the
	 * initiator's consumer sends first, or first_fpdu_ms passes (cm.c).
	 * kiwi_tx_peer_spoke() lifts it.
	 */
	if (READ_ONCE(qp->tx.await_peer))
		return false;
	while (!rv && kiwi_qp_state(qp) == KIWI_QP_RTS &&
	       !READ_ONCE(qp->tx.term_pending)) {
		/* The consumer's peek: a READ queued now waits its turn. */
		if (!items-- || (inline_tx && kiwi_q_peek(&qp->tx.irq_q))) {
			left = true;
			break;
		}
		if (kiwi_irq_take(qp, &e)) {
			rv = kiwi_tx_respond_one(qp, sock, &e);
			continue;
		}
		sqe = kiwi_sq_next(qp);
		if (!sqe)
			break;
		if (inline_tx) {
			if (kiwi_sqe_cost(sqe) > budget) {
				left = true;
				break;
			}
			budget -= kiwi_sqe_cost(sqe);
		}
		kiwi_tx_answered(qp);
		rv = kiwi_tx_sqe(qp, sock, sqe);
	}
	kiwi_tx_failed(qp, rv);
	return left || READ_ONCE(qp->tx.term_pending);
}

static bool kiwi_tx_run(struct kiwi_qp *qp, struct socket *sock, u32 budget)
{
	bool left;

	kiwi_tx_own(qp);
	left = __kiwi_tx_run(qp, sock, budget);
	kiwi_tx_disown(qp);
	return left;
}

/*
 * The socket is read under tx.mutex, which kiwi_tx_disconnect() also
 * holds to clear qp->sock: a run that saw the socket ends before it is
 * released.
 */
void kiwi_tx_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, tx.work);
	struct socket *sock;
	bool left = false;

	mutex_lock(&qp->tx.mutex);
	sock = kiwi_tx_sock(qp);
	if (sock)
		left = kiwi_tx_run(qp, sock, 0);
	mutex_unlock(&qp->tx.mutex);
	if (left)
		kiwi_tx_kick(qp);
	else if (wq_has_sleeper(&qp->tx.idle))
		wake_up(&qp->tx.idle);	/* kiwi_tx_disconnect() waits */
}

/*
 * From a user's doorbell (process context): send small work right here
 * instead of waking the worker, which under load costs more than the
 * send itself.  Only when the socket has ample room, so sending does
 * not block the caller, and only up to KIWI_TX_INLINE_MAX bytes; the
 * worker does the rest.
 */
#define KIWI_TX_INLINE_MAX	4096
#define KIWI_TX_INLINE_ROOM	(64 * 1024)

void kiwi_tx_now(struct kiwi_qp *qp)
{
	struct socket *sock;
	bool left = true;

	if (!mutex_trylock(&qp->tx.mutex)) {
		kiwi_tx_kick(qp);	/* the current sender may be done */
		return;
	}
	sock = kiwi_tx_sock(qp);
	if (sock && !work_pending(&qp->tx.work) &&
	    sk_stream_wspace(sock->sk) >= KIWI_TX_INLINE_ROOM)
		left = kiwi_tx_run(qp, sock, KIWI_TX_INLINE_MAX);
	mutex_unlock(&qp->tx.mutex);
	if (left)
		kiwi_tx_kick(qp);
}

#define KIWI_TX_CPU_PICK	(-2)	/* tx.cpu: picked at the first kick */

/*
 * Each connection sends from one CPU.  Over loopback and veth the
 * receiver's TCP runs on the sending CPU's backlog; a sender hopping
 * between CPUs reorders its own segments there, and the peer's
 * duplicate ACKs then cost fast retransmits and a halved congestion
 * window.  The CPU is chosen at the first kick: the least busy one
 * other than the kicking CPU, which runs the application posting the
 * work, or the softirq of the peer that asked for it (kiwi_cpu_get()
 * in main.c).
 */
void kiwi_tx_kick(struct kiwi_qp *qp)
{
	int cpu = READ_ONCE(qp->tx.cpu);

	if (cpu == KIWI_TX_CPU_PICK) {
		int pick = kiwi_cpu_get(raw_smp_processor_id());
		int old = cmpxchg(&qp->tx.cpu, KIWI_TX_CPU_PICK, pick);

		cpu = pick;
		if (old != KIWI_TX_CPU_PICK) {	/* first wins, or dropped */
			kiwi_cpu_put(pick);
			cpu = old;
		}
	}
	queue_work_on(cpu, kiwi_wq, &qp->tx.work);
}

/*
 * The connection is over: its sending CPU counts no more for the next
 * pick.  A late kick queues the worker on any CPU.
 */
void kiwi_tx_drop_cpu(struct kiwi_qp *qp)
{
	kiwi_cpu_put(xchg(&qp->tx.cpu, WORK_CPU_UNBOUND));
}

/*
 * The receive path has the initiator's first FPDU, checked (rx.c): a
 * responder may send from now on.  Any context.
 */
void kiwi_tx_peer_spoke(struct kiwi_qp *qp)
{
	WRITE_ONCE(qp->tx.await_peer, false);
	kiwi_tx_kick(qp);	/* orders the store before the worker's run */
}

/* At connection: send what was posted before, leaving the CPU unpicked. */
void kiwi_tx_start(struct kiwi_qp *qp)
{
	queue_work(kiwi_wq, &qp->tx.work);
}

/*
 * Answer a small READ from the receive path (socket callback, socket
 * held): no worker wake-up, and a local requester gets the response in
 * the same softirq.  Only when no other sender is active, no older READ
 * waits and TCP has room: the response then goes out whole or, if TCP
 * takes none of it, is left to the worker.  Returns true if it is done.
 */
static bool kiwi_tx_resp_atomic(struct kiwi_qp *qp, struct sock *sk)
{
	gfp_t gfp = sk->sk_allocation;
	struct kiwi_irqe e;
	unsigned long flags;
	bool ok;
	int rv;

	if (kiwi_qp_state(qp) != KIWI_QP_RTS ||
	    READ_ONCE(qp->tx.term_pending) || READ_ONCE(qp->tx.rtr_pending) ||
	    !kiwi_tx_batch_empty(qp->tx.batch) || !sk->sk_socket ||
	    sk_stream_wspace(sk) < KIWI_TX_INLINE_ROOM)
		return false;
	spin_lock_irqsave(&qp->tx.irq_lock, flags);
	e = qp->tx.irq[kiwi_q_head(&qp->tx.irq_q)];
	ok = kiwi_q_count(&qp->tx.irq_q) == 1 && e.len <= KIWI_TX_INLINE_MAX;
	spin_unlock_irqrestore(&qp->tx.irq_lock, flags);
	if (!ok)
		return false;

	/* No sleeping allocations, and not the interrupted task's frag. */
	sk->sk_allocation = GFP_ATOMIC;
	kiwi_tx_batch_atomic(qp->tx.batch, true);
	rv = kiwi_tx_respond_one(qp, sk->sk_socket, &e);
	kiwi_tx_batch_atomic(qp->tx.batch, false);
	sk->sk_allocation = gfp;
	/* Nothing sent: the worker sends it, or reports the bad source. */
	if (rv == -EAGAIN || rv == -EINVAL)
		return false;

	spin_lock_irqsave(&qp->tx.irq_lock, flags);
	kiwi_irq_pop(qp);
	spin_unlock_irqrestore(&qp->tx.irq_lock, flags);
	kiwi_tx_failed(qp, rv);	/* after a partial send the stream is lost */
	return true;
}

/*
 * Whether an inbound READ or Atomic Request has no queue entry: beyond
 * the IRD we advertised (RFC 5040 5.3: untagged queue 1 has IRD
 * buffers; RFC 7306 atomics share them), at least one.  The receive
 * path asks, under the socket, before it accepts a request.
 */
bool kiwi_tx_irq_full(struct kiwi_qp *qp)
{
	u32 ird = min_t(u32, READ_ONCE(qp->ird), qp->tx.irq_ird);

	/* The producer's peek: never below the entries queued. */
	return kiwi_q_peek(&qp->tx.irq_q) >= max(ird, 1U);
}

/*
 * Queue the response to an inbound READ or Atomic Request the receive
 * path accepted (kiwi_tx_irq_full() said there was room), behind those
 * already due; kiwi_tx_respond() then has it sent.  The queue's only
 * producer (kiwi_tx_irq_alloc() empties it at each connection, before RTS).
 */
void kiwi_tx_queue_resp(struct kiwi_qp *qp, const struct kiwi_irqe *e)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->tx.irq_lock, flags);
	qp->tx.irq[kiwi_q_tail(&qp->tx.irq_q)] = *e;
	kiwi_q_push(&qp->tx.irq_q);
	spin_unlock_irqrestore(&qp->tx.irq_lock, flags);
}

void kiwi_tx_respond(struct kiwi_qp *qp, struct sock *sk)
{
	bool done = false;

	local_bh_disable();
	if (kiwi_tx_try_own(qp)) {
		done = kiwi_tx_resp_atomic(qp, sk);
		kiwi_tx_disown(qp);
	}
	local_bh_enable();
	if (!done)
		kiwi_tx_kick(qp);
}

int kiwi_tx_init(struct kiwi_qp *qp)
{
	INIT_WORK(&qp->tx.work, kiwi_tx_work);
	init_waitqueue_head(&qp->tx.idle);
	qp->tx.cpu = WORK_CPU_UNBOUND;	/* until connected */
	mutex_init(&qp->tx.mutex);
	spin_lock_init(&qp->tx.irq_lock);
	qp->tx.batch = kiwi_tx_batch_alloc();
	if (!qp->tx.batch)
		return -ENOMEM;
	return 0;
}

/*
 * The inbound READ queue, empty, sized to the IRD the connection agreed
 * (rounded up to a power of two; not kiwi's maximum: most consumers ask
 * for a few).  Before RTS, when nothing can queue a READ: at each
 * connection, since a QP reset after one may connect again (the old
 * queue, of another size, goes).
 */
int kiwi_tx_irq_alloc(struct kiwi_qp *qp, u32 ird)
{
	struct kiwi_irqe *irq;
	u32 size;

	lockdep_assert_held(&qp->state_lock);
	if (!ird || ird > KIWI_MAX_IRD)	/* the CM bounds it: never */
		return -EINVAL;
	size = roundup_pow_of_two(ird);
	if (qp->tx.irq_ird != ird) {
		irq = kcalloc(size, sizeof(*irq), GFP_KERNEL);
		if (!irq)
			return -ENOMEM;
		kfree(qp->tx.irq);
		qp->tx.irq = irq;
		qp->tx.irq_ird = ird;
	}
	kiwi_q_init(&qp->tx.irq_q, size);
	return 0;
}

void kiwi_tx_free(struct kiwi_qp *qp)
{
	kiwi_tx_batch_free(qp->tx.batch);
	kfree(qp->tx.irq);
	qp->tx.batch = NULL;
	qp->tx.irq = NULL;
	qp->tx.irq_ird = 0;
}

/* ---- for the QP layer and the CM, which write no field of qp->tx ---- */

/*
 * MSNs start at one (RFC 5041 5.1): for a new QP, which no one sees yet,
 * and under state_lock at its reset and at each connection (qp.c).
 */
void kiwi_tx_reset(struct kiwi_qp *qp)
{
	int i;

	for (i = 0; i < KIWI_QN_COUNT; i++)
		qp->tx.msn[i] = 1;
}

/*
 * A connection starts (qp.c, before RTS and qp->sock: no sender runs):
 * the RTR message @rtr first, a @responder silent until the peer's first
 * FPDU (__kiwi_tx_run()), nothing left of the last connection's
 * TERMINATE or doorbell, the CPU picked at the first kick.
 */
void kiwi_tx_connect(struct kiwi_qp *qp, u8 rtr, bool responder)
{
	lockdep_assert_held(&qp->state_lock);
	kiwi_tx_markers_init(qp);
	qp->tx.rtr_pending = rtr;
	qp->tx.await_peer = responder;
	qp->tx.term_pending = false;
	qp->tx.t_bell = 0;
	qp->tx.cpu = KIWI_TX_CPU_PICK;
}

/*
 * Our RTR WRITE again, as the peer has not answered it (cm.c, under
 * state_lock, in RTS); not once a TERMINATE is due, which goes first.
 */
void kiwi_tx_rtr_repeat(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	if (READ_ONCE(qp->tx.term_pending))
		return;
	WRITE_ONCE(qp->tx.rtr_pending, KIWI_MPA_RTR_WRITE);
	kiwi_tx_kick(qp);
}

/*
 * The QP is destroyed (qpverbs.c) and nothing queues the worker again:
 * wait for a run still going, and give its CPU back.
 */
void kiwi_tx_stop(struct kiwi_qp *qp)
{
	cancel_work_sync(&qp->tx.work);
	kiwi_tx_drop_cpu(qp);
}
