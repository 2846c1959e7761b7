#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/twohost.sh -- kiwi between two machines: run by
# selftests/vm/pair in both guests (each its own kernel, joined by one
# virtual NIC, eth0), the same script in both roles.  b serves, a
# connects (the rev step the other way round); each prints its own TAP.
#
#   setup         the NIC up (MTU KIWI_PAIR_MTU, default 9000; b's
#                 KIWI_PAIR_MTU_B, default the same), the other guest
#                 reachable, kiwi0 on eth0 (siw0, Linux siw, in the
#                 guest KIWI_PAIR_SIW names); the line names the kernel,
#                 the NIC's driver and its offloads
# Then the steps KIWI_PAIR_STEPS lists (space or comma separated; default
# "rping perf rev imm atomic mw markers", with siw "fwd rev"), always in
# this order:
#   rping         rping -V at 64 B, 4 KiB and 64 KiB (KIWI_PAIR_COUNT
#                 verified ping-pongs, default 300)
#   perf          perftest WRITE, READ and SEND (-R), 64 KiB, checked
#                 for a figure above 0
#   fwd           b serves, a connects: rping -V at 64 KiB and
#                 ib_write_bw (the short form of rping and perf)
#   rev           a serves, b connects: the same
#   imm           RFC 7306 immediate data (build/selftests/imm_conn),
#                 rfc7306_imm on in both: b's server checks every
#                 completion, and the Immediate Data message that finds
#                 no receive draws b's TERMINATE (DDP untagged, no buffer)
#   atomic        RFC 7306 atomics (atomic_conn), rfc7306_atomics on in
#                 both: fetch-add, compare-swap, two QPs on one counter;
#                 the refused atomics draw b's TERMINATEs (RDMAP
#                 protection: access rights, base or bounds)
#   mw            memory windows (mw_conn), b's windows used by a: type 1
#                 and 2, invalidation, refused binds, with b's TERMINATEs
#                 (invalid STag, DDP tagged base or bounds); b's regions
#                 all freed when its server exits
#   markers       MPA markers (RFC 5044 4.3) asked for by one end only:
#                 b (mpa_markers=3, as responder), then a (2, as
#                 initiator); rping -V at 513 B and 64 KiB each time;
#                 each guest checks its own counters: the end that asked
#                 receives markers and sends none, the other sends them
#                 and receives none, no marker refused
#   fpdu          standard FPDUs (large_fpdu=N in both): rping -V at
#                 64 KiB, then ib_write_bw a -> b, in which a's FPDUs
#                 (tx_payload_bytes / tx_fpdus) and b's received ones
#                 must average at most the smaller MTU - 40 (the MSS TCP
#                 agreed, whichever end has the larger MTU) and more than
#                 half of it (full segments, so the bound is tested)
#   nvme          NVMe over RDMA between the machines: b's kernel NVMe
#                 target (nvmet-rdma, a memory-backed null_blk namespace)
#                 listens on its eth0 address, a's kernel host (nvme-rdma)
#                 connects; 16 MiB written and read back with O_DIRECT
#                 and compared, fio random 4..128 KiB writes with every
#                 block verified; a disconnects, b takes its target down
#   nfs           NFS 4.2 over RDMA: b's nfsd exports a tmpfs on "rdma
#                 20049", a mounts it with proto=rdma; a tree of files
#                 (1 B..16 MiB) copied there and back (SHA-256 equal, the
#                 page cache dropped between), fio O_DIRECT random 4 KiB
#                 writes verified; unmounted, b's nfsd stopped
#   kill          (last; KIWI_PAIR_KILL=0 leaves it out, the default with
#                 siw) with peer_timeout KIWI_PAIR_PEER_TIMEOUT (default
#                 10) on both: a runs ib_write_bw against b, and 6 s into
#                 the transfer b's QEMU is killed (no shutdown, no FIN,
#                 no RST).  a's client must end with an error within
#                 peer_timeout + 15 s, its QPs and endpoints gone soon
#                 after; then b boots again and rping -V between them
#                 works as before
#   teardown      rdma link del, rmmod kiwi, nothing of kiwi's left
#                 (kiwi_leak_check), in each guest still alive; in the
#                 siw guest rdma link del siw0 and rmmod siw
# With KIWI_PAIR_SIW (a or b) that guest runs Linux siw instead of kiwi
# (vm/pair gives it siw.ko): only rping, perf, fwd and rev apply; imm,
# atomic, mw, markers, fpdu, nvme, nfs and kill need kiwi at both ends and are
# refused (not ok) if asked for.  Each step's time goes to a "#" line.
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
. "$GUEST_DIR/pairlib.sh"

