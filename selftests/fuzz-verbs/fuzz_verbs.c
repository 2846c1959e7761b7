// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_verbs -- a seeded, stateful fuzzer of kiwi's verbs surface, run
 * in a guest by selftests/guest/fuzz-verbs.sh.
 *
 *   fuzz_verbs -r server|client -a ADDR [-l LOCAL] [-p PORT] [-s SEED]
 *              [-t SECS] [-n THREADS] [-H HOSTILE] [-u UID] [-k N] [-b SECS]
 *
 * Two copies run, one per network namespace of the standard topology:
 * the server listens on ADDR:PORT+i (one rdma_cm listener per thread i),
 * the client connects to them from LOCAL.  Each of the THREADS threads
 * of either copy loops over random operations on its own objects of the
 * kiwi device it is bound to: PDs; MRs over anonymous, file-backed and
 * read-only mappings with random access flags and ranges; memory
 * windows of type 1 and 2 (bind, invalidate, SEND with invalidate); CQs
 * created, resized, polled, armed and destroyed; SRQs; QPs created,
 * modified to random states and destroyed; WQEs written straight into
 * the mapped SQ, RQ, SRQ and CQ rings, valid and not, followed by a
 * doorbell; rdma_cm connections set up, used (SEND, WRITE, READ, *_IMM,
 * atomics, binds) and torn down in random orders; and fork(), whose
 * child scribbles the shared rings, closes the device fd, replaces a
 * ring mapping, or opens the device afresh and exits leaving everything
 * behind.  The client's HOSTILE threads (default 1) are raw-TCP MPA
 * peers of the server's listeners built on include/kiwi: they send
 * random FPDUs with valid CRCs (and some with wrong ones), stall
 * mid-FPDU, stop reading behind large READ Requests, reset, or vanish
 * holding the socket.
 *
 * Every blocking call is bounded (poll timeouts, socket timeouts, a
 * bounded wait for each child), and a watchdog ends the process 120 s
 * after the run should have finished.  Each thread keeps its last 64
 * operations (what, on which object, the result, CLOCK_MONOTONIC time,
 * which is the kernel log's clock); they are printed for the last -k
 * (default 16) at the end, when a line that looks like a kernel report
 * appears in /dev/kmsg (opened before privileges are dropped), and by
 * the watchdog; a step (or the final teardown) longer than -b SECS
 * (default 10) is reported as SLOW with the records.  -u UID: raise RLIMIT_MEMLOCK, then become UID (group
 * UID too) before touching the device.
 *
 * The seed (printed first) fixes every thread's choices: thread i draws
 * from SEED + i.  The interleaving of threads, and what the peer does,
 * are up to the scheduler, so a replay with -s SEED repeats the choices
 * and usually the failure; -n 1 -H 0 makes one thread's sequence exact.
 * Exit status: 0 when the run finished (the kernel log decides the
 * verdict), 2 on usage or set-up errors, 3 if the watchdog fired.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/kiwi-abi.h>
#include <rdma/rdma_cma.h>

#include <kiwi/crc32c.h>
#include <kiwi/iwarp.h>

#include "rings.h"

#define MAX_THREADS	16
#define HIST		64	/* operation records kept per thread */
#define NPD		3
#define NMR		10
#define NMW		6
#define NCQ		5
#define NSRQ		2
#define NQP		5
#define NCONN		4
#define NHELD		4	/* hostile sockets left open, silent */
#define POOL_LEN	(1u << 20)	/* each thread's anonymous pool */
#define FILE_LEN	(256u << 10)	/* its file-backed and read-only maps */
#define CBUF_LEN	(1u << 20)	/* a connection's exposed region */
#define INFO_MAGIC	0x667a7662	/* "fzvb" */

/* What a connection tells its peer: in private data, and in SENDs. */
struct fz_info {
	uint32_t magic;
	uint32_t rkey;		/* the region, or a window bound over it */
	uint64_t addr;
	uint32_t len;
	uint32_t mw_rkey;	/* a type 2 window, for SEND with invalidate */
} __attribute__((packed));

/* ------------------------------------------------------------ options */

static struct {
	bool server;
	const char *addr, *local;
	int port;
	unsigned long seed;
	int secs;
	int threads;
	int hostile;
	int uid;
	int show;
	int slow;	/* a step longer than this many seconds is reported */
} opt = { .slow = 10, .port = 7600, .secs = 60, .threads = 3, .hostile = 1,
	  .uid = -1, .show = 16 };

static double t_end;
static atomic_int stop;
static int kmsg_fd = -1;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------- operation records */

enum op {
	OP_NONE, OP_PD_ALLOC, OP_PD_FREE, OP_MR_REG, OP_MR_DEREG, OP_MW_ALLOC,
	OP_MW_FREE, OP_CQ_CREATE, OP_CQ_RESIZE, OP_CQ_DESTROY, OP_CQ_POLL,
	OP_CQ_ARM, OP_SRQ_CREATE, OP_SRQ_POST, OP_SRQ_MODIFY, OP_SRQ_DESTROY,
	OP_QP_CREATE, OP_QP_MODIFY, OP_QP_QUERY, OP_QP_DESTROY, OP_RING_WQE,
	OP_RING_JUNK, OP_DOORBELL, OP_CONNECT, OP_ACCEPT, OP_REJECT,
	OP_ESTABLISHED, OP_CM_EVENT, OP_POST_SEND, OP_POST_RECV, OP_BIND1,
	OP_BIND2, OP_LOCAL_INV, OP_SEND_INFO, OP_DISCONNECT, OP_CONN_FREE,
	OP_QP_ERR, OP_FORK, OP_CHILD, OP_RELISTEN, OP_H_CONNECT, OP_H_FPDU,
	OP_H_JUNK, OP_H_PARTIAL, OP_H_STALL, OP_H_READREQ, OP_H_DRAIN,
	OP_H_CLOSE, OP_H_RESET, OP_H_HOLD, OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
	"none", "pd_alloc", "pd_free", "mr_reg", "mr_dereg", "mw_alloc",
	"mw_free", "cq_create", "cq_resize", "cq_destroy", "cq_poll",
	"cq_arm", "srq_create", "srq_post", "srq_modify", "srq_destroy",
	"qp_create", "qp_modify", "qp_query", "qp_destroy", "ring_wqe",
	"ring_junk", "doorbell", "connect", "accept", "reject",
	"established", "cm_event", "post_send", "post_recv", "bind_mw1",
	"bind_mw2", "local_inv", "send_info", "disconnect", "conn_free",
	"qp_to_err", "fork", "child", "relisten", "h_connect", "h_fpdu",
	"h_junk", "h_partial", "h_stall", "h_read_req", "h_drain",
	"h_close", "h_reset", "h_hold",
};

struct oprec {
	double t;
	uint32_t seq;
	uint8_t op;
	int8_t obj;		/* slot in the thread's table, -1 none */
	int32_t rc;		/* 0, -errno, or a count */
	uint64_t arg;		/* op-specific: flags, sizes, opcodes */
};

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	/* xorshift64* */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static bool chance(struct rng *r, uint32_t one_in)
{
	return below(r, one_in) == 0;
}

/* ------------------------------------------------------ thread state */

struct conn {
	int state;
#define C_FREE		0
#define C_ADDR		1	/* resolving the address */
#define C_ROUTE		2	/* resolving the route */
#define C_CONNECTING	3	/* connect or accept sent */
#define C_UP		4	/* ESTABLISHED */
#define C_DOWN		5	/* to be freed */
	double deadline;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_mw *mw1, *mw2;
	uint32_t mw2_key;	/* the STag of mw2's last bind we posted */
	uint8_t *buf;
	struct fz_info remote;
	bool have_remote;
	uint32_t wr;
};

struct hsock {
	int fd;
	double until;
};

struct fzt {
	int idx;
	bool hostile;
	pthread_t th;
	struct rng rng;
	struct oprec hist[HIST];
	uint32_t seq;
	_Atomic int cur_op;

	struct rdma_event_channel *ch;
	struct rdma_cm_id *anchor;	/* bound (client) or listening (server) */
	struct ibv_context *ctx;

	uint8_t *pool;			/* anonymous */
	uint8_t *fmap;			/* file-backed, shared, writable */
	const uint8_t *romap;		/* read-only */

	struct ibv_pd *pd[NPD];
	struct { struct ibv_mr *mr; } mr[NMR];
	struct ibv_mw *mw[NMW];
	struct ibv_cq *cq[NCQ];
	struct ibv_srq *srq[NSRQ];
	struct ibv_qp *qp[NQP];
	struct conn conn[NCONN];
	struct hsock held[NHELD];

	unsigned long nops, nfail;
	unsigned int n_ok[OP_COUNT], n_bad[OP_COUNT];
	bool forked;		/* this step waited for a child */
};

static struct fzt *T;
static int nT;

static void rec(struct fzt *t, enum op op, int obj, int rc, uint64_t arg)
{
	struct oprec *o = &t->hist[t->seq % HIST];

	o->t = now();
	o->seq = t->seq++;
	o->op = op;
	o->obj = obj;
	o->rc = rc;
	o->arg = arg;
	t->nops++;
	if (rc < 0) {
		t->nfail++;
		t->n_bad[op]++;
	} else {
		t->n_ok[op]++;
	}
}

/* A -errno value from a verbs return code (0, -1 with errno, or errno). */
static int vrc(int rc)
{
	if (!rc)
		return 0;
	return rc > 0 ? -rc : -errno;
}

static void dump_hist(struct fzt *t, int n, FILE *f)
{
	uint32_t i, first = t->seq > (uint32_t)n ? t->seq - n : 0;

	if (n > HIST)
		first = t->seq > HIST ? t->seq - HIST : 0;
	fprintf(f, "# thread %d (%s): %lu ops, %lu failed; last %u:\n", t->idx,
		t->hostile ? "hostile peer" : "verbs", t->nops, t->nfail,
		t->seq - first);
	for (i = first; i < t->seq; i++) {
		const struct oprec *o = &t->hist[i % HIST];
		/* time since the previous record: what this one waited for */
		double gap = i ? o->t - t->hist[(i - 1) % HIST].t : 0;

		fprintf(f, "#   [%12.6f] t%d #%-7u %-12s obj %2d rc %-6d arg 0x%llx%s",
			o->t, t->idx, o->seq, op_name[o->op], o->obj, o->rc,
			(unsigned long long)o->arg, gap > 1 ? "" : "\n");
		if (gap > 1)
			fprintf(f, " (+%.1f s)\n", gap);
	}
}

/* One line per thread: how often each operation succeeded/failed. */
static void stats(struct fzt *t)
{
	char line[2048];
	size_t o = 0;
	int i;

	for (i = 1; i < OP_COUNT && o < sizeof(line) - 64; i++)
		if (t->n_ok[i] || t->n_bad[i])
			o += snprintf(line + o, sizeof(line) - o, " %s %u/%u",
				      op_name[i], t->n_ok[i], t->n_bad[i]);
	line[o] = 0;
	printf("# thread %d ok/failed:%s\n", t->idx, line);
}

static void dump_all(const char *why, int n)
{
	int i;

	pthread_mutex_lock(&out_lock);
	printf("# ---- %s: last operations (seed %lu) ----\n", why, opt.seed);
	for (i = 0; i < nT; i++)
		dump_hist(&T[i], n, stdout);
	printf("# ---- end ----\n");
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

/* -------------------------------------------------- kernel log watch */

static const char *const kmsg_pat[] = {
	"BUG", "WARNING:", "Oops", "refcount_t", "KASAN", "UBSAN",
	"blocked for more than", "circular locking", "lockdep",
	"sleeping function called", "general protection", "Poison overwritten",
	"Redzone", "Object already free", "list_add corruption",
	"list_del corruption", "kmemleak", "soft lockup", "rcu_sched detected",
	"RCU stall", "Call Trace",
};

static void *kmsg_watch(void *arg)
{
	char line[2048];
	bool dumped = false;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct pollfd p = { .fd = kmsg_fd, .events = POLLIN };
		ssize_t n;
		size_t i;

		if (poll(&p, 1, 500) != 1)
			continue;
		n = read(kmsg_fd, line, sizeof(line) - 1);
		if (n <= 0) {
			if (n < 0 && errno == EPIPE)
				continue;	/* overwritten; go on */
			if (n < 0 && errno == EAGAIN)
				continue;
			break;
		}
		line[n] = 0;
		for (i = 0; i < sizeof(kmsg_pat) / sizeof(kmsg_pat[0]); i++)
			if (strstr(line, kmsg_pat[i]))
				break;
		if (i == sizeof(kmsg_pat) / sizeof(kmsg_pat[0]))
			continue;
		pthread_mutex_lock(&out_lock);
		printf("# KERNEL REPORT at %.6f: %s", now(), line);
		fflush(stdout);
		pthread_mutex_unlock(&out_lock);
		if (!dumped) {
			dumped = true;
			dump_all("kernel report", HIST);
		}
	}
	return NULL;
}

/* --------------------------------------------------------- watchdog */

static void *watchdog(void *arg)
{
	int i;

	(void)arg;
	while (now() < t_end + 120)
		sleep(1);
	pthread_mutex_lock(&out_lock);
	printf("fuzz_verbs: WATCHDOG: still running 120 s after the end; current ops:");
	for (i = 0; i < nT; i++)
		printf(" t%d=%s", i, op_name[atomic_load(&T[i].cur_op)]);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	dump_all("watchdog", HIST);
	_exit(3);
}

/* ------------------------------------------------------- local verbs */

static void *pick_buf(struct fzt *t, size_t *cap, int *kind)
{
	*kind = below(&t->rng, 4);
	switch (*kind) {
	case 1:
		*cap = FILE_LEN;
		return t->fmap;
	case 2:
		if (t->romap) {
			*cap = FILE_LEN;
			return (void *)t->romap;
		}
		/* fall through */
	default:
		*kind = 0;
		*cap = POOL_LEN;
		return t->pool;
	}
}

static const int access_bits[] = {
	IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
	IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED,
};

static int rnd_access(struct fzt *t)
{
	int a = 0;
	size_t i;

	for (i = 0; i < sizeof(access_bits) / sizeof(access_bits[0]); i++)
		if (chance(&t->rng, 2))
			a |= access_bits[i];
	/* remote write and atomic need local write: mostly valid sets */
	if (!chance(&t->rng, 4))
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (chance(&t->rng, 40))
		a |= 1 << below(&t->rng, 31);	/* unknown bits too */
	return a;
}

static int any_pd(struct fzt *t)
{
	int i, j = below(&t->rng, NPD);

	for (i = 0; i < NPD; i++, j = (j + 1) % NPD)
		if (t->pd[j])
			return j;
	return -1;
}

static void op_pd(struct fzt *t)
{
	int i = below(&t->rng, NPD);

	if (!t->pd[i]) {
		t->pd[i] = ibv_alloc_pd(t->ctx);
		rec(t, OP_PD_ALLOC, i, t->pd[i] ? 0 : -errno, 0);
	} else if (chance(&t->rng, 3)) {
		int rc = vrc(ibv_dealloc_pd(t->pd[i]));

		if (!rc)
			t->pd[i] = NULL;
		rec(t, OP_PD_FREE, i, rc, 0);
	}
}

static void op_mr(struct fzt *t)
{
	int i = below(&t->rng, NMR), p = any_pd(t), kind, access, rc;
	size_t cap, off, len;
	uint8_t *base;

	if (t->mr[i].mr) {
		rc = vrc(ibv_dereg_mr(t->mr[i].mr));
		if (!rc)
			t->mr[i].mr = NULL;
		rec(t, OP_MR_DEREG, i, rc, 0);
		return;
	}
	if (p < 0)
		return;
	base = pick_buf(t, &cap, &kind);
	off = below(&t->rng, cap);
	len = 1 + below(&t->rng, cap - off);
	if (chance(&t->rng, 4)) {	/* page-aligned, the usual case */
		off &= ~4095UL;
		len = 4096 * (1 + below(&t->rng, 16));
		if (off + len > cap)
			len = cap - off;
	}
	if (chance(&t->rng, 30))
		len += below(&t->rng, 1 << 20);	/* past the mapping */
	if (chance(&t->rng, 50))
		len = 0;
	access = rnd_access(t);
	if (chance(&t->rng, 3))
		t->mr[i].mr = ibv_reg_mr_iova(t->pd[p], base + off, len,
					      rnd(&t->rng), access);
	else
		t->mr[i].mr = ibv_reg_mr(t->pd[p], base + off, len, access);
	rec(t, OP_MR_REG, i, t->mr[i].mr ? 0 : -errno,
	    (uint64_t)kind << 60 | (uint64_t)access << 32 | len);
}

static void op_mw(struct fzt *t)
{
	int i = below(&t->rng, NMW), p = any_pd(t), rc;
	enum ibv_mw_type type = chance(&t->rng, 2) ? IBV_MW_TYPE_1 :
						      IBV_MW_TYPE_2;

	if (t->mw[i]) {
		rc = vrc(ibv_dealloc_mw(t->mw[i]));
		if (!rc)
			t->mw[i] = NULL;
		rec(t, OP_MW_FREE, i, rc, 0);
		return;
	}
	if (p < 0)
		return;
	t->mw[i] = ibv_alloc_mw(t->pd[p], type);
	rec(t, OP_MW_ALLOC, i, t->mw[i] ? 0 : -errno, type);
}

static uint32_t rnd_depth(struct fzt *t)
{
	switch (below(&t->rng, 8)) {
	case 0:
		return 0;
	case 1:
		return 1 << below(&t->rng, 19);	/* up to beyond max */
	case 2:
		return rnd(&t->rng);
	default:
		return 1 + below(&t->rng, 256);
	}
}

static void op_cq(struct fzt *t)
{
	int i = below(&t->rng, NCQ), rc;
	struct ibv_wc wc[16];

	if (!t->cq[i]) {
		uint32_t n = rnd_depth(t);

		t->cq[i] = ibv_create_cq(t->ctx, (int)n, NULL, NULL, 0);
		rec(t, OP_CQ_CREATE, i, t->cq[i] ? 0 : -errno, n);
		return;
	}
	switch (below(&t->rng, 6)) {
	case 0: {
		uint32_t n = rnd_depth(t);

		rec(t, OP_CQ_RESIZE, i, vrc(ibv_resize_cq(t->cq[i], (int)n)), n);
		break;
	}
	case 1:
		rc = vrc(ibv_destroy_cq(t->cq[i]));
		if (!rc)
			t->cq[i] = NULL;
		rec(t, OP_CQ_DESTROY, i, rc, 0);
		break;
	case 2:
		rec(t, OP_CQ_ARM, i,
		    vrc(ibv_req_notify_cq(t->cq[i], chance(&t->rng, 2))), 0);
		break;
	default:
		rec(t, OP_CQ_POLL, i, ibv_poll_cq(t->cq[i], 16, wc), 0);
		break;
	}
}

/* One SGE into @buf (an MR's range mostly), lkey of @mr or garbage. */
static struct ibv_sge rnd_sge(struct fzt *t, struct ibv_mr *mr)
{
	struct ibv_sge s = { 0 };

	if (mr && !chance(&t->rng, 10)) {
		uint32_t off = below(&t->rng, mr->length ? mr->length : 1);

		s.addr = (uintptr_t)mr->addr + off;
		s.length = below(&t->rng, mr->length - off + 1);
		s.lkey = mr->lkey;
		if (chance(&t->rng, 20))
			s.length += below(&t->rng, 8192);	/* past its end */
	} else {
		s.addr = rnd(&t->rng);
		s.length = below(&t->rng, 65536);
		s.lkey = rnd(&t->rng);
	}
	return s;
}

static struct ibv_mr *any_mr(struct fzt *t)
{
	int i, j = below(&t->rng, NMR);

	for (i = 0; i < NMR; i++, j = (j + 1) % NMR)
		if (t->mr[j].mr)
			return t->mr[j].mr;
	return NULL;
}

static void op_srq(struct fzt *t)
{
	int i = below(&t->rng, NSRQ), p = any_pd(t), rc;

	if (!t->srq[i]) {
		struct ibv_srq_init_attr a = { 0 };

		if (p < 0)
			return;
		a.attr.max_wr = rnd_depth(t);
		a.attr.max_sge = below(&t->rng, 10);
		a.attr.srq_limit = below(&t->rng, 4);
		t->srq[i] = ibv_create_srq(t->pd[p], &a);
		rec(t, OP_SRQ_CREATE, i, t->srq[i] ? 0 : -errno, a.attr.max_wr);
		return;
	}
	switch (below(&t->rng, 5)) {
	case 0:
		rc = vrc(ibv_destroy_srq(t->srq[i]));
		if (!rc)
			t->srq[i] = NULL;
		rec(t, OP_SRQ_DESTROY, i, rc, 0);
		break;
	case 1: {
		struct ibv_srq_attr a = { .srq_limit = below(&t->rng, 64),
					  .max_wr = rnd_depth(t) };

		rec(t, OP_SRQ_MODIFY, i,
		    vrc(ibv_modify_srq(t->srq[i], &a,
				       chance(&t->rng, 2) ? IBV_SRQ_LIMIT :
				       IBV_SRQ_MAX_WR)), a.max_wr);
		break;
	}
	default: {
		struct ibv_sge s = rnd_sge(t, any_mr(t));
		struct ibv_recv_wr wr = { .wr_id = t->seq, .sg_list = &s,
					  .num_sge = 1 }, *bad;

		rec(t, OP_SRQ_POST, i, vrc(ibv_post_srq_recv(t->srq[i], &wr,
							     &bad)), 0);
		break;
	}
	}
}

static struct ibv_cq *any_cq(struct fzt *t)
{
	int i, j = below(&t->rng, NCQ);

	for (i = 0; i < NCQ; i++, j = (j + 1) % NCQ)
		if (t->cq[j])
			return t->cq[j];
	return NULL;
}

static int doorbell(struct ibv_qp *qp);

static void op_qp(struct fzt *t)
{
	int i = below(&t->rng, NQP), p = any_pd(t), rc;

	if (!t->qp[i]) {
		struct ibv_qp_init_attr a = { 0 };

		a.send_cq = any_cq(t);
		a.recv_cq = chance(&t->rng, 2) ? a.send_cq : any_cq(t);
		if (p < 0 || !a.send_cq || !a.recv_cq)
			return;
		a.qp_type = chance(&t->rng, 30) ? IBV_QPT_UD : IBV_QPT_RC;
		a.cap.max_send_wr = rnd_depth(t);
		a.cap.max_recv_wr = rnd_depth(t);
		a.cap.max_send_sge = below(&t->rng, 10);
		a.cap.max_recv_sge = below(&t->rng, 10);
		a.cap.max_inline_data = below(&t->rng, 300);
		a.sq_sig_all = chance(&t->rng, 2);
		if (chance(&t->rng, 3))
			a.srq = t->srq[below(&t->rng, NSRQ)];
		t->qp[i] = ibv_create_qp(t->pd[p], &a);
		rec(t, OP_QP_CREATE, i, t->qp[i] ? 0 : -errno,
		    (uint64_t)a.cap.max_send_wr << 32 | a.cap.max_recv_wr);
		return;
	}
	switch (below(&t->rng, 6)) {
	case 5: { /* its SQ ring unmapped under it, a doorbell, destroy */
		struct fz_ring sq, rq;

		if (!fz_qp_rings(t->qp[i], &sq, &rq))
			mmap(sq.map, sq.map_len, PROT_NONE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		doorbell(t->qp[i]);
		rc = vrc(ibv_destroy_qp(t->qp[i]));
		t->qp[i] = NULL;	/* never touched again, even if it failed */
		rec(t, OP_QP_DESTROY, i, rc, 1);
		break;
	}
	case 0:
		rc = vrc(ibv_destroy_qp(t->qp[i]));
		if (!rc)
			t->qp[i] = NULL;
		rec(t, OP_QP_DESTROY, i, rc, 0);
		break;
	case 1: {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		int mask = chance(&t->rng, 4) ? (int)rnd(&t->rng) :
			   IBV_QP_STATE | IBV_QP_CAP;

		rec(t, OP_QP_QUERY, i,
		    vrc(ibv_query_qp(t->qp[i], &a, mask, &ia)), mask);
		break;
	}
	default: {
		struct ibv_qp_attr a = { 0 };
		int mask = IBV_QP_STATE;

		a.qp_state = below(&t->rng, 7);
		if (chance(&t->rng, 3)) {
			mask |= IBV_QP_MAX_QP_RD_ATOMIC |
				IBV_QP_MAX_DEST_RD_ATOMIC;
			a.max_rd_atomic = below(&t->rng, 300);
			a.max_dest_rd_atomic = below(&t->rng, 300);
		}
		if (chance(&t->rng, 8))
			mask = rnd(&t->rng);
		rec(t, OP_QP_MODIFY, i, vrc(ibv_modify_qp(t->qp[i], &a, mask)),
		    (uint64_t)mask << 8 | a.qp_state);
		break;
	}
	}
}

/* ------------------------------------------------------ ring writing */

/* The doorbell, as the provider rings it: POST_SEND with no WRs. */
static int doorbell(struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send body;
	} cmd = { 0 };
	struct ib_uverbs_post_send_resp resp = { 0 };

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.body.response = (uintptr_t)&resp;
	cmd.body.qp_handle = qp->handle;
	cmd.body.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return write(qp->context->cmd_fd, &cmd, sizeof(cmd)) < 0 ? -errno : 0;
}

/* A send WQE, plausible or not, into slot @s of @stride bytes. */
static uint64_t fill_sqe(struct fzt *t, uint8_t *s, uint32_t stride,
			 struct ibv_mr *mr, const struct conn *c)
{
	struct kiwi_usqe h = { 0 };
	uint32_t room = stride - sizeof(h), i;

	h.wr_id = t->seq;
	h.opcode = chance(&t->rng, 8) ? rnd(&t->rng) :
					 below(&t->rng, KIWI_UWR_NUM_OPCODES);
	h.flags = chance(&t->rng, 8) ? rnd(&t->rng) :
				       below(&t->rng, KIWI_UWR_F_ALL + 1);
	h.num_sge = chance(&t->rng, 8) ? rnd(&t->rng) : below(&t->rng, 3);
	h.length = chance(&t->rng, 2) ? below(&t->rng, 300) : rnd(&t->rng);
	if (c && c->have_remote && !chance(&t->rng, 4)) {
		h.rkey = chance(&t->rng, 2) ? c->remote.rkey : c->remote.mw_rkey;
		h.raddr = c->remote.addr + below(&t->rng, c->remote.len + 64);
		h.inv_rkey = c->remote.mw_rkey;
	} else {
		h.rkey = rnd(&t->rng);
		h.raddr = rnd(&t->rng);
		h.inv_rkey = rnd(&t->rng);
	}
	if (h.opcode == KIWI_UWR_BIND_MW || h.opcode == KIWI_UWR_LOCAL_INV) {
		/* a window of ours, sometimes */
		struct ibv_mw *mw = t->mw[below(&t->rng, NMW)];

		if (mw) {
			h.rkey = mw->rkey;
			h.inv_rkey = (mw->rkey & ~0xffu) |
				     ((mw->rkey + 1 + below(&t->rng, 3)) & 0xff);
		}
	}
	memcpy(s, &h, sizeof(h));
	if (h.opcode == KIWI_UWR_BIND_MW && room >= sizeof(struct kiwi_ubind)) {
		struct kiwi_ubind b = { 0 };

		b.length = chance(&t->rng, 4) ? rnd(&t->rng) :
						below(&t->rng, 65536);
		b.mr_lkey = mr && !chance(&t->rng, 5) ? mr->lkey : rnd(&t->rng);
		b.access = chance(&t->rng, 5) ? rnd(&t->rng) :
						below(&t->rng, 64);
		if (mr && chance(&t->rng, 2))
			memcpy(s + 8 + 8 + 8, &(uint64_t){ (uintptr_t)mr->addr +
					   below(&t->rng, mr->length + 1) }, 8);
		memcpy(s + sizeof(h), &b, sizeof(b));
		return h.opcode;
	}
	for (i = 0; (i + 1) * sizeof(struct kiwi_usge) <= room && i < 8; i++) {
		struct ibv_sge g = rnd_sge(t, mr);
		struct kiwi_usge u = { g.addr, g.length, g.lkey };

		memcpy(s + sizeof(h) + i * sizeof(u), &u, sizeof(u));
	}
	if (h.opcode >= KIWI_UWR_ATOMIC_FADD && h.opcode <= KIWI_UWR_ATOMIC_CSWAP &&
	    room >= sizeof(struct kiwi_usge) + sizeof(struct kiwi_uatomic)) {
		struct kiwi_uatomic a = { rnd(&t->rng), rnd(&t->rng) };

		memcpy(s + sizeof(h) + sizeof(struct kiwi_usge), &a, sizeof(a));
	}
	return h.opcode | (uint64_t)h.flags << 8 | (uint64_t)h.num_sge << 16;
}

static void fill_rqe(struct fzt *t, uint8_t *s, uint32_t stride,
		     struct ibv_mr *mr)
{
	struct kiwi_urqe h = { .wr_id = t->seq };
	uint32_t i;

	h.num_sge = chance(&t->rng, 8) ? rnd(&t->rng) : below(&t->rng, 3);
	memcpy(s, &h, sizeof(h));
	for (i = 0; sizeof(h) + (i + 1) * sizeof(struct kiwi_usge) <= stride &&
		    i < 8; i++) {
		struct ibv_sge g = rnd_sge(t, mr);
		struct kiwi_usge u = { g.addr, g.length, g.lkey };

		memcpy(s + sizeof(h) + i * sizeof(u), &u, sizeof(u));
	}
}

/* Bump a producer index (or set it anywhere). */
static void ring_publish(struct fzt *t, struct fz_ring *r, uint32_t n)
{
	_Atomic uint32_t *prod = (_Atomic uint32_t *)r->ctl;

	if (chance(&t->rng, 12))
		atomic_store(prod, (uint32_t)rnd(&t->rng));
	else
		atomic_store(prod, atomic_load(prod) + n);
}

static void junk(struct fzt *t, struct fz_ring *r)
{
	size_t len = KIWI_RING_CTL_SIZE + (size_t)r->nslots * r->stride;
	uint32_t v = rnd(&t->rng);
	size_t off = chance(&t->rng, 2) ? below(&t->rng, 48) * 4 :
					  below(&t->rng, len / 4) * 4;

	memcpy(r->ctl + off, &v, 4);
}

/*
 * Write WQEs (or junk) into one of the rings: a QP's SQ or RQ (local or
 * connected), an SRQ's, a CQ's; then the doorbell for an SQ.
 */
static void op_ring(struct fzt *t)
{
	struct fz_ring sq, rq, r;
	struct ibv_qp *qp = NULL;
	const struct conn *c = NULL;
	struct ibv_mr *mr = any_mr(t);
	uint32_t k, n = 1 + below(&t->rng, 4);
	uint64_t arg = 0;
	int which = below(&t->rng, 5);

	if (which <= 2) {
		int i = below(&t->rng, NCONN);

		if (!chance(&t->rng, 3) && t->conn[i].state == C_UP &&
		    t->conn[i].id->qp) {
			c = &t->conn[i];
			qp = c->id->qp;
			mr = c->mr;
		} else {
			qp = t->qp[below(&t->rng, NQP)];
		}
		if (!qp || fz_qp_rings(qp, &sq, &rq))
			return;
		r = which == 2 && rq.nslots ? rq : sq;
	} else if (which == 3) {
		struct ibv_srq *s = t->srq[below(&t->rng, NSRQ)];

		if (!s || fz_srq_ring(s, &r))
			return;
	} else {
		struct ibv_cq *cq = any_cq(t);

		if (!cq || fz_cq_ring(cq, &r))
			return;
	}
	if (which == 4 || chance(&t->rng, 6)) {
		for (k = 0; k < n; k++)
			junk(t, &r);
		rec(t, OP_RING_JUNK, which, 0, n);
	} else {
		uint32_t prod = atomic_load((_Atomic uint32_t *)r.ctl);

		for (k = 0; k < n; k++) {
			uint8_t *s = r.slots + (size_t)((prod + k) &
						(r.nslots - 1)) * r.stride;

			if (qp && r.ctl == sq.ctl)
				arg = fill_sqe(t, s, r.stride, mr, c);
			else
				fill_rqe(t, s, r.stride, mr);
		}
		ring_publish(t, &r, n);
		rec(t, OP_RING_WQE, which, 0, arg << 8 | n);
	}
	if (qp && (r.ctl == sq.ctl || chance(&t->rng, 4)))
		rec(t, OP_DOORBELL, which, doorbell(qp), 0);
}

/* --------------------------------------------------------- rdma_cm */

static struct conn *conn_of(struct fzt *t, struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < NCONN; i++)
		if (t->conn[i].state != C_FREE && t->conn[i].id == id)
			return &t->conn[i];
	return NULL;
}

