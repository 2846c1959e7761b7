// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: memory registration and STag management -- regions and their
 * STags from allocation to teardown, lookup for the data path, and the
 * access checks.  What uses a region once it is checked lives apart:
 * the copies and atomics in place.c, fast registration in frmr.c,
 * memory windows and invalidation in mw.c (mem.h: what they share).
 *
 * An STag is (24-bit index << 8 | 8-bit key).  The index names a slot in
 * the device's mem_xa, drawn at random (the next free slot from a random
 * start), and the key is random per registration, so a peer can neither
 * guess a live STag from an old one nor walk the index space.
 *
 * The data path looks STags up under RCU and keeps a reference for as
 * long as a message needs its region -- from an FPDU's header to its CRC,
 * across the FPDUs of a SEND, for a whole READ response -- which a peer
 * can stretch without bound by stalling.  So deregistration and
 * invalidation never wait for references.  Instead every check of a
 * region records its generation (kiwi_mem_check()), every copy to or
 * from the region re-checks it under mem->lock (place.c), and whoever
 * changes what the STag maps (invalidate, fast-register, deregister)
 * bumps it under the same lock (kiwi_mem_set_valid()): once that
 * returns, no copy uses the old mapping, and the pages can go.  The
 * structure itself lives until the last reference is dropped.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "mem.h"
#include "qp.h"
#include "verbs.h"

/*
 * Regions alive anywhere (registered, or still referenced by a message
 * in flight): zero again once every device is gone, or something leaked
 * a reference (kiwi_mem_exit_check()).
 */
static atomic_t kiwi_mem_live = ATOMIC_INIT(0);

/*
 * For tests only (root, off by default): a new registration takes the
 * index and key of the last one destroyed, if that slot is still free,
 * so that a test can make a stale STag name a new region in one step
 * instead of 2^32 tries (abuse.sh, atomic_stale).  It weakens STag
 * unpredictability, which is all that keeps a peer from naming regions
 * it was never told about.
 */
static bool kiwi_test_stag_reuse;
module_param_named(test_stag_reuse, kiwi_test_stag_reuse, bool, 0600);
MODULE_PARM_DESC(test_stag_reuse,
		 "Tests only: a new registration reuses the last freed STag (default off; never on a network)");

/* With test_stag_reuse: reserve the last freed STag's slot, if free. */
static bool kiwi_mem_reuse_stag(struct kiwi_device *kdev, u32 *stag)
{
	u32 last = READ_ONCE(kdev->test_last_stag);

	if (!READ_ONCE(kiwi_test_stag_reuse) || !last ||
	    xa_insert(&kdev->mem_xa, last >> 8, NULL, GFP_KERNEL))
		return false;
	*stag = last;
	return true;
}

struct kiwi_mem *kiwi_mem_alloc(struct kiwi_device *kdev, struct ib_pd *pd,
				int access)
{
	struct kiwi_mem *mem;
	u32 idx, next;
	int rv;

	if (!kiwi_res_get(&kdev->num_mr, kdev->lim.max_mr)) {
		kiwi_dev_dbg(kdev, "max_mr (%u) regions and windows exist already\n",
			     kdev->lim.max_mr);
		return ERR_PTR(-ENOMEM);
	}

	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem) {
		atomic_dec(&kdev->num_mr);
		return ERR_PTR(-ENOMEM);
	}
	mem->kdev = kdev;
	mem->pd = pd;
	mem->access = access;
	kref_init(&mem->ref);
	rwlock_init(&mem->lock);
	atomic_inc(&kiwi_mem_live);

	/*
	 * Not yet visible: the slot holds NULL until kiwi_mem_publish().
	 * The search for a free slot starts at a random index.
	 */
	if (kiwi_mem_reuse_stag(kdev, &mem->stag))
		return mem;
	next = get_random_u32_inclusive(1, KIWI_STAG_INDEX_MAX);
	rv = xa_alloc_cyclic(&kdev->mem_xa, &idx, NULL,
			     XA_LIMIT(1, KIWI_STAG_INDEX_MAX), &next,
			     GFP_KERNEL);
	if (rv < 0) {
		kfree(mem);
		atomic_dec(&kiwi_mem_live);
		atomic_dec(&kdev->num_mr);
		return ERR_PTR(rv == -EBUSY ? -ENOMEM : rv);
	}
	mem->stag = idx << 8 | (get_random_u32() & 0xff);
	return mem;
}

void kiwi_mem_publish(struct kiwi_mem *mem, bool valid)
{
	mem->valid = valid;
	xa_store(&mem->kdev->mem_xa, mem->stag >> 8, mem, GFP_KERNEL);
}

/*
 * Under mem->lock (write): the mapping behind the STag changes, or the
 * STag becomes (in)valid.  Copies checked against the old generation
 * stop at their next piece.
 */
