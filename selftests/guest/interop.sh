#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/interop.sh -- kiwi against Linux's siw, run inside the
# test guest with both modules available:
#
#	scripts/build-siw.sh
#	selftests/vm/run.sh --module kmod/kiwi.ko --module build/siw/siw.ko -- \
#		selftests/guest/interop.sh
#
# Two namespaces, two veth pairs:
#   iv0 (kwa, 10.93.0.1) kiwi0  <->  iv1 (kwb, 10.93.0.2) siw0
#   jv0 (kwa, 10.94.0.1) siw1   <->  jv1 (kwb, 10.94.0.2) kiwi1
# so the client (kwa) is kiwi talking to a siw server on 10.93.0.2, and siw
# talking to a kiwi server on 10.94.0.2.  Each direction runs rping -V and
# ib_write_bw / ib_read_bw / ib_send_bw, once with kiwi requesting MPA CRC
# (module parameter crc=1) and once without (crc=0).  siw never requests
# CRC itself but honours a peer's request (RFC 5044: CRC is used if either
# side asks), so this covers both wire variants.  Last, kiwi is reloaded
# with its other CRC32c code (crc_impl=crypto) for one more round of
# rping -V and ib_read_bw each way.  Before that, qperf (Debian's qperf,
# -cm1 for rdma_cm) each way, with CRC: rc_lat (SEND ping-pong) with
# qperf's 1-byte messages and with 64 KiB ones, 2 s each; each only
# reports a figure, as qperf checks no data (the rping and perftest runs
# above check it).  rc_bi_bw (SEND both ways at once) is left out: it
# has no flow control (src/rdma.c rd_bi_bw(): each side posts 1024
# receives and sends whenever a send completes, and stops reposting
# receives when its own timer ends), which InfiniBand's RNR retry hides
# and iWARP cannot: a SEND that finds no receive posted is a DDP error
# (RFC 5041 section 7.2, untagged, no buffer), so the QP terminates and
# qperf reports "rc_bi_bw failed: WR flush failure".  Seen in 3 of 16
# runs with siw as the overrun receiver (its TERMINATE in kiwi's log)
# and in CI with kiwi as the overrun one.  qperf's other RC tests cannot
# run with siw at either end:
#   - rc_bw, rc_rdma_read_bw, rc_rdma_read_lat, rc_rdma_write_poll_lat
#     open QPs with an empty queue (qperf src/rdma.c: the sender's
#     rd_open(&dev, IBV_QPT_RC, NCQE, 0), no receive queue; the passive
#     side's rd_server_def() and rd_server_nop() rd_open(..., 0, n), no
#     send queue).  siw refuses both: the kernel a QP without a send
#     queue (siw_verbs.c siw_create_qp(): "QP must have send queue",
#     -EINVAL), its provider one without a receive queue (rdma-core
#     providers/siw/siw.c siw_create_qp() mmap()s the receive queue even
#     when it has 0 entries, which fails with EINVAL).  qperf says
#     "failed to create QP: Invalid argument" on the siw side, whichever
#     side that is (seen in the test guest for rc_bw, rc_rdma_read_bw
#     and rc_rdma_write_poll_lat, kiwi->siw and siw->kiwi each).
#   - rc_rdma_write_bw and rc_rdma_write_lat post RDMA WRITE with
#     immediate data (run_client_rc_rdma_write_bw() calls
#     rd_client_rdma_bw(IBV_QPT_RC, IBV_WR_RDMA_WRITE_WITH_IMM);
#     rd_pp_lat_loop() posts it for IO_RDMA), which siw does not
#     implement: its provider refuses the work request (push_send_wqe():
#     "libsiw: opcode %d unsupported", -EINVAL) and its kernel side knows
#     no RFC 7306 opcode; kiwi sends it only with rfc7306_imm=1.
# apps.sh runs those between two kiwi devices.  Then a TERMINATE from
# siw (see term_part()), read as siw meant it.  The qperf server's
# per-test child dies at the end of each test, after the results went to
# the client ("qperf[N]: segfault at 0 ... in libibverbs" in dmesg, at
# ibv_destroy_qp, called with a NULL QP), whether siw0 or kiwi1 serves
# it, and in apps.sh between two kiwi devices too; the client and the
# results are not affected.  Then ucmatose (librdmacm's connection
# test) in rounds, each way (see ucma_part()).  TAP 13, plan line last.
#
# Environment: KIWI_RPING_COUNT (default 200), KIWI_PERF_ITERS (200),
# KIWI_DP_MTU (1500), KIWI_INTEROP_ONLY (parts to run alone,
# comma-separated: crc, nocrc, qperf, ext, term, ucma, crypto; default
# all), KIWI_UCMA_ROUNDS (4).
set -u

