#!/usr/bin/env python3
"""measure.py - what each measurement mode costs per call, on a
microbenchmark of tiny nested functions (benchmarks/nested.c, 5 calls per
iteration), next to -finstrument-functions (empty and counting hooks), -pg
and uftrace, all measured in the same run against an uninstrumented build.

Usage: benchmarks/measure.py [--build DIR] [--runs N] [--iters N] [--out FILE]

  --build DIR  tally's build directory (default: ./build; run ./dev build first)
  --runs N     paired wall-clock runs per variant (default 7)
  --iters N    iterations for the timed runs (default 4000000: 20 M calls)
  --out FILE   also write the Markdown table to FILE

Per variant:
  Ir/call   (instructions of the variant - instructions of the base build)
            / calls, from valgrind --tool=cachegrind at 200000 iterations
            (deterministic);
  ns/call   median over the paired runs of (variant - base) wall time /
            calls; each pair runs the base and the variant back to back,
            alternating which goes first;
  time x    median of the pairs' variant/base time ratios.
Below the table: the cost of one bare `rdtsc` on this machine (the floor
of the cycles modes, which read it twice per call), timed in the same run.
uftrace records every call to disk, so it is timed at a tenth of the
iterations (against a base run of the same size) and not run under
cachegrind (its work is in another process).  Options that cannot be built
here (PAPI missing, uftrace missing) are skipped and said so.

A variant is probe-able by compiling a tiny file: `cc -fplugin=... 
-fplugin-arg-tally-measure=cycles -c x.c` fails with a clear error where
the option is not supported.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CALLS_PER_ITER = 5


# One bare time-stamp read, timed over 10^7 of them: prints ns per read.
TSC_PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <time.h>
int main (void)
{
  struct timespec a, b;
  uint64_t s = 0;
  clock_gettime (CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 10000000; i++)
    {
      uint32_t lo, hi;
      __asm__ __volatile__ ("rdtsc" : "=a"(lo), "=d"(hi));
      s += lo ^ hi;
    }
  clock_gettime (CLOCK_MONOTONIC, &b);
  printf ("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e7
          + (s == 1 ? 1e-9 : 0));
  return 0;
}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--iters", type=int, default=4000000)
    ap.add_argument("--out")
    a = ap.parse_args()
    plugin = os.path.join(a.build, "plugin", "tally.so")
    rt = os.path.join(a.build, "rt", "libtally-rt.a")
    for f in (plugin, rt):
        if not os.path.exists(f):
            sys.exit("measure.py: %s missing; run ./dev build first" % f)
    work = tempfile.mkdtemp(prefix="tally-measure-bench-")
    src = os.path.join(HERE, "nested.c")
    cyg = os.path.join(HERE, "cyg-hooks.c")
    T = "-fplugin-arg-tally-"

    def tally(*opts, libs=()):
        return (["-fplugin=" + plugin] + [T + o for o in opts], [rt, *libs])

    papi = "-lpapi"
    have_papi = subprocess.run(["gcc", "-x", "c", "-", "-o", os.devnull, papi],
                               input="int main(void){return 0;}",
                               text=True, capture_output=True).returncode == 0
    variants = [
        ("base", [], [], {}),
        ("tally inline count", *tally(), {}),
        ("tally call count", *tally("hooks=call"), {}),
        ("tally inline cycles", *tally("measure=cycles"), {}),
        ("tally call cycles", *tally("hooks=call", "measure=cycles"), {}),
        ("tally inline cycles exit=frames",
         *tally("measure=cycles", "exit=frames"), {}),
        ("tally call cycles exit=frames",
         *tally("hooks=call", "measure=cycles", "exit=frames"), {}),
        ("tally inline cycles paths=on",
         *tally("measure=cycles", "paths=on"), {}),
        ("tally call cycles paths=on",
         *tally("hooks=call", "measure=cycles", "paths=on"), {}),
    ]
    if have_papi:
        variants.append(("tally call papi (perf::TASK-CLOCK)",
                         *tally("hooks=call", "measure=papi",
                                libs=[os.path.join(a.build, "rt", "libtally-rt-papi.a"), papi]),
                         {"TALLY_PAPI_EVENTS": "perf::TASK-CLOCK"}))
    variants += [
        ("-finstrument-functions, empty hooks", ["-finstrument-functions"],
         ["CYG"], {}),
        ("-finstrument-functions, counting hooks", ["-finstrument-functions"],
         ["CYG-COUNT"], {}),
        ("-pg", ["-pg"], [], {}),
    ]
    exes = {}
    for name, cflags, libs, env in variants:
        exe = os.path.join(work, re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"))
        extra = []
        for l in libs:
            if l in ("CYG", "CYG-COUNT"):
                obj = exe + ".cyg.o"
                sh(["gcc", "-O2", "-c", cyg, "-o", obj]
                   + (["-DCOUNT"] if l == "CYG-COUNT" else []))
                extra.append(obj)
            else:
                extra.append(l)
        sh(["gcc", "-O2", *cflags, src, "-o", exe, *extra])
        exes[name] = (exe, env)

    def env_of(extra):
        e = dict(os.environ)
        e["TALLY_OUTPUT"] = os.path.join(work, "out.%p.data")
        e.update(extra)
        return e

    # 1. Instructions (cachegrind).
    small = 200000
    ir = {}
    for name, (exe, env) in exes.items():
        cg = os.path.join(work, "cg.out")
        p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                            "--cachegrind-out-file=" + cg, exe, str(small)],
                           env=env_of(env), capture_output=True, text=True, cwd=work)
        m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
        ir[name] = int(m.group(1).replace(",", "")) if m else None

    # 2. Paired wall-clock runs.
    def timed(cmd, env):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd=work, check=True)
        return time.perf_counter() - t

    def pairs(cmd_v, env_v, cmd_b, iters):
        ratios, deltas = [], []
        for r in range(a.runs):
            if r % 2:
                tv = timed(cmd_v, env_v)
                tb = timed(cmd_b, env_of({}))
            else:
                tb = timed(cmd_b, env_of({}))
                tv = timed(cmd_v, env_v)
            ratios.append(tv / tb)
            deltas.append((tv - tb) / (iters * CALLS_PER_ITER) * 1e9)
        return statistics.median(ratios), statistics.median(deltas)

    base_exe = exes["base"][0]
    rows = []
    for name, (exe, env) in exes.items():
        if name == "base":
            continue
        ratio, ns = pairs([exe, str(a.iters)], env_of(env), [base_exe, str(a.iters)],
                          a.iters)
        ir_call = (ir[name] - ir["base"]) / (small * CALLS_PER_ITER) if ir[name] and ir["base"] else None
        rows.append((name, ir_call, ns, ratio))
        print("%-42s %s" % (name, rows[-1][1:]), file=sys.stderr)

    # uftrace record of the -pg build, at a tenth of the iterations.
    if shutil.which("uftrace"):
        few = max(a.iters // 10, 1000)
        data = os.path.join(work, "uftrace.data")
        cmd = ["uftrace", "record", "--no-libcall", "-d", data, exes["-pg"][0], str(few)]
        ratio, ns = pairs(cmd, env_of({}), [base_exe, str(few)], few)
        rows.append(("uftrace record (-pg build)", None, ns, ratio))
        print("%-42s %s" % (rows[-1][0], rows[-1][1:]), file=sys.stderr)
    else:
        print("measure.py: uftrace not installed; its row is left out", file=sys.stderr)
    if not have_papi:
        print("measure.py: -lpapi does not link; the papi row is left out", file=sys.stderr)

    # The floor of the cycles modes: what one bare time-stamp read costs
    # here (two per call), measured in the same run.
    tsc = os.path.join(work, "tsc")
    sh(["gcc", "-O2", "-x", "c", "-", "-o", tsc], input=TSC_PROGRAM)
    reads = [float(sh([tsc]).stdout) for _ in range(5)]
    floor = statistics.median(reads)
    print("bare rdtsc: %.2f ns per read (median of 5 x 10^7 reads)" % floor,
          file=sys.stderr)

    lines = ["| variant | Ir/call | ns/call | time x base |",
             "|---|---:|---:|---:|"]
    for name, irc, ns, ratio in rows:
        lines.append("| %s | %s | %.2f | %.2f |" % (
            name, "%.1f" % irc if irc is not None else "-", ns, ratio))
    lines.append("")
    lines.append("A bare `rdtsc` costs %.2f ns here (median of 5 loops of 10^7 reads): "
                 "the cycles modes read it twice per call, %.1f ns." % (floor, 2 * floor))
    table = "\n".join(lines)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(table + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
