# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# bench/cells.sh -- one run of one benchmark cell on one stack: the
# perftest, iperf3 and sockperf command lines, waiting for a server,
# parsing the tools' output into a value, and the "@bench run|..." line.
# Sourced, not run, by the two guest halves of the benchmarks, so that
# they cannot drift apart:
#   scripts/bench-guest.sh   (make bench: both ends in one guest, over veth)
#   bench/pair-guest.sh   (make bench-2host: server in guest b, client in
#                          guest a, over the virtual NIC between them)
#
# The sourcing script sets, before calling anything here:
#   LOGS          directory of every tool's output (TAG.cli, TAG.srv)
#   DURATION, IT_LAT, RUN_TIMEOUT   seconds per bandwidth run, messages per
#                 latency run, bound on each tool run
#   CCPU, SCPU    vCPUs the client and the server are pinned to
#   SNS, CNS, SDEV, CDEV, SADDR   associative arrays by stack: server and
#                 client namespace ("" = root), RDMA device, server address
#   PORT          the run's port (the caller advances it per run)
# and reads back R_STATUS (ok, warn, err), R_VALUE, R_EXTRA, R_NOTE and
# R_TIMES.  Cells: see cell_parse; the env knobs KIWI_BENCH_SERVER_GRACE
# and KIWI_BENCH_RETRIES are read here (Documentation/benchmark.md).

in_ns() {	# in_ns NS CMD...: run CMD in namespace NS ("" = root)
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# bg_in_ns NS CMD...: start CMD in namespace NS in the background; $! is
# then CMD's own process (exec all the way), which /proc/$!/net/ relies on.
bg_in_ns() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then
		(exec ip netns exec "$ns" "$@") &
	else
		(exec "$@") &
	fi
}

# nap SECONDS: sleep without forking (sleep(1) costs ~0.3 s under TCG).
exec {NAP_FD}<> <(:)
nap() { read -r -t "$1" -u "$NAP_FD" _; true; }

# kcpu: the guest's kernel CPU time so far, in USER_HZ ticks (system, irq,
# softirq of all vCPUs).
kcpu() { awk '$1 == "cpu" { print $4 + $7 + $8; exit }' /proc/stat; }

# tool_pid PID: TOOL_PID = the tool run by timeout(1) process PID (its
# only child), or empty.  No subshell: forks are slow under TCG.
tool_pid() {
	TOOL_PID=
	read -r TOOL_PID _ 2>/dev/null <"/proc/$1/task/$1/children"
}

# wait_listen PID KIND PORT: until the server PID (timeout(1) running the
# tool) is ready.  perftest (KIND rdma): its process sleeps in
# ucma_get_event, i.e. rdma_listen() has returned.  tcp: a TCP listener
# on PORT in its namespace.  Fails if the server exits first or after 30 s.
wait_listen() {
	local pid=$1 kind=$2 port=$3 hex end f laddr st rest wchan
	hex=$(printf '%04X' "$port")
	end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		kill -0 "$pid" 2>/dev/null || return 1
		if [ "$kind" = rdma ]; then
			tool_pid "$pid"
			wchan=
			[ -z "$TOOL_PID" ] || read -r wchan 2>/dev/null <"/proc/$TOOL_PID/wchan"
			[ "$wchan" = ucma_get_event ] && return 0
		else
			tool_pid "$pid"
			for f in "/proc/${TOOL_PID:-$pid}/net/tcp" "/proc/${TOOL_PID:-$pid}/net/tcp6"; do
				[ -r "$f" ] || continue
				while read -r _ laddr _ st rest; do
					[ "$st" = 0A ] && [ "${laddr##*:}" = "$hex" ] && return 0
				done <"$f"
			done
		fi
		nap 0.05
	done
	return 1
}