void kiwi_mem_set_valid(struct kiwi_mem *mem, bool valid)
{
	lockdep_assert_held_write(&mem->lock);
	mem->valid = valid;
	mem->gen++;
}

static void kiwi_mem_release(struct kref *ref)
{
	atomic_dec(&kiwi_mem_live);
	kfree_rcu(container_of(ref, struct kiwi_mem, ref), rcu);
}

/* Module exit, every device gone: a region still alive was leaked. */
void kiwi_mem_exit_check(void)
{
	int n = atomic_read(&kiwi_mem_live);

	WARN(n, "kiwi: %d memory region(s) leaked: a reference was never dropped\n",
	     n);
}

/*
 * The region in @stag's index slot, referenced.  With @match_key its
 * key must match too; without, any key does (fast registration is about
 * to replace it).
 */
struct kiwi_mem *kiwi_mem_lookup(struct kiwi_device *kdev, u32 stag,
				 bool match_key)
{
	struct kiwi_mem *mem;

	rcu_read_lock();
	mem = xa_load(&kdev->mem_xa, stag >> 8);
	if (mem && ((match_key && READ_ONCE(mem->stag) != stag) ||
		    !kref_get_unless_zero(&mem->ref)))
		mem = NULL;
	rcu_read_unlock();
	return mem;
}

struct kiwi_mem *kiwi_mem_get(struct kiwi_device *kdev, u32 stag)
{
	return kiwi_mem_lookup(kdev, stag, true);
}

void kiwi_mem_put(struct kiwi_mem *mem)
{
	kref_put(&mem->ref, kiwi_mem_release);
}

/*
 * Unpublish the STag, end every copy that still uses the memory, and
 * release the memory.  Never waits for the data path's references: they
 * only keep the structure alive (a lookup under RCU or a stalled message
 * may still look at it), and it is freed with the last of them.
 */
void kiwi_mem_destroy(struct kiwi_mem *mem)
{
	struct kiwi_device *kdev = mem->kdev;
	unsigned long flags;

	xa_erase(&kdev->mem_xa, mem->stag >> 8);
	WRITE_ONCE(kdev->test_last_stag, mem->stag);
	write_lock_irqsave(&mem->lock, flags);
	kiwi_mem_set_valid(mem, false);
	write_unlock_irqrestore(&mem->lock, flags);

	if (mem->umem)
		ib_umem_release(mem->umem);
	mem->umem = NULL;
	kvfree(mem->pages);
	kvfree(mem->map_pages);
	mem->npages = 0;
	atomic_dec(&kdev->num_mr);
	kiwi_mem_put(mem);
}

struct kiwi_mr *kiwi_mr_create(struct kiwi_mem *mem)
{
	struct kiwi_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);

	if (!mr)
		return NULL;
	mr->mem = mem;
	mr->ibmr.lkey = mem->stag;
	mr->ibmr.rkey = mem->stag;
	return mr;
}

/* Kernel consumers: the whole kernel virtual address space. */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct kiwi_device *kdev = to_kdev(ibpd->device);
	struct kiwi_mem *mem;
	struct kiwi_mr *mr;

	mem = kiwi_mem_alloc(kdev, ibpd, access);
	if (IS_ERR(mem))
		return ERR_CAST(mem);
	mem->iova = 0;
	mem->len = U64_MAX;

	mr = kiwi_mr_create(mem);
	if (!mr) {
		kiwi_mem_destroy(mem);
		return ERR_PTR(-ENOMEM);
	}
	kiwi_mem_publish(mem, true);
	return &mr->ibmr;
}

static int kiwi_mem_pin(struct kiwi_mem *mem, u64 start, u64 len)
{
	struct ib_umem *umem;
	struct sg_page_iter it;
	unsigned long i = 0;

	umem = ib_umem_get(&mem->kdev->ibdev, start, len, mem->access);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	mem->umem = umem;
	mem->npages = ib_umem_num_pages(umem);
	mem->pages = kvmalloc_array(mem->npages, sizeof(*mem->pages),
				    GFP_KERNEL_ACCOUNT);
	if (!mem->pages)
		return -ENOMEM;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (WARN_ON_ONCE(i >= mem->npages))
			return -EFAULT;
		mem->pages[i++] = sg_page_iter_page(&it);
	}
	return i == mem->npages ? 0 : -EFAULT;
}

