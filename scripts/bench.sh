#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench.sh -- kiwi against siw, rxe and plain TCP in matched
# configurations, in one boot of the test guest.  Run by `make bench`
# (after `make deps all siw`).
#
# Builds build/bench/qpmem (bench/qpmem.c) and two more builds of siw from
# build/siw/src: siw-crc (mpa_crc_required = true, so siw requests and
# checks MPA CRC32c) and siw-gso (try_gso = true: siw's own large FPDUs);
# siw as scripts/build-siw.sh builds it is the third.  Boots the guest once
# (selftests/vm/run.sh) and runs scripts/bench-guest.sh: kernel memory per QP,
# then for each configuration (KIWI_BENCH_CONFIGS) each MTU, repetition,
# cell and stack, the stacks' order rotated per repetition.  bench/report.py
# then prints one table per configuration and MTU with each stack's median
# and the paired ratios (median of the per-repetition ratios, with a
# bootstrap 95% interval), judges the targets by the interval (PASS only
# if the whole interval clears the target, FAIL only if none of it does,
# inconclusive otherwise), and writes
#   build/bench/results.md    the tables (Markdown) + targets + the command
#   build/bench/results.csv   every single run (status, value, extras, note)
#   build/bench/results.json  all of it, machine-readable
#   build/bench/bench.log     everything printed; logs/ every tool's output;
#   dmesg.log                 the guest's kernel log (checked for trouble)
#
# Configurations (scripts/bench-guest.sh has the details):
#   standard      kiwi large_fpdu=N crc=N vs siw as built; TCP ceiling
#                 (iperf3 -Z) and floor (sockperf ping-pong)
#   standard_crc  kiwi large_fpdu=N crc=Y vs siw-crc
#   shipped       both as shipped: kiwi's defaults vs siw as built; rxe
#   extended      kiwi large_fpdu=Y crc=N vs siw-gso
#   mixed         kiwi client -> siw server, siw client -> kiwi server, vs
#                 siw <-> siw, CRC off (mixed_crc: on, with siw-crc)
#   markers       kiwi <-> kiwi with MPA markers both ways vs without,
#                 standard wire, CRC on: what markers cost
#
# Exit status: 0 if every run produced a value and the guest's kernel log
# is clean, 1 otherwise (targets missed do not count, unless
# KIWI_BENCH_STRICT=1), 2 on usage or build errors.
#
# Environment:
#   KIWI_BENCH_CONFIGS  default "standard standard_crc mixed" (the
#                       targets' configurations; QUICK: "standard mixed");
#                       also shipped, extended, mixed_crc, markers
#   KIWI_BENCH_REPS     repetitions per cell (default 10; QUICK: 2)
#   KIWI_BENCH_MTUS     default "9000 1500" (QUICK: 9000)
#   KIWI_BENCH_CELLS    default "write_bw_4k write_bw_64k read_bw_64k
#                       send_bw_64k write_bw_64k_q4 send_lat_8 write_lat_8
#                       read_lat_8"; any OP_KIND_SIZE[_qN][_bi] works:
#                       OP write/read/send, KIND bw/lat, SIZE 8 64 4k 64k
#                       1m, N QPs, bi = bidirectional; the word
#                       "coverage" stands for 22 more cells: a size sweep
#                       (64 B..1 MiB) of write/read/send bandwidth, 16 and
#                       64 QPs, bidirectional, latency at 4 KiB and 64 KiB
#   KIWI_BENCH_STACKS   restrict every configuration to these stacks
#   KIWI_BENCH_DURATION seconds per bandwidth run (perftest -D, iperf3 -t;
#                       default 3, QUICK 1)
#   KIWI_BENCH_ITERS_LAT  perftest -n for latency (5000;
#                       QUICK 1000)
#   KIWI_BENCH_ALLOCS=1 also count slab allocations per message (perf stat)
#   KIWI_BENCH_ALLOC_ITERS  messages in that run (2000)
#   KIWI_BENCH_QUICK=1  smoke test (a few minutes)
#   KIWI_BENCH_NO_CRC32C_INTEL=1  boot the guest with crc32c_intel
#                       blacklisted: siw's crypto-API CRC32c (and the
#                       kernel's) is then table code, like kiwi's crc_impl
#                       choice under TCG
#   KIWI_BENCH_NO_ERMS=1  guest CPU without ERMS/FSRM (rep movsb, which TCG
#                       runs slowly, is then not the kernel's copy)
#   KIWI_BENCH_RUN_TIMEOUT  seconds per tool run (default 90); a run that
#                       times out is "err", and so are the later repetitions
#                       of that configuration+stack+cell+MTU (not run)
#   KIWI_BENCH_RETRIES  extra attempts when perftest's clock calibration
#                       fails (2)
#   KIWI_BENCH_QPMEM_QPS, KIWI_BENCH_QPMEM_WRS   (1000, QUICK 200; 1024);
#                       KIWI_BENCH_QPMEM_QPS=0 leaves the memory test out
#   KIWI_BENCH_CONNMEM  connected QP pairs whose kernel memory is measured
#                       for kiwi and siw (200; QUICK 50; 0: not measured)
#   KIWI_BENCH_SLUB     guest slub_debug flags (default off; make check
#                       boots with FZPU)
#   KIWI_BENCH_TIMEOUT  guest timeout, s (default 14400; QUICK: 1800)
#   KIWI_BENCH_MEM, KIWI_BENCH_SMP   guest RAM in MB and CPUs (3072, 2)
#   KIWI_BENCH_STRICT=1 exit 1 if a target is missed or inconclusive, too
#   KIWI_BENCH_OUT      output directory (default build/bench; make
#                       bench-2host runs this script with its own)
#   BUILD               build directory (default: build)
set -u
export LC_ALL=C
# The whole script is one compound command, which bash reads completely
# before running it: editing this file during a run cannot derail the run.
{

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-$ROOT/build}
OUT=${KIWI_BENCH_OUT:-$BUILD/bench}
KO=$ROOT/kmod/kiwi.ko
SO=$BUILD/provider/libkiwi-rdmav34.so
SIWSRC=$BUILD/siw/src
VMRUN=$ROOT/selftests/vm/run.sh
QUICK=${KIWI_BENCH_QUICK:-}
[ "$QUICK" = 0 ] && QUICK=
if [ -n "$QUICK" ]; then TIMEOUT=${KIWI_BENCH_TIMEOUT:-1800}
else TIMEOUT=${KIWI_BENCH_TIMEOUT:-14400}; fi
MEM=${KIWI_BENCH_MEM:-3072}
SMP=${KIWI_BENCH_SMP:-2}
SLUB=${KIWI_BENCH_SLUB:-off}

