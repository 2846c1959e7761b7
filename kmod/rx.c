// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: receive path -- MPA deframing, DDP/RDMAP validation and direct
 * placement from the socket's skbs into registered memory.
 *
 * Runs as the socket's data_ready callback (softirq, or process context
 * under lock_sock) through tcp_read_sock(), or for bulk data in a worker
 * holding the socket, so payload is copied exactly once: from the skb to
 * its final place.  FPDUs may be split across skbs
 * and an skb may carry several FPDUs; the parser keeps its position in
 * qp->rx.  Everything in a header is checked before a byte is placed;
 * any violation terminates the stream (RFC 5040 section 7).
 *
 * Each opcode is a row of kiwi_rx_ops[]: begin once its header is in,
 * place for each run of its payload, end once its CRC is in.  What may
 * follow what (queue number, MSN, MO, the RTR, Immediate Data after a
 * WRITE) is checked for every opcode in one place, kiwi_rx_begin(), by
 * include/kiwi/rxorder.h, which also keeps the message state; a row's
 * begin checks what needs the QP's memory and queues.
 */
#include <linux/skbuff.h>
#include <net/tcp.h>

#include "cq.h"
#include "rxterm.h"
#include "stag.h"

static void kiwi_rx_drop_refs(struct kiwi_rx *rx)
{
	if (rx->mem) {
		kiwi_mem_put(rx->mem);
		rx->mem = NULL;
	}
	if (rx->sge_mem) {
		kiwi_mem_put(rx->sge_mem);
		rx->sge_mem = NULL;
	}
	if (rx->ar_mem) {
		kiwi_mem_put(rx->ar_mem);
		rx->ar_mem = NULL;
	}
}

/* Stop parsing for good and have the QP send a TERMINATE. */
static int kiwi_rx_fail(struct kiwi_qp *qp, u8 layer, u8 etype, u8 ecode)
{
	ibdev_info_ratelimited(qp->ibqp.device, "QP %u: terminating stream: op %u layer %u type %u code 0x%02x (ctrl %04x len %u)\n",
			       qp->ibqp.qp_num, qp->rx.fr.op, layer, etype,
			       ecode,
			       be16_to_cpu(qp->rx.fr.hdr.ctrl.ddp_rdmap),
			       be16_to_cpu(qp->rx.fr.hdr.ctrl.mpa_len));
	kiwi_order_kill(&qp->rx.ord);
	kiwi_rx_drop_refs(&qp->rx);
	kiwi_qp_error(qp, layer, etype, ecode);
	return -EPROTO;
}

static int kiwi_rx_refuse(struct kiwi_qp *qp, struct kiwi_verdict v)
{
	return kiwi_rx_fail(qp, v.layer, v.etype, v.ecode);
}

/*
 * What the peer is told about an STag that kiwi_mem_check() refused.  An
 * STag of another protection domain is reported as invalid, exactly as
 * one that does not exist: a peer must not learn which STags are live
 * elsewhere on the device.
 */
static int kiwi_rx_remote_why(int why)
{
	return why == KIWI_RC_STAG_NOT_ASSOC ? KIWI_RC_INVALID_STAG : why;
}

/* Map a kiwi_mem_check() result for a tagged sink to TERMINATE codes. */
static int kiwi_rx_tagged_fail(struct kiwi_qp *qp, int why)
{
	switch (kiwi_rx_remote_why(why)) {
	case KIWI_RC_ACCESS_RIGHTS:
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    KIWI_RC_ACCESS_RIGHTS);
	case KIWI_RC_TO_WRAP:
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_TAGGED,
				    KIWI_DC_T_TO_WRAP);
	case KIWI_RC_BASE_BOUNDS:
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_TAGGED,
				    KIWI_DC_T_BASE_BOUNDS);
	default:
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_TAGGED,
				    KIWI_DC_T_INVALID_STAG);
	}
}

/*
 * The QP's own remote access rights, checked before the region's.  With
 * iWARP, rdma_cm leaves the active side's QP with no access flags at
 * all (its INIT attributes are computed before an iw_cm id exists), so
 * "none set" means "not restricted"; a consumer that set some flags gets
 * exactly those.
 */
static bool kiwi_qp_allows(struct kiwi_qp *qp, int access)
{
	int granted = READ_ONCE(qp->access);

	return !granted || (granted & access);
}

/* Look up and check a tagged sink for [to, to + len). */
static int kiwi_rx_sink(struct kiwi_qp *qp, u32 stag, u64 to, u32 len,
			int access)
{
	struct kiwi_rx *rx = &qp->rx;
	int why;

	rx->to = to;
	if (!len)	/* zero-length tagged messages name no buffer */
		return 0;
	rx->mem = kiwi_mem_get(qp->kdev, stag);
	if (!rx->mem)
		return kiwi_rx_tagged_fail(qp, KIWI_RC_INVALID_STAG);
	why = kiwi_mem_check_qp(rx->mem, qp, to, len, access, &rx->mem_gen);
	return why ? kiwi_rx_tagged_fail(qp, why) : 0;
}

/* Payload of a tagged FPDU to its place; false if the region went. */
static bool kiwi_rx_copy_tagged(struct kiwi_qp *qp, struct sk_buff *skb,
				int off, u32 len)
{
	struct kiwi_rx *rx = &qp->rx;

	if (!kiwi_mem_copy_from_skb(rx->mem, rx->mem_gen, rx->to, skb, off,
				    len, kiwi_rx_crcp(qp)))
		return false;
	rx->to += len;
	return true;
}

