#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-guest.sh -- the guest half of `make bench` (scripts/bench.sh).
# Runs inside the test guest, booted once:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko --module build/siw/siw.ko \
#		-- scripts/bench-guest.sh
#
# Devices, each pair on a veth pair of its own between two namespaces:
#   kiwi  kiwi0 (kwa, kv0 10.91.0.1) -> kiwi1 (kwb, kv1 10.91.0.2)
#   siw   siw0  (swa, sv0 10.92.0.1) -> siw1  (swb, sv1 10.92.0.2)
#   rxe   rxe0 -> rxe1 on rv0/rv1 in the root namespace, 10.93.0.x (rxe
#         cannot cross namespaces on 6.1: this is its loopback path)
#   k2s   kiwi2 (mxa, 10.94.0.1) as client -> siw2 (mxb, 10.94.0.2) as server
#   s2k   siw3  (nxa, 10.95.0.1) as client -> kiwi3 (nxb, 10.95.0.2) as server
#   tcp   over kv0/kv1: iperf3 -Z (sendfile) for bandwidth, sockperf
#         ping-pong for latency (half the round trip, as sockperf reports)
#
# A configuration sets kiwi's module parameters (crc, large_fpdu), loads
# one build of siw (as Linux builds it, with MPA CRC required, or with
# GSO tried: scripts/bench.sh builds them) and names the stacks it compares.
# For each configuration, MTU and repetition, every cell runs on every
# stack of the configuration, the order of the stacks rotated by one per
# repetition, so that drifts of the host hit every stack alike and every
# repetition gives a paired ratio.  Client and server are pinned to
# different vCPUs (taskset), for every stack alike.
#
# Cells: TOOL_KIND_SIZE[_qN][_bi]: write/read/send, bw/lat, 8 64 4k 64k
# 1m (bytes), N QPs (perftest -q; iperf3 -P), bidirectional (perftest -b).
# Bandwidth runs for KIWI_BENCH_DURATION seconds (perftest -D, iperf3 -t):
# the same time for every stack.  ib_send_bw's figure is the receiver's
# (its client row is what it handed to its own device).  Latency: -n
# KIWI_BENCH_ITERS_LAT, t_typical (perftest's median) with t_min, 99% and
# 99.9% in the run's extras.  Each bandwidth run also reports the guest's
# kernel CPU time (system + irq + softirq, all vCPUs, /proc/stat) per GiB
# moved; perftest's user-space busy polling is left out, being the same
# code for every stack.  KIWI_BENCH_ALLOCS=1 adds, per configuration and
# MTU, two runs of each bandwidth cell (N and 5N messages) under `perf
# stat -a -e kmem:kmalloc,kmem:kmem_cache_alloc`: slab allocations per
# message, set-up and teardown cancelled out.
#
# Output: progress lines, and lines for scripts/bench.sh starting "@bench ":
#   @bench meta|KEY|VALUE
#   @bench run|CONFIG|MTU|REP|CELL|STACK|STATUS|VALUE|UNIT|SECONDS|EXTRA|NOTE
#	STATUS ok, warn (a value, but the tools complained: NOTE says what),
#	err (no value: NOTE says why); EXTRA is key=value,... (may be empty)
#   @bench allocs|CONFIG|MTU|CELL|STACK|ALL|OWN|MESSAGES (slab allocations
#	in the guest, and those called from the stack's own module)
#   @bench qpmem|STACK|<qpmem's own key=value line>
#   @bench connmem|STACK|N|SLAB_KIB|VMALLOC_KIB|SLAB2_KIB|VMALLOC2_KIB|USED_KIB|USED2_KIB
#	(growth with N connected QP pairs, before any data moved, and
#	after every pair has moved data, still connected (2; empty if not
#	measured); USED: MemTotal - MemFree, all memory in use)
#   @bench logs-begin / base64 of a tar.gz of every tool's output / logs-end
# Exit status 0 if every run produced a value, 1 otherwise.
#
# Environment: see scripts/bench.sh (KIWI_BENCH_CONFIGS, _REPS, _MTUS,
# _CELLS, _DURATION, _ITERS_LAT, _RUN_TIMEOUT, _QPMEM*, _ALLOCS, _QUICK;
# KIWI_BENCH_SIW_CRC_KO and _SIW_GSO_KO name the other siw builds).
set -u
export LC_ALL=C
# The whole script is one compound command, which bash reads completely
# before running it: editing this file during a run cannot derail the run.
{

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# One run of a cell on a stack (tools, parsing, the run line) and the
# cell names: shared with make bench-2host's guests (bench/pair-guest.sh).
# shellcheck source=bench/cells.sh
. "$ROOT/bench/cells.sh"
QUICK=${KIWI_BENCH_QUICK:-}
[ "$QUICK" = 0 ] && QUICK=
if [ -n "$QUICK" ]; then
	REPS=${KIWI_BENCH_REPS:-2}
	MTUS=${KIWI_BENCH_MTUS:-9000}
	CONFIGS=${KIWI_BENCH_CONFIGS:-"standard mixed"}
	CELLS=${KIWI_BENCH_CELLS:-"write_bw_64k send_bw_64k write_lat_8"}
	QPMEM_QPS=${KIWI_BENCH_QPMEM_QPS:-200}
	DURATION=${KIWI_BENCH_DURATION:-1}
	IT_LAT=${KIWI_BENCH_ITERS_LAT:-1000}
else
	REPS=${KIWI_BENCH_REPS:-10}
	MTUS=${KIWI_BENCH_MTUS:-"9000 1500"}
	CONFIGS=${KIWI_BENCH_CONFIGS:-"standard standard_crc mixed"}
	CELLS=${KIWI_BENCH_CELLS:-"write_bw_4k write_bw_64k read_bw_64k send_bw_64k write_bw_64k_q4 send_lat_8 write_lat_8 read_lat_8"}
	QPMEM_QPS=${KIWI_BENCH_QPMEM_QPS:-1000}
	DURATION=${KIWI_BENCH_DURATION:-3}
	IT_LAT=${KIWI_BENCH_ITERS_LAT:-5000}
fi
CELLS=$(cells_expand "$CELLS")
RUN_TIMEOUT=${KIWI_BENCH_RUN_TIMEOUT:-90}
QPMEM_WRS=${KIWI_BENCH_QPMEM_WRS:-1024}
QPMEM=${KIWI_BENCH_QPMEM:-$ROOT/build/bench/qpmem}
SIW_CRC_KO=${KIWI_BENCH_SIW_CRC_KO:-$ROOT/build/bench/siw-crc/siw.ko}
SIW_GSO_KO=${KIWI_BENCH_SIW_GSO_KO:-$ROOT/build/bench/siw-gso/siw.ko}
ALLOCS=${KIWI_BENCH_ALLOCS:-0}
# Client on vCPU 0, server on the last one.
NCPU=$(nproc)
CCPU=0 SCPU=$((NCPU - 1))

LOGS=/tmp/kiwi-bench-logs
mkdir -p "$LOGS"
NFAIL=0
PORT=20000

emit() { local IFS='|'; echo "@bench $*"; }
say() { echo "$*"; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# ----------------------------------------------------------- stacks --
# Server namespace, client namespace ("" = root), server device, client
# device, server address.
# kmk is kiwi <-> kiwi again, with MPA markers both ways (mpa_markers=1
# for its runs only).
declare -A SNS=([kiwi]=kwb [kmk]=kwb [siw]=swb [rxe]="" [k2s]=mxb [s2k]=nxb [tcp]=kwb)
declare -A CNS=([kiwi]=kwa [kmk]=kwa [siw]=swa [rxe]="" [k2s]=mxa [s2k]=nxa [tcp]=kwa)
declare -A SDEV=([kiwi]=kiwi1 [kmk]=kiwi1 [siw]=siw1 [rxe]=rxe1 [k2s]=siw2 [s2k]=kiwi3)
declare -A CDEV=([kiwi]=kiwi0 [kmk]=kiwi0 [siw]=siw0 [rxe]=rxe0 [k2s]=kiwi2 [s2k]=siw3)
declare -A SADDR=([kiwi]=10.91.0.2 [kmk]=10.91.0.2 [siw]=10.92.0.2 [rxe]=10.93.0.2
		  [k2s]=10.94.0.2 [s2k]=10.95.0.2 [tcp]=10.91.0.2)
# Every veth end (namespace:device:address) and the RDMA device on it.
VETHS="kwa:kv0:10.91.0.1 kwb:kv1:10.91.0.2 swa:sv0:10.92.0.1 swb:sv1:10.92.0.2
       :rv0:10.93.0.1 :rv1:10.93.0.2 mxa:mv0:10.94.0.1 mxb:mv1:10.94.0.2
       nxa:nv0:10.95.0.1 nxb:nv1:10.95.0.2"
KIWI_LINKS="kwa:kiwi0:kv0 kwb:kiwi1:kv1 mxa:kiwi2:mv0 nxb:kiwi3:nv1"
SIW_LINKS="swa:siw0:sv0 swb:siw1:sv1 mxb:siw2:mv1 nxa:siw3:nv0"

links_add() {	# links_add TYPE "ns:dev:netdev ...": rdma link add each
	local l ns dev nd
	for l in $2; do
		IFS=: read -r ns dev nd <<<"$l"
		in_ns "$ns" rdma link add "$dev" type "$1" netdev "$nd" || return 1
	done
}

links_del() {
	local l ns dev nd
	for l in $1; do
		IFS=: read -r ns dev nd <<<"$l"
		in_ns "$ns" rdma link del "$dev" 2>/dev/null
	done
	true
}

setup() {
	local v ns nd a pair
	modprobe kiwi && modprobe siw && modprobe rdma_rxe || return 1
	for ns in kwa kwb swa swb mxa mxb nxa nxb; do
		ip netns add $ns && ip -n $ns link set lo up || return 1
	done
	for pair in kv sv rv mv nv; do
		ip link add ${pair}0 type veth peer name ${pair}1 || return 1
	done
	for v in $VETHS; do
		IFS=: read -r ns nd a <<<"$v"
		[ -z "$ns" ] || ip link set "$nd" netns "$ns" || return 1
		in_ns "$ns" ip addr add "$a/24" dev "$nd" &&
		in_ns "$ns" ip link set "$nd" up || return 1
	done
	# iperf3 -w asks for TCP_WIN; setsockopt caps it at the *mem_max.
	for ns in "" kwa kwb; do
		in_ns "$ns" sysctl -qw net.core.rmem_max="$TCP_WIN" net.core.wmem_max="$TCP_WIN" 2>/dev/null
	done
	links_add kiwi "$KIWI_LINKS" && links_add siw "$SIW_LINKS" &&
	rdma link add rxe0 type rxe netdev rv0 &&
	rdma link add rxe1 type rxe netdev rv1
}

# siw_use BUILD: plain (as Linux builds it: --module, modprobe), crc
# (MPA CRC required) or gso (try_gso): siw reloaded, its links re-added.
SIW_NOW=plain
siw_use() {
	local ko
	[ "$1" = "$SIW_NOW" ] && return 0
	case $1 in plain) ko= ;; crc) ko=$SIW_CRC_KO ;; gso) ko=$SIW_GSO_KO ;;
	*) return 1 ;; esac
	links_del "$SIW_LINKS"
	rmmod siw || return 1
	if [ -z "$ko" ]; then modprobe siw; else insmod "$ko"; fi || return 1
	links_add siw "$SIW_LINKS" || return 1
	SIW_NOW=$1
}

