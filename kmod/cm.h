/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: what the files of connection management share -- the endpoint
 * (its states and events, and their table, are include/kiwi/epfsm.h's)
 * and the calls between them.  Callers above callees; no file calls one
 * above it:
 *
 *   iwcm.c     the iw_cm provider entry points: connect, accept, reject,
 *              create and destroy a listener
 *   cmwork.c   each endpoint's work: what its socket's events mean in
 *              each state -- accepting on a listener, the passive
 *              side's MPA request, the active side's connect and reply
 *   cm.c       the endpoint core: lifetime, timers, socket callbacks,
 *              half-open quotas, the iw_cm's requests, binding to a QP
 *              at RTS, the table's actions (kiwi_ep_do()), device
 *              removal and module unload
 *   cmstate.c  the state's one writer (kiwi_ep_next()); events traced
 *              and logged; the iw_cm id and the upcalls through it
 *   cmparam.c  the module parameters of connection setup
 *   mpa.c      the MPA request/reply frames (RFC 5044 section 7, RFC 6581)
 *              and the TCP socket under them (creation, tuning, the
 *              receive window clamped until RTS)
 *
 * Not for the rest of the module: kiwi.h has what the QP layer and the
 * data path may call.
 */
#ifndef KIWI_CM_H
#define KIWI_CM_H

#include <rdma/iw_cm.h>
#include <kiwi/epfsm.h>

#include "qp.h"

/* cmparam.c: module parameters of connection setup */
extern unsigned int kiwi_mpa_timeout_ms;
extern bool kiwi_p2p;
extern unsigned int kiwi_first_fpdu_ms;
extern unsigned int kiwi_max_half_open;
extern unsigned int kiwi_req_timeout_ms;
extern unsigned int kiwi_fault_drop_req;
extern unsigned int kiwi_max_half_open_src;
extern unsigned int kiwi_first_byte_ms;
extern bool kiwi_large_fpdu;
extern u16 kiwi_rtr_kinds;
bool kiwi_mk_request(bool initiator);

/* Receive window of a connection until RTS (TCP_WINDOW_CLAMP). */
#define KIWI_SETUP_WINDOW	4096

/*
 * Event bits in ep->events: what the endpoint's work is to look at.  The
 * work turns them into the events of the state machine
 * (include/kiwi/epfsm.h, enum kiwi_ep_event).
 */
enum {
	KIWI_EV_SOCK,			/* data or state change on the socket */
	KIWI_EV_TIMEOUT,
	KIWI_EV_CLOSE,			/* QP going to SQD: graceful close */
	KIWI_EV_ABORT,			/* QP going to ERROR: abort */
};

struct kiwi_ep {
	struct kref ref;
	struct list_head entry;		/* on kiwi_ep_list */
	struct kiwi_device *kdev;
	struct mutex lock;
	enum kiwi_ep_state state;	/* written by kiwi_ep_next() alone */
	struct socket *sock;
	struct iw_cm_id *cm_id;		/* referenced while set */
	struct kiwi_ep *listener;	/* passive: referenced parent */
	struct kiwi_qp *qp;		/* referenced while set */
	struct work_struct work;
	struct delayed_work timer;
	unsigned long events;
	bool initiator;
	bool disconnected;		/* IW_CM_EVENT_DISCONNECT delivered */
	bool half_open;			/* counted in listener and device */
	int setup_clamp;		/* window clamp to restore at RTS, or 0 */
	atomic_t children;		/* listener: half-open connections */
	int max_children;		/* listener: its backlog */

	/* MPA exchange */
	u32 mpa_got;
	struct kiwi_mpa_info mpa;
	u8 mpa_buf[sizeof(struct kiwi_mpa_rr) + KIWI_MPA_MAX_PD];
	u16 ird;
	u16 ord;
	bool crc;
	/* FPDUs beyond one segment: offered, then agreed */
	bool large;
	u16 rtr;			/* RTR message chosen (one bit) */
	bool mk_rx;			/* our frame asks for markers */
	bool mk_tx;			/* the peer's frame asked for them */
	u32 req_id;			/* passive: its kiwi_req_xa cookie */
	/* the peer: connected to (active) or accepted from (passive) */
	struct sockaddr_storage remote;
	struct sockaddr_storage local;	/* ours (for the log) */
	bool got_first;			/* passive: the first MPA byte came */
	u8 rtr_nudges;			/* RTR repeats sent (kiwi_ep_nudge()) */
	unsigned long timer_due;	/* jiffies: the timer's current deadline */
	u64 rtr_rx_mark;		/* bytes received when RTS was reached */
	u32 rtr_tx_mark;		/* and TCP's write_seq then */

	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
};

/* The endpoint's QP number, 0 while none is bound. */
static inline u32 kiwi_ep_qpn(const struct kiwi_ep *ep)
{
	return ep->qp ? ep->qp->ibqp.qp_num : 0;
}

/* An address not (yet) known, for the log: 0.0.0.0:0 (mpa.c). */
extern const struct sockaddr_storage kiwi_no_addr;

static inline const struct sockaddr_storage *
kiwi_log_addr(const struct sockaddr_storage *a)
{
	return a->ss_family ? a : &kiwi_no_addr;
}

/*
 * kiwi_qp_dbg() (kiwi.h) for an endpoint: named by what a user can
 * match with ss(8) and rdma(8) -- our address, the peer's, the QP
 * bound (0: none yet) -- as in "kiwi1: ep 10.91.0.2:7301 ->
 * 10.91.0.1:40952 QP 3: kiwi_accept_locked: ...".
 */
#define kiwi_ep_dbg(ep, fmt, ...)					\
	ibdev_dbg(&(ep)->kdev->ibdev, "ep %pISpc -> %pISpc QP %u: %s: " fmt, \
		  kiwi_log_addr(&(ep)->local), kiwi_log_addr(&(ep)->remote), \
		  kiwi_ep_qpn(ep), __func__, ##__VA_ARGS__)

/* cmwork.c: each endpoint's work */
struct kiwi_ep *kiwi_ep_alloc(struct kiwi_device *kdev);

/* cm.c: the endpoint core */
static inline void kiwi_ep_get(struct kiwi_ep *ep)
{
	kref_get(&ep->ref);
}

struct kiwi_ep *kiwi_ep_new(struct kiwi_device *kdev, work_func_t work);
void kiwi_ep_put(struct kiwi_ep *ep);
void kiwi_ep_do(struct kiwi_ep *ep, enum kiwi_ep_event ev, int status,
		const void *pd, u32 pd_len);
void kiwi_ep_kick(struct kiwi_ep *ep, int event);
void kiwi_ep_arm_timer(struct kiwi_ep *ep);
void kiwi_ep_arm_timer_ms(struct kiwi_ep *ep, unsigned int ms);
void kiwi_ep_cancel_timer(struct kiwi_ep *ep);
void kiwi_sk_assoc(struct kiwi_ep *ep, struct socket *sock);
void kiwi_sk_release(struct kiwi_ep *ep, bool abort);
bool kiwi_half_open_get(struct kiwi_ep *l,
			const struct sockaddr_storage *peer);
int kiwi_ep_go_rts(struct kiwi_ep *ep, u8 send_rtr);
int kiwi_req_publish(struct kiwi_ep *ep);
struct kiwi_ep *kiwi_req_take(struct iw_cm_id *id);

/* cmstate.c: the state's writer, events, the iw_cm id and upcalls */
int kiwi_ep_step(struct kiwi_ep *ep, enum kiwi_ep_event ev);
int kiwi_ep_next(struct kiwi_ep *ep, enum kiwi_ep_event ev);
void kiwi_ep_event(struct kiwi_ep *ep, const char *what, int status);
void kiwi_cm_id_set(struct kiwi_ep *ep, struct iw_cm_id *id);
void kiwi_cm_id_drop(struct kiwi_ep *ep);
int kiwi_upcall(struct kiwi_ep *ep, struct iw_cm_id *id,
		       enum iw_cm_event_type type, int status,
		       const void *pd, u32 pd_len);

/* mpa.c: MPA frames and the TCP socket under them */
u8 kiwi_mpa_flags(const struct kiwi_ep *ep);
int kiwi_mpa_send(struct kiwi_ep *ep, bool req, u8 flags,
			 const void *pd, u16 pd_len);
int kiwi_mpa_recv(struct kiwi_ep *ep, bool req);
const void *kiwi_mpa_ulp_pd(struct kiwi_ep *ep);
void kiwi_sock_clamp(struct kiwi_ep *ep);
void kiwi_sock_unclamp(struct kiwi_ep *ep);
int kiwi_sock_create(struct socket **sock, struct sockaddr *laddr,
			    bool afonly, int ifindex);
int kiwi_active_sock(struct iw_cm_id *id, struct socket **sock);
bool kiwi_addr_any(const struct sockaddr_storage *a);

#endif /* KIWI_CM_H */
