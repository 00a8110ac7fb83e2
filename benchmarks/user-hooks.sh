#!/usr/bin/env bash
# user-hooks.sh - what tally's user hooks cost, inlined and out of line
# (the "src" and "src (inline)" rows of the LOPI paper's Table 2), against
# -finstrument-functions and tally's own counting modes.
#
# Usage: benchmarks/user-hooks.sh [--quick] [--runs N] [--work DIR] [--tally DIR]
#
#   --quick      smaller inputs and 3 paired wall-clock runs instead of 5
#   --runs N     number of paired wall-clock runs per variant
#   --work DIR   where sources are fetched, built and run
#                (default: build/bench-work in the repository; nothing there
#                is tracked by git)
#   --tally DIR  the tally source tree to measure, built in DIR/build with
#                DIR/dev build (default: this repository).  To measure a
#                commit while the working tree changes, export it:
#                  git archive HEAD | tar -x -C DIR
#                  git rev-parse --short HEAD >DIR/.tally-commit
#
# What it does (progress on stderr, the result table on stdout and in
# WORK/user-hooks.md):
#
# 1. Installs what is missing (gcc, valgrind, binutils, dpkg-dev, tcl, make)
#    and builds tally with ./dev build.
# 2. Fetches the Debian sources of lua5.4 and sqlite3 with
#    `apt-get source --download-only` into WORK/src (adding a deb-src entry,
#    /etc/apt/sources.list.d/debian-src.sources, when apt has none) and
#    unpacks them with dpkg-source -x (Debian patches applied).
# 3. Builds two programs at -O2, each in six variants:
#      lua         the lua5.4 interpreter: every src/*.c except luac.c,
#                  compiled directly with gcc (not Debian's libtool build),
#                  -DLUA_COMPAT_5_3 -DLUA_USE_LINUX, running
#                  benchmarks/lua-workload.lua
#      speedtest1  sqlite's own benchmark, test/speedtest1.c, with the
#                  amalgamation sqlite3.c made by the source package's
#                  `configure && make sqlite3.c` (upstream default compile
#                  options), run as `speedtest1 --memdb --size N`
#    variants:
#      base          (a) uninstrumented
#      lopi-inline   (b) hooks=user:lopi at=early, benchmarks/lopi-hooks.h:
#                        LOPI's operation, inlined by GCC
#      lopi-call     (c) the same header with -DLOPI_OUT_OF_LINE: the same
#                        static hooks marked noinline, so each is a call
#      cyg           (d) -finstrument-functions, benchmarks/lopi-cyg.c does
#                        the same operation (address hash + shadow stack)
#      tally-inline  (e) tally's counters, hooks=inline at=late
#      tally-call    (e) tally's counters, hooks=call at=late
# 4. Checks each build: its output equals the baseline's (speedtest1's
#    timings removed), the hook call sites left in the binary (objdump -d:
#    0 calls to lopi_enter/lopi_exit in lopi-inline, some in lopi-call), the
#    number of calls the instrumentation counted, and that the function ids
#    fit lopi-hooks.h's arrays.
# 5. Measures instructions (valgrind --tool=cachegrind --cache-sim=no, the
#    whole run) and wall-clock time: for each variant, N runs of the baseline
#    and N of the variant, alternated (base first on odd rounds, variant
#    first on even ones); the table gives the medians and the ratio of the
#    variant's median to the baseline's median of the same pairing.
#
# Builds are cached in WORK/bin, keyed by the compiler, the flags, tally's
# plugin and runtime and the benchmark's own files.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

quick=0
runs=
work="$repo/build/bench-work"
tally="$repo"

. "$here/args.sh"
bench_args '|quick|runs:a number|work:a directory|tally:a directory|' "$@"

# Inputs: wall-clock runs take a few seconds uninstrumented; cachegrind runs
# use the same input in full mode and a smaller one with --quick.
if [ $quick = 1 ]; then
  : "${runs:=3}"
  lua_scale=40; lua_cg_scale=10
  sq_size=25; sq_cg_size=10
else
  : "${runs:=5}"
  lua_scale=150; lua_cg_scale=150
  sq_size=100; sq_cg_size=100
