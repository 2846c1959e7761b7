#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""bench/report.py -- the report half of `make bench` (scripts/bench).

    bench/report.py RAW OUTDIR

RAW is the collected protocol of scripts/bench-guest (lines "meta|K|V",
"run|MTU|REP|CELL|STACK|STATUS|VALUE|UNIT|SECONDS|NOTE",
"qpmem|STACK|qpmem key=value ..."), plus scripts/bench's own meta lines.
Prints the median tables with the ratios kiwi/siw and kiwi/TCP and a
PASS/FAIL line per target, and writes OUTDIR/results.{md,csv,json,png}.
Exit status: 0 if every target passed (or was skipped: its cell not run),
1 if one failed or had no data, 2 on errors.
"""

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

STACKS = ["kiwi", "siw", "rxe", "tcp"]
STACK_LABEL = {"kiwi": "kiwi", "siw": "siw", "rxe": "rxe", "tcp": "TCP"}

# cell -> (row label, kind, size tag for the TCP baseline)
CELLS = {
    "write_bw_4k": ("ib_write_bw 4 KiB", "bw", "4k"),
    "write_bw_64k": ("ib_write_bw 64 KiB", "bw", "64k"),
    "read_bw_4k": ("ib_read_bw 4 KiB", "bw", "4k"),
    "read_bw_64k": ("ib_read_bw 64 KiB", "bw", "64k"),
    "send_bw_4k": ("ib_send_bw 4 KiB", "bw", "4k"),
    "send_bw_64k": ("ib_send_bw 64 KiB", "bw", "64k"),
    "write_bw_64k_q16": ("ib_write_bw 64 KiB -q 16", "bw", "64k"),
    "send_lat_8": ("ib_send_lat 8 B", "lat", None),
    "write_lat_8": ("ib_write_lat 8 B", "lat", None),
    "read_lat_8": ("ib_read_lat 8 B", "lat", None),
}
# Where the TCP baseline of each size is measured.
TCP_CELL = {"4k": "write_bw_4k", "64k": "write_bw_64k"}

# The targets: (kind, cell, comparison stack, factor, text).
# kind "min": kiwi >= factor * other; "max": kiwi <= factor * other.
TARGETS = [
    ("min", "write_bw_64k", "siw", 1.5, "64 KiB write bw >= 1.5x siw"),
    ("min", "write_bw_64k", "tcp", 0.8, "64 KiB write bw >= 80% of TCP"),
    ("min", "read_bw_64k", "siw", 1.5, "64 KiB read bw >= 1.5x siw"),
    ("min", "read_bw_64k", "tcp", 0.8, "64 KiB read bw >= 80% of TCP"),
    ("min", "send_bw_64k", "siw", 1.5, "64 KiB send bw >= 1.5x siw"),
    ("min", "send_bw_64k", "tcp", 0.8, "64 KiB send bw >= 80% of TCP"),
    ("min", "write_bw_4k", "siw", 1.5, "4 KiB write bw >= 1.5x siw"),
    ("max", "send_lat_8", "siw", 0.8, "8 B send latency <= 0.8x siw"),
    ("max", "write_lat_8", "siw", 0.8, "8 B write latency <= 0.8x siw"),
    ("max", "read_lat_8", "siw", 0.8, "8 B read latency <= 0.8x siw"),
]


def fnum(v, nd=1):
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{nd}f}"


def parse(path):
    meta, runs, qpmem = {}, [], {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            parts = line.split("|")
            if parts[0] == "meta" and len(parts) >= 3:
                meta[parts[1]] = "|".join(parts[2:])
            elif parts[0] == "run" and len(parts) >= 10:
                mtu, rep, cell, stack, status, value, unit, secs = parts[1:9]
                note = "|".join(parts[9:])
                runs.append({
                    "mtu": int(mtu), "rep": int(rep), "cell": cell,
                    "stack": stack, "status": status,
                    "value": float(value) if value else None,
                    "unit": unit, "seconds": float(secs or 0), "note": note,
                })
            elif parts[0] == "qpmem" and len(parts) >= 3:
                stack = parts[1]
                kv = {}
                text = "|".join(parts[2:])
                words = text.split()
                for i, w in enumerate(words[1:], 1):
                    if "=" in w:
                        k, v = w.split("=", 1)
                        if k == "msg":	# the rest of the line
                            v = " ".join([v] + words[i + 1:])
                            kv[k] = v
                            break
                        kv[k] = v
                phase = kv.get("phase", "?")
                qpmem.setdefault(stack, {})[phase] = kv
    return meta, runs, qpmem


def summarize(runs):
    """(mtu, cell, stack) -> stats over the repetitions."""
    groups = {}
    for r in runs:
        groups.setdefault((r["mtu"], r["cell"], r["stack"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        vals = [r["value"] for r in rs if r["status"] in ("ok", "warn")
                and r["value"] is not None]
        errs = [r for r in rs if r["status"] == "err"]
        warns = [r for r in rs if r["status"] == "warn"]
        out[key] = {
            "median": statistics.median(vals) if vals else None,
            "min": min(vals) if vals else None,
            "max": max(vals) if vals else None,
            "values": vals,
            "n": len(rs),
            "n_err": len(errs),
            "n_warn": len(warns),
            "notes": sorted({r["note"] for r in rs if r["note"]}),
        }
    return out


def value_of(summ, mtu, cell, stack):
    """Median of STACK in CELL; TCP's comes from its size's TCP cell."""
    if stack == "tcp":
        size = CELLS.get(cell, (None, None, None))[2]
        if not size:
            return None, None
        cell = TCP_CELL[size]
    s = summ.get((mtu, cell, stack))
    return (s["median"] if s else None), s


def cell_text(s, kind):
    if s is None:
        return "—"
    txt = "err" if s["median"] is None else fnum(s["median"], 1)
    marks = []
    if s["n_err"] and s["median"] is not None:
        marks.append(f"{s['n_err']}/{s['n']} err")
    if s["n_warn"]:
        marks.append(f"{s['n_warn']} warn")
    if marks:
        txt += " (" + ", ".join(marks) + ")"
    return txt


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def rtext(r):
    return "—" if r is None else f"{r:.2f}x"


def table(rows, header):
    """Markdown table, padded so that it reads well in a terminal too."""
    w = [len(h) for h in header]
    for r in rows:
        for i, c in enumerate(r):
            w[i] = max(w[i], len(c))
    def line(cells):
        return "| " + " | ".join(
            c.ljust(w[i]) if i == 0 else c.rjust(w[i])
            for i, c in enumerate(cells)) + " |"
    sep = "|" + "|".join("-" * (w[0] + 2) if i == 0 else "-" * (w[i] + 1) + ":"
                         for i in range(len(w))) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def perf_tables(summ, mtus, cells):
    out = {}
    header = ["cell", "kiwi", "siw", "rxe", "TCP", "kiwi/siw", "kiwi/TCP"]
    for mtu in mtus:
        rows = []
        for cell in cells:
            label, kind, _ = CELLS[cell]
            unit = "MiB/s" if kind == "bw" else "µs"
            row = [f"{label} [{unit}]"]
            meds = {}
            for st in STACKS:
                med, s = value_of(summ, mtu, cell, st)
                meds[st] = med
                row.append(cell_text(s, kind) if not (st == "tcp" and kind == "lat") else "—")
            row.append(rtext(ratio(meds["kiwi"], meds["siw"])))
            row.append(rtext(ratio(meds["kiwi"], meds["tcp"])) if kind == "bw" else "—")
            rows.append(row)
        out[mtu] = table(rows, header)
    return out


def qpmem_rows(qpmem):
    rows, per_qp = [], {}
    for st in ["kiwi", "siw", "rxe"]:
        q = qpmem.get(st)
        if not q:
            continue
        qp, cq, lim = q.get("qp", {}), q.get("cq", {}), q.get("limits", {})
        err = q.get("error", {}).get("msg")
        kern = float(qp["kernel"]) if "kernel" in qp else None
        per_qp[st] = kern
        notes = []
        if "wr_refused" in qp:
            notes.append(f"refused {qp['wr_refused']} WRs ({qp.get('err', '')}), used {qp.get('wr')}")
        if "qp_refused_at" in qp:
            notes.append(f"QP {qp['qp_refused_at']} refused ({qp.get('err', '')})")
        if "cq_refused_at" in qp:
            notes.append(f"CQ {qp['cq_refused_at']} refused")
        if err:
            notes.append("error: " + err)
        dev = qp.get("dev") or cq.get("dev") or st
        rows.append([
            f"{st} ({dev})",
            qp.get("n", "—"),
            f"{qp.get('sq', '—')}/{qp.get('rq', '—')}",
            fnum(kern, 0) if kern is not None else "err",
            fnum(float(qp["slab"]), 0) if "slab" in qp else "—",
            fnum(float(qp["vmalloc"]), 0) if "vmalloc" in qp else "—",
            fnum(float(qp["payload"]), 0) if "payload" in qp else "—",
            fnum(float(cq["kernel"]), 0) if "kernel" in cq else "—",
            f"{lim.get('max_qp', '?')}/{lim.get('max_qp_wr', '?')}",
            "; ".join(notes),
        ])
    header = ["device", "QPs", "SQ/RQ WRs", "kernel B/QP", "slab B/QP",
              "vmalloc B/QP", "payload B/QP", "kernel B/CQ", "max_qp/max_qp_wr",
              "notes"]
    return (table(rows, header) if rows else "(no qpmem results)"), per_qp


def targets(summ, mtus, per_qp):
    res = []
    for mtu in mtus:
        for kind, cell, other, factor, text in TARGETS:
            k, ks = value_of(summ, mtu, cell, "kiwi")
            o, os_ = value_of(summ, mtu, cell, other)
            r = ratio(k, o)
            if ks is None or os_ is None:
                st, detail = "SKIP", "cell not run (KIWI_BENCH_CELLS/STACKS/QUICK)"
            elif r is None:
                st, detail = "ERR", "no value: every run failed"
            else:
                ok = r >= factor if kind == "min" else r <= factor
                st = "PASS" if ok else "FAIL"
                detail = f"kiwi/{STACK_LABEL[other]} = {r:.2f}"
            res.append({"mtu": mtu, "target": text, "status": st, "detail": detail,
                        "ratio": r})
    k, s = per_qp.get("kiwi"), per_qp.get("siw")
    if k is None or s is None:
        res.append({"mtu": None, "target": "kernel memory per QP <= siw",
                    "status": "ERR", "detail": "no data", "ratio": None})
    else:
        r = k / s if s else None
        res.append({"mtu": None, "target": "kernel memory per QP <= siw",
                    "status": "PASS" if k <= s else "FAIL",
                    "detail": f"kiwi {k:,.0f} B vs siw {s:,.0f} B = {r:.2f}x" if r else "",
                    "ratio": r})
    return res


def notes_section(runs):
    lines = []
    for r in runs:
        if r["status"] in ("err", "warn"):
            lines.append(f"- MTU {r['mtu']}, {r['cell']}, {r['stack']}, rep {r['rep']}: "
                         f"**{r['status']}** — {r['note'] or '(no detail)'}")
    return lines


def plot(summ, mtus, cells, per_qp, qpmem, outdir):
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not found (make deps installs gnuplot-nox); no plot"
    datadir = os.path.join(outdir, "plot")
    os.makedirs(datadir, exist_ok=True)
    script = []
    panels = []
    for mtu in mtus:
        for kind in ("bw", "lat"):
            kc = [c for c in cells if CELLS[c][1] == kind]
            if not kc:
                continue
            path = os.path.join(datadir, f"{kind}-{mtu}.dat")
            stacks = STACKS if kind == "bw" else STACKS[:3]
            with open(path, "w") as f:
                f.write("# cell " + " ".join(f"{s} {s}_min {s}_max" for s in stacks) + "\n")
                for c in kc:
                    label = CELLS[c][0].replace("ib_", "").replace(" ", "\\n", 1)
                    vals = []
                    for st in stacks:
                        med, s = value_of(summ, mtu, c, st)
                        if med is None:
                            vals += ["NaN"] * 3
                        else:
                            vals += [f"{med:.3f}", f"{s['min']:.3f}", f"{s['max']:.3f}"]
                    f.write(f"\"{label}\" " + " ".join(vals) + "\n")
            panels.append((mtu, kind, path, stacks))
    ncol = 2
    nrow = len(mtus) + (1 if per_qp else 0)
    png = os.path.join(outdir, "results.png")
    script += [
        f"set terminal pngcairo size 1400,{430 * nrow} font 'sans,10'",
        f"set output '{png}'",
        f"set multiplot layout {nrow},{ncol} title 'kiwi benchmark (medians, bars = min..max; QEMU TCG: compare ratios only)'",
        "set style data histogram",
        "set style histogram errorbars gap 2 lw 1",
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.9",
        "set key top left",
        "set termoption noenhanced",
        "set offsets 0, 0, graph 0.12, 0",
        "set grid ytics",
        "set yrange [0:*]",
        "set datafile missing 'NaN'",
        "set xtics nomirror",
    ]
    colors = {"kiwi": "#2e7d32", "siw": "#1565c0", "rxe": "#ef6c00", "tcp": "#757575"}
    for mtu, kind, path, stacks in panels:
        title = f"MTU {mtu}: " + ("bandwidth, MiB/s (higher is better)" if kind == "bw"
                                   else "latency, median µs (lower is better)")
        script.append(f"set title '{title}'")
        # Latencies of different stacks can differ by orders of magnitude.
        script.append("set logscale y; set yrange [*:*]" if kind == "lat"
                      else "unset logscale y; set yrange [0:*]")
        plots = []
        for i, st in enumerate(stacks):
            c = 2 + 3 * i
            xt = ":xtic(1)" if i == 0 else ""
            plots.append(f"'{path}' using {c}:{c + 1}:{c + 2}{xt} title '{STACK_LABEL[st]}' lc rgb '{colors[st]}'")
        script.append("plot " + ", ".join(plots))
    if per_qp:
        path = os.path.join(datadir, "mem.dat")
        with open(path, "w") as f:
            f.write("# device kernel_per_qp_kib kernel_per_cq_kib\n")
            for st in ["kiwi", "siw", "rxe"]:
                q = qpmem.get(st, {})
                qp = q.get("qp", {}).get("kernel")
                cq = q.get("cq", {}).get("kernel")
                f.write(f"{st} {float(qp) / 1024 if qp else 'NaN'} {float(cq) / 1024 if cq else 'NaN'}\n")
        script += [
            "unset logscale y; set yrange [0:*]",
            "set style histogram clustered gap 2",
            "set title 'kernel memory per object, KiB (slab + vmalloc; lower is better)'",
            f"plot '{path}' using 2:xtic(1) title 'per QP (1024+1024 WRs)' lc rgb '#6a1b9a', "
            f"'' using 3 title 'per CQ (2048 CQEs)' lc rgb '#ad1457'",
        ]
    script.append("unset multiplot")
    gpf = os.path.join(datadir, "results.gp")
    with open(gpf, "w") as f:
        f.write("\n".join(script) + "\n")
    p = subprocess.run([gp, gpf], capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(png):
        return "gnuplot failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    raw, outdir = sys.argv[1], sys.argv[2]
    meta, runs, qpmem = parse(raw)
    summ = summarize(runs)
    mtus = []
    for r in runs:
        if r["mtu"] not in mtus:
            mtus.append(r["mtu"])
    cells = [c for c in CELLS if any(r["cell"] == c for r in runs)]
    unknown = sorted({r["cell"] for r in runs if r["cell"] not in CELLS})

    ptab = perf_tables(summ, mtus, cells)
    mtab, per_qp = qpmem_rows(qpmem)
    tres = targets(summ, mtus, per_qp) if runs or qpmem else []
    notes = notes_section(runs)
    plot_err = plot(summ, mtus, cells, per_qp, qpmem, outdir) if runs else "no runs"

    # ---- results.csv: every run
    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mtu", "rep", "cell", "stack", "status", "value", "unit", "seconds", "note"])
        for r in runs:
            w.writerow([r["mtu"], r["rep"], r["cell"], r["stack"], r["status"],
                        "" if r["value"] is None else r["value"], r["unit"], r["seconds"], r["note"]])

    # ---- results.json
    js = {
        "meta": meta,
        "runs": runs,
        "summary": [
            {"mtu": k[0], "cell": k[1], "stack": k[2], **v} for k, v in sorted(summ.items())
        ],
        "qpmem": qpmem,
        "targets": tres,
    }
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(js, f, indent=1, ensure_ascii=False)

    # ---- text + markdown
    npass = sum(t["status"] == "PASS" for t in tres)
    nfail = sum(t["status"] == "FAIL" for t in tres)
    nerr = sum(t["status"] == "ERR" for t in tres)
    nskip = sum(t["status"] == "SKIP" for t in tres)
    nruns = len(runs)
    nrerr = sum(r["status"] == "err" for r in runs)
    nwarn = sum(r["status"] == "warn" for r in runs)
    md = []
    md.append("# kiwi benchmark results")
    md.append("")
    md.append(f"Command: `{meta.get('command', 'make bench')}`  ")
    md.append(f"Date: {meta.get('date', '?')}, tree {meta.get('git', '?')}, "
              f"wall time {meta.get('wall_time', '?')}  ")
    md.append(f"Guest: {meta.get('guest', '?')}, kernel {meta.get('guest_kernel', '?')}; "
              f"host {meta.get('host', '?')}  ")
    md.append(f"Host load before/after: {meta.get('load_before', '?')} / {meta.get('load_after', '?')}  ")
    md.append(f"Repetitions: {meta.get('reps', '?')} per cell (median shown), "
              f"iterations: {meta.get('iters', '?')}  ")
    md.append(f"kiwi: {meta.get('kiwi_module', '?')}, crc={meta.get('kiwi_crc', '?')}"
              f"{', params ' + meta['kiwi_params'] if meta.get('kiwi_params') else ''}; "
              f"{meta.get('siw', '?')}; perftest {meta.get('perftest', '?')}, "
              f"{meta.get('iperf3', '?')}  ")
    for mtu in mtus:
        am = meta.get(f"active_mtu_{mtu}")
        if am:
            md.append(f"RDMA active MTU at netdev MTU {mtu}: {am}  ")
    md.append(f"Runs: {nruns}, {nrerr} err, {nwarn} warn; guest dmesg: {meta.get('dmesg', '?')}")
    md.append("")
    md.append("Absolute numbers are from a QEMU TCG guest (~20x slower than "
              "hardware, shared host): compare the ratios, not the values.")
    md.append("")
    for mtu in mtus:
        md.append(f"## MTU {mtu}")
        md.append("")
        md.append(ptab[mtu])
        md.append("")
    md.append("TCP: one iperf3 stream over kiwi's veth pair with 4 KiB or 64 KiB "
              "writes; the same number appears in each bandwidth row of that size. "
              "rxe runs over its loopback path in the root namespace (reference only). "
              "\"n/m err\": n of m repetitions failed, the median is over the rest.")
    md.append("")
    md.append("## Kernel memory per QP")
    md.append("")
    md.append(mtab)
    md.append("")
    md.append("kernel = /proc/meminfo Slab (SReclaimable+SUnreclaim) + VmallocUsed: "
              "the growth while creating the QPs, divided by their number. Each QP "
              "has its own CQ; the CQs are created and measured first (kernel B/CQ). "
              "payload = the slab part counted as in-use objects x object_size "
              "(plus kmallocs too large for a cache), vmalloc not included: without "
              "slub_debug's red zones and owner tracking when the guest runs with "
              "them (see the Guest line above).")
    md.append("")
    md.append("## Targets (issue 4)")
    md.append("")
    trows = []
    for t in tres:
        trows.append([t["target"] + (f" (MTU {t['mtu']})" if t["mtu"] else ""),
                      t["status"], t["detail"]])
    md.append(table(trows, ["target", "result", "measured"]) if trows else "(none)")
    md.append("")
    md.append(f"{npass} PASS, {nfail} FAIL, {nerr} ERR, {nskip} SKIP")
    md.append("")
    if notes:
        md.append("## Failed and complaining runs")
        md.append("")
        md += notes
        md.append("")
    if unknown:
        md.append(f"Unknown cells (ignored): {', '.join(unknown)}")
        md.append("")
    if plot_err:
        md.append(f"Plot: {plot_err}")
    else:
        md.append("![plot](results.png)")
    md.append("")
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(md))

    # ---- terminal
    for mtu in mtus:
        print(f"== MTU {mtu}: medians of {meta.get('reps', '?')} repetitions "
              f"(bandwidth MiB/s, latency µs) ==")
        print(ptab[mtu])
        print()
    print("== kernel memory per QP ==")
    print(mtab)
    print()
    print("== targets ==")
    for t in tres:
        where = f" (MTU {t['mtu']})" if t["mtu"] else ""
        print(f"{t['status']:4}  {t['target']}{where}: {t['detail']}")
    print(f"targets: {npass} PASS, {nfail} FAIL, {nerr} ERR, {nskip} SKIP; "
          f"runs: {nruns}, {nrerr} err, {nwarn} warn")
    if notes:
        print()
        print("failed and complaining runs:")
        for n in notes:
            print("  " + n[2:].replace("**", ""))
    if plot_err:
        print(f"plot: {plot_err}")
    return 0 if tres and nfail == 0 and nerr == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a broken report must not look like a result
        import traceback
        traceback.print_exc()
        print(f"report.py: {e}", file=sys.stderr)
        sys.exit(2)
