#!/usr/bin/env python3
"""Checks other than counting: plugin diagnostics, bad data files, the
runtime API, TALLY_OUTPUT, and the runtime under ASan/UBSan.

Usage: run-checks.py CHECK --plugin P --runtime RT --runtime-asan RTA
                     --tally T --tally-asan TA --include DIR --srcdir DIR
Exit status: 0 pass, 1 fail, 77 skip.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from fractions import Fraction

from checklib import Failure, Skip, expect, run, run_check


def plain_quotes(text):
    return text.replace("\u2018", "'").replace("\u2019", "'")


def build_abc(a, work, runtime=None, extra=()):
    exe = os.path.join(work, "abc")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, os.path.join(a.srcdir, "progs", "s-abc.c"),
         "-o", exe, *extra, runtime or a.runtime])
    return exe


def check_plugin_errors(a, work):
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    cases = [
        (["-fplugin-arg-tally-colour=red"],
         r"unknown option '-fplugin-arg-tally-colour'; accepted options: hooks, blocks, placement, at, update, counters, measure, paths, exit, filter, select, verbose, help"),
        (["-fplugin-arg-tally-hooks=fast"],
         r"invalid value 'fast' for '-fplugin-arg-tally-hooks'; accepted values: inline, call"),
        (["-fplugin-arg-tally-at"],
         r"'-fplugin-arg-tally-at' needs a value; accepted values: late, early"),
        (["-fplugin-arg-tally-update=relaxed"],
         r"invalid value 'relaxed' for '-fplugin-arg-tally-update'; accepted values: single, atomic, tls"),
        (["-fplugin-arg-tally-blocks=all"],
         r"invalid value 'all' for '-fplugin-arg-tally-blocks'; accepted values: none, count, visited"),
        (["-fplugin-arg-tally-placement=edges"],
         r"invalid value 'edges' for '-fplugin-arg-tally-placement'; accepted values: tree, block"),
        (["-fplugin-arg-tally-hooks=user:u", "-fplugin-arg-tally-blocks=count"],
         r"'-fplugin-arg-tally-blocks' cannot be combined with '-fplugin-arg-tally-hooks=user:u'"),
        (["-fplugin-arg-tally-help=yes"], r"'-fplugin-arg-tally-help' takes no value"),
        (["-flto"], r"does not support '-flto'"),
        # An option given twice: which one was meant is not known.
        (["-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-hooks=inline"],
         r"'-fplugin-arg-tally-hooks' given twice \('hooks=call' and 'hooks=inline'\); give it once"),
        (["-fplugin-arg-tally-blocks=count", "-fplugin-arg-tally-at=late", "-fplugin-arg-tally-blocks=count"],
         r"'-fplugin-arg-tally-blocks' given twice \('blocks=count' and 'blocks=count'\)"),
        (["-fplugin-arg-tally-verbose", "-fplugin-arg-tally-verbose"],
         r"'-fplugin-arg-tally-verbose' given twice \('verbose' and 'verbose'\)"),
        (["-fplugin-arg-tally-filter=" + os.path.dirname(src)],
         r"'-fplugin-arg-tally-filter=.*progs': cannot read the filter file: it is a directory"),
    ]
    for flags, pattern in cases:
        p = run([a.cc, "-c", "-fplugin=" + a.plugin, *flags, src, "-o",
                 os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
        expect(p.returncode != 0, "%s: compile succeeded" % flags)
        text = p.stderr.replace("\u2018", "'").replace("\u2019", "'")
        expect(re.search(pattern, text), "%s: expected /%s/ in:\n%s" % (flags, pattern, text))
        expect("internal compiler error" not in text, "%s: ICE:\n%s" % (flags, text))
    p = run([a.cc, "-c", "-fplugin=" + a.plugin, "-fplugin-arg-tally-help", src,
             "-o", os.path.join(work, "x.o")])
    for opt in ("hooks=inline|call|user:PREFIX|none", "blocks=none|count|visited",
                "placement=tree|block", "at=late|early", "update=single|atomic|tls",
                "measure=count|cycles", "help"):
        expect(opt in p.stderr, "help text lacks %s:\n%s" % (opt, p.stderr))


def check_version_mismatch(a, work):
    """The plugin loaded into another GCC says so plainly (the loader runs
    no GCC code before the check).  Needs a second GCC: gcc-11 on bookworm,
    which ./dev test installs."""
    other = None
    for cand in ("gcc-11", "gcc-13", "gcc-12"):
        path = shutil.which(cand)
        if path and run([path, "-dumpfullversion"]).stdout.strip() != \
                run([a.cc, "-dumpfullversion"]).stdout.strip():
            other = path
            break
    if not other:
        print("no second GCC version installed: skipped")
        raise Skip()
    src = os.path.join(a.srcdir, "progs", "s-abc.c")
    p = run([other, "-c", "-fplugin=" + a.plugin, src, "-o", os.path.join(work, "x.o")],
            check=False)
    expect(p.returncode != 0, "the plugin loaded into %s" % other)
    want = run([other, "-dumpfullversion"]).stdout.strip()
    expect(re.search(r"tally: error: -fplugin=tally was built for GCC [0-9.]+ .* but is "
                     r"loaded into GCC %s" % re.escape(want), p.stderr),
           "unclear version-mismatch message:\n%s" % p.stderr)
    expect("undefined symbol" not in p.stderr, "dynamic linker error:\n%s" % p.stderr)


def valid_file(a, work):
    exe = build_abc(a, work)
    data = os.path.join(work, "good.data")
    run([exe], env={"TALLY_OUTPUT": data})
    return open(data, "rb").read()


def refix(d):
    """Recompute the CRC so only the deliberate damage is seen."""
    body = d[:-16]
    return body + d[-16:-12] + struct.pack("<I", zlib.crc32(body)) + d[-8:]


def check_bad_files(a, work):
    good = valid_file(a, work)
    # The runtime's CRC is the IEEE CRC-32 zlib computes.
    expect(struct.unpack("<I", good[-12:-8])[0] == zlib.crc32(good[:-16]),
           "the data file's CRC-32 is not zlib's crc32 of its bytes")
    version = bytearray(good)
    version[8:12] = struct.pack("<I", 99)
    endian = bytearray(good)
    endian[12:16] = struct.pack(">I", 0x01020304)
    huge = bytearray(good)
    huge[40:44] = struct.pack("<I", 0xFFFFFFF0)  # module count
    cases = {
        "empty": (b"", r"empty|zero|too short"),
        "truncated": (good[: len(good) // 2], r"truncat|size"),
        "flipped": (good[:60] + bytes([good[60] ^ 0x40]) + good[61:], r"checksum|corrupt"),
        "magic": (b"NOTTALLY" + good[8:], r"not a tally data file"),
        "version": (refix(bytes(version)), r"version 99"),
        "endian": (refix(bytes(endian)), r"byte order|endian"),
        "trailing": (good + b"junk", r"size|trailing"),
        "huge-count": (refix(bytes(huge)), r"module|corrupt|count"),
    }
    for tool in (a.tally, a.tally_asan):
        for name, (content, pattern) in cases.items():
            path = os.path.join(work, name + ".data")
            with open(path, "wb") as f:
                f.write(content)
            p = run([tool, "report", path], check=False)
            expect(p.returncode == 1, "%s on %s: exit %d (want 1)\n%s"
                   % (os.path.basename(tool), name, p.returncode, p.stderr))
            expect(path in p.stderr and re.search(pattern, p.stderr, re.I),
                   "%s: message should name the file and match /%s/:\n%s"
                   % (name, pattern, p.stderr))
            expect(p.stdout == "", "%s: partial report printed" % name)
        p = run([tool, "report", os.path.join(work, "missing.data")], check=False)
        expect(p.returncode == 1 and "missing.data" in p.stderr,
               "missing file: %d %s" % (p.returncode, p.stderr))
    # A good file beside a bad one: still an error, no partial report.
    p = run([a.tally, "report", os.path.join(work, "truncated.data")], check=False)
    expect(p.returncode == 1, "bad file accepted")


def block_maps(d):
    """[(offset, size)] of every non-empty block map in data file D (module
    records as doc/data-format.md lays them out)."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    nmod = u32(40)
    pos = 48 + 4 + u32(48)  # the program name
    maps = []
    for _ in range(nmod):
        nfns = u32(pos + 20)
        pos += 24
        for _ in range(2):  # source, directory
            pos += 4 + u32(pos)
        for _ in range(nfns):
            for _ in range(4):  # name, symbol, origin, file
                pos += 4 + u32(pos)
            nc = u32(pos + 8)
            pos += 16 + 8 * nc
            size = u32(pos)
            if size:
                maps.append((pos + 4, size))
            pos += 4 + size
    return maps


def merge_target(exe, work, name):
    """(TALLY_OUTPUT pattern with %m in a directory of its own, the file it
    names for EXE), after one run of EXE that wrote it."""
    d = os.path.join(work, name)
    os.mkdir(d)
    pattern = os.path.join(d, "%m.data")
    run([exe], env={"TALLY_OUTPUT": pattern})
    names = [f for f in os.listdir(d) if f.endswith(".data")]
    expect(len(names) == 1, "%%m wrote %s" % names)
    return pattern, os.path.join(d, names[0])


def readable(a, path):
    """(whether tally report reads PATH, its stderr)."""
    p = run([a.tally, "report", path], check=False, errors="replace")
    return p.returncode == 0, p.stderr


