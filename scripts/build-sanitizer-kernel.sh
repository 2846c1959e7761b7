#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/build-sanitizer-kernel.sh -- build (once per machine) the kernel the
# sanitizer phase of make check boots: Debian's linux-source-6.1 (the same
# version as the 6.1 guest kernel), x86_64 defconfig plus the fragment
# selftests/vm/sanitizer.config (KASAN, lockdep, UBSAN, kmemleak, ...).
#
#   scripts/build-sanitizer-kernel.sh [--print-dir] [-j N]
#     --print-dir  print the cache directory this configuration maps to and
#                  exit (0 if it is built, 1 if not); builds nothing
#     -j N         parallel jobs (default: every CPU, nproc)
#
# The result goes to $KIWI_CACHE (default /var/cache/kiwi)/
# sanitizer-<linux-source version>-<hash of the fragment and the recipe>/:
#   build/                 the configured and built tree: KDIR for external
#                          modules (make -C .../build M=...)
#   root/boot/vmlinuz-R    the bzImage; R = its kernel release
#   root/lib/modules/R     its modules (modules_install, depmod'ed)
#   release                R
#   build.log, time        the build's log and how long it took (seconds)
# so a second call (or make check on the same machine) finds it and only
# prints the directory.  A changed fragment or recipe is a new directory.
# Concurrent calls wait for each other (flock); a failed or interrupted
# build leaves only <dir>.tmp, which the next call starts over.  The last
# line on stdout is the directory; progress goes to stderr.
#
# Needs (scripts/install-deps.sh): linux-source-6.1, gcc, make, bc, bison,
# flex, libelf-dev, libssl-dev, cpio, xz-utils, kmod.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
FRAGMENT=$REPO/selftests/vm/sanitizer.config
TARBALL=/usr/src/linux-source-6.1.tar.xz
# Bump when the steps below change what gets built.
RECIPE=1

say() { echo "build-sanitizer-kernel: $*" >&2; }
die() { say "$*"; exit 1; }

print_only=
jobs=$(nproc)
while [ $# -gt 0 ]; do
	case "$1" in
	--print-dir) print_only=1; shift ;;
	-j) [ $# -ge 2 ] || die "-j needs a number"; jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	-h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "-j takes a positive number, not '$jobs'"

[ -r "$TARBALL" ] || die "no $TARBALL (scripts/install-deps.sh installs linux-source-6.1)"
[ -r "$FRAGMENT" ] || die "no $FRAGMENT"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
	die "linux-source-6.1 is not installed as a package"
# The fragment's comments count too: they still name the scripts as they
# were before the .sh rename, since a new key is an hour's rebuild.
key=$( {
	echo "recipe $RECIPE"
	cat "$FRAGMENT"
	gcc --version | head -n1
} | sha256sum | cut -c1-12)
CACHE_TOP=${KIWI_CACHE:-/var/cache/kiwi}
OUT=$CACHE_TOP/sanitizer-$srcver-$key

if [ -n "$print_only" ]; then
	echo "$OUT"
	[ -e "$OUT/.done" ]
	exit
fi

mkdir -p "$CACHE_TOP"
exec 8>"$CACHE_TOP/.lock-sanitizer-$srcver-$key"
if ! flock -n 8; then
	say "another build of $OUT is running; waiting for it"
	flock 8
fi
if [ -e "$OUT/.done" ]; then
	say "cached: $OUT (built in $(cat "$OUT/time" 2>/dev/null || echo '?') s)"
	echo "$OUT"
	exit 0
fi

t0=$SECONDS
TMP=$OUT.tmp
LOG=$TMP/build.log
K=$TMP/build
say "building Linux $srcver with $(basename "$FRAGMENT") in $TMP, $jobs jobs; log: $LOG"
# An interrupted build's unpacked source is reused (kbuild redoes what the
# configuration below changes); anything else starts from the tarball.
if [ -e "$K/.kiwi-unpacked" ]; then
	say "reusing the source unpacked by an interrupted build"
else
	rm -rf "$TMP"
	mkdir -p "$K"
	say "unpacking $TARBALL"
	tar -xJf "$TARBALL" -C "$K" --strip-components=1
	: >"$K/.kiwi-unpacked"
fi

say "configuring: x86_64 defconfig + $(basename "$FRAGMENT")"
{
	make -C "$K" defconfig
	(cd "$K" && scripts/kconfig/merge_config.sh -m .config "$FRAGMENT")
	make -C "$K" olddefconfig
} >>"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; die "configuration failed"; }

# Every line of the fragment must hold in the final .config: an option
# whose dependencies are missing is dropped silently by olddefconfig, and
# a sanitizer that is silently off would make the phase prove nothing.
bad=0
while IFS= read -r line; do
	if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
		grep -qxF -- "$line" "$K/.config" && continue
		got=$(grep -E "^(# )?${BASH_REMATCH[1]}[= ]" "$K/.config" || echo "absent")
		say "config: wanted $line, got: $got"
		bad=1
	elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
		got=$(grep -E "^${BASH_REMATCH[1]}=" "$K/.config" || true)
		[ -z "$got" ] && continue
		say "config: wanted ${BASH_REMATCH[1]} off, got: $got"
		bad=1
	fi
done <"$FRAGMENT"
[ "$bad" = 0 ] || die "the final .config does not match $FRAGMENT (see above)"
say "configuration verified: every line of the fragment holds"

# Progress: one line per 500 lines of kbuild output, with the elapsed time.
progress() {
	awk '
		{ print >> "'"$LOG"'"; fflush("'"$LOG"'") }
		NR % 500 == 0 { printf "build-sanitizer-kernel: ... %d steps: %s\n", NR, $0 > "/dev/stderr"; fflush("/dev/stderr") }'
}
say "compiling (bzImage, modules)"
if ! make -C "$K" -j"$jobs" bzImage modules 2>&1 | progress; then
	grep -E 'error|Error' "$LOG" | head -n 20 >&2
	die "the kernel build failed (log: $LOG)"
fi
rel=$(make -s -C "$K" kernelrelease)
say "installing modules for $rel"
make -C "$K" INSTALL_MOD_PATH="$TMP/root" INSTALL_MOD_STRIP=1 DEPMOD=true modules_install >>"$LOG" 2>&1 ||
	die "modules_install failed (log: $LOG)"
rm -f "$TMP/root/lib/modules/$rel/build" "$TMP/root/lib/modules/$rel/source"
ln -s "$OUT/build" "$TMP/root/lib/modules/$rel/build"
depmod -b "$TMP/root" "$rel"
mkdir -p "$TMP/root/boot"
cp "$K/arch/x86/boot/bzImage" "$TMP/root/boot/vmlinuz-$rel"
cp "$K/.config" "$TMP/root/boot/config-$rel"
echo "$rel" >"$TMP/release"
echo $((SECONDS - t0)) >"$TMP/time"
# The tree moves to its final name; kbuild keeps no absolute paths in what
# an external module build reads (include/config, scripts, Module.symvers).
rm -rf "$OUT"
mv "$TMP" "$OUT"
: >"$OUT/.done"
say "built Linux $rel in $((SECONDS - t0)) s: $OUT"
echo "$OUT"