MTU=${KIWI_PAIR_MTU:-9000}
MTU_B=${KIWI_PAIR_MTU_B:-$MTU}
COUNT=${KIWI_PAIR_COUNT:-300}
PT=${KIWI_PAIR_PEER_TIMEOUT:-10}
SIW=${KIWI_PAIR_SIW:-}
if [ -z "$SIW" ]; then
	KILL=${KIWI_PAIR_KILL:-1}
	STEPS=" ${KIWI_PAIR_STEPS:-rping perf rev imm atomic mw markers} "
else
	KILL=${KIWI_PAIR_KILL:-0}
	STEPS=" ${KIWI_PAIR_STEPS:-fwd rev} "
fi
STEPS=${STEPS//,/ }
BIN=${KIWI_SELFTEST_BIN:-$GUEST_DIR/../../build/selftests}
SLACK=15
P=/sys/module/kiwi/parameters
T0=$SECONDS
MY_MTU=$MTU
[ "$ROLE" = b ] && MY_MTU=$MTU_B
DEV=kiwi0
[ "$ROLE" = "$SIW" ] && DEV=siw0

# dev_up: this guest's RDMA device on eth0: kiwi0, or siw0 in the
# guest KIWI_PAIR_SIW names.
dev_up() {
	if [ "$DEV" = siw0 ]; then
		modprobe siw && rdma link add siw0 type siw netdev $IFACE
	else
		kiwi_up
	fi
}

echo "TAP version 13"
if ! pair_mount; then
	notok "setup ($ROLE): the meeting place (9p tag pair) did not mount"
	tap_end
	exit 1
fi
if nic_up "$MY_MTU" && peer_reachable 120 && dev_up; then
	ok "setup ($ROLE, boot $PBOOT, Linux $(uname -r)): $(nic_info); $PEER_IP reachable; $DEV on $IFACE"
else
	notok "setup ($ROLE, boot $PBOOT, Linux $(uname -r)): NIC, peer $PEER_IP or $DEV missing"
	ip -o addr show $IFACE | diag
	tap_end
	exit 1
fi
KTEXT=$(kiwi_text)
# The other guest's device, for the names of the steps that say who
# serves whom.
pair_put dev "$DEV"
PEER_DEV=$(pair_get dev 300) || PEER_DEV='?'

# wait_listen PORT: something in this guest listens on TCP PORT (within
# 60 s).  lib.sh's wait_port looks in the kwb namespace; here there is
# none.
wait_listen() {
	for _ in $(seq 1 120); do
		ss -ltnH | awk '{ print $4 }' | grep -q ":$1\$" && return 0
		sleep 0.5
	done
	return 1
}

# who SERVER: "b's kiwi0 serves a's siw0", for a step's name.
who() {
	local c=a sdev=$PEER_DEV cdev=$DEV
	[ "$1" = a ] && c=b
	[ "$ROLE" = "$1" ] && { sdev=$DEV; cdev=$PEER_DEV; }
	echo "$1's $sdev serves $c's $cdev"
}

# rping_pair SIZE TAG [SERVER]: SERVER (default b) serves one rping -V,
# the other guest connects; each judges its own side.  With SERVER
# given, the name says who serves whom.
rping_pair() {
	local size=$1 tag=$2 srv=${3:-b} what spid
	what="rping -V -C $COUNT -S $size${3:+, $(who "$srv")}"
	if [ "$ROLE" = "$srv" ]; then
		timeout 300 rping -s -a $ME_IP -V -C "$COUNT" -S "$size" >"$TMPD/rs" 2>&1 &
		spid=$!
		wait_listen 7174 && pair_put "$tag"
		if wait $spid; then ok "$tag: $what (server)"; else notok "$tag: $what (server)"; diag "$TMPD/rs" | tail -5; fi
	else
		if ! pair_get "$tag" 300 >/dev/null; then
			notok "$tag: $what: the server never listened"
			return
		fi
		if timeout 300 rping -c -a $PEER_IP -V -C "$COUNT" -S "$size" >"$TMPD/rc" 2>&1; then
			ok "$tag: $what (client)"
		else
			notok "$tag: $what (client)"
			diag "$TMPD/rc" | tail -5
		fi
	fi
}

# perf_pair TOOL [TAG [SERVER]]: SERVER (default b) runs the perftest
# server, the other guest the client, which checks the figure is above
# 0.  TAG (default TOOL) names the step; with SERVER given, the name
# says who serves whom.
perf_pair() {
	local tool=$1 tag=${2:-$1} srv=${3:-b} row rc spid name
	name="$tool -s 65536 a -> b"
	[ -z "${3:-}" ] || name="$tag: $tool -s 65536, $(who "$srv")"
	if [ "$ROLE" = "$srv" ]; then
		timeout 300 "$tool" -R -d $DEV -F -n 2000 -s 65536 >"$TMPD/ps" 2>&1 &
		spid=$!
		wait_listen 18515 && pair_put "$tag"
		wait $spid
		pair_put "$tag.done"
	else
		pair_get "$tag" 300 >/dev/null || { notok "$name: the server never listened"; return; }
		timeout 300 "$tool" -R -d $DEV -F -n 2000 -s 65536 $PEER_IP >"$TMPD/pc" 2>&1
		rc=$?
		row=$(grep -E '^ +65536 +[0-9]+ ' "$TMPD/pc" | tail -1)
		pair_get "$tag.done" 120 >/dev/null
		if [ $rc -eq 0 ] && [ -n "$row" ] && awk '{ exit !($4 > 0 || $5 > 0) }' <<<"$row"; then
			ok "$name: $(awk '{ print $4 }' <<<"$row") MB/s average"
		else
			notok "$name (rc $rc)"
			diag "$TMPD/pc" | tail -8
		fi
	fi
}

# dev_stat NAME: one of this guest's device counters (rdma statistic).
dev_stat() {
	rdma statistic show link $DEV/1 |
		awk -v c="$1" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }'
}