# perftest works out its clock rate after the run, and fails that when
# preempted too often meanwhile.  A kiwi client finishes while a slower
# siw server is still taking in the data TCP holds for it, in softirq
# context on the CPU that sent it; unpinned, the client shared that CPU in
# about one run of five.  kiwi sends from a CPU other than the client's
# (kiwi_tx_kick()), so pinned, it never does.
# shellcheck disable=SC2034 # read by lib.sh's perf_run
PERF_PIN=1
COUNT=${KIWI_RPING_COUNT:-200}
ITERS=${KIWI_PERF_ITERS:-200}
MTU=${KIWI_DP_MTU:-1500}
. "$(dirname "$(readlink -f "$0")")/lib.sh"

setup() {
	need_tools qperf ucmatose || return 1
	modprobe kiwi && modprobe siw && netns_up &&
	veth_pair iv0 iv1 10.93.0 "$MTU" && veth_pair jv0 jv1 10.94.0 "$MTU" &&
	A rdma link add kiwi0 type kiwi netdev iv0 &&
	B rdma link add siw0 type siw netdev iv1 &&
	A rdma link add siw1 type siw netdev jv0 &&
	B rdma link add kiwi1 type kiwi netdev jv1
}

# direction LABEL SRVDEV CLIDEV SRVADDR
direction() {
	local label=$1 sdev=$2 cdev=$3 addr=$4 t

	rping_test "$label" "$addr" 64 "$COUNT"
	rping_test "$label" "$addr" 65535 "$((COUNT / 4))"
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		perf_test "$label" "$sdev" "$cdev" "$addr" "$ITERS" $t -s 65536
	done
}

# part NAME: run part NAME (KIWI_INTEROP_ONLY unset, or naming it).
part() {
	[ -z "${KIWI_INTEROP_ONLY:-}" ] || [[ ",$KIWI_INTEROP_ONLY," == *",$1,"* ]]
}

# qperf_direction LABEL SRVADDR: the qperf client in kwa against the
# qperf server in kwb at SRVADDR; rdma_cm picks the devices from the
# addresses.  Passes when qperf exits 0 with a figure above 0 and no
# error; qperf checks no data, so the test names say "no data check".
# On a failure, the kiwi connection events recorded meanwhile go with
# the diagnostics (a refused connect says which side and why).
QPERF_TESTS="1 65536"
qperf_direction() {
	local label=$1 addr=$2 m rc v
	for m in $QPERF_TESTS; do
		rc=0
		echo >$TR/trace
		A timeout 60 qperf -cm1 "$addr" -t 2 -m "$m" rc_lat >"$TMPD/qperf.c" 2>&1 || rc=1
		v=$(awk '/=/ { print $3, $4; exit }' "$TMPD/qperf.c")
		# A figure, above 0, and no completion in error (qperf
		# counts those and goes on, showing loc_send_errors and the
		# like).
		[ -n "$v" ] && awk -v f="${v%% *}" 'BEGIN { exit !(f > 0) }' || rc=1
		! grep -qi 'err\|fail' "$TMPD/qperf.c" || rc=1
		if [ $rc -eq 0 ]; then
			ok "$label: qperf -cm1 -m $m rc_lat, no data check (${v})"
		else
			notok "$label: qperf -cm1 -m $m rc_lat, no data check"
			tail -n 12 "$TMPD/qperf.c" "$TMPD/qperf.s" | diag
			grep -h ' kiwi_cm' $TR/trace 2>/dev/null | tail -n 30 | diag
		fi
	done
}

qperf_part() {
	local sp
	echo 1 >/sys/module/kiwi/parameters/crc
	trace_on
	B timeout 300 qperf >"$TMPD/qperf.s" 2>&1 &
	sp=$!
	if wait_port 10.93.0.2 19765; then
		qperf_direction "kiwi->siw crc" 10.93.0.2
		qperf_direction "siw->kiwi crc" 10.94.0.2
	else
		notok "qperf server listening in kwb (port 19765)"
		diag "$TMPD/qperf.s"
	fi
	kill_tree $sp
	wait $sp 2>/dev/null
	trace_off
}

