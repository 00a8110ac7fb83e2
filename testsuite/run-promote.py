#!/usr/bin/env python3
"""Counters held in registers across call-free loops (issue 16):
plugin/promote.cc's tally_blocks_promote, checked on
testsuite/promote/loops.c (pointer walks, early returns and breaks, nested
loops left by a goto, a wrapping unsigned char, a negative step, a loop
with a call).

Checks (one per run, named on the command line):
  exact           -O0 to -O3 and -Os: every block count of every function
                  with the default placement equals placement=block's and
                  update=atomic's (neither promotes), for N = 0, 1, 100.
  in-registers    x86-64, -O2: the loops of mtf and walk update no counter
                  in memory; with_call's loop (a call) and, with
                  update=atomic and counters=mapped, mtf's and walk's
                  loops still do.
  large-function  x86-64, -O2: a function of more than 1000 blocks (a
                  switch of 1200 calls) keeps its loop's counter updates in
                  memory, a small one with the same loop does not; counts
                  equal placement=block's.
  two-exits       x86-64, -O2: a loop with two exits that GCC guesses goes
                  round 9 times (sqlite's varint skip) keeps its counter
                  updates in memory; counts equal placement=block's.
  signal-boundary a dump made by a SIGSEGV handler in the middle of walk's
                  loop (N iterations done) lacks the loop's iterations
                  (they are in a register: doc/guarantees.md), while
                  counters=mapped's continuous output, killed by SIGKILL
                  at the same point, has all N.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import platform
import re
import signal
import sys

from checklib import (Skip, block_counts, block_report, case, exact_as_block_placement,
                      expect, main, run, same_counts)

LEVELS = ["O0", "O1", "O2", "O3", "Os"]
INPUTS = ["0", "1", "100"]


def program(args):
    return os.path.join(args.srcdir, "promote", "loops.c")


def build(args, work, name, opt, opts, src=None):
    """SRC (promote/loops.c) built at -OPT with the plugin options OPTS (and
    tally's headers) as WORK/NAME."""
    exe = os.path.join(work, name)
    inc = os.path.join(os.path.dirname(args.srcdir), "include")
    cmd = [args.cc, "-" + opt, "-I" + inc, "-fplugin=" + args.plugin]
    cmd += ["-fplugin-arg-tally-" + o for o in opts]
    cmd += [src or program(args), "-o", exe, args.runtime]
    run(cmd)
    return exe


def report(args, data):
    """{symbol: [block, ...]} of DATA (each block a dict of the JSON)."""
    return block_report(args.tally, data)


def blocks(args, exe, work, n):
    """{symbol: [count or None, ...]} of one run of EXE N."""
    return block_counts(args, exe, work, [n])


@case("exact")
def check_exact(args, work):
    exact_as_block_placement(args, work, build, LEVELS, INPUTS, (
        ("atomic", "update=atomic", ["blocks=count", "update=atomic"]),
        ("tree", "default placement", ["blocks=count"])))


def loop_lines(exe, func):
    """The instructions of FUNC's loops in EXE's disassembly: those between
    a conditional backward jump and its target."""
    dis = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    m = re.search(r"^[0-9a-f]+ <%s>:\n(.*?)\n\n" % re.escape(func), dis,
                  re.S | re.M)
    expect(m, "no function %s in the disassembly of %s" % (func, exe))
    insns = []
    for line in m.group(1).splitlines():
        a = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if a:
            insns.append((int(a.group(1), 16), a.group(2)))
    loops = []
    for addr, text in insns:
        j = re.match(r"j(?!mp)\w+\s+([0-9a-f]+) <", text)
        if j and int(j.group(1), 16) <= addr:
            lo = int(j.group(1), 16)
            loops.append([t for a, t in insns if lo <= a <= addr])
    expect(loops, "%s has no loop in %s" % (func, exe))
    return loops


def memory_updates(body):
    """The instructions of BODY that update a counter in memory: a
    __tally.c. operand, or (counters=mapped) an add to memory."""
    return [t for t in body if "<__tally.c." in t
            or re.match(r"(lock )?addq?\s+\$0x1,.*\(", t)]


@case("in-registers")
def check_in_registers(args, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    tree = build(args, work, "tree", "O2", ["blocks=count"])
    for func in ("mtf", "walk"):
        for body in loop_lines(tree, func):
            hits = memory_updates(body)
            expect(not hits, "the loop of %s updates a counter in memory at "
                   "every iteration:\n  %s" % (func, "\n  ".join(hits)))
    expect(any(memory_updates(b) for b in loop_lines(tree, "with_call")),
           "with_call's loop updates no counter in memory: the call in it "
           "may dump the counters")
    for opts in (["update=atomic"], ["counters=mapped"]):
        exe = build(args, work, opts[0].replace("=", "-"), "O2",
                    ["blocks=count"] + opts)
        for func in ("mtf", "walk"):
            expect(any(memory_updates(b) for b in loop_lines(exe, func)),
                   "%s: the loop of %s updates no counter in memory"
                   % (opts[0], func))


@case("signal-boundary")
def check_signal_boundary(args, work):
    n = 100
    src = open(program(args)).read().splitlines()
    line = 1 + next(i for i, l in enumerate(src) if "s += *p;" in l)

    def body_count(data):
        for b in report(args, data)["walk"]:
            if line in block_lines(b):
                return b.get("count")
        expect(False, "no block of walk with line %d in %s" % (line, data))

    tree = build(args, work, "tree", "O2", ["blocks=count"])
    data = os.path.join(work, "tree-fault.data")
    r = run([tree, str(n), "fault"], env={"TALLY_OUTPUT": data}, check=False)
    expect(r.returncode == 3, "the fault run exited with %s, not 3 (the "
           "handler's exit)" % r.returncode)
    got = body_count(data)
    expect(got == 0, "a dump in the middle of walk's loop counts %s for its "
           "body: the iterations since the loop's entry are in a register "
           "and not yet in memory (doc/guarantees.md says so), 0 expected"
           % got)
    mapped = build(args, work, "mapped", "O2",
                   ["blocks=count", "counters=mapped"])
    data = os.path.join(work, "mapped-fault.data")
    r = run([mapped, str(n), "fault"], check=False,
            env={"TALLY_OUTPUT": os.path.join(work, "mapped-fault%c.data"),
                 "LOOPS_KILL": "1"})
    expect(r.returncode == -signal.SIGKILL, "the counters=mapped fault run "
           "ended with %s, not SIGKILL" % r.returncode)
    got = body_count(data)
    expect(got == n, "counters=mapped, killed in walk's loop after %d "
           "iterations: its body counts %s in the continuous file" % (n, got))


BIG_CASES = 1200


def big_program(args, work):
    """A C program whose function big has a switch of BIG_CASES cases, each
    a call (well over the 1000 blocks promote.cc allows a function), and
    loops.c's call-free walk inline; small calls loops.c's walk (its text,
    renamed walk_loop)."""
    cases = "".join("    case %d: s += sink (%d, s); break;\n" % (i, i * 7 + 1)
                    for i in range(BIG_CASES))
    walk = re.search(r"__attribute__ \(\(noinline\)\) long\nwalk (\(.*?\n)(\{\n  long s = 0;\n"
                     r"(.*?)  return s;\n\}\n)", open(program(args)).read(), re.S)
    expect(walk, "%s: no function walk (long s = 0; ... return s;)" % program(args))
    src = os.path.join(work, "big.c")
    with open(src, "w") as f:
        f.write("""#include <stdlib.h>
#include <stdio.h>
__attribute__ ((noinline)) long sink (long a, long b) { return a ^ b; }
__attribute__ ((noinline)) long
walk_loop %s%s__attribute__ ((noinline)) long
small (const unsigned char *p)
{
  return walk_loop (p);
}
__attribute__ ((noinline)) long
big (int k, const unsigned char *p)
{
  long s = 0;
%s  switch (k)
    {
%s    }
  return s;
}
int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  unsigned char buf[300];
  for (int i = 0; i < n && i < 299; i++)
    buf[i] = (unsigned char) i;
  buf[n < 299 ? n : 299] = 0xff;
  long s = small (buf);
  for (int k = 0; k < n; k++)
    s += big (k, buf + k %% 7);
  printf ("%%ld\\n", s);
  return 0;
}
""" % (walk.group(1), walk.group(2), walk.group(3), cases))
    return src


@case("large-function")
def check_large_function(args, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    src = big_program(args, work)

    def build_big(name, opts):
        return build(args, work, name, "O2", opts, src)

    tree = build_big("big-tree", ["blocks=count"])
    expect(not any(memory_updates(b) for b in loop_lines(tree, "walk_loop")),
           "walk_loop (a function of a few blocks) updates a counter in "
           "memory in its loop")
    expect(any(memory_updates(b) for b in loop_lines(tree, "big")),
           "big (%d cases, each a call) holds its loop's counters in "
           "registers: functions of more than 1000 blocks keep them in "
           "memory (plugin/promote.cc, TALLY_PROMOTE_MAX_BLOCKS)" % BIG_CASES)
    ref = build_big("big-block", ["blocks=count", "placement=block"])
    for n in INPUTS:
        same_counts("big.c -O2, N=%s" % n, blocks(args, tree, work, n),
                    blocks(args, ref, work, n))


SKIP_C = r"""#include <stdio.h>
#include <stdlib.h>
__attribute__ ((noinline)) int corrupt (int line) { return line; }
/* sqlite3BtreeTableMoveto's varint skip: two exits, the second an error
   return; GCC guesses 9 rounds, it goes round once or twice.  */
__attribute__ ((noinline)) long
skip (const unsigned char *p, const unsigned char *end)
{
  const unsigned char *q = p;
  while (0x80 <= *(q++))
    {
      if (q >= end)
        return -corrupt (__LINE__);
    }
  return q - p;
}
int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  unsigned char buf[16] = { 0x81, 0x82, 0x03, 0x04, 0x85, 0x86, 0x87 };
  long s = 0;
  for (int i = 0; i < n; i++)
    s += skip (buf + i % 5, buf + 6);
  printf ("%ld\n", s);
  return 0;
}
"""


@case("two-exits")
def check_two_exits(args, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    src = os.path.join(work, "skip.c")
    with open(src, "w") as f:
        f.write(SKIP_C)

    def build_skip(name, opts):
        return build(args, work, name, "O2", opts, src)

    tree = build_skip("skip-tree", ["blocks=count"])
    expect(any(memory_updates(b) for b in loop_lines(tree, "skip")),
           "skip's loop (two exits, GCC's guess of 9 rounds) holds its "
           "counters in registers: a loop with two exits needs GCC to "
           "expect 10 rounds or more (plugin/promote.cc, promote_worth)")
    ref = build_skip("skip-block", ["blocks=count", "placement=block"])
    for n in INPUTS:
        same_counts("skip.c -O2, N=%s" % n, blocks(args, tree, work, n),
                    blocks(args, ref, work, n))


def block_lines(b):
    return [loc.get("line") for loc in b.get("locations", [])]


if __name__ == "__main__":
    sys.exit(main("tally-promote-"))
