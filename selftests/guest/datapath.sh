#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/datapath.sh -- kiwi data-path tests, run inside the test
# guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/datapath.sh
#
# Two network namespaces joined by a veth pair, kiwi0 on one end and kiwi1
# on the other; real rdma-core tools move data between them:
#   - rping -V (payload verified on every iteration) at several sizes,
#   - perftest bandwidth and latency tools over rdma_cm (-R),
#   - the mapped rings with extended verbs (ibv_wr_*, cq_ex) and a send
#     WQE garbled in the mapped ring (build/selftests/ring_conn),
#   - RFC 7306 immediate data: WRITE and SEND with immediate data, their
#     solicited variants, one with no receive posted (build/selftests/imm_conn),
#   - RFC 7306 atomics: fetch-and-add, compare-and-swap (hit and miss), two
#     QPs hammering one counter, refusals with their TERMINATEs
#     (build/selftests/atomic_conn), perftest ib_atomic_bw/lat -R,
#   - memory windows: type 1 and 2, zero-based, local and remote
#     invalidation, refused binds, with their TERMINATEs
#     (build/selftests/mw_conn),
#   - error paths: a connection to a port nobody listens on is refused,
#   - a connect whose rdma_cm port a plain TCP socket holds (cmport.py),
#   - MPA markers (RFC 5044) asked for by either end, CRC on and off
#     (all sizes and combinations: KIWI_DP_ONLY=markers),
#   - the negotiated CRC and large-FPDU mode in "rdma res show qp -dd",
#   - per-QP counters: "rdma statistic qp" bind, unbind and auto mode,
#   - the latency histograms (rx_msg_us_*, tx_wqe_us_*) count the
#     messages of an ib_send_lat run,
#   - hardware iWARP defaults played by kiwi: each RFC 6581 RTR kind,
#     Chelsio's (READ RTR, CRC, IRD/ORD 32), irdma's (CRC, immediate),
#   - pyverbs tests.test_rdmacm on kiwi2, a device on a dummy netdev in the
#     root namespace (the suite runs both ends on one address).
# Output is TAP 13 with the plan line last; exit status 0 only if all pass.
#
# Environment: KIWI_RPING_COUNT (default 1000), KIWI_PERF_ITERS (500),
# KIWI_DP_MTU (1500), KIWI_DP_ONLY (tests to run alone, comma-separated:
# imm, atomic, mw, ring, counters, attrs, hw, markers, markers_smoke,
# rping, perf, lat, lat_hist).
set -u

COUNT=${KIWI_RPING_COUNT:-1000}
ITERS=${KIWI_PERF_ITERS:-500}
MTU=${KIWI_DP_MTU:-1500}
SRV=10.91.0.2
. "$(dirname "$(readlink -f "$0")")/lib.sh"

setup() {
	modprobe kiwi && netns_up && veth_pair kv0 kv1 10.91.0 "$MTU" &&
	A ip -6 addr add fd91::1/64 dev kv0 nodad &&
	B ip -6 addr add fd91::2/64 dev kv1 nodad &&
	A rdma link add kiwi0 type kiwi netdev kv0 &&
	B rdma link add kiwi1 type kiwi netdev kv1
}

# A connect to a port without a listener must fail, not hang or crash:
# refused quickly, by a REJECTED event (lib.sh refused_verdict).
refused_test() {
	local t0=$SECONDS rc why line
	perf_trace_start
	A timeout 60 rping -c -a $SRV -p 7999 -C 1 >"$TMPD/cli" 2>&1
	rc=$?
	if why=$(refused_verdict $rc $((SECONDS - t0)) "$TMPD/cli"); then
		ok "connect to a closed port is refused"
	else
		notok "connect to a closed port is refused ($why)"
		diag "$TMPD/cli"
	fi
	# The trace names the address the refused connect was for (the
	# socket has no peer any more once TCP's reset is in).
	line=$(grep -m1 'kiwi_cm: kiwi0 ep .* connect_failed status -111' $TR/trace)
	if [[ $line == *"-> $SRV:7999"* ]]; then
		ok "kiwi_cm trace of a refused connect names its destination ($SRV:7999)"
	else
		notok "kiwi_cm trace of a refused connect names its destination ($SRV:7999): ${line:-no connect_failed event}"
	fi
}

# The rdma_cm's port for an active side may be held by a TCP socket
# outside it (a listener, or one in TIME_WAIT without SO_REUSEADDR): the
# connect must still work, from another port (cmport.py).
busy_port_test() {
	local rc src spid
	B timeout 60 /usr/bin/python3 "$GUEST_DIR/cmport.py" server $SRV 7176 \
		>"$TMPD/srv" 2>&1 &
	spid=$!
	wait_port $SRV 7176
	A timeout 50 /usr/bin/python3 "$GUEST_DIR/cmport.py" client \
		10.91.0.1 47176 $SRV 7176 >"$TMPD/cli" 2>&1
	rc=$?
	wait $spid
	src=$?
	pair_verdict "connect from a port a TCP listener holds" $rc $src
	diag "$TMPD/cli" "$TMPD/srv"
}

