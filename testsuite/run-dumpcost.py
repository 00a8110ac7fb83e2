#!/usr/bin/env python3
"""The exit dump's instructions (issue 16): the CRC-32 of the data file
(rt/crc32.c) against an independent one (Python's zlib), in every build of
it; its cost a byte where the CPU multiplies without carries; update=tls's
dump not walking other modules' threads per function (rt/tls.c,
rt/mapblob.c).

Usage: run-dumpcost.py CHECK --runtime RT --runtime-asan RT --srcdir DIR
                             --include DIR --cc CC ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import random
import shutil
import sys
import zlib

from checklib import Skip, callgrind_ir, case, crc_mulmod as mulmod, expect, main, run

CRC_MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
uint32_t tally_crc32 (uint32_t crc, const void *buf, size_t len);
uint32_t tally_rt_crc_mulmod (uint32_t a, uint32_t b);
/* Lines "c OFFSET LENGTH CRC SPLIT": tally_crc32 of the bytes, from CRC,
   in two calls split at SPLIT; "m A B": A times B.  The bytes are read
   from the file named by argv[1].  */
int main (int argc, char **argv) {
  static unsigned char buf[1 << 20];
  FILE *f = fopen (argv[1], "rb");
  size_t n = fread (buf, 1, sizeof buf, f);
  (void) argc; (void) n;
  char op; unsigned long off, len, split; unsigned a, b;
  while (scanf (" %c", &op) == 1)
    if (op == 'c' && scanf ("%lu %lu %x %lu", &off, &len, &a, &split) == 4)
      printf ("%08x\n", tally_crc32 (tally_crc32 (a, buf + off, split),
                                     buf + off + split, len - split));
#ifndef NO_MULMOD
    else if (op == 'm' && scanf ("%x %x", &a, &b) == 2)
      printf ("%08x\n", tally_rt_crc_mulmod (a, b));
#endif
  return 0; }
"""


def has_clmul():
    try:
        with open("/proc/cpuinfo") as f:
            return " pclmulqdq" in f.read()
    except OSError:
        return False


