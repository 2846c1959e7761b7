#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the kiwi test guest's initramfs (busybox sh; built and cached by
# selftests/vm/run.sh).  Loads the modules listed in /modules.list (9p, overlay
# and their dependencies, in insmod order), mounts the host's root (9p tag
# "hostroot", read-only) as the lower layer of an overlayfs whose upper layer
# is a tmpfs, mounts the per-run writable share (tag "out") at /run/kiwi in
# the new root, and switch_roots into the guest init named by kiwivm.init= on
# the kernel command line (selftests/vm/guest-init.sh, run by the host's bash).
B=/bin/busybox

$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

die() {
	echo "kiwi-initramfs: $*"
	echo "<3>kiwi-initramfs: $*" >/dev/kmsg
	$B sleep 1
	$B poweroff -f
}

quiet=
init=
for arg in $($B cat /proc/cmdline); do
	case "$arg" in
	kiwivm.init=*) init="${arg#kiwivm.init=}" ;;
	kiwivm.quiet=1) quiet=1 ;;
	esac
done
[ -n "$init" ] || die "no kiwivm.init= on the kernel command line"

while read -r m; do
	[ -n "$m" ] || continue
	echo "<6>kiwi-initramfs: insmod $m" >/dev/kmsg
	$B insmod "/modules/$m" || die "insmod $m failed"
done </modules.list

opts9p=trans=virtio,version=9p2000.L,msize=262144
$B mkdir -p /lower /rw /newroot
echo "<6>kiwi-initramfs: mounting" >/dev/kmsg
$B mount -t 9p -o "ro,$opts9p,cache=loose" hostroot /lower || die "mount hostroot failed"
$B mount -t tmpfs -o mode=0755 rw /rw
$B mkdir -p /rw/upper /rw/work
$B mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "mount overlay failed"

for d in proc sys dev tmp run; do $B mkdir -p /newroot/$d; done
$B mount --move /proc /newroot/proc
$B mount --move /sys /newroot/sys
$B mount --move /dev /newroot/dev
$B mount -t tmpfs -o mode=1777 tmp /newroot/tmp
$B mount -t tmpfs -o mode=0755 run /newroot/run
$B mkdir -p /newroot/run/kiwi /newroot/run/kiwi-lower /newroot/run/kiwi-rw
$B mount -t 9p -o "$opts9p,cache=none" out /newroot/run/kiwi || die "mount out share failed"
# Keep the overlay's layers reachable (for debugging) after switch_root.
$B mount --move /lower /newroot/run/kiwi-lower
$B mount --move /rw /newroot/run/kiwi-rw

# Guest setup that needs no host tools: done here with busybox, because
# every exec of a host binary over 9p costs ~0.1-0.3 s under TCG.
# /run/kiwi/vm.env (from the host `run.sh`) sets KIWI_VM_KVER, KIWI_VM_MODDIR,
# KIWI_VM_REPO.
. /newroot/run/kiwi/vm.env || die "cannot read the run's vm.env"
R=/newroot
$B hostname kiwi-vm
$B ip link set lo up
for fs in debugfs:/sys/kernel/debug configfs:/sys/kernel/config tracefs:/sys/kernel/tracing; do
	[ -d "$R${fs#*:}" ] && $B mount -t "${fs%%:*}" "${fs%%:*}" "$R${fs#*:}" 2>/dev/null
done
$B mkdir -p $R/dev/pts $R/dev/shm
$B mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
$B mount -t tmpfs -o mode=1777 shm $R/dev/shm
$B ln -sf /proc/self/fd $R/dev/fd
$B ln -sf /proc/self/fd/0 $R/dev/stdin
$B ln -sf /proc/self/fd/1 $R/dev/stdout
$B ln -sf /proc/self/fd/2 $R/dev/stderr
# /lib/modules/$KVER: the cached Debian modules, or a per-run tree the host
# prepared (see run); same absolute paths as on the host.
$B mkdir -p "$R/lib/modules/$KIWI_VM_KVER"
$B mount --bind "$R$KIWI_VM_MODDIR" "$R/lib/modules/$KIWI_VM_KVER" || die "cannot bind $KIWI_VM_MODDIR"
# The kiwi user-space provider (harmless while it is not built yet).
$B mkdir -p $R/etc/libibverbs.d $R/root $R/var/tmp
echo "driver $KIWI_VM_REPO/build/provider/libkiwi" >$R/etc/libibverbs.d/kiwi.driver
# The command's output goes to the second serial port (ttyS1; the kernel
# console is ttyS0): raw, no \n -> \r\n.
$B stty -onlcr <$R/dev/ttyS1

echo "<6>kiwi-initramfs: switch_root" >/dev/kmsg
[ -n "$quiet" ] || echo "kiwi-initramfs: switching root to $init"
exec $B switch_root /newroot "$init"
