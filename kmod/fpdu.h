/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the transmit path's two files share, and only they
 * include.  tx.c (DDP and RDMAP: which message, its headers, the work
 * loop) builds each FPDU's header in memory of its own and hands it with
 * its payload source to fpdu.c (MPA: framing, CRC, the page batch, the
 * push to TCP).  What the rest of the module calls is in tx.h.
 */
#ifndef KIWI_FPDU_H
#define KIWI_FPDU_H

#include <linux/build_bug.h>

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

#define KIWI_TX_HDR_MAX		80	/* the longest header, rounded up */

/*
 * One FPDU's header, MPA length field first: tagged, or untagged with
 * what its opcode carries after the DDP header.  tx.c fills it (on its
 * stack: kiwi_tx_fpdu() copies it into the batch before it returns)
 * but for the MPA length, which kiwi_tx_fpdu() writes.  The byte array
 * comes first so that an empty initializer zeroes all of it.
 */
union kiwi_tx_hdr {
	u8 bytes[KIWI_TX_HDR_MAX];
	struct kiwi_ctrl ctrl;
	struct kiwi_hdr_tagged t;
	struct {
		struct kiwi_hdr_untagged h;
		union {
			struct kiwi_read_req read_req;
			struct kiwi_imm imm;
			struct kiwi_atomic_req atomic_req;
			struct kiwi_atomic_resp atomic_resp;
			struct kiwi_term term;
		};
	} u;
};
/* What follows the untagged header sits right behind it, as on the wire. */
static_assert(offsetof(union kiwi_tx_hdr, u.term) ==
	      sizeof(struct kiwi_hdr_untagged));
static_assert(sizeof(union kiwi_tx_hdr) == KIWI_TX_HDR_MAX);

int kiwi_tx_fpdu(struct kiwi_qp *qp, struct socket *sock,
		 union kiwi_tx_hdr *hdr, u32 hdr_len, struct kiwi_src *src,
		 u32 off, u32 len, bool more);
u32 kiwi_tx_max_payload(struct kiwi_qp *qp, struct socket *sock,
			u32 hdr_len);
struct kiwi_tx_batch *kiwi_tx_batch_alloc(void);
void kiwi_tx_batch_free(struct kiwi_tx_batch *b);
bool kiwi_tx_batch_empty(const struct kiwi_tx_batch *b);
void kiwi_tx_batch_atomic(struct kiwi_tx_batch *b, bool atomic);

#endif /* KIWI_FPDU_H */
