#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/soak.sh -- `make soak`: kiwi under mixed traffic for a long time in
# one guest boot (selftests/guest/soak.sh: rping -V, perftest, connect
# churn, NVMe over RDMA, netem loss and reordering), with slub_debug=FZPU
# as in make check, memory sampled every minute.  Not part of make check.
#
#   make soak                      30 minutes
#   KIWI_SOAK_MINUTES=5 make soak  shorter
#
# Results in build/soak/: soak.log (the guest's output), samples.csv
# (minute, slab KiB, vmalloc KiB, TCP sockets, kiwi QPs), soak.png (slab
# and QPs over time, if gnuplot is installed).  Exit status 0 only if
# every round passed, memory stayed bounded, the module unloaded, nothing
# leaked and the guest's kernel log is clean.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
MIN=${KIWI_SOAK_MINUTES:-30}
OUT=$ROOT/build/soak
mkdir -p "$OUT"
export KIWI_SOAK_MINUTES=$MIN
echo "soak: $MIN minutes in a guest (log: ${OUT#"$ROOT"/}/soak.log)"
"$ROOT/selftests/vm/run.sh" --quiet --module "$ROOT/kmod/kiwi.ko" \
	--timeout $((MIN * 60 + 900)) --dmesg "$OUT/dmesg.log" -- \
	"$ROOT/selftests/guest/soak.sh" 2>&1 | tee "$OUT/soak.log" |
	grep --line-buffered -vE '^soak-round'
rc=${PIPESTATUS[0]}
{
	echo "minute,slab_kib,vmalloc_kib,tcp_sockets,kiwi_qps"
	awk '$1 == "soak-sample" { print $2 "," $3 "," $4 "," $5 "," $6 }' "$OUT/soak.log"
} >"$OUT/samples.csv"
if command -v gnuplot >/dev/null && [ "$(wc -l <"$OUT/samples.csv")" -gt 2 ]; then
	gnuplot <<GP
set terminal pngcairo size 900,450 noenhanced
set output "$OUT/soak.png"
set datafile separator ","
set key top left
set xlabel "minute"
set ylabel "slab (MiB)"
set y2label "kiwi QPs"
set y2tics
set title "kiwi soak, $MIN min, slub_debug=FZPU"
plot "$OUT/samples.csv" every ::1 using 1:(\$2/1024) with linespoints title "slab", \
     "" every ::1 using 1:5 axes x1y2 with steps title "kiwi QPs"
GP
fi
echo "soak: exit $rc; samples: ${OUT#"$ROOT"/}/samples.csv"
exit "$rc"
