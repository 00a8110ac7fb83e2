#!/usr/bin/env python3
"""hooks=call's x86-64 hook calls and the red zone (plugin/hooks.cc,
drop_red_zone_steps): a function that keeps nothing below its stack pointer
calls __tally_count with no step over the red zone (four instructions a
hook); a leaf whose frame is in the red zone keeps the step, and what it
keeps there survives the hooks.  Counts exact at every level.

Usage: run-hookcall.py CHECK --plugin P --runtime RT --tally T --cc CC
                       --include DIR ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import platform
import re
import sys

from checklib import Skip, case, disasm_insns, expect, main, report_calls, run, tally_opts

# plain: a leaf with no frame; rz: a leaf whose array lives in the red zone
# (its elements are read back after the exit hook's call is made: a call
# that pushed its return address into the red zone would change one);
# caller: not a leaf (never uses the red zone).
RZ_C = r"""
#include <stdio.h>
__attribute__ ((noinline)) int plain (int a, int b) { return a * b + 3; }
__attribute__ ((noinline)) int rz (int a)
{
  volatile long v[12];
  for (int i = 0; i < 12; i++)
    v[i] = a + 7 * i;
  long s = 0;
  for (int i = 0; i < 12; i++)
    s += v[i] * (i + 1);
  return (int) s;
}
__attribute__ ((noinline)) int caller (int a)
{
  return plain (a, a + 1) + rz (a) + (a & 1 ? puts ("") * 0 : 0);
}
int main (void)
{
  long s = 0;
  for (int i = 0; i < 1000; i++)
    s += caller (i);
  printf ("%ld\n", s);
  return 0;
}
"""


def want_sum():
    """What RZ_C prints, computed here."""
    s = 0
    for a in range(1000):
        rz = sum((a + 7 * i) * (i + 1) for i in range(12))
        s += a * (a + 1) + 3 + rz
    return s


def need_x86_64():
    if platform.machine() != "x86_64":
        raise Skip("(the register-preserving entry points are x86-64's)")


def hook_calls(insns):
    """(index, stepped) of each call of __tally_count(_atomic)."""
    res = []
    for i, ins in enumerate(insns):
        if re.search(r"call\s.*<__tally_count(_atomic)?>", ins):
            stepped = (i > 0 and insns[i - 1] == "lea    -0x80(%rsp),%rsp"
                       and i + 1 < len(insns)
                       and insns[i + 1] == "lea    0x80(%rsp),%rsp")
            res.append((i, stepped))
    return res


def uses_red_zone(insns):
    """Whether FN stores below its stack pointer: a negative %rsp offset."""
    return any(re.search(r"-0x[0-9a-f]+\(%rsp", ins)
               and "lea    -0x80(%rsp),%rsp" != ins for ins in insns)


@case("red-zone-step")
def check_red_zone_step(a, work):
    """At -O1 to -O3 and -Os, with update single/atomic/tls: functions
    that keep nothing below the stack pointer call the hook without the
    red-zone step, the red-zone leaf keeps it and computes what it should,
    and the counts are exact."""
    need_x86_64()
    src = os.path.join(work, "rz.c")
    with open(src, "w") as f:
        f.write(RZ_C)
    for opt in ("-O1", "-O2", "-O3", "-Os"):
        for update in ("single", "atomic", "tls"):
            what = "%s update=%s" % (opt, update)
            exe = os.path.join(work, "rz%s-%s" % (opt, update))
            run([a.cc, opt, "-fplugin=" + a.plugin, "-I", a.include,
                 *tally_opts("hooks=call", "at=late", "update=" + update),
                 src, "-o", exe, a.runtime, "-lpthread"])
            stepless = 0
            for fn in ("plain", "rz", "caller"):
                insns = disasm_insns(exe, fn)
                calls = hook_calls(insns)
                expect(len(calls) >= 2, "%s: %s: %d hook calls, want 2 or more\n  %s"
                       % (what, fn, len(calls), "\n  ".join(insns)))
                red = uses_red_zone(insns)
                for i, stepped in calls:
                    if red:
                        expect(stepped, "%s: %s keeps data in the red zone but "
                               "calls the hook without stepping over it\n  %s"
                               % (what, fn, "\n  ".join(insns)))
                    elif not stepped:
                        stepless += 1
                if fn != "rz":
                    expect(not red and not any(s for _, s in calls),
                           "%s: %s uses no red zone, yet steps over it\n  %s"
                           % (what, fn, "\n  ".join(insns)))
            expect(uses_red_zone(disasm_insns(exe, "rz")),
                   "%s: rz keeps nothing in the red zone (the test needs it to)"
                   % what)
            expect(stepless >= 4, "%s: %d hook calls without the step, want 4"
                   % (what, stepless))
            out = os.path.join(work, "rz.tally")
            p = run([exe], env={"TALLY_OUTPUT": out})
            expect(p.stdout.strip() == str(want_sum()),
                   "%s: printed %s, want %d" % (what, p.stdout.strip(), want_sum()))
            rows = report_calls(a, out)
            for fn, n in (("plain", 1000), ("rz", 1000), ("caller", 1000)):
                expect(rows.get(fn) == (n, n),
                       "%s: %s counted %s, want %d entries and exits"
                       % (what, fn, rows.get(fn), n))


# A public function (so it keeps update=tls's attach test) whose first
# argument stays in %rdi past the test, run by four threads.
PUB_C = r"""
#include <pthread.h>
#include <stdio.h>
__attribute__ ((noinline)) int probe (const int *t, int k)
{
  int i = k & 7;
  while (t[i] != k)
    {
      if (t[i] == 0)
        return -1;
      i = (i + 1) & 7;
    }
  return i;
}
static const int table[8] = { 8, 1, 2, 3, 4, 5, 6, 0 };
static void *worker (void *arg)
{
  long s = 0;
  for (int n = 0; n < 2500; n++)
    s += probe (table, n % 9);
  *(long *) arg = s;
  return NULL;
}
int main (void)
{
  pthread_t t[4];
  long s[4];
  for (int i = 0; i < 4; i++)
    pthread_create (&t[i], NULL, worker, &s[i]);
  for (int i = 0; i < 4; i++)
    pthread_join (t[i], NULL);
  printf ("%ld\n", s[0] + s[1] + s[2] + s[3]);
  return 0;
}
"""


@case("tls-attach-no-move")
def check_tls_attach_no_move(a, work):
    """update=tls: the attach test is the function's first two
    instructions, `addq $0x1,%fs:..` and `je`, with no register move for
    the cold call between them (the cold asm loads the module's address
    itself and keeps %rdi); executable and -fPIC; counts exact in four
    threads."""
    need_x86_64()
    src = os.path.join(work, "pub.c")
    with open(src, "w") as f:
        f.write(PUB_C)
    exe = os.path.join(work, "pub")
    so = os.path.join(work, "pub.so")
    flags = ["-fplugin=" + a.plugin, "-I", a.include,
             *tally_opts("update=tls")]
    run([a.cc, "-O2", *flags, src, "-o", exe, a.runtime, "-lpthread"])
    run([a.cc, "-O2", "-fPIC", "-shared", *flags, src, "-o", so])
    for obj in (exe, so):
        insns = disasm_insns(obj, "probe")
        text = "\n  ".join(insns)
        first = [i for i, ins in enumerate(insns) if ins.startswith("je")]
        expect(first, "%s: probe has no attach test\n  %s" % (obj, text))
        head = insns[:first[0] + 1]
        # The attach test folded into the entry count (run-tlsneg.py).
        expect(any(re.match(r"addq\s+\$0x1,%fs:", ins) for ins in head),
               "%s: probe's first branch is not the attach test\n  %s" % (obj, text))
        moves = [ins for ins in head if not re.match(r"(addq|je|mov\s+0x0\(%rip\)|mov\s+0x[0-9a-f]+\(%rip\))", ins)]
        expect(not moves, "%s: probe's hot path moves registers before its "
               "attach test: %s\n  %s" % (obj, moves, text))
    def probe(t, k):  # the C function, as Python
        i = k & 7
        while t[i] != k:
            if t[i] == 0:
                return -1
            i = (i + 1) & 7
        return i
    per = sum(probe([8, 1, 2, 3, 4, 5, 6, 0], n % 9) for n in range(2500))
    out = os.path.join(work, "pub.tally")
    p = run([exe], env={"TALLY_OUTPUT": out})
    expect(p.stdout.strip() == str(4 * per),
           "printed %s, want %d" % (p.stdout.strip(), 4 * per))
    rows = report_calls(a, out)
    expect(rows.get("probe") == (10000, 10000),
           "probe counted %s, want 10000 entries and exits" % (rows.get("probe"),))


if __name__ == "__main__":
    sys.exit(main("tally-hookcall-"))