/* ---- RDMA WRITE ---- */

static int kiwi_rx_begin_write(struct kiwi_qp *qp, enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;

	if (!kiwi_qp_allows(qp, IB_ACCESS_REMOTE_WRITE))
		return kiwi_rx_tagged_fail(qp, KIWI_RC_ACCESS_RIGHTS);
	rx->write_len += rx->fr.data_rem;
	return kiwi_rx_sink(qp, be32_to_cpu(rx->fr.hdr.t.stag),
			    be64_to_cpu(rx->fr.hdr.t.to), rx->fr.data_rem,
			    IB_ACCESS_REMOTE_WRITE);
}

static int kiwi_rx_place_write(struct kiwi_qp *qp, struct sk_buff *skb,
			       int off, u32 len)
{
	/* Invalidated or deregistered since the header. */
	if (!kiwi_rx_copy_tagged(qp, skb, off, len))
		return kiwi_rx_tagged_fail(qp, KIWI_RC_INVALID_STAG);
	return 0;
}

/* A whole WRITE: its length, for Immediate Data that may follow it. */
static void kiwi_rx_end_write(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;

	if (e == KIWI_OE_MSG) {
		rx->last_write_len = rx->write_len;
		rx->write_len = 0;
	}
}

/* ---- RDMA READ Response ---- */

static int kiwi_rx_begin_read_resp(struct kiwi_qp *qp,
				   enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;
	u32 stag = be32_to_cpu(rx->fr.hdr.t.stag);
	u64 to = be64_to_cpu(rx->fr.hdr.t.to);
	struct kiwi_sge sink = {};
	struct kiwi_verdict v;
	u32 bytes = 0;
	bool have;
	int rv;

	if (act == KIWI_OA_RTR)	/* answers our zero-length RTR READ */
		return 0;
	have = kiwi_qp_orq_head(qp, &sink, &bytes);
	v = kiwi_order_read_resp(have, sink.lkey, sink.addr, bytes, stag, to,
				 rx->fr.data_rem);
	if (!v.ok)
		return kiwi_rx_refuse(qp, v);
	rv = kiwi_rx_sink(qp, stag, to, rx->fr.data_rem, IB_ACCESS_LOCAL_WRITE);
	if (rv)	/* our own sink is bad: the READ fails, not just flushes */
		kiwi_qp_read_failed(qp, IB_WC_LOC_PROT_ERR);
	return rv;
}

static int kiwi_rx_place_read_resp(struct kiwi_qp *qp, struct sk_buff *skb,
				   int off, u32 len)
{
	/* Invalidated or deregistered since the header. */
	if (!kiwi_rx_copy_tagged(qp, skb, off, len)) {
		kiwi_qp_read_failed(qp, IB_WC_LOC_PROT_ERR);
		return kiwi_rx_tagged_fail(qp, KIWI_RC_INVALID_STAG);
	}
	return 0;
}

/*
 * Our READ or atomic completed and gave its ORD credit back.  That
 * matters only to a WQE already waiting for it; an idle send queue
 * needs no worker wake-up (one per READ otherwise).
 */
static void kiwi_rx_ord_freed(struct kiwi_qp *qp)
{
	if (kiwi_sq_waiting(qp))
		kiwi_tx_kick(qp);
}

static void kiwi_rx_end_read_resp(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	if (e == KIWI_OE_RTR) {
		qp->rx.orq_skip = 0;
	} else if (e == KIWI_OE_MSG) {
		kiwi_qp_read_done(qp);
		kiwi_rx_ord_freed(qp);
	}
}

/* ---- SEND, SEND with Invalidate, with Solicited Event, with both ---- */

static u32 kiwi_rqe_capacity(const struct kiwi_rqe *rqe)
{
	u32 i, n = 0;

	for (i = 0; i < rqe->num_sge; i++)
		n += rqe->sge[i].len;
	return n;
}

/* Complete the receive the current SEND is (or was) placed into. */
static void kiwi_rx_complete(struct kiwi_qp *qp, u8 status, u8 flags,
			     u32 inv_stag, bool solicited)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_cqe cqe = {
		.wr_id = rx->rqe.wr_id,
		.qp = &qp->ibqp,
		.byte_len = status == IB_WC_WR_FLUSH_ERR ? 0 : rx->msg_len,
		.opcode = IB_WC_RECV,
		.status = status,
		.flags = flags,
		.ex = inv_stag,
	};

	kiwi_qp_cq_add(qp, qp->rcq, &cqe, solicited);
}

static int kiwi_rx_begin_send(struct kiwi_qp *qp, enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;

	/*
	 * The initiator's ready-to-receive (RFC 6581) is its first SEND,
	 * of no payload; it takes no receive of the consumer's.
	 */
	if (act == KIWI_OA_RTR)
		return 0;
	if (act == KIWI_OA_OPEN) {
		if (!kiwi_qp_take_rqe(qp, &rx->rqe))
			return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					    KIWI_DC_U_INVALID_MSN_NOBUF);
		kiwi_order_opened(&rx->ord);
		rx->msg_len = 0;
		rx->sge_idx = 0;
		rx->sge_off = 0;
		rx->inv_stag = be32_to_cpu(rx->fr.hdr.u.inv_stag);
	}
	if ((u64)rx->msg_len + rx->fr.data_rem > kiwi_rqe_capacity(&rx->rqe)) {
		/* This receive fails for its length, ahead of the flush. */
		kiwi_rx_complete(qp, IB_WC_LOC_LEN_ERR, 0, 0, false);
		kiwi_order_abort(&rx->ord);
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				    KIWI_DC_U_MSG_TOOLONG);
	}
	return 0;
}

