// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: completion queues.
 *
 * A CQ is a ring of compact kiwi_cqe entries under one spinlock.  It is
 * filled from the transmit and receive paths (softirq or process context)
 * and drained by poll_cq; an overflow is reported as IB_EVENT_CQ_ERR
 * rather than silently overwriting completions.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "kiwi.h"

static struct kiwi_cqe *kiwi_cqes_alloc(u32 size)
{
	return kvmalloc_array(size, sizeof(struct kiwi_cqe), GFP_KERNEL);
}

static u32 kiwi_cq_slots(int cqe)
{
	return roundup_pow_of_two(max(cqe, 1));
}

static int kiwi_cq_resp(struct kiwi_cq *cq, struct ib_udata *udata)
{
	struct kiwi_uresp_create_cq resp = {
		.cq_id = cq->ibcq.res.id,
		.num_cqe = cq->ibcq.cqe,
	};

	if (!udata || !udata->outlen)
		return 0;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	int rv;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe <= 0 || attr->cqe > kdev->lim.max_cqe)
		return -EINVAL;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (!kiwi_res_get(&kdev->num_cq, kdev->lim.max_cq))
		return -ENOMEM;

	spin_lock_init(&cq->lock);
	cq->size = kiwi_cq_slots(attr->cqe);
	cq->cqes = kiwi_cqes_alloc(cq->size);
	if (!cq->cqes) {
		rv = -ENOMEM;
		goto err;
	}
	/* Report the capacity we really have, as the verbs allow. */
	ibcq->cqe = cq->size;

	rv = kiwi_cq_resp(cq, udata);
	if (rv)
		goto err;
	return 0;

err:
	kvfree(cq->cqes);
	atomic_dec(&kdev->num_cq);
	return rv;
}

int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct kiwi_cq *cq = to_kcq(ibcq);

	kvfree(cq->cqes);
	atomic_dec(&to_kdev(ibcq->device)->num_cq);
	return 0;
}

int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_cqe *cqes, *old;
	unsigned long flags;
	u32 size, i;

	if (cqe <= 0 || cqe > kdev->lim.max_cqe)
		return -EINVAL;
	size = kiwi_cq_slots(cqe);
	cqes = kiwi_cqes_alloc(size);
	if (!cqes)
		return -ENOMEM;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count > size) {
		/* Shrinking below the completions still queued loses data. */
		spin_unlock_irqrestore(&cq->lock, flags);
		kvfree(cqes);
		return -EBUSY;
	}
	for (i = 0; i < cq->count; i++)
		cqes[i] = cq->cqes[(cq->head + i) & (cq->size - 1)];
	old = cq->cqes;
	cq->cqes = cqes;
	cq->size = size;
	cq->head = 0;
	ibcq->cqe = size;
	spin_unlock_irqrestore(&cq->lock, flags);

	kvfree(old);
	return kiwi_cq_resp(cq, udata);
}

static void kiwi_cqe_to_wc(const struct kiwi_cqe *cqe, struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->byte_len = cqe->byte_len;
	wc->qp = cqe->qp;
	wc->wc_flags = cqe->flags;
	if (cqe->flags & IB_WC_WITH_INVALIDATE)
		wc->ex.invalidate_rkey = cqe->ex;
	else if (cqe->flags & IB_WC_WITH_IMM)
		wc->ex.imm_data = cpu_to_be32(cqe->ex);
}

int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num && cq->count; n++) {
		kiwi_cqe_to_wc(&cq->cqes[cq->head], &wc[n]);
		cq->head = (cq->head + 1) & (cq->size - 1);
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	unsigned long irqflags;
	int rv = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* A pending NEXT_COMP arm is not narrowed to SOLICITED. */
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_NEXT_COMP)
		cq->armed = IB_CQ_NEXT_COMP;
	else if (!cq->armed)
		cq->armed = IB_CQ_SOLICITED;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		rv = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return rv;
}

/*
 * Queue a completion and fire the completion handler if the CQ is armed
 * for it.  Returns -ENOSPC on overflow; the caller treats the QP as
 * broken, and the consumer gets IB_EVENT_CQ_ERR.
 */
int kiwi_cq_add(struct kiwi_cq *cq, const struct kiwi_cqe *cqe,
		bool solicited)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		bool first = !cq->overflow;

		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (first && cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.event = IB_EVENT_CQ_ERR,
				.element.cq = &cq->ibcq,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return -ENOSPC;
	}
	cq->cqes[(cq->head + cq->count) & (cq->size - 1)] = *cqe;
	cq->count++;
	if (cq->armed == IB_CQ_NEXT_COMP ||
	    (cq->armed == IB_CQ_SOLICITED &&
	     (solicited || cqe->status != IB_WC_SUCCESS))) {
		cq->armed = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}
