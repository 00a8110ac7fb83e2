"""What the test drivers (testsuite/run-*.py) share: the named-case
registry and the driver's main, failures and skips, running commands,
building with the plugin, running a program into a data file and reading
`tally report` back.

A driver is a list of named cases:

    from checklib import case, expect, main

    @case("api")
    def check_api(a, work):
        ...

    if __name__ == "__main__":
        sys.exit(main("tally-check-"))

main() parses the command line meson gives every driver (the case name
and the paths of testsuite/meson.build's `driver_args`), makes a scratch
directory WORK, calls the case with the parsed options A, and returns
meson's exit status: 0 pass, 1 fail (Failure), 77 skip (Skip, with the
reason printed)."""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


class Failure(Exception):
    pass


class Skip(Exception):
    pass


# A program whose leaf (two arguments, no call) runs 2000 times through
# mid (1000 calls): the leaf whose disassembly run-hookperf.py and
# run-cycles.py inspect.
LEAF_C = r"""
#include <stdio.h>
__attribute__ ((noinline)) int leaf (int a, int b) { return a * b + 3; }
__attribute__ ((noinline)) int mid (int a) { return leaf (a, a + 1) + leaf (a, 2); }
int main (int argc, char **argv)
{
  (void) argv;
  long s = 0;
  for (int i = 0; i < 1000; i++)
    s += mid (i + argc);
  printf ("%ld\n", s);
  return 0;
}
"""


# A C leaf with six integer and eight floating-point arguments, and
# want (i), the value leaf (i, i + 1, ..., i + 5, i, i + .5, ..., i + 3.5)
# must return: a register a hook or the runtime failed to keep changes it
# (run-hookperf.py and run-cycles.py build their programs around it).
REGS_LEAF_C = r"""
#include <pthread.h>
#include <stdio.h>
__attribute__ ((noinline)) double
leaf (long a, long b, long c, long d, long e, long f, double x0, double x1,
      double x2, double x3, double x4, double x5, double x6, double x7)
{
  return (double) (a * 3 + b * 5 + c * 7 + d * 11 + e * 13 + f * 17)
         + x0 * 2 + x1 * 3 + x2 * 5 + x3 * 7 + x4 * 11 + x5 * 13 + x6 * 17
         + x7 * 19;
}
static double want (long i)
{
  double d = (double) i;
  return (double) (i * 3 + (i + 1) * 5 + (i + 2) * 7 + (i + 3) * 11
                   + (i + 4) * 13 + (i + 5) * 17)
         + d * 2 + (d + .5) * 3 + (d + 1) * 5 + (d + 1.5) * 7 + (d + 2) * 11
         + (d + 2.5) * 13 + (d + 3) * 17 + (d + 3.5) * 19;
}
"""


def regs_body_c(attrs=""):
    """The thread body of the programs around REGS_LEAF_C's leaf:
    body (base) calls leaf for i = base .. base + 999 and counts in bad
    the results that differ from want (i); body_threads () runs it in
    four threads, from 0, 100000, 200000 and 300000.  ATTRS (with its
    trailing space) come before both definitions."""
    return r"""
static long bad;
%sstatic void *body (void *arg)
{
  long base = (long) arg;
  for (long i = base; i < base + 1000; i++)
    {
      double d = (double) i;
      double r = leaf (i, i + 1, i + 2, i + 3, i + 4, i + 5, d, d + .5, d + 1,
                       d + 1.5, d + 2, d + 2.5, d + 3, d + 3.5);
      if (r != want (i))
        __atomic_fetch_add (&bad, 1, __ATOMIC_RELAXED);
    }
  return 0;
}
%sstatic void body_threads (void)
{
  pthread_t t[4];
  for (long k = 0; k < 4; k++)
    pthread_create (&t[k], 0, body, (void *) (k * 100000));
  for (int k = 0; k < 4; k++)
    pthread_join (t[k], 0);
}
""" % (attrs, attrs)


# The registry of named cases: {meson case name: function(a, work)}.
CASES = {}


def case(name):
    """Register the decorated function as the case NAME (the name
    testsuite/meson.build passes)."""
    def register(fn):
        if name in CASES:
            raise ValueError("case %s registered twice" % name)
        CASES[name] = fn
        return fn
    return register


