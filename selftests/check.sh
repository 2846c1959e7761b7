#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/check.sh -- run every kiwi test; the `make check` entry point.
#
#   1. host unit tests: ctest --test-dir build (including the fuzz
#      targets replayed over their seed corpus), the module parameters'
#      documentation against the code (scripts/check-params.py) and the man
#      pages (man --warnings), scripts/lint.sh (make lint, as host.checkpatch,
#      host.shellcheck, host.knobs: the KIWI_* knob list, and host.layers:
#      the kmod files calling each other both ways are kiwi.rst's list);
#      selftests/verdicts.sh (every guest verdict
#      fed a broken variant that must fail it); then the fuzz targets
#      under libFuzzer, KIWI_FUZZ_SECONDS (60) each (scripts/fuzz.sh)
#   2. guest suite: selftests/vm/run.sh --module kmod/kiwi.ko --
#      selftests/guest/suite.sh (one QEMU boot: C verbs tests, pyverbs,
#      shell-level link/module tests, resource limits with small module
#      parameters, killed-process cleanup)
#   3. data path, if selftests/guest/datapath.sh exists: a second boot
#      (rping, perftest, mapped rings, RFC 7306 immediate data and
#      atomics, memory windows, MPA markers, per-QP counters, hardware
#      iWARP defaults played by kiwi, pyverbs test_rdmacm)
#   4. error paths, if selftests/guest/errors.sh exists: a third boot
#      (protocol errors and killed peers between two kiwi devices); then
#      selftests/guest/abuse.sh in a boot of its own, with the test
#      kernel consumers selftests/kconsumer/kiwi_frmr_test.ko and
#      kiwi_kconnect_test.ko (a raw-TCP
#      hostile peer in the data phase, an FRMR remapped under its WRITE,
#      QP takeover by another process, CQ overflow, STag randomness,
#      unload while a process holds a device),
#      and selftests/guest/faults.sh (netem loss, duplication, reordering;
#      MTU, link and address changes during traffic) in another, and
#      selftests/guest/load.sh (1000 connected QPs per device moving
#      verified data; connections beyond max_qp refused) in another
#   5. interop with Linux siw (selftests/guest/interop.sh: rping,
#      perftest and qperf each way): a fourth boot, with
#      build/siw/siw.ko (scripts/build-siw.sh; make check builds it)
#   6. kernel consumers (selftests/guest/kernel-ulp.sh: NVMe over RDMA
#      through kiwi, data verified): a fifth boot; user-space middleware
#      (selftests/guest/apps.sh: rsockets, qperf, libfabric): another;
#      NFS over RDMA (selftests/guest/nfs.sh: client in the initial
#      namespace, nfsd in another, two kiwi devices): another; iSER
#      (selftests/guest/iser.sh): another; Open MPI over kiwi
#      (selftests/guest/mpi.sh): another
#   7. Debian 12's other kernel: kiwi built against the newest 6.12
#      headers (scripts/guest-kernel.sh unpacks them into /var/cache/kiwi;
#      never installed on the host) in
#      build/kmod-6.12, and the data-path tests run in a guest booting
#      that kernel, at MTU 9000 (phase 3 runs them at 1500; the MPA
#      marker and FPDU sizing differ): a sixth boot; then two machines
#      (selftests/check-2host.sh, KIWI_CHECK_2HOST_RUNS, default virtio9000):
#      a 6.1 and a 6.12 guest joined only by a QEMU virtual NIC run
#      rping -V, perftest both ways, immediate data, atomics, windows and
#      markers, then one guest is killed mid-transfer (the survivor's
#      QPs must fail within the stated bound, nothing left) and booted
#      again (about 3 min)
#   8. Debian packages: scripts/deb.sh (make deb: dpkg-buildpackage, lintian
#      clean) into build/deb, then selftests/guest/packages.sh in a 6.1
#      guest without the build tree's module: apt-get install of both
#      packages (DKMS builds kiwi in the guest for 6.1; for 6.12 as a
#      kernel installed later only with KIWI_CHECK_DEB_LATER=1;
#      KIWI_CHECK_DEB_BOTH=1 adds the mirror image in a 6.12 guest), rping
#      -V and ib_write_bw -R on the installed kiwi, the installed
#      kiwi-selftest, kiwi-link@.service and kiwi-diag, the user guide's
#      recipes, apt-get remove and purge leave nothing
#   sanitizer: Debian's linux-source-6.1 with KASAN, lockdep, UBSAN,
#      kmemleak and DEBUG_ATOMIC_SLEEP (selftests/vm/sanitizer.config;
#      scripts/build-sanitizer-kernel.sh builds it once per machine into
#      /var/cache/kiwi), kiwi built against it (build/kmod-sanitizer), and
#      abuse.sh, errors.sh, datapath.sh, faults.sh (and fuzz-verbs.sh when
#      it exists) each in a boot of it via selftests/guest/sanitizer.sh;
#      any sanitizer report fails the boot (see selftests/README.md);
#      time: the kernel build once per machine (not yet measured on an
#      idle 2-core machine) plus one boot per suite, each slower than on
#      Debian's kernel (not yet measured; README has what was)
#
# Prints progress per phase, then a per-test summary, and as its very last
# line "N passed, N failed, N skipped" (every ctest case, every guest TAP
# line, plus guest.* checks of the run itself: a guest that times out,
# dies, or leaves kernel trouble in dmesg is a failure, never zero tests).
# "passed" counts only results that passed; skipped tests, and every phase
# left out by KIWI_CHECK_SKIP (as phase.NAME), are counted as skipped and
# listed.  The line before the last counts what is in neither: known bugs
# (guest TAP "not ok ... # TODO reason", a kiwi bug written down in the
# test), harness faults (a guest that died before its test started; the
# phase ran again) and retries (a run repeated on evidence that it was
# lost to a known fault of a tool, "# RETRY name -- reason" in guest TAP),
# and names the phases left out.  Exit status non-zero if anything failed.
#
# Environment:
#   BUILD               build directory (default: build)
#   KIWI_CHECK_SKIP     comma-separated phases to leave out:
#                       host,fuzz,guest,datapath,errors,abuse,faults,load,
#                       interop,ulp,nfs,apps,iser,mpi,k612,twohost,deb,
#                       sanitizer ("guest"
#                       leaves out every guest boot, "suite" only phase 2's)
#   KIWI_CHECK_TIMEOUT  guest suite timeout in seconds (default 900; it
#                       normally takes ~2 min)
#   KIWI_CHECK_DP_TIMEOUT  data-path guest timeout (default 600)
#   KIWI_CHECK_ERR_TIMEOUT error-path guest timeout (default 600)
#   KIWI_CHECK_IO_TIMEOUT  interop guest timeout (default 900)
#   KIWI_CHECK_ABUSE_TIMEOUT abuse guest timeout (default 1500; it takes
#                       ~6 min on an idle host, twice that on a busy one)
#   KIWI_CHECK_DEB_BOTH 1: the package test in a 6.12 guest too (+17 min)
#   KIWI_CHECK_DEB_LATER 1: DKMS for 6.12 as a kernel installed later (+6 min)
#   KIWI_CHECK_SAN      1: run the sanitizer phase (off by default until
#                       its time on a fresh machine is measured); abuse.sh
#                       then runs on that kernel instead of Debian's
#   KIWI_CHECK_SAN_SUITES  the sanitizer phase's suites (default "abuse
#                       errors datapath faults fuzz-verbs")
#   KIWI_CHECK_SAN_TIMEOUT its timeout per boot (default 2400)
#   KIWI_SAN_KERNEL     use this kernel directory (laid out like
#                       scripts/build-sanitizer-kernel.sh's) instead of building
#   KIWI_CHECK_K612_MTU the MTU of phase 7's data-path tests (9000)
#   KIWI_CHECK_2HOST_RUNS  phase 7's two-guest configurations (default
#                       virtio9000; see selftests/check-2host.sh)
#   KIWI_SUITE_DRIVER   rxe: run the guest suite on soft-RoCE instead
#                       (validates the suite; kiwi-specific checks fail)
#   KIWI_SUITE_ONLY     subset of guest groups (see suite.sh)
# Logs: build/selftests-logs/last/{ctest,guest,guest-vm,guest-dmesg}.log
#       (datapath*.log for phase 3, errors*.log for 4), results.txt
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-$ROOT/build}
# Per-run log directory (other checks may run from the same tree at the
# same time); build/selftests-logs/last points at the newest.
LOGTOP=$BUILD/selftests-logs
mkdir -p "$LOGTOP"
LOGS=$(mktemp -d "$LOGTOP/run-$(date +%Y%m%d-%H%M%S)-XXXX")
ln -sfn "$(basename "$LOGS")" "$LOGTOP/last"
# Keep the 5 newest runs.
ls -1dt "$LOGTOP"/run-* 2>/dev/null | tail -n +6 | xargs -r rm -rf
SKIP=${KIWI_CHECK_SKIP:-}
GUEST_TIMEOUT=${KIWI_CHECK_TIMEOUT:-900}
DP_TIMEOUT=${KIWI_CHECK_DP_TIMEOUT:-600}
ERR_TIMEOUT=${KIWI_CHECK_ERR_TIMEOUT:-600}
IO_TIMEOUT=${KIWI_CHECK_IO_TIMEOUT:-900}
SIW_KO=$BUILD/siw/siw.ko
FRMR_KO=$ROOT/selftests/kconsumer/kiwi_frmr_test.ko
KCONNECT_KO=$ROOT/selftests/kconsumer/kiwi_kconnect_test.ko
DRIVER=${KIWI_SUITE_DRIVER:-kiwi}
SAN_SUITES=${KIWI_CHECK_SAN_SUITES:-abuse errors datapath faults fuzz-verbs}
RESULTS=$LOGS/results.txt
: >"$RESULTS"

