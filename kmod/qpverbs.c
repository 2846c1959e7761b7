// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the QP verbs' entry points -- create (the capabilities checked,
 * the queues allocated and granted, the number reserved), destroy,
 * modify (its attributes; the state change itself is qp.c's), query,
 * and the driver attributes of "rdma resource show qp".
 *
 * Send queues, receive queues and SRQs are rings in the format of
 * include/uapi/rdma/kiwi-abi.h (see Documentation/rings.rst).  User QPs
 * and SRQs share them with the provider, which writes WQEs directly;
 * kernel consumers' WRs are encoded into the same format by post_send /
 * post_recv.  Either way a WQE is copied out of its ring slot once, when
 * the kernel starts it, and validated on that copy: ring contents and the
 * producer index are never trusted.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "qp.h"
#include "verbs.h"

#define KIWI_QPN_MAX	((1U << 24) - 1)

/* ---- create / destroy ---- */

static int kiwi_qp_check_cap(struct kiwi_device *kdev,
			     struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC || attr->create_flags) {
		kiwi_dev_dbg(kdev, "QP type %d, create flags %#x: RC only, no flags\n",
			     attr->qp_type, attr->create_flags);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		kiwi_dev_dbg(kdev, "a QP needs a send and a receive CQ\n");
		return -EINVAL;
	}
	if (cap->max_send_wr > kdev->lim.max_qp_wr ||
	    cap->max_send_sge > KIWI_MAX_SGE ||
	    cap->max_inline_data > KIWI_MAX_INLINE) {
		kiwi_dev_dbg(kdev, "send queue of %u WRs, %u SGEs, %u inline bytes: at most %u, %u, %u\n",
			     cap->max_send_wr, cap->max_send_sge,
			     cap->max_inline_data, kdev->lim.max_qp_wr,
			     KIWI_MAX_SGE, KIWI_MAX_INLINE);
		return -EINVAL;
	}
	if (attr->srq)
		return 0;
	if (cap->max_recv_wr > kdev->lim.max_qp_wr ||
	    cap->max_recv_sge > KIWI_MAX_SGE) {
		kiwi_dev_dbg(kdev, "receive queue of %u WRs, %u SGEs: at most %u, %u\n",
			     cap->max_recv_wr, cap->max_recv_sge,
			     kdev->lim.max_qp_wr, KIWI_MAX_SGE);
		return -EINVAL;
	}
	return 0;
}

/*
 * RFC 7306 has no in-band negotiation of its extensions: section 1.1
 * leaves it to the ULP, out of band, to know that the peer has them.
 * Sending Immediate Data to a peer without them (Linux siw) ends the
 * connection with a TERMINATE, so WRs with immediate data are refused
 * locally unless this says the peers do.  Read when a QP is created:
 * a per-QP default that may be changed between QPs.  Receiving them
 * is always on.  (rfc7306_atomics is main.c's: changing it changes what
 * the devices report.)
 */
static bool kiwi_imm_default;
module_param_named(rfc7306_imm, kiwi_imm_default, bool, 0644);
MODULE_PARM_DESC(rfc7306_imm,
		 "QPs created from now on may send RFC 7306 immediate data: their peers support it (default: off)");

