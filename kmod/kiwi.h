/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: software iWARP RNIC -- internal definitions shared by all layers.
 */
#ifndef KIWI_H
#define KIWI_H

#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/jump_label.h>
#include <linux/kref.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/iw_cm.h>
#include <rdma/kiwi-abi.h>
#include <linux/log2.h>

#include <kiwi/iwarp.h>
#include <kiwi/framer.h>
#include <kiwi/markers.h>
#include <kiwi/qpfsm.h>
#include <kiwi/rdmap.h>
#include <kiwi/rxorder.h>
#include <kiwi/wqe.h>

#define KIWI_DRV_NAME		"kiwi"
#define KIWI_DRV_VERSION	KIWI_VERSION	/* from VERSION, by Kbuild */
#define KIWI_NODE_DESC		"kiwi software iWARP"

/* Fixed capabilities; tunable limits are module parameters (main.c). */
#define KIWI_MAX_ORD		128	/* outstanding RDMA READs we initiate */
#define KIWI_MAX_IRD		128	/* outstanding RDMA READs we serve */
#define KIWI_MAX_SGE_RD		1	/* a READ names one sink STag */
#define KIWI_MAX_FRMR_PAGES	(1 << 16)
#define KIWI_STAG_INDEX_MAX	((1U << 24) - 1)

/* Limits set at module load, copied into each device when created. */
struct kiwi_limits {
	u32 max_qp;
	u32 max_qp_wr;
	u32 max_cq;
	u32 max_cqe;
	u32 max_mr;
	u32 max_pd;
	u32 max_srq;
	u32 max_srq_wr;
};

extern struct kiwi_limits kiwi_limits;
extern bool kiwi_crc_default;

/*
 * Buckets of each latency histogram among the counters (stats.c): bucket
 * i counts times from 2^i to 2^(i+1) microseconds (the first from 0),
 * the last every time from 2^(KIWI_LAT_BUCKETS - 1) on.
 */
#define KIWI_LAT_BUCKETS	12

/* Device counters (stats.c); `rdma statistic show` names them. */
enum kiwi_stat {
	KIWI_STAT_RX_FPDUS,
	KIWI_STAT_RX_BYTES,
	KIWI_STAT_TX_FPDUS,
	KIWI_STAT_TX_BYTES,
	KIWI_STAT_RX_CRC_ERR,
	KIWI_STAT_TERM_TX_RDMAP,	/* TERMINATEs sent, by layer */
	KIWI_STAT_TERM_TX_DDP,
	KIWI_STAT_TERM_TX_LLP,
	KIWI_STAT_TERM_RX,		/* all layers, and by layer: */
	KIWI_STAT_TERM_RX_RDMAP,
	KIWI_STAT_TERM_RX_DDP,
	KIWI_STAT_TERM_RX_LLP,
	KIWI_STAT_READ_SERVED,
	KIWI_STAT_READ_REFUSED,		/* beyond the negotiated IRD */
	KIWI_STAT_CQ_OVERFLOW,		/* completions lost to a full CQ */
	KIWI_STAT_QP_NOT_OWNER,		/* binds refused by kiwi_get_qp() */
	KIWI_STAT_CM_HALF_OPEN_REFUSED,	/* connections reset: too many */
	KIWI_STAT_QP_BAD_TRANSITION,	/* state changes refused as illegal */
	KIWI_STAT_CM_ESTABLISHED,	/* connections that reached RTS */
	KIWI_STAT_MPA_REJECT_TX,	/* MPA replies with the Reject bit */
	KIWI_STAT_MPA_REJECT_RX,
	KIWI_STAT_CM_TIMEOUT,		/* handshakes or closes timed out */
	KIWI_STAT_TCP_RETRANS,		/* segments TCP resent, per ended conn. */
	KIWI_STAT_ATOMIC_SERVED,	/* RFC 7306 atomics executed for peers */
	KIWI_STAT_TX_MARKERS,		/* MPA markers sent */
	KIWI_STAT_RX_MARKERS,		/* MPA markers received and removed */
	KIWI_STAT_RX_MARKER_ERR,	/* ... with an inconsistent FPDUPTR */
	KIWI_STAT_CM_BAD_TRANSITION,	/* endpoint events refused as illegal */
	/* kiwi's own time per message, by direction (kiwi_qp_lat()) */
	KIWI_STAT_RX_LAT,
	KIWI_STAT_TX_LAT = KIWI_STAT_RX_LAT + KIWI_LAT_BUCKETS,
	KIWI_NSTATS = KIWI_STAT_TX_LAT + KIWI_LAT_BUCKETS
};

