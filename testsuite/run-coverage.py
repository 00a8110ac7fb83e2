#!/usr/bin/env python3
"""Block counts and line coverage of one testsuite program, checked against
gcov and against tally's other block modes.

For PROG, at -O0, -O2 and -O3, with at=early and at=late, it builds:
  tree     blocks=count placement=tree  hooks=inline (entries derived)
  block    blocks=count placement=block hooks=inline
  call     blocks=count placement=tree  hooks=call   (entries counted)
  call-tls blocks=count placement=tree  hooks=call update=tls (the
           program's own update mode replaced)
  visited  blocks=visited               hooks=inline
and with gcc --coverage (the oracle), runs them all the way run-case.py runs
the program, and checks:
  1. -O0: the line counts of `tally report --lines` from tree and from
     block equal gcov's (gcov -j -t) on every line gcov reports, except in
     functions tally does not instrument (no_instrument_function).  -O2 and
     -O3: the differences are printed with their reason, not failed.
  2. Every level: tree and block give the same count for every block of
     every function (same source, same block numbering), and so do call
     and call-tls.
  3. Every level: the entries and exits tree derives from its block counts
     equal those call counted at run time.
  4. Every level: the blocks visited marks as run are exactly the blocks
     with a count above 0 in tree (visited splits blocks as count does).
  5. `tally lcov` of tree is read by `lcov --summary` and rendered by
     genhtml (with branch data) without an error.
  6. Every level: `tally lcov` of tree and of block are the same (every
     line and every branch known, with the same counts): block counts its
     blocks and the edges they leave undetermined.

Known differences that are plugin problems (not the reader's) are listed in
KNOWN with their reason; they are printed, and a known difference that no
longer happens fails the check, so that the list cannot go stale.

Exit status: 0 pass, 1 fail, 77 skipped (gcov or lcov missing).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

from checklib import Failure, gcov_of, lcov_branches, run

SKIP = 77

# Plugin problems reported to the plugin's owner, as (program, level, at,
# check, line or symbol, reason); None matches anything.
SETJMP = ("the line of a setjmp call also holds the test of its result, "
          "which runs again at each longjmp; gcov's flow graph cannot "
          "represent the second return (gcc/profile.cc: 'functions returning "
          "multiple times are not handled') and counts the line once, tally "
          "counts the second return into the block after the call")
KNOWN = [
    ("longjmp.c", "O0", None, "tree-line", 26, SETJMP),
    ("longjmp.c", "O0", None, "block-line", 26, SETJMP),
    ("returns.c", "O0", "late", "tree-line", None,
     "at=late the case labels (lines 12, 14, 16, 20) have no statement left "
     "with their location, so no block records those lines"),
    ("returns.c", "O0", "late", "block-line", None,
     "at=late the case labels have no statement left with their location"),
]


def tally_json(tally, data, *extra):
    return json.loads(run([tally, "report", "--json", "--clones", *extra,
                           data]).stdout)


def blocks_of(j):
    """{symbol: {block: count}} of report --json --blocks output."""
    res = {}
    for f in j["functions"]:
        for body in f.get("blocks", []):
            res[body["symbol"]] = {b["block"]: b["count"] for b in body["blocks"]}
    return res


def gcov_lines(gcov, work, gcda, prog):
    """({line: count}, [(name, start, end)]) of PROG from gcov's JSON
    (GCOV: the gcov of the compiler that built it)."""
    out = run([gcov, "-j", "-t", gcda], cwd=work).stdout
    lines, fns = {}, []
    for doc in out.splitlines():
        if not doc.strip():
            continue
        for f in json.loads(doc)["files"]:
            if os.path.basename(f["file"]) != os.path.basename(prog):
                continue
            for l in f["lines"]:
                # Functions sharing a first line are listed apart; gcov's
                # text output sums them.
                n = l["line_number"]
                lines[n] = lines.get(n, 0) + l["count"]
            for fn in f["functions"]:
                fns.append((fn["name"], fn["start_line"], fn["end_line"]))
    return lines, fns


class Problems:
    """Failures and notes of one program, with the KNOWN list applied."""

    def __init__(self, prog):
        self.prog = prog
        self.fails, self.notes, self.known_seen = [], [], set()

    def fail(self, key, msg):
        k = (self.prog,) + key
        for i, known in enumerate(KNOWN):
            if all(want is None or want == got for want, got in zip(known[:5], k)):
                self.known_seen.add(i)
                self.notes.append("known plugin problem: %s (%s)" % (msg, known[5]))
                return
        self.fails.append(msg)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("prog", "plugin", "runtime", "tally"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    args = ap.parse_args()
    for tool in (gcov_of(args), "lcov", "genhtml"):
        if not shutil.which(tool):
            print("skipped: coverage (%s not installed)" % tool)
            return SKIP

    prog = os.path.abspath(args.prog)
    name = os.path.basename(prog)
    base = os.path.splitext(prog)[0]
    compiler = args.cxx if prog.endswith(".cc") else args.cc
    extra, plugin_extra = [], []
    if os.path.exists(base + ".flags"):
        for flag in open(base + ".flags").read().split():
            (plugin_extra if flag.startswith("-fplugin-arg-") else extra).append(flag)
    # The update mode is the program's (threads.c needs atomic); the block
    # mode and placement are this test's.
    plugin_extra = [f for f in plugin_extra
                    if not f.startswith(("-fplugin-arg-tally-blocks=",
                                         "-fplugin-arg-tally-placement="))]
    builds = {
        "tree": ["blocks=count", "placement=tree", "hooks=inline"],
        "block": ["blocks=count", "placement=block", "hooks=inline"],
        "call": ["blocks=count", "placement=tree", "hooks=call"],
        "call-tls": ["blocks=count", "placement=tree", "hooks=call", "update=tls"],
        "visited": ["blocks=visited", "hooks=inline"],
    }
    p = Problems(name)
    work = tempfile.mkdtemp(prefix="tally-cov-")
    try:
        plain = os.path.join(work, "plain")
        run([compiler, "-O0", prog, "-o", plain] + extra)
        reference = run([plain]).stdout
        for opt in ("O0", "O2", "O3"):
            gdir = os.path.join(work, "gcov-" + opt)
            os.mkdir(gdir)
            run([compiler, "-" + opt, "--coverage", prog, "-o",
                 os.path.join(gdir, "prog")] + extra, cwd=gdir)
            run([os.path.join(gdir, "prog")], cwd=gdir)
            gcda = [f for f in os.listdir(gdir) if f.endswith(".gcda")]
            if len(gcda) != 1:
                raise Failure("gcov build at -%s wrote %s" % (opt, gcda))
            glines, gfns = gcov_lines(gcov_of(args), gdir, gcda[0], prog)
            for at in ("early", "late"):
                cfg = "-%s at=%s" % (opt, at)
                data, js = {}, {}
                for kind, opts in builds.items():
                    exe = os.path.join(work, "%s-%s-%s" % (kind, opt, at))
                    own = [f for f in plugin_extra
                           if not (kind == "call-tls"
                                   and f.startswith("-fplugin-arg-tally-update="))]
                    run([compiler, "-" + opt, "-fplugin=" + args.plugin,
                         "-fplugin-arg-tally-at=" + at]
                        + ["-fplugin-arg-tally-" + o for o in opts]
                        + own + extra + [prog, "-o", exe, args.runtime])
                    data[kind] = exe + ".data"
                    out = run([exe], env={"TALLY_OUTPUT": data[kind]}).stdout
                    if out != reference:
                        raise Failure("%s %s changed the program's output" % (kind, cfg))
                    js[kind] = tally_json(args.tally, data[kind], "--blocks",
                                          "--lines", prog)

                # 2. Block counts: tree = block = call = call-tls.
                tb = blocks_of(js["tree"])
                for other in ("block", "call", "call-tls"):
                    ob = blocks_of(js[other])
                    if set(ob) != set(tb):
                        p.fail((opt, at, other, "functions"),
                               "%s: %s has functions %s, tree %s"
                               % (cfg, other, sorted(ob), sorted(tb)))
                    for sym in sorted(set(ob) & set(tb)):
                        if ob[sym] != tb[sym]:
                            diff = ["%s: tree %s, %s %s" % (k, tb[sym].get(k), other, ob[sym].get(k))
                                    for k in sorted(set(tb[sym]) | set(ob[sym]))
                                    if tb[sym].get(k) != ob[sym].get(k)]
                            p.fail((opt, at, other, sym),
                                   "%s: block counts of %s differ, block %s"
                                   % (cfg, sym, "; ".join(diff)))

                # 3. Derived entries and exits = counted ones.
                counted = {f["symbol"]: (f["calls"], f["exits"])
                           for f in js["call"]["functions"]}
                for kind in ("tree", "block"):
                    for f in js[kind]["functions"]:
                        got = (f["calls"], f["exits"])
                        want = counted.get(f["symbol"])
                        if got != want:
                            p.fail((opt, at, kind + "-entries", f["symbol"]),
                                   "%s: %s derives (entries, exits) %s for %s, "
                                   "hooks=call counted %s"
                                   % (cfg, kind, got, f["symbol"], want))

                # 4. Visited blocks = blocks that ran (visited splits its
                # blocks as count does, so the numbering is the same).
                vb = blocks_of(js["visited"])
                if set(vb) != set(tb):
                    p.fail((opt, at, "visited", "functions"),
                           "%s: visited has functions %s, tree %s"
                           % (cfg, sorted(vb), sorted(tb)))
                for sym in sorted(set(vb) & set(tb)):
                    ran = {k: int(c > 0) for k, c in tb[sym].items()}
                    if vb[sym] != ran:
                        diff = ["%s: visited %s, tree count %s" % (k, vb[sym].get(k), tb[sym].get(k))
                                for k in sorted(set(ran) | set(vb[sym]))
                                if vb[sym].get(k) != ran.get(k)]
                        p.fail((opt, at, "visited", sym),
                               "%s: visited blocks of %s differ from the blocks "
                               "that ran: %s" % (cfg, sym, "; ".join(diff)))

                # 1. Line counts against gcov.
                instrumented = set(tb)
                skipped = set()
                for fname, start, end in gfns:
                    if fname not in instrumented:
                        skipped |= set(range(start, end + 1))
                for kind in ("tree", "block"):
                    srcs = js[kind].get("sources", [])
                    # An undetermined count (placement=block) is "?".
                    tlines = {l["line"]: "?" if l["count"] is None else l["count"]
                              for s in srcs for l in s["lines"]}
                    diff = []
                    for ln in sorted(glines):
                        if ln in skipped:
                            continue
                        if tlines.get(ln) != glines[ln]:
                            diff.append((ln, glines[ln], tlines.get(ln)))
                    extra_lines = sorted(set(tlines) - set(glines) - skipped)
                    if opt == "O0":
                        for ln, g, t in diff:
                            p.fail((opt, at, kind + "-line", ln),
                                   "%s: %s: line %d: gcov %s, tally %s"
                                   % (cfg, kind, ln, g, t))
                        if extra_lines:
                            p.notes.append("%s: %s: lines only tally reports "
                                           "(functions gcov leaves out, e.g. "
                                           "implicit C++ members): %s"
                                           % (cfg, kind, extra_lines))
                    elif diff or extra_lines:
                        missing = [d[0] for d in diff if d[2] is None]
                        other = ["%d (gcov %s, tally %s)" % d for d in diff if d[2] is not None]
                        p.notes.append(
                            "%s: %s: %d of %d lines differ from gcov's (not a "
                            "failure: gcov instruments before inlining and "
                            "optimisation, tally at=%s %s). Only gcov: %s. "
                            "Only tally: %s. Other counts: %s"
                            % (cfg, kind, len(diff) + len(extra_lines), len(glines), at,
                               "after early inlining and cleanups" if at == "early"
                               else "on the optimised CFG, where lines merge, move "
                               "or vanish", missing or "none", extra_lines or "none",
                               ", ".join(other) or "none"))

                # 6. lcov of tree = lcov of block.
                lcov = {}
                for kind in ("tree", "block"):
                    r = run([args.tally, "lcov", data[kind]])
                    lcov[kind] = [l for l in r.stdout.splitlines()
                                  if l.startswith(("DA:", "BRDA:", "FNDA:", "LF:", "BRF:"))]
                    if r.stderr:
                        p.fail((opt, at, kind + "-lcov", None),
                               "%s: tally lcov of %s: %s" % (cfg, kind, r.stderr.strip()))
                if lcov["tree"] != lcov["block"]:
                    t, b = set(lcov["tree"]), set(lcov["block"])
                    p.fail((opt, at, "block-lcov", None),
                           "%s: tally lcov of block differs from tree: only tree %s; "
                           "only block %s" % (cfg, sorted(t - b)[:12], sorted(b - t)[:12]))

                # 5. lcov and genhtml read the tracefile.
                if opt == "O0" and at == "early":
                    info = os.path.join(work, "tree.info")
                    run([args.tally, "lcov", "-o", info, data["tree"]])
                    s = run(["lcov", "--summary", info] + lcov_branches())
                    if "lines......" not in s.stdout + s.stderr:
                        raise Failure("lcov --summary did not read %s:\n%s%s"
                                      % (info, s.stdout, s.stderr))
                    html = os.path.join(work, "html")
                    g = run(["genhtml", "--branch-coverage", info, "-o", html])
                    if "ERROR" in g.stdout + g.stderr or not os.path.exists(
                            os.path.join(html, "index.html")):
                        raise Failure("genhtml failed on %s:\n%s%s"
                                      % (info, g.stdout, g.stderr))
        for i, k in enumerate(KNOWN):
            if k[0] == name and i not in p.known_seen:
                p.fails.append("known difference %s no longer happens: remove "
                               "it from KNOWN" % (k[:5],))
        for n in p.notes:
            print("note:", n)
        if p.fails:
            print("FAIL: %s\n  %s" % (name, "\n  ".join(p.fails)))
            return 1
        print("ok: %s" % name)
        return 0
    except Failure as e:
        print("FAIL: %s\n%s" % (name, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
