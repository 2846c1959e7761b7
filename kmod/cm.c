// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: connection management -- the connection endpoints and their
 * state machine, from TCP connect or accept through the MPA exchange
 * (mpa.c) to RTS and close; the iw_cm's calls that start them are in
 * iwcm.c, what the three files share in cm.h.
 *
 * Every endpoint (kiwi_ep) has one work item; socket callbacks, timeouts
 * and local requests only set event bits and queue it, so most state
 * changes of an endpoint happen in its work function, the rest in the
 * iw_cm's calls (iwcm.c); all under ep->lock, and all through one
 * writer, kiwi_ep_next(), driven by the table of include/kiwi/epfsm.h.
 * Lock order: ep->lock, then qp->state_lock.
 *
 * Anyone who can reach a listening port can make endpoints, so what
 * they may cost is bounded: a connection that has not reached RTS (a
 * "half-open" one) counts against its listener (its backlog) and its
 * device (max_half_open), beyond which new connections are reset at
 * once; it may take mpa_timeout_ms to send its MPA request; and until
 * RTS its receive window is clamped small, so it cannot park more than
 * a few KiB in the socket.  Every endpoint is on kiwi_ep_list, so that
 * device removal and module unload can close what is left.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cm.h"
#include "trace.h"

static unsigned int kiwi_mpa_timeout_ms = 10000;
module_param_named(mpa_timeout_ms, kiwi_mpa_timeout_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_ms,
		 "Time allowed for TCP connect plus MPA exchange (default 10000 ms)");

bool kiwi_p2p = true;
module_param_named(peer_to_peer, kiwi_p2p, bool, 0644);
MODULE_PARM_DESC(peer_to_peer,
		 "Request RFC 6581 peer-to-peer mode with a ready-to-receive message (default Y)");

/*
 * RFC 5044 7.1.2 (rule 4) has a responder send nothing before it has
 * the initiator's first FPDU, so that the initiator can finish reading
 * the MPA reply first.  With an RFC 6581 RTR agreed that FPDU is sure
 * to come; without, it is whatever the initiator's consumer sends
 * first, and a protocol whose server speaks first (ucmatose) would
 * wait for ever.  So kiwi waits this long, then sends.
 */
static unsigned int kiwi_first_fpdu_ms = 200;
module_param_named(first_fpdu_ms, kiwi_first_fpdu_ms, uint, 0644);
MODULE_PARM_DESC(first_fpdu_ms,
		 "As MPA responder with no RFC 6581 RTR agreed: how long to hold everything for the initiator's first FPDU (default 200 ms, 0: until it comes)");

unsigned int kiwi_max_half_open = 256;
module_param_named(max_half_open, kiwi_max_half_open, uint, 0644);
MODULE_PARM_DESC(max_half_open,
		 "Connections per device still in TCP or MPA setup, beyond which new ones are reset (default 256)");

/*
 * How long a connection request handed to the iw_cm may wait for the
 * consumer's accept or reject.  The iw_cm drops a request it cannot
 * allocate for (cm_conn_req_handler(): iw_create_cm_id() failing) and
 * then calls neither: the endpoint would wait forever.
 */
static unsigned int kiwi_req_timeout_ms = 120000;
module_param_named(accept_timeout_ms, kiwi_req_timeout_ms, uint, 0644);
MODULE_PARM_DESC(accept_timeout_ms,
		 "Time a connection request may wait for accept or reject before it is reset (default 120000 ms, 0: forever)");

/*
 * Fault injection for the test of the above: the next N connection
 * requests are not handed to the iw_cm but treated as if it had
 * dropped them.  For tests only; 0 (default) in production.
 */
static unsigned int kiwi_fault_drop_req;
module_param_named(fault_drop_conn_req, kiwi_fault_drop_req, uint, 0644);
MODULE_PARM_DESC(fault_drop_conn_req,
		 "Test only: behave as if the iw_cm dropped the next N connection requests (default 0)");

/*
 * One remote host must not be able to take every half-open slot of a
 * device (and so block its other listeners): each source address gets
 * at most this many, and never more than half of max_half_open.  A
 * connection that has sent no byte of its MPA request after
 * first_byte_ms is closed without waiting out the MPA timeout.
 */
static unsigned int kiwi_max_half_open_src = 64;
module_param_named(max_half_open_per_source, kiwi_max_half_open_src, uint, 0644);
MODULE_PARM_DESC(max_half_open_per_source,
		 "Half-open connections per device from one source address, at most half of max_half_open (default 64)");

static unsigned int kiwi_first_byte_ms = 2000;
module_param_named(first_byte_ms, kiwi_first_byte_ms, uint, 0644);
MODULE_PARM_DESC(first_byte_ms,
		 "Time a new passive connection may take to send the first byte of its MPA request (default 2000 ms; 0: mpa_timeout_ms)");

bool kiwi_large_fpdu = true;
module_param_named(large_fpdu, kiwi_large_fpdu, bool, 0644);
MODULE_PARM_DESC(large_fpdu,
		 "Offer and accept FPDUs larger than a TCP segment, with peers that agree in the MPA exchange (default Y)");

/*
 * RFC 6581 ready-to-receive messages kiwi offers when it initiates in
 * peer-to-peer mode and accepts when it responds: a comma list of
 * "write", "read" and "send" (zero-length RDMA WRITE, RDMA READ, SEND).
 * Hardware differs (Chelsio's default is a zero-length READ), so a host
 * can be made to play any of them.
 */
u16 kiwi_rtr_kinds = KIWI_MPA_RTR_WRITE | KIWI_MPA_RTR_READ | KIWI_MPA_RTR_SEND;

static const char *const kiwi_rtr_names[] = {
	[0] = "send", [1] = "write", [2] = "read",	/* bit i: 1 << i */
};

static int kiwi_rtr_set(const char *val, const struct kernel_param *kp)
{
	char buf[32], *s = buf, *tok;
	u16 kinds = 0;
	int i;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	while ((tok = strsep(&s, ",")) != NULL) {
		tok = strim(tok);
		if (!*tok)
			continue;
		i = match_string(kiwi_rtr_names, ARRAY_SIZE(kiwi_rtr_names), tok);
		if (i < 0)
			return -EINVAL;
		kinds |= 1 << i;
	}
	if (!kinds)
		return -EINVAL;
	WRITE_ONCE(kiwi_rtr_kinds, kinds);
	return 0;
}

static int kiwi_rtr_get(char *buf, const struct kernel_param *kp)
{
	u16 kinds = READ_ONCE(kiwi_rtr_kinds);
	int i, n = 0;

	/* In kiwi's order of preference as a responder. */
	static const int order[] = { 1, 2, 0 };

	for (i = 0; i < ARRAY_SIZE(order); i++)
		if (kinds & (1 << order[i]))
			n += sysfs_emit_at(buf, n, "%s%s", n ? "," : "",
					   kiwi_rtr_names[order[i]]);
	return n + sysfs_emit_at(buf, n, "\n");
}

