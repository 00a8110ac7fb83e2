#!/usr/bin/env python3
"""benchmarks/placement-floor.py - how far blocks=count's counter placement
is from the best any spanning-tree placement could do on the same graphs
with the true profile (issue 16, target 1: is the gap to half of gcov's
overhead the static guess, or structural?).

Usage: benchmarks/placement-floor.py [--tally PATH] [--top N] [--json]
                                     [--results CSV --workload W] DATA...

Reads DATA (tally data files of a blocks=count build, several are summed)
through `tally dump` (doc/cli.md): every function's block map (blocks,
edges, which of them carry a counter) and its counter values.  Per
function body it computes
  - ours: the increments our placement executed, the sum of its counters
    (every value after the first two: the counts of the counted blocks and
    edges).  A loop whose latch edge gets `counter += trip count` on entry
    and a promoted loop's counters (plugin/promote.cc) execute fewer
    increments than they count, and the map does not say which they are:
    `ours` is an upper bound on the increments, the same sum as
    benchmarks/run's counted_edges column;
  - floor: the least any spanning-tree placement could count on the same
    graph with the true profile: every count solved from the map by flow
    conservation (doc/data-format.md, "Solving"), then the graph the plugin
    builds (plugin/blocks.cc: each block two nodes joined by its block
    edge, EXIT joined to ENTRY, the edges that cannot be counted, fake
    edges and edges into EXIT, on the tree first) completed into a maximum
    spanning tree by true counts (Kruskal): the counts of the edges left off
    it.  This is the minimum over all spanning trees with those edges on
    it, by the matroid property of spanning trees.  A kind 6 body's normal
    edge out of ENTRY (entries=callers, plugin/callers.cc) is known from its
    callers' blocks, solved first: it is on no tree and costs nothing, in
    ours and in the floor alike;
  - gap: ours - floor.
The floor's tree leaves off as many edges as our placement counts (the
same graph, the same constraints; `counters` and `floor_counters` in
--json).
It prints the totals and the TOP (default 15) bodies by gap.  It also
gives both in a split-cost model: a counter on an edge that needs a block
of its own (source with other successors, destination with other
predecessors: plugin/blocks.cc weighs these 1.5 times) costs 2 (the add
and a jump), any other 1; the floor there is the spanning tree of least
such cost.  With
--results (a benchmarks/run results.csv) and --workload, it also turns the
gap into Ir: each increment left out is at least one instruction (`addq
$1,counter(%rip)`), so with a perfect static guess the mode's Ir ratio
would be at least (Ir - gap) / Ir(gcc); compared with the mark, half of
gcov's overhead (gcov's Ir ratio is taken from --gcov-results, against
that run's own gcc row, if the run has no gcov row).  --json prints one object instead (the test's interface,
testsuite/run-floor.py).
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

MOD = 1 << 64


def signed(v):
    v %= MOD
    return v - MOD if v >= 1 << 63 else v


ENTRY = "entry from the callers"


def read_dump(tally, paths):
    """{(checksum, source, fn index): body} summed over PATHS' dumps; body:
    symbol, kind, blocks [(value, flags)], edges [(src, dst, flags,
    value)], counters [int]."""
    bodies = {}
    for path in paths:
        out = subprocess.run([tally, "dump", path], stdout=subprocess.PIPE,
                             check=True, text=True, errors="replace").stdout
        module = None
        cur = None
        for line in out.splitlines():
            m = re.match(r'module \d+ .*checksum=(0x[0-9a-f]+) .*source="(.*?)"', line)
            if m:
                module = (m.group(1), m.group(2))
                cur = None
                continue
            m = re.match(r'  fn (\d+) name=".*?" symbol="(.*?)" .* counters=\d+:((?: \d+)*)$', line)
            if m:
                key = module + (int(m.group(1)),)
                vals = [int(v) for v in m.group(3).split()]
                prev = bodies.get(key)
                if prev:
                    prev["counters"] = [(a + b) % MOD for a, b in zip(prev["counters"], vals)]
                    cur = None  # the map is the same build's: read once
                else:
                    cur = bodies[key] = {"symbol": m.group(2), "source": module[1], "kind": None,
                                         "blocks": [], "edges": [], "counters": vals}
                continue
            if cur is None:
                continue
            m = re.match(r'    map \d+ bytes kind=([\w-]+) blocks=', line)
            if m:
                cur["kind"] = m.group(1)
                continue
            m = re.match(r'    block (\d+) value=(\d+|-) flags=(0x[0-9a-f]+)', line)
            if m:
                cur["blocks"].append((None if m.group(2) == "-" else int(m.group(2)), int(m.group(3), 16)))
                continue
            m = re.match(r'    edge (\d+) (\d+)->(\d+) flags=(0x[0-9a-f]+) value=(\d+|-)', line)
            if m:
                cur["edges"].append((int(m.group(2)), int(m.group(3)), int(m.group(4), 16),
                                     None if m.group(5) == "-" else int(m.group(5))))
                continue
            # Kind 6: the call sites its entry count is the sum of
            # (doc/cli.md), functions of the same module.
            m = re.match(r'    callers complete=(\d+) sites:((?: \d+:\d+)*)$', line)
            if m:
                cur["callers"] = (int(m.group(1)), [(module + (int(f),), int(b)) for f, b in
                                                    (x.split(":") for x in m.group(2).split())])
    bodies = {k: b for k, b in bodies.items() if b["kind"] in ("tree", "block", "tree-callers")}
    derive_entries(bodies)
    return bodies


def derive_entries(bodies):
    """Kind 6: each body's entry count (body["entry"]), the sum of its
    call sites' block counts, solved callers first; None where undetermined
    (an incomplete list, a site in an undetermined block or body)."""
    todo = [b for b in bodies.values() if b["kind"] == "tree-callers"]
    for b in todo:
        b["entry"] = None
    done = {id(b) for b in bodies.values() if b["kind"] != "tree-callers"}
    counts = {}
    while todo:
        left = []
        for b in todo:
            complete, sites = b.get("callers", (0, []))
            if any(id(bodies.get(k)) not in done for k, _ in sites if k in bodies):
                left.append(b)
                continue
            total = 0 if complete else None
            for k, block in sites:
                caller = bodies.get(k)
                if caller is None or total is None:
                    total = None
                    break
                if id(caller) not in counts:
                    counts[id(caller)] = solve(caller, graph(caller))
                c = counts[id(caller)][block - 2] if block >= 2 else None
                total = None if c is None else (total + c) % MOD
            b["entry"] = total
            done.add(id(b))
        if len(left) == len(todo):  # a cycle: the reader refuses it
            break
        todo = left


def graph(body):
    """The plugin's graph of BODY: [(u, v, forced, value index)]: ENTRY is
    node 0, EXIT node 1, block B >= 2 nodes 2B (in) and 2B+1 (out)."""
    g = []
    for b, (value, _) in enumerate(body["blocks"]):
        if b >= 2:
            g.append((2 * b, 2 * b + 1, False, value))
    for s, d, flags, value in body["edges"]:
        u = 0 if s == 0 else 2 * s + 1
        v = 1 if d == 1 else 2 * d
        if body["kind"] == "tree-callers" and s == 0 and not flags & 1:
            value = ENTRY  # kind 6: known from the callers, no counter
        g.append((u, v, bool(flags & 1) or d == 1, value))
    return g


def counted(value):
    """Whether an edge of value VALUE carries a counter of its own."""
    return value is not None and value is not ENTRY


def solve(body, g):
    """True count of every edge of G, by flow conservation from the counted
    ones (None where undetermined), EXIT -> ENTRY included as the last."""
    counts = [None if value is None else body.get("entry") if value is ENTRY
              else body["counters"][value] for (_, _, _, value) in g]
    edges = [(u, v) for (u, v, _, _) in g] + [(1, 0)]
    counts.append(None)
    at = {}
    for i, (u, v) in enumerate(edges):
        at.setdefault(u, []).append((i, -1))  # out of u
        at.setdefault(v, []).append((i, 1))   # into v
    changed = True
    while changed:
        changed = False
        for node, inc in at.items():
            unknown = [(i, s) for i, s in inc if counts[i] is None]
            if len(unknown) != 1:
                continue
            i, s = unknown[0]
            rest = sum(s2 * counts[j] for j, s2 in inc if j != i)
            counts[i] = (-rest * s) % MOD
            changed = True
    return [None if c is None else signed(c) for c in counts]


def find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def split_costs(body, g):
    """Per edge of G, what one run of a counter on it costs in instructions
    by our model: 2 for an edge that would need a block of its own (its
    source has other successors and its destination other predecessors,
    as plugin/blocks.cc's `split`: the add and a jump), 1 otherwise."""
    nsucc, npred = {}, {}
    for s, d, flags, _ in body["edges"]:
        if flags & 1 and not flags & 0x30:
            continue  # a fake edge GCC's CFG does not have
        nsucc[s] = nsucc.get(s, 0) + 1
        npred[d] = npred.get(d, 0) + 1
    cost = [1] * (len(g) - len(body["edges"]))
    for s, d, _, _ in body["edges"]:
        cost.append(2 if nsucc.get(s, 0) > 1 and npred.get(d, 0) > 1 else 1)
    return cost


def tree_floor(g, counts, weight, nodes, off=None):
    """The least sum of weight[i] * counts[i] over the edges a spanning tree
    of G leaves off (forced edges on it first, EXIT joined to ENTRY); the
    indexes of those edges are added to OFF if given."""
    parent = list(range(nodes))
    parent[1] = 0
    floor = 0
    # A kind 6 entry edge is known without a counter: off every tree.
    order = [i for i, e in enumerate(g) if e[2]] + \
        sorted((i for i, e in enumerate(g) if not e[2] and e[3] is not ENTRY),
               key=lambda i: -counts[i] * weight[i])
    for i in order:
        a, b = find(parent, g[i][0]), find(parent, g[i][1])
        if a != b:
            parent[a] = b
        elif not g[i][2]:
            floor += max(counts[i], 0) * weight[i]
            if off is not None:
                off.add(i)
    return floor


def show_body(body):
    """Every block and edge of BODY: its true count, whether our placement
    counts it, whether the floor's tree leaves it off, and its split cost."""
    g = graph(body)
    counts = solve(body, g)
    cost = split_costs(body, g)
    off = set()
    tree_floor(g, counts, [1] * len(g), 2 * len(body["blocks"]), off)
    nb = len(g) - len(body["edges"])
    print("%s (%s): %d blocks, %d edges" % (body["symbol"], body["kind"], len(body["blocks"]), len(body["edges"])))
    print("| what | count | ours | floor | cost |")
    print("|---|---:|---|---|---:|")
    for i, (u, v, forced, value) in enumerate(g):
        if counts[i] == 0 and value is None and i not in off:
            continue
        what = "block %d" % (u // 2) if i < nb else "edge %d->%d flags=0x%x" % body["edges"][i - nb][:3]
        print("| %s%s | %s | %s | %s | %d |" % (what, " (uncountable)" if forced else "", format(counts[i], ","),
                                                "counter" if counted(value) else
                                                "callers" if value is ENTRY else "",
                                                "counter" if i in off else "", cost[i]))


def floor_of(body):
    """(ours, floor, ours in the split-cost model, floor in it, our
    counters, the floor's); the floors None where the counts are not
    determined."""
    g = graph(body)
    counts = solve(body, g)
    cost = split_costs(body, g)
    ours = sum(body["counters"][value] for (_, _, _, value) in g if counted(value))
    ours_ir = sum(body["counters"][value] * cost[i] for i, (_, _, _, value) in enumerate(g)
                  if counted(value))
    ncounters = sum(1 for e in g if counted(e[3]))
    if any(c is None for c in counts[:-1]):
        return ours, None, ours_ir, None, ncounters, None
    nodes = 2 * len(body["blocks"])
    off = set()
    floor = tree_floor(g, counts, [1] * len(g), nodes, off)
    return ours, floor, ours_ir, tree_floor(g, counts, cost, nodes), ncounters, len(off)


def ir_rows(path, workload):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["workload"] == workload and r.get("Ir"):
                rows[r["mode"]] = int(r["Ir"])
    return rows


def ir_figures(results, workload, gcov_results):
    """(Ir of gcc, Ir of tally-blocks-count, gcov's Ir ratio) of WORKLOAD in
    RESULTS; gcov's ratio from GCOV_RESULTS (its own gcc row) when RESULTS
    has no gcov row."""
    rows = ir_rows(results, workload)
    gcov = rows
    if "gcov" not in rows and gcov_results:
        gcov = ir_rows(gcov_results, workload)
    missing = [m for m in ("gcc", "tally-blocks-count") if m not in rows] + \
        [m for m in ("gcc", "gcov") if m not in gcov]
    if missing:
        sys.exit("placement-floor: %s: no Ir of %s for %s" % (results, ", ".join(missing), workload))
    return rows["gcc"], rows["tally-blocks-count"], gcov["gcov"] / gcov["gcc"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="+")
    ap.add_argument("--tally", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "build", "tools", "tally"))
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--results")
    ap.add_argument("--gcov-results")
    ap.add_argument("--workload")
    ap.add_argument("--function", help="print this symbol's blocks and edges (those that ran or "
                    "carry a counter): count, ours, the floor's")
    a = ap.parse_args()
    if a.function:
        for body in read_dump(a.tally, a.data).values():
            if body["symbol"] == a.function:
                show_body(body)
        return 0

    rows = []
    undetermined = 0
    for (checksum, source, index), body in read_dump(a.tally, a.data).items():
        ours, floor, ours_ir, floor_ir, ncounters, floor_counters = floor_of(body)
        if floor is None:
            undetermined += 1
            continue
        rows.append({"symbol": body["symbol"], "source": source, "fn": index, "kind": body["kind"],
                     "ours": ours, "floor": floor, "gap": ours - floor,
                     "counters": ncounters, "floor_counters": floor_counters,
                     "ours_split": ours_ir, "floor_split": floor_ir, "gap_split": ours_ir - floor_ir})
    rows.sort(key=lambda r: (-r["gap"], r["symbol"]))
    total = {k: sum(r[k] for r in rows) for k in ("ours", "floor", "gap", "ours_split",
                                                  "floor_split", "gap_split")}
    total.update(bodies=len(rows), undetermined=undetermined)
    ir = None
    if a.results:
        base, tally, gcov = ir_figures(a.results, a.workload, a.gcov_results)
        ir = {"Ir_gcc": base, "Ir_tally": tally, "gcov_ratio": gcov,
              "ratio": tally / base, "mark": 1 + (gcov - 1) / 2,
              "ratio_at_floor": (tally - total["gap"]) / base,
              "ratio_at_split_floor": (tally - total["gap_split"]) / base}
    if a.json:
        print(json.dumps({"total": total, "functions": rows, "ir": ir}, indent=1))
        return 0
    print("%d function bodies (%d with counts not determined, left out)" % (total["bodies"], undetermined))
    print("increments: ours %s, floor %s, gap %s (%.1f%% of ours)" % (
        format(total["ours"], ","), format(total["floor"], ","), format(total["gap"], ","),
        100.0 * total["gap"] / total["ours"] if total["ours"] else 0))
    print("split-cost model (a counter on an edge needing a block of its own costs 2): ours %s,"
          " floor %s, gap %s" % (format(total["ours_split"], ","), format(total["floor_split"], ","),
                                 format(total["gap_split"], ",")))
    if ir:
        print("Ir: gcc %s, tally-blocks-count %s (%.4f), gcov %.4f; mark (half of gcov's overhead) %.4f;"
              " with a perfect static guess about %.4f (an increment one Ir) or %.4f (split-cost model)" % (
                  format(ir["Ir_gcc"], ","), format(ir["Ir_tally"], ","), ir["ratio"],
                  ir["gcov_ratio"], ir["mark"], ir["ratio_at_floor"],
                  ir["ratio_at_split_floor"]))
    print()
    print("| function | ours | floor | gap | gap, split-cost model |")
    print("|---|---:|---:|---:|---:|")
    for r in rows[:a.top]:
        print("| %s | %s | %s | %s | %s |" % (r["symbol"], format(r["ours"], ","), format(r["floor"], ","),
                                               format(r["gap"], ","), format(r["gap_split"], ",")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # | head
        sys.exit(0)
