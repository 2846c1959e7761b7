// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: an endpoint's state and what it reports -- the one writer of
 * the state, kiwi_ep_next(), driven by the table of
 * include/kiwi/epfsm.h (a refused event counted and traced); the
 * kiwi_cm tracepoint and debug line of each connection management
 * event; the iw_cm id an endpoint holds and the upcalls through it.
 * Called by the CM's other files; calls none of them (its debug lines
 * read mpa.c's kiwi_no_addr, through kiwi_ep_dbg()).
 */
#include <linux/net.h>

#include "cm.h"
#include "trace.h"

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
int kiwi_ep_step(struct kiwi_ep *ep, enum kiwi_ep_event ev)
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
