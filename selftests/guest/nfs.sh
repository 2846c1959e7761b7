#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/nfs.sh -- NFS over RDMA between two kiwi devices in two
# network namespaces, run inside the test guest:
#
#	selftests/vm/run.sh --module kmod/kiwi.ko -- selftests/guest/nfs.sh
#
# A veth pair: nv0 (initial namespace, 10.98.0.1) with kiwi0, nv1
# (namespace kwb, 10.98.0.2) with kiwi1.  The kernel's NFS server (nfsd
# with svcrdma, listening on "rdma 20049") runs in kwb and exports a
# tmpfs; the kernel's NFS client (xprtrdma) mounts it with proto=rdma
# from the initial namespace.  Both are kernel consumers whose rdma_cm
# IDs take the namespace of their user (svcrdma: rdma_create_id(net, ...)
# in svc_rdma_create_listen_id(), net being the nfsd instance's;
# xprtrdma: rdma_create_id(xprt->xprt_net, ...) in rpcrdma_create_id(),
# the mounter's), so the client goes through kiwi0 and the server through
# kiwi1.
#
# Why the client is the one in the initial namespace: every `ip netns
# exec` runs in a mount namespace of its own (made private), so a mount
# made inside one is gone when it returns.  The server needs no mount
# outside its namespace: nfsd is per network namespace and its control
# file system takes the namespace of whoever mounts it, so one `ip netns
# exec kwb` mounts /proc/fs/nfsd there, runs exportfs, rpcbind, rpc.mountd
# and rpc.nfsd, and writes "rdma 20049" to the portlist.  rpcbind runs in
# kwb only: the kernel registers nfsd through /var/run/rpcbind.sock
# (rpcb_create_local_unix(), net/sunrpc/rpcb_clnt.c), an AF_LOCAL socket
# found by its path, which is the same in every namespace here; a second
# rpcbind would take it over.  NFS 3's mount reaches kwb's rpcbind and
# rpc.mountd at 10.98.0.2 over the veth pair.  The daemons keep
# that mount namespace alive, and teardown enters it (nsenter into
# rpc.mountd's mount and network namespaces) for `rpc.nfsd 0`.  NFS 3 is
# mounted with nolock: NLM would need rpc.statd and the client's lockd
# registered with an rpcbind of the initial namespace, whose socket path
# is kwb's rpcbind's here; and NLM runs over TCP/UDP, not RDMA.
#
# For NFS 4.2 and NFS 3 each: mounted with proto=rdma and addr=10.98.0.2
# (/proc/mounts), kiwi0's connection from 10.98.0.1 to 10.98.0.2:20049 in
# the initial namespace; a tree of files of mixed sizes (1 B to 64 MiB)
# copied to the server and back, SHA-256 compared; fio with O_DIRECT,
# random 4 KiB writes and sequential 1 MiB writes, every block verified
# (crc32c); unmount.  Then nfsd stops, the daemons end, kiwi1 goes, the
# namespace is deleted, the RPC/RDMA module and kiwi unload, and nothing
# kiwi allocated is left (no_leaks).  TAP 13, plan line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
EXP=/srv/kiwi-nfs
MNT=/mnt/kiwi-nfs
CLI=10.98.0.1
SRV=10.98.0.2

# The server, in kwb, in one `ip netns exec`: its mount namespace keeps
# the nfsd mount for the daemons started here.  nfsd in a namespace other
# than the initial one has no client recovery tracking but nfsdcld's (the
# legacy and nfsdcltrack ones refuse containers), so it waits out a full
# grace period before the first NFSv4 OPEN: 10 s, the least it takes.
server_up() {
	# shellcheck disable=SC2016 # expanded by that shell
	B sh -ec '
		mount -t nfsd nfsd /proc/fs/nfsd
		echo 10 >/proc/fs/nfsd/nfsv4gracetime
		exportfs -ra
		rpcbind -w
		rpc.mountd
		rpc.nfsd 4
		echo "rdma 20049" >/proc/fs/nfsd/portlist
		grep -q "^rdma 20049" /proc/fs/nfsd/portlist
		echo "threads: $(cat /proc/fs/nfsd/threads)"
	'
}

