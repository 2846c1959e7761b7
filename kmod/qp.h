/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the QP layer -- the queue pair (struct kiwi_qp: its state word
 * and the helpers that read it, its counters, its send and receive
 * queues), the SRQ, and the calls of qp.c, qpev.c, qpverbs.c, sq.c, rq.c
 * and post.c that the rest of the module and each other make.  Included by every file
 * that works on a QP; it includes the headers of what a QP holds
 * (ring.h, wr.h, rx.h, tx.h).  The QP and SRQ verbs are in verbs.h.
 */
#ifndef KIWI_QP_H
#define KIWI_QP_H

#include <kiwi/qpfsm.h>

#include "ring.h"
#include "wr.h"
#include "rx.h"
#include "tx.h"

struct kiwi_cq;
struct kiwi_cqe;

struct kiwi_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;
	struct kiwi_ring ring;		/* of struct kiwi_urqe */
	u32 max_wr;			/* as requested/reported */
	u32 max_sge;
	u32 limit;			/* srq_limit; 0 = disarmed */
};

struct kiwi_qp {
	struct ib_qp ibqp;
	struct kiwi_device *kdev;
	struct kref ref;		/* iw_cm and CM endpoint references */
	struct completion freed;	/* last reference dropped */
	atomic_t lookup_refs;		/* kiwi_get_qp() refs not yet handed over */

	/*
	 * The iWARP state (bits 0-7) and the IB state query_qp reports
	 * (bits 8-15) in one word, so they change together: written only
	 * by kiwi_qp_next(), read with kiwi_qp_state()/kiwi_qp_ib_state().
	 * state_lock serialises the transitions that process context makes
	 * with their side effects; the data path's (RTS or CLOSING to
	 * TERMINATE) takes no lock and races them through the one cmpxchg.
	 */
	struct mutex state_lock;
	u32 st;

	/*
	 * The actions the data path's events leave to process context
	 * (BIT(KIWI_QPT_*), set by qpev.c) and the work item that does
	 * them (qp.c).
	 */
	atomic_long_t ev_todo;
	struct work_struct ev_work;

	/*
	 * Names the QP to the type 2 windows bound to it: unique for the
	 * module's lifetime, unlike the QP number or the address; drawn
	 * at the first bind (kiwi_mem_qp_token()), 0 before.
	 */
	u64 mw_token;

	struct kiwi_cq *scq;
	struct kiwi_cq *rcq;
	struct kiwi_srq *srq;
	enum ib_sig_type sq_sig_type;

	/*
	 * Send queue: WQEs from sq_ring's consumer index (the oldest not
	 * retired) to its producer's are posted; the first sq_tx of them
	 * have been transmitted; sq_cur holds the next one while it is
	 * being sent.  sq_tx is a count from the consumer index, not a
	 * third index in sq_ring.q: retiring a WQE moves the consumer index
	 * and takes one off sq_tx, so the transmit position stays put, and
	 * the loops over transmitted WQEs run to it directly.  Only the SQ
	 * has such a cursor, so it is kept here, under sq_lock.
	 */
	spinlock_t sq_lock;
	struct kiwi_ring sq_ring;	/* of struct kiwi_usqe */
	struct kiwi_sq_slot *sq;	/* sq_size entries */
	u32 sq_size;			/* slots; power of two */
	u32 sq_tx;			/* WQEs from the oldest transmitted */
	bool sq_loaded;			/* sq_cur is the WQE after those */
	bool sq_failed;			/* a WR completed in error: flush */
	u32 sq_orq_count;		/* ORQ: READs and atomics unanswered */
	struct kiwi_sqe sq_cur;
	u8 sq_inline[KIWI_MAX_INLINE];

	spinlock_t rq_lock;
	struct kiwi_ring rq_ring;	/* of struct kiwi_urqe; none with SRQ */

	/* Connection, once the CM has bound one (under state_lock). */
	struct kiwi_ep *ep;
	struct socket *sock;
	bool crc;			/* MPA CRC32c negotiated */
	bool large_fpdu;		/* peer takes FPDUs beyond a segment */
	bool mk_tx;			/* MPA markers: the peer wants them */
	bool mk_rx;			/* ... we asked for them */
	bool imm_tx;			/* may send RFC 7306 Immediate Data */
	bool atomic;			/* RFC 7306 atomics, both directions */

	struct kiwi_rx rx;
	struct work_struct rx_work;	/* places bulk data off the softirq */
	struct sock *rx_sk;		/* rx_work's socket */
	int rx_cpu;			/* where rx_work runs, -1 unpicked */

