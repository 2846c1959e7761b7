// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The MPA FPDU framer of include/kiwi/framer.h in user space, and above
 * all its one-step path (kiwi_fr_whole_len(), kiwi_fr_take_hdr(),
 * kiwi_fr_take_trail()) against the stepwise one.
 *
 * A stream of valid FPDUs -- every opcode the framer knows, so every
 * header length, each with payloads of 0..4 bytes (every pad length),
 * and one 9000-byte WRITE -- is framed stepwise one byte at a time as
 * the reference.  Then, for every split point s of the stream, it is
 * framed again in two pieces, [0, s) and [s, end), each copied to the
 * end of its own buffer with an inaccessible page after it (a read past
 * a piece faults): once stepwise, once taking every FPDU that lies whole
 * in a piece in one step, with its CRC computed in one call.  Both must
 * give the reference's events at the same stream offsets, with the same
 * framer state, header and trailer bytes, CRC and verdict after each,
 * and place the same payload; the one-step framing must have used the
 * one-step path for exactly the FPDUs wholly inside a piece and the
 * stepwise fallback for the one that straddles s.
 *
 * Also: every kind of refused control word is refused alike on both
 * paths, at the same offset with the same TERMINATE code; an FPDU one
 * byte short (any truncation) is never whole; the largest FPDU is sized
 * right; the one-step calls take nothing when misused.
 */
#include "../kiwi_test.h"
#include <kiwi/crc32c.h>
#include <kiwi/framer.h>

static struct kiwi_crc_tab tab;

__attribute__((constructor)) static void init_tab(void)
{
	kiwi_crc_tab_init(&tab);
}

/* Every opcode the framer accepts (the holes 8 and 9 excluded). */
static const __u8 all_ops[] = {
	KIWI_OP_WRITE, KIWI_OP_READ_REQ, KIWI_OP_READ_RESP, KIWI_OP_SEND,
	KIWI_OP_SEND_INV, KIWI_OP_SEND_SE, KIWI_OP_SEND_SE_INV,
	KIWI_OP_TERMINATE, KIWI_OP_ATOMIC_REQ, KIWI_OP_ATOMIC_RESP,
	KIWI_OP_IMM, KIWI_OP_IMM_SE,
};
#define N_OPS	(sizeof(all_ops) / sizeof(all_ops[0]))

#define BIG_PAYLOAD	9000
/* Room for the stream, and for the largest FPDU after it (truncations). */
#define MAX_STREAM	(N_OPS * 5 * 80 + BIG_PAYLOAD + 1024 + \
			 KIWI_MPA_MAX_ULPDU + 16)
#define MAX_FPDUS	(N_OPS * 5 + 16)

/* What was built: where each FPDU starts and ends, its opcode. */
struct stream {
	__u8 b[MAX_STREAM];
	__u32 len, n;
	__u32 start[MAX_FPDUS], end[MAX_FPDUS];
	__u8 op[MAX_FPDUS];
};

/*
 * Append an FPDU with the control word @dr and @plen payload bytes after
 * @op's header; fields after the control word and the payload are a
 * pattern (the framer reads neither).  @ulpdu_adj is added to the MPA
 * length, for the too-short case.  CRC32c over everything up to the
 * CRC field, sent little-endian.
 */
static void put_raw(struct stream *st, __u8 op, __u16 dr, __u32 plen,
		    int ulpdu_adj)
{
	__u32 hl = kiwi_hdr_len(op) ? kiwi_hdr_len(op) : 20;
	__u32 ulpdu = (__u32)((int)(hl - KIWI_MPA_HDR_LEN + plen) +
			      ulpdu_adj);
	__u32 fpdu = ulpdu + KIWI_MPA_HDR_LEN, pad = kiwi_mpa_pad(fpdu);
	__u8 *o = st->b + st->len;
	__u32 i, crc;

	ASSERT_LE(st->len + fpdu + pad + KIWI_MPA_CRC_LEN, sizeof(st->b));
	ASSERT_LT(st->n, MAX_FPDUS);
	o[0] = ulpdu >> 8;
	o[1] = ulpdu & 0xff;
	o[2] = dr >> 8;
	o[3] = dr & 0xff;
	for (i = 4; i < fpdu; i++)
		o[i] = (__u8)(i * 13 + op * 7 + st->n);
	memset(o + fpdu, 0, pad);
	crc = ~kiwi_crc_update(&tab, ~0U, o, fpdu + pad);
	for (i = 0; i < 4; i++)
		o[fpdu + pad + i] = (__u8)(crc >> (8 * i));
	st->start[st->n] = st->len;
	st->op[st->n] = op;
	st->len += fpdu + pad + KIWI_MPA_CRC_LEN;
	st->end[st->n++] = st->len;
}

