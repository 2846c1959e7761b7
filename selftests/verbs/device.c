// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Device-level verbs: open, query_device, query_port, query_gid.
 */
#include "kv.h"

#include <net/if.h>

TEST(open_close_device)
{
	struct ibv_context *ctx = kv_open();

	ASSERT_NONNULL(ctx->device);
	EXPECT_STREQ(ibv_get_device_name(ctx->device), kv_dev_name());
	ASSERT_EQ(ibv_close_device(ctx), 0);
	/* Opening twice in one process gives two independent contexts. */
	ctx = kv_open();
	struct ibv_context *ctx2 = kv_open();
	ASSERT_TRUE(ctx != ctx2);
	ASSERT_EQ(ibv_close_device(ctx2), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

TEST(node_type_rnic)
{
	struct ibv_context *ctx = kv_open();

	EXPECT_EQ(ctx->device->node_type, IBV_NODE_RNIC);
	EXPECT_EQ(ctx->device->transport_type, IBV_TRANSPORT_IWARP);
	EXPECT_STREQ(ibv_node_type_str(ctx->device->node_type), "iWARP NIC");
	ibv_close_device(ctx);
}

TEST(query_device_attrs)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	TH_LOG("fw_ver=%s vendor=0x%x part=%u max_qp=%d max_qp_wr=%d max_sge=%d "
	       "max_cq=%d max_cqe=%d max_mr=%d max_mr_size=0x%llx max_pd=%d "
	       "max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_srq=%d "
	       "page_size_cap=0x%llx ports=%u",
	       a.fw_ver, a.vendor_id, a.vendor_part_id, a.max_qp, a.max_qp_wr,
	       a.max_sge, a.max_cq, a.max_cqe, a.max_mr,
	       (unsigned long long)a.max_mr_size, a.max_pd, a.max_qp_rd_atom,
	       a.max_qp_init_rd_atom, a.max_srq,
	       (unsigned long long)a.page_size_cap, a.phys_port_cnt);

	EXPECT_EQ(a.vendor_id, KIWI_VENDOR_ID);
	EXPECT_EQ(a.vendor_part_id, KIWI_VENDOR_PART_ID);
	EXPECT_GT(a.max_qp, 0);
	EXPECT_GT(a.max_qp_wr, 0);
	EXPECT_GE(a.max_sge, 6);
	EXPECT_GT(a.max_cq, 0);
	EXPECT_GT(a.max_cqe, 0);
	EXPECT_GT(a.max_mr, 0);
	EXPECT_GT(a.max_mr_size, 0);
	EXPECT_GT(a.max_pd, 0);
	EXPECT_GE(a.max_qp_rd_atom, 128);
	EXPECT_GT(a.max_qp_init_rd_atom, 0);
	EXPECT_GT(a.page_size_cap, 0);
	EXPECT_EQ(a.phys_port_cnt, 1);

	/* Consistency between attributes. */
	EXPECT_GE(a.max_mr_size, (uint64_t)sysconf(_SC_PAGESIZE));
	EXPECT_TRUE(a.page_size_cap & (uint64_t)sysconf(_SC_PAGESIZE));
	EXPECT_LE(a.max_sge, KIWI_MAX_SGE);
	EXPECT_LE(a.max_sge_rd, a.max_sge);
	if (a.max_srq) {
		EXPECT_GT(a.max_srq_wr, 0);
		EXPECT_GT(a.max_srq_sge, 0);
	}
	ibv_close_device(ctx);
}

TEST(query_device_stable)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr a, b;

	kv_query_device(ctx, &a);
	kv_query_device(ctx, &b);
	EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
	ibv_close_device(ctx);
}

static long netdev_mtu(void)
{
	char path[256];
	long mtu = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", kv_netdev());
	if (!kv_read_long(path, &mtu))
		FAIL("cannot read %s (set KIWI_NETDEV to the netdev of %s)",
		     path, kv_dev_name());
	return mtu;
}

