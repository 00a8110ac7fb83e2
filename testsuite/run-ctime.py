#!/usr/bin/env python3
"""The form of the counter updates (plugin/hooks.cc, tally_updates_to_asm
and counter_asms_to_insns; issue 16 target 7, compile time): at=late on
x86-64 with update=single or tls, each counter update reaches RTL as one
asm statement ("addq N, COUNTER", the counter an in-out memory operand)
instead of a load, an add and a store, and after reload it is the add
instruction again, so the assembly has no #APP.  update=atomic,
counters=mapped and at=early keep their forms, and the add instructions
are back before the prologue is placed, so shrink-wrapping still works.  The counts stay those of
update=atomic (whose updates are left alone) on the same build.

Usage: run-ctime.py CHECK --plugin P --runtime RT --tally T --cc CC
                    --include DIR ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import glob
import os
import platform
import re
import sys

from checklib import (Skip, block_counts, build, case, disasm_insns, expect, main, run,
                      tally_opts, write_file)

# Branches, a switch, a loop with a call, a counted loop, an early return,
# recursion: blocks and edges of every kind get counters.
PROG_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__ ((noinline)) int classify (int x)
{
  switch (x % 5)
    {
    case 0: return 1;
    case 1: return x > 10 ? 2 : 3;
    case 3: if (x & 8) return 4; break;
    default: break;
    }
  return 0;
}
__attribute__ ((noinline)) long walk (const int *v, int n)
{
  long s = 0;
  for (int i = 0; i < n; i++)
    {
      if (v[i] < 0)
        return -s;
      s += classify (v[i]) * v[i];
    }
  return s;
}
__attribute__ ((noinline)) int fib (int n) { return n < 2 ? n : fib (n - 1) + fib (n - 2); }
int main (int argc, char **argv)
{
  int v[64];
  long t = 0;
  for (int r = 0; r < 50 + argc; r++)
    {
      for (int i = 0; i < 64; i++)
        v[i] = (i * 7 + r) % 41 - (i == 60 && r % 7 == 0);
      t += walk (v, 64);
    }
  printf ("%ld %d\n", t, fib (12 + (argv[0] == NULL)));
  return 0;
}
"""

TEMPLATE = '"add{q} {%1, %0|%0, %1}"'


def need_x86_64():
    if platform.machine() != "x86_64":
        raise Skip("(the asm form of the counter updates is x86-64's)")


def expand_insns(a, work, tag, flags, opt="-O2"):
    """The insns of the expand dump and the assembly of PROG_C compiled
    with FLAGS: (insns, assembly text)."""
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    src = write_file(os.path.join(d, "prog.c"), PROG_C)
    asm = os.path.join(d, "prog.s")
    run([a.cc, opt, "-fplugin=" + a.plugin, *flags, "-fdump-rtl-expand",
         "-dumpdir", d + "/", "-S", src, "-o", asm])
    dumps = glob.glob(os.path.join(d, "*.expand"))
    expect(len(dumps) == 1, "%s: no single expand dump in %s: %s" % (tag, d, dumps))
    with open(dumps[0]) as f:
        insns = re.split(r"\n(?=\((?:insn|call_insn|jump_insn) )", f.read())
    with open(asm) as f:
        return insns, f.read()


def counter_insns(insns):
    """The insns that touch a counter array's memory (__tally.c.N or, with
    update=tls, __tally.t.N): the address sets aside."""
    return [i for i in insns if re.search(r"\[\d+ __tally\.[ct]\.\d+\[", i)]


@case("one-insn")
def check_one_insn(a, work):
    """Each update one asm insn after expansion, the add instruction in the
    assembly, at -O1 to -Os, single and tls, hooks none and inline."""
    need_x86_64()
    for opt in ("-O1", "-O2", "-O3", "-Os"):
        for opts in (("blocks=count", "hooks=none"), ("blocks=count", "update=tls"),
                     ("hooks=inline",)):
            tag = "%s-%s" % (opt[1:], "-".join(o.replace("=", "_") for o in opts))
            insns, asm = expand_insns(a, work, tag, tally_opts(*opts), opt)
            touching = counter_insns(insns)
            asms = [i for i in touching if TEMPLATE in i]
            expect(asms, "%s: no counter update is an asm insn" % tag)
            loose = [i for i in touching if TEMPLATE not in i]
            expect(not loose, "%s: counter memory used outside the update asm:\n%s"
                   % (tag, "\n".join(loose[:3])))
            # (update=tls's attach test is an asm of its own: hooks.cc.)
            left = [b for b in re.findall(r"#APP\n(.*?)#NO_APP", asm, re.S)
                    if re.search(r"^\s*addq\s", b, re.M)]
            expect(not left, "%s: an update asm is left in the assembly:\n%s"
                   % (tag, "\n".join(left[:3])))
            # "addq $1, 16+__tally.c.0(%rip)", "addq $1, %fs:24(%rdx)", or
            # "addq $1, 24(%r13)" where the array's address is in a register
            # (PROG_C adds no constant to memory itself).
            # -Os: "incq".
            adds = re.findall(r"^\s*(?:addq\s+\$\d+,|incq)\s+(?:[^%\s]*\(|%fs:)", asm, re.M)
            expect(len(adds) >= len(asms),
                   "%s: %d update asms but %d memory adds of a counter in the assembly"
                   % (tag, len(asms), len(adds)))