def check_bad_maps(a, work):
    """A block map damaged under a valid CRC (a disk error, another program)
    is refused by tally report, by tally merge (which would otherwise copy
    it into an output no tool can read again) and by the runtime's %m merge
    (which moves the file aside to PATH.bad, writes this run's counts and
    keeps the program's exit status).  Then a seeded loop of mutated block
    maps (and, every third pair, bytes anywhere in the records): every
    merge either refuses or writes a file tally report reads."""
    import random
    exe = build_abc(a, work, extra=["-fplugin-arg-tally-blocks=count"])
    good_path = os.path.join(work, "good.data")
    run([exe], env={"TALLY_OUTPUT": good_path})
    good = open(good_path, "rb").read()
    maps = block_maps(good)
    expect(len(maps) >= 4, "only %d block maps in %s" % (len(maps), good_path))
    one = report_calls(a, good_path)
    expect(one.get("main") == (1, 1), "one run: main %s, want (1, 1)" % (one.get("main"),))
    off, size = maps[0]
    damaged = bytearray(good)
    damaged[off:off + 4] = struct.pack("<I", 7)  # map version 7
    damaged = refix(bytes(damaged))
    bad_path = os.path.join(work, "bad.data")
    open(bad_path, "wb").write(damaged)
    ok, err = readable(a, bad_path)
    expect(not ok and "bad block map" in err, "report of a damaged map: %r" % err)
    # tally merge refuses, writes nothing.
    out = os.path.join(work, "merged.data")
    p = run([a.tally, "merge", "-o", out, good_path, bad_path], check=False)
    expect(p.returncode != 0 and "bad block map" in p.stderr and bad_path in p.stderr,
           "tally merge of a damaged map: exit %d, %r" % (p.returncode, p.stderr))
    expect(not os.path.exists(out), "tally merge wrote %s" % out)
    # The runtime's %m: moved aside, this run's counts written, exit 0.
    pattern, target = merge_target(exe, work, "m")
    open(target, "wb").write(damaged)
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    expect(p.returncode == 0 and p.stdout.strip() == "100",
           "%%m over a damaged map: exit %d, output %r" % (p.returncode, p.stdout))
    expect("corrupt block map" in p.stderr and "moved aside to %s.bad" % target in p.stderr,
           "%%m over a damaged map: message %r" % p.stderr)
    expect(open(target + ".bad", "rb").read() == damaged, "the damaged file was not kept")
    ok, err = readable(a, target)
    expect(ok, "%%m wrote an unreadable file: %s" % err)
    expect(report_calls(a, target) == one, "%%m after moving aside: %s, want %s"
           % (report_calls(a, target), one))
    # And a second run merges into the new file: 2 runs.
    run([exe], env={"TALLY_OUTPUT": pattern})
    expect(report_calls(a, target).get("main") == (2, 2), "second %m run did not merge")

    rng = random.Random(13)
    refused = {"merge": 0, "runtime": 0}
    pairs = 300
    for i in range(pairs):
        d = bytearray(good)
        off, size = rng.choice(maps)
        if i % 3 == 2:  # anywhere in the records: strings, counts, sizes
            off, size = 40, len(good) - 16 - 40
        for _ in range(rng.randint(1, 3)):
            k = off + rng.randrange(size)
            if rng.random() < 0.5:
                d[k] ^= 1 << rng.randrange(8)
            else:
                d[k] = rng.choice((0, 1, 2, 0xff, rng.randrange(256)))
        d = refix(bytes(d))
        mpath = os.path.join(work, "mut.data")
        open(mpath, "wb").write(d)
        if os.path.exists(out):
            os.unlink(out)
        p = run([a.tally, "merge", "-o", out, good_path, mpath], check=False,
                errors="replace")
        if p.returncode != 0:
            refused["merge"] += 1
            expect(not os.path.exists(out), "pair %d: tally merge refused but wrote %s" % (i, out))
        else:
            ok, err = readable(a, out)
            expect(ok, "pair %d: tally merge wrote a file tally report cannot read: %s"
                   % (i, err))
        for f in (target, target + ".bad"):
            if os.path.exists(f):
                os.unlink(f)
        open(target, "wb").write(d)
        p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False, errors="replace")
        expect(p.returncode == 0, "pair %d: the program exited %d under %%m" % (i, p.returncode))
        if os.path.exists(target + ".bad"):
            refused["runtime"] += 1
        ok, err = readable(a, target)
        expect(ok, "pair %d: the runtime's %%m wrote a file tally report cannot read: %s"
               % (i, err))
    print("%d mutated pairs: tally merge refused %d, the runtime moved aside %d"
          % (pairs, refused["merge"], refused["runtime"]))


def check_merge_shrink(a, work):
    """The file a %m merge reads is truncated meanwhile by a process that
    ignores the advisory lock (an LD_PRELOAD shim truncates it to half, in whole pages, at the
    first mmap made while the merge holds it open: deterministically between
    its fstat and its read).  The merging program keeps its exit status (no
    SIGBUS), the file is moved aside to PATH.bad with a message, and the
    new file holds this run's counts exactly."""
    exe = build_abc(a, work)
    shim = os.path.join(work, "shrink-shim.so")
    run([a.cc, "-O2", "-fPIC", "-shared", os.path.join(a.srcdir, "faults", "shrink-shim.c"),
         "-o", shim])
    pattern, target = merge_target(exe, work, "s")
    for _ in range(2):
        run([exe], env={"TALLY_OUTPUT": pattern})
    expect(report_calls(a, target).get("main") == (3, 3), "3 merged runs: %s"
           % report_calls(a, target))
    p = run([exe], env={"TALLY_OUTPUT": pattern, "LD_PRELOAD": shim,
                        "SHRINK_VICTIM": target}, check=False)
    expect("shim: truncated" in p.stderr, "the shim did not truncate: %r" % p.stderr)
    expect(p.returncode == 0 and p.stdout.strip() == "100",
           "the merging program ended with %d (want 0), output %r, stderr %r"
           % (p.returncode, p.stdout, p.stderr))
    expect("changed size while it was read" in p.stderr
           and "moved aside to %s.bad" % target in p.stderr,
           "no clear message: %r" % p.stderr)
    expect(os.path.exists(target + ".bad"), "the changed file was not kept as .bad")
    expect(report_calls(a, target).get("main") == (1, 1),
           "after the move: %s, want this run's main (1, 1)" % report_calls(a, target))


def report_calls(a, path):
    out = run([a.tally, "report", "--csv", path]).stdout.splitlines()
    calls = {}
    for line in out[1:]:
        f = line.split(",")
        calls[f[2]] = (int(f[0]), int(f[1]))
    return calls


def check_api(a, work):
    exe = os.path.join(work, "api")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-I", a.include,
         os.path.join(a.srcdir, "api", "dump-reset.c"), "-o", exe, a.runtime])
    mid, final = os.path.join(work, "mid.data"), os.path.join(work, "final.data")
    p = run([exe, mid], env={"TALLY_OUTPUT": final})
    expect(p.stdout.strip() == "10", "program output %r" % p.stdout)
    m, f = report_calls(a, mid), report_calls(a, final)
    expect(m.get("step") == (7, 7), "mid-run dump: step %s, want (7, 7)" % (m.get("step"),))
    expect(m.get("main") == (1, 0), "mid-run dump: main %s, want (1, 0)" % (m.get("main"),))
    expect(f.get("step") == (3, 3), "after reset: step %s, want (3, 3)" % (f.get("step"),))
    expect(f.get("main") == (0, 1), "after reset: main %s, want (0, 1)" % (f.get("main"),))


def check_output_path(a, work):
    exe = build_abc(a, work)
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "run-%p-%h-%%.data")})
    files = [f for f in os.listdir(work) if f.startswith("run-")]
    host = socket.gethostname()
    expect(len(files) == 1 and re.fullmatch(r"run-\d+-%s-%%\.data" % re.escape(host), files[0]),
           "pattern expansion gave %s" % files)
    # Default name in the working directory.
    sub = os.path.join(work, "cwd")
    os.mkdir(sub)
    subprocess.run([exe], cwd=sub, stdout=subprocess.DEVNULL, check=True,
                   env={k: v for k, v in os.environ.items() if k != "TALLY_OUTPUT"})
    names = os.listdir(sub)
    expect(len(names) == 1 and re.fullmatch(r"tally\.\d+\.data", names[0]),
           "default output name: %s" % names)
    # An unknown pattern is kept and reported.
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "x-%q.data")})
    expect("unknown pattern '%q'" in p.stderr, "no warning for %%q: %r" % p.stderr)
    expect(os.path.exists(os.path.join(work, "x-%q.data")), "x-%q.data not written")
    # An unwritable place: a clear message, the program's exit status kept.
    p = run([exe], env={"TALLY_OUTPUT": os.path.join(work, "no", "such", "dir.data")},
            check=False)
    expect(p.returncode == 0, "exit status changed to %d" % p.returncode)
    expect("cannot create" in p.stderr and "no such file or directory" in p.stderr,
           "message: %r" % p.stderr)
    expect(p.stdout.strip() == "100", "output %r" % p.stdout)
    # A path that is not a regular file is written in place, never replaced
    # by a file: a FIFO (read while the program writes it) and, as root, a
    # character device like /dev/null.
    fifo = os.path.join(work, "pipe")
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", open(fifo, "rb").read()))
    reader.start()
    p = run([exe], env={"TALLY_OUTPUT": fifo})
    reader.join(30)
    expect(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced")
    copy = os.path.join(work, "from-pipe.data")
    with open(copy, "wb") as f:
        f.write(got.get("data", b""))
    expect(re.search(r"^1,1,main,", run([a.tally, "report", "--csv", copy]).stdout, re.M),
           "the data read from the FIFO is not a valid report")
    dev = os.path.join(work, "null")
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        dev = None
    if dev:
        run([exe], env={"TALLY_OUTPUT": dev})
        expect(stat.S_ISCHR(os.stat(dev).st_mode), "the character device was replaced")
    # A message about a path longer than the message buffer (512 bytes)
    # keeps its reason: the middle of the path is left out instead.
    long = os.path.join(work, "no", "such", "x" * 600 + ".data")
    p = run([exe], env={"TALLY_OUTPUT": long}, check=False)
    expect(p.returncode == 0 and p.stdout.strip() == "100", "long path: %r" % p)
    expect(re.search(r"^tally: cannot create %s.*\.\.\..*x\.data\.tmp\.[0-9a-f]+: no such "
                     r"file or directory \(errno 2\); no data written$"
                     % re.escape(work), p.stderr, re.M),
           "the message about a 600-byte path lost its reason:\n%s" % p.stderr)
    expect(all(len(line) < 512 for line in p.stderr.splitlines()), "over-long line")


def report_main(a, data):
    """main's calls in DATA, None if it cannot be read."""
    p = run([a.tally, "report", "--csv", data], check=False)
    m = re.search(r"^(\d+),(\d+),main,", p.stdout, re.M)
    return int(m.group(1)) if p.returncode == 0 and m else None


def planted_run(exe, link_to, name_fmt, env, cwd):
    """Run EXE from a shell that first plants a symbolic link to LINK_TO
    named NAME_FMT % its own pid, then execs EXE (exec keeps the pid): the
    link waits at the name the runtime of today's main would create."""
    script = 'ln -s "$1" "$(printf "$2" $$)" && exec "$3"'
    return run(["sh", "-c", script, "sh", link_to, name_fmt, exe], env=env, cwd=cwd,
               check=False)


def check_output_safety(a, work):
    """Every name the runtime creates is created exclusively, without
    following a link, never world-writable; a target that is a link, a
    directory, or another user's file or FIFO is refused with a message;
    a %m merge moves another user's file aside instead of trusting it
    (doc/guarantees.md, Security).  The program's own exit status and
    output are kept throughout."""
    exe = build_abc(a, work)
    victim = os.path.join(work, "victim")
    problems = []

    def soft(cond, msg):
        """Each problem is listed, not only the first."""
        if not cond:
            problems.append(msg)

    def plant_victim():
        with open(victim, "w") as f:
            f.write("secret\n")
        os.chmod(victim, 0o600)

    def victim_intact(what):
        with open(victim, "rb") as f:
            soft(f.read() == b"secret\n", "%s: the link's target was written" % what)

    def ok_run(p, what):
        soft(p.returncode == 0 and p.stdout.strip() == "100",
               "%s: exit %d, output %r\n%s" % (what, p.returncode, p.stdout, p.stderr))

    # The target itself a link: refused, the link and its target unchanged.
    plant_victim()
    out = os.path.join(work, "out.data")
    os.symlink(victim, out)
    p = run([exe], env={"TALLY_OUTPUT": out}, check=False)
    ok_run(p, "target link")
    victim_intact("target link")
    soft(os.path.islink(out), "the link at the target was replaced")
    soft("cannot write %s: it is a symbolic link (not followed); no data written" % out
           in p.stderr, "no message for a target link: %r" % p.stderr)
    os.unlink(out)
    # A link planted at the temporary name of the coming pid.
    p = planted_run(exe, victim, out + ".tmp.%d", {"TALLY_OUTPUT": out}, work)
    ok_run(p, "planted temporary")
    victim_intact("planted temporary")
    soft(stat.S_ISREG(os.lstat(out).st_mode) and report_main(a, out) == 1,
           "planted temporary: the data file is not a regular file with the counts")
    # Modes: the umask is honoured, nothing is world- or group-writable,
    # the temporary is gone.
    for umask, want in ((0o022, 0o644), (0o077, 0o600), (0o000, 0o644)):
        os.unlink(out)
        old = os.umask(umask)
        try:
            run([exe], env={"TALLY_OUTPUT": out})
        finally:
            os.umask(old)
        mode = stat.S_IMODE(os.stat(out).st_mode)
        soft(mode == want, "umask %03o: mode %03o, want %03o" % (umask, mode, want))
    soft(not [f for f in os.listdir(work) if ".tmp." in f and not os.path.islink(
        os.path.join(work, f))], "a temporary file was left: %s" % os.listdir(work))

    # Targets that are not regular files, or another user's.
    sub = os.path.join(work, "dir.data")
    os.mkdir(sub)
    p = run([exe], env={"TALLY_OUTPUT": sub}, check=False)
    ok_run(p, "directory target")
    soft("cannot write %s: it is a directory" % sub in p.stderr, "directory: %r" % p.stderr)
    soft(os.listdir(sub) == [], "something was written into the directory")
    root = os.geteuid() == 0
    if root:
        fifo = os.path.join(work, "their-pipe")
        os.mkfifo(fifo)
        os.chown(fifo, 65534, 65534)
        p = run([exe], env={"TALLY_OUTPUT": fifo}, check=False, timeout=60)
        ok_run(p, "another user's FIFO")
        soft("cannot write %s: it is owned by another user" % fifo in p.stderr,
               "another user's FIFO: %r" % p.stderr)
        theirs = os.path.join(work, "theirs.data")
        with open(theirs, "w") as f:
            f.write("theirs\n")
        os.chown(theirs, 65534, 65534)
        p = run([exe], env={"TALLY_OUTPUT": theirs}, check=False)
        ok_run(p, "another user's file")
        soft("cannot write %s: it is owned by another user" % theirs in p.stderr,
               "another user's file: %r" % p.stderr)
        soft(open(theirs, "rb").read() == b"theirs\n", "another user's file was replaced")

    # %m: the lock file and the merge target.
    mdir = os.path.join(work, "m")
    os.mkdir(mdir)
    pattern = os.path.join(mdir, "%m.data")
    run([exe], env={"TALLY_OUTPUT": pattern})
    merged = [os.path.join(mdir, f) for f in os.listdir(mdir) if f.endswith(".data")]
    soft(len(merged) == 1, "%%m wrote %s" % os.listdir(mdir))
    merged = merged[0]
    lock = merged + ".lock"
    soft(stat.S_IMODE(os.stat(lock).st_mode) == 0o600,
           "lock file mode %03o, want 600" % stat.S_IMODE(os.stat(lock).st_mode))
    os.unlink(lock)
    gone = os.path.join(work, "created-through-lock")
    os.symlink(gone, lock)
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    ok_run(p, "lock link")
    soft(not os.path.exists(gone), "the lock file's link was followed")
    soft("cannot lock %s: it is a symbolic link" % lock in p.stderr, "lock link: %r" % p.stderr)
    soft(report_main(a, merged) == 1, "written although the lock was refused")
    os.unlink(lock)
    keep = os.path.join(work, "keep.data")
    os.rename(merged, keep)
    os.symlink(keep, merged)
    p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
    ok_run(p, "merge target link")
    soft(os.path.islink(merged), "the merge target's link was replaced")
    soft("cannot merge into %s: it is a symbolic link" % merged in p.stderr,
           "merge target link: %r" % p.stderr)
    soft(report_main(a, keep) == 1, "merged through a link")
    os.unlink(merged)
    os.rename(keep, merged)
    p = run([exe], env={"TALLY_OUTPUT": pattern})
    soft(report_main(a, merged) == 2, "own file not merged")
    if root:
        # Another user's file is never merged: moved aside, a fresh file.
        os.chown(merged, 65534, 65534)
        before = open(merged, "rb").read()
        p = run([exe], env={"TALLY_OUTPUT": pattern}, check=False)
        ok_run(p, "another user's merge target")
        aside = merged + ".other-owner"
        soft("%s: owned by another user (uid 65534), not trusted; not merged, moved aside "
               "to %s" % (merged, aside) in p.stderr, "message: %r" % p.stderr)
        soft(os.path.exists(aside) and open(aside, "rb").read() == before
               and os.stat(aside).st_uid == 65534, "not moved aside unchanged")
        soft(report_main(a, merged) == 1 and os.stat(merged).st_uid == 0,
               "another user's counts were merged")

    # %c: a link at the continuous file and at its coming temporary.
    cexe = os.path.join(work, "abc-mapped")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-counters=mapped",
         os.path.join(a.srcdir, "progs", "s-abc.c"), "-o", cexe, a.runtime])
    cont = os.path.join(work, "cont.data")
    plant_victim()
    p = planted_run(cexe, victim, cont + ".tmp.%d", {"TALLY_OUTPUT": cont + "%c"}, work)
    ok_run(p, "%c planted temporary")
    victim_intact("%c planted temporary")
    soft(report_main(a, cont) == 1, "%c: no valid file")
    os.unlink(cont)
    os.symlink(victim, cont)
    p = run([cexe], env={"TALLY_OUTPUT": cont + "%c"}, check=False)
    ok_run(p, "%c target link")
    victim_intact("%c target link")
    soft(os.path.islink(cont) and "it is a symbolic link" in p.stderr,
           "%%c target link: %r" % p.stderr)
    if not root:
        print("not root: another user's files and FIFOs not tried")
    expect(not problems, "\n".join(problems))


