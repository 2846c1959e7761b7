// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Queue pairs: RC create/query/modify/destroy, capability limits,
 * unsupported QP types, destroy-order rules.
 */
#include "kv.h"

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static struct env setup(void)
{
	struct env e;

	e.ctx = kv_open();
	kv_query_device(e.ctx, &e.attr);
	e.pd = kv_alloc_pd(e.ctx);
	e.cq = kv_create_cq(e.ctx, 64);
	return e;
}

static void teardown(struct env *e)
{
	EXPECT_EQ(ibv_destroy_cq(e->cq), 0);
	EXPECT_EQ(ibv_dealloc_pd(e->pd), 0);
	EXPECT_EQ(ibv_close_device(e->ctx), 0);
}

static void check_caps(const struct ibv_qp_cap *got,
		       const struct ibv_qp_cap *want)
{
	EXPECT_GE(got->max_send_wr, want->max_send_wr);
	EXPECT_GE(got->max_recv_wr, want->max_recv_wr);
	EXPECT_GE(got->max_send_sge, want->max_send_sge);
	EXPECT_GE(got->max_recv_sge, want->max_recv_sge);
	EXPECT_GE(got->max_inline_data, want->max_inline_data);
}

TEST(create_query_destroy_rc)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq), qia;
	struct ibv_qp_cap want;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;

	ia.cap.max_send_wr = 32;
	ia.cap.max_recv_wr = 24;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 3;
	ia.cap.max_inline_data = 64;
	ia.qp_context = (void *)0x5678;
	want = ia.cap;
	qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(qp);
	/* ibv_create_qp() writes back the actual capabilities. */
	check_caps(&ia.cap, &want);
	EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
	EXPECT_NE(qp->qp_num, 0);
	EXPECT_TRUE(qp->pd == e.pd);
	EXPECT_TRUE(qp->send_cq == e.cq);
	EXPECT_TRUE(qp->recv_cq == e.cq);
	EXPECT_TRUE(qp->qp_context == (void *)0x5678);

	memset(&qa, 0, sizeof(qa));
	memset(&qia, 0, sizeof(qia));
	ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia), 0);
	TH_LOG("state after create: %d, caps sw=%u rw=%u ss=%u rs=%u inl=%u",
	       qa.qp_state, qa.cap.max_send_wr, qa.cap.max_recv_wr,
	       qa.cap.max_send_sge, qa.cap.max_recv_sge,
	       qa.cap.max_inline_data);
	/* iWARP QPs start in RESET (IB model) or INIT (siw's IDLE). */
	EXPECT_TRUE(qa.qp_state == IBV_QPS_RESET ||
		    qa.qp_state == IBV_QPS_INIT);
	check_caps(&qa.cap, &want);
	check_caps(&qia.cap, &want);
	EXPECT_EQ(qia.qp_type, IBV_QPT_RC);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(create_rc_max_sge)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);
	struct ibv_qp_cap want;
	struct ibv_qp *qp;

	ia.cap.max_send_sge = e.attr.max_sge;
	ia.cap.max_recv_sge = e.attr.max_sge;
	want = ia.cap;
	qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(qp);
	check_caps(&ia.cap, &want);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(create_rc_max_wr)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);
	struct ibv_qp_cap want;
	struct ibv_qp *qp;

	ia.cap.max_send_wr = e.attr.max_qp_wr;
	ia.cap.max_recv_wr = e.attr.max_qp_wr;
	want = ia.cap;
	qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(qp);
	check_caps(&ia.cap, &want);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(modify_qp_init)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq), qia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;

	qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(qp);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	EXPECT_EQ(qp->state, IBV_QPS_INIT);
	memset(&qa, 0, sizeof(qa));
	ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia), 0);
	EXPECT_EQ(qa.qp_state, IBV_QPS_INIT);
	/* Any state may go to ERROR. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia), 0);
	EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(create_rc_separate_cqs)
{
	struct env e = setup();
	struct ibv_cq *rcq = kv_create_cq(e.ctx, 16);
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);
	struct ibv_qp *qp;

	ia.recv_cq = rcq;
	qp = ibv_create_qp(e.pd, &ia);
	ASSERT_NONNULL(qp);
	EXPECT_TRUE(qp->recv_cq == rcq);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	EXPECT_EQ(ibv_destroy_cq(rcq), 0);
	teardown(&e);
}

TEST(too_many_send_sge_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.cap.max_send_sge = e.attr.max_sge + 1;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

TEST(too_many_recv_sge_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.cap.max_recv_sge = e.attr.max_sge + 1;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

TEST(too_many_send_wr_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.cap.max_send_wr = e.attr.max_qp_wr + 1;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

TEST(too_many_recv_wr_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.cap.max_recv_wr = e.attr.max_qp_wr + 1;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

TEST(too_much_inline_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.cap.max_inline_data = KIWI_MAX_INLINE + 1;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

TEST(create_qp_without_cq_einval)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.send_cq = NULL;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	ia = kv_rc_attr(e.cq);
	ia.recv_cq = NULL;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EINVAL);
	teardown(&e);
}

static struct ibv_qp *reset_qp(struct env *e)
{
	struct ibv_qp_init_attr ia = kv_rc_attr(e->cq);
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	ASSERT_NONNULL(qp);
	return qp;
}

static int to_init(struct ibv_qp *qp, int port)
{
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = port;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

TEST(modify_qp_bad_port_einval)
{
	struct env e = setup();
	struct ibv_qp *qp = reset_qp(&e);

	EXPECT_ERRNO(to_init(qp, 2), EINVAL);
	EXPECT_ERRNO(to_init(qp, 1), 0);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(modify_qp_to_rts_einval)
{
	struct env e = setup();
	struct ibv_qp *qp = reset_qp(&e);
	struct ibv_qp_attr qa;

	ASSERT_EQ(to_init(qp, 1), 0);
	/* RTR/RTS come from the connection manager (iw_cm), not modify_qp. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	EXPECT_ERRNO(ibv_modify_qp(qp, &qa, IBV_QP_STATE), EINVAL);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(modify_qp_ord_ird_over_128_einval)
{
	struct env e = setup();
	struct ibv_qp *qp = reset_qp(&e);
	struct ibv_qp_attr qa;

	ASSERT_EQ(to_init(qp, 1), 0);
	memset(&qa, 0, sizeof(qa));
	qa.max_rd_atomic = 128;
	qa.max_dest_rd_atomic = 128;
	{
		int r = ibv_modify_qp(qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC |
				      IBV_QP_MAX_DEST_RD_ATOMIC);

		TH_LOG("setting ORD/IRD 128 in INIT: %d (%s)", r,
		       r ? kt_errname(r) : "accepted");
	}
	memset(&qa, 0, sizeof(qa));
	qa.max_rd_atomic = 129;
	EXPECT_ERRNO(ibv_modify_qp(qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
	memset(&qa, 0, sizeof(qa));
	qa.max_dest_rd_atomic = 129;
	EXPECT_ERRNO(ibv_modify_qp(qp, &qa, IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

static void unsupported_type(enum ibv_qp_type type)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

	ia.qp_type = type;
	EXPECT_FAILS_WITH(ibv_create_qp(e.pd, &ia), EOPNOTSUPP);
	teardown(&e);
}

TEST(create_ud_eopnotsupp)
{
	unsupported_type(IBV_QPT_UD);
}

TEST(create_uc_eopnotsupp)
{
	unsupported_type(IBV_QPT_UC);
}

TEST(create_raw_packet_eopnotsupp)
{
	unsupported_type(IBV_QPT_RAW_PACKET);
}

TEST(destroy_cq_with_qp_busy)
{
	struct env e = setup();
	struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);
	struct ibv_qp *qp = ibv_create_qp(e.pd, &ia);
	int ret;

	ASSERT_NONNULL(qp);
	ret = ibv_destroy_cq(e.cq);
	TH_LOG("ibv_destroy_cq with a QP attached returned %d (%s)", ret,
	       ret ? kt_errname(ret) : "success");
	EXPECT_ERRNO(ret, EBUSY);
	ret = ibv_dealloc_pd(e.pd);
	TH_LOG("ibv_dealloc_pd with a QP attached returned %d (%s)", ret,
	       ret ? kt_errname(ret) : "success");
	EXPECT_ERRNO(ret, EBUSY);
	if (kt_shared->failed)
		return; /* objects may be gone; process exit cleans up */
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	teardown(&e);
}

TEST(many_qps)
{
	struct env e = setup();
	struct ibv_qp *qp[32];
	uint32_t qpn[32];
	int i, j;

	for (i = 0; i < 32; i++) {
		struct ibv_qp_init_attr ia = kv_rc_attr(e.cq);

		qp[i] = ibv_create_qp(e.pd, &ia);
		ASSERT_NONNULL(qp[i]);
		qpn[i] = qp[i]->qp_num;
	}
	for (i = 0; i < 32; i++)
		for (j = i + 1; j < 32; j++)
			EXPECT_NE(qpn[i], qpn[j]);
	for (i = 0; i < 32; i++)
		EXPECT_EQ(ibv_destroy_qp(qp[i]), 0);
	teardown(&e);
}

KT_MAIN()