static void put(struct stream *st, __u8 op, __u32 plen)
{
	/* L on every FPDU: single-segment messages need it. */
	put_raw(st, op, kiwi_ddp_rdmap(op, true), plen, 0);
}

/* The stream every split point is tried on. */
static void build_all(struct stream *st)
{
	__u32 i, p;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < N_OPS; i++)
		for (p = 0; p <= 4; p++)
			put(st, all_ops[i], p);
	put(st, KIWI_OP_WRITE, BIG_PAYLOAD);
	put(st, KIWI_OP_SEND, 1);	/* something after the big one */
}

/* ---- framing, with everything it reports recorded ---- */

/* One event other than KIWI_FR_MORE; zero-filled, so memcmp() works. */
struct rec {
	__u32 ev, off;		/* stream offset after its last byte */
	__u32 phase, got, hdr_len, data_rem, trail_len, op, last;
	__u32 layer, etype, ecode, bad_ok, bad_op, bad_hdr_len;
	__u8 hdr[sizeof(((struct kiwi_framer *)0)->hdr.raw)];
	__u8 trail[KIWI_MPA_CRC_LEN + 3];
	__u32 crc, crc_ok;	/* with KIWI_FR_FPDU_DONE */
};

#define MAX_REC		(2 * MAX_FPDUS + 4)

struct run {
	struct rec rec[MAX_REC];
	__u32 nrec;
	__u8 out[MAX_STREAM];	/* payload placed at its stream offset */
	__u32 one_step;		/* FPDUs (or refusals) taken in one step */
	__u32 stepwise;		/* ... and stepwise */
};

static struct rec *record(struct run *r, const struct kiwi_framer *fr,
			  enum kiwi_fr_event ev, __u32 off)
{
	struct rec *x;

	if (r->nrec >= MAX_REC) {
		kt_log("too many events\n");
		abort();
	}
	x = &r->rec[r->nrec++];
	memset(x, 0, sizeof(*x));
	x->ev = ev;
	x->off = off;
	x->phase = fr->phase;
	x->got = fr->got;
	x->hdr_len = fr->hdr_len;
	x->data_rem = fr->data_rem;
	x->trail_len = fr->trail_len;
	x->op = fr->op;
	x->last = fr->last;
	if (ev == KIWI_FR_BAD_CTRL) {
		x->layer = fr->bad.layer;
		x->etype = fr->bad.etype;
		x->ecode = fr->bad.ecode;
		x->bad_ok = fr->bad.ok;
		x->bad_op = fr->bad.op;
		x->bad_hdr_len = fr->bad.hdr_len;
	}
	if (ev == KIWI_FR_HDR_DONE)
		memcpy(x->hdr, fr->hdr.raw, fr->hdr_len);
	if (ev == KIWI_FR_FPDU_DONE)
		memcpy(x->trail, fr->trail, fr->trail_len);
	return x;
}

/* A CRC verdict: @crc ran over everything before the CRC field. */
static void verdict(struct rec *x, const struct kiwi_framer *fr, __u32 crc)
{
	x->crc = crc;
	x->crc_ok = kiwi_fr_crc(fr) == ~crc;
}

enum mode { STEPWISE, ONE_STEP };

/*
 * The FPDU at @p (@whole bytes, all there, stream offset @off) in one
 * step.  Returns false once the stream is refused.
 */
