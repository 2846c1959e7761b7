/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: the verbs -- the entry points main.c's struct ib_device_ops
 * names, each defined in the file of its layer.  Included by main.c and
 * by those files (for their prototypes); QP references and the other
 * calls between layers are in the layers' own headers.
 */
#ifndef KIWI_VERBS_H
#define KIWI_VERBS_H

#include "kiwi.h"

/* verbs.c: device, port, context and PD verbs */
int kiwi_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		      struct ib_udata *udata);
int kiwi_query_port(struct ib_device *ibdev, u32 port,
		    struct ib_port_attr *attr);
int kiwi_get_port_immutable(struct ib_device *ibdev, u32 port,
			    struct ib_port_immutable *imm);
int kiwi_query_gid(struct ib_device *ibdev, u32 port, int idx,
		   union ib_gid *gid);
int kiwi_query_pkey(struct ib_device *ibdev, u32 port, u16 idx, u16 *pkey);
void kiwi_get_dev_fw_str(struct ib_device *ibdev, char *str);
int kiwi_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata);
void kiwi_dealloc_ucontext(struct ib_ucontext *uctx);
void kiwi_disassociate_ucontext(struct ib_ucontext *uctx);
int kiwi_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int kiwi_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* mem.c: memory registration */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *kiwi_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			       u64 iova, int access, struct ib_udata *udata);
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

/* frmr.c: fast registration */
struct ib_mr *kiwi_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg);
int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);

/* mw.c: memory windows */
int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int kiwi_dealloc_mw(struct ib_mw *ibmw);

/* cq.c: completion queues */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs);
#else
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
#endif
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* qpverbs.c: queue pairs; qp.c: the iw_cm's QP lookup and reference */
int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init);
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn);
void kiwi_iw_add_ref(struct ib_qp *ibqp);

/* post.c: work request posting */
int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);

/* rq.c: shared receive queues */
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

/* stats.c: counters (`rdma statistic`) */
struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port);
int kiwi_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int kiwi_counter_unbind_qp(struct ib_qp *ibqp);
int kiwi_counter_dealloc(struct rdma_counter *counter);
struct rdma_hw_stats *kiwi_counter_alloc_stats(struct rdma_counter *counter);
int kiwi_counter_update_stats(struct rdma_counter *counter);
int kiwi_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index);

/* iwcm.c: the iw_cm provider */
int kiwi_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len);
int kiwi_create_listen(struct iw_cm_id *id, int backlog);
int kiwi_destroy_listen(struct iw_cm_id *id);

/* ring.c: mapping the rings */
int kiwi_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void kiwi_mmap_free(struct rdma_user_mmap_entry *e);

#endif /* KIWI_VERBS_H */
