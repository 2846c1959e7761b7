#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/packages.sh -- kiwi installed from its Debian packages
# (`make deb`) in the test guest, as an administrator would, then removed:
#
#	selftests/vm/run -- selftests/guest/packages.sh      (no --module)
#
# with KIWI_DEB_DIR naming the directory of kiwi-dkms_*_all.deb and
# libkiwi-rdmav34_*.deb.  The guest's root is the host's under a tmpfs
# overlay, so everything installed here vanishes at poweroff.
#
#   1. a machine without kiwi: no kiwi module for the running kernel, no
#      provider, no DKMS entry; /etc/libibverbs.d/kiwi.driver (which the
#      test guest points at the build tree) removed; the kernel's
#      /lib/modules/VER/build link, which linux-headers-VER installs (the
#      guest's /lib/modules is the unpacked linux-image), put back; and
#      the whole source tree hidden under an empty tmpfs, so nothing can
#      reach into it;
#   2. apt-get install ./kiwi-dkms_*.deb ./libkiwi-rdmav34_*.deb: DKMS
#      builds kiwi for the running kernel (under TCG: about 5 minutes;
#      the other kernels' /lib/modules/VER/build links are hidden, so it
#      builds for this one only); with KIWI_DEB_LATER=VER, that kernel's
#      DKMS hook (/etc/kernel/postinst.d/dkms, what installing a kernel
#      runs) then builds and installs kiwi for it too;
#   3. modprobe kiwi (the DKMS-built module, its version the package's),
#      rdma link add kv0_kiwi / kv1_kiwi on a veth pair between two
#      network namespaces, ibv_devinfo (fw_ver = the version), rping -V
#      and ib_write_bw -R, with RDMAV_DRIVERS unset;
#   4. rmmod, apt-get remove: no module, source, DKMS entry or provider
#      left, only the conffile /etc/libibverbs.d/kiwi.driver (dpkg keeps
#      conffiles until purge); apt-get purge: nothing at all.
# Output is TAP 13 with the plan line last.
set -u

. "$(dirname "$(readlink -f "$0")")/lib.sh"
KVER=$(uname -r)
DEBS=$TMPD/debs
SRV=10.91.0.2
REPO=$(cd "$GUEST_DIR/../.." && pwd)
ARCH=$(dpkg --print-architecture)
PROVDIR=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/libibverbs
unset RDMAV_DRIVERS LD_LIBRARY_PATH

# check LABEL CMD...: one TAP line; the command's output goes to the
# diagnostics if it fails.
check() {
	local label=$1
	shift
	if "$@" >"$TMPD/out" 2>&1; then
		ok "$label"
	else
		notok "$label"
		tail -n 15 "$TMPD/out" | diag
		return 1
	fi
}

# Paths kiwi's packages may leave behind, and the ones found.
kiwi_leftovers() {
	{
		ls -d /usr/src/kiwi-* /var/lib/dkms/kiwi /etc/libibverbs.d/kiwi.driver \
			"$PROVDIR"/libkiwi-* /usr/share/doc/kiwi-dkms \
			/usr/share/doc/libkiwi-rdmav34 /usr/share/man/man4/kiwi.4.gz \
			/var/lib/dpkg/info/kiwi-dkms.* /var/lib/dpkg/info/libkiwi-rdmav34* 2>/dev/null
		find /lib/modules -name 'kiwi.ko*' 2>/dev/null
	} | sort
}

no_leftovers() {
	local left
	left=$(kiwi_leftovers)
	[ -z "$left" ] || { echo "left behind:"; echo "$left"; return 1; }
}

# Only the provider's conffile, which dpkg keeps until purge ("rc");
# kiwi-dkms has none and is gone.
only_conffile_left() {
	local left
	left=$(kiwi_leftovers | grep -v -e '^/etc/libibverbs.d/kiwi.driver$' \
		-e '^/var/lib/dpkg/info/libkiwi-rdmav34')
	[ -z "$left" ] || { echo "left behind:"; echo "$left"; return 1; }
	dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' kiwi-dkms libkiwi-rdmav34
	[ "$(dpkg-query -W -f '${db:Status-Abbrev}' libkiwi-rdmav34)" = "rc " ] &&
	! dpkg-query -W -f '${db:Status-Abbrev}\n' kiwi-dkms | grep -q '^.[^n]'
}

