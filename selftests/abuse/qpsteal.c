// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * qpsteal -- can one local process bind another's QP to a connection?
 * For selftests/guest/abuse.sh.
 *
 *   qpsteal victim DEVICE     create a PD, CQ and RC QP on DEVICE, print
 *                             "qpn N" and wait to be killed
 *   qpsteal thief ADDR PORT QPN
 *                             listen on ADDR:PORT and answer the first
 *                             connect request with rdma_accept() naming
 *                             QP number QPN, which it does not own
 *
 * QP numbers are small and allocated in order, so guessing them is easy;
 * the accept must fail (kiwi refuses to bind a QP to a connection for
 * any process but the one that created it).  The thief prints
 * "qpsteal: refused (errno)" and exits 0 if it did, or "qpsteal: STOLE
 * QP N" and exits 1 if the connection was accepted on the victim's QP.
 * Exit status 2 on usage or setup errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static int victim(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "qpsteal: no device %s\n", name);
		return 2;
	}
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (!qp) {
		perror("qpsteal: create_qp");
		return 2;
	}
	printf("qpn %u\n", qp->qp_num);
	fflush(stdout);
	pause();
	return 0;
}

static int thief(const char *addr, int port, unsigned int qpn)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = qpn };
	struct pollfd pfd;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid, *id;
	int rv;

	if (!ch || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
	    rdma_listen(lid, 1)) {
		perror("qpsteal: listen");
		return 2;
	}
	printf("# listening on %s:%d\n", addr, port);
	fflush(stdout);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 30000) != 1 || rdma_get_cm_event(ch, &ev) ||
	    ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		fprintf(stderr, "qpsteal: no connect request\n");
		return 2;
	}
	id = ev->id;
	rdma_ack_cm_event(ev);
	rv = rdma_accept(id, &cp);
	if (rv) {
		int err = errno;

		/* The iw_cm's answer to a QP its get_qp() does not give. */
		printf("qpsteal: refused (%s)\n", strerror(err));
		rdma_reject(id, NULL, 0);
		return err == EINVAL ? 0 : 1;
	}
	printf("qpsteal: STOLE QP %u\n", qpn);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "victim"))
		return victim(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "thief"))
		return thief(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: qpsteal victim DEVICE | qpsteal thief ADDR PORT QPN\n");
	return 2;
}