struct kiwi_stats {
	u64 v[KIWI_NSTATS];
};

/*
 * A QP counter of `rdma statistic qp` (stats.c): the RDMA core's struct
 * rdma_counter has no room for a driver, so kiwi keeps its per-CPU sums
 * here, found by the core's counter id in kiwi_device.counter_xa.
 */
struct kiwi_counter {
	struct kiwi_stats __percpu *stats;
};

struct kiwi_device {
	struct ib_device ibdev;
	struct net_device *netdev;	/* referenced for the device's life */
	netdevice_tracker netdev_tracker;
	struct list_head list;		/* on kiwi_dev_list */
	u8 mac[ETH_ALEN];		/* GID and node GUID source */

	struct kiwi_limits lim;
	atomic_t num_qp;
	atomic_t num_cq;
	atomic_t num_mr;
	atomic_t num_pd;
	atomic_t num_srq;
	atomic_t half_open;		/* connections not yet in RTS (cm.c) */

	struct xarray qp_xa;		/* qp number -> kiwi_qp */
	struct xarray mem_xa;		/* STag index -> kiwi_mem */
	u32 test_last_stag;		/* last destroyed (test_stag_reuse) */
	u32 qp_next;			/* cyclic allocation hint */
	struct kiwi_stats __percpu *stats;
	struct xarray counter_xa;	/* rdma_counter id -> kiwi_counter */
};

struct kiwi_ucontext {
	struct ib_ucontext ibuc;
};

/*
 * A queue ring: the kiwi_ring_ctl block of kiwi-abi.h, then @size slots
 * of @stride bytes.  Mapped into the process for user objects.
 */
struct kiwi_ring {
	void *buf;
	struct kiwi_ring_ctl *ctl;	/* == buf */
	u32 size;			/* slots; power of two */
	u32 stride;			/* bytes per slot */
	struct rdma_user_mmap_entry *mentry;	/* user rings only */
};

static inline void *kiwi_ring_slot(const struct kiwi_ring *r, u32 idx)
{
	return r->buf + KIWI_RING_CTL_SIZE +
	       (size_t)(idx & (r->size - 1)) * r->stride;
}

/*
 * The ring's shared indices and status words are touched only through
 * these and ring.c (kiwi_ring_avail()): each index has one writer (the
 * table in kiwi-abi.h), published with release semantics after the
 * slots it covers, and read with acquire semantics before the slots.
 * The other side is a process and may write anything at any time, so
 * every value read here is bounded by the caller before use.
 */

/* We consumed up to @cons (SQ, RQ, SRQ): the slots are the producer's. */
static inline void kiwi_ring_consumed(struct kiwi_ring *r, u32 cons)
{
	/* Pairs with the producer's acquire of cons (provider: space()). */
	smp_store_release(&r->ctl->cons, cons);
}

/* We produced up to @prod (CQ; a kernel QP's own SQ and RQ). */
static inline void kiwi_ring_produced(struct kiwi_ring *r, u32 prod)
{
	/*
	 * Pairs with the consumer's acquire of prod: the provider's CQ
	 * ready(), or kiwi_ring_avail() for a kernel QP's SQ and RQ.
	 */
	smp_store_release(&r->ctl->prod, prod);
}

/* The producer index of a ring we produce into: ours, so no barrier. */
static inline u32 kiwi_ring_own_prod(const struct kiwi_ring *r)
{
	return r->ctl->prod;
}

/*
 * Entries of a ring we produce into that the consumer has not taken,
 * given our @prod; false for a consumer index that cannot be true.
 */
