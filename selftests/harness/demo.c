// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Exercises kiwi_test.h itself: each test has a known outcome that
 * check_demo.sh verifies in the TAP output.
 */
#include "../kiwi_test.h"

TEST(pass_simple)
{
	ASSERT_EQ(1 + 1, 2);
	EXPECT_NE(1, 2);
	EXPECT_STREQ("kiwi", "kiwi");
	EXPECT_TRUE(1);
	EXPECT_NULL(NULL);
}

TEST(pass_signedness)
{
	unsigned int u = 4000000000u;
	uint64_t big = ~0ull;
	int neg = -1;

	/* A naive (unsigned) comparison would get these wrong. */
	ASSERT_GT(u, neg);
	ASSERT_LT(neg, u);
	ASSERT_NE(big, neg);
	ASSERT_GE(big, 0);
	ASSERT_LE(-5, 3u);
	ASSERT_EQ((unsigned char)200, 200);
}

TEST(fail_assert)
{
	ASSERT_EQ(2, 3);
	printf("# not reached\n");
}

TEST(fail_expect_continues)
{
	EXPECT_EQ(-1, 1u);
	printf("# reached after EXPECT\n");
}

TEST(fail_errno)
{
	errno = 0;
	EXPECT_FAILS_WITH(fopen("/nonexistent/kiwi", "r"), EINVAL);
}

TEST(pass_errno)
{
	ASSERT_FAILS_WITH(fopen("/nonexistent/kiwi", "r"), ENOENT);
	ASSERT_ERRNO(EBUSY, EBUSY);
}

TEST(skip_reason)
{
	SKIP("feature %s not built", "frobnication");
}

TEST(fail_crash)
{
	raise(SIGSEGV);
}

TEST_TIMEOUT(fail_timeout, 1)
{
	sleep(10);
}

TEST(fail_exit_code)
{
	exit(7);
}

KT_MAIN()