static const struct kernel_param_ops kiwi_rtr_ops = {
	.set = kiwi_rtr_set,
	.get = kiwi_rtr_get,
};
module_param_cb(p2p_rtr, &kiwi_rtr_ops, NULL, 0644);
MODULE_PARM_DESC(p2p_rtr,
		 "Ready-to-receive messages offered and accepted in peer-to-peer mode: write,read,send (default all three)");

/*
 * MPA markers (RFC 5044 4.3): whether our MPA frame sets M, asking the
 * peer to send them to us.  The peer's M is always honoured: we send
 * markers to a peer that asks, whatever this says.  2 and 3 restrict
 * the request to one role (2: initiator, 3: responder), for tests
 * with both ends on one module.
 */
enum { KIWI_MK_NEVER, KIWI_MK_ALWAYS, KIWI_MK_ACTIVE, KIWI_MK_PASSIVE };
static unsigned int kiwi_mpa_markers = KIWI_MK_NEVER;
module_param_named(mpa_markers, kiwi_mpa_markers, uint, 0644);
MODULE_PARM_DESC(mpa_markers,
		 "Request MPA markers from the peer: 0 never (default), 1 always, 2 on connections we initiate, 3 on connections we accept");

bool kiwi_mk_request(bool initiator)
{
	switch (READ_ONCE(kiwi_mpa_markers)) {
	case KIWI_MK_ALWAYS:
		return true;
	case KIWI_MK_ACTIVE:
		return initiator;
	case KIWI_MK_PASSIVE:
		return !initiator;
	default:
		return false;
	}
}

static struct workqueue_struct *kiwi_cm_wq;

/*
 * Connection requests the iw_cm holds, by cookie: each entry owns one
 * reference to its endpoint, which accept, reject, the request timeout
 * or device removal takes -- whichever erases the entry first; the
 * others find it gone.  The iw_cm sees the cookie, never the pointer,
 * so a late accept or reject cannot reach a freed endpoint.
 */
static DEFINE_XARRAY_ALLOC1(kiwi_req_xa);
static u32 kiwi_req_next;

/* Every endpoint alive, for device removal and module unload. */
static LIST_HEAD(kiwi_ep_list);
static DEFINE_SPINLOCK(kiwi_ep_list_lock);
static atomic_t kiwi_ep_live = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(kiwi_ep_freed);

/* /sys/module/kiwi/parameters/cm_endpoints: how many are alive. */
static int kiwi_ep_live_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&kiwi_ep_live));
}

static const struct kernel_param_ops kiwi_ep_live_ops = {
	.get = kiwi_ep_live_get,
};
module_param_cb(cm_endpoints, &kiwi_ep_live_ops, NULL, 0444);
MODULE_PARM_DESC(cm_endpoints,
		 "Connection endpoints alive: listeners, connections in setup and established ones (read-only)");

/* ---- endpoint lifetime ---- */

static void kiwi_ep_get(struct kiwi_ep *ep)
{
	kref_get(&ep->ref);
}

static void kiwi_ep_free(struct kref *ref);

void kiwi_ep_put(struct kiwi_ep *ep)
{
	kref_put(&ep->ref, kiwi_ep_free);
}

static void kiwi_ep_free(struct kref *ref)
{
	struct kiwi_ep *ep = container_of(ref, struct kiwi_ep, ref);

	spin_lock(&kiwi_ep_list_lock);
	list_del(&ep->entry);
	spin_unlock(&kiwi_ep_list_lock);
	if (ep->listener)
		kiwi_ep_put(ep->listener);
	kfree(ep);
	if (atomic_dec_and_test(&kiwi_ep_live))
		wake_up(&kiwi_ep_freed);
}

static void kiwi_ep_work(struct work_struct *work);

/* The timer's reference passes to the work it queues. */
static void kiwi_ep_timer(struct work_struct *work)
{
	struct kiwi_ep *ep = container_of(to_delayed_work(work),
					  struct kiwi_ep, timer);

	set_bit(KIWI_EV_TIMEOUT, &ep->events);
	if (!queue_work(kiwi_cm_wq, &ep->work))
		kiwi_ep_put(ep);	/* already queued, with its own */
}

/* A new endpoint starts where the state machine does: kzalloc'd, IDLE. */
static_assert(KIWI_EP_IDLE == 0);

struct kiwi_ep *kiwi_ep_alloc(struct kiwi_device *kdev)
{
	struct kiwi_ep *ep = kzalloc(sizeof(*ep), GFP_KERNEL);

	if (!ep)
		return NULL;
	kref_init(&ep->ref);
	mutex_init(&ep->lock);
	INIT_WORK(&ep->work, kiwi_ep_work);
	INIT_DELAYED_WORK(&ep->timer, kiwi_ep_timer);
	ep->kdev = kdev;	/* and, zeroed, in state IDLE */
	atomic_inc(&kiwi_ep_live);
	spin_lock(&kiwi_ep_list_lock);
	list_add_tail(&ep->entry, &kiwi_ep_list);
	spin_unlock(&kiwi_ep_list_lock);
	return ep;
}

/* ---- the state machine's one writer ---- */

/*
 * @ep went from @from to @to on @ev: the kiwi_ep_state tracepoint and,
 * with dynamic debug on (module kiwi +p), a kernel log line.
 */
static void kiwi_ep_state_event(struct kiwi_ep *ep, enum kiwi_ep_event ev,
				int from, int to)
{
	trace_kiwi_ep_state(dev_name(&ep->kdev->ibdev.dev), ep,
			    kiwi_ep_qpn(ep), from, to, ev);
	kiwi_ep_dbg(ep, "%s -> %s on %s\n", kiwi_ep_state_name(from),
		    kiwi_ep_state_name(to), kiwi_ep_event_name(ev));
}

/*
 * Event @ev is illegal for @ep in its state: counted in
 * cm_illegal_transitions, which counts exactly these refusals, and
 * traced (kiwi_ep_refused); the endpoint is left as it is.
 */
static void kiwi_ep_refused(struct kiwi_ep *ep, enum kiwi_ep_event ev)
{
	kiwi_stat_add(ep->kdev, KIWI_STAT_CM_BAD_TRANSITION, 1);
	trace_kiwi_ep_refused(dev_name(&ep->kdev->ibdev.dev), ep,
			      kiwi_ep_qpn(ep), ep->state, ev);
	kiwi_ep_dbg(ep, "%s refused in %s\n", kiwi_ep_event_name(ev),
		    kiwi_ep_state_name(ep->state));
}

