#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/twohost.sh -- kiwi between two machines: run by
# selftests/vm/pair.sh in both guests (each its own kernel, joined by one
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
#   iser          iSER: b's LIO target (ib_isert) exports a 96 MiB ramdisk
#                 LUN on an iSER portal at its eth0 address, a's open-iscsi
#                 initiator (ib_iser) discovers it and logs in over iSER;
#                 64 MiB written and read back verified (fio, crc32c),
#                 random writes verified, logout; b clears its target
#   link          the link taken down mid-transfer and brought back: a
#                 runs ib_write_bw -D 16 against b; 4 s in, a's NIC loses
#                 carrier (QEMU set_link) for 6 s; the transfer must end
#                 normally with a figure above 0 (TCP resends what the
#                 outage lost; peer_timeout is far longer), and rping -V
#                 between them works after it
#   netem         a bad network on a's side: netem on a's eth0 (delay 1 ms
#                 +- 1 ms, 1% loss, 1% duplication, 10% reordering) in
#                 both directions' worth of traffic: rping -V at 64 KiB
#                 both ways and ib_write_bw a -> b, the data verified;
#                 netem removed after
#   offload       the same traffic with the NIC's offloads off in both
#                 guests (ethtool -K: TSO, GSO, GRO and TX checksums; what
#                 the driver lets change): rping -V at 64 KiB and
#                 ib_write_bw a -> b; the offloads restored after
#   kill          (last; KIWI_PAIR_KILL=0 leaves it out, the default with
#                 siw) with peer_timeout KIWI_PAIR_PEER_TIMEOUT (default
#                 10) on both, b's QEMU killed (no shutdown, no FIN, no
#                 RST) 6 s into traffic, then booted again.  What runs
#                 when b dies, KIWI_PAIR_KILL:
#                   1, write  a's ib_write_bw to b's server
#                   read      a's ib_read_bw from b's server (a's READs
#                             outstanding when b dies)
#                   nvme      a's nvme-rdma host runs fio (verify) on
#                             b's nvmet-rdma target, whose namespace is
#                             on a disk that outlives b (a loop device
#                             over an image in the host directory)
#                   nfs       a runs fio (verify) on a hard NFS 4.2
#                             mount over RDMA of b's export, which is
#                             on a disk that outlives b (an ext4 image
#                             in the host directory, nfsd's client
#                             records on it too)
#                 For write and read, a's client must end with an error
#                 within peer_timeout + 15 s, its QPs and endpoints gone
#                 soon after.  For nvme, a's controller must leave "live"
#                 (keep-alive or a queue's QP failed) within the same
#                 bound; when b
#                 is up again with its target, the controller reconnects
#                 by itself and fio finishes with every block verified
#                 (the I/O requeued across the outage); then a
#                 disconnects.  For nfs, the RPC transport's QP must
#                 leave RTS within the same bound; when b is up again
#                 serving the same disk, the client reclaims its state
#                 in nfsd's grace period and fio finishes with every
#                 block verified; a file written after reads back
#                 equal; a unmounts.  After each, rping -V between them
#                 works as before
#   teardown      rdma link del, rmmod kiwi, nothing of kiwi's left
#                 (kiwi_leak_check), in each guest still alive; in the
#                 siw guest rdma link del siw0 and rmmod siw
# With KIWI_PAIR_SIW (a or b) that guest runs Linux siw instead of kiwi
# (vm/pair.sh gives it siw.ko): only rping, perf, fwd and rev apply; imm,
# atomic, mw, markers, fpdu, nvme, nfs, iser and kill need kiwi at both ends and are
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
	[ "$KILL" = 1 ] && KILL='write'
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

