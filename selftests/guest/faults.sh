#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/faults.sh -- kiwi on a bad network and under
# administrative changes, run inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/faults.sh
#
# kiwi0 (10.91.0.1, netns kwa) and kiwi1 (10.91.0.2, netns kwb) on a veth
# pair.  With `tc qdisc ... netem` on both ends of the veth -- 1% loss;
# 1% duplication; 25% reordering with 5 ms delay; all of them together --
# `rping -V` (every byte of every iteration compared) at 4 KiB and 64 KiB
# and ib_read_bw / ib_send_bw must pass: TCP repairs the stream, and
# kiwi must neither misplace a byte nor fail a QP.  With all of them
# together, NVMe over RDMA too: the kernel's target and host on kiwi2 (a
# dummy netdev in the initial namespace, so netem goes on lo), fio
# writing random 4 KiB blocks and then sequential 128 KiB ones for 20 s
# each, reading the blocks back in batches as it goes (crc32c,
# --verify_backlog; the last batch, written when the time is up, is not
# read); no I/O may fail nor any block differ, and the host must not
# need error recovery.  Then, during
# traffic: the MTU changed on both ends (the rping -V running across it
# must pass), the netdev set down and up and the address removed (the
# rping may fail, but cleanly: no data mismatch, no hang or crash);
# after each the devices still work; finally everything is torn down and
# the module unloads.  The kernel log must stay clean (selftests/vm/run.sh).
#
# Output is TAP 13 with the plan line last; exit status 0 only if all
# pass.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
SRV=10.91.0.2
START=$SECONDS
. "$ROOT/selftests/guest/lib.sh"

setup() {
	modprobe kiwi && modprobe sch_netem || return 1
	kiwi_pair_up
}

# netem ARGS...: the same impairment on both ends ("" clears it).
netem() {
	A tc qdisc del dev kv0 root 2>/dev/null
	B tc qdisc del dev kv1 root 2>/dev/null
	[ $# -gt 0 ] || return 0
	A tc qdisc add dev kv0 root netem "$@" &&
	B tc qdisc add dev kv1 root netem "$@"
}

# Passive TCP statistics of the last run, to show the faults were real.
tcp_stats() {
	A nstat -az TcpRetransSegs TcpExtTCPOFOQueue 2>/dev/null |
		awk 'NR > 1 && $1 !~ /^#/ { printf "%s=%s ", $1, $2 }'
}

impaired() {
	local label=$1
	shift
	if ! netem "$@"; then
		notok "$label: tc qdisc netem $*"
		return
	fi
	A nstat -n >/dev/null 2>&1
	rping_test "$label" $SRV 4096 100
	rping_test "$label" $SRV 65535 20
	perf_test "$label" kiwi1 kiwi0 $SRV 100 ib_read_bw -s 65536
	perf_test "$label" kiwi1 kiwi0 $SRV 100 ib_send_bw -s 4096
	echo "# $label: $(tcp_stats)"
	netem
}

# nvme_impaired LABEL NETEM...: NVMe over RDMA through kiwi2 with
# `netem NETEM...` on lo, which carries both ends' traffic; then the host
# disconnects and everything of it is taken down again.
nvme_impaired() {
	local label=$1 rc=0 t0=$SECONDS
	shift
	if ! { nvme_kiwi_up kiwi2 && nvme_target_up && nvme_connect; } \
		>"$TMPD/nv" 2>&1; then
		notok "$label: nvme-rdma via kiwi2: target up, host connected"
		tail -n 20 "$TMPD/nv" "$TMPD/conn" | diag
		nvme_klog 20
		return
	fi
	ok "$label: nvme-rdma via kiwi2: target up, host connected (/dev/$NVME_DEV)"
	if tc qdisc add dev lo root netem "$@" >"$TMPD/tc" 2>&1; then
		nvme_fio "$label: nvme-rdma fio 4 KiB random writes for 20 s, read back in batches of 64 and checked" \
			--rw=randwrite --bs=4k --iodepth=16 --size=64M \
			--runtime=20 --time_based --verify_backlog=64
		nvme_fio "$label: nvme-rdma fio 128 KiB sequential writes for 20 s, read back in batches of 16 and checked" \
			--rw=write --bs=128k --iodepth=8 --size=64M \
			--runtime=20 --time_based --verify_backlog=16
		tc qdisc del dev lo root
		nvme_no_recovery "$label: nvme-rdma"
	else
		notok "$label: tc qdisc add dev lo root netem $*"
		diag "$TMPD/tc"
	fi
	nvme_disconnect || rc=1
	for _ in $(seq 1 60); do
		nvme_ctrl_present || break
		sleep 0.5
	done
	nvme_ctrl_present && { echo "controller still there" >>"$TMPD/del"; rc=1; }
	{ nvme_target_down && rdma link del kiwi2 && ip link del kd0; } \
		>>"$TMPD/del" 2>&1 || rc=1
	if [ $rc -eq 0 ]; then
		ok "$label: nvme-rdma host disconnected, target, kiwi2 and kd0 removed"
	else
		notok "$label: nvme-rdma host disconnected, target, kiwi2 and kd0 removed"
		diag "$TMPD/del"
		nvme_klog 20
	fi
	echo "# $label: nvme-rdma: $((SECONDS - t0)) s"
}

# during LABEL KIND CMD...: rping -V runs while CMD changes the network
# and is judged (lib.sh rping_during_verdict): KIND keep, it must pass;
# may_break, it may fail, cleanly, with no data mismatch.  Afterwards a
# new rping must pass.
during() {
	local label=$1 kind=$2 spid cpid crc src why
	shift 2
	B timeout 120 rping -s -a $SRV -p 7175 -V -C 400 -S 16384 \
		>"$TMPD/ds" 2>&1 &
	spid=$!
	wait_port $SRV 7175
	A timeout 120 rping -c -a $SRV -p 7175 -V -C 400 -S 16384 \
		>"$TMPD/dc" 2>&1 &
	cpid=$!
	# The change must come while the rping's QP is connected (on a busy
	# host a fixed pause was not enough: the link went down before the
	# client had resolved the address, and nothing was tested).
	for _ in $(seq 1 40); do
		rdma res show qp link kiwi0/1 2>/dev/null | grep -q 'state RTS' && break
		sleep 0.5
	done
	if ! rdma res show qp link kiwi0/1 2>/dev/null | grep -q 'state RTS'; then
		notok "$label (during): rping connected before the change (no kiwi0 QP in RTS within 20 s)"
		kill_tree $cpid; kill_tree $spid
		wait $cpid $spid
		tail -n 5 "$TMPD/dc" "$TMPD/ds" | diag
		rping_test "$label (after)" $SRV 4096 50
		return
	fi
	"$@"
	wait $cpid
	crc=$?
	wait $spid
	src=$?
	if why=$(rping_during_verdict "$kind" $crc $src "$TMPD/dc" "$TMPD/ds"); then
		ok "$label (during): rping -V -C 400 -S 16384 $([ "$kind" = keep ] &&
			echo "passed" || echo "ended cleanly (client $crc, server $src), no data mismatch")"
	else
		notok "$label (during): $why"
		tail -n 5 "$TMPD/dc" "$TMPD/ds" | diag
	fi
	rping_test "$label (after)" $SRV 4096 50
}

