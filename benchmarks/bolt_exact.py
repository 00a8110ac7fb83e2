#!/usr/bin/env python3
"""benchmarks/bolt_exact.py - are tally's counts and LLVM BOLT's the same?
One process counted by both: a tally blocks=count build, linked for BOLT
and rewritten with llvm-bolt -instrument (benchmarks/run's `bolt-on-tally`
mode), so that tally's data file and BOLT's profile (fdata) are of the
same run.

Usage: benchmarks/bolt_exact.py [--tally PATH] [--json] [--show N]
                                BINARY DATA FDATA...

BINARY is the program as linked, before llvm-bolt rewrote it (the
addresses BOLT's profile is written in); DATA tally's data file of the
run; FDATA the profile files BOLT's runtime wrote (one per process).

What is compared, per function both see (the same symbol, unique in the
binary and in the data file):
  - counters: every tally counter update in BINARY is an instruction
    (`addq $K, __tally.c.N+8*I(%rip)`, K = 1, or a loop's trip count
    added on its entry) in some machine basic block of the function; the
    counter's value in DATA must be the sum over its update instructions of
    K times the number of times BOLT's profile says that block ran (the
    arrivals at the block's first instruction: BOLT's edge counts into it,
    the calls and jumps into the function for its first block).  A counter
    also updated otherwise (a loop's counter kept in a register and added
    at the loop's exits, plugin/promote.cc) is not comparable this way and
    is only counted as such.
  - entries: tally's entry count of the function (derived from its block
    counts, or its callers' for kind 6) against BOLT's: the calls into it,
    the jumps into it from other functions (tail calls) and the entries
    BOLT saw from outside the binary ("[unknown]": main from libc, callbacks
    from qsort), not the jumps from inside it back to its start.
Machine blocks are found as BOLT finds them: a function's first
instruction, every jump target, the instruction after every jump and
return, and every offset BOLT's profile names as a destination.
A counter updated after a call in its machine block may differ, and is
said to: BOLT's blocks do not end at calls, tally's end after every call
that may not return (gcov's graph), so after a call that did not return
(exit, longjmp) tally counts less, after a setjmp whose second return came
by longjmp more (that arrival is on no edge of BOLT's).  BOLT's default
instrumentation also infers what it does not count (a direct call's
count, from its block's) and may come out otherwise where a call did not
return; -conservative-instrumentation counts them.
In a function that calls one that does not return (exit, abort,
longjmp, or a function of the program that ends in one), BOLT's CFG gives
that call a fall-through successor (bolt/runtime/instr.cpp: "BOLT will add
a fall-through successor even though it should not have any successors
... We tolerate this imperfection"): the blocks after it, and with BOLT's
default inference the blocks before it, may come out otherwise; said so.
Functions GCC split into a hot part and a .cold one (f, f.cold) are not
instrumented by BOLT 19 in relocation mode ("skipped N functions due to
cold fragments"): their counters and their entries, and the entries of
what they call, differ and are said to.
Exit status 0 if every difference is explained so, 1 otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def read_fdata(paths):
    """{(from_fn, from_off, to_fn, to_off): count} summed over PATHS; a
    function is its symbol without BOLT's "/N" suffix of local symbols."""
    edges = {}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                p = line.split()
                if len(p) != 8:
                    continue
                try:
                    k = (strip(p[1]), int(p[2], 16), strip(p[4]), int(p[5], 16))
                    edges[k] = edges.get(k, 0) + int(p[7])
                except ValueError:
                    continue
    return edges


def strip(name):
    return re.sub(r"/\d+$", "", name)


def disassemble(binary):
    """({function: [(offset, instruction text)]}, {function: start},
    names that are not unique) from objdump -d."""
    out = subprocess.run(["objdump", "-d", "-w", "--no-show-raw-insn", binary],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    fns, starts, seen, dup = {}, {}, set(), set()
    cur = None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            name, start = m.group(2), int(m.group(1), 16)
            if name in seen:
                dup.add(name)
            seen.add(name)
            cur = fns.setdefault(name, [])
            starts[name] = start
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16) - start, m.group(2)))
    return fns, starts, dup


JUMP = re.compile(r"^(j\w+|bnd j\w+|notrack jmp)\s+([0-9a-f]+) <([^>+]+)(?:\+0x([0-9a-f]+))?>")
TERMINATOR = re.compile(r"^(j\w+|bnd j\w+|notrack jmp|ret\w*|bnd ret|ud2|hlt)\b")


def block_starts(fns, edges):
    """{function: sorted offsets where its machine blocks start}: its first
    instruction, every jump target (from any function: GCC's f.cold parts
    are jumped into from f), the instruction after every jump and return,
    and every destination of BOLT's profile."""
    lead = {fn: {0} for fn in fns}
    for fn, insns in fns.items():
        for i, (off, text) in enumerate(insns):
            m = JUMP.match(text)
            if m and m.group(3) in lead:
                lead[m.group(3)].add(int(m.group(4) or "0", 16))
            if TERMINATOR.match(text) and i + 1 < len(insns):
                lead[fn].add(insns[i + 1][0])
    for (ff, fo, tf, to) in edges:
        if tf in lead:
            lead[tf].add(to)
    return {fn: sorted(v) for fn, v in lead.items()}


