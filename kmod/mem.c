// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: memory registration and STag management.
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
 * from the region re-checks it under mem->lock, and whoever changes
 * what the STag maps (invalidate, fast-register, deregister) bumps it
 * under the same lock: once that returns, no copy uses the old mapping,
 * and the pages can go.  The structure itself lives until the last
 * reference is dropped.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kiwi.h"

/*
 * Regions alive anywhere (registered, or still referenced by a message
 * in flight): zero again once every device is gone, or something leaked
 * a reference (kiwi_mem_exit_check()).
 */
static atomic_t kiwi_mem_live = ATOMIC_INIT(0);

/*
 * Remote-atomic access is accepted, as by other drivers: middleware
 * (libfabric's verbs provider, UCX) asks for it on every region.  It
 * grants nothing on a QP without RFC 7306 atomics (module parameter
 * rfc7306_atomics off when it was created: atomic_cap NONE): such a
 * QP executes no Atomic Request.
 */
#define KIWI_ACCESS_SUPPORTED                                                 \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |                     \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |                    \
	 IB_ACCESS_RELAXED_ORDERING | IB_ACCESS_MW_BIND)

/* What a memory window can grant: remote access only. */
#define KIWI_MW_ACCESS                                                        \
	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |                     \
	 IB_ACCESS_REMOTE_ATOMIC)

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

static struct kiwi_mem *kiwi_mem_alloc(struct kiwi_device *kdev,
				       struct ib_pd *pd, int access)
{
	struct kiwi_mem *mem;
	u32 idx, next;
	int rv;

	if (!kiwi_res_get(&kdev->num_mr, kdev->lim.max_mr))
		return ERR_PTR(-ENOMEM);

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

static void kiwi_mem_publish(struct kiwi_mem *mem, bool valid)
{
	mem->valid = valid;
	xa_store(&mem->kdev->mem_xa, mem->stag >> 8, mem, GFP_KERNEL);
}

/*
 * Under mem->lock (write): the mapping behind the STag changes, or the
 * STag becomes (in)valid.  Copies checked against the old generation
 * stop at their next piece.
 */
static void kiwi_mem_set_valid(struct kiwi_mem *mem, bool valid)
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
static struct kiwi_mem *kiwi_mem_lookup(struct kiwi_device *kdev, u32 stag,
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
static void kiwi_mem_destroy(struct kiwi_mem *mem)
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

static struct kiwi_mr *kiwi_mr_create(struct kiwi_mem *mem)
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

	if (!len || len > kdev->ibdev.attrs.max_mr_size)
		return ERR_PTR(-EINVAL);
	if (access & ~KIWI_ACCESS_SUPPORTED)
		return ERR_PTR(-EINVAL);
	/* The page array is indexed by page distance from iova. */
	if ((start ^ iova) & ~PAGE_MASK || iova + len < iova)
		return ERR_PTR(-EINVAL);

	mem = kiwi_mem_alloc(kdev, ibpd, access);
	if (IS_ERR(mem))
		return ERR_CAST(mem);
	mem->iova = iova;
	mem->len = len;

	rv = kiwi_mem_pin(mem, start, len);
	if (rv)
		goto err;

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
	if (busy)
		return -EBUSY;
	kiwi_mem_destroy(mem);
	kfree(mr);
	return 0;
}

/* ---- placement helpers for the data path ---- */

/*
 * RDMAP's code for an invalid STag is 0, which reads as "no violation"
 * here: an STag that is not valid, or not usable by this access, is
 * reported as not associated instead, which callers answer exactly as
 * an invalid one (rx.c: kiwi_rx_remote_why()).
 */
#define KIWI_MEM_REFUSED	KIWI_RC_STAG_NOT_ASSOC

static int kiwi_mem_why(struct kiwi_mem *mem, struct ib_pd *pd,
			struct kiwi_qp *qp, u64 addr, u64 len, int access)
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

/* Does [addr, addr + len) lie inside what @mem addresses now? */
static bool kiwi_mem_spans(const struct kiwi_mem *mem, u64 addr, u64 len)
{
	return addr >= mem->iova && len <= mem->len &&
	       addr - mem->iova <= mem->len - len;
}

/*
 * Under mem->lock: the region whose pages back [*@addr, *@addr + @len)
 * of @mem as it is bound now, with *@addr translated into it, or NULL if
 * the range lies outside it.  The generation check alone would do, but
 * a copy must never trust an earlier check for its bounds: re-checking
 * the binding actually used costs two compares and closes the whole
 * class of stale-check defects (a window rebound, a counter wrapped).
 */
static struct kiwi_mem *kiwi_mem_target(struct kiwi_mem *mem, u64 *addr,
					u64 len)
{
	lockdep_assert_held(&mem->lock);
	if (!mem->valid || !kiwi_mem_spans(mem, *addr, len))
		return NULL;
	if (mem->mw_type) {
		/* A valid window has its region (kiwi_mw_set()). */
		if (!mem->parent)
			return NULL;
		*addr = *addr - mem->iova + mem->base;
		mem = mem->parent;
		if (!mem->valid || !kiwi_mem_spans(mem, *addr, len))
			return NULL;
	}
	return mem;
}

/*
 * Page backing @addr of a user region, or NULL past its page array
 * (which kiwi_mem_target()'s bounds already exclude).
 */
static struct page *kiwi_mem_page(struct kiwi_mem *mem, u64 addr)
{
	u64 i = (addr >> PAGE_SHIFT) - (mem->iova >> PAGE_SHIFT);

