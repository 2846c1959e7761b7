#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rtt-profile.sh [ROUNDS] [MTU] -- runs in a guest (issue 32): where one
# 8-byte RDMA WRITE round trip spends its kernel time, kiwi against siw
# in the same boot.  Both stacks in turn on the same veth pair between
# two namespaces (kwa 10.91.0.1, kwb 10.91.0.2; MTU, default 9000), CRC
# off on both (kiwi crc=N; siw as Linux builds it, CRC not required), and
# ib_write_lat -s 8 -n ROUNDS (default 3000) over rdma_cm while ftrace's
# function_graph tracer times each stack's entry points: the doorbell
# (uverbs POST_SEND: kiwi_post_send, siw_post_send), the socket's
# data-ready callback (kiwi_rx_data_ready, siw_qp_llp_data_ready) and the
# deferred workers (kiwi_tx_work, kiwi_rx_work; siw_qp_sq_process).  Two
# passes per stack: depth 1 (each entry point's own duration, children
# included) and depth 2 (the entry points' direct callees).  The tracer's
# own cost is in every figure, for both stacks alike: compare, do not add.
#
#   make siw kmod
#   selftests/vm/run.sh --slub-debug off --module kmod/kiwi.ko \
#       --module build/siw/siw.ko -- bench/rtt-profile.sh 3000
#
# Output: "# ..." configuration lines, perftest's typical latency of each
# traced run, then bench/rtt-profile.py's tables: per function, calls per
# round trip and the median/mean/p99 of its duration (us).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
. "$ROOT/selftests/guest/lib.sh"
ROUNDS=${1:-3000}
MTU=${2:-9000}
SRV=10.91.0.2
PORT=18900
T=/sys/kernel/tracing
OUT=$(mktemp -d /tmp/rtt-profile.XXXXXX)

declare -A ENTRIES=(
	[kiwi]="kiwi_post_send kiwi_rx_data_ready kiwi_tx_work kiwi_rx_work"
	[siw]="siw_post_send siw_qp_llp_data_ready siw_qp_sq_process"
)

stack_up() {	# stack_up kiwi|siw: DEV0 (kwa) and DEV1 (kwb) on the veth pair
	A rdma link add "${1}0" type "$1" netdev kv0 &&
	B rdma link add "${1}1" type "$1" netdev kv1
}

stack_down() {
	A rdma link del "${1}0"; B rdma link del "${1}1"
}

# traced STACK DEPTH: one ib_write_lat run under the tracer.
traced() {
	local s=$1 depth=$2 f sp rc
	PORT=$((PORT + 1))
	echo nop >$T/current_tracer
	echo >$T/trace
	: >$T/set_graph_function
	for f in ${ENTRIES[$s]}; do
		echo "$f" >>$T/set_graph_function ||
			echo "# $s: no function $f to trace"
	done
	echo "$depth" >$T/max_graph_depth
	echo function_graph >$T/current_tracer
	B timeout 300 ib_write_lat -s 8 -n "$ROUNDS" -R -F -d "${s}1" -p $PORT \
		>"$OUT/$s.$depth.srv" 2>&1 &
	sp=$!
	wait_port $SRV $PORT || { echo "# $s: server did not listen"; return 1; }
	echo 1 >$T/tracing_on
	A timeout 300 ib_write_lat -s 8 -n "$ROUNDS" -R -F -d "${s}0" -p $PORT \
		$SRV >"$OUT/$s.$depth.cli" 2>&1
	rc=$?
	echo 0 >$T/tracing_on
	wait $sp
	echo "# $s depth $depth: client exit $rc; perftest typical" \
		"$(awk '$1 == 8 && NF >= 5 { print $5 " us" }' "$OUT/$s.$depth.cli" | tail -1);" \
		"overrun $(awk '/overrun/ { s += $2 } END { print s + 0 }' $T/per_cpu/cpu*/stats)"
	cat $T/trace >"$OUT/$s.$depth.trace"
	echo nop >$T/current_tracer
	[ $rc -eq 0 ]
}

modprobe ib_uverbs && modprobe libcrc32c && modprobe rdma_ucm &&
	modprobe kiwi && modprobe siw || exit 1
echo N >/sys/module/kiwi/parameters/crc
mountpoint -q $T || mount -t tracefs nodev $T
echo 16384 >$T/buffer_size_kb
echo 0 >$T/tracing_on
for o in funcgraph-tail funcgraph-cpu; do echo 1 >$T/options/$o 2>/dev/null; done
echo 0 >$T/options/funcgraph-proc 2>/dev/null
kiwi_pair_up || exit 1
A rdma link del kiwi0; B rdma link del kiwi1
A ip link set kv0 mtu "$MTU" && B ip link set kv1 mtu "$MTU" || exit 1
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) vCPUs," \
	"kernel $(uname -r), MTU $MTU, CRC off on both, ib_write_lat -s 8" \
	"-n $ROUNDS, $(grep -o 'slub_debug=[^ ]*' /proc/cmdline || echo 'slub_debug off')"
fail=0
for s in kiwi siw; do
	stack_up $s || { echo "# $s: no devices"; fail=1; continue; }
	for d in 1 2; do traced $s $d || fail=1; done
	stack_down $s
done
python3 "$ROOT/bench/rtt-profile.py" "$ROUNDS" "$OUT"/*.trace || fail=1
rm -rf "$OUT"
exit $fail
