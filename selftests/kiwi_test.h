/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi_test.h -- a small kselftest-style TAP harness for kiwi's selftests.
 *
 * Usage:
 *
 *	#include "kiwi_test.h"
 *
 *	TEST(alloc_pd)
 *	{
 *		struct ibv_pd *pd = ibv_alloc_pd(ctx);
 *		ASSERT_NONNULL(pd);
 *		EXPECT_EQ(ibv_dealloc_pd(pd), 0);
 *	}
 *
 *	KT_MAIN()
 *
 * Every TEST() runs in its own forked child process, so a crash, an
 * abort() or a hang (per-test timeout, default 60 s, TEST_TIMEOUT(name, s)
 * or env KT_TIMEOUT overrides) is reported as a failure of that test only,
 * and every resource the test opened is released by process exit.
 *
 * Output is TAP version 13:
 *
 *	TAP version 13
 *	1..3
 *	# alloc_pd: ...diagnostics...
 *	ok 1 alloc_pd
 *	not ok 2 reg_mr_len0
 *	ok 3 srq_create # SKIP device has no SRQ support
 *	# Totals: pass:1 fail:1 skip:1
 *
 * The process exits 0 when no test failed, 1 otherwise.
 *
 * Assertions: ASSERT_* stops the test on failure, EXPECT_* records the
 * failure and continues.  Both print "file:line: expression" and the
 * values involved.  Integer comparisons are exact across signedness
 * (an unsigned 2^64-1 is never "equal" to a signed -1).
 *
 * Command line: -l lists test names, -t NAME runs only NAME (repeatable),
 * -h prints help.
 */
#ifndef KIWI_TEST_H
#define KIWI_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KT_MAX_TESTS	256
#define KT_REASON_LEN	256

/* Child exit codes. */
#define KT_EXIT_PASS	0
#define KT_EXIT_FAIL	1
#define KT_EXIT_SKIP	4

struct kt_test {
	const char *name;
	void (*fn)(void);
	unsigned int timeout;	/* seconds, 0 = default */
	const char *file;
	int line;
};

/* State shared between the parent and the forked test child. */
struct kt_shared {
	int failed;			/* an EXPECT/ASSERT failed */
	int skipped;			/* SKIP() was called */
	char reason[KT_REASON_LEN];	/* skip reason */
};

/*
 * Everything below is static so that each test program that includes this
 * header (exactly one .c file per program) gets its own registry.
 */
static struct kt_test kt_tests[KT_MAX_TESTS];
static int kt_ntests;
static struct kt_shared *kt_shared;
static const char *kt_current;

static inline void kt_register(const char *name, void (*fn)(void),
			       unsigned int timeout, const char *file, int line)
{
	if (kt_ntests >= KT_MAX_TESTS) {
		fprintf(stderr, "kiwi_test: too many tests (max %d)\n",
			KT_MAX_TESTS);
		abort();
	}
	kt_tests[kt_ntests++] = (struct kt_test){ name, fn, timeout, file, line };
}

#define TEST_TIMEOUT(test_name, seconds)				\
	static void kt_fn_##test_name(void);				\
	__attribute__((constructor)) static void kt_reg_##test_name(void) \
	{								\
		kt_register(#test_name, kt_fn_##test_name, (seconds),	\
			    __FILE__, __LINE__);			\
	}								\
	static void kt_fn_##test_name(void)

#define TEST(test_name) TEST_TIMEOUT(test_name, 0)

/* Diagnostics: printed as TAP comment lines, prefixed by the test name. */
__attribute__((format(printf, 1, 2)))
static inline void kt_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	char *line, *save = NULL;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		printf("# %s: %s\n", kt_current ? kt_current : "-", line);
	fflush(stdout);
}

#define TH_LOG(...) kt_log(__VA_ARGS__)

/* Terminate the current test (child process). */
__attribute__((noreturn))
static inline void kt_end(int code)
{
	fflush(stdout);
	fflush(stderr);
	_exit(code);
}

__attribute__((format(printf, 3, 4)))
static inline void kt_fail_at(const char *file, int line, const char *fmt, ...)
{
	char buf[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kt_shared->failed = 1;
	kt_log("%s:%d: %s", file, line, buf);
}

/*
 * SKIP(fmt, ...): mark the current test skipped with a reason and end it.
 * Use only for genuinely optional features; a missing prerequisite of a
 * mandatory feature is a failure.
 */
#define SKIP(...)							\
	do {								\
		snprintf(kt_shared->reason, KT_REASON_LEN, __VA_ARGS__); \
		kt_shared->skipped = 1;					\
		kt_end(kt_shared->failed ? KT_EXIT_FAIL : KT_EXIT_SKIP); \
	} while (0)

/* FAIL(fmt, ...): fail and end the test.  EXPECT_FAIL: fail, continue. */
#define EXPECT_FAIL(...) kt_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define FAIL(...)							\
	do {								\
		kt_fail_at(__FILE__, __LINE__, __VA_ARGS__);		\
		kt_end(KT_EXIT_FAIL);					\
	} while (0)

/* ---- integer comparisons, exact across signedness ---- */

#define KT_IS_SIGNED(x) _Generic((x),					\
	char: 1, signed char: 1, short: 1, int: 1, long: 1, long long: 1, \
	default: 0)

