// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the MPA layer of the transmit path (RFC 5044 section 4) -- one
 * FPDU at a time: its length field, the DDP/RDMAP header the sender
 * hands in, the payload copied out of registered memory with
 * the CRC32c computed in the same pass, pad and CRC; gathered into a
 * batch of pages that TCP takes by reference.  tx.c decides what to
 * send; this file frames it and pushes it, and at the connection's end
 * shuts the socket down (kiwi_tx_disconnect()).
 */
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/version.h>
#include <net/tcp.h>

#include "fpdu.h"
#include "stag.h"

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
	/*
	 * MPA markers (RFC 5044 4.3), when the peer asked for them: mk is
	 * where the next byte batched goes in the stream, mk_sent the
	 * position of the first byte TCP has not taken.  A batch dropped
	 * unsent takes the position back there.
	 */
	bool mk_on;
	struct kiwi_mk_tx mk;
	u32 mk_sent;
	u32 mk_count;		/* markers in the FPDU being built */
};

static void kiwi_tx_batch_reset(struct kiwi_tx_batch *b)
{
	while (b->nbv)
		put_page(b->bv[--b->nbv].bv_page);
	b->bytes = 0;
	b->mk.pos = b->mk_sent;
	b->mk_count = 0;
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
	u64 gen;
	u64 addr;
};

/*
 * Copy @len bytes from @from to the batch, extending @crc over them
 * unless it is NULL.  Returns 0, -EINVAL if @from's region was
 * invalidated or deregistered since it was checked, or the errors of
 * kiwi_tx_room()/_commit().
 */
static int kiwi_tx_copy_raw(struct kiwi_tx_batch *b,
			    struct kiwi_tx_from *from, u32 len, u32 *crc)
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

/* The marker that is due, into the batch and (if @crc) the CRC. */
static int kiwi_tx_marker(struct kiwi_tx_batch *b, u32 *crc)
{
	u8 m[KIWI_MK_LEN];
	struct kiwi_tx_from from = { .p = m };

	kiwi_mk_tx_marker(&b->mk, m);
	b->mk_count++;
	return kiwi_tx_copy_raw(b, &from, KIWI_MK_LEN, crc);
}

/*
 * As kiwi_tx_copy_raw(), with a marker before every byte that falls on
 * one (RFC 5044 4.3): the CRC covers the markers among the FPDU's bytes.
 */
static int kiwi_tx_copy(struct kiwi_tx_batch *b, struct kiwi_tx_from *from,
			u32 len, u32 *crc)
{
	int rv;

	if (!b->mk_on)
		return kiwi_tx_copy_raw(b, from, len, crc);
	while (len) {
		u32 n = kiwi_mk_tx_room(&b->mk);

		if (!n) {
			rv = kiwi_tx_marker(b, crc);
			if (rv)
				return rv;
			continue;
		}
		n = min(n, len);
		rv = kiwi_tx_copy_raw(b, from, n, crc);
		if (rv)
			return rv;
		kiwi_mk_tx_sent(&b->mk, n);
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
			   u64 gen, u64 addr, u32 len, u32 *crc)
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
		u32 chunk;
		u64 gen;

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
	if (!rv)
		b->mk_sent = b->mk.pos;	/* TCP has it all */
	kiwi_tx_batch_reset(b);
	return rv;
}

/*
 * Wake a sender sleeping in TCP for room (sk_stream_wait_memory()), so
 * that it sees a shutdown or error and returns.  TCP's own state-change
 * callback would, but kiwi's replaces it (cm.c), and a zero window frees
 * no memory, so no write-space wake-up ever comes either.
 */
