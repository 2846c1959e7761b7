#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/install-deps.sh -- install the Debian 12 (bookworm) packages that
# one of kiwi's jobs needs, and nothing more.  Idempotent: asks dpkg which
# packages are missing and only then runs `apt-get update` + `apt-get
# install`; a second run installs nothing and prints one line.  Needs root
# (or sudo) when something is missing.
#
#   scripts/install-deps.sh [--set build|deb|test]     (default: test)
#   scripts/install-deps.sh PACKAGE...                 (just those)
#   scripts/install-deps.sh --list SET                 (print the set)
#
# Three sets, each containing the one before:
#
#   build  `make`, `make install`: compiler, make, cmake, pkg-config, kmod,
#          perl (kbuild's kernel-doc, W=1), libibverbs-dev, librdmacm-dev
#          and libgtest-dev (the provider and its unit tests), dkms, and
#          the kernel headers: linux-headers-$(uname -r) when the archive
#          has them (a Debian kernel), else linux-headers-amd64 (the
#          newest 6.1).  No kernel image, no service.
#   deb    `make deb` (dpkg-buildpackage, scripts/deb.sh): build-essential,
#          dpkg-dev, debhelper, dh-dkms, fakeroot, lintian.
#   test   `make demo`, `make check`, `make bench`, `make soak`, `make
#          fuzz`: QEMU, busybox-static, cpio, xz-utils (the guest harness),
#          linux-headers-amd64 (the 6.1 headers whose kernel the guest
#          boots: selftests/vm/run.sh downloads that linux-image itself into
#          /var/cache/kiwi, it is never installed), rdma-core, ibverbs-utils,
#          rdmacm-utils, perftest, python3-pyverbs, qperf, libfabric-bin,
#          fio, nvme-cli, iperf3, sockperf, linux-perf, ethtool, iproute2,
#          python3, gnuplot-nox, clang + libfuzzer-14-dev (make fuzz),
#          linux-source-6.1 (Linux's siw, scripts/build-siw.sh; checkpatch for
#          make lint), shellcheck (make lint), pahole (the
#          6.12 kbuild's BTF step), nfs-kernel-server (nfs.sh), open-iscsi
#          (iser.sh), targetcli-fb (the user guide's iSER recipe),
#          openmpi-bin + libopenmpi-dev (mpi.sh).
#          Debian 12's other kernel, 6.12 (bookworm-security), is fetched
#          by scripts/guest-kernel.sh: its headers unpacked into the cache,
#          not installed, so no second kernel appears in the host's boot
#          menu.  The services the test set's packages bring (nfs-server,
#          rpcbind, iscsid, ...) are neither started (a policy-rc.d for the
#          duration of the install) nor left enabled (`systemctl disable`
#          for every unit of a package this run installed): the tests start
#          their own daemons inside the guest.
#
# Environment: KIWI_DEPS_DRY=1 prints what would be installed and exits.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)

BUILD_PKGS=(make gcc g++ cmake pkg-config kmod perl libibverbs-dev
	librdmacm-dev libgtest-dev dkms)
DEB_PKGS=(build-essential dpkg-dev debhelper dh-dkms fakeroot lintian)
TEST_PKGS=(linux-headers-amd64 qemu-system-x86 busybox-static cpio
	xz-utils rdma-core ibverbs-utils rdmacm-utils perftest
	python3-pyverbs qperf libfabric-bin fio nvme-cli iperf3 sockperf
	linux-perf ethtool iproute2 python3 gnuplot-nox clang
	libfuzzer-14-dev linux-source-6.1 pahole nfs-kernel-server
	open-iscsi targetcli-fb openmpi-bin libopenmpi-dev shellcheck
	bc bison flex libelf-dev libssl-dev)

# The headers of the running kernel if the archive knows them, else the
# newest 6.1 ones (a non-Debian kernel: `make` still builds, for 6.1).
running_headers() {
	local p
	p=linux-headers-$(uname -r)
	if apt-cache show "$p" >/dev/null 2>&1; then
		echo "$p"
	else
		echo linux-headers-amd64
	fi
}