T0=$SECONDS
say() { printf '[check %4ds] %s\n' $((SECONDS - T0)) "$*"; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$RESULTS"; }	# PASS|FAIL|SKIP|TODO|HARNESS|RETRY name [note]
# skipped_phase NAME: NAME is in KIWI_CHECK_SKIP; recorded (once) as a
# skipped phase, so that the summary names it.
skipped_phase() {
	[[ ",$SKIP," == *",$1,"* ]] || return 1
	grep -q "^SKIP	phase\.$1	" "$RESULTS" ||
		record SKIP "phase.$1" "left out by KIWI_CHECK_SKIP"
}

# ------------------------------------------------------------ 1. host --
host_phase() {
	say "phase 1/8: host unit tests (ctest --test-dir $BUILD)"
	if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
		say "no CTest tree in $BUILD: build first (make all)"
		record FAIL host.ctest_tree_present "no $BUILD/CTestTestfile.cmake"
		return
	fi
	local log=$LOGS/ctest.log rc n=0 line name status
	timeout -k 10 900 ctest --test-dir "$BUILD" --output-on-failure --timeout 300 >"$log" 2>&1
	rc=$?
	# "  3/12 Test  #3: name .......................   Passed    0.01 sec"
	while IFS= read -r line; do
		[[ $line =~ ^[[:space:]]*[0-9]+/[0-9]+[[:space:]]+Test[[:space:]]+#([0-9]+):[[:space:]]+([^[:space:]]+)[[:space:].]+(.*)$ ]] || continue
		name=${BASH_REMATCH[2]} status=${BASH_REMATCH[3]}
		n=$((n + 1))
		case "$status" in
		Passed*) record PASS "ctest.$name" ;;
		*Skipped*|*"Not Run"*"Disabled"*) record SKIP "ctest.$name" "$status" ;;
		*) record FAIL "ctest.$name" "$(sed 's/[[:space:]]\+/ /g' <<<"$status")" ;;
		esac
	done <"$log"
	if [ "$n" -eq 0 ]; then
		record FAIL ctest.ran_tests "ctest exit $rc, no test results (see $log)"
		tail -20 "$log"
	elif [ "$rc" -ne 0 ] && ! grep -q "^FAIL	ctest\." "$RESULTS"; then
		record FAIL ctest.exit_status "ctest exit $rc (see $log)"
	fi
	grep -E "tests passed|tests failed" "$log" | tail -1 | sed 's/^/    /'
	grep -E "^FAIL	ctest\." "$RESULTS" | cut -f2,3 | sed 's/^/    FAIL /'
	say "host phase done: $n ctest cases"
	docs_check
	lint_check
	version_order
}