static bool take_whole(struct kiwi_framer *fr, const __u8 *p, __u32 whole,
		       __u32 off, struct run *r)
{
	enum kiwi_fr_event ev = kiwi_fr_take_hdr(fr, p);
	__u32 at, crc;

	r->one_step++;
	if (ev == KIWI_FR_BAD_CTRL) {
		record(r, fr, ev, off + sizeof(struct kiwi_ctrl));
		return false;
	}
	if (ev != KIWI_FR_HDR_DONE) {
		kt_log("take_hdr at %u: event %d\n", off, ev);
		abort();
	}
	at = fr->hdr_len;
	record(r, fr, ev, off + at);
	if (fr->data_rem) {
		__u32 n = fr->data_rem;

		memcpy(r->out + off + at, p + at, n);
		at += n;
		if (kiwi_fr_advance(fr, n) != KIWI_FR_MORE) {
			kt_log("payload at %u: not MORE\n", off);
			abort();
		}
	}
	/* Header, payload and pad: one CRC call over contiguous bytes. */
	crc = kiwi_crc_update(&tab, ~0U, p, whole - KIWI_MPA_CRC_LEN);
	ev = kiwi_fr_take_trail(fr, p + at);
	if (ev != KIWI_FR_FPDU_DONE || at + fr->trail_len != whole) {
		kt_log("take_trail at %u: event %d, %u + %u != %u\n", off, ev,
		       at, fr->trail_len, whole);
		abort();
	}
	verdict(record(r, fr, ev, off + whole), fr, crc);
	return true;
}

/*
 * Frame the @len bytes of @s in the pieces [0, cut) and [cut, len), or
 * one byte at a time if @bytewise; each piece is first copied to the end
 * of @area (@area_len bytes, an inaccessible page after them).  As
 * kmod/rx.c: header and trailer bytes into the framer, payload placed,
 * the CRC running over all but the CRC field.
 */
static void frame(const __u8 *s, __u32 len, __u32 cut, bool bytewise,
		  enum mode mode, __u8 *area, __u32 area_len, struct run *r)
{
	struct kiwi_framer fr;
	__u32 off = 0, crc = ~0U;
	bool fpdu_begun_stepwise = false;

	kiwi_fr_init(&fr);
	r->nrec = 0;
	r->one_step = r->stepwise = 0;
	memset(r->out, 0xee, len);
	while (off < len) {
		__u32 piece = bytewise ? 1 : off < cut ? cut - off : len - off;
		const __u8 *p = area + area_len - piece;

		if (piece > area_len)
			abort();
		memcpy(area + area_len - piece, s + off, piece);
		while (piece) {
			enum kiwi_fr_event ev;
			__u32 n;

			if (mode == ONE_STEP && fr.phase == KIWI_FR_CTRL &&
			    !fr.got) {
				__u32 whole = kiwi_fr_whole_len(p, piece);

				if (whole) {
					if (!take_whole(&fr, p, whole, off, r))
						return;
					p += whole;
					off += whole;
					piece -= whole;
					continue;
				}
			}
			if (fr.phase == KIWI_FR_CTRL && !fr.got)
				fpdu_begun_stepwise = true;
			n = kiwi_fr_want(&fr, piece);
			if (!n || fr.phase == KIWI_FR_DEAD)
				abort();
			if (fr.phase == KIWI_FR_DATA) {
				crc = kiwi_crc_copy(&tab, crc, r->out + off, p,
						    n);
			} else {
				__u8 *dst = kiwi_fr_buf(&fr);

				memcpy(dst, p, n);
				/* As kiwi_rx_crc_framer(): not the CRC field. */
				if (fr.phase != KIWI_FR_TRAIL)
					crc = kiwi_crc_update(&tab, crc, dst, n);
				else if (fr.got < kiwi_fr_pad_len(&fr))
					crc = kiwi_crc_update(&tab, crc, dst,
						kiwi_fr_pad_len(&fr) - fr.got < n ?
						kiwi_fr_pad_len(&fr) - fr.got : n);
			}
			p += n;
			off += n;
			piece -= n;
			ev = kiwi_fr_advance(&fr, n);
			if (ev == KIWI_FR_MORE)
				continue;
			if (ev == KIWI_FR_FPDU_DONE) {
				verdict(record(r, &fr, ev, off), &fr, crc);
				crc = ~0U;
				r->stepwise += fpdu_begun_stepwise;
				fpdu_begun_stepwise = false;
				continue;
			}
			record(r, &fr, ev, off);
			if (ev == KIWI_FR_BAD_CTRL) {
				r->stepwise++;
				return;
			}
		}
	}
}

