#!/usr/bin/env python3
"""frames.py - LOPI's return frames (exit=frames) against return-site exits
(exit=returns), on a C++ workload and a C workload, next to uftrace, which
hijacks return addresses too (issue 29).  The columns are those of the
LOPI paper's Table 2 (../shared/seeds/lopi-low-overhead-program-
instrumentation.txt): each as the ratio of the variant to the
uninstrumented build.

Usage: benchmarks/frames.py [--quick] [--programs LIST] [--runs N]
                            [--work DIR] [--build DIR] [--out FILE]

  --quick      small inputs and 3 paired wall-clock runs: checks that
               everything builds, runs and gives the same output (a minute
               or two once built; its numbers are not for publishing)
  --programs LIST  yaml,lua (the default) or one of them
  --runs N     paired wall-clock runs per variant (default 5; --quick 3)
  --work DIR   sources, builds and runs (default build/bench-work; not
               tracked by git)
  --build DIR  tally's build directory (default build; ./dev build first)
  --out FILE   also write the Markdown tables to FILE

Workloads (Debian bookworm source packages, fetched with apt-get source
--download-only and unpacked with dpkg-source -x, built directly with
gcc/g++ -O2, like benchmarks/user-hooks.sh):
  yaml (C++)  yaml-cpp 0.7.0's library and benchmarks/yaml-workload.cpp:
              parse, walk, convert (some conversions throw) and emit a
              generated document, and parse broken documents (the parser
              throws from deep inside)
  lua (C)     the lua5.4 interpreter (every src/*.c but luac.c, a fixed
              string-hash seed) running benchmarks/lua-workload.lua
Variants (all measure=cycles at=late, so the two exit modes measure the
same thing; update=single):
  base            uninstrumented
  returns-inline  hooks=inline exit=returns  (tally's default exit)
  frames-inline   hooks=inline exit=frames   (LOPI's return frames)
  returns-call    hooks=call exit=returns
  frames-call     hooks=call exit=frames
  uftrace         -pg, run under `uftrace record --no-libcall` (uftrace's
                  mcount hook replaces each return address with its own
                  return trampoline, as LOPI does; it also records every
                  call and return to disk)

Metrics:
  cachegrind  valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes
              on the smaller input (deterministic): instructions (Ir),
              branches (Bc + Bi) and their mispredictions (Bcm + Bim), L1
              data references (Dr + Dw) and misses (D1mr + D1mw), L1
              instruction references (Ir) and misses (I1mr), last-level
              references (the L1 misses) and misses (ILmr + DLmr + DLmw),
              cachegrind's model of this machine's caches; for uftrace the
              program's own process (valgrind --trace-children=yes, the
              file whose command is the workload's)
  wall        the median of N runs of the variant and of N runs of the base
              alternated with them (base first on odd rounds), their ratio
              (LOPI's "total cycles" column) and the range of the per-pair
              ratios (the noise)
  per call    (Ir - base Ir) / calls, the calls tally counted (uftrace: the
              same count as returns-inline, the same source functions)
A uftrace run longer than 200 times the uninstrumented one (at least
120 s) is killed and its row says so (n/a).
Checks: every variant's output equals the base's; the frames variants store
or call the trampoline and the returns variants do not; frames and returns
count the same calls and exits (tally report --csv, per body).

Timing runs want a quiet machine (`uptime` load under 1.5): the full run
takes 40 to 60 minutes on two cores, most of it cachegrind.
"""
import argparse
import glob
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

VARIANTS = [
    ("base", "uninstrumented", None),
    ("returns-inline", "tally `hooks=inline exit=returns`", ("inline", "returns")),
    ("frames-inline", "tally `hooks=inline exit=frames`", ("inline", "frames")),
    ("returns-call", "tally `hooks=call exit=returns`", ("call", "returns")),
    ("frames-call", "tally `hooks=call exit=frames`", ("call", "frames")),
    ("uftrace", "uftrace (`-pg`, `uftrace record`)", "uftrace"),
]


def log(*a):
    print("==>", *a, file=sys.stderr, flush=True)


def die(msg):
    print("frames.py: " + msg, file=sys.stderr)
    sys.exit(1)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw)


