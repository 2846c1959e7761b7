// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: the MPA request/reply exchange (RFC 5044 section 7, RFC 6581
 * enhanced setup: IRD/ORD and the ready-to-receive message) and the
 * kernel TCP socket it runs on.  The frames are built and parsed by
 * include/kiwi/iwarp.h (fuzzed in user space); this file moves them.
 * Called by iwcm.c, cmwork.c and cm.c with ep->lock held; calls none
 * of the CM's other files.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/tcp.h>
#include <linux/version.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"

/*
 * kiwi_log_addr()'s stand-in for an address not known (cm.h): here, at
 * the bottom of the CM's files, which every one of them calls anyway.
 */
const struct sockaddr_storage kiwi_no_addr = { .ss_family = AF_INET };

/* ---- the socket ---- */

static int kiwi_sock_window_clamp(struct socket *sock, int val)
{
	return sock->ops->setsockopt(sock, SOL_TCP, TCP_WINDOW_CLAMP,
				     KERNEL_SOCKPTR(&val), sizeof(val));
}

/*
 * Until RTS the peer may send only the MPA frame (and, for the
 * responder, whatever follows at once): clamp the window, remembering
 * the value negotiated in the TCP handshake for kiwi_sock_unclamp().
 */
void kiwi_sock_clamp(struct kiwi_ep *ep)
{
	int clamp = READ_ONCE(tcp_sk(ep->sock->sk)->window_clamp);

	if (clamp > KIWI_SETUP_WINDOW &&
	    !kiwi_sock_window_clamp(ep->sock, KIWI_SETUP_WINDOW))
		ep->setup_clamp = clamp;
}

void kiwi_sock_unclamp(struct kiwi_ep *ep)
{
	if (ep->setup_clamp)
		kiwi_sock_window_clamp(ep->sock, ep->setup_clamp);
	ep->setup_clamp = 0;
}

/*
 * A peer that vanishes (powered off, unplugged, its kernel dead) sends
 * no FIN and no RST: only TCP's timers can tell.  Left alone they take
 * about 15 minutes for data in flight (tcp_retries2) and forever for a
 * connection with nothing to send, and the QP never flushes.
 * peer_timeout bounds both: TCP_USER_TIMEOUT for data the peer does not
 * acknowledge (zero-window probes included), keepalive probes from half
 * of it on for silence, so a connection ends about peer_timeout seconds
 * after the peer's last sign of life.  Hardware iWARP RNICs run TCP
 * keepalive too.  Each new socket takes the value of the moment;
 * accepted sockets take their listener's.
 */
#define KIWI_PEER_TIMEOUT_MAX	3600	/* s; keepidle's limit is 32767 */
static unsigned int kiwi_peer_timeout = 60;

static int kiwi_peer_timeout_set(const char *val, const struct kernel_param *kp)
{
	unsigned int t;
	int rv = kstrtouint(val, 0, &t);

	if (rv)
		return rv;
	if (t > KIWI_PEER_TIMEOUT_MAX)
		return -ERANGE;
	WRITE_ONCE(kiwi_peer_timeout, t);
	return 0;
}

static const struct kernel_param_ops kiwi_peer_timeout_ops = {
	.set = kiwi_peer_timeout_set,
	.get = param_get_uint,
};
module_param_cb(peer_timeout, &kiwi_peer_timeout_ops, &kiwi_peer_timeout, 0644);
MODULE_PARM_DESC(peer_timeout,
		 "Seconds (0-3600) a connected peer may stay silent -- no ACK for our data, no answer to keepalive probes -- before its connection ends and its QP flushes; 0: TCP's defaults, no keepalive (default 60)");

static void kiwi_sock_liveness(struct sock *sk)
{
	unsigned int t = READ_ONCE(kiwi_peer_timeout);

	if (!t)
		return;
	tcp_sock_set_user_timeout(sk, t * MSEC_PER_SEC);
	sock_set_keepalive(sk);
	/*
	 * With a user timeout, TCP ends a silent connection at the first
	 * keepalive probe after it has passed: probes every twelfth of it
	 * overshoot by little.
	 */
	tcp_sock_set_keepidle(sk, max(t / 2, 1U));
	tcp_sock_set_keepintvl(sk, max(t / 12, 1U));
}

