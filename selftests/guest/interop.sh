#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/interop.sh -- kiwi against Linux's siw, run inside the
# test guest with both modules available:
#
#	scripts/build-siw
#	selftests/vm/run --module kmod/kiwi.ko --module build/siw/siw.ko -- \
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
# rping -V and ib_read_bw each way.  TAP 13, plan line last.
#
# Environment: KIWI_RPING_COUNT (default 200), KIWI_PERF_ITERS (200),
# KIWI_DP_MTU (1500).
set -u

# perftest works out its clock rate after the run, and fails that when
# preempted too often meanwhile.  A kiwi client finishes while a slower
# siw server is still taking in the data TCP holds for it, in softirq
# context on the CPU that sent it; unpinned, the client shared that CPU in
# about one run of five.  kiwi sends from a CPU other than the client's
# (kiwi_tx_kick()), so pinned, it never does.
PERF_PIN=1
COUNT=${KIWI_RPING_COUNT:-200}
ITERS=${KIWI_PERF_ITERS:-200}
MTU=${KIWI_DP_MTU:-1500}
. "$(dirname "$(readlink -f "$0")")/lib.sh"

setup() {
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

tap_setup "kiwi and siw devices on two veth pairs" \
	"kiwi0<->siw0 and siw1<->kiwi1 on veth pairs (MTU $MTU)"

for crc in 1 0; do
	echo "$crc" >/sys/module/kiwi/parameters/crc
	c=crc; [ "$crc" = 1 ] || c=nocrc
	direction "kiwi->siw $c" siw0 kiwi0 10.93.0.2
	direction "siw->kiwi $c" kiwi1 siw1 10.94.0.2
done

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
if reload_crypto; then
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
