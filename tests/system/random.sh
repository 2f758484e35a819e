#!/usr/bin/env bash
# random.sh BUILD_DIR [CONFIG] — runs BUILD_DIR/tests/test_random once per
# seed of tests/system/random_seeds.txt, under a hang guard, and prints one line per
# seed: "PASS seed S" or "FAIL seed S (exit N ...)" with the command line
# (environment included) that replays it, and the tail of its output.
# Exits 1 if any seed failed.
#
# CONFIG (default: default) picks the environment:
#   default  nothing set
#   purge    HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=1 HAKMEM_HEAP_SPARE=0
#            HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=1
#   purge0   the same with HAKMEM_SS_CACHE=0 HAKMEM_LARGE_CACHE_COUNT=0
#   learn    HAKMEM_LEARN=1 HAKMEM_LEARN_EPOCH=16
#   lowmem   HAKMEM_PROFILE=lowmem
#   fast     HAKMEM_PROFILE=fast
#
# Environment: LIB=path runs the test under LD_PRELOAD=path (e.g.
# build/libhakmem-secure.so); OPS (default 100000) operations per run;
# TIMEOUT (default 120) seconds per run; SEEDS file of seeds (default
# random_seeds.txt beside this script).
set -u
usage() { echo "usage: random.sh BUILD_DIR [default|purge|purge0|learn|lowmem|fast]" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
B=$1
CONFIG=${2:-default}
OPS=${OPS:-100000}
TIMEOUT=${TIMEOUT:-120}  # below the ctest TIMEOUT of the whole script (300 s)
here=$(cd "$(dirname "$0")" && pwd)
SEEDS=${SEEDS:-$here/random_seeds.txt}

case $CONFIG in
  default) ENV=() ;;
  purge)   ENV=(HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=1 HAKMEM_HEAP_SPARE=0
                HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=1) ;;
  purge0)  ENV=(HAKMEM_PURGE_DELAY_MS=1 HAKMEM_SS_CACHE=0 HAKMEM_HEAP_SPARE=0
                HAKMEM_CARVE_KB=4 HAKMEM_LARGE_CACHE_COUNT=0) ;;
  learn)   ENV=(HAKMEM_LEARN=1 HAKMEM_LEARN_EPOCH=16) ;;
  lowmem)  ENV=(HAKMEM_PROFILE=lowmem) ;;
  fast)    ENV=(HAKMEM_PROFILE=fast) ;;
  *) echo "random.sh: unknown config '$CONFIG'" >&2; usage ;;
esac

T="$(cd "$B" 2>/dev/null && pwd)/tests/test_random"
[ -x "$T" ] || { echo "random.sh: $B/tests/test_random not built" >&2; exit 2; }
[ -r "$SEEDS" ] || { echo "random.sh: no seed file $SEEDS" >&2; exit 2; }
if [ -n "${LIB:-}" ]; then
  [ -r "$LIB" ] || { echo "random.sh: LIB=$LIB not found" >&2; exit 2; }
  LIB=$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")
  ENV+=("LD_PRELOAD=$LIB")
fi

signame() {  # exit status -> "SIGSEGV" etc. when it is 128 + a signal
  local n=$(($1 - 128))
  if [ "$1" -gt 128 ] && kill -l "$n" >/dev/null 2>&1; then echo " SIG$(kill -l "$n")"; fi
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
pass=0 fail=0 t0=$SECONDS
echo "random.sh: config $CONFIG${LIB:+, LD_PRELOAD=$LIB}, OPS $OPS, timeout ${TIMEOUT}s per run"
while read -r seed _; do
  case $seed in ''|'#'*) continue ;; esac
  s0=$SECONDS
  # (the braces take bash's own "Segmentation fault" line into $out)
  { env "${ENV[@]}" timeout -k 10 "$TIMEOUT" "$T" "$seed" "$OPS" >"$out" 2>&1; rc=$?; } 2>>"$out"
  # knobs inherited from the caller (the torture configurations of tests/CMakeLists.txt) too
  inherited=$(env | grep -E '^HAKMEM_[A-Z_]+=' | sort | tr '\n' ' ')
  replay="$inherited${ENV[*]}${ENV[*]:+ }$T $seed $OPS"
  if [ $rc -eq 0 ] && grep -q "^test_random: seed $seed, .* 0 failed$" "$out"; then
    echo "PASS seed $seed ($((SECONDS - s0)) s): $(tail -n 1 "$out")"
    pass=$((pass + 1))
  else
    why="exit $rc$(signame $rc)"
    [ $rc -eq 124 ] && why="exit 124: timed out after ${TIMEOUT}s"
    [ $rc -eq 0 ] && why="exit 0 without the summary line"
    echo "FAIL seed $seed ($why)"
    echo "  replay: $replay"
    tail -n 20 "$out" | sed 's/^/  | /'
    fail=$((fail + 1))
  fi
done <"$SEEDS"
echo "random.sh: config $CONFIG: $pass passed, $fail failed ($((SECONDS - t0)) s)"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
