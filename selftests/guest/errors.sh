#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/errors.sh -- kiwi error-path tests, run inside the test
# guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/errors.sh
#
# Two network namespaces joined by a veth pair, kiwi0 (10.91.0.1, netns
# kwa) and kiwi1 (10.91.0.2, netns kwb).  Each case runs the iwerr test
# peer (selftests/errors/iwerr.c) as responder in kwb and requester in
# kwa over rdma_cm; the programs check completion statuses, async events,
# QP state, flushing, completion order, DISCONNECTED and placement, and
# this script checks their exit status and the kernel log: the TERMINATE
# kiwi logs on both sides (kmod/rx.c: "terminating stream" on the side
# that detected the error, "peer TERMINATE" on the other) with the
# layer/type/code RFC 5040 and RFC 5041 prescribe, and no kernel trouble.
#
# Cases (one TAP line each): bad_stag, oob_write, read_noaccess,
# send_norecv, send_toolong, other_pd, qp_noread, read_sink_noaccess,
# write_bad_lkey, kill_responder, kill_requester (see iwerr.c),
# req_drop (a connection request the iw_cm never answers), and dyndbg
# (bad_stag with kiwi's dynamic debug on: its lines name device, QP and
# function).  A case that fails because of a known kiwi bug is "not ok
# ... # TODO <bug>".
#
# Output is TAP 13 with the plan line last; exit status 0 only if all pass.
# Environment: KIWI_SELFTEST_BIN (default build/selftests), KIWI_ERR_ONLY
# (comma-separated case names), KIWI_ERR_TIMEOUT (iwerr -t, default 20).
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN=${KIWI_SELFTEST_BIN:-$ROOT/build/selftests}
IWERR=$BIN/iwerr
ONLY=${KIWI_ERR_ONLY:-}
SECS=${KIWI_ERR_TIMEOUT:-20}
SRV=10.91.0.2
PORT=7300
START=$SECONDS
# TAP helpers (ok, notok, diag, tap_end), TMPD, the kwa/kwb namespaces.
. "$ROOT/selftests/guest/lib.sh"

todo()  { T=$((T + 1)); echo "not ok $T $1 # TODO $2"; }

# Kernel trouble: the one list, selftests/vm/check-dmesg.sh's.
KTROUBLE=$("$ROOT/selftests/vm/check-dmesg.sh" --regex)

setup() {
	[ -x "$IWERR" ] || { echo "$IWERR missing (make)"; return 1; }
	modprobe kiwi || return 1
	netns_up && veth_pair kv0 kv1 10.91.0 1500 &&
	# Static neighbours: rdma_cm's address resolution would otherwise
	# wait out its timeout on the first, unresolved, ARP lookup.
	A ip neigh replace $SRV dev kv0 nud permanent \
		lladdr "$(B cat /sys/class/net/kv1/address)" &&
	B ip neigh replace 10.91.0.1 dev kv1 nud permanent \
		lladdr "$(A cat /sys/class/net/kv0/address)" &&
	A rdma link add kiwi0 type kiwi netdev kv0 &&
	B rdma link add kiwi1 type kiwi netdev kv1 &&
	mkfifo "$TMPD/ready"
}

# Under TCG every process start costs a lot (up to a second on a busy
# host): the per-case work below uses shell builtins where it can.

# usecs: the time in microseconds, no fork.
usecs() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }

# lines_of FILE ARRAY: read FILE into ARRAY (builtin).
lines_of() { mapfile -t "$2" <"$1"; }

# qpn_of FILE: set QPN to the QP number an iwerr run reported.
qpn_of() {
	local l
	QPN=none
	while IFS= read -r l; do
		if [[ $l =~ qp_num\ ([0-9]+)\ on ]]; then
			QPN=${BASH_REMATCH[1]}
			return
		fi
	done <"$1"
}

# has_line ERE: some new kernel log line (in NEWLOG) matches.
has_line() {
	local l
	for l in "${NEWLOG[@]}"; do
		[[ $l =~ $1 ]] && return 0
	done
	return 1
}

