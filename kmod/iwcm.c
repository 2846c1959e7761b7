// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the iw_cm provider entry points (struct ib_device_ops iw_*):
 * connect, accept, reject, create and destroy a listener.  Each
 * creates or finishes an endpoint (cm.h) under its lock; everything
 * that happens afterwards runs in the endpoint's work (cmwork.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/nsproxy.h>
#include <net/sock.h>

#include "cm.h"
#include "verbs.h"

static struct kiwi_qp *kiwi_cm_qp(struct iw_cm_id *id, u32 qpn)
{
	/* The iw_cm bound it just before calling us: it holds a reference. */
	return kiwi_qp_find(id, qpn);
}

int kiwi_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct kiwi_device *kdev = to_kdev(id->device);
	struct sockaddr *raddr = (struct sockaddr *)&id->m_remote_addr;
	struct kiwi_qp *qp;
	struct kiwi_ep *ep;
	struct socket *sock;
	int rv;

	if (param->private_data_len >
	    KIWI_MPA_MAX_PD - sizeof(struct kiwi_mpa_v2) ||
	    param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD) {
		kiwi_dev_dbg(kdev, "connect to %pISpc refused: private data %u bytes (at most %zu), IRD %u ORD %u (at most %u, %u)\n",
			     raddr, param->private_data_len,
			     KIWI_MPA_MAX_PD - sizeof(struct kiwi_mpa_v2),
			     param->ird, param->ord, KIWI_MAX_IRD,
			     KIWI_MAX_ORD);
		return -EINVAL;
	}
	qp = kiwi_cm_qp(id, param->qpn);
	if (!qp) {
		kiwi_dev_dbg(kdev, "connect to %pISpc refused: no QP %u of the caller's\n",
			     raddr, param->qpn);
		return -EINVAL;
	}
	if (raddr->sa_family != id->m_local_addr.ss_family)
		return -EAFNOSUPPORT;

	ep = kiwi_ep_alloc(kdev);
	if (!ep)
		return -ENOMEM;
	ep->initiator = true;
	ep->local = id->m_local_addr;	/* the port may change: see below */
	ep->remote = id->m_remote_addr;
	ep->crc = READ_ONCE(kiwi_crc_default);
	ep->large = READ_ONCE(kiwi_large_fpdu);
	ep->mk_rx = kiwi_mk_request(true);
	ep->ird = param->ird;
	ep->ord = param->ord;
	ep->mpa.rev = KIWI_MPA_REV2;
	ep->mpa.p2p = READ_ONCE(kiwi_p2p);
	ep->rtr = ep->mpa.p2p ? READ_ONCE(kiwi_rtr_kinds) : 0;
	/* Stage the consumer's private data until TCP is up. */
	memcpy(ep->mpa_buf + sizeof(struct kiwi_mpa_rr), param->private_data,
	       param->private_data_len);
	ep->mpa_got = param->private_data_len;

	rv = kiwi_active_sock(id, &sock);
	if (rv)
		goto err;

	mutex_lock(&ep->lock);
	/*
	 * The endpoint is on kiwi_ep_list since kiwi_ep_alloc(): refused
	 * only if the device's removal closed it meanwhile.
	 */
	if (kiwi_ep_next(ep, KIWI_EPE_CONNECT) < 0) {
		mutex_unlock(&ep->lock);
		sock_release(sock);
		rv = -ENODEV;
		goto err;
	}
	kiwi_qp_get(&qp->ibqp);
	ep->qp = qp;
	kiwi_cm_id_set(ep, id);
	kiwi_sk_assoc(ep, sock);
	kiwi_ep_arm_timer(ep);
	rv = kernel_connect(sock, raddr, raddr->sa_family == AF_INET ?
			    sizeof(struct sockaddr_in) :
			    sizeof(struct sockaddr_in6), O_NONBLOCK);
	/* For the log: TCP has picked the port if kiwi_active_sock() left it. */
	kernel_getsockname(sock, (struct sockaddr *)&ep->local);
	kiwi_ep_event(ep, "connect", rv == -EINPROGRESS ? 0 : rv);
	if (rv && rv != -EINPROGRESS) {
		/* The error is iw_connect's: no CONNECT_REPLY follows. */
		kiwi_qp_put(&qp->ibqp);
		ep->qp = NULL;
		kiwi_ep_do(ep, KIWI_EPE_CONNECT_ERROR, rv, NULL, 0);
		mutex_unlock(&ep->lock);
		goto err;
	}
	mutex_unlock(&ep->lock);
	/* Connected already (loopback) or not: the work sorts it out. */
	kiwi_ep_kick(ep, KIWI_EV_SOCK);
	kiwi_ep_put(ep);	/* socket, timer and work keep it alive */
	return 0;
