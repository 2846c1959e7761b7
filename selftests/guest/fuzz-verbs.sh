#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/fuzz-verbs.sh -- the stateful verbs fuzzer
# (selftests/fuzz-verbs/fuzz_verbs.c) against kiwi, run inside the test
# guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/fuzz-verbs.sh
#
# kiwi is loaded with RFC 7306 immediate data and atomics on (so those
# paths are fuzzed too), and the standard pair is set up: kiwi0 on kv0
# (10.91.0.1, netns kwa) and kiwi1 on kv1 (10.91.0.2, netns kwb).  For
# KIWI_FUZZ_MINUTES (default 3) minutes in all, runs of KIWI_FUZZ_RUN_SECS
# (default 60) seconds, each with its own seed: a fuzz_verbs server in kwb
# and a client (with one hostile raw-TCP MPA peer) in kwa, both as user
# nobody with RLIMIT_MEMLOCK raised.  One TAP line per run:
#
#   run_N seed S  both processes exited 0 within the run's time plus
#                 2 minutes (a verb that hangs shows as the watchdog's
#                 exit 3 or the timeout's 124), neither saw a kernel
#                 report in /dev/kmsg, and once both are gone no kiwi QP
#                 and no kiwi endpoint (cm_endpoints) is left, within
#                 30 s.  On failure: both logs' last operations and the
#                 tasks stuck in D state.
#
# then:
#
#   unload        `rdma link del` of both devices and `modprobe -r kiwi`,
#                 each within 60 s
#   no_leaks      TCP sockets back to their count before kiwi was
#                 loaded (within 30 s), and nothing kiwi's code allocated
#                 still allocated (lib.sh kiwi_leak_check)
#   dmesg_clean   the guest's kernel log has no report
#                 (selftests/vm/check-dmesg.sh)
#
# Replay a run: KIWI_FUZZ_SEED=S KIWI_FUZZ_MINUTES=1 with the seed its
# line names (the client's seed is S + 1000003).  Environment:
# KIWI_SELFTEST_BIN (default build/selftests), KIWI_FUZZ_MINUTES,
# KIWI_FUZZ_RUN_SECS, KIWI_FUZZ_SEED (first run's seed; default from the
# clock), KIWI_FUZZ_THREADS (verbs threads per process, default 3),
# KIWI_FUZZ_SLOW_SECS (the bound on one verbs step, default 10; raise it
# for a sanitizer kernel).
# Output is TAP 13 with the plan line last; exit status 0 only if all
# pass.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN=${KIWI_SELFTEST_BIN:-$ROOT/build/selftests}
SRV=10.91.0.2
CLI=10.91.0.1
MINUTES=${KIWI_FUZZ_MINUTES:-3}
RUN_SECS=${KIWI_FUZZ_RUN_SECS:-60}
SEED=${KIWI_FUZZ_SEED:-$(date +%s)}
THREADS=${KIWI_FUZZ_THREADS:-3}
SLOW=${KIWI_FUZZ_SLOW_SECS:-10}
START=$SECONDS
. "$ROOT/selftests/guest/lib.sh"

tcp_objs() { awk '$1 == "TCP" { print $2 }' /proc/slabinfo; }
ep_count() { cat /sys/module/kiwi/parameters/cm_endpoints 2>/dev/null || echo 0; }
kiwi_qps() { rdma resource show qp 2>/dev/null | grep -c 'link kiwi[01]/'; }

setup() {
	[ -x "$BIN/fuzz_verbs" ] || { echo "$BIN/fuzz_verbs missing (make)"; return 1; }
	need_tools rdma ss || return 1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	TCP0=$(tcp_objs)
	modprobe kiwi rfc7306_imm=1 rfc7306_atomics=1 || return 1
	kiwi_pair_up
}

# left_after_run: "" once (within 30 s) no kiwi QP and no endpoint is
# left, else what is.
left_after_run() {
	local q e
	for _ in $(seq 1 60); do
		q=$(kiwi_qps)
		e=$(ep_count)
		[ "$q" -eq 0 ] && [ "$e" -eq 0 ] && return
		sleep 0.5
	done
	echo " (left: kiwi QPs $q, endpoints $e)"
}

# dstate_watch FILE: every 3 s, the kernel stacks of fuzz_verbs threads
# in D state (uninterruptible: waiting in the kernel), into FILE, so a
# slow step can be told apart from a slow guest.  Runs until killed.
dstate_watch() {
	local d
	while sleep 3; do
		for d in /proc/[0-9]*/task/[0-9]*; do
			[ "$(cat "$d/comm" 2>/dev/null)" = fuzz_verbs ] || continue
			awk '$1 == "State:" && $2 == "D" { f = 1 } END { exit !f }' \
				"$d/status" 2>/dev/null || continue
			echo "D state at $(cut -d' ' -f1 /proc/uptime) s: ${d#/proc/}"
			cat "$d/stack" 2>/dev/null
		done
	done >"$1"
}

