/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: what may follow what on a receive stream -- the rules the
 * receive path (kmod/rx.c) applies to each FPDU's DDP/RDMAP header
 * before it looks anything up or places a byte, and the message
 * progress they depend on, as pure functions over struct kiwi_rx_order.
 *
 * The rules, in the order they are checked (the first broken one is
 * the TERMINATE sent):
 *
 *   1. an RFC 7306 atomic opcode on a QP that did not agree to atomics
 *      is one the QP does not know (RDMAP, remote operation, unexpected
 *      opcode);
 *   2. an untagged FPDU names its opcode's queue (the queue column of
 *      kiwi_op_descs; DDP untagged, invalid QN), that queue's next MSN
 *      (invalid MSN, out of range) and, as its MO, the bytes of its
 *      message already received: those of the open SEND for a SEND's
 *      later FPDU, 0 for everything else (invalid MO);
 *   3. while the peer's ready-to-receive (RFC 6581, a zero-length SEND)
 *      is owed, the first SEND must be it: zero bytes, last (LLP, no
 *      matching RTR);
 *   4. Immediate Data (RFC 7306) may not come inside a SEND (DDP
 *      untagged, invalid MO); right after a whole WRITE it is that
 *      WRITE's (RDMA WRITE with immediate), else a SEND with immediate.
 *
 * A zero-length, last READ Response while our own RTR READ is
 * outstanding answers it; any other must answer our oldest outstanding
 * READ, inside its sink (kiwi_order_read_resp(), which rx.c asks with
 * its send queue's oldest READ).  Checks that need the QP's memory or
 * queues (STags, the inbound READ queue, receive WQEs) stay in rx.c,
 * after these.
 *
 * Message progress is one state, msg:
 *
 *   IDLE         no message of the consumer's open
 *   AFTER_WRITE  none open, and the last to end was a whole WRITE:
 *                Immediate Data now completes it
 *   SEND         a SEND open: its receive WQE taken at its first FPDU,
 *                its MO so far in mo
 *   IMM          Immediate Data between its header and its CRC, its
 *                receive WQE taken (a SEND with immediate)
 *   WRITE_IMM    the same, completing the WRITE before it
 *   DEAD         the stream is over: nothing more is parsed
 *   DEAD_HELD    over, and a receive WQE taken for a message that did
 *                not end: it is flushed when the socket is released
 *
 * Transitions (kiwi_order_*):
 *
 *   opened()     IDLE -> SEND or IMM; AFTER_WRITE -> SEND or WRITE_IMM
 *                (the caller got a receive WQE for what begin() said
 *                OPEN to)
 *   end()        SEND -> IDLE (its last FPDU); IMM, WRITE_IMM -> IDLE;
 *                IDLE, AFTER_WRITE -> AFTER_WRITE (a WRITE's last FPDU);
 *                AFTER_WRITE -> IDLE (any other untagged message's end;
 *                a READ Response or the RTR leaves it);
 *                anything else stays
 *   abort()      SEND -> IDLE (its WQE completed in error, too short)
 *   kill()       SEND, IMM, WRITE_IMM -> DEAD_HELD; the others -> DEAD
 *   release()    every state -> DEAD (saying whether a WQE was held)
 *
 * The RTR handshake is a second, separate state, rtr, because kiwi has
 * always taken the peer's other messages (a WRITE, a READ Request,
 * Immediate Data) ahead of an owed RTR SEND and kept what they did to
 * msg across it; folding it into msg would double every state:
 *
 *   NONE         nothing owed
 *   SEND_DUE     the peer's RTR SEND is owed (set at connection)
 *   SEND         the current FPDU is that RTR: it takes no receive WQE
 *                and completes nothing; its end advances queue 0's MSN
 *   READ_RESP    the current FPDU answers our own zero-length RTR READ
 *                (set at connection when our RTR is that READ)
 *
 *   begin(): SEND_DUE -> SEND (a good RTR); NONE -> READ_RESP
 *   end():   SEND, READ_RESP -> NONE
 *
 * The two RTRs never meet on one stream: only the initiator sends one,
 * and only the responder waits for the peer's.
 *
 * The last FPDU of every untagged message advances its queue's MSN at
 * end(), from the same queue column begin() checks: the RTR SEND's too,
 * and a TERMINATE's (the stream ends there, so that one is never read).
 *
 * The unit test (selftests/wire/rxorder.c) has a case for every verdict
 * and transition; the fuzz target (selftests/fuzz/fuzz_rxorder.c) runs
 * framed streams through it against a model.  Compiles in the kernel and
 * in user space, like iwarp.h.
 */
#ifndef KIWI_RXORDER_H
#define KIWI_RXORDER_H

#include "framer.h"
#include "rdmap.h"

enum kiwi_rx_msg {
	KIWI_RXM_IDLE,
	KIWI_RXM_AFTER_WRITE,
	KIWI_RXM_SEND,
	KIWI_RXM_IMM,
	KIWI_RXM_WRITE_IMM,
	KIWI_RXM_DEAD,
	KIWI_RXM_DEAD_HELD,
};

enum kiwi_rx_rtr {
	KIWI_RXR_NONE,
	KIWI_RXR_SEND_DUE,
	KIWI_RXR_SEND,
	KIWI_RXR_READ_RESP,
};

struct kiwi_rx_order {
	__u32 msn[KIWI_QN_COUNT];	/* next MSN expected per queue */
	__u32 mo;			/* bytes of the open SEND so far */
	enum kiwi_rx_msg msg;
	enum kiwi_rx_rtr rtr;
	/* The FPDU between begin() and end(): */
	__u8 op;
	bool last;
	__u32 len;			/* its payload bytes */
};

/* What the DDP/RDMAP header of an FPDU says, in host order. */
struct kiwi_rx_hdr {
	__u8 op;
	bool last;
	__u32 len;		/* payload bytes after the header */
	__u32 qn;		/* untagged only: queue, MSN, MO */
	__u32 msn;
	__u32 mo;
};

/* The header the framer just completed (KIWI_FR_HDR_DONE). */
static inline struct kiwi_rx_hdr kiwi_rx_hdr_of(const struct kiwi_framer *fr)
{
	struct kiwi_rx_hdr h = {
		.op = fr->op, .last = fr->last, .len = fr->data_rem,
	};

	if (!kiwi_op_tagged(fr->op)) {
		h.qn = kiwi_be32(fr->hdr.u.qn);
		h.msn = kiwi_be32(fr->hdr.u.msn);
		h.mo = kiwi_be32(fr->hdr.u.mo);
	}
	return h;
}

/* Flags for kiwi_order_begin(): facts of the QP, not of the stream. */
#define KIWI_ORDER_ATOMICS	0x1	/* the QP agreed to RFC 7306 atomics */
#define KIWI_ORDER_RTR_READ	0x2	/* our zero-length RTR READ is out */

/* Which rule an FPDU broke (for tests and logs; v carries the code). */
enum kiwi_order_why {
	KIWI_OW_OK = 0,
	KIWI_OW_NO_ATOMICS,	/* rule 1 */
	KIWI_OW_QN,		/* rule 2 */
	KIWI_OW_MSN,
	KIWI_OW_MO,
	KIWI_OW_RTR,		/* rule 3 */
	KIWI_OW_IMM_IN_SEND,	/* rule 4 */
};

/* What the receive path does with an FPDU the rules let through. */
enum kiwi_order_act {
	KIWI_OA_REFUSE,		/* TERMINATE with v; the stream ends */
	KIWI_OA_GO,		/* place it: nothing to open */
	KIWI_OA_OPEN,		/* take a receive WQE, then kiwi_order_opened() */
	KIWI_OA_RTR,		/* the RTR, or the answer to ours: no WQE */
};

struct kiwi_order_step {
	enum kiwi_order_act act;
	enum kiwi_order_why why;
	struct kiwi_verdict v;
};

/* What an FPDU that passed its CRC ended (kiwi_order_end()). */
enum kiwi_order_end {
	KIWI_OE_MORE,		/* nothing: more FPDUs of its message come */
	KIWI_OE_MSG,		/* its message (a SEND with immediate too) */
	KIWI_OE_WRITE_IMM,	/* Immediate Data completing a WRITE */
	KIWI_OE_RTR,		/* the RTR: nothing to deliver */
};

/*
 * An untagged SEND of any kind: queue 0, several segments possible
 * (the holes in the table, opcodes 8 and 9, are nothing).
 */
static inline bool kiwi_op_is_send(__u8 op)
{
	const struct kiwi_op_desc *d = kiwi_op(op);

	return d->hdr_len && !d->tagged && d->qn == KIWI_QN_SEND && !d->imm;
}

/* A new connection: every queue expects MSN 1 (RFC 5040 5.1), nothing open. */
static inline void kiwi_order_init(struct kiwi_rx_order *o, bool rtr_send_due)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < KIWI_QN_COUNT; i++)
		o->msn[i] = 1;
	o->msg = KIWI_RXM_IDLE;
	o->rtr = rtr_send_due ? KIWI_RXR_SEND_DUE : KIWI_RXR_NONE;
}

