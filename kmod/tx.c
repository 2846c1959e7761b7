// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: transmit path -- builds FPDUs (MPA length, DDP/RDMAP header,
 * payload, pad, CRC32c) and hands them to TCP.
 *
 * One work item per QP does all sending, so FPDUs of different messages
 * never interleave on the stream.  Inbound READ responses and TERMINATE
 * go before new send queue work.  FPDUs are copied out of the registered
 * memory into pages that TCP then takes by reference (see struct
 * kiwi_tx_batch), so a work request may complete as soon as its FPDUs
 * are queued.
 */
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/version.h>
#include <net/tcp.h>

#include "kiwi.h"
#include "trace.h"


/*
 * FPDUs of one message are gathered into a batch and handed to TCP in
 * one go: at an MTU of 1500 a 64 KiB message is 45 FPDUs, and the
 * per-call cost of sending would otherwise rival the copying.
 *
 * Each FPDU is copied -- header, payload, pad and CRC -- into pages of
 * our own, and those pages go to TCP by reference (sendpage; since
 * Linux 6.5 sendmsg() with MSG_SPLICE_PAGES), not copied again.  The
 * payload is read once: the MPA CRC is computed in the same
 * pass as the copy (kiwi_crc_copy_mem()), where letting TCP copy from
 * the registered pages would read them twice, once for the CRC and once
 * for TCP's copy.  The copy also makes a work request complete as soon
 * as its FPDUs are queued: the application can never see its buffer
 * reused while TCP still needs the bytes.
 */
#define KIWI_TX_HDR_MAX		64	/* header scratch; trailer follows */
#define KIWI_TX_SLOT		(KIWI_TX_HDR_MAX + 8)
#define KIWI_TX_BVECS		64	/* page pieces per batch */
#define KIWI_TX_FPDU_BVECS	(MAX_SKB_FRAGS + 4)	/* most per FPDU */
#define KIWI_TX_BATCH_BYTES	(64 * 1024)
#define KIWI_TX_PIECE_MIN	64	/* smaller page tails are skipped */

struct kiwi_tx_batch {
	struct page_frag frag;	/* where the next bytes are copied */
	struct bio_vec bv[KIWI_TX_BVECS];	/* each holds a page ref */
	u32 nbv;
	u32 bytes;
	bool atomic;	/* receive path: socket held, no sleeping */
	u8 hdr[KIWI_TX_SLOT];	/* the FPDU being built: header, trailer */
};

/* Where an FPDU's payload comes from. */
struct kiwi_src {
	struct kiwi_qp *qp;
	const struct kiwi_sge *sge;	/* SGE list, or */
	u32 num_sge;
	const u8 *kbuf;			/* a kernel buffer (inline data) */
	struct kiwi_mem *mem;		/* or one registered region at addr, */
	u32 gen;			/* checked at this generation */
	u64 addr;
};

static void kiwi_tx_batch_reset(struct kiwi_tx_batch *b)
{
	while (b->nbv)
		put_page(b->bv[--b->nbv].bv_page);
	b->bytes = 0;
}

/*
 * Bytes of our page frag that the next copy may fill, refilling it when
 * it is used up (a page only TCP still holds is refilled, ours is not).
 * Returns the room, or -ENOMEM (-EAGAIN in the receive path, where the
 * worker can try again).
 */
static int kiwi_tx_room(struct kiwi_tx_batch *b)
{
	gfp_t gfp = (b->atomic ? GFP_ATOMIC : GFP_KERNEL) | __GFP_NOWARN;
	struct page_frag *f = &b->frag;

	if (!skb_page_frag_refill(KIWI_TX_PIECE_MIN, f, gfp))
		return b->atomic ? -EAGAIN : -ENOMEM;
	return f->size - f->offset;
}

static void *kiwi_tx_frag_va(struct kiwi_tx_batch *b)
{
	return page_address(b->frag.page) + b->frag.offset;
}

/*
 * @n bytes were just copied to the frag: add them to the batch.  Pieces
 * that follow on in one page grow the same bvec.  Returns 0, or -ENOSPC
 * when the bvecs are full.
 */
static int kiwi_tx_commit(struct kiwi_tx_batch *b, u32 n)
{
	struct bio_vec *last = b->nbv ? &b->bv[b->nbv - 1] : NULL;
	struct page_frag *f = &b->frag;

	if (last && last->bv_page == f->page &&
	    last->bv_offset + last->bv_len == f->offset) {
		last->bv_len += n;
	} else {
		if (b->nbv == KIWI_TX_BVECS)
			return -ENOSPC;
		get_page(f->page);
		b->bv[b->nbv++] = (struct bio_vec){
			.bv_page = f->page, .bv_offset = f->offset,
			.bv_len = n,
		};
	}
	f->offset += n;
	b->bytes += n;
	return 0;
}

