#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/demo.sh -- show kiwi working, end to end, in a throw-away test guest.
# Run by `make demo` (after `make deps all`); can be run directly once
# kmod/kiwi.ko and build/provider/libkiwi-rdmav34.so are built.
#
# Boots Debian's 6.1 kernel once in QEMU (selftests/vm/run.sh) and runs
# scripts/demo-guest.sh there: modprobe kiwi, module parameters, a veth pair
# kv0/kv1 (10.91.0.1/24, 10.91.0.2/24) in namespaces kiwi-a/kiwi-b, RDMA
# devices kiwi0/kiwi1 on them (rdma link add), rdma link, ibv_devices,
# ibv_devinfo, the user-space provider, a pyverbs smoke test, teardown.
# Then checks the guest's kernel log and prints a summary table.
#
# Exit status: 0 if every step passed, 1 otherwise, 2 on usage error.
#
# Environment:
#   KIWI_DEMO_TIMEOUT  guest timeout in seconds (default 600)
#   BUILD              build directory (default: build)
# Logs: build/demo/demo.log (everything printed), build/demo/dmesg.log
# (the guest's kernel log), build/vm/console-last.log (guest console).
set -u
export LC_ALL=C

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-$ROOT/build}
LOGDIR=$BUILD/demo
TIMEOUT=${KIWI_DEMO_TIMEOUT:-600}
KO=$ROOT/kmod/kiwi.ko
SO=$BUILD/provider/libkiwi-rdmav34.so
GUEST=$ROOT/scripts/demo-guest.sh
VMRUN=$ROOT/selftests/vm/run.sh

case "${1:-}" in
"") ;;
-h|--help) sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) echo "usage: $0 [--help]" >&2; exit 2 ;;
esac

mkdir -p "$LOGDIR"
LOG=$LOGDIR/demo.log
DMESG=$LOGDIR/dmesg.log
VMERR=$LOGDIR/vm-stderr.log
# Everything we print also goes to the log; at exit, wait for tee so the
# output is complete when we return.
exec > >(tee "$LOG") 2>&1
TEE_PID=$!
# shellcheck disable=SC2154 # rc is assigned in the trap itself
trap 'rc=$?; exec >&- 2>&-; wait "$TEE_PID"; exit $rc' EXIT

if [ -t 1 ]; then
	B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' Y=$'\e[33m' N=$'\e[0m'
else
	B='' G='' R='' Y='' N=''
fi

T0=$EPOCHREALTIME
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { s = b - a; printf "%d:%04.1f", s / 60, s - int(s / 60) * 60 }'; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
colour() {
	case $1 in
	PASS) printf '%s%s%s' "$G" "$1" "$N" ;;
	FAIL) printf '%s%s%s' "$R" "$1" "$N" ;;
	*) printf '%s%s%s' "$Y" "$1" "$N" ;;
	esac
}

# Step bookkeeping: number, title, status, seconds, note.
ST_TITLE=() ST_STATUS=() ST_SECS=() ST_NOTE=()
NSTEP=0
TOTAL=0
header() {	# header TITLE: start the next step
	NSTEP=$((NSTEP + 1))
	ST_TITLE[NSTEP]=$1
	STEP_T0=$EPOCHREALTIME
	echo
	printf '%s[%7s] step %d/%d: %s%s\n' "$B" "$(elapsed)" "$NSTEP" "$TOTAL" "$1" "$N"
}
result() {	# result STATUS SECONDS [NOTE]: finish the current step
	ST_STATUS[NSTEP]=$1 ST_SECS[NSTEP]=$2 ST_NOTE[NSTEP]=${3:-}
	if [ "$2" = - ]; then echo "    => $(colour "$1")${3:+: $3}"
	else echo "    => $(colour "$1") (${2} s)${3:+: $3}"; fi
}

