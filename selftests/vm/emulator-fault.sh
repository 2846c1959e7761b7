#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/emulator-fault.sh LOG -- did the guest kernel whose console or
# dmesg is LOG trap on an int3 that its own text no longer holds?
#
# Exit 0, printing the evidence on one line, if LOG's first kernel report
# is an int3 trap (6.1: "int3: 0000 [#1]", 6.12: "Oops: int3: ...") whose
# code dump shows a byte other than 0xcc where the int3 was; exit 1
# otherwise (no such report, a report of another kind first, no code dump,
# or a real 0xcc there).
#
# Why this is the emulator's fault and never the kernel's (or kiwi's):
# an int3 trap leaves the instruction pointer one byte past the int3, and
# the oops's "Code:" line prints the text as it is at that moment, with the
# byte at the instruction pointer in <>.  Linux writes int3s only while it
# patches its text (static keys, static calls, tracepoints, ftrace); the
# patching finishes by restoring a real first byte and synchronising every
# CPU, and until then its int3 handler claims every trap at the patched
# address.  A trap nobody claimed at an address that holds no int3 means a
# CPU ran the int3 after the patch was finished: on hardware that cannot
# happen; under multi-threaded TCG a vCPU has run a stale translation of
# the patched code (selftests/vm/README.md, "Boot crashes and harness
# faults").  A wild jump by a buggy module into int3 padding, the one way
# kiwi could cause an int3 trap, shows 0xcc there and is not matched.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 LOG" >&2; exit 2; }
[ -r "$1" ] || { echo "$0: cannot read $1" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
trouble=$("$HERE/check-dmesg.sh" --regex)

# The first line of kernel trouble must be the int3 trap's header; then
# its RIP and Code lines, within the report (40 lines).
first=$(grep -n -m1 -E "$trouble" "$1" || true)
[ -n "$first" ] || exit 1
n=${first%%:*}
head=${first#*:}
[[ $head =~ (^|[^A-Za-z])int3:\ [0-9a-f]{4}\ \[\# ]] || exit 1
report=$(tail -n +"$n" "$1" | head -n 40)
rip=$(grep -m1 -oE 'RIP: 0010:[^ ]+' <<<"$report" || true)
code=$(grep -m1 -E 'Code: ' <<<"$report" || true)
[ -n "$rip" ] && [ -n "$code" ] || exit 1
# "Code: 48 89 e5 ... 66 <90> 48 ..." -- the byte before the <>.
before=$(sed -nE 's/.*Code: (.* )?([0-9a-f]{2}) <[0-9a-f]{2}>.*/\2/p' <<<"$code")
[ -n "$before" ] && [ "$before" != cc ] || exit 1
echo "int3 trap at ${rip#RIP: 0010:}, where the kernel text holds 0x$before, not an int3: a finished text patch run stale by the emulator"
