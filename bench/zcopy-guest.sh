#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# zcopy-guest.sh TOOL [REPS] [SECONDS] [MSG_BYTES] [MTU] -- runs in a guest:
# plain TCP over the bench's path (a veth pair between two namespaces,
# sender on CPU 0, receiver on CPU 1) with copy, MSG_ZEROCOPY and
# sendfile transmit (bench/tcp_zerocopy.c), the modes rotated per
# repetition.  Prints one line per run: the tool's figures plus the
# guest's CPU time from /proc/stat (kernel = system + irq + softirq, all
# CPUs) and kernel seconds per GiB sent.
#
#   gcc -O2 -o build/bench/tcp_zerocopy bench/tcp_zerocopy.c
#   selftests/vm/run.sh --slub-debug off -- bench/zcopy-guest.sh \
#       build/bench/tcp_zerocopy 5
set -eu
TOOL=$(readlink -f "$1")
REPS=${2:-5}
SECS=${3:-5}
MSG=${4:-65536}
MTU=${5:-9000}
PORT=5301

for ns in zca zcb; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add zc0 type veth peer name zc1
ip link set zc0 netns zca
ip link set zc1 netns zcb
ip -n zca addr add 10.93.0.1/24 dev zc0
ip -n zcb addr add 10.93.0.2/24 dev zc1
ip -n zca link set zc0 mtu "$MTU" up
ip -n zcb link set zc1 mtu "$MTU" up

# kernel and busy jiffies of all CPUs
HZ=$(getconf CLK_TCK)
cpu() { awk '/^cpu /{print $4+$7+$8, $2+$3+$4+$7+$8}' /proc/stat; }

echo "zcopy-guest: $(uname -r), $(nproc) CPUs, MTU $MTU, $MSG-byte sends, ${SECS}s runs, $REPS repetitions"
modes=(copy zerocopy sendfile)
for ((r = 0; r < REPS; r++)); do
	for ((k = 0; k < 3; k++)); do
		m=${modes[$(((r + k) % 3))]}
		ip netns exec zcb taskset -c 1 "$TOOL" recv $PORT > /tmp/zc.recv &
		rpid=$!
		sleep 0.5
		read -r k0 b0 < <(cpu)
		out=$(ip netns exec zca taskset -c 0 "$TOOL" send 10.93.0.2 $PORT "$m" "$SECS" "$MSG")
		wait $rpid
		read -r k1 b1 < <(cpu)
		bytes=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' <<< "$out")
		awk -v o="$out" -v r=$((r + 1)) -v k=$((k1 - k0)) -v b=$((b1 - b0)) \
		    -v n="$bytes" -v hz="$HZ" -v recv="$(cat /tmp/zc.recv)" 'BEGIN {
			gib = n / 2^30
			printf "rep=%d %s %s kernel_s=%.2f busy_s=%.2f kernel_s_per_gib=%.2f\n",
			       r, o, recv, k / hz, b / hz, (k / hz) / gib }'
	done
done