/* Place @len payload bytes of a SEND at the current message offset. */
static int kiwi_rx_place_send(struct kiwi_qp *qp, struct sk_buff *skb,
			      int off, u32 len)
{
	struct kiwi_rx *rx = &qp->rx;

	while (len) {
		const struct kiwi_sge *sge;
		u32 chunk;
		int why;

		/* Unreachable past the capacity check; never trust it blindly. */
		if (WARN_ON_ONCE(rx->sge_idx >= rx->rqe.num_sge))
			return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
					    KIWI_DC_U_MSG_TOOLONG);
		sge = &rx->rqe.sge[rx->sge_idx];

		if (rx->sge_off == sge->len) {
			if (rx->sge_mem) {
				kiwi_mem_put(rx->sge_mem);
				rx->sge_mem = NULL;
			}
			rx->sge_idx++;
			rx->sge_off = 0;
			continue;
		}
		chunk = min(len, sge->len - rx->sge_off);
		if (!rx->sge_mem) {
			rx->sge_mem = kiwi_mem_get(qp->kdev, sge->lkey);
			if (!rx->sge_mem)
				return kiwi_rx_fail(qp, KIWI_TL_RDMAP,
						    KIWI_RT_CATASTROPHIC,
						    KIWI_RC_CATASTROPHIC_STREAM);
			why = kiwi_mem_check(rx->sge_mem, qp->ibqp.pd,
					     sge->addr, sge->len,
					     IB_ACCESS_LOCAL_WRITE,
					     &rx->sge_gen);
			if (why)
				return kiwi_rx_fail(qp, KIWI_TL_RDMAP,
						    KIWI_RT_CATASTROPHIC,
						    KIWI_RC_CATASTROPHIC_STREAM);
		}
		/* The receive buffer was deregistered under the message. */
		if (!kiwi_mem_copy_from_skb(rx->sge_mem, rx->sge_gen,
					    sge->addr + rx->sge_off, skb, off,
					    chunk, kiwi_rx_crcp(qp)))
			return kiwi_rx_fail(qp, KIWI_TL_RDMAP,
					    KIWI_RT_CATASTROPHIC,
					    KIWI_RC_CATASTROPHIC_STREAM);
		rx->sge_off += chunk;
		rx->msg_len += chunk;
		off += chunk;
		len -= chunk;
	}
	return 0;
}

/* The SEND's last FPDU is in (not the RTR's): complete its receive. */
static void kiwi_rx_end_send(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;
	const struct kiwi_op_desc *d = kiwi_op(rx->fr.op);
	bool inv = d->invalidate;
	u8 status = IB_WC_SUCCESS;

	if (e != KIWI_OE_MSG)
		return;
	if (inv && kiwi_mem_invalidate(qp, rx->inv_stag))
		status = IB_WC_REM_INV_REQ_ERR;
	if (rx->sge_mem) {
		kiwi_mem_put(rx->sge_mem);
		rx->sge_mem = NULL;
	}
	kiwi_rx_complete(qp, status, inv ? IB_WC_WITH_INVALIDATE : 0,
			 inv ? rx->inv_stag : 0,
			 d->solicited);
}

/* ---- RFC 7306 Immediate Data ---- */

/*
 * On queue 0 like a SEND, and like one it takes a receive WQE, but its
 * 8 bytes go into the completion, not the buffer.  No WQE for it: the
 * same TERMINATE as for a SEND.
 */
static int kiwi_rx_begin_imm(struct kiwi_qp *qp, enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_verdict v;

	v = kiwi_imm_parse(rx->fr.hdr.raw + sizeof(struct kiwi_hdr_untagged),
			   sizeof(struct kiwi_imm) + rx->fr.data_rem, &rx->imm);
	if (!v.ok)
		return kiwi_rx_refuse(qp, v);
	if (!kiwi_qp_take_rqe(qp, &rx->rqe))
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				    KIWI_DC_U_INVALID_MSN_NOBUF);
	kiwi_order_opened(&rx->ord);	/* flushed if the stream dies first */
	rx->msg_len = 0;
	return 0;
}

/*
 * Immediate Data right behind a whole WRITE is that WRITE's (verbs:
 * RDMA WRITE with immediate, byte_len the WRITE's length as rxe and
 * InfiniBand report it); any other is a SEND with immediate data and
 * no payload.  RFC 7306 marks neither; kiwi never sends anything
 * between a WRITE and its Immediate Data.
 */
static void kiwi_rx_end_imm(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;
	bool write = e == KIWI_OE_WRITE_IMM;
	struct kiwi_cqe cqe = {
		.wr_id = rx->rqe.wr_id,
		.qp = &qp->ibqp,
		.byte_len = write ? rx->last_write_len : 0,
		.opcode = write ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV,
		.status = IB_WC_SUCCESS,
		.flags = IB_WC_WITH_IMM,
		.ex = rx->imm,
	};

	kiwi_qp_cq_add(qp, qp->rcq, &cqe, kiwi_op(rx->fr.op)->solicited);
}

/* ---- RDMA READ Request ---- */

/*
 * Its body decoded and checked for what the bytes alone decide
 * (kiwi_read_req_parse()), the rest against this QP and the source
 * region.  The checks run in the order they always did, so each
 * malformed request gets the TERMINATE it always got: the body's own
 * verdict counts only where no earlier check fired.
 */
