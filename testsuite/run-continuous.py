#!/usr/bin/env python3
"""Continuous output (-fplugin-arg-tally-counters=mapped and TALLY_OUTPUT
with %c): the counters live in the data file, so a process killed by
SIGKILL, ended by _exit or abort, or forked, exec'd, or holding dlopen'ed
libraries, leaves a file with exactly the calls it made.  Each check fails
if a single count is lost or doubled.

Usage: run-continuous.py CHECK --plugin P --runtime RT --tally T --cc CC
                         --srcdir DIR [--include DIR] [--runtime-asan RTA]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import signal
import struct
import subprocess
import sys
import time
import zlib

import checklib
from checklib import case, expect, main, report_csv, run, shared_runtime, Skip, write_file

MAPPED = "-fplugin-arg-tally-counters=mapped"


def src(a, name):
    return os.path.join(a.srcdir, "continuous", name)


def fork_src(a):
    """lossless/fork.c, which run with "kill" kills its child and itself."""
    return os.path.join(a.srcdir, "lossless", "fork.c")


def runtime(a, name):
    return [a.runtime] if name == "static" else shared_runtime(a)


def build(a, exe, sources, flags=(), rt="static", opt="-O2", mapped=True, link=()):
    return checklib.build(a, exe, sources, [*([MAPPED] if mapped else []), *flags, "-I", a.include],
                          opt=opt, runtime=runtime(a, rt), libs=link, cxx=False)


def report(a, path):
    """({function: (entries, exits)}, stderr) of one data file."""
    return report_csv(a, path)


def want_all(a, path, expected, what, finished=None):
    """The functions of PATH with any count are exactly EXPECTED; FINISHED:
    whether the report must (not) say the process did not finish."""
    got, err = report(a, path)
    got = {fn: c for fn, c in got.items() if c != (0, 0)}
    expect(got == expected, "%s: counted %s, want %s"
           % (what, sorted(got.items()), sorted(expected.items())))
    if finished is not None:
        said = "process did not finish: counts up to the kill" in err
        expect(said != finished, "%s: the report %s say the process did not finish: %r"
               % (what, "does not" if not finished else "does", err))


def start(exe, args, env):
    full = dict(os.environ)
    full.pop("TALLY_OUTPUT", None)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env)
    return subprocess.Popen([exe, *args], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_pid(exe, args, env):
    """Run EXE to its end: (process, stdout, stderr), the pid in process."""
    p = start(exe, args, env)
    out, err = p.communicate(timeout=120)
    return p, out, err


def kill_after_line(p, what):
    """Wait for P's first line (it has made its calls), SIGKILL it."""
    try:
        line = p.stdout.readline()
        expect(line.strip() != "", "%s: no line from the program (%r)"
               % (what, p.stderr.read() if p.poll() is not None else ""))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    expect(p.returncode == -signal.SIGKILL, "%s: ended with %d, want SIGKILL\n%s"
           % (what, p.returncode, err))
    expect(err == "", "%s: runtime messages %r" % (what, err))
    return line.strip()


