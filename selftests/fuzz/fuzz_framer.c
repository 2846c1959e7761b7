// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_framer -- libFuzzer target for the MPA FPDU framer of
 * include/kiwi/framer.h, the state machine kmod/rx.c runs over every
 * byte a peer sends in the data phase.
 *
 * Input: byte 0 seeds the chunk sizes; the rest is used twice.
 *
 *  1. As a raw TCP stream (anything a peer can send).  It is framed
 *     three times: in one piece, one byte at a time, and in pseudo-random
 *     pieces of 1..300 bytes.  The differential property: every chunking
 *     gives the same sequence of events (the same headers, payloads, CRC
 *     verdicts and the same refusal at the same offset).  Plus the
 *     framer's own bounds: it never asks for more bytes than offered,
 *     never writes past its buffers, and a refusal names a real layer.
 *
 *  2. As a recipe for a valid stream: each FPDU's opcode, L bit, payload
 *     length (up to 2 KiB) and payload bytes come from the input; headers,
 *     pad and CRC are built as a peer would.  Framed in random chunks,
 *     every FPDU must come out whole: same header, same payload, CRC
 *     correct, in order, nothing refused.
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

/* Chunk sizes: 0 = all at once, 1 = bytewise, else a seeded PRNG. */
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
	n = 1 + (c->state >> 16) % 300;
	return n < left ? n : left;
}

/*
 * Frame @len bytes of @s in chunks; record every event in @t.  Stops at
 * a refusal.  Mirrors kiwi_rx_step(): header and trailer bytes go into
 * the framer, payload is "placed" (copied, CRC folded in).
 */
static void frame(const uint8_t *s, uint32_t len, struct chunker *c,
		  struct trace *t, void (*on_fpdu)(const struct kiwi_framer *,
						  const struct trace *, void *),
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

		while (chunk) {
			enum kiwi_fr_phase ph = fr.phase;
			uint32_t n = kiwi_fr_want(&fr, chunk);
			enum kiwi_fr_event ev;

			FUZZ_ASSERT(ph != KIWI_FR_DEAD);
			FUZZ_ASSERT(n > 0 && n <= chunk);
			if (ph == KIWI_FR_DATA) {
				FUZZ_ASSERT(t->plen + n <= sizeof(t->payload));
				t->crc = kiwi_crc_copy(&crc_tab, t->crc,
						       t->payload + t->plen,
						       s + off, n);
				t->plen += n;
			} else {
				uint8_t *dst = kiwi_fr_buf(&fr);

				/* Inside the framer's own buffers. */
				FUZZ_ASSERT(ph == KIWI_FR_TRAIL ?
					dst + n <= fr.trail + sizeof(fr.trail) :
					dst + n <= fr.hdr.raw + sizeof(fr.hdr.raw));
				memcpy(dst, s + off, n);
			}
			off += n;
			chunk -= n;
			ev = kiwi_fr_advance(&fr, n);
			switch (ev) {
			case KIWI_FR_BAD_CTRL:
				FUZZ_ASSERT(fr.phase == KIWI_FR_DEAD);
				FUZZ_ASSERT(fr.bad.layer <= KIWI_TL_LLP);
				mix(t, &fr.bad, sizeof(fr.bad));
				t->bad_at = off + 1;
				return;
			case KIWI_FR_HDR_DONE:
				FUZZ_ASSERT(fr.hdr_len == kiwi_hdr_len(fr.op));
				FUZZ_ASSERT(fr.hdr_len <= sizeof(fr.hdr.raw));
				mix(t, fr.hdr.raw, fr.hdr_len);
				t->crc = kiwi_crc_copy(&crc_tab, t->crc,
						       t->payload, fr.hdr.raw,
						       fr.hdr_len);
				t->plen = 0;
				break;
			case KIWI_FR_FPDU_DONE: {
				uint32_t crc;
				uint8_t pad[3], ok;

				FUZZ_ASSERT(kiwi_fr_pad_len(&fr) <= 3);
				crc = kiwi_crc_copy(&crc_tab, t->crc, pad,
						    fr.trail,
						    kiwi_fr_pad_len(&fr));
				ok = kiwi_fr_crc(&fr) == ~crc;
				mix(t, t->payload, t->plen);
				mix(t, &ok, 1);
				t->fpdus++;
				t->crc = crc;
				if (on_fpdu)
					on_fpdu(&fr, t, arg);
				t->crc = ~0U;
				t->plen = 0;
				break;
			}
			default:
				break;
			}
		}
	}
}

static void raw_stream(const uint8_t *s, uint32_t len, uint8_t seed)
{
	static struct trace a, b, r;
	struct chunker whole = { 0, 0 }, bytes = { 1, 0 }, rnd = { 2, seed };

	frame(s, len, &whole, &a, NULL, NULL);
	frame(s, len, &bytes, &b, NULL, NULL);
	frame(s, len, &rnd, &r, NULL, NULL);
	FUZZ_ASSERT(a.h == b.h && a.h == r.h);
	FUZZ_ASSERT(a.fpdus == b.fpdus && a.fpdus == r.fpdus);
	FUZZ_ASSERT(a.bad_at == b.bad_at && a.bad_at == r.bad_at);
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
	static struct trace t;
	static struct built b;
	struct chunker rnd = { 2, seed ^ 0x5a };
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
	frame(stream, len, &rnd, &t, check_fpdu, &b);
	FUZZ_ASSERT(!t.bad_at);
	FUZZ_ASSERT(b.seen == b.n);
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