fresh_machine() {
	local d
	[ -n "${KIWI_DEB_DIR:-}" ] || { echo "KIWI_DEB_DIR not set"; return 1; }
	mkdir -p "$DEBS" &&
	cp "$KIWI_DEB_DIR"/kiwi-dkms_*_all.deb \
	   "$KIWI_DEB_DIR"/libkiwi-rdmav34_*_"$ARCH".deb "$DEBS/" || return 1
	ls -l "$DEBS"
	rm -f /etc/libibverbs.d/kiwi.driver
	# A kiwi the host installed itself (make install) is not this test's.
	if [ -n "$(kiwi_leftovers)" ]; then
		echo "the host has kiwi installed; hidden in the guest:"
		kiwi_leftovers
		kiwi_leftovers | xargs -r rm -rf
	fi
	# Only the running kernel gets a build: DKMS would build kiwi for
	# every kernel with headers (the host has 6.1's and 6.12's), which
	# under TCG costs minutes each.  KIWI_DEB_LATER brings one back.
	for d in /lib/modules/*/build; do
		[ "$d" = "/lib/modules/$KVER/build" ] || [ ! -L "$d" ] ||
			mv "$d" "$d.kiwi-hidden"
	done
	if [ ! -e "/lib/modules/$KVER/build" ]; then
		[ -d "/usr/src/linux-headers-$KVER" ] ||
			{ echo "no /usr/src/linux-headers-$KVER"; return 1; }
		ln -s "/usr/src/linux-headers-$KVER" "/lib/modules/$KVER/build"
	fi
	modinfo kiwi >/dev/null 2>&1 && { echo "a kiwi module is already there"; return 1; }
	# Nothing from the source tree: the test's own functions are loaded,
	# and bash reads this script through its open descriptor.
	mount -t tmpfs -o ro,size=1m kiwi-hidden "$REPO" && [ -z "$(ls -A "$REPO")" ]
}

install_debs() {
	local t0=$SECONDS
	DEBIAN_FRONTEND=noninteractive apt-get install -y \
		-o Dpkg::Use-Pty=0 "$DEBS"/kiwi-dkms_*.deb "$DEBS"/libkiwi-rdmav34_*.deb || return 1
	echo "installed in $((SECONDS - t0)) s"
}

module_from_dkms() {
	local file ver
	dkms status -m kiwi
	dkms status -m kiwi -k "$KVER" | grep -q ': installed' || return 1
	file=$(modinfo -F filename kiwi) && ver=$(modinfo -F version kiwi) || return 1
	echo "$file $ver"
	[[ $file == /lib/modules/$KVER/updates/dkms/kiwi.ko* ]] &&
	[ "$ver" = "$(dpkg-query -W -f '${Version}' kiwi-dkms)" ]
}

provider_installed() {
	ls -l "$PROVDIR/libkiwi-rdmav34.so" /etc/libibverbs.d/kiwi.driver &&
	grep -qx 'driver kiwi' /etc/libibverbs.d/kiwi.driver &&
	dpkg-query -S "$PROVDIR/libkiwi-rdmav34.so" | grep -q '^libkiwi-rdmav34'
}

# A kernel installed after kiwi-dkms: its postinst hook
# (/etc/kernel/postinst.d/dkms, which the kernel package runs) builds
# and installs kiwi for it.  KIWI_DEB_LATER names that kernel, whose
# headers are installed; its build link was hidden until now.
later_kernel() {
	local k=$KIWI_DEB_LATER
	[ -L "/lib/modules/$k/build.kiwi-hidden" ] &&
		mv "/lib/modules/$k/build.kiwi-hidden" "/lib/modules/$k/build"
	[ -e "/lib/modules/$k/build" ] || { echo "no headers for $k"; return 1; }
	/etc/kernel/postinst.d/dkms "$k" || return 1
	dkms status -m kiwi
	dkms status -m kiwi -k "$k" | grep -q ': installed' &&
	ls "/lib/modules/$k/updates/dkms/"kiwi.ko*
}

links_up() {
	modprobe kiwi && netns_up && veth_pair kv0 kv1 10.91.0 1500 &&
	A rdma link add kv0_kiwi type kiwi netdev kv0 &&
	B rdma link add kv1_kiwi type kiwi netdev kv1 &&
	rdma link show | grep kiwi
}

devinfo() {
	local ver
	ver=$(dpkg-query -W -f '${Version}' libkiwi-rdmav34)
	A ibv_devinfo -d kv0_kiwi | tee "$TMPD/devinfo"
	grep -q 'transport:.*iWARP' "$TMPD/devinfo" &&
	grep -q "fw_ver:.*$ver" "$TMPD/devinfo" &&
	grep -q 'state:.*PORT_ACTIVE' "$TMPD/devinfo"
}

links_down() {
	A rdma link del kv0_kiwi && B rdma link del kv1_kiwi && rmmod kiwi &&
	! grep -q '^kiwi ' /proc/modules
}

remove_debs() {
	DEBIAN_FRONTEND=noninteractive apt-get remove -y -o Dpkg::Use-Pty=0 \
		kiwi-dkms libkiwi-rdmav34 && only_conffile_left
}

purge_debs() {
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -o Dpkg::Use-Pty=0 \
		kiwi-dkms libkiwi-rdmav34 &&
	! dpkg-query -W -f '${db:Status-Abbrev}\n' kiwi-dkms libkiwi-rdmav34 2>/dev/null |
		grep -q '^.[^n]' && no_leftovers
}

echo "TAP version 13"
check "a machine without kiwi (no module, provider or DKMS entry; source tree hidden)" fresh_machine
if [ "$NFAIL" -ne 0 ]; then
	tap_end
	exit 1
fi
if ! check "apt-get install ./kiwi-dkms_*.deb ./libkiwi-rdmav34_*.deb (DKMS builds kiwi for $KVER)" install_debs; then
	tap_end
	exit 1
fi
check "modinfo kiwi: the DKMS-built module for $KVER, the package's version" module_from_dkms
dkms status -m kiwi 2>/dev/null | sed 's/^/# dkms: /'
[ -z "${KIWI_DEB_LATER:-}" ] ||
	check "a kernel installed later ($KIWI_DEB_LATER): its DKMS hook builds and installs kiwi" later_kernel
check "the provider is in $PROVDIR with /etc/libibverbs.d/kiwi.driver, owned by libkiwi-rdmav34" provider_installed
if check "modprobe kiwi; rdma link add kv0_kiwi / kv1_kiwi" links_up; then
	check "ibv_devinfo -d kv0_kiwi (no RDMAV_DRIVERS): iWARP, PORT_ACTIVE, fw_ver = the package's version" devinfo
	rping_test "installed" $SRV 4096 200
	perf_test "installed" kv1_kiwi kv0_kiwi $SRV 200 ib_write_bw -s 65536
	check "rdma link del, rmmod kiwi" links_down
fi
check "apt-get remove: module, sources, DKMS entry and provider gone, only the conffile kept" \
	remove_debs
check "apt-get purge: nothing of kiwi left (files, dpkg database)" purge_debs
tap_end
