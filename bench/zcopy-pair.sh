#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/zcopy-pair.sh -- bench/zcopy-guest.sh across two guests: plain TCP
# from a to b over the virtual NIC between them, with copy, MSG_ZEROCOPY
# and sendfile transmit (bench/tcp_zerocopy.c), the modes rotated per
# repetition.  Run by selftests/vm/pair.sh in both guests (b receives, a
# sends); use --nic e1000: over virtio-net without scatter-gather, TCP
# copies every MSG_ZEROCOPY send (benchmark.md, "Zero-copy transmit
# across the pair").
#
#   gcc -O2 -o build/bench/tcp_zerocopy bench/tcp_zerocopy.c
#   KIWI_ZC_TOOL=$PWD/build/bench/tcp_zerocopy selftests/vm/pair.sh \
#       --nic e1000 -- bench/zcopy-pair.sh
#
# a prints one line per run: the tool's figures, then the kernel CPU
# seconds of each guest from /proc/stat (system + irq + softirq; each has
# one vCPU) and their sum per GiB sent.  Environment: KIWI_ZC_TOOL (the
# built tool), KIWI_ZC_REPS (3), KIWI_ZC_SECONDS (5), KIWI_ZC_BYTES
# (65536), KIWI_ZC_MTU (9000).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=selftests/guest/pairlib.sh
. "$ROOT/selftests/guest/pairlib.sh"
TOOL=${KIWI_ZC_TOOL:-$ROOT/build/bench/tcp_zerocopy}
REPS=${KIWI_ZC_REPS:-3}
SECS=${KIWI_ZC_SECONDS:-5}
MSG=${KIWI_ZC_BYTES:-65536}
MTU=${KIWI_ZC_MTU:-9000}
PORT=5301
modes=(copy zerocopy sendfile)

# kernel jiffies of this guest
ktime() { awk '/^cpu /{ print $4 + $7 + $8 }' /proc/stat; }

if ! { pair_mount && nic_up "$MTU" && peer_reachable 60; }; then
	echo "zcopy-pair: $ROLE: no link to $PEER_IP"
	exit 1
fi
echo "zcopy-pair: $ROLE: $(uname -r), $(nic_info)"
n=0
for ((r = 0; r < REPS; r++)); do
	for ((k = 0; k < 3; k++)); do
		n=$((n + 1))
		m=${modes[$(((r + k) % 3))]}
		if [ "$ROLE" = b ]; then
			k0=$(ktime)
			"$TOOL" recv $PORT >/tmp/zc.recv 2>&1 &
			sleep 0.5
			pair_put "ready.$n"
			wait $!
			pair_put "recvd.$n" "$(cat /tmp/zc.recv) b_kernel_ticks=$(($(ktime) - k0))"
			continue
		fi
		pair_get "ready.$n" 120 >/dev/null || { echo "zcopy-pair: b not ready ($n)"; exit 1; }
		k0=$(ktime)
		out=$(timeout $((SECS + 60)) "$TOOL" send "$PEER_IP" $PORT "$m" "$SECS" "$MSG")
		k1=$(ktime)
		recv=$(pair_get "recvd.$n" 120) || { echo "zcopy-pair: b never reported ($n)"; exit 1; }
		awk -v o="$out" -v rc="$recv" -v r=$((r + 1)) -v ka=$((k1 - k0)) \
		    -v hz="$(getconf CLK_TCK)" 'BEGIN {
			n = o; sub(/.* bytes=/, "", n); sub(/ .*/, "", n)
			kb = rc; sub(/.*b_kernel_ticks=/, "", kb)
			gib = n / 2^30
			printf "rep=%d %s | %s a_kernel_s=%.2f b_kernel_s=%.2f kernel_s_per_gib=%.2f\n",
			       r, o, rc, ka / hz, kb / hz, (ka + kb) / hz / (gib > 0 ? gib : 1) }'
	done
done