fi
case $runs in ''|*[!0-9]*|0) echo "user-hooks.sh: --runs wants a positive number" >&2; exit 2 ;; esac

mkdir -p "$work"
work=$(cd "$work" && pwd)
[ -x "$tally/dev" ] && [ -d "$tally/include/tally" ] || { echo "user-hooks.sh: $tally is not a tally source tree" >&2; exit 2; }
tally=$(cd "$tally" && pwd)
jobs=$(nproc)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'user-hooks.sh: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root to run: $*"
  fi
}

# ---------------------------------------------------------------- 1. tools

install_deps() {
  local want=(gcc make binutils valgrind dpkg-dev tcl) missing=()
  for p in "${want[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# ---------------------------------------------------------------- 2. sources

has_deb_src() {
  grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list && return 0
  grep -Eqs '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/*.sources && return 0
  return 1
}

ensure_deb_src() {
  has_deb_src && return 0
  local id codename
  id=$(. /etc/os-release && echo "${ID:-}")
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ "$id" = debian ] && [ -n "$codename" ] ||
    die "apt has no deb-src entry and this is not Debian ($id); add one for bookworm by hand"
  log "adding /etc/apt/sources.list.d/debian-src.sources (deb-src for $codename) and running apt-get update"
  printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" \
    "Suites: $codename $codename-updates" "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
    as_root tee /etc/apt/sources.list.d/debian-src.sources >/dev/null
  as_root apt-get update -qq
}

# The newest .dsc of source package $1 in WORK/src.
dsc_of() { ls "$work/src/$1"_*.dsc 2>/dev/null | sort -V | tail -n 1; }

fetch_sources() {
  mkdir -p "$work/src"
  local need=()
  for p in lua5.4 sqlite3; do [ -n "$(dsc_of $p)" ] || need+=("$p"); done
  if [ ${#need[@]} -gt 0 ]; then
    ensure_deb_src
    log "fetching Debian sources: ${need[*]}"
    if ! (cd "$work/src" && apt-get source --download-only "${need[@]}") >"$work/logs/apt-source.log" 2>&1; then
      # A deb-src entry added since the last update needs one.
      log "apt-get source failed; running apt-get update and retrying"
      as_root apt-get update -qq
      (cd "$work/src" && apt-get source --download-only "${need[@]}") >"$work/logs/apt-source.log" 2>&1 ||
        { tail -n 20 "$work/logs/apt-source.log" >&2; die "apt-get source failed (log: $work/logs/apt-source.log)"; }
    fi
  fi
  for p in lua5.4 sqlite3; do
    local dsc dir
    dsc=$(dsc_of $p)
    [ -n "$dsc" ] || die "no $p .dsc in $work/src"
    dir=$(unpacked_dir "$dsc")
    if [ ! -d "$dir" ]; then
      log "unpacking $(basename "$dsc")"
      (cd "$work/src" && dpkg-source -x "$(basename "$dsc")") >"$work/logs/dpkg-source-$p.log" 2>&1 ||
        die "dpkg-source -x $(basename "$dsc") failed (log: $work/logs/dpkg-source-$p.log)"
    fi
  done
}

# Directory dpkg-source -x makes for a .dsc: SOURCE-UPSTREAMVERSION.
unpacked_dir() {
  local base ver
  base=$(basename "$1" .dsc)
  ver=${base#*_}; ver=${ver#*:}; ver=${ver%-*}
  echo "$work/src/${base%%_*}-$ver"
}

# Version string of source package $1, from its .dsc.
version_of() { basename "$(dsc_of "$1")" .dsc | sed 's/^[^_]*_//'; }

# ---------------------------------------------------------------- 3. builds

plugin="$tally/build/plugin/tally.so"
rtlib="$tally/build/rt/libtally-rt.a"
tally_cmd="$tally/build/tools/tally"
variants=(base lopi-inline lopi-call cyg tally-inline tally-call)
programs=(lua speedtest1)

declare -A vlabel=(
  [base]="(a) uninstrumented"
  [lopi-inline]="(b) user hooks inlined (\`hooks=user:lopi at=early\`)"
  [lopi-call]="(c) user hooks out of line (same, hooks \`noinline\`)"
  [cyg]="(d) \`-finstrument-functions\` + address hash"
  [tally-inline]="(e) tally counters \`hooks=inline at=late\`"
  [tally-call]="(e) tally counters \`hooks=call at=late\`"
)

# Variant $1: its compiler flags on top of -O2 and the program's own
# (v_flags), the objects linked in uninstrumented, built by build_support
# (v_extra), and the hook functions whose call sites the objdump check
# counts (v_hookre).
variant() {
  local early="-fplugin=$plugin -fplugin-arg-tally-hooks=user:lopi -fplugin-arg-tally-at=early"
  v_flags= v_extra= v_hookre=
  case $1 in
    base) ;;
    lopi-inline|lopi-call)
      v_flags="-I$tally/include -I$here -include lopi-hooks.h $early"
      [ "$1" = lopi-call ] && v_flags+=" -DLOPI_OUT_OF_LINE"
      v_extra="$work/obj/lopi-data.o $rtlib" v_hookre="lopi_(enter|exit)" ;;
    cyg)
      v_flags=-finstrument-functions v_extra="$work/obj/lopi-cyg.o"
      v_hookre="__cyg_profile_func_(enter|exit)" ;;
    tally-inline|tally-call)
      v_flags="-fplugin=$plugin -fplugin-arg-tally-hooks=${1#tally-} -fplugin-arg-tally-at=late"
      v_extra=$rtlib v_hookre="__tally_(enter|exit)" ;;
    *) echo "user-hooks.sh: no variant $1" >&2; exit 2 ;;
  esac
}

