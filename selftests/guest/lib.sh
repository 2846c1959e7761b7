# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/lib.sh -- shared helpers of the guest scripts
# (datapath.sh, interop.sh, faults.sh, kernel-ulp.sh, ...).  Sourced, not run.
#
# TAP 13 output: ok/notok print one result line each; tap_end prints the
# plan line last and returns non-zero if anything failed.  Network
# namespaces are "kwa" (client side) and "kwb" (server side); the
# scripts create their veth pairs and devices themselves.

T=0 NFAIL=0
GUEST_DIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
TMPD=$(mktemp -d /tmp/kiwi-guest.XXXXXX)

ok()    { T=$((T + 1)); echo "ok $T $1"; }
notok() { T=$((T + 1)); NFAIL=$((NFAIL + 1)); echo "not ok $T $1"; }
diag()  { sed -e 's/^/# /' "$@"; }
A() { ip netns exec kwa "$@"; }
B() { ip netns exec kwb "$@"; }

# kill_tree PID [SIGNAL]: signal PID and everything below it.  `B cmd &`
# backgrounds a subshell running ip netns exec: killing $! alone would
# kill that subshell and leave cmd running, orphaned.
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do
		kill_tree "$c" "${2:-TERM}"
	done
	kill -"${2:-TERM}" "$1" 2>/dev/null
}

