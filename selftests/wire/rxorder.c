// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The receive ordering rules of include/kiwi/rxorder.h, in user space:
 * every verdict with the TERMINATE code kmod/rx.c sends for it, the
 * order the rules are checked in, and every transition of the message
 * state (msg) and the RTR state (rtr), driven as rx.c drives them:
 * begin() at each header, opened() once a receive WQE is taken, end()
 * once the CRC is in, kill() and release() when the stream ends.
 */
#include "../kiwi_test.h"
#include <kiwi/rxorder.h>

static struct kiwi_rx_hdr U(__u8 op, bool last, __u32 len, __u32 qn,
			    __u32 msn, __u32 mo)
{
	struct kiwi_rx_hdr h = {
		.op = op, .last = last, .len = len, .qn = qn, .msn = msn,
		.mo = mo,
	};

	return h;
}

static struct kiwi_rx_hdr T(__u8 op, bool last, __u32 len)
{
	struct kiwi_rx_hdr h = { .op = op, .last = last, .len = len };

	return h;
}

static struct kiwi_rx_order fresh(bool rtr_send)
{
	struct kiwi_rx_order o;

	kiwi_order_init(&o, rtr_send);
	return o;
}

static bool refused(struct kiwi_order_step s, enum kiwi_order_why why,
		    __u8 layer, __u8 etype, __u8 ecode)
{
	return s.act == KIWI_OA_REFUSE && s.why == why && !s.v.ok &&
	       s.v.layer == layer && s.v.etype == etype &&
	       s.v.ecode == ecode;
}

/* One FPDU accepted with @act and ended: what end() said. */
static int run(struct kiwi_rx_order *o, struct kiwi_rx_hdr h,
	       unsigned int flags, enum kiwi_order_act act)
{
	struct kiwi_order_step s = kiwi_order_begin(o, &h, flags);

	if (s.act != act || !s.v.ok || s.why != KIWI_OW_OK)
		return -1;
	if (act == KIWI_OA_OPEN)
		kiwi_order_opened(o);
	return kiwi_order_end(o);
}

TEST(init)
{
	struct kiwi_rx_order o = fresh(false);
	int i;

	for (i = 0; i < KIWI_QN_COUNT; i++)
		EXPECT_EQ(o.msn[i], 1U);
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	EXPECT_EQ(o.rtr, KIWI_RXR_NONE);
	EXPECT_FALSE(kiwi_order_dead(&o));
	EXPECT_FALSE(kiwi_order_held(&o));
	o = fresh(true);
	EXPECT_EQ(o.rtr, KIWI_RXR_SEND_DUE);
}

TEST(table_columns)
{
	int op;

	/* What begin() and end() read: the queue column and two more. */
	EXPECT_TRUE(kiwi_op(KIWI_OP_ATOMIC_REQ)->atomic);
	EXPECT_TRUE(kiwi_op(KIWI_OP_ATOMIC_RESP)->atomic);
	EXPECT_TRUE(kiwi_op(KIWI_OP_IMM)->imm);
	EXPECT_TRUE(kiwi_op(KIWI_OP_IMM_SE)->imm);
	for (op = 0; op < KIWI_OP_MAX; op++) {
		const struct kiwi_op_desc *d = kiwi_op(op);
		bool send = op >= KIWI_OP_SEND && op <= KIWI_OP_SEND_SE_INV;

		EXPECT_EQ(kiwi_op_is_send(op), send);
		if (op != KIWI_OP_ATOMIC_REQ && op != KIWI_OP_ATOMIC_RESP)
			EXPECT_FALSE(d->atomic);
		if (op != KIWI_OP_IMM && op != KIWI_OP_IMM_SE)
			EXPECT_FALSE(d->imm);
	}
}

