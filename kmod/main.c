// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi: software iWARP RNIC -- module entry, device lifecycle.
 *
 * A kiwi device is created by "rdma link add NAME type kiwi netdev DEV"
 * and lives until the link is deleted, the netdev goes away, or the
 * module is unloaded.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/if_arp.h>
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "cq.h"
#include "qp.h"
#include "stag.h"
#include "verbs.h"

struct kiwi_limits kiwi_limits = {
	.max_qp = 16384,
	.max_qp_wr = 16384,
	.max_cq = 32768,
	/*
	 * libfabric's RDM endpoints (verbs;ofi_rxm) size one CQ for their
	 * whole universe: more than 65,536 entries by default.  A CQ's ring is
	 * allocated for what is asked, not for this limit.
	 */
	.max_cqe = 262144,
	.max_mr = 65536,
	.max_pd = 16384,
	.max_srq = 1024,
	.max_srq_wr = 16384,
};

module_param_named(max_qp, kiwi_limits.max_qp, uint, 0444);
MODULE_PARM_DESC(max_qp, "Queue pairs per device (default 16384)");
module_param_named(max_qp_wr, kiwi_limits.max_qp_wr, uint, 0444);
MODULE_PARM_DESC(max_qp_wr, "Work requests per send or receive queue (default 16384)");
module_param_named(max_cq, kiwi_limits.max_cq, uint, 0444);
MODULE_PARM_DESC(max_cq, "Completion queues per device (default 32768)");
module_param_named(max_cqe, kiwi_limits.max_cqe, uint, 0444);
MODULE_PARM_DESC(max_cqe, "Entries per completion queue (default 262144)");
module_param_named(max_mr, kiwi_limits.max_mr, uint, 0444);
MODULE_PARM_DESC(max_mr, "Memory regions per device (default 65536)");
module_param_named(max_pd, kiwi_limits.max_pd, uint, 0444);
MODULE_PARM_DESC(max_pd, "Protection domains per device (default 16384)");
module_param_named(max_srq, kiwi_limits.max_srq, uint, 0444);
MODULE_PARM_DESC(max_srq, "Shared receive queues per device (default 1024)");
module_param_named(max_srq_wr, kiwi_limits.max_srq_wr, uint, 0444);
MODULE_PARM_DESC(max_srq_wr, "Work requests per shared receive queue (default 16384)");

/* Per-QP send and bulk receive work (tx.c, rx.c). */
struct workqueue_struct *kiwi_wq;

/* Connections' work per CPU: each picked tx.cpu and rx_cpu counts one. */
static DEFINE_PER_CPU(atomic_t, kiwi_cpu_load);

/*
 * A CPU for a connection's work: of the online ones other than @app,
 * the one with the least of it, ties round-robin (siw balances its
 * transmit threads by the same count); @app only when it is the only
 * CPU.  @app runs the application that posts the work, or the softirq
 * of the packets that asked for it.  Letting @app take a share once the
 * others had one (counting it half a connection busy) was measured and
 * dropped: idle connections count too -- perftest's rdma_cm mode keeps
 * one for its parameter exchange -- so a lone busy QP could land beside
 * its polling application, and 64 KiB WRITE bandwidth fell to 0.71x
 * (bench-ab, 2 vCPUs).  Given back with kiwi_cpu_put();
 * WORK_CPU_UNBOUND if no CPU is online.
 */
int kiwi_cpu_get(int app)
{
	static atomic_t next = ATOMIC_INIT(0);
	unsigned int start = (unsigned int)atomic_inc_return(&next) % nr_cpu_ids;
	unsigned int best_load = UINT_MAX, best_rank = UINT_MAX;
	int cpu, best = WORK_CPU_UNBOUND;

	if (num_online_cpus() == 1)
		app = -1;		/* the only one: take it */
	for_each_online_cpu(cpu) {
		unsigned int load = atomic_read(per_cpu_ptr(&kiwi_cpu_load, cpu));
		unsigned int rank = (cpu + nr_cpu_ids - start) % nr_cpu_ids;

		if (cpu == app)
			continue;
		if (load < best_load ||
		    (load == best_load && rank < best_rank)) {
			best = cpu;
			best_load = load;
			best_rank = rank;
		}
	}
	if (best != WORK_CPU_UNBOUND)
		atomic_inc(per_cpu_ptr(&kiwi_cpu_load, best));
	return best;
}

