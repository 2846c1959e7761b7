// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * MPA markers (include/kiwi/markers.h) in user space: the two annotated
 * hex dumps of RFC 5044 section 4.4 (Figures 5 and 6: an FPDU that
 * starts with a marker, one with a marker inside, and their CRCs), the
 * MULPDU formula of section 4.5, insertion and removal at every
 * alignment and across the 32-bit wrap, and inconsistent markers
 * refused.
 */
#include "../kiwi_test.h"
#include <kiwi/markers.h>
#include <kiwi/crc32c.h>

static struct kiwi_crc_tab tab;

/* The 42-octet ULPDU of the RFC's examples: a Send, Last, queue 0. */
static void rfc_ulpdu(__u8 *u, __u8 msn)
{
	memset(u, 0, 42);
	u[0] = 0x41;	/* DDP control: untagged, Last, version 1 */
	u[1] = 0x43;	/* RDMAP: version 1, Send */
	u[13] = msn;	/* MSN, low octet */
}

/*
 * Frame @ulpdu (@ulen octets) as MPA with markers from state @t: length
 * field, ULPDU, pad, a marker due after the pad, then the CRC over all
 * of it.  Returns the octets written to @out.
 */
static int frame(struct kiwi_mk_tx *t, __u8 *out, __u32 cap,
		 const __u8 *ulpdu, __u32 ulen)
{
	__u8 lenf[2] = { ulen >> 8, ulen & 0xff }, pad[3] = { 0 };
	__u32 crc = ~0U;
	int w = 0, n;

	kiwi_mk_tx_fpdu(t);
	n = kiwi_mk_insert(t, out, cap, lenf, 2, false);
	if (n < 0)
		return -1;
	w += n;
	n = kiwi_mk_insert(t, out + w, cap - w, ulpdu, ulen, false);
	if (n < 0)
		return -1;
	w += n;
	n = kiwi_mk_insert(t, out + w, cap - w, pad, kiwi_mpa_pad(ulen + 2),
			   true);
	if (n < 0)
		return -1;
	w += n;
	crc = ~kiwi_crc_update(&tab, crc, out, w);
	if (cap - w < 4)
		return -1;
	/* The CRC field never meets a marker: it is 4-aligned. */
	EXPECT_EQ(kiwi_mk_tx_room(t) >= 4, true);
	out[w] = crc & 0xff;
	out[w + 1] = (crc >> 8) & 0xff;
	out[w + 2] = (crc >> 16) & 0xff;
	out[w + 3] = crc >> 24;
	kiwi_mk_tx_sent(t, 4);
	return w + 4;
}

/* RFC 5044 Figure 5: the first FPDU of the stream starts with a marker. */
TEST(rfc5044_figure5)
{
	static const __u8 want_head[] = {
		0x00, 0x00, 0x00, 0x00,		/* marker, FPDUPTR 0 */
		0x00, 0x2a,			/* ULPDU_Length 42 */
		0x41, 0x43,
	};
	static const __u8 want_crc[] = { 0x52, 0x23, 0x99, 0x83 };
	struct kiwi_mk_tx t;
	__u8 u[42], out[128];
	int n;

	kiwi_crc_tab_init(&tab);
	kiwi_mk_tx_init(&t);
	rfc_ulpdu(u, 1);
	n = frame(&t, out, sizeof(out), u, sizeof(u));
	ASSERT_EQ(n, 0x34);
	EXPECT_EQ(memcmp(out, want_head, sizeof(want_head)), 0);
	EXPECT_EQ(out[0x13], 0x01);	/* MSN = 1 */
	EXPECT_EQ(memcmp(out + 0x30, want_crc, 4), 0);
	EXPECT_EQ(t.pos, 0x34);
}

/*
 * RFC 5044 Figure 6: the second FPDU, after a first of 492 octets,
 * carries the marker at stream octet 0x200 with FPDUPTR 0x14.
 */
TEST(rfc5044_figure6)
{
	static const __u8 want_mk[] = { 0x00, 0x00, 0x00, 0x14 };
	static const __u8 want_crc[] = { 0x84, 0x92, 0x58, 0x98 };
	struct kiwi_mk_tx t;
	__u8 u[42], out[128];
	int n;

	kiwi_crc_tab_init(&tab);
	kiwi_mk_tx_init(&t);
	t.pos = 0x1ec;
	rfc_ulpdu(u, 2);
	n = frame(&t, out, sizeof(out), u, sizeof(u));
	ASSERT_EQ(n, 0x220 - 0x1ec);
	EXPECT_EQ(out[0], 0x00);
	EXPECT_EQ(out[1], 0x2a);
	EXPECT_EQ(out[0x1fb - 0x1ec], 0x02);	/* MSN = 2 */
	EXPECT_EQ(memcmp(out + 0x200 - 0x1ec, want_mk, 4), 0);
	EXPECT_EQ(memcmp(out + 0x21c - 0x1ec, want_crc, 4), 0);

	/* And the receiver takes the marker out and finds it consistent. */
	{
		struct kiwi_mk_strip s;
		__u8 plain[128];

		kiwi_mk_strip_init(&s);
		s.r.pos = 0x1ec;
		EXPECT_EQ(kiwi_mk_strip(&s, plain, out, n), n - 4);
		EXPECT_EQ(plain[1], 0x2a);
		EXPECT_EQ(memcmp(plain + 0x200 - 0x1ec, u + 0x200 - 0x1ee, 4),
			  0);
	}
}

