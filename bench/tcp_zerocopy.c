// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_zerocopy -- what a zero-copy transmit can save on the bench's path.
 *
 * Issue 19 asks for zero-copy transmit, kept only if it wins.  The bench
 * runs both ends in one guest, over a veth pair between two network
 * namespaces.  This tool measures, over that same path and with plain
 * TCP, the three ways a sender can hand bytes to the kernel:
 *
 *   copy      send(): TCP copies the buffer into its own pages;
 *   zerocopy  send(MSG_ZEROCOPY): TCP takes the user pages by reference
 *             and says when it is done with them on the error queue --
 *             the completion a zero-copy RNIC needs before it may
 *             complete a work request (it reports whether the kernel had
 *             to copy after all: SO_EE_CODE_ZEROCOPY_COPIED);
 *   sendfile  sendfile() from a memfd: pages by reference with no
 *             completion at all (what iperf3 -Z does, and what siw's
 *             zcopy_tx does with a work request's pages).
 *
 * The receiver reads with recv() into one buffer.  Each sender prints one
 * line of key=value pairs; the guest script (zcopy-guest.sh) adds CPU time
 * from /proc/stat.
 *
 *   tcp_zerocopy recv PORT
 *   tcp_zerocopy send ADDR PORT copy|zerocopy|sendfile SECONDS MSG_BYTES
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

/* Buffers in flight for zerocopy: none is reused before TCP is done. */
#define POOL 64

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int do_recv(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	static char buf[1 << 18];
	unsigned long long total = 0;
	int one = 1, ls, s;
	ssize_t n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
		die("bind/listen");
	s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept");
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0)
		total += n;
	if (n < 0)
		die("recv");
	printf("received=%llu\n", total);
	return 0;
}

struct zc {
	uint32_t sent;		/* zerocopy sends issued */
	uint32_t done;		/* of them, reported done */
	uint32_t copied;	/* of them, reported copied */
};

/* Reap completion notifications; wait for one if @block. */
static void zc_reap(int s, struct zc *z, bool block)
{
	char ctl[CMSG_SPACE(sizeof(struct sock_extended_err)) + 64];

	for (;;) {
		struct msghdr m = { .msg_control = ctl,
				    .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c;

		if (recvmsg(s, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			struct pollfd p = { .fd = s, .events = 0 };

			if (errno != EAGAIN)
				die("recvmsg(MSG_ERRQUEUE)");
			if (!block)
				return;
			if (poll(&p, 1, 1000) < 0)
				die("poll");
			continue;
		}
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err e;
			uint32_t n;

			if (!((c->cmsg_level == SOL_IP &&
			       c->cmsg_type == IP_RECVERR) ||
			      (c->cmsg_level == SOL_IPV6 &&
			       c->cmsg_type == IPV6_RECVERR)))
				continue;
			memcpy(&e, CMSG_DATA(c), sizeof(e));
			if (e.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			/* sends ee_info .. ee_data (inclusive) are done */
			n = e.ee_data - e.ee_info + 1;
			z->done += n;
			if (e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				z->copied += n;
		}
		block = false;
	}
}

static int do_send(const char *addr, int port, const char *mode,
		   double secs, size_t msg)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	bool zc = !strcmp(mode, "zerocopy"), sf = !strcmp(mode, "sendfile");
	unsigned long long total = 0, calls = 0;
	struct zc z = { 0 };
	char *pool;
	double t0, t;
	int s, one = 1, mfd = -1;
	off_t off;

	if (!zc && !sf && strcmp(mode, "copy"))
		return 2;
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return 2;
	pool = mmap(NULL, msg * POOL, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (pool == MAP_FAILED)
		die("mmap");
	memset(pool, 0x5a, msg * POOL);
	if (sf) {
		mfd = memfd_create("tcp_zerocopy", 0);
		if (mfd < 0 || write(mfd, pool, msg * POOL) != (ssize_t)(msg * POOL))
			die("memfd");
	}
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (zc && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		die("setsockopt(SO_ZEROCOPY)");
	if (connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connect");

	t = t0 = now();
	do {
		size_t i = calls % POOL;
		ssize_t n;

		if (sf) {
			off = i * msg;
			n = sendfile(s, mfd, &off, msg);
		} else if (zc) {
			/* buffer i is free once send i - POOL is done */
			while (z.sent - z.done >= POOL)
				zc_reap(s, &z, true);
			n = send(s, pool + i * msg, msg, MSG_ZEROCOPY);
			if (n < 0 && errno == ENOBUFS) {	/* optmem */
				zc_reap(s, &z, true);
				t = now();
				continue;
			}
			if (n >= 0)
				z.sent++;
			zc_reap(s, &z, false);
		} else {
			n = send(s, pool + i * msg, msg, 0);
		}
		if (n < 0)
			die("send");
		total += n;
		calls++;
		t = now();
	} while (t - t0 < secs);
	if (shutdown(s, SHUT_WR))
		die("shutdown");
	while (zc && z.done < z.sent)
		zc_reap(s, &z, true);
	printf("mode=%s msg=%zu bytes=%llu secs=%.3f mibps=%.1f calls=%llu",
	       mode, msg, total, t - t0, total / (t - t0) / (1 << 20), calls);
	if (zc)
		printf(" zc_sent=%u zc_done=%u zc_copied=%u", z.sent, z.done,
		       z.copied);
	printf("\n");
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]));
	if (argc == 7 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), argv[4], atof(argv[5]),
			       strtoul(argv[6], NULL, 0));
	fprintf(stderr,
		"usage: %s recv PORT\n"
		"       %s send ADDR PORT copy|zerocopy|sendfile SECONDS MSG_BYTES\n",
		argv[0], argv[0]);
	return 2;
}
