/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: iWARP wire formats -- MPA (RFC 5044, RFC 6581), DDP (RFC 5041)
 * and RDMAP (RFC 5040) -- plus the pure parsing and validation helpers
 * that do not need kernel services.
 *
 * This header compiles in the kernel and in user space (tests/fuzzers):
 * it uses only fixed-width types, explicit big-endian conversions and no
 * bitfields.  All multi-byte wire fields are big-endian.
 */
#ifndef KIWI_IWARP_H
#define KIWI_IWARP_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <asm/byteorder.h>
#define kiwi_be16(x)	be16_to_cpu(x)
#define kiwi_be32(x)	be32_to_cpu(x)
#define kiwi_be64(x)	be64_to_cpu(x)
#define kiwi_cpu16(x)	cpu_to_be16(x)
#define kiwi_cpu32(x)	cpu_to_be32(x)
#define kiwi_cpu64(x)	cpu_to_be64(x)
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>
#include <linux/types.h>
#define kiwi_be16(x)	be16toh(x)
#define kiwi_be32(x)	be32toh(x)
#define kiwi_be64(x)	be64toh(x)
#define kiwi_cpu16(x)	htobe16(x)
#define kiwi_cpu32(x)	htobe32(x)
#define kiwi_cpu64(x)	htobe64(x)
#endif

/* ---- MPA connection setup (RFC 5044 section 7, RFC 6581) ---- */

#define KIWI_MPA_KEY_REQ	"MPA ID Req Frame"
#define KIWI_MPA_KEY_REP	"MPA ID Rep Frame"
#define KIWI_MPA_KEY_LEN	16
#define KIWI_MPA_MAX_PD		512	/* private data, RFC 5044 7.1 */
#define KIWI_MPA_REV1		1
#define KIWI_MPA_REV2		2

/* Flag byte of the request/reply frame. */
#define KIWI_MPA_FLAG_M		0x80	/* markers */
#define KIWI_MPA_FLAG_C		0x40	/* CRC32c */
#define KIWI_MPA_FLAG_R		0x20	/* reject (reply only) */
#define KIWI_MPA_FLAG_ENH	0x10	/* RFC 6581 enhanced setup (rev 2) */
/*
 * A reserved bit, which RFC 5044 has receivers ignore.  In a request it
 * offers FPDUs larger than one TCP segment; echoed in the reply, both
 * ends may send them.  A peer that knows nothing of it never echoes it.
 * Linux siw uses this bit the same way (its "GSO" mode, off by default).
 */
#define KIWI_MPA_FLAG_LARGE	0x08

struct kiwi_mpa_rr {
	__u8 key[KIWI_MPA_KEY_LEN];
	__u8 flags;
	__u8 rev;
	__be16 pd_len;
};

/*
 * RFC 6581 enhanced-setup data: the first 4 bytes of private data when
 * KIWI_MPA_FLAG_ENH is set.  Top two bits of each word are control bits.
 */
struct kiwi_mpa_v2 {
	__be16 ird;
	__be16 ord;
};

#define KIWI_MPA_V2_P2P		0x8000	/* in ird: peer-to-peer mode */
#define KIWI_MPA_V2_ZERO_RTR	0x4000	/* in ird: zero-length SEND RTR */
#define KIWI_MPA_V2_WRITE_RTR	0x8000	/* in ord: zero-length WRITE RTR */
#define KIWI_MPA_V2_READ_RTR	0x4000	/* in ord: zero-length READ RTR */
#define KIWI_MPA_V2_MASK	0x3fff

/* ---- MPA framing (RFC 5044 section 4) ---- */

#define KIWI_MPA_HDR_LEN	2	/* ULPDU length */
#define KIWI_MPA_CRC_LEN	4
/* Largest ULPDU we send or accept: the MPA length field is 16 bits. */
#define KIWI_MPA_MAX_ULPDU	65535

static inline __u32 kiwi_mpa_pad(__u32 len)
{
	return (4 - (len & 3)) & 3;
}

/* ---- DDP / RDMAP headers (RFC 5041 section 4, RFC 5040 section 4) ---- */

