#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# selftests/verdicts.sh -- tests of the test suite's own verdicts, on the
# host, in a second or two: every check that decides a guest result is
# fed made-up input twice, once as a passing run looks and once broken
# the way the check exists to catch (an injected kernel-log line, a data
# mismatch, a stale log line, a timeout instead of a refusal...).  The
# broken variant must fail the check, else the check could never fail.
#
#   selftests/verdicts.sh [BUILD]
#
# Output is TAP 13 with the plan line last; selftests/check.sh runs it in
# its host phase (results host.verdicts.*).  Exit status 0 iff all pass.
set -u

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BUILD=${1:-$ROOT/build}
CHECK_DMESG=$ROOT/selftests/vm/check-dmesg.sh

# lib.sh's verdict helpers, as the guest scripts use them.  Nothing here
# touches the host's tracing or network: mountpoint is stubbed so that
# perf_trace_start never mounts anything, TR points at a scratch copy.
. "$ROOT/selftests/guest/lib.sh"
W=$TMPD
TR=$W/tracing
mkdir -p "$TR"
mountpoint() { return 0; }

N=0 BAD=0
pass() { N=$((N + 1)); echo "ok $N $1"; }
fail() { N=$((N + 1)); BAD=$((BAD + 1)); echo "not ok $N $1"; }

# expect pass|fail NAME CMD...: CMD's exit status says pass (0) or fail
# (non-zero) as expected.
expect() {
	local want=$1 name=$2 out got first
	shift 2
	if out=$("$@" 2>&1); then got=pass; else got=fail; fi
	first=$(grep -v -e '^TAP version' -e '^$' <<<"$out" | head -n 1 | cut -c1-100)
	if [ "$got" = "$want" ]; then
		pass "$name: $want${first:+ ($first)}"
	else
		fail "$name: wanted $want, got $got"
		head -n 10 <<<"$out" | diag
	fi
}

echo "TAP version 13"

# ---- perftest result rows (lib.sh perf_row_sane) ------------------------
LAT_OK='       8       1000          12.34          250.10       20.50             25.00        10.00          90.00               200.00'
LAT_BAD='       8       1000          0.00           250.10       0.00              25.00        10.00          90.00               200.00'
LAT_SHORT='       8       12            12.34          250.10       20.50             25.00        10.00          90.00               200.00'
BW_OK=' 65536      1000             450.12             449.80               0.007197'
BW_BAD=' 65536      1000             0.00               0.00                 0.000000'
expect pass "perf_row_sane: ib_send_lat row, t_min <= t_typical <= t_max" perf_row_sane ib_send_lat 1000 "$LAT_OK"
expect fail "perf_row_sane: ib_send_lat row with t_min 0 (only t_max > 0)" perf_row_sane ib_send_lat 1000 "$LAT_BAD"
expect fail "perf_row_sane: ib_send_lat row with 12 of 1000 iterations" perf_row_sane ib_send_lat 1000 "$LAT_SHORT"
expect pass "perf_row_sane: ib_write_bw row, BW above 0" perf_row_sane ib_write_bw 1000 "$BW_OK"
expect fail "perf_row_sane: ib_write_bw row with BW 0" perf_row_sane ib_write_bw 1000 "$BW_BAD"

# ---- the kernel-log pattern list (check-dmesg.sh, and --regex for the
# per-case scans) --------------------------------------------------------
cat >"$W/clean" <<'EOF'
[    0.000000] Linux version 6.1.0-41-amd64 (debian-kernel@lists.debian.org)
[    0.000000] Command line: console=ttyS0 loglevel=5 sysctl.kernel.hung_task_timeout_secs=30 rdinit=/init
[    0.010000] Kernel command line: console=ttyS0 loglevel=5 sysctl.kernel.hung_task_timeout_secs=30 rdinit=/init
[    0.512000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15682)
[    0.513000] KernelAddressSanitizer initialized (generic)
[    0.514000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    3.100000] kiwi: loading out-of-tree module taints kernel.
[    3.200000] rcu: Hierarchical SRCU implementation.
[    9.000000] traps: rping[412] trap invalid opcode ip:7f0000001000 sp:7ffd00000000 error:0 in libc.so.6
[    9.100000] traps: qperf[413] general protection fault ip:7f0000001000 sp:7ffd00000000 error:0 in qperf
[   12.000000] kiwi1: QP 3: terminating stream: op 12 layer 1 type 2 code 0x02 (ctrl 410c len 40)
EOF
expect pass "check-dmesg: a clean boot (command line, sanitizer banners, user-space traps) passes" \
	"$CHECK_DMESG" "$W/clean"
