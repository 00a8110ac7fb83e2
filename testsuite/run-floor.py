#!/usr/bin/env python3
"""benchmarks/placement-floor.py (issue 16, target 1): the increments
blocks=count's placement executes against the least any spanning-tree
placement could execute with the true profile, checked on
testsuite/floor/floor.c, whose floors follow by hand from the source.

Checks (one per run, named on the command line):
  hand   -O0, -O1, -O2, -O3 and -Os, N = 1000 and 31: pick's floor is N
         (N calls through the arm __builtin_expect calls rare), walk's
         N + 1 (one call, N rounds of a branching loop); each body's `ours`
         is the sum of its counters in `tally dump` (and the total the sum
         of every body's), no floor above `ours`, gap = ours - floor.
  callers  -O2, callers/sites.c: kind 6 bodies (entries from the callers)
         are read, their entry edge known without a counter: `twice`, a
         leaf, has ours 0 and floor 0 (with entries=counted, floor = its
         200 calls), every body determined, its counters as many as the
         edges the floor's tree leaves off, no floor above ours.
  ir     --results: the Ir figures from a results.csv (gcc, tally-blocks-count
         and gcov rows of the workload): the ratio, the mark (half of gcov's
         overhead) and (Ir - gap) / Ir(gcc); gcov's ratio from
         --gcov-results against that file's own gcc row.

  compare  benchmarks/compare.py reads a kept report.md
         (doc/benchmarks/run-2026-11-23-1f22866.md) beside a results.csv:
         the report's Ir ratios (its baselines 1), "before → after" cells
         and the geomean over the workloads both have, "-" for a mode that
         failed in one run; a report asked for another metric is an error
         naming it, and so is a cell that is not a number (file, row and
         column, no traceback).

  choice   benchmarks/choice-bound.py on cachegrind files written here:
         per function the cheaper of the count and visited builds
         (functions told apart by file and name, the Ir column found by
         the events line, every step summed), tally's runtime at the
         cheaper build's total, over gcc's; the peer's ratio over its own
         baseline; a workload without files is an error naming it.

  summary  benchmarks/summary.py (doc/benchmarks.md's table, report.md's
         Summary) on a report written here: "Ir / wall" per workload, the
         geometric means over the workloads the mode passed ("(n=K)" when
         fewer), FAIL cells, slow-input wall marked, baselines left out,
         the run named from the header; --modes; a file without workload
         tables and an unknown mode are errors; the report's own Summary
         section (bench_report.py puts it first) is not read as a workload.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import json
import os
import re
import sys

from checklib import build, case, expect, main, run, run_data, tally_opts

LEVELS = ["-O0", "-O1", "-O2", "-O3", "-Os"]


def script(a):
    return os.path.join(os.path.dirname(a.srcdir), "benchmarks", "placement-floor.py")


def floor_json(a, data, *extra):
    out = run([sys.executable, script(a), "--tally", a.tally, "--json", *extra, data]).stdout
    return json.loads(out)


def counter_sums(a, data):
    """{symbol: sum of its counters after the first two} from tally dump."""
    sums = {}
    for m in re.finditer(r'  fn \d+ name="[^"]*" symbol="([^"]*)" .*counters=\d+:((?: \d+)*)\n',
                         run([a.tally, "dump", data]).stdout):
        sums[m.group(1)] = sums.get(m.group(1), 0) + sum(int(v) for v in m.group(2).split()[2:])
    return sums


def results_csv(work, name, rows, ratio=False):
    """WORK/NAME: a results.csv with benchmarks/run's columns (and Ir_ratio
    where RATIO) above ROWS, its text."""
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("workload,mode,baseline,status,Ir%s\n%s" % (",Ir_ratio" if ratio else "", rows))
    return path


def build_floor(a, work, opt):
    src = os.path.join(a.srcdir, "floor", "floor.c")
    return build(a, os.path.join(work, "floor" + opt), src, opt=opt,
                 flags=tally_opts("blocks=count", "hooks=inline"))


@case("hand")
def check_hand(a, work):
    for opt in LEVELS:
        exe = build_floor(a, work, opt)
        for n in (1000, 31):
            data = os.path.join(work, "floor%s.%d.data" % (opt, n))
            run_data(exe, data, [str(n)])
            res = floor_json(a, data)
            rows = {r["symbol"]: r for r in res["functions"]}
            where = "%s N=%d" % (opt, n)
            expect("pick" in rows and "walk" in rows, "%s: pick and walk not both reported: %s" % (where, sorted(rows)))
            expect(rows["pick"]["floor"] == n, "%s: pick's floor %d, by hand %d" % (where, rows["pick"]["floor"], n))
            expect(rows["walk"]["floor"] == n + 1, "%s: walk's floor %d, by hand %d" % (where, rows["walk"]["floor"], n + 1))
            sums = counter_sums(a, data)
            for sym, r in rows.items():
                expect(r["ours"] == sums[sym], "%s: %s: ours %d, its counters sum to %d" % (where, sym, r["ours"], sums[sym]))
                expect(r["floor"] <= r["ours"], "%s: %s: floor %d above ours %d" % (where, sym, r["floor"], r["ours"]))
                expect(r["gap"] == r["ours"] - r["floor"], "%s: %s: gap %d" % (where, sym, r["gap"]))
                expect(r["counters"] == r["floor_counters"], "%s: %s: %d counters, the floor's tree leaves %d edges off"
                       % (where, sym, r["counters"], r["floor_counters"]))
                expect(r["floor_split"] <= r["ours_split"], "%s: %s: split-cost floor above ours" % (where, sym))
            expect(res["total"]["ours"] == sum(sums.values()),
                   "%s: total ours %d, counters %d" % (where, res["total"]["ours"], sum(sums.values())))
            print("%s: pick ours %d floor %d; walk ours %d floor %d" % (
                where, rows["pick"]["ours"], rows["pick"]["floor"], rows["walk"]["ours"], rows["walk"]["floor"]))


@case("callers")
def check_callers(a, work):
    src = os.path.join(a.srcdir, "callers", "sites.c")
    got = {}
    for entries in ("callers", "counted"):
        exe = build(a, os.path.join(work, "sites-" + entries), src, opt="-O2",
                    flags=["-I" + a.include] + tally_opts("blocks=count", "entries=" + entries))
        data = os.path.join(work, "sites-%s.data" % entries)
        run_data(exe, data, ["100"])
        res = floor_json(a, data)
        expect(res["total"]["undetermined"] == 0, "entries=%s: %d bodies undetermined"
               % (entries, res["total"]["undetermined"]))
        rows = {r["symbol"]: r for r in res["functions"]}
        sums = counter_sums(a, data)
        for sym, r in rows.items():
            expect(r["ours"] == sums[sym], "entries=%s: %s: ours %d, its counters sum to %d"
                   % (entries, sym, r["ours"], sums[sym]))
            expect(r["floor"] <= r["ours"], "entries=%s: %s: floor %d above ours %d"
                   % (entries, sym, r["floor"], r["ours"]))
            expect(r["counters"] == r["floor_counters"], "entries=%s: %s: %d counters, the floor's "
                   "tree leaves %d edges off" % (entries, sym, r["counters"], r["floor_counters"]))
        got[entries] = rows
    kinds = [r["kind"] for r in got["callers"].values()]
    expect(kinds.count("tree-callers") >= 5, "kind 6 bodies: %d" % kinds.count("tree-callers"))
    twice = got["callers"].get("twice")
    expect(twice and twice["kind"] == "tree-callers" and twice["ours"] == 0 and twice["floor"] == 0,
           "twice with entries=callers: %r" % twice)
    twice = got["counted"].get("twice")
    expect(twice and twice["kind"] == "tree" and twice["floor"] == 200,
           "twice with entries=counted: %r (its 200 calls)" % twice)


@case("compare")
def check_compare(a, work):
    root = os.path.dirname(a.srcdir)
    report = os.path.join(root, "doc", "benchmarks", "run-2026-11-23-1f22866.md")
    tool = os.path.join(root, "benchmarks", "compare.py")
    after = results_csv(work, "after.csv", """\