TEST(atomics_refused_without_agreement)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_ATOMIC_REQ, true, 0,
				 KIWI_QN_ATOMIC_REQ, 1, 0);
	struct kiwi_order_step s = kiwi_order_begin(&o, &h, 0);

	EXPECT_TRUE(refused(s, KIWI_OW_NO_ATOMICS, KIWI_TL_RDMAP,
			    KIWI_RT_OPERATION, KIWI_RC_UNEXPECTED_OP));
	h = U(KIWI_OP_ATOMIC_RESP, true, 0, KIWI_QN_ATOMIC_RESP, 1, 0);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_TRUE(refused(s, KIWI_OW_NO_ATOMICS, KIWI_TL_RDMAP,
			    KIWI_RT_OPERATION, KIWI_RC_UNEXPECTED_OP));
	/* Checked before the queue: a wrong QN still reads as unknown. */
	h = U(KIWI_OP_ATOMIC_REQ, true, 0, 9, 7, 3);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_NO_ATOMICS);
	/* With atomics: taken, each on its own queue. */
	EXPECT_EQ(run(&o, U(KIWI_OP_ATOMIC_REQ, true, 0, KIWI_QN_ATOMIC_REQ,
			    1, 0), KIWI_ORDER_ATOMICS, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(run(&o, U(KIWI_OP_ATOMIC_RESP, true, 0,
			    KIWI_QN_ATOMIC_RESP, 1, 0), KIWI_ORDER_ATOMICS,
		      KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(o.msn[KIWI_QN_ATOMIC_REQ], 2U);
	EXPECT_EQ(o.msn[KIWI_QN_ATOMIC_RESP], 2U);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 1U);
	EXPECT_EQ(o.msn[KIWI_QN_READ_REQ], 1U);
}

TEST(queue_number)
{
	static const struct { __u8 op; __u32 qn; } ops[] = {
		{ KIWI_OP_SEND, KIWI_QN_SEND },
		{ KIWI_OP_SEND_INV, KIWI_QN_SEND },
		{ KIWI_OP_SEND_SE, KIWI_QN_SEND },
		{ KIWI_OP_SEND_SE_INV, KIWI_QN_SEND },
		{ KIWI_OP_IMM, KIWI_QN_SEND },
		{ KIWI_OP_IMM_SE, KIWI_QN_SEND },
		{ KIWI_OP_READ_REQ, KIWI_QN_READ_REQ },
		{ KIWI_OP_TERMINATE, KIWI_QN_TERMINATE },
		{ KIWI_OP_ATOMIC_REQ, KIWI_QN_ATOMIC_REQ },
		{ KIWI_OP_ATOMIC_RESP, KIWI_QN_ATOMIC_RESP },
	};
	unsigned int i, qn;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (qn = 0; qn <= KIWI_QN_COUNT; qn++) {
			struct kiwi_rx_order o = fresh(false);
			struct kiwi_rx_hdr h = U(ops[i].op, true, 0, qn, 1, 0);
			struct kiwi_order_step s =
				kiwi_order_begin(&o, &h, KIWI_ORDER_ATOMICS);

			if (qn == ops[i].qn) {
				EXPECT_NE(s.act, KIWI_OA_REFUSE);
				continue;
			}
			EXPECT_TRUE(refused(s, KIWI_OW_QN, KIWI_TL_DDP,
					    KIWI_DT_UNTAGGED,
					    KIWI_DC_U_INVALID_QN));
			/* Checked before MSN and MO. */
			h.msn = 99;
			h.mo = 99;
			s = kiwi_order_begin(&o, &h, KIWI_ORDER_ATOMICS);
			EXPECT_EQ(s.why, KIWI_OW_QN);
		}
	}
}

TEST(tagged_ignore_queue_fields)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_WRITE, true, 10, 7, 7, 7);

	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).act, KIWI_OA_GO);
	h.op = KIWI_OP_READ_RESP;
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).act, KIWI_OA_GO);
}

