#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/fresh-check.sh -- prove that kiwi builds, packages and installs on
# a fresh Debian 12, installing only what each job needs, and that the
# README's developer commands work there.  Run by `make fresh-check` and
# by .ci/run; needs root.
#
# Builds a throw-away minimal Debian 12 root (debootstrap --variant=minbase)
# in /var/tmp/kiwi-fresh/root, from the Debian mirror this host's own apt
# uses (apt-get indextargets; the chroot gets the same bookworm,
# -updates and -security sources), puts a clean export of the tree's HEAD
# (`git archive HEAD`, with its version in .tarball-version) in it as
# /root/kiwi -- uncommitted changes are NOT tested -- mounts /proc, /sys,
# /dev, /dev/pts, a tmpfs on /tmp and /dev/shm, and the host's apt archive
# cache (/var/cache/apt/archives, to save downloads), then runs there, as
# root with a clean environment, what a new user does:
#
#   apt-get update && apt-get install make   (minbase has no make)
#   make deb     a build-only machine: the build and packaging sets, then
#                the packages, lintian-clean, of version scripts/version.sh
#   make install the build set again (nothing new), DKMS for the 6.1
#                headers it installed (the chroot runs the host's kernel),
#                then make uninstall
#   check        none of the test set's own packages (QEMU, perftest,
#                nfs-kernel-server, rpcbind, open-iscsi, Open MPI, clang,
#                linux-source) nor any linux-image is installed
#   make demo    the test set (from the mirror), make, scripts/demo.sh (boots
#                a QEMU guest that sees the chroot's / over 9p; the guest
#                kernel is downloaded into the empty /var/cache/kiwi)
#   check        still no linux-image package (`dpkg -l 'linux-image*'`
#                unchanged since the base system) and no service of the
#                test set enabled (/etc/systemd/system/*.wants)
#   make deps    again: must find nothing left to install
#
# A package missing from a set of scripts/install-deps.sh makes one of these
# fail.
# Every mount is undone on every exit (failure, Ctrl-C, TERM; processes
# still running in the chroot are killed first) and the script checks with
# findmnt that none is left.  The chroot is deleted at the end.
#
# The bare base system (158 MiB; debootstrap takes 0.5-2 min) is kept as
# an 80 MiB tarball in /var/cache/kiwi-fresh and rebuilt when older than
# a week; everything after it is done afresh on every run.  The chroot
# grows to about 2 GiB (deleted at the end).  A cold apt cache adds the
# download of about 450 MB.
#
# Output: one line per step with elapsed times, the last lines of each
# step's output, and as the last line
#	fresh-check: PASS (...)   or   fresh-check: FAIL (...)
# Exit status: 0 on PASS, 1 on FAIL, 2 on usage error or when not root.
# Full log: build/fresh-check/fresh-check.log.
#
# Environment:
#   KIWI_FRESH_DIR      work directory (default /var/tmp/kiwi-fresh; not
#                       under /tmp or /run, which the test guest cannot see)
#   KIWI_FRESH_CACHE    base tarball cache (default /var/cache/kiwi-fresh)
#   KIWI_FRESH_MAX_AGE  rebuild the base when older than this many days
#                       (default 7; 0: always)
#   KIWI_FRESH_MIRROR   Debian mirror for debootstrap and the chroot's
#                       sources (default: the host's, from its apt
#                       configuration)
#   KIWI_FRESH_TIMEOUT  seconds allowed for each step in the chroot
#                       (default 2400)
#   KIWI_FRESH_KEEP=1   keep the chroot (unmounted) for inspection
set -u
export LC_ALL=C

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
WORK=${KIWI_FRESH_DIR:-/var/tmp/kiwi-fresh}
CACHE=${KIWI_FRESH_CACHE:-/var/cache/kiwi-fresh}
MAX_AGE=${KIWI_FRESH_MAX_AGE:-7}
MIRROR=${KIWI_FRESH_MIRROR:-}
STEP_TIMEOUT=${KIWI_FRESH_TIMEOUT:-2400}
SUITE=bookworm
BASE=$CACHE/$SUITE-minbase.tar.gz
R=$WORK/root			# the chroot
TREE=/root/kiwi			# the tree, inside the chroot
APT_ARCHIVES=/var/cache/apt/archives