/* Where kiwi_tx_copy() takes its bytes: a kernel buffer, or a region. */
struct kiwi_tx_from {
	const u8 *p;
	struct kiwi_mem *mem;		/* if set: @addr in it, at @gen */
	u32 gen;
	u64 addr;
};

/*
 * Copy @len bytes from @from to the batch, extending @crc over them
 * unless it is NULL.  Returns 0, -EINVAL if @from's region was
 * invalidated or deregistered since it was checked, or the errors of
 * kiwi_tx_room()/_commit().
 */
static int kiwi_tx_copy(struct kiwi_tx_batch *b, struct kiwi_tx_from *from,
			u32 len, u32 *crc)
{
	while (len) {
		int room = kiwi_tx_room(b);
		void *to;
		u32 n;
		int rv;

		if (room < 0)
			return room;
		n = min_t(u32, len, room);
		to = kiwi_tx_frag_va(b);
		if (!from->mem) {
			kiwi_crc_copy_mem(to, from->p, n, crc);
			from->p += n;
		} else if (kiwi_mem_copy_out(from->mem, from->gen, from->addr,
					     to, n, crc)) {
			from->addr += n;
		} else {
			return -EINVAL;
		}
		rv = kiwi_tx_commit(b, n);
		if (rv)
			return rv;
		len -= n;
	}
	return 0;
}

static int kiwi_tx_put(struct kiwi_tx_batch *b, const void *p, u32 len,
		       u32 *crc)
{
	struct kiwi_tx_from from = { .p = p };

	return kiwi_tx_copy(b, &from, len, crc);
}

/* @len bytes at @addr of @mem, checked at generation @gen. */
static int kiwi_tx_put_mem(struct kiwi_tx_batch *b, struct kiwi_mem *mem,
			   u32 gen, u64 addr, u32 len, u32 *crc)
{
	struct kiwi_tx_from from = { .mem = mem, .gen = gen, .addr = addr };

	return kiwi_tx_copy(b, &from, len, crc);
}

/*
 * Copy payload bytes [@off, @off + @len) of @src to the batch.  Local
 * SGEs are looked up and checked here, at transmit time, so a
 * deregistered buffer can never be sent.  Returns 0, -EINVAL for a bad
 * local SGE (a local protection error), or kiwi_tx_put()'s errors.
 */
static int kiwi_tx_put_src(struct kiwi_tx_batch *b, struct kiwi_src *src,
			   u32 off, u32 len, u32 *crc)
{
	int i, rv;

	if (!len)
		return 0;
	if (src->kbuf)
		return kiwi_tx_put(b, src->kbuf + off, len, crc);
	if (src->mem)
		return kiwi_tx_put_mem(b, src->mem, src->gen, src->addr + off,
				       len, crc);

	for (i = 0; i < src->num_sge && len; i++) {
		const struct kiwi_sge *sge = &src->sge[i];
		struct kiwi_mem *mem;
		u32 chunk, gen;

		if (off >= sge->len) {
			off -= sge->len;
			continue;
		}
		chunk = min(len, sge->len - off);
		mem = kiwi_mem_get(src->qp->kdev, sge->lkey);
		if (!mem)
			return -EINVAL;
		rv = kiwi_mem_check(mem, src->qp->ibqp.pd, sge->addr + off,
				    chunk, 0, &gen);
		if (rv)
			rv = -EINVAL;
		else
			rv = kiwi_tx_put_mem(b, mem, gen, sge->addr + off,
					     chunk, crc);
		kiwi_mem_put(mem);
		if (rv)
			return rv;
		len -= chunk;
		off = 0;
	}
	return len ? -EINVAL : 0;
}

/* The header scratch of the FPDU being built (its trailer follows). */
static u8 *kiwi_tx_slot(struct kiwi_qp *qp)
{
	return qp->tx_batch->hdr;
}

