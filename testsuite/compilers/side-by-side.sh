#!/usr/bin/env bash
# testsuite/compilers/side-by-side.sh A B - two GCCs, each with its own
# tally installed (meson install of build/gcc-A, then of build/gcc-B, into
# the default prefix and each GCC's own plugin directory), and each
# compiler picks its own plugin through -fplugin=tally, pkg-config, the
# installed `tally run` and -specs=tally.specs; the plugin of one loaded
# into the other says so in tally's one message.  Installs into the system
# it runs on, so testsuite/compilers/run runs it in a chroot only; both are
# uninstalled at the end.  Prints PASS/FAIL lines and "N passed, N failed".
set -uo pipefail
export LC_ALL=C
a=${1:?usage: side-by-side.sh A B}
b=${2:?usage: side-by-side.sh A B}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
npass=0 nfail=0
pass() { npass=$((npass + 1)); printf '  PASS %s\n' "$*"; }
fail() { nfail=$((nfail + 1)); printf '  FAIL %s\n' "$*"; }
cleanup() {
  for n in "$a" "$b"; do ninja -C "$repo/build/gcc-$n" uninstall >/dev/null 2>&1; done
  ldconfig
  rm -rf "$work"
}
trap cleanup EXIT

for n in "$a" "$b"; do
  if meson install -C "$repo/build/gcc-$n" --quiet --no-rebuild >"$work/install-$n.log" 2>&1; then
    pass "GCC $n: meson install into $(gcc-"$n" -print-file-name=plugin)"
  else
    fail "GCC $n: meson install failed: $(tail -n 3 "$work/install-$n.log")"
  fi
done
ldconfig

src=$repo/testsuite/progs/s-abc.c
# The calls of s-abc.c's c in a data file, and what s-abc.expected says
# (at -O0: at -O2 GCC inlines c, whose body then runs no call of its own).
want=$(awk '$1 == "c" { print $2 }' "$repo/testsuite/progs/s-abc.expected")
calls_of_c() {
  tally report --csv "$1" 2>/dev/null | awk -F, '$3 == "c" { print $1 }'
}
for n in "$a" "$b"; do
  d=$work/$n; mkdir -p "$d"
  if gcc-"$n" -O2 -fplugin=tally -c "$src" -o "$d/bare.o" 2>"$d/bare.err"; then
    pass "GCC $n: -fplugin=tally loads the plugin installed for it"
  else
    fail "GCC $n: -fplugin=tally: $(head -n 2 "$d/bare.err")"
  fi
  # shellcheck disable=SC2046 # pkg-config's words are meant to split
  if gcc-"$n" -O0 $(pkg-config --cflags tally) "$src" -o "$d/pc" $(pkg-config --libs tally) 2>"$d/pc.err" &&
     TALLY_OUTPUT="$d/pc.data" "$d/pc" >/dev/null && [ "$(calls_of_c "$d/pc.data")" = "$want" ]; then
    pass "GCC $n: pkg-config --cflags/--libs tally build and count"
  else
    fail "GCC $n: pkg-config build: $(head -n 2 "$d/pc.err") c: $(calls_of_c "$d/pc.data"), want $want"
  fi
  if gcc-"$n" -O0 -specs=tally.specs "$src" -o "$d/specs" 2>"$d/specs.err" &&
     TALLY_OUTPUT="$d/specs.data" "$d/specs" >/dev/null && [ "$(calls_of_c "$d/specs.data")" = "$want" ]; then
    pass "GCC $n: -specs=tally.specs (its own, $(gcc-"$n" -print-file-name=tally.specs)) builds and counts"
  else
    fail "GCC $n: -specs=tally.specs: $(head -n 2 "$d/specs.err") c: $(calls_of_c "$d/specs.data"), want $want"
  fi
  if (cd "$d" && CC=gcc-$n tally run -- sh -c '$CC -O0 "$0" -o run' "$src") >"$d/run.log" 2>&1 &&
     TALLY_OUTPUT="$d/run.data" "$d/run" >/dev/null && [ "$(calls_of_c "$d/run.data")" = "$want" ]; then
    pass "GCC $n: the installed tally run (last installed: GCC $b's) with CC=gcc-$n builds and counts"
  else
    fail "GCC $n: tally run with CC=gcc-$n: $(head -n 3 "$d/run.log")"
  fi
done
# The plugin of one GCC loaded by the other: tally's own message.
other=$(gcc-"$b" -print-file-name=plugin)/tally.so
if gcc-"$a" -fplugin="$other" -c "$src" -o "$work/x.o" 2>"$work/mismatch.err"; then
    fail "GCC $b's tally.so loaded into gcc-$a without an error"
elif grep -q "tally: error: -fplugin=tally was built for GCC $b\..* but is loaded into GCC $a\." "$work/mismatch.err" &&
     ! grep -q "undefined symbol" "$work/mismatch.err"; then
    pass "GCC $b's tally.so in gcc-$a: $(head -n 1 "$work/mismatch.err" | cut -c1-90)..."
else
    fail "GCC $b's tally.so in gcc-$a: $(head -n 2 "$work/mismatch.err")"
fi
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