/* A CPU from kiwi_cpu_get() the connection no longer works on. */
void kiwi_cpu_put(int cpu)
{
	if (cpu >= 0 && cpu < nr_cpu_ids)
		atomic_dec(per_cpu_ptr(&kiwi_cpu_load, cpu));
}

/* All kiwi devices, for module unload. */
static LIST_HEAD(kiwi_dev_list);
static DEFINE_MUTEX(kiwi_dev_mutex);

static void kiwi_dealloc_driver(struct ib_device *ibdev);

/*
 * RFC 7306 atomics: section 1.1 leaves it to the ULP, out of band, to
 * know that the peer has them (as for Immediate Data, qp.c's
 * rfc7306_imm), so a module parameter says the peers do.  Each device
 * keeps a copy (kdev->atomics), which a QP reads when it is created and
 * keeps for both directions: a QP created without it neither sends
 * atomic WRs (refused locally, before a peer like siw would end the
 * connection with a TERMINATE) nor executes a peer's Atomic Request
 * (TERMINATE Unexpected OpCode), and the device then reports atomic_cap
 * NONE.  The parameter lives here, beside the device list it updates,
 * so that the QP layer reads its device and never calls up to main.c.
 */
static bool kiwi_atomic_default;

/*
 * Changing it also changes the atomic_cap of existing devices: uverbs
 * answers the plain query_device from the attributes kept at
 * registration, and perftest's ib_atomic_* read it there.  Under
 * kiwi_dev_mutex, which also covers a new device's copy (kiwi_newlink()).
 */
static void kiwi_devices_atomics(bool on)
{
	struct kiwi_device *kdev;

	lockdep_assert_held(&kiwi_dev_mutex);
	list_for_each_entry(kdev, &kiwi_dev_list, list) {
		WRITE_ONCE(kdev->atomics, on);
		WRITE_ONCE(kdev->ibdev.attrs.atomic_cap,
			   on ? IB_ATOMIC_HCA : IB_ATOMIC_NONE);
	}
}

static int kiwi_atomic_param_set(const char *val,
				 const struct kernel_param *kp)
{
	int rv;

	mutex_lock(&kiwi_dev_mutex);
	rv = param_set_bool(val, kp);
	if (!rv)
		kiwi_devices_atomics(READ_ONCE(kiwi_atomic_default));
	mutex_unlock(&kiwi_dev_mutex);
	return rv;
}

static const struct kernel_param_ops kiwi_atomic_param_ops = {
	.set = kiwi_atomic_param_set,
	.get = param_get_bool,
};
module_param_cb(rfc7306_atomics, &kiwi_atomic_param_ops, &kiwi_atomic_default,
		0644);
MODULE_PARM_DESC(rfc7306_atomics,
		 "QPs created from now on use RFC 7306 atomics (fetch-and-add, compare-and-swap; atomic_cap HCA): their peers support them (default: off)");

/*
 * <ibdev>/kiwi_abi_version in sysfs: the provider knows its devices by
 * this file, whatever they are called (rdma link add eth0_kiwi ...).
 */
static ssize_t kiwi_abi_version_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", KIWI_ABI_VERSION);
}
static DEVICE_ATTR_RO(kiwi_abi_version);

static struct attribute *kiwi_dev_attrs[] = {
	&dev_attr_kiwi_abi_version.attr,
	NULL
};

static const struct attribute_group kiwi_dev_attr_group = {
	.attrs = kiwi_dev_attrs,
};

