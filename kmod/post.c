// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: post_send and post_recv.  A user QP's work requests are in its
 * mapped rings already and post_send is only its doorbell; a kernel
 * consumer's are encoded here into the same ring format, so the send
 * and receive engines (sq.c, rq.c) see one kind of WQE.
 */
#include "qp.h"
#include "verbs.h"

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
		kiwi_tx_bell(qp);
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

	if (kiwi_wr_is_read(wr->opcode)) {
		kiwi_qp_dbg(qp, "WR %#llx: an RDMA READ cannot be inline\n",
			    wr->wr_id);
		return -EINVAL;
	}
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > qp->cap.max_inline_data - len) {
			kiwi_qp_dbg(qp, "WR %#llx: inline data beyond max_inline_data %u\n",
				    wr->wr_id, qp->cap.max_inline_data);
			return -EINVAL;
		}
		memcpy(data + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	h->length = len;
	return 0;
}

/*
 * A WR with immediate data: only where the peer is known to take it
 * (kiwi_qp.imm_tx), and a SEND carries none of its own (RFC 7306 has
 * no SEND with immediate data: it is the Immediate Data message alone).
 */
static int kiwi_usqe_imm(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			 struct kiwi_usqe *h)
{
	u32 i, len = 0;

	if (!qp->imm_tx) {
		kiwi_qp_dbg(qp, "WR %#llx: immediate data, but rfc7306_imm was off when the QP was created\n",
			    wr->wr_id);
		return -EOPNOTSUPP;
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge) {
		kiwi_qp_dbg(qp, "WR %#llx: %d SGEs, at most %u\n", wr->wr_id,
			    wr->num_sge, qp->cap.max_send_sge);
		return -EINVAL;
	}
	h->imm_data = be32_to_cpu(wr->ex.imm_data);
	if (wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
		h->opcode = KIWI_UWR_RDMA_WRITE_IMM;
		h->rkey = rdma_wr(wr)->rkey;
		h->raddr = rdma_wr(wr)->remote_addr;
		return 0;
	}
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len) {
		kiwi_qp_dbg(qp, "WR %#llx: SEND with immediate data carries no payload (RFC 7306), %u bytes given\n",
			    wr->wr_id, len);
		return -EINVAL;
	}
	h->opcode = KIWI_UWR_SEND_IMM;
	return 0;
}

/*
 * An atomic WR: only on a QP with atomics (kiwi_qp.atomic), one 8-byte
 * sink SGE, then the operands where kiwi_sqe_atomic() reads them.
 */
static int kiwi_usqe_atomic(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    struct kiwi_usqe *h, u8 *w)
{
	const struct ib_atomic_wr *a = atomic_wr(wr);
	struct kiwi_usge *sge = (void *)(w + sizeof(*h));
	struct kiwi_uatomic op = {
		.compare_add = a->compare_add, .swap = a->swap,
	};

	if (!qp->atomic) {
		kiwi_qp_dbg(qp, "WR %#llx: atomic, but rfc7306_atomics was off when the QP was created\n",
			    wr->wr_id);
		return -EOPNOTSUPP;
	}
	if (wr->num_sge != 1 || wr->sg_list[0].length != KIWI_ATOMIC_LEN ||
	    (wr->send_flags & IB_SEND_INLINE)) {
		kiwi_qp_dbg(qp, "WR %#llx: an atomic takes one %u-byte SGE, not inline\n",
			    wr->wr_id, KIWI_ATOMIC_LEN);
		return -EINVAL;
	}
	h->opcode = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ?
		    KIWI_UWR_ATOMIC_CSWAP : KIWI_UWR_ATOMIC_FADD;
	h->rkey = a->rkey;
	h->raddr = a->remote_addr;
	h->num_sge = 1;
	sge->addr = wr->sg_list[0].addr;
	sge->length = KIWI_ATOMIC_LEN;
	sge->lkey = wr->sg_list[0].lkey;
	memcpy(w + sizeof(*h) + KIWI_USGE_SIZE, &op, sizeof(op));
	memcpy(w, h, sizeof(*h));
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
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_SEND_WITH_IMM:
		rv = kiwi_usqe_imm(qp, wr, &h);
		if (rv)
			return rv;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return kiwi_usqe_atomic(qp, wr, &h, w);
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
		kiwi_qp_dbg(qp, "WR %#llx: opcode %u not supported\n",
			    wr->wr_id, wr->opcode);
		return -EOPNOTSUPP;
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge ||
	    (kiwi_wr_is_read(wr->opcode) && wr->num_sge > KIWI_MAX_SGE_RD)) {
		kiwi_qp_dbg(qp, "WR %#llx: %d SGEs, at most %u (an RDMA READ: %u)\n",
			    wr->wr_id, wr->num_sge, qp->cap.max_send_sge,
			    KIWI_MAX_SGE_RD);
		return -EINVAL;
	}
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
		kiwi_qp_dbg(qp, "WR %#llx: the QP is %s, not connected\n",
			    wr->wr_id, kiwi_qp_state_name(state));
		*bad_wr = wr;
		return -ENOTCONN;
	}
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		if (kiwi_ring_queued(r) == kiwi_ring_size(r)) {
			kiwi_qp_dbg(qp, "WR %#llx: send queue full (%u WRs)\n",
				    wr->wr_id, kiwi_ring_size(r));
			rv = -ENOMEM;
			break;
		}
		rv = kiwi_usqe_from_wr(qp, wr,
				       kiwi_ring_slot(r, kiwi_ring_prod(r)));
		if (rv)
			break;
		kiwi_ring_produce(r);
		kick = true;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (kick) {
		if (kiwi_qp_state(qp) == KIWI_QP_RTS) {
			kiwi_tx_bell(qp);
			kiwi_tx_kick(qp);
		} else if (!READ_ONCE(qp->sock)) {
			kiwi_qp_flush_sq(qp);	/* errored: flush in order */
		}
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}

/* User QPs and SRQs post receives through their rings only. */
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	unsigned long flags;
	int rv = 0;

	if (qp->srq || qp->user) {
		kiwi_qp_dbg(qp, "the QP %s\n", qp->srq ? "uses an SRQ" :
			    "is a process's: it posts through its ring");
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (kiwi_qp_state(qp) == KIWI_QP_ERROR)
			kiwi_rq_complete(qp, wr->wr_id, IB_WC_WR_FLUSH_ERR);
		else
			rv = kiwi_urqe_post(&qp->rq_ring,
					    kiwi_ring_size(&qp->rq_ring),
					    qp->cap.max_recv_sge, wr);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		if (rv) {
			kiwi_qp_dbg(qp, "receive WR %#llx: %s (%d SGEs, at most %u)\n",
				    wr->wr_id, rv == -ENOMEM ?
				    "receive queue full" : "too many SGEs",
				    wr->num_sge, qp->cap.max_recv_sge);
			break;
		}
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}