/* Returns <0, 0, >0 like a three-way comparison of the true values. */
static inline int kt_cmp(int as, uintmax_t a, int bs, uintmax_t b)
{
	intmax_t sa = (intmax_t)a, sb = (intmax_t)b;

	if (as && sa < 0) {
		if (bs && sb < 0)
			return (sa > sb) - (sa < sb);
		return -1;
	}
	if (bs && sb < 0)
		return 1;
	return (a > b) - (a < b);
}

static inline const char *kt_fmt(char *buf, size_t len, int is_signed,
				 uintmax_t v)
{
	if (is_signed)
		snprintf(buf, len, "%jd", (intmax_t)v);
	else if (v > 9)
		snprintf(buf, len, "%ju (0x%jx)", v, v);
	else
		snprintf(buf, len, "%ju", v);
	return buf;
}

enum kt_op { KT_EQ, KT_NE, KT_LT, KT_LE, KT_GT, KT_GE };

static inline bool kt_check_cmp(enum kt_op op, int as, uintmax_t a, int bs,
				uintmax_t b, const char *ea, const char *eb,
				const char *file, int line)
{
	static const char *const opstr[] = { "==", "!=", "<", "<=", ">", ">=" };
	int c = kt_cmp(as, a, bs, b);
	bool ok;
	char ba[64], bb[64];

	switch (op) {
	case KT_EQ: ok = c == 0; break;
	case KT_NE: ok = c != 0; break;
	case KT_LT: ok = c < 0; break;
	case KT_LE: ok = c <= 0; break;
	case KT_GT: ok = c > 0; break;
	default:    ok = c >= 0; break;
	}
	if (!ok)
		kt_fail_at(file, line, "expected %s %s %s, got %s vs %s",
			   ea, opstr[op], eb, kt_fmt(ba, sizeof(ba), as, a),
			   kt_fmt(bb, sizeof(bb), bs, b));
	return ok;
}

#define KT_CMP(op, a, b, fatal)						\
	do {								\
		__typeof__(a) kt_a_ = (a);				\
		__typeof__(b) kt_b_ = (b);				\
		if (!kt_check_cmp(op, KT_IS_SIGNED(kt_a_),		\
				  (uintmax_t)kt_a_, KT_IS_SIGNED(kt_b_), \
				  (uintmax_t)kt_b_, #a, #b,		\
				  __FILE__, __LINE__) && (fatal))	\
			kt_end(KT_EXIT_FAIL);				\
	} while (0)

#define ASSERT_EQ(a, b) KT_CMP(KT_EQ, a, b, 1)
#define ASSERT_NE(a, b) KT_CMP(KT_NE, a, b, 1)
#define ASSERT_LT(a, b) KT_CMP(KT_LT, a, b, 1)
#define ASSERT_LE(a, b) KT_CMP(KT_LE, a, b, 1)
#define ASSERT_GT(a, b) KT_CMP(KT_GT, a, b, 1)
#define ASSERT_GE(a, b) KT_CMP(KT_GE, a, b, 1)
#define EXPECT_EQ(a, b) KT_CMP(KT_EQ, a, b, 0)
#define EXPECT_NE(a, b) KT_CMP(KT_NE, a, b, 0)
#define EXPECT_LT(a, b) KT_CMP(KT_LT, a, b, 0)
#define EXPECT_LE(a, b) KT_CMP(KT_LE, a, b, 0)
#define EXPECT_GT(a, b) KT_CMP(KT_GT, a, b, 0)
#define EXPECT_GE(a, b) KT_CMP(KT_GE, a, b, 0)

/* ---- boolean / pointer / string / errno checks ---- */