static bool netdev_up(void)
{
	char path[256];
	long flags = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/flags", kv_netdev());
	if (!kv_read_long(path, &flags))
		FAIL("cannot read %s", path);
	return flags & IFF_UP;
}

TEST(query_port)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_port_attr p;

	memset(&p, 0, sizeof(p));
	ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
	TH_LOG("state=%s max_mtu=%d active_mtu=%d gid_tbl_len=%d link_layer=%u",
	       ibv_port_state_str(p.state), kv_mtu_num(p.max_mtu),
	       kv_mtu_num(p.active_mtu), p.gid_tbl_len, p.link_layer);
	EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	EXPECT_GE(p.gid_tbl_len, 1);
	EXPECT_GE(p.max_mtu, p.active_mtu);
	EXPECT_GT(p.max_msg_sz, 0);
	ibv_close_device(ctx);
}

TEST(query_port_state)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_port_attr p;
	bool up = netdev_up();

	ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
	TH_LOG("netdev %s is %s, port state %s", kv_netdev(),
	       up ? "up" : "down", ibv_port_state_str(p.state));
	if (up)
		EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
	else
		EXPECT_EQ(p.state, IBV_PORT_DOWN);
	ibv_close_device(ctx);
}

TEST(query_port_mtu)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_port_attr p;
	long mtu = netdev_mtu();

	ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
	TH_LOG("netdev %s mtu %ld -> active_mtu %d (expect %d)", kv_netdev(),
	       mtu, kv_mtu_num(p.active_mtu),
	       kv_mtu_num(kv_ib_mtu_for(mtu)));
	EXPECT_EQ(p.active_mtu, kv_ib_mtu_for(mtu));
	ibv_close_device(ctx);
}

TEST(query_port_bad)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_port_attr p;

	/* Port 0 and port 2 don't exist on a one-port device. */
	EXPECT_NE(ibv_query_port(ctx, 2, &p), 0);
	EXPECT_NE(ibv_query_port(ctx, 0, &p), 0);
	ibv_close_device(ctx);
}

TEST(query_gid_mac)
{
	struct ibv_context *ctx = kv_open();
	char path[256], mac[64];
	unsigned int m[6];
	union ibv_gid gid;
	int i;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", kv_netdev());
	ASSERT_EQ(kv_read_file(path, mac, sizeof(mac)), 0);
	ASSERT_EQ(sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3],
			 &m[4], &m[5]), 6);
	memset(&gid, 0, sizeof(gid));
	ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	TH_LOG("netdev %s mac %s, gid[0] %02x%02x:%02x%02x:%02x%02x:...",
	       kv_netdev(), mac, gid.raw[0], gid.raw[1], gid.raw[2],
	       gid.raw[3], gid.raw[4], gid.raw[5]);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(gid.raw[i], m[i]);
	ibv_close_device(ctx);
}

TEST(query_gid_bad_index)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_port_attr p;
	union ibv_gid gid;

	ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
	EXPECT_NE(ibv_query_gid(ctx, 1, p.gid_tbl_len, &gid), 0);
	ibv_close_device(ctx);
}

TEST(query_device_ex)
{
	struct ibv_context *ctx = kv_open();
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;

	kv_query_device(ctx, &a);
	memset(&ax, 0, sizeof(ax));
	ASSERT_EQ(ibv_query_device_ex(ctx, NULL, &ax), 0);
	EXPECT_EQ(ax.orig_attr.max_qp, a.max_qp);
	EXPECT_EQ(ax.orig_attr.max_cq, a.max_cq);
	EXPECT_EQ(ax.orig_attr.max_mr, a.max_mr);
	EXPECT_EQ(ax.orig_attr.max_pd, a.max_pd);
	EXPECT_EQ(ax.orig_attr.vendor_id, a.vendor_id);
	ibv_close_device(ctx);
}

KT_MAIN()
