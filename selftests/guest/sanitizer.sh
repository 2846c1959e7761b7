#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/guest/sanitizer.sh -- runs one guest suite on the sanitizer
# kernel (scripts/build-sanitizer-kernel.sh; booted by the sanitizer phase of
# selftests/check.sh with selftests/vm/run.sh --kernel), then asks kmemleak for
# what the suite leaked.
#
#   KIWI_SAN_SUITE=abuse.sh selftests/vm/run.sh --kernel DIR ... -- \
#       selftests/guest/sanitizer.sh
#
# KIWI_SAN_SUITE names a script in selftests/guest/.  Its TAP output and
# exit status pass through unchanged.  KASAN, UBSAN, lockdep, sleeping in
# atomic context and hung tasks report into the kernel log by themselves,
# where selftests/vm/check-dmesg.sh finds them after the run.  kmemleak only
# reports when asked: the objects that exist before the suite are marked
# known ("clear"), and after it (kiwi unloaded or idle) two scans list what
# became unreferenced.  Those reports are copied into the kernel log, as
# "unreferenced object 0x..." lines with their allocation backtraces, so
# check-dmesg.sh fails the run on them too.  KIWI_SAN_INJECT=1 writes a fake
# KASAN report after the suite: the phase must then fail (its self-test).
set -u

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
suite=${KIWI_SAN_SUITE:-}
if [ -z "$suite" ] || [ ! -x "$HERE/$suite" ]; then
	echo "sanitizer.sh: KIWI_SAN_SUITE must name a script in $HERE (got '$suite')"
	exit 2
fi
KML=/sys/kernel/debug/kmemleak

# kml_known [-v]: of kmemleak's report on stdin, the objects (each from
# its "unreferenced object" line to the next) that are one known leak of
# Linux's iw_cm, not kiwi's; with -v the others.  The leak: iw_cm copies
# an event's private data (copy_private_data: kmemdup, called from
# cm_event_handler) when a provider reports a connection request or
# reply, and frees the copy when it handles the event; but cm_work_handler
# drops events without handling them once the cm_id is being destroyed
# (IWCM_F_DROP_EVENTS), and the copy with them (drivers/infiniband/core/
# iwcm.c in 6.1.192).  A listener destroyed while a connection request
# with private data is queued for it leaks it, whichever provider
# reported the request.
kml_known() {
	awk -v want="${1:-}" '
		function flush() {
			if (rec == "") return
			known = rec ~ /kmemdup/ && rec ~ /cm_event_handler\+[^\n]*\[iw_cm\]/
			if ((want == "-v") != known) printf "%s", rec
			rec = ""
		}
		/^unreferenced object/ { flush() }
		{ rec = rec $0 "\n" }
		END { flush() }'
}

if [ -w "$KML" ]; then
	# Scans only when asked (below): kmemleak's own periodic scan would
	# log its findings before they are sorted.
	echo scan=off >"$KML"
	echo clear >"$KML"
else
	echo "# sanitizer.sh: no $KML (not the sanitizer kernel?): no leak check"
fi

"$HERE/$suite"
rc=$?

# A self-test of the phase: a report that must fail it (check-dmesg.sh).
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
	all=$(cat "$KML")
	known=$(kml_known <<<"$all")
	leaks=$(kml_known -v <<<"$all")
	if [ -n "$known" ]; then
		echo "# sanitizer.sh: kmemleak: $(grep -c '^unreferenced object' <<<"$known") object(s) of Linux's iw_cm's known leak (not kiwi's; selftests/README.md, \"Sanitizer kernel\"):"
		head -n 60 <<<"$known" | sed 's/^/#   /'
	fi
	if [ -n "$leaks" ]; then
		n=$(grep -c '^unreferenced object' <<<"$leaks")
		echo "# sanitizer.sh: kmemleak: $n unreferenced object(s) after $suite:"
		head -n 200 <<<"$leaks" | sed 's/^/#   /'
		# Into the kernel log for check-dmesg.sh (and the saved dmesg).
		echo "<3>kmemleak: $n new suspected memory leaks after $suite" >/dev/kmsg
		head -n 400 <<<"$leaks" | while IFS= read -r line; do
			echo "<3>kmemleak: $line" >/dev/kmsg
		done
	else
		echo "# sanitizer.sh: kmemleak: nothing unreferenced after $suite"
	fi
fi
exit "$rc"
