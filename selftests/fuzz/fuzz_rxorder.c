// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fuzz_rxorder -- libFuzzer target for the receive ordering rules of
 * include/kiwi/rxorder.h (kiwi_order_begin() on every FPDU header
 * kmod/rx.c completes, kiwi_order_end() on every CRC that passes).
 *
 * Input: byte 0 sets the QP's facts -- bit 0 atomics agreed, bit 1 the
 * peer's RTR SEND owed, else bit 2 our RTR READ out (never both, as on
 * a real stream) -- and bit 7 the mode of the rest:
 *
 *  - 0: a recipe, 4 bytes per FPDU: opcode and L bit, and whether queue
 *    number, MSN and MO are the expected ones or off (byte 0); payload
 *    length (byte 1); what the rest of the receive path does with it
 *    (byte 2: no receive WQE to take, the SEND too long for its WQE,
 *    a later check or the CRC failing); a value for the fields that are
 *    off (byte 3).  Deep sequences are cheap this way.
 *  - 1: a raw FPDU stream, framed by include/kiwi/framer.h as rx.c
 *    frames it; each header the framer completes goes through the
 *    rules, each FPDU it ends through end().
 *
 * The check is differential: beside the state machine runs a model of
 * the receive path as it was before the rules moved to the header --
 * rx.c's own flags (in_msg, after_write, rtr_send, rtr_skip, rtr_resp,
 * the MO as bytes placed) and checks, written out again here.  Every
 * FPDU must get the same verdict (the same TERMINATE, or the same
 * action: place, open a receive WQE, RTR), every end the same outcome,
 * and between FPDUs the states must agree: the same MSNs, a WQE held
 * exactly when the model's in_msg is set (also once the stream died,
 * for the flush at release), after_write where it can still matter,
 * and the MO of an open SEND.  A refusal must leave the state as it
 * was.
 */
#include "fuzz.h"

#include <kiwi/framer.h>
#include <kiwi/rxorder.h>

/* rx.c's flags and checks before kiwi_rx_order (the model). */
struct model {
	uint32_t msn[KIWI_QN_COUNT];
	uint32_t msg_len;
	bool dead, in_msg, after_write, rtr_send, rtr_skip, rtr_resp;
	bool orq_skip, atomics;
};

struct verdict {
	enum kiwi_order_act act;
	uint8_t layer, etype, ecode;
};

static struct verdict refuse(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct verdict v = { KIWI_OA_REFUSE, layer, etype, ecode };

	return v;
}

static struct verdict take(enum kiwi_order_act a)
{
	struct verdict v = { a, 0, 0, 0 };

	return v;
}

static bool is_atomic(uint8_t op)
{
	return op == KIWI_OP_ATOMIC_REQ || op == KIWI_OP_ATOMIC_RESP;
}

static bool is_imm(uint8_t op)
{
	return op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE;
}

static bool is_send(uint8_t op)
{
	return op >= KIWI_OP_SEND && op <= KIWI_OP_SEND_SE_INV;
}

static uint32_t queue_of(uint8_t op)
{
	switch (op) {
	case KIWI_OP_READ_REQ:
		return KIWI_QN_READ_REQ;
	case KIWI_OP_TERMINATE:
		return KIWI_QN_TERMINATE;
	case KIWI_OP_ATOMIC_REQ:
		return KIWI_QN_ATOMIC_REQ;
	case KIWI_OP_ATOMIC_RESP:
		return KIWI_QN_ATOMIC_RESP;
	default:
		return KIWI_QN_SEND;
	}
}

/* The old header checks, up to what needs memory or queues. */
static struct verdict model_begin(struct model *m, const struct kiwi_rx_hdr *h)
{
	uint32_t qn = queue_of(h->op);

	if (is_atomic(h->op) && !m->atomics)
		return refuse(KIWI_TL_RDMAP, KIWI_RT_OPERATION,
			      KIWI_RC_UNEXPECTED_OP);
	if (h->op == KIWI_OP_WRITE)
		return take(KIWI_OA_GO);
	if (h->op == KIWI_OP_READ_RESP) {
		if (m->orq_skip && !h->len && h->last) {
			m->rtr_resp = true;
			return take(KIWI_OA_RTR);
		}
		return take(KIWI_OA_GO);
	}
	if (h->qn != qn)
		return refuse(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			      KIWI_DC_U_INVALID_QN);
	if (h->msn != m->msn[qn])
		return refuse(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			      KIWI_DC_U_INVALID_MSN_RANGE);
	if (h->mo != (is_send(h->op) && m->in_msg ? m->msg_len : 0))
		return refuse(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			      KIWI_DC_U_INVALID_MO);
	if (is_send(h->op)) {
		if (m->rtr_send) {
			if (h->len || !h->last)
				return refuse(KIWI_TL_LLP, 0,
					      KIWI_LC_NO_MATCHING_RTR);
			m->rtr_send = false;
			m->rtr_skip = true;
			return take(KIWI_OA_RTR);
		}
		return take(m->in_msg ? KIWI_OA_GO : KIWI_OA_OPEN);
	}
	if (is_imm(h->op)) {
		if (m->in_msg)
			return refuse(KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				      KIWI_DC_U_INVALID_MO);
		return take(KIWI_OA_OPEN);
	}
	return take(KIWI_OA_GO);
}

