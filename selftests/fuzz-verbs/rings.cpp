// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// rings.cpp -- the geometry of a provider object's mapped rings, read from
// the provider's objects (provider/objects.h) for fuzz_verbs.  Only the
// inline accessors of those classes are used: nothing links against the
// provider, whose objects were created by the copy libibverbs loaded.
#include "rings.h"

#include "objects.h"

namespace {

int fill(const kiwi::Ring &r, const kiwi::Mapping &m, fz_ring *out) noexcept
{
	*out = fz_ring{};
	if (!r.attached())
		return -1;
	auto slot0 = r.slot(0);
	auto whole = m.bytes();

	out->slots = reinterpret_cast<uint8_t *>(slot0.data());
	out->ctl = out->slots - KIWI_RING_CTL_SIZE;
	out->nslots = r.slots();
	out->stride = r.stride();
	out->map = whole.data();
	out->map_len = whole.size();
	return 0;
}

} // namespace

extern "C" int fz_qp_rings(ibv_qp *qp, fz_ring *sq, fz_ring *rq)
{
	kiwi::Qp *q = kiwi::Qp::from(qp);

	if (fill(q->sq_prod.ring(), q->sq_map, sq))
		return -1;
	fill(q->rq_prod.ring(), q->rq_map, rq);
	return 0;
}

extern "C" int fz_cq_ring(ibv_cq *cq, fz_ring *r)
{
	kiwi::Cq *c = kiwi::Cq::from(cq);

	return fill(c->reader.ring(), c->map, r);
}

extern "C" int fz_srq_ring(ibv_srq *srq, fz_ring *r)
{
	kiwi::Srq *s = kiwi::Srq::from(srq);

	return fill(s->prod.ring(), s->map, r);
}
