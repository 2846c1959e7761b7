// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * bench/qpmem.c -- kernel memory per RC queue pair of an RDMA device.
 *
 *	qpmem -d DEVICE [-n QPS] [-w WRS] [-s SETTLE_MS]
 *
 * Opens DEVICE, allocates a PD, then in two measured phases
 *   1. creates QPS completion queues of 2*WRS entries (one per QP),
 *   2. creates QPS RC QPs, each with WRS send and WRS receive work
 *      requests (one SGE each) and its own CQ from phase 1,
 * and destroys everything again.  Before and after each phase it drops
 * the page cache, lets RCU-deferred frees settle and samples
 *   - /proc/meminfo Slab (SReclaimable + SUnreclaim) and VmallocUsed
 *     (or, where VmallocUsed reads 0, the sum of /proc/vmallocinfo),
 *   - the payload of the slab caches (objects * object_size from
 *     /sys/kernel/slab) plus large kmallocs (Slab minus slab pages):
 *     the same memory without slub_debug's red zones and tracking,
 *   - MemFree, as a catch-all cross-check.
 * The differences divided by the number of objects created are printed as
 * one "key=value ..." line per phase, for scripts:
 *
 *   qpmem dev=kiwi0 phase=qp n=1000 wr=1024 sq=1024 rq=1024 slab=... \
 *	vmalloc=... kernel=... payload=... memfree=... (bytes per object)
 *
 * If the device refuses WRS work requests, the largest accepted depth
 * (halving) is used and reported (wr_refused=WRS err=...); if it refuses
 * a QP before QPS exist, the per-QP figures are over the QPs created
 * (n=...) and qp_refused_at=/err= say where and why.
 * Exit status: 0 if at least one QP was measured, 1 otherwise, 2 on usage.
 * Needs root (drop_caches, vmallocinfo, slab sysfs).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

struct sample {
	long long slab;		/* bytes, meminfo Slab */
	long long vmalloc;	/* bytes, VmallocUsed or vmallocinfo sum */
	long long payload;	/* bytes, slab objects' payload + large kmalloc */
	long long memfree;	/* bytes, MemFree */
};

static int use_vmallocinfo;	/* VmallocUsed reads 0 on this kernel */

static long long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t klen = strlen(key);
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = atoll(line + klen + 1) * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

static long long vmallocinfo_total(void)
{
	FILE *f = fopen("/proc/vmallocinfo", "r");
	char line[512];
	long long sum = 0, sz;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %lld", &sz) == 1)
			sum += sz;
	fclose(f);
	return sum;
}

static long long read_num(const char *dir, const char *name, const char *file)
{
	char path[512];
	FILE *f;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Slab payload: sum over caches of in-use objects * object_size, plus the
 * part of meminfo's Slab that is not in any cache's slabs (kmalloc of more
 * than two pages goes to the page allocator but is counted as slab).
 */
static long long slab_payload(long long slab_bytes)
{
	const char *dir = "/sys/kernel/slab";
	DIR *d = opendir(dir);
	struct dirent *e;
	long long objs = 0, pages = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		long long n, osz, slabs, order;

		if (e->d_name[0] == '.' || e->d_type == DT_LNK)
			continue;	/* aliases of merged caches */
		n = read_num(dir, e->d_name, "objects");
		osz = read_num(dir, e->d_name, "object_size");
		slabs = read_num(dir, e->d_name, "slabs");
		order = read_num(dir, e->d_name, "order");
		if (n < 0 || osz < 0 || slabs < 0 || order < 0)
			continue;
		objs += n * osz;
		pages += slabs << order;
	}
	closedir(d);
	return objs + (slab_bytes - pages * page);
}

static void settle(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	FILE *f;

	sync();
	f = fopen("/proc/sys/vm/drop_caches", "w");
	if (f) {
		fputs("3\n", f);
		fclose(f);
	}
	nanosleep(&ts, NULL);
}

static void take(struct sample *s, int settle_ms)
{
	settle(settle_ms);
	s->slab = meminfo("Slab");
	s->vmalloc = use_vmallocinfo ? vmallocinfo_total() : meminfo("VmallocUsed");
	s->payload = slab_payload(s->slab);
	s->memfree = meminfo("MemFree");
}

