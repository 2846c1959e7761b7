/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kv.h -- helpers shared by kiwi's libibverbs selftests.
 *
 * Environment:
 *	KIWI_DEV	RDMA device under test (default "kiwi0")
 *	KIWI_NETDEV	netdev it is bound to (default "d0")
 *
 * A missing device is a test failure, never a skip: these tests cover
 * mandatory functionality.
 */
#ifndef KIWI_KV_H
#define KIWI_KV_H

#include "../kiwi_test.h"

#include <ctype.h>
#include <infiniband/verbs.h>
#include <rdma/kiwi-abi.h>

static inline const char *kv_dev_name(void)
{
	const char *s = getenv("KIWI_DEV");

	return s && *s ? s : "kiwi0";
}

static inline const char *kv_netdev(void)
{
	const char *s = getenv("KIWI_NETDEV");

	return s && *s ? s : "d0";
}

/* Opens the device under test or fails the current test. */
static inline struct ibv_context *kv_open(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	char names[512] = "";
	int n = 0, i;

	list = ibv_get_device_list(&n);
	if (!list)
		FAIL("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (strlen(names) + strlen(name) + 2 < sizeof(names)) {
			strcat(names, " ");
			strcat(names, name);
		}
		if (!strcmp(name, kv_dev_name())) {
			ctx = ibv_open_device(list[i]);
			if (!ctx) {
				int e = errno;

				ibv_free_device_list(list);
				FAIL("ibv_open_device(%s): %s", kv_dev_name(),
				     strerror(e));
			}
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		FAIL("device %s not found (libibverbs sees:%s)", kv_dev_name(),
		     names[0] ? names : " nothing");
	return ctx;
}

static inline void kv_query_device(struct ibv_context *ctx,
				   struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	ASSERT_EQ(ibv_query_device(ctx, attr), 0);
}

static inline struct ibv_pd *kv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	ASSERT_NONNULL(pd);
	return pd;
}

static inline struct ibv_cq *kv_create_cq(struct ibv_context *ctx, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

	ASSERT_NONNULL(cq);
	return cq;
}

static inline struct ibv_qp_init_attr kv_rc_attr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return a;
}

/* Reads a small sysfs/proc file into buf, trailing newline stripped. */
static inline int kv_read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

/* Reads an integer from a file; returns false if unreadable. */
static inline bool kv_read_long(const char *path, long *v)
{
	char buf[64], *end;

	if (kv_read_file(path, buf, sizeof(buf)))
		return false;
	errno = 0;
	*v = strtol(buf, &end, 0);
	return !errno && end != buf;
}

/*
 * Resource counts the kernel's restrack holds for the device under test,
 * from one run of `rdma res show DEV` ("0: kiwi0: pd 1 cq 2 qp 1 ...").
 * kinds[i] ("pd", "cq", "qp", "mr", "srq", "ctx") -> out[i].
 * Returns false (out[] = -1) if it can't be determined.
 */
static inline bool kv_res_counts(const char *const *kinds, int n, long *out)
{
	char cmd[256], line[1024];
	bool all = true;
	FILE *p;
	int i;

	for (i = 0; i < n; i++)
		out[i] = -1;
	snprintf(cmd, sizeof(cmd), "rdma res show %s 2>&1", kv_dev_name());
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char *tok, *save = NULL, *prev = NULL;

		for (tok = strtok_r(line, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save)) {
			for (i = 0; prev && i < n; i++) {
				char *end;
				long v;

				if (strcmp(prev, kinds[i]))
					continue;
				v = strtol(tok, &end, 10);
				if (end != tok && !*end)
					out[i] = v;
			}
			prev = tok;
		}
	}
	pclose(p);
	for (i = 0; i < n; i++)
		all &= out[i] >= 0;
	return all;
}

static inline long kv_res_count(const char *kind)
{
	long v;

	kv_res_counts(&kind, 1, &v);
	return v;
}

static inline double kv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int kv_mtu_num(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : -1;
}

/* Largest IB MTU enum not exceeding a byte MTU. */
static inline enum ibv_mtu kv_ib_mtu_for(long bytes)
{
	if (bytes >= 4096)
		return IBV_MTU_4096;
	if (bytes >= 2048)
		return IBV_MTU_2048;
	if (bytes >= 1024)
		return IBV_MTU_1024;
	if (bytes >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

#endif /* KIWI_KV_H */