/* Pages with an inaccessible one after them: a read past the end faults. */
static __u8 *guarded(__u32 len)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t span = ((size_t)len + pg - 1) / pg * pg;
	__u8 *m = mmap(NULL, span + pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		abort();
	if (mprotect(m + span, pg, PROT_NONE))
		abort();
	return m + span - len;	/* @len bytes, then the guard page */
}

/* The first difference between two runs, logged; true if none. */
static bool same_run(const struct run *a, const struct run *b, __u32 len,
		     const char *what, __u32 cut)
{
	__u32 i;

	if (a->nrec != b->nrec) {
		kt_log("%s, split %u: %u events, reference %u\n", what, cut,
		       b->nrec, a->nrec);
		return false;
	}
	for (i = 0; i < a->nrec; i++) {
		if (memcmp(&a->rec[i], &b->rec[i], sizeof(a->rec[i]))) {
			kt_log("%s, split %u: event %u (ev %u at %u) differs (ev %u at %u)\n",
			       what, cut, i, b->rec[i].ev, b->rec[i].off,
			       a->rec[i].ev, a->rec[i].off);
			return false;
		}
	}
	if (memcmp(a->out, b->out, len)) {
		kt_log("%s, split %u: placed payload differs\n", what, cut);
		return false;
	}
	return true;
}

/* The reference: stepwise, a byte at a time. */
static void reference(const struct stream *st, struct run *ref, __u8 *area,
		      __u32 area_len)
{
	frame(st->b, st->len, st->len, true, STEPWISE, area, area_len, ref);
}

TEST(reference_is_the_stream)
{
	static struct stream st;
	static struct run ref;
	__u8 *area = guarded(MAX_STREAM);
	__u32 i;

	build_all(&st);
	reference(&st, &ref, area, MAX_STREAM);
	ASSERT_EQ(ref.nrec, 2 * st.n);
	for (i = 0; i < st.n; i++) {
		const struct rec *h = &ref.rec[2 * i], *f = &ref.rec[2 * i + 1];
		__u32 hl = kiwi_hdr_len(st.op[i]);

		ASSERT_EQ(h->ev, KIWI_FR_HDR_DONE);
		EXPECT_EQ(h->off, st.start[i] + hl);
		EXPECT_EQ(h->op, st.op[i]);
		EXPECT_EQ(h->hdr_len, hl);
		EXPECT_EQ(h->got, 0);
		EXPECT_EQ(h->phase, h->data_rem ? KIWI_FR_DATA : KIWI_FR_TRAIL);
		EXPECT_TRUE(!memcmp(h->hdr, st.b + st.start[i], hl));
		ASSERT_EQ(f->ev, KIWI_FR_FPDU_DONE);
		EXPECT_EQ(f->off, st.end[i]);
		EXPECT_EQ(f->phase, KIWI_FR_CTRL);
		EXPECT_EQ(f->got, 0);
		EXPECT_EQ(f->crc_ok, 1);
		EXPECT_TRUE(!memcmp(ref.out + st.start[i] + hl,
				    st.b + st.start[i] + hl,
				    st.end[i] - f->trail_len -
				    st.start[i] - hl));
	}
	/* Every pad length came up, and a big payload. */
	{
		bool pads[4] = { 0 };

		for (i = 0; i < st.n; i++)
			pads[ref.rec[2 * i + 1].trail_len - KIWI_MPA_CRC_LEN] =
				true;
		EXPECT_TRUE(pads[0] && pads[1] && pads[2] && pads[3]);
	}
	kt_log("%u FPDUs, %u bytes\n", st.n, st.len);
}

