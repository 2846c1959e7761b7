#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/summary.sh RESULTS [SECONDS] -- make check's summary of a
# results file (one "STATUS<TAB>name<TAB>note" line per result, STATUS
# PASS, FAIL, SKIP, TODO, HARNESS or RETRY; selftests/check.sh writes it).
#
# Prints the per-test list, the failures, known bugs, harness faults,
# retries and left-out phases by name, then two lines:
#	N known bugs, N harness faults, N retries; phases left out: A,B|none
#	N passed, N failed, N skipped
# The last line is the one CI reads (.ci/run).  "passed" counts PASS
# lines only; a known bug (TODO) is neither passed nor failed, and is
# counted on the line before.  Exit status 1 if anything failed (or the
# file is missing), else 0.  selftests/verdicts.sh checks this on
# made-up results.
set -u

res=${1:?usage: summary RESULTS [SECONDS]}
[ -r "$res" ] || { echo "summary: cannot read $res" >&2; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
count() { grep -c "^$1	" "$res"; }
# list STATUS TITLE: the names (and notes) of STATUS lines, under TITLE.
list() {
	grep -q "^$1	" "$res" || return 0
	echo "$2"
	awk -F'\t' -v s="$1" '$1 == s { printf "  %s%s\n", $2, ($3 != "" ? "  (" $3 ")" : "") }' "$res"
}

pass=$(count PASS)
fail=$(count FAIL)
skip=$(count SKIP)
todo=$(count TODO)
harness=$(count HARNESS)
retry=$(count RETRY)
left=$(awk -F'\t' '$1 == "SKIP" && $2 ~ /^phase\./ { sub(/^phase\./, "", $2); printf "%s%s", (n++ ? "," : ""), $2 }' "$res")

echo
echo "==================== per-test summary ===================="
awk -F'\t' '{ printf "%-7s %s%s\n", $1, $2, ($3 != "" ? "  (" $3 ")" : "") }' "$res"
echo "=========================================================="
list FAIL "failed:"
list TODO "known bugs (TODO: failing as the test expects; not counted as passed):"
list HARNESS "harness faults (a guest died before its test started, or the emulator ran a stale int3; the phase was run again):"
list RETRY "retries (a run repeated on evidence that a tool, not kiwi, lost it):"
[ -z "$left" ] || echo "phases left out (KIWI_CHECK_SKIP): $left"
[ -z "${2:-}" ] || printf '[check %4ds] done\n' "$2"
echo "$todo known bugs, $harness harness faults, $retry retries; phases left out: ${left:-none}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