/*
 * Every FPDU goes out at once (no Nagle).  The receive buffer is fixed
 * at the stack's autotuning maximum: TCP grows it only for readers that
 * use recvmsg(), and placing from tcp_read_sock() would otherwise leave
 * the window at its initial ~64 KiB (measured: the sender then waited
 * for window ~40% of the time).  Set before connect() or listen(): the
 * window scale and clamp are fixed in the handshake, and accepted
 * sockets inherit.
 * Memory is charged only for data actually queued.
 */
static void kiwi_sock_tune(struct sock *sk)
{
	tcp_sock_set_nodelay(sk);
	sock_set_rcvbuf(sk, READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_rmem[2]) / 2);
	kiwi_sock_liveness(sk);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	/* READ responses may go out from softirq: not the task's frag. */
	sk->sk_use_task_frag = false;
#endif
}

const void *kiwi_mpa_ulp_pd(struct kiwi_ep *ep)
{
	return ep->mpa_buf + sizeof(struct kiwi_mpa_rr) + ep->mpa.ulp_pd_off;
}

/* ---- MPA frames ---- */

static int kiwi_send_all(struct socket *sock, struct kvec *iov, int n,
			 size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int rv = kernel_sendmsg(sock, &msg, iov, n, len);

	return rv == len ? 0 : (rv < 0 ? rv : -EIO);
}

/* Flags of our request, or of an accepting reply (an echo of LARGE). */
u8 kiwi_mpa_flags(const struct kiwi_ep *ep)
{
	return (ep->crc ? KIWI_MPA_FLAG_C : 0) |
	       (ep->mk_rx ? KIWI_MPA_FLAG_M : 0) |
	       (ep->large ? KIWI_MPA_FLAG_LARGE : 0);
}

/* Send an MPA request or reply with optional RFC 6581 data. */
int kiwi_mpa_send(struct kiwi_ep *ep, bool req, u8 flags,
			 const void *pd, u16 pd_len)
{
	struct kiwi_mpa_rr rr;
	struct kiwi_mpa_v2 v2;
	struct kvec iov[3];
	bool enh = ep->mpa.rev == KIWI_MPA_REV2;
	u8 rev = enh ? KIWI_MPA_REV2 : KIWI_MPA_REV1;
	u16 total = pd_len + (enh ? sizeof(v2) : 0);
	int n = 0;

	if (enh)
		flags |= KIWI_MPA_FLAG_ENH;
	iov[n].iov_base = &rr;
	iov[n++].iov_len = kiwi_mpa_build(&rr, req, rev, flags, total);
	if (enh) {
		v2 = kiwi_mpa_v2_build(ep->ird, ep->ord, ep->mpa.p2p, ep->rtr);
		iov[n].iov_base = &v2;
		iov[n++].iov_len = sizeof(v2);
	}
	if (pd_len) {
		iov[n].iov_base = (void *)pd;
		iov[n++].iov_len = pd_len;
	}
	return kiwi_send_all(ep->sock, iov, n, sizeof(rr) + total);
}

/* Why kiwi_mpa_parse() refused a frame, for the log. */
static const char *kiwi_mpa_why(enum kiwi_mpa_err err)
{
	switch (err) {
	case KIWI_MPA_BAD_KEY:
		return "wrong key";
	case KIWI_MPA_BAD_REV:
		return "unknown revision";
	case KIWI_MPA_BAD_PD_LEN:
		return "private data too long";
	case KIWI_MPA_BAD_ENH:
		return "enhanced flag without RFC 6581 data";
	default:
		return "?";
	}
}

