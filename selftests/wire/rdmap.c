// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The READ Request and TERMINATE decoding of include/kiwi/rdmap.h, in
 * user space, on hand-written byte vectors: fields come out of the
 * right bytes, and each rule (length, size, TO wrap; layer, type,
 * reserved bits, header-present bits against the bytes present) gives
 * the verdict kmod/rx.c acts on.
 */
#include "../kiwi_test.h"
#include <kiwi/rdmap.h>

/* A READ Request body: sink 0x11223344 @ 0x1000, 0x2000 bytes, source
 * 0x55667788 @ 0x0102030405060708. */
static const __u8 rr_ok[28] = {
	0x11, 0x22, 0x33, 0x44,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x20, 0x00,
	0x55, 0x66, 0x77, 0x88,
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
};

static void put_be32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put_be64(__u8 *p, __u64 v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (__u32)v);
}

TEST(read_req_decode)
{
	struct kiwi_read_info ri;
	struct kiwi_verdict v;

	v = kiwi_read_req_parse(rr_ok, sizeof(rr_ok), KIWI_MAX_MSG_SZ, &ri);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(ri.why, KIWI_RR_OK);
	EXPECT_EQ(ri.sink_stag, 0x11223344);
	EXPECT_EQ(ri.sink_to, 0x1000);
	EXPECT_EQ(ri.size, 0x2000);
	EXPECT_EQ(ri.src_stag, 0x55667788);
	EXPECT_EQ(ri.src_to, 0x0102030405060708ULL);
}