def check_secure_output(a, work):
    """A setuid program (AT_SECURE) reads no TALLY_* variable: the
    invoking user cannot point its output at a file only the program's
    owner may write.  It writes the default name only, into the current
    directory if the invoking user owns it, created exclusively, mode
    0600; never replacing a file, never following a link."""
    if os.geteuid() != 0:
        print("needs root to make a setuid-root program: skipped")
        raise Skip()
    setpriv = shutil.which("setpriv")
    if not setpriv:
        print("no setpriv (util-linux): skipped")
        raise Skip()
    os.chmod(work, 0o755)
    src = os.path.join(work, "suid.c")
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <sys/auxv.h>\n#include <unistd.h>\n"
                "__attribute__ ((noinline)) int f (int x) { return x + 1; }\n"
                "int main (void) { int s = 0; for (int i = 0; i < 5; i++) s = f (s);\n"
                "  printf (\"%lu %d %d\\n\", getauxval (AT_SECURE), (int) geteuid (), s);\n"
                "  return 0; }\n")
    exe = os.path.join(work, "suid")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, src, "-o", exe, a.runtime])
    os.chown(exe, 0, 0)
    os.chmod(exe, 0o4755)
    victim = os.path.join(work, "victim")
    with open(victim, "w") as f:
        f.write("secret\n")
    os.chmod(victim, 0o600)
    home = os.path.join(work, "home")
    os.mkdir(home)
    os.chown(home, 65534, 65534)
    as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {"TALLY_OUTPUT": victim, "TALLY_DUMP_ON": "SIGUSR1", "TALLY_VERBOSE": "1",
           "TALLY_PAPI_EVENTS": "PAPI_TOT_INS", "TALLY_UNWIND": "1"}
    p = run(as_nobody + [exe], env=env, cwd=home, check=False)
    if p.stdout.split()[:2] != ["1", "0"]:
        print("the setuid bit took no effect (a nosuid mount?): %r: skipped" % p.stdout)
        raise Skip()
    expect(p.returncode == 0 and p.stdout.split()[2] == "5",
           "exit %d, output %r\n%s" % (p.returncode, p.stdout, p.stderr))
    with open(victim, "rb") as f:
        expect(f.read() == b"secret\n", "TALLY_OUTPUT was honoured by a setuid program")
    expect("wrote" not in p.stderr, "TALLY_VERBOSE was honoured: %r" % p.stderr)
    files = os.listdir(home)
    expect(len(files) == 1 and re.fullmatch(r"tally\..+\.data", files[0]),
           "default output: %s\n%s" % (files, p.stderr))
    data = os.path.join(home, files[0])
    st = os.stat(data)
    expect(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600,
           "the file is %o, uid %d (want 600, root's)" % (stat.S_IMODE(st.st_mode), st.st_uid))
    out = run([a.tally, "report", "--csv", data]).stdout
    expect(re.search(r"^5,5,f,", out, re.M), "f's calls:\n%s" % out)
    os.unlink(data)
    # A link planted at the default name for the coming pid: not followed,
    # not replaced.
    p = run(as_nobody + ["sh", "-c", 'ln -s "$1" tally.$$.data && exec "$2"', "sh", victim,
                         exe], env=env, cwd=home, check=False)
    expect(p.returncode == 0 and p.stdout.split()[:1] == ["1"], "exit %d" % p.returncode)
    with open(victim, "rb") as f:
        expect(f.read() == b"secret\n", "a planted link was followed")
    expect([f for f in os.listdir(home) if os.path.islink(os.path.join(home, f))],
           "the planted link was replaced: %s" % os.listdir(home))
    # A directory the user does not own (a shared /tmp): nothing written.
    shared = os.path.join(work, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    p = run(as_nobody + [exe], env=env, cwd=shared, check=False)
    expect(p.returncode == 0, "exit %d" % p.returncode)
    expect(os.listdir(shared) == [], "written into a directory of another user: %s"
           % os.listdir(shared))
    expect("owned by the user who runs it" in p.stderr, "message: %r" % p.stderr)


def check_tool_output(a, work):
    """`-o OUT` of tally lcov, merge and flame (tools/output.c): a device or
    a FIFO is written in place, never replaced by a regular file; a
    directory is refused; a symbolic link planted at the old predictable
    temporary name (OUT.tmp.PID) is not followed; a regular OUT is replaced
    whole.  The character device (made with mknod in the scratch directory,
    never the system's /dev/null) needs root."""
    exe = build_abc(a, work, extra=["-fplugin-arg-tally-paths=on", "-fplugin-arg-tally-measure=cycles",
                                      "-fplugin-arg-tally-hooks=call", "-fplugin-arg-tally-blocks=count"])
    data = os.path.join(work, "abc.data")
    run([exe], env={"TALLY_OUTPUT": data})
    commands = {"lcov": ["lcov", data], "merge": ["merge", data], "flame": ["flame", data]}
    for name, args in commands.items():
        run([a.tally, *args, "-o", os.path.join(work, name + ".want")])
    want = {name: open(os.path.join(work, name + ".want"), "rb").read() for name in commands}
    for name in commands:
        expect(len(want[name]) > 0, "%s -o wrote nothing" % name)
    dev = os.path.join(work, "null")
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        dev = None
    for name, args in commands.items():
        # A FIFO, read while tally writes it: stays a FIFO, gets the output.
        fifo = os.path.join(work, name + ".fifo")
        os.mkfifo(fifo)
        got = {}
        reader = threading.Thread(target=lambda: got.setdefault("data", open(fifo, "rb").read()))
        reader.start()
        p = run([a.tally, *args, "-o", fifo], check=False, timeout=60)
        reader.join(30)
        expect(p.returncode == 0, "%s -o FIFO: exit %d\n%s" % (name, p.returncode, p.stderr))
        expect(stat.S_ISFIFO(os.lstat(fifo).st_mode), "%s -o replaced the FIFO" % name)
        if name != "merge":  # merge's header has the time of the merge
            expect(got.get("data") == want[name], "%s -o FIFO: the reader got other bytes" % name)
        else:
            expect(len(got.get("data", b"")) == len(want[name]), "merge -o FIFO: wrong size")
        if dev:
            p = run([a.tally, *args, "-o", dev], check=False)
            expect(p.returncode == 0, "%s -o DEVICE: exit %d\n%s" % (name, p.returncode, p.stderr))
            expect(stat.S_ISCHR(os.lstat(dev).st_mode),
                   "%s -o replaced the character device with a regular file" % name)
        # A directory: refused, left alone.
        d = os.path.join(work, name + ".dir")
        os.mkdir(d)
        p = run([a.tally, *args, "-o", d], check=False)
        expect(p.returncode == 1 and "cannot write %s: it is a directory" % d in p.stderr,
               "%s -o DIR: exit %d\n%s" % (name, p.returncode, p.stderr))
        expect(os.listdir(d) == [], "%s -o DIR wrote into it" % name)
        # A link planted at the temporary name the old code used: a child
        # plants it for its own pid, then becomes tally (exec keeps the pid).
        out = os.path.join(work, name + ".out")
        victim = os.path.join(work, name + ".victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        p = subprocess.run([a.tally, *args, "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: os.symlink(victim, "%s.tmp.%d" % (out, os.getpid())))
        expect(open(victim).read() == "precious\n",
               "%s -o followed the link planted at %s.tmp.PID" % (name, out))
        expect(p.returncode == 0 and stat.S_ISREG(os.lstat(out).st_mode),
               "%s -o beside a planted link: exit %d\n%s" % (name, p.returncode, p.stderr))
        # A regular OUT is replaced whole; a link at OUT is replaced, its
        # target untouched; no temporary is left behind.
        with open(out, "w") as f:
            f.write("old contents that are longer than nothing\n" * 200)
        run([a.tally, *args, "-o", out])
        if name != "merge":
            expect(open(out, "rb").read() == want[name], "%s -o over a regular file" % name)
        link = os.path.join(work, name + ".link")
        os.symlink(victim, link)
        run([a.tally, *args, "-o", link])
        expect(open(victim).read() == "precious\n" and not os.path.islink(link),
               "%s -o LINK wrote through the link" % name)
        left = [f for f in os.listdir(work) if ".tmp." in f and not os.path.islink(os.path.join(work, f))]
        expect(not left, "temporaries left behind: %s" % left)
    if not dev:
        raise Skip("(not root: the character-device case was not run; the FIFO, "
                   "directory and link cases passed)")


def check_lcov_names(a, work):
    """A source file whose name holds a line break cannot inject records
    into `tally lcov`'s tracefile (lcov has no escapes): its record is left
    out with a message naming it escaped, exit status 1, and the other
    files' records are written as usual."""
    evil = os.path.join(work, "evil\nDA:1,99\nx.c")
    with open(evil, "w") as f:
        f.write("int f (int x) { return x > 3 ? x : -x; }\n")
    good = os.path.join(work, "good.c")
    with open(good, "w") as f:
        f.write("int f (int);\n"
                "int main (int argc, char **argv)\n"
                "{\n"
                "  (void) argv;\n"
                "  return f (argc) == 99;\n"
                "}\n")
    exe = os.path.join(work, "prog")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", evil, good,
         "-o", exe, a.runtime])
    data = os.path.join(work, "prog.data")
    run([exe], env={"TALLY_OUTPUT": data})
    for out in (None, os.path.join(work, "prog.info")):
        p = run([a.tally, "lcov", data] + (["-o", out] if out else []), check=False)
        text = open(out).read() if out else p.stdout
        record = re.compile(r"TN:|SF:/.*|FNF?:.*|FNDA:\d+,\S+|FN[FH]:\d+|BRDA:\d+,\d+,\d+,(\d+|-)"
                            r"|BR[FH]:\d+|DA:\d+,\d+|L[FH]:\d+|end_of_record")
        bad = [line for line in text.splitlines() if not record.fullmatch(line)]
        expect(not bad, "lines of the tracefile that are not lcov records: %s" % bad)
        expect("DA:1,99" not in text.splitlines(), "the file name injected DA:1,99:\n%s" % text)
        files = re.findall(r"^SF:(.*)$", text, re.M)
        expect(files == [good], "records for %s, want only %s" % (files, good))
        expect(re.search(r"^FN:2,main$", text, re.M) and re.search(r"^DA:5,1$", text, re.M),
               "good.c's record lacks main:\n%s" % text)
        expect(p.returncode == 1, "exit %d with a file left out, want 1" % p.returncode)
        want = 'tally: lcov: source file "%s" left out of the tracefile' % evil.replace("\n", "\\n")
        expect(want in p.stderr, "want %r in:\n%s" % (want, p.stderr))
    # report escapes the name (it is not dropped there).
    p = run([a.tally, "report", data])
    expect("evil\\x0aDA:1,99" in p.stdout, "report:\n%s" % p.stdout)


