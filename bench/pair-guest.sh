#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/pair-guest.sh -- the guests' half of `make bench-2host`
# (scripts/bench-2host.sh), run by selftests/vm/pair.sh in both guests: the
# cells of make bench between two machines, b serving, a connecting,
# over the virtual NIC between them (eth0: a 10.93.0.1, b 10.93.0.2).
#
#	selftests/vm/pair.sh --module-a kmod/kiwi.ko --module-a build/siw/siw.ko \
#		--module-b kmod/kiwi.ko --module-b build/siw/siw.ko \
#		-- bench/pair-guest.sh
#
# Configuration "standard_2host": make bench's "standard" across the two
# guests: kiwi <-> kiwi (large_fpdu=N crc=N in both), siw <-> siw (as
# built), TCP (iperf3 -Z, sockperf ping-pong).  Only one RDMA device is
# on eth0 at a time (kiwi0 or siw0, switched between runs as needed):
# two iWARP devices on one netdev would both listen on a server's port.
# For each MTU (KIWI_BENCH_MTUS), repetition (KIWI_BENCH_REPS) and cell
# (KIWI_BENCH_CELLS), every stack runs, their order rotated by one per
# repetition, as scripts/bench-guest.sh does; the runs themselves are
# bench/cells.sh's, with the server in b and the client in a.
#
# Each run meets in the shared directory (pairlib.sh's pair_put and
# pair_get; N counts the requests):
#   a: run.N   "KIND STACK CELL PORT TAG"   KIND perf, tcp_bw, tcp_lat,
#              mtu (CELL is then the MTU), or end
#   b: ready.N "ok" once its server listens, or "fail WHY"
#   a: done.N  the client's exit status, once it has ended
#   b: served.N "SERVER_STATUS KERNEL_TICKS" once its server has ended
#              (at most KIWI_BENCH_SERVER_GRACE s after done.N), its
#              output in b.srv.N beside it
# While a's client runs, b only waits for its server to end (or for
# done.N) without forking, so that b's CPU goes to the run.  Kernel CPU
# per GiB counts both guests: a's ticks during its client, b's from its
# server listening to its end.
#
# Output (a): progress lines and make bench's "@bench meta|..." and
# "@bench run|..." lines, then the tools' output as "@bench logs-begin",
# base64 of a tar.gz, "@bench logs-end".  b prints its own progress.
# Exit status 0 if every run produced a value, 1 otherwise.
#
# Environment: KIWI_BENCH_REPS (5), KIWI_BENCH_MTUS (9000),
# KIWI_BENCH_CELLS (write_bw_64k read_bw_64k send_bw_64k write_bw_4k
# write_lat_8 send_lat_8), KIWI_BENCH_STACKS, KIWI_BENCH_DURATION (3),
# KIWI_BENCH_ITERS_LAT (5000), KIWI_BENCH_RUN_TIMEOUT (90), and
# bench/cells.sh's; KIWI_PAIR_* from selftests/vm/pair.sh.
set -u
export LC_ALL=C
# One compound command, read whole before it runs (as bench-guest.sh).
{

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bench/cells.sh
. "$ROOT/bench/cells.sh"
# shellcheck source=selftests/guest/pairlib.sh
. "$ROOT/selftests/guest/pairlib.sh"

CONFIG=standard_2host
REPS=${KIWI_BENCH_REPS:-5}
MTUS=${KIWI_BENCH_MTUS:-9000}
CELLS=$(cells_expand "${KIWI_BENCH_CELLS:-write_bw_64k read_bw_64k send_bw_64k write_bw_4k write_lat_8 send_lat_8}")
DURATION=${KIWI_BENCH_DURATION:-3}
IT_LAT=${KIWI_BENCH_ITERS_LAT:-5000}
RUN_TIMEOUT=${KIWI_BENCH_RUN_TIMEOUT:-90}
# One vCPU each: client and server each have their guest's only one.
CCPU=0 SCPU=0
LOGS=/tmp/kiwi-bench-logs
mkdir -p "$LOGS"
NFAIL=0
PORT=20000
# b's address: where every server listens.
BADDR=10.93.0.2
declare -A SNS=([kiwi]="" [siw]="" [tcp]="")
declare -A CNS=([kiwi]="" [siw]="" [tcp]="")
declare -A SDEV=([kiwi]=kiwi0 [siw]=siw0)
declare -A CDEV=([kiwi]=kiwi0 [siw]=siw0)
declare -A SADDR=([kiwi]=$BADDR [siw]=$BADDR [tcp]=$BADDR)
# The longest a waits for b, and b for a's next request.
WAIT=$((2 * RUN_TIMEOUT + 120))

emit() { local IFS='|'; echo "@bench $*"; }
say() { echo "$*"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# stack_use STACK: the stack's RDMA device, and no other, on eth0.
DEV_NOW=
stack_use() {
	local want
	case $1 in kiwi) want=kiwi0 ;; siw) want=siw0 ;; *) return 0 ;; esac
	[ "$want" = "$DEV_NOW" ] && return 0
	[ -z "$DEV_NOW" ] || rdma link del "$DEV_NOW" || return 1
	DEV_NOW=
	rdma link add "$want" type "${want%0}" netdev "$IFACE" || return 1
	DEV_NOW=$want
}

