"""benchmarks/bench_setup.py - the modes (how each technique builds and
runs a program) and the workloads (the programs) of benchmarks/run."""

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


# ------------------------------------------------------------------ modes

class Mode:
    """One way of building and running a program.

    group: the compiler, and so the baseline the ratios are taken against
    ("gcc" or "clang").  cflags/ldflags: on top of -O2 and the program's
    own.  support: files of benchmarks/support compiled without
    instrumentation and linked in.  tally: plugin options KEY=VAL (adds the
    plugin and its runtime); tally_optional: options added only when this
    tally accepts them.  hot: tally's filter lists only the functions
    making up 80% of the baseline's instructions.  runner: a command
    prefix that runs the binary of mode `uses` (no build of its own);
    runner_input: the input size class of its wall runs ("slow": the
    reduced one, for tools that are slow).  cachegrind: whether the
    cachegrind columns apply.  cc: the compiler (default: the group's
    name).  profile: tally's profile= from a run of the
    `tally-blocks-count` build, "cg" on the cachegrind input (the measured
    run's own profile), "other" on the workload's other input (its
    train_steps).  bolt: llvm-bolt options; the linked program is
    rewritten with them (the input keeps its name + ".pre-bolt").
    rewrites: the mode whose linked program (before its own rewrite, if
    any) this one rewrites instead of building its own (the same flags).
    wall: whether the mode gets wall-clock pairs."""

    def __init__(self, name, group, label, cflags=(), ldflags=(), support=(),
                 tally=None, tally_optional=(), hot=False, runner=None,
                 uses=None, runner_input="wall", cachegrind=True, cc=None,
                 profile=None, bolt=None, rewrites=None, wall=True):
        self.name, self.group, self.label = name, group, label
        self.cflags, self.ldflags = list(cflags), list(ldflags)
        self.support = list(support)
        self.tally = None if tally is None else list(tally)
        self.tally_optional = list(tally_optional)
        self.hot = hot
        self.runner, self.uses = runner, uses
        self.runner_input = runner_input
        self.cachegrind = cachegrind and runner is None
        self.cc = cc or group
        self.profile = profile
        self.bolt = None if bolt is None else list(bolt)
        self.rewrites = rewrites
        self.wall = wall

    @property
    def profile_from(self):
        """The mode whose run gives this one's profile."""
        return PROFILE_SOURCE if self.profile else None

    @property
    def instrumented_by_bolt(self):
        return self.bolt is not None and "-instrument" in self.bolt

    @property
    def baseline(self):
        return self.group

    @property
    def is_baseline(self):
        return self.name == self.group


