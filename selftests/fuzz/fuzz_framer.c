// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_framer -- libFuzzer target for the MPA FPDU framer of
 * include/kiwi/framer.h, the state machine kmod/rx.c runs over every
 * byte a peer sends in the data phase.
 *
 * Input: byte 0 seeds the chunk sizes; the rest is used twice.
 *
 *  1. As a raw TCP stream (anything a peer can send).  It is framed
 *     stepwise three times: in one piece, one byte at a time, and in
 *     pseudo-random pieces of 1..300 bytes; then with the one-step path
 *     (kiwi_fr_whole_len(), kiwi_fr_take_hdr(), the payload, then
 *     kiwi_fr_take_trail(), the CRC in one call over the FPDU) wherever
 *     a piece holds a whole FPDU at a boundary, stepwise elsewhere: in
 *     pseudo-random pieces of 1..4096 bytes (sizes spread evenly over
 *     the powers of two) and in one piece.  Each one-step piece is a
 *     heap copy of exactly its size, so a read past it is an ASan
 *     error.  The differential property: every framing gives the same
 *     sequence of events (the same headers, payloads, CRC values and
 *     verdicts and the same refusal at the same offset).  Plus the
 *     framer's own bounds: it never asks for more bytes than offered,
 *     never writes past its buffers, a refusal names a real layer, and
 *     after each one-step call it is in the state the stepwise path
 *     leaves.
 *
 *  2. As a recipe for a valid stream: each FPDU's opcode, L bit, payload
 *     length (up to 2 KiB) and payload bytes come from the input; headers,
 *     pad and CRC are built as a peer would.  Framed in random chunks,
 *     stepwise and one-step, and in one piece one-step (where every FPDU
 *     must take the one-step path), every FPDU must come out whole: same
 *     header, same payload, CRC correct, in order, nothing refused, and
 *     the same trace each way.
 */
#include "fuzz.h"

#include <kiwi/crc32c.h>
#include <kiwi/framer.h>

static struct kiwi_crc_tab crc_tab;

/* FNV-1a over everything the framer reports: a run's fingerprint. */
struct trace {
	uint64_t h;
	uint32_t fpdus;
	uint32_t bad_at;		/* stream offset of a refusal + 1 */
	uint32_t whole;			/* FPDUs taken in one step */
	uint8_t payload[1 << 16];	/* of the current FPDU */
	uint32_t plen;
	uint32_t crc;
};

static void mix(struct trace *t, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		t->h = (t->h ^ *b++) * 0x100000001b3ULL;
}

/*
 * Chunk sizes: 0 = all at once, 1 = bytewise, 2 = a seeded PRNG's
 * 1..300, 3 = its 1..4096 with the size's bit length uniform.
 */
struct chunker {
	int mode;
	uint32_t state;
};

static uint32_t next_chunk(struct chunker *c, uint32_t left)
{
	uint32_t n;

	if (c->mode == 0)
		return left;
	if (c->mode == 1)
		return 1;
	c->state = c->state * 1103515245u + 12345u;
	if (c->mode == 2)
		n = 1 + (c->state >> 16) % 300;
	else
		n = 1 + (c->state >> 16) % (1u << (1 + (c->state >> 8) % 12));
	return n < left ? n : left;
}

typedef void on_fpdu_fn(const struct kiwi_framer *, const struct trace *,
			void *);

/* A control word refused after the stream's first @off bytes. */
static void refused(const struct kiwi_framer *fr, struct trace *t,
		    uint32_t off)
{
	FUZZ_ASSERT(fr->phase == KIWI_FR_DEAD);
	FUZZ_ASSERT(fr->bad.layer <= KIWI_TL_LLP);
	/* Field by field: the struct's padding is not the framer's. */
	mix(t, &fr->bad.op, 1);
	mix(t, &fr->bad.layer, 1);
	mix(t, &fr->bad.etype, 1);
	mix(t, &fr->bad.ecode, 1);
	mix(t, &fr->bad.hdr_len, sizeof(fr->bad.hdr_len));
	mix(t, &fr->bad.ok, 1);
	t->bad_at = off + 1;
}

/* KIWI_FR_HDR_DONE, either path. */
static void hdr_done(const struct kiwi_framer *fr, struct trace *t)
{
	FUZZ_ASSERT(fr->hdr_len == kiwi_hdr_len(fr->op));
	FUZZ_ASSERT(fr->hdr_len <= sizeof(fr->hdr.raw));
	FUZZ_ASSERT(!fr->got);
	FUZZ_ASSERT(fr->phase == (fr->data_rem ? KIWI_FR_DATA :
						 KIWI_FR_TRAIL));
	mix(t, fr->hdr.raw, fr->hdr_len);
	/* And what the framer made of it. */
	mix(t, &fr->op, 1);
	mix(t, &fr->last, 1);
	mix(t, &fr->data_rem, sizeof(fr->data_rem));
	mix(t, &fr->trail_len, sizeof(fr->trail_len));
	t->plen = 0;
}

