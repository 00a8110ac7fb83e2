"""benchmarks/bench_runs.py - the work of benchmarks/run: sources, probes,
builds, cachegrind and paired wall-clock runs."""

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

from bench_common import *  # noqa: F401,F403
from bench_setup import *  # noqa: F401,F403
from bench_events import CG_BOLT_DIR, CG_TALLY, cg_collect, cg_env, count_events


# ---------------------------------------------------------------- sources

def fetch_sources(ctx, workloads):
    os.makedirs(ctx.src, exist_ok=True)
    pkgs = sorted({p for w in workloads for p in w.packages})
    need = [p for p in pkgs if not any(f.startswith(p + "_") and f.endswith(".dsc")
                                       for f in os.listdir(ctx.src))]
    if need:
        log("fetching Debian sources: " + " ".join(need))
        cmd = ["apt-get", "source", "--download-only"] + need
        logf = os.path.join(ctx.work, "logs", "apt-source.log")
        with open(logf, "w") as f:
            r = subprocess.run(cmd, cwd=ctx.src, stdout=f, stderr=subprocess.STDOUT)
        if r.returncode:
            if not any(re.search(r"^\s*(deb-src|Types:.*deb-src)", open(os.path.join(dp, fn)).read(), re.M)
                       for dp in ("/etc/apt", "/etc/apt/sources.list.d")
                       for fn in os.listdir(dp)
                       if fn.endswith((".list", ".sources"))):
                log("adding a deb-src entry: /etc/apt/sources.list.d/debian-src.sources")
                entry = ("Types: deb-src\nURIs: http://deb.debian.org/debian\n"
                         "Suites: bookworm bookworm-updates\nComponents: main\n"
                         "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
                p = subprocess.Popen((["sudo"] if os.geteuid() else []) +
                                     ["tee", "/etc/apt/sources.list.d/debian-src.sources"],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
                p.communicate(entry.encode())
            as_root(["apt-get", "update", "-qq"])
            with open(logf, "w") as f:
                r = subprocess.run(cmd, cwd=ctx.src, stdout=f, stderr=subprocess.STDOUT)
            if r.returncode:
                die("apt-get source %s failed (log: %s)" % (" ".join(need), logf))
    for p in pkgs:
        d = ctx.srcdir(p)
        if not os.path.isdir(d):
            log("unpacking " + p)
            dsc = sorted(f for f in os.listdir(ctx.src)
                         if f.startswith(p + "_") and f.endswith(".dsc"))[-1]
            sh(ctx, "dpkg-source-" + p, "dpkg-source -x " + shlex.quote(dsc), cwd=ctx.src)


def package_versions(ctx, workloads):
    out = []
    for w in workloads:
        for p in w.packages:
            d = sorted(f for f in os.listdir(ctx.src) if f.startswith(p + "_") and f.endswith(".dsc"))
            out.append("%s %s" % (p, d[-1][len(p) + 1:-4]))
    return out


# ----------------------------------------------------------------- probes

PROBE_C = "static int f (int x) { return x + 1; }\nint main (void) { return f (0) - 1; }\n"


def tally_args(ctx, mode, opts):
    return ["-fplugin=" + ctx.plugin] + ["-fplugin-arg-tally-" + o for o in opts]


def probe_tally(ctx, mode):
    """None if this tally builds and runs a tiny program in `mode` (and
    record which optional options it accepts), else why not."""
    d = os.path.join(ctx.work, "probe")
    os.makedirs(d, exist_ok=True)
    c = os.path.join(d, "probe.c")
    with open(c, "w") as f:
        f.write(PROBE_C)

    def attempt(opts):
        r = subprocess.run(["gcc", "-O2"] + tally_args(ctx, mode, opts) +
                           [c, ctx.rtlib, "-o", os.path.join(d, "probe")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return r.returncode, r.stdout

    rc, out = attempt(mode.tally)
    if rc:
        first = next((l for l in out.splitlines() if "error" in l), out.strip()[:200])
        return "n/a (not supported by this tally build: %s)" % first.split("error: ", 1)[-1].strip()
    extra = [o for o in mode.tally_optional if attempt(mode.tally + [o])[0] == 0]
    ctx.mode_flags[mode.name] = extra
    if mode.profile:
        # profile= needs a data file: the probe's own, built blocks=count.
        data = os.path.join(d, "probe-profile.data")
        rc, out = attempt(["blocks=count"])
        if rc == 0:
            subprocess.run([os.path.join(d, "probe")], env=dict(os.environ, TALLY_OUTPUT=data),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rc, out = attempt(mode.tally + ["profile=" + data])
        if rc:
            first = next((l for l in out.splitlines() if "error" in l), out.strip()[:200])
            return "n/a (not supported by this tally build: %s)" % first.split("error: ", 1)[-1].strip()
    r = subprocess.run([os.path.join(d, "probe")], env=dict(os.environ, TALLY_OUTPUT=os.path.join(d, "probe.data")),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        return "probe program failed (exit %d): %s" % (r.returncode, r.stderr.strip()[:200])
    return None


def probe_modes(ctx, modes):
    for m in modes:
        why = None
        if m.tally is not None:
            why = probe_tally(ctx, m)
        elif m.runner and not shutil.which(m.runner[0]):
            why = "n/a (%s not installed)" % m.runner[0]
        elif m.group == "clang" and not shutil.which("clang"):
            why = "n/a (clang not installed)"
        if not why and m.bolt is not None and not (bolt_tool() and bolt_runtime()):
            why = "n/a (llvm-bolt %s or its instrumentation runtime not installed)" % BOLT_VERSION
        if why:
            ctx.na[m.name] = why
            log("mode %s: %s" % (m.name, why))


# ----------------------------------------------------------------- builds

def mode_compile_flags(ctx, wl, mode):
    flags = list(mode.cflags)
    if mode.tally is not None:
        opts = mode.tally + ctx.mode_flags.get(mode.name, [])
        if mode.hot:
            opts.append("filter=" + hot_filter_path(ctx, wl))
        if mode.profile:
            opts.append("profile=" + profile_path(ctx, wl, mode.profile))
        flags += tally_args(ctx, mode, opts)
    return flags


def profile_path(ctx, wl, kind):
    """The data file the profile= modes of wl take (kind "cg" or "other")."""
    return os.path.join(ctx.work, "profiles", "%s-%s.data" % (wl.name, kind))


# Where a BOLT-instrumented program writes its profile, in the directory it
# runs in (one file per process: -instrumentation-file-append-pid).
BOLT_FDATA = "bolt.fdata"
# A cachegrind run's BOLT profiles, moved apart from the wall runs'.
CG_BOLT = CG_BOLT_DIR


def bolt_options(mode):
    opts = list(mode.bolt)
    if mode.instrumented_by_bolt:
        opts.append("-instrumentation-file=" + BOLT_FDATA)
        # A file per process (llvm-bolt refuses it with a sleep time: then
        # one file, which the forked writer rewrites).
        if not any(o.startswith("-instrumentation-sleep-time") for o in opts):
            opts.append("-instrumentation-file-append-pid")
        # llvm-bolt looks the runtime up in its own lib/ (an absolute path
        # too, which it prefixes with that directory).
        opts.append("-runtime-instrumentation-lib=" +
                    os.path.basename(bolt_runtime() or "libbolt_rt_instr.a"))
    return opts


def clear_bolt_profiles(d):
    for f in os.listdir(d):
        if f.startswith(BOLT_FDATA):
            os.unlink(os.path.join(d, f))


_support_lock = threading.Lock()


def support_obj(ctx, mode, name):
    with _support_lock:
        return _support_obj(ctx, mode, name)


def support_headers():
    """The headers the support files include (support/*.h)."""
    return sorted(os.path.join(SUPPORT, f) for f in os.listdir(SUPPORT) if f.endswith(".h"))


def _support_obj(ctx, mode, name):
    cc = mode.cc
    obj = os.path.join(ctx.work, "obj", "support-%s-%s.o" % (cc, name[:-2]))
    src = os.path.join(SUPPORT, name)
    if not os.path.exists(obj) or any(os.path.getmtime(obj) < os.path.getmtime(f)
                                      for f in [src] + support_headers()):
        subprocess.run([cc, "-O2", "-c", src, "-o", obj], check=True)
    return obj


def build_key(ctx, wl, mode):
    h = hashlib.sha256()
    for part in ([subprocess.check_output([mode.cc, "--version"], text=True).splitlines()[0],
                  wl.name, mode.name, "-O2"] + wl.cflags(ctx) +
                 mode_compile_flags(ctx, wl, mode) + mode.ldflags + wl.libs(ctx) + mode.support):
        h.update(part.encode() + b"\0")
    if mode.bolt is not None:
        h.update(subprocess.run([bolt_tool(), "--version"], stdout=subprocess.PIPE,
                                text=True).stdout.encode())
        h.update("\0".join(bolt_options(mode)).encode())
    files = list(wl.sources(ctx)) + [os.path.join(SUPPORT, s) for s in mode.support]
    files += support_headers() if mode.support else []
    files += [l for l in wl.libs(ctx) if l.endswith(".a")]
    if mode.tally is not None:
        files += [ctx.plugin, os.path.join(os.path.dirname(ctx.plugin), "tally-impl.so"), ctx.rtlib]
        files += sorted(os.path.join(ctx.tally, "include", "tally", f)
                        for f in os.listdir(os.path.join(ctx.tally, "include", "tally")))
        if mode.hot:
            files.append(hot_filter_path(ctx, wl))
        if mode.profile:
            files.append(profile_path(ctx, wl, mode.profile))
    if mode.instrumented_by_bolt and bolt_runtime():
        files.append(bolt_runtime())
    if mode.rewrites:
        files = [bolt_input(ctx, wl, mode.rewrites)]
    for f in files:
        h.update(f.encode() + b"\0" + file_hash(f).encode())
    return h.hexdigest()


def binary(ctx, wl, mode_name):
    return os.path.join(ctx.work, "bin", wl.name, mode_name, wl.prog)


def build(ctx, wl, mode):
    """Build wl in mode (or reuse the cached build); record size and
    compile CPU time in the results."""
    bin_ = binary(ctx, wl, mode.name)
    meta_path = bin_ + ".json"
    key = build_key(ctx, wl, mode)
    meta = None
    if not ctx.args.rebuild and os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") != key or not os.path.exists(bin_):
            meta = None
    with ctx.count_lock:
        if meta is None:
            ctx.built += 1
        else:
            ctx.cached += 1
    if meta is None:
        objdir = os.path.join(ctx.work, "obj", wl.name, mode.name)
        shutil.rmtree(objdir, ignore_errors=True)
        os.makedirs(objdir)
        os.makedirs(os.path.dirname(bin_), exist_ok=True)
        for f in (bin_, meta_path):
            if os.path.exists(f):
                os.unlink(f)
        logf = os.path.join(ctx.work, "logs", "build-%s-%s.log" % (wl.name, mode.name))
        open(logf, "w").close()
        cpu, objs = 0.0, []
        if mode.rewrites:
            return rewrite(ctx, wl, mode, bin_, meta_path, key, logf)
        flags = ["-O2"] + wl.cflags(ctx) + mode_compile_flags(ctx, wl, mode)
        for src in wl.sources(ctx):
            obj = os.path.join(objdir, os.path.basename(src)[:-2] + ".o")
            rc, t = run_rusage([mode.cc] + flags + ["-c", src, "-o", obj], logf, cwd=objdir)
            cpu += t
            if rc:
                return "build failed (log: %s)" % logf
            objs.append(obj)
        extra = [support_obj(ctx, mode, s) for s in mode.support]
        if mode.tally is not None:
            extra.append(ctx.rtlib)
        rc, t = run_rusage([mode.cc, "-O2"] + mode.ldflags + objs + extra + wl.libs(ctx) +
                           ["-o", bin_], logf, cwd=objdir)
        cpu += t
        if rc:
            return "link failed (log: %s)" % logf
        if mode.bolt is not None:
            # The linked program is llvm-bolt's input; its rewrite runs.
            os.rename(bin_, bin_ + ".pre-bolt")
            why, t = bolt_rewrite(mode, bin_, logf)
            cpu += t
            if why:
                return why
        meta = save_meta(bin_, meta_path, key, cpu)
    r = ctx.results.setdefault((wl.name, mode.name), {})
    r["compile_cpu"], r["size"] = meta["compile_cpu"], meta["size"]
    r["file_size"] = meta.get("file_size")
    return None


def bolt_input(ctx, wl, mode_name):
    """The linked program of MODE_NAME's build, before any rewrite."""
    b = binary(ctx, wl, mode_name)
    return b + ".pre-bolt" if MODE[mode_name].bolt is not None else b


def bolt_rewrite(mode, bin_, logf):
    """llvm-bolt BIN.pre-bolt -o BIN with the mode's options: (None or
    why not, CPU seconds)."""
    rc, t = run_rusage([bolt_tool(), bin_ + ".pre-bolt", "-o", bin_] + bolt_options(mode), logf,
                       cwd=os.path.dirname(bin_))
    if rc or not os.path.exists(bin_):
        with open(logf, errors="replace") as f:
            errs = [l.strip() for l in f if "ERROR" in l or "error" in l]
        return "n/a (llvm-bolt cannot rewrite it: %s; log: %s)" % (
            errs[-1] if errs else "exit status %d" % rc, logf), t
    return None, t


def save_meta(bin_, meta_path, key, cpu):
    size = subprocess.check_output(["size", bin_], text=True).splitlines()[1].split()
    meta = {"key": key, "compile_cpu": cpu, "size": int(size[0]) + int(size[1]),
            "file_size": os.path.getsize(bin_)}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


def rewrite(ctx, wl, mode, bin_, meta_path, key, logf):
    """A mode that rewrites another one's linked program (mode.rewrites):
    its compile time is that build's and the rewrite's."""
    src = bolt_input(ctx, wl, mode.rewrites)
    if not ctx.ok(wl.name, mode.rewrites) or not os.path.exists(src):
        return "the %s build it rewrites failed" % mode.rewrites
    shutil.copyfile(src, bin_ + ".pre-bolt")
    shutil.copymode(src, bin_ + ".pre-bolt")
    why, t = bolt_rewrite(mode, bin_, logf)
    if why:
        return why
    base = ctx.results.get((wl.name, mode.rewrites), {}).get("compile_cpu") or 0.0
    meta = save_meta(bin_, meta_path, key, t + base)
    r = ctx.results.setdefault((wl.name, mode.name), {})
    r["compile_cpu"], r["size"], r["file_size"] = meta["compile_cpu"], meta["size"], meta["file_size"]
    return None


def build_one(ctx, wl, mode):
    try:
        why = build(ctx, wl, mode)
    except Exception as e:  # a broken build must not stop the others
        why = "build error: %s" % e
    if why and why.startswith("n/a"):
        # The technique cannot handle this program: not a failure of the
        # run (BOLT refusing a binary), said in its row.
        log("  %s %s: %s" % (wl.name, mode.name, why))
        ctx.status[(wl.name, mode.name)] = why
    elif why:
        ctx.fail(wl.name, mode.name, why)
    else:
        ctx.status.setdefault((wl.name, mode.name), "ok")
        scratch(ctx, wl, mode.name)


class Task:
    """One item of the build and cachegrind work: fn(*args) once every
    task in deps is done (failed or not)."""

    def __init__(self, kind, label, deps, fn, *args):
        self.kind, self.label, self.deps = kind, label, list(deps)
        self.fn, self.args, self.done = fn, args, False


def run_tasks(ctx, tasks, phase):
    """Run tasks JOBS at a time, each worker taking the first task of the
    list whose dependencies are done: one workload's cachegrind runs go
    on while another one builds, and no core idles at a phase boundary
    (cachegrind's counts do not depend on what else runs)."""
    prog = Progress(phase, len(tasks), ctx.start)
    pending = list(tasks)
    cond = threading.Condition()

    def worker():
        while True:
            with cond:
                while True:
                    task = next((t for t in pending if all(d.done for d in t.deps)), None)
                    if task or not pending:
                        break
                    cond.wait()
                if not task:
                    return
                pending.remove(task)
            prog.step(task.label)
            try:
                ctx.timing.item(task.kind, task.fn, *task.args)
            except Exception as e:
                log("  %s: %s" % (task.label, e))
            with cond:
                task.done = True
                cond.notify_all()

    workers = [threading.Thread(target=worker) for _ in range(JOBS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


# -------------------------------------------------------------------- runs

def scratch(ctx, wl, mode_name):
    """A per-mode directory with the binary hard-linked as ./PROG: every
    mode runs with the same argv[0] and the same environment size (lua
    puts argv[0] in a table, so a longer name would change its work)."""
    d = os.path.join(ctx.work, "scratch", wl.name, mode_name)
    os.makedirs(d, exist_ok=True)
    mode = MODE[mode_name]
    src = binary(ctx, wl, mode.uses or mode.name)
    dst = os.path.join(d, wl.prog)
    if os.path.exists(dst):
        os.unlink(dst)
    os.link(src, dst)
    return d


def run_env(d):
    env = dict(os.environ)
    env.update(TALLY_OUTPUT=os.path.join(d, "tally.data"),
               GCOV_PREFIX=os.path.join(d, "gcov"), GCOV_PREFIX_STRIP="99",
               LLVM_PROFILE_FILE=os.path.join(d, "default.profraw"))
    return env


def run_once(ctx, wl, mode_name, size, prefix=(), tag="run"):
    """Run the workload's steps once in the mode's scratch directory:
    (seconds, digest of the normalised outputs, error or None)."""
    mode = MODE[mode_name]
    d = os.path.join(ctx.work, "scratch", wl.name, mode_name)
    env = run_env(d)
    if mode.instrumented_by_bolt:
        clear_bolt_profiles(d)  # one file per process: do not pile them up
    runner = [a.format(scratch=d) for a in (mode.runner or [])]
    digest = hashlib.sha256()
    outs = []
    t0 = time.perf_counter()
    prev = None
    for i, (args, stdin) in enumerate(wl.steps(ctx, size)):
        argv = [a.format(scratch=d) for a in prefix] + runner + ["./" + wl.prog] + args
        out = os.path.join(d, "%s.%d.out" % (tag, i))
        inp = prev if stdin == "prev" else stdin
        with open(out, "wb") as fo, open(os.path.join(d, "%s.%d.err" % (tag, i)), "wb") as fe, \
                open(inp or os.devnull, "rb") as fi:
            rc = proc(argv, cwd=d, env=env, stdin=fi, stdout=fo, stderr=fe)
        if rc:
            return None, None, "exit status %d: %s (stderr: %s)" % (
                rc, " ".join(argv), os.path.join(d, "%s.%d.err" % (tag, i)))
        outs.append(out)
        prev = out
    t = time.perf_counter() - t0
    for out in outs:
        with open(out, "rb") as f:
            digest.update(wl.normalise(f.read()))
        digest.update(b"\0")
    if mode.runner and os.path.isdir(os.path.join(d, "uftrace.data")):
        shutil.rmtree(os.path.join(d, "uftrace.data"))
    return t, digest.hexdigest(), None


def check_output(ctx, wl, mode_name, size, digest):
    """Compare with the baseline's output for the same input; the baseline
    sets the reference."""
    base = MODE[mode_name].baseline
    k = (wl.name, base, size)
    if mode_name == base and k not in ctx.ref_out:
        ctx.ref_out[k] = digest
        return True
    if ctx.ref_out.get(k) is None:
        return True  # baseline failed: reported there
    if digest != ctx.ref_out[k]:
        ctx.fail(wl.name, mode_name, "output differs from %s's (input size %s)" % (base, size))
        return False
    return True


def cachegrind(ctx, wl, mode_name):
    """Cachegrind (cache and branch simulation) on the reduced input: the
    events summed over the workload's steps, in the results."""
    size = wl.sizes[ctx.kind]["cg"]
    d = os.path.join(ctx.work, "scratch", wl.name, mode_name)
    cgdir = os.path.join(ctx.work, "cg", wl.name)
    os.makedirs(cgdir, exist_ok=True)
    for f in os.listdir(cgdir):
        if f.startswith(mode_name + "."):
            os.unlink(os.path.join(cgdir, f))
    totals = {}
    steps = wl.steps(ctx, size)
    digest = hashlib.sha256()
    prev = None
    env = cg_env(run_env(d), d)
    mode = MODE[mode_name]
    if mode.instrumented_by_bolt:
        clear_bolt_profiles(d)
        shutil.rmtree(os.path.join(d, CG_BOLT), ignore_errors=True)
    for i, (args, stdin) in enumerate(steps):
        cgout = os.path.join(cgdir, "%s.step%d.cg" % (mode_name, i))
        # %p: a process the program forks (BOLT's profile writer with a
        # sleep time) writes a file of its own; the program's is its pid's.
        argv = ["valgrind", "-q", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
                "--cachegrind-out-file=" + cgout + ".%p", "./" + wl.prog] + args
        o = os.path.join(d, "cg.%d.out" % i)
        inp = prev if stdin == "prev" else stdin
        pid = []
        with open(o, "wb") as fo, open(os.path.join(d, "cg.%d.err" % i), "wb") as fe, \
                open(inp or os.devnull, "rb") as fi:
            rc = proc(argv, cwd=d, env=env, stdin=fi, stdout=fo, stderr=fe, pid_out=pid)
        if rc:
            return "cachegrind run failed (exit %d; %s)" % (rc, os.path.join(d, "cg.%d.err" % i))
        for f in os.listdir(cgdir):
            if f.startswith(os.path.basename(cgout) + "."):
                if f == os.path.basename(cgout) + ".%d" % pid[0]:
                    os.rename(os.path.join(cgdir, f), cgout)
                else:
                    os.unlink(os.path.join(cgdir, f))
        prev = o
        with open(o, "rb") as f:
            digest.update(wl.normalise(f.read()))
        digest.update(b"\0")
        events = summary = None
        with open(cgout) as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith("summary:"):
                    summary = [int(x) for x in line.split()[1:]]
        if not events or not summary:
            return "no cachegrind summary"
        for e, v in zip(events, summary):
            totals[e] = totals.get(e, 0) + v
    cg_collect(ctx, d)
    if mode.instrumented_by_bolt:
        # The profiles this run's processes wrote, kept apart.
        os.makedirs(os.path.join(d, CG_BOLT))
        for f in os.listdir(d):
            if f.startswith(BOLT_FDATA):
                os.rename(os.path.join(d, f), os.path.join(d, CG_BOLT, f))
        if not os.listdir(os.path.join(d, CG_BOLT)):
            return "the BOLT-instrumented program wrote no profile (%s)" % BOLT_FDATA
    if not check_output(ctx, wl, mode_name, ("cg", size), digest.hexdigest()):
        return None
    r = ctx.results.setdefault((wl.name, mode_name), {})
    for col, _, events in CG_COLUMNS:
        r[col] = sum(totals.get(e, 0) for e in events)
    count_events(ctx, wl, mode_name, d, len(steps))
    return None


def build_hot(ctx, wl, mode):
    """A hot-only build: the filter comes from the baseline's profile."""
    if not ctx.results.get((wl.name, "gcc"), {}).get("Ir"):
        ctx.fail(wl.name, mode.name, "no cachegrind profile of gcc to choose the hot functions from")
        return
    write_hot_filter(ctx, wl)
    build_one(ctx, wl, mode)


def build_tasks(ctx, workloads, usable):
    """Per workload: the baselines' builds and cachegrind runs first (the
    reference outputs, and the profile the hot-only modes are chosen
    from), then every other build, then their cachegrind runs; the
    profile= modes' builds after the run their profile comes from (the
    cachegrind run of tally-blocks-count, or its run on the other input)."""
    tasks = []
    for w in workloads:
        builds, cgs, first, rest, later = {}, {}, [], [], []
        for m in sorted((m for m in usable if not m.runner), key=lambda m: not m.is_baseline):
            if m.hot:
                deps, fn = [cgs.get("gcc")], build_hot
            elif m.profile:
                deps, fn = [], build_profiled  # its deps: below
            else:
                deps, fn = [], build_one
            t = Task("build " + w.name, "build %s %s" % (w.name, m.name),
                     [d for d in deps if d], fn, ctx, w, m)
            builds[m.name] = t
            (first if m.is_baseline else later if m.profile else rest).append(t)
            if m.cachegrind and m.is_baseline:
                cgs[m.name] = Task("cachegrind " + w.name, "cachegrind %s %s (%s)" % (
                    w.name, m.name, w.describe(w.sizes[ctx.kind]["cg"])), [t], cachegrind_one, ctx, w, m)
                first.append(cgs[m.name])
        for m in usable:
            if m.cachegrind and not m.is_baseline and m.name in builds:
                deps = [builds[m.name]] + ([cgs[m.baseline]] if m.baseline in cgs else [])
                cgs[m.name] = Task("cachegrind " + w.name, "cachegrind %s %s" % (w.name, m.name),
                                   deps, cachegrind_one, ctx, w, m)
                (later if m.profile else rest).append(cgs[m.name])
        if any(m.profile == "other" for m in usable) and PROFILE_SOURCE in builds:
            other = Task("profile " + w.name, "profile %s %s on the other input (%s)" % (
                w.name, PROFILE_SOURCE, w.describe_train(ctx)), [builds[PROFILE_SOURCE]],
                profile_other, ctx, w)
            rest.append(other)
        for m in usable:
            if m.profile and m.name in builds:
                src = cgs.get(PROFILE_SOURCE) if m.profile == "cg" else other
                builds[m.name].deps = [src] if src else []
            if m.rewrites and m.name in builds and m.rewrites in builds:
                builds[m.name].deps.append(builds[m.rewrites])
        tasks += first + rest + later
    return tasks


def profile_other(ctx, wl):
    """The profile of the other input: the tally-blocks-count build run
    on wl's train_steps (natively), its data file kept for profile=."""
    if not ctx.ok(wl.name, PROFILE_SOURCE):
        return
    d = os.path.join(ctx.work, "scratch", wl.name, PROFILE_SOURCE)
    out = profile_path(ctx, wl, "other")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    data = os.path.join(d, "train.tally.data")
    if os.path.exists(data):
        os.unlink(data)
    env = dict(run_env(d), TALLY_OUTPUT=data)
    prev = None
    for i, (args, stdin) in enumerate(wl.train_steps(ctx)):
        o = os.path.join(d, "train.%d.out" % i)
        inp = prev if stdin == "prev" else stdin
        with open(o, "wb") as fo, open(os.path.join(d, "train.%d.err" % i), "wb") as fe, \
                open(inp or os.devnull, "rb") as fi:
            rc = proc(["./" + wl.prog] + args, cwd=d, env=env, stdin=fi, stdout=fo, stderr=fe)
        if rc:
            log("  %s: the run on the other input failed (exit %d; %s)" % (
                wl.name, rc, os.path.join(d, "train.%d.err" % i)))
            return
        prev = o
    if os.path.exists(data):
        keep_profile(ctx, data, out)


def _counts(ctx, path):
    """The counter lines of `tally dump PATH`: its counts without the
    header's pid and time."""
    tool = os.path.join(ctx.tally, "build", "tools", "tally")
    out = subprocess.run([tool, "dump", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return [l for l in out.splitlines() if "counters=" in l]


def keep_profile(ctx, src, dst):
    """Copy the data file SRC to DST unless DST has the same counts (a
    deterministic run gives the same counts every time; the file's pid
    and time would make the profiled builds' cache keys change)."""
    if os.path.exists(dst) and _counts(ctx, src) == _counts(ctx, dst):
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst + ".tmp")
    os.rename(dst + ".tmp", dst)


def build_profiled(ctx, wl, mode):
    """A profile= build: the profile is the data file of the run it
    depends on (build_tasks), copied where the build key sees it."""
    path = profile_path(ctx, wl, mode.profile)
    if mode.profile == "cg":
        src = os.path.join(ctx.work, "scratch", wl.name, PROFILE_SOURCE, CG_TALLY)
        if ctx.ok(wl.name, PROFILE_SOURCE) and os.path.exists(src):
            keep_profile(ctx, src, path)
        elif os.path.exists(path):
            os.unlink(path)
    if not os.path.exists(path):
        ctx.fail(wl.name, mode.name, "no profile: the %s run it comes from failed or "
                 "was not made" % PROFILE_SOURCE)
        return
    build_one(ctx, wl, mode)


def cachegrind_one(ctx, wl, mode):
    if not ctx.ok(wl.name, mode.name):
        return  # the build failed: reported there
    try:
        why = cachegrind(ctx, wl, mode.name)
    except Exception as e:
        why = "cachegrind error: %s" % e
    if why:
        ctx.fail(wl.name, mode.name, why)


def hot_filter_path(ctx, wl):
    return os.path.join(ctx.work, "filters", wl.name + ".hot")


def write_hot_filter(ctx, wl):
    """The functions making up 80% of the gcc baseline's self instructions
    in the program's own code (cachegrind, reduced input; libc is left out,
    as gprof leaves it out), as a tally filter file.  LOPI chose its
    functions with gprof by time; Ir is this machine's stable proxy."""
    own = set(subprocess.check_output(
        ["nm", "--defined-only", binary(ctx, wl, "gcc")], text=True).split()[2::3])
    self_ir = {}
    cgdir = os.path.join(ctx.work, "cg", wl.name)
    for f in sorted(os.listdir(cgdir)):
        if not f.startswith("gcc.step"):
            continue
        fn = None
        with open(os.path.join(cgdir, f)) as fh:
            for line in fh:
                if line.startswith("fn="):
                    fn = line[3:].strip()
                    fn = fn if fn in own else None
                elif fn and line[:1].isdigit():
                    parts = line.split()
                    if len(parts) > 1:
                        self_ir[fn] = self_ir.get(fn, 0) + int(parts[1])
    total = sum(self_ir.values())
    chosen, acc = [], 0
    for fn, ir in sorted(self_ir.items(), key=lambda kv: -kv[1]):
        if acc >= 0.8 * total:
            break
        chosen.append(fn)
        acc += ir
    names = []
    for fn in chosen:
        base = fn.split(".")[0]  # f.constprop.0, f.part.0: the source function
        if base and base != "???" and base not in names:
            names.append(base)
    with open(hot_filter_path(ctx, wl), "w") as f:
        f.write("# benchmarks/run: functions making up 80%% of %s's self Ir (gcc -O2)\n" % wl.name)
        for n in names:
            f.write("include function %s\ninclude function %s.*\n" % (n, n))
    ctx.results.setdefault((wl.name, "tally-hot"), {})["hot_note"] = (
        "%d of %d functions, %.0f%% of Ir" % (len(names), len(self_ir), 100.0 * acc / total if total else 0))


def wall_all(ctx, pairs_todo, phase):
    """Paired wall-clock runs, one at a time: the baseline runs once on
    each input (its output becomes the reference); then for each mode a
    warm-up run (output checked) and `pairs` pairs alternating which of
    the mode and its baseline runs first."""
    npairs = ctx.args.pairs
    prog = Progress(phase, len(pairs_todo), ctx.start)
    for wl, mode in pairs_todo:
        kind = ("slow tools " if mode.runner else "wall pairs ") + wl.name
        ctx.timing.item(kind, wall_pairs, ctx, wl, mode, npairs, prog)


def checked_run(ctx, wl, mode_name, size):
    """One wall-clock run of MODE_NAME: its seconds, or None when it failed
    or its output differs (the failure recorded)."""
    secs, digest, err = run_once(ctx, wl, mode_name, size)
    if err:
        ctx.fail(wl.name, mode_name, "run failed: " + err)
        return None
    if not check_output(ctx, wl, mode_name, ("wall", size), digest):
        return None
    return secs


def wall_pairs(ctx, wl, mode, npairs, prog):
    base = mode.baseline
    size = wl.sizes[ctx.kind][mode.runner_input]
    prog.step("wall %s %s vs %s, %d pairs (%s)" % (wl.name, mode.name, base, npairs, wl.describe(size)))
    warm = [mode.name]
    if (wl.name, base, ("wall", size)) not in ctx.ref_out:
        warm.insert(0, base)
    for m in warm:  # page cache, output check
        if checked_run(ctx, wl, m, size) is None:
            return
    ratios, tb, tm = [], [], []
    for r in range(npairs):
        order = [mode.name, base] if r % 2 == 0 else [base, mode.name]
        t = {}
        for m in order:
            t[m] = checked_run(ctx, wl, m, size)
            if t[m] is None:
                return
        tb.append(t[base])
        tm.append(t[mode.name])
        ratios.append(t[mode.name] / t[base])
    if ratios and ctx.ok(wl.name, mode.name):
        res = ctx.results.setdefault((wl.name, mode.name), {})
        res.update(wall_ratio=statistics.median(ratios), wall_min=min(ratios),
                   wall_max=max(ratios), wall_s=statistics.median(tm),
                   wall_base_s=statistics.median(tb), pairs=len(ratios),
                   wall_input=mode.runner_input)


