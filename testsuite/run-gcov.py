#!/usr/bin/env python3
"""tally's line coverage against gcov's, and what `tally lcov` leaves out.

Usage: run-gcov.py CHECK --plugin P --runtime RT --tally T --srcdir DIR
                   [--cc CC] [--cxx CXX]
Checks:
  corpus   every file of gcov-corpus/ (real-world shapes: conditions over
           several lines, statement macros, switch, goto, loops, ternaries,
           varargs, loops entered by labels, C++ exceptions, templates,
           lambdas, globals with constructors), plain and with -Wall, built
           at -O0 with --coverage and with tally
           at=early blocks=count, run, and `lcov --capture` compared with
           `tally lcov` line for line (lcovcmp.py): every line of the file
           itself equal, and in the headers it pulls in no line that both
           count differently or that gcov counts and tally not.
  markers  `tally lcov` honours LCOV_EXCL_LINE, LCOV_EXCL_START/STOP and
           LCOV_EXCL_BR_LINE/BR_START/BR_STOP as lcov does: the same lines
           as `lcov --capture` of a --coverage build, no branches on the
           BR lines; --no-markers keeps them all, as lcov's does.
  always-inline  gcov-inline/always-inline.c: the lines where GCC's
           inlining of always_inline functions at -O0, after tally's pass
           and before gcov's, makes the counts differ are exactly the
           tagged ones, as documented; tally's are the program's own.
  cdtors   with --coverage and tally together, GCC's own constructor and
           destructor (_sub_I_00100_0, _sub_D_00100_1) are not instrumented,
           so the file's last line, the closing brace of a function that
           never runs, is not shown as run.
Exit status: 0 pass, 1 fail, 77 skip (gcov or lcov missing).
"""
import csv
import io
import os
import re
import shutil
import sys

from checklib import case, expect, gcov_of, lcov_branches, main, run, Skip, write_file
import lcovcmp


def need_tools(a=None):
    """Skip without lcov or the gcov of A's compiler (gcov without A)."""
    for tool in (gcov_of(a) if a else "gcov", "lcov"):
        if not shutil.which(tool):
            raise Skip("(%s not installed)" % tool)


def compiler(a, src):
    return a.cxx if src.endswith(".cc") else a.cc


def gcov_info(a, src, work, extra=()):
    """Build SRC with --coverage in WORK/gcov, run it, return lcov's
    tracefile and the program's output."""
    d = os.path.join(work, "gcov")
    os.makedirs(d)
    exe = os.path.join(d, "prog")
    run([compiler(a, src), "-O0", "--coverage", *extra, src, "-o", exe,
         "-fopt-info-inline-optimized=" + os.path.join(work, "inlined.txt")], cwd=d)
    out = run([exe], cwd=d).stdout
    info = os.path.join(work, "gcov.info")
    run(["lcov", "--quiet", "--capture", "--gcov-tool", gcov_of(a), "--directory", d,
         "--output-file", info])
    return info, out


def always_inlined(work):
    """{(file, line)} of the calls GCC inlined at -O0 before --coverage's
    pass, by its own report of the gcov build: always_inline functions
    (GCC 16's libstdc++ makes std::forward, std::move, allocator members,
    __normal_iterator and more so)."""
    sites = set()
    path = os.path.join(work, "inlined.txt")
    if os.path.exists(path):
        for l in open(path):
            m = re.match(r"(.+?):(\d+):\d+: optimized: +Inlining .*\(always_inline\)", l)
            if m:
                sites.add((os.path.normpath(m.group(1)), int(m.group(2))))
    return sites


def tally_info(a, src, work, extra=()):
    d = os.path.join(work, "tally")
    os.makedirs(d)
    exe = os.path.join(d, "prog")
    data = os.path.join(d, "prog.data")
    run([compiler(a, src), "-O0", "-fplugin=" + a.plugin,
         "-fplugin-arg-tally-at=early", "-fplugin-arg-tally-blocks=count",
         *extra, src, "-o", exe, a.runtime])
    out = run([exe], env={"TALLY_OUTPUT": data}, cwd=d).stdout
    info = os.path.join(work, "tally.info")
    run([a.tally, "lcov", "--all", "-o", info, data])
    return info, out, data


