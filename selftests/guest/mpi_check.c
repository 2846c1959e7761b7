// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * mpi_check.c -- a small MPI program whose every result is checked, for
 * selftests/guest/mpi.sh (compiled there with mpicc).  Any number of
 * ranks; mpi.sh runs two, one per network namespace.
 *
 *   ring       a token passed around the ring 100 times, each rank
 *              adding its rank + 1: the final value is known
 *   pingpong   messages of 1 B .. 4 MiB sent to the next rank and back
 *              (eager and rendezvous protocols), every byte a function
 *              of (size, iteration, sender) and checked on arrival
 *   allreduce  MPI_Allreduce of 64 Ki longs (sum and max) against the
 *              closed form
 *   bcast      8 MiB broadcast from the last rank, checked everywhere
 *
 * Prints one line per check on rank 0 ("ok NAME ..." or "FAIL NAME
 * ...") and exits non-zero on any failure.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks, failures;

static void report(const char *name, int bad, const char *what)
{
	int any;

	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s %s %s\n", any ? "FAIL" : "ok", name, what);
	if (any)
		failures++;
}

static unsigned char pattern(size_t i, size_t size, int iter, int from)
{
	return (unsigned char)(i * 131 + size * 7 + iter * 17 + from * 29 + 1);
}

static int check_ring(void)
{
	long token = 0, want = 0;
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	int lap, r;

	for (r = 0; r < nranks; r++)
		want += r + 1;
	want *= 100;
	for (lap = 0; lap < 100; lap++) {
		if (rank == 0) {
			token += 1;
			MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			token += rank + 1;
			MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD);
		}
	}
	MPI_Bcast(&token, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	return token != want;
}

static int check_pingpong(void)
{
	size_t size, i, max = 4 << 20;
	unsigned char *buf = malloc(max);
	int iter, peer, bad = 0, count;
	MPI_Status st;

	if (!buf)
		return 1;
	/* Pairs: even ranks send first to rank + 1. */
	peer = rank ^ 1;
	if (peer >= nranks)
		return 0;
	for (size = 1; size <= max; size *= 4) {
		for (iter = 0; iter < 5; iter++) {
			int first = !(rank & 1);

			if (first) {
				for (i = 0; i < size; i++)
					buf[i] = pattern(i, size, iter, rank);
				MPI_Send(buf, (int)size, MPI_BYTE, peer, 2,
					 MPI_COMM_WORLD);
			}
			memset(buf, 0, size);
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, 2,
				 MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			if ((size_t)count != size)
				bad = 1;
			for (i = 0; i < size; i++)
				if (buf[i] != pattern(i, size, iter, peer)) {
					bad = 1;
					break;
				}
			if (!first) {
				for (i = 0; i < size; i++)
					buf[i] = pattern(i, size, iter, rank);
				MPI_Send(buf, (int)size, MPI_BYTE, peer, 2,
					 MPI_COMM_WORLD);
			}
		}
	}
	free(buf);
	return bad;
}

static int check_allreduce(void)
{
	const int n = 64 * 1024;
	long *in = malloc(n * sizeof(long)), *sum = malloc(n * sizeof(long));
	long *max = malloc(n * sizeof(long));
	int i, bad = 0;

	if (!in || !sum || !max)
		return 1;
	for (i = 0; i < n; i++)
		in[i] = (long)i * (rank + 1);
	MPI_Allreduce(in, sum, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(in, max, n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		/* sum over r of i * (r + 1) = i * n(n+1)/2 */
		if (sum[i] != (long)i * nranks * (nranks + 1) / 2 ||
		    max[i] != (long)i * nranks)
			bad = 1;
	}
	free(in);
	free(sum);
	free(max);
	return bad;
}

static int check_bcast(void)
{
	size_t i, size = 8 << 20;
	unsigned char *buf = malloc(size);
	int root = nranks - 1, bad = 0;

	if (!buf)
		return 1;
	for (i = 0; i < size; i++)
		buf[i] = rank == root ? pattern(i, size, 3, root) : 0;
	MPI_Bcast(buf, (int)size, MPI_BYTE, root, MPI_COMM_WORLD);
	for (i = 0; i < size; i++)
		if (buf[i] != pattern(i, size, 3, root)) {
			bad = 1;
			break;
		}
	free(buf);
	return bad;
}

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME];
	int len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Get_processor_name(host, &len);
	printf("rank %d of %d on %s\n", rank, nranks, host);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);

	report("ring", check_ring(), "100 laps, token sum checked");
	report("pingpong", check_pingpong(),
	       "1 B..4 MiB x 5 each way, every byte checked");
	report("allreduce", check_allreduce(), "64 Ki longs, SUM and MAX");
	report("bcast", check_bcast(), "8 MiB from the last rank");
	MPI_Finalize();
	if (rank == 0)
		printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
