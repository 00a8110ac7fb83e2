#!/usr/bin/env python3
"""update=tls's counters held in registers across call-free loops (issue 16,
target 3; plugin/promote.cc's tally_blocks_promote): a loop's counters
accumulate in registers and are added to the thread's own copies at the
loop's exits, as update=single's are added to the shared counters.

Checks (one per run, named on the command line):
  exact           -O0 to -O3 and -Os: every block count of update=tls with
                  the default placement equals placement=block's with
                  update=atomic (neither promotes): promote/loops.c (N = 0,
                  1, 100), tlspromote/threads.c (four workers and the main
                  thread in promoted loops, a thread alive at the exit dump;
                  walk's body count also equals what the program counted),
                  progs/threads.c, gcov-corpus/loops.c and vm.c.
  in-registers    x86-64, -O2 and -O3, an executable and -fPIC: the loops of
                  mtf and walk update no thread-local counter in memory;
                  with_call's loop (a call) still does.
  tpoff           x86-64, -O2 and -O3: an interpreter-like loop with calls
                  (tlspromote/dispatch.c) addresses every thread-local
                  counter as %fs:constant in an executable, no register
                  holding the offset (plugin/promote.cc, the tally_tpoff
                  pass); -fPIC loads it from the GOT; counts exact.
  exit-reads      the exit dump flushes the exiting thread's copies into
                  the counters first and reads the counters alone.
  signal-boundary a dump made by a SIGSEGV handler in the middle of walk's
                  loop (N iterations done) lacks the loop's iterations, and
                  a tally_dump by the main thread while another thread goes
                  round a call-free loop lacks that thread's iterations of
                  it (doc/guarantees.md); the exit dump has them all, as
                  many as the program counted.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import platform
import re
import shutil
import sys

from checklib import (Skip, block_report, case, disasm_insns, disasm_loops, expect, main, run,
                      same_counts)

LEVELS = ["O0", "O1", "O2", "O3", "Os"]


def src(args, *path):
    return os.path.join(args.srcdir, *path)


def build(args, work, name, opt, source, opts, extra=()):
    exe = os.path.join(work, name)
    run([args.cc, "-" + opt, "-pthread", "-I" + args.include,
         "-fplugin=" + args.plugin]
        + ["-fplugin-arg-tally-" + o for o in opts] + list(extra)
        + [source, "-o", exe, args.runtime, "-lpthread"])
    return exe


def report(args, data):
    """{symbol: [block, ...]} of DATA (each block a dict of the JSON)."""
    return block_report(args.tally, data)


def counts(blocks):
    return {s: [b.get("count") for b in bs] for s, bs in blocks.items()}


def run_blocks(args, exe, n, env=None):
    """(stdout, {symbol: [block, ...]}) of one run of EXE [N]."""
    data = exe + "-" + (n or "none") + ".data"
    if os.path.exists(data):
        os.unlink(data)
    out = run([exe] + ([n] if n else []),
              env=dict(env or {}, TALLY_OUTPUT=data)).stdout
    return out, report(args, data)


def line_of(path, text):
    lines = open(path).read().splitlines()
    return 1 + next(i for i, l in enumerate(lines) if text in l)


def block_with_line(blocks, line, what):
    for b in blocks:
        if line in [loc.get("line") for loc in b.get("locations", [])]:
            return b.get("count")
    expect(False, "%s: no block with line %d" % (what, line))


@case("exact")
def check_exact(args, work):
    programs = [(src(args, "promote", "loops.c"), ["0", "1", "100"]),
                (src(args, "tlspromote", "threads.c"), ["1", "50"]),
                (src(args, "progs", "threads.c"), [None]),
                (src(args, "gcov-corpus", "loops.c"), [None]),
                (src(args, "gcov-corpus", "vm.c"), [None])]
    threads = src(args, "tlspromote", "threads.c")
    walk_body = line_of(threads, "q++;")
    for opt in LEVELS:
        for i, (prog, inputs) in enumerate(programs):
            base = "%d-%s" % (i, opt)
            ref = build(args, work, "atomic-" + base, opt, prog,
                        ["blocks=count", "placement=block", "update=atomic"])
            tls = build(args, work, "tls-" + base, opt, prog,
                        ["blocks=count", "update=tls"])
            for n in inputs:
                what = "%s -%s update=tls, N=%s" % (os.path.basename(prog),
                                                   opt, n)
                want_out, want = run_blocks(args, ref, n)
                got_out, got_blocks = run_blocks(args, tls, n)
                expect(got_out == want_out, "%s: output %r, update=atomic's "
                       "%r" % (what, got_out, want_out))
                got, want = counts(got_blocks), counts(want)
                if prog == threads:
                    # idle races on from the barrier into
                    # pthread_mutex_lock while the main thread exits: its
                    # last block's count at the exit dump depends on that
                    # race (update=atomic's too).  walk, which idle ran
                    # before the barrier, is compared.
                    got.pop("idle", None)
                    want.pop("idle", None)
                same_counts(what, got, want)
                if prog == threads:
                    said = int(re.search(r"walk (\d+)", got_out).group(1))
                    body = block_with_line(got_blocks["walk"], walk_body, what)
                    expect(body == said, "%s: walk's loop body counts %s, "
                           "the program counted %d" % (what, body, said))


def tls_updates(body):
    """The instructions of BODY that add to a thread-local counter."""
    return [t for t in body if re.match(r"add\w*\s+\S+,%fs:", t)]


@case("in-registers")
def check_in_registers(args, work):
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    loops = src(args, "promote", "loops.c")
    for opt in ("O2", "O3"):
        for pic in ([], ["-fPIC"]):
            exe = build(args, work, "tls-%s%s" % (opt, "-pic" if pic else ""),
                        opt, loops, ["blocks=count", "update=tls"], pic)
            what = "-%s%s update=tls" % (opt, " -fPIC" if pic else "")
            for func in ("mtf", "walk"):
                for body in disasm_loops(exe, func, clones=True, conditional=True):
                    hits = tls_updates(body)
                    expect(not hits, "%s: the loop of %s updates a "
                           "thread-local counter in memory at every "
                           "iteration:\n  %s" % (what, func, "\n  ".join(hits)))
            expect(any(tls_updates(b) for b in disasm_loops(exe, "with_call", conditional=True)),
                   "%s: with_call's loop updates no thread-local counter in "
                   "memory: the call in it may dump the counters" % what)


@case("signal-boundary")
def check_signal_boundary(args, work):
    n = 100
    loops = src(args, "promote", "loops.c")
    line = line_of(loops, "s += *p;")
    exe = build(args, work, "tls-loops", "O2", loops,
                ["blocks=count", "update=tls"])
    data = os.path.join(work, "tls-fault.data")
    r = run([exe, str(n), "fault"], env={"TALLY_OUTPUT": data}, check=False)
    expect(r.returncode == 3, "the fault run exited with %s, not 3 (the "
           "handler's exit)" % r.returncode)
    got = block_with_line(report(args, data)["walk"], line, data)
    expect(got == 0, "update=tls: a dump in the middle of walk's loop counts "
           "%s for its body: the iterations since the loop's entry are in a "
           "register and not yet in the thread's counters (doc/guarantees.md "
           "says so), 0 expected" % got)

    # Another thread's dump while a thread goes round spin's loop: it spins
    # 100000 times at least before the main thread dumps.
    threads = src(args, "tlspromote", "threads.c")
    spin = line_of(threads, "progress = i;")
    exe = build(args, work, "tls-spin", "O2", threads,
                ["blocks=count", "update=tls"])
    first = os.path.join(work, "spin-first.data")
    last = os.path.join(work, "spin-last.data")
    out = run([exe, "spin"], env={"TALLY_OUTPUT": last,
                                  "SPIN_FIRST": first}).stdout
    said = int(re.search(r"spin (\d+)", out).group(1))
    expect(said >= 100000, "spin went round %d times only" % said)
    got = block_with_line(report(args, first)["spin"], spin, first)
    expect(got == 0, "update=tls: the main thread's tally_dump while another "
           "thread is in spin's loop counts %s for its body: that thread's "
           "iterations since the loop's entry are in a register, 0 expected"
           % got)
    got = block_with_line(report(args, last)["spin"], spin, last)
    expect(got == said, "update=tls: the exit dump counts %s for spin's body, "
           "the program counted %d" % (got, said))


@case("tpoff")
def check_tpoff(args, work):
    """-O2 and -O3, an executable: every counter update of dispatch.c's run
    (a loop with calls and a switch: many counters) addresses its
    thread-local counter as %fs:constant, no register holding the offset
    from the thread pointer; -fPIC (initial-exec) still loads the offset
    from the GOT; counts equal update=atomic's with placement=block."""
    if platform.machine() not in ("x86_64", "amd64"):
        raise Skip("(reads x86-64 disassembly)")
    prog = src(args, "tlspromote", "dispatch.c")
    for opt in ("O2", "O3"):
        ref = build(args, work, "dispatch-atomic-" + opt, opt, prog,
                    ["blocks=count", "placement=block", "update=atomic"])
        exe = build(args, work, "dispatch-" + opt, opt, prog,
                    ["blocks=count", "update=tls"])
        insns = disasm_insns(exe, "run")
        adds = [t for t in insns if re.match(r"add\w*\s+\S+,%fs:", t)]
        expect(len(adds) >= 8, "-%s: run has %d thread-local counter updates"
               % (opt, len(adds)))
        via = [t for t in adds if "(" in t]
        expect(not via, "-%s: run's counter updates take the offset from "
               "the thread pointer from a register:\n  %s"
               % (opt, "\n  ".join(via)))
        for n in ("0", "1", "1000"):
            want_out, want = run_blocks(args, ref, n)
            got_out, got = run_blocks(args, exe, n)
            what = "dispatch.c -%s update=tls, N=%s" % (opt, n)
            expect(got_out == want_out, "%s: output %r, update=atomic's %r"
                   % (what, got_out, want_out))
            same_counts(what, counts(got), counts(want))
        so = os.path.join(work, "dispatch-%s.so" % opt)
        run([args.cc, "-" + opt, "-fPIC", "-shared", "-fplugin=" + args.plugin,
             "-fplugin-arg-tally-blocks=count", "-fplugin-arg-tally-update=tls",
             prog, "-o", so])
        pic = [t for t in disasm_insns(so, "run")
               if re.match(r"add\w*\s+\S+,%fs:", t)]
        expect(pic and all("(" in t for t in pic), "-%s -fPIC: run's counter "
               "updates are not all %%fs:(reg) after a GOT load:\n  %s"
               % (opt, "\n  ".join(pic)))