# kiwi_text: "START END" of kiwi.ko's code and data while it is loaded
# (from /proc/modules), for kiwi_leaked after it is gone.
kiwi_text() {
	local a
	a=($(awk '$1 == "kiwi" { print $6, $2 }' /proc/modules))
	[ ${#a[@]} -eq 2 ] && printf '0x%016x 0x%016x\n' "${a[0]}" $((a[0] + a[1]))
}

# kiwi_frame_awk: awk functions for kiwi_leaked.  inkiwi(f): is a stack
# frame as %pS prints it ("sym+0x1/0x2 [kiwi]", or a bare address once
# the module is gone) kiwi's code, lo..hi being where it was loaded?
# Kernel addresses are all 18 characters and compare as strings (awk's
# numbers are doubles, too coarse for them).  owner(rec): the first
# frame of an alloc_traces record that is not the allocator itself,
# i.e. the code that asked for the memory.
KIWI_FRAME_AWK='
function inkiwi(f,  a) {
	if (f ~ /\[kiwi\]/)
		return 1
	a = tolower(f)
	sub(/ .*/, "", a)
	return length(a) == 18 && a ~ /^0x/ && a >= (lo "") && a < (hi "")
}
function owner(rec,  n, l, i, f) {
	n = split(rec, l, "\n")
	for (i = 2; i <= n; i++) {
		f = l[i]
		sub(/^[ \t]+/, "", f)
		if (f == "" || f ~ /^(__|___)?(kmem_cache|kmalloc|kvmalloc|kzalloc|kcalloc|krealloc|kmemdup|kstrdup|kvcalloc|kvzalloc|slab|__slab|memdup)/)
			continue
		return f
	}
	return ""
}'

# kiwi_leaked START END: memory that kiwi's own code allocated and that is
# still allocated -- after `rmmod kiwi` none may be.  slub_debug's user
# tracking (the U of the guest's slub_debug=FZPU) keeps the allocating
# stack of every live slab object (debugfs slab/kmalloc-*/alloc_traces, one
# record per site); a record whose requesting frame (owner()) lies in
# START..END (kiwi.ko as loaded: kiwi_text) is kiwi's, and so is a
# vmalloc area whose caller does.  Memory the kernel allocates further
# down on kiwi's behalf (its TCP sockets, routes) is not kiwi's to free
# and is not counted here.  Prints one line per site ("COUNT x SIZE
# CACHE SITE"), then "leaked bytes: N".
kiwi_leaked() {
	local lo=$1 hi=$2 d=/sys/kernel/debug/slab c
	mountpoint -q /sys/kernel/debug ||
		mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
	{
		# kiwi allocates with kmalloc and friends only (and vmalloc):
		# reading every cache's traces takes minutes under TCG.
		for c in "$d"/kmalloc-*; do
			[ -r "$c/alloc_traces" ] || continue
			awk -v lo="$lo" -v hi="$hi" -v cache="${c##*/}" \
			    -v size="$(cat "/sys/kernel/slab/${c##*/}/object_size" 2>/dev/null || echo 0)" \
			    "$KIWI_FRAME_AWK"'
			BEGIN { RS = "" }
			{
				f = owner($0)
				if (f != "" && inkiwi(f))
					printf "%d x %d %s %s\n", $1, size, cache, f
			}' "$c/alloc_traces"
		done
		awk -v lo="$lo" -v hi="$hi" "$KIWI_FRAME_AWK"'
			inkiwi($3 " " $4) { printf "1 x %d vmalloc %s\n", $2, $3 }' \
			/proc/vmallocinfo
	} | awk '{ print; bytes += $1 * $3 } END { printf "leaked bytes: %d\n", bytes }'
}

# kiwi_leak_check "START END" FILE: kiwi_leaked into FILE (shown as TAP
# diagnostics); true iff it found nothing.  START END come from
# kiwi_text, read while kiwi was loaded.
kiwi_leak_check() {
	local i
	# shellcheck disable=SC2086
	if [ -n "$1" ]; then
		# kiwi frees regions with kfree_rcu(): after rmmod some may
		# still wait for their grace period (seconds on a busy host).
		for i in $(seq 1 15); do
			kiwi_leaked $1 >"$2"
			grep -qx 'leaked bytes: 0' "$2" && break
			sleep 1
		done
		[ "$i" = 1 ] || echo "# kiwi_leak_check: read $i times, 1 s apart (frees after an RCU grace period are not leaks)"
	else
		echo "leaked bytes: unknown (kiwi's address range not read)" >"$2"
	fi
	diag "$2"
	grep -qx 'leaked bytes: 0' "$2"
}

# no_leaks_verdict KTEXT: one TAP line after `rmmod kiwi` -- nothing
# kiwi's code allocated is still allocated (kiwi_leak_check).  KTEXT is
# kiwi_text read while the module was loaded.
no_leaks_verdict() {
	if kiwi_leak_check "$1" "$TMPD/leaked"; then
		ok "no_leaks: after rmmod kiwi, $(tail -n 1 "$TMPD/leaked")"
	else
		notok "no_leaks: after rmmod kiwi, $(tail -n 1 "$TMPD/leaked")"
	fi
}

# stuck_report: what a "something was left" failure needs to be
# understood, as TAP diagnostics: tasks in D state with their kernel
# stacks, kiwi QPs, TCP sockets in both namespaces, and the kiwi events
# recorded in the trace buffer (trace_on starts recording).
TR=/sys/kernel/tracing
trace_on() {
	mountpoint -q $TR || mount -t tracefs nodev $TR 2>/dev/null
	echo 8192 >$TR/buffer_size_kb
	echo >$TR/trace
	echo 1 >$TR/events/kiwi/enable
}
trace_off() { echo 0 >$TR/events/kiwi/enable 2>/dev/null; }
stuck_report() {
	local p
	for p in $(ps -eo pid=,stat= | awk '$2 ~ /^D/ { print $1 }'); do
		echo "D state: $p $(cat /proc/$p/comm 2>/dev/null)"
		cat /proc/$p/stack 2>/dev/null
	done
	rdma resource show qp 2>/dev/null | grep kiwi | head -n 5
	A ss -tanoe 2>/dev/null | head -n 10
	B ss -tanoe 2>/dev/null | head -n 10
	grep -h ' kiwi_' $TR/trace 2>/dev/null | tail -n "${1:-60}"
} 2>&1 | diag

tap_end() {
	echo "1..$T"
	rm -rf "$TMPD"
	[ $NFAIL -eq 0 ]
}

# tap_setup FAILLABEL OKLABEL: start the TAP stream and run the script's
# setup(); if that fails, report it with its output and end the script.
tap_setup() {
	echo "TAP version 13"
	if ! setup >"$TMPD/setup" 2>&1; then
		notok "setup: $1"
		diag "$TMPD/setup"
		tap_end
		exit 1
	fi
	ok "setup: $2"
}

# need_tools PROG...: every PROG is on PATH (make deps installs them);
# names the first one missing.
need_tools() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "$t missing (make deps)"; return 1; }
	done
}

# netns_up: the two namespaces with loopback up.
netns_up() {
	ip netns add kwa && ip netns add kwb &&
	A ip link set lo up && B ip link set lo up
}

# veth_pair NAME0 NAME1 NET MTU: NAME0 in kwa as NET.1, NAME1 in kwb as
# NET.2 (NET is the first three octets, e.g. 10.91.0).
veth_pair() {
	ip link add "$1" type veth peer name "$2" &&
	ip link set "$1" netns kwa && ip link set "$2" netns kwb &&
	A ip addr add "$3.1/24" dev "$1" && B ip addr add "$3.2/24" dev "$2" &&
	A ip link set "$1" mtu "$4" up && B ip link set "$2" mtu "$4" up
}

# kiwi_pair_up: the two namespaces, veth kv0 (10.91.0.1, kwa) and kv1
# (10.91.0.2, kwb) at MTU 1500 with static neighbours (rdma_cm's first
# ARP lookup would otherwise wait out its timeout), kiwi0 on kv0 and
# kiwi1 on kv1.  The kiwi module must be loaded.
kiwi_pair_up() {
	netns_up && veth_pair kv0 kv1 10.91.0 1500 &&
	A ip neigh replace 10.91.0.2 dev kv0 nud permanent \
		lladdr "$(B cat /sys/class/net/kv1/address)" &&
	B ip neigh replace 10.91.0.1 dev kv1 nud permanent \
		lladdr "$(A cat /sys/class/net/kv0/address)" &&
	A rdma link add kiwi0 type kiwi netdev kv0 &&
	B rdma link add kiwi1 type kiwi netdev kv1
}

# wait_port ADDR PORT: until kwb listens on TCP PORT at ADDR, on a wildcard
# address, or on a wildcard bound to ADDR's interface (max ~60 s: a
# victim on the KASAN kernel took more than 20 s to listen).  Several
# RDMA devices listen for one rdma_cm wildcard listen, each in its own
# time; the one serving ADDR is the one that matters.
wait_port() {
	local addr=$1 port=$2 dev i re a=$1
	dev=$(B ip -o addr show | awk -v a="$addr" '$4 ~ "^" a "/" { print $2 }')
	[[ $addr == *:* ]] && a="\\[$addr\\]"
	re="($a|\\*|0\\.0\\.0\\.0|\\[::\\])(%$dev)?:$port "
	for i in $(seq 1 120); do
		B ss -ltnH 2>/dev/null | awk '{ print $4 " " }' | grep -qE "^$re" &&
			return 0
		sleep 0.5
	done
	return 1
}

# pair_verdict NAME CLIENT_RC SERVER_RC: one TAP line for a client/server
# pair, which passes only if both exited 0; returns 1 if it failed.
pair_verdict() {
	if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
		ok "$1"
	else
		notok "$1 (client $2, server $3)"
		return 1
	fi
}

# rping_exit_race RC OUT OTHER_RC: one rping (exit status RC, output OUT)
# failed only by rping's own race at exit -- its CM event thread read the
# event channel the main thread was destroying ("rdma_get_cm_event: Bad
# file descriptor", exit 255 right after the DISCONNECT event, no other
# complaint) -- while the other side (OTHER_RC) passed.  Fixed upstream
# after rdma-core 44 (f3ae6534a, "rping: terminate CM event thread before
# exiting").  Not a pass: callers count it apart, with its evidence.
rping_exit_race() {
	[ "$1" -ne 0 ] && [ "$3" -eq 0 ] &&
	grep -q 'DISCONNECT EVENT' "$2" &&
	grep -q 'rdma_get_cm_event: Bad file descriptor' "$2" &&
	[ "$(grep -cv -e 'DISCONNECT EVENT' -e 'rdma_get_cm_event: Bad file descriptor' \
		-e '^ *$' -e 'wait for RDMA_READ_ADV state' "$2")" -eq 0 ]
}

# rping_test LABEL SRVADDR SIZE COUNT: 'rping -V' (payload verified on
# every iteration), server in kwb, client in kwa.  rping picks the device
# from the address.
rping_test() {
	local label=$1 addr=$2 size=$3 count=$4 rc src try
	local name="$label: rping -V -C $count -S $size"

	# A run lost to rping's own exit race (rping_exit_race) is shown and
	# run once more; the second run decides.
	for try in 1 2; do
		B timeout 600 rping -s -a "$addr" -p 7174 -V -C "$count" -S "$size" \
			>"$TMPD/srv" 2>&1 &
		local spid=$!
		wait_port "$addr" 7174
		A timeout 600 rping -c -a "$addr" -p 7174 -V -C "$count" -S "$size" \
			>"$TMPD/cli" 2>&1
		rc=$?
		wait $spid
		src=$?
		[ $try = 1 ] || break
		rping_exit_race $rc "$TMPD/cli" $src || rping_exit_race $src "$TMPD/srv" $rc ||
			break
		echo "# RETRY $name -- rping's own exit race (rdma_get_cm_event: Bad file descriptor after DISCONNECT; client $rc, server $src)"
		tail -n 3 "$TMPD/cli" "$TMPD/srv" | diag
	done
	pair_verdict "$name" $rc $src ||
		tail -n 5 "$TMPD/cli" "$TMPD/srv" | diag
}

# perf_run SRVDEV CLIDEV SRVADDR ITERS TOOL ARGS...: one perftest run over
# rdma_cm; sets PERF_RC (the client's exit status), PERF_SRC (the
# server's) and PERF_ROW (the result row: the client's, for ib_send_bw
# the server's).
# The kiwi_cm trace events of the run are kept in $TMPD/perf.trace (the
# evidence perf_retry_reason reads).  With PERF_PIN set the client runs on
# CPU 0 and the server on CPU 1 (see interop.sh).
perf_run() {
	local sdev=$1 cdev=$2 addr=$3 iters=$4 tool=$5 pcli=() psrv=()
	shift 5

	if [ -n "${PERF_PIN:-}" ] && [ "$(nproc)" -ge 2 ]; then
		pcli=(taskset -c 0)
		psrv=(taskset -c 1)
	fi
	perf_trace_start
	B timeout 300 "${psrv[@]}" "$tool" -R -d "$sdev" -F -n "$iters" "$@" \
		>"$TMPD/srv" 2>&1 &
	PERF_SPID=$!
	wait_port "$addr" 18515
	A timeout 280 "${pcli[@]}" "$tool" -R -d "$cdev" -F -n "$iters" "$@" \
		"$addr" >"$TMPD/cli" 2>&1 &
	PERF_CPID=$!
	perf_bg_wait
	# Result rows start with the message size.  A SEND is complete at
	# the sender once TCP has it, so ib_send_bw's figure that means
	# something is the receiver's (the sender's can read 0.00).
	local from=$TMPD/cli
	[ "$tool" = ib_send_bw ] && from=$TMPD/srv
	PERF_ROW=$(grep -E '^ +[0-9]+ +[0-9]+ +[0-9.]+' "$from" | tail -1)
}

# perf_trace_start: kiwi's connection events recorded from now on, the
# buffer emptied (nothing if kiwi is not loaded).
perf_trace_start() {
	mountpoint -q $TR || mount -t tracefs nodev $TR 2>/dev/null
	[ -w $TR/events/kiwi/kiwi_cm/enable ] || return 0
	echo 1 >$TR/events/kiwi/kiwi_cm/enable
	echo >$TR/trace
}

# refused_unseen CLIDEV CLIENT_OUT TRACE: the perftest client's connect
# was refused by TCP before any MPA exchange: it says
# "RDMA_CM_EVENT_REJECTED; error: -111", and TRACE (kiwi_cm events of
# the run) shows CLIDEV's endpoint going from "connect" to
# "connect_failed status -111" with no "mpa_request_sent" between, and
# no endpoint of CLIDEV refused after MPA.  This is perftest's, not
# kiwi's: with -R (perftest 4.5-0.17) the client connects twice, the
# server listening anew for the second connection only after the first
# is done; a client that comes first finds no listener.  (soak.sh counts
# the same evidence as "no_listener".)  A refusal by a kiwi listener,
# an MPA reject or a reset all leave other traces and are not excused;
# nor is any refusal when the client is not kiwi (no trace to show it).
refused_unseen() {
	grep -q 'RDMA_CM_EVENT_REJECTED; error: -111' "$2" || return 1
	# Per endpoint, in any order: the "connect" event is traced once
	# kernel_connect() returns, and the CM worker on another CPU may log
	# the refusal before it.
	awk -v dev="$1" '
		$0 ~ "kiwi_cm: " dev " ep " {
			for (i = 1; i < NF; i++) if ($i == "ep") ep = $(i + 1)
			if ($0 ~ / connect status /) conn[ep] = 1
			else if ($0 ~ / mpa_request_sent /) mpa[ep] = 1
			else if ($0 ~ / connect_failed status -111 /) refused[ep] = 1
		}
		END {
			for (ep in refused)
				if (conn[ep] && !mpa[ep]) unseen = 1; else seen = 1
			exit !(unseen && !seen)
		}' "$3"
}

# perf_retry_reason CLIDEV CLIENT_OUT SERVER_OUT TRACE RC SRC: may a
# failed perftest run be repeated?  Prints the evidence and returns 0
# only for the two known faults of the tool, never for a kiwi failure:
#  - the race refused_unseen describes (the trace proves kiwi never
#    sent an MPA request on the refused connection);
#  - perftest's clock calibration ("Correlation coefficient r^2 < 0.9":
#    the guest was starved of CPU while it timed itself, and every figure
#    reads 0.00), only when the run otherwise succeeded: both sides
#    exited 0 and neither complained of anything else.
perf_retry_reason() {
	local cdev=$1 cli=$2 srv=$3 trace=$4 rc=$5 src=$6
	if refused_unseen "$cdev" "$cli" "$trace"; then
		echo "connect refused by TCP before any MPA exchange ($cdev: connect -> connect_failed -111, no mpa_request_sent): perftest's server was not listening yet"
		return 0
	fi
	if grep -q "Correlation coefficient" "$cli" "$srv" &&
	   [ "$rc" -eq 0 ] && [ "$src" -eq 0 ] &&
	   ! grep -v -e "Correlation coefficient" -e "Conflicting CPU frequency" "$cli" "$srv" |
		grep -qiE "error|fail|couldn|unable|refused|reject|invalid|timeout|abort"; then
		echo "perftest clock calibration failed (Correlation coefficient r^2 < 0.9), the run otherwise complete (client and server exit 0)"
		return 0
	fi
	return 1
}

# perf_run_retry NAME SRVDEV CLIDEV SRVADDR ITERS TOOL ARGS...: perf_run,
# repeated (three runs in all) only when perf_retry_reason excuses the
# failed run; each repetition is a "# RETRY NAME -- reason" line, which
# selftests/check.sh counts in its summary.
perf_run_retry() {
	local name=$1 try why
	shift
	for try in 1 2 3; do
		perf_run "$@"
		why=$(perf_retry_reason "$2" "$TMPD/cli" "$TMPD/srv" "$TMPD/perf.trace" \
			"$PERF_RC" "$PERF_SRC") || break
		# A run that counts (figure above 0) needs no repetition.
		[ "$PERF_RC" -ne 0 ] || [ "$PERF_SRC" -ne 0 ] || [ -z "$PERF_ROW" ] ||
			! echo "$PERF_ROW" | awk '{ exit !($4 > 0 || $5 > 0) }' || break
		[ $try -lt 3 ] || break
		echo "# RETRY $name -- $why (run $try of 3)"
		tail -n 4 "$TMPD/cli" "$TMPD/srv" | diag
	done
}

# perf_bg_wait: waits for a background perftest client and server
# (PERF_CPID, PERF_SPID: perf_run, datapath.sh perf_bg, hw_read); sets
# PERF_RC and PERF_SRC (their exit status) and keeps the run's kiwi_cm
# events in $TMPD/perf.trace.  A client refused before its data connection leaves
# the server listening until its timeout: it is stopped then.
perf_bg_wait() {
	wait "$PERF_CPID"
	PERF_RC=$?
	if [ $PERF_RC -ne 0 ] && grep -qs "RDMA_CM_EVENT_REJECTED" "$TMPD/cli"; then
		kill_tree "$PERF_SPID"
	fi
	wait "$PERF_SPID"
	PERF_SRC=$?
	grep -hv '^#' $TR/trace >"$TMPD/perf.trace" 2>/dev/null
}

# bg_retry NAME FUNC [ARGS]: runs FUNC ARGS, one perftest attempt that
# prints its verdict as an "ok ..." or "not ok ..." line (and diag lines)
# and returns its status, up to three times, repeating only a failed
# attempt that perf_retry_reason excuses.  Seen in a CI run: perftest's
# own connect race (the client's data connection refused by TCP before
# any MPA exchange, after 82 B of parameter exchange).  Each repetition
# is a "# RETRY NAME" line with the evidence; the last attempt's verdict
# counts.
bg_retry() {
	local name=$1 try why line
	shift
	for try in 1 2 3; do
		"$@" >"$TMPD/verdict" && break
		why=$(perf_retry_reason kiwi0 "$TMPD/cli" "$TMPD/srv" \
			"$TMPD/perf.trace" "$PERF_RC" "$PERF_SRC") || break
		# A calibration miss excuses only a run that left no result
		# row: one that reported its figures failed the attempt for
		# another reason (seen: the QPs not found in time, excused).
		if [ "$PERF_RC" -eq 0 ] && [ "$PERF_SRC" -eq 0 ] &&
		   grep -qE '^ +[0-9]+ +[0-9]+ +[0-9.]+' "$TMPD/cli"; then
			break
		fi
		[ $try -lt 3 ] || break
		echo "# RETRY $name -- $why (run $try of 3)"
		diag "$TMPD/verdict"
	done
	# The last attempt's verdict, numbered and counted by ok/notok.
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok "${line#ok }" ;;
		"not ok "*) notok "${line#not ok }" ;;
		*) echo "$line" ;;
		esac
	done <"$TMPD/verdict"
}

