#!/usr/bin/env bash
# preload_programs.sh BUILD_DIR [CASE...]
#
# Runs real programs twice: plain, and with LD_PRELOAD=BUILD_DIR/libhakmem.so
# (or HAKMEM_PRELOAD_LIB: the secure build) and HAKMEM_VERBOSE=1. For each
# case:
#   - both runs must exit 0;
#   - their stdouts must be identical byte for byte;
#   - the preloaded run's stderr must contain "hakmem: active" (the line
#     libhakmem prints at exit under HAKMEM_VERBOSE=1: proof the program really
#     ran on hakmem), and the plain run's must not.
# Only the program under test is preloaded; helper commands (nm, sha256sum,
# file generation) run plain.
#
# The plain runs' results do not depend on the hakmem configuration a ctest
# sets, so they are kept in BUILD_DIR/preload-plain, named by a hash of
# what they depend on (this script, tests/progs, the build's test programs,
# the versions of the system programs, the case and its rounds): the
# twenty-odd preload ctests of a build run each plain case once
# (PRELOAD_NO_CACHE=1: run it every time).
#
# Cases: python3 dict_phases cc sort git cxx_map test_cxx test_stress (default: all).
# PRELOAD_DICT_ROUNDS: runs of dict_phases (default 3; the torture
# configurations run it once).
# Prints "PASS preload/CASE", "SKIP preload/CASE (why)" (its program is not
# installed) or "FAIL preload/CASE: why" per case; exits 1 if any failed, 77
# (ctest: Skipped) if every case asked for was skipped.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [CASE...]" >&2
  exit 2
fi
BUILD=$(cd "$1" && pwd) || exit 2
shift
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=${HAKMEM_PRELOAD_LIB:-$BUILD/libhakmem.so}
ALL_CASES="python3 dict_phases cc sort git cxx_map test_cxx test_stress"
CASES=${*:-$ALL_CASES}
unset LD_PRELOAD HAKMEM_VERBOSE HAKMEM_TEST_EXPECT_ACTIVE
export LC_ALL=C TZ=UTC

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-preload.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

MODE=plain
# run "$@" preloaded in the preload pass, plainly otherwise
P() {
  if [ "$MODE" = pre ]; then
    env LD_PRELOAD="$LIB" HAKMEM_VERBOSE=1 HAKMEM_TEST_EXPECT_ACTIVE=1 "$@"
  else
    "$@"
  fi
}

# ---------------- cases: run in an empty cwd, write stdout ----------------
case_python3() {
  P env PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$PY" "$SRC/../progs/alloc_heavy.py"
}

# pymalloc on (Python's default), three runs: it crashed 1 run in 5 under
# HAKMEM_PROFILE=lowmem before the fix of issue 17 (a ctest runs it
# under every profile)
case_dict_phases() {
  local i
  for ((i = 0; i < ${PRELOAD_DICT_ROUNDS:-3}; i++)); do P env PYTHONHASHSEED=0 "$PY" "$SRC/../progs/dict_phases.py" || return 1; done
}

case_cc() {
  cp "$SRC/../progs/cc_input.c" . && cp "$SRC/../progs/cxx_map_prog.cc" . || return 1
  P cc -O2 -Wall -c cc_input.c -o cc_input.o || return 1
  nm cc_input.o
  sha256sum cc_input.o
  P cc cc_input.o -o cc_prog || return 1
  ./cc_prog || return 1
  # cc1plus is a far heavier malloc user than cc1
  P g++ -O1 -std=c++17 -c cxx_map_prog.cc -o cxx_map_prog.o || return 1
  nm -C cxx_map_prog.o | sort
  sha256sum cxx_map_prog.o
}

case_sort() {
  local in=$WORK/sort-input.txt
  if [ ! -f "$in" ]; then
    "$PY" - "$in" <<'EOF' || return 1
import random, sys
r = random.Random(7)
with open(sys.argv[1], "w") as f:
    for i in range(200000):
        f.write("%s,%d,%s\n" % ("".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randrange(1, 30))),
                                r.randrange(10**6), "x" * r.randrange(0, 80)))