micro,gcc,gcc,reference,140183358,1.0
micro,tally-blocks-count,gcc,same,137743534,0.9826
sqlite,gcc,gcc,reference,226935751,1.0
sqlite,tally-blocks-count,gcc,same,245882742,1.0835
sqlite,gcov,gcc,FAIL (output differs),1,1.5
""", ratio=True)
    out = run([sys.executable, tool, report, after]).stdout
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]]
            for l in out.splitlines() if l.startswith("| `")}
    # The report's micro and sqlite tables: tally-blocks-count 1.179 and
    # 1.282, gcc its baseline.
    expect(rows.get("`tally-blocks-count`") == ["1.179 → 0.983", "1.282 → 1.083", "1.229 → 1.032"],
           "tally-blocks-count: %s" % rows.get("`tally-blocks-count`"))
    expect(rows.get("`gcc`") == ["1.000 → 1.000"] * 3, "gcc: %s" % rows.get("`gcc`"))
    expect(rows.get("`gcov`", [""])[0] == "-",
           "gcov failed in the second run but shows %s" % rows.get("`gcov`"))
    r = run([sys.executable, tool, "--metric", "wall", report, after], check=False)
    expect(r.returncode != 0 and "Ir" in r.stderr and "run-2026-11-23-1f22866.md" in r.stderr,
           "--metric wall with a report: status %d, %s" % (r.returncode, r.stderr))
    # A cell that is not a number: one line naming the file, the row and
    # the column, no traceback.
    bad = results_csv(work, "bad.csv", """\
