/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the memory layer as the rest of the module sees it.  A region
 * or window is named by its STag, and struct kiwi_mem is opaque outside
 * mem.c, place.c, frmr.c and mw.c (mem.h has it): the data path takes
 * one by STag (kiwi_mem_get()), checks an access and gets a generation,
 * and copies through it at that generation; the send queue's work
 * requests change what an STag maps.  Included by those four (through
 * mem.h), rx.c, rxops.c, sq.c, tx.c, fpdu.c, and main.c (the window's
 * size, the leak check at unload).  The memory verbs are in verbs.h.
 */
#ifndef KIWI_STAG_H
#define KIWI_STAG_H

#include <kiwi/rdmap.h>

#include "kiwi.h"

struct kiwi_bind;
struct kiwi_mem;
struct kiwi_qp;

struct kiwi_mw {
	struct ib_mw ibmw;
	struct kiwi_mem *mem;
};

static inline struct kiwi_mw *to_kmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct kiwi_mw, ibmw);
}

/* mem.c: access checks for the data path */
int kiwi_mem_check(struct kiwi_mem *mem, struct ib_pd *pd, u64 addr,
		   u64 len, int access, u64 *gen);
int kiwi_mem_check_qp(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 addr,
		      u64 len, int access, u64 *gen);

/* place.c: placement helpers (copies and atomics) */
bool kiwi_mem_copy_from_skb(struct kiwi_mem *mem, u64 gen, u64 addr,
			    const struct sk_buff *skb, int off, u32 len,
			    u32 *crc);
bool kiwi_mem_copy_out(struct kiwi_mem *mem, u64 gen, u64 addr, void *dst,
		       u32 len, u32 *crc);
bool kiwi_mem_copy_in(struct kiwi_mem *mem, u64 gen, u64 addr,
		      const void *src, u32 len);
bool kiwi_mem_atomic(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 gen,
		     const struct kiwi_atomic_info *ai, u64 *orig);

/* frmr.c, mw.c: work requests that change what an STag maps */
int kiwi_mem_fast_reg(struct kiwi_qp *qp, u32 stag, u32 key, int access);
int kiwi_mem_invalidate(struct kiwi_qp *qp, u32 stag);
int kiwi_mem_bind_mw(struct kiwi_qp *qp, const struct kiwi_bind *b);

/* mem.c: STag lookup, and the check at unload */
struct kiwi_mem *kiwi_mem_get(struct kiwi_device *kdev, u32 stag);
void kiwi_mem_put(struct kiwi_mem *mem);
void kiwi_mem_exit_check(void);

#endif /* KIWI_STAG_H */