static int kiwi_qp_resp(struct kiwi_qp *qp, struct ib_udata *udata)
{
	struct kiwi_uresp_create_qp resp = {
		.qp_id = qp->ibqp.qp_num,
		.num_sqe = qp->sq_size,
		.sq_stride = qp->sq_ring.stride,
		.sq_mmap_offset = kiwi_ring_mmap_offset(&qp->sq_ring),
		.sq_mmap_len = kiwi_ring_mmap_len(&qp->sq_ring),
		.flags = (qp->imm_tx ? KIWI_UQP_F_IMM : 0) |
			 (qp->atomic ? KIWI_UQP_F_ATOMIC : 0) | KIWI_UQP_F_MW,
	};

	if (!qp->srq) {
		resp.num_rqe = kiwi_ring_size(&qp->rq_ring);
		resp.rq_stride = qp->rq_ring.stride;
		resp.rq_mmap_offset = kiwi_ring_mmap_offset(&qp->rq_ring);
		resp.rq_mmap_len = kiwi_ring_mmap_len(&qp->rq_ring);
	}
	/* Without the ring offsets a user QP is unusable. */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * Allocate the rings (mapped for user QPs) and grant what the slot
 * sizes really hold; the caller sees the grant in attr->cap.
 */
static int kiwi_qp_alloc_queues(struct kiwi_qp *qp,
				struct ib_qp_init_attr *attr,
				struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &attr->cap;
	u32 payload = kiwi_sq_payload(cap->max_send_sge, cap->max_inline_data);
	int rv;

	/* An atomic WQE: its sink SGE, then struct kiwi_uatomic. */
	if (qp->atomic)
		payload = max_t(u32, payload, KIWI_USGE_SIZE +
				sizeof(struct kiwi_uatomic));

	qp->sq_size = kiwi_ring_slots(cap->max_send_wr);
	rv = kiwi_ring_init(&qp->sq_ring, udata, qp->sq_size,
			    sizeof(struct kiwi_usqe) + payload);
	if (rv)
		return rv;
	qp->sq = kvcalloc(qp->sq_size, sizeof(*qp->sq), GFP_KERNEL_ACCOUNT);
	if (!qp->sq)
		return -ENOMEM;
	cap->max_send_wr = qp->sq_size;
	cap->max_send_sge = min_t(u32, payload / KIWI_USGE_SIZE, KIWI_MAX_SGE);
	cap->max_inline_data = min_t(u32, payload, KIWI_MAX_INLINE);
	if (qp->srq)
		return 0;
	cap->max_recv_sge = max(cap->max_recv_sge, 1U);
	rv = kiwi_ring_init(&qp->rq_ring, udata,
			    kiwi_ring_slots(cap->max_recv_wr),
			    kiwi_rq_stride(cap->max_recv_sge));
	if (rv)
		return rv;
	cap->max_recv_wr = kiwi_ring_size(&qp->rq_ring);
	return 0;
}

static void kiwi_qp_free_queues(struct kiwi_qp *qp)
{
	if (qp->sq_ring.buf)
		kiwi_ring_destroy(&qp->sq_ring);
	if (qp->rq_ring.buf)
		kiwi_ring_destroy(&qp->rq_ring);
	kvfree(qp->sq);
	qp->sq = NULL;
}

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibqp->device);
	struct kiwi_qp *qp = to_kqp(ibqp);
	u32 qpn;
	int rv;

	rv = kiwi_qp_check_cap(kdev, attr);
	if (rv)
		return rv;
	if (!kiwi_res_get(&kdev->num_qp, kdev->lim.max_qp)) {
		kiwi_dev_dbg(kdev, "max_qp (%u) QPs exist already\n",
			     kdev->lim.max_qp);
		return -ENOMEM;
	}

	qp->kdev = kdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	kiwi_qp_init_state(qp);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	qp->sq_sig_type = attr->sq_sig_type;
	qp->user = !!udata;
	if (udata)
		qp->owner = get_task_pid(current, PIDTYPE_TGID);
	qp->ird = KIWI_MAX_IRD;
	qp->ord = KIWI_MAX_ORD;
	qp->imm_tx = READ_ONCE(kiwi_imm_default);
	qp->atomic = READ_ONCE(kdev->atomics);

	rv = kiwi_qp_alloc_queues(qp, attr, udata);
	if (rv)
		goto err;
	rv = kiwi_tx_init(qp);
	if (rv)
		goto err;
	kiwi_rx_init(qp);
	kiwi_qp_publish_state(qp);
	qp->cap = attr->cap;

	/*
	 * Reserve the number (a NULL entry, which lookups do not see) and
	 * publish the QP only once nothing can fail: the response copy can,
	 * and the core frees the QP when we fail, while a thread of the
	 * same process could already have bound it by its predicted number.
	 */
	rv = xa_alloc_cyclic(&kdev->qp_xa, &qpn, NULL,
			     XA_LIMIT(1, KIWI_QPN_MAX), &kdev->qp_next,
			     GFP_KERNEL);
	if (rv < 0) {
		rv = rv == -EBUSY ? -ENOMEM : rv;
		goto err;
	}
	ibqp->qp_num = qpn;

	if (udata) {
		rv = kiwi_qp_resp(qp, udata);
		if (rv) {
			xa_erase(&kdev->qp_xa, qpn);
			goto err;
		}
	}
	/* The slot exists, so storing into it allocates nothing. */
	xa_store(&kdev->qp_xa, qpn, qp, GFP_KERNEL);
	return 0;

