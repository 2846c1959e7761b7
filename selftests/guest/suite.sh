#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/suite.sh -- kiwi's guest-side test driver.  Runs as root
# inside the test guest, started by selftests/check.sh as
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/suite.sh
#
# and prints one TAP 13 stream on stdout: every C verbs test case, every
# pyverbs case and every shell-level check below is one "ok N name" /
# "not ok N name" line; the plan line "1..N" comes last, so a guest that
# dies half-way is recognisable by the missing plan.  Exit status is 0 only
# if nothing failed.
#
# Options (also as env):
#   --driver kiwi|rxe  (KIWI_SUITE_DRIVER) rxe: run the same suite against
#                      soft-RoCE, to validate the suite itself; the
#                      iWARP/kiwi-specific checks are expected to fail.
#   --only GROUPS      (KIWI_SUITE_ONLY) comma-separated subset of:
#                      module verbs pyverbs link cleanup limits
#
# Environment: KIWI_SELFTEST_BIN (default build/selftests of this tree).
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN=${KIWI_SELFTEST_BIN:-$ROOT/build/selftests}
DRIVER=${KIWI_SUITE_DRIVER:-kiwi}
ONLY=${KIWI_SUITE_ONLY:-}
while [ $# -gt 0 ]; do
	case "$1" in
	--driver) DRIVER=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	*) echo "suite.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

case "$DRIVER" in
kiwi) MOD=kiwi; LTYPE=kiwi; PFX=kiwi ;;
rxe)  MOD=rdma_rxe; LTYPE=rxe; PFX=rxe ;;
*) echo "suite.sh: unknown driver $DRIVER" >&2; exit 2 ;;
esac
DEV0=${PFX}0 DEV1=${PFX}1 ND0=d0 ND1=d1
# Small limits for the resource-exhaustion tests (module reloaded with them).
LIMIT_PARAMS="max_qp=6 max_cq=7 max_mr=9 max_pd=5 max_srq=4"

export LC_ALL=C
START=$SECONDS
T=0 NFAIL=0 NSKIP=0
GROUP=-

# ------------------------------------------------------------ TAP output --
tap_ok()    { T=$((T + 1)); echo "ok $T $1${2:+ # SKIP $2}"; [ -z "${2:-}" ] || NSKIP=$((NSKIP + 1)); }
tap_notok() { T=$((T + 1)); NFAIL=$((NFAIL + 1)); echo "not ok $T $1"; }
diag()      { sed -e 's/^/# /'; }
phase()     { GROUP=$1; echo "# ==== $1 ($((SECONDS - START)) s) ===="; }
want()      { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }

# Kernel trouble in the dmesg lines logged since a mark (the one list of
# it: selftests/vm/check-dmesg.sh's).
KTROUBLE=$("$ROOT/selftests/vm/check-dmesg.sh" --regex)
dmesg_mark() { dmesg | wc -l; }
dmesg_trouble() { dmesg | tail -n +$(($1 + 1)) | grep -E -- "$KTROUBLE"; }

# Kernel trouble after which the guest's kernel can't be trusted any more:
# the suite stops (rather than hang on locks a dead task holds).
KFATAL='(^|[^A-Za-z0-9_])BUG([^A-Za-z0-9_]|$)|Oops|general protection fault|Kernel panic|soft lockup|blocked for more than|rcu.*stall'
TMPD=$(mktemp -d /tmp/kiwi-suite.XXXXXX)

# bounded SECS FILE CMD...: runs CMD with output to FILE; returns its exit
# status, or 254 if it did not finish within SECS (a task stuck in the
# kernel can't be killed: it is abandoned).
bounded() {
	local secs=$1 file=$2 pid wd rc
	shift 2
	("$@") >"$file" 2>&1 </dev/null &
	pid=$!
	( sleep "$secs"; kill -KILL $pid 2>/dev/null ) >/dev/null 2>&1 &
	wd=$!
	wait $pid 2>/dev/null
	rc=$?
	if kill $wd 2>/dev/null; then
		return $rc
	fi
	echo "# (no result after ${secs}s: abandoned; a task may be stuck in the kernel)" >>"$file"
	return 254
}

