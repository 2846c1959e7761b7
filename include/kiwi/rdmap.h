/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the bodies of the two RDMAP messages whose fixed header is
 * followed by more bytes a peer chooses (RFC 5040 section 4) -- the RDMA
 * READ Request (section 4.4) and the TERMINATE message (section 4.8) --
 * decoded and validated from plain bytes.
 *
 * The receive path (kmod/rx.c) runs these on every READ Request and
 * TERMINATE; the unit tests (selftests/wire/rdmap.c) and the fuzz targets
 * (selftests/fuzz/fuzz_readreq.c, fuzz_term.c) run them in user space.
 * Nothing here looks at QP state or memory registrations: what needs
 * them (STag lookup, IRD, access rights) stays in rx.c, which applies
 * these verdicts where the order of its checks puts them.
 *
 * Compiles in the kernel and in user space, like iwarp.h.
 */
#ifndef KIWI_RDMAP_H
#define KIWI_RDMAP_H

#include "iwarp.h"

/*
 * Largest message the device takes (ib_device_attr.max_msg_sz): 2 GiB,
 * because a work completion's byte_len is 32 bits.  A READ Request for
 * more is refused before any region is touched.
 */
#define KIWI_MAX_MSG_SZ		0x80000000U

/*
 * A TERMINATE to send, or none: what a validator found wrong with a
 * message, in RFC 5040 section 4.8 terms.
 */
struct kiwi_verdict {
	__u8 layer;
	__u8 etype;
	__u8 ecode;
	bool ok;
};

static inline struct kiwi_verdict kiwi_verdict_term(__u8 layer, __u8 etype,
						    __u8 ecode)
{
	struct kiwi_verdict v = {
		.layer = layer, .etype = etype, .ecode = ecode, .ok = false,
	};

	return v;
}

/* ---- RDMA READ Request (RFC 5040 section 4.4) ---- */

/* Which rule a READ Request broke (for tests and logs; v carries the code). */
enum kiwi_rr_why {
	KIWI_RR_OK = 0,
	KIWI_RR_BAD_LEN,	/* body is not exactly the 28-byte header */
	KIWI_RR_TOO_BIG,	/* RDMA Read Message Size beyond max_size */
	KIWI_RR_SRC_WRAP,	/* Data Source TO + size beyond 2^64 */
	KIWI_RR_SINK_WRAP,	/* Data Sink TO + size beyond 2^64 */
};

struct kiwi_read_info {
	__u32 sink_stag;
	__u64 sink_to;
	__u32 size;
	__u32 src_stag;
	__u64 src_to;
	enum kiwi_rr_why why;
};

/* @to + @len ends past 2^64 (an end of exactly 2^64 is fine). */
static inline bool kiwi_to_wraps(__u64 to, __u32 len)
{
	return len && to + len - 1 < to;
}

static inline __u64 kiwi_get_be64(const __u8 *p)
{
	__be64 v;

	memcpy(&v, p, sizeof(v));
	return kiwi_be64(v);
}

static inline __u32 kiwi_get_be32(const __u8 *p)
{
	__be32 v;

	memcpy(&v, p, sizeof(v));
	return kiwi_be32(v);
}

/*
 * Decode and check the body of a READ Request: the @len bytes at @p that
 * follow its untagged DDP header, as the MPA ULPDU length says.  @p is
 * read only when @len is exactly sizeof(struct kiwi_read_req), so the
 * caller may pass a longer claimed @len over a 28-byte buffer (rx.c
 * holds the header, not the excess).  @max_size is the device's largest
 * message.
 *
 * The codes are the ones rx.c always sent: a body of any other length
 * has no READ queue entry to go into (DDP untagged, no buffer -- the
 * header fixed the length, so anything else is not a READ Request this
 * queue can hold); a size or a source range the region check would
 * refuse gets that refusal (RDMAP remote protection, base/bounds or TO
 * wrap); a sink range that wraps names no buffer of the requester's and
 * is refused the same way.  A zero-length READ names no buffer at all
 * (RFC 5040 section 5.4.2): its STags and TOs are not looked at.
 */