# perf_row_sane TOOL ITERS ROW: a result row that could come from a run
# that did what was asked.  Bandwidth: column 4 (BW average) above 0.
# Latency (*_lat): all ITERS iterations reported and 0 < t_min <=
# t_typical <= t_max (columns 2, 3, 5, 4), not only t_max above 0.
perf_row_sane() {
	case $1 in
	*_lat) echo "$3" | awk -v n="$2" '{ exit !($2 == n && $3 > 0 && $3 <= $5 && $5 <= $4) }' ;;
	*) echo "$3" | awk '{ exit !($4 > 0) }' ;;
	esac
}

# perf_test LABEL SRVDEV CLIDEV SRVADDR ITERS TOOL ARGS...: perftest
# server on SRVDEV in kwb, client on CLIDEV in kwa; passes when the client
# succeeds with a sane result row (perf_row_sane).  Runs
# lost to a known fault of perftest are repeated (perf_run_retry).
perf_test() {
	local label=$1 iters=$5 tool=$6
	shift
	perf_run_retry "$label: ${*:5}" "$@"
	shift 4
	if [ $PERF_RC -eq 0 ] && [ -n "$PERF_ROW" ] &&
	   perf_row_sane "$tool" "$iters" "$PERF_ROW"; then
		case $tool in
		*_lat) ok "$label: $* (t_typical $(echo "$PERF_ROW" | awk '{print $5}') us)" ;;
		*) ok "$label: $* ($(echo "$PERF_ROW" | awk '{print $4}'))" ;;
		esac
		[ "$PERF_SRC" -eq 0 ] || echo "# $label: $*: the perftest server exited $PERF_SRC"
	else
		notok "$label: $* (rc $PERF_RC, server $PERF_SRC)"
		tail -n 12 "$TMPD/cli" "$TMPD/srv" | diag
	fi
}