def scale_counters(data, factor):
    """DATA (a version-2 data file) with every function counter multiplied
    by FACTOR, the CRC recomputed: the flow stays consistent, so every
    derived count scales too."""
    d = bytearray(data)
    pos = 48
    def skip_str(pos):
        return pos + 4 + struct.unpack_from("<I", d, pos)[0]
    nmods = struct.unpack_from("<I", d, 40)[0]
    pos = skip_str(pos)  # program
    for _ in range(nmods):
        nfns = struct.unpack_from("<I", d, pos + 20)[0]
        pos = skip_str(skip_str(pos + 24))  # tag .. functions, source, directory
        for _ in range(nfns):
            for _ in range(4):
                pos = skip_str(pos)  # name, symbol, origin, file
            n = struct.unpack_from("<I", d, pos + 8)[0]
            pos += 16
            for k in range(n):
                v = struct.unpack_from("<Q", d, pos + 8 * k)[0] * factor
                assert v < 2 ** 64
                struct.pack_into("<Q", d, pos + 8 * k, v)
            pos += 8 * n
            pos += 4 + struct.unpack_from("<I", d, pos)[0]  # block map
    return refix(bytes(d))


def lcov_counts(text):
    """{(file, line): count} of the DA lines and {function: calls} of FNDA."""
    lines, calls, sf = {}, {}, None
    for line in text.splitlines():
        if line.startswith("SF:"):
            sf = line[3:]
        elif line.startswith("DA:"):
            n, c = line[3:].split(",")
            lines[(sf, int(n))] = int(c)
        elif line.startswith("FNDA:"):
            c, fn = line[5:].split(",")
            calls[fn] = int(c)
    return lines, calls


def check_lcov_huge_counts(a, work):
    """tally lcov under ASan and UBSan (halt on error): a file without block
    maps, and counts near 2^64 whose line sums pass 2^63 (they were summed
    as int64_t) and 2^64 (they saturate at 2^64-1, as doc/cli.md says every
    sum does).  Every counter of a valid file is multiplied by K, so each
    line count must be K times the unscaled one, or 2^64-1."""
    env = {"UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
           "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=1"}
    exe = build_abc(a, work)
    plain = os.path.join(work, "plain.data")
    run([exe], env={"TALLY_OUTPUT": plain})
    p = run([a.tally_asan, "lcov", plain], env=env, check=False)
    expect(p.returncode == 0 and "runtime error" not in p.stderr and "ERROR" not in p.stderr,
           "lcov of a file without block maps: exit %d\n%s" % (p.returncode, p.stderr))
    expect(re.search(r"^FNDA:1,main$", p.stdout, re.M), "no FNDA for main:\n%s" % p.stdout)
    src = os.path.join(work, "loops.c")
    with open(src, "w") as f:
        # Line 1: two functions whose counts gcov adds up (as lcov does),
        # each run 3 times: 6; line 2: three such functions: 9.  Line 6:
        # a loop on one line (entry plus 3 cycles).
        f.write("static int f1 (int x) { return x + 1; } static int f2 (int x) { return x * 2; }\n"
                "static int f3 (int x) { return x; } static int f4 (int x) { return -x; } static int f5 (int x) { return x; }\n"
                "int main (int argc, char **argv)\n"
                "{\n"
                "  int s = 0;\n"
                "  for (int i = 0; i < argc + 2; i++) s += i;\n"
                "  for (int i = 0; i < argc + 2; i++)\n"
                "    s += f1 (i) + f2 (i) + f3 (i) + f4 (i) + f5 (i);\n"
                "  return s == 99 && argv;\n"
                "}\n")
    exe = os.path.join(work, "loops")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", src,
         "-o", exe, a.runtime])
    small = os.path.join(work, "small.data")
    run([exe], env={"TALLY_OUTPUT": small})
    want_lines, want_calls = lcov_counts(run([a.tally, "lcov", small]).stdout)
    # The largest K that keeps every stored and derived count (at most 4:
    # the loops' conditions) below 2^63, above which a solved count reads
    # as negative (doc/data-format.md); the lines' sums still pass 2^63
    # (line 1: 6K) and 2^64 (line 2: 9K).
    data = open(small, "rb").read()
    factor = (2 ** 63 - 1) // 4
    huge = os.path.join(work, "huge.data")
    try:
        scaled = scale_counters(data, factor)
    except AssertionError:
        raise Failure("a stored counter is above 4 (the program changed?)")
    with open(huge, "wb") as f:
        f.write(scaled)
    p = run([a.tally_asan, "lcov", huge], env=env, check=False)
    expect(p.returncode == 0 and "runtime error" not in p.stderr and "ERROR" not in p.stderr,
           "lcov of counts near 2^64: exit %d\n%s" % (p.returncode, p.stderr))
    got_lines, got_calls = lcov_counts(p.stdout)
    expect(set(got_lines) == set(want_lines), "other lines: %s vs %s" % (got_lines, want_lines))
    for key, c in want_lines.items():
        want = min(c * factor, 2 ** 64 - 1)
        expect(got_lines[key] == want, "line %s: count %d, want %d x %d = %d"
               % (key[1], got_lines[key], c, factor, want))
    expect(got_calls.get("main") == factor, "main called %s times" % got_calls.get("main"))
    expect(any(2 ** 63 <= c * factor < 2 ** 64 for c in want_lines.values()),
           "no line count between 2^63 and 2^64: %s" % want_lines)
    expect(any(c * factor >= 2 ** 64 for c in want_lines.values()),
           "no line count saturates: %s" % want_lines)


def path_file(nfns, nodes, depth):
    """A valid data file (version 2, correct size and CRC) of one module of
    NFNS functions f0..f{NFNS-1} and a PATH record with depth limit DEPTH
    and NODES, a list of (parent, function, calls, incl, excl)."""
    def s(text):
        b = text.encode()
        return struct.pack("<I", len(b)) + b
    body = [struct.pack("<IIQII", 0x4c444f4d, 3, 0x1234, 0x2 | 0x8, nfns), s("t.c"), s("/tmp")]
    for i in range(nfns):
        name = s("f%d" % i)
        body.append(name + name + name + s("t.c") + struct.pack("<IIIIQQI", i + 1, 0, 2, 0, 0, 0, 0))
    body.append(struct.pack("<IIQIII", 0x48544150, depth, 0, 1, 0, len(nodes)))
    body.append(b"".join(struct.pack("<IIQQQ", *n) for n in nodes))
    body = b"".join(body)
    program = s("/tmp/deep")
    size = 48 + len(program) + len(body) + 16
    head = b"TALLYDAT" + struct.pack("<IIQQQII", 2, 0x01020304, size, 1, 0, 1, 1) + program
    data = head + body
    return data + struct.pack("<IIQ", 0x444e4554, zlib.crc32(data), size)


