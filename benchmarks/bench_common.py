"""benchmarks/bench_common.py - what every part of benchmarks/run shares:
where things are, logging, timing, running commands, the run's context."""

import argparse
import csv
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SUPPORT = os.path.join(HERE, "support")

# Debian packages the suite needs (installed when missing).
PACKAGES = ["gcc", "clang", "libclang-rt-14-dev", "make", "binutils",
            "valgrind", "uftrace", "gnuplot-nox", "dpkg-dev", "tcl", "bolt-19"]

# LLVM BOLT, the static binary instrumenter of the bolt-* modes (Debian's
# bolt-19): the rewriter and the runtime its -instrument links in.
BOLT_VERSION = "19"


def bolt_tool():
    """The llvm-bolt command, or None: the binary itself, not Debian's
    /usr/bin link, since llvm-bolt looks its runtime up beside itself
    (BIN/../lib)."""
    tool = shutil.which("llvm-bolt-" + BOLT_VERSION) or shutil.which("llvm-bolt")
    return os.path.realpath(tool) if tool else None


def bolt_runtime():
    """The instrumentation runtime beside llvm-bolt (LLVM's lib/)."""
    tool = bolt_tool()
    if not tool:
        return None
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(tool))),
                       "lib", "libbolt_rt_instr.a")
    return lib if os.path.exists(lib) else None

# Parallel jobs for builds and cachegrind runs: the VM has 2 shared cores.
JOBS = 2



# ---------------------------------------------------------------- helpers

_log_lock = threading.Lock()


def log(msg):
    with _log_lock:
        print("==> " + msg, file=sys.stderr, flush=True)


def die(msg):
    print("benchmarks/run: " + msg, file=sys.stderr)
    sys.exit(1)


def fmt_time(s):
    s = int(s)
    return "%d:%02d" % (s // 60, s % 60)


class Progress:
    """"[phase i/N] what (elapsed, ETA)" lines: the ETA is the phase's
    average time per item so far times the items left."""

    def __init__(self, phase, total, start):
        self.phase, self.total, self.done = phase, total, 0
        self.t0, self.start = time.time(), start
        self.lock = threading.Lock()

    def step(self, what):
        with self.lock:
            self.done += 1
            i, now = self.done, time.time()
        eta = ""
        if i > 1:
            eta = ", phase ETA %s" % fmt_time((now - self.t0) / (i - 1) * (self.total - i + 1))
        log("[%s %d/%d] %s (total %s%s)" % (self.phase, i, self.total, what,
                                           fmt_time(now - self.start), eta))


def cpu_seconds():
    """CPU seconds (user + sys) of this script and of every process it
    has waited for, their own children included (cc1, valgrind's tool)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


# The CPU seconds of the processes the current thread has run (proc adds
# to it; Timing.item reads it).
_thread_cpu = threading.local()


def proc(argv, pid_out=None, **kw):
    """subprocess.run's job for argv (Popen keywords: stdin, stdout, cwd,
    env, shell): the exit status.  The process's CPU seconds, children it
    waited for included, go to the calling thread's account.  PID_OUT: a
    list the process's pid is appended to."""
    p = subprocess.Popen(argv, **kw)
    if pid_out is not None:
        pid_out.append(p.pid)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    _thread_cpu.s = getattr(_thread_cpu, "s", 0.0) + ru.ru_utime + ru.ru_stime
    return p.returncode


