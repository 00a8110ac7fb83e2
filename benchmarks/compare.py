#!/usr/bin/env python3
"""compare.py - runs of benchmarks/run side by side: for each mode every
run measured, a metric's ratio per workload as "before → after" (with
more than two runs, "first → second → ..."), and the geometric mean over
the workloads every run measured.

Usage: benchmarks/compare.py [--metric COL] [--workloads LIST] BEFORE/results.csv [MIDDLE/results.csv ...] AFTER/results.csv

A run may also be given as its report.md (the reports kept in
doc/benchmarks/, whose results.csv is gone): then only the instructions
(Ir) are read, from the table of each workload.

COL is a column of results.csv whose ratio to the baseline is wanted:
Ir (default), size, compile, wall, or any NAME with a NAME_ratio column.
LIST: the workloads to show, comma-separated (default: all both measured).
A mode that failed or was not measured in any of the runs shows "-".  Prints
Markdown.
"""

import argparse
import csv
import math
import re
import sys


def load_report(path, col):
    """A report.md's Ir ratios, by (workload, mode): each workload's table
    (a "## NAME" heading) has the instructions in its third column, the
    baselines' as absolute counts (their ratio is 1)."""
    if col != "Ir_ratio":
        sys.exit("compare.py: %s: a report gives only --metric Ir" % path)
    rows, workload = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                workload = line[3:].strip()
                continue
            m = re.match(r"\| `([\w-]+)`[^|]*\|[^|]*\| ([\d.,]+) \|", line)
            if not m or not workload or " " in workload:
                continue
            base = "baseline" in line or "uninstrumented" in line
            rows[(workload, m.group(1))] = 1.0 if base else number(
                m.group(2), path, workload, m.group(1), "Ir")
    return rows


def number(text, path, workload, mode, col):
    """TEXT as a float, or exit naming the cell it came from."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        sys.exit("compare.py: %s: %s %s: %s is %r, not a number"
                 % (path, workload, mode, col, text))


def load(path, col):
    if path.endswith(".md"):
        return load_report(path, col)
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            ok = not r["status"].startswith(("FAIL", "n/a"))
            v = r.get(col)
            rows[(r["workload"], r["mode"])] = (number(v, path, r["workload"], r["mode"], col)
                                                if ok and v not in (None, "") else None)
    return rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metric", default="Ir")
    ap.add_argument("--workloads")
    ap.add_argument("runs", nargs="+", metavar="RESULTS.csv")
    a = ap.parse_args()
    if len(a.runs) < 2:
        ap.error("give at least two results.csv files")
    col = {"wall": "wall_ratio", "compile": "compile_ratio"}.get(a.metric, a.metric + "_ratio")
    runs = [load(path, col) for path in a.runs]
    workloads, modes = [], []
    for w, m in runs[-1]:
        if all((w, m) in r for r in runs[:-1]) and (not a.workloads or w in a.workloads.split(",")):
            if w not in workloads:
                workloads.append(w)
            if m not in modes:
                modes.append(m)
    if not modes:
        sys.exit("compare.py: the runs share no (workload, mode)")
    print("| mode | " + " | ".join(workloads) + " | geomean |")
    print("|---|" + "---|" * (len(workloads) + 1))
    for m in modes:
        cells, both = [], [[] for _ in runs]
        for w in workloads:
            vs = [r.get((w, m)) for r in runs]
            if any(v is None for v in vs):
                cells.append("-")
                continue
            for b, v in zip(both, vs):
                b.append(v)
            cells.append(" → ".join("%.3f" % v for v in vs))
        gs = [geomean(b) for b in both]
        cells.append("-" if gs[0] is None else " → ".join("%.3f" % g for g in gs))
        print("| `%s` | %s |" % (m, " | ".join(cells)))

if __name__ == "__main__":
    main()
