// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: receive queues and shared receive queues -- what rx.c takes a
 * receive WQE from for each inbound SEND (copied out of the ring once,
 * then validated: wqe.h), their flushing, and the SRQ verbs.
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>
#include <kiwi/wqe.h>

#include "cq.h"
#include "qp.h"
#include "verbs.h"

void kiwi_rq_complete(struct kiwi_qp *qp, u64 wr_id,
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

/* The wr_id of the receive WQE at @idx, from whatever the ring holds. */
static u64 kiwi_rq_wr_id(const struct kiwi_ring *r, u32 idx)
{
	u64 wr_id;

	memcpy(&wr_id, kiwi_ring_slot(r, idx), sizeof(wr_id));
	return wr_id;
}

void kiwi_qp_flush_rq(struct kiwi_qp *qp)
{
	struct kiwi_ring *r = &qp->rq_ring;
	unsigned long flags;
	u32 n;

	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	if (!kiwi_ring_avail(r, &n))
		n = kiwi_ring_size(r);
	while (n--) {
		u64 wr_id = kiwi_rq_wr_id(r, kiwi_ring_cons(r));

		kiwi_ring_consume(r);
		kiwi_rq_complete(qp, wr_id, IB_WC_WR_FLUSH_ERR);
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

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
	if (kiwi_ring_avail(r, &n) && n) {
		int rv = kiwi_rqe_load(r, kiwi_ring_cons(r),
				       qp->cap.max_recv_sge, rqe);

		kiwi_ring_consume(r);
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
	if (kiwi_ring_avail(r, &n) && n) {
		int rv = kiwi_rqe_load(r, kiwi_ring_cons(r), srq->max_sge, rqe);

		kiwi_ring_consume(r);
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

/* Append a kernel consumer's receive WR to @r (under its lock). */
int kiwi_urqe_post(struct kiwi_ring *r, u32 max_wr, u32 max_sge,
		   const struct ib_recv_wr *wr)
{
	u8 *w = kiwi_ring_slot(r, kiwi_ring_prod(r));
	struct kiwi_usge *sge = (void *)(w + sizeof(struct kiwi_urqe));
	struct kiwi_urqe h = {
		.wr_id = wr->wr_id,
		.num_sge = wr->num_sge,
	};
	int i;

	if (kiwi_ring_queued(r) >= max_wr)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	memcpy(w, &h, sizeof(h));
	kiwi_ring_produce(r);
	return 0;
}

static int kiwi_srq_resp(struct kiwi_srq *srq, struct ib_udata *udata)
{
	struct kiwi_uresp_create_srq resp = {
		.srq_id = srq->ibsrq.res.id,
		.num_rqe = kiwi_ring_size(&srq->ring),
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

	if (init->srq_type != IB_SRQT_BASIC) {
		kiwi_dev_dbg(kdev, "SRQ type %d: basic only\n",
			     init->srq_type);
		return -EOPNOTSUPP;
	}
	if (!attr->max_wr || attr->max_wr > kdev->lim.max_srq_wr ||
	    attr->max_sge > KIWI_MAX_SGE || attr->srq_limit > attr->max_wr) {
		kiwi_dev_dbg(kdev, "SRQ of %u WRs, %u SGEs, limit %u: 1 to %u WRs, at most %u SGEs, limit at most the WRs\n",
			     attr->max_wr, attr->max_sge, attr->srq_limit,
			     kdev->lim.max_srq_wr, KIWI_MAX_SGE);
		return -EINVAL;
	}
	if (!kiwi_res_get(&kdev->num_srq, kdev->lim.max_srq)) {
		kiwi_dev_dbg(kdev, "max_srq (%u) SRQs exist already\n",
			     kdev->lim.max_srq);
		return -ENOMEM;
	}

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
		rv = kiwi_urqe_post(&srq->ring, srq->max_wr, srq->max_sge, wr);
		if (rv)
			break;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (rv)
		*bad_wr = wr;
	return rv;
}
