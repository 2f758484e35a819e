#!/usr/bin/env bash
# sanitize.sh [ubsan|tsan|all]   (default: all)
#
# ubsan: configures build-ubsan with -fsanitize=undefined
#        -fno-sanitize-recover=all (library with its internal assertions on),
#        runs test_api and test_stress there. Any UB report aborts -> FAIL.
# tsan:  configures build-tsan with -DHAKMEM_OVERRIDE=OFF (TSan must keep its
#        own malloc) and -fsanitize=thread, runs test_stress_hakapi, the
#        threaded stress calling only hak_*, and test_ctl_race (knobs
#        changed through the control API while threads allocate, with the
#        background purge thread on a 1 ms clock, then on 20 ms ticks with
#        the stopped owners' 1 ms clock between). Any race report -> FAIL.
# Each runs twice: on the default build and on the secure one (build-*-secure,
# -DHK_SECURE: the hardening measures, whose trailer swaps and collections
# are cross-thread code of their own).
# Slow: the ctests sanitize/ubsan and sanitize/tsan (label sanitize);
# tests/run_tests.sh runs them only when HAKMEM_TEST_SANITIZE=1 (make test).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
JOBS=$(nproc 2>/dev/null || echo 2)
what=${1:-all}
fails=0

step() { # step NAME CMD...
  echo "-- $1"
  shift
  if ! "$@"; then
    echo "FAIL: $*"
    fails=$((fails + 1))
    return 1
  fi
}

# TSan's shadow layout can clash with high-entropy ASLR on newer kernels:
# run without ASLR when setarch can do that.
norandom() {
  if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    setarch "$(uname -m)" -R "$@"
  else
    "$@"
  fi
}

# tsan_run NAME LOG CMD...: one TSan run ($v: the variant), its log's tail
# and a count of its reports; a non-zero exit is a failure
tsan_run() {
  local name=$1 log=$2 rc
  shift 2
  echo "-- tsan${v:+ $v} $name (log: $log)"
  "$@" >"$log" 2>&1
  rc=$?
  tail -n 3 "$log"
  if [ $rc -ne 0 ]; then
    echo "FAIL: tsan${v:+ $v} $name exited $rc"
    fails=$((fails + 1))
  fi
  if grep -q "ThreadSanitizer" "$log"; then
    echo "ThreadSanitizer reports (count, first frame):"
    grep -E "SUMMARY: ThreadSanitizer|ThreadSanitizer: (mmap|FATAL|CHECK)" "$log" | sort | uniq -c
  fi
}

if [ "$what" = ubsan ] || [ "$what" = all ]; then
  for v in "" secure; do
    B=$ROOT/build-ubsan${v:+-$v}
    F="-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer${v:+ -DHK_SECURE}"
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    if step "configure $B" cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DHAKMEM_DEBUG=ON -DHAKMEM_BUILD_BENCH=OFF \
          "-DCMAKE_C_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >/dev/null &&
       step "build $B" cmake --build "$B" -j "$JOBS" --target test_api test_stress; then
      step "ubsan${v:+ $v} test_api" "$B/tests/test_api"
      step "ubsan${v:+ $v} test_stress" "$B/tests/test_stress" 8 2 20000
    fi
  done
fi

if [ "$what" = tsan ] || [ "$what" = all ]; then
  for v in "" secure; do
    B=$ROOT/build-tsan${v:+-$v}
    F="-fsanitize=thread -fno-omit-frame-pointer${v:+ -DHK_SECURE}"
    # keep going after a report so that the log lists every racy location
    export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 exitcode=66"
    if step "configure $B" cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DHAKMEM_OVERRIDE=OFF -DHAKMEM_BUILD_BENCH=OFF \
          "-DCMAKE_C_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >/dev/null &&
       step "build $B" cmake --build "$B" -j "$JOBS" --target test_stress_hakapi test_ctl_race; then
      # knobs flipped through the control API while threads allocate, the
      # background purge thread on a 1 ms clock working on their heaps
      HAKMEM_BACKGROUND_PURGE=1 HAKMEM_PURGE_DELAY_MS=1 \
        tsan_run test_ctl_race "$B/tsan-ctl.log" norandom "$B/tests/test_ctl_race" 4 100
      # the same with the stopped owners' short clock between 20 ms ticks
      # (HAKMEM_STOPPED_PURGE_MS: a trim's pass beside the thread's)
      HAKMEM_BACKGROUND_PURGE=1 HAKMEM_PURGE_DELAY_MS=20 HAKMEM_STOPPED_PURGE_MS=1 \
        tsan_run test_ctl_race "$B/tsan-ctl-stopped.log" norandom "$B/tests/test_ctl_race" 4 100
      tsan_run test_stress_hakapi "$B/tsan-stress.log" norandom "$B/tests/test_stress_hakapi" 8 2 4000
    fi
  done
fi

if [ $fails -ne 0 ]; then
  echo "sanitize.sh: $fails step(s) failed"
  exit 1
fi
echo "sanitize.sh: OK"