err:
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return rv;
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_device *kdev = qp->kdev;

	mutex_lock(&qp->state_lock);
	kiwi_qp_set_state(qp, IB_QPS_ERR);
	mutex_unlock(&qp->state_lock);

	xa_erase(&kdev->qp_xa, ibqp->qp_num);

	/* The iw_cm may still hold references until the connection ends. */
	kiwi_qp_put(ibqp);
	wait_for_completion(&qp->freed);

	/*
	 * No endpoint has the QP any more (the CM's reference is gone), so
	 * no socket delivers to it and no sender has a socket.  The event
	 * work goes first, as its handler may kick tx.work; and in ERROR,
	 * where the ERR above put the QP, every data-path event is ignored
	 * (qpfsm.h), so nothing but a lost completion could queue it again;
	 * and nothing completes: there is no connection, and a consumer
	 * posts nothing to a QP it destroys.
	 */
	cancel_work_sync(&qp->ev_work);
	kiwi_tx_stop(qp);
	kiwi_rx_stop(qp);
	kiwi_tx_free(qp);
	kiwi_qp_free_queues(qp);
	put_pid(qp->owner);
	atomic_dec(&kdev->num_qp);
	return 0;
}

/* ---- modify, query ---- */

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	int known = IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |
		    IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_MAX_QP_RD_ATOMIC |
		    IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_EN_SQD_ASYNC_NOTIFY;
	int rv = 0;

	if (mask & ~known) {
		kiwi_qp_dbg(qp, "attribute mask %#x: %#x not supported\n",
			    mask, mask & ~known);
		return -EOPNOTSUPP;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != 1) {
		kiwi_qp_dbg(qp, "port %u: the device has port 1 only\n",
			    attr->port_num);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > KIWI_MAX_ORD) {
		kiwi_qp_dbg(qp, "ORD %u: at most %u\n", attr->max_rd_atomic,
			    KIWI_MAX_ORD);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > KIWI_MAX_IRD) {
		kiwi_qp_dbg(qp, "IRD %u: at most %u\n",
			    attr->max_dest_rd_atomic, KIWI_MAX_IRD);
		return -EINVAL;
	}

	mutex_lock(&qp->state_lock);
	if ((mask & IB_QP_CUR_STATE) &&
	    attr->cur_qp_state != kiwi_qp_ib_state(qp)) {
		kiwi_qp_dbg(qp, "cur_qp_state %d given, the QP is in %d (enum ib_qp_state)\n",
			    attr->cur_qp_state, kiwi_qp_ib_state(qp));
		rv = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_STATE) {
		rv = kiwi_qp_set_state(qp, attr->qp_state);	/* counted */
		if (rv)
			goto out;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	attr->qp_state = kiwi_qp_ib_state(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->port_num = 1;
	attr->path_mtu = ib_mtu_int_to_enum(READ_ONCE(qp->kdev->netdev->mtu));
	attr->path_mig_state = IB_MIG_MIGRATED;

	init->qp_type = IB_QPT_RC;
	init->send_cq = &qp->scq->ibcq;
	init->recv_cq = &qp->rcq->ibcq;
	init->srq = qp->srq ? &qp->srq->ibsrq : NULL;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = qp->cap;
	return 0;
}

/*
 * Driver attributes of "rdma resource show qp -dd": what the MPA
 * exchange settled for the current connection (0 without one).
 */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	bool crc, large, mk_tx, mk_rx, await;
	struct nlattr *nest;
	u32 ird, ord, rtr;

	mutex_lock(&qp->state_lock);
	crc = qp->sock && qp->crc;
	large = qp->sock && qp->large_fpdu;
	mk_tx = qp->sock && qp->mk_tx;
	mk_rx = qp->sock && qp->mk_rx;
	ird = qp->ird;
	ord = qp->ord;
	rtr = qp->sock ? qp->rtr : 0;
	await = qp->sock && READ_ONCE(qp->tx.await_peer);
	mutex_unlock(&qp->state_lock);

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "mpa_crc", crc) ||
	    rdma_nl_put_driver_u32(msg, "large_fpdu", large) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_tx", mk_tx) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_rx", mk_rx) ||
	    rdma_nl_put_driver_u32(msg, "ird", ird) ||
	    rdma_nl_put_driver_u32(msg, "ord", ord) ||
	    rdma_nl_put_driver_u32(msg, "p2p_rtr", rtr) ||
	    rdma_nl_put_driver_u32(msg, "await_first_fpdu", await) ||
	    rdma_nl_put_driver_u32(msg, "rfc7306_imm", qp->imm_tx) ||
	    rdma_nl_put_driver_u32(msg, "rfc7306_atomics", qp->atomic)) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}
