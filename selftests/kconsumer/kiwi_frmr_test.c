// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_frmr_test -- a kernel RDMA consumer for the abuse test frmr_remap
 * (selftests/guest/abuse.sh): it remaps a fast-register MR while a
 * peer's WRITE into it is stalled in the middle of an FPDU (issue 14,
 * defect 4).  Only kernel consumers fast-register, hence a module.
 *
 * Loaded in a network namespace (ip netns exec kwb modprobe ...), it
 * listens there on addr:port through rdma_cm and accepts one connection,
 * from the raw-TCP peer selftests/abuse/fpdu_peer (-m stall_write -r).
 * The accept's private data is a struct victim_info naming an FRMR mapped
 * onto pages A.  Once the connection is up it
 *   1. posts IB_WR_REG_MR (REMOTE_WRITE), then a zero-length SEND that
 *      tells the peer the STag is valid (fpdu_peer -r waits for it);
 *   2. waits until the first bytes of the peer's WRITE are in A (the peer
 *      then stalls the rest of that FPDU);
 *   3. posts LOCAL_INV, gives the MR a new key and maps the same iova
 *      onto pages B, and posts REG_MR again.
 * When the connection ends, B must hold nothing of the peer's: the rest
 * of the stalled WRITE was checked against the old registration and must
 * not be placed through the new one (kiwi answers it with a TERMINATE).
 *
 * The read-only parameter "result" says how far it got and then the
 * verdict: "listening", "established", "remapped ...", then "pass: ..."
 * or "FAIL: ...".  One connection per load.  Unload it before its device
 * goes: it does not handle RDMA_CM_EVENT_DEVICE_REMOVAL.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/scatterlist.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "abuse.h"

#define FRMR_PAGES	2
#define FRMR_LEN	(FRMR_PAGES * PAGE_SIZE)
/* Both registrations use this iova, so the peer's stale TO lands in B. */
#define FRMR_IOVA	0x6b69770000ULL
#define PEER_HEAD	16	/* bytes fpdu_peer sends before it stalls */
#define WR_TIMEOUT	(10 * HZ)
#define HEAD_WAIT_MS	20000

static char *addr = "10.91.0.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address to listen on, in the loader's network namespace");

static ushort port = 7407;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port to listen on");

static char result[160] = "loading";
module_param_string(result, result, sizeof(result), 0444);
MODULE_PARM_DESC(result, "progress, then the verdict: pass: ... or FAIL: ...");

/* Pages of one mapping and their scatterlist, DMA-mapped for the device. */
struct frmr_buf {
	struct page *page[FRMR_PAGES];
	struct scatterlist sg[FRMR_PAGES];
	int nents;			/* mapped entries, 0 if not mapped */
};

/*
 * Our own work runs here, not on the system workqueue: frmr_verdict()
 * flushes it from a CM event handler, which runs on the iw_cm's
 * WQ_MEM_RECLAIM queue, and such a queue may wait only on another.
 */
static struct workqueue_struct *frmr_wq;

static struct {
	struct mutex lock;		/* CM events against unload */
	bool stopping;			/* under lock: unloading */
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;		/* the one connection */
	struct ib_device *dev;		/* of id; resources below are on it */
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	struct frmr_buf a, b;
	struct work_struct work;	/* frmr_work(): register, remap */
	bool ended;			/* the connection is gone */
	bool remapped;			/* B registered in A's place */
	bool decided;			/* result holds the verdict */
	/* The one work request in flight at a time (frmr_post_wait()). */
	struct ib_cqe cqe;
	struct completion wr_done;
	enum ib_wc_status wr_status;
} t;

static __printf(1, 2) void frmr_result(const char *fmt, ...)
{
	va_list ap;

	if (t.decided)
		return;
	va_start(ap, fmt);
	vsnprintf(result, sizeof(result), fmt, ap);
	va_end(ap);
	t.decided = !strncmp(result, "pass", 4) || !strncmp(result, "FAIL", 4);
	pr_info("kiwi_frmr_test: %s\n", result);
}

static int frmr_buf_init(struct frmr_buf *b)
{
	int i;

	sg_init_table(b->sg, FRMR_PAGES);
	for (i = 0; i < FRMR_PAGES; i++) {
		b->page[i] = alloc_page(GFP_KERNEL);
		if (!b->page[i])
			return -ENOMEM;
		memset(page_address(b->page[i]), PAT_VICTIM, PAGE_SIZE);
		sg_set_page(&b->sg[i], b->page[i], PAGE_SIZE, 0);
	}
	b->nents = ib_dma_map_sg(t.dev, b->sg, FRMR_PAGES, DMA_BIDIRECTIONAL);
	return b->nents ? 0 : -EIO;
}

static void frmr_buf_free(struct frmr_buf *b)
{
	int i;

	if (b->nents)
		ib_dma_unmap_sg(t.dev, b->sg, FRMR_PAGES, DMA_BIDIRECTIONAL);
	b->nents = 0;
	for (i = 0; i < FRMR_PAGES; i++) {
		if (b->page[i])
			__free_page(b->page[i]);
		b->page[i] = NULL;
	}
}

