#!/usr/bin/env python3
"""Checks of the data file and the tools reading it: corrupt, truncated and
foreign files, damaged block maps, %m merges of damaged or shrinking
files, tally lcov, merge, flame and dump output, deep call paths,
tally merge of many files.

Usage: run-datafiles.py CASE --plugin P --runtime RT --tally T ...
                        (testsuite/meson.build's driver_args)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import concurrent.futures
import json
import os
import re
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib

from checklib import (block_maps, build_abc, case, expect, Failure, main, refix, report_calls, run,
                      Skip, write_file)


def valid_file(a, work):
    exe = build_abc(a, work)
    data = os.path.join(work, "good.data")
    run([exe], env={"TALLY_OUTPUT": data})
    return open(data, "rb").read()




@case("bad-files")
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
    """(whether tally report reads PATH, its stderr).  --force: a mutated
    module flag makes a record of other settings, which report reads but
    does not sum with the good one unless told to."""
    p = run([a.tally, "report", "--force", path], check=False, errors="replace")
    return p.returncode == 0, p.stderr


@case("bad-maps")
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


@case("merge-shrink")
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


@case("tool-output")
def check_tool_output(a, work):
    """`-o OUT` of tally lcov, merge and flame (tools/output.c, the
    runtime's rules): a character device or a FIFO named directly is
    written in place, never replaced by a regular file; `-o -` is standard
    output; a directory is refused; a symbolic link at OUT is refused,
    neither followed nor replaced (its target untouched), and so is one
    planted at the old predictable temporary name (OUT.tmp.PID); a regular
    OUT is replaced whole.  As root (else skipped): block devices are
    refused (one over a loop device of the test's own file, whose bytes
    must stay, and one of major 0, which no device has); in a sticky
    world-writable directory, links another user planted there (to that
    block device, to a character device, to a regular file) are refused
    and what they lead to untouched, as is a regular file another user
    owns there, while root's own is replaced; a character device or FIFO
    another user owns is refused.  Device nodes are made with mknod in
    the scratch directory, never the system's."""
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
        # -o -: standard output.
        p = subprocess.run([a.tally, *args, "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd=work)
        expect(p.returncode == 0 and len(p.stdout) == len(want[name])
               and not os.path.exists(os.path.join(work, "-")),
               "%s -o -: exit %d, %d bytes\n%s" % (name, p.returncode, len(p.stdout), p.stderr))
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
        victim = write_file(os.path.join(work, name + ".victim"), "precious\n")
        p = subprocess.run([a.tally, *args, "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: os.symlink(victim, "%s.tmp.%d" % (out, os.getpid())))
        expect(open(victim).read() == "precious\n",
               "%s -o followed the link planted at %s.tmp.PID" % (name, out))
        expect(p.returncode == 0 and stat.S_ISREG(os.lstat(out).st_mode),
               "%s -o beside a planted link: exit %d\n%s" % (name, p.returncode, p.stderr))
        # A regular OUT is replaced whole; a link at OUT is refused, its
        # target untouched and the link kept; no temporary is left behind.
        with open(out, "w") as f:
            f.write("old contents that are longer than nothing\n" * 200)
        run([a.tally, *args, "-o", out])
        if name != "merge":
            expect(open(out, "rb").read() == want[name], "%s -o over a regular file" % name)
        link = os.path.join(work, name + ".link")
        os.symlink(victim, link)
        p = run([a.tally, *args, "-o", link], check=False)
        expect(p.returncode == 1 and "cannot write %s: it is a symbolic link (not followed, not replaced)"
               % link in p.stderr, "%s -o LINK: exit %d\n%s" % (name, p.returncode, p.stderr))
        expect(open(victim).read() == "precious\n" and os.path.islink(link),
               "%s -o LINK wrote through the link or replaced it" % name)
        left = [f for f in os.listdir(work) if ".tmp." in f and not os.path.islink(os.path.join(work, f))]
        expect(not left, "temporaries left behind: %s" % left)
    if not dev:
        raise Skip("(not root: the device, sticky-directory and other-owner cases were not run; "
                   "the FIFO, directory and link cases passed)")
    untrusted_targets(a, work, commands, victim)


def untrusted_targets(a, work, commands, victim):
    """tool-output's root part: block devices, links planted by another
    user in a sticky directory, files and devices of another user."""
    nobody = 65534
    image = os.path.join(work, "disk.img")
    pattern = bytes(range(256)) * 4096  # 1 MiB
    with open(image, "wb") as f:
        f.write(pattern)
    # A block device of no device at all (major 0), always; and one over a
    # loop device of our own image, where losetup can make one.
    blocks = [os.path.join(work, "blk0")]
    os.mknod(blocks[0], 0o600 | stat.S_IFBLK, os.makedev(0, 0))
    loop = None
    p = run(["losetup", "--find", "--show", image], check=False)
    if p.returncode == 0 and p.stdout.strip().startswith("/dev/loop"):
        loop = p.stdout.strip()
    try:
        if loop:
            blocks.append(os.path.join(work, "blk"))
            os.mknod(blocks[1], 0o600 | stat.S_IFBLK, os.stat(loop).st_rdev)

        def loop_intact(what):
            if not loop:
                return
            with open(blocks[1], "rb") as f:
                head = f.read(65536)
            expect(head == pattern[:65536], "%s: the loop device's first bytes changed" % what)

        shared = os.path.join(work, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        chr_dev = os.path.join(work, "null")
        planted = {}
        for k, target in enumerate(blocks + [chr_dev, victim]):
            link = os.path.join(shared, "planted%d" % k)
            os.symlink(target, link)
            os.lchown(link, nobody, nobody)
            planted[link] = target
        theirs = write_file(os.path.join(shared, "theirs"), "their file\n")
        os.chown(theirs, nobody, nobody)
        their_chr = os.path.join(work, "their-null")
        os.mknod(their_chr, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chown(their_chr, nobody, nobody)
        their_fifo = os.path.join(work, "their-fifo")
        os.mkfifo(their_fifo)
        os.chown(their_fifo, nobody, nobody)
        for name, args in commands.items():
            def refused(out, why):
                p = run([a.tally, *args, "-o", out], check=False, timeout=60)
                msg = "cannot write %s: %s" % (out, why)
                expect(p.returncode == 1 and msg in p.stderr,
                       "%s -o %s: exit %d, want %r in:\n%s" % (name, out, p.returncode, msg, p.stderr))
            for blk in blocks:
                refused(blk, "it is a block device")
                expect(stat.S_ISBLK(os.lstat(blk).st_mode), "%s -o replaced %s" % (name, blk))
            loop_intact("%s -o BLOCK" % name)
            for link, target in planted.items():
                refused(link, "it is a symbolic link")
                expect(os.path.islink(link), "%s -o replaced the planted link %s" % (name, link))
            loop_intact("%s -o LINK-TO-BLOCK" % name)
            expect(open(victim).read() == "precious\n", "%s -o a planted link wrote its target" % name)
            refused(theirs, "it is owned by another user (uid %d), in a directory others can write to"
                    % nobody)
            expect(open(theirs).read() == "their file\n", "%s -o replaced another user's file" % name)
            refused(their_chr, "it is a character device owned by another user (uid %d)" % nobody)
            refused(their_fifo, "it is a FIFO owned by another user (uid %d)" % nobody)
            mine = write_file(os.path.join(shared, name + ".mine"), "old\n")
            run([a.tally, *args, "-o", mine])
            expect(open(mine, "rb").read() != b"old\n" and os.lstat(mine).st_uid == os.geteuid(),
                   "%s -o over root's own file in the sticky directory did not replace it" % name)
    finally:
        if loop:
            run(["losetup", "-d", loop], check=False)
    if loop:
        expect(open(image, "rb").read() == pattern, "the loop device's image changed")


@case("lcov-names")
def check_lcov_names(a, work):
    """A source file whose name holds a line break cannot inject records
    into `tally lcov`'s tracefile (lcov has no escapes): its record is left
    out with a message naming it escaped, exit status 1, and the other
    files' records are written as usual."""
    evil = write_file(os.path.join(work, "evil\nDA:1,99\nx.c"),
                      "int f (int x) { return x > 3 ? x : -x; }\n")
    good = write_file(os.path.join(work, "good.c"),
                      "int f (int);\n"
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


@case("json-names")
def check_json_names(a, work):
    """A source file named with DEL and a byte that is not UTF-8 gives valid
    JSON (UTF-8, no raw control character) from report --json, report
    --ranks --json and diff --json: the bytes escaped as \\u00XX and the
    name read back from the reports."""
    name = b"ev\x7fil\xff.c"
    evil = os.path.join(work.encode(), name)
    with open(evil, "wb") as f:
        f.write(b"int f (int x) { return x + 1; }\n")
    good = write_file(os.path.join(work, "m.c"),
                      "int f (int);\nint main (void) { return f (0) - 1; }\n")
    exe = os.path.join(work, "prog")
    run([a.cc, "-O0", "-fplugin=" + a.plugin, os.fsdecode(evil), good, "-o", exe, a.runtime])
    data = os.path.join(work, "prog.data")
    run([exe], env={"TALLY_OUTPUT": data})
    for args in (["report", "--json", data], ["report", "--ranks", "--json", data],
                 ["diff", "--json", data, data]):
        p = subprocess.run([a.tally] + args, stdout=subprocess.PIPE, check=True)
        what = " ".join(args[:-1] if args[0] != "diff" else args[:2])
        try:
            text = p.stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Failure("%s: output is not UTF-8 (%s)" % (what, e))
        raw = sorted({c for c in text if ord(c) < 0x20 and c not in "\n" or ord(c) == 0x7f})
        expect(not raw, "%s: raw control characters %r in the output" % (what, raw))
        doc = json.loads(text)
        if args[0] == "diff":
            continue  # the two files are equal: diff lists no function
        expect("ev\x7fil\xff.c" in json.dumps(doc, ensure_ascii=False),
               "%s: the escaped name is not in the output:\n%s" % (what, text))


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


@case("lcov-huge-counts")
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
    # Line 1: two functions whose counts gcov adds up (as lcov does),
    # each run 3 times: 6; line 2: three such functions: 9.  Line 6:
    # a loop on one line (entry plus 3 cycles).
    src = write_file(os.path.join(work, "loops.c"),
                     "static int f1 (int x) { return x + 1; } static int f2 (int x) { return x * 2; }\n"
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


@case("deep-paths")
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


@case("dump-records")
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


@case("merge-stream")
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



if __name__ == "__main__":
    sys.exit(main("tally-check-"))
