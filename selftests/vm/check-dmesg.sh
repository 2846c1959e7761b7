#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/check-dmesg.sh FILE -- fail (exit 1) if a kernel log shows
# kernel trouble: prints the first report in full (up to its "end trace" or
# 40 lines) and then every offending line.  Exit 0 if clean, 2 on usage
# error.  Used by selftests/vm/run.sh on the guest's dmesg; reusable on any
# dmesg/console log.
set -euo pipefail

# The one list of what counts as kernel trouble: extended regexps, matched
# case-sensitively.  Every kernel-log scan uses it: selftests/vm/run.sh on the
# guest's dmesg and console after every boot, and the per-case scans of
# the guest scripts (suite.sh, errors.sh, lib.sh's klog_* helpers read it
# with --regex).  Checked against clean boots of the Debian 6.1 and 6.12
# guests (which say "report a bug", "This is not a bug.", "SLAB_POISON",
# "rcu: ...", and, with an out-of-tree module, "taints kernel"/"tainting
# kernel": none of those match) and against the banners a sanitizer
# kernel prints at boot ("kmemleak: Kernel memory leak detector
# initialized", "KernelAddressSanitizer initialized": none match either).
# Add to it here, not in callers; selftests/verdicts.sh injects each
# pattern's sample line and fails if it is not caught.
PATTERNS=(
	'(^|[^A-Za-z0-9_])BUG([^A-Za-z0-9_]|$)'	# BUG: ..., kernel BUG at, BUG kmalloc-64 (slub)
	'kernel BUG at'
	'WARNING:'				# WARN_ON & co.
	'Oops'
	'general protection fault'
	'Kernel panic'
	'Call Trace:'
	# die() headers, which 6.1 prints without "Oops:" (6.12 adds it)
	'invalid opcode'
	'divide error'
	'int3:'
	'stack segment'
	'double fault'
	# sanitizers (a debug kernel; Debian's has none of them)
	'UBSAN'
	'KASAN'
	'KFENCE'
	'KMSAN'
	'possible circular locking'
	'possible recursive locking'
	'inconsistent lock state'
	'suspicious RCU usage'
	'sleeping function called from invalid context'
	'kmemleak: [0-9]+ new suspected memory leak'
	'unreferenced object 0x'
	# slub_debug=FZPU reports
	'Redzone'
	'Poison overwritten'
	'Object padding'
	'INFO: Allocated in'
	'INFO: Freed in'
	'Freelist Pointer'
	'slab[-_]out[-_]of[-_]bounds'
	'Bad page (state|map)'
	# list debugging, refcounts, netdev references never dropped
	'list_(add|del) corruption'
	'refcount_t:'
	'unregister_netdevice: waiting for'
	# lockups and stalls (test guests boot with hung_task_timeout_secs=30)
	'soft lockup'
	'hard LOCKUP'
	'hung_task'
	'blocked for more than [0-9]+ seconds'
	'rcu_(sched|preempt) detected stalls'
	'rcu: INFO'
	# kiwi's own: its CRC32c self-check found the two codes differ
	'implementations disagree'
)

# --regex: print the list as one extended regexp (for callers that scan
# lines themselves) and stop.
if [ "${1:-}" = --regex ]; then
	(IFS='|'; echo "${PATTERNS[*]}")
	exit 0
fi

[ $# -eq 1 ] || { echo "usage: $0 DMESG-FILE" >&2; exit 2; }
[ -r "$1" ] || { echo "check-dmesg: cannot read $1" >&2; exit 2; }

re=$(IFS='|'; echo "${PATTERNS[*]}")
# A user process's fault ("traps: prog[pid] general protection fault ip:..
# in libfoo.so") is that process's problem, reported by its exit status;
# the kernel's own faults carry no "traps: comm[pid]" prefix.
user='(\[[ 0-9.]+\] )?traps: [^ ]+\[[0-9]+\] '
# The boot's echo of the kernel command line (which names
# hung_task_timeout_secs) is no report either.
cmdline='(\[[ 0-9.]+\] )?(Kernel )?[Cc]ommand line: '
hits=$(grep -nE -- "$re" "$1" | grep -vE -- "^[0-9]+:($user|$cmdline)" || true)
[ -n "$hits" ] || exit 0

first=${hits%%:*}
# Start the excerpt at the "cut here" line of a WARN/BUG report, if any.
[ "$first" -gt 1 ] && sed -n "$((first - 1))p" "$1" | grep -q 'cut here' && first=$((first - 1))
echo "check-dmesg: kernel trouble in $1:"
awk -v from="$first" 'NR >= from { print; if (/---\[ end trace/ || NR >= from + 40) exit }' "$1"
n=$(printf '%s\n' "$hits" | wc -l)
echo "check-dmesg: $n offending line(s):"
printf '%s\n' "$hits" | head -n 50
[ "$n" -le 50 ] || echo "check-dmesg: ... $((n - 50)) more"
exit 1