/*
 * Hand the batch's pages to TCP, which takes its own references.
 * Returns the bytes TCP took, or a negative errno if it took none.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
static int kiwi_tx_pages(struct sock *sk, struct kiwi_tx_batch *b, bool more)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | MSG_SPLICE_PAGES };

	if (more)
		msg.msg_flags |= MSG_MORE;
	if (b->atomic)
		msg.msg_flags |= MSG_DONTWAIT;
	iov_iter_bvec(&msg.msg_iter, WRITE, b->bv, b->nbv, b->bytes);
	return tcp_sendmsg_locked(sk, &msg, b->bytes);
}
#else
static int kiwi_tx_pages(struct sock *sk, struct kiwi_tx_batch *b, bool more)
{
	int rv = 0, sent = 0;
	u32 i;

	for (i = 0; i < b->nbv; i++) {
		const struct bio_vec *bv = &b->bv[i];
		int flags = MSG_NOSIGNAL;

		if (i + 1 < b->nbv)	/* push only after the last piece */
			flags |= MSG_MORE | MSG_SENDPAGE_NOTLAST;
		else if (more)
			flags |= MSG_MORE;
		if (b->atomic)
			flags |= MSG_DONTWAIT;
		rv = tcp_sendpage_locked(sk, bv->bv_page, bv->bv_offset,
					 bv->bv_len, flags);
		if (rv > 0)
			sent += rv;
		if (rv != bv->bv_len)
			break;
	}
	return sent ?: rv;
}
#endif

/*
 * The caller holds the socket: lock_sock() in process context, or the
 * receive path's hold in an atomic batch, which must not wait: -EAGAIN
 * then means that nothing of it was sent.  Returns 0 or a negative
 * errno; -EIO after a partial send (the stream is lost).
 */
static int kiwi_tx_push(struct sock *sk, struct kiwi_tx_batch *b, bool more)
{
	int rv = kiwi_tx_pages(sk, b, more);

	if (rv == b->bytes)
		return 0;
	if (rv > 0)
		return -EIO;
	if (b->atomic)
		return -EAGAIN;
	return rv < 0 ? rv : -EIO;
}

static int kiwi_tx_flush(struct socket *sock, struct kiwi_tx_batch *b,
			 bool more)
{
	int rv;

	if (!b->nbv)
		return 0;
	if (b->atomic) {
		rv = kiwi_tx_push(sock->sk, b, more);
	} else {
		lock_sock(sock->sk);
		rv = kiwi_tx_push(sock->sk, b, more);
		release_sock(sock->sk);
	}
	kiwi_tx_batch_reset(b);
	return rv;
}

/*
 * Add one FPDU to the batch: the header in the scratch slot (hdr_len
 * bytes, MPA length filled in here), then @len payload bytes from @src
 * at @off.  The batch goes out when full, and with the last FPDU of a
 * message (!@more).  Returns 0 or a negative errno; -EINVAL means the
 * local source was bad (a local protection error): then nothing of the
 * batch has been sent.
 */
static int kiwi_tx_fpdu(struct kiwi_qp *qp, struct socket *sock,
			u32 hdr_len, struct kiwi_src *src, u32 off, u32 len,
			bool more)
{
	struct kiwi_tx_batch *b = qp->tx_batch;
	u8 *hdr = kiwi_tx_slot(qp);
	struct kiwi_ctrl *ctrl = (struct kiwi_ctrl *)hdr;
	u8 *trailer = hdr + KIWI_TX_HDR_MAX;
	u32 pad = kiwi_mpa_pad(hdr_len + len);
	u32 crc = ~0U, *pcrc = qp->crc ? &crc : NULL;
	int rv;

	ctrl->mpa_len = cpu_to_be16(hdr_len - KIWI_MPA_HDR_LEN + len);
	rv = kiwi_tx_put(b, hdr, hdr_len, pcrc);
	if (!rv)
		rv = kiwi_tx_put_src(b, src, off, len, pcrc);
	if (!rv) {
		memset(trailer, 0, 4);
		if (qp->crc) {
			crc = kiwi_crc32c(crc, trailer, pad);
			put_unaligned_le32(~crc, trailer + pad);
		} else {
			memset(trailer + pad, 0, KIWI_MPA_CRC_LEN);
		}
		rv = kiwi_tx_put(b, trailer, pad + KIWI_MPA_CRC_LEN, NULL);
	}
	if (rv) {
		kiwi_tx_batch_reset(b);	/* unsent: the stream stays framed */
		return rv;
	}

	kiwi_stat_add(qp->kdev, KIWI_STAT_TX_FPDUS, 1);
	kiwi_stat_add(qp->kdev, KIWI_STAT_TX_BYTES, len);

	/* Room for another FPDU in bvecs and bytes? */
	if (more && b->nbv + KIWI_TX_FPDU_BVECS <= KIWI_TX_BVECS &&
	    b->bytes < KIWI_TX_BATCH_BYTES)
		return 0;
	return kiwi_tx_flush(sock, b, more);
}