/* KIWI_FR_FPDU_DONE, either path: @crc ran over all before the CRC. */
static void fpdu_done(const struct kiwi_framer *fr, struct trace *t,
		      uint32_t crc, on_fpdu_fn *on_fpdu, void *arg)
{
	uint8_t ok = kiwi_fr_crc(fr) == ~crc;

	FUZZ_ASSERT(fr->phase == KIWI_FR_CTRL && !fr->got);
	mix(t, t->payload, t->plen);
	mix(t, &crc, sizeof(crc));
	mix(t, &ok, 1);
	t->fpdus++;
	t->crc = crc;
	if (on_fpdu)
		on_fpdu(fr, t, arg);
	t->crc = ~0U;
	t->plen = 0;
}

/*
 * The one-step path: the FPDU at @p is whole (@whole bytes, stream
 * offset @off).  Header and trailer in one call each, the payload in
 * one copy, the CRC in one call over the FPDU.  Returns false on a
 * refusal.
 */
static bool take_whole(struct kiwi_framer *fr, const uint8_t *p,
		       uint32_t whole, uint32_t off, struct trace *t,
		       on_fpdu_fn *on_fpdu, void *arg)
{
	enum kiwi_fr_event ev = kiwi_fr_take_hdr(fr, p);
	uint32_t at, crc;

	if (ev == KIWI_FR_BAD_CTRL) {
		refused(fr, t, off + sizeof(struct kiwi_ctrl));
		return false;
	}
	FUZZ_ASSERT(ev == KIWI_FR_HDR_DONE);
	FUZZ_ASSERT(fr->hdr_len + fr->data_rem + fr->trail_len == whole);
	FUZZ_ASSERT(!memcmp(fr->hdr.raw, p, fr->hdr_len));
	hdr_done(fr, t);
	at = fr->hdr_len;
	if (fr->data_rem) {
		uint32_t n = fr->data_rem;

		FUZZ_ASSERT(n <= sizeof(t->payload));
		memcpy(t->payload, p + at, n);
		t->plen = n;
		at += n;
		FUZZ_ASSERT(kiwi_fr_advance(fr, n) == KIWI_FR_MORE);
	}
	FUZZ_ASSERT(fr->phase == KIWI_FR_TRAIL && !fr->got);
	crc = kiwi_crc_update(&crc_tab, ~0U, p, whole - KIWI_MPA_CRC_LEN);
	ev = kiwi_fr_take_trail(fr, p + at);
	FUZZ_ASSERT(ev == KIWI_FR_FPDU_DONE);
	FUZZ_ASSERT(!memcmp(fr->trail, p + at, fr->trail_len));
	t->whole++;
	fpdu_done(fr, t, crc, on_fpdu, arg);
	return true;
}

/*
 * Frame @len bytes of @s in chunks; record every event in @t.  Stops at
 * a refusal.  Mirrors kiwi_rx_step(): header and trailer bytes go into
 * the framer, payload is "placed" (copied, CRC folded in).  With
 * @one_step, an FPDU that lies whole in the rest of a chunk at a
 * boundary is taken by take_whole(); each chunk is then a heap copy of
 * exactly its size.
 */
