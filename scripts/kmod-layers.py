#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# scripts/kmod-layers.py -- which files of kmod/ call each other both ways,
# read from the built objects (not the text, so a call in a comment or
# behind a false #if does not count), and which files are too long.
#
#   scripts/kmod-layers.py [--check] [--list] [--walk FUNC] [KMOD_DIR]
#     (default KMOD_DIR: kmod/ of this tree; its *.o must be built:
#     make kmod)
#     --list   every file-to-file call edge with the functions it uses
#     --walk FUNC  the direct calls from FUNC, depth first (objdump -dr:
#              relocations and direct call/jmp targets; calls through
#              function pointers, such as the per-opcode table, are not
#              followed): how many functions and files the walk reaches,
#              its calls between files, and which of those go back up a
#              cycle (to a file that reaches the caller's file again;
#              main.c and trace.c, which every layer uses and whose calls
#              down are module set-up, do not count as reaching back)
#     --check  compare with Documentation/kiwi.rst: the two-way pairs its
#              list names (lines "- ``a.c`` <-> ``b.c``: why" under the
#              heading "Files that call each other") must be exactly the
#              pairs the objects show, and no kmod/*.c may be longer than
#              LIMIT lines; one line per finding, exit 1 if any
#
# An edge a -> b: a.o has an undefined symbol that b.o defines (a global
# function or object).  A two-way pair: a -> b and b -> a.  Prints the
# pairs, each with the names used each way, then a summary line
# "kmod-layers: N objects, N edges, N two-way pairs, longest FILE N lines".
import glob
import os
import re
import subprocess
import sys

LIMIT = 800
HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HERE)


def objects(kdir):
    objs = {}
    for o in sorted(glob.glob(os.path.join(kdir, '*.o'))):
        name = os.path.basename(o)[:-2]
        if name.endswith('.mod') or name == 'kiwi':
            continue		# the link result and modpost's part
        if not os.path.exists(os.path.join(kdir, name + '.c')):
            continue
        objs[name] = o
    return objs


def symbols(objs):
    defs, uses = {}, {}
    for name, o in objs.items():
        out = subprocess.run(['nm', o], capture_output=True, text=True,
                             check=True).stdout
        uses[name] = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDRB':
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == 'U':
                uses[name].add(f[1])
    edges = {}
    for name, used in uses.items():
        for s in used:
            d = defs.get(s)
            if d and d != name:
                edges.setdefault((name, d), set()).add(s)
    return edges


def walk(objs, root):
    """Depth-first over the direct calls from @root; prints each climb
    and a summary line."""
    fn_file, calls = {}, {}
    for name, o in objs.items():
        out = subprocess.run(['objdump', '-dr', '--no-show-raw-insn', o],
                             capture_output=True, text=True,
                             check=True).stdout
        cur = None
        for line in out.splitlines():
            m = re.match(r'^[0-9a-f]+ <([^>]+)>:', line)
            if m:
                cur = m.group(1)
                fn_file[cur] = name
                calls.setdefault(cur, [])
                continue
            m = re.search(r'R_X86_64_(?:PLT32|PC32)\s+([A-Za-z_][\w.]*)', line)
            if not m:
                m = re.search(r'\s(?:call|jmp)\s+[0-9a-f]+ <([A-Za-z_][\w.]*)>',
                              line)
            if m and cur:
                t = m.group(1).split('.')[0]
                if t != cur.split('.')[0] and t not in calls[cur]:
                    calls[cur].append(t)
    reach_from = {}
    for f, cs in calls.items():
        a = fn_file[f]
        if a in ('main', 'trace'):
            continue
        for g in cs:
            if g in fn_file and fn_file[g] != a:
                reach_from.setdefault(a, set()).add(fn_file[g])

    def reaches(a, b):
        todo, done = [a], set()
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in done:
                done.add(x)
                todo.extend(reach_from.get(x, ()))
        return False

    seen, order = set(), []
    todo = [root]
    while todo:
        f = todo.pop()
        if f in seen or f not in fn_file:
            continue
        seen.add(f)
        order.append(f)
        todo.extend(reversed(calls[f]))
    cross = climbs = 0
    for f in order:
        for g in calls[f]:
            if g in seen and fn_file[g] != fn_file[f]:
                cross += 1
                if reaches(fn_file[g], fn_file[f]):
                    climbs += 1
                    print(f'climb: {fn_file[f]}.c {f}() -> '
                          f'{fn_file[g]}.c {g}()')
    files = sorted({fn_file[f] for f in order})
    print(f'walk from {root}(): {len(order)} functions in {len(files)} '
          f'files ({" ".join(files)}), {cross} calls between files, '
          f'{climbs} of them back up a cycle')


def documented(rst):
    """The pairs kiwi.rst's list names, as sorted tuples."""
    pairs, inside = set(), False
    for line in open(rst, encoding='utf-8'):
        if line.startswith('Files that call each other'):
            inside = True
            continue
        if inside:
            m = re.match(r'^- ``(\w+)\.c`` <-> ``(\w+)\.c``', line)
            if m:
                pairs.add(tuple(sorted(m.groups())))
            elif re.match(r'^[A-Z=~^-]', line) and not line.startswith('- '):
                if pairs:
                    break
    return pairs


def main(argv):
    check = '--check' in argv
    lst = '--list' in argv
    root = None
    if '--walk' in argv:
        i = argv.index('--walk')
        if i + 1 >= len(argv):
            print('kmod-layers: --walk needs a function name')
            return 2
        root = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    args = [a for a in argv if not a.startswith('--')]
    kdir = args[0] if args else os.path.join(ROOT, 'kmod')
    objs = objects(kdir)
    if not objs:
        print(f'kmod-layers: no objects in {kdir} (make kmod)')
        return 1
    if root:
        walk(objs, root)
        return 0
    edges = symbols(objs)
    pairs = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    if lst:
        for (a, b), syms in sorted(edges.items()):
            print(f'{a} -> {b}: {" ".join(sorted(syms))}')
    for a, b in pairs:
        print(f'{a}.c <-> {b}.c: {a} uses {" ".join(sorted(edges[(a, b)]))}; '
              f'{b} uses {" ".join(sorted(edges[(b, a)]))}')
    sizes = {n: sum(1 for _ in open(os.path.join(kdir, n + '.c'),
                                    encoding='utf-8'))
             for n in objs}
    longest = max(sizes, key=sizes.get)
    found = 0
    if check:
        doc = documented(os.path.join(ROOT, 'Documentation', 'kiwi.rst'))
        if not doc:
            print('layers: Documentation/kiwi.rst lists no two-way pairs '
                  '("Files that call each other")')
            found += 1
        for a, b in sorted(set(pairs) - doc):
            print(f'layers: {a}.c and {b}.c call each other, '
                  'and kiwi.rst does not say so')
            found += 1
        for a, b in sorted(doc - set(pairs)):
            print(f'layers: kiwi.rst lists {a}.c <-> {b}.c, '
                  'which no longer call each other')
            found += 1
        for n, lines in sorted(sizes.items()):
            if lines > LIMIT:
                print(f'layers: kmod/{n}.c has {lines} lines '
                      f'(more than {LIMIT}: split it by job)')
                found += 1
    print(f'kmod-layers: {len(objs)} objects, {len(edges)} edges, '
          f'{len(pairs)} two-way pairs, longest {longest}.c '
          f'{sizes[longest]} lines')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