def tally_modes():
    """tally's modes.  Options this tally does not know are probed and the
    mode is reported as not supported, so modes can be declared before the
    plugin has them."""
    t = []

    def add(name, label, opts, optional=(), hot=False, profile=None):
        t.append(Mode(name, "gcc", label, tally=opts, tally_optional=optional,
                      hot=hot, profile=profile))

    add("tally-inline", "entry/exit counters inline (hooks=inline at=late)",
        ["hooks=inline", "at=late"])
    add("tally-call", "entry/exit as calls into the runtime (hooks=call)",
        ["hooks=call", "at=late"])
    add("tally-early", "entry/exit inline before inlining (at=early)",
        ["hooks=inline", "at=early"])
    add("tally-atomic", "entry/exit inline, update=atomic",
        ["hooks=inline", "update=atomic"])
    add("tally-tls", "entry/exit inline, update=tls",
        ["hooks=inline", "update=tls"])
    add("tally-mapped", "entry/exit inline, counters=mapped (a bias load per update)",
        ["hooks=inline", "counters=mapped"])
    add("tally-hot", "entry/exit inline, hot functions only (80% of Ir)",
        ["hooks=inline"], hot=True)
    add("tally-cycles", "entry/exit inline, measure=cycles (rdtsc per entry and exit)",
        ["hooks=inline", "measure=cycles"])
    add("tally-cycles-call", "entry/exit as calls, measure=cycles",
        ["hooks=call", "measure=cycles"])
    # LOPI's return frames: only an entry hook; the runtime's trampoline
    # takes the return (measure=cycles; compare with tally-cycles-call and
    # tally-cycles, the same measurement with return-site exits).
    add("tally-frames", "LOPI return frames (exit=frames, hooks=call, measure=cycles)",
        ["hooks=call", "measure=cycles", "exit=frames"])
    add("tally-frames-inline", "LOPI return frames, inline entry (exit=frames, "
        "hooks=inline, measure=cycles)",
        ["hooks=inline", "measure=cycles", "exit=frames"])
    # Call paths (a tree node per call path): from call hooks and, since
    # issue 29, from inline hooks (a per-function node cache).
    add("tally-paths-call", "call paths (paths=on, hooks=call, measure=cycles)",
        ["hooks=call", "measure=cycles", "paths=on"])
    add("tally-paths-inline", "call paths from inline hooks (paths=on, "
        "hooks=inline, measure=cycles)",
        ["hooks=inline", "measure=cycles", "paths=on"])
    # Block counters: without function hooks when the plugin allows it,
    # the closest match to gcov's -fprofile-arcs.
    for blocks, updates in (("count", ("single", "atomic", "tls")),  # placement=tree
                            ("visited", ("single",))):
        for u in updates:
            add("tally-blocks-%s%s" % (blocks, "" if u == "single" else "-" + u),
                "block counters blocks=%s update=%s" % (blocks, u),
                ["blocks=" + blocks, "update=" + u], optional=["hooks=none"])
    # placement=tree (the default) counts only edges off a spanning tree,
    # as gcov does; placement=block puts a counter in every block.
    add("tally-blocks-block", "block counters, one in every block (placement=block)",
        ["blocks=count", "placement=block"], optional=["hooks=none"])
    # Before the optimisers (as gcov instruments): GCC's loop invariant
    # motion then keeps the counters of call-free loops in registers.
    add("tally-blocks-early", "block counters blocks=count at=early (before optimisation, like gcov)",
        ["blocks=count", "at=early"], optional=["hooks=none"])
    add("tally-blocks-early-tls", "block counters blocks=count at=early update=tls",
        ["blocks=count", "at=early", "update=tls"], optional=["hooks=none"])
    # profile= (issue 30): the counters placed by the counts of an earlier
    # run of tally-blocks-count instead of GCC's guess: of the measured
    # input itself (the best a profile can do), and of another input (what
    # a user with last week's profile gets).
    for blocks in ("count", "visited"):
        for src, what in (("cg", "the measured input's own"), ("other", "another input's")):
            add("tally-blocks-%s-prof%s" % (blocks, "" if src == "cg" else "-other"),
                "block counters blocks=%s placed by %s profile (profile=)" % (blocks, what),
                ["blocks=" + blocks], optional=["hooks=none"], profile=src)
    return t


# The build whose runs give the profile= modes their profiles.
PROFILE_SOURCE = "tally-blocks-count"

# LLVM BOLT rewrites a linked program: its input needs its relocations
# (--emit-relocs) and, in BOLT 19's instrumentation, no PIE.
BOLT_CFLAGS = ["-fno-pie"]
BOLT_LDFLAGS = ["-no-pie", "-Wl,--emit-relocs"]


