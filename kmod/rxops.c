// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: receive path, each opcode's own work -- the rows of kiwi_rx_ops[]
 * (begin once an FPDU's header is in and rxorder.h let it through, place
 * for each run of its payload, end once its CRC is in) and the helpers
 * they share: direct placement into registered memory (tagged) or into
 * receive WQEs (untagged), READ and Atomic Requests queued for tx.c,
 * responses matched to our outstanding READs and atomics (sq.c).  A row
 * checks what needs the QP's memory and queues; the stream, the framing
 * and the checks common to every opcode are rx.c's, the TERMINATE row is
 * rxterm.c's.  Same contexts as rx.c: the socket callback or rx_work.
 */
#include <linux/skbuff.h>

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
int kiwi_rx_fail(struct kiwi_qp *qp, u8 layer, u8 etype, u8 ecode)
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

int kiwi_rx_refuse(struct kiwi_qp *qp, struct kiwi_verdict v)
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
 * What the receive path does with each opcode (struct kiwi_rx_op,
 * rxterm.h).  The rows without place have a fixed body, so their begin
 * refuses any payload.  A new opcode is a row here and one in
 * kiwi_op_descs.
 */
#define KIWI_RX_OP(b, p, e)	{ .begin = (b), .place = (p), .end = (e) }
#define KIWI_RX_SEND	KIWI_RX_OP(kiwi_rx_begin_send, kiwi_rx_place_send, \
				   kiwi_rx_end_send)
#define KIWI_RX_IMM	KIWI_RX_OP(kiwi_rx_begin_imm, NULL, kiwi_rx_end_imm)
const struct kiwi_rx_op kiwi_rx_ops[KIWI_OP_MAX] = {
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

/* The socket is detached: give back what a dead stream still holds. */
void kiwi_rx_release(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = &qp->rx;

	kiwi_rx_drop_refs(rx);
	if (kiwi_order_release(&rx->ord))	/* a receive WQE still held */
		kiwi_rx_complete(qp, IB_WC_WR_FLUSH_ERR, 0, 0, false);
}