# What the MPA exchange settled shows in "rdma resource show qp -dd":
# CRC, and large FPDUs when the module parameter large_fpdu offers them.
# rping_attrs: "rdma -dd res show qp" of kiwi0 while an rping runs
# (once its QP is in RTS, or after 20 s).
rping_attrs() {
	local attrs i
	B timeout 60 rping -s -a $SRV -C 1000000 -S 4096 >/dev/null 2>&1 &
	wait_port $SRV 7174
	A timeout 60 rping -c -a $SRV -C 1000000 -S 4096 -V >/dev/null 2>&1 &
	for i in $(seq 1 40); do
		attrs=$(rdma -dd res show qp link kiwi0/1)
		[[ $attrs == *"state RTS"* ]] && break
		sleep 0.5
	done
	pkill -x rping
	wait
	echo "$attrs"
}

res_attr_test() {
	local v want attrs i
	for v in N Y; do
		echo $v >/sys/module/kiwi/parameters/large_fpdu
		want=$([ $v = Y ] && echo 1 || echo 0)
		attrs=$(rping_attrs)
		if [[ $attrs == *"drv_mpa_crc 1 drv_large_fpdu $want "* ]]; then
			ok "rdma res qp -dd: large_fpdu=$v -> drv_large_fpdu $want"
		else
			notok "rdma res qp -dd: large_fpdu=$v -> drv_large_fpdu $want"
			echo "$attrs" | diag
		fi
	done
}

# verbs_pair BIN PORT: BIN's server (-s) in kwb and, once it listens,
# its client (-c) in kwa; outputs in $TMPD/srv and $TMPD/cli, exit
# statuses in PAIR_SRC and PAIR_RC.
verbs_pair() {
	local spid
	B timeout 120 "$1" -s $SRV "$2" >"$TMPD/srv" 2>&1 &
	spid=$!
	wait_port $SRV "$2"
	A timeout 100 "$1" -c $SRV "$2" >"$TMPD/cli" 2>&1
	PAIR_RC=$?
	wait $spid
	PAIR_SRC=$?
}

# pair_bin PROG: PROG's path in PAIR_BIN; "not ok" and 1 if not built.
pair_bin() {
	PAIR_BIN=$GUEST_DIR/../../build/selftests/$1
	[ -x "$PAIR_BIN" ] && return
	notok "$1: $PAIR_BIN not built"
	return 1
}

# pair_run PORT TITLE: PAIR_BIN run as a pair on PORT (verbs_pair), its
# verdict TITLE, both outputs as diagnostics.
pair_run() {
	verbs_pair "$PAIR_BIN" "$1"
	pair_verdict "$2" $PAIR_RC $PAIR_SRC
	diag "$TMPD/cli" "$TMPD/srv"
}

# ring_conn: ibv_wr_* / cq_ex on a connected pair, then a WQE garbled in
# the mapped send ring must fail cleanly (no kernel warning: the guest
# harness checks dmesg).
ring_conn_test() {
	pair_bin ring_conn &&
		pair_run 7175 "ring_conn: ibv_wr_* + cq_ex, garbled WQE -> LOC_QP_OP_ERR"
}

# imm_conn: RFC 7306 immediate data between kiwi0 and kiwi1 with the
# module parameter rfc7306_imm on (the peer is known to take it); the
# Immediate Data message that finds no receive must draw the TERMINATE
# for a missing buffer (DDP layer 1, untagged type 2, code 2) on op 12.
# Then, with rfc7306_imm off, WRs with immediate data fail locally.
# term_logged NAME WHAT: ok NAME if, since the case's klog_mark, kiwi
# logged "QP N: terminating stream: WHAT" (op, layer, type and code of a
# TERMINATE) and its trace shows QP N sending that TERMINATE (lib.sh
# term_found): an earlier case's line cannot satisfy it.
term_logged() {
	klog_since "$TMPD/klog" "$TMPD/ktrace"
	if term_found "$2" "$TMPD/klog" "$TMPD/ktrace"; then
		ok "$1"
		echo "# $1: QP $TERM_QPN"
	else
		notok "$1"
		grep -h "terminating stream\|TERMINATE" "$TMPD/klog" "$TMPD/ktrace" | tail -n 20 | diag
	fi
}

imm_conn_test() {
	local p=/sys/module/kiwi/parameters/rfc7306_imm
	pair_bin imm_conn || return
	echo Y >$p
	klog_mark
	pair_run 7177 "imm_conn: WRITE/SEND with immediate data, solicited, 20 in order, zero-length"
	echo N >$p
	term_logged "imm_conn: Immediate Data with no receive -> TERMINATE (DDP untagged, no buffer)" \
		"op 12 layer 1 type 2 code 0x02"
	if A timeout 30 "$PAIR_BIN" -x >"$TMPD/cli" 2>&1; then
		ok "imm_conn: rfc7306_imm off -> immediate data refused locally (EOPNOTSUPP)"
	else
		notok "imm_conn: rfc7306_imm off -> immediate data refused locally (EOPNOTSUPP)"
	fi
	diag "$TMPD/cli"
}

