/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi: tracepoints, under events/kiwi/ in tracefs.  A connection's life
 * -- connect, MPA exchange, established, disconnect, TERMINATE, endpoint
 * and QP state changes -- can be followed with
 *
 *	trace-cmd record -e kiwi ...
 *	perf trace -e 'kiwi:*' ...
 *
 * or by writing 1 to /sys/kernel/tracing/events/kiwi/enable and reading
 * /sys/kernel/tracing/trace.  See Documentation/kiwi.rst, "Tracing".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kiwi

/* __assign_str() lost its source argument in Linux 6.10. */
#ifndef kiwi_assign_str
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define kiwi_assign_str(dst, src)	__assign_str(dst)
#else
#define kiwi_assign_str(dst, src)	__assign_str(dst, src)
#endif
#endif

#if !defined(KIWI_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KIWI_TRACE_H

#include <linux/socket.h>
#include <linux/tracepoint.h>
#include <kiwi/epfsm.h>
#include <kiwi/qpfsm.h>

/* Enum names for tools that read the format file (trace-cmd, perf). */
TRACE_DEFINE_ENUM(KIWI_QP_IDLE);
TRACE_DEFINE_ENUM(KIWI_QP_RTS);
TRACE_DEFINE_ENUM(KIWI_QP_CLOSING);
TRACE_DEFINE_ENUM(KIWI_QP_TERMINATE);
TRACE_DEFINE_ENUM(KIWI_QP_ERROR);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_RESET);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_INIT);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_RTR);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_RTS);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_SQD);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_SQE);
TRACE_DEFINE_ENUM(KIWI_QPE_MODIFY_ERR);
TRACE_DEFINE_ENUM(KIWI_QPE_CONNECTED);
TRACE_DEFINE_ENUM(KIWI_QPE_DISCONNECTED);
TRACE_DEFINE_ENUM(KIWI_QPE_LOCAL_ERROR);
TRACE_DEFINE_ENUM(KIWI_QPE_LLP_ERROR);
TRACE_DEFINE_ENUM(KIWI_QPE_TERMINATE_RECEIVED);

#define kiwi_show_qp_state(s)						\
	__print_symbolic(s, { KIWI_QP_IDLE, "IDLE" },			\
			 { KIWI_QP_RTS, "RTS" },			\
			 { KIWI_QP_CLOSING, "CLOSING" },		\
			 { KIWI_QP_TERMINATE, "TERMINATE" },		\
			 { KIWI_QP_ERROR, "ERROR" })

/* The events of include/kiwi/qpfsm.h, by the names it gives them. */
#define kiwi_show_qp_event(e)						\
	__print_symbolic(e, { KIWI_QPE_MODIFY_RESET, "MODIFY_RESET" },	\
			 { KIWI_QPE_MODIFY_INIT, "MODIFY_INIT" },	\
			 { KIWI_QPE_MODIFY_RTR, "MODIFY_RTR" },		\
			 { KIWI_QPE_MODIFY_RTS, "MODIFY_RTS" },		\
			 { KIWI_QPE_MODIFY_SQD, "MODIFY_SQD" },		\
			 { KIWI_QPE_MODIFY_SQE, "MODIFY_SQE" },		\
			 { KIWI_QPE_MODIFY_ERR, "MODIFY_ERR" },		\
			 { KIWI_QPE_CONNECTED, "CONNECTED" },		\
			 { KIWI_QPE_DISCONNECTED, "DISCONNECTED" },	\
			 { KIWI_QPE_LOCAL_ERROR, "LOCAL_ERROR" },	\
			 { KIWI_QPE_LLP_ERROR, "LLP_ERROR" },		\
			 { KIWI_QPE_TERMINATE_RECEIVED, "TERMINATE_RECEIVED" })

/*
 * A QP's iWARP state changed (RDMAC verbs states, as rings.rst has them)
 * on an event of the state machine (include/kiwi/qpfsm.h).
 */
TRACE_EVENT(kiwi_qp_state,
	TP_PROTO(const char *dev, u32 qpn, int from, int to, int event),
	TP_ARGS(dev, qpn, from, to, event),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, qpn)
		__field(int, from)
		__field(int, to)
		__field(int, event)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev);
		__entry->qpn = qpn;
		__entry->from = from;
		__entry->to = to;
		__entry->event = event;
	),
	TP_printk("%s qp %u %s -> %s on %s", __get_str(dev), __entry->qpn,
		  kiwi_show_qp_state(__entry->from),
		  kiwi_show_qp_state(__entry->to),
		  kiwi_show_qp_event(__entry->event))
);

