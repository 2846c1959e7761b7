#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/recipes.sh -- run the user guide's recipes as written:
#
#	recipes.sh Documentation/user-guide.md
#
# in the test guest, as root, against an installed kiwi (packages.sh runs
# it after installing the packages).  The guide marks what runs:
#
#   <!-- recipe NAME: ENV -->      a recipe and the machines it needs:
#       local      nothing: its commands make what they need
#       two-hosts  "server" and "client", two network namespaces joined by a
#                  veth pair: eth0 192.0.2.1/24 in server, eth1 192.0.2.2/24
#                  in client (two machines, as the guide describes them)
#       one-host   both roles in the initial namespace, on dummy interfaces
#                  eth0 192.0.2.1/24 and eth1 192.0.2.2/24 (kernel services,
#                  NVMe over RDMA, NFS, iSER, live in the initial namespace
#                  only); /srv on ext4, the system bus and iscsid running
#   <!-- run NAME ROLE [bg] -->    the next ```sh block: run by ROLE (local,
#                  server or client) with bash -e; bg: in the background,
#                  the next block starting once it listens on a new TCP port
#
# Blocks of a recipe run in the guide's order; at its end its background
# blocks must have exited 0.  `sudo` runs its arguments (we are root; the
# guest may have no sudo).  The guest installs nothing and has no systemd:
# `apt install PKG...` passes only if every PKG is installed already (the
# test set has it), and `systemctl start|restart|stop nfs-server` does
# what Debian's nfs-server.service and the units it wants do (proc-fs-
# nfsd.mount, rpcbind, nfs-mountd, nfsdcld; exportfs -r, rpc.nfsd, which
# reads /etc/nfs.conf); any other use of either fails.  Output: each
# block's commands and output, and per recipe one line "recipe: PASS NAME
# (...)" or "recipe: FAIL NAME: ...".
# Exit status 1 if any recipe failed.
set -u
export LC_ALL=C
DOC=${1:?usage: recipes.sh USER-GUIDE.md}
W=$(mktemp -d /tmp/recipes.XXXXXX)
mkdir -p "$W/bin"
printf '#!/bin/sh\nexec "$@"\n' >"$W/bin/sudo"
cat >"$W/bin/apt" <<'SH'
#!/bin/sh
# recipes.sh's apt: the guest installs nothing; PKGs must be there.
[ "$1" = install ] || { echo "recipes: apt $1: not emulated" >&2; exit 1; }
shift
for p in "$@"; do
	case $p in -*) continue ;; esac
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		{ echo "recipes: package $p is not installed in the guest" >&2; exit 1; }
done
echo "recipes: apt install $*: already installed"
SH
cat >"$W/bin/systemctl" <<'SH'
#!/bin/sh
# recipes.sh's systemctl: the guest has no systemd.  nfs-server only, as
# Debian's units start and stop it.
unit=${2%.service}
[ "$unit" = nfs-server ] || { echo "recipes: systemctl $*: not emulated" >&2; exit 1; }
stop() {
	rpc.nfsd 0 2>/dev/null; exportfs -au; exportfs -f
	pkill -x rpc.mountd; pkill -x nfsdcld; pkill -x rpcbind
	sleep 0.5
}
case $1 in
stop) stop ;;
start|restart)
	[ "$1" = start ] || stop
	set -e
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p /var/lib/nfs/rpc_pipefs
	mountpoint -q /var/lib/nfs/rpc_pipefs ||
		mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs
	mkdir -p /run/rpcbind
	pgrep -x rpcbind >/dev/null || rpcbind -w
	pgrep -x nfsdcld >/dev/null || nfsdcld
	exportfs -r
	pgrep -x rpc.mountd >/dev/null || rpc.mountd
	rpc.nfsd ;;
*) echo "recipes: systemctl $1: not emulated" >&2; exit 1 ;;
esac
SH
chmod 755 "$W/bin/sudo" "$W/bin/apt" "$W/bin/systemctl"
export PATH=$W/bin:$PATH
FAILED=0

