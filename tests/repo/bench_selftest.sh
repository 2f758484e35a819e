#!/usr/bin/env bash
# tests/repo/bench_selftest.sh — proves that the benchmark harness cannot report a number
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
#  11. verdicts against the best peer (bench/verdict.py) on synthetic runs
#      with a known answer: ahead, tie, behind, a deterministic bootstrap,
#      n/a with one run a side, lower RSS is ahead, FAIL stays FAIL, the best
#      peer skips hakmem variants and FAIL rows; a memory-over-time figure
#      (idle_end) is judged lower-is-better and read from a run's output;
#      the round's rules: a peer faster and leaner beyond noise dominates, one
#      within noise on either does not; lowmem within or over 1.10x the
#      leanest peer's peak RSS, n/a without its runs;
#  12. a real glibc,hakmem run writes the verdicts (JSON, report, log), and
#      --render adds them to a results file that has none; it preloads
#      hakmem by its file's own path, not by a symlink.
#  13. two hakmem builds in one run (--build A=DIR --build B=COPY): both
#      labels, each run proved by its own library, a "Builds compared" table;
#      hakmem:B served by A's library is rejected.
#  14. a real-program row skipped for a missing tool (redis, cc) names the
#      Debian package to install, in the JSON, the report and the log.
#  15. every run's log line starts with [N/TOTAL runs, elapsed, ~time left],
#      and the estimate is right on a fake clock.
#  16. a run (and --render) writes STEM-table.md and STEM-verdicts.svg; the
#      table names each peer with its version (from Debian package versions);
#      --publish rewrites only the text between the bench-table markers of
#      temporary markdown files (CRLF kept, idempotent), writes the five-line
#      summary between the bench-summary markers, and writes nothing when a
#      file lacks both.
#  17. bench/scaling.sh: pack, unpack and a tiny run write accepted runs,
#      CSV, JSON and SVG; a swapped library is refused; a "hakmem" served by
#      glibc is rejected.
# Exit status 0 when all checks pass. Takes a few seconds; needs the build's
# benchmark programs (`make`: the harness compiles nothing itself).
# BENCH_BUILD=DIR runs it against a copy of the build directory (--build).
# Usage: tests/repo/bench_selftest.sh (no arguments); --help prints this text.
set -u
# the header above is the usage: --help shows it (and runs nothing)
help_text() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) help_text; exit 0 ;;
  "") ;;
  *) echo "bench_selftest.sh: unexpected argument '$1'" >&2; help_text >&2; exit 2 ;;
esac
cd "$(dirname "$0")/../.."
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