sqlite,gcc,gcc,reference,226935751,1.0
sqlite,tally-blocks-count,gcc,same,245882742,1.08x
""", ratio=True)
    r = run([sys.executable, tool, report, bad], check=False)
    expect(r.returncode != 0 and "bad.csv" in r.stderr and "tally-blocks-count" in r.stderr
           and "Ir_ratio" in r.stderr and "Traceback" not in r.stderr,
           "a malformed cell: status %d, %s" % (r.returncode, r.stderr))


@case("ir")
def check_ir(a, work):
    exe = build_floor(a, work, "-O2")
    data = os.path.join(work, "floor.data")
    run_data(exe, data, ["1000"])
    gap = floor_json(a, data)["total"]["gap"]
    csv_path = results_csv(work, "results.csv", """\
w,gcc,gcc,reference,1000000
w,tally-blocks-count,gcc,same,1100000
w,gcov,gcc,same,1300000
v,gcc,gcc,reference,5
""")
    ir = floor_json(a, data, "--results", csv_path, "--workload", "w")["ir"]
    expect(abs(ir["ratio"] - 1.1) < 1e-12, "ratio %r, not 1.1" % ir["ratio"])
    expect(abs(ir["mark"] - 1.15) < 1e-12, "mark %r, not 1.15 (half of gcov's 0.3)" % ir["mark"])
    want = (1100000 - gap) / 1000000
    expect(abs(ir["ratio_at_floor"] - want) < 1e-12, "ratio at the floor %r, not %r" % (ir["ratio_at_floor"], want))
    # gcov from another run: its ratio against that run's own gcc row.
    other = results_csv(work, "other.csv", """\
w,gcc,gcc,reference,2000000
w,gcov,gcc,same,2400000
""")
    mine = results_csv(work, "mine.csv", """\
