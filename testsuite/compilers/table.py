#!/usr/bin/env python3
"""table.py - the Markdown table of GCC version x suite from the meson test
logs of testsuite/compilers/run's builds: each cell "passed / failed /
skipped" of that suite with that GCC (an expected failure counts as
passed, as in the closing line), a dash where the suite was not run.

Usage: table.py [--build-root DIR] [--suites LIST] N[=TESTLOG] ...
  (DIR/gcc-N/meson-logs/testlog.json, DIR default: the repository's build/;
   N=TESTLOG names another log, e.g. 12=build/meson-logs/testlog.json for
   ./dev test's run with the machine's GCC)
"""
import json
import os
import sys


def main(argv):
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build")
    only = None
    while argv[:1] in (["--build-root"], ["--suites"]):
        if argv[0] == "--build-root":
            root = argv[1]
        else:
            only = argv[1].split(",")
        argv = argv[2:]
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cells, suites, versions = {}, [], {}
    names = []
    for arg in argv:
        n, _, path = arg.partition("=")
        names.append(n)
        path = path or os.path.join(root, "gcc-" + n, "meson-logs", "testlog.json")
        if not os.path.exists(path):
            print("table.py: no test log for GCC %s (%s)" % (n, path), file=sys.stderr)
            continue
        versions[n] = None
        for line in open(path, encoding="utf-8", errors="replace"):
            try:
                t = json.loads(line)
            except ValueError:
                continue
            # "tally:SUITE / description" (meson 1.0) or "SUITE - tally:
            # description" (later meson); the log has no suite field.
            name = str(t.get("name", "?"))
            if " - tally:" in name:
                s = name.split(" - tally:", 1)[0].strip()
            else:
                s = name.split(":", 1)[-1].split(" / ", 1)[0].strip()
            if only and s not in only:
                continue
            if s not in suites:
                suites.append(s)
            c = cells.setdefault((n, s), [0, 0, 0])
            r = t.get("result")
            c[0 if r in ("OK", "EXPECTEDFAIL") else 2 if r == "SKIP" else 1] += 1
    if not versions:
        return 1
    ns = [n for n in names if n in versions]
    print("| suite | " + " | ".join("GCC " + n for n in ns) + " |")
    print("|---|" + "---:|" * len(ns))
    for s in suites:
        row = []
        for n in ns:
            c = cells.get((n, s))
            row.append("%d / %d / %d" % tuple(c) if c else "-")
        print("| `%s` | %s |" % (s, " | ".join(row)))
    tot = [[sum(cells.get((n, s), [0, 0, 0])[i] for s in suites) for i in range(3)] for n in ns]
    print("| all | " + " | ".join("**%d / %d / %d**" % tuple(t) for t in tot) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
