#!/usr/bin/env python3
"""benchmarks/choice-bound.py - how low `blocks=visited` could go if each
function chose, by itself, the cheaper of the two placements tally has
(issue 16, target 2: visited at most clang's inline 8-bit counters).

Usage: benchmarks/choice-bound.py [--json] [--modes A,B] [--peer BASE,MODE]
                                  WORK WORKLOAD...

WORK is a benchmarks/run work directory (its run/cg/WORKLOAD/MODE.stepN.cg
files: cachegrind's output for every step of the workload, summed).  Per
function (cachegrind's file and function name) it takes the instructions
of A's build and of B's (default tally-blocks-count and
tally-blocks-visited) and keeps the smaller: a build that gave each
function the placement that ran fewer instructions in it, chosen with
this very run's knowledge (so no static choice does better).  tally's
runtime (functions in a file under rt/) is taken at the smaller of the
two builds' totals.  Everything over the uninstrumented `gcc` build's
total, beside PEER (default clang's tally-free build and its 8-bit
counters: clang,clang-8bit).  The bound is optimistic twice: the choice
knows the run, and code that is attributed to a function in one build
and to another in the other (inlining is the same in both: the plugin
places after it) is taken at the cheaper side.  Functions that share a
name in a binary without debug information are taken together, which
can only raise the bound a little.

Prints a Markdown table, or with --json one object per workload.
"""
import argparse
import collections
import glob
import json
import os
import sys


def load(path):
    """{(file, function): Ir} of one cachegrind output file."""
    costs = collections.Counter()
    fl = fn = ""
    ir = 0
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
                if "Ir" not in names:
                    sys.exit("choice-bound.py: %s has no Ir event" % path)
                ir = names.index("Ir") + 1
            elif line.startswith("fl="):
                fl = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit():
                parts = line.split()
                if len(parts) > ir:
                    costs[(fl, fn)] += int(parts[ir])
    return costs


def build_costs(work, workload, mode):
    files = sorted(glob.glob(os.path.join(work, "run", "cg", workload, mode + ".step*.cg")))
    if not files:
        sys.exit("choice-bound.py: no cachegrind files for %s %s under %s/run/cg"
                 % (workload, mode, work))
    total = collections.Counter()
    for p in files:
        total.update(load(p))
    return total


def is_runtime(key):
    return "/rt/" in key[0]


def bound(work, workload, a, b, peer):
    base = sum(build_costs(work, workload, "gcc").values())
    ca, cb = build_costs(work, workload, a), build_costs(work, workload, b)
    rt_a = sum(v for k, v in ca.items() if is_runtime(k))
    rt_b = sum(v for k, v in cb.items() if is_runtime(k))
    chosen = min(rt_a, rt_b)
    picked_a = 0
    for k in set(ca) | set(cb):
        if is_runtime(k):
            continue
        if ca[k] < cb[k]:
            chosen += ca[k]
            picked_a += 1
        else:
            chosen += cb[k]
    out = {"workload": workload, "gcc": base,
           a: sum(ca.values()) / base, b: sum(cb.values()) / base,
           "chosen": chosen / base, "functions_" + a: picked_a}
    pbase, pmode = peer
    pb = build_costs(work, workload, pbase)
    pm = build_costs(work, workload, pmode)
    out[pmode] = sum(pm.values()) / sum(pb.values())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--modes", default="tally-blocks-count,tally-blocks-visited")
    ap.add_argument("--peer", default="clang,clang-8bit")
    ap.add_argument("work")
    ap.add_argument("workloads", nargs="+")
    o = ap.parse_args()
    modes = o.modes.split(",")
    peer = o.peer.split(",")
    if len(modes) != 2 or len(peer) != 2:
        ap.error("--modes and --peer take two names each")
    rows = [bound(o.work, w, modes[0], modes[1], peer) for w in o.workloads]
    if o.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| workload | `%s` | `%s` | each function the cheaper | `%s` |"
          % (modes[0], modes[1], peer[1]))
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %.4f | %.4f | %.4f | %.4f |"
              % (r["workload"], r[modes[0]], r[modes[1]], r["chosen"], r[peer[1]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