static inline struct kiwi_verdict
kiwi_read_req_parse(const __u8 *p, __u32 len, __u32 max_size,
		    struct kiwi_read_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	if (len != sizeof(struct kiwi_read_req)) {
		ri->why = KIWI_RR_BAD_LEN;
		return kiwi_verdict_term(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					 KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	ri->sink_stag = kiwi_get_be32(p + offsetof(struct kiwi_read_req,
						   sink_stag));
	ri->sink_to = kiwi_get_be64(p + offsetof(struct kiwi_read_req,
						 sink_to));
	ri->size = kiwi_get_be32(p + offsetof(struct kiwi_read_req, size));
	ri->src_stag = kiwi_get_be32(p + offsetof(struct kiwi_read_req,
						  src_stag));
	ri->src_to = kiwi_get_be64(p + offsetof(struct kiwi_read_req,
						src_to));
	if (ri->size > max_size)
		ri->why = KIWI_RR_TOO_BIG;
	else if (kiwi_to_wraps(ri->src_to, ri->size))
		ri->why = KIWI_RR_SRC_WRAP;
	else if (kiwi_to_wraps(ri->sink_to, ri->size))
		ri->why = KIWI_RR_SINK_WRAP;
	switch (ri->why) {
	case KIWI_RR_TOO_BIG:
		return kiwi_verdict_term(KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
					 KIWI_RC_BASE_BOUNDS);
	case KIWI_RR_SRC_WRAP:
	case KIWI_RR_SINK_WRAP:
		return kiwi_verdict_term(KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
					 KIWI_RC_TO_WRAP);
	default:
		return (struct kiwi_verdict){ .ok = true };
	}
}

/* ---- TERMINATE (RFC 5040 section 4.8) ---- */

/*
 * After the Terminate Control word, depending on its header control
 * bits: with D, the 2-byte DDP Segment Length (meaningful if M is set)
 * and the DDP header of the offending segment, tagged or untagged as its
 * own T bit says; with R, the 28-byte RDMAP header of the offending
 * READ Request.  Nothing else may follow.
 */
#define KIWI_TERM_SEGLEN_LEN	2
#define KIWI_TERM_DDP_T_LEN	(sizeof(struct kiwi_hdr_tagged) - \
				 KIWI_MPA_HDR_LEN)		/* 14 */
#define KIWI_TERM_DDP_U_LEN	(sizeof(struct kiwi_hdr_untagged) - \
				 KIWI_MPA_HDR_LEN)		/* 18 */
#define KIWI_TERM_RDMA_LEN	sizeof(struct kiwi_read_req)	/* 28 */
/* Most a well-formed TERMINATE carries after its control word. */
#define KIWI_TERM_MAX_REST	(KIWI_TERM_SEGLEN_LEN + KIWI_TERM_DDP_U_LEN + \
				 KIWI_TERM_RDMA_LEN)
#define KIWI_TERM_RSVD		0x00001fff

/*
 * Which rule a received TERMINATE broke.  None is answered: a TERMINATE
 * ends the stream whatever it says (RFC 5040 section 7.2), so these are
 * only logged.
 */
enum kiwi_term_why {
	KIWI_TW_OK = 0,
	KIWI_TW_LAYER,		/* unknown Terminate Layer */
	KIWI_TW_ETYPE,		/* unknown Error Type for that layer */
	KIWI_TW_RSVD,		/* reserved bits set */
	KIWI_TW_M_NO_D,		/* segment length valid, but none sent */
	KIWI_TW_SHORT,		/* fewer bytes than the D/R bits announce */
	KIWI_TW_LONG,		/* more bytes than the D/R bits announce */
	KIWI_TW_SEGLEN,		/* segment shorter than its copied headers */
};

struct kiwi_term_info {
	__u32 ctrl;		/* Terminate Control as received */
	__u8 layer;
	__u8 etype;
	__u8 ecode;
	bool m, d, r;
	__u16 seg_len;		/* DDP Segment Length, if d */
	__u32 ddp_off;		/* copied DDP header in @rest: off, len */
	__u32 ddp_len;
	__u32 rdma_off;		/* copied RDMAP header in @rest: off, len */
	__u32 rdma_len;
	__u32 used;		/* bytes the D and R bits account for */
	enum kiwi_term_why why;
	bool siw_order;		/* fields read in Linux siw's bit order */
};

