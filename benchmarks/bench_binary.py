"""benchmarks/bench_binary.py - the report sections of issue 30: tally next
to a static binary instrumenter (LLVM BOLT) in the seeds' terms, BOLT's
counts against tally's on one run (bolt_exact.py), and the counters
placed by a profile (profile=) against their targets."""

import json
import os
import statistics
import subprocess
import sys

from bench_common import HERE, log, ratio
from bench_events import CG_TALLY
from bench_runs import CG_BOLT, binary
from bench_setup import MODE, PROFILE_SOURCE

import bolt_exact

# The side-by-side table: (level, technique, modes), in the seeds' terms
# (LOPI's Table 2: source instrumentation, as calls and inlined, against
# binary rewriting and Dyninst; PEBIL's Figure 5: basic-block counting by
# static and dynamic binary instrumenters).
SIDE_BY_SIDE = [
    ("source", "tally, block counts (exact, guessed placement)", ["tally-blocks-count"]),
    ("source", "tally, block counts placed by a profile (own input / other input)",
     ["tally-blocks-count-prof", "tally-blocks-count-prof-other"]),
    ("source", "tally, visited blocks (guessed / profile own / other)",
     ["tally-blocks-visited", "tally-blocks-visited-prof", "tally-blocks-visited-prof-other"]),
    ("source", "tally, function entries inline / as calls", ["tally-inline", "tally-call"]),
    ("source", "gcov -fprofile-arcs (edge counters)", ["gcov"]),
    ("source", "clang inline 8-bit counters / -fprofile-instr-generate",
     ["clang-8bit", "clang-profile"]),
    ("source", "-finstrument-functions, empty / counting hooks", ["cyg-empty", "cyg-count"]),
    ("binary, static", "LLVM BOLT: rewrite only (PEBIL's Figure 4)", ["bolt-rewrite"]),
    ("binary, static", "LLVM BOLT -instrument (edge and call counters)", ["bolt-instrument"]),
    ("binary, static", "LLVM BOLT -instrument, other options",
     ["bolt-instrument-conservative", "bolt-instrument-nocalls", "bolt-instrument-sleep"]),
    ("binary, dynamic", "Valgrind: none / lackey (block and instruction counts)",
     ["valgrind-none", "valgrind-lackey"]),
]


def _ratios(ctx, wl, mode, key):
    """A mode's ratio to its own baseline for KEY (Ir, size) or the
    wall-clock median; None when not measured or not passed."""
    if not ctx.ok(wl.name, mode.name):
        return None
    r = ctx.results.get((wl.name, mode.name), {})
    if key == "wall":
        return r.get("wall_ratio")
    if mode.runner:
        return None
    return ratio(r.get(key), ctx.results.get((wl.name, mode.baseline), {}).get(key))


def _cell(x, digits=3):
    return "-" if x is None else "%.*f" % (digits, x)


