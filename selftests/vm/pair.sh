#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/pair.sh -- two throw-away QEMU guests joined by one virtual
# network link, each running the same command in its role ("a" or "b"):
# kiwi between two kernels, over a NIC driver, as two machines would run
# it.
#
#   selftests/vm/pair.sh [options] -- <command> [args...]
#     --kver-a K, --kver-b K   guest kernels (default: vm/run.sh's, Debian's
#                              6.1); each needs its own kiwi build
#     --module-a FILE, --module-b FILE   (repeatable) .ko for that guest
#     --nic MODEL     virtio (default: virtio-net; over this backend without
#                     TX checksum offload or TSO) or e1000 (QEMU's model
#                     does TSO and TX checksums itself: the guest's e1000
#                     driver offloads both)
#     --smp N         vCPUs per guest (default 1: two guests share the
#                     host's 2 cores)
#     --mem MB        RAM per guest (default 1536)
#     --timeout SEC   per guest boot (default 900)
#     --logs DIR      where the logs go (default build/vm/pair)
#
# The link: QEMU's UDP socket netdev, point to point on the host's
# loopback (a's port and b's, picked at random), nothing else attached;
# inside, the NIC is eth0.  Addresses are the command's business
# (selftests/guest/pairlib.sh: 10.93.0.1 for a, 10.93.0.2 for b).
#
# Each guest sees (environment, KIWI_* reach the guest): KIWI_PAIR_ROLE
# (a or b), KIWI_PAIR_BOOT (1, or 2 for b's second boot, below) and
# KIWI_PAIR_DIR, a host directory both guests mount read-write over 9p
# (tag "pair") to meet in: files, not the network, so that a test may
# break the link.  Through it the command may also ask this script for
# what only the host can do, by writing a line to $KIWI_PAIR_DIR/host.req
# (pairlib.sh's host_do): "kill b" (b's QEMU killed with SIGKILL: a
# machine that dies, no shutdown, no FIN), "boot b" (b booted again, its
# command run with KIWI_PAIR_BOOT=2), "link a|b off|on" (QEMU's
# set_link: the NIC loses carrier).  The answer is a line in host.ans:
# "N done" or "N failed: why", N the request's line number.
#
# Output: each guest's command output in LOGS/a.log, LOGS/b.log (and
# b2.log), consoles and dmesgs beside them (vm/run.sh's --dmesg); this
# script's own lines ("pair: ...") on stderr.  Exit status: 0 if both
# commands exited 0 (b's first boot counts as 0 when the command had it
# killed); otherwise the first non-zero of a, b (then b2), with vm/run.sh's
# meanings (124 timeout, 125 death, 126 harness fault).
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
usage() { sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; }
bad() { echo "pair: $*" >&2; exit 2; }

kver_a='' kver_b='' nic=virtio smp=1 mem=1536 timeout=900 logs=$REPO/build/vm/pair
mods_a=() mods_b=()
while [ $# -gt 0 ]; do
	opt=$1
	case "$opt" in
	--) shift; break ;;
	-h|--help) usage; exit 0 ;;
	--kver-a|--kver-b|--module-a|--module-b|--nic|--smp|--mem|--timeout|--logs)
		[ $# -ge 2 ] || bad "$opt needs a value"
		val=$2; shift 2 ;;
	*) bad "unknown option '$opt' (the command goes after --)" ;;
	esac
	case "$opt" in
	--kver-a) kver_a=$val ;;
	--kver-b) kver_b=$val ;;
	--module-a) mods_a+=(--module "$(readlink -f "$val")") ;;
	--module-b) mods_b+=(--module "$(readlink -f "$val")") ;;
	--nic) case "$val" in virtio|e1000) nic=$val ;; *) bad "--nic virtio or e1000" ;; esac ;;
	--smp) smp=$val ;;
	--mem) mem=$val ;;
	--timeout) timeout=$val ;;
	--logs) logs=$val ;;
	esac
done
[ $# -gt 0 ] || bad "no command given"
mkdir -p "$logs"
logs=$(readlink -f "$logs")

# The meeting place: under /var/tmp, which the guests see (not /tmp).
DIR=$(mktemp -d /var/tmp/kiwi-pair.XXXXXX)
chmod 1777 "$DIR"
: >"$DIR/host.req"
: >"$DIR/host.ans"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in a b; do
		[ ! -s "$DIR/$p.pid" ] || kill -9 "$(cat "$DIR/$p.pid")" 2>/dev/null || true
	done
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Two UDP ports on the loopback, one each; the link is a's to b's.
port_a=$((20000 + RANDOM % 20000))
port_b=$((port_a + 1))
case $nic in
virtio) dev=virtio-net-pci ;;
e1000) dev=e1000 ;;
esac
qemu_extra() {	# qemu_extra ROLE: the NIC, the meeting place, a monitor
	local me=$1 lp=$port_a rp=$port_b mac=52:54:00:93:00:01
	[ "$me" = a ] || { lp=$port_b; rp=$port_a; mac=52:54:00:93:00:02; }
	echo "-netdev socket,id=n0,udp=127.0.0.1:$rp,localaddr=127.0.0.1:$lp" \
	     "-device $dev,netdev=n0,mac=$mac" \
	     "-virtfs local,path=$DIR,mount_tag=pair,security_model=none,multidevs=remap" \
	     "-monitor unix:$DIR/$me.mon,server=on,wait=off" \
	     "-pidfile $DIR/$me.pid"
}