# abort_if_wedged NAME RC: after a test, stop the suite if it hung or the
# kernel reported a BUG/Oops/lockup since the suite started.
abort_if_wedged() {
	local why=
	[ "$2" -ne 254 ] || why="$1 hung"
	if dmesg | tail -n +$((BOOT_MARK + 1)) | grep -qE -- "$KFATAL"; then
		why="${why:+$why; }kernel BUG/Oops/lockup in dmesg"
	fi
	[ -n "$why" ] || return 0
	echo "# ABORT after $1: $why; the remaining tests can't be trusted"
	dmesg | tail -n +$((BOOT_MARK + 1)) | grep -E -m5 -- "$KFATAL" | diag
	tap_notok "suite.aborted_after.$1"
	finish
}

finish() {
	rm -rf "$TMPD"
	echo "1..$T"
	echo "# suite: $T tests, $NFAIL failed, $NSKIP skipped, $((SECONDS - START)) s"
	[ $NFAIL -eq 0 ]
	exit
}

# check NAME CMD...: runs CMD (a function or program), output as
# diagnostics; exit 0 -> ok, 77 -> skip (last output line = reason),
# anything else -> not ok.  Kernel trouble logged meanwhile -> not ok.
check() {
	local name=$GROUP.$1 rc mark f=$TMPD/out
	shift
	mark=$(dmesg_mark)
	bounded "${CHECK_TMO:-180}" "$f" "$@"
	rc=$?
	sed -e "s/^/# ${name#*.}: /" "$f"
	if trouble=$(dmesg_trouble "$mark"); then
		printf 'kernel trouble during this test:\n%s\n' "$trouble" | head -20 | diag
		[ $rc -eq 254 ] || rc=1
	fi
	case $rc in
	0) tap_ok "$name" ;;
	77) tap_ok "$name" "$(tail -n1 "$f")" ;;
	*) tap_notok "$name" ;;
	esac
	abort_if_wedged "$name" $rc
	[ $rc -eq 0 ]
}

# embed NAME CMD...: runs a program that prints TAP and re-emits its
# results as part of this stream (renumbered, names prefixed NAME.).  A
# crash, a non-zero exit without a "not ok", or fewer results than planned
# add a failure of their own.
embed() {
	local name=$1 line plan=-1 n=0 bad=0 rc=0 mark f=$TMPD/embed
	local -A seen=()
	shift
	mark=$(dmesg_mark)
	bounded "${EMBED_TMO:-900}" "$f" "$@"
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"TAP version"*) ;;
		1..*) plan=${line#1..} ;;
		"ok "*|"not ok "*)
			local st=ok rest=${line#ok }
			if [[ $line == "not ok "* ]]; then st=notok; rest=${line#not ok }; fi
			rest=${rest#* }	# drop the number
			n=$((n + 1))
			if [ $st = ok ]; then
				if [[ $rest == *" # SKIP"* ]]; then
					tap_ok "$name.${rest%% # SKIP*}" "${rest#* # SKIP }"
				else
					tap_ok "$name.$rest"
				fi
			else
				bad=$((bad + 1))
				tap_notok "$name.$rest"
			fi
			;;
		"# RUN "*) ;;
		"#"*) echo "$line" ;;
		*)	# raw output (library warnings...): once per program
			[ -n "${seen[$line]:-}" ] || echo "# $line"
			seen[$line]=1 ;;
		esac
	done <"$f"
	if [ "$plan" -ge 0 ] && [ "$n" -ne "$plan" ]; then
		echo "# $name: planned $plan tests, got $n (exit status $rc)"
		tap_notok "$name.incomplete"
	elif [ "$plan" -lt 0 ]; then
		echo "# $name: no TAP plan (exit status $rc)"
		tap_notok "$name.no_plan"
	elif [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		echo "# $name: exit status $rc without a failed test"
		tap_notok "$name.exit_status"
	fi
	if trouble=$(dmesg_trouble "$mark"); then
		printf 'kernel trouble while %s ran:\n%s\n' "$name" "$trouble" | head -20 | diag
		tap_notok "$name.dmesg_clean"
	fi
	abort_if_wedged "$name" $rc
}