static struct conn *free_conn(struct fzt *t)
{
	int i;

	for (i = 0; i < NCONN; i++)
		if (t->conn[i].state == C_FREE)
			return &t->conn[i];
	return NULL;
}

static int cidx(struct fzt *t, struct conn *c)
{
	return c ? (int)(c - t->conn) : -1;
}

/* Tear a connection down, in one of several orders. */
static void conn_free(struct fzt *t, struct conn *c)
{
	int how = below(&t->rng, 4), rc = 0;

	if (how == 0 && c->id->qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(c->id->qp, &a, IBV_QP_STATE);
	}
	if (how == 1)
		rdma_disconnect(c->id);
	if (how == 3) {
		/* the id first: its QP outlives it for a moment */
		struct ibv_qp *qp = c->id->qp;

		c->id->qp = NULL;
		rc = rdma_destroy_id(c->id);
		if (qp)
			rc |= ibv_destroy_qp(qp);
		c->id = NULL;
	} else if (c->id->qp) {
		rdma_destroy_qp(c->id);
	}
	if (c->mw1)
		rc |= ibv_dealloc_mw(c->mw1);
	if (c->mw2)
		rc |= ibv_dealloc_mw(c->mw2);
	if (c->mr)
		rc |= ibv_dereg_mr(c->mr);
	if (c->cq)
		rc |= ibv_destroy_cq(c->cq);
	if (c->pd)
		rc |= ibv_dealloc_pd(c->pd);
	if (c->id)
		rc |= rdma_destroy_id(c->id);
	if (c->buf)
		munmap(c->buf, CBUF_LEN);
	rec(t, OP_CONN_FREE, cidx(t, c), rc ? -EIO : 0, how);
	memset(c, 0, sizeof(*c));
}

