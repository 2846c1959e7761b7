#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/deb.sh -- `make deb`: kiwi's Debian packages, built with Debian's
# own tooling (dpkg-buildpackage, debhelper, dh-dkms), then checked with
# lintian.
#
#   scripts/deb.sh [OUTDIR]        (default: build/deb)
#
# Writes OUTDIR/kiwi-dkms_VERSION_all.deb (the module's sources and
# dkms.conf, DKMS building kiwi on installation; kiwi-link@.service,
# kiwi-selftest, kiwi-diag) and OUTDIR/libkiwi-rdmav34_VERSION_ARCH.deb (the
# libibverbs provider and /etc/libibverbs.d/kiwi.driver), VERSION being
# scripts/version.sh's: VERSION+gitDATE.N.HASH, so each commit's packages
# upgrade the previous ones.
#
# The package is built from a copy of the working tree's sources (so
# uncommitted changes are in it, as with `make`) in OUTDIR/src, whose
# debian/changelog gets an entry for VERSION on top of the tree's (the
# tree itself builds as it stands with `dpkg-buildpackage -us -uc`, as
# its changelog's version).  lintian must report no error and no warning;
# its report is OUTDIR/lintian.txt (overrides, each with its reason:
# debian/*.lintian-overrides).  Needs the deb set of
# scripts/install-deps.sh (make deps-deb).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
OUT=$(readlink -m "${1:-${BUILD:-$ROOT/build}/deb}")
VERSION=$("$ROOT/scripts/version.sh")
STAGE=$OUT/src/kiwi-$VERSION
say() { echo "deb: $*"; }
t0=$SECONDS

for tool in dpkg-buildpackage dh dh_dkms lintian fakeroot gcc; do
	command -v "$tool" >/dev/null || {
		echo "deb: $tool missing; run 'make deps-deb' (scripts/install-deps.sh --set deb)" >&2
		exit 1
	}
done

say "staging kiwi $VERSION in $STAGE"
rm -rf "$OUT"
mkdir -p "$STAGE/kmod" "$STAGE/Documentation"
cp -r "$ROOT"/{CMakeLists.txt,Kbuild,VERSION,README.md,NEWS.md,dkms.conf,include,provider,tools,debian} "$STAGE/"
cp "$ROOT"/kmod/Kbuild "$ROOT"/kmod/*.[ch] "$STAGE/kmod/"
rm -f "$STAGE"/kmod/*.mod.c
cp "$ROOT"/Documentation/{kiwi.4,kiwi-selftest.8,kiwi-diag.8,user-guide.md} "$STAGE/Documentation/"
echo "$VERSION" >"$STAGE/.tarball-version"
# The date of the newest commit if there is one (reproducible), else now.
date=$(git -C "$ROOT" log -1 --format=%cD 2>/dev/null || date -R)
rev=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "an exported tree")
top=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -SVersion)
if [ "$top" != "$VERSION" ]; then
	{
		cat <<-EOC
		kiwi ($VERSION) unstable; urgency=medium

		  * Built from $rev (scripts/deb.sh).

		 -- $(sed -n 's/^Maintainer: //p' "$ROOT/debian/control")  $date

		EOC
		cat "$ROOT/debian/changelog"
	} >"$STAGE/debian/changelog"
fi

say "dpkg-buildpackage (binary packages, unsigned)"
(cd "$STAGE" && dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$OUT/build.log" 2>&1 || {
	tail -n 30 "$OUT/build.log" >&2
	echo "deb: dpkg-buildpackage failed; log: $OUT/build.log" >&2
	exit 1
}
# dpkg-buildpackage writes next to the source directory.
mv "$OUT"/src/*.deb "$OUT"/src/*.buildinfo "$OUT"/src/*.changes "$OUT/"

say "lintian"
lintian_rc=0
lintian --fail-on error,warning --info "$OUT"/*.deb >"$OUT/lintian.txt" 2>&1 ||
	lintian_rc=$?
sed 's/^/  /' "$OUT/lintian.txt"
if [ "$lintian_rc" -ne 0 ]; then
	echo "deb: lintian reported errors or warnings (exit $lintian_rc)" >&2
	exit 1
fi
for deb in "$OUT"/*.deb; do
	say "$(basename "$deb"): $(dpkg-deb -f "$deb" Installed-Size) KiB installed, depends: $(dpkg-deb -f "$deb" Depends)"
done
say "done in $((SECONDS - t0)) s: $OUT"
