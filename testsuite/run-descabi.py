#!/usr/bin/env python3
"""The function descriptor's ABI (include/tally/abi.h, ABI 4; issue 16
target 6b): descriptors hold offsets into the unit's record blob instead of
pointers, so a position-independent executable has no dynamic relocation
for a function's strings or block map; a module of another ABI is refused
with a message naming both ABIs.

Usage: run-descabi.py CHECK --plugin P --runtime RT ... (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import sys

from checklib import Skip, case, expect, main, report_rows, run, \
    run_data, tally_opts, write_file


def abi_of(a):
    """TALLY_ABI_VERSION and TALLY_ABI_VERSION_MIN of the header."""
    with open(os.path.join(a.include, "tally", "abi.h")) as f:
        text = f.read()
    cur = int(re.search(r"#define TALLY_ABI_VERSION (\d+)u", text).group(1))
    low = int(re.search(r"#define TALLY_ABI_VERSION_MIN (\d+)u", text).group(1))
    return cur, low


# A module record of ABI N made by hand (no plugin): magic, abi_version,
# checksum and source are where every ABI has them; the rest is zero.
FOREIGN_C = r"""
#include <stdio.h>
#include <string.h>
#include <tally/abi.h>
static struct tally_module m;
int main (void)
{
  m.magic = TALLY_MODULE_MAGIC;
  m.abi_version = ABI;
  m.source = "foreign.c";
  __tally_register (&m);
  puts ("alive");
  return 0;
}
"""


@case("mismatch")
def check_mismatch(a, work):
    """A module of the ABI before the current one (ABI 3: pointer
    descriptors) and of the one after it: refused with the message naming
    the module, its ABI and the runtime's range; the program runs on."""
    cur, low = abi_of(a)
    expect(low == cur, "TALLY_ABI_VERSION_MIN %d: ABI %d changed struct "
           "tally_fn, older modules cannot be read" % (low, cur))
    src = os.path.join(work, "foreign.c")
    write_file(src, FOREIGN_C)
    for abi in (cur - 1, cur + 1):
        exe = os.path.join(work, "foreign%d" % abi)
        run([a.cc, "-O2", "-I" + a.include, "-DABI=%du" % abi, src, "-o", exe,
             a.runtime])
        p = run_data(exe, os.path.join(work, "f%d.data" % abi))
        expect(p.stdout.strip() == "alive", "the program did not run on: %r"
               % p.stdout)
        want = ("tally: foreign.c: built by a tally plugin with module ABI %d, "
                "but this runtime reads ABI %d to %d" % (abi, low, cur))
        expect(want in p.stderr, "ABI %d: no message %r in %r"
               % (abi, want, p.stderr))


def program(n_fns):
    out = ["#include <stdio.h>", "volatile int sink;"]
    for i in range(n_fns):
        out.append("__attribute__ ((noinline)) int f%d (int x) "
                   "{ if (x > %d) sink = x; return x + %d; }" % (i, i, i))
    out.append("int main (int argc, char **argv) { int s = 0; (void) argv;")
    for i in range(n_fns):
        out.append("  s += f%d (argc);" % i)
    out.append("  printf (\"%d\\n\", s); return 0; }")
    return "\n".join(out) + "\n"


def relative_relocs(exe):
    p = run(["readelf", "-rW", exe])
    return sum(1 for line in p.stdout.splitlines() if "R_X86_64_RELATIVE" in line)


@case("pie-relocs")
def check_pie_relocs(a, work):
    """-fPIE -pie, blocks=count: each function's descriptor and table entry
    cost two R_X86_64_RELATIVE relocations (`counters` and the module's
    pointer to the descriptor), not seven (ABI 3: also name, symbol,
    origin, file, map); no string of the function record twice in the
    binary; the data file and report as before."""
    if os.uname().machine != "x86_64":
        raise Skip("(x86-64 relocations)")
    relocs = {}
    for n in (20, 60):
        src = os.path.join(work, "many%d.c" % n)
        write_file(src, program(n))
        exe = os.path.join(work, "many%d" % n)
        run([a.cc, "-O2", "-fPIE", "-pie", "-fplugin=" + a.plugin,
             *tally_opts("blocks=count"), src, "-o", exe, a.runtime])
        relocs[n] = relative_relocs(exe)
    # What 40 functions more cost: the same runtime, the same module.
    per_fn = (relocs[60] - relocs[20]) / 40
    expect(per_fn <= 2, "%.2f relative relocations a function (%r)"
           % (per_fn, relocs))
    rodata = os.path.join(work, "rodata")
    run(["objcopy", "--dump-section", ".rodata=" + rodata, exe,
         os.path.join(work, "scratch")])
    with open(rodata, "rb") as f:
        image = f.read()
    for i in (0, 17, 59):
        name = b"f%d" % i
        # In the blob: u32 length then the bytes (name, symbol, origin).
        rec = len(name).to_bytes(4, "little") + name
        expect(image.count(rec) == 3, "f%d's record not in the blob" % i)
        expect(image.count(b"\0" + name + b"\0") == 0,
               "f%d also as a C string in .rodata" % i)
    data = os.path.join(work, "instr.data")
    run_data(exe, data)
    rows = report_rows(a, "--blocks", data)
    for i in range(60):
        expect(rows.get("f%d" % i, {}).get("calls") == 1,
               "f%d not in the report with 1 call: %r" % (i, rows.get("f%d" % i)))


if __name__ == "__main__":
    sys.exit(main("tally-descabi-"))
