#!/usr/bin/env python3
"""blocks=visited with bytes on edges (issue 16 target 2): where the
neighbours of a hot block do not tell whether it ran, plugin/blocks.cc's
derive_visited stores a byte on the cold edge that makes the difference,
and the block's value comes from its neighbours and those edges
(doc/data-format.md "The block map", kind 5), on testsuite/visited3/edges.c
(an interpreter loop's latch reached from its cases and from a test's
branch; a hash chain's lookup).

Checks (one per run, named on the command line):
  exact     -O0, -O1, -O2, -O3 and -Os, and -O2 with counters=mapped: every
            block blocks=visited reports as run is one placement=block
            counts above 0, the others 0, for normal returns, a longjmp out
            of the loop, exit() in a callee, tally_dump() mid-loop followed
            by _exit, the loop left by a goto; and a merge (%m) of three
            runs with different inputs marks the union of what placement=block
            counts in the three.
  latch     x86-64, -O2, valgrind: the interpreter's loop, 300 iterations
            through one case, executes at most one visited store an
            iteration (the case's; main: the case's and the latch's), and
            its map has edges with values (kind 5).
  bad-maps  a kind-5 map with a value on a fake edge, on an edge into EXIT,
            on an edge no derived block's value comes through, is refused
            by tally report with a message saying
            which; a kind-5 map still says when a block is derived from
            itself through edges without values; each is refused in a
            version 2 map too, and the runtime's %m moves such a file
            aside with "corrupt block map" and writes this run's counts
            alone.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import importlib.util
import os
import platform
import re
import shutil
import struct
import sys

from checklib import (CYCLE, block_counts, block_report, callgrind_executed, case,
                      damage_first_map, derive_cycle, disasm_function, expect, main, run,
                      Skip, tally_opts)

LEVELS = ["O0", "O1", "O2", "O3", "Os"]
INPUTS = [["0", "10"], ["1", "30"], ["2", "5"], ["3", "20"], ["4", "40"],
          ["5", "20"], ["6", "40"], ["0", "0"], ["1", "200"]]


def load(name, file):
    here = os.path.dirname(os.path.abspath(__file__))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, os.path.join(here, file)))
    mod.__spec__.loader.exec_module(mod)
    return mod






def source(a):
    return os.path.join(a.srcdir, "visited3", "edges.c")


def build(a, work, name, opt, opts):
    exe = os.path.join(work, name)
    run([a.cc, "-" + opt, "-fplugin=" + a.plugin, "-I", a.include,
         *tally_opts(*opts), source(a), "-o", exe, a.runtime])
    return exe


def ran(a, exe, work, args):
    return {s: [c is not None and c > 0 for c in cs]
            for s, cs in block_counts(a, exe, work, args).items()}


def compare(a, work, opt, opts, inputs):
    tag = opt + "-" + "-".join(o.replace("=", "") for o in opts)
    ref = build(a, work, "block-" + opt, opt, ["blocks=count", "placement=block"])
    vis = build(a, work, "visited-" + tag, opt, ["blocks=visited", *opts])
    for args in inputs:
        want, got = ran(a, ref, work, args), ran(a, vis, work, args)
        what = "edges.c -%s %s %s" % (opt, " ".join(opts), " ".join(args))
        expect(set(got) == set(want), "%s: functions %s, placement=block has %s"
               % (what, sorted(got), sorted(want)))
        for sym in sorted(want):
            expect(got[sym] == want[sym], "%s: %s visited %s, placement=block "
                   "counts above 0 %s" % (what, sym, got[sym], want[sym]))
    return ref, vis


@case("exact")
def check_exact(a, work):
    for opt in LEVELS:
        compare(a, work, opt, [], INPUTS)
    compare(a, work, "O2", ["counters=mapped"], INPUTS)
    # %m merges the runs' bytes; the union is what the three ran.
    ref, vis = compare(a, work, "O3", [], [])
    runs = [["1", "30"], ["6", "40"], ["3", "20"]]
    merged = os.path.join(work, "merged.data")
    for args in runs:
        run([vis, *args], env={"TALLY_OUTPUT": os.path.join(work, "merged%m.data")})
    got = None
    for name in os.listdir(work):
        if name.startswith("merged") and name.endswith(".data") and name != "merged.data":
            shutil.move(os.path.join(work, name), merged)
    got = {sym: [b.get("count") is not None and b.get("count") > 0 for b in blocks]
           for sym, blocks in block_report(a.tally, merged).items()}
    want = {}
    for args in runs:
        for s, r in ran(a, ref, work, args).items():
            want[s] = [x or y for x, y in zip(want.get(s, r), r)]
    for sym in sorted(want):
        expect(got.get(sym) == want[sym], "merged (%%m) runs: %s visited %s, "
               "placement=block's union %s" % (sym, got.get(sym), want[sym]))


def store_addresses(exe, func):
    return {int(x.group(1), 16) for x in
            (re.match(r"\s*([0-9a-f]+):.*<__tally\.v\.", l)
             for l in disasm_function(exe, func, clones=True)) if x}


@case("latch")
def check_latch(a, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    if not shutil.which("valgrind"):
        raise Skip("(needs valgrind)")
    exe = build(a, work, "visited-latch", "O2", ["blocks=visited"])
    n = 300
    profile = os.path.join(work, "callgrind.out")
    run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
         "--callgrind-out-file=" + profile, exe, "2", str(n)],
        env={"TALLY_OUTPUT": os.path.join(work, "latch.data")})
    addrs = store_addresses(exe, "interp")
    got = sum(callgrind_executed(profile, addrs).values())
    # Mode 2 runs n iterations through case 0 (n capped at 256 by the
    # program): the case's byte each time, the latch's none; a few more
    # outside the loop.
    iters = min(n, 256)
    expect(got <= iters + 8, "interp executes %d visited stores for %d "
           "iterations through one case, want at most %d (the case's byte; "
           "the latch derived from the cases and the test's edge)"
           % (got, iters, iters + 8))
    kinds = edge_values(a, os.path.join(work, "latch.data"))
    expect(any(k.startswith("interp") and v for k, v in kinds.items()),
           "interp's map has no edge with a visited value: %s" % kinds)


def edge_values(a, data):
    """{symbol: number of edges with a value} of the visited maps in DATA."""
    out, sym = {}, None
    for line in run([a.tally, "dump", data]).stdout.splitlines():
        f = re.match(r"\s*fn \d+ .*symbol=\"([^\"]*)\"", line)
        if f:
            sym = f.group(1)
            out[sym] = 0
        if sym and re.match(r"\s*edge \d+ \d+->\d+ flags=0x[0-9a-f]+ value=\d+", line):
            out[sym] += 1
    return out


def damage(d, how):
    """D with its first kind-5 map (version 1) damaged as HOW says, or None:
    "cycle" as derive_cycle does it; otherwise the first edge HOW names
    given the value of the map's first edge with one."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]

    def change(kind, blks, edges, put):
        if how == "cycle":
            return derive_cycle(blks, edges, put)
        derived = {b for b in range(2, len(blks)) if u32(blks[b][1]) & 6}
        pick = {"fake": lambda s, t, f: f & 1,
                "exit": lambda s, t, f: t == 1 and not f & 1,
                "unused": lambda s, t, f: (not f & 1 and s >= 2 and t >= 2 and
                                           s not in derived and t not in derived)}[how]
        which = [i for i, (s, t, f, _) in enumerate(edges) if pick(s, t, f)]
        values = [e[3] for e in edges if e[3] != 0xffffffff]
        if not which or not values:
            return False
        # Edge i's (src, dst, flags, value) after the last block's lines.
        first = blks[-1][0] + 12 + 8 * u32(blks[-1][0] + 8)
        put(first + 16 * which[0] + 12, values[0])
        return True
    return damage_first_map(d, (5,), change)


BAD = {
    "fake": r"edge \d+ \(block \d+ to \d+\): a fake edge has a visited value",
    "exit": r"edge \d+ \(block \d+ to 1\): an edge from ENTRY or to EXIT has a visited value",
    "unused": r"edge \d+ \(block \d+ to \d+\): has a visited value no derived block's value comes through",
    "cycle": CYCLE,
}


@case("bad-maps")
def check_bad_maps(a, work):
    exe = build(a, work, "visited-bad", "O2", ["blocks=visited"])
    good_path = os.path.join(work, "good.data")
    run([exe, "1", "30"], env={"TALLY_OUTPUT": good_path})
    good = mapsize.v1_file(open(good_path, "rb").read())
    v1 = os.path.join(work, "good-v1.data")
    open(v1, "wb").write(good)
    run([a.tally, "report", v1])
    mapsize.refused_both_versions(a, work, exe, ["1", "30"], good, BAD, damage,
                                  "kind-5 map")


mapsize = load("mapsize", "run-mapsize.py")

if __name__ == "__main__":
    sys.exit(main("tally-visited3-"))