static int kiwi_rx_begin_read_req(struct kiwi_qp *qp,
				  enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_read_info *ri = &rx->rr;
	struct kiwi_verdict v;
	struct kiwi_mem *mem;
	u64 gen;
	int why;

	v = kiwi_read_req_parse(rx->fr.hdr.raw +
				sizeof(struct kiwi_hdr_untagged),
				sizeof(struct kiwi_read_req) + rx->fr.data_rem,
				KIWI_MAX_MSG_SZ, ri);
	if (!kiwi_qp_allows(qp, IB_ACCESS_REMOTE_READ))
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    KIWI_RC_ACCESS_RIGHTS);
	/*
	 * A READ beyond the IRD we advertised has no request queue entry;
	 * nor has one longer than a READ Request (the parser's verdict:
	 * the same code).
	 */
	if (ri->why == KIWI_RR_BAD_LEN || kiwi_tx_irq_full(qp)) {
		kiwi_qp_stat_add(qp, KIWI_STAT_READ_REFUSED, 1);
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				    KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	if (!ri->size)
		return 0;
	mem = kiwi_mem_get(qp->kdev, ri->src_stag);
	if (!mem)
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    KIWI_RC_INVALID_STAG);
	why = kiwi_mem_check_qp(mem, qp, ri->src_to, ri->size,
				IB_ACCESS_REMOTE_READ, &gen);
	kiwi_mem_put(mem);
	if (why)	/* the response checks again when it is sent */
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    kiwi_rx_remote_why(why));
	/*
	 * Only after the region check, so that an STag that is not ours
	 * still reads as invalid: what is left is a size beyond the device
	 * maximum in a region larger than that, or a sink range that wraps.
	 */
	if (!v.ok)
		return kiwi_rx_refuse(qp, v);
	return 0;
}

static void kiwi_rx_end_read_req(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	const struct kiwi_read_info *ri = &qp->rx.rr;
	struct kiwi_irqe resp = {
		.src_stag = ri->src_stag,
		.src_to = ri->src_to,
		.sink_stag = ri->sink_stag,
		.sink_to = ri->sink_to,
		.len = ri->size,
	};

	kiwi_tx_queue_resp(qp, &resp);
	qp->rx.resp_due = true;	/* answered after this socket read */
}

/* ---- RFC 7306 Atomic Request and Response ---- */

/*
 * Checked in the order of a READ Request's checks (IRD -- shared with
 * READs -- then the region) and executed once its CRC is in.  A QP
 * without atomics knows no such opcode (rxorder.h refuses it).
 */
static int kiwi_rx_begin_atomic_req(struct kiwi_qp *qp,
				    enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_atomic_info *ai = &rx->ar;
	struct kiwi_verdict v;
	struct kiwi_mem *mem;
	int why;

	v = kiwi_atomic_req_parse(rx->fr.hdr.raw +
				  sizeof(struct kiwi_hdr_untagged),
				  sizeof(struct kiwi_atomic_req) +
				  rx->fr.data_rem, ai);
	/*
	 * No QP-level check: the iw_cm gives every QP it connects exactly
	 * REMOTE_WRITE | REMOTE_READ, whatever the consumer wants, so no
	 * rdma_cm QP could ever grant REMOTE_ATOMIC.  The region's own
	 * REMOTE_ATOMIC right decides, as the STag's rights do in iWARP.
	 */
	if (ai->why == KIWI_AR_BAD_LEN || kiwi_tx_irq_full(qp)) {
		kiwi_qp_stat_add(qp, KIWI_STAT_READ_REFUSED, 1);
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				    KIWI_DC_U_INVALID_MSN_NOBUF);
	}
	mem = kiwi_mem_get(qp->kdev, ai->stag);
	if (!mem)
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    KIWI_RC_INVALID_STAG);
	/*
	 * The checked object itself is kept until the CRC is in and the
	 * operation runs on it: looking the STag up again then could find
	 * another registration that reused its index and key.
	 */
	rx->ar_mem = mem;
	why = kiwi_mem_check_qp(mem, qp, ai->to, KIWI_ATOMIC_LEN,
				IB_ACCESS_REMOTE_ATOMIC, &rx->ar_gen);
	if (why)
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
				    kiwi_rx_remote_why(why));
	if (!v.ok)	/* an unknown operation, a misaligned offset */
		return kiwi_rx_refuse(qp, v);
	return 0;
}

/*
 * Execute a checked Atomic Request and queue its response behind the
 * READ responses already due.  The region is the one checked at the
 * header; if it changed since, the STag is no longer valid.
 */
static void kiwi_rx_end_atomic_req(struct kiwi_qp *qp, enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_irqe resp = { .atomic = true, .req_id = rx->ar.req_id };
	struct kiwi_mem *mem = rx->ar_mem;
	bool ok;

	rx->ar_mem = NULL;
	ok = mem && kiwi_mem_atomic(mem, qp, rx->ar_gen, &rx->ar, &resp.orig);
	if (mem)
		kiwi_mem_put(mem);
	if (!ok) {
		kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_PROTECTION,
			     KIWI_RC_INVALID_STAG);
		return;
	}
	kiwi_qp_stat_add(qp, KIWI_STAT_ATOMIC_SERVED, 1);
	kiwi_tx_queue_resp(qp, &resp);
	rx->resp_due = true;
}

/* An Atomic Response: decoded now, matched when its CRC is in. */
static int kiwi_rx_begin_atomic_resp(struct kiwi_qp *qp,
				     enum kiwi_order_act act)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_verdict v;

	v = kiwi_atomic_resp_parse(rx->fr.hdr.raw +
				   sizeof(struct kiwi_hdr_untagged),
				   sizeof(struct kiwi_atomic_resp) +
				   rx->fr.data_rem, &rx->aresp_id,
				   &rx->aresp_orig);
	if (!v.ok)
		return kiwi_rx_refuse(qp, v);
	return 0;
}

