#!/usr/bin/env python3
"""What the hot paths of hooks=call and update=tls cost, checked in the
machine code, and what their x86-64 calling convention promises
(doc/runtime.md, "The hook entry points"): a leaf function stays a leaf (no
push, no stack adjustment, no __tls_get_addr, also in -fPIC code), every
register and vector register the instrumented code keeps across a hook or
the first-use attach survives it, the counts stay exact under threads, and
a dlopen'ed update=tls library that finds no room in glibc's static TLS
surplus fails to load with glibc's message, never a crash.

Usage: run-hookperf.py CHECK --plugin P --runtime RT --tally T --cc CC
                       --include DIR ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import platform
import re
import sys

from checklib import LEAF_C, REGS_LEAF_C, Failure, Skip, case, expect, main, regs_body_c, run


LIB_C = r"""
__attribute__ ((noinline)) int lleaf (int a, int b) { return a * b + 3; }
int lentry (int a) { return lleaf (a, a + 1); }
"""

# A leaf whose arguments (six in integer registers, eight in vector
# registers) are all live across the entry hook and, in a new thread, the
# attach: any register the runtime's entry points failed to keep changes
# the result.
REGS_C = REGS_LEAF_C + regs_body_c() + r"""
int main (void)
{
  body_threads ();
  body ((void *) 900000L);
  printf ("bad %ld\n", bad);
  return bad != 0;
}
"""

# Static functions called only by instrumented functions of their unit
# (sleaf, smid) need no attach test of their own: their callers attached
# the thread.  body is static too, but its address goes to pthread_create.
STATIC_C = r"""
#include <pthread.h>
#include <stdio.h>
static __attribute__ ((noinline)) int sleaf (int a) { return a * 3 + 1; }
static __attribute__ ((noinline)) int smid (int a) { return sleaf (a) + sleaf (a + 1); }
int pub (int a) { return smid (a); }
static long sums[5];
static void *body (void *arg)
{
  long s = 0, k = (long) arg;
  for (int i = 0; i < 1000; i++)
    s += pub (i + (int) k);
  sums[k] = s;
  return 0;
}
int main (void)
{
  pthread_t t[4];
  for (long k = 0; k < 4; k++)
    pthread_create (&t[k], 0, body, (void *) k);
  for (int k = 0; k < 4; k++)
    pthread_join (t[k], 0);
  body ((void *) 4L);
  printf ("%ld %ld\n", sums[0], sums[4]);
  return 0;
}
"""

HOST_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    {
      void *h = dlopen (argv[i], RTLD_NOW);
      if (!h)
        {
          printf ("%s: dlopen failed: %s\n", argv[i], dlerror ());
          continue;
        }
      int (*f) (int) = (int (*) (int)) dlsym (h, "lentry");
      printf ("%s: %d\n", argv[i], f ? f (3) : -1);
    }
  return 0;
}
"""

# Functions in the library too big for glibc's optional static TLS
# surplus (512 bytes by default): 16 bytes of counters each.
NBIG = 400


def big_c():
    lines = ["int f%d (int x) { return x * %d + 1; }" % (i, i) for i in range(NBIG)]
    lines.append("int lentry (int x) { int s = 0;"
                 + "".join(" s += f%d (x);" % i for i in range(NBIG))
                 + " return s; }")
    return "\n".join(lines) + "\n"


def need_x86_64():
    if platform.machine() != "x86_64":
        raise Skip("(the register-preserving entry points are x86-64's)")