# check_term EXPECT: the TERMINATE kiwi logged on each side, each line
# naming its device (the responder's kiwi1, the requester's kiwi0) and
# QP.  EXPECT is
# "SIDE OP LAYER TYPE CODE": SIDE (srv or cli) detected the error in a
# received message of opcode OP and logged "terminating stream" (OP "-":
# detected locally, not logged); the other side logged "peer TERMINATE".
# LAYER TYPE CODE are extended regexps.  "-": no TERMINATE at all.
# Sets TERM_WHY on failure.
check_term() {
	local exp=$1 side op l t c det rcv dq rq dd rd
	TERM_WHY=
	if [ "$exp" = - ]; then
		has_line 'TERMINATE|terminating stream' &&
			TERM_WHY="unexpected TERMINATE"
		return
	fi
	read -r side op l t c <<<"$exp"
	qpn_of "$TMPD/srv"; local sq=$QPN
	qpn_of "$TMPD/cli"; local cq=$QPN
	if [ "$side" = srv ]; then
		det=responder rcv=requester dq=$sq rq=$cq dd=kiwi1 rd=kiwi0
	else
		det=requester rcv=responder dq=$cq rq=$sq dd=kiwi0 rd=kiwi1
	fi
	if [ "$op" != - ] &&
	   ! has_line "$dd: QP $dq: terminating stream: op $op layer $l type $t code $c "; then
		TERM_WHY="no '$dd: QP $dq: terminating stream: op $op layer $l type $t code $c' ($det)"
		return
	fi
	has_line "$rd: QP $rq: peer TERMINATE layer $l type $t code $c\$" ||
		TERM_WHY="no '$rd: QP $rq: peer TERMINATE layer $l type $t code $c' ($rcv)"
}

# show FILE [all]: an iwerr output as TAP diagnostics: its summary line,
# or everything but.
show() {
	local l
	while IFS= read -r l; do
		if [[ $l == *" summary: "* ]]; then
			[ -z "${2:-}" ] && echo "$l"
		elif [ -n "${2:-}" ]; then
			[[ $l == "#"* ]] && echo "$l" || echo "# $l"
		fi
	done <"$1"
}

# run_pair CASE: iwerr CASE as responder (kwb) and requester (kwa) on a
# port of their own.  Sets SRC and CRC (their exit statuses, "none" if
# unknown), PAIR_WHY (the responder never listened) and NEWLOG (the
# kernel log lines the pair caused); the outputs are $TMPD/srv, cli.
run_pair() {
	local port spid line mark
	PORT=$((PORT + 1)) port=$PORT
	SRC=none CRC=none PAIR_WHY=
	mapfile -t LOG < <(dmesg)
	mark=${#LOG[@]}
	rm -f "$TMPD/src" "$TMPD/crc"
	# Subshells keep bash's "Killed" notices out of the TAP stream; the
	# responder reports on the FIFO once it listens (or has exited).
	( B "$IWERR" -s -c "$1" -a $SRV -p $port -t "$SECS" \
		-r "$TMPD/ready" >"$TMPD/srv" 2>&1
	  echo $? >"$TMPD/src"; echo exited >"$TMPD/ready" ) 2>/dev/null &
	spid=$!
	read -r -t 60 -u "$RFD" line
	[ "$line" = listening ] || PAIR_WHY="responder not listening (${line:-timeout})"
	( A "$IWERR" -c "$1" -a $SRV -p $port -t "$SECS" \
		>"$TMPD/cli" 2>&1; echo $? >"$TMPD/crc" ) 2>/dev/null
	wait $spid
	# Drain the FIFO for the next case.
	while read -r -t 0 -u "$RFD"; do read -r -u "$RFD" line; done
	[ -s "$TMPD/src" ] && read -r SRC <"$TMPD/src"
	[ -s "$TMPD/crc" ] && read -r CRC <"$TMPD/crc"
	mapfile -t LOG < <(dmesg)
	NEWLOG=("${LOG[@]:mark}")
}

# run_case NAME EXPECT SRV_RC CLI_RC TITLE [TODO]: one responder/requester
# pair.  TODO: a known kiwi bug makes the case fail; it is then reported
# as TAP "not ok ... # TODO <reason>" unless the kernel logged trouble or
# a program crashed or hung (those stay plain failures).
run_case() {
	local name=$1 exp=$2 want_s=$3 want_c=$4 title=$5 todo=${6:-}
	local why='' hard='' t0 src crc l
	if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then
		return
	fi
	t0=$(usecs)
	run_pair "$name"
	why=$PAIR_WHY src=$SRC crc=$CRC

	[ "$src" = "$want_s" ] || why="${why:+$why; }responder exit $src (want $want_s)"
	[ "$crc" = "$want_c" ] || why="${why:+$why; }requester exit $crc (want $want_c)"
	case "$src $crc" in
	[01]" "[01]|137" "[01]|[01]" 137") ;;
	*) hard=1 ;;
	esac
	check_term "$exp"
	[ -z "$TERM_WHY" ] || why="${why:+$why; }$TERM_WHY"
	if has_line "$KTROUBLE"; then
		why="${why:+$why; }kernel trouble in dmesg"
		hard=1
	fi
	if [ -z "$why" ]; then
		ok "$name: $title"
	elif [ -n "$todo" ] && [ -z "$hard" ]; then
		todo "$name: $title" "$todo"
		echo "# failed as expected: $why"
	else
		notok "$name: $title"
		echo "# FAILED: $why"
	fi
	show "$TMPD/cli"
	show "$TMPD/srv"
	for l in "${NEWLOG[@]}"; do
		[[ $l =~ kiwi[01]:\ QP\ [0-9]+:\ (terminating|peer\ TERMINATE) ]] &&
			echo "# dmesg: ${l#\[*\] }"
	done
	t0=$(( ($(usecs) - t0) / 100000 ))
	echo "# $name: $((t0 / 10)).$((t0 % 10)) s"
	if [ -n "$why" ] || [ -n "${KIWI_ERR_VERBOSE:-}" ]; then
		echo "# ---- requester output"
		show "$TMPD/cli" all
		echo "# ---- responder output"
		show "$TMPD/srv" all
		echo "# ---- kernel log"
		for l in "${NEWLOG[@]: -40}"; do echo "# $l"; done
	fi
}

