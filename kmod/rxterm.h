/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the receive path's two files share, and only they include.
 * rx.c runs the FPDU stream and each opcode's row of kiwi_rx_ops[];
 * rxterm.c is the TERMINATE row (collecting a peer's TERMINATE and its
 * verdict).  Both add payload to the FPDU's CRC as they copy it.  What
 * the rest of the module calls is in rx.h.
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

/* rxterm.c: a peer's TERMINATE, the row of rx.c's kiwi_rx_ops[] */
int kiwi_rx_begin_term(struct kiwi_qp *qp, enum kiwi_order_act act);
int kiwi_rx_place_term(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		       u32 len);
void kiwi_rx_end_term(struct kiwi_qp *qp, enum kiwi_order_end e);

#endif /* KIWI_RXTERM_H */
