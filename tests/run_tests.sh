#!/usr/bin/env bash
# run_tests.sh BUILD_DIR [BUILD_DIR...]
#
# Runs hakmem's whole test suite on each build directory (programs already
# built by `make` / `make debug`): one "PASS name" / "FAIL name" line per test,
# each under a timeout (a hang guard, not a speed requirement), then
# bench/selftest.sh once if it exists, then (only with HAKMEM_TEST_SANITIZE=1)
# the UBSan and TSan builds of tests/sanitize.sh. Ends with the line
# "N passed, N failed" and exits non-zero if anything failed.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [BUILD_DIR...]" >&2
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
unset LD_PRELOAD HAKMEM_TEST_EXPECT_ACTIVE
TIMEOUT=${HAKMEM_TEST_TIMEOUT:-300}

# NAME:KNOBS. purge1/purge0: the purge clock at 1 ms, a superslab cache
# of one (none), no spare superslab per heap, 4 KiB carves, a large-block
# cache of one (none). learn: the learner's epoch at its minimum, so that
# it moves caps all the time (it clamps them: not with purge1/purge0).
TORTURE=(
  "purge1:HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=1 HAKMEM_HEAP_SPARE=0 HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=1"
  "purge0:HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=0 HAKMEM_HEAP_SPARE=0 HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=0"
  "learn:HAKMEM_LEARN=1 HAKMEM_LEARN_EPOCH=16"
)

passed=0
failed=0
failed_names=()
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-tests.XXXXXX") || exit 2
trap 'rm -rf "$LOGDIR"' EXIT
suite_start=$(date +%s)

# run_test NAME TIMEOUT_S CMD...
run_test() {
  local name=$1 limit=$2
  shift 2
  local log="$LOGDIR/$(echo "$name" | tr '/ ' '__').log"
  local t0=$(date +%s)
  # through bash so that the helper functions below can be the command
  timeout -k 10 "$limit" bash -c '"$@"' _ "$@" >"$log" 2>&1
  local rc=$?
  local dt=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    echo "PASS $name (${dt}s)"
    passed=$((passed + 1))
  else
    local why="exit status $rc"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after ${limit}s"
    [ $rc -gt 128 ] && [ $rc -ne 137 ] && why="killed by signal $((rc - 128))"
    echo "FAIL $name ($why, ${dt}s)"
    sed -e 's/^/    | /' "$log" | tail -n 40
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
}

# a test whose binary is missing is a failure, not a skip
need() {
  local f
  for f in "$@"; do
    if [ ! -x "$f" ]; then
      echo "missing test program $f (did the build include tests/?)"
      return 1
    fi
  done
}

# the static variant must not depend on libhakmem.so
static_stress() {
  need "$1" || return 1
  if readelf -d "$1" | grep NEEDED | grep -q hakmem; then
    echo "$1 is linked against libhakmem.so, not libhakmem.a"
    return 1
  fi
  "$1" 8
}

run_prog() { need "$1" && "$@"; }
export -f need static_stress run_prog

