#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/run.sh -- run one command in a throw-away QEMU guest that boots
# Debian's own kernel (the one matching the installed linux-headers) and
# sees the host's root file system read-only (writes go to a tmpfs overlay).
#
#   selftests/vm/run.sh [options] -- <command> [args...]
#     --module FILE   (repeatable) an extra .ko, loadable in the guest with
#                     `modprobe <name>` (installed under
#                     /lib/modules/$KVER/updates/, depmod'ed on the host)
#     --timeout SEC   kill the guest after SEC seconds (default 600); exit 124
#     --mem MB        guest RAM (default 2048)
#     --smp N         guest CPUs (default 2)
#     --dmesg FILE    where to save the guest's dmesg
#                     (default build/vm/dmesg-last.log)
#     --quiet         do not echo the kernel console, only the command's output
#     --slub-debug F  slub_debug flags for the guest kernel (default FZPU:
#                     sanity checks, red zones, poisoning, alloc/free owner
#                     tracking); "off" boots without slub_debug (benchmarks:
#                     owner tracking saves a stack trace per allocation)
#     --append ARGS   more guest kernel command line (word-split)
#     --kernel DIR    boot a kernel built from source instead of Debian's:
#                     DIR as made by scripts/build-sanitizer-kernel.sh
#                     (DIR/release, DIR/root/boot/vmlinuz-R and its
#                     modules in DIR/root/lib/modules/R); also
#                     KIWI_VM_KERNEL=DIR.  --module files must be built
#                     against DIR/build.
#     -h, --help      this text
#
# Exit code: the command's (1 if it was 124, 125 or 126); 124 on timeout ("vm: timeout"); 125 if the guest
# died after the command started, without reporting an exit code; 126 for a
# harness fault -- the guest died or hung before the command started
# (within KIWI_VM_BOOT_TIMEOUT seconds, default 150), so nothing of the
# command (or of kiwi) ran, or its kernel trapped on an int3 that its text
# no longer holds, at any time (selftests/vm/emulator-fault.sh: the emulator's
# doing, never the kernel's): "vm: harness fault: ..." and the console's tail
# on stderr, never retried here (selftests/check.sh reruns the phase once and
# says so); 1 if the command succeeded but the guest's dmesg shows kernel
# trouble (selftests/vm/check-dmesg.sh: WARNING, BUG, Oops, slub_debug
# reports, ...), whose lines are then printed.
#
# The command runs as root in the guest, in the same cwd as `run.sh` was called
# from (the guest sees the host's / at the same paths), stdin /dev/null,
# stdout+stderr on the guest's ttyS1 = our stdout, byte for byte (no \r).
# The kernel console (ttyS0, loglevel 5: warnings and worse) is mixed into
# our stdout too, unless --quiet.  KIWI_* environment variables are
# forwarded to the command.  Files it writes are lost (tmpfs overlay),
# except in /run/kiwi (the per-run share, build/vm/run.*/out on the host,
# removed at exit).  In the guest, /lib/modules/$KVER is Debian's modules
# plus updates/<each --module>; /etc/libibverbs.d/kiwi.driver points at
# <repo>/build/provider/libkiwi.
#
# Environment: KVER (guest kernel, default: newest
# /usr/src/linux-headers-6.1.*-amd64), KIWI_CACHE (default /var/cache/kiwi:
# unpacked linux-image + initramfs, built on first use; needs apt access),
# KIWI_QEMU_EXTRA (extra qemu arguments, word-split), KIWI_VM_NOHZ (on: boot
# without nohz=off, see below).
#
# Logs: build/vm/console-last.log (both serial ports, or with --quiet the
# kernel console only), the dmesg file (on timeout or a guest crash: the
# console log instead).  See selftests/vm/README.md.
set -euo pipefail

usage() { sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; }
short_usage() { sed -n '/^#   selftests/,/^#     -h/s/^# \{0,1\}//p' "$0"; }

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))

