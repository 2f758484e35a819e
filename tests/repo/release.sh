#!/usr/bin/env bash
# tests/repo/release.sh BUILD CASE [--plant] — the facts a release states that
# the tree can check (docs/RELEASING.md). One ctest per CASE:
#
#   version   CMakeLists.txt's project version, include/hakmem.h's macros,
#             the man page's .TH line and CHANGELOG.md's first release
#             heading agree; README's install table names that library
#             file and its find_package line that MAJOR.MINOR; no "since
#             X.Y" of hakmem.h and no find_package(hakmem X.Y) of examples/
#             names a version above it
#   measures  the number of hardening measures that README, docs/TESTING.md
#             and docs/SECURITY.md give is the number of src/base/measures.h's
#             list
#   counts    docs/TESTING.md's test counts are ctest's: the quick tests and
#             the release build's (BUILD), the debug build's (a scratch
#             configure) and their sum
#   torture   docs/RELIABILITY.md has a row for every torture configuration
#             of tests/CMakeLists.txt, giving its knobs: purge1's exactly,
#             the others' each knob that differs from purge1's
#
# --plant: the case is run on a scratch copy of the files it reads with one
# staleness planted at a time; each must fail it.
set -u
B=$(cd "${1:?usage: release.sh BUILD CASE [--plant]}" && pwd)
CASE=${2:?usage: release.sh BUILD CASE [--plant]}
PLANT=${3:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-release.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# numbers as the docs write them
WORDS=(zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
       fifteen sixteen seventeen eighteen nineteen twenty)
word() { echo "${WORDS[$1]:-$1}"; }

# ------------------------------------------------------------------ version
# "X.Y.Z" from each source, R: the tree
v_cmake() { sed -n 's/^project(hakmem VERSION \([0-9.]*\) .*/\1/p' "$1/CMakeLists.txt"; }
v_header() {
  local m n p
  m=$(sed -n 's/^#define HAKMEM_VERSION_MAJOR \([0-9]*\)$/\1/p' "$1/include/hakmem.h")
  n=$(sed -n 's/^#define HAKMEM_VERSION_MINOR \([0-9]*\)$/\1/p' "$1/include/hakmem.h")
  p=$(sed -n 's/^#define HAKMEM_VERSION_PATCH \([0-9]*\)$/\1/p' "$1/include/hakmem.h")
  echo "$m.$n.$p"
}
v_man() { sed -n 's/^\.TH HAKMEM 1 "[^"]*" "hakmem \([0-9.]*\)".*/\1/p' "$1/docs/hakmem.1"; }
v_changelog() { sed -n 's/^## \([0-9][0-9.]*\) — [0-9-]*$/\1/p' "$1/CHANGELOG.md" | head -1; }
# a <= b for MAJOR.MINOR[.PATCH]
ver_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }

check_version() {
  local R=$1 v s mm
  v=$(v_cmake "$R")
  [ -n "$v" ] || { fail "CMakeLists.txt: no project(hakmem VERSION X.Y.Z ...)"; return; }
  [ "$(v_header "$R")" = "$v" ] || fail "include/hakmem.h says $(v_header "$R"), CMakeLists.txt $v"
  [ "$(v_man "$R")" = "$v" ] || fail "docs/hakmem.1's .TH says '$(v_man "$R")', CMakeLists.txt $v"
  [ "$(v_changelog "$R")" = "$v" ] || fail "CHANGELOG.md's first release is '$(v_changelog "$R")', CMakeLists.txt $v"
  grep -q '^## Unreleased$' "$R/CHANGELOG.md" || fail "CHANGELOG.md has no '## Unreleased' heading"
  mm=${v%.*}
  grep -q "^| \`lib/libhakmem.so.$v\`" "$R/README.md" || fail "README's install table does not name lib/libhakmem.so.$v"
  grep -q "find_package(hakmem $mm REQUIRED)" "$R/README.md" || fail "README's find_package line does not ask for $mm"
  for s in $(grep -o 'since [0-9][0-9.]*[0-9]' "$R/include/hakmem.h" | cut -d' ' -f2); do
    ver_le "$s" "$v" || fail "include/hakmem.h: 'since $s', above the version $v"
  done
  for s in $(sed -n 's/.*find_package(hakmem \([0-9.]*\).*/\1/p' "$R/examples/CMakeLists.txt"); do
    ver_le "$s" "$v" || fail "examples/CMakeLists.txt asks for hakmem $s, above the version $v"
  done
}