# b_serves STEP UP WHAT DOWN WHAT_DOWN: (b) the serving half of STEP:
# runs UP (ok or not ok "STEP: WHAT"), tells a "up" or "down", waits for
# a's "STEP.done", then runs DOWN (ok or not ok "STEP: WHAT_DOWN").
b_serves() {
	if $2 >"$TMPD/$1" 2>&1; then
		ok "$1: $3"
		pair_put "$1" up
	else
		notok "$1: $3"
		diag "$TMPD/$1"
		pair_put "$1" down
	fi
	pair_get "$1.done" 600 >/dev/null || notok "$1: a never finished"
	if $4 >"$TMPD/$1" 2>&1; then
		ok "$1: $5"
	else
		notok "$1: $5"
		diag "$TMPD/$1"
	fi
}

# a_served STEP: (a) b's side of STEP came up; if not, not ok and a
# tells b it is done, non-zero.
a_served() {
	[ "$(pair_get "$1" 300)" = up ] && return 0
	notok "$1: b's side never came up"
	pair_put "$1.done"
	return 1
}

# nvme_step: see the header.  b serves the target, a judges the data.
# shellcheck disable=SC2034 # NVME_ADDR: read by lib.sh's nvme_* functions
nvme_step() {
	NVME_ADDR=$PEER_IP
	if [ "$ROLE" = b ]; then
		NVME_ADDR=$ME_IP
		b_serves nvme nvme_target_up \
			"b's nvmet-rdma target on $ME_IP:4420 ($DEV, Linux $(uname -r))" \
			nvme_target_down "b's target removed, nvmet-rdma unloaded"
		return
	fi
	a_served nvme || return
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

# iSER: b's LIO target (lib.sh's lio_iser_up, as iser.sh makes it): a
# 96 MiB ramdisk LUN behind a portal at b's eth0 address with iSER on.
ISER_IQN=iqn.2026-11.org.kiwi:iser-2host
iser_up() { lio_iser_up $ISER_IQN "$ME_IP" 96; }
iser_down() { lio_iser_down $ISER_IQN "$ME_IP"; }

# iser_step: see the header.  b serves the target, a judges the data.
iser_step() {
	local disk qps
	if [ "$ROLE" = b ]; then
		b_serves iser iser_up \
			"b's LIO target with an iSER portal at $ME_IP:3260 ($DEV, Linux $(uname -r))" \
			iser_down "b's target cleared, ib_isert and LIO unloaded"
		return
	fi
	a_served iser || return
	if ! need_tools iscsiadm iscsid fio >"$TMPD/iser" 2>&1 ||
	   ! modprobe ib_iser || ! modprobe sd_mod; then
		notok "iser: a's initiator (open-iscsi, ib_iser)"
		diag "$TMPD/iser"
		pair_put iser.done
		return
	fi
	mkdir -p /etc/iscsi /run/lock/iscsi
	echo "InitiatorName=iqn.2026-11.org.kiwi:initiator-a" >/etc/iscsi/initiatorname.iscsi
	iscsid
	if timeout 60 iscsiadm -m discovery -t sendtargets -p "$PEER_IP:3260" -I iser \
		>"$TMPD/disc" 2>&1 && grep -q "$ISER_IQN" "$TMPD/disc" &&
	   timeout 60 iscsiadm -m node -T $ISER_IQN -p "$PEER_IP:3260" -I iser --login \
		>"$TMPD/login" 2>&1; then
		disk=$(iser_disk)
		qps=$(rdma resource show qp 2>/dev/null | grep -c 'link kiwi0/')
		if [ -n "$disk" ] && iscsiadm -m session 2>/dev/null | grep -q '^iser:' && [ "$qps" -ge 1 ]; then
			ok "iser: a discovered b's target and logged in over iSER: /dev/$disk, $qps kiwi QPs"
			fio_verify "iser: 64 MiB sequential 1 MiB writes to b's LUN (O_DIRECT), read back and verified" \
				"/dev/$disk" --rw=write --bs=1M --size=64M --iodepth=4
			fio_verify "iser: 8 MiB of random 4 KiB..64 KiB writes (O_DIRECT), verified" \
				"/dev/$disk" --rw=randwrite --bsrange=4k-64k --size=64M \
				--io_size=8M --iodepth=16
		else
			notok "iser: a's session is iSER with a disk (disk '${disk:-none}', $qps kiwi QPs)"
			{ iscsiadm -m session; ls /sys/block; } 2>&1 | diag
		fi
		if timeout 60 iscsiadm -m node -T $ISER_IQN -p "$PEER_IP:3260" -I iser --logout \
			>"$TMPD/logout" 2>&1; then
			ok "iser: logged out"
		else
			notok "iser: logged out"
			diag "$TMPD/logout"
		fi
	else
		notok "iser: a discovered b's target and logged in over iSER"
		cat "$TMPD/disc" "$TMPD/login" 2>/dev/null | diag
		nvme_klog 20
	fi
	iscsiadm -m node -o delete >/dev/null 2>&1
	pkill -x iscsid
	for _ in $(seq 1 20); do pgrep -x iscsid >/dev/null || break; sleep 0.5; done
	modprobe -r ib_iser sd_mod 2>/dev/null
	pair_put iser.done
}

# nfsd_up: (b) nfsd exporting NFS_EXP as the NFSv4 root, on "rdma
# 20049": a tmpfs mounted there, unless nfs_disk_up mounted the kill
# test's disk; a grace period of NFS_GRACE s (default 10, the least nfsd
# takes).
NFS_EXP=/srv/kiwi-nfs
nfsd_up() {
	need_tools rpcbind rpc.nfsd rpc.mountd exportfs &&
	modprobe nfsd && modprobe rpcrdma && mkdir -p $NFS_EXP &&
	{ mountpoint -q $NFS_EXP || mount -t tmpfs -o size=200M tmpfs $NFS_EXP; } &&
	echo "$NFS_EXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	echo "${NFS_GRACE:-10}" >/proc/fs/nfsd/nfsv4gracetime && exportfs -ra &&
	rpcbind -w && rpc.mountd && rpc.nfsd 4 &&
	echo "rdma 20049" >/proc/fs/nfsd/portlist &&
	grep -q "^rdma 20049" /proc/fs/nfsd/portlist
}

# nfsd_down: (b) nfsd stopped, the export gone, rpcrdma and nfsd
# unloaded (within 10 s: the last transports go asynchronously).
nfsd_down() {
	rpc.nfsd 0
	exportfs -ua
	pkill -x rpc.mountd
	pkill -x rpcbind
	! mountpoint -q /var/lib/nfs || umount /var/lib/nfs
	umount /proc/fs/nfsd $NFS_EXP
	for _ in $(seq 1 20); do
		modprobe -r rpcrdma nfsd 2>/dev/null && break
		sleep 0.5
	done
	! lsmod | grep -q '^rpcrdma '
}

# nvme_disk_up: (b) the NVMe kill test's namespace must outlive b, as a
# disk does (a RAM disk comes back empty, and fio then reads zeros where
# it wrote before the kill): a loop device over an image in the meeting
# directory (a host file; made on b's first boot) as NVME_BACKING.
nvme_disk_up() {
	local img=$PD/nvme-kill.img
	need_tools losetup && modprobe loop || return 1
	if [ "$PBOOT" = 1 ]; then
		rm -f "$img"
		truncate -s 128M "$img" || return 1
	fi
	# shellcheck disable=SC2034 # read by lib.sh's nvme_target_up
	NVME_BACKING=$(losetup -f --show "$img")
}

# nfs_disk_up: (b) the NFS kill test's export must outlive b, as a
# server's disk does: an ext4 image in the meeting directory (a host
# file; made on b's first boot), loop-mounted at NFS_EXP, and nfsd's
# state directory on it too (/var/lib/nfs: the client records a
# rebooted nfsd needs before it lets its clients reclaim their opens).
nfs_disk_up() {
	local img=$PD/nfs-kill.img dev
	need_tools mkfs.ext4 losetup && modprobe loop || return 1
	if [ "$PBOOT" = 1 ]; then
		rm -f "$img"
		truncate -s 256M "$img" && mkfs.ext4 -q -F "$img" || return 1
	fi
	dev=$(losetup -f --show "$img") && mkdir -p $NFS_EXP &&
	mount "$dev" $NFS_EXP || return 1
	if [ "$PBOOT" = 1 ]; then
		mkdir -p $NFS_EXP/.nfsd && cp -a /var/lib/nfs/. $NFS_EXP/.nfsd/ &&
		mkdir -p $NFS_EXP/.nfsd/v4recovery $NFS_EXP/.nfsd/nfsdcltrack || return 1
	fi
	mount --bind $NFS_EXP/.nfsd /var/lib/nfs
}

# nfs_disk_down: (b) the image detached (after nfsd_down unmounted it).
nfs_disk_down() { losetup -D; }

# nfs_step: see the header.  b serves, a judges the data.
nfs_step() {
	local mnt=/mnt/kiwi-nfs n s i
	if [ "$ROLE" = b ]; then
		b_serves nfs nfsd_up \
			"b's nfsd exports a tmpfs on rdma 20049 ($DEV, Linux $(uname -r))" \
			nfsd_down "b's nfsd stopped and rpcrdma unloaded"
		return
	fi
	a_served nfs || return
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

# link_step: see the header.  a takes its own link down; each side
# judges its own end of the transfer.
link_step() {
	local cpid rc row
	if [ "$ROLE" = b ]; then
		timeout 120 ib_write_bw -R -d kiwi0 -F -D 16 -s 65536 >"$TMPD/ls" 2>&1 &
		cpid=$!
		wait_listen 18515 && pair_put link
		if wait $cpid; then
			ok "link: b's ib_write_bw server across a's 6 s link outage"
		else
			notok "link: b's ib_write_bw server across a's 6 s link outage"
			diag "$TMPD/ls" | tail -5
		fi
		pair_put link.done
	else
		pair_get link 300 >/dev/null || { notok "link: b's server never listened"; return; }
		timeout 120 ib_write_bw -R -d kiwi0 -F -D 16 -s 65536 $PEER_IP >"$TMPD/lc" 2>&1 &
		cpid=$!
		sleep 4
		host_do "link a off" || notok "link: the host did not take a's link down"
		sleep 6
		host_do "link a on" || notok "link: the host did not bring a's link up"
		wait $cpid
		rc=$?
		row=$(grep -E '^ +65536 +[0-9]+ ' "$TMPD/lc" | tail -1)
		pair_get link.done 120 >/dev/null
		if [ $rc -eq 0 ] && [ -n "$row" ] && awk '{ exit !($4 > 0) }' <<<"$row"; then
			ok "link: a's ib_write_bw -D 16 across a 6 s carrier loss on a's NIC: $(awk '{ print $4 }' <<<"$row") MB/s average"
		else
			notok "link: a's ib_write_bw -D 16 across a 6 s carrier loss on a's NIC (rc $rc)"
			diag "$TMPD/lc" | tail -8
		fi
	fi
	rping_pair 65535 link_after
}

# netem_step: see the header.
netem_step() {
	local q=0
	if [ "$ROLE" = a ]; then
		if tc qdisc add dev $IFACE root netem delay 1ms 1ms loss 1% \
			duplicate 1% reorder 10% 50% >"$TMPD/tc" 2>&1; then
			q=1
		else
			notok "netem: on a's $IFACE"
			diag "$TMPD/tc"
		fi
	fi
	rping_pair 65535 netem_rping_ab b
	rping_pair 65535 netem_rping_ba a
	perf_pair ib_write_bw netem_ib_write_bw b
	[ $q = 0 ] || tc qdisc del dev $IFACE root
}

# offloads_on: which of eth0's TSO, GSO, GRO and TX checksums are on
# and changeable ("[fixed]" ones are the driver's business).
offloads_on() {
	ethtool -k $IFACE 2>/dev/null |
		awk -F': ' '/^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|tx-checksumming):/ &&
			$2 ~ /^on/ && $2 !~ /fixed/ { printf "%s%s", (n++ ? "," : ""), $1 }'
}

# offload_step: see the header.  Each guest turns its own offloads off
# and says which were on (the line names them).
offload_step() {
	local was left
	was=$(offloads_on)
	ethtool -K $IFACE tso off gso off gro off tx off >"$TMPD/eth" 2>&1
	left=$(offloads_on)
	pair_put offload
	pair_get offload 120 >/dev/null
	rping_pair 65535 offload_rping b
	perf_pair ib_write_bw offload_ib_write_bw b
	if [ -z "$left" ] && [ "$(offloads_on)" = "$left" ]; then
		ok "offload: $ROLE's TSO, GSO, GRO and TX checksums off for the traffic above (were on: ${was:-none})"
	else
		notok "offload: $ROLE's TSO, GSO, GRO and TX checksums off for the traffic above (still on: $left $(offloads_on))"
		diag "$TMPD/eth"
	fi
	ethtool -K $IFACE tso on gso on gro on tx on >/dev/null 2>&1
	pair_put offload.done
	pair_get offload.done 120 >/dev/null
}

# a_fails_within PID BOUND_MS: (a) wait for PID to end, at most
# BOUND_MS + 30 s; prints the ms it took; 1 if it never ended (then it
# is killed).
a_fails_within() {
	local t0 ms
	t0=$(date +%s%N)
	for _ in $(seq 1 $((($2 / 1000 + 30) * 4))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.25
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo $ms
	if kill -0 "$1" 2>/dev/null; then
		kill_tree "$1" KILL
		return 1
	fi
}

# kiwi_gone: (a) no kiwi QP and no CM endpoint left (within 20 s).
kiwi_gone() {
	local qps eps
	for _ in $(seq 1 40); do
		qps=$(rdma resource show qp 2>/dev/null | grep -c 'link kiwi0/')
		eps=$(cat $P/cm_endpoints)
		[ "$qps" -eq 0 ] && [ "$eps" -eq 0 ] && return 0
		sleep 0.5
	done
	echo " (left: $qps QPs, $eps endpoints)"
	return 1
}

# What b serves for the NVMe and NFS kill tests, on disks that outlive
# it; after its reboot the NFS server gives a's client 60 s of grace to
# reclaim its state (10 s, the least, on the first boot).
nvme_kill_up() {
	# shellcheck disable=SC2034 # read by lib.sh's nvme_target_up
	NVME_ADDR=$ME_IP
	nvme_disk_up && nvme_target_up
}
nvme_kill_down() { nvme_target_down; losetup -D; }
nfs_kill_up() { nfs_disk_up && NFS_GRACE=$((PBOOT == 2 ? 60 : 10)) nfsd_up; }
nfs_kill_down() { nfsd_down; nfs_disk_down; }

# b_again KIND UP DOWN WHAT: (b, booted again after the kill test KIND)
# UP serves again (ok or not ok "kill (KIND): WHAT"); once a says it is
# done, DOWN.
b_again() {
	if $2 >"$TMPD/again" 2>&1; then
		ok "kill ($1): $4"
	else
		notok "kill ($1): $4"
		diag "$TMPD/again"
	fi
	pair_put kill2
	pair_get kill2.done 600 >/dev/null || notok "kill ($1): a never finished"
	$3 >/dev/null 2>&1
}

# kill_fio FILE SIZE SECS: (a) in the background (KFIO: its pid, also
# $!), 25 s of fio's random 4..64 KiB writes to FILE's first SIZE, each
# block read back and checked soon after it is written (crc32c,
# verify_backlog), so that a kill falls between writes and checks; SECS
# bounds the whole run, outage included.  Output: $TMPD/kfio, kfio.err.
kill_fio() {
	timeout "$3" fio --name=kiwi --filename="$1" --direct=1 \
		--ioengine=libaio --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--rw=randwrite --bsrange=4k-64k --iodepth=8 --size="$2" \
		--time_based --runtime=25 --verify_backlog=32 \
		--output="$TMPD/kfio" >"$TMPD/kfio.err" 2>&1 &
	KFIO=$!
}

# kill_fio_verdict PID LABEL: kill_fio's run PID exited 0 with no block
# failing its check: ok "LABEL (counts)", else not ok with fio's tail.
kill_fio_verdict() {
	if wait "$1" && ! grep -qi 'verify.*fail\|bad.*checksum\|err= *[1-9]' "$TMPD/kfio" "$TMPD/kfio.err"; then
		ok "$2 ($(awk -F'[=,]' '/issued rwts/ { printf "%s blocks written, %s read back", $3, $2 }' "$TMPD/kfio"))"
	else
		notok "$2"
		tail -n 15 "$TMPD/kfio" "$TMPD/kfio.err" | diag
		nvme_klog 20
	fi
}

# rts_qps: (a) how many of kiwi0's QPs are in RTS.
rts_qps() { rdma resource show qp 2>/dev/null | grep 'link kiwi0/' | grep -c ' state RTS '; }

# kill_nfs: (a) the kill test under an NFS mount (KIWI_PAIR_KILL=nfs).
# b's export is on a disk that outlives it (nfs_disk_up).  b dies 6 s
# into fio's verified writes on the (hard) mount; the RPC transport's QP
# must leave RTS within the bound; b boots, serves the same disk again
# (a 60 s grace period for the client's reclaim), and the client must
# carry on by itself: fio finishes with every block verified, a new
# file written after the outage reads back equal.
kill_nfs() {
	local mnt=/mnt/kiwi-nfs cpid t0 ms why='' bound=$(((PT + SLACK) * 1000))
	modprobe rpcrdma
	mkdir -p $mnt
	if ! timeout 60 mount -t nfs -o rdma,port=20049,vers=4.2,hard "$PEER_IP:/" $mnt \
		>"$TMPD/mount" 2>&1; then
		notok "kill (nfs): a mounted b's export over RDMA"
		diag "$TMPD/mount"
		pair_put kill.abort
		return
	fi
	kill_fio $mnt/kill-fio 32M 600
	cpid=$KFIO
	sleep 6
	kill -0 $cpid 2>/dev/null || why=" (fio had ended before the kill)"
	[ "$(rts_qps)" -ge 1 ] || why="$why (no kiwi QP in RTS before the kill)"
	host_do "kill b" || why="$why (the host did not kill b)"
	t0=$(date +%s%N)
	for _ in $(seq 1 $(((PT + SLACK + 30) * 4))); do
		[ "$(rts_qps)" -ge 1 ] || break
		sleep 0.25
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$(rts_qps)" -eq 0 ] || why="$why (a QP still in RTS ${ms} ms after the kill)"
	[ $ms -le $bound ] || why="$why (bound $bound ms)"
	if [ -z "$why" ]; then
		ok "kill (nfs): b killed 6 s into fio on its NFS export; a's RPC transport's QP left RTS ${ms} ms later (peer_timeout $PT s, bound $bound ms)"
	else
		notok "kill (nfs): b killed 6 s into fio on its NFS export, peer_timeout $PT s$why"
		nvme_klog 20
	fi
	host_do "boot b" || notok "kill (nfs): the host did not boot b again"
	pair_get kill2 300 >/dev/null || notok "kill (nfs): b never served its disk again"
	kill_fio_verdict $cpid "kill (nfs): fio on the hard mount across b's death and reboot finished, every block verified"
	head -c $((4 << 20)) /dev/urandom >"$TMPD/after"
	if timeout 120 cp "$TMPD/after" $mnt/after && sync &&
	   echo 3 >/proc/sys/vm/drop_caches && cmp -s "$TMPD/after" $mnt/after; then
		ok "kill (nfs): after the outage, 4 MiB written to the same mount read back equal"
	else
		notok "kill (nfs): after the outage, 4 MiB written to the same mount read back equal"
		nvme_klog 20
	fi
	rm -f "$TMPD/after"
	if timeout 60 umount $mnt; then ok "kill (nfs): unmounted"; else notok "kill (nfs): unmounted"; fi
	for _ in $(seq 1 20); do
		modprobe -r rpcrdma 2>/dev/null && break
		sleep 0.5
	done
	pair_put kill2.done
	if why=$(kiwi_gone); then
		ok "kill (nfs): after unmounting, no QP or endpoint left"
	else
		notok "kill (nfs): after unmounting, no QP or endpoint left$why"
	fi
}

# kill_test: see the header.  Only a judges; b is killed.
kill_test() {
	local tool=ib_write_bw
	[ "$KILL" = read ] && tool=ib_read_bw
	echo "$PT" >$P/peer_timeout
	if [ "$ROLE" = b ]; then
		if [ "$KILL" = nvme ]; then
			nvme_kill_up >"$TMPD/tgt" 2>&1 && pair_put kill up ||
				{ diag "$TMPD/tgt"; pair_put kill down; }
		elif [ "$KILL" = nfs ]; then
			nfs_kill_up >"$TMPD/nfsd" 2>&1 && pair_put kill up ||
				{ diag "$TMPD/nfsd"; pair_put kill down; }
		else
			timeout 300 $tool -R -d kiwi0 -F -D 120 -s 65536 >"$TMPD/ks" 2>&1 &
			wait_listen 18515 && pair_put kill up
		fi
		# This guest dies here, killed by the host (unless a gives up).
		wait
		pair_get kill.abort 600 >/dev/null
		return
	fi
	local cpid ms why='' bound=$(((PT + SLACK) * 1000)) what c
	if [ "$(pair_get kill 300)" != up ]; then
		notok "kill ($KILL): b's side never came up"
		pair_put kill.abort
		return
	fi
	if [ "$KILL" = nfs ]; then
		kill_nfs
		return
	fi
	if [ "$KILL" = nvme ]; then
		# shellcheck disable=SC2034 # read by lib.sh's nvme_connect
		NVME_ADDR=$PEER_IP
		modprobe nvme-rdma
		# Reconnect attempts for up to 3 min: b's reboot under TCG
		# takes about a minute.
		# shellcheck disable=SC2034 # read by lib.sh's nvme_connect
		NVME_OPTS=",ctrl_loss_tmo=180"
		if ! nvme_connect; then
			notok "kill (nvme): a's host connected to b's target"
			diag "$TMPD/conn"
			pair_put kill.abort
			return
		fi
		what="fio (verify) on b's NVMe namespace"
		kill_fio "/dev/$NVME_DEV" 64M 400
	else
		what="$tool"
		timeout 300 $tool -R -d kiwi0 -F -D 120 -s 65536 $PEER_IP >"$TMPD/kc" 2>&1 &
	fi
	cpid=$!
	sleep 6
	kill -0 $cpid 2>/dev/null || why=" (the transfer had ended before the kill)"
	host_do "kill b" || why="$why (the host did not kill b)"
	if [ "$KILL" = nvme ]; then
		# The controller leaves "live" once its keep-alive or one of
		# its queues' QPs fails.
		c=$(nvme_ctrl)
		local t0
		t0=$(date +%s%N)
		for _ in $(seq 1 $(((PT + SLACK + 30) * 4))); do
			[ "$(cat "$c/state" 2>/dev/null)" = live ] || break
			sleep 0.25
		done
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ "$(cat "$c/state" 2>/dev/null)" != live ] ||
			why="$why (the controller still live ${ms} ms after the kill)"
		[ $ms -le $bound ] || why="$why (bound $bound ms)"
		if [ -z "$why" ]; then
			ok "kill (nvme): b killed 6 s into $what; a's controller left live ${ms} ms later ($(cat "$c/state" 2>/dev/null); peer_timeout $PT s, bound $bound ms)"
		else
			notok "kill (nvme): b killed 6 s into $what, peer_timeout $PT s$why"
			nvme_klog 20
		fi
		host_do "boot b" || notok "kill (nvme): the host did not boot b again"
		# b's second boot brings its target up again; the controller
		# reconnects by itself (reconnect_delay 1 s, ctrl_loss_tmo 60 s
		# counted from the kill) and fio's I/O is requeued.
		if pair_get kill2 300 >/dev/null && nvme_wait_live 120; then
			ok "kill (nvme): a's controller reconnected to b's target after b's reboot"
		else
			notok "kill (nvme): a's controller reconnected to b's target after b's reboot ($(cat "$c/state" 2>/dev/null))"
			nvme_klog 20
		fi
		kill_fio_verdict $cpid "kill (nvme): fio across the outage finished, every block verified"
		nvme_disconnect || diag "$TMPD/del"
		modprobe -r nvme-rdma
		pair_put kill2.done
		if why=$(kiwi_gone); then
			ok "kill (nvme): after disconnecting, no QP or endpoint left"
		else
			notok "kill (nvme): after disconnecting, no QP or endpoint left$why"
		fi
		return
	fi
	if ! ms=$(a_fails_within $cpid $bound); then
		why="$why ($what still running ${ms} ms after the kill)"
	elif wait $cpid; then
		why="$why ($what exited 0)"
	fi
	[ "$ms" -le $bound ] || why="$why (bound $bound ms)"
	why="$why$(kiwi_gone)"
	if [ -z "$why" ]; then
		ok "kill ($KILL): b killed 6 s into $what; a's transfer failed ${ms} ms later (peer_timeout $PT s, bound $bound ms), no QP or endpoint left"
	else
		notok "kill ($KILL): b killed 6 s into $what, peer_timeout $PT s$why"
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
	case $KILL in
	nvme) b_again nvme nvme_kill_up nvme_kill_down "b's target up again after its reboot" ;;
	nfs) b_again nfs nfs_kill_up nfs_kill_down "b serves the same disk again after its reboot" ;;
	esac
	rping_pair 4096 again
	teardown
	tap_end
	exit
fi
# Steps that do not exist, and those that need kiwi at both ends.
for s in $STEPS; do
	[[ " rping perf fwd rev imm atomic mw markers fpdu nvme nfs iser link netem offload " == *" $s "* ]] ||
		notok "step $s: no such step (KIWI_PAIR_STEPS)"
done
case $SIW in
''|a|b) ;;
*) notok "KIWI_PAIR_SIW=$SIW: a, b or nothing" ;;
esac
if [ -n "$SIW" ]; then
	for s in imm atomic mw markers fpdu nvme nfs iser; do
		[[ $STEPS != *" $s "* ]] || notok "step $s: needs kiwi in both guests, not siw in $SIW"
		STEPS=${STEPS// $s / }
	done
	[ "$KILL" = 0 ] || notok "step kill: needs kiwi in both guests, not siw in $SIW"
	KILL=0
fi
case $KILL in
0|write|read|nvme|nfs) ;;
*) notok "KIWI_PAIR_KILL=$KILL: 0, 1, write, read, nvme or nfs"; KILL=0 ;;
esac
for s in rping perf fwd rev imm atomic mw markers fpdu nvme nfs iser link netem offload; do
	step $s
done
if [ "$KILL" != 0 ]; then
	kill_test
	[ "$ROLE" = a ] && rping_pair 4096 again
fi
teardown
tap_end