static void kiwi_rx_end_atomic_resp(struct kiwi_qp *qp,
				    enum kiwi_order_end e)
{
	struct kiwi_rx *rx = &qp->rx;
	int rv;

	rv = kiwi_qp_atomic_done(qp, rx->aresp_id, rx->aresp_orig);
	if (rv == -EPROTO)	/* answers no atomic of ours */
		kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_OPERATION,
			     KIWI_RC_UNEXPECTED_OP);
	else if (rv)		/* our own sink is gone: a local error */
		kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			     KIWI_RC_CATASTROPHIC_STREAM);
	else
		kiwi_rx_ord_freed(qp);
}

/* ---- the table ---- */

/*
 * What the receive path does with each opcode: begin once the header is
 * in and rxorder.h let it through (@act says how), place for each run
 * of payload bytes, end once the CRC is in (@e: what it ended).  The
 * rows without place have a fixed body, so their begin refuses any
 * payload.  A new opcode is a row here and one in kiwi_op_descs.
 */
struct kiwi_rx_op {
	int (*begin)(struct kiwi_qp *qp, enum kiwi_order_act act);
	int (*place)(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		     u32 len);
	void (*end)(struct kiwi_qp *qp, enum kiwi_order_end e);
};

#define KIWI_RX_OP(b, p, e)	{ .begin = (b), .place = (p), .end = (e) }
#define KIWI_RX_SEND	KIWI_RX_OP(kiwi_rx_begin_send, kiwi_rx_place_send, \
				   kiwi_rx_end_send)
#define KIWI_RX_IMM	KIWI_RX_OP(kiwi_rx_begin_imm, NULL, kiwi_rx_end_imm)
static const struct kiwi_rx_op kiwi_rx_ops[KIWI_OP_MAX] = {
	[KIWI_OP_WRITE] = KIWI_RX_OP(kiwi_rx_begin_write,
				     kiwi_rx_place_write, kiwi_rx_end_write),
	[KIWI_OP_READ_REQ] = KIWI_RX_OP(kiwi_rx_begin_read_req, NULL,
					kiwi_rx_end_read_req),
	[KIWI_OP_READ_RESP] = KIWI_RX_OP(kiwi_rx_begin_read_resp,
					 kiwi_rx_place_read_resp,
					 kiwi_rx_end_read_resp),
	[KIWI_OP_SEND] = KIWI_RX_SEND,
	[KIWI_OP_SEND_INV] = KIWI_RX_SEND,
	[KIWI_OP_SEND_SE] = KIWI_RX_SEND,
	[KIWI_OP_SEND_SE_INV] = KIWI_RX_SEND,
	[KIWI_OP_TERMINATE] = KIWI_RX_OP(kiwi_rx_begin_term,
					 kiwi_rx_place_term, kiwi_rx_end_term),
	[KIWI_OP_ATOMIC_REQ] = KIWI_RX_OP(kiwi_rx_begin_atomic_req, NULL,
					  kiwi_rx_end_atomic_req),
	[KIWI_OP_ATOMIC_RESP] = KIWI_RX_OP(kiwi_rx_begin_atomic_resp, NULL,
					   kiwi_rx_end_atomic_resp),
	[KIWI_OP_IMM] = KIWI_RX_IMM,
	[KIWI_OP_IMM_SE] = KIWI_RX_IMM,
};
#undef KIWI_RX_IMM
#undef KIWI_RX_SEND
#undef KIWI_RX_OP

/*
 * The header is complete and checked for shape (kiwi_check_ctrl(): a
 * known opcode, so a row with handlers): the ordering rules for every
 * opcode, then the row's own checks.
 */
static int kiwi_rx_begin(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_rx_hdr h = kiwi_rx_hdr_of(&rx->fr);
	unsigned int flags = 0;
	struct kiwi_order_step s;

	if (kiwi_qp_state(qp) != KIWI_QP_RTS) {
		kiwi_order_kill(&rx->ord);
		return -ENOTCONN;
	}
	if (WARN_ON_ONCE(h.op >= KIWI_OP_MAX || !kiwi_rx_ops[h.op].begin))
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_OPERATION,
				    KIWI_RC_UNEXPECTED_OP);
	if (qp->atomic)
		flags |= KIWI_ORDER_ATOMICS;
	if (READ_ONCE(rx->orq_skip))
		flags |= KIWI_ORDER_RTR_READ;
	s = kiwi_order_begin(&rx->ord, &h, flags);
	if (s.act == KIWI_OA_REFUSE)
		return kiwi_rx_refuse(qp, s.v);
	return kiwi_rx_ops[h.op].begin(qp, s.act);
}

static int kiwi_rx_place(struct kiwi_qp *qp, struct sk_buff *skb, int off,
			 u32 len)
{
	const struct kiwi_rx_op *row = &kiwi_rx_ops[qp->rx.fr.op];

	/* A fixed-size body: its begin refused any payload after it. */
	if (WARN_ON_ONCE(!row->place))
		return kiwi_rx_fail(qp, KIWI_TL_DDP, KIWI_DT_UNTAGGED,
				    KIWI_DC_U_MSG_TOOLONG);
	return row->place(qp, skb, off, len);
}