	struct kiwi_tx tx;

	struct ib_qp_cap cap;		/* as granted */
	int access;			/* IB_ACCESS_REMOTE_* granted to peer */
	u32 ird;
	u32 ord;
	u16 rtr;			/* RFC 6581 RTR kind agreed, or 0 */
	bool user;
	struct pid *owner;		/* user QPs: the creating process */
	bool cq_overflow;		/* a completion was lost: QP fails */
	/*
	 * The counter `rdma statistic qp bind` put this QP in, or NULL for
	 * the device's.  Set by the counter ops under the core's counter
	 * lock; the data path reads it under RCU (kiwi_qp_stat_add()).
	 */
	struct kiwi_counter __rcu *counter;
};

/*
 * Count @n of counter @s for @qp: into the QP's bound counter if it has
 * one, else the device's.  Never both: the core adds the bound counters
 * to the device's figures when it reports them.  Any context.
 */
static inline void kiwi_qp_stat_add(struct kiwi_qp *qp, enum kiwi_stat s,
				    u64 n)
{
	struct kiwi_stats __percpu *pc = qp->kdev->stats;
	struct kiwi_counter *c;

	rcu_read_lock();
	c = rcu_dereference(qp->counter);
	if (c)
		pc = c->stats;
	this_cpu_add(pc->v[s], n);
	rcu_read_unlock();
}

/*
 * The time since @since_ns (ktime_get_ns()) into @qp's latency
 * histogram @h, KIWI_STAT_RX_LAT or KIWI_STAT_TX_LAT.  Any context.
 */
static inline void kiwi_qp_lat(struct kiwi_qp *qp, enum kiwi_stat h,
			       u64 since_ns)
{
	u64 us = div_u64(ktime_get_ns() - since_ns, NSEC_PER_USEC);
	int b = us ? fls64(us) - 1 : 0;

	kiwi_qp_stat_add(qp, h + min(b, KIWI_LAT_BUCKETS - 1), 1);
}

static inline struct kiwi_srq *to_ksrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct kiwi_srq, ibsrq);
}

static inline struct kiwi_qp *to_kqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct kiwi_qp, ibqp);
}

#define KIWI_QP_ST(state, ib_state)	((u32)(state) | (u32)(ib_state) << 8)

static inline enum kiwi_qp_state kiwi_qp_state(const struct kiwi_qp *qp)
{
	return READ_ONCE(qp->st) & 0xff;
}

static inline enum ib_qp_state kiwi_qp_ib_state(const struct kiwi_qp *qp)
{
	return READ_ONCE(qp->st) >> 8;
}

/* What the engines report to their QP: kiwi_qp_event() (qpev.c). */
enum kiwi_qp_ev {
	KIWI_QP_EV_LOCAL_ERROR,	/* a protocol error here: send TERMINATE */
	KIWI_QP_EV_LLP_ERROR,	/* the TCP stream failed */
	KIWI_QP_EV_PEER_TERM,	/* the peer's TERMINATE arrived */
	KIWI_QP_EV_CQ_OVERFLOW,	/* a completion was lost to a full CQ */
};

/* What an event leaves to the QP's work item (qp->ev_todo bits). */
enum kiwi_qp_todo {
	KIWI_QPT_FLUSH_RQ,	/* receive WRs complete flushed */
	KIWI_QPT_KICK_TX,	/* the sender sends the TERMINATE */
	KIWI_QPT_FATAL,		/* IB_EVENT_QP_FATAL to the consumer */
	KIWI_QPT_ABORT,		/* the CM aborts the connection */
	KIWI_QPT_CQ_OVERFLOW,	/* fail the QP: a completion was lost */
};

/* qpev.c: the state's one writer, the engines' one event */
void kiwi_qp_publish_state(struct kiwi_qp *qp);
void kiwi_qp_refused(struct kiwi_qp *qp, unsigned int ev, int state);
int kiwi_qp_next(struct kiwi_qp *qp, enum kiwi_qp_event ev);
void kiwi_qp_event(struct kiwi_qp *qp, enum kiwi_qp_ev ev, u32 term_ctrl);
void kiwi_qp_cq_add(struct kiwi_qp *qp, struct kiwi_cq *cq,
		    const struct kiwi_cqe *cqe, bool solicited);

/*
 * A protocol error detected locally: a TERMINATE with this code, or a
 * failed TCP stream, which cannot carry one.
 */
