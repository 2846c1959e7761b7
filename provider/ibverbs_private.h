/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi provider: the slice of libibverbs' *private* provider ABI that the
 * kiwi provider uses, declared by hand.
 *
 * Why this file exists: rdma-core does not install its provider headers
 * (infiniband/driver.h, kern-abi.h, cmd_*.h), yet a provider must share
 * struct layouts with the libibverbs it is loaded into.  That ABI is
 * versioned by the symbol set IBVERBS_PRIVATE_<N>; the system library is
 * rdma-core 44.0, whose private ABI is IBVERBS_PRIVATE_34 (hence the
 * library name suffix -rdmav34.so and verbs_register_driver_34).
 *
 * Every declaration below was written from rdma-core v44.0's
 * libibverbs/driver.h and kern-abi.h.  The numbers in the static_asserts
 * are the LP64 sizes/offsets of the *real* v44.0 definitions; they were
 * checked by compiling the same assertions against the v44.0 headers
 * (provider/tools/check-v44-layout.sh, which also checks the function
 * prototypes and the types of the ops-table slots).  If a field here drifts, or a
 * future libibverbs changes a layout, the build breaks instead of the
 * provider silently corrupting libibverbs' memory.
 *
 * Public types (struct ibv_*, struct verbs_context) come from the installed
 * <infiniband/verbs.h>, kernel command structs from <rdma/ib_user_verbs.h>.
 *
 * C-compatible on purpose: plain structs, extern "C" functions.
 */
#ifndef KIWI_IBVERBS_PRIVATE_H
#define KIWI_IBVERBS_PRIVATE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <time.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The literal layout numbers below are for 64-bit Linux only. */
static_assert(sizeof(void *) == 8 && sizeof(long) == 8, "LP64 only");

#define KIWI_ASSERT_SIZE(type, size) \
	static_assert(sizeof(struct type) == (size), #type " size != v44")
#define KIWI_ASSERT_OFFSET(type, member, off)                              \
	static_assert(offsetof(struct type, member) == (off),               \
		      #type "." #member " offset != v44")

/* Private ABI generation: part of the provider file name and the
 * registration symbol, must equal IBVERBS_PRIVATE_<N> of the library. */
#define KIWI_IBVERBS_PABI_VERSION 34

/* ----------------------------------------------------------------- */
/* ccan/list.h's list_node: two pointers, used only as opaque links.  */
struct kiwi_list_node {
	struct kiwi_list_node *next, *prev;
};

/* ------------------------------ matching ------------------------- */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;	/* fnmatch() pattern */
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;			/* VERBS_MATCH_* */
};
KIWI_ASSERT_SIZE(verbs_match_ent, 24);
KIWI_ASSERT_OFFSET(verbs_match_ent, driver_data, 0);
KIWI_ASSERT_OFFSET(verbs_match_ent, u, 8);
KIWI_ASSERT_OFFSET(verbs_match_ent, vendor, 16);
KIWI_ASSERT_OFFSET(verbs_match_ent, device, 18);
KIWI_ASSERT_OFFSET(verbs_match_ent, kind, 20);

/* One uverbs device found in sysfs/netlink, owned by libibverbs. */
struct verbs_sysfs_dev {
	struct kiwi_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;	/* table entry that matched */
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];	/* uverbsN */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];	/* e.g. kiwi0 */
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;			/* enum rdma_driver_id */
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;			/* per-device uverbs ABI */
	struct timespec time_created;
};
KIWI_ASSERT_SIZE(verbs_sysfs_dev, 992);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, match, 24);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, flags, 32);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, sysfs_name, 36);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, sysfs_cdev, 104);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, ibdev_name, 112);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, ibdev_path, 176);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, modalias, 432);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, node_guid, 944);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, driver_id, 952);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, node_type, 956);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, ibdev_idx, 960);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, num_ports, 964);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, abi_ver, 968);
KIWI_ASSERT_OFFSET(verbs_sysfs_dev, time_created, 976);

struct verbs_device;

/* What a provider hands to verbs_register_driver_34(). */
struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;	/* sentinel-ended */
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};
KIWI_ASSERT_SIZE(verbs_device_ops, 72);
KIWI_ASSERT_OFFSET(verbs_device_ops, name, 0);
KIWI_ASSERT_OFFSET(verbs_device_ops, match_min_abi_version, 8);
KIWI_ASSERT_OFFSET(verbs_device_ops, match_max_abi_version, 12);
KIWI_ASSERT_OFFSET(verbs_device_ops, match_table, 16);
KIWI_ASSERT_OFFSET(verbs_device_ops, static_providers, 24);
KIWI_ASSERT_OFFSET(verbs_device_ops, match_device, 32);
KIWI_ASSERT_OFFSET(verbs_device_ops, alloc_context, 40);
KIWI_ASSERT_OFFSET(verbs_device_ops, import_context, 48);
KIWI_ASSERT_OFFSET(verbs_device_ops, alloc_device, 56);
KIWI_ASSERT_OFFSET(verbs_device_ops, uninit_device, 64);

