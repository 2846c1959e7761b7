#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/version.sh -- the version of the tree, for its packages and DKMS:
#
#   VERSION                                  HEAD tagged vVERSION (a release)
#   VERSION+git<YYYYMMDD>.<N>.<hash>         any other commit
#   ...+dirty                                uncommitted changes (tracked files)
#
# VERSION is the file (the upstream version, major.minor.patch: the
# module's fw_ver and the provider's); YYYYMMDD is HEAD's commit date
# (UTC), N the number of commits reachable from HEAD, hash its short id.
# No tag is needed.  dpkg compares the parts left to right, numbers as
# numbers, so a later commit of the same line of work (a later date, or
# the same date and a larger N) is a newer package and `apt install
# ./kiwi-dkms_NEW.deb` upgrades the older one.  A release tag vX.Y.Z with
# X.Y.Z in VERSION sorts below X.Y.Z+git...: bump VERSION after tagging.
#
# Without git (an exported tree), the file .tarball-version, which
# scripts/fresh-check.sh writes into its export, else VERSION alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
base=$(head -n1 "$ROOT/VERSION")

if ! git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
   [ "$(git -C "$ROOT" rev-parse --show-toplevel)" != "$ROOT" ]; then
	if [ -s "$ROOT/.tarball-version" ]; then
		head -n1 "$ROOT/.tarball-version"
	else
		echo "$base"
	fi
	exit 0
fi
dirty=
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=+dirty
if git -C "$ROOT" describe --tags --exact-match --match "v$base" HEAD >/dev/null 2>&1; then
	echo "$base$dirty"
	exit 0
fi
date=$(TZ=UTC git -C "$ROOT" log -1 --date=format-local:%Y%m%d --format=%cd HEAD)
count=$(git -C "$ROOT" rev-list --count HEAD)
hash=$(git -C "$ROOT" rev-parse --short=7 HEAD)
echo "$base+git$date.$count.$hash$dirty"