/* An FPDU passed its CRC: deliver what it completes. */
static void kiwi_rx_end(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;
	enum kiwi_order_end e;

	if (rx->mem) {
		kiwi_mem_put(rx->mem);
		rx->mem = NULL;
	}
	e = kiwi_order_end(&rx->ord);
	kiwi_rx_ops[rx->fr.op].end(qp, e);
	if (e != KIWI_OE_MORE && rx->t_ready)
		kiwi_qp_lat(qp, KIWI_STAT_RX_LAT, rx->t_ready);
}

/* Pad and CRC are in: check the CRC, then deliver what the FPDU completes. */
static int kiwi_rx_trailer_done(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;

	if (qp->crc) {
		if (kiwi_fr_crc(&rx->fr) != ~rx->crc) {
			kiwi_qp_stat_add(qp, KIWI_STAT_RX_CRC_ERR, 1);
			return kiwi_rx_fail(qp, KIWI_TL_LLP, 0,
					    KIWI_LC_MPA_CRC);
		}
	}
	kiwi_qp_stat_add(qp, KIWI_STAT_RX_FPDUS, 1);
	if (unlikely(READ_ONCE(qp->tx.await_peer)))
		kiwi_tx_peer_spoke(qp);	/* before any answer to it */
	kiwi_rx_end(qp);
	rx->crc = ~0U;
	return 0;
}

/*
 * @n bytes of an MPA marker (RFC 5044 4.3) at @off of @skb: into the
 * CRC of the FPDU they belong to -- the current one, or the next if the
 * marker falls between two -- and, once all four are in, checked
 * against the framing.  A marker may straddle skbs.  Returns @n, or a
 * negative errno once the stream is dead.
 */
static int kiwi_rx_marker(struct kiwi_qp *qp, struct sk_buff *skb, int off,
			  u32 n)
{
	struct kiwi_rx *rx = &qp->rx;
	u8 *m = kiwi_mk_rx_buf(&rx->mk);
	bool between;

	skb_copy_bits(skb, off, m, n);
	if (qp->crc)
		rx->crc = kiwi_crc32c(rx->crc, m, n);
	if (!kiwi_mk_rx_got(&rx->mk, n))
		return n;
	kiwi_qp_stat_add(qp, KIWI_STAT_RX_MARKERS, 1);
	between = rx->fr.phase == KIWI_FR_CTRL && !rx->fr.got;
	if (!kiwi_mk_rx_check(&rx->mk, between)) {
		kiwi_qp_stat_add(qp, KIWI_STAT_RX_MARKER_ERR, 1);
		return kiwi_rx_fail(qp, KIWI_TL_LLP, 0, KIWI_LC_MPA_MARKER);
	}
	return n;
}

/*
 * Header, pad and CRC bytes of the framer just stored: the CRC covers
 * them as they come, in stream order, since a marker may fall among
 * them (never inside the pad or the CRC field, which are 4-aligned).
 */
static void kiwi_rx_crc_framer(struct kiwi_qp *qp, const u8 *p, u32 n)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_framer *fr = &rx->fr;
	u32 pad;

	if (fr->phase != KIWI_FR_TRAIL) {
		rx->crc = kiwi_crc32c(rx->crc, p, n);
		return;
	}
	pad = kiwi_fr_pad_len(fr);
	if (fr->got < pad)
		rx->crc = kiwi_crc32c(rx->crc, p, min(n, pad - fr->got));
}

/*
 * Consume up to @len bytes at @off of @skb, as the framer's phase says;
 * returns bytes consumed or a negative errno once the stream is dead.
 */
static int kiwi_rx_step(struct kiwi_qp *qp, struct sk_buff *skb, int off,
			u32 len)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_framer *fr = &rx->fr;
	u32 n;
	int rv;

	if (qp->mk_rx) {
		bool marker;

		len = kiwi_mk_rx_next(&rx->mk, len, &marker);
		if (marker)
			return kiwi_rx_marker(qp, skb, off, len);
		if (fr->phase == KIWI_FR_CTRL && !fr->got)
			kiwi_mk_rx_fpdu(&rx->mk);
	}
	n = kiwi_fr_want(fr, len);
	switch (fr->phase) {
	case KIWI_FR_DATA:
		rv = kiwi_rx_place(qp, skb, off, n);
		if (rv)
			return rv;
		kiwi_qp_stat_add(qp, KIWI_STAT_RX_BYTES, n);
		break;
	case KIWI_FR_DEAD:
		return -EPROTO;
	default:	/* header or trailer bytes: into the framer */
		skb_copy_bits(skb, off, kiwi_fr_buf(fr), n);
		if (qp->crc)
			kiwi_rx_crc_framer(qp, kiwi_fr_buf(fr), n);
		break;
	}
	kiwi_mk_rx_data(&rx->mk, n);
	switch (kiwi_fr_advance(fr, n)) {
	case KIWI_FR_BAD_CTRL:
		return kiwi_rx_fail(qp, fr->bad.layer, fr->bad.etype,
				    fr->bad.ecode);
	case KIWI_FR_HDR_DONE:
		rv = kiwi_rx_begin(qp);
		break;
	case KIWI_FR_FPDU_DONE:
		rv = kiwi_rx_trailer_done(qp);
		break;
	default:
		rv = 0;
		break;
	}
	return rv ? rv : n;
}

/*
 * The bytes of @skb from @off that lie in one piece of memory -- its
 * linear part or the page fragment holding @off -- in *@n; NULL if
 * @off is in a frag_list skb or a page without a kernel address.
 */