static const struct ib_device_ops kiwi_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = KIWI_ABI_VERSION,

	.alloc_mr = kiwi_alloc_mr,
	.alloc_mw = kiwi_alloc_mw,
	.alloc_pd = kiwi_alloc_pd,
	.alloc_ucontext = kiwi_alloc_ucontext,
	.create_cq = kiwi_create_cq,
	.create_qp = kiwi_create_qp,
	.create_srq = kiwi_create_srq,
	.dealloc_driver = kiwi_dealloc_driver,
	.dealloc_mw = kiwi_dealloc_mw,
	.dealloc_pd = kiwi_dealloc_pd,
	.dealloc_ucontext = kiwi_dealloc_ucontext,
	.alloc_hw_port_stats = kiwi_alloc_hw_port_stats,
	.get_hw_stats = kiwi_get_hw_stats,
	.counter_bind_qp = kiwi_counter_bind_qp,
	.counter_unbind_qp = kiwi_counter_unbind_qp,
	.counter_dealloc = kiwi_counter_dealloc,
	.counter_alloc_stats = kiwi_counter_alloc_stats,
	.counter_update_stats = kiwi_counter_update_stats,
	.disassociate_ucontext = kiwi_disassociate_ucontext,
	.device_group = &kiwi_dev_attr_group,
	.dereg_mr = kiwi_dereg_mr,
	.destroy_cq = kiwi_destroy_cq,
	.destroy_qp = kiwi_destroy_qp,
	.destroy_srq = kiwi_destroy_srq,
	.fill_res_qp_entry = kiwi_fill_res_qp_entry,
	.get_dev_fw_str = kiwi_get_dev_fw_str,
	.get_dma_mr = kiwi_get_dma_mr,
	.map_mr_sg = kiwi_map_mr_sg,
	.get_port_immutable = kiwi_get_port_immutable,
	.iw_accept = kiwi_accept,
	.iw_add_ref = kiwi_iw_add_ref,
	.iw_connect = kiwi_connect,
	.iw_create_listen = kiwi_create_listen,
	.iw_destroy_listen = kiwi_destroy_listen,
	.iw_get_qp = kiwi_get_qp,
	.iw_reject = kiwi_reject,
	.iw_rem_ref = kiwi_qp_put,
	.mmap = kiwi_mmap,
	.mmap_free = kiwi_mmap_free,
	.modify_qp = kiwi_modify_qp,
	.modify_srq = kiwi_modify_srq,
	.poll_cq = kiwi_poll_cq,
	.post_recv = kiwi_post_recv,
	.post_send = kiwi_post_send,
	.post_srq_recv = kiwi_post_srq_recv,
	.query_device = kiwi_query_device,
	.query_gid = kiwi_query_gid,
	.query_pkey = kiwi_query_pkey,
	.query_port = kiwi_query_port,
	.query_qp = kiwi_query_qp,
	.query_srq = kiwi_query_srq,
	.reg_user_mr = kiwi_reg_user_mr,
	.req_notify_cq = kiwi_req_notify_cq,
	.resize_cq = kiwi_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, kiwi_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, kiwi_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, kiwi_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, kiwi_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, kiwi_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, kiwi_ucontext, ibuc),
};

static bool kiwi_is_kiwi(struct ib_device *ibdev)
{
	return ibdev->ops.dealloc_driver == kiwi_dealloc_driver;
}

/* The kiwi device bound to @netdev, with a registration reference. */
static struct kiwi_device *kiwi_get_by_netdev(struct net_device *netdev)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(netdev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return NULL;
	if (!kiwi_is_kiwi(ibdev)) {
		ib_device_put(ibdev);
		return NULL;
	}
	return to_kdev(ibdev);
}

static void kiwi_port_event(struct kiwi_device *kdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &kdev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&event);
}

/*
 * Any netdev that carries IP over an Ethernet-like or loopback link will
 * do: iWARP only needs TCP.  Devices without a MAC get a random GID.
 */
static bool kiwi_netdev_ok(struct net_device *netdev)
{
	switch (netdev->type) {
	case ARPHRD_ETHER:
	case ARPHRD_LOOPBACK:
	case ARPHRD_NONE:
	case ARPHRD_IEEE802:
		return true;
	default:
		return false;
	}
}

static struct kiwi_device *kiwi_device_alloc(struct net_device *netdev)
{
	struct kiwi_device *kdev;
	struct ib_device *ibdev;

	kdev = ib_alloc_device(kiwi_device, ibdev);
	if (!kdev)
		return NULL;
	ibdev = &kdev->ibdev;
	/* Before the ops are set: no dealloc_driver call on failure. */
	if (kiwi_stats_init(kdev)) {
		ib_dealloc_device(ibdev);
		return NULL;
	}

