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
 *                With -r it first checks that the victim waits for
 *                our first FPDU (-H, as in resp_interleave), then waits
 *                for a SEND from it (kiwi_frmr_test: its FRMR is
 *                registered; it remaps it during the silence).
 *   read_flood   -n RDMA READ requests in one segment, though the victim
 *                advertised an IRD of 1.  Expected: at most IRD READ
 *                responses, then TERMINATE DDP untagged / no buffer
 *                (1/2/0x02).
 *   interleave   a WRITE in two FPDUs with a READ request between them,
 *                then a READ of the whole (victim -i 2 or more).
 *                Expected: both READs answered with the bytes in place,
 *                no TERMINATE.
 *   resp_interleave  first checks that the victim, the responder, sends
 *                nothing before our first FPDU (RFC 5044 7.1.2 rule
 *                4; its READ is queued at once) or, with -H MS, for
 *                MS/2 ms (see speak_first()), then answers the
 *                victim's RDMA READ (victim -R) with a
 *                READ Response in two FPDUs, a SEND between them and
 *                one after (tagged and untagged interleaved the other
 *                way round).  Expected: no TERMINATE; the victim checks
 *                its READ sink and both receives.
 *
 * and one malformed or hostile message per mode, each answered as RFC
 * 5040/5041/5044 say (see scenarios[] for the TERMINATE due): bad_crc,
 * ulpdu_0, ulpdu_1, ulpdu_max, ddp_version, rdmap_version, bad_opcode,
 * imm_nobuf and imm_long (RFC 7306 Immediate Data with no receive
 * posted, and 4 bytes too long), tagged_send, stag_unknown, to_wrap, one_past_end (a WRITE ending
 * exactly at the region's end is fine, one byte more is not), qn_bad,
 * msn_bad, mo_bad, read_huge, read_msn, read_sink_wrap (a sink range
 * past 2^64), read_long (4 bytes more than a READ Request), term_bogus
 * and term_flood (the
 * stream just ends); RFC 7306 atomics: atomic_req (a fetch-and-add on
 * the victim's region, which lacks REMOTE_ATOMIC), atomic_stag (an
 * unknown STag), atomic_long (4 bytes more than an Atomic Request),
 * atomic_resp (an Atomic Response nobody asked for): with -A (the
 * victim's QP was created with rfc7306_atomics on) each its own
 * TERMINATE, without it every one RDMAP unexpected opcode (the
 * stream just ends), byte_by_byte (a WRITE one byte per segment, read
 * back with an RDMA READ: the bytes must match).
 *
 *   read_stop    a receive buffer of 4 KiB, then one RDMA READ Request
 *                for the victim's whole region (victim -L), and no more
 *                reading for -s seconds: kiwi's responder fills TCP and
 *                its sender blocks.  The victim tears its side down
 *                meanwhile (victim -X), which must finish within its
 *                bound whatever this peer does.  To make it stop ACKing
 *                too, the harness drops its packets (netem) once it
 *                prints "reading stopped".  Always "ok": the verdict is
 *                the victim's.
 *   idle         nothing after the MPA exchange, for -s seconds: the
 *                harness then drops its packets (netem), a peer that died
 *                with the connection idle.  Always "ok": the verdict is
 *                the victim's.
 *   atomic_stale (-A) an Atomic Request, all but its CRC; -s seconds of
 *                silence while the victim (-S) swaps its region for a
 *                read-only page registered without access under the
 *                same STag; then the
 *                CRC.  Expected: TERMINATE RDMAP protection / invalid
 *                STag, nothing executed (see atomic_stale()).
 *
 * Before any of that, the handshake itself can be abused: silent,
 * req_fin, req_rst, p2p_nortr, markers, slowloris (see handshake_mode()), and
 * many connections at once: flood, hold (see many()).  RFC 6581
 * peer-to-peer with a SEND RTR (the only kind offered, so the victim
 * picks it): p2p_send_rtr (zero-length: it takes no receive, a READ
 * after it is served, no TERMINATE), p2p_send_rtr_payload (16 bytes of
 * payload: TERMINATE MPA / no matching RTR, LLP code 0x07).
 *
 * With -l it is the MPA responder instead and kiwi the initiator (victim
 * -c): it listens on ADDR:PORT and answers one connection per mode of
 * the comma list -m, in turn (see responder()): rep_ok (a good reply,
 * the RTR kind kiwi prefers; the zero-length RTR agreed must come, a
 * READ RTR is answered, then nothing else for 1 s; our FIN), rep_rev1
 * (a revision 1 reply: no RTR may come), rep_read_rtr_payload (kiwi's
 * READ RTR answered with 16 bytes: TERMINATE RDMAP unexpected opcode),
 * and replies kiwi must refuse -- it resets or closes the connection
 * within -s seconds: rep_silent (none), rep_rtr_unoffered (an RTR kind
 * kiwi did not offer: run it with p2p_rtr limited), rep_rtr_two (two
 * kinds), rep_reject (the Reject bit, private data REJECT_PD),
 * rep_bad_key (the request's key), rep_bad_rev (revision 3),
 * rep_enh_short (enhanced with 2 bytes of private data), rep_pd_long
 * (513 bytes announced and sent), rep_pd_short (200 announced, 19
 * sent).  Each ends in "fpdu_peer: MODE ok" or "... FAILED".
 *
 * It prints what it receives ("# rx ..." lines) and ends with
 * "fpdu_peer: ok" or "fpdu_peer: FAILED ...".  Exit status 0 if the
 * victim answered as the RFCs say, 1 if not, 2 on usage errors.
 *
 *   fpdu_peer -a ADDR [-p PORT] -m MODE [-s SECS] [-n COUNT] [-r] [-A]
 *             [-H MS]
 *   fpdu_peer -l -a ADDR [-p PORT] -m rep_MODE[,rep_MODE...] [-s SECS]
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
#include <signal.h>
#include <sys/socket.h>

#include <kiwi/crc32c.h>
#include <kiwi/iwarp.h>
#include <kiwi/markers.h>
#include <kiwi/rdmap.h>

#include "abuse.h"

static struct kiwi_crc_tab crc_tab;
static int fd = -1;

static void die(const char *what)
{
	printf("fpdu_peer: FAILED %s (%s)\n", what, errno ? strerror(errno) : "-");
	exit(1);
}

/*
 * Once connected, the victim may cut the stream at any moment -- that is
 * often the right answer to what we send -- so a failed send then only
 * stops sending; what the victim sent before (its TERMINATE) is still
 * read.  Before that, it is fatal.
 */
static bool connected;

static void send_all(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n <= 0) {
			if (!connected)
				die("send");
			printf("# send: %s (the victim closed)\n",
			       strerror(errno));
			return;
		}
		b += n;
		len -= n;
	}
}

static bool peer_eof;	/* the last recv_all() failed on EOF or reset */

/* Read exactly @len bytes within @ms; false on timeout or EOF. */
static bool recv_all(void *p, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *b = p;

	peer_eof = false;
	while (len) {
		ssize_t n;

		if (poll(&pfd, 1, ms) != 1)
			return false;
		n = recv(fd, b, len, 0);
		if (n <= 0) {
			peer_eof = true;
			return false;
		}
		b += n;
		len -= n;
	}
	return true;
}

/*
 * MPA markers (-M, RFC 5044 4.3): mk_req, our request asked the victim
 * for markers, which are then taken out of (and checked in) everything
 * read after the MPA reply; mk_tx, the reply asked us for them, which
 * send_fpdu() then inserts.
 */
static bool mk_req, mk_tx;
static struct kiwi_mk_tx mktx;
static struct kiwi_mk_strip mkrx;
static uint8_t mk_fifo[1 << 18];	/* stream bytes with markers removed */
static size_t mk_head, mk_tail;
static bool mk_bad;			/* the victim sent an inconsistent marker */

/* As recv_all(), of the stream with the victim's markers removed. */
static bool recv_plain(void *p, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	static uint8_t raw[1 << 16];

	if (!mk_req)
		return recv_all(p, len, ms);
	peer_eof = false;
	while (mk_tail - mk_head < len) {
		ssize_t n;
		int g;

		if (mk_head && mk_head == mk_tail)
			mk_head = mk_tail = 0;
		if (mk_bad || poll(&pfd, 1, ms) != 1)
			return false;
		n = recv(fd, raw, sizeof(mk_fifo) - mk_tail < sizeof(raw) ?
			 sizeof(mk_fifo) - mk_tail : sizeof(raw), 0);
		if (n <= 0) {
			peer_eof = true;
			return false;
		}
		g = kiwi_mk_strip(&mkrx, mk_fifo + mk_tail, raw, n);
		if (g < 0) {
			printf("fpdu_peer: FAILED an inconsistent marker from the victim\n");
			mk_bad = true;
			return false;
		}
		mk_tail += g;
	}
	memcpy(p, mk_fifo + mk_head, len);
	mk_head += len;
	return true;
}

/* CRC32c of @len bytes at @p, as MPA computes it (RFC 5044 4.4). */
static uint32_t mpa_crc(const uint8_t *p, size_t len)
{
	return ~kiwi_crc_update(&crc_tab, ~0U, p, len);
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

/*
 * MPA request out, reply in; returns the victim's region.  @rtr: the
 * RFC 6581 ready-to-receive kinds offered, peer-to-peer mode if any;
 * the reply must then pick exactly one of them.
 */
static struct victim_info mpa_connect(uint16_t ird, uint16_t ord,
				      uint16_t rtr)
{
	uint8_t req[sizeof(struct kiwi_mpa_rr) + sizeof(struct kiwi_mpa_v2)];
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_v2 v2;
	uint8_t pd[KIWI_MPA_MAX_PD];
	struct kiwi_mpa_rr rep;
	struct kiwi_mpa_info mi;
	struct victim_info vi;

	kiwi_mpa_build(&rr, true, KIWI_MPA_REV2,
		       KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH |
		       (mk_req ? KIWI_MPA_FLAG_M : 0), sizeof(v2));
	v2 = kiwi_mpa_v2_build(ird, ord, rtr != 0, rtr);
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
	if (rtr && (!mi.p2p || mi.rtr & ~rtr || __builtin_popcount(mi.rtr) != 1))
		die("the reply did not pick one of the RTR kinds offered");
	memcpy(&vi, pd + mi.ulp_pd_off, sizeof(vi));
	if (ntohl(vi.magic) != VICTIM_MAGIC)
		die("no victim_info in the reply");
	mk_tx = mi.markers;
	printf("# MPA reply: rev %u crc %d markers %d ird %u ord %u p2p %d rtr 0x%x; region rkey 0x%x len %u\n",
	       mi.rev, mi.crc, mi.markers, mi.ird, mi.ord, mi.p2p, mi.rtr,
	       ntohl(vi.rkey), ntohl(vi.len));
	return vi;
}

#define GOT_TIMEOUT	(-1)
#define GOT_EOF		(-2)
#define GOT_RESP	(-3)	/* await_fpdu(..., true): a READ Response */
#define TERM(l, t, c)	((l) << 16 | (t) << 8 | (c))

static uint8_t resp_data[70000];	/* payload of the last READ response */
static uint32_t resp_len;

static uint8_t rx_buf[70000];	/* the last FPDU received */

/*
 * One FPDU into rx_buf within @ms: its RDMAP opcode and in *@len its
 * ULPDU length, or GOT_EOF / GOT_TIMEOUT.
 */
static int recv_fpdu(int ms, uint32_t *len)
{
	struct kiwi_ctrl c;
	uint32_t total;
	int op;

	if (!recv_plain(&c, sizeof(c), ms))
		return peer_eof ? GOT_EOF : GOT_TIMEOUT;
	*len = ntohs(c.mpa_len);
	total = kiwi_mpa_pad(*len + KIWI_MPA_HDR_LEN) + *len +
		KIWI_MPA_HDR_LEN + KIWI_MPA_CRC_LEN - sizeof(c);
	memcpy(rx_buf, &c, sizeof(c));
	if (!recv_plain(rx_buf + sizeof(c), total, ms))
		return peer_eof ? GOT_EOF : GOT_TIMEOUT;
	op = ntohs(c.ddp_rdmap) & KIWI_RDMAP_OP_MASK;
	printf("# rx op %d, ULPDU %u\n", op, *len);
	return op;
}

/*
 * Read FPDUs until a TERMINATE (returned as TERM(layer, type, code)), the
 * end of the stream (GOT_EOF) or @ms of silence (GOT_TIMEOUT).  Counts
 * READ responses in *@resp and keeps the last one's payload.
 */
static int await_fpdu(int ms, int *resp, bool until_resp)
{
	for (;;) {
		uint32_t len, ctrl;
		int op = recv_fpdu(ms, &len);

		if (op < 0)
			return op;
		if (op == KIWI_OP_READ_RESP) {
			uint32_t h = sizeof(struct kiwi_hdr_tagged);

			if (resp)
				(*resp)++;
			resp_len = len + KIWI_MPA_HDR_LEN - h;
			memcpy(resp_data, rx_buf + h, resp_len);
			if (until_resp)
				return GOT_RESP;
		}
		if (op != KIWI_OP_TERMINATE)
			continue;
		memcpy(&ctrl, rx_buf + sizeof(struct kiwi_hdr_untagged), 4);
		ctrl = ntohl(ctrl);
		return TERM(ctrl >> KIWI_TERM_LAYER_SHIFT,
			    (ctrl >> KIWI_TERM_ETYPE_SHIFT) & 0xf,
			    (ctrl >> KIWI_TERM_ECODE_SHIFT) & 0xff);
	}
}

static int await_terminate(int ms, int *resp)
{
	return await_fpdu(ms, resp, false);
}

static const char *got_str(int got)
{
	static char b[32];

	if (got == GOT_TIMEOUT)
		return "nothing (timeout)";
	if (got == GOT_EOF)
		return "end of stream";
	snprintf(b, sizeof(b), "TERMINATE %d/%d/0x%02x", got >> 16,
		 (got >> 8) & 0xff, got & 0xff);
	return b;
}

/* The victim answered with @got; 0 if that is @want. */
static int expect_term(int got, int want)
{
	printf("# got %s\n", got_str(got));
	if (got != want) {
		printf("fpdu_peer: FAILED got %s, ", got_str(got));
		printf("want %s\n", got_str(want));
		return 1;
	}
	return 0;
}

/*
 * RFC 5044 7.1.2, rule 4: the responder (kiwi) sends nothing until it
 * has our first FPDU, though its consumer has work queued at once
 * (victim -R READs, kiwi_frmr_test SENDs "ready"); we asked for no
 * RFC 6581 RTR.  kiwi waits first_fpdu_ms for it (-H), then sends
 * anyway.  With -H 0 it waits for ever: nothing may come for a second
 * and a half, then we speak first, with a zero-length WRITE (an RTR's
 * form: it names no buffer).  With -H MS nothing may come for MS/2
 * (the reply left kiwi a little before its clock started), and we say
 * nothing: kiwi's own first FPDU follows.
 */
static int hold_ms;

static void send_tagged(uint8_t op, bool last, uint32_t stag, uint64_t to,
			uint32_t len, uint8_t pat);

static int speak_first(void)
{
	int quiet = hold_ms ? hold_ms / 2 : 1500;
	uint32_t len;
	int op = recv_fpdu(quiet, &len);

	if (op != GOT_TIMEOUT) {
		printf("fpdu_peer: FAILED the responder sent %s within %d ms, before our first FPDU (RFC 5044 7.1.2, rule 4)\n",
		       op >= 0 ? "an FPDU" : got_str(op), quiet);
		return 1;
	}
	printf("# the responder sent nothing for %d ms\n", quiet);
	if (!hold_ms)
		send_tagged(KIWI_OP_WRITE, true, 0, 0, 0, 0);
	return 0;
}

/*
 * -r: the victim makes its region valid only once connected (a kernel
 * consumer's fast registration, selftests/kconsumer/kiwi_frmr_test.c)
 * and then says so with a SEND: wait for that.
 */
static int await_ready(void)
{
	uint32_t len;
	int op;

	do
		op = recv_fpdu(10000, &len);
	while (op >= 0 && op != KIWI_OP_SEND);
	if (op < 0) {
		printf("fpdu_peer: FAILED no ready SEND from the victim: %s\n",
		       op == GOT_EOF ? "end of stream" : "timeout");
		return 1;
	}
	printf("# the victim's ready SEND arrived\n");
	return 0;
}

static int stall_write(const struct victim_info *vi, int secs, bool ready)
{
	struct kiwi_hdr_tagged h = { 0 };
	static uint8_t data[4000];
	static uint8_t fpdu[8192];
	size_t n;

	if (ready && (speak_first() || await_ready()))
		return 1;
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
			   TERM(KIWI_TL_DDP, KIWI_DT_TAGGED,
				KIWI_DC_T_INVALID_STAG));
}

/*
 * One READ Request for the victim's whole region, then no reading: the
 * responder's sender fills TCP's buffers and the 4 KiB window and waits
 * for room that never comes (security audit F4).
 */
static int read_stop(const struct victim_info *vi, int secs)
{
	struct {
		struct kiwi_hdr_untagged u;
		struct kiwi_read_req r;
	} __attribute__((packed)) h = { 0 };
	uint8_t out[128];
	size_t n;

	h.u.ctrl.ddp_rdmap = htons(kiwi_ddp_rdmap(KIWI_OP_READ_REQ, true));
	h.u.qn = htonl(KIWI_QN_READ_REQ);
	h.u.msn = htonl(1);
	h.r.sink_stag = htonl(0x1234);
	h.r.size = vi->len;
	h.r.src_stag = vi->rkey;
	h.r.src_to = vi->addr;
	n = fpdu_build(out, &h, sizeof(h), NULL, 0);
	send_all(out, n);
	printf("# sent a READ Request for %u bytes; reading stopped for %d s\n",
	       ntohl(vi->len), secs);
	fflush(stdout);
	sleep(secs);
	return 0;
}

/*
 * The connection is up and the peer says nothing more, as a machine that
 * has just died would: the harness drops its packets once this prints,
 * and kiwi, with nothing to send, must find out by itself (peer_timeout:
 * keepalive).
 */
static int idle(int secs)
{
	printf("# connected; idle for %d s\n", secs);
	fflush(stdout);
	sleep(secs);
	return 0;
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
			 TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			      KIWI_DC_U_INVALID_MSN_NOBUF));
	printf("# %d READ responses before the TERMINATE\n", resp);
	if (resp > 1) {
		printf("fpdu_peer: FAILED %d READs served beyond an IRD of 1\n",
		       resp);
		rv = 1;
	}
	return rv;
}