/*
 * Read (more of) an MPA request or reply without blocking.  Returns 1
 * when complete, 0 when more data is needed, or a negative error; a
 * parse failure is reported through ep->mpa and -EPROTO.
 */
int kiwi_mpa_recv(struct kiwi_ep *ep, bool req)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	const struct kiwi_mpa_rr *rr = (void *)ep->mpa_buf;
	u32 want = sizeof(*rr);
	enum kiwi_mpa_err err;
	struct kvec iov;
	int rv;

	if (ep->mpa_got >= sizeof(*rr))
		want += min_t(u32, be16_to_cpu(rr->pd_len), KIWI_MPA_MAX_PD);
	while (ep->mpa_got < want) {
		iov.iov_base = ep->mpa_buf + ep->mpa_got;
		iov.iov_len = want - ep->mpa_got;
		rv = kernel_recvmsg(ep->sock, &msg, &iov, 1, iov.iov_len,
				    MSG_DONTWAIT);
		if (rv == -EAGAIN)
			return 0;
		if (rv <= 0)
			return rv ? rv : -ECONNRESET;
		ep->mpa_got += rv;
		if (ep->mpa_got == sizeof(*rr)) {
			if (be16_to_cpu(rr->pd_len) > KIWI_MPA_MAX_PD) {
				kiwi_ep_dbg(ep, "MPA %s refused: %u bytes of private data, at most %u\n",
					    req ? "request" : "reply",
					    be16_to_cpu(rr->pd_len),
					    KIWI_MPA_MAX_PD);
				return -EPROTO;
			}
			want += be16_to_cpu(rr->pd_len);
		}
	}
	err = kiwi_mpa_parse(rr, ep->mpa_buf + sizeof(*rr),
			     ep->mpa_got - sizeof(*rr), req, &ep->mpa);
	if (err) {
		kiwi_ep_dbg(ep, "MPA %s refused: %s (revision %u, flags %#x)\n",
			    req ? "request" : "reply", kiwi_mpa_why(err),
			    rr->rev, rr->flags);
		return -EPROTO;
	}
	return 1;
}

bool kiwi_addr_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

int kiwi_sock_create(struct socket **sock, struct sockaddr *laddr,
			    bool afonly, int ifindex)
{
	int len = laddr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
						 sizeof(struct sockaddr_in6);
	int rv;

	if (laddr->sa_family != AF_INET && laddr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	/* In the caller's network namespace, like any socket it opens. */
	rv = sock_create(laddr->sa_family, SOCK_STREAM, IPPROTO_TCP, sock);
	if (rv)
		return rv;
	sock_set_reuseaddr((*sock)->sk);
	kiwi_sock_tune((*sock)->sk);
	(*sock)->sk->sk_bound_dev_if = ifindex;
	if (afonly && laddr->sa_family == AF_INET6) {
		rv = ip6_sock_set_v6only((*sock)->sk);
		if (rv)
			goto err;
	}
	rv = kernel_bind(*sock, laddr, len);
	if (rv)
		goto err;
	return 0;
err:
	sock_release(*sock);
	*sock = NULL;
	return rv;
}

/*
 * The connecting socket, bound to the rdma_cm's local address.  The
 * rdma_cm picked the port in its own port space, from the range TCP
 * also draws ephemeral ports from; a TCP socket outside the rdma_cm
 * may hold it (one in TIME_WAIT, bound without SO_REUSEADDR).  Then
 * any free port does: the connect reply reports the one used.
 */
int kiwi_active_sock(struct iw_cm_id *id, struct socket **sock)
{
	struct sockaddr_storage laddr = id->m_local_addr;
	int rv;

	rv = kiwi_sock_create(sock, (struct sockaddr *)&laddr, id->afonly, 0);
	if (rv != -EADDRINUSE)
		return rv;
	if (laddr.ss_family == AF_INET)
		((struct sockaddr_in *)&laddr)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&laddr)->sin6_port = 0;
	return kiwi_sock_create(sock, (struct sockaddr *)&laddr, id->afonly,
				0);
}
