#!/usr/bin/env python3
"""What measure=cycles' hot path costs, checked in the machine code, and
what its x86-64 slow-path calls promise (issue 16, target 5;
doc/benchmarks/cycles-floor.md):
  - leaf-cost: a hooks=inline leaf keeps no frame and saves no register
    (the slow paths are asm calls of register-preserving runtime entries),
    its fast path writes neither node nor flags, and the instructions
    the instrumentation adds on its straight-line path, less the two
    time-stamp reads and register-to-register copies, are at most
    LEAF_BOUND (counted in the disassembly: no timing);
  - preserved: integer and vector registers live across the slow paths
    (a thread's first hook, exits of activations the full shadow stack
    could not hold) survive them, and the counts stay exact;
  - consistency: at -O0, -O2 and -O3, in both hook modes, every cycle is
    charged once and a function's inclusive cycles are its exclusive ones
    plus its callees' inclusive ones, exactly;
  - per-call: instructions a call costs besides the two time-stamp reads,
    measured with cachegrind on a loop of calls (the difference of two
    runs of N and 2N iterations, less the uninstrumented program's, so
    start-up and the dump cancel out), inline at most INLINE_BOUND and as
    calls at most CALL_BOUND;
  - call-preserved: the same registers as `preserved` survive hooks=call's
    assembly hooks and the slow paths they jump to;
  - mixed: a hooks=call paths=on unit and a hooks=inline unit calling each
    other in one thread reuse each other's shadow-stack slots: the inline
    frames never inherit a call path or PAPI flag from a slot's earlier
    occupant (the runtime clears them when it pops).
  - slow-cpuid: the register-preserving slow paths ask CPUID for the
    XSAVE area once, not on every call (in a virtual machine CPUID traps
    to the hypervisor: paths=on hooks=inline, whose one-word node cache
    misses on every call from a second parent, ran 40 to 60 times slower
    than uninstrumented lua and sqlite for 3 times the instructions);
    counted with a breakpoint (ptrace) on every CPUID instruction of the
    program, the runtime's included: two runs, N and 2N calls, the same
    number of CPUID instructions.

Usage: run-cycles.py CASE --plugin P --runtime RT --tally T --cc CC ...
                     (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import shutil
import sys

from checklib import LEAF_C, REGS_LEAF_C, Skip, build, case, expect, main, regs_body_c, report_rows, run, run_data, tally_opts, write_file
from measurelib import check_structure, check_sums, x86_64

# The most instructions the inline hooks may add to a leaf's fast path
# besides the two time-stamp reads (rdtsc; shl; or): what this plugin
# emits (see doc/benchmarks/cycles-floor.md for the instruction-by-instruction list);
# main before the first cycles branch saved three registers for the slow
# calls (49 added to benchmarks/support/micro.c's leaf_mul), 63dc963 added
# 37, the push and pop as one addq on %fs:top and the CFA kept in a
# register 34; register-to-register copies left out of the count (the
# register allocator's: GCC 16 copies an argument out of the register it
# gives the thread pointer's offset, GCC 12 does not), 33.
LEAF_BOUND = 33

# Instructions a call (an entry and an exit) may cost besides the two
# time-stamp reads, measured by cachegrind (per-call below): main e657985
# had 39.3 inline and 121.0 as calls (C hooks) on this program; now 36.3
# and 45.0 (the push and pop as one addq, the assembly hooks);
# doc/benchmarks/cycles-floor.md lists them one by one.
INLINE_BOUND = 38
CALL_BOUND = 48


def fast_path(exe, fn):
    """The instructions of FN from its start to its first ret: the path
    GCC lays out in line (the cold calls follow the ret)."""
    out = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    m = re.search(r"^[0-9a-f]+ <%s>:\n(.*?)(?:\n\n|\Z)" % re.escape(fn), out, re.S | re.M)
    expect(m, "%s: no function %s in the disassembly" % (exe, fn))
    insns = []
    for line in m.group(1).splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[1].strip():
            continue
        insns.append(parts[1].strip())
        if parts[1].strip().startswith("ret"):
            break
    return insns


@case("leaf-cost")
def check_leaf_cost(a, work):
    x86_64()
    src = os.path.join(work, "leaf.c")
    write_file(src, LEAF_C)
    plain = os.path.join(work, "leaf-plain")
    run([a.cc, "-O2", src, "-o", plain])
    base = len(fast_path(plain, "leaf"))
    exe = os.path.join(work, "leaf-cycles")
    build(a, exe, src, tally_opts("hooks=inline", "measure=cycles"), opt="-O2")
    insns = fast_path(exe, "leaf")
    text = "\n  ".join(insns)
    for bad in ("push", "pop", "sub    $", "call"):
        expect(not any(i.startswith(bad) for i in insns),
               "leaf's fast path has %r (a frame or a saved register):\n  %s" % (bad, text))
    tsc = sum(1 for i in insns if i.startswith("rdtsc"))
    expect(tsc == 2, "leaf's fast path reads the time-stamp counter %d times:\n  %s" % (tsc, text))
    expect(not any(i.startswith("movl   $0xffffffff") for i in insns),
           "leaf's fast path still writes the frame's node:\n  %s" % text)
    copies = sum(1 for i in insns if re.fullmatch(r"mov\s+%\w+,%\w+", i))
    added = len(insns) - base - 3 * tsc - copies
    expect(added <= LEAF_BOUND,
           "the inline hooks add %d instructions to leaf's fast path besides the "
           "time-stamp reads, want at most %d:\n  %s" % (added, LEAF_BOUND, text))
    print("leaf: %d instructions on the fast path, %d uninstrumented, %d added "
          "besides the two time-stamp reads and %d register copies"
          % (len(insns), base, added, copies))
    data = exe + ".data"
    p = run_data(exe, data)
    expect(p.stderr == "", "runtime messages: %r" % p.stderr)
    rows = report_rows(a, data)
    expect((rows["leaf"]["calls"], rows["mid"]["calls"]) == (2000, 1000),
           "counts: leaf %d, mid %d" % (rows["leaf"]["calls"], rows["mid"]["calls"]))
    check_sums("leaf.c", rows, ["main"])


PER_CALL_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__ ((noinline)) unsigned leaf (unsigned a, unsigned b) { return a * b + 3; }
__attribute__ ((noinline)) unsigned mid (unsigned a) { return leaf (a, a + 1) + leaf (a, 2); }
__attribute__ ((no_instrument_function)) int main (int argc, char **argv)
{
  unsigned s = 0, n = (unsigned) atoi (argv[1]);
  for (unsigned i = 0; i < n; i++)
    s += mid (i + (unsigned) argc);
  printf ("%u\n", s);
  return 0;
}
"""


