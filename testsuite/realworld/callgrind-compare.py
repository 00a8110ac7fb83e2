#!/usr/bin/env python3
"""callgrind-compare.py CALLGRIND.OUT TALLY-CSV

Compare tally's per-body call counts (`tally report --csv --clones`) with
callgrind's (`valgrind --tool=callgrind --compress-strings=no
--demangle=no`): callgrind's calls are summed per `cfn=` (recursion suffixes
like `'2` stripped, `.cold` parts ignored).  Every symbol tally reports must
have the same count in callgrind (0 when callgrind never saw it called).
Prints one line per mismatch and a summary; exits 1 on any mismatch."""
import csv, re, sys
from collections import Counter

def callgrind_calls(path):
    calls, cur = Counter(), None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                cur = re.sub(r"'\d+$", "", line[4:].strip())
            elif line.startswith("calls=") and cur is not None:
                calls[cur] += int(line[6:].split()[0])
    return calls

def main():
    cg = callgrind_calls(sys.argv[1])
    with open(sys.argv[2]) as f:
        rows = list(csv.DictReader(f))
    bad = 0
    for r in rows:
        sym = r["symbol"]
        if sym.endswith(".cold") or ".cold." in sym:
            continue
        t, c = int(r["calls"]), cg.get(sym, 0)
        if t != c:
            bad += 1
            print(f"  MISMATCH {sym}: tally {t}, callgrind {c}")
    total = sum(int(r["calls"]) for r in rows)
    print(f"  {len(rows)} symbols, {total} calls compared with callgrind: {bad} mismatches")
    sys.exit(1 if bad or not rows else 0)

main()
