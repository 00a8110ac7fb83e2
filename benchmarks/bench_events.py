"""bench_events.py - how many events each cachegrind run counted, and the
report's "Instructions per event" tables: the instructions a mode adds
(its Ir less its baseline's, start-up and exit dump included) divided by
the events it pays for, so that the floor each technique sits above is
visible.

The events are read from what the cachegrind runs themselves wrote (their
own data file, .gcda files and stderr), never typed in:
- calls: a tally build's `tally report --json` total; for
  -finstrument-functions the `cyg-count` build's "cyg: calls=N" (the
  `cyg-empty` build instruments the same functions);
- counted edges: the sum of a blocks=count build's counters (every value
  after a function's first two) or of gcov's arc counters (`gcov-dump`);
- executed blocks: the sum of the block counts `tally report --blocks`
  gives for the `tally-blocks-count` build, the same -O2 control flow
  graphs every late block mode instruments.  gcov and clang instrument
  other graphs (before optimisation, or clang's), so their "per executed
  block" is per block of tally's graph: a common yardstick, not their own
  count."""

import json
import os
import re
import shutil
import subprocess

from bench_common import log
from bench_setup import MODE

# Fewer events than this and the added instructions are the fixed cost
# (start-up, exit dump) more than the events': no ratio is shown.  (At -O2
# bzip2 and gzip inline nearly every function: a few hundred calls.)
FEW = 10000

# The files a cachegrind run writes its counts to, apart from the wall runs'.
CG_TALLY = "cg.tally.data"
CG_GCOV = "cg-gcov"
# Where the processes of a cachegrind run write their tally data, a file
# each (%p: a workload of two steps, compress and decompress, is two
# processes, and one file would be replaced by the other's; %m's merge
# would add its own instructions to the measured run's), summed
# afterwards by `tally merge` (cg_collect).
CG_MERGE = "cg-tally"


def cg_env(env, d):
    """Point the runtime's and gcov's output of a cachegrind run at files of
    its own (removed first), so that its events are its own: tally's into
    one file merged over the run's processes (cg_collect)."""
    data, gcov = os.path.join(d, CG_TALLY), os.path.join(d, CG_GCOV)
    if os.path.exists(data):
        os.unlink(data)
    shutil.rmtree(gcov, ignore_errors=True)
    shutil.rmtree(os.path.join(d, CG_MERGE), ignore_errors=True)
    os.makedirs(os.path.join(d, CG_MERGE))
    env.update(TALLY_OUTPUT=os.path.join(d, CG_MERGE, "%p.data"), GCOV_PREFIX=gcov)
    return env


def cg_collect(ctx, d):
    """After a cachegrind run: its processes' tally data files summed into
    CG_TALLY (one file is moved there as it is)."""
    files = sorted(os.path.join(d, CG_MERGE, f) for f in os.listdir(os.path.join(d, CG_MERGE))
                   if f.endswith(".data"))
    if len(files) == 1:
        os.rename(files[0], os.path.join(d, CG_TALLY))
    elif files:
        _tally(ctx, "merge", "-o", os.path.join(d, CG_TALLY), *files)


def _tally(ctx, *args):
    tool = os.path.join(ctx.tally, "build", "tools", "tally")
    return subprocess.run([tool] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=True).stdout


def _tally_events(ctx, mode, data, r):
    if not os.path.exists(data):
        return
    blocks = mode.name == "tally-blocks-count"
    rep = json.loads(_tally(ctx, "report", "--json", *(["--blocks"] if blocks else []), data))
    r["calls"] = rep["totals"]["calls"]
    if blocks:
        r["blocks"] = sum(b["count"] for f in rep["functions"]
                          for body in f.get("blocks", []) for b in body["blocks"])
    if any(o.startswith("blocks=count") for o in mode.tally):
        edges = 0
        for m in re.finditer(r"\bcounters=\d+: ([0-9 ]*)", _tally(ctx, "dump", data)):
            edges += sum(int(v) for v in m.group(1).split()[2:])
        r["edges"] = edges


def _gcda_files(d):
    """The .gcda files a cachegrind run in scratch directory D wrote."""
    return [os.path.join(root, f) for root, _, files in os.walk(os.path.join(d, CG_GCOV))
            for f in files if f.endswith(".gcda")]