def bolt_modes():
    """LLVM BOLT's static binary instrumentation (the seeds' binary
    rewriters: LOPI, PEBIL, Dyninst), against the same program built for
    it but not rewritten (`bolt`)."""
    def add(name, label, bolt, rewrites="bolt", **kw):
        return Mode(name, "bolt", label, cc="gcc", cflags=BOLT_CFLAGS,
                    ldflags=BOLT_LDFLAGS, bolt=bolt, rewrites=rewrites, **kw)
    return [
        Mode("bolt", "bolt", "uninstrumented gcc -O2 -fno-pie, linked -no-pie "
             "-Wl,--emit-relocs: the input of every bolt mode", cc="gcc",
             cflags=BOLT_CFLAGS, ldflags=BOLT_LDFLAGS),
        add("bolt-rewrite", "llvm-bolt without instrumentation: the program "
            "rewritten, nothing inserted (PEBIL's Figure 4)", []),
        add("bolt-instrument", "llvm-bolt -instrument: edge counters off a "
            "spanning tree, call and indirect-call counters (the defaults)",
            ["-instrument"]),
        add("bolt-instrument-conservative", "llvm-bolt -instrument "
            "-conservative-instrumentation (no counter-placement shortcuts)",
            ["-instrument", "-conservative-instrumentation"]),
        add("bolt-instrument-nocalls", "llvm-bolt -instrument "
            "-instrument-calls=false (no call or indirect-call counters)",
            ["-instrument", "-instrument-calls=false"]),
        add("bolt-instrument-sleep", "llvm-bolt -instrument "
            "-instrumentation-sleep-time=1 (a profile written every second "
            "by a forked process)",
            ["-instrument", "-instrumentation-sleep-time=1"]),
        # Both instrumenters in one process, so that their counts are of
        # the same run: the exactness comparison (bolt_exact.py).
        add("bolt-on-tally", "tally-blocks-count built for BOLT and "
            "rewritten with llvm-bolt -instrument: both counters in one run "
            "(exactness; no wall pairs)", ["-instrument"], rewrites=None,
            tally=["blocks=count"], tally_optional=["hooks=none"], wall=False),
        add("bolt-on-tally-conservative", "the same with "
            "-conservative-instrumentation (exactness; no wall pairs)",
            ["-instrument", "-conservative-instrumentation"], rewrites="bolt-on-tally",
            tally=["blocks=count"], tally_optional=["hooks=none"], wall=False),
    ]


MODES = [
    Mode("gcc", "gcc", "uninstrumented gcc -O2"),
    *tally_modes(),
    Mode("gcov", "gcc", "gcov -fprofile-arcs -fprofile-update=single",
         cflags=["-fprofile-arcs", "-fprofile-update=single"],
         ldflags=["-fprofile-arcs"]),
    Mode("gcov-atomic", "gcc", "gcov -fprofile-arcs -fprofile-update=atomic",
         cflags=["-fprofile-arcs", "-fprofile-update=atomic"],
         ldflags=["-fprofile-arcs"]),
    Mode("cyg-empty", "gcc", "-finstrument-functions, empty hooks",
         cflags=["-finstrument-functions"], support=["cyg-empty.c"]),
    Mode("cyg-count", "gcc", "-finstrument-functions, counting hooks (address hash)",
         cflags=["-finstrument-functions"], support=["cyg-count.c"]),
    # Valgrind kills a -pg program with the SIGPROF of its profiling timer.
    Mode("gprof", "gcc", "gprof -pg", cflags=["-pg"], ldflags=["-pg"],
         cachegrind=False),
    Mode("uftrace", "gcc", "uftrace record --no-libcall (on the -pg build)",
         runner=["uftrace", "record", "--no-libcall", "-d", "{scratch}/uftrace.data"],
         uses="gprof", runner_input="slow"),
    Mode("valgrind-none", "gcc", "valgrind --tool=none",
         runner=["valgrind", "-q", "--tool=none"], uses="gcc",
         runner_input="slow"),
    Mode("valgrind-lackey", "gcc", "valgrind --tool=lackey --basic-counts=yes",
         runner=["valgrind", "-q", "--tool=lackey", "--basic-counts=yes"],
         uses="gcc", runner_input="slow"),
    *bolt_modes(),
    Mode("clang", "clang", "uninstrumented clang -O2"),
    Mode("clang-8bit", "clang", "clang -fsanitize-coverage=inline-8bit-counters",
         cflags=["-fsanitize-coverage=inline-8bit-counters"], support=["sancov.c"]),
    Mode("clang-pc-guard", "clang", "clang -fsanitize-coverage=trace-pc-guard, counting callback",
         cflags=["-fsanitize-coverage=trace-pc-guard"], support=["sancov.c"]),
    Mode("clang-profile", "clang", "clang -fprofile-instr-generate",
         cflags=["-fprofile-instr-generate"], ldflags=["-fprofile-instr-generate"]),
]
MODE = {m.name: m for m in MODES}