static inline bool kiwi_order_dead(const struct kiwi_rx_order *o)
{
	return o->msg == KIWI_RXM_DEAD || o->msg == KIWI_RXM_DEAD_HELD;
}

/* A receive WQE is taken for a message that has not ended. */
static inline bool kiwi_order_held(const struct kiwi_rx_order *o)
{
	return o->msg == KIWI_RXM_SEND || o->msg == KIWI_RXM_IMM ||
	       o->msg == KIWI_RXM_WRITE_IMM || o->msg == KIWI_RXM_DEAD_HELD;
}

static inline struct kiwi_order_step
kiwi_order_refuse(enum kiwi_order_why why, __u8 layer, __u8 etype,
		  __u8 ecode)
{
	struct kiwi_order_step s = {
		.act = KIWI_OA_REFUSE, .why = why,
		.v = kiwi_verdict_term(layer, etype, ecode),
	};

	return s;
}

static inline struct kiwi_order_step kiwi_order_take(enum kiwi_order_act a)
{
	struct kiwi_order_step s = { .act = a, .v = { .ok = true } };

	return s;
}

/*
 * The header @h of the next FPDU is complete (never called once the
 * stream is dead): check it against the rules above.  A refusal changes
 * nothing (the caller kills the stream); otherwise the FPDU is recorded
 * for kiwi_order_end() and, for the RTR, rtr moves.
 */
