#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# scripts/fuzz.sh -- `make fuzz`: build the libFuzzer targets of
# selftests/fuzz with clang (-fsanitize=fuzzer,address,undefined) and run
# each for KIWI_FUZZ_SECONDS (default 60) from its committed seed corpus,
# KIWI_FUZZ_JOBS of them at a time (default: one per CPU).
#
# Per target one PASS/FAIL line (with executions and coverage); the last
# line is "N passed, N failed".  A crash or broken invariant leaves its
# input in build/fuzz/TARGET/crash-* (libFuzzer's name) and fails the
# target; to keep it as a regression test, copy it into
# selftests/fuzz/corpus/TARGET/ (ctest replays that directory with the
# ordinary compiler on every make check).  Corpus growth stays in
# build/fuzz/TARGET/corpus, not in the tree.
#
# Needs clang and libfuzzer-14-dev (make deps installs both).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
SECS=${KIWI_FUZZ_SECONDS:-60}
JOBS=${KIWI_FUZZ_JOBS:-$(nproc)}
OUT=$ROOT/build/fuzz
SRC=$ROOT/selftests/fuzz
CC=${KIWI_FUZZ_CC:-clang}
pass=0 fail=0
mkdir -p "$OUT"

# build TARGET: compile it and seed its corpus; prints a FAIL line and
# returns 1 if it does not compile.
build() {
	local t=$1 d=$OUT/$1
	mkdir -p "$d/corpus"
	if ! "$CC" -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -I"$ROOT/include" -I"$ROOT/include/uapi" \
		-o "$d/$t" "$SRC/$t.c" >"$d/build.log" 2>&1; then
		echo "FAIL $t: build ($(head -c 300 "$d/build.log"))"
		return 1
	fi
	cp -n "$SRC/corpus/$t"/* "$d/corpus/" 2>/dev/null
	rm -f "$d"/crash-* "$d"/leak-* "$d"/timeout-* "$d/verdict"
	return 0
}

# fuzz TARGET: run it for SECS; its verdict line goes to $OUT/TARGET/verdict.
fuzz() {
	local t=$1 d=$OUT/$1 rc stats
	(cd "$d" && "./$t" -max_total_time="$SECS" -print_final_stats=1 \
		corpus >"$d/run.log" 2>&1)
	rc=$?
	stats=$(grep -E '^#[0-9]+.*(DONE|pulse)' "$d/run.log" | tail -1 |
		sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/\1 runs, /')
	if [ $rc -eq 0 ] && ! ls "$d"/crash-* >/dev/null 2>&1; then
		echo "PASS $t: ${SECS}s, $stats" >"$d/verdict"
	else
		{
			echo "FAIL $t: exit $rc; $(ls "$d"/crash-* 2>/dev/null | head -1)"
			grep -m3 -E 'ERROR|invariant|SUMMARY' "$d/run.log" | sed 's/^/    /'
		} >"$d/verdict"
	fi
}

# Each target is one libFuzzer process on one CPU: JOBS of them at a
# time (all the CPUs by default), so the phase takes SECS per round of
# JOBS targets, not SECS per target, and each still gets SECS of a CPU.
targets=()
for src in "$SRC"/fuzz_*.c; do
	t=$(basename "$src" .c)
	if build "$t"; then
		targets+=("$t")
	else
		fail=$((fail + 1))
	fi
done
running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz "$t" &
	running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
	if [ -f "$OUT/$t/verdict" ] && grep -q '^PASS' "$OUT/$t/verdict"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
	cat "$OUT/$t/verdict" 2>/dev/null || echo "FAIL $t: no verdict"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
