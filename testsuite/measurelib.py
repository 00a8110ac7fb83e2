"""What run-measure.py and run-paths.py share: building with
measure=cycles in each hook mode, reading the measured rows and call
trees back, the checks every measured report must pass (exact counts,
every cycle charged once), whether PAPI can measure here.
"""
import os
import platform
import struct
import zlib

import checklib
from checklib import expect, report_rows, run, run_data, Skip, tally_opts, write_file


MODES = [(h, at) for h in ("inline", "call") for at in ("early", "late")]


def build(a, work, src, hooks, at, opt="-O2", extra=()):
    exe = os.path.join(work, "%s-%s-%s%s%s" % (os.path.splitext(src)[0], hooks, at, opt,
                                               "".join(e.split("=")[-1] for e in extra)))
    return checklib.build(a, exe, os.path.join(a.srcdir, "measure", src),
                          [*tally_opts("hooks=" + hooks, "at=" + at, "measure=cycles"), *extra],
                          opt=opt, libs=["-lpthread"])


def measure(a, exe, work):
    """Run EXE; return (stdout, {function: row}) with row the report's JSON
    object (calls, exits, incl_cycles, excl_cycles)."""
    data = exe + ".data"
    p = run_data(exe, data)
    expect(p.stderr == "", "%s: runtime messages: %r" % (exe, p.stderr))
    return p.stdout, report_rows(a, data)


def check_counts(what, rows, expected):
    """EXPECTED: {function: (calls, exits)}; nothing else has calls."""
    got = {n: (r["calls"], r["exits"]) for n, r in rows.items() if r["calls"]}
    expect(got == expected, "%s: counts %s, want %s"
           % (what, sorted(got.items()), sorted(expected.items())))


def check_sums(what, rows, roots, slack=0):
    """Every cycle charged once: the exclusive totals add up to the roots'
    inclusive totals (within SLACK); no exclusive total exceeds its
    inclusive one."""
    for n, r in rows.items():
        expect(r["excl_cycles"] <= r["incl_cycles"],
               "%s: %s exclusive %d above inclusive %d"
               % (what, n, r["excl_cycles"], r["incl_cycles"]))
    total = sum(r["excl_cycles"] for r in rows.values())
    want = sum(rows[n]["incl_cycles"] for n in roots)
    expect(abs(total - want) <= slack and want > 0,
           "%s: exclusive cycles add up to %d, the roots %s have %d inclusive"
           % (what, total, roots, want))


def each_mode(opts=("-O2",), extras=((),)):
    """The configurations of measured(): every hook mode and placement,
    with each of OPTS and each list of plugin options of EXTRAS."""
    return [(hooks, at, opt, tuple(extra)) for hooks, at in MODES
            for opt in opts for extra in extras]


def measured(a, work, src, configs):
    """Build measure/SRC in each (hooks, at, opt, extra) of CONFIGS and run
    it: yields (what, its output, {function: row}) (see measure)."""
    for hooks, at, opt, extra in configs:
        what = " ".join([src, hooks, at, opt, *extra])
        out, rows = measure(a, build(a, work, src, hooks, at, opt, extra), work)
        yield what, out, rows


def check_structure(what, rows, counts, children, roots=("main",), slack=0):
    """ROWS have exactly COUNTS (check_counts), the tree of CHILDREN
    (check_tree), and every cycle charged once below ROOTS (check_sums)."""
    check_counts(what, rows, counts)
    check_tree(what, rows, children)
    check_sums(what, rows, list(roots), slack)


def check_tree(what, rows, children):
    """CHILDREN: {parent: [callees]}, every callee called only by that
    parent: incl(parent) == excl(parent) + sum incl(callees), exactly."""
    for p, kids in children.items():
        want = rows[p]["excl_cycles"] + sum(rows[k]["incl_cycles"] for k in kids)
        expect(rows[p]["incl_cycles"] == want,
               "%s: %s inclusive %d, but exclusive %d + callees %s = %d"
               % (what, p, rows[p]["incl_cycles"], rows[p]["excl_cycles"],
                  kids, want))


# The events the PAPI checks measure.  PAPI's perf_event component needs a
# CPU PMU that libpfm4 recognises; a VM that exposes none (no
# /sys/bus/event_source/devices/cpu) disables the component, and with it
# even the software events: the runtime then measures cycles only (and says
# so), which these checks cannot tell from a fault.
PAPI_EVENTS = ("perf::TASK-CLOCK", "perf::PAGE-FAULTS")


PAPI_PROBE = r"""
#include <papi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
  if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
    { puts("PAPI_library_init failed"); return 1; }
  for (int i = 0; i < PAPI_num_components(); i++) {
    const PAPI_component_info_t *c = PAPI_get_component_info(i);
    if (c && c->disabled)
      printf("component %s disabled: %s\n", c->name, c->disabled_reason);
  }
  for (int i = 1; i < argc; i++) {
    int code, set = PAPI_NULL;
    if (PAPI_event_name_to_code(argv[i], &code) != PAPI_OK
        || PAPI_create_eventset(&set) != PAPI_OK
        || PAPI_add_event(set, code) != PAPI_OK)
      { printf("event %s is not available\n", argv[i]); return 1; }
  }
  return 0;
}
"""


_papi_probe = {}


def papi_unusable(a, work):
    """Why PAPI cannot measure PAPI_EVENTS here, or None when it can (asked
    of the machine once per run of this script)."""
    if a.papi != "1":
        return "the runtime was built without PAPI (libpapi-dev)"
    if "why" not in _papi_probe:
        _papi_probe["why"] = probe_papi(a, work)
    return _papi_probe["why"]