# verbs_pair PROG PORT TITLE: b serves PROG (-s), a runs its client
# (-c); each judges its own side.  b marks the kernel log first
# (klog_mark), for term_check.  Returns 1 if PROG is not built or b's
# server never listened (nothing ran).
verbs_pair() {
	local prog=$1 bin=$BIN/$1 spid rc
	if [ ! -x "$bin" ]; then
		notok "$prog: $bin not built"
		return 1
	fi
	if [ "$ROLE" = b ]; then
		klog_mark
		timeout 120 "$bin" -s $ME_IP "$2" >"$TMPD/vs" 2>&1 &
		spid=$!
		wait_listen "$2" && pair_put "$prog" || { kill_tree $spid; notok "$prog: $3: the server never listened"; return 1; }
		wait $spid
		rc=$?
		if [ $rc -eq 0 ]; then ok "$prog: $3 (server)"; else notok "$prog: $3 (server, exit $rc)"; fi
		diag "$TMPD/vs" | tail -20
	else
		pair_get "$prog" 300 >/dev/null || { notok "$prog: $3: b's server never listened"; return 1; }
		timeout 100 "$bin" -c $PEER_IP "$2" >"$TMPD/vc" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then ok "$prog: $3 (client)"; else notok "$prog: $3 (client, exit $rc)"; fi
		diag "$TMPD/vc" | tail -20
	fi
	return 0
}

# term_check NAME WHAT: (b) since verbs_pair's klog_mark, this kiwi
# logged "QP N: terminating stream: WHAT" and traced QP N sending that
# TERMINATE (lib.sh term_found): it went out to the other machine.
term_check() {
	klog_since "$TMPD/klog" "$TMPD/ktrace"
	if term_found "$2" "$TMPD/klog" "$TMPD/ktrace"; then
		ok "$1 (QP $TERM_QPN)"
	else
		notok "$1"
		grep -h "terminating stream\|TERMINATE" "$TMPD/klog" "$TMPD/ktrace" | tail -n 20 | diag
	fi
}