# mpa_crc_test LABEL SRVADDR KIWIDEV WANT: what the MPA exchange settled
# shows in "rdma -dd res show qp": while an rping (server in kwb at
# SRVADDR, client in kwa) is connected, KIWIDEV's QP must have
# drv_mpa_crc WANT (1: CRC on the wire, 0: none).
mpa_crc_test() {
	local label=$1 addr=$2 dev=$3 want=$4 attrs got i spid cpid
	B timeout 60 rping -s -a "$addr" -p 7178 -C 1000000 -S 4096 >/dev/null 2>&1 &
	spid=$!
	wait_port "$addr" 7178
	A timeout 60 rping -c -a "$addr" -p 7178 -C 1000000 -S 4096 -V >/dev/null 2>&1 &
	cpid=$!
	for i in $(seq 1 40); do
		attrs=$(rdma -dd res show qp link "$dev/1" 2>/dev/null)
		[[ $attrs == *"state RTS"* ]] && break
		sleep 0.5
	done
	kill_tree $cpid
	kill_tree $spid
	wait $cpid $spid 2>/dev/null
	got=$(sed -n 's/.*drv_mpa_crc \([01]\).*/\1/p' <<<"$attrs" | head -n 1)
	if [ "$got" = "$want" ]; then
		ok "$label: $dev's QP negotiated drv_mpa_crc $want"
	else
		notok "$label: $dev's QP negotiated drv_mpa_crc $want (got ${got:-no QP in RTS})"
		echo "$attrs" | diag
	fi
}