# -------------------------------------------------------------- workloads

def input_sizes(quick, full):
    """Workload.sizes from the (wall, cg, slow) inputs of the quick and the
    full runs."""
    return {kind: dict(zip(("wall", "cg", "slow"), v))
            for kind, v in (("quick", quick), ("full", full))}


class Workload:
    """A program built from a Debian source package, and how to run it.

    sizes: per run kind ("quick"/"full"), the input of the wall-clock runs
    ("wall"), of the cachegrind runs ("cg") and of the slow tools'
    wall runs ("slow")."""
    name = prog = ""
    packages = ()
    sizes = {}

    def prepare(self, ctx):
        pass

    def sources(self, ctx):
        raise NotImplementedError

    def cflags(self, ctx):
        return []

    def libs(self, ctx):
        return []

    def steps(self, ctx, size):
        """[(argv after ./PROG, stdin path or "prev" or None)]; each step's
        stdout is the next "prev"."""
        raise NotImplementedError

    def normalise(self, data):
        return data

    def train_steps(self, ctx):
        """The steps of the workload's other input: the run the
        profile=...-other modes take their profile from, unlike the
        measured ones.  By default the smallest of its own sizes."""
        return self.steps(ctx, self.sizes[ctx.kind if ctx else "full"]["slow"])

    def describe_train(self, ctx):
        return " | ".join(" ".join(["./" + self.prog] + a) +
                          ("" if i is None else " < " + ("(previous output)" if i == "prev" else os.path.basename(i)))
                          for a, i in self.train_steps(ctx))

    def describe(self, size):
        return " | ".join(" ".join(["./" + self.prog] + a) +
                          ("" if i is None else " < " + ("(previous output)" if i == "prev" else os.path.basename(i)))
                          for a, i in self.steps(None, size))


def text_input(ctx, size):
    """A deterministic, compressible text file of `size` bytes (words from
    a fixed vocabulary and numbers chosen by an LCG), made once."""
    path = os.path.join(ctx.work, "inputs", "text-%d.txt" % size)
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    words = ("the of and to in is that for it as was with be by on not he "
             "this are or his from at which but have an they you were her "
             "she there been one all we their function counter compile "
             "instrument overhead branch cache register inline").split()
    x, out, n = 12345, [], 0
    while n < size:
        x = (x * 1103515245 + 12345) & 0x7fffffff
        w = words[(x >> 8) % len(words)] if x % 7 else str(x % 100000)
        s = w + ("\n" if x % 13 == 0 else " ")
        out.append(s)
        n += len(s)
    with open(path + ".tmp", "w") as f:
        f.write("".join(out)[:size])
    os.rename(path + ".tmp", path)
    return path


def binary_input(ctx, size):
    """Another kind of data than text_input, for the compressors' other
    input: little-endian records (a counter, a sum, a tag byte) between
    runs of bytes from an LCG, which compress badly; made once."""
    path = os.path.join(ctx.work, "inputs", "binary-%d.dat" % size)
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    out, x, i = bytearray(), 987654321, 0
    while len(out) < size:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        if (x >> 40) % 4 == 0:
            for _ in range(16 + (x >> 20) % 48):
                x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
                out.append(x >> 56)
        else:
            i += 1
            out += i.to_bytes(4, "little") + (i * 2654435761 & 0xffffffff).to_bytes(4, "little")
            out.append(97 + i % 26)
    with open(path + ".tmp", "wb") as f:
        f.write(bytes(out[:size]))
    os.rename(path + ".tmp", path)
    return path