static inline bool kiwi_ring_unconsumed(const struct kiwi_ring *r, u32 prod,
					u32 *n)
{
	/* Pairs with the consumer's release of cons (provider: consume()). */
	*n = prod - smp_load_acquire(&r->ctl->cons);
	return *n <= r->size;
}

/* Whether the consumer has caught up with @prod (no barrier: a hint). */
static inline bool kiwi_ring_drained(const struct kiwi_ring *r, u32 prod)
{
	return READ_ONCE(r->ctl->cons) == prod;
}

static inline void kiwi_ring_set_flags(struct kiwi_ring *r, u32 flags)
{
	WRITE_ONCE(r->ctl->flags, flags);
}

static inline u32 kiwi_ring_flags(const struct kiwi_ring *r)
{
	return READ_ONCE(r->ctl->flags);
}

/* SQ rings also tell the provider the QP state (enum kiwi_uqp_state). */
static inline void kiwi_ring_set_qp_state(struct kiwi_ring *r, u32 state)
{
	WRITE_ONCE(r->ctl->qp_state, state);
}

struct kiwi_pd {
	struct ib_pd ibpd;
};

/*
 * A registered memory region as seen by placement and transmit: the
 * object behind an STag.  Looked up under RCU from the receive path,
 * so it is reference counted and freed after a grace period.  The data
 * path may hold a reference indefinitely (a stalled peer); what keeps
 * it from using memory that is gone is @gen, see mem.c.
 */
struct kiwi_mem {
	struct kiwi_device *kdev;
	struct kref ref;
	struct rcu_head rcu;
	rwlock_t lock;			/* copies (read) vs. changes (write) */
	/*
	 * Under lock: bumped by every change.  64 bits, so no sequence of
	 * changes (window rebinds are cheap and unprivileged) can wrap it
	 * back to a value a stalled message checked.
	 */
	u64 gen;
	u32 stag;			/* index << 8 | key */
	bool valid;			/* under lock: STag usable */
	bool frmr;			/* fast-register region, of ibmr: */
	struct ib_mr *ibmr;
	u32 max_pages;			/* FRMR page list capacity */
	struct ib_pd *pd;
	int access;			/* IB_ACCESS_* */
	u64 iova;			/* first byte addressed by the STag */
	u64 len;
	/*
	 * Page array covering [iova, iova + len): pages[i] backs the page
	 * starting at (iova & PAGE_MASK) + i * PAGE_SIZE.  Kernel DMA MRs
	 * (pages == NULL) address kernel virtual memory directly.
	 */
	struct page **pages;
	unsigned long npages;
	/*
	 * FRMR only: the page list ib_map_mr_sg() set up, copied to pages
	 * by the next IB_WR_REG_MR.  Kept apart because a consumer may map
	 * a region that is still valid and invalidate it with a LOCAL_INV
	 * posted just before its REG_MR (ib_iser does), while placement
	 * into the valid region still reads pages.
	 */
	struct page **map_pages;
	unsigned long map_npages;
	struct ib_umem *umem;
	/*
	 * Memory windows (mw_type 1 or 2; 0 for a region).  While bound
	 * (valid), a window addresses [iova, iova + len), which maps to
	 * [base, ...) of parent, a user region it holds a reference and a
	 * count in parent->nr_mw on; qp_token names the QP a type 2
	 * window is bound to.  Under lock, like valid.
	 */
	u8 mw_type;
	bool mw_dead;			/* deallocated: binds refused */
	struct kiwi_mem *parent;
	u64 base;
	u64 qp_token;
	atomic_t nr_mw;			/* region: windows bound to it */
};

struct kiwi_mr {
	struct ib_mr ibmr;
	struct kiwi_mem *mem;
};

struct kiwi_mw {
	struct ib_mw ibmw;
	struct kiwi_mem *mem;
};

/* A bind work request, validated in form only (mw.c checks the rest). */
struct kiwi_bind {
	u32 mw_stag;			/* the window (its index counts) */
	u32 new_stag;			/* same index, the new key */
	u32 mr_lkey;
	u32 access;			/* IB_ACCESS_REMOTE_*, IB_ZERO_BASED */
	u64 addr;			/* in the region */
	u64 len;
};

