// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_kconnect_test -- a kernel RDMA consumer that calls rdma_connect()
 * from a process's system call, for the abuse test kconnect_process
 * (selftests/guest/abuse.sh; issue 28, audit item I2).
 *
 * Most kernel ULPs connect from kernel threads (workqueues, their own
 * rdma_cm handlers), but the CIFS SMB Direct client connects from
 * mount(2): the caller is a process with an mm, not a kernel thread.
 * kiwi's rule that a connection may bind a QP only for its owner once
 * took every kernel QP bound from such a caller for a stolen one and
 * refused it (rdma_connect() -EINVAL, "QP N not bound to a connection
 * for COMM[PID]: not its owner").  This module is such a consumer: its
 * module_init runs in the process that loads it (modprobe, in that
 * process's network namespace) and there resolves addr:port, creates a
 * PD, a CQ and, with rdma_create_qp(), a QP, then calls rdma_connect()
 * itself and waits for ESTABLISHED or an error.
 *
 * Everything happens inside module_init and is released before it
 * returns: once established it disconnects and waits for DISCONNECTED,
 * then destroys the QP and the id and frees the CQ and the PD.  Init
 * returns 0 whatever happened, so the verdict is read from the read-only
 * parameter "result": "pass: established ..., then disconnected" or
 * "FAIL: ...".  Every wait for a CM event is bounded (STEP_TIMEOUT; at
 * most four of them).
 * A device removed meanwhile (RDMA_CM_EVENT_DEVICE_REMOVAL) ends the
 * current wait with a FAIL, and the teardown that follows releases what
 * the removal waits for.  Nothing is held after init, so unloading is
 * immediate.
 */
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define RESOLVE_MS	5000		/* rdma_cm's own resolution timeout */
#define STEP_TIMEOUT	(20 * HZ)	/* each wait for a CM event */

static char *addr = "10.91.0.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address to connect to, from the loader's network namespace");

static ushort port = 7397;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port to connect to");

static char result[200] = "loading";
module_param_string(result, result, sizeof(result), 0444);
MODULE_PARM_DESC(result, "the verdict: pass: ... or FAIL: ...");

#define EV(e)		BIT(RDMA_CM_EVENT_##e)
/* Events that end any wait: the step failed, or the device is going. */
#define EV_FAILED	(EV(ADDR_ERROR) | EV(ROUTE_ERROR) | \
			 EV(CONNECT_ERROR) | EV(UNREACHABLE) | EV(REJECTED) | \
			 EV(DISCONNECTED) | EV(DEVICE_REMOVAL) | \
			 EV(ADDR_CHANGE))

static struct {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	wait_queue_head_t wq;		/* woken on every CM event */
	spinlock_t lock;		/* the three fields below */
	unsigned long seen;		/* EV() of each event delivered */
	enum rdma_cm_event_type bad;	/* the first of EV_FAILED seen */
	int bad_status;			/* and its status */
	bool decided;			/* result holds a FAIL */
} t;

static __printf(1, 2) void kc_result(const char *fmt, ...)
{
	va_list ap;

	if (t.decided)
		return;
	va_start(ap, fmt);
	vsnprintf(result, sizeof(result), fmt, ap);
	va_end(ap);
	t.decided = !strncmp(result, "FAIL", 4);
}

static unsigned long kc_seen(void)
{
	unsigned long seen;

	spin_lock(&t.lock);
	seen = t.seen;
	spin_unlock(&t.lock);
	return seen;
}

/*
 * Only records the event and wakes init, which does all the work (in
 * the loader's process context, which is the point of this module).
 */
static int kc_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	unsigned long bit = ev->event < BITS_PER_LONG ? BIT(ev->event) : 0;

	pr_info("kiwi_kconnect_test: %s (status %d)\n",
		rdma_event_msg(ev->event), ev->status);
	spin_lock(&t.lock);
	if ((bit & EV_FAILED) && !(t.seen & EV_FAILED)) {
		t.bad = ev->event;
		t.bad_status = ev->status;
	}
	t.seen |= bit;
	spin_unlock(&t.lock);
	wake_up(&t.wq);
	return 0;	/* the id is init's to destroy */
}

/* Wait for an event in @want; 0, or the reason the wait ended, recorded. */
static int kc_wait(unsigned long want, const char *step)
{
	long left;

	left = wait_event_timeout(t.wq, kc_seen() & (want | EV_FAILED),
				  STEP_TIMEOUT);
	if (kc_seen() & want)
		return 0;
	if (!left) {
		kc_result("FAIL: %s: no CM event within %d s", step,
			  STEP_TIMEOUT / HZ);
		return -ETIMEDOUT;
	}
	kc_result("FAIL: %s: %s (status %d)", step, rdma_event_msg(t.bad),
		  t.bad_status);
	return -EIO;
}

