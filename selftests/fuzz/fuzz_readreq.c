// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_readreq -- libFuzzer target for the RDMA READ Request body check
 * of include/kiwi/rdmap.h (kiwi_read_req_parse(), run by kmod/rx.c on
 * every READ Request a peer sends, before it queues a response).
 *
 * Input: byte 0 picks the device maximum and the mode; the rest is
 *
 *  - mode 0: the body after the untagged DDP header, as many bytes as
 *    the ULPDU length claims, in a heap buffer of exactly that size (so
 *    AddressSanitizer sees any read past it);
 *  - mode 1: a raw FPDU stream, framed like rx.c frames it: a READ
 *    Request whose header the framer completes is checked the way rx.c
 *    checks it -- the 28 header bytes the framer holds, the length the
 *    MPA header claims.
 *
 * Checks: the verdict is the one an independent model of RFC 5040 4.4
 * gives (length exactly 28, size within the maximum, neither the source
 * nor the sink range past 2^64, a zero size naming no buffer); so an
 * accepted request never wraps, never exceeds the maximum and had
 * exactly its header's length.  The decoded fields re-encode to the
 * input bytes; a refusal names one of the three TERMINATEs rx.c sends
 * for it, and kiwi_term_ctrl() encodes it so that it reads back.
 *
 * The same input also goes through kiwi_imm_parse(), the body check of
 * RFC 7306 Immediate Data (mode 0: as the body; mode 1: for each
 * Immediate Data header the framer completes): accepted exactly when it
 * is 8 bytes, the value from its last four, else the one TERMINATE
 * (DDP untagged, message too long), and never a read past the body.
 *
 * And through the RFC 7306 atomic parsers: kiwi_atomic_req_parse()
 * accepts exactly a 52-byte body with a known operation code, no
 * reserved bits and an 8-byte aligned offset, its fields re-encode to
 * the input, and each refusal is the TERMINATE rx.c sends for it;
 * kiwi_atomic_resp_parse() accepts exactly 12 bytes.  For an accepted
 * request, kiwi_atomic_apply() matches a bit-by-bit model of the masked
 * add and of (compare-and-)swap.
 */
#include "fuzz.h"

#include <kiwi/framer.h>
#include <kiwi/rdmap.h>

static const uint32_t max_sizes[] = {
	KIWI_MAX_MSG_SZ, 0, 1, 4096, 0xffffffffu, 0x7fffffffu, 0x80000001u,
	65536,
};

/* Big-endian, byte by byte: not the parser's way of reading. */
static uint64_t be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* The end of [to, to + size) as a 65-bit number. */
static bool past_2_64(uint64_t to, uint32_t size)
{
	return (unsigned __int128)to + size > ((unsigned __int128)1 << 64);
}

static enum kiwi_rr_why model(const uint8_t *p, uint32_t len, uint32_t max)
{
	uint32_t size;

	if (len != 28)
		return KIWI_RR_BAD_LEN;
	size = (uint32_t)be(p + 12, 4);
	if (size > max)
		return KIWI_RR_TOO_BIG;
	if (past_2_64(be(p + 20, 8), size))
		return KIWI_RR_SRC_WRAP;
	if (past_2_64(be(p + 4, 8), size))
		return KIWI_RR_SINK_WRAP;
	return KIWI_RR_OK;
}

static void check_verdict(const struct kiwi_verdict *v)
{
	uint32_t t = kiwi_term_ctrl(v->layer, v->etype, v->ecode);
	bool nobuf = v->layer == KIWI_TL_DDP &&
		     v->etype == KIWI_DT_UNTAGGED &&
		     v->ecode == KIWI_DC_U_INVALID_MSN_NOBUF;
	bool prot = v->layer == KIWI_TL_RDMAP &&
		    v->etype == KIWI_RT_PROTECTION &&
		    (v->ecode == KIWI_RC_BASE_BOUNDS ||
		     v->ecode == KIWI_RC_TO_WRAP);

	FUZZ_ASSERT(nobuf || prot);
	FUZZ_ASSERT(t >> KIWI_TERM_LAYER_SHIFT == v->layer);
	FUZZ_ASSERT(((t >> KIWI_TERM_ETYPE_SHIFT) & 0xf) == v->etype);
	FUZZ_ASSERT(((t >> KIWI_TERM_ECODE_SHIFT) & 0xff) == v->ecode);
}