static void post_recvs(struct fzt *t, struct conn *c, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		uint64_t id = ++c->wr;
		struct ibv_sge s = { (uintptr_t)c->buf + (id % 8) * 4096, 4096,
				     c->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->id->qp, &wr, &bad))
			break;
	}
	(void)t;
}

/* PD, CQ, region, windows and QP of a connection on c->id. */
static int conn_verbs(struct fzt *t, struct conn *c)
{
	struct ibv_qp_init_attr a = { 0 };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		  IBV_ACCESS_MW_BIND;

	c->buf = mmap(NULL, CBUF_LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->buf == MAP_FAILED) {
		c->buf = NULL;
		return -ENOMEM;
	}
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = ibv_create_cq(c->id->verbs, 64 + below(&t->rng, 256), NULL,
			      NULL, 0);
	if (!c->pd || !c->cq)
		return -errno;
	if (chance(&t->rng, 8))
		acc &= ~(int)below(&t->rng, 32);
	c->mr = ibv_reg_mr(c->pd, c->buf, CBUF_LEN, acc);
	if (!c->mr)
		return -errno;
	c->mw1 = ibv_alloc_mw(c->pd, IBV_MW_TYPE_1);
	c->mw2 = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	if (c->mw2)
		c->mw2_key = c->mw2->rkey;
	a.send_cq = a.recv_cq = c->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 8 + below(&t->rng, 120);
	a.cap.max_recv_wr = 8 + below(&t->rng, 120);
	a.cap.max_send_sge = 1 + below(&t->rng, 4);
	a.cap.max_recv_sge = 1 + below(&t->rng, 2);
	a.cap.max_inline_data = below(&t->rng, 128);
	a.sq_sig_all = chance(&t->rng, 3);
	if (rdma_create_qp(c->id, c->pd, &a))
		return -errno;
	post_recvs(t, c, 8);
	return 0;
}