def no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@case("kill")
def check_kill(a, work):
    """SIGKILL by the parent after a known number of calls, _exit and abort:
    the file holds exactly the calls made (one of them before the unit
    registered), for hooks inline and call,
    blocks none, count and visited, static and shared runtime, -O0 and -O2
    (every pair of these, and each value at least twice)."""
    n = 1234
    combos = [("inline", "none", "static", "-O2"), ("call", "none", "shared", "-O2"),
              ("inline", "count", "shared", "-O0"), ("call", "count", "static", "-O0"),
              ("inline", "visited", "static", "-O0"), ("call", "visited", "shared", "-O2"),
              ("inline", "count", "static", "-O2"), ("inline", "none", "shared", "-O0"),
              ("call", "visited", "static", "-O0"), ("inline", "count", "shared", "-O2",
                                                     "early")]
    for combo in combos:
        hooks, blocks, rt, opt = combo[:4]
        at = combo[4] if len(combo) > 4 else "late"
        tag = "hooks=%s blocks=%s at=%s %s runtime %s" % (hooks, blocks, at, rt, opt)
        # at=early also counts glibc's inline atoi (stdlib.h).
        lib = {"atoi": (1, 1)} if at == "early" else {}
        exe = os.path.join(work, "kill-%s-%s-%s-%s-%s" % (hooks, blocks, rt, opt, at))
        build(a, exe, [src(a, "kill.c")], ["-fplugin-arg-tally-hooks=" + hooks,
                                           "-fplugin-arg-tally-blocks=" + blocks,
                                           "-fplugin-arg-tally-at=" + at], rt, opt)
        data = exe + ".%p%c.data"
        p = start(exe, ["wait", str(n)], {"TALLY_OUTPUT": data})
        kill_after_line(p, tag)
        path = data.replace("%p", str(p.pid)).replace("%c", "")
        expect(os.path.exists(path), "%s: no file %s after SIGKILL" % (tag, path))
        want_all(a, path, {"f": (n, n), "main": (1, 0), "wait_for_kill": (1, 0), "pre": (1, 1), "before_registration": (1, 1),
                                 **lib},
                 tag + " SIGKILL", finished=False)
        if blocks == "visited":
            # The blocks of f ran, those of g did not.
            vals = {}
            for line in run([a.tally, "dump", path]).stdout.splitlines():
                if line.startswith("  fn ") and "counters=" in line:
                    name = line.split('symbol="')[1].split('"')[0]
                    vals[name] = [int(v) for v in line.split(":", 1)[1].split()]
            expect(any(vals.get("f", [0, 0])[2:]) and not any(vals.get("g", [0, 0])[2:]),
                   "%s: visited bytes of f %s and g %s" % (tag, vals.get("f"), vals.get("g")))
        for mode in ("_exit", "abort"):
            out = exe + "-" + mode + "%c.data"
            p = run([exe, mode, str(n + 1)], env={"TALLY_OUTPUT": out}, check=False,
                    preexec_fn=no_core)
            expect(p.returncode == (0 if mode == "_exit" else -signal.SIGABRT)
                   and p.stderr == "", "%s %s: ended with %d, %r"
                   % (tag, mode, p.returncode, p.stderr))
            want_all(a, out.replace("%c", ""), {"f": (n + 1, n + 1), "main": (1, 0), "pre": (1, 1), "before_registration": (1, 1),
                                                       **lib},
                     "%s %s" % (tag, mode), finished=False)
        out = exe + "-normal%c.data"
        run([exe, "normal", str(n)], env={"TALLY_OUTPUT": out})
        want_all(a, out.replace("%c", ""), {"f": (n, n), "main": (1, 1), "pre": (1, 1), "before_registration": (1, 1), **lib},
                 tag + " normal exit",
                 finished=True)
        head = open(out.replace("%c", ""), "rb").read(12)
        expect(head[8:12] == struct.pack("<I", 3), "%s: normal exit: not a continuous "
               "file (version %r)" % (tag, head[8:12]))
    # Without %c the same program writes an ordinary file at exit, and
    # nothing when killed.
    exe = os.path.join(work, "kill-inline-none-static--O2-late")
    data = os.path.join(work, "plain.data")
    run([exe, "normal", "5"], env={"TALLY_OUTPUT": data})
    expect(open(data, "rb").read(12)[8:12] == struct.pack("<I", 2),
           "without %c: not a version 2 file")
    want_all(a, data, {"f": (5, 5), "main": (1, 1), "pre": (1, 1), "before_registration": (1, 1)}, "without %c",
             finished=True)
    os.unlink(data)
    p = start(exe, ["wait", "5"], {"TALLY_OUTPUT": data})
    kill_after_line(p, "without %c")
    expect(not os.path.exists(data), "without %c: a file after SIGKILL")