	return i < mem->npages ? mem->pages[i] : NULL;
}

/*
 * Copy @len bytes between @buf and @addr in @mem (into the region if
 * @in), extending *@crc over them in the same pass unless @crc is NULL.
 * Kernel DMA regions address kernel memory.  Under mem->lock, with the
 * generation checked; the bounds are checked again here, against the
 * binding in force.  Returns false, copying nothing, if they do not hold.
 */
static bool kiwi_mem_xfer(struct kiwi_mem *mem, u64 addr, u8 *buf, u32 len,
			  u32 *crc, bool in)
{
	struct page *pg = NULL;

	lockdep_assert_held_read(&mem->lock);
	mem = kiwi_mem_target(mem, &addr, len);
	if (!mem)
		return false;
	while (len) {
		u32 pg_off = offset_in_page(addr);
		u32 chunk = min_t(u32, len, PAGE_SIZE - pg_off);
		void *va;

		if (mem->pages) {
			pg = kiwi_mem_page(mem, addr);
			if (WARN_ON_ONCE(!pg))
				return false;
			va = kmap_local_page(pg) + pg_off;
		} else {
			va = (void *)(uintptr_t)addr;
		}
		if (in)
			kiwi_crc_copy_mem(va, buf, chunk, crc);
		else
			kiwi_crc_copy_mem(buf, va, chunk, crc);
		if (pg)
			kunmap_local(va);
		addr += chunk;
		buf += chunk;
		len -= chunk;
	}
	return true;
}

/*
 * Copy @len bytes at @off of @skb to @addr in @mem, extending *@crc over
 * the placed bytes unless @crc is NULL.  The caller checked the bounds of
 * both at generation @gen.  The skb is read a piece (linear part, page
 * fragment) at a time.  Returns false, placing nothing, if the STag was
 * invalidated or deregistered since.
 */
bool kiwi_mem_copy_from_skb(struct kiwi_mem *mem, u64 gen, u64 addr,
			    const struct sk_buff *skb, int off, u32 len,
			    u32 *crc)
{
	struct skb_seq_state st;
	const u8 *src;
	u32 done = 0, n;
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen;
	if (ok) {
		skb_prepare_seq_read((struct sk_buff *)skb, off, off + len,
				     &st);
		while (ok && done < len &&
		       (n = skb_seq_read(done, &src, &st))) {
			n = min(n, len - done);
			ok = kiwi_mem_xfer(mem, addr + done, (u8 *)src, n, crc,
					   true);
			done += n;
		}
		skb_abort_seq_read(&st);
	}
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * Copy @len bytes at @addr of @mem to @dst, as kiwi_mem_copy_from_skb()
 * the other way.  Returns false, copying nothing, if the STag changed
 * since generation @gen was checked.
 */
bool kiwi_mem_copy_out(struct kiwi_mem *mem, u64 gen, u64 addr, void *dst,
		       u32 len, u32 *crc)
{
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen && kiwi_mem_xfer(mem, addr, dst, len, crc, false);
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * Copy @len bytes from @src into @mem at @addr, as kiwi_mem_copy_out()
 * the other way (an Atomic Response's value into its local sink).
 */
bool kiwi_mem_copy_in(struct kiwi_mem *mem, u64 gen, u64 addr,
		      const void *src, u32 len)
{
	bool ok;

	read_lock_bh(&mem->lock);
	ok = mem->gen == gen &&
	     kiwi_mem_xfer(mem, addr, (u8 *)src, len, NULL, true);
	read_unlock_bh(&mem->lock);
	return ok;
}

/*
 * RFC 7306 atomics are atomic with respect to each other anywhere in
 * kiwi (IBV_ATOMIC_HCA): every one runs under this lock, whatever
 * device, QP or region it targets.  Not with respect to the CPU's own
 * accesses to the memory, as with the RNICs that report HCA.  One
 * 8-byte read and write under a spinlock costs less than a TCP round
 * trip by orders of magnitude, so one lock does not limit throughput.
 */
static DEFINE_SPINLOCK(kiwi_atomic_lock);

/*
 * Execute atomic @ai, received by @qp, on the aligned 8 bytes at ai->to
 * of @mem and return the value found there in *@orig.  Everything the
 * header was checked for -- validity, PD, window binding, rights,
 * bounds -- is checked again here, under the lock that changes to the
 * STag take, together with the generation: what runs is exactly what
 * was allowed, now.  Aligned, the word never straddles a page: one
 * kernel mapping of one page holds it, whoever else has that page
 * mapped.  Returns false, changing nothing, if any check fails.
 */
bool kiwi_mem_atomic(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 gen,
		     const struct kiwi_atomic_info *ai, u64 *orig)
{
	struct kiwi_mem *pm = NULL;
	struct page *pg = NULL;
	u64 addr = ai->to;
	void *va = NULL;
	u64 *p;

	if (WARN_ON_ONCE(addr & (KIWI_ATOMIC_LEN - 1)))
		return false;
	read_lock_bh(&mem->lock);
	if (mem->gen == gen &&
	    !kiwi_mem_why(mem, qp->ibqp.pd, qp, addr, KIWI_ATOMIC_LEN,
			  IB_ACCESS_REMOTE_ATOMIC))
		pm = kiwi_mem_target(mem, &addr, KIWI_ATOMIC_LEN);
	/* A window may start anywhere in its region. */
	if (pm && (addr & (KIWI_ATOMIC_LEN - 1)))
		pm = NULL;
	if (pm && pm->pages) {
		pg = kiwi_mem_page(pm, addr);
		if (!pg)
			pm = NULL;
	}
	if (pm) {
		if (pg) {
			va = kmap_local_page(pg);
			p = va + offset_in_page(addr);
		} else {
			p = (u64 *)(uintptr_t)addr;
		}
		spin_lock(&kiwi_atomic_lock);
		*orig = READ_ONCE(*p);
		WRITE_ONCE(*p, kiwi_atomic_apply(ai, *orig));
		spin_unlock(&kiwi_atomic_lock);
		if (va)
			kunmap_local(va);
	}
	read_unlock_bh(&mem->lock);
	return pm;
}

/* ---- fast registration (kernel consumers) ---- */

/*
 * A fast-register MR starts invalid with room for @max_num_sg pages; the
 * consumer fills the page list with ib_map_mr_sg() and makes the STag
 * valid with an IB_WR_REG_MR work request, processed in send queue order.
 */
struct ib_mr *kiwi_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg)
{
	struct kiwi_device *kdev = to_kdev(ibpd->device);
	struct kiwi_mem *mem;
	struct kiwi_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > KIWI_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);

	mem = kiwi_mem_alloc(kdev, ibpd, 0);
	if (IS_ERR(mem))
		return ERR_CAST(mem);
	mem->frmr = true;
	mem->max_pages = max_num_sg;
	mem->pages = kvcalloc(max_num_sg, sizeof(*mem->pages), GFP_KERNEL);
	mem->map_pages = kvcalloc(max_num_sg, sizeof(*mem->map_pages),
				  GFP_KERNEL);
	mr = mem->pages && mem->map_pages ? kiwi_mr_create(mem) : NULL;
	if (!mr) {
		kiwi_mem_destroy(mem);
		return ERR_PTR(-ENOMEM);
	}
	mem->ibmr = &mr->ibmr;
	kiwi_mem_publish(mem, false);
	return &mr->ibmr;
}

/*
 * kiwi's DMA addresses are kernel virtual addresses (software device),
 * so each page address handed to us is a directly mapped kernel page.
 */
static int kiwi_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct kiwi_mem *mem = to_kmr(ibmr)->mem;

	if (mem->map_npages >= mem->max_pages)
		return -ENOMEM;
	mem->map_pages[mem->map_npages++] =
		virt_to_page((void *)(uintptr_t)addr);
	return 0;
}

int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct kiwi_mem *mem = to_kmr(ibmr)->mem;