# fuzz_run N SEED SECS: one server/client pair for SECS seconds.
fuzz_run() {
	local n=$1 seed=$2 secs=$3 port=$((7600 + ($1 % 40) * 20))
	local spid wpid srv=0 cli=0 why='' left
	dstate_watch "$TMPD/dstate" &
	wpid=$!
	B timeout -k 10 $((secs + 150)) "$BIN/fuzz_verbs" -r server -a $SRV \
		-p $port -s "$seed" -t $((secs + 5)) -n "$THREADS" -u 65534 -b "$SLOW" \
		>"$TMPD/srv" 2>&1 &
	spid=$!
	wait_port $SRV $port || why=" (server not listening)"
	A timeout -k 10 $((secs + 140)) "$BIN/fuzz_verbs" -r client -a $SRV -l $CLI \
		-p $port -s $((seed + 1000003)) -t "$secs" -n "$THREADS" -H 1 \
		-u 65534 -b "$SLOW" >"$TMPD/cli" 2>&1 || cli=$?
	wait $spid || srv=$?
	kill $wpid
	wait $wpid 2>/dev/null
	[ $srv -eq 0 ] && [ $cli -eq 0 ] || why="$why (exit: server $srv, client $cli)"
	grep -q 'KERNEL REPORT' "$TMPD/srv" "$TMPD/cli" &&
		why="$why (kernel report while fuzzing)"
	grep -q '^fuzz_verbs: SLOW' "$TMPD/srv" "$TMPD/cli" &&
		why="$why (a verbs step took longer than $SLOW s)"
	left=$(left_after_run)
	why="$why$left"
	if [ -z "$why" ]; then
		ok "run_$n seed $seed: ${secs} s, $(grep -c '^#   \[' "$TMPD/cli") + $(grep -c '^#   \[' "$TMPD/srv") last ops shown, both exited 0, nothing left"
		grep -h 'ops,\|ok/failed:' "$TMPD/srv" "$TMPD/cli" | head -n 30
	else
		notok "run_$n seed $seed$why"
		echo "# --- server (seed $seed) ---"
		grep -v '^#   \[' "$TMPD/srv" | tail -n 20 | diag
		grep -A70 'KERNEL REPORT\|WATCHDOG\|SLOW' "$TMPD/srv" | head -n 300 | diag
		echo "# --- client (seed $((seed + 1000003))) ---"
		grep -v '^#   \[' "$TMPD/cli" | tail -n 20 | diag
		grep -A70 'KERNEL REPORT\|WATCHDOG\|SLOW' "$TMPD/cli" | head -n 300 | diag
		echo "# --- fuzz_verbs threads seen in D state (3 s samples) ---"
		head -n 200 "$TMPD/dstate" | diag
		if [ -n "$left" ] || [ $srv -eq 124 ] || [ $cli -eq 124 ]; then
			stuck_report 60
		fi
	fi
	# the last operations of both, kept for the log on any failure
	cp "$TMPD/srv" "$TMPD/srv.$n"
	cp "$TMPD/cli" "$TMPD/cli.$n"
}

tap_setup "kiwi (rfc7306_imm=1 rfc7306_atomics=1) and the kiwi0/kiwi1 pair" \
	"kiwi loaded (rfc7306_imm=1 rfc7306_atomics=1), kiwi0/kiwi1 up"
echo "# fuzz-verbs: ${MINUTES} min in runs of ${RUN_SECS} s, first seed $SEED, $THREADS verbs threads per side"
KTEXT=$(kiwi_text)
TOTAL=$((MINUTES * 60))
FSTART=$SECONDS
n=0
while [ $((SECONDS - FSTART)) -lt "$TOTAL" ]; do
	rest=$((TOTAL - (SECONDS - FSTART)))
	secs=$RUN_SECS
	[ "$rest" -lt "$secs" ] && secs=$rest
	[ "$secs" -lt 10 ] && secs=10
	fuzz_run $n $((SEED + n)) "$secs"
	n=$((n + 1))
done

rc=0
{
	timeout 60 rdma link del kiwi0 || rc=1
	timeout 60 rdma link del kiwi1 || rc=1
	timeout 60 modprobe -r kiwi || rc=2
} >"$TMPD/u" 2>&1
if [ $rc -eq 0 ]; then
	ok "unload: both devices deleted and the module unloaded within 60 s each"
else
	notok "unload: failed or timed out (rc $rc)"
	diag "$TMPD/u"
	stuck_report 60
fi

for _ in $(seq 1 30); do
	[ "$(tcp_objs)" -le "$TCP0" ] && break
	sleep 1
done
t1=$(tcp_objs)
if [ "$t1" -le "$TCP0" ] && kiwi_leak_check "$KTEXT" "$TMPD/leaked"; then
	ok "no_leaks: TCP sockets $TCP0 -> $t1, $(tail -n 1 "$TMPD/leaked")"
else
	notok "no_leaks: TCP sockets $TCP0 -> $t1, $(tail -n 1 "$TMPD/leaked" 2>/dev/null)"
	{ A ss -tan; B ss -tan; } 2>&1 | diag
fi

dmesg >"$TMPD/dmesg"
if "$ROOT/selftests/vm/check-dmesg.sh" "$TMPD/dmesg" >"$TMPD/dm" 2>&1; then
	ok "dmesg_clean: no kernel report in $n fuzz runs (seeds $SEED..$((SEED + n - 1)))"
else
	notok "dmesg_clean: kernel report during the fuzz runs (seeds $SEED..$((SEED + n - 1)))"
	head -n 80 "$TMPD/dm" | diag
fi
echo "# fuzz-verbs.sh: $((SECONDS - START)) s"
tap_end
