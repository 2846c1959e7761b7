// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: completion queues.
 *
 * A kernel consumer's CQ is a ring of compact kiwi_cqe entries under one
 * spinlock, drained by poll_cq.  A user CQ is a mapped ring of struct
 * kiwi_ucqe (kiwi-abi.h) that the provider polls without a system call;
 * the kernel is its producer and only reads the consumer index, to
 * learn which slots are free.  Both are filled from the transmit and
 * receive paths (softirq or process context); an overflow is reported
 * as IB_EVENT_CQ_ERR rather than overwriting unpolled completions.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "verbs.h"

static struct kiwi_cqe *kiwi_cqes_alloc(u32 size)
{
	return kvmalloc_array(size, sizeof(struct kiwi_cqe), GFP_KERNEL);
}

static u32 kiwi_cq_slots(int cqe)
{
	return roundup_pow_of_two(max(cqe, 1));
}

static void kiwi_cq_free(struct kiwi_cq *cq)
{
	if (cq->uring.buf)
		kiwi_ring_destroy(&cq->uring);
	kvfree(cq->cqes);
	cq->cqes = NULL;
}

static int kiwi_cq_resp(struct kiwi_cq *cq, struct ib_udata *udata)
{
	struct kiwi_uresp_create_cq resp = {
		.cq_id = cq->ibcq.res.id,
		.num_cqe = cq->ibcq.cqe,
		.mmap_offset = kiwi_ring_mmap_offset(&cq->uring),
		.mmap_len = kiwi_ring_mmap_len(&cq->uring),
		.cqe_size = sizeof(struct kiwi_ucqe),
	};

	if (!udata)
		return 0;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static int kiwi_create_cq_udata(struct ib_cq *ibcq,
				const struct ib_cq_init_attr *attr,
				struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	u32 size;
	int rv;

	if (attr->flags) {
		kiwi_dev_dbg(kdev, "CQ flags %#x not supported\n", attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe <= 0 || attr->cqe > kdev->lim.max_cqe ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors) {
		kiwi_dev_dbg(kdev, "CQ of %d entries, vector %u: 1 to %u entries, vectors below %d\n",
			     attr->cqe, attr->comp_vector, kdev->lim.max_cqe,
			     ibcq->device->num_comp_vectors);
		return -EINVAL;
	}
	if (!kiwi_res_get(&kdev->num_cq, kdev->lim.max_cq)) {
		kiwi_dev_dbg(kdev, "max_cq (%u) CQs exist already\n",
			     kdev->lim.max_cq);
		return -ENOMEM;
	}

	spin_lock_init(&cq->lock);
	size = kiwi_cq_slots(attr->cqe);
	if (udata) {
		rv = kiwi_ring_init(&cq->uring, udata, size,
				    sizeof(struct kiwi_ucqe));
		if (rv)
			goto err;
	} else {
		cq->cqes = kiwi_cqes_alloc(size);
		if (!cq->cqes) {
			rv = -ENOMEM;
			goto err;
		}
		kiwi_q_init(&cq->q, size);
	}
	/* Report the capacity we really have, as the verbs allow. */
	ibcq->cqe = size;

	rv = kiwi_cq_resp(cq, udata);
	if (rv)
		goto err;
	return 0;

err:
	kiwi_cq_free(cq);
	atomic_dec(&kdev->num_cq);
	return rv;
}

/* Since Linux 6.11 the core passes the uverbs attributes (NULL in-kernel). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs)
{
	return kiwi_create_cq_udata(ibcq, attr,
				    attrs ? &attrs->driver_udata : NULL);
}
#else
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	return kiwi_create_cq_udata(ibcq, attr, udata);
}
#endif

int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	kiwi_cq_free(to_kcq(ibcq));
	atomic_dec(&to_kdev(ibcq->device)->num_cq);
	return 0;
}

/*
 * Entries the provider has not consumed yet, from its (untrusted)
 * consumer index; more than the ring holds means the index is garbage.
 */
static bool kiwi_ucq_used(struct kiwi_cq *cq, u32 *used)
{
	return kiwi_ring_unconsumed(&cq->uring, used);
}

/*
 * Resize a user CQ: a new mapped ring with the unpolled entries moved
 * over; the provider maps it (the response has its offset) and unmaps
 * the old one, holding its CQ lock throughout so it polls neither.
 */
static int kiwi_ucq_resize(struct kiwi_cq *cq, u32 size,
			   struct ib_udata *udata)
{
	struct kiwi_ring nr, old;
	unsigned long flags;
	u32 used, cons, i;
	int rv;

	rv = kiwi_ring_init(&nr, udata, size, sizeof(struct kiwi_ucqe));
	if (rv)
		return rv;
	spin_lock_irqsave(&cq->lock, flags);
	if (!kiwi_ucq_used(cq, &used) || used > size) {
		spin_unlock_irqrestore(&cq->lock, flags);
		kiwi_ring_destroy(&nr);
		return used > size ? -EBUSY : -EINVAL;
	}
	cons = kiwi_ring_prod(&cq->uring) - used;
	for (i = 0; i < used; i++)
		memcpy(kiwi_ring_slot(&nr, i),
		       kiwi_ring_slot(&cq->uring, cons + i),
		       sizeof(struct kiwi_ucqe));
	kiwi_ring_set_flags(&nr, kiwi_ring_flags(&cq->uring) &
				 KIWI_RING_F_OVERFLOW);
	kiwi_ring_moved(&nr, used);
	old = cq->uring;
	cq->uring = nr;
	cq->ibcq.cqe = size;
	spin_unlock_irqrestore(&cq->lock, flags);

	kiwi_ring_destroy(&old);
	return kiwi_cq_resp(cq, udata);
}

int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_cqe *cqes, *old;
	unsigned long flags;
	u32 size, count, i;

	if (cqe <= 0 || cqe > kdev->lim.max_cqe)
		return -EINVAL;
	size = kiwi_cq_slots(cqe);
	if (cq->uring.buf)
		return kiwi_ucq_resize(cq, size, udata);
	cqes = kiwi_cqes_alloc(size);
	if (!cqes)
		return -ENOMEM;

	spin_lock_irqsave(&cq->lock, flags);
	count = kiwi_q_count(&cq->q);
	if (count > size) {
		/* Shrinking below the completions still queued loses data. */
		spin_unlock_irqrestore(&cq->lock, flags);
		kvfree(cqes);
		return -EBUSY;
	}
	for (i = 0; i < count; i++)
		cqes[i] = cq->cqes[kiwi_q_at(&cq->q, i)];
	old = cq->cqes;
	cq->cqes = cqes;
	kiwi_q_moved(&cq->q, size, count);
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

	if (cq->uring.buf)	/* polled in user space only */
		return -EINVAL;
	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num && kiwi_q_count(&cq->q); n++) {
		kiwi_cqe_to_wc(&cq->cqes[kiwi_q_head(&cq->q)], &wc[n]);
		kiwi_q_pop(&cq->q);
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
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    (cq->uring.buf ? !kiwi_ring_drained(&cq->uring) :
			     kiwi_q_count(&cq->q)))
		rv = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return rv;
}