def cachegrind_ir(exe, n, work):
    """Instructions EXE N executes (cachegrind's I refs)."""
    out = os.path.join(work, "cg.out")
    p = run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
             "--cachegrind-out-file=" + out, exe, str(n)],
            env={"TALLY_OUTPUT": exe + ".data"})
    m = re.search(r"I\s+refs:\s+([0-9,]+)", p.stderr)
    expect(m, "no cachegrind summary for %s:\n%s" % (exe, p.stderr))
    return int(m.group(1).replace(",", ""))


@case("per-call")
def check_per_call(a, work):
    x86_64()
    if not shutil.which("valgrind"):
        raise Skip("no valgrind")
    src = os.path.join(work, "calls.c")
    write_file(src, PER_CALL_C)
    plain = os.path.join(work, "calls-plain")
    run([a.cc, "-O2", src, "-o", plain])
    n = 20000
    base = cachegrind_ir(plain, 2 * n, work) - cachegrind_ir(plain, n, work)
    for hooks, bound in (("inline", INLINE_BOUND), ("call", CALL_BOUND)):
        exe = os.path.join(work, "calls-" + hooks)
        build(a, exe, src, tally_opts("hooks=" + hooks, "measure=cycles"), opt="-O2")
        extra = cachegrind_ir(exe, 2 * n, work) - cachegrind_ir(exe, n, work) - base
        rows = report_rows(a, exe + ".data")
        # the last run: n iterations
        expect((rows["leaf"]["calls"], rows["mid"]["calls"]) == (2 * n, n),
               "hooks=%s: counts leaf %d, mid %d" % (hooks, rows["leaf"]["calls"],
                                                   rows["mid"]["calls"]))
        # n more iterations make 3 n more calls, each two time-stamp reads
        # of three instructions.
        per_call = extra / (3 * n) - 6
        print("hooks=%s: %.2f instructions a call besides the time-stamp reads "
              "(at most %d)" % (hooks, per_call, bound))
        expect(per_call <= bound,
               "hooks=%s measure=cycles costs %.2f instructions a call besides the "
               "time-stamp reads, want at most %d" % (hooks, per_call, bound))