/*
 * Linux siw declares the Terminate Control fields as C bitfields, in an
 * order that gives RFC 5040's layout only on big-endian hosts.  From a
 * little-endian one (x86, arm64) the Layer is the low nibble of the
 * first byte and the Error Type the high one, and M, D and R are the
 * three lowest bits of the third byte; the Error Code byte is where the
 * RFC puts it.  Its DDP "no buffer" TERMINATE reads 0x21020300 where
 * the RFC's would be 0x1202c000.
 */
#define KIWI_TERM_SIW_M		0x00000100
#define KIWI_TERM_SIW_D		0x00000200
#define KIWI_TERM_SIW_R		0x00000400
#define KIWI_TERM_SIW_RSVD	0x0000f8ff

static inline bool kiwi_term_etype_known(__u8 layer, __u8 etype)
{
	switch (layer) {
	case KIWI_TL_RDMAP:
		return etype <= KIWI_RT_OPERATION;
	case KIWI_TL_DDP:
		return etype <= KIWI_DT_UNTAGGED;
	default:	/* LLP: only type 0 (RFC 5044 section 8) */
		return etype == 0;
	}
}

/* Lay out the copied headers the D and R bits announce; false if short. */
static inline bool kiwi_term_layout(struct kiwi_term_info *ti,
				    const __u8 *rest, __u32 have, __u32 len)
{
	__u32 at = 0;

	if (ti->d) {
		if (len < KIWI_TERM_SEGLEN_LEN + KIWI_TERM_DDP_T_LEN ||
		    have < KIWI_TERM_SEGLEN_LEN + 1)
			return false;
		ti->seg_len = (__u16)(rest[0] << 8 | rest[1]);
		at = KIWI_TERM_SEGLEN_LEN;
		/* The copied DDP control field's T bit sizes the header. */
		ti->ddp_len = (rest[at] & (KIWI_DDP_TAGGED >> 8)) ?
			      KIWI_TERM_DDP_T_LEN : KIWI_TERM_DDP_U_LEN;
		ti->ddp_off = at;
		at += ti->ddp_len;
	}
	if (ti->r) {
		ti->rdma_off = at;
		ti->rdma_len = KIWI_TERM_RDMA_LEN;
		at += ti->rdma_len;
	}
	ti->used = at;
	return at <= len && at <= have;
}

/*
 * Whether @ecode is one RFC 5040 (RDMAP), RFC 5041 (DDP) or RFC 6581
 * (MPA) defines for that layer and type.  Only the reading in siw's
 * order asks it: a word that makes sense neither way is not taken for
 * siw's.
 */
static inline bool kiwi_term_ecode_known(__u8 layer, __u8 etype, __u8 ecode)
{
	switch (layer) {
	case KIWI_TL_RDMAP:
		return ecode <= KIWI_RC_CANT_INVALIDATE ||
		       ecode == KIWI_RC_UNSPECIFIED;
	case KIWI_TL_DDP:
		if (etype == KIWI_DT_TAGGED)
			return ecode <= KIWI_DC_T_VERSION;
		return ecode >= KIWI_DC_U_INVALID_QN &&
		       ecode <= KIWI_DC_U_VERSION;
	default:
		return ecode <= KIWI_LC_NO_MATCHING_RTR;
	}
}

/* What is wrong with the fields in @ti and the bytes after them, if anything. */
static inline enum kiwi_term_why
kiwi_term_check(struct kiwi_term_info *ti, bool rsvd, const __u8 *rest,
		__u32 have, __u32 len)
{
	if (ti->layer > KIWI_TL_LLP)
		return KIWI_TW_LAYER;
	if (!kiwi_term_etype_known(ti->layer, ti->etype))
		return KIWI_TW_ETYPE;
	if (rsvd)
		return KIWI_TW_RSVD;
	if (ti->m && !ti->d)
		return KIWI_TW_M_NO_D;
	if (!kiwi_term_layout(ti, rest, have, len))
		return KIWI_TW_SHORT;
	if (len > ti->used)
		return KIWI_TW_LONG;
	/* The offending segment held at least the headers copied from it. */
	if (ti->m && (__u32)ti->seg_len < ti->ddp_len + ti->rdma_len)
		return KIWI_TW_SEGLEN;
	return KIWI_TW_OK;
}