/* @p holds the 28 header bytes whenever @len is 28 (rx.c's contract). */
static void check(const uint8_t *p, uint32_t len, uint32_t max)
{
	struct kiwi_read_info ri;
	struct kiwi_verdict v = kiwi_read_req_parse(p, len, max, &ri);
	struct kiwi_read_req back;

	FUZZ_ASSERT(ri.why == model(p, len, max));
	FUZZ_ASSERT(v.ok == (ri.why == KIWI_RR_OK));
	if (!v.ok) {
		check_verdict(&v);
		FUZZ_ASSERT((ri.why == KIWI_RR_BAD_LEN) ==
			    (v.layer == KIWI_TL_DDP));
		FUZZ_ASSERT((ri.why == KIWI_RR_TOO_BIG) ==
			    (v.ecode == KIWI_RC_BASE_BOUNDS));
	}
	if (ri.why == KIWI_RR_BAD_LEN)
		return;
	/* Decoded from the right bytes: they encode back to the input. */
	back.sink_stag = kiwi_cpu32(ri.sink_stag);
	back.sink_to = kiwi_cpu64(ri.sink_to);
	back.size = kiwi_cpu32(ri.size);
	back.src_stag = kiwi_cpu32(ri.src_stag);
	back.src_to = kiwi_cpu64(ri.src_to);
	FUZZ_ASSERT(!memcmp(&back, p, sizeof(back)));
	if (v.ok) {
		FUZZ_ASSERT(len == sizeof(struct kiwi_read_req));
		FUZZ_ASSERT(ri.size <= max);
		FUZZ_ASSERT(!past_2_64(ri.src_to, ri.size));
		FUZZ_ASSERT(!past_2_64(ri.sink_to, ri.size));
	}
}

/* An Immediate Data body: @p holds 8 bytes whenever @len is 8. */
static void check_imm(const uint8_t *p, uint32_t len)
{
	uint32_t imm;
	struct kiwi_verdict v = kiwi_imm_parse(p, len, &imm);

	FUZZ_ASSERT(v.ok == (len == sizeof(struct kiwi_imm)));
	if (v.ok) {
		FUZZ_ASSERT(imm == (uint32_t)be(p + 4, 4));
		return;
	}
	FUZZ_ASSERT(imm == 0);
	FUZZ_ASSERT(v.layer == KIWI_TL_DDP && v.etype == KIWI_DT_UNTAGGED &&
		    v.ecode == KIWI_DC_U_MSG_TOOLONG);
}

/* A bit-at-a-time model of RFC 7306's operations on @old. */
static uint64_t atomic_model(const struct kiwi_atomic_info *ai, uint64_t old)
{
	uint64_t r = 0, c = 0;
	int i;

	if (ai->aop == KIWI_AOP_CMP_SWAP && ((old ^ ai->cmp) & ai->cmp_mask))
		return old;
	if (ai->aop != KIWI_AOP_FETCH_ADD)
		return (old & ~ai->mask) | (ai->data & ai->mask);
	for (i = 0; i < 64; i++) {
		unsigned int a = old >> i & 1, b = ai->data >> i & 1;

		r |= (uint64_t)((a + b + c) & 1) << i;
		c = (a + b + c) >> 1;
		if (ai->mask >> i & 1)
			c = 0;
	}
	return r;
}