modules=()
timeout=600
mem=2048
smp=2
dmesg_out=
quiet=
slub=FZPU
extra_append=
kdir=${KIWI_VM_KERNEL:-}
bad() { echo "vm: $*" >&2; short_usage >&2; exit 2; }
num() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || bad "$1 needs a positive number, not '$2'"; }
while [ $# -gt 0 ]; do
	opt=$1 val=
	case "$opt" in
	--*=*) val=${opt#*=}; opt=${opt%%=*}; shift ;;
	--module|--timeout|--mem|--smp|--dmesg|--slub-debug|--append|--kernel)
		[ $# -ge 2 ] || bad "$opt needs an argument"
		val=$2; shift 2 ;;
	*) shift ;;
	esac
	case "$opt" in
	--module) [ -f "$val" ] || bad "no such module file: $val"; modules+=("$(readlink -f "$val")") ;;
	--timeout) num "$opt" "$val"; timeout=$val ;;
	--mem) num "$opt" "$val"; mem=$val ;;
	--smp) num "$opt" "$val"; smp=$val ;;
	--dmesg) dmesg_out=$(readlink -m "$val") ;;
	--slub-debug)
		[[ $val =~ ^([A-Za-z]+|off)$ ]] || bad "--slub-debug takes flags like FZPU, or off"
		slub=$val ;;
	--append) extra_append+=" $val" ;;
	--kernel) kdir=$val ;;
	--quiet|-q) quiet=1 ;;
	-h|--help) usage; exit 0 ;;
	--) break ;;
	*) bad "unknown option '$opt' (the command goes after --)" ;;
	esac