lua_dir=; sq_dir=; amalg="$work/sqlite-amalg"

prog_sources() {
  case $1 in
    lua) for f in "$lua_dir"/src/*.c; do [ "${f##*/}" = luac.c ] || echo "$f"; done ;;
    speedtest1) echo "$amalg/sqlite3.c"; echo "$sq_dir/test/speedtest1.c" ;;
  esac
}
prog_cflags() {
  case $1 in
    # A fixed string-hash seed: by default it mixes time() and ASLR
    # addresses, so table layouts and thus the work would change per run.
    lua) echo "-I$work/lua-include -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -Dluai_makeseed(L)=0u" ;;
    speedtest1) echo "-I$amalg" ;;
  esac
}
prog_libs() {
  case $1 in
    lua) echo "-lm -ldl" ;;
    speedtest1) echo "-lm -lpthread -ldl" ;;
  esac
}
# Command line of program $1 (binary $2) for input size $3.
prog_cmd() {
  case $1 in
    lua) echo "$2 $here/lua-workload.lua $3" ;;
    speedtest1) echo "$2 --memdb --size $3" ;;
  esac
}
# Output with the run-dependent parts (speedtest1's timings) removed.
normalise() {
  case $1 in
    lua) cat "$2" ;;
    speedtest1) sed -E 's/[ .]*[0-9]+\.[0-9]+s$//' "$2" ;;
  esac
}

# Debian's luaconf.h includes a header its build generates.
prepare_lua() {
  mkdir -p "$work/lua-include"
  echo "#define DEB_HOST_MULTIARCH \"$(gcc -print-multiarch)\"" >"$work/lua-include/lua5.4-deb-multiarch.h"
}

prepare_sqlite() {
  if [ ! -s "$amalg/sqlite3.c" ] || [ ! -s "$amalg/sqlite3.h" ]; then
    log "generating sqlite3.c: configure && make sqlite3.c (log: $work/logs/sqlite-amalg.log)"
    rm -rf "$amalg"; mkdir -p "$amalg"
    (cd "$amalg" && "$sq_dir/configure" && make sqlite3.c) >"$work/logs/sqlite-amalg.log" 2>&1 ||
      { tail -n 20 "$work/logs/sqlite-amalg.log" >&2; die "making sqlite3.c failed"; }
  fi
}

build_support() {
  mkdir -p "$work/obj"
  gcc -O2 -I"$tally/include" -I"$here" -c "$here/lopi-data.c" -o "$work/obj/lopi-data.o"
  gcc -O2 -c "$here/lopi-cyg.c" -o "$work/obj/lopi-cyg.o"
}