# ------------------------------------------------------------------ measures
check_measures() {
  local R=$1 n w
  n=$(grep -o 'X([a-z]*, HK_M_' "$R/src/base/measures.h" | wc -l)  # as CMakeLists.txt reads them
  [ "$n" -gt 0 ] || { fail "src/base/measures.h: no X(name, HK_M_...) entries"; return; }
  w=$(word "$n")
  grep -q "It is $w$" "$R/README.md" || grep -q "It is $w named measures" "$R/README.md" ||
    fail "README does not say 'It is $w named measures' (src/base/measures.h has $n)"
  grep -q "with the $w measure libraries" "$R/docs/TESTING.md" ||
    fail "docs/TESTING.md does not say 'the $w measure libraries' (src/base/measures.h has $n)"
  grep -q "The secure build is $w measures" "$R/docs/SECURITY.md" ||
    fail "docs/SECURITY.md does not say 'The secure build is $w measures'"
  grep -q "with all $w\.$" "$R/docs/SECURITY.md" || fail "docs/SECURITY.md does not say 'with all $w.'"
  # no other count of measures left anywhere in those pages
  local other
  # ("the other ten measures": a count of a subset)
  other=$(grep -ohiE "\b(other )?(nine|ten|eleven|twelve|thirteen|fourteen) (named )?measures?\b|\ball (nine|ten|eleven|twelve|thirteen)\b" \
          "$R/README.md" "$R/docs/TESTING.md" "$R/docs/SECURITY.md" | grep -iv "\b$w\b" | grep -iv '^other ')
  [ -z "$other" ] || fail "another count of measures: $(echo $other)"
}

# ------------------------------------------------------------------ counts
# the counts ctest gives: quick, release build, debug build
# (on a copy of the build's test files: ctest -N rewrites the directory's
# Testing/Temporary/LastTest.log, and this runs inside the suite's own
# ctest, whose log of the failures would be lost)
ctest_count() {
  local copy="$W/count.$RANDOM"
  mkdir -p "$copy"
  (cd "$1" && find . -name CTestTestfile.cmake -exec cp --parents {} "$copy" \;)
  ctest --test-dir "$copy" -N "${@:2}" 2>/dev/null | sed -n 's/^Total Tests: \([0-9]*\)$/\1/p'
  rm -rf "$copy"
}
COUNTS=""
ctest_counts() {
  [ -n "$COUNTS" ] && { echo "$COUNTS"; return; }
  local q r d
  q=$(ctest_count "$B" -L quick)
  r=$(ctest_count "$B")
  cmake -S "$ROOT" -B "$W/debug" -DCMAKE_BUILD_TYPE=Debug -DHAKMEM_DEBUG=ON >"$W/debug.log" 2>&1 ||
    { echo "configuring a debug build failed: $(tail -3 "$W/debug.log")" >&2; return 1; }
  d=$(ctest_count "$W/debug")
  rm -rf "$W/debug"
  COUNTS="$q $r $d"
  echo "$COUNTS"
}

check_counts() {
  local R=$1 q r d c
  c=$(ctest_counts) || { fail "no counts"; return; }
  read -r q r d <<<"$c"
  [ -n "$q" ] && [ -n "$r" ] && [ -n "$d" ] || { fail "ctest -N gave no counts ($c)"; return; }
  grep -q "and the skip check ($q tests)" "$R/docs/TESTING.md" ||
    fail "docs/TESTING.md: make check's row does not say '($q tests)' (ctest -L quick: $q)"
  grep -q "($((r + d)) tests: $r on the release build directory, $d on the debug one)" "$R/docs/TESTING.md" ||
    fail "docs/TESTING.md: make test's row does not say '($((r + d)) tests: $r on the release build directory, $d on the debug one)'"
  echo "ctest: $q quick, $r release, $d debug"
}

# ------------------------------------------------------------------ torture
# the knobs of HK_TORTURE_NAME in tests/CMakeLists.txt, one a line, sorted
torture_knobs() {
  local R=$1 name=$2 line k
  line=$(sed -n "s/^set(HK_TORTURE_$name \(.*\))\$/\1/p" "$R/tests/CMakeLists.txt")
  for k in $line; do
    case $k in
      '${HK_TORTURE_'*'}') k=${k#'${HK_TORTURE_'}; torture_knobs "$R" "${k%\}}" ;;
      *) echo "$k" ;;
    esac
  done | sort -u
}
check_torture() {
  local R=$1 cfgs c row base k n=0
  cfgs=$(sed -n 's/^foreach(cfg \(.*\))$/\1/p' "$R/tests/CMakeLists.txt" | head -1)
  [ -n "$cfgs" ] || { fail "tests/CMakeLists.txt: no foreach(cfg ...) of torture configurations"; return; }
  base=$(torture_knobs "$R" purge1)
  for c in $cfgs; do
    row=$(grep "^| \`$c\` |" "$R/docs/RELIABILITY.md" | cut -d'|' -f3)
    [ -n "$row" ] || { fail "docs/RELIABILITY.md: no row for the torture configuration $c"; continue; }
    for k in $(torture_knobs "$R" "$c"); do
      [ "$c" != purge1 ] && printf '%s\n' "$base" | grep -qx -- "$k" && continue
      printf '%s\n' "$row" | grep -q -- "\`[^\`]*\b$k\b" || fail "docs/RELIABILITY.md: $c's row does not give $k"
    done
    n=$((n + 1))
  done
  # purge1's row gives nothing more than its knobs
  for k in $(grep '^| `purge1` |' "$R/docs/RELIABILITY.md" | cut -d'|' -f3 | grep -o 'HAKMEM_[A-Z_]*=[^ `]*'); do
    printf '%s\n' "$base" | grep -qx -- "$k" || fail "docs/RELIABILITY.md: purge1's row gives $k, which tests/CMakeLists.txt does not set"
  done
  echo "torture configurations: $n rows checked"
}

