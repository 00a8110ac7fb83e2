#!/usr/bin/env bash
# mpi-reduce.sh - what libtally-mpi's reduction at MPI_Finalize costs: an
# MPI program of a real program's size (Debian's Lua 5.4 built with
# -fplugin=tally -fplugin-arg-tally-blocks=count, benchmarks/mpi-lua.c) at
# 1, 2, 4 and 8 ranks (mpirun --oversubscribe), RUNS runs each; rank 0's
# TALLY_VERBOSE line gives the time from entering MPI_Finalize to the
# reduced file written and broadcast, and its parts.
#
# Usage: benchmarks/mpi-reduce.sh [--runs N] [--ranks LIST] [--work DIR] [--paths]
#   --runs N      runs per rank count (default 5); the table gives the median
#   --ranks LIST  comma-separated rank counts (default 1,2,4,8)
#   --work DIR    where Lua is fetched (apt-get source) and built (default
#                 build/mpi-bench; not tracked)
#   --paths       Lua built with hooks=call measure=cycles paths=on instead:
#                 the call paths are reduced too (the "paths ms" column)
# Needs ./dev build done, mpicc and mpirun (openmpi-bin libopenmpi-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=5 ranks=1,2,4,8 work="$here/build/mpi-bench" flags=-fplugin-arg-tally-blocks=count obj=obj
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --paths) flags="-fplugin-arg-tally-hooks=call -fplugin-arg-tally-measure=cycles -fplugin-arg-tally-paths=on"
             obj=obj-paths; shift ;;
    *) echo "usage: $0 [--runs N] [--ranks LIST] [--work DIR] [--paths]" >&2; exit 2 ;;
  esac
done
build=$here/build
[ -f "$build/mpi/libtally-mpi.so" ] || { echo "no $build/mpi/libtally-mpi.so: ./dev build with MPI" >&2; exit 1; }
mkdir -p "$work/src" "$work/$obj"
cd "$work/src"
ls lua5.4_*.orig.tar.gz >/dev/null 2>&1 || apt-get source --download-only lua5.4 >/dev/null
[ -d lua-5.4* ] || tar xzf lua5.4_*.orig.tar.gz
src=$(echo "$work"/src/lua-5.4*/src)
for f in "$src"/*.c; do
  b=$(basename "$f" .c)
  case $b in lua|luac) continue ;; esac
  [ "$work/$obj/$b.o" -nt "$build/plugin/tally.so" ] ||
    gcc -O2 -fPIC -fplugin="$build/plugin/tally.so" $flags \
        -DLUA_USE_LINUX -c "$f" -o "$work/$obj/$b.o"
done
mpicc -O2 -I"$src" "$here/benchmarks/mpi-lua.c" "$work/$obj"/*.o -o "$work/mpi-lua" \
  -L"$build/mpi" -ltally-mpi -L"$build/rt" -ltally-rt \
  -Wl,-rpath,"$build/mpi:$build/rt" -lm -ldl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs" >&2
printf '| ranks | modules | values | bytes a rank | total ms (median of %s) | min | max | key union ms | values ms | paths ms |\n' "$runs"
printf '|------:|--------:|-------:|-------------:|------:|----:|----:|----:|----:|----:|\n'
for np in ${ranks//,/ }; do
  : > "$work/lines"
  for _ in $(seq "$runs"); do
    (cd "$work" && mpirun --oversubscribe -np "$np" -x TALLY_VERBOSE=1 \
       -x TALLY_OUTPUT="$work/reduced.data" ./mpi-lua 2>&1 >/dev/null |
       grep 'libtally-mpi: reduced' >> "$work/lines")
  done
  python3 - "$np" "$work/lines" <<'PY'
import re, statistics, sys
np, path = sys.argv[1], sys.argv[2]
rows = [l for l in open(path) if "reduced" in l]
num = lambda pat: [float(re.search(pat, l).group(1)) for l in rows]
tot = num(r"in ([\d.]+) ms")
m = re.search(r"reduced \d+ ranks: (\d+) modules, (\d+) values \((\d+) bytes", rows[0])
print("| %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
    np, m.group(1), m.group(2), m.group(3), statistics.median(tot), min(tot), max(tot),
    statistics.median(num(r"key union ([\d.]+)")), statistics.median(num(r"values ([\d.]+)")),
    statistics.median(num(r"paths ([\d.]+)"))))
PY
done