	/*
	 * Placement indexes pages by PAGE_SIZE distance from the iova.  The
	 * list goes to map_pages, not pages: the region may still be valid
	 * (a LOCAL_INV ahead of the REG_MR in the send queue will end that,
	 * as ib_iser posts them) and copies into it read pages.  REG_MR,
	 * refused while the region is valid, takes the list over.
	 */
	if (ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mem->map_npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, kiwi_set_page);
}

/*
 * IB_WR_REG_MR for the FRMR named by @stag (its key is about to change,
 * so only the index counts): give the region the iova, length and pages
 * ib_map_mr_sg() set up, @access, and the new @key; then make it valid,
 * as a new generation: a copy checked against an earlier registration
 * of the same region never uses this one.
 */
int kiwi_mem_fast_reg(struct kiwi_qp *qp, u32 stag, u32 key, int access)
{
	struct kiwi_mem *mem = kiwi_mem_lookup(qp->kdev, stag, false);
	unsigned long flags;
	struct ib_mr *ibmr;
	int rv = -EINVAL;

	if (!mem)
		return rv;
	ibmr = mem->ibmr;
	write_lock_irqsave(&mem->lock, flags);
	if (!mem->frmr || mem->pd != qp->ibqp.pd || mem->valid ||
	    (access & ~KIWI_ACCESS_SUPPORTED) || ibmr->page_size != PAGE_SIZE ||
	    ibmr->iova + ibmr->length < ibmr->iova ||
	    PAGE_ALIGN(ibmr->iova + ibmr->length) - (ibmr->iova & PAGE_MASK) >
	    (u64)mem->map_npages << PAGE_SHIFT)
		goto out;
	/* Invalid: no copy reads pages now (see kiwi_map_mr_sg). */
	memcpy(mem->pages, mem->map_pages,
	       mem->map_npages * sizeof(*mem->pages));
	mem->npages = mem->map_npages;
	mem->iova = ibmr->iova;
	mem->len = ibmr->length;
	mem->access = access;
	WRITE_ONCE(mem->stag, (mem->stag & ~0xffU) | (key & 0xff));
	ibmr->lkey = mem->stag;
	ibmr->rkey = mem->stag;
	kiwi_mem_set_valid(mem, true);
	rv = 0;
out:
	write_unlock_irqrestore(&mem->lock, flags);
	kiwi_mem_put(mem);
	return rv;
}

/* ---- memory windows ---- */

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

	if (!mem)
		return rv;
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
	kiwi_mw_put_parent(parent);
	kiwi_mem_put(mem);
	return rv;
}

int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibmw->device);
	struct kiwi_mem *mem;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
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

	if (!mw)
		return rv;
	if (!kiwi_mw_bind_ok(mw, qp, b))
		goto out;
	if (b->len) {
		mr = kiwi_mw_parent_get(qp, b);
		if (!mr)
			goto out;
	}
	write_lock_irqsave(&mw->lock, flags);
	rv = kiwi_mw_set(mw, qp, b, mr, &old);
	write_unlock_irqrestore(&mw->lock, flags);
	if (rv)
		kiwi_mw_put_parent(mr);
	kiwi_mw_put_parent(old);
out:
	kiwi_mem_put(mw);
	return rv;
}
