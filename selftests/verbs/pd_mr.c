// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Protection domains and memory registration.
 */
#include "kv.h"

#define BUF_LEN (64 * 1024)

TEST(alloc_dealloc_pd)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	ASSERT_NONNULL(pd);
	EXPECT_TRUE(pd->context == ctx);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(alloc_many_pds)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd[16];
	int i;

	for (i = 0; i < 16; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		ASSERT_NONNULL(pd[i]);
	}
	for (i = 15; i >= 0; i--)
		ASSERT_EQ(ibv_dealloc_pd(pd[i]), 0);
	ibv_close_device(ctx);
}

static int legal_access_flags(struct ibv_context *ctx, int *out, int max)
{
	struct ibv_device_attr a;
	int bits[5], nbits = 0, n = 0, m, i;

	kv_query_device(ctx, &a);
	bits[nbits++] = IBV_ACCESS_LOCAL_WRITE;
	bits[nbits++] = IBV_ACCESS_REMOTE_WRITE;
	bits[nbits++] = IBV_ACCESS_REMOTE_READ;
	/* Atomic and MW access only where the device advertises them. */
	if (a.atomic_cap != IBV_ATOMIC_NONE)
		bits[nbits++] = IBV_ACCESS_REMOTE_ATOMIC;
	if (a.device_cap_flags & (IBV_DEVICE_MEM_WINDOW |
				  IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				  IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		bits[nbits++] = IBV_ACCESS_MW_BIND;
	for (m = 0; m < (1 << nbits) && n < max; m++) {
		int flags = 0;

		for (i = 0; i < nbits; i++)
			if (m & (1 << i))
				flags |= bits[i];
		/* Remote write / atomic need local write. */
		if ((flags & (IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(flags & IBV_ACCESS_LOCAL_WRITE))
			continue;
		out[n++] = flags;
	}
	return n;
}

TEST(reg_mr_access_combos)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	int flags[32], n, i;
	char *buf = malloc(BUF_LEN);

	ASSERT_NONNULL(buf);
	n = legal_access_flags(ctx, flags, 32);
	ASSERT_GE(n, 5);
	for (i = 0; i < n; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_LEN, flags[i]);

		if (!mr) {
			EXPECT_FAIL("ibv_reg_mr(access=0x%x) failed: %s",
				    flags[i], strerror(errno));
			continue;
		}
		EXPECT_TRUE(mr->addr == buf);
		EXPECT_EQ(mr->length, BUF_LEN);
		EXPECT_TRUE(mr->pd == pd);
		EXPECT_NE(mr->lkey, 0);
		if (flags[i] & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC))
			EXPECT_NE(mr->rkey, 0);
		EXPECT_EQ(ibv_dereg_mr(mr), 0);
	}
	TH_LOG("%d access combinations registered", n);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_keys_distinct)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *mr[8];
	char *buf = malloc(BUF_LEN);
	int i, j;

	ASSERT_NONNULL(buf);
	/* Same buffer registered several times: still distinct keys. */
	for (i = 0; i < 8; i++) {
		mr[i] = ibv_reg_mr(pd, buf + (i % 2) * 4096, BUF_LEN / 2, access);
		ASSERT_NONNULL(mr[i]);
		EXPECT_NE(mr[i]->lkey, 0);
		EXPECT_NE(mr[i]->rkey, 0);
	}
	for (i = 0; i < 8; i++)
		for (j = i + 1; j < 8; j++) {
			EXPECT_NE(mr[i]->lkey, mr[j]->lkey);
			EXPECT_NE(mr[i]->rkey, mr[j]->rkey);
		}
	for (i = 0; i < 8; i++)
		EXPECT_EQ(ibv_dereg_mr(mr[i]), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_iova2)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	char *buf = aligned_alloc(4096, BUF_LEN);
	/* Same offset within a page as buf, far away from it. */
	uint64_t iova = 0x100000000000ull + ((uintptr_t)buf & 4095);
	struct ibv_mr *a, *b, *z;

	ASSERT_NONNULL(buf);
	a = ibv_reg_mr_iova2(pd, buf, BUF_LEN, iova, access);
	ASSERT_NONNULL(a);
	b = ibv_reg_mr_iova2(pd, buf, BUF_LEN, iova + BUF_LEN, access);
	ASSERT_NONNULL(b);
	/* Zero-based style: iova 0 for a page-aligned buffer. */
	z = ibv_reg_mr_iova2(pd, buf, BUF_LEN, 0, access);
	ASSERT_NONNULL(z);
	EXPECT_TRUE(a->addr == buf);
	EXPECT_EQ(a->length, BUF_LEN);
	EXPECT_NE(a->lkey, 0);
	EXPECT_NE(a->rkey, 0);
	EXPECT_NE(b->lkey, 0);
	EXPECT_NE(b->rkey, 0);
	EXPECT_NE(a->lkey, b->lkey);
	EXPECT_NE(a->rkey, b->rkey);
	EXPECT_NE(a->lkey, z->lkey);
	EXPECT_NE(b->rkey, z->rkey);
	EXPECT_EQ(ibv_dereg_mr(z), 0);
	EXPECT_EQ(ibv_dereg_mr(b), 0);
	EXPECT_EQ(ibv_dereg_mr(a), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_len0_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);

	ASSERT_NONNULL(buf);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE),
			  EINVAL);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, 0, 0), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_unknown_access_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);

	ASSERT_NONNULL(buf);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, BUF_LEN,
				     IBV_ACCESS_LOCAL_WRITE | (1 << 30)),
			  EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_remote_write_needs_local_write)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);

	ASSERT_NONNULL(buf);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_REMOTE_WRITE),
			  EINVAL);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, BUF_LEN,
				     IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ), EINVAL);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, BUF_LEN,
				     IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_prot_none_efault)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	size_t len = 4 * 4096;
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	/*
	 * Writable registration of PROT_NONE memory must fail.  (A read-only
	 * one may succeed: ib_umem_get() pins with FOLL_FORCE then.)
	 */
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE),
			  EFAULT);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, (char *)p + 4096, 4096,
				     IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_WRITE), EFAULT);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_unmapped_efault)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	size_t len = 4 * 4096;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	ASSERT_EQ(munmap(p, len), 0);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE),
			  EFAULT);
	/* Partly mapped: the first page exists, the rest doesn't. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(p != MAP_FAILED);
	ASSERT_EQ(munmap(p + 4096, len - 4096), 0);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE),
			  EFAULT);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_readonly_memory)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	size_t len = 4 * 4096;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	ASSERT_TRUE(p != MAP_FAILED);
	memset(p, 1, len);
	ASSERT_EQ(mprotect(p, len, PROT_READ), 0);
	/* Read-only memory can be registered for remote read... */
	mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_REMOTE_READ);
	ASSERT_NONNULL(mr);
	EXPECT_EQ(ibv_dereg_mr(mr), 0);
	/* ...but not for local write. */
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE),
			  EFAULT);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_wrapping_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	void *top = (void *)(UINTPTR_MAX & ~(uintptr_t)4095);

	/* addr + length wraps around the address space. */
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, top, 2 * 4096, IBV_ACCESS_LOCAL_WRITE),
			  EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_over_max_size_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	struct ibv_device_attr a;
	char *buf = malloc(4096);

	ASSERT_NONNULL(buf);
	kv_query_device(ctx, &a);
	if (a.max_mr_size >= (uint64_t)1 << 62)
		SKIP("max_mr_size 0x%llx: no length above it is representable",
		     (unsigned long long)a.max_mr_size);
	EXPECT_FAILS_WITH(ibv_reg_mr(pd, buf, a.max_mr_size + 1,
				     IBV_ACCESS_LOCAL_WRITE), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(reg_mr_iova_page_offset_mismatch_einval)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = aligned_alloc(4096, BUF_LEN);

	ASSERT_NONNULL(buf);
	/* buf + 16 has page offset 16, the IOVA has 32. */
	EXPECT_FAILS_WITH(ibv_reg_mr_iova2(pd, buf + 16, 4096,
					   0x200000000000ull + 32,
					   IBV_ACCESS_LOCAL_WRITE), EINVAL);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

/*
 * Remote-atomic access is accepted even without atomics (libfabric's
 * verbs provider and UCX register every region with it; other drivers
 * accept it): the region works, and the right grants nothing.
 */
TEST(reg_mr_atomic_accepted)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);
	struct ibv_mr *mr;

	ASSERT_NONNULL(buf);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NONNULL(mr);
	EXPECT_EQ(ibv_dereg_mr(mr), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TEST(dealloc_pd_with_mr_busy)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);
	struct ibv_mr *mr;
	int ret;

	ASSERT_NONNULL(buf);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(mr);
	ret = ibv_dealloc_pd(pd);
	TH_LOG("ibv_dealloc_pd with an MR registered returned %d (%s)", ret,
	       ret ? kt_errname(ret) : "success");
	EXPECT_ERRNO(ret, EBUSY);
	/* The MR and the PD must still be usable and destroyable. */
	if (ret == EBUSY) {
		struct ibv_mr *mr2 = ibv_reg_mr(pd, buf, 4096, 0);

		EXPECT_NONNULL(mr2);
		if (mr2)
			EXPECT_EQ(ibv_dereg_mr(mr2), 0);
		EXPECT_EQ(ibv_dereg_mr(mr), 0);
		EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	}
	EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(close_device_with_resources)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_pd *pd = kv_alloc_pd(ctx);
	char *buf = malloc(BUF_LEN);
	struct ibv_mr *mr;

	ASSERT_NONNULL(buf);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NONNULL(mr);
	/*
	 * Closing the context with live objects: libibverbs closes the
	 * uverbs fd and the kernel tears everything down.  Must not crash
	 * or warn (the harness checks dmesg).
	 */
	ibv_close_device(ctx);
	/* A fresh context still works. */
	ctx = kv_open();
	pd = kv_alloc_pd(ctx);
	EXPECT_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

KT_MAIN()
