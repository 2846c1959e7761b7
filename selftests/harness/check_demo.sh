#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Verifies the TAP output of harness/demo (kiwi_test.h self-test).
set -u
demo=${1:?usage: check_demo.sh PATH/TO/demo}
out=$("$demo" 2>&1); rc=$?
fail=0
want() { grep -qxE -- "$1" <<<"$out" || { echo "missing line: $1"; fail=1; }; }
nowant() { ! grep -qE -- "$1" <<<"$out" || { echo "unexpected line: $1"; fail=1; }; }

want 'TAP version 13'
want '1\.\.10'
want 'ok 1 pass_simple'
want 'ok 2 pass_signedness'
want 'not ok 3 fail_assert'
want '# fail_assert: .*demo\.c:[0-9]+: expected 2 == 3, got 2 vs 3'
nowant 'not reached'
want 'not ok 4 fail_expect_continues'
want '# reached after EXPECT'
want '# fail_expect_continues: .*expected -1 == 1u, got -1 vs 1'
want 'not ok 5 fail_errno'
want '# fail_errno: .*to fail with EINVAL, got errno 2 \(ENOENT\)'
want 'ok 6 pass_errno'
want 'ok 7 skip_reason # SKIP feature frobnication not built'
want 'not ok 8 fail_crash'
want '# fail_crash: killed by signal 11 .*'
want 'not ok 9 fail_timeout'
want '# fail_timeout: timed out after 1 s'
want 'not ok 10 fail_exit_code'
want '# fail_exit_code: unexpected exit status 7'
want '# Totals: pass:3 fail:6 skip:1'
[ $rc -ne 0 ] || { echo "exit status 0 despite failures"; fail=1; }

# -t selects, -l lists.
out=$("$demo" -t pass_simple -t skip_reason); rc=$?
want '1\.\.2'
want 'ok 1 pass_simple'
want 'ok 2 skip_reason # SKIP .*'
[ $rc -eq 0 ] || { echo "exit status $rc for passing selection"; fail=1; }
[ "$("$demo" -l | wc -l)" -eq 10 ] || { echo "-l does not list 10 tests"; fail=1; }
"$demo" -t no_such_test >/dev/null 2>&1 && { echo "-t no_such_test succeeded"; fail=1; }

[ $fail -eq 0 ] && echo "harness self-test: all checks passed"
exit $fail
