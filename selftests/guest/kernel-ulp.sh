#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/kernel-ulp.sh -- in-kernel RDMA consumers over kiwi, run
# inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/kernel-ulp.sh
#
# NVMe over Fabrics, RDMA transport: the kernel's NVMe target (nvmet-rdma,
# a memory-backed null_blk namespace) and host (nvme-rdma) talk through
# one kiwi device on a dummy netdev.  This drives kernel QPs and CQs, fast
# registration (IB_WR_REG_MR, LOCAL_INV, remote invalidation) and
# rdma_rw's READ-with-invalidate.  The data written through the host is
# read back and compared, with O_DIRECT so the block layer's cache
# cannot answer; then fio writes random-sized blocks and verifies each
# (crc32c), once on a clean network, once as polled I/O on the poll
# queues (the host connects with nr_write_queues=2 and nr_poll_queues=2
# besides one queue per vCPU) and once under netem (loss, duplication,
# reordering on lo, which carries both ends' traffic).  Then recovery
# (a controller reset under I/O, the target's port bounced) and the
# device going away under a connected controller: `rdma link delete`,
# and the netdev itself deleted (within 30 s).
# TAP 13, plan line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
MB=${KIWI_ULP_MB:-16}

echo "TAP version 13"
if modprobe kiwi && nvme_kiwi_up kiwi0 >"$TMPD/setup" 2>&1; then
	ok "setup: kiwi0 on a dummy netdev"
else
	notok "setup: kiwi0 on a dummy netdev"
	diag "$TMPD/setup"
	tap_end
	exit 1
fi

if nvme_target_up >"$TMPD/tgt" 2>&1; then
	ok "nvmet-rdma target listening on $NVME_ADDR:4420 via kiwi0"
else
	notok "nvmet-rdma target listening on $NVME_ADDR:4420 via kiwi0"
	diag "$TMPD/tgt"
	tap_end
	exit 1
fi

# Besides the default I/O queues (one per vCPU), two for writes only and
# two polled ones (their CQs are IB_POLL_DIRECT: the block layer polls
# kiwi's CQ from the submitting task).
# shellcheck disable=SC2034 # read by lib.sh's nvme_connect
NVME_OPTS=",nr_write_queues=2,nr_poll_queues=2"
if nvme_connect; then
	ok "nvme-rdma host connected: /dev/$NVME_DEV ($(cat "$(nvme_ctrl)/queue_count" 2>/dev/null || echo "?") queues with the admin queue)"
else
	notok "nvme-rdma host connected"
	diag "$TMPD/conn"
	{ ls /sys/block /dev/nvme*; grep -H . /sys/block/nvme*/device/subsysnqn; } 2>&1 | diag
	nvme_klog
	tap_end
	exit 1
fi

head -c $((MB << 20)) /dev/urandom >"$TMPD/data"
if dd if="$TMPD/data" of="/dev/$NVME_DEV" bs=1M oflag=direct status=none &&
   dd if="/dev/$NVME_DEV" of="$TMPD/back" bs=1M count="$MB" iflag=direct \
	status=none && cmp -s "$TMPD/data" "$TMPD/back"; then
	ok "nvme-rdma: $MB MiB written and read back intact (O_DIRECT, 1 MiB I/Os)"
else
	notok "nvme-rdma: $MB MiB written and read back intact"
	nvme_klog
fi
# Small and unaligned-to-MiB I/O: inline data and single-page registrations.
if dd if="$TMPD/data" of="/dev/$NVME_DEV" bs=4k count=256 seek=4096 \
	oflag=direct status=none &&
   dd if="/dev/$NVME_DEV" of="$TMPD/back4k" bs=4k count=256 skip=4096 \
	iflag=direct status=none &&
   cmp -s <(head -c 1048576 "$TMPD/data") "$TMPD/back4k"; then
	ok "nvme-rdma: 256 x 4 KiB written and read back intact"
else
	notok "nvme-rdma: 256 x 4 KiB written and read back intact"
fi

nvme_fio "nvme-rdma: fio random 4 KiB..128 KiB writes, every block verified" \
	--rw=randwrite --bsrange=4k-128k --iodepth=16 --size=32M