case "${1:-}" in
"") ;;
-h|--help) sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) echo "usage: $0 [--help]" >&2; exit 2 ;;
esac

mkdir -p "$OUT"
LOG=$OUT/bench.log
exec > >(tee "$LOG") 2>&1
TEE_PID=$!
# shellcheck disable=SC2154 # rc is assigned in the trap itself
trap 'rc=$?; exec >&- 2>&-; wait "$TEE_PID"; exit $rc' EXIT

T0=$EPOCHREALTIME
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { s = b - a; printf "%d:%02d", s / 60, s % 60 }'; }
die() { echo "bench: $*" >&2; exit 2; }

# Reproduce the exact command line in the report.
CMD="make bench"
for v in ${!KIWI_BENCH_@}; do
	case ${!v} in *[[:space:]]*) CMD="$v='${!v}' $CMD" ;; *) CMD="$v=${!v} $CMD" ;; esac
done

echo "kiwi bench: kiwi vs siw vs rxe vs TCP in one QEMU guest ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo "command: $CMD"

# ------------------------------------------------------------ build --
[ -f "$KO" ] || die "${KO#"$ROOT"/} missing: run 'make'"
[ -f "$SO" ] || die "${SO#"$ROOT"/} missing: run 'make'"
[ -f "$SIWSRC/siw_main.c" ] && [ -f "$BUILD/siw/siw.ko" ] ||
	die "build/siw missing: run 'make siw'"
command -v python3 >/dev/null || die "python3 missing: run 'make deps'"

echo "bench: building ${OUT#"$ROOT"/}/qpmem"
gcc -O2 -Wall -Wextra -Werror -o "$OUT/qpmem" "$ROOT/bench/qpmem.c" -libverbs ||
	die "cannot build bench/qpmem.c (libibverbs-dev: make deps)"

