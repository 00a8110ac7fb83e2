#!/usr/bin/env python3
"""Where blocks=count and blocks=visited put their updates (issue 16):
plugin/blocks.cc's derived latch counts (derive_latches) and hoisted
visited bytes (hoist_visited), checked on testsuite/placement/loops.c.

Checks (one per run, named on the command line):
  exact         -O0, -O1, -O2, -O3 and -Os, placement=tree with
                update=single, update=atomic and hooks=call: every block
                count of every function equals placement=block's (a counter
                at every block, nothing derived), for N = 0, 1 and 100.
  visited       the same levels: blocks=visited marks as run exactly the
                blocks whose placement=block count is above 0.
  hot-loop      x86-64, -O2: the loop of fixed (1000 iterations) updates
                no counter; the loops of sum_ints (a counted loop) and walk
                (a pointer walk) store no visited byte; with_call's loop (a
                call that may not return) still counts in the loop; with
                counters=mapped fixed's loop still updates its counter at
                every iteration (the SIGKILL promise), and the counts are
                exact.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import platform
import re
import sys

from checklib import Skip, block_counts, case, disasm_loops, expect, main, run

LEVELS = ["O0", "O1", "O2", "O3", "Os"]


def program(args):
    """The test program, placement/loops.c of the source tree."""
    return os.path.join(args.srcdir, "placement", "loops.c")
INPUTS = ["0", "1", "100"]


def build(args, work, name, opt, opts):
    exe = os.path.join(work, name)
    cmd = [args.cc, "-" + opt, "-fplugin=" + args.plugin]
    cmd += ["-fplugin-arg-tally-" + o for o in opts]
    cmd += [program(args), "-o", exe, args.runtime]
    run(cmd)
    return exe


def same_counts(what, got, want):
    expect(set(got) == set(want), "%s: functions %s, placement=block has %s"
           % (what, sorted(got), sorted(want)))
    for sym in sorted(want):
        expect(got[sym] == want[sym], "%s: %s counts %s, placement=block "
               "counts %s" % (what, sym, got[sym], want[sym]))


@case("exact")
def check_exact(args, work):
    variants = {
        "tree": ["blocks=count"],
        "atomic": ["blocks=count", "update=atomic"],
        "call": ["blocks=count", "hooks=call"],
    }
    for opt in LEVELS:
        ref = build(args, work, "block-" + opt, opt,
                    ["blocks=count", "placement=block"])
        exes = {k: build(args, work, k + "-" + opt, opt, v)
                for k, v in variants.items()}
        for n in INPUTS:
            want = block_counts(args, ref, work, [n])
            for k, exe in exes.items():
                same_counts("-%s %s, N=%s" % (opt, k, n),
                            block_counts(args, exe, work, [n]), want)


@case("visited")
def check_visited(args, work):
    for opt in LEVELS:
        ref = build(args, work, "block-" + opt, opt,
                    ["blocks=count", "placement=block"])
        vis = build(args, work, "visited-" + opt, opt, ["blocks=visited"])
        for n in INPUTS:
            want = {s: [c > 0 for c in cs]
                    for s, cs in block_counts(args, ref, work, [n]).items()}
            got = {s: [c is not None and c > 0 for c in cs]
                   for s, cs in block_counts(args, vis, work, [n]).items()}
            same_counts("-%s visited, N=%s" % (opt, n), got, want)


def tally_refs(lines, prefix):
    """The instructions of LINES updating tally's counters (PREFIX
    "__tally.c.") or visited bytes ("__tally.v."): by the symbol, or, where
    GCC keeps the array's address in a register (GCC 16 hoists it out of
    the loop), an add of 1 or a store of byte 1 to memory."""
    store = r"addq?\s+\$0x1,.*\(%r" if prefix == "__tally.c." else r"movb\s+\$0x1,.*\(%r"
    return [t for t in lines if "<" + prefix in t or re.match(store, t)]


@case("hot-loop")
def check_hot_loop(args, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    count = build(args, work, "count", "O2", ["blocks=count"])
    vis = build(args, work, "visited", "O2", ["blocks=visited"])
    mapped = build(args, work, "mapped", "O2",
                   ["blocks=count", "counters=mapped"])
    ref = build(args, work, "block", "O2", ["blocks=count", "placement=block"])
    for body in disasm_loops(count, "fixed", conditional=True):
        hits = tally_refs(body, "__tally.c.")
        expect(not hits, "blocks=count: the loop of fixed (1000 iterations) "
               "updates a counter at every iteration:\n  %s"
               % "\n  ".join(hits))
    for func in ("sum_ints", "walk"):
        for body in disasm_loops(vis, func, conditional=True):
            hits = tally_refs(body, "__tally.v.")
            expect(not hits, "blocks=visited: the loop of %s stores a byte "
                   "at every iteration:\n  %s" % (func, "\n  ".join(hits)))
    # A loop with a call that may not return keeps its per-iteration
    # counter: the call might dump or never come back.
    expect(any(tally_refs(b, "__tally.c.") for b in disasm_loops(count, "with_call", conditional=True)),
           "with_call's loop has no counter update: a call in it may not "
           "return, so its latch count cannot be derived")
    # counters=mapped: nothing derived, the loop still counts in place.
    # (its address is the counter's plus the bias, in a register)
    expect(any(re.match(r"addq?\s+\$0x1,.*\(", t)
               for b in disasm_loops(mapped, "fixed", conditional=True) for t in b),
           "counters=mapped: fixed's loop updates no counter (a process "
           "killed in the loop would lose its iterations)")
    for n in INPUTS:
        same_counts("-O2 counters=mapped, N=" + n,
                    block_counts(args, mapped, work, [n]), block_counts(args, ref, work, [n]))


if __name__ == "__main__":
    sys.exit(main("tally-placement-"))
