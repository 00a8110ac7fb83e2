#!/usr/bin/env python3
"""blocks=visited with derived blocks (issue 16 target 2): the blocks
plugin/blocks.cc's derive_visited gives no byte, whose visited value the
reader derives from their neighbours' (doc/data-format.md "The block map",
kind 4), on testsuite/visited/shapes.c and throws.cc.

Checks (one per run, named on the command line):
  exact     -O0, -O1, -O2, -O3 and -Os: every block blocks=visited reports
            as run is one placement=block (a counter at every block,
            nothing derived) counts above 0, and the others are 0, for
            normal returns, a longjmp out of a loop, exit() from a noreturn
            callee, tally_dump() mid-function followed by _exit, empty and
            long inputs; the same for C++ exceptions thrown out of a loop
            through a cleanup (-O0, -O2, -O3).
  cost      x86-64, -O2: the loop of odd_even (an if nested in an if in a
            loop) stores at most two visited bytes (one per arm), the
            function at most four (the arms, the loop's entry, its own),
            the tests and the joins none; odd_even's, early's and kind's
            maps derive blocks (kind 4).
  bad-maps  a kind-4 map where a derived block has a value, both rules,
            is derived from EXIT, or two blocks are derived from each
            other is refused by tally report with a message saying which,
            as is a map of unknown kind 7; so is each in a version 2 map,
            and the runtime's %m moves such a file aside with "corrupt
            block map" and writes this run's counts alone.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import importlib.util
import os
import platform
import re
import struct
import sys

from checklib import (CYCLE, block_counts, case, damage_first_map, derive_cycle, disasm_function,
                      disasm_loops, expect, main, run, Skip, tally_opts)

LEVELS = ["O0", "O1", "O2", "O3", "Os"]
C_INPUTS = [["0", "0"], ["0", "1"], ["0", "5"], ["0", "64"], ["1", "5"],
            ["2", "5"], ["3", "5"], ["1", "2"]]
CXX_INPUTS = [["5", "100"], ["5", "3"], ["0", "0"], ["1", "0"]]


def source(a, name):
    return os.path.join(a.srcdir, "visited", name)


def build(a, work, name, src, opt, opts):
    exe = os.path.join(work, name)
    cc = a.cxx if src.endswith(".cc") else a.cc
    run([cc, "-" + opt, "-fplugin=" + a.plugin, "-I", a.include,
         *tally_opts(*opts), src, "-o", exe, a.runtime])
    return exe


def compare(a, work, src, levels, inputs):
    for opt in levels:
        tag = os.path.basename(src).split(".")[0] + "-" + opt
        ref = build(a, work, "block-" + tag, src, opt,
                    ["blocks=count", "placement=block"])
        vis = build(a, work, "visited-" + tag, src, opt, ["blocks=visited"])
        for args in inputs:
            want = {s: [c > 0 for c in cs]
                    for s, cs in block_counts(a, ref, work, args).items()}
            got = {s: [c is not None and c > 0 for c in cs]
                   for s, cs in block_counts(a, vis, work, args).items()}
            what = "%s -%s %s" % (os.path.basename(src), opt, " ".join(args))
            expect(set(got) == set(want), "%s: functions %s, placement=block "
                   "has %s" % (what, sorted(got), sorted(want)))
            for sym in sorted(want):
                expect(got[sym] == want[sym], "%s: %s visited %s, "
                       "placement=block counts above 0 %s"
                       % (what, sym, got[sym], want[sym]))


@case("exact")
def check_exact(a, work):
    compare(a, work, source(a, "shapes.c"), LEVELS, C_INPUTS)
    compare(a, work, source(a, "throws.cc"), ["O0", "O2", "O3"], CXX_INPUTS)


def map_kinds(a, exe, work):
    """{symbol: map kind name} from `tally dump` of a run of EXE."""
    data = os.path.join(work, os.path.basename(exe) + ".data")
    run([exe, "0", "5"], env={"TALLY_OUTPUT": data})
    kinds, sym = {}, None
    for line in run([a.tally, "dump", data]).stdout.splitlines():
        f = re.match(r"\s*fn \d+ .*symbol=\"([^\"]*)\"", line)
        if f:
            sym = f.group(1)
        k = re.match(r"\s*map \d+ bytes kind=(\w+)", line)
        if k and sym:
            kinds[sym] = kinds.get(sym, "") + k.group(1)
        if sym and re.match(r"\s*block \d+ value=- flags=0x[246]", line):
            kinds[sym] = kinds.get(sym, "") + "+derived"
    return kinds


@case("cost")
def check_cost(a, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    exe = build(a, work, "visited", source(a, "shapes.c"), "O2",
                ["blocks=visited"])
    for body in disasm_loops(exe, "odd_even", clones=True):
        stores = [t for t in body if "<__tally.v." in t]
        expect(len(stores) <= 2, "odd_even's loop stores %d visited bytes "
               "an iteration's path could meet, want at most 2 (one per "
               "arm):\n  %s" % (len(stores), "\n  ".join(stores)))
    # The whole function: the two arms, the loop's entry (its header's
    # byte, hoisted) and the function's own; not the tests nor the joins
    # (before derived blocks: 5, the inner test and join sharing one).
    whole = [t for t in disasm_function(exe, "odd_even", clones=True) if "<__tally.v." in t]
    expect(len(whole) <= 4, "odd_even stores %d visited bytes, want at "
           "most 4:\n  %s" % (len(whole), "\n  ".join(whole)))
    kinds = map_kinds(a, exe, work)
    for func in ("odd_even", "early", "kind"):
        got = [v for k, v in kinds.items() if k.startswith(func)]
        expect(got and all("+derived" in v for v in got),
               "%s's map derives no block: %s" % (func, got))


def damage(d, how):
    """D with its first map of kind 4 (or 5) damaged as HOW says, or None."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]

    def change(kind, blks, edges, put):
        derived = [b for b in range(2, len(blks)) if u32(blks[b][1]) & 6]
        marked = [b for b in range(2, len(blks))
                  if u32(blks[b][0]) != 0xffffffff]
        if how == "kind":
            put(kind, 7)
        elif how == "value":
            put(blks[derived[0]][0], u32(blks[marked[0]][0]))
        elif how == "both":
            put(blks[derived[0]][1], u32(blks[derived[0]][1]) | 6)
        elif how == "exit":
            src = [s for s, t, f, _ in edges if t == 1 and not f & 1 and s >= 2]
            if not src:
                return False
            put(blks[src[0]][0], 0xffffffff)
            put(blks[src[0]][1], 2)
        elif how == "cycle":
            return derive_cycle(blks, edges, put)
        return True
    return damage_first_map(d, (4, 5), change)