#define KIWI_DDP_TAGGED		0x8000	/* T */
#define KIWI_DDP_LAST		0x4000	/* L */
#define KIWI_DDP_RSVD		0x3c00
#define KIWI_DDP_VER_MASK	0x0300
#define KIWI_DDP_VER_SHIFT	8
#define KIWI_RDMAP_VER_MASK	0x00c0
#define KIWI_RDMAP_VER_SHIFT	6
#define KIWI_RDMAP_RSVD		0x0030
#define KIWI_RDMAP_OP_MASK	0x000f
#define KIWI_DDP_VERSION	1
#define KIWI_RDMAP_VERSION	1

enum kiwi_rdmap_op {
	KIWI_OP_WRITE = 0,
	KIWI_OP_READ_REQ = 1,
	KIWI_OP_READ_RESP = 2,
	KIWI_OP_SEND = 3,
	KIWI_OP_SEND_INV = 4,
	KIWI_OP_SEND_SE = 5,
	KIWI_OP_SEND_SE_INV = 6,
	KIWI_OP_TERMINATE = 7,
	/*
	 * RFC 7306 section 4 (its table of RDMAP opcodes): 1000b and 1001b
	 * stay reserved, 1010b/1011b are the Atomic Request and Response,
	 * 1100b/1101b the Immediate Data messages.
	 */
	KIWI_OP_ATOMIC_REQ = 10,
	KIWI_OP_ATOMIC_RESP = 11,
	KIWI_OP_IMM = 12,
	KIWI_OP_IMM_SE = 13,
	KIWI_OP_MAX
};

/* Untagged queue numbers (RFC 5040 section 5.1). */
enum kiwi_ddp_qn {
	KIWI_QN_SEND = 0,
	KIWI_QN_READ_REQ = 1,
	KIWI_QN_TERMINATE = 2,
	KIWI_QN_ATOMIC_REQ = 3,		/* RFC 7306 */
	KIWI_QN_ATOMIC_RESP = 4,
	KIWI_QN_COUNT
};

/* First four bytes of every FPDU: MPA length + DDP/RDMAP control. */
struct kiwi_ctrl {
	__be16 mpa_len;
	__be16 ddp_rdmap;
};

struct kiwi_hdr_tagged {		/* WRITE, READ response */
	struct kiwi_ctrl ctrl;
	__be32 stag;
	__be64 to;
} __attribute__((packed));

struct kiwi_hdr_untagged {		/* SEND*, TERMINATE, READ request */
	struct kiwi_ctrl ctrl;
	__be32 inv_stag;		/* SEND with invalidate; else 0 */
	__be32 qn;
	__be32 msn;
	__be32 mo;
};

/* RDMA READ request: untagged header followed by this payload. */
struct kiwi_read_req {
	__be32 sink_stag;
	__be64 sink_to;
	__be32 size;
	__be32 src_stag;
	__be64 src_to;
} __attribute__((packed));

/*
 * Immediate Data (RFC 7306): an untagged header on queue 0 followed by
 * exactly 8 bytes.  Verbs immediate data is 32 bits; kiwi sends it as
 * the low-order half of the 8 bytes read as one big-endian number
 * (bytes 4-7, the first four zero) and reads it back from there.
 */
struct kiwi_imm {
	__u8 data[8];
};

#define KIWI_IMM_OFF		4	/* where the 32 verbs bits are */

/*
 * RFC 7306 Atomic Request: an untagged header on queue 3, then this.
 * The 4-bit Atomic Operation code is the low nibble of the first word
 * (the rest reserved, zero).  For Fetch-and-Add, data/mask are the Add
 * Data and Add Mask; for (Compare-and-)Swap, the Swap Data and Swap
 * Mask.  The Remote Tagged Offset is 8-byte aligned.
 */
struct kiwi_atomic_req {
	__be32 aop;			/* rsvd:28 AOpCode:4 */
	__be32 req_id;			/* Request Identifier */
	__be32 stag;			/* Remote STag */
	__be64 to;			/* Remote Tagged Offset */
	__be64 data;			/* Add or Swap Data */
	__be64 mask;			/* Add or Swap Mask */
	__be64 cmp;			/* Compare Data */
	__be64 cmp_mask;		/* Compare Mask */
} __attribute__((packed));

/* Atomic Response: an untagged header on queue 4, then this. */
struct kiwi_atomic_resp {
	__be32 req_id;			/* Original Request Identifier */
	__be64 orig;			/* Original Remote Data Value */
} __attribute__((packed));

