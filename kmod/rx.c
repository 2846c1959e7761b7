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
 * Each opcode is a row of kiwi_rx_ops[] (rxops.c, rxterm.c): begin once
 * its header is in, place for each run of its payload, end once its CRC
 * is in.  What may follow what (queue number, MSN, MO, the RTR,
 * Immediate Data after a WRITE) is checked for every opcode in one
 * place, kiwi_rx_begin(), by include/kiwi/rxorder.h, which also keeps
 * the message state; a row's begin checks what needs the QP's memory
 * and queues.  This file is the stream: framing, markers, CRC, the
 * dispatch to the rows, the socket callback and rx_work.
 */
#include <linux/skbuff.h>
#include <net/tcp.h>

#include "rxterm.h"
#include "stag.h"

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