imm_step() {
	echo Y >$P/rfc7306_imm
	verbs_pair imm_conn 7177 "WRITE/SEND with immediate data, solicited, 20 in order, zero-length, one with no receive" &&
		[ "$ROLE" = b ] &&
		term_check "imm_conn: Immediate Data with no receive -> b's TERMINATE (DDP untagged, no buffer)" \
			"op 12 layer 1 type 2 code 0x02"
	echo N >$P/rfc7306_imm
}

atomic_step() {
	local what
	echo Y >$P/rfc7306_atomics
	if verbs_pair atomic_conn 7179 "fetch-add, cmp-swap hit/miss, 2 QPs x 500 on one counter, refusals" &&
	   [ "$ROLE" = b ]; then
		for what in "access:0x02" "bounds:0x01"; do
			term_check "atomic_conn: refused atomic (${what%:*}) -> b's TERMINATE (RDMAP protection ${what#*:})" \
				"op 10 layer 0 type 1 code ${what#*:}"
		done
	fi
	echo N >$P/rfc7306_atomics
}

mw_step() {
	local what
	verbs_pair mw_conn 7181 "type 1/2 windows, zero-based, LOCAL_INV, SEND with invalidate, refused binds, QP-bound type 2" &&
		[ "$ROLE" = b ] || return
	# The server exited with two windows bound in a region.
	if [ -z "$(rdma res show mr dev kiwi0 2>&1)" ]; then
		ok "mw_conn: b's server exited with bound windows; they and their region are freed"
	else
		notok "mw_conn: b's server exited with bound windows; they and their region are freed"
		rdma res show mr dev kiwi0 2>&1 | diag
	fi
	for what in "dead STag READ:op 1 layer 0 type 1 code 0x00" \
		    "WRITE beyond the window:op 0 layer 1 type 1 code 0x01"; do
		term_check "mw_conn: ${what%%:*} -> b's TERMINATE (${what#*:})" "${what#*:}"
	done
}

# markers_step: see the header.  Each guest judges its own counters.
markers_step() {
	local asker mode s tx rx dtx drx want good
	for asker in b a; do
		mode=0
		[ "$ROLE" = "$asker" ] && mode=$([ "$ROLE" = b ] && echo 3 || echo 2)
		echo $mode >$P/mpa_markers
		tx=$(dev_stat tx_markers) rx=$(dev_stat rx_markers)
		for s in 513 65535; do
			rping_pair $s "markers_${asker}_$s" b
		done
		dtx=$(($(dev_stat tx_markers) - tx)) drx=$(($(dev_stat rx_markers) - rx))
		good=0
		if [ "$ROLE" = "$asker" ]; then
			want="received, none sent"
			[ $drx -gt 0 ] && [ $dtx -eq 0 ] && good=1
		else
			want="sent, none received"
			[ $dtx -gt 0 ] && [ $drx -eq 0 ] && good=1
		fi
		if [ $good = 1 ] && [ "$(dev_stat rx_marker_errors)" = 0 ]; then
			ok "markers_$asker: $asker asked (mpa_markers on $asker only): $ROLE's markers $want ($dtx sent, $drx received), none refused"
		else
			notok "markers_$asker: $asker asked (mpa_markers on $asker only): want $ROLE's markers $want, none refused ($dtx sent, $drx received, $(dev_stat rx_marker_errors) refused)"
		fi
	done
	echo 0 >$P/mpa_markers
}

# fpdu_step: see the header.  a judges what it sent, b what it received.
fpdu_step() {
	local max=$(((MTU < MTU_B ? MTU : MTU_B) - 40)) dir=tx n0 b0 n b avg
	echo N >$P/large_fpdu
	rping_pair 65535 fpdu_rping b
	[ "$ROLE" = b ] && dir=rx
	n0=$(dev_stat ${dir}_fpdus) b0=$(dev_stat ${dir}_payload_bytes)
	perf_pair ib_write_bw fpdu_ib_write_bw b
	n=$(($(dev_stat ${dir}_fpdus) - n0)) b=$(($(dev_stat ${dir}_payload_bytes) - b0))
	avg=$((n > 0 ? b / n : 0))
	if [ $n -gt 0 ] && [ $avg -le $max ] && [ $((avg * 2)) -gt $max ]; then
		ok "fpdu: large_fpdu=N, MTU a $MTU b $MTU_B: $ROLE's ${dir} FPDUs in ib_write_bw average $avg payload bytes ($n FPDUs), within the MSS bound $max"
	else
		notok "fpdu: large_fpdu=N, MTU a $MTU b $MTU_B: $ROLE's ${dir} FPDUs in ib_write_bw average $avg payload bytes ($n FPDUs), want <= $max and > $((max / 2))"
	fi
	echo Y >$P/large_fpdu
}