# config NAME: sets CF_STACKS, CF_SIW, CF_CRC, CF_LARGE, CF_TEXT.  kiwi's
# crc and large_fpdu are read at connect time, so they are set per run.
KIWI_CRC0='' KIWI_LARGE0=''
config() {
	case $1 in
	shipped)	CF_STACKS="kiwi siw rxe" CF_SIW=plain CF_CRC=$KIWI_CRC0 CF_LARGE=$KIWI_LARGE0
			CF_TEXT="defaults as shipped: kiwi crc=$KIWI_CRC0 large_fpdu=$KIWI_LARGE0; siw as Linux builds it (no CRC, no GSO); rxe" ;;
	standard)	CF_STACKS="kiwi siw tcp" CF_SIW=plain CF_CRC=N CF_LARGE=N
			CF_TEXT="standard wire, CRC off: kiwi large_fpdu=N crc=N; siw as built (no CRC, no GSO); TCP ceiling and floor" ;;
	standard_crc)	CF_STACKS="kiwi siw" CF_SIW=crc CF_CRC=Y CF_LARGE=N
			CF_TEXT="standard wire, CRC on: kiwi large_fpdu=N crc=Y; siw with mpa_crc_required" ;;
	extended)	CF_STACKS="kiwi siw" CF_SIW=gso CF_CRC=N CF_LARGE=Y
			CF_TEXT="both extended, CRC off: kiwi large_fpdu=Y (32 KiB FPDUs) crc=N; siw with try_gso" ;;
	mixed)		CF_STACKS="siw k2s s2k" CF_SIW=plain CF_CRC=N CF_LARGE=N
			CF_TEXT="mixed pairs, CRC off: kiwi client -> siw server (k2s), siw client -> kiwi server (s2k), vs siw <-> siw" ;;
	mixed_crc)	CF_STACKS="siw k2s s2k" CF_SIW=crc CF_CRC=Y CF_LARGE=N
			CF_TEXT="mixed pairs, CRC on: k2s, s2k vs siw <-> siw, siw with mpa_crc_required" ;;
	markers)	CF_STACKS="kiwi kmk" CF_SIW=plain CF_CRC=Y CF_LARGE=N
			CF_TEXT="the cost of MPA markers: kiwi <-> kiwi, standard wire, CRC on, with markers both ways (kmk: mpa_markers=1) vs without" ;;
	*) return 1 ;;
	esac
	[ -z "${KIWI_BENCH_STACKS:-}" ] || CF_STACKS=$(for s in $CF_STACKS; do
		case " $KIWI_BENCH_STACKS " in *" $s "*) echo "$s" ;; esac; done | tr '\n' ' ')
}