EOF
  fi
  P sort "$in" || return 1
  P sort -t, -k2,2n -k1,1 "$in" || return 1
  mkdir -p tmp
  P sort -u -r --parallel=2 -S 1M -T tmp "$in" || return 1
}

case_git() {
  export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_PAGER=cat PAGER=cat
  export GIT_AUTHOR_NAME="Hak Mem" GIT_AUTHOR_EMAIL="hakmem@example.invalid"
  export GIT_COMMITTER_NAME="Hak Mem" GIT_COMMITTER_EMAIL="hakmem@example.invalid"
  export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
  P git init -q -b main repo || return 1
  cd repo || return 1
  "$PY" - <<'EOF' || return 1
import random, os
r = random.Random(3)
for d in range(8):
    os.makedirs("dir%d" % d, exist_ok=True)
    for f in range(25):
        with open("dir%d/file%d.txt" % (d, f), "w") as fh:
            for l in range(r.randrange(10, 200)):
                fh.write("line %d %s\n" % (l, "".join(r.choice("abcdef ") for _ in range(r.randrange(60)))))
EOF
  P git add -A || return 1
  P git commit -q -m "first commit" || return 1
  "$PY" - <<'EOF' || return 1
import random, glob
r = random.Random(4)
for p in sorted(glob.glob("dir*/file*.txt"))[::3]:
    with open(p) as fh:
        lines = fh.readlines()
    for _ in range(5):
        lines.insert(r.randrange(len(lines) + 1), "edit %d\n" % r.randrange(1000))
    with open(p, "w") as fh:
        fh.writelines(lines)
EOF
  P git rm -q dir7/file3.txt || return 1
  P git mv dir6/file1.txt dir6/renamed.txt || return 1
  export GIT_AUTHOR_DATE="2024-01-02T00:00:00Z" GIT_COMMITTER_DATE="2024-01-02T00:00:00Z"
  P git commit -q -a -m "second commit" || return 1
  P git log --stat --format='%H %an %ad %s' || return 1
  P git diff HEAD~1 HEAD || return 1
  P git diff --stat -M HEAD~1 || return 1
  P git grep -c "edit" HEAD || return 1
  P git repack -q -a -d -f || return 1
  P git fsck --no-progress || return 1
  P git rev-parse HEAD HEAD~1 || return 1
}

case_cxx_map() {
  P "$BUILD/tests/cxx_map_prog"
}

case_test_cxx() {
  P "$BUILD/tests/test_cxx_plain"
}

case_test_stress() {
  P "$BUILD/tests/test_stress_plain" 8 2 20000
}