tap_setup "two namespaces, veth, kiwi0/kiwi1" \
	"two namespaces, veth, kiwi0/kiwi1"
exec {RFD}<>"$TMPD/ready"

# Expected TERMINATEs (layer/type/code): RFC 5041 7.2 for DDP (layer
# 1; type 1 tagged: 0x00 invalid STag, 0x01 base or bounds; kiwi
# reports an STag of another PD as invalid too, not as 0x02 "not
# associated", so a peer cannot tell live STags of other PDs; type 2 untagged: 0x02 no buffer, 0x05 message too
# long), RFC 5040 for RDMAP
# (layer 0; type 1 remote protection: 0x02 access rights; type 0 local
# catastrophic, any code).
run_case bad_stag "srv 0 1 1 0x00" 0 0 \
	"RDMA WRITE to an unregistered STag: TERMINATE DDP tagged/invalid STag, both QPs to ERR, flushed, disconnected"
run_case oob_write "srv 0 1 1 0x01" 0 0 \
	"RDMA WRITE past the end of the MR: TERMINATE DDP tagged/base or bounds, nothing placed, QPs to ERR, disconnected"
run_case read_noaccess "srv 1 0 1 0x02" 0 0 \
	"RDMA READ of an MR without REMOTE_READ: REM_ACCESS_ERR, TERMINATE RDMAP protection/access rights, QPs to ERR"
run_case send_norecv "srv 3 1 2 0x02" 0 0 \
	"SEND with no receive posted: TERMINATE DDP untagged/no buffer, both QPs to ERR, flushed, disconnected"
run_case send_toolong "srv 3 1 2 0x05" 0 0 \
	"SEND longer than the posted receive: TERMINATE DDP untagged/too long, that receive LOC_LEN_ERR, rest flushed"
run_case other_pd "srv 0 1 1 0x00" 0 0 \
	"RDMA WRITE to an MR of another PD: TERMINATE DDP tagged/invalid STag (as for no STag), nothing placed, QPs to ERR"
run_case qp_noread "srv 1 0 1 0x02" 0 0 \
	"RDMA READ via a QP without REMOTE_READ access: remote error, TERMINATE RDMAP protection/access rights"
run_case read_sink_noaccess "cli 2 [01] 1 0x0[0-2]" 0 0 \
	"RDMA READ into a local MR without LOCAL_WRITE: LOC_PROT_ERR, TERMINATE to the responder, QPs to ERR"
run_case write_bad_lkey "cli - 0 0 0x[0-9a-f]{2}" 0 0 \
	"RDMA WRITE from an unregistered lkey: LOC_PROT_ERR, later WRs flushed, TERMINATE to the responder"
run_case kill_responder - 137 0 \
	"responder SIGKILLed mid-stream: requester sees flushes, QP ERR, DISCONNECTED"
run_case kill_requester - 0 137 \
	"requester SIGKILLed mid-stream: responder sees receives flushed, QP ERR, DISCONNECTED"