# The pyverbs rdmacm tests that cannot apply to iWARP, with the reason.
PYV_SKIPS=(
	"test_rdmacm.CMTestCase.test_rdmacm_async_udp_traffic=RDMA_PS_UDP needs UD QPs; iWARP is RC only"
	"test_rdmacm.CMTestCase.test_rdmacm_async_traffic=checks RDMA_OPTION_ID_ACK_TIMEOUT via query_qp; the kernel's rdma_cm applies that option to InfiniBand CM QPs only"
	"test_rdmacm.CMTestCase.test_rdmacm_async_traffic_external_qp=waits for RDMA_CM_EVENT_CONNECT_RESPONSE, which the kernel's rdma_cm produces for InfiniBand CM only (iWARP goes straight to ESTABLISHED)"
)

# pyverbs_rdmacm: the suite's TAP lines re-numbered into ours.
pyverbs_rdmacm() {
	local args=() s line rest rc why
	for s in "${PYV_SKIPS[@]}"; do
		args+=(--skip "$s")
	done
	ip link add kd0 type dummy && ip addr add 10.95.0.1/24 dev kd0 &&
	ip link set kd0 up && rdma link add kiwi2 type kiwi netdev kd0 || {
		notok "pyverbs: kiwi2 on a dummy netdev"
		return
	}
	timeout 900 /usr/bin/python3 "$GUEST_DIR/pyverbs_tap.py" \
		--dev kiwi2 "${args[@]}" test_rdmacm >"$TMPD/pyv" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*)     rest=${line#ok }; ok "pyverbs.${rest#* }" ;;
		"not ok "*) rest=${line#not ok }; notok "pyverbs.${rest#* }" ;;
		"TAP version"*|1..*) ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$TMPD/pyv"
	# The run as a whole: it finished (exit 0, a crash or timeout is
	# not), ran what it planned, and not everything skipped.
	if why=$(tap_embed_verdict $rc "$TMPD/pyv"); then
		ok "pyverbs: test_rdmacm ran whole ($(grep -cE '^ok [0-9]+ [^#]*$' "$TMPD/pyv") passed, $(grep -c ' # SKIP' "$TMPD/pyv") skipped)"
	else
		notok "pyverbs: test_rdmacm ran whole ($why)"
	fi
}

# atomic_perf TOOL OP: perftest's ib_atomic_bw or ib_atomic_lat -A OP,
# server on kiwi1.  perf_test's verdict (bandwidth column > 0) does not
# fit 8-byte operations, whose MB/s rounds to 0.00: the figure checked
# and reported is the message rate (Mpps, bw) or t_typical (usec, lat).
# Runs lost to a known fault of perftest are repeated, as perf_test
# does (lib.sh perf_run_retry: only with the evidence, each a RETRY).
atomic_perf() {
	local col=5 fig
	perf_run_retry "kiwi: $1 -A $2" kiwi1 kiwi0 $SRV "$ITERS" "$1" -A "$2"
	fig=$(echo "$PERF_ROW" | awk -v c=$col '{ print $c }')
	if [ $PERF_RC -eq 0 ] && [ -n "$PERF_ROW" ] &&
	   awk -v f="$fig" 'BEGIN { exit !(f > 0) }'; then
		ok "kiwi: $1 -A $2 ($([ "$1" = ib_atomic_lat ] &&
			echo "t_typical $fig usec" || echo "$fig Mpps"))"
	else
		notok "kiwi: $1 -A $2 (rc $PERF_RC, server $PERF_SRC)"
		tail -n 12 "$TMPD/cli" "$TMPD/srv" | diag
	fi
}

# atomic_local BIN FLAG DESC: one of atomic_conn's checks without a peer.
atomic_local() {
	if A timeout 30 "$1" "$2" >"$TMPD/cli" 2>&1; then
		ok "atomic_conn: $3"
	else
		notok "atomic_conn: $3"
	fi
	diag "$TMPD/cli"
}

# atomic_conn: RFC 7306 atomics between kiwi0 and kiwi1 with the module
# parameter rfc7306_atomics on (devices report IBV_ATOMIC_HCA); each
# refused atomic must draw its TERMINATE at the server on op 10 (RDMAP
# layer 0, remote protection type 1: code 0x02 access rights for a
# region without REMOTE_ATOMIC, 0x01 base or bounds for a misaligned or
# out-of-bounds offset).  Then perftest's atomics, and with the
# parameter off atomic WRs fail locally and atomic_cap is NONE.
atomic_conn_test() {
	local p=/sys/module/kiwi/parameters/rfc7306_atomics
	local what t a
	pair_bin atomic_conn || return
	echo Y >$p
	atomic_local "$PAIR_BIN" -a "rfc7306_atomics on -> atomic_cap IBV_ATOMIC_HCA"
	klog_mark
	pair_run 7179 "atomic_conn: fetch-add, cmp-swap hit/miss, 2 QPs x 500 on one counter, refusals"
	for what in "access:0x02" "bounds:0x01"; do
		term_logged "atomic_conn: refused atomic ($what) -> TERMINATE RDMAP protection" \
			"op 10 layer 0 type 1 code ${what#*:}"
	done
	for t in ib_atomic_bw ib_atomic_lat; do
		for a in FETCH_AND_ADD CMP_AND_SWAP; do
			atomic_perf $t $a
		done
	done
	echo N >$p
	atomic_local "$PAIR_BIN" -x "rfc7306_atomics off -> atomic_cap NONE, atomics refused locally (EOPNOTSUPP)"
}