def deep_wide_tree(wide, chains, depth):
    """main (f0) with WIDE children f1..f{WIDE}, and below the first CHAINS
    of them a chain down to DEPTH levels: wide * 1 + chains * (depth - 2)
    nodes besides main.  Only leaves have exclusive cycles (so collapsed
    stacks stay small): each 1, and every inclusive value is the sum."""
    nodes = [(0, 0, 1, 0, 0)]  # node 1: main
    leaves = {}
    for i in range(1, wide + 1):
        nodes.append((1, i, 1, 0, 0))
    for c in range(chains):
        parent = 2 + c
        for level in range(3, depth + 1):
            nodes.append((parent, (c * 7 + level) % wide + 1, 1, 0, 0))
            parent = len(nodes)
    # Inclusive cycles: 1 per leaf under the node.
    count = [0] * (len(nodes) + 1)
    kids = [0] * (len(nodes) + 1)
    for i, n in enumerate(nodes, 1):
        kids[n[0]] += 1
    for i in range(len(nodes), 0, -1):
        if not kids[i]:
            count[i] += 1
        count[nodes[i - 1][0]] += count[i]
    return [(p, f, c, count[i], 0 if kids[i] else 1)
            for i, (p, f, c, _, _) in enumerate(nodes, 1)], count[1]