static void kiwi_tx_unblock(struct socket *sock)
{
	struct socket_wq *wq;

	rcu_read_lock();
	wq = rcu_dereference(sock->sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_all(&wq->wait);
	rcu_read_unlock();
}

/*
 * Stop transmit on @sock for good (qp.c, the connection going away): a
 * pending TERMINATE gets a short chance to leave first, then the socket
 * is shut down and detached from the QP.
 */
void kiwi_tx_disconnect(struct kiwi_qp *qp, struct socket *sock)
{
	/*
	 * Until the TERMINATE is out and the sender has let go of the
	 * socket: the worker wakes tx.idle after releasing tx.mutex.  At
	 * most a second: a peer that does not read may never take it.
	 */
	if (!wait_event_timeout(qp->tx.idle, !READ_ONCE(qp->tx.term_pending) &&
				!mutex_is_locked(&qp->tx.mutex), HZ))
		kiwi_qp_dbg(qp, "sender still busy after 1 s%s: socket shut down\n",
			    READ_ONCE(qp->tx.term_pending) ?
			    ", TERMINATE unsent" : "");
	/*
	 * A sender stuck in TCP for want of room (a peer that stopped
	 * reading or ACKing: it can last forever) holds tx.mutex: make it
	 * fail and let go.  After the shutdown every send fails at once.
	 */
	kernel_sock_shutdown(sock, SHUT_RDWR);
	kiwi_tx_unblock(sock);
	/*
	 * Senders read qp->sock under tx.mutex (the worker, a doorbell):
	 * once it is cleared under the same mutex, none still uses it.
	 */
	mutex_lock(&qp->tx.mutex);
	mutex_lock(&qp->state_lock);
	WRITE_ONCE(qp->sock, NULL);
	mutex_unlock(&qp->state_lock);
	mutex_unlock(&qp->tx.mutex);
	flush_work(&qp->tx.work);
}

/*
 * Add one FPDU to the batch: @hdr_len bytes of the caller's header @hdr
 * (its MPA length is filled in here), then @len payload bytes from @src
 * at @off, pad and CRC.  The batch goes out when full, and with the last
 * FPDU of a message (!@more).  Returns 0 or a negative errno; -EINVAL
 * means the local source was bad (a local protection error): then
 * nothing of the batch has been sent.
 *
 * Every byte put in the batch is copied into its pages at once
 * (kiwi_tx_put()); the batch keeps no pointer to @hdr or to the
 * trailer here, so both may live on the stack and be gone on return.
 */
int kiwi_tx_fpdu(struct kiwi_qp *qp, struct socket *sock,
		 union kiwi_tx_hdr *hdr, u32 hdr_len, struct kiwi_src *src,
		 u32 off, u32 len, bool more)
{
	struct kiwi_tx_batch *b = qp->tx.batch;
	u8 trailer[4 + KIWI_MPA_CRC_LEN] = {};	/* pad, then the CRC */
	u32 pad = kiwi_mpa_pad(hdr_len + len);
	u32 crc = ~0U, *pcrc = qp->crc ? &crc : NULL;
	int rv;

	/* ULPDU_Length counts no markers (RFC 5044 4.1). */
	hdr->ctrl.mpa_len = cpu_to_be16(hdr_len - KIWI_MPA_HDR_LEN + len);
	kiwi_mk_tx_fpdu(&b->mk);
	rv = kiwi_tx_put(b, hdr->bytes, hdr_len, pcrc);
	if (!rv)
		rv = kiwi_tx_put_src(b, src, off, len, pcrc);
	if (!rv)
		rv = kiwi_tx_put(b, trailer, pad, pcrc);
	/*
	 * A marker right after the pad is this FPDU's (RFC 5044 4.4): its
	 * CRC covers it.  The CRC field itself is 4-aligned in the stream,
	 * as every FPDU and marker is, so no marker falls inside it.
	 */
	if (!rv && b->mk_on && !kiwi_mk_tx_room(&b->mk))
		rv = kiwi_tx_marker(b, pcrc);
	if (!rv) {
		if (qp->crc)
			put_unaligned_le32(~crc, trailer + pad);
		rv = kiwi_tx_put(b, trailer + pad, KIWI_MPA_CRC_LEN, NULL);
	}
	if (rv) {
		kiwi_tx_batch_reset(b);	/* unsent: the stream stays framed */
		return rv;
	}

	kiwi_qp_stat_add(qp, KIWI_STAT_TX_FPDUS, 1);
	kiwi_qp_stat_add(qp, KIWI_STAT_TX_BYTES, len);
	if (b->mk_count) {
		kiwi_qp_stat_add(qp, KIWI_STAT_TX_MARKERS, b->mk_count);
		b->mk_count = 0;
	}

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
u32 kiwi_tx_max_payload(struct kiwi_qp *qp, struct socket *sock,
			       u32 hdr_len)
{
	u32 mss = READ_ONCE(tcp_sk(sock->sk)->mss_cache);
	u32 room;

	if (qp->large_fpdu)
		return KIWI_TX_LARGE_PAYLOAD;

	mss = clamp_t(u32, mss, 256, KIWI_MPA_MAX_ULPDU + KIWI_MPA_HDR_LEN);
	/* RFC 5044 4.5: room for the worst case of markers too. */
	if (qp->mk_tx)
		room = kiwi_mk_mulpdu(mss) - (hdr_len - KIWI_MPA_HDR_LEN);
	else
		room = mss - hdr_len - KIWI_MPA_CRC_LEN;
	/* Non-final segments stay 4-byte aligned: no pad on the wire. */
	room &= ~3U;
	/* Page-bounded too, so the bvec array always suffices. */
	return min_t(u32, room, (KIWI_TX_FPDU_BVECS - 4) * PAGE_SIZE);
}

/*
 * A new connection: markers from its first byte of Full Operation
 * Phase, if the peer asked for them.  Nothing is batched yet.
 */
void kiwi_tx_markers_init(struct kiwi_qp *qp)
{
	struct kiwi_tx_batch *b = qp->tx.batch;

	b->mk_on = qp->mk_tx;
	kiwi_mk_tx_init(&b->mk);
	b->mk_sent = 0;
}

/* The batch of a QP's transmit path, or NULL for no memory. */
struct kiwi_tx_batch *kiwi_tx_batch_alloc(void)
{
	return kzalloc(sizeof(struct kiwi_tx_batch), GFP_KERNEL_ACCOUNT);
}

void kiwi_tx_batch_free(struct kiwi_tx_batch *b)
{
	if (!b)
		return;
	kiwi_tx_batch_reset(b);
	if (b->frag.page)
		put_page(b->frag.page);
	kfree(b);
}

/* Nothing gathered and not yet handed to TCP? */
bool kiwi_tx_batch_empty(const struct kiwi_tx_batch *b)
{
	return !b->nbv;
}

/*
 * From the receive path (socket held, softirq): no waiting for socket
 * space, a push that TCP cannot take at once fails with -EAGAIN.
 */
void kiwi_tx_batch_atomic(struct kiwi_tx_batch *b, bool atomic)
{
	b->atomic = atomic;
}