# What a build depends on, hashed: a changed plugin or header rebuilds.
build_key() {
  local prog=$1 v=$2
  {
    gcc --version | head -n 1
    variant "$v"
    echo "$prog $v -O2 $(prog_cflags "$prog") $v_flags $(prog_libs "$prog")"
    prog_sources "$prog"
    sha256sum "$plugin" "$tally/build/plugin/tally-impl.so" "$rtlib" \
      "$here"/lopi-hooks.h "$here"/lopi-data.c "$here"/lopi-cyg.c "$here"/support/cyg-table.h \
      "$tally"/include/tally/*.h 2>/dev/null
    prog_sources "$prog" | xargs sha256sum
  } | sha256sum | cut -d' ' -f1
}

declare -A built failed_why

# Build program $1 in variant $2 into WORK/bin/$2/$1; on failure record why.
# Every variant's binary has the same name and runs as ./NAME from its own
# directory: lua puts argv[0] in a table, and a longer name would change
# its allocations and so the collector's work.
build_one() {
  local prog=$1 v=$2 bin="$work/bin/$2/$1" objdir="$work/obj/$1-$2"
  local logf="$work/logs/build-$1-$2.log" key
  key=$(build_key "$prog" "$v")
  if [ -x "$bin" ] && [ "$(cat "$bin.key" 2>/dev/null)" = "$key" ]; then
    built[$prog-$v]=1
    return 0
  fi
  rm -rf "$objdir" "$bin" "$bin.key"; mkdir -p "$objdir" "$work/bin/$v"
  : >"$logf"
  local pids=() objs=() src obj flags
  variant "$v"
  flags="-O2 $(prog_cflags "$prog") $v_flags"
  for src in $(prog_sources "$prog"); do
    obj="$objdir/$(basename "$src" .c).o"
    objs+=("$obj")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    # shellcheck disable=SC2086
    (gcc $flags -c "$src" -o "$obj" >"$obj.log" 2>&1) &
    pids+=($!)
  done
  local ok=1 p
  for p in "${pids[@]}"; do wait "$p" || ok=0; done
  cat "$objdir"/*.log >>"$logf" 2>/dev/null || true
  if [ $ok = 1 ]; then
    # shellcheck disable=SC2046,SC2086
    gcc -O2 "${objs[@]}" $v_extra $(prog_libs "$prog") -o "$bin" >>"$logf" 2>&1 || ok=0
  fi
  if [ $ok = 1 ]; then
    echo "$key" >"$bin.key"
    built[$prog-$v]=1
  else
    failed_why[$prog-$v]="build failed: $(grep -m1 -E 'error|undefined' "$logf" | cut -c1-160)"
    log "  FAILED (log: $logf)"
  fi
}

# ---------------------------------------------------------------- 4./5. runs

declare -A ir calls_note calls_n sites text_size out_ok

# Calls to the hook functions left in binary $2 of variant $1.
count_sites() {
  variant "$1"
  [ -n "$v_hookre" ] || { echo "-"; return; }
  objdump -d --no-show-raw-insn "$2" | grep -cE "call +[0-9a-f]+ <($v_hookre)[.>@]" || true
}

# Instructions of program $1 variant $2, plus the output and the counts.
cachegrind_one() {
  local prog=$1 v=$2 scale=$3
  local base="$work/runs/cg-$prog-$v"
  rm -f "$base".*
  cd "$work/bin/$v"
  # shellcheck disable=SC2046
  TALLY_OUTPUT="$base.data" valgrind --tool=cachegrind --cache-sim=no \
    --cachegrind-out-file="$base.cg" $(prog_cmd "$prog" "./$prog" "$scale") \
    >"$base.out" 2>"$base.err" || echo "exit status $?" >"$base.failed"
}

# After cachegrind_one: read the results of program $1 variant $2.
collect_cg() {
  local prog=$1 v=$2 base="$work/runs/cg-$1-$2" bin="$work/bin/$2/$1"
  if [ -e "$base.failed" ] || [ ! -s "$base.cg" ]; then
    failed_why[$prog-$v]="run failed ($(cat "$base.failed" 2>/dev/null)); see $base.err"
    return
  fi
  ir[$prog-$v]=$(awk '/^summary:/ { print $2 }' "$base.cg")
  if [ "$v" != base ]; then
    if cmp -s <(normalise "$prog" "$base.out") <(normalise "$prog" "$work/runs/cg-$prog-base.out"); then
      out_ok[$prog-$v]=same
    else
      out_ok[$prog-$v]=DIFFERENT
    fi
  else
    out_ok[$prog-$v]=reference
  fi
  sites[$prog-$v]=$(count_sites "$v" "$bin")
  text_size[$prog-$v]=$(size -A "$bin" | awk '$1 == ".text" { printf "%.0f", $2 / 1024 }')
  local summary fns
  case $v in
    lopi-*|cyg)
      summary=$(grep -m1 '^lopi: ' "$base.err" || true)
      calls_note[$prog-$v]=$(echo "$summary" | sed -E 's/^lopi: calls=([0-9]+) functions=([0-9]+).*/\1 calls, \2 fns called/')
      calls_n[$prog-$v]=$(echo "$summary" | sed -nE 's/^lopi: calls=([0-9]+).*/\1/p')
      if [ "${v%%-*}" = lopi ]; then
        # The runtime lists every registered function; ids are 0..n-1.
        fns=$("$tally_cmd" report --top 1 "$base.data" 2>/dev/null |
              sed -nE '1s/.* ([0-9]+) functions?,.*/\1/p')
        local max
        max=$(sed -nE 's/^#define LOPI_MAX_FNS ([0-9]+).*/\1/p' "$here/lopi-hooks.h")
        if [ -z "$fns" ] || [ "$fns" -gt "$max" ]; then
          failed_why[$prog-$v]="function ids (${fns:-?}) do not fit LOPI_MAX_FNS=$max"
        fi
        calls_note[$prog-$v]+=" of ${fns:-?} instrumented"
      fi
      if grep -q 'table full' "$base.err"; then calls_note[$prog-$v]+=" (TABLE FULL)"; fi
      ;;
    tally-*)
      calls_note[$prog-$v]=$("$tally_cmd" report --top 1 "$base.data" 2>/dev/null |
        sed -nE '1s/.* ([0-9]+) functions?, ([0-9]+) calls.*/\2 calls, \1 fns instrumented/p')
      calls_n[$prog-$v]=${calls_note[$prog-$v]%% calls*}
      ;;
    base) calls_note[$prog-$v]="-" ;;
  esac
}