set_pkgs() {
	case "$1" in
	build) echo "${BUILD_PKGS[*]} $(running_headers)" ;;
	deb) echo "$(set_pkgs build) ${DEB_PKGS[*]}" ;;
	test) echo "$(set_pkgs deb) ${TEST_PKGS[*]}" ;;
	*) echo "install-deps: unknown set '$1' (build, deb or test)" >&2; return 2 ;;
	esac
}

SET="test"
case "${1:-}" in
--list) set_pkgs "${2:-test}" | tr ' ' '\n' | sort -u; exit ;;
--set) SET=${2:?--set needs build, deb or test}; shift 2 ;;
esac
if [ $# -gt 0 ]; then
	PKGS=("$@")
	SET=
else
	read -ra PKGS <<<"$(set_pkgs "$SET")"
fi

installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
for p in "${PKGS[@]}"; do
	installed "$p" || missing+=("$p")
done
# Duplicates (the running kernel's headers may be in two sets).
read -ra missing <<<"$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"

guest_kernel() {
	[ "$SET" = test ] || return 0
	"$ROOT/scripts/guest-kernel.sh" 6.12
}

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all $(printf '%s\n' "${PKGS[@]}" | sort -u | wc -l) packages${SET:+ of the $SET set} present"
	guest_kernel
	exit 0
fi
if [ "${KIWI_DEPS_DRY:-}" = 1 ]; then
	echo "install-deps: would install ${missing[*]}"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
fi

# No service of a package installed here is started: a policy-rc.d that
# says "not now" (101) for the install's duration, unless the machine has
# its own policy already, which then applies.
POLICY=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$POLICY" ]; then
	$SUDO sh -c "printf '#!/bin/sh\n# kiwi install-deps: no service starts\nexit 101\n' >$POLICY && chmod 755 $POLICY"
	own_policy=1
	trap '$SUDO rm -f "$POLICY"' EXIT
fi

pkglist() { dpkg-query -W -f='${db:Status-Status} ${Package}\n' | sed -n 's/^installed //p' | sort; }
before=$(pkglist)
echo "install-deps: installing${SET:+ the $SET set:} ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
[ -z "$own_policy" ] || { $SUDO rm -f "$POLICY"; trap - EXIT; }

# ...nor left enabled: the systemd units of every package this run
# installed (directly or as a dependency) are disabled again, targets too
# (nfs-common's nfs-client.target runs sm-notify at boot); not for the
# build and deb sets, whose packages bring no service of their own (only
# what a Debian system has anyway, e.g. man-db.timer).  A unit of
# a package the machine had before is not touched.  Without systemctl
# (a chroot, a container) the packages' scripts still enable units (the
# links in /etc/systemd/system/*.wants/), which are then removed.
wants_links() { find /etc/systemd/system -path '*.wants/*' -name "$1" -type l 2>/dev/null; }
if command -v systemctl >/dev/null; then
	is_enabled() { [ "$(systemctl is-enabled "$1" 2>/dev/null)" = enabled ]; }
	disable() { $SUDO systemctl disable --quiet "$1" 2>/dev/null; }
else
	is_enabled() { [ -n "$(wants_links "$1")" ]; }
	disable() { wants_links "$1" | $SUDO xargs -r rm -f; }
fi
if [ -d /etc/systemd/system ] && [ "$SET" != build ] && [ "$SET" != deb ]; then
	for p in $(comm -13 <(echo "$before") <(pkglist)); do
		dpkg -L "$p" 2>/dev/null |
			grep -E '^/(usr/)?lib/systemd/system/[^/@]+\.(service|socket|timer|path|target)$' || true
	done | xargs -r -n1 basename | sort -u | while read -r u; do
		is_enabled "$u" || continue
		disable "$u" && echo "install-deps: disabled $u (the tests start their own daemons, in the guest)"
	done
fi
guest_kernel