/* How many of the first @len bytes of @b are @pat. */
static unsigned int frmr_buf_count(const struct frmr_buf *b, u8 pat,
				   unsigned int len)
{
	unsigned int i, n = 0;

	for (i = 0; i < len; i++) {
		const u8 *p = page_address(b->page[i / PAGE_SIZE]);

		n += p[i % PAGE_SIZE] == pat;
	}
	return n;
}

/* Point the (invalid) MR at @b under a new key, at FRMR_IOVA. */
static int frmr_map(struct frmr_buf *b)
{
	int n;

	ib_update_fast_reg_key(t.mr, ib_inc_rkey(t.mr->rkey));
	n = ib_map_mr_sg(t.mr, b->sg, b->nents, NULL, PAGE_SIZE);
	if (n != b->nents)
		return n < 0 ? n : -EINVAL;
	/* The consumer may choose the iova; ib_map_mr_sg() set B's own. */
	t.mr->iova = FRMR_IOVA;
	return 0;
}

static void frmr_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	t.wr_status = wc->status;
	complete(&t.wr_done);
}

/*
 * Post @wr signaled and wait for its completion: everything here happens
 * in send queue order, and the next step depends on the last.
 */
static int frmr_post_wait(struct ib_send_wr *wr, const char *what)
{
	const struct ib_send_wr *bad;
	int rv;

	reinit_completion(&t.wr_done);
	t.wr_status = IB_WC_GENERAL_ERR;
	wr->wr_cqe = &t.cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	rv = ib_post_send(t.id->qp, wr, &bad);
	if (rv)
		frmr_result("FAIL: %s not posted (%d)", what, rv);
	else if (!wait_for_completion_timeout(&t.wr_done, WR_TIMEOUT))
		rv = -ETIMEDOUT;
	else if (t.wr_status != IB_WC_SUCCESS)
		rv = -EIO;
	if (rv == -ETIMEDOUT || rv == -EIO)
		frmr_result("FAIL: %s: %s", what, rv == -EIO ?
			    ib_wc_status_msg(t.wr_status) : "no completion");
	return rv;
}

static int frmr_post_reg(const char *what)
{
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = t.mr,
		.key = t.mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};

	return frmr_post_wait(&wr.wr, what);
}

/* Until the peer's first PEER_HEAD bytes are in A: its FPDU is open. */
static bool frmr_await_head(void)
{
	int ms;

	for (ms = 0; ms < HEAD_WAIT_MS; ms += 50) {
		if (frmr_buf_count(&t.a, PAT_PEER, PEER_HEAD) == PEER_HEAD)
			return true;
		if (READ_ONCE(t.ended) || READ_ONCE(t.stopping))
			break;
		msleep(50);
	}
	frmr_result("FAIL: the peer's first %d bytes never arrived in A",
		    PEER_HEAD);
	return false;
}

static void frmr_work(struct work_struct *work)
{
	struct ib_send_wr ready = { .opcode = IB_WR_SEND };
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV };
	u32 old;
	int rv;

	if (frmr_post_reg("REG_MR of pages A") ||
	    frmr_post_wait(&ready, "the ready SEND") || !frmr_await_head())
		return;
	old = t.mr->rkey;
	inv.ex.invalidate_rkey = old;
	if (frmr_post_wait(&inv, "LOCAL_INV"))
		return;
	rv = frmr_map(&t.b);
	if (rv) {
		frmr_result("FAIL: mapping pages B: %d", rv);
		return;
	}
	if (frmr_post_reg("REG_MR of pages B"))
		return;
	WRITE_ONCE(t.remapped, true);
	frmr_result("remapped: rkey 0x%x -> 0x%x, iova 0x%llx from pages A to B",
		    old, t.mr->rkey, FRMR_IOVA);
}

/* The connection is gone: did anything of the peer's reach B? */
static void frmr_verdict(void)
{
	unsigned int in_b, in_a;

	WRITE_ONCE(t.ended, true);
	flush_work(&t.work);
	in_b = FRMR_LEN - frmr_buf_count(&t.b, PAT_VICTIM, FRMR_LEN);
	in_a = frmr_buf_count(&t.a, PAT_PEER, FRMR_LEN);
	if (!t.remapped)
		frmr_result("FAIL: the connection ended before the remap");
	else if (in_b)
		frmr_result("FAIL: %u bytes of pages B changed after the remap (%u of the peer's bytes in A)",
			    in_b, in_a);
	else
		frmr_result("pass: pages B untouched, %u of the peer's bytes in A (sent before the remap)",
			    in_a);
}

/* What frmr_setup() took; also for unload, after the QP is gone. */
static void frmr_release(void)
{
	if (t.mr)
		ib_dereg_mr(t.mr);
	t.mr = NULL;
	frmr_buf_free(&t.a);
	frmr_buf_free(&t.b);
	if (t.cq)
		ib_free_cq(t.cq);
	t.cq = NULL;
	if (t.pd)
		ib_dealloc_pd(t.pd);
	t.pd = NULL;
}