/*
 * The row of the table for event @ev in @ep's state, nothing written:
 * its actions (KIWI_EPA_*, 0 if the event is ignored), or -EINVAL,
 * counted, if the table refuses it.  For a caller that acts before the
 * state changes (kiwi_ep_do()).
 */
static int kiwi_ep_step(struct kiwi_ep *ep, enum kiwi_ep_event ev)
{
	struct kiwi_epfsm_step step;

	lockdep_assert_held(&ep->lock);
	step = kiwi_epfsm(ep->state, ev);
	if (!step.legal) {
		kiwi_ep_refused(ep, ev);
		return -EINVAL;
	}
	return step.act;
}

/*
 * The one function that changes an endpoint's state: event @ev, looked
 * up for the current state in the table (include/kiwi/epfsm.h) and, if
 * its row moves, written and traced.  Returns the row's actions
 * (KIWI_EPA_*; 0 if the table ignores @ev in this state), or -EINVAL,
 * counted, if the table refuses it: then nothing changes.  Under
 * ep->lock; the receive path and kiwi_ep_find_open() read the state
 * without it.
 */
int kiwi_ep_next(struct kiwi_ep *ep, enum kiwi_ep_event ev)
{
	enum kiwi_ep_state from = ep->state;
	struct kiwi_epfsm_step step;

	lockdep_assert_held(&ep->lock);
	step = kiwi_epfsm(from, ev);
	if (!step.legal) {
		kiwi_ep_refused(ep, ev);
		return -EINVAL;
	}
	if (step.act & KIWI_EPA_WRITE) {
		WRITE_ONCE(ep->state, step.next);
		kiwi_ep_state_event(ep, ev, from, step.next);
	}
	return step.act;
}

static bool kiwi_same_host(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/* Whether @peer holds its share of @kdev's half-open slots already. */
static bool kiwi_half_open_src_full(struct kiwi_device *kdev,
				    const struct sockaddr_storage *peer)
{
	unsigned int quota = min(READ_ONCE(kiwi_max_half_open_src),
				 max(READ_ONCE(kiwi_max_half_open) / 2, 1U));
	unsigned int n = 0;
	struct kiwi_ep *ep;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		/* half_open changes under ep->lock: a count, not a bound */
		if (ep->kdev == kdev && READ_ONCE(ep->half_open) &&
		    kiwi_same_host(&ep->remote, peer) && ++n >= quota)
			break;
	}
	spin_unlock(&kiwi_ep_list_lock);
	return n >= quota;
}

/*
 * A new passive connection takes a half-open slot of its listener and
 * its device; false (nothing taken) if either is full, or if its source
 * has its share.
 */
static bool kiwi_half_open_get(struct kiwi_ep *l,
			       const struct sockaddr_storage *peer)
{
	if (kiwi_half_open_src_full(l->kdev, peer))
		return false;
	if (!atomic_add_unless(&l->children, 1, l->max_children))
		return false;
	if (!atomic_add_unless(&l->kdev->half_open, 1,
			       READ_ONCE(kiwi_max_half_open))) {
		atomic_dec(&l->children);
		return false;
	}
	return true;
}

/* Give back the slot: the connection reached RTS or is gone. */
static void kiwi_half_open_put(struct kiwi_ep *ep)
{
	if (!ep->half_open)
		return;
	WRITE_ONCE(ep->half_open, false);
	atomic_dec(&ep->listener->children);
	atomic_dec(&ep->kdev->half_open);
}

/* Queue the endpoint's work; the queued work owns one reference. */
void kiwi_ep_kick(struct kiwi_ep *ep, int event)
{
	set_bit(event, &ep->events);
	kiwi_ep_get(ep);
	if (!queue_work(kiwi_cm_wq, &ep->work))
		kiwi_ep_put(ep);
}

static void kiwi_ep_arm_timer_ms(struct kiwi_ep *ep, unsigned int ms)
{
	/* An expiry of the deadline this replaces is stale: on_timeout. */
	WRITE_ONCE(ep->timer_due, jiffies + msecs_to_jiffies(ms));
	kiwi_ep_get(ep);
	if (!mod_delayed_work(kiwi_cm_wq, &ep->timer, msecs_to_jiffies(ms)))
		return;
	kiwi_ep_put(ep);	/* was already pending: keep one reference */
}

void kiwi_ep_arm_timer(struct kiwi_ep *ep)
{
	kiwi_ep_arm_timer_ms(ep, kiwi_mpa_timeout_ms);
}

void kiwi_ep_cancel_timer(struct kiwi_ep *ep)
{
	if (cancel_delayed_work(&ep->timer))
		kiwi_ep_put(ep);
}

/* ---- socket callbacks ---- */

