// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fpdu_peer -- a hostile iWARP peer on a plain TCP socket, for the abuse
 * tests (selftests/guest/abuse.sh).  It connects to a kiwi listener (the
 * victim program), does the MPA exchange itself (revision 2, RFC 6581
 * enhanced setup, CRC, no peer-to-peer), reads the victim's region from
 * the accept's private data, then misbehaves as asked:
 *
 *   stall_write  one tagged RDMA WRITE of 4000 bytes into the region:
 *                the header and 16 bytes, then silence for -s seconds
 *                (the victim deregisters the region meanwhile), then
 *                the rest.  Expected: TERMINATE DDP tagged / invalid
 *                STag (1/1/0x00), and nothing placed after the
 *                deregistration (the victim checks its own memory).
 *   read_flood   -n RDMA READ requests in one segment, though the victim
 *                advertised an IRD of 1.  Expected: at most IRD READ
 *                responses, then TERMINATE DDP untagged / no buffer
 *                (1/2/0x02).
 *
 * It prints what it receives ("# rx ..." lines) and ends with
 * "fpdu_peer: ok" or "fpdu_peer: FAILED ...".  Exit status 0 if the
 * victim answered as the RFCs say, 1 if not, 2 on usage errors.
 *
 *   fpdu_peer -a ADDR [-p PORT] -m MODE [-s SECS] [-n COUNT]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <kiwi/crc32c.h>
#include <kiwi/iwarp.h>

#include "abuse.h"

static struct kiwi_crc_tab crc_tab;
static int fd = -1;

static void die(const char *what)
{
	printf("fpdu_peer: FAILED %s (%s)\n", what, errno ? strerror(errno) : "-");
	exit(1);
}

static void send_all(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n <= 0)
			die("send");
		b += n;
		len -= n;
	}
}

/* Read exactly @len bytes within @ms; false on timeout or EOF. */
static bool recv_all(void *p, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *b = p;

	while (len) {
		ssize_t n;

		if (poll(&pfd, 1, ms) != 1)
			return false;
		n = recv(fd, b, len, 0);
		if (n <= 0)
			return false;
		b += n;
		len -= n;
	}
	return true;
}

/* CRC32c of @len bytes at @p, as MPA computes it (RFC 5044 4.4). */
static uint32_t mpa_crc(const uint8_t *p, size_t len)
{
	static uint8_t scratch[70000];

	return ~kiwi_crc_copy(&crc_tab, ~0U, scratch, p, len);
}

/*
 * One FPDU in @out: @hdr (hdr_len bytes, MPA length filled in here),
 * @len payload bytes, pad and CRC (little-endian on the wire).  Returns
 * its length.
 */
static size_t fpdu_build(uint8_t *out, const void *hdr, uint32_t hdr_len,
			 const void *payload, uint32_t len)
{
	struct kiwi_ctrl *ctrl = (struct kiwi_ctrl *)out;
	size_t n = hdr_len + len;
	uint32_t crc;

	memcpy(out, hdr, hdr_len);
	if (len)
		memcpy(out + hdr_len, payload, len);
	ctrl->mpa_len = htons(hdr_len - KIWI_MPA_HDR_LEN + len);
	memset(out + n, 0, kiwi_mpa_pad(n));
	n += kiwi_mpa_pad(n);
	crc = mpa_crc(out, n);
	memcpy(out + n, &crc, 4);
	return n + 4;
}

/* MPA request out, reply in; returns the victim's region. */
static struct victim_info mpa_connect(uint16_t ird, uint16_t ord)
{
	uint8_t req[sizeof(struct kiwi_mpa_rr) + sizeof(struct kiwi_mpa_v2)];
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_v2 v2;
	uint8_t pd[KIWI_MPA_MAX_PD];
	struct kiwi_mpa_rr rep;
	struct kiwi_mpa_info mi;
	struct victim_info vi;

	kiwi_mpa_build(&rr, true, KIWI_MPA_REV2,
		       KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH, sizeof(v2));
	v2 = kiwi_mpa_v2_build(ird, ord, false, 0);
	memcpy(req, &rr, sizeof(rr));
	memcpy(req + sizeof(rr), &v2, sizeof(v2));
	send_all(req, sizeof(req));
	if (!recv_all(&rep, sizeof(rep), 10000))
		die("no MPA reply");
	if (ntohs(rep.pd_len) > sizeof(pd) ||
	    !recv_all(pd, ntohs(rep.pd_len), 5000))
		die("short MPA reply");
	if (kiwi_mpa_parse(&rep, pd, ntohs(rep.pd_len), false, &mi) ||
	    mi.reject || !mi.crc || mi.ulp_pd_len < sizeof(vi))
		die("unexpected MPA reply");
	memcpy(&vi, pd + mi.ulp_pd_off, sizeof(vi));
	if (ntohl(vi.magic) != VICTIM_MAGIC)
		die("no victim_info in the reply");
	printf("# MPA reply: rev %u crc %d ird %u ord %u; region rkey 0x%x len %u\n",
	       mi.rev, mi.crc, mi.ird, mi.ord, ntohl(vi.rkey), ntohl(vi.len));
	return vi;
}

/*
 * Read FPDUs until a TERMINATE (returned as layer << 16 | type << 8 |
 * code) or the end; counts READ responses in *@resp.  -1 if none came.
 */