# Polled I/O (RWF_HIPRI) goes to the poll queues, which exist only if
# the block layer turned polling on (io_poll 1).
if [ "$(cat "/sys/block/$NVME_DEV/queue/io_poll" 2>/dev/null)" = 1 ]; then
	nvme_fio "nvme-rdma: polled I/O (pvsync2 --hipri, 2 jobs) on the poll queues, every block verified" \
		--ioengine=pvsync2 --hipri --rw=randwrite --bsrange=4k-64k --numjobs=2 \
		--size=4M --offset_increment=8M --group_reporting
else
	notok "nvme-rdma: polling on (queue/io_poll $(cat "/sys/block/$NVME_DEV/queue/io_poll" 2>/dev/null))"
fi
# A bad network under the same job: both ends are local, so all of it
# goes through lo.  TCP repairs loss, duplication and reordering; the
# data must come out intact and no queue may fail.
if tc qdisc add dev lo root netem delay 2ms 1ms loss 1% duplicate 1% \
	reorder 25% 50% >"$TMPD/tc" 2>&1; then
	nvme_fio "nvme-rdma under netem (1% loss, 1% duplication, 25% reordering): fio verify" \
		--rw=randwrite --bsrange=4k-64k --iodepth=8 --size=8M
	tc qdisc del dev lo root
	nvme_no_recovery "nvme-rdma under netem"
else
	notok "netem on lo"
	diag "$TMPD/tc"
fi

# Recovery.  A controller reset in the middle of fio's I/O (4 jobs, 16
# deep, on as many queues as the host made): the I/O is requeued across
# the reset and every block still verifies.
nvme_reset_under_io() {
	local c fp
	c=$(nvme_ctrl)
	( sleep 3; echo 1 >"$c/reset_controller" ) &
	fp=$!
	nvme_fio "nvme-rdma: controller reset during fio (4 jobs x 16 deep, $(cat "$c/queue_count" 2>/dev/null || echo "?") queues): every block verified" \
		--rw=randwrite --bsrange=4k-64k --iodepth=16 --numjobs=4 \
		--size=8M --offset_increment=16M --group_reporting
	wait $fp
	if nvme_wait_live 30; then
		ok "nvme-rdma: controller live again after the reset"
	else
		notok "nvme-rdma: controller live again after the reset (state $(cat "$c/state" 2>/dev/null))"
		nvme_klog 30
	fi
}

# The target's port goes away and comes back: the host loses its queues,
# reconnects (every second, for up to a minute) and its I/O verifies.
nvme_port_bounce() {
	local p=$NVME_CFS/ports/1/subsystems/$NVME_NQN
	if rm "$p" && sleep 3 && ln -s "$NVME_CFS/subsystems/$NVME_NQN" "$p" &&
	   nvme_wait_live 60; then
		ok "nvme-rdma: target port removed for 3 s and re-added: the host reconnected"
		nvme_fio "nvme-rdma: fio after the reconnect, every block verified" \
			--rw=randwrite --bsrange=4k-64k --iodepth=8 --size=8M
	else
		notok "nvme-rdma: target port removed and re-added: the host reconnected"
		nvme_klog 30
	fi
}

nvme_reset_under_io
nvme_port_bounce

# A kernel consumer's QP cannot be bound to a connection by a process:
# qpsteal answers a connect request with rdma_accept() naming the QP
# number of one of NVMe's QPs.
BIN=${KIWI_SELFTEST_BIN:-$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)/build/selftests}
# (Kernel QPs created through rdma_cm show as "comm [rdma_cm]"; only
# NVMe's exist on kiwi0 now.)
kqpn=$(rdma resource show qp link kiwi0/1 2>/dev/null |
       awk '/comm \[/ { for (i = 1; i < NF; i++) if ($i == "lqpn") { print $(i + 1); exit } }')
if [ -z "$kqpn" ]; then
	notok "kernel QP not stealable: no kernel QP in 'rdma resource show qp'"
	rdma resource show qp 2>&1 | diag