/* Under cq->lock: append to a kernel CQ, false if it is full. */
static bool kiwi_kcq_put(struct kiwi_cq *cq, const struct kiwi_cqe *cqe)
{
	lockdep_assert_held(&cq->lock);
	if (kiwi_q_full(&cq->q))
		return false;
	cq->cqes[kiwi_q_tail(&cq->q)] = *cqe;
	kiwi_q_push(&cq->q);
	return true;
}

/*
 * Under cq->lock: append to a user CQ, false if it is full (or its
 * consumer index is garbage).  The slot is written before prod is
 * released, so the provider never sees a half-written entry.
 */
static bool kiwi_ucq_put(struct kiwi_cq *cq, const struct kiwi_cqe *cqe)
{
	struct kiwi_ucqe u = {
		.wr_id = cqe->wr_id,
		.qp_num = cqe->qp->qp_num,
		.byte_len = cqe->byte_len,
		.opcode = cqe->opcode,
		.status = cqe->status,
	};
	u32 used;

	lockdep_assert_held(&cq->lock);
	if (!kiwi_ucq_used(cq, &used) || used == kiwi_ring_size(&cq->uring)) {
		kiwi_ring_set_flags(&cq->uring, KIWI_RING_F_OVERFLOW);
		return false;
	}
	if (cqe->flags & IB_WC_WITH_INVALIDATE) {
		u.flags = KIWI_UCQE_F_WITH_INV;
		u.inv_rkey = cqe->ex;
	} else if (cqe->flags & IB_WC_WITH_IMM) {
		u.flags = KIWI_UCQE_F_WITH_IMM;
		u.imm_data = cqe->ex;
	}
	memcpy(kiwi_ring_slot(&cq->uring, kiwi_ring_prod(&cq->uring)), &u,
	       sizeof(u));
	kiwi_ring_produce(&cq->uring);
	return true;
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
	bool ok;

	spin_lock_irqsave(&cq->lock, flags);
	ok = cq->uring.buf ? kiwi_ucq_put(cq, cqe) : kiwi_kcq_put(cq, cqe);
	if (!ok) {
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
