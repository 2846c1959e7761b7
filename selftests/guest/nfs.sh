#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/nfs.sh -- NFS over RDMA through kiwi, run inside the
# test guest:
#
#	selftests/vm/run --module kmod/kiwi.ko -- selftests/guest/nfs.sh
#
# The kernel's NFS server (nfsd with svcrdma, listening on "rdma 20049")
# exports a tmpfs; the kernel's NFS client (xprtrdma) mounts it with
# proto=rdma, both through one kiwi device on a dummy netdev.  For NFS
# 4.2 and NFS 3 each: a tree of files of mixed sizes (1 B to 16 MiB)
# copied to the server and back, SHA-256 compared; fio with O_DIRECT,
# random 4 KiB writes and sequential 1 MiB writes, every block verified
# (crc32c); unmount.  Then nfsd stops, the RPC/RDMA module and kiwi
# unload, and nothing kiwi allocated is left (no_leaks).  TAP 13, plan
# line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
EXP=/srv/kiwi-nfs
MNT=/mnt/kiwi-nfs

setup() {
	need_tools rpcbind rpc.nfsd rpc.mountd exportfs fio || return 1
	modprobe kiwi && nvme_kiwi_up kiwi0 || return 1
	mkdir -p $EXP $MNT && mount -t tmpfs -o size=400M tmpfs $EXP || return 1
	# fsid=0: the NFSv4 root is the export itself.
	echo "$EXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
	rpcbind -w && modprobe nfsd && modprobe rpcrdma || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	exportfs -ra && rpc.mountd && rpc.nfsd 4 || return 1
	echo "rdma 20049" >/proc/fs/nfsd/portlist && grep -q '^rdma 20049' /proc/fs/nfsd/portlist
}

# A tree of files: sizes from 1 byte to 16 MiB, odd ones included.
make_tree() {
	local d=$1 i s
	mkdir -p "$d/sub/deeper"
	i=0
	for s in 1 2 511 512 513 4095 4096 4097 65535 65536 65537 1048575 \
		 1048576 3000001 16777216; do
		head -c $s /dev/urandom >"$d/f$i"
		head -c $((s / 3 + 1)) /dev/urandom >"$d/sub/g$i"
		i=$((i + 1))
	done
	for i in $(seq 1 100); do
		head -c $((RANDOM * 3)) /dev/urandom >"$d/sub/deeper/s$i"
	done
}

sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

nfs_version() {
	local v=$1 path=$2 n
	if ! timeout 60 mount -t nfs -o "rdma,port=20049,vers=$v" \
		"$NVME_ADDR:$path" $MNT >"$TMPD/mount" 2>&1 ||
	   ! mountpoint -q $MNT ||
	   ! grep -q " $MNT nfs.*proto=rdma" /proc/mounts; then
		notok "NFS $v: mount -o rdma,port=20049"
		{ cat "$TMPD/mount"; grep nfs /proc/mounts; } | diag
		nvme_klog 20
		return
	fi
	ok "NFS $v: mounted over RDMA ($(grep " $MNT " /proc/mounts | grep -o 'vers=[^,]*,r[sw]ize=[^,]*'))"

	rm -rf "$TMPD/back"
	n=$(find "$TMPD/tree" -type f | wc -l)
	if cp -r "$TMPD/tree" "$MNT/tree$v" && sync &&
	   echo 3 >/proc/sys/vm/drop_caches &&
	   cp -r "$MNT/tree$v" "$TMPD/back" &&
	   [ "$(sums "$TMPD/tree")" = "$(sums "$TMPD/back")" ] &&
	   [ "$(sums "$TMPD/tree")" = "$(sums "$EXP/tree$v")" ]; then
		ok "NFS $v: $n files (1 B..16 MiB, $(du -sh "$TMPD/tree" | cut -f1)) copied there and back, SHA-256 equal (client, server, copy back)"
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

teardown() {
	rpc.nfsd 0 && exportfs -ua && pkill rpc.mountd
	pkill rpcbind
	umount /proc/fs/nfsd
	umount $EXP
	modprobe -r nfsd rpcrdma && rdma link del kiwi0 && modprobe -r kiwi
}

tap_setup "kiwi0 on a dummy netdev, nfsd exporting a tmpfs on rdma 20049" \
	"kiwi0 on a dummy netdev, nfsd exporting a tmpfs on rdma 20049"
make_tree "$TMPD/tree"
nfs_version 4.2 /
nfs_version 3 $EXP
KTEXT=$(kiwi_text)
if teardown >"$TMPD/td" 2>&1; then
	ok "teardown: nfsd stopped, rpcrdma and kiwi unloaded"
else
	notok "teardown: nfsd stopped, rpcrdma and kiwi unloaded"
	diag "$TMPD/td"
fi
lsmod | grep -q '^kiwi ' || no_leaks_verdict "$KTEXT"
tap_end