/* ---- one malformed or hostile message each, and the answer due ---- */

static struct victim_info V;	/* the victim's region */

static uint64_t v_addr(void) { return be64toh(V.addr); }
static uint32_t v_rkey(void) { return ntohl(V.rkey); }
static uint32_t v_len(void) { return ntohl(V.len); }

/*
 * @n bytes of FPDU (CRC included) with markers in @wire: the CRC is
 * computed again, over the markers too.  Returns the length on the wire.
 */
static size_t mk_fpdu(uint8_t *wire, size_t cap, const uint8_t *fpdu,
		      size_t n)
{
	uint32_t crc;
	int w;

	kiwi_mk_tx_fpdu(&mktx);
	w = kiwi_mk_insert(&mktx, wire, cap, fpdu, n - 4, true);
	if (w < 0)
		die("marker buffer");
	crc = mpa_crc(wire, w);
	memcpy(wire + w, &crc, 4);
	kiwi_mk_tx_sent(&mktx, 4);
	return w + 4;
}

/* Stream offset at which the next FPDU starts its wire bytes. */
static int mk_corrupt = -1;	/* wire octet of the next FPDU to flip */

static void send_fpdu(const void *hdr, uint32_t hdr_len, const void *payload,
		      uint32_t len)
{
	static uint8_t out[70000], wire[80000];
	size_t n = fpdu_build(out, hdr, hdr_len, payload, len);

	if (!mk_tx) {
		send_all(out, n);
		return;
	}
	n = mk_fpdu(wire, sizeof(wire), out, n);
	if (mk_corrupt >= 0 && (size_t)mk_corrupt < n)
		wire[mk_corrupt] ^= 0x10;
	mk_corrupt = -1;
	send_all(wire, n);
}