def run(cmd, env=None, check=True, **kw):
    """Run CMD with text output captured.  TALLY_OUTPUT and TALLY_DUMP_ON
    are not inherited, so a developer's settings cannot change a test; ENV
    adds to the environment.  CHECK: a non-zero exit is a Failure."""
    full = dict(os.environ)
    full.pop("TALLY_OUTPUT", None)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env or {})
    p = subprocess.run(cmd, env=full, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, **kw)
    if check and p.returncode != 0:
        raise Failure("command failed (%d): %s\n%s%s"
                      % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def need_tools(*tools):
    """Skip unless every one of TOOLS is on the PATH."""
    for tool in tools:
        if not shutil.which(tool):
            raise Skip("(%s not installed)" % tool)


def disasm_function(exe, func, clones=False):
    """The instruction lines of FUNC in `objdump -d` of EXE (CLONES: the
    first body named FUNC or FUNC.something)."""
    dis = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    m = re.search(r"^[0-9a-f]+ <%s%s.*?:\n(.*?)(?:\n\n|\Z)" % (re.escape(func), "[.>]" if clones else ">"),
                  dis, re.S | re.M)
    expect(m, "no function %s in the disassembly of %s" % (func, exe))
    return m.group(1).splitlines()


def disasm_insns(exe, func):
    """The instructions of FUNC in EXE, one string each (no addresses)."""
    return [l.split(":", 1)[1].strip() for l in disasm_function(exe, func) if ":" in l]


def disasm_loops(exe, func, clones=False, conditional=False):
    """The instructions of FUNC's loops in EXE's disassembly: those between a
    backward jump (CONDITIONAL: a conditional one, the latch of a rotated
    loop) and its target."""
    insns = []
    for line in disasm_function(exe, func, clones):
        x = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if x:
            insns.append((int(x.group(1), 16), x.group(2)))
    found = []
    for addr, text in insns:
        j = re.match(r"j(?!mp)\w+\s+([0-9a-f]+) <" if conditional else r"j\w+\s+([0-9a-f]+) <", text)
        if j and int(j.group(1), 16) <= addr:
            lo = int(j.group(1), 16)
            found.append([t for x, t in insns if lo <= x <= addr])
    expect(found, "%s has no loop in %s" % (func, exe))
    return found


def block_counts(a, exe, work, args):
    """{symbol: [count or None, ...]} of `report --blocks` of one run of EXE
    with ARGS (its own data file in WORK)."""
    data = os.path.join(work, "%s-%s.data" % (os.path.basename(exe), "-".join(args)))
    if os.path.exists(data):
        os.unlink(data)
    run([exe, *args], env={"TALLY_OUTPUT": data})
    return {sym: [b.get("count") for b in blocks]
            for sym, blocks in block_report(a.tally, data).items()}


def exact_as_block_placement(a, work, build, levels, inputs, variants):
    """At each optimisation level of LEVELS, every variant of VARIANTS
    ((name, label, plugin options), ...), built by BUILD (a, work, name,
    opt, options), counts every block on each input of INPUTS as the build
    with a counter in every block (placement=block) does."""
    for opt in levels:
        ref = build(a, work, "block-" + opt, opt, ["blocks=count", "placement=block"])
        exes = [(label, build(a, work, "%s-%s" % (name, opt), opt, opts))
                for name, label, opts in variants]
        for n in inputs:
            want = block_counts(a, ref, work, [n])
            for label, exe in exes:
                same_counts("-%s %s, N=%s" % (opt, label, n),
                            block_counts(a, exe, work, [n]), want)


def same_counts(what, got, want):
    """Fail unless GOT and WANT ({symbol: counts}) have the same functions
    and the same counts in each; WANT is the oracle's."""
    expect(set(got) == set(want), "%s: functions %s, the oracle has %s"
           % (what, sorted(got), sorted(want)))
    for sym in sorted(want):
        expect(got[sym] == want[sym], "%s: %s counts %s, the oracle "
               "counts %s" % (what, sym, got[sym], want[sym]))


def block_report(tally, data):
    """{symbol: [block, ...]} of `tally report --json --blocks DATA` (each
    block a dict of the JSON); a report without block counts fails."""
    out = run([tally, "report", "--json", "--blocks", data]).stdout
    got = {}
    for fn in json.loads(out)["functions"]:
        for body in fn.get("blocks", []):
            got[body["symbol"]] = body["blocks"]
    expect(got, "no block counts in %s" % data)
    return got


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


def write_file(path, text):
    """Write TEXT to PATH; returns PATH."""
    with open(path, "w") as f:
        f.write(text)
    return path


def plain_quotes(text):
    """GCC's diagnostics with its typographic quotes made plain."""
    return text.replace("\u2018", "'").replace("\u2019", "'")


# Building.

def tally_opts(*opts):
    """-fplugin-arg-tally-OPT of each "OPT" ("hooks=call", "at=early")."""
    return ["-fplugin-arg-tally-" + o for o in opts]


# The plugin options that change what the inserted code updates, and
# their values: a suite that claims to cover the combinations of some of
# them takes them from matrix(), so that none is left out unless it says so.
PLUGIN_AXES = {
    "hooks": ("inline", "call", "none"),
    "update": ("single", "atomic", "tls"),
    "placement": ("tree", "block"),
    "blocks": ("count", "visited"),
    "at": ("early", "late"),
    "exit": ("returns", "frames"),
}


def matrix(*axes, leave_out=None):
    """Every combination of the values of AXES (names of PLUGIN_AXES), as
    lists of plugin options ["hooks=call", "update=tls", ...], in a fixed
    order.  LEAVE_OUT: {reason: predicate(dict of the combination)}: the
    combinations a predicate is true of are left out, and the case prints
    each reason with how many it left out, so a reader of the log sees what
    was not run."""
    import itertools
    combos, left = [], {}
    for values in itertools.product(*(PLUGIN_AXES[x] for x in axes)):
        c = dict(zip(axes, values))
        why = next((r for r, p in (leave_out or {}).items() if p(c)), None)
        if why:
            left[why] = left.get(why, 0) + 1
        else:
            combos.append(["%s=%s" % kv for kv in c.items()])
    for why, n in left.items():
        print("left out %d of the %s combinations: %s" % (n, " x ".join(axes), why))
    return combos


def gcov_of(a):
    """The gcov of the C compiler the tests use (gcc-14 -> gcov-14): line
    counts follow the rules of the GCC that compiled them."""
    d, b = os.path.split(a.cc)
    m = re.fullmatch(r"(.*?)(?:gcc|cc)(-\d+)?", b)
    if not m:
        return "gcov"
    name = m.group(1) + "gcov" + (m.group(2) or "")
    return os.path.join(d, name) if d else name


def lcov_branches():
    """lcov's option turning branch data on: lcov 2 renamed the rc key
    (lcov_branch_coverage=1 is an error there), lcov 1 knows only the old
    name."""
    out = subprocess.run(["lcov", "--version"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True).stdout
    m = re.search(r"version (\d+)", out)
    key = "branch_coverage" if m and int(m.group(1)) >= 2 else "lcov_branch_coverage"
    return ["--rc", key + "=1"]


def compiler(a, src, cxx=None):
    """The C++ compiler for a .cc source (or when CXX), the C one else."""
    return a.cxx if (src.endswith(".cc") if cxx is None else cxx) else a.cc


def shared_runtime(a):
    """Link arguments of the shared runtime beside the static one."""
    rt_dir = os.path.dirname(a.runtime)
    return ["-L" + rt_dir, "-ltally-rt", "-Wl,-rpath," + rt_dir]


def build(a, exe, sources, flags=(), opt="-O2", link=(), runtime=None, libs=(), cxx=None):
    """Compile and link SOURCES into EXE with the plugin: OPT, FLAGS (compiler
    and -fplugin-arg- flags) before the sources; after them LINK, the
    runtime's link arguments RUNTIME (the static runtime by default), then
    LIBS.  The C++ compiler when the first source is C++ (or CXX says so).
    Returns EXE."""
    if isinstance(sources, str):
        sources = [sources]
    run([compiler(a, sources[0], cxx), opt, "-fplugin=" + a.plugin, *flags,
         *sources, "-o", exe, *link, *(runtime or [a.runtime]), *libs])
    return exe


def build_abc(a, work, runtime=None, extra=()):
    """progs/s-abc.c at -O2 with the plugin and EXTRA, as WORK/abc."""
    return build(a, os.path.join(work, "abc"), os.path.join(a.srcdir, "progs", "s-abc.c"),
                 link=extra, runtime=[runtime or a.runtime])


# Running and reading the data file back.

def run_data(exe, data, args=(), env=None, **kw):
    """Run EXE writing the data file DATA; returns the completed process."""
    return run([exe, *args], env=dict(env or {}, TALLY_OUTPUT=data), **kw)


def data_of(exe, args=()):
    """Run EXE writing EXE.data; returns that file's bytes."""
    data = exe + ".data"
    run_data(exe, data, args)
    with open(data, "rb") as f:
        return f.read()


def report_json(a, *args, env=None):
    """`tally report --json ARGS` (data files and options), parsed."""
    return json.loads(run([a.tally, "report", "--json", *args], env=env).stdout)


def report_rows(a, *args):
    """The per-function objects of `tally report --json ARGS`, by name."""
    return {f["name"]: f for f in report_json(a, *args)["functions"]}


def report_csv(a, *args, sum_clones=False):
    """({function: (entries, exits)}, stderr) of `tally report --csv ARGS`.
    SUM_CLONES: rows of one name add up (else the last one is kept)."""
    p = run([a.tally, "report", "--csv", *args])
    res = {}
    for line in p.stdout.splitlines()[1:]:
        f = line.split(",")
        got = (int(f[0]), int(f[1]))
        if sum_clones and f[2] in res:
            got = (res[f[2]][0] + got[0], res[f[2]][1] + got[1])
        res[f[2]] = got
    return res, p.stderr


def report_calls(a, *args):
    """{function: (entries, exits)} of `tally report --csv ARGS`."""
    return report_csv(a, *args)[0]


# The driver's main.

def run_check(checks, name, args, prefix):
    """Run checks[NAME](ARGS, WORK) in a fresh scratch directory WORK and
    return the exit status for meson."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        return outcome(name, lambda: checks[name](args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def outcome(name, fn):
    """Call FN and say how the case NAME went: meson's exit status."""
    try:
        fn()
        print("ok:", name)
        return 0
    except Failure as e:
        print("FAIL: %s\n%s" % (name, e))
        return 1
    except Skip as e:
        print("skipped: %s %s" % (name, e))
        return 77


# The options of every driver (testsuite/meson.build's driver_args); those
# naming files are made absolute.
PATH_OPTIONS = ("plugin", "runtime", "runtime-asan", "runtime-papi", "runtime-shared",
                "runtime-noblob",
                "tally", "tally-asan", "tally-mpi", "include", "srcdir", "examples",
                "build-dir", "corpus-dir")


def parse_args(cases, extra_modes=()):
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=sorted(cases) + list(extra_modes))
    for opt in PATH_OPTIONS:
        ap.add_argument("--" + opt)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--meson", default="meson")
    ap.add_argument("--papi", default="0", help="1 if the runtime has PAPI")
    ap.add_argument("--unwind", default="0", help="1 if the runtime has libunwind")
    a = ap.parse_args()
    for opt in PATH_OPTIONS:
        attr = opt.replace("-", "_")
        if getattr(a, attr):
            setattr(a, attr, os.path.abspath(getattr(a, attr)))
    if a.include is None and a.srcdir:
        a.include = os.path.join(os.path.dirname(a.srcdir), "include")
    if a.build_dir is None:
        a.build_dir = os.path.abspath(".")
    return a


def main(prefix, modes=None):
    """Run the case the command line names (or one of MODES, {name:
    function(a)}, commands that are not tests); return the exit status."""
    a = parse_args(CASES, modes or {})
    if modes and a.check in modes:
        return modes[a.check](a)
    return run_check(CASES, a.check, a, prefix)


def crc_mulmod(a, b):
    """A times B modulo the CRC-32 polynomial, bit-reflected (x^0 is bit
    31), one bit at a time: what the runtime's CRC combining computes."""
    p = 0
    for i in range(32):
        if a & (1 << (31 - i)):
            p ^= b
        b = (b >> 1) ^ (0xEDB88320 if b & 1 else 0)
    return p


def callgrind_ir(exe, fn, work, env=None, args=()):
    """Inclusive instructions of FN in one run of EXE (callgrind)."""
    out = os.path.join(work, "cg-%s.out" % os.path.basename(exe))
    run(["valgrind", "--tool=callgrind", "--toggle-collect=" + fn,
         "--callgrind-out-file=" + out, exe, *args], env=env or {})
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise Failure("no totals in callgrind's output")


def callgrind_calls(out_file):
    """Calls per callee symbol from an uncompressed callgrind output file."""
    calls = {}
    cfn = None
    with open(out_file, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                cfn = line[4:].strip()
                cfn = re.sub(r"'\d+$", "", cfn)  # recursion level suffix
            elif line.startswith("calls=") and cfn is not None:
                calls[cfn] = calls.get(cfn, 0) + int(line[6:].split()[0])
                cfn = None
    return calls


def callgrind_executed(profile, addrs):
    """{address: executions} of the instructions at ADDRS, from callgrind's
    --dump-instr=yes output PROFILE (positions "instr line", compressed as
    +N, -N, * or absolute; the line after calls= is a call's inclusive
    cost, not an execution)."""
    got, pos, after_call = {}, 0, False
    for line in open(profile):
        if line.startswith("calls="):
            after_call = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        f = line.split()
        p = f[0]
        if p.startswith("0x"):
            pos = int(p, 16)
        elif p[0] == "+":
            pos += int(p[1:])
        elif p[0] == "-":
            pos -= int(p[1:])
        elif p != "*":
            pos = int(p)
        if after_call:
            after_call = False
            continue
        if pos in addrs and len(f) > 2:
            got[pos] = got.get(pos, 0) + int(f[2])
    return got


# Damaging data files on purpose.

def refix(d):
    """Data file D with its trailer's CRC recomputed, so that only the
    deliberate damage is seen."""
    body = d[:-16]
    return body + d[-16:-12] + struct.pack("<I", zlib.crc32(body)) + d[-8:]


def parse_map_v1(d, off):
    """(kind offset, [(block value offset, flags offset)], [(src, dst,
    flags, value)]) of the version 1 block map at OFF of D."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    nblocks, nedges, nfiles = u32(off + 8), u32(off + 12), u32(off + 16)
    pos = off + 20
    for _ in range(nfiles):
        pos += 4 + u32(pos)
    blks = []
    for _ in range(nblocks):
        blks.append((pos, pos + 4))
        pos += 12 + 8 * u32(pos + 8)
    edges = []
    for _ in range(nedges):
        edges.append((u32(pos), u32(pos + 4), u32(pos + 8), u32(pos + 12)))
        pos += 16
    return off + 4, blks, edges


# What tally says of a map whose visited value is derived from itself.
CYCLE = r"block \d+: its visited value is derived from itself"


def damage_first_map(d, kinds, change):
    """Data file D with the first version 1 block map whose kind is one of
    KINDS damaged by CHANGE (kind offset, blocks, edges as parse_map_v1
    gives them, PUT (offset, u32) writing into the copy), CRC fixed; a map
    where CHANGE returns False has nothing to damage, and the next is
    tried.  None where no map could be damaged."""
    u32 = lambda o: struct.unpack_from("<I", d, o)[0]
    for off, _ in block_maps(d):
        kind, blks, edges = parse_map_v1(d, off)
        if u32(kind) not in kinds:
            continue
        out = bytearray(d)
        put = lambda o, v: out.__setitem__(slice(o, o + 4), struct.pack("<I", v))
        if change(kind, blks, edges, put) is not False:
            return refix(bytes(out))
    return None


def derive_cycle(blks, edges, put):
    """Damage a version 1 map (parse_map_v1's BLKS and EDGES; PUT (offset,
    u32) writes): the two ends of its first normal edge between real
    blocks without a value of its own (an edge with one, kind 5, would not
    make a cycle) derived from each other, the source from its
    successors, the destination from its predecessors.  False if it has
    no such edge."""
    pair = [(s, t) for s, t, f, v in edges
            if s >= 2 and t >= 2 and s != t and not f & 1 and v == 0xffffffff]
    if not pair:
        return False
    s, t = pair[0]
    put(blks[s][0], 0xffffffff)
    put(blks[s][1], 2)
    put(blks[t][0], 0xffffffff)
    put(blks[t][1], 4)
    return True