static inline struct kiwi_order_step
kiwi_order_begin(struct kiwi_rx_order *o, const struct kiwi_rx_hdr *h,
		 unsigned int flags)
{
	const struct kiwi_op_desc *d = kiwi_op(h->op);
	bool send = kiwi_op_is_send(h->op);
	__u32 mo = send && o->msg == KIWI_RXM_SEND ? o->mo : 0;

	if (d->atomic && !(flags & KIWI_ORDER_ATOMICS))
		return kiwi_order_refuse(KIWI_OW_NO_ATOMICS, KIWI_TL_RDMAP,
					 KIWI_RT_OPERATION,
					 KIWI_RC_UNEXPECTED_OP);
	if (!d->tagged) {
		if (h->qn != d->qn)
			return kiwi_order_refuse(KIWI_OW_QN, KIWI_TL_DDP,
						 KIWI_DT_UNTAGGED,
						 KIWI_DC_U_INVALID_QN);
		if (h->msn != o->msn[d->qn])
			return kiwi_order_refuse(KIWI_OW_MSN, KIWI_TL_DDP,
						 KIWI_DT_UNTAGGED,
						 KIWI_DC_U_INVALID_MSN_RANGE);
		if (h->mo != mo)
			return kiwi_order_refuse(KIWI_OW_MO, KIWI_TL_DDP,
						 KIWI_DT_UNTAGGED,
						 KIWI_DC_U_INVALID_MO);
		if (send && o->rtr == KIWI_RXR_SEND_DUE &&
		    (h->len || !h->last))
			return kiwi_order_refuse(KIWI_OW_RTR, KIWI_TL_LLP, 0,
						 KIWI_LC_NO_MATCHING_RTR);
		if (d->imm && o->msg == KIWI_RXM_SEND)
			return kiwi_order_refuse(KIWI_OW_IMM_IN_SEND,
						 KIWI_TL_DDP, KIWI_DT_UNTAGGED,
						 KIWI_DC_U_INVALID_MO);
	}
	o->op = h->op;
	o->last = h->last;
	o->len = h->len;
	if (send && o->rtr == KIWI_RXR_SEND_DUE) {
		o->rtr = KIWI_RXR_SEND;
		return kiwi_order_take(KIWI_OA_RTR);
	}
	if (h->op == KIWI_OP_READ_RESP && (flags & KIWI_ORDER_RTR_READ) &&
	    !h->len && h->last) {
		o->rtr = KIWI_RXR_READ_RESP;
		return kiwi_order_take(KIWI_OA_RTR);
	}
	if (d->imm || (send && o->msg != KIWI_RXM_SEND))
		return kiwi_order_take(KIWI_OA_OPEN);
	return kiwi_order_take(KIWI_OA_GO);
}