static struct fz_info my_info(struct conn *c)
{
	struct fz_info i = { htonl(INFO_MAGIC), htonl(c->mr->rkey),
			     htobe64((uintptr_t)c->buf), htonl(CBUF_LEN),
			     htonl(c->mw2_key) };

	return i;
}

static void take_info(struct conn *c, const void *pd, size_t len)
{
	struct fz_info i;

	if (len < sizeof(i))
		return;
	memcpy(&i, pd, sizeof(i));
	if (ntohl(i.magic) != INFO_MAGIC)
		return;
	c->remote.rkey = ntohl(i.rkey);
	c->remote.addr = be64toh(i.addr);
	c->remote.len = ntohl(i.len);
	c->remote.mw_rkey = ntohl(i.mw_rkey);
	c->have_remote = true;
}

static struct rdma_conn_param conn_param(struct fzt *t, const void *pd,
					 uint8_t len)
{
	struct rdma_conn_param p = { 0 };

	p.private_data = pd;
	p.private_data_len = len;
	p.responder_resources = below(&t->rng, 20);
	p.initiator_depth = below(&t->rng, 20);
	p.retry_count = 7;
	return p;
}

/* Client: start a connection to the server's thread j listener. */
static void op_connect(struct fzt *t)
{
	struct conn *c = free_conn(t);
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int rc;

	if (!c)
		return;
	dst.sin_port = htons(opt.port + below(&t->rng, opt.threads));
	inet_pton(AF_INET, opt.addr, &dst.sin_addr);
	if (opt.local)
		inet_pton(AF_INET, opt.local, &src.sin_addr);
	rc = rdma_create_id(t->ch, &c->id, c, RDMA_PS_TCP);
	if (!rc)
		rc = rdma_resolve_addr(c->id, opt.local ?
				       (struct sockaddr *)&src : NULL,
				       (struct sockaddr *)&dst, 2000);
	if (rc) {
		rc = -errno;
		if (c->id)
			rdma_destroy_id(c->id);
		c->id = NULL;
	} else {
		c->state = C_ADDR;
		c->deadline = now() + 10;
	}
	rec(t, OP_CONNECT, cidx(t, c), rc, ntohs(dst.sin_port));
}