err:
	kiwi_ep_put(ep);
	return rv;
}

static u16 kiwi_pick_rtr(u16 offered)
{
	if (offered & KIWI_MPA_RTR_WRITE)
		return KIWI_MPA_RTR_WRITE;
	if (offered & KIWI_MPA_RTR_READ)
		return KIWI_MPA_RTR_READ;
	return offered & KIWI_MPA_RTR_SEND;
}

/* Under ep->lock: bind @id's QP, send the accepting reply, go RTS. */
static int kiwi_accept_locked(struct kiwi_ep *ep, struct iw_cm_id *id,
			      struct iw_cm_conn_param *param)
{
	struct kiwi_qp *qp;
	int rv;

	lockdep_assert_held(&ep->lock);
	if (ep->state != KIWI_EP_RECVD_REQ || !ep->sock) {
		kiwi_ep_dbg(ep, "accept refused: connection gone (%s)\n",
			    kiwi_ep_state_name(ep->state));
		return -ECONNRESET;
	}
	if (param->private_data_len >
	    KIWI_MPA_MAX_PD - sizeof(struct kiwi_mpa_v2) ||
	    param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD) {
		kiwi_ep_dbg(ep, "accept refused: private data %u bytes (at most %zu), IRD %u ORD %u (at most %u, %u)\n",
			    param->private_data_len,
			    KIWI_MPA_MAX_PD - sizeof(struct kiwi_mpa_v2),
			    param->ird, param->ord, KIWI_MAX_IRD, KIWI_MAX_ORD);
		return -EINVAL;
	}
	qp = kiwi_cm_qp(id, param->qpn);
	if (!qp || qp->ep) {
		kiwi_ep_dbg(ep, "accept refused: QP %u %s\n", param->qpn,
			    qp ? "bound to another connection" :
				 "not the caller's");
		return -EINVAL;
	}

	/* Our ORD may not exceed what the initiator can serve. */
	ep->ird = param->ird;
	ep->ord = ep->mpa.enhanced ? min_t(u16, param->ord, ep->mpa.ird) :
				     param->ord;
	ep->rtr = ep->mpa.p2p ?
		  kiwi_pick_rtr(ep->mpa.rtr & READ_ONCE(kiwi_rtr_kinds)) : 0;
	if (ep->mpa.p2p && !ep->rtr) {
		/* peer-to-peer without an RTR kind */
		kiwi_ep_dbg(ep, "accept refused: RTR kinds offered %#x, p2p_rtr allows %#x\n",
			    ep->mpa.rtr, READ_ONCE(kiwi_rtr_kinds));
		return -EOPNOTSUPP;
	}
	kiwi_qp_get(&qp->ibqp);
	ep->qp = qp;
	kiwi_cm_id_set(ep, id);

	rv = kiwi_mpa_send(ep, false, kiwi_mpa_flags(ep), param->private_data,
			   param->private_data_len);
	if (!rv)
		rv = kiwi_ep_go_rts(ep, 0);
	if (rv) {
		kiwi_qp_put(&qp->ibqp);
		ep->qp = NULL;
		kiwi_cm_id_drop(ep);
	}
	return rv;
}

