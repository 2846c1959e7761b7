#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/errors.sh -- kiwi error-path tests, run inside the test
# guest:
#
#	selftests/vm/run --module kmod/kiwi.ko -- selftests/guest/errors.sh
#
# Two network namespaces joined by a veth pair, kiwi0 (10.91.0.1, netns
# kwa) and kiwi1 (10.91.0.2, netns kwb).  Each case runs the iwerr test
# peer (selftests/errors/iwerr.c) as responder in kwb and requester in
# kwa over rdma_cm; the programs check completion statuses, async events,
# QP state, flushing, DISCONNECTED and placement, and this script checks
# their exit status and the kernel log: the TERMINATE kiwi logs on both
# sides (kmod/rx.c: "terminating stream" on the side that detected the
# error, "peer TERMINATE" on the other) with the layer/type/code RFC 5040
# and RFC 5041 prescribe, and no kernel trouble.
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
T=0 NFAIL=0
TMPD=$(mktemp -d /tmp/kiwi-err.XXXXXX)
START=$SECONDS

ok()    { T=$((T + 1)); echo "ok $T $1"; }
notok() { T=$((T + 1)); NFAIL=$((NFAIL + 1)); echo "not ok $T $1"; }
diag()  { sed -e 's/^/# /' "$@"; }
A() { ip netns exec kwa "$@"; }
B() { ip netns exec kwb "$@"; }

KTROUBLE='(^|[^A-Za-z0-9_])BUG([^A-Za-z0-9_]|$)|WARNING:|Oops|general protection fault|Call Trace:|UBSAN|KASAN|KFENCE|Redzone|Poison overwritten|Object padding|list_(add|del) corruption|refcount_t:|soft lockup|blocked for more than|unreferenced object'

setup() {
	[ -x "$IWERR" ] || { echo "$IWERR missing (make)"; return 1; }
	modprobe kiwi || return 1
	ip netns add kwa && ip netns add kwb &&
	ip link add kv0 type veth peer name kv1 &&
	ip link set kv0 netns kwa && ip link set kv1 netns kwb &&
	A ip addr add 10.91.0.1/24 dev kv0 && B ip addr add $SRV/24 dev kv1 &&
	A ip link set kv0 up && B ip link set kv1 up &&
	A ip link set lo up && B ip link set lo up &&
	A rdma link add kiwi0 type kiwi netdev kv0 &&
	B rdma link add kiwi1 type kiwi netdev kv1
}

# wait_port PORT: until something in kwb listens on TCP PORT (max ~20 s).
wait_port() {
	local i
	for i in $(seq 1 80); do
		B ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.25
	done
	return 1
}

# qpn FILE: the QP number an iwerr run reported.
qpn() { sed -n 's/.*qp_num \([0-9]*\) on .*/\1/p' "$1" | head -1; }

# check_term EXPECT: the TERMINATE both sides logged.  EXPECT is
# "OP LAYER TYPE CODE" of the offending message, or "-" for none.
check_term() {
	local exp=$1 sq cq op l t c
	sq=$(qpn "$TMPD/srv") cq=$(qpn "$TMPD/cli")
	if [ "$exp" = - ]; then
		if grep -q 'TERMINATE\|terminating stream' "$TMPD/dmesg"; then
			echo "unexpected TERMINATE after a killed peer"
			return 1
		fi
		return 0
	fi
	read -r op l t c <<<"$exp"
	if ! grep -qE "kiwi: QP $sq: terminating stream: op $op layer $l type $t code $c " "$TMPD/dmesg"; then
		echo "no 'QP $sq: terminating stream: op $op layer $l type $t code $c' (responder)"
		return 1
	fi
	if ! grep -qE "kiwi: QP $cq: peer TERMINATE layer $l type $t code $c\$" "$TMPD/dmesg"; then
		echo "no 'QP $cq: peer TERMINATE layer $l type $t code $c' (requester)"
		return 1
	fi
}