# Split the guide into blocks: $W/blocks/NNN.{sh,meta}; meta "NAME ROLE [bg]".
# Recipes: $W/recipes "NAME ENV" in order.
mkdir -p "$W/blocks"
awk -v dir="$W/blocks" -v rec="$W/recipes" '
	/^<!-- recipe [A-Za-z0-9_-]+: [a-z-]+ -->$/ { sub(":", "", $3); print $3, $4 >rec; next }
	/^<!-- run [A-Za-z0-9_-]+ [a-z]+( bg)? -->$/ {
		meta = $3 " " $4 ($5 == "bg" ? " bg" : ""); want = 1; next }
	want && /^```sh$/ { n++; f = sprintf("%s/%03d", dir, n); print meta >(f ".meta");
		close(f ".meta"); inblk = 1; want = 0; next }
	inblk && /^```$/ { inblk = 0; close(f ".sh"); next }
	inblk { print >(f ".sh") }
	want && !/^$/ { want = 0 }
' "$DOC"
[ -s "$W/recipes" ] || { echo "recipes: no recipe markers in $DOC"; exit 1; }

env_up() {
	case "$1" in
	local) ;;
	two-hosts)
		ip netns add server && ip netns add client &&
		ip link add eth0 netns server type veth peer name eth1 netns client &&
		ip -n server link set lo up && ip -n client link set lo up &&
		ip -n server addr add 192.0.2.1/24 dev eth0 &&
		ip -n client addr add 192.0.2.2/24 dev eth1 &&
		ip -n server link set eth0 up && ip -n client link set eth1 up ;;
	one-host)
		ip link add eth0 type dummy && ip link add eth1 type dummy &&
		ip addr add 192.0.2.1/24 dev eth0 && ip addr add 192.0.2.2/24 dev eth1 &&
		ip link set eth0 up && ip link set eth1 up &&
		{ modprobe configfs; mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config; } &&
		srv_fs && machine_daemons ;;
	*) echo "unknown environment $1"; return 1 ;;
	esac
}
# /srv on a file system of its own, as on a machine: the guest's root is
# an overlay, which nfsd does not export.
srv_fs() {
	mountpoint -q /srv && return 0
	modprobe loop; truncate -s 128M "$W/srv.img" && mkfs.ext4 -q -F "$W/srv.img" &&
		mount -o loop "$W/srv.img" /srv
}
# nvmet's configfs emptied: port links, ports, namespaces, subsystems.
nvmet_clear() {
	local c=/sys/kernel/config/nvmet l
	for l in "$c"/ports/*/subsystems/*; do [ -L "$l" ] && rm -f "$l"; done
	for l in "$c"/ports/*; do [ -d "$l" ] && rmdir "$l"; done
	for l in "$c"/subsystems/*/namespaces/*; do [ -d "$l" ] && rmdir "$l"; done
	for l in "$c"/subsystems/*; do [ -d "$l" ] && rmdir "$l"; done
	return 0
}

# What a Debian machine runs for the guide's services and the guest (no
# systemd, no udev) does not: the system bus (targetcli asks it for
# tcmu-runner's handlers at start), iscsid (socket-activated there) and
# sd_mod (loaded by udev for a new SCSI disk).
machine_daemons() {
	modprobe sd_mod
	if command -v dbus-daemon >/dev/null && ! pgrep -x dbus-daemon >/dev/null; then
		mkdir -p /run/dbus && rm -f /run/dbus/pid &&
			dbus-daemon --system --fork || return 1
	fi
	if command -v iscsid >/dev/null && ! pgrep -x iscsid >/dev/null; then
		mkdir -p /run/lock/iscsi && iscsid || return 1
	fi
	return 0
}
env_down() {
	# A recipe that failed half-way leaves its kernel services up: end
	# them before their netdevs go (deleting a netdev under a connected
	# NVMe-oF host waits out nvme's 60 s admin timeout).
	command -v iscsiadm >/dev/null && timeout 60 iscsiadm -m node -u >/dev/null 2>&1
	command -v nvme >/dev/null && timeout 60 nvme disconnect-all >/dev/null 2>&1
	grep -q ' nfs4\? ' /proc/mounts && timeout 60 umount -a -t nfs,nfs4
	[ -d /sys/kernel/config/nvmet/ports ] && nvmet_clear
	command -v targetcli >/dev/null && [ -d /sys/kernel/config/target/iscsi ] &&
		timeout 60 targetcli clearconfig confirm=True >/dev/null 2>&1
	[ -x "$W/bin/systemctl" ] && pgrep -x rpc.mountd >/dev/null && "$W/bin/systemctl" stop nfs-server
	rdma link show 2>/dev/null | awk '{ print $2 }' | cut -d/ -f1 |
		while read -r l; do rdma link delete "$l"; done
	for ns in $(ip netns list | awk '{ print $1 }'); do
		grep -qx "$ns" <<<"${NS_BEFORE:-}" || ip netns delete "$ns"
	done
	pkill -x iscsid
	pkill -x dbus-daemon
	mountpoint -q /srv && umount /srv
	ip link delete eth0 2>/dev/null
	ip link delete eth1 2>/dev/null
	return 0
}
# in_role ENV ROLE CMD...: CMD where ROLE runs.
in_role() {
	local env=$1 role=$2
	shift 2
	if [ "$env" = two-hosts ] && [ "$role" != local ]; then
		ip netns exec "$role" "$@"
	else
		"$@"
	fi
}
# Listening TCP sockets where ROLE runs; for local, in every namespace
# (its commands may make their own).
listeners() {
	local ns
	{
		in_role "$1" "$2" ss -ltnH
		if [ "$2" = local ]; then
			for ns in $(ip netns list | awk '{ print $1 }'); do
				ip netns exec "$ns" ss -ltnH | sed "s/^/$ns /"
			done
		fi
	} 2>/dev/null | awk '{ print $1, $(NF - 1) }' | sort
}

run_recipe() {
	local name=$1 env=$2 meta f role bg pids=() before t=$SECONDS n=0 pid rc
	echo "=== recipe $name"
	# Namespaces the recipe makes itself go with env_down too, so that a
	# recipe that failed half-way can run again.
	NS_BEFORE=$(ip netns list | awk '{ print $1 }')
	env_up "$env" || { echo "recipe: FAIL $name: environment $env"; env_down; return 1; }
	for meta in "$W"/blocks/*.meta; do
		read -r rname role bg <"$meta"
		[ "$rname" = "$name" ] || continue
		f=${meta%.meta}.sh
		n=$((n + 1))
		echo "--- $name: block $n, $role${bg:+ (background)}"
		sed 's/^/    $ /' "$f"
		if [ -n "$bg" ]; then
			before=$(listeners "$env" "$role")
			(cd "$W" && in_role "$env" "$role" timeout 300 bash -e -o pipefail "$f") \
				</dev/null > >(sed 's/^/    | /') 2>&1 &
			pids+=($!)
			for _ in $(seq 1 120); do
				[ "$(listeners "$env" "$role")" != "$before" ] && break
				kill -0 "${pids[-1]}" 2>/dev/null || break
				sleep 0.5
			done
		elif ! (cd "$W" && in_role "$env" "$role" timeout 300 bash -e -o pipefail "$f") \
			</dev/null > >(sed 's/^/    | /') 2>&1; then
			sleep 0.2
			echo "recipe: FAIL $name: block $n ($role) failed"
			for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
			env_down
			return 1
		fi
	done
	rc=0
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=1
	done
	env_down
	if [ "$n" -eq 0 ]; then
		echo "recipe: FAIL $name: no blocks"
		return 1
	fi
	if [ "$rc" -ne 0 ]; then
		echo "recipe: FAIL $name: a background block failed"
		return 1
	fi
	echo "recipe: PASS $name ($n blocks, $((SECONDS - t)) s)"
}

# A recipe lost to perftest's clock calibration (under TCG its cycle
# counter sampling can fail: "Correlation coefficient r^2 < 0.9", "Can't
# produce a report") runs once more, said in a "recipe: RETRY" line that
# packages.sh hands to selftests/check.sh's count; any other failure stands.
while read -r name env <&3; do
	run_recipe "$name" "$env" 2>&1 | tee "$W/out"
	[ "${PIPESTATUS[0]}" -eq 0 ] && continue
	if grep -q "Correlation coefficient r^2" "$W/out" &&
	   grep -q "Can't produce a report" "$W/out"; then
		echo "recipe: RETRY $name -- perftest clock calibration failed (Correlation coefficient r^2 < 0.9), run again"
		run_recipe "$name" "$env" 2>&1 | tee "$W/out"
		[ "${PIPESTATUS[0]}" -eq 0 ] && continue
	fi
	FAILED=1
done 3<"$W/recipes"
rm -rf "$W"
exit "$FAILED"