static void kiwi_sk_event(struct sock *sk)
{
	struct kiwi_ep *ep;

	read_lock_bh(&sk->sk_callback_lock);
	ep = __locked_read_sk_user_data_with_flags(sk, 0);
	if (ep)
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A listener's user data is marked NOCOPY: the sockets TCP clones from
 * it start with none, so no callback of theirs can reach the listener
 * endpoint (which may be going away) before they have one of their own.
 */
void kiwi_sk_assoc(struct kiwi_ep *ep, struct socket *sock)
{
	struct sock *sk = sock->sk;

	kiwi_ep_get(ep);	/* held while the socket points at us */
	ep->sock = sock;
	write_lock_bh(&sk->sk_callback_lock);
	ep->saved_data_ready = sk->sk_data_ready;
	ep->saved_state_change = sk->sk_state_change;
	ep->saved_write_space = sk->sk_write_space;
	__rcu_assign_sk_user_data_with_flags(sk, ep,
		ep->state == KIWI_EP_LISTEN ? SK_USER_DATA_NOCOPY : 0);
	sk->sk_data_ready = kiwi_sk_event;
	sk->sk_state_change = kiwi_sk_event;
	write_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Detach from the socket; once this returns no callback of ours runs or
 * will run for it.  Then release it, aborting the connection if asked.
 * The caller holds its own reference: this drops the socket's.
 */
void kiwi_sk_release(struct kiwi_ep *ep, bool abort)
{
	struct socket *sock = ep->sock;
	struct sock *sk;

	if (!sock)
		return;
	sk = sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_data_ready = ep->saved_data_ready;
	sk->sk_state_change = ep->saved_state_change;
	sk->sk_write_space = ep->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	if (ep->qp)
		kiwi_rx_stop(ep->qp);	/* its worker is done with sk */

	/* What the network cost this connection (tcp_info's total_retrans). */
	if (ep->qp)
		kiwi_qp_stat_add(ep->qp, KIWI_STAT_TCP_RETRANS,
				 READ_ONCE(tcp_sk(sk)->total_retrans));
	else
		kiwi_stat_add(ep->kdev, KIWI_STAT_TCP_RETRANS,
			      READ_ONCE(tcp_sk(sk)->total_retrans));
	if (abort)
		sock_no_linger(sk);	/* close with RST */
	else
		kernel_sock_shutdown(sock, SHUT_RDWR);
	ep->sock = NULL;
	sock_release(sock);
	kiwi_half_open_put(ep);
	kiwi_ep_put(ep);
}

/*
 * A connection management event: the kiwi_cm tracepoint and, with
 * dynamic debug on, a kernel log line.  @ep is open, so its device is.
 */
void kiwi_ep_event(struct kiwi_ep *ep, const char *what, int status)
{
	struct sockaddr_storage l = {}, r = {};
	u32 qpn = kiwi_ep_qpn(ep);

	if (ep->sock) {
		kernel_getsockname(ep->sock, (struct sockaddr *)&l);
		/*
		 * A refused or reset connection has no peer left: name the
		 * one asked for, or the one accepted from.
		 */
		if (kernel_getpeername(ep->sock, (struct sockaddr *)&r) < 0)
			r = ep->remote;
	}
	trace_kiwi_cm(dev_name(&ep->kdev->ibdev.dev), ep, qpn, what, status,
		      &l, &r);
	kiwi_ep_dbg(ep, "%s (%d)\n", what, status);
}

/* ---- upcalls to the iw_cm ---- */

void kiwi_cm_id_set(struct kiwi_ep *ep, struct iw_cm_id *id)
{
	id->add_ref(id);
	ep->cm_id = id;
}

void kiwi_cm_id_drop(struct kiwi_ep *ep)
{
	struct iw_cm_id *id = ep->cm_id;

	if (!id)
		return;
	ep->cm_id = NULL;
	id->provider_data = NULL;
	id->rem_ref(id);
}

int kiwi_upcall(struct kiwi_ep *ep, struct iw_cm_id *id,
		       enum iw_cm_event_type type, int status,
		       const void *pd, u32 pd_len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.ird = ep->ird,
		.ord = ep->ord,
	};

	if (ep->sock && type != IW_CM_EVENT_CLOSE) {
		kernel_getsockname(ep->sock, (struct sockaddr *)&ev.local_addr);
		kernel_getpeername(ep->sock,
				   (struct sockaddr *)&ev.remote_addr);
	}
	if (type == IW_CM_EVENT_CONNECT_REQUEST)
		ev.provider_data = (void *)(uintptr_t)ep->req_id;
	if (pd_len) {
		/* The iw_cm carries at most 255 bytes upward. */
		ev.private_data = (void *)pd;
		ev.private_data_len = min_t(u32, pd_len, U8_MAX);
	}
	return id->event_handler(id, &ev);
}

/* ---- binding a connection to its QP ---- */

/*
 * The initiator's zero-length RDMA WRITE ready-to-receive message is
 * repeated while the responder stays silent, at these delays after RTS
 * (ms).  Linux siw, as the responder, sends its MPA reply and only then
 * installs the callback that reads the RTR (siw_accept(): send the
 * reply, then siw_sk_assign_rtr_upcalls()); an RTR that lands in
 * between is left in the socket, unread, until more bytes arrive.  Its
 * cm_id then never gets ESTABLISHED: a consumer that waits for the
 * responder to speak first (librdmacm's ucmatose) hangs, and when the
 * connection is closed siw reports CLOSE for a cm_id the iw_cm still
 * has in CONN_RECV -- a kernel BUG in cm_close_handler().  kiwi, quick
 * to answer the reply, hit that window within a few connections.  A
 * zero-length WRITE names no buffer (RFC 5040 section 4.3; siw and kiwi
 * skip it at once), so a repeat is harmless to a responder that did
 * read the first one; any byte from the peer shows it is running and
 * ends the repeats.  So does anything of ours beyond the RTR messages
 * (20 bytes on the wire each, 24 with a marker; every other FPDU but a
 * zero-length SEND is longer than KIWI_RTR_MAX): a repeat never goes
 * between the FPDUs of a message, and the consumer's data wakes siw too.
 */
#define KIWI_RTR_MAX	28
static const unsigned int kiwi_rtr_nudge_ms[] = { 50, 300, 1500 };

static void kiwi_ep_nudge_arm(struct kiwi_ep *ep)
{
	if (ep->rtr_nudges < ARRAY_SIZE(kiwi_rtr_nudge_ms))
		kiwi_ep_arm_timer_ms(ep, kiwi_rtr_nudge_ms[ep->rtr_nudges]);
}

/* Timer in RTS, responder: the initiator had its time to speak first. */
static void kiwi_ep_hold_over(struct kiwi_ep *ep)
{
	lockdep_assert_held(&ep->lock);
	if (ep->qp && ep->sock && kiwi_qp_hold_over(ep->qp))
		kiwi_ep_event(ep, "first_fpdu_wait_over", 0);
}

/*
 * Timer in RTS: as initiator, repeat the RTR if the peer has sent
 * nothing yet; as responder, stop waiting for the initiator's first
 * FPDU.
 */
static void kiwi_ep_nudge(struct kiwi_ep *ep)
{
	struct kiwi_qp *qp = ep->qp;
	struct tcp_sock *tp;

	lockdep_assert_held(&ep->lock);
	if (!ep->initiator) {
		kiwi_ep_hold_over(ep);
		return;
	}
	if (!qp || !ep->sock || ep->rtr != KIWI_MPA_RTR_WRITE)
		return;
	tp = tcp_sk(ep->sock->sk);
	if (READ_ONCE(tp->bytes_received) != ep->rtr_rx_mark ||
	    READ_ONCE(tp->write_seq) - ep->rtr_tx_mark >
	    KIWI_RTR_MAX * (ep->rtr_nudges + 1))
		return;
	mutex_lock(&qp->state_lock);
	if (kiwi_qp_state(qp) == KIWI_QP_RTS &&
	    !READ_ONCE(qp->tx.term_pending)) {
		WRITE_ONCE(qp->tx.rtr_pending, KIWI_MPA_RTR_WRITE);
		kiwi_tx_kick(qp);
	}
	mutex_unlock(&qp->state_lock);
	kiwi_ep_event(ep, "rtr_repeat", ep->rtr_nudges);
	ep->rtr_nudges++;
	kiwi_ep_nudge_arm(ep);
}

int kiwi_ep_go_rts(struct kiwi_ep *ep, u8 send_rtr)
{
	struct sock *sk = ep->sock->sk;
	int rv;

	lockdep_assert_held(&ep->lock);	/* ep->lock, then the QP's */
	if (kiwi_ep_step(ep, KIWI_EPE_RTS_REACHED) < 0)
		return -EINVAL;
	kiwi_ep_cancel_timer(ep);
	ep->qp->ird = max_t(u16, ep->ird, 1);
	ep->qp->ord = max_t(u16, ep->ord, 1);
	ep->qp->rtr = ep->rtr;	/* either side: "rdma res show qp -dd" */
	rv = kiwi_qp_connected(ep->qp, ep, ep->sock, ep->crc, ep->large,
			       (ep->mk_tx ? KIWI_MK_F_TX : 0) |
			       (ep->mk_rx ? KIWI_MK_F_RX : 0),
			       send_rtr, !ep->initiator);
	if (rv)
		return rv;
	kiwi_ep_dbg(ep, "MPA rev %u agreed: CRC %d, markers to peer %d from peer %d, large FPDUs %d, IRD %u ORD %u, RTR %#x\n",
		    ep->mpa.rev, ep->crc, ep->mk_tx, ep->mk_rx, ep->large,
		    ep->qp->ird, ep->qp->ord, ep->rtr);

	/* Hand data delivery to the QP's receive path. */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = kiwi_rx_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	kiwi_ep_next(ep, KIWI_EPE_RTS_REACHED);
	kiwi_half_open_put(ep);
	kiwi_sock_unclamp(ep);
	if (send_rtr == KIWI_MPA_RTR_WRITE) {
		ep->rtr_rx_mark = READ_ONCE(tcp_sk(sk)->bytes_received);
		ep->rtr_tx_mark = READ_ONCE(tcp_sk(sk)->write_seq);
		kiwi_ep_nudge_arm(ep);
	} else if (!ep->initiator && !ep->rtr) {
		unsigned int ms = READ_ONCE(kiwi_first_fpdu_ms);

		if (ms)
			kiwi_ep_arm_timer_ms(ep, ms);
	}
	kiwi_ep_event(ep, "established", 0);
	kiwi_stat_add(ep->kdev, KIWI_STAT_CM_ESTABLISHED, 1);

	/* Bytes that arrived right behind the MPA frame are waiting. */
	lock_sock(sk);
	kiwi_rx_data_ready(sk);
	release_sock(sk);
	/*
	 * So may the peer's FIN or RST: if it came before RTS -- even in
	 * the same work run as the MPA frame -- no state change is left
	 * to tell us, and the connection would stay up, half-closed,
	 * until the consumer destroyed the QP.  One that comes from now on
	 * raises its own event.
	 */
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
	return 0;
}

/*
 * Event @ev ends an established connection (a row with DISCONNECT,
 * actions @act): unbind the QP, tell the consumer the connection is
 * gone (@status), release the socket -- with a RST if the row says so,
 * else with a FIN -- and only then leave RTS or CLOSING: until the
 * socket is released the receive path finds the QP through the state.
 */
static void kiwi_ep_close(struct kiwi_ep *ep, enum kiwi_ep_event ev, int act,
			  int status)
{
	struct kiwi_qp *qp = ep->qp;
	bool reset = act & KIWI_EPA_RST;

	kiwi_ep_event(ep, reset ? "abort" : "close", status);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	/* A FIN ends the stream after the peer's last message: place it. */
	if (qp && (act & KIWI_EPA_DRAIN) && ep->sock)
		kiwi_rx_drain(qp, ep->sock->sk);
	if (qp)
		kiwi_qp_disconnected(qp);
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, reset);
	if (qp) {
		/* No receive callback can run any more. */
		kiwi_rx_release(qp);
		kiwi_qp_unbind(qp);
		ep->qp = NULL;
		kiwi_qp_put(&qp->ibqp);
	}
	if (ep->cm_id && (act & KIWI_EPA_DISCONNECT)) {
		if (!ep->disconnected)
			kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_DISCONNECT,
				    status, NULL, 0);
		kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CLOSE, 0, NULL, 0);
	}
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

