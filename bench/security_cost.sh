#!/usr/bin/env bash
# bench/security_cost.sh [BUILD_DIR] [RUNS]
# Usage: bench/security_cost.sh [BUILD_DIR] [RUNS]
#
# What the secure build costs (docs/SECURITY.md, "Cost"). Runs the benchmark
# programs of BUILD_DIR/bench (default: build) under LD_PRELOAD of
# BUILD_DIR/libhakmem.so and BUILD_DIR/libhakmem-secure.so, interleaved
# (default, secure, default, secure, ...; RUNS of each, default 7), checks that
# every run names the library it was given ("allocator: hakmem (PATH)"),
# and prints per benchmark the median throughput of each build, the ratio
# secure/default and the median peak RSS; then the geometric mean of the
# ratios. With callgrind installed it also counts the instructions of a small
# malloc/free loop (16 bytes, 100 mallocs then 100 frees, 2000 rounds) under
# each library: the stable number on a noisy machine; and of a memcpy loop
# (16 B and 4 KiB into a heap block, a large one and onto the stack:
# measure copy).
# COST_REF=DIR (bench/mimalloc_secure.sh DIR): the reference, mimalloc built
# plain and in its secure mode, runs interleaved with them, and its
# secure/plain ratio is printed beside hakmem's.
# COST_SCUDO=PATH (libclang_rt.scudo_standalone-x86_64.so; COST_SCUDO=1: the
# one tests/security/peer.sh --find-scudo finds, Debian libclang-rt-14-dev):
# scudo, Android's hardened allocator, runs interleaved with them too (its
# runs must print "allocator: scudo (PATH)", the name bench_common.h gives
# the library that serves malloc), and its median ops/s and its ratio to the
# default build are printed beside hakmem's, with a geomean of that ratio.
# COST_MEASURES="canary shuffle" (or all): the library of each hardening
# measure alone (BUILD_DIR/measures/libhakmem-NAME.so, src/base/measures.h) runs
# interleaved with them too, and a second table gives each one's ratio to
# the default build, with its callgrind rows: the cost of one measure.
# COST_EXTRA="NAME=PATH ..." : more hakmem libraries in that table, by name
# (a build of a subset: cmake -DHAKMEM_MEASURES=canary,guard,... gives a
# libhakmem.so with those measures only, the secure build less one).
# COST_ROWS="app tiny": only these benchmark rows. COST_CALLGRIND=0: no
# instruction counts.
# Not part of the test suite (it takes a few minutes).
set -u
case ${1:-} in
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "security_cost.sh: unknown option '$1'" >&2
      sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
B=$(cd "${1:-$ROOT/build}" && pwd) || exit 2
RUNS=${2:-7}
LIBS=(default "$B/libhakmem.so" secure "$B/libhakmem-secure.so")
REF=${COST_REF:-}
if [ -n "$REF" ]; then
  [ -f "$REF/libmimalloc.so" ] && [ -f "$REF/libmimalloc-secure.so" ] ||
    { echo "COST_REF=$REF: no libmimalloc.so / libmimalloc-secure.so (bench/mimalloc_secure.sh)" >&2; exit 2; }
  LIBS+=(mi "$REF/libmimalloc.so" mi_secure "$REF/libmimalloc-secure.so")
fi
[ -f "$B/libhakmem-secure.so" ] || { echo "$B/libhakmem-secure.so not built: run make" >&2; exit 2; }
SCUDO=${COST_SCUDO:-}
if [ "$SCUDO" = 1 ]; then
  SCUDO=$(bash "$ROOT/tests/security/peer.sh" --find-scudo) ||
    { echo "COST_SCUDO=1: no libclang_rt.scudo_standalone-x86_64.so found (Debian: libclang-rt-14-dev)" >&2; exit 2; }
fi
if [ -n "$SCUDO" ]; then
  [ -f "$SCUDO" ] || { echo "COST_SCUDO=$SCUDO: no such file" >&2; exit 2; }
  LIBS+=(scudo "$SCUDO")
fi
MEASURES=${COST_MEASURES:-}
[ "$MEASURES" = all ] &&
  MEASURES=$(grep -oE 'X\([a-z]+, HK_M_' "$ROOT/src/base/measures.h" | sed -E 's/X\(([a-z]+), HK_M_/\1/' | tr '\n' ' ')
for m in $MEASURES; do
  [ -f "$B/measures/libhakmem-$m.so" ] || { echo "$B/measures/libhakmem-$m.so not built: make measures" >&2; exit 2; }
  LIBS+=("m_$m" "$B/measures/libhakmem-$m.so")
done
for e in ${COST_EXTRA:-}; do
  [ -f "${e#*=}" ] || { echo "COST_EXTRA: ${e#*=}: no such file" >&2; exit 2; }
  LIBS+=("x_${e%%=*}" "${e#*=}")
  MEASURES="$MEASURES x_${e%%=*}"
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-cost.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
unset LD_PRELOAD HAKMEM_FREE_FILL HAKMEM_STATS HAKMEM_VERBOSE

