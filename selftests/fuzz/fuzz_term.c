// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_term -- libFuzzer target for the TERMINATE decoding of
 * include/kiwi/rdmap.h (kiwi_term_parse(), run by kmod/rx.c on every
 * TERMINATE a peer sends).
 *
 * Input: byte 0 picks how many bytes the caller holds; then the 4-byte
 * Terminate Control word; the rest is what followed it in the ULPDU.
 *
 * rx.c keeps only the first KIWI_TERM_MAX_REST bytes after the control
 * word.  So each input is decoded twice: from a heap buffer of exactly
 * those bytes (AddressSanitizer sees any read past them) and from one
 * of all of them, and both must agree -- keeping 48 bytes never changes
 * a verdict.  A third run holds fewer bytes than rx.c would (byte 0):
 * it may only refuse more, never read past what it has.
 *
 * Checks: layer, type and code always read back from the control word
 * (with the M/D/R and reserved bits, it re-encodes to the same word; a
 * word read in Linux siw's bit order, see KIWI_TERM_SIW_M, re-encodes
 * to it that way, and only when the RFC's order refuses it);
 * the verdict is the one an independent model of RFC 5040 4.8 gives; an
 * accepted TERMINATE accounts for every byte after its control word,
 * and its copied DDP and RDMAP headers lie inside the bytes held, sized
 * as the D and R bits and the copied T bit say, inside a DDP segment
 * length (with M) that can hold them.  A refused one vouches for no
 * copied header.
 */
#include "fuzz.h"

#include <kiwi/rdmap.h>

/* What the D and R bits announce after the control word; 0 if short. */
static uint32_t model_need(uint32_t c, const uint8_t *rest, uint32_t len)
{
	uint32_t need = 0;

	if (c & KIWI_TERM_D) {
		if (len < 3)
			return 0;
		need += 2 + ((rest[2] & 0x80) ? 14 : 18);
	}
	if (c & KIWI_TERM_R)
		need += 28;
	return need;
}

/* The verdict, from the full input (@rest holds all @len bytes). */
static enum kiwi_term_why model_rfc(uint32_t c, const uint8_t *rest,
				    uint32_t len)
{
	static const uint8_t types[3] = { 3, 3, 1 };	/* per layer */
	uint32_t layer = c >> 28, etype = (c >> 24) & 0xf, need;

	if (layer > 2)
		return KIWI_TW_LAYER;
	if (etype >= types[layer])
		return KIWI_TW_ETYPE;
	if (c & 0x1fff)
		return KIWI_TW_RSVD;
	if ((c & KIWI_TERM_M) && !(c & KIWI_TERM_D))
		return KIWI_TW_M_NO_D;
	need = model_need(c, rest, len);
	if (((c & KIWI_TERM_D) && (len < 16 || !need)) || len < need)
		return KIWI_TW_SHORT;
	if (len > need)
		return KIWI_TW_LONG;
	if ((c & KIWI_TERM_M) && (uint32_t)(rest[0] << 8 | rest[1]) < need - 2)
		return KIWI_TW_SEGLEN;
	return KIWI_TW_OK;
}

/*
 * Linux siw's word from a little-endian host (see KIWI_TERM_SIW_M in
 * rdmap.h), written again in the RFC's order; ~0 if siw's reserved
 * bits are set or its code is not one the RFCs define (a model of
 * kiwi_term_ecode_known(), from the RFCs' tables).
 */
static uint32_t siw_to_rfc(uint32_t c)
{
	uint32_t layer = (c >> 24) & 0xf, etype = c >> 28;
	uint32_t ecode = (c >> 16) & 0xff;
	int known;

	if (c & 0xf8ff)
		return ~0u;
	if (layer == 0)
		known = ecode <= 9 || ecode == 0xff;
	else if (layer == 1)
		known = etype == 1 ? ecode <= 4 : ecode >= 1 && ecode <= 6;
	else
		known = ecode <= 7;
	if (!known)
		return ~0u;
	return layer << 28 | etype << 24 | ecode << 16 |
	       (c & 0x100 ? KIWI_TERM_M : 0) | (c & 0x200 ? KIWI_TERM_D : 0) |
	       (c & 0x400 ? KIWI_TERM_R : 0);
}

/*
 * The RFC's reading; one the RFC's order refuses for its layer, type or
 * reserved bits is taken in siw's order if that makes a well-formed
 * TERMINATE.  *@siw says which.
 */
static enum kiwi_term_why model(uint32_t c, const uint8_t *rest, uint32_t len,
				int *siw)
{
	enum kiwi_term_why why = model_rfc(c, rest, len);
	uint32_t r;

	*siw = 0;
	if (why < KIWI_TW_LAYER || why > KIWI_TW_RSVD)
		return why;
	r = siw_to_rfc(c);
	if (r == ~0u || model_rfc(r, rest, len) != KIWI_TW_OK)
		return why;
	*siw = 1;
	return KIWI_TW_OK;
}

static void check_info(const struct kiwi_term_info *ti, uint32_t c,
		       uint32_t have, uint32_t len)
{
	uint32_t back = kiwi_term_ctrl(ti->layer, ti->etype, ti->ecode) |
			(ti->m ? KIWI_TERM_M : 0) | (ti->d ? KIWI_TERM_D : 0) |
			(ti->r ? KIWI_TERM_R : 0);

	FUZZ_ASSERT(ti->ctrl == c);
	if (ti->siw_order)	/* read siw's way: so it goes back */
		FUZZ_ASSERT(!ti->why && siw_to_rfc(c) == back);
	else
		FUZZ_ASSERT((back | (c & KIWI_TERM_RSVD)) == c);
	if (ti->why) {
		FUZZ_ASSERT(!ti->ddp_len && !ti->rdma_len);
		return;
	}
	FUZZ_ASSERT(ti->layer <= KIWI_TL_LLP);
	FUZZ_ASSERT(ti->used == len && len <= have);
	FUZZ_ASSERT(len <= KIWI_TERM_MAX_REST);
	FUZZ_ASSERT(ti->ddp_off + ti->ddp_len <= have);
	FUZZ_ASSERT(ti->rdma_off + ti->rdma_len <= have);
	FUZZ_ASSERT(ti->d == (ti->ddp_len != 0));
	FUZZ_ASSERT(ti->r == (ti->rdma_len == KIWI_TERM_RDMA_LEN));
	FUZZ_ASSERT(!ti->rdma_len || ti->rdma_off == (ti->d ? 2 + ti->ddp_len :
							       0));
	if (ti->d) {
		FUZZ_ASSERT(ti->ddp_off == KIWI_TERM_SEGLEN_LEN);
		FUZZ_ASSERT(ti->ddp_len == KIWI_TERM_DDP_T_LEN ||
			    ti->ddp_len == KIWI_TERM_DDP_U_LEN);
	}
	if (ti->m)
		FUZZ_ASSERT(ti->seg_len >= ti->ddp_len + ti->rdma_len);
}

/* Decode with @have of the @len bytes held, in a buffer of that size. */
static void run(const struct kiwi_term *t, const uint8_t *rest, uint32_t have,
		uint32_t len, struct kiwi_term_info *ti)
{
	uint8_t *buf = malloc(have ? have : 1);

	FUZZ_ASSERT(buf);
	memcpy(buf, rest, have);
	kiwi_term_parse(t, buf, have, len, ti);
	check_info(ti, kiwi_be32(t->ctrl), have, len);
	/* Where it says the copied headers are, they are readable. */
	if (ti->ddp_len)
		FUZZ_ASSERT(buf[ti->ddp_off] == rest[ti->ddp_off]);
	if (ti->rdma_len)
		FUZZ_ASSERT(buf[ti->rdma_off + ti->rdma_len - 1] ==
			    rest[ti->rdma_off + ti->rdma_len - 1]);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiwi_term_info kept, all, few;
	const uint8_t *rest;
	struct kiwi_term t;
	uint32_t len, have, less;
	int siw;

	if (size < 5 || size > (1 << 16))
		return 0;
	memcpy(&t, data + 1, sizeof(t));
	rest = data + 5;
	len = (uint32_t)(size - 5);
	have = len < KIWI_TERM_MAX_REST ? len : KIWI_TERM_MAX_REST;

	run(&t, rest, have, len, &kept);
	run(&t, rest, len, len, &all);
	FUZZ_ASSERT(!memcmp(&kept, &all, sizeof(kept)));
	FUZZ_ASSERT(kept.why == model(kiwi_be32(t.ctrl), rest, len, &siw));
	FUZZ_ASSERT(kept.siw_order == siw);

	less = have ? data[0] % (have + 1) : 0;
	run(&t, rest, less, len, &few);
	/* Too few bytes for siw's reading: the RFC's, refused. */
	if (kept.siw_order && !few.siw_order) {
		FUZZ_ASSERT(few.why >= KIWI_TW_LAYER &&
			    few.why <= KIWI_TW_RSVD);
		return 0;
	}
	FUZZ_ASSERT(few.why == kept.why || few.why == KIWI_TW_SHORT);
	FUZZ_ASSERT(few.layer == kept.layer && few.etype == kept.etype &&
		    few.ecode == kept.ecode);
	return 0;
}
