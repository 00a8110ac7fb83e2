#!/usr/bin/env python3
"""compare.py - two runs of benchmarks/run side by side: for each mode
both runs measured, a metric's ratio per workload as "before → after",
and the geometric mean over the workloads both measured.

Usage: benchmarks/compare.py [--metric COL] [--workloads LIST] BEFORE/results.csv AFTER/results.csv

COL is a column of results.csv whose ratio to the baseline is wanted:
Ir (default), size, compile, wall, or any NAME with a NAME_ratio column.
LIST: the workloads to show, comma-separated (default: all both measured).
A mode that failed or was not measured in either run shows "-".  Prints
Markdown.
"""

import argparse
import csv
import math
import sys


def load(path, col):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            ok = not r["status"].startswith(("FAIL", "n/a"))
            v = r.get(col)
            rows[(r["workload"], r["mode"])] = float(v) if ok and v not in (None, "") else None
    return rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metric", default="Ir")
    ap.add_argument("--workloads")
    ap.add_argument("before")
    ap.add_argument("after")
    a = ap.parse_args()
    col = {"wall": "wall_ratio", "compile": "compile_ratio"}.get(a.metric, a.metric + "_ratio")
    old, new = load(a.before, col), load(a.after, col)
    workloads, modes = [], []
    for w, m in new:
        if (w, m) in old and (not a.workloads or w in a.workloads.split(",")):
            if w not in workloads:
                workloads.append(w)
            if m not in modes:
                modes.append(m)
    if not modes:
        sys.exit("compare.py: the two runs share no (workload, mode)")
    print("| mode | " + " | ".join(workloads) + " | geomean |")
    print("|---|" + "---|" * (len(workloads) + 1))
    for m in modes:
        cells, both_o, both_n = [], [], []
        for w in workloads:
            o, n = old.get((w, m)), new.get((w, m))
            if o is None or n is None:
                cells.append("-")
                continue
            both_o.append(o)
            both_n.append(n)
            cells.append("%.3f → %.3f" % (o, n))
        go, gn = geomean(both_o), geomean(both_n)
        cells.append("-" if go is None else "%.3f → %.3f" % (go, gn))
        print("| `%s` | %s |" % (m, " | ".join(cells)))


if __name__ == "__main__":
    main()