# field NAME: the word after NAME in each line of stdin ("rdma statistic"
# prints "name value" pairs).
field() { awk -v c="$1" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }'; }
link_stat() { rdma statistic show link "$1/1" | field "$2"; }

# hist_sum DEV PREFIX: the sum of DEV's counters named PREFIX* (a
# latency histogram's buckets).
hist_sum() {
	rdma statistic show link "$1/1" |
		awk -v p="$2" '{ for (i = 1; i < NF; i++) if (index($i, p) == 1) s += $(i + 1) }
			END { print s + 0 }'
}

# lat_hist_test: kiwi's own-time histograms (rx_msg_us_*, tx_wqe_us_*)
# count the messages of an ib_send_lat run of N round trips: on each
# device at least N received messages, but no more than FPDUs received,
# and at least N doorbells answered.
lat_hist_test() {
	local n=$1 d bad="" got=""
	local -A b
	for d in kiwi0 kiwi1; do
		b[$d.rx]=$(hist_sum $d rx_msg_us_)
		b[$d.tx]=$(hist_sum $d tx_wqe_us_)
		b[$d.f]=$(link_stat $d rx_fpdus)
	done
	perf_test kiwi kiwi1 kiwi0 $SRV "$n" ib_send_lat -s 8
	for d in kiwi0 kiwi1; do
		local rx tx f
		rx=$(( $(hist_sum $d rx_msg_us_) - b[$d.rx] ))
		tx=$(( $(hist_sum $d tx_wqe_us_) - b[$d.tx] ))
		f=$(( $(link_stat $d rx_fpdus) - b[$d.f] ))
		got="$got $d: rx $rx tx $tx fpdus $f;"
		[ "$rx" -ge "$n" ] && [ "$rx" -le "$f" ] && [ "$tx" -ge "$n" ] ||
			bad=1
	done
	if [ -z "$bad" ]; then
		ok "latency histograms count each message:$got"
		rdma statistic show link kiwi1/1 | awk '{ l = "# kiwi1"
			for (i = 1; i < NF; i++) if ($i ~ /^(rx_msg|tx_wqe)_us_/)
				l = l " " substr($i, 1, 2) substr($i, 10) "=" $(i + 1)
			print l }'
	else
		notok "latency histograms count each message ($n round trips):$got"
	fi
}

# perf_bg SECS SIZE: ib_write_bw kiwi0 -> kiwi1 for SECS in the
# background, niced: its client polls the CQ without pause, and under a
# slow TCG guest the rdma commands that follow took 17 s for three binds
# (a CI run's client ended before the counter was read).  Sets QS to
# the client's RC QPs on kiwi0 once both are in RTS (perftest's rdma_cm
# mode makes one for its parameter exchange besides the data QP), within
# 60 s (15 s were not enough on the sanitizer kernel; the loop ends as
# soon as they are), QS_AT to the seconds that took, PERF_CPID,
# PERF_SPID and PERF_T0.  kiwi's connection events are traced from the
# start (the evidence perf_bg_wait keeps for perf_retry_reason).
perf_bg() {
	local t0=$SECONDS
	perf_trace_start
	B nice -n 19 timeout 120 ib_write_bw -R -d kiwi1 -F -D "$1" -s "$2" \
		>"$TMPD/srv" 2>&1 &
	PERF_SPID=$!
	wait_port $SRV 18515
	A nice -n 19 timeout 120 ib_write_bw -R -d kiwi0 -F -D "$1" -s "$2" $SRV \
		>"$TMPD/cli" 2>&1 &
	PERF_CPID=$!
	QS=""
	while [ $((SECONDS - t0)) -lt 60 ]; do
		QS=$(rdma res show qp link kiwi0/1 |
		     awk '/comm ib_write_bw/ && /state RTS/ { printf "%s ", $4 }')
		[ "$(echo $QS | wc -w)" -ge 2 ] && break
		sleep 0.1
	done
	QS=$(echo $QS)
	QS_AT=$((SECONDS - t0))
	PERF_T0=$t0
}

# perf_alive: "client running at N s", or how and when it had ended, for
# a verdict that depends on perf_bg's client still moving data.
perf_alive() {
	if kill -0 "$PERF_CPID" 2>/dev/null; then
		echo "client running at $((SECONDS - PERF_T0)) s"
	else
		echo "client ended before $((SECONDS - PERF_T0)) s: $(tail -n 1 "$TMPD/cli" | cut -c1-100)"
	fi
}

# Per-QP counters (rdma statistic qp): a QP bound to a counter counts
# into it and not also into the device (what kiwi0 sent equals what
# kiwi1 received, exactly, though kiwi0's sum mixes device and counter);
# the counter grows while bound; unbinding frees the counter and its
# counts move into the device's (the link total never drops); auto mode
# binds new QPs itself.
counters_test() {
	bg_retry "rdma statistic qp bind/unbind" counters_bind
	bg_retry "rdma statistic qp auto type on" counters_auto
}