done
[ $# -gt 0 ] || bad "no command given"

VMDIR=$REPO/build/vm
mkdir -p "$VMDIR"
dmesg_out=${dmesg_out:-$VMDIR/dmesg-last.log}
console_last=$VMDIR/console-last.log

if [ -n "$kdir" ]; then
	# A kernel built from source: its own directory is its cache (the
	# initramfs goes there too), nothing to fetch.
	if [ ! -f "$kdir/release" ] || [ ! -d "$kdir/root/lib/modules" ]; then
		bad "--kernel $kdir: not a scripts/build-sanitizer-kernel.sh directory"
	fi
	kdir=$(readlink -f "$kdir")
	KVER=$(cat "$kdir/release")
elif [ -z "${KVER:-}" ]; then
	hdr=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)
	[ -n "$hdr" ] || { echo "vm: no /usr/src/linux-headers-6.1.*-amd64; run scripts/install-deps.sh or set KVER" >&2; exit 2; }
	KVER=${hdr#/usr/src/linux-headers-}
fi
CACHE_TOP=${KIWI_CACHE:-/var/cache/kiwi}
CACHE=${kdir:-$CACHE_TOP/$KVER}

say() { [ -n "$quiet" ] || echo "vm: $*" >&2; }
t0=${EPOCHREALTIME/./}
elapsed() { local d=$(( ${EPOCHREALTIME/./} - t0 )); printf '%d.%d' $((d / 1000000)) $((d / 100000 % 10)); }

# ---------------------------------------------------------------- cache --
# $CACHE/root:          the unpacked linux-image-$KVER[-unsigned] (depmod'ed)
# $CACHE/initramfs.img: busybox + 9p/overlay modules + initramfs-init.sh
mkdir -p "$CACHE_TOP"
exec 9>"$CACHE_TOP/.lock-$KVER"
flock 9

if [ -z "$kdir" ] && [ ! -e "$CACHE/root/.kiwi-unpacked" ]; then
	say "first use of $KVER: fetching and unpacking its linux-image into $CACHE"
	rm -rf "$CACHE.new"
	mkdir -p "$CACHE.new/deb"
	chmod 777 "$CACHE.new/deb"	# apt-get download drops privileges to _apt
	got=
	for try in 1 2; do
		for pkg in "linux-image-$KVER-unsigned" "linux-image-$KVER"; do
			if (cd "$CACHE.new/deb" && apt-get download -q "$pkg") >&2; then
				got=$pkg; break 2
			fi
		done
		[ $try = 2 ] || { say "apt-get update"; apt-get update -q >&2 || true; }
	done
	[ -n "$got" ] || {
		echo "vm: cannot download linux-image-$KVER(-unsigned); if the archive has moved on to a newer ABI," >&2
		echo "vm: 'apt-get update && apt-get install linux-headers-amd64' and rebuild, or set KVER" >&2
		exit 2
	}
	dpkg-deb -x "$CACHE.new"/deb/*.deb "$CACHE.new/root"
	rm -rf "$CACHE.new/deb"
	depmod -b "$CACHE.new/root" "$KVER"
	echo "$got" >"$CACHE.new/root/.kiwi-unpacked"
	rm -rf "$CACHE"
	mv "$CACHE.new" "$CACHE"
fi
KROOT=$CACHE/root
KMODS=$KROOT/lib/modules/$KVER
VMLINUZ=$KROOT/boot/vmlinuz-$KVER
[ -f "$VMLINUZ" ] || { echo "vm: $VMLINUZ missing; rm -rf $CACHE and retry" >&2; exit 2; }

# Insmod order for what the initramfs needs, dependencies first.
initrd_mods=()
for m in virtio_pci 9pnet_virtio 9p overlay; do
	while read -r cmd path _; do
		[ "$cmd" = insmod ] || continue
		case " ${initrd_mods[*]} " in *" $path "*) ;; *) initrd_mods+=("$path") ;; esac
	done < <(modprobe -d "$KROOT" -S "$KVER" --show-depends "$m")
done
INITRD=$CACHE/initramfs.img
key=$( {
	echo "initramfs format 1"
	# Contents only: the same image whichever checkout boots it.
	sha256sum </bin/busybox
	sha256sum <"$HERE/initramfs-init.sh"
	printf '%s\n' "${initrd_mods[@]}" | xargs ls -l --time-style=+%s
} | sha256sum | cut -d' ' -f1)
if [ ! -f "$INITRD" ] || [ "$(cat "$INITRD.key" 2>/dev/null)" != "$key" ]; then
	say "building initramfs"
	ird=$(mktemp -d "$CACHE/initramfs.XXXXXX")
	mkdir -p "$ird"/{bin,dev,proc,sys,modules}
	cp /bin/busybox "$ird/bin/busybox"
	ln -s busybox "$ird/bin/sh"
	cp "$HERE/initramfs-init.sh" "$ird/init"
	chmod 755 "$ird/init"
	: >"$ird/modules.list"
	for p in "${initrd_mods[@]}"; do
		b=$(basename "$p")
		case "$p" in
		*.ko.xz)  xz -dc "$p" >"$ird/modules/${b%.xz}"; b=${b%.xz} ;;
		*.ko.zst) zstd -qdc "$p" >"$ird/modules/${b%.zst}"; b=${b%.zst} ;;
		*.ko.gz)  gzip -dc "$p" >"$ird/modules/${b%.gz}"; b=${b%.gz} ;;
		*)        cp "$p" "$ird/modules/$b" ;;
		esac
		echo "$b" >>"$ird/modules.list"
	done
	(cd "$ird" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$INITRD.tmp"
	rm -rf "$ird"
	mv "$INITRD.tmp" "$INITRD"
	echo "$key" >"$INITRD.key"
fi
flock -u 9

# -------------------------------------------------------------- per run --
RUN=$(mktemp -d "$VMDIR/run.XXXXXX")
OUT=$RUN/out
console_log=$RUN/console.log
mkdir -p "$OUT"
qpid=
wpid=
bpid=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -z "$wpid" ] || kill "$wpid" 2>/dev/null || true
	[ -z "$bpid" ] || kill "$bpid" 2>/dev/null || true
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null || true
		sleep 0.5
		kill -9 "$qpid" 2>/dev/null || true
	fi
	if [ -s "$console_log" ]; then
		cp "$console_log" "$console_last.$$" && mv -f "$console_last.$$" "$console_last"
	fi
	rm -rf "$RUN"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "vm: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# /lib/modules/$KVER for the guest: the cache itself, or with --module a
# per-run tree: symlinks to the cached Debian modules + copies of the extra
# .ko files in updates/ + a fresh depmod (host side: ~0.6 s, vs. far longer
# under TCG in the guest).
if [ ${#modules[@]} -eq 0 ]; then
	moddir=$KMODS
else
	mroot=$RUN/modroot
	moddir=$mroot/lib/modules/$KVER
	mkdir -p "$moddir/updates"
	for f in kernel modules.builtin modules.builtin.modinfo modules.order; do
		[ -e "$KMODS/$f" ] && ln -s "$KMODS/$f" "$moddir/$f"
	done
	for m in "${modules[@]}"; do
		cp "$m" "$moddir/updates/"
	done
	depmod -b "$mroot" "$KVER"
fi

# vm.env: for the initramfs (busybox sh); config: for guest-init.sh (bash).
{
	printf 'KIWI_VM_KVER=%q\n' "$KVER"
	printf 'KIWI_VM_MODDIR=%q\n' "$moddir"
	printf 'KIWI_VM_REPO=%q\n' "$REPO"
} >"$OUT/vm.env"
{
	printf 'KIWI_VM_CWD=%q\n' "$PWD"
	printf 'KIWI_VM_QUIET=%q\n' "$quiet"
	printf 'KIWI_VM_CMD=('; printf ' %q' "$@"; printf ' )\n'
	for v in ${!KIWI_@}; do
		case "$v" in KIWI_VM_*) continue ;; esac
		printf 'export %s=%q\n' "$v" "${!v}"
	done
} >"$OUT/config"

# Two serial ports: ttyS0 = kernel console, ttyS1 = the command's output.
# Both go to our stdout (one qemu mux chardev), or with --quiet only ttyS1
# does.  The console log always has ttyS0 (and without --quiet, ttyS1).
append="console=ttyS0 panic=-1 loglevel=5"	# 5: WARN_ON & co. show
# nohz=off: with NO_HZ the kernel flips the timers_nohz_active static key
# at boot (tick_nohz_activate()), patching enqueue_timer() & co. with int3
# while the other vCPU runs them; under multi-threaded TCG a vCPU then
# executed the int3 after the patch was done (an Oops in enqueue_timer,
# 6.12, "Not tainted").  A periodic tick needs no such patch.  See
# selftests/vm/README.md, "Boot crashes".  KIWI_VM_NOHZ=on: leave NO_HZ on
# (to measure the difference).
[ "${KIWI_VM_NOHZ:-off}" = on ] || append+=" nohz=off"
# tsc=reliable: the clocksource watchdog compares the TSC with the HPET,
# whose emulated reads a loaded host delays; it then calls the TSC
# unstable mid-test ("Marking clocksource 'tsc' as unstable because the
# skew is too large", seen at 50 s in a 6.12 data-path guest), and a
# worker disables the __sched_clock_stable static key, patching
# sched_clock() & co. while the other vCPU runs them: the same race as
# above, at any time.  Under TCG the TSC follows the host's clock, and
# with the watchdog off nothing patches it.  KIWI_VM_TSC=watchdog leaves
# the watchdog on.
[ "${KIWI_VM_TSC:-reliable}" = watchdog ] || append+=" tsc=reliable"
[ "$slub" = off ] || append+=" slub_debug=$slub"
# A task stuck in D state for 30 s is reported (the default, 120 s, is
# longer than most test scripts wait: the guest powered off first and
# the hang went unseen); check-dmesg.sh fails the run on the report.
append+=" sysctl.kernel.hung_task_timeout_secs=30"
append+=$extra_append
append+=" rdinit=/init kiwivm.init=$HERE/guest-init.sh"
append+=" mitigations=off nokaslr edd=off 8250.nr_uarts=2 i8042.noaux i8042.nokbd i8042.nopnp"
if [ -z "$quiet" ]; then
	serial=(-chardev "stdio,id=con0,mux=on,signal=off,logfile=$console_log"
		-serial chardev:con0 -serial chardev:con0)
else
	append+=" kiwivm.quiet=1"
	serial=(-chardev "file,id=con0,path=$console_log" -serial chardev:con0
		-chardev "stdio,id=cmd0,signal=off" -serial chardev:cmd0)
fi

# The sanitizer kernel (--kernel) boots with 4-level paging.  With
# QEMU's "max" CPU it chose 5-level (LA57), and 1 boot in 3 died at 2 s
# in a flood of "KASAN: wild-memory-access" from interrupt handlers:
# identify_cpu(), run with interrupts on, clears the boot CPU's feature
# words and reads them back, and an interrupt in that window sees
# pgtable_l5_enabled() false, so KASAN takes every 5-level direct-map
# address (ff11...) for one outside the kernel.  A Linux 6.1 fault under
# slow TCG, before kiwi is loaded; Debian's kernels have no KASAN and
# keep "max" as it is.
cpu=max
[ -z "$kdir" ] || cpu=max,la57=off
# shellcheck disable=SC2054 # commas are qemu option syntax
qemu=(qemu-system-x86_64
	-accel tcg,thread=multi -cpu "$cpu" -m "$mem" -smp "$smp"
	-machine q35 -nographic -nodefaults -no-user-config -nic none -no-reboot
	"${serial[@]}"
	-fw_cfg name=etc/sercon-port,string=0
	-kernel "$VMLINUZ" -initrd "$INITRD" -append "$append"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$OUT,mount_tag=out,security_model=none,multidevs=remap"
)
# shellcheck disable=SC2206
[ -z "${KIWI_QEMU_EXTRA:-}" ] || qemu+=($KIWI_QEMU_EXTRA)

# A guest that never reaches its command hung while booting -- rare under
# TCG, in kernel init, before any of our code runs (seen: a soft lockup in
# the keyring setup).  That is a harness fault (exit 126), not retried.
boot_limit=${KIWI_VM_BOOT_TIMEOUT:-150}
for attempt in 1; do
	rm -f "$RUN/timeout" "$RUN/boothang"
	say "booting $KVER (mem ${mem}M, smp $smp, timeout ${timeout}s)"
	# qemu gets no stdin (CI has none; a terminal would be put in raw
	# mode).  Its one expected warning (the fw_cfg item that keeps
	# SeaBIOS from writing terminal escapes on the serial port) is
	# filtered out of its stderr.
	"${qemu[@]}" </dev/null 2> >(grep -vE --line-buffered 'fw_cfg item names should be prefixed|terminating on signal' >&2) &
	qpid=$!
	# Watchdogs: background sleeps we can kill; flag files tell a
	# timeout or a boot hang from an ordinary exit.
	(
		trap 'kill $s 2>/dev/null; exit 0' TERM
		sleep "$timeout" & s=$!
		wait $s
		touch "$RUN/timeout"
		kill "$qpid" 2>/dev/null
	) &
	wpid=$!
	(
		for ((i = 0; i < boot_limit; i++)); do
			[ -e "$OUT/started" ] && exit 0
			sleep 1
		done
		touch "$RUN/boothang"
		kill "$qpid" 2>/dev/null
	) &
	bpid=$!
	qrc=0
	wait "$qpid" || qrc=$?
	qpid=
	kill "$wpid" "$bpid" 2>/dev/null || true
	wait "$wpid" "$bpid" 2>/dev/null || true
	wpid=
	bpid=
done

# The guest's dmesg; failing that (timeout, crash), the console log, which
# has the kernel messages up to the console loglevel.
mkdir -p "$(dirname "$dmesg_out")"
if [ -f "$OUT/dmesg" ]; then
	cp "$OUT/dmesg" "$dmesg_out"
else
	cp "$console_log" "$dmesg_out" 2>/dev/null || : >"$dmesg_out"
fi

# An int3 trap at kernel text that holds no int3 is the emulator's fault,
# whenever it came (emulator-fault.sh says why): a harness fault like a boot
# that died, reported with its evidence and never judged as the test's.
if [ -s "$console_log" ] && why=$("$HERE/emulator-fault.sh" "$console_log"); then
	echo "vm: harness fault: the guest kernel trapped on a stale int3 (${why}); console:" >&2
	grep -m1 -A14 -E 'int3: [0-9a-f]{4} \[#' "$console_log" | sed 's/^/vm:   /' >&2
	exit 126
fi

if [ -f "$OUT/exit" ]; then
	rc=$(cat "$OUT/exit")
else
	if [ -f "$RUN/boothang" ] || [ ! -e "$OUT/started" ]; then
		if [ -f "$RUN/boothang" ]; then
			echo "vm: harness fault: the guest did not reach its command within ${boot_limit}s; console:" >&2
		else
			echo "vm: harness fault: the guest died before its command started (qemu exit $qrc); console:" >&2
		fi
		tail -n 12 "$console_log" 2>/dev/null | sed 's/^/vm:   /' >&2
		# Shown, not judged: kiwi was not loaded yet.
		[ ! -s "$console_log" ] || "$HERE/check-dmesg.sh" "$console_log" >&2 || true
		exit 126
	elif [ -f "$RUN/timeout" ]; then
		echo "vm: timeout" >&2
		rc=124
	else
		echo "vm: the guest died without reporting an exit code (qemu exit $qrc); see $console_last" >&2
		rc=125
	fi
	"$HERE/check-dmesg.sh" "$dmesg_out" >&2 || true
	exit $rc
fi
say "command exit code $rc after $(elapsed) s"
# 124-126 are this script's own verdicts (timeout, guest death, harness
# fault; selftests/check.sh reruns a phase on 126).  A command that itself
# exits with one of them (a `timeout` inside it, a script that is not
# executable) failed: say so and make it 1.
case $rc in
124|125|126)
	echo "vm: the command itself exited $rc (reported as 1: 124-126 are the harness's own codes)" >&2
	rc=1 ;;
esac

if ! "$HERE/check-dmesg.sh" "$dmesg_out" >&2; then
	echo "vm: kernel trouble in the guest's dmesg ($dmesg_out)" >&2
	[ "$rc" -ne 0 ] || rc=1
# The console has every warning too, also one that a chatty boot pushed
# out of the dmesg ring buffer before it was saved.  Only with --quiet is
# it the kernel's alone (otherwise the command's output is mixed in).
elif [ -n "$quiet" ] && [ -s "$console_log" ] &&
     ! "$HERE/check-dmesg.sh" "$console_log" >&2; then
	echo "vm: kernel trouble on the guest's console ($console_log)" >&2
	[ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
