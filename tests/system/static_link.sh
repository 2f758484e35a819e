#!/usr/bin/env bash
# static_link.sh BUILD — a program linked with libhakmem.a gets all of
# hakmem, not only its malloc: the constructor (HAKMEM_VERBOSE's start
# line), the destructor (the exit line, HAKMEM_STATS's report) and the fork
# handlers (a new purge thread in the child), linked dynamically and with
# -static; the heap profiler runs in both. And the archive exports the
# public API only.
set -u
B=${1:?usage: static_link.sh BUILD}
fails=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

for P in "$B/tests/static_probe" "$B/tests/static_probe_full"; do
  n=$(basename "$P")
  [ -x "$P" ] || { bad "$n: not built"; continue; }
  if readelf -d "$P" | grep NEEDED | grep -q hakmem; then
    bad "$n is linked against libhakmem.so, not libhakmem.a"; continue
  fi
  if [ "$n" = static_probe_full ] && readelf -l "$P" | grep -q INTERP; then
    bad "$n is not a -static executable"; continue
  fi
  # the constructor: HAKMEM_VERBOSE=1 prints the configuration at start;
  # the destructor: the exit line that names the allocator
  HAKMEM_VERBOSE=1 "$P" >"$TMP/out" 2>"$TMP/err" || bad "$n (verbose) exited $?"
  if grep -q '^hakmem: config: ' "$TMP/err" && grep -q '^hakmem: active (pid ' "$TMP/err"; then
    ok "$n: the start-up and exit lines"
  else
    bad "$n: no start-up or exit line under HAKMEM_VERBOSE=1:"; cat "$TMP/err"
  fi
  # the exit report
  HAKMEM_STATS=1 "$P" >"$TMP/out" 2>"$TMP/err" || bad "$n (stats) exited $?"
  if grep -q '^  config: profile ' "$TMP/err"; then
    ok "$n: the HAKMEM_STATS report"
  else
    bad "$n: no report under HAKMEM_STATS=1:"; cat "$TMP/err"
  fi
  # the heap profiler: its first stack walk must wait for the program's
  # frames to be registered (-static: crtbegin's frame_dummy; before it
  # libgcc's unwinder aborts), and the profile is written at exit
  HAKMEM_PROF=1 HAKMEM_PROF_SAMPLE=64 HAKMEM_PROF_FILE="$TMP/$n.%p.heap" "$P" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  if [ $rc = 0 ] && head -1 "$TMP/$n".*.heap 2>/dev/null | grep -q '^heap profile: '; then
    ok "$n: HAKMEM_PROF=1 runs and writes its profile"
  else
    bad "$n: HAKMEM_PROF=1 exited $rc, profile: $(ls "$TMP" | grep heap || echo none)"; cat "$TMP/err"
  fi
  # the fork handlers: the purge thread is started again in the child
  out=$(HAKMEM_BACKGROUND_PURGE=1 "$P" fork 2>&1)
  if grep -q '^purge threads: parent 1, child 1$' <<<"$out"; then
    ok "$n: the fork handler started the child's purge thread"
  else
    bad "$n: fork handlers: $out"
  fi
done

# The installed archive exports the public API only: hak_*, the malloc
# family, operator new and delete; everything else is local to its object.
A="$B/libhakmem.a"
if [ -f "$A" ]; then
  api='^(hak_[a-z0-9_]+|malloc|free|free_sized|free_aligned_sized|__libc_(malloc|free|calloc|realloc|memalign|pvalloc|valloc)|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|malloc_trim|malloc_stats|malloc_info|mallopt|mallinfo2?|cfree|_Zn[wa]m[A-Za-z0-9_]*|_Zd[la]Pv[A-Za-z0-9_]*)$'
  nm -g --defined-only "$A" | awk 'NF == 3 { print $3 }' | sort -u >"$TMP/syms"
  extra=$(grep -Ev "$api" "$TMP/syms")
  count=$(wc -l <"$TMP/syms")
  if [ -n "$extra" ]; then
    bad "libhakmem.a exports $(wc -l <<<"$extra") symbols outside the public API:"; head -20 <<<"$extra"
  elif ! grep -qx malloc "$TMP/syms" || ! grep -qx hak_version "$TMP/syms"; then
    bad "libhakmem.a lacks malloc or hak_version"
  else
    ok "libhakmem.a exports $count symbols, all public API"
  fi
  members=$(ar t "$A" | wc -l)
  [ "$members" = 1 ] && ok "libhakmem.a is one object" || bad "libhakmem.a has $members members, not one"
else
  bad "$A not built"
fi

echo "static_link: $fails failed"
[ "$fails" = 0 ]