static struct kiwi_hdr_tagged tagged(uint16_t ddp_rdmap, uint32_t stag,
				     uint64_t to)
{
	struct kiwi_hdr_tagged h = { 0 };

	h.ctrl.ddp_rdmap = htons(ddp_rdmap);
	h.stag = htonl(stag);
	h.to = htobe64(to);
	return h;
}

static struct kiwi_hdr_untagged untagged(uint16_t ddp_rdmap, uint32_t qn,
					 uint32_t msn, uint32_t mo)
{
	struct kiwi_hdr_untagged h = { 0 };

	h.ctrl.ddp_rdmap = htons(ddp_rdmap);
	h.qn = htonl(qn);
	h.msn = htonl(msn);
	h.mo = htonl(mo);
	return h;
}

/* A tagged FPDU of opcode @op (WRITE, READ Response): @len bytes of @pat. */
static void send_tagged(uint8_t op, bool last, uint32_t stag, uint64_t to,
			uint32_t len, uint8_t pat)
{
	static uint8_t data[66000];
	struct kiwi_hdr_tagged h = tagged(kiwi_ddp_rdmap(op, last), stag, to);

	memset(data, pat, len);
	send_fpdu(&h, sizeof(h), data, len);
}

static void send_write(uint32_t stag, uint64_t to, uint32_t len)
{
	send_tagged(KIWI_OP_WRITE, true, stag, to, len, PAT_PEER);
}

/* A READ Request for @size bytes at @sink_to, @extra bytes too long. */
static void send_read_req_to(uint32_t msn, uint64_t sink_to, uint32_t size,
			     uint32_t src_stag, uint64_t src_to,
			     uint32_t extra)
{
	static const uint8_t junk[16];
	struct {
		struct kiwi_hdr_untagged u;
		struct kiwi_read_req r;
	} __attribute__((packed)) h;

	h.u = untagged(kiwi_ddp_rdmap(KIWI_OP_READ_REQ, true),
		       KIWI_QN_READ_REQ, msn, 0);
	h.r.sink_stag = htonl(0x4321);
	h.r.sink_to = htobe64(sink_to);
	h.r.size = htonl(size);
	h.r.src_stag = htonl(src_stag);
	h.r.src_to = htobe64(src_to);
	send_fpdu(&h, sizeof(h), extra ? junk : NULL, extra);
}

static void send_read_req(uint32_t msn, uint32_t size, uint32_t src_stag,
			  uint64_t src_to)
{
	send_read_req_to(msn, 0, size, src_stag, src_to, 0);
}

/* A SEND, last segment: @len (at most 256) bytes of @pat. */
static void send_send_fill(uint32_t qn, uint32_t msn, uint32_t mo,
			   uint32_t len, uint8_t pat)
{
	uint8_t data[256];
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_SEND, true), qn, msn, mo);

	memset(data, pat, sizeof(data));
	send_fpdu(&h, sizeof(h), data, len);
}

static void send_send(uint32_t qn, uint32_t msn, uint32_t mo, uint32_t len)
{
	send_send_fill(qn, msn, mo, len, PAT_PEER);
}

/* FPDUs whose trouble is in the MPA or DDP/RDMAP framing. */
static void s_bad_crc(void)
{
	static uint8_t out[256];
	struct kiwi_hdr_tagged h = tagged(kiwi_ddp_rdmap(KIWI_OP_WRITE, true),
					  v_rkey(), v_addr());
	uint8_t data[64];
	size_t n;

	memset(data, PAT_PEER, sizeof(data));
	n = fpdu_build(out, &h, sizeof(h), data, sizeof(data));
	out[n - 1] ^= 0x5a;
	send_all(out, n);
}

/*
 * A WRITE of 1500 bytes, the first FPDU of the stream, whose marker at
 * stream octet 512 (FPDUPTR 508) has a bit of its pointer flipped; the
 * victim asked for markers (mpa_markers=3).
 */
static void s_marker_bad(void)
{
	if (!mk_tx)
		printf("fpdu_peer: the victim did not ask for markers\n");
	mk_corrupt = 512 + 3;
	send_write(v_rkey(), v_addr(), 1500);
}

/* The same with the first marker (FPDUPTR 0, before the FPDU) wrong. */
static void s_marker_first(void)
{
	if (!mk_tx)
		printf("fpdu_peer: the victim did not ask for markers\n");
	mk_corrupt = 3;
	send_write(v_rkey(), v_addr(), 1500);
}

static void s_ulpdu(uint16_t len)
{
	struct kiwi_ctrl c = {
		.mpa_len = htons(len),
		.ddp_rdmap = htons(kiwi_ddp_rdmap(KIWI_OP_SEND, true)),
	};
	uint8_t b[sizeof(c) + 64] = { 0 };

	memcpy(b, &c, sizeof(c));
	send_all(b, sizeof(b));		/* one segment: nothing after a reset */
}

static void s_ulpdu_0(void) { s_ulpdu(0); }
static void s_ulpdu_1(void) { s_ulpdu(1); }

/* The MPA maximum ULPDU, placed where it cannot fit. */
static void s_ulpdu_max(void)
{
	send_write(v_rkey(), v_addr() + 64,
		   KIWI_MPA_MAX_ULPDU - sizeof(struct kiwi_hdr_tagged) +
		   KIWI_MPA_HDR_LEN);
}