/* ---- active side ---- */

/*
 * Event @ev ends an active connect (a row with FAIL_CONNECT, actions
 * @act): the iw_cm hears CONNECT_REPLY with @status (and a reject's
 * private data @pd), the QP's reference goes, the socket is reset.
 */
static void kiwi_active_fail(struct kiwi_ep *ep, enum kiwi_ep_event ev,
			     int act, int status, const void *pd, u32 pd_len)
{
	kiwi_ep_event(ep, "connect_failed", status);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	if (ep->cm_id)
		kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CONNECT_REPLY, status,
			    pd, pd_len);
	if (ep->qp) {
		kiwi_qp_put(&ep->qp->ibqp);
		ep->qp = NULL;
	}
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, act & KIWI_EPA_RST);
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

static void kiwi_active_connected(struct kiwi_ep *ep)
{
	const void *pd = ep->mpa_buf + sizeof(struct kiwi_mpa_rr);
	int rv;

	kiwi_ep_next(ep, KIWI_EPE_TCP_CONNECTED);
	kiwi_sock_clamp(ep);
	kiwi_ep_event(ep, "mpa_request_sent", 0);
	/* The request was staged in mpa_buf by kiwi_connect(). */
	rv = kiwi_mpa_send(ep, true, kiwi_mpa_flags(ep), pd, ep->mpa_got);
	ep->mpa_got = 0;
	if (rv)
		kiwi_ep_do(ep, KIWI_EPE_MPA_SEND_FAILED, rv, NULL, 0);
}

static void kiwi_active_reply(struct kiwi_ep *ep)
{
	struct kiwi_mpa_info *m = &ep->mpa;
	int rv = kiwi_mpa_recv(ep, false);

	if (!rv)
		return;
	if (rv < 0) {
		kiwi_ep_do(ep, KIWI_EPE_MPA_REPLY_BAD,
			   rv == -EPROTO ? -ECONNREFUSED : rv, NULL, 0);
		return;
	}
	if (m->reject) {
		kiwi_ep_event(ep, "mpa_rejected", -ECONNREFUSED);
		kiwi_stat_add(ep->kdev, KIWI_STAT_MPA_REJECT_RX, 1);
		kiwi_ep_do(ep, KIWI_EPE_MPA_REJECTED, -ECONNREFUSED,
			   kiwi_mpa_ulp_pd(ep), m->ulp_pd_len);
		return;
	}
	/* Either side asking for CRC makes both use it (RFC 5044 7.1). */
	ep->crc = ep->crc || m->crc;
	ep->large = ep->large && m->large;
	/* The responder's M asks us, the initiator, for markers. */
	ep->mk_tx = m->markers;
	if (m->enhanced) {
		ep->ord = min_t(u16, ep->ord, m->ird);
		ep->ird = min_t(u16, ep->ird, KIWI_MAX_IRD);
		/*
		 * Exactly one RTR kind must have been chosen, and one we
		 * offered: peer-to-peer only if we asked for it.
		 */
		if (m->p2p && (hweight16(m->rtr) != 1 || !(m->rtr & ep->rtr))) {
			kiwi_ep_dbg(ep, "MPA reply refused: RTR %#x chosen, %#x offered\n",
				    m->rtr, ep->rtr);
			kiwi_ep_do(ep, KIWI_EPE_MPA_REPLY_BAD, -ECONNREFUSED,
				   NULL, 0);
			return;
		}
		ep->rtr = m->p2p ? m->rtr : 0;
	} else {
		/*
		 * A revision 1 reply (or one without RFC 6581 data) knows
		 * no RTR: ep->rtr still holds every kind we offered, which
		 * would send the peer an unsolicited zero-length WRITE.
		 */
		ep->rtr = 0;
	}
	rv = kiwi_ep_go_rts(ep, ep->rtr);
	if (rv) {
		kiwi_ep_do(ep, KIWI_EPE_QP_REFUSED, rv, NULL, 0);
		return;
	}
	kiwi_upcall(ep, ep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
		    kiwi_mpa_ulp_pd(ep), m->ulp_pd_len);
}

