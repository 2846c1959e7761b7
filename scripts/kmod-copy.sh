#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/kmod-copy.sh -- the module's sources copied out of the tree, and
# built there against another kernel's headers: how selftests/check.sh
# (6.12 and sanitizer phases), selftests/check-2host.sh (6.12) and
# scripts/install.sh (the DKMS sources) get a kiwi of their own.
#
#   scripts/kmod-copy.sh [--kconsumer] DIR                       copy only
#   scripts/kmod-copy.sh [--kconsumer] DIR KDIR [MAKE_ARG...]    copy, build
#
# DIR is emptied first (rm -rf), then gets Kbuild, VERSION, include/ and
# kmod/ (Kbuild, *.c, *.h; not the generated *.mod.c); with --kconsumer
# also the test kernel consumer, kconsumer/ (selftests/kconsumer's Kbuild
# and *.c) and the abuse/*.h it includes.  Given KDIR (a kernel build
# directory, as for make -C), then `make -C KDIR M=DIR MAKE_ARG...
# modules` (DIR/kmod/kiwi.ko), and with --kconsumer the same for
# M=DIR/kconsumer.  Prints only what make prints (callers keep it as
# their build log), and one "kmod-copy: error: ..." line if the copy
# fails; exit status 0 if all went well.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
usage() {
	echo "usage: scripts/kmod-copy.sh [--kconsumer] DIR [KDIR [MAKE_ARG...]]" >&2
	exit 2
}

kconsumer=
[ "${1:-}" != --kconsumer ] || { kconsumer=1; shift; }
[ $# -ge 1 ] || usage
DIR=$1
shift
case "$DIR" in
"" | / | "$ROOT" | "$ROOT"/ | "$ROOT"/kmod | "$ROOT"/kmod/)
	echo "kmod-copy: refusing to empty '$DIR'" >&2
	exit 2
	;;
esac

copy() {
	rm -rf "$DIR" &&
	mkdir -p "$DIR/kmod" &&
	cp -r "$ROOT/Kbuild" "$ROOT/VERSION" "$ROOT/include" "$DIR/" &&
	cp "$ROOT"/kmod/Kbuild "$ROOT"/kmod/*.[ch] "$DIR/kmod/" &&
	rm -f "$DIR"/kmod/*.mod.c || return
	[ -n "$kconsumer" ] || return 0
	mkdir -p "$DIR/kconsumer" "$DIR/abuse" &&
	cp "$ROOT"/selftests/kconsumer/Kbuild "$ROOT"/selftests/kconsumer/*.c "$DIR/kconsumer/" &&
	cp "$ROOT"/selftests/abuse/*.h "$DIR/abuse/" &&
	rm -f "$DIR"/kconsumer/*.mod.c
}
# The word "error" for callers that take their summary from the log.
copy || { echo "kmod-copy: error: could not copy the sources to $DIR" >&2; exit 1; }
DIR=$(cd "$DIR" && pwd)	# M= wants it absolute

[ $# -ge 1 ] || exit 0
KDIR=$1
shift
make -C "$KDIR" M="$DIR" "$@" modules
[ -z "$kconsumer" ] || make -C "$KDIR" M="$DIR/kconsumer" "$@" modules
