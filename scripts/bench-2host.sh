#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-2host.sh -- make bench's matched cells between two guests
# joined by a virtual NIC, beside the same cells over veth in one guest,
# in one invocation and one report: what the NIC path changes.  Run by
# `make bench-2host` (after `make deps all siw`).
#
#  1. Two guests (selftests/vm/pair.sh): a and b, Debian's 6.1 in both, 1
#     vCPU and 1.5 GiB each, one NIC each (virtio-net, or e1000 with
#     KIWI_BENCH2_NIC=e1000), joined by QEMU's UDP socket backend on the
#     host's loopback; bench/pair-guest.sh in both, b serving, a
#     connecting: configuration "standard_2host".
#  2. One guest (scripts/bench.sh, its own machinery): configuration
#     "standard", both ends in one guest over veth (2 vCPUs, 3 GiB, as
#     make bench), the same cells, MTUs, repetitions and run lengths;
#     no kernel-memory measurements.
#  3. bench/report.py over both sets of runs: a table per configuration
#     and MTU, as make bench prints, and "veth vs two guests" tables:
#     each stack's median in both and the paired ratios (kiwi/siw,
#     kiwi/TCP) with their intervals in both.
# In both, kiwi runs large_fpdu=N crc=N and siw as built; the stacks'
# order rotates per repetition.  Absolute figures are TCG's on a shared
# host: compare within one invocation only.
#
# Writes build/bench-2host/:
#   results.md, results.csv, results.json   both configurations' runs
#   raw.txt           the protocol lines report.py read (both phases)
#   bench.log         everything printed
#   pair/             a.log (a's output: progress and @bench lines),
#                     b.log, each guest's dmesg and vm log, logs/ (every
#                     tool's output in a; b's server output beside it)
#   veth/             scripts/bench.sh's own output for phase 2 (its
#                     results.md, bench.log, logs/, dmesg.log)
#
# Exit status (scripts/bench.sh's rules): 0 if every run of both phases
# produced a value and every guest's kernel log is clean, 1 otherwise
# (targets missed do not count, unless KIWI_BENCH_STRICT=1), 2 on usage
# or build errors.
#
# Environment (scripts/bench.sh's names, for both phases):
#   KIWI_BENCH_CELLS    default "write_bw_64k read_bw_64k send_bw_64k
#                       write_bw_4k write_lat_8 send_lat_8"
#   KIWI_BENCH_REPS     repetitions per cell (default 5)
#   KIWI_BENCH_MTUS     default 9000 (e.g. "9000 1500")
#   KIWI_BENCH_STACKS   restrict to some of kiwi, siw, tcp
#   KIWI_BENCH_DURATION, KIWI_BENCH_ITERS_LAT, KIWI_BENCH_RUN_TIMEOUT
#                       as make bench (3 s, 5000, 90 s)
#   KIWI_BENCH_TIMEOUT  bound on each guest, s (default 7200)
#   KIWI_BENCH_STRICT=1 exit 1 if a target is missed or inconclusive
#   KIWI_BENCH2_NIC     virtio (default) or e1000 (QEMU's model does TSO
#                       and TX checksums: the guests' driver offloads)
#   BUILD               build directory (default: build)
# KIWI_BENCH_NO_CRC32C_INTEL and KIWI_BENCH_NO_ERMS are not passed on:
# the pair cannot change its guests' CPU, so neither does phase 2.
set -u
export LC_ALL=C
# One compound command, read whole before it runs (as scripts/bench.sh).
{

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/bench-2host
PLOGS=$OUT/pair
KO=$ROOT/kmod/kiwi.ko
SO=$BUILD/provider/libkiwi-rdmav34.so
SIWKO=$BUILD/siw/siw.ko

case "${1:-}" in
"") ;;
-h|--help) sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) echo "usage: $0 [--help]" >&2; exit 2 ;;
esac

# The exact command line, for the report: what the caller set.
CMD="make bench-2host"
for v in ${!KIWI_BENCH@}; do
	case ${!v} in *[[:space:]]*) CMD="$v='${!v}' $CMD" ;; *) CMD="$v=${!v} $CMD" ;; esac
done

