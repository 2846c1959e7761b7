// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * verbs_hold: a helper for the guest suite (not a TAP test).  Opens the
 * device under test (KIWI_DEV), creates a PD, CQ, MR, SRQ and RC QP,
 * prints "ready" and waits until killed.  Used to check what module
 * unload and device removal do while a process holds the device open.
 */
#include "kv.h"

static char buf[65536];

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr ia;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), kv_dev_name()))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "verbs_hold: cannot open %s\n", kv_dev_name());
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq || !ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) ||
	    !ibv_create_srq(pd, &sia)) {
		fprintf(stderr, "verbs_hold: cannot create objects: %s\n",
			strerror(errno));
		return 1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (!ibv_create_qp(pd, &ia)) {
		fprintf(stderr, "verbs_hold: cannot create a QP: %s\n",
			strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