# One attempt each, its verdict printed as "ok"/"not ok" (bg_retry).
counters_bind() {
	local tx0 rx0 q qs cnt c1 c2 l1 l2 tx rx i at1 alive
	tx0=$(link_stat kiwi0 tx_payload_bytes)
	rx0=$(link_stat kiwi1 rx_payload_bytes)
	# Long enough for the binds, 2 s of counting and the unbinds: the
	# 40 s count from the connection, which is when the QPs can be found.
	perf_bg 40 65536
	qs=$QS
	q=${qs%% *}
	if [ -n "$q" ] &&
	   rdma statistic qp bind link kiwi0/1 lqpn "$q" >"$TMPD/bind" 2>&1; then
		cnt=$(rdma statistic qp show link kiwi0/1 | field cntn | head -1)
		for i in ${qs#"$q"}; do
			rdma statistic qp bind link kiwi0/1 lqpn "$i" cntn "$cnt" \
				>>"$TMPD/bind" 2>&1
		done
		rdma statistic qp show link kiwi0/1 >"$TMPD/ctr1"
		c1=$(field tx_payload_bytes <"$TMPD/ctr1" | head -1)
		at1=$((SECONDS - PERF_T0))
		sleep 2
		rdma statistic qp show link kiwi0/1 >"$TMPD/ctr2"
		c2=$(field tx_payload_bytes <"$TMPD/ctr2" | head -1)
		alive=$(perf_alive)
		l1=$(link_stat kiwi0 tx_payload_bytes)
		for i in $qs; do
			rdma statistic qp unbind link kiwi0/1 cntn "$cnt" lqpn "$i" \
				>>"$TMPD/bind" 2>&1
		done
		l2=$(link_stat kiwi0 tx_payload_bytes)
	fi
	perf_bg_wait
	tx=$(( $(link_stat kiwi0 tx_payload_bytes) - tx0 ))
	rx=$(( $(link_stat kiwi1 rx_payload_bytes) - rx0 ))
	# Over 2 s the data QP moves megabytes even under TCG.
	if [ -n "${c2:-}" ] && [ "${c2:-0}" -gt $(( ${c1:-0} + 1000000 )) ] &&
	   [ "$(grep -o 'LQPN: <[0-9,]*>' "$TMPD/ctr2")" = "LQPN: <${qs// /,}>" ] && [ "${l2:-0}" -ge "${l1:-1}" ] &&
	   [ "$l1" -ge "$c2" ] && [ "$tx" -eq "$rx" ] && [ "$tx" -gt 0 ] &&
	   ! rdma statistic qp show link kiwi0/1 | grep -q cntn; then
		echo "ok rdma statistic qp bind/unbind: QPs $qs (RTS at $QS_AT s) counted in counter $cnt ($c1 -> $c2 B while bound, $at1 -> $((at1 + 2)) s), kiwi0 sent = kiwi1 received = $tx B, link total $l1 -> $l2 at unbind"
		return 0
	fi
	echo "not ok rdma statistic qp bind/unbind (QPs ${qs:-none} found after ${QS_AT} s, counter ${cnt:-none}: ${c1:-?} at ${at1:-?} s -> ${c2:-?}, then perftest ${alive:-?}; link ${l1:-?} -> ${l2:-?}; sent $tx, received $rx; perftest exit $PERF_RC/$PERF_SRC)"
	cat "$TMPD/bind" "$TMPD/ctr1" "$TMPD/ctr2" 2>/dev/null | diag
	tail -n 5 "$TMPD/cli" "$TMPD/srv" | diag
	return 1
}

# Auto mode: every new RC QP on kiwi0 gets a counter of its own type.
counters_auto() {
	local tx0 rx0 qs c1 tx rx
	tx0=$(link_stat kiwi0 tx_payload_bytes)
	rx0=$(link_stat kiwi1 rx_payload_bytes)
	rm -f "$TMPD/ctr1"
	rdma statistic qp set link kiwi0/1 auto type on
	perf_bg 6 4096
	qs=$QS
	sleep 1
	rdma statistic qp show link kiwi0/1 >"$TMPD/ctr1"
	perf_bg_wait
	rdma statistic qp set link kiwi0/1 auto off
	tx=$(( $(link_stat kiwi0 tx_payload_bytes) - tx0 ))
	rx=$(( $(link_stat kiwi1 rx_payload_bytes) - rx0 ))
	c1=$(field tx_payload_bytes <"$TMPD/ctr1" | head -1)
	if grep -q "qp-type RC" "$TMPD/ctr1" &&
	   grep -q "LQPN: <${qs// /,}>" "$TMPD/ctr1" && [ -n "$qs" ] &&
	   [ "${c1:-0}" -gt 0 ] && [ "$tx" -eq "$rx" ] && [ "$tx" -gt 0 ]; then
		echo "ok rdma statistic qp auto type on: QPs $qs bound on creation ($c1 B counted mid-run), kiwi0 sent = kiwi1 received = $tx B"
		return 0
	fi
	echo "not ok rdma statistic qp auto type on (QPs ${qs:-none}; sent $tx, received $rx; perftest exit $PERF_RC/$PERF_SRC)"
	diag "$TMPD/ctr1"
	tail -n 5 "$TMPD/cli" "$TMPD/srv" | diag
	return 1
}

# hw_role LABEL RTR CRC LARGE: kiwi playing a hardware iWARP peer's
# defaults on both ends (module parameters p2p_rtr, crc, large_fpdu):
# rping -V, then ib_read_bw for 6 s with 32 READs outstanding, during which both
# QPs must show the RTR kind agreed (drv_p2p_rtr: send 1, write 2, read
# 4), the CRC setting and IRD/ORD 32 (RFC 6581), and the READs complete.
hw_role() {
	local label=$1 rtr=$2 crc=$3 large=$4 P=/sys/module/kiwi/parameters
	local bit
	echo "$rtr" >$P/p2p_rtr && echo "$crc" >$P/crc &&
		echo "$large" >$P/large_fpdu || { notok "$label: parameters"; return; }
	case $rtr in send) bit=1 ;; write) bit=2 ;; read) bit=4 ;; esac
	rping_test "$label" $SRV 4096 200
	bg_retry "$label: RTR $rtr, CRC $crc, IRD/ORD 32" hw_read "$label" "$rtr" "$crc" "$bit"
}