#define KT_BOOL(cond, want, fatal)					\
	do {								\
		if ((!!(cond)) != (want)) {				\
			kt_fail_at(__FILE__, __LINE__, "expected (%s) to be %s", \
				   #cond, (want) ? "true" : "false");	\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		}							\
	} while (0)

#define ASSERT_TRUE(c)  KT_BOOL(c, 1, 1)
#define ASSERT_FALSE(c) KT_BOOL(c, 0, 1)
#define EXPECT_TRUE(c)  KT_BOOL(c, 1, 0)
#define EXPECT_FALSE(c) KT_BOOL(c, 0, 0)

#define KT_PTR(p, want_null, fatal)					\
	do {								\
		const void *kt_p_ = (const void *)(p);			\
		if ((kt_p_ == NULL) != (want_null)) {			\
			int kt_e_ = errno;				\
			kt_fail_at(__FILE__, __LINE__,			\
				   "expected %s to be %s, got %p (errno %d %s)", \
				   #p, (want_null) ? "NULL" : "non-NULL", \
				   kt_p_, kt_e_, strerrorname_np(kt_e_) ? \
				   strerrorname_np(kt_e_) : "?");	\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		}							\
	} while (0)

#define ASSERT_NULL(p)    KT_PTR(p, 1, 1)
#define ASSERT_NONNULL(p) KT_PTR(p, 0, 1)
#define EXPECT_NULL(p)    KT_PTR(p, 1, 0)
#define EXPECT_NONNULL(p) KT_PTR(p, 0, 0)

#define KT_STR(a, b, want_eq, fatal)					\
	do {								\
		const char *kt_sa_ = (a), *kt_sb_ = (b);		\
		if ((!kt_sa_ || !kt_sb_ || strcmp(kt_sa_, kt_sb_)) == (want_eq)) { \
			kt_fail_at(__FILE__, __LINE__,			\
				   "expected %s %s %s, got \"%s\" vs \"%s\"", \
				   #a, (want_eq) ? "==" : "!=", #b,	\
				   kt_sa_ ? kt_sa_ : "(null)",		\
				   kt_sb_ ? kt_sb_ : "(null)");		\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		}							\
	} while (0)

#define ASSERT_STREQ(a, b) KT_STR(a, b, 1, 1)
#define ASSERT_STRNE(a, b) KT_STR(a, b, 0, 1)
#define EXPECT_STREQ(a, b) KT_STR(a, b, 1, 0)
#define EXPECT_STRNE(a, b) KT_STR(a, b, 0, 0)

static inline const char *kt_errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "?";
}

/*
 * ASSERT_ERRNO(e, want): an errno-style value (errno, or the positive
 * return of ibv_destroy_*()) equals want; prints symbolic names.
 */
#define KT_ERRNO(e, want, fatal)					\
	do {								\
		int kt_e_ = (e), kt_w_ = (want);			\
		if (kt_e_ != kt_w_) {					\
			kt_fail_at(__FILE__, __LINE__,			\
				   "expected %s == %s, got %d (%s) instead of %d (%s)", \
				   #e, #want, kt_e_, kt_errname(kt_e_), kt_w_, \
				   kt_errname(kt_w_));			\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		}							\
	} while (0)

#define ASSERT_ERRNO(e, want) KT_ERRNO(e, want, 1)
#define EXPECT_ERRNO(e, want) KT_ERRNO(e, want, 0)

/*
 * ASSERT_FAILS_WITH(ptr_expr, want_errno): a constructor that returns a
 * pointer (ibv_reg_mr(), ibv_create_qp(), ...) returns NULL and sets errno
 * to want.  If it unexpectedly succeeds the object is leaked on purpose:
 * the test process exits right after and the kernel reclaims it.
 */
#define KT_FAILS_WITH(expr, want, fatal)				\
	do {								\
		errno = 0;						\
		const void *kt_r_ = (const void *)(expr);		\
		int kt_e_ = errno, kt_w_ = (want);			\
		if (kt_r_) {						\
			kt_fail_at(__FILE__, __LINE__,			\
				   "expected %s to fail with %s, but it succeeded", \
				   #expr, kt_errname(kt_w_));		\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		} else if (kt_e_ != kt_w_) {				\
			kt_fail_at(__FILE__, __LINE__,			\
				   "expected %s to fail with %s, got errno %d (%s)", \
				   #expr, kt_errname(kt_w_), kt_e_,	\
				   kt_errname(kt_e_));			\
			if (fatal)					\
				kt_end(KT_EXIT_FAIL);			\
		}							\
	} while (0)

#define ASSERT_FAILS_WITH(expr, want) KT_FAILS_WITH(expr, want, 1)
#define EXPECT_FAILS_WITH(expr, want) KT_FAILS_WITH(expr, want, 0)

/* ---- runner ---- */

static inline unsigned int kt_default_timeout(void)
{
	const char *s = getenv("KT_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return v > 0 ? (unsigned int)v : 60;
}

/* Runs one test in a child; returns KT_EXIT_* and fills *why. */
static inline int kt_run_one(const struct kt_test *t, char *why, size_t wlen)
{
	unsigned int timeout = t->timeout ? t->timeout : kt_default_timeout();
	struct timespec start, now;
	int status, code;
	pid_t pid, w;

	memset(kt_shared, 0, sizeof(*kt_shared));
	why[0] = '\0';
	fflush(stdout);
	fflush(stderr);
	clock_gettime(CLOCK_MONOTONIC, &start);
	pid = fork();
	if (pid < 0) {
		snprintf(why, wlen, "fork: %s", strerror(errno));
		return KT_EXIT_FAIL;
	}
	if (pid == 0) {
		kt_current = t->name;
		/* Own process group so a hung test's helpers die with it. */
		setpgid(0, 0);
		signal(SIGALRM, SIG_DFL);
		alarm(timeout);
		t->fn();
		kt_end(kt_shared->failed ? KT_EXIT_FAIL : KT_EXIT_PASS);
	}
	do {
		w = waitpid(pid, &status, 0);
	} while (w < 0 && errno == EINTR);
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Reap anything the test left running in its process group. */
	kill(-pid, SIGKILL);

	if (w < 0) {
		snprintf(why, wlen, "waitpid: %s", strerror(errno));
		return KT_EXIT_FAIL;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == SIGALRM)
			snprintf(why, wlen, "timed out after %u s", timeout);
		else
			snprintf(why, wlen, "killed by signal %d (%s)", sig,
				 strsignal(sig));
		return KT_EXIT_FAIL;
	}
	code = WEXITSTATUS(status);
	if (code == KT_EXIT_SKIP && kt_shared->skipped) {
		snprintf(why, wlen, "%s", kt_shared->reason);
		return KT_EXIT_SKIP;
	}
	if (code == KT_EXIT_PASS && !kt_shared->failed)
		return KT_EXIT_PASS;
	if (code != KT_EXIT_FAIL)
		snprintf(why, wlen, "unexpected exit status %d", code);
	(void)now;
	return KT_EXIT_FAIL;
}

static inline int kt_main(int argc, char **argv)
{
	const char *only[KT_MAX_TESTS];
	int nonly = 0, pass = 0, fail = 0, skip = 0, n = 0, i, j, opt;
	bool selected[KT_MAX_TESTS];

	while ((opt = getopt(argc, argv, "lt:h")) != -1) {
		switch (opt) {
		case 'l':
			for (i = 0; i < kt_ntests; i++)
				printf("%s\n", kt_tests[i].name);
			return 0;
		case 't':
			if (nonly < KT_MAX_TESTS)
				only[nonly++] = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-l] [-t TEST]...\n"
				"  -l       list tests\n"
				"  -t TEST  run only TEST (repeatable)\n"
				"env: KT_TIMEOUT=seconds per test (default 60)\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	for (i = 0; i < kt_ntests; i++) {
		selected[i] = nonly == 0;
		for (j = 0; j < nonly; j++)
			if (!strcmp(only[j], kt_tests[i].name))
				selected[i] = true;
		n += selected[i];
	}
	for (j = 0; j < nonly; j++) {
		for (i = 0; i < kt_ntests; i++)
			if (!strcmp(only[j], kt_tests[i].name))
				break;
		if (i == kt_ntests) {
			fprintf(stderr, "%s: no such test: %s\n", argv[0], only[j]);
			return 2;
		}
	}

	kt_shared = mmap(NULL, sizeof(*kt_shared), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (kt_shared == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..%d\n", n);
	for (i = 0, j = 0; i < kt_ntests; i++) {
		char why[KT_REASON_LEN + 32];
		int r;

		if (!selected[i])
			continue;
		j++;
		printf("# RUN %s\n", kt_tests[i].name);
		fflush(stdout);
		r = kt_run_one(&kt_tests[i], why, sizeof(why));
		if (r == KT_EXIT_PASS) {
			pass++;
			printf("ok %d %s\n", j, kt_tests[i].name);
		} else if (r == KT_EXIT_SKIP) {
			skip++;
			printf("ok %d %s # SKIP %s\n", j, kt_tests[i].name, why);
		} else {
			fail++;
			if (why[0])
				printf("# %s: %s\n", kt_tests[i].name, why);
			printf("not ok %d %s\n", j, kt_tests[i].name);
		}
		fflush(stdout);
	}
	printf("# Totals: pass:%d fail:%d skip:%d\n", pass, fail, skip);
	fflush(stdout);
	return fail ? 1 : 0;
}

#define KT_MAIN()						\
	int main(int argc, char **argv)				\
	{							\
		return kt_main(argc, argv);			\
	}

#endif /* KIWI_TEST_H */