NIC=${KIWI_BENCH2_NIC:-virtio}
case $NIC in virtio|e1000) ;; *) echo "bench-2host: KIWI_BENCH2_NIC is virtio or e1000" >&2; exit 2 ;; esac
# The same settings for both phases, exported: KIWI_* reach the guests.
export KIWI_BENCH_CELLS=${KIWI_BENCH_CELLS:-"write_bw_64k read_bw_64k send_bw_64k write_bw_4k write_lat_8 send_lat_8"}
export KIWI_BENCH_REPS=${KIWI_BENCH_REPS:-5}
export KIWI_BENCH_MTUS=${KIWI_BENCH_MTUS:-9000}
export KIWI_BENCH_DURATION=${KIWI_BENCH_DURATION:-3}
export KIWI_BENCH_ITERS_LAT=${KIWI_BENCH_ITERS_LAT:-5000}
export KIWI_BENCH_RUN_TIMEOUT=${KIWI_BENCH_RUN_TIMEOUT:-90}
TIMEOUT=${KIWI_BENCH_TIMEOUT:-7200}
MEM=1536

mkdir -p "$OUT"
LOG=$OUT/bench.log
exec > >(tee "$LOG") 2>&1
TEE_PID=$!
# shellcheck disable=SC2154 # rc is assigned in the trap itself
trap 'rc=$?; exec >&- 2>&-; wait "$TEE_PID"; exit $rc' EXIT

T0=$EPOCHREALTIME
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { s = b - a; printf "%d:%02d", s / 60, s % 60 }'; }
die() { echo "bench-2host: $*" >&2; exit 2; }

echo "kiwi bench-2host: kiwi vs siw vs TCP between two guests ($NIC) and over veth in one guest ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo "command: $CMD"
echo "cells: $KIWI_BENCH_CELLS; MTUs $KIWI_BENCH_MTUS; $KIWI_BENCH_REPS repetitions"

[ -f "$KO" ] || die "${KO#"$ROOT"/} missing: run 'make'"
[ -f "$SO" ] || die "${SO#"$ROOT"/} missing: run 'make'"
[ -f "$SIWKO" ] || die "build/siw/siw.ko missing: run 'make siw'"
command -v python3 >/dev/null || die "python3 missing: run 'make deps'"

RAW=$OUT/raw.txt
PRAW=$OUT/pair-raw.txt
: >"$PRAW"
meta() { local IFS='|'; echo "meta|$*" >>"$PRAW"; }

# ----------------------------------------------------- phase 1: pair --
echo "bench-2host: phase 1: two guests (selftests/vm/pair.sh, $NIC, timeout ${TIMEOUT}s); a's progress below"
rm -rf "$PLOGS"
mkdir -p "$PLOGS/logs"
meta pair "selftests/vm/pair.sh: a (clients) and b (servers), Debian's 6.1 in both, 1 vCPU and $MEM MiB each, one $NIC NIC each, joined by QEMU's UDP socket backend on the host's loopback"
meta pair_load_before "$(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c qemu-system 2>/dev/null || echo 0) QEMU processes running"
"$ROOT/selftests/vm/pair.sh" --nic "$NIC" --smp 1 --mem "$MEM" --timeout "$TIMEOUT" \
	--module-a "$KO" --module-a "$SIWKO" --module-b "$KO" --module-b "$SIWKO" \
	--logs "$PLOGS" -- "$ROOT/bench/pair-guest.sh" 2>"$PLOGS/pair.log" &
PAIR_PID=$!
# a's progress as it comes (the protocol lines are read afterwards).
skip=0
while IFS= read -r line; do
	line=${line%$'\r'}
	case "$line" in
	"@bench logs-begin") skip=1 ;;
	"@bench logs-end") skip=0 ;;
	"@bench "*) ;;
	*) [ $skip = 1 ] || printf '[%s] %s\n' "$(elapsed)" "$line" ;;
	esac
done < <(tail -n +1 -F --pid="$PAIR_PID" "$PLOGS/a.log" 2>/dev/null)
wait "$PAIR_PID"
pair_rc=$?
sed -e 's/^/    /' "$PLOGS/pair.log"

# a's protocol lines, and its tools' output.
inlogs=0
while IFS= read -r line; do
	line=${line%$'\r'}
	case "$line" in
	"@bench logs-begin") inlogs=1; : >"$PLOGS/logs.b64"; continue ;;
	"@bench logs-end") inlogs=2; continue ;;
	esac
	if [ $inlogs = 1 ]; then
		printf '%s\n' "$line" >>"$PLOGS/logs.b64"
		continue
	fi
	case "$line" in "@bench "*) printf '%s\n' "${line#@bench }" >>"$PRAW" ;; esac
