#!/usr/bin/env bash
# valgrind.sh BUILD_DIR — memcheck on programs running on the valgrind build
# of hakmem (libhakmem-valgrind.so, client requests in src/track.h):
#   planted.c  a leak, a use-after-free of a small and of a large block:
#              memcheck must report all three, in blocks hakmem served;
#   clean.c    correct multi-threaded use: no error, no leak.
set -u
B=$(cd "${1:?usage: valgrind.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v valgrind >/dev/null; then echo "SKIP valgrind (not installed)"; exit 0; fi
cmake --build "$B" --target hakmem-valgrind >/dev/null || { echo "FAIL: cannot build hakmem-valgrind"; exit 1; }
LIB="$B/libhakmem-valgrind.so"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cc -O0 -g "$HERE/valgrind/planted.c" -o "$W/planted" || exit 1
cc -O1 -g -pthread "$HERE/valgrind/clean.c" -o "$W/clean" || exit 1
VG="valgrind --soname-synonyms=somalloc=nouserintercepts --leak-check=full --errors-for-leak-kinds=definite"
fail=0
HAKMEM_VERBOSE=1 LD_PRELOAD="$LIB" $VG "$W/planted" > "$W/p.out" 2>&1
grep -q "hakmem: active" "$W/p.out" || { echo "FAIL planted: hakmem did not serve the program"; fail=1; }
grep -q "definitely lost: [1-9][0-9]* bytes in 1 blocks" "$W/p.out" || { echo "FAIL planted: the leak was not reported"; fail=1; }
n=$(grep -c "Invalid read of size 1" "$W/p.out")
[ "$n" = 2 ] || { echo "FAIL planted: $n use-after-free reports, want 2"; fail=1; }
grep -q "inside a block of size .* free'd" "$W/p.out" || { echo "FAIL planted: freed block not identified"; fail=1; }
grep -q "libhakmem-valgrind.so" "$W/p.out" || { echo "FAIL planted: stacks do not go through hakmem"; fail=1; }
[ $fail = 0 ] && echo "PASS planted: leak and 2 use-after-free reported by memcheck"
HAKMEM_VERBOSE=1 LD_PRELOAD="$LIB" $VG --error-exitcode=3 "$W/clean" > "$W/c.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$W/c.out" && grep -q "hakmem: active" "$W/c.out"; then
  echo "PASS clean: no error, no leak"
else
  echo "FAIL clean (rc $rc)"; tail -30 "$W/c.out"; fail=1
fi
[ $fail = 0 ] || { echo "--- planted output"; tail -40 "$W/p.out"; }
exit $fail