def probe_papi(a, work):
    src = write_file(os.path.join(work, "papi-probe.c"), PAPI_PROBE)
    exe = os.path.join(work, "papi-probe")
    run([a.cc, src, "-o", exe, "-lpapi"])
    p = run([exe] + list(PAPI_EVENTS), check=False)
    if p.returncode == 0:
        return None
    why = "; ".join(l for l in p.stdout.splitlines()
                    if "perf_event " in l or not l.startswith("component"))
    return "PAPI cannot measure %s on this machine (%s)" % (
        ", ".join(PAPI_EVENTS), why or p.stdout.strip())


def need_papi(a, work):
    """Skip unless this machine can measure PAPI_EVENTS with the runtime's
    PAPI."""
    why = papi_unusable(a, work)
    if why:
        raise Skip(why)


# The events of measure/fake-papi.c, a preloaded stand-in for libpapi: the
# thread's CPU time in ns (what perf::TASK-CLOCK counts) and the number of
# reads (a count that depends on the calls only).
FAKE_EVENTS = ("tally::THREAD-CPU-NS", "tally::READS")


def fake_papi(a, work):
    """measure/fake-papi.c built into WORK: the environment that preloads
    it."""
    so = os.path.join(work, "fake-papi.so")
    if not os.path.exists(so):
        run([a.cc, "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
             os.path.join(a.srcdir, "measure", "fake-papi.c"), "-o", so])
    return {"LD_PRELOAD": so}


def papi_sources(a, work):
    """The event sources a measure=papi check runs with, as (name, events,
    environment, the event counting CPU ns): the fake PAPI everywhere (so
    the runtime's PAPI code runs on every machine), and the machine's PAPI
    where it can measure PAPI_EVENTS (why not is printed).  Skips only
    where the runtime was built without PAPI."""
    if a.papi != "1" or not a.runtime_papi:
        raise Skip("the runtime was built without PAPI (libpapi-dev)")
    sources = [("fake PAPI", FAKE_EVENTS, fake_papi(a, work), FAKE_EVENTS[0])]
    why = papi_unusable(a, work)
    if why:
        print("only the fake PAPI: %s" % why)
    else:
        sources.append(("PAPI", PAPI_EVENTS, {}, PAPI_EVENTS[0]))
    return sources


def x86_64():
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Skip("measure=cycles is x86-64 only")


OUTSIDE = "[uninstrumented] "


def tree_rows(a, data, env=None, outside=False):
    """`tally report --tree DATA` as {path tuple: (calls, incl, excl)}.
    Unless OUTSIDE (report --tree --all), the frames libunwind found
    below the first instrumented ones ("[uninstrumented] ...") are left
    out of the paths (report --tree hides them; a row of one would be cut
    here too, and its values must be 0)."""
    out = run([a.tally, "report", "--tree", *(["--all"] if outside else []), data],
              env=env).stdout
    res = {}
    for key, values in parse_tree(out):
        expect(key not in res, "%s: path %s twice in the tree" % (data, key))
        res[key] = values
    if outside:
        return res
    cut = {}
    for key, v in res.items():
        k = 0
        while k < len(key) and key[k].startswith(OUTSIDE):
            k += 1
        if k == len(key):
            expect(v == (0, 0, 0), "%s: outside frame %s has values %s"
                   % (data, key, v))
            continue
        old = cut.get(key[k:], (0, 0, 0))
        cut[key[k:]] = tuple(x + y for x, y in zip(old, v))
    return cut


def check_tree_sums(what, rows, tree, folded):
    """The tree against the flat profile: each function's calls, inclusive
    and exclusive cycles are the sums over its paths; the collapsed stacks
    add up to all exclusive cycles."""
    for fn, r in rows.items():
        nodes = [v for k, v in tree.items() if k[-1] == fn]
        got = tuple(sum(v[i] for v in nodes) for i in range(3))
        want = (r["calls"], r["incl_cycles"], r["excl_cycles"])
        expect(got == want, "%s: %s summed over its paths %s, flat %s"
               % (what, fn, got, want))
    total = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines())
    want = sum(r["excl_cycles"] for r in rows.values())
    expect(total == want, "%s: collapsed stacks add up to %d, exclusive "
           "cycles to %d" % (what, total, want))


# The plugin options of a paths=on build of measure=cycles.
PATHS_ON = tally_opts("hooks=call", "measure=cycles", "paths=on")


def measure_exe(a, exe, src, flags, libs=()):
    """measure/SRC built with FLAGS, the runtime's header directory
    included, linked with LIBS, as EXE."""
    return checklib.build(a, exe, os.path.join(a.srcdir, "measure", src),
                          [*flags, "-I", os.path.join(a.srcdir, "..", "include")],
                          libs=[*libs, "-lpthread"])


def parse_tree(out):
    """The rows of `tally report --tree` output OUT as [(path tuple,
    (calls, inclusive, exclusive))], in order."""
    rows, stack = [], []
    lines = out.splitlines()
    # The call path starts at its heading's column (the value columns are
    # as wide as an event's name).
    col = lines[0].index("call path") if lines else 0
    for line in lines[1:]:
        calls, incl, excl = (int(v) for v in line[:col].split())
        rest = line[col:]
        depth = (len(rest) - len(rest.lstrip(" "))) // 2
        name = rest.lstrip(" ").rsplit("  ", 1)[0]
        del stack[depth:]
        stack.append(name)
        rows.append((tuple(stack), (calls, incl, excl)))
    return rows


def paths_build(a, work, src, at, opt="-O2"):
    return build(a, work, src, "call", at, opt, extra=["-fplugin-arg-tally-paths=on"])


def rewrap(body):
    """BODY (header to before the trailer) with its size and CRC fixed."""
    size = len(body) + 16
    body = body[:16] + struct.pack("<Q", size) + body[24:]
    return body + struct.pack("<IIQ", 0x444e4554, zlib.crc32(body), size)