/* PD, CQ and an RC QP on the device the route resolved to. */
static int kc_create_qp(void)
{
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_device *dev = t.id->device;
	int rv;

	t.pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(t.pd)) {
		rv = PTR_ERR(t.pd);
		t.pd = NULL;
		return rv;
	}
	t.cq = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(t.cq)) {
		rv = PTR_ERR(t.cq);
		t.cq = NULL;
		return rv;
	}
	qa.send_cq = t.cq;
	qa.recv_cq = t.cq;
	return rdma_create_qp(t.id, t.pd, &qa);
}

/* Create the id, resolve address and route: 0 once a QP may be made. */
static int kc_resolve(void)
{
	struct sockaddr_in dst = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	struct rdma_cm_id *id;
	int rv;

	if (!in4_pton(addr, -1, (u8 *)&dst.sin_addr.s_addr, -1, NULL)) {
		kc_result("FAIL: addr %s is not an IPv4 address", addr);
		return -EINVAL;
	}
	/* The namespace of whoever loads us: ip netns exec ... modprobe. */
	id = rdma_create_id(current->nsproxy->net_ns, kc_cm_handler, NULL,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		kc_result("FAIL: rdma_create_id %ld", PTR_ERR(id));
		return PTR_ERR(id);
	}
	t.id = id;
	rv = rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, RESOLVE_MS);
	if (rv) {
		kc_result("FAIL: rdma_resolve_addr %d", rv);
		return rv;
	}
	rv = kc_wait(EV(ADDR_RESOLVED), "rdma_resolve_addr");
	if (rv)
		return rv;
	rv = rdma_resolve_route(id, RESOLVE_MS);
	if (rv) {
		kc_result("FAIL: rdma_resolve_route %d", rv);
		return rv;
	}
	return kc_wait(EV(ROUTE_RESOLVED), "rdma_resolve_route");
}

/*
 * rdma_connect() from here, the loading process's system call, as the
 * SMB Direct client's from mount; then disconnect.
 */
static void kc_connect(void)
{
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
	};
	u32 qpn = t.id->qp->qp_num;
	int rv;

	rv = rdma_connect(t.id, &cp);
	if (rv) {
		kc_result("FAIL: rdma_connect %d from %s[%d] (QP %u on %s)", rv,
			  current->comm, task_pid_nr(current), qpn,
			  dev_name(&t.id->device->dev));
		return;
	}
	if (kc_wait(EV(ESTABLISHED), "rdma_connect"))
		return;
	/* A clean end is part of the pass: DISCONNECTED, within the bound. */
	rv = rdma_disconnect(t.id);
	if (rv) {
		kc_result("FAIL: established, then rdma_disconnect %d", rv);
		return;
	}
	if (kc_wait(EV(DISCONNECTED), "established, then rdma_disconnect"))
		return;
	kc_result("pass: established from %s[%d] (process context), QP %u on %s, %pISpc -> %pISpc, then disconnected",
		  current->comm, task_pid_nr(current), qpn,
		  dev_name(&t.id->device->dev),
		  (struct sockaddr *)&t.id->route.addr.src_addr,
		  (struct sockaddr *)&t.id->route.addr.dst_addr);
}

static void kc_run(void)
{
	int rv;

	/* What I2 is about: a process's system call, not a kernel thread. */
	if ((current->flags & PF_KTHREAD) || !current->mm) {
		kc_result("FAIL: not loaded from a process but %s[%d]",
			  current->comm, task_pid_nr(current));
		return;
	}
	if (kc_resolve())
		return;
	rv = kc_create_qp();
	if (rv) {
		kc_result("FAIL: PD, CQ or QP on %s: %d",
			  dev_name(&t.id->device->dev), rv);
		return;
	}
	kc_connect();
}

/* Whatever kc_run() got, in ULP order: QP, id, then CQ and PD. */
static void kc_release(void)
{
	if (t.id && t.id->qp)
		rdma_destroy_qp(t.id);
	if (t.id)
		rdma_destroy_id(t.id);	/* no handler runs after this */
	t.id = NULL;
	if (t.cq)
		ib_free_cq(t.cq);
	t.cq = NULL;
	if (t.pd)
		ib_dealloc_pd(t.pd);
	t.pd = NULL;
}

static int __init kc_init(void)
{
	init_waitqueue_head(&t.wq);
	spin_lock_init(&t.lock);
	kc_run();
	kc_release();
	pr_info("kiwi_kconnect_test: %s\n", result);
	return 0;	/* loaded even on a FAIL: the verdict is in result */
}

static void __exit kc_exit(void)
{
	/* Nothing is held after kc_init(). */
}

module_init(kc_init);
module_exit(kc_exit);
MODULE_DESCRIPTION("kiwi selftest: a kernel consumer's rdma_connect() from process context");
MODULE_LICENSE("GPL");
