#!/usr/bin/env bash
# memlimit_cgroup.sh TEST_MEMLIMIT — the memory budget read from a real
# cgroup: makes a memory cgroup (v2 where /sys/fs/cgroup is v2, else v1's
# memory controller), gives it a limit, and runs test_memlimit in it:
#   info   hakmem reports the cgroup's limits and where they came from;
#   cycle  3x the limit in garbage stays within the limit (no knob: the
#          cgroup's limit alone; without the budget the kernel would have
#          to reclaim or kill);
#   quiet  the same with no stats call first: the limits read when the
#          program's allocations first need them come in time;
#   group  with another process of the cgroup holding 100 MiB, the
#          budget's resident figure counts it, and the soft limit presses.
# Exits 77 (ctest: Skipped) where no cgroup can be made (not root, a
# read-only cgroup file system, no memory controller).
set -u
T=$1
LIMIT=$((128 << 20))
SOFT=$((96 << 20))
CG=""
cleanup() { [ -n "$CG" ] && rmdir "$CG" 2>/dev/null; true; }
trap cleanup EXIT

if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  kind="cgroup v2"
  grep -qw memory /sys/fs/cgroup/cgroup.controllers || { echo "no v2 memory controller"; exit 77; }
  CG=/sys/fs/cgroup/hakmem-memlimit-$$
  mkdir "$CG" 2>/dev/null || { CG=""; echo "cannot make a cgroup under /sys/fs/cgroup"; exit 77; }
  echo "+memory" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
  echo $LIMIT > "$CG/memory.max" 2>/dev/null && echo $SOFT > "$CG/memory.high" 2>/dev/null ||
    { echo "cannot set the cgroup's memory.max"; exit 77; }
elif [ -d /sys/fs/cgroup/memory ]; then
  kind="cgroup v1"
  CG=/sys/fs/cgroup/memory/hakmem-memlimit-$$
  mkdir "$CG" 2>/dev/null || { CG=""; echo "cannot make a cgroup under /sys/fs/cgroup/memory"; exit 77; }
  echo $LIMIT > "$CG/memory.limit_in_bytes" 2>/dev/null &&
    echo $SOFT > "$CG/memory.soft_limit_in_bytes" 2>/dev/null ||
    { echo "cannot set the cgroup's limits"; exit 77; }
else
  echo "no cgroup file system"; exit 77
fi

# run ARGS in the cgroup (the child moves itself in, then execs)
in_cgroup() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }

out=$(in_cgroup "$T" info) || { echo "$out"; echo "FAIL: test_memlimit info"; exit 1; }
echo "$out"
want="limit $LIMIT soft $SOFT source $kind"
case "$out" in
  "$want "*) ;;
  *) echo "FAIL: expected \"$want ...\""; exit 1 ;;
esac
in_cgroup "$T" cycle || { echo "FAIL: test_memlimit cycle in the cgroup"; exit 1; }
# the same with no stats call first: the program's own allocations read the
# limits, in time (with HAKMEM_MEMORY_LIMIT=1000G in place of the budget,
# the cgroup's OOM killer ends this run)
in_cgroup "$T" quiet $LIMIT || { echo "FAIL: test_memlimit quiet in the cgroup (killed?)"; exit 1; }
# two processes under one limit: one holds 100 MiB (past the soft limit);
# the other's budget counts the cgroup's usage, not its own pages alone
READY=$(mktemp -u "${TMPDIR:-/tmp}/hakmem-hold.XXXXXX")
# (sh itself in the background, not the function: $! must be the process
# that execs into the holder, for the kill below to reach it)
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$T" hold 100 "$READY" &
HOLD=$!
for _ in $(seq 200); do [ -e "$READY" ] && break; sleep 0.05; done
[ -e "$READY" ] || { kill $HOLD 2>/dev/null; echo "FAIL: the holding process did not start"; exit 1; }
out=$(in_cgroup "$T" info)
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null; rm -f "$READY"
echo "with another process holding 100 MiB: $out"
resident=$(printf '%s\n' "$out" | sed -n 's/.* resident \([0-9]*\) .*/\1/p')
pressure=$(printf '%s\n' "$out" | sed -n 's/.* pressure \([0-9]*\) .*/\1/p')
[ -n "$resident" ] && [ "$resident" -ge $((100 << 20)) ] ||
  { echo "FAIL: the budget's resident figure ($resident) does not count the other process's 100 MiB"; exit 1; }
[ "${pressure:-0}" -ge 1 ] || { echo "FAIL: no pressure past the cgroup's soft limit (pressure $pressure)"; exit 1; }
echo "PASS: $kind, limit $LIMIT, soft $SOFT"