# stop_server PID: the server should end by itself once the client is done;
# give it SERVER_GRACE seconds, then TERM, then KILL.  Returns the
# server's exit status, or 125 if it had to be stopped (STOP_NOTE).
SERVER_GRACE=${KIWI_BENCH_SERVER_GRACE:-20}
stop_server() {
	local pid=$1 grace=${2:-$SERVER_GRACE} end wchan=
	end=$((SECONDS + grace))
	STOP_NOTE=
	while [ $SECONDS -lt $end ]; do
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
		nap 0.05
	done
	tool_pid "$pid"
	[ -z "$TOOL_PID" ] || read -r wchan 2>/dev/null <"/proc/$TOOL_PID/wchan"
	STOP_NOTE="server still running ${grace}s after the client ended (waiting in ${wchan:-?}), killed"
	kill "$pid" 2>/dev/null
	nap 1
	kill -9 "$pid" 2>/dev/null
	wait "$pid"
	return 125
}

# tool_notes FILE...: complaints in a tool's output, as one line.
tool_notes() {
	grep -hiE 'fail|error|errno|couldn.t|unable|unexpected|warning|correlation' "$@" 2>/dev/null |
		grep -v 'WARNING: BW peak' |
		sed -e 's/^[[:space:]]*//' -e 's/^[0-9][0-9.[:space:]]*\([A-Za-z]\)/\1/' | sort -u | head -3 |
		tr '\n' ';' | tr '|' '/' | sed -e 's/;$//'
}

# ------------------------------------------------------------ cells --
# The cell set "coverage" (a word in KIWI_BENCH_CELLS) stands for what
# users compare beyond the targets' cells: a message-size sweep of
# WRITE, READ and SEND bandwidth (64 B to 1 MiB, the defaults' 4 KiB and
# 64 KiB between), 16 and 64 QPs, bidirectional traffic, and latency at
# 4 KiB and 64 KiB.
COVERAGE="write_bw_64 write_bw_1k write_bw_16k write_bw_256k write_bw_1m
	read_bw_64 read_bw_1k read_bw_16k read_bw_256k read_bw_1m
	send_bw_64 send_bw_1k send_bw_16k send_bw_256k send_bw_1m
	write_bw_64k_q16 write_bw_64k_q64 write_bw_64k_bi
	write_lat_4k write_lat_64k send_lat_4k send_lat_64k"

# cells_expand LIST: LIST with the word "coverage" replaced by those cells,
# one line, words separated by one space.
cells_expand() {
	local c out
	# shellcheck disable=SC2086 # $1 and $COVERAGE are lists of words
	out=$(for c in $1; do [ "$c" = coverage ] && echo $COVERAGE || echo "$c"; done | tr -s ' \n' '  ')
	echo "${out% }"
}

# cell_parse CELL: C_OP (write/read/send), C_KIND (bw/lat), C_SIZE
# (bytes), C_QPS, C_BI (1: bidirectional); false if CELL is not one.
cell_parse() {
	local IFS=_ w x
	read -r -a w <<<"$1"
	[ ${#w[@]} -ge 3 ] || return 1
	C_OP=${w[0]} C_KIND=${w[1]} C_QPS=1 C_BI=0
	case $C_OP in write|read|send) ;; *) return 1 ;; esac
	case $C_KIND in bw|lat) ;; *) return 1 ;; esac
	case ${w[2]} in
	*k) C_SIZE=$((${w[2]%k} * 1024)) ;; *m) C_SIZE=$((${w[2]%m} * 1048576)) ;;
	*[!0-9]*|"") return 1 ;; *) C_SIZE=${w[2]} ;;
	esac
	for x in "${w[@]:3}"; do
		case $x in q[0-9]*) C_QPS=${x#q} ;; bi) C_BI=1 ;; *) return 1 ;; esac
	done
	# perftest's latency tests have neither -q nor -b.
	[ "$C_KIND" = bw ] || { [ "$C_QPS" = 1 ] && [ "$C_BI" = 0 ]; }
}

# tcp_cell: does the TCP baseline have a counterpart of the parsed cell?
# Bandwidth: iperf3 -Z with the cell's write size and -P QPs (not for
# bidirectional cells); latency: sockperf ping-pong for the 8-byte cells
# of write and send (its smallest message is 14 bytes: -m 16).
tcp_cell() {
	if [ "$C_KIND" = bw ]; then
		[ "$C_BI" = 0 ] && [ "$C_OP" != read ]
	else
		[ "$C_SIZE" -le 16 ] && [ "$C_OP" != read ]
	fi
}