/* Atomic Operation codes (AOpCode). */
enum kiwi_aop {
	KIWI_AOP_FETCH_ADD = 0,
	KIWI_AOP_SWAP = 1,
	KIWI_AOP_CMP_SWAP = 2,
};
#define KIWI_AOP_MASK		0x0000000f

/* TERMINATE: untagged header followed by this control word. */
struct kiwi_term {
	__be32 ctrl;			/* layer:4 etype:4 ecode:8 M D R rsvd:13 */
};

#define KIWI_TERM_LAYER_SHIFT	28
#define KIWI_TERM_ETYPE_SHIFT	24
#define KIWI_TERM_ECODE_SHIFT	16
/* Header control bits; what they announce: include/kiwi/rdmap.h. */
#define KIWI_TERM_M		0x00008000	/* DDP Segment Length valid */
#define KIWI_TERM_D		0x00004000	/* DDP header included */
#define KIWI_TERM_R		0x00002000	/* RDMAP header included */

/* TERMINATE layers, error types and codes (RFC 5040 section 4.8). */
enum kiwi_term_layer {
	KIWI_TL_RDMAP = 0,
	KIWI_TL_DDP = 1,
	KIWI_TL_LLP = 2,
};

enum kiwi_rdmap_etype {
	KIWI_RT_CATASTROPHIC = 0,
	KIWI_RT_PROTECTION = 1,
	KIWI_RT_OPERATION = 2,
};

enum kiwi_rdmap_ecode {
	KIWI_RC_INVALID_STAG = 0x00,
	KIWI_RC_BASE_BOUNDS = 0x01,
	KIWI_RC_ACCESS_RIGHTS = 0x02,
	KIWI_RC_STAG_NOT_ASSOC = 0x03,
	KIWI_RC_TO_WRAP = 0x04,
	KIWI_RC_INVALID_VERSION = 0x05,
	KIWI_RC_UNEXPECTED_OP = 0x06,
	KIWI_RC_CATASTROPHIC_STREAM = 0x07,
	KIWI_RC_CATASTROPHIC_GLOBAL = 0x08,
	KIWI_RC_CANT_INVALIDATE = 0x09,
	KIWI_RC_UNSPECIFIED = 0xff,
};

enum kiwi_ddp_etype {
	KIWI_DT_CATASTROPHIC = 0,
	KIWI_DT_TAGGED = 1,
	KIWI_DT_UNTAGGED = 2,
};

enum kiwi_ddp_ecode {
	KIWI_DC_T_INVALID_STAG = 0x00,
	KIWI_DC_T_BASE_BOUNDS = 0x01,
	KIWI_DC_T_STAG_NOT_ASSOC = 0x02,
	KIWI_DC_T_TO_WRAP = 0x03,
	KIWI_DC_T_VERSION = 0x04,
	KIWI_DC_U_INVALID_QN = 0x01,
	KIWI_DC_U_INVALID_MSN_NOBUF = 0x02,
	KIWI_DC_U_INVALID_MSN_RANGE = 0x03,
	KIWI_DC_U_INVALID_MO = 0x04,
	KIWI_DC_U_MSG_TOOLONG = 0x05,
	KIWI_DC_U_VERSION = 0x06,
};

enum kiwi_llp_ecode {
	KIWI_LC_TCP_ERR = 0x00,		/* LLP etype 0 */
	KIWI_LC_MPA_CRC = 0x02,		/* MPA etype 0 codes */
	KIWI_LC_MPA_MARKER = 0x03,
	KIWI_LC_MPA_REQ_REP = 0x04,
	/* RFC 6581's, for enhanced connection setup (as siw and Wireshark) */
	KIWI_LC_LOCAL_CATASTROPHIC = 0x05,
	KIWI_LC_INSUFFICIENT_IRD = 0x06,
	KIWI_LC_NO_MATCHING_RTR = 0x07,
};

static inline __u32 kiwi_term_ctrl(__u8 layer, __u8 etype, __u8 ecode)
{
	return (__u32)(layer & 0xf) << KIWI_TERM_LAYER_SHIFT |
	       (__u32)(etype & 0xf) << KIWI_TERM_ETYPE_SHIFT |
	       (__u32)ecode << KIWI_TERM_ECODE_SHIFT;
}

/*
 * What RFC 5040 (section 4, table 2) and RFC 5041 fix for each RDMAP
 * opcode: the one table the header checks here, the receive path and the
 * transmit path read.
 */