# hw_read LABEL RTR CRC BIT: one attempt of hw_role's ib_read_bw, its
# verdict printed (bg_retry).
hw_read() {
	local label=$1 rtr=$2 crc=$3 bit=$4 a0="" a1="" t0 crc_v=0
	[ "$crc" = Y ] && crc_v=1
	perf_trace_start
	# For a time, not a count: long enough to be seen in "rdma res".
	B timeout 200 ib_read_bw -R -d kiwi1 -F -o 32 -s 65536 -D 6 \
		>"$TMPD/srv" 2>&1 &
	# shellcheck disable=SC2034 # perf_bg_wait (lib.sh) waits for it
	PERF_SPID=$!
	wait_port $SRV 18515
	A timeout 180 ib_read_bw -R -d kiwi0 -F -o 32 -s 65536 -D 6 $SRV \
		>"$TMPD/cli" 2>&1 &
	PERF_CPID=$!
	# While the client runs, for up to 60 s: 60 polls of 0.3 s were not
	# enough for a k612 guest on a loaded host.
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ] && kill -0 $PERF_CPID 2>/dev/null; do
		a0=$(rdma -dd res show qp link kiwi0/1 | grep "state RTS.*drv_ord 32 ")
		a1=$(rdma -dd res show qp link kiwi1/1 | grep "state RTS.*drv_ird 32 ")
		[ -n "$a0" ] && [ -n "$a1" ] && break
		sleep 0.3
	done
	perf_bg_wait
	if [ $PERF_RC -eq 0 ] &&
	   grep -qE '^ +65536 +[1-9][0-9]* ' "$TMPD/cli" &&
	   [[ $a0 == *"drv_mpa_crc $crc_v "*"drv_p2p_rtr $bit "* ]] &&
	   [[ $a1 == *"drv_mpa_crc $crc_v "*"drv_p2p_rtr $bit "* ]]; then
		echo "ok $label: RTR $rtr agreed both ends, CRC $crc, IRD/ORD 32; ib_read_bw -o 32 -D 6: $(awk '/^ +65536 / { print $2; exit }' "$TMPD/cli") x 64 KiB READs"
		return 0
	fi
	echo "not ok $label: RTR $rtr, CRC $crc, IRD/ORD 32 (ib_read_bw rc $PERF_RC, server $PERF_SRC)"
	{ echo "kiwi0: $a0"; echo "kiwi1: $a1"; } | diag
	tail -n 5 "$TMPD/cli" "$TMPD/srv" | diag
	return 1
}

# Hardware iWARP defaults, played by kiwi (issue 17): each RTR kind; a
# Chelsio T5/T6 (iw_cxgb4: CRC on, markers off, MPA v2, peer-to-peer
# with a zero-length READ, IRD/ORD 32, standard FPDUs); an Intel E810
# (irdma: CRC on, standard FPDUs, WRITE with immediate data, no atomics).
hw_test() {
	local P=/sys/module/kiwi/parameters
	hw_role "RTR zero-length WRITE" write N Y
	hw_role "RTR zero-length SEND" send N Y
	hw_role "Chelsio defaults (RTR READ, CRC, standard FPDUs)" read Y N
	echo write,read,send >$P/p2p_rtr
	echo Y >$P/rfc7306_imm
	echo N >$P/rfc7306_atomics
	echo "# irdma defaults: CRC, standard FPDUs, immediate data, no atomics"
	imm_conn_test
	echo N >$P/crc
	echo Y >$P/large_fpdu
}