# nvme_step: see the header.  b serves the target, a judges the data.
# shellcheck disable=SC2034 # NVME_ADDR: read by lib.sh's nvme_* functions
nvme_step() {
	NVME_ADDR=$PEER_IP
	if [ "$ROLE" = b ]; then
		NVME_ADDR=$ME_IP
		if nvme_target_up >"$TMPD/tgt" 2>&1; then
			ok "nvme: b's nvmet-rdma target on $ME_IP:4420 ($DEV, Linux $(uname -r))"
			pair_put nvme up
		else
			notok "nvme: b's nvmet-rdma target on $ME_IP:4420"
			diag "$TMPD/tgt"
			pair_put nvme down
			return
		fi
		pair_get nvme.done 600 >/dev/null || notok "nvme: a never finished"
		if nvme_target_down >"$TMPD/tgt" 2>&1; then
			ok "nvme: b's target removed, nvmet-rdma unloaded"
		else
			notok "nvme: b's target removed, nvmet-rdma unloaded"
			diag "$TMPD/tgt"
		fi
		return
	fi
	if [ "$(pair_get nvme 300)" != up ]; then
		notok "nvme: b's target never came up"
		pair_put nvme.done
		return
	fi
	modprobe nvme-rdma
	if nvme_connect; then
		ok "nvme: a's nvme-rdma host connected to $PEER_IP:4420 over $DEV: /dev/$NVME_DEV ($(cat "$(nvme_ctrl)/queue_count" 2>/dev/null || echo "?") queues with the admin queue)"
		head -c $((16 << 20)) /dev/urandom >"$TMPD/data"
		if dd if="$TMPD/data" of="/dev/$NVME_DEV" bs=1M oflag=direct status=none &&
		   dd if="/dev/$NVME_DEV" of="$TMPD/back" bs=1M count=16 iflag=direct status=none &&
		   cmp -s "$TMPD/data" "$TMPD/back"; then
			ok "nvme: 16 MiB written to b's namespace and read back intact (O_DIRECT, 1 MiB I/Os)"
		else
			notok "nvme: 16 MiB written to b's namespace and read back intact"
			nvme_klog 20
		fi
		nvme_fio "nvme: fio random 4 KiB..128 KiB writes across the machines, every block verified" \
			--rw=randwrite --bsrange=4k-128k --iodepth=16 --size=32M
		nvme_no_recovery "nvme"
		if nvme_disconnect && ! nvme_ctrl_present; then
			ok "nvme: a disconnected"
		else
			notok "nvme: a disconnected"
			diag "$TMPD/del"
		fi
		modprobe -r nvme-rdma
	else
		notok "nvme: a's nvme-rdma host connected to $PEER_IP:4420"
		diag "$TMPD/conn"
		nvme_klog 20
	fi
	rm -f "$TMPD/data" "$TMPD/back"
	pair_put nvme.done
}

# nfsd_up DIR: (b) nfsd exporting a tmpfs at DIR as the NFSv4 root, on
# "rdma 20049"; a 10 s grace period, the least nfsd takes.
nfsd_up() {
	need_tools rpcbind rpc.nfsd rpc.mountd exportfs &&
	modprobe nfsd && modprobe rpcrdma && mkdir -p "$1" &&
	mount -t tmpfs -o size=200M tmpfs "$1" &&
	echo "$1 *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	echo 10 >/proc/fs/nfsd/nfsv4gracetime && exportfs -ra &&
	rpcbind -w && rpc.mountd && rpc.nfsd 4 &&
	echo "rdma 20049" >/proc/fs/nfsd/portlist &&
	grep -q "^rdma 20049" /proc/fs/nfsd/portlist
}