/* Completion queue entry, kept compact; converted to ib_wc on poll. */
struct kiwi_cqe {
	u64 wr_id;
	struct ib_qp *qp;
	u32 byte_len;
	u32 ex;				/* invalidated rkey or immediate */
	u8 opcode;			/* enum ib_wc_opcode */
	u8 status;			/* enum ib_wc_status */
	u8 flags;			/* IB_WC_* flags */
	u8 pad;
};

/*
 * A CQ of a kernel consumer is a private ring of kiwi_cqe; a user CQ is a
 * mapped ring of struct kiwi_ucqe that the provider polls directly.
 */
struct kiwi_cq {
	struct ib_cq ibcq;
	spinlock_t lock;
	struct kiwi_cqe *cqes;		/* kernel CQs */
	struct kiwi_ring uring;		/* user CQs (uring.buf != NULL) */
	u32 size;			/* slots; power of two */
	u32 head;			/* kernel CQs: next to poll */
	u32 count;			/* kernel CQs: valid entries */
	u32 tail;			/* user CQs: entries produced */
	u8 armed;			/* IB_CQ_SOLICITED / IB_CQ_NEXT_COMP */
	bool overflow;
};

/* A scatter/gather element as kept on our queues. */
struct kiwi_sge {
	u64 addr;
	u32 len;
	u32 lkey;
};

struct kiwi_rqe {
	u64 wr_id;
	u32 num_sge;
	struct kiwi_sge sge[KIWI_MAX_SGE];
};

struct kiwi_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;
	struct kiwi_ring ring;		/* of struct kiwi_urqe */
	u32 max_wr;			/* as requested/reported */
	u32 max_sge;
	u32 head;			/* consumed (free-running) */
	u32 limit;			/* srq_limit; 0 = disarmed */
};

/* Per-SQE transmit progress, owned by the send path. */
enum kiwi_sqe_state {
	KIWI_SQE_QUEUED,		/* not yet (fully) transmitted */
	KIWI_SQE_WAIT_RESP,		/* READ or atomic sent, response due */
	KIWI_SQE_DONE,			/* may be retired */
};

/*
 * What the kernel remembers per send queue slot once it has started the
 * WQE there, until the WQE is retired.  Kept small: the WQE itself is
 * copied into kiwi_qp.sq_cur only while it is being transmitted.
 */
struct kiwi_sq_slot {
	u64 wr_id;
	u64 sink_addr;			/* RDMA READ, atomic: local sink */
	u32 sink_lkey;
	u32 bytes;
	u32 req_id;			/* atomic: its Request Identifier */
	u8 opcode;			/* enum ib_wr_opcode */
	u8 signaled;
	u8 state;			/* enum kiwi_sqe_state */
	u8 status;			/* enum ib_wc_status when done */
};

/* A send WQE being transmitted: validated kernel copy of a ring slot. */
struct kiwi_sqe {
	u64 wr_id;
	u32 bytes;			/* total payload length */
	u32 sent;			/* payload bytes transmitted */
	u32 opcode;			/* enum ib_wr_opcode */
	u32 flags;			/* IB_SEND_* */
	u32 num_sge;
	u32 rkey;			/* remote STag (WRITE, READ) */
	u64 raddr;			/* remote tagged offset */
	/* immediate, rkey to invalidate or an atomic's Request Identifier */
	u32 ex;
	u64 compare_add;		/* atomic operands */
	u64 swap;
	struct kiwi_sge sge[KIWI_MAX_SGE];
	u8 *inline_data;		/* kiwi_qp.sq_inline, or NULL */
	struct kiwi_bind bind;		/* IB_WR_BIND_MW */
};

/*
 * An inbound RDMA READ request awaiting its response, or an executed
 * RFC 7306 atomic awaiting its Atomic Response: one queue, so responses
 * leave in the order the requests came (RFC 7306 section 5: atomic and
 * READ responses in request order), and one IRD for both.
 */