# A run is three steps, so that the server and the client may be in two
# machines (bench/pair-guest.sh): *_server starts the server (SPID) and
# waits until it listens, *_client runs the client (its exit status
# returned), *_result parses both outputs, given the client's and the
# server's exit status and the kernel CPU ticks (kcpu) the run took.
# perf_once, tcp_bw and tcp_lat are the three in one guest.

# server_up KIND WHAT TAG NS CMD...: CMD in namespace NS as a server
# (bounded, pinned; SPID, output in LOGS/TAG.srv) until it listens on
# PORT (wait_listen KIND); false if it did not get there (R_* then say
# WHAT failed, the server stopped).
server_up() {
	local kind=$1 what=$2 srv=$LOGS/$3.srv ns=$4
	shift 4
	bg_in_ns "$ns" timeout -k 5 $((RUN_TIMEOUT + 15)) taskset -c $SCPU "$@" >"$srv" 2>&1
	SPID=$!
	if ! wait_listen "$SPID" "$kind" "$PORT"; then
		stop_server "$SPID"
		R_STATUS=err R_VALUE='' R_EXTRA='' R_NOTE="$what: $(tool_notes "$srv")"
		return 1
	fi
}

# perf_server STACK TAG: perftest's server for the parsed cell.
perf_server() {
	perf_args
	# shellcheck disable=SC2086 # $P_ARGS are words
	server_up rdma "server not ready" "$2" "${SNS[$1]}" \
		"$P_TOOL" -R -F -d "${SDEV[$1]}" -p "$PORT" $P_ARGS
}

# perf_args: P_TOOL and P_ARGS, the perftest program and its options for
# the parsed cell (the same on both sides).
perf_args() {
	P_TOOL=ib_${C_OP}_${C_KIND}
	P_ARGS="-s $C_SIZE"
	if [ "$C_KIND" = bw ]; then P_ARGS+=" -D $DURATION"; else P_ARGS+=" -n $IT_LAT"; fi
	[ "$C_QPS" = 1 ] || P_ARGS+=" -q $C_QPS"
	[ "$C_BI" = 0 ] || P_ARGS+=" -b"
}

# perf_client STACK TAG: perftest's client against the server at PORT
# (output in LOGS/TAG.cli); returns its exit status.
perf_client() {
	local stack=$1 tag=$2
	perf_args
	# shellcheck disable=SC2086
	in_ns "${CNS[$stack]}" timeout -k 5 "$RUN_TIMEOUT" taskset -c $CCPU \
		"$P_TOOL" -R -F -d "${CDEV[$stack]}" -p "$PORT" $P_ARGS "${SADDR[$stack]}" \
		>"$LOGS/$tag.cli" 2>&1
}

