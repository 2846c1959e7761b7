/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * kiwi: software iWARP RNIC -- user/kernel ABI.
 *
 * This header is shared verbatim by the kernel module (kmod/) and the
 * libibverbs provider (provider/).  Every structure here crosses the
 * uverbs boundary as the driver-specific part of a command or response,
 * so layouts are fixed-size, naturally aligned and padded explicitly.
 *
 * Versioning: KIWI_ABI_VERSION is reported by the kernel as the uverbs
 * ABI version of every kiwi device (sysfs abi_version).  The provider
 * refuses devices whose version it does not know.  Any incompatible
 * change to this file bumps the version.
 */
#ifndef KIWI_ABI_USER_H
#define KIWI_ABI_USER_H

#include <linux/types.h>

#define KIWI_ABI_VERSION	1

/*
 * Device names created with "rdma link add NAME type kiwi" should start
 * with this prefix: the provider binds to devices by name, since kiwi has
 * no driver id of its own in the kernel's rdma_driver_id enumeration.
 */
#define KIWI_DEV_NAME_PREFIX	"kiwi"

/* Vendor id reported in device attributes: ASCII "kiw". */
#define KIWI_VENDOR_ID		0x6b6977
#define KIWI_VENDOR_PART_ID	1

/* Limits shared by both halves. */
#define KIWI_MAX_SGE		8	/* send and receive SGEs per WR */
#define KIWI_MAX_INLINE		256	/* bytes of inline send data */

/* Response to ibv_get_context(). */
struct kiwi_uresp_alloc_ctx {
	__u32 abi_version;	/* KIWI_ABI_VERSION of the running kernel */
	__u32 dev_id;		/* device index, for diagnostics */
	__u32 max_inline;	/* KIWI_MAX_INLINE */
	__u32 reserved;
};

/* Response to ibv_create_cq() and ibv_resize_cq(). */
struct kiwi_uresp_create_cq {
	__u32 cq_id;
	__u32 num_cqe;		/* actual capacity, >= requested */
};

/* Response to ibv_create_qp(). */
struct kiwi_uresp_create_qp {
	__u32 qp_id;
	__u32 num_sqe;		/* actual send queue depth */
	__u32 num_rqe;		/* actual receive queue depth (0 with SRQ) */
	__u32 reserved;
};

/* Response to ibv_create_srq(). */
struct kiwi_uresp_create_srq {
	__u32 srq_id;
	__u32 num_rqe;
};

#endif /* KIWI_ABI_USER_H */