def check_deep_paths(a, work):
    """Call paths: a chain deeper than the file's own depth limit (60,000
    levels under a limit of 64) and a limit above 1024 are refused with a
    clear error by every command (it overflowed tally flame's stack); a
    legal tree of 300,000 nodes (a node with 100,000 children and chains
    1,001 deep under a limit of 1,024) is reported in time linear in its
    size: ten times the nodes take about ten times as long, not a hundred."""
    chain = [(i, 0, 1, 60000 - i, 1) for i in range(60000)]
    for name, data, pattern in (
            ("chain", path_file(1, chain, 64),
             r"path node 65 is 65 calls deep, deeper than the file's depth limit 64: file is corrupt"),
            ("limit", path_file(1, chain[:10], 5000),
             r"depth limit 5000 is above 1024: file is corrupt")):
        path = os.path.join(work, name + ".data")
        with open(path, "wb") as f:
            f.write(data)
        for tool in (a.tally, a.tally_asan):
            for cmd in (["report", "--tree"], ["flame"], ["flame", "--folded"], ["report"],
                        ["merge", "-o", os.path.join(work, "m.data")], ["dump"]):
                p = run([tool, *cmd, path], check=False)
                expect(p.returncode == 1 and re.search(pattern, p.stderr) and path in p.stderr,
                       "%s %s on the %s file: exit %d, want 1 and /%s/:\n%s"
                       % (os.path.basename(tool), " ".join(cmd), name, p.returncode, pattern,
                          p.stderr[-2000:]))
    # The same chain within its limit (1,024) is fine.
    ok = os.path.join(work, "ok.data")
    with open(ok, "wb") as f:
        f.write(path_file(1, chain[:1024], 1024))
    p = run([a.tally, "report", "--tree", ok])
    lines = p.stdout.splitlines()
    expect(len(lines) == 1025 and lines[-1].endswith("  [1024] f0  t.c"),
           "a chain of 1024 within its limit:\n%s" % "\n".join(lines[-3:]))
    times = {}
    for scale in (10, 1):
        nodes, total = deep_wide_tree(100000 // scale, 200 // scale, 1001)
        path = os.path.join(work, "tree%d.data" % scale)
        with open(path, "wb") as f:
            f.write(path_file(100000 // scale + 1, nodes, 1024))
        took = 0.0
        out = os.path.join(work, "out")
        for cmd in (["report", "--tree"], ["flame", "--folded"], ["flame"]):
            start = time.monotonic()
            try:
                with open(out, "w") as f:
                    p = subprocess.run([a.tally, *cmd, path], stdout=f, stderr=subprocess.PIPE,
                                       text=True, timeout=600)
            except subprocess.TimeoutExpired:
                raise Failure("tally %s on %d nodes: not done in 600 s" % (" ".join(cmd), len(nodes)))
            took += time.monotonic() - start
            expect(p.returncode == 0, "tally %s on %d nodes: exit %d\n%s"
                   % (" ".join(cmd), len(nodes), p.returncode, p.stderr))
            if cmd == ["report", "--tree"]:
                with open(out) as f:
                    rows = sum(1 for _ in f)
                expect(rows == len(nodes) + 1, "--tree printed %d rows for %d nodes"
                       % (rows - 1, len(nodes)))
            if cmd == ["flame", "--folded"]:
                folded = open(out).read().splitlines()
                expect(len(folded) == (100000 // scale - 200 // scale) + 200 // scale,
                       "%d collapsed stacks" % len(folded))
                expect(sum(int(l.rsplit(" ", 1)[1]) for l in folded) == total,
                       "collapsed stacks do not add up to %d" % total)
                deepest = max(l.count(";") for l in folded)
                expect(deepest == 1000, "deepest stack has %d frames, want 1001" % (deepest + 1))
        times[scale] = took
        print("%d nodes: %.2f s" % (len(nodes), took))
    ratio = times[1] / max(times[10], 0.05)
    # Here: 0.4 s against 2 s (ratio 8); the quadratic code of 1f22866
    # took 3.3 s against 105 s (ratio 31).
    expect(times[1] < 30 and ratio < 25,
           "300,000 nodes took %.1f s, %.0f times as long as 30,000 (linear: about 10)"
           % (times[1], ratio))


def after_modules(d):
    """The offset of the first record after the modules of data file D
    (version 2), and [number of functions per module]."""
    def skip_str(pos):
        return pos + 4 + struct.unpack_from("<I", d, pos)[0]
    nmods = struct.unpack_from("<I", d, 40)[0]
    pos = skip_str(48)  # program
    nfns = []
    for _ in range(nmods):
        nfns.append(struct.unpack_from("<I", d, pos + 20)[0])
        pos = skip_str(skip_str(pos + 24))
        for _ in range(nfns[-1]):
            for _ in range(4):
                pos = skip_str(pos)
            pos += 16 + 8 * struct.unpack_from("<I", d, pos + 8)[0]
            pos += 4 + struct.unpack_from("<I", d, pos)[0]
    return pos, nfns


def expected_dump_records(d):
    """The lines `tally dump` should print for the MEAS, FRMS, PATH and
    PEVT records of data file D, decoded here from the bytes."""
    pos, nfns = after_modules(d)
    out = []
    def u32():
        nonlocal pos
        pos += 4
        return struct.unpack_from("<I", d, pos - 4)[0]
    def u64():
        nonlocal pos
        pos += 8
        return struct.unpack_from("<Q", d, pos - 8)[0]
    def string():
        nonlocal pos
        n = u32()
        pos += n
        return d[pos - n:pos].decode()
    tag = u32()
    if tag == 0x5341454d:
        v = u32()
        names = [string() for _ in range(v)]
        out.append("meas values=%d: %s" % (v, " ".join('"%s"' % n for n in names)))
        for m in range(u32()):
            for j in range(u32()):
                pairs = ["%d/%d" % (u64(), u64()) for _ in range(v)]
                out.append("  module %d fn %d incl/excl: %s" % (m, j, " ".join(pairs)))
        tag = u32()
    frames = []
    if tag == 0x534d5246:
        count = u32()
        out.append("frames count=%d" % count)
        for f in range(count):
            fid, addr, name = u32(), u64(), string()
            frames.append(fid)
            out.append('  frame %d id=0x%08x address=0x%x name="%s"' % (f, fid, addr, name))
        tag = u32()
    nodes = 0
    if tag == 0x48544150:
        depth, lost, nrec = u32(), u64(), u32()
        bases = [u32() for _ in range(nrec)]
        nodes = u32()
        out.append("path depth=%d lost=%d nodes=%d" % (depth, lost, nodes))
        for i in range(1, nodes + 1):
            parent, fid, calls, incl, excl = u32(), u32(), u64(), u64(), u64()
            if fid == 0xffffffff:
                what = "function=none"
            elif fid >= 0xf0000000:
                what = "frame=%d" % frames.index(fid)
            else:
                m = [k for k in range(nrec) if bases[k] <= fid < bases[k] + nfns[k]][0]
                what = "function=%d:%d" % (m, fid - bases[m])
            out.append("  node %d parent=%d %s calls=%d incl=%d excl=%d"
                       % (i, parent, what, calls, incl, excl))
        tag = u32()
    if tag == 0x54564550:
        e, n = u32(), u32()
        out.append("path-events events=%d nodes=%d" % (e, n))
        for i in range(1, n + 1):
            pairs = ["%d/%d" % (u64(), u64()) for _ in range(e)]
            out.append("  node %d incl/excl: %s" % (i, " ".join(pairs)))
        tag = u32()
    expect(tag == 0x444e4554, "no trailer after the records (tag %#x)" % tag)
    return out


def check_dump_records(a, work):
    """`tally dump` prints the MEAS, FRMS, PATH and PEVT records too, each
    value as stored: its lines between the last function and the trailer
    are those decoded here from the file's bytes.  A paths=on program's
    own file, and the seed files with outside frames and PAPI events."""
    exe = build_abc(a, work, extra=["-fplugin-arg-tally-paths=on", "-fplugin-arg-tally-measure=cycles",
                                    "-fplugin-arg-tally-hooks=call"])
    data = os.path.join(work, "abc.data")
    run([exe], env={"TALLY_OUTPUT": data})
    seeds = os.path.join(a.srcdir, "..", "tools", "fuzz-corpus")
    for path in (data, os.path.join(seeds, "frames-valid"), os.path.join(seeds, "pevt-valid")):
        want = expected_dump_records(open(path, "rb").read())
        out = run([a.tally, "dump", path]).stdout.splitlines()
        last_fn = max(i for i, l in enumerate(out) if l.startswith("  fn "))
        got = [l for l in out[last_fn + 1:-1]]
        expect(out[-1].startswith("trailer "), "%s: last line %r" % (path, out[-1]))
        expect(got == want, "%s: dump prints\n%s\nwant\n%s"
               % (os.path.basename(path), "\n".join(got), "\n".join(want)))
        expect(any(l.startswith("path depth=") for l in got), "%s: no path record" % path)
    for name, record in (("frames-valid", "frames count="), ("pevt-valid", "path-events events=")):
        out = run([a.tally, "dump", os.path.join(seeds, name)]).stdout
        expect(record in out, "%s: no %s line" % (name, record))


# The launchers' variables %r and %R read (rt/rank.c), in the order tried.
RANK_VARS = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK",
             "SLURM_PROCID", "FLUX_TASK_RANK", "PALS_RANKID", "ALPS_APP_PE"]
SIZE_VARS = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS",
             "FLUX_JOB_SIZE", "PALS_SIZE"]


def check_rank_output(a, work):
    """%r and %R in TALLY_OUTPUT: the job rank and size from each
    launcher's variables, the first set one winning; outside a job "pid"
    and the pid, and "0"; a malformed value reported and skipped."""
    exe = build_abc(a, work)
    clean = {k: v for k, v in os.environ.items() if k not in RANK_VARS + SIZE_VARS}

    def names(extra, pattern="r%r-of-%R.data"):
        d = tempfile.mkdtemp(dir=work)
        env = dict(clean, **extra)
        env["TALLY_OUTPUT"] = os.path.join(d, pattern)
        p = subprocess.run([exe], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=True)
        return sorted(os.listdir(d)), p

    for rank_var, size_var in [("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                               ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
                               ("FLUX_TASK_RANK", "FLUX_JOB_SIZE"),
                               ("PALS_RANKID", "PALS_SIZE")]:
        got, _ = names({rank_var: "37", size_var: "4096"})
        expect(got == ["r37-of-4096.data"], "%s/%s: %s" % (rank_var, size_var, got))
    for var in ("PMIX_RANK", "ALPS_APP_PE"):
        got, _ = names({var: "5"})
        expect(got == ["r5-of-0.data"], "%s alone: %s" % (var, got))
    # The first variable set wins: Open MPI's over Slurm's (mpirun inside
    # an allocation sets both, SLURM_PROCID being the mpirun's own step).
    got, _ = names({"SLURM_PROCID": "0", "SLURM_NTASKS": "1",
                    "OMPI_COMM_WORLD_RANK": "6", "OMPI_COMM_WORLD_SIZE": "8"})
    expect(got == ["r6-of-8.data"], "precedence: %s" % got)
    # Leading zeros do not make another name for the same rank.
    got, _ = names({"PMI_RANK": "007", "PMI_SIZE": "08"})
    expect(got == ["r7-of-8.data"], "leading zeros: %s" % got)
    # Outside a job: "pid" and the pid, and size 0; two processes differ.
    got, _ = names({})
    expect(len(got) == 1 and re.fullmatch(r"rpid\d+-of-0\.data", got[0]),
           "outside a job: %s" % got)
    got2, _ = names({})
    expect(got2 != got, "two processes outside a job share %s" % got)
    # Malformed: reported once, the next variable is used.
    got, p = names({"OMPI_COMM_WORLD_RANK": "3x", "PMI_RANK": "2", "PMI_SIZE": "-1"})
    expect(got == ["r2-of-0.data"], "malformed: %s" % got)
    expect(p.stderr.count("is not a job rank or size") == 1
           and "OMPI_COMM_WORLD_RANK=3x" in p.stderr, "malformed report: %r" % p.stderr)
    got, p = names({"PMI_RANK": "12345678901"})
    expect(len(got) == 1 and got[0].startswith("rpid"), "too long a rank: %s" % got)
    # The file is a good one and %% still works next to %r.
    got, _ = names({"SLURM_PROCID": "1"}, "x%%%r.data")
    expect(got == ["x%1.data"], "%%%%%%r: %s" % got)


def check_merge_stream(a, work):
    """tally merge streams: merging 300 copies of a file of 1,000
    functions takes no more memory than merging 30 (less than 3 files'
    worth more), and -j 1, -j 2 and -j 4 write the same sums; a bad -j is
    a usage error."""
    src = os.path.join(work, "many.c")
    with open(src, "w") as f:
        for i in range(1000):
            f.write("int f%d (int x) { if (x > %d) return x - 1; return x + %d; }\n" % (i, i, i))
        f.write("int main (void) { int s = 0;\n")
        for i in range(1000):
            f.write("  s += f%d (s & 7);\n" % i)
        f.write("  return s == 12345; }\n")
    exe = os.path.join(work, "many")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", src,
         "-o", exe, a.runtime])
    base = os.path.join(work, "base.data")
    run([exe], env={"TALLY_OUTPUT": base})
    data = open(base, "rb").read()
    d = os.path.join(work, "copies")
    os.mkdir(d)
    paths = []
    for k in range(300):
        paths.append(os.path.join(d, "r%d.data" % k))
        with open(paths[-1], "wb") as f:
            f.write(data)

    def merge(files, jobs, out):
        p = subprocess.Popen([a.tally, "merge", "-j", str(jobs), "-o", out, *files],
                             stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        expect(status == 0, "merge -j %d failed: %r" % (jobs, p.stderr.read()))
        return ru.ru_maxrss * 1024

    few = merge(paths[:30], 1, os.path.join(work, "few.data"))
    many = merge(paths, 1, os.path.join(work, "m1.data"))
    expect(many - few < 3 * len(data), "merging 300 files took %d bytes more than 30 "
           "(files of %d bytes): not streamed" % (many - few, len(data)))
    want = [(e * 300, x * 300) for (e, x) in report_calls(a, base).values()]
    for jobs in (2, 4):
        out = os.path.join(work, "m%d.data" % jobs)
        merge(paths, jobs, out)
        # All but the time of the merge (header bytes 32..40) and hence
        # the CRC over it (trailer bytes 4..8).
        x, y = open(out, "rb").read(), open(os.path.join(work, "m1.data"), "rb").read()
        expect(x[:32] + x[40:-12] + x[-8:] == y[:32] + y[40:-12] + y[-8:],
               "-j %d wrote another file than -j 1" % jobs)
    got = list(report_calls(a, os.path.join(work, "m4.data")).values())
    expect(sorted(got) == sorted(want), "300 merged copies are not 300 times the counts")
    # The same under ASan/UBSan (leaks included), with an error midway.
    run([a.tally_asan, "merge", "-j", "4", "-o", os.path.join(work, "asan.data"), *paths[:30]])
    p = run([a.tally_asan, "merge", "-j", "3", "-o", os.path.join(work, "asan.data"),
             *paths[:10], os.path.join(work, "missing.data"), *paths[10:20]], check=False)
    expect(p.returncode == 1 and "missing.data" in p.stderr and "Sanitizer" not in p.stderr,
           "-j 3 with a missing file under ASan: %d %r" % (p.returncode, p.stderr))
    for bad in ("-j0", "-j", "--jobs=x", "-j300"):
        p = run([a.tally, "merge", "-o", os.path.join(work, "x.data"), bad, base], check=False)
        expect(p.returncode == 2 and "merge" in p.stderr, "%s: %d %r" % (bad, p.returncode, p.stderr))


def check_asan_runtime(a, work):
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    for prog, flags in (("s-abc.c", []), ("threads.c", ["-pthread", "-fplugin-arg-tally-update=atomic"])):
        for hooks in ("inline", "call"):
            exe = os.path.join(work, prog + hooks)
            run([a.cc, "-O1", "-g", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=" + hooks,
                 os.path.join(a.srcdir, "progs", prog), "-o", exe, *flags, *san, a.runtime_asan])
            data = exe + ".data"
            p = run([exe], env={"TALLY_OUTPUT": data, "ASAN_OPTIONS": "detect_leaks=1"})
            expect("runtime error" not in p.stderr and "ERROR" not in p.stderr,
                   "sanitizer report:\n%s" % p.stderr)
            run([a.tally_asan, "report", data])
    # The report's tables grow while several files are merged: 400
    # functions with block maps, three data files, every output.
    src = os.path.join(work, "many.c")
    with open(src, "w") as f:
        for i in range(400):
            f.write("__attribute__((noinline)) int f%d (int x) { return x > %d ? x - 1 : x + %d; }\n"
                    % (i, i, i))
        f.write("int main (int argc, char **argv) { (void) argv; int s = 0;\n")
        for i in range(400):
            f.write("  s += f%d (argc + %d);\n" % (i, i % 7))
        f.write("  return s == 12345; }\n")
    exe = os.path.join(work, "many")
    run([a.cc, "-O1", "-fplugin=" + a.plugin, "-fplugin-arg-tally-blocks=count", src,
         "-o", exe, a.runtime])
    datas = []
    for k in range(3):
        datas.append(os.path.join(work, "many.%d.data" % k))
        run([exe] + ["x"] * k, env={"TALLY_OUTPUT": datas[-1]}, check=False)
    env = {"ASAN_OPTIONS": "detect_leaks=1"}
    for args in (["report"], ["report", "--csv", "--clones"], ["report", "--blocks"],
                 ["report", "--json"], ["lcov", "-o", os.path.join(work, "many.info")]):
        p = run([a.tally_asan, *args, *datas], env=env)
        expect("ERROR" not in p.stderr and "runtime error" not in p.stderr,
               "tally %s on three files: sanitizer report:\n%s" % (" ".join(args), p.stderr))
    rows = run([a.tally, "report", "--csv", *datas]).stdout.splitlines()[1:]
    calls = {r.split(",")[2]: int(r.split(",")[0]) for r in rows}
    expect(calls.get("f399") == 3 and calls.get("main") == 3,
           "three runs of 400 functions: f399 %s, main %s calls, expected 3 each"
           % (calls.get("f399"), calls.get("main")))


def check_install(a, work):
    """meson install puts tally.so where -fplugin=tally finds it (GCC's
    plugin directory, here under DESTDIR, given with -iplugindir) and
    tally.pc gives the runtime."""
    dest = os.path.join(work, "dest")
    run([a.meson, "install", "-C", a.build_dir, "--destdir", dest,
         "--no-rebuild", "--quiet"])
    plugin_dir = run([a.cc, "-print-file-name=plugin"]).stdout.strip()
    expect(os.path.exists(dest + plugin_dir + "/tally.so"),
           "tally.so not installed in %s" % plugin_dir)
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tally.pc"]
    expect(len(pcs) == 1, "tally.pc installed %d times" % len(pcs))
    # tally.specs where a bare -specs=tally.specs finds it, naming the
    # installed plugin and runtime (run-dropin.py "specs" uses the build
    # tree's).
    specs = dest + run([a.cc, "-print-file-name="]).stdout.strip() + "/tally.specs"
    expect(os.path.isfile(specs), "tally.specs not installed as %s" % specs)
    text = open(specs).read()
    expect("-fplugin=%s/tally.so " % plugin_dir in text, "tally.specs:\n%s" % text)
    for lib in re.findall(r"(/\S+/libtally-rt\.(?:so|a)) ", text):
        expect(os.path.isfile(dest + lib), "tally.specs names %s, not installed" % lib)
    env = {"PKG_CONFIG_SYSROOT_DIR": dest, "PKG_CONFIG_PATH": os.path.dirname(pcs[0])}
    libs = run(["pkg-config", "--libs", "tally"], env=env).stdout.split()
    # --cflags names the plugin by its installed path (outside DESTDIR);
    # this check loads it by its short name (run-dropin.py tests --cflags).
    cflags = [f for f in run(["pkg-config", "--cflags", "tally"], env=env).stdout.split()
              if not f.startswith("-fplugin=")]
    libdir = [f[2:] for f in libs if f.startswith("-L")][0]
    exe = os.path.join(work, "abc")
    run([a.cc, "-O0", "-iplugindir=" + dest + plugin_dir, "-fplugin=tally",
         os.path.join(a.srcdir, "api", "dump-reset.c"), "-o", exe,
         *cflags, *libs, "-Wl,-rpath," + libdir])
    data, mid = os.path.join(work, "i.data"), os.path.join(work, "m.data")
    run([exe, mid], env={"TALLY_OUTPUT": data})
    tool = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "tally"]
    expect(len(tool) == 1, "tally command installed %d times" % len(tool))
    out = run([tool[0], "report", "--csv", data]).stdout
    expect(re.search(r"^3,3,step,", out, re.M), "installed build report:\n%s" % out)


def check_multi_runtime(a, work):
    """An executable, a linked shared library and a dlopen'ed/dlclose'd one,
    each with its own copy of the static runtime, or all sharing the shared
    runtime: one data file with every module's counts."""
    d = os.path.join(a.srcdir, "multi")
    rt_dir = os.path.dirname(os.path.abspath(a.runtime))
    shared = ["-L" + rt_dir, "-ltally-rt", "-Wl,-rpath," + rt_dir]
    for name, rt in (("static", [os.path.abspath(a.runtime)]), ("shared", shared)):
        sub = os.path.join(work, name)
        os.mkdir(sub)
        plug = ["-fplugin=" + a.plugin]
        run([a.cc, "-O2", "-fPIC", "-shared", *plug, os.path.join(d, "lib.c"),
             "-o", os.path.join(sub, "liblib.so"), *rt])
        run([a.cc, "-O2", "-fPIC", "-shared", *plug, "-fplugin-arg-tally-hooks=call",
             os.path.join(d, "plugin.c"), "-o", os.path.join(sub, "plugin.so"), *rt])
        # The runtime before the library, so the executable has its own copy.
        run([a.cc, "-O2", *plug, os.path.join(d, "main.c"), "-o", os.path.join(sub, "main"),
             *rt, "-L" + sub, "-llib", "-Wl,-rpath," + sub, "-ldl"])
        p = subprocess.run([os.path.join(sub, "main"), os.path.join(sub, "plugin.so")],
                           cwd=sub, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        expect(p.returncode == 0 and p.stdout.strip() == "11",
               "%s: exit %d, output %r, %r" % (name, p.returncode, p.stdout, p.stderr))
        expect(p.stderr == "", "%s: runtime messages: %r" % (name, p.stderr))
        files = [f for f in os.listdir(sub) if f.endswith(".data")]
        expect(len(files) == 1, "%s: %d data files: %s" % (name, len(files), files))
        calls = report_calls(a, os.path.join(sub, files[0]))
        for fn, want in (("main", (1, 1)), ("lib_fn", (3, 3)), ("plugin_fn", (2, 2))):
            expect(calls.get(fn) == want, "%s: %s counted %s, want %s\n%s"
                   % (name, fn, calls.get(fn), want, calls))


def check_filter(a, work):
    """-fplugin-arg-tally-filter: include/exclude rules on function names and
    files, min-statements, last rule wins; -fplugin-arg-tally-verbose says
    what happened to each function; bad filter files are errors."""
    src = os.path.join(a.srcdir, "filter", "prog.c")

    def instrumented(rules, extra=(), path=None, **kw):
        if rules is not None:
            path = os.path.join(work, "rules")
            with open(path, "w") as f:
                f.write(rules)
        exe = os.path.join(work, "prog")
        p = run([a.cc, "-O0", "-fplugin=" + a.plugin, "-fplugin-arg-tally-filter=" + path,
                 *extra, src, "-o", exe, a.runtime], env={"LC_ALL": "C"}, **kw)
        data = os.path.join(work, "f.data")
        if os.path.exists(data):
            os.unlink(data)
        run([exe], env={"TALLY_OUTPUT": data})
        # Nothing instrumented: no module registers, no file is written.
        return (set(report_calls(a, data)) if os.path.exists(data) else set()), p.stderr

    every = {"tiny", "looping", "log_debug", "work", "main"}
    got, _ = instrumented("# nothing but a comment\n")
    expect(got == every, "empty filter: %s" % got)
    got, _ = instrumented("exclude function log_*\n")
    expect(got == every - {"log_debug"}, "exclude by glob: %s" % got)
    got, _ = instrumented("include function work\ninclude function ma?n\n")
    expect(got == {"work", "main"}, "include list: %s" % got)
    got, _ = instrumented("include function *\nexclude function t*\ninclude function tiny\n")
    expect(got == every, "last rule wins: %s" % got)
    got, _ = instrumented("exclude file *prog.c\n")
    expect(got == set(), "exclude file: %s" % got)
    got, _ = instrumented("min-statements 6\n")
    expect(got == {"looping", "work", "main"} or got == {"looping", "work"},
           "min-statements keeps loops and big functions: %s" % got)
    expect("tiny" not in got and "log_debug" not in got, "min-statements: %s" % got)
    # A rule longer than any line buffer is read whole: a bracket of 5000
    # letters, "[ww...w]ork", matches work.
    got, _ = instrumented("# a long rule\nexclude function [%s]ork\n" % ("w" * 5000))
    expect(got == every - {"work"}, "a rule of 5000 bytes: %s" % got)
    # A filter file may be a pipe (<(tally select --filter ...)).
    r, w = os.pipe()
    os.write(w, b"exclude function tiny\n")
    os.close(w)
    got, _ = instrumented(None, pass_fds=(r,), path="/dev/fd/%d" % r)
    os.close(r)
    expect(got == every - {"tiny"}, "a filter from a pipe: %s" % got)
    got, text = instrumented("exclude function tiny\n", ["-fplugin-arg-tally-verbose"])
    text = plain_quotes(text)
    expect("note: tally: 'tiny' not instrumented: excluded by a function rule" in text
           and "note: tally: 'work' instrumented" in text, "verbose notes:\n%s" % text)
    # Errors: a bad line names file:line and the accepted rules; a missing
    # file and a missing value name the option.
    bad = os.path.join(work, "bad")
    with open(bad, "w") as f:
        f.write("include function a\ninclude everything\n")
    nul = os.path.join(work, "nul")
    with open(nul, "w") as f:
        f.write("exclude function tiny\nexclude function work\0 main\n")
    for flag, pattern in ((bad, r"bad:2: cannot read this rule; the accepted lines are"),
                          (nul, r"nul:2: a NUL byte in the line; a filter file is text"),
                          (work, r"cannot read the filter file: it is a directory"),
                          (os.path.join(work, "missing"), r"cannot read the filter file"),
                          ("", r"'-fplugin-arg-tally-filter' needs a value")):
        opt = "-fplugin-arg-tally-filter" + ("=" + flag if flag else "")
        p = run([a.cc, "-c", "-fplugin=" + a.plugin, opt, src, "-o",
                 os.path.join(work, "x.o")], env={"LC_ALL": "C"}, check=False)
        text = plain_quotes(p.stderr)
        expect(p.returncode != 0 and re.search(pattern, text),
               "%s: want /%s/:\n%s" % (opt, pattern, text))


def callgrind_self(exe, source):
    """Self instructions (Ir) per source function of SOURCE's file, from
    callgrind: the oracle for which functions take the time.  Clones
    ("spin.constprop.0") are folded into their source function."""
    out = exe + ".cg"
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe])
    text = run(["callgrind_annotate", "--threshold=100", out]).stdout
    cost = {}
    for m in re.finditer(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+):(\S+)", text, re.M):
        if os.path.basename(m.group(2)) == source:
            fn = m.group(3).split(".")[0]
            cost[fn] = cost.get(fn, 0) + int(m.group(1).replace(",", ""))
    return cost