# in_server CMD...: CMD in the server's mount and network namespaces
# (those of its rpc.mountd), where /proc/fs/nfsd is kwb's nfsd.
in_server() {
	local p
	p=$(pgrep -x rpc.mountd | head -n 1)
	[ -n "$p" ] || { echo "no rpc.mountd"; return 1; }
	nsenter -t "$p" -m -n "$@"
}

setup() {
	need_tools rpcbind rpc.nfsd rpc.mountd exportfs fio nsenter || return 1
	modprobe kiwi && modprobe nfsd && modprobe rpcrdma || return 1
	ip netns add kwb && B ip link set lo up &&
	ip link add nv0 type veth peer name nv1 && ip link set nv1 netns kwb &&
	ip addr add $CLI/24 dev nv0 && B ip addr add $SRV/24 dev nv1 &&
	ip link set nv0 up && B ip link set nv1 up || return 1
	# Static neighbours: rdma_cm's first ARP lookup would otherwise
	# wait out its timeout.
	ip neigh replace $SRV dev nv0 nud permanent \
		lladdr "$(B cat /sys/class/net/nv1/address)" &&
	B ip neigh replace $CLI dev nv1 nud permanent \
		lladdr "$(cat /sys/class/net/nv0/address)" &&
	rdma link add kiwi0 type kiwi netdev nv0 &&
	B rdma link add kiwi1 type kiwi netdev nv1 || return 1
	mkdir -p $EXP $MNT && mount -t tmpfs -o size=400M tmpfs $EXP || return 1
	# fsid=0: the NFSv4 root is the export itself.
	echo "$EXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
	server_up || return 1
	# The server is kwb's alone: the initial namespace has no nfsd
	# listening, kwb has kiwi1's listen on 20049 (rdma_cm's TCP socket).
	if ss -ltnH | grep -q ':2049 \|:20049 '; then
		echo "something listens on 2049 or 20049 in the initial namespace:"
		ss -ltnH
		return 1
	fi
	wait_port $SRV 20049 || { echo "kwb: nothing listens on 20049"; B ss -ltn; return 1; }
}

# A tree of files: sizes from 1 byte to 64 MiB, odd ones included; 300 files.
make_tree() {
	local d=$1 i s
	mkdir -p "$d/sub/deeper"
	i=0
	for s in 1 2 511 512 513 4095 4096 4097 65535 65536 65537 1048575 \
		 1048576 3000001 16777216 67108864; do
		head -c $s /dev/urandom >"$d/f$i"
		head -c $((s / 3 + 1)) /dev/urandom >"$d/sub/g$i"
		i=$((i + 1))
	done
	for i in $(seq 1 268); do
		head -c $((RANDOM * 3)) /dev/urandom >"$d/sub/deeper/s$i"
	done
}

sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

