// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: memory windows (ibv_alloc_mw(), ibv_bind_mw(), IB_WR_BIND_MW)
 * and invalidation of an STag by a QP (LOCAL_INV, READ with invalidate,
 * a peer's SEND with invalidate), of a fast-register region or a type 2
 * window.  Apart from mem.c because a window is an STag that maps part
 * of another region and holds it while bound; every change here bumps
 * the window's or region's generation (mem.c's top).
 */
#include "mem.h"
#include "qp.h"
#include "verbs.h"

/*
 * Under the window's lock (write): it no longer maps anything.  Returns
 * the region it held, for kiwi_mw_put_parent() once the lock is
 * dropped: copies re-check the generation under the lock, so none uses
 * the region after this.
 */
static struct kiwi_mem *kiwi_mw_unbind(struct kiwi_mem *mw)
{
	struct kiwi_mem *parent = mw->parent;

	lockdep_assert_held_write(&mw->lock);
	kiwi_mem_set_valid(mw, false);
	mw->parent = NULL;
	return parent;
}

static void kiwi_mw_put_parent(struct kiwi_mem *parent)
{
	if (!parent)
		return;
	atomic_dec(&parent->nr_mw);
	kiwi_mem_put(parent);
}

/*
 * Invalidate @stag on behalf of @qp: LOCAL_INV, READ with invalidate, or
 * a peer's SEND with invalidate.  Only fast-register regions of the QP's
 * protection domain can be invalidated, and type 2 windows bound to the
 * QP (type 1 windows only by binding them again).
 */
int kiwi_mem_invalidate(struct kiwi_qp *qp, u32 stag)
{
	struct kiwi_mem *mem = kiwi_mem_get(qp->kdev, stag);
	struct kiwi_mem *parent = NULL;
	unsigned long flags;
	int rv = -EINVAL;

	if (!mem) {
		kiwi_qp_dbg(qp, "invalidate of STag %#x refused: no such STag\n",
			    stag);
		return rv;
	}
	write_lock_irqsave(&mem->lock, flags);
	if (mem->frmr && mem->pd == qp->ibqp.pd && mem->valid) {
		kiwi_mem_set_valid(mem, false);
		rv = 0;
	} else if (mem->mw_type == IB_MW_TYPE_2 && mem->pd == qp->ibqp.pd &&
		   mem->valid && mem->qp_token == READ_ONCE(qp->mw_token)) {
		parent = kiwi_mw_unbind(mem);
		rv = 0;
	}
	write_unlock_irqrestore(&mem->lock, flags);
	if (rv)
		kiwi_qp_dbg(qp, "invalidate of STag %#x refused: FRMR %d, window type %u, valid %d, same PD %d, window of this QP %d\n",
			    stag, mem->frmr, mem->mw_type, mem->valid,
			    mem->pd == qp->ibqp.pd, mem->mw_type &&
			    mem->qp_token == READ_ONCE(qp->mw_token));
	kiwi_mw_put_parent(parent);
	kiwi_mem_put(mem);
	return rv;
}

int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibmw->device);
	struct kiwi_mem *mem;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		kiwi_dev_dbg(kdev, "window type %d: 1 or 2 only\n", ibmw->type);
		return -EINVAL;
	}
	mem = kiwi_mem_alloc(kdev, ibmw->pd, 0);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	mem->mw_type = ibmw->type;
	to_kmw(ibmw)->mem = mem;
	ibmw->rkey = mem->stag;
	kiwi_mem_publish(mem, false);
	return 0;
}

/* A bound window is unbound first: its region may then go. */
int kiwi_dealloc_mw(struct ib_mw *ibmw)
{
	struct kiwi_mem *mem = to_kmw(ibmw)->mem;
	struct kiwi_mem *parent;
	unsigned long flags;

	write_lock_irqsave(&mem->lock, flags);
	parent = kiwi_mw_unbind(mem);
	/* A bind still in a send queue must not bring it back. */
	mem->mw_dead = true;
	write_unlock_irqrestore(&mem->lock, flags);
	kiwi_mw_put_parent(parent);
	kiwi_mem_destroy(mem);
	return 0;
}

/* The QP's name for type 2 windows (kiwi_qp.mw_token), drawn once. */
static u64 kiwi_mem_qp_token(struct kiwi_qp *qp)
{
	static atomic64_t last = ATOMIC64_INIT(0);
	u64 t = READ_ONCE(qp->mw_token);
	u64 old;

	if (t)
		return t;
	t = atomic64_inc_return(&last);
	old = cmpxchg64(&qp->mw_token, 0, t);
	return old ? old : t;
}

/*
 * The form of a bind, before any region is looked at.  sq.c checked
 * what needs no window (wqe.h: kiwi_ubind_check(): the new STag keeps
 * the index, the rights are a window's, the range does not wrap); here
 * the window is of @qp's protection domain, and zero-based (type 2
 * only, as the verbs define it) and length 0 (a type 1 unbind) suit its
 * type.  kiwi_mw_set() checks that the key changes, so an STag a peer
 * kept from an earlier binding stays dead.
 */