# name | program and arguments
BENCHES=(
  "tiny|bench_tiny 500000 16 100"
  "random_mixed|bench_random_mixed 2000000 400 16 1024 42"
  "mid_1t|bench_mid 1 2000000"
  "larson|larson 3 8 1000 5000 100 4141 2"
  "xthread|bench_xthread 1 2000000 16 512 7 64"
  "large|bench_large 5000 8 64k 32m 3 0"
  "app|bench_app 2 200000 11"
  "false_sharing|bench_false_sharing 4 10 1000000 8"
)

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), $RUNS runs each, interleaved"
bad=0
for r in $(seq 1 "$RUNS"); do
  for entry in "${BENCHES[@]}"; do
    name=${entry%%|*}
    cmd=${entry#*|}
    if [ -n "${COST_ROWS:-}" ] && [[ " $COST_ROWS " != *" $name "* ]]; then continue; fi
    for ((i = 0; i < ${#LIBS[@]}; i += 2)); do
      build=${LIBS[i]} lib=${LIBS[i + 1]}
      want=hakmem
      case $build in mi*) want=mimalloc ;; scudo) want=scudo ;; esac
      out=$WORK/$name.$build.$r
      # shellcheck disable=SC2086
      env LD_PRELOAD="$lib" "$B/bench/"$cmd >"$out" 2>&1
      got=$(sed -n 's/^allocator: \([^ ]*\) (\(.*\))$/\1 \2/p' "$out" | head -n 1)
      if [ "${got%% *}" != "$want" ] || [ "$(readlink -f "${got#* }")" != "$(readlink -f "$lib")" ]; then
        echo "REJECTED $name/$build run $r: allocator line '$got', wanted $lib" >&2
        bad=1
        rm -f "$out"
      fi
    done
  done
done

python3 - "$WORK" "$RUNS" "$REF" "$SCUDO" $MEASURES <<'EOF'
import glob, math, os, re, statistics, sys
work, runs, ref, scudo, measures = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def values(name, build, key):
    v = []
    for f in sorted(glob.glob(os.path.join(work, "%s.%s.*" % (name, build)))):
        m = re.search(r"^%s = ([0-9.]+)" % key, open(f).read(), re.M)
        if m: v.append(float(m.group(1)))
    return v
names = []
for f in glob.glob(os.path.join(work, "*.default.*")):
    n = os.path.basename(f).split(".")[0]
    if n not in names: names.append(n)
order = ["tiny", "random_mixed", "mid_1t", "larson", "xthread", "large", "app", "false_sharing"]
names.sort(key=lambda n: order.index(n) if n in order else 99)
hdr = [("benchmark", ""), ("default ops/s", "(median)"), ("secure ops/s", "(median)"), ("secure/", "default"),
       ("spread", "default"), ("spread", "secure"), ("RSS KiB", "default"), ("RSS KiB", "secure")]
if ref: hdr += [("mimalloc", "secure/plain"), ("hakmem sec/", "mi secure")]
if scudo: hdr += [("scudo ops/s", "(median)"), ("scudo/", "default"), ("RSS KiB", "scudo")]
fmt = "%-14s %16s %16s %9s %8s %8s %11s %11s" + (" %13s %12s" if ref else "") + (" %16s %8s %11s" if scudo else "")
for k in (0, 1): print(fmt % tuple(h[k] for h in hdr))
ratios, refs, scudos = {}, {}, {}
spread = lambda v, m: "%.0f%%" % (100 * (max(v) - min(v)) / m)
for n in names:
    d, s = values(n, "default", "Throughput"), values(n, "secure", "Throughput")
    if not d or not s: continue
    md, ms = statistics.median(d), statistics.median(s)
    rd, rs = values(n, "default", "Peak RSS"), values(n, "secure", "Peak RSS")
    ratios[n] = ms / md
    row = [n, "%.0f" % md, "%.0f" % ms, "%.3f" % (ms / md), spread(d, md), spread(s, ms),
           "%.0f" % (statistics.median(rd) if rd else 0), "%.0f" % (statistics.median(rs) if rs else 0)]
    if ref:
        mp, mq = values(n, "mi", "Throughput"), values(n, "mi_secure", "Throughput")
        if mp and mq:
            refs[n] = statistics.median(mq) / statistics.median(mp)
            row += ["%.3f" % refs[n], "%.3f" % (ms / statistics.median(mq))]
        else:
            row += ["-", "-"]
    if scudo:
        sc, rc = values(n, "scudo", "Throughput"), values(n, "scudo", "Peak RSS")
        if sc:
            scudos[n] = statistics.median(sc) / md
            row += ["%.0f" % statistics.median(sc), "%.3f" % scudos[n], "%.0f" % (statistics.median(rc) if rc else 0)]
        else:
            row += ["-", "-", "-"]
    print(fmt % tuple(row))
geo = lambda v: math.exp(sum(math.log(r) for r in v) / len(v)) if v else float("nan")
for label, skip in (("", ()), (" without false_sharing", ("false_sharing",))):
    g = geo([r for n, r in ratios.items() if n not in skip])
    line = "geomean%s: secure/default %.3f (overhead %.1f%%)" % (label, g, 100 * (1 / g - 1))
    if ref:
        gr = geo([r for n, r in refs.items() if n not in skip])
        line += "; mimalloc secure/plain %.3f (overhead %.1f%%)" % (gr, 100 * (1 / gr - 1))
    if scudo:
        line += "; scudo/default %.3f" % geo([r for n, r in scudos.items() if n not in skip])
    print(line)
print("(%d runs each, interleaved; spread = (max-min)/median)" % runs)
if measures:
    print()
    print("each measure alone: median ops/s of its library / the default build's")
    cols = measures + ["secure"] + (["mi_secure"] if ref else [])
    build_of = lambda m: m if m in ("secure", "mi_secure") or m.startswith("x_") else "m_" + m
    print(("%-14s" % "benchmark") + "".join(" %8s" % m[-8:] for m in cols))
    per = {m: [] for m in cols}
    for n in names:
        md = values(n, "default", "Throughput")
        if not md: continue
        md = statistics.median(md)
        row = "%-14s" % n
        for m in cols:
            v = values(n, build_of(m), "Throughput")
            if v:
                per[m].append(statistics.median(v) / md)
                row += " %8.3f" % per[m][-1]
            else:
                row += " %8s" % "-"
        print(row)
    print(("%-14s" % "geomean") + "".join(" %8.3f" % geo(per[m]) for m in cols))
EOF

# ---- instruction counts (callgrind) -----------------------------------------
if [ "${COST_CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
  LOOP=$B/bench/cost_loop   # bench/cost_loop.c, built by make
  [ -x "$LOOP" ] || { echo "$LOOP not built: run make" >&2; exit 2; }
  echo
  echo "callgrind: 2000 rounds of 100 malloc(SIZE) then 100 free = 200000 + 200000 calls"
  echo "(instructions inside malloc / free, callees included: --toggle-collect)"
  printf "%-10s %5s %14s %14s %10s %10s\n" build SIZE malloc free "per malloc" "per free"
  for size in 16 512; do
  for ((i = 0; i < ${#LIBS[@]}; i += 2)); do
    build=${LIBS[i]} lib=${LIBS[i + 1]}
    n=() died=""
    for f in malloc free; do
      # the braces keep bash's "Aborted" note off the output
      { LD_PRELOAD="$lib" valgrind --tool=callgrind --toggle-collect=$f \
        --callgrind-out-file="$WORK/cg.$build.$f" "$LOOP" "$size" >/dev/null 2>"$WORK/cg.$build.$f.log"; } 2>/dev/null ||
        died=$(grep -m1 -vE '^==[0-9]+==' "$WORK/cg.$build.$f.log")
      n+=("$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/cg.$build.$f.log")")
    done
    # scudo dies under valgrind ("Scudo ERROR: internal map or unmap
    # failure": valgrind refuses its 180 GiB PROT_NONE reservation, EINVAL)
    if [ -n "$died" ]; then
      printf "%-10s %5s   failed under valgrind: %s\n" "$build" "$size" "$died"
      continue
    fi
    awk -v b="$build" -v s="$size" -v m="${n[0]}" -v f="${n[1]}" \
      'BEGIN { printf "%-10s %5s %14s %14s %10.1f %10.1f\n", b, s, m, f, m / 200000, f / 200000 }'
  done
  done
  # the copy measure: memcpy through a non-inlined call (bench/copy_loop.c)
  COPY=$B/bench/copy_loop
  if [ -x "$COPY" ]; then
    echo
    echo "callgrind: 200000 memcpy(DST, global, SIZE) calls from a non-inlined function"
    echo "(DST: heap, a block of SIZE; large, the middle of a 1 MiB block; stack)"
    echo "(instructions inside copy_once: the call, glibc's memcpy, the check: --toggle-collect)"
    printf "%-10s %5s %6s %14s %10s\n" build SIZE dst instructions "per call"
    for size in 16 4096; do
    for dst in heap large stack; do
    for ((i = 0; i < ${#LIBS[@]}; i += 2)); do
      build=${LIBS[i]} lib=${LIBS[i + 1]}
      LD_PRELOAD="$lib" valgrind --tool=callgrind --toggle-collect=copy_once \
        --callgrind-out-file="$WORK/cg.$build.copy" "$COPY" "$size" "$dst" 200000 >/dev/null 2>"$WORK/cg.$build.copy.log"
      c=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/cg.$build.copy.log")
      awk -v b="$build" -v s="$size" -v d="$dst" -v c="$c" \
        'BEGIN { printf "%-10s %5s %6s %14s %10.1f\n", b, s, d, c, c / 200000 }'
    done
    done
    done
  fi
fi
exit $bad
