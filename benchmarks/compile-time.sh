#!/usr/bin/env bash
# compile-time.sh - what -fplugin=tally adds to compile time and memory:
# the sqlite3 amalgamation (one 9 MB C file) compiled at -O2 without and
# with the plugin, in paired alternating runs.
#
# Usage: benchmarks/compile-time.sh [--runs N] [--modes LIST] [--work DIR]
#
#   --runs N      pairs per mode (default 3)
#   --modes LIST  comma-separated subset of inline-late,call-late,
#                 inline-early,call-early (hooks=H at=A), count-late and
#                 visited-late (blocks=count or visited, hooks=inline,
#                 at=late) (default: these six), count-only (blocks=count
#                 hooks=none, benchmarks/run's tally-blocks-count) and
#                 gcov (-fprofile-arcs -fprofile-update=single, no plugin:
#                 the peer count-only is measured against)
#   --work DIR    where the source is fetched and compiled (default:
#                 build/bench-work, shared with user-hooks.sh; not tracked)
#
# What it does (progress on stderr, the table on stdout and in
# WORK/compile-time.md):
#
# 1. Installs what is missing (gcc, make, dpkg-dev, tcl, time), builds tally
#    with ./dev build.
# 2. Fetches the Debian source of sqlite3 (`apt-get source --download-only`,
#    adding a deb-src entry when apt has none), unpacks it and makes the
#    amalgamation with `configure && make sqlite3.c`.
# 3. For each mode, N pairs: `gcc -O2 -c sqlite3.c` without the plugin and
#    with `-fplugin=tally` and the mode's options,
#    the order alternating (uninstrumented first in odd pairs, second in
#    even ones), each under /usr/bin/time for elapsed time, CPU time
#    (user+sys) and peak RSS.
# 4. Reports per mode the median of each side and the median and min-max of
#    the per-pair ratios (instrumented / uninstrumented), for wall-clock and
#    CPU time, and the largest peak RSS of each side.  No figure is
#    hard-coded: everything comes from this run.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

runs=3
modes=inline-late,call-late,inline-early,call-early,count-late,visited-late
work="$repo/build/bench-work"

. "$here/args.sh"
bench_args '|runs:a number|modes:a list|work:a directory|' "$@"
case $runs in ''|*[!0-9]*|0) echo "compile-time.sh: --runs wants a positive number" >&2; exit 2 ;; esac
IFS=, read -ra modes <<<"$modes"
for m in "${modes[@]}"; do
  case $m in inline-late|call-late|inline-early|call-early|count-late|visited-late|count-only|gcov) ;;
    *) echo "compile-time.sh: unknown mode '$m' (inline-late,call-late,inline-early,call-early,count-late,visited-late,count-only,gcov)" >&2; exit 2 ;;
  esac
done

mkdir -p "$work/logs"
work=$(cd "$work" && pwd)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'compile-time.sh: %s\n' "$*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root to run: $*"; fi
}

# ---------------------------------------------------------------- 1. tools

want=(gcc make dpkg-dev tcl time); missing=()
for p in "${want[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
log "building tally (./dev build)"
"$repo/dev" build
plugin="$repo/build/plugin/tally.so"

# ---------------------------------------------------------------- 2. source

