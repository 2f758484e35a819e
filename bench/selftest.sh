#!/usr/bin/env bash
# bench/selftest.sh — proves that the benchmark harness cannot report a number
# for the wrong allocator (the earlier hakmem measured glibc for weeks).
#
#   1. every benchmark program names the allocator that really serves it
#      (glibc, and each peer that is installed, by LD_PRELOAD);
#   2. the harness asked to measure "hakmem" with a run that really uses glibc
#      (no preload) REJECTS the run, keeps it out of the statistics, reports it
#      and exits non-zero; the glibc run beside it is accepted;
#   3. the same for "hakmem-static" run with the plain (not linked) binary;
#   4. the same for a peer mislabelled (jemalloc preloaded, mimalloc asked);
#   5. the same for a real program (python3) through the preload probe;
#   6. a clean glibc-only run is accepted and exits 0;
#   7. a variant (--variants) served by the wrong library is rejected: the
#      label hakmem-secure with the plain build/libhakmem.so preloaded.
# Exit status 0 when all checks pass. Takes a few seconds; needs no hakmem
# build (the harness compiles the benchmarks itself if build/bench is missing).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "ok   - $*"; }
bad()  { echo "FAIL - $*"; fails=$((fails + 1)); }

# the harness's --quick tiny run is 500k rounds; keep it short here
H() { "$PY" bench/harness.py --quick --runs 1 --no-count --out "$TMP" "$@"; }

# json QUERY FILE: evaluate a Python expression over the result document `r`
json() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }
result() { json "[b for b in r['benchmarks'] if b['name']=='$1'][0]['results'].get('$2',{}).get('status')" "$3"; }
reason() { json "[b for b in r['benchmarks'] if b['name']=='$1'][0]['results']['$2']['runs'][0].get('reason','')" "$3"; }

# --- 0. make sure the programs exist (builds build/bench-fallback if needed)
H --allocators glibc --only tiny --tag t0 >"$TMP/t0.log" 2>&1
rc=$?
BIN=build/bench
[ -x "$BIN/bench_tiny" ] || BIN=build/bench-fallback
if [ ! -x "$BIN/bench_tiny" ]; then
    bad "no benchmark binaries (harness log follows)"; cat "$TMP/t0.log"; exit 1
fi

# --- 6. (first, as it is the control) a clean glibc run is accepted, exit 0
if [ $rc -eq 0 ] && [ "$(result tiny glibc "$TMP/t0.json")" = ok ]; then
    pass "a clean glibc run is accepted (exit 0)"
else
    bad "clean glibc run: exit $rc, status $(result tiny glibc "$TMP/t0.json" 2>/dev/null)"; tail -20 "$TMP/t0.log"
fi

# --- 1. the programs name their allocator
out=$("$BIN/bench_tiny" 1000 | sed -n 's/^allocator: //p')
case "$out" in glibc\ \(*libc.so*\)) pass "bench_tiny without preload says: $out" ;;
                *) bad "bench_tiny without preload says '$out', expected glibc" ;; esac
for spec in mimalloc:libmimalloc.so.2 jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
    name=${spec%%:*}; lib=/usr/lib/x86_64-linux-gnu/${spec#*:}
    [ -e "$lib" ] || { echo "skip - $name not installed"; continue; }
    out=$(LD_PRELOAD=$lib "$BIN/bench_tiny" 1000 | sed -n 's/^allocator: //p')
    case "$out" in "$name "*) pass "bench_tiny with $name preloaded says: $out" ;;
                   *) bad "bench_tiny with $name preloaded says '$out'" ;; esac
done
if [ -e build/libhakmem.so ]; then
    out=$(LD_PRELOAD=$ROOT/build/libhakmem.so "$BIN/bench_tiny" 1000 | sed -n 's/^allocator: //p')
    case "$out" in "hakmem "*libhakmem*) pass "bench_tiny with hakmem preloaded says: $out" ;;
                   *) bad "bench_tiny with hakmem preloaded says '$out'" ;; esac
fi
if [ -x "$BIN/bench_tiny_hakmem_static" ]; then
    out=$("$BIN/bench_tiny_hakmem_static" 1000 | sed -n 's/^allocator: //p')
    case "$out" in "hakmem "*bench_tiny_hakmem_static*) pass "bench_tiny_hakmem_static says: $out" ;;
                   *) bad "bench_tiny_hakmem_static says '$out'" ;; esac