/* The ULPDU must hold exactly the READ Request header. */
TEST(read_req_length)
{
	__u8 buf[40] = { 0 };
	struct kiwi_read_info ri;
	struct kiwi_verdict v;
	__u32 len;

	memcpy(buf, rr_ok, sizeof(rr_ok));
	for (len = 0; len < sizeof(buf); len++) {
		v = kiwi_read_req_parse(buf, len, KIWI_MAX_MSG_SZ, &ri);
		if (len == sizeof(rr_ok)) {
			EXPECT_TRUE(v.ok);
			continue;
		}
		EXPECT_FALSE(v.ok);
		EXPECT_EQ(ri.why, KIWI_RR_BAD_LEN);
		EXPECT_EQ(v.layer, KIWI_TL_DDP);
		EXPECT_EQ(v.etype, KIWI_DT_UNTAGGED);
		EXPECT_EQ(v.ecode, KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	/* A claimed length beyond the buffer is refused unread. */
	v = kiwi_read_req_parse(NULL, 0xffffffff, KIWI_MAX_MSG_SZ, &ri);
	EXPECT_EQ(ri.why, KIWI_RR_BAD_LEN);
}

static enum kiwi_rr_why rr_why(__u64 sink_to, __u32 size, __u64 src_to,
			       struct kiwi_verdict *v)
{
	struct kiwi_read_info ri;
	__u8 b[28];

	memcpy(b, rr_ok, sizeof(b));
	put_be64(b + 4, sink_to);
	put_be32(b + 12, size);
	put_be64(b + 20, src_to);
	*v = kiwi_read_req_parse(b, sizeof(b), KIWI_MAX_MSG_SZ, &ri);
	return ri.why;
}

TEST(read_req_size)
{
	struct kiwi_verdict v;

	EXPECT_EQ(rr_why(0, KIWI_MAX_MSG_SZ, 0, &v), KIWI_RR_OK);
	EXPECT_EQ(rr_why(0, KIWI_MAX_MSG_SZ + 1, 0, &v), KIWI_RR_TOO_BIG);
	EXPECT_EQ(v.layer, KIWI_TL_RDMAP);
	EXPECT_EQ(v.etype, KIWI_RT_PROTECTION);
	EXPECT_EQ(v.ecode, KIWI_RC_BASE_BOUNDS);
	EXPECT_EQ(rr_why(0, 0xffffffff, 0, &v), KIWI_RR_TOO_BIG);
	/* Zero bytes name no buffer: any TO goes. */
	EXPECT_EQ(rr_why(~0ULL, 0, ~0ULL, &v), KIWI_RR_OK);
	EXPECT_TRUE(v.ok);
}

TEST(read_req_to_wrap)
{
	struct kiwi_verdict v;

	/* Ending exactly at 2^64 is fine; one byte more wraps. */
	EXPECT_EQ(rr_why(0, 16, ~0ULL - 15, &v), KIWI_RR_OK);
	EXPECT_EQ(rr_why(0, 16, ~0ULL - 14, &v), KIWI_RR_SRC_WRAP);
	EXPECT_EQ(v.layer, KIWI_TL_RDMAP);
	EXPECT_EQ(v.etype, KIWI_RT_PROTECTION);
	EXPECT_EQ(v.ecode, KIWI_RC_TO_WRAP);
	EXPECT_EQ(rr_why(~0ULL - 15, 16, 0, &v), KIWI_RR_OK);
	EXPECT_EQ(rr_why(~0ULL, 2, 0, &v), KIWI_RR_SINK_WRAP);
	EXPECT_EQ(v.ecode, KIWI_RC_TO_WRAP);
	/* The source is checked first. */
	EXPECT_EQ(rr_why(~0ULL, 2, ~0ULL, &v), KIWI_RR_SRC_WRAP);
}

/* ---- TERMINATE ---- */

static enum kiwi_term_why term(__u32 ctrl, const __u8 *rest, __u32 len,
			       struct kiwi_term_info *ti)
{
	struct kiwi_term t = { .ctrl = kiwi_cpu32(ctrl) };
	__u32 have = len < KIWI_TERM_MAX_REST ? len : KIWI_TERM_MAX_REST;

	kiwi_term_parse(&t, rest, have, len, ti);
	return ti->why;
}

TEST(term_plain)
{
	struct kiwi_term_info ti;
	__u32 c = kiwi_term_ctrl(KIWI_TL_DDP, KIWI_DT_TAGGED,
				 KIWI_DC_T_BASE_BOUNDS);

	EXPECT_EQ(term(c, NULL, 0, &ti), KIWI_TW_OK);
	EXPECT_EQ(ti.ctrl, c);
	EXPECT_EQ(ti.layer, KIWI_TL_DDP);
	EXPECT_EQ(ti.etype, KIWI_DT_TAGGED);
	EXPECT_EQ(ti.ecode, KIWI_DC_T_BASE_BOUNDS);
	EXPECT_FALSE(ti.m || ti.d || ti.r);
	EXPECT_EQ(ti.used, 0);
	/* Bytes no bit announces. */
	EXPECT_EQ(term(c, (const __u8 *)"x", 1, &ti), KIWI_TW_LONG);
	/* The layer, type and code are reported however bad the rest. */
	EXPECT_EQ(ti.layer, KIWI_TL_DDP);
	EXPECT_EQ(ti.ecode, KIWI_DC_T_BASE_BOUNDS);
}

TEST(term_layer_type_rsvd)
{
	struct kiwi_term_info ti;

	EXPECT_EQ(term(0xffffffff, NULL, 60, &ti), KIWI_TW_LAYER);
	EXPECT_EQ(ti.layer, 15);
	EXPECT_EQ(ti.etype, 15);
	EXPECT_EQ(ti.ecode, 0xff);
	EXPECT_EQ(term(kiwi_term_ctrl(3, 0, 0), NULL, 0, &ti), KIWI_TW_LAYER);
	EXPECT_EQ(term(kiwi_term_ctrl(KIWI_TL_RDMAP, 3, 0), NULL, 0, &ti),
		  KIWI_TW_ETYPE);
	EXPECT_EQ(term(kiwi_term_ctrl(KIWI_TL_DDP, 3, 0), NULL, 0, &ti),
		  KIWI_TW_ETYPE);
	EXPECT_EQ(term(kiwi_term_ctrl(KIWI_TL_LLP, 1, 0), NULL, 0, &ti),
		  KIWI_TW_ETYPE);
	EXPECT_EQ(term(kiwi_term_ctrl(KIWI_TL_LLP, 0, KIWI_LC_MPA_CRC), NULL,
		       0, &ti), KIWI_TW_OK);
	EXPECT_EQ(term(kiwi_term_ctrl(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
				      KIWI_RC_UNSPECIFIED) | 1, NULL, 0, &ti),
		  KIWI_TW_RSVD);
}

/*
 * Linux siw's TERMINATE from a little-endian host (its bitfields): the
 * "no buffer" one it sends when a SEND finds no receive posted, as kiwi
 * received it from siw in the interop test, with the segment length and
 * the untagged DDP header it copies.
 */
TEST(term_siw_order)
{
	struct kiwi_term_info ti;
	__u8 rest[2 + KIWI_TERM_DDP_U_LEN] = { 0x00, 0x40, 0x41 };

	EXPECT_EQ(term(0x21020300, rest, sizeof(rest), &ti), KIWI_TW_OK);
	EXPECT_TRUE(ti.siw_order);
	EXPECT_EQ(ti.ctrl, 0x21020300);
	EXPECT_EQ(ti.layer, KIWI_TL_DDP);
	EXPECT_EQ(ti.etype, KIWI_DT_UNTAGGED);
	EXPECT_EQ(ti.ecode, KIWI_DC_U_INVALID_MSN_NOBUF);
	EXPECT_TRUE(ti.m && ti.d && !ti.r);
	EXPECT_EQ(ti.ddp_len, KIWI_TERM_DDP_U_LEN);
	/* The same TERMINATE in the RFC's order is just that. */
	EXPECT_EQ(term(0x1202c000, rest, sizeof(rest), &ti), KIWI_TW_OK);
	EXPECT_FALSE(ti.siw_order);
	EXPECT_EQ(ti.etype, KIWI_DT_UNTAGGED);
	/* Wrong in both orders: reported as received, RFC fields. */
	EXPECT_EQ(term(0x21020300, rest, 3, &ti), KIWI_TW_ETYPE);
	EXPECT_FALSE(ti.siw_order);
	EXPECT_EQ(ti.layer, KIWI_TL_LLP);
	EXPECT_EQ(ti.ddp_len, 0);
}

/* D: segment length, then a tagged (14) or untagged (18) DDP header. */
TEST(term_ddp_header)
{
	__u32 c = kiwi_term_ctrl(KIWI_TL_DDP, KIWI_DT_TAGGED,
				 KIWI_DC_T_INVALID_STAG) |
		  KIWI_TERM_M | KIWI_TERM_D;
	struct kiwi_term_info ti;
	__u8 rest[2 + 18] = { 0x00, 0x40, 0xc1, 0x40 };	/* len 64, T L v1 */

	EXPECT_EQ(term(c, rest, 2 + 14, &ti), KIWI_TW_OK);
	EXPECT_EQ(ti.seg_len, 64);
	EXPECT_EQ(ti.ddp_off, 2);
	EXPECT_EQ(ti.ddp_len, 14);
	EXPECT_EQ(ti.rdma_len, 0);
	EXPECT_EQ(ti.used, 16);
	EXPECT_EQ(term(c, rest, 2 + 13, &ti), KIWI_TW_SHORT);
	EXPECT_EQ(ti.ddp_len, 0);
	EXPECT_EQ(term(c, rest, 2 + 15, &ti), KIWI_TW_LONG);
	/* Untagged: 18 bytes. */
	rest[2] = 0x41;
	EXPECT_EQ(term(c, rest, 2 + 14, &ti), KIWI_TW_SHORT);
	EXPECT_EQ(term(c, rest, 2 + 18, &ti), KIWI_TW_OK);
	EXPECT_EQ(ti.ddp_len, 18);
	/* A segment shorter than the header copied from it. */
	rest[1] = 17;
	EXPECT_EQ(term(c, rest, 2 + 18, &ti), KIWI_TW_SEGLEN);
	/* ... is fine when M says the length is not valid. */
	EXPECT_EQ(term(c & ~KIWI_TERM_M, rest, 2 + 18, &ti), KIWI_TW_OK);
	/* M alone: a valid length that was not sent. */
	EXPECT_EQ(term(c & ~KIWI_TERM_D, rest, 0, &ti), KIWI_TW_M_NO_D);
}

/* R: the 28-byte READ Request header, after the DDP header if D. */
TEST(term_rdma_header)
{
	__u32 c = kiwi_term_ctrl(KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				 KIWI_RC_BASE_BOUNDS) | KIWI_TERM_R;
	__u8 rest[2 + 18 + 28] = { 0x00, 18 + 28, 0x41, 0x41 };
	struct kiwi_term_info ti;

	EXPECT_EQ(term(c, rest + 20, 28, &ti), KIWI_TW_OK);
	EXPECT_EQ(ti.rdma_off, 0);
	EXPECT_EQ(ti.rdma_len, 28);
	EXPECT_EQ(term(c, rest + 20, 27, &ti), KIWI_TW_SHORT);
	EXPECT_EQ(term(c, rest + 20, 29, &ti), KIWI_TW_LONG);
	c |= KIWI_TERM_M | KIWI_TERM_D;
	EXPECT_EQ(term(c, rest, sizeof(rest), &ti), KIWI_TW_OK);
	EXPECT_EQ(ti.ddp_off, 2);
	EXPECT_EQ(ti.ddp_len, 18);
	EXPECT_EQ(ti.rdma_off, 20);
	EXPECT_EQ(ti.rdma_len, 28);
	EXPECT_EQ(ti.used, KIWI_TERM_MAX_REST);
	rest[1] = 18 + 27;
	EXPECT_EQ(term(c, rest, sizeof(rest), &ti), KIWI_TW_SEGLEN);
}

/* Fewer bytes held than the bits need: refused, nothing read past them. */
TEST(term_have_short)
{
	__u32 c = kiwi_term_ctrl(KIWI_TL_DDP, KIWI_DT_UNTAGGED, 0) |
		  KIWI_TERM_D | KIWI_TERM_R;
	struct kiwi_term t = { .ctrl = kiwi_cpu32(c) };
	__u8 rest[KIWI_TERM_MAX_REST] = { 0, 46, 0x41 };
	struct kiwi_term_info ti;

	kiwi_term_parse(&t, rest, 20, sizeof(rest), &ti);
	EXPECT_EQ(ti.why, KIWI_TW_SHORT);
	kiwi_term_parse(&t, rest, 2, sizeof(rest), &ti);
	EXPECT_EQ(ti.why, KIWI_TW_SHORT);
	kiwi_term_parse(&t, rest, sizeof(rest), sizeof(rest), &ti);
	EXPECT_EQ(ti.why, KIWI_TW_OK);
}

/* RFC 7306 Immediate Data: 8 bytes, the verbs value in the last four. */
TEST(imm_decode)
{
	const __u8 m[8] = { 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef };
	struct kiwi_imm b;
	struct kiwi_verdict v;
	__u32 imm;

	v = kiwi_imm_parse(m, sizeof(m), &imm);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(imm, 0xdeadbeef);
	kiwi_imm_build(&b, 0x01020304);
	EXPECT_EQ(b.data[0] | b.data[1] | b.data[2] | b.data[3], 0);
	EXPECT_EQ(b.data[4], 0x01);
	EXPECT_EQ(b.data[7], 0x04);
	v = kiwi_imm_parse(b.data, sizeof(b), &imm);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(imm, 0x01020304);
}

/* Any length but 8 is a TERMINATE: DDP untagged, message too long. */
TEST(imm_length)
{
	__u8 buf[16] = { 0 };
	struct kiwi_verdict v;
	__u32 len, imm;

	for (len = 0; len < sizeof(buf); len++) {
		v = kiwi_imm_parse(buf, len, &imm);
		EXPECT_EQ(v.ok, len == 8);
		if (len != 8) {
			EXPECT_EQ(v.layer, KIWI_TL_DDP);
			EXPECT_EQ(v.etype, KIWI_DT_UNTAGGED);
			EXPECT_EQ(v.ecode, KIWI_DC_U_MSG_TOOLONG);
		}
	}
	/* A claimed length far beyond the buffer is not read. */
	v = kiwi_imm_parse(buf, 0xffffffff, &imm);
	EXPECT_FALSE(v.ok);
}

static struct kiwi_ctrl_check ctrl(__u8 op, bool tagged, bool last,
				   __u16 ulpdu)
{
	struct kiwi_ctrl c;
	__u16 w = (tagged ? KIWI_DDP_TAGGED : 0) | (last ? KIWI_DDP_LAST : 0) |
		  KIWI_DDP_VERSION << KIWI_DDP_VER_SHIFT |
		  KIWI_RDMAP_VERSION << KIWI_RDMAP_VER_SHIFT | op;

	c.mpa_len = kiwi_cpu16(ulpdu);
	c.ddp_rdmap = kiwi_cpu16(w);
	return kiwi_check_ctrl(&c);
}

/* The opcode table: 1100b and 1101b known, the other RFC 7306 codes not. */
TEST(imm_ctrl)
{
	struct kiwi_ctrl_check r;
	__u8 op;

	EXPECT_EQ(kiwi_hdr_len(KIWI_OP_IMM), 20 + 8);
	EXPECT_EQ(kiwi_hdr_len(KIWI_OP_IMM_SE), 20 + 8);
	EXPECT_EQ(kiwi_op(KIWI_OP_IMM)->qn, KIWI_QN_SEND);
	EXPECT_FALSE(kiwi_op(KIWI_OP_IMM)->solicited);
	EXPECT_TRUE(kiwi_op(KIWI_OP_IMM_SE)->solicited);
	EXPECT_EQ(kiwi_ddp_rdmap(KIWI_OP_IMM_SE, true), 0x414d);
	r = ctrl(KIWI_OP_IMM, false, true, 26);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(r.hdr_len, 28);
	r = ctrl(KIWI_OP_IMM_SE, false, true, 26);
	EXPECT_TRUE(r.ok);
	/* Too short for its 8 bytes: catastrophic. */
	r = ctrl(KIWI_OP_IMM, false, true, 25);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.layer, KIWI_TL_DDP);
	EXPECT_EQ(r.etype, KIWI_DT_CATASTROPHIC);
	/* One segment only: L must be set. */
	r = ctrl(KIWI_OP_IMM, false, false, 26);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.ecode, KIWI_DC_U_INVALID_MO);
	/* Untagged only. */
	r = ctrl(KIWI_OP_IMM, true, true, 26);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.ecode, KIWI_RC_UNEXPECTED_OP);
	/* Reserved opcodes stay refused. */
	for (op = 8; op < 16; op++) {
		if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE ||
		    op == KIWI_OP_ATOMIC_REQ || op == KIWI_OP_ATOMIC_RESP)
			continue;
		r = ctrl(op, false, true, 60);
		EXPECT_FALSE(r.ok);
		EXPECT_EQ(r.layer, KIWI_TL_RDMAP);
		EXPECT_EQ(r.ecode, KIWI_RC_UNEXPECTED_OP);
	}
}