# A connection request the iw_cm drops (cm_conn_req_handler(): when
# iw_create_cm_id() fails it neither accepts nor rejects).  kiwi's
# fault_drop_conn_req knob makes kiwi behave as if that happened to the
# next request; accept_timeout_ms (3 s here) must then reset the
# connection and free its endpoint: cm_endpoints back to 0 once the
# listener is gone, where before the endpoint stayed until unload.
req_drop_case() {
	local P=/sys/module/kiwi/parameters n=none i spid rc mark l
	if [ -n "$ONLY" ] && [[ ",$ONLY," != *",req_drop,"* ]]; then
		return
	fi
	mapfile -t LOG < <(dmesg)
	mark=${#LOG[@]}
	# KIWI_REQ_TIMEOUT_MS=0 shows the behaviour before the timer.
	echo "${KIWI_REQ_TIMEOUT_MS:-3000}" >$P/accept_timeout_ms
	echo 1 >$P/fault_drop_conn_req
	B timeout 60 rping -s -a $SRV -p 7399 -C 1 >"$TMPD/srv" 2>&1 &
	spid=$!
	wait_port $SRV 7399
	# The requester waits out its MPA reply (mpa_timeout_ms) and fails.
	A timeout 40 rping -c -a $SRV -p 7399 -C 1 >"$TMPD/cli" 2>&1
	rc=$?
	kill_tree $spid
	wait $spid 2>/dev/null
	for i in $(seq 1 40); do
		n=$(cat $P/cm_endpoints)
		[ "$n" = 0 ] && break
		sleep 0.5
	done
	echo 0 >$P/fault_drop_conn_req
	echo 120000 >$P/accept_timeout_ms
	mapfile -t LOG < <(dmesg)
	NEWLOG=("${LOG[@]:mark}")
	if [ "$n" = 0 ] && [ $rc -ne 0 ] && ! has_line "$KTROUBLE"; then
		ok "req_drop: a request the iw_cm dropped is reset after accept_timeout_ms, its endpoint freed (cm_endpoints 0)"
	else
		notok "req_drop: a request the iw_cm dropped is reset after accept_timeout_ms, its endpoint freed (cm_endpoints $n, requester exit $rc)"
		tail -n 5 "$TMPD/cli" "$TMPD/srv" | diag
		for l in "${NEWLOG[@]: -20}"; do echo "# $l"; done
	fi
}
req_drop_case

# dyndbg: kiwi's dynamic debug lines name the device, the QP and the
# function that decided.  bad_stag once more with them on (module kiwi
# +p): the responder (kiwi1) must log the TERMINATE it decided to send
# for the WRITE it refused, the requester (kiwi0) the peer's TERMINATE
# failing its WR, each as "DEV: QP N: FUNCTION: ..." with that side's
# QP N; then they are off again.  Last, so that no other case sees
# them.
dyndbg_case() {
	local ctl=/sys/kernel/debug/dynamic_debug/control why sq cq l
	local sent recv
	if [ -n "$ONLY" ] && [[ ",$ONLY," != *",dyndbg,"* ]]; then
		return
	fi
	mountpoint -q /sys/kernel/debug ||
		mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
	if ! echo 'module kiwi +p' 2>/dev/null >$ctl; then
		notok "dyndbg: dynamic debug cannot be turned on ($ctl)"
		return
	fi
	run_pair bad_stag
	echo 'module kiwi -p' >$ctl
	why=$PAIR_WHY
	[ "$SRC $CRC" = "0 0" ] ||
		why="${why:+$why; }exit statuses $SRC $CRC (want 0 0)"
	qpn_of "$TMPD/srv"; sq=$QPN
	qpn_of "$TMPD/cli"; cq=$QPN
	sent="kiwi1: QP $sq: kiwi_qp_fail: TERMINATE to send: layer 1 type 1 code 0x00"
	recv="kiwi0: QP $cq: kiwi_qp_fail: peer's TERMINATE: "
	has_line "$sent\$" || why="${why:+$why; }no '$sent' (responder)"
	has_line "$recv" || why="${why:+$why; }no '$recv...' (requester)"
	has_line "$KTROUBLE" && why="${why:+$why; }kernel trouble in dmesg"
	if [ -z "$why" ]; then
		ok "dyndbg: with dynamic debug on, bad_stag's TERMINATE decisions logged as DEV: QP N: FUNCTION: on both sides"
	else
		notok "dyndbg: with dynamic debug on, bad_stag's TERMINATE decisions logged as DEV: QP N: FUNCTION: on both sides"
		echo "# FAILED: $why"
		show "$TMPD/cli" all
		show "$TMPD/srv" all
	fi
	for l in "${NEWLOG[@]}"; do
		[[ $l == *"kiwi_qp_fail: "* ]] && echo "# dmesg: ${l#\[*\] }"
	done
	[ -z "$why" ] || for l in "${NEWLOG[@]: -40}"; do echo "# $l"; done
}
dyndbg_case

echo "# errors.sh: $((SECONDS - START)) s"
exec {RFD}<&-
tap_end