for arg in "$@"; do
  if [ -d "$arg" ]; then B=$(cd "$arg" && pwd)
  elif [ -d "$ROOT/$arg" ]; then B=$(cd "$ROOT/$arg" && pwd)
  else
    echo "FAIL $arg (no such build directory)"
    failed=$((failed + 1)); failed_names+=("$arg")
    continue
  fi
  n=$(basename "$B")
  T=$B/tests
  echo "== $B"
  if [ ! -f "$B/libhakmem.so" ] || [ ! -f "$B/libhakmem.a" ]; then
    echo "FAIL $n/libraries (libhakmem.so or libhakmem.a missing in $B)"
    failed=$((failed + 1)); failed_names+=("$n/libraries")
  fi
  run_test "$n/api"            "$TIMEOUT" run_prog "$T/test_api"
  run_test "$n/stress"         "$TIMEOUT" run_prog "$T/test_stress" 8
  run_test "$n/stress64"       "$TIMEOUT" run_prog "$T/test_stress" 64 3 6000
  run_test "$n/stress_static"  "$TIMEOUT" static_stress "$T/test_stress_static"
  run_test "$n/stress_hakapi"  "$TIMEOUT" run_prog "$T/test_stress_hakapi" 8 2 20000
  run_test "$n/thread_churn"   "$TIMEOUT" run_prog "$T/test_thread_churn"
  run_test "$n/fork"           "$TIMEOUT" run_prog "$T/test_fork"
  run_test "$n/lifecycle"      "$TIMEOUT" run_prog "$T/test_lifecycle"
  run_test "$n/adopt"          "$TIMEOUT" env HAKMEM_SS_CACHE=0 HAKMEM_HEAP_SPARE=0 bash -c 'run_prog "$@"' _ "$T/test_adopt"
  run_test "$n/restart"        "$TIMEOUT" run_prog "$T/test_restart"
  run_test "$n/refill_batch"   "$TIMEOUT" run_prog "$T/test_refill_batch"
  run_test "$n/cxx"            "$TIMEOUT" run_prog "$T/test_cxx"
  run_test "$n/purge"          "$TIMEOUT" env HAKMEM_PURGE_DELAY_MS=0 bash -c 'run_prog "$@"' _ "$T/test_purge"
  run_test "$n/learner"        "$TIMEOUT" run_prog "$T/test_learner"
  run_test "$n/budget"         "$TIMEOUT" bash "$HERE/budget.sh" "$B"
  run_test "$n/exit_race"      "$TIMEOUT" env HAKMEM_VERBOSE=1 bash -c 'run_prog "$@"' _ "$T/test_exit_race"
  run_test "$n/ss_purge"       "$TIMEOUT" run_prog "$T/test_ss_purge"
  run_test "$n/os_stats"       "$TIMEOUT" run_prog "$T/test_os_stats"
  for c in python3 cc sort git cxx_map test_cxx test_stress; do
    run_test "$n/preload/$c" "$TIMEOUT" bash "$HERE/preload_programs.sh" "$B" "$c"
  done
  # the pymalloc program that crashed under lowmem (issue 17), every profile
  for prof in fast balanced lowmem; do
    run_test "$n/preload/dict_phases/$prof" "$TIMEOUT" env HAKMEM_PROFILE=$prof \
      bash "$HERE/preload_programs.sh" "$B" dict_phases
  done
  run_test "$n/random"         "$TIMEOUT" bash "$HERE/random.sh" "$B"

  # Torture configurations: each makes a rare path common (purges, empty
  # caches, superslabs leaving heaps, learner epochs), over the tests that
  # reach those paths. docs/RELIABILITY.md says what each one forces.
  for cfg in "${TORTURE[@]}"; do
    tn=${cfg%%:*}
    read -r -a tenv <<<"${cfg#*:}"
    run_test "$n/$tn/stress"       "$TIMEOUT" env "${tenv[@]}" bash -c 'run_prog "$@"' _ "$T/test_stress" 8
    run_test "$n/$tn/stress64"     "$TIMEOUT" env "${tenv[@]}" bash -c 'run_prog "$@"' _ "$T/test_stress" 64 3 6000
    run_test "$n/$tn/thread_churn" "$TIMEOUT" env "${tenv[@]}" bash -c 'run_prog "$@"' _ "$T/test_thread_churn"
    run_test "$n/$tn/fork"         "$TIMEOUT" env "${tenv[@]}" bash -c 'run_prog "$@"' _ "$T/test_fork"
    run_test "$n/$tn/exit_race"    "$TIMEOUT" env "${tenv[@]}" HAKMEM_VERBOSE=1 bash -c 'run_prog "$@"' _ "$T/test_exit_race"
    run_test "$n/$tn/adopt"        "$TIMEOUT" env "${tenv[@]}" bash -c 'run_prog "$@"' _ "$T/test_adopt"
    run_test "$n/$tn/random"       "$TIMEOUT" env "${tenv[@]}" bash "$HERE/random.sh" "$B"
    run_test "$n/$tn/preload"      "$TIMEOUT" env "${tenv[@]}" bash "$HERE/preload_programs.sh" "$B"
  done
