#!/usr/bin/env bash
# update-modes.sh - what blocks=count costs under two threads with each
# update mode (issue: "update=tls under 2 threads: within 1.5x of single's
# overhead, exact counts; atomic shown"), next to gcov's -fprofile-arcs with
# -fprofile-update=single and atomic, on benchmarks/threads.c (two threads
# sorting at the same time in the same functions).
#
# Usage: benchmarks/update-modes.sh [--pairs N] [--work DIR]
#
# For each mode: instructions (valgrind --tool=cachegrind, whole run, reduced
# input: valgrind runs the threads one at a time, so this counts the work,
# not the contention) and wall-clock time (N pairs of runs, default 7, the
# uninstrumented build and the mode alternated, base first on odd pairs;
# the ratio of each pair, then the median and the min-max over pairs).
# Every build's output must equal the uninstrumented one's, and the
# function counts of the exact modes (atomic, tls) must agree; single's are
# shown with how many calls it lost.  The table goes to stdout and to
# WORK/update-modes.md.  Uses ./build (run ./dev build first).
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
pairs=7
work="$repo/build/bench-work/update-modes"
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) pairs=${2:?--pairs needs a number}; shift ;;
    --work) work=${2:?--work needs a directory}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "update-modes.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
B="$repo/build"
for f in "$B/plugin/tally.so" "$B/rt/libtally-rt.a" "$B/tools/tally"; do
  [ -e "$f" ] || { echo "update-modes.sh: $f missing: run ./dev build" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "update-modes.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
mkdir -p "$work"; cd "$work"
log() { printf '==> %s\n' "$*" >&2; }

# name | flags (one string) | runtime
modes=(
  "base||"
  "gcov single|-fprofile-arcs -fprofile-update=single|"
  "gcov atomic|-fprofile-arcs -fprofile-update=atomic|"
  "tally count single|-fplugin=$B/plugin/tally.so -fplugin-arg-tally-blocks=count|$B/rt/libtally-rt.a"
  "tally count atomic|-fplugin=$B/plugin/tally.so -fplugin-arg-tally-blocks=count -fplugin-arg-tally-update=atomic|$B/rt/libtally-rt.a"
  "tally count tls|-fplugin=$B/plugin/tally.so -fplugin-arg-tally-blocks=count -fplugin-arg-tally-update=tls|$B/rt/libtally-rt.a"
  "tally visited|-fplugin=$B/plugin/tally.so -fplugin-arg-tally-blocks=visited -fplugin-arg-tally-hooks=none|$B/rt/libtally-rt.a"
)
slug() { echo "$1" | tr ' ' '-'; }
small=(2 20000 2)
big=(2 200000 6)

for m in "${modes[@]}"; do
  IFS='|' read -r name flags rt <<<"$m"
  s=$(slug "$name")
  log "build $name"
  # shellcheck disable=SC2086
  gcc -O2 -pthread $flags "$here/threads.c" -o "$s" $rt
done

run_quiet() { local s=$1; shift; rm -f ./*.gcda; TALLY_OUTPUT="$work/$s.data" "./$s" "$@"; }
want=$(run_quiet base "${small[@]}")
ir() {
  local s=$1; rm -f ./*.gcda
  TALLY_OUTPUT="$work/$s.cg.data" valgrind --tool=cachegrind --cache-sim=no \
    --cachegrind-out-file=/dev/null "./$s" "${small[@]}" 2>&1 >/dev/null |
    awk '/I *refs/ { gsub(",", "", $4); print $4 }'
}
now() { date +%s.%N; }
wall() { local s=$1 t0; t0=$(now); run_quiet "$s" "${big[@]}" >/dev/null; echo "$(now) - $t0" | bc; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

base_ir=$(ir base)
out="$work/update-modes.md"
{
  echo "benchmarks/update-modes.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs, gcc $(gcc -dumpfullversion), $pairs pairs"
  echo "threads.c: cachegrind on '${small[*]}', wall on '${big[*]}' (threads, n, rounds)"
  echo
  echo "| mode | instructions ratio | wall ratio median (min-max) | quicksort calls counted |"
  echo "|---|---|---|---|"
} >"$out"
for m in "${modes[@]}"; do
  IFS='|' read -r name flags rt <<<"$m"
  s=$(slug "$name")
  got=$(run_quiet "$s" "${small[@]}")
  [ "$got" = "$want" ] || { echo "update-modes.sh: $name printed '$got', base '$want'" >&2; exit 1; }
  calls=-
  if [ -f "$work/$s.data" ] && [ "${flags#*hooks=none}" = "$flags" ]; then
    calls=$("$B/tools/tally" report --csv "$work/$s.data" | awk -F, '$4 == "quicksort" { print $1 }')
  fi
  [ "$name" = base ] && continue
  log "measure $name"
  r_ir=$(echo "scale=3; $(ir "$s") / $base_ir" | bc)
  ratios=()
  for ((p = 1; p <= pairs; p++)); do
    if ((p % 2)); then tb=$(wall base); tm=$(wall "$s"); else tm=$(wall "$s"); tb=$(wall base); fi
    ratios+=("$(echo "scale=4; $tm / $tb" | bc)")
  done
  med=$(printf '%s\n' "${ratios[@]}" | median)
  lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -n1)
  hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -n1)
  printf '| %s | %s | %.3f (%.3f-%.3f) | %s |\n' "$name" "$r_ir" "$med" "$lo" "$hi" "$calls" >>"$out"
done
cat "$out"