w,gcc,gcc,reference,1000000
w,tally-blocks-count,gcc,same,1100000
""")
    ir = floor_json(a, data, "--results", mine, "--gcov-results", other, "--workload", "w")["ir"]
    expect(abs(ir["mark"] - 1.1) < 1e-12, "mark %r with gcov's ratio 1.2 from --gcov-results, not 1.1" % ir["mark"])


def write_cg(path, events, rows):
    """A cachegrind output file: ROWS of (file, function, [costs])."""
    with open(path, "w") as f:
        f.write("desc: test\ncmd: x\nevents: %s\n" % events)
        for fl, fn, costs in rows:
            f.write("fl=%s\nfn=%s\n1 %s\n" % (fl, fn, " ".join(str(c) for c in costs)))


@case("choice")
def check_choice(a, work):
    root = os.path.dirname(a.srcdir)
    tool = os.path.join(root, "benchmarks", "choice-bound.py")
    cg = os.path.join(work, "run", "cg", "w")
    os.makedirs(cg)
    # Two functions named f in two files: each takes its own cheaper side.
    write_cg(os.path.join(cg, "gcc.step0.cg"), "Ir", [("a.c", "f", [600]), ("b.c", "f", [300])])
    write_cg(os.path.join(cg, "gcc.step1.cg"), "Ir", [("a.c", "f", [100])])
    write_cg(os.path.join(cg, "tally-blocks-count.step0.cg"), "Ir Bc",
             [("a.c", "f", [700, 1]), ("b.c", "f", [310, 1]), ("/x/rt/dump.c", "d", [40, 1])])
    write_cg(os.path.join(cg, "tally-blocks-count.step1.cg"), "Ir Bc",
             [("a.c", "f", [100, 1])])
    write_cg(os.path.join(cg, "tally-blocks-visited.step0.cg"), "Bc Ir",
             [("a.c", "f", [1, 720]), ("b.c", "f", [1, 305]), ("/x/rt/dump.c", "d", [1, 20]),
              ("/x/rt/mapblob.c", "p", [1, 10])])
    write_cg(os.path.join(cg, "tally-blocks-visited.step1.cg"), "Bc Ir",
             [("a.c", "f", [1, 100])])
    write_cg(os.path.join(cg, "clang.step0.cg"), "Ir", [("a.c", "f", [1000])])
    write_cg(os.path.join(cg, "clang-8bit.step0.cg"), "Ir", [("a.c", "f", [1100])])
    out = json.loads(run([sys.executable, tool, "--json", work, "w"]).stdout)[0]
    # count 700+100+310+40 = 1150, visited 720+100+305+30 = 1155 over 1000;
    # chosen: a.c f from count (800 < 820), b.c f from visited (305),
    # the runtime visited's 30 (< 40).
    expect(out["gcc"] == 1000, "gcc total %r, not 1000" % out["gcc"])
    expect(abs(out["tally-blocks-count"] - 1.15) < 1e-12, "count %r" % out["tally-blocks-count"])
    expect(abs(out["tally-blocks-visited"] - 1.155) < 1e-12, "visited %r" % out["tally-blocks-visited"])
    expect(abs(out["chosen"] - 1.135) < 1e-12, "chosen %r, not 1.135" % out["chosen"])
    expect(out["functions_tally-blocks-count"] == 1, "count chosen for %r functions, not 1"
           % out["functions_tally-blocks-count"])
    expect(abs(out["clang-8bit"] - 1.1) < 1e-12, "peer %r, not 1.1" % out["clang-8bit"])
    table = run([sys.executable, tool, work, "w"]).stdout
    expect("| w | 1.1500 | 1.1550 | 1.1350 | 1.1000 |" in table, "table:\n%s" % table)
    r = run([sys.executable, tool, work, "none"], check=False)
    expect(r.returncode != 0 and "none" in r.stderr, "missing workload: status %d, %s"
           % (r.returncode, r.stderr))


SUMMARY_HEAD = """# Overhead comparison (benchmarks/run)

- date: 2026-01-02 03:04 UTC; full run, 5 wall-clock pairs per mode
- tally: abc1234 (/work/x)
"""
SUMMARY_WORKLOAD = """
## %s