class Timing:
    """Where a run's time goes.  Phases are the steps of main, one after
    the other: their wall seconds and the CPU seconds of the script and
    everything it ran meanwhile.  Kinds split the work by job and workload
    ("build lua", "cachegrind lua", "wall pairs lua", "slow tools lua"):
    items done, the wall seconds of those items added up (two run at a
    time while building, so a kind's wall can exceed its phase's) and the
    CPU seconds of their processes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.t0, self.cpu0 = time.time(), cpu_seconds()
        self.phases = []  # [(name, wall s, CPU s)]
        self.kinds = {}   # kind -> [items, wall s, CPU s]

    def phase(self, name):
        timing = self

        class Phase:
            def __enter__(self):
                self.t, self.c = time.time(), cpu_seconds()

            def __exit__(self, *exc):
                w, c = time.time() - self.t, cpu_seconds() - self.c
                timing.phases.append((name, w, c))
                log("phase %s: wall %s, CPU %.0f s" % (name, fmt_time(w), c))
        return Phase()

    def item(self, kind, fn, *args):
        """fn(*args), its wall time and its processes' CPU time counted
        under kind; returns what fn returns."""
        _thread_cpu.s = 0.0
        t = time.time()
        try:
            return fn(*args)
        finally:
            w, c = time.time() - t, _thread_cpu.s
            with self.lock:
                k = self.kinds.setdefault(kind, [0, 0.0, 0.0])
                k[0] += 1
                k[1] += w
                k[2] += c

    def total(self):
        return time.time() - self.t0, cpu_seconds() - self.cpu0

    def text(self, ctx):
        w, c = self.total()
        out = ["# benchmarks/run: where the time went", "",
               "%s run started %s; load average at start %s, now %s" % (
                   ctx.kind, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ctx.start)),
                   ctx.load_start, open("/proc/loadavg").read().strip()),
               "builds: %d made, %d taken from the cache%s" % (
                   ctx.built, ctx.cached, " (--rebuild)" if ctx.args.rebuild else ""),
               "total: wall %s (%.0f s), CPU %.0f s (%.2f CPUs busy on average)" % (
                   fmt_time(w), w, c, c / w if w else 0), "",
               "%-40s %8s %8s" % ("phase", "wall s", "CPU s")]
        out += ["%-40s %8.1f %8.1f" % p for p in self.phases]
        out += ["", "Work by kind (while building, two items run at a time: their wall",
                "seconds add up to more than the phase's).", "",
                "%-40s %6s %8s %8s" % ("kind", "items", "wall s", "CPU s")]
        out += ["%-40s %6d %8.1f %8.1f" % (k, v[0], v[1], v[2])
                for k, v in sorted(self.kinds.items(), key=lambda kv: -kv[1][2])]
        return "\n".join(out) + "\n"


def sh(ctx, name, cmd, cwd=None):
    """Run a shell command, output to WORK/logs/NAME.log; die on failure."""
    path = os.path.join(ctx.work, "logs", name + ".log")
    with open(path, "w") as f:
        rc = proc(cmd, shell=True, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if rc:
        with open(path) as f:
            sys.stderr.write("".join(f.readlines()[-20:]))
        die("'%s' failed (log: %s)" % (cmd, path))


def run_rusage(argv, logf, cwd=None):
    """Run argv with output appended to logf; (exit status, CPU seconds of
    the process and the children it waited for, such as cc1)."""
    with open(logf, "a") as f:
        f.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        f.flush()
        before = getattr(_thread_cpu, "s", 0.0)
        rc = proc(argv, stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    return rc, _thread_cpu.s - before


_hash_cache = {}


def file_hash(path):
    st = os.stat(path)
    k = (path, st.st_mtime_ns, st.st_size)
    if k not in _hash_cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _hash_cache[k] = h.hexdigest()
    return _hash_cache[k]


def as_root(argv):
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            die("need root to run: " + " ".join(argv))
        argv = ["sudo"] + argv
    return subprocess.run(argv, stdout=subprocess.DEVNULL).returncode


def install_deps():
    missing = [p for p in PACKAGES
               if subprocess.run(["dpkg", "-s", p], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode]
    if missing:
        log("installing: " + " ".join(missing))
        as_root(["apt-get", "update", "-qq"])
        if as_root(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
                    "install", "-y", "-qq"] + missing):
            die("apt-get install %s failed" % " ".join(missing))


def ratio(a, b):
    return a / b if a is not None and b else None


# ---------------------------------------------------------------- context

class Ctx:
    def __init__(self, args):
        self.args = args
        self.kind = "quick" if args.quick else "full"
        self.work = os.path.join(os.path.abspath(args.work), "run")
        self.src = os.path.join(os.path.abspath(args.work), "src")
        self.tally = os.path.abspath(args.tally)
        self.plugin = os.path.join(self.tally, "build", "plugin", "tally.so")
        self.rtlib = os.path.join(self.tally, "build", "rt", "libtally-rt.a")
        self.start = time.time()
        self.status = {}      # (workload, mode) -> "ok" | "n/a: ..." | "FAIL: ..."
        self.results = {}     # (workload, mode) -> {metric: value}
        self.mode_flags = {}  # mode name -> extra tally options accepted
        self.na = {}          # mode name -> why it is not available
        self.ref_out = {}     # (workload, baseline, size) -> output digest
        self.timing = Timing()
        self.built = self.cached = 0  # builds made, builds reused
        self.count_lock = threading.Lock()
        for d in ("logs", "bin", "obj", "scratch", "cg", "inputs", "filters"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)

    def srcdir(self, package):
        dscs = sorted(f for f in os.listdir(self.src)
                      if f.startswith(package + "_") and f.endswith(".dsc"))
        base = dscs[-1][:-4]
        ver = base.split("_", 1)[1].split(":")[-1].rsplit("-", 1)[0]
        return os.path.join(self.src, package + "-" + ver)

    def fail(self, wl, mode, why):
        if not self.status.get((wl, mode), "").startswith("FAIL"):
            log("  FAIL %s %s: %s" % (wl, mode, why))
            self.status[(wl, mode)] = "FAIL: " + why

    def ok(self, wl, mode):
        return self.status.get((wl, mode)) == "ok"