/* An Atomic Request body: CmpSwap, id 7, STag 0xa1b2c3d4 @ 0x1008. */
static void atomic_body(__u8 *b, __u32 aop_word, __u64 to)
{
	memset(b, 0, sizeof(struct kiwi_atomic_req));
	put_be32(b, aop_word);
	put_be32(b + 4, 7);
	put_be32(b + 8, 0xa1b2c3d4);
	put_be64(b + 12, to);
	put_be64(b + 20, 0x1111);		/* swap data */
	put_be64(b + 28, ~0ULL);		/* swap mask */
	put_be64(b + 36, 0x2222);		/* compare data */
	put_be64(b + 44, ~0ULL);		/* compare mask */
}

/* The opcode table has the RFC 7306 Atomic Request and Response. */
TEST(atomic_ctrl)
{
	struct kiwi_ctrl_check r;

	EXPECT_EQ(sizeof(struct kiwi_atomic_req), 52);
	EXPECT_EQ(sizeof(struct kiwi_atomic_resp), 12);
	EXPECT_EQ(kiwi_hdr_len(KIWI_OP_ATOMIC_REQ), 20 + 52);
	EXPECT_EQ(kiwi_hdr_len(KIWI_OP_ATOMIC_RESP), 20 + 12);
	EXPECT_EQ(kiwi_op(KIWI_OP_ATOMIC_REQ)->qn, KIWI_QN_ATOMIC_REQ);
	EXPECT_EQ(kiwi_op(KIWI_OP_ATOMIC_RESP)->qn, KIWI_QN_ATOMIC_RESP);
	EXPECT_EQ(kiwi_ddp_rdmap(KIWI_OP_ATOMIC_REQ, true), 0x414a);
	r = ctrl(KIWI_OP_ATOMIC_REQ, false, true, 70);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(r.hdr_len, 72);
	r = ctrl(KIWI_OP_ATOMIC_RESP, false, true, 30);
	EXPECT_TRUE(r.ok);
	r = ctrl(KIWI_OP_ATOMIC_REQ, false, true, 69);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.etype, KIWI_DT_CATASTROPHIC);
	r = ctrl(KIWI_OP_ATOMIC_REQ, false, false, 70);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.ecode, KIWI_DC_U_INVALID_MO);
	r = ctrl(KIWI_OP_ATOMIC_RESP, true, true, 30);
	EXPECT_FALSE(r.ok);
	EXPECT_EQ(r.ecode, KIWI_RC_UNEXPECTED_OP);
}