# mw_conn: memory windows between kiwi0 and kiwi1 (type 1 and 2, zero-
# based, local and remote invalidation, refused binds, QP-bound type 2,
# a type 2 window whose QP was destroyed).
# The READs through dead STags must draw the TERMINATE for an invalid
# STag on op 1 (RDMAP layer 0, protection type 1, code 0x00), the WRITE
# across the zero-based window's end the DDP tagged base-or-bounds one
# on op 0 (layer 1, type 1, code 0x01).
mw_conn_test() {
	local what m
	pair_bin mw_conn || return
	klog_mark
	pair_run 7181 "mw_conn: type 1/2 windows, zero-based, LOCAL_INV, SEND with invalidate, refused binds, QP-bound type 2, type 2 of a destroyed QP"
	# The server exited with two windows bound in a region.
	if [ -z "$(B rdma res show mr dev kiwi1 2>&1)" ]; then
		ok "mw_conn: exit with bound windows frees them and their region"
	else
		notok "mw_conn: exit with bound windows frees them and their region"
		B rdma res show mr dev kiwi1 2>&1 | diag
	fi
	for what in "dead STag READ:op 1 layer 0 type 1 code 0x00" \
		    "WRITE beyond the window:op 0 layer 1 type 1 code 0x01"; do
		m=${what#*:}
		term_logged "mw_conn: ${what%%:*} -> TERMINATE ($m)" "$m"
	done
}

# qp_reconnect: a QP from ibv_create_qp() connected by number through
# rdma_cm, moved to RESET after the disconnect and connected again on
# a new cm_id with another IRD/ORD (its inbound READ queue replaced),
# three times, READs and SENDs checked each time.
qp_reconnect_test() {
	pair_bin qp_reconnect &&
		pair_run 7183 "qp_reconnect: one QP, RESET between connections, IRD 2 -> 6 -> 2"
}

# mk_stat DEV COUNTER: a device counter (rdma statistic, port 1).
mk_stat() { link_stat "$1" "$2"; }

mk_snap() {
	MK_SNAP="$(mk_stat kiwi0 tx_markers) $(mk_stat kiwi0 rx_markers) $(mk_stat kiwi1 tx_markers) $(mk_stat kiwi1 rx_markers)"
}

# mk_counters LABEL MODE: the marker counters moved as MODE says since
# mk_snap (kiwi0 is the initiator): 1 both ways, 2 kiwi1 -> kiwi0 only
# (the initiator asked), 3 kiwi0 -> kiwi1 only; no marker refused.
mk_counters() {
	local label=$1 mode=$2 b a want d i=0 bad=
	read -r -a b <<<"$MK_SNAP"
	mk_snap
	read -r -a a <<<"$MK_SNAP"
	case $mode in
	1) want="+ + + +" ;;
	2) want="0 + + 0" ;;
	3) want="+ 0 0 +" ;;
	esac
	for w in $want; do
		d=$(( ${a[$i]:-0} - ${b[$i]:-0} ))
		if [ "$w" = + ] && [ $d -le 0 ]; then bad=1; fi
		if [ "$w" = 0 ] && [ $d -ne 0 ]; then bad=1; fi
		i=$((i + 1))
	done
	for d in kiwi0 kiwi1; do
		[ "$(mk_stat $d rx_marker_errors)" = 0 ] || bad=1
	done
	if [ -z "$bad" ]; then
		ok "$label: markers counted per direction (kiwi0 tx/rx, kiwi1 tx/rx: ${b[*]} -> ${a[*]})"
	else
		notok "$label: markers counted per direction (want $want; ${b[*]} -> ${a[*]})"
	fi
}

# mk_perf LABEL TOOL SIZE: perftest over rdma_cm (server kiwi1), judged
# on the bandwidth or, for tiny messages whose MB/s rounds to 0.00, the
# message rate; runs lost to a known fault of perftest are repeated as
# perf_test does (perf_run_retry).
mk_perf() {
	local label=$1 tool=$2 size=$3
	perf_run_retry "$label: $tool -s $size" kiwi1 kiwi0 $SRV 200 "$tool" -s "$size"
	if [ $PERF_RC -eq 0 ] && [ -n "$PERF_ROW" ] &&
	   echo "$PERF_ROW" | awk '{ exit !($4 > 0 || $5 > 0) }'; then
		ok "$label: $tool -s $size ($(echo "$PERF_ROW" | awk '{print $4 " MB/s, " $5 " Mpps"}'))"
	else
		notok "$label: $tool -s $size (rc $PERF_RC, server $PERF_SRC)"
		tail -n 12 "$TMPD/cli" "$TMPD/srv" | diag
	fi
}