@case("mixed")
def check_mixed(a, work):
    """A counters=mapped unit and an ordinary one in one program: at normal
    exit both are in the file; after SIGKILL only the mapped one (the other
    unit's counts were in the process's memory); after tally_dump and a
    SIGKILL, the other unit as of the dump and the mapped one to the end."""
    n = 321
    for rt in ("static", "shared"):
        tag = rt + " runtime"
        plugin = ["-O2", "-fplugin=" + a.plugin, "-I", a.include, "-c", "-DSPLIT"]
        main_o, other_o = (os.path.join(work, "%s-%s.o" % (x, rt)) for x in ("kill", "other"))
        run([a.cc, *plugin, MAPPED, src(a, "kill.c"), "-o", main_o])
        run([a.cc, *plugin, src(a, "other.c"), "-o", other_o])
        exe = os.path.join(work, "mixed-" + rt)
        run([a.cc, main_o, other_o, "-o", exe, *runtime(a, rt)])
        data = exe + "-normal%c.data"
        run([exe, "normal", str(n)], env={"TALLY_OUTPUT": data})
        want_all(a, data.replace("%c", ""), {"f": (n, n), "other_f": (n, n), "main": (1, 1),
                                                "pre": (1, 1), "before_registration": (1, 1)},
                 tag + " normal exit", finished=True)
        data = exe + "-kill%c.data"
        p = start(exe, ["wait", str(n)], {"TALLY_OUTPUT": data})
        kill_after_line(p, tag)
        want_all(a, data.replace("%c", ""), {"f": (n, n), "main": (1, 0),
                                              "wait_for_kill": (1, 0), "pre": (1, 1), "before_registration": (1, 1)},
                 tag + " SIGKILL: the unmapped unit is absent", finished=False)
        data = exe + "-dump%c.data"
        p = start(exe, ["dump", str(n)], {"TALLY_OUTPUT": data})
        kill_after_line(p, tag + " dump")
        want_all(a, data.replace("%c", ""), {"f": (n + 2, n + 2), "other_f": (n, n),
                                             "main": (1, 0), "wait_for_kill": (1, 0),
                                             "pre": (1, 1), "before_registration": (1, 1)},
                 tag + " tally_dump then SIGKILL", finished=False)


@case("fork")
def check_fork(a, work):
    """A forked child and its parent, both killed: each file is exact, the
    child's from zero, and the child never wrote into the parent's file."""
    for hooks, rt in (("inline", "static"), ("call", "shared")):
        tag = "hooks=%s %s runtime" % (hooks, rt)
        exe = build(a, os.path.join(work, "fork-" + hooks), [fork_src(a)],
                    ["-fplugin-arg-tally-hooks=" + hooks], rt)
        data = exe + ".%p%c.data"
        p, out, err = run_pid(exe, ["kill"], {"TALLY_OUTPUT": data})
        expect(p.returncode == -signal.SIGKILL and err == "",
               "%s: ended with %d, %r" % (tag, p.returncode, err))
        child, s = out.split()
        expect(s == "7", "%s: output %r" % (tag, out))
        parent = data.replace("%p", str(p.pid)).replace("%c", "")
        child = data.replace("%p", child).replace("%c", "")
        want_all(a, parent, {"f": (7, 7), "main": (1, 0)}, tag + " parent", finished=False)
        want_all(a, child, {"f": (2, 2)}, tag + " child", finished=False)
    # A pattern without %p: the child does not take its parent's file.
    exe = os.path.join(work, "fork-inline")
    data = os.path.join(work, "fixed%c.data")
    p = run([exe, "kill"], env={"TALLY_OUTPUT": data}, check=False)
    child = p.stdout.split()[0]
    fixed = data.replace("%c", "")
    expect("has no %p" in p.stderr and os.path.exists(fixed + "." + child),
           "fixed name: stderr %r, files %s" % (p.stderr, os.listdir(work)))
    want_all(a, fixed, {"f": (7, 7), "main": (1, 0)}, "fixed name, parent")
    want_all(a, fixed + "." + child, {"f": (2, 2)}, "fixed name, child")


@case("dlopen")
def check_dlopen(a, work):
    """A mapped library loaded, unloaded and loaded again, then the process
    killed: each load's region holds its calls (3 and 4), static and shared
    runtime, hooks inline and call."""
    for hooks, rt in (("inline", "shared"), ("call", "static"), ("inline", "static")):
        tag = "hooks=%s %s runtime" % (hooks, rt)
        lib = os.path.join(work, "libcont-%s-%s.so" % (hooks, rt))
        run([a.cc, "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin, MAPPED,
             "-fplugin-arg-tally-hooks=" + hooks, src(a, "dl-lib.c"), "-o", lib,
             *runtime(a, rt)])
        exe = build(a, os.path.join(work, "dl-%s-%s" % (hooks, rt)), [src(a, "dl.c")],
                    ["-fplugin-arg-tally-hooks=" + hooks], rt, link=["-ldl"])
        data = exe + "%c.data"
        p = run([exe, lib], env={"TALLY_OUTPUT": data}, check=False)
        expect(p.returncode == -signal.SIGKILL and p.stderr == "",
               "%s: ended with %d, %r" % (tag, p.returncode, p.stderr))
        path = data.replace("%c", "")
        want_all(a, path, {"lib_f": (7, 7), "calls": (2, 2), "main": (1, 0)}, tag,
                 finished=False)
        recs = sorted(int(l.split()[-2]) for l in run([a.tally, "dump", path]).stdout.splitlines()
                      if 'symbol="lib_f"' in l)
        expect(recs == [3, 4], "%s: lib_f per module record %s, want [3, 4]" % (tag, recs))