def smallest_share(cost, percent):
    """The fewest functions, most costly first, making up PERCENT of COST."""
    total, got, chosen = sum(cost.values()), 0, set()
    for fn, c in sorted(cost.items(), key=lambda kv: -kv[1]):
        if got * 100 >= percent * total:
            break
        chosen.add(fn)
        got += c
    return chosen


def check_select(a, work):
    """-fplugin-arg-tally-select=PROFILE:P%: a measure=cycles profile of a
    program where two functions take nearly all the time (the set callgrind's
    self instructions choose too) instruments just those two, the clone
    among them mapped back to its source function; `tally select` names the
    same set; verbose says why; with filter= both must admit; bad profiles
    and percentages are errors naming the option."""
    src = os.path.join(a.srcdir, "filter", "hot.c")
    hot = {"spin", "churn"}
    every = hot | {"tiny", "small", "main"}

    def build(name, flags, check=True):
        exe = os.path.join(work, name)
        p = run([a.cc, "-O2", "-fplugin=" + a.plugin, *flags, src, "-o", exe, a.runtime],
                env={"LC_ALL": "C"}, check=check)
        return exe, plain_quotes(p.stderr), p.returncode

    def profile(name, flags):
        exe, _, _ = build(name, flags)
        data = os.path.join(work, name + ".data")
        run([exe], env={"TALLY_OUTPUT": data})
        return data

    def counted(flags):
        exe, notes, _ = build("sel", flags)
        data = os.path.join(work, "sel.data")
        if os.path.exists(data):
            os.unlink(data)
        run([exe], env={"TALLY_OUTPUT": data})
        return report_calls(a, data), notes

    def selected(args):
        out = run([a.tally, "select", *args]).stdout.splitlines()
        expect(re.match(r"\d+ of \d+ functions make up [\d.]+% of \d+ cycles", out[0]),
               "tally select heading: %r" % out[0])
        return {line.split()[3] for line in out[2:]}

    prof = profile("prof", ["-fplugin-arg-tally-measure=cycles"])
    # 1. The oracle: callgrind on an uninstrumented build picks the same two.
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        plain = os.path.join(work, "plain")
        run([a.cc, "-O2", "-g", src, "-o", plain])
        cost = callgrind_self(plain, "hot.c")
        expect(set(cost) <= every and smallest_share(cost, 80) == hot,
               "callgrind's choice at 80%%: %s from %s" % (smallest_share(cost, 80), cost))
    else:
        print("valgrind not installed: callgrind oracle skipped")
    # 2. The rule itself, on the fixed measured files of the fuzz corpus
    #    (no timing noise): the fewest functions, most exclusive cycles
    #    first, reaching P% of the total of both files, as computed here from
    #    the cycles `tally report --json` shows for them.
    fixed = [os.path.join(a.srcdir, "..", "tools", "fuzz-corpus", f)
             for f in ("meas-valid", "path-valid")]
    report = json.loads(run([a.tally, "report", "--json", *fixed]).stdout)
    excl = {f["name"]: f["excl_cycles"] for f in report["functions"]}
    for pct in ("50", "99", "99.5", "99.7", "99.9", "100"):
        want = smallest_share(excl, Fraction(pct))
        got = selected(["--percent=" + pct, *fixed])
        expect(got == want, "tally select --percent=%s: %s, want %s from %s"
               % (pct, got, want, excl))
    # 3. The live profile: wall-clock cycles, so only what no disturbance
    #    of the run can change is required: the set at 80% is spin and
    #    churn, or one of them if the other was slowed down, never one of
    #    the trivial functions; the plugin instruments exactly the set
    #    tally select names, the calls the program makes.
    chosen = selected([prof])
    expect(chosen and chosen <= hot, "tally select: %s" % chosen)
    expect(selected(["--percent=80%", prof]) == chosen, "tally select --percent=80%")
    one = selected(["--percent=40", prof])
    expect(len(one) == 1 and one <= hot, "tally select --percent=40: %s" % one)
    for opt in (prof + ":80%", prof, prof + ":80"):
        calls, notes = counted(["-fplugin-arg-tally-select=" + opt, "-fplugin-arg-tally-verbose"])
        expect(calls == {fn: (20, 20) for fn in chosen}, "select=%s: %s" % (opt, calls))
        for fn in chosen:
            # A clone is named as GCC prints it: 'spin.constprop'.
            expect(re.search(r"note: tally: '%s(\.\w+)*' instrumented: [\d.]+%% of "
                             r"prof.data's time" % fn,
                             notes), "select=%s: no note for %s:\n%s" % (opt, fn, notes))
        for fn in every - chosen:
            expect(re.search(r"note: tally: '%s(\.\w+)*' not instrumented: not among the "
                             r"functions making up 80%% of prof.data's time" % fn, notes),
                   "select=%s: no note for %s:\n%s" % (opt, fn, notes))
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof + ":40"])
    expect(set(calls) == one, "select=...:40 instruments %s, tally select names %s"
           % (set(calls), one))
    # spin's profile record is its clone's body (spin.constprop.0): at 100%
    # (every function with any time) the rebuild instruments spin.
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof + ":100%"])
    expect(hot <= set(calls) <= every and set(calls) == selected(["--percent=100", prof]),
           "select=...:100%%: %s" % calls)
    # 4. A profile built before inlining (at=early, every source function)
    #    chooses for an at=late build, and the other way round.
    early = profile("early", ["-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-at=early",
                              "-fplugin-arg-tally-hooks=call"])
    calls, _ = counted(["-fplugin-arg-tally-select=" + early])
    expect(set(calls) == selected([early]) and set(calls) <= hot,
           "at=early profile, at=late build: %s" % calls)
    calls, _ = counted(["-fplugin-arg-tally-select=" + prof, "-fplugin-arg-tally-at=early"])
    expect(set(calls) == chosen, "at=late profile, at=early build: %s" % calls)
    # 5. With a filter, both must admit; tally select --filter writes one.
    rules = os.path.join(work, "rules")
    with open(rules, "w") as f:
        f.write("exclude function churn\n")
    calls, notes = counted(["-fplugin-arg-tally-select=" + prof + ":100",
                            "-fplugin-arg-tally-filter=" + rules, "-fplugin-arg-tally-verbose"])
    want = selected(["--percent=100", prof]) - {"churn"}
    expect(set(calls) == want, "select and filter: %s, want %s" % (calls, want))
    expect("'churn' not instrumented: excluded by a function rule" in notes, notes)
    with open(rules, "w") as f:
        f.write(run([a.tally, "select", "--filter", prof]).stdout)
    calls, _ = counted(["-fplugin-arg-tally-filter=" + rules])
    expect(set(calls) == chosen, "tally select --filter as a filter file: %s" % calls)
    # 6. Errors: the option and what is wrong, never an ICE.
    count_only = profile("count", [])
    bad = bytearray(open(prof, "rb").read())
    bad[70] ^= 0x20
    corrupt = os.path.join(work, "corrupt.data")
    with open(corrupt, "wb") as f:
        f.write(bad)
    opt = "-fplugin-arg-tally-select"
    cases = [
        ([opt + "=" + count_only], r"count.data has no measured time; build the profiling run "
         r"with -fplugin-arg-tally-measure=cycles"),
        ([opt + "=" + corrupt], r"corrupt"),
        ([opt + "=" + os.path.join(work, "missing")], r"No such file"),
        ([opt + "=" + src], r"not a tally data file"),
        ([opt + "=" + prof + ":0"], r"bad percentage '0'; give a number above 0 and at most 100"),
        ([opt + "=" + prof + ":100.5%"], r"bad percentage '100.5%'"),
        ([opt + "=" + prof + ":-5"], r"bad percentage '-5'"),
        ([opt + "=" + prof + ":eighty"], r"bad percentage 'eighty'"),
        ([opt + "=:80"], r"no profile before the ':'"),
        ([opt], r"'-fplugin-arg-tally-select' needs a value: 'PROFILE' or 'PROFILE:P%'"),
        ([opt + "=" + prof, opt + "=" + prof], r"'-fplugin-arg-tally-select' given twice"),
    ]
    for flags, pattern in cases:
        _, text, rc = build("x", flags, check=False)
        expect(rc != 0 and re.search(pattern, text) and "-fplugin-arg-tally-select" in text,
               "%s: want /%s/:\n%s" % (flags, pattern, text))
        expect("internal compiler error" not in text, "%s: ICE:\n%s" % (flags, text))
    p = run([a.tally, "select", count_only], check=False)
    expect(p.returncode == 1 and "has no measured time" in p.stderr, "tally select: %s" % p.stderr)
    for bad_pct in ("0", "101", "x", ""):
        p = run([a.tally, "select", "--percent=" + bad_pct, prof], check=False)
        expect(p.returncode == 2 and "--percent" in p.stderr,
               "tally select --percent=%s: %d %s" % (bad_pct, p.returncode, p.stderr))