/* A zero-length WRITE (legal, names no buffer), then DDP version 2. */
static void s_ddp_version(void)
{
	struct kiwi_hdr_tagged h =
		tagged((kiwi_ddp_rdmap(KIWI_OP_WRITE, true) &
			~KIWI_DDP_VER_MASK) | 2 << KIWI_DDP_VER_SHIFT,
		       v_rkey(), v_addr());

	send_write(v_rkey(), v_addr(), 0);
	send_fpdu(&h, sizeof(h), "x", 1);
}

static void s_rdmap_version(void)
{
	struct kiwi_hdr_untagged h =
		untagged((kiwi_ddp_rdmap(KIWI_OP_SEND, true) &
			  ~KIWI_RDMAP_VER_MASK) | 2 << KIWI_RDMAP_VER_SHIFT,
			 KIWI_QN_SEND, 1, 0);

	send_fpdu(&h, sizeof(h), NULL, 0);
}

/* 1111b: reserved in RFC 5040 and RFC 7306 alike. */
static void s_bad_opcode(void)
{
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_SEND, true) + 0xf - KIWI_OP_SEND,
			 KIWI_QN_SEND, 1, 0);

	send_fpdu(&h, sizeof(h), NULL, 0);
}

/*
 * RFC 7306 Immediate Data: 8 bytes on queue 0, each taking a receive
 * WQE.  The victim posts none; and one 4 bytes longer than 8.
 */
static void send_imm(uint32_t extra)
{
	uint8_t body[8 + 4] = { 0, 0, 0, 0, 0xca, 0xfe, 0xf0, 0x0d };
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_IMM, true), KIWI_QN_SEND, 1, 0);

	send_fpdu(&h, sizeof(h), body, 8 + extra);
}

static void s_imm_nobuf(void) { send_imm(0); }
static void s_imm_long(void) { send_imm(4); }

/* A SEND that claims to be tagged. */
static void s_tagged_send(void)
{
	struct kiwi_hdr_tagged h =
		tagged(kiwi_ddp_rdmap(KIWI_OP_SEND, true) | KIWI_DDP_TAGGED,
		       v_rkey(), v_addr());

	send_fpdu(&h, sizeof(h), NULL, 0);
}

/* Tagged addressing. */
static void s_stag_unknown(void) { send_write(v_rkey() ^ 0x5a5a00, v_addr(), 64); }
static void s_to_wrap(void) { send_write(v_rkey(), UINT64_MAX - 15, 64); }
static void s_one_past(void)
{
	send_write(v_rkey(), v_addr() + v_len() - 64, 64);	/* fits */
	send_write(v_rkey(), v_addr() + v_len() - 63, 64);	/* one over */
}

/* Untagged queues. */
static void s_qn_bad(void) { send_send(7, 1, 0, 16); }
static void s_msn_bad(void) { send_send(KIWI_QN_SEND, 9, 0, 16); }
static void s_mo_bad(void) { send_send(KIWI_QN_SEND, 1, 100, 16); }
static void s_read_huge(void) { send_read_req(1, 0xffffffffU, v_rkey(), v_addr()); }
static void s_read_msn(void) { send_read_req(5, 16, v_rkey(), v_addr()); }
/* A sink range past 2^64; a body 4 bytes longer than a READ Request. */
static void s_read_sink_wrap(void)
{
	send_read_req_to(1, ~0ULL - 7, 16, v_rkey(), v_addr(), 0);
}

static void s_read_long(void)
{
	send_read_req_to(1, 0, 16, v_rkey(), v_addr(), 4);
}

/* RFC 7306 atomics: an Atomic Request (queue 3), @extra bytes longer. */
static void send_atomic_req(uint32_t stag, uint64_t to, uint32_t extra)
{
	uint8_t body[sizeof(struct kiwi_atomic_req) + 4] = { 0 };
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_ATOMIC_REQ, true),
			 KIWI_QN_ATOMIC_REQ, 1, 0);

	kiwi_atomic_req_build((struct kiwi_atomic_req *)body, false, 1, stag,
			      to, 1, 0);
	send_fpdu(&h, sizeof(h), body, sizeof(struct kiwi_atomic_req) + extra);
}

static bool atomics_on;		/* -A: the victim's QP has atomics */

/*
 * atomic_stale (-A): a fetch-and-add Atomic Request on the victim's
 * region (victim -A -S), all but its CRC; -s seconds of silence, in
 * which the victim deregisters the region and registers a read-only
 * page of other memory without any access, which with kiwi's
 * test_stag_reuse gets the very same STag; then the CRC.  The request
 * was checked against a region that is gone: it must get TERMINATE
 * RDMAP protection / invalid STag and change nothing (security audit
 * F1: kiwi looked the STag up again and ran the atomic on whatever it
 * found, a read-only page-cache page as well).
 */
static int atomic_stale(int secs)
{
	uint8_t body[sizeof(struct kiwi_atomic_req)] = { 0 };
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_ATOMIC_REQ, true),
			 KIWI_QN_ATOMIC_REQ, 1, 0);
	uint8_t fpdu[256];
	size_t n;

	kiwi_atomic_req_build((struct kiwi_atomic_req *)body, false, 1,
			      v_rkey(), v_addr(), 0x0101010101010101ULL, 0);
	n = fpdu_build(fpdu, &h, sizeof(h), body, sizeof(body));
	send_all(fpdu, n - 4);
	printf("# sent an Atomic Request but its CRC; silent for %d s\n", secs);
	fflush(stdout);
	sleep(secs);
	send_all(fpdu + n - 4, 4);
	printf("# sent the CRC\n");
	return expect_term(await_terminate(10000, NULL),
			   TERM(KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				KIWI_RC_INVALID_STAG));
}

static void s_atomic_req(void) { send_atomic_req(v_rkey(), v_addr(), 0); }
static void s_atomic_stag(void)
{
	send_atomic_req(v_rkey() ^ 0x5a5a00, v_addr(), 0);
}
static void s_atomic_long(void) { send_atomic_req(v_rkey(), v_addr(), 4); }

static void s_atomic_resp(void)
{
	struct kiwi_atomic_resp r;
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_ATOMIC_RESP, true),
			 KIWI_QN_ATOMIC_RESP, 1, 0);

	kiwi_atomic_resp_build(&r, 1, 0);
	send_fpdu(&h, sizeof(h), &r, sizeof(r));
}

/* TERMINATEs: with bogus header-present bits and length, and a flood. */
static void s_term_bogus(void)
{
	uint8_t body[4 + 60];
	struct kiwi_hdr_untagged h =
		untagged(kiwi_ddp_rdmap(KIWI_OP_TERMINATE, true),
			 KIWI_QN_TERMINATE, 1, 0);
	uint32_t ctrl = htonl(0xffffffffU);

	memset(body, 0xee, sizeof(body));
	memcpy(body, &ctrl, 4);
	send_fpdu(&h, sizeof(h), body, sizeof(body));
}

static void s_term_flood(void)
{
	static uint8_t out[100 * 40];
	size_t n = 0;
	uint32_t i, ctrl = htonl(kiwi_term_ctrl(KIWI_TL_RDMAP,
						KIWI_RT_OPERATION,
						KIWI_RC_UNSPECIFIED));

	for (i = 0; i < 100; i++) {
		struct kiwi_hdr_untagged h =
			untagged(kiwi_ddp_rdmap(KIWI_OP_TERMINATE, true),
				 KIWI_QN_TERMINATE, i + 1, 0);
		uint8_t hdr[sizeof(h) + 4];

		memcpy(hdr, &h, sizeof(h));
		memcpy(hdr + sizeof(h), &ctrl, 4);
		n += fpdu_build(out + n, hdr, sizeof(hdr), NULL, 0);
	}
	send_all(out, n);
}

/*
 * Slow delivery: a WRITE one byte per TCP segment, then a READ of the
 * same bytes, whose response must hold exactly them.  Returns 0 when it
 * does (the stream then ends with our FIN), non-zero otherwise.
 */
static int s_byte_by_byte(void)
{
	static uint8_t out[512];
	uint8_t data[100];
	struct kiwi_hdr_tagged h = tagged(kiwi_ddp_rdmap(KIWI_OP_WRITE, true),
					  v_rkey(), v_addr() + 1000);
	size_t n, i;
	int got, resp = 0;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	n = fpdu_build(out, &h, sizeof(h), data, sizeof(data));
	for (i = 0; i < n; i++) {
		send_all(out + i, 1);
		usleep(2000);
	}
	send_read_req(1, sizeof(data), v_rkey(), v_addr() + 1000);
	/*
	 * The FIN only once the response is in: a READ Request that meets
	 * the stream's close may go unanswered (the close flushes the QP),
	 * and on the slow sanitizer kernel the FIN was handled first.
	 */
	got = await_fpdu(10000, &resp, true);
	shutdown(fd, SHUT_WR);
	if (got == GOT_RESP)
		got = await_terminate(10000, &resp);
	printf("# %d READ response(s), %u bytes; then %s\n", resp, resp_len,
	       got_str(got));
	if (resp != 1 || resp_len != sizeof(data) ||
	    memcmp(resp_data, data, sizeof(data))) {
		printf("fpdu_peer: FAILED the bytes written one per segment did not read back\n");
		return 1;
	}
	return got == GOT_EOF ? 0 : expect_term(got, GOT_EOF);
}