@case("threads")
def check_threads(a, work):
    """Eight threads calling f while the process is killed, update=atomic:
    the file has every call that finished and no more than were started.
    Meanwhile the main thread dlopens a mapped library (its unit registers
    while the threads count) and calls it 5 times."""
    for hooks, rt in (("inline", "static"), ("call", "shared")):
        tag = "hooks=%s %s runtime" % (hooks, rt)
        lib = os.path.join(work, "libthr-%s.so" % hooks)
        run([a.cc, "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin, MAPPED,
             "-fplugin-arg-tally-hooks=" + hooks, "-fplugin-arg-tally-update=atomic",
             src(a, "dl-lib.c"), "-o", lib, *runtime(a, rt)])
        exe = build(a, os.path.join(work, "threads-" + hooks), [src(a, "threads.c")],
                    ["-fplugin-arg-tally-hooks=" + hooks, "-fplugin-arg-tally-update=atomic",
                     "-pthread"], rt, link=["-ldl"])
        shared = exe + ".shared"
        data = exe + "%c.data"
        p = start(exe, [shared, lib], {"TALLY_OUTPUT": data})
        try:
            expect(p.stdout.readline().strip() == "go", tag + ": no go line")
            time.sleep(0.2)  # the threads count on
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        words = struct.unpack("<16Q", open(shared, "rb").read(128))
        started, finished = sum(words[0::2]), sum(words[1::2])
        got, _ = report(a, data.replace("%c", ""))
        entries, exits = got.get("f", (0, 0))
        expect(got.get("lib_f") == (5, 5), "%s: lib_f counted %s, want (5, 5)"
               % (tag, got.get("lib_f")))
        expect(finished >= 8000 and finished <= exits <= entries <= started
               and started - finished <= 8,
               "%s: f entered %d and left %d times by the file; the threads "
               "started %d calls and finished %d" % (tag, entries, exits, started, finished))


@case("exec")
def check_exec(a, work):
    """An image that execs itself: the new image (same pid) continues the
    file instead of replacing it, and the file holds both images' calls."""
    for hooks in ("inline", "call"):
        exe = build(a, os.path.join(work, "exec-" + hooks),
                    [os.path.join(a.srcdir, "lossless", "exec.c")],
                    ["-fplugin-arg-tally-hooks=" + hooks])
        data = exe + ".%p%c.data"
        p, out, err = run_pid(exe, ["continue"], {"TALLY_OUTPUT": data})
        expect(p.returncode == -signal.SIGKILL and err == "",
               "hooks=%s: ended with %d, %r" % (hooks, p.returncode, err))
        path = data.replace("%p", str(p.pid)).replace("%c", "")
        want_all(a, path, {"f": (8, 8), "main": (2, 0)}, "hooks=%s exec" % hooks,
                 finished=False)


