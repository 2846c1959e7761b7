#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""bench/report.py -- the report half of `make bench` (scripts/bench.sh).

    bench/report.py RAW OUTDIR

RAW is the collected protocol of scripts/bench-guest.sh (lines "meta|K|V",
"run|CONFIG|MTU|REP|CELL|STACK|STATUS|VALUE|UNIT|SECONDS|EXTRA|NOTE",
"allocs|CONFIG|MTU|CELL|STACK|KMALLOCS|CACHE_ALLOCS|MESSAGES",
"qpmem|STACK|qpmem key=value ..."), plus scripts/bench.sh's own meta lines.

For each configuration and MTU: a table of each stack's median per cell,
and the paired ratios -- repetition r of stack A against repetition r of
stack B, measured back to back -- as their median with a bootstrap 95%
interval.  Targets are judged on the interval: PASS if all of it clears
the target, FAIL if none of it does, INCONCLUSIVE otherwise.  Writes
OUTDIR/results.{md,csv,json}.  A configuration CONFIG_2host (make
bench-2host: the same cells between two guests) next to CONFIG (over veth
in one guest) also gets tables of the two side by side.
Exit status: 0 if every target passed (or had no cell to judge), 1 if one
failed, was inconclusive or had no data, 2 on errors.
"""

import csv
import json
import os
import random
import statistics
import sys

STACK_LABEL = {"kiwi": "kiwi", "siw": "siw", "rxe": "rxe", "tcp": "TCP",
               "k2s": "kiwi→siw", "s2k": "siw→kiwi", "kmk": "kiwi+markers"}
BOOT = 4000          # bootstrap resamples
MIN_PAIRS = 5        # fewer paired repetitions: no interval


def fnum(v, nd=1):
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{nd}f}"


def parse_extra(text):
    out = {}
    for kv in filter(None, text.split(",")):
        if "=" in kv:
            k, v = kv.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def parse(path):
    meta, runs, allocs, qpmem, connmem = {}, [], [], {}, {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            kind = parts[0]
            if kind == "meta" and len(parts) >= 3:
                meta[parts[1]] = "|".join(parts[2:])
            elif kind == "run" and len(parts) >= 12:
                (config, mtu, rep, cell, stack, status, value, unit, secs,
                 extra) = parts[1:11]
                runs.append({
                    "config": config, "mtu": int(mtu), "rep": int(rep),
                    "cell": cell, "stack": stack, "status": status,
                    "value": float(value) if value else None, "unit": unit,
                    "seconds": float(secs or 0), "extra": parse_extra(extra),
                    "note": "|".join(parts[11:]),
                })
            elif kind == "allocs" and len(parts) >= 8:
                config, mtu, cell, stack, a, own, n = parts[1:8]
                try:
                    allocs.append({"config": config, "mtu": int(mtu), "cell": cell,
                                   "stack": stack, "allocs": int(a), "own": int(own),
                                   "messages": int(n)})
                except ValueError:
                    pass
            elif kind == "connmem" and len(parts) >= 5:
                try:
                    c = {"n": int(parts[2]), "slab_kib": int(parts[3]),
                         "vmalloc_kib": int(parts[4])}
                except ValueError:
                    continue
                # after traffic and memory in use: absent in older logs,
                # empty where not measured
                for i, k in ((5, "slab2_kib"), (6, "vmalloc2_kib"), (7, "used_kib"),
                             (8, "used2_kib")):
                    try:
                        c[k] = int(parts[i])
                    except (IndexError, ValueError):
                        pass
                connmem[parts[1]] = c
            elif kind == "qpmem" and len(parts) >= 3:
                kv = {}
                words = "|".join(parts[2:]).split()
                for i, w in enumerate(words[1:], 1):
                    if "=" in w:
                        k, v = w.split("=", 1)
                        if k == "msg":
                            kv[k] = " ".join([v] + words[i + 1:])
                            break
                        kv[k] = v
                qpmem.setdefault(parts[1], {})[kv.get("phase", "?")] = kv
    return meta, runs, allocs, qpmem, connmem


def good(r):
    return r["status"] in ("ok", "warn") and r["value"] is not None and r["value"] > 0


def bootstrap_median(xs, rng):
    """Median of xs and a percentile-bootstrap 95% interval of it."""
    med = statistics.median(xs)
    if len(xs) < MIN_PAIRS:
        return med, None, None
    n = len(xs)
    meds = sorted(statistics.median(rng.choices(xs, k=n)) for _ in range(BOOT))
    return med, meds[int(0.025 * BOOT)], meds[int(0.975 * BOOT) - 1]


class Data:
    def __init__(self, runs):
        self.by = {}
        for r in runs:
            self.by.setdefault((r["config"], r["mtu"], r["cell"], r["stack"]), []).append(r)
        self.rng = random.Random(20261125)

    def runs(self, config, mtu, cell, stack):
        return self.by.get((config, mtu, cell, stack), [])

    def summary(self, config, mtu, cell, stack, key=None):
        rs = self.runs(config, mtu, cell, stack)
        if key is None:
            vals = [r["value"] for r in rs if good(r)]
        else:
            vals = [r["extra"][key] for r in rs if good(r) and key in r["extra"]]
        return {"n": len(rs), "ok": len([r for r in rs if good(r)]),
                "median": statistics.median(vals) if vals else None, "values": vals}

    def paired(self, config, mtu, cell, a, b, key=None):
        """Per-repetition ratios a/b (value, or extra KEY)."""
        def get(r):
            if not good(r):
                return None
            return r["value"] if key is None else r["extra"].get(key)
        va = {r["rep"]: get(r) for r in self.runs(config, mtu, cell, a)}
        vb = {r["rep"]: get(r) for r in self.runs(config, mtu, cell, b)}
        reps = sorted(set(va) | set(vb))
        xs = [va[k] / vb[k] for k in reps
              if va.get(k) and vb.get(k)]
        missing = len(reps) - len(xs)
        if not xs:
            return None
        med, lo, hi = bootstrap_median(xs, self.rng)
        return {"median": med, "lo": lo, "hi": hi, "n": len(xs), "missing": missing}


def rtext(p):
    if p is None:
        return "—"
    s = f"{p['median']:.2f}x"
    if p["lo"] is not None:
        s += f" [{p['lo']:.2f}, {p['hi']:.2f}]"
    else:
        s += f" (n={p['n']}, no interval)"
    if p["missing"]:
        s += f" ({p['missing']} unpaired)"
    return s


def table(rows, header):
    w = [len(h) for h in header]
    for r in rows:
        for i, c in enumerate(r):
            w[i] = max(w[i], len(c))

    def line(cells):
        return "| " + " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                                 for i, c in enumerate(cells)) + " |"
    sep = "|" + "|".join("-" * (w[0] + 2) if i == 0 else "-" * (w[i] + 1) + ":"
                         for i in range(len(w))) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def cell_label(cell):
    w = cell.split("_")
    if len(w) < 3:
        return cell
    size = w[2]
    if size.endswith("k"):
        size = size[:-1] + " KiB"
    elif size.endswith("m"):
        size = size[:-1] + " MiB"
    else:
        size += " B"
    s = f"ib_{w[0]}_{w[1]} {size}"
    for x in w[3:]:
        s += f" -q {x[1:]}" if x.startswith("q") else " -b" if x == "bi" else f" {x}"
    return s


def comparisons(stacks):
    """(numerator, denominator) pairs shown for a configuration."""
    out = []
    if "kiwi" in stacks:
        out += [("kiwi", s) for s in ("siw", "tcp", "rxe") if s in stacks]
    out += [(m, "siw") for m in ("k2s", "s2k") if m in stacks and "siw" in stacks]
    if "kmk" in stacks and "kiwi" in stacks:
        out.append(("kmk", "kiwi"))
    return out


def config_table(d, config, mtu, cells, stacks):
    comps = comparisons(stacks)
    header = ["cell"] + [STACK_LABEL[s] for s in stacks] + \
        [f"{STACK_LABEL[a]}/{STACK_LABEL[b]}" for a, b in comps]
    rows = []
    for cell in cells:
        kind = "bw" if "_bw_" in cell else "lat"
        row = [cell_label(cell) + (" [MiB/s]" if kind == "bw" else " [µs]")]
        present = False
        for s in stacks:
            sm = d.summary(config, mtu, cell, s)
            if sm["n"] == 0:
                row.append("—")
                continue
            present = True
            txt = fnum(sm["median"])
            if sm["ok"] < sm["n"]:
                txt += f" ({sm['n'] - sm['ok']}/{sm['n']} err)"
            row.append(txt)
        for a, b in comps:
            row.append(rtext(d.paired(config, mtu, cell, a, b)))
        if present:
            rows.append(row)
    return table(rows, header) if rows else None


def extras_table(d, config, mtu, cells, stacks):
    """Latency tails and kernel CPU per GiB, medians over repetitions."""
    rows = []
    for cell in cells:
        kind = "bw" if "_bw_" in cell else "lat"
        for s in stacks:
            if not d.runs(config, mtu, cell, s):
                continue
            if kind == "lat":
                vals = [fnum(d.summary(config, mtu, cell, s, k)["median"])
                        for k in ("tmin", "p99", "p999")]
                med = d.summary(config, mtu, cell, s)["median"]
                p999 = d.summary(config, mtu, cell, s, "p999")["median"]
                tail = f"{p999 / med:.1f}x" if med and p999 else "—"
                rows.append([cell_label(cell), STACK_LABEL[s], vals[0],
                             fnum(med), vals[1], vals[2], tail, "—"])
            else:
                c = d.summary(config, mtu, cell, s, "kcpu_s_per_gib")["median"]
                rows.append([cell_label(cell), STACK_LABEL[s], "—", "—", "—", "—", "—",
                             fnum(c, 2)])
    if not rows:
        return None
    return table(rows, ["cell", "stack", "t_min µs", "median µs", "p99 µs",
                        "p99.9 µs", "p99.9/median", "kernel CPU s/GiB"])


def nic_tables(d, configs, mtus, cells, meta):
    """Configurations X and X_2host side by side: (title, [(mtu, medians
    table, ratios table)]) for each such X."""
    out = []
    for pc in configs:
        base = pc[:-len("_2host")]
        if not pc.endswith("_2host") or base not in configs:
            continue
        stacks = []
        for c in (base, pc):
            for s in meta.get(f"stacks_{c}", "").split() or \
                    sorted({k[3] for k in d.by if k[0] == c}):
                if s not in stacks:
                    stacks.append(s)
        per_mtu = []
        for mtu in mtus:
            mrows, rrows = [], []
            for cell in cells:
                unit = " [MiB/s]" if "_bw_" in cell else " [µs]"
                for s in stacks:
                    sv, sp = d.summary(base, mtu, cell, s), d.summary(pc, mtu, cell, s)
                    if sv["n"] == 0 and sp["n"] == 0:
                        continue
                    cols = []
                    for sm in (sv, sp):
                        txt = fnum(sm["median"]) if sm["n"] else "—"
                        if sm["ok"] < sm["n"]:
                            txt += f" ({sm['n'] - sm['ok']}/{sm['n']} err)"
                        cols.append(txt)
                    ch = "—"
                    if sv["median"] and sp["median"]:
                        ch = f"{sp['median'] / sv['median']:.2f}x"
                    mrows.append([cell_label(cell) + unit, STACK_LABEL.get(s, s)] + cols + [ch])
                for a, b in comparisons(stacks):
                    pv, pp = d.paired(base, mtu, cell, a, b), d.paired(pc, mtu, cell, a, b)
                    if pv is None and pp is None:
                        continue
                    rrows.append([cell_label(cell), f"{STACK_LABEL[a]}/{STACK_LABEL[b]}",
                                  rtext(pv), rtext(pp)])
            if mrows:
                per_mtu.append((mtu, table(mrows, ["cell", "stack", "veth, one guest",
                                                   "two guests", "two guests / veth"]),
                                table(rrows, ["cell", "ratio", "veth, one guest", "two guests"])
                                if rrows else None))
        if per_mtu:
            out.append((f"{base} vs {pc}: one guest over veth vs two guests over a NIC", per_mtu))
    return out


# Targets of the issue: (name, configs, mtus or None, cell, a, b, key,
# kind, factor).  kind "min": a/b >= factor; "max": a/b <= factor.
def targets_for(configs, cells):
    t = []
    std = [c for c in ("standard", "standard_crc") if c in configs]
    for c in std:
        for cell in ("write_bw_64k", "read_bw_64k", "send_bw_64k"):
            t.append((f"{c}: {cell_label(cell)} >= 2x siw", c, None, cell,
                      "kiwi", "siw", None, "min", 2.0))
        t.append((f"{c}: {cell_label('write_bw_4k')} >= 1.5x siw", c, None, "write_bw_4k",
                  "kiwi", "siw", None, "min", 1.5))
    for c in [c for c in ("mixed", "mixed_crc") if c in configs]:
        for cell in cells:
            lat = "_lat_" in cell
            for m in ("k2s", "s2k"):
                t.append((f"{c}: {STACK_LABEL[m]} {cell_label(cell)} not slower than siw→siw",
                          c, None, cell, m, "siw", None, "max" if lat else "min", 1.0))
    if "standard" in configs:
        t.append(("standard: 64 KiB write >= 0.8x iperf3 -Z", "standard", [9000],
                  "write_bw_64k", "kiwi", "tcp", None, "min", 0.8))
        for cell in ("write_lat_8", "send_lat_8"):
            t.append((f"standard: {cell_label(cell)} <= 1.3x TCP half round trip (sockperf)",
                      "standard", None, cell, "kiwi", "tcp", None, "max", 1.3))
            t.append((f"standard: {cell_label(cell)} <= 1.0x siw", "standard", None, cell,
                      "kiwi", "siw", None, "max", 1.0))
        t.append(("standard: kernel CPU s/GiB at 64 KiB write <= 0.7x siw", "standard", None,
                  "write_bw_64k", "kiwi", "siw", "kcpu_s_per_gib", "max", 0.7))
    return t


def judge(p, kind, factor):
    if p is None:
        return "NO DATA"
    if p["lo"] is None:
        return "INCONCLUSIVE"
    if kind == "min":
        return "PASS" if p["lo"] >= factor else "FAIL" if p["hi"] < factor else "INCONCLUSIVE"
    return "PASS" if p["hi"] <= factor else "FAIL" if p["lo"] > factor else "INCONCLUSIVE"


def eval_targets(d, configs, mtus, cells):
    res = []
    for name, config, tmtus, cell, a, b, key, kind, factor in targets_for(configs, cells):
        if cell not in cells:
            continue
        for mtu in (tmtus or mtus):
            if mtu not in mtus:
                continue
            if not d.runs(config, mtu, cell, a) or not d.runs(config, mtu, cell, b):
                continue
            p = d.paired(config, mtu, cell, a, b, key)
            res.append({"target": name, "config": config, "mtu": mtu,
                        "status": judge(p, kind, factor), "measured": rtext(p),
                        "pairs": p})
    # Tail: kiwi's p99.9 <= 3x its median, every latency cell of "standard".
    for cell in [c for c in cells if c in ("write_lat_8", "send_lat_8")]:
        for mtu in mtus:
            rs = [r for r in d.runs("standard", mtu, cell, "kiwi") if good(r) and "p999" in r["extra"]]
            if not rs:
                continue
            xs = [r["extra"]["p999"] / r["value"] for r in rs]
            med, lo, hi = bootstrap_median(xs, d.rng)
            p = {"median": med, "lo": lo, "hi": hi, "n": len(xs), "missing": 0}
            res.append({"target": f"standard: kiwi {cell_label(cell)} p99.9 <= 3x median",
                        "config": "standard", "mtu": mtu, "status": judge(p, "max", 3.0),
                        "measured": rtext(p), "pairs": p})
    return res


def alloc_rows(allocs):
    """Slab allocations per message: (a(5N) - a(N)) / (5N - N) per group,
    in the whole guest and from the stack's own module."""
    groups = {}
    for a in allocs:
        groups.setdefault((a["config"], a["mtu"], a["cell"], a["stack"]), []).append(a)
    rows, per = [], {}
    for key, g in sorted(groups.items()):
        g = sorted(g, key=lambda x: x["messages"])
        dn = g[-1]["messages"] - g[0]["messages"]
        if len(g) < 2 or dn <= 0:
            continue
        slope = (g[-1]["allocs"] - g[0]["allocs"]) / dn
        own = (g[-1]["own"] - g[0]["own"]) / dn
        # Creating the QP and its CQ allocates from the module in every
        # run: a zero there means the call_site filter matched nothing.
        per[key] = own if g[0]["own"] > 0 else None
        rows.append([key[0], str(key[1]), cell_label(key[2]), STACK_LABEL.get(key[3], key[3]),
                     f"{g[0]['allocs']:,} / {g[-1]['allocs']:,}",
                     f"{g[0]['messages']:,} / {g[-1]['messages']:,}",
                     f"{slope:.2f}", f"{own:.3f}"])
    if not rows:
        return None, per
    return table(rows, ["config", "MTU", "cell", "stack", "allocs (N / 5N)", "messages",
                        "per message, whole guest", "per message, own module"]), per


