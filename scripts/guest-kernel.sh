#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest-kernel.sh -- the headers of a Debian 12 kernel series that
# make check builds kiwi for, WITHOUT installing them: the packages are
# downloaded (apt-get download) and unpacked (dpkg-deb -x) into the cache,
# as selftests/vm/run.sh does with the guest's linux-image.  Installing
# linux-headers-6.12-amd64 instead would pull in linux-image-6.12 (its
# dependency), which the host's boot loader would then boot by default.
#
#   scripts/guest-kernel.sh SERIES          fetch if needed; print the headers' dir
#   scripts/guest-kernel.sh --path SERIES   print it only if already there
#
# SERIES is 6.12 (bookworm-security's linux-headers-6.12-amd64).  The
# newest ABI the archive offers is used: linux-headers-VER-amd64, its
# linux-headers-VER-common and linux-kbuild-SERIES... (the tools kbuild
# runs) are unpacked into KIWI_CACHE/headers/VER (default
# /var/cache/kiwi), and the one absolute path in them (the -amd64
# Makefile's include of the -common one) is pointed at the unpacked copy.
# The last line of output is the directory to pass as `make -C`:
# KIWI_CACHE/headers/VER/usr/src/linux-headers-VER.  Needs root to write
# the cache, and apt lists that include bookworm-security.  The build
# needs gcc-12 and pahole, which scripts/install-deps.sh' test set installs.
set -euo pipefail
export LC_ALL=C

path_only=
[ "${1:-}" != --path ] || { path_only=1; shift; }
SERIES=${1:?usage: scripts/guest-kernel.sh [--path] SERIES (6.12)}
CACHE_TOP=${KIWI_CACHE:-/var/cache/kiwi}/headers
say() { echo "guest-kernel: $*" >&2; }

# The newest unpacked copy of SERIES, if any.
unpacked() {
	# shellcheck disable=SC2012 # version-sorted, names without spaces
	ls -d "$CACHE_TOP"/"$SERIES".*/usr/src/linux-headers-"$SERIES".*-amd64 2>/dev/null |
		sort -V | tail -n1
}
if [ -n "$path_only" ]; then
	d=$(unpacked)
	[ -n "$d" ] && [ -e "$d/../../../.kiwi-unpacked" ] && echo "$d"
	exit $?
fi

# The ABI the metapackage points at now (apt lists updated once if the
# archive does not know it).
abi_pkg() {
	apt-cache depends "linux-headers-$SERIES-amd64" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-headers-[0-9.]*[^ ]*-amd64\)$/\1/p' | head -n1
}
pkg=$(abi_pkg)
if [ -z "$pkg" ]; then
	say "apt-get update (the archive does not know linux-headers-$SERIES-amd64 yet)"
	apt-get update -q >&2 || true
	pkg=$(abi_pkg)
fi
if [ -z "$pkg" ]; then
	d=$(unpacked)
	[ -n "$d" ] || { say "no linux-headers-$SERIES-amd64 in the apt lists (bookworm-security missing from sources?)"; exit 1; }
	say "archive unreachable; using the cached $d"
	echo "$d"
	exit 0
fi
KVER=${pkg#linux-headers-}
DEST=$CACHE_TOP/$KVER
HDR=$DEST/usr/src/linux-headers-$KVER
if [ -e "$DEST/.kiwi-unpacked" ]; then
	echo "$HDR"
	exit 0
fi

mkdir -p "$CACHE_TOP"
exec 9>"$CACHE_TOP/.lock"
flock 9
[ ! -e "$DEST/.kiwi-unpacked" ] || { echo "$HDR"; exit 0; }
common=${pkg%-amd64}-common
# linux-kbuild-6.12.117+deb12: the -amd64 package's kbuild dependency.
kbuild=$(apt-cache depends "$pkg" | sed -n 's/^ *Depends: \(linux-kbuild-[^ ]*\)$/\1/p' | head -n1)
[ -n "$kbuild" ] || { say "cannot tell $pkg's linux-kbuild package"; exit 1; }
say "fetching $pkg, $common, $kbuild into $DEST (not installed)"
rm -rf "$DEST.new"
mkdir -p "$DEST.new/deb"
chmod 777 "$DEST.new/deb"	# apt-get download drops privileges to _apt
(cd "$DEST.new/deb" && apt-get download -q "$pkg" "$common" "$kbuild") >&2
for deb in "$DEST.new"/deb/*.deb; do
	dpkg-deb -x "$deb" "$DEST.new"
done
rm -rf "$DEST.new/deb"
sed -i "s|^include /usr/src/|include $DEST/usr/src/|" \
	"$DEST.new/usr/src/linux-headers-$KVER/Makefile"
echo "$pkg $common $kbuild" >"$DEST.new/.kiwi-unpacked"
rm -rf "$DEST"
mv "$DEST.new" "$DEST"
# The -amd64 Makefile names the final path: correct only after the move.
grep -q "^include $DEST/" "$HDR/Makefile" || { say "Makefile include not rewritten"; exit 1; }
say "unpacked: $(du -sh "$DEST" | cut -f1) in $DEST"
echo "$HDR"