else
	timeout 60 "$BIN/qpsteal" thief $NVME_ADDR 4421 "$kqpn" >"$TMPD/thief" 2>&1 &
	tp=$!
	for i in $(seq 1 40); do
		ss -ltnH | grep -q ":4421 " && break
		sleep 0.5
	done
	timeout 20 rping -c -a $NVME_ADDR -p 4421 -C 1 >/dev/null 2>&1
	if wait $tp; then
		ok "kernel QP $kqpn (NVMe) cannot be bound by a process's rdma_accept()"
	else
		notok "kernel QP $kqpn (NVMe) bound by a process's rdma_accept()"
		diag "$TMPD/thief"
	fi
fi

if nvme_disconnect; then
	ok "nvme-rdma host disconnected"
else
	notok "nvme-rdma host disconnected"
	diag "$TMPD/del"
fi
# The device goes away under a connected kernel consumer: `rdma link
# delete` must finish (NVMe's remove callbacks tear their queues down),
# within a bound, and leave no controller behind.
if ! nvme_connect; then
	notok "link delete under NVMe: reconnect failed"
	diag "$TMPD/conn"
elif timeout 120 rdma link del kiwi0 >"$TMPD/ld" 2>&1; then
	# shellcheck disable=SC2034 # a count of tries, not read
	for i in $(seq 1 60); do
		nvme_ctrl_present || break
		sleep 0.5
	done
	if nvme_ctrl_present; then
		notok "link delete under NVMe: the controller is still there"
	else
		ok "rdma link delete with NVMe connected: device gone, controller removed"
	fi
else
	notok "rdma link delete with NVMe connected: exit $? (hung past 120 s?)"
	diag "$TMPD/ld"
fi
# The netdev itself goes away under a connected controller, as when its
# namespace is deleted: kiwi fails every connected QP at once
# (kiwi_qp_fail_all), so NVMe's teardown of its queues ends in seconds.
# Before, the host's controller shutdown waited out its 60 s admin
# timeout for a target on the same, departing device, `ip link delete`
# took 62 s and the hung-task detector reported ib_unregister_work.
# The target's listener went with the old kiwi0 and nvmet-rdma does not
# bring it back by itself: the port is re-enabled (its subsystem link
# removed and made again) once kiwi0 is back.
nvme_netdev_delete() {
	local rc t0 ms p=$NVME_CFS/ports/1/subsystems/$NVME_NQN
	{ rdma link add kiwi0 type kiwi netdev kd0 && rm "$p" &&
	  ln -s "$NVME_CFS/subsystems/$NVME_NQN" "$p"; } >"$TMPD/conn" 2>&1 || {
		notok "netdev deleted under NVMe: kiwi0 back on kd0"
		diag "$TMPD/conn"
		return
	}
	if ! nvme_connect; then
		notok "netdev deleted under NVMe: reconnect failed"
		diag "$TMPD/conn"
		return
	fi
	t0=$(date +%s%N)
	timeout 120 ip link delete kd0 >"$TMPD/ld" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	for _ in $(seq 1 60); do
		nvme_ctrl_present || break
		sleep 0.5
	done
	if [ $rc -eq 0 ] && [ $ms -le 30000 ] && ! nvme_ctrl_present &&
	   ! rdma link show kiwi0 >/dev/null 2>&1; then
		ok "netdev deleted under NVMe: ip link delete returned in $ms ms (bound 30000), kiwi0 and the controller gone"
	else
		notok "netdev deleted under NVMe: ip link delete exit $rc in $ms ms (bound 30000); controller $(nvme_ctrl_present && echo present || echo gone)"
		diag "$TMPD/ld"
		nvme_klog 30
	fi
}
nvme_netdev_delete

KTEXT=$(kiwi_text)
if nvme_target_down 2>"$TMPD/rm" &&
   { ! rdma link show kiwi0 >/dev/null 2>&1 || rdma link del kiwi0; } &&
   modprobe -r kiwi 2>>"$TMPD/rm"; then
	ok "teardown: nvme modules, kiwi0 and kiwi unloaded"
else
	notok "teardown: nvme modules, kiwi0 and kiwi unloaded"
	diag "$TMPD/rm"
fi
lsmod | grep -q '^kiwi ' || no_leaks_verdict "$KTEXT"
tap_end
