#!/usr/bin/env python3
"""The "nothing lost" checks: counts survive fork, exec, signals, code that
runs after the exit dump, and many processes writing one merged file; no
count is lost or doubled under threads (joined, pthread_exit, detached,
outliving main), dlopen of one library twice or as two copies, signal
handlers, and constructors and destructors around registration and the
exit dump.

Usage: run-lossless.py CHECK --plugin P --runtime RT --tally T --cc CC
                       --srcdir DIR [--cxx CXX] [--include DIR]
                       [--runtime-asan RTA]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

import checklib
from checklib import (case, expect, gcov_of, main, matrix, report_calls, report_json, run,
                      shared_runtime, Skip, write_file)


def build(a, work, src, hooks="inline", extra=(), cxx=False, name=None, runtime=None):
    """Build lossless/SRC; RUNTIME: the link arguments of the runtime (the
    static one by default)."""
    exe = os.path.join(work, name or "%s-%s" % (os.path.splitext(src)[0], hooks))
    return checklib.build(a, exe, os.path.join(a.srcdir, "lossless", src),
                          ["-fplugin-arg-tally-hooks=" + hooks, "-I", a.include],
                          link=extra, runtime=runtime, cxx=cxx)


def calls(a, path):
    """{function: (entries, exits)} of one data file, clones folded."""
    return report_calls(a, path)


def want(a, path, fn, entries, exits=None, what=""):
    got = calls(a, path).get(fn)
    exits = entries if exits is None else exits
    expect(got == (entries, exits), "%s%s: %s counted %s, want %s"
           % (what and what + ": ", os.path.basename(path), fn, got, (entries, exits)))


def want_all(a, path, expected, what=""):
    """The functions of PATH with any count are exactly EXPECTED
    ({function: (entries, exits)}), and the report's totals are their sums:
    nothing lost, nothing doubled, nothing else counted."""
    got = {fn: c for fn, c in calls(a, path).items() if c != (0, 0)}
    expect(got == expected, "%s%s: counted %s, want %s"
           % (what and what + ": ", os.path.basename(path), sorted(got.items()),
              sorted(expected.items())))
    t = report_json(a, path)["totals"]
    want_t = (sum(e for e, _ in expected.values()), sum(x for _, x in expected.values()))
    expect((t["calls"], t["exits"]) == want_t, "%s%s: report totals %s, want %s"
           % (what and what + ": ", os.path.basename(path), (t["calls"], t["exits"]), want_t))


@case("fork")
def check_fork(a, work):
    for hooks, extra in (("inline", []), ("call", []),
                         ("tls", ["-fplugin-arg-tally-update=tls"])):
        exe = build(a, work, "fork.c", "inline" if hooks == "tls" else hooks, extra,
                    name="fork-" + hooks)
        out = os.path.join(work, "fork-%s.%%p.data" % hooks)
        p = run([exe], env={"TALLY_OUTPUT": out})
        child, result = p.stdout.split()
        expect(result == "7", "program output %r" % p.stdout)
        expect(p.stderr == "", "runtime messages: %r" % p.stderr)
        files = sorted(f for f in os.listdir(work) if f.startswith("fork-%s." % hooks))
        expect(len(files) == 2, "%s: want 2 files, got %s" % (hooks, files))
        child_file = os.path.join(work, "fork-%s.%s.data" % (hooks, child))
        expect(os.path.exists(child_file), "%s: no child file %s" % (hooks, child_file))
        parent_file = [os.path.join(work, f) for f in files
                       if f != os.path.basename(child_file)][0]
        want(a, parent_file, "f", 7, what=hooks + " parent")
        want(a, parent_file, "main", 1, what=hooks + " parent")
        want(a, child_file, "f", 2, what=hooks + " child")
        # The child returned from a main the parent entered.
        want(a, child_file, "main", 0, 1, what=hooks + " child")


def gcov_counts(a, work, src, args):
    """({line: count}, {function: entries}) of one run of lossless/SRC
    built -O0 --coverage -DORACLE, every process of it (gcov resets a
    forked child's counters and merges at exit, as tally does)."""
    gdir = os.path.join(work, "gcov-" + "-".join(args or ["plain"]))
    os.mkdir(gdir)
    run([a.cc, "-O0", "--coverage", "-DORACLE", os.path.join(a.srcdir, "lossless", src),
         "-o", os.path.join(gdir, "prog")], cwd=gdir)
    run([os.path.join(gdir, "prog"), *[gdir if x == "DIR" else x for x in args]], cwd=gdir)
    gcda = [f for f in os.listdir(gdir) if f.endswith(".gcda")]
    out = run([gcov_of(a), "-j", "-t", gcda[0]], cwd=gdir).stdout
    lines, fns = {}, {}
    for doc in out.splitlines():
        for f in json.loads(doc)["files"] if doc.strip() else []:
            if os.path.basename(f["file"]) != src:
                continue
            for l in f["lines"]:
                lines[l["line_number"]] = lines.get(l["line_number"], 0) + l["count"]
            for fn in f["functions"]:
                fns[fn["name"]] = fn["execution_count"]
    return lines, fns


@case("fork-lines")
def check_fork_lines(a, work):
    """Block counts across a chain of forks (4 processes) and tally_reset
    in the middle of active frames: the files of the run, each solved on
    its own and summed, give gcov's line counts and function entries
    (-O0, every line gcov reports) with no warning, in every combination
    of hooks inline/call/none, update single/atomic/tls, placement tree
    and block, blocks=count and visited, at=early and late (checklib's
    matrix: all 72, each with and without tally_reset).  A forked child
    and a process after tally_reset resume inside functions entered
    before: the flow arriving at the calls they return from must not be
    taken for an entry (a child's file used to derive an entry of main).
    hooks=call with update=tls used to count no block at all (the call
    hooks attached no thread to the unit's thread-local counters)."""
    if not shutil.which(gcov_of(a)):
        raise Skip("%s not installed" % gcov_of(a))
    src = "fork-lines.c"
    modes = matrix("hooks", "update", "placement", "blocks", "at")
    for args in ([], ["reset", "DIR"]):
        glines, gfns = gcov_counts(a, work, src, args)
        expect(glines.get(93) == 4 and gfns.get("main") == 1,
               "gcov's counts %s %s are not those of the chain" % (glines, gfns))
        for n, opts in enumerate(modes):
            tag = "%s%s" % (" ".join(opts), " with tally_reset" if args else "")
            sub = os.path.join(work, "%d-%s" % (n, "-".join(args)))
            os.mkdir(sub)
            exe = os.path.join(sub, "prog")
            run([a.cc, "-O0", "-fplugin=" + a.plugin,
                 *["-fplugin-arg-tally-" + o for o in opts], "-I", a.include,
                 os.path.join(a.srcdir, "lossless", src), "-o", exe, a.runtime])
            p = run([exe, *[sub if x == "DIR" else x for x in args]],
                    env={"TALLY_OUTPUT": os.path.join(sub, "%p.data")})
            expect(p.returncode == 0 and p.stderr == "",
                   "%s: status %d, messages %r" % (tag, p.returncode, p.stderr))
            files = sorted(os.path.join(sub, f) for f in os.listdir(sub)
                           if f.endswith(".data"))
            expect(len(files) == (10 if args else 4), "%s: files %s" % (tag, files))
            for f in files:
                r = run([a.tally, "report", f])
                expect(r.stderr == "", "%s: %s: %r" % (tag, os.path.basename(f), r.stderr))
            r = run([a.tally, "report", "--json", "--lines",
                     os.path.join(a.srcdir, "lossless", src), *files])
            expect(r.stderr == "", "%s: report of the files together: %r" % (tag, r.stderr))
            j = json.loads(r.stdout)
            tlines = {l["line"]: l["count"] for s_ in j.get("sources", [])
                      for l in s_["lines"]}
            visited = "blocks=visited" in opts
            diff = ["%d: gcov %s, tally %s" % (ln, c, tlines.get(ln))
                    for ln, c in sorted(glines.items())
                    if tlines.get(ln) != (int(c > 0) if visited else c)]
            expect(not diff, "%s: line counts of every file together differ "
                   "from gcov's: %s" % (tag, "; ".join(diff)))
            if "hooks=none" in opts and visited:
                continue
            got = {f["name"]: f["calls"] for f in j["functions"]}
            expect(got == gfns, "%s: entries %s, gcov %s" % (tag, got, gfns))
    # Counts that are not one run (the loop test's block counter altered
    # in the file, as lost updates or a dump read while threads counted
    # leave them; the edge into the loop then comes out negative):
    # the warning blames races only where the update mode can race.
    prog = write_file(os.path.join(work, "loop.c"),
                      "int n = 777777;\nint main (void) { int s = 0;\n"
                      "  for (int i = 0; i < n; i++) s += i & 3;\n  return s == 7; }\n")
    for update, cause in (("single", "threads race"), ("atomic", "not those of one moment"),
                          ("tls", "not those of one moment")):
        exe = os.path.join(work, "loop-" + update)
        run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count",
             "-fplugin-arg-tally-placement=block", "-fplugin-arg-tally-update=" + update,
             prog, "-o", exe, a.runtime])
        run([exe], env={"TALLY_OUTPUT": exe + ".data"}, check=False)
        d = bytearray(open(exe + ".data", "rb").read())
        at = [i for i in range(len(d) - 7) if d[i:i + 8] == struct.pack("<Q", 777778)]
        expect(len(at) == 1, "update=%s: the loop's counter is not once in the file: %s"
               % (update, at))
        d[at[0]:at[0] + 8] = struct.pack("<Q", 5)
        body = bytes(d[:-16])
        d[-12:-8] = struct.pack("<I", zlib.crc32(body))
        with open(exe + ".data", "wb") as f:
            f.write(d)
        r = run([a.tally, "report", exe + ".data"])
        expect("came out negative" in r.stderr and cause in r.stderr
               and (update == "single" or "race" not in r.stderr),
               "update=%s, a counter altered: %r, want a warning saying %r"
               % (update, r.stderr, cause))