def compare_one(a, work, src, flags, fails, totals):
    """Build SRC both ways with FLAGS, run, compare; add to FAILS, TOTALS."""
    name = " ".join([os.path.basename(src)] + flags)
    w = os.path.join(work, name.replace(" ", ""))
    os.makedirs(w)
    ginfo, gout = gcov_info(a, src, w, flags)
    tinfo, tout, _ = tally_info(a, src, w, flags)
    expect(gout == tout, "%s: the tally build's output differs from the "
           "--coverage build's:\n%s\n%s" % (name, gout, tout))
    gcov, tally = lcovcmp.read_info(ginfo), lcovcmp.read_info(tinfo)
    own = os.path.normpath(src)
    expect(any(k[0] == own for k in gcov), "%s: gcov reports no line of "
           "it (tracefile %s)" % (name, ginfo))
    equal, diffs = lcovcmp.compare(gcov, tally)
    totals[0] += equal
    totals[1] += len(diffs)
    # Calls GCC inlined at -O0, before gcov's pass, as always_inline (its own
    # report of the gcov build): gcov then counts a line holding such a call
    # once per entry into each piece of it between the callee's statements,
    # and the inlined functions' lines where they were inlined; tally counts
    # the source functions before any inlining.  GCC 16's libstdc++ makes
    # std::forward, std::move, allocator members, __normal_iterator and more
    # always_inline (GCC 11 to 15's: _M_use_local_data alone).  A line of
    # the file itself that differs must hold such a call; a header line may
    # differ where GCC inlined any: said, not failed.
    sites = always_inlined(w)
    inl = [d for d in diffs if d[0] == "differ"
           and ((d[1], d[2]) in sites or (d[1] != own and sites))]
    diffs = [d for d in diffs if d not in inl]
    if inl:
        print("%s: %d lines count differently where GCC inlined always_inline "
              "calls at -O0 before gcov's pass (%d call sites in its report):"
              % (name, len(inl), len(sites)))
        for d in inl[:5]:
            print("    %s:%d gcov %s, tally %s%s" % (d[1], d[2], d[3], d[4],
                  " (a call site)" if (d[1], d[2]) in sites else ""))
    bad = [d for d in diffs if d[1] == own or d[0] in ("differ", "only-gcov")]
    print("%s: %s" % (name, lcovcmp.summary(equal, diffs)))
    for line in lcovcmp.describe(diffs, 5):
        print("  " + line)
    if bad:
        fails.append("%s: %d lines differ from gcov's:\n  %s" % (
            name, len(bad), "\n  ".join(
                "%s:%d gcov %s, tally %s (%s)" % (d[1], d[2], d[3], d[4], d[0])
                for d in bad[:20])))


@case("corpus")
def check_corpus(a, work):
    need_tools(a)
    corpus = os.path.join(a.srcdir, "gcov-corpus")
    fails, totals = [], [0, 0]
    # Plain and -Wall: at -O0 GCC's printf-warning pass (-Wformat, part of
    # -Wall) puts loops in normal form before --coverage reads the blocks,
    # and tally does the same then.
    for flags in ([], ["-Wall"]):
        for base in sorted(os.listdir(corpus)):
            if base.endswith((".c", ".cc")):
                compare_one(a, work, os.path.join(corpus, base), flags,
                            fails, totals)
    print("corpus: %d lines equal, %d not" % tuple(totals))
    expect(not fails, "\n".join(fails))