# Guest steps, from the guest script itself (one list, one place).
mapfile -t GSTEPS < <("$GUEST" --list 2>/dev/null)
TOTAL=$((2 + ${#GSTEPS[@]} + 2))

echo "${B}kiwi demo${N}: software iWARP RDMA NIC in a throw-away QEMU guest ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo "log: ${LOG#"$ROOT"/}"

# ------------------------------------------------ 1. build artifacts --
header "Built artifacts: kernel module and user-space provider"
ok=1
if [ -f "$KO" ]; then
	echo "    ${KO#"$ROOT"/}: $(modinfo -F version "$KO") for $(modinfo -F vermagic "$KO" | cut -d' ' -f1)"
else
	echo "    ${KO#"$ROOT"/} missing: run 'make' (or 'make demo')"; ok=0
fi
if [ -f "$SO" ]; then
	echo "    ${SO#"$ROOT"/}: $(stat -c %s "$SO") bytes"
else
	echo "    ${SO#"$ROOT"/} missing: run 'make' (or 'make demo')"; ok=0
fi
[ ${#GSTEPS[@]} -gt 0 ] || { echo "    $GUEST --list printed nothing"; ok=0; }
kver=${KVER:-$(basename "$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)" | sed 's/^linux-headers-//')}
echo "    guest kernel: Debian ${kver:-<no linux-headers-6.1.*-amd64 installed>}"
if [ -f "$KO" ] && [ -n "$kver" ] && [ "$(modinfo -F vermagic "$KO" | cut -d' ' -f1)" != "$kver" ]; then
	echo "    kiwi.ko was built for another kernel than the guest boots: run 'make'"; ok=0
fi
if [ $ok = 1 ]; then result PASS "$(since "$STEP_T0")"; else result FAIL "$(since "$STEP_T0")" "build first"; fi
BUILD_OK=$ok

# ------------------------------------------------- 2. guest + steps --
header "Boot the test guest (QEMU/TCG, Debian $kver)"
echo "    \$ selftests/vm/run.sh --quiet --module kmod/kiwi.ko --timeout $TIMEOUT -- scripts/demo-guest.sh"
echo "    (the guest sees this tree read-only; everything in it is ~20x slower than on the host)"
BOOT_STEP=$NSTEP
BOOT_T0=$EPOCHREALTIME
booted=0 done=0
DEVROWS=()
run_rc=
cur=	# guest step begun but not yet ended
if [ "$BUILD_OK" = 1 ]; then
	: >"$VMERR"
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in "@kiwi-demo rc "*) run_rc=${line#@kiwi-demo rc }; continue ;; esac
		if [ $booted = 0 ]; then
			booted=1
			result PASS "$(since "$BOOT_T0")" "guest up, running scripts/demo-guest.sh"
		fi
		case "$line" in
		"@kiwi-demo begin "*)
			rest=${line#@kiwi-demo begin }
			header "${rest#* }"
			cur=${rest%% *} ;;
		"@kiwi-demo end "*)
			read -r _ _ _ st secs note <<<"$line"
			result "$st" "$secs" "$note"
			cur= ;;
		"@kiwi-demo dev "*)
			DEVROWS+=("${line#@kiwi-demo dev }") ;;
		"@kiwi-demo done")
			done=1 ;;
		*)	printf '%s\n' "$line" ;;
		esac
	done < <(KIWI_DEMO=1 "$VMRUN" --quiet --module "$KO" --timeout "$TIMEOUT" \
			--dmesg "$DMESG" -- "$GUEST" 2>"$VMERR"; echo "@kiwi-demo rc $?")
fi

if [ "$BUILD_OK" != 1 ]; then
	result "NOT RUN" - "no build"
elif [ $booted = 0 ]; then
	result FAIL "$(since "$BOOT_T0")" "the guest printed nothing"
fi
# A step the guest began but never finished (timeout, crash).
if [ -n "$cur" ]; then
	result FAIL "$(since "$STEP_T0")" "the guest stopped during this step"
fi
# Guest steps that never began: listed as not run (no result invented).
for ((i = NSTEP - BOOT_STEP; i < ${#GSTEPS[@]}; i++)); do
	NSTEP=$((NSTEP + 1))
	ST_TITLE[NSTEP]=${GSTEPS[i]#*$'\t'} ST_STATUS[NSTEP]="NOT RUN" ST_SECS[NSTEP]=- ST_NOTE[NSTEP]=
done

# ------------------------------------------------- guest finished --
header "Guest finished and powered off"
if [ "$BUILD_OK" != 1 ]; then
	result "NOT RUN" - "no build"
else
	grep '^vm:' "$VMERR" | sed -e 's/^/    /'
	case "$run_rc" in
	124) result FAIL "$(since "$BOOT_T0")" "guest timed out after ${TIMEOUT} s (KIWI_DEMO_TIMEOUT)" ;;
	125) result FAIL "$(since "$BOOT_T0")" "guest died; see build/vm/console-last.log" ;;
	*)	if [ $done = 1 ]; then
			echo "    all ${#GSTEPS[@]} guest steps reported; selftests/vm/run.sh exit status $run_rc"
			result PASS "$(since "$BOOT_T0")" "whole guest run"
		else
			result FAIL "$(since "$BOOT_T0")" "selftests/vm/run.sh exit status ${run_rc:-?} before all steps ran"
			sed -e 's/^/    /' "$VMERR" | grep -v '^    vm:' | head -20
		fi ;;
	esac
fi

# ---------------------------------------------------- guest dmesg --
header "Guest dmesg clean (check-dmesg.sh: no WARNING, BUG, Oops, ...)"
if [ "$BUILD_OK" != 1 ] || [ ! -s "$DMESG" ]; then
	if [ "$BUILD_OK" != 1 ]; then result "NOT RUN" - "no build"
	else result FAIL 0.0 "no guest dmesg saved ($DMESG)"; fi
else
	case "$run_rc" in 124|125)
		echo "    the guest saved no dmesg: checking its console log (kernel messages of level warning and worse)" ;;
	esac
	echo "    kiwi's messages in the guest's dmesg (${DMESG#"$ROOT"/}):"
	grep -E '\] kiwi[0-9]*: ' "$DMESG" | sed -e 's/^/      /' | grep . || echo "      (none)"
	if out=$("$ROOT/selftests/vm/check-dmesg.sh" "$DMESG" 2>&1); then
		echo "    \$ selftests/vm/check-dmesg.sh ${DMESG#"$ROOT"/}: clean"
		result PASS "$(since "$STEP_T0")" "dmesg clean"
	else
		printf '%s\n' "$out" | head -60 | sed -e 's/^/      /'
		result FAIL "$(since "$STEP_T0")" "kernel trouble in the guest's dmesg"
	fi
fi

# --------------------------------------------------------- summary --
echo
echo "${B}==================================== summary ====================================${N}"
if [ ${#DEVROWS[@]} -gt 0 ]; then
	printf '  %-8s %-8s %-12s %-17s %s\n' DEVICE NETDEV TRANSPORT "PORT STATE" "ACTIVE MTU"
	for r in "${DEVROWS[@]}"; do
		IFS='|' read -r d nd t st mtu <<<"$r"
		printf '  %-8s %-8s %-12s %-17s %s\n' "$d" "$nd" "$t" "$st" "$mtu"
	done
else
	echo "  (no device information: the devinfo step did not run)"
fi
echo
printf '  %3s  %-66s %-7s %8s\n' "#" STEP RESULT TIME
pass=0 fail=0 skip=0 notrun=0
for ((i = 1; i <= NSTEP; i++)); do
	st=${ST_STATUS[i]:-FAIL}
	case $st in
	PASS) pass=$((pass + 1)) ;;
	SKIP) skip=$((skip + 1)) ;;
	"NOT RUN") notrun=$((notrun + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
	secs=${ST_SECS[i]}
	[ "$secs" = - ] || secs="$secs s"
	printf '  %3d  %-66.66s %s%*s %8s\n' "$i" "${ST_TITLE[i]}" "$(colour "$st")" $((7 - ${#st})) "" "$secs"
	[ "$st" = PASS ] || [ -z "${ST_NOTE[i]}" ] || printf '       %s\n' "-> ${ST_NOTE[i]}"
done
echo
echo "  more: make check (error paths, interop with Linux siw, NVMe over RDMA), make bench (vs siw, rxe, TCP)"
echo "  logs: ${LOG#"$ROOT"/}, ${DMESG#"$ROOT"/}, build/vm/console-last.log"
echo
counts="$pass passed, $fail failed, $skip skipped, $notrun not run"
if [ $fail -eq 0 ] && [ $notrun -eq 0 ]; then
	echo "${G}${B}kiwi demo: OK${N} ($counts; $NSTEP steps in $(elapsed))"
	exit 0
fi
echo "${R}${B}kiwi demo: FAILED${N} ($counts; $(elapsed)); see the notes above and ${LOG#"$ROOT"/}"
exit 1