# scripts/lint.sh (make lint), one result per check, a failure naming the
# first findings (all of them in lint.log).
lint_check() {
	local log=$LOGS/lint.log c n
	"$ROOT/scripts/lint.sh" >"$log" 2>&1
	for c in checkpatch shellcheck knobs layers; do
		n=$(grep -c "^$c: " "$log")
		if ! grep -q '^lint: ' "$log"; then
			record FAIL "host.$c" "scripts/lint.sh ended without its summary (see $log)"
		elif [ "$n" -eq 0 ]; then
			record PASS "host.$c"
		else
			record FAIL "host.$c" "$n findings, first: $(grep -m2 "^$c: " "$log" | cut -d' ' -f2- | tr '\n' ' ' | cut -c1-300)(see $log)"
		fi
	done
}

# Package versions from scripts/version.sh order as commits do: in a
# throw-away clone, a commit made after HEAD must give a version dpkg
# sorts above HEAD's (apt then upgrades one build to the next).
version_order() {
	local d v1 v2
	d=$(mktemp -d) || return
	if git clone -q --no-hardlinks "$ROOT" "$d/t" 2>/dev/null &&
	   v1=$("$d/t/scripts/version.sh") &&
	   git -C "$d/t" -c user.name=kiwi-check -c user.email=check@kiwi.invalid \
		commit -q --allow-empty -m "version order check" &&
	   v2=$("$d/t/scripts/version.sh") &&
	   dpkg --compare-versions "$v2" gt "$v1"; then
		record PASS host.version_order "$v1 < $v2 (dpkg --compare-versions)"
	else
		record FAIL host.version_order "a later commit's version ${v2:-?} does not sort above ${v1:-?}"
	fi
	rm -rf "$d"
}

# The documents against the code: module parameters (kiwi.4, kiwi.rst,
# MODULE_PARM_DESC; scripts/check-params.py) and the packaged man pages.
docs_check() {
	local out m
	if out=$("$ROOT/scripts/check-params.py" 2>&1); then
		record PASS docs.params "$(tail -n1 <<<"$out")"
	else
		record FAIL docs.params "$(grep -v FAIL <<<"$out" | head -n3 | tr '\n' ' ')"
	fi
	for m in kiwi.4 kiwi-selftest.8 kiwi-diag.8; do
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$ROOT/Documentation/$m" 2>&1 >/dev/null)
		if [ -z "$out" ]; then
			record PASS "docs.man.$m"
		else
			record FAIL "docs.man.$m" "$(head -n2 <<<"$out" | tr '\n' ' ')"
		fi
	done
}

# The suite's own verdicts, each fed a broken variant that must fail it
# (selftests/verdicts.sh: TAP, a few seconds).
verdicts_phase() {
	local log=$LOGS/verdicts.log line rest n=0 plan=-1
	"$ROOT/selftests/verdicts.sh" "$BUILD" >"$log" 2>&1
	while IFS= read -r line; do
		case "$line" in
		1..*) plan=${line#1..} ;;
		"ok "[0-9]*) rest=${line#ok }; n=$((n + 1)); record PASS "verdicts.${rest#* }" ;;
		"not ok "[0-9]*) rest=${line#not ok }; n=$((n + 1)); record FAIL "verdicts.${rest#* }" ;;
		esac
	done <"$log"
	[ "$n" -gt 0 ] && [ "$plan" -eq "$n" ] ||
		record FAIL verdicts.complete "plan ${plan/#-1/missing}, $n results (see $log)"
	say "verdicts: $n checks of the checks ($(grep -c '^not ok' "$log") failed)"
}

