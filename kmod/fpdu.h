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

/*
 * tx.c's senders fill the DDP header of each FPDU with these, in a
 * union of their own stack, zeroed once; kiwi_tx_fpdu() copies it into
 * the batch: no header memory is shared with fpdu.c.
 */
static inline void kiwi_tx_hdr_tagged(union kiwi_tx_hdr *hdr, u8 op,
				      bool last, u32 stag, u64 to)
{
	struct kiwi_hdr_tagged *h = &hdr->t;

	h->ctrl.ddp_rdmap = cpu_to_be16(kiwi_ddp_rdmap(op, last));
	h->stag = cpu_to_be32(stag);
	h->to = cpu_to_be64(to);
}

static inline void kiwi_tx_hdr_untagged(union kiwi_tx_hdr *hdr, u8 op,
					bool last, u32 qn, u32 msn, u32 mo,
					u32 inv)
{
	struct kiwi_hdr_untagged *h = &hdr->u.h;

	h->ctrl.ddp_rdmap = cpu_to_be16(kiwi_ddp_rdmap(op, last));
	h->inv_stag = cpu_to_be32(inv);
	h->qn = cpu_to_be32(qn);
	h->msn = cpu_to_be32(msn);
	h->mo = cpu_to_be32(mo);
}

/* The socket a sender uses: under tx.mutex, as kiwi_tx_work() says. */
static inline struct socket *kiwi_tx_sock(struct kiwi_qp *qp)
{
	struct socket *sock;

	lockdep_assert_held(&qp->tx.mutex);
	mutex_lock(&qp->state_lock);
	sock = qp->sock;
	mutex_unlock(&qp->state_lock);
	return sock;
}

int kiwi_tx_fpdu(struct kiwi_qp *qp, struct socket *sock,
		 union kiwi_tx_hdr *hdr, u32 hdr_len, struct kiwi_src *src,
		 u32 off, u32 len, bool more);
u32 kiwi_tx_max_payload(struct kiwi_qp *qp, struct socket *sock,
			u32 hdr_len);
void kiwi_tx_markers_init(struct kiwi_qp *qp);
struct kiwi_tx_batch *kiwi_tx_batch_alloc(void);
void kiwi_tx_batch_free(struct kiwi_tx_batch *b);
bool kiwi_tx_batch_empty(const struct kiwi_tx_batch *b);
void kiwi_tx_batch_atomic(struct kiwi_tx_batch *b, bool atomic);

#endif /* KIWI_FPDU_H */
