#!/usr/bin/env python3
"""summary.py - one run of benchmarks/run as one table: each mode's
instructions (cachegrind Ir) and wall-clock ratio per workload, and the
geometric means over the workloads of Ir, wall clock and binary size.
It is the "Summary" section at the top of every report.md and the table
doc/benchmarks.md shows, made from the report's own workload tables so
that the two are the same.

Usage: benchmarks/summary.py [--modes LIST] [--charts DIR] REPORT.md

REPORT.md: a report of benchmarks/run (build/bench-results/DATE/report.md,
or a kept one, doc/benchmarks/run-*.md).  Prints Markdown: a line naming
the run (date, kind, pairs, tally commit), the table, and what its marks
mean.
--modes LIST  only these modes (comma-separated), in the report's order.
--charts DIR  also draw DIR/wall.svg and DIR/instructions.svg from the
              same figures (gnuplot, as benchmarks/run draws them).

The figures are the report's, as rounded there (Ir to 3 decimals, wall
and size to 2); a geometric mean is over the workloads where the mode ran
with the right output, rounded the same way, with "(n=K)" when that is
fewer than the workloads the mode has a row in.
"""

import argparse
import math
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number(text):
    m = re.match(r"^(-?[\d,]*\.?\d+)", text)
    return float(m.group(1).replace(",", "")) if m else None


def parse(lines):
    """A report's header facts and its workload tables: (facts, workloads,
    modes, rows), rows[(workload, mode)] = {label, Ir, wall, slow, size,
    status} with the ratios as floats or None; status is "ok", "base",
    "FAIL" or "n/a"."""
    facts, workloads, modes, rows = {}, [], [], {}
    workload, cols = None, None
    for line in lines:
        m = re.match(r"^- (date|tally): (.*)$", line)
        if m and not workloads:
            facts[m.group(1)] = m.group(2)
        if line.startswith("## "):
            workload, cols = line[3:].strip(), None
            continue
        if not line.startswith("|") or workload is None:
            continue
        c = cells(line)
        if c[0] == "mode":
            cols = c if len(c) > 1 and c[1].startswith("wall") else None
            if cols and workload not in workloads:
                workloads.append(workload)
            continue
        if not cols or not c[0].startswith("`"):
            continue
        row = dict(zip(cols, c))
        mode, _, label = c[0][1:].partition("`")
        out = row.get("output", "")
        status = ("base" if out == "reference" else "FAIL" if out.startswith("FAIL")
                  else "n/a" if out.startswith("n/a") else "ok")
        wall = row.get(cols[1], "-")
        rows[(workload, mode)] = {
            "label": label.strip(), "status": status,
            "Ir": number(row.get("instructions", "-")) if status == "ok" else None,
            "wall": number(wall) if status == "ok" else None,
            "slow": "slow input" in wall,
            "size": number(row.get("binary size", "-")) if status == "ok" else None,
        }
        if mode not in modes:
            modes.append(mode)
    return facts, workloads, modes, rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, digits):
    return "-" if x is None else "%.*f" % (digits, x)