# ----------------------------------------------------------- 2. guest --
# guest_run PREFIX SCRIPT TITLE TIMEOUT [EXTRA.ko...]: boots the guest once,
# runs SCRIPT there and records its TAP results as PREFIX.<name>, plus
# PREFIX.run_finished, PREFIX.suite_complete and PREFIX.dmesg_clean for the
# run itself.
# A harness fault (vm/run.sh exit 126) -- a boot that died or hung before its
# command started, or a guest kernel that trapped on an int3 its text no
# longer holds (the emulator's doing: vm/emulator-fault.sh) -- says nothing of
# kiwi: reported as such (HARNESS lines in the summary, which do not count
# as results, with vm/run.sh's evidence), its logs kept, and the phase run
# once more; the faulted run's results are set aside, not counted.
guest_run() {
	local try
	for try in 1 2; do
		guest_run_once "$@"
		[ "$GUEST_RC" = 126 ] || return
		record HARNESS "$1.harness_$try" "$(grep -m1 'harness fault' "$LOGS/$1-vm.log" | cut -c1-400)"
		say "  $1: HARNESS FAULT: $(grep -m1 'harness fault' "$LOGS/$1-vm.log" | cut -c20-200); console in $LOGS/$1-vm-harness-$try.log; $([ $try = 1 ] && echo 'running the phase again' || echo 'twice: giving up')"
		cp "$LOGS/$1-vm.log" "$LOGS/$1-vm-harness-$try.log"
		cp "$LOGS/$1.log" "$LOGS/$1-harness-$try.log" 2>/dev/null || true
	done
	record FAIL "$1.harness" "two harness faults in a row (vm/run.sh exit 126): the phase's tests did not run to an end"
}

guest_run_once() {
	local pfx=$1 script=$2 title=$3 tmo=$4 extra
	shift 4
	local ko=${GUEST_KO:-$ROOT/kmod/kiwi.ko}
	[ -z "${GUEST_NO_KO:-}" ] || ko=/nonexistent	# kiwi comes from elsewhere
	local out=$LOGS/$pfx.log vmlog=$LOGS/$pfx-vm.log dm=$LOGS/$pfx-dmesg.log
	local args=(--quiet --timeout "$tmo" --dmesg "$dm") rc plan=-1 n=0 line rest

	say "$title (QEMU TCG, timeout ${tmo}s)"
	[ "$DRIVER" = kiwi ] && [ -f "$ko" ] && args+=(--module "$ko")
	for extra in "$@"; do
		args+=(--module "$extra")
	done
	rm -f "$dm"

	# Live progress: phase headers and failures as they happen.
	[ -z "${GUEST_KERNEL:-}" ] || args+=(--kernel "$GUEST_KERNEL")
	[ -z "${GUEST_APPEND:-}" ] || args+=(--append "$GUEST_APPEND")
	env ${GUEST_KVER:+KVER="$GUEST_KVER"} \
	KIWI_SELFTEST_BIN="${KIWI_SELFTEST_BIN:-$BUILD/selftests}" \
	KIWI_SUITE_DRIVER="$DRIVER" \
		"$ROOT/selftests/vm/run.sh" "${args[@]}" -- "$script" \
		2>"$vmlog" | tr -d '\r' | tee "$out" |
		while IFS= read -r line; do
			case "$line" in
			"# ===="*) say "  $pfx: ${line#\# }" ;;
			"not ok "*"# TODO"*) ;;
			"not ok "*) say "  $pfx: $line" ;;
			esac
		done
	rc=${PIPESTATUS[0]}
	GUEST_RC=$rc
	[ "$rc" -ne 126 ] || return 0

	while IFS= read -r line; do
		case "$line" in
		1..*) plan=${line#1..} ;;
		"ok "[0-9]*)
			rest=${line#ok }; rest=${rest#* }; n=$((n + 1))
			if [[ $rest == *" # SKIP"* ]]; then
				record SKIP "$pfx.${rest%% # SKIP*}" "${rest#* # SKIP }"
			elif [[ $rest == *" # TODO"* ]]; then
				record PASS "$pfx.${rest%% # TODO*}" "TODO passes now: ${rest#* # TODO }"
			else
				record PASS "$pfx.$rest"
			fi ;;
		"not ok "[0-9]*)
			rest=${line#not ok }; rest=${rest#* }; n=$((n + 1))
			if [[ $rest == *" # TODO"* ]]; then
				record TODO "$pfx.${rest%% # TODO*}" "${rest#* # TODO }"
			else
				record FAIL "$pfx.$rest"
			fi ;;
		"# RETRY "*" -- "*)	# lib.sh: a run repeated, with its evidence
			rest=${line#\# RETRY }
			record RETRY "$pfx.${rest%% -- *}" "${rest#* -- }" ;;
		esac
	done <"$out"

	# The run itself.  The scripts exit 0 or 1; vm/run.sh: 1 also for kernel
	# trouble in dmesg, 124 timeout, 125 guest died, else the runner failed.
	case $rc in
	0|1) record PASS "$pfx.run_finished" ;;
	124) record FAIL "$pfx.run_finished" "guest timed out after ${tmo}s" ;;
	125) record FAIL "$pfx.run_finished" "guest died (see build/vm/console-last.log)" ;;
	*)   record FAIL "$pfx.run_finished" "exit $rc: $(grep -v fw_cfg "$vmlog" | head -c 300 | tr '\n' ' ')" ;;
	esac
	if [ "$plan" -ge 0 ] && [ "$plan" -eq "$n" ] && [ "$n" -gt 0 ]; then
		record PASS "$pfx.suite_complete"
	else
		record FAIL "$pfx.suite_complete" "plan ${plan/#-1/missing}, $n results"
	fi
	if grep -q "kernel trouble" "$vmlog"; then
		record FAIL "$pfx.dmesg_clean" "$(grep -m1 -A3 'check-dmesg: kernel trouble' "$vmlog" | tail -n +2 | tr '\n' ' ' | cut -c1-200)"
	elif [ -s "$dm" ]; then
		record PASS "$pfx.dmesg_clean"
	else
		record FAIL "$pfx.dmesg_clean" "no guest dmesg saved"
	fi
	if [ "$rc" -ne 0 ] && ! grep -q "^FAIL	$pfx\." "$RESULTS"; then
		record FAIL "$pfx.exit_status" "exit status $rc without a failed test"
	fi
	[ ! -s "$vmlog" ] || grep -v 'fw_cfg' "$vmlog" | head -20 | sed 's/^/    vm: /'
	say "$pfx done: $n results, run exit $rc (logs: $out, $dm)"
}

