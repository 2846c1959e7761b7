#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/datapath.sh -- kiwi data-path tests, run inside the test
# guest:
#
#	selftests/vm/run --module kmod/kiwi.ko -- selftests/guest/datapath.sh
#
# Two network namespaces joined by a veth pair, kiwi0 on one end and kiwi1
# on the other; real rdma-core tools move data between them:
#   - rping -V (payload verified on every iteration) at several sizes,
#   - perftest bandwidth and latency tools over rdma_cm (-R),
#   - the mapped rings with extended verbs and a corrupted send WQE
#     (build/selftests/ring_conn),
#   - error paths: a connection to a port nobody listens on is refused.
# Output is TAP 13 with the plan line last; exit status 0 only if all pass.
#
# Environment: KIWI_RPING_COUNT (default 1000), KIWI_PERF_ITERS (500),
# KIWI_DP_MTU (1500).
set -u

COUNT=${KIWI_RPING_COUNT:-1000}
ITERS=${KIWI_PERF_ITERS:-500}
MTU=${KIWI_DP_MTU:-1500}
SRV=10.91.0.2
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
T=0 NFAIL=0
TMPD=$(mktemp -d /tmp/kiwi-dp.XXXXXX)

ok()    { T=$((T + 1)); echo "ok $T $1"; }
notok() { T=$((T + 1)); NFAIL=$((NFAIL + 1)); echo "not ok $T $1"; }
diag()  { sed -e 's/^/# /' "$@"; }
A() { ip netns exec kwa "$@"; }
B() { ip netns exec kwb "$@"; }

setup() {
	modprobe kiwi || return 1
	ip netns add kwa && ip netns add kwb &&
	ip link add kv0 type veth peer name kv1 &&
	ip link set kv0 netns kwa && ip link set kv1 netns kwb &&
	A ip addr add 10.91.0.1/24 dev kv0 && B ip addr add $SRV/24 dev kv1 &&
	A ip link set kv0 mtu "$MTU" up && B ip link set kv1 mtu "$MTU" up &&
	A ip link set lo up && B ip link set lo up &&
	A rdma link add kiwi0 type kiwi netdev kv0 &&
	B rdma link add kiwi1 type kiwi netdev kv1
}

# wait_port PORT: until something in kwb listens on TCP PORT (max ~20 s).
wait_port() {
	local i
	for i in $(seq 1 40); do
		B ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.5
	done
	return 1
}

# rping_test SIZE: 'rping -V' checks the payload of every iteration.
rping_test() {
	local size=$1 name="rping -V -C $COUNT -S $1" rc
	B timeout 600 rping -s -a $SRV -p 7174 -V -C "$COUNT" -S "$size" \
		>"$TMPD/srv" 2>&1 &
	local spid=$!
	wait_port 7174
	A timeout 600 rping -c -a $SRV -p 7174 -V -C "$COUNT" -S "$size" \
		>"$TMPD/cli" 2>&1
	rc=$?
	wait $spid
	local src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name"
	else
		notok "$name (client $rc, server $src)"
		tail -5 "$TMPD/cli" "$TMPD/srv" | diag
	fi
}

# perf_test TOOL ARGS...: perftest over rdma_cm; passes with a non-zero
# result line (bandwidth or latency) from the client.
perf_test() {
	local tool=$1 rc
	shift
	B timeout 300 "$tool" -R -d kiwi1 -F -n "$ITERS" "$@" \
		>"$TMPD/srv" 2>&1 &
	local spid=$!
	wait_port 18515
	A timeout 280 "$tool" -R -d kiwi0 -F -n "$ITERS" "$@" $SRV \
		>"$TMPD/cli" 2>&1
	rc=$?
	wait $spid
	# Result rows start with the message size; the 4th/5th column > 0.
	local row
	row=$(grep -E '^ +[0-9]+ +[0-9]+ +[0-9.]+' "$TMPD/cli" | tail -1)
	if [ $rc -eq 0 ] && [ -n "$row" ] &&
	   echo "$row" | awk '{ exit !($4 > 0) }'; then
		ok "$tool $* ($(echo "$row" | awk '{print $4}'))"
	else
		notok "$tool $* (rc $rc)"
		tail -8 "$TMPD/cli" | diag
	fi
}

# ring_conn: ibv_wr_* / cq_ex on a connected pair, then a WQE garbled in
# the mapped send ring must fail cleanly (no kernel warning: the guest
# harness checks dmesg).
ring_conn_test() {
	local bin=$ROOT/build/selftests/ring_conn rc src
	if [ ! -x "$bin" ]; then
		notok "ring_conn: $bin not built"
		return
	fi
	B timeout 120 "$bin" -s $SRV 7175 >"$TMPD/srv" 2>&1 &
	local spid=$!
	wait_port 7175
	A timeout 100 "$bin" -c $SRV 7175 >"$TMPD/cli" 2>&1
	rc=$?
	wait $spid
	src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
		ok "ring_conn: ibv_wr_* + cq_ex, garbled WQE -> LOC_QP_OP_ERR"
	else
		notok "ring_conn (client $rc, server $src)"
	fi
	diag "$TMPD/cli" "$TMPD/srv"
}

# A connect to a port without a listener must fail, not hang or crash.
refused_test() {
	if A timeout 60 rping -c -a $SRV -p 7999 -C 1 >"$TMPD/cli" 2>&1; then
		notok "connect to a closed port is refused"
	else
		ok "connect to a closed port is refused"
	fi
}

echo "TAP version 13"
if ! setup >"$TMPD/setup" 2>&1; then
	notok "setup: two namespaces, veth, kiwi0/kiwi1"
	diag "$TMPD/setup"
	echo "1..$T"
	exit 1
fi
ok "setup: two namespaces, veth (MTU $MTU), kiwi0/kiwi1"

for size in 64 4096 65535; do
	rping_test $size
done
perf_test ib_write_bw -s 65536
perf_test ib_read_bw -s 65536
perf_test ib_send_bw -s 65536
perf_test ib_write_lat -s 8
perf_test ib_read_lat -s 8
perf_test ib_send_lat -s 8
ring_conn_test
refused_test

echo "1..$T"
rm -rf "$TMPD"
[ $NFAIL -eq 0 ]