def qpmem_table(qpmem):
    rows = []
    for st in ("kiwi", "siw", "rxe"):
        q = qpmem.get(st)
        if not q:
            continue
        qp, cq = q.get("qp", {}), q.get("cq", {})
        rows.append([st, qp.get("n", "—"), f"{qp.get('sq', '—')}/{qp.get('rq', '—')}",
                     fnum(float(qp["kernel"]), 0) if "kernel" in qp else "err",
                     fnum(float(cq["kernel"]), 0) if "kernel" in cq else "—",
                     q.get("error", {}).get("msg", "")])
    if not rows:
        return None
    return table(rows, ["device", "QPs", "SQ/RQ WRs", "kernel B/QP", "kernel B/CQ", "notes"])


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    raw, outdir = sys.argv[1], sys.argv[2]
    meta, runs, allocs, qpmem, connmem = parse(raw)
    d = Data(runs)
    configs = []
    for r in runs:
        if r["config"] not in configs:
            configs.append(r["config"])
    mtus = sorted({r["mtu"] for r in runs}, reverse=True)
    cells = []
    for r in runs:
        if r["cell"] not in cells and r["stack"] != "-":
            cells.append(r["cell"])
    tres = eval_targets(d, configs, mtus, cells)
    atab, aper = alloc_rows(allocs)
    if aper:
        for key, slope in aper.items():
            if key[3] == "kiwi" and key[0] in ("standard", "shipped"):
                if slope is None:
                    st, txt = "NO DATA", "the call_site filter counted nothing, not even set-up"
                else:
                    st, txt = ("PASS" if slope < 0.01 else "FAIL"), f"{slope:.3f} per message"
                tres.append({"target": f"{key[0]}: kiwi makes zero slab allocations per message, {cell_label(key[2])}",
                             "config": key[0], "mtu": key[1], "status": st,
                             "measured": txt, "pairs": None})
    qtab = qpmem_table(qpmem)

    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "mtu", "rep", "cell", "stack", "status", "value", "unit",
                    "seconds", "extra", "note"])
        for r in runs:
            w.writerow([r["config"], r["mtu"], r["rep"], r["cell"], r["stack"], r["status"],
                        "" if r["value"] is None else r["value"], r["unit"], r["seconds"],
                        ",".join(f"{k}={v:g}" for k, v in r["extra"].items()), r["note"]])
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump({"meta": meta, "runs": runs, "allocs": allocs, "qpmem": qpmem,
                   "connmem": connmem, "targets": tres}, f, indent=1, ensure_ascii=False)

    counts = {}
    for t in tres:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    nerr = sum(r["status"] == "err" for r in runs)
    md = ["# kiwi benchmark results", ""]
    md.append(f"Command: `{meta.get('command', 'make bench')}`  ")
    md.append(f"Date: {meta.get('date', '?')}, tree {meta.get('git', '?')}, "
              f"wall time {meta.get('wall_time', '?')}  ")
    md.append(f"Guest: {meta.get('guest', '?')}, kernel {meta.get('guest_kernel', '?')}, "
              f"CPU {meta.get('guest_cpu_model', '?')} (flags: {meta.get('guest_cpu_flags', '?')}), "
              f"clocksource {meta.get('clocksource', '?')}, crc32c driver "
              f"{meta.get('crc32c_driver', '?')}; host {meta.get('host', '?')}  ")
    if "pair" in meta:
        md.append(f"Two guests: {meta['pair']}; kernels {meta.get('pair_kernels', '?')}; "
                  f"{meta.get('pair_nic', '?')}; guest dmesg: {meta.get('pair_dmesg', '?')}; "
                  f"wall time {meta.get('pair_wall_time', '?')}; host load before/after "
                  f"{meta.get('pair_load_before', '?')} / {meta.get('pair_load_after', '?')}  ")
    md.append(f"Host load before/after: {meta.get('load_before', '?')} / {meta.get('load_after', '?')}  ")
    md.append(f"Repetitions: {meta.get('reps', '?')} per cell, stack order rotated per repetition; "
              f"bandwidth runs {meta.get('duration', '?')} s (perftest -D, iperf3 -t), "
              f"latency {meta.get('iters_lat', '?')} messages; {meta.get('pinning', '')}  ")
    md.append(f"kiwi {meta.get('kiwi_module', '?')}, parameters at load: {meta.get('kiwi_params', '?')}  ")
    md.append(f"{meta.get('siw', '?')}  ")
    md.append(f"perftest {meta.get('perftest', '?')}, {meta.get('iperf3', '?')}, "
              f"sockperf {meta.get('sockperf', '?')}; TCP window {meta.get('tcp_window', '?')}  ")
    md.append(f"Runs: {len(runs)}, {nerr} failed; guest dmesg: {meta.get('dmesg', '?')}")
    md.append("")
    md.append("Absolute numbers come from a QEMU TCG guest on a shared 2-core host: "
              "compare ratios within this run, not values across runs. Ratios are the "
              "median of per-repetition ratios (the two runs of a pair are back to back), "
              "with a bootstrap 95% interval in brackets.")
    md.append("")
    term = []
    for config in configs:
        stacks = meta.get(f"stacks_{config}", "").split() or \
            sorted({r["stack"] for r in runs if r["config"] == config})
        md.append(f"## {config}: {meta.get('config_' + config, '')}")
        md.append("")
        for mtu in mtus:
            t = config_table(d, config, mtu, cells, stacks)
            if not t:
                continue
            md += [f"### MTU {mtu}", "", t, ""]
            term += [f"== {config}, MTU {mtu} ==", t, ""]
            x = extras_table(d, config, mtu, cells, stacks)
            if x:
                md += [x, ""]
    for title, per_mtu in nic_tables(d, configs, mtus, cells, meta):
        md += [f"## {title}", "",
               "The same cells, settings and repetitions, in one invocation: both ends in one "
               "guest over veth (2 vCPUs), and a client guest and a server guest (1 vCPU each) "
               "joined by one virtual NIC. \"two guests / veth\": the ratio of the medians "
               "(above 1: more bandwidth, or more latency, between the guests). The paired "
               "ratios are each configuration's own (repetitions back to back), with their "
               "bootstrap 95% intervals.", ""]
        for mtu, mt, rt in per_mtu:
            md += [f"### MTU {mtu}", "", mt, ""]
            term += [f"== {title}, MTU {mtu} ==", mt, ""]
            if rt:
                md += [rt, ""]
                term += [rt, ""]
    if atab:
        md += ["## Slab allocations per message", "",
               "kmem:kmalloc + kmem:kmem_cache_alloc (perf stat -a) in a run of N and one "
               "of 5N messages; the difference per message leaves connection set-up and "
               "teardown out. \"Whole guest\" includes TCP's socket buffers and perftest's "
               "own system calls; \"own module\" counts only allocations called from the "
               "stack's module (kiwi, siw, rdma_rxe).", "", atab, ""]
        term += ["== slab allocations per message ==", atab, ""]
    if qtab:
        md += ["## Kernel memory per QP (not connected)", "", qtab, ""]
    if connmem:
        def per_pair(c, *keys):
            if not all(k in c for k in keys):
                return "—"
            return f"{sum(c[k] for k in keys) * 1024 / c['n']:,.0f}"

        def kib(c, k):
            return f"{c[k]:,}" if k in c else "—"
        crows = []
        for st, c in connmem.items():
            for phase, sfx in (("connected, no data yet", ""), ("after traffic", "2")):
                crows.append([STACK_LABEL.get(st, st), str(c["n"]), phase,
                              kib(c, f"slab{sfx}_kib"), kib(c, f"vmalloc{sfx}_kib"),
                              per_pair(c, f"slab{sfx}_kib", f"vmalloc{sfx}_kib"),
                              per_pair(c, f"used{sfx}_kib")])
        ctab = table(crows, ["stack", "QP pairs", "when", "slab KiB", "vmalloc KiB",
                             "slab+vmalloc B/pair", "in use B/pair"])
        md += ["## Kernel memory per connected QP pair", "",
               "build/selftests/manyqp connects N pairs (one PD, MR and CQ per process, "
               "2 send and 2 receive WRs per QP) and holds them before any data moves; then "
               "every pair exchanges a 256-byte SEND each way and both sides hold their "
               "connections open again (\"after traffic\").  Growth over the whole guest "
               "from before the connections, divided by N: both ends and their TCP sockets. "
               "\"In use\" is MemTotal - MemFree: it also counts pages allocated outside "
               "slab and vmalloc (a stack's transmit pages, TCP's page frags) and the two "
               "manyqp processes' own memory.  kiwi on the standard wire.", "", ctab, ""]
        term += ["== kernel memory per connected QP pair ==", ctab, ""]
    md += ["## Targets", ""]
    trows = [[t["target"] + f" (MTU {t['mtu']})", t["status"], t["measured"]] for t in tres]
    md.append(table(trows, ["target", "result", "measured"]) if trows else "(none judged)")
    md.append("")
    md.append(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no targets")
    md.append("")
    bad = [r for r in runs if r["status"] in ("err", "warn")]
    if bad:
        md += ["## Failed and complaining runs", ""]
        md += [f"- {r['config']}, MTU {r['mtu']}, {r['cell']}, {r['stack']}, rep {r['rep']}: "
               f"**{r['status']}** — {r['note'] or '(no detail)'}" for r in bad]
        md.append("")
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(md))

    print("\n".join(term))
    print("== targets ==")
    for t in tres:
        print(f"{t['status']:12} {t['target']} (MTU {t['mtu']}): {t['measured']}")
    print("targets: " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none judged")
          + f"; runs: {len(runs)}, {nerr} failed")
    return 0 if tres and set(counts) <= {"PASS"} else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a broken report must not look like a result
        import traceback
        traceback.print_exc()
        print(f"report.py: {e}", file=sys.stderr)
        sys.exit(2)