# slow-cpuid: a leaf called from two parents in turn, so that the one-word
# node cache of paths=on hooks=inline misses on every call and each of
# its entries takes the register-preserving slow path.
ALTERNATE_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__ ((noinline)) int leaf (int x) { return x * 3 + 1; }
__attribute__ ((noinline)) int pa (int x) { return leaf (x) + 1; }
__attribute__ ((noinline)) int pb (int x) { return leaf (x) + 2; }
int main (int argc, char **argv)
{
  long n = argc > 1 ? atol (argv[1]) : 1, s = 0;
  for (long i = 0; i < n; i++)
    s += (i & 1) ? pa ((int) i) : pb ((int) i);
  printf ("%ld\n", s);
  return 0;
}
"""

# A tracer (ptrace) that runs a program with a breakpoint at each address
# it is given and counts the times each is reached; the counts go to
# stderr in the order of the addresses, then the program's exit status.
BREAK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#define MAX 256
static unsigned long at[MAX], saved[MAX];
static long hits[MAX];
int main (int argc, char **argv)
{
  int n = 0;
  while (n + 1 < argc && n < MAX && argv[n + 1][0] != '-')
    at[n] = strtoul (argv[n + 1], 0, 16), n++;
  if (n + 2 >= argc || strcmp (argv[n + 1], "--") != 0)
    return 2; /* no "--" after the addresses (or more than MAX of them) */
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (ptrace (PTRACE_TRACEME, 0, 0, 0) != 0)
        _exit (126);
      execv (argv[n + 2], argv + n + 2);
      _exit (127);
    }
  int st;
  if (waitpid (pid, &st, 0) != pid)
    return 3;
  if (WIFEXITED (st) && WEXITSTATUS (st) == 126)
    return 77; /* ptrace not permitted here */
  if (!WIFSTOPPED (st))
    return 3;
  for (int i = 0; i < n; i++)
    {
      saved[i] = ptrace (PTRACE_PEEKTEXT, pid, at[i], 0);
      ptrace (PTRACE_POKETEXT, pid, at[i], (saved[i] & ~0xfful) | 0xcc);
    }
  for (;;)
    {
      if (ptrace (PTRACE_CONT, pid, 0, 0) != 0 || waitpid (pid, &st, 0) != pid)
        return 3;
      if (WIFEXITED (st) || WIFSIGNALED (st))
        break;
      struct user_regs_struct r;
      ptrace (PTRACE_GETREGS, pid, 0, &r);
      int i = 0;
      while (i < n && at[i] != r.rip - 1)
        i++;
      if (i == n)
        return 4; /* a stop that is not ours */
      hits[i]++;
      /* Step over the original instruction, then put the breakpoint back.  */
      r.rip = at[i];
      ptrace (PTRACE_SETREGS, pid, 0, &r);
      ptrace (PTRACE_POKETEXT, pid, at[i], saved[i]);
      if (ptrace (PTRACE_SINGLESTEP, pid, 0, 0) != 0 || waitpid (pid, &st, 0) != pid
          || !WIFSTOPPED (st))
        return 3;
      ptrace (PTRACE_POKETEXT, pid, at[i], (saved[i] & ~0xfful) | 0xcc);
    }
  for (int i = 0; i < n; i++)
    fprintf (stderr, "%ld ", hits[i]);
  fprintf (stderr, "%d\n", WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st));
  return 0;
}
"""