# siw 6.1 has no module parameters for CRC or GSO: mpa_crc_required and
# try_gso are compile-time constants (false).  Build a copy with each set.
KDIR=${KDIR:-$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -1)}
siw_variant() {	# siw_variant NAME VARIABLE
	local dir=$OUT/siw-$1
	mkdir -p "$dir"
	cp "$SIWSRC"/*.[ch] "$SIWSRC/Makefile" "$dir/"
	sed -i "s/^const bool $2;/const bool $2 = true;/" "$dir/siw_main.c"
	grep -q "^const bool $2 = true;" "$dir/siw_main.c" ||
		die "cannot set $2 in siw_main.c (source changed?)"
	echo "bench: building siw with $2 = true (${OUT#"$ROOT"/}/siw-$1)"
	make -s -C "$KDIR" M="$dir" modules 2>&1 | grep -v 'Skipping BTF' >&2
	[ -f "$dir/siw.ko" ] || die "siw-$1 build failed"
}
siw_variant crc mpa_crc_required
siw_variant gso try_gso
export KIWI_BENCH_SIW_CRC_KO=$OUT/siw-crc/siw.ko KIWI_BENCH_SIW_GSO_KO=$OUT/siw-gso/siw.ko
SIWNOTE="siw from linux-source-6.1: as built (build/siw), mpa_crc_required = true (siw-crc), try_gso = true (siw-gso)"

# Emulator distortions, removable: crc32c_intel (the SSE4.2 instruction,
# which TCG runs bit by bit) and ERMS/FSRM (rep movsb, slow under TCG).
VMARGS=()
CPUNOTE="-cpu max"
if [ "${KIWI_BENCH_NO_CRC32C_INTEL:-0}" = 1 ]; then
	VMARGS+=(--append "modprobe.blacklist=crc32c_intel")
	CPUNOTE+=", crc32c_intel blacklisted"
fi
if [ "${KIWI_BENCH_NO_ERMS:-0}" = 1 ]; then
	export KIWI_QEMU_EXTRA="${KIWI_QEMU_EXTRA:-} -cpu max,erms=off,fsrm=off"
	CPUNOTE="-cpu max,erms=off,fsrm=off${CPUNOTE#-cpu max}"
fi

# ------------------------------------------------------------- meta --
RAW=$OUT/raw.txt
: >"$RAW"
meta() { local IFS='|'; echo "meta|$*" >>"$RAW"; }
meta command "$CMD"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta git "$(git -C "$ROOT" describe --always --dirty 2>/dev/null) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD 2>/dev/null))"
meta kiwi_module "$(modinfo -F version "$KO") ($(modinfo -F vermagic "$KO" | cut -d' ' -f1))"
meta siw "$SIWNOTE"
meta host "$(nproc) CPUs, $(uname -r)"
meta guest "QEMU TCG ($CPUNOTE), $SMP vCPUs, $MEM MiB, selftests/vm/run.sh --slub-debug $SLUB"
meta load_before "$(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c qemu-system 2>/dev/null || echo 0) QEMU processes running"

# ------------------------------------------------------------ guest --
echo "bench: booting the guest (timeout ${TIMEOUT}s); progress below is the guest's"
rm -rf "$OUT/logs" "$OUT/logs.b64"
mkdir -p "$OUT/logs"
inlogs=0 run_rc=
while IFS= read -r line; do
	line=${line%$'\r'}
	case "$line" in
	"@bench-rc "*) run_rc=${line#@bench-rc }; continue ;;
	"@bench logs-begin") inlogs=1; : >"$OUT/logs.b64"; continue ;;
	"@bench logs-end") inlogs=2; continue ;;
	esac
	if [ $inlogs = 1 ]; then
		printf '%s\n' "$line" >>"$OUT/logs.b64"
		continue
	fi
	case "$line" in
	"@bench "*) printf '%s\n' "${line#@bench }" >>"$RAW" ;;
	*) printf '[%s] %s\n' "$(elapsed)" "$line" ;;
	esac
done < <(KIWI_BENCH_QPMEM=$OUT/qpmem "$VMRUN" --quiet --timeout "$TIMEOUT" \
		--mem "$MEM" --smp "$SMP" --slub-debug "$SLUB" \
		--module "$KO" --module "$BUILD/siw/siw.ko" "${VMARGS[@]}" \
		--dmesg "$OUT/dmesg.log" -- "$ROOT/scripts/bench-guest.sh" 2>"$OUT/vm-stderr.log";
	echo "@bench-rc $?")
if [ $inlogs = 2 ] && base64 -d "$OUT/logs.b64" | tar -C "$OUT/logs" -xzf -; then
	rm -f "$OUT/logs.b64"
fi

meta load_after "$(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c qemu-system 2>/dev/null || echo 0) QEMU processes running"
meta guest_exit "${run_rc:-?}"
grep -v '^vm: command exit code' "$OUT/vm-stderr.log" | sed -e 's/^/    /'
dmesg_ok=1
if [ -s "$OUT/dmesg.log" ] && out=$("$ROOT/selftests/vm/check-dmesg.sh" "$OUT/dmesg.log" 2>&1); then
	meta dmesg "clean (selftests/vm/check-dmesg.sh)"
else
	dmesg_ok=0
	meta dmesg "TROUBLE: $(printf '%s' "${out:-no dmesg saved}" | head -3 | tr '\n|' ' /')"
	echo "bench: kernel trouble in the guest's dmesg (${OUT#"$ROOT"/}/dmesg.log):"
	printf '%s\n' "${out:-no dmesg saved}" | head -40 | sed -e 's/^/    /'
fi
meta wall_time "$(elapsed)"
echo "bench: guest finished (selftests/vm/run.sh exit ${run_rc:-?}) after $(elapsed)"

# ----------------------------------------------------------- report --
echo
python3 "$ROOT/bench/report.py" "$RAW" "$OUT"
report_rc=$?

rc=0
case "${run_rc:-x}" in
0) ;;
124) echo "bench: the guest timed out after ${TIMEOUT}s (KIWI_BENCH_TIMEOUT)"; rc=1 ;;
*) echo "bench: guest exit status ${run_rc:-?} (failed runs or kernel trouble; see above)"; rc=1 ;;
esac
[ $dmesg_ok = 1 ] || rc=1
[ $report_rc -le 1 ] || { echo "bench: report failed"; rc=1; }
if [ "${KIWI_BENCH_STRICT:-0}" = 1 ] && [ $report_rc = 1 ]; then rc=1; fi
echo "bench: results in ${OUT#"$ROOT"/}/results.{md,csv,json}; log ${LOG#"$ROOT"/} ($(elapsed))"
exit $rc
exit
}