static void report(const char *dev, const char *phase, int n,
		   const struct sample *a, const struct sample *b,
		   const char *extra)
{
	double d = n > 0 ? n : 1;
	long long slab = b->slab - a->slab, vm = b->vmalloc - a->vmalloc;

	printf("qpmem dev=%s phase=%s n=%d slab=%.0f vmalloc=%.0f kernel=%.0f "
	       "payload=%.0f memfree=%.0f vmalloc_src=%s%s%s\n",
	       dev, phase, n, slab / d, vm / d, (slab + vm) / d,
	       (b->payload - a->payload) / d, (a->memfree - b->memfree) / d,
	       use_vmallocinfo ? "vmallocinfo" : "meminfo",
	       extra && *extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, int wr,
			      struct ibv_qp_cap *got)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = wr,
			.max_recv_wr = wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (qp && got)
		*got = a.cap;
	return qp;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: qpmem -d DEVICE [-n QPS (1000)] [-w WRS (1024)] "
		   "[-s SETTLE_MS (300)]\n");
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	int nqp = 1000, wr = 1024, settle_ms = 300, c, i, ndev, ncq = 0, nq = 0;
	int wr_used, rc = 1;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	struct ibv_cq **cqs;
	struct ibv_qp **qps;
	struct ibv_qp_cap cap = { 0 };
	struct sample s0, s1, s2, s3;
	char extra[256] = "";

	while ((c = getopt(argc, argv, "d:n:w:s:h")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'n': nqp = atoi(optarg); break;
		case 'w': wr = atoi(optarg); break;
		case 's': settle_ms = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!devname || nqp < 1 || wr < 1 || settle_ms < 0) {
		usage(stderr);
		return 2;
	}

	list = ibv_get_device_list(&ndev);
	for (i = 0; list && i < ndev; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "qpmem: cannot open device %s\n", devname);
		return 1;
	}
	if (ibv_query_device(ctx, &da)) {
		perror("qpmem: ibv_query_device");
		return 1;
	}
	printf("qpmem dev=%s phase=limits max_qp=%d max_qp_wr=%d max_cq=%d "
	       "max_cqe=%d\n", devname, da.max_qp, da.max_qp_wr, da.max_cq,
	       da.max_cqe);
	pd = ibv_alloc_pd(ctx);
	cqs = calloc(nqp, sizeof(*cqs));
	qps = calloc(nqp, sizeof(*qps));
	if (!pd || !cqs || !qps) {
		fprintf(stderr, "qpmem: PD or memory allocation failed\n");
		return 1;
	}

	/* The depth the device accepts: try WRS, halve until one QP works. */
	cqs[0] = ibv_create_cq(ctx, 2 * wr, NULL, NULL, 0);
	if (!cqs[0]) {
		fprintf(stderr, "qpmem: ibv_create_cq(%d): %s\n", 2 * wr,
			strerror(errno));
		return 1;
	}
	for (wr_used = wr; wr_used >= 1; wr_used /= 2) {
		qps[0] = make_qp(pd, cqs[0], wr_used, NULL);
		if (qps[0])
			break;
		if (wr_used == wr)
			snprintf(extra, sizeof(extra), "wr_refused=%d err=%d(%s)",
				 wr, errno, strerror(errno));
	}
	if (!qps[0]) {
		fprintf(stderr, "qpmem: %s: no RC QP can be created: %s\n",
			devname, strerror(errno));
		return 1;
	}
	ibv_destroy_qp(qps[0]);
	ibv_destroy_cq(cqs[0]);
	qps[0] = NULL;
	cqs[0] = NULL;

	use_vmallocinfo = meminfo("VmallocUsed") <= 0;

	take(&s0, settle_ms);
	for (ncq = 0; ncq < nqp; ncq++) {
		cqs[ncq] = ibv_create_cq(ctx, 2 * wr_used, NULL, NULL, 0);
		if (!cqs[ncq]) {
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 "%scq_refused_at=%d err=%d(%s)", *extra ? " " : "",
				 ncq, errno, strerror(errno));
			break;
		}
	}
	take(&s1, settle_ms);
	{
		char e[64];

		snprintf(e, sizeof(e), "cqe=%d", 2 * wr_used);
		report(devname, "cq", ncq, &s0, &s1, e);
	}

	for (nq = 0; nq < ncq; nq++) {
		qps[nq] = make_qp(pd, cqs[nq], wr_used, nq ? NULL : &cap);
		if (!qps[nq]) {
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 "%sqp_refused_at=%d err=%d(%s)", *extra ? " " : "",
				 nq, errno, strerror(errno));
			break;
		}
	}
	take(&s2, settle_ms);
	{
		char e[384];

		snprintf(e, sizeof(e), "wr=%d sq=%u rq=%u%s%s", wr_used,
			 cap.max_send_wr, cap.max_recv_wr, *extra ? " " : "",
			 extra);
		report(devname, "qp", nq, &s1, &s2, e);
	}

	for (i = 0; i < nq; i++)
		if (ibv_destroy_qp(qps[i]))
			fprintf(stderr, "qpmem: ibv_destroy_qp: %s\n", strerror(errno));
	for (i = 0; i < ncq; i++)
		if (ibv_destroy_cq(cqs[i]))
			fprintf(stderr, "qpmem: ibv_destroy_cq: %s\n", strerror(errno));
	take(&s3, settle_ms);
	/* What stays allocated after destroying everything (total, bytes). */
	report(devname, "leftover", 1, &s0, &s3, NULL);

	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(cqs);
	free(qps);
	rc = nq > 0 ? 0 : 1;
	return rc;
}