/*
 * Payload per FPDU with a peer that agreed to large FPDUs: a 64 KiB
 * message is two of them, instead of 45 at an MTU of 1500, and TCP
 * segments them as it likes (its GSO sizes, not its MSS).
 */
#define KIWI_TX_LARGE_PAYLOAD	(32 * 1024)

/*
 * Largest payload per FPDU: one TCP segment (optimized MPA, RFC 5044),
 * unless the peer takes more.
 */
static u32 kiwi_tx_max_payload(struct kiwi_qp *qp, struct socket *sock,
			       u32 hdr_len)
{
	u32 mss = READ_ONCE(tcp_sk(sock->sk)->mss_cache);
	u32 room;

	if (qp->large_fpdu)
		return KIWI_TX_LARGE_PAYLOAD;

	mss = clamp_t(u32, mss, 256, KIWI_MPA_MAX_ULPDU + KIWI_MPA_HDR_LEN);
	room = mss - hdr_len - KIWI_MPA_CRC_LEN;
	/* Non-final segments stay 4-byte aligned: no pad on the wire. */
	room &= ~3U;
	/* Page-bounded too, so the bvec array always suffices. */
	return min_t(u32, room, (KIWI_TX_FPDU_BVECS - 4) * PAGE_SIZE);
}

/* ---- FPDU headers ---- */

static void kiwi_tx_hdr_tagged(struct kiwi_qp *qp, u8 op, bool last,
			       u32 stag, u64 to)
{
	struct kiwi_hdr_tagged *h = (void *)kiwi_tx_slot(qp);

	h->ctrl.ddp_rdmap = cpu_to_be16(kiwi_ddp_rdmap(op, last));
	h->stag = cpu_to_be32(stag);
	h->to = cpu_to_be64(to);
}

static void kiwi_tx_hdr_untagged(struct kiwi_qp *qp, u8 op, bool last,
				 u32 qn, u32 msn, u32 mo, u32 inv)
{
	struct kiwi_hdr_untagged *h = (void *)kiwi_tx_slot(qp);

	h->ctrl.ddp_rdmap = cpu_to_be16(kiwi_ddp_rdmap(op, last));
	h->inv_stag = cpu_to_be32(inv);
	h->qn = cpu_to_be32(qn);
	h->msn = cpu_to_be32(msn);
	h->mo = cpu_to_be32(mo);
}

/* ---- message senders ---- */

/* Send a SEND* or WRITE message, segmenting at the FPDU size. */
static int kiwi_tx_message(struct kiwi_qp *qp, struct socket *sock,
			   struct kiwi_sqe *sqe)
{
	struct kiwi_src src = {
		.qp = qp, .sge = sqe->sge, .num_sge = sqe->num_sge,
		.kbuf = sqe->inline_data,
	};
	bool tagged = sqe->opcode == IB_WR_RDMA_WRITE;
	u8 op;
	u32 hdr_len, seg;
	int rv;

	if (tagged)
		op = KIWI_OP_WRITE;
	else if (sqe->opcode == IB_WR_SEND_WITH_INV)
		op = sqe->flags & IB_SEND_SOLICITED ? KIWI_OP_SEND_SE_INV :
						      KIWI_OP_SEND_INV;
	else
		op = sqe->flags & IB_SEND_SOLICITED ? KIWI_OP_SEND_SE :
						      KIWI_OP_SEND;
	hdr_len = kiwi_hdr_len(op);
	seg = kiwi_tx_max_payload(qp, sock, hdr_len);

	do {
		u32 len = min(seg, sqe->bytes - sqe->sent);
		bool last = sqe->sent + len == sqe->bytes;

		if (tagged)
			kiwi_tx_hdr_tagged(qp, op, last, sqe->rkey,
					   sqe->raddr + sqe->sent);
		else
			kiwi_tx_hdr_untagged(qp, op, last, KIWI_QN_SEND,
					     qp->tx_msn[KIWI_QN_SEND], sqe->sent,
					     kiwi_op(op)->invalidate ?
					     sqe->ex : 0);
		rv = kiwi_tx_fpdu(qp, sock, hdr_len, &src, sqe->sent, len,
				  !last);
		if (rv)
			return rv;
		sqe->sent += len;
	} while (sqe->sent < sqe->bytes);

	if (!tagged)
		qp->tx_msn[KIWI_QN_SEND]++;
	return 0;
}

