#!/usr/bin/env bash
# layers.sh — the layer check (issue 18): every file of src/ has a rank in
# docs/ARCHITECTURE.md and depends only on files of a lower rank.
#
#   layers.sh [ARGS]   run tests/repo/layers.py on the tree (ARGS passed on:
#                      --configs, --dot, ...); its exit status
#   layers.sh --plant  the check's self-test, on copies of src/, include/ and
#                      docs/ARCHITECTURE.md in a temporary directory:
#                      1. an upward call planted in os.c (a call to a global
#                         of heap.c) must make the check fail, naming both;
#                      2. an upward include planted in chunk_map.c
#                         (#include "heap/heap.h") must make it fail, naming
#                         both, as a rank and as a folder violation;
#                      3. an unmodified copy must get the real tree's verdict
#                         (so the self-test holds whether or not the tree is
#                         clean).
#                      Exit 0 when all three hold. The tree is not touched.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
#   layers.sh --folders        the folder order alone (no compile: quick)
#   layers.sh --plant-folders  its self-test: plant 2 on --includes-only
case "${1:-}" in
  --plant) ;;
  --folders) exec python3 "$HERE/layers.py" --includes-only ;;
  --plant-folders) ;;
  *) exec python3 "$HERE/layers.py" "$@" ;;
esac
MODE=$1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-layers-plant.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
failed=0

# fresh NAME: a copy of the files the check reads, in $WORK/NAME
fresh() {
  mkdir -p "$WORK/$1/docs" &&
    cp -r "$ROOT/src" "$ROOT/include" "$WORK/$1/" &&
    cp "$ROOT/docs/ARCHITECTURE.md" "$WORK/$1/docs/" ||
    { echo "cannot copy the tree"; exit 2; }
}
# check NAME: the check on copy NAME; output in $WORK/NAME.out, its status
# (the default build only: the plants are in code every configuration
# compiles, and each configuration more costs a compile of every file per
# copy: the four builds made this test 90 s of a 2214 s clean-clone suite)
PLANT_CONFIGS=default
check() {
  local only=
  [ "$MODE" = --plant-folders ] && only=--includes-only
  python3 "$HERE/layers.py" $only --configs $PLANT_CONFIGS --src "$WORK/$1/src" \
    --doc "$WORK/$1/docs/ARCHITECTURE.md" >"$WORK/$1.out" 2>&1
}
# expect_caught NAME STATUS PATTERN WHAT: the check must have failed, with
# a line matching PATTERN (the planted edge itself, not some older one)
expect_caught() {
  local line
  line=$(grep -E "$3" "$WORK/$1.out" | head -n 1)
  if [ "$2" -ne 0 ] && [ -n "$line" ]; then
    echo "  caught (exit $2): $line"
  else
    echo "FAIL $1: the check missed $4 (exit $2; no line matching '$3'):"
    sed 's/^/    | /' "$WORK/$1.out" | tail -n 30
    failed=$((failed + 1))
  fi
}
# changed FILE ORIG: the plant really edited FILE
changed() {
  if cmp -s "$1" "$2"; then
    echo "FAIL: the plant did not change ${1#$WORK/} (the code moved: update this script)"
    failed=$((failed + 1))
    return 1
  fi
}

# 1. an upward call: os.c calls a global function of heap.c. hk_heap_trim if
# heap.c still defines it, else its first function definition that is
# neither static nor inline (the name before the first parenthesis of a
# line at column 0 that does not end with a semicolon).
heap_globals=$(grep -E '^[A-Za-z_]' "$ROOT/src/heap/heap.c" |
  grep -vE '^(extern|typedef)\b|\b(static|inline)\b|HK_INLINE|;[[:space:]]*$' |
  sed -nE 's/^[^(]*[^A-Za-z0-9_](hk_[A-Za-z0-9_]+)\(.*/\1/p')
if grep -qx hk_heap_trim <<<"$heap_globals"; then sym=hk_heap_trim
else sym=$(head -n 1 <<<"$heap_globals"); fi
echo "== plant 1: os.c calls $sym of heap.c"
if [ "$MODE" = --plant-folders ]; then
  echo "  (not in --plant-folders: a call needs a compile)"
elif [ -z "$sym" ]; then
  echo "FAIL: no global function definition found in src/heap/heap.c"
  failed=$((failed + 1))
else
  fresh call
  f=$WORK/call/src/pal/os.c
  cp "$f" "$WORK/os.c.orig"
  # Declared under a name of its own, bound to the symbol by an asm label:
  # os.c may see heap.c's prototype (or another signature) through its
  # includes, and this must compile whatever that prototype says.
  cat >>"$f" <<EOF

/* planted by tests/repo/layers.sh --plant: an upward call, os.c -> heap.c */
extern void hk_layers_planted_ref(void) __asm__("$sym");
void hk_os_planted(void) { hk_layers_planted_ref(); }
EOF
  if changed "$f" "$WORK/os.c.orig"; then
    echo "  appended to the copy of src/pal/os.c: hk_os_planted(), calling $sym"
    check call
    expect_caught call $? "pal/os\.c .*-> heap/heap\.c .*[: ]$sym( |\$)" "os.c -> heap.c ($sym)"
  fi
fi

# 2. an upward include, found in the text (whether or not it compiles)
echo '== plant 2: chunk_map.c includes "heap.h"'
fresh include
f=$WORK/include/src/base/chunk_map.c
cp "$f" "$WORK/chunk_map.c.orig"
sed -i '1i #include "heap/heap.h"' "$f"
if changed "$f" "$WORK/chunk_map.c.orig"; then
  echo '  inserted line 1 of the copy of src/base/chunk_map.c: #include "heap/heap.h"'
  check include
  st=$?
  expect_caught include $st 'FOLDER base/chunk_map\.c \(base/\) -> heap/heap\.h \(heap/\)' \
    'chunk_map.c -> heap.h (a later folder)'
  [ "$MODE" = --plant-folders ] ||
    expect_caught include $st 'chunk_map\.c .*-> heap/heap\.h .*include "heap/heap\.h" \(base/chunk_map\.c:1[,)]' \
      'chunk_map.c -> heap.h (include)'
fi
if [ "$MODE" = --plant-folders ]; then
  [ $failed -eq 0 ] || { echo "layers --plant-folders: the planted include was missed"; exit 1; }
  echo "layers --plant-folders: OK (the include into a later folder caught)"
  exit 0
fi

# 3. the copy as it is: the same verdict as the tree itself
echo "== unmodified copy: the tree's verdict"
python3 "$HERE/layers.py" --configs $PLANT_CONFIGS >"$WORK/real.out" 2>&1
real=$?
fresh same
check same
copy=$?
echo "  tree:  exit $real, $(tail -n 1 "$WORK/real.out")"
echo "  copy:  exit $copy, $(tail -n 1 "$WORK/same.out")"
if [ "$real" -ne "$copy" ]; then
  echo "FAIL: the copy's verdict differs from the tree's"
  sed 's/^/    | /' "$WORK/same.out" | tail -n 30
  failed=$((failed + 1))
fi

if [ $failed -ne 0 ]; then
  echo "layers --plant: $failed expectation(s) failed"
  exit 1
fi
echo "layers --plant: OK (both planted edges caught; the copy's verdict is the tree's)"