/* Server: a connect request on the listener. */
static void on_request(struct fzt *t, struct rdma_cm_event *ev)
{
	struct conn *c = free_conn(t);
	struct rdma_conn_param p;
	struct fz_info info;
	int rc;

	if (!c || chance(&t->rng, 10)) {
		rec(t, OP_REJECT, -1, vrc(rdma_reject(ev->id, NULL, 0)), 0);
		/* the id is ours to destroy, after the ack */
		return;
	}
	c->id = ev->id;
	c->id->context = c;
	c->state = C_CONNECTING;
	c->deadline = now() + 10;
	rc = conn_verbs(t, c);
	if (!rc)
		take_info(c, ev->param.conn.private_data,
			  ev->param.conn.private_data_len);
	if (!rc) {
		info = my_info(c);
		p = conn_param(t, &info, sizeof(info));
		if (rdma_accept(c->id, &p))
			rc = -errno;
	}
	rec(t, OP_ACCEPT, cidx(t, c), rc, 0);
	if (rc)
		c->state = C_DOWN;
}

static void cm_pump(struct fzt *t, int ms)
{
	struct pollfd p = { .fd = t->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *reject_id;
	int i;

	while (poll(&p, 1, ms) == 1 && !rdma_get_cm_event(t->ch, &ev)) {
		struct conn *c = conn_of(t, ev->id);
		int e = ev->event;

		ms = 0;
		reject_id = NULL;
		rec(t, OP_CM_EVENT, cidx(t, c), ev->status, e);
		switch (e) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			on_request(t, ev);
			if (!conn_of(t, ev->id))
				reject_id = ev->id;
			break;
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (c && (rdma_resolve_route(c->id, 2000)))
				c->state = C_DOWN;
			else if (c)
				c->state = C_ROUTE;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			if (!c)
				break;
			if (conn_verbs(t, c)) {
				c->state = C_DOWN;
			} else {
				struct fz_info info = my_info(c);
				struct rdma_conn_param cp =
					conn_param(t, &info, sizeof(info));

				if (chance(&t->rng, 20))
					cp.private_data_len = below(&t->rng, 60);
				c->state = rdma_connect(c->id, &cp) ? C_DOWN :
								       C_CONNECTING;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (!c)
				break;
			c->state = C_UP;
			if (!opt.server)
				take_info(c, ev->param.conn.private_data,
					  ev->param.conn.private_data_len);
			rec(t, OP_ESTABLISHED, cidx(t, c), 0, 0);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			atomic_store(&stop, 1);
			/* fall through */
		default:	/* errors, rejects, disconnects */
			if (c)
				c->state = C_DOWN;
			break;
		}
		rdma_ack_cm_event(ev);
		if (reject_id)
			rdma_destroy_id(reject_id);
	}
	for (i = 0; i < NCONN; i++) {
		struct conn *k = &t->conn[i];

		if (k->state != C_FREE && k->state != C_UP &&
		    now() > k->deadline)
			k->state = C_DOWN;
		if (k->state == C_DOWN)
			conn_free(t, k);
	}
}

static struct conn *up_conn(struct fzt *t)
{
	int i, j = below(&t->rng, NCONN);

	for (i = 0; i < NCONN; i++, j = (j + 1) % NCONN)
		if (t->conn[j].state == C_UP && t->conn[j].id->qp)
			return &t->conn[j];
	return NULL;
}

static const enum ibv_wr_opcode send_ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_INV, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
};

static void op_traffic1(struct fzt *t);

/* Traffic and windows on a connected QP: a burst of up to 8 steps. */
static void op_traffic(struct fzt *t)
{
	uint32_t n = 1 + below(&t->rng, 8);

	while (n--)
		op_traffic1(t);
}

static void op_traffic1(struct fzt *t)
{
	struct conn *c = up_conn(t);
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc[16];
	int rc, n, what;

	if (!c)
		return;
	what = below(&t->rng, 12);
	wr.wr_id = ++c->wr;
	wr.send_flags = chance(&t->rng, 2) ? IBV_SEND_SIGNALED : 0;
	switch (what) {
	case 0: /* type 1 bind through ibv_bind_mw */
	{
		struct ibv_mw_bind b = { .wr_id = wr.wr_id,
					 .send_flags = wr.send_flags };

		if (!c->mw1)
			return;
		b.bind_info.mr = c->mr;
		b.bind_info.addr = (uintptr_t)c->buf +
				   below(&t->rng, CBUF_LEN);
		b.bind_info.length = below(&t->rng, CBUF_LEN + 4096);
		b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ;
		if (chance(&t->rng, 4))
			b.bind_info.mw_access_flags = rnd_access(t);
		rc = vrc(ibv_bind_mw(c->id->qp, c->mw1, &b));
		rec(t, OP_BIND1, cidx(t, c), rc, b.bind_info.length);
		return;
	}
	case 1: /* type 2 bind, a work request */
		if (!c->mw2)
			return;
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = c->mw2;
		wr.bind_mw.rkey = ibv_inc_rkey(c->mw2_key);
		if (!chance(&t->rng, 8))
			c->mw2_key = wr.bind_mw.rkey;
		wr.bind_mw.bind_info.mr = c->mr;
		wr.bind_mw.bind_info.addr = (uintptr_t)c->buf +
					    below(&t->rng, CBUF_LEN / 2);
		wr.bind_mw.bind_info.length = below(&t->rng, CBUF_LEN / 2);
		wr.bind_mw.bind_info.mw_access_flags =
			chance(&t->rng, 4) ? rnd_access(t) :
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		rc = vrc(ibv_post_send(c->id->qp, &wr, &bad));
		rec(t, OP_BIND2, cidx(t, c), rc, wr.bind_mw.bind_info.length);
		return;
	case 2:
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = chance(&t->rng, 2) && c->mw2 ?
				     c->mw2_key : rnd(&t->rng);
		rc = vrc(ibv_post_send(c->id->qp, &wr, &bad));
		rec(t, OP_LOCAL_INV, cidx(t, c), rc, wr.invalidate_rkey);
		return;
	case 3: /* tell the peer about our windows */
	{
		struct fz_info info = my_info(c);

		if (c->mw1 && chance(&t->rng, 2))
			info.rkey = htonl(c->mw1->rkey);
		memcpy(c->buf + CBUF_LEN - 4096, &info, sizeof(info));
		s[0].addr = (uintptr_t)c->buf + CBUF_LEN - 4096;
		s[0].length = sizeof(info);
		s[0].lkey = c->mr->lkey;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = s;
		wr.num_sge = 1;
		rc = vrc(ibv_post_send(c->id->qp, &wr, &bad));
		rec(t, OP_SEND_INFO, cidx(t, c), rc, 0);
		return;
	}
	case 4:
		post_recvs(t, c, 1 + below(&t->rng, 8));
		rec(t, OP_POST_RECV, cidx(t, c), 0, 0);
		return;
	case 5:
		n = ibv_poll_cq(c->cq, 16, wc);
		for (rc = 0; rc < n; rc++)
			if (wc[rc].opcode == IBV_WC_RECV &&
			    wc[rc].status == IBV_WC_SUCCESS)
				take_info(c, c->buf + (wc[rc].wr_id % 8) * 4096,
					  wc[rc].byte_len);
		rec(t, OP_CQ_POLL, cidx(t, c), n, 0);
		return;
	default:
		break;
	}
	wr.opcode = send_ops[below(&t->rng, sizeof(send_ops) /
					 sizeof(send_ops[0]))];
	s[0] = rnd_sge(t, c->mr);
	s[1] = rnd_sge(t, c->mr);
	wr.sg_list = s;
	wr.num_sge = 1 + below(&t->rng, 2);
	wr.imm_data = rnd(&t->rng);
	if (c->have_remote) {
		wr.wr.rdma.rkey = chance(&t->rng, 3) ? c->remote.mw_rkey :
						       c->remote.rkey;
		wr.wr.rdma.remote_addr = c->remote.addr +
					 below(&t->rng, c->remote.len + 128);
	} else {
		wr.wr.rdma.rkey = rnd(&t->rng);
		wr.wr.rdma.remote_addr = rnd(&t->rng);
	}
	if (chance(&t->rng, 10))
		wr.wr.rdma.rkey = rnd(&t->rng);
	if (wr.opcode == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = chance(&t->rng, 3) ? rnd(&t->rng) :
				     c->remote.mw_rkey;
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		uint64_t ra = wr.wr.rdma.remote_addr & ~7ULL;
		uint32_t rk = wr.wr.rdma.rkey;

		wr.num_sge = 1;
		s[0].length = 8;
		s[0].addr &= ~7ULL;
		wr.wr.atomic.remote_addr = ra;
		wr.wr.atomic.rkey = rk;
		wr.wr.atomic.compare_add = rnd(&t->rng);
		wr.wr.atomic.swap = rnd(&t->rng);
	}
	if (wr.opcode == IBV_WR_RDMA_READ)
		wr.num_sge = 1;
	if (chance(&t->rng, 6) && wr.opcode != IBV_WR_RDMA_READ)
		wr.send_flags |= IBV_SEND_INLINE;
	if (chance(&t->rng, 10))
		wr.send_flags |= IBV_SEND_FENCE | IBV_SEND_SOLICITED;
	rc = vrc(ibv_post_send(c->id->qp, &wr, &bad));
	rec(t, OP_POST_SEND, cidx(t, c), rc,
	    (uint64_t)wr.opcode << 32 | s[0].length);
	if (chance(&t->rng, 2))
		ibv_poll_cq(c->cq, 16, wc);
}

