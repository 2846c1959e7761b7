#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/guest/packages.sh -- kiwi installed from its Debian packages
# (`make deb`) in the test guest, as an administrator would, then removed:
#
#	selftests/vm/run.sh -- selftests/guest/packages.sh      (no --module)
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
#   4. the tools installed with kiwi-dkms: kiwi-selftest (PASS, and FAIL
#      with exit 1 when libibverbs cannot find the provider), kiwi-diag
#      (the report names the module, its parameters, the links),
#      kiwi-link@.service (systemd-analyze verify; the unit's ExecStart
#      and ExecStop run as systemd would for a veth: add, add again,
#      delete, the netdev removed and re-added; the guest has no systemd
#      as init, so the unit's activation by the netdev's device unit is
#      not exercised here);
#   5. the user guide's recipes (selftests/guest/recipes.sh), run as
#      written against the installed packages;
#   6. rmmod, apt-get remove: no module, source, DKMS entry or provider
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
	# The user guide and its runner, read before the tree is hidden.
	cp "$REPO/Documentation/user-guide.md" "$GUEST_DIR/recipes.sh" "$TMPD/" || return 1
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
	local file ver pver
	dkms status -m kiwi
	dkms status -m kiwi -k "$KVER" | grep -q ': installed' || return 1
	file=$(modinfo -F filename kiwi) && ver=$(modinfo -F version kiwi) || return 1
	pver=$(dpkg-query -W -f '${Version}' kiwi-dkms)
	echo "$file $ver (package $pver)"
	# The module carries the upstream version (VERSION), the package
	# and DKMS the full one (VERSION+gitDATE.N.HASH).
	[[ $file == /lib/modules/$KVER/updates/dkms/kiwi.ko* ]] &&
	[ "$ver" = "${pver%%+*}" ] &&
	dkms status -m kiwi -v "$pver" -k "$KVER" | grep -q ': installed'
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
	# Headers unpacked into the cache (scripts/guest-kernel.sh), not
	# installed: what linux-headers-VER would link.
	if [ ! -e "/lib/modules/$k/build" ] && [ -n "${KIWI_DEB_LATER_HDR:-}" ]; then
		mkdir -p "/lib/modules/$k" &&
		ln -s "$KIWI_DEB_LATER_HDR" "/lib/modules/$k/build"
	fi
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
	grep -q "fw_ver:.*${ver%%+*}" "$TMPD/devinfo" &&
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

# kiwi-selftest as installed: PASS; and FAIL (exit 1, one line) when
# libibverbs cannot find the provider, so its verdict can fail.
selftest_pass() {
	local out rc
	out=$(timeout 300 kiwi-selftest -v 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] && [ "$(tail -n1 <<<"$out" | cut -c1-20)" = "kiwi-selftest: PASS " ] &&
	[ -z "$(ip netns list | grep '^kst')" ]
}
selftest_fail() {
	local out rc
	mv /etc/libibverbs.d/kiwi.driver "$TMPD/kiwi.driver"
	out=$(timeout 300 kiwi-selftest 2>&1)
	rc=$?
	mv "$TMPD/kiwi.driver" /etc/libibverbs.d/kiwi.driver
	echo "$out (exit $rc)"
	[ $rc -eq 1 ] && grep -q '^kiwi-selftest: FAIL (ibv_devinfo' <<<"$out" &&
	[ -z "$(ip netns list | grep '^kst')" ]
}

diag_report() {
	kiwi-diag >"$TMPD/diag" 2>&1 || return 1
	wc -l "$TMPD/diag"
	grep -q "^===== module parameters" "$TMPD/diag" &&
	grep -q '^max_qp  *16384' "$TMPD/diag" &&
	grep -q 'kv0_kiwi' "$TMPD/diag" &&
	grep -q "kiwi-dkms $(dpkg-query -W -f '${Version}' kiwi-dkms)" "$TMPD/diag" &&
	grep -q 'kiwi_abi_version' "$TMPD/diag"
}