done
if [ -f "$HERE/ecosystem.sh" ]; then
  echo "== tests/ecosystem.sh"
  run_test "ecosystem" "$TIMEOUT" bash "$HERE/ecosystem.sh" "$1"
fi

[ -f "$HERE/security.sh" ] && echo "== tests/security.sh" && run_test "security" "$TIMEOUT" bash "$HERE/security.sh" "$1"

# the secure build under the same real programs, stress, API, fork and
# thread tests (security.sh has just built it in the first build directory)
SEC_B=$(cd "$1" 2>/dev/null && pwd)
if [ -n "$SEC_B" ] && [ -f "$SEC_B/libhakmem-secure.so" ]; then
  echo "== secure build: preloaded programs and tests"
  for c in python3 cc sort git cxx_map test_cxx test_stress; do
    run_test "secure/preload/$c" "$TIMEOUT" env HAKMEM_PRELOAD_LIB="$SEC_B/libhakmem-secure.so" \
      bash "$HERE/preload_programs.sh" "$SEC_B" "$c"
  done
  # the API, fork and thread tests, their hakmem calls taken by the preloaded
  # secure library (it comes first in symbol lookup)
  for t in test_api test_fork test_thread_churn test_lifecycle; do
    run_test "secure/${t#test_}" "$TIMEOUT" env LD_PRELOAD="$SEC_B/libhakmem-secure.so" \
      bash -c 'run_prog "$@"' _ "$SEC_B/tests/$t"
  done
  # the randomized test, default and torture configurations
  run_test "secure/random" "$TIMEOUT" env LIB="$SEC_B/libhakmem-secure.so" bash "$HERE/random.sh" "$SEC_B"
  for cfg in "${TORTURE[@]}"; do
    read -r -a tenv <<<"${cfg#*:}"
    run_test "secure/${cfg%%:*}/random" "$TIMEOUT" env "${tenv[@]}" LIB="$SEC_B/libhakmem-secure.so" \
      bash "$HERE/random.sh" "$SEC_B"
  done
fi

# known faults planted in a copy of the tree must make the suite fail
echo "== tests/planted_bugs.sh"
run_test "planted_bugs" 1200 bash "$HERE/planted_bugs.sh"

# every file of src/ uses only files of a lower rank (docs/ARCHITECTURE.md),
# and the check fails on an upward call or include planted in a copy
echo "== tests/layers.sh"
run_test "layers" 300 bash "$HERE/layers.sh"
run_test "layers/plant" 300 bash "$HERE/layers.sh" --plant

if [ -f "$ROOT/bench/selftest.sh" ]; then
  echo "== bench/selftest.sh"
  run_test "bench/selftest" 600 bash -c 'cd "$1" && bash bench/selftest.sh' _ "$ROOT"
fi

echo "== tests/valgrind.sh"
run_test "valgrind" 900 bash "$HERE/valgrind.sh" "$1"

if [ -f "$ROOT/tools/report_test.sh" ]; then
  echo "== tools/report_test.sh"
  run_test "tools/report" 600 bash -c 'cd "$1" && HAKMEM_LIB="$2/libhakmem.so" bash tools/report_test.sh' _ "$ROOT" "$(cd "$1" && pwd)"
fi

if [ "${HAKMEM_TEST_SANITIZE:-0}" = 1 ]; then
  echo "== sanitizers"
  run_test "sanitize/ubsan" 1500 bash "$HERE/sanitize.sh" ubsan
  run_test "sanitize/tsan"  1500 bash "$HERE/sanitize.sh" tsan
fi

echo "suite took $(($(date +%s) - suite_start))s"
if [ $failed -ne 0 ]; then
  echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