TEST(msn_per_queue)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_READ_REQ, true, 0,
				 KIWI_QN_READ_REQ, 2, 0);
	struct kiwi_order_step s = kiwi_order_begin(&o, &h, 0);

	EXPECT_TRUE(refused(s, KIWI_OW_MSN, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			    KIWI_DC_U_INVALID_MSN_RANGE));
	h.msn = 0;
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_MSN);
	/* Checked before MO. */
	h.mo = 5;
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_MSN);
	EXPECT_EQ(run(&o, U(KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ,
			    1, 0), 0, KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(run(&o, U(KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ,
			    2, 0), 0, KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(o.msn[KIWI_QN_READ_REQ], 3U);
	/* Queue 0 counts on its own. */
	h = U(KIWI_OP_SEND, true, 0, KIWI_QN_SEND, 2, 0);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_MSN);
	/* A TERMINATE is checked the same way. */
	h = U(KIWI_OP_TERMINATE, true, 0, KIWI_QN_TERMINATE, 3, 0);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_MSN);
	EXPECT_EQ(run(&o, U(KIWI_OP_TERMINATE, true, 0, KIWI_QN_TERMINATE,
			    1, 0), 0, KIWI_OA_GO), KIWI_OE_MSG);
}

TEST(send_in_segments)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_SEND, false, 100, KIWI_QN_SEND, 1, 5);
	struct kiwi_order_step s = kiwi_order_begin(&o, &h, 0);

	/* A new SEND starts at MO 0. */
	EXPECT_TRUE(refused(s, KIWI_OW_MO, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			    KIWI_DC_U_INVALID_MO));
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	/* First FPDU: open it (a receive WQE). */
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND, false, 100, KIWI_QN_SEND, 1, 0), 0,
		      KIWI_OA_OPEN), KIWI_OE_MORE);
	EXPECT_EQ(o.msg, KIWI_RXM_SEND);
	EXPECT_TRUE(kiwi_order_held(&o));
	EXPECT_EQ(o.mo, 100U);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 1U);
	/* The next must continue at 100, same MSN. */
	h = U(KIWI_OP_SEND, false, 50, KIWI_QN_SEND, 1, 99);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_TRUE(refused(s, KIWI_OW_MO, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
			    KIWI_DC_U_INVALID_MO));
	h.mo = 0;
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).why, KIWI_OW_MO);
	h.msn = 2;
	h.mo = 100;
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).why, KIWI_OW_MSN);
	/* Any SEND opcode continues it (rx.c never did check that). */
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND_SE, false, 50, KIWI_QN_SEND, 1, 100),
		      0, KIWI_OA_GO), KIWI_OE_MORE);
	EXPECT_EQ(o.mo, 150U);
	/* Untagged messages of other queues between: their MO is 0. */
	EXPECT_EQ(run(&o, U(KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ, 1,
			    0), 0, KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_SEND);
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND, true, 0, KIWI_QN_SEND, 1, 150), 0,
		      KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	EXPECT_FALSE(kiwi_order_held(&o));
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 2U);
	/* The next SEND opens again at MO 0. */
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND_INV, true, 7, KIWI_QN_SEND, 2, 0),
		      0, KIWI_OA_OPEN), KIWI_OE_MSG);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 3U);
}

TEST(imm_after_write_is_the_writes)
{
	struct kiwi_rx_order o = fresh(false);

	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, false, 10), 0, KIWI_OA_GO),
		  KIWI_OE_MORE);
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, true, 10), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_AFTER_WRITE);
	/* A READ Response between leaves it so. */
	EXPECT_EQ(run(&o, T(KIWI_OP_READ_RESP, true, 4), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_AFTER_WRITE);
	EXPECT_EQ(run(&o, U(KIWI_OP_IMM, true, 0, KIWI_QN_SEND, 1, 0), 0,
		      KIWI_OA_OPEN), KIWI_OE_WRITE_IMM);
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 2U);
	/* With nothing before it, a SEND with immediate. */
	EXPECT_EQ(run(&o, U(KIWI_OP_IMM_SE, true, 0, KIWI_QN_SEND, 2, 0), 0,
		      KIWI_OA_OPEN), KIWI_OE_MSG);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 3U);
}

