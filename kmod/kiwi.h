/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: software iWARP RNIC -- what every layer shares: the device, its
 * limits and counters, the module parameters more than one layer reads,
 * the dynamic debug helpers, and the services all layers call (main.c's
 * workqueue and CPU choice, the CM's calls for the other layers,
 * CRC32c).  Every file includes it, most through their layer's header.
 *
 * Each layer's own declarations are in that layer's header.  For any
 * file that needs them: ring.h (queue rings), cq.h (completion queues),
 * wr.h (work requests as kept), rx.h and tx.h (each QP's receive and
 * transmit side), qp.h (the QP layer: QPs, SQ, RQ, SRQ; it includes
 * ring.h, wr.h, rx.h and tx.h), stag.h (the memory layer's public part),
 * verbs.h (the ib_device_ops entry points).  Private to the files of one
 * layer: cm.h (cm.c, mpa.c, iwcm.c), mem.h (mem.c, place.c, frmr.c,
 * mw.c), rxterm.h (rx.c, rxops.c, rxterm.c), fpdu.h (tx.c, fpdu.c); trace.h
 * (tracepoints) is included by the files that fire them.
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
#include <rdma/iw_cm.h>
#include <rdma/kiwi-abi.h>
#include <linux/log2.h>

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
	bool atomics;			/* rfc7306_atomics, as of now (main.c) */
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

struct kiwi_pd {
	struct ib_pd ibpd;
};

struct kiwi_ep;
struct kiwi_qp;

/* Count @n of counter @s on the device; any context. */
static inline void kiwi_stat_add(struct kiwi_device *kdev, enum kiwi_stat s,
				 u64 n)
{
	this_cpu_add(kdev->stats->v[s], n);
}

static inline struct kiwi_device *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_device, ibdev);
}

static inline struct kiwi_pd *to_kpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct kiwi_pd, ibpd);
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

/* cm.c: connection management, the calls other layers make */
int kiwi_cm_init(void);
void kiwi_cm_exit(void);
void kiwi_cm_dev_close(struct kiwi_device *kdev);
void kiwi_cm_qp_closing(struct kiwi_qp *qp, bool abort);
struct kiwi_qp *kiwi_cm_ep_qp(struct kiwi_ep *ep);

/* stats.c: device counters */
int kiwi_stats_init(struct kiwi_device *kdev);
void kiwi_stats_free(struct kiwi_device *kdev);

/*
 * crc.c: MPA CRC32c with the implementation chosen at load, and whether
 * new connections ask for it (module parameter crc).
 */
extern bool kiwi_crc_default;
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
