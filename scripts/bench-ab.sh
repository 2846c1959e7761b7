#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-ab.sh -- two builds of kiwi.ko, A and B, measured against
# each other in one guest boot (bench/ab-guest.sh): the same perftest
# cells, taking turns, several repetitions, medians and B/A.  For a
# change that must not cost performance (a refactor): build the old
# module somewhere (see below), then
#
#   scripts/bench-ab.sh OLD/kiwi.ko kmod/kiwi.ko
#
# Building the module of an older commit C without touching the tree:
#   git worktree add /tmp/kiwi-C C && make -C /tmp/kiwi-C kmod
#
# Environment: KIWI_AB_REPS (5), KIWI_AB_MTU (9000), KIWI_AB_CELLS (see
# bench/ab-guest.sh), KIWI_AB_SLUB (slub_debug flags, default off as for
# make bench), KIWI_AB_TIMEOUT (guest timeout, s, default 2400).
# Output: build/bench-ab/ab.log (every run and the table), dmesg.log.
# Exit status: the guest's (non-zero if it failed or its kernel log
# shows trouble).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
[ $# -eq 2 ] && [ -f "$1" ] && [ -f "$2" ] || {
	echo "usage: scripts/bench-ab.sh A/kiwi.ko B/kiwi.ko" >&2
	exit 2
}
A=$(readlink -f "$1") B=$(readlink -f "$2")
OUT=$ROOT/build/bench-ab
mkdir -p "$OUT"
echo "bench-ab: A=$A B=$B (log: ${OUT#"$ROOT"/}/ab.log)"
"$ROOT/selftests/vm/run.sh" --quiet --slub-debug "${KIWI_AB_SLUB:-off}" \
	--mem 3072 --timeout "${KIWI_AB_TIMEOUT:-2400}" --dmesg "$OUT/dmesg.log" \
	-- "$ROOT/bench/ab-guest.sh" "$A" "$B" 2>&1 | tee "$OUT/ab.log"
exit "${PIPESTATUS[0]}"