# nfs_step: see the header.  b serves, a judges the data.
nfs_step() {
	local exp=/srv/kiwi-nfs mnt=/mnt/kiwi-nfs n s i
	if [ "$ROLE" = b ]; then
		if nfsd_up $exp >"$TMPD/nfsd" 2>&1; then
			ok "nfs: b's nfsd exports a tmpfs on rdma 20049 ($DEV, Linux $(uname -r))"
			pair_put nfs up
		else
			notok "nfs: b's nfsd exports a tmpfs on rdma 20049"
			diag "$TMPD/nfsd"
			pair_put nfs down
		fi
		pair_get nfs.done 600 >/dev/null || notok "nfs: a never finished"
		{
			rpc.nfsd 0
			exportfs -ua
			pkill -x rpc.mountd
			pkill -x rpcbind
			umount /proc/fs/nfsd $exp
		} >"$TMPD/nfsd" 2>&1
		for _ in $(seq 1 20); do
			modprobe -r rpcrdma nfsd 2>/dev/null && break
			sleep 0.5
		done
		if lsmod | grep -q '^rpcrdma '; then
			notok "nfs: b's nfsd stopped and rpcrdma unloaded"
		else
			ok "nfs: b's nfsd stopped and rpcrdma unloaded"
		fi
		return
	fi
	if [ "$(pair_get nfs 300)" != up ]; then
		notok "nfs: b's server never came up"
		pair_put nfs.done
		return
	fi
	modprobe rpcrdma
	mkdir -p $mnt "$TMPD/tree/sub"
	if timeout 60 mount -t nfs -o rdma,port=20049,vers=4.2 "$PEER_IP:/" $mnt >"$TMPD/mount" 2>&1 &&
	   grep " $mnt nfs" /proc/mounts | grep -q ",proto=rdma,"; then
		ok "nfs: a mounted b's export, NFS 4.2 over RDMA ($(awk -v m=$mnt '$2 == m { print $4 }' /proc/mounts |
			tr ',' '\n' | grep -E '^(vers|rsize|wsize|proto|addr)=' | paste -sd,))"
		i=0
		for s in 1 511 4096 65537 1048576 3000001 16777216; do
			head -c $s /dev/urandom >"$TMPD/tree/f$i"
			head -c $((s / 3 + 1)) /dev/urandom >"$TMPD/tree/sub/g$i"
			i=$((i + 1))
		done
		n=$(find "$TMPD/tree" -type f | wc -l)
		rm -rf "$TMPD/back"
		if cp -r "$TMPD/tree" $mnt/tree && sync && echo 3 >/proc/sys/vm/drop_caches &&
		   cp -r $mnt/tree "$TMPD/back" &&
		   [ "$(cd "$TMPD/tree" && find . -type f | sort | xargs sha256sum)" = \
		     "$(cd "$TMPD/back" && find . -type f | sort | xargs sha256sum)" ]; then
			ok "nfs: $n files (1 B..16 MiB) copied to b and back, SHA-256 equal"
		else
			notok "nfs: $n files copied to b and back, SHA-256 equal"
			nvme_klog 20
		fi
		fio_verify "nfs: fio O_DIRECT random 4 KiB writes on b's export, every block verified" \
			"$mnt/fio4k" --rw=randwrite --bs=4k --size=8M --iodepth=8
		if umount $mnt; then ok "nfs: unmounted"; else notok "nfs: unmounted"; fi
	else
		notok "nfs: a mounted b's export, NFS 4.2 over RDMA"
		{ cat "$TMPD/mount"; grep nfs /proc/mounts; } | diag
		nvme_klog 20
	fi
	rm -rf "$TMPD/tree" "$TMPD/back"
	for _ in $(seq 1 20); do
		modprobe -r rpcrdma 2>/dev/null && break
		sleep 0.5
	done
	pair_put nfs.done
}