def sites_and_stub_hits(tracer, exe, stub, sites, n):
    """(instructions at SITES executed, times STUB reached) by EXE N."""
    p = run([tracer, "%x" % stub] + ["%x" % c for c in sites] + ["--", exe, str(n)],
            env={"TALLY_OUTPUT": exe + ".data"}, check=False)
    if p.returncode == 77:
        raise Skip("ptrace (PTRACE_TRACEME) is not permitted here")
    expect(p.returncode == 0, "the tracer failed (%d): %s" % (p.returncode, p.stderr))
    f = p.stderr.split()
    expect(len(f) == 2 + len(sites) and f[-1] == "0",
           "%s %d under the tracer: %s" % (exe, n, p.stderr))
    return sum(int(x) for x in f[1:-1]), int(f[0])


def alternate_under_tracer(a, work, insn):
    """paths=on hooks=inline's ALTERNATE_C built (static runtime, -no-pie)
    and traced (BREAK_C) at N = 2000 and 2N calls, after checking that its
    slow entry ran at least N times more: how many more times the
    instructions matching INSN (a regex of mnemonics) ran."""
    x86_64()
    tracer = os.path.join(work, "break")
    run([a.cc, "-O2", write_file(os.path.join(work, "break.c"), BREAK_C), "-o", tracer])
    src = write_file(os.path.join(work, "alternate.c"), ALTERNATE_C)
    exe = os.path.join(work, "alternate")
    # -no-pie: the addresses objdump gives are the running ones.
    build(a, exe, src, ["-no-pie"] + tally_opts("hooks=inline", "measure=cycles", "paths=on"),
          opt="-O2")
    stub = "__tally_cyc_enter_slow_paths_all"
    addr, sites = None, []
    for line in run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout.splitlines():
        m = re.match(r"([0-9a-f]+) <(\S+)>:$", line)
        if m and m.group(2) == stub:
            addr = int(m.group(1), 16)
        m = re.match(r"\s*([0-9a-f]+):\s+(%s)\b" % insn, line)
        if m:
            sites.append(int(m.group(1), 16))
    expect(addr is not None, "no %s in %s" % (stub, exe))
    # the runtime's, all in the program (static runtime)
    expect(sites, "no %s instruction in %s" % (insn, exe))
    n = 2000
    c1, h1 = sites_and_stub_hits(tracer, exe, addr, sites, n)
    c2, h2 = sites_and_stub_hits(tracer, exe, addr, sites, 2 * n)
    print("%d more calls of leaf: %d more slow entries, %d more %s "
          "(%d sites, %d executed in the %d-call run)" % (n, h2 - h1, c2 - c1, insn,
                                                         len(sites), c1, n))
    # Without the slow path taken on most of them, the case shows nothing.
    expect(h2 - h1 >= n, "the slow entry ran %d times more for %d more calls: the "
           "node cache did not miss as this case needs" % (h2 - h1, n))
    return c2 - c1


@case("slow-cpuid")
def check_slow_cpuid(a, work):
    # CPUID traps to the hypervisor in a virtual machine (microseconds):
    # the preserving stubs ask it once, not on every call.
    more = alternate_under_tracer(a, work, "cpuid")
    expect(more == 0, "the program executed %d CPUID instructions more for 2000 "
           "more calls (want none)" % more)


@case("miss-no-xsave")
def check_miss_no_xsave(a, work):
    # A node-cache miss with an instrumented caller is served in general
    # registers only: no XSAVE/XRSTOR (some 200 ns here) per miss.
    more = alternate_under_tracer(a, work, "xsave|xsavec|xsaveopt|fxsave|xsave64|fxsave64")
    expect(more == 0, "the program saved the vector state %d times more for 2000 "
           "more node-cache misses (want none)" % more)


