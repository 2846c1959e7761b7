// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: device, port, user context and protection domain verbs.
 */
#include <linux/mm.h>
#include <rdma/uverbs_ioctl.h>
#include <kiwi/rdmap.h>

#include "verbs.h"

int kiwi_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		      struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibdev);
	const struct kiwi_limits *lim = &kdev->lim;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	/* VERSION as major << 32 | minor << 16 | patch, as ibv_devinfo reads it */
	attr->fw_ver = (u64)KIWI_VERSION_MAJOR << 32 |
		       KIWI_VERSION_MINOR << 16 | KIWI_VERSION_PATCH;
	attr->sys_image_guid = ibdev->node_guid;
	/* Bounded in practice by RLIMIT_MEMLOCK and physical memory. */
	attr->max_mr_size = (u64)totalram_pages() << PAGE_SHIFT;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = KIWI_VENDOR_ID;
	attr->vendor_part_id = KIWI_VENDOR_PART_ID;
	attr->hw_ver = 0;
	attr->max_qp = lim->max_qp;
	attr->max_qp_wr = lim->max_qp_wr;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->device_cap_flags = IB_DEVICE_CHANGE_PHY_PORT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_fast_reg_page_list_len = KIWI_MAX_FRMR_PAGES;
	attr->max_send_sge = KIWI_MAX_SGE;
	attr->max_recv_sge = KIWI_MAX_SGE;
	attr->max_sge_rd = KIWI_MAX_SGE_RD;
	attr->max_cq = lim->max_cq;
	attr->max_cqe = lim->max_cqe;
	attr->max_mr = lim->max_mr;
	/* Windows are STags like regions: one pool of max_mr for both. */
	attr->max_mw = lim->max_mr;
	attr->max_pd = lim->max_pd;
	attr->max_qp_rd_atom = KIWI_MAX_IRD;
	attr->max_qp_init_rd_atom = KIWI_MAX_ORD;
	attr->max_res_rd_atom = lim->max_qp * KIWI_MAX_IRD;
	/* RFC 7306 atomics, per QP from the module parameter (main.c). */
	attr->atomic_cap = READ_ONCE(kdev->atomics) ? IB_ATOMIC_HCA :
						      IB_ATOMIC_NONE;
	attr->max_srq = lim->max_srq;
	attr->max_srq_wr = lim->max_srq_wr;
	attr->max_srq_sge = KIWI_MAX_SGE;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 0;
	return 0;
}

/*
 * The core fills MTU from the netdev before calling us; the port state
 * follows the link: an RNIC port is usable whenever its netdev is up.
 */
int kiwi_query_port(struct ib_device *ibdev, u32 port,
		    struct ib_port_attr *attr)
{
	struct net_device *netdev = to_kdev(ibdev)->netdev;
	bool up = netif_running(netdev) && netif_carrier_ok(netdev);

	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = ib_mtu_int_to_enum(READ_ONCE(netdev->mtu));
	attr->gid_tbl_len = 2;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;
	attr->max_msg_sz = KIWI_MAX_MSG_SZ;
	attr->bad_pkey_cntr = 0;
	attr->qkey_viol_cntr = 0;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->lmc = 0;
	attr->active_speed = IB_SPEED_EDR;
	attr->active_width = IB_WIDTH_4X;
	return 0;
}

int kiwi_get_port_immutable(struct ib_device *ibdev, u32 port,
			    struct ib_port_immutable *imm)
{
	struct ib_port_attr attr;
	int rv;

	rv = ib_query_port(ibdev, port, &attr);
	if (rv)
		return rv;
	imm->gid_tbl_len = attr.gid_tbl_len;
	imm->pkey_tbl_len = attr.pkey_tbl_len;
	imm->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/*
 * GID 0 is the MAC address followed by zeros: rdma_cm finds the iWARP
 * device for an IP address by looking up exactly that GID.  GID 1 is the
 * conventional link-local form, fe80::/64 with the modified EUI-64 of
 * the MAC, for tools that expect a port GID to look like one (pyverbs
 * ignores GIDs whose last eight bytes are zero).
 */
int kiwi_query_gid(struct ib_device *ibdev, u32 port, int idx,
		   union ib_gid *gid)
{
	const u8 *mac = to_kdev(ibdev)->mac;

	memset(gid, 0, sizeof(*gid));
	switch (idx) {
	case 0:
		memcpy(gid->raw, mac, ETH_ALEN);
		return 0;
	case 1:
		gid->raw[0] = 0xfe;
		gid->raw[1] = 0x80;
		gid->raw[8] = mac[0] ^ 0x02;	/* universal/local bit */
		gid->raw[9] = mac[1];
		gid->raw[10] = mac[2];
		gid->raw[11] = 0xff;
		gid->raw[12] = 0xfe;
		gid->raw[13] = mac[3];
		gid->raw[14] = mac[4];
		gid->raw[15] = mac[5];
		return 0;
	default:
		return -EINVAL;
	}
}

/* iWARP has no partitions; report the default full-membership key. */
int kiwi_query_pkey(struct ib_device *ibdev, u32 port, u16 idx, u16 *pkey)
{
	if (idx)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

void kiwi_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%s", KIWI_DRV_VERSION);
}

int kiwi_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct kiwi_uresp_alloc_ctx resp = {
		.abi_version = KIWI_ABI_VERSION,
		.dev_id = uctx->device->index,
		.max_inline = KIWI_MAX_INLINE,
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

void kiwi_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/*
 * The device is going away (rdma link delete, module unload) while a
 * process still has it open.  With this op the RDMA core destroys the
 * process's objects itself, through the ordinary destroy verbs, and
 * answers its later calls with EIO, instead of waiting -- unkillably,
 * in `rdma link delete` or rmmod -- until the process closes the
 * device.  Nothing is left for us to do here: every object kiwi keeps
 * belongs to one of those verbs objects, and the mapped rings stay
 * valid memory for as long as the process maps them (kiwi_mmap_free()).
 */
void kiwi_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

int kiwi_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibpd->device);

	if (!kiwi_res_get(&kdev->num_pd, kdev->lim.max_pd))
		return -ENOMEM;
	return 0;
}

int kiwi_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_kdev(ibpd->device)->num_pd);
	return 0;
}