static int kiwi_tx_read_req(struct kiwi_qp *qp, struct socket *sock,
			    u32 sink_stag, u64 sink_to, u32 len,
			    u32 src_stag, u64 src_to)
{
	struct kiwi_read_req *rr =
		(void *)(kiwi_tx_slot(qp) + sizeof(struct kiwi_hdr_untagged));
	struct kiwi_src none = { .qp = qp };

	kiwi_tx_hdr_untagged(qp, KIWI_OP_READ_REQ, true, KIWI_QN_READ_REQ,
			     qp->tx_msn[KIWI_QN_READ_REQ]++, 0, 0);
	rr->sink_stag = cpu_to_be32(sink_stag);
	rr->sink_to = cpu_to_be64(sink_to);
	rr->size = cpu_to_be32(len);
	rr->src_stag = cpu_to_be32(src_stag);
	rr->src_to = cpu_to_be64(src_to);
	return kiwi_tx_fpdu(qp, sock, kiwi_hdr_len(KIWI_OP_READ_REQ), &none,
			    0, 0, false);
}

/* Answer one inbound READ; the source was validated on receipt. */
static int kiwi_tx_read_resp(struct kiwi_qp *qp, struct socket *sock,
			     struct kiwi_irqe *e)
{
	u32 hdr_len = kiwi_hdr_len(KIWI_OP_READ_RESP);
	u32 seg = kiwi_tx_max_payload(qp, sock, hdr_len);
	struct kiwi_src src = { .qp = qp };
	int rv = 0;

	if (e->len) {
		src.mem = kiwi_mem_get(qp->kdev, e->src_stag);
		if (!src.mem)
			return -EINVAL;
		src.addr = e->src_to;
		rv = kiwi_mem_check(src.mem, qp->ibqp.pd, e->src_to, e->len,
				    IB_ACCESS_REMOTE_READ, &src.gen);
		if (rv) {
			kiwi_mem_put(src.mem);
			return -EINVAL;
		}
	}
	do {
		u32 len = min(seg, e->len - e->sent);
		bool last = e->sent + len == e->len;

		kiwi_tx_hdr_tagged(qp, KIWI_OP_READ_RESP, last, e->sink_stag,
				   e->sink_to + e->sent);
		rv = kiwi_tx_fpdu(qp, sock, hdr_len, &src, e->sent, len,
				  !last);
		if (rv)
			break;
		e->sent += len;
	} while (e->sent < e->len);
	if (src.mem)
		kiwi_mem_put(src.mem);
	if (!rv)
		kiwi_stat_add(qp->kdev, KIWI_STAT_READ_SERVED, 1);
	return rv;
}

static int kiwi_tx_terminate(struct kiwi_qp *qp, struct socket *sock,
			     u32 ctrl)
{
	struct kiwi_term *t =
		(void *)(kiwi_tx_slot(qp) + sizeof(struct kiwi_hdr_untagged));
	struct kiwi_src none = { .qp = qp };

	static const enum kiwi_stat by_layer[] = {
		[KIWI_TL_RDMAP] = KIWI_STAT_TERM_TX_RDMAP,
		[KIWI_TL_DDP] = KIWI_STAT_TERM_TX_DDP,
		[KIWI_TL_LLP] = KIWI_STAT_TERM_TX_LLP,
	};
	u8 layer = ctrl >> KIWI_TERM_LAYER_SHIFT;

	if (layer < ARRAY_SIZE(by_layer))
		kiwi_stat_add(qp->kdev, by_layer[layer], 1);
	trace_kiwi_terminate(dev_name(&qp->ibqp.device->dev), qp->ibqp.qp_num,
			     true, ctrl);
	kiwi_tx_hdr_untagged(qp, KIWI_OP_TERMINATE, true, KIWI_QN_TERMINATE,
			     qp->tx_msn[KIWI_QN_TERMINATE]++, 0, 0);
	t->ctrl = cpu_to_be32(ctrl);
	return kiwi_tx_fpdu(qp, sock, kiwi_hdr_len(KIWI_OP_TERMINATE), &none,
			    0, 0, false);
}