# perf_result CLI SRV RC SRC TICKS: R_* of a perftest run from the
# client's and the server's output (files) and exit status; TICKS: the
# kernel CPU the run took (kcpu).
perf_result() {
	local cli=$1 srv=$2 rc=$3 src=$4 ticks=$5 row f
	# Result rows start with the size and the iteration count.  Bandwidth:
	# 4th column = BW average [MB/sec] (MiB/s), from the receiver for
	# SEND (with -D, ib_send_bw's client row reads 0.00), the client
	# otherwise (both sides print the same for WRITE and READ); latency:
	# t_min t_max t_typical t_avg t_stdev 99% 99.9% [usec].
	R_EXTRA=
	if [ "$C_KIND" = bw ]; then
		if [ "$C_OP" = send ]; then f=$srv; else f=$cli; fi
		row=$(grep -E "^ *$C_SIZE +[0-9]+ +[0-9.]+ +[0-9.]+" "$f" | tail -1)
		R_VALUE=$(awk '{ print $4 }' <<<"$row")
		R_EXTRA=$(awk -v v="$R_VALUE" -v t="$ticks" -v d="$DURATION" \
			'BEGIN { if (v > 0) printf "kcpu_s_per_gib=%.3f", (t / 100) / (v * d / 1024) }')
	else
		row=$(grep -E "^ *$C_SIZE +[0-9]+ +[0-9.]+ +[0-9.]+" "$cli" | tail -1)
		R_VALUE=$(awk '{ print $5 }' <<<"$row")
		R_EXTRA=$(awk '{ printf "tmin=%s,tavg=%s,p99=%s,p999=%s", $3, $6, $8, $9 }' <<<"$row")
	fi
	R_NOTE=$(tool_notes "$cli" "$srv")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		R_STATUS=err R_VALUE='' R_NOTE="timeout after ${RUN_TIMEOUT}s${R_NOTE:+: $R_NOTE}"
	elif [ "$rc" -ne 0 ] || [ -z "$R_VALUE" ] || ! awk -v v="$R_VALUE" 'BEGIN { exit !(v > 0) }'; then
		R_STATUS=err R_VALUE='' R_NOTE="client exit $rc, server exit $src${R_NOTE:+: $R_NOTE}"
	elif [ "$src" -eq 125 ]; then
		R_STATUS=warn R_NOTE="$STOP_NOTE${R_NOTE:+: $R_NOTE}"
	elif [ "$src" -ne 0 ] || [ -n "$R_NOTE" ]; then
		R_STATUS=warn R_NOTE="server exit $src${R_NOTE:+: $R_NOTE}"
	else
		R_STATUS=ok
	fi
}

# run_times T0 T1 T2: R_TIMES, a run's phases (server up, client, server
# exit) from their start times and now.
run_times() {
	R_TIMES=$(awk -v a="$1" -v b="$2" -v c="$3" -v d="$EPOCHREALTIME" \
		'BEGIN { printf "up %.1f + run %.1f + exit %.1f s", b - a, c - b, d - c }')
}

# perf_once STACK CELL TAG: one perftest run over rdma_cm, both ends in
# this guest; sets R_STATUS, R_VALUE, R_EXTRA, R_NOTE, R_TIMES.
perf_once() {
	local stack=$1 tag=$3 rc src c0 c1 t0 t1 t2
	PORT=$((PORT + 1))
	t0=$EPOCHREALTIME
	perf_server "$stack" "$tag" || return
	t1=$EPOCHREALTIME c0=$(kcpu)
	perf_client "$stack" "$tag"
	rc=$?
	t2=$EPOCHREALTIME c1=$(kcpu)
	stop_server "$SPID"
	src=$?
	run_times "$t0" "$t1" "$t2"
	perf_result "$LOGS/$tag.cli" "$LOGS/$tag.srv" "$rc" "$src" $((c1 - c0))
}

# perf_run STACK CELL TAG: perf_once, repeated (at most RETRIES more
# times) while perftest's own clock calibration fails: it fits rdtsc against
# gettimeofday, and when a busy host preempts the guest's vCPUs the fit is
# poor ("Correlation coefficient r^2: ... < 0.9"), the CPU MHz is taken as
# 0 and the result row reads 0.00 (bandwidth) or inf (latency).  That says
# nothing about the stack, so the run is repeated, and the note says so.
# PERF_ONCE names the function of one try (default perf_once; the pair's
# runs each try across the two guests); its outputs are LOGS/TAG.cli and
# LOGS/TAG.srv.
RETRIES=${KIWI_BENCH_RETRIES:-2}
perf_run() {
	local stack=$1 cell=$2 tag=$3 try bad=0
	# Markers are asked for in the MPA exchange: on for this run only.
	[ "$stack" != kmk ] || echo 1 >/sys/module/kiwi/parameters/mpa_markers
	for ((try = 0; try <= RETRIES; try++)); do
		"${PERF_ONCE:-perf_once}" "$stack" "$cell" "$tag"
		grep -qs 'Correlation coefficient' "$LOGS/$tag.cli" "$LOGS/$tag.srv" || break
		bad=$((bad + 1))
		mv "$LOGS/$tag.cli" "$LOGS/$tag.cli.calib$bad"
		mv "$LOGS/$tag.srv" "$LOGS/$tag.srv.calib$bad"
	done
	echo 0 >/sys/module/kiwi/parameters/mpa_markers
	if [ $bad -gt "$RETRIES" ]; then
		R_STATUS=err R_VALUE=''
		R_NOTE="perftest clock calibration failed $bad times (r^2 < 0.9: host too busy)"
	elif [ $bad -gt 0 ]; then
		R_NOTE="${R_NOTE:+$R_NOTE; }repeated $bad time(s): perftest clock calibration failed (host busy)"
	fi
}