/* Likewise for the endpoint's (include/kiwi/epfsm.h). */
TRACE_DEFINE_ENUM(KIWI_EP_IDLE);
TRACE_DEFINE_ENUM(KIWI_EP_LISTEN);
TRACE_DEFINE_ENUM(KIWI_EP_CONNECTING);
TRACE_DEFINE_ENUM(KIWI_EP_AWAIT_REP);
TRACE_DEFINE_ENUM(KIWI_EP_AWAIT_REQ);
TRACE_DEFINE_ENUM(KIWI_EP_RECVD_REQ);
TRACE_DEFINE_ENUM(KIWI_EP_RTS);
TRACE_DEFINE_ENUM(KIWI_EP_CLOSING);
TRACE_DEFINE_ENUM(KIWI_EP_CLOSED);
TRACE_DEFINE_ENUM(KIWI_EPE_LISTEN);
TRACE_DEFINE_ENUM(KIWI_EPE_LISTENER_DESTROYED);
TRACE_DEFINE_ENUM(KIWI_EPE_CONNECT);
TRACE_DEFINE_ENUM(KIWI_EPE_CONNECT_ERROR);
TRACE_DEFINE_ENUM(KIWI_EPE_ACCEPT_FAILED);
TRACE_DEFINE_ENUM(KIWI_EPE_REJECT);
TRACE_DEFINE_ENUM(KIWI_EPE_TCP_ACCEPTED);
TRACE_DEFINE_ENUM(KIWI_EPE_TCP_CONNECTED);
TRACE_DEFINE_ENUM(KIWI_EPE_PEER_FIN);
TRACE_DEFINE_ENUM(KIWI_EPE_SOCK_RESET);
TRACE_DEFINE_ENUM(KIWI_EPE_MPA_SEND_FAILED);
TRACE_DEFINE_ENUM(KIWI_EPE_MPA_REQUEST);
TRACE_DEFINE_ENUM(KIWI_EPE_MPA_REQUEST_BAD);
TRACE_DEFINE_ENUM(KIWI_EPE_REQUEST_UNDELIVERED);
TRACE_DEFINE_ENUM(KIWI_EPE_MPA_REPLY_BAD);
TRACE_DEFINE_ENUM(KIWI_EPE_MPA_REJECTED);
TRACE_DEFINE_ENUM(KIWI_EPE_QP_REFUSED);
TRACE_DEFINE_ENUM(KIWI_EPE_RTS_REACHED);
TRACE_DEFINE_ENUM(KIWI_EPE_LOCAL_CLOSE);
TRACE_DEFINE_ENUM(KIWI_EPE_LOCAL_ABORT);
TRACE_DEFINE_ENUM(KIWI_EPE_TIMEOUT);
TRACE_DEFINE_ENUM(KIWI_EPE_DEVICE_GONE);

/* The states and events of include/kiwi/epfsm.h, by its names. */
#define kiwi_show_ep_state(s)						\
	__print_symbolic(s, { KIWI_EP_IDLE, "IDLE" },			\
			 { KIWI_EP_LISTEN, "LISTEN" },			\
			 { KIWI_EP_CONNECTING, "CONNECTING" },		\
			 { KIWI_EP_AWAIT_REP, "AWAIT_REP" },		\
			 { KIWI_EP_AWAIT_REQ, "AWAIT_REQ" },		\
			 { KIWI_EP_RECVD_REQ, "RECVD_REQ" },		\
			 { KIWI_EP_RTS, "RTS" },			\
			 { KIWI_EP_CLOSING, "CLOSING" },		\
			 { KIWI_EP_CLOSED, "CLOSED" })

#define kiwi_show_ep_event(e)						\
	__print_symbolic(e, { KIWI_EPE_LISTEN, "LISTEN" },		\
			 { KIWI_EPE_LISTENER_DESTROYED, "LISTENER_DESTROYED" }, \
			 { KIWI_EPE_CONNECT, "CONNECT" },		\
			 { KIWI_EPE_CONNECT_ERROR, "CONNECT_ERROR" },	\
			 { KIWI_EPE_ACCEPT_FAILED, "ACCEPT_FAILED" },	\
			 { KIWI_EPE_REJECT, "REJECT" },			\
			 { KIWI_EPE_TCP_ACCEPTED, "TCP_ACCEPTED" },	\
			 { KIWI_EPE_TCP_CONNECTED, "TCP_CONNECTED" },	\
			 { KIWI_EPE_PEER_FIN, "PEER_FIN" },		\
			 { KIWI_EPE_SOCK_RESET, "SOCK_RESET" },		\
			 { KIWI_EPE_MPA_SEND_FAILED, "MPA_SEND_FAILED" }, \
			 { KIWI_EPE_MPA_REQUEST, "MPA_REQUEST" },	\
			 { KIWI_EPE_MPA_REQUEST_BAD, "MPA_REQUEST_BAD" }, \
			 { KIWI_EPE_REQUEST_UNDELIVERED, "REQUEST_UNDELIVERED" }, \
			 { KIWI_EPE_MPA_REPLY_BAD, "MPA_REPLY_BAD" },	\
			 { KIWI_EPE_MPA_REJECTED, "MPA_REJECTED" },	\
			 { KIWI_EPE_QP_REFUSED, "QP_REFUSED" },		\
			 { KIWI_EPE_RTS_REACHED, "RTS_REACHED" },	\
			 { KIWI_EPE_LOCAL_CLOSE, "LOCAL_CLOSE" },	\
			 { KIWI_EPE_LOCAL_ABORT, "LOCAL_ABORT" },	\
			 { KIWI_EPE_TIMEOUT, "TIMEOUT" },		\
			 { KIWI_EPE_DEVICE_GONE, "DEVICE_GONE" })