# wait_for SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
}
tmo() { timeout -k 5 "${TMO:-60}" "$@"; }

# ------------------------------------------------------------- helpers --
have_dev()   { [ -e "/sys/class/infiniband/$1" ]; }
no_dev()     { [ ! -e "/sys/class/infiniband/$1" ]; }
mod_loaded() { [ -e "/sys/module/$MOD" ]; }

netdev_add() {
	ip link del "$1" 2>/dev/null
	ip link add "$1" type dummy && ip link set "$1" mtu "${2:-1500}" up
}

link_add() {	# DEV NETDEV
	tmo rdma link add "$1" type "$LTYPE" netdev "$2" || return 1
	wait_for 10 have_dev "$1" || { echo "$1 not in /sys/class/infiniband after link add"; return 1; }
}

devinfo_field() {	# DEV FIELD -> value of "FIELD: value" from ibv_devinfo
	ibv_devinfo -d "$1" 2>/dev/null | sed -n "s/^[[:space:]]*$2:[[:space:]]*//p" | head -n1
}
devinfo_match() { [[ "$(devinfo_field "$1" "$2")" =~ $3 ]]; }

expect_devinfo() {	# DEV FIELD VALUE-REGEX [timeout]
	local got
	if ! wait_for "${4:-0}" devinfo_match "$1" "$2" "$3"; then
		got=$(devinfo_field "$1" "$2")
		echo "ibv_devinfo -d $1: $2 is '${got:-<missing>}', expected /$3/"
		ibv_devinfo -d "$1" 2>&1 | head -30
		return 1
	fi
	echo "ibv_devinfo -d $1: $2: $(devinfo_field "$1" "$2")"
}

rdma_link_state() {	# DEV -> state word from `rdma link show DEV/1`
	rdma link show "$1/1" 2>/dev/null | sed -n 's/.* state \([A-Z_]*\).*/\1/p'
}
link_state_is() { [ "$(rdma_link_state "$1")" = "$2" ]; }

expect_link_state() {	# DEV STATE [timeout]
	if ! wait_for "${3:-5}" link_state_is "$1" "$2"; then
		echo "rdma link show $1/1: state '$(rdma_link_state "$1")', expected $2"
		rdma link show 2>&1
		return 1
	fi
	rdma link show "$1/1"
}

run_verbs() {	# PROGRAM [args]: the C verbs test, or a failure if unbuilt
	local p=$BIN/$1
	shift
	if [ ! -x "$p" ]; then
		echo "TAP version 13"; echo "1..1"
		echo "# $p not built (cmake --build build)"
		echo "not ok 1 built"
		return 1
	fi
	KIWI_DEV=${KIWI_DEV:-$DEV0} KIWI_NETDEV=${KIWI_NETDEV:-$ND0} "$p" "$@"
}

# gtest_tap PROGRAM: a GoogleTest program's cases as TAP, one line each.
# A skipped case is a failure here: the guest has a kiwi device, so
# every provider device test must run.  Its messages become comments.
gtest_tap() {
	local p=$1 out=$TMPD/gtest n=0 l re
	re='^\[ +(OK|FAILED|SKIPPED) +\] ([A-Za-z0-9_./]+) \([0-9]+ ms\)$'
	echo "TAP version 13"
	if [ ! -x "$p" ]; then
		echo "1..1"; echo "# $p not built (make provider)"; echo "not ok 1 built"
		return 1
	fi
	"$p" --gtest_color=no >"$out" 2>&1
	while IFS= read -r l; do
		if [[ $l =~ $re ]]; then
			n=$((n + 1))
			case ${BASH_REMATCH[1]} in
			OK) echo "ok $n ${BASH_REMATCH[2]}" ;;
			FAILED) echo "not ok $n ${BASH_REMATCH[2]}" ;;
			SKIPPED) echo "not ok $n ${BASH_REMATCH[2]} (skipped where a kiwi device exists)" ;;
			esac
		elif [[ $l != "[ RUN "* ]]; then
			echo "# $l"
		fi
	done <"$out"
	if [ $n -eq 0 ]; then
		n=1; echo "not ok 1 ran_cases"
	fi
	echo "1..$n"
}

