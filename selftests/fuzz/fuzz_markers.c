// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_markers -- libFuzzer target for the MPA marker code of
 * include/kiwi/markers.h (RFC 5044 4.3; the same arithmetic kmod/fpdu.c
 * inserts markers with and kmod/rx.c removes and checks them with).
 *
 * Input: bytes 0-3 a stream position (little-endian) where Full
 * Operation Phase starts, rounded down to the marker interval (positions
 * count from there, so it is one; the test is the 32-bit wrap), byte 4
 * the mode.
 *   mode bit 0 clear: the rest is a list of FPDUs, two bytes of ULPDU
 *   length (modulo 5000) each, payload taken from the input; they are
 *   framed with markers, then taken apart again in pieces whose sizes
 *   come from the input.  Checks: out comes exactly what went in, no
 *   marker is refused, every FPDU starts 4-aligned, FPDUPTRs fit.
 *   mode bit 0 set: the rest is a hostile stream, stripped in two pieces
 *   (split at byte 5): never more output than input, and a refusal is
 *   final for the bytes that follow.
 */
#include "fuzz.h"

#include <kiwi/markers.h>

#define MAXF	(1 << 17)

static uint8_t wire[MAXF * 2], plain[MAXF], got[MAXF * 2];

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void hostile(uint32_t start, const uint8_t *d, size_t n)
{
	struct kiwi_mk_strip s;
	size_t cut = n ? d[0] % (n + 1) : 0;
	int a, b;

	kiwi_mk_strip_init(&s);
	s.r.pos = start;
	a = kiwi_mk_strip(&s, got, d, cut);
	FUZZ_ASSERT(a <= (int)cut);
	if (a < 0)
		return;
	b = kiwi_mk_strip(&s, got + a, d + cut, n - cut);
	FUZZ_ASSERT(b <= (int)(n - cut));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiwi_mk_tx t;
	struct kiwi_mk_strip s;
	const uint8_t *d;
	uint32_t start, w = 0, p = 0, r = 0, i, k = 0;
	size_t n;

	if (size < 5 || size > MAXF / 4)
		return 0;
	start = le32(data);
	d = data + 5;
	n = size - 5;
	if (data[4] & 1) {
		hostile(start, d, n);
		return 0;
	}
	start &= ~(uint32_t)(KIWI_MK_INTERVAL - 1);
	kiwi_mk_tx_init(&t);
	t.pos = start;
	for (i = 0; i + 2 <= n && p < MAXF - 6000; i += 2) {
		uint32_t ul = (d[i] << 8 | d[i + 1]) % 5000, j;
		uint8_t f[5008];
		int m;

		f[0] = ul >> 8;
		f[1] = ul;
		for (j = 0; j < ul; j++)
			f[2 + j] = d[(i + j) % n];
		memset(f + 2 + ul, 0, kiwi_mpa_pad(ul + 2) + 4);
		j = 2 + ul + kiwi_mpa_pad(ul + 2);
		FUZZ_ASSERT((t.pos - start) % 4 == 0);
		kiwi_mk_tx_fpdu(&t);
		m = kiwi_mk_insert(&t, wire + w, sizeof(wire) - w, f, j, true);
		FUZZ_ASSERT(m >= (int)j);
		FUZZ_ASSERT(kiwi_mk_tx_room(&t) >= 4);
		memcpy(wire + w + m, f + j, 4);	/* the CRC field (zero) */
		kiwi_mk_tx_sent(&t, 4);
		memcpy(plain + p, f, j + 4);
		w += m + 4;
		p += j + 4;
	}
	kiwi_mk_strip_init(&s);
	s.r.pos = start;
	for (i = 0; i < w;) {
		uint32_t c = n ? 1U + d[k++ % n] * 7U : w;
		int g;

		if (c > w - i)
			c = w - i;
		g = kiwi_mk_strip(&s, got + r, wire + i, c);
		FUZZ_ASSERT(g >= 0 && g <= (int)c);
		r += g;
		i += c;
	}
	FUZZ_ASSERT(r == p);
	FUZZ_ASSERT(!memcmp(got, plain, p));
	FUZZ_ASSERT(s.fpdu_rem == 0 && s.lenf_got == 0);
	return 0;
}