# ---- verdicts scoped to one case ----
#
# klog_mark: remember how far the kernel log goes and start kiwi's trace
# anew (connection and TERMINATE events), so that the checks below see
# only what the case in hand caused.  klog_since FILE TRACE: the kernel
# log lines and trace events since klog_mark, into FILE and TRACE.
klog_mark() {
	KLOG_MARK=$(dmesg | wc -l)
	[ ! -w $TR/events/kiwi/kiwi_terminate/enable ] ||
		echo 1 >$TR/events/kiwi/kiwi_terminate/enable
	perf_trace_start
}
klog_since() {
	dmesg | tail -n +$((${KLOG_MARK:-0} + 1)) >"$1"
	grep -hv '^#' $TR/trace >"$2" 2>/dev/null
}

# term_found WHAT KLOG TRACE: kiwi logged "QP N: terminating stream:
# WHAT" (WHAT: "op O layer L type T code 0xCC") in KLOG and the trace
# TRACE has that QP N sending the TERMINATE with the same layer, type and
# code; sets TERM_QPN to N.  KLOG and TRACE cover only the case in hand
# (klog_mark), so a line an earlier case left cannot satisfy it.
term_found() {
	local what=$1 l t c q
	read -r _ _ _ l _ t _ c <<<"$what"
	TERM_QPN=
	while read -r q; do
		if grep -qE "qp $q TERMINATE sent: layer $l type $t code $c\$" "$3"; then
			# shellcheck disable=SC2034 # the callers' to show
			TERM_QPN=$q
			return 0
		fi
	done < <(sed -nE "s/.*QP ([0-9]+): terminating stream: $what( .*|)\$/\1/p" "$2")
	return 1
}