/* The old rx_end switch, as far as message progress goes. */
static enum kiwi_order_end model_end(struct model *m, uint8_t op, bool last,
				     uint32_t len)
{
	enum kiwi_order_end e;

	switch (op) {
	case KIWI_OP_WRITE:
		if (last)
			m->after_write = true;
		return last ? KIWI_OE_MSG : KIWI_OE_MORE;
	case KIWI_OP_IMM:
	case KIWI_OP_IMM_SE:
		e = m->after_write ? KIWI_OE_WRITE_IMM : KIWI_OE_MSG;
		m->msn[KIWI_QN_SEND]++;
		m->after_write = false;
		m->in_msg = false;
		return e;
	case KIWI_OP_READ_RESP:
		if (m->rtr_resp) {
			m->rtr_resp = false;
			m->orq_skip = false;
			return KIWI_OE_RTR;
		}
		return last ? KIWI_OE_MSG : KIWI_OE_MORE;
	case KIWI_OP_READ_REQ:
	case KIWI_OP_ATOMIC_REQ:
	case KIWI_OP_ATOMIC_RESP:
		m->msn[queue_of(op)]++;
		m->after_write = false;
		return KIWI_OE_MSG;
	case KIWI_OP_TERMINATE:
		m->dead = true;
		return KIWI_OE_MSG;
	default:
		if (m->rtr_skip) {
			m->rtr_skip = false;
			m->msn[KIWI_QN_SEND]++;
			return KIWI_OE_RTR;
		}
		m->msg_len += len;	/* placed */
		if (!last)
			return KIWI_OE_MORE;
		m->msn[KIWI_QN_SEND]++;
		m->after_write = false;
		m->in_msg = false;
		return KIWI_OE_MSG;
	}
}

struct run {
	struct model m;
	struct kiwi_rx_order o;
	unsigned int flags;
	bool stopped;		/* both dead: nothing more is parsed */
};

static void kill_both(struct run *r)
{
	r->m.dead = true;
	kiwi_order_kill(&r->o);
	r->stopped = true;
}

/* The two agree on everything that can still change an outcome. */
static void agree(const struct run *r)
{
	int i;

	if (r->m.dead) {
		FUZZ_ASSERT(kiwi_order_dead(&r->o));
		FUZZ_ASSERT(kiwi_order_held(&r->o) == r->m.in_msg);
		return;
	}
	FUZZ_ASSERT(!kiwi_order_dead(&r->o));
	for (i = 0; i < KIWI_QN_COUNT; i++)
		FUZZ_ASSERT(r->o.msn[i] == r->m.msn[i]);
	FUZZ_ASSERT(kiwi_order_held(&r->o) == r->m.in_msg);
	FUZZ_ASSERT((r->o.rtr == KIWI_RXR_SEND_DUE) == r->m.rtr_send);
	if (r->o.msg == KIWI_RXM_SEND)
		FUZZ_ASSERT(r->o.mo == r->m.msg_len);
	if (!r->m.in_msg) {
		FUZZ_ASSERT((r->o.msg == KIWI_RXM_AFTER_WRITE) ==
			    r->m.after_write);
	}
}

/*
 * One FPDU header: the verdicts must match.  @no_wqe: taking a receive
 * WQE fails; @too_long: the SEND is longer than its WQE; @later: a
 * check after these (STag, IRD, the body) refuses it.  Returns whether
 * the FPDU goes on to its payload.
 */
static bool header(struct run *r, const struct kiwi_rx_hdr *h, bool no_wqe,
		   bool too_long, bool later)
{
	struct kiwi_rx_order before = r->o;
	struct kiwi_order_step s = kiwi_order_begin(&r->o, h, r->flags);
	struct verdict v = model_begin(&r->m, h);

	FUZZ_ASSERT(s.act == v.act);
	FUZZ_ASSERT(s.v.ok == (s.act != KIWI_OA_REFUSE));
	FUZZ_ASSERT((s.why == KIWI_OW_OK) == s.v.ok);
	if (s.act == KIWI_OA_REFUSE) {
		FUZZ_ASSERT(s.v.layer == v.layer && s.v.etype == v.etype &&
			    s.v.ecode == v.ecode);
		FUZZ_ASSERT(!memcmp(&before, &r->o, sizeof(before)));
		kill_both(r);
		return false;
	}
	if (s.act == KIWI_OA_OPEN) {
		if (no_wqe) {
			kill_both(r);
			return false;
		}
		kiwi_order_opened(&r->o);
		r->m.in_msg = true;
		r->m.msg_len = 0;
	}
	/* rx.c's length check: only a SEND placed into its WQE. */
	if (too_long && is_send(h->op) && s.act != KIWI_OA_RTR) {
		kiwi_order_abort(&r->o);
		r->m.in_msg = false;
		kill_both(r);
		return false;
	}
	if (later) {
		kill_both(r);
		return false;
	}
	FUZZ_ASSERT(kiwi_order_held(&r->o) == r->m.in_msg);
	return true;
}

