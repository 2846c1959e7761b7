#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/apps.sh -- user-space middleware nobody here wrote, over
# kiwi0/kiwi1 (veth pair between the namespaces kwa and kwb), each with
# its data checked.  Run inside the test guest by selftests/check.sh:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/apps.sh
#
# Cases:
#   rsockets_riostream  librdmacm's riostream (rsockets, riomap/riowrite),
#                 100 x 64 KiB
#   rsockets_rstream    librdmacm's rstream with blocking calls and its
#                 own data verification (-T b -T v), 100 x 64 KiB
#   rsockets_pingpong   rstream nonblocking (-T n), 2 iterations of 1000
#                 64-byte transfers each way, verified
#   rsockets_preload    an ordinary TCP program (python3's socket module)
#                 under LD_PRELOAD=librspreload.so: 8 MiB of random data
#                 sent, SHA-256 compared on both ends
#   qperf_*       qperf -cm1 (rdma_cm): rc_bw, rc_lat, rc_rdma_read_bw,
#                 and with rfc7306_imm=1 rc_rdma_write_bw and
#                 rc_rdma_write_lat (WRITE with immediate), 2 s each, a
#                 figure above 0 and no error reported (qperf checks no
#                 data)
#   libfabric_msg fi_pingpong over libfabric's verbs provider, MSG
#                 endpoints, every message size, with its data integrity
#                 checks (-c)
#   libfabric_rdm the same over RDM endpoints (verbs;ofi_rxm)
#   no_leaks      then devices deleted and kiwi unloaded: nothing kiwi
#                 allocated is left (kiwi_leak_check)
#
# Not here, and why, in Documentation/kiwi.rst ("Applications"):
# rstream's default mode (too slow under TCG), iperf3 under rsockets.
#
# Output is TAP 13 with the plan line last; exit status 0 only if all
# pass.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
SRV=10.91.0.2
START=$SECONDS
. "$ROOT/selftests/guest/lib.sh"

RSPRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so

setup() {
	need_tools riostream rstream qperf fi_pingpong python3 || return 1
	[ -f $RSPRELOAD ] || { echo "$RSPRELOAD missing (make deps)"; return 1; }
	modprobe kiwi && kiwi_pair_up && trace_on
}

# pair NAME PORT SERVER_CMD -- CLIENT_CMD: the server in kwb, the client
# in kwa once the server listens on PORT (TCP, as rdma_cm's listens show);
# both must exit 0 within 120 s.  Outputs in $TMPD/NAME.{s,c}.
pair() {
	local name=$1 port=$2 sp c s=0 scmd=()
	shift 2
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	B timeout 120 "${scmd[@]}" >"$TMPD/$name.s" 2>&1 &
	sp=$!
	wait_port $SRV "$port"
	A timeout 120 "$@" >"$TMPD/$name.c" 2>&1
	c=$?
	wait $sp || s=$?
	[ $c -eq 0 ] && [ $s -eq 0 ] && return 0
	echo "client exit $c, server exit $s" >>"$TMPD/$name.c"
	return 1
}

# result NAME RC DESCRIPTION: the TAP line; on failure both outputs and
# kiwi's last connection events (kiwi_cm, QP states, TERMINATEs).
result() {
	if [ "$2" -eq 0 ]; then
		ok "$1: $3"
	else
		notok "$1: $3"
		tail -n 15 "$TMPD/$1.c" "$TMPD/$1.s" 2>/dev/null | diag
		grep -v '^#' $TR/trace 2>/dev/null | tail -n 30 | diag
	fi
}

# rs_case NAME PORT TOOL "ARGS" DESCRIPTION: a librdmacm rsockets
# example, server (-b) and client (-s) with the same ARGS; it must
# print its result line ("custom ...").
rs_case() {
	local name=$1 port=$2 tool=$3 args=$4 desc=$5 rc=0 line
	# shellcheck disable=SC2086 # ARGS are words
	pair "$name" "$port" "$tool" -b $SRV -p "$port" $args -- \
		"$tool" -s $SRV -p "$port" $args || rc=1
	line=$(grep -m1 '^custom' "$TMPD/$name.c")
	[ -n "$line" ] || rc=1
	result "$name" $rc "$desc (${line:-no result line})"
}

