#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/ab-guest.sh -- two builds of kiwi.ko against each other in one
# guest boot; run by scripts/bench-ab.sh, inside selftests/vm/run.sh:
#
#	bench/ab-guest.sh A.ko B.ko
#
# For each repetition (KIWI_AB_REPS, default 5) and cell, both modules
# take turns (A then B in odd repetitions, B then A in even ones, so
# neither always runs first): the module is inserted, kiwi0/kiwi1 come up
# on a veth pair between two namespaces (MTU KIWI_AB_MTU, default 9000),
# perftest runs over rdma_cm (-R), and the module is removed again.
# Cells (KIWI_AB_CELLS): write_bw_64k read_bw_64k send_bw_64k write_bw_4k
# read_bw_4k send_bw_4k (MiB/s, BW average, 2048 x 64 KiB or 2000 x 4 KiB)
# and write_lat_8 (us, t_typical: the median of 1000 round trips);
# run only when named: send_lat_8, write_lat_4k and send_lat_4k (1000
# round trips), write_lat_64k and send_lat_64k (500), and
# write_bw_64k_q4 (four QPs, 64 KiB for 3 s).
# Output: one line per run, "ab MODULE CELL REP VALUE" (VALUE "err" if
# the run failed), then the table of medians.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
SRV=10.91.0.2
. "$ROOT/selftests/guest/lib.sh"

MODS=("$1" "$2")
REPS=${KIWI_AB_REPS:-5}
MTU=${KIWI_AB_MTU:-9000}
CELLS=${KIWI_AB_CELLS:-"write_bw_64k read_bw_64k send_bw_64k write_bw_4k read_bw_4k send_bw_4k write_lat_8"}
PORT=18700

cell_cmd() {	# the tool and its size/iteration arguments
	case $1 in
	write_bw_64k) echo "ib_write_bw -s 65536 -n 2048" ;;
	read_bw_64k) echo "ib_read_bw -s 65536 -n 2048" ;;
	send_bw_64k) echo "ib_send_bw -s 65536 -n 2048" ;;
	write_bw_4k) echo "ib_write_bw -s 4096 -n 2000" ;;
	read_bw_4k) echo "ib_read_bw -s 4096 -n 2000" ;;
	send_bw_4k) echo "ib_send_bw -s 4096 -n 2000" ;;
	write_lat_8) echo "ib_write_lat -s 8 -n 1000" ;;
	send_lat_8) echo "ib_send_lat -s 8 -n 1000" ;;
	write_lat_4k) echo "ib_write_lat -s 4096 -n 1000" ;;
	send_lat_4k) echo "ib_send_lat -s 4096 -n 1000" ;;
	write_lat_64k) echo "ib_write_lat -s 65536 -n 500" ;;
	send_lat_64k) echo "ib_send_lat -s 65536 -n 500" ;;
	write_bw_64k_q4) echo "ib_write_bw -s 65536 -D 3 -q 4" ;;
	esac
}

up() {	# up MODULE: inserted, the pair at MTU, kiwi0/kiwi1 on it
	insmod "$1" || return 1
	kiwi_pair_up || return 1
	A ip link set kv0 mtu "$MTU" && B ip link set kv1 mtu "$MTU"
}

down() {
	A rdma link del kiwi0; B rdma link del kiwi1
	ip netns del kwa; ip netns del kwb
	for _ in $(seq 1 50); do rmmod kiwi 2>/dev/null && return 0; sleep 0.2; done
	echo "# rmmod kiwi failed"; return 1
}

# run CELL: one perftest run; prints the value or "err".
run() {
	local cmd sp rc v row size
	read -r -a cmd <<<"$(cell_cmd "$1")"
	size=${cmd[2]}
	PORT=$((PORT + 1))
	B timeout 120 "${cmd[@]}" -R -F -d kiwi1 -p $PORT >"$TMPD/s" 2>&1 &
	sp=$!
	wait_port $SRV $PORT
	A timeout 100 "${cmd[@]}" -R -F -d kiwi0 -p $PORT $SRV >"$TMPD/c" 2>&1
	rc=$?
	wait $sp
	row=$(grep -E "^ *$size +[0-9]+ +[0-9.]+ +[0-9.]+" "$TMPD/c" | tail -1)
	case $1 in
	*_lat_*) v=$(awk '{ print $5 }' <<<"$row") ;;
	*) v=$(awk '{ print $4 }' <<<"$row") ;;
	esac
	if [ $rc -ne 0 ] || ! awk -v v="${v:-0}" 'BEGIN { exit !(v > 0 && v != "inf") }' ||
	   grep -q 'Correlation coefficient' "$TMPD/c"; then
		v=err
		echo "# $1: client exit $rc: $(tail -n 2 "$TMPD/c" | tr '\n' ' ')" >&2
	fi
	echo "$v"
}

LAT_BOUNDS="lt_2 lt_4 lt_8 lt_16 lt_32 lt_64 lt_128 lt_256 lt_512 lt_1024 lt_2048 ge_2048"