now() { echo "$EPOCHREALTIME"; }

# Wall-clock seconds of one run of program $1 variant $2.
time_one() {
  local prog=$1 v=$2 t0 t1
  local cmd
  cmd=$(prog_cmd "$prog" "./$prog" "$3")
  cd "$work/bin/$v"
  t0=$(now)
  # shellcheck disable=SC2086
  TALLY_OUTPUT="$work/runs/wall-$prog-$v.data" $cmd >/dev/null 2>"$work/runs/wall-$prog-$v.err" ||
    { echo "FAIL"; return; }
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "nan" || b == "nan") print "-"; else printf "%.3f\n", a / b }'; }
commas() { echo "$1" | sed -E ':a; s/^([0-9]+)([0-9]{3})/\1,\2/; ta'; }

declare -A wall_v wall_b wall_pr

# ---------------------------------------------------------------- main

mkdir -p "$work/logs" "$work/runs"
start_time=$(date +%s)
log "work directory: $work ($([ $quick = 1 ] && echo quick || echo full) mode, $runs paired runs)"

install_deps
log "building tally ($tally/dev build)"
"$tally/dev" build
[ -f "$plugin" ] && [ -f "$rtlib" ] || die "tally did not build ($plugin, $rtlib)"

# Which tally was measured: a git tree's commit, or the export's stamp.
if git -C "$tally" rev-parse --show-toplevel 2>/dev/null | grep -qx "$tally"; then
  tally_desc="$(git -C "$tally" describe --always --dirty) ($tally)"
elif [ -f "$tally/.tally-commit" ]; then
  tally_desc="$(cat "$tally/.tally-commit") (clean export in $tally)"
else
  tally_desc="$tally (not a git tree)"
fi

