#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/soak.sh -- mixed traffic for a long time, memory
# sampled every minute; run inside the test guest by scripts/soak.sh:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/soak.sh
#
# For KIWI_SOAK_MINUTES (default 30), with netem on the veth pair (0.5%
# loss, 10% reordering with 2 ms delay), in parallel and over and over:
#   * rping -V, 4 KiB and 64 KiB (every byte compared)
#   * ib_write_bw, ib_read_bw, ib_send_bw -R, 64 KiB, short runs
#   * connect/disconnect churn: rping -V -C 1, back to back
#   * NVMe over RDMA on a third kiwi device (dummy netdev): fio writes
#     8 MiB in random order with a crc32c per block, reads back, checks
# Every minute one line "soak-sample MIN SLAB_KB VMALLOC_KB TCP QPS" (QPS:
# kiwi QPs in `rdma resource`); each finished round one line
# "soak-round KIND RC".  At the end: everything torn down, the module
# unloaded, and the TAP verdicts: every round passed; memory bounded
# (slab in the second half of the run grows less than 8 MiB from its
# first-half maximum); TCP sockets and slab back near the start after
# the unload.  Output is TAP 13 with the plan line last.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
MIN=${KIWI_SOAK_MINUTES:-30}
SRV=10.91.0.2
NQN=kiwi-soak
CFS=/sys/kernel/config/nvmet
NADDR=10.97.0.1
. "$ROOT/selftests/guest/lib.sh"

mem_line() {
	local qps
	qps=$(rdma resource show qp 2>/dev/null | grep -c kiwi)
	awk -v q="$qps" '
		FILENAME == "/proc/meminfo" && $1 == "Slab:" { s = $2 }
		FILENAME == "/proc/meminfo" && $1 == "VmallocUsed:" { v = $2 }
		FILENAME == "/proc/slabinfo" && $1 == "TCP" { t = $2 }
		END { printf "%d %d %d %d\n", s, v, t, q }' /proc/meminfo /proc/slabinfo
}

nvme_up() {
	modprobe null_blk nr_devices=1 memory_backed=1 gb=1 &&
	modprobe nvmet && modprobe nvmet-rdma && modprobe nvme-rdma &&
	ip link add kd0 type dummy && ip addr add $NADDR/24 dev kd0 &&
	ip link set kd0 up && rdma link add kiwi2 type kiwi netdev kd0 || return 1
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config || return 1
	mkdir "$CFS/subsystems/$NQN" &&
	echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host" &&
	mkdir "$CFS/subsystems/$NQN/namespaces/1" &&
	echo -n /dev/nullb0 >"$CFS/subsystems/$NQN/namespaces/1/device_path" &&
	echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable" &&
	mkdir "$CFS/ports/1" && echo rdma >"$CFS/ports/1/addr_trtype" &&
	echo ipv4 >"$CFS/ports/1/addr_adrfam" &&
	echo $NADDR >"$CFS/ports/1/addr_traddr" &&
	echo 4420 >"$CFS/ports/1/addr_trsvcid" &&
	ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN" &&
	echo "transport=rdma,traddr=$NADDR,trsvcid=4420,nqn=$NQN" >/dev/nvme-fabrics
}

nvme_dev() {
	local b
	for b in /sys/block/nvme*n*; do
		[ -b "/dev/${b##*/}" ] && [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = $NQN ] &&
			{ basename "$b"; return; }
	done
}

nvme_down() {
	local c
	c=$(grep -l "^$NQN\$" /sys/class/nvme/nvme*/subsysnqn 2>/dev/null | head -1)
	[ -z "$c" ] || echo 1 >"${c%/subsysnqn}/delete_controller"
	rm -f "$CFS/ports/1/subsystems/$NQN"
	rmdir "$CFS/ports/1" "$CFS/subsystems/$NQN/namespaces/1" \
		"$CFS/subsystems/$NQN" 2>/dev/null
	modprobe -r nvme-rdma nvmet-rdma
	rdma link del kiwi2
}

setup() {
	modprobe kiwi && modprobe sch_netem || return 1
	# Connection events, for a failed round's report.
	mountpoint -q /sys/kernel/tracing ||
		mount -t tracefs nodev /sys/kernel/tracing
	echo 4096 >/sys/kernel/tracing/buffer_size_kb
	echo 1 >/sys/kernel/tracing/events/kiwi/kiwi_cm/enable
	kiwi_pair_up &&
	A tc qdisc add dev kv0 root netem delay 2ms reorder 10% 50% loss 0.5% &&
	B tc qdisc add dev kv1 root netem delay 2ms reorder 10% 50% loss 0.5% &&
	nvme_up
}