static inline void kiwi_qp_error(struct kiwi_qp *qp, u8 layer, u8 etype,
				 u8 ecode)
{
	bool llp = layer == KIWI_TL_LLP && ecode == KIWI_LC_TCP_ERR;

	kiwi_qp_event(qp, llp ? KIWI_QP_EV_LLP_ERROR : KIWI_QP_EV_LOCAL_ERROR,
		      kiwi_term_ctrl(layer, etype, ecode));
}

/* qp.c, sq.c, rq.c: the QP and its queues, for the data path and the CM */
struct kiwi_sqe *kiwi_sq_next(struct kiwi_qp *qp);
void kiwi_sq_sent(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
		  enum ib_wc_status status);
void kiwi_sq_read_posted(struct kiwi_qp *qp, struct kiwi_sqe *sqe);
bool kiwi_qp_orq_head(struct kiwi_qp *qp, struct kiwi_sge *sink, u32 *bytes);
void kiwi_qp_retire_sq(struct kiwi_qp *qp);
/* Markers per direction, as the MPA exchange settled them. */
#define KIWI_MK_F_TX	0x1	/* the peer's frame had M: we send them */
#define KIWI_MK_F_RX	0x2	/* ours had M: the peer sends them */

int kiwi_qp_connected(struct kiwi_qp *qp, struct kiwi_ep *ep,
		      struct socket *sock, bool crc, bool large, u8 markers,
		      u8 rtr, bool responder);
bool kiwi_qp_hold_over(struct kiwi_qp *qp);
void kiwi_qp_disconnected(struct kiwi_qp *qp);
void kiwi_qp_unbind(struct kiwi_qp *qp);
void kiwi_qp_fail_all(struct kiwi_device *kdev);
/* The QP layer's own, shared by its files and post.c. */
#define KIWI_USGE_SIZE	sizeof(struct kiwi_usge)

static inline u32 kiwi_ring_slots(u32 wr)
{
	return roundup_pow_of_two(max(wr, 1U));
}

/*
 * Payload bytes per send slot: room for the SGEs or the inline data,
 * whichever is larger.  Whatever fits is granted, so a QP asking for
 * one SGE and no inline data costs 48 bytes per slot.
 */
static inline u32 kiwi_sq_payload(u32 max_sge, u32 max_inline)
{
	return max_t(u32, max(max_sge, 1U) * KIWI_USGE_SIZE,
		     ALIGN(max_inline, KIWI_USGE_SIZE));
}

static inline u32 kiwi_rq_stride(u32 max_sge)
{
	return sizeof(struct kiwi_urqe) + max(max_sge, 1U) * KIWI_USGE_SIZE;
}

static inline struct kiwi_sq_slot *kiwi_sq_slot(struct kiwi_qp *qp, u32 idx)
{
	return &qp->sq[idx & (qp->sq_size - 1)];
}

/* Under sq_lock: the index of the @i-th WQE from the oldest not retired. */
static inline u32 kiwi_sq_idx(const struct kiwi_qp *qp, u32 i)
{
	return kiwi_ring_cons(&qp->sq_ring) + i;
}

/* Under sq_lock: the send slot of the @i-th WQE from the oldest. */
static inline struct kiwi_sq_slot *kiwi_sq_at(struct kiwi_qp *qp, u32 i)
{
	return kiwi_sq_slot(qp, kiwi_sq_idx(qp, i));
}

void kiwi_qp_flush_sq(struct kiwi_qp *qp);
void kiwi_qp_flush_rq(struct kiwi_qp *qp);
void kiwi_rq_complete(struct kiwi_qp *qp, u64 wr_id,
		      enum ib_wc_status status);
int kiwi_urqe_post(struct kiwi_ring *r, u32 max_wr, u32 max_sge,
		   const struct ib_recv_wr *wr);

bool kiwi_qp_take_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe);
void kiwi_qp_read_done(struct kiwi_qp *qp);
bool kiwi_sq_waiting(struct kiwi_qp *qp);
void kiwi_qp_read_failed(struct kiwi_qp *qp, enum ib_wc_status status);
int kiwi_qp_atomic_done(struct kiwi_qp *qp, u32 req_id, u64 orig);

/* qp.c: references, and the QP an iw_cm request names */
void kiwi_qp_get(struct ib_qp *ibqp);
void kiwi_qp_put(struct ib_qp *ibqp);
struct kiwi_qp *kiwi_qp_find(struct iw_cm_id *id, int qpn);
/* qp.c: the state changes of the verbs, for qpverbs.c */
void kiwi_qp_init_state(struct kiwi_qp *qp);
int kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state to);

#endif /* KIWI_QP_H */