def render_man(page):
    """PAGE as plain text; groff's warnings (all enabled) are a failure."""
    p = run(["groff", "-man", "-Tutf8", "-ww", "-z", page], env={"LC_ALL": "C.UTF-8"})
    expect(p.stderr == "", "groff warns about %s:\n%s" % (page, p.stderr))
    text = run(["groff", "-man", "-Tascii", "-P-cbou", page]).stdout
    # Join words the formatter hyphenated at line ends.
    return re.sub(r"(\w)-\n\s+", r"\1", text)


def check_man_pages(a, work):
    """tally(1) and tally-plugin(7) render without warnings, and describe
    every option the plugin's help lists and every command and option of
    `tally --help` and `tally run --help`, so they cannot drift silently."""
    if not shutil.which("groff"):
        raise Skip("groff is not installed")
    man = os.path.join(a.build_dir, "doc", "man")
    plugin_page = render_man(os.path.join(man, "tally-plugin.7"))
    tool_page = render_man(os.path.join(man, "tally.1"))
    version = run([a.tally, "--version"]).stdout.split()[-1]
    for page in (plugin_page, tool_page):
        expect(version in page, "the man page does not name version %s" % version)
    p = run([a.cc, "-c", "-fplugin=" + a.plugin, "-fplugin-arg-tally-help", "-x", "c",
             "/dev/null", "-o", os.path.join(work, "x.o")])
    options = re.findall(r"-fplugin-arg-tally-(\S+)", p.stderr)
    expect(len(options) >= 6, "plugin help lists %s" % options)
    missing = [o for o in options
               if not re.search(r"^ {7}%s(\s|$)" % re.escape(o), plugin_page, re.M)]
    expect(not missing, "tally-plugin(7) has no entry for these plugin options "
           "(from -fplugin-arg-tally-help): %s" % missing)
    usage = run([a.tally, "--help"]).stdout
    commands = re.findall(r"^  ([a-z]+)\b", usage.split("Commands:")[1].split("\n\n")[0], re.M)
    expect("report" in commands and "run" in commands, "commands in tally --help: %s" % commands)
    missing = [c for c in commands if not re.search(r"^ {7}%s(\s|$)" % c, tool_page, re.M)]
    expect(not missing, "tally(1) has no entry for these commands: %s" % missing)
    words = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", usage + run([a.tally, "run", "--help"]).stdout))
    missing = sorted(w for w in words if w not in tool_page)
    expect(not missing, "tally(1) does not mention these options: %s" % missing)


def check_gc_stress(a, work):
    """Every kind of instrumentation compiled with GCC's garbage collector
    run at every opportunity (ggc-min-expand=0, ggc-min-heapsize=0) and
    -fchecking: a tree the plugin holds across a collection without a root
    is freed at once, instead of only in a unit as large as sqlite3.c (where
    update=tls crashed GCC this way).  Each compile must succeed without an
    internal compiler error; the programs have longjmp, clones, threads and
    C++ classes, at -O0 and -O2."""
    T = "-fplugin-arg-tally-"
    option_sets = [
        [], [T + "hooks=call"], [T + "at=early"], [T + "hooks=call", T + "at=early"],
        [T + "update=atomic"], [T + "update=tls"], [T + "update=tls", T + "at=early"],
        [T + "blocks=count"], [T + "blocks=count", T + "at=early"],
        [T + "blocks=count", T + "update=tls", T + "hooks=none", T + "at=early"],
        [T + "blocks=count", T + "placement=block", T + "hooks=call"],
        [T + "blocks=visited"], [T + "counters=mapped"],
        [T + "counters=mapped", T + "blocks=count", T + "hooks=call"],
        [T + "measure=cycles"], [T + "measure=cycles", T + "at=early"],
        [T + "hooks=call", T + "measure=cycles", T + "paths=on"],
        [T + "hooks=call", T + "measure=cycles", T + "exit=frames"],
    ]
    # C++ without library headers (they make a collection at every
    # opportunity take 20 s a compile): classes, virtual calls, a template,
    # an exception thrown through instrumented frames.
    cxx = os.path.join(work, "gc.cc")
    with open(cxx, "w") as f:
        f.write("struct err { int v; };\n"
                "struct base { virtual ~base () {} virtual int f (int x) = 0; };\n"
                "struct d1 : base { int f (int x) override { if (x > 90) throw err{x}; return x + 1; } };\n"
                "template <typename T> T twice (T x) { return x + x; }\n"
                "static int run (base &b, int n) { int s = 0; for (int i = 0; i < n; i++) s += b.f (i); return s; }\n"
                "int main (int argc, char **) { d1 d; try { return run (d, argc * 100); }\n"
                "  catch (const err &e) { return twice (e.v) & 1; } }\n")
    progs = [("longjmp.c", a.cc), ("clones.c", a.cc), ("threads.c", a.cc), (cxx, a.cxx)]
    jobs = []
    for n, opts in enumerate(option_sets):
        for prog, cc in progs:
            if prog.endswith(".cc") and T + "exit=frames" in opts:
                continue  # refused for C++ (with a clear error, checked elsewhere)
            for opt in ("-O0", "-O2"):
                jobs.append((n, opts, prog, cc, opt))

    def compile_one(job):
        n, opts, prog, cc, opt = job
        name = os.path.basename(prog)
        p = run([cc, opt, "-fchecking", "--param", "ggc-min-expand=0",
                 "--param", "ggc-min-heapsize=0", "-fplugin=" + a.plugin, *opts,
                 "-I", a.include, "-c", os.path.join(a.srcdir, "progs", prog),
                 "-o", os.path.join(work, "gc-%d-%s%s.o" % (n, name, opt))],
                env={"LC_ALL": "C"}, check=False)
        if p.returncode == 0:
            return None
        return "%s %s %s: %s" % (name, opt, " ".join(opts), p.stderr.strip()[-600:])

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(compile_one, jobs) if f]
    expect(not failures, "%d compiles failed:\n%s" % (len(failures), "\n".join(failures)))


CHECKS = {
    "gc-stress": check_gc_stress,
    "man-pages": check_man_pages,
    "filter": check_filter,
    "select": check_select,
    "multi-runtime": check_multi_runtime,
    "version-mismatch": check_version_mismatch,
    "install": check_install,
    "plugin-errors": check_plugin_errors,
    "bad-files": check_bad_files,
    "bad-maps": check_bad_maps,
    "merge-shrink": check_merge_shrink,
    "api": check_api,
    "output-path": check_output_path,
    "tool-output": check_tool_output,
    "lcov-names": check_lcov_names,
    "lcov-huge-counts": check_lcov_huge_counts,
    "deep-paths": check_deep_paths,
    "dump-records": check_dump_records,
    "output-safety": check_output_safety,
    "secure-output": check_secure_output,
    "rank-output": check_rank_output,
    "merge-stream": check_merge_stream,
    "asan-runtime": check_asan_runtime,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=sorted(CHECKS))
    for opt in ("plugin", "runtime", "runtime-asan", "tally", "tally-asan", "include", "srcdir"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--meson", default="meson")
    ap.add_argument("--build-dir", default=".")
    a = ap.parse_args()
    return run_check(CHECKS, a.check, a, "tally-check-")


if __name__ == "__main__":
    sys.exit(main())
