"""benchmarks/bench_report.py - benchmarks/run's report: report.md,
results.csv and the charts."""

import argparse
import csv
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

import summary
from bench_common import *  # noqa: F401,F403
from bench_setup import *  # noqa: F401,F403
from bench_events import events_tables
from bench_binary import bolt_exactness, profile_targets, side_by_side


# ---------------------------------------------------------------- report

RATIO_OF = {c: c for c, _, _ in CG_COLUMNS}
RATIO_OF.update(size="size", compile_cpu="compile_cpu")


def ratios_of(ctx, wl, mode):
    """metric -> ratio to the mode's baseline (None when not measured)."""
    r = ctx.results.get((wl, mode.name), {})
    b = ctx.results.get((wl, mode.baseline), {})
    src = r if not mode.runner else {}
    out = {"wall_ratio": r.get("wall_ratio")}
    for m in RATIO_OF:
        out[m] = ratio(src.get(m), b.get(m)) if not mode.is_baseline else (1.0 if src.get(m) else None)
    if mode.is_baseline and ctx.ok(wl, mode.name):
        out["wall_ratio"] = 1.0
    return out


def fmt_ratio(x, digits=3):
    return "-" if x is None else ("%.*f" % (digits, x))


def status_text(ctx, wl, mode):
    if mode.name in ctx.na:
        return ctx.na[mode.name]
    s = ctx.status.get((wl, mode.name), "not run")
    return "same" if s == "ok" else s


def machine_description(ctx):
    def out(cmd):
        try:
            return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True).stdout.strip()
        except OSError as e:
            return str(e)
    parts = [
        ("date", out("date -u '+%Y-%m-%d %H:%M UTC'")),
        ("command", " ".join(shlex.quote(a) for a in sys.argv)),
        ("tally", ctx.tally_desc),
        ("kernel", out("uname -a")),
        ("lscpu", out("lscpu")),
        ("memory", out("free -m")),
        ("load average at start / end", "%s / %s" % (ctx.load_start, out("cat /proc/loadavg"))),
        ("load average when the wall-clock pairs began", getattr(ctx, "load_wall", "-")),
        ("gcc -v", out("gcc -v")),
        ("clang --version", out("clang --version")),
        ("valgrind --version", out("valgrind --version")),
        ("uftrace --version", out("uftrace --version")),
        ("sources", "\n".join(ctx.versions)),
    ]
    return "\n\n".join("## %s\n\n%s" % (k, v) for k, v in parts) + "\n"