def write(work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def plugin(a, *opts):
    return ["-fplugin=" + a.plugin, "-I", a.include,
            *["-fplugin-arg-tally-" + o for o in opts]]


def shared_rt(a):
    d = os.path.dirname(a.runtime)
    return ["-L" + d, "-ltally-rt", "-Wl,-rpath," + d]


def counts(a, path):
    p = run([a.tally, "report", "--csv", path])
    res = {}
    for line in p.stdout.splitlines()[1:]:
        f = line.split(",")
        res[f[2]] = (int(f[0]), int(f[1]))
    return res


def disassemble(obj, fn):
    """The instructions of FN in OBJ, one string each."""
    out = run(["objdump", "-d", "--no-show-raw-insn", obj]).stdout
    m = re.search(r"^[0-9a-f]+ <%s>:\n(.*?)(?:\n\n|\Z)" % re.escape(fn), out,
                  re.S | re.M)
    expect(m, "%s: no function %s in the disassembly" % (obj, fn))
    return [l.split(":", 1)[1].strip() for l in m.group(1).splitlines()
            if ":" in l]


def expect_leaf(obj, fn, what):
    """FN in OBJ saves no register, moves the stack pointer only around
    the runtime's entry points (below the red zone and back), and finds its
    thread-locals without __tls_get_addr."""
    insns = disassemble(obj, fn)
    text = "\n  ".join(insns)
    for i, ins in enumerate(insns):
        expect(not ins.startswith("push"), "%s: %s pushes: %s\n  %s"
               % (what, fn, ins, text))
        expect("__tls_get_addr" not in ins, "%s: %s calls __tls_get_addr\n  %s"
               % (what, fn, text))
        if re.match(r"(sub|add)\s+\$.*,%rsp$", ins):
            raise Failure("%s: %s moves the stack pointer: %s\n  %s"
                          % (what, fn, ins, text))
        if ins.startswith("call") or ins.startswith("addr32 call"):
            expect(i > 0 and insns[i - 1] == "lea    -0x80(%rsp),%rsp",
                   "%s: %s makes a call GCC sees: %s\n  %s" % (what, fn, ins, text))


@case("leaf-no-frame")
def check_leaf_no_frame(a, work):
    """update=tls (executable and -fPIC library) and hooks=call leave a leaf
    without frame, saved register or __tls_get_addr; the counts are
    exact."""
    need_x86_64()
    src = write(work, "leaf.c", LEAF_C)
    lib = write(work, "lib.c", LIB_C)
    for opts in (["update=tls"], ["hooks=call"], ["hooks=call", "update=atomic"],
                 ["hooks=call", "update=tls"]):
        what = " ".join(opts)
        exe = os.path.join(work, "leaf-" + "-".join(opts).replace("=", "_"))
        run([a.cc, "-O2", *plugin(a, *opts), src, "-o", exe, a.runtime, "-lpthread"])
        expect_leaf(exe, "leaf", what)
        out = os.path.join(work, "leaf.tally")
        run([exe], env={"TALLY_OUTPUT": out})
        got = counts(a, out)
        expect(got.get("leaf") == (2000, 2000) and got.get("mid") == (1000, 1000),
               "%s: counts %s" % (what, got))
        so = os.path.join(work, "lib-" + "-".join(opts).replace("=", "_") + ".so")
        run([a.cc, "-O2", "-fPIC", "-shared", *plugin(a, *opts), lib, "-o", so])
        expect_leaf(so, "lleaf", what + " -fPIC")


@case("preserved")
def check_preserved(a, work):
    """Every integer and vector argument of a leaf survives the hooks and
    the first-use attach of four new threads; the counts are exact where
    the update is atomic or per thread (update=single may lose increments
    of threads racing on one counter: at most 5000)."""
    need_x86_64()
    src = write(work, "regs.c", REGS_C)
    for opts in (["update=tls"], ["hooks=call"], ["hooks=call", "update=atomic"],
                 ["hooks=call", "update=tls"], ["update=tls", "blocks=count"]):
        for opt in ("-O2", "-O3"):
            what = " ".join(opts) + " " + opt
            exe = os.path.join(work, "regs")
            run([a.cc, opt, *plugin(a, *opts), src, "-o", exe, a.runtime,
                 "-lpthread"])
            out = os.path.join(work, "regs.tally")
            p = run([exe], env={"TALLY_OUTPUT": out}, check=False)
            expect(p.returncode == 0 and p.stdout.strip() == "bad 0",
                   "%s: a value did not survive the hooks: %s%s"
                   % (what, p.stdout, p.stderr))
            got = counts(a, out)
            if "update=tls" in opts or "update=atomic" in opts:
                expect(got.get("leaf") == (5000, 5000),
                       "%s: leaf counted %s, want 5000 entries and exits"
                       % (what, got.get("leaf")))
            else:
                # update=single: five threads on one counter may lose
                # increments (doc/guarantees.md), never add any.
                e, x = got.get("leaf", (0, 0))
                expect(0 < e <= 5000 and 0 < x <= 5000,
                       "%s: leaf counted %s, want at most 5000 entries and "
                       "exits (update=single in threads)" % (what, (e, x)))


@case("dlopen-static-tls")
def check_dlopen_static_tls(a, work):
    """update=tls libraries use static TLS: a small one dlopen'ed fits in
    glibc's surplus and counts exactly; one too big fails to load with
    glibc's message, the program goes on, and the file keeps every other
    count; with the surplus raised (GLIBC_TUNABLES) or built
    tls-model=dynamic it loads and counts exactly."""
    if platform.system() != "Linux":
        raise Skip("(glibc's static TLS)")
    small = os.path.join(work, "small.so")
    big = os.path.join(work, "big.so")
    bigdyn = os.path.join(work, "bigdyn.so")
    run([a.cc, "-O2", "-fPIC", "-shared", *plugin(a, "update=tls"),
         write(work, "lib.c", LIB_C), "-o", small, *shared_rt(a)])
    bsrc = write(work, "big.c", big_c())
    run([a.cc, "-O2", "-fno-inline", "-fPIC", "-shared", *plugin(a, "update=tls"),
         bsrc, "-o", big, *shared_rt(a)])
    run([a.cc, "-O2", "-fno-inline", "-fPIC", "-shared",
         *plugin(a, "update=tls", "tls-model=dynamic"), bsrc, "-o", bigdyn,
         *shared_rt(a)])
    dyn = run(["readelf", "-d", big]).stdout
    expect("STATIC_TLS" in dyn, "big.so: no STATIC_TLS flag:\n" + dyn)
    relocs = run(["objdump", "-dr", bigdyn]).stdout
    expect("__tls_get_addr" in relocs, "tls-model=dynamic: no __tls_get_addr")
    relocs = run(["objdump", "-dr", big]).stdout
    expect("__tls_get_addr" not in relocs, "tls-model=initial-exec: __tls_get_addr")
    host = os.path.join(work, "host")
    run([a.cc, "-O2", *plugin(a, "update=tls"), write(work, "host.c", HOST_C),
         "-o", host, *shared_rt(a), "-ldl"])
    sum_big = sum(3 * i + 1 for i in range(NBIG))
    out = os.path.join(work, "h.tally")

    # 1. Too big for the surplus: dlopen fails softly.
    p = run([host, small, big], env={"TALLY_OUTPUT": out}, check=False)
    expect(p.returncode == 0, "dlopen of big.so crashed the program (%d): %s%s"
           % (p.returncode, p.stdout, p.stderr))
    expect("small.so: 15" in p.stdout, "small.so did not load: " + p.stdout)
    expect(re.search(r"big\.so: dlopen failed: .*static TLS", p.stdout),
           "big.so: want glibc's static TLS message from dlopen, got: " + p.stdout)
    got = counts(a, out)
    expect(got.get("lleaf") == (1, 1) and got.get("lentry") == (1, 1)
           and got.get("main") == (1, 1),
           "the counts beside the failed dlopen: %s" % got)
    expect(not any(k.startswith("f") and k[1:].isdigit() and v != (0, 0)
                   for k, v in got.items()), "big.so counted: %s" % got)

    # 2. The surplus raised, or the library built tls-model=dynamic.
    for lib, env in ((big, {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=65536"}),
                     (bigdyn, {})):
        env = dict(env, TALLY_OUTPUT=out)
        p = run([host, lib], env=env, check=False)
        expect(p.returncode == 0 and "%s: %d" % (lib, sum_big) in p.stdout,
               "%s with %s: %s%s" % (lib, env, p.stdout, p.stderr))
        got = counts(a, out)
        for i in range(NBIG):
            expect(got.get("f%d" % i) == (1, 1),
                   "%s: f%d counted %s" % (lib, i, got.get("f%d" % i)))


@case("implied-attach")
def check_implied_attach(a, work):
    """update=tls: static functions whose every caller is an instrumented
    function of the unit have no attach test; an address-taken one and an
    exported one keep it; the counts in five threads are exact."""
    need_x86_64()
    src = write(work, "static.c", STATIC_C)
    exe = os.path.join(work, "static")
    run([a.cc, "-O2", "-fno-inline", *plugin(a, "update=tls"), src, "-o", exe,
         a.runtime, "-lpthread"])
    for fn, test in (("sleaf", False), ("smid", False), ("body", True), ("pub", True)):
        insns = disassemble(exe, fn)
        tests = [i for i in insns if re.match(r"cmpq\s+\$0x0,%fs:", i)]
        expect(bool(tests) == test, "%s: %s an attach test:\n  %s"
               % (fn, "want" if test else "does not need", "\n  ".join(insns)))
    out = os.path.join(work, "static.tally")
    run([exe], env={"TALLY_OUTPUT": out})
    got = counts(a, out)
    want = {"sleaf": (10000, 10000), "smid": (5000, 5000), "pub": (5000, 5000),
            "body": (5, 5), "main": (1, 1)}
    for fn, c in want.items():
        expect(got.get(fn) == c, "%s counted %s, want %s" % (fn, got.get(fn), c))


@case("bad-tls-model")
def check_bad_tls_model(a, work):
    """A bad tls-model value is an error naming the accepted values."""
    src = write(work, "leaf.c", LEAF_C)
    p = run([a.cc, "-O2", *plugin(a, "update=tls", "tls-model=global"), "-c", src,
             "-o", os.path.join(work, "leaf.o")], check=False)
    expect(p.returncode != 0 and "tls-model" in p.stderr
           and "initial-exec, dynamic" in p.stderr,
           "want an error naming initial-exec and dynamic: %s" % p.stderr)


if __name__ == "__main__":
    sys.exit(main("tally-hookperf-"))