# Extensions on other QPs of the same device: kiwi0 also talks to kiwi2,
# a kiwi device on a macvlan of siw0's veth end (kwb, 10.93.0.3).  With
# rfc7306_imm and rfc7306_atomics on (read at QP creation: kiwi0's QPs
# to siw have them too), atomic_conn and imm_conn run kiwi0<->kiwi2 over
# and over while rping -V (4 KiB, then 64 KiB) runs kiwi0<->siw0: siw must see
# nothing it cannot speak, and every pair verifies its data.
EXT=10.93.0.3
ext_loop() {
	local bin=$GUEST_DIR/../../build/selftests n=0 t port spid rc
	while [ ! -e "$TMPD/ext.stop" ]; do
		for t in atomic_conn:7179 imm_conn:7177; do
			port=${t#*:}
			t=${t%:*}
			B timeout 120 "$bin/$t" -s $EXT "$port" >"$TMPD/ext.s" 2>&1 &
			spid=$!
			wait_port $EXT "$port"
			A timeout 100 "$bin/$t" -c $EXT "$port" >"$TMPD/ext.c" 2>&1
			rc=$?
			[ $rc -eq 0 ] || kill_tree $spid
			wait $spid || rc=1
			if [ $rc -ne 0 ]; then
				echo "$t failed after $n good runs" >"$TMPD/ext.result"
				cat "$TMPD/ext.c" "$TMPD/ext.s" >>"$TMPD/ext.result"
				return
			fi
			n=$((n + 1))
		done
	done
	echo "ok $n" >"$TMPD/ext.result"
}

ext_part() {
	local P=/sys/module/kiwi/parameters epid r
	if ! B ip link add mv1 link iv1 type macvlan mode bridge ||
	   ! B ip addr add $EXT/24 dev mv1 || ! B ip link set mv1 up ||
	   ! B rdma link add kiwi2 type kiwi netdev mv1; then
		notok "extensions: kiwi2 on a macvlan of iv1"
		return
	fi
	echo 1 >$P/crc
	echo Y >$P/rfc7306_imm
	echo Y >$P/rfc7306_atomics
	rm -f "$TMPD/ext.stop" "$TMPD/ext.result"
	ext_loop &
	epid=$!
	# rping, not perftest: perftest's clock calibration fails on a guest
	# this busy (every try, in one run), and rping checks the data.
	rping_test "kiwi->siw, extensions on kiwi0's other QPs" 10.93.0.2 4096 "$COUNT"
	rping_test "kiwi->siw, extensions on kiwi0's other QPs" 10.93.0.2 65535 "$((COUNT / 4))"
	touch "$TMPD/ext.stop"
	wait $epid
	r=$(head -n 1 "$TMPD/ext.result" 2>/dev/null)
	if [[ $r == "ok "* ]] && [ "${r#ok }" -ge 2 ]; then
		ok "extensions: atomic_conn and imm_conn kiwi0<->kiwi2 meanwhile, ${r#ok } runs, all passed"
	else
		notok "extensions: atomic_conn and imm_conn kiwi0<->kiwi2 meanwhile (${r:-no result})"
		diag "$TMPD/ext.result" 2>/dev/null
	fi
	echo N >$P/rfc7306_imm
	echo N >$P/rfc7306_atomics
	B rdma link del kiwi2
	B ip link del mv1
}

# A TERMINATE from siw, read right: kiwi0 SENDs to a siw0 QP with no
# receive posted (iwerr's send_norecv; the responder on siw0), siw0
# terminates with DDP untagged "no buffer" (1/2/0x02), its control word
# in siw's bit order (see kiwi_term_parse()).  The requester (kiwi0)
# must pass its own checks -- the connection worked first, the SEND
# failed, what was chained after it was flushed -- and kiwi must log
# the reason siw meant.  The siw side's own checks are iwerr's for kiwi
# and are not judged here.
term_part() {
	local iwerr=$GUEST_DIR/../../build/selftests/iwerr spid rc mark
	local want="peer TERMINATE layer 1 type 2 code 0x02 \(fields in Linux siw's bit order\)"
	mark=$(dmesg | wc -l)
	B timeout 120 "$iwerr" -s -c send_norecv -a 10.93.0.2 -p 7190 -t 20 \
		>"$TMPD/term.s" 2>&1 &
	spid=$!
	wait_port 10.93.0.2 7190
	A timeout 120 "$iwerr" -c send_norecv -a 10.93.0.2 -p 7190 -t 20 \
		>"$TMPD/term.c" 2>&1
	rc=$?
	wait $spid
	if [ $rc -eq 0 ] && dmesg | tail -n +$((mark + 1)) | grep -qE "$want"; then
		ok "kiwi->siw: SEND with no receive posted at siw: siw's TERMINATE read as DDP untagged, no buffer ($(grep -h 'summary:' "$TMPD/term.c" | sed 's/^# //'))"
	else
		notok "kiwi->siw: SEND with no receive posted at siw: siw's TERMINATE read as DDP untagged, no buffer (requester exit $rc)"
		diag "$TMPD/term.c"
		dmesg | tail -n +$((mark + 1)) | grep 'kiwi' | diag
	fi
}

# ucmatose (librdmacm's connection test) over and over, each direction:
# one connection, then 20 at once, each round connecting, exchanging
# ucmatose's 10 SENDs a side and disconnecting.  It found a kernel BUG
# on a siw host (iwcm.c cm_close_handler(): a CLOSE for a cm_id still
# waiting for ESTABLISHED) whenever kiwi, as the initiator, sent its
# ready-to-receive message before siw's accept had installed the
# callback that reads it (kiwi now repeats the RTR while siw is
# silent: kmod/cm.c kiwi_ep_nudge()).  A round must end within its
# timeout with both programs exiting 0, and the kernel log must stay
# clean; after a kernel BUG the rounds stop (the iw_cm's work is dead,
# so later rounds would only hang).  KIWI_UCMA_ROUNDS (default 4)
# rounds of each size.
UCMA_ROUNDS=${KIWI_UCMA_ROUNDS:-4}
ucma_round() {
	local addr=$1 n=$2 spid rc src
	B timeout 60 ucmatose -b "$addr" -p 7471 -c "$n" >"$TMPD/ucma.s" 2>&1 &
	spid=$!
	if ! wait_port "$addr" 7471; then
		kill_tree $spid
		wait $spid
		echo "server not listening" >>"$TMPD/ucma.s"
		return 1
	fi
	A timeout 45 ucmatose -s "$addr" -p 7471 -c "$n" >"$TMPD/ucma.c" 2>&1
	rc=$?
	[ $rc -eq 0 ] || kill_tree $spid
	wait $spid
	src=$?
	[ $rc -eq 0 ] && [ $src -eq 0 ]
}

# ucma_direction LABEL SRVADDR
ucma_direction() {
	local label=$1 addr=$2 n r mark t0 bad
	for n in 1 20; do
		mark=$(dmesg | wc -l)
		t0=$SECONDS
		bad=""
		for r in $(seq 1 "$UCMA_ROUNDS"); do
			ucma_round "$addr" "$n" || bad="round $r: ucmatose failed"
			dmesg | tail -n +$((mark + 1)) |
				grep -qE 'kernel BUG|BUG:|WARNING:|Oops' &&
				bad="round $r: kernel trouble"
			[ -z "$bad" ] || break
		done
		if [ -z "$bad" ]; then
			ok "$label: ucmatose -c $n, $UCMA_ROUNDS rounds ($((SECONDS - t0)) s)"
		else
			notok "$label: ucmatose -c $n, $UCMA_ROUNDS rounds ($bad)"
			tail -n 6 "$TMPD/ucma.c" "$TMPD/ucma.s" | diag
			dmesg | tail -n +$((mark + 1)) | grep -v kiwi-initramfs |
				tail -n 30 | diag
			case $bad in *kernel*) return 1 ;; esac
		fi
	done
}