/*
 * Every split point: both framings in two pieces equal the reference,
 * and the one-step path took exactly the FPDUs wholly inside a piece.
 */
TEST_TIMEOUT(every_split_point, 300)
{
	static struct stream st;
	static struct run ref, run;
	__u8 *area1 = guarded(MAX_STREAM), *area2 = guarded(MAX_STREAM);
	__u64 one_step = 0, fallback = 0, splits = 0;
	__u32 cut, i;

	build_all(&st);
	reference(&st, &ref, area1, MAX_STREAM);
	for (cut = 0; cut <= st.len; cut++) {
		__u32 straddle = 0;
		__u8 *area;

		for (i = 0; i < st.n; i++)
			straddle += st.start[i] < cut && cut < st.end[i];

		/* The two pieces in different areas, each against a guard. */
		area = cut & 1 ? area2 : area1;
		frame(st.b, st.len, cut, false, STEPWISE, area, MAX_STREAM,
		      &run);
		ASSERT_TRUE(same_run(&ref, &run, st.len, "stepwise", cut));
		ASSERT_EQ(run.one_step, 0);

		frame(st.b, st.len, cut, false, ONE_STEP, area, MAX_STREAM,
		      &run);
		ASSERT_TRUE(same_run(&ref, &run, st.len, "one-step", cut));
		ASSERT_EQ(run.stepwise, straddle);
		ASSERT_EQ(run.one_step, st.n - straddle);
		one_step += run.one_step;
		fallback += run.stepwise;
		splits++;
	}
	EXPECT_GT(one_step, 0);
	EXPECT_GT(fallback, 0);
	kt_log("%llu split points: %llu FPDUs in one step, %llu stepwise\n",
	       (unsigned long long)splits, (unsigned long long)one_step,
	       (unsigned long long)fallback);
}

/*
 * The CRC in one call over an FPDU equals the CRC the stepwise path
 * folds in pieces (header, payload, pad), for every FPDU of the stream.
 */
TEST(one_call_crc)
{
	static struct stream st;
	__u32 i;

	build_all(&st);
	for (i = 0; i < st.n; i++) {
		const __u8 *p = st.b + st.start[i];
		__u32 whole = st.end[i] - st.start[i];
		__u32 hl = kiwi_hdr_len(st.op[i]);
		__u32 one, pieces, sent;

		ASSERT_EQ(kiwi_fr_whole_len(p, whole), whole);
		one = kiwi_crc_update(&tab, ~0U, p, whole - 4);
		pieces = kiwi_crc_update(&tab, ~0U, p, hl);
		pieces = kiwi_crc_update(&tab, pieces, p + hl,
					 whole - 4 - hl);
		sent = p[whole - 4] | p[whole - 3] << 8 |
		       p[whole - 2] << 16 | (__u32)p[whole - 1] << 24;
		EXPECT_EQ(one, pieces);
		EXPECT_EQ(~one, sent);
	}
}

/*
 * Every refusal kiwi_check_ctrl() makes, after two good FPDUs, at every
 * split point: the same event at the same offset with the same code.
 */