# --- 11. verdicts against the best peer (bench/verdict.py) on synthetic runs
# with a known answer. vchk PYTHON-EXPR: prints the expression's value; the
# module is imported as v, and row(h, p, key) builds a results row with hakmem
# runs h and glibc runs p of key (throughput or rss_kib), PASS with >= 1 run
V() { "$PY" -c '
import sys; sys.path.insert(0, "bench"); import verdict as v
def row(h, p, key="throughput", hs="ok"):
    def s(runs, st="ok"):
        d = {"status": st, "verdict": "PASS" if st == "ok" else "FAIL", "runs": [{"status": "ok", key: x} for x in runs]}
        if st == "ok":
            import statistics
            d["median" if key == "throughput" else "rss_kib"] = statistics.median(runs)
        return d
    return {"hakmem": s(h, hs), "glibc": s(p)}
print(eval(sys.argv[1]))' "$1"; }
HI="[100,101,99,100,102]"; LO="[50,51,49,50,52]"
out=$(V "(lambda c: '%.3f %.4f %.4f %s' % (c['ratio'], c['ci'][0], c['ci'][1], c['verdict']))(v.compare(row($HI, $LO)))")
read -r ratio lo hi word <<<"$out"
if awk -v r="$ratio" -v l="$lo" 'BEGIN{exit !(r > 1.99 && r < 2.01 && l > 1)}' && [ "$word" = ahead ]; then
    pass "verdict: runs $HI vs $LO: ratio $ratio [$lo, $hi], ahead"
else
    bad "verdict on $HI vs $LO: '$out', expected ratio ~2, interval > 1, ahead"
fi
out=$(V "(lambda c: '%.3f %.4f %.4f %s' % (c['ratio'], c['ci'][0], c['ci'][1], c['verdict']))(v.compare(row($HI, $HI)))")
read -r ratio lo hi word <<<"$out"
if awk -v l="$lo" -v h="$hi" 'BEGIN{exit !(l <= 1 && h >= 1)}' && [ "$word" = tie ]; then
    pass "verdict: identical runs: ratio $ratio [$lo, $hi] contains 1, tie"
else
    bad "verdict on identical runs: '$out', expected an interval containing 1, tie"
fi
out=$(V "(lambda c: '%.3f %.4f %.4f %s' % (c['ratio'], c['ci'][0], c['ci'][1], c['verdict']))(v.compare(row($LO, $HI)))")
read -r ratio lo hi word <<<"$out"
if awk -v h="$hi" 'BEGIN{exit !(h < 1)}' && [ "$word" = behind ]; then
    pass "verdict: runs $LO vs $HI: ratio $ratio [$lo, $hi], behind"
else
    bad "verdict on reversed runs: '$out', expected interval < 1, behind"
fi
out=$(V "v.bootstrap_ratio($HI, $LO, seed=7) == v.bootstrap_ratio($HI, $LO, seed=7) and v.compare(row($HI, $LO)) == v.compare(row($HI, $LO))")
out2=$(V "v.bootstrap_ratio($HI, $LO, seed=7)"); out3=$(V "v.bootstrap_ratio($HI, $LO, seed=7)")
if [ "$out" = True ] && [ "$out2" = "$out3" ]; then
    pass "verdict: the bootstrap is deterministic (seed 7, twice, two processes: $out2)"
else
    bad "verdict: the bootstrap is not deterministic: '$out', '$out2' vs '$out3'"
fi
# below 5 runs a side no bootstrap (too narrow): the range of all pairings
out=$(V "(lambda r: '%s|%.4f|%.4f|%s' % ((r[0],) + r[1] + (v.judge(r[1]),)))(v.bootstrap_ratio([100, 104, 102], [101, 99, 100]))")
if [ "$out" = "1.02|0.9901|1.0505|tie" ]; then
    pass "verdict: 3 runs a side: the interval is every pairing [min/max, max/min] = [0.9901, 1.0505], tie"
else
    bad "verdict on 3 runs a side: '$out', expected ratio 1.02 [0.9901, 1.0505] tie"
fi
out=$(V "(lambda c: '%s|%s|%s' % (c['verdict'], c['ci'], v.verdict_text(c)))(v.compare(row([100], [50])))")
if [ "$out" = "n/a|None|n/a (need ≥ 2 runs)" ]; then
    pass "verdict: one run a side: no interval, $(echo "$out" | cut -d'|' -f3)"
else
    bad "verdict on one run a side: '$out', expected n/a (need ≥ 2 runs), no interval"
fi
out=$(V "(lambda c: '%.3f %.4f %.4f %s %s' % (c['ratio'], c['ci'][0], c['ci'][1], c['verdict'], c['orientation'].replace(' ', '')))(v.compare(row([1000,1010,990,1000,1020], [2000,2020,1980,2000,2040], 'rss_kib'), 'rss'))")
read -r ratio lo hi word orient <<<"$out"
if awk -v r="$ratio" -v l="$lo" 'BEGIN{exit !(r > 1.99 && r < 2.01 && l > 1)}' && [ "$word" = ahead ]; then
    pass "verdict: hakmem with half the peer's peak RSS: $orient $ratio [$lo, $hi], ahead"
else
    bad "verdict on lower hakmem RSS: '$out', expected peer/hakmem ~2, ahead"
fi
# memory over time (issue 61): a row's own RSS figure (idle_end: RSS at the
# end of bench_idle's idle phase) is judged like peak RSS, lower is better; a
# run's `rss T_MS KIB` samples and its figure are read from its output
out=$(V "(lambda c: '%s %s' % (c['verdict'], c['orientation'].replace(' ', '')))(v.row_verdicts({l: dict(d, idle_end_kib=d['rss_kib'], runs=[dict(r, idle_end_kib=r['rss_kib']) for r in d['runs']]) for l, d in row([1000,1010,990,1000,1020], [3000,3020,2980,3000,3040], 'rss_kib').items()}, metrics=('idle_end',))['idle_end'])")
ser=$("$PY" -c 'import sys; sys.path.insert(0, "bench"); import benches as b
out = "rss 0 500 freed\nrss 100 400 idle\nidle_end_kib 400\n" + "".join("rss %d 1\n" % t for t in range(1000))
s = b.rss_series(out); print(s[:2], len(s), s[-1], b.MEMORY_METRICS["idle_end"][1].search(out).group(1))' 2>&1)
if [ "$out" = "ahead peer/hakmem" ] && [ "$ser" = "[[0, 500], [1, 1]] 300 [999, 1] 400" ]; then
    pass "memory over time: idle_end RSS a third of the peer's is ahead (peer/hakmem); rss samples thinned to 300"
else
    bad "memory over time: verdict '$out' (expected ahead peer/hakmem), samples '$ser'"
fi
out=$(V "(lambda c: '%s %s' % (c['verdict'], c['ci']))(v.compare(row($HI, $LO, hs='failed')))")
if [ "$out" = "FAIL None" ]; then
    pass "verdict: a FAIL hakmem row stays FAIL, with no interval"
else
    bad "verdict on a FAIL hakmem row: '$out', expected FAIL with no interval"
fi
out=$(V "v.best_peer({'hakmem': {'status':'ok','median':9e9,'rss_kib':1}, 'hakmem-static': {'status':'ok','median':8e9,'rss_kib':1}, 'glibc': {'status':'ok','median':5,'rss_kib':300}, 'mimalloc': {'status':'ok','median':7,'rss_kib':200}, 'jemalloc': {'status':'failed','verdict':'FAIL'}}, 'throughput') + ',' + v.best_peer({'glibc': {'status':'ok','median':5,'rss_kib':300}, 'mimalloc': {'status':'ok','median':7,'rss_kib':200}, 'tcmalloc': {'status':'ok','median':1,'rss_kib':100}, 'hakmem': {'status':'ok','median':1,'rss_kib':1}}, 'rss')")
if [ "$out" = "mimalloc,tcmalloc" ]; then
    pass "verdict: best peer skips hakmem variants and FAIL rows (throughput mimalloc, RSS tcmalloc)"
else
    bad "best_peer: '$out', expected mimalloc,tcmalloc"
fi
# the round's rules (verdict.dominance, verdict.lowmem_rss) on synthetic rows:
# R(label=(throughputs, peak RSSs), ...) builds a row of PASS results
R='(lambda **k: {l: {"status": "ok", "verdict": "PASS", "median": sorted(t)[len(t)//2], "rss_kib": sorted(r)[len(r)//2], "runs": [{"status": "ok", "throughput": a, "rss_kib": b} for a, b in zip(t, r)]} for l, (t, r) in k.items()})'
H='([100,101,99,100,102], [1000,1001,999,1000,1002])'
out=$(V "(lambda d: '%s|%s' % (d['verdict'], ','.join(d['by'])))(v.dominance($R(hakmem=$H, tcmalloc=([150,151,149,150,152], [800,801,799,800,802]), glibc=([50,51,49,50,52], [500,501,499,500,502]))))")
if [ "$out" = "dominated|tcmalloc" ]; then
    pass "round rules: a peer faster and leaner beyond noise dominates (tcmalloc); one leaner but slower does not (glibc)"
else
    bad "dominance: '$out', expected dominated|tcmalloc"
fi
out=$(V "(lambda d: '%s|%s' % (d['verdict'], ','.join(d['by'])))(v.dominance($R(hakmem=$H, tcmalloc=([150,151,149,150,152], [990,1030,960,1010,1000]))))")
if [ "$out" = "not dominated|" ]; then
    pass "round rules: faster but leaner only within noise is not dominance"
else
    bad "dominance within noise: '$out', expected 'not dominated|'"
fi
out=$(V "(lambda a, b: '%s %.2f|%s %.2f' % (a['verdict'], a['ratio'], b['verdict'], b['ratio']))(v.lowmem_rss($R(hakmem=$H, glibc=([50]*5, [500,501,499,500,502]), **{'hakmem:lowmem': ([80]*5, [530,531,529,530,532])})), v.lowmem_rss($R(hakmem=$H, glibc=([50]*5, [500,501,499,500,502]), **{'hakmem:lowmem': ([80]*5, [700,701,699,700,702])})))")
if [ "$out" = "within 1.06|over 1.40" ]; then
    pass "round rules: lowmem at 1.06x the leanest peer is within 1.10, at 1.40x over"
else
    bad "lowmem_rss: '$out', expected 'within 1.06|over 1.40'"
fi
out=$(V "v.lowmem_rss($R(hakmem=$H, glibc=$H))['verdict']")
if [ "$out" = "n/a" ]; then
    pass "round rules: no lowmem runs, no lowmem verdict (n/a)"
else
    bad "lowmem_rss without the variant: '$out', expected n/a"
fi

# --- 12. a real run writes verdicts into its JSON, the report and the log
H --allocators glibc,hakmem --only tiny --runs 3 --tag t12 >"$TMP/t12.log" 2>&1
rc=$?
vt=$(json "[b for b in r['benchmarks'] if b['name']=='tiny'][0]['verdicts']['throughput']" "$TMP/t12.json" 2>/dev/null)
vw=$(json "[b for b in r['benchmarks'] if b['name']=='tiny'][0]['verdicts']['throughput']['verdict']" "$TMP/t12.json" 2>/dev/null)
vp=$(json "[b for b in r['benchmarks'] if b['name']=='tiny'][0]['verdicts']['throughput']['peer']" "$TMP/t12.json" 2>/dev/null)
vr=$(json "[b for b in r['benchmarks'] if b['name']=='tiny'][0]['verdicts']['rss']['verdict']" "$TMP/t12.json" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$vp" = glibc ] && [[ "$vw" =~ ^(ahead|tie|behind)$ ]] && [[ "$vr" =~ ^(ahead|tie|behind)$ ]] \
   && grep -q "^### Verdicts against the best peer" "$TMP/t12.md" && grep -q "^| tiny | glibc | " "$TMP/t12.md" \
   && grep -q "^verdicts against the best peer" "$TMP/t12.log"; then
    pass "a 3-run glibc,hakmem harness run writes verdicts: throughput $vw vs $vp, RSS $vr (JSON, report, log)"
else
    bad "harness run without verdicts (exit $rc): $vt"; tail -20 "$TMP/t12.log"
fi
# the preload is the library's own file, not a symlink to it (allocators.py,
# real_path): the programs' realpath() of a symlink ran libc code that no
# other call of a small row runs, 64 KiB of bench_tiny's peak RSS
pl=$(json "[a['how'] for a in r['allocators'] if a['label']=='hakmem'][0]" "$TMP/t12.json" 2>/dev/null \
     | sed -n 's/^LD_PRELOAD=\([^ ]*\).*/\1/p')
if [ -n "$pl" ] && [ -f "$pl" ] && [ ! -L "$pl" ] && [ -L "$BUILD/libhakmem.so" ]; then
    pass "hakmem is preloaded by its file's own path ($pl), not by the symlink $BUILD/libhakmem.so"
elif [ -n "$pl" ] && [ -f "$pl" ] && [ ! -L "$pl" ]; then
    pass "hakmem is preloaded by its file's own path ($pl)"
else
    bad "the harness preloads hakmem as '$pl': a symlink (or nothing)"
fi
cp "$TMP/t12.json" "$TMP/t12r.json"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); [b.pop("verdicts",None) for b in r["benchmarks"]]; r.pop("verdict_counts",None); json.dump(r,open(sys.argv[1],"w"))' "$TMP/t12r.json"
"$PY" bench/harness.py --render "$TMP/t12r.json" >/dev/null 2>&1
if grep -q "^| tiny | glibc | " "$TMP/t12r.md"; then
    pass "--render of a results file without verdicts adds the verdict table"
else
    bad "--render did not add verdicts to an old results file"
fi

# --- 13. two hakmem builds in one interleaved run (--build NAME=DIR): both
# labels, every run proved to be served by its own build's library, and a
# "Builds compared" table (JSON, report, log), the builds measured though
# --allocators names only glibc; B is a copy of the library in
# a directory of its own (named builds need only DIR/libhakmem.so)
if [ -e "$BUILD/libhakmem.so" ]; then
    mkdir -p "$TMP/buildB" && cp -L "$BUILD/libhakmem.so" "$TMP/buildB/libhakmem.so"
    H --runs 2 --build A="$BUILD" --build B="$TMP/buildB" --allocators glibc --only tiny \
      --tag t13 >"$TMP/t13.log" 2>&1
    rc=$?
    pa=$(row tiny hakmem:A "['runs'][0]['printed_allocator'][1]" "$TMP/t13.json" 2>/dev/null)
    pb=$(row tiny hakmem:B "['runs'][1]['printed_allocator'][1]" "$TMP/t13.json" 2>/dev/null)
    nok=$(json "sum(b['results'][l]['runs_ok'] for b in r['benchmarks'] for l in ('hakmem:A','hakmem:B'))" "$TMP/t13.json" 2>/dev/null)
    bc=$(json "(lambda c: c['a']+' '+c['b']+' '+c['throughput']['verdict'].replace(' ','_')+' '+c['rss']['verdict'].replace(' ','_'))(r['benchmarks'][0]['builds_compared'][0])" "$TMP/t13.json" 2>/dev/null)
    if [ $rc -eq 0 ] && [ "$nok" = 4 ] && [ "$(realpath "$pa")" = "$(realpath "$BUILD/libhakmem.so")" ] \
       && [ "$(realpath "$pb")" = "$(realpath "$TMP/buildB/libhakmem.so")" ] \
       && [[ "$bc" =~ ^hakmem:A\ hakmem:B\ (faster|slower|within)_.*noise\ (larger|smaller|within)_.*noise$ ]] \
       && grep -q "^### Builds compared: each build ÷ hakmem:A" "$TMP/t13.md" && grep -q "^| tiny | hakmem:B | " "$TMP/t13.md" \
       && grep -q "^builds compared (95% bootstrap CI): hakmem:B vs hakmem:A" "$TMP/t13.log"; then
        pass "--build A=DIR --build B=COPY: 2+2 runs, each proved by its own library; builds compared: ${bc//_/ }"
    else
        bad "two builds in one run (exit $rc, runs ok $nok, A '$pa', B '$pb', compared '$bc')"; tail -20 "$TMP/t13.log"
    fi
    # hakmem:B really served by A's library is rejected (the same file name,
    # another file)
    H --build A="$BUILD" --build B="$TMP/buildB" --allocators hakmem:A,hakmem:B --only tiny \
      --pretend hakmem:B="$BUILD/libhakmem.so" --tag t13b >"$TMP/t13b.log" 2>&1
    rc=$?
    st=$(result tiny hakmem:B "$TMP/t13b.json"); why=$(reason tiny hakmem:B "$TMP/t13b.json")
    if [ $rc -ne 0 ] && [ "$st" = rejected ] && [[ "$why" == *"$TMP/buildB/libhakmem.so"* ]] \
       && [ "$(result tiny hakmem:A "$TMP/t13b.json")" = ok ]; then
        pass "a 'hakmem:B' run served by build A's library is rejected: $why"
    else
        bad "a run of the wrong build was not caught (exit $rc, status $st, '$why')"; tail -20 "$TMP/t13b.log"
    fi
    "$PY" bench/harness.py --build A="$TMP/nowhere" --only tiny --out "$TMP" >"$TMP/t13c.log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q "nowhere/libhakmem.so not found" "$TMP/t13c.log"; then
        pass "--build NAME=DIR without DIR/libhakmem.so is a usage error (exit 2)"
    else
        bad "--build NAME=missing: exit $rc: $(tail -n 1 "$TMP/t13c.log")"
    fi
else
    echo "skip - build/libhakmem.so not built: two-build check"
fi

# --- 14. a real-program row skipped for a missing tool names the Debian
# package to install (JSON and report): redis and cc with an empty PATH
REALPY=$("$PY" -c 'import sys; print(sys.executable)')
mkdir -p "$TMP/nobin"
env PATH="$TMP/nobin" "$REALPY" bench/harness.py --quick --runs 1 --no-count --build "$BUILD" --out "$TMP" \
    --allocators glibc --only redis,cc --tag t14 >"$TMP/t14.log" 2>&1
rc=$?
pr=$(json "[s.get('install') for s in r['skipped'] if s.get('bench')=='redis']" "$TMP/t14.json" 2>/dev/null)
pc=$(json "[s.get('packages') for s in r['skipped'] if s.get('bench')=='cc']" "$TMP/t14.json" 2>/dev/null)
if [ "$pr" = "['apt-get install -y redis-server redis-tools']" ] && [ "$pc" = "[['gcc']]" ] \
   && grep -q "^- \*\*redis\*\*: .*install the Debian packages redis-server and redis-tools" "$TMP/t14.md" \
   && grep -q "^- \*\*cc\*\*: .*install the Debian package gcc" "$TMP/t14.md" \
   && grep -q "^SKIP redis: .*redis-server" "$TMP/t14.log"; then
    pass "skipped rows name the package: redis -> $pr, cc -> $pc (JSON, report, log)"
else
    bad "skip reasons without the package (exit $rc): redis '$pr', cc '$pc'"; tail -5 "$TMP/t14.log"
fi

# --- 15. a progress line with the time left: every run's log line starts
# [N/TOTAL runs, ELAPSED elapsed, ~LEFT left]; the estimate (a fake clock):
# 5 runs of 2 s fill row 1, then 1 run of 4 s in row 2 (5 runs): 4 left at
# that row's 4 s a run = 16 s
n=$(grep -cE '^\[ ?[0-9]+/[0-9]+ runs, [0-9hms]+ elapsed, ~[0-9hms?]+ left\] ' "$TMP/t13.log")
est=$("$PY" -c '
import sys; sys.path.insert(0, "bench"); import harness as h
t = [0.0]; p = h.Progress(10, clock=lambda: t[0]); p.start_row(5)
for _ in range(5):
    t[0] += 2; p.step()
p.start_row(5); t[0] += 4; print(p.step(), h.fmt_dur(3725), h.fmt_dur(252))')
if [ "$n" = 6 ] && [ "$est" = "[ 6/10 runs, 14s elapsed, ~16s left] 1h02m 4m12s" ]; then
    pass "progress: 6 of 6 run lines carry [N/TOTAL runs, elapsed, ~left]; estimate $est"
else
    bad "progress lines: $n of 6 in the log; estimate '$est'"; grep runs, "$TMP/t13.log" | head -3
fi

# --- 16. the tables the docs include: a run writes STEM-table.md (compact
# verdicts table) and STEM-verdicts.svg beside its results, --render rewrites
# them, and --publish puts the table between the markers of markdown files
# (temporary copies here, never the real docs) and nothing outside them
if grep -q "^| benchmark | fastest peer | hakmem ÷ fastest \[95% CI\] | verdict | leanest peer | peak RSS: leanest ÷ hakmem \[95% CI\] | verdict |" \
        "$TMP/t12-table.md" 2>/dev/null && grep -q "^| tiny | " "$TMP/t12-table.md" \
   && grep -q "<svg" "$TMP/t12-verdicts.svg" && grep -q "stroke-width=\"2\"" "$TMP/t12-verdicts.svg" \
   && "$PY" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$TMP/t12-verdicts.svg" \
   && [ -e "$TMP/t12r-table.md" ] && [ -e "$TMP/t12r-verdicts.svg" ]; then
    pass "a run writes t12-table.md and t12-verdicts.svg (well-formed, with error bars); --render too"
else
    bad "no compact table / verdicts chart beside the results"; ls "$TMP" | grep t12
fi
# every peer is named with its version: glibc's from the machine (the run
# above is glibc,hakmem), a preloaded peer's from its Debian package, the
# upstream part of it; a peer whose version was not recorded is named alone
gv=$(json "r['machine'].get('glibc')" "$TMP/t12.json")
if [ -n "$gv" ] && [ "$gv" != None ] && grep -q "^| tiny | glibc $gv | " "$TMP/t12-table.md" \
   && grep -q "Peers: glibc $gv (the system's malloc)\." "$TMP/t12-table.md" \
   && ! grep -q "÷ mimalloc" "$TMP/t12-table.md"; then
    pass "the compact table names its peer with its version (glibc $gv) and has no bare ÷ mimalloc column"
else
    bad "the compact table does not name glibc $gv in its peer column and caption"; head -5 "$TMP/t12-table.md"
fi
out=$("$PY" -c '
import sys; sys.path.insert(0, "bench"); import render as R
res = {"machine": {"glibc": "2.36", "packages": {"libmimalloc2.0": "2.0.9+ds-2", "libtcmalloc-minimal4": "2.10-1"}},
       "allocators": [{"label": l} for l in ("hakmem", "glibc", "mimalloc", "jemalloc", "tcmalloc")]}
print("|".join([R.upstream_version("5:7.0.15-1~deb12u10")] + [R.peer_name(res, l) for l in ("glibc", "mimalloc", "jemalloc", "tcmalloc")]))
print(R.peers_line(res))' 2>&1)
want='7.0.15|glibc 2.36|mimalloc 2.0.9|jemalloc|tcmalloc (gperftools 2.10)
Peers: glibc 2.36 (the system'"'"'s malloc); mimalloc 2.0.9 (Debian'"'"'s libmimalloc2.0 2.0.9+ds-2, preloaded); jemalloc (version not recorded); tcmalloc, gperftools 2.10 (Debian'"'"'s libtcmalloc-minimal4 2.10-1, preloaded).'
if [ "$out" = "$want" ]; then
    pass "peer versions from Debian versions: $(echo "$out" | head -1)"
else
    bad "peer versions: got '$out', expected '$want'"
fi
mkdir -p "$TMP/pub/docs"
printf '# Doc one\r\nbefore\r\n<!-- bench-table:begin -->\r\nold table\r\n<!-- bench-table:end -->\r\nafter, kept\r\n' >"$TMP/pub/docs/ONE.md"
printf 'intro\n\n<!-- bench-table:begin -->\n<!-- bench-table:end -->\n\n## more\ntext\n' >"$TMP/pub/TWO.md"
printf 'no markers here\n' >"$TMP/pub/THREE.md"
cp "$TMP/pub/docs/ONE.md" "$TMP/one.orig"; cp "$TMP/pub/TWO.md" "$TMP/two.orig"
PUB() { "$PY" bench/harness.py --publish "$TMP/t12.json" --publish-svg "$TMP/pub/docs/bench-latest.svg" "$@"; }
PUB --publish-to "$TMP/pub/docs/ONE.md" --publish-to "$TMP/pub/TWO.md" >"$TMP/t16.log" 2>&1
rc=$?
# outside the markers: byte for byte the same; inside: the table and the link
outside() { "$PY" -c '
import sys
t = open(sys.argv[1], newline="").read()
b, e = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
print(repr(t[:t.index(b) + len(b)] + t[t.index(e):]))' "$1"; }
inside() { "$PY" -c '
import sys
t = open(sys.argv[1], newline="").read()
print(t[t.index("<!-- bench-table:begin -->"):t.index("<!-- bench-table:end -->")])' "$1"; }
in1=$(inside "$TMP/pub/docs/ONE.md" 2>/dev/null); in2=$(inside "$TMP/pub/TWO.md" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$(outside "$TMP/pub/docs/ONE.md")" = "$(outside "$TMP/one.orig")" ] \
   && [ "$(outside "$TMP/pub/TWO.md")" = "$(outside "$TMP/two.orig")" ] \
   && grep -q "^| tiny | " <<<"$in2" && ! grep -q "old table" <<<"$in1" \
   && grep -q "](bench-latest.svg)" <<<"$in1" \
   && grep -q "](docs/bench-latest.svg)" <<<"$in2" && grep -q "<svg" "$TMP/pub/docs/bench-latest.svg" \
   && [ "$(grep -c $'\r$' "$TMP/pub/docs/ONE.md")" = "$(wc -l <"$TMP/pub/docs/ONE.md")" ]; then
    pass "--publish rewrites only the text between the markers (2 files, CRLF kept), links the chart"
else
    bad "--publish (exit $rc): $(cat "$TMP/t16.log")"; cat "$TMP/pub/TWO.md"
fi
printf 'intro\n<!-- bench-summary:begin -->\nold\n<!-- bench-summary:end -->\nkept\n' >"$TMP/pub/FOUR.md"
PUB --publish-to "$TMP/pub/FOUR.md" >"$TMP/t16s.log" 2>&1
rc=$?
in4=$("$PY" -c '
import sys
t = open(sys.argv[1]).read()
print(t[t.index("<!-- bench-summary:begin -->"):t.index("<!-- bench-summary:end -->")])' "$TMP/pub/FOUR.md" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$(grep -c '^- \*\*' <<<"$in4")" = 5 ] && grep -q "^- \*\*Throughput\*\*, .* hakmem is ahead on [0-9]*, tied on [0-9]*, behind on [0-9]*" <<<"$in4" \
   && grep -q "^- \*\*The run\*\*: .*peers glibc [0-9]" <<<"$in4" && ! grep -q "old" <<<"$in4" \
   && [ "$(head -1 "$TMP/pub/FOUR.md")" = intro ] && [ "$(tail -1 "$TMP/pub/FOUR.md")" = kept ]; then
    pass "--publish writes the five-line summary between the bench-summary markers"
else
    bad "--publish summary (exit $rc): $(cat "$TMP/t16s.log")"; cat "$TMP/pub/FOUR.md"
fi
cp "$TMP/pub/TWO.md" "$TMP/two.once"
PUB --publish-to "$TMP/pub/TWO.md" >/dev/null 2>&1
if cmp -s "$TMP/pub/TWO.md" "$TMP/two.once"; then
    pass "--publish twice gives the same file"
else
    bad "--publish is not idempotent"
fi
cp "$TMP/two.orig" "$TMP/pub/TWO.md"
PUB --publish-to "$TMP/pub/TWO.md" --publish-to "$TMP/pub/THREE.md" >"$TMP/t16b.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "THREE.md: needs one <!-- bench-table:begin -->" "$TMP/t16b.log" \
   && cmp -s "$TMP/pub/TWO.md" "$TMP/two.orig" && [ "$(cat "$TMP/pub/THREE.md")" = "no markers here" ]; then
    pass "--publish to a file without the markers fails (exit 2) and writes nothing: $(grep -o 'THREE.md: .*' "$TMP/t16b.log" | head -c 90)"
else
    bad "--publish without markers: exit $rc: $(cat "$TMP/t16b.log")"
fi
# the real docs keep exactly one pair of markers each, the table's in
# docs/BENCHMARKS.md and the summary's in README.md (a doc edit that quotes
# a marker would make the next --publish fail): publish into copies of them
mkdir -p "$TMP/pubreal/docs"
cp docs/BENCHMARKS.md "$TMP/pubreal/docs/" && cp README.md "$TMP/pubreal/"
if PUB --publish-to "$TMP/pubreal/docs/BENCHMARKS.md" --publish-to "$TMP/pubreal/README.md" \
       --publish-svg "$TMP/pubreal/docs/bench-latest.svg" >"$TMP/t16c.log" 2>&1 \
   && grep -q "BENCHMARKS.md (table)$" "$TMP/t16c.log" && grep -q "README.md (summary)$" "$TMP/t16c.log"; then
    pass "--publish into copies of docs/BENCHMARKS.md (the table) and README.md (the summary) works"
else
    bad "the real docs cannot be published into: $(cat "$TMP/t16c.log")"
fi

# --- 17. bench/scaling.sh (the device scaling script; never run in CI):
# pack, unpack, a tiny run (mid, 1 and 2 threads, glibc and hakmem, 2 runs)
# writes runs.csv, scaling.csv/.json/.svg with every run accepted; a library
# swapped in the pack is refused; a "hakmem" that is not (libm preloaded, so
# malloc is glibc's) is rejected and its cells are FAIL, and so is such a
# "hakmem:NAME"; a second build packed with EXTRA_HAKMEM runs as hakmem:two
if [ -e "$BUILD/libhakmem.so" ]; then
    mkdir -p "$TMP/sc" && (cd "$TMP/sc" && EXTRA_HAKMEM="two=$BUILD/libhakmem.so" bash "$ROOT/bench/scaling.sh" pack "$BUILD" pack.tar.gz >pack.log 2>&1 \
        && tar xzf pack.tar.gz)
    SC() { env THREADS="1 2" RUNS=2 BENCHES=mid MID_ITERS=100000 ALLOCATORS="glibc hakmem" "$@"; }
    SC bash "$TMP/sc/hakmem-scaling/scaling.sh" run "$TMP/sc/hakmem-scaling" "$TMP/sc/out" >"$TMP/sc/run.log" 2>&1
    rc=$?
    cells=$(json "sorted((x['threads'], x['allocator'], x['verdict'], x['runs_ok']) for x in r['rows'])" "$TMP/sc/out/scaling.json" 2>/dev/null)
    if [ $rc -eq 0 ] && [ "$cells" = "[(1, 'glibc', 'PASS', 2), (1, 'hakmem', 'PASS', 2), (2, 'glibc', 'PASS', 2), (2, 'hakmem', 'PASS', 2)]" ] \
       && [ "$(wc -l <"$TMP/sc/out/runs.csv")" = 9 ] && grep -q "<polyline" "$TMP/sc/out/scaling.svg" \
       && "$PY" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$TMP/sc/out/scaling.svg" \
       && grep -q "^\[8/8 runs, .* left\] mid " "$TMP/sc/run.log"; then
        pass "scaling.sh pack + run (THREADS=\"1 2\", mid, glibc/hakmem): 8 runs accepted, CSV, JSON and SVG written"
    else
        bad "scaling.sh run (exit $rc): cells $cells"; tail -5 "$TMP/sc/run.log"; cat "$TMP/sc/pack.log"
    fi
    SC THREADS=1 RUNS=1 ALLOCATORS="hakmem:two" bash "$TMP/sc/hakmem-scaling/scaling.sh" run "$TMP/sc/hakmem-scaling" "$TMP/sc/out4" >"$TMP/sc/run4.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^mid,1,hakmem:two,1,ok,.*,hakmem .*/libs/libhakmem-two.so," "$TMP/sc/out4/runs.csv" \
       && grep -q "^hakmem:two: " "$TMP/sc/hakmem-scaling/MANIFEST"; then
        pass "scaling.sh: a build packed with EXTRA_HAKMEM runs as hakmem:two, proven by its own library path"
    else
        bad "scaling.sh hakmem:two (exit $rc)"; tail -3 "$TMP/sc/run4.log"; cat "$TMP/sc/out4/runs.csv"
    fi
    cp -r "$TMP/sc/hakmem-scaling" "$TMP/sc/swapped" && cp -L "$(ls /lib/x86_64-linux-gnu/libm.so.6)" "$TMP/sc/swapped/libs/libhakmem.so"
    SC bash "$TMP/sc/swapped/scaling.sh" run "$TMP/sc/swapped" "$TMP/sc/out2" >"$TMP/sc/run2.log" 2>&1
    rc=$?
    mkdir -p "$TMP/sc/notbuild" && ln -s "$BUILD/bench" "$TMP/sc/notbuild/bench" \
        && cp -L /lib/x86_64-linux-gnu/libm.so.6 "$TMP/sc/notbuild/libhakmem.so" \
        && cp -L /lib/x86_64-linux-gnu/libm.so.6 "$TMP/sc/notbuild/libhakmem-fake.so"
    SC ALLOCATORS="glibc hakmem hakmem:fake" bash bench/scaling.sh run "$TMP/sc/notbuild" "$TMP/sc/out3" >"$TMP/sc/run3.log" 2>&1
    rc3=$?
    v=$(json "sorted(set((x['allocator'], x['verdict']) for x in r['rows']))" "$TMP/sc/out3/scaling.json" 2>/dev/null)
    if [ $rc -eq 2 ] && grep -q "does not match its SHA256SUMS" "$TMP/sc/run2.log" && [ $rc3 -eq 1 ] \
       && [ "$v" = "[('glibc', 'PASS'), ('hakmem', 'FAIL'), ('hakmem:fake', 'FAIL')]" ] && grep -q "REJECTED: printed allocator glibc" "$TMP/sc/run3.log"; then
        pass "scaling.sh: a swapped library in the pack is refused (exit 2); a 'hakmem' or 'hakmem:fake' served by glibc is REJECTED, its cells FAIL (exit 1)"
    else
        bad "scaling.sh mislabel checks: swapped exit $rc, mislabelled exit $rc3, cells $v"; tail -3 "$TMP/sc/run2.log" "$TMP/sc/run3.log"
    fi
else
    echo "skip - build/libhakmem.so not built: scaling.sh check"
fi

if [ $fails -eq 0 ]; then
    echo "bench selftest: all checks passed"
    exit 0
fi
echo "bench selftest: $fails check(s) FAILED"
exit 1