# refused_verdict RC SECS OUT: an rping client's connect to a port with
# no listener (exit status RC, after SECS seconds, output OUT) was
# refused as it should be: quickly (within 15 s, not a timeout), by a
# REJECTED connection event, and rping exited with its own error status
# (rping's is 255; not a signal, 129-254, nor timeout's 124).  Prints
# what was wrong otherwise.
rc_died() { [ "$1" -eq 124 ] || { [ "$1" -gt 128 ] && [ "$1" -lt 255 ]; }; }
refused_verdict() {
	if [ "$1" -eq 0 ]; then
		echo "the connect succeeded"
	elif rc_died "$1"; then
		echo "rping did not fail cleanly (exit $1: timeout or signal)"
	elif [ "$2" -gt 15 ]; then
		echo "the refusal took $2 s"
	elif ! grep -q 'RDMA_CM_EVENT_REJECTED' "$3"; then
		echo "no RDMA_CM_EVENT_REJECTED (exit $1)"
	else
		return 0
	fi
	return 1
}

# rping_during_verdict KIND CLIENT_RC SERVER_RC CLIENT_OUT SERVER_OUT: the
# rping -V that ran across a network change.  KIND "keep": the change
# keeps the connection (an MTU change), so both sides must exit 0.  KIND
# "may_break": the connection may fail (link down, address removed), but
# without a "data mismatch!" (rping -V compares every ping) and without
# a crash (a signal); a side left waiting for a peer that vanished may
# time out (124).  Prints what was wrong.
rping_during_verdict() {
	if grep -qs 'data mismatch' "$4" "$5"; then
		echo "rping -V found a data mismatch"
	elif [ "$1" = keep ] && { [ "$2" -ne 0 ] || [ "$3" -ne 0 ]; }; then
		echo "rping failed (client $2, server $3) though the change keeps the connection"
	elif { [ "$2" -gt 128 ] && [ "$2" -lt 255 ]; } || { [ "$3" -gt 128 ] && [ "$3" -lt 255 ]; }; then
		echo "rping crashed (client $2, server $3)"
	else
		return 0
	fi
	return 1
}

# tap_embed_verdict RC TAPFILE: a TAP stream a script re-emits (pyverbs)
# holds up: exit status RC 0, a plan, as many results as planned, and at
# least one that ran rather than skipped.  Prints what was wrong.
tap_embed_verdict() {
	local plan n ran
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$2" | tail -n 1)
	n=$(grep -cE '^(not )?ok [0-9]' "$2")
	ran=$(grep -E '^(not )?ok [0-9]' "$2" | grep -cv ' # SKIP')
	if [ -z "$plan" ]; then
		echo "no TAP plan (exit $1, $n results)"
	elif [ "$plan" -ne "$n" ]; then
		echo "planned $plan, got $n results (exit $1)"
	elif [ "$1" -ne 0 ]; then
		echo "exit status $1"
	elif [ "$ran" -eq 0 ]; then
		echo "all $n results skipped: nothing ran"
	else
		return 0
	fi
	return 1
}

# qperf_verdict OUT: a qperf client's output shows a figure above 0 and
# no error (qperf counts failed completions and goes on, printing
# loc_send_errors and the like).  Prints the figure, or what was wrong.
qperf_verdict() {
	local v
	v=$(awk '$1 ~ /(bw|latency|msg_rate)$/ && $2 == "=" { print $3, $4; exit }' "$1")
	if [ -z "$v" ]; then
		echo "no figure"
	elif ! awk -v f="${v%% *}" 'BEGIN { exit !(f > 0) }'; then
		echo "figure $v"
	elif grep -qiE 'err|fail' "$1"; then
		echo "errors: $(grep -iE 'err|fail' "$1" | head -n 2 | tr -s ' \n' ' ')"
	else
		echo "$v"
		return 0
	fi
	return 1
}

# ---- NVMe over RDMA through kiwi (kernel-ulp.sh, faults.sh) ----
#
# The kernel's NVMe target (nvmet-rdma, a memory-backed null_blk
# namespace) and host (nvme-rdma) use rdma_cm in the initial network
# namespace only, so both ends run there, on one kiwi device on a dummy
# netdev; their TCP connections go through lo.

NVME_NQN=kiwi-selftest
NVME_CFS=/sys/kernel/config/nvmet
NVME_ADDR=10.96.0.1
NVME_DEV=

