#!/usr/bin/env bash
# valgrind.sh BUILD_DIR — memcheck on programs running on the valgrind build
# of hakmem (libhakmem-valgrind.so, client requests in src/base/track.h):
#   planted.c  a leak, a use-after-free of a small and of a large block:
#              memcheck must report all three, in blocks hakmem served;
#   clean.c    correct multi-threaded use: no error, no leak.
# Both are built by CMake (BUILD_DIR/tests/vg_planted, vg_clean), like the
# library. Exits 77 (ctest: Skipped) when valgrind is not installed.
set -u
B=$(cd "${1:?usage: valgrind.sh BUILD_DIR}" && pwd)
if ! command -v valgrind >/dev/null; then echo "SKIP valgrind (not installed: apt-get install valgrind)"; exit 77; fi
LIB="$B/libhakmem-valgrind.so"
for f in "$LIB" "$B/tests/vg_planted" "$B/tests/vg_clean"; do
  [ -e "$f" ] || { echo "FAIL: $f not built (run make)"; exit 1; }
done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$B/tests/vg_planted" "$W/planted" && cp "$B/tests/vg_clean" "$W/clean" || exit 1
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