# boot ROLE NAME: vm/run.sh for ROLE in the background, its output in
# LOGS/NAME.log, its exit status in $DIR/NAME.rc when it ends.
boot() {
	local me=$1 name=$2 boot=1 kv mods
	shift 2
	[ "$name" = b2 ] && boot=2
	if [ "$me" = a ]; then kv=$kver_a; mods=("${mods_a[@]}"); else kv=$kver_b; mods=("${mods_b[@]}"); fi
	rm -f "$DIR/$me.pid" "$DIR/$name.rc"
	(
		rc=0
		env ${kv:+KVER="$kv"} KIWI_PAIR_ROLE="$me" KIWI_PAIR_BOOT=$boot \
			KIWI_PAIR_DIR="$DIR" KIWI_QEMU_EXTRA="$(qemu_extra "$me")" \
			"$HERE/run.sh" --quiet --smp "$smp" --mem "$mem" \
			--timeout "$timeout" --dmesg "$logs/$name-dmesg.log" \
			"${mods[@]}" -- "$@" >"$logs/$name.log" 2>"$logs/$name-vm.log" || rc=$?
		echo "$rc" >"$DIR/$name.rc"
	) &
	pids+=($!)
	echo "pair: $name: booting ${kv:-the default kernel} (role $me, boot $boot, $nic, smp $smp, ${mem} MiB)" >&2
}

# monitor ROLE COMMAND: one command to a guest's QEMU monitor.
monitor() {
	/usr/bin/python3 - "$DIR/$1.mon" "$2" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
time.sleep(0.2)
s.recv(4096)			# the banner
s.sendall((sys.argv[2] + "\n").encode())
time.sleep(0.5)
EOF
}

# serve N REQUEST: carry out one request of a guest's command.
killed_b=0
serve() {
	local n=$1 req=$2 ans='done' pid
	case "$req" in
	"kill b")
		pid=$(cat "$DIR/b.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
			killed_b=1
		else
			ans="failed: no QEMU for b"
		fi ;;
	"boot b")
		[ "$killed_b" = 1 ] || [ -e "$DIR/b.rc" ] || ans="failed: b is still running"
		# The first b must be gone before its ports and monitor are reused.
		for _ in $(seq 1 60); do [ -e "$DIR/b.rc" ] && break; sleep 0.5; done
		[ "$ans" != 'done' ] || boot b b2 "${CMD[@]}" ;;
	"link "[ab]" o"[nf]*)
		set -- $req
		monitor "$2" "set_link n0 $3" || ans="failed: monitor" ;;
	*) ans="failed: unknown request '$req'" ;;
	esac
	echo "pair: request $n: $req: $ans" >&2
	echo "$n $ans" >>"$DIR/host.ans"
}

CMD=("$@")
boot a a "${CMD[@]}"
boot b b "${CMD[@]}"
served=0
while :; do
	n=$(wc -l <"$DIR/host.req")
	while [ "$served" -lt "$n" ]; do
		served=$((served + 1))
		serve "$served" "$(sed -n "${served}p" "$DIR/host.req")"
	done
	if [ -e "$DIR/a.rc" ] && [ -e "$DIR/b.rc" ] &&
	   { [ "$killed_b" = 0 ] || [ -e "$DIR/b2.rc" ] || ! grep -q '^boot b$' "$DIR/host.req"; }; then
		break
	fi
	sleep 0.5
done
wait

rc_a=$(cat "$DIR/a.rc") rc_b=$(cat "$DIR/b.rc") rc_b2=$(cat "$DIR/b2.rc" 2>/dev/null || echo -)
# b's first boot, killed on request, died as asked.
[ "$killed_b" = 1 ] && [ "$rc_b" = 125 ] && rc_b=0
echo "pair: exit a $rc_a, b $rc_b$([ "$rc_b2" = - ] || echo ", b2 $rc_b2") (logs: $logs)" >&2
for r in "$rc_a" "$rc_b" "$rc_b2"; do
	[ "$r" = - ] || [ "$r" = 0 ] || exit "$r"
done
exit 0