	if (netdev->addr_len >= ETH_ALEN && is_valid_ether_addr(netdev->dev_addr))
		ether_addr_copy(kdev->mac, netdev->dev_addr);
	else
		eth_random_addr(kdev->mac);
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, kdev->mac);

	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	strscpy(ibdev->node_desc, KIWI_NODE_DESC, sizeof(ibdev->node_desc));
	/*
	 * User queues are mapped rings: receives and polling never enter
	 * the kernel, so only the send doorbell (POST_SEND without WRs)
	 * and CQ arming are enabled of the data-path write commands.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);

	/* iWARP runs on the host's TCP ports: no iwpm port mapping. */
	strscpy(ibdev->iw_ifname, netdev->name, sizeof(ibdev->iw_ifname));
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;

	kdev->netdev = netdev;
	netdev_hold(netdev, &kdev->netdev_tracker, GFP_KERNEL);
	kdev->lim = kiwi_limits;
	xa_init_flags(&kdev->qp_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&kdev->mem_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&kdev->counter_xa, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&kdev->list);

	ib_set_device_ops(ibdev, &kiwi_dev_ops);
	return kdev;
}

/* Called by the RDMA core once the device is unregistered. */
static void kiwi_dealloc_driver(struct ib_device *ibdev)
{
	struct kiwi_device *kdev = to_kdev(ibdev);

	/* Connections no iw_cm id owns: half-open, never answered. */
	kiwi_cm_dev_close(kdev);
	mutex_lock(&kiwi_dev_mutex);
	list_del_init(&kdev->list);
	mutex_unlock(&kiwi_dev_mutex);

	WARN_ON(!xa_empty(&kdev->qp_xa));
	WARN_ON(!xa_empty(&kdev->mem_xa));
	WARN_ON(!xa_empty(&kdev->counter_xa));	/* freed with their QPs */
	xa_destroy(&kdev->qp_xa);
	xa_destroy(&kdev->mem_xa);
	xa_destroy(&kdev->counter_xa);
	netdev_put(kdev->netdev, &kdev->netdev_tracker);
	kiwi_stats_free(kdev);
}

static int kiwi_newlink(const char *name, struct net_device *netdev)
{
	struct kiwi_device *kdev;
	int rv;

	if (!kiwi_netdev_ok(netdev))
		return -EINVAL;

	kdev = kiwi_get_by_netdev(netdev);
	if (kdev) {
		ib_device_put(&kdev->ibdev);
		return -EEXIST;
	}

	kdev = kiwi_device_alloc(netdev);
	if (!kdev)
		return -ENOMEM;

	/* From here on, ib_dealloc_device() undoes everything via
	 * kiwi_dealloc_driver(): the list entry and the netdev reference.
	 */
	rv = ib_device_set_netdev(&kdev->ibdev, netdev, 1);
	if (rv)
		goto err;

	/*
	 * Listed before registration: once registered, a concurrent netdev
	 * removal may unregister and free the device at any time.
	 */
	mutex_lock(&kiwi_dev_mutex);
	kdev->atomics = READ_ONCE(kiwi_atomic_default);
	list_add_tail(&kdev->list, &kiwi_dev_list);
	mutex_unlock(&kiwi_dev_mutex);

	/* Software device: DMA addresses are kernel virtual addresses. */
	get_device(&kdev->ibdev.dev);
	rv = ib_register_device(&kdev->ibdev, name, NULL);
	if (rv) {
		put_device(&kdev->ibdev.dev);
		pr_info("cannot register %s on %s: %d\n", name, netdev->name, rv);
		goto err;
	}

	pr_info("%s attached to %s\n", name, netdev->name);

	/* The netdev may have started going away while we registered. */
	if (netdev->reg_state != NETREG_REGISTERED)
		ib_unregister_device_queued(&kdev->ibdev);
	put_device(&kdev->ibdev.dev);
	return 0;

err:
	ib_dealloc_device(&kdev->ibdev);
	return rv;
}