@case("crc32-zlib")
def check_crc32_zlib(a, work):
    """tally_crc32 equals zlib.crc32 for every length 0 to 300 at offsets 0
    to 7, long buffers (up to 1 MB), random starting CRCs, split in two
    calls anywhere; tally_rt_crc_mulmod equals a bit-at-a-time product.
    In the runtime (the carry-less multiplication where the CPU has it),
    the runtime under ASan/UBSan, and crc32.c built without it (the
    slicing-by-8 tables alone)."""
    rnd = random.Random(16)
    data = rnd.randbytes(1 << 20)
    blob = os.path.join(work, "bytes")
    with open(blob, "wb") as f:
        f.write(data)
    lines, want = [], []
    cases = [(off, n) for off in range(8) for n in range(301)]
    cases += [(rnd.randrange(64), rnd.randrange(300, 70000)) for _ in range(200)]
    cases += [(0, 1 << 20), (3, (1 << 20) - 3)]
    for off, n in cases:
        start = rnd.getrandbits(32) if rnd.random() < 0.7 else 0
        split = rnd.randrange(n + 1)
        lines.append("c %d %d %x %d" % (off, n, start, split))
        want.append("%08x" % zlib.crc32(data[off:off + n], start))
    for a_, b_ in [(0, 0), (1 << 31, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
                   (1, 1 << 31)] + [(rnd.getrandbits(32), rnd.getrandbits(32))
                                    for _ in range(500)]:
        lines.append("m %x %x" % (a_, b_))
        want.append("%08x" % mulmod(a_, b_))
    src = os.path.join(work, "crc.c")
    with open(src, "w") as f:
        f.write(CRC_MAIN)
    crc_c = os.path.join(a.srcdir, "..", "rt", "crc32.c")
    builds = {
        "runtime": [src, a.runtime, "-lpthread", "-ldl"],
        "runtime-asan": ["-fsanitize=address,undefined", src, a.runtime_asan,
                         "-lpthread", "-ldl"],
        "portable": ["-DNO_MULMOD", "-DTALLY_CRC_PORTABLE", "-I" + a.include,
                     src, crc_c],
    }
    for name, args in builds.items():
        exe = os.path.join(work, "crc-" + name)
        run([a.cc, "-O2", "-o", exe, *args])
        w = want if name != "portable" else want[:-504]
        inp = lines if name != "portable" else lines[:-504]
        got = run([exe, blob], input="\n".join(inp) + "\n").stdout.split()
        bad = [inp[i] for i in range(len(w)) if i >= len(got) or got[i] != w[i]]
        expect(len(got) == len(w) and not bad,
               "%s: %d of %d results wrong, e.g. %s" % (name, len(bad), len(w), bad[:3]))


@case("crc-cost")
def check_crc_cost(a, work):
    """On a CPU with PCLMULQDQ, tally_crc32 over 1 MB costs under 1
    instructions a byte (callgrind; slicing-by-8 alone took 3.7)."""
    if not shutil.which("valgrind"):
        raise Skip("(no valgrind)")
    if not has_clmul():
        raise Skip("(no pclmulqdq in /proc/cpuinfo)")
    src = os.path.join(work, "crc1m.c")
    with open(src, "w") as f:
        f.write("""#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
uint32_t tally_crc32 (uint32_t crc, const void *buf, size_t len);
static unsigned char buf[1 << 20];
__attribute__ ((noinline)) uint32_t one (void) { return tally_crc32 (0, buf, sizeof buf); }
int main (void) {
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char) (i * 131 + (i >> 9));
  tally_crc32 (0, buf, 64); /* the tables and the cpuid, outside the count */
  printf ("%08x\\n", one ());
  return 0; }
""")
    exe = os.path.join(work, "crc1m")
    run([a.cc, "-O2", "-o", exe, src, a.runtime, "-lpthread", "-ldl"])
    ir = callgrind_ir(exe, "one", work)
    per = ir / float(1 << 20)
    print("tally_crc32 over 1 MB: %d instructions, %.3f a byte" % (ir, per))
    expect(per < 1.0, "tally_crc32 costs %.2f instructions a byte" % per)


def units(n_units, fns_per_unit):
    """N_UNITS sources of FNS_PER_UNIT small functions each, and a main
    calling all of them, then tally_dump () (PERF_MID) or not."""
    srcs = {}
    for u in range(n_units):
        body = ["extern volatile int sink;"]
        for i in range(fns_per_unit):
            body.append("__attribute__ ((noinline)) int u%d_f%d (int x) "
                        "{ if (x & 1) sink = %d; else sink = x; return x + %d; }"
                        % (u, i, i, i))
        srcs["u%d.c" % u] = "\n".join(body) + "\n"
    m = ["#include <stdlib.h>", "#include <tally/tally.h>", "#include <tally/image.h>",
         "volatile int sink;"]
    for u in range(n_units):
        for i in range(fns_per_unit):
            m.append("int u%d_f%d (int x);" % (u, i))
    m.append("int main (int argc, char **argv) { int s = 0; (void) argv;")
    for u in range(n_units):
        for i in range(fns_per_unit):
            m.append("  s += u%d_f%d (argc + %d);" % (u, i, i))
    m.append("  tally_dump (); tally_exit_dump_off (); return s == 7; }")
    srcs["main.c"] = "\n".join(m) + "\n"
    return srcs


@case("tls-units")
def check_tls_units(a, work):
    """update=tls, 40 units of 40 functions all run by one thread (40
    attachments): the instructions of tally_dump () are at most 1.4 times
    those of the same program with single updates (each function's value
    reads walk the attachments of its own module, not every module's)."""
    if not shutil.which("valgrind"):
        raise Skip("(no valgrind)")
    srcs = units(40, 40)
    ir = {}
    for name, flags in (("single", ["blocks=count"]),
                        ("tls", ["blocks=count", "update=tls"])):
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        objs = []
        for fname, text in sorted(srcs.items()):
            path = os.path.join(d, fname)
            with open(path, "w") as f:
                f.write(text)
            obj = path[:-2] + ".o"
            run([a.cc, "-O2", "-I" + a.include, "-fplugin=" + a.plugin,
                 *["-fplugin-arg-tally-" + x for x in flags], "-c", path, "-o", obj])
            objs.append(obj)
        exe = os.path.join(d, "prog-" + name)
        run([a.cc, *objs, "-o", exe, "-Wl,--whole-archive", a.runtime,
             "-Wl,--no-whole-archive", "-lpthread", "-ldl"])
        ir[name] = callgrind_ir(exe, "tally_dump", work,
                                env={"TALLY_OUTPUT": os.path.join(d, "out.data")})
        run([a.tally, "dump", os.path.join(d, "out.data")])
    ratio = ir["tls"] / float(ir["single"])
    print("tally_dump: %d instructions single, %d with update=tls: %.3f"
          % (ir["single"], ir["tls"], ratio))
    expect(ratio <= 1.4, "update=tls's dump costs %.2f times single's" % ratio)


LATE = r"""
#include <stdio.h>
volatile int sink;
__attribute__ ((noinline)) void late_fn (int n)
{ for (int i = 0; i < n; i++) if (i & 1) sink += i; else sink -= 1; }
__attribute__ ((destructor)) static void late_dtor (void) { late_fn (7); }
int main (void) { late_fn (3); puts ("ok"); return 0; }
"""


@case("late-blocks")
def check_late_blocks(a, work):
    """Counts made after the exit dump (an ELF destructor) are in the file
    with block counters (count, visited, update=tls), written plainly and
    merged (%m): the exit dump takes the sums it watches from the values it
    writes, and the destructor's counts move them."""
    src = os.path.join(work, "late.c")
    with open(src, "w") as f:
        f.write(LATE)
    for mode in (["blocks=count"], ["blocks=visited"], ["blocks=count", "update=tls"]):
        exe = os.path.join(work, "late-" + "-".join(x.replace("=", "_") for x in mode))
        run([a.cc, "-O2", "-fplugin=" + a.plugin,
             *["-fplugin-arg-tally-" + x for x in mode], src, "-o", exe,
             a.runtime, "-lpthread", "-ldl"])
        for how, out in (("plain", exe + ".data"), ("merged", exe + "-%m.data")):
            p = run([exe], env={"TALLY_OUTPUT": out})
            expect(p.stdout == "ok\n", "%s: printed %r" % (exe, p.stdout))
            path = out.replace("%m", "")
            if how == "merged":
                names = [n for n in os.listdir(work)
                         if n.startswith(os.path.basename(exe) + "-") and n.endswith(".data")]
                expect(len(names) == 1, "%%m made %s" % names)
                path = os.path.join(work, names[0])
            rep = run([a.tally, "report", path]).stdout
            calls = {l.split()[-2]: int(l.split()[0]) for l in rep.splitlines()
                     if l.strip() and l.split()[0].isdigit() and len(l.split()) >= 4}
            expect(calls.get("late_fn") == 2 and calls.get("late_dtor") == 1,
                   "%s, %s: calls %s, want late_fn 2 and late_dtor 1:\n%s"
                   % (" ".join(mode), how, calls, rep))


if __name__ == "__main__":
    sys.exit(main("tally-dumpcost-"))