static void trailer(struct run *r, const struct kiwi_rx_hdr *h, bool crc_bad)
{
	enum kiwi_order_end e, me;

	if (crc_bad) {
		kill_both(r);
		return;
	}
	e = kiwi_order_end(&r->o);
	me = model_end(&r->m, h->op, h->last, h->len);
	FUZZ_ASSERT(e == me);
	if (h->op == KIWI_OP_TERMINATE) {
		kiwi_order_kill(&r->o);
		r->stopped = true;
	}
}

static void start(struct run *r, uint8_t b)
{
	memset(r, 0, sizeof(*r));
	r->flags = (b & 1 ? KIWI_ORDER_ATOMICS : 0);
	r->m.atomics = b & 1;
	r->m.rtr_send = b & 2;
	r->m.orq_skip = !(b & 2) && (b & 4);
	if (r->m.orq_skip)
		r->flags |= KIWI_ORDER_RTR_READ;
	for (int i = 0; i < KIWI_QN_COUNT; i++)
		r->m.msn[i] = 1;
	kiwi_order_init(&r->o, r->m.rtr_send);
	agree(r);
}

static void finish(struct run *r)
{
	bool held = r->m.in_msg;

	agree(r);
	FUZZ_ASSERT(kiwi_order_release(&r->o) == held);
	FUZZ_ASSERT(kiwi_order_dead(&r->o) && !kiwi_order_held(&r->o));
}

/* The transmit side clears nothing; the end of our RTR READ's answer does. */
static void sync_flags(struct run *r)
{
	if (!r->m.orq_skip)
		r->flags &= ~KIWI_ORDER_RTR_READ;
}

static const uint8_t valid_ops[] = {
	KIWI_OP_WRITE, KIWI_OP_READ_REQ, KIWI_OP_READ_RESP, KIWI_OP_SEND,
	KIWI_OP_SEND_INV, KIWI_OP_SEND_SE, KIWI_OP_SEND_SE_INV,
	KIWI_OP_TERMINATE, KIWI_OP_ATOMIC_REQ, KIWI_OP_ATOMIC_RESP,
	KIWI_OP_IMM, KIWI_OP_IMM_SE,
};

static void recipe(struct run *r, const uint8_t *p, size_t n)
{
	for (; n >= 4 && !r->stopped; p += 4, n -= 4) {
		uint8_t op = valid_ops[(p[0] & 0xf) % sizeof(valid_ops)];
		const struct kiwi_op_desc *d = kiwi_op(op);
		struct kiwi_rx_hdr h = {
			.op = op,
			/* the framer refuses a single-segment op without L */
			.last = d->single || (p[0] & 0x10),
			.len = p[1] & 0x80 ? 0 : p[1],
		};
		uint32_t qn = queue_of(op);

		if (!d->tagged) {
			h.qn = p[0] & 0x20 ? p[3] % 6 : qn;
			h.msn = r->m.msn[qn] + (p[0] & 0x40 ? p[3] % 3 - 1 : 0);
			h.mo = is_send(op) && r->m.in_msg ? r->m.msg_len : 0;
			if (p[0] & 0x80)
				h.mo += p[3];
		}
		if (header(r, &h, p[2] & 1, (p[2] & 6) == 6, (p[2] & 0x18) == 0x18))
			trailer(r, &h, (p[2] & 0xe0) == 0xe0);
		sync_flags(r);
		if (!r->stopped)
			agree(r);
	}
	finish(r);
}

static void stream(struct run *r, const uint8_t *s, size_t len, uint8_t chaos)
{
	struct kiwi_framer fr;
	struct kiwi_rx_hdr h = { 0 };
	size_t off = 0;
	unsigned int k = 0;

	kiwi_fr_init(&fr);
	while (off < len && !r->stopped) {
		uint32_t n = kiwi_fr_want(&fr, (uint32_t)(len - off));
		enum kiwi_fr_event ev;

		if (fr.phase == KIWI_FR_DEAD)
			break;
		if (fr.phase != KIWI_FR_DATA)
			memcpy(kiwi_fr_buf(&fr), s + off, n);
		off += n;
		ev = kiwi_fr_advance(&fr, n);
		if (ev == KIWI_FR_BAD_CTRL) {
			kill_both(r);
		} else if (ev == KIWI_FR_HDR_DONE) {
			bool bit = chaos >> (k++ & 7) & 1;

			h = kiwi_rx_hdr_of(&fr);
			/* WQEs always there; a chaos bit fails a later check. */
			header(r, &h, false, false, bit && (k & 8));
		} else if (ev == KIWI_FR_FPDU_DONE) {
			trailer(r, &h, false);
			sync_flags(r);
		}
		if (!r->stopped)
			agree(r);
	}
	finish(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r;

	if (size < 2 || size > (1 << 16))
		return 0;
	start(&r, data[0]);
	if (data[0] & 0x80)
		stream(&r, data + 2, size - 2, data[1]);
	else
		recipe(&r, data + 1, size - 1);
	return 0;
}
