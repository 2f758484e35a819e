#!/usr/bin/env bash
# bench/try_churn_zeroed.sh — runs the thread_churn and large_zeroed workloads
# once under glibc and once under hakmem (LD_PRELOAD of build/libhakmem.so, or
# HAKMEM_LIB=PATH) and prints their output with the wall time: a manual check
# that both programs work (not part of CI; `make` first).
#   bash bench/try_churn_zeroed.sh            quick sizes (500 replacements, 30 rounds)
#   FULL=1 bash bench/try_churn_zeroed.sh     the harness's full sizes
# usage: bench/try_churn_zeroed.sh (no arguments)
set -u
case ${1:-} in
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "try_churn_zeroed.sh: unexpected argument '$1'" >&2
     sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/bench
SO=${HAKMEM_LIB:-$PWD/build/libhakmem.so}
if [ -n "${FULL:-}" ]; then Z=2000; R=100; else Z=500; R=30; fi
rc=0
for lib in "" "$SO"; do
    for cmd in "$BIN/bench_thread_churn $R 8 2000 100 3 8 2 7" \
               "$BIN/bench_large $Z 20 5m 25m 3 0 zeroed"; do
        echo "== ${lib:+LD_PRELOAD=$lib }$cmd"
        t0=$(date +%s.%N)
        LD_PRELOAD=$lib $cmd || { echo "exit $?"; rc=1; }
        awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "wall: %.2f s\n", b - a }'
    done
done
exit $rc
