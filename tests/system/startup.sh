#!/usr/bin/env bash
# startup.sh BUILD_DIR — what a small program's start costs in system calls.
# A program of small blocks alone (bench/cost_loop 16 under LD_PRELOAD)
# reads no cgroup file, no THP mode and no page-reporting file (each an
# open, a read and a close: about 130 us of a 1.9 ms start before); and the
# limits are still read where they are needed: at the first large block
# (bench_large), and by the stats (HAKMEM_STATS=1), which then name where
# the limit came from.
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
large=$(opens "$B/bench/bench_large" 10 2 64k 1m 3 0)
if echo "$large" | grep -q '/proc/self/cgroup'; then
  echo "a large block: the cgroup read"
else
  echo "FAIL: a program with large blocks never read /proc/self/cgroup"; fail=1
fi
out=$(HAKMEM_STATS=1 LD_PRELOAD="$LIB" "$B/bench/cost_loop" 16 2>&1)
stats=$(opens HAKMEM_STATS=1 "$B/bench/cost_loop" 16)
if echo "$stats" | grep -q '/proc/self/cgroup' && echo "$out" | grep -q 'memory limit:'; then
  echo "the stats: the cgroup read ($(echo "$out" | grep 'memory limit:' | sed 's/^ *//'))"
else
  echo "FAIL: the stats did not read the cgroup, or print no limit line"; echo "$out" | tail -5; fail=1
fi
exit $fail