TEST(imm_state_between_header_and_crc)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_IMM, true, 0, KIWI_QN_SEND, 1, 0);

	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).act, KIWI_OA_OPEN);
	/* No receive WQE yet: nothing held. */
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	kiwi_order_opened(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_IMM);
	EXPECT_TRUE(kiwi_order_held(&o));
	kiwi_order_kill(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD_HELD);

	o = fresh(false);
	run(&o, T(KIWI_OP_WRITE, true, 0), 0, KIWI_OA_GO);
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).act, KIWI_OA_OPEN);
	kiwi_order_opened(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_WRITE_IMM);
	EXPECT_TRUE(kiwi_order_held(&o));
}

TEST(untagged_ends_after_write)
{
	static const struct { __u8 op; __u32 qn; } ops[] = {
		{ KIWI_OP_READ_REQ, KIWI_QN_READ_REQ },
		{ KIWI_OP_ATOMIC_REQ, KIWI_QN_ATOMIC_REQ },
		{ KIWI_OP_ATOMIC_RESP, KIWI_QN_ATOMIC_RESP },
		{ KIWI_OP_SEND, KIWI_QN_SEND },
	};
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct kiwi_rx_order o = fresh(false);
		enum kiwi_order_act a = ops[i].op == KIWI_OP_SEND ?
					KIWI_OA_OPEN : KIWI_OA_GO;

		run(&o, T(KIWI_OP_WRITE, true, 8), 0, KIWI_OA_GO);
		EXPECT_EQ(run(&o, U(ops[i].op, true, 0, ops[i].qn, 1, 0),
			      KIWI_ORDER_ATOMICS, a), KIWI_OE_MSG);
		EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
		/* Immediate Data now is a SEND's. */
		EXPECT_EQ(run(&o, U(KIWI_OP_IMM, true, 0, KIWI_QN_SEND,
				    o.msn[KIWI_QN_SEND], 0), 0, KIWI_OA_OPEN),
			  KIWI_OE_MSG);
	}
}

TEST(imm_inside_a_send_refused)
{
	struct kiwi_rx_order o = fresh(false);
	struct kiwi_rx_hdr h = U(KIWI_OP_IMM, true, 0, KIWI_QN_SEND, 1, 0);
	struct kiwi_order_step s;

	run(&o, U(KIWI_OP_SEND, false, 8, KIWI_QN_SEND, 1, 0), 0,
	    KIWI_OA_OPEN);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_TRUE(refused(s, KIWI_OW_IMM_IN_SEND, KIWI_TL_DDP,
			    KIWI_DT_UNTAGGED, KIWI_DC_U_INVALID_MO));
	/* The MO rule comes first: Immediate Data is always at MO 0. */
	h.mo = 8;
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).why, KIWI_OW_MO);
	EXPECT_EQ(o.msg, KIWI_RXM_SEND);
}

TEST(write_inside_a_send)
{
	struct kiwi_rx_order o = fresh(false);

	run(&o, U(KIWI_OP_SEND, false, 8, KIWI_QN_SEND, 1, 0), 0,
	    KIWI_OA_OPEN);
	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, true, 8), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_SEND);
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND, true, 0, KIWI_QN_SEND, 1, 8), 0,
		      KIWI_OA_GO), KIWI_OE_MSG);
	/* The SEND's end leaves no WRITE to attach Immediate Data to. */
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
}