# Values live in every kind of register across the slow paths: the
# thread's first hook is leaf's entry (body is not instrumented), and
# rec's 600000 activations overflow the 524288-frame shadow stack, so the
# deepest ones' exits find no frame.
REGS_C = REGS_LEAF_C + r"""
__attribute__ ((noinline)) double
rec (long n, double x)
{
  if (n == 0)
    return x;
  double r = rec (n - 1, x + 1.0);
  return r * 0.5 + x + (double) (n & 7);
}
""" + regs_body_c("__attribute__ ((no_instrument_function)) ") + r"""
__attribute__ ((no_instrument_function)) static double
rec_plain (long n, double x)
{
  double r = x + (double) n;
  for (long k = 1; k <= n; k++)
    r = r * 0.5 + (x + (double) (n - k)) + (double) ((k) & 7);
  return r;
}
__attribute__ ((no_instrument_function)) static void *deep (void *arg)
{
  (void) arg;
  if (rec (600000, 0.0) != rec_plain (600000, 0.0))
    __atomic_fetch_add (&bad, 1, __ATOMIC_RELAXED);
  return 0;
}
int main (void)
{
  body_threads ();
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setstacksize (&attr, (size_t) 1 << 30);
  pthread_t d;
  if (pthread_create (&d, &attr, deep, 0) != 0)
    return 2;
  pthread_join (d, 0);
  printf ("bad %ld\n", bad);
  return bad != 0;
}
"""


@case("preserved")
def check_preserved(a, work):
    x86_64()
    src = os.path.join(work, "regs.c")
    write_file(src, REGS_C)
    for opt in ("-O0", "-O2"):
        exe = os.path.join(work, "regs" + opt)
        # update=atomic: four threads call leaf.
        build(a, exe, src, tally_opts("hooks=inline", "measure=cycles", "update=atomic"),
              opt=opt, libs=["-lpthread"])
        data = exe + ".data"
        p = run_data(exe, data, check=False)
        expect(p.returncode == 0 and p.stdout.strip() == "bad 0",
               "%s: registers changed across the slow paths (exit %d): %s%s"
               % (opt, p.returncode, p.stdout, p.stderr))
        rows = report_rows(a, data)
        expect((rows["leaf"]["calls"], rows["leaf"]["exits"]) == (4000, 4000)
               and (rows["rec"]["calls"], rows["rec"]["exits"]) == (600001, 600001),
               "%s: counts leaf %s, rec %s" % (opt, (rows["leaf"]["calls"], rows["leaf"]["exits"]),
                                              (rows["rec"]["calls"], rows["rec"]["exits"])))


@case("call-preserved")
def check_call_preserved(a, work):
    x86_64()
    src = os.path.join(work, "regs.c")
    write_file(src, REGS_C)
    for opt in ("-O0", "-O2"):
        for update in ("single", "atomic"):
            exe = os.path.join(work, "regs-call-%s%s" % (update, opt))
            # update=single: the four threads may lose call counts (as
            # guarantees.md says); the registers must survive all the same.
            build(a, exe, src, tally_opts("hooks=call", "measure=cycles", "update=" + update),
                  opt=opt, libs=["-lpthread"])
            data = exe + ".data"
            p = run_data(exe, data, check=False)
            expect(p.returncode == 0 and p.stdout.strip() == "bad 0",
                   "%s update=%s: registers changed across the hooks (exit %d): %s%s"
                   % (opt, update, p.returncode, p.stdout, p.stderr))
            rows = report_rows(a, data)
            got = (rows["rec"]["calls"], rows["rec"]["exits"])
            expect(got == (600001, 600001), "%s update=%s: rec counts %s" % (opt, update, got))
            leaf = (rows["leaf"]["calls"], rows["leaf"]["exits"])
            expect(leaf == (4000, 4000) if update == "atomic"
                   else 0 < leaf[0] <= 4000 and 0 < leaf[1] <= 4000,
                   "%s update=%s: leaf counts %s" % (opt, update, leaf))


