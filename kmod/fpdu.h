/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the transmit path's two files share, and only they
 * include.  tx.c (DDP and RDMAP: which message, its headers, the work
 * loop) stages each FPDU's header in the slot and hands it with its
 * payload source to fpdu.c (MPA: framing, CRC, the page batch, the push
 * to TCP).  What the rest of the module calls is in tx.h.
 */
#ifndef KIWI_FPDU_H
#define KIWI_FPDU_H

#include "qp.h"

/* Where an FPDU's payload comes from. */
struct kiwi_src {
	struct kiwi_qp *qp;
	const struct kiwi_sge *sge;	/* SGE list, or */
	u32 num_sge;
	const u8 *kbuf;			/* a kernel buffer (inline data) */
	struct kiwi_mem *mem;		/* or one registered region at addr, */
	u64 gen;			/* checked at this generation */
	u64 addr;
};


u8 *kiwi_tx_slot(struct kiwi_qp *qp);
int kiwi_tx_fpdu(struct kiwi_qp *qp, struct socket *sock, u32 hdr_len,
		 struct kiwi_src *src, u32 off, u32 len, bool more);
u32 kiwi_tx_max_payload(struct kiwi_qp *qp, struct socket *sock,
			u32 hdr_len);
struct kiwi_tx_batch *kiwi_tx_batch_alloc(void);
void kiwi_tx_batch_free(struct kiwi_tx_batch *b);
bool kiwi_tx_batch_empty(const struct kiwi_tx_batch *b);
void kiwi_tx_batch_atomic(struct kiwi_tx_batch *b, bool atomic);

#endif /* KIWI_FPDU_H */
