/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the MPA FPDU framer (RFC 5044 section 4) -- where one FPDU ends
 * and the next begins in a TCP byte stream that arrives in pieces of any
 * size.
 *
 * An FPDU is a 2-byte ULPDU length, the ULPDU (the DDP/RDMAP header and
 * the payload), 0-3 pad bytes and a 4-byte CRC.  The framer walks a
 * stream of them through four phases:
 *
 *   CTRL   the first four bytes (MPA length, DDP/RDMAP control): once
 *          in, kiwi_check_ctrl() validates them and sizes the FPDU;
 *   HDR    the rest of the opcode's DDP/RDMAP header;
 *   DATA   the payload, which the caller places where it belongs;
 *   TRAIL  pad and CRC;
 *
 * and DEAD once a control word was refused (nothing after it is framed).
 * It only counts: the caller moves the bytes -- header and trailer bytes
 * into the framer's buffers (kiwi_fr_buf()), payload to its final place
 * -- and computes the CRC in the same pass as the copy, so the framer
 * needs no access to the stream.  The receive path (kmod/rx.c) drives it
 * over socket buffers; the unit tests and the fuzz target
 * (selftests/fuzz/fuzz_framer.c, which checks that every chunking of a
 * stream yields the same FPDUs) over plain memory.
 *
 * One step for a whole FPDU: walking the four phases costs the kernel a
 * separate skb walk (skb_copy_bits() or skb_seq_read()) for each, four
 * per FPDU where one would do; for a small FPDU that overhead outweighs
 * the bytes copied (issue 32 found kiwi's receive actor at about twice
 * siw's time per 8-byte message).  When the framer is at an FPDU
 * boundary and the next bytes of the stream lie in one piece
 * of memory, kiwi_fr_whole_len() says whether that piece holds the whole
 * FPDU; if so the caller takes it in one pass: kiwi_fr_take_hdr() copies
 * and checks the header, the caller places the payload that follows it
 * and calls kiwi_fr_advance(fr, fr->data_rem) as usual, and
 * kiwi_fr_take_trail() takes pad and CRC -- with the CRC computed in one
 * call over the bytes before the CRC field, since they are contiguous.
 * Otherwise (the FPDU straddles pieces) the stepwise path goes on as
 * before.  The two must give identical results: the same events, the
 * same header and trailer bytes, the same framer state after each event
 * and the same refusal; take_hdr and take_trail are written in terms of
 * kiwi_fr_advance() so that they cannot drift apart, and
 * selftests/wire/framer.c (every split point of a stream) and the fuzz
 * target check it.  The one-step path is for streams without MPA
 * markers only: a marker may fall anywhere inside an FPDU, where it is
 * neither header nor payload but is covered by the CRC, and the framer
 * never sees markers (kmod/rx.c takes them out between framer steps,
 * with markers.h) -- so with markers the kernel always goes stepwise.
 *
 * Compiles in the kernel and in user space, like iwarp.h.
 */
#ifndef KIWI_FRAMER_H
#define KIWI_FRAMER_H

#include "iwarp.h"

enum kiwi_fr_phase {
	KIWI_FR_CTRL,
	KIWI_FR_HDR,
	KIWI_FR_DATA,
	KIWI_FR_TRAIL,
	KIWI_FR_DEAD,
};

/* What kiwi_fr_advance() completed. */
enum kiwi_fr_event {
	KIWI_FR_MORE,		/* nothing yet: keep feeding */
	KIWI_FR_HDR_DONE,	/* the whole DDP/RDMAP header is in fr->hdr */
	KIWI_FR_FPDU_DONE,	/* pad and CRC are in: check, deliver */
	KIWI_FR_BAD_CTRL,	/* control word refused: fr->bad says why */
};

struct kiwi_framer {
	union {
		struct kiwi_ctrl ctrl;
		struct kiwi_hdr_tagged t;
		struct kiwi_hdr_untagged u;
		/* the longest header: an RFC 7306 Atomic Request */
		__u8 raw[sizeof(struct kiwi_hdr_untagged) +
			 sizeof(struct kiwi_atomic_req)];
	} hdr;
	__u8 trail[KIWI_MPA_CRC_LEN + 3];	/* pad + CRC */
	enum kiwi_fr_phase phase;
	__u32 got;		/* bytes of the header or trailer held */
	__u32 hdr_len;		/* of this opcode, MPA length included */
	__u32 data_rem;		/* payload bytes still to come */
	__u32 trail_len;	/* pad + CRC */
	__u8 op;
	bool last;		/* DDP L bit */
	struct kiwi_ctrl_check bad;	/* with KIWI_FR_BAD_CTRL */
};

static inline void kiwi_fr_init(struct kiwi_framer *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->phase = KIWI_FR_CTRL;
}

/* How many of the next @avail stream bytes the current phase takes. */
static inline __u32 kiwi_fr_want(const struct kiwi_framer *fr, __u32 avail)
{
	__u32 need;

	switch (fr->phase) {
	case KIWI_FR_CTRL:
		need = sizeof(struct kiwi_ctrl) - fr->got;
		break;
	case KIWI_FR_HDR:
		need = fr->hdr_len - fr->got;
		break;
	case KIWI_FR_DATA:
		need = fr->data_rem;
		break;
	case KIWI_FR_TRAIL:
		need = fr->trail_len - fr->got;
		break;
	default:
		return 0;
	}
	return avail < need ? avail : need;
}

/* Where the header or trailer bytes kiwi_fr_want() asked for go. */
static inline __u8 *kiwi_fr_buf(struct kiwi_framer *fr)
{
	return fr->phase == KIWI_FR_TRAIL ? fr->trail + fr->got :
					    fr->hdr.raw + fr->got;
}

/*
 * The sizes of an FPDU, from its MPA length field: the bytes up to the
 * pad (the length field and the ULPDU) ...
 */
static inline __u32 kiwi_fr_fpdu_len(const struct kiwi_ctrl *c)
{
	return (__u32)kiwi_be16(c->mpa_len) + KIWI_MPA_HDR_LEN;
}

/* ... and what follows them: pad and CRC. */
static inline __u32 kiwi_fr_trail_of(__u32 fpdu)
{
	return kiwi_mpa_pad(fpdu) + KIWI_MPA_CRC_LEN;
}

/* The control word is in: check it and size the FPDU. */
static inline enum kiwi_fr_event kiwi_fr_ctrl(struct kiwi_framer *fr)
{
	struct kiwi_ctrl_check c = kiwi_check_ctrl(&fr->hdr.ctrl);
	__u32 fpdu = kiwi_fr_fpdu_len(&fr->hdr.ctrl);

	if (!c.ok) {
		fr->bad = c;
		fr->phase = KIWI_FR_DEAD;
		return KIWI_FR_BAD_CTRL;
	}
	/* kiwi_check_ctrl() guarantees hdr_len <= fpdu and a known op. */
	fr->op = c.op;
	fr->last = kiwi_be16(fr->hdr.ctrl.ddp_rdmap) & KIWI_DDP_LAST;
	fr->hdr_len = c.hdr_len;
	fr->data_rem = fpdu - c.hdr_len;
	fr->trail_len = kiwi_fr_trail_of(fpdu);
	fr->phase = KIWI_FR_HDR;
	return KIWI_FR_MORE;
}

/*
 * @n bytes of the current phase were consumed (n <= kiwi_fr_want()):
 * copied to kiwi_fr_buf(), or placed if payload.  Moves to the next
 * phase when this one is complete and says what that completed.
 */
static inline enum kiwi_fr_event kiwi_fr_advance(struct kiwi_framer *fr,
						 __u32 n)
{
	switch (fr->phase) {
	case KIWI_FR_CTRL:
		fr->got += n;
		if (fr->got < sizeof(struct kiwi_ctrl))
			return KIWI_FR_MORE;
		return kiwi_fr_ctrl(fr);
	case KIWI_FR_HDR:
		fr->got += n;
		if (fr->got < fr->hdr_len)
			return KIWI_FR_MORE;
		fr->got = 0;
		fr->phase = fr->data_rem ? KIWI_FR_DATA : KIWI_FR_TRAIL;
		return KIWI_FR_HDR_DONE;
	case KIWI_FR_DATA:
		fr->data_rem -= n;
		if (!fr->data_rem)
			fr->phase = KIWI_FR_TRAIL;
		return KIWI_FR_MORE;
	case KIWI_FR_TRAIL:
		fr->got += n;
		if (fr->got < fr->trail_len)
			return KIWI_FR_MORE;
		fr->got = 0;
		fr->phase = KIWI_FR_CTRL;
		return KIWI_FR_FPDU_DONE;
	default:
		return KIWI_FR_MORE;
	}
}

/*
 * The one-step path (see the top of the file).  The framer is at an FPDU
 * boundary (phase CTRL, nothing of it held) and the next @avail stream
 * bytes are at @p: the whole FPDU's length (MPA length field, ULPDU, pad,
 * CRC) if all of it is among them, else 0 -- then the caller goes on
 * stepwise, the framer untouched.  Sized as kiwi_fr_ctrl() sizes it;
 * reads nothing of @p past @avail, and nothing but the control word.
 * A nonzero length says nothing of the control word's validity:
 * kiwi_fr_take_hdr() checks it.
 */
static inline __u32 kiwi_fr_whole_len(const __u8 *p, __u32 avail)
{
	struct kiwi_ctrl c;
	__u32 fpdu;

	if (avail < sizeof(c))
		return 0;
	memcpy(&c, p, sizeof(c));
	fpdu = kiwi_fr_fpdu_len(&c);
	fpdu += kiwi_fr_trail_of(fpdu);
	return fpdu <= avail ? fpdu : 0;
}

/*
 * After kiwi_fr_whole_len(@p, ...) said the FPDU at @p is whole: take its
 * control word, check it (as kiwi_fr_advance() does), then the rest of
 * its header -- fr->hdr_len bytes from @p in all, never more than the
 * FPDU (kiwi_check_ctrl() sees to it).  Returns what kiwi_fr_advance()
 * would have returned for the last of those bytes: KIWI_FR_BAD_CTRL
 * (fr->bad set, phase DEAD: only the four control bytes were used) or
 * KIWI_FR_HDR_DONE with the framer in the same state as after a
 * stepwise header; the payload (fr->data_rem bytes after the header) is
 * then the caller's, with kiwi_fr_advance() as usual.  Called anywhere
 * but at an FPDU boundary it takes nothing and returns KIWI_FR_MORE.
 */
static inline enum kiwi_fr_event kiwi_fr_take_hdr(struct kiwi_framer *fr,
						  const __u8 *p)
{
	enum kiwi_fr_event ev;
	__u32 n;

	if (fr->phase != KIWI_FR_CTRL || fr->got)
		return KIWI_FR_MORE;
	memcpy(fr->hdr.raw, p, sizeof(struct kiwi_ctrl));
	ev = kiwi_fr_advance(fr, sizeof(struct kiwi_ctrl));
	if (ev != KIWI_FR_MORE)
		return ev;		/* refused */
	n = kiwi_fr_want(fr, fr->hdr_len);	/* the rest of the header */
	memcpy(kiwi_fr_buf(fr), p + fr->got, n);
	return kiwi_fr_advance(fr, n);
}

/*
 * The payload is placed (phase TRAIL, nothing of the trailer held) and
 * @p points at the pad: take pad and CRC, fr->trail_len bytes.  Returns
 * KIWI_FR_FPDU_DONE with the framer as a stepwise trailer leaves it;
 * in any other phase it takes nothing and returns KIWI_FR_MORE.
 */
static inline enum kiwi_fr_event kiwi_fr_take_trail(struct kiwi_framer *fr,
						    const __u8 *p)
{
	if (fr->phase != KIWI_FR_TRAIL || fr->got)
		return KIWI_FR_MORE;
	memcpy(fr->trail, p, fr->trail_len);
	return kiwi_fr_advance(fr, fr->trail_len);
}

/* After KIWI_FR_FPDU_DONE: the pad bytes (covered by the CRC) ... */
static inline __u32 kiwi_fr_pad_len(const struct kiwi_framer *fr)
{
	return fr->trail_len - KIWI_MPA_CRC_LEN;
}

/* ... and the CRC field as sent (its value, CRC32c being little-endian). */
static inline __u32 kiwi_fr_crc(const struct kiwi_framer *fr)
{
	const __u8 *p = fr->trail + kiwi_fr_pad_len(fr);

	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 |
	       (__u32)p[3] << 24;
}

#endif /* KIWI_FRAMER_H */