class Ctx:
    pass


def fetch(c, pkg):
    """The unpacked source of Debian source package PKG in WORK/src."""
    src = os.path.join(c.work, "src")
    os.makedirs(src, exist_ok=True)
    dscs = sorted(glob.glob(os.path.join(src, pkg + "_*.dsc")))
    if not dscs:
        log("fetching the Debian source of", pkg)
        p = subprocess.run(["apt-get", "source", "--download-only", pkg], cwd=src,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        dscs = sorted(glob.glob(os.path.join(src, pkg + "_*.dsc")))
        if not dscs:
            die("apt-get source %s failed (a deb-src entry is needed; "
                "testsuite/realworld/run adds one):\n%s" % (pkg, p.stdout[-2000:]))
    dsc = dscs[-1]
    base = os.path.basename(dsc)[:-4]
    ver = base.split("_", 1)[1].split(":")[-1].rsplit("-", 1)[0]
    d = os.path.join(src, "%s-%s" % (pkg, ver))
    if not os.path.isdir(d):
        log("unpacking", os.path.basename(dsc))
        sh(["dpkg-source", "-x", os.path.basename(dsc)], cwd=src)
    c.versions[pkg] = base.split("_", 1)[1]
    return d


def programs(c):
    lua = fetch(c, "lua5.4")
    yaml = fetch(c, "yaml-cpp")
    inc = os.path.join(c.work, "lua-include")
    os.makedirs(inc, exist_ok=True)
    multi = sh(["gcc", "-print-multiarch"]).stdout.strip()
    with open(os.path.join(inc, "lua5.4-deb-multiarch.h"), "w") as f:
        f.write('#define DEB_HOST_MULTIARCH "%s"\n' % multi)
    scale = {"lua": (2, 2) if c.quick else (40, 20), "yaml": (4, 2) if c.quick else (60, 20)}
    return {
        "yaml": dict(
            lang="C++", cc="g++",
            sources=sorted(glob.glob(os.path.join(yaml, "src", "*.cpp")))
            + [os.path.join(HERE, "yaml-workload.cpp")],
            cflags=["-I" + os.path.join(yaml, "include")], libs=[],
            args=lambda s: [str(s)], wall=scale["yaml"][0], cg=scale["yaml"][1],
            what="yaml-cpp %s, benchmarks/yaml-workload.cpp" % c.versions["yaml-cpp"]),
        "lua": dict(
            lang="C", cc="gcc",
            sources=[f for f in sorted(glob.glob(os.path.join(lua, "src", "*.c")))
                     if not f.endswith("/luac.c")],
            cflags=["-I" + inc, "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX",
                    "-Dluai_makeseed(L)=0u",
                    # luaS_new's string cache picks its slot by the C
                    # string's address, so its misses (calls of
                    # luaS_newlstr) change with the code layout: one slot
                    # makes them depend on the strings only (as
                    # testsuite/realworld/run's fixed-seed.h does).
                    "-DSTRCACHE_N=1", "-DSTRCACHE_M=2"], libs=["-lm", "-ldl"],
            args=lambda s: [os.path.join(HERE, "lua-workload.lua"), str(s)],
            wall=scale["lua"][0], cg=scale["lua"][1],
            what="lua5.4 %s, benchmarks/lua-workload.lua" % c.versions["lua5.4"]),
    }


def vflags(c, v):
    spec = dict((n, s) for n, _, s in VARIANTS)[v]
    if spec is None:
        return []
    if spec == "uftrace":
        return ["-pg"]
    hooks, exit = spec
    return ["-fplugin=" + c.plugin] + ["-fplugin-arg-tally-" + o for o in (
        "hooks=" + hooks, "measure=cycles", "at=late", "exit=" + exit)]


def vlibs(c, v):
    return [c.runtime, "-lpthread"] if v not in ("base", "uftrace") else []


def build(c, name, p, v):
    """Program NAME in variant V, WORK/frames/bin/V/NAME (cached by a key of
    the compiler, flags, sources and tally's plugin and runtime)."""
    bindir = os.path.join(c.work, "frames", "bin", v)
    obj = os.path.join(c.work, "frames", "obj", "%s-%s" % (name, v))
    exe = os.path.join(bindir, name)
    flags = ["-O2", *p["cflags"], *vflags(c, v)]
    h = hashlib.sha256()
    h.update(sh([p["cc"], "--version"]).stdout.encode())
    h.update(repr((flags, vlibs(c, v), p["libs"])).encode())
    for f in p["sources"] + [c.plugin, c.plugin_impl, c.runtime]:
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    key = h.hexdigest()
    if os.path.exists(exe) and open(exe + ".key").read() == key:
        return exe
    log("build", name, v)
    shutil.rmtree(obj, ignore_errors=True)
    os.makedirs(obj)
    os.makedirs(bindir, exist_ok=True)
    procs, objs = [], []
    for src in p["sources"]:
        o = os.path.join(obj, os.path.basename(src) + ".o")
        objs.append(o)
        while len([q for q in procs if q.poll() is None]) >= c.jobs:
            time.sleep(0.2)
        procs.append(subprocess.Popen([p["cc"], *flags, "-c", src, "-o", o],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for q in procs:
        out = q.communicate()[0]
        if q.returncode:
            die("building %s %s failed:\n%s" % (name, v, out.decode()[-3000:]))
    cc_link = [p["cc"], "-O2", *(["-pg"] if v == "uftrace" else []), *objs, "-o", exe,
               *vlibs(c, v), *p["libs"]]
    sh(cc_link)
    with open(exe + ".key", "w") as f:
        f.write(key)
    return exe


def run_variant(c, v, exe, args, data):
    """The command and environment of one run of EXE (from its directory:
    every variant's binary has the same name, as lua keeps argv[0])."""
    env = dict(os.environ, TALLY_OUTPUT=data)
    cmd = ["./" + os.path.basename(exe), *args]
    if v == "uftrace":
        cmd = ["uftrace", "record", "--no-libcall", "-d", data + ".uftrace", *cmd]
    return cmd, env


class TooSlow(Exception):
    pass


def output_of(c, v, exe, args, limit=None):
    """The output of one run and its data file; a run over LIMIT seconds
    (uftrace only: a peer tool that may not cope) raises TooSlow."""
    data = os.path.join(c.work, "frames", "runs", "%s-%s.data" % (os.path.basename(exe), v))
    os.makedirs(os.path.dirname(data), exist_ok=True)
    for f in glob.glob(data + "*"):
        shutil.rmtree(f) if os.path.isdir(f) else os.unlink(f)
    cmd, env = run_variant(c, v, exe, args, data)
    t0 = time.perf_counter()
    # A session of its own, so that a run past LIMIT is killed with every
    # process it started (uftrace's child is the program itself).
    q = subprocess.Popen(cmd, cwd=os.path.dirname(exe), env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = q.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(q.pid, 9)
        q.communicate()
        raise TooSlow("did not finish in %d s (killed)" % limit)
    p = subprocess.CompletedProcess(cmd, q.returncode, out, err)
    c.seconds[(exe, v)] = time.perf_counter() - t0
    if p.returncode:
        die("%s %s: exit %d: %s" % (exe, v, p.returncode, p.stderr[-2000:]))
    return p.stdout, data


def counts(c, data):
    """{body: (calls, exits)} of a data file."""
    out = sh([c.tally, "report", "--csv", "--clones", data]).stdout.splitlines()
    res = {}
    for line in out[1:]:
        f = line.split(",")
        res[",".join(f[2:])] = (int(f[0]), int(f[1]))
    return res


CG_EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw",
             "Bc", "Bcm", "Bi", "Bim")


def cachegrind(c, v, exe, args):
    """The cachegrind totals of the workload's own process."""
    out = os.path.join(c.work, "frames", "cg", "%s-%s" % (os.path.basename(exe), v))
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(out, "cg.*")):
        os.unlink(f)
    data = os.path.join(out, "tally.data")
    cmd, env = run_variant(c, v, exe, args, data)
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
          "--cachegrind-out-file=" + os.path.join(out, "cg.%p")]
    if v == "uftrace":
        vg.append("--trace-children=yes")
    sh([*vg, *cmd], cwd=os.path.dirname(exe), env=env)
    name = "./" + os.path.basename(exe)
    for f in glob.glob(os.path.join(out, "cg.*")):
        text = open(f).read()
        m = re.search(r"^cmd: (.*)$", text, re.M)
        if not m or not m.group(1).startswith(name):
            continue
        ev = re.search(r"^events: (.*)$", text, re.M).group(1).split()
        tot = [int(x) for x in re.search(r"^summary: (.*)$", text, re.M).group(1).split()]
        return dict(zip(ev, tot))
    die("%s %s: no cachegrind file of the workload's process" % (exe, v))


def wall(c, v, exe, args, base_exe):
    """(variant median, base median, ratio, min, max of per-pair ratios)."""
    vt, bt, ratios = [], [], []
    for r in range(c.runs + 1):
        times = {}
        order = [("b", base_exe, "base"), ("v", exe, v)]
        if r % 2:
            order.reverse()
        for tag, e, var in order:
            cmd, env = run_variant(c, var, e, args, os.path.join(
                c.work, "frames", "runs", "wall-%s.data" % var))
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=os.path.dirname(e), env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[tag] = time.perf_counter() - t0
        if r == 0:
            continue  # warm-up
        vt.append(times["v"])
        bt.append(times["b"])
        ratios.append(times["v"] / times["b"])
    return (statistics.median(vt), statistics.median(bt),
            statistics.median(vt) / statistics.median(bt), min(ratios), max(ratios))


def table2(cg, base):
    """LOPI Table 2's columns from cachegrind totals, as ratios to BASE."""
    def cols(t):
        return [t["Ir"], t["Bc"] + t["Bi"], t["Bcm"] + t["Bim"], t["Dr"] + t["Dw"],
                t["D1mr"] + t["D1mw"], t["Ir"], t["I1mr"],
                t["I1mr"] + t["D1mr"] + t["D1mw"], t["ILmr"] + t["DLmr"] + t["DLmw"]]
    b = cols(base)
    return [x / y if y else float("nan") for x, y in zip(cols(cg), b)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--programs", default="yaml,lua")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-work"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out")
    a = ap.parse_args()
    c = Ctx()
    c.quick = a.quick
    c.runs = a.runs or (3 if a.quick else 5)
    c.work = os.path.abspath(a.work)
    b = os.path.abspath(a.build)
    c.plugin = os.path.join(b, "plugin", "tally.so")
    c.plugin_impl = os.path.join(b, "plugin", "tally-impl.so")
    c.runtime = os.path.join(b, "rt", "libtally-rt.a")
    c.tally = os.path.join(b, "tools", "tally")
    c.jobs = os.cpu_count() or 2
    c.versions = {}
    c.seconds = {}   # (exe, variant): seconds of its output run
    na = {}          # (program, variant): why it was not measured
    for f in (c.plugin, c.runtime, c.tally):
        if not os.path.exists(f):
            die("%s is missing: run ./dev build first" % f)
    for tool in ("valgrind", "uftrace"):
        if not shutil.which(tool):
            die("%s is not installed (apt-get install %s)" % (tool, tool))
    progs = programs(c)
    lines = []
    say = lambda s="": lines.append(s)
    load = open("/proc/loadavg").read().split()[:3]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            text=True, stdout=subprocess.PIPE).stdout.strip()
    say("- date: %s; mode: %s; %d paired wall-clock runs per variant; load "
        "average at the start %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                     "quick" if c.quick else "full", c.runs, " ".join(load)))
    say("- machine: %d CPUs, %s; compiler: %s" % (
        os.cpu_count(), re.search(r"model name\s*: (.*)", open("/proc/cpuinfo").read()).group(1),
        sh(["gcc", "--version"]).stdout.splitlines()[0]))
    say("- tally: %s; uftrace: %s" % (commit, sh(["uftrace", "--version"]).stdout.splitlines()[0]))
    say("- every ratio is variant ÷ uninstrumented; Ir and caches from "
        "cachegrind's simulation (`--cache-sim=yes --branch-sim=yes`)")
    checks = []
    wanted = a.programs.split(",")
    for w in wanted:
        if w not in progs:
            die("--programs: unknown program %r (%s)" % (w, ",".join(progs)))
    for name, p in progs.items():
        if name not in wanted:
            continue
        exes = {v: build(c, name, p, v) for v, _, _ in VARIANTS}
        outs, datas = {}, {}
        variants = [v for v, _, _ in VARIANTS]
        for v in list(variants):
            # uftrace gets 200 times the uninstrumented run, at least 120 s.
            limit = (max(120.0, 200 * c.seconds[(exes["base"], "base")])
                     if v == "uftrace" else None)
            try:
                outs[v], datas[v] = output_of(c, v, exes[v], p["args"](p["cg"]), limit)
            except TooSlow as e:
                variants.remove(v)
                na[(name, v)] = str(e)
                log(name, v, "n/a:", e)
                continue
            if outs[v] != outs["base"]:
                die("%s %s: output %r, uninstrumented %r" % (name, v, outs[v][:200],
                                                             outs["base"][:200]))
        checks.append("%s: every variant's output equals the uninstrumented one's: OK" % name)
        for v in ("frames-inline", "frames-call", "returns-inline", "returns-call"):
            dis = sh(["objdump", "-d", "--no-show-raw-insn", exes[v]]).stdout
            used = len(re.findall(r"lea .*<__tally_return_trampoline>|call.*<__tally_enter_frames>", dis))
            ok = (used > 0) == v.startswith("frames")
            checks.append("%s %s: entries that arm a return frame: %d: %s"
                          % (name, v, used, "OK" if ok else "WRONG"))
            if not ok:
                die(checks[-1])
        calls = {}
        for hooks in ("inline", "call"):
            r, f = counts(c, datas["returns-" + hooks]), counts(c, datas["frames-" + hooks])
            if r != f:
                diff = [k for k in set(r) | set(f) if r.get(k) != f.get(k)][:5]
                die("%s hooks=%s: frames and returns count differently: %s"
                    % (name, hooks, [(k, r.get(k), f.get(k)) for k in diff]))
            calls["returns-" + hooks] = calls["frames-" + hooks] = sum(x[0] for x in r.values())
            checks.append("%s hooks=%s: exit=frames and exit=returns count the same calls "
                          "and exits, body by body (%d calls): OK" % (name, hooks, calls["frames-" + hooks]))
        calls["uftrace"] = calls["returns-inline"]
        log("cachegrind", name)
        cg = {v: cachegrind(c, v, exes[v], p["args"](p["cg"])) for v in variants}
        log("wall-clock runs", name)
        wt = {v: wall(c, v, exes[v], p["args"](p["wall"]), exes["base"])
              for v in variants if v != "base"}
        say()
        say("#### %s (%s): %s; cachegrind input %s, wall-clock input %s"
            % (name, p["lang"], p["what"], p["cg"], p["wall"]))
        say()
        say("| variant | total cycles (wall) | instructions | branches nr | branches miss | "
            "L1 D refs | L1 D misses | L1 I refs | L1 I misses | LL refs | LL misses | "
            "Ir | extra Ir per call | wall median s (base s) | per-pair ratios |")
        say("|---|" + "---:|" * 14)
        for v, label, _ in VARIANTS:
            if v not in variants:
                say("| %s | n/a: %s |%s" % (label, na[(name, v)], " |" * 13))
                continue
            t = table2(cg[v], cg["base"])
            if v == "base":
                say("| %s | 1.00 | %s | %s | - | %.3f | - |"
                    % (label, " | ".join("1.00" for _ in t), "{:,}".format(cg[v]["Ir"]),
                       wt["frames-inline"][1]))
                continue
            w = wt[v]
            # The calls were counted at the cachegrind input (output_of).
            per = (cg[v]["Ir"] - cg["base"]["Ir"]) / calls[v]
            say("| %s | %.2f | %s | %s | %.1f | %.3f (%.3f) | %.2f–%.2f |"
                % (label, w[2], " | ".join("%.2f" % x for x in t),
                   "{:,}".format(cg[v]["Ir"]), per, w[0], w[1], w[3], w[4]))
    say()
    say("Checks:")
    say()
    for ch in checks:
        say("- " + ch)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