/* RFC 6581 ready-to-receive: the zero-length message the peer chose. */
static int kiwi_tx_send_rtr(struct kiwi_qp *qp, struct socket *sock, u8 kind)
{
	struct kiwi_src none = { .qp = qp };

	switch (kind) {
	case KIWI_MPA_RTR_READ:
		/* Our receive path swallows the zero-length response. */
		WRITE_ONCE(qp->rx.orq_skip, 1);
		return kiwi_tx_read_req(qp, sock, 0, 0, 0, 0, 0);
	case KIWI_MPA_RTR_SEND:
		kiwi_tx_hdr_untagged(qp, KIWI_OP_SEND, true, KIWI_QN_SEND,
				     qp->tx_msn[KIWI_QN_SEND]++, 0, 0);
		return kiwi_tx_fpdu(qp, sock, kiwi_hdr_len(KIWI_OP_SEND),
				    &none, 0, 0, false);
	default:
		kiwi_tx_hdr_tagged(qp, KIWI_OP_WRITE, true, 0, 0);
		return kiwi_tx_fpdu(qp, sock, kiwi_hdr_len(KIWI_OP_WRITE),
				    &none, 0, 0, false);
	}
}

/* ---- the work loop ---- */

/*
 * Take the next inbound READ to answer.  Its IRD slot is freed before
 * the response goes out: the peer may issue its next READ the moment
 * the last response byte arrives, before the send call returns here.
 */
/* Under irq_lock: drop the oldest inbound READ. */
static void kiwi_irq_pop(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->irq_lock);
	qp->irq_head = (qp->irq_head + 1) % KIWI_MAX_IRD;
	qp->irq_count--;
}

static bool kiwi_irq_take(struct kiwi_qp *qp, struct kiwi_irqe *e)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&qp->irq_lock, flags);
	if (qp->irq_count) {
		*e = qp->irq[qp->irq_head];
		kiwi_irq_pop(qp);
		ok = true;
	}
	spin_unlock_irqrestore(&qp->irq_lock, flags);
	return ok;
}

static int kiwi_tx_sqe(struct kiwi_qp *qp, struct socket *sock,
		       struct kiwi_sqe *sqe)
{
	int rv;

	switch (sqe->opcode) {
	case IB_WR_REG_MR:
		rv = kiwi_mem_fast_reg(qp, sqe->rkey, sqe->ex, sqe->raddr);
		kiwi_sq_sent(qp, sqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS);
		return rv;
	case IB_WR_LOCAL_INV:
		rv = kiwi_mem_invalidate(qp, sqe->ex);
		kiwi_sq_sent(qp, sqe, rv ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS);
		return rv;
	default:
		break;
	}
	if (kiwi_wr_is_read(sqe->opcode)) {
		/* The local sink is checked when the response arrives. */
		kiwi_sq_read_posted(qp, sqe);
		return kiwi_tx_read_req(qp, sock, sqe->sge[0].lkey,
					sqe->sge[0].addr, sqe->bytes,
					sqe->rkey, sqe->raddr);
	} else {
		rv = kiwi_tx_message(qp, sock, sqe);
	}
	if (rv == -EINVAL) {
		kiwi_sq_sent(qp, sqe, IB_WC_LOC_PROT_ERR);
		return rv;
	}
	if (!rv)
		kiwi_sq_sent(qp, sqe, IB_WC_SUCCESS);
	return rv;
}

static struct socket *kiwi_tx_sock(struct kiwi_qp *qp)
{
	struct socket *sock;

	mutex_lock(&qp->state_lock);
	sock = qp->sock;
	mutex_unlock(&qp->state_lock);
	return sock;
}

/*
 * tx_owned bit 0 is held while FPDUs are built and sent: by a process
 * context sender (under tx_mutex, for a whole run, sleeping in TCP
 * at times), or by the receive path answering a READ, which only tries
 * and never waits.  The latter holds it briefly with bottom halves off,
 * so spinning here for it is short.
 */
static bool kiwi_tx_try_own(struct kiwi_qp *qp)
{
	return !test_and_set_bit_lock(0, &qp->tx_owned);
}

static void kiwi_tx_own(struct kiwi_qp *qp)
{
	while (!kiwi_tx_try_own(qp))
		cpu_relax();
}

static void kiwi_tx_disown(struct kiwi_qp *qp)
{
	clear_bit_unlock(0, &qp->tx_owned);
}

/* What a failed send means for the QP. */
static void kiwi_tx_failed(struct kiwi_qp *qp, int rv)
{
	if (rv == -EINVAL)
		/* Our own bad source: a local error, report and stop. */
		kiwi_qp_error(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			      KIWI_RC_CATASTROPHIC_STREAM);
	else if (rv)
		kiwi_qp_error(qp, KIWI_TL_LLP, 0, KIWI_LC_TCP_ERR);
}

/* Bytes a WQE puts on the wire: a READ request is small, whatever it asks. */
static u32 kiwi_sqe_wire_bytes(const struct kiwi_sqe *sqe)
{
	return kiwi_wr_is_read(sqe->opcode) ? 0 : sqe->bytes;
}

