#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/iser.sh -- iSCSI Extensions for RDMA through kiwi, run
# inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/iser.sh
#
# Target: LIO (target_core_mod, iscsi_target_mod) with ib_isert, set up
# through configfs (what targetcli writes; targetcli-fb itself fails in
# the guest, which has no D-Bus): a ramdisk LUN behind a portal on
# kiwi0's address with iSER enabled.  Initiator: open-iscsi's iscsid and
# iscsiadm with the "iser" interface, that is the kernel's ib_iser.  Both
# are kernel consumers, and both create their rdma_cm IDs in the initial
# network namespace (isert_setup_id() and iser_connect() pass &init_net),
# so they run there, through one kiwi device on a dummy netdev, as NFS and
# NVMe over RDMA do (nfs.sh, kernel-ulp.sh).  256 MiB are written through
# the initiator's SCSI disk and read back with verification (fio, crc32c);
# then logout, the target is cleared, ib_iser, ib_isert, the target
# modules and kiwi unload, and nothing kiwi allocated is left.
# TAP 13, plan line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
ADDR=10.97.0.1
IQN=iqn.2026-11.org.kiwi:iser-test
MB=${KIWI_ISER_MB:-256}
KTEXT=
DISK=

setup() {
	need_tools iscsiadm iscsid fio || return 1
	modprobe kiwi || return 1
	KTEXT=$(kiwi_text)
	ip link add kd0 type dummy && ip addr add $ADDR/24 dev kd0 &&
		ip link set kd0 up && rdma link add kiwi0 type kiwi netdev kd0 ||
		return 1
	# sd_mod too: the guest has no udev to load it for the new disk.
	modprobe ib_iser && modprobe sd_mod || return 1
	# The LUN: a ramdisk a little larger than what fio writes.
	lio_iser_up $IQN $ADDR $((MB + 16)) || return 1
	# The initiator's daemon; the configuration written here lives
	# in the guest's tmpfs overlay only.
	mkdir -p /etc/iscsi /run/lock/iscsi &&
	echo "InitiatorName=iqn.2026-11.org.kiwi:initiator" \
		>/etc/iscsi/initiatorname.iscsi &&
	iscsid
}

login() {
	# Discovery over iSER too (a discovery session of ib_iser with
	# ib_isert; LIO's TCP listener is in kwt, where iscsid, whose
	# abstract socket is per namespace, is not).
	if timeout 60 iscsiadm -m discovery -t sendtargets -p $ADDR:3260 \
		-I iser >"$TMPD/disc" 2>&1 && grep -q "$IQN" "$TMPD/disc"; then
		ok "discovery (sendtargets over iSER) finds $IQN at $ADDR:3260"
	else
		notok "discovery (sendtargets over iSER) finds $IQN"
		diag "$TMPD/disc"
		nvme_klog 20
		return 1
	fi
	if timeout 60 iscsiadm -m node -T $IQN -p $ADDR:3260 -I iser --login \
		>"$TMPD/login" 2>&1 && DISK=$(iser_disk); then
		ok "login over iSER (-I iser): /dev/$DISK"
	else
		notok "login over iSER (-I iser)"
		{ cat "$TMPD/login"; iscsiadm -m session -P3; ls -l /sys/block; } 2>&1 | diag
		nvme_klog 30
		return 1
	fi
	# Prove the transport: the session's transport is iser, ib_iser
	# and ib_isert are in use, and kiwi carries the connection (its
	# QPs exist; a TCP session would have none).
	local qps
	qps=$(rdma resource show qp 2>/dev/null | grep -c 'link kiwi0/')
	iscsiadm -m session >"$TMPD/sess" 2>&1
	if grep -q '^iser:' "$TMPD/sess" && [ "$qps" -ge 2 ]; then
		ok "session is iSER ($(head -1 "$TMPD/sess")), $qps kiwi QPs"
	else
		notok "session is iSER, kiwi QPs (got $qps)"
		{ cat "$TMPD/sess"; rdma resource show qp; } | diag
	fi
}

logout() {
	# shellcheck disable=SC2010 # sysfs names: sessionN
	if timeout 60 iscsiadm -m node -T $IQN -p $ADDR:3260 -I iser --logout \
		>"$TMPD/logout" 2>&1 &&
	   ! ls /sys/class/iscsi_session/ 2>/dev/null | grep -q session; then
		ok "logout: session gone"
	else
		notok "logout: session gone"
		diag "$TMPD/logout"
		nvme_klog 20
	fi
}

teardown() {
	# (a logout again, for a failed run that logged in)
	timeout 60 iscsiadm -m node -u >/dev/null 2>&1
	iscsiadm -m node -o delete >/dev/null 2>&1
	pkill -x iscsid
	# iscsid must be gone before ib_iser can go (it holds the transport).
	for _ in $(seq 1 20); do pgrep -x iscsid >/dev/null || break; sleep 0.5; done
	lio_iser_down $IQN $ADDR && modprobe -r ib_iser sd_mod || return 1
	rdma link del kiwi0 && modprobe -r kiwi && ip link del kd0
}

START=$SECONDS
tap_setup "kiwi0 on a dummy netdev, LIO target with an iSER portal, iscsid" \
	"kiwi0 on a dummy netdev ($ADDR), LIO ramdisk LUN on an iSER portal, iscsid"
# kiwi0's payload counters, tx + rx (rdma statistic): both ends are on
# kiwi0, so every byte of I/O counts twice.
kiwi_bytes() {
	rdma statistic show link kiwi0/1 2>/dev/null |
		grep -oE '(tx|rx)_[a-z_]*bytes [0-9]+' | awk '{ s += $2 } END { print s + 0 }'
}

if login; then
	b0=$(kiwi_bytes)
	fio_verify "fio: $MB MiB sequential 1 MiB writes (O_DIRECT), read back and verified" \
		"/dev/$DISK" --rw=write --bs=1M --size=${MB}M --iodepth=4
	b1=$(kiwi_bytes)
	# Written and read back: at least 2 x 2 x MB through kiwi.
	if [ $((b1 - b0)) -ge $((4 * MB << 20)) ]; then
		ok "kiwi0 carried it: $(((b1 - b0) >> 20)) MiB payload (tx + rx)"
	else
		notok "kiwi0 carried it: $((b1 - b0)) bytes payload, want >= $((4 * MB)) MiB"
	fi
	fio_verify "fio: 8 MiB of random 4 KiB..64 KiB writes in the first 64 MiB (O_DIRECT), verified" \
		"/dev/$DISK" --rw=randwrite --bsrange=4k-64k --size=64M \
		--io_size=8M --iodepth=16
	logout
fi
if teardown >"$TMPD/td" 2>&1; then
	ok "teardown: target cleared, ib_iser, ib_isert, LIO and kiwi unloaded"
else
	notok "teardown: target cleared, ib_iser, ib_isert, LIO and kiwi unloaded"
	{ cat "$TMPD/td"; lsmod | grep -E 'iser|target|kiwi'; } | diag
fi
if kiwi_leak_check "$KTEXT" "$TMPD/leak"; then
	ok "after rmmod kiwi nothing kiwi allocated is left"
else
	notok "after rmmod kiwi nothing kiwi allocated is left"
fi
echo "# iser.sh: $((SECONDS - START)) s"
tap_end