COUNTER = re.compile(r"<__tally\.c\.\d+(?:\+0x([0-9a-f]+))?>")


def tally_counters(tally, data):
    """{symbol: [values]} of `tally dump DATA` (bodies whose symbol occurs
    once), and the symbols that occur more than once."""
    out = subprocess.run([tally, "dump", data], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    vals, dup = {}, set()
    for m in re.finditer(r'^  fn \d+ .*?symbol="(.*?)" .*counters=\d+:((?: \d+)*)$', out, re.M):
        if m.group(1) in vals:
            dup.add(m.group(1))
        vals[m.group(1)] = [int(v) for v in m.group(2).split()]
    return vals, dup


def tally_entries(tally, data):
    """{symbol: entries} of `tally report --json --clones DATA`."""
    rep = json.loads(subprocess.run([tally, "report", "--json", "--clones", "--all", data],
                                    stdout=subprocess.PIPE, text=True, check=True).stdout)
    out = {}
    for f in rep["functions"]:
        sym = f.get("symbol") or f.get("name")
        if sym is not None and f.get("calls") is not None:
            out[sym] = out.get(sym, 0) + f["calls"]
    return out


def compare(binary, data, fdata, tally):
    edges = read_fdata(fdata)
    fns, starts, dup_bin = disassemble(binary)
    values, dup_data = tally_counters(tally, data)
    starts_of = block_starts(fns, edges)
    arrivals = {}
    for (ff, fo, tf, to), c in edges.items():
        arrivals[(tf, to)] = arrivals.get((tf, to), 0) + c
    res = {"counters": 0, "equal": 0, "not_comparable": 0, "functions": 0,
           "entries": 0, "entries_equal": 0, "diffs": [], "entry_diffs": [],
           "ambiguous": sorted((dup_bin | dup_data) & set(values))}
    for fn in sorted(fns):
        if fn in dup_bin or fn in dup_data:
            continue
        insns = fns[fn]
        # The counter updates of FN's body; its .cold part is another
        # symbol of the binary but the same body of the data file.
        body = fn[:-5] if fn.endswith(".cold") else fn
        if body not in values:
            continue
        lead = starts_of[fn]
        updates = {}
        for off, text in insns:
            m = COUNTER.search(text)
            if not m:
                continue
            idx = int(m.group(1) or "0", 16) // 8
            k = re.match(r"^add[q]?\s+\$0x([0-9a-f]+),", text)
            blk = max(l for l in lead if l <= off)
            updates.setdefault(idx, []).append(
                (int(k.group(1), 16) if k else None, blk, off))
        for idx, ups in sorted(updates.items()):
            key = (body, idx)
            res.setdefault("_seen", {}).setdefault(key, []).extend(
                (fn, k, b, off) for k, b, off in ups)
    # Functions GCC split into a hot and a .cold part: BOLT 19 does not
    # instrument them in relocation mode ("skipped N functions due to cold
    # fragments"); its profile has only the calls into them from the
    # functions it did instrument.
    cold = {f[:-5] for f in fns if f.endswith(".cold")}
    cold_callers = set()
    for f in fns:
        if f in cold or f[:-5] in cold:
            for _, text in fns[f]:
                m = re.match(r"^call\w*\s+[0-9a-f]+ <([^>+]+)>", text)
                if m:
                    cold_callers.add(m.group(1))
    res["cold"] = sorted(cold)
    stops = calls_noreturn(fns)
    for (body, idx), ups in sorted(res.pop("_seen", {}).items()):
        res["counters"] += 1
        if any(k is None for _, k, _, _ in ups) or idx >= len(values[body]):
            res["not_comparable"] += 1
            continue
        want = sum(k * arrivals.get((fn, b), 0) for fn, k, b, _ in ups)
        got = values[body][idx]
        if want == got:
            res["equal"] += 1
        else:
            res["diffs"].append({"function": body, "counter": idx, "tally": got, "bolt": want,
                                 "updates": ["%s+0x%x x%d" % (fn, b, k) for fn, k, b, _ in ups],
                                 "why": "cold" if body in cold else
                                 why_differ(fns, ups) or ("noreturn" if body in stops else None)})
    # Entries.
    ent = tally_entries(tally, data)
    call_at = {}
    for fn, insns in fns.items():
        for off, text in insns:
            call_at[(fn, off)] = text
    for fn in sorted(set(ent) & set(fns)):
        if fn in dup_bin or fn in dup_data:
            continue
        bolt = 0
        for (ff, fo, tf, to), c in edges.items():
            if tf != fn or to != 0:
                continue
            text = call_at.get((ff, fo), "")
            if ff == fn and not text.startswith("call"):
                continue  # a jump back to its own start: no entry
            bolt += c
        res["functions"] += 1
        res["entries"] += 1
        if bolt == ent[fn]:
            res["entries_equal"] += 1
        else:
            res["entry_diffs"].append({
                "function": fn, "tally": ent[fn], "bolt": bolt,
                "why": "cold" if fn in cold else "cold caller" if fn in cold_callers else None})
    return res


SETJMP = re.compile(r"<(_setjmp|setjmp|__sigsetjmp|sigsetjmp|_setjmp@plt|setjmp@plt|"
                    r"__sigsetjmp@plt|sigsetjmp@plt)>")


# Functions known not to return.
NORETURN = {"exit", "_exit", "_Exit", "abort", "__assert_fail", "longjmp", "_longjmp",
            "siglongjmp", "__longjmp_chk", "__stack_chk_fail", "__chk_fail", "__fortify_fail",
            "err", "errx", "verr", "verrx", "pthread_exit", "__cxa_throw", "_Unwind_Resume"}


def calls_noreturn(fns):
    """The functions of the binary that call a function that does not
    return: one of NORETURN, or a function of the binary without a
    return that calls one (gzip's do_exit)."""
    def target(text):
        m = re.match(r"^(?:call|jmp)\w*\s+[0-9a-f]+ <([^>+]+)>", text)
        return m and re.sub(r"@plt$", "", m.group(1))
    stops = set(NORETURN)
    changed = True
    while changed:
        changed = False
        for fn, insns in fns.items():
            if fn in stops or any(t.startswith("ret") for _, t in insns):
                continue
            if any(target(t) in stops for _, t in insns):
                stops.add(fn)
                changed = True
    return {fn for fn, insns in fns.items()
            if any(t.startswith("call") and target(t) in stops for _, t in insns)}


# Why a difference is not one: bolt_exact's reasons.
WHY = {"cold": "in a function GCC split into a .cold part, which BOLT 19 skips (not instrumented)",
       "noreturn": "in a function that calls one that does not return (exit): BOLT's CFG gives "
                   "the call a fall-through successor and infers counts through it",
       "cold caller": "called from such a function, whose calls BOLT does not count",
       "setjmp": "after a setjmp call, whose second returns arrive by longjmp on no edge of BOLT's",
       "call": "after a call in BOLT's block, which may not have returned",
       None: "unexplained"}


def why_differ(fns, ups):
    """Why a counter may count otherwise than BOLT's block: a call between
    the start of the machine block and the update.  BOLT's blocks do not
    end at calls, so its count is the block's arrivals; tally's blocks end
    after every call that may not return (gcov's graph), so the update
    after such a call counts only the times it returned: fewer when it
    did not (exit, longjmp, a throw), more when it returned twice (setjmp:
    a longjmp arrives after the call, on no edge of BOLT's).  None when
    no call is there."""
    for fn, _, blk, off in ups:
        calls = [t for o, t in fns[fn] if blk <= o < off and t.startswith("call")]
        if any(SETJMP.search(t) for t in calls):
            return "setjmp"
        if calls:
            return "call"
    return None


def summary(res, show=10):
    lines = ["counters compared: %d of %d equal (%d not comparable: updated other than by "
             "`addq $K`, a loop's counter kept in a register)" % (
                 res["equal"], res["counters"] - res["not_comparable"], res["not_comparable"]),
             "function entries compared: %d of %d equal" % (res["entries_equal"], res["entries"])]
    why = WHY
    for k in ("cold", "noreturn", "setjmp", "call", None):
        n = sum(1 for d in res["diffs"] if d["why"] == k)
        if n:
            lines.append("%d differ %s" % (n, why[k]))
    for d in res["diffs"][:show]:
        lines.append("  counter %s[%d]: tally %d, BOLT %d (%s; %s)" % (
            d["function"], d["counter"], d["tally"], d["bolt"], ", ".join(d["updates"]),
            why[d["why"]]))
    for d in res["entry_diffs"][:show]:
        lines.append("  entries of %s: tally %d, BOLT %d (%s)" % (
            d["function"], d["tally"], d["bolt"], WHY[d["why"]]))
    if res["ambiguous"]:
        lines.append("left out, their symbol not unique: %s" % ", ".join(res["ambiguous"][:20]))
    return lines


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    ap.add_argument("--tally", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build", "tools", "tally"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("binary")
    ap.add_argument("data")
    ap.add_argument("fdata", nargs="+")
    a = ap.parse_args()
    res = compare(a.binary, a.data, a.fdata, a.tally)
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print("\n".join(summary(res, a.show)))
    return 0 if not unexplained(res) else 1


def unexplained(res):
    """The differences nothing above explains, counters' and entries'."""
    return [d for d in res["diffs"] + res["entry_diffs"] if d["why"] is None]


if __name__ == "__main__":
    sys.exit(main())
