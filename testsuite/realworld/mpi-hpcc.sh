#!/usr/bin/env bash
# testsuite/realworld/mpi-hpcc.sh - the real-projects tier's MPI program:
# the HPC Challenge benchmark (Debian's hpcc: HPL, DGEMM, STREAM, PTRANS,
# RandomAccess, FFT, latency/bandwidth) built with mpicc, -fplugin=tally
# and libtally-mpi, run at 4 ranks (mpirun --oversubscribe) on a small
# problem.  Not part of `./dev test`.
#
# Usage: testsuite/realworld/mpi-hpcc.sh [--work DIR] [--ranks N]
#   --work DIR   where the source is fetched and built (default
#                build/realworld-mpi, not tracked)
#   --ranks N    ranks, a P x Q grid of 2 x N/2 (default 4)
#
# Checks (ends with "N passed, N failed", exit 1 if any failed):
# 1. hpcc's own checks pass in the instrumented build as in the
#    uninstrumented one: HPL's residual checks ("N tests completed and
#    passed residual checks", none failed), RandomAccess ("Found 0 errors"),
#    and the same set of check lines in both;
# 2. with libtally-mpi's default (reduce) the job writes one data file, a
#    reduced one of N ranks that `tally report --ranks` reads;
# 3. with TALLY_MPI=both every function's calls in the reduced file equal
#    the sum over the N per-rank files (`tally merge`), except main's
#    return, which comes after MPI_Finalize.
# Needs ./dev build with MPI (build/mpi/libtally-mpi.so), openmpi-bin,
# libopenmpi-dev and libblas-dev (installed if missing).  Debian's patches
# (hpcc_*.debian.tar.xz) are not needed: hpcc's orig tarball is built with
# an MPI-1 compatibility header for the routines Open MPI 4 removed
# (MPI_Address, MPI_Type_struct, ...), as Debian's patch does.
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work="$repo/build/realworld-mpi" ranks=4
while [ $# -gt 0 ]; do
  case $1 in
    --work) work=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--work DIR] [--ranks N]" >&2; exit 2 ;;
  esac