# ---------------------------------------------------------------- tests --
t_modprobe() {
	mod_loaded && { tmo rmmod "$MOD" || return 1; }
	tmo modprobe "$MOD" "$@" || return 1
	mod_loaded || { echo "/sys/module/$MOD missing after modprobe"; return 1; }
	echo "loaded $MOD $*"
}

t_modinfo() {
	[ "$DRIVER" = kiwi ] || { echo "kiwi only"; return 77; }
	local ko=$ROOT/kmod/kiwi.ko parms p fail=0
	[ -f "$ko" ] || { echo "$ko missing"; return 1; }
	parms=$(modinfo -F parm "$ko") || return 1
	printf '%s\n' "$parms"
	for p in max_qp max_cq max_mr max_pd max_srq crc; do
		# "name:description (type)"; the description must be non-empty.
		if ! grep -qE "^$p:[[:space:]]*[^[:space:](][^(]*(\(.*\))?$" <<<"$parms"; then
			echo "parameter $p missing or without a description"
			fail=1
		fi
	done
	for f in license description; do
		[ -n "$(modinfo -F $f "$ko")" ] || { echo "modinfo: no $f"; fail=1; }
	done
	return $fail
}

t_setup_dev0() {
	netdev_add $ND0 1500 || return 1
	link_add $DEV0 $ND0 || return 1
	rdma link show "$DEV0/1"
}

t_sysfs_node_type() {
	local nt
	nt=$(cat /sys/class/infiniband/$DEV0/node_type) || return 1
	echo "node_type: $nt"
	[[ $nt == "4: RNIC" ]]
}

t_devinfo_transport() { expect_devinfo $DEV0 transport 'iWARP \(1\)'; }
t_devinfo_active()    { expect_devinfo $DEV0 state 'PORT_ACTIVE \(4\)'; }
t_devinfo_link_layer() { expect_devinfo $DEV0 link_layer 'Ethernet'; }
t_devinfo_mtu1500()   { expect_devinfo $DEV0 active_mtu '1024 \(3\)'; }

t_rdma_link_active() { expect_link_state $DEV0 ACTIVE; }
t_rdma_link_netdev() {
	local s
	s=$(rdma link show "$DEV0/1") || return 1
	echo "$s"
	[[ $s == *" netdev $ND0"* ]]
}

t_mtu_9000() {
	ip link set $ND0 mtu 9000 || return 1
	expect_devinfo $DEV0 active_mtu '4096 \(5\)' 5
}

t_mtu_back_1500() {
	ip link set $ND0 mtu 1500 || return 1
	expect_devinfo $DEV0 active_mtu '1024 \(3\)' 5
}

t_netdev_down() {
	ip link set $ND0 down || return 1
	local rc=0
	expect_devinfo $DEV0 state 'PORT_DOWN \(1\)' 5 || rc=1
	expect_link_state $DEV0 DOWN || rc=1
	return $rc
}

t_netdev_up() {
	ip link set $ND0 up || return 1
	local rc=0
	expect_devinfo $DEV0 state 'PORT_ACTIVE \(4\)' 5 || rc=1
	expect_link_state $DEV0 ACTIVE || rc=1
	return $rc
}

t_second_device() {
	netdev_add $ND1 1500 || return 1
	link_add $DEV1 $ND1 || return 1
	rdma link show
	have_dev $DEV0 || { echo "$DEV0 vanished"; return 1; }
	expect_devinfo $DEV1 state 'PORT_ACTIVE \(4\)' 5 || return 1
	# Both usable from libibverbs at once.
	KIWI_DEV=$DEV1 KIWI_NETDEV=$ND1 run_verbs verbs_pd_mr -t alloc_dealloc_pd >/dev/null ||
		{ echo "verbs on $DEV1 failed"; return 1; }
	KIWI_DEV=$DEV0 KIWI_NETDEV=$ND0 run_verbs verbs_pd_mr -t alloc_dealloc_pd >/dev/null ||
		{ echo "verbs on $DEV0 failed"; return 1; }
}

t_second_device_gid() {
	KIWI_DEV=$DEV1 KIWI_NETDEV=$ND1 run_verbs verbs_device -t query_gid_mac
}