@case("exec")
def check_exec(a, work):
    """Every exec function writes the counts before the image goes; a failed
    exec keeps counting; a vfork child's exec writes nothing; an
    instrumented image exec'ing itself finds the earlier file in place; an
    exec while another thread dumps leaves a complete file, as does an
    exec, exit or SIGTERM on one CPU while another thread dumps in a
    loop."""
    for hooks, at in (("inline", "late"), ("call", "early")):
        exe = build(a, work, "exec.c", hooks, ["-D_GNU_SOURCE", "-fplugin-arg-tally-at=" + at],
                    name="exec-" + at)
        tag = "%s/%s" % (hooks, at)
        for mode, output in (("execve", "a execve"), ("execv", "a execv"),
                             ("execvp", "a execvp"), ("execvpe", "X=execvpe"),
                             ("execl", "a execl"), ("execlp", "a execlp"),
                             ("execle", "X=execle"), ("fexecve", "a fexecve")):
            data = os.path.join(work, "%s-%s.data" % (at, mode))
            p = run([exe, mode], env={"TALLY_OUTPUT": data})
            expect(p.stdout.strip() == output, "%s %s: output %r, want %r"
                   % (tag, mode, p.stdout, output))
            expect(p.stderr == "", "%s %s: messages %r" % (tag, mode, p.stderr))
            want(a, data, "f", 5, what="%s %s" % (tag, mode))
            want(a, data, "main", 1, 0, what="%s %s" % (tag, mode))
        data = os.path.join(work, at + "-fail.data")
        p = run([exe, "fail"], env={"TALLY_OUTPUT": data})
        expect(p.stdout.strip() == "7", "%s fail: output %r" % (tag, p.stdout))
        want(a, data, "f", 7, what=tag + " failed exec")
        sub = os.path.join(work, at + "-vfork")
        os.mkdir(sub)
        p = run([exe, "vfork"], env={"TALLY_OUTPUT": os.path.join(sub, "%p.data")})
        files = os.listdir(sub)
        child = p.stdout.strip() + ".data"
        expect(len(files) == 1 and files[0] != child, "%s vfork: files %s, want only "
               "the parent's (child %s)" % (tag, files, child))
        want(a, os.path.join(sub, files[0]), "f", 5, what=tag + " vfork parent")
        out, mid = os.path.join(work, at + "-self.data"), os.path.join(work, at + "-mid.data")
        run([exe, "self", out, mid], env={"TALLY_OUTPUT": out})
        want(a, mid, "f", 5, what=tag + " before exec of itself")
        want(a, out, "f", 1, what=tag + " the new image")
    # exec while another thread dumps in a loop: the exec waits for that
    # dump and holds the lock through the exec, so the file is complete,
    # has every call, and no cut-short temporary file is left.
    for hooks in ("inline", "call"):
        exe = build(a, work, "exec-dump.c", hooks, ["-pthread"])
        sub = os.path.join(work, "exec-dump-files-" + hooks)
        os.mkdir(sub)
        for i in range(20):
            data = os.path.join(sub, "%d.data" % i)
            p = run([exe], env={"TALLY_OUTPUT": data})
            expect(p.stderr == "", "exec-dump %s: %r" % (hooks, p.stderr))
            want(a, data, "f", 100000, what="exec-dump %s run %d" % (hooks, i))
        left = sorted(f for f in os.listdir(sub) if ".tmp." in f)
        expect(not left, "exec-dump %s: dumps cut short by the exec: %s" % (hooks, left))
    # The same on one CPU, where the dumping thread takes the lock again
    # in the time slice it let go of it in: the exec, exit and SIGTERM
    # dumps, which wait, go before tally_dump, which only tries (without
    # that, "another dump never finished; giving up" in most runs).
    cpu = min(os.sched_getaffinity(0))
    sub = os.path.join(work, "exec-dump-one-cpu")
    os.mkdir(sub)
    for how in ("exec", "exit", "term"):
        for i in range(8):
            data = os.path.join(sub, "%s-%d.data" % (how, i))
            p = run([exe, how], env={"TALLY_OUTPUT": data}, check=False,
                    preexec_fn=lambda: os.sched_setaffinity(0, {cpu}), timeout=120)
            status = -signal.SIGTERM if how == "term" else 0
            expect(p.returncode == status and p.stderr == "",
                   "exec-dump on one CPU, %s: status %d, want %d, %r"
                   % (how, p.returncode, status, p.stderr))
            want(a, data, "f", 100000, what="exec-dump on one CPU, %s run %d" % (how, i))
    # Redirection is for the libc functions only: a program's own execv, or
    # one with another signature, is called as written.
    sub = os.path.join(work, "own")
    os.mkdir(sub)
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-c", "-fdump-tree-all",
         "-Wno-builtin-declaration-mismatch", "-o", os.path.join(sub, "own.o"),
         os.path.join(a.srcdir, "lossless", "exec-own.c")], cwd=sub)
    dumps = "".join(open(os.path.join(sub, f)).read() for f in os.listdir(sub)
                    if f.endswith("tally"))
    expect("use instrumented" in dumps and "redirected" not in dumps,
           "own exec functions redirected (or no dump):\n" + dumps)