/* ---- passive side ---- */

static int kiwi_req_publish(struct kiwi_ep *ep)
{
	kiwi_ep_get(ep);
	if (xa_alloc_cyclic(&kiwi_req_xa, &ep->req_id, ep, xa_limit_31b,
			    &kiwi_req_next, GFP_KERNEL) < 0) {
		kiwi_ep_put(ep);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Under ep->lock: end the iw_cm's hold; false if accept or reject has
 * taken it (and then waits for ep->lock to finish the request).
 */
static bool kiwi_req_drop(struct kiwi_ep *ep)
{
	u32 id = ep->req_id;

	lockdep_assert_held(&ep->lock);
	ep->req_id = 0;
	if (!id || xa_erase(&kiwi_req_xa, id) != ep)
		return false;
	kiwi_ep_put(ep);	/* the caller holds its own */
	return true;
}

/* Accept or reject for @id's request: its endpoint, referenced, or NULL. */
struct kiwi_ep *kiwi_req_take(struct iw_cm_id *id)
{
	unsigned long cookie = (uintptr_t)id->provider_data;

	id->provider_data = NULL;
	return cookie ? xa_erase(&kiwi_req_xa, cookie) : NULL;
}

static int kiwi_req_upcall(struct kiwi_ep *ep, struct kiwi_ep *l)
{
	unsigned int drop = READ_ONCE(kiwi_fault_drop_req);

	if (drop && cmpxchg(&kiwi_fault_drop_req, drop, drop - 1) == drop) {
		kiwi_ep_event(ep, "fault_drop_conn_req", 0);
		return 0;	/* as the iw_cm does: no error, no answer */
	}
	return kiwi_upcall(ep, l->cm_id, IW_CM_EVENT_CONNECT_REQUEST, 0,
			   kiwi_mpa_ulp_pd(ep), ep->mpa.ulp_pd_len);
}

static void kiwi_passive_request(struct kiwi_ep *ep)
{
	struct kiwi_ep *l = ep->listener;
	int rv = kiwi_mpa_recv(ep, true);

	if (!ep->got_first && ep->mpa_got) {
		/* Talking: the MPA timeout for the rest of the request. */
		ep->got_first = true;
		if (rv == 0 && READ_ONCE(kiwi_first_byte_ms))
			kiwi_ep_arm_timer(ep);
	}
	if (!rv)
		return;
	kiwi_ep_event(ep, rv < 0 ? "mpa_request_bad" : "mpa_request", rv);
	if (rv < 0) {
		kiwi_ep_do(ep, KIWI_EPE_MPA_REQUEST_BAD, rv, NULL, 0);
		return;
	}

	kiwi_ep_cancel_timer(ep);
	ep->crc = ep->mpa.crc || READ_ONCE(kiwi_crc_default);
	ep->large = ep->mpa.large && READ_ONCE(kiwi_large_fpdu);
	/* The initiator's M asks us for markers; ours asks it. */
	ep->mk_tx = ep->mpa.markers;
	ep->mk_rx = kiwi_mk_request(false);
	ep->ird = ep->mpa.enhanced ? ep->mpa.ird : KIWI_MAX_IRD;
	ep->ord = ep->mpa.enhanced ? ep->mpa.ord : KIWI_MAX_ORD;
	kiwi_ep_next(ep, KIWI_EPE_MPA_REQUEST);

	/*
	 * Lock order: a connection's lock, then its listener's.  Only
	 * kiwi_listen_accept() takes a child's under its listener's, for a
	 * child that nothing else can lock yet but kiwi_cm_dev_close(),
	 * which takes no listener's (see there).
	 */
	mutex_lock_nested(&l->lock, SINGLE_DEPTH_NESTING);
	if (l->state != KIWI_EP_LISTEN || !l->cm_id) {
		mutex_unlock(&l->lock);
		goto drop;
	}
	/* The iw_cm's reference to us lasts until accept or reject. */
	rv = kiwi_req_publish(ep);
	if (!rv)
		rv = kiwi_req_upcall(ep, l);
	mutex_unlock(&l->lock);
	if (rv)
		goto drop;
	if (READ_ONCE(kiwi_req_timeout_ms))
		kiwi_ep_arm_timer_ms(ep, READ_ONCE(kiwi_req_timeout_ms));
	return;
drop:
	/* The listener is gone or the iw_cm refused: end our hold, reset. */
	kiwi_ep_do(ep, KIWI_EPE_REQUEST_UNDELIVERED, rv, NULL, 0);
}

/*
 * An accepted socket is a clone of the listener and has kiwi's callbacks
 * with it: give it the listener's own (TCP's) first, so that those, not
 * ours, are what kiwi_sk_assoc() saves and kiwi_sk_release() restores.
 */
static void kiwi_sk_defaults(struct kiwi_ep *l, struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = l->saved_data_ready;
	sk->sk_state_change = l->saved_state_change;
	sk->sk_write_space = l->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* A new passive connection's timer: first_byte_ms, then the rest. */
static void kiwi_ep_arm_first_byte(struct kiwi_ep *ep)
{
	unsigned int fb = READ_ONCE(kiwi_first_byte_ms);

	if (fb && fb < READ_ONCE(kiwi_mpa_timeout_ms))
		kiwi_ep_arm_timer_ms(ep, fb);
	else
		kiwi_ep_arm_timer(ep);
}

static void kiwi_listen_accept(struct kiwi_ep *l)
{
	struct sockaddr_storage peer;
	struct socket *ns;
	struct kiwi_ep *ep;

	while (l->state == KIWI_EP_LISTEN &&
	       !kernel_accept(l->sock, &ns, O_NONBLOCK)) {
		memset(&peer, 0, sizeof(peer));
		kernel_getpeername(ns, (struct sockaddr *)&peer);
		if (!kiwi_half_open_get(l, &peer)) {
			kiwi_stat_add(l->kdev, KIWI_STAT_CM_HALF_OPEN_REFUSED, 1);
			kiwi_ep_event(l, "half_open_refused", -EBUSY);
			sock_no_linger(ns->sk);		/* RST */
			sock_release(ns);
			continue;
		}
		ep = kiwi_ep_alloc(l->kdev);
		if (!ep) {
			atomic_dec(&l->children);
			atomic_dec(&l->kdev->half_open);
			sock_release(ns);
			continue;
		}
		tcp_sock_set_nodelay(ns->sk);	/* buffers: inherited */
		kiwi_sk_defaults(l, ns->sk);
		ep->remote = peer;
		kernel_getsockname(ns, (struct sockaddr *)&ep->local);
		/*
		 * The child's lock under its listener's, against the order
		 * kiwi_passive_request() keeps: safe while the child is
		 * new -- its work is not queued and no socket callback
		 * reaches it before kiwi_sk_assoc(); the one other taker,
		 * kiwi_cm_dev_close(), takes no listener's lock.
		 */
		mutex_lock_nested(&ep->lock, SINGLE_DEPTH_NESTING);
		if (kiwi_ep_next(ep, KIWI_EPE_TCP_ACCEPTED) < 0) {
			/* The device's removal closed it first. */
			mutex_unlock(&ep->lock);
			atomic_dec(&l->children);
			atomic_dec(&l->kdev->half_open);
			sock_release(ns);
			kiwi_ep_put(ep);
			continue;
		}
		kiwi_ep_get(l);
		ep->listener = l;
		WRITE_ONCE(ep->half_open, true);
		kiwi_sk_assoc(ep, ns);
		kiwi_sock_clamp(ep);
		kiwi_ep_arm_first_byte(ep);
		kiwi_ep_kick(ep, KIWI_EV_SOCK);
		mutex_unlock(&ep->lock);
		kiwi_ep_put(ep);	/* queued work and timer hold it */
	}
}

/* ---- the endpoint state machine ---- */

static void kiwi_ep_on_sock(struct kiwi_ep *ep)
{
	struct sock *sk = ep->sock ? ep->sock->sk : NULL;

	if (!sk)
		return;
	switch (ep->state) {
	case KIWI_EP_LISTEN:
		kiwi_listen_accept(ep);
		break;
	case KIWI_EP_CONNECTING:
		if (sk->sk_state == TCP_ESTABLISHED)
			kiwi_active_connected(ep);
		else if (sk->sk_state == TCP_CLOSE)
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET,
				   sock_error(sk) ?: -ECONNREFUSED, NULL, 0);
		break;
	case KIWI_EP_AWAIT_REP:
		kiwi_active_reply(ep);
		break;
	case KIWI_EP_AWAIT_REQ:
		kiwi_passive_request(ep);
		break;
	case KIWI_EP_RECVD_REQ:
		if (sk->sk_state != TCP_ESTABLISHED)	/* accept will fail */
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET, 0, NULL, 0);
		break;
	case KIWI_EP_RTS:
		if (sk->sk_state == TCP_CLOSE_WAIT)
			kiwi_ep_do(ep, KIWI_EPE_PEER_FIN, 0, NULL, 0);
		else if (sk->sk_state != TCP_ESTABLISHED)	/* reset, timeout */
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET,
				   sock_error(sk) ?: -ECONNRESET, NULL, 0);
		break;
	case KIWI_EP_CLOSING:
		/* Our FIN is out; done once the peer's arrived. */
		if (sk->sk_state == TCP_CLOSE)
			kiwi_ep_do(ep, KIWI_EPE_SOCK_RESET, 0, NULL, 0);
		else if (sk->sk_shutdown & RCV_SHUTDOWN ||
			 sk->sk_state == TCP_TIME_WAIT)
			kiwi_ep_do(ep, KIWI_EPE_PEER_FIN, 0, NULL, 0);
		break;
	default:
		break;
	}
}

