// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * include/kiwi/crc32c.h in user space: the slice-by-8 tables give the
 * CRC32c of the published check values, agree with a bit-at-a-time
 * reference at every length and alignment, chain across split buffers
 * (as FPDUs are checked piece by piece), and the copy copies exactly the
 * bytes asked for.
 */
#include "../kiwi_test.h"
#include <kiwi/crc32c.h>

static struct kiwi_crc_tab tab;

/* One bit at a time, straight from the polynomial. */
static __u32 ref_crc(__u32 crc, const __u8 *p, size_t len)
{
	while (len--) {
		int k;

		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? KIWI_CRC32C_POLY : 0);
	}
	return crc;
}

/* The CRC as the wire carries it: pre- and post-inverted. */
static __u32 crc_of(const void *p, size_t len)
{
	__u8 dst[64];

	return ~kiwi_crc_copy(&tab, ~0U, dst, p, len);
}

static void fill(__u8 *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245 + 12345;
		p[i] = seed >> 16;
	}
}

/* RFC 3720 B.4 and the usual "123456789". */
TEST(check_values)
{
	__u8 buf[32];
	int i;

	kiwi_crc_tab_init(&tab);
	EXPECT_EQ(crc_of("123456789", 9), 0xe3069283);
	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(crc_of(buf, 32), 0x8a9136aa);
	memset(buf, 0xff, sizeof(buf));
	EXPECT_EQ(crc_of(buf, 32), 0x62a8ab43);
	for (i = 0; i < 32; i++)
		buf[i] = i;
	EXPECT_EQ(crc_of(buf, 32), 0x46dd794e);
	for (i = 0; i < 32; i++)
		buf[i] = 31 - i;
	EXPECT_EQ(crc_of(buf, 32), 0x113fdb5c);
}

/* Every length up to 300 at every source and destination alignment. */
TEST(copy_matches_reference)
{
	static __u8 src[320], dst[330];
	size_t len, so, d;

	kiwi_crc_tab_init(&tab);
	fill(src, sizeof(src), 7);
	for (len = 0; len <= 300; len++) {
		for (so = 0; so < 8; so++) {
			for (d = 0; d < 8; d++) {
				__u32 want = ref_crc(~0U, src + so, len);

				memset(dst, 0xa5, sizeof(dst));
				ASSERT_EQ(kiwi_crc_copy(&tab, ~0U, dst + d,
							src + so, len), want);
				ASSERT_EQ(memcmp(dst + d, src + so, len), 0);
				/* Not a byte more either side. */
				ASSERT_EQ(d ? dst[d - 1] : 0xa5, 0xa5);
				ASSERT_EQ(dst[d + len], 0xa5);
			}
		}
	}
}

/* The read-only variant agrees, every length and source alignment. */
TEST(update_matches_reference)
{
	static __u8 src[320];
	size_t len, so;

	kiwi_crc_tab_init(&tab);
	fill(src, sizeof(src), 11);
	for (len = 0; len <= 300; len++)
		for (so = 0; so < 8; so++)
			ASSERT_EQ(kiwi_crc_update(&tab, ~0U, src + so, len),
				  ref_crc(~0U, src + so, len));
}

/* A running CRC over pieces equals the CRC of the whole. */
TEST(chained_pieces)
{
	static __u8 src[70000], dst[70000];
	size_t cut1, cut2;

	kiwi_crc_tab_init(&tab);
	fill(src, sizeof(src), 99);
	for (cut1 = 0; cut1 < 40; cut1 += 3) {
		for (cut2 = cut1; cut2 < sizeof(src); cut2 += 4093) {
			__u32 c = ~0U;

			c = kiwi_crc_copy(&tab, c, dst, src, cut1);
			c = kiwi_crc_copy(&tab, c, dst + cut1, src + cut1,
					  cut2 - cut1);
			c = kiwi_crc_copy(&tab, c, dst + cut2, src + cut2,
					  sizeof(src) - cut2);
			ASSERT_EQ(c, ref_crc(~0U, src, sizeof(src)));
			ASSERT_EQ(memcmp(dst, src, sizeof(src)), 0);
		}
	}
}

KT_MAIN()