def no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def wait_for(path, seconds=20):
    end = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > end:
            return False
        time.sleep(0.02)
    return True


def signal_waiting(a, exe, data, sig, env, what):
    """Run `EXE wait` writing DATA with ENV added (TALLY_DUMP_ON only if ENV
    sets it), send SIG once it is ready: it dies of SIG with f's 5 calls
    in DATA."""
    full = dict(os.environ, TALLY_OUTPUT=data)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env)
    p = subprocess.Popen([exe, "wait"], env=full, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    expect(p.stdout.readline().strip() == "ready", "%s: no ready line" % what)
    p.send_signal(sig)
    p.communicate(timeout=60)
    expect(p.returncode == -sig, "%s: exit %d" % (what, p.returncode))
    want(a, data, "f", 5, what=what)


@case("signals")
def check_signals(a, work):
    """TALLY_DUMP_ON: SIGUSR1 writes the counts so far and the program goes
    on (its blocked read resumes); fatal signals write the file and the
    process still dies by the same signal, a stack overflow too (on tally's
    alternate stack, or the program's own, kept); a bad name gets one
    message."""
    for hooks in ("inline", "call"):
        exe = build(a, work, "signal.c", hooks)
        # SIGUSR1 while the program waits in read().
        data = os.path.join(work, "usr1-%s.data" % hooks)
        env = dict(os.environ, TALLY_OUTPUT=data, TALLY_DUMP_ON="SIGUSR1")
        p = subprocess.Popen([exe, "wait"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            expect(p.stdout.readline().strip() == "ready", "%s: no ready line" % hooks)
            time.sleep(0.2)  # let it block in read()
            p.send_signal(signal.SIGUSR1)
            expect(wait_for(data), "%s: no file after SIGUSR1" % hooks)
            mid = data + ".mid"
            os.rename(data, mid)
            out, err = p.communicate("x", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        expect(p.returncode == 0 and out.strip() == "7",
               "%s: after SIGUSR1 the program ended with %d, output %r, %r"
               % (hooks, p.returncode, out, err))
        expect(err == "", "%s: messages %r" % (hooks, err))
        want(a, mid, "f", 5, what=hooks + " SIGUSR1 mid-run")
        want(a, mid, "main", 1, 0, what=hooks + " SIGUSR1 mid-run")
        want(a, data, "f", 7, what=hooks + " exit after SIGUSR1")
        # Fatal signals: a file, and the same death.
        for mode, sig, n in (("raise", signal.SIGTERM, 3), ("abort", signal.SIGABRT, 2),
                             ("segv", signal.SIGSEGV, 4)):
            data = os.path.join(work, "%s-%s.data" % (mode, hooks))
            p = run([exe, mode], env={"TALLY_OUTPUT": data,
                                      "TALLY_DUMP_ON": "SIGUSR1,SIGTERM,SIGABRT,SIGSEGV"},
                    check=False, preexec_fn=no_core)
            expect(p.returncode == -sig, "%s %s: exit %d, want death by signal %d\n%s"
                   % (hooks, mode, p.returncode, sig, p.stderr))
            want(a, data, "f", n, what="%s %s" % (hooks, mode))
            # Without TALLY_DUMP_ON SIGTERM, whose action is the default,
            # writes the file too (the default set: SIGHUP, SIGINT,
            # SIGPIPE, SIGTERM); SIGABRT and SIGSEGV write nothing, nor
            # anything with TALLY_DUMP_ON=none.
            for dump_on in (None, "none"):
                out = "%s.%s" % (data, dump_on or "unset")
                env = {"TALLY_OUTPUT": out}
                if dump_on:
                    env["TALLY_DUMP_ON"] = dump_on
                p = run([exe, mode], env=env, check=False, preexec_fn=no_core)
                written = sig == signal.SIGTERM and not dump_on
                expect(p.returncode == -sig and os.path.exists(out) == written,
                       "%s %s with TALLY_DUMP_ON=%s: exit %d, file %s, want %s"
                       % (hooks, mode, dump_on, p.returncode, os.path.exists(out), written))
                if written:
                    want(a, out, "f", n, what="%s %s by default" % (hooks, mode))
        # A stack overflow: the handler runs on the alternate stack tally
        # gave the main thread, or on the program's own (kept), and the
        # process still dies of SIGSEGV.
        for mode, own in (("overflow", None), ("own-stack", "1")):
            data = os.path.join(work, "%s-%s.data" % (mode, hooks))
            env = {"TALLY_OUTPUT": data, "TALLY_DUMP_ON": "SIGSEGV"}
            if own:
                env["SIGNAL_TEST_OWN_STACK"] = own
            p = run([exe, "overflow" if not own else "own-stack"], env=env, check=False,
                    preexec_fn=no_core)
            expect(p.returncode == -signal.SIGSEGV, "%s %s: exit %d, want death by "
                   "SIGSEGV\n%s" % (hooks, mode, p.returncode, p.stderr))
            want(a, data, "f", 4, what="%s %s" % (hooks, mode))
            got = calls(a, data).get("deep", (0, 0))
            expect(got[0] > 1000 and got[1] == 0, "%s %s: deep %s, want thousands "
                   "of calls and no exit" % (hooks, mode, got))
        # An externally sent SIGTERM while the program waits.
        signal_waiting(a, exe, os.path.join(work, "term-%s.data" % hooks), signal.SIGTERM,
                       {"TALLY_DUMP_ON": "TERM"}, hooks + " external SIGTERM")
        # A pipeline whose reader exits early: the writer dies of SIGPIPE
        # (by default, no TALLY_DUMP_ON), the shell sees that death, and
        # the file has every call made (the program notes each in a file
        # of its own before it writes the line that kills it).
        data = os.path.join(work, "pipe-%s.data" % hooks)
        count = os.path.join(work, "pipe-%s.count" % hooks)
        p = run(["bash", "-c", '"$0" pipe | head -n 1; echo "status ${PIPESTATUS[0]}"', exe],
                env={"TALLY_OUTPUT": data, "SIGNAL_TEST_COUNT": count})
        expect(p.stdout.splitlines() == ["line 1", "status %d" % (128 + signal.SIGPIPE)],
               "%s pipe: %r %r" % (hooks, p.stdout, p.stderr))
        expect(p.stderr == "", "%s pipe: messages %r" % (hooks, p.stderr))
        with open(count) as f:
            made = int(f.read().split()[0])
        want(a, data, "f", made, what=hooks + " SIGPIPE in a pipeline")
        want(a, data, "main", 1, 0, what=hooks + " SIGPIPE in a pipeline")
        # An external SIGINT (Ctrl-C) while the program waits, by default.
        signal_waiting(a, exe, os.path.join(work, "int-%s.data" % hooks), signal.SIGINT,
                       {}, hooks + " external SIGINT")
        # The program's own SIGTERM handler, installed before tally's
        # registration, is left alone: it ends the process with _exit(7),
        # which writes nothing (had tally's handler replaced it, tally
        # would have written the file and then called it).
        data = os.path.join(work, "own-term-%s.data" % hooks)
        p = run([exe, "raise"], env={"TALLY_OUTPUT": data, "SIGNAL_TEST_OWN_TERM": "1"},
                check=False)
        expect(p.returncode == 7 and not os.path.exists(data),
               "%s own SIGTERM handler: exit %d, file %s" % (hooks, p.returncode,
                                                             os.path.exists(data)))
    p = run([exe, "raise"], env={"TALLY_OUTPUT": os.path.join(work, "bad.data"),
                                 "TALLY_DUMP_ON": "SIGUSR1,SIGFOO,SIGTERM"}, check=False)
    lines = p.stderr.splitlines()
    expect(len(lines) == 1 and lines[0].startswith(
        "tally: TALLY_DUMP_ON=SIGUSR1,SIGFOO,SIGTERM: unknown signal 'SIGFOO' (accepted: SIGUSR1,"),
        "bad TALLY_DUMP_ON: %r" % p.stderr)
    expect(p.returncode == -signal.SIGTERM and os.path.exists(os.path.join(work, "bad.data")),
           "the valid names of a bad TALLY_DUMP_ON were not installed")


def run_waiting(exe, env, between=None):
    """Run EXE wait (lossless/signal.c: 5 calls of f, "ready", a byte read
    from stdin, 2 more calls) with ENV; BETWEEN(pid) runs while it waits.
    Returns the process (ended)."""
    full = dict(os.environ)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env)
    p = subprocess.Popen([exe, "wait"], env=full, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        expect(p.stdout.readline().strip() == "ready", "%s: no ready line" % exe)
        if between:
            between(p.pid)
        out, err = p.communicate("x", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    expect(p.returncode == 0 and out.strip() == "7" and err == "",
           "%s wait: exit %d, %r, %r" % (exe, p.returncode, out, err))
    return p


@case("pid-reuse")
def check_pid_reuse(a, work):
    """A TALLY_OUTPUT with %p (the default's) never replaces a file another
    process wrote under the same pid (a pid reused after a wrap, a pid
    namespace, a file of an earlier session): the process takes NAME-2,
    NAME-3, ... instead, and nothing is lost; the dumps of one process
    still replace its own file."""
    exe = build(a, work, "signal.c", "inline")
    # An earlier process's file under the name the next process will use:
    # the pid is known once the process runs, before it dumps.
    sub = os.path.join(work, "reuse")
    os.mkdir(sub)
    first = os.path.join(work, "first.data")
    run_waiting(exe, {"TALLY_OUTPUT": first})
    old = open(first, "rb").read()
    pids = []

    def plant(pid):
        pids.append(pid)
        with open(os.path.join(sub, "t.%d.data" % pid), "wb") as f:
            f.write(old)
    run_waiting(exe, {"TALLY_OUTPUT": os.path.join(sub, "t.%p.data")}, plant)
    files = sorted(os.listdir(sub))
    want_files = ["t.%d-2.data" % pids[0], "t.%d.data" % pids[0]]
    expect(files == want_files, "pid reuse: files %s, want %s" % (files, want_files))
    expect(open(os.path.join(sub, want_files[1]), "rb").read() == old,
           "pid reuse: the earlier process's file was changed")
    want(a, os.path.join(sub, want_files[0]), "f", 7, what="pid reuse")
    total = calls(a, os.path.join(sub, want_files[0]))["f"][0] + calls(a, first)["f"][0]
    rows = json.loads(run([a.tally, "report", "--json"]
                          + [os.path.join(sub, f) for f in files]).stdout)["functions"]
    got = sum(r["calls"] for r in rows if r["name"] == "f")
    expect(got == total == 14, "pid reuse: the report of both files has f %d, want %d" % (got, total))
    # One process dumping twice (SIGUSR1, then exit) keeps one file.
    sub = os.path.join(work, "again")
    os.mkdir(sub)

    def usr1(pid):
        os.kill(pid, signal.SIGUSR1)
        expect(wait_for(os.path.join(sub, "t.%d.data" % pid)), "no file after SIGUSR1")
    run_waiting(exe, {"TALLY_OUTPUT": os.path.join(sub, "t.%p.data"),
                      "TALLY_DUMP_ON": "SIGUSR1"}, usr1)
    files = os.listdir(sub)
    expect(len(files) == 1, "two dumps of one process: files %s" % files)
    want(a, os.path.join(sub, files[0]), "f", 7, what="two dumps of one process")
    # Real pid reuse: each run in a new pid namespace is pid 1 (root only).
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("pid namespaces: skipped (needs root and unshare)")
        return
    sub = os.path.join(work, "ns")
    os.mkdir(sub)
    env = {"TALLY_OUTPUT": os.path.join(sub, "%p.data")}
    for i in range(3):
        p = run(["unshare", "--pid", "--fork", exe, "wait"], env=env, input="x", check=False)
        if p.returncode != 0 and i == 0 and "unshare" in p.stderr:
            print("pid namespaces: skipped (%s)" % p.stderr.strip())
            return
        expect(p.returncode == 0 and p.stdout.split()[-1] == "7",
               "unshare run %d: %d %r %r" % (i, p.returncode, p.stdout, p.stderr))
    files = sorted(os.listdir(sub))
    expect(files == ["1-2.data", "1-3.data", "1.data"], "pid namespaces: files %s" % files)
    for f in files:
        want(a, os.path.join(sub, f), "f", 7, what="pid namespace " + f)


@case("late")
def check_late(a, work):
    """Instrumented code that runs after the exit dump (atexit handlers and
    static objects from before the first registration, ELF destructors)
    still gets into the file, with the static and the shared runtime.  The
    boundary: each module reads its counters again when it unregisters (its
    own ELF destructor), not before, so a process ended by _exit in an ELF
    destructor that runs before that has the exit dump's counts, exactly,
    and none made after it, with either runtime."""
    d = os.path.join(a.srcdir, "lossless")
    early = os.path.join(work, "late-early.o")
    run([a.cxx, "-O2", "-c", os.path.join(d, "late-early.cc"), "-o", early])
    rt_dir = os.path.dirname(a.runtime)
    for rt_name, rt in (("static", [a.runtime]),
                        ("shared", ["-L" + rt_dir, "-ltally-rt", "-Wl,-rpath," + rt_dir])):
        for hooks in ("inline", "call"):
            tag = "%s runtime, hooks=%s" % (rt_name, hooks)
            exe = os.path.join(work, "late-%s-%s" % (rt_name, hooks))
            # late-early.o first: its initialisation must run first.
            run([a.cxx, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
                 early, os.path.join(d, "late.cc"), "-o", exe, *rt])
            data = exe + ".data"
            p = run([exe], env={"TALLY_OUTPUT": data})
            expect(p.stdout == "ok\n" and p.stderr == "", "%s: %r %r" % (tag, p.stdout, p.stderr))
            got = calls(a, data)
            for fn in ("late_main_atexit", "late_static_dtor", "late_early_atexit",
                       "late_early_dtor", "late_elf_dtor"):
                expect(got.get("void %s()" % fn) == (1, 1),
                       "%s: %s counted %s, want (1, 1)" % (tag, fn, got.get("void %s()" % fn)))
            os.unlink(data)
            p = run([exe], env={"TALLY_OUTPUT": data, "LATE_EXIT": "1"})
            expect(p.returncode == 0 and p.stdout == "ok\n" and p.stderr == "",
                   "%s, _exit: %d %r %r" % (tag, p.returncode, p.stdout, p.stderr))
            got = calls(a, data)
            for fn, want_fn in (("late_main_atexit", (1, 1)), ("late_static_dtor", (1, 1)),
                                ("late_early_atexit", (0, 0)), ("late_early_dtor", (0, 0)),
                                ("late_elf_dtor", (0, 0))):
                expect(got.get("void %s()" % fn, (0, 0)) == want_fn,
                       "%s, _exit in an ELF destructor: %s counted %s, want %s"
                       % (tag, fn, got.get("void %s()" % fn), want_fn))


def module_count(path):
    with open(path, "rb") as f:
        return struct.unpack("<I", f.read(44)[40:44])[0]


@case("merge")
def check_merge(a, work):
    """TALLY_OUTPUT with %m: 64 processes started at once merge into one
    file whose counts are exact sums, repeated dumps of one process are not
    counted twice, another build of the module stays a record of its own,
    and a damaged file is moved aside, not merged."""
    k = 100
    for hooks in ("inline", "call"):
        sub = os.path.join(work, hooks)
        os.mkdir(sub)
        exe = os.path.join(sub, "many")
        run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
             "-I", a.include, os.path.join(a.srcdir, "lossless", "many.c"), "-o", exe,
             a.runtime])
        env = dict(os.environ, TALLY_OUTPUT=os.path.join(sub, "all.%m.data"))
        env.pop("TALLY_DUMP_ON", None)
        procs = [subprocess.Popen([exe, str(k)] + (["dump"] if i % 2 else []), env=env,
                                  stderr=subprocess.PIPE, text=True) for i in range(64)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            expect(p.returncode == 0 and err == "", "%s: a process failed: %d %r"
                   % (hooks, p.returncode, err))
        files = sorted(os.listdir(sub))
        datas = [f for f in files if f.endswith(".data")]
        expect(len(datas) == 1 and datas[0].startswith("all.many-")
               and files == sorted(["many", datas[0], datas[0] + ".lock"]),
               "%s: files %s" % (hooks, files))
        data = os.path.join(sub, datas[0])
        want(a, data, "f", 64 * k, what=hooks + " 64 processes")
        want(a, data, "main", 64, what=hooks + " 64 processes")
        expect(module_count(data) == 1, "%s: %d module records, want 1"
               % (hooks, module_count(data)))
        # Another build at the same path: same %m file, its own record.
        run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
             "-DSECOND_BUILD", "-I", a.include,
             os.path.join(a.srcdir, "lossless", "many.c"), "-o", exe, a.runtime])
        run([exe, "3"], env={"TALLY_OUTPUT": os.path.join(sub, "all.%m.data")})
        expect(module_count(data) == 2, "%s: %d module records after a rebuild, want 2"
               % (hooks, module_count(data)))
        want(a, data, "f", 64 * k + 3, what=hooks + " after a rebuild")
        want(a, data, "g", 1, what=hooks + " after a rebuild")
        run([exe, "3"], env={"TALLY_OUTPUT": os.path.join(sub, "all.%m.data")})
        expect(module_count(data) == 2, "%s: %d module records after a second run, want 2"
               % (hooks, module_count(data)))
        want(a, data, "f", 64 * k + 6, what=hooks + " after a second run")
        # A damaged file is moved aside and reported.
        with open(data, "r+b") as f:
            f.seek(60)
            b = f.read(1)
            f.seek(60)
            f.write(bytes([b[0] ^ 1]))
        p = run([exe, "2"], env={"TALLY_OUTPUT": os.path.join(sub, "all.%m.data")})
        expect("checksum mismatch; not merged, moved aside" in p.stderr,
               "%s: damaged file: %r" % (hooks, p.stderr))
        expect(os.path.exists(data + ".bad"), "%s: no .bad file" % hooks)
        want(a, data, "f", 2, what=hooks + " after a damaged file")
        if hooks != "inline":
            continue
        # With PATH.bad ... PATH.bad.999 all taken, the damaged file goes to
        # a name of its own, and none of them is replaced (it used to be
        # replaced by the new file).
        for i in range(1, 1000):
            write_file("%s.bad.%d" % (data, i), "kept %d\n" % i)
        damaged = b"TALLYDAT but not a data file"
        with open(data, "wb") as f:
            f.write(damaged)
        p = run([exe, "2"], env={"TALLY_OUTPUT": os.path.join(sub, "all.%m.data")})
        moved = [f for f in os.listdir(sub)
                 if re.fullmatch(re.escape(os.path.basename(data)) + r"\.bad\.[0-9a-f]{12}", f)]
        expect(len(moved) == 1 and "not merged, moved aside to %s/%s" % (sub, moved[0])
               in p.stderr, "%s: 1000 .bad files: moved to %s, %r" % (hooks, moved, p.stderr))
        with open(os.path.join(sub, moved[0]), "rb") as f:
            expect(f.read() == damaged, "%s: the damaged file changed when moved" % hooks)
        for i in range(1, 1000):
            with open("%s.bad.%d" % (data, i)) as f:
                expect(f.read() == "kept %d\n" % i, "%s: %s.bad.%d replaced" % (hooks, data, i))
        want(a, data, "f", 2, what=hooks + " after 1000 .bad files")
    # The merge path under ASan/UBSan: concurrent writers, repeated dumps,
    # another build, a damaged file.
    if a.runtime_asan:
        san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
        sub = os.path.join(work, "asan")
        os.mkdir(sub)
        exe = os.path.join(sub, "many")
        src = os.path.join(a.srcdir, "lossless", "many.c")
        run([a.cc, "-O1", "-g", "-fplugin=" + a.plugin, "-I", a.include, src, "-o", exe,
             *san, a.runtime_asan])
        env = dict(os.environ, TALLY_OUTPUT=os.path.join(sub, "%m.data"))
        procs = [subprocess.Popen([exe, "10", "dump"], env=env, stderr=subprocess.PIPE,
                                  text=True) for _ in range(8)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            expect(p.returncode == 0 and err == "", "asan: %d %r" % (p.returncode, err))
        run([a.cc, "-O1", "-g", "-fplugin=" + a.plugin, "-I", a.include, "-DSECOND_BUILD",
             src, "-o", exe, *san, a.runtime_asan])
        p = run([exe, "3", "dump"], env={"TALLY_OUTPUT": os.path.join(sub, "%m.data")})
        expect(p.stderr == "", "asan: %r" % p.stderr)
        data = [os.path.join(sub, f) for f in os.listdir(sub) if f.endswith(".data")]
        expect(len(data) == 1, "asan: files %s" % os.listdir(sub))
        want(a, data[0], "f", 83, what="asan")
        with open(data[0], "r+b") as f:
            f.truncate(100)
        p = run([exe, "3"], env={"TALLY_OUTPUT": os.path.join(sub, "%m.data")})
        expect("not merged, moved aside" in p.stderr and "runtime error" not in p.stderr
               and "ERROR" not in p.stderr, "asan, damaged file: %r" % p.stderr)
    # fork: the parent's and the child's counts add up in one file.
    exe = build(a, work, "fork.c")
    run([exe], env={"TALLY_OUTPUT": os.path.join(work, "fork.%m.data")})
    datas = [f for f in os.listdir(work) if f.startswith("fork.") and f.endswith(".data")]
    expect(len(datas) == 1, "fork with %%m: files %s" % datas)
    want(a, os.path.join(work, datas[0]), "f", 9, what="fork with %m")
    want(a, os.path.join(work, datas[0]), "main", 1, 2, what="fork with %m")
    # Repeated merged dumps around a dlclose count nothing twice.
    d = os.path.join(a.srcdir, "lossless")
    rt_dir = os.path.dirname(a.runtime)
    shared = ["-L" + rt_dir, "-ltally-rt", "-Wl,-rpath," + rt_dir]
    lib = os.path.join(work, "libdl.so")
    run([a.cc, "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin, os.path.join(d, "dl-lib.c"),
         "-o", lib, *shared])
    exe = os.path.join(work, "dl-main")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-I", a.include, os.path.join(d, "dl-main.c"),
         "-o", exe, *shared, "-ldl"])
    sub = os.path.join(work, "dl")
    os.mkdir(sub)
    run([exe, lib], env={"TALLY_OUTPUT": os.path.join(sub, "%m.data")})
    datas = [f for f in os.listdir(sub) if f.endswith(".data")]
    expect(len(datas) == 1, "dlclose with %%m: files %s" % datas)
    want(a, os.path.join(sub, datas[0]), "lib_f", 5, what="dumps around dlclose with %m")
    want(a, os.path.join(sub, datas[0]), "main", 1, what="dumps around dlclose with %m")


@case("merge-tool")
def check_merge_tool(a, work):
    """tally merge: 1000 files of two builds sum exactly, the builds stay
    separate modules unless --force, the output is a valid data file (the
    runtime merges into it), and bad input writes nothing."""
    src = os.path.join(a.srcdir, "lossless", "many.c")
    one, two = os.path.join(work, "one"), os.path.join(work, "two")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-I", a.include, src, "-o", one, a.runtime])
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-I", a.include, "-DSECOND_BUILD", src,
         "-o", two, a.runtime])
    run([one, "3"], env={"TALLY_OUTPUT": os.path.join(work, "one.data")})
    run([two, "5"], env={"TALLY_OUTPUT": os.path.join(work, "two.data")})
    files = os.path.join(work, "files")
    os.mkdir(files)
    paths = []
    for i in range(1000):
        path = os.path.join(files, "%04d.data" % i)
        shutil.copyfile(os.path.join(work, "two.data" if i % 4 == 0 else "one.data"), path)
        paths.append(path)
    out = os.path.join(work, "merged.data")
    p = run([a.tally, "merge", "-o", out] + paths)
    expect(p.stderr == "" and p.stdout == "", "merge printed %r %r" % (p.stdout, p.stderr))
    expect(module_count(out) == 2, "%d module records, want 2" % module_count(out))
    want(a, out, "f", 750 * 3 + 250 * 5, what="merge of 1000 files")
    want(a, out, "g", 250, what="merge of 1000 files")
    want(a, out, "main", 1000, what="merge of 1000 files")
    # The same counts as report over the 1000 files.
    expect(run([a.tally, "report", "--csv", out]).stdout
           == run([a.tally, "report", "--csv"] + paths).stdout,
           "merged file reports differently from its inputs")
    # --force: one module, functions paired by symbol.
    forced = os.path.join(work, "forced.data")
    p = run([a.tally, "merge", "--force", "-o", forced, out])
    expect(module_count(forced) == 1 and "--force merged other builds into 1 module" in p.stderr,
           "--force: %d modules, %r" % (module_count(forced), p.stderr))
    want(a, forced, "f", 750 * 3 + 250 * 5, what="--force")
    want(a, forced, "g", 250, what="--force")
    # The output may be an input; the runtime merges into a merged file.
    run([a.tally, "merge", "-o", out, out, os.path.join(work, "one.data")])
    want(a, out, "f", 750 * 3 + 250 * 5 + 3, what="output as input")
    # %m names the file after the program: find the name, put the merged
    # file there, and let the program merge into it.
    run([one, "2"], env={"TALLY_OUTPUT": os.path.join(work, "m.%m.data")})
    tok = [f for f in os.listdir(work) if f.startswith("m.one-") and f.endswith(".data")]
    expect(len(tok) == 1, "no %%m file: %s" % os.listdir(work))
    shutil.copyfile(out, os.path.join(work, tok[0]))
    run([one, "2"], env={"TALLY_OUTPUT": os.path.join(work, "m.%m.data")})
    want(a, os.path.join(work, tok[0]), "f", 750 * 3 + 250 * 5 + 3 + 2,
         what="runtime merge into a tally merge output")
    # A bad input: exit 1, naming it, and no output written.
    bad = os.path.join(work, "bad.data")
    with open(bad, "wb") as f:
        f.write(b"TALLYDAT" + b"\0" * 40)
    out2 = os.path.join(work, "never.data")
    p = run([a.tally, "merge", "-o", out2, paths[0], bad], check=False)
    expect(p.returncode == 1 and bad in p.stderr and not os.path.exists(out2),
           "bad input: exit %d, %r, output written: %s"
           % (p.returncode, p.stderr, os.path.exists(out2)))
    p = run([a.tally, "merge", paths[0]], check=False)
    expect(p.returncode == 2 and "no output file" in p.stderr, "no -o: %r" % p.stderr)