# hist MOD CELL REP: after a latency run, kiwi's own-time histograms
# (rx_msg_us_*, tx_wqe_us_*: kiwi.4) of both devices, summed, as
# "hist MOD CELL REP rx N... tx N...", and perftest's tail of the same
# run as "tail MOD CELL REP P99 P99.9" (us).  The module is fresh for
# every run, so its counters hold this run alone.
hist() {
	{ A rdma statistic show link kiwi0/1; B rdma statistic show link kiwi1/1; } |
		awk -v tag="hist $1 $2 $3" -v bounds="$LAT_BOUNDS" '
		{ for (i = 1; i < NF; i++) if ($i ~ /^(rx_msg|tx_wqe)_us_/) h[$i] += $(i + 1) }
		END {
			k = split(bounds, b, " "); line = tag
			split("rx_msg tx_wqe", d, " ")
			for (j = 1; j <= 2; j++) {
				line = line " " substr(d[j], 1, 2)
				for (i = 1; i <= k; i++) line = line " " (h[d[j] "_us_" b[i]] + 0)
			}
			print line
		}'
	grep -E "^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+" "$TMPD/c" | tail -1 |
		awk -v tag="tail $1 $2 $3" 'NF >= 9 { print tag, $8, $9 }'
}

modprobe ib_uverbs && modprobe libcrc32c && modprobe rdma_ucm || exit 1
echo "# A = ${MODS[0]} ($(modinfo -F srcversion "${MODS[0]}"))"
echo "# B = ${MODS[1]} ($(modinfo -F srcversion "${MODS[1]}"))"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) vCPUs, MTU $MTU, kiwi defaults (CRC on), $REPS repetitions; $(cat /proc/cmdline | grep -o 'slub_debug=[^ ]*' || echo 'slub_debug off')"
for ((r = 1; r <= REPS; r++)); do
	for c in $CELLS; do
		order="0 1"
		[ $((r % 2)) -eq 0 ] && order="1 0"
		for m in $order; do
			name=$([ $m = 0 ] && echo A || echo B)
			if up "${MODS[$m]}"; then
				echo "ab $name $c $r $(run "$c")"
				[[ $c != *_lat_* ]] || hist "$name" "$c" "$r"
			else
				echo "ab $name $c $r err"
			fi
			down
		done
	done
done | tee "$TMPD/ab"
echo "# medians (min..max, n runs); B/A"
printf "%-14s %30s %30s %7s\n" cell A B B/A
awk '$1 == "ab" && $5 != "err" { v[$2 " " $3] = v[$2 " " $3] " " $5; n[$3] = 1 }
     $1 == "ab" && $5 == "err" { e[$2 " " $3]++ }
function med(s,   a, k, i, j, t) {
	k = split(s, a, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	lo = a[1]; hi = a[k]; cnt = k
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	for (c in n) {
		ma = med(v["A " c]); la = lo; ha = hi; ca = cnt
		mb = med(v["B " c]); lb = lo; hb = hi; cb = cnt
		printf "%-14s %9.2f (%s..%s, n=%d) %9.2f (%s..%s, n=%d) %7.3f\n", c, ma, la, ha, ca, mb, lb, hb, cb, ma ? mb / ma : 0
	}
	for (k in e) printf "# %s: %d failed runs\n", k, e[k]
}' "$TMPD/ab" | sort
# kiwi's own time against the end-to-end tail, latency cells only.
grep -q '^hist ' "$TMPD/ab" && {
echo "# latency: perftest's p99 / p99.9 (us, medians of the runs) and kiwi's own"
echo "# time per message (rx: data-ready to delivered; tx: doorbell to the WR starting out),"
echo "# pooled over the runs and both devices: the bucket holding p50/p99/p99.9"
awk -v bounds="$LAT_BOUNDS" '
function med(s,   a, k, i, j, t) {
	k = split(s, a, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
function pct(key, q,   i, n, c) {
	n = 0; for (i = 1; i <= nb; i++) n += h[key, i]
	if (!n) return "-"
	c = 0; for (i = 1; i <= nb; i++) { c += h[key, i]; if (c >= q * n) return b[i] }
	return b[nb]
}
BEGIN { nb = split(bounds, b, " ") }
$1 == "tail" { p99[$2 " " $3] = p99[$2 " " $3] " " $5; p999[$2 " " $3] = p999[$2 " " $3] " " $6; seen[$2 " " $3] = 1 }
$1 == "hist" { k = $2 " " $3; seen[k] = 1
	for (i = 1; i <= nb; i++) { h[k " rx", i] += $(5 + i); h[k " tx", i] += $(6 + nb + i) } }
END {
	for (k in seen) {
		printf "%-18s e2e p99 %7.1f p99.9 %7.1f | rx p50 %s p99 %s p99.9 %s | tx p50 %s p99 %s p99.9 %s\n", k,
			med(p99[k]), med(p999[k]),
			pct(k " rx", 0.5), pct(k " rx", 0.99), pct(k " rx", 0.999),
			pct(k " tx", 0.5), pct(k " tx", 0.99), pct(k " tx", 0.999)
	}
}' "$TMPD/ab" | sort
}
