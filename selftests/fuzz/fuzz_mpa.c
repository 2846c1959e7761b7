// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_mpa -- libFuzzer target for the MPA request/reply parser of
 * include/kiwi/iwarp.h (kiwi_mpa_parse(), the code kmod/cm.c runs on
 * every frame a peer sends during connection setup), RFC 6581 private
 * data included.
 *
 * Input: byte 0 chooses request or reply; the rest is the frame as it
 * came off the wire (header, then private data).  Beyond "no crash, no
 * out-of-bounds read" (ASan, UBSan), it checks what the kernel relies
 * on: an accepted frame's consumer private data lies inside the private
 * data it declared, within KIWI_MPA_MAX_PD; and a frame rebuilt from the
 * parse (kiwi_mpa_build(), kiwi_mpa_v2_build()) parses back the same.
 */
#include "fuzz.h"

static void check_roundtrip(const struct kiwi_mpa_info *a, bool req,
			    const uint8_t *ulp)
{
	uint8_t f[sizeof(struct kiwi_mpa_rr) + KIWI_MPA_MAX_PD];
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_info b;
	uint8_t flags = (a->crc ? KIWI_MPA_FLAG_C : 0) |
			(a->large ? KIWI_MPA_FLAG_LARGE : 0) |
			(a->reject ? KIWI_MPA_FLAG_R : 0) |
			(a->enhanced ? KIWI_MPA_FLAG_ENH : 0);
	uint32_t off = 0;

	kiwi_mpa_build(&rr, req, a->rev, flags, a->pd_len);
	memcpy(f, &rr, sizeof(rr));
	if (a->enhanced) {
		struct kiwi_mpa_v2 v2 = kiwi_mpa_v2_build(a->ird, a->ord,
							  a->p2p, a->rtr);

		memcpy(f + sizeof(rr), &v2, sizeof(v2));
		off = sizeof(v2);
	}
	memcpy(f + sizeof(rr) + off, ulp, a->ulp_pd_len);
	FUZZ_ASSERT(kiwi_mpa_parse((void *)f, f + sizeof(rr), a->pd_len, req,
				   &b) == KIWI_MPA_OK);
	FUZZ_ASSERT(b.rev == a->rev && b.crc == a->crc && b.large == a->large &&
		    b.reject == a->reject && b.enhanced == a->enhanced &&
		    b.p2p == a->p2p && b.rtr == a->rtr && b.ird == a->ird &&
		    b.ord == a->ord && b.pd_len == a->pd_len &&
		    b.ulp_pd_off == a->ulp_pd_off &&
		    b.ulp_pd_len == a->ulp_pd_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_info info;
	const uint8_t *pd;
	uint32_t avail;
	bool req;

	if (size < 1 + sizeof(rr))
		return 0;
	req = data[0] & 1;
	memcpy(&rr, data + 1, sizeof(rr));
	pd = data + 1 + sizeof(rr);
	avail = size - 1 - sizeof(rr);
	if (avail > KIWI_MPA_MAX_PD)
		avail = KIWI_MPA_MAX_PD;
	/* The kernel reads pd_len bytes (capped) before it parses. */
	if (avail < kiwi_be16(rr.pd_len) && kiwi_be16(rr.pd_len) <= KIWI_MPA_MAX_PD)
		return 0;
	if (kiwi_mpa_parse(&rr, pd, avail, req, &info) != KIWI_MPA_OK)
		return 0;
	FUZZ_ASSERT(info.pd_len <= KIWI_MPA_MAX_PD);
	FUZZ_ASSERT(info.ulp_pd_off + info.ulp_pd_len == info.pd_len);
	FUZZ_ASSERT(info.rev == KIWI_MPA_REV1 || info.rev == KIWI_MPA_REV2);
	FUZZ_ASSERT(info.markers == !!(rr.flags & KIWI_MPA_FLAG_M));
	check_roundtrip(&info, req, pd + info.ulp_pd_off);
	return 0;
}