@case("errors")
def check_errors(a, work):
    """counters= takes static or mapped, and refuses what it cannot map;
    %c with %m is refused at run time with the reason; a program closing the
    runtime's descriptor; a path that cannot be created."""
    c = write_file(os.path.join(work, "t.c"), "int main (void) { return 0; }\n")
    p = run([a.cc, "-fplugin=" + a.plugin, "-fplugin-arg-tally-counters=disk", "-c", c,
             "-o", os.path.join(work, "t.o")], check=False)
    expect(p.returncode != 0 and "accepted values: static, mapped" in p.stderr,
           "counters=disk: %r" % p.stderr)
    for bad in ("update=tls", "hooks=user:my", "measure=cycles"):
        p = run([a.cc, "-fplugin=" + a.plugin, MAPPED, "-fplugin-arg-tally-" + bad, "-c", c,
                 "-o", os.path.join(work, "t.o")], check=False)
        expect(p.returncode != 0 and "cannot be combined" in p.stderr
               and bad.split(":")[0] in p.stderr and "internal compiler error" not in p.stderr,
               "counters=mapped with %s: %r" % (bad, p.stderr))
    exe = build(a, os.path.join(work, "kill"), [src(a, "kill.c")])
    data = os.path.join(work, "m-%m%c.data")
    p = run([exe, "normal", "4"], env={"TALLY_OUTPUT": data})
    expect("cannot be combined with %m" in p.stderr, "%%c with %%m: %r" % p.stderr)
    files = [f for f in os.listdir(work) if f.startswith("m-") and f.endswith(".data")]
    expect(len(files) == 1, "%%c with %%m: files %s" % files)
    want_all(a, os.path.join(work, files[0]), {"f": (4, 4), "main": (1, 1), "pre": (1, 1), "before_registration": (1, 1)},
             "%c with %m")
    # A program that closes every descriptor and opens a file of its own
    # under the continuous file's number: the exit dump reopens the
    # continuous file and leaves the program's file alone.
    victim = os.path.join(work, "victim")
    data = os.path.join(work, "closefds%c.data")
    p = run([exe, "closefds", "3", victim], env={"TALLY_OUTPUT": data})
    expect(open(victim, "rb").read() == b"x" and p.stderr == "",
           "closefds: the program's file holds %r, messages %r"
           % (open(victim, "rb").read()[:64], p.stderr))
    want_all(a, data.replace("%c", ""), {"f": (3, 3), "main": (1, 1), "pre": (1, 1),
                                         "before_registration": (1, 1)},
             "closefds", finished=True)
    # A directory that does not exist: named once, counts written at exit
    # by the ordinary dump (which names the failure too).
    p = run([exe, "normal", "4"], env={"TALLY_OUTPUT": os.path.join(work, "no", "x%c.data")})
    expect("for continuous output" in p.stderr and "no such file" in p.stderr,
           "missing directory: %r" % p.stderr)


@case("asan")
def check_asan(a, work):
    """A continuous run under ASan and UBSan (runtime and program), killed
    and ending normally, and the report of both files under ASan."""
    if not a.runtime_asan:
        raise Skip("no ASan runtime given")
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
    exe = os.path.join(work, "kill-asan")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, MAPPED, "-fplugin-arg-tally-blocks=count",
         "-I", a.include, src(a, "kill.c"), "-o", exe, *san, a.runtime_asan])
    env = {"TALLY_OUTPUT": exe + "-%p%c.data", "ASAN_OPTIONS": "detect_leaks=1"}
    p = start(exe, ["dump", "100"], env)
    kill_after_line(p, "asan")
    killed = exe + "-%d.data" % p.pid
    want_all(a, killed, {"f": (102, 102), "main": (1, 0), "wait_for_kill": (1, 0),
                          "pre": (1, 1), "before_registration": (1, 1)},
             "asan killed", finished=False)
    p = run([exe, "normal", "100"], env=env)
    expect("ERROR" not in p.stderr and "runtime error" not in p.stderr,
           "sanitizer report:\n%s" % p.stderr)
    files = [os.path.join(work, f) for f in os.listdir(work) if f.endswith(".data")]
    for args in (["report"], ["report", "--blocks"], ["dump"], ["lcov", "-o",
                                                                os.path.join(work, "x.info")]):
        p = run([a.tally_asan or a.tally, *args, *files], env={"ASAN_OPTIONS": "detect_leaks=1"})
        expect("ERROR" not in p.stderr and "runtime error" not in p.stderr,
               "tally %s: sanitizer report:\n%s" % (" ".join(args), p.stderr))


