#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/install.sh -- `make install` / `make uninstall`: kiwi on this
# machine, the module through DKMS, the provider next to rdma-core's.
#
#   scripts/install.sh install     (after `make`)
#   scripts/install.sh uninstall
#
# install: copies the module sources (Kbuild, VERSION, include/, kmod/;
# scripts/kmod-copy.sh) to /usr/src/kiwi-VERSION (VERSION: scripts/version.sh)
# with dkms.conf, then
# `dkms add`, `dkms build` and `dkms install` for KIWI_KVER (default: the
# running kernel; its headers, linux-headers-KVER, must be installed:
# `make install` installs them with the build set when the archive has
# them), so `modprobe kiwi` works and DKMS rebuilds kiwi for kernels
# installed later; then `cmake --install build`: the provider
# (libkiwi-rdmav34.so) into libibverbs' provider directory and
# /etc/libibverbs.d/kiwi.driver, so any verbs program finds kiwi devices
# without RDMAV_DRIVERS; then kiwi-selftest and kiwi-diag into
# /usr/local/sbin, kiwi-link into /usr/local/lib/kiwi, kiwi-link@.service
# into /etc/systemd/system, and the man pages into /usr/local/share/man.
# Needs root.
#
# uninstall: `dkms remove --all`, the sources in /usr/src, and the files
# `cmake --install` wrote (build/install_manifest.txt, else the two known
# paths).  Module parameters go in /etc/modprobe.d/kiwi.conf, e.g.
# "options kiwi max_half_open=64 crc=Y" (see kiwi(4)); not installed.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
VERSION=$("$ROOT/scripts/version.sh")
KVER=${KIWI_KVER:-$(uname -r)}
SRC=/usr/src/kiwi-$VERSION
say() { echo "install: $*"; }
UNIT=/etc/systemd/system/kiwi-link@.service
MAN=/usr/local/share/man
TOOLS=(/usr/local/sbin/kiwi-selftest /usr/local/sbin/kiwi-diag
	/usr/local/lib/kiwi/kiwi-link "$UNIT" "$MAN/man4/kiwi.4"
	"$MAN/man8/kiwi-selftest.8" "$MAN/man8/kiwi-diag.8")
install_tools() {
	install -D -m 0755 "$ROOT/tools/kiwi-selftest" /usr/local/sbin/kiwi-selftest
	install -D -m 0755 "$ROOT/tools/kiwi-diag" /usr/local/sbin/kiwi-diag
	install -D -m 0755 "$ROOT/tools/kiwi-link" /usr/local/lib/kiwi/kiwi-link
	sed 's|/usr/lib/kiwi/|/usr/local/lib/kiwi/|' "$ROOT/tools/kiwi-link@.service" |
		install -D -m 0644 /dev/stdin "$UNIT"
	install -D -m 0644 "$ROOT/Documentation/kiwi.4" "$MAN/man4/kiwi.4"
	install -D -m 0644 "$ROOT/Documentation/kiwi-selftest.8" "$MAN/man8/kiwi-selftest.8"
	install -D -m 0644 "$ROOT/Documentation/kiwi-diag.8" "$MAN/man8/kiwi-diag.8"
	! command -v systemctl >/dev/null || systemctl daemon-reload 2>/dev/null || true
}
# What DKMS knows of this version (empty: nothing).  Not piped into
# grep -q: with pipefail, dkms dying of SIGPIPE would read as "no".
registered() { dkms status -m kiwi -v "$VERSION" 2>/dev/null || true; }

case "${1:-}" in
install)
	[ "$(id -u)" -eq 0 ] || { echo "install: needs root (sudo make install)" >&2; exit 1; }
	command -v dkms >/dev/null || "$ROOT/scripts/install-deps.sh" dkms
	[ -e "/lib/modules/$KVER/build" ] || {
		echo "install: no headers for kernel $KVER: apt install linux-headers-$KVER" >&2
		exit 1
	}
	if [ -n "$(registered)" ]; then
		say "replacing the registered kiwi $VERSION"
		dkms remove -m kiwi -v "$VERSION" --all >/dev/null
	fi
	"$ROOT/scripts/kmod-copy.sh" "$SRC"
	sed "s/#MODULE_VERSION#/$VERSION/" "$ROOT/dkms.conf" >"$SRC/dkms.conf"
	say "DKMS: kiwi $VERSION in $SRC, building for $KVER"
	dkms add -m kiwi -v "$VERSION"
	dkms build -m kiwi -v "$VERSION" -k "$KVER"
	dkms install -m kiwi -v "$VERSION" -k "$KVER"
	cmake --install "$BUILD"
	install_tools
	say "done: rdma link add NAME type kiwi netdev DEV; kiwi-selftest"
	;;
uninstall)
	if command -v dkms >/dev/null && [ -n "$(registered)" ]; then
		dkms remove -m kiwi -v "$VERSION" --all
	fi
	rm -rf "$SRC"
	# kiwi-link@.service: instances enabled by the user go first.
	if [ -f "$UNIT" ] && command -v systemctl >/dev/null; then
		for u in /etc/systemd/system/*.wants/kiwi-link@*.service; do
			[ ! -L "$u" ] || systemctl disable --now "${u##*/}" || true
		done
	fi
	rm -f "${TOOLS[@]}"
	rmdir /usr/local/lib/kiwi 2>/dev/null || true
	if [ -f "$BUILD/install_manifest.txt" ]; then
		xargs -r -d '\n' rm -f <"$BUILD/install_manifest.txt"
	else
		rm -f /etc/libibverbs.d/kiwi.driver \
			/usr/lib/*/libibverbs/libkiwi-rdmav34.so
	fi
	say "kiwi $VERSION removed"
	;;
*)
	echo "usage: scripts/install.sh install|uninstall" >&2
	exit 2
	;;
esac