case "${1:-}" in
"") ;;
-h|--help) sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) echo "usage: $0 [--help]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
case "$WORK/" in
/tmp/*|/run/*) echo "fresh-check: KIWI_FRESH_DIR must not be under /tmp or /run (the test guest cannot see it)" >&2; exit 2 ;;
esac

LOGDIR=$ROOT/build/fresh-check
LOG=$LOGDIR/fresh-check.log
mkdir -p "$LOGDIR" "$WORK" "$CACHE"
: >"$LOG"

exec 3>&1	# our stdout, for finish
T0=$SECONDS
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
say() { printf '[%6s] %s\n' "$(mmss $((SECONDS - T0)))" "$*" | tee -a "$LOG"; }
NSTEP=0 FAILED=
STEPS=11
# Lines of a step's output shown live (the rest is in the log): progress
# of install-deps, apt, the demo's steps, and errors.
SHOW='^(install-deps:|kiwi demo|vm: |Get:[0-9]*00 |Fetched |Setting up (linux-image|linux-headers|qemu-system)|\[ *[0-9:.]+\] step|E: |make(\[[0-9]+\])?: \*\*\*|.*(: error:|FAIL))'

# step TITLE CMD...: run CMD (output to the log), print its last lines and
# PASS/FAIL with its time.  Returns CMD's status.
step() {
	local title=$1 t=$SECONDS rc
	shift
	NSTEP=$((NSTEP + 1))
	say "step $NSTEP/$STEPS: $title"
	echo "\$ $*" >>"$LOG"
	# Not a pipeline: CMD runs in this shell (steps set MOUNTS, HEAD_DESC).
	"$@" > >(tee "$LOGDIR/step.out" | tee -a "$LOG" |
		grep --line-buffered -E "$SHOW" | sed -u 's/^/    : /') 2>&1
	rc=$?
	wait $!		# for the output filter to finish
	if [ "$rc" -eq 0 ]; then
		tail -n 3 "$LOGDIR/step.out" | sed 's/^/    | /'
		say "    PASS ($(mmss $((SECONDS - t))))"
	else
		tail -n 40 "$LOGDIR/step.out" | sed 's/^/    | /'
		say "    FAIL (exit $rc after $(mmss $((SECONDS - t)))): $title"
		FAILED=${FAILED:-$title}
	fi
	rm -f "$LOGDIR/step.out"
	return "$rc"
}

# --------------------------------------------------------- mounts --
MOUNTS=()	# mounted, in order; undone in reverse
mnt() {		# mnt DIR MOUNT-ARGS...: mount on $R/DIR
	mkdir -p "$R$1" && mount "${@:2}" "$R$1" && MOUNTS+=("$R$1")
}
mounts_under() { findmnt -rn -o TARGET | grep -E "^$WORK(/|\$)" || true; }
# Processes whose root is the chroot: ours (apt, make, qemu, ...).
kill_chroot_procs() {
	local sig p found=
	for sig in TERM KILL; do
		found=
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] || continue
			kill -"$sig" "${p#/proc/}" 2>/dev/null && found=1
		done
		[ -n "$found" ] || return 0
		sleep 2
	done
}
unmount_all() {
	local i m
	kill_chroot_procs
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"
	done
	MOUNTS=()
	# Leftovers of an earlier run that was killed (SIGKILL) before its trap.
	for m in $(mounts_under | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}
remove_chroot() {
	[ -e "$R" ] || return 0
	[ -z "$(mounts_under)" ] || { say "not removing $R: still mounted"; return 1; }
	rm -rf --one-file-system "$R"
}

finish() {
	local rc=$? left
	trap - EXIT INT TERM HUP
	# Cleanup must complete: back to our own stdout (a step's output
	# filter may be dead after Ctrl-C), and no death by SIGPIPE.
	trap '' PIPE
	exec >&3 2>&3
	[ -z "${1:-}" ] || { say "interrupted ($1)"; FAILED=${FAILED:-interrupted by $1}; }
	unmount_all
	left=$(mounts_under)
	if [ -n "$left" ]; then
		say "mounts left behind under $WORK:"; printf '    %s\n' "$left" | tee -a "$LOG"
		FAILED=${FAILED:-mounts left behind}
	else
		say "unmounted everything (findmnt: nothing under $WORK)"
	fi
	if [ -d "$R" ]; then
		DISK=$(du -sx --block-size=1M "$R" 2>/dev/null | cut -f1)
		if [ "${KIWI_FRESH_KEEP:-}" = 1 ]; then say "keeping the chroot: $R (KIWI_FRESH_KEEP=1)"
		else remove_chroot; fi
	fi
	local how
	how="$NSTEP of $STEPS steps in $(mmss $((SECONDS - T0)))"
	how+="; chroot ${DISK:-?} MiB, base $(du -s --block-size=1M "$BASE" 2>/dev/null | cut -f1) MiB; tree $HEAD_DESC"
	if [ -z "$FAILED" ] && [ "$NSTEP" -eq "$STEPS" ]; then
		say "fresh-check: PASS ($how)"
		exit 0
	fi
	say "fresh-check: FAIL (${FAILED:-internal error, exit $rc}; $how; log ${LOG#"$ROOT"/})"
	exit 1
}
HEAD_DESC='?'
DISK=
trap finish EXIT
trap 'finish INT' INT
trap 'finish TERM' TERM
trap 'finish HUP' HUP

# One run at a time per work directory.
exec 8>"$WORK/.lock"
flock -n 8 || { say "another fresh-check is using $WORK; waiting"; flock 8; }

say "kiwi fresh-check: the Quick start on a new Debian 12 ($SUITE minbase chroot in $R)"
say "log: ${LOG#"$ROOT"/}"

# ---------------------------------------------------------- mirrors --
# The host's apt sources for SUITE, SUITE-updates and SUITE-security
# (main), as "URI RELEASE" lines; with KIWI_FRESH_MIRROR, that mirror
# (its -security sibling .../debian-security) instead.
host_sources() {
	if [ -n "$MIRROR" ]; then
		printf '%s %s\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE-updates" \
			"${MIRROR%/debian}/debian-security" "$SUITE-security"
		return
	fi
	apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(TARGET_OF)' 2>/dev/null |
		awk -v s="$SUITE" '$3 == "main" && $4 == "deb" &&
			($2 == s || $2 == s "-updates" || $2 == s "-security") {
			sub("/$", "", $1); print $1, $2 }' | sort -u
}
base_mirror() { host_sources | awk -v s="$SUITE" '$2 == s { print $1; exit }'; }
sources_list() {
	local out
	out=$(host_sources | awk '{ print "deb", $1, $2, "main" }')
	grep -q " $SUITE main\$" <<<"$out" || {
		echo "fresh-check: the host's apt has no $SUITE main source; set KIWI_FRESH_MIRROR" >&2
		return 1
	}
	echo "$out"
}

# ------------------------------------------------------------ steps --
host_tools() {
	"$ROOT/scripts/install-deps.sh" debootstrap &&
	HEAD_DESC=$(git -C "$ROOT" log -1 --format='%h %s') || return 1
	echo "testing $HEAD_DESC (git archive HEAD)"
	if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then
		echo "warning: uncommitted changes in $ROOT are NOT tested (only HEAD is)"
	fi
}

base_system() {
	unmount_all && remove_chroot || return 1
	if [ "$MAX_AGE" -gt 0 ] && [ -f "$BASE" ] && [ -z "$(find "$BASE" -mtime +"$((MAX_AGE - 1))")" ]; then
		echo "cached base: $BASE ($(date -r "$BASE" '+%F %H:%M'))"
	else
		echo "debootstrap --variant=minbase $SUITE $(base_mirror) (cached in $BASE)"
		local new=$WORK/base.new
		rm -rf --one-file-system "$new"
		nice -n 10 debootstrap --variant=minbase --cache-dir="$APT_ARCHIVES" "$SUITE" "$new" "$(base_mirror)" || return 1
		# Package lists are fetched fresh in every chroot.
		rm -rf "$new"/var/lib/apt/lists/* "$new"/var/cache/apt/*.bin
		tar -C "$new" --numeric-owner -czf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE" || return 1
		rm -rf --one-file-system "$new"
	fi
	mkdir -p "$R" && tar -C "$R" --numeric-owner -xzf "$BASE" || return 1
	# What a Debian 12 install configures: its sources (the host's
	# mirrors), name resolution.
	sources_list >"$R/etc/apt/sources.list" || return 1
	sed 's/^/    sources.list: /' "$R/etc/apt/sources.list"
	cp /etc/resolv.conf /etc/hosts "$R/etc/"
	# This host's apt network settings (proxy, date checks), if any.
	apt-config dump | grep -E '^Acquire::(https?::Proxy|Check-Valid-Until|Check-Date) ' \
		>"$R/etc/apt/apt.conf.d/00host-network" || true
	# Packages must not start services in a chroot (that is the host).
	printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
	chmod 755 "$R/usr/sbin/policy-rc.d"
	# A throw-away root, as pbuilder and sbuild make theirs: dpkg need
	# not fsync every file, nor man-db rebuild its index after every
	# install (minutes of fresh-check's time; nothing it checks).
	echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/kiwi-fresh-check"
	echo "man-db man-db/auto-update boolean false" |
		chroot "$R" debconf-set-selections || return 1
	echo "unpacked into $R: $(du -sx --block-size=1M "$R" | cut -f1) MiB"
}

export_tree() {
	mkdir -p "$R$TREE" &&
	git -C "$ROOT" archive --format=tar HEAD | tar -C "$R$TREE" -xf - || return 1
	# The version of HEAD (scripts/version.sh finds no git in the chroot).
	"$ROOT/scripts/version.sh" | sed 's/+dirty$//' >"$R$TREE/.tarball-version"
	echo "$TREE: $(find "$R$TREE" -type f | wc -l) files from $HEAD_DESC, version $(cat "$R$TREE/.tarball-version")"
}

mount_all() {
	mnt /proc -t proc proc &&
	mnt /sys -t sysfs sysfs &&
	mnt /dev --bind /dev &&
	mnt /dev/pts --bind /dev/pts &&
	mnt /dev/shm -t tmpfs -o mode=1777 shm &&
	mnt /tmp -t tmpfs -o mode=1777 tmp &&
	mnt "$APT_ARCHIVES" --bind "$APT_ARCHIVES" || return 1
	echo "mounted: $(findmnt -rn -o TARGET | grep -E "^$R/" | sed "s|^$R||" | tr '\n' ' ')"
}

# in_chroot CMD: run the shell command CMD in the tree, as root with a login's
# clean environment (nothing of ours leaks in).  In the background, so that
# a signal to us runs our trap at once, not when CMD ends.
in_chroot() {
	timeout -k 30 "$STEP_TIMEOUT" nice -n 10 chroot "$R" /usr/bin/env -i \
		HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${KIWI_DEMO_TIMEOUT:+KIWI_DEMO_TIMEOUT=$KIWI_DEMO_TIMEOUT} \
		/bin/bash -c "cd $TREE && $1" </dev/null &
	wait $!
}

# Packages of the test set that neither the build nor the packaging set
# may bring, and kernel images: none of them on a build-only machine.
TEST_ONLY='^(linux-image-.*|qemu-system-x86|perftest|nfs-kernel-server|rpcbind|open-iscsi|openmpi-bin|clang|linux-source-6\.1|linux-headers-6\.12.*)$'
installed_pkgs() {
	chroot "$R" dpkg-query -W -f '${db:Status-Status} ${Package}\n' | sed -n 's/^installed //p' | sort
}
KIMAGES_BASE=
kernel_images() { chroot "$R" dpkg -l 'linux-image*' 2>/dev/null | grep '^ii' || true; }
images_unchanged() {
	[ "$(kernel_images)" = "$KIMAGES_BASE" ] && return 0
	echo "a kernel image was installed:"
	kernel_images
	return 1
}

check_deb() {
	KIMAGES_BASE=$(kernel_images)
	in_chroot 'make deb' || return 1
	ls -l "$R$TREE"/build/deb/*.deb || return 1
	local v
	v=$(cat "$R$TREE/.tarball-version")
	ls "$R$TREE/build/deb/kiwi-dkms_${v}_all.deb" >/dev/null ||
		{ echo "no kiwi-dkms_${v}_all.deb: the version is not the tree's"; return 1; }
}

check_install() {
	local kver
	kver=$(cd "$R/usr/src" && ls -d linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1)
	kver=${kver#linux-headers-}
	[ -n "$kver" ] || { echo "the build set installed no 6.1 headers"; return 1; }
	in_chroot "KIWI_KVER=$kver make install && ls /lib/modules/$kver/updates/dkms/kiwi.ko* &&
		ls /usr/local/sbin/kiwi-selftest /usr/local/share/man/man4/kiwi.4 && make uninstall &&
		! ls /lib/modules/$kver/updates/dkms/kiwi.ko* /usr/local/sbin/kiwi-selftest 2>/dev/null"
}

check_build_only() {
	local bad
	bad=$(installed_pkgs | grep -E "$TEST_ONLY")
	[ -z "$bad" ] || { echo "test-only packages on a build-only machine:"; echo "$bad"; return 1; }
	echo "none of the test set's own packages installed: $(installed_pkgs | wc -l) packages in all"
	images_unchanged || return 1
	echo "dpkg -l 'linux-image*': ${KIMAGES_BASE:-none}, unchanged"
}

check_demo_result() {
	in_chroot 'make demo' || return 1
	[ -n "$(ls -d "$R"/var/cache/kiwi/6.1.* 2>/dev/null)" ] ||
		{ echo "no guest kernel was downloaded into /var/cache/kiwi"; return 1; }
	echo "guest kernel downloaded: $(cd "$R/var/cache/kiwi" && ls -d 6.1.*)"
}

check_test_set() {
	local units
	images_unchanged || return 1
	echo "dpkg -l 'linux-image*': ${KIMAGES_BASE:-none}, unchanged after the test set"
	units=$(find "$R/etc/systemd/system" -path '*.wants/*' \( -name '*nfs*' -o -name '*rpcbind*' -o -name '*iscsi*' -o -name '*nvmf*' -o -name 'rtslib*' \) -printf '%f ' 2>/dev/null)
	[ -z "$units" ] || { echo "services of the test set left enabled: $units"; return 1; }
	echo "no service of the test set enabled"
}

check_nothing_to_install() {
	local out
	out=$(in_chroot 'make deps') || { echo "$out"; return 1; }
	echo "$out"
	grep -q 'packages of the test set present' <<<"$out" || { echo "make deps installed something after make demo"; return 1; }
}

step "host tools (debootstrap, git) and the commit to test" host_tools &&
step "base system: Debian 12 minbase, the host's mirrors" base_system &&
step "clean export of HEAD into the chroot ($TREE)" export_tree &&
step "mount /proc, /sys, /dev, /dev/pts, /dev/shm, /tmp, $APT_ARCHIVES" mount_all &&
step "in the chroot: apt-get update && apt-get install make" in_chroot 'apt-get update -q && apt-get install -y -q make' &&
step "in the chroot: make deb (build and packaging sets only)" check_deb &&
step "in the chroot: make install (DKMS), make uninstall" check_install &&
step "build-only machine: no test package, no kernel image" check_build_only &&
step "in the chroot: make demo (test set + build + demo, one invocation)" check_demo_result &&
step "after the test set: no kernel image, no service enabled" check_test_set &&
step "in the chroot: make deps (nothing left to install)" check_nothing_to_install
exit