has_deb_src() {
  grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
  grep -Eqs '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/*.sources && return 0
  return 1
}
dsc=$(ls "$work"/src/sqlite3_*.dsc 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$dsc" ]; then
  mkdir -p "$work/src"
  if ! has_deb_src; then
    log "apt has no deb-src entry: adding /etc/apt/sources.list.d/debian-src.sources (bookworm)"
    printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" \
      "Suites: bookworm bookworm-updates" "Components: main" \
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
      as_root tee /etc/apt/sources.list.d/debian-src.sources >/dev/null
    as_root apt-get update -qq
  fi
  log "fetching the Debian source of sqlite3"
  (cd "$work/src" && apt-get source --download-only sqlite3) >"$work/logs/apt-source-sqlite3.log" 2>&1 ||
    { as_root apt-get update -qq
      (cd "$work/src" && apt-get source --download-only sqlite3) >"$work/logs/apt-source-sqlite3.log" 2>&1 ||
        die "apt-get source sqlite3 failed (log: $work/logs/apt-source-sqlite3.log)"; }
  dsc=$(ls "$work"/src/sqlite3_*.dsc | sort -V | tail -n 1)
fi
base=$(basename "$dsc" .dsc); ver=${base#*_}; ver=${ver#*:}; ver=${ver%-*}
src="$work/src/sqlite3-$ver"
if [ ! -d "$src" ]; then
  log "unpacking $(basename "$dsc")"
  (cd "$work/src" && dpkg-source -x "$(basename "$dsc")") >"$work/logs/dpkg-source-sqlite3.log" 2>&1 ||
    die "dpkg-source -x failed (log: $work/logs/dpkg-source-sqlite3.log)"
fi
am="$work/compile-time/amalgamation"
if [ ! -s "$am/sqlite3.c" ]; then
  log "making the amalgamation (configure && make sqlite3.c)"
  rm -rf "$am"; mkdir -p "$am"
  (cd "$am" && "$src/configure" && make sqlite3.c) >"$work/logs/compile-time-amalgamation.log" 2>&1 ||
    die "making sqlite3.c failed (log: $work/logs/compile-time-amalgamation.log)"
fi

# ---------------------------------------------------------------- 3. runs

out="$work/compile-time"
mkdir -p "$out/obj"
# Compile once with FLAGS; append "elapsed cpu maxrss_kb" to FILE.
measure() {
  local file=$1 tag=$2; shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$out/time.txt" \
    gcc -O2 -c "$am/sqlite3.c" -o "$out/obj/$tag.o" "$@" 2>"$out/gcc-$tag.err" ||
    die "gcc $* failed: $(head -c 300 "$out/gcc-$tag.err")"
  [ -s "$out/obj/$tag.o" ] || die "gcc $* wrote no object"
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$out/time.txt" >>"$file"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

gcc_version=$(gcc -dumpfullversion)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "gcc $gcc_version, sqlite $ver amalgamation ($(wc -c <"$am/sqlite3.c") bytes), $runs pair(s) per mode"
for m in "${modes[@]}"; do
  rm -f "$out/$m.base" "$out/$m.tally"
  case $m in
    gcov) flags=(-fprofile-arcs -fprofile-update=single) ;;
    count-only) flags=(-fplugin="$plugin" -fplugin-arg-tally-blocks=count -fplugin-arg-tally-hooks=none) ;;
    count-*|visited-*) flags=(-fplugin="$plugin" -fplugin-arg-tally-blocks="${m%-*}" -fplugin-arg-tally-at="${m#*-}") ;;
    *) flags=(-fplugin="$plugin" -fplugin-arg-tally-hooks="${m%-*}" -fplugin-arg-tally-at="${m#*-}") ;;
  esac
  for ((i = 1; i <= runs; i++)); do
    log "$m: pair $i of $runs"
    if ((i % 2)); then
      measure "$out/$m.base" base; measure "$out/$m.tally" "$m" "${flags[@]}"
    else
      measure "$out/$m.tally" "$m" "${flags[@]}"; measure "$out/$m.base" base
    fi
  done
done

# ---------------------------------------------------------------- 4. table

{
  echo "gcc $gcc_version -O2 -c sqlite3.c (sqlite $ver), $runs pair(s) per mode, $(nproc) CPUs, load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| mode | base wall s | tally wall s | wall ratio median (min-max) | CPU ratio median (min-max) | peak RSS base / tally MB |"
  echo "|---|---|---|---|---|---|"
  for m in "${modes[@]}"; do
    bw=$(cut -d' ' -f1 "$out/$m.base" | median); tw=$(cut -d' ' -f1 "$out/$m.tally" | median)
    paste -d' ' "$out/$m.base" "$out/$m.tally" | awk '{ printf "%.4f %.4f\n", $4 / $1, $5 / $2 }' >"$out/$m.ratios"
    wr=$(cut -d' ' -f1 "$out/$m.ratios" | median); cr=$(cut -d' ' -f2 "$out/$m.ratios" | median)
    wmin=$(cut -d' ' -f1 "$out/$m.ratios" | sort -g | head -n1); wmax=$(cut -d' ' -f1 "$out/$m.ratios" | sort -g | tail -n1)
    cmin=$(cut -d' ' -f2 "$out/$m.ratios" | sort -g | head -n1); cmax=$(cut -d' ' -f2 "$out/$m.ratios" | sort -g | tail -n1)
    br=$(cut -d' ' -f3 "$out/$m.base" | sort -g | tail -n1); tr=$(cut -d' ' -f3 "$out/$m.tally" | sort -g | tail -n1)
    printf '| %s | %.2f | %.2f | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %d / %d |\n' \
      "$m" "$bw" "$tw" "$wr" "$wmin" "$wmax" "$cr" "$cmin" "$cmax" $((br / 1024)) $((tr / 1024))
  done
} | tee "$out/compile-time.md"