struct kiwi_irqe {
	u32 src_stag;
	u32 sink_stag;
	u64 src_to;
	u64 sink_to;
	u32 len;
	u32 sent;
	bool atomic;			/* an Atomic Response: */
	u32 req_id;
	u64 orig;			/* the value before the operation */
};

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
	 * Facts kept apart from ord: orq_skip is written by the transmit
	 * side (just before our RTR READ goes out), resp_due is work for
	 * after the socket read (any number of requests may set it),
	 * worker says which context reads the socket.
	 */
	u32 orq_skip;			/* our RTR READ is outstanding */
	bool resp_due;			/* a READ request awaits an answer */
	bool worker;			/* bulk: rx_work reads the socket */
	u64 t_ready;			/* ns: the socket last had news */
};

struct kiwi_ep;
struct kiwi_tx_batch;

/*
 * A QP's transmit side (tx.c, fpdu.c): one work item serialises all
 * sending; inbound READ requests wait in irq until answered.
 */
struct kiwi_tx {
	struct work_struct work;
	wait_queue_head_t idle;		/* woken when work finds no more */
	int cpu;			/* where work runs: keeps order */
	struct mutex mutex;		/* one sender: worker or doorbell */
	unsigned long owned;		/* bit 0: a sender is active */
	spinlock_t irq_lock;
	struct kiwi_irqe *irq;		/* inbound READs, ring of ird slots */
	u32 irq_size;			/* its slots: the IRD agreed; 0 before */
	u32 irq_head;
	u32 irq_count;
	u32 orq_count;			/* outbound READs outstanding */
	u32 msn[KIWI_QN_COUNT];		/* next MSN per untagged queue */
	u32 term_ctrl;			/* TERMINATE to send, if term_pending */
	bool term_pending;
	u8 rtr_pending;			/* KIWI_MPA_RTR_* message to send */
	bool await_peer;		/* responder: peer's first FPDU due */
	u64 t_bell;			/* ns: a doorbell no WQE answered yet */
	struct kiwi_tx_batch *batch;	/* FPDUs gathered for one send */
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
	 * Send queue: WQEs [sq_head, prod) are posted and not retired; the
	 * first sq_tx of them have been transmitted; sq_cur holds the next
	 * one while it is being sent.  Indices are free-running.
	 */
	spinlock_t sq_lock;
	struct kiwi_ring sq_ring;	/* of struct kiwi_usqe */
	struct kiwi_sq_slot *sq;	/* sq_size entries */
	u32 sq_size;			/* slots; power of two */
	u32 sq_head;			/* oldest not retired */
	u32 sq_tx;			/* WQEs from sq_head transmitted */
	bool sq_loaded;			/* sq_cur is WQE sq_head + sq_tx */
	bool sq_failed;			/* a WR completed in error: flush */
	struct kiwi_sqe sq_cur;
	u8 sq_inline[KIWI_MAX_INLINE];

	spinlock_t rq_lock;
	struct kiwi_ring rq_ring;	/* of struct kiwi_urqe; none with SRQ */
	u32 rq_head;			/* consumed (free-running) */

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

/* Count @n of counter @s on the device; any context. */
static inline void kiwi_stat_add(struct kiwi_device *kdev, enum kiwi_stat s,
				 u64 n)
{
	this_cpu_add(kdev->stats->v[s], n);
}

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

static inline struct kiwi_device *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_device, ibdev);
}

static inline struct kiwi_pd *to_kpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct kiwi_pd, ibpd);
}

static inline struct kiwi_mr *to_kmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct kiwi_mr, ibmr);
}

static inline struct kiwi_mw *to_kmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct kiwi_mw, ibmw);
}

static inline struct kiwi_cq *to_kcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_cq, ibcq);
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

/*
 * A decision about @qp for the kernel log, with dynamic debug on (module
 * kiwi +p): "kiwi0: QP 5: kiwi_modify_qp: ...", the device, the QP and
 * the function first.  Off, it costs a static branch, and the arguments
 * are not evaluated: not for the data path's normal course, only for
 * refusals, errors, timeouts and state changes.  The endpoint's own is
 * kiwi_ep_dbg() (cm.h).
 */