# vm/run.sh's own exit codes (124-126: timeout, guest death, harness fault)
# never come from the command: one guest boot whose command exits 126 must
# end in 1, not in the harness fault that guest_run would rerun.
harness_codes() {
	local rc=0
	"$ROOT/selftests/vm/run.sh" --quiet --timeout 120 -- sh -c 'exit 126' \
		>"$LOGS/harness-codes.log" 2>&1 || rc=$?
	if [ "$rc" = 1 ] && grep -q "the command itself exited 126" "$LOGS/harness-codes.log"; then
		record PASS guest.harness_codes "a command's own exit 126 is reported as 1, not as a harness fault"
	else
		record FAIL guest.harness_codes "a command's own exit 126 came back as $rc (log: $LOGS/harness-codes.log)"
	fi
	# A guest kernel's int3 trap at text that holds a NOP (the emulator's
	# fault, vm/emulator-fault.sh) makes the run a harness fault, whenever it
	# comes.  The trap's report is written to the kernel log by the command
	# here, as the console would show it (selftests/verdicts.sh has the
	# cases that must not match).
	rc=0
	"$ROOT/selftests/vm/run.sh" --quiet --timeout 120 -- sh -c '
		for l in "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" \
			"RIP: 0010:enqueue_timer+0x1c/0x90" \
			"Code: 48 89 e5 41 55 41 54 53 48 83 ec 18 65 48 8b 05 2d 14 5b 68 31 c0 66 <90> 48 8b 05 c8" \
			"RSP: 0018:ffffc900003bf9d8 EFLAGS: 00000246"; do
			echo "<4>$l" >/dev/kmsg
		done; sleep 1; exit 0' >"$LOGS/harness-int3.log" 2>&1 || rc=$?
	if [ "$rc" = 126 ] && grep -q "harness fault: the guest kernel trapped on a stale int3" "$LOGS/harness-int3.log"; then
		record PASS guest.harness_int3 "an int3 trap at a NOP in the guest's log is a harness fault (exit 126)"
	else
		record FAIL guest.harness_int3 "an int3 trap at a NOP came back as $rc, not 126 (log: $LOGS/harness-int3.log)"
	fi
}