def write_report(ctx, workloads, modes, results_dir):
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "machine.txt"), "w") as f:
        f.write(machine_description(ctx))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    hdr = ("| mode | wall ÷ base (median, min–max of pairs) | instructions | branches "
           "| mispredicts | D1 refs | D1 misses | I1 misses | LL misses | binary size "
           "| compile time | output |")
    sep = "|---|---|" + "---:|" * 9 + "---|"
    run_wall, run_cpu = ctx.timing.total()
    md = ["# Overhead comparison (benchmarks/run)", "",
          "- date: %s; %s run, %d wall-clock pairs per mode" % (
              time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ctx.start)), ctx.kind, ctx.args.pairs),
          "- machine: %d CPUs, %s; %s; load average at start %s, at end %s" % (
              os.cpu_count(), cpu, os.uname().release, ctx.load_start.split()[0],
              open("/proc/loadavg").read().split()[0]),
          "- compilers: %s; %s; all builds -O2" % (
              subprocess.check_output(["gcc", "--version"], text=True).splitlines()[0],
              (subprocess.check_output(["clang", "--version"], text=True).splitlines()[0]
               if shutil.which("clang") else "no clang")),
          "- tally: " + ctx.tally_desc,
          "- sources: " + (", ".join(ctx.versions) or "benchmarks/support only"),
          "- every column is a ratio to the uninstrumented build of the same compiler "
          "(gcc modes to `gcc`, clang modes to `clang`); the baseline rows give absolute values",
          "- run time until this report: wall %s, CPU %.0f s (by phase and kind of work: "
          "`timing.txt`)" % (fmt_time(run_wall), run_cpu),
          "- wall: paired runs on the wall input (valgrind and uftrace: on the reduced "
          "`slow` input, against the baseline on the same input); cachegrind columns: "
          "`valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes` on the `cg` input; "
          "binary size: text + data; compile time: CPU seconds of the compile and link commands",
          ""]
    csv_rows = []
    avg = {}
    for wl in workloads:
        sz = wl.sizes[ctx.kind]
        md += ["## %s" % wl.name, "",
               "wall: `%s`; slow tools: `%s`; cachegrind: `%s`" % (
                   wl.describe(sz["wall"]), wl.describe(sz["slow"]), wl.describe(sz["cg"])), "",
               hdr, sep]
        for mode in modes:
            r = ctx.results.get((wl.name, mode.name), {})
            q = ratios_of(ctx, wl.name, mode)
            st = status_text(ctx, wl.name, mode)
            ok = ctx.ok(wl.name, mode.name)
            if mode.is_baseline:
                wall = "%.3f s (1.000)" % r["wall_base_s"] if r.get("wall_base_s") else "-"
                cells = [("{:,}".format(r[c]) if r.get(c) is not None else "-") for c, _, _ in CG_COLUMNS]
                cells += ["%d KiB" % (r["size"] // 1024) if r.get("size") else "-",
                          "%.1f s" % r["compile_cpu"] if r.get("compile_cpu") is not None else "-"]
                st = "reference" if ok else st
            else:
                wall = "-"
                if q["wall_ratio"] is not None:
                    wall = "%.2f (%.2f–%.2f)" % (q["wall_ratio"], r["wall_min"], r["wall_max"])
                    if mode.runner:
                        wall += " slow input"
                cells = [fmt_ratio(q[c], 3) for c, _, _ in CG_COLUMNS]
                cells += [fmt_ratio(q["size"], 2), fmt_ratio(q["compile_cpu"], 2)]
                if mode.hot and r.get("hot_note"):
                    st += "; " + r["hot_note"]
                if ok:
                    for k, v in q.items():
                        if v is not None:
                            avg.setdefault(mode.name, {}).setdefault(k, []).append(v)
            md.append("| `%s` %s | %s | %s | %s |" % (mode.name, mode.label, wall, " | ".join(cells), st))
            row = {"workload": wl.name, "mode": mode.name, "baseline": mode.baseline,
                   "status": "reference" if (mode.is_baseline and ok) else st}
            for k in ("wall_ratio", "wall_min", "wall_max", "wall_s", "wall_base_s", "pairs", "wall_input"):
                row[k] = r.get(k)
            for c, _, _ in CG_COLUMNS:
                row[c] = r.get(c)
                row[c + "_ratio"] = q.get(c)
            row.update(size=r.get("size"), size_ratio=q.get("size"), file_size=r.get("file_size"),
                       compile_cpu_s=r.get("compile_cpu"), compile_ratio=q.get("compile_cpu"),
                       calls=r.get("calls"), counted_edges=r.get("edges"), executed_blocks=r.get("blocks"),
                       data_bytes=r.get("data_bytes"))
            csv_rows.append(row)
        md.append("")
    # Average row, like LOPI's Table 2: the arithmetic mean of the ratios
    # over the workloads where the mode ran and its output was right.
    md += ["## Average over the workloads", "",
           "Arithmetic mean of each ratio over the workloads where the mode ran with "
           "the right output (n: how many).", "",
           "| mode | n | wall | instructions | branches | mispredicts | D1 refs | D1 misses "
           "| I1 misses | LL misses | binary size | compile time |",
           "|---|---:|" + "---:|" * 10]
    for mode in modes:
        if mode.is_baseline or mode.name not in avg:
            continue
        a = avg[mode.name]
        n = max(len(v) for v in a.values())
        cells = [fmt_ratio(statistics.mean(a[k]), 3) if k in a else "-"
                 for k in ["wall_ratio"] + [c for c, _, _ in CG_COLUMNS] + ["size", "compile_cpu"]]
        md.append("| `%s` | %d | %s |" % (mode.name, n, " | ".join(cells)))
    md.append("")
    # Issue 3: block counters against gcov, same run.
    bw = [w for w in workloads if w.name in BLOCK_WORKLOADS]
    bm = [m for m in modes if m.name.startswith("tally-blocks") or m.name.startswith("gcov")]
    if bw and bm:
        md += ["## Block counters: tally next to gcov -fprofile-arcs", "",
               "Instructions (cachegrind Ir) and paired wall clock, both ÷ `gcc`.", "",
               "| mode | " + " | ".join("%s Ir | %s wall" % (w.name, w.name) for w in bw) + " |",
               "|---|" + "---:|---:|" * len(bw)]
        for m in bm:
            cells = []
            for w in bw:
                if m.name in ctx.na:
                    cells += ["n/a", "n/a"]
                    continue
                q = ratios_of(ctx, w.name, m)
                ok = ctx.ok(w.name, m.name)
                cells += [fmt_ratio(q["Ir"]) if ok else "FAIL", fmt_ratio(q["wall_ratio"], 2) if ok else "FAIL"]
            md.append("| `%s` | %s |" % (m.name, " | ".join(cells)))
        md.append("")
    md += events_tables(ctx, workloads, modes)
    md += side_by_side(ctx, workloads, modes)
    md += profile_targets(ctx, workloads, modes)
    md += bolt_exactness(ctx, workloads)
    tm = [m for m in modes if m.tally is not None and m.name not in ctx.na]
    if tm:
        md += ["## tally options as built", ""]
        md += ["- `%s`: `%s`" % (m.name, " ".join(m.tally + ctx.mode_flags.get(m.name, []) +
                                              (["filter=FILE"] if m.hot else []))) for m in tm]
        md.append("")
    na = [m for m in modes if m.name in ctx.na]
    if na:
        md += ["## Modes not measured", ""] + ["- `%s`: %s" % (m.name, ctx.na[m.name]) for m in na] + [""]
    fails = sorted((k, v) for k, v in ctx.status.items() if v.startswith("FAIL"))
    md += ["## Checks", ""]
    md += ["- every run's output (stdout, timings removed) compared with its baseline's "
           "on the same input: %s" % ("all the same" if not fails else "%d failed" % len(fails))]
    md += ["- FAIL `%s` `%s`: %s" % (w, m, v[6:]) for (w, m), v in fails]
    md += ["", "![wall-clock ratio](wall.svg)", "", "![instructions ratio](instructions.svg)", ""]
    # The summary (benchmarks/summary.py: the table doc/benchmarks.md shows),
    # made from the workload tables above, before them.
    first = next(i for i, l in enumerate(md) if l.startswith("## "))
    md[first:first] = summary.report_section(md)
    with open(os.path.join(results_dir, "report.md"), "w") as f:
        f.write("\n".join(md))
    fields = list(csv_rows[0].keys()) if csv_rows else []
    with open(os.path.join(results_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(csv_rows)
    charts(ctx, workloads, modes, results_dir)
    return len(fails)


def charts(ctx, workloads, modes, results_dir):
    """wall.svg and instructions.svg (and PNG copies) of the run."""
    if not shutil.which("gnuplot"):
        log("no gnuplot: charts skipped")
        return
    for metric, title, fname in (("wall_ratio", "wall-clock time ÷ uninstrumented", "wall"),
                                 ("Ir", "instructions (cachegrind Ir) ÷ uninstrumented", "instructions")):
        rows = [m for m in modes if not m.is_baseline and
                any(ctx.ok(w.name, m.name) and ratios_of(ctx, w.name, m)[metric] for w in workloads)]
        series = [(m.name, [ratios_of(ctx, w.name, m)[metric] if ctx.ok(w.name, m.name) else None
                            for w in workloads]) for m in rows]
        if series:
            plot(results_dir, fname, title, "%s run, %s" % (
                ctx.kind, time.strftime("%Y-%m-%d", time.gmtime(ctx.start))),
                [w.name for w in workloads], series)


def plot(out_dir, fname, title, subtitle, workloads, series):
    """OUT_DIR/FNAME.svg and .png: clustered bars, one cluster per mode of
    SERIES [(mode, [ratio or None per workload])], one bar per workload,
    log y (benchmarks/summary.py draws a kept report's the same way).
    True when gnuplot drew them."""
    if not shutil.which("gnuplot"):
        log("no gnuplot: charts skipped")
        return False
    dat = os.path.join(out_dir, fname + ".dat")
    with open(dat, "w") as f:
        f.write("mode " + " ".join(workloads) + "\n")
        for name, vals in series:
            f.write(name + " " + " ".join("%.4f" % v if v else "-" for v in vals) + "\n")
    gp = os.path.join(out_dir, fname + ".gp")
    with open(gp, "w") as f:
        f.write("""set terminal svg size 1200,520 dynamic font 'sans,11' background '#ffffff'
set output '%s'
set title '%s (%s)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y 2
set yrange [0.5:*]
set ytics nomirror
set grid ytics
set xtics rotate by 45 right scale 0 font ',10'
set bmargin 10
set lmargin 12
set key top left
set datafile missing '-'
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot for [i=2:%d] '%s' using i:xtic(1) title columnhead(i)
set terminal pngcairo size 1200,520 font 'sans,10' background '#ffffff'
set output '%s'
replot
""" % (os.path.join(out_dir, fname + ".svg"), title, subtitle, len(workloads) + 1, dat,
            os.path.join(out_dir, fname + ".png")))
    r = subprocess.run(["gnuplot", gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        log("gnuplot failed: " + r.stdout.strip()[:300])
    return r.returncode == 0