class Micro(Workload):
    name, prog = "micro", "micro"
    sizes = input_sizes(quick=(40000, 2000, 2000), full=(100000, 5000, 2000))

    def sources(self, ctx):
        return [os.path.join(SUPPORT, "micro.c")]

    def steps(self, ctx, size):
        return [([str(size)], None)]


class Compressor(Workload):
    """A compressor built from FILES (.c) of its source package NAME; a run
    compresses a text of `size` bytes at LEVEL and decompresses it."""
    files = ()
    level = train_level = ""

    def sources(self, ctx):
        d = ctx.srcdir(self.name)
        return [os.path.join(d, f + ".c") for f in self.files]

    def steps(self, ctx, size):
        inp = text_input(ctx, size) if ctx else "text-%d.txt" % size
        return [(["-" + self.level, "-c"], inp), (["-d", "-c"], "prev")]

    def train_steps(self, ctx):
        # Binary records and random runs instead of text, at another level.
        size = self.sizes[ctx.kind if ctx else "full"]["cg"]
        inp = binary_input(ctx, size) if ctx else "binary-%d.dat" % size
        return [(["-" + self.train_level, "-c"], inp), (["-d", "-c"], "prev")]


class Bzip2(Compressor):
    name, prog = "bzip2", "bzip2"
    packages = ("bzip2",)
    sizes = input_sizes(quick=(2 << 20, 128 << 10, 64 << 10),
                        full=(8 << 20, 512 << 10, 64 << 10))
    files = ("blocksort", "huffman", "crctable", "randtable", "compress",
             "decompress", "bzlib", "bzip2")
    level, train_level = "9", "1"

    def cflags(self, ctx):
        return ["-D_FILE_OFFSET_BITS=64"]


class Gzip(Compressor):
    name, prog = "gzip", "gzip"
    packages = ("gzip",)
    sizes = input_sizes(quick=(4 << 20, 256 << 10, 128 << 10),
                        full=(8 << 20, 1 << 20, 128 << 10))
    files = ("bits", "deflate", "gzip", "inflate", "trees", "unlzh",
             "unlzw", "unpack", "unzip", "util", "zip")
    level, train_level = "6", "9"

    def cfg(self, ctx):
        return os.path.join(ctx.work, "gzip-config")

    def prepare(self, ctx):
        # Configure once (uninstrumented) for config.h, the gnulib library
        # and libver.a; each mode compiles only gzip's own files.
        cfg = self.cfg(ctx)
        if all(os.path.exists(os.path.join(cfg, f)) for f in ("libver.a", "lib/libgzip.a", "version.h")):
            return
        os.makedirs(cfg, exist_ok=True)
        log("configuring and building gzip once (log: %s/logs/gzip-config.log)" % ctx.work)
        src = ctx.srcdir("gzip")
        sh(ctx, "gzip-config", "{ [ -f Makefile ] || %s/configure -q; } && make -j%d -C lib && make version.h libver.a gzip"
           % (shlex.quote(src), JOBS), cwd=cfg)

    def cflags(self, ctx):
        cfg, src = self.cfg(ctx), ctx.srcdir("gzip")
        return ["-DHAVE_CONFIG_H", "-I" + cfg, "-I" + cfg + "/lib",
                "-I" + src, "-I" + src + "/lib"]

    def libs(self, ctx):
        cfg = self.cfg(ctx)
        return [cfg + "/libver.a", cfg + "/lib/libgzip.a"]