struct scenario {
	const char *name;
	void (*send)(void);
	int want;
};

static const struct scenario scenarios[] = {
	{ "bad_crc", s_bad_crc, TERM(KIWI_TL_LLP, 0, KIWI_LC_MPA_CRC) },
	{ "ulpdu_0", s_ulpdu_0, TERM(KIWI_TL_DDP, KIWI_DT_CATASTROPHIC, 0) },
	{ "ulpdu_1", s_ulpdu_1, TERM(KIWI_TL_DDP, KIWI_DT_CATASTROPHIC, 0) },
	{ "ulpdu_max", s_ulpdu_max,
	  TERM(KIWI_TL_DDP, KIWI_DT_TAGGED, KIWI_DC_T_BASE_BOUNDS) },
	{ "ddp_version", s_ddp_version,
	  TERM(KIWI_TL_DDP, KIWI_DT_TAGGED, KIWI_DC_T_VERSION) },
	{ "rdmap_version", s_rdmap_version,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION, KIWI_RC_INVALID_VERSION) },
	{ "bad_opcode", s_bad_opcode,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION, KIWI_RC_UNEXPECTED_OP) },
	{ "imm_nobuf", s_imm_nobuf,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MSN_NOBUF) },
	{ "imm_long", s_imm_long,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_MSG_TOOLONG) },
	{ "tagged_send", s_tagged_send,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION, KIWI_RC_UNEXPECTED_OP) },
	{ "stag_unknown", s_stag_unknown,
	  TERM(KIWI_TL_DDP, KIWI_DT_TAGGED, KIWI_DC_T_INVALID_STAG) },
	{ "to_wrap", s_to_wrap,
	  TERM(KIWI_TL_DDP, KIWI_DT_TAGGED, KIWI_DC_T_TO_WRAP) },
	{ "one_past_end", s_one_past,
	  TERM(KIWI_TL_DDP, KIWI_DT_TAGGED, KIWI_DC_T_BASE_BOUNDS) },
	{ "qn_bad", s_qn_bad,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_QN) },
	{ "msn_bad", s_msn_bad,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MSN_RANGE) },
	{ "mo_bad", s_mo_bad,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MO) },
	{ "read_huge", s_read_huge,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_PROTECTION, KIWI_RC_BASE_BOUNDS) },
	{ "read_msn", s_read_msn,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MSN_RANGE) },
	{ "read_sink_wrap", s_read_sink_wrap,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_PROTECTION, KIWI_RC_TO_WRAP) },
	{ "read_long", s_read_long,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MSN_NOBUF) },
	{ "atomic_req", s_atomic_req,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_PROTECTION, KIWI_RC_ACCESS_RIGHTS) },
	{ "atomic_stag", s_atomic_stag,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_PROTECTION, KIWI_RC_INVALID_STAG) },
	{ "atomic_long", s_atomic_long,
	  TERM(KIWI_TL_DDP, KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MSN_NOBUF) },
	{ "atomic_resp", s_atomic_resp,
	  TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION, KIWI_RC_UNEXPECTED_OP) },
	{ "marker_bad", s_marker_bad,
	  TERM(KIWI_TL_LLP, 0, KIWI_LC_MPA_MARKER) },
	{ "marker_first", s_marker_first,
	  TERM(KIWI_TL_LLP, 0, KIWI_LC_MPA_MARKER) },
	{ "term_bogus", s_term_bogus, GOT_EOF },
	{ "term_flood", s_term_flood, GOT_EOF },
	{ "byte_by_byte", NULL, 0 },
};

static const struct scenario *find_scenario(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	return NULL;
}

static int run_scenario(const struct scenario *sc)
{
	if (!sc->send)
		return s_byte_by_byte();
	sc->send();
	printf("# sent %s\n", sc->name);
	/* Without atomics the victim knows no atomic opcode at all. */
	if (!atomics_on && !strncmp(sc->name, "atomic_", 7))
		return expect_term(await_terminate(10000, NULL),
				   TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
					KIWI_RC_UNEXPECTED_OP));
	return expect_term(await_terminate(10000, NULL), sc->want);
}

/* ---- the MPA handshake, abused ---- */

/* Wait up to @secs for the victim to end the connection: 0 if it did. */
static int await_close(int secs)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b[256];
	int waited = 0;

	while (waited < secs * 10) {
		if (poll(&pfd, 1, 100) == 1) {
			ssize_t n = recv(fd, b, sizeof(b), 0);

			if (n <= 0) {
				printf("# connection ended after %.1f s (%s)\n",
				       waited / 10.0, n ? strerror(errno) : "EOF");
				return 0;
			}
			continue;	/* e.g. an MPA reject: read on */
		}
		waited++;
	}
	printf("fpdu_peer: FAILED the connection was still open after %d s\n",
	       secs);
	return 1;
}

static void send_mpa_req(uint16_t ird, uint16_t ord, bool p2p, uint16_t rtr,
			 size_t upto, uint8_t flags)
{
	uint8_t req[sizeof(struct kiwi_mpa_rr) + sizeof(struct kiwi_mpa_v2)];
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_v2 v2;
	size_t i;

	kiwi_mpa_build(&rr, true, KIWI_MPA_REV2,
		       KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH | flags, sizeof(v2));
	v2 = kiwi_mpa_v2_build(ird, ord, p2p, rtr);
	memcpy(req, &rr, sizeof(rr));
	memcpy(req + sizeof(rr), &v2, sizeof(v2));
	if (!upto) {
		send_all(req, sizeof(req));
		return;
	}
	for (i = 0; i < sizeof(req); i++) {	/* slowloris */
		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1)
			return;
		sleep(upto);
	}
}

/*
 * An accepting MPA reply within @secs to a request for markers (RFC 5044
 * 7.1: a peer's M is honoured), then our FIN and the victim's close.
 */
static int await_accept(int secs)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct kiwi_mpa_rr rr;
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(rr) && poll(&pfd, 1, secs * 1000) == 1) {
		n = recv(fd, (uint8_t *)&rr + got, sizeof(rr) - got, 0);
		if (n <= 0)
			break;
		got += n;
	}
	if (got < sizeof(rr) || memcmp(rr.key, KIWI_MPA_KEY_REP, 16) ||
	    (rr.flags & KIWI_MPA_FLAG_R)) {
		printf("fpdu_peer: FAILED no accepting MPA reply (%zu bytes, flags 0x%02x)\n",
		       got, got == sizeof(rr) ? rr.flags : 0);
		return 1;
	}
	printf("# accepting MPA reply to a request for markers (its M %d)\n",
	       !!(rr.flags & KIWI_MPA_FLAG_M));
	shutdown(fd, SHUT_WR);
	return await_close(secs);
}

/*
 * markers_ok (-M, the victim with mpa_markers=3): markers both ways.  A
 * WRITE of up to 3000 bytes with our markers, then a READ of it back,
 * whose responses come with the victim's markers, each checked: the
 * bytes must be ours and no TERMINATE may come.
 */
static int markers_ok(void)
{
	uint32_t len = v_len() < 3000 ? v_len() : 3000, i;
	int resp = 0, got;

	if (!mk_req || !mk_tx) {
		printf("fpdu_peer: FAILED markers not on both ways (asked %d, asked for %d)\n",
		       mk_req, mk_tx);
		return 1;
	}
	send_write(v_rkey(), v_addr(), len);
	send_read_req(1, len, v_rkey(), v_addr());
	got = await_terminate(3000, &resp);
	if (got != GOT_TIMEOUT || !resp || mk_bad) {
		printf("fpdu_peer: FAILED %s, %d READ responses\n",
		       got_str(got), resp);
		return 1;
	}
	for (i = 0; i < resp_len; i++)
		if (resp_data[i] != PAT_PEER) {
			printf("fpdu_peer: FAILED READ response byte %u is 0x%02x\n",
			       i, resp_data[i]);
			return 1;
		}
	printf("# WRITE %u bytes with markers, READ back in %d responses with markers: data and every marker right\n",
	       len, resp);
	return 0;
}