/* RFC 5044 4.5: MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4). */
TEST(mulpdu)
{
	EXPECT_EQ(kiwi_mk_mulpdu(1460), 1460 - (6 + 12 + 0));
	EXPECT_EQ(kiwi_mk_mulpdu(8960), 8960 - (6 + 72 + 0));
	EXPECT_EQ(kiwi_mk_mulpdu(512), 512 - (6 + 4));
	EXPECT_EQ(kiwi_mk_mulpdu(513), 513 - (6 + 8 + 1));
	EXPECT_EQ(kiwi_mk_mulpdu(1448), 1448 - (6 + 12));
	EXPECT_EQ(kiwi_mk_mulpdu(10), 0);
	EXPECT_EQ(kiwi_mpa_mulpdu(1460), 1454);
	EXPECT_EQ(kiwi_mpa_mulpdu(1461), 1454);
}

TEST(positions)
{
	EXPECT_EQ(kiwi_mk_until(0), 0);
	EXPECT_EQ(kiwi_mk_until(4), 508);
	EXPECT_EQ(kiwi_mk_until(511), 1);
	EXPECT_EQ(kiwi_mk_until(0xffffffffU), 1);
	EXPECT_EQ(kiwi_mk_inside(0), 4);
	EXPECT_EQ(kiwi_mk_inside(513), 3);
	EXPECT_EQ(kiwi_mk_inside(516), 0);
}

static unsigned int seed = 1;

static unsigned int rnd(void)
{
	seed = seed * 1103515245 + 12345;
	return seed >> 8;
}

/*
 * Random FPDU streams framed with markers from position @start and
 * taken apart again in random pieces: the markers come out, the FPDUs
 * are what went in, every marker's FPDUPTR is right.
 */
static void round_trip(__u32 start, unsigned int rounds)
{
	static __u8 wire[1 << 20], plain[1 << 20], got[1 << 20];

	while (rounds--) {
		struct kiwi_mk_tx t;
		struct kiwi_mk_strip s;
		__u32 w = 0, p = 0, r = 0, i;
		int nf = 1 + rnd() % 20;

		kiwi_mk_tx_init(&t);
		t.pos = start;
		while (nf--) {
			__u32 ul = rnd() % 3 ? rnd() % 2000 : rnd() % 40000;
			__u8 u[40000];
			int n;

			for (i = 0; i < ul; i++)
				u[i] = rnd();
			n = frame(&t, wire + w, sizeof(wire) - w, u, ul);
			ASSERT_TRUE(n > 0);
			/* the plain FPDU, for comparison */
			plain[p] = ul >> 8;
			plain[p + 1] = ul;
			memcpy(plain + p + 2, u, ul);
			memset(plain + p + 2 + ul, 0, kiwi_mpa_pad(ul + 2));
			p += 2 + ul + kiwi_mpa_pad(ul + 2);
			/* the CRC, copied from the wire (it covers markers) */
			memcpy(plain + p, wire + w + n - 4, 4);
			p += 4;
			w += n;
			/* every FPDU starts 4-aligned relative to the start */
			EXPECT_EQ((t.pos - start) % 4, 0);
		}
		kiwi_mk_strip_init(&s);
		s.r.pos = start;
		for (i = 0; i < w;) {
			__u32 n = 1 + rnd() % 700;
			int g;

			if (n > w - i)
				n = w - i;
			g = kiwi_mk_strip(&s, got + r, wire + i, n);
			ASSERT_TRUE(g >= 0);
			r += g;
			i += n;
		}
		ASSERT_EQ(r, p);
		EXPECT_EQ(memcmp(got, plain, p), 0);
		EXPECT_EQ(s.fpdu_rem, 0);
	}
}

TEST(round_trip_from_zero)
{
	kiwi_crc_tab_init(&tab);
	round_trip(0, 200);
}

/* The stream position wraps like a TCP sequence number. */
TEST(round_trip_across_wrap)
{
	kiwi_crc_tab_init(&tab);
	round_trip(0U - 1024, 100);
	round_trip(0U - 4096 * 3, 100);
}

/* Every marker of a stream, changed, is caught. */
TEST(bad_markers_refused)
{
	static __u8 wire[8192], out[8192];
	struct kiwi_mk_tx t;
	__u32 w = 0, m;
	__u8 u[1500];
	int k;

	kiwi_crc_tab_init(&tab);
	memset(u, 0x5a, sizeof(u));
	kiwi_mk_tx_init(&t);
	for (k = 0; k < 4; k++)
		w += frame(&t, wire + w, sizeof(wire) - w, u, 300 + k * 333);
	for (m = 0; m < w; m += KIWI_MK_INTERVAL) {
		struct kiwi_mk_strip s;
		int bit;

		for (bit = 2; bit < 16; bit++) {
			wire[m + 2] ^= (1 << bit) >> 8;
			wire[m + 3] ^= (1 << bit) & 0xff;
			kiwi_mk_strip_init(&s);
			EXPECT_EQ(kiwi_mk_strip(&s, out, wire, w), -1);
			wire[m + 2] ^= (1 << bit) >> 8;
			wire[m + 3] ^= (1 << bit) & 0xff;
		}
		/* reserved octets and the low two bits are ignored */
		wire[m] ^= 0xff;
		wire[m + 3] ^= 0x03;
		kiwi_mk_strip_init(&s);
		EXPECT_EQ(kiwi_mk_strip(&s, out, wire, w),
			  (int)(w - 4 * ((w + 511) / 512)));
		wire[m] ^= 0xff;
		wire[m + 3] ^= 0x03;
	}
}

KT_MAIN()