int kiwi_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct kiwi_ep *ep = kiwi_req_take(id);
	int rv;

	if (!ep)
		return -ECONNRESET;	/* timed out, or the device is gone */
	mutex_lock(&ep->lock);
	ep->req_id = 0;
	rv = kiwi_accept_locked(ep, id, param);
	kiwi_ep_event(ep, "accept", rv);
	if (rv) {
		/*
		 * After a failed accept the iw_cm's id goes back to idle and
		 * no reject follows: the connection ends here, with a reset.
		 */
		kiwi_ep_do(ep, KIWI_EPE_ACCEPT_FAILED, rv, NULL, 0);
	} else {
		kiwi_upcall(ep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
	mutex_unlock(&ep->lock);
	kiwi_ep_put(ep);	/* the CONNECT_REQUEST reference */
	return rv;
}

int kiwi_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len)
{
	struct kiwi_ep *ep = kiwi_req_take(id);

	if (!ep)
		return 0;	/* reset already: timed out, or device gone */
	mutex_lock(&ep->lock);
	ep->req_id = 0;
	/* The reject frame goes if the socket is still there. */
	kiwi_ep_do(ep, KIWI_EPE_REJECT, 0, pdata, pd_len);
	mutex_unlock(&ep->lock);
	kiwi_ep_put(ep);	/* the CONNECT_REQUEST reference */
	return 0;
}

int kiwi_create_listen(struct iw_cm_id *id, int backlog)
{
	struct kiwi_device *kdev = to_kdev(id->device);
	struct sockaddr_storage laddr = id->m_local_addr;
	struct kiwi_ep *ep;
	struct socket *sock;
	int rv;

	/*
	 * rdma_cm issues a wildcard listen once per RDMA device, in the
	 * listener's network namespace.  A device whose netdev lives in
	 * another namespace can never receive a connection there: accept
	 * the listen without a socket rather than occupy the port.
	 */
	if (kiwi_addr_any(&laddr) &&
	    !net_eq(dev_net(kdev->netdev), current->nsproxy->net_ns)) {
		id->provider_data = NULL;
		return 0;
	}
	/* Bind each wildcard listen to its netdev so devices share the port. */
	rv = kiwi_sock_create(&sock, (struct sockaddr *)&laddr, id->afonly,
			      kiwi_addr_any(&laddr) ? kdev->netdev->ifindex : 0);
	if (rv)
		return rv;
	rv = kernel_listen(sock, backlog);
	if (rv) {
		sock_release(sock);
		return rv;
	}
	ep = kiwi_ep_alloc(kdev);
	if (!ep) {
		sock_release(sock);
		return -ENOMEM;
	}
	ep->local = laddr;
	mutex_lock(&ep->lock);
	/* As in kiwi_connect(): refused only if the device went meanwhile. */
	if (kiwi_ep_next(ep, KIWI_EPE_LISTEN) < 0) {
		mutex_unlock(&ep->lock);
		sock_release(sock);
		kiwi_ep_put(ep);
		return -ENODEV;
	}
	kiwi_cm_id_set(ep, id);
	/* Half-open connections it may hold: its backlog, at least 32. */
	ep->max_children = min_t(int, max(backlog, 32),
				 READ_ONCE(kiwi_max_half_open));
	kiwi_sk_assoc(ep, sock);
	mutex_unlock(&ep->lock);
	id->provider_data = ep;
	return 0;
}

int kiwi_destroy_listen(struct iw_cm_id *id)
{
	struct kiwi_ep *ep = id->provider_data;

	if (!ep)
		return 0;
	mutex_lock(&ep->lock);
	/* Its socket closed, its id dropped; CLOSED already if the device went. */
	kiwi_ep_do(ep, KIWI_EPE_LISTENER_DESTROYED, 0, NULL, 0);
	mutex_unlock(&ep->lock);
	/* Pending children may still look at us; they hold references. */
	if (cancel_work_sync(&ep->work))
		kiwi_ep_put(ep);
	id->provider_data = NULL;
	kiwi_ep_put(ep);
	return 0;
}
