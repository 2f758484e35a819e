#!/usr/bin/env bash
# startup.sh BUILD_DIR — what a small program's start costs in system calls.
# A program of small blocks alone (bench/cost_loop 16 under LD_PRELOAD)
# reads no cgroup file, no THP mode and no page-reporting file (each an
# open, a read and a close: about 130 us of a 1.9 ms start before); nor
# does a program that ends within 2 ms of its first large block
# (test_memlimit one: most of what that block cost). The limits are still
# read where they are needed: at a large block past that window
# (test_memlimit two: a sleep, not a run's length, puts it past; a
# bench_large of 2,000 cycles ended within the window in 4 runs of 20,
# its blocks reusing resident pages), at the first large block with
# HAKMEM_MEMORY_LIMIT_ACTION=fail, and by the stats (HAKMEM_STATS=1),
# which then name where the limit came from.
set -u
B=${1:?usage: startup.sh BUILD_DIR}
LIB=$(readlink -f "$B/libhakmem.so")
command -v strace >/dev/null || { echo "SKIP: strace missing"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0
# opens [VAR=VALUE...] PROG ARGS: the files of interest PROG opened (env's
# own run is not preloaded: it takes the settings, then runs PROG)
opens() {
  strace -f -qq -e trace=open,openat -o "$log" env -u HAKMEM_STATS -u HAKMEM_MEMORY_LIMIT LD_PRELOAD="$LIB" "$@" >/dev/null 2>&1
  grep -E 'cgroup|transparent_hugepage|page_reporting' "$log" | grep -v ENOENT
}

small=$(opens "$B/bench/cost_loop" 16)
if [ -n "$small" ]; then
  echo "FAIL: a program of small blocks read:"; echo "$small"; fail=1
else
  echo "small blocks: no cgroup, THP or page-reporting file read"
fi
T=$B/tests/test_memlimit
one=$(opens "$T" one | grep cgroup)
if [ -n "$one" ]; then
  echo "FAIL: a program of one large block read:"; echo "$one"; fail=1
else
  echo "one large block: no cgroup file read"
fi
# (each: the first open of /proc/self/cgroup; none: a FAIL)
reads() { echo "$1" | grep -q '/proc/self/cgroup'; }
two=$(opens "$T" two)
one_fail=$(opens HAKMEM_MEMORY_LIMIT_ACTION=fail "$T" one)
reads "$two" && echo "a large block 5 ms after the first: the cgroup read" ||
  { echo "FAIL: test_memlimit two never read /proc/self/cgroup"; fail=1; }
reads "$one_fail" && echo "one large block with HAKMEM_MEMORY_LIMIT_ACTION=fail: the cgroup read" ||
  { echo "FAIL: with HAKMEM_MEMORY_LIMIT_ACTION=fail, the first large block did not read the cgroup"; fail=1; }
out=$(HAKMEM_STATS=1 LD_PRELOAD="$LIB" "$B/bench/cost_loop" 16 2>&1)
stats=$(opens HAKMEM_STATS=1 "$B/bench/cost_loop" 16)
if echo "$stats" | grep -q '/proc/self/cgroup' && echo "$out" | grep -q 'memory limit:'; then
  echo "the stats: the cgroup read ($(echo "$out" | grep 'memory limit:' | sed 's/^ *//'))"
else
  echo "FAIL: the stats did not read the cgroup, or print no limit line"; echo "$out" | tail -5; fail=1
fi
exit $fail
