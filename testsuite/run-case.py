#!/usr/bin/env python3
"""Run one testsuite program in one configuration and check its counts.

For --at early the per-function counts must equal the hand-written
PROG.expected file AND the counts of an independent oracle: the same program
built with GCC's -finstrument-functions and a counting runtime
(oracle/cyg-oracle.c).  For --at late they must equal valgrind --tool=callgrind
call counts for every function body in the binary.  In both placements the
inline-hook and call-hook builds must produce identical reports, and the
instrumented program's output must equal the uninstrumented program's.

Exit status: 0 pass, 1 fail, 77 skipped (a tool the check needs is missing).
"""
import argparse
import csv
import io
import os
import re
import shutil
import sys
import tempfile

from checklib import Failure, callgrind_calls, run

SKIP = 77


def read_expected(path):
    """Lines 'SYMBOL ENTRIES EXITS'; '#' starts a comment."""
    want = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            sym, entries, exits = line.split()
            want[sym] = (int(entries), int(exits))
    return want


def report_rows(tally, data, clones=True):
    args = [tally, "report", "--csv"] + (["--clones"] if clones else []) + [data]
    out = run(args).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    if rows and "calls" not in rows[0]:
        raise Failure("unexpected report header: %s" % out.splitlines()[0])
    return rows


def by_key(rows, key):
    """Sum calls and exits of report rows per KEY column."""
    acc = {}
    for r in rows:
        e, x = acc.get(r[key], (0, 0))
        acc[r[key]] = (e + int(r["calls"]), x + int(r["exits"]))
    return acc


def nm_functions(path):
    """Map address -> set of function symbols defined in PATH."""
    out = run(["nm", "--defined-only", path]).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            syms.setdefault(int(parts[0], 16), set()).add(parts[2])
    return syms


