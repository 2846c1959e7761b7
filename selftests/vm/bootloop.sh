#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/bootloop.sh -- how often does the test guest die by itself?
#
#   selftests/vm/bootloop.sh [-n BOOTS] [-k KVER] [-- VM_RUN_OPTIONS...]
#
# Boots the guest BOOTS times (default 30) through selftests/vm/run.sh with
# a trivial command (`true`), one after the other, with the options
# make check uses (slub_debug=FZPU) plus any given after --, and counts
# the outcomes: ok, crash (Oops/BUG/panic on the console before the
# command ran), hang (the boot did not reach the command), other.  One
# progress line per boot; at the end a summary line
#
#	bootloop: KVER: N boots: N ok, N crash, N hang, N other; mean S s
#
# and the console logs of failed boots in build/vm/bootloop/.  Exit
# status 0 if every boot was ok.  KVER: the kernel (default: vm/run.sh's).
set -u
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
n=30
while [ $# -gt 0 ]; do
	case "$1" in
	-n) n=$2; shift 2 ;;
	-k) export KVER=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: selftests/vm/bootloop.sh [-n BOOTS] [-k KVER] [-- VM_RUN_OPTIONS...]" >&2; exit 2 ;;
	esac
done
OUT=$REPO/build/vm/bootloop
mkdir -p "$OUT"
ok=0 crash=0 hang=0 other=0 total_t=0
kver=${KVER:-default}
for i in $(seq 1 "$n"); do
	t0=$SECONDS
	log=$OUT/boot-$kver-$i.log
	"$HERE/run.sh" --quiet --timeout 300 "$@" -- true >"$log" 2>&1
	rc=$?
	t=$((SECONDS - t0))
	total_t=$((total_t + t))
	if grep -q 'did not reach its command' "$log"; then
		# vm/run.sh boots again after a hang; it still counts here.
		kind="hang (exit $rc after vm/run.sh's retry)"
		hang=$((hang + 1))
		cp "$REPO/build/vm/console-last.log" "$log.console"
	elif [ $rc -eq 0 ]; then
		kind=ok
		ok=$((ok + 1))
		rm -f "$log"
	elif grep -qE 'Oops|BUG:|Kernel panic|general protection|int3' \
		"$REPO/build/vm/console-last.log" "$log"; then
		kind=crash
		crash=$((crash + 1))
		cp "$REPO/build/vm/console-last.log" "$log.console"
	else
		kind="other (exit $rc)"
		other=$((other + 1))
		cp "$REPO/build/vm/console-last.log" "$log.console"
	fi
	printf 'bootloop: %s boot %d/%d: %s, %d s\n' "$kver" "$i" "$n" "$kind" "$t"
done
printf 'bootloop: %s: %d boots: %d ok, %d crash, %d hang, %d other; mean %d s; load %s\n' \
	"$kver" "$n" "$ok" "$crash" "$hang" "$other" $((total_t / n)) \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
[ "$ok" -eq "$n" ]