def side_by_side(ctx, workloads, modes):
    """The 'source-level vs binary-level' table (markdown lines)."""
    have = {m.name for m in modes if m.name not in ctx.na}
    rows = [(lvl, what, [MODE[n] for n in names if n in have]) for lvl, what, names in SIDE_BY_SIDE]
    rows = [r for r in rows if r[2]]
    if not rows:
        return []
    md = ["## Source-level vs binary-level", "",
          "Each technique against the uninstrumented build of its own compiler and link "
          "(gcc modes ÷ `gcc`, clang modes ÷ `clang`, BOLT's ÷ `bolt`, the same sources built "
          "`-fno-pie -no-pie -Wl,--emit-relocs` for BOLT to rewrite): cachegrind instructions "
          "(Ir) on the `cg` input / paired wall clock on the wall input (Valgrind: the slow "
          "input), per workload; then the means over the workloads and the binary size.  "
          "`n/a`: the technique cannot run that workload (the reason is in its table above).", "",
          "| level | technique | mode | " + " | ".join("%s Ir / wall" % w.name for w in workloads) +
          " | mean Ir | mean wall | binary size |",
          "|---|---|---|" + "---:|" * (len(workloads) + 3)]
    for lvl, what, ms in rows:
        for m in ms:
            cells, irs, walls, sizes = [], [], [], []
            for w in workloads:
                st = ctx.status.get((w.name, m.name), "")
                if st.startswith("n/a"):
                    cells.append("n/a")
                    continue
                ir, wall = _ratios(ctx, w, m, "Ir"), _ratios(ctx, w, m, "wall")
                sz = _ratios(ctx, w, m, "size")
                cells.append("%s / %s" % (_cell(ir), _cell(wall, 2)))
                for v, acc in ((ir, irs), (wall, walls), (sz, sizes)):
                    if v is not None:
                        acc.append(v)
            mean = lambda v, d=3: _cell(statistics.mean(v), d) if v else "-"
            md.append("| %s | %s | `%s` | %s | %s | %s | %s |" % (
                lvl, what, m.name, " | ".join(cells), mean(irs), mean(walls, 2), mean(sizes, 2)))
    md.append("")
    bolt = [m for m in modes if m.bolt is not None and not m.is_baseline and m.name not in ctx.na]
    if bolt:
        md += ["BOLT's binaries, file sizes (the rewritten program keeps its input's code and "
               "adds its own, aligned to 2 MiB pages) and the rewrite's CPU seconds (in the "
               "compile time column of the workload tables):", "",
               "| mode | " + " | ".join(w.name for w in workloads) + " |",
               "|---|" + "---:|" * len(workloads)]
        for m in [MODE["bolt"]] + bolt:
            cells = []
            for w in workloads:
                r = ctx.results.get((w.name, m.name), {})
                st = ctx.status.get((w.name, m.name), "")
                cells.append("n/a" if st.startswith("n/a") else
                             ("%s KiB" % format(r["file_size"] // 1024, ",")) if r.get("file_size") else "-")
            md.append("| `%s` | %s |" % (m.name, " | ".join(cells)))
        md.append("")
    return md


WHY = {"cold": "in a function with a .cold part (BOLT skips it)",
       "noreturn": "in a function calling exit (BOLT's fall-through after it)",
       "cold caller": "called from one", "setjmp": "after setjmp",
       "call": "after a call", None: "unexplained"}


def bolt_exactness(ctx, workloads):
    """BOLT's counts against tally's, one process (bolt-on-tally's
    cachegrind runs): markdown lines; each result in ctx.results."""
    ms = [MODE[n] for n in ("bolt-on-tally", "bolt-on-tally-conservative")
          if n in MODE and n not in ctx.na and any(ctx.status.get((w.name, n)) for w in workloads)]
    if not ms:
        return []
    tool = os.path.join(ctx.tally, "build", "tools", "tally")
    md = ["## Exactness: BOLT's counts against tally's, one run", "",
          "The `bolt-on-tally` builds (tally `blocks=count`, linked for BOLT and rewritten with "
          "`llvm-bolt -instrument`, with BOLT's defaults and with `-conservative-instrumentation`) "
          "ran the `cg` input once under cachegrind: tally's data file and BOLT's profile are of "
          "the same process.  Each tally counter update is an instruction in a machine block of "
          "the program BOLT rewrote; the counter must equal the times BOLT says its blocks ran "
          "(times the amount added); each function's entries, tally's against the calls and "
          "jumps into it BOLT counted (`benchmarks/bolt_exact.py`).  A difference is *after a "
          "call* when a call precedes the update in BOLT's block (BOLT's blocks do not end at "
          "calls, tally's end after every call that may not return: after a call that did not "
          "return tally counts less), *after setjmp* when that call is setjmp (its second return "
          "arrives by longjmp, on no edge of BOLT's), *in a function with a .cold part* when GCC "
          "split the function (BOLT 19 does not instrument those in relocation mode: its log says "
          "\"skipped N functions due to cold fragments\"; their callees' entries from them are "
          "missing too), *in a function calling exit* when the function calls one that does not "
          "return (BOLT's CFG gives that call a fall-through successor, and its runtime infers "
          "counts through it: bolt/runtime/instr.cpp \"tolerate[s] this imperfection\"), and "
          "*unexplained* otherwise.", "",
          "| workload | BOLT mode | counters equal | not comparable (in a register) | function "
          "entries equal | differences | first ones |", "|---|---|---:|---:|---:|---|---|"]
    for w, m in [(w, m) for w in workloads for m in ms]:
        if not ctx.ok(w.name, m.name):
            md.append("| %s | `%s` | %s | | | | |" % (w.name, m.name,
                                                    ctx.status.get((w.name, m.name), "not run")))
            continue
        d = os.path.join(ctx.work, "scratch", w.name, m.name)
        fdata = sorted(os.path.join(d, CG_BOLT, f) for f in os.listdir(os.path.join(d, CG_BOLT)))
        try:
            res = bolt_exact.compare(binary(ctx, w, m.name) + ".pre-bolt",
                                     os.path.join(d, CG_TALLY), fdata, tool)
        except (OSError, subprocess.CalledProcessError, ValueError) as e:
            md.append("| %s | comparison failed: %s | | | |" % (w.name, e))
            continue
        ctx.results.setdefault((w.name, m.name), {})["exact"] = res
        kinds = ", ".join("%d %s" % (sum(1 for d in res["diffs"] if d["why"] == k), WHY[k])
                          for k in ("cold", "noreturn", "call", "setjmp", None)
                          if any(d["why"] == k for d in res["diffs"]))
        kinds += "".join(", entries: %d %s" % (sum(1 for d in res["entry_diffs"] if d["why"] == k),
                                               WHY[k])
                         for k in ("cold", "cold caller", None)
                         if any(d["why"] == k for d in res["entry_diffs"]))
        # The unexplained ones first, then one of each reason.
        first = sorted(res["diffs"], key=lambda x: x["why"] is not None)[:2]
        shown = ["%s[%d] tally %s BOLT %s (%s)" % (x["function"], x["counter"], format(x["tally"], ","),
                                                   format(x["bolt"], ","), WHY[x["why"]])
                 for x in first]
        shown += ["entries of %s tally %s BOLT %s (%s)" % (
            x["function"], format(x["tally"], ","), format(x["bolt"], ","), WHY[x["why"]])
            for x in sorted(res["entry_diffs"], key=lambda x: x["why"] is not None)[:2]]
        md.append("| %s | `%s` | %d of %d | %d | %d of %d | %s | %s |" % (
            w.name, m.name, res["equal"], res["counters"] - res["not_comparable"],
            res["not_comparable"], res["entries_equal"], res["entries"], kinds or "none",
            "; ".join(shown)))
    md.append("")
    return md


def _floor(ctx, data):
    """placement-floor.py's totals for DATA, or None."""
    tool = os.path.join(ctx.tally, "build", "tools", "tally")
    r = subprocess.run([sys.executable, os.path.join(HERE, "placement-floor.py"), "--json",
                        "--tally", tool, data], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode:
        log("placement-floor.py %s: %s" % (data, r.stderr.strip()[:200]))
        return None
    return json.loads(r.stdout)["total"]


def profile_targets(ctx, workloads, modes):
    """Issue 30's targets for profile=: blocks=count with a profile at most
    half of gcov's overhead, within 2% of the placement floor with the run's
    own profile, blocks=visited with a profile at most clang's 8-bit
    counters.  Markdown lines."""
    names = {m.name for m in modes if m.name not in ctx.na}
    if not names & {"tally-blocks-count-prof", "tally-blocks-count-prof-other",
                    "tally-blocks-visited-prof", "tally-blocks-visited-prof-other"}:
        return []
    res = ctx.results

    def ir(w, mode):
        if mode not in names or not ctx.ok(w.name, mode):
            return None
        return _ratios(ctx, w, MODE[mode], "Ir")

    md = ["## Counters placed by a profile (issue 30's targets)", "",
          "Ir ÷ the baseline on the `cg` input.  `-prof`: `profile=` the same build's data file of "
          "the `cg` input itself; `-prof-other`: of the workload's other input (%s).  Mark: half of "
          "gcov's overhead, 1 + (gcov − 1) / 2.  Floor: `placement-floor.py` on the `-prof` build's "
          "own data file, the fewest increments any spanning tree of the same graphs could "
          "execute with the true profile (`ours`: the increments it executed); Ir at the floor = "
          "(Ir − (ours − floor)) ÷ Ir(gcc)." % ", ".join(
              "%s: `%s`" % (w.name, w.describe_train(ctx)) for w in workloads), "",
          "| workload | gcov | mark | count | count-prof | count-prof-other | ≤ mark (prof / other) "
          "| increments ours / floor | Ir at the floor | within 2% |",
          "|---|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for w in workloads:
        g = ir(w, "gcov")
        mark = 1 + (g - 1) / 2 if g else None
        c, p, o = ir(w, "tally-blocks-count"), ir(w, "tally-blocks-count-prof"), \
            ir(w, "tally-blocks-count-prof-other")
        met = " / ".join("-" if x is None or mark is None else ("**yes**" if x <= mark else "no")
                         for x in (p, o))
        fl, within, at_floor = None, "-", "-"
        if p is not None:
            data = os.path.join(ctx.work, "scratch", w.name, "tally-blocks-count-prof", CG_TALLY)
            fl = _floor(ctx, data) if os.path.exists(data) else None
        if fl and fl["floor"]:
            gcc_ir = res.get((w.name, "gcc"), {}).get("Ir")
            pr_ir = res.get((w.name, "tally-blocks-count-prof"), {}).get("Ir")
            if gcc_ir and pr_ir:
                at_floor = "%.4f" % ((pr_ir - fl["gap"]) / gcc_ir)
            within = "**yes**" if fl["ours"] <= 1.02 * fl["floor"] else "no"
            res.setdefault((w.name, "tally-blocks-count-prof"), {})["floor"] = fl
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            w.name, _cell(g, 4), _cell(mark, 4), _cell(c, 4), _cell(p, 4), _cell(o, 4), met,
            "%s / %s (%.4f)" % (format(fl["ours"], ","), format(fl["floor"], ","),
                                fl["ours"] / fl["floor"]) if fl and fl["floor"] else "-",
            at_floor, within))
    md += ["", "| workload | clang-8bit | visited | visited-prof | visited-prof-other | ≤ clang-8bit "
           "(prof / other) |", "|---|---:|---:|---:|---:|---|"]
    for w in workloads:
        k = ir(w, "clang-8bit")
        v, p, o = ir(w, "tally-blocks-visited"), ir(w, "tally-blocks-visited-prof"), \
            ir(w, "tally-blocks-visited-prof-other")
        met = " / ".join("-" if x is None or k is None else ("**yes**" if x <= k else "no")
                         for x in (p, o))
        md.append("| %s | %s | %s | %s | %s | %s |" % (w.name, _cell(k, 4), _cell(v, 4),
                                                       _cell(p, 4), _cell(o, 4), met))
    md.append("")
    return md