/*
 * Send what is due: a TERMINATE, the RTR message, READ responses, then
 * send queue work.  With a @budget (bytes, from the doorbell) stop before
 * READ responses or a WQE that would exceed it.  Returns true if work is
 * left for the worker.  Under tx_mutex and tx_owned: one sender per QP.
 */
static bool __kiwi_tx_run(struct kiwi_qp *qp, struct socket *sock,
			  u32 budget)
{
	bool inline_tx = budget, left = false;
	struct kiwi_irqe e;
	struct kiwi_sqe *sqe;
	int rv = 0;

	if (READ_ONCE(qp->term_pending)) {
		WRITE_ONCE(qp->term_pending, false);
		kiwi_tx_terminate(qp, sock, qp->term_ctrl);
		return false;
	}
	if (qp->rtr_pending) {
		rv = kiwi_tx_send_rtr(qp, sock, qp->rtr_pending);
		qp->rtr_pending = 0;
	}
	while (!rv && kiwi_qp_state(qp) == KIWI_QP_RTS &&
	       !READ_ONCE(qp->term_pending)) {
		if (inline_tx && READ_ONCE(qp->irq_count)) {
			left = true;
			break;
		}
		if (kiwi_irq_take(qp, &e)) {
			rv = kiwi_tx_read_resp(qp, sock, &e);
			continue;
		}
		sqe = kiwi_sq_next(qp);
		if (!sqe)
			break;
		if (inline_tx) {
			if (kiwi_sqe_wire_bytes(sqe) > budget) {
				left = true;
				break;
			}
			budget -= kiwi_sqe_wire_bytes(sqe);
		}
		rv = kiwi_tx_sqe(qp, sock, sqe);
	}
	kiwi_tx_failed(qp, rv);
	return left || READ_ONCE(qp->term_pending);
}

static bool kiwi_tx_run(struct kiwi_qp *qp, struct socket *sock, u32 budget)
{
	bool left;

	kiwi_tx_own(qp);
	left = __kiwi_tx_run(qp, sock, budget);
	kiwi_tx_disown(qp);
	return left;
}

/*
 * The socket is read under tx_mutex, which kiwi_qp_disconnected() also
 * holds to clear qp->sock: a run that saw the socket ends before it is
 * released.
 */
void kiwi_tx_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, tx_work);
	struct socket *sock;
	bool left = false;

	/* A completion was lost to a full CQ (kiwi_qp_cq_add()). */
	if (READ_ONCE(qp->cq_overflow))
		kiwi_qp_error(qp, KIWI_TL_RDMAP, KIWI_RT_CATASTROPHIC,
			      KIWI_RC_CATASTROPHIC_STREAM);
	mutex_lock(&qp->tx_mutex);
	sock = kiwi_tx_sock(qp);
	if (sock)
		left = kiwi_tx_run(qp, sock, 0);
	mutex_unlock(&qp->tx_mutex);
	if (left)
		kiwi_tx_kick(qp);
	else if (wq_has_sleeper(&qp->tx_idle))
		wake_up(&qp->tx_idle);	/* kiwi_qp_disconnected() waits */
}

/*
 * From a user's doorbell (process context): send small work right here
 * instead of waking the worker, which under load costs more than the
 * send itself.  Only when the socket has ample room, so sending does
 * not block the caller, and only up to KIWI_TX_INLINE_MAX bytes; the
 * worker does the rest.
 */
#define KIWI_TX_INLINE_MAX	4096
#define KIWI_TX_INLINE_ROOM	(64 * 1024)

void kiwi_tx_now(struct kiwi_qp *qp)
{
	struct socket *sock;
	bool left = true;

	if (!mutex_trylock(&qp->tx_mutex)) {
		kiwi_tx_kick(qp);	/* the current sender may be done */
		return;
	}
	sock = kiwi_tx_sock(qp);
	if (sock && !work_pending(&qp->tx_work) &&
	    sk_stream_wspace(sock->sk) >= KIWI_TX_INLINE_ROOM)
		left = kiwi_tx_run(qp, sock, KIWI_TX_INLINE_MAX);
	mutex_unlock(&qp->tx_mutex);
	if (left)
		kiwi_tx_kick(qp);
}

/*
 * Each connection sends from one CPU.  Over loopback and veth the
 * receiver's TCP runs on the sending CPU's backlog; a sender hopping
 * between CPUs reorders its own segments there, and the peer's
 * duplicate ACKs then cost fast retransmits and a halved congestion
 * window.  The CPU is chosen at the first kick, and not the kicking
 * CPU: that one runs the application posting the work (or the softirq
 * of the peer that asked for it), which is then left to itself.
 */
