/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the memory layer's files share, and only they include.
 * mem.c owns the regions and their STags (creation, publishing,
 * lookup, teardown, the access checks); place.c copies into and out
 * of them and runs atomics on them; frmr.c and mw.c change what an
 * STag maps (fast registration, memory windows, invalidation).  The
 * latter three need mem.c's internals declared here.  What the rest of
 * the module calls is in stag.h, the memory verbs in verbs.h.
 */
#ifndef KIWI_MEM_H
#define KIWI_MEM_H

#include <rdma/ib_umem.h>

#include "stag.h"

/*
 * A registered memory region as seen by placement and transmit: the
 * object behind an STag.  Looked up under RCU from the receive path,
 * so it is reference counted and freed after a grace period.  The data
 * path may hold a reference indefinitely (a stalled peer); what keeps
 * it from using memory that is gone is @gen, see mem.c.
 */
struct kiwi_mem {
	struct kiwi_device *kdev;
	struct kref ref;
	struct rcu_head rcu;
	rwlock_t lock;			/* copies (read) vs. changes (write) */
	/*
	 * Under lock: bumped by every change.  64 bits, so no sequence of
	 * changes (window rebinds are cheap and unprivileged) can wrap it
	 * back to a value a stalled message checked.
	 */
	u64 gen;
	u32 stag;			/* index << 8 | key */
	bool valid;			/* under lock: STag usable */
	bool frmr;			/* fast-register region, of ibmr: */
	struct ib_mr *ibmr;
	u32 max_pages;			/* FRMR page list capacity */
	struct ib_pd *pd;
	int access;			/* IB_ACCESS_* */
	u64 iova;			/* first byte addressed by the STag */
	u64 len;
	/*
	 * Page array covering [iova, iova + len): pages[i] backs the page
	 * starting at (iova & PAGE_MASK) + i * PAGE_SIZE.  Kernel DMA MRs
	 * (pages == NULL) address kernel virtual memory directly.
	 */
	struct page **pages;
	unsigned long npages;
	/*
	 * FRMR only: the page list ib_map_mr_sg() set up, copied to pages
	 * by the next IB_WR_REG_MR.  Kept apart because a consumer may map
	 * a region that is still valid and invalidate it with a LOCAL_INV
	 * posted just before its REG_MR (ib_iser does), while placement
	 * into the valid region still reads pages.
	 */
	struct page **map_pages;
	unsigned long map_npages;
	struct ib_umem *umem;
	/*
	 * Memory windows (mw_type 1 or 2; 0 for a region).  While bound
	 * (valid), a window addresses [iova, iova + len), which maps to
	 * [base, ...) of parent, a user region it holds a reference and a
	 * count in parent->nr_mw on; qp_token names the QP a type 2
	 * window is bound to.  Under lock, like valid.
	 */
	u8 mw_type;
	bool mw_dead;			/* deallocated: binds refused */
	struct kiwi_mem *parent;
	u64 base;
	u64 qp_token;
	atomic_t nr_mw;			/* region: windows bound to it */
};

struct kiwi_mr {
	struct ib_mr ibmr;
	struct kiwi_mem *mem;
};

static inline struct kiwi_mr *to_kmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct kiwi_mr, ibmr);
}

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

/* mem.c: making, publishing, finding and ending regions (frmr.c, mw.c) */
struct kiwi_mem *kiwi_mem_alloc(struct kiwi_device *kdev, struct ib_pd *pd,
				int access);
void kiwi_mem_publish(struct kiwi_mem *mem, bool valid);
void kiwi_mem_set_valid(struct kiwi_mem *mem, bool valid);
struct kiwi_mem *kiwi_mem_lookup(struct kiwi_device *kdev, u32 stag,
				 bool match_key);
void kiwi_mem_destroy(struct kiwi_mem *mem);
struct kiwi_mr *kiwi_mr_create(struct kiwi_mem *mem);

/* mem.c: the access check, under mem->lock (place.c's atomics) */
int kiwi_mem_why(struct kiwi_mem *mem, struct ib_pd *pd, struct kiwi_qp *qp,
		 u64 addr, u64 len, int access);

#endif /* KIWI_MEM_H */