BAD = {
    "kind": r"unknown map kind 7 \(expected 1 to 6\)",
    "value": r"block \d+: has a value and is derived too",
    "both": r"block \d+: derived from both its successors and its predecessors",
    "exit": r"block \d+ is derived from EXIT",
    "cycle": CYCLE,
}

# Version 2's walk says the kind is unknown without it (rt/mapcode.c).
BAD_V2 = {"kind": r"version 2 map: unknown map kind \(expected 1 to 6\)"}


@case("bad-maps")
def check_bad_maps(a, work):
    exe = build(a, work, "visited", source(a, "shapes.c"), "O2",
                ["blocks=visited"])
    good_path = os.path.join(work, "good.data")
    run([exe, "0", "5"], env={"TALLY_OUTPUT": good_path})
    # The maps in version 1 (run-mapsize.py), whose fixed fields are damaged
    # here; the kind-4 rules are checked the same in both map versions.
    good = mapsize.v1_file(open(good_path, "rb").read())
    run([a.tally, "report", good_path])
    mapsize.refused_both_versions(a, work, exe, ["0", "5"], good, BAD, damage,
                                  "kind-4 map", bad_v2=BAD_V2)


mapsize = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
    "mapsize", os.path.join(os.path.dirname(os.path.abspath(__file__)), "run-mapsize.py")))
mapsize.__spec__.loader.exec_module(mapsize)

if __name__ == "__main__":
    sys.exit(main("tally-visited-"))