case_rsockets() {
	rs_case rsockets_riostream 7461 riostream "-S 65536 -C 100" \
		"riostream 100 x 64 KiB"
	rs_case rsockets_rstream 7462 rstream "-S 65536 -C 100 -T b -T v" \
		"rstream blocking, verified, 100 x 64 KiB"
	rs_case rsockets_pingpong 7464 rstream "-S 64 -I 2 -T n -T v" \
		"rstream nonblocking ping-pong, verified, 2 x 1000 x 64 B each way"
}

case_rsockets_preload() {
	local rc=0 want got
	head -c $((8 << 20)) /dev/urandom >"$TMPD/data"
	want=$(sha256sum <"$TMPD/data" | cut -d' ' -f1)
	pair rsockets_preload 7463 env LD_PRELOAD=$RSPRELOAD python3 -c '
import hashlib, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7463))
s.listen(1)
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(65536)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())
' $SRV -- env LD_PRELOAD=$RSPRELOAD python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 7463))
s.sendall(open(sys.argv[2], "rb").read())
s.close()
' $SRV "$TMPD/data" || rc=1
	got=$(cut -d' ' -f2 "$TMPD/rsockets_preload.s" 2>/dev/null | tail -n1)
	[ "$got" = "$want" ] || { rc=1; echo "sha256 sent $want, received ${got:-none}" >>"$TMPD/rsockets_preload.c"; }
	result rsockets_preload $rc "python3 sockets under librspreload.so: 8 MiB, SHA-256 equal on both ends"
}

case_qperf() {
	local t rc v sp
	# qperf's RDMA WRITE tests post WRITE with immediate (RFC 7306),
	# which both ends here speak: let the QPs send it.
	echo 1 >/sys/module/kiwi/parameters/rfc7306_imm
	B timeout 200 qperf >"$TMPD/qperf.s" 2>&1 &
	sp=$!
	wait_port $SRV 19765
	for t in rc_bw rc_lat rc_rdma_read_bw rc_rdma_write_bw rc_rdma_write_lat; do
		rc=0
		A timeout 60 qperf -cm1 $SRV -t 2 $t >"$TMPD/qperf_$t.c" 2>&1 || rc=1
		# A figure above 0 and no completion in error (lib.sh).
		v=$(qperf_verdict "$TMPD/qperf_$t.c") || rc=1
		result "qperf_$t" $rc "qperf -cm1 $t ($v)"
	done
	kill_tree $sp
	wait $sp 2>/dev/null
	echo 0 >/sys/module/kiwi/parameters/rfc7306_imm
}

case_libfabric() {
	local rc=0 n
	pair libfabric_msg 47592 fi_pingpong -p verbs -e msg -d kiwi1 -c -- \
		fi_pingpong -p verbs -e msg -d kiwi0 -c $SRV || rc=1
	n=$(grep -cE '^[0-9]+[kmg]? +[0-9]+ +=[0-9]+' "$TMPD/libfabric_msg.c")
	[ "$n" -gt 0 ] || rc=1
	result libfabric_msg $rc "fi_pingpong -p verbs -e msg -c: $n message sizes, data integrity checked"

	# RDM endpoints through rxm: its CQ wants more than 65,536 entries (the
	# default universe of 256 peers), beyond kiwi's old max_cqe.
	rc=0
	pair libfabric_rdm 47593 fi_pingpong -p "verbs;ofi_rxm" -e rdm -B 47593 -d kiwi1 -c -- \
		fi_pingpong -p "verbs;ofi_rxm" -e rdm -P 47593 -d kiwi0 -c $SRV || rc=1
	n=$(grep -cE '^[0-9]+[kmg]? +[0-9]+ +=[0-9]+' "$TMPD/libfabric_rdm.c")
	[ "$n" -gt 0 ] || rc=1
	result libfabric_rdm $rc "fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c: $n message sizes, data integrity checked"
}

tap_setup "two namespaces, veth, kiwi0/kiwi1" "two namespaces, veth, kiwi0/kiwi1"
case_rsockets
case_rsockets_preload
case_qperf
case_libfabric
KTEXT=$(kiwi_text)
if { A rdma link del kiwi0 && B rdma link del kiwi1 && modprobe -r kiwi; } \
	>"$TMPD/u" 2>&1; then
	ok "teardown: kiwi0, kiwi1 deleted, kiwi unloaded"
	no_leaks_verdict "$KTEXT"
else
	notok "teardown: kiwi0, kiwi1 deleted, kiwi unloaded"
	diag "$TMPD/u"
fi
echo "# apps.sh: $((SECONDS - START)) s"
tap_end