struct kiwi_op_desc {
	/*
	 * MPA length field + DDP/RDMAP header, with a READ request's or
	 * TERMINATE's fixed part
	 */
	__u8 hdr_len;
	bool tagged;		/* DDP tagged buffer model */
	__u8 qn;		/* untagged queue (enum kiwi_ddp_qn) */
	bool single;		/* one segment only: L set on every FPDU */
	bool solicited;		/* Solicited Event */
	bool invalidate;	/* carries an STag for the peer to invalidate */
	bool imm;		/* RFC 7306 Immediate Data (on queue 0) */
	bool atomic;		/* RFC 7306 atomics: only if the QP agreed */
};

#define KIWI_HDR_U	sizeof(struct kiwi_hdr_untagged)
static const struct kiwi_op_desc kiwi_op_descs[KIWI_OP_MAX] = {
	[KIWI_OP_WRITE] = { .hdr_len = sizeof(struct kiwi_hdr_tagged),
			    .tagged = true },
	[KIWI_OP_READ_REQ] = { .hdr_len = KIWI_HDR_U +
					  sizeof(struct kiwi_read_req),
			       .qn = KIWI_QN_READ_REQ, .single = true },
	[KIWI_OP_READ_RESP] = { .hdr_len = sizeof(struct kiwi_hdr_tagged),
				.tagged = true },
	[KIWI_OP_SEND] = { .hdr_len = KIWI_HDR_U, .qn = KIWI_QN_SEND },
	[KIWI_OP_SEND_INV] = { .hdr_len = KIWI_HDR_U, .qn = KIWI_QN_SEND,
			       .invalidate = true },
	[KIWI_OP_SEND_SE] = { .hdr_len = KIWI_HDR_U, .qn = KIWI_QN_SEND,
			      .solicited = true },
	[KIWI_OP_SEND_SE_INV] = { .hdr_len = KIWI_HDR_U, .qn = KIWI_QN_SEND,
				  .solicited = true, .invalidate = true },
	[KIWI_OP_TERMINATE] = { .hdr_len = KIWI_HDR_U +
					   sizeof(struct kiwi_term),
				.qn = KIWI_QN_TERMINATE, .single = true },
	/* Holes (8, 9) have hdr_len 0: kiwi_check_ctrl() refuses them. */
	[KIWI_OP_ATOMIC_REQ] = { .hdr_len = KIWI_HDR_U +
					    sizeof(struct kiwi_atomic_req),
				 .qn = KIWI_QN_ATOMIC_REQ, .single = true,
				 .atomic = true },
	[KIWI_OP_ATOMIC_RESP] = { .hdr_len = KIWI_HDR_U +
					     sizeof(struct kiwi_atomic_resp),
				  .qn = KIWI_QN_ATOMIC_RESP, .single = true,
				  .atomic = true },
	[KIWI_OP_IMM] = { .hdr_len = KIWI_HDR_U + sizeof(struct kiwi_imm),
			  .qn = KIWI_QN_SEND, .single = true, .imm = true },
	[KIWI_OP_IMM_SE] = { .hdr_len = KIWI_HDR_U + sizeof(struct kiwi_imm),
			     .qn = KIWI_QN_SEND, .single = true,
			     .solicited = true, .imm = true },
};
#undef KIWI_HDR_U

/* The table entry of a known opcode (callers check op < KIWI_OP_MAX). */
static inline const struct kiwi_op_desc *kiwi_op(__u8 op)
{
	return &kiwi_op_descs[op < KIWI_OP_MAX ? op : KIWI_OP_WRITE];
}

/*
 * Bytes of an opcode's header, MPA length included; 0 if unknown
 * (or reserved: the holes in the table).
 */
static inline __u32 kiwi_hdr_len(__u8 op)
{
	return op < KIWI_OP_MAX ? kiwi_op_descs[op].hdr_len : 0;
}

static inline bool kiwi_op_tagged(__u8 op)
{
	return op < KIWI_OP_MAX && kiwi_op_descs[op].tagged;
}

static inline __u16 kiwi_ddp_rdmap(__u8 op, bool last)
{
	return (kiwi_op_tagged(op) ? KIWI_DDP_TAGGED : 0) |
	       (last ? KIWI_DDP_LAST : 0) |
	       KIWI_DDP_VERSION << KIWI_DDP_VER_SHIFT |
	       KIWI_RDMAP_VERSION << KIWI_RDMAP_VER_SHIFT | op;
}