@case("threads")
def check_threads(a, work):
    """update=atomic and update=tls under threads: 16 joined threads give
    the exact total; frames left by pthread_exit count their entry and no
    exit; detached threads blocked (or still counting) when main returns,
    and a thread that outlives a main ended by pthread_exit, are all in the
    file.  update=atomic: each of hooks inline and call, at late and early,
    static and shared runtime (four builds covering every pair); update=tls
    (per-thread counters added at thread exit and at the dump): inline
    hooks, late with the static runtime and early with the shared one."""
    n = 200000
    for hooks, at, rt_name, update in (
            ("inline", "late", "static", "atomic"), ("call", "late", "shared", "atomic"),
            ("inline", "early", "shared", "atomic"), ("call", "early", "static", "atomic"),
            ("inline", "late", "static", "tls"), ("inline", "early", "shared", "tls")):
        tag = "hooks=%s at=%s update=%s %s runtime" % (hooks, at, update, rt_name)
        exe = os.path.join(work, "threads-%s-%s-%s-%s" % (hooks, at, rt_name, update))
        run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
             "-fplugin-arg-tally-at=" + at, "-fplugin-arg-tally-update=" + update,
             os.path.join(a.srcdir, "lossless", "threads.c"), "-o", exe, "-pthread",
             *([a.runtime] if rt_name == "static" else shared_runtime(a))])

        def go(mode, *args):
            data = "%s-%s.data" % (exe, mode)
            p = run([exe, mode, *map(str, args)], env={"TALLY_OUTPUT": data})
            expect(p.stderr == "", "%s %s: messages %r" % (tag, mode, p.stderr))
            return data, p.stdout

        data, _ = go("join", n)
        want_all(a, data, {"f": (16 * n, 16 * n), "join_worker": (16, 16), "main": (1, 1)},
                 what=tag + " 16 joined threads")
        # Threads 0, 3, .. 15 leave b, a and exit_worker by pthread_exit;
        # 1, 4, .. 13 leave exit_worker by it; 2, 5, .. 14 return.
        data, _ = go("exit")
        want_all(a, data, {"exit_worker": (16, 5), "a": (16, 10), "b": (16, 10),
                           "f": (16, 16), "main": (1, 1)},
                 what=tag + " pthread_exit in instrumented frames")
        data, _ = go("detached", 1000)
        want_all(a, data, {"f": (8000, 8000), "detached_worker": (8, 0), "main": (1, 1)},
                 what=tag + " detached threads blocked when main returns")
        data, out = go("spin", 100000)
        made = int(out)
        got = calls(a, data)
        expect(made >= 100000 and got["f"][0] >= made and got["f"][1] >= made
               and got["spinner"] == (1, 0) and got["main"] == (1, 1),
               "%s: a detached thread still counting when main returns: made %d "
               "calls of f before, file says %s (spinner %s, main %s)"
               % (tag, made, got["f"], got["spinner"], got["main"]))
        data, out = go("outlive", 1000)
        expect(out.strip() == "1000", "%s: outlive printed %r" % (tag, out))
        want_all(a, data, {"f": (1000, 1000), "g": (1000, 1000), "outliver": (1, 1),
                           "main": (1, 0)},
                 what=tag + " a thread outliving main (pthread_exit)")