# ---------------- driver ----------------
CACHE=$BUILD/preload-plain
# plain_key CASE: what the plain run of CASE depends on, hashed
plain_key() {
  {
    echo "$1 rounds=${PRELOAD_DICT_ROUNDS:-3}"
    cat "${BASH_SOURCE[0]}" "$SRC"/../progs/* 2>/dev/null
    for f in cxx_map_prog test_cxx_plain test_stress_plain; do
      [ -f "$BUILD/tests/$f" ] && cksum <"$BUILD/tests/$f"
    done
    for tool in "$PY" cc g++ sort git; do
      command -v "$tool" >/dev/null 2>&1 && "$tool" --version 2>&1 | head -n 1
    done
  } | sha256sum | cut -c1-16
}
# run_case CASE: run it in $MODE into $WORK/CASE.MODE.{out,err}; a plain
# run comes from the cache when it is there (only a clean run is kept)
run_case() {
  local c=$1 rc key
  if [ "$MODE" = plain ] && [ "${PRELOAD_NO_CACHE:-0}" != 1 ]; then
    key=$(plain_key "$c")
    if [ -f "$CACHE/$c.$key.out" ] && [ -f "$CACHE/$c.$key.err" ]; then
      cp "$CACHE/$c.$key.out" "$WORK/$c.plain.out" && cp "$CACHE/$c.$key.err" "$WORK/$c.plain.err" && return 0
    fi
  fi
  mkdir -p "$WORK/$c.$MODE.d"
  (cd "$WORK/$c.$MODE.d" && "case_$c") >"$WORK/$c.$MODE.out" 2>"$WORK/$c.$MODE.err"
  rc=$?
  # kept only when clean, written under temporary names and renamed (two
  # ctests may write the same entry at once)
  if [ $rc -eq 0 ] && [ -n "${key:-}" ] && ! grep -q "hakmem: active" "$WORK/$c.plain.err" &&
     mkdir -p "$CACHE" 2>/dev/null; then
    cp "$WORK/$c.plain.out" "$CACHE/$c.$key.out.$$" && cp "$WORK/$c.plain.err" "$CACHE/$c.$key.err.$$" &&
      mv -f "$CACHE/$c.$key.err.$$" "$CACHE/$c.$key.err" && mv -f "$CACHE/$c.$key.out.$$" "$CACHE/$c.$key.out"
    rm -f "$CACHE/$c.$key.out.$$" "$CACHE/$c.$key.err.$$"
  fi
  return $rc
}
fails=0
skips=0
for c in $CASES; do
  if ! declare -F "case_$c" >/dev/null; then
    echo "FAIL preload/$c: no such case"
    fails=$((fails + 1))
    continue
  fi
  why=""
  # a case whose program is not installed is skipped, not failed
  case $c in
    python3|dict_phases) tools=$PY ;;
    cc)   tools="cc g++ nm sha256sum" ;;
    sort) tools=sort ;;
    git)  tools=git ;;
    *)    tools="" ;;   # programs of the build
  esac
  missing=""
  for tool in $tools; do command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"; done
  if [ -n "$missing" ]; then
    echo "SKIP preload/$c (not installed:$missing)"
    skips=$((skips + 1))
    continue
  fi
  if [ ! -f "$LIB" ]; then
    why="$LIB not found"
  else
    for MODE in plain pre; do
      run_case "$c"
      rc=$?
      if [ $rc -ne 0 ]; then
        why="$MODE run exited $rc"
        break
      fi
    done
  fi
  if [ -z "$why" ]; then
    if grep -q "hakmem: active" "$WORK/$c.plain.err"; then
      why="plain run printed 'hakmem: active' (was it preloaded?)"
    elif ! grep -q "hakmem: active" "$WORK/$c.pre.err"; then
      why="preloaded run did not print 'hakmem: active' (hakmem not loaded?)"
    elif [ "${LIB##*/}" = libhakmem-secure.so ] && ! grep -q "hakmem: active (secure build" "$WORK/$c.pre.err"; then
      why="preloaded run did not print 'hakmem: active (secure build' (the default build ran?)"
    elif [ "$c" = cxx_map ] || [ "$c" = python3 ] || [ "$c" = test_cxx ]; then
      # one process: exactly one line
      n=$(grep -c "^hakmem: active" "$WORK/$c.pre.err")
      [ "$n" = 1 ] || why="expected one 'hakmem: active' line, got $n"
    fi
    if [ -n "$why" ]; then
      :
    elif ! cmp -s "$WORK/$c.plain.out" "$WORK/$c.pre.out"; then
      why="stdout differs with hakmem preloaded"
    elif [ ! -s "$WORK/$c.plain.out" ] && [ "$c" != test_cxx ] && [ "$c" != test_stress ]; then
      why="no output to compare"
    fi
  fi
  if [ -z "$why" ]; then
    echo "PASS preload/$c"
  else
    echo "FAIL preload/$c: $why"
    fails=$((fails + 1))
    for m in plain pre; do
      [ -f "$WORK/$c.$m.err" ] || continue
      echo "--- $c ($m) stderr, last lines:"
      tail -n 15 "$WORK/$c.$m.err"
    done
    if [ -f "$WORK/$c.pre.out" ] && [ -f "$WORK/$c.plain.out" ]; then
      echo "--- stdout diff (plain vs preloaded), first lines:"
      diff "$WORK/$c.plain.out" "$WORK/$c.pre.out" | head -n 20
    fi
  fi
done
[ $fails -eq 0 ] || exit 1
# everything asked for was skipped: tell ctest (SKIP_RETURN_CODE 77)
[ "$skips" -gt 0 ] && [ "$skips" -eq "$(echo $CASES | wc -w)" ] && exit 77
exit 0