#define kiwi_qp_dbg(qp, fmt, ...)					\
	ibdev_dbg((qp)->ibqp.device, "QP %u: %s: " fmt,			\
		  (qp)->ibqp.qp_num, __func__, ##__VA_ARGS__)

/* The same for @kdev, where no object has a name yet (a create refused). */
#define kiwi_dev_dbg(kdev, fmt, ...)					\
	ibdev_dbg(&(kdev)->ibdev, "%s: " fmt, __func__, ##__VA_ARGS__)

/*
 * Send ring opcodes only kernel consumers may use (their WRs are encoded
 * into the same ring format as user WQEs, above the user opcode range):
 * READ with local invalidate; LOCAL_INV (inv_rkey: the STag); REG_MR
 * (rkey: the MR's STag, inv_rkey: its new key, raddr: access flags).
 */
enum {
	KIWI_KWR_FIRST = 0x80,
	KIWI_KWR_READ_INV = KIWI_KWR_FIRST,
	KIWI_KWR_LOCAL_INV,
	KIWI_KWR_REG_MR,
	KIWI_KWR_END
};

/* An RDMA READ work request, with or without local invalidation. */
static inline bool kiwi_wr_is_read(u32 opcode)
{
	return opcode == IB_WR_RDMA_READ || opcode == IB_WR_RDMA_READ_WITH_INV;
}

static inline bool kiwi_wr_is_atomic(u32 opcode)
{
	return opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/* Waits for a response from the peer, so takes an ORD credit. */
static inline bool kiwi_wr_takes_ord(u32 opcode)
{
	return kiwi_wr_is_read(opcode) || kiwi_wr_is_atomic(opcode);
}

/*
 * Reserve one unit of a per-device resource budget; false when the
 * limit is reached.  Paired with atomic_dec() on release.
 */
static inline bool kiwi_res_get(atomic_t *count, u32 max)
{
	return atomic_add_unless(count, 1, max);
}

/* main.c */
extern struct workqueue_struct *kiwi_wq;
int kiwi_cpu_get(int app);
void kiwi_cpu_put(int cpu);
void kiwi_devices_atomic_cap(enum ib_atomic_cap cap);

/* cm.c: connection management (iw_cm provider) */
int kiwi_cm_init(void);
void kiwi_cm_exit(void);
void kiwi_cm_dev_close(struct kiwi_device *kdev);
int kiwi_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len);
int kiwi_create_listen(struct iw_cm_id *id, int backlog);
int kiwi_destroy_listen(struct iw_cm_id *id);
void kiwi_cm_qp_closing(struct kiwi_qp *qp, bool abort);
struct kiwi_qp *kiwi_cm_ep_qp(struct kiwi_ep *ep);

/* rx.c: DDP/RDMAP receive and direct placement */
void kiwi_rx_data_ready(struct sock *sk);
void kiwi_rx_init(struct kiwi_qp *qp);
void kiwi_rx_stop(struct kiwi_qp *qp);
void kiwi_rx_drain(struct kiwi_qp *qp, struct sock *sk);
void kiwi_rx_reset(struct kiwi_qp *qp);
void kiwi_rx_release(struct kiwi_qp *qp);
void kiwi_rx_expect_rtr_read(struct kiwi_qp *qp);
void kiwi_rx_expect_rtr_send(struct kiwi_qp *qp);

/*
 * Where a row's place handler adds the payload to the FPDU's CRC, in
 * the pass that copies it: nowhere without CRC.
 */
static inline u32 *kiwi_rx_crcp(struct kiwi_qp *qp)
{
	return qp->crc ? &qp->rx.crc : NULL;
}

/* rxterm.c: a peer's TERMINATE, the row of rx.c's kiwi_rx_ops[] */
int kiwi_rx_begin_term(struct kiwi_qp *qp, enum kiwi_order_act act);
int kiwi_rx_place_term(struct kiwi_qp *qp, struct sk_buff *skb, int off,
		       u32 len);
void kiwi_rx_end_term(struct kiwi_qp *qp, enum kiwi_order_end e);

/* tx.c, fpdu.c: transmit (tx.h has what only the two share) */
int kiwi_tx_init(struct kiwi_qp *qp);
void kiwi_tx_markers_init(struct kiwi_qp *qp);
void kiwi_tx_free(struct kiwi_qp *qp);
int kiwi_tx_irq_alloc(struct kiwi_qp *qp, u32 ird);
#define KIWI_TX_CPU_PICK	(-2)	/* tx.cpu: picked at the first kick */
void kiwi_tx_kick(struct kiwi_qp *qp);
void kiwi_tx_drop_cpu(struct kiwi_qp *qp);
void kiwi_tx_bell(struct kiwi_qp *qp);
void kiwi_tx_unblock(struct socket *sock);
void kiwi_tx_start(struct kiwi_qp *qp);
void kiwi_tx_peer_spoke(struct kiwi_qp *qp);
void kiwi_tx_now(struct kiwi_qp *qp);
bool kiwi_tx_irq_full(struct kiwi_qp *qp);
void kiwi_tx_queue_resp(struct kiwi_qp *qp, const struct kiwi_irqe *e);
void kiwi_tx_respond(struct kiwi_qp *qp, struct sock *sk);
void kiwi_tx_work(struct work_struct *work);

/* ring.c: queue rings and their mapping */
int kiwi_ring_init(struct kiwi_ring *r, struct ib_udata *udata, u32 size,
		   u32 stride);
void kiwi_ring_destroy(struct kiwi_ring *r);
u64 kiwi_ring_mmap_offset(const struct kiwi_ring *r);
u64 kiwi_ring_mmap_len(const struct kiwi_ring *r);
bool kiwi_ring_avail(const struct kiwi_ring *r, u32 cons, u32 *n);
int kiwi_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void kiwi_mmap_free(struct rdma_user_mmap_entry *e);

/* qp.c helpers for the data path */
struct kiwi_sqe *kiwi_sq_next(struct kiwi_qp *qp);
void kiwi_sq_sent(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
		  enum ib_wc_status status);
void kiwi_sq_read_posted(struct kiwi_qp *qp, struct kiwi_sqe *sqe);
bool kiwi_qp_orq_head(struct kiwi_qp *qp, struct kiwi_sge *sink, u32 *bytes);
void kiwi_qp_error(struct kiwi_qp *qp, u8 layer, u8 etype, u8 ecode);
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
void kiwi_qp_cq_add(struct kiwi_qp *qp, struct kiwi_cq *cq,
		    const struct kiwi_cqe *cqe, bool solicited);
/* The QP layer's own, shared by qp.c, sq.c, rq.c and post.c. */
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

struct kiwi_sq_slot *kiwi_sq_slot(struct kiwi_qp *qp, u32 idx);
void kiwi_qp_flush_sq(struct kiwi_qp *qp);
void kiwi_qp_flush_rq(struct kiwi_qp *qp);
void kiwi_rq_complete(struct kiwi_qp *qp, u64 wr_id,
		      enum ib_wc_status status);
int kiwi_urqe_post(struct kiwi_ring *r, u32 head, u32 max_wr, u32 max_sge,
		   const struct ib_recv_wr *wr);

bool kiwi_qp_take_rqe(struct kiwi_qp *qp, struct kiwi_rqe *rqe);
void kiwi_qp_read_done(struct kiwi_qp *qp);
void kiwi_qp_read_failed(struct kiwi_qp *qp, enum ib_wc_status status);
int kiwi_qp_atomic_done(struct kiwi_qp *qp, u32 req_id, u64 orig);
bool kiwi_atomics_enabled(void);
void kiwi_qp_peer_terminated(struct kiwi_qp *qp, u32 term_ctrl);

/* mem.c: access checks for the data path */
int kiwi_mem_check(struct kiwi_mem *mem, struct ib_pd *pd, u64 addr,
		   u64 len, int access, u64 *gen);
int kiwi_mem_check_qp(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 addr,
		      u64 len, int access, u64 *gen);

/* place.c: placement helpers (copies and atomics) */
bool kiwi_mem_copy_from_skb(struct kiwi_mem *mem, u64 gen, u64 addr,
			    const struct sk_buff *skb, int off, u32 len,
			    u32 *crc);
bool kiwi_mem_copy_out(struct kiwi_mem *mem, u64 gen, u64 addr, void *dst,
		       u32 len, u32 *crc);
bool kiwi_mem_copy_in(struct kiwi_mem *mem, u64 gen, u64 addr,
		      const void *src, u32 len);
bool kiwi_mem_atomic(struct kiwi_mem *mem, struct kiwi_qp *qp, u64 gen,
		     const struct kiwi_atomic_info *ai, u64 *orig);

/* frmr.c, mw.c: work requests that change what an STag maps */
int kiwi_mem_fast_reg(struct kiwi_qp *qp, u32 stag, u32 key, int access);
int kiwi_mem_invalidate(struct kiwi_qp *qp, u32 stag);
int kiwi_mem_bind_mw(struct kiwi_qp *qp, const struct kiwi_bind *b);

/* verbs.c: device, port, context and PD verbs */
int kiwi_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		      struct ib_udata *udata);
int kiwi_query_port(struct ib_device *ibdev, u32 port,
		    struct ib_port_attr *attr);
int kiwi_get_port_immutable(struct ib_device *ibdev, u32 port,
			    struct ib_port_immutable *imm);
int kiwi_query_gid(struct ib_device *ibdev, u32 port, int idx,
		   union ib_gid *gid);
int kiwi_query_pkey(struct ib_device *ibdev, u32 port, u16 idx, u16 *pkey);
void kiwi_get_dev_fw_str(struct ib_device *ibdev, char *str);
int kiwi_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata);
void kiwi_dealloc_ucontext(struct ib_ucontext *uctx);
void kiwi_disassociate_ucontext(struct ib_ucontext *uctx);
int kiwi_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int kiwi_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* mem.c: memory registration and STag lookup */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *kiwi_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			       u64 iova, int access, struct ib_udata *udata);
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct kiwi_mem *kiwi_mem_get(struct kiwi_device *kdev, u32 stag);
void kiwi_mem_put(struct kiwi_mem *mem);
void kiwi_mem_exit_check(void);