nfs_version() {
	local v=$1 path=$2 opts=$3 n
	if ! timeout 60 mount -t nfs -o "rdma,port=20049,vers=$v$opts" \
		"$SRV:$path" $MNT >"$TMPD/mount" 2>&1 ||
	   ! mountpoint -q $MNT ||
	   ! grep " $MNT nfs" /proc/mounts | grep -q ",proto=rdma," ||
	   ! grep " $MNT nfs" /proc/mounts | grep -qF ",addr=$SRV "; then
		notok "NFS $v: mount -o rdma,port=20049,vers=$v$opts $SRV:$path"
		{ cat "$TMPD/mount"; grep nfs /proc/mounts; } | diag
		nvme_klog 20
		return
	fi
	ok "NFS $v: mounted from the initial namespace over RDMA, server $SRV in kwb ($(awk -v m=$MNT '$2 == m { print $4 }' /proc/mounts |
		tr ',' '\n' | grep -E '^(vers|rsize|wsize|proto|addr)=' | paste -sd,))"
	# The RPC/RDMA connection is kiwi0's TCP connection to kiwi1,
	# across the veth pair: established in the initial namespace from
	# the client's address to the server's port 20049, and in kwb the
	# other way.
	if ss -tnH state established | grep -qE " $CLI:[0-9]+ +$SRV:20049( |\$)" &&
	   B ss -tnH state established | grep -qE " $SRV(%nv1)?:20049 +$CLI:[0-9]+( |\$)"; then
		ok "NFS $v: RPC/RDMA connection $CLI -> $SRV:20049 (kiwi0) established in the initial namespace"
	else
		notok "NFS $v: RPC/RDMA connection $CLI -> $SRV:20049 (kiwi0) established in the initial namespace"
		{ ss -tn; B ss -tn; } | diag
	fi

	rm -rf "$TMPD/back"
	n=$(find "$TMPD/tree" -type f | wc -l)
	if cp -r "$TMPD/tree" "$MNT/tree$v" && sync &&
	   echo 3 >/proc/sys/vm/drop_caches &&
	   cp -r "$MNT/tree$v" "$TMPD/back" &&
	   [ "$(sums "$TMPD/tree")" = "$(sums "$TMPD/back")" ] &&
	   [ "$(sums "$TMPD/tree")" = "$(sums "$EXP/tree$v")" ]; then
		ok "NFS $v: $n files (1 B..64 MiB, $(du -sh "$TMPD/tree" | cut -f1)) copied there and back, SHA-256 equal (client, server, copy back)"
	else
		notok "NFS $v: $n files copied there and back, SHA-256 equal"
		diff <(sums "$TMPD/tree") <(sums "$TMPD/back" 2>/dev/null) | head | diag
		nvme_klog 20
	fi

	fio_verify "NFS $v: fio O_DIRECT random 4 KiB writes, every block verified" \
		"$MNT/fio4k$v" --rw=randwrite --bs=4k --size=8M --iodepth=8
	fio_verify "NFS $v: fio O_DIRECT sequential 1 MiB writes, every block verified" \
		"$MNT/fio1m$v" --rw=write --bs=1M --size=32M --iodepth=4
	if umount $MNT; then
		ok "NFS $v: unmounted"
	else
		notok "NFS $v: unmounted"
	fi
}

# teardown: nfsd stopped in kwb and its daemons ended, kiwi1 deleted and
# the namespace with it, then the client's side.
teardown() {
	local p
	in_server sh -c 'rpc.nfsd 0 && exportfs -ua' || return 1
	for p in $(pgrep -x rpc.mountd) $(pgrep -x rpcbind); do
		kill "$p"
	done
	for _ in $(seq 1 20); do
		pgrep -x 'rpc.mountd|rpcbind' >/dev/null || break
		sleep 0.5
	done
	! pgrep -ax 'rpc.mountd|rpcbind' || return 1
	B rdma link del kiwi1 && ip netns del kwb || return 1
	umount $EXP || return 1
	# nfsd's per-namespace state goes with the namespace, which the
	# kernel cleans up after `ip netns del` returns.
	for _ in $(seq 1 20); do
		modprobe -r nfsd 2>/dev/null && break
		sleep 0.5
	done
	modprobe -r nfsd rpcrdma && rdma link del kiwi0 && modprobe -r kiwi
}

tap_setup "kiwi0 (initial namespace) and kiwi1 (kwb) on a veth pair, nfsd in kwb exporting a tmpfs on rdma 20049" \
	"kiwi0 ($CLI, initial namespace) and kiwi1 ($SRV, kwb) on a veth pair, nfsd in kwb exporting a tmpfs on rdma 20049"
make_tree "$TMPD/tree"
nfs_version 4.2 / ""
nfs_version 3 $EXP ,nolock
KTEXT=$(kiwi_text)
if teardown >"$TMPD/td" 2>&1; then
	ok "teardown: nfsd in kwb stopped, kwb deleted, rpcrdma and kiwi unloaded"
else
	notok "teardown: nfsd in kwb stopped, kwb deleted, rpcrdma and kiwi unloaded"
	diag "$TMPD/td"
fi
lsmod | grep -q '^kiwi ' || no_leaks_verdict "$KTEXT"
tap_end