TEST(rtr_send_first)
{
	struct kiwi_rx_order o = fresh(true);
	struct kiwi_rx_hdr h = U(KIWI_OP_SEND, true, 1, KIWI_QN_SEND, 1, 0);
	struct kiwi_order_step s = kiwi_order_begin(&o, &h, 0);

	EXPECT_TRUE(refused(s, KIWI_OW_RTR, KIWI_TL_LLP, 0,
			    KIWI_LC_NO_MATCHING_RTR));
	h = U(KIWI_OP_SEND, false, 0, KIWI_QN_SEND, 1, 0);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.why, KIWI_OW_RTR);
	/* The queue rules come first. */
	h = U(KIWI_OP_SEND, true, 1, KIWI_QN_SEND, 2, 0);
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).why, KIWI_OW_MSN);
	EXPECT_EQ(o.rtr, KIWI_RXR_SEND_DUE);
	/* Anything but a SEND may come ahead of it, and keeps its effect. */
	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, true, 4), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(run(&o, U(KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ, 1,
			    0), 0, KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, true, 4), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(o.rtr, KIWI_RXR_SEND_DUE);
	/* The RTR: no WQE, nothing to deliver, MSN 1 used. */
	h = U(KIWI_OP_SEND_SE, true, 0, KIWI_QN_SEND, 1, 0);
	s = kiwi_order_begin(&o, &h, 0);
	EXPECT_EQ(s.act, KIWI_OA_RTR);
	EXPECT_EQ(o.rtr, KIWI_RXR_SEND);
	EXPECT_FALSE(kiwi_order_held(&o));
	EXPECT_EQ(kiwi_order_end(&o), KIWI_OE_RTR);
	EXPECT_EQ(o.rtr, KIWI_RXR_NONE);
	EXPECT_EQ(o.msn[KIWI_QN_SEND], 2U);
	/* The WRITE before it still takes Immediate Data. */
	EXPECT_EQ(o.msg, KIWI_RXM_AFTER_WRITE);
	/* And the next SEND is an ordinary one. */
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND, true, 3, KIWI_QN_SEND, 2, 0), 0,
		      KIWI_OA_OPEN), KIWI_OE_MSG);
}

TEST(rtr_send_not_owed_for_imm)
{
	struct kiwi_rx_order o = fresh(true);

	/* Immediate Data ahead of the RTR is taken as such. */
	EXPECT_EQ(run(&o, U(KIWI_OP_IMM, true, 0, KIWI_QN_SEND, 1, 0), 0,
		      KIWI_OA_OPEN), KIWI_OE_MSG);
	EXPECT_EQ(o.rtr, KIWI_RXR_SEND_DUE);
	EXPECT_EQ(run(&o, U(KIWI_OP_SEND, true, 0, KIWI_QN_SEND, 2, 0), 0,
		      KIWI_OA_RTR), KIWI_OE_RTR);
}

TEST(rtr_read_response)
{
	struct kiwi_rx_order o = fresh(false);

	/* Only zero-length, last, and while our RTR READ is out. */
	EXPECT_EQ(run(&o, T(KIWI_OP_READ_RESP, true, 0), 0, KIWI_OA_GO),
		  KIWI_OE_MSG);
	EXPECT_EQ(run(&o, T(KIWI_OP_READ_RESP, true, 1), KIWI_ORDER_RTR_READ,
		      KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(run(&o, T(KIWI_OP_READ_RESP, false, 0), KIWI_ORDER_RTR_READ,
		      KIWI_OA_GO), KIWI_OE_MORE);
	EXPECT_EQ(run(&o, T(KIWI_OP_WRITE, true, 0), KIWI_ORDER_RTR_READ,
		      KIWI_OA_GO), KIWI_OE_MSG);
	EXPECT_EQ(o.msg, KIWI_RXM_AFTER_WRITE);
	EXPECT_EQ(run(&o, T(KIWI_OP_READ_RESP, true, 0), KIWI_ORDER_RTR_READ,
		      KIWI_OA_RTR), KIWI_OE_RTR);
	EXPECT_EQ(o.rtr, KIWI_RXR_NONE);
	EXPECT_EQ(o.msg, KIWI_RXM_AFTER_WRITE);
}

TEST(read_response_answers_the_oldest_read)
{
	struct kiwi_verdict v;

	/* Sink STag 7, 100 bytes at 0x1000. */
	EXPECT_TRUE(kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0x1000,
					 100).ok);
	EXPECT_TRUE(kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0x1030,
					 52).ok);
	EXPECT_TRUE(kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0x1064,
					 0).ok);
	v = kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0x1000, 101);
	EXPECT_FALSE(v.ok);
	EXPECT_EQ(v.layer, KIWI_TL_RDMAP);
	EXPECT_EQ(v.etype, KIWI_RT_OPERATION);
	EXPECT_EQ(v.ecode, KIWI_RC_UNEXPECTED_OP);
	EXPECT_FALSE(kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0x1001,
					  100).ok);
	EXPECT_FALSE(kiwi_order_read_resp(true, 7, 0x1000, 100, 7, 0xfff,
					  1).ok);
	EXPECT_FALSE(kiwi_order_read_resp(true, 7, 0x1000, 100, 8, 0x1000,
					  1).ok);
	/* No READ outstanding (or an atomic due first): nothing fits. */
	EXPECT_FALSE(kiwi_order_read_resp(false, 7, 0x1000, 100, 7, 0x1000,
					  1).ok);
	EXPECT_FALSE(kiwi_order_read_resp(false, 0, 0, 0, 0, 0, 0).ok);
}