def table(facts, workloads, modes, rows, only=None):
    """The summary as Markdown lines."""
    shown = [m for m in modes if (not only or m in only)
             and not all(rows.get((w, m), {}).get("status") in (None, "base") for w in workloads)]
    commit = facts.get("tally", "?").split()[0]
    md = ["Run: %s, tally %s.  Each cell is **instructions / wall clock**, both ÷ the "
          "mode's uninstrumented baseline in the same run (gcc modes ÷ `gcc`, clang modes ÷ "
          "`clang`, each other compiler or link its own): cachegrind's Ir on the `cg` input, "
          "exact; the median of the paired wall-clock ratios on the wall input, noisy.  The "
          "geometric means are over the workloads; size is the binary's text + data."
          % (facts.get("date", "?"), commit), "",
          "| mode | what | " + " | ".join(workloads) + " | geomean Ir | geomean wall | geomean size |",
          "|---|---|" + "---:|" * (len(workloads) + 3)]
    slow = fail = dash = False
    for m in shown:
        label, out, acc = "", [], {"Ir": [], "wall": [], "size": []}
        present = 0
        for w in workloads:
            r = rows.get((w, m))
            if r is None:
                out.append("")
                continue
            present += 1
            label = label or r["label"]
            if r["status"] in ("FAIL", "n/a"):
                out.append(r["status"])
                fail = True
                continue
            for k in acc:
                if r[k] is not None:
                    acc[k].append(r[k])
            wall = fmt(r["wall"], 2) + ("†" if r["slow"] and r["wall"] is not None else "")
            slow |= r["slow"]
            out.append("%s / %s" % (fmt(r["Ir"], 3), wall))
            dash |= r["Ir"] is None or r["wall"] is None
        means = []
        for k, d in (("Ir", 3), ("wall", 2), ("size", 2)):
            g = fmt(geomean(acc[k]), d)
            if acc[k] and len(acc[k]) < present:
                g += " (n=%d)" % len(acc[k])
            means.append(g)
        md.append("| `%s` | %s | %s | %s |" % (m, label, " | ".join(out), " | ".join(means)))
    md.append("")
    notes = []
    if slow:
        notes.append("†: on the small `slow` input, against the baseline on that input "
                     "(the tool's start-up included)")
    if dash:
        notes.append("-: not measured (cachegrind cannot run that tool, or no wall-clock pairs)")
    if fail:
        notes.append("FAIL, n/a: the build or the output check failed, or the mode cannot run "
                     "here (the report says why)")
    if notes:
        md += ["; ".join(notes) + ".", ""]
    return md


def report_section(lines):
    """report.md's Summary section, from the report's own lines."""
    facts, workloads, modes, rows = parse(lines)
    if not workloads:
        return []
    return ["## Summary", ""] + table(facts, workloads, modes, rows)


def charts(facts, workloads, modes, rows, out_dir, only=None):
    """wall.svg and instructions.svg of the same figures in OUT_DIR."""
    sys.path.insert(0, HERE)
    from bench_report import plot
    shown = [m for m in modes if not only or m in only]
    kind = "full" if "full run" in facts.get("date", "") else "quick"
    day = facts.get("date", "?")[:10]
    tmp = tempfile.mkdtemp(prefix="tally-summary-")
    try:
        for key, title, name in (("wall", "wall-clock time ÷ uninstrumented", "wall"),
                                 ("Ir", "instructions (cachegrind Ir) ÷ uninstrumented",
                                  "instructions")):
            series = []
            for m in shown:
                vals = [rows.get((w, m), {}).get(key) for w in workloads]
                if any(rows.get((w, m), {}).get("status") == "ok" and v for w, v in zip(workloads, vals)):
                    series.append((m, vals))
            if series and plot(tmp, name, title, "%s run, %s" % (kind, day), workloads, series):
                shutil.copy(os.path.join(tmp, name + ".svg"), os.path.join(out_dir, name + ".svg"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes")
    ap.add_argument("--charts", metavar="DIR")
    ap.add_argument("report", metavar="REPORT.md")
    a = ap.parse_args()
    try:
        lines = open(a.report, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit("summary.py: %s" % e)
    facts, workloads, modes, rows = parse(lines)
    if not workloads:
        sys.exit("summary.py: %s: no workload table (not a report of benchmarks/run?)" % a.report)
    only = a.modes.split(",") if a.modes else None
    unknown = [m for m in only or [] if m not in modes]
    if unknown:
        sys.exit("summary.py: %s: no mode %s" % (a.report, ", ".join(unknown)))
    print("\n".join(table(facts, workloads, modes, rows, only)))
    if a.charts:
        charts(facts, workloads, modes, rows, a.charts, only)


if __name__ == "__main__":
    main()
