#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/check-2host.sh -- `make check-2host`: kiwi between two machines.
# Two QEMU guests joined by one virtual NIC (selftests/vm/pair.sh), Debian's
# 6.1 kernel in one and 6.12 in the other, each with kiwi built for it,
# run selftests/guest/twohost.sh: rping -V, perftest WRITE/READ/SEND,
# RFC 7306 immediate data and atomics, memory windows, MPA markers asked
# for by one end, NVMe over RDMA, NFS 4.2 over RDMA and iSER (target
# and server in one guest, host and client in the other), a link down
# mid-transfer, offloads off, netem, a mismatched MTU,
# Linux siw at one end, a guest killed mid-transfer and booted again, and
# each side's teardown with a leak check (twohost.sh's header says what
# each step checks).
# Configurations (KIWI_2HOST_RUNS, a space-separated subset, default
# all), with their twohost.sh steps (KIWI_PAIR_STEPS):
#
#   virtio9000   a 6.1, b 6.12; virtio-net (no TX offloads), MTU 9000;
#                rping perf rev imm atomic mw markers nvme nfs, then b
#                killed during a's ib_write_bw
#   e1000_1500   a 6.12, b 6.1; e1000 (TSO and TX checksum offload on),
#                MTU 1500; rping perf imm atomic mw nvme nfs iser link
#                offload (6.1 serves the verbs programs, the NVMe, NFS and
#                iSER targets here, 6.12 in virtio9000), then b killed
#                under a's NVMe I/O
#                and booted again: a's controller must reconnect
#   mtu_mismatch a 6.12 with MTU 9000, b 6.1 with 1500; virtio-net; fwd
#                (rping -V 64 KiB, ib_write_bw with large FPDUs), fpdu
#                (the same with standard FPDUs, whose size must follow
#                the MSS TCP agreed, not a's MTU) and netem (loss,
#                duplication, reordering on a's NIC), then b killed with
#                a's READs outstanding (ib_read_bw)
#   nfs_kill     a 6.12, b 6.1; virtio-net, MTU 9000; rping, then b
#                killed under fio on a's hard NFS mount of its export
#                (on a disk that outlives b) and booted again: the
#                client must carry on by itself, every block verified
#   siw          a 6.1 with Linux siw (build/siw/siw.ko, make siw), b 6.12
#                with kiwi; virtio-net, MTU 1500; fwd (siw0 connects to
#                kiwi0) and rev (kiwi0 connects to siw0): rping -V at 64
#                KiB and ib_write_bw each way; no kill test
#
# KIWI_2HOST_K612DIR: a tree scripts/kmod-copy.sh already built kiwi for the
# 6.12 guest in (selftests/check.sh's k612 phase passes build/kmod-6.12),
# used instead of building one here.
#
# Output: one line per result (PASS/FAIL/SKIP NAME (detail)), the logs'
# directory, and last
#	N passed, N failed, N skipped
# Exit status 0 if nothing failed.  Logs: build/check-2host/RUN/ (a.log,
# b.log, b2.log, each guest's dmesg and vm log).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BUILD=$ROOT/build
LOGS=$BUILD/check-2host
RUNS=${KIWI_2HOST_RUNS:-virtio9000 e1000_1500 mtu_mismatch nfs_kill siw}
RESULTS=$LOGS/results.txt
mkdir -p "$LOGS"
: >"$RESULTS"
T0=$SECONDS
say() { printf '[2host %4ds] %s\n' $((SECONDS - T0)) "$*"; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$RESULTS"; printf '%-7s %s%s\n' "$1" "$2" "${3:+  ($3)}"; }

# kiwi for both kernels: kmod/kiwi.ko (6.1, make all) and a 6.12 build
# as selftests/check.sh's k612 phase makes it.
K61=$ROOT/kmod/kiwi.ko
K612DIR=${KIWI_2HOST_K612DIR:-$BUILD/kmod-6.12-2host}
hdr=$("$ROOT/scripts/guest-kernel.sh" 6.12 2>"$LOGS/headers.log" | tail -n1)
K612VER=${hdr##*/linux-headers-}
K61VER=$(modinfo -F vermagic "$K61" 2>/dev/null | cut -d' ' -f1)
if [ ! -f "$K61" ] || [ -z "$K61VER" ]; then
	record FAIL 2host.build "no kmod/kiwi.ko (run make all)"
elif [ -n "${KIWI_2HOST_K612DIR:-}" ]; then
	v=$(modinfo -F vermagic "$K612DIR/kmod/kiwi.ko" 2>/dev/null | cut -d' ' -f1)
	if [ -n "$v" ] && [ "$v" = "$K612VER" ]; then
		record PASS 2host.build "kiwi for $K61VER and $K612VER (the latter from $K612DIR)"
	else
		record FAIL 2host.build "$K612DIR/kmod/kiwi.ko is not a kiwi for $K612VER (${v:-missing})"
	fi
elif [ -z "$hdr" ]; then
	record FAIL 2host.build "no 6.12 headers (scripts/guest-kernel.sh 6.12; see $LOGS/headers.log)"
else
	say "kiwi for Linux $K612VER (build/kmod-6.12-2host)"
	if "$ROOT/scripts/kmod-copy.sh" "$K612DIR" "$hdr" >"$LOGS/build-6.12.log" 2>&1; then
		record PASS 2host.build "kiwi for $K61VER and $K612VER"
	else
		record FAIL 2host.build "6.12 build failed (see $LOGS/build-6.12.log)"
	fi
fi
K612=$K612DIR/kmod/kiwi.ko
SIW_KO=$BUILD/siw/siw.ko

# tap FILE PREFIX [KILLED]: the TAP lines of one guest's command as
# results; KILLED: the guest was killed on request, so no plan is due.
tap() {
	local line rest plan=-1 n=0
	while IFS= read -r line; do
		case "$line" in
		1..*) plan=${line#1..} ;;
		"ok "[0-9]*) rest=${line#ok }; record PASS "$2.${rest#* }"; n=$((n + 1)) ;;
		"not ok "[0-9]*) rest=${line#not ok }; record FAIL "$2.${rest#* }"; n=$((n + 1)) ;;
		esac
	done < <(tr -d '\r' <"$1" 2>/dev/null)
	if [ "$plan" -ge 1 ] && [ "$plan" -eq "$n" ]; then
		record PASS "$2.complete" "$n results"
	elif [ -n "${3:-}" ] && [ "$plan" = -1 ] && [ "$n" -ge 1 ]; then
		record PASS "$2.complete" "killed as the test asked, after its $n results"
	else
		record FAIL "$2.complete" "plan ${plan/#-1/missing}, $n results"
	fi
}

# pair_run NAME KVER_A KO_A KVER_B KO_B NIC MTU KILL STEPS [SIW]
#   MTU: both guests', or A/B (a's and b's); STEPS: twohost.sh's
#   KIWI_PAIR_STEPS; SIW: the role that runs Linux siw (its KO siw.ko)
pair_run() {
	local name=$1 dir=$LOGS/$1 rc=0 g
	rm -rf "$dir"
	mkdir -p "$dir"
	say "$name: a $2, b $4, $6, MTU $7${10:+, siw in ${10}}; steps $9$([ "$8" = 0 ] || echo ", kill test ($8)")"
	KIWI_PAIR_MTU=${7%/*} KIWI_PAIR_MTU_B=${7#*/} KIWI_PAIR_KILL=$8 \
	KIWI_PAIR_STEPS=$9 KIWI_PAIR_SIW=${10:-} \
	KIWI_SELFTEST_BIN=$BUILD/selftests \
		"$ROOT/selftests/vm/pair.sh" --kver-a "$2" --module-a "$3" \
		--kver-b "$4" --module-b "$5" --nic "$6" --logs "$dir" \
		-- "$ROOT/selftests/guest/twohost.sh" 2>"$dir/pair.log" || rc=$?
	sed 's/^/    /' "$dir/pair.log"
	for g in a b b2; do
		[ -e "$dir/$g.log" ] || continue
		tap "$dir/$g.log" "$name.$g" "$([ "$g" = b ] && [ "$8" != 0 ] && echo killed)"
		# b's first boot is killed by request in the kill test: its
		# console ends abruptly, which is not kernel trouble.
		if "$ROOT/selftests/vm/check-dmesg.sh" "$dir/$g-dmesg.log" >"$dir/$g-trouble.log" 2>&1; then
			record PASS "$name.$g.dmesg_clean"
		else
			record FAIL "$name.$g.dmesg_clean" "$(sed -n 2p "$dir/$g-trouble.log" | cut -c1-160)"
		fi
	done
	if [ "$rc" -eq 0 ]; then
		record PASS "$name.exit"
	else
		record FAIL "$name.exit" "vm/pair.sh exit $rc: $(tail -n1 "$dir/pair.log")"
	fi
}

if ! grep -q '^FAIL	2host.build' "$RESULTS"; then
	for r in $RUNS; do
		case $r in
		virtio9000) pair_run virtio9000 "$K61VER" "$K61" "$K612VER" "$K612" virtio 9000 write \
			"rping perf rev imm atomic mw markers nvme nfs" ;;
		e1000_1500) pair_run e1000_1500 "$K612VER" "$K612" "$K61VER" "$K61" e1000 1500 nvme \
			"rping perf imm atomic mw nvme nfs iser link offload" ;;
		mtu_mismatch) pair_run mtu_mismatch "$K612VER" "$K612" "$K61VER" "$K61" virtio 9000/1500 read \
			"fwd fpdu netem" ;;
		nfs_kill) pair_run nfs_kill "$K612VER" "$K612" "$K61VER" "$K61" virtio 9000 nfs rping ;;
		siw)
			v=$(modinfo -F vermagic "$SIW_KO" 2>/dev/null | cut -d' ' -f1)
			if [ "$v" = "$K61VER" ]; then
				pair_run siw "$K61VER" "$SIW_KO" "$K612VER" "$K612" virtio 1500 0 "fwd rev" a
			else
				record FAIL 2host.siw "$SIW_KO ${v:+is for $v, not $K61VER}${v:-missing} (make siw)"
			fi ;;
		*) record FAIL "2host.$r" "no such configuration (KIWI_2HOST_RUNS)" ;;
		esac
	done
fi
pass=$(grep -c '^PASS' "$RESULTS")
fail=$(grep -c '^FAIL' "$RESULTS")
skip=$(grep -c '^SKIP' "$RESULTS")
say "done (logs: $LOGS)"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