TEST(refused_alike)
{
	static struct stream st;
	static struct run ref, run;
	__u8 *area = guarded(MAX_STREAM);
	const __u16 send = kiwi_ddp_rdmap(KIWI_OP_SEND, true);
	const __u16 write = kiwi_ddp_rdmap(KIWI_OP_WRITE, true);
	const struct {
		const char *what;
		__u8 op;
		__u16 dr;
		__u32 plen;
		int adj;	/* to the MPA length */
	} bad[] = {
		{ "DDP version 0", KIWI_OP_SEND,
		  send & ~KIWI_DDP_VER_MASK, 5, 0 },
		{ "DDP version 2, tagged", KIWI_OP_WRITE,
		  (write & ~KIWI_DDP_VER_MASK) | 2 << KIWI_DDP_VER_SHIFT, 5,
		  0 },
		{ "RDMAP version 0", KIWI_OP_SEND,
		  send & ~KIWI_RDMAP_VER_MASK, 5, 0 },
		{ "RDMAP version 3", KIWI_OP_SEND,
		  send | KIWI_RDMAP_VER_MASK, 5, 0 },
		{ "opcode 8", 8, (send & ~KIWI_RDMAP_OP_MASK) | 8, 5, 0 },
		{ "opcode 9", 9, (send & ~KIWI_RDMAP_OP_MASK) | 9, 5, 0 },
		{ "opcode 15", 15, (send & ~KIWI_RDMAP_OP_MASK) | 15, 5, 0 },
		{ "untagged WRITE", KIWI_OP_WRITE, write & ~KIWI_DDP_TAGGED,
		  5, 0 },
		{ "tagged SEND", KIWI_OP_SEND, send | KIWI_DDP_TAGGED, 5, 0 },
		{ "ULPDU one short of the header", KIWI_OP_SEND, send, 0,
		  -1 },
		{ "ULPDU of 2", KIWI_OP_SEND, send, 0, -16 },
		{ "READ Request without L", KIWI_OP_READ_REQ,
		  kiwi_ddp_rdmap(KIWI_OP_READ_REQ, false), 0, 0 },
		{ "TERMINATE without L", KIWI_OP_TERMINATE,
		  kiwi_ddp_rdmap(KIWI_OP_TERMINATE, false), 0, 0 },
		{ "Atomic Request without L", KIWI_OP_ATOMIC_REQ,
		  kiwi_ddp_rdmap(KIWI_OP_ATOMIC_REQ, false), 0, 0 },
		{ "Immediate Data without L", KIWI_OP_IMM,
		  kiwi_ddp_rdmap(KIWI_OP_IMM, false), 0, 0 },
	};
	__u32 k, cut, i;

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		const struct rec *last;
		__u32 at;

		memset(&st, 0, sizeof(st));
		put(&st, KIWI_OP_WRITE, 3);
		put(&st, KIWI_OP_SEND, 8);
		at = st.len;
		put_raw(&st, bad[k].op, bad[k].dr, bad[k].plen, bad[k].adj);
		put(&st, KIWI_OP_SEND, 2);	/* never framed */
		reference(&st, &ref, area, MAX_STREAM);
		ASSERT_EQ(ref.nrec, 5);
		last = &ref.rec[4];
		ASSERT_EQ(last->ev, KIWI_FR_BAD_CTRL);
		EXPECT_EQ(last->off, at + 4);
		EXPECT_EQ(last->phase, KIWI_FR_DEAD);
		EXPECT_EQ(last->bad_ok, 0);
		/* What kiwi_check_ctrl() says of the control word itself. */
		{
			struct kiwi_ctrl c;
			struct kiwi_ctrl_check v;

			memcpy(&c, st.b + at, sizeof(c));
			v = kiwi_check_ctrl(&c);
			EXPECT_FALSE(v.ok);
			EXPECT_EQ(last->layer, v.layer);
			EXPECT_EQ(last->etype, v.etype);
			EXPECT_EQ(last->ecode, v.ecode);
		}
		for (cut = 0; cut <= st.len; cut++) {
			__u32 straddle = 0;

			for (i = 0; i < 3; i++)
				straddle += st.start[i] < cut &&
					    cut < st.end[i];
			frame(st.b, st.len, cut, false, ONE_STEP, area,
			      MAX_STREAM, &run);
			ASSERT_TRUE(same_run(&ref, &run, st.len, bad[k].what,
					     cut));
			/* Stepwise only what the cut falls inside. */
			ASSERT_EQ(run.stepwise, straddle);
			ASSERT_EQ(run.one_step, 3 - straddle);
		}
		kt_log("%s: layer %u etype %u ecode %u at %u, alike\n",
		       bad[k].what, last->layer, last->etype, last->ecode,
		       last->off);
	}
}