@case("dlopen")
def check_dlopen(a, work):
    """One instrumented library opened twice (one handle, then reloaded
    after its last dlclose), and two copies of it under two paths: every
    load's counts are written once, the report sums the records of one
    build to exactly the calls made, and a dump in between has exactly the
    counts so far.  Shared runtime, and static copies in the program and
    each library (plus an uninstrumented program whose libraries carry the
    only runtime copies), hooks inline and call, and inline with
    update=tls."""
    d = os.path.join(a.srcdir, "lossless")
    lib_rows = lambda k: {"lib_f": (k, k), "lib_g": (2 * k, 2 * k)}
    for rt_name in ("shared", "static", "host", "host-shared"):
        for hooks in ("inline", "call", "tls"):
            tag = "%s, hooks=%s" % (rt_name, hooks)
            sub = os.path.join(work, "%s-%s" % (rt_name, hooks))
            os.mkdir(sub)
            rt = shared_runtime(a) if rt_name.endswith("shared") else [a.runtime]
            # "tls": inline counters per thread (update=tls), whose copies
            # must reach the module's record before each dlclose.
            plugin = ["-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks]
            if hooks == "tls":
                plugin = ["-fplugin=" + a.plugin, "-fplugin-arg-tally-update=tls"]
            lib, lib2 = os.path.join(sub, "libtwice.so"), os.path.join(sub, "libtwice2.so")
            run([a.cc, "-O2", "-fPIC", "-shared", *plugin,
                 os.path.join(d, "dl-twice-lib.c"), "-o", lib, *rt])
            shutil.copyfile(lib, lib2)
            exe = os.path.join(sub, "dl-twice")
            main_src = os.path.join(d, "dl-twice.c")
            if rt_name.startswith("host"):
                run([a.cc, "-O2", main_src, "-o", exe, "-ldl"])
            else:
                run([a.cc, "-O2", *plugin, main_src, "-o", exe, *rt, "-ldl"])
            # (mode, libraries, lib_f calls at the dump in between and at
            # exit, lib_f per module record at exit, the program's own
            # functions at the dump and at exit).
            modes = [("copies", [lib, lib2], 8, 10, [3, 7],
                      {"main": (1, 0), "open_lib": (2, 2), "calls": (2, 2), "dump_to": (1, 0)},
                      {"main": (1, 1), "open_lib": (2, 2), "calls": (3, 3), "dump_to": (1, 1)})]
            if rt_name != "host":
                # A static runtime only in the library goes with the
                # library's last dlclose, and the reload's exit dump replaces
                # the file (documented); the shared runtime pins itself.
                modes.insert(0, ("same", [lib], 12, 18, [12, 6],
                                 {"main": (1, 0), "open_lib": (2, 2), "calls": (3, 3),
                                  "loaded": (1, 1), "dump_to": (1, 0)},
                                 {"main": (1, 1), "open_lib": (3, 3), "calls": (4, 4),
                                  "loaded": (2, 2), "dump_to": (1, 1)}))
            for mode, libs, k_mid, k, records, own_mid, own in modes:
                if rt_name.startswith("host"):
                    own_mid, own = {}, {}
                data, mid = os.path.join(sub, mode + ".data"), os.path.join(sub, mode + "-mid.data")
                p = run([exe, mode, *libs, mid], env={"TALLY_OUTPUT": data})
                expect(p.stderr == "", "%s %s: messages %r" % (tag, mode, p.stderr))
                want_all(a, mid, {**lib_rows(k_mid), **own_mid},
                         what="%s %s, dump before the last dlclose" % (tag, mode))
                want_all(a, data, {**lib_rows(k), **own},
                         what="%s %s, at exit" % (tag, mode))
                # One record per load, each with its own calls.
                recs = [int(l.split()[-2]) for l in
                        run([a.tally, "dump", data]).stdout.splitlines()
                        if 'symbol="lib_f"' in l]
                expect(sorted(recs) == sorted(records), "%s %s: lib_f per module record %s, "
                       "want %s" % (tag, mode, recs, records))


@case("signal-handler")
def check_signal_handler(a, work):
    """Instrumented code called from a SIGALRM handler (raised in a loop,
    and from a 50 us interval timer interrupting a loop over the same
    function): exact counts, hooks inline and call, update atomic (-O2 and
    -O0) and single (-O2, where the increment is one instruction; x86-64)."""
    configs = [("O2", "atomic"), ("O0", "atomic")]
    if platform.machine() in ("x86_64", "AMD64"):
        configs.append(("O2", "single"))
    for opt, update in configs:
        for hooks in ("inline", "call"):
            tag = "-%s hooks=%s update=%s" % (opt, hooks, update)
            exe = os.path.join(work, "sighandler-%s-%s-%s" % (opt, hooks, update))
            run([a.cc, "-" + opt, "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
                 "-fplugin-arg-tally-update=" + update,
                 os.path.join(a.srcdir, "lossless", "sighandler.c"), "-o", exe, a.runtime])
            for mode, k in (("raise", 10000), ("timer", 2000)):
                data = "%s-%s.data" % (exe, mode)
                p = run([exe, mode, str(k)], env={"TALLY_OUTPUT": data})
                expect(p.stderr == "", "%s %s: messages %r" % (tag, mode, p.stderr))
                m, h = map(int, p.stdout.split())
                expect(h >= k and (mode == "timer" or m == k), "%s %s: output %r"
                       % (tag, mode, p.stdout))
                want_all(a, data, {"f": (m + h, m + h), "h": (h, h), "on_alarm": (h, h),
                                   "main": (1, 1)}, what="%s %s" % (tag, mode))


@case("ctor")
def check_ctor(a, work):
    """Instrumented code run before the module it counts in registered (a
    .preinit_array entry, a priority-100 constructor, a priority-101
    constructor linked before that module, a C++ init_priority(101)
    object), and after the exit dump (an ELF destructor, that object's
    destructor): every call is in the file.  The program logs each module
    registration (-Wl,--wrap=__tally_register) to show the order."""
    d = os.path.join(a.srcdir, "lossless")
    log = os.path.join(work, "ctor-log.o")
    run([a.cc, "-O2", "-I", a.include, "-c", os.path.join(d, "ctor-log.c"), "-o", log])
    for rt_name in ("static", "shared"):
        for hooks in ("inline", "call"):
            tag = "%s runtime, hooks=%s" % (rt_name, hooks)
            plugin = ["-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks, "-c"]
            objs = []
            for src, cc in (("ctor-obj.cc", a.cxx), ("ctor-first.c", a.cc),
                            ("ctor-main.c", a.cc)):
                obj = os.path.join(work, "%s-%s-%s.o" % (src, rt_name, hooks))
                run([cc, *plugin, "-Wno-prio-ctor-dtor", os.path.join(d, src), "-o", obj])
                objs.append(obj)
            exe = os.path.join(work, "ctor-%s-%s" % (rt_name, hooks))
            run([a.cxx, *objs, log, "-Wl,--wrap=__tally_register", "-o", exe,
                 *([a.runtime] if rt_name == "static" else shared_runtime(a))])
            data = exe + ".data"
            p = run([exe], env={"TALLY_OUTPUT": data})
            expect(p.stderr == "", "%s: messages %r" % (tag, p.stderr))
            lines = p.stdout.splitlines()
            events = lines[0].split() if lines else []
            reg = [i for i, e in enumerate(events) if e.startswith("register:")]
            expect("register:ctor-main.c" in events and reg
                   and all(e in events and events.index(e) < events.index("register:ctor-main.c")
                           for e in ("preinit", "ctor100", "ctor101", "obj"))
                   and events.index("obj") < reg[0],
                   "%s: the early code did not run before the registrations it "
                   "should precede: %s" % (tag, events))
            expect(sorted(lines[1:]) == ["dtor after the exit dump", "~Obj after the exit dump"],
                   "%s: the late code did not run after the exit dump: %s" % (tag, lines[1:]))
            got = calls(a, data)
            for fn, n in (("hit", 7), ("first_fn", 4), ("int obj_fn(int)", 2), ("preinit", 1),
                          ("ctor100", 1), ("ctor101", 1), ("dtor", 1), ("Obj::~Obj()", 1),
                          ("main", 1)):
                expect(got.get(fn) == (n, n), "%s: %s counted %s, want %s"
                       % (tag, fn, got.get(fn), (n, n)))


@case("reentry")
def check_reentry(a, work):
    """A program defining its own, instrumented, write, strlen and memcpy
    (functions the runtime would call while writing the file, and that
    libunwind calls under paths=on): the runtime runs none of them itself
    and never waits for itself; every call the program and the libraries
    made is in the file exactly (the program counts them apart).  hooks
    inline and call, counting and measure=cycles, paths=on, update=atomic;
    static and shared runtime; with a tally_dump in the middle."""
    configs = [("inline", ()), ("call", ()),
               ("inline", ("-fplugin-arg-tally-measure=cycles",)),
               ("call", ("-fplugin-arg-tally-measure=cycles",)),
               ("call", ("-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-paths=on")),
               ("inline", ("-fplugin-arg-tally-update=atomic",))]
    for n, (hooks, opts) in enumerate(configs):
        # Only libunwind (paths=on) calls them besides the program.
        paths = "-fplugin-arg-tally-paths=on" in opts
        for rt in ("static", "shared"):
            tag = "hooks=%s %s, %s runtime" % (hooks, " ".join(opts), rt)
            exe = build(a, work, "reentry.c", hooks, extra=opts,
                        name="reentry-%d-%s" % (n, rt),
                        runtime=None if rt == "static" else shared_runtime(a))
            for arg in ((), ("dump",)):
                data = exe + ("-dump" if arg else "") + ".data"
                p = run([exe, *arg], env={"TALLY_OUTPUT": data}, timeout=60)
                expect(p.stdout == "sum 1499500\n", "%s: output %r" % (tag, p.stdout))
                w, sl, mc = map(int, p.stderr.split())
                expect(w == 1 and (sl == 1 and mc == 1 or paths and sl >= 1 and mc >= 1),
                       "%s: the calls seen are %r, want 1 1 1" % (tag, p.stderr))
                expected = {"f": (1000, 1000), "main": (1, 1), "write": (w, w),
                            "strlen": (sl, sl), "memcpy": (mc, mc)}
                want_all(a, data, expected, what=tag + (" with a dump" if arg else ""))


if __name__ == "__main__":
    sys.exit(main("tally-lossless-"))