config_apply() {
	echo "$CF_CRC" >/sys/module/kiwi/parameters/crc &&
	echo "$CF_LARGE" >/sys/module/kiwi/parameters/large_fpdu &&
	siw_use "$CF_SIW"
}

set_mtu() {	# set_mtu MTU: on every veth end
	local v ns nd a
	for v in $VETHS; do
		IFS=: read -r ns nd a <<<"$v"
		in_ns "$ns" ip link set "$nd" mtu "$1" || return 1
	done
	sleep 0.5
}

active_mtu() {	# active_mtu DEV: the RDMA port's active MTU
	ibv_devinfo -d "$1" 2>/dev/null | awk '/active_mtu:/ { print $2; exit }'
}

# mod_range MODULE: "START END" of a loaded module's memory (/proc/modules).
mod_range() {
	local a
	read -r -a a < <(awk -v m="$1" '$1 == m { print $6, $2 }' /proc/modules)
	[ ${#a[@]} -eq 2 ] && printf '0x%x 0x%x\n' "${a[0]}" $((a[0] + a[1]))
}

# allocs STACK CELL TAG: the kernel's slab allocations (perf stat -a,
# kmem:kmalloc + kmem:kmem_cache_alloc) during a bandwidth run of N and
# of 5N messages (perftest -n); the report takes the difference per
# message, which leaves connection set-up and teardown out.  Counted
# twice: everything in the guest (TCP's skbs included), and only the
# allocations called from the stack's own module (call_site in its text).
declare -A STACK_MOD=([kiwi]=kiwi [kmk]=kiwi [siw]=siw [rxe]=rdma_rxe)
allocs() {
	local stack=$1 cell=$2 tag=$3 tool srv cli n it args ns=() base lo hi f all own
	base=${KIWI_BENCH_ALLOC_ITERS:-1000}
	tool=ib_${C_OP}_${C_KIND}
	[ -z "${CNS[$stack]}" ] || ns=(ip netns exec "${CNS[$stack]}")
	read -r lo hi < <(mod_range "${STACK_MOD[$stack]}")
	f="call_site >= $lo && call_site < $hi"
	for it in "$base" $((5 * base)); do
		srv=$LOGS/$tag-$it.srv cli=$LOGS/$tag-$it.cli
		args="-s $C_SIZE -n $it"
		[ "$C_QPS" = 1 ] || args+=" -q $C_QPS"
		PORT=$((PORT + 1))
		# shellcheck disable=SC2086
		bg_in_ns "${SNS[$stack]}" timeout -k 5 $((RUN_TIMEOUT + 15)) taskset -c $SCPU \
			"$tool" -R -F -d "${SDEV[$stack]}" -p "$PORT" $args >"$srv" 2>&1
		local spid=$!
		wait_listen "$spid" rdma "$PORT" || { stop_server "$spid"; return 1; }
		# shellcheck disable=SC2086
		perf stat -a -x, -o "$LOGS/$tag-$it.perf" \
			-e kmem:kmalloc -e kmem:kmem_cache_alloc \
			-e kmem:kmalloc --filter "$f" -e kmem:kmem_cache_alloc --filter "$f" -- \
			"${ns[@]}" timeout -k 5 "$RUN_TIMEOUT" taskset -c $CCPU \
			"$tool" -R -F -d "${CDEV[$stack]}" -p "$PORT" $args "${SADDR[$stack]}" >"$cli" 2>&1
		stop_server "$spid"
		# Lines: count,,event,...: the first two are unfiltered.
		read -r all own < <(awk -F, '$3 ~ /^kmem:/ { c[n++] = $1 }
			END { printf "%d %d\n", c[0] + c[1], c[2] + c[3] }' "$LOGS/$tag-$it.perf")
		n=$((it * C_QPS))
		emit allocs "$CONFIG" "$mtu" "$cell" "$stack" "${all:-}" "${own:-}" "$n"
		say "allocs: $CONFIG MTU $mtu $cell $stack: $all slab allocations in the guest, $own from ${STACK_MOD[$stack]}, in a run of $n messages"
	done
}

# kmem_kib: memory in KiB, page cache dropped first: slab (/proc/meminfo
# Slab), vmalloc (the sum of /proc/vmallocinfo), and all memory in use
# (MemTotal - MemFree), which also counts pages a stack allocates
# directly (e.g. transmit pages) and TCP's page frags.
kmem_kib() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '$1 == "Slab:" { s = $2 } END { printf "%d ", s }' /proc/meminfo
	awk '{ v += $2 } END { printf "%d ", v / 1024 }' /proc/vmallocinfo
	awk '$1 == "MemTotal:" { t = $2 } $1 == "MemFree:" { f = $2 } END { printf "%d\n", t - f }' /proc/meminfo
}

# connmem STACK N: kernel memory of N connected QP pairs (both ends, their
# TCP sockets included), twice: build/selftests/manyqp connects them and
# waits before moving any data (first figure); then each pair exchanges a
# 256-byte SEND each way and both sides hold their connections open
# (second figure: what connected QPs keep once they have carried traffic,
# e.g. transmit buffers and socket memory).  Emits
# "connmem|STACK|N|SLAB_KIB|VMALLOC_KIB|SLAB2_KIB|VMALLOC2_KIB|USED_KIB|USED2_KIB".
connmem() {
	local stack=$1 n=$2 bin=$ROOT/build/selftests/manyqp go=$LOGS/go-$1 b h a spid cpid i
	local hold=$LOGS/hold-$1 cli=$LOGS/connmem-$stack.cli srv=$LOGS/connmem-$stack.srv
	[ -x "$bin" ] || { say "connmem: $bin missing"; return 1; }
	rm -f "$go" "$hold"
	read -r -a b < <(kmem_kib)
	PORT=$((PORT + 1))
	bg_in_ns "${SNS[$stack]}" timeout 600 "$bin" -s "${SADDR[$stack]}" "$PORT" "$n" "$hold" \
		>"$srv" 2>&1
	spid=$!
	wait_listen "$spid" tcp "$PORT" || { kill "$spid"; wait "$spid"; return 1; }
	bg_in_ns "${CNS[$stack]}" timeout 600 "$bin" -c "${SADDR[$stack]}" "$PORT" "$n" "$go" "$hold" \
		>"$cli" 2>&1
	cpid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -q "connected; waiting" "$cli" && break
		kill -0 "$cpid" 2>/dev/null || break
		nap 0.25
	done
	read -r -a h < <(kmem_kib)
	touch "$go"
	# Both sides done with their exchange and holding (at most 60 s).
	for ((i = 0; i < 240; i++)); do
		grep -q "holding until" "$cli" && grep -q "holding until" "$srv" && break
		{ kill -0 "$cpid" && kill -0 "$spid"; } 2>/dev/null || break
		nap 0.25
	done
	a=()
	grep -q "holding until" "$cli" && grep -q "holding until" "$srv" &&
		read -r -a a < <(kmem_kib)
	touch "$hold"
	wait "$cpid"
	wait "$spid"
	if ! grep -q "^# $n connected" "$cli"; then
		say "connmem: $stack: not all $n connected: $(tail -n 2 "$cli" | tr '\n' ' ')"
		return 1
	fi
	if [ ${#a[@]} = 3 ] && grep -q "^manyqp: client: $n connections, $n replies verified" "$cli"; then
		emit connmem "$stack" "$n" $((h[0] - b[0])) $((h[1] - b[1])) $((a[0] - b[0])) $((a[1] - b[1])) \
			$((h[2] - b[2])) $((a[2] - b[2]))
		say "connmem: $stack: $n connected QP pairs: slab +$((h[0] - b[0])) KiB, vmalloc +$((h[1] - b[1])) KiB, in use +$((h[2] - b[2])) KiB; after traffic: slab +$((a[0] - b[0])) KiB, vmalloc +$((a[1] - b[1])) KiB, in use +$((a[2] - b[2])) KiB"
	else
		emit connmem "$stack" "$n" $((h[0] - b[0])) $((h[1] - b[1])) "" "" $((h[2] - b[2])) ""
		say "connmem: $stack: $n connected QP pairs: slab +$((h[0] - b[0])) KiB, vmalloc +$((h[1] - b[1])) KiB, in use +$((h[2] - b[2])) KiB; after traffic: not measured ($(grep -h '^manyqp' "$cli" "$srv" | tr '\n' ' '))"
	fi
}

# ------------------------------------------------------------- main --
T0=$(now)
say "bench-guest: $(uname -r), $NCPU CPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
emit meta guest_kernel "$(uname -r)"
emit meta guest_cpus "$NCPU"
emit meta guest_cpu_model "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
emit meta guest_cpu_flags "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'sse4_2|erms|fsrm|avx2|avx512f|pclmulqdq' | tr '\n' ' ')"
emit meta clocksource "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
emit meta reps "$REPS"
emit meta mtus "$MTUS"
emit meta configs "$CONFIGS"
emit meta cells "$CELLS"
emit meta duration "$DURATION"
emit meta iters_lat "$IT_LAT"
emit meta pinning "client vCPU $CCPU, server vCPU $SCPU (taskset)"
emit meta quick "${QUICK:-0}"

if ! setup >"$LOGS/setup.log" 2>&1; then
	say "bench-guest: setup failed:"
	sed -e 's/^/    | /' "$LOGS/setup.log"
	emit meta setup failed
	exit 1
fi
KIWI_CRC0=$(cat /sys/module/kiwi/parameters/crc)
KIWI_LARGE0=$(cat /sys/module/kiwi/parameters/large_fpdu)
emit meta crc32c_driver "$(awk '/^name *: crc32c$/ { n = 1 } n && /^driver/ { print $3; exit }' /proc/crypto)"
emit meta kiwi_params "$(cd /sys/module/kiwi/parameters && grep -H . * 2>/dev/null | sed 's/:/=/' | tr '\n' ' ')"
emit meta siw_builds "plain=$(modinfo -F filename siw) crc=$SIW_CRC_KO gso=$SIW_GSO_KO"
emit meta perftest "$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
emit meta iperf3 "$(iperf3 --version 2>/dev/null | head -1)"
emit meta sockperf "$(dpkg-query -W -f='${Version}' sockperf 2>/dev/null)"
emit meta tcp_window "$TCP_WIN (iperf3 -w; tcp_rmem $(cat /proc/sys/net/ipv4/tcp_rmem | tr '\t' ' '))"
say "bench-guest: stacks up: $(rdma link | awk '{ print $2 }' | tr '\n' ' ')($(since "$T0") s)"

# Kernel memory per QP, before any traffic.  Each device gets the same
# request: QPMEM_QPS RC QPs with QPMEM_WRS send + receive WRs, one CQ each.
if [ "${KIWI_BENCH_QPMEM_QPS:-x}" != 0 ]; then
	for stack in kiwi siw rxe; do
		say "qpmem: ${CDEV[$stack]}: $QPMEM_QPS RC QPs x ($QPMEM_WRS send + $QPMEM_WRS recv WRs), one CQ of $((2 * QPMEM_WRS)) each"
		t=$(now)
		if [ ! -x "$QPMEM" ]; then
			emit qpmem "$stack" "qpmem dev=${CDEV[$stack]} phase=error msg=no $QPMEM"
			NFAIL=$((NFAIL + 1))
			continue
		fi
		"$QPMEM" -d "${CDEV[$stack]}" -n "$QPMEM_QPS" -w "$QPMEM_WRS" \
			>"$LOGS/qpmem-$stack.out" 2>"$LOGS/qpmem-$stack.err"
		rc=$?
		while read -r line; do
			emit qpmem "$stack" "$line"
			case $line in *phase=qp*|*phase=cq*) say "    ${line#qpmem }" ;; esac
		done <"$LOGS/qpmem-$stack.out"
		if [ $rc -ne 0 ]; then
			emit qpmem "$stack" "qpmem dev=${CDEV[$stack]} phase=error msg=exit $rc: $(head -c 200 "$LOGS/qpmem-$stack.err" | tr '\n|' ' /')"
			NFAIL=$((NFAIL + 1))
		fi
		say "    ($(since "$t") s)"
	done
fi

# Kernel memory per connected QP pair, kiwi (standard wire) next to siw.
CONNMEM=${KIWI_BENCH_CONNMEM:-$([ -n "$QUICK" ] && echo 50 || echo 200)}
if [ "$CONNMEM" != 0 ]; then
	echo N >/sys/module/kiwi/parameters/large_fpdu
	for stack in kiwi siw; do
		connmem "$stack" "$CONNMEM" || NFAIL=$((NFAIL + 1))
	done
	echo "$KIWI_LARGE0" >/sys/module/kiwi/parameters/large_fpdu
fi

declare -A DEAD	# CONFIG/STACK/CELL/MTU -> "rep N" of a timeout: later reps skipped
for CONFIG in $CONFIGS; do
	if ! config "$CONFIG"; then
		say "bench-guest: unknown configuration '$CONFIG'"
		emit meta "config_$CONFIG" "unknown"
		NFAIL=$((NFAIL + 1))
		continue
	fi
	if ! config_apply >"$LOGS/config-$CONFIG.log" 2>&1; then
		say "bench-guest: cannot apply configuration $CONFIG:"
		sed -e 's/^/    | /' "$LOGS/config-$CONFIG.log"
		emit meta "config_$CONFIG" "FAILED: $CF_TEXT"
		NFAIL=$((NFAIL + 1))
		continue
	fi
	read -r -a stacks <<<"$CF_STACKS"
	emit meta "config_$CONFIG" "$CF_TEXT"
	emit meta "stacks_$CONFIG" "${stacks[*]}"
	say "==== configuration $CONFIG: $CF_TEXT ===="
	for mtu in $MTUS; do
		if ! set_mtu "$mtu" >"$LOGS/mtu-$mtu.log" 2>&1; then
			say "bench-guest: cannot set MTU $mtu:"; sed -e 's/^/    | /' "$LOGS/mtu-$mtu.log"
			NFAIL=$((NFAIL + 1))
			continue
		fi
		amtu=
		for d in kiwi0 siw0 rxe0; do amtu+="$d=$(active_mtu $d) "; done
		emit meta "active_mtu_$mtu" "${amtu% }"
		say "== $CONFIG, MTU $mtu (RDMA active MTU: ${amtu% }) =="
		for ((rep = 1; rep <= REPS; rep++)); do
			# This repetition's order: rotated by one each time.
			n=${#stacks[@]} order=()
			for ((i = 0; i < n; i++)); do order+=("${stacks[$(((i + rep - 1) % n))]}"); done
			for cell in $CELLS; do
				if ! cell_parse "$cell"; then
					[ "$rep" = 1 ] && say "bench-guest: unknown cell '$cell'"
					emit run "$CONFIG" "$mtu" "$rep" "$cell" - err "" "" 0 "" "unknown cell"
					NFAIL=$((NFAIL + 1))
					continue
				fi
				for stack in "${order[@]}"; do
					[ "$stack" != tcp ] || tcp_cell || continue
					unit=MiB/s
					[ "$C_KIND" = bw ] || unit=us
					tag=$CONFIG-$mtu-$cell-$stack-$rep
					key=$CONFIG/$stack/$cell/$mtu
					t=$(now) R_TIMES='' R_EXTRA=''
					if [ -n "${DEAD[$key]:-}" ]; then
						R_STATUS=err R_VALUE='' R_NOTE="not run: timed out in ${DEAD[$key]}"
					elif [ "$stack" = tcp ] && [ "$C_KIND" = bw ]; then
						tcp_bw "$tag"
					elif [ "$stack" = tcp ]; then
						tcp_lat "$tag"
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
		[ "$ALLOCS" = 1 ] || continue
		for cell in $CELLS; do
			cell_parse "$cell" && [ "$C_KIND" = bw ] && [ "$C_BI" = 0 ] || continue
			for stack in "${stacks[@]}"; do
				[ -n "${STACK_MOD[$stack]:-}" ] || continue
				allocs "$stack" "$cell" "$CONFIG-$mtu-$cell-$stack-allocs" ||
					say "allocs: $CONFIG MTU $mtu $cell $stack: server not ready"
			done
		done
	done
done

# Kernel messages from the RDMA stacks (the host checks the whole dmesg).
dmesg >"$LOGS/dmesg" 2>&1
emit meta guest_seconds "$(since "$T0")"
emit meta failed_runs "$NFAIL"
echo "@bench logs-begin"
tar -C "$LOGS" -czf - . | base64 -w 76
echo "@bench logs-end"
say "bench-guest: done in $(since "$T0") s, $NFAIL failed runs"
[ $NFAIL -eq 0 ]
exit
}
