#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/fuzz-verbs/run-guest.sh -- `make fuzz-verbs`: boots a test guest
# with kmod/kiwi.ko and runs selftests/guest/fuzz-verbs.sh in it (the
# stateful verbs fuzzer, several seeds, then unload, leak and dmesg
# checks).  Not part of make check.
#
#   make fuzz-verbs                                   3 minutes
#   KIWI_FUZZ_MINUTES=30 make fuzz-verbs              longer
#   KIWI_FUZZ_SEED=1234 KIWI_FUZZ_MINUTES=1 make fuzz-verbs   replay a run
#
# The guest's output is in build/fuzz-verbs/fuzz-verbs.log, its kernel log
# in build/fuzz-verbs/dmesg.log.  Exit status 0 only if every run passed.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
OUT=$ROOT/build/fuzz-verbs
MIN=${KIWI_FUZZ_MINUTES:-3}
export KIWI_FUZZ_MINUTES=$MIN
mkdir -p "$OUT"
echo "fuzz-verbs: $MIN minutes in a guest (log: ${OUT#"$ROOT"/}/fuzz-verbs.log)"
# Each run may overrun its time by its 150 s bound; the boot and the
# unload checks need a few minutes more.
"$ROOT/selftests/vm/run.sh" --quiet --module "$ROOT/kmod/kiwi.ko" \
	--timeout $((MIN * 60 + 900)) --dmesg "$OUT/dmesg.log" -- \
	"$ROOT/selftests/guest/fuzz-verbs.sh" 2>&1 | tee "$OUT/fuzz-verbs.log" |
	grep --line-buffered -vE '^#   \['
rc=${PIPESTATUS[0]}
echo "fuzz-verbs: exit $rc"
exit "$rc"