def compare(what, got, want, keys):
    problems = []
    for k in sorted(keys):
        g, w = got.get(k), want.get(k)
        if g != w:
            problems.append("  %-40s tally=%s %s=%s" % (k, g, what, w))
    if problems:
        raise Failure("counts differ from %s:\n%s" % (what, "\n".join(problems)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--opt", required=True)
    ap.add_argument("--at", required=True, choices=["early", "late"])
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--tally", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    args = ap.parse_args()

    prog = os.path.abspath(args.prog)
    base = os.path.splitext(prog)[0]
    cxx = prog.endswith(".cc")
    compiler = args.cxx if cxx else args.cc
    extra, plugin_extra = [], []
    if os.path.exists(base + ".flags"):
        for flag in open(base + ".flags").read().split():
            (plugin_extra if flag.startswith("-fplugin-arg-") else extra).append(flag)
    # PROG.sources: more translation units of the same program.
    srcs = [prog]
    if os.path.exists(base + ".sources"):
        srcs += [os.path.join(os.path.dirname(prog), f)
                 for f in open(base + ".sources").read().split()]
    want = read_expected(base + ".expected")
    # Entries of -1 name functions that must not be instrumented at all.
    skipped = {k for k, v in want.items() if v[0] < 0}
    want = {k: v for k, v in want.items() if v[0] >= 0}
    opt = "-" + args.opt
    work = tempfile.mkdtemp(prefix="tally-test-")
    try:
        # The uninstrumented program's output is the reference behaviour.
        plain = os.path.join(work, "plain")
        run([compiler, opt, *srcs, "-o", plain] + extra)
        reference = run([plain]).stdout

        # The program's own function symbols, from its object files.
        own = set()
        for i, src in enumerate(srcs):
            obj = os.path.join(work, "prog%d.o" % i)
            run([compiler, opt, "-c", src, "-o", obj] + extra)
            for names in nm_functions(obj).values():
                own |= names

        # Inline and call hooks; and inline hooks with -g, which must not
        # change what is counted.
        reports = {}
        for hooks, debug in (("inline-g", ["-g"]), ("inline", []), ("call", [])):
            exe = os.path.join(work, hooks)
            run([compiler, opt, *debug, "-fplugin=" + args.plugin,
                 "-fplugin-arg-tally-hooks=" + hooks.split("-")[0],
                 "-fplugin-arg-tally-at=" + args.at, *srcs, "-o", exe]
                + extra + plugin_extra + [args.runtime])
            data = os.path.join(work, hooks + ".data")
            out = run([exe], env={"TALLY_OUTPUT": data}).stdout
            if out != reference:
                raise Failure("hooks=%s changed the program's output:\n%r\nvs\n%r"
                              % (hooks, out, reference))
            reports[hooks] = report_rows(args.tally, data)
        inline_sym = by_key(reports["inline"], "symbol")
        compare("the build with -g", inline_sym, by_key(reports["inline-g"], "symbol"),
                set(inline_sym) | set(by_key(reports["inline-g"], "symbol")))
        compare("hooks=call", inline_sym, by_key(reports["call"], "symbol"),
                set(inline_sym) | set(by_key(reports["call"], "symbol")))

        # Folding clones into their source function loses no count.
        folded = by_key(report_rows(args.tally, data, clones=False), "origin")
        compare("the --clones report summed per origin", folded,
                by_key(reports["inline"], "origin"), set(folded))

        for k in skipped & set(inline_sym):
            raise Failure("%s is instrumented but must not be" % k)

        if args.at == "early":
            # Instrumented before any cloning, so each body is a source
            # function (C++ constructor variants C1/C2 are distinct bodies).
            got = inline_sym
            # Source semantics: exactly the expected functions were called.
            called = {k for k, v in got.items() if v[0] > 0}
            compare("the expected file", got, want, called | set(want))

            # Oracle: GCC's -finstrument-functions with a counting runtime.
            exe = os.path.join(work, "cyg")
            oracle_obj = os.path.join(work, "cyg-oracle.o")
            run([args.cc, "-O2", "-c", args.oracle, "-o", oracle_obj])
            run([compiler, opt, "-finstrument-functions", *srcs, oracle_obj,
                 "-o", exe] + extra)
            counts_file = os.path.join(work, "cyg.txt")
            out = run([exe], env={"CYG_COUNT_OUTPUT": counts_file}).stdout
            if out != reference:
                raise Failure("the oracle build changed the program's output")
            names = nm_functions(exe)
            oracle = {}
            for line in open(counts_file):
                off, entries, exits = line.split()
                syms = names.get(int(off, 16))
                if not syms:
                    raise Failure("oracle address %s has no symbol" % off)
                # Aliases (C++ C1/C2 constructors) share an address: credit
                # the name tally reports, else the first.
                match = [s for s in syms if s in got] or sorted(syms)
                oracle[match[0]] = (int(entries), int(exits))
            if cxx:
                # -finstrument-functions counts exits by exception too, tally
                # only returns: compare entries.
                got = {k: v[0] for k, v in got.items()}
                oracle = {k: v[0] for k, v in oracle.items()}
            # The oracle lists only functions that ran; the rest ran 0 times.
            keys = (set(oracle) | {k for k in got if k in own}) - skipped
            zero = 0 if cxx else (0, 0)
            compare("-finstrument-functions", got,
                    {k: oracle.get(k, zero) for k in keys}, keys)
        else:
            if not shutil.which("valgrind"):
                print("skipped: callgrind oracle (valgrind not installed)")
                return SKIP
            exe = os.path.join(work, "inline")
            cg = os.path.join(work, "callgrind.out")
            run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
                 "--compress-strings=no", "--compress-pos=no",
                 "--demangle=no", exe],
                env={"TALLY_OUTPUT": os.path.join(work, "cg.data")})
            got = {k: v[0] for k, v in inline_sym.items()}
            # Callgrind names a body by whichever alias it finds (C++ C1 for
            # C2); credit each count to the alias tally reports.
            alias = {}
            for names in nm_functions(exe).values():
                mine = [n for n in names if n in got]
                for n in names:
                    alias[n] = mine[0] if mine else n
            calls = {}
            for sym, n in callgrind_calls(cg).items():
                calls[alias.get(sym, sym)] = calls.get(alias.get(sym, sym), 0) + n
            # Every function body of the program that callgrind saw called
            # must be in tally's report, unless the expected file says it is
            # not instrumented (entries -1).
            for sym, n in calls.items():
                if sym.endswith(".cold") or ".cold." in sym:
                    # The cold part of a hot/cold-split body is entered by a
                    # jump, which callgrind books as a call; it is not a
                    # function entry.
                    continue
                src = re.sub(r"\.(constprop|isra|part|cold|lto_priv)\.\d+.*$", "", sym)
                if sym not in got and src in own and src not in skipped and n:
                    raise Failure("callgrind saw %d calls of %s, tally has no "
                                  "such function" % (n, sym))
            compare("callgrind", got, {k: calls.get(k, 0) for k in got}, set(got))
            # Exits match entries wherever the expected file says so.
            for sym, (entries, exits) in inline_sym.items():
                origin = next(r["origin"] for r in reports["inline"]
                              if r["symbol"] == sym)
                w = want.get(sym) or want.get(origin)
                if w and w[0] == w[1] and entries != exits:
                    raise Failure("%s: %d entries but %d exits" % (sym, entries, exits))
        print("ok: %s %s at=%s" % (os.path.basename(prog), opt, args.at))
        return 0
    except Failure as e:
        print("FAIL: %s %s at=%s\n%s" % (os.path.basename(prog), opt, args.at, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
