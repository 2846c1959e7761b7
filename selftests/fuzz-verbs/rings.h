/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * rings.h -- where the kiwi provider mapped a verbs object's rings, for
 * fuzz_verbs to write WQEs (and garbage) straight into them.  rings.cpp
 * reads the provider's own objects (provider/objects.h, same build), so
 * it is only valid for objects the kiwi provider of this tree created.
 */
#ifndef KIWI_FUZZ_RINGS_H
#define KIWI_FUZZ_RINGS_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fz_ring {
	uint8_t *ctl;		/* struct kiwi_ring_ctl */
	uint8_t *slots;		/* slot 0 */
	uint32_t nslots;	/* a power of two; 0: no ring */
	uint32_t stride;
	void *map;		/* the provider's whole mapping */
	size_t map_len;
};

/* 0, or -1 if the object has no ring of that kind. */
int fz_qp_rings(struct ibv_qp *qp, struct fz_ring *sq, struct fz_ring *rq);
int fz_cq_ring(struct ibv_cq *cq, struct fz_ring *r);
int fz_srq_ring(struct ibv_srq *srq, struct fz_ring *r);

#ifdef __cplusplus
}
#endif

#endif