static void op_conn_end(struct fzt *t)
{
	struct conn *c = up_conn(t);

	if (!c)
		return;
	if (chance(&t->rng, 2)) {
		rec(t, OP_DISCONNECT, cidx(t, c), vrc(rdma_disconnect(c->id)), 0);
		c->state = C_CONNECTING;	/* until DISCONNECTED, bounded */
		c->deadline = now() + 5;
	} else if (chance(&t->rng, 2)) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		rec(t, OP_QP_ERR, cidx(t, c),
		    vrc(ibv_modify_qp(c->id->qp, &a, IBV_QP_STATE)), 0);
	} else {
		conn_free(t, c);
	}
}

static void op_relisten(struct fzt *t)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(opt.port + t->idx) };
	int rc;

	inet_pton(AF_INET, opt.addr, &sin.sin_addr);
	if (t->anchor)
		rdma_destroy_id(t->anchor);
	t->anchor = NULL;
	rc = rdma_create_id(t->ch, &t->anchor, NULL, RDMA_PS_TCP);
	if (!rc)
		rc = rdma_bind_addr(t->anchor, (struct sockaddr *)&sin);
	if (!rc)
		rc = rdma_listen(t->anchor, 8 + below(&t->rng, 32));
	rec(t, OP_RELISTEN, -1, rc ? -errno : 0, 0);
}

/* ------------------------------------------------------------- fork */

/* The mmap offset of the uverbs mapping starting at @addr, or -1. */
static long long map_offset(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long long off = -1;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a;
		unsigned long long o;

		if (sscanf(line, "%lx-%*x %*s %llx", &a, &o) == 2 &&
		    a == (uintptr_t)addr && strstr(line, "uverbs")) {
			off = o;
			break;
		}
	}
	if (f)
		fclose(f);
	return off;
}

/*
 * The provider maps rings MADV_DONTFORK: in the child they are gone.
 * Map @r's ring again from the shared device fd (same offset, so the
 * same kernel ring as the parent's); false if that fails.
 */
static bool child_remap(struct fzt *t, struct fz_ring *r, long long off)
{
	uint8_t *m;

	if (off < 0)
		return false;
	m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 t->ctx->cmd_fd, off);
	if (m == MAP_FAILED)
		return false;
	r->slots = m + (r->slots - (uint8_t *)r->map);
	r->ctl = r->slots - KIWI_RING_CTL_SIZE;
	r->map = m;
	return true;
}

static void child_mess(struct fzt *t, long long sq_off, struct ibv_qp *qp)
{
	struct fz_ring sq, rq;
	int i;

	alarm(10);
	switch (below(&t->rng, 5)) {
	case 0:
		_exit(0);
	case 1: /* scribble the parent's SQ ring, mapped again here */
		if (!qp || fz_qp_rings(qp, &sq, &rq) ||
		    !child_remap(t, &sq, sq_off))
			_exit(0);
		for (i = 0; i < 50; i++) {
			junk(t, &sq);
			doorbell(qp);
		}
		_exit(0);
	case 2: /* close the device fd, then ring */
		close(t->ctx->cmd_fd);
		if (qp)
			doorbell(qp);
		_exit(0);
	case 3: /* map the parent's SQ ring, unmap it, ring, exit */
		if (qp && !fz_qp_rings(qp, &sq, &rq) &&
		    child_remap(t, &sq, sq_off))
			munmap(sq.map, sq.map_len);
		if (qp)
			doorbell(qp);
		_exit(0);
	default: { /* a fresh context, objects, then exit or be killed */
		struct ibv_context *ctx = ibv_open_device(t->ctx->device);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) :
					  NULL;
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq,
					      .qp_type = IBV_QPT_RC,
					      .cap = { 16, 16, 1, 1, 0 } };
		struct ibv_qp *q = pd && cq ? ibv_create_qp(pd, &a) : NULL;

		if (pd)
			ibv_reg_mr(pd, t->pool, 65536, IBV_ACCESS_LOCAL_WRITE);
		if (q && !fz_qp_rings(q, &sq, &rq)) {
			for (i = 0; i < 20; i++)
				junk(t, chance(&t->rng, 2) ? &sq : &rq);
			doorbell(q);
		}
		if (chance(&t->rng, 2))
			kill(getpid(), SIGKILL);
		if (ctx && chance(&t->rng, 2))
			close(ctx->cmd_fd);
		_exit(0);
	}
	}
}

static void op_fork(struct fzt *t)
{
	pid_t pid;
	int st = 0, i;
	uint64_t seed = rnd(&t->rng);
	struct ibv_qp *qp = t->qp[below(&t->rng, NQP)];
	struct conn *c = up_conn(t);
	struct fz_ring sq, rq;
	long long sq_off = -1;

	if (c && chance(&t->rng, 2))
		qp = c->id->qp;
	if (qp && !fz_qp_rings(qp, &sq, &rq))
		sq_off = map_offset(sq.map);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		t->rng.s = seed | 1;
		child_mess(t, sq_off, qp);
		_exit(0);
	}
	rec(t, OP_FORK, -1, pid < 0 ? -errno : 0, pid);
	t->forked = true;
	if (pid < 0)
		return;
	for (i = 0; i < 200; i++) {	/* 20 s, then SIGKILL */
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (i == 150)
			kill(pid, SIGKILL);
		usleep(100000);
	}
	if (i == 200) {
		pthread_mutex_lock(&out_lock);
		printf("fuzz_verbs: child %d not reaped 5 s after SIGKILL (stuck in the kernel?)\n",
		       pid);
		fflush(stdout);
		pthread_mutex_unlock(&out_lock);
	}
	rec(t, OP_CHILD, -1, i == 200 ? -ETIMEDOUT : st, pid);
}

/* -------------------------------------------------- the verbs thread */

static void verbs_step(struct fzt *t)
{
	unsigned int w = below(&t->rng, 100);

	if (w < 6)
		op_pd(t);
	else if (w < 16)
		op_mr(t);
	else if (w < 21)
		op_mw(t);
	else if (w < 29)
		op_cq(t);
	else if (w < 34)
		op_srq(t);
	else if (w < 42)
		op_qp(t);
	else if (w < 54)
		op_ring(t);
	else if (w < 82)
		op_traffic(t);
	else if (w < 85)
		op_conn_end(t);
	else if (w < 93)
		(opt.server ? (void)0 : op_connect(t));
	else if (w < 94)
		op_fork(t);
	else if (w < 95 && opt.server && chance(&t->rng, 10))
		op_relisten(t);
	cm_pump(t, chance(&t->rng, 4) ? 20 : 0);
}

static void verbs_cleanup(struct fzt *t)
{
	int i;

	for (i = 0; i < NCONN; i++)
		if (t->conn[i].state != C_FREE)
			conn_free(t, &t->conn[i]);
	for (i = 0; i < NQP; i++)
		if (t->qp[i] && !ibv_destroy_qp(t->qp[i]))
			t->qp[i] = NULL;
	for (i = 0; i < NMW; i++)
		if (t->mw[i] && !ibv_dealloc_mw(t->mw[i]))
			t->mw[i] = NULL;
	for (i = 0; i < NMR; i++)
		if (t->mr[i].mr && !ibv_dereg_mr(t->mr[i].mr))
			t->mr[i].mr = NULL;
	for (i = 0; i < NSRQ; i++)
		if (t->srq[i] && !ibv_destroy_srq(t->srq[i]))
			t->srq[i] = NULL;
	for (i = 0; i < NCQ; i++)
		if (t->cq[i] && !ibv_destroy_cq(t->cq[i]))
			t->cq[i] = NULL;
	for (i = 0; i < NPD; i++)
		if (t->pd[i] && !ibv_dealloc_pd(t->pd[i]))
			t->pd[i] = NULL;
}

static int verbs_setup(struct fzt *t)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char path[] = "/tmp/fuzz_verbs.XXXXXX";
	int fd;

	t->ch = rdma_create_event_channel();
	if (!t->ch || rdma_create_id(t->ch, &t->anchor, NULL, RDMA_PS_TCP))
		return -1;
	fcntl(t->ch->fd, F_SETFL, fcntl(t->ch->fd, F_GETFL) | O_NONBLOCK);
	if (opt.server) {
		sin.sin_port = htons(opt.port + t->idx);
		inet_pton(AF_INET, opt.addr, &sin.sin_addr);
	} else {
		inet_pton(AF_INET, opt.local, &sin.sin_addr);
	}
	if (rdma_bind_addr(t->anchor, (struct sockaddr *)&sin) ||
	    (opt.server && rdma_listen(t->anchor, 32)) || !t->anchor->verbs) {
		perror("fuzz_verbs: bind/listen");
		return -1;
	}
	t->ctx = t->anchor->verbs;
	t->pool = mmap(NULL, POOL_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, FILE_LEN) || t->pool == MAP_FAILED)
		return -1;
	unlink(path);
	t->fmap = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	/* Read-only: a file we may read but not write, shared. */
	fd = open("/proc/self/exe", O_RDONLY);
	if (fd >= 0) {
		void *m = mmap(NULL, FILE_LEN, PROT_READ, MAP_SHARED, fd, 0);

		t->romap = m == MAP_FAILED ? NULL : m;
		close(fd);
	}
	return t->fmap == MAP_FAILED ? -1 : 0;
}

/* --------------------------------------------- the hostile MPA peer */

static struct kiwi_crc_tab crc_tab;

struct hpeer {
	int fd;
	struct fz_info info;
	bool have_info;
	uint32_t msn[KIWI_QN_COUNT];
};

/* Send all of @len within ~2 s (the victim may stop reading). */
static int h_send(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	double end = now() + 2;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (now() > end)
			return -ETIMEDOUT;
		poll(&pf, 1, 100);
	}
	return 0;
}

