#!/bin/bash
# bench/learner_cost.sh: the learner's cost in instructions (docs/BENCHMARKS.md, learner section)
# instruction counts (callgrind, whole process incl. start-up) HAKMEM_LEARN=0 vs 1
# Usage: bench/learner_cost.sh (no arguments; needs `make` and valgrind)
set -u
case ${1:-} in
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "learner_cost.sh: unexpected argument '$1'" >&2
     sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
B=build/bench; L=$PWD/build/libhakmem.so
while read -r name args; do
  for v in 0 1; do
    out=$(HAKMEM_LEARN=$v LD_PRELOAD=$L valgrind --tool=callgrind --callgrind-out-file=/dev/null $B/$name $args 2>&1)
    echo "$name $args | LEARN=$v | $(echo "$out" | sed -n 's/^allocator: //p') | $(echo "$out" | sed -n 's/.*Collected : //p')"
  done
done <<'LIST'
bench_tiny 20000
bench_random_mixed 1000000 400 16 1024 42
bench_mid 1 500000
bench_xthread
bench_app 1 50000
bench_shift 20000
bench_phase 1
LIST