setup() {
	nic_up "${MTUS%% *}" || return 1
	peer_reachable 120 || { echo "the other guest does not answer on $IFACE"; return 1; }
	modprobe kiwi && modprobe siw || return 1
	echo N >/sys/module/kiwi/parameters/crc &&
	echo N >/sys/module/kiwi/parameters/large_fpdu || return 1
	# iperf3 -w asks for TCP_WIN; setsockopt caps it at the *mem_max.
	sysctl -qw net.core.rmem_max="$TCP_WIN" net.core.wmem_max="$TCP_WIN"
	stack_use kiwi
}

# ------------------------------------------------------------------ b --
# serve N KIND STACK CELL TAG: one request of a's.
serve() {
	local n=$1 kind=$2 stack=$3 cell=$4 tag=$5 c0 c1 src end up
	if [ "$kind" = mtu ]; then
		if ip link set "$IFACE" mtu "$cell"; then pair_put "ready.$n" ok
		else pair_put "ready.$n" "fail cannot set MTU $cell"; fi
		return
	fi
	if ! stack_use "$stack" >"$LOGS/$tag.use" 2>&1; then
		pair_put "ready.$n" "fail cannot bring up $stack: $(tr '\n|' ' /' <"$LOGS/$tag.use")"
		return
	fi
	cell_parse "$cell" || { pair_put "ready.$n" "fail unknown cell $cell"; return; }
	# Each *_server sets R_NOTE and returns false if not listening.
	up=1
	if [ "$kind" = perf ]; then perf_server "$stack" "$tag" || up=0
	else "${kind}_server" "$tag" || up=0; fi
	if [ $up = 0 ]; then
		pair_put "ready.$n" "fail $R_NOTE"
		return
	fi
	c0=$(kcpu)
	pair_put "ready.$n" ok
	# Until the server ends (perftest, iperf3 -1) or a's client has.
	end=$((SECONDS + RUN_TIMEOUT + 30))
	while kill -0 "$SPID" 2>/dev/null && [ ! -e "$PD/a.done.$n" ] && [ $SECONDS -lt $end ]; do
		nap 0.5
	done
	if [ "$kind" = tcp_lat ]; then
		tcp_lat_stop
		src=0
	else
		stop_server "$SPID"
		src=$?
	fi
	c1=$(kcpu)
	cp "$LOGS/$tag.srv" "$PD/b.srv.$n" 2>/dev/null
	pair_put "served.$n" "$src $((c1 - c0)) ${STOP_NOTE:-}"
}

b_main() {
	local n=0 req kind stack cell port tag
	while :; do
		n=$((n + 1))
		if ! req=$(pair_get "run.$n" "$WAIT"); then
			say "bench-2host b: no request $n from a in ${WAIT}s: giving up"
			return 1
		fi
		read -r kind stack cell port tag <<<"$req"
		[ "$kind" = end ] && break
		PORT=$port
		serve "$n" "$kind" "$stack" "$cell" "$tag"
		say "b: $n $req"
	done
	say "bench-2host b: $((n - 1)) requests served"
}

