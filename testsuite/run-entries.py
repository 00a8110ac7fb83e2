#!/usr/bin/env python3
"""Entry counts from the callers' blocks (entries=callers, issue 16 target
1): plugin/callers.cc and block map kind 6, checked on
testsuite/callers/sites.c (local functions called from one block twice,
along a chain, from a loop, a cold block and a setjmp'd block; a longjmp
out of a callee; a self-recursive and two mutually recursive functions, a
function whose address is taken, one kept with `used`, one called from a
no_instrument_function caller).

Checks (one per run, named on the command line):
  which       -O2: the functions whose every call is known and made by an
              instrumented function of the unit, on no cycle, have maps of
              kind 6 and (leaves) no counter but the core two; the visible,
              address-taken, `used`, and uninstrumented-caller ones keep
              their entry counter, and so does one of two mutually
              recursive functions; entries=counted, placement=block,
              at=early, blocks=visited and a filter with min-statements give
              no kind 6 at all.
  exact       -O0 to -O3 and -Os, N = 0, 1, 100: every block count of every
              function equals entries=counted's and placement=block's, and
              with update=atomic, update=tls and counters=mapped too (-O2).
  callgrind   -O1 to -O3: every function's calls (derived from its callers'
              blocks where the map is kind 6) equal valgrind's callgrind
              call counts.
  fewer       -O2: the kind-6 build has fewer counters than entries=counted's
              and runs fewer counter increments (the counters' sum).
  option      a bad entries= value is a GCC error naming the option and the
              accepted values.
  merge-force tally merge --force of two builds whose main differs: main's
              map is dropped, so the functions whose calls are all in main
              get an incomplete callers trailer (calls undetermined, said),
              the file stays readable, and a function whose callers did not
              change keeps its calls summed; main, whose blocks differ,
              keeps its calls (solved on each side) without its blocks.
  tails       -O2, testsuite/callers/tails.c: blocks=count keeps the
              plain build's tail call to a function that always returns (a
              jump) and makes calls of those to strtoul and to a function
              with a loop (a counter follows them); hooks=inline makes
              every one a call; at -O1 to -O3 its block counts equal
              placement=block's and its calls callgrind's.
  mid-dump    -O0 to -O3: a tally_dump() made inside the 51st of 100 calls
              of a function whose entry comes from its caller's block
              counts 50 or 51 calls of it (doc/guarantees.md: the running
              call may be missing or counted ahead), the exit dump 100.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import os
import re
import shutil
import sys

from checklib import (Skip, block_counts, callgrind_calls, case, exact_as_block_placement,
                      expect, main, run, same_counts, write_file)

LEVELS = ["O0", "O1", "O2", "O3", "Os"]
INPUTS = ["0", "1", "100"]
DERIVED = {"twice", "chain_b", "chain_c", "loop_first", "may_die", "in_cold",
           "clone_me", "dumper"}
COUNTED = {"leaf", "from_skipped", "chain_a", "main", "by_pointer", "kept"}


def program(a, name="sites.c"):
    return os.path.join(a.srcdir, "callers", name)


def build(a, work, name, opt, opts, extra=(), src="sites.c"):
    exe = os.path.join(work, name)
    cmd = [a.cc, "-" + opt, "-I" + a.include, "-fplugin=" + a.plugin]
    cmd += ["-fplugin-arg-tally-" + o for o in opts] + list(extra)
    cmd += [program(a, src), "-o", exe, a.runtime]
    run(cmd)
    return exe


def dump_of(a, exe, work, n="100"):
    """{symbol: (map kind, counters)} of one run of EXE, from tally dump."""
    data = os.path.join(work, os.path.basename(exe) + ".dump.data")
    if os.path.exists(data):
        os.unlink(data)
    run([exe, n], env={"TALLY_OUTPUT": data})
    out = run([a.tally, "dump", data]).stdout
    fns, sym = {}, None
    for line in out.splitlines():
        m = re.match(r'  fn \d+ name="[^"]*" symbol="([^"]*)".* counters=\d+:'
                     r'((?: \d+)*)$', line)
        if m:
            sym = m.group(1)
            fns[sym] = [None, [int(v) for v in m.group(2).split()]]
            continue
        m = re.match(r"    map \d+ bytes kind=([\w-]+) ", line)
        if m and sym:
            fns[sym][0] = m.group(1)
    return fns


def origin(sym):
    return re.sub(r"\.(constprop|isra|part)\.\d+$", "", sym)


@case("which")
def check_which(a, work):
    fns = dump_of(a, build(a, work, "o2", "O2", ["blocks=count"]), work)
    kinds = {origin(s): k for s, (k, _) in fns.items()}
    for f in sorted(DERIVED):
        expect(kinds.get(f) == "tree-callers", "%s: map kind %s, not "
               "tree-callers (every call known, callers instrumented)"
               % (f, kinds.get(f)))
    for f in sorted(COUNTED):
        expect(kinds.get(f) == "tree", "%s: map kind %s, not tree (its "
               "entry cannot come from its callers)" % (f, kinds.get(f)))
    expect("tree" in (kinds.get("ping"), kinds.get("pong")),
           "ping and pong, which call each other, both take their entries "
           "from their callers (%s, %s): a cycle"
           % (kinds.get("ping"), kinds.get("pong")))
    for s, (k, counters) in fns.items():
        if origin(s) in ("twice", "in_cold"):
            expect(len(counters) == 2, "%s: %d counters, a leaf whose entry "
                   "comes from its callers needs none but the core two"
                   % (s, len(counters)))
    others = [(["blocks=count", "entries=counted"], ()),
              (["blocks=count", "placement=block"], ()),
              (["blocks=count", "at=early"], ()),
              (["blocks=visited"], ())]
    flt = write_file(os.path.join(work, "min.filter"), "min-statements 1\n")
    others.append((["blocks=count", "filter=" + flt], ()))
    for i, (opts, extra) in enumerate(others):
        fns = dump_of(a, build(a, work, "other%d" % i, "O2", opts, extra), work)
        bad = sorted(s for s, (k, _) in fns.items() if k == "tree-callers")
        expect(not bad, "%s: kind 6 maps for %s" % (" ".join(opts), bad))


@case("exact")
def check_exact(a, work):
    exact_as_block_placement(a, work, build, LEVELS, INPUTS, (
        ("counted", "entries=counted", ["blocks=count", "entries=counted"]),
        ("tree", "entries=callers", ["blocks=count"])))
    want = block_counts(a, os.path.join(work, "block-O2"), work, ["100"])
    for opts in (["update=atomic"], ["update=tls"], ["counters=mapped"],
                 ["hooks=call"]):
        exe = build(a, work, "o2-" + opts[0].replace("=", "-"), "O2",
                    ["blocks=count"] + opts)
        same_counts("-O2 " + opts[0], block_counts(a, exe, work, ["100"]),
                    want)


def same_calls_as_callgrind(a, work, exe, tag):
    """Every function's calls in a run of EXE 100 equal callgrind's."""
    cg = os.path.join(work, "callgrind-" + tag)
    data = os.path.join(work, "cg-%s.data" % tag)
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg,
         "--compress-strings=no", "--compress-pos=no", "--demangle=no",
         exe, "100"], env={"TALLY_OUTPUT": data})
    calls = callgrind_calls(cg)
    out = run([a.tally, "report", "--clones", "--csv", data]).stdout
    lines = out.splitlines()
    head = lines[0].split(",")
    got = {}
    for line in lines[1:]:
        row = dict(zip(head, line.split(",")))
        got[row["symbol"]] = int(row["calls"])
    kinds = {s: k for s, (k, _) in dump_of(a, exe, work).items()}
    for sym, n in sorted(got.items()):
        expect(n == calls.get(sym, 0), "%s: %s (%s): %d calls, callgrind "
               "counts %d" % (tag, sym, kinds.get(sym), n, calls.get(sym, 0)))
    return kinds


@case("callgrind")
def check_callgrind(a, work):
    if not shutil.which("valgrind"):
        raise Skip("(valgrind not installed)")
    for opt in ("O1", "O2", "O3"):
        exe = build(a, work, "cg-" + opt, opt, ["blocks=count"])
        kinds = same_calls_as_callgrind(a, work, exe, "-" + opt)
        expect(any(k == "tree-callers" for k in kinds.values()),
               "-%s: no kind 6 map to check" % opt)


def jumps_and_calls(a, work, name, opts):
    """{callee: "jmp" or "call"} of tails.c's -O2 assembly with OPTS
    (no plugin when OPTS is None)."""
    asm = os.path.join(work, name + ".s")
    cmd = [a.cc, "-O2", "-S", program(a, "tails.c"), "-o", asm]
    if opts is not None:
        cmd += ["-I" + a.include, "-fplugin=" + a.plugin]
        cmd += ["-fplugin-arg-tally-" + o for o in opts]
    run(cmd)
    how = {}
    with open(asm) as f:
        for line in f:
            # glibc 2.38 and later name C23's strtoul __isoc23_strtoul (GCC
            # 15 and later compile C23 by default).
            m = re.match(r"\s+(jmp|call)\s+(?:__isoc23_)?(step|strtoul|loop_sum)\b", line)
            if m:
                how[m.group(2)] = m.group(1)
    return how


@case("tails")
def check_tails(a, work):
    plain = jumps_and_calls(a, work, "plain", None)
    if plain != {"step": "jmp", "strtoul": "jmp", "loop_sum": "jmp"}:
        raise Skip("(this compiler makes no tail calls of tails.c: %s)" % plain)
    got = jumps_and_calls(a, work, "count", ["blocks=count"])
    want = {"step": "jmp", "strtoul": "call", "loop_sum": "call"}
    expect(got == want, "blocks=count: %s, want %s" % (got, want))
    got = jumps_and_calls(a, work, "hooks", ["hooks=inline"])
    want = {"step": "call", "strtoul": "call", "loop_sum": "call"}
    expect(got == want, "hooks=inline: %s, want %s" % (got, want))
    for opt in ("O1", "O2", "O3"):
        ref = build(a, work, "tails-block-" + opt, opt,
                    ["blocks=count", "placement=block"], src="tails.c")
        tree = build(a, work, "tails-" + opt, opt, ["blocks=count"],
                     src="tails.c")
        for n in INPUTS:
            same_counts("tails.c -%s, N=%s" % (opt, n),
                        block_counts(a, tree, work, [n]),
                        block_counts(a, ref, work, [n]))
        if shutil.which("valgrind"):
            same_calls_as_callgrind(a, work, tree, "tails.c -" + opt)


@case("fewer")
def check_fewer(a, work):
    callers = dump_of(a, build(a, work, "callers", "O2", ["blocks=count"]),
                      work)
    counted = dump_of(a, build(a, work, "counted", "O2",
                               ["blocks=count", "entries=counted"]), work)
    n_callers = sum(len(c) for _, c in callers.values())
    n_counted = sum(len(c) for _, c in counted.values())
    expect(n_callers < n_counted, "%d counters with entries=callers, %d "
           "with entries=counted" % (n_callers, n_counted))
    # The increments run: every counter past the core two counts edges.
    inc_callers = sum(sum(c[2:]) for _, c in callers.values())
    inc_counted = sum(sum(c[2:]) for _, c in counted.values())
    expect(inc_callers < inc_counted, "%d increments with entries=callers, "
           "%d with entries=counted" % (inc_callers, inc_counted))
    print("counters %d -> %d, increments %d -> %d"
          % (n_counted, n_callers, inc_counted, inc_callers))


@case("mid-dump")
def check_mid_dump(a, work):
    for opt in ("O0", "O1", "O2", "O3"):
        exe = build(a, work, "mid-" + opt, opt, ["blocks=count"])
        mid = os.path.join(work, "mid-%s.data" % opt)
        final = os.path.join(work, "final-%s.data" % opt)
        run([exe, "100"], env={"TALLY_OUTPUT": final, "SITES_MID": mid})
        kinds = {s: k for s, (k, _) in dump_of(a, exe, work).items()}
        expect(opt == "O0" or kinds.get("dumper") == "tree-callers",
               "-%s: dumper's map is %s" % (opt, kinds.get("dumper")))
        for path, want in ((mid, (50, 51)), (final, (100,))):
            out = run([a.tally, "report", "--clones", "--csv", path]).stdout
            rows = [dict(zip(out.splitlines()[0].split(","), l.split(",")))
                    for l in out.splitlines()[1:]]
            got = [int(r["calls"]) for r in rows if origin(r["symbol"]) == "dumper"]
            expect(len(got) == 1 and got[0] in want, "-%s: %s: dumper's calls "
                   "%s, want one of %s" % (opt, os.path.basename(path), got, want))


@case("merge-force")
def check_merge_force(a, work):
    datas = []
    for name, extra in (("a", ()), ("b", ("-DSITES_EXTRA",))):
        exe = build(a, work, "force-" + name, "O2", ["blocks=count"], extra)
        data = os.path.join(work, "force-%s.data" % name)
        run([exe, "100"], env={"TALLY_OUTPUT": data})
        datas.append(data)
    merged = os.path.join(work, "merged.data")
    r = run([a.tally, "merge", "--force", "-o", merged] + datas, check=False)
    expect(r.returncode == 0, "merge --force failed:\n" + r.stderr)
    expect("calls are undetermined" in r.stderr,
           "merge --force said nothing of the callers:\n" + r.stderr)
    r = run([a.tally, "report", "--clones", "--csv", merged], check=False)
    expect(r.returncode == 0, "the merged file is not readable:\n" + r.stderr)
    expect("cannot be derived" in r.stderr, "no warning for the undetermined "
           "calls:\n" + r.stderr)
    lines = r.stdout.splitlines()
    calls = {row["symbol"]: int(row["calls"]) for row in
             (dict(zip(lines[0].split(","), l.split(","))) for l in lines[1:])}
    expect(calls.get("twice") == 400, "twice (callers unchanged): %s calls "
           "in the merged file, not 2 x 200" % calls.get("twice"))
    # main's blocks differ: its map is dropped, its calls (derived from its
    # blocks on each side) kept.
    expect(calls.get("main") == 2, "main (blocks dropped): %s calls in the "
           "merged file, not 2" % calls.get("main"))


@case("option")
def check_option(a, work):
    r = run([a.cc, "-O2", "-fplugin=" + a.plugin,
             "-fplugin-arg-tally-entries=sometimes", "-c", program(a), "-o",
             os.path.join(work, "x.o")], check=False)
    expect(r.returncode != 0, "entries=sometimes was accepted")
    expect("entries" in r.stderr and "callers, counted" in r.stderr,
           "the error does not name the option and its values:\n" + r.stderr)


if __name__ == "__main__":
    sys.exit(main("tally-entries-"))