| mode | wall ÷ base (median, min–max of pairs) | instructions | branches | mispredicts | D1 refs | D1 misses | I1 misses | LL misses | binary size | compile time | output |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
| `gcc` uninstrumented gcc -O2 | 0.500 s (1.000) | 1,000,000 | 1 | 1 | 1 | 1 | 1 | 1 | 2 KiB | 0.1 s | reference |
| `tally-inline` entry/exit counters inline | %s | %s | 1 | 1 | 1 | 1 | 1 | 1 | %s | 1.00 | same |
| `tally-x` a mode that fails | %s | %s | 1 | 1 | 1 | 1 | 1 | 1 | 2.00 | 1.00 | %s |
| `uftrace` uftrace record | %s slow input | - | - | - | - | - | - | - | - | - | same |
"""


@case("summary")
def check_summary(a, work):
    root = os.path.dirname(a.srcdir)
    tool = os.path.join(root, "benchmarks", "summary.py")
    report = os.path.join(work, "report.md")
    # tally-inline: Ir 1.100 and 1.210 (geomean 1.1537), wall 1.00 and
    # 4.00 (2.00), size 2.00 and 8.00 (4.00); tally-x fails on w2.
    with open(report, "w") as f:
        f.write(SUMMARY_HEAD
                + SUMMARY_WORKLOAD % ("w1", "1.00 (0.90–1.10)", "1.100", "2.00",
                                      "1.50 (1.4–1.6)", "1.500", "same", "10.00 (9–11)")
                + SUMMARY_WORKLOAD % ("w2", "4.00 (3.00–5.00)", "1.210", "8.00",
                                      "-", "-", "FAIL: build failed", "40.00 (39–41)"))
    out = run([sys.executable, tool, report]).stdout
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[3:-1]]
            for l in out.splitlines() if l.startswith("| `")}
    expect("2026-01-02 03:04 UTC" in out and "tally abc1234" in out, "run not named:\n%s" % out)
    expect("`gcc`" not in rows, "the baseline has a row:\n%s" % out)
    expect(rows.get("`tally-inline`") == ["1.100 / 1.00", "1.210 / 4.00", "1.154", "2.00", "4.00"],
           "tally-inline: %s" % rows.get("`tally-inline`"))
    expect(rows.get("`tally-x`") == ["1.500 / 1.50", "FAIL", "1.500 (n=1)", "1.50 (n=1)", "2.00 (n=1)"],
           "tally-x: %s" % rows.get("`tally-x`"))
    expect(rows.get("`uftrace`") == ["- / 10.00†", "- / 40.00†", "-", "20.00", "-"],
           "uftrace: %s" % rows.get("`uftrace`"))
    expect("†: on the small `slow` input" in out, "no note for the slow input:\n%s" % out)
    only = run([sys.executable, tool, "--modes", "uftrace", report]).stdout
    expect("`uftrace`" in only and "`tally-inline`" not in only, "--modes uftrace:\n%s" % only)
    # A report with its own Summary first reads the same.
    with open(report) as f:
        lines = f.read().splitlines()
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    import summary
    first = next(i for i, l in enumerate(lines) if l.startswith("## "))
    section = summary.report_section(lines)
    expect(section[:1] == ["## Summary"], "report section: %s" % section[:3])
    with open(report, "w") as f:
        f.write("\n".join(lines[:first] + section + lines[first:]))
    again = run([sys.executable, tool, report]).stdout
    expect(again == out, "with its Summary section the report reads otherwise:\n%s" % again)
    for args, what in ((["--modes", "nosuch", report], "nosuch"),
                       ([os.path.join(root, "doc", "testing.md")], "no workload table")):
        r = run([sys.executable, tool] + args, check=False)
        expect(r.returncode != 0 and what in r.stderr and "Traceback" not in r.stderr,
               "%s: status %d, %s" % (" ".join(args), r.returncode, r.stderr))


if __name__ == "__main__":
    sys.exit(main("tally-floor-"))
