#!/bin/bash
# bench/learner_cost.sh: the learner's cost in instructions (docs/BENCHMARKS.md, learner section)
# instruction counts (callgrind, whole process incl. start-up) HAKMEM_LEARN=0 vs 1
cd /work/wt-learner
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