/* The provider allocates this (first member of its device object);
 * libibverbs fills everything after alloc_device() returns. */
struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
#ifdef __cplusplus
	int refcount;			/* C11 atomic_int; never touched here */
#else
	_Atomic int refcount;
#endif
	struct kiwi_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};
KIWI_ASSERT_SIZE(verbs_device, 712);
KIWI_ASSERT_OFFSET(verbs_device, device, 0);
KIWI_ASSERT_OFFSET(verbs_device, ops, 664);
KIWI_ASSERT_OFFSET(verbs_device, refcount, 672);
KIWI_ASSERT_OFFSET(verbs_device, entry, 680);
KIWI_ASSERT_OFFSET(verbs_device, sysfs, 696);
KIWI_ASSERT_OFFSET(verbs_device, core_support, 704);

/* -------------------------- verbs objects ------------------------ */
/* Wrappers libibverbs expects around the public objects. */
struct verbs_xrcd;

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};
KIWI_ASSERT_SIZE(verbs_cq, 288);
KIWI_ASSERT_OFFSET(verbs_cq, cq, 0);

/* verbs_qp.comp_mask: VERBS_QP_EX makes ibv_qp_to_qp_ex() return qp_ex. */
enum {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;		/* VERBS_QP_*: 0, or VERBS_QP_EX */
	struct verbs_xrcd *xrcd;
};
KIWI_ASSERT_SIZE(verbs_qp, 368);
KIWI_ASSERT_OFFSET(verbs_qp, qp, 0);
KIWI_ASSERT_OFFSET(verbs_qp, qp_ex, 0);

/*
 * The extended objects are public (<infiniband/verbs.h>), but kiwi fills
 * their function tables, so their layout is part of what we depend on.
 */
KIWI_ASSERT_SIZE(ibv_qp_ex, 352);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_id, 168);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_flags, 176);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_rdma_read, 216);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_send, 240);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_set_inline_data, 288);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_start, 320);
KIWI_ASSERT_OFFSET(ibv_qp_ex, wr_atomic_write, 344);
KIWI_ASSERT_SIZE(ibv_cq_ex, 288);
KIWI_ASSERT_OFFSET(ibv_cq_ex, status, 132);
KIWI_ASSERT_OFFSET(ibv_cq_ex, wr_id, 136);
KIWI_ASSERT_OFFSET(ibv_cq_ex, start_poll, 144);
KIWI_ASSERT_OFFSET(ibv_cq_ex, read_completion_wallclock_ns, 280);
KIWI_ASSERT_OFFSET(verbs_qp, comp_mask, 352);
KIWI_ASSERT_OFFSET(verbs_qp, xrcd, 360);

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};
KIWI_ASSERT_SIZE(verbs_srq, 160);
KIWI_ASSERT_OFFSET(verbs_srq, srq, 0);
KIWI_ASSERT_OFFSET(verbs_srq, srq_type, 128);
KIWI_ASSERT_OFFSET(verbs_srq, xrcd, 136);
KIWI_ASSERT_OFFSET(verbs_srq, cq, 144);
KIWI_ASSERT_OFFSET(verbs_srq, srq_num, 152);

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};
KIWI_ASSERT_SIZE(verbs_mr, 56);
KIWI_ASSERT_OFFSET(verbs_mr, ibv_mr, 0);
KIWI_ASSERT_OFFSET(verbs_mr, mr_type, 48);
KIWI_ASSERT_OFFSET(verbs_mr, access, 52);