round() { echo "soak-round $1 $2"; }

# keep_bad KIND STATUS SERVER_OUT CLIENT_OUT: a failed round keeps the
# tail of both sides' output, shown with the verdict.
keep_bad() {
	[ "$2" -eq 0 ] && return
	local n=$((${BAD_N:-0} + 1))
	BAD_N=$n
	{
		echo "== $1 round failed ($2) at $((SECONDS / 60)) min; server:"
		tail -n 15 "$3"
		echo "== client:"
		tail -n 15 "$4"
		echo "== kiwi_cm trace:"
		grep -v '^#' /sys/kernel/tracing/trace | tail -n 60
	} >"$TMPD/bad-$1-$n" 2>&1
}

# loop KIND PORT CMD: repeat one kind of traffic until the deadline.
rping_loop() {
	local kind=$1 port=$2 size=$3 count=$4 sp c s
	while [ $SECONDS -lt $END ]; do
		B timeout 300 rping -s -a $SRV -p "$port" -V -C "$count" -S "$size" >"$TMPD/$kind.s" 2>&1 &
		sp=$!
		wait_port $SRV "$port"
		A timeout 300 rping -c -a $SRV -p "$port" -V -C "$count" -S "$size" >"$TMPD/$kind.c" 2>&1
		c=$?
		wait $sp
		s=$?
		local k=$kind
		{ rping_exit_race $s "$TMPD/$kind.s" $c ||
		  rping_exit_race $c "$TMPD/$kind.c" $s; } && k=rping_exit_race
		round "$k" $((c | s))
		keep_bad "$k" $((c | s)) "$TMPD/$kind.s" "$TMPD/$kind.c"
	done
}

# A perftest round whose client was refused by TCP before any MPA
# exchange (lib.sh refused_unseen: the trace proves kiwi never saw the
# connection; perftest's own race) is counted apart ("no_listener"), with
# its evidence, not as a pass.
perf_loop() {
	local tool sp c kind
	while [ $SECONDS -lt $END ]; do
		for tool in ib_write_bw ib_read_bw ib_send_bw; do
			B timeout 200 "$tool" -R -d kiwi1 -F -p 18600 -n 200 -s 65536 >"$TMPD/perf.s" 2>&1 &
			sp=$!
			wait_port $SRV 18600
			A timeout 180 "$tool" -R -d kiwi0 -F -p 18600 -n 200 -s 65536 $SRV >"$TMPD/perf.c" 2>&1
			c=$?
			kind=$tool
			if [ $c -ne 0 ]; then
				grep -v '^#' /sys/kernel/tracing/trace >"$TMPD/perf.trace"
				refused_unseen kiwi0 "$TMPD/perf.c" "$TMPD/perf.trace" &&
					kind=no_listener
				sleep 5	# the server's own end, if it comes
				kill_tree $sp
			fi
			wait $sp
			c=$((c | $?))
			round "$kind" $c
			keep_bad "$kind" $c "$TMPD/perf.s" "$TMPD/perf.c"
		done
	done
}

# One NVMe round: fio writes 8 MiB in random order (4 KiB to 64 KiB
# blocks, 4 deep) with a crc32c in every block, reads it all back and
# checks it; a mismatch or an I/O error fails the round.
nvme_loop() {
	local dev rc
	while [ $SECONDS -lt $END ]; do
		dev=$(nvme_dev)
		timeout 300 fio --name=soak --filename="/dev/$dev" --direct=1 \
			--ioengine=libaio --iodepth=4 --rw=randwrite --size=8M \
			--bsrange=4k-64k --verify=crc32c --do_verify=1 \
			--verify_fatal=1 --output="$TMPD/fio" >"$TMPD/fio.err" 2>&1
		rc=$?
		[ $rc -eq 0 ] && grep -qi 'verify.*fail\|bad.*checksum\|err= *[1-9]' \
			"$TMPD/fio" "$TMPD/fio.err" && rc=99
		round nvme $rc
		keep_bad nvme $rc "$TMPD/fio" "$TMPD/fio.err"
	done
}