void kiwi_tx_kick(struct kiwi_qp *qp)
{
	int cpu = READ_ONCE(qp->tx_cpu);

	if (cpu == KIWI_TX_CPU_PICK) {
		int pick = kiwi_pick_cpu(raw_smp_processor_id());
		int old = cmpxchg(&qp->tx_cpu, KIWI_TX_CPU_PICK, pick);

		cpu = old == KIWI_TX_CPU_PICK ? pick : old;	/* first wins */
	}
	queue_work_on(cpu, kiwi_wq, &qp->tx_work);
}

/* At connection: send what was posted before, leaving the CPU unpicked. */
void kiwi_tx_start(struct kiwi_qp *qp)
{
	queue_work(kiwi_wq, &qp->tx_work);
}

/*
 * Answer a small READ from the receive path (socket callback, socket
 * held): no worker wake-up, and a local requester gets the response in
 * the same softirq.  Only when no other sender is active, no older READ
 * waits and TCP has room: the response then goes out whole or, if TCP
 * takes none of it, is left to the worker.  Returns true if it is done.
 */
static bool kiwi_tx_resp_atomic(struct kiwi_qp *qp, struct sock *sk)
{
	struct kiwi_tx_batch *b = qp->tx_batch;
	gfp_t gfp = sk->sk_allocation;
	struct kiwi_irqe e;
	unsigned long flags;
	bool ok;
	int rv;

	if (kiwi_qp_state(qp) != KIWI_QP_RTS ||
	    READ_ONCE(qp->term_pending) || READ_ONCE(qp->rtr_pending) ||
	    b->nbv || !sk->sk_socket ||
	    sk_stream_wspace(sk) < KIWI_TX_INLINE_ROOM)
		return false;
	spin_lock_irqsave(&qp->irq_lock, flags);
	e = qp->irq[qp->irq_head];
	ok = qp->irq_count == 1 && e.len <= KIWI_TX_INLINE_MAX;
	spin_unlock_irqrestore(&qp->irq_lock, flags);
	if (!ok)
		return false;

	/* No sleeping allocations, and not the interrupted task's frag. */
	sk->sk_allocation = GFP_ATOMIC;
	b->atomic = true;
	rv = kiwi_tx_read_resp(qp, sk->sk_socket, &e);
	b->atomic = false;
	sk->sk_allocation = gfp;
	/* Nothing sent: the worker sends it, or reports the bad source. */
	if (rv == -EAGAIN || rv == -EINVAL)
		return false;

	spin_lock_irqsave(&qp->irq_lock, flags);
	kiwi_irq_pop(qp);
	spin_unlock_irqrestore(&qp->irq_lock, flags);
	kiwi_tx_failed(qp, rv);	/* after a partial send the stream is lost */
	return true;
}

void kiwi_tx_respond(struct kiwi_qp *qp, struct sock *sk)
{
	bool done = false;

	local_bh_disable();
	if (kiwi_tx_try_own(qp)) {
		done = kiwi_tx_resp_atomic(qp, sk);
		kiwi_tx_disown(qp);
	}
	local_bh_enable();
	if (!done)
		kiwi_tx_kick(qp);
}

int kiwi_tx_init(struct kiwi_qp *qp)
{
	INIT_WORK(&qp->tx_work, kiwi_tx_work);
	init_waitqueue_head(&qp->tx_idle);
	qp->tx_cpu = WORK_CPU_UNBOUND;	/* until connected */
	mutex_init(&qp->tx_mutex);
	spin_lock_init(&qp->irq_lock);
	qp->tx_batch = kzalloc(sizeof(*qp->tx_batch), GFP_KERNEL);
	qp->irq = kcalloc(KIWI_MAX_IRD, sizeof(*qp->irq), GFP_KERNEL);
	if (!qp->tx_batch || !qp->irq) {
		kiwi_tx_free(qp);
		return -ENOMEM;
	}
	return 0;
}

void kiwi_tx_free(struct kiwi_qp *qp)
{
	if (qp->tx_batch) {
		kiwi_tx_batch_reset(qp->tx_batch);
		if (qp->tx_batch->frag.page)
			put_page(qp->tx_batch->frag.page);
	}
	kfree(qp->tx_batch);
	kfree(qp->irq);
	qp->tx_batch = NULL;
	qp->irq = NULL;
}