# nvme_kiwi_up DEV: kiwi device DEV on a dummy netdev kd0 at NVME_ADDR.
nvme_kiwi_up() {
	ip link add kd0 type dummy && ip addr add $NVME_ADDR/24 dev kd0 &&
	ip link set kd0 up && rdma link add "$1" type kiwi netdev kd0
}

# nvme_target_up: subsystem NVME_NQN (namespace 1: NVME_BACKING, default
# /dev/nullb0, a RAM disk) on an RDMA port at NVME_ADDR:4420; also loads
# the host's nvme-rdma.
nvme_target_up() {
	local s=$NVME_CFS/subsystems/$NVME_NQN p=$NVME_CFS/ports/1
	modprobe null_blk nr_devices=1 memory_backed=1 gb=1 &&
	modprobe nvmet && modprobe nvmet-rdma && modprobe nvme-rdma || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config || return 1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
	mkdir "$s/namespaces/1" &&
	echo -n "${NVME_BACKING:-/dev/nullb0}" >"$s/namespaces/1/device_path" &&
	echo 1 >"$s/namespaces/1/enable" &&
	mkdir "$p" && echo rdma >"$p/addr_trtype" &&
	echo ipv4 >"$p/addr_adrfam" && echo "$NVME_ADDR" >"$p/addr_traddr" &&
	echo 4420 >"$p/addr_trsvcid" &&
	ln -s "$s" "$p/subsystems/$NVME_NQN"
}

# nvme_target_down: the port and subsystem removed, the NVMe RDMA
# modules unloaded (the host's controller must be gone already).
nvme_target_down() {
	rm -f "$NVME_CFS/ports/1/subsystems/$NVME_NQN"
	rmdir "$NVME_CFS/ports/1" "$NVME_CFS/subsystems/$NVME_NQN/namespaces/1" \
		"$NVME_CFS/subsystems/$NVME_NQN" 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma
}

# The host's block device for our subsystem, once it shows up.  Its
# sysfs "device" is the controller, or with native multipath the
# subsystem; both carry the subsystem NQN.
nvme_host_dev() {
	local b
	for b in /sys/block/nvme*n*; do
		# nvmeXcYnZ are multipath's hidden per-path devices.
		[ -b "/dev/${b##*/}" ] && [ -e "$b/device/subsysnqn" ] || continue
		[ "$(cat "$b/device/subsysnqn")" = "$NVME_NQN" ] || continue
		basename "$b"
		return
	done
}

# nvme_connect: the host connects to the target; NVME_DEV is its block
# device (within 30 s) or empty.  Errors in $TMPD/conn.  NVME_OPTS: more
# connect options (",nr_poll_queues=2", ...).
nvme_connect() {
	NVME_DEV=
	# Reconnect within a second, give up after a minute (the defaults
	# are 10 s and 10 min): the recovery tests wait for it.
	echo "transport=rdma,traddr=$NVME_ADDR,trsvcid=4420,nqn=$NVME_NQN,reconnect_delay=1,ctrl_loss_tmo=60${NVME_OPTS:-}" \
		>/dev/nvme-fabrics 2>"$TMPD/conn" || return 1
	for _ in $(seq 1 60); do
		NVME_DEV=$(nvme_host_dev)
		[ -n "$NVME_DEV" ] && [ -b "/dev/$NVME_DEV" ] && return 0
		sleep 0.5
	done
	NVME_DEV=
	return 1
}

# nvme_ctrl: the sysfs directory of the host's controller of our
# subsystem (empty if none).
nvme_ctrl() {
	local f
	f=$(grep -ls "^$NVME_NQN\$" /sys/class/nvme/nvme*/subsysnqn | head -1)
	[ -z "$f" ] || dirname "$f"
}

# nvme_wait_live SECS: the controller is "live" again within SECS.
nvme_wait_live() {
	local c i
	for i in $(seq 1 $(($1 * 2))); do
		c=$(nvme_ctrl)
		[ -n "$c" ] && [ "$(cat "$c/state" 2>/dev/null)" = live ] && return 0
		sleep 0.5
	done
	return 1
}

# nvme_ctrl_present: the host still has a controller of our subsystem.
nvme_ctrl_present() {
	grep -qs "^$NVME_NQN\$" /sys/class/nvme/nvme*/subsysnqn
}

# nvme_disconnect: the host's controller deleted.  Errors in $TMPD/del.
nvme_disconnect() {
	local ctrl
	ctrl=$(grep -ls "^$NVME_NQN\$" /sys/class/nvme/nvme*/subsysnqn | head -1)
	[ -n "$ctrl" ] || { echo "no controller of $NVME_NQN" >"$TMPD/del"; return 1; }
	echo 1 2>"$TMPD/del" >"${ctrl%/subsysnqn}/delete_controller"
}

# nvme_klog: the kernel log's last lines as TAP diagnostics.
nvme_klog() { dmesg | grep -v kiwi-initramfs | tail -"${1:-40}" | diag; }