/*
 * Event @ev for @ep, as its row of the table asks, the state written
 * last: a failed active connect (FAIL_CONNECT: @status, a reject's
 * private data @pd), an established connection's end (DISCONNECT), or
 * the row's own list -- a repeat of the RTR, our FIN, the iw_cm's hold
 * on a request ended, the consumer's reject (@pd) sent, the socket
 * released.  A refused event is counted and changes nothing; an
 * ignored one does nothing.  Under ep->lock.
 */
void kiwi_ep_do(struct kiwi_ep *ep, enum kiwi_ep_event ev, int status,
		const void *pd, u32 pd_len)
{
	int act = kiwi_ep_step(ep, ev);

	if (act <= 0)
		return;
	if (act & KIWI_EPA_TIMED_OUT) {
		kiwi_ep_event(ep, "timeout", -ETIMEDOUT);
		kiwi_stat_add(ep->kdev, KIWI_STAT_CM_TIMEOUT, 1);
	}
	if (act & KIWI_EPA_NUDGE)
		kiwi_ep_nudge(ep);
	if (act & KIWI_EPA_SHUT_WR) {
		/* Graceful: FIN now, wait (bounded) for the peer's FIN. */
		ep->disconnected = true;
		kernel_sock_shutdown(ep->sock, SHUT_WR);
		kiwi_ep_arm_timer(ep);
	}
	if (act & KIWI_EPA_FAIL_CONNECT) {
		kiwi_active_fail(ep, ev, act, status, pd, pd_len);
		return;
	}
	if (act & KIWI_EPA_DISCONNECT) {
		kiwi_ep_close(ep, ev, act, status);
		return;
	}
	if ((act & KIWI_EPA_TAKE_REQ) && !kiwi_req_drop(ep))
		return;		/* accept or reject has it: theirs to end */
	if (act & KIWI_EPA_DROP_REQ)
		kiwi_req_drop(ep);
	if (act & KIWI_EPA_STOP_TIMER)
		kiwi_ep_cancel_timer(ep);
	if ((act & KIWI_EPA_SEND_REJECT) && ep->sock) {
		kiwi_ep_event(ep, "reject", 0);
		kiwi_mpa_send(ep, false, KIWI_MPA_FLAG_R, pd, pd_len);
		kiwi_stat_add(ep->kdev, KIWI_STAT_MPA_REJECT_TX, 1);
	}
	if (act & KIWI_EPA_RELEASE)
		kiwi_sk_release(ep, act & KIWI_EPA_RST);
	if (act & KIWI_EPA_DROP_ID)
		kiwi_cm_id_drop(ep);
	kiwi_ep_next(ep, ev);
}

