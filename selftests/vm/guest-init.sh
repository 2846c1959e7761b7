#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the kiwi test guest, run by the host's bash after the initramfs
# switch_roots into the overlay of the host's root (see selftests/vm/run.sh).
#
# The initramfs already did the setup (mounts, /lib/modules/$KVER, hostname,
# lo, /etc/libibverbs.d/kiwi.driver) with busybox, which is much faster than
# host binaries over 9p.  This reads /run/kiwi/config (written by the host
# `run.sh`: the command, its cwd, the forwarded KIWI_* environment), runs the
# command with stdout/stderr on the second serial port (ttyS1 = the host
# `run.sh`'s stdout; the kernel console is ttyS0) and stdin /dev/null, then writes /run/kiwi/{exit,dmesg} and powers off.
# /run/kiwi is the per-run writable 9p share (host: build/vm/run.*/out).

OUT=/run/kiwi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8

poweroff_now() {
	/bin/busybox sync
	/bin/busybox poweroff -f 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 10
}

TTY=/dev/ttyS1
# Opened per use: its last close waits until the UART has sent everything,
# so nothing is lost at poweroff.
log() { [ -n "${KIWI_VM_QUIET:-}" ] || echo "vm: $*" >$TTY; }

# shellcheck source=/dev/null
if ! . "$OUT/config"; then
	echo "vm: cannot read $OUT/config"
	poweroff_now
fi

cd "$KIWI_VM_CWD" 2>/dev/null || { echo "vm: no directory $KIWI_VM_CWD in the guest"; cd /; }

# The network's first use flips static keys (net_get_random_once(): the
# TCP sequence and TCP/UDP hash secrets), which a worker then patches
# into the kernel text while other code may run it: under TCG a vCPU in
# that code can hit an int3 nobody claims (README, "Boot crashes"; seen
# in rping's first connect, RIP secure_tcp_seq_and_ts_off, 6.12).  Use
# the network here, before the command starts, so that a crash from it
# is a harness fault and the tests run on settled kernel text.
for a in 127.0.0.1 ::1; do
	(: </dev/tcp/$a/9) 2>/dev/null
	(echo >/dev/udp/$a/9) 2>/dev/null
done
sleep 1

# The host's boot watchdog waits for this file.
: >"$OUT/started"
echo "<6>kiwi-guest-init: running the command" >/dev/kmsg
log "running: ${KIWI_VM_CMD[*]}"
cmd=("${KIWI_VM_CMD[@]}")
(
	unset KIWI_VM_CMD KIWI_VM_CWD KIWI_VM_KVER KIWI_VM_MODDIR KIWI_VM_QUIET KIWI_VM_REPO
	exec "${cmd[@]}"
) </dev/null >$TTY 2>&1
rc=$?
log "exit code $rc"

# The exit file last: the host takes its presence as "the command finished".
dmesg >"$OUT/dmesg" 2>&1
echo "$rc" >"$OUT/exit"
poweroff_now