sampler() {
	local m=0
	while [ $SECONDS -lt $END ]; do
		echo "soak-sample $m $(mem_line)"
		sleep 60
		m=$((m + 1))
	done
	echo "soak-sample $m $(mem_line)"
}

# shellcheck disable=SC2207 # numbers only: split on blanks by intent
BASE=($(mem_line))
tap_setup "kiwi0/kiwi1 on veth with netem, kiwi2 with NVMe over RDMA" \
	"kiwi0/kiwi1 on veth with netem, kiwi2 with NVMe over RDMA"
END=$((SECONDS + MIN * 60))
echo "# soak for $MIN min; baseline slab ${BASE[0]} KiB, TCP ${BASE[2]}"
{
	sampler &
	rping_loop rping_4k 7180 4096 500 &
	rping_loop rping_64k 7181 65535 50 &
	rping_loop churn 7182 64 1 &
	perf_loop &
	nvme_loop &
	wait
} | tee "$TMPD/log"

# Rounds that failed in the tools' own known races (refused_unseen,
# rping_exit_race) are neither passes nor failures: reported with their
# evidence.
APART='$2 == "no_listener" || $2 == "rping_exit_race"'
unseen=$(awk "\$1 == \"soak-round\" && ($APART)" "$TMPD/log" | wc -l)
total=$(awk "\$1 == \"soak-round\" && !($APART)" "$TMPD/log" | wc -l)
failed=$(awk "\$1 == \"soak-round\" && !($APART) && \$3 != 0" "$TMPD/log" | wc -l)
summary=$(awk '$1 == "soak-round" { n[$2]++; if ($3 != 0) f[$2]++ }
	END { for (k in n) if (k == "no_listener" || k == "rping_exit_race")
		printf "%s %d (not counted) ", k, n[k]
	      else printf "%s %d/%d ", k, n[k] - f[k], n[k] }' "$TMPD/log")
if [ "$unseen" -gt 0 ]; then
	echo "# $unseen round(s) lost to the tools' own races (see refused_unseen, rping_exit_race):"
	cat "$TMPD"/bad-no_listener-* "$TMPD"/bad-rping_exit_race-* 2>/dev/null | tail -n 150 | diag
fi
if [ "$total" -gt 0 ] && [ "$failed" -eq 0 ]; then
	ok "all $total rounds passed: $summary"
else
	notok "$failed of $total rounds failed: $summary"
	# shellcheck disable=SC2010 # our own file names, bad-<case>-<n>
	ls "$TMPD"/bad-* | grep -vE 'no_listener|rping_exit_race' | xargs cat | tail -n 400 | diag
fi
# Bounded: the second half's slab peak against the first half's.
read -r h1 h2 < <(awk '$1 == "soak-sample" { s[$2] = $3; n = $2 }
	END { for (i = 0; i <= n; i++) if (i <= n / 2) { if (s[i] > a) a = s[i] }
	      else if (s[i] > b) b = s[i]; print a + 0, b + 0 }' "$TMPD/log")
if [ $((h2 - h1)) -lt 8192 ]; then
	ok "memory bounded: slab peak ${h1} KiB in the first half, ${h2} KiB in the second"
else
	notok "memory grows: slab peak ${h1} KiB in the first half, ${h2} KiB in the second"
fi
KTEXT=$(kiwi_text)	# where kiwi.ko lies, for kiwi_leak_check after unload
if { nvme_down && A rdma link del kiwi0 && B rdma link del kiwi1 &&
     modprobe -r kiwi; } >"$TMPD/u" 2>&1; then
	ok "teardown and unload"
else
	notok "teardown and unload"
	diag "$TMPD/u"
fi
sleep 5
# shellcheck disable=SC2207 # numbers only: split on blanks by intent
NOW=($(mem_line))
echo "# after unload: slab ${NOW[0]} KiB (baseline ${BASE[0]}), TCP ${NOW[2]} (baseline ${BASE[2]})"
if kiwi_leak_check "$KTEXT" "$TMPD/leaked" &&
   [ "${NOW[2]}" -le "${BASE[2]}" ] && [ $((NOW[0] - BASE[0])) -lt 16384 ]; then
	ok "no leaks: TCP sockets at baseline, slab within 16 MiB, $(tail -n 1 "$TMPD/leaked")"
else
	notok "leak: TCP ${BASE[2]}->${NOW[2]}, slab ${BASE[0]}->${NOW[0]} KiB, $(tail -n 1 "$TMPD/leaked")"
fi
tap_end
