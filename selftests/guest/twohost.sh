#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/twohost.sh -- kiwi between two machines: run by
# selftests/vm/pair in both guests (each its own kernel, joined by one
# virtual NIC, eth0), the same script in both roles.  b serves, a
# connects; each prints its own TAP.
#
#   setup         the NIC up (MTU KIWI_PAIR_MTU, default 9000), the other
#                 guest reachable, kiwi0 on eth0; the line names the
#                 kernel, the NIC's driver and its offloads
#   rping         rping -V at 64 B, 4 KiB and 64 KiB (KIWI_PAIR_COUNT
#                 verified ping-pongs, default 300)
#   ib_*_bw       perftest WRITE, READ and SEND (-R), 64 KiB, checked
#                 for a figure above 0
#   kill          (KIWI_PAIR_KILL=0 leaves it out) with peer_timeout
#                 KIWI_PAIR_PEER_TIMEOUT (default 10) on both: a runs
#                 ib_write_bw against b, and 6 s into the transfer b's
#                 QEMU is killed (no shutdown, no FIN, no RST).  a's
#                 client must end with an error within peer_timeout + 15
#                 s, its QPs and endpoints gone soon after; then b boots
#                 again and rping -V between them works as before
#   teardown      rdma link del, rmmod kiwi, nothing of kiwi's left
#                 (kiwi_leak_check), in each guest still alive
set -u
. "$(dirname "$(readlink -f "$0")")/lib.sh"
. "$GUEST_DIR/pairlib.sh"

MTU=${KIWI_PAIR_MTU:-9000}
COUNT=${KIWI_PAIR_COUNT:-300}
PT=${KIWI_PAIR_PEER_TIMEOUT:-10}
KILL=${KIWI_PAIR_KILL:-1}
SLACK=15
P=/sys/module/kiwi/parameters
T0=$SECONDS

echo "TAP version 13"
if ! pair_mount; then
	notok "setup ($ROLE): the meeting place (9p tag pair) did not mount"
	tap_end
	exit 1
fi
if nic_up "$MTU" && peer_reachable 120 && kiwi_up; then
	ok "setup ($ROLE, boot $PBOOT, Linux $(uname -r)): $(nic_info); $PEER_IP reachable; kiwi0 on $IFACE"
else
	notok "setup ($ROLE, boot $PBOOT, Linux $(uname -r)): NIC, peer $PEER_IP or kiwi0 missing"
	ip -o addr show $IFACE | diag
	tap_end
	exit 1
fi
KTEXT=$(kiwi_text)

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

# rping_pair SIZE TAG: b serves one rping -V, a connects.
rping_pair() {
	local size=$1 tag=$2 what="rping -V -C $COUNT -S $1"
	if [ "$ROLE" = b ]; then
		timeout 300 rping -s -a $ME_IP -V -C "$COUNT" -S "$size" >"$TMPD/rs" 2>&1 &
		local spid=$!
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

# perf_pair TOOL: b runs the perftest server, a the client; the
# receiver's figure must be above 0.
perf_pair() {
	local tool=$1 row
	if [ "$ROLE" = b ]; then
		timeout 300 "$tool" -R -d kiwi0 -F -n 2000 -s 65536 >"$TMPD/ps" 2>&1 &
		local spid=$!
		wait_listen 18515 && pair_put "$tool"
		wait $spid
		pair_put "$tool.done"
	else
		pair_get "$tool" 300 >/dev/null || { notok "$tool: the server never listened"; return; }
		timeout 300 "$tool" -R -d kiwi0 -F -n 2000 -s 65536 $PEER_IP >"$TMPD/pc" 2>&1
		local rc=$?
		row=$(grep -E '^ +65536 +[0-9]+ ' "$TMPD/pc" | tail -1)
		pair_get "$tool.done" 120 >/dev/null
		if [ $rc -eq 0 ] && [ -n "$row" ] && awk '{ exit !($4 > 0 || $5 > 0) }' <<<"$row"; then
			ok "$tool -s 65536 a -> b: $(awk '{ print $4 }' <<<"$row") MB/s average"
		else
			notok "$tool -s 65536 a -> b (rc $rc)"
			diag "$TMPD/pc" | tail -8
		fi
	fi
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
	rdma link del kiwi0 && rmmod kiwi || notok "teardown: rdma link del / rmmod kiwi failed"
	no_leaks_verdict "$KTEXT"
	echo "# twohost.sh ($ROLE, boot $PBOOT): $((SECONDS - T0)) s"
}

if [ "$PBOOT" = 2 ]; then
	# b, booted again after the kill: the same setup works as before.
	rping_pair 4096 again
	teardown
	tap_end
	exit
fi
for size in 64 4096 65535; do
	rping_pair $size "rping_$size"
done
for t in ib_write_bw ib_read_bw ib_send_bw; do
	perf_pair $t
done
if [ "$KILL" = 1 ]; then
	kill_test
	[ "$ROLE" = a ] && rping_pair 4096 again
fi
teardown
tap_end