struct ib_mr *kiwi_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			       u64 iova, int access, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibpd->device);
	struct kiwi_mem *mem;
	struct kiwi_mr *mr;
	int rv;

	/* The page array is indexed by page distance from iova. */
	if (!len || len > kdev->ibdev.attrs.max_mr_size ||
	    (access & ~KIWI_ACCESS_SUPPORTED) ||
	    (start ^ iova) & ~PAGE_MASK || iova + len < iova) {
		kiwi_dev_dbg(kdev, "MR of %llu bytes at %#llx, iova %#llx, access %#x: length 1 to %llu, access bits %#x, same page offset, no wrap\n",
			     len, start, iova, access,
			     kdev->ibdev.attrs.max_mr_size,
			     KIWI_ACCESS_SUPPORTED);
		return ERR_PTR(-EINVAL);
	}

	mem = kiwi_mem_alloc(kdev, ibpd, access);
	if (IS_ERR(mem))
		return ERR_CAST(mem);
	mem->iova = iova;
	mem->len = len;

	rv = kiwi_mem_pin(mem, start, len);
	if (rv) {
		kiwi_dev_dbg(kdev, "MR of %llu bytes at %#llx: pinning failed (%d)\n",
			     len, start, rv);
		goto err;
	}

	mr = kiwi_mr_create(mem);
	if (!mr) {
		rv = -ENOMEM;
		goto err;
	}
	mr->ibmr.iova = iova;
	mr->ibmr.length = len;
	kiwi_mem_publish(mem, true);
	return &mr->ibmr;

err:
	kiwi_mem_destroy(mem);
	return ERR_PTR(rv);
}

/*
 * A region with memory windows bound to it stays (-EBUSY), as the verbs
 * require; once it is invalid, no window can bind to it any more.
 */
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct kiwi_mr *mr = to_kmr(ibmr);
	struct kiwi_mem *mem = mr->mem;
	unsigned long flags;
	bool busy;

	write_lock_irqsave(&mem->lock, flags);
	busy = atomic_read(&mem->nr_mw);
	if (!busy)
		kiwi_mem_set_valid(mem, false);
	write_unlock_irqrestore(&mem->lock, flags);
	if (busy) {
		kiwi_dev_dbg(mem->kdev, "MR %#x: memory windows still bound to it\n",
			     mem->stag);
		return -EBUSY;
	}
	kiwi_mem_destroy(mem);
	kfree(mr);
	return 0;
}

/* ---- access checks for the data path ---- */

/*
 * RDMAP's code for an invalid STag is 0, which reads as "no violation"
 * here: an STag that is not valid, or not usable by this access, is
 * reported as not associated instead, which callers answer exactly as
 * an invalid one (rxops.c: kiwi_rx_remote_why()).
 */
#define KIWI_MEM_REFUSED	KIWI_RC_STAG_NOT_ASSOC

int kiwi_mem_why(struct kiwi_mem *mem, struct ib_pd *pd, struct kiwi_qp *qp,
		 u64 addr, u64 len, int access)
{
	lockdep_assert_held(&mem->lock);
	if (!mem->valid || mem->pd != pd)
		return KIWI_MEM_REFUSED;
	/* A window serves only the peer; a type 2 one only its QP's. */
	if (mem->mw_type && (!qp || !access || (access & ~KIWI_MW_ACCESS)))
		return KIWI_MEM_REFUSED;
	if (mem->mw_type == IB_MW_TYPE_2 &&
	    mem->qp_token != READ_ONCE(qp->mw_token))
		return KIWI_MEM_REFUSED;
	if ((mem->access & access) != access)
		return KIWI_RC_ACCESS_RIGHTS;
	if (addr + len < addr)
		return KIWI_RC_TO_WRAP;
	if (addr < mem->iova || addr + len - mem->iova > mem->len)
		return KIWI_RC_BASE_BOUNDS;
	return 0;
}

/*
 * Check that [addr, addr + len) lies inside @mem, which must belong to
 * @pd and grant @access, and record in *@gen the generation that was
 * checked: copies name it (kiwi_mem_copy_*()).  Returns 0 or the RDMAP
 * error code (enum kiwi_rdmap_ecode) that describes the violation.
 */
static int kiwi_mem_check_as(struct kiwi_mem *mem, struct ib_pd *pd,
			     struct kiwi_qp *qp, u64 addr, u64 len, int access,
			     u64 *gen)
{
	int why;

	read_lock_bh(&mem->lock);
	why = kiwi_mem_why(mem, pd, qp, addr, len, access);
	*gen = mem->gen;
	read_unlock_bh(&mem->lock);
	return why;
}

/* A local access (an SGE's lkey): memory windows never qualify. */
int kiwi_mem_check(struct kiwi_mem *mem, struct ib_pd *pd, u64 addr,
		   u64 len, int access, u64 *gen)
{
	return kiwi_mem_check_as(mem, pd, NULL, addr, len, access, gen);
}

/*
 * An access by @qp's peer (an STag from the wire): as kiwi_mem_check(),
 * and memory windows qualify, a type 2 one only if bound to @qp.
 */
int kiwi_mem_check_qp(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 addr,
		      u64 len, int access, u64 *gen)
{
	return kiwi_mem_check_as(mem, qp->ibqp.pd, qp, addr, len, access,
				 gen);
}