# TCP socket buffers like kiwi's: it sets a connection's receive buffer
# to half of tcp_rmem's maximum (iperf3 -w sets both buffers).
TCP_WIN=$(( $(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_rmem) / 2 ))

# tcp_bw_server TAG, tcp_bw_client TAG, tcp_bw_result CLI RC SRC TICKS:
# iperf3 -Z (sendfile) -t DURATION, the cell's write size and QPs as
# streams; the receiver's rate is the value, the sender's an extra.
tcp_bw_server() {
	server_up tcp "iperf3 server did not start" "$1" "${SNS[tcp]}" \
		iperf3 -s -1 -B "${SADDR[tcp]}" -p "$PORT"
}

tcp_bw_client() {
	in_ns "${CNS[tcp]}" timeout -k 5 "$RUN_TIMEOUT" taskset -c $CCPU iperf3 -J -Z \
		-c "${SADDR[tcp]}" -p "$PORT" -l "$C_SIZE" -t "$DURATION" -P "$C_QPS" \
		-w "$TCP_WIN" >"$LOGS/$1.cli" 2>&1
}

tcp_bw_result() {
	local cli=$1 rc=$2 src=$3
	read -r R_VALUE R_EXTRA < <(python3 - "$cli" "$4" <<-'EOF'
		import json, sys
		try:
		    e = json.load(open(sys.argv[1]))["end"]
		    r, s = e["sum_received"], e["sum_sent"]
		    mib = r["bits_per_second"] / 8 / 1048576
		    gib = r["bytes"] / 1073741824
		    print(f"{mib:.2f} sent_mibs={s['bits_per_second'] / 8 / 1048576:.2f},"
		          f"kcpu_s_per_gib={int(sys.argv[2]) / 100 / gib:.3f}")
		except Exception:
		    print("")
		EOF
	)
	R_NOTE=
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		R_STATUS=err R_VALUE='' R_NOTE="timeout after ${RUN_TIMEOUT}s"
	elif [ "$rc" -ne 0 ] || [ -z "$R_VALUE" ]; then
		R_STATUS=err R_VALUE='' R_NOTE="iperf3 exit $rc, server exit $src: $(grep -h '"error"' "$cli" | head -1 | tr '|' '/')"
	elif [ "$src" -ne 0 ]; then
		R_STATUS=warn R_NOTE="iperf3 server exit $src"
	else
		R_STATUS=ok
	fi
}

# tcp_bw TAG: iperf3, both ends in this guest.
tcp_bw() {
	local tag=$1 rc src c0 c1 t0 t1 t2
	PORT=$((PORT + 1))
	t0=$EPOCHREALTIME
	tcp_bw_server "$tag" || return
	t1=$EPOCHREALTIME c0=$(kcpu)
	tcp_bw_client "$tag"
	rc=$?
	t2=$EPOCHREALTIME c1=$(kcpu)
	stop_server "$SPID"
	src=$?
	run_times "$t0" "$t1" "$t2"
	tcp_bw_result "$LOGS/$tag.cli" "$rc" "$src" $((c1 - c0))
}

