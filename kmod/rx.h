/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the receive path as the rest of the module sees it -- each QP's
 * receive state (struct kiwi_rx, for rx.c, rxops.c and rxterm.c alone
 * to touch; the QP sets the RTR it expects at connection) and the calls
 * of rx.c and rxops.c that the QP layer and the CM make.  qp.h includes
 * it for struct kiwi_qp; the files that call the receive path get it
 * from there.  What only its three files share is in rxterm.h.
 */
#ifndef KIWI_RX_H
#define KIWI_RX_H

#include <kiwi/framer.h>
#include <kiwi/markers.h>
#include <kiwi/rdmap.h>
#include <kiwi/rxorder.h>

#include "wr.h"

struct kiwi_qp;

/* Receive-side FPDU parser state; touched only under the socket lock. */
struct kiwi_rx {
	struct kiwi_framer fr;		/* where we are in the FPDU stream */
	struct kiwi_mk_rx mk;		/* markers: where the next one is */
	u32 crc;			/* running CRC32c state */
	/*
	 * Message progress, the RTR handshake and the MSNs expected, as
	 * include/kiwi/rxorder.h has them: the stream is dead, a receive
	 * WQE is held, the last message ended was a WRITE.
	 */
	struct kiwi_rx_order ord;

	/* Tagged placement target, as checked at generation mem_gen. */
	struct kiwi_mem *mem;
	u64 mem_gen;
	u64 to;

	/* The receive WQE a SEND or Immediate Data is placed into. */
	struct kiwi_rqe rqe;
	u32 msg_len;			/* bytes placed in this message */
	u32 sge_idx;
	u32 sge_off;
	struct kiwi_mem *sge_mem;	/* of sge_idx, checked at sge_gen */
	u64 sge_gen;
	u32 inv_stag;

	/* RFC 7306 Immediate Data, and the WRITE it may complete. */
	u32 imm;			/* decoded, host order */
	u32 write_len;			/* WRITE message being received */
	u32 last_write_len;		/* the WRITE that ended last */

	/* The READ Request or TERMINATE this FPDU carries, decoded. */
	struct kiwi_read_info rr;
	struct kiwi_atomic_info ar;	/* an Atomic Request's */
	struct kiwi_mem *ar_mem;	/* its region, referenced, */
	u64 ar_gen;			/* checked at this generation */
	u32 aresp_id;			/* an Atomic Response's */
	u64 aresp_orig;
	u8 term_rest[KIWI_TERM_MAX_REST];	/* bytes after its control word */
	u32 term_have;
	u32 term_len;

	/*
	 * Facts kept apart from ord: orq_skip is set at connection (our
	 * RTR is a READ) and cleared by its response, resp_due is work for
	 * after the socket read (any number of requests may set it),
	 * worker says which context reads the socket.
	 */
	u32 orq_skip;			/* our RTR READ is due or outstanding */
	bool resp_due;			/* a READ request awaits an answer */
	bool worker;			/* bulk: rx_work reads the socket */
	u64 t_ready;			/* ns: the socket last had news */
};

/* rx.c: DDP/RDMAP receive and direct placement */
void kiwi_rx_data_ready(struct sock *sk);
void kiwi_rx_init(struct kiwi_qp *qp);
void kiwi_rx_stop(struct kiwi_qp *qp);
void kiwi_rx_drain(struct kiwi_qp *qp, struct sock *sk);
void kiwi_rx_reset(struct kiwi_qp *qp);
/* rxops.c: what a dead stream's current message still holds */
void kiwi_rx_release(struct kiwi_qp *qp);
void kiwi_rx_expect_rtr_read(struct kiwi_qp *qp);
void kiwi_rx_expect_rtr_send(struct kiwi_qp *qp);

#endif /* KIWI_RX_H */
