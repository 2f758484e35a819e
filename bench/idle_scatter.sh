#!/bin/bash
# bench/idle_scatter.sh NAME=LIB[:PROFILE] ... : bench_idle with one block
# in a hundred kept (SIZE 256 3000 2000 10 1) at 120, 400, 1500 and 4000
# bytes under each library preloaded (PROFILE sets HAKMEM_PROFILE), one
# line a run with its allocator line, which must name the library's
# allocator: docs/BENCHMARKS.md, "Idle owners' pages".
#   bash bench/idle_scatter.sh new=build/libhakmem.so new_lowmem=build/libhakmem.so:lowmem \
#        glibc=/usr/lib/x86_64-linux-gnu/libc.so.6
usage() { echo "usage: bash bench/idle_scatter.sh NAME=LIB[:PROFILE] ..."; sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
for arg in "$@"; do
  case $arg in
    -h|--help) usage; exit 0 ;;
    -*) echo "idle_scatter.sh: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *=*) ;;
    *) echo "idle_scatter.sh: not NAME=LIB[:PROFILE]: $arg" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
B=${BENCHBIN:-build/bench}/bench_idle
for sz in ${SIZES:-120 400 1500 4000}; do
  for arg in "$@"; do
    name=${arg%%=*} rest=${arg#*=}
    lib=${rest%%:*} prof=${rest#"$lib"}
    prof=${prof#:}
    out=$(HAKMEM_PROFILE=${prof:-balanced} LD_PRELOAD=$lib "$B" "$sz" 256 3000 2000 10 1 2>&1 | grep -v '^rss')
    line=$(echo "$out" | grep -m1 '^allocator:')
    [ -n "$line" ] || { echo "$sz $name: no allocator line (the preload did not take?)" >&2; exit 1; }
    echo "$sz $name | $line | $(echo "$out" | grep -E '^(live_kib|peak_kib|idle_end_kib|light_end_kib|returned_ms) ' | tr '\n' ' ')"
  done
done