/*
 * The endpoint's timer: a connect fails with ETIMEDOUT; a close that
 * timed out reports 0 (the consumer asked for it, and heard at SQD).
 */
static void kiwi_ep_on_timeout(struct kiwi_ep *ep)
{
	int act = kiwi_epfsm(ep->state, KIWI_EPE_TIMEOUT).act;

	/*
	 * The timer fired for a deadline since replaced (an RTS timer
	 * just before a close armed its own): the new one is pending.
	 */
	if (time_before(jiffies, READ_ONCE(ep->timer_due)))
		return;
	kiwi_ep_dbg(ep, "timer expired in %s\n", kiwi_ep_state_name(ep->state));
	kiwi_ep_do(ep, KIWI_EPE_TIMEOUT,
		   act & KIWI_EPA_FAIL_CONNECT ? -ETIMEDOUT : 0, NULL, 0);
}

static void kiwi_ep_work(struct work_struct *work)
{
	struct kiwi_ep *ep = container_of(work, struct kiwi_ep, work);

	mutex_lock(&ep->lock);
	/*
	 * The QP left RTS for ERROR or TERMINATE.  The connection ends at
	 * once for the consumer, but its socket is closed with a FIN, not
	 * a RST: kiwi completes a send as soon as TCP has the bytes, so a
	 * reset could still discard a message (or the TERMINATE) already
	 * reported sent.  TCP delivers what it holds, then lets the orphan
	 * go (bounded by its own retry and FIN-WAIT limits); if the peer's
	 * data is left unread, tcp_close() resets anyway.
	 */
	if (test_and_clear_bit(KIWI_EV_ABORT, &ep->events))
		kiwi_ep_do(ep, KIWI_EPE_LOCAL_ABORT, -ECONNABORTED, NULL, 0);
	if (test_and_clear_bit(KIWI_EV_CLOSE, &ep->events))
		kiwi_ep_do(ep, KIWI_EPE_LOCAL_CLOSE, 0, NULL, 0);
	if (test_and_clear_bit(KIWI_EV_SOCK, &ep->events))
		kiwi_ep_on_sock(ep);
	if (test_and_clear_bit(KIWI_EV_TIMEOUT, &ep->events))
		kiwi_ep_on_timeout(ep);
	mutex_unlock(&ep->lock);
	kiwi_ep_put(ep);
}

/*
 * Called by the QP when it leaves RTS: to SQD (graceful) or to ERROR /
 * TERMINATE (abort).  Runs with the QP state lock held: defer.
 */
void kiwi_cm_qp_closing(struct kiwi_qp *qp, bool abort)
{
	struct kiwi_ep *ep = qp->ep;

	if (ep)
		kiwi_ep_kick(ep, abort ? KIWI_EV_ABORT : KIWI_EV_CLOSE);
}

/* For the receive path, under sk_callback_lock: the bound QP. */
struct kiwi_qp *kiwi_cm_ep_qp(struct kiwi_ep *ep)
{
	return ep->state == KIWI_EP_RTS || ep->state == KIWI_EP_CLOSING ?
	       ep->qp : NULL;
}

/*
 * Under ep->lock: end whatever the endpoint is doing, at once (every
 * state but CLOSED goes to CLOSED on DEVICE_GONE).  A connect fails
 * with ENODEV, a connection is aborted.
 */
static void kiwi_ep_shut(struct kiwi_ep *ep)
{
	int act = kiwi_epfsm(ep->state, KIWI_EPE_DEVICE_GONE).act;

	kiwi_ep_do(ep, KIWI_EPE_DEVICE_GONE,
		   act & KIWI_EPA_FAIL_CONNECT ? -ENODEV : -ECONNABORTED,
		   NULL, 0);
}

/* An endpoint of @kdev (any, if NULL) not yet closed, referenced. */
static struct kiwi_ep *kiwi_ep_find_open(struct kiwi_device *kdev)
{
	struct kiwi_ep *ep, *found = NULL;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		if ((kdev && ep->kdev != kdev) ||
		    READ_ONCE(ep->state) == KIWI_EP_CLOSED)
			continue;
		if (kref_get_unless_zero(&ep->ref)) {
			found = ep;
			break;
		}
	}
	spin_unlock(&kiwi_ep_list_lock);
	return found;
}

/*
 * @kdev is going away; its iw_cm ids are gone already.  Close every
 * endpoint still on it -- half-open connections, requests never
 * answered -- so that none uses the device or its sockets again.
 */
void kiwi_cm_dev_close(struct kiwi_device *kdev)
{
	struct kiwi_ep *ep;

	while ((ep = kiwi_ep_find_open(kdev))) {
		mutex_lock(&ep->lock);
		kiwi_ep_shut(ep);	/* CLOSED already: ignored */
		mutex_unlock(&ep->lock);
		kiwi_ep_put(ep);
	}
}

int kiwi_cm_init(void)
{
	kiwi_cm_wq = alloc_workqueue("kiwi_cm", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return kiwi_cm_wq ? 0 : -ENOMEM;
}

/* An endpoint whose timer is pending, referenced; NULL if none. */
static struct kiwi_ep *kiwi_ep_find_timer(void)
{
	struct kiwi_ep *ep, *found = NULL;

	spin_lock(&kiwi_ep_list_lock);
	list_for_each_entry(ep, &kiwi_ep_list, entry) {
		if (delayed_work_pending(&ep->timer) &&
		    kref_get_unless_zero(&ep->ref)) {
			found = ep;
			break;
		}
	}
	spin_unlock(&kiwi_ep_list_lock);
	return found;
}

/*
 * Module unload, every device gone: close what is left, take back the
 * timers that have not fired (a pending timer would queue work on a
 * workqueue that no longer exists), run the works still queued (they
 * find their endpoints closed and drop their references), and wait for
 * the last endpoint.  None of our code runs for an endpoint afterwards,
 * and no socket calls us: each was released with its callbacks restored.
 */
void kiwi_cm_exit(void)
{
	struct kiwi_ep *ep;

	kiwi_cm_dev_close(NULL);
	while ((ep = kiwi_ep_find_timer())) {
		if (cancel_delayed_work(&ep->timer))
			kiwi_ep_put(ep);	/* the timer's */
		kiwi_ep_put(ep);
	}
	destroy_workqueue(kiwi_cm_wq);
	xa_destroy(&kiwi_req_xa);
	if (!wait_event_timeout(kiwi_ep_freed, !atomic_read(&kiwi_ep_live),
				10 * HZ))
		WARN(1, "kiwi: %d connection endpoint(s) leaked\n",
		     atomic_read(&kiwi_ep_live));
}
