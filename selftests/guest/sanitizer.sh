#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/guest/sanitizer.sh -- runs one guest suite on the sanitizer
# kernel (scripts/build-sanitizer-kernel; booted by the sanitizer phase of
# selftests/check with selftests/vm/run --kernel), then asks kmemleak for
# what the suite leaked.
#
#   KIWI_SAN_SUITE=abuse.sh selftests/vm/run --kernel DIR ... -- \
#       selftests/guest/sanitizer.sh
#
# KIWI_SAN_SUITE names a script in selftests/guest/.  Its TAP output and
# exit status pass through unchanged.  KASAN, UBSAN, lockdep, sleeping in
# atomic context and hung tasks report into the kernel log by themselves,
# where selftests/vm/check-dmesg finds them after the run.  kmemleak only
# reports when asked: the objects that exist before the suite are marked
# known ("clear"), and after it (kiwi unloaded or idle) two scans list what
# became unreferenced.  Those reports are copied into the kernel log, as
# "unreferenced object 0x..." lines with their allocation backtraces, so
# check-dmesg fails the run on them too.  KIWI_SAN_INJECT=1 writes a fake
# KASAN report after the suite: the phase must then fail (its self-test).
set -u

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
suite=${KIWI_SAN_SUITE:-}
if [ -z "$suite" ] || [ ! -x "$HERE/$suite" ]; then
	echo "sanitizer.sh: KIWI_SAN_SUITE must name a script in $HERE (got '$suite')"
	exit 2
fi
KML=/sys/kernel/debug/kmemleak

if [ -w "$KML" ]; then
	echo clear >"$KML"
else
	echo "# sanitizer.sh: no $KML (not the sanitizer kernel?): no leak check"
fi

"$HERE/$suite"
rc=$?

# A self-test of the phase: a report that must fail it (check-dmesg).
if [ -n "${KIWI_SAN_INJECT:-}" ]; then
	echo "# sanitizer.sh: KIWI_SAN_INJECT: writing a fake KASAN report to the kernel log"
	echo "<3>BUG: KASAN: slab-use-after-free in injected_by_sanitizer_sh+0x0/0x0" >/dev/kmsg
fi

if [ -w "$KML" ]; then
	# An object is reported once it has been unreferenced for more than
	# 5 s across a scan; freeing is asynchronous in places (RCU, work
	# items), so wait, then scan twice.
	sleep 6
	echo scan >"$KML"
	sleep 6
	echo scan >"$KML"
	leaks=$(cat "$KML")
	if [ -n "$leaks" ]; then
		n=$(grep -c '^unreferenced object' <<<"$leaks")
		echo "# sanitizer.sh: kmemleak: $n unreferenced object(s) after $suite:"
		head -n 200 <<<"$leaks" | sed 's/^/#   /'
		# Into the kernel log for check-dmesg (and the saved dmesg).
		echo "<3>kmemleak: $n new suspected memory leaks after $suite" >/dev/kmsg
		head -n 400 <<<"$leaks" | while IFS= read -r line; do
			echo "<3>kmemleak: $line" >/dev/kmsg
		done
	else
		echo "# sanitizer.sh: kmemleak: nothing unreferenced after $suite"
	fi
fi
exit "$rc"