done
log() { printf '==> %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
build=$repo/build
tally=$build/tools/tally
[ -f "$build/mpi/libtally-mpi.so" ] || die "no $build/mpi/libtally-mpi.so: ./dev build with openmpi installed"
missing=()
for p in openmpi-bin libopenmpi-dev libblas-dev dpkg-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing: ${missing[*]}"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get install failed"
fi
mkdir -p "$work/src"
cd "$work/src" || die "no $work/src"
if ! ls hpcc_*.orig.tar.gz >/dev/null 2>&1; then
  log "fetching Debian's hpcc source"
  apt-get source --download-only hpcc >/dev/null 2>&1
  ls hpcc_*.orig.tar.gz >/dev/null 2>&1 || die "apt-get source hpcc gave no orig tarball (a deb-src entry is needed)"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0 fail=0
check() { # NAME CONDITION-STATUS
  if [ "$2" = 0 ]; then pass=$((pass + 1)); log "PASS $1"; else fail=$((fail + 1)); log "FAIL $1"; fi
}

# build MODE (base or tally) into $work/MODE
build_hpcc() {
  local mode=$1 d=$work/$1 flags="" libs="-lblas -lm"
  rm -rf "$d"
  mkdir -p "$d"
  tar xzf "$work"/src/hpcc_*.orig.tar.gz -C "$d" --strip-components=1 || return 1
  printf '%s\n' '#include <mpi.h>' \
    '#undef MPI_Address' '#define MPI_Address MPI_Get_address' \
    '#undef MPI_Type_struct' '#define MPI_Type_struct MPI_Type_create_struct' \
    '#undef MPI_Type_hvector' '#define MPI_Type_hvector MPI_Type_create_hvector' \
    '#undef MPI_Type_hindexed' '#define MPI_Type_hindexed MPI_Type_create_hindexed' \
    '#undef MPI_Errhandler_set' '#define MPI_Errhandler_set MPI_Comm_set_errhandler' \
    > "$d/mpi1compat.h"
  if [ "$mode" = tally ]; then
    flags="-fplugin=$build/plugin/tally.so"
    libs="$libs -L$build/mpi -ltally-mpi -L$build/rt -ltally-rt -Wl,-rpath,$build/mpi:$build/rt"
  fi
  cat > "$d/hpl/Make.rw" <<MK
SHELL = /bin/sh
CD = cd
CP = cp
LN_S = ln -s
MKDIR = mkdir
RM = /bin/rm -f
TOUCH = touch
ARCH = rw
TOPdir = ../../..
INCdir = \$(TOPdir)/include
BINdir = \$(TOPdir)/bin/\$(ARCH)
LIBdir = \$(TOPdir)/lib/\$(ARCH)
HPLlib = \$(LIBdir)/libhpl.a
LAlib = $libs
F2CDEFS = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS = \$(HPLlib) \$(LAlib)
HPL_DEFS = \$(F2CDEFS) \$(HPL_INCLUDES)
CC = mpicc
CCNOOPT = \$(HPL_DEFS)
CCFLAGS = \$(HPL_DEFS) -include $d/mpi1compat.h -O2 -fcommon $flags
LINKER = mpicc
LINKFLAGS = -O2
ARCHIVER = ar
ARFLAGS = r
RANLIB = echo
MK
  (cd "$d" && make arch=rw -j2 > build.log 2>&1) || { tail -20 "$d/build.log" >&2; return 1; }
  sed "s/^1000         Ns/400          Ns/; s/^80           NBs/40           NBs/; s/^2            Qs/$((ranks / 2))            Qs/" \
    "$d/_hpccinf.txt" > "$d/hpccinf.txt"
}

# run MODE SUBDIR [VAR=VALUE...]: hpcc at $ranks ranks in a fresh SUBDIR
run_hpcc() {
  local mode=$1 sub=$2; shift 2
  local d=$work/$mode/$sub
  rm -rf "$d"; mkdir -p "$d"
  cp "$work/$mode/hpccinf.txt" "$d/"
  local x=()
  for kv in "$@"; do x+=(-x "$kv"); done
  (cd "$d" && env "$@" mpirun --oversubscribe -np "$ranks" "${x[@]}" "$work/$mode/hpcc" > mpirun.log 2>&1)
}

# The lines of hpcc's own checks, without timings.
checks_of() {
  grep -E 'residual checks|Found [0-9]+ errors|Node\(s\) with error' "$1" | sort
}

log "building hpcc uninstrumented and with tally"
build_hpcc base; check "build base" $?
build_hpcc tally; check "build tally (plugin, libtally-mpi)" $?

run_hpcc base run; check "run base at $ranks ranks" $?
run_hpcc tally reduce "TALLY_OUTPUT=$work/tally/reduce/hpcc.data"; check "run tally at $ranks ranks" $?
out=$work/tally/reduce/hpccoutf.txt
grep -q "0 tests completed and failed residual checks" "$out" &&
  grep -q "tests completed and passed residual checks" "$out" &&
  ! grep -E 'Found [1-9][0-9]* errors' "$out" >/dev/null
check "hpcc's own checks pass (HPL residuals, RandomAccess)" $?
diff <(checks_of "$work/base/run/hpccoutf.txt") <(checks_of "$out") >&2
check "the same check lines as the uninstrumented build" $?
files=$(cd "$work/tally/reduce" && ls *.data 2>/dev/null | tr '\n' ' ')
[ "$files" = "hpcc.data " ]
check "one data file for the job (got: $files)" $?
"$tally" report --ranks --json "$work/tally/reduce/hpcc.data" > "$work/tally/ranks.json" &&
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j['ranks'] == $ranks and len(j['functions']) > 100 else 1)" "$work/tally/ranks.json"
check "tally report --ranks reads it: $ranks ranks" $?
"$tally" report --ranks --top=5 "$work/tally/reduce/hpcc.data" >&2

run_hpcc tally both TALLY_MPI=both "TALLY_OUTPUT=$work/tally/both/r%r.data" \
  "TALLY_MPI_OUTPUT=$work/tally/both/reduced.data"
check "run tally, TALLY_MPI=both" $?
(cd "$work/tally/both" && "$tally" merge -o merged.data r[0-9]*.data) &&
python3 - "$tally" "$work/tally/both" <<'PY'
import csv, io, subprocess, sys
tally, d = sys.argv[1], sys.argv[2]
def rows(f):
    out = subprocess.run([tally, "report", "--csv", "--clones", f], capture_output=True,
                         text=True, check=True).stdout
    return {(r["symbol"], r["file"], r["line"]): (int(r["calls"]), int(r["exits"]))
            for r in csv.DictReader(io.StringIO(out))}
red, mer = rows(d + "/reduced.data"), rows(d + "/merged.data")
bad = [k for k in set(red) | set(mer)
       if red.get(k, (0, 0))[0] != mer.get(k, (0, 0))[0]
       or (k[0] != "main" and red.get(k) != mer.get(k))]
for k in bad[:10]:
    print("  %s: reduced %s, per-rank files %s" % (k, red.get(k), mer.get(k)), file=sys.stderr)
print("  %d functions compared" % len(red), file=sys.stderr)
sys.exit(1 if bad or not red else 0)
PY
check "reduced calls = the sum of the per-rank files (main's return excepted)" $?
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
