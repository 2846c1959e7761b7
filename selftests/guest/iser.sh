#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/iser.sh -- iSCSI Extensions for RDMA through kiwi, run
# inside the test guest:
#
#	selftests/vm/run --module kmod/kiwi.ko -- selftests/guest/iser.sh
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
LIO=/sys/kernel/config/target
TPG=$LIO/iscsi/$IQN/tpgt_1
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
	modprobe ib_isert && modprobe ib_iser && modprobe sd_mod || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config || return 1
	# The LUN: a ramdisk (rd_mcp), a little larger than what fio writes.
	mkdir -p $LIO/core/rd_mcp_0/kiwird &&
	echo "rd_pages=$(((MB + 16) * 256))" >$LIO/core/rd_mcp_0/kiwird/control &&
	echo 1 >$LIO/core/rd_mcp_0/kiwird/enable &&
	mkdir -p $TPG/lun/lun_0 &&
	ln -s $LIO/core/rd_mcp_0/kiwird $TPG/lun/lun_0/kiwird || return 1
	# No authentication, any initiator (demo mode), writable.
	echo 0 >$TPG/attrib/authentication &&
	echo 1 >$TPG/attrib/generate_node_acls &&
	echo 1 >$TPG/attrib/cache_dynamic_acls &&
	echo 0 >$TPG/attrib/demo_mode_write_protect || return 1
	# A portal on kiwi0's address, with iSER.  The portal directory
	# makes LIO's iSCSI/TCP listener on ADDR:3260 first; "iser" then
	# has ib_isert listen on the same address and port through rdma_cm,
	# and kiwi's iWARP listener is a TCP socket of the host's stack:
	# in one namespace the two collide ("isert_setup_id: rdma_listen()
	# failed: -98", EADDRINUSE).  LIO creates its TCP socket in the
	# network namespace of the process that makes the directory
	# (iscsit_setup_np: sock_create), ib_isert its rdma_cm ID in the
	# initial one: so the directory is made in namespace kwt, which has
	# ADDR on a dummy netdev of its own.  The TCP listener (discovery)
	# is then in kwt, the iSER one in the initial namespace.
	ip netns add kwt && ip netns exec kwt ip link set lo up &&
	ip netns exec kwt ip link add kt0 type dummy &&
	ip netns exec kwt ip addr add $ADDR/24 dev kt0 &&
	ip netns exec kwt ip link set kt0 up &&
	# (nsenter, not ip netns exec, which mounts a sysfs of its own
	# over /sys and so hides configfs)
	nsenter --net=/run/netns/kwt mkdir $TPG/np/$ADDR:3260 &&
	echo 1 >$TPG/np/$ADDR:3260/iser &&
	grep -qx 1 $TPG/np/$ADDR:3260/iser && echo 1 >$TPG/enable || return 1
	# The initiator's daemon; the configuration written here lives
	# in the guest's tmpfs overlay only.
	mkdir -p /etc/iscsi /run/lock/iscsi &&
	echo "InitiatorName=iqn.2026-11.org.kiwi:initiator" \
		>/etc/iscsi/initiatorname.iscsi &&
	iscsid
}

# The SCSI disk the iSER session brought, once it shows up (30 s): the
# one sd* whose sysfs path runs through an iSCSI session (there is no
# other SCSI disk in the guest) and whose model is LIO's ramdisk.
iser_disk() {
	local b
	for _ in $(seq 1 60); do
		for b in /sys/block/sd*; do
			[ -e "$b" ] && readlink -f "$b" | grep -q '/session[0-9]*/' &&
				grep -q RAMDISK "$b/device/model" 2>/dev/null &&
				[ -b "/dev/${b##*/}" ] || continue
			basename "$b"
			return 0
		done
		sleep 0.5
	done
	return 1
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
	echo 0 >$TPG/enable
	rm -f $TPG/lun/lun_0/kiwird
	rmdir $TPG/lun/lun_0 $TPG/np/$ADDR:3260 $TPG $LIO/iscsi/$IQN \
		$LIO/core/rd_mcp_0/kiwird $LIO/core/rd_mcp_0 || return 1
	# iscsid must be gone before ib_iser can go (it holds the transport).
	for _ in $(seq 1 20); do pgrep -x iscsid >/dev/null || break; sleep 0.5; done
	modprobe -r ib_iser ib_isert sd_mod || return 1
	modprobe -r iscsi_target_mod target_core_pscsi target_core_file \
		target_core_iblock target_core_user target_core_mod 2>/dev/null
	rdma link del kiwi0 && modprobe -r kiwi && ip link del kd0 &&
	ip netns del kwt
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