/*
 * interleave (the victim with -i 2 or more): FPDUs of different
 * messages interleaved, as hardware may send them -- the first half of
 * a WRITE (pattern 0xa1), a READ request on queue 1 for that half, the
 * WRITE's second half (0xb2, last), a READ request for the whole.  Both
 * READs must be answered, the last with both halves in place, and no
 * TERMINATE may come.
 */
static int interleave(void)
{
	uint32_t len = v_len() < 1024 ? v_len() : 1024, half = len / 2, i;
	int resp = 0, got;

	send_tagged(KIWI_OP_WRITE, false, v_rkey(), v_addr(), half, 0xa1);
	send_read_req(1, half, v_rkey(), v_addr());
	send_tagged(KIWI_OP_WRITE, true, v_rkey(), v_addr() + half,
		    len - half, 0xb2);
	send_read_req(2, len, v_rkey(), v_addr());
	got = await_terminate(3000, &resp);
	if (got != GOT_TIMEOUT || resp != 2 || resp_len != len) {
		printf("fpdu_peer: FAILED %s, %d READ responses, the last of %u bytes\n",
		       got_str(got), resp, resp_len);
		return 1;
	}
	for (i = 0; i < len; i++)
		if (resp_data[i] != (i < half ? 0xa1 : 0xb2)) {
			printf("fpdu_peer: FAILED READ response byte %u is 0x%02x\n",
			       i, resp_data[i]);
			return 1;
		}
	printf("# WRITE in two FPDUs with a READ request between them, READ back: %d READ responses, both halves in place\n",
	       resp);
	return 0;
}

/*
 * resp_interleave (the victim with -R): the victim READs PEER_READ_LEN
 * bytes at PEER_READ_STAG/PEER_READ_TO of ours and has two receives
 * posted.  Its READ Request is answered in two FPDUs (PAT_RESP1, then
 * PAT_RESP2, last), a SEND of PAT_SEND1 between them and one of
 * PAT_SEND2 after: a responder's READ Response and its own SENDs
 * interleaved, as hardware may send them.  No TERMINATE may come; the
 * victim checks what landed where.
 */
static int resp_interleave(void)
{
	const struct kiwi_read_req *r = (const void *)(rx_buf +
		sizeof(struct kiwi_hdr_untagged));
	uint32_t len, stag, size, half;
	uint64_t to;
	int op, got;

	if (speak_first())
		return 1;
	do
		op = recv_fpdu(10000, &len);
	while (op >= 0 && op != KIWI_OP_READ_REQ);
	if (op < 0 || len != sizeof(struct kiwi_hdr_untagged) - 2 + sizeof(*r)) {
		printf("fpdu_peer: FAILED no READ Request from the victim (%s)\n",
		       got_str(op));
		return 1;
	}
	stag = ntohl(r->sink_stag);
	to = be64toh(r->sink_to);
	size = ntohl(r->size);
	if (ntohl(r->src_stag) != PEER_READ_STAG ||
	    be64toh(r->src_to) != PEER_READ_TO || size != PEER_READ_LEN) {
		printf("fpdu_peer: FAILED READ Request for %u bytes at 0x%x/0x%llx\n",
		       size, ntohl(r->src_stag),
		       (unsigned long long)be64toh(r->src_to));
		return 1;
	}
	half = size / 2;
	send_tagged(KIWI_OP_READ_RESP, false, stag, to, half, PAT_RESP1);
	send_send_fill(KIWI_QN_SEND, 1, 0, PEER_SEND_LEN, PAT_SEND1);
	send_tagged(KIWI_OP_READ_RESP, true, stag, to + half, size - half,
		    PAT_RESP2);
	send_send_fill(KIWI_QN_SEND, 2, 0, PEER_SEND_LEN, PAT_SEND2);
	got = await_terminate(3000, NULL);
	if (got != GOT_TIMEOUT) {
		printf("fpdu_peer: FAILED after the interleaved READ Response and SENDs: %s\n",
		       got_str(got));
		return 1;
	}
	printf("# READ Response of %u bytes in two FPDUs, a SEND between them and one after: no TERMINATE\n",
	       size);
	return 0;
}

static void rst_close(void)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
	fd = -1;
}

/*
 * Handshake modes (the victim need not accept): silent (connect, send
 * nothing: closed by the MPA timeout), req_fin / req_rst (a valid
 * request, then FIN / RST), p2p_nortr (peer-to-peer with no RTR kind:
 * the accept fails and the connection is reset), markers (a request for
 * MPA markers: an accepting reply must come back, then our FIN and the
 * close), slowloris (the request
 * one byte per second).  -s: how long the victim may take to close.
 */
static int handshake_mode(const char *mode, int secs)
{
	if (!strcmp(mode, "silent"))
		return await_close(secs);
	if (!strcmp(mode, "slowloris")) {
		send_mpa_req(8, 8, false, 0, 1, 0);
		return await_close(secs);
	}
	if (!strcmp(mode, "p2p_nortr")) {
		send_mpa_req(8, 8, true, 0, 0, 0);
		return await_close(secs);
	}
	if (!strcmp(mode, "markers")) {
		send_mpa_req(8, 8, false, 0, 0, KIWI_MPA_FLAG_M);
		return await_accept(secs);
	}
	send_mpa_req(8, 8, false, 0, 0, 0);
	if (!strcmp(mode, "req_rst")) {
		rst_close();
		return 0;
	}
	shutdown(fd, SHUT_WR);		/* req_fin */
	return await_close(secs);
}

/*
 * flood: -n connections that send nothing, opened as fast as possible;
 * report how many the victim reset at once (beyond its half-open limit)
 * and how many it kept.  hold: -n such connections, kept until SIGUSR1,
 * then one byte on each (after the victim's module is gone, say).
 */
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static int many(struct sockaddr_in *sin, int count, bool hold)
{
	int *fds = calloc(count, sizeof(int)), i, open_n = 0, reset = 0;
	char b = 'x';

	for (i = 0; i < count; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 ||
		    connect(fds[i], (struct sockaddr *)sin, sizeof(*sin))) {
			printf("# connection %d: %s\n", i, strerror(errno));
			close(fds[i]);
			fds[i] = -1;
		}
	}
	sleep(2);
	for (i = 0; i < count; i++) {
		struct pollfd pfd = { .fd = fds[i], .events = POLLIN };

		if (fds[i] < 0)
			continue;
		if (poll(&pfd, 1, 0) == 1 && recv(fds[i], &b, 1, 0) <= 0)
			reset++;
		else
			open_n++;
	}
	printf("# %d connections: %d kept open, %d reset by the victim\n",
	       count, open_n, reset);
	if (hold) {
		printf("held %d\n", open_n);
		fflush(stdout);
		signal(SIGUSR1, on_usr1);
		while (!go)
			pause();
		for (i = 0; i < count; i++)
			if (fds[i] >= 0)
				send(fds[i], &b, 1, MSG_NOSIGNAL);
		printf("# one byte sent on each\n");
		sleep(1);
	}
	fflush(stdout);
	for (i = 0; i < count; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
}

/*
 * p2p_send_rtr, p2p_send_rtr_payload: peer-to-peer with a SEND RTR, the
 * only kind offered, so the victim must pick it.  Zero-length, the RTR
 * takes none of the victim's receives (it posts none): a READ after it
 * is served, and no TERMINATE comes.  With 16 bytes of payload it is no
 * RTR: TERMINATE MPA / no matching RTR (LLP, code 0x07 of RFC 6581).
 */
static int p2p_send_rtr(bool payload)
{
	int resp = 0, got;

	send_send(KIWI_QN_SEND, 1, 0, payload ? 16 : 0);
	printf("# sent the SEND RTR with %d bytes of payload\n",
	       payload ? 16 : 0);
	if (payload)
		return expect_term(await_terminate(5000, NULL),
				   TERM(KIWI_TL_LLP, 0,
					KIWI_LC_NO_MATCHING_RTR));
	send_read_req(1, 64, v_rkey(), v_addr());
	/* A TERMINATE for the RTR would come before the READ Response. */
	got = await_terminate(1000, &resp);
	if (got != GOT_TIMEOUT || resp != 1 || resp_len != 64 ||
	    resp_data[0] != PAT_VICTIM || resp_data[63] != PAT_VICTIM) {
		printf("fpdu_peer: FAILED after a zero-length SEND RTR: %s, %d READ responses of %u bytes\n",
		       got_str(got), resp, resp_len);
		return 1;
	}
	printf("# the zero-length SEND RTR took no receive; a READ after it was served\n");
	return 0;
}

/* ---- kiwi as MPA initiator, fpdu_peer the hostile responder (-l) ---- */

static struct kiwi_mpa_info kreq;	/* kiwi's MPA request */