@case("bad-files")
def check_bad_files(a, work):
    """Damaged continuous files: a region past the end of the file (the last
    chunk cut short: left out and said), one overlapping its record or
    with counters outside it, a checksum mismatch, a bad tag, sessions out
    of order, a damaged image: each gives one clear line, never a crash;
    tally merge reads a good one into an ordinary file."""
    exe = build(a, os.path.join(work, "kill"), [src(a, "kill.c")],
                ["-fplugin-arg-tally-blocks=count"])
    good = os.path.join(work, "good.data")
    run([exe, "normal", "10"], env={"TALLY_OUTPUT": good + "%c"})
    buf = bytearray(open(good, "rb").read())
    plen = struct.unpack_from("<I", buf, 48)[0]
    cmod = 52 + plen + 8
    expect(buf[cmod:cmod + 4] == b"CMOD", "first chunk is not CMOD: %r" % buf[cmod:cmod + 4])
    clen, roff, rsize = struct.unpack_from("<QQQ", buf, cmod + 8)
    dump = cmod + clen
    expect(buf[dump:dump + 4] == b"DUMP", "second chunk is not DUMP")

    def variant(name, data, want_msg):
        path = os.path.join(work, name + ".data")
        with open(path, "wb") as f:
            f.write(data)
        p = run([a.tally, "report", path], check=False)
        lines = [l for l in p.stderr.splitlines() if l]
        expect(p.returncode != 0 and len(lines) == 1 and want_msg in lines[0]
               and "Traceback" not in p.stderr,
               "%s: exit %d, stderr %r (want one line with %r)"
               % (name, p.returncode, p.stderr, want_msg))

    nfns, rec = struct.unpack_from("<II", buf, cmod + 32)
    head = 40 + 24 * nfns + rec

    def patched(off, fmt, *vals, crc=False):
        b = bytearray(buf)
        struct.pack_into(fmt, b, off, *vals)
        if crc:  # past the checksum, to reach the check behind it
            struct.pack_into("<I", b, cmod + 4, zlib.crc32(bytes(b[cmod + 8:cmod + head])))
        return bytes(b)

    variant("region-overlaps-record", patched(cmod + 16, "<Q", 48), "not the rest of the chunk")
    variant("region-size-wrong", patched(cmod + 24, "<Q", rsize + 8),
            "not the rest of the chunk")
    variant("counters-past-region", patched(cmod + 40, "<Q", rsize - 8, crc=True),
            "run past its region")
    variant("counters-misaligned", patched(cmod + 40, "<Q", 4, crc=True), "not aligned")
    variant("visited-past-region", patched(cmod + 48, "<Q", rsize, crc=True), "visited")
    variant("counter-count-wrong", patched(cmod + 56, "<I", 3, crc=True), "values")
    variant("crc", patched(cmod + 4, "<I", 0), "checksum mismatch")
    variant("bad-tag", patched(dump, "<I", 0x58585858), "bad tag")
    variant("chunk-too-short", patched(cmod + 8, "<Q", 8), "too short")
    variant("image-crc", patched(len(buf) - 20, "<B", buf[-20] ^ 1), "checksum mismatch")
    variant("not-continuous", patched(44, "<I", 0), "continuous flag")
    variant("nfns-huge", patched(cmod + 32, "<I", 0xffffffff), "do not fit")
    two = bytes(buf) + bytes(buf[dump:])
    two = bytearray(two)
    struct.pack_into("<I", two, dump + 4, 5)
    variant("session-backwards", bytes(two), "session 0 after session 5")
    # The region past the end of the file: the last chunk (here the only
    # one) was cut short by the writer's death.  Left out, and said.
    cut = os.path.join(work, "cut.data")
    with open(cut, "wb") as f:
        f.write(bytes(buf[:cmod + roff + 8]))
    p = run([a.tally, "report", cut])
    expect("cut short" in p.stderr and "did not finish" in p.stderr
           and "0 modules" in p.stdout, "region past the end: %r %r" % (p.stdout, p.stderr))
    # A good file reads everywhere: merge makes an ordinary file of it.
    merged = os.path.join(work, "merged.data")
    run([a.tally, "merge", "-o", merged, good])
    expect(open(merged, "rb").read(12)[8:12] == struct.pack("<I", 2), "merge: not version 2")
    want_all(a, merged, {"f": (10, 10), "main": (1, 1), "pre": (1, 1), "before_registration": (1, 1)}, "merged")
    run([a.tally, "lcov", "-o", os.path.join(work, "good.info"), good])