BIG_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__ ((noinline)) long op (long a, long b) { return a * 3 + b; }
__attribute__ ((noinline)) long
big (int k, long s)
{
  switch (k %% %d)
    {
%s    }
  return s;
}
int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 3000;
  long s = 0;
  for (int k = 0; k < n; k++)
    s = big (k, s) %% 100003;
  printf ("%%ld\n", s);
  return 0;
}
"""


def callgrind_self(exe, fns, work, env):
    """Instructions of FNS (and what they call) in one run of EXE."""
    out = exe + ".callgrind"
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out]
        + ["--toggle-collect=" + f for f in fns] + [exe], env=env)
    for line in open(out):
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    expect(False, "no totals in %s" % out)


@case("exit-reads")
def check_exit_reads(args, work):
    """The exit dump flushes the exiting thread's copies into the counters
    first (as at a thread's exit), then reads the counters alone: the
    runtime's reads of thread copies (tally_rt_tls_add, tally_rt_tls_sum)
    cost fewer instructions than the function has counters, where reading
    every copy twice costs several a counter; the counts stay exact.
    (Counts made after the exit dump, which attach again: dumpcost /
    late-blocks, tlsneg / boundaries.)"""
    if not shutil.which("valgrind"):
        raise Skip("(no valgrind)")
    cases = 1500
    body = "".join("    case %d: s = op (s, %d); break;\n" % (i, i)
                   for i in range(cases))
    c = os.path.join(work, "big.c")
    with open(c, "w") as f:
        f.write(BIG_C % (cases, body))
    exe = build(args, work, "big-tls", "O2", c, ["blocks=count", "update=tls"])
    data = os.path.join(work, "big.data")
    ir = callgrind_self(exe, ["tally_rt_tls_add", "tally_rt_tls_sum"], work,
                        {"TALLY_OUTPUT": data})
    print("reads of thread copies at exit: %d instructions, %d cases" % (ir, cases))
    expect(ir < cases, "the exit dump's reads of thread copies cost %d "
           "instructions for a function of over %d counters: it reads the "
           "exiting thread's copies instead of flushing them first"
           % (ir, cases))
    ref = build(args, work, "big-atomic", "O2", c,
                ["blocks=count", "placement=block", "update=atomic"])
    for n in ("1", "3000"):
        want_out, want = run_blocks(args, ref, n)
        got_out, got = run_blocks(args, exe, n)
        expect(got_out == want_out, "big.c N=%s: output differs" % n)
        same_counts("big.c -O2 update=tls, N=%s" % n, counts(got), counts(want))


if __name__ == "__main__":
    sys.exit(main("tally-tlspromote-"))