# ------------------------------------------------------------------ a --
REQ=0
# ask KIND STACK CELL TAG: a request to b; REPLY is b's "ready" answer.
ask() {
	REQ=$((REQ + 1))
	pair_put "run.$REQ" "$1 $2 $3 $PORT $4"
	REPLY=$(pair_get "ready.$REQ" "$WAIT") || REPLY="fail no answer from b in ${WAIT}s"
}

# pair_once KIND STACK TAG: one run of the parsed cell, server in b, client
# here; sets R_* as perf_once, tcp_bw and tcp_lat do.
pair_once() {
	local kind=$1 stack=$2 tag=$3 rc src ticks t0 t1 t2 c0 c1 ans
	PORT=$((PORT + 1))
	rm -f "$LOGS/$tag.cli" "$LOGS/$tag.srv"
	t0=$EPOCHREALTIME
	if ! stack_use "$stack" >"$LOGS/$tag.use" 2>&1; then
		R_STATUS=err R_VALUE='' R_EXTRA='' R_NOTE="cannot bring up $stack in a: $(tr '\n|' ' /' <"$LOGS/$tag.use")"
		return
	fi
	ask "$kind" "$stack" "$CELL" "$tag"
	if [ "$REPLY" != ok ]; then
		R_STATUS=err R_VALUE='' R_EXTRA='' R_NOTE="b: ${REPLY#fail }"
		return
	fi
	t1=$EPOCHREALTIME c0=$(kcpu)
	if [ "$kind" = perf ]; then perf_client "$stack" "$tag"; else "${kind}_client" "$tag"; fi
	rc=$?
	t2=$EPOCHREALTIME c1=$(kcpu)
	pair_put "done.$REQ" "$rc"
	ans=$(pair_get "served.$REQ" $((SERVER_GRACE + 60))) ||
		ans="125 0 no word from b's server $((SERVER_GRACE + 60))s after the client ended"
	read -r src ticks STOP_NOTE <<<"$ans"
	cp "$PD/b.srv.$REQ" "$LOGS/$tag.srv" 2>/dev/null || : >"$LOGS/$tag.srv"
	run_times "$t0" "$t1" "$t2"
	ticks=$((c1 - c0 + ${ticks:-0}))
	case $kind in
	perf) perf_result "$LOGS/$tag.cli" "$LOGS/$tag.srv" "$rc" "$src" "$ticks" ;;
	tcp_bw) tcp_bw_result "$LOGS/$tag.cli" "$rc" "$src" "$ticks" ;;
	tcp_lat) tcp_lat_result "$LOGS/$tag.cli" "$rc" ;;
	esac
}

# perf_run's one try (PERF_ONCE): STACK CELL TAG.
pair_perf_once() { pair_once perf "$1" "$3"; }
PERF_ONCE=pair_perf_once