static int await_terminate(int ms, int *resp)
{
	for (;;) {
		uint8_t buf[70000];
		struct kiwi_ctrl c;
		uint32_t len, total, ctrl;
		uint16_t dr;
		uint8_t op;

		if (!recv_all(&c, sizeof(c), ms))
			return -1;
		len = ntohs(c.mpa_len);
		total = kiwi_mpa_pad(len + KIWI_MPA_HDR_LEN) + len +
			KIWI_MPA_HDR_LEN + KIWI_MPA_CRC_LEN - sizeof(c);
		memcpy(buf, &c, sizeof(c));
		if (!recv_all(buf + sizeof(c), total, ms))
			return -1;
		dr = ntohs(c.ddp_rdmap);
		op = dr & KIWI_RDMAP_OP_MASK;
		printf("# rx op %u, ULPDU %u\n", op, len);
		if (op == KIWI_OP_READ_RESP && resp)
			(*resp)++;
		if (op != KIWI_OP_TERMINATE)
			continue;
		memcpy(&ctrl, buf + sizeof(struct kiwi_hdr_untagged), 4);
		ctrl = ntohl(ctrl);
		return (ctrl >> KIWI_TERM_LAYER_SHIFT) << 16 |
		       ((ctrl >> KIWI_TERM_ETYPE_SHIFT) & 0xf) << 8 |
		       ((ctrl >> KIWI_TERM_ECODE_SHIFT) & 0xff);
	}
}

static int expect_term(int got, int want)
{
	if (got < 0) {
		printf("fpdu_peer: FAILED no TERMINATE (want %d/%d/0x%02x)\n",
		       want >> 16, (want >> 8) & 0xff, want & 0xff);
		return 1;
	}
	printf("# TERMINATE layer %d type %d code 0x%02x\n", got >> 16,
	       (got >> 8) & 0xff, got & 0xff);
	if (got != want) {
		printf("fpdu_peer: FAILED TERMINATE %d/%d/0x%02x, want %d/%d/0x%02x\n",
		       got >> 16, (got >> 8) & 0xff, got & 0xff, want >> 16,
		       (want >> 8) & 0xff, want & 0xff);
		return 1;
	}
	return 0;
}

static int stall_write(const struct victim_info *vi, int secs)
{
	struct kiwi_hdr_tagged h = { 0 };
	static uint8_t data[4000];
	static uint8_t fpdu[8192];
	size_t n;

	memset(data, PAT_PEER, sizeof(data));
	h.ctrl.ddp_rdmap = htons(kiwi_ddp_rdmap(KIWI_OP_WRITE, true));
	h.stag = vi->rkey;
	h.to = vi->addr;
	n = fpdu_build(fpdu, &h, sizeof(h), data, sizeof(data));
	send_all(fpdu, sizeof(h) + 16);
	printf("# sent a WRITE header and 16 bytes; silent for %d s\n", secs);
	fflush(stdout);
	sleep(secs);
	send_all(fpdu + sizeof(h) + 16, n - sizeof(h) - 16);
	printf("# sent the rest\n");
	return expect_term(await_terminate(10000, NULL),
			   KIWI_TL_DDP << 16 | KIWI_DT_TAGGED << 8 |
			   KIWI_DC_T_INVALID_STAG);
}

/*
 * All requests go out in one send(), so they arrive in one segment and
 * the victim parses them all before it answers any: what is counted is
 * requests outstanding, not a race with the responses.
 */
static int read_flood(const struct victim_info *vi, int count)
{
	struct {
		struct kiwi_hdr_untagged u;
		struct kiwi_read_req r;
	} __attribute__((packed)) h;
	static uint8_t out[64 * 64];
	size_t n = 0;
	int i, resp = 0, rv;

	if (count > 64)
		count = 64;
	for (i = 0; i < count; i++) {
		memset(&h, 0, sizeof(h));
		h.u.ctrl.ddp_rdmap = htons(kiwi_ddp_rdmap(KIWI_OP_READ_REQ,
							  true));
		h.u.qn = htonl(KIWI_QN_READ_REQ);
		h.u.msn = htonl(i + 1);
		h.r.sink_stag = htonl(0x1234);
		h.r.size = htonl(64);
		h.r.src_stag = vi->rkey;
		h.r.src_to = vi->addr;
		n += fpdu_build(out + n, &h, sizeof(h), NULL, 0);
	}
	send_all(out, n);
	printf("# sent %d READ requests in one segment (%zu bytes)\n", count,
	       n);
	rv = expect_term(await_terminate(10000, &resp),
			 KIWI_TL_DDP << 16 | KIWI_DT_UNTAGGED << 8 |
			 KIWI_DC_U_INVALID_MSN_NOBUF);
	printf("# %d READ responses before the TERMINATE\n", resp);
	if (resp > 1) {
		printf("fpdu_peer: FAILED %d READs served beyond an IRD of 1\n",
		       resp);
		rv = 1;
	}
	return rv;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *mode = NULL;
	int port = ABUSE_PORT, secs = 5, count = 8, c, rv;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct victim_info vi;
	int one = 1;

	while ((c = getopt(argc, argv, "a:p:m:s:n:")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 's': secs = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		default: mode = NULL; optind = argc; break;
		}
	}
	if (!addr || !mode || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    (strcmp(mode, "stall_write") && strcmp(mode, "read_flood"))) {
		fprintf(stderr, "usage: fpdu_peer -a ADDR [-p PORT] -m stall_write|read_flood [-s SECS] [-n COUNT]\n");
		return 2;
	}
	kiwi_crc_tab_init(&crc_tab);
	sin.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect");
	vi = mpa_connect(8, 8);
	fflush(stdout);
	if (!strcmp(mode, "stall_write"))
		rv = stall_write(&vi, secs);
	else
		rv = read_flood(&vi, count);
	if (!rv)
		printf("fpdu_peer: ok\n");
	close(fd);
	return rv;
}