class Lua(Workload):
    name, prog = "lua", "lua"
    packages = ("lua5.4",)
    sizes = input_sizes(quick=(15, 1, 1), full=(30, 4, 1))

    def prepare(self, ctx):
        # Debian's luaconf.h includes a header its own build generates.
        inc = os.path.join(ctx.work, "lua-include")
        os.makedirs(inc, exist_ok=True)
        arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
        with open(os.path.join(inc, "lua5.4-deb-multiarch.h"), "w") as f:
            f.write('#define DEB_HOST_MULTIARCH "%s"\n' % arch)

    def sources(self, ctx):
        d = os.path.join(ctx.srcdir("lua5.4"), "src")
        return sorted(os.path.join(d, f) for f in os.listdir(d)
                      if f.endswith(".c") and f != "luac.c")

    def cflags(self, ctx):
        # A fixed string-hash seed, so that every run does the same work.
        return ["-I" + os.path.join(ctx.work, "lua-include"), "-DLUA_COMPAT_5_3",
                "-DLUA_USE_LINUX", "-Dluai_makeseed(L)=0u"]

    def libs(self, ctx):
        return ["-lm", "-ldl"]

    def steps(self, ctx, size):
        return [([os.path.join(HERE, "lua-workload.lua") if ctx else "benchmarks/lua-workload.lua",
                  str(size)], None)]

    def train_steps(self, ctx):
        # Another program: numeric loops, strings, coroutines, pcall.
        return [([os.path.join(HERE, "lua-train.lua") if ctx else "benchmarks/lua-train.lua",
                  "1"], None)]


class Sqlite(Workload):
    name, prog = "sqlite", "speedtest1"
    packages = ("sqlite3",)
    sizes = input_sizes(quick=(6, 1, 1), full=(20, 2, 1))

    def amalg(self, ctx):
        return os.path.join(ctx.work, "sqlite-amalg")

    def prepare(self, ctx):
        a = self.amalg(ctx)
        if all(os.path.exists(os.path.join(a, f)) and os.path.getsize(os.path.join(a, f))
               for f in ("sqlite3.c", "sqlite3.h")):
            return
        shutil.rmtree(a, ignore_errors=True)
        os.makedirs(a)
        log("generating sqlite3.c: configure && make sqlite3.c")
        sh(ctx, "sqlite-amalg", "%s/configure && make sqlite3.c"
           % shlex.quote(ctx.srcdir("sqlite3")), cwd=a)

    def sources(self, ctx):
        return [os.path.join(self.amalg(ctx), "sqlite3.c"),
                os.path.join(ctx.srcdir("sqlite3"), "test", "speedtest1.c")]

    def cflags(self, ctx):
        return ["-I" + self.amalg(ctx)]

    def libs(self, ctx):
        return ["-lm", "-lpthread", "-ldl"]

    def steps(self, ctx, size):
        return [(["--memdb", "--size", str(size)], None)]

    def train_steps(self, ctx):
        # The other test sets: key/value storage on wide tables, common
        # table expressions, floating point; not "main" (nor "trigger",
        # which needs main's tables).
        return [(["--memdb", "--testset", "orm,cte,fp", "--size", "2"], None)]

    def normalise(self, data):
        # Timings are the only run-dependent part of speedtest1's output.
        return re.sub(rb"[ .]*[0-9]+\.[0-9]+s$", b"", data, flags=re.M)


WORKLOADS = [Micro(), Bzip2(), Gzip(), Lua(), Sqlite()]
WORKLOAD = {w.name: w for w in WORKLOADS}
# Issue 3: tally's block counters next to gcov on these programs.
BLOCK_WORKLOADS = ("bzip2", "lua", "sqlite")

# cachegrind's events, and the Table 2 columns made of them.
CG_COLUMNS = [
    ("Ir", "instructions", ["Ir"]),
    ("branches", "branches", ["Bc", "Bi"]),
    ("mispredicts", "mispredicted branches", ["Bcm", "Bim"]),
    ("D1refs", "D1 refs", ["Dr", "Dw"]),
    ("D1miss", "D1 misses", ["D1mr", "D1mw"]),
    ("I1miss", "I1 misses", ["I1mr"]),
    ("LLmiss", "LL misses", ["ILmr", "DLmr", "DLmw"]),
]


