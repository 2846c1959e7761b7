// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BIND_MW payload check of include/kiwi/wqe.h, in user space:
 * kiwi_ubind_in_slot() against the smallest stride, and each rule of
 * kiwi_ubind_check() (rights a window has, the new STag's index, a range
 * that does not wrap) at and just past its edge.  fuzz_wqe checks the
 * same rules on random slots.
 */
#include "../kiwi_test.h"
#include <kiwi/wqe.h>

/* A bind that passes: window 0x123456, key 0x01 -> 0x02, 4 KiB. */
static void good_bind(struct kiwi_usqe *h, struct kiwi_ubind *ub)
{
	memset(h, 0, sizeof(*h));
	memset(ub, 0, sizeof(*ub));
	h->opcode = KIWI_UWR_BIND_MW;
	h->rkey = 0x12345601;
	h->inv_rkey = 0x12345602;
	h->raddr = 0x7f0000001000ULL;
	ub->length = 4096;
	ub->mr_lkey = 0xabcdef01;
	ub->access = KIWI_UBIND_REMOTE_READ | KIWI_UBIND_REMOTE_WRITE;
}

TEST(in_slot)
{
	__u32 need = sizeof(struct kiwi_usqe) + sizeof(struct kiwi_ubind);

	EXPECT_TRUE(kiwi_ubind_in_slot(need));
	EXPECT_TRUE(kiwi_ubind_in_slot(need + 64));
	EXPECT_FALSE(kiwi_ubind_in_slot(need - 1));
	EXPECT_FALSE(kiwi_ubind_in_slot(0));
}

TEST(good)
{
	struct kiwi_usqe h;
	struct kiwi_ubind ub;

	good_bind(&h, &ub);
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_OK);
	ub.access = KIWI_UBIND_ACCESS_ALL;
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_OK);
	ub.access = 0;
	ub.length = 0;		/* a type 1 unbind: the kernel decides */
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_OK);
}

TEST(access)
{
	struct kiwi_usqe h;
	struct kiwi_ubind ub;
	__u32 bit;

	good_bind(&h, &ub);
	/* MW_BIND (1 << 4) and everything above ZERO_BASED: refused. */
	for (bit = 4; bit < 32; bit++) {
		if (bit == 5)
			continue;
		ub.access = KIWI_UBIND_REMOTE_READ | 1u << bit;
		EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_BAD_ACCESS);
	}
}

TEST(stag_index)
{
	struct kiwi_usqe h;
	struct kiwi_ubind ub;

	good_bind(&h, &ub);
	h.inv_rkey = 0x12345701;	/* the next window's index */
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_BAD_STAG);
	h.inv_rkey = 0x123456ff;	/* any key of the same index */
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_OK);
}

TEST(range_wrap)
{
	struct kiwi_usqe h;
	struct kiwi_ubind ub;

	good_bind(&h, &ub);
	h.raddr = ~0ULL - 4095;
	ub.length = 4095;		/* ends at 2^64 - 1: fine */
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_OK);
	ub.length = 4096;		/* ends at 2^64: wraps to 0 */
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_RANGE_WRAP);
	h.raddr = 1;
	ub.length = ~0ULL;
	EXPECT_EQ(kiwi_ubind_check(&h, &ub), KIWI_WQE_RANGE_WRAP);
}

KT_MAIN()