/*
 * Outcome of checking the control word of a received FPDU: either the
 * FPDU is well-formed (op and header length set) or a TERMINATE code.
 */
struct kiwi_ctrl_check {
	__u8 op;
	__u8 layer;
	__u8 etype;
	__u8 ecode;
	__u32 hdr_len;			/* bytes incl. the MPA length field */
	bool ok;
};

/*
 * Validate the first four bytes of an FPDU: the MPA length (of the ULPDU:
 * DDP/RDMAP header and payload, without the length field itself, pad and
 * CRC) and the DDP/RDMAP control word.  On success, hdr_len is the
 * opcode's whole header, the 2-byte MPA length included.
 */
static inline struct kiwi_ctrl_check
kiwi_check_ctrl(const struct kiwi_ctrl *c)
{
	struct kiwi_ctrl_check r = { 0 };
	__u16 ctrl = kiwi_be16(c->ddp_rdmap);
	__u16 ulpdu = kiwi_be16(c->mpa_len);
	__u8 op = ctrl & KIWI_RDMAP_OP_MASK;
	bool tagged = ctrl & KIWI_DDP_TAGGED;

	r.op = op;
	if (((ctrl & KIWI_DDP_VER_MASK) >> KIWI_DDP_VER_SHIFT) !=
	    KIWI_DDP_VERSION) {
		r.layer = KIWI_TL_DDP;
		r.etype = tagged ? KIWI_DT_TAGGED : KIWI_DT_UNTAGGED;
		r.ecode = tagged ? KIWI_DC_T_VERSION : KIWI_DC_U_VERSION;
		return r;
	}
	if (((ctrl & KIWI_RDMAP_VER_MASK) >> KIWI_RDMAP_VER_SHIFT) !=
	    KIWI_RDMAP_VERSION) {
		r.layer = KIWI_TL_RDMAP;
		r.etype = KIWI_RT_OPERATION;
		r.ecode = KIWI_RC_INVALID_VERSION;
		return r;
	}
	if (op >= KIWI_OP_MAX || !kiwi_op_descs[op].hdr_len ||
	    tagged != kiwi_op_tagged(op)) {
		r.layer = KIWI_TL_RDMAP;
		r.etype = KIWI_RT_OPERATION;
		r.ecode = KIWI_RC_UNEXPECTED_OP;
		return r;
	}
	r.hdr_len = kiwi_hdr_len(op);
	/* The ULPDU must hold at least the DDP/RDMAP header. */
	if ((__u32)ulpdu + KIWI_MPA_HDR_LEN < r.hdr_len) {
		r.layer = KIWI_TL_DDP;
		r.etype = KIWI_DT_CATASTROPHIC;
		r.ecode = 0;
		return r;
	}
	/* A single-segment message's only FPDU must be its last. */
	if (kiwi_op_descs[op].single && !(ctrl & KIWI_DDP_LAST)) {
		r.layer = KIWI_TL_DDP;
		r.etype = KIWI_DT_UNTAGGED;
		r.ecode = KIWI_DC_U_INVALID_MO;
		return r;
	}
	r.ok = true;
	return r;
}

/* ---- MPA request/reply parsing ---- */

enum kiwi_mpa_err {
	KIWI_MPA_OK = 0,
	KIWI_MPA_BAD_KEY,
	KIWI_MPA_BAD_REV,
	KIWI_MPA_BAD_PD_LEN,
	KIWI_MPA_BAD_ENH,		/* enhanced flag without v2 data */
};

struct kiwi_mpa_info {
	__u8 rev;
	bool crc;
	bool markers;			/* M: the sender wants to receive them */
	bool reject;
	bool enhanced;
	bool p2p;
	bool large;			/* KIWI_MPA_FLAG_LARGE */
	__u16 rtr;			/* ZERO/WRITE/READ_RTR bits offered */
	__u16 ird;
	__u16 ord;
	__u16 pd_len;			/* total private data, incl. v2 data */
	__u16 ulp_pd_off;		/* consumer private data offset */
	__u16 ulp_pd_len;
};

/* KIWI_MPA_RTR_* in kiwi_mpa_info.rtr: what a peer offers for the RTR. */
#define KIWI_MPA_RTR_SEND	0x1
#define KIWI_MPA_RTR_WRITE	0x2
#define KIWI_MPA_RTR_READ	0x4

