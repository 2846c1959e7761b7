// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * cm_pair.c -- the connected-pair fixture (see cm_pair.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm_pair.h"

const char *cm_pair_role = "?";

void cm_pair_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s %s: ", cm_pair_prog, cm_pair_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* Dies with "WHAT: strerror(errno)", WHAT formatted from @fmt, @ap. */
static void __attribute__((noreturn, format(printf, 1, 0)))
die_step(const char *fmt, va_list ap)
{
	int err = errno;
	char what[160];

	vsnprintf(what, sizeof(what), fmt, ap);
	DIE("%s: %s", what, strerror(err));
}

double cm_pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct ibv_wc cm_pair_wc(struct ibv_cq *cq, double secs, const char *what)
{
	double end = cm_pair_now() + secs;
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		if (cm_pair_now() > end)
			DIE("no %s%scompletion within %.0f s", what, *what ? " " : "", secs);
		usleep(200);
	}
	if (n < 0)
		DIE("poll_cq: %d", n);
	return wc;
}

void cm_pair_start_poll(struct ibv_cq_ex *cq, double secs, const char *what)
{
	struct ibv_poll_cq_attr pa = {};
	double end = cm_pair_now() + secs;

	while (ibv_start_poll(cq, &pa) == ENOENT) {
		if (cm_pair_now() > end)
			DIE("no %s%scompletion within %.0f s", what, *what ? " " : "", secs);
		usleep(200);
	}
}

struct rdma_addrinfo *cm_pair_resolve(const char *addr, const char *port,
				      bool passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP,
				       .ai_flags = passive ? RAI_PASSIVE : 0 };
	struct rdma_addrinfo *res;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		DIE("rdma_getaddrinfo %s:%s: %s", addr, port, strerror(errno));
	return res;
}

int cm_pair_main(int argc, char **argv, cm_pair_side *server,
		 cm_pair_side *client)
{
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], argv[3]);
	return -1;
}

struct rdma_conn_param cm_pair_param(bool active, const void *priv,
				     uint8_t len)
{
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4,
				      .private_data = priv,
				      .private_data_len = len };

	if (active)
		cp.retry_count = 7;
	return cp;
}

struct rdma_cm_id *cm_pair_listen(const char *addr, const char *port,
				  int backlog)
{
	struct rdma_addrinfo *res = cm_pair_resolve(addr, port, true);
	struct rdma_cm_id *listen;

	if (rdma_create_ep(&listen, res, NULL, NULL) ||
	    rdma_listen(listen, backlog))
		DIE("listen: %s", strerror(errno));
	return listen;	/* @res kept: the listening id's whole life */
}

struct rdma_cm_id *cm_pair_request(struct rdma_cm_id *listen,
				   const char *what, ...)
{
	struct rdma_cm_id *id;
	va_list ap;

	if (!rdma_get_request(listen, &id))
		return id;
	va_start(ap, what);
	die_step(what, ap);
}

void cm_pair_accept(struct rdma_cm_id *id, const struct rdma_conn_param *cp,
		    const char *what, ...)
{
	va_list ap;

	if (!rdma_accept(id, (struct rdma_conn_param *)cp))
		return;
	va_start(ap, what);
	die_step(what, ap);
}

struct rdma_cm_id *cm_pair_endpoint(const char *addr, const char *port,
				    const char *what, ...)
{
	struct rdma_addrinfo *res = cm_pair_resolve(addr, port, false);
	struct rdma_cm_id *id;
	va_list ap;

	if (!rdma_create_ep(&id, res, NULL, NULL)) {
		rdma_freeaddrinfo(res);	/* as qp_reconnect always did */
		return id;
	}
	va_start(ap, what);
	die_step(what, ap);
}

void cm_pair_connect(struct rdma_cm_id *id, const struct rdma_conn_param *cp,
		     const char *what, ...)
{
	va_list ap;

	if (!rdma_connect(id, (struct rdma_conn_param *)cp))
		return;
	va_start(ap, what);
	die_step(what, ap);
}

void cm_pair_peer_data(struct rdma_cm_id *id, void *buf, size_t len)
{
	if (!id->event || id->event->param.conn.private_data_len < len)
		DIE("no private data from the server");
	memcpy(buf, id->event->param.conn.private_data, len);
}

struct ibv_qp_ex *cm_pair_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_cq *scq, struct ibv_cq *rcq,
			     struct ibv_qp_cap cap, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = cap,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = send_ops,
		.pd = pd,
		.send_cq = scq,
		.recv_cq = rcq,
	};
	struct ibv_qp_ex *qx;

	if (rdma_create_qp_ex(id, &qa))
		DIE("rdma_create_qp_ex: %s", strerror(errno));
	qx = ibv_qp_to_qp_ex(id->qp);
	if (!qx)
		DIE("ibv_qp_to_qp_ex: NULL");
	return qx;
}

void cm_pair_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr,
		       uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		DIE("post_recv failed");
}

struct ibv_context *cm_pair_kiwi(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i] && !ctx; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "kiwi", 4))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		DIE("no kiwi device");
	return ctx;
}
