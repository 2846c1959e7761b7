/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the memory layer's files share, and only they include.
 * mem.c owns the regions and their STags (creation, publishing,
 * lookup, teardown, the access checks); place.c copies into and out
 * of them and runs atomics on them; frmr.c and mw.c change what an
 * STag maps (fast registration, memory windows, invalidation).  The
 * latter three need mem.c's internals declared here.  What the rest of
 * the module calls is in kiwi.h.
 */
#ifndef KIWI_MEM_H
#define KIWI_MEM_H

#include "kiwi.h"

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