mtu_change() {
	A ip link set kv0 mtu 9000 && B ip link set kv1 mtu 9000
	sleep 1
	A ip link set kv0 mtu 1500 && B ip link set kv1 mtu 1500
}

link_bounce() {
	A ip link set kv0 down
	sleep 2
	A ip link set kv0 up
	A ip neigh replace $SRV dev kv0 nud permanent \
		lladdr "$(B cat /sys/class/net/kv1/address)"
}

addr_bounce() {
	B ip addr del $SRV/24 dev kv1
	sleep 2
	B ip addr add $SRV/24 dev kv1
	B ip neigh replace 10.91.0.1 dev kv1 nud permanent \
		lladdr "$(A cat /sys/class/net/kv0/address)"
}

unload() {
	A rdma link del kiwi0 && B rdma link del kiwi1 && modprobe -r kiwi
}

tap_setup "two namespaces, veth, kiwi0/kiwi1, sch_netem" \
	"two namespaces, veth, kiwi0/kiwi1, sch_netem"
PERF_PIN=1
impaired "loss 1%" loss 1%
impaired "duplicate 1%" duplicate 1%
impaired "reorder 25% delay 5ms" delay 5ms reorder 25% 50%
impaired "loss+dup+reorder" delay 5ms reorder 25% 50% loss 1% duplicate 1%
nvme_impaired "loss+dup+reorder" delay 5ms reorder 25% 50% loss 1% duplicate 1%
during "MTU 1500->9000->1500 during traffic" keep mtu_change
during "kv0 down/up during traffic" may_break link_bounce
during "server address removed and re-added during traffic" may_break addr_bounce
if unload >"$TMPD/u" 2>&1; then
	ok "unload: devices deleted, module unloaded"
else
	notok "unload"
	diag "$TMPD/u"
fi
echo "# faults.sh: $((SECONDS - START)) s"
tap_end
