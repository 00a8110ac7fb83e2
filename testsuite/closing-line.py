#!/usr/bin/env python3
"""closing-line.py - the closing line of one or more test runs from
meson's logs: "N passed, N failed, N skipped", and after it, on the same
line, each skipped test with the reason its driver printed ("skipped: CASE
why"), so that a skip is never taken for a pass.  Used by ./dev test,
testsuite/compilers/run and .ci/run.

Usage: closing-line.py [LABEL=]TESTLOG.json ...

  LABEL=   names the run in front of each of its skipped tests ("GCC 16")

A log that is missing or has a line meson did not finish writing counts as
a failure.  Exit status 0 when something passed and nothing failed.
"""
import json
import sys


def tally(path, label, counts, skips):
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        print("closing-line.py: %s: %s" % (path, e.strerror), file=sys.stderr)
        counts["failed"] += 1
        return
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            t = json.loads(line)
        except ValueError:
            counts["failed"] += 1  # a line meson did not finish writing
            continue
        key = {"OK": "passed", "SKIP": "skipped",
               "EXPECTEDFAIL": "passed"}.get(t.get("result"), "failed")
        counts[key] += 1
        if key == "skipped":
            why = [l.split(None, 2)[2] if len(l.split(None, 2)) > 2 else ""
                   for l in (t.get("stdout") or "").splitlines()
                   if l.startswith("skipped:")]
            name = str(t.get("name", "?")).split(":", 1)[-1].strip()
            skips.append("%s%s (%s)" % (label + ": " if label else "", name,
                                        (why[-1] if why else "no reason given").strip("() ")))


def main(argv):
    args = argv
    if not args:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    skips = []
    for a in args:
        label, sep, path = a.partition("=")
        if not sep or "/" in label:
            label, path = "", a
        tally(path, label, counts, skips)
    line = "%(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts
    if skips:
        line += ": " + "; ".join(skips)
    print(line)
    return 0 if counts["passed"] and not counts["failed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