static const u8 *kiwi_rx_piece(const struct sk_buff *skb, u32 off, u32 *n)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	u32 i;

	if (off < skb_headlen(skb)) {
		*n = skb_headlen(skb) - off;
		return skb->data + off;
	}
	off -= skb_headlen(skb);
	for (i = 0; i < sh->nr_frags; i++) {
		const skb_frag_t *f = &sh->frags[i];
		const u8 *p;

		if (off >= skb_frag_size(f)) {
			off -= skb_frag_size(f);
			continue;
		}
		p = skb_frag_address_safe(f);
		*n = skb_frag_size(f) - off;
		return p ? p + off : NULL;
	}
	return NULL;
}

/*
 * One-step receive: an FPDU that lies whole in one piece of @skb, at
 * @off, is framed from there -- control word and header read in place,
 * payload placed, trailer read -- in one pass instead of four
 * kiwi_rx_step() walks of the skb; the payload joins the CRC as it is
 * copied, as on the stepwise path, so each byte is read once.
 * The stepwise path's calls come in its order (control word checked,
 * message begun, payload placed, CRC checked, message delivered), so
 * every verdict is the same (include/kiwi/framer.h; the fuzz target and
 * wire_framer hold the framer to it).  Not with markers, which may fall
 * anywhere.  Returns the FPDU's length, 0 to take the stepwise path, or
 * a negative errno once the stream is dead.
 */
static int kiwi_rx_whole(struct kiwi_qp *qp, struct sk_buff *skb, int off,
			 u32 len)
{
	struct kiwi_rx *rx = &qp->rx;
	struct kiwi_framer *fr = &rx->fr;
	u32 avail, total, hdr_len, data, pad;
	const u8 *p;
	int rv;

	if (qp->mk_rx || fr->phase != KIWI_FR_CTRL || fr->got)
		return 0;
	p = kiwi_rx_piece(skb, off, &avail);
	if (!p)
		return 0;
	total = kiwi_fr_whole_len(p, min(avail, len));
	if (!total)
		return 0;
	switch (kiwi_fr_take_hdr(fr, p)) {
	case KIWI_FR_HDR_DONE:
		break;
	case KIWI_FR_BAD_CTRL:
		return kiwi_rx_fail(qp, fr->bad.layer, fr->bad.etype,
				    fr->bad.ecode);
	default:	/* not at a boundary after all: nothing taken */
		WARN_ON_ONCE(1);
		return 0;
	}
	hdr_len = fr->hdr_len;
	data = fr->data_rem;
	if (qp->crc)
		rx->crc = kiwi_crc32c(rx->crc, p, hdr_len);
	rv = kiwi_rx_begin(qp);
	if (rv)
		return rv;
	if (data) {
		rv = kiwi_rx_place(qp, skb, off + hdr_len, data);
		if (rv)
			return rv;
		kiwi_qp_stat_add(qp, KIWI_STAT_RX_BYTES, data);
		kiwi_fr_advance(fr, data);
	}
	pad = total - KIWI_MPA_CRC_LEN - hdr_len - data;
	if (qp->crc && pad)
		rx->crc = kiwi_crc32c(rx->crc, p + hdr_len + data, pad);
	if (WARN_ON_ONCE(kiwi_fr_take_trail(fr, p + hdr_len + data) !=
			 KIWI_FR_FPDU_DONE))
		return kiwi_rx_fail(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
				    KIWI_RC_CATASTROPHIC_STREAM);
	rv = kiwi_rx_trailer_done(qp);
	return rv ? rv : total;
}

static int kiwi_rx_actor(read_descriptor_t *rd, struct sk_buff *skb,
			 unsigned int off, size_t len)
{
	struct kiwi_qp *qp = rd->arg.data;
	size_t done = 0;
	int n;

	while (done < len) {
		if (kiwi_order_dead(&qp->rx.ord)) {
			done = len;	/* discard: the stream is over */
			break;
		}
		n = kiwi_rx_whole(qp, skb, off + done, len - done);
		if (!n)
			n = kiwi_rx_step(qp, skb, off + done, len - done);
		if (n < 0) {
			done = len;
			break;
		}
		done += n;
	}
	rd->count -= min(rd->count, done);	/* 0 ends the read */
	return done;
}

/*
 * Read what the socket holds, up to about @budget bytes (whole skbs),
 * then answer a READ request found on the way.  Bottom halves are off,
 * the socket held.  Returns the bytes read.
 */
static size_t kiwi_rx_read(struct kiwi_qp *qp, struct sock *sk,
			   size_t budget)
{
	read_descriptor_t rd = { .arg.data = qp, .count = budget };
	int n = tcp_read_sock(sk, &rd, kiwi_rx_actor);

	if (qp->rx.resp_due) {
		qp->rx.resp_due = false;
		kiwi_tx_respond(qp, sk);
	}
	return n > 0 ? n : 0;
}

/*
 * Bulk data is placed by a worker on another CPU.  The socket callback
 * runs wherever the peer's packets are processed: over veth and
 * loopback that is the sending CPU, which would then also copy and
 * checksum every byte it receives.  Once rx_offload bytes or more wait
 * in the socket, rx_work takes the stream over under the socket lock
 * and hands it back when the socket is drained.  Small messages stay
 * in the callback, where they cost no wake-up.
 */
static unsigned int kiwi_rx_offload = 16384;
module_param_named(rx_offload, kiwi_rx_offload, uint, 0644);
MODULE_PARM_DESC(rx_offload,
		 "Bytes waiting in a socket that make a worker on another CPU place them (0: never; default 16384)");

