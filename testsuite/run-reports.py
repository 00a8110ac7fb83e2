#!/usr/bin/env python3
"""What the reports show and compare: builds with other settings are not
summed silently, system-header functions and frames below main are hidden
by default, and `tally diff` compares two data files.

Usage: run-reports.py CHECK --plugin P --runtime RT --tally T --srcdir DIR
                          [--cc CC] [--cxx CXX]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import argparse
import json
import os
import sys

from checklib import Failure, expect, run, run_check


def build(a, work, name, src, flags=(), cxx=False):
    exe = os.path.join(work, name)
    run([a.cxx if cxx else a.cc, "-O2", "-fplugin=" + a.plugin,
         *["-fplugin-arg-tally-" + f for f in flags], src, "-o", exe,
         a.runtime, *(["-lpthread"] if not cxx else [])])
    return exe


def run_data(exe, data, args=()):
    """Run EXE writing DATA; returns its standard output."""
    return run([exe, *args], env={"TALLY_OUTPUT": data}).stdout


def csv_calls(a, *args):
    """Calls per function name of `tally report --csv ARGS`."""
    out = run([a.tally, "report", "--csv", *args]).stdout.splitlines()
    calls = {}
    for line in out[1:]:
        f = line.split(",")
        calls[f[2]] = calls.get(f[2], 0) + int(f[0])
    return calls


def check_mixed_builds(a, work):
    """One source built at=late and at=early: report, lcov, flame, report
    --tree and merge refuse to sum the files, naming the source and both
    files; --force sums them with a warning.  Builds that count alike
    (hooks=inline and hooks=call) are summed without a word."""
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    data = {}
    paths = ["hooks=call", "measure=cycles", "paths=on"]
    for name, flags in (("late", ["at=late", *paths]),
                        ("early", ["at=early", *paths]),
                        ("inline", ["at=late", "hooks=inline"])):
        exe = build(a, work, name, src, flags)
        data[name] = os.path.join(work, name + ".data")
        run_data(exe, data[name])
    late, early = csv_calls(a, data["late"]), csv_calls(a, data["early"])
    # at=early counts b and c, which GCC inlines at -O2 (at=late does not).
    expect(early.get("c") == 10 and late.get("c", 0) == 0,
           "the builds should differ: late %s early %s" % (late, early))
    both = [data["late"], data["early"]]
    out = os.path.join(work, "out")
    for cmd in (["report"], ["report", "--tree"], ["lcov"], ["flame", "-o", out],
                ["merge", "-o", out]):
        p = run([a.tally, *cmd, *both], check=False)
        what = " ".join(cmd[:2] if cmd[1:2] == ["--tree"] else cmd[:1])
        expect(p.returncode == 1, "tally %s of at=late and at=early files: exit %d\n%s%s"
               % (what, p.returncode, p.stdout, p.stderr))
        expect(p.stdout == "" and not os.path.exists(out),
               "tally %s refused but wrote something: %r" % (what, p.stdout[:200]))
        expect("tally: %s: %s was built with at=late hooks=call blocks=none (%s) and with "
               "at=early hooks=call blocks=none (%s)" % (what, src, both[0], both[1]) in p.stderr
               and "--force" in p.stderr,
               "tally %s: no message naming the source, the settings and the files:\n%s"
               % (what, p.stderr))
        p = run([a.tally, *cmd, "--force", *both])
        expect("tally: warning: %s: --force: their counts are summed" % what in p.stderr,
               "tally %s --force: no warning:\n%s" % (what, p.stderr))
        if os.path.exists(out):
            os.unlink(out)
    # --force sums: each row is the sum of the two files' rows.
    forced = csv_calls(a, "--force", *both)
    for fn in set(late) | set(early):
        expect(forced.get(fn) == late.get(fn, 0) + early.get(fn, 0),
               "%s: --force gives %s, the files %s + %s" % (fn, forced.get(fn),
                                                          late.get(fn), early.get(fn)))
    # One file holding both builds (merge --force keeps one record per
    # source; two programs' files merged without it are refused above).
    run([a.tally, "merge", "--force", "-o", out, *both])
    # Builds that count alike are summed without a word.
    p = run([a.tally, "report", "--csv", data["late"], data["inline"]])
    expect(p.stderr == "", "hooks=inline + hooks=call: %s" % p.stderr)
    inline = csv_calls(a, data["inline"])
    summed = csv_calls(a, data["late"], data["inline"])
    expect(all(summed[f] == late.get(f, 0) + inline.get(f, 0) for f in summed),
           "hooks=inline + hooks=call: %s, apart %s %s" % (summed, late, inline))


CHECKS = {
    "mixed-builds": check_mixed_builds,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=sorted(CHECKS))
    for opt in ("plugin", "runtime", "tally", "srcdir"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    a = ap.parse_args()
    return run_check(CHECKS, a.check, a, "tally-reports-")


if __name__ == "__main__":
    sys.exit(main())
