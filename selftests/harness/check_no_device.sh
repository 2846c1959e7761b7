#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A verbs test program pointed at a device that does not exist must fail
# every test it runs (a missing prerequisite is never a pass or a skip).
set -u
prog=${1:?usage: check_no_device.sh PATH/TO/verbs_test}
n=$("$prog" -l | wc -l)
[ "$n" -gt 0 ] || { echo "$prog lists no tests"; exit 1; }
out=$(KIWI_DEV=kiwi_no_such_dev KT_TIMEOUT=20 "$prog" 2>&1); rc=$?
fail=0
[ $rc -ne 0 ] || { echo "exit status 0 without a device"; fail=1; }
notok=$(grep -cE '^not ok [0-9]+ ' <<<"$out")
ok=$(grep -cE '^ok [0-9]+ ' <<<"$out")
[ "$notok" -eq "$n" ] || { echo "expected $n failures, got $notok"; fail=1; }
[ "$ok" -eq 0 ] || { echo "$ok tests passed or skipped without a device:"; grep -E '^ok ' <<<"$out"; fail=1; }
grep -qE 'device kiwi_no_such_dev not found|ibv_get_device_list: |cannot count ' <<<"$out" || { echo "no 'device not found' diagnostic"; fail=1; }
[ $fail -eq 0 ] && echo "$(basename "$prog"): all $n tests fail without a device, as they must"
exit $fail
