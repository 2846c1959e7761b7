#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/build-siw.sh -- build Linux's soft-iWARP driver (siw) out of tree, as
# the interop and benchmark peer for kiwi.  Debian's kernels ship without
# siw, so its source is taken from Debian's linux-source-6.1 package at test
# time; nothing of it is ever committed here.
#
#   scripts/build-siw.sh [OUTDIR]      (default: build/siw)
#
# Result: OUTDIR/siw.ko, built against the same headers as kiwi (KDIR, as in
# the top-level Makefile).  The sources are unpacked once into
# OUTDIR/src; a second run only re-runs kbuild (seconds).  Prints the path
# of siw.ko as its last line.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
OUT=$(readlink -m "${1:-$ROOT/build/siw}")
TARBALL=/usr/src/linux-source-6.1.tar.xz
SUB=drivers/infiniband/sw/siw

if [ -z "${KDIR:-}" ]; then
	KDIR=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null |
	       sort -V | tail -1 || true)
fi
[ -n "$KDIR" ] && [ -d "$KDIR" ] || {
	echo "build-siw: no linux-headers-6.1.*-amd64 (run make deps)" >&2
	exit 1
}

if [ ! -f "$TARBALL" ]; then
	echo "build-siw: $TARBALL missing; installing linux-source-6.1" >&2
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends linux-source-6.1 >&2
fi

mkdir -p "$OUT/src"
if [ ! -f "$OUT/src/siw_main.c" ] || [ "$TARBALL" -nt "$OUT/src/siw_main.c" ]; then
	echo "build-siw: unpacking $SUB from $TARBALL" >&2
	tmp=$(mktemp -d "$OUT/unpack.XXXXXX")
	# The tarball's top directory is linux-source-6.1/.
	tar -xJf "$TARBALL" -C "$tmp" --wildcards "*/$SUB/*"
	cp "$tmp"/*/"$SUB"/* "$OUT/src/"
	rm -rf "$tmp"
	touch "$OUT/src/siw_main.c"
fi
# The in-tree Makefile keys on CONFIG_RDMA_SIW, which Debian leaves unset.
sed -i 's/obj-\$(CONFIG_RDMA_SIW)/obj-m/' "$OUT/src/Makefile"

echo "build-siw: building against $KDIR" >&2
make -s -C "$KDIR" M="$OUT/src" modules >&2
cp "$OUT/src/siw.ko" "$OUT/siw.ko"
echo "$OUT/siw.ko"