a_main() {
	local mtu rep n i order stacks cell stack unit tag key t secs
	stacks=(kiwi siw tcp)
	[ -z "${KIWI_BENCH_STACKS:-}" ] || read -r -a stacks < <(for s in "${stacks[@]}"; do
		case " $KIWI_BENCH_STACKS " in *" $s "*) echo "$s" ;; esac; done | tr '\n' ' ')
	emit meta "config_$CONFIG" "two guests (selftests/vm/pair.sh), one NIC each: standard wire, CRC off: kiwi large_fpdu=N crc=N; siw as built (no CRC, no GSO); TCP ceiling and floor"
	emit meta "stacks_$CONFIG" "${stacks[*]}"
	say "==== configuration $CONFIG: kiwi, siw, TCP between the guests ===="
	declare -A DEAD
	for mtu in $MTUS; do
		ask mtu - "$mtu" "mtu-$mtu"
		if [ "$REPLY" != ok ] || ! ip link set "$IFACE" mtu "$mtu"; then
			say "bench-2host: cannot set MTU $mtu (b: $REPLY)"
			NFAIL=$((NFAIL + 1))
			continue
		fi
		nap 0.5
		emit meta "active_mtu_2host_$mtu" "$(nic_info)"
		say "== $CONFIG, MTU $mtu ($(nic_info)) =="
		for ((rep = 1; rep <= REPS; rep++)); do
			n=${#stacks[@]} order=()
			for ((i = 0; i < n; i++)); do order+=("${stacks[$(((i + rep - 1) % n))]}"); done
			for cell in $CELLS; do
				if ! cell_parse "$cell"; then
					[ "$rep" = 1 ] && say "bench-2host: unknown cell '$cell'"
					emit run "$CONFIG" "$mtu" "$rep" "$cell" - err "" "" 0 "" "unknown cell"
					NFAIL=$((NFAIL + 1))
					continue
				fi
				CELL=$cell
				for stack in "${order[@]}"; do
					[ "$stack" != tcp ] || tcp_cell || continue
					unit=MiB/s
					[ "$C_KIND" = bw ] || unit=us
					tag=$CONFIG-$mtu-$cell-$stack-$rep
					key=$stack/$cell/$mtu
					t=$EPOCHREALTIME R_TIMES='' R_EXTRA=''
					if [ -n "${DEAD[$key]:-}" ]; then
						R_STATUS=err R_VALUE='' R_NOTE="not run: timed out in ${DEAD[$key]}"
					elif [ "$stack" = tcp ] && [ "$C_KIND" = bw ]; then
						pair_once tcp_bw tcp "$tag"
					elif [ "$stack" = tcp ]; then
						pair_once tcp_lat tcp "$tag"
					else
						perf_run "$stack" "$cell" "$tag"
					fi
					secs=$(since "$t")
					case $R_NOTE in timeout*) DEAD[$key]="rep $rep" ;; esac
					run_line "$CONFIG" "$mtu" "$rep" "$REPS" "$cell" "$stack" \
						"$unit" "$secs" "$tag"
				done
			done
		done
	done
	REQ=$((REQ + 1))
	pair_put "run.$REQ" "end - - 0 -"
}

# --------------------------------------------------------------- main --
T0=$EPOCHREALTIME
say "bench-2host $ROLE: $(uname -r), $(nproc) CPU, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
if ! pair_mount; then
	say "bench-2host $ROLE: the meeting place (9p tag pair) did not mount"
	exit 1
fi
if ! setup >"$LOGS/setup.log" 2>&1; then
	say "bench-2host $ROLE: setup failed:"
	sed -e 's/^/    | /' "$LOGS/setup.log"
	pair_put up "fail"
	[ "$ROLE" = b ] || emit meta setup_2host failed
	exit 1
fi
pair_put up "$(uname -r); $(nic_info)"
if ! peer=$(pair_get up 300) || [ "$peer" = fail ]; then
	say "bench-2host $ROLE: the other guest's setup failed (${peer:-no answer})"
	[ "$ROLE" = b ] || emit meta setup_2host failed
	exit 1
fi
say "bench-2host $ROLE: up ($(since "$T0") s): $(nic_info); the other: $peer"

if [ "$ROLE" = b ]; then
	b_main
	exit
fi

emit meta pair_kernels "a $(uname -r), b ${peer%%;*}"
emit meta pair_nic "a: $(nic_info); b: ${peer#*; }"
emit meta pair_guests "$(nproc) vCPU and $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo) each (a: clients, b: servers)"
emit meta pair_crc32c_driver "$(awk '/^name *: crc32c$/ { n = 1 } n && /^driver/ { print $3; exit }' /proc/crypto)"
emit meta pair_kiwi_params "$(cd /sys/module/kiwi/parameters && grep -H . * 2>/dev/null | sed 's/:/=/' | tr '\n' ' ')"
emit meta pair_tcp_window "$TCP_WIN (iperf3 -w)"
a_main
emit meta pair_guest_seconds "$(since "$T0")"
emit meta pair_failed_runs "$NFAIL"
echo "@bench logs-begin"
tar -C "$LOGS" -czf - . | base64 -w 76
echo "@bench logs-end"
say "bench-2host a: done in $(since "$T0") s, $NFAIL failed runs"
[ $NFAIL -eq 0 ]
exit
}
