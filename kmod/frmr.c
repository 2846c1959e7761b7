// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: fast registration for kernel consumers (ib_alloc_mr(),
 * ib_map_mr_sg(), IB_WR_REG_MR).  Apart from mem.c because its region
 * changes what it maps by work request, in send queue order, long after
 * it was created, each time as a new generation (mem.c's top).
 * Invalidation (IB_WR_LOCAL_INV and the like), which also ends type 2
 * windows, is in mw.c.
 */
#include <linux/slab.h>

#include "mem.h"
#include "qp.h"
#include "verbs.h"

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

	if (type != IB_MR_TYPE_MEM_REG) {
		kiwi_dev_dbg(kdev, "MR type %d: IB_MR_TYPE_MEM_REG only\n", type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > KIWI_MAX_FRMR_PAGES) {
		kiwi_dev_dbg(kdev, "fast-register MR of %u pages: 1 to %u\n",
			     max_num_sg, KIWI_MAX_FRMR_PAGES);
		return ERR_PTR(-EINVAL);
	}

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
	if (ibmr->page_size != PAGE_SIZE) {
		kiwi_dev_dbg(mem->kdev, "MR %#x: page size %u, only %lu\n",
			     mem->stag, ibmr->page_size, PAGE_SIZE);
		return -EINVAL;
	}
	mem->map_npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, kiwi_set_page);
}

/* Under mem->lock: why IB_WR_REG_MR by @qp may not register @mem, or NULL. */
static const char *kiwi_fast_reg_why(struct kiwi_mem *mem, struct kiwi_qp *qp,
				     int access)
{
	struct ib_mr *ibmr = mem->ibmr;

	if (!mem->frmr)
		return "not a fast-register MR";
	if (mem->pd != qp->ibqp.pd)
		return "of another PD";
	if (mem->valid)
		return "still valid";
	if (access & ~KIWI_ACCESS_SUPPORTED)
		return "access bits not supported";
	if (ibmr->page_size != PAGE_SIZE)
		return "page size not PAGE_SIZE";
	if (ibmr->iova + ibmr->length < ibmr->iova ||
	    PAGE_ALIGN(ibmr->iova + ibmr->length) - (ibmr->iova & PAGE_MASK) >
	    (u64)mem->map_npages << PAGE_SHIFT)
		return "range beyond the pages mapped";
	return NULL;
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
	const char *why;
	int rv = -EINVAL;

	if (!mem) {
		kiwi_qp_dbg(qp, "REG_MR of STag %#x refused: no such MR\n", stag);
		return rv;
	}
	ibmr = mem->ibmr;
	write_lock_irqsave(&mem->lock, flags);
	why = kiwi_fast_reg_why(mem, qp, access);
	if (why) {
		kiwi_qp_dbg(qp, "REG_MR of STag %#x refused: %s\n", stag, why);
		goto out;
	}
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
