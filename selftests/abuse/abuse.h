/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * abuse.h -- what the abuse-test programs (selftests/abuse/) share: the
 * private data a victim accepts with, and fill patterns.  Also included
 * by the kernel-side victim selftests/kconsumer/kiwi_frmr_test.c.
 */
#ifndef KIWI_ABUSE_H
#define KIWI_ABUSE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#endif

#define ABUSE_PORT	7400
#define VICTIM_MAGIC	0x7669636d	/* "vicm" */
#define PAT_VICTIM	0x5a		/* the victim's region */
#define PAT_PEER	0xe7		/* what the peer writes */

/*
 * victim -R reads PEER_READ_LEN bytes of the peer's (fpdu_peer -m
 * resp_interleave) at this STag and offset, and posts two receives: the
 * READ Response comes in two FPDUs of PAT_RESP1 and PAT_RESP2 with a
 * SEND of PEER_SEND_LEN bytes of PAT_SEND1 between them and one of
 * PAT_SEND2 after them.
 */
#define PEER_READ_STAG	0x7065e401
#define PEER_READ_TO	0x10000ULL
#define PEER_READ_LEN	2048
#define PEER_SEND_LEN	64
#define PAT_RESP1	0xc3
#define PAT_RESP2	0xd4
#define PAT_SEND1	0x1e
#define PAT_SEND2	0x2f

/* Accept private data, network byte order. */
struct victim_info {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
} __attribute__((packed));

#ifndef __KERNEL__
/* The next event on @ch within @ms milliseconds, or NULL. */
static inline struct rdma_cm_event *abuse_cm_poll(struct rdma_event_channel *ch,
						  int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/*
 * Wait for @qp to reach ERR: a close completes asynchronously, so allow
 * it 5 s; if it does not, say so ("# QP n state s, not ERR").
 */
static inline bool abuse_qp_in_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int i;

	for (i = 0; i < 100; i++) {
		if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
			return false;
		if (a.qp_state == IBV_QPS_ERR)
			return true;
		usleep(50000);
	}
	printf("# QP %u state %d, not ERR\n", qp->qp_num, a.qp_state);
	return false;
}
#endif /* !__KERNEL__ */

#endif /* KIWI_ABUSE_H */