TEST(atomic_req_decode)
{
	__u8 b[52];
	struct kiwi_atomic_info ai;
	struct kiwi_verdict v;

	atomic_body(b, KIWI_AOP_CMP_SWAP, 0x1008);
	v = kiwi_atomic_req_parse(b, sizeof(b), &ai);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(ai.aop, KIWI_AOP_CMP_SWAP);
	EXPECT_EQ(ai.req_id, 7);
	EXPECT_EQ(ai.stag, 0xa1b2c3d4);
	EXPECT_EQ(ai.to, 0x1008);
	EXPECT_EQ(ai.data, 0x1111);
	EXPECT_EQ(ai.mask, ~0ULL);
	EXPECT_EQ(ai.cmp, 0x2222);
	EXPECT_EQ(ai.cmp_mask, ~0ULL);
}

/* Each rule of the body and the TERMINATE it earns. */
TEST(atomic_req_rules)
{
	__u8 b[60];
	struct kiwi_atomic_info ai;
	struct kiwi_verdict v;
	__u32 len;

	atomic_body(b, KIWI_AOP_FETCH_ADD, 0x1008);
	for (len = 0; len < sizeof(b); len++) {
		v = kiwi_atomic_req_parse(b, len, &ai);
		if (len == 52) {
			EXPECT_TRUE(v.ok);
			continue;
		}
		EXPECT_FALSE(v.ok);
		EXPECT_EQ(ai.why, KIWI_AR_BAD_LEN);
		EXPECT_EQ(v.layer, KIWI_TL_DDP);
		EXPECT_EQ(v.etype, KIWI_DT_UNTAGGED);
		EXPECT_EQ(v.ecode, KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	atomic_body(b, 3, 0x1008);
	v = kiwi_atomic_req_parse(b, 52, &ai);
	EXPECT_FALSE(v.ok);
	EXPECT_EQ(ai.why, KIWI_AR_BAD_AOP);
	EXPECT_EQ(v.layer, KIWI_TL_RDMAP);
	EXPECT_EQ(v.etype, KIWI_RT_OPERATION);
	EXPECT_EQ(v.ecode, KIWI_RC_UNEXPECTED_OP);
	atomic_body(b, 0x100 | KIWI_AOP_FETCH_ADD, 0x1008);
	v = kiwi_atomic_req_parse(b, 52, &ai);
	EXPECT_EQ(ai.why, KIWI_AR_RSVD);
	for (len = 1; len < 8; len++) {
		atomic_body(b, KIWI_AOP_FETCH_ADD, 0x1000 + len);
		v = kiwi_atomic_req_parse(b, 52, &ai);
		EXPECT_FALSE(v.ok);
		EXPECT_EQ(ai.why, KIWI_AR_MISALIGNED);
		EXPECT_EQ(v.layer, KIWI_TL_RDMAP);
		EXPECT_EQ(v.etype, KIWI_RT_PROTECTION);
		EXPECT_EQ(v.ecode, KIWI_RC_BASE_BOUNDS);
	}
}

/* Build and parse agree; the arithmetic of each operation. */
TEST(atomic_apply)
{
	struct kiwi_atomic_req r;
	struct kiwi_atomic_info ai;
	struct kiwi_verdict v;

	kiwi_atomic_req_build(&r, false, 9, 0x1234, 0x40, 5, 0);
	v = kiwi_atomic_req_parse((const __u8 *)&r, sizeof(r), &ai);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(ai.aop, KIWI_AOP_FETCH_ADD);
	EXPECT_EQ(ai.mask, 0);
	EXPECT_EQ(kiwi_atomic_apply(&ai, 10), 15);
	EXPECT_EQ(kiwi_atomic_apply(&ai, ~0ULL), 4);	/* wraps */
	/* Masked add: a boundary at bit 31 keeps the halves apart. */
	ai.mask = 1ULL << 31;
	ai.data = 1;
	EXPECT_EQ(kiwi_atomic_apply(&ai, 0xffffffffULL), 0);
	ai.mask = 0;
	EXPECT_EQ(kiwi_atomic_apply(&ai, 0xffffffffULL), 0x100000000ULL);
	ai.mask = 1ULL << 31;
	ai.data = 0x0000000100000001ULL;
	EXPECT_EQ(kiwi_atomic_apply(&ai, 0x00000001ffffffffULL),
		  0x0000000200000000ULL);

	kiwi_atomic_req_build(&r, true, 10, 0x1234, 0x40, 77, 3);
	v = kiwi_atomic_req_parse((const __u8 *)&r, sizeof(r), &ai);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(ai.aop, KIWI_AOP_CMP_SWAP);
	EXPECT_EQ(ai.req_id, 10);
	EXPECT_EQ(kiwi_atomic_apply(&ai, 3), 77);	/* hit */
	EXPECT_EQ(kiwi_atomic_apply(&ai, 4), 4);	/* miss */
	/* Masked compare and swap: only the low byte compared/replaced. */
	ai.cmp_mask = 0xff;
	ai.mask = 0xff;
	EXPECT_EQ(kiwi_atomic_apply(&ai, 0xab03), 0xab4d);
	ai.aop = KIWI_AOP_SWAP;
	EXPECT_EQ(kiwi_atomic_apply(&ai, 0xab99), 0xab4d);
}

TEST(atomic_resp)
{
	struct kiwi_atomic_resp r;
	struct kiwi_verdict v;
	__u8 buf[16] = { 0 };
	__u32 id, len;
	__u64 orig;

	kiwi_atomic_resp_build(&r, 0xdeadbeef, 0x0102030405060708ULL);
	v = kiwi_atomic_resp_parse((const __u8 *)&r, sizeof(r), &id, &orig);
	EXPECT_TRUE(v.ok);
	EXPECT_EQ(id, 0xdeadbeef);
	EXPECT_EQ(orig, 0x0102030405060708ULL);
	for (len = 0; len < sizeof(buf); len++) {
		if (len == 12)
			continue;
		v = kiwi_atomic_resp_parse(buf, len, &id, &orig);
		EXPECT_FALSE(v.ok);
		EXPECT_EQ(v.layer, KIWI_TL_DDP);
		EXPECT_EQ(v.ecode, KIWI_DC_U_MSG_TOOLONG);
	}
}

KT_MAIN()