@case("other-forms")
def check_other_forms(a, work):
    """update=atomic, counters=mapped and at=early: no update asm."""
    need_x86_64()
    for opts in (("blocks=count", "update=atomic"), ("blocks=count", "counters=mapped"),
                 ("blocks=count", "at=early")):
        tag = "-".join(o.replace("=", "_") for o in opts)
        insns, asm = expand_insns(a, work, tag, tally_opts(*opts))
        expect(not any(TEMPLATE in i for i in insns), "%s: an update asm" % tag)
        if "update=atomic" in opts:
            expect(re.search(r"lock addq", asm), "update=atomic: no lock add")


@case("exact")
def check_exact(a, work):
    """Block counts with the asm form equal update=atomic's, -O0 to -Os."""
    src = write_file(os.path.join(work, "prog.c"), PROG_C)
    for opt in ("-O0", "-O1", "-O2", "-O3", "-Os"):
        want = None
        for upd in ("atomic", "single", "tls"):
            exe = build(a, os.path.join(work, "p%s-%s" % (opt, upd)), src,
                        tally_opts("blocks=count", "update=" + upd), opt=opt)
            got = block_counts(a, exe, work, [])
            if want is None:
                want = got
                expect(any(c for cs in got.values() for c in cs if c),
                       "%s: no block counted" % opt)
                continue
            expect(got == want, "%s update=%s: block counts differ from update=atomic's:\n%s\n%s"
                   % (opt, upd, got, want))


# A leaf shaped like bzip2's mainGtU: its fast path (the first bytes
# differ) needs no callee-saved register, its slow path does, and both
# end in the same return block.  GCC shrink-wraps it by copying that
# block, which it does not when the block's exit count is an asm (it
# counts an asm as 16 bytes): the pushes then move to the entry.
SHRINK_C = r"""
#include <stdio.h>
#define STEP(b, i1, i2, c1, c2) \
  c1 = b[i1]; c2 = b[i2]; if (c1 != c2) return c1 > c2; i1++; i2++;
#define QSTEP(b, q, i1, i2, c1, c2, s1, s2) \
  c1 = b[i1]; c2 = b[i2]; if (c1 != c2) return c1 > c2; \
  s1 = q[i1]; s2 = q[i2]; if (s1 != s2) return s1 > s2; i1++; i2++;
__attribute__ ((noinline)) int
gt (unsigned i1, unsigned i2, const unsigned char *b, const unsigned short *q,
    unsigned n, int *budget)
{
  unsigned char c1, c2;
  unsigned short s1, s2;
  STEP (b, i1, i2, c1, c2) STEP (b, i1, i2, c1, c2) STEP (b, i1, i2, c1, c2)
  STEP (b, i1, i2, c1, c2) STEP (b, i1, i2, c1, c2) STEP (b, i1, i2, c1, c2)
  int k = n + 8;
  do
    {
      QSTEP (b, q, i1, i2, c1, c2, s1, s2) QSTEP (b, q, i1, i2, c1, c2, s1, s2)
      QSTEP (b, q, i1, i2, c1, c2, s1, s2) QSTEP (b, q, i1, i2, c1, c2, s1, s2)
      if (i1 >= n) i1 -= n;
      if (i2 >= n) i2 -= n;
      k -= 4;
      (*budget)--;
    }
  while (k >= 0);
  return 0;
}
int main (void)
{
  static unsigned char b[128];
  static unsigned short q[128];
  int budget = 0, t = 0;
  for (int i = 0; i < 128; i++)
    b[i] = (unsigned char) (i % 3 == 0), q[i] = (unsigned short) (i / 7);
  for (unsigned i = 0; i < 100; i++)
    t += gt (i, i + 3, b, q, 100, &budget);
  printf ("%d %d\\n", t, budget);
  return 0;
}
"""


def entry_pushes(insns):
    """The pushes before FUNC's first conditional jump: its entry block's."""
    pushes = []
    for text in insns:
        if re.match(r"j(?!mp)\w+\s", text):
            break
        if text.startswith("push"):
            pushes.append(text)
    return pushes


@case("shrink-wrap")
def check_shrink_wrap(a, work):
    """The add instructions are back before the prologue is placed: a leaf
    GCC shrink-wraps without the plugin is shrink-wrapped with it (no push
    before the first test), with hooks=inline and with blocks=count."""
    need_x86_64()
    src = write_file(os.path.join(work, "shrink.c"), SHRINK_C)
    plain = os.path.join(work, "shrink-plain.o")
    run([a.cc, "-O2", "-c", src, "-o", plain])
    insns = disasm_insns(plain, "gt")
    if entry_pushes(insns) or not any(t.startswith("push") for t in insns):
        raise Skip("(this GCC does not shrink-wrap the test's leaf: %s)" % insns[:8])
    for opts in (("hooks=inline",), ("blocks=count", "hooks=none"),
                 ("blocks=count", "update=tls")):
        tag = "-".join(o.replace("=", "_") for o in opts)
        obj = os.path.join(work, "shrink-%s.o" % tag)
        run([a.cc, "-O2", "-fplugin=" + a.plugin, *tally_opts(*opts), "-c", src, "-o", obj])
        got = disasm_insns(obj, "gt")
        expect(any(re.search(r"(addq|incq)\s.*(__tally|%fs:)", t) or "add" in t and "(%rip)" in t
                   for t in got), "%s: no counter update in gt: %s" % (tag, got[:12]))
        expect(not entry_pushes(got), "%s: gt pushes %s before its first test (not shrink-"
               "wrapped; without the plugin it is): %s" % (tag, entry_pushes(got), got[:12]))


if __name__ == "__main__":
    sys.exit(main("tally-ctime-"))
