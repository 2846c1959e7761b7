// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_ctrl -- libFuzzer target for the FPDU control-word check of
 * include/kiwi/iwarp.h (kiwi_check_ctrl(), run by kmod/rx.c on the first
 * four bytes of every FPDU a peer sends) and the TERMINATE encoding.
 *
 * Checks, for every 4-byte control word: a word it accepts has a known
 * opcode whose tagged bit is right, and a ULPDU long enough for that
 * opcode's DDP/RDMAP header (so the header bytes rx.c then reads exist);
 * a word it refuses names a layer and error type that exist, and
 * kiwi_term_ctrl() encodes them so that they read back.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiwi_ctrl c;
	struct kiwi_ctrl_check r;
	uint32_t t;

	if (size < sizeof(c))
		return 0;
	memcpy(&c, data, sizeof(c));
	r = kiwi_check_ctrl(&c);
	if (r.ok) {
		uint16_t dr = kiwi_be16(c.ddp_rdmap);

		FUZZ_ASSERT(r.op < KIWI_OP_MAX);
		FUZZ_ASSERT(!!(dr & KIWI_DDP_TAGGED) == kiwi_op_tagged(r.op));
		FUZZ_ASSERT(r.hdr_len == kiwi_hdr_len(r.op));
		FUZZ_ASSERT(r.hdr_len >= sizeof(struct kiwi_ctrl));
		FUZZ_ASSERT((uint32_t)kiwi_be16(c.mpa_len) + KIWI_MPA_HDR_LEN >=
			    r.hdr_len);
		FUZZ_ASSERT((dr & KIWI_DDP_LAST) ||
			    (r.op != KIWI_OP_READ_REQ && r.op != KIWI_OP_TERMINATE));
		return 0;
	}
	FUZZ_ASSERT(r.layer <= KIWI_TL_LLP);
	FUZZ_ASSERT(r.etype <= 2);
	t = kiwi_term_ctrl(r.layer, r.etype, r.ecode);
	FUZZ_ASSERT(t >> KIWI_TERM_LAYER_SHIFT == r.layer);
	FUZZ_ASSERT(((t >> KIWI_TERM_ETYPE_SHIFT) & 0xf) == r.etype);
	FUZZ_ASSERT(((t >> KIWI_TERM_ECODE_SHIFT) & 0xff) == r.ecode);
	return 0;
}
