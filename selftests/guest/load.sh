#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/load.sh -- many connections at once, run inside the
# test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/load.sh
#
# kiwi is loaded with max_qp=$N (default 1000) per device.  kiwi1 (kwb)
# runs two `manyqp` servers, kiwi0 (kwa) four clients; together they hold
# N connected QPs on each device.  Then a fifth client tries 2000 more
# connections: every one must be refused cleanly (ENOMEM from QP
# creation, the device is full) while the N stay up.  Then all N
# connections move verified data (a SEND each way, every byte checked),
# everything is torn down, the module unloads, and TCP sockets and slab
# memory go back to where they were (printed: kernel memory per
# connected QP pair).
#
# Output is TAP 13 with the plan line last.  Environment:
# KIWI_LOAD_QPS (default 1000, a multiple of 4), KIWI_SELFTEST_BIN.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN=${KIWI_SELFTEST_BIN:-$ROOT/build/selftests}
N=${KIWI_LOAD_QPS:-1000}
SRV=10.91.0.2
START=$SECONDS
. "$ROOT/selftests/guest/lib.sh"

mem_snapshot() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '$1 == "TCP" { t = $2 } END { printf "%d ", t }' /proc/slabinfo
	awk '$1 == "Slab:" { print $2 }' /proc/meminfo
}

setup() {
	[ -x "$BIN/manyqp" ] || { echo "$BIN/manyqp missing (make)"; return 1; }
	modprobe kiwi max_qp="$N" || return 1
	kiwi_pair_up
}

# shellcheck disable=SC2207 # numbers only: split on blanks by intent
BASE=($(mem_snapshot))
tap_setup "kiwi max_qp=$N, two namespaces, veth" \
	"kiwi max_qp=$N, two namespaces, veth"
ulimit -n 65536
GO=$TMPD/go
spids=() cpids=()
for p in 7500 7501; do
	B timeout 600 "$BIN/manyqp" -s $SRV $p $((N / 2)) >"$TMPD/s$p" 2>&1 &
	spids+=($!)
done
wait_port $SRV 7500 && wait_port $SRV 7501
t0=$SECONDS
for c in 1 2 3 4; do
	A timeout 600 "$BIN/manyqp" -c $SRV $((7499 + (c + 1) / 2)) $((N / 4)) "$GO" \
		>"$TMPD/c$c" 2>&1 &
	cpids+=($!)
done
for _ in $(seq 1 600); do
	n=$(cat "$TMPD"/c? 2>/dev/null | grep -c connected)
	failed=$(grep -l 'failed' "$TMPD"/c? 2>/dev/null)
	[ "$n" -eq 4 ] || [ -n "$failed" ] && break
	sleep 1
done
if [ "$n" -eq 4 ]; then
	ok "$N connections up on each device, from 4 processes to 2 ($((SECONDS - t0)) s)"
else
	notok "$N connections: $n of 4 clients connected all theirs"
	tail -n 3 "$TMPD"/c? "$TMPD"/s* | diag
fi
# shellcheck disable=SC2207 # numbers only: split on blanks by intent
HELD=($(mem_snapshot))
echo "# kernel memory with $N connected QP pairs: slab +$(( (HELD[1] - BASE[1]) )) KiB ($(( (HELD[1] - BASE[1]) * 1024 / N )) B per pair, both ends, incl. TCP), TCP sockets ${HELD[0]}"

if A timeout 300 "$BIN/manyqp" -x $SRV 7500 2000 >"$TMPD/x" 2>&1; then
	ok "2000 connections beyond max_qp: $(sed -n 's/^manyqp: excess: //p' "$TMPD/x")"
else
	notok "2000 connections beyond max_qp: $(tail -n 1 "$TMPD/x")"
fi

touch "$GO"
rc=0
for pid in "${cpids[@]}" "${spids[@]}"; do
	wait "$pid" || rc=1
done
if [ $rc -eq 0 ]; then
	ok "all $N connections moved verified data both ways after the refusals"
else
	notok "data on the $N connections"
fi
grep -h '^manyqp' "$TMPD"/c? "$TMPD"/s* | diag

KTEXT=$(kiwi_text)	# where kiwi.ko lies, for kiwi_leak_check after unload
if { A rdma link del kiwi0 && B rdma link del kiwi1 && modprobe -r kiwi; } \
	>"$TMPD/u" 2>&1; then
	ok "unload after the load"
else
	notok "unload after the load"
	diag "$TMPD/u"
fi
for _ in $(seq 1 30); do
	# shellcheck disable=SC2207 # numbers only: split on blanks by intent
	NOW=($(mem_snapshot))
	[ "${NOW[0]}" -le "${BASE[0]}" ] && break
	sleep 1
done
echo "# before: TCP ${BASE[0]}, slab ${BASE[1]} KiB; after unload: TCP ${NOW[0]}, slab ${NOW[1]} KiB"
if kiwi_leak_check "$KTEXT" "$TMPD/leaked" &&
   [ "${NOW[0]}" -le "${BASE[0]}" ] && [ $((NOW[1] - BASE[1])) -le 16384 ]; then
	ok "no_leaks: TCP sockets back to baseline, slab within 16 MiB ($((NOW[1] - BASE[1])) KiB), $(tail -n 1 "$TMPD/leaked")"
else
	notok "no_leaks: TCP ${BASE[0]}->${NOW[0]}, slab +$((NOW[1] - BASE[1])) KiB, $(tail -n 1 "$TMPD/leaked")"
fi
echo "# load.sh: $((SECONDS - START)) s"
tap_end