# run_case NAME EXPECT SRV_RC CLI_RC TITLE: one responder/requester pair.
run_case() {
	local name=$1 exp=$2 want_s=$3 want_c=$4 title=$5 port why=
	local mark t0 spid src crc
	if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then
		return
	fi
	PORT=$((PORT + 1)) port=$PORT
	mark=$(dmesg | wc -l)
	t0=$EPOCHREALTIME
	B timeout 300 "$IWERR" -s -c "$name" -a $SRV -p $port -t "$SECS" \
		>"$TMPD/srv" 2>&1 &
	spid=$!
	if ! wait_port $port; then
		why="responder did not listen"
	fi
	A timeout 300 "$IWERR" -c "$name" -a $SRV -p $port -t "$SECS" \
		>"$TMPD/cli" 2>&1
	crc=$?
	wait $spid
	src=$?
	dmesg | tail -n +$((mark + 1)) >"$TMPD/dmesg"

	[ "$src" -eq "$want_s" ] || why="${why:+$why; }responder exit $src (want $want_s)"
	[ "$crc" -eq "$want_c" ] || why="${why:+$why; }requester exit $crc (want $want_c)"
	local term
	term=$(check_term "$exp") || why="${why:+$why; }$term"
	if grep -qE -- "$KTROUBLE" "$TMPD/dmesg"; then
		why="${why:+$why; }kernel trouble in dmesg"
	fi
	if [ -z "$why" ]; then
		ok "$name: $title"
	else
		notok "$name: $title"
		echo "# FAILED: $why"
	fi
	grep -h ' summary: ' "$TMPD/cli" "$TMPD/srv"
	grep -E 'kiwi: QP [0-9]+: (terminating|peer TERMINATE)' "$TMPD/dmesg" |
		sed -e 's/^\[[ 0-9.]*\] //' -e 's/^/# dmesg: /'
	awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$name" \
		'BEGIN { printf "# %s: %.1f s\n", n, b - a }'
	if [ -n "$why" ] || [ -n "${KIWI_ERR_VERBOSE:-}" ]; then
		echo "# ---- requester output"
		grep -v ' summary: ' "$TMPD/cli" | sed -e 's/^\([^#]\)/# \1/'
		echo "# ---- responder output"
		grep -v ' summary: ' "$TMPD/srv" | sed -e 's/^\([^#]\)/# \1/'
		echo "# ---- dmesg"
		diag "$TMPD/dmesg" | tail -40
	fi
}

echo "TAP version 13"
if ! setup >"$TMPD/setup" 2>&1; then
	notok "setup: two namespaces, veth, kiwi0/kiwi1"
	diag "$TMPD/setup"
	echo "1..$T"
	exit 1
fi
ok "setup: two namespaces, veth, kiwi0/kiwi1"

run_case bad_stag "0 1 1 0x00" 0 0 \
	"RDMA WRITE to an unregistered STag: TERMINATE DDP tagged/invalid STag, both QPs to ERR, flushed, disconnected"
run_case oob_write "0 1 1 0x01" 0 0 \
	"RDMA WRITE past the end of the MR: TERMINATE DDP tagged/base or bounds, nothing placed, QPs to ERR, disconnected"
run_case read_noaccess "1 0 1 0x02" 0 0 \
	"RDMA READ of an MR without REMOTE_READ: REM_ACCESS_ERR, TERMINATE RDMAP protection/access rights, QPs to ERR"
run_case send_norecv "3 1 2 0x02" 0 0 \
	"SEND with no receive posted: TERMINATE DDP untagged/no buffer, both QPs to ERR, flushed, disconnected"
run_case kill_responder - 137 0 \
	"responder SIGKILLed mid-stream: requester sees flushes, QP ERR, DISCONNECTED"
run_case kill_requester - 0 137 \
	"requester SIGKILLed mid-stream: responder sees receives flushed, QP ERR, DISCONNECTED"

echo "# errors.sh: $((SECONDS - START)) s"
echo "1..$T"
rm -rf "$TMPD"
[ $NFAIL -eq 0 ]