fi

# --- 2. "hakmem" that is really glibc is rejected
H --pretend hakmem=none --allocators hakmem,glibc --only tiny --tag t2 >"$TMP/t2.log" 2>&1
rc=$?
st=$(result tiny hakmem "$TMP/t2.json"); why=$(reason tiny hakmem "$TMP/t2.json")
if [ $rc -ne 0 ] && [ "$st" = rejected ] && [[ "$why" == *"printed allocator glibc"* ]] \
   && [ "$(result tiny glibc "$TMP/t2.json")" = ok ] && grep -q "REJECTED" "$TMP/t2.log" \
   && grep -q "REJECTED" "$TMP/t2.md"; then
    pass "mis-linked 'hakmem' run (really glibc) rejected: $why"
else
    bad "mis-linked hakmem run not caught (exit $rc, status $st, reason '$why')"; tail -20 "$TMP/t2.log"
fi
# and no ratio or median is reported for it
if [ "$(json "[b for b in r['benchmarks'] if b['name']=='tiny'][0]['results']['hakmem'].get('median')" "$TMP/t2.json")" = None ]; then
    pass "the rejected run has no median in the results"
else
    bad "a rejected run produced a median"
fi

# --- 3. "hakmem-static" that is the plain binary is rejected
H --pretend hakmem-static=plain --allocators hakmem-static --only tiny --tag t3 >"$TMP/t3.log" 2>&1
rc=$?
st=$(result tiny hakmem-static "$TMP/t3.json"); why=$(reason tiny hakmem-static "$TMP/t3.json")
if [ $rc -ne 0 ] && [ "$st" = rejected ]; then
    pass "mis-linked 'hakmem-static' run (plain binary) rejected: $why"
else
    bad "mis-linked hakmem-static run not caught (exit $rc, status $st)"; tail -20 "$TMP/t3.log"
fi

# --- 4. a mislabelled peer is rejected
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -e "$JE" ]; then
    H --pretend mimalloc=$JE --allocators mimalloc --only tiny --tag t4 >"$TMP/t4.log" 2>&1
    rc=$?
    st=$(result tiny mimalloc "$TMP/t4.json"); why=$(reason tiny mimalloc "$TMP/t4.json")
    if [ $rc -ne 0 ] && [ "$st" = rejected ] && [[ "$why" == *jemalloc* ]]; then
        pass "'mimalloc' run that preloads jemalloc rejected: $why"
    else
        bad "mislabelled peer not caught (exit $rc, status $st)"; tail -20 "$TMP/t4.log"
    fi
else
    echo "skip - jemalloc not installed: mislabelled-peer check"
fi

# --- 5. a real program: python3 claimed as hakmem, really glibc
if command -v python3 >/dev/null; then
    H --pretend hakmem=none --allocators hakmem --only python3 --tag t5 >"$TMP/t5.log" 2>&1
    rc=$?
    st=$(result python3 hakmem "$TMP/t5.json"); why=$(reason python3 hakmem "$TMP/t5.json")
    if [ $rc -ne 0 ] && [ "$st" = rejected ] && [[ "$why" == *"printed allocator glibc"* ]]; then
        pass "mis-linked real program (python3) rejected: $why"
    else
        bad "mis-linked python3 run not caught (exit $rc, status $st, '$why')"; tail -20 "$TMP/t5.log"
    fi
fi

# --- 7. a variant served by the wrong hakmem library
if [ -e build/libhakmem.so ]; then
    H --variants --pretend hakmem-secure=$ROOT/build/libhakmem.so --allocators hakmem-secure --only tiny \
      --tag t7 >"$TMP/t7.log" 2>&1
    rc=$?
    st=$(result tiny hakmem-secure "$TMP/t7.json"); why=$(reason tiny hakmem-secure "$TMP/t7.json")
    if [ $rc -ne 0 ] && [ "$st" = rejected ] && [[ "$why" == *libhakmem-secure* ]]; then
        pass "'hakmem-secure' variant served by libhakmem.so rejected: $why"
    else
        bad "mis-attributed variant not caught (exit $rc, status $st, '$why')"; tail -20 "$TMP/t7.log"
    fi
else
    echo "skip - build/libhakmem.so not built: variant check"
fi

if [ $fails -eq 0 ]; then
    echo "bench selftest: all checks passed"
    exit 0
fi
echo "bench selftest: $fails check(s) FAILED"
exit 1