t_duplicate_name() {
	local out rc
	out=$(tmo rdma link add $DEV0 type "$LTYPE" netdev $ND1 2>&1); rc=$?
	echo "rdma link add $DEV0 (again) -> exit $rc: $out"
	[ $rc -ne 0 ] || { echo "duplicate name accepted"; return 1; }
	# The original is untouched and still bound to $ND0.
	rdma link show "$DEV0/1" | grep -q " netdev $ND0" || { echo "$DEV0 changed"; rdma link show; return 1; }
}

t_netdev_in_use() {
	local out rc
	out=$(tmo rdma link add ${PFX}5 type "$LTYPE" netdev $ND0 2>&1); rc=$?
	echo "rdma link add ${PFX}5 netdev $ND0 (has $DEV0) -> exit $rc: $out"
	[ $rc -ne 0 ] || { echo "second device on one netdev accepted"; tmo rdma link delete ${PFX}5; return 1; }
	[[ $out == *"File exists"* ]] || { echo "expected EEXIST (File exists)"; return 1; }
	no_dev ${PFX}5
}

t_link_delete() {
	tmo rdma link delete $DEV1 || return 1
	wait_for 10 no_dev $DEV1 || { echo "$DEV1 still in sysfs"; return 1; }
	if rdma link show 2>/dev/null | grep -q "link $DEV1/"; then
		echo "$DEV1 still listed by rdma link"; return 1
	fi
	ibv_devices 2>&1 | grep -qw $DEV1 && { echo "$DEV1 still listed by ibv_devices"; return 1; }
	have_dev $DEV0 || { echo "$DEV0 vanished too"; return 1; }
	rdma link show
}

t_netdev_delete() {
	link_add $DEV1 $ND1 || return 1
	ip link del $ND1 || return 1
	wait_for 10 no_dev $DEV1 || { echo "$DEV1 still exists after ip link del $ND1"; rdma link show; return 1; }
	have_dev $DEV0 || { echo "$DEV0 vanished too"; return 1; }
	rdma link show
}

t_readd_after_delete() {
	netdev_add $ND1 1500 || return 1
	link_add $DEV1 $ND1 || return 1
	tmo rdma link delete $DEV1 || return 1
	wait_for 10 no_dev $DEV1
}

t_rmmod_with_devices() {
	netdev_add $ND1 1500 || return 1
	link_add $DEV1 $ND1 || return 1
	TMO=120 tmo rmmod "$MOD" || { echo "rmmod $MOD failed"; return 1; }
	mod_loaded && { echo "$MOD still loaded"; return 1; }
	local d fail=0
	for d in $DEV0 $DEV1; do
		have_dev $d && { echo "$d still present"; fail=1; }
	done
	rdma link show 2>&1 | grep -E "link ($DEV0|$DEV1)/" && fail=1
	# The netdevs are untouched.
	ip link show $ND0 >/dev/null && ip link show $ND1 >/dev/null || { echo "netdev gone"; fail=1; }
	return $fail
}

t_reload() {
	tmo modprobe "$MOD" || return 1
	link_add $DEV0 $ND0 || return 1
	run_verbs verbs_device -t open_close_device -t query_port_state >/dev/null ||
		{ echo "verbs after reload failed"; return 1; }
	echo "reloaded, $DEV0 works"
}

t_rmmod_after_killed_process() {
	# verbs_cleanup has just run its SIGKILL tests: nothing may pin the module.
	local r
	r=$(rdma res show 2>&1)
	echo "$r"
	TMO=120 tmo rmmod "$MOD" || { echo "rmmod $MOD failed after killed-process tests"; lsmod | grep -w "$MOD"; return 1; }
	no_dev $DEV0
}

t_link_add_bad_netdev() {
	local out rc
	out=$(tmo rdma link add ${PFX}9 type "$LTYPE" netdev no_such_nd 2>&1); rc=$?
	echo "rdma link add ${PFX}9 netdev no_such_nd -> exit $rc: $out"
	[ $rc -ne 0 ] || { echo "accepted a netdev that does not exist"; return 1; }
	no_dev ${PFX}9 || { echo "${PFX}9 exists"; return 1; }
}

