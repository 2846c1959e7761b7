/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: MPA markers (RFC 5044 sections 4.2, 4.3, 4.5, 7.1) -- where they
 * fall in the stream, what they say, the MULPDU they leave, and the
 * linear-buffer versions of inserting and removing them that the host
 * tests and the fuzzer run.
 *
 * A marker is 4 octets: 16 reserved bits (0) and FPDUPTR, the number of
 * octets from the first octet of the current FPDU (its ULPDU_Length
 * field) to the first octet of the marker; 0 when the marker falls
 * between two FPDUs, where it belongs to the one after it.  Markers are
 * per direction: the M bit in an MPA request asks the responder to send
 * them, the M bit in a reply asks the initiator to (RFC 5044 7.1.2).
 * The first marker is the first octet of Full Operation Phase in that
 * direction, the others every 512 octets of the stream after it, so a
 * stream position counted from there modulo 512 is all that is needed
 * (and a 32-bit count wraps exactly as TCP sequence numbers do).
 *
 * FPDUs are multiples of 4 octets and so are markers: relative to the
 * start of Full Operation Phase every FPDU starts 4-aligned, and a
 * marker never splits a pad or a CRC field.  It can fall anywhere else
 * on a 4-octet boundary: inside the header, inside the payload, right
 * after the pad (then the FPDU's CRC covers it), or between FPDUs.
 *
 * Compiles in the kernel and in user space, like iwarp.h.
 */
#ifndef KIWI_MARKERS_H
#define KIWI_MARKERS_H

#include "iwarp.h"

#define KIWI_MK_INTERVAL	512
#define KIWI_MK_LEN		4

/* Octets from stream position @pos to the start of the next marker. */
static inline __u32 kiwi_mk_until(__u32 pos)
{
	return (KIWI_MK_INTERVAL - pos % KIWI_MK_INTERVAL) % KIWI_MK_INTERVAL;
}

/* Is stream position @pos inside a marker?  Octets of it left, or 0. */
static inline __u32 kiwi_mk_inside(__u32 pos)
{
	__u32 o = pos % KIWI_MK_INTERVAL;

	return o < KIWI_MK_LEN ? KIWI_MK_LEN - o : 0;
}

/*
 * RFC 5044 4.5: the largest ULPDU that fits in one segment of @emss
 * octets when markers are in use (worst case of markers), or 0 if none.
 */
static inline __u32 kiwi_mk_mulpdu(__u32 emss)
{
	__u32 over = 6 + KIWI_MK_LEN * ((emss + KIWI_MK_INTERVAL - 1) /
					KIWI_MK_INTERVAL) + emss % 4;

	return emss > over ? emss - over : 0;
}

/* The same without markers. */
static inline __u32 kiwi_mpa_mulpdu(__u32 emss)
{
	__u32 over = 6 + emss % 4;

	return emss > over ? emss - over : 0;
}

static inline void kiwi_mk_build(__u8 *m, __u32 fpduptr)
{
	m[0] = 0;
	m[1] = 0;
	m[2] = (fpduptr >> 8) & 0xff;
	m[3] = fpduptr & 0xfc;	/* low two bits: always 0 on transmit */
}

/*
 * A received marker against the FPDUPTR the framing says it must hold:
 * the receiver treats the low two bits as 0 and ignores the reserved
 * half.  Pointers are compared modulo 2^16 (their width).
 */
static inline bool kiwi_mk_valid(const __u8 *m, __u32 expect)
{
	__u32 ptr = ((__u32)m[2] << 8 | m[3]) & 0xfffc;

	return ptr == (expect & 0xfffc);
}

/* ---- transmit: where each marker goes and what it says ---- */

struct kiwi_mk_tx {
	__u32 pos;		/* stream octets since Full Operation Phase */
	__u32 fpdu_off;		/* octets of the current FPDU so far */
};

static inline void kiwi_mk_tx_init(struct kiwi_mk_tx *t)
{
	t->pos = 0;
	t->fpdu_off = 0;
}

/* A new FPDU starts with the next octet. */
static inline void kiwi_mk_tx_fpdu(struct kiwi_mk_tx *t)
{
	t->fpdu_off = 0;
}

/*
 * Octets that may be sent before a marker is due (0: it is due now).
 * A marker that falls between FPDUs is sent when the next FPDU's first
 * octet is, with FPDUPTR 0: it belongs to that FPDU.
 */
static inline __u32 kiwi_mk_tx_room(const struct kiwi_mk_tx *t)
{
	return kiwi_mk_until(t->pos);
}

/*
 * Build the marker that is due into @m and count it as sent.  FPDUPTR
 * counts from the FPDU's length field: a marker before it (between
 * FPDUs, FPDUPTR 0) is not one of the octets it counts.
 */
static inline void kiwi_mk_tx_marker(struct kiwi_mk_tx *t, __u8 *m)
{
	kiwi_mk_build(m, t->fpdu_off);
	t->pos += KIWI_MK_LEN;
	if (t->fpdu_off)
		t->fpdu_off += KIWI_MK_LEN;
}

/* @n octets (not markers) of the current FPDU were sent. */
static inline void kiwi_mk_tx_sent(struct kiwi_mk_tx *t, __u32 n)
{
	t->pos += n;
	t->fpdu_off += n;
}

/*
 * Copy @len octets of the current FPDU from @in to @out with the markers
 * that fall among them; a marker due right after them is added only if
 * @tail (the one between an FPDU's pad and its CRC).  Returns the octets
 * written, or -1 if @cap is too small (then @t is unchanged).
 */
static inline int kiwi_mk_insert(struct kiwi_mk_tx *t, __u8 *out, __u32 cap,
				 const __u8 *in, __u32 len, bool tail)
{
	struct kiwi_mk_tx save = *t;
	__u32 w = 0;

	for (;;) {
		__u32 n = kiwi_mk_tx_room(t);

		if (!n && (len || tail)) {
			if (cap - w < KIWI_MK_LEN)
				goto full;
			kiwi_mk_tx_marker(t, out + w);
			w += KIWI_MK_LEN;
			n = kiwi_mk_tx_room(t);
		}
		if (!len)
			break;
		n = n < len ? n : len;
		if (cap - w < n)
			goto full;
		memcpy(out + w, in, n);
		kiwi_mk_tx_sent(t, n);
		in += n;
		len -= n;
		w += n;
		if (!len && !tail)
			break;
	}
	return (int)w;
full:
	*t = save;
	return -1;
}

/* ---- receive: taking markers out of the stream ---- */

struct kiwi_mk_rx {
	__u32 pos;		/* stream octets since Full Operation Phase */
	__u32 fpdu_start;	/* pos of the current FPDU's first octet */
	__u8 m[KIWI_MK_LEN];	/* the marker being read */
};

static inline void kiwi_mk_rx_init(struct kiwi_mk_rx *r)
{
	memset(r, 0, sizeof(*r));
}

/*
 * Of the next @avail octets, how many are stream data before a marker
 * (returns > 0, *@marker false) or marker octets (*@marker true).
 */
static inline __u32 kiwi_mk_rx_next(const struct kiwi_mk_rx *r, __u32 avail,
				    bool *marker)
{
	__u32 in = kiwi_mk_inside(r->pos);
	__u32 n;

	*marker = in != 0;
	n = in ? in : kiwi_mk_until(r->pos);
	return avail < n ? avail : n;
}

/* The next data octet is the first of a new FPDU. */
static inline void kiwi_mk_rx_fpdu(struct kiwi_mk_rx *r)
{
	r->fpdu_start = r->pos;
}

/* @n data octets were consumed. */
static inline void kiwi_mk_rx_data(struct kiwi_mk_rx *r, __u32 n)
{
	r->pos += n;
}

/* Where the next @n marker octets go (n <= what kiwi_mk_rx_next gave). */
static inline __u8 *kiwi_mk_rx_buf(struct kiwi_mk_rx *r)
{
	return r->m + r->pos % KIWI_MK_INTERVAL;
}

/* @n marker octets were stored; true when the marker is complete. */
static inline bool kiwi_mk_rx_got(struct kiwi_mk_rx *r, __u32 n)
{
	r->pos += n;
	return r->pos % KIWI_MK_INTERVAL == KIWI_MK_LEN;
}

/*
 * The marker just completed: is its FPDUPTR consistent with the framing?
 * @between: no octet of the next FPDU has been read yet (the marker
 * falls between FPDUs and must say 0).
 */
static inline bool kiwi_mk_rx_check(const struct kiwi_mk_rx *r, bool between)
{
	__u32 start = r->pos - KIWI_MK_LEN;

	return kiwi_mk_valid(r->m, between ? 0 : start - r->fpdu_start);
}

/*
 * A self-contained MPA receiver over a linear buffer (host tests, the
 * fuzzer): removes the markers of @len octets of FPDU stream, checking
 * each against the FPDU lengths, and writes the FPDUs without markers to
 * @out (room for @len octets).  @r and @fpdu_rem (octets of the current
 * FPDU still to come, 0 between FPDUs; @hdr holds a length field split
 * by the buffer's end) carry the state across calls.  Returns the
 * octets written, or -1 at the first inconsistent marker.
 */
struct kiwi_mk_strip {
	struct kiwi_mk_rx r;
	__u32 fpdu_rem;
	__u8 lenf[2];		/* ULPDU_Length octets */
	__u32 lenf_got;
};

static inline void kiwi_mk_strip_init(struct kiwi_mk_strip *s)
{
	memset(s, 0, sizeof(*s));
}

static inline int kiwi_mk_strip(struct kiwi_mk_strip *s, __u8 *out,
				const __u8 *in, __u32 len)
{
	__u32 w = 0;

	while (len) {
		bool marker;
		__u32 n = kiwi_mk_rx_next(&s->r, len, &marker);

		if (marker) {
			memcpy(kiwi_mk_rx_buf(&s->r), in, n);
			if (kiwi_mk_rx_got(&s->r, n) &&
			    !kiwi_mk_rx_check(&s->r, !s->fpdu_rem &&
						      !s->lenf_got))
				return -1;
		} else {
			if (!s->fpdu_rem) {
				/* the length field, octet by octet */
				n = 1;
				if (!s->lenf_got)
					kiwi_mk_rx_fpdu(&s->r);
				s->lenf[s->lenf_got++] = *in;
				if (s->lenf_got == 2) {
					__u32 ul = (__u32)s->lenf[0] << 8 |
						   s->lenf[1];

					s->fpdu_rem = kiwi_mpa_pad(ul + 2) + ul +
						      KIWI_MPA_CRC_LEN;
					s->lenf_got = 0;
				}
			} else {
				n = n < s->fpdu_rem ? n : s->fpdu_rem;
				s->fpdu_rem -= n;
			}
			memcpy(out + w, in, n);
			w += n;
			kiwi_mk_rx_data(&s->r, n);
		}
		in += n;
		len -= n;
	}
	return (int)w;
}

#endif /* KIWI_MARKERS_H */