/* Linux siw's word (see KIWI_TERM_SIW_M) in the RFC's order, reserved bits dropped. */
static inline __u32 kiwi_term_from_siw(__u32 c)
{
	return ((c >> KIWI_TERM_ETYPE_SHIFT) & 0xf) << KIWI_TERM_LAYER_SHIFT |
	       (c >> KIWI_TERM_LAYER_SHIFT) << KIWI_TERM_ETYPE_SHIFT |
	       (c & (0xffu << KIWI_TERM_ECODE_SHIFT)) |
	       (c & KIWI_TERM_SIW_M ? KIWI_TERM_M : 0) |
	       (c & KIWI_TERM_SIW_D ? KIWI_TERM_D : 0) |
	       (c & KIWI_TERM_SIW_R ? KIWI_TERM_R : 0);
}

/*
 * @ti filled from the RFC-ordered word @w (and @rsvd, whether reserved
 * bits were set), and what is wrong with it, if anything.
 */
static inline enum kiwi_term_why
kiwi_term_read(struct kiwi_term_info *ti, __u32 w, bool rsvd,
	       const __u8 *rest, __u32 have, __u32 len)
{
	memset(ti, 0, sizeof(*ti));
	ti->layer = w >> KIWI_TERM_LAYER_SHIFT;
	ti->etype = (w >> KIWI_TERM_ETYPE_SHIFT) & 0xf;
	ti->ecode = (w >> KIWI_TERM_ECODE_SHIFT) & 0xff;
	ti->m = w & KIWI_TERM_M;
	ti->d = w & KIWI_TERM_D;
	ti->r = w & KIWI_TERM_R;
	return kiwi_term_check(ti, rsvd, rest, have, len);
}

/*
 * Decode a received TERMINATE: its control word @t and the bytes after
 * it, @len of them by the MPA ULPDU length, of which the first @have
 * are at @rest (the caller keeps at least min(@len, KIWI_TERM_MAX_REST);
 * nothing past @have is read).  The result is the peer's layer, type
 * and code -- always, so the caller can report them -- and where the
 * copied headers are, only when the message is well-formed.  A word
 * the RFC's bit order makes no sense of, but Linux siw's does (see
 * KIWI_TERM_SIW_M), is read siw's way and flagged siw_order: the QP
 * ends either way, but the consumer's status and the log then say why.
 */
static inline void kiwi_term_parse(const struct kiwi_term *t,
				   const __u8 *rest, __u32 have, __u32 len,
				   struct kiwi_term_info *ti)
{
	__u32 c = kiwi_be32(t->ctrl);
	struct kiwi_term_info s;

	ti->why = kiwi_term_read(ti, c, c & KIWI_TERM_RSVD, rest, have, len);
	if (ti->why >= KIWI_TW_LAYER && ti->why <= KIWI_TW_RSVD &&
	    kiwi_term_read(&s, kiwi_term_from_siw(c), c & KIWI_TERM_SIW_RSVD,
			   rest, have, len) == KIWI_TW_OK &&
	    kiwi_term_ecode_known(s.layer, s.etype, s.ecode)) {
		*ti = s;
		ti->siw_order = true;
	}
	ti->ctrl = c;
	if (ti->why) {	/* nothing in @rest is vouched for */
		ti->ddp_len = 0;
		ti->rdma_len = 0;
	}
}

/* ---- Immediate Data (RFC 7306) ---- */

/*
 * Decode an Immediate Data message: the @len bytes after its untagged
 * DDP header (as the MPA length says) at @p, read only when @len is
 * exactly sizeof(struct kiwi_imm).  The 32 verbs bits come back in
 * *@imm in host order.  Anything but 8 bytes is refused: the message
 * has no place for more, so a longer one is "too long for the buffer"
 * (DDP untagged, RFC 5041 section 7.2); a shorter one never gets here
 * (kiwi_check_ctrl() refuses a ULPDU shorter than the header).
 */