t_mtu_9000_at_creation() {
	netdev_add $ND1 9000 || return 1
	link_add $DEV1 $ND1 || return 1
	local rc=0
	expect_devinfo $DEV1 active_mtu '4096 \(5\)' 5 || rc=1
	tmo rdma link delete $DEV1 || rc=1
	wait_for 10 no_dev $DEV1 || rc=1
	ip link set $ND1 mtu 1500
	return $rc
}

# removal_with_open_context DEV CMD...: CMD removes DEV (rdma link delete,
# rmmod) while a process holds DEV open with objects in it.  Accepted
# kernel behaviours: CMD completes by disassociating the process; or it
# waits until the process is gone, then completes; or it is refused as
# busy ("in use": a driver without disassociate pins its module while a
# context is open) and succeeds once the process is gone.  In every case
# DEV must disappear and the kernel log stay clean.
removal_with_open_context() {
	local dev=$1 f=$TMPD/hold.out r=$TMPD/removal.out hp cp deadline rc=0
	shift
	[ -x "$BIN/verbs_hold" ] || { echo "$BIN/verbs_hold not built"; return 1; }
	KIWI_DEV=$dev "$BIN/verbs_hold" >"$f" 2>&1 &
	hp=$!
	if ! wait_for 30 grep -q ready "$f"; then
		cat "$f"; kill -9 $hp; return 1
	fi
	"$@" >"$r" 2>&1 &
	cp=$!
	sleep 2
	if kill -0 $cp 2>/dev/null; then
		echo "'$*' waits while $dev is open (no disassociate); killing the holder"
	else
		wait $cp; rc=$?
		cp=
		if [ $rc -eq 0 ]; then
			echo "'$*' completed while $dev was open (context disassociated)"
		elif grep -qiE 'in use|busy' "$r"; then
			echo "'$*' refused while $dev is open: $(cat "$r"); killing the holder"
		else
			echo "'$*' failed while $dev was open: exit $rc: $(cat "$r")"
			kill -9 $hp; return 1
		fi
	fi
	kill -9 $hp 2>/dev/null
	wait $hp 2>/dev/null
	if [ -n "$cp" ]; then
		deadline=$((SECONDS + 30))
		while kill -0 $cp 2>/dev/null; do
			if [ $SECONDS -ge $deadline ]; then
				echo "'$*' still blocked 30 s after the holder died"
				return 254
			fi
			sleep 0.2
		done
		wait $cp; rc=$?
		cat "$r"
	elif [ $rc -ne 0 ]; then
		# Refused as busy: must work now that the holder is gone.
		wait_for 10 tmo "$@"; rc=$?
		[ $rc -eq 0 ] || tmo "$@"
	fi
	[ $rc -eq 0 ] || { echo "'$*' failed: exit $rc"; return 1; }
	wait_for 10 no_dev "$dev" || { echo "$dev still present"; return 1; }
	echo "'$*' done, $dev gone"
}

t_link_delete_open() {
	netdev_add $ND1 1500 || return 1
	link_add $DEV1 $ND1 || return 1
	removal_with_open_context $DEV1 rdma link delete $DEV1
}

t_rmmod_open() {
	have_dev $DEV0 || link_add $DEV0 $ND0 || return 1
	removal_with_open_context $DEV0 rmmod "$MOD" || return $?
	mod_loaded && { echo "$MOD still loaded"; return 1; }
	return 0
}

t_rmmod_final() {
	TMO=120 tmo rmmod "$MOD" || { echo "rmmod $MOD failed"; return 1; }
	no_dev $DEV0
}

t_reload_small_limits() {
	[ "$DRIVER" = kiwi ] || { echo "resource-limit parameters are kiwi's"; return 77; }
	mod_loaded && { tmo rmmod "$MOD" || return 1; }
	# shellcheck disable=SC2086
	tmo modprobe "$MOD" $LIMIT_PARAMS || return 1
	link_add $DEV0 $ND0 || return 1
	local p v fail=0
	for p in $LIMIT_PARAMS; do
		v=$(cat /sys/module/$MOD/parameters/${p%%=*} 2>&1)
		echo "${p%%=*} = $v"
		[ "$v" = "${p#*=}" ] || fail=1
	done
	return $fail
}

