#!/usr/bin/env bash
# budget.sh BUILD_DIR — runs test_budget under strace and checks that
# strace's count of mmap/munmap/madvise calls in the steady window (between
# the two getppid() markers) is at most 1 and equals hakmem's own count.
set -u
B=${1:?usage: budget.sh BUILD_DIR}
T="$B/tests/test_budget"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! command -v strace >/dev/null; then
  echo "strace missing: running without the cross-check"
  exec "$T"
fi
out=$(strace -f -qq -e trace=mmap,munmap,madvise,getppid -o "$log" "$T") || { echo "$out"; exit 1; }
echo "$out"
ours=$(echo "$out" | sed -n 's/.*: \([0-9]*\) mmap\/munmap\/madvise calls.*/\1/p')
theirs=$(awk '/getppid/ { n++; next } n == 1 && /(mmap|munmap|madvise)\(/ { c++ } END { print c + 0 }' "$log")
echo "strace counted $theirs calls in the window; hakmem counted $ours"
[ -n "$ours" ] || { echo "FAIL: no count from the test"; exit 1; }
[ "$theirs" -le 1 ] || { echo "FAIL: over budget"; exit 1; }
[ "$theirs" = "$ours" ] || { echo "FAIL: strace and hakmem disagree"; exit 1; }
echo "budget OK"
