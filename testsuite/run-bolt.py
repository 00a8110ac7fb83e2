#!/usr/bin/env python3
"""benchmarks/bolt_exact.py, the comparison of tally's counts with LLVM
BOLT's on one run (issue 30), checked on testsuite/profile/guess.c and
the micro benchmark: built with blocks=count for BOLT (-fno-pie, -no-pie
-Wl,--emit-relocs), rewritten with llvm-bolt -instrument, run once.

Checks (one per run, named on the command line):
  exact   with -conservative-instrumentation (a BOLT counter on every edge,
          nothing inferred), every counter updated by `addq $K` equals K
          times BOLT's count of its machine block, and every function's
          entries BOLT's, but where a call in the machine block before the
          update explains it: guess.c's run B leaves interp by longjmp, so
          the rest of the block after that call never ran (tally counts 0,
          BOLT the block's arrival), and setjmp returns twice (the second
          arrival is on no edge of BOLT's); guess.c's run A and micro's
          runs are equal throughout.  The comparison fails against the
          profile of another run, so it can tell.
Skipped without llvm-bolt (Debian's bolt-19) or off x86-64.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import platform
import shutil
import sys

from checklib import Skip, case, expect, main, run, tally_opts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))


def bolt():
    tool = shutil.which("llvm-bolt-19") or shutil.which("llvm-bolt")
    if not tool or platform.machine() != "x86_64" or not shutil.which("objdump"):
        raise Skip("(llvm-bolt or objdump not installed, or not x86-64)")
    # The binary, not Debian's link: llvm-bolt finds its runtime in
    # BIN/../lib.
    return os.path.realpath(tool)


@case("exact")
def check_exact(a, work):
    import bolt_exact
    tool = bolt()
    progs = {"guess": (os.path.join(a.srcdir, "profile", "guess.c"), [["A", "100"], ["B", "100"]]),
             "micro": (os.path.join(os.path.dirname(a.srcdir), "benchmarks", "support", "micro.c"),
                       [["300"], ["700"]])}
    for name, (src, inputs) in progs.items():
        pre = os.path.join(work, name + ".pre-bolt")
        run([a.cc, "-O2", "-fno-pie", "-fplugin=" + a.plugin,
             *tally_opts("blocks=count", "hooks=none"), src, "-o", pre, "-no-pie",
             "-Wl,--emit-relocs", a.runtime])
        exe = os.path.join(work, name)
        p = run([tool, pre, "-o", exe, "-instrument", "-conservative-instrumentation",
                 "-instrumentation-file=" + exe + ".fdata",
                 "-instrumentation-file-append-pid",
                 "-runtime-instrumentation-lib=libbolt_rt_instr.a"], check=False)
        if p.returncode:
            raise Skip("(llvm-bolt cannot rewrite %s: %s)" % (name, p.stderr.strip()[-200:]))
        runs = []
        for k, args in enumerate(inputs):
            d = os.path.join(work, "%s-%d" % (name, k))
            os.makedirs(d)
            data = os.path.join(d, "tally.data")
            before = set(os.listdir(work))
            run([exe, *args], env={"TALLY_OUTPUT": data}, cwd=d)
            fdata = [os.path.join(work, f) for f in set(os.listdir(work)) - before
                     if f.startswith(name + ".fdata")]
            expect(fdata, "%s %s: BOLT wrote no profile" % (name, args))
            runs.append((data, fdata))
        for k, (data, fdata) in enumerate(runs):
            res = bolt_exact.compare(pre, data, fdata, a.tally)
            expect(res["counters"] - res["not_comparable"] > 0 and res["entries"] > 0,
                   "%s: nothing compared: %s" % (name, res))
            why = sorted({d["why"] or "unexplained" for d in res["diffs"]})
            want = ["call", "setjmp"] if (name, k) == ("guess", 1) else []
            expect(why == want and not res["entry_diffs"],
                   "%s %s: tally and BOLT differ on one run (expected: %s): %s" % (
                       name, inputs[k], want or "no difference",
                       "\n".join(bolt_exact.summary(res))))
        # Another run's profile: the comparison sees the difference.
        res = bolt_exact.compare(pre, runs[1][0], runs[0][1], a.tally)
        expect(bolt_exact.unexplained(res) and res["entry_diffs"],
               "%s: the counts of one input and BOLT's profile of another compare "
               "equal: %s" % (name, res))


if __name__ == "__main__":
    sys.exit(main("tally-bolt-"))