static inline struct kiwi_verdict
kiwi_imm_parse(const __u8 *p, __u32 len, __u32 *imm)
{
	*imm = 0;
	if (len != sizeof(struct kiwi_imm))
		return kiwi_verdict_term(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					 KIWI_DC_U_MSG_TOOLONG);
	*imm = kiwi_get_be32(p + KIWI_IMM_OFF);
	return (struct kiwi_verdict){ .ok = true };
}

/* The 8 bytes of an Immediate Data message carrying verbs value @imm. */
static inline void kiwi_imm_build(struct kiwi_imm *m, __u32 imm)
{
	__be32 v = kiwi_cpu32(imm);

	memset(m->data, 0, sizeof(m->data));
	memcpy(m->data + KIWI_IMM_OFF, &v, sizeof(v));
}

/* ---- Atomic Operations (RFC 7306) ---- */

/* Which rule an Atomic Request broke (for tests and logs). */
enum kiwi_ar_why {
	KIWI_AR_OK = 0,
	KIWI_AR_BAD_LEN,	/* body is not exactly the 52-byte header */
	KIWI_AR_BAD_AOP,	/* an Atomic Operation code kiwi lacks */
	KIWI_AR_RSVD,		/* reserved bits of the first word set */
	KIWI_AR_MISALIGNED,	/* Remote Tagged Offset not 8-byte aligned */
};

/* An Atomic Request decoded into host order. */
struct kiwi_atomic_info {
	__u8 aop;		/* enum kiwi_aop */
	__u32 req_id;
	__u32 stag;
	__u64 to;
	__u64 data;		/* Add or Swap Data */
	__u64 mask;		/* Add or Swap Mask */
	__u64 cmp;
	__u64 cmp_mask;
	enum kiwi_ar_why why;
};

/* Bytes an atomic operation acts on, and their alignment. */
#define KIWI_ATOMIC_LEN		8

/*
 * Decode and check the body of an Atomic Request: the @len bytes after
 * its untagged DDP header at @p, read only when @len is exactly
 * sizeof(struct kiwi_atomic_req).  Another length has no Atomic Request
 * queue entry to go into (DDP untagged, no buffer: as for a READ
 * Request).  An unknown Atomic Operation code or reserved bits are an
 * operation the RDMAP layer does not know (Remote Operation, Unexpected
 * OpCode); a misaligned offset names no valid atomic target (Remote
 * Protection, base or bounds).  The STag, its rights and bounds are the
 * caller's to check, before this verdict counts, so that an STag that is
 * not the peer's reads as invalid whatever else is wrong.
 */