@case("consistency")
def check_consistency(a, work):
    x86_64()
    src = os.path.join(a.srcdir, "measure", "tree.c")
    counts = {"main": (1, 1), "a": (200, 200), "b": (400, 400), "c": (1200, 1200), "d": (1, 1)}
    children = {"main": ["a", "d"], "a": ["b"], "b": ["c"], "c": [], "d": []}
    for hooks in ("inline", "call"):
        for opt in ("-O0", "-O2", "-O3"):
            what = "tree.c hooks=%s %s" % (hooks, opt)
            exe = os.path.join(work, "tree-%s%s" % (hooks, opt))
            build(a, exe, src, tally_opts("hooks=" + hooks, "measure=cycles"), opt=opt,
                  libs=["-lpthread"])
            data = exe + ".data"
            p = run_data(exe, data)
            expect(p.stderr == "", "%s: runtime messages: %r" % (what, p.stderr))
            check_structure(what, report_rows(a, data), counts, children)


MIXED_CALL_C = r"""
int inl_leaf (int);
__attribute__ ((noinline)) int
c_leaf (int x)
{
  return x * 7 + 1;
}
__attribute__ ((noinline)) int
c_mid (int x)
{
  return c_leaf (x) + inl_leaf (x);
}
"""

MIXED_INLINE_C = r"""
#include <stdio.h>
int c_mid (int);
int c_leaf (int);
__attribute__ ((noinline)) int
inl_leaf (int x)
{
  return x * 3 + 2;
}
__attribute__ ((noinline)) int
inl_mid (int x)
{
  return inl_leaf (x) + c_leaf (x);
}
int
main (void)
{
  long s = 0;
  for (int i = 0; i < 1000; i++)
    s += c_mid (i) + inl_mid (i) + inl_leaf (i);
  printf ("%ld\n", s);
  return 0;
}
"""


@case("mixed")
def check_mixed(a, work):
    x86_64()
    call_src = os.path.join(work, "mixed-call.c")
    inl_src = os.path.join(work, "mixed-inline.c")
    write_file(call_src, MIXED_CALL_C)
    write_file(inl_src, MIXED_INLINE_C)
    objs = []
    for src, opts in ((call_src, ("hooks=call", "measure=cycles", "paths=on")),
                      (inl_src, ("hooks=inline", "measure=cycles"))):
        obj = src[:-2] + ".o"
        run([a.cc, "-O2", "-c", "-fplugin=" + a.plugin,
             *["-fplugin-arg-tally-" + o for o in opts], src, "-o", obj])
        objs.append(obj)
    exe = os.path.join(work, "mixed")
    run([a.cc, *objs, a.runtime, "-lpthread", "-o", exe])
    data = exe + ".data"
    p = run_data(exe, data)
    expect(p.stderr == "", "runtime messages: %r" % p.stderr)
    rows = report_rows(a, data)
    got = {n: (r["calls"], r["exits"]) for n, r in rows.items() if r["calls"]}
    want = {"main": (1, 1), "c_mid": (1000, 1000), "c_leaf": (2000, 2000),
            "inl_mid": (1000, 1000), "inl_leaf": (3000, 3000)}
    expect(got == want, "counts %s, want %s" % (sorted(got.items()), sorted(want.items())))
    check_sums("mixed", rows, ["main"])
    # The call tree has only the hooks=call unit's functions, on the paths
    # they were called on: an inline frame that inherited a slot's node
    # would add its cycles to a path of c_mid or c_leaf.
    tree = run([a.tally, "report", "--tree", data]).stdout
    expect("inl_leaf" not in tree and "inl_mid" not in tree,
           "the call tree has hooks=inline functions:\n%s" % tree)


if __name__ == "__main__":
    sys.exit(main("tally-cycles-"))