static void frame(const uint8_t *s, uint32_t len, struct chunker *c,
		  bool one_step, struct trace *t, on_fpdu_fn *on_fpdu,
		  void *arg)
{
	struct kiwi_framer fr;
	uint32_t off = 0;

	kiwi_fr_init(&fr);
	memset(t, 0, offsetof(struct trace, payload));
	t->h = 0xcbf29ce484222325ULL;
	t->crc = ~0U;
	while (off < len) {
		uint32_t chunk = next_chunk(c, len - off);
		uint8_t *copy = NULL;
		const uint8_t *p = s + off;

		if (one_step) {
			copy = malloc(chunk);
			FUZZ_ASSERT(copy);
			memcpy(copy, s + off, chunk);
			p = copy;
		}
		while (chunk) {
			enum kiwi_fr_phase ph = fr.phase;
			uint32_t n;
			enum kiwi_fr_event ev;

			FUZZ_ASSERT(ph != KIWI_FR_DEAD);
			if (one_step && ph == KIWI_FR_CTRL && !fr.got) {
				uint32_t whole = kiwi_fr_whole_len(p, chunk);

				FUZZ_ASSERT(whole <= chunk);
				if (whole) {
					if (!take_whole(&fr, p, whole, off, t,
							on_fpdu, arg)) {
						free(copy);
						return;
					}
					p += whole;
					off += whole;
					chunk -= whole;
					continue;
				}
			}
			n = kiwi_fr_want(&fr, chunk);
			FUZZ_ASSERT(n > 0 && n <= chunk);
			if (ph == KIWI_FR_DATA) {
				FUZZ_ASSERT(t->plen + n <= sizeof(t->payload));
				t->crc = kiwi_crc_copy(&crc_tab, t->crc,
						       t->payload + t->plen,
						       p, n);
				t->plen += n;
			} else {
				uint8_t *dst = kiwi_fr_buf(&fr);

				/* Inside the framer's own buffers. */
				FUZZ_ASSERT(ph == KIWI_FR_TRAIL ?
					dst + n <= fr.trail + sizeof(fr.trail) :
					dst + n <= fr.hdr.raw + sizeof(fr.hdr.raw));
				memcpy(dst, p, n);
			}
			p += n;
			off += n;
			chunk -= n;
			ev = kiwi_fr_advance(&fr, n);
			switch (ev) {
			case KIWI_FR_BAD_CTRL:
				refused(&fr, t, off);
				free(copy);
				return;
			case KIWI_FR_HDR_DONE:
				hdr_done(&fr, t);
				t->crc = kiwi_crc_copy(&crc_tab, t->crc,
						       t->payload, fr.hdr.raw,
						       fr.hdr_len);
				break;
			case KIWI_FR_FPDU_DONE: {
				uint32_t crc;
				uint8_t pad[3];

				FUZZ_ASSERT(kiwi_fr_pad_len(&fr) <= 3);
				crc = kiwi_crc_copy(&crc_tab, t->crc, pad,
						    fr.trail,
						    kiwi_fr_pad_len(&fr));
				fpdu_done(&fr, t, crc, on_fpdu, arg);
				break;
			}
			default:
				break;
			}
		}
		free(copy);
	}
}

/* Two framings' traces: the same in everything but the path taken. */
static void same_trace(const struct trace *x, const struct trace *y)
{
	FUZZ_ASSERT(x->h == y->h);
	FUZZ_ASSERT(x->fpdus == y->fpdus);
	FUZZ_ASSERT(x->bad_at == y->bad_at);
}

static void raw_stream(const uint8_t *s, uint32_t len, uint8_t seed)
{
	static struct trace a, b, r, w, wa;
	struct chunker whole = { 0, 0 }, bytes = { 1, 0 }, rnd = { 2, seed };
	struct chunker rnd_w = { 3, seed ^ 0xa5 }, whole_w = { 0, 0 };

	frame(s, len, &whole, false, &a, NULL, NULL);
	frame(s, len, &bytes, false, &b, NULL, NULL);
	frame(s, len, &rnd, false, &r, NULL, NULL);
	frame(s, len, &rnd_w, true, &w, NULL, NULL);
	frame(s, len, &whole_w, true, &wa, NULL, NULL);
	same_trace(&a, &b);
	same_trace(&a, &r);
	same_trace(&a, &w);
	same_trace(&a, &wa);
	FUZZ_ASSERT(!a.whole && !b.whole && !r.whole);
	FUZZ_ASSERT(w.whole <= w.fpdus && wa.whole <= wa.fpdus);
}

/* ---- 2: a valid stream built from the input ---- */

#define MAX_BUILT	64
#define MAX_PAYLOAD	2048

struct built {
	uint32_t n, seen;
	uint8_t op[MAX_BUILT];
	uint32_t hdr_at[MAX_BUILT], hdr_len[MAX_BUILT];
	uint32_t pay_at[MAX_BUILT], pay_len[MAX_BUILT];
	const uint8_t *stream;
};

static const uint8_t valid_ops[] = {
	KIWI_OP_WRITE, KIWI_OP_READ_REQ, KIWI_OP_READ_RESP, KIWI_OP_SEND,
	KIWI_OP_SEND_INV, KIWI_OP_SEND_SE, KIWI_OP_SEND_SE_INV,
	KIWI_OP_TERMINATE,
};