# fio_verify LABEL FILE ARGS...: a fio job on FILE (O_DIRECT, libaio)
# that checks every block it writes (crc32c, the first mismatch fatal)
# and must exit 0; ARGS give the pattern and the bounds.  The result
# line shows the blocks written and read back ("issued rwts").
fio_verify() {
	local label=$1 file=$2 rc=0
	shift 2
	timeout 300 fio --name=kiwi --filename="$file" --direct=1 \
		--ioengine=libaio --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --output="$TMPD/fio" "$@" >"$TMPD/fio.err" 2>&1 ||
		rc=$?
	if [ $rc -eq 0 ] && ! grep -qi 'verify.*fail\|bad.*checksum\|err= *[1-9]' \
		"$TMPD/fio" "$TMPD/fio.err"; then
		ok "$label ($(awk -F'[=,]' '/issued rwts/ { printf "%s blocks written, %s read back and checked", $3, $2 }' "$TMPD/fio"))"
	else
		notok "$label (fio exit $rc)"
		tail -n 20 "$TMPD/fio" "$TMPD/fio.err" | diag
		nvme_klog 20
	fi
}

# nvme_fio LABEL ARGS...: fio_verify on NVME_DEV.
nvme_fio() {
	local label=$1
	shift
	fio_verify "$label" "/dev/$NVME_DEV" "$@"
}

# nvme_no_recovery LABEL: the NVMe host never started error recovery
# (reconnect, I/O timeout) since boot.
nvme_no_recovery() {
	if dmesg | grep -qE 'nvme.*(reconnect|I/O.*timeout|error recovery)'; then
		notok "$1: no controller error recovery"
		dmesg | grep -E 'nvme' | tail -10 | diag
	else
		ok "$1: no controller error recovery"
	fi
}

# LIO (target_core_mod, iscsi_target_mod) with ib_isert, set up through
# configfs as targetcli would write it (targetcli-fb fails in the guest,
# which has no D-Bus).  Used by iser.sh (one guest) and twohost.sh (b).
LIO=/sys/kernel/config/target

# lio_iser_up IQN ADDR MB: target IQN with a ramdisk LUN of MB MiB behind
# a portal ADDR:3260 with iSER on; no authentication, any initiator
# (demo mode), writable.
#
# The portal directory makes LIO's iSCSI/TCP listener on ADDR:3260
# first; "iser" then has ib_isert listen on the same address and port
# through rdma_cm, and kiwi's iWARP listener is a TCP socket of the
# host's stack: in one namespace the two collide ("isert_setup_id:
# rdma_listen() failed: -98", EADDRINUSE).  LIO creates its TCP socket
# in the network namespace of the process that makes the directory
# (iscsit_setup_np: sock_create), ib_isert its rdma_cm ID in the initial
# one: so the directory is made in namespace kwt, which has ADDR on a
# dummy netdev of its own.  The TCP listener (discovery) is then in
# kwt, the iSER one in the initial namespace.
lio_iser_up() {
	local tpg=$LIO/iscsi/$1/tpgt_1 rd=$LIO/core/rd_mcp_0/kiwird
	modprobe ib_isert || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config || return 1
	mkdir -p $rd && echo "rd_pages=$(($3 * 256))" >$rd/control &&
	echo 1 >$rd/enable && mkdir -p "$tpg/lun/lun_0" &&
	ln -s $rd "$tpg/lun/lun_0/kiwird" &&
	echo 0 >"$tpg/attrib/authentication" &&
	echo 1 >"$tpg/attrib/generate_node_acls" &&
	echo 1 >"$tpg/attrib/cache_dynamic_acls" &&
	echo 0 >"$tpg/attrib/demo_mode_write_protect" || return 1
	ip netns add kwt && ip netns exec kwt ip link set lo up &&
	ip netns exec kwt ip link add kt0 type dummy &&
	ip netns exec kwt ip addr add "$2/24" dev kt0 &&
	ip netns exec kwt ip link set kt0 up &&
	# (nsenter, not ip netns exec, which mounts a sysfs of its own
	# over /sys and so hides configfs)
	nsenter --net=/run/netns/kwt mkdir "$tpg/np/$2:3260" &&
	echo 1 >"$tpg/np/$2:3260/iser" &&
	grep -qx 1 "$tpg/np/$2:3260/iser" && echo 1 >"$tpg/enable"
}

# lio_iser_down IQN ADDR: lio_iser_up undone, ib_isert and LIO unloaded
# (the initiators must have logged out).
lio_iser_down() {
	local tpg=$LIO/iscsi/$1/tpgt_1
	echo 0 >"$tpg/enable"
	rm -f "$tpg/lun/lun_0/kiwird"
	rmdir "$tpg/lun/lun_0" "$tpg/np/$2:3260" "$tpg" "$LIO/iscsi/$1" \
		$LIO/core/rd_mcp_0/kiwird $LIO/core/rd_mcp_0 || return 1
	modprobe -r ib_isert || return 1
	modprobe -r iscsi_target_mod target_core_pscsi target_core_file \
		target_core_iblock target_core_user target_core_mod 2>/dev/null
	ip netns del kwt
}

# iser_disk: the SCSI disk an iSER session brought, once it shows up
# (30 s): the one sd* whose sysfs path runs through an iSCSI session
# (the guests have no other SCSI disk) and whose model is LIO's ramdisk.
iser_disk() {
	local b
	for _ in $(seq 1 60); do
		for b in /sys/block/sd*; do
			[ -e "$b" ] && readlink -f "$b" | grep -q '/session[0-9]*/' &&
				grep -q RAMDISK "$b/device/model" 2>/dev/null &&
				[ -b "/dev/${b##*/}" ] || continue
			basename "$b"
			return 0
		done
		sleep 0.5
	done
	return 1
}