/* -l: the listening socket. */
static int listen_on(const struct sockaddr_in *sin)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)sin, sizeof(*sin)) ||
	    listen(lfd, 1))
		die("listen");
	printf("# listening on port %d\n", ntohs(sin->sin_port));
	fflush(stdout);
	return lfd;
}

/*
 * Take one connection on @lfd (within 30 s) and read its MPA request,
 * which must be well formed.
 */
static void accept_one(int lfd)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint8_t pd[KIWI_MPA_MAX_PD];
	struct kiwi_mpa_rr rr;
	int one = 1;

	if (poll(&pfd, 1, 30000) != 1)
		die("no connection from kiwi within 30 s");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!recv_all(&rr, sizeof(rr), 10000))
		die("no MPA request");
	if (ntohs(rr.pd_len) > sizeof(pd) ||
	    !recv_all(pd, ntohs(rr.pd_len), 5000))
		die("short MPA request");
	if (kiwi_mpa_parse(&rr, pd, ntohs(rr.pd_len), true, &kreq))
		die("a malformed MPA request from kiwi");
	printf("# MPA request: rev %u crc %d markers %d enhanced %d p2p %d rtr offered 0x%x ird %u ord %u, %u bytes of private data\n",
	       kreq.rev, kreq.crc, kreq.markers, kreq.enhanced, kreq.p2p,
	       kreq.rtr, kreq.ird, kreq.ord, kreq.ulp_pd_len);
}

/* The RTR kind a friendly responder picks: kiwi's own preference. */
static uint16_t rtr_offered(void)
{
	static const uint16_t pref[] = { KIWI_MPA_RTR_WRITE,
					 KIWI_MPA_RTR_READ, KIWI_MPA_RTR_SEND };
	size_t i;

	for (i = 0; i < 3; i++)
		if (kreq.rtr & pref[i])
			return pref[i];
	return 0;
}

/* One that kiwi did not offer, or 0 if it offered all three. */
static uint16_t rtr_unoffered(void)
{
	static const uint16_t any[] = { KIWI_MPA_RTR_READ,
					KIWI_MPA_RTR_WRITE, KIWI_MPA_RTR_SEND };
	size_t i;

	for (i = 0; i < 3; i++)
		if (!(kreq.rtr & any[i]))
			return any[i];
	return 0;
}

#define REJECT_PD	"fpdu_peer_says_no"
#define REPLY_PD	"fpdu_peer reply"

/*
 * An MPA reply in @out: revision @rev, @flags (with KIWI_MPA_FLAG_ENH,
 * RFC 6581 data first: IRD/ORD 4 and, if @rtr, peer-to-peer with the
 * kinds @rtr), then the string @ulp.  Returns its length; callers spoil
 * the fields they abuse afterwards.
 */
static size_t build_reply(uint8_t *out, uint8_t rev, uint8_t flags,
			  uint16_t rtr, const char *ulp)
{
	struct kiwi_mpa_v2 v2 = kiwi_mpa_v2_build(4, 4, rtr != 0, rtr);
	bool enh = flags & KIWI_MPA_FLAG_ENH;
	size_t pd = (enh ? sizeof(v2) : 0) + strlen(ulp);
	size_t n = kiwi_mpa_build((struct kiwi_mpa_rr *)out, false, rev, flags,
				  pd);

	if (enh) {
		memcpy(out + n, &v2, sizeof(v2));
		n += sizeof(v2);
	}
	memcpy(out + n, ulp, strlen(ulp));
	return n + strlen(ulp);
}

/* kiwi's first FPDU must be the RTR of kind @rtr, of no payload. */
static int await_rtr(uint16_t rtr)
{
	static const struct { uint16_t kind; int op; } ops[] = {
		{ KIWI_MPA_RTR_WRITE, KIWI_OP_WRITE },
		{ KIWI_MPA_RTR_READ, KIWI_OP_READ_REQ },
		{ KIWI_MPA_RTR_SEND, KIWI_OP_SEND },
	};
	uint32_t len;
	int op, want = -1;
	size_t i;

	for (i = 0; i < 3; i++)
		if (ops[i].kind == rtr)
			want = ops[i].op;
	op = recv_fpdu(5000, &len);
	if (op != want || len + KIWI_MPA_HDR_LEN != kiwi_hdr_len(op)) {
		printf("fpdu_peer: FAILED the RTR: want opcode %d of no payload, got %s (opcode %d, ULPDU %u)\n",
		       want, op < 0 ? got_str(op) : "an FPDU", op, len);
		return 1;
	}
	printf("# kiwi's RTR: opcode %d, zero-length, as agreed\n", op);
	return 0;
}

/*
 * Answer a zero-length READ RTR (in rx_buf) with a READ Response to its
 * sink, of @len bytes: 0 is the right answer, more is not.
 */
static void answer_read_rtr(uint32_t len)
{
	struct kiwi_read_req r;

	memcpy(&r, rx_buf + sizeof(struct kiwi_hdr_untagged), sizeof(r));
	send_tagged(KIWI_OP_READ_RESP, true, ntohl(r.sink_stag),
		    be64toh(r.sink_to), len, PAT_PEER);
}

/*
 * A good reply (peer-to-peer if kiwi asked, the RTR kind kiwi prefers,
 * or with @rev1 an MPA revision 1 reply, which has no RTR at all): the
 * RTR agreed must come, and nothing else (but repeats of a WRITE RTR),
 * then our FIN and kiwi's close.
 */
static int rep_good(bool rev1, int secs)
{
	static uint8_t out[1024];
	uint16_t rtr = rev1 ? 0 : rtr_offered();
	uint32_t len;
	int got, repeats;

	if (rev1)
		send_all(out, build_reply(out, KIWI_MPA_REV1, KIWI_MPA_FLAG_C,
					  0, REPLY_PD));
	else
		send_all(out, build_reply(out, KIWI_MPA_REV2,
					  KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH,
					  rtr, REPLY_PD));
	printf("# sent a good MPA reply: revision %d, RTR 0x%x\n",
	       rev1 ? 1 : 2, rtr);
	connected = true;
	if (rtr && await_rtr(rtr))
		return 1;
	if (rtr == KIWI_MPA_RTR_READ)
		answer_read_rtr(0);
	got = recv_fpdu(1000, &len);
	/*
	 * While we stay silent, kiwi repeats a zero-length WRITE RTR up to
	 * 3 times (50, 300, 1500 ms after RTS: kmod/cm.c kiwi_ep_nudge(),
	 * for a responder that missed the first); nothing else may come.
	 */
	for (repeats = 0; rtr == KIWI_MPA_RTR_WRITE && repeats < 3 &&
	     got == KIWI_OP_WRITE &&
	     len + KIWI_MPA_HDR_LEN == kiwi_hdr_len(got); repeats++)
		got = recv_fpdu(2000, &len);
	if (repeats)
		printf("# kiwi repeated its zero-length WRITE RTR %d times\n",
		       repeats);
	if (got != GOT_TIMEOUT) {
		printf("fpdu_peer: FAILED after the %s, kiwi sent %s (opcode %d, ULPDU %u)\n",
		       rtr ? "RTR" : "revision 1 reply",
		       got < 0 ? got_str(got) : "an FPDU", got, len);
		return 1;
	}
	printf("# nothing more from kiwi; FIN\n");
	shutdown(fd, SHUT_WR);
	return await_close(secs);
}

/*
 * The READ RTR answered with a READ Response that carries data: no READ
 * of kiwi's is outstanding for it, so RDMAP unexpected opcode.
 */
static int rep_read_rtr_payload(void)
{
	static uint8_t out[1024];

	if (!(kreq.rtr & KIWI_MPA_RTR_READ)) {
		printf("fpdu_peer: FAILED kiwi did not offer a READ RTR (p2p_rtr)\n");
		return 1;
	}
	send_all(out, build_reply(out, KIWI_MPA_REV2,
				  KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH,
				  KIWI_MPA_RTR_READ, REPLY_PD));
	connected = true;
	if (await_rtr(KIWI_MPA_RTR_READ))
		return 1;
	answer_read_rtr(16);
	printf("# answered the READ RTR with 16 bytes\n");
	return expect_term(await_terminate(5000, NULL),
			   TERM(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
				KIWI_RC_UNEXPECTED_OP));
}

/*
 * Responder modes (-l): kiwi connects, fpdu_peer answers its MPA
 * request.  Every one but rep_ok, rep_rev1 and rep_read_rtr_payload
 * must make kiwi give up the connection: it resets it (or closes it)
 * within -s seconds.
 */