/* An FPDU cut short anywhere is never whole; extra bytes do not matter. */
TEST(truncated_never_whole)
{
	static struct stream st;
	__u32 i, avail, checked = 0;

	build_all(&st);
	/* And the largest ULPDU there is. */
	put(&st, KIWI_OP_WRITE, KIWI_MPA_MAX_ULPDU + KIWI_MPA_HDR_LEN -
	    kiwi_hdr_len(KIWI_OP_WRITE));
	ASSERT_EQ(st.end[st.n - 1] - st.start[st.n - 1],
		  KIWI_MPA_MAX_ULPDU + KIWI_MPA_HDR_LEN + 3 + KIWI_MPA_CRC_LEN);
	for (i = 0; i < st.n; i++) {
		__u32 whole = st.end[i] - st.start[i];
		__u8 *g = guarded(whole);

		for (avail = 0; avail < whole; avail++) {
			/*
			 * The first @avail bytes, right before the guard:
			 * only up to 16 copied (the largest FPDU would take
			 * seconds), the rest stale -- kiwi_fr_whole_len()
			 * reads the control word only, and the guard page
			 * faults a read past @avail.
			 */
			memcpy(g + whole - avail, st.b + st.start[i],
			       avail < 16 ? avail : 16);
			ASSERT_EQ(kiwi_fr_whole_len(g + whole - avail, avail),
				  0);
			checked++;
		}
		memcpy(g, st.b + st.start[i], whole);
		ASSERT_EQ(kiwi_fr_whole_len(g, whole), whole);
		/* With the next FPDU's bytes after it: still this one. */
		if (i + 1 < st.n)
			ASSERT_EQ(kiwi_fr_whole_len(st.b + st.start[i],
						    st.len - st.start[i]),
				  whole);
	}
	kt_log("%u truncations of %u FPDUs\n", checked, st.n);
}

/* Out of place, the one-step calls take nothing and change nothing. */
TEST(misuse_takes_nothing)
{
	static struct stream st;
	struct kiwi_framer fr, before;
	const __u8 *p;

	memset(&st, 0, sizeof(st));
	put(&st, KIWI_OP_SEND, 6);
	p = st.b;

	kiwi_fr_init(&fr);
	memcpy(&before, &fr, sizeof(fr));
	/* Trailer at a boundary. */
	EXPECT_EQ(kiwi_fr_take_trail(&fr, p), KIWI_FR_MORE);
	EXPECT_TRUE(!memcmp(&fr, &before, sizeof(fr)));

	/* Header halfway into a control word. */
	memcpy(kiwi_fr_buf(&fr), p, 2);
	EXPECT_EQ(kiwi_fr_advance(&fr, 2), KIWI_FR_MORE);
	memcpy(&before, &fr, sizeof(fr));
	EXPECT_EQ(kiwi_fr_take_hdr(&fr, p), KIWI_FR_MORE);
	EXPECT_TRUE(!memcmp(&fr, &before, sizeof(fr)));

	/* Header taken, payload not yet placed: no trailer. */
	kiwi_fr_init(&fr);
	EXPECT_EQ(kiwi_fr_take_hdr(&fr, p), KIWI_FR_HDR_DONE);
	EXPECT_EQ(fr.phase, KIWI_FR_DATA);
	EXPECT_EQ(fr.data_rem, 6);
	memcpy(&before, &fr, sizeof(fr));
	EXPECT_EQ(kiwi_fr_take_trail(&fr, p), KIWI_FR_MORE);
	EXPECT_TRUE(!memcmp(&fr, &before, sizeof(fr)));
	EXPECT_EQ(kiwi_fr_take_hdr(&fr, p), KIWI_FR_MORE);
	EXPECT_TRUE(!memcmp(&fr, &before, sizeof(fr)));

	/* Dead: nothing more. */
	kiwi_fr_init(&fr);
	fr.phase = KIWI_FR_DEAD;
	memcpy(&before, &fr, sizeof(fr));
	EXPECT_EQ(kiwi_fr_take_hdr(&fr, p), KIWI_FR_MORE);
	EXPECT_EQ(kiwi_fr_take_trail(&fr, p), KIWI_FR_MORE);
	EXPECT_TRUE(!memcmp(&fr, &before, sizeof(fr)));
}

KT_MAIN()