static int kiwi_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *arg)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(arg);
	struct kiwi_device *kdev;

	kdev = kiwi_get_by_netdev(netdev);
	if (!kdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UP:
		kiwi_port_event(kdev, IB_EVENT_PORT_ACTIVE);
		break;
	case NETDEV_DOWN:
		kiwi_port_event(kdev, IB_EVENT_PORT_ERR);
		break;
	case NETDEV_CHANGE:
		kiwi_port_event(kdev, netif_carrier_ok(netdev) ?
				IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	case NETDEV_CHANGEADDR:
		kiwi_port_event(kdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_CHANGENAME:
		strscpy(kdev->ibdev.iw_ifname, netdev->name,
			sizeof(kdev->ibdev.iw_ifname));
		break;
	case NETDEV_UNREGISTER:
		kiwi_qp_fail_all(kdev);
		/* Cannot unregister under RTNL; the core defers it. */
		ib_unregister_device_queued(&kdev->ibdev);
		break;
	default:
		break;
	}
	ib_device_put(&kdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block kiwi_netdev_nb = {
	.notifier_call = kiwi_netdev_event,
};

static struct rdma_link_ops kiwi_link_ops = {
	.type = KIWI_DRV_NAME,
	.newlink = kiwi_newlink,
};

static bool kiwi_limits_valid(void)
{
	const struct kiwi_limits *l = &kiwi_limits;

	return l->max_qp && l->max_qp_wr && l->max_cq && l->max_cqe &&
	       l->max_mr && l->max_pd && l->max_srq_wr &&
	       l->max_qp <= (1U << 24) - 2 && l->max_mr <= KIWI_STAG_INDEX_MAX &&
	       l->max_qp_wr <= (1U << 20) && l->max_cqe <= (1U << 22) &&
	       l->max_srq_wr <= (1U << 20);
}

static int __init kiwi_init(void)
{
	int rv;

	if (!kiwi_limits_valid()) {
		pr_err("invalid resource limit parameters\n");
		return -EINVAL;
	}
	rv = kiwi_crc_init();
	if (rv)
		return rv;
	rv = kiwi_cm_init();
	if (rv)
		return rv;
	/*
	 * Per-QP send and bulk receive work; a sender may block in TCP,
	 * the workqueue adds workers as needed.  Bound: each QP sends from
	 * its own CPU (tx.c) and places bulk data on another (rx.c).  High
	 * priority, as for a NIC's queues: RDMA applications often
	 * busy-poll their CQs and would otherwise share a CPU evenly with
	 * the very work they are waiting for.
	 */
	kiwi_wq = alloc_workqueue("kiwi", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	if (!kiwi_wq) {
		rv = -ENOMEM;
		goto err_cm;
	}
	rv = register_netdevice_notifier(&kiwi_netdev_nb);
	if (rv)
		goto err_tx;
	rdma_link_register(&kiwi_link_ops);
	pr_info("software iWARP RNIC " KIWI_DRV_VERSION " loaded\n");
	return 0;

err_tx:
	destroy_workqueue(kiwi_wq);
err_cm:
	kiwi_cm_exit();
	return rv;
}

static void __exit kiwi_exit(void)
{
	struct kiwi_device *kdev;

	/* No new devices after this; then tear down the existing ones. */
	rdma_link_unregister(&kiwi_link_ops);
	unregister_netdevice_notifier(&kiwi_netdev_nb);

	for (;;) {
		mutex_lock(&kiwi_dev_mutex);
		kdev = list_first_entry_or_null(&kiwi_dev_list,
						struct kiwi_device, list);
		if (kdev) {
			/* Unlisted by dealloc_driver, so the loop ends. */
			get_device(&kdev->ibdev.dev);
		}
		mutex_unlock(&kiwi_dev_mutex);
		if (!kdev)
			break;
		ib_unregister_device(&kdev->ibdev);
		put_device(&kdev->ibdev.dev);
	}
	destroy_workqueue(kiwi_wq);
	kiwi_cm_exit();
	kiwi_mem_exit_check();
	pr_info("unloaded\n");
}

module_init(kiwi_init);
module_exit(kiwi_exit);

MODULE_AUTHOR("kiwi developers");
MODULE_DESCRIPTION("kiwi: software iWARP RDMA NIC over kernel TCP");
MODULE_LICENSE("GPL");
MODULE_VERSION(KIWI_DRV_VERSION);
MODULE_ALIAS_RDMA_LINK("kiwi");