/* frmr.c: fast registration */
struct ib_mr *kiwi_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg);
int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);

/* mw.c: memory windows */
int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int kiwi_dealloc_mw(struct ib_mw *ibmw);

/* cq.c: completion queues */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs);
#else
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
#endif
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int kiwi_cq_add(struct kiwi_cq *cq, const struct kiwi_cqe *cqe,
		bool solicited);

/* qp.c: queue pairs, shared receive queues, work request posting */
int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init);
int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
void kiwi_qp_get(struct ib_qp *ibqp);
void kiwi_qp_put(struct ib_qp *ibqp);
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn);
void kiwi_iw_add_ref(struct ib_qp *ibqp);
struct kiwi_qp *kiwi_qp_find(struct iw_cm_id *id, int qpn);
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

/* stats.c: device counters */
int kiwi_stats_init(struct kiwi_device *kdev);
void kiwi_stats_free(struct kiwi_device *kdev);
struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port);
int kiwi_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int kiwi_counter_unbind_qp(struct ib_qp *ibqp);
int kiwi_counter_dealloc(struct rdma_counter *counter);
struct rdma_hw_stats *kiwi_counter_alloc_stats(struct rdma_counter *counter);
int kiwi_counter_update_stats(struct rdma_counter *counter);
int kiwi_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index);

/* crc.c: MPA CRC32c with the implementation chosen at load. */
DECLARE_STATIC_KEY_FALSE(kiwi_crc_table);
int kiwi_crc_init(void);
void kiwi_crc_copy_mem(void *dst, const void *src, size_t len, u32 *crc);

static inline u32 kiwi_crc32c(u32 crc, const void *p, unsigned int len)
{
	if (static_branch_unlikely(&kiwi_crc_table))
		return __crc32c_le(crc, p, len);
	return crc32c(crc, p, len);
}

#endif /* KIWI_H */