static inline struct kiwi_verdict
kiwi_atomic_req_parse(const __u8 *p, __u32 len, struct kiwi_atomic_info *ai)
{
	__u32 w;

	memset(ai, 0, sizeof(*ai));
	if (len != sizeof(struct kiwi_atomic_req)) {
		ai->why = KIWI_AR_BAD_LEN;
		return kiwi_verdict_term(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					 KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	w = kiwi_get_be32(p + offsetof(struct kiwi_atomic_req, aop));
	ai->aop = w & KIWI_AOP_MASK;
	ai->req_id = kiwi_get_be32(p + offsetof(struct kiwi_atomic_req,
						req_id));
	ai->stag = kiwi_get_be32(p + offsetof(struct kiwi_atomic_req, stag));
	ai->to = kiwi_get_be64(p + offsetof(struct kiwi_atomic_req, to));
	ai->data = kiwi_get_be64(p + offsetof(struct kiwi_atomic_req, data));
	ai->mask = kiwi_get_be64(p + offsetof(struct kiwi_atomic_req, mask));
	ai->cmp = kiwi_get_be64(p + offsetof(struct kiwi_atomic_req, cmp));
	ai->cmp_mask = kiwi_get_be64(p + offsetof(struct kiwi_atomic_req,
						  cmp_mask));
	if (ai->aop > KIWI_AOP_CMP_SWAP)
		ai->why = KIWI_AR_BAD_AOP;
	else if (w & ~KIWI_AOP_MASK)
		ai->why = KIWI_AR_RSVD;
	else if (ai->to & (KIWI_ATOMIC_LEN - 1))
		ai->why = KIWI_AR_MISALIGNED;
	switch (ai->why) {
	case KIWI_AR_BAD_AOP:
	case KIWI_AR_RSVD:
		return kiwi_verdict_term(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
					 KIWI_RC_UNEXPECTED_OP);
	case KIWI_AR_MISALIGNED:
		return kiwi_verdict_term(KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
					 KIWI_RC_BASE_BOUNDS);
	default:
		return (struct kiwi_verdict){ .ok = true };
	}
}

/*
 * The new value of a remote word @old under request @ai, or @old itself
 * when the operation leaves it alone (a compare that fails).
 *
 * Fetch-and-Add adds the Add Data; a bit set in the Add Mask ends a
 * field there: the carry out of that bit is not passed to the next one
 * (all-zero mask: one 64-bit add).  Swap and Compare-and-Swap replace
 * the bits the Swap Mask selects with the Swap Data's; Compare-and-Swap
 * only if the bits the Compare Mask selects equal the Compare Data's.
 */
static inline __u64 kiwi_atomic_apply(const struct kiwi_atomic_info *ai,
				      __u64 old)
{
	__u64 sum = 0, carry = 0;
	int i;

	switch (ai->aop) {
	case KIWI_AOP_FETCH_ADD:
		if (!ai->mask)
			return old + ai->data;
		for (i = 0; i < 64; i++) {
			__u64 a = old >> i & 1, b = ai->data >> i & 1;
			__u64 s = a ^ b ^ carry;

			carry = (a & b) | (a & carry) | (b & carry);
			if (ai->mask >> i & 1)
				carry = 0;
			sum |= s << i;
		}
		return sum;
	case KIWI_AOP_CMP_SWAP:
		if ((old ^ ai->cmp) & ai->cmp_mask)
			return old;
		return (old & ~ai->mask) | (ai->data & ai->mask);
	default:
		return (old & ~ai->mask) | (ai->data & ai->mask);
	}
}

/*
 * The 52 bytes of a Fetch-and-Add (@cmp_swap false: add @data, no
 * field boundaries) or a Compare-and-Swap (@cmp_swap: all 64 bits
 * compared with @cmp and, if equal, replaced by @data), as verbs has them.
 */
static inline void kiwi_atomic_req_build(struct kiwi_atomic_req *r,
					 bool cmp_swap, __u32 req_id,
					 __u32 stag, __u64 to, __u64 data,
					 __u64 cmp)
{
	memset(r, 0, sizeof(*r));
	r->aop = kiwi_cpu32(cmp_swap ? KIWI_AOP_CMP_SWAP : KIWI_AOP_FETCH_ADD);
	r->req_id = kiwi_cpu32(req_id);
	r->stag = kiwi_cpu32(stag);
	r->to = kiwi_cpu64(to);
	r->data = kiwi_cpu64(data);
	if (cmp_swap) {
		r->mask = kiwi_cpu64(~(__u64)0);
		r->cmp = kiwi_cpu64(cmp);
		r->cmp_mask = kiwi_cpu64(~(__u64)0);
	}
}

/*
 * Decode an Atomic Response body (@len bytes at @p, read only when it
 * is exactly sizeof(struct kiwi_atomic_resp)).  Any other length has no
 * place to go: DDP untagged, message too long (as Immediate Data).
 */
static inline struct kiwi_verdict
kiwi_atomic_resp_parse(const __u8 *p, __u32 len, __u32 *req_id, __u64 *orig)
{
	*req_id = 0;
	*orig = 0;
	if (len != sizeof(struct kiwi_atomic_resp))
		return kiwi_verdict_term(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					 KIWI_DC_U_MSG_TOOLONG);
	*req_id = kiwi_get_be32(p + offsetof(struct kiwi_atomic_resp, req_id));
	*orig = kiwi_get_be64(p + offsetof(struct kiwi_atomic_resp, orig));
	return (struct kiwi_verdict){ .ok = true };
}

static inline void kiwi_atomic_resp_build(struct kiwi_atomic_resp *r,
					  __u32 req_id, __u64 orig)
{
	r->req_id = kiwi_cpu32(req_id);
	r->orig = kiwi_cpu64(orig);
}

#endif /* KIWI_RDMAP_H */
