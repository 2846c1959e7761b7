#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-params.py -- the module parameters are described once, in
# kiwi(4) (Documentation/kiwi.4, PARAMETERS); Documentation/kiwi.rst keeps
# a summary table.  This checks both against the code:
#
#   - every module_param*() in kmod/*.c has a MODULE_PARM_DESC and an entry
#     in kiwi.4 and in kiwi.rst's "Module parameters" table, and neither
#     document lists a parameter the code does not have;
#   - where MODULE_PARM_DESC states a default ("default X", X a number,
#     Y, N or auto), kiwi.4's entry "(X...)" gives the same.
#
#   scripts/check-params.py        prints one line per problem, then
#                               "check-params: PASS (N parameters)" or FAIL;
#                               exit status 0 or 1
# Run by selftests/check.sh's host phase (docs.params).
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
code = "".join(p.read_text() for p in sorted((ROOT / "kmod").glob("*.c")))
# module_param(name, ...), module_param_named(name, ...), module_param_cb(name, ...)
params = set(re.findall(r"\bmodule_param(?:_named|_cb)?\(\s*(\w+)\s*,", code))
descs = {}
for m in re.finditer(r'MODULE_PARM_DESC\(\s*(\w+)\s*,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)', code):
    descs[m.group(1)] = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2)))

man = (ROOT / "Documentation/kiwi.4").read_text()
sect = man.split("\n.SH PARAMETERS", 1)[1].split("\n.SH ", 1)[0]
man_params = {}
for m in re.finditer(r"^\.TP\n\.BR? (\w+)(?: \"\s*\(([^\")]*)\)?\"?)?", sect, re.M):
    man_params[m.group(1)] = (m.group(2) or "").strip()

rst = (ROOT / "Documentation/kiwi.rst").read_text()
rst_sect = rst.split("\nModule parameters\n=================\n", 1)[1]
rst_sect = rst_sect.split("\n\n", 3)
table = next((b for b in rst_sect if b.lstrip().startswith("====")), "")
rst_params = set(re.findall(r"^``(\w+)``", table, re.M))

problems = []
for name in sorted(params):
    if name not in descs:
        problems.append(f"{name}: no MODULE_PARM_DESC in kmod/")
    if name not in man_params:
        problems.append(f"{name}: not in kiwi.4 PARAMETERS")
    if name not in rst_params:
        problems.append(f"{name}: not in kiwi.rst's Module parameters table")
for name in sorted(set(man_params) - params):
    problems.append(f"{name}: in kiwi.4 PARAMETERS, but no such module parameter")
for name in sorted(rst_params - params):
    problems.append(f"{name}: in kiwi.rst's table, but no such module parameter")
for name in sorted(params & set(man_params)):
    m = re.search(r"\(default ([^),;]+)", descs.get(name, ""))
    if not m:
        continue
    code_default = m.group(1).split()[0]
    if not re.fullmatch(r"[0-9]+|[YN]|auto", code_default):
        continue    # words ("all three"): not comparable mechanically
    man_default = re.split(r"[,;\s]", man_params[name] or "?", 1)[0]
    if code_default != man_default:
        problems.append(f"{name}: default {code_default} in MODULE_PARM_DESC, {man_default} in kiwi.4")

for p in problems:
    print(f"check-params: {p}")
if problems:
    print(f"check-params: FAIL ({len(problems)} problems, {len(params)} parameters)")
    sys.exit(1)
print(f"check-params: PASS ({len(params)} parameters: code, MODULE_PARM_DESC, kiwi.4, kiwi.rst agree)")
