# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
#
# selftests/guest/pairlib.sh -- helpers of the two-guest scripts, run by
# selftests/vm/pair.sh in both guests.  Sourced after lib.sh, not run.
#
# The guest's role is $KIWI_PAIR_ROLE (a or b); $KIWI_PAIR_DIR is a host
# directory both guests mount over 9p, for meeting and for asking the
# host (vm/pair.sh) to kill or boot a guest or to take a link down.  The
# link is eth0: 10.93.0.1 is a's, 10.93.0.2 b's.

ROLE=${KIWI_PAIR_ROLE:?run by selftests/vm/pair.sh}
PBOOT=${KIWI_PAIR_BOOT:-1}
PD=/run/kiwi-pair
ME_IP=10.93.0.1 PEER_IP=10.93.0.2 PEER=b
[ "$ROLE" = a ] || { ME_IP=10.93.0.2 PEER_IP=10.93.0.1 PEER=a; }
IFACE=eth0

# pair_mount: the meeting place at $PD.
pair_mount() {
	mkdir -p $PD
	mountpoint -q $PD ||
		mount -t 9p -o trans=virtio,version=9p2000.L,cache=none pair $PD
}

# pair_put NAME [VALUE]: tell the other guest NAME (with VALUE).
# pair_get NAME [SECS]: wait (default 300 s) for the other guest's NAME;
# prints its value; non-zero on timeout.
pair_put() {
	echo "${2:-}" >"$PD/.$ROLE.$PBOOT.$1" && mv "$PD/.$ROLE.$PBOOT.$1" "$PD/$ROLE.$1"
}
pair_get() {
	local f=$PD/$PEER.$1 i
	for ((i = 0; i < ${2:-300} * 4; i++)); do
		[ -e "$f" ] && { cat "$f"; return 0; }
		sleep 0.25
	done
	return 1
}

# host_do REQUEST [SECS]: ask vm/pair.sh ("kill b", "boot b", "link a off",
# ...) and wait for its answer (default 60 s); 0 if it says done.
host_do() {
	local n ans i
	n=$(( $(wc -l <"$PD/host.req") + 1 ))
	echo "$1" >>"$PD/host.req"
	for ((i = 0; i < ${2:-60} * 4; i++)); do
		ans=$(awk -v n="$n" '$1 == n { $1 = ""; print substr($0, 2) }' "$PD/host.ans")
		[ -n "$ans" ] && { [ "$ans" = "done" ]; return; }
		sleep 0.25
	done
	return 1
}

# nic_up MTU: eth0 with our address; then the other end answers (a TCP
# SYN to a closed port comes back refused: the path works both ways).
nic_up() {
	modprobe virtio_net 2>/dev/null
	modprobe e1000 2>/dev/null
	for _ in $(seq 1 40); do ip link show $IFACE >/dev/null 2>&1 && break; sleep 0.25; done
	ip link set $IFACE mtu "$1" up &&
	ip addr add $ME_IP/24 dev $IFACE || return 1
}
peer_reachable() {	# peer_reachable [SECS]
	local out
	for _ in $(seq 1 "${1:-60}"); do
		out=$(timeout 2 bash -c "exec 3<>/dev/tcp/$PEER_IP/9" 2>&1)
		[[ $out == *refused* ]] && return 0
		sleep 1
	done
	return 1
}

# kiwi_up: kiwi loaded, kiwi0 on eth0.
kiwi_up() {
	modprobe kiwi && rdma link add kiwi0 type kiwi netdev $IFACE
}

# nic_info: driver, MTU and offloads of eth0, one line.
nic_info() {
	local drv off
	drv=$(basename "$(readlink /sys/class/net/$IFACE/device/driver)" 2>/dev/null)
	off=$(ethtool -k $IFACE 2>/dev/null |
		awk -F': ' '/^(tcp-segmentation-offload|generic-receive-offload|tx-checksumming|rx-checksumming):/ { printf "%s%s %s", (n++ ? ", " : ""), $1, $2 }')
	echo "$IFACE: driver ${drv:-?}, MTU $(cat /sys/class/net/$IFACE/mtu), $off"
}