static int responder(const char *mode, int secs)
{
	static uint8_t out[2048];
	struct kiwi_mpa_rr *rr = (struct kiwi_mpa_rr *)out;
	uint8_t ce = KIWI_MPA_FLAG_C | KIWI_MPA_FLAG_ENH;
	uint16_t rtr = rtr_offered();
	size_t n;

	if (!strcmp(mode, "rep_ok"))
		return rep_good(false, secs);
	if (!strcmp(mode, "rep_rev1"))
		return rep_good(true, secs);
	if (!strcmp(mode, "rep_read_rtr_payload"))
		return rep_read_rtr_payload();
	if (!strcmp(mode, "rep_silent"))
		return await_close(secs);
	if (!strcmp(mode, "rep_rtr_unoffered")) {
		rtr = rtr_unoffered();
		if (!kreq.p2p || !rtr) {
			printf("fpdu_peer: FAILED kiwi offered every RTR kind or none (p2p_rtr, peer_to_peer)\n");
			return 1;
		}
	} else if (!strcmp(mode, "rep_rtr_two")) {
		rtr |= rtr_unoffered() ?: (rtr == KIWI_MPA_RTR_SEND ?
					   KIWI_MPA_RTR_WRITE :
					   KIWI_MPA_RTR_SEND);
	} else if (!strcmp(mode, "rep_reject")) {
		ce |= KIWI_MPA_FLAG_R;
	}
	n = build_reply(out, KIWI_MPA_REV2, ce, rtr,
			!strcmp(mode, "rep_reject") ? REJECT_PD : REPLY_PD);
	if (!strcmp(mode, "rep_bad_key"))
		memcpy(rr->key, KIWI_MPA_KEY_REQ, KIWI_MPA_KEY_LEN);
	else if (!strcmp(mode, "rep_bad_rev"))
		rr->rev = 3;
	else if (!strcmp(mode, "rep_enh_short")) {
		rr->pd_len = htons(2);	/* ENH, but no room for its data */
		n = sizeof(*rr) + 2;
	} else if (!strcmp(mode, "rep_pd_long")) {
		/* Beyond 512 bytes: refused on the header alone. */
		rr->pd_len = htons(KIWI_MPA_MAX_PD + 1);
		memset(out + n, 0xee, sizeof(*rr) + KIWI_MPA_MAX_PD + 1 - n);
		n = sizeof(*rr) + KIWI_MPA_MAX_PD + 1;
	} else if (!strcmp(mode, "rep_pd_short")) {
		/* More private data announced than ever comes. */
		rr->pd_len = htons(200);
	}
	send_all(out, n);
	printf("# sent %s: %zu bytes, flags 0x%02x rev %u private data length %u, RTR 0x%x\n",
	       mode, n, rr->flags, rr->rev, ntohs(rr->pd_len), rtr);
	return await_close(secs);
}

/*
 * -l -m MODE,MODE,...: one connection per mode, in turn, each ending in
 * "fpdu_peer: MODE ok" (or FAILED); "fpdu_peer: ok" if all were.
 */
static int responder_list(const struct sockaddr_in *sin, char *modes,
			  int secs)
{
	int lfd = listen_on(sin), bad = 0, rv;
	char *m, *save;

	for (m = strtok_r(modes, ",", &save); m;
	     m = strtok_r(NULL, ",", &save)) {
		printf("# == %s\n", m);
		accept_one(lfd);
		rv = responder(m, secs);
		printf("fpdu_peer: %s %s\n", m, rv ? "FAILED" : "ok");
		fflush(stdout);
		close(fd);
		fd = -1;
		connected = false;
		bad += rv;
	}
	close(lfd);
	if (!bad)
		printf("fpdu_peer: ok\n");
	return bad ? 1 : 0;
}

static const char *const rep_modes[] = {
	"rep_ok", "rep_rev1", "rep_read_rtr_payload", "rep_silent",
	"rep_rtr_unoffered", "rep_rtr_two", "rep_reject", "rep_bad_key",
	"rep_bad_rev", "rep_enh_short", "rep_pd_long", "rep_pd_short",
};

/* @m a comma list of rep_modes[] only. */
static bool is_responder_mode(const char *m)
{
	size_t len = strcspn(m, ","), i;

	for (i = 0; i < sizeof(rep_modes) / sizeof(rep_modes[0]); i++)
		if (strlen(rep_modes[i]) == len && !strncmp(m, rep_modes[i], len))
			return !m[len] || is_responder_mode(m + len + 1);
	return false;
}

static bool is_handshake_mode(const char *m)
{
	return !strcmp(m, "silent") || !strcmp(m, "req_fin") ||
	       !strcmp(m, "req_rst") || !strcmp(m, "p2p_nortr") ||
	       !strcmp(m, "slowloris") || !strcmp(m, "markers");
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *mode = NULL;
	int port = ABUSE_PORT, secs = 5, count = 8, c, rv;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct victim_info vi;
	bool ready = false, listen_mode = false, rep;
	int one = 1;

	while ((c = getopt(argc, argv, "a:p:m:s:n:rAMlH:")) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 's': secs = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 'r': ready = true; break;
		case 'A': atomics_on = true; break;
		case 'M': mk_req = true; break;
		case 'l': listen_mode = true; break;
		case 'H': hold_ms = atoi(optarg); break;
		default: mode = NULL; optind = argc; break;
		}
	}
	rep = mode && is_responder_mode(mode);
	if (!addr || !mode || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    rep != listen_mode ||
	    (strcmp(mode, "stall_write") && strcmp(mode, "read_flood") &&
	     strcmp(mode, "read_stop") && strcmp(mode, "atomic_stale") &&
	     strcmp(mode, "idle") &&
	     strcmp(mode, "flood") && strcmp(mode, "hold") &&
	     strcmp(mode, "markers_ok") && strcmp(mode, "interleave") &&
	     strcmp(mode, "resp_interleave") &&
	     strcmp(mode, "p2p_send_rtr") &&
	     strcmp(mode, "p2p_send_rtr_payload") && !rep &&
	     !is_handshake_mode(mode) && !find_scenario(mode))) {
		size_t i;

		fprintf(stderr, "usage: fpdu_peer -a ADDR [-p PORT] -m MODE [-s SECS] [-n COUNT] [-r] [-A] [-M] [-H MS]\n"
			"       fpdu_peer -l -a ADDR [-p PORT] -m rep_MODE[,rep_MODE...] [-s SECS]\n"
			"modes: silent req_fin req_rst p2p_nortr markers slowloris flood hold stall_write read_flood read_stop idle atomic_stale markers_ok interleave resp_interleave p2p_send_rtr p2p_send_rtr_payload");
		for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			fprintf(stderr, " %s", scenarios[i].name);
		fprintf(stderr, "\n-l modes:");
		for (i = 0; i < sizeof(rep_modes) / sizeof(rep_modes[0]); i++)
			fprintf(stderr, " %s", rep_modes[i]);
		fprintf(stderr, "\n");
		return 2;
	}
	kiwi_crc_tab_init(&crc_tab);
	sin.sin_port = htons(port);
	if (rep)
		return responder_list(&sin, strdup(mode), secs);
	if (!strcmp(mode, "flood") || !strcmp(mode, "hold"))
		return many(&sin, count, !strcmp(mode, "hold"));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!strcmp(mode, "read_stop")) {
		int small = 4096;	/* before connect(): the window scale */

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect");
	if (is_handshake_mode(mode)) {
		rv = handshake_mode(mode, secs);
		if (!rv)
			printf("fpdu_peer: ok\n");
		return rv;
	}
	vi = mpa_connect(8, 8, strncmp(mode, "p2p_send_rtr", 12) ? 0 :
			 KIWI_MPA_RTR_SEND);
	V = vi;
	connected = true;
	fflush(stdout);
	if (!strcmp(mode, "stall_write"))
		rv = stall_write(&vi, secs, ready);
	else if (!strcmp(mode, "read_flood"))
		rv = read_flood(&vi, count);
	else if (!strcmp(mode, "read_stop"))
		rv = read_stop(&vi, secs);
	else if (!strcmp(mode, "idle"))
		rv = idle(secs);
	else if (!strcmp(mode, "atomic_stale"))
		rv = atomic_stale(secs);
	else if (!strcmp(mode, "markers_ok"))
		rv = markers_ok();
	else if (!strcmp(mode, "interleave"))
		rv = interleave();
	else if (!strcmp(mode, "resp_interleave"))
		rv = resp_interleave();
	else if (!strncmp(mode, "p2p_send_rtr", 12))
		rv = p2p_send_rtr(!strcmp(mode, "p2p_send_rtr_payload"));
	else
		rv = run_scenario(find_scenario(mode));
	if (!rv)
		printf("fpdu_peer: ok\n");
	close(fd);
	return rv;
}