/*
 * Parse a request (@req true) or reply header and, for enhanced setup,
 * the first @pd_avail bytes of the private data that follow it.  The
 * caller has read sizeof(struct kiwi_mpa_rr) + pd_len bytes.
 */
static inline enum kiwi_mpa_err
kiwi_mpa_parse(const struct kiwi_mpa_rr *rr, const __u8 *pd, __u32 pd_avail,
	       bool req, struct kiwi_mpa_info *info)
{
	const char *key = req ? KIWI_MPA_KEY_REQ : KIWI_MPA_KEY_REP;
	__u16 pd_len = kiwi_be16(rr->pd_len);

	memset(info, 0, sizeof(*info));
	if (memcmp(rr->key, key, KIWI_MPA_KEY_LEN))
		return KIWI_MPA_BAD_KEY;
	info->rev = rr->rev;
	if (rr->rev != KIWI_MPA_REV1 && rr->rev != KIWI_MPA_REV2)
		return KIWI_MPA_BAD_REV;
	if (pd_len > KIWI_MPA_MAX_PD)
		return KIWI_MPA_BAD_PD_LEN;
	info->crc = rr->flags & KIWI_MPA_FLAG_C;
	info->markers = rr->flags & KIWI_MPA_FLAG_M;
	info->large = rr->flags & KIWI_MPA_FLAG_LARGE;
	info->reject = !req && (rr->flags & KIWI_MPA_FLAG_R);
	info->pd_len = pd_len;
	info->ulp_pd_len = pd_len;
	if (rr->rev == KIWI_MPA_REV2 && (rr->flags & KIWI_MPA_FLAG_ENH)) {
		struct kiwi_mpa_v2 v2;
		__u16 ird, ord;

		if (pd_len < sizeof(v2) || pd_avail < sizeof(v2))
			return KIWI_MPA_BAD_ENH;
		memcpy(&v2, pd, sizeof(v2));
		ird = kiwi_be16(v2.ird);
		ord = kiwi_be16(v2.ord);
		info->enhanced = true;
		info->ird = ird & KIWI_MPA_V2_MASK;
		info->ord = ord & KIWI_MPA_V2_MASK;
		info->p2p = ird & KIWI_MPA_V2_P2P;
		if (ird & KIWI_MPA_V2_ZERO_RTR)
			info->rtr |= KIWI_MPA_RTR_SEND;
		if (ord & KIWI_MPA_V2_WRITE_RTR)
			info->rtr |= KIWI_MPA_RTR_WRITE;
		if (ord & KIWI_MPA_V2_READ_RTR)
			info->rtr |= KIWI_MPA_RTR_READ;
		info->ulp_pd_off = sizeof(v2);
		info->ulp_pd_len = pd_len - sizeof(v2);
	}
	return KIWI_MPA_OK;
}

/* Build the fixed part of a request or reply; returns bytes written. */
static inline __u32 kiwi_mpa_build(struct kiwi_mpa_rr *rr, bool req, __u8 rev,
				   __u8 flags, __u16 pd_len)
{
	memcpy(rr->key, req ? KIWI_MPA_KEY_REQ : KIWI_MPA_KEY_REP,
	       KIWI_MPA_KEY_LEN);
	rr->flags = flags;
	rr->rev = rev;
	rr->pd_len = kiwi_cpu16(pd_len);
	return sizeof(*rr);
}

static inline struct kiwi_mpa_v2 kiwi_mpa_v2_build(__u16 ird, __u16 ord,
						   bool p2p, __u16 rtr)
{
	struct kiwi_mpa_v2 v2;
	__u16 i = ird & KIWI_MPA_V2_MASK, o = ord & KIWI_MPA_V2_MASK;

	if (p2p)
		i |= KIWI_MPA_V2_P2P;
	if (rtr & KIWI_MPA_RTR_SEND)
		i |= KIWI_MPA_V2_ZERO_RTR;
	if (rtr & KIWI_MPA_RTR_WRITE)
		o |= KIWI_MPA_V2_WRITE_RTR;
	if (rtr & KIWI_MPA_RTR_READ)
		o |= KIWI_MPA_V2_READ_RTR;
	v2.ird = kiwi_cpu16(i);
	v2.ord = kiwi_cpu16(o);
	return v2;
}

#endif /* KIWI_IWARP_H */
