// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: device counters, as `rdma statistic show link DEV/1` shows them
 * (the RDMA core's hw_counters of port 1).
 *
 * Counters are per CPU and only ever added to, so the data path pays one
 * unlocked per-CPU increment; a read sums the CPUs.  They count what an
 * administrator debugging a peer wants to know first: how much moved,
 * what the peer got wrong (TERMINATEs by layer, CRC errors), what kiwi
 * refused (QPs bound by a non-owner, READs beyond IRD, CQ overflows),
 * how connections went (established, MPA rejects, timeouts) and what
 * the network cost (TCP retransmissions, added as each connection ends:
 * a live socket's count is TCP's, read with `ss -ti`).
 *
 * The same counters exist per QP group: `rdma statistic qp set ... auto`
 * or `rdma statistic qp bind` makes the RDMA core allocate a counter and
 * bind QPs to it; from then on those QPs count into the counter alone,
 * and the core reports the device's figures as the device's own sums
 * plus every counter's (plus what counters held when they were freed).
 */
#include <linux/percpu.h>

#include "qp.h"
#include "verbs.h"

/*
 * The latency histograms: kiwi's own time per message, apart from the
 * application's and the scheduler's, in buckets named by their upper
 * bound in microseconds ("lt_8": 4 to 8 us), the last by its lower.
 *   rx_msg_us_*: from the socket's data-ready callback to the message
 *     delivered -- its completion queued or, for a WRITE, its last byte
 *     placed -- including any hand-over to rx_work;
 *   tx_wqe_us_*: from a doorbell (a user's post, or a kernel consumer's
 *     ib_post_send()) to the first work request after it starting out
 *     to TCP, including any wait for the transmit worker.
 * Each sample counts where the QP's other counters do.
 */
#define KIWI_LAT_DESCS(dir, pre)					\
	[KIWI_STAT_##dir##_LAT + 0] = { .name = pre "lt_2" },		\
	[KIWI_STAT_##dir##_LAT + 1] = { .name = pre "lt_4" },		\
	[KIWI_STAT_##dir##_LAT + 2] = { .name = pre "lt_8" },		\
	[KIWI_STAT_##dir##_LAT + 3] = { .name = pre "lt_16" },		\
	[KIWI_STAT_##dir##_LAT + 4] = { .name = pre "lt_32" },		\
	[KIWI_STAT_##dir##_LAT + 5] = { .name = pre "lt_64" },		\
	[KIWI_STAT_##dir##_LAT + 6] = { .name = pre "lt_128" },		\
	[KIWI_STAT_##dir##_LAT + 7] = { .name = pre "lt_256" },		\
	[KIWI_STAT_##dir##_LAT + 8] = { .name = pre "lt_512" },		\
	[KIWI_STAT_##dir##_LAT + 9] = { .name = pre "lt_1024" },	\
	[KIWI_STAT_##dir##_LAT + 10] = { .name = pre "lt_2048" },	\
	[KIWI_STAT_##dir##_LAT + 11] = { .name = pre "ge_2048" }
static_assert(KIWI_LAT_BUCKETS == 12);

static const struct rdma_stat_desc kiwi_stat_descs[KIWI_NSTATS] = {
	[KIWI_STAT_RX_FPDUS] = { .name = "rx_fpdus" },
	[KIWI_STAT_RX_BYTES] = { .name = "rx_payload_bytes" },
	[KIWI_STAT_TX_FPDUS] = { .name = "tx_fpdus" },
	[KIWI_STAT_TX_BYTES] = { .name = "tx_payload_bytes" },
	[KIWI_STAT_RX_CRC_ERR] = { .name = "rx_crc_errors" },
	[KIWI_STAT_TERM_TX_RDMAP] = { .name = "terminate_sent_rdmap" },
	[KIWI_STAT_TERM_TX_DDP] = { .name = "terminate_sent_ddp" },
	[KIWI_STAT_TERM_TX_LLP] = { .name = "terminate_sent_mpa" },
	[KIWI_STAT_TERM_RX] = { .name = "terminate_received" },
	[KIWI_STAT_TERM_RX_RDMAP] = { .name = "terminate_received_rdmap" },
	[KIWI_STAT_TERM_RX_DDP] = { .name = "terminate_received_ddp" },
	[KIWI_STAT_TERM_RX_LLP] = { .name = "terminate_received_mpa" },
	[KIWI_STAT_READ_SERVED] = { .name = "read_requests_served" },
	[KIWI_STAT_READ_REFUSED] = { .name = "read_requests_beyond_ird" },
	[KIWI_STAT_CQ_OVERFLOW] = { .name = "cq_overflows" },
	[KIWI_STAT_QP_NOT_OWNER] = { .name = "qp_bind_refused" },
	[KIWI_STAT_CM_HALF_OPEN_REFUSED] = { .name = "cm_half_open_refused" },
	[KIWI_STAT_QP_BAD_TRANSITION] = { .name = "qp_illegal_transitions" },
	[KIWI_STAT_CM_ESTABLISHED] = { .name = "cm_established" },
	[KIWI_STAT_MPA_REJECT_TX] = { .name = "mpa_rejects_sent" },
	[KIWI_STAT_MPA_REJECT_RX] = { .name = "mpa_rejects_received" },
	[KIWI_STAT_CM_TIMEOUT] = { .name = "cm_timeouts" },
	[KIWI_STAT_TCP_RETRANS] = { .name = "tcp_retransmits" },
	[KIWI_STAT_ATOMIC_SERVED] = { .name = "atomics_served" },
	[KIWI_STAT_TX_MARKERS] = { .name = "tx_markers" },
	[KIWI_STAT_RX_MARKERS] = { .name = "rx_markers" },
	[KIWI_STAT_RX_MARKER_ERR] = { .name = "rx_marker_errors" },
	[KIWI_STAT_CM_BAD_TRANSITION] = { .name = "cm_illegal_transitions" },
	KIWI_LAT_DESCS(RX, "rx_msg_us_"),
	KIWI_LAT_DESCS(TX, "tx_wqe_us_"),
};

int kiwi_stats_init(struct kiwi_device *kdev)
{
	kdev->stats = alloc_percpu(struct kiwi_stats);
	return kdev->stats ? 0 : -ENOMEM;
}

void kiwi_stats_free(struct kiwi_device *kdev)
{
	free_percpu(kdev->stats);
	kdev->stats = NULL;
}

struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port)
{
	return rdma_alloc_hw_stats_struct(kiwi_stat_descs, KIWI_NSTATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Sum per-CPU counters @pc into @stats. */
static void kiwi_stats_sum(struct kiwi_stats __percpu *pc,
			   struct rdma_hw_stats *stats)
{
	int cpu, i;

	for (i = 0; i < KIWI_NSTATS; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		const struct kiwi_stats *s = per_cpu_ptr(pc, cpu);

		for (i = 0; i < KIWI_NSTATS; i++)
			stats->value[i] += READ_ONCE(s->v[i]);
	}
}

int kiwi_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index)
{
	kiwi_stats_sum(to_kdev(ibdev)->stats, stats);
	return KIWI_NSTATS;
}

/*
 * QP counters.  The core serialises the ops of one counter with
 * counter->lock; different counters' ops run concurrently, so the
 * xarray's own lock covers the id space.
 */
static struct kiwi_counter *kiwi_counter_find(struct rdma_counter *counter)
{
	return xa_load(&to_kdev(counter->device)->counter_xa, counter->id);
}

/* A new counter for the core's first bind of @counter: id 0 asks. */
static int kiwi_counter_new(struct rdma_counter *counter)
{
	struct kiwi_device *kdev = to_kdev(counter->device);
	struct kiwi_counter *c;
	u32 id;
	int rv;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->stats = alloc_percpu(struct kiwi_stats);
	if (!c->stats) {
		kfree(c);
		return -ENOMEM;
	}
	rv = xa_alloc(&kdev->counter_xa, &id, c, xa_limit_31b, GFP_KERNEL);
	if (rv) {
		free_percpu(c->stats);
		kfree(c);
		return rv;
	}
	counter->id = id;
	return 0;
}

int kiwi_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_counter *c;
	int rv;

	lockdep_assert_held(&counter->lock);
	if (!counter->id) {
		rv = kiwi_counter_new(counter);
		if (rv)
			return rv;
	}
	c = kiwi_counter_find(counter);
	if (WARN_ON_ONCE(!c))
		return -ENOENT;
	rcu_assign_pointer(qp->counter, c);
	ibqp->counter = counter;	/* the core reads it; drivers set it */
	return 0;
}

int kiwi_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	lockdep_assert_held(&ibqp->counter->lock);
	/* Counts made so far stay in the counter; new ones go to the device. */
	RCU_INIT_POINTER(qp->counter, NULL);
	ibqp->counter = NULL;
	return 0;
}

int kiwi_counter_dealloc(struct rdma_counter *counter)
{
	struct kiwi_counter *c;

	c = xa_erase(&to_kdev(counter->device)->counter_xa, counter->id);
	if (!c)
		return 0;	/* never bound: no id was allocated */
	/* A data path that read the pointer before the unbind is done. */
	synchronize_rcu();
	free_percpu(c->stats);
	kfree(c);
	return 0;
}

struct rdma_hw_stats *kiwi_counter_alloc_stats(struct rdma_counter *counter)
{
	return rdma_alloc_hw_stats_struct(kiwi_stat_descs, KIWI_NSTATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int kiwi_counter_update_stats(struct rdma_counter *counter)
{
	struct kiwi_counter *c = kiwi_counter_find(counter);

	lockdep_assert_held(&counter->lock);
	if (!c)
		return -ENOENT;
	kiwi_stats_sum(c->stats, counter->stats);
	return 0;
}