@case("always-inline")
def check_always_inline(a, work):
    """gcov-inline/always-inline.c: the lines where tally's counts
    (at=early, -O0) and gcov's differ, because GCC inlines always_inline
    functions at -O0 after tally's pass and before gcov's, are exactly the
    tagged ones, each as doc/plugin-options.md says; tally's count of each
    is what the program counted itself (its calls, its loop's N), and
    every other line is the same in both."""
    need_tools()
    src = os.path.join(a.srcdir, "gcov-inline", "always-inline.c")
    ginfo, gout = gcov_info(a, src, work)
    tinfo, tout, _ = tally_info(a, src, work)
    expect(gout == tout, "the two builds printed %r and %r" % (gout, tout))
    words = gout.split()
    got = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    n, calls = got["n"], {f: got[f] for f in ("bump", "pick", "scale")}
    own = os.path.normpath(src)
    gcov = {k[1]: c for k, c in lcovcmp.read_info(ginfo).items() if k[0] == own}
    tally = {k[1]: c for k, c in lcovcmp.read_info(tinfo).items() if k[0] == own}
    want = {}  # line: (gcov's count or None for no line, tally's)
    with open(src) as f:
        for no, text in enumerate(f, 1):
            if "/* DEF */" in text:
                want[no] = (None, calls[text.split()[0]])
            elif "/* CALL-ONLY */" in text:
                want[no] = (None, n)
            elif "/* CONST-SOME */" in text:
                # pick's test: one of its two calls a round passes mode 1.
                want[no] = (n, calls["pick"])
            elif "/* CONST-ALL */" in text:
                want[no] = (0, calls["scale"])
            elif "/* ARG-AND-RESULT */" in text:
                want[no] = (2 * n, n)
            elif "/* SHARED-BLOCK */" in text:
                # bump's copy at the CALL-ONLY line (n calls) is left out.
                want[no] = (calls["bump"] - n, calls["bump"])
    expect(len(want) == 8, "tags found on lines %s" % sorted(want))
    bad = []
    for no in sorted(set(gcov) | set(tally) | set(want)):
        g, t = gcov.get(no), tally.get(no)
        w = want.get(no, (t, t))
        if (g, t) != w:
            bad.append("line %d: gcov %s, tally %s; want gcov %s, tally %s%s"
                       % (no, g, t, w[0], w[1], "" if no in want else " (no tag: the same)"))
    expect(not bad, "\n".join(bad))


CDTOR_SRC = r"""
#include <stdio.h>
int used(int x) { return x + 1; }
int main(int argc, char **argv)
{
  (void) argv;
  printf("%d\n", used(argc));
  return 0;
}
int never(int x)
{
  return x * 2;
}
"""


@case("cdtors")
def check_cdtors(a, work):
    need_tools(a)
    src = write_file(os.path.join(work, "last.c"), CDTOR_SRC)
    last = CDTOR_SRC.count("\n")  # the closing brace of never()
    d = os.path.join(work, "both")
    os.makedirs(d)
    exe = os.path.join(d, "prog")
    data = os.path.join(d, "prog.data")
    p = run([a.cc, "-O0", "--coverage", "-fplugin=" + a.plugin,
             "-fplugin-arg-tally-at=early", "-fplugin-arg-tally-blocks=count",
             "-fplugin-arg-tally-verbose", src, "-o", exe, a.runtime], cwd=d)
    run([exe], env={"TALLY_OUTPUT": data}, cwd=d)
    rows = list(csv.DictReader(io.StringIO(
        run([a.tally, "report", "--csv", data]).stdout)))
    names = sorted(r["function"] for r in rows)
    expect(names == ["main", "never", "used"],
           "tally report lists %s, expected the source's functions main, "
           "never, used" % names)
    notes = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
    expect("'_sub_I_00100_0' not instrumented: made by the compiler" in notes,
           "no verbose note saying why --coverage's constructor is left "
           "alone:\n%s" % notes)
    info = os.path.join(work, "tally.info")
    run([a.tally, "lcov", "-o", info, data])
    counts = lcovcmp.read_info(info)
    got = counts.get((os.path.normpath(src), last))
    expect(not got, "line %d (the closing brace of never(), which never "
           "runs) shows %s runs" % (last, got))
    with open(info) as f:
        fns = [l.strip() for l in f if l.startswith("FN:")]
    expect(all("_sub_" not in l for l in fns),
           "the tracefile lists GCC's constructors: %s" % fns)


MARKERS_SRC = r"""#include <stdio.h>
#include <stdlib.h>
static int check(int x)
{
  if (x < 0) { /* LCOV_EXCL_BR_LINE */
    fprintf(stderr, "negative\n"); /* LCOV_EXCL_LINE */
    abort(); /* LCOV_EXCL_LINE */
  }
  return x * 2;
}
/* LCOV_EXCL_START */
static int debug_dump(int x)
{
  if (x > 100)
    return printf("big %d\n", x);
  return 0;
}
/* LCOV_EXCL_STOP */
int main(int argc, char **argv)
{
  int s = 0;
  (void) argv;
  for (int i = 0; i < 5; i++)
    s += check(i);
  // LCOV_EXCL_BR_START
  if (argc > 3)
    s += debug_dump(s);
  s = s > 1000 ? 1 : s;
  // LCOV_EXCL_BR_STOP
  printf("%d\n", s);
  return 0;
}
"""