done <"$PLOGS/a.log"
if [ $inlogs = 2 ] && base64 -d "$PLOGS/logs.b64" | tar -C "$PLOGS/logs" -xzf -; then
	rm -f "$PLOGS/logs.b64"
fi
meta pair_load_after "$(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c qemu-system 2>/dev/null || echo 0) QEMU processes running"
meta pair_exit "$pair_rc"
dmesg_ok=1 dm=
for g in a b; do
	if [ -s "$PLOGS/$g-dmesg.log" ] &&
	   out=$("$ROOT/selftests/vm/check-dmesg.sh" "$PLOGS/$g-dmesg.log" 2>&1); then
		dm+="$g clean, "
	else
		dmesg_ok=0
		dm+="$g TROUBLE: $(printf '%s' "${out:-no dmesg saved}" | head -3 | tr '\n|' ' /'), "
		echo "bench-2host: kernel trouble in guest $g's dmesg (${PLOGS#"$ROOT"/}/$g-dmesg.log):"
		printf '%s\n' "${out:-no dmesg saved}" | head -40 | sed -e 's/^/    /'
	fi
done
meta pair_dmesg "${dm%, } (selftests/vm/check-dmesg.sh)"
meta pair_wall_time "$(elapsed)"
echo "bench-2host: phase 1 finished (selftests/vm/pair.sh exit $pair_rc) after $(elapsed)"

# ----------------------------------------------------- phase 2: veth --
echo
echo "bench-2host: phase 2: the same cells over veth in one guest (scripts/bench.sh)"
t2=$(elapsed)
env -u KIWI_BENCH_NO_CRC32C_INTEL -u KIWI_BENCH_NO_ERMS -u KIWI_BENCH_QUICK \
	KIWI_BENCH_OUT="$OUT/veth" KIWI_BENCH_CONFIGS=standard \
	KIWI_BENCH_QPMEM_QPS=0 KIWI_BENCH_CONNMEM=0 KIWI_BENCH_ALLOCS=0 \
	KIWI_BENCH_TIMEOUT="$TIMEOUT" KIWI_BENCH_STRICT=0 "$ROOT/scripts/bench.sh"
veth_rc=$?
echo "bench-2host: phase 2 finished (scripts/bench.sh exit $veth_rc), started at $t2, now $(elapsed)"

# ----------------------------------------------------------- report --
# veth's lines first (its configuration comes first in the report), then
# the pair's, then this invocation's own, which replace scripts/bench.sh's
# command, date and wall time.
{
	cat "$OUT/veth/raw.txt" 2>/dev/null
	cat "$PRAW"
	echo "meta|command|$CMD"
	echo "meta|date|$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "meta|wall_time|$(elapsed) (two guests $(grep '^meta|pair_wall_time|' "$PRAW" | cut -d'|' -f3), then veth)"
} >"$RAW"
echo
python3 "$ROOT/bench/report.py" "$RAW" "$OUT"
report_rc=$?

rc=0
case $pair_rc in
0) ;;
124) echo "bench-2host: a guest of the pair timed out after ${TIMEOUT}s (KIWI_BENCH_TIMEOUT)"; rc=1 ;;
*) echo "bench-2host: selftests/vm/pair.sh exit $pair_rc (failed runs or kernel trouble; see ${PLOGS#"$ROOT"/})"; rc=1 ;;
esac
[ $dmesg_ok = 1 ] || rc=1
case $veth_rc in
0) ;;
2) echo "bench-2host: scripts/bench.sh failed (usage or build error, exit 2)"; rc=2 ;;
*) echo "bench-2host: scripts/bench.sh exit $veth_rc (failed runs or kernel trouble; see ${OUT#"$ROOT"/}/veth)"; rc=1 ;;
esac
[ $report_rc -le 1 ] || { echo "bench-2host: report failed"; [ $rc = 2 ] || rc=1; }
if [ "${KIWI_BENCH_STRICT:-0}" = 1 ] && [ $report_rc = 1 ]; then rc=1; fi
echo "bench-2host: results in ${OUT#"$ROOT"/}/results.{md,csv,json}; log ${LOG#"$ROOT"/} ($(elapsed))"
exit $rc
exit
}