# ------------------------------------------------------------------ plant
# a scratch copy of the files the checks read
copy_tree() {
  local f
  for f in CMakeLists.txt include/hakmem.h docs/hakmem.1 CHANGELOG.md README.md examples/CMakeLists.txt \
           src/base/measures.h docs/TESTING.md docs/SECURITY.md docs/RELIABILITY.md tests/CMakeLists.txt; do
    mkdir -p "$W/r/$(dirname "$f")" && cp "$ROOT/$f" "$W/r/$f"
  done
}
# plant FILE SED-EXPR WHAT: the check must pass on the copy, then fail with the
# planted change
plant() {
  local file=$1 expr=$2 what=$3 out
  rm -rf "$W/r" && copy_tree
  sed -i "$expr" "$W/r/$file"
  cmp -s "$ROOT/$file" "$W/r/$file" && { fail "plant '$what': the edit changed nothing in $file"; return; }
  out=$(fails=0; "check_$CASE" "$W/r"; echo "fails=$fails")
  if printf '%s\n' "$out" | grep -q '^fails=0$'; then
    fail "planted $what: the check passed"
  else
    echo "caught: $what ($(printf '%s\n' "$out" | grep -m1 '^FAIL' | cut -c7-))"
  fi
}

plant_version() {
  plant CMakeLists.txt 's/^project(hakmem VERSION [0-9.]*/project(hakmem VERSION 9.9.9/' "a new project version alone"
  plant include/hakmem.h 's/^#define HAKMEM_VERSION_PATCH .*/#define HAKMEM_VERSION_PATCH 7/' "hakmem.h's patch alone"
  plant docs/hakmem.1 's/^\(\.TH HAKMEM 1 "[^"]*" "hakmem \)[0-9.]*/\10.0.1/' "the man page's version"
  plant CHANGELOG.md '0,/^## [0-9]/s/^## \([0-9]\)/## 9.\1/' "a changelog without this version first"
  plant include/hakmem.h 's/since 0\.2/since 0.9/' "a 'since' above the version"
  plant README.md 's/libhakmem\.so\.[0-9]*\.[0-9]*\.[0-9]*/libhakmem.so.0.0.1/' "README's library file name"
  plant README.md 's/find_package(hakmem [0-9.]* REQUIRED)/find_package(hakmem 0.0 REQUIRED)/' "README's find_package version"
  plant examples/CMakeLists.txt 's/find_package(hakmem [0-9.]*/find_package(hakmem 7.0/' "examples asking for a later version"
}
plant_measures() {
  plant src/base/measures.h 's/X(keys, HK_M_KEYS)/X(keys, HK_M_KEYS) X(extra, HK_M_EXTRA)/' "a new measure"
  plant README.md 's/It is \([a-z]*\)$/It is nine/' "README's count"
  plant docs/TESTING.md 's/with the [a-z]* measure libraries/with the nine measure libraries/' "TESTING.md's count"
  plant docs/SECURITY.md 's/with all \([a-z]*\)\.$/with all eleven./' "SECURITY.md's 'all' count"
}
plant_counts() {
  plant docs/TESTING.md 's/and the skip check (\([0-9]*\) tests)/and the skip check (1\1 tests)/' "a stale quick count"
  plant docs/TESTING.md 's/\([0-9]*\) on the debug one/1\1 on the debug one/' "a stale debug count"
}
plant_torture() {
  plant tests/CMakeLists.txt 's/^\(set(HK_TORTURE_purge1 .*\))$/\1 PLANTED_KNOB=1)/' "a knob added to purge1"
  plant tests/CMakeLists.txt 's/^set(HK_TORTURE_purge0 \(.*\)HAKMEM_LARGE_CACHE_MB=0/set(HK_TORTURE_purge0 \1HAKMEM_LARGE_CACHE_MB=2/' "purge0's value changed"
  plant tests/CMakeLists.txt 's/^foreach(cfg \(purge1 [a-z0-9 ]*\))$/foreach(cfg \1 newcfg)/' "a new configuration"
  plant docs/RELIABILITY.md '/^| `purge1` |/s/ HAKMEM_LARGE_CACHE_MB=1//' "purge1's row missing a knob"
}

if ! declare -F "check_$CASE" >/dev/null; then
  echo "release.sh: no case '$CASE'" >&2
  exit 2
fi
# the ctest counts once (a debug configure), not once per plant
if [ "$CASE" = counts ]; then
  COUNTS=$(ctest_counts) || { echo "FAIL: no ctest counts"; exit 1; }
fi
if [ "$PLANT" = --plant ]; then
  "plant_$CASE"
  [ $fails = 0 ] && echo "release $CASE: every planted staleness caught"
else
  "check_$CASE" "$ROOT"
  [ $fails = 0 ] && echo "release $CASE: ok"
fi
[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