ucma_part() {
	echo 1 >/sys/module/kiwi/parameters/crc
	ucma_direction "kiwi->siw" 10.93.0.2 &&
		ucma_direction "siw->kiwi" 10.94.0.2
}

tap_setup "kiwi and siw devices on two veth pairs" \
	"kiwi0<->siw0 and siw1<->kiwi1 on veth pairs (MTU $MTU)"

for crc in 1 0; do
	c=crc; [ "$crc" = 1 ] || c=nocrc
	part $c || continue
	echo "$crc" >/sys/module/kiwi/parameters/crc
	direction "kiwi->siw $c" siw0 kiwi0 10.93.0.2
	direction "siw->kiwi $c" kiwi1 siw1 10.94.0.2
	# Both wire variants really ran: what kiwi's QPs settled.
	mpa_crc_test "kiwi->siw $c" 10.93.0.2 kiwi0 "$crc"
	mpa_crc_test "siw->kiwi $c" 10.94.0.2 kiwi1 "$crc"
done
part qperf && qperf_part
part ext && ext_part
part term && term_part
part ucma && ucma_part

# The other CRC32c code: under emulation crc_impl=auto picks the table
# code (copy and CRC in one pass), so the crypto API's (copy, then CRC)
# is checked here, with siw verifying what kiwi sends and kiwi what siw
# sends.
reload_crypto() {
	A rdma link del kiwi0 && B rdma link del kiwi1 && rmmod kiwi &&
	modprobe kiwi crc_impl=crypto crc=1 &&
	grep -qx crypto /sys/module/kiwi/parameters/crc_impl &&
	A rdma link add kiwi0 type kiwi netdev iv0 &&
	B rdma link add kiwi1 type kiwi netdev jv1
}
if ! part crypto; then
	:
elif reload_crypto; then
	ok "kiwi reloaded with crc_impl=crypto"
	rping_test "kiwi->siw crypto" 10.93.0.2 65535 "$((COUNT / 4))"
	perf_test "kiwi->siw crypto" siw0 kiwi0 10.93.0.2 "$ITERS" \
		ib_read_bw -s 65536
	rping_test "siw->kiwi crypto" 10.94.0.2 65535 "$((COUNT / 4))"
	perf_test "siw->kiwi crypto" kiwi1 siw1 10.94.0.2 "$ITERS" \
		ib_read_bw -s 65536
else
	notok "kiwi reloaded with crc_impl=crypto"
fi
tap_end
