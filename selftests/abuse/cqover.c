// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * cqover -- a completion queue that overflows must not lose completions
 * silently.  For selftests/guest/abuse.sh; the other end is `victim`.
 *
 *   cqover -a ADDR [-p PORT]
 *
 * Connects (rdma_cm) with a send CQ of one entry, posts 8 signaled RDMA
 * WRITEs into the victim's region (from the accept's private data) and
 * does not poll.  Seven completions have nowhere to go: the verbs say
 * the CQ reports IBV_EVENT_CQ_ERR, and a QP whose completion was lost
 * cannot carry on as if its consumer had seen it -- it must fail
 * (IBV_EVENT_QP_FATAL, state ERR).  Exit status 0 if both events came
 * and the QP is in ERR, 1 if not, 2 on setup errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "abuse.h"

#define NWRITE	8

static struct rdma_cm_event *cm_wait(struct rdma_event_channel *ch,
				     enum rdma_cm_event_type want)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, 20000) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	if (ev->event != want) {
		printf("# cm event %s, wanted %s\n", rdma_event_str(ev->event),
		       rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(ABUSE_PORT) };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct ibv_qp_init_attr qa = { 0 };
	struct victim_info vi;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_async_event ae;
	struct ibv_qp_attr attr;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	struct pollfd pfd;
	bool cq_err = false, qp_fatal = false;
	static char buf[4096];
	int c, i;

	while ((c = getopt(argc, argv, "a:p:")) != -1) {
		if (c == 'a')
			inet_pton(AF_INET, optarg, &sin.sin_addr);
		else if (c == 'p')
			sin.sin_port = htons(atoi(optarg));
	}
	if (!sin.sin_addr.s_addr || !ch ||
	    rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 5000) ||
	    !(ev = cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED)))
		return 2;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 5000) ||
	    !(ev = cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)))
		return 2;
	rdma_ack_cm_event(ev);

	pd = ibv_alloc_pd(id->verbs);
	scq = ibv_create_cq(id->verbs, 1, NULL, NULL, 0);
	rcq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	if (!scq || !rcq || !mr)
		return 2;
	printf("# send CQ of %d entries\n", scq->cqe);
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	if (rdma_create_qp(id, pd, &qa) || rdma_connect(id, &cp) ||
	    !(ev = cm_wait(ch, RDMA_CM_EVENT_ESTABLISHED)))
		return 2;
	if (ev->param.conn.private_data_len < sizeof(vi))
		return 2;
	memcpy(&vi, ev->param.conn.private_data, sizeof(vi));
	rdma_ack_cm_event(ev);

	for (i = 0; i < NWRITE; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { be64toh(vi.addr) + 64 * i, ntohl(vi.rkey) },
		};
		struct ibv_send_wr *bad;

		if (ibv_post_send(id->qp, &wr, &bad)) {
			printf("# post %d: %s\n", i, strerror(errno));
			break;
		}
	}
	printf("# posted %d signaled WRITEs, not polling\n", i);

	pfd.fd = id->verbs->async_fd;
	pfd.events = POLLIN;
	while (!(cq_err && qp_fatal) && poll(&pfd, 1, 5000) == 1 &&
	       !ibv_get_async_event(id->verbs, &ae)) {
		printf("# async event: %s\n", ibv_event_type_str(ae.event_type));
		cq_err |= ae.event_type == IBV_EVENT_CQ_ERR;
		qp_fatal |= ae.event_type == IBV_EVENT_QP_FATAL;
		ibv_ack_async_event(&ae);
	}
	if (ibv_query_qp(id->qp, &attr, IBV_QP_STATE, &qa))
		attr.qp_state = IBV_QPS_UNKNOWN;
	printf("# qp state %s\n", attr.qp_state == IBV_QPS_ERR ? "ERR" : "not ERR");
	rdma_disconnect(id);
	if (cq_err && qp_fatal && attr.qp_state == IBV_QPS_ERR) {
		printf("cqover: ok\n");
		return 0;
	}
	printf("cqover: FAILED (CQ_ERR %d, QP_FATAL %d)\n", cq_err, qp_fatal);
	return 1;
}
