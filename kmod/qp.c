// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: queue pairs, shared receive queues and work request posting.
 *
 * Send and receive queues are rings of validated work queue entries;
 * user QPs post through the uverbs write path, so every WR arrives here
 * as a kernel copy and is checked before it is queued.
 */
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "kiwi.h"

#define KIWI_QPN_MAX	((1U << 24) - 1)

static void *kiwi_ring_alloc(u32 slots, size_t elem)
{
	return kvcalloc(slots, elem, GFP_KERNEL);
}

static u32 kiwi_ring_slots(u32 wr)
{
	return roundup_pow_of_two(max(wr, 1U));
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

struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn)
{
	struct kiwi_qp *qp = xa_load(&to_kdev(ibdev)->qp_xa, qpn);

	return qp ? &qp->ibqp : NULL;
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

static void kiwi_sq_complete(struct kiwi_qp *qp, const struct kiwi_sqe *sqe,
			     enum ib_wc_status status)
{
	struct kiwi_cqe cqe = {
		.wr_id = sqe->wr_id,
		.qp = &qp->ibqp,
		.opcode = kiwi_wc_opcode(sqe->opcode),
		.status = status,
	};

	kiwi_cq_add(qp->scq, &cqe, false);
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

	kiwi_cq_add(qp->rcq, &cqe, false);
}

/*
 * Complete every outstanding send WR: those already finished with their
 * own status, the rest with IB_WC_WR_FLUSH_ERR.  Only called when the
 * transmit path is stopped (or was never started).
 */
static void kiwi_qp_flush_sq(struct kiwi_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	while (qp->sq_count) {
		struct kiwi_sqe *sqe = &qp->sq[qp->sq_head];

		kiwi_sq_complete(qp, sqe, sqe->state == KIWI_SQE_DONE ?
				 sqe->status : IB_WC_WR_FLUSH_ERR);
		qp->sq_head = (qp->sq_head + 1) & (qp->sq_size - 1);
		qp->sq_count--;
	}
	qp->sq_tx = 0;
	qp->orq_count = 0;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

static void kiwi_qp_flush_rq(struct kiwi_qp *qp)
{
	unsigned long flags;

	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	while (qp->rq_count) {
		kiwi_rq_complete(qp, qp->rq[qp->rq_head].wr_id,
				 IB_WC_WR_FLUSH_ERR);
		qp->rq_head = (qp->rq_head + 1) & (qp->rq_size - 1);
		qp->rq_count--;
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
	while (qp->sq_count && qp->sq_tx) {
		struct kiwi_sqe *sqe = &qp->sq[qp->sq_head];

		if (sqe->state != KIWI_SQE_DONE)
			break;
		if ((sqe->flags & IB_SEND_SIGNALED) ||
		    sqe->status != IB_WC_SUCCESS)
			kiwi_sq_complete(qp, sqe, sqe->status);
		qp->sq_head = (qp->sq_head + 1) & (qp->sq_size - 1);
		qp->sq_count--;
		qp->sq_tx--;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* The last response to our oldest outstanding READ has been placed. */
void kiwi_qp_read_done(struct kiwi_qp *qp)
{
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sqe *sqe =
			&qp->sq[(qp->sq_head + i) & (qp->sq_size - 1)];

		if (sqe->state == KIWI_SQE_WAIT_RESP) {
			sqe->state = KIWI_SQE_DONE;
			sqe->status = IB_WC_SUCCESS;
			/*
			 * READ with local invalidate invalidates its sink
			 * STag, before the consumer hears.  (rdma_rw fills
			 * ex.invalidate_rkey before it bumps the MR's key, so
			 * the sink SGE is the one reliable name for it.)
			 */
			if (sqe->opcode == IB_WR_RDMA_READ_WITH_INV &&
			    kiwi_mem_invalidate(qp, sqe->sge[0].lkey))
				sqe->status = IB_WC_LOC_PROT_ERR;
			qp->orq_count--;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	kiwi_qp_retire_sq(qp);
	kiwi_tx_kick(qp);	/* an ORD credit or a fence may be free now */
}

/*
 * The READ @sqe (the oldest outstanding) failed locally, e.g. its sink
 * is not writable: it completes with @status when the QP is flushed.
 */
void kiwi_qp_read_failed(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
			 enum ib_wc_status status)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (sqe->state == KIWI_SQE_WAIT_RESP) {
		sqe->state = KIWI_SQE_DONE;
		sqe->status = status;
		qp->orq_count--;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/* Take the next receive WQE (from the SRQ if the QP has one). */
bool kiwi_qp_take_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe)
{
	struct kiwi_srq *srq = qp->srq;
	unsigned long flags;
	bool limit = false, ok = false;

	if (!srq) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (qp->rq_count) {
			*rqe = qp->rq[qp->rq_head];
			qp->rq_head = (qp->rq_head + 1) & (qp->rq_size - 1);
			qp->rq_count--;
			ok = true;
		}
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		return ok;
	}
	spin_lock_irqsave(&srq->lock, flags);
	if (srq->count) {
		*rqe = srq->rqes[srq->head];
		srq->head = (srq->head + 1) & (srq->size - 1);
		srq->count--;
		ok = true;
		if (srq->limit && srq->count < srq->limit) {
			srq->limit = 0;	/* one event per arming */
			limit = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (limit && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
			.element.srq = &srq->ibsrq,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return ok;
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
	if (cmpxchg(&qp->state, KIWI_QP_RTS, KIWI_QP_TERMINATE) !=
	    KIWI_QP_RTS &&
	    cmpxchg(&qp->state, KIWI_QP_CLOSING, KIWI_QP_TERMINATE) !=
	    KIWI_QP_CLOSING)
		return false;
	WRITE_ONCE(qp->ib_state, IB_QPS_ERR);
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
void kiwi_qp_peer_terminated(struct kiwi_qp *qp)
{
	struct kiwi_term *t = (void *)(qp->rx.hdr.raw +
				       sizeof(struct kiwi_hdr_untagged));
	enum ib_wc_status status = kiwi_term_status(be32_to_cpu(t->ctrl));
	unsigned long flags;
	u32 i;

	if (!kiwi_qp_kill(qp))
		return;
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (i = 0; i < qp->sq_tx; i++) {
		struct kiwi_sqe *sqe =
			&qp->sq[(qp->sq_head + i) & (qp->sq_size - 1)];

		if (sqe->state != KIWI_SQE_DONE) {
			sqe->state = KIWI_SQE_DONE;
			sqe->status = status;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	kiwi_qp_fatal_event(qp);
	kiwi_cm_qp_closing(qp, true);
}

/* The CM has an established MPA connection for this QP. */
int kiwi_qp_connected(struct kiwi_qp *qp, struct kiwi_ep *ep,
		      struct socket *sock, bool crc, u8 rtr)
{
	int rv = 0;

	mutex_lock(&qp->state_lock);
	if (qp->state != KIWI_QP_IDLE || qp->ep) {
		rv = -EINVAL;
		goto out;
	}
	kiwi_rx_reset(qp);
	kiwi_qp_reset_msn(qp);
	qp->crc = crc;
	qp->rtr_pending = rtr;
	qp->term_pending = false;
	qp->irq_head = 0;
	qp->irq_count = 0;
	WRITE_ONCE(qp->sock, sock);
	WRITE_ONCE(qp->ep, ep);
	qp->ib_state = IB_QPS_RTS;
	WRITE_ONCE(qp->state, KIWI_QP_RTS);
	if (rtr || qp->sq_count)
		kiwi_tx_kick(qp);
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

/*
 * The connection is going away (CM context, socket still attached):
 * stop transmit, flush everything, unbind.  A pending TERMINATE gets a
 * short chance to leave first.
 */
void kiwi_qp_disconnected(struct kiwi_qp *qp)
{
	struct socket *sock;
	int i;

	mutex_lock(&qp->state_lock);
	sock = qp->sock;
	WRITE_ONCE(qp->ep, NULL);
	if (qp->state != KIWI_QP_ERROR) {
		qp->state = KIWI_QP_ERROR;
		qp->ib_state = IB_QPS_ERR;
	}
	mutex_unlock(&qp->state_lock);
	if (!sock)
		return;

	for (i = 0; i < 100 && (READ_ONCE(qp->term_pending) ||
				work_busy(&qp->tx_work)); i++)
		msleep(10);
	kernel_sock_shutdown(sock, SHUT_RDWR);	/* unblocks a stuck send */
	flush_work(&qp->tx_work);

	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->sock, NULL);
	mutex_unlock(&qp->state_lock);
	kiwi_qp_flush_rq(qp);
	kiwi_qp_flush_sq(qp);
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
		.num_rqe = qp->srq ? 0 : qp->rq_size,
	};

	if (!udata->outlen)
		return 0;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static int kiwi_qp_alloc_queues(struct kiwi_qp *qp,
				struct ib_qp_init_attr *attr)
{
	qp->sq_size = kiwi_ring_slots(attr->cap.max_send_wr);
	qp->sq = kiwi_ring_alloc(qp->sq_size, sizeof(*qp->sq));
	if (!qp->sq)
		return -ENOMEM;
	if (qp->srq)
		return 0;
	qp->rq_size = kiwi_ring_slots(attr->cap.max_recv_wr);
	qp->rq = kiwi_ring_alloc(qp->rq_size, sizeof(*qp->rq));
	return qp->rq ? 0 : -ENOMEM;
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
	qp->state = KIWI_QP_IDLE;
	qp->ib_state = IB_QPS_RESET;
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	qp->sq_sig_type = attr->sq_sig_type;
	qp->user = !!udata;
	qp->ird = KIWI_MAX_IRD;
	qp->ord = KIWI_MAX_ORD;

	rv = kiwi_qp_alloc_queues(qp, attr);
	if (rv)
		goto err;
	rv = kiwi_tx_init(qp);
	if (rv)
		goto err;
	kiwi_rx_reset(qp);
	kiwi_qp_reset_msn(qp);
	if (attr->cap.max_inline_data) {
		qp->inline_buf = kvcalloc(qp->sq_size, KIWI_MAX_INLINE,
					  GFP_KERNEL);
		if (!qp->inline_buf) {
			rv = -ENOMEM;
			goto err;
		}
	}

	/* Grant what we really have; the caller sees it in attr->cap. */
	attr->cap.max_send_wr = qp->sq_size;
	attr->cap.max_send_sge = KIWI_MAX_SGE;
	attr->cap.max_inline_data = KIWI_MAX_INLINE;
	if (!qp->srq) {
		attr->cap.max_recv_wr = qp->rq_size;
		attr->cap.max_recv_sge = KIWI_MAX_SGE;
	}
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
	kvfree(qp->inline_buf);
	kvfree(qp->sq);
	kvfree(qp->rq);
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
	kiwi_tx_free(qp);
	kvfree(qp->inline_buf);
	kvfree(qp->sq);
	kvfree(qp->rq);
	atomic_dec(&kdev->num_qp);
	return 0;
}

/* ---- state machine ---- */

/* Under qp->state_lock. */
static int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to)
{
	enum ib_qp_state from = qp->ib_state;

	switch (to) {
	case IB_QPS_RESET:
		if (qp->state == KIWI_QP_RTS || qp->sock)
			return -EINVAL;
		qp->state = KIWI_QP_IDLE;
		kiwi_rx_reset(qp);
		kiwi_qp_reset_msn(qp);
		break;
	case IB_QPS_INIT:
	case IB_QPS_RTR:
		if (from != IB_QPS_RESET && from != IB_QPS_INIT &&
		    from != IB_QPS_RTR)
			return -EINVAL;
		qp->state = KIWI_QP_IDLE;
		break;
	case IB_QPS_RTS:
		/* Only a connection (the CM) makes an iWARP QP RTS. */
		if (qp->state != KIWI_QP_RTS)
			return -EINVAL;
		break;
	case IB_QPS_SQD:
		/*
		 * librdmacm's rdma_disconnect() asks for SQD even when the
		 * peer has already closed or the QP has failed: the
		 * connection is going down as asked, so that is no error.
		 */
		if (qp->state == KIWI_QP_CLOSING || qp->state == KIWI_QP_ERROR ||
		    qp->state == KIWI_QP_TERMINATE)
			return 0;
		if (qp->state != KIWI_QP_RTS)
			return -EINVAL;
		qp->state = KIWI_QP_CLOSING;
		kiwi_cm_qp_closing(qp, false);
		break;
	case IB_QPS_ERR:
		qp->state = KIWI_QP_ERROR;
		qp->ib_state = to;
		kiwi_qp_flush_rq(qp);
		if (qp->sock)
			kiwi_cm_qp_closing(qp, true);	/* SQ flushed then */
		else
			kiwi_qp_flush_sq(qp);
		return 0;
	default:
		return -EINVAL;
	}
	qp->ib_state = to;
	return 0;
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
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != qp->ib_state) {
		rv = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_STATE) {
		rv = kiwi_qp_set_state(qp, attr->qp_state);
		if (rv)
			goto out;
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

	attr->qp_state = qp->ib_state;
	attr->cur_qp_state = qp->ib_state;
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

/* ---- posting ---- */

static int kiwi_copy_sges(struct kiwi_sge *dst, const struct ib_sge *src,
			  int num, u32 max)
{
	int i;

	if (num < 0 || num > max)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		dst[i].addr = src[i].addr;
		dst[i].len = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return 0;
}

static int kiwi_sqe_from_wr(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    struct kiwi_sqe *sqe)
{
	int rv;
	u32 i;

	sqe->wr_id = wr->wr_id;
	sqe->opcode = wr->opcode;
	sqe->flags = wr->send_flags;
	sqe->num_sge = wr->num_sge;
	if (qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		sqe->flags |= IB_SEND_SIGNALED;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_INV:
		sqe->ex = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ_WITH_INV:
	case IB_WR_RDMA_READ:
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		break;
	case IB_WR_REG_MR:
	case IB_WR_LOCAL_INV:
		/* Local operations; fast registration is for kernel QPs. */
		if (qp->user)
			return -EOPNOTSUPP;
		sqe->num_sge = 0;
		if (wr->opcode == IB_WR_LOCAL_INV) {
			sqe->ex = wr->ex.invalidate_rkey;
		} else {
			sqe->reg_mr = reg_wr(wr)->mr;
			sqe->rkey = reg_wr(wr)->key;
			sqe->ex = reg_wr(wr)->access;
		}
		return 0;
	default:
		return -EOPNOTSUPP;
	}
	if (kiwi_wr_is_read(wr->opcode) && wr->num_sge > KIWI_MAX_SGE_RD)
		return -EINVAL;
	rv = kiwi_copy_sges(sqe->sge, wr->sg_list, wr->num_sge,
			    qp->cap.max_send_sge);
	if (rv)
		return rv;
	for (i = 0; i < sqe->num_sge; i++) {
		if (sqe->bytes + sqe->sge[i].len < sqe->bytes)
			return -EINVAL;
		sqe->bytes += sqe->sge[i].len;
	}
	return 0;
}

/*
 * Inline data is copied now, from user memory for user QPs (the uverbs
 * write path hands us user pointers) or kernel memory otherwise.
 */
static int kiwi_sqe_inline(struct kiwi_qp *qp, struct kiwi_sqe *sqe, u8 *buf)
{
	u32 i, off = 0;

	if (!qp->inline_buf || sqe->bytes > qp->cap.max_inline_data ||
	    kiwi_wr_is_read(sqe->opcode))
		return -EINVAL;
	for (i = 0; i < sqe->num_sge; i++) {
		u64 a = sqe->sge[i].addr;
		u32 n = sqe->sge[i].len;

		if (qp->user) {
			if (copy_from_user(buf + off, u64_to_user_ptr(a), n))
				return -EFAULT;
		} else {
			memcpy(buf + off, (void *)(uintptr_t)a, n);
		}
		off += n;
	}
	sqe->num_sge = 0;
	return 0;
}

int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_sqe sqe;
	unsigned long flags;
	int rv = 0;

	enum kiwi_qp_state state = READ_ONCE(qp->state);
	u8 ibuf[KIWI_MAX_INLINE];
	bool kick = false;
	u32 slot;

	if (state != KIWI_QP_RTS && state != KIWI_QP_ERROR &&
	    state != KIWI_QP_TERMINATE) {
		*bad_wr = wr;
		return -ENOTCONN;
	}
	for (; wr; wr = wr->next) {
		memset(&sqe, 0, sizeof(sqe));
		rv = kiwi_sqe_from_wr(qp, wr, &sqe);
		if (!rv && (wr->send_flags & IB_SEND_INLINE))
			rv = kiwi_sqe_inline(qp, &sqe, ibuf);
		if (rv)
			break;
		spin_lock_irqsave(&qp->sq_lock, flags);
		if (qp->sq_count == qp->sq_size) {
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			rv = -ENOMEM;
			break;
		}
		slot = (qp->sq_head + qp->sq_count) & (qp->sq_size - 1);
		if (wr->send_flags & IB_SEND_INLINE) {
			sqe.inline_data = qp->inline_buf + slot * KIWI_MAX_INLINE;
			memcpy(sqe.inline_data, ibuf, sqe.bytes);
		}
		qp->sq[slot] = sqe;
		qp->sq_count++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		kick = true;
	}
	if (kick) {
		if (READ_ONCE(qp->state) == KIWI_QP_RTS)
			kiwi_tx_kick(qp);
		else if (!READ_ONCE(qp->sock))
			kiwi_qp_flush_sq(qp);	/* errored: flush in order */
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}

static int kiwi_rqe_from_wr(const struct ib_recv_wr *wr, struct kiwi_rqe *rqe,
			    u32 max_sge)
{
	rqe->wr_id = wr->wr_id;
	rqe->num_sge = wr->num_sge;
	return kiwi_copy_sges(rqe->sge, wr->sg_list, wr->num_sge, max_sge);
}

int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	unsigned long flags;
	int rv = 0;

	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (READ_ONCE(qp->state) == KIWI_QP_ERROR) {
			kiwi_rq_complete(qp, wr->wr_id, IB_WC_WR_FLUSH_ERR);
		} else if (qp->rq_count == qp->rq_size) {
			rv = -ENOMEM;
		} else {
			u32 slot = (qp->rq_head + qp->rq_count) &
				   (qp->rq_size - 1);

			rv = kiwi_rqe_from_wr(wr, &qp->rq[slot],
					      qp->cap.max_recv_sge);
			if (!rv)
				qp->rq_count++;
		}
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
		.num_rqe = srq->size,
	};

	if (!udata || !udata->outlen)
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
	srq->size = kiwi_ring_slots(attr->max_wr);
	srq->rqes = kiwi_ring_alloc(srq->size, sizeof(*srq->rqes));
	if (!srq->rqes) {
		rv = -ENOMEM;
		goto err;
	}
	srq->max_wr = attr->max_wr;
	srq->max_sge = attr->max_sge ? attr->max_sge : 1;
	srq->limit = attr->srq_limit;

	rv = kiwi_srq_resp(srq, udata);
	if (rv)
		goto err;
	return 0;
err:
	kvfree(srq->rqes);
	atomic_dec(&kdev->num_srq);
	return rv;
}

int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	kvfree(srq->rqes);
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

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		u32 slot;

		if (srq->count >= srq->max_wr) {
			rv = -ENOMEM;
			break;
		}
		slot = (srq->head + srq->count) & (srq->size - 1);
		rv = kiwi_rqe_from_wr(wr, &srq->rqes[slot], srq->max_sge);
		if (rv)
			break;
		srq->count++;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (rv)
		*bad_wr = wr;
	return rv;
}