/*
 * A connection endpoint's state changed (@ep, a stable id while it
 * lives, as kiwi_cm shows it; @qpn its QP, 0 if none) on an event of
 * its state machine (include/kiwi/epfsm.h).
 */
TRACE_EVENT(kiwi_ep_state,
	TP_PROTO(const char *dev, const void *ep, u32 qpn, int from, int to,
		 int event),
	TP_ARGS(dev, ep, qpn, from, to, event),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(const void *, ep)
		__field(u32, qpn)
		__field(int, from)
		__field(int, to)
		__field(int, event)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev);
		__entry->ep = ep;
		__entry->qpn = qpn;
		__entry->from = from;
		__entry->to = to;
		__entry->event = event;
	),
	TP_printk("%s ep %p qp %u %s -> %s on %s", __get_str(dev),
		  __entry->ep, __entry->qpn,
		  kiwi_show_ep_state(__entry->from),
		  kiwi_show_ep_state(__entry->to),
		  kiwi_show_ep_event(__entry->event))
);

/*
 * An event the endpoint's state machine refuses in its state (counted
 * in cm_illegal_transitions); the endpoint stays as it is.
 */
TRACE_EVENT(kiwi_ep_refused,
	TP_PROTO(const char *dev, const void *ep, u32 qpn, int state,
		 int event),
	TP_ARGS(dev, ep, qpn, state, event),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(const void *, ep)
		__field(u32, qpn)
		__field(int, state)
		__field(int, event)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev);
		__entry->ep = ep;
		__entry->qpn = qpn;
		__entry->state = state;
		__entry->event = event;
	),
	TP_printk("%s ep %p qp %u %s refused in %s", __get_str(dev),
		  __entry->ep, __entry->qpn,
		  kiwi_show_ep_event(__entry->event),
		  kiwi_show_ep_state(__entry->state))
);

/* A TERMINATE went out (@sent) or came in: RFC 5040 layer/type/code. */
TRACE_EVENT(kiwi_terminate,
	TP_PROTO(const char *dev, u32 qpn, bool sent, u32 ctrl),
	TP_ARGS(dev, qpn, sent, ctrl),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, qpn)
		__field(bool, sent)
		__field(u32, ctrl)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev);
		__entry->qpn = qpn;
		__entry->sent = sent;
		__entry->ctrl = ctrl;
	),
	TP_printk("%s qp %u TERMINATE %s: layer %u type %u code 0x%02x",
		  __get_str(dev), __entry->qpn,
		  __entry->sent ? "sent" : "received",
		  __entry->ctrl >> 28, (__entry->ctrl >> 24) & 0xf,
		  (__entry->ctrl >> 16) & 0xff)
);

/*
 * A connection management event of endpoint @ep (a stable id while it
 * lives) bound to QP @qpn (0: none yet): connect, listen, request,
 * accept, reject, mpa_reject, established, disconnect, close, timeout.
 */
TRACE_EVENT(kiwi_cm,
	TP_PROTO(const char *dev, const void *ep, u32 qpn, const char *what,
		 int status, const struct sockaddr_storage *laddr,
		 const struct sockaddr_storage *raddr),
	TP_ARGS(dev, ep, qpn, what, status, laddr, raddr),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(const void *, ep)
		__field(u32, qpn)
		__string(what, what)
		__field(int, status)
		__array(u8, laddr, sizeof(struct sockaddr_storage))
		__array(u8, raddr, sizeof(struct sockaddr_storage))
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev);
		__entry->ep = ep;
		__entry->qpn = qpn;
		kiwi_assign_str(what, what);
		__entry->status = status;
		memset(__entry->laddr, 0, sizeof(__entry->laddr));
		memset(__entry->raddr, 0, sizeof(__entry->raddr));
		if (laddr)
			memcpy(__entry->laddr, laddr, sizeof(*laddr));
		if (raddr)
			memcpy(__entry->raddr, raddr, sizeof(*raddr));
	),
	TP_printk("%s ep %p qp %u %s status %d %pISpc -> %pISpc",
		  __get_str(dev), __entry->ep, __entry->qpn, __get_str(what),
		  __entry->status, __entry->laddr, __entry->raddr)
);

#endif /* KIWI_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