static void check_atomic(const uint8_t *p, uint32_t len)
{
	struct kiwi_atomic_info ai;
	struct kiwi_verdict v = kiwi_atomic_req_parse(p, len, &ai);
	__u32 id;
	__u64 orig;
	bool good;

	if (len != sizeof(struct kiwi_atomic_req)) {
		FUZZ_ASSERT(!v.ok && ai.why == KIWI_AR_BAD_LEN);
		FUZZ_ASSERT(v.layer == KIWI_TL_DDP &&
			    v.etype == KIWI_DT_UNTAGGED &&
			    v.ecode == KIWI_DC_U_INVALID_MSN_NOBUF);
	} else {
		good = (be(p, 4) & 0xfffffff0u) == 0 && (p[3] & 0xf) <= 2 &&
		       (be(p + 12, 8) & 7) == 0;
		FUZZ_ASSERT(v.ok == good);
		FUZZ_ASSERT(ai.aop == (p[3] & 0xf) && ai.req_id == be(p + 4, 4) &&
			    ai.stag == be(p + 8, 4) && ai.to == be(p + 12, 8) &&
			    ai.data == be(p + 20, 8) && ai.mask == be(p + 28, 8) &&
			    ai.cmp == be(p + 36, 8) &&
			    ai.cmp_mask == be(p + 44, 8));
		if (!v.ok)
			FUZZ_ASSERT(v.layer == KIWI_TL_RDMAP &&
				    ((v.etype == KIWI_RT_OPERATION &&
				      v.ecode == KIWI_RC_UNEXPECTED_OP) ||
				     (v.etype == KIWI_RT_PROTECTION &&
				      v.ecode == KIWI_RC_BASE_BOUNDS)));
		else
			FUZZ_ASSERT(kiwi_atomic_apply(&ai, ai.cmp ^ ai.data) ==
				    atomic_model(&ai, ai.cmp ^ ai.data) &&
				    kiwi_atomic_apply(&ai, ai.cmp) ==
				    atomic_model(&ai, ai.cmp));
	}
	v = kiwi_atomic_resp_parse(p, len, &id, &orig);
	FUZZ_ASSERT(v.ok == (len == sizeof(struct kiwi_atomic_resp)));
	if (v.ok)
		FUZZ_ASSERT(id == be(p, 4) && orig == be(p + 4, 8));
}

/* Frame @s until a READ Request's header is in; check it as rx.c does. */
static void stream(const uint8_t *s, uint32_t len, uint32_t max)
{
	struct kiwi_framer fr;
	uint32_t off = 0;

	kiwi_fr_init(&fr);
	while (off < len) {
		uint32_t n = kiwi_fr_want(&fr, len - off);

		if (fr.phase == KIWI_FR_DEAD)
			return;
		if (fr.phase != KIWI_FR_DATA)
			memcpy(kiwi_fr_buf(&fr), s + off, n);
		off += n;
		if (kiwi_fr_advance(&fr, n) != KIWI_FR_HDR_DONE)
			continue;
		if (fr.op == KIWI_OP_IMM || fr.op == KIWI_OP_IMM_SE)
			check_imm(fr.hdr.raw + sizeof(struct kiwi_hdr_untagged),
				  sizeof(struct kiwi_imm) + fr.data_rem);
		if (fr.op == KIWI_OP_ATOMIC_REQ)
			check_atomic(fr.hdr.raw +
				     sizeof(struct kiwi_hdr_untagged),
				     sizeof(struct kiwi_atomic_req) +
				     fr.data_rem);
		if (fr.op == KIWI_OP_ATOMIC_RESP)
			check_atomic(fr.hdr.raw +
				     sizeof(struct kiwi_hdr_untagged),
				     sizeof(struct kiwi_atomic_resp) +
				     fr.data_rem);
		if (fr.op != KIWI_OP_READ_REQ)
			continue;
		check(fr.hdr.raw + sizeof(struct kiwi_hdr_untagged),
		      sizeof(struct kiwi_read_req) + fr.data_rem, max);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t max, len;
	uint8_t *body;

	if (size < 1 || size > (1 << 16))
		return 0;
	max = max_sizes[(data[0] >> 1) & 7];
	len = (uint32_t)(size - 1);
	if (data[0] & 1) {
		stream(data + 1, len, max);
		return 0;
	}
	body = malloc(len ? len : 1);
	FUZZ_ASSERT(body);
	memcpy(body, data + 1, len);
	check(body, len, max);
	check_imm(body, len);
	check_atomic(body, len);
	free(body);
	return 0;
}