/* Append one FPDU to @out; returns its length. */
static uint32_t build_fpdu(uint8_t *out, uint8_t op, bool last,
			   const uint8_t *hdr_fill, const uint8_t *pay,
			   uint32_t plen, struct built *b)
{
	uint32_t hl = kiwi_hdr_len(op), ulpdu = hl - KIWI_MPA_HDR_LEN + plen;
	uint32_t fpdu = ulpdu + KIWI_MPA_HDR_LEN, pad = kiwi_mpa_pad(fpdu);
	uint16_t dr = (uint16_t)(KIWI_DDP_VERSION << KIWI_DDP_VER_SHIFT |
				 KIWI_RDMAP_VERSION << KIWI_RDMAP_VER_SHIFT | op);
	uint32_t crc;

	/* READ requests and TERMINATEs are single-segment messages. */
	if (last || op == KIWI_OP_READ_REQ || op == KIWI_OP_TERMINATE)
		dr |= KIWI_DDP_LAST;
	if (kiwi_op_tagged(op))
		dr |= KIWI_DDP_TAGGED;
	memcpy(out + sizeof(struct kiwi_ctrl), hdr_fill,
	       hl - sizeof(struct kiwi_ctrl));
	out[0] = ulpdu >> 8;
	out[1] = ulpdu & 0xff;
	out[2] = dr >> 8;
	out[3] = dr & 0xff;
	memcpy(out + hl, pay, plen);
	memset(out + hl + plen, 0, pad);
	crc = ~kiwi_crc_update(&crc_tab, ~0U, out, fpdu + pad);
	out[fpdu + pad + 0] = crc & 0xff;
	out[fpdu + pad + 1] = (crc >> 8) & 0xff;
	out[fpdu + pad + 2] = (crc >> 16) & 0xff;
	out[fpdu + pad + 3] = crc >> 24;
	b->op[b->n] = op;
	b->hdr_len[b->n] = hl;
	b->pay_len[b->n] = plen;
	b->n++;
	return fpdu + pad + KIWI_MPA_CRC_LEN;
}

static void check_fpdu(const struct kiwi_framer *fr, const struct trace *t,
		       void *arg)
{
	struct built *b = arg;
	uint32_t i = b->seen++;

	FUZZ_ASSERT(i < b->n);
	FUZZ_ASSERT(fr->op == b->op[i]);
	FUZZ_ASSERT(fr->hdr_len == b->hdr_len[i]);
	FUZZ_ASSERT(!memcmp(fr->hdr.raw, b->stream + b->hdr_at[i],
			    fr->hdr_len));
	FUZZ_ASSERT(t->plen == b->pay_len[i]);
	FUZZ_ASSERT(!memcmp(t->payload, b->stream + b->pay_at[i], t->plen));
	FUZZ_ASSERT(kiwi_fr_crc(fr) == ~t->crc);
}

static void valid_stream(const uint8_t *d, size_t size, uint8_t seed)
{
	static uint8_t stream[MAX_BUILT * (MAX_PAYLOAD + 64)];
	static const uint8_t zero[64];
	static struct trace t, w;
	static struct built b;
	struct chunker rnd = { 2, seed ^ 0x5a }, rnd_w = { 3, seed ^ 0x3c };
	struct chunker whole_w = { 0, 0 };
	uint32_t len = 0;
	size_t at = 0;

	memset(&b, 0, sizeof(b));
	while (at + 3 <= size && b.n < MAX_BUILT) {
		uint8_t op = valid_ops[d[at] & 7];
		bool last = d[at] & 8;
		uint32_t plen = (d[at + 1] | (d[at + 2] & 7) << 8) % MAX_PAYLOAD;
		const uint8_t *fill = zero;
		uint32_t hl = kiwi_hdr_len(op), avail;

		at += 3;
		if (size - at >= hl - sizeof(struct kiwi_ctrl)) {
			fill = d + at;
			at += hl - sizeof(struct kiwi_ctrl);
		}
		avail = (uint32_t)(size - at);
		if (plen > avail)
			plen = avail;
		b.hdr_at[b.n] = len;
		b.pay_at[b.n] = len + hl;
		len += build_fpdu(stream + len, op, last, fill, d + at, plen,
				  &b);
		at += plen;
	}
	b.stream = stream;
	frame(stream, len, &rnd, false, &t, check_fpdu, &b);
	FUZZ_ASSERT(!t.bad_at);
	FUZZ_ASSERT(b.seen == b.n);

	/* One-step where a chunk holds a whole FPDU: the same. */
	b.seen = 0;
	frame(stream, len, &rnd_w, true, &w, check_fpdu, &b);
	FUZZ_ASSERT(b.seen == b.n);
	same_trace(&t, &w);

	/* In one piece, every FPDU in one step. */
	b.seen = 0;
	frame(stream, len, &whole_w, true, &w, check_fpdu, &b);
	FUZZ_ASSERT(b.seen == b.n);
	FUZZ_ASSERT(w.whole == b.n);
	same_trace(&t, &w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;

	if (!init) {
		kiwi_crc_tab_init(&crc_tab);
		init = true;
	}
	if (size < 1 || size > (1 << 17))
		return 0;
	raw_stream(data + 1, (uint32_t)(size - 1), data[0]);
	valid_stream(data + 1, size - 1, data[0]);
	return 0;
}