static int h_recv(int fd, void *buf, size_t len, int ms)
{
	uint8_t *p = buf;
	double end = now() + ms / 1e3;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, 100) == 1) {
			n = recv(fd, p, len, MSG_DONTWAIT);
			if (n == 0)
				return -EPIPE;
			if (n < 0 && errno != EAGAIN)
				return -errno;
			if (n > 0) {
				p += n;
				len -= n;
			}
		}
		if (len && now() > end)
			return -ETIMEDOUT;
	}
	return 0;
}

/* One FPDU (header @hdr, @len payload bytes) with pad and CRC, in @out. */
static size_t h_fpdu(uint8_t *out, const void *hdr, uint32_t hdr_len,
		     const void *payload, uint32_t len, bool bad_crc)
{
	struct kiwi_ctrl *ctrl = (struct kiwi_ctrl *)out;
	size_t n = hdr_len + len;
	uint32_t crc;

	memcpy(out, hdr, hdr_len);
	memcpy(out + hdr_len, payload, len);
	ctrl->mpa_len = htons(n - KIWI_MPA_HDR_LEN);
	memset(out + n, 0, kiwi_mpa_pad(n));
	n += kiwi_mpa_pad(n);
	crc = ~kiwi_crc_update(&crc_tab, ~0U, out, n);
	if (bad_crc)
		crc ^= 1;
	memcpy(out + n, &crc, 4);
	return n + 4;
}

static int h_connect(struct fzt *t, struct hpeer *h, bool small_rcvbuf)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	uint8_t req[sizeof(struct kiwi_mpa_rr) + sizeof(struct kiwi_mpa_v2)];
	struct kiwi_mpa_rr rr, rep;
	struct kiwi_mpa_v2 v2;
	struct kiwi_mpa_info mi;
	uint8_t pd[KIWI_MPA_MAX_PD];
	struct pollfd pf;
	struct timeval tv = { 2, 0 };
	int rc, fd;

	memset(h, 0, sizeof(*h));
	h->fd = fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (small_rcvbuf) {
		int small = 4096;	/* so a big READ Response stalls */

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (opt.local) {
		inet_pton(AF_INET, opt.local, &src.sin_addr);
		bind(fd, (struct sockaddr *)&src, sizeof(src));
	}
	dst.sin_port = htons(opt.port + below(&t->rng, opt.threads));
	inet_pton(AF_INET, opt.addr, &dst.sin_addr);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) &&
	    errno != EINPROGRESS)
		return -errno;
	pf.fd = fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, 3000) != 1)
		return -ETIMEDOUT;
	rc = 0;
	{
		socklen_t l = sizeof(rc);

		getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &l);
		if (rc)
			return -rc;
	}
	kiwi_mpa_build(&rr, true, KIWI_MPA_REV2,
		       KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH, sizeof(v2));
	v2 = kiwi_mpa_v2_build(below(&t->rng, 130), below(&t->rng, 130),
			       false, 0);
	memcpy(req, &rr, sizeof(rr));
	memcpy(req + sizeof(rr), &v2, sizeof(v2));
	if (chance(&t->rng, 20))	/* a slow or broken request */
		req[below(&t->rng, sizeof(req))] ^= 1 << below(&t->rng, 8);
	rc = h_send(fd, req, sizeof(req));
	if (rc)
		return rc;
	rc = h_recv(fd, &rep, sizeof(rep), 5000);
	if (rc)
		return rc;
	if (ntohs(rep.pd_len) > sizeof(pd))
		return -EPROTO;
	rc = h_recv(fd, pd, ntohs(rep.pd_len), 3000);
	if (rc)
		return rc;
	if (kiwi_mpa_parse(&rep, pd, ntohs(rep.pd_len), false, &mi) ||
	    mi.reject)
		return -ECONNREFUSED;
	if (mi.ulp_pd_len >= sizeof(h->info)) {
		memcpy(&h->info, pd + mi.ulp_pd_off, sizeof(h->info));
		h->have_info = ntohl(h->info.magic) == INFO_MAGIC;
	}
	return 0;
}

static uint32_t h_stag(struct fzt *t, struct hpeer *h)
{
	if (!h->have_info || chance(&t->rng, 6))
		return rnd(&t->rng);
	return chance(&t->rng, 3) ? ntohl(h->info.mw_rkey) : ntohl(h->info.rkey);
}

static uint64_t h_to(struct fzt *t, struct hpeer *h)
{
	if (!h->have_info || chance(&t->rng, 8))
		return rnd(&t->rng);
	return be64toh(h->info.addr) + below(&t->rng, ntohl(h->info.len) + 64);
}

/* A random but well-formed-looking FPDU; returns its op for the record. */
static size_t h_build(struct fzt *t, struct hpeer *h, uint8_t *out,
		      uint64_t *arg)
{
	static const uint8_t ops[] = {
		KIWI_OP_WRITE, KIWI_OP_READ_REQ, KIWI_OP_READ_RESP,
		KIWI_OP_SEND, KIWI_OP_SEND_INV, KIWI_OP_SEND_SE,
		KIWI_OP_SEND_SE_INV, KIWI_OP_TERMINATE, KIWI_OP_ATOMIC_REQ,
		KIWI_OP_ATOMIC_RESP, KIWI_OP_IMM, KIWI_OP_IMM_SE,
	};
	static uint8_t payload[8192];
	uint8_t op = ops[below(&t->rng, sizeof(ops))];
	bool last = !chance(&t->rng, 4);
	uint32_t len = chance(&t->rng, 2) ? below(&t->rng, 64) :
					    below(&t->rng, sizeof(payload));
	uint16_t ctl = kiwi_ddp_rdmap(op, last);
	uint8_t hdr[80];
	uint32_t hl;

	memset(payload, 0xe7, len < 64 ? 64 : len);
	if (chance(&t->rng, 15))
		ctl ^= 1 << below(&t->rng, 16);	/* versions, reserved bits */
	if (op == KIWI_OP_WRITE || op == KIWI_OP_READ_RESP) {
		struct kiwi_hdr_tagged th = { 0 };

		th.ctrl.ddp_rdmap = htons(ctl);
		th.stag = htonl(h_stag(t, h));
		th.to = htobe64(h_to(t, h));
		hl = sizeof(th);
		memcpy(hdr, &th, hl);
	} else {
		struct kiwi_hdr_untagged uh = { 0 };
		uint32_t qn = KIWI_QN_SEND;

		if (op == KIWI_OP_READ_REQ)
			qn = KIWI_QN_READ_REQ;
		else if (op == KIWI_OP_TERMINATE)
			qn = KIWI_QN_TERMINATE;
		else if (op == KIWI_OP_ATOMIC_REQ)
			qn = KIWI_QN_ATOMIC_REQ;
		else if (op == KIWI_OP_ATOMIC_RESP)
			qn = KIWI_QN_ATOMIC_RESP;
		if (chance(&t->rng, 15))
			qn = below(&t->rng, 8);
		uh.ctrl.ddp_rdmap = htons(ctl);
		uh.qn = htonl(qn);
		uh.msn = htonl(qn < KIWI_QN_COUNT && !chance(&t->rng, 10) ?
			       ++h->msn[qn] : (uint32_t)rnd(&t->rng));
		uh.mo = htonl(chance(&t->rng, 5) ? below(&t->rng, 70000) : 0);
		if (op == KIWI_OP_SEND_INV || op == KIWI_OP_SEND_SE_INV)
			uh.inv_stag = htonl(h_stag(t, h));
		hl = sizeof(uh);
		memcpy(hdr, &uh, hl);
		if (op == KIWI_OP_READ_REQ) {
			struct kiwi_read_req r;

			r.sink_stag = htonl(rnd(&t->rng));
			r.sink_to = htobe64(rnd(&t->rng));
			r.size = htonl(chance(&t->rng, 3) ?
				       below(&t->rng, 8u << 20) :
				       below(&t->rng, 65536));
			r.src_stag = htonl(h_stag(t, h));
			r.src_to = htobe64(h_to(t, h));
			memcpy(payload, &r, sizeof(r));
			len = chance(&t->rng, 10) ? below(&t->rng, 40) :
						    sizeof(r);
		} else if (op == KIWI_OP_ATOMIC_REQ) {
			struct kiwi_atomic_req a = { 0 };

			a.aop = htonl(below(&t->rng, 4));
			a.req_id = htonl(rnd(&t->rng));
			a.stag = htonl(h_stag(t, h));
			a.to = htobe64(h_to(t, h) & ~7ULL);
			a.data = rnd(&t->rng);
			a.mask = ~0ULL;
			memcpy(payload, &a, sizeof(a));
			len = chance(&t->rng, 10) ? below(&t->rng, 60) :
						    sizeof(a);
		} else if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE) {
			len = chance(&t->rng, 4) ? below(&t->rng, 16) : 8;
		} else if (op == KIWI_OP_TERMINATE) {
			uint32_t w = rnd(&t->rng);

			memcpy(payload, &w, 4);
			len = below(&t->rng, 60);
		}
	}
	if (hl + len + 8 > 65535)
		len = 65535 - hl - 8;
	*arg = (uint64_t)op << 32 | len;
	return h_fpdu(out, hdr, hl, payload, len, chance(&t->rng, 40));
}