# kill_test: see the header.  Only a judges; b is killed.
kill_test() {
	echo "$PT" >$P/peer_timeout
	if [ "$ROLE" = b ]; then
		timeout 300 ib_write_bw -R -d kiwi0 -F -D 120 -s 65536 >"$TMPD/ks" 2>&1 &
		wait_listen 18515 && pair_put kill
		# This guest dies here, killed by the host.
		wait
		return
	fi
	local cpid t0 ms qps eps why=
	pair_get kill 300 >/dev/null || { notok "kill: b's server never listened"; return; }
	timeout 300 ib_write_bw -R -d kiwi0 -F -D 120 -s 65536 $PEER_IP >"$TMPD/kc" 2>&1 &
	cpid=$!
	sleep 6
	kill -0 $cpid 2>/dev/null || why=" (the transfer had ended before the kill)"
	host_do "kill b" || why="$why (the host did not kill b)"
	t0=$(date +%s%N)
	for _ in $(seq 1 $(((PT + SLACK + 30) * 4))); do
		kill -0 $cpid 2>/dev/null || break
		sleep 0.25
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	if kill -0 $cpid 2>/dev/null; then
		why="$why (ib_write_bw still running ${ms} ms after the kill)"
		kill_tree $cpid KILL
	elif wait $cpid; then
		why="$why (ib_write_bw exited 0)"
	fi
	[ $ms -le $(((PT + SLACK) * 1000)) ] || why="$why (bound $(((PT + SLACK) * 1000)) ms)"
	for _ in $(seq 1 40); do
		qps=$(rdma resource show qp 2>/dev/null | grep -c 'link kiwi0/')
		eps=$(cat $P/cm_endpoints)
		[ "$qps" -eq 0 ] && [ "$eps" -eq 0 ] && break
		sleep 0.5
	done
	[ "$qps" -eq 0 ] && [ "$eps" -eq 0 ] || why="$why (left: $qps QPs, $eps endpoints)"
	if [ -z "$why" ]; then
		ok "kill: b killed 6 s into ib_write_bw; a's transfer failed ${ms} ms later (peer_timeout $PT s, bound $(((PT + SLACK) * 1000)) ms), no QP or endpoint left"
	else
		notok "kill: b killed 6 s into ib_write_bw, peer_timeout $PT s$why"
		diag "$TMPD/kc" | tail -8
	fi
	host_do "boot b" || notok "kill: the host did not boot b again"
}

teardown() {
	if [ "$DEV" = siw0 ]; then
		if rdma link del siw0 && rmmod siw; then
			ok "teardown: rdma link del siw0, rmmod siw"
		else
			notok "teardown: rdma link del siw0 / rmmod siw failed"
		fi
	else
		rdma link del kiwi0 && rmmod kiwi || notok "teardown: rdma link del / rmmod kiwi failed"
		no_leaks_verdict "$KTEXT"
	fi
	echo "# twohost.sh ($ROLE, boot $PBOOT): $((SECONDS - T0)) s"
}

# step NAME: the step NAME, if KIWI_PAIR_STEPS asks for it; its time
# as a "#" line.
step() {
	local t=$SECONDS size tool
	[[ $STEPS == *" $1 "* ]] || return 0
	case $1 in
	rping)
		for size in 64 4096 65535; do
			rping_pair $size "rping_$size"
		done ;;
	perf)
		for tool in ib_write_bw ib_read_bw ib_send_bw; do
			perf_pair $tool
		done ;;
	fwd|rev)
		local srv=b
		[ "$1" = rev ] && srv=a
		rping_pair 65535 "$1_rping_65535" $srv
		perf_pair ib_write_bw "$1_ib_write_bw" $srv ;;
	*) "$1_step" ;;
	esac
	echo "# step $1: $((SECONDS - t)) s"
}

if [ "$PBOOT" = 2 ]; then
	# b, booted again after the kill: the same setup works as before.
	rping_pair 4096 again
	teardown
	tap_end
	exit
fi
# Steps that do not exist, and those that need kiwi at both ends.
for s in $STEPS; do
	[[ " rping perf fwd rev imm atomic mw markers fpdu nvme nfs " == *" $s "* ]] ||
		notok "step $s: no such step (KIWI_PAIR_STEPS)"
done
case $SIW in
''|a|b) ;;
*) notok "KIWI_PAIR_SIW=$SIW: a, b or nothing" ;;
esac
if [ -n "$SIW" ]; then
	for s in imm atomic mw markers fpdu nvme nfs; do
		[[ $STEPS != *" $s "* ]] || notok "step $s: needs kiwi in both guests, not siw in $SIW"
		STEPS=${STEPS// $s / }
	done
	[ "$KILL" != 1 ] || notok "step kill: needs kiwi in both guests, not siw in $SIW"
	KILL=0
fi
for s in rping perf fwd rev imm atomic mw markers fpdu nvme nfs; do
	step $s
done
if [ "$KILL" = 1 ]; then
	kill_test
	[ "$ROLE" = a ] && rping_pair 4096 again
fi
teardown
tap_end