static bool kiwi_mw_bind_ok(struct kiwi_mem *mw, struct kiwi_qp *qp,
			    const struct kiwi_bind *b)
{
	bool type1 = mw->mw_type == IB_MW_TYPE_1;

	return mw->mw_type && mw->pd == qp->ibqp.pd &&
	       !(type1 && (b->access & IB_ZERO_BASED)) &&
	       (b->len || type1);
}

/*
 * The region a window is about to be bound in, referenced and with the
 * window counted in its nr_mw, or NULL if the bind may not use it: a
 * valid user region of @qp's protection domain with IB_ACCESS_MW_BIND,
 * holding the whole window, writable locally if the window is to be
 * writable remotely (a window never grants writes the region's owner
 * did not allow).
 */
static struct kiwi_mem *kiwi_mw_parent_get(struct kiwi_qp *qp,
					   const struct kiwi_bind *b)
{
	struct kiwi_mem *mr = kiwi_mem_get(qp->kdev, b->mr_lkey);
	int need = IB_ACCESS_MW_BIND;
	unsigned long flags;
	bool ok;

	if (!mr)
		return NULL;
	if (b->access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC))
		need |= IB_ACCESS_LOCAL_WRITE;
	write_lock_irqsave(&mr->lock, flags);
	/* b->addr + b->len does not wrap (kiwi_ubind_check()). */
	ok = mr->valid && !mr->mw_type && !mr->frmr && mr->pages &&
	     mr->pd == qp->ibqp.pd && (mr->access & need) == need &&
	     b->addr >= mr->iova &&
	     b->addr + b->len - mr->iova <= mr->len;
	if (ok)
		atomic_inc(&mr->nr_mw);
	write_unlock_irqrestore(&mr->lock, flags);
	if (!ok) {
		kiwi_mem_put(mr);
		return NULL;
	}
	return mr;
}

/*
 * Under the window's lock (write): bind it to @mr (NULL: a type 1
 * unbind) as @b says, under its new STag.  A type 2 window must be free
 * (invalidated or never bound); a bound type 1 window moves, and the
 * region it held is returned in *@old.
 */
static int kiwi_mw_set(struct kiwi_mem *mw, struct kiwi_qp *qp,
		       const struct kiwi_bind *b, struct kiwi_mem *mr,
		       struct kiwi_mem **old)
{
	lockdep_assert_held_write(&mw->lock);
	if (mw->mw_dead || (mw->mw_type == IB_MW_TYPE_2 && mw->valid) ||
	    (b->new_stag & 0xff) == (mw->stag & 0xff))
		return -EINVAL;
	*old = kiwi_mw_unbind(mw);
	WRITE_ONCE(mw->stag, b->new_stag);
	if (!mr)
		return 0;
	mw->parent = mr;
	mw->base = b->addr;
	mw->iova = b->access & IB_ZERO_BASED ? 0 : b->addr;
	mw->len = b->len;
	mw->access = b->access & KIWI_MW_ACCESS;
	mw->qp_token = mw->mw_type == IB_MW_TYPE_2 ? kiwi_mem_qp_token(qp) : 0;
	kiwi_mem_set_valid(mw, true);
	return 0;
}

/*
 * IB_WR_BIND_MW (a type 2 window, or ibv_bind_mw() of a type 1 one),
 * in send queue order.  0, or -EINVAL: the WR completes with
 * IB_WC_MW_BIND_ERR and the window is as it was.
 */
int kiwi_mem_bind_mw(struct kiwi_qp *qp, const struct kiwi_bind *b)
{
	struct kiwi_mem *mw = kiwi_mem_lookup(qp->kdev, b->mw_stag, false);
	struct kiwi_mem *mr = NULL, *old = NULL;
	unsigned long flags;
	int rv = -EINVAL;

	if (!mw) {
		kiwi_qp_dbg(qp, "bind of window %#x refused: no such window\n",
			    b->mw_stag);
		return rv;
	}
	if (!kiwi_mw_bind_ok(mw, qp, b)) {
		kiwi_qp_dbg(qp, "bind of window %#x refused: window type %u, same PD %d, zero-based %d, length %llu\n",
			    b->mw_stag, mw->mw_type, mw->pd == qp->ibqp.pd,
			    !!(b->access & IB_ZERO_BASED), b->len);
		goto out;
	}
	if (b->len) {
		mr = kiwi_mw_parent_get(qp, b);
		if (!mr) {
			kiwi_qp_dbg(qp, "bind of window %#x refused: MR %#x is no valid user MR of the PD with MW_BIND access (and LOCAL_WRITE for a writable window) holding %#llx+%llu\n",
				    b->mw_stag, b->mr_lkey, b->addr, b->len);
			goto out;
		}
	}
	write_lock_irqsave(&mw->lock, flags);
	rv = kiwi_mw_set(mw, qp, b, mr, &old);
	write_unlock_irqrestore(&mw->lock, flags);
	if (rv) {
		kiwi_qp_dbg(qp, "bind of window %#x refused: deallocated, a type 2 window still bound, or the key unchanged\n",
			    b->mw_stag);
		kiwi_mw_put_parent(mr);
	}
	kiwi_mw_put_parent(old);
out:
	kiwi_mem_put(mw);
	return rv;
}