/* PD, CQ, QP, the FRMR mapped onto A (not yet valid), and pages B. */
static int frmr_setup(struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int rv;

	t.dev = id->device;
	t.pd = ib_alloc_pd(t.dev, 0);
	if (IS_ERR(t.pd)) {
		rv = PTR_ERR(t.pd);
		t.pd = NULL;
		return rv;
	}
	t.cq = ib_alloc_cq(t.dev, NULL, 16, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(t.cq)) {
		rv = PTR_ERR(t.cq);
		t.cq = NULL;
		return rv;
	}
	t.mr = ib_alloc_mr(t.pd, IB_MR_TYPE_MEM_REG, FRMR_PAGES);
	if (IS_ERR(t.mr)) {
		rv = PTR_ERR(t.mr);
		t.mr = NULL;
		return rv;
	}
	rv = frmr_buf_init(&t.a) ?: frmr_buf_init(&t.b) ?: frmr_map(&t.a);
	if (rv)
		return rv;
	qa.send_cq = t.cq;
	qa.recv_cq = t.cq;
	return rdma_create_qp(id, t.pd, &qa);
}

/* Accept @id, naming the FRMR in the private data fpdu_peer reads. */
static int frmr_accept(struct rdma_cm_id *id)
{
	struct victim_info vi = {
		.magic = (__force u32)cpu_to_be32(VICTIM_MAGIC),
		.rkey = (__force u32)cpu_to_be32(t.mr->rkey),
		.addr = (__force u64)cpu_to_be64(FRMR_IOVA),
		.len = (__force u32)cpu_to_be32(FRMR_LEN),
	};
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.private_data = &vi,
		.private_data_len = sizeof(vi),
	};

	return rdma_accept(id, &cp);
}

/* A connect request on a new @id: the first is ours, others refused. */
static int frmr_connect_request(struct rdma_cm_id *id)
{
	int rv;

	if (t.id)
		return -EBUSY;	/* non-zero: rdma_cm destroys @id */
	rv = frmr_setup(id) ?: frmr_accept(id);
	if (rv) {
		frmr_result("FAIL: accepting the connection: %d", rv);
		if (id->qp)
			rdma_destroy_qp(id);
		frmr_release();
		return rv;
	}
	t.id = id;
	return 0;
}

static int frmr_event(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return frmr_connect_request(id);
	if (id != t.id)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		frmr_result("established");
		queue_work(frmr_wq, &t.work);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		frmr_verdict();
		break;
	default:
		pr_info("kiwi_frmr_test: %s (%d)\n",
			rdma_event_msg(ev->event), ev->status);
		break;
	}
	return 0;
}

static int frmr_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	int rv = -ENODEV;

	mutex_lock(&t.lock);
	if (!t.stopping)
		rv = frmr_event(id, ev);
	else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		rv = 0;		/* only a new id may be destroyed for us */
	mutex_unlock(&t.lock);
	return rv;
}

static int frmr_listen(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	struct rdma_cm_id *id;
	int rv;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	/* The namespace of whoever loads us: ip netns exec ... modprobe. */
	id = rdma_create_id(current->nsproxy->net_ns, frmr_cm_handler, NULL,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	rv = rdma_bind_addr(id, (struct sockaddr *)&sin) ?: rdma_listen(id, 4);
	if (rv) {
		rdma_destroy_id(id);
		return rv;
	}
	t.listen_id = id;
	return 0;
}

static int __init frmr_init(void)
{
	int rv;

	frmr_wq = alloc_workqueue("kiwi_frmr_test", WQ_MEM_RECLAIM, 0);
	if (!frmr_wq)
		return -ENOMEM;
	mutex_init(&t.lock);
	init_completion(&t.wr_done);
	t.cqe.done = frmr_wr_done;
	INIT_WORK(&t.work, frmr_work);
	rv = frmr_listen();
	if (rv) {
		pr_err("kiwi_frmr_test: cannot listen on %s:%u: %d\n", addr,
		       port, rv);
		destroy_workqueue(frmr_wq);
		return rv;
	}
	frmr_result("listening on %s:%u", addr, port);
	return 0;
}

static void __exit frmr_exit(void)
{
	mutex_lock(&t.lock);
	t.stopping = true;	/* CM events leave everything alone now */
	mutex_unlock(&t.lock);
	rdma_destroy_id(t.listen_id);
	if (t.id) {
		rdma_disconnect(t.id);	/* flushes what the work waits for */
		cancel_work_sync(&t.work);
		rdma_destroy_qp(t.id);
		rdma_destroy_id(t.id);
		frmr_release();
	}
	destroy_workqueue(frmr_wq);
}

module_init(frmr_init);
module_exit(frmr_exit);
MODULE_DESCRIPTION("kiwi selftest: FRMR remapped under a stalled WRITE");
MODULE_LICENSE("GPL");