guest_phase() {
	local ko=$ROOT/kmod/kiwi.ko so=$BUILD/provider/libkiwi-rdmav34.so

	if [ "$DRIVER" = kiwi ]; then
		if [ -f "$ko" ]; then record PASS guest.kiwi_ko_built
		else record FAIL guest.kiwi_ko_built "$ko missing (make kmod)"; say "$ko missing"; fi
		if [ -f "$so" ]; then record PASS guest.provider_built
		else record FAIL guest.provider_built "$so missing (make provider)"; say "$so missing"; fi
	fi
	if [ ! -x "$ROOT/selftests/vm/run.sh" ]; then
		record FAIL guest.vm_runner_present "selftests/vm/run.sh missing"
		return
	fi
	harness_codes
	skipped_phase suite ||
		guest_run guest "$ROOT/selftests/guest/suite.sh" \
			"phase 2/8: guest suite (driver $DRIVER)" "$GUEST_TIMEOUT"
	# The data-path tests (two devices over a veth pair: rping, perftest)
	# get a boot of their own, once they exist.
	if [ "$DRIVER" != kiwi ] || skipped_phase datapath; then
		:
	elif [ ! -x "$ROOT/selftests/guest/datapath.sh" ]; then
		record FAIL datapath.script_present "selftests/guest/datapath.sh missing or not executable"
	else
		guest_run datapath "$ROOT/selftests/guest/datapath.sh" \
			"phase 3/8: guest data-path tests" "$DP_TIMEOUT"
	fi
	[ "$DRIVER" = kiwi ] || return
	# Error paths (protocol errors, killed peers: guest/errors.sh with
	# the iwerr test peer) in a boot of their own as well.
	if skipped_phase errors; then
		:
	elif [ ! -x "$ROOT/selftests/guest/errors.sh" ]; then
		record FAIL errors.script_present "selftests/guest/errors.sh missing or not executable"
	else
		guest_run errors "$ROOT/selftests/guest/errors.sh" \
			"phase 4/8: guest error-path tests" "$ERR_TIMEOUT"
	fi
	# Abuse: a raw-TCP hostile peer in the data phase, a process that
	# tries to take over another's QP, CQ overflow, unload while held.
	# With the kernel consumer that fast-registers (case frmr_remap).
	# abuse.sh runs once: on the sanitizer kernel when that phase runs
	# it (KIWI_CHECK_SAN_SUITES), which finds more, else here.
	if [ "${KIWI_CHECK_SAN:-0}" = 1 ] && ! skipped_phase abuse &&
	   ! skipped_phase sanitizer && [[ " $SAN_SUITES " == *" abuse "* ]]; then
		record SKIP abuse.production_kernel "abuse.sh runs on the sanitizer kernel (san_abuse.*)"
	elif ! skipped_phase abuse; then
		local frmr=()
		if [ -f "$FRMR_KO" ]; then
			frmr=("$FRMR_KO")
		else
			record FAIL abuse.frmr_module_built "$FRMR_KO missing (make kconsumer)"
		fi
		if [ -f "$KCONNECT_KO" ]; then
			frmr+=("$KCONNECT_KO")
		else
			record FAIL abuse.kconnect_module_built "$KCONNECT_KO missing (make kconsumer)"
		fi
		guest_run abuse "$ROOT/selftests/guest/abuse.sh" \
			"phase 4/8: guest abuse tests (hostile peer and process)" \
			"${KIWI_CHECK_ABUSE_TIMEOUT:-1500}" "${frmr[@]}"
	fi
	# Faults: netem loss/duplication/reordering, MTU/link/address
	# changes during traffic.
	skipped_phase faults ||
		guest_run faults "$ROOT/selftests/guest/faults.sh" \
			"phase 4/8: guest fault tests (netem, link changes)" \
			"$ERR_TIMEOUT"
	# Load: 1000 connected QPs per device, refusals beyond max_qp.
	skipped_phase load ||
		guest_run load "$ROOT/selftests/guest/load.sh" \
			"phase 4/8: guest load test (1000 QPs, max_qp refusals)" \
			"$ERR_TIMEOUT"
	if skipped_phase interop; then
		:
	elif [ ! -f "$SIW_KO" ]; then
		record FAIL interop.siw_built "$SIW_KO missing (make siw)"
	else
		guest_run interop "$ROOT/selftests/guest/interop.sh" \
			"phase 5/8: interop with Linux siw (rping, perftest, qperf)" "$IO_TIMEOUT" "$SIW_KO"
	fi
	skipped_phase ulp ||
		guest_run ulp "$ROOT/selftests/guest/kernel-ulp.sh" \
			"phase 6/8: kernel consumers (NVMe over RDMA)" 600
	skipped_phase nfs ||
		guest_run nfs "$ROOT/selftests/guest/nfs.sh" \
			"phase 6/8: NFS over RDMA (nfsd in a namespace, NFS 4.2 and 3)" 600
	skipped_phase apps ||
		guest_run apps "$ROOT/selftests/guest/apps.sh" \
			"phase 6/8: user-space middleware (rsockets, qperf, libfabric)" 600
	skipped_phase iser ||
		guest_run iser "$ROOT/selftests/guest/iser.sh" \
			"phase 6/8: iSER (LIO ib_isert target, open-iscsi ib_iser)" 600
	skipped_phase mpi ||
		guest_run mpi "$ROOT/selftests/guest/mpi.sh" \
			"phase 6/8: MPI (Open MPI across two namespaces)" 600
}

