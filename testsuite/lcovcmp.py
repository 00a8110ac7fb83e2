#!/usr/bin/env python3
"""Line counts of two lcov tracefiles compared line for line: gcov's
(`lcov --capture`) and tally's (`tally lcov`).

Usage: lcovcmp.py GCOV.info TALLY.info [--only DIR]... [--show N] [--strict]
                  [--gcov-root DIR --tally-root DIR] [--known FILE:LINE:WHY]...

Prints one summary line
  N lines equal, M differ (K of them tally 0 with gcov > 0), G only gcov, T only tally
then up to --show differences (default 20), grouped by kind.  A line listed
twice in one record (gcov lists a line once per function that starts on
the same line, C++ constructor variants) counts the sum, as lcov itself
reads it.  --only keeps the files under DIR (repeatable).  --gcov-root and
--tally-root: the two builds were made in different copies of the source
tree; files under them are compared by their path below the root, and only
those are kept.  --known: a difference on FILE:LINE that is understood, with
its reason; it is listed as such and does not fail --strict (one that no
longer happens is said, so the list stays true).

Exit status: 0, or with --strict 1 when a line differs or gcov has a line
tally has not (a line only tally has is not a failure: see KINDS).
"""
import argparse
import os
import sys

# Why a line can be in one tracefile only, as the reports name them.
KINDS = {
    "only-tally-0": "tally lists it with 0, gcov has no record: a function "
                    "GCC discards as unused before gcov's pass (an unused "
                    "inline or template function), which at=early still "
                    "sees",
    "only-tally": "tally counts it, gcov has no record: the first line of an "
                  "always_inline function, which GCC inlines at -O0 before "
                  "gcov's pass, a line holding only a call of one, or a "
                  "function gcov leaves out",
    "only-gcov": "gcov counts it, tally has no record",
    "differ": "both count it, differently (at -O0: in and around "
              "always_inline functions, doc/plugin-options.md)",
}


def read_info(path):
    """{(source file, line): count} of an lcov tracefile."""
    counts, src = {}, None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("SF:"):
                src = os.path.normpath(line[3:])
            elif line.startswith("DA:") and src is not None:
                fields = line[3:].split(",")
                key = (src, int(fields[0]))
                counts[key] = counts.get(key, 0) + int(fields[1])
            elif line == "end_of_record":
                src = None
    return counts


def rebase(counts, root):
    """COUNTS of the files under ROOT, keyed by their path below it."""
    root = os.path.normpath(os.path.abspath(root)) + os.sep
    return {(k[0][len(root):], k[1]): v for k, v in counts.items()
            if k[0].startswith(root)}


def keep(counts, only):
    if not only:
        return counts
    dirs = [os.path.normpath(os.path.abspath(d)) + os.sep for d in only]
    return {k: v for k, v in counts.items()
            if any(k[0].startswith(d) for d in dirs)}


def compare(gcov, tally):
    """(equal, [(kind, file, line, gcov count, tally count)])."""
    equal, diffs = 0, []
    for key in sorted(set(gcov) | set(tally)):
        g, t = gcov.get(key), tally.get(key)
        if g == t:
            equal += 1
        elif t is None:
            diffs.append(("only-gcov", key[0], key[1], g, None))
        elif g is None:
            diffs.append(("only-tally-0" if t == 0 else "only-tally",
                          key[0], key[1], None, t))
        else:
            diffs.append(("differ", key[0], key[1], g, t))
    return equal, diffs


def summary(equal, diffs):
    n = {k: 0 for k in KINDS}
    for d in diffs:
        n[d[0]] += 1
    zero = sum(1 for d in diffs if d[0] == "differ" and d[4] == 0 and d[3] > 0)
    return ("%d lines equal, %d differ (%d of them tally 0 with gcov > 0), "
            "%d only gcov, %d only tally (%d of them 0)"
            % (equal, n["differ"], zero, n["only-gcov"],
               n["only-tally"] + n["only-tally-0"], n["only-tally-0"]))


def describe(diffs, show):
    out = []
    for kind, why in KINDS.items():
        mine = [d for d in diffs if d[0] == kind]
        if not mine:
            continue
        out.append("%s (%d): %s" % (kind, len(mine), why))
        for d in mine[:show]:
            out.append("  %s:%d gcov %s, tally %s" % d[1:])
        if len(mine) > show:
            out.append("  ... %d more" % (len(mine) - show))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gcov")
    ap.add_argument("tally")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--known", action="append", default=[])
    ap.add_argument("--gcov-root")
    ap.add_argument("--tally-root")
    a = ap.parse_args()
    gcov = keep(read_info(a.gcov), a.only)
    tally = keep(read_info(a.tally), a.only)
    if a.gcov_root or a.tally_root:
        if not (a.gcov_root and a.tally_root):
            ap.error("--gcov-root and --tally-root go together")
        gcov, tally = rebase(gcov, a.gcov_root), rebase(tally, a.tally_root)
    known = {}
    for k in a.known:
        path, line, why = k.split(":", 2)
        known[(os.path.normpath(path), int(line))] = why
    equal, diffs = compare(gcov, tally)
    print(summary(equal, diffs))
    for line in describe([d for d in diffs if (d[1], d[2]) not in known],
                         a.show):
        print(line)
    seen = set()
    for d in diffs:
        if (d[1], d[2]) in known:
            seen.add((d[1], d[2]))
            print("known: %s:%d gcov %s, tally %s: %s"
                  % (d[1], d[2], d[3], d[4], known[(d[1], d[2])]))
    for k in sorted(set(known) - seen):
        print("known difference %s:%d no longer happens" % k)
    bad = [d for d in diffs if d[0] in ("differ", "only-gcov")
           and (d[1], d[2]) not in known]
    return 1 if a.strict and bad else 0


if __name__ == "__main__":
    sys.exit(main())