def _gcov_edges(d):
    edges, seen = 0, False
    for path in _gcda_files(d):
        out = subprocess.run(["gcov-dump", "-l", path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
        arcs = False
        for line in out.splitlines():
            body = line.split(":", 1)[1] if ":" in line else line
            if "COUNTERS" in body:
                arcs = "COUNTERS arcs" in body
                continue
            m = re.match(r"\s+\d+:((?: \d+)+)\s*$", body)
            if arcs and m:
                edges += sum(int(v) for v in m.group(1).split())
                seen = True
    return edges if seen else None


def count_events(ctx, wl, mode_name, d, steps):
    """After a good cachegrind run of wl in mode_name (scratch directory d,
    `steps` of them): its events, in ctx.results."""
    mode = MODE[mode_name]
    r = ctx.results.setdefault((wl.name, mode_name), {})
    try:
        _events(ctx, mode, d, steps, r)
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        log("  %s %s: no event counts (%s); its per-event cells stay empty" % (wl.name, mode_name, e))


# Where benchmarks/run keeps the profiles a cachegrind run of a
# BOLT-instrumented program wrote (bench_runs.py).
CG_BOLT_DIR = "cg-bolt"


def data_bytes(d):
    """Bytes of what a cachegrind run in scratch directory D wrote: tally's
    data file, gcov's .gcda files or BOLT's profiles (None: none)."""
    data = os.path.join(d, CG_TALLY)
    if os.path.exists(data):
        return os.path.getsize(data)
    bolt = os.path.join(d, CG_BOLT_DIR)
    if os.path.isdir(bolt):
        return sum(os.path.getsize(os.path.join(bolt, f)) for f in os.listdir(bolt))
    sizes = [os.path.getsize(f) for f in _gcda_files(d)]
    return sum(sizes) if sizes else None


def _events(ctx, mode, d, steps, r):
    r["data_bytes"] = data_bytes(d)
    if mode.tally is not None:
        _tally_events(ctx, mode, os.path.join(d, CG_TALLY), r)
    elif mode.name.startswith("gcov"):
        e = _gcov_edges(d)
        if e is not None:
            r["edges"] = e
    elif mode.name == "cyg-count":
        calls = 0
        for i in range(steps):
            with open(os.path.join(d, "cg.%d.err" % i), errors="replace") as f:
                calls += sum(int(m.group(1)) for m in re.finditer(r"cyg: calls=(\d+)", f.read()))
        r["calls"] = calls


def _per(ctx, wl, mode, events):
    r = ctx.results.get((wl.name, mode.name), {})
    b = ctx.results.get((wl.name, mode.baseline), {})
    if not ctx.ok(wl.name, mode.name) or not r.get("Ir") or not b.get("Ir") or not events:
        return "-"
    if events < FEW:
        return "(%d only)" % events
    return "%.2f" % ((r["Ir"] - b["Ir"]) / events)


def events_tables(ctx, workloads, modes):
    """The report's "Instructions per event" section (markdown lines)."""
    res = ctx.results
    md = ["## Instructions per event", "",
          "Instructions a mode adds (its Ir less its baseline's, on the cachegrind input, start-up "
          "and exit dump included) ÷ the events it counted in the same run (benchmarks/bench_events.py "
          "says where each count comes from).", ""]

    def table(title, rows, head):
        rows = [(m, cells) for m, cells in rows if any(c != "-" for c in cells)]
        if not rows:
            return []
        t = ["### " + title, "", "| mode | " + " | ".join(w.name for w in workloads) + " |",
             "|---|" + "---:|" * len(workloads)]
        t += ["| `%s` | %s |" % (m.name, " | ".join(cells)) for m, cells in rows]
        t += [""] + (["Events: " + " · ".join("%s %s" % (w.name, head(w)) for w in workloads), ""]
                     if head else [])
        return t

    live = [m for m in modes if not m.is_baseline and m.name not in ctx.na]

    def calls_of(w, m):
        src = "cyg-count" if m.name.startswith("cyg-") else m.name
        return res.get((w.name, src), {}).get("calls")
    call_modes = [m for m in live if m.name.startswith("cyg-") or
                  (m.tally is not None and not any(o.startswith("blocks=") for o in m.tally))]
    md += table("Per call (function hooks)",
                [(m, [_per(ctx, w, m, calls_of(w, m)) for w in workloads]) for m in call_modes],
                lambda w: ", ".join("%s %s calls" % (m, format(res[(w.name, m)]["calls"], ","))
                                    for m in ("tally-inline", "cyg-count")
                                    if res.get((w.name, m), {}).get("calls") is not None))

    def blocks_of(w):
        return res.get((w.name, "tally-blocks-count"), {}).get("blocks")
    block_modes = [m for m in live if m.name.startswith(("gcov", "clang-")) or
                   (m.tally is not None and any(o.startswith("blocks=") for o in m.tally))]
    md += table("Per executed block (the blocks of `tally-blocks-count`'s graphs)",
                [(m, [_per(ctx, w, m, blocks_of(w)) for w in workloads]) for m in block_modes],
                lambda w: "%s blocks" % format(blocks_of(w) or 0, ","))
    edge_modes = [m for m in block_modes if any(res.get((w.name, m.name), {}).get("edges")
                                                for w in workloads)]
    size_modes = [m for m in live if any(res.get((w.name, m.name), {}).get("data_bytes")
                                         for w in workloads)]
    md += table("Data file size (bytes the cachegrind run wrote: tally's data file, gcov's .gcda "
                "files, BOLT's profiles)",
                [(m, [format(res.get((w.name, m.name), {}).get("data_bytes") or 0, ",")
                      if ctx.ok(w.name, m.name) else "-" for w in workloads]) for m in size_modes],
                None)
    md += table("Per counted edge (each mode's own counters)",
                [(m, [_per(ctx, w, m, res.get((w.name, m.name), {}).get("edges")) for w in workloads])
                 for m in edge_modes],
                lambda w: ", ".join("%s %s" % (m.name, format(res.get((w.name, m.name), {}).get("edges") or 0, ","))
                                    for m in edge_modes))
    return md
