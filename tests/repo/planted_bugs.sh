#!/usr/bin/env bash
# planted_bugs.sh — the suite must catch known faults (issue 17).
#
# For each fault below: plant it in a copy of the tree (a sed on one source
# line, checked to have changed the file), rebuild the library and the few
# tests that should notice, run them, and expect at least one to fail (exit
# non-zero, die by a signal, or hang past its guard). A fault nothing
# catches is a hole in the suite: the script then fails.
#
#   purge_range    the cached superslab's purge starts at the superslab,
#                  over its header's fields (the bug of 9d4dbd7 started one
#                  page in, where the fields lay until 9ea768f; that page
#                  holds unused descriptors now, which a purge leaves as
#                  ss_init would)
#   partial_unlink a slab leaving its class's partial list does not unlink
#                  its successor's back link
#   cache_unlink   a superslab leaving a global list does not unlink its
#                  successor's back link
#
# Builds in a temporary directory (release and debug, about 2 minutes on
# 2 cores); the working tree is not touched. Exit 0 when every fault was
# caught.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
JOBS=${JOBS:-$(nproc)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-planted.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

# the tree as it is (tracked and untracked files, not ignored ones)
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
  tar -xf - -C "$WORK" || { echo "cannot copy the tree"; exit 2; }
S=$WORK/src
TARGETS="hakmem test_ss_purge test_stress test_random"
build() {  # build DIR TYPE DEBUG
  cmake -S "$S/.." -B "$1" -DCMAKE_BUILD_TYPE="$2" -DHAKMEM_DEBUG="$3" >/dev/null &&
    cmake --build "$1" -j "$JOBS" --target $TARGETS >"$1.log" 2>&1 ||
    { echo "build failed ($1):"; tail -20 "$1.log"; return 1; }
}
REL=$WORK/b-release
DBG=$WORK/b-debug
build "$REL" Release OFF && build "$DBG" Debug ON || exit 2

missed=0
# plant NAME FILE SED_EXPR DETECTOR... (each detector one shell command)
plant() {
  local name=$1 file=$S/$2 expr=$3
  shift 3
  cp "$file" "$file.orig"
  sed -i "$expr" "$file"
  if cmp -s "$file" "$file.orig"; then
    echo "FAIL $name: the sed did not change $2 (the code moved: update this script)"
    missed=$((missed + 1))
    mv "$file.orig" "$file"
    return
  fi
  if ! { cmake --build "$REL" -j "$JOBS" --target $TARGETS >"$REL.log" 2>&1 &&
         cmake --build "$DBG" -j "$JOBS" --target $TARGETS >"$DBG.log" 2>&1; }; then
    echo "FAIL $name: the planted tree does not build"
    tail -n 20 "$REL.log" "$DBG.log" | sed 's/^/    | /'
    missed=$((missed + 1))
  else
    local d caught=""
    for d in "$@"; do
      timeout -k 5 120 bash -c "$d" >"$WORK/det.log" 2>&1
      local rc=$?
      if [ $rc -ne 0 ]; then
        caught="$d (exit $rc)"
        break
      fi
    done
    if [ -n "$caught" ]; then
      echo "CAUGHT $name by: ${caught//$WORK\//}"
      tail -n 2 "$WORK/det.log" | sed 's/^/    | /'
    else
      echo "MISSED $name: every detector passed"
      missed=$((missed + 1))
    fi
  fi
  mv "$file.orig" "$file"
  touch "$file"
}

RND="$HERE/../system/random.sh"
PURGE1="HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=1 HAKMEM_HEAP_SPARE=0 HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=1"

plant purge_range backend/superslab.c \
  's|hk_os_purge(hk_ss_slab_area(ss, 0), cached_area(ss));|hk_os_purge((uint8_t *)ss, HK_SS_SIZE);|' \
  "$REL/tests/test_ss_purge" \
  "env $PURGE1 bash $RND $REL" \
  "$DBG/tests/test_ss_purge"

# one thread, a check at every slow path: deterministic (8 threads alone
# missed this fault once in CI)
CHECK1="HAKMEM_CHECK_EVERY=1 HAKMEM_PURGE_DELAY_MS=0"
plant partial_unlink heap/heap_slabs.h \
  '/^static inline void hk_partial_remove/,/^}/s|HK_DLT_UNLINK(h->partial\[s->cls\], h->partial_tail\[s->cls\], s, next, prev);|if (s->prev) s->prev->next = s->next; else h->partial[s->cls] = s->next; if (!s->next) h->partial_tail[s->cls] = s->prev;  /* planted: the successor keeps its back link */|' \
  "env $CHECK1 $DBG/tests/test_stress 1" \
  "$DBG/tests/test_stress 8" \
  "bash $RND $DBG" \
  "$REL/tests/test_stress 8"

plant cache_unlink backend/superslab.c \
  '/^void hk_ss_list_remove/,/^}/s|HK_DL_UNLINK(l->head, ss, next, prev);|if (ss->prev) ss->prev->next = ss->next; else l->head = ss->next;  /* planted: the successor keeps its back link */|' \
  "env $PURGE1 $DBG/tests/test_stress 8" \
  "env $PURGE1 bash $RND $DBG" \
  "$DBG/tests/test_ss_purge"

echo "planted faults missed: $missed"
[ $missed -eq 0 ]