/*
 * A READ Response other than the RTR's must answer our oldest
 * outstanding READ (@have: one is, and no atomic is due before it),
 * name its sink STag and land inside its sink: [@to, @to + @len) within
 * the @sink_len bytes from @sink_to.  Anything else is unexpected
 * (RDMAP, remote operation, unexpected opcode).  rx.c asks this after
 * begin() said GO, with its send queue's oldest READ; the region check
 * of the sink comes after it.
 */
static inline struct kiwi_verdict
kiwi_order_read_resp(bool have, __u32 sink_stag, __u64 sink_to,
		     __u32 sink_len, __u32 stag, __u64 to, __u32 len)
{
	if (!have || stag != sink_stag || to < sink_to ||
	    to - sink_to + len > sink_len)
		return kiwi_verdict_term(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
					 KIWI_RC_UNEXPECTED_OP);
	return (struct kiwi_verdict){ .ok = true };
}

/* The receive WQE the current FPDU's OPEN asked for is taken. */
static inline void kiwi_order_opened(struct kiwi_rx_order *o)
{
	bool after_write = o->msg == KIWI_RXM_AFTER_WRITE;

	if (kiwi_op(o->op)->imm)
		o->msg = after_write ? KIWI_RXM_WRITE_IMM : KIWI_RXM_IMM;
	else
		o->msg = KIWI_RXM_SEND;
	o->mo = 0;
}

/*
 * The current FPDU passed its CRC (its payload all placed): advance
 * the state, and say what it ended.
 */
static inline enum kiwi_order_end kiwi_order_end(struct kiwi_rx_order *o)
{
	const struct kiwi_op_desc *d = kiwi_op(o->op);
	enum kiwi_order_end e = KIWI_OE_MSG;

	if (o->rtr == KIWI_RXR_SEND || o->rtr == KIWI_RXR_READ_RESP) {
		if (o->rtr == KIWI_RXR_SEND)
			o->msn[KIWI_QN_SEND]++;
		o->rtr = KIWI_RXR_NONE;
		return KIWI_OE_RTR;
	}
	if (d->tagged) {
		if (!o->last)
			return KIWI_OE_MORE;
		if (o->op == KIWI_OP_WRITE && (o->msg == KIWI_RXM_IDLE ||
					       o->msg == KIWI_RXM_AFTER_WRITE))
			o->msg = KIWI_RXM_AFTER_WRITE;
		return KIWI_OE_MSG;
	}
	if (o->msg == KIWI_RXM_SEND && kiwi_op_is_send(o->op))
		o->mo += o->len;
	if (!o->last)
		return KIWI_OE_MORE;
	o->msn[d->qn]++;
	switch (o->msg) {
	case KIWI_RXM_WRITE_IMM:
		e = KIWI_OE_WRITE_IMM;
		o->msg = KIWI_RXM_IDLE;
		break;
	case KIWI_RXM_IMM:
	case KIWI_RXM_AFTER_WRITE:
		o->msg = KIWI_RXM_IDLE;
		break;
	case KIWI_RXM_SEND:
		if (kiwi_op_is_send(o->op))
			o->msg = KIWI_RXM_IDLE;
		break;
	default:
		break;
	}
	return e;
}

/* The open SEND's receive WQE was completed in error: none is held. */
static inline void kiwi_order_abort(struct kiwi_rx_order *o)
{
	if (o->msg == KIWI_RXM_SEND)
		o->msg = KIWI_RXM_IDLE;
}

/* The stream is over: nothing more is parsed. */
static inline void kiwi_order_kill(struct kiwi_rx_order *o)
{
	o->msg = kiwi_order_held(o) ? KIWI_RXM_DEAD_HELD : KIWI_RXM_DEAD;
}

/*
 * The socket is released: the stream is over for good.  True if a
 * receive WQE was still held (the caller flushes it).
 */
static inline bool kiwi_order_release(struct kiwi_rx_order *o)
{
	bool held = kiwi_order_held(o);

	o->msg = KIWI_RXM_DEAD;
	return held;
}

#endif /* KIWI_RXORDER_H */