# kiwi-link@.service without systemd as init: verified, then its
# ExecStart/ExecStop lines run as systemd would for instance NETDEV.
UNIT=/lib/systemd/system/kiwi-link@.service
unit_exec() {	# unit_exec Start|Stop NETDEV
	local line
	line=$(sed -n "s/^Exec$1=-\{0,1\}//p" "$UNIT")
	[ -n "$line" ] || { echo "no Exec$1 in $UNIT"; return 1; }
	echo "+ ${line//%I/$2}"
	eval "${line//%I/$2}"
}
link_unit() {
	[ -f "$UNIT" ] || return 1
	if command -v systemd-analyze >/dev/null; then
		systemd-analyze verify --man=no "kiwi-link@kl0.service" || return 1
	fi
	ip link add kl0 type veth peer name kl1 && ip link set kl0 up && ip link set kl1 up &&
	unit_exec Start kl0 && rdma link show kl0_kiwi/1 &&
	unit_exec Start kl0 && [ "$(rdma link show | grep -c 'kl0_kiwi/')" = 1 ] &&
	unit_exec Stop kl0 && ! rdma link show kl0_kiwi/1 2>/dev/null &&
	unit_exec Start kl0 && rdma link show kl0_kiwi/1 &&
	echo "+ ip link del kl0 (the netdev goes: kiwi removes its device)" &&
	ip link del kl0 && sleep 1 && ! rdma link show kl0_kiwi/1 2>/dev/null &&
	unit_exec Stop kl0 &&
	echo "+ the netdev comes back" &&
	ip link add kl0 type veth peer name kl1 && ip link set kl0 up &&
	unit_exec Start kl0 && rdma link show kl0_kiwi/1 &&
	unit_exec Stop kl0 && ip link del kl0
}

# The user guide's marked command blocks, run as written (recipes.sh):
# one TAP line per recipe, its commands' output as diagnostics if it fails.
user_guide_recipes() {
	local verdict rest n=0
	# Live as diagnostics too: a guest cut off by its timeout still shows
	# how far the recipes got.
	timeout 1200 bash "$TMPD/recipes.sh" "$TMPD/user-guide.md" 2>&1 |
		tee "$TMPD/recipes.out" | sed -u 's/^/# recipes: /'
	# The last verdict of each recipe counts: a RETRY line (with its
	# evidence, see recipes.sh) supersedes the failure before it.
	local -A last=()
	local order=() name
	while read -r _ verdict rest; do
		name=${rest%% *}
		name=${name%:}
		if [ "$verdict" = RETRY ]; then
			echo "# RETRY user_guide_recipe_$name -- ${rest#* -- }"
			continue
		fi
		[ -n "${last[$name]+set}" ] || order+=("$name")
		last[$name]="$verdict $rest"
	done < <(grep '^recipe: ' "$TMPD/recipes.out")
	for name in "${order[@]}"; do
		n=$((n + 1))
		verdict=${last[$name]%% *}
		rest=${last[$name]#* }
		if [ "$verdict" = PASS ]; then
			ok "user guide recipe $rest"
		else
			notok "user guide recipe $rest"
			sed -n "/^=== recipe $name\$/,/^recipe: /p" "$TMPD/recipes.out" | tail -n 30 | diag
		fi
	done
	[ "$n" -gt 0 ] || { notok "user guide recipes: none ran"; tail -n 20 "$TMPD/recipes.out" | diag; }
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
	check "kiwi-selftest (installed): PASS, exit 0, nothing left" selftest_pass
	check "kiwi-selftest without the provider: FAIL, exit 1" selftest_fail
	check "kiwi-diag: module, parameters, links, package version" diag_report
	check "kiwi-link@.service: verify; start, start again, stop, netdev removed and re-added" link_unit
	check "rdma link del, rmmod kiwi" links_down
	user_guide_recipes
fi
check "apt-get remove: module, sources, DKMS entry and provider gone, only the conffile kept" \
	remove_debs
check "apt-get purge: nothing of kiwi left (files, dpkg database)" purge_debs
tap_end