# markers: MPA markers (RFC 5044 4.3) between kiwi0 and kiwi1, requested
# by both ends (mpa_markers=1), by the initiator only (2: the responder
# sends them) and by the responder only (3), with CRC on and off: rping -V
# and perftest over rdma_cm at sizes around the 512-octet interval; the
# negotiated directions in "rdma res show qp -dd", the counters per
# direction, no marker refused.  KIWI_DP_MK_QUICK=1: fewer sizes.
markers_test() {
	local P=/sys/module/kiwi/parameters crc mode s t sizes psizes
	# rping takes 23 to 65535 bytes
	local rsizes="64 511 513 4095 4096 65535"
	psizes="1 64 511 513 4095 4096 65535 65536"
	for crc in Y N; do
		echo $crc >$P/crc
		for mode in 1 2 3; do
			echo $mode >$P/mpa_markers
			sizes=$rsizes
			[ $mode = 1 ] && [ $crc = Y ] || sizes="513 65535"
			[ -z "${KIWI_DP_MK_QUICK:-}" ] || sizes="513"
			mk_snap
			for s in $sizes; do
				rping_test "markers=$mode crc=$crc" $SRV $s 200
			done
			sizes=$psizes
			[ $mode = 1 ] && [ $crc = Y ] || sizes="511 4095 65535"
			[ -z "${KIWI_DP_MK_QUICK:-}" ] || sizes="4095"
			for t in ib_write_bw ib_read_bw ib_send_bw; do
				for s in $sizes; do
					mk_perf "markers=$mode crc=$crc" $t $s
				done
			done
			mk_counters "markers=$mode crc=$crc" $mode
		done
	done
	echo 0 >$P/mpa_markers
	echo Y >$P/crc
	mk_res_attr
}

# markers_smoke: the default run's share of markers_test (the markers
# selector runs all of it): each way of asking once, CRC on and off.
markers_smoke() {
	local P=/sys/module/kiwi/parameters
	echo 1 >$P/mpa_markers
	mk_snap
	rping_test "markers=1 crc=Y" $SRV 513 200
	mk_perf "markers=1 crc=Y" ib_write_bw 4095
	mk_perf "markers=1 crc=Y" ib_read_bw 65535
	mk_counters "markers=1 crc=Y" 1
	echo 2 >$P/mpa_markers
	echo N >$P/crc
	mk_snap
	rping_test "markers=2 crc=N" $SRV 4096 200
	mk_perf "markers=2 crc=N" ib_send_bw 513
	mk_counters "markers=2 crc=N" 2
	echo Y >$P/crc
	echo 3 >$P/mpa_markers
	mk_snap
	rping_test "markers=3 crc=Y" $SRV 65535 100
	mk_counters "markers=3 crc=Y" 3
	echo 0 >$P/mpa_markers
	mk_res_attr
}

# The directions the MPA exchange settled, in "rdma res show qp -dd".
mk_res_attr() {
	local attrs i
	echo 2 >/sys/module/kiwi/parameters/mpa_markers
	attrs=$(rping_attrs)
	echo 0 >/sys/module/kiwi/parameters/mpa_markers
	if [[ $attrs == *"drv_mpa_markers_tx 0 drv_mpa_markers_rx 1 "* ]]; then
		ok "rdma res qp -dd: mpa_markers=2 -> the initiator receives markers, sends none"
	else
		notok "rdma res qp -dd: mpa_markers=2 -> the initiator receives markers, sends none"
		echo "$attrs" | diag
	fi
}

tap_setup "two namespaces, veth, kiwi0/kiwi1" \
	"two namespaces, veth (MTU $MTU), kiwi0/kiwi1"

# KIWI_DP_ONLY: a comma list of tests to run alone, for short guest runs.
if [ -n "${KIWI_DP_ONLY:-}" ]; then
	for t in ${KIWI_DP_ONLY//,/ }; do
		case $t in
		imm) imm_conn_test ;;
		atomic) atomic_conn_test ;;
		mw) mw_conn_test ;;
		reconnect) qp_reconnect_test ;;
		ring) ring_conn_test ;;
		counters) counters_test ;;
		attrs) res_attr_test ;;
		hw) hw_test ;;
		markers) markers_test ;;
		markers_smoke) markers_smoke ;;
		refused) refused_test ;;
		pyverbs) pyverbs_rdmacm ;;
		rping) rping_test kiwi $SRV 4096 "$COUNT" ;;
		perf)
			for p in ib_write_bw ib_send_bw ib_read_bw; do
				perf_test kiwi kiwi1 kiwi0 $SRV "$ITERS" $p -s 65536
			done ;;
		lat)
			for p in ib_write_lat ib_read_lat ib_send_lat; do
				perf_test kiwi kiwi1 kiwi0 $SRV "$ITERS" $p -s 8
			done ;;
		lat_hist) lat_hist_test 300 ;;
		*) notok "KIWI_DP_ONLY: no test '$t' (imm, atomic, mw, reconnect, ring, counters, attrs, hw, markers, markers_smoke, refused, pyverbs, rping, perf, lat, lat_hist)" ;;
		esac
	done
	tap_end
	exit
fi

for size in 64 4096 65535; do
	rping_test kiwi $SRV $size "$COUNT"
done
rping_test kiwi-ipv6 fd91::2 4096 "$((COUNT / 4))"
for t in ib_write_bw ib_read_bw ib_send_bw; do
	perf_test kiwi kiwi1 kiwi0 $SRV "$ITERS" $t -s 65536
done
for t in ib_write_lat ib_read_lat; do
	perf_test kiwi kiwi1 kiwi0 $SRV "$ITERS" $t -s 8
done
lat_hist_test "$ITERS"
ring_conn_test
imm_conn_test
atomic_conn_test
mw_conn_test
qp_reconnect_test
markers_smoke
refused_test
busy_port_test
res_attr_test
counters_test
hw_test
pyverbs_rdmacm
tap_end
