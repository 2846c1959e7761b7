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

/* The control word is in: check it and size the FPDU. */
static inline enum kiwi_fr_event kiwi_fr_ctrl(struct kiwi_framer *fr)
{
	struct kiwi_ctrl_check c = kiwi_check_ctrl(&fr->hdr.ctrl);
	__u32 fpdu = (__u32)kiwi_be16(fr->hdr.ctrl.mpa_len) +
		     KIWI_MPA_HDR_LEN;

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
	fr->trail_len = kiwi_mpa_pad(fpdu) + KIWI_MPA_CRC_LEN;
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
