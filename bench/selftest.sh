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
#   8. a crash is a verdict: one run of three killed by SIGSEGV
#      (--inject-crash) makes its row FAIL, with no median of the two that
#      survived, and the harness exit non-zero; the gdb re-run is labelled
#      "not reproduced"; a row with no crash beside it keeps its median;
#   9. a crash on every start is "reproduced" under gdb, with a backtrace;
#  10. the same verdict for the soak (--soak): a soak that died is FAIL.
# Exit status 0 when all checks pass. Takes a few seconds; needs the build's
# benchmark programs (`make`: the harness compiles nothing itself).
# BENCH_BUILD=DIR runs it against a copy of the build directory (--build).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BENCH_BUILD:-$ROOT/build}
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "ok   - $*"; }
bad()  { echo "FAIL - $*"; fails=$((fails + 1)); }

# the harness's --quick tiny run is 500k rounds; keep it short here
H() { "$PY" bench/harness.py --quick --runs 1 --no-count --build "$BUILD" --out "$TMP" "$@"; }

# json QUERY FILE: evaluate a Python expression over the result document `r`
json() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }
result() { json "[b for b in r['benchmarks'] if b['name']=='$1'][0]['results'].get('$2',{}).get('status')" "$3"; }
reason() { json "[b for b in r['benchmarks'] if b['name']=='$1'][0]['results']['$2']['runs'][0].get('reason','')" "$3"; }

# --- 0. the programs are CMake's (make): the harness builds nothing, and
# refuses a build directory without them, saying what to run
BIN=$BUILD/bench
if [ ! -x "$BIN/bench_tiny" ]; then
    bad "no benchmark binaries in $BIN: run make first"; exit 1
fi
mkdir -p "$TMP/empty-build"
"$PY" bench/harness.py --quick --runs 1 --no-count --build "$TMP/empty-build" --out "$TMP" \
    --allocators glibc --only tiny --tag empty >"$TMP/empty.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q 'run `make`' "$TMP/empty.log" && [ ! -e "$TMP/empty-build/bench" ]; then
    pass "a build directory without the programs is refused (exit $rc), nothing built"
else
    bad "harness on an empty build directory: exit $rc, log: $(tail -n 2 "$TMP/empty.log")"
fi
H --allocators glibc --only tiny --tag t0 >"$TMP/t0.log" 2>&1
rc=$?

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
if [ -e "$BUILD/libhakmem.so" ]; then
    out=$(LD_PRELOAD=$BUILD/libhakmem.so "$BIN/bench_tiny" 1000 | sed -n 's/^allocator: //p')
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
if [ -e "$BUILD/libhakmem.so" ]; then
    H --variants --pretend hakmem-secure=$BUILD/libhakmem.so --allocators hakmem-secure --only tiny \
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

# --- 8. a crash is a verdict: run 2 of 3 of tiny/glibc is killed by SIGSEGV
# (the gdb re-run is start 3 of that row, which runs cleanly)
H --allocators glibc --only tiny,mid_1t --runs 3 --inject-crash tiny/glibc=2 --tag t8 >"$TMP/t8.log" 2>&1
rc=$?
row() { json "[b for b in r['benchmarks'] if b['name']=='$1'][0]['results']['$2']$3" "$4"; }
v=$(row tiny glibc "['verdict']" "$TMP/t8.json"); med=$(row tiny glibc ".get('median')" "$TMP/t8.json")
sig=$(row tiny glibc "['runs'][1].get('signal')" "$TMP/t8.json")
nok=$(row tiny glibc "['runs_ok']" "$TMP/t8.json")
if [ $rc -ne 0 ] && [ "$v" = FAIL ] && [ "$med" = None ] && [ "$sig" = SIGSEGV ] && [ "$nok" = 2 ] \
   && [ "$(json "r['verdict']" "$TMP/t8.json")" = FAIL ] && grep -q "tiny / glibc: FAIL" "$TMP/t8.log" \
   && grep -q "^| tiny | \*\*FAIL\*\* |" "$TMP/t8.md"; then
    pass "a SIGSEGV in run 2 of 3 fails the row: no median of the 2 survivors, exit $rc"
else
    bad "a crashed run did not fail its row (exit $rc, verdict $v, median $med, signal $sig, ok $nok)"
    tail -30 "$TMP/t8.log"
fi
v=$(row mid_1t glibc "['verdict']" "$TMP/t8.json"); med=$(row mid_1t glibc ".get('median')" "$TMP/t8.json")
if [ "$v" = PASS ] && [ "$med" != None ]; then
    pass "the row without a crash beside it keeps its median ($med ops/s)"
else
    bad "the clean row: verdict $v, median $med"
fi
if command -v gdb >/dev/null; then
    g=$(row tiny glibc "['runs'][1].get('gdb')" "$TMP/t8.json")
    if [ "$g" = "not reproduced" ] && grep -q "re-run under gdb.*: not reproduced" "$TMP/t8.log"; then
        pass "the crash that gdb does not reproduce is labelled 'not reproduced' (row still FAIL)"
    else
        bad "gdb re-run of a one-off crash labelled '$g'"
    fi
    # --- 9. every start crashes: gdb reproduces it, with a backtrace
    H --allocators glibc --only tiny --inject-crash tiny/glibc=0 --tag t9 >"$TMP/t9.log" 2>&1
    rc=$?
    g=$(row tiny glibc "['runs'][0].get('gdb')" "$TMP/t9.json")
    bt=$(row tiny glibc "['runs'][0].get('backtrace','')" "$TMP/t9.json")
    if [ $rc -ne 0 ] && [ "$g" = reproduced ] && [[ "$bt" == *"#0 "* ]] \
       && [ "$(row tiny glibc "['verdict']" "$TMP/t9.json")" = FAIL ] && grep -q "reproduced" "$TMP/t9.md"; then
        pass "a crash on every start is 'reproduced' under gdb, with a backtrace (row FAIL, exit $rc)"
    else
        bad "reproducible crash: exit $rc, gdb '$g'"; tail -30 "$TMP/t9.log"
    fi
else
    echo "skip - gdb not installed: gdb re-run labels"
fi

# --- 10. a soak that dies is FAIL (it dies at once: no 10 s wait)
"$PY" bench/harness.py --soak --minutes 0 --allocators glibc --inject-crash soak/glibc=1 --build "$BUILD" \
    --out "$TMP" --tag t10 >"$TMP/t10.log" 2>&1
rc=$?
v=$(json "r['soaks'][0]['verdict']" "$TMP/t10.json"); sig=$(json "r['soaks'][0].get('signal')" "$TMP/t10.json")
if [ $rc -ne 0 ] && [ "$v" = FAIL ] && [ "$sig" = SIGSEGV ] && grep -q "VERDICT: FAIL" "$TMP/t10.log"; then
    pass "a soak killed by SIGSEGV is FAIL (exit $rc)"
else
    bad "a crashed soak: exit $rc, verdict $v, signal $sig"; tail -20 "$TMP/t10.log"
fi

if [ $fails -eq 0 ]; then
    echo "bench selftest: all checks passed"
    exit 0
fi
echo "bench selftest: $fails check(s) FAILED"
exit 1