def marked_lines(text):
    """(excluded lines, lines without branches) by lcov's rules, computed
    here from the text."""
    return marked(text, "LCOV_EXCL"), marked(text, "LCOV_EXCL_BR")


def marked(text, tag):
    """The lines TAG_LINE marks and those from a TAG_START to its TAG_STOP."""
    lines, inside = set(), False
    for n, line in enumerate(text.splitlines(), 1):
        if tag + "_STOP" in line:
            inside = False
        elif tag + "_START" in line:
            inside = True
        if tag + "_LINE" in line or inside:
            lines.add(n)
    return lines


def records(info, src):
    """{'DA': {line: count}, 'BRDA': set of lines, 'FN': set of names} of
    SRC's record in INFO."""
    out = {"DA": {}, "BRDA": set(), "FN": set()}
    cur = None
    with open(info) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("SF:"):
                cur = os.path.normpath(line[3:])
            elif cur != src:
                continue
            elif line.startswith("DA:"):
                n, c = line[3:].split(",")[:2]
                out["DA"][int(n)] = out["DA"].get(int(n), 0) + int(c)
            elif line.startswith("BRDA:"):
                out["BRDA"].add(int(line[5:].split(",")[0]))
            elif line.startswith("FN:"):
                out["FN"].add(line[3:].split(",", 1)[1])
    return out


@case("markers")
def check_markers(a, work):
    need_tools(a)
    src = write_file(os.path.join(work, "marked.c"), MARKERS_SRC)
    excl, nobr = marked_lines(MARKERS_SRC)
    expect(excl and nobr - excl, "the test source has no markers")
    w = os.path.join(work, "build")
    os.makedirs(w)
    ginfo, gout = gcov_info(a, src, w)
    _, tout, data = tally_info(a, src, w)
    expect(gout == tout, "outputs differ: %r %r" % (gout, tout))
    gd = os.path.join(w, "gcov")
    variants = {}
    for marks in (True, False):
        g = os.path.join(w, "gcov-%s.info" % marks)
        run(["lcov", "--quiet", "--capture", "--gcov-tool", gcov_of(a), "--directory", gd,
             *lcov_branches(), "--output-file", g]
            + ([] if marks else ["--no-markers"]))
        t = os.path.join(w, "tally-%s.info" % marks)
        run([a.tally, "lcov", "-o", t, data] + ([] if marks else ["--no-markers"]))
        variants[marks] = (records(g, src), records(t, src))
    gm, tm = variants[True]
    expect(tm["DA"] == gm["DA"], "with markers: tally's lines %s, lcov's %s"
           % (sorted(tm["DA"].items()), sorted(gm["DA"].items())))
    expect(not set(tm["DA"]) & excl, "tally counts excluded lines %s"
           % sorted(set(tm["DA"]) & excl))
    expect(not tm["BRDA"] & (excl | nobr), "tally lists branches on lines "
           "%s, which the markers exclude" % sorted(tm["BRDA"] & (excl | nobr)))
    expect(tm["BRDA"], "tally lists no branch at all (the loop's should stay)")
    expect("debug_dump" not in tm["FN"] and "check" in tm["FN"],
           "tally's functions with markers: %s (debug_dump starts in an "
           "excluded section)" % sorted(tm["FN"]))
    gn, tn = variants[False]
    expect(tn["DA"] == gn["DA"], "--no-markers: tally's lines %s, lcov's %s"
           % (sorted(tn["DA"].items()), sorted(gn["DA"].items())))
    expect(set(tn["DA"]) & excl and "debug_dump" in tn["FN"]
           and tn["BRDA"] & nobr,
           "--no-markers left out marked lines, functions or branches")


if __name__ == "__main__":
    sys.exit(main("tally-gcov-"))
