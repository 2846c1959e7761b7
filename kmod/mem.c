// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: memory registration and STag management.
 *
 * An STag is (24-bit index << 8 | 8-bit key).  The index names a slot in
 * the device's mem_xa; the key, chosen at random per registration, makes
 * stale or guessed STags miss.  The receive path looks STags up under RCU
 * and holds a reference only while placing one segment, so deregistration
 * can simply wait for those references to drain.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kiwi.h"

#define KIWI_ACCESS_SUPPORTED                                                 \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |                     \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_RELAXED_ORDERING)

static struct kiwi_mem *kiwi_mem_alloc(struct kiwi_device *kdev,
				       struct ib_pd *pd, int access)
{
	struct kiwi_mem *mem;
	u32 idx;
	int rv;

	if (!kiwi_res_get(&kdev->num_mr, kdev->lim.max_mr))
		return ERR_PTR(-ENOMEM);

	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem) {
		atomic_dec(&kdev->num_mr);
		return ERR_PTR(-ENOMEM);
	}
	mem->kdev = kdev;
	mem->pd = pd;
	mem->access = access;
	kref_init(&mem->ref);

	/* Not yet visible: the slot holds NULL until kiwi_mem_publish(). */
	rv = xa_alloc_cyclic(&kdev->mem_xa, &idx, NULL,
			     XA_LIMIT(1, KIWI_STAG_INDEX_MAX), &kdev->mem_next,
			     GFP_KERNEL);
	if (rv < 0) {
		kfree(mem);
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

static void kiwi_mem_release(struct kref *ref)
{
	complete(container_of(ref, struct kiwi_mem, ref)->drained);
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
	if (mem && ((match_key && mem->stag != stag) ||
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
 * Unpublish the STag, wait until no placement or transmit still uses the
 * memory, then free it.  Sleeps.  The structure itself outlives an RCU
 * grace period, since a concurrent lookup may still be reading it.
 */
static void kiwi_mem_destroy(struct kiwi_mem *mem)
{
	struct kiwi_device *kdev = mem->kdev;
	DECLARE_COMPLETION_ONSTACK(drained);

	xa_erase(&kdev->mem_xa, mem->stag >> 8);
	WRITE_ONCE(mem->valid, false);
	mem->drained = &drained;
	kiwi_mem_put(mem);
	wait_for_completion(&drained);

	if (mem->umem)
		ib_umem_release(mem->umem);
	kvfree(mem->pages);
	kfree_rcu(mem, rcu);
	atomic_dec(&kdev->num_mr);
}

static struct kiwi_mr *kiwi_mr_create(struct kiwi_mem *mem)
{
	struct kiwi_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

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
				    GFP_KERNEL);
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
		return ERR_PTR(access & IB_ACCESS_REMOTE_ATOMIC ?
			       -EOPNOTSUPP : -EINVAL);
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

int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct kiwi_mr *mr = to_kmr(ibmr);

	kiwi_mem_destroy(mr->mem);
	kfree(mr);
	return 0;
}

/* ---- placement helpers for the data path ---- */

/*
 * Check that [addr, addr + len) lies inside @mem, which must belong to
 * @pd and grant @access.  Returns 0 or the RDMAP error code (enum
 * kiwi_rdmap_ecode) that describes the violation.
 */
int kiwi_mem_check(struct kiwi_mem *mem, struct ib_pd *pd, u64 addr,
		   u64 len, int access)
{
	if (!smp_load_acquire(&mem->valid))
		return KIWI_RC_INVALID_STAG;
	if (mem->pd != pd)
		return KIWI_RC_STAG_NOT_ASSOC;
	if ((mem->access & access) != access)
		return KIWI_RC_ACCESS_RIGHTS;
	if (addr + len < addr)
		return KIWI_RC_TO_WRAP;
	if (addr < mem->iova || addr + len - mem->iova > mem->len)
		return KIWI_RC_BASE_BOUNDS;
	return 0;
}

/* Page backing @addr of a user region; the caller checked bounds. */
struct page *kiwi_mem_page(struct kiwi_mem *mem, u64 addr)
{
	return mem->pages[(addr >> PAGE_SHIFT) - (mem->iova >> PAGE_SHIFT)];
}

/*
 * Copy @len bytes from @src to @addr in @mem, extending *@crc over them
 * in the same pass unless @crc is NULL.  Kernel DMA regions address
 * kernel memory.
 */
static void kiwi_mem_place(struct kiwi_mem *mem, u64 addr, const u8 *src,
			   u32 len, u32 *crc)
{
	while (len) {
		u32 pg_off = offset_in_page(addr);
		u32 chunk = min_t(u32, len, PAGE_SIZE - pg_off);
		void *to;

		if (mem->pages)
			to = kmap_local_page(kiwi_mem_page(mem, addr)) + pg_off;
		else
			to = (void *)(uintptr_t)addr;
		kiwi_crc_copy_mem(to, src, chunk, crc);
		if (mem->pages)
			kunmap_local(to);
		addr += chunk;
		src += chunk;
		len -= chunk;
	}
}

/*
 * Copy @len bytes at @off of @skb to @addr in @mem, extending *@crc over
 * the placed bytes unless @crc is NULL.  The caller checked the bounds of
 * both.  The skb is read a piece (linear part, page fragment) at a time.
 */
void kiwi_mem_copy_from_skb(struct kiwi_mem *mem, u64 addr,
			    const struct sk_buff *skb, int off, u32 len,
			    u32 *crc)
{
	struct skb_seq_state st;
	const u8 *src;
	u32 done = 0, n;

	skb_prepare_seq_read((struct sk_buff *)skb, off, off + len, &st);
	while (done < len && (n = skb_seq_read(done, &src, &st))) {
		n = min(n, len - done);
		kiwi_mem_place(mem, addr + done, src, n, crc);
		done += n;
	}
	skb_abort_seq_read(&st);
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
	mr = mem->pages ? kiwi_mr_create(mem) : NULL;
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

	if (mem->npages >= mem->max_pages)
		return -ENOMEM;
	mem->pages[mem->npages++] = virt_to_page((void *)(uintptr_t)addr);
	return 0;
}

int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct kiwi_mem *mem = to_kmr(ibmr)->mem;

	/* Placement indexes pages by PAGE_SIZE distance from the iova. */
	if (ibmr->page_size != PAGE_SIZE || READ_ONCE(mem->valid))
		return -EINVAL;
	mem->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, kiwi_set_page);
}

/*
 * IB_WR_REG_MR for the FRMR named by @stag (its key is about to change,
 * so only the index counts): give the region the iova, length and pages
 * ib_map_mr_sg() set up, @access, and the new @key; then make it valid.
 * Lookups that see the new STag see the new fields (release/acquire on
 * ->valid through kiwi_mem_check()).
 */
int kiwi_mem_fast_reg(struct kiwi_qp *qp, u32 stag, u32 key, int access)
{
	struct kiwi_mem *mem = kiwi_mem_lookup(qp->kdev, stag, false);
	struct ib_mr *ibmr;
	int rv = -EINVAL;

	if (!mem)
		return rv;
	ibmr = mem->ibmr;
	if (!mem->frmr || mem->pd != qp->ibqp.pd || READ_ONCE(mem->valid) ||
	    (access & ~KIWI_ACCESS_SUPPORTED) || ibmr->page_size != PAGE_SIZE ||
	    ibmr->iova + ibmr->length < ibmr->iova ||
	    PAGE_ALIGN(ibmr->iova + ibmr->length) - (ibmr->iova & PAGE_MASK) >
	    (u64)mem->npages << PAGE_SHIFT)
		goto out;
	mem->iova = ibmr->iova;
	mem->len = ibmr->length;
	mem->access = access;
	WRITE_ONCE(mem->stag, (mem->stag & ~0xffU) | (key & 0xff));
	ibmr->lkey = mem->stag;
	ibmr->rkey = mem->stag;
	smp_store_release(&mem->valid, true);
	rv = 0;
out:
	kiwi_mem_put(mem);
	return rv;
}

/*
 * Invalidate @stag on behalf of @qp: LOCAL_INV, READ with invalidate, or
 * a peer's SEND with invalidate.  Only fast-register regions of the QP's
 * protection domain can be invalidated.
 */
int kiwi_mem_invalidate(struct kiwi_qp *qp, u32 stag)
{
	struct kiwi_mem *mem = kiwi_mem_get(qp->kdev, stag);
	int rv = -EINVAL;

	if (!mem)
		return rv;
	if (mem->frmr && mem->pd == qp->ibqp.pd && READ_ONCE(mem->valid)) {
		WRITE_ONCE(mem->valid, false);
		rv = 0;
	}
	kiwi_mem_put(mem);
	return rv;
}