def fs_free(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill_to(mnt, free):
    """Fill the file system at MNT (with the file MNT/filler) so that FREE
    bytes stay free; the filler is written, not sparse."""
    filler = os.path.join(mnt, "filler")
    if os.path.exists(filler):
        os.unlink(filler)
    n = fs_free(mnt) - free
    expect(n >= 0, "only %d bytes free on %s, want %d" % (fs_free(mnt), mnt, free))
    with open(filler, "wb") as f:
        f.write(b"\1" * n)
    expect(fs_free(mnt) == free, "filled %s: %d bytes free, want %d"
           % (mnt, fs_free(mnt), free))


@case("full-fs")
def check_full_fs(a, work):
    """A nearly full file system (a 64 KiB tmpfs): the regions are
    allocated (fallocate) before they are mapped, so no store can meet a
    page the file system has no room for (SIGBUS, before main for the
    program's own unit).  Where the region does not fit, one message, and
    the unit counts in its own memory and is written by the exit dump: the
    program keeps its exit status, and if the dump fits the counts are
    exact (they are compared with a run without %c).  With no room at all
    nothing can be written: two messages say so, and the program still
    ends as it would.  A forked child whose own region does not fit falls
    back alike (its counts are lost when it is killed, as without %c), and
    its parent's file stays exact; a dlopen'ed library's second load the
    same.  With room for the file's header only, the file is removed (a
    header alone read as an empty profile).  A file system without fallocate (a seccomp filter) gets the
    region written with zeros: no room is said alike, and with room a
    SIGKILL loses nothing.  Needs root (mount): skipped otherwise."""
    if os.geteuid() != 0:
        raise Skip("not root: cannot mount a small tmpfs")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("mount -t tmpfs failed (%s)" % p.stderr.strip())
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        n = 25
        exe = build(a, os.path.join(work, "full"), [src(a, "kill.c")])
        ref = os.path.join(work, "ref.data")
        run([exe, "normal", str(n)], env={"TALLY_OUTPUT": ref})
        want, _ = report(a, ref)
        want = {fn: c for fn, c in want.items() if c != (0, 0)}
        expect(want.get("f") == (n, n), "reference run: %s" % want)

        # Room for the file's first page (header, and the exit dump), not
        # for the region.
        fill_to(mnt, page)
        data = os.path.join(mnt, "x%c.data")
        p, out, err = run_pid(exe, ["normal", str(n)], {"TALLY_OUTPUT": data})
        expect(p.returncode == 0, "one page free: ended with %d (want 0; -7 is SIGBUS)\n%s"
               % (p.returncode, err))
        expect(out.strip() != "", "one page free: no output")
        expect(err.count("tally: ") == 1 and "cannot allocate its region" in err
               and "no space left on device" in err and "when the program dumps" in err,
               "one page free: want one message naming the failed allocation: %r" % err)
        want_all(a, data.replace("%c", ""), want, "one page free: counts of the exit dump",
                 finished=True)

        # Room for the header, not for the region nor for the exit dump (a
        # unit of 300 functions): the file would hold its header only, which
        # readers took for an empty profile of a process that did not
        # finish; it is removed, and said so.
        os.unlink(data.replace("%c", ""))
        big_c = write_file(os.path.join(work, "big.c"), "".join(
            "int function_with_a_long_name_%d (int x) { return x + %d; }\n" % (i, i)
            for i in range(300)) + "int main (void) { return function_with_a_long_name_7 (0) != 7; }\n")
        big = build(a, os.path.join(work, "big"), [big_c], opt="-O0")
        fill_to(mnt, page)
        p, _, err = run_pid(big, [], {"TALLY_OUTPUT": data})
        expect(p.returncode == 0, "header only: ended with %d\n%s" % (p.returncode, err))
        expect(" its region of " in err and "cannot write " in err
               and "removed: it held only its header" in err
               and not os.path.exists(data.replace("%c", "")),
               "header only: want the file removed, said so; files %s, messages %r"
               % (os.listdir(mnt), err))

        # A file system without fallocate (a seccomp filter makes it fail
        # with EOPNOTSUPP): the region is written with zeros instead, which
        # finds no room just the same, and said so.
        fill_to(mnt, page)
        nofa = os.path.join(work, "no-fallocate")
        run([a.cc, "-O2", os.path.join(a.srcdir, "faults", "no-fallocate.c"), "-o", nofa])
        p, out2, err = run_pid(nofa, [exe, "normal", str(n)], {"TALLY_OUTPUT": data})
        if p.returncode == 77:
            print("no seccomp filter (%s): the fallocate fallback is not checked" % err.strip())
        else:
            expect(p.returncode == 0 and out2 == out,
                   "no fallocate, one page free: ended with %d (-7 is SIGBUS)\n%s"
                   % (p.returncode, err))
            expect(err.count("tally: ") == 1 and "cannot allocate its region" in err
                   and "no space left on device" in err,
                   "no fallocate, one page free: want one message: %r" % err)
            want_all(a, data.replace("%c", ""), want, "no fallocate, one page free",
                     finished=True)
            # With room, the zeros are the region: SIGKILL loses nothing.
            os.unlink(data.replace("%c", ""))
            os.unlink(os.path.join(mnt, "filler"))
            p = start(nofa, [exe, "wait", str(n)], {"TALLY_OUTPUT": data})
            kill_after_line(p, "no fallocate, room")
            want_all(a, data.replace("%c", ""), {"f": (n, n), "main": (1, 0),
                                                  "wait_for_kill": (1, 0), "pre": (1, 1),
                                                  "before_registration": (1, 1)},
                     "no fallocate, room: killed", finished=False)

        # No room at all: nothing can be written, and the program goes on.
        if os.path.exists(data.replace("%c", "")):
            os.unlink(data.replace("%c", ""))
        fill_to(mnt, 0)
        p, out2, err = run_pid(exe, ["normal", str(n)], {"TALLY_OUTPUT": data})
        expect(p.returncode == 0 and out2 == out,
               "no room: ended with %d, output %r\n%s" % (p.returncode, out2, err))
        expect("for continuous output: no space left on device" in err
               and "no data written" in err,
               "no room: want the failed creation and the lost dump said: %r" % err)

        # fork: the parent's file fits, the child's region does not.
        os.unlink(os.path.join(mnt, "filler"))
        for f in os.listdir(mnt):
            os.unlink(os.path.join(mnt, f))
        fexe = build(a, os.path.join(work, "full-fork"), [fork_src(a)])
        data = os.path.join(mnt, "f.%p%c.data")
        p, out, err = run_pid(fexe, ["kill"], {"TALLY_OUTPUT": data})
        expect(p.returncode == -signal.SIGKILL and err == "",
               "fork with room: ended with %d, %r" % (p.returncode, err))
        used = os.stat(data.replace("%p", str(p.pid)).replace("%c", "")).st_blocks * 512
        for f in os.listdir(mnt):
            os.unlink(os.path.join(mnt, f))
        fill_to(mnt, used + page)
        p, out, err = run_pid(fexe, ["kill"], {"TALLY_OUTPUT": data})
        expect(p.returncode == -signal.SIGKILL,
               "fork, no room for the child's region: the parent ended with %d (want "
               "SIGKILL: 1 means its child died of SIGBUS)\n%s" % (p.returncode, err))
        expect("forked child: cannot give it a continuous file of its own (no space left "
               "on device" in err, "fork: no message for the child: %r" % err)
        want_all(a, data.replace("%p", str(p.pid)).replace("%c", ""),
                 {"f": (7, 7), "main": (1, 0)}, "fork, no room for the child: parent",
                 finished=False)
        # The killed child's file: its header, without the chunk that found
        # no room (its counts died with it, as without %c).
        child = data.replace("%p", out.split()[0]).replace("%c", "")
        got, err = report(a, child)
        expect(not any(got.values()) and "cut short" not in err,
               "fork: the child's file %s: %s %r" % (child, got, err))

        # dlopen: every region fits but the library's second load.
        for f in os.listdir(mnt):
            os.unlink(os.path.join(mnt, f))
        lib = os.path.join(work, "libfull.so")
        run([a.cc, "-O2", "-fPIC", "-shared", "-fplugin=" + a.plugin, MAPPED,
             src(a, "dl-lib.c"), "-o", lib, a.runtime])
        dexe = build(a, os.path.join(work, "full-dl"), [src(a, "dl.c")], link=["-ldl"])
        data = os.path.join(mnt, "d%c.data")
        p = run([dexe, lib], env={"TALLY_OUTPUT": data}, check=False)
        expect(p.returncode == -signal.SIGKILL and p.stderr == "",
               "dlopen with room: ended with %d, %r" % (p.returncode, p.stderr))
        used = os.stat(data.replace("%c", "")).st_blocks * 512
        os.unlink(data.replace("%c", ""))
        fill_to(mnt, used - page)
        p = run([dexe, lib], env={"TALLY_OUTPUT": data}, check=False)
        expect(p.returncode == -signal.SIGKILL,
               "dlopen, no room for the second load: ended with %d (-7 is SIGBUS)\n%s"
               % (p.returncode, p.stderr))
        expect(p.stderr.count("tally: ") == 1 and "cannot allocate its region" in p.stderr,
               "dlopen: want one message: %r" % p.stderr)
        want_all(a, data.replace("%c", ""), {"lib_f": (3, 3), "calls": (2, 2), "main": (1, 0)},
                 "dlopen, no room for the second load (its 4 calls are lost with the kill)",
                 finished=False)
    finally:
        subprocess.run(["umount", mnt])


if __name__ == "__main__":
    sys.exit(main("tally-continuous-"))