TEST(kill_abort_release)
{
	struct kiwi_rx_order o = fresh(false);

	kiwi_order_kill(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD);
	EXPECT_TRUE(kiwi_order_dead(&o));
	EXPECT_FALSE(kiwi_order_release(&o));

	o = fresh(false);
	run(&o, U(KIWI_OP_SEND, false, 8, KIWI_QN_SEND, 1, 0), 0,
	    KIWI_OA_OPEN);
	kiwi_order_kill(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD_HELD);
	EXPECT_TRUE(kiwi_order_dead(&o));
	kiwi_order_kill(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD_HELD);
	EXPECT_TRUE(kiwi_order_release(&o));
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD);
	EXPECT_FALSE(kiwi_order_release(&o));

	/* A SEND completed in error, too long: nothing held, then dead. */
	o = fresh(false);
	run(&o, U(KIWI_OP_SEND, false, 8, KIWI_QN_SEND, 1, 0), 0,
	    KIWI_OA_OPEN);
	kiwi_order_abort(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_IDLE);
	kiwi_order_kill(&o);
	EXPECT_EQ(o.msg, KIWI_RXM_DEAD);

	/* Released while alive: a SEND open is flushed. */
	o = fresh(false);
	run(&o, U(KIWI_OP_SEND, false, 8, KIWI_QN_SEND, 1, 0), 0,
	    KIWI_OA_OPEN);
	EXPECT_TRUE(kiwi_order_release(&o));
	o = fresh(false);
	run(&o, T(KIWI_OP_WRITE, true, 8), 0, KIWI_OA_GO);
	EXPECT_FALSE(kiwi_order_release(&o));
	EXPECT_TRUE(kiwi_order_dead(&o));
}

TEST(refusal_changes_nothing)
{
	struct kiwi_rx_order o = fresh(true), before;
	struct kiwi_rx_hdr h = U(KIWI_OP_SEND, true, 5, KIWI_QN_SEND, 1, 0);

	run(&o, T(KIWI_OP_WRITE, true, 8), 0, KIWI_OA_GO);
	before = o;
	EXPECT_EQ(kiwi_order_begin(&o, &h, 0).act, KIWI_OA_REFUSE);
	EXPECT_EQ(memcmp(&o, &before, sizeof(o)), 0);
}

TEST(header_from_framer)
{
	struct kiwi_framer fr;
	struct kiwi_rx_hdr h;

	kiwi_fr_init(&fr);
	fr.op = KIWI_OP_SEND;
	fr.last = true;
	fr.data_rem = 42;
	fr.hdr.u.qn = kiwi_cpu32(3);
	fr.hdr.u.msn = kiwi_cpu32(0x01020304);
	fr.hdr.u.mo = kiwi_cpu32(77);
	h = kiwi_rx_hdr_of(&fr);
	EXPECT_EQ(h.op, KIWI_OP_SEND);
	EXPECT_TRUE(h.last);
	EXPECT_EQ(h.len, 42U);
	EXPECT_EQ(h.qn, 3U);
	EXPECT_EQ(h.msn, 0x01020304U);
	EXPECT_EQ(h.mo, 77U);
	fr.op = KIWI_OP_WRITE;
	h = kiwi_rx_hdr_of(&fr);
	EXPECT_EQ(h.qn, 0U);
	EXPECT_EQ(h.msn, 0U);
}

KT_MAIN()