/* What rx_work places before it lets the socket's backlog in. */
#define KIWI_RX_WORK_BUDGET	(256 * 1024)

static bool kiwi_rx_bulk(struct sock *sk)
{
	unsigned int min = READ_ONCE(kiwi_rx_offload);

	return min && num_online_cpus() > 1 && tcp_inq(sk) >= min;
}

/*
 * Hand the stream to rx_work (under the socket, as the parser).  Its
 * CPU is picked at the first hand-over (kiwi_cpu_get()), not the one
 * the socket's packets arrive on: that is where the callback runs, and
 * over veth or loopback the CPU the peer sends from.  Until
 * kiwi_rx_stop() it stays: the peer's segments
 * also leave from whichever CPU takes our ACKs, so the arrival CPU
 * wanders, and following it would move the work back and forth.
 */
static void kiwi_rx_kick(struct kiwi_qp *qp, struct sock *sk)
{
	qp->rx.worker = true;
	qp->rx_sk = sk;
	if (qp->rx_cpu < 0)
		qp->rx_cpu = kiwi_cpu_get(READ_ONCE(sk->sk_incoming_cpu));
	queue_work_on(qp->rx_cpu, kiwi_wq, &qp->rx_work);
}

/* The QP the socket delivers to, if any; under sk_callback_lock. */
static struct kiwi_qp *kiwi_rx_sk_qp(struct sock *sk)
{
	return sk->sk_user_data ? kiwi_cm_ep_qp(sk->sk_user_data) : NULL;
}

static bool kiwi_rx_attached(struct kiwi_qp *qp, struct sock *sk)
{
	bool ours;

	read_lock_bh(&sk->sk_callback_lock);
	ours = kiwi_rx_sk_qp(sk) == qp;
	read_unlock_bh(&sk->sk_callback_lock);
	return ours;
}

/*
 * Owning the socket keeps its callback out: segments arriving meanwhile
 * wait in the backlog, which release_sock() then processes here.
 */
static void kiwi_rx_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, rx_work);
	struct sock *sk = qp->rx_sk;
	size_t n;

	lock_sock(sk);
	if (qp->rx.worker && kiwi_rx_attached(qp, sk)) {
		local_bh_disable();
		n = kiwi_rx_read(qp, sk, KIWI_RX_WORK_BUDGET);
		local_bh_enable();
		if (n >= KIWI_RX_WORK_BUDGET && tcp_inq(sk))
			kiwi_rx_kick(qp, sk);	/* more after the backlog */
		else
			qp->rx.worker = false;	/* the callback reads again */
	}
	release_sock(sk);
}

void kiwi_rx_data_ready(struct sock *sk)
{
	struct kiwi_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	qp = kiwi_rx_sk_qp(sk);
	if (qp) {
		/* Serialised with the parser: both run under the socket. */
		qp->rx.t_ready = ktime_get_ns();
		if (qp->rx.worker || kiwi_rx_bulk(sk))
			kiwi_rx_kick(qp, sk);
		else
			kiwi_rx_read(qp, sk, SIZE_MAX);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * The peer closed its half of the stream: place everything it sent
 * before its FIN, which may still wait in the socket (rx_work may not
 * have run yet), so that no message is lost to the close that follows.
 * The endpoint calls this before it lets the socket go; nothing more
 * can arrive, so the loop ends.
 */
void kiwi_rx_drain(struct kiwi_qp *qp, struct sock *sk)
{
	size_t n;

	lock_sock(sk);
	while (tcp_inq(sk) && kiwi_rx_attached(qp, sk)) {
		local_bh_disable();
		n = kiwi_rx_read(qp, sk, KIWI_RX_WORK_BUDGET);
		local_bh_enable();
		if (!n)
			break;
		cond_resched();
	}
	release_sock(sk);
}

void kiwi_rx_init(struct kiwi_qp *qp)
{
	INIT_WORK(&qp->rx_work, kiwi_rx_work);
	qp->rx_cpu = -1;
	kiwi_rx_reset(qp);
}

/*
 * The socket no longer calls us (its callbacks are restored): wait for
 * rx_work to be done with it, before it is released.
 */
void kiwi_rx_stop(struct kiwi_qp *qp)
{
	cancel_work_sync(&qp->rx_work);
	kiwi_cpu_put(qp->rx_cpu);
	qp->rx_cpu = -1;
}

void kiwi_rx_reset(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;

	memset(rx, 0, sizeof(*rx));
	kiwi_fr_init(&rx->fr);
	rx->crc = ~0U;
	kiwi_order_init(&rx->ord, false);
}

/* The socket is detached: give back what a dead stream still holds. */
void kiwi_rx_release(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;

	kiwi_rx_drop_refs(rx);
	if (kiwi_order_release(&rx->ord))	/* a receive WQE still held */
		kiwi_rx_complete(qp, IB_WC_WR_FLUSH_ERR, 0, 0, false);
}

/*
 * Our ready-to-receive message is a zero-length READ (RFC 6581): its
 * zero-length response answers no work request of the consumer's.  At
 * connection, after kiwi_rx_reset(), before the READ can go out.
 */
void kiwi_rx_expect_rtr_read(struct kiwi_qp *qp)
{
	WRITE_ONCE(qp->rx.orq_skip, 1);
}

/*
 * A responder that chose a SEND RTR (RFC 6581) waits for the
 * initiator's: its first SEND.  At connection, after kiwi_rx_reset().
 */
void kiwi_rx_expect_rtr_send(struct kiwi_qp *qp)
{
	qp->rx.ord.rtr = KIWI_RXR_SEND_DUE;
}