static void h_drain(int fd)
{
	static uint8_t sink[65536];

	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

static void h_close(struct fzt *t, struct hpeer *h, bool reading)
{
	int i, j = -1;

	switch (reading ? below(&t->rng, 4) : 1) {
	case 0: {
		struct linger l = { 1, 0 };

		setsockopt(h->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(h->fd);
		rec(t, OP_H_RESET, -1, 0, 0);
		break;
	}
	case 1: /* vanish: keep it open, silent, not reading, for a while */
		for (i = 0; i < NHELD; i++)
			if (t->held[i].fd <= 0)
				j = i;
		if (j >= 0) {
			t->held[j].fd = h->fd;
			t->held[j].until = now() + 2 + below(&t->rng, 20);
			rec(t, OP_H_HOLD, j, 0, 0);
			break;
		}
		/* fall through */
	default:
		close(h->fd);
		rec(t, OP_H_CLOSE, -1, 0, 0);
		break;
	}
	h->fd = -1;
	for (i = 0; i < NHELD; i++)
		if (t->held[i].fd > 0 && (now() > t->held[i].until ||
					  atomic_load(&stop))) {
			close(t->held[i].fd);
			t->held[i].fd = 0;
		}
}

static void hostile_session(struct fzt *t)
{
	static uint8_t out[70000];
	struct hpeer h;
	double end;
	bool reading = !chance(&t->rng, 3);
	/* the audit's F4: READs behind a receive buffer nobody empties */
	bool stop_reading = chance(&t->rng, 4), sent_f4 = false;
	int rc = h_connect(t, &h, stop_reading || chance(&t->rng, 2));

	rec(t, OP_H_CONNECT, -1, rc, reading);
	if (rc) {
		if (h.fd >= 0)
			close(h.fd);
		usleep(20000);
		return;
	}
	end = now() + 0.2 + below(&t->rng, 3000) / 1e3;
	if (stop_reading)
		reading = false;
	while (now() < end && !atomic_load(&stop)) {
		uint64_t arg = 0;
		size_t n;

		/* F4: one READ of the whole region, then silence */
		switch (stop_reading ? (sent_f4 ? 0 : 3) : below(&t->rng, 12)) {
		case 0: /* a stall, mid-FPDU or between */
			usleep(below(&t->rng, 1500) * 1000);
			rec(t, OP_H_STALL, -1, 0, 0);
			break;
		case 1: /* part of an FPDU, then go on with another */
			n = h_build(t, &h, out, &arg);
			rc = h_send(h.fd, out, below(&t->rng, n));
			rec(t, OP_H_PARTIAL, -1, rc, arg);
			usleep(below(&t->rng, 500) * 1000);
			break;
		case 2: { /* random bytes framed with a valid CRC */
			uint8_t junkb[256];
			uint32_t i, l = 4 + below(&t->rng, 200);

			for (i = 0; i < l; i++)
				junkb[i] = rnd(&t->rng);
			n = h_fpdu(out, junkb, 4, junkb + 4, l - 4, false);
			rc = h_send(h.fd, out, n);
			rec(t, OP_H_JUNK, -1, rc, l);
			break;
		}
		case 3: /* READ Requests for lots, then maybe stop reading */
		{
			int k;

			for (k = 0, rc = 0; k < (stop_reading ? 1 : 4) && !rc;
			     k++) {
				struct kiwi_hdr_untagged uh = { 0 };
				struct kiwi_read_req r;

				uh.ctrl.ddp_rdmap = htons(kiwi_ddp_rdmap(KIWI_OP_READ_REQ, true));
				uh.qn = htonl(KIWI_QN_READ_REQ);
				uh.msn = htonl(++h.msn[KIWI_QN_READ_REQ]);
				r.sink_stag = htonl(0x1234);
				r.sink_to = 0;
				r.size = htonl(h.have_info ?
					       ntohl(h.info.len) : 65536);
				r.src_stag = htonl(stop_reading && h.have_info ?
						   ntohl(h.info.rkey) :
						   h_stag(t, &h));
				r.src_to = h.have_info ? h.info.addr : 0;
				n = h_fpdu(out, &uh, sizeof(uh), &r, sizeof(r),
					   false);
				rc = h_send(h.fd, out, n);
			}
			/* and maybe never read again: the audit's F4 */
			if (chance(&t->rng, 2))
				reading = false;
			sent_f4 = stop_reading;
			rec(t, OP_H_READREQ, -1, rc, reading);
			break;
		}
		case 4:
			if (reading)
				h_drain(h.fd);
			rec(t, OP_H_DRAIN, -1, 0, reading);
			break;
		default:
			n = h_build(t, &h, out, &arg);
			rc = h_send(h.fd, out, n);
			rec(t, OP_H_FPDU, -1, rc, arg);
			break;
		}
		if (rc == -EPIPE || rc == -ECONNRESET || rc == -ETIMEDOUT)
			break;
		if (reading)
			h_drain(h.fd);
	}
	h_close(t, &h, reading);
}

/* --------------------------------------------------------- threads */

static void *thread_main(void *arg)
{
	struct fzt *t = arg;

	if (t->hostile) {
		while (now() < t_end && !atomic_load(&stop))
			hostile_session(t);
		for (int i = 0; i < NHELD; i++)
			if (t->held[i].fd > 0)
				close(t->held[i].fd);
		return NULL;
	}
	while (now() < t_end && !atomic_load(&stop)) {
		double t0 = now(), dt;
		uint32_t seq0 = t->seq;

		verbs_step(t);
		atomic_store(&t->cur_op, t->hist[(t->seq - 1) % HIST].op);
		dt = now() - t0;
		if (dt > opt.slow && !t->forked) {
			pthread_mutex_lock(&out_lock);
			printf("fuzz_verbs: SLOW: thread %d took %.1f s for ops #%u..#%u (last %s); the bound is %d s\n",
			       t->idx, dt, seq0, t->seq - 1,
			       op_name[t->hist[(t->seq - 1) % HIST].op],
			       opt.slow);
			fflush(stdout);
			pthread_mutex_unlock(&out_lock);
			dump_all("slow operation", HIST);
		}
		t->forked = false;
	}
	atomic_store(&t->cur_op, OP_CONN_FREE);
	{
		double t0 = now();

		verbs_cleanup(t);
		if (now() - t0 > opt.slow) {
			pthread_mutex_lock(&out_lock);
			printf("fuzz_verbs: SLOW: thread %d took %.1f s to tear down its objects; the bound is %d s\n",
			       t->idx, now() - t0, opt.slow);
			fflush(stdout);
			pthread_mutex_unlock(&out_lock);
		}
	}
	atomic_store(&t->cur_op, OP_NONE);
	return NULL;
}

static int drop_privileges(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (opt.uid < 0)
		return 0;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setgid(opt.uid) || setuid(opt.uid)) {
		perror("fuzz_verbs: dropping privileges");
		return -1;
	}
	if (setuid(0) == 0) {
		fprintf(stderr, "fuzz_verbs: still root after setuid\n");
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_verbs -r server|client -a ADDR [-l LOCAL] [-p PORT] [-s SEED]\n"
		"                  [-t SECS] [-n THREADS] [-H HOSTILE] [-u UID] [-k N] [-b SECS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	pthread_t kw, wd;
	int c, i, nv;

	opt.seed = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
	while ((c = getopt(argc, argv, "r:a:l:p:s:t:n:H:u:k:b:")) != -1) {
		switch (c) {
		case 'r':
			opt.server = !strcmp(optarg, "server");
			if (!opt.server && strcmp(optarg, "client"))
				usage();
			break;
		case 'a': opt.addr = optarg; break;
		case 'l': opt.local = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 's': opt.seed = strtoul(optarg, NULL, 0); break;
		case 't': opt.secs = atoi(optarg); break;
		case 'n': opt.threads = atoi(optarg); break;
		case 'H': opt.hostile = atoi(optarg); break;
		case 'u': opt.uid = atoi(optarg); break;
		case 'k': opt.show = atoi(optarg); break;
		case 'b': opt.slow = atoi(optarg); break;
		default: usage();
		}
	}
	if (!opt.addr || (!opt.server && !opt.local) || opt.threads < 1 ||
	    opt.threads > MAX_THREADS || opt.hostile < 0 ||
	    opt.hostile > MAX_THREADS)
		usage();
	if (opt.server)
		opt.hostile = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	printf("# fuzz_verbs seed %lu role %s threads %d hostile %d secs %d (replay: -s %lu)\n",
	       opt.seed, opt.server ? "server" : "client", opt.threads,
	       opt.hostile, opt.secs, opt.seed);
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	if (drop_privileges())
		return 2;
	kiwi_crc_tab_init(&crc_tab);
	nv = opt.threads;
	nT = nv + opt.hostile;
	T = calloc(nT, sizeof(*T));
	if (!T)
		return 2;
	for (i = 0; i < nT; i++) {
		T[i].idx = i;
		T[i].hostile = i >= nv;
		T[i].rng.s = (opt.seed + i) * 0x9e3779b97f4a7c15ULL | 1;
		if (!T[i].hostile && verbs_setup(&T[i])) {
			fprintf(stderr, "fuzz_verbs: set-up of thread %d failed\n",
				i);
			return 2;
		}
	}
	t_end = now() + opt.secs;
	if (kmsg_fd >= 0)
		pthread_create(&kw, NULL, kmsg_watch, NULL);
	pthread_create(&wd, NULL, watchdog, NULL);
	for (i = 0; i < nT; i++)
		pthread_create(&T[i].th, NULL, thread_main, &T[i]);
	for (i = 0; i < nT; i++)
		pthread_join(T[i].th, NULL);
	atomic_store(&stop, 1);
	if (kmsg_fd >= 0)
		pthread_join(kw, NULL);
	dump_all("end of run", opt.show);
	for (i = 0; i < nT; i++)
		stats(&T[i]);
	for (i = 0; i < nv; i++) {
		if (T[i].anchor)
			rdma_destroy_id(T[i].anchor);
		rdma_destroy_event_channel(T[i].ch);
	}
	printf("fuzz_verbs: done, seed %lu\n", opt.seed);
	return 0;
}