/* ----------------------- verbs_context_ops ----------------------- */
/*
 * The union of every op a provider may implement, handed to
 * verbs_set_ops(), which reads *all* slots of a v44-sized struct.  The
 * slot order is the ABI (alphabetical in v44), so every slot is declared,
 * and the offsets of the slots kiwi fills are asserted below together
 * with the total size.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};
/* 76 slots in v44.0. */
KIWI_ASSERT_SIZE(verbs_context_ops, 608);
KIWI_ASSERT_OFFSET(verbs_context_ops, alloc_pd, 40);
KIWI_ASSERT_OFFSET(verbs_context_ops, cq_event, 96);
KIWI_ASSERT_OFFSET(verbs_context_ops, create_cq, 120);
KIWI_ASSERT_OFFSET(verbs_context_ops, create_cq_ex, 128);
KIWI_ASSERT_OFFSET(verbs_context_ops, create_qp, 152);
KIWI_ASSERT_OFFSET(verbs_context_ops, create_qp_ex, 160);
KIWI_ASSERT_OFFSET(verbs_context_ops, create_srq, 176);
KIWI_ASSERT_OFFSET(verbs_context_ops, dealloc_pd, 208);
KIWI_ASSERT_OFFSET(verbs_context_ops, dereg_mr, 224);
KIWI_ASSERT_OFFSET(verbs_context_ops, destroy_cq, 248);
KIWI_ASSERT_OFFSET(verbs_context_ops, destroy_qp, 272);
KIWI_ASSERT_OFFSET(verbs_context_ops, destroy_srq, 288);
KIWI_ASSERT_OFFSET(verbs_context_ops, free_context, 312);
KIWI_ASSERT_OFFSET(verbs_context_ops, modify_qp, 376);
KIWI_ASSERT_OFFSET(verbs_context_ops, modify_srq, 392);
KIWI_ASSERT_OFFSET(verbs_context_ops, poll_cq, 424);
KIWI_ASSERT_OFFSET(verbs_context_ops, post_recv, 432);
KIWI_ASSERT_OFFSET(verbs_context_ops, post_send, 440);
KIWI_ASSERT_OFFSET(verbs_context_ops, post_srq_recv, 456);
KIWI_ASSERT_OFFSET(verbs_context_ops, query_device_ex, 464);
KIWI_ASSERT_OFFSET(verbs_context_ops, query_port, 480);
KIWI_ASSERT_OFFSET(verbs_context_ops, query_qp, 488);
KIWI_ASSERT_OFFSET(verbs_context_ops, query_srq, 512);
KIWI_ASSERT_OFFSET(verbs_context_ops, reg_mr, 544);
KIWI_ASSERT_OFFSET(verbs_context_ops, req_notify_cq, 552);
KIWI_ASSERT_OFFSET(verbs_context_ops, resize_cq, 568);

/* ---------------------- uverbs write commands -------------------- */
/*
 * kern-abi.h's DECLARE_CMD(): the uverbs header followed by the kernel's
 * request struct.  rdma-core wraps the payload in an anonymous union of
 * its fields and `core_payload`; the layout is the same, and kiwi never
 * touches the fields (the ibv_cmd_* helpers fill them), so only
 * core_payload is spelt out.  No kiwi command carries driver data, so
 * cmd_size is always sizeof the struct.
 */
#define KIWI_DECLARE_CMD(name, kabi, size)                                 \
	struct name {                                                      \
		struct ib_uverbs_cmd_hdr hdr;                              \
		struct kabi core_payload;                                  \
	};                                                                 \
	KIWI_ASSERT_SIZE(name, size);                                      \
	KIWI_ASSERT_OFFSET(name, core_payload, 8)

KIWI_ASSERT_SIZE(ib_uverbs_cmd_hdr, 8);
KIWI_DECLARE_CMD(ibv_get_context, ib_uverbs_get_context, 16);
KIWI_DECLARE_CMD(ibv_query_port, ib_uverbs_query_port, 24);
KIWI_DECLARE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd, 16);
KIWI_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr, 48);
KIWI_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw, 24);
KIWI_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq, 40);
KIWI_DECLARE_CMD(ibv_resize_cq, ib_uverbs_resize_cq, 24);
KIWI_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp, 64);
KIWI_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp, 24);
KIWI_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp, 120);
KIWI_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq, 40);
KIWI_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq, 24);
KIWI_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq, 24);

/* Core responses: the kernel appends kiwi's response right after these. */
KIWI_ASSERT_SIZE(ib_uverbs_get_context_resp, 8);
KIWI_ASSERT_SIZE(ib_uverbs_alloc_pd_resp, 4);
KIWI_ASSERT_SIZE(ib_uverbs_reg_mr_resp, 12);
KIWI_ASSERT_SIZE(ib_uverbs_alloc_mw_resp, 8);
KIWI_ASSERT_SIZE(ib_uverbs_create_cq_resp, 8);
KIWI_ASSERT_SIZE(ib_uverbs_resize_cq_resp, 8);
KIWI_ASSERT_SIZE(ib_uverbs_create_qp_resp, 32);
KIWI_ASSERT_SIZE(ib_uverbs_create_srq_resp, 16);
KIWI_ASSERT_SIZE(ib_uverbs_ex_query_device_resp, 304);
KIWI_ASSERT_OFFSET(ib_uverbs_ex_query_device_resp, response_length, 180);

/* --------------------------- functions --------------------------- */
/* All are exported by libibverbs.so.1 with version IBVERBS_PRIVATE_34. */

void verbs_register_driver_34(const struct verbs_device_ops *ops);

enum { VERBS_LOG_ERR = 1, VERBS_LOG_WARN = 2 };
void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Allocates alloc_size zeroed bytes and initialises the verbs_context at
 * byte offset (uintptr_t)context_offset; closes cmd_fd on failure. */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
/* The extended create: comp_mask PD and SEND_OPS_FLAGS only (v44 allows
 * PD | XRCD | SEND_OPS_FLAGS); same command and response as above. */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

#ifdef __cplusplus
}
#endif

#endif /* KIWI_IBVERBS_PRIVATE_H */