fetch_sources
lua_dir=$(unpacked_dir "$(dsc_of lua5.4)")
sq_dir=$(unpacked_dir "$(dsc_of sqlite3)")
prepare_lua
prepare_sqlite
build_support

n_builds=$(( ${#programs[@]} * ${#variants[@]} )); i=0
for prog in "${programs[@]}"; do
  for v in "${variants[@]}"; do
    i=$((i + 1))
    log "[build $i/$n_builds] $prog $v"
    build_one "$prog" "$v"
  done
done
[ -n "${built[lua-base]:-}" ] && [ -n "${built[speedtest1-base]:-}" ] ||
  die "a baseline failed to build; see $work/logs"

# Cachegrind runs, as many at a time as there are CPUs (the instruction
# count does not depend on the load; the wall-clock runs below are alone).
cg_scale() { [ "$1" = lua ] && echo "$lua_cg_scale" || echo "$sq_cg_size"; }
wall_scale() { [ "$1" = lua ] && echo "$lua_scale" || echo "$sq_size"; }
todo=()
for prog in "${programs[@]}"; do
  for v in "${variants[@]}"; do
    [ -n "${built[$prog-$v]:-}" ] && todo+=("$prog $v")
  done
done
i=0
for item in "${todo[@]}"; do
  i=$((i + 1))
  set -- $item
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  log "[cachegrind $i/${#todo[@]}] $1 $2 ($(prog_cmd "$1" "$1" "$(cg_scale "$1")"))"
  cachegrind_one "$1" "$2" "$(cg_scale "$1")" &
done
wait
for item in "${todo[@]}"; do
  set -- $item
  collect_cg "$1" "$2"
done

# Paired wall-clock runs.
n_wall=0
for prog in "${programs[@]}"; do
  for v in "${variants[@]}"; do
    [ "$v" != base ] && [ -n "${ir[$prog-$v]:-}" ] && [ -z "${failed_why[$prog-$v]:-}" ] &&
      n_wall=$((n_wall + 2 * runs))
  done
done
i=0
for prog in "${programs[@]}"; do
  s=$(wall_scale "$prog")
  (time_one "$prog" base "$s") >/dev/null # warm the page cache
  for v in "${variants[@]}"; do
    [ "$v" != base ] && [ -n "${ir[$prog-$v]:-}" ] && [ -z "${failed_why[$prog-$v]:-}" ] || continue
    tb=(); tv=(); pr=()
    for r in $(seq 1 "$runs"); do
      if [ $((r % 2)) = 1 ]; then order="base $v"; else order="$v base"; fi
      tbr=; tvr=
      for w in $order; do
        i=$((i + 1))
        log "[wall $i/$n_wall] $prog $w (pair $r/$runs with $v)"
        t=$(time_one "$prog" "$w" "$s")
        [ "$t" = FAIL ] && { failed_why[$prog-$w]="a wall-clock run failed"; continue; }
        if [ "$w" = base ]; then tbr=$t; tb+=("$t"); else tvr=$t; tv+=("$t"); fi
      done
      [ -n "$tbr" ] && [ -n "$tvr" ] && pr+=("$(ratio "$tvr" "$tbr")")
    done
    wall_b[$prog-$v]=$(echo "${tb[*]}" | median)
    wall_v[$prog-$v]=$(echo "${tv[*]}" | median)
    wall_pr[$prog-$v]=-
    [ ${#pr[@]} -gt 0 ] &&
      wall_pr[$prog-$v]=$(printf '%s\n' "${pr[@]}" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }')
  done
done

# ---------------------------------------------------------------- report

report() {
  local cpu
  cpu=$(sed -nE '0,/^model name/s/^model name[[:space:]]*: //p' /proc/cpuinfo)
  echo "## User hooks: inlined vs out of line (LOPI Table 2, \"src\" vs \"src (inline)\")"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); mode: $([ $quick = 1 ] && echo quick || echo full); $runs paired wall-clock runs per variant"
  echo "- machine: $(nproc) CPUs, $cpu; $(uname -sr)"
  echo "- compiler: $(gcc --version | head -n 1); all builds -O2"
  echo "- tally: $tally_desc"
  echo "- sources: lua5.4 $(version_of lua5.4), sqlite3 $(version_of sqlite3) (Debian source packages)"
  echo "- lua: \`lua lua-workload.lua $lua_scale\` (wall), \`... $lua_cg_scale\` (cachegrind)"
  echo "- speedtest1: \`speedtest1 --memdb --size $sq_size\` (wall), \`--size $sq_cg_size\` (cachegrind)"
  echo "- Ir: instructions of the whole run (\`valgrind --tool=cachegrind --cache-sim=no\`); extra Ir per call: (Ir - base Ir) / calls the variant counted"
  echo "- wall: median of $runs runs of the variant, median of the $runs baseline runs alternated with them, their ratio, and the range of the per-pair ratios"
  echo "- hook call sites: \`call\` instructions to the variant's hook functions in \`objdump -d\`; counted: calls seen by the instrumentation (at=early and -finstrument-functions count source-level calls, inlined ones included; at=late counts calls of the bodies left after inlining)"
  echo
  local prog v
  for prog in "${programs[@]}"; do
    echo "### $prog"
    echo
    echo "| variant | Ir (cachegrind) | Ir ÷ base | extra Ir per call | wall median s | base median s (same pairing) | wall ÷ base | per-pair ratios | hook call sites | .text KiB | counted | output |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    for v in "${variants[@]}"; do
      local k=$prog-$v
      if [ -n "${failed_why[$k]:-}" ] && [ -z "${ir[$k]:-}" ]; then
        echo "| ${vlabel[$v]} | ${failed_why[$k]} | | | | | | | | | | |"
        continue
      fi
      local irr wv wb wr wp per
      irr=$(ratio "${ir[$k]}" "${ir[$prog-base]}")
      per=$(awk -v a="${ir[$k]}" -v b="${ir[$prog-base]}" -v n="${calls_n[$k]:-0}" \
              'BEGIN { if (n + 0 > 0) printf "%.1f\n", (a - b) / n; else print "-" }')
      if [ "$v" = base ]; then wv=-; wb=-; wr=-; wp=-; else
        wv=${wall_v[$k]:--}; wb=${wall_b[$k]:--}; wr=$(ratio "$wv" "$wb"); wp=${wall_pr[$k]:--}; fi
      echo "| ${vlabel[$v]} | $(commas "${ir[$k]}") | $irr | $per | $wv | $wb | $wr | $wp | ${sites[$k]} | ${text_size[$k]} | ${calls_note[$k]} | ${out_ok[$k]}${failed_why[$k]:+; ${failed_why[$k]}} |"
    done
    echo
  done
  echo "### Checks"
  echo
  for prog in "${programs[@]}"; do
    local si=${sites[$prog-lopi-inline]:-?} sc=${sites[$prog-lopi-call]:-?} verdict
    if [ "$si" = 0 ] && [ "$sc" != "?" ] && [ "$sc" -gt 0 ]; then verdict=OK; else verdict=FAILED; fi
    echo "- $prog: \`objdump -d\` calls to lopi_enter/lopi_exit: lopi-inline $si (want 0), lopi-call $sc (want > 0): $verdict"
    local ci=${calls_n[$prog-lopi-inline]:-} cc=${calls_n[$prog-lopi-call]:-}
    # Equal, or nearly: a program whose work depends on addresses (lua's
    # luaS_new cache is keyed by the address of the C string, often on the
    # stack) does a few calls more or less when the stack frames differ.
    if [ -n "$ci" ] && [ "$ci" = "$cc" ]; then verdict=OK
    elif [ -n "$ci" ] && [ -n "$cc" ] &&
         awk -v a="$ci" -v b="$cc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= a * 1e-6) }'; then
      verdict="OK (differ by $(awk -v a="$ci" -v b="$cc" 'BEGIN { d = a - b; print d < 0 ? -d : d }'), under 1 in 10^6: address-dependent work in the program)"
    else verdict=FAILED; fi
    echo "- $prog: calls counted by the hooks, lopi-inline $ci, lopi-call $cc (want equal): $verdict"
  done
  echo
  echo "(measured in $(( $(date +%s) - start_time )) s, including builds)"
}

report | tee "$work/user-hooks.md"
log "table written to $work/user-hooks.md"