# ------------------------------------------------------------ 7. 6.12 --
# The module built against Debian 12's 6.12 kernel (bookworm-security's
# linux-headers-6.12-amd64) in a copy of its sources, and the data-path
# tests in a guest booting that kernel.
# The 6.12 headers: unpacked into the cache by scripts/guest-kernel.sh (make
# deps does it; fetched here if missing), never installed on the host.
k612_headers() {
	"$ROOT/scripts/guest-kernel.sh" 6.12 2>"$LOGS/k612-headers.log" | tail -n1
}
k612_phase() {
	local hdr kver dir=$BUILD/kmod-6.12 blog=$LOGS/k612-build.log

	hdr=$(k612_headers)
	if [ -z "$hdr" ]; then
		record FAIL k612.headers "no 6.12 headers (scripts/guest-kernel.sh 6.12 failed; see $LOGS/k612-headers.log)"
		return
	fi
	kver=${hdr##*/linux-headers-}
	say "phase 7/8: kiwi for Linux $kver (build/kmod-6.12)"
	if ! "$ROOT/scripts/kmod-copy.sh" "$dir" "$hdr" W=1 >"$blog" 2>&1; then
		record FAIL k612.build "$(grep -m3 -E 'error|Error' "$blog" | tr '\n' ' ' | cut -c1-200)"
		return
	fi
	if grep -q 'warning:' "$blog"; then
		record FAIL k612.build "compiler warnings: $(grep -m2 'warning:' "$blog" | tr '\n' ' ' | cut -c1-200)"
		return
	fi
	record PASS k612.build
	KIWI_DP_MTU=${KIWI_CHECK_K612_MTU:-9000} \
	GUEST_KO=$dir/kmod/kiwi.ko GUEST_KVER=$kver \
		guest_run k612 "$ROOT/selftests/guest/datapath.sh" \
		"phase 7/8: data-path tests on Linux $kver" "$DP_TIMEOUT"
}

# --------------------------------------------------------- twohost --
# Two machines (selftests/check-2host.sh): two guests joined only by a QEMU
# virtual NIC, Debian's 6.1 kernel in one and 6.12 in the other.  make
# check runs one configuration (KIWI_CHECK_2HOST_RUNS, default
# virtio9000: rping -V, perftest both ways, immediate data, atomics,
# windows, markers, then one guest killed mid-transfer and booted
# again); `make check-2host` runs them all.  It reuses phase 7's 6.12
# build when that phase ran.
twohost_phase() {
	local log=$LOGS/twohost.log k612=$BUILD/kmod-6.12 st name detail
	local runs=${KIWI_CHECK_2HOST_RUNS:-virtio9000}

	say "phase 7/8: two guests over a virtual NIC ($runs; log $log)"
	[ -f "$k612/kmod/kiwi.ko" ] && ! skipped_phase k612 || k612=
	KIWI_2HOST_RUNS=$runs KIWI_2HOST_K612DIR=$k612 \
		"$ROOT/selftests/check-2host.sh" >"$log" 2>&1
	while IFS=$'\t' read -r st name detail; do
		record "$st" "twohost.$name" "$detail"
	done <"$BUILD/check-2host/results.txt"
	grep -q . "$BUILD/check-2host/results.txt" ||
		record FAIL twohost.ran "no results (see $log)"
	grep -E '^\[2host|passed,' "$log" | sed 's/^/    /'
}

# ------------------------------------------------------- sanitizer --
# Debian's linux-source-6.1 built with KASAN, lockdep, UBSAN, kmemleak and
# DEBUG_ATOMIC_SLEEP (scripts/build-sanitizer-kernel.sh, cached under
# /var/cache/kiwi: built once per machine), kiwi and the test kernel
# consumer built against it (build/kmod-sanitizer), and the hostile-peer,
# error, data-path and fault suites (and the verbs fuzzer, once it exists)
# each in a boot of that kernel, through selftests/guest/sanitizer.sh
# (which adds a kmemleak scan after the suite).  Any sanitizer report in
# the guest's kernel log fails the boot's dmesg_clean check.
sanitizer_phase() {
	local kdir dir=$BUILD/kmod-sanitizer klog=$LOGS/sanitizer-kernel.log
	local blog=$LOGS/sanitizer-build.log t=$SECONDS suite extra tmo

	say "phase sanitizer: KASAN/lockdep/UBSAN/kmemleak kernel (scripts/build-sanitizer-kernel.sh; log $klog)"
	# KIWI_SAN_KERNEL: a directory laid out like the script's (a kernel
	# built elsewhere, or a stand-in for testing the phase itself).
	if [ -n "${KIWI_SAN_KERNEL:-}" ]; then
		kdir=$KIWI_SAN_KERNEL
		echo "KIWI_SAN_KERNEL=$kdir: not building" >"$klog"
	else
		kdir=$("$ROOT/scripts/build-sanitizer-kernel.sh" 2>"$klog" | tail -n1)
	fi
	if [ -z "$kdir" ] || [ ! -e "$kdir/.done" ]; then
		record FAIL sanitizer.kernel "$(tail -n 3 "$klog" | tr '\n' ' ' | cut -c1-200)"
		return
	fi
	record PASS sanitizer.kernel "$(basename "$kdir"), $((SECONDS - t)) s here, built in $(cat "$kdir/time") s"
	if ! "$ROOT/scripts/kmod-copy.sh" --kconsumer "$dir" "$kdir/build" >"$blog" 2>&1; then
		record FAIL sanitizer.build "$(grep -m3 -E 'error|Error' "$blog" | tr '\n' ' ' | cut -c1-200)"
		return
	fi
	record PASS sanitizer.build
	for suite in $SAN_SUITES; do
		[ -x "$ROOT/selftests/guest/$suite.sh" ] || {
			[ "$suite" = fuzz-verbs ] || record FAIL "san_$suite.present" "no selftests/guest/$suite.sh"
			continue
		}
		extra=()
		[ "$suite" != abuse ] || extra=("$dir/kconsumer/kiwi_frmr_test.ko"
						"$dir/kconsumer/kiwi_kconnect_test.ko")
		# Slower than on Debian's kernel: KASAN checks every access,
		# lockdep every lock, kmemleak tracks every allocation.
		tmo=${KIWI_CHECK_SAN_TIMEOUT:-2400}
		KIWI_SAN_SUITE=$suite.sh KIWI_FUZZ_MINUTES=${KIWI_FUZZ_MINUTES:-3} \
		GUEST_KO=$dir/kmod/kiwi.ko GUEST_KERNEL=$kdir GUEST_APPEND=kasan_multi_shot \
			guest_run "san_$suite" "$ROOT/selftests/guest/sanitizer.sh" \
			"phase sanitizer: $suite.sh on $(cat "$kdir/release")" "$tmo" "${extra[@]}"
	done
}

# ------------------------------------------------------------- 8. deb --
# kiwi's Debian packages built (scripts/deb.sh: lintian clean), then
# installed, used and removed in a 6.1 guest (and a 6.12 one with
# KIWI_CHECK_DEB_BOTH=1; selftests/guest/packages.sh), the guest's kiwi
# coming only from them.
deb_phase() {
	local dir=$BUILD/deb log=$LOGS/deb-build.log rc hdr kver k61 later later_hdr what
	say "phase 8/8: Debian packages (make deb), installed in guests"
	"$ROOT/scripts/deb.sh" "$dir" >"$log" 2>&1
	rc=$?
	if ls "$dir"/kiwi-dkms_*_all.deb "$dir"/libkiwi-rdmav34_*.deb >/dev/null 2>&1; then
		record PASS deb.build "$(cd "$dir" && ls kiwi-dkms_*.deb libkiwi-rdmav34_[0-9]*.deb | tr '\n' ' ')"
	else
		record FAIL deb.build "$(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-200)"
		return
	fi
	if [ "$rc" -eq 0 ]; then
		record PASS deb.lintian_clean
	else
		record FAIL deb.lintian_clean "$(grep -m3 -E '^  [EW]:' "$log" | tr '\n' ' ' | cut -c1-200) (see $log)"
	fi
	sed 's/^/    /' "$log" | grep -E '\.deb:|done in'
	hdr=$(ls -d /usr/src/linux-headers-6.1.*-amd64 | sort -V | tail -n1)
	k61=${hdr#/usr/src/linux-headers-}
	# One boot of Debian 12's default kernel: DKMS builds kiwi for it at
	# install (5-7 minutes under TCG), then the installed kiwi-selftest,
	# kiwi-link@.service and kiwi-diag are exercised.  A DKMS build for
	# 6.12 as a kernel installed later costs as much again: only with
	# KIWI_CHECK_DEB_LATER=1 (its headers: scripts/guest-kernel.sh's copy).
	# The mirror image (booting 6.12, 6.1 installed later) runs only with
	# KIWI_CHECK_DEB_BOTH=1.
	later='' later_hdr='' what=''
	if [ "${KIWI_CHECK_DEB_LATER:-0}" = 1 ] || [ "${KIWI_CHECK_DEB_BOTH:-0}" = 1 ]; then
		later_hdr=$(k612_headers)
		[ -n "$later_hdr" ] || { record FAIL deb.headers612 "no 6.12 headers (scripts/guest-kernel.sh 6.12)"; return; }
		later=${later_hdr##*/linux-headers-}
		what=" (and DKMS for $later installed later)"
	fi
	KIWI_DEB_DIR=$dir KIWI_DEB_LATER=$later KIWI_DEB_LATER_HDR=$later_hdr \
		GUEST_NO_KO=1 guest_run deb61 \
		"$ROOT/selftests/guest/packages.sh" \
		"phase 8/8: packages installed on Linux $k61$what" \
		"${KIWI_CHECK_DEB_TIMEOUT:-1800}"
	[ "${KIWI_CHECK_DEB_BOTH:-0}" = 1 ] || return 0
	kver=$later
	KIWI_DEB_DIR=$dir KIWI_DEB_LATER=$k61 GUEST_NO_KO=1 GUEST_KVER=$kver \
		guest_run deb612 "$ROOT/selftests/guest/packages.sh" \
		"phase 8/8: packages installed on Linux $kver (and DKMS for $k61 installed later)" \
		"${KIWI_CHECK_DEB_TIMEOUT:-1800}"
}

# ------------------------------------------------------------- fuzz --
# The wire parsers under libFuzzer (scripts/fuzz.sh), KIWI_FUZZ_SECONDS each
# (default 60), one per CPU at a time.
fuzz_phase() {
	local log=$LOGS/fuzz.log line
	say "phase fuzz: libFuzzer targets, ${KIWI_FUZZ_SECONDS:-60} s each"
	"$ROOT/scripts/fuzz.sh" >"$log" 2>&1
	while IFS= read -r line; do
		case "$line" in
		"PASS "*) line=${line#PASS }; record PASS "fuzz.${line%%:*}" "${line#*: }" ;;
		"FAIL "*) line=${line#FAIL }; record FAIL "fuzz.${line%%:*}" "${line#*: }" ;;
		esac
	done <"$log"
	grep -q '^PASS\|^FAIL' "$log" || record FAIL fuzz.ran "no fuzz results (see $log)"
	sed 's/^/    /' "$log" | grep -E 'PASS|FAIL|passed'
}

skipped_phase host || { host_phase; verdicts_phase; }
skipped_phase fuzz || fuzz_phase
skipped_phase guest || guest_phase
[ "$DRIVER" != kiwi ] || skipped_phase guest || skipped_phase k612 ||
	k612_phase
[ "$DRIVER" != kiwi ] || skipped_phase guest || skipped_phase twohost ||
	twohost_phase
[ "$DRIVER" != kiwi ] || skipped_phase guest || skipped_phase deb ||
	deb_phase
# Opt-in (KIWI_CHECK_SAN=1) until the kernel build and the boots on it
# have been measured on an idle 2-core machine: the build alone is
# estimated at 25-35 min, which with the rest would not fit CI's limit.
if [ "${KIWI_CHECK_SAN:-0}" != 1 ]; then
	record SKIP sanitizer.phase "opt-in (KIWI_CHECK_SAN=1): its CI time is not yet measured"
elif [ "$DRIVER" = kiwi ] && ! skipped_phase guest && ! skipped_phase sanitizer; then
	sanitizer_phase
fi

# ---------------------------------------------------------- summary --
# The phases a "guest" skip leaves out are named one by one.
if skipped_phase guest; then
	for p in suite datapath errors abuse faults load interop ulp nfs apps iser mpi k612 twohost deb; do
		SKIP+=",$p"
		skipped_phase $p
	done
fi
"$ROOT/selftests/summary.sh" "$RESULTS" $((SECONDS - T0))
