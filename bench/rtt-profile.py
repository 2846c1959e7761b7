#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# rtt-profile.py ROUNDS TRACE... -- the tables of bench/rtt-profile.sh:
# reads ftrace function_graph output (funcgraph-tail and funcgraph-cpu
# on, funcgraph-proc off), files named STACK.DEPTH.trace.  Depth 1: each
# traced entry point's duration (its callees included).  Depth 2: the
# entry points' direct callees, attributed to the caller open on the
# same CPU.  Times per round trip divide by ROUNDS, the ib_write_lat
# iterations (perftest's few warm-up exchanges are in the trace too).
import os
import re
import statistics
import sys

LINE = re.compile(r'^\s*(\d+)\)\s*[-+!#*@$]?\s*(?:([\d.]+) us)?\s*\|(\s*)(.*)$')
LEAF = re.compile(r'^([\w.]+)\(\);')
OPEN = re.compile(r'^([\w.]+)\(\) \{')
CLOSE = re.compile(r'^\} /\* ([\w.]+) \*/')


def parse(path):
    """Yields (depth, caller or None, function, duration us)."""
    open_by_cpu = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            cpu, dur, indent, text = m.groups()
            depth = max(len(indent) // 2 - 1, 0)
            stack = open_by_cpu.setdefault(cpu, [])
            if (m2 := OPEN.match(text)):
                stack.append(m2.group(1))
            elif (m2 := CLOSE.match(text)):
                name = m2.group(1)
                if stack and stack[-1] == name:
                    stack.pop()
                if dur:
                    yield 0, None, name, float(dur)
            elif (m2 := LEAF.match(text)) and dur:
                caller = stack[-1] if depth and stack else None
                yield depth, caller, m2.group(1), float(dur)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def table(title, rows, rounds):
    print(f'\n## {title}')
    print(f'{"function":44} {"calls/rt":>8} {"median":>8} {"mean":>8} '
          f'{"p99":>8} {"us/rt":>8}')
    for name, v in sorted(rows.items(), key=lambda kv: -sum(kv[1])):
        print(f'{name:44} {len(v) / rounds:8.2f} {statistics.median(v):8.2f} '
              f'{statistics.fmean(v):8.2f} {pct(v, 0.99):8.2f} '
              f'{sum(v) / rounds:8.2f}')


def main():
    rounds = int(sys.argv[1])
    for path in sys.argv[2:]:
        stack, depth = os.path.basename(path).split('.')[:2]
        entries, callees = {}, {}
        for d, caller, name, us in parse(path):
            if d == 0:
                entries.setdefault(name, []).append(us)
            elif caller:
                callees.setdefault(f'{caller} > {name}', []).append(us)
        if depth == '1':
            table(f'{stack}: entry points (us, callees included)', entries,
                  rounds)
        else:
            table(f'{stack}: their direct callees (us)', callees, rounds)
        if not entries:
            print(f'# {path}: no traced call found')
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
