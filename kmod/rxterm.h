/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the receive path's three files share, and only they
 * include.  rx.c runs the FPDU stream and calls each opcode's row of
 * kiwi_rx_ops[]; rxops.c holds the table and the rows; rxterm.c is the
 * TERMINATE row (collecting a peer's TERMINATE and its verdict).  Rows
 * add payload to the FPDU's CRC as they copy it.  What the rest of the
 * module calls is in rx.h.
 */
#ifndef KIWI_RXTERM_H
#define KIWI_RXTERM_H

#include "qp.h"

/*
 * Where a row's place handler adds the payload to the FPDU's CRC, in
 * the pass that copies it: nowhere without CRC.
 */
static inline u32 *kiwi_rx_crcp(struct kiwi_qp *qp)
{
	return qp->crc ? &qp->rx.crc : NULL;
}

/*
 * What the receive path does with an opcode: begin once the header is in
 * and rxorder.h let it through (@act says how), place for each run of
 * payload bytes, end once the CRC is in (@e: what it ended).
 */
struct kiwi_rx_op {
	int (*begin)(struct kiwi_qp *qp, enum kiwi_order_act act);
	int (*place)(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		     u32 len);
	void (*end)(struct kiwi_qp *qp, enum kiwi_order_end e);
};

/* rxops.c: the rows, by opcode; ending the stream with a TERMINATE */
extern const struct kiwi_rx_op kiwi_rx_ops[KIWI_OP_MAX];
int kiwi_rx_fail(struct kiwi_qp *qp, u8 layer, u8 etype, u8 ecode);
int kiwi_rx_refuse(struct kiwi_qp *qp, struct kiwi_verdict v);

/* rxterm.c: a peer's TERMINATE, a row of rxops.c's kiwi_rx_ops[] */
int kiwi_rx_begin_term(struct kiwi_qp *qp, enum kiwi_order_act act);
int kiwi_rx_place_term(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		       u32 len);
void kiwi_rx_end_term(struct kiwi_qp *qp, enum kiwi_order_end e);

#endif /* KIWI_RXTERM_H */
