// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The MPA request/reply code of include/kiwi/iwarp.h, in user space:
 * frames built by kiwi_mpa_build()/kiwi_mpa_v2_build() parse back to
 * what was put in, the flag bits (CRC, markers, large FPDUs, reject)
 * are read only where they belong, and malformed frames are refused.
 */
#include "../kiwi_test.h"
#include <kiwi/iwarp.h>

struct frame {
	struct kiwi_mpa_rr rr;
	__u8 pd[KIWI_MPA_MAX_PD];
};

/* A frame with RFC 6581 data (rev 2) and @ulp bytes of consumer data. */
static void build(struct frame *f, bool req, __u8 flags, __u16 ulp)
{
	struct kiwi_mpa_v2 v2 = kiwi_mpa_v2_build(17, 5, true,
						  KIWI_MPA_RTR_WRITE);

	kiwi_mpa_build(&f->rr, req, KIWI_MPA_REV2, flags | KIWI_MPA_FLAG_ENH,
		       sizeof(v2) + ulp);
	memcpy(f->pd, &v2, sizeof(v2));
	memset(f->pd + sizeof(v2), 0xa5, ulp);
}

TEST(request_round_trip)
{
	struct kiwi_mpa_info m;
	struct frame f;

	build(&f, true, KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_LARGE, 28);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_OK);
	EXPECT_EQ(m.rev, KIWI_MPA_REV2);
	EXPECT_TRUE(m.crc);
	EXPECT_TRUE(m.large);
	EXPECT_TRUE(!m.markers);
	EXPECT_TRUE(!m.reject);
	EXPECT_TRUE(m.enhanced);
	EXPECT_TRUE(m.p2p);
	EXPECT_EQ(m.ird, 17);
	EXPECT_EQ(m.ord, 5);
	EXPECT_EQ(m.rtr, KIWI_MPA_RTR_WRITE);
	EXPECT_EQ(m.pd_len, 4 + 28);
	EXPECT_EQ(m.ulp_pd_off, 4);
	EXPECT_EQ(m.ulp_pd_len, 28);
}

/* Only a reply can reject; each flag is read on its own. */
TEST(flags)
{
	struct kiwi_mpa_info m;
	struct frame f;

	build(&f, true, KIWI_MPA_FLAG_R, 0);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_OK);
	EXPECT_TRUE(!m.reject && !m.crc && !m.large);

	build(&f, false, KIWI_MPA_FLAG_R | KIWI_MPA_FLAG_LARGE, 0);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), false, &m),
		  KIWI_MPA_OK);
	EXPECT_TRUE(m.reject && m.large && !m.crc);

	build(&f, false, 0, 0);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), false, &m),
		  KIWI_MPA_OK);
	EXPECT_TRUE(!m.reject && !m.large && !m.crc);

	/* M is read in requests and replies alike (RFC 5044 7.1.2). */
	build(&f, true, KIWI_MPA_FLAG_M, 0);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_OK);
	EXPECT_TRUE(m.markers && !m.crc && !m.reject);
	build(&f, false, KIWI_MPA_FLAG_M | KIWI_MPA_FLAG_C, 0);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), false, &m),
		  KIWI_MPA_OK);
	EXPECT_TRUE(m.markers && m.crc && !m.reject);
	build(&f, false, KIWI_MPA_FLAG_M | KIWI_MPA_FLAG_R, 0);
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), false, &m),
		  KIWI_MPA_OK);
}

TEST(wrong_key)
{
	struct kiwi_mpa_info m;
	struct frame f;

	build(&f, false, 0, 0);		/* a reply where a request is due */
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_KEY);
	build(&f, true, 0, 0);
	f.rr.key[15] ^= 1;
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_KEY);
}

TEST(bad_revision_and_length)
{
	struct kiwi_mpa_info m;
	struct frame f;

	build(&f, true, 0, 0);
	f.rr.rev = 3;
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_REV);
	f.rr.rev = 0;
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_REV);
	build(&f, true, 0, 0);
	f.rr.pd_len = kiwi_cpu16(KIWI_MPA_MAX_PD + 1);
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_PD_LEN);
}

/* The enhanced flag promises 4 bytes of RFC 6581 data. */
TEST(enhanced_without_data)
{
	struct kiwi_mpa_info m;
	struct frame f;

	build(&f, true, 0, 0);
	f.rr.pd_len = kiwi_cpu16(2);
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, sizeof(f.pd), true, &m),
		  KIWI_MPA_BAD_ENH);
	build(&f, true, 0, 0);
	EXPECT_EQ(kiwi_mpa_parse(&f.rr, f.pd, 3, true, &m),
		  KIWI_MPA_BAD_ENH);
}

/* Revision 1: no RFC 6581 data, all private data is the consumer's. */
TEST(revision1)
{
	struct kiwi_mpa_info m;
	struct frame f;

	kiwi_mpa_build(&f.rr, true, KIWI_MPA_REV1, KIWI_MPA_FLAG_C, 9);
	memset(f.pd, 1, 9);
	ASSERT_EQ(kiwi_mpa_parse(&f.rr, f.pd, 9, true, &m), KIWI_MPA_OK);
	EXPECT_TRUE(m.crc && !m.enhanced && !m.large);
	EXPECT_EQ(m.ulp_pd_off, 0);
	EXPECT_EQ(m.ulp_pd_len, 9);
}

KT_MAIN()