re=$("$CHECK_DMESG" --regex)
# Each line as the kernel prints it, without the "WARNING:"/"BUG:" that
# a broader pattern would catch anyway: the specific pattern must.
while IFS='|' read -r what line; do
	{ cat "$W/clean"; echo "[   13.000000] $line"; } >"$W/dirty"
	expect fail "check-dmesg: $what fails the run" "$CHECK_DMESG" "$W/dirty"
	if [[ "[   13.000000] $line" =~ $re ]]; then
		pass "check-dmesg --regex (per-case scans): $what caught"
	else
		fail "check-dmesg --regex (per-case scans): $what not caught"
	fi
done <<'EOF'
invalid opcode|invalid opcode: 0000 [#1] PREEMPT SMP NOPTI
kernel BUG at|kernel BUG at drivers/infiniband/core/iwcm.c:969!
divide error|divide error: 0000 [#1] PREEMPT SMP NOPTI
int3|int3: 0000 [#1] PREEMPT SMP NOPTI
unregister_netdevice|unregister_netdevice: waiting for kv0 to become free. Usage count = 2
kiwi CRC self-check|kiwi: CRC32c implementations disagree, using crypto
KASAN|KASAN: slab-use-after-free in kiwi_rx_step+0x12/0x340 [kiwi]
UBSAN|UBSAN: array-index-out-of-bounds in kmod/rx.c:120:9
lockdep circular|possible circular locking dependency detected
lockdep recursive|possible recursive locking detected
lockdep inconsistent|inconsistent lock state
sleeping in atomic|sleeping function called from invalid context at kernel/locking/mutex.c:580
kmemleak|kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
RCU lockdep|suspicious RCU usage
hung task|INFO: task kworker/u4:2:88 blocked for more than 30 seconds.
WARN_ON|WARNING: CPU: 1 PID: 88 at kmod/qp.c:412 kiwi_qp_modify+0x1/0x2 [kiwi]
EOF
expect pass "vm/run.sh: guests boot with hung_task_timeout_secs=30" \
	grep -q 'sysctl.kernel.hung_task_timeout_secs=30' "$ROOT/selftests/vm/run.sh"
for f in suite.sh errors.sh; do
	# shellcheck disable=SC2016 # the literal line
	expect pass "$f: per-case scan uses check-dmesg's list" \
		grep -q 'KTROUBLE=$("$ROOT/selftests/vm/check-dmesg.sh" --regex)' "$ROOT/selftests/guest/$f"
done

# ---- an int3 trap the kernel text cannot explain is the emulator's ------
# (vm/emulator-fault.sh; vm/run.sh makes it a harness fault, exit 126).  The
# samples are a 6.12 oops as the console shows it; what tells the cases
# apart is the byte before the <> of the Code: line, where the int3 was.
EMU=$ROOT/selftests/vm/emulator-fault.sh
int3_log() {	# int3_log FILE HEADER BYTE [FIRST-LINE]
	{
		[ -z "${4:-}" ] || echo "[   60.000000] $4"
		echo "[   62.896265] $2"
		echo "[   62.897071] CPU: 0 UID: 0 PID: 362 Comm: ib_send_bw Tainted: G           OE      6.12.117+deb12-amd64 #1"
		echo "[   62.897200] RIP: 0010:secure_tcp_seq_and_ts_off+0x39/0x120"
		echo "[   62.897300] Code: 48 89 e5 41 55 41 54 53 48 83 ec 18 65 48 8b 05 2d 14 5b 68 48 89 45 e0 31 c0 $3 <90> 48 8b 05 c8 a3"
		echo "[   62.897400] RSP: 0018:ffffc900003bf9d8 EFLAGS: 00000246"
	} >"$1"
}
int3_log "$W/emu612" "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" 66
int3_log "$W/emu61" "int3: 0000 [#1] PREEMPT SMP NOPTI" 0f
int3_log "$W/pad" "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" cc
int3_log "$W/after" "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" 66 \
	"BUG: KASAN: slab-use-after-free in kiwi_rx_step+0x12/0x340 [kiwi]"
grep -v 'Code:' "$W/emu612" >"$W/nocode"
echo "[    1.000000] Linux version 6.12.117+deb12-amd64" >"$W/empty0"
expect pass "emulator-fault: 6.12 int3 trap where the text holds a NOP (0x66)" "$EMU" "$W/emu612"
expect pass "emulator-fault: 6.1 int3 trap where the text holds a NOP (0x0f)" "$EMU" "$W/emu61"
expect fail "emulator-fault: int3 trap on a real int3 (0xcc, a wild jump into padding) is kiwi's" "$EMU" "$W/pad"
expect fail "emulator-fault: int3 trap after another report is not the emulator's" "$EMU" "$W/after"
expect fail "emulator-fault: int3 trap without a code dump proves nothing" "$EMU" "$W/nocode"
expect fail "emulator-fault: a clean log" "$EMU" "$W/empty0"
# shellcheck disable=SC2016 # the literal line
expect pass "vm/run.sh: a stale int3 is a harness fault (exit 126)" \
	grep -q 'why=$("$HERE/emulator-fault.sh" "$console_log")' "$ROOT/selftests/vm/run.sh"

# ---- perftest retries only on evidence (lib.sh perf_retry_reason) ------
echo "RDMA_CM_EVENT_REJECTED; error: -111" >"$W/rej"
echo "RDMA_CM_EVENT_REJECTED; error: -104" >"$W/reset"
: >"$W/empty"
ep='ib_write_bw-200 [001] ..... 41.5: kiwi_cm: kiwi0 ep 00000000deadbeef qp 0'
printf '%s connect status 0 10.91.0.1:0 -> 10.91.0.2:18515\n%s connect_failed status -111 10.91.0.1:0 -> 10.91.0.2:18515\n' \
	"$ep" "$ep" >"$W/unseen"
printf '%s connect status 0 x -> y\n%s mpa_request_sent status 0 x -> y\n%s connect_failed status -111 x -> y\n' \
	"$ep" "$ep" "$ep" >"$W/seen"
# The CM worker's connect_failed may be traced before the connecting
# thread's "connect" event (seen in a guest run: not retried, a FAIL).
printf '%s connect_failed status -111 x -> y\n%s connect status 0 x -> y\n' \
	"$ep" "$ep" >"$W/unseen_rev"
printf '%s connect_failed status -111 x -> y\n%s connect status 0 x -> y\n%s mpa_request_sent status 0 x -> y\n' \
	"$ep" "$ep" "$ep" >"$W/seen_rev"
expect pass "perf retry: refused before MPA, trace proves it (perftest's race)" \
	perf_retry_reason kiwi0 "$W/rej" "$W/empty" "$W/unseen" 1 1
expect pass "perf retry: refused before MPA, its event traced before the connect's" \
	perf_retry_reason kiwi0 "$W/rej" "$W/empty" "$W/unseen_rev" 1 1
expect fail "perf retry: refused after kiwi sent its MPA request is not retried" \
	perf_retry_reason kiwi0 "$W/rej" "$W/empty" "$W/seen" 1 1
expect fail "perf retry: refused after MPA, events in any order, is not retried" \
	perf_retry_reason kiwi0 "$W/rej" "$W/empty" "$W/seen_rev" 1 1
expect fail "perf retry: refused with no kiwi trace (non-kiwi client) is not retried" \
	perf_retry_reason siw1 "$W/rej" "$W/empty" "$W/unseen" 1 1
expect fail "perf retry: a reset (-104) is not retried" \
	perf_retry_reason kiwi0 "$W/reset" "$W/empty" "$W/unseen" 1 1
echo "Correlation coefficient r^2: 0.52 < 0.9" >"$W/calib"
{ cat "$W/calib"; echo " Failed to complete run"; } >"$W/calibfail"
expect pass "perf retry: calibration miss in an otherwise complete run" \
	perf_retry_reason kiwi0 "$W/calib" "$W/empty" "$W/empty" 0 0
expect fail "perf retry: calibration miss with a failed client is not retried" \
	perf_retry_reason kiwi0 "$W/calib" "$W/empty" "$W/empty" 1 0
expect fail "perf retry: calibration miss with a failed server is not retried" \
	perf_retry_reason kiwi0 "$W/calib" "$W/empty" "$W/empty" 0 1
expect fail "perf retry: calibration miss with another error is not retried" \
	perf_retry_reason kiwi0 "$W/calibfail" "$W/empty" "$W/empty" 0 0
expect fail "perf retry: a plain failure is not retried" \
	perf_retry_reason kiwi0 "$W/empty" "$W/empty" "$W/empty" 1 0

# ---- background perftest attempts repeated only on evidence (bg_retry) --
# An attempt as datapath.sh's counters_auto fails in perftest's connect
# race (CI, k612): the client refused before MPA, its trace to prove it.
att_race() {
	ATT=$((ATT + 1))
	cp "$W/rej" "$TMPD/cli"; : >"$TMPD/srv"; cp "$W/unseen" "$TMPD/perf.trace"
	PERF_RC=1 PERF_SRC=124
	echo "not ok attempt $ATT"
	return 1
}
# The same failure, but kiwi had sent its MPA request: kiwi's fault.
att_seen() { att_race; cp "$W/seen" "$TMPD/perf.trace"; return 1; }
att_ok() { ATT=$((ATT + 1)); echo "ok attempt $ATT"; }
att_race_once() { if [ "$ATT" -eq 0 ]; then att_race; else att_ok; fi; }
# A calibration miss, both ends exit 0, but the client reported its
# figures: the attempt failed for another reason (a k612 run here: the
# QPs' attributes not seen in time), never excused.
att_calib() {
	ATT=$((ATT + 1))
	{ cat "$W/calib"; echo "$BW_OK"; } >"$TMPD/cli"; : >"$TMPD/srv"
	: >"$TMPD/perf.trace"
	PERF_RC=0 PERF_SRC=0
	echo "not ok attempt $ATT"
	return 1
}
att_calib_norow() { att_calib; grep -v "$BW_OK" "$W/calib" >"$TMPD/cli"; return 1; }
# bg_case ATTEMPT RETRIES VERDICT: bg_retry ATTEMPT printed RETRIES
# "# RETRY" lines and ended with VERDICT ("ok" or "not ok").
bg_case() {
	local out
	ATT=0 T=0 NFAIL=0
	out=$(bg_retry "case" "$1"; echo "attempts $ATT")
	[ "$(grep -c '^# RETRY case -- ' <<<"$out")" -eq "$2" ] &&
		grep -q "^$3 1 attempt" <<<"$out" &&
		grep -q "^attempts $(($2 + 1))\$" <<<"$out"
}
expect pass "bg_retry: perftest's race, then a good run: one RETRY, ok" bg_case att_race_once 1 ok
expect pass "bg_retry: perftest's race three times: two RETRYs, not ok" bg_case att_race 2 "not ok"
expect fail "bg_retry: perftest's race three times is not an ok" bg_case att_race 2 ok
expect pass "bg_retry: refused after kiwi's MPA request: not repeated, not ok" bg_case att_seen 0 "not ok"
expect fail "bg_retry: refused after kiwi's MPA request is never repeated" bg_case att_seen 1 "not ok"
expect pass "bg_retry: calibration miss in a run that reported figures: not repeated" bg_case att_calib 0 "not ok"
expect fail "bg_retry: calibration miss in a run that reported figures is never repeated" bg_case att_calib 2 "not ok"
expect pass "bg_retry: calibration miss in a complete run with no figures: repeated" bg_case att_calib_norow 2 "not ok"

# ---- TERMINATE checks scoped to the case (klog_mark, term_found) -------
dmesg() { cat "$W/dmesg"; }
what="op 12 layer 1 type 2 code 0x02"
echo "[ 10.0] kiwi1: QP 3: terminating stream: $what (ctrl 410c len 40)" >"$W/dmesg"
klog_mark
echo "[ 11.0] kiwi1: QP 7: terminating stream: op 12 layer 1 type 2 code 0x02 (ctrl 410c len 40)" >>"$W/dmesg"
echo "kiwi_terminate: kiwi1 qp 7 TERMINATE sent: layer 1 type 2 code 0x02" >"$TR/trace"
klog_since "$W/klog" "$W/ktrace"
expect pass "term_found: this case's QP logged and sent the TERMINATE" \
	term_found "$what" "$W/klog" "$W/ktrace"
: >"$W/dmesg.new"
echo "[ 10.0] kiwi1: QP 3: terminating stream: $what (ctrl 410c len 40)" >"$W/dmesg"
klog_mark
klog_since "$W/klog" "$W/ktrace"
expect fail "term_found: a line from before the case's mark does not count" \
	term_found "$what" "$W/klog" "$W/ktrace"
echo "[ 11.0] kiwi1: QP 7: terminating stream: $what (ctrl 410c len 40)" >>"$W/dmesg"
echo "kiwi_terminate: kiwi1 qp 8 TERMINATE sent: layer 1 type 2 code 0x02" >"$TR/trace"
klog_since "$W/klog" "$W/ktrace"
expect fail "term_found: another QP's TERMINATE does not count" \
	term_found "$what" "$W/klog" "$W/ktrace"
echo "kiwi_terminate: kiwi1 qp 7 TERMINATE sent: layer 1 type 2 code 0x01" >"$TR/trace"
klog_since "$W/klog" "$W/ktrace"
expect fail "term_found: a TERMINATE with another code does not count" \
	term_found "$what" "$W/klog" "$W/ktrace"
unset -f dmesg

# ---- the closed-port refusal (refused_verdict) -------------------------
echo "cma event RDMA_CM_EVENT_REJECTED, error -111" >"$W/refused"
echo "cma event RDMA_CM_EVENT_UNREACHABLE, error -110" >"$W/unreach"
expect pass "refused: a quick REJECTED" refused_verdict 255 1 "$W/refused"
expect fail "refused: a 60 s timeout is no refusal" refused_verdict 124 60 "$W/empty"
expect fail "refused: a crash (SIGSEGV) is no refusal" refused_verdict 139 1 "$W/refused"
expect fail "refused: a slow refusal" refused_verdict 255 40 "$W/refused"
expect fail "refused: UNREACHABLE is no refusal" refused_verdict 255 1 "$W/unreach"
expect fail "refused: a connect that works" refused_verdict 0 1 "$W/empty"

# ---- the rping -V across a network change (faults.sh) ------------------
echo "data mismatch!" >"$W/mismatch"
expect pass "during: MTU change, both sides pass" \
	rping_during_verdict keep 0 0 "$W/empty" "$W/empty"
expect fail "during: MTU change, the rping fails" \
	rping_during_verdict keep 255 0 "$W/empty" "$W/empty"
expect pass "during: link bounce, a clean failure" \
	rping_during_verdict may_break 255 255 "$W/empty" "$W/empty"
expect fail "during: link bounce, a data mismatch" \
	rping_during_verdict may_break 255 0 "$W/mismatch" "$W/empty"
expect fail "during: link bounce, rping crashed (SIGSEGV)" \
	rping_during_verdict may_break 139 0 "$W/empty" "$W/empty"
expect pass "during: link bounce, the server waits out its timeout" \
	rping_during_verdict may_break 255 124 "$W/empty" "$W/empty"
expect fail "during: MTU change, the server times out" \
	rping_during_verdict keep 0 124 "$W/empty" "$W/empty"
expect fail "during: MTU change, a mismatch even with exit 0" \
	rping_during_verdict keep 0 0 "$W/mismatch" "$W/empty"

# ---- pyverbs runs judged whole (tap_embed_verdict) ---------------------
printf 'TAP version 13\nok 1 a\nok 2 b # SKIP no mcast\n1..2\n' >"$W/tap_ok"
printf 'TAP version 13\nok 1 a # SKIP x\nok 2 b # SKIP y\n1..2\n' >"$W/tap_allskip"
printf 'TAP version 13\nTraceback (most recent call last):\nImportError: x\n' >"$W/tap_crash"
printf 'TAP version 13\nok 1 a\n1..4\n' >"$W/tap_short"
expect pass "pyverbs: a whole run" tap_embed_verdict 0 "$W/tap_ok"
expect fail "pyverbs: every test skipped" tap_embed_verdict 0 "$W/tap_allskip"
expect fail "pyverbs: crashed before the first test" tap_embed_verdict 1 "$W/tap_crash"
expect fail "pyverbs: fewer results than planned" tap_embed_verdict 0 "$W/tap_short"
expect fail "pyverbs: non-zero exit" tap_embed_verdict 1 "$W/tap_ok"
if command -v python3 >/dev/null; then
	# pyverbs_tap.py's own verdict: a suite whose every test skips.
	mkdir -p "$W/suite"
	cat >"$W/suite/args_parser.py" <<'EOF'
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--dev')
EOF
	cat >"$W/suite/base.py" <<'EOF'
class RDMATestCase:
    def _get_ip_mac(self, *a):
        pass
EOF
	cat >"$W/suite/test_x.py" <<'EOF'
import unittest
class T(unittest.TestCase):
    def test_a(self):
        self.skipTest('no net interface')
EOF
	expect fail "pyverbs_tap.py: every test skipped -> exit 1" \
		python3 "$ROOT/selftests/guest/pyverbs_tap.py" --dev x --suite "$W/suite" test_x
	sed -i 's/self.skipTest.*/pass/' "$W/suite/test_x.py"
	expect pass "pyverbs_tap.py: a test that ran -> exit 0" \
		python3 "$ROOT/selftests/guest/pyverbs_tap.py" --dev x --suite "$W/suite" test_x
fi

# ---- qperf's figures (apps.sh qperf_verdict) ---------------------------
printf 'rc_bw:\n    bw  =  1.2 GB/sec\n' >"$W/q_ok"
printf 'rc_bw:\n    bw  =  0 bytes/sec\n' >"$W/q_zero"
printf 'rc_bw:\n    loc_send_errors  =  3\n    bw  =  1.2 GB/sec\n' >"$W/q_err"
printf 'rc_bw:\nfailed to connect\n' >"$W/q_none"
expect pass "qperf: a figure above 0" qperf_verdict "$W/q_ok"
expect fail "qperf: 0 bytes/sec" qperf_verdict "$W/q_zero"
expect fail "qperf: completion errors counted" qperf_verdict "$W/q_err"
expect fail "qperf: no figure" qperf_verdict "$W/q_none"

# ---- interop: the CRC that was negotiated (mpa_crc_test) ---------------
# rdma's view of the QP is made up; the namespaces and rping are stubbed.
crc_case() {	# crc_case WANT SHOWN: mpa_crc_test's verdict when rdma shows SHOWN
	(
		A() { :; }; B() { :; }; wait_port() { :; }; kill_tree() { :; }
		rdma() { echo "link kiwi0/1 lqpn 3 type RC state RTS drv_mpa_crc $SHOWN drv_large_fpdu 0"; }
		SHOWN=$2 T=0 NFAIL=0
		mpa_crc_test "interop" 10.93.0.2 kiwi0 "$1" >/dev/null
		[ "$NFAIL" -eq 0 ]
	)
}
expect pass "interop crc: CRC requested and negotiated" crc_case 1 1
expect fail "interop crc: a crc round that ran without CRC" crc_case 1 0
expect fail "interop nocrc: a nocrc round that ran with CRC" crc_case 0 1

# ---- provider device tests run where a device exists -------------------
eval "$(sed -n '/^gtest_tap() {/,/^}/p' "$ROOT/selftests/guest/suite.sh")"
cat >"$W/fake_gtest" <<'EOF'
#!/bin/sh
echo "[ RUN      ] Device.BoundToKiwiProvider"
echo "[       OK ] Device.BoundToKiwiProvider (3 ms)"
echo "[ RUN      ] Device.SrqLifecycle"
echo "[  SKIPPED ] Device.SrqLifecycle (0 ms)"
echo "[  SKIPPED ] Device.SrqLifecycle"
EOF
chmod +x "$W/fake_gtest"
gtest_tap "$W/fake_gtest" >"$W/gt" 2>&1
expect pass "gtest_tap: a passing case is ok" grep -qx 'ok 1 Device.BoundToKiwiProvider' "$W/gt"
expect pass "gtest_tap: a skipped device test fails in the guest" \
	grep -q '^not ok 2 Device.SrqLifecycle' "$W/gt"
expect pass "gtest_tap: the summary's repeat is not counted twice" grep -qx '1..2' "$W/gt"
expect fail "ctest: provider device tests not registered on the host (no device)" \
	grep -q 'gtest_discover_tests(kiwi_provider_device_tests)' "$ROOT/provider/tests/CMakeLists.txt"
if [ -f "$BUILD/CTestTestfile.cmake" ]; then
	expect fail "ctest -N: no Device.* case" \
		sh -c "ctest --test-dir '$BUILD' -N | grep -q 'Device\\.'"
fi

# ---- the summary and CI's reading of it --------------------------------
printf 'PASS\ta\t\nSKIP\tb\tno device\nTODO\tc\tknown bug\nFAIL\td\t\nHARNESS\tguest.boot_1\t\nRETRY\tdatapath.x\tperftest race\nSKIP\tphase.fuzz\tleft out by KIWI_CHECK_SKIP\n' >"$W/results"
"$ROOT/selftests/summary.sh" "$W/results" >"$W/sum" 2>&1
last=$(tail -n 1 "$W/sum")
before=$(tail -n 2 "$W/sum" | head -n 1)
expect pass "summary: passed counts PASS only, skips apart ($last)" \
	test "$last" = "1 passed, 1 failed, 2 skipped"
expect pass "summary: known bugs, harness faults, retries, left-out phases named" \
	test "$before" = "1 known bugs, 1 harness faults, 1 retries; phases left out: fuzz"
printf 'PASS\ta\t\nSKIP\tb\t\n' >"$W/results_ok"
expect pass "summary: exit 0 without failures" "$ROOT/selftests/summary.sh" "$W/results_ok"
expect fail "summary: exit 1 with a failure" "$ROOT/selftests/summary.sh" "$W/results"
eval "$(grep -E '^(SUMMARY_RE|COUNTS_RE)=' "$ROOT/.ci/run")"
matches() { [[ $1 =~ $2 ]]; }
expect pass ".ci/run: SUMMARY_RE takes the last line" matches "$last" "$SUMMARY_RE"
expect pass ".ci/run: COUNTS_RE takes the line before" matches "$before" "$COUNTS_RE"
expect fail ".ci/run: the old 'N passed, N failed' (skips in passed) is no summary" \
	matches "3 passed, 1 failed" "$SUMMARY_RE"
expect pass "check: a RETRY line in guest TAP is recorded" \
	grep -q '"# RETRY "\*" -- "\*)' "$ROOT/selftests/check.sh"

echo "1..$N"
rm -rf "$TMPD"
[ "$BAD" -eq 0 ]