t_devinfo_limits() {
	[ "$DRIVER" = kiwi ] || { echo "kiwi only"; return 77; }
	local out p want got fail=0
	out=$(ibv_devinfo -v -d $DEV0 2>&1) || { echo "$out"; return 1; }
	for p in $LIMIT_PARAMS; do
		want=${p#*=}
		got=$(sed -n "s/^[[:space:]]*${p%%=*}:[[:space:]]*//p" <<<"$out" | head -n1)
		echo "ibv_devinfo: ${p%%=*}: $got (module parameter $want)"
		[ "$got" = "$want" ] || fail=1
	done
	return $fail
}

# ---------------------------------------------------------------- main --
BOOT_MARK=$(dmesg_mark)
echo "TAP version 13"
echo "# kiwi guest suite: driver $DRIVER, kernel $(uname -r), $(nproc) cpus"
echo "# binaries: $BIN"

if want module; then
	phase module
	check modinfo_params t_modinfo
	check modprobe t_modprobe
fi
mod_loaded || tmo modprobe "$MOD" || true
phase setup
check link_add_$DEV0 t_setup_dev0

if want verbs || want link; then
	phase basics
	check sysfs_node_type_rnic t_sysfs_node_type
	check devinfo_transport_iwarp t_devinfo_transport
	check devinfo_port_active t_devinfo_active
	check devinfo_link_layer_ethernet t_devinfo_link_layer
	check devinfo_active_mtu_1024 t_devinfo_mtu1500
	check rdma_link_state_active t_rdma_link_active
	check rdma_link_netdev t_rdma_link_netdev
fi

if want verbs; then
	phase verbs
	for t in device pd_mr cq qp srq ring; do
		echo "# ---- verbs_$t ($((SECONDS - START)) s)"
		embed verbs_$t run_verbs verbs_$t
	done
	# The provider's own GoogleTest checks against a live device.
	[ "$DRIVER" != kiwi ] ||
		embed provider_device gtest_tap "$(dirname "$BIN")/provider/tests/kiwi_provider_device_tests"
fi

if want pyverbs; then
	phase pyverbs
	embed pyverbs tmo /usr/bin/python3 "$ROOT/selftests/guest/pyverbs_tap.py" --dev $DEV0 test_device test_pd test_qp
fi

if want link; then
	phase link
	check mtu_9000_active_4096 t_mtu_9000
	embed mtu9000 run_verbs verbs_device -t query_port_mtu
	check mtu_1500_active_1024 t_mtu_back_1500
	check netdev_down_port_down t_netdev_down
	embed netdev_down run_verbs verbs_device -t query_port_state
	check netdev_up_port_active t_netdev_up
	check link_add_bad_netdev_rejected t_link_add_bad_netdev
	check mtu_9000_at_creation t_mtu_9000_at_creation
	check second_device t_second_device
	check second_device_gid t_second_device_gid
	check duplicate_name_rejected t_duplicate_name
	[ "$DRIVER" != kiwi ] || check netdev_in_use_eexist t_netdev_in_use
	check rdma_link_delete t_link_delete
	check netdev_delete_removes_device t_netdev_delete
	check readd_after_delete t_readd_after_delete
	check rmmod_with_devices t_rmmod_with_devices
	check reload t_reload
	check link_delete_with_open_context t_link_delete_open
	check rmmod_with_open_context t_rmmod_open
fi

if want cleanup; then
	phase cleanup
	mod_loaded || tmo modprobe "$MOD"
	have_dev $DEV0 || link_add $DEV0 $ND0 >/dev/null
	embed verbs_cleanup run_verbs verbs_cleanup
	check rmmod_after_killed_process t_rmmod_after_killed_process
fi

if want limits; then
	phase limits
	if check reload_small_limits t_reload_small_limits; then
		check devinfo_reports_limits t_devinfo_limits
		embed verbs_limits run_verbs verbs_limits
		check rmmod_after_limits t_rmmod_final
	fi
fi

finish