# tcp_lat_server TAG, tcp_lat_client TAG, tcp_lat_result CLI RC:
# sockperf ping-pong --tcp -m 16 for DURATION seconds (sockperf 3.7 has
# no message count; it runs after a warm-up); the value is the median of
# half the round trip (sockperf's "percentile 50.000"), with the minimum
# and the 99th/99.9th percentiles as extras.  The server runs until
# killed (tcp_lat_stop).
tcp_lat_server() {
	local srv=$LOGS/$1.srv
	bg_in_ns "${SNS[tcp]}" taskset -c $SCPU \
		sockperf server --tcp -i "${SADDR[tcp]}" -p "$PORT" >"$srv" 2>&1
	SPID=$!
	if ! wait_listen "$SPID" tcp "$PORT"; then
		kill "$SPID" 2>/dev/null; wait "$SPID"
		R_STATUS=err R_VALUE='' R_EXTRA='' R_NOTE="sockperf server did not start: $(tool_notes "$srv")"
		return 1
	fi
}

tcp_lat_client() {
	in_ns "${CNS[tcp]}" timeout -k 5 "$RUN_TIMEOUT" taskset -c $CCPU sockperf ping-pong \
		--tcp -i "${SADDR[tcp]}" -p "$PORT" -m 16 -t "$DURATION" >"$LOGS/$1.cli" 2>&1
}

tcp_lat_stop() {
	kill "$SPID" 2>/dev/null
	wait "$SPID"
}

tcp_lat_result() {
	local cli=$1 rc=$2
	R_VALUE=$(awk '/percentile 50.000 =/ { print $NF }' "$cli")
	R_EXTRA=$(awk '/<MIN> observation =/ { m = $NF } /percentile 99.000 =/ { a = $NF }
		/percentile 99.900 =/ { b = $NF } /avg-latency=/ { sub(/.*avg-latency=/, ""); sub(/ .*/, ""); v = $0 }
		END { printf "tmin=%s,tavg=%s,p99=%s,p999=%s", m, v, a, b }' "$cli")
	R_NOTE=
	if [ "$rc" -ne 0 ] || [ -z "$R_VALUE" ]; then
		R_STATUS=err R_VALUE='' R_NOTE="sockperf exit $rc: $(tool_notes "$cli")"
	else
		R_STATUS=ok
	fi
}

# tcp_lat TAG: sockperf, both ends in this guest.
tcp_lat() {
	local tag=$1 rc t0 t1 t2
	PORT=$((PORT + 1))
	t0=$EPOCHREALTIME
	tcp_lat_server "$tag" || return
	t1=$EPOCHREALTIME
	tcp_lat_client "$tag"
	rc=$?
	t2=$EPOCHREALTIME
	tcp_lat_stop
	run_times "$t0" "$t1" "$t2"
	tcp_lat_result "$LOGS/$tag.cli" "$rc"
}

# run_line CONFIG MTU REP REPS CELL STACK UNIT SECS TAG: the run's
# "@bench run|..." line and its progress line (with the tools' last lines
# if it failed), from R_*; NFAIL counts failed runs.
run_line() {
	local config=$1 mtu=$2 rep=$3 reps=$4 cell=$5 stack=$6 unit=$7 secs=$8 tag=$9
	[ "$R_STATUS" = err ] && NFAIL=$((NFAIL + 1))
	emit run "$config" "$mtu" "$rep" "$cell" "$stack" "$R_STATUS" \
		"$R_VALUE" "$unit" "$secs" "$R_EXTRA" "$R_NOTE"
	[ -z "$R_TIMES" ] || echo "$tag: $R_TIMES" >>"$LOGS/times"
	printf '%-12s MTU %s rep %d/%d %-18s %-4s %10s %-5s %5s s %s\n' \
		"$config" "$mtu" "$rep" "$reps" "$cell" "$stack" \
		"${R_VALUE:-err}" "$unit" "$secs" \
		"$([ "$R_STATUS" = ok ] || echo "$R_STATUS: $R_NOTE")"
	if [ "$R_STATUS" = err ] && [ -f "$LOGS/$tag.cli" ]; then
		tail -n 4 "$LOGS/$tag.cli" | sed -e 's/^/    | client: /'
		tail -n 2 "$LOGS/$tag.srv" 2>/dev/null | sed -e 's/^/    | server: /'
	fi
}
