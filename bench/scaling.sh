#!/usr/bin/env bash
# bench/scaling.sh — thread scaling of hakmem and its peers on a bigger
# machine (issue 20). Never run in CI.
#
#   bench/scaling.sh pack [BUILD_DIR] [OUT.tar.gz]
#       On this machine (after `make`): packs BUILD_DIR/bench/* (the built
#       benchmark programs), BUILD_DIR/libhakmem.so and the peers' libraries
#       found here (libmimalloc.so.2, libjemalloc.so.2, libtcmalloc_minimal.so.4
#       from /usr/lib/x86_64-linux-gnu), the non-libc libraries those need
#       (libstdc++, libgcc_s: used only where the other machine lacks them)
#       and this script into OUT.tar.gz (default hakmem-scaling.tar.gz),
#       one top directory hakmem-scaling/, with MANIFEST (when, where, git)
#       and SHA256SUMS, which `run` checks before it starts. EXTRA_HAKMEM=
#       "NAME=LIB ..." packs other hakmem builds too (libs/libhakmem-NAME.so),
#       run as the allocator hakmem:NAME: a before and an after, interleaved.
#   bench/scaling.sh run DIR [OUT_DIR]
#       On the other machine (no packages needed: bash, coreutils, awk, ldd):
#       DIR is the unpacked hakmem-scaling/ (or a build directory: its bench/
#       programs, its libhakmem.so and the peers installed here). Runs the
#       synthetic multi-thread rows at 1, 2, 4, 8 and 16 threads under every
#       allocator (glibc, hakmem, mimalloc, jemalloc, tcmalloc: those present),
#       interleaved (A B C A B C ...), 3 runs each; every run must print the
#       allocator it was asked for (`allocator: NAME (PATH)`, PATH the very
#       library preloaded) or it is REJECTED and its cell is FAIL, with no
#       median. Writes OUT_DIR (default ./scaling-DATE-TIME): runs.csv (every
#       run), scaling.csv and scaling.json (median per benchmark, threads and
#       allocator) and scaling.svg (median throughput against threads, one
#       panel per benchmark).
#
# Rows (argument shapes as in bench/harness.py's benchmarks(), T = threads):
#   larson_mid     larson S 2048 32768 10000 1 12345 T      (S = LARSON_SECONDS)
#   larson_small   larson S 8 1000 5000 100 4141 T
#   xthread        bench_xthread P 2000000 16 512 7 64      (P = max(1, T/2)
#                  producer/consumer pairs: 2P threads; 1 thread runs 1 pair)
#   mid            bench_mid T I                            (I = MID_ITERS, per thread)
#   false_sharing  bench_false_sharing T 10 1000000 8
#   big_heap       bench_bigheap T W 3000 7     (W = BIGHEAP_MIB: issue 40's big
#                  blocks, 3000 steps per thread after the fill)
# Environment: THREADS="1 2 4 8 16", RUNS=3, LARSON_SECONDS=1, MID_ITERS=1000000,
# ALLOCATORS="glibc hakmem mimalloc jemalloc tcmalloc" (and hakmem:NAME, a
# build packed with EXTRA_HAKMEM), BENCHES="larson_mid larson_small xthread mid
# false_sharing" (big_heap on request), BIGHEAP_MIB=1024, RUN_TIMEOUT=300 (s per run).
# Exit status: 0 when every run was accepted, 1 when some cell is FAIL, 2 on
# usage errors.
set -u
PEER_DIR=${PEER_DIR:-/usr/lib/x86_64-linux-gnu}
PEERS="libmimalloc.so.2 libjemalloc.so.2 libtcmalloc_minimal.so.4"

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

lib_label() {   # file name -> allocator label
    case "$(basename "$1")" in
        libhakmem.so*) echo hakmem ;; libmimalloc*) echo mimalloc ;; libjemalloc*) echo jemalloc ;;
        libtcmalloc*) echo tcmalloc ;; *) echo unknown ;;
    esac
}

# ------------------------------------------------------------------ pack
do_pack() {
    local build=${1:-build} out=${2:-hakmem-scaling.tar.gz}
    [ -d "$build/bench" ] || { echo "scaling.sh pack: $build/bench not found: run make first" >&2; exit 2; }
    [ -e "$build/libhakmem.so" ] || { echo "scaling.sh pack: $build/libhakmem.so not found: run make first" >&2; exit 2; }
    PACK_TMP=$(mktemp -d); trap 'rm -rf "$PACK_TMP"' EXIT
    local st=$PACK_TMP top=$PACK_TMP/hakmem-scaling
    mkdir -p "$top/bin" "$top/libs" "$top/deps"
    local f n=0
    for f in "$build"/bench/*; do   # the built programs and libraries, not CMake's files
        [ -f "$f" ] || continue
        case "$(basename "$f")" in Makefile|*.cmake|CTestTestfile.cmake) continue ;; esac
        if [ -x "$f" ] || [[ "$f" == *.so ]]; then cp -L "$f" "$top/bin/"; n=$((n + 1)); fi
    done
    cp -L "$build/libhakmem.so" "$top/libs/libhakmem.so"
    local libs="$build/libhakmem.so" p x
    for x in ${EXTRA_HAKMEM:-}; do   # NAME=LIB: another hakmem build, run as hakmem:NAME
        [[ "$x" == ?*=?* && -e "${x#*=}" ]] || { echo "scaling.sh pack: EXTRA_HAKMEM entry $x is not NAME=an existing library" >&2; exit 2; }
        cp -L "${x#*=}" "$top/libs/libhakmem-${x%%=*}.so"
        echo "hakmem:${x%%=*}: $(cd "$(dirname "${x#*=}")" && pwd)/$(basename "${x#*=}") (git $(git -C "$(dirname "${x#*=}")" rev-parse --short HEAD 2>/dev/null || echo "?"))" >>"$PACK_TMP/extra"
    done
    for p in $PEERS; do
        if [ -e "$PEER_DIR/$p" ]; then
            cp -L "$PEER_DIR/$p" "$top/libs/$p"; libs="$libs $PEER_DIR/$p"
        else
            echo "scaling.sh pack: $PEER_DIR/$p not found: $(lib_label "$p") left out" >&2
        fi
    done
    # what the libraries need beyond glibc (libstdc++, libgcc_s for jemalloc
    # and tcmalloc); the runner uses them only where the machine lacks them
    local dep
    for dep in $(ldd $libs 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
        case "$(basename "$dep")" in
            libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
            *) cp -L "$dep" "$top/deps/" ;;
        esac
    done
    cp "$0" "$top/scaling.sh"; chmod +x "$top/scaling.sh"
    {
        echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(uname -r))"
        echo "git: $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
        echo "build: $(cd "$build" && pwd)"
        [ -e "$PACK_TMP/extra" ] && cat "$PACK_TMP/extra"
    } >"$top/MANIFEST"
    (cd "$top" && sha256sum bin/* libs/* deps/* >SHA256SUMS)
    case "$out" in /*) ;; *) out=$PWD/$out ;; esac
    tar -C "$st" -czf "$out" hakmem-scaling
    echo "packed $n programs, $(ls "$top/libs" | tr '\n' ' ')and $(ls "$top/deps" | wc -l) dependencies into $out"
    echo "on the other machine: tar xzf $(basename "$out") && hakmem-scaling/scaling.sh run hakmem-scaling"
}

# ------------------------------------------------------------------- run
bench_cmd() {   # BENCH T -> the command line (programs in $BIN)
    local b=$1 t=$2
    case "$b" in
        larson_mid) echo "$BIN/larson $LARSON_SECONDS 2048 32768 10000 1 12345 $t" ;;
        larson_small) echo "$BIN/larson $LARSON_SECONDS 8 1000 5000 100 4141 $t" ;;
        xthread) echo "$BIN/bench_xthread $(( t / 2 > 0 ? t / 2 : 1 )) 2000000 16 512 7 64" ;;
        mid) echo "$BIN/bench_mid $t ${MID_ITERS:-1000000}" ;;
        false_sharing) echo "$BIN/bench_false_sharing $t 10 1000000 8" ;;
        big_heap) echo "$BIN/bench_bigheap $t ${BIGHEAP_MIB:-1024} 3000 7" ;;
        *) return 1 ;;
    esac
}

fmt_dur() { local s=$1; if [ "$s" -ge 3600 ]; then printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60));
            elif [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }

do_run() {
    local dir=${1:-}; [ -n "$dir" ] && [ -d "$dir" ] || usage
    dir=$(cd "$dir" && pwd)
    local out=${2:-$PWD/scaling-$(date +%Y%m%d-%H%M%S)}
    THREADS=${THREADS:-1 2 4 8 16}; RUNS=${RUNS:-3}; LARSON_SECONDS=${LARSON_SECONDS:-1}
    BENCHES=${BENCHES:-larson_mid larson_small xthread mid false_sharing}
    local want=${ALLOCATORS:-glibc hakmem mimalloc jemalloc tcmalloc} tmo=${RUN_TIMEOUT:-300}
    local libdir deps=""
    if [ -d "$dir/bin" ]; then BIN=$dir/bin; libdir=$dir/libs; deps=$dir/deps   # a pack
        # the pack must hold what was packed: a library swapped for another
        # under the same name would print the name it was asked for
        if [ -e "$dir/SHA256SUMS" ] && ! (cd "$dir" && sha256sum -c --quiet SHA256SUMS >/dev/null 2>&1); then
            echo "scaling.sh run: $dir does not match its SHA256SUMS: $(cd "$dir" && sha256sum -c --quiet SHA256SUMS 2>&1 | head -n 3 | tr '\n' ' ')" >&2
            exit 2
        fi
    elif [ -d "$dir/bench" ]; then BIN=$dir/bench; libdir=""                   # a build directory
    else echo "scaling.sh run: $dir has neither bin/ (a pack) nor bench/ (a build)" >&2; exit 2; fi
    local b; for b in $BENCHES; do bench_cmd "$b" 1 >/dev/null || { echo "unknown benchmark $b" >&2; exit 2; }; done
    mkdir -p "$out"
    # allocators: label, library (empty: none), extra LD_LIBRARY_PATH
    local labels=() libpath=() ldpath=() a lib lp
    for a in $want; do
        lib=""; lp=""
        case "$a" in
            glibc) ;;
            hakmem) lib=${libdir:+$libdir/libhakmem.so}; [ -n "$libdir" ] || lib=$dir/libhakmem.so ;;
            hakmem:?*) lib=${libdir:-$dir}/libhakmem-${a#hakmem:}.so ;;
            mimalloc) lib=${libdir:-$PEER_DIR}/libmimalloc.so.2 ;;
            jemalloc) lib=${libdir:-$PEER_DIR}/libjemalloc.so.2 ;;
            tcmalloc) lib=${libdir:-$PEER_DIR}/libtcmalloc_minimal.so.4 ;;
            *) echo "unknown allocator $a" >&2; exit 2 ;;
        esac
        if [ -n "$lib" ]; then
            [ -e "$lib" ] || { echo "  SKIP $a: $lib not found"; continue; }
            if ldd "$lib" 2>/dev/null | grep -q "not found"; then   # needs the packed libstdc++ ...
                if [ -n "$deps" ] && ! LD_LIBRARY_PATH=$deps ldd "$lib" 2>/dev/null | grep -q "not found"; then
                    lp=$deps
                else
                    echo "  SKIP $a: $lib needs $(ldd "$lib" | awk '/not found/ {print $1}' | tr '\n' ' ')"; continue
                fi
            fi
        fi
        labels+=("$a"); libpath+=("$lib"); ldpath+=("$lp")
        echo "  allocator $a: ${lib:+LD_PRELOAD=$lib}${lib:-no preload}${lp:+ (LD_LIBRARY_PATH=$lp)}"
    done
    [ ${#labels[@]} -gt 0 ] || { echo "no allocator to run" >&2; exit 2; }
    local nt nb; nt=$(echo $THREADS | wc -w); nb=$(echo $BENCHES | wc -w)
    local total=$((nb * nt * RUNS * ${#labels[@]})) done=0 t0=$SECONDS bt0 bdone
    echo "scaling: $nb benchmarks x threads {$THREADS} x $RUNS runs x ${#labels[@]} allocators = $total runs, interleaved; $(nproc 2>/dev/null || echo '?') CPUs; results in $out"
    local csv=$out/runs.csv
    echo "bench,threads,allocator,run,status,throughput,rss_kib,wall_s,printed_allocator,reason" >"$csv"
    local t r i cmd o rc name path tp rss why status el left w0 w1 tcmd
    tcmd=(); command -v timeout >/dev/null && tcmd=(timeout -k 10 "$tmo")
    for b in $BENCHES; do
        for t in $THREADS; do
            bt0=$SECONDS; bdone=0
            for ((r = 1; r <= RUNS; r++)); do
                for ((i = 0; i < ${#labels[@]}; i++)); do
                    a=${labels[$i]}; lib=${libpath[$i]}; lp=${ldpath[$i]}
                    cmd=$(bench_cmd "$b" "$t")
                    o=$out/.run.out
                    w0=$(date +%s.%N)
                    # shellcheck disable=SC2086
                    env -u LD_PRELOAD -u LD_LIBRARY_PATH ${lib:+LD_PRELOAD=$lib} ${lp:+LD_LIBRARY_PATH=$lp} \
                        ${tcmd[@]+"${tcmd[@]}"} $cmd >"$o" 2>&1 </dev/null
                    rc=$?
                    w1=$(date +%s.%N)
                    name=$(sed -n 's/^allocator: \([^ ]*\) (\(.*\))$/\1/p' "$o" | head -n 1)
                    path=$(sed -n 's/^allocator: \([^ ]*\) (\(.*\))$/\2/p' "$o" | head -n 1)
                    tp=$(sed -n 's/^Throughput = \([0-9.eE+]*\) ops\/s.*/\1/p' "$o" | head -n 1)
                    rss=$(sed -n 's/^Peak RSS = \([0-9]*\) KiB.*/\1/p' "$o" | head -n 1)
                    status=ok; why=""
                    if [ $rc -ne 0 ]; then
                        status=failed; why="exit status $rc$([ $rc -gt 128 ] && echo " (signal $((rc - 128)))")"
                        [ $rc -eq 124 ] && why="timed out after $tmo s"
                    elif [ -z "$name" ]; then
                        status=rejected; why="the program printed no allocator: line"
                    elif [ "$name" != "${a%%:*}" ]; then
                        status=rejected; why="printed allocator $name ($path) but $a was requested"
                    elif [ -n "$lib" ] && [ "$(readlink -f "$path")" != "$(readlink -f "$lib")" ]; then
                        status=rejected; why="malloc is defined in $path, not in the preloaded $lib"
                    elif [ -z "$tp" ]; then
                        status=failed; why="no Throughput line"
                    fi
                    [ "$status" = ok ] || tp=""
                    why=${why//,/;}
                    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$b" "$t" "$a" "$r" "$status" "$tp" "$rss" \
                        "$(awk -v a="$w0" -v b="$w1" 'BEGIN{printf "%.3f", b - a}')" "${name:+$name ${path//,/;}}" "$why" >>"$csv"
                    done=$((done + 1)); bdone=$((bdone + 1))
                    el=$((SECONDS - t0))
                    # time left: this cell's runs at its pace, the rest at the whole run's
                    left=$(awk -v d="$done" -v T="$total" -v el="$el" -v be=$((SECONDS - bt0)) -v bd="$bdone" \
                        -v bt=$((RUNS * ${#labels[@]})) 'BEGIN{p = el / d; bp = bd ? be / bd : p; r = bt - bd;
                        if (r < 0) r = 0; o = T - d - r; if (o < 0) o = 0; printf "%d", r * bp + o * p + 0.5}')
                    printf '[%*d/%d runs, %s elapsed, ~%s left] %-14s %2s threads %-9s run %d  %s\n' \
                        ${#total} "$done" "$total" "$(fmt_dur "$el")" "$(fmt_dur "$left")" "$b" "$t" "$a" "$r" \
                        "$([ "$status" = ok ] && echo "$tp ops/s  RSS ${rss:-?} KiB" || echo "${status^^}: $why")"
                done
            done
        done
    done
    rm -f "$out/.run.out"
    summarize "$out" "$csv"
}

# ------------------------------------------------- medians, JSON and SVG
summarize() {
    local out=$1 csv=$2
    local host cpu; host=$(uname -n); cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
    awk -F, -v out="$out" -v host="$host" -v cpu="$cpu" -v cpus="$(nproc 2>/dev/null)" \
        -v date="$(date '+%Y-%m-%d %H:%M')" -v runs="${RUNS:-3}" '
    function median(s,   n, v, i, j, x) {
        n = split(s, v, " ")
        for (i = 2; i <= n; i++) { x = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        return n % 2 ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/"/, "\\&quot;", s); return s }
    NR == 1 { next }
    {
        k = $1 SUBSEP $2 SUBSEP $3
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        if (!($1 in bseen)) { bseen[$1] = 1; bench[++nb] = $1 }
        if (!($2 in tseen)) { tseen[$2] = 1; thr[++nt] = $2 }
        if (!($3 in aseen)) { aseen[$3] = 1; alloc[++na] = $3 }
        total[k]++
        if ($5 == "ok") { tps[k] = tps[k] " " $6; if ($7 != "") rs[k] = rs[k] " " $7; ok[k]++ }
        else { bad[k]++; why[k] = why[k] (why[k] == "" ? "" : "; ") "run " $4 ": " $5 ": " $10; failed++ }
    }
    END {
        sc = out "/scaling.csv"; js = out "/scaling.json"; sv = out "/scaling.svg"
        print "bench,threads,allocator,verdict,median_throughput,median_rss_kib,runs_ok,runs_total" > sc
        printf "{\n \"date\": \"%s\", \"host\": \"%s\", \"cpu\": \"%s\", \"cpus\": %s, \"runs\": %s,\n \"rows\": [\n", date, host, cpu, cpus + 0, runs + 0 > js
        for (i = 1; i <= nk; i++) {
            k = order[i]; split(k, p, SUBSEP)
            if (bad[k] || !ok[k]) { v = "FAIL"; m = ""; r = "" } else { v = "PASS"; m = median(tps[k]); r = rs[k] == "" ? "" : median(rs[k]) }
            med[k] = m
            if (m != "" && m > ymax[p[1]]) ymax[p[1]] = m
            printf "%s,%s,%s,%s,%s,%s,%d,%d\n", p[1], p[2], p[3], v, m, r, ok[k], total[k] > sc
            printf "  {\"bench\": \"%s\", \"threads\": %d, \"allocator\": \"%s\", \"verdict\": \"%s\", \"median_throughput\": %s, \"median_rss_kib\": %s, \"runs_ok\": %d, \"runs_total\": %d%s}%s\n", \
                p[1], p[2], p[3], v, m == "" ? "null" : m, r == "" ? "null" : r, ok[k], total[k], \
                v == "FAIL" ? ", \"reason\": \"" esc(why[k]) "\"" : "", i < nk ? "," : "" > js
        }
        printf " ],\n \"verdict\": \"%s\"\n}\n", failed ? "FAIL" : "PASS" > js
        # SVG: one panel per benchmark, median throughput against threads
        # (log2 spacing), a line per allocator; FAIL cells are a red x at 0
        split("hakmem:#d62728 glibc:#7f7f7f mimalloc:#1f77b4 jemalloc:#2ca02c tcmalloc:#9467bd", pc, " ")
        for (i in pc) { split(pc[i], q, ":"); col[q[1]] = "#" substr(q[2], 2) }
        pw = 320; ph = 200; gx = 70; gy = 50; cols = 3
        rows = int((nb + cols - 1) / cols)
        W = cols * (pw + gx) + 150; H = rows * (ph + gy + 30) + 80
        printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H > sv
        printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n" > sv
        printf "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">Thread scaling: median throughput (ops/s) against threads, %d runs each</text>\n", gx, runs > sv
        printf "<text x=\"%d\" y=\"38\" fill=\"#555\">%s, %s (%s CPUs), %s</text>\n", gx, esc(host), esc(cpu), cpus, date > sv
        for (bi = 1; bi <= nb; bi++) {
            b = bench[bi]; px = gx + ((bi - 1) % cols) * (pw + gx); py = 70 + int((bi - 1) / cols) * (ph + gy + 30)
            ym = ymax[b] > 0 ? ymax[b] * 1.1 : 1
            printf "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", px, py - 6, esc(b) > sv
            printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", px, py, pw, ph > sv
            for (g = 0; g <= 4; g++) {
                yy = py + ph - g * ph / 4
                printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", px, yy, px + pw, yy > sv
                v = ym * g / 4
                lbl = v >= 1e9 ? sprintf("%.3gG", v / 1e9) : v >= 1e6 ? sprintf("%.3gM", v / 1e6) : v >= 1e3 ? sprintf("%.3gk", v / 1e3) : sprintf("%.3g", v)
                printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%s</text>\n", px - 4, yy + 4, lbl > sv
            }
            for (ti = 1; ti <= nt; ti++) {
                xx = px + (nt > 1 ? (ti - 1) * pw / (nt - 1) : pw / 2)
                tx[ti] = xx
                printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n", xx, py + ph + 14, thr[ti] > sv
            }
            printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">threads</text>\n", px + pw / 2, py + ph + 28 > sv
            for (ai = 1; ai <= na; ai++) {
                a = alloc[ai]; c = (a in col) ? col[a] : "#333"; pts = ""
                for (ti = 1; ti <= nt; ti++) {
                    k = b SUBSEP thr[ti] SUBSEP a
                    if (!(k in seen)) continue
                    if (med[k] == "") {
                        printf "<text x=\"%.1f\" y=\"%d\" fill=\"#d00\" text-anchor=\"middle\" font-weight=\"bold\">x<title>%s %s threads %s: FAIL</title></text>\n", tx[ti], py + ph - 3, esc(b), thr[ti], esc(a) > sv
                        continue
                    }
                    yy = py + ph - med[k] / ym * ph
                    pts = pts sprintf("%.1f,%.1f ", tx[ti], yy)
                    printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s %s threads %s: %.4g ops/s</title></circle>\n", tx[ti], yy, c, esc(b), thr[ti], esc(a), med[k] > sv
                }
                if (pts != "") printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"/>\n", pts, c > sv
            }
        }
        for (ai = 1; ai <= na; ai++) {
            a = alloc[ai]; c = (a in col) ? col[a] : "#333"
            printf "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n", W - 130, 60 + ai * 16, c, W - 113, 69 + ai * 16, esc(a) > sv
        }
        print "</svg>" > sv
        printf "%s\n", failed ? "VERDICT: FAIL (" failed " runs failed or were rejected; their cells are FAIL)" : "VERDICT: PASS (every run was accepted)"
        exit failed ? 1 : 0
    }' "$csv"
    local rc=$?
    echo "wrote $out/runs.csv, scaling.csv, scaling.json, scaling.svg"
    return $rc
}

case "${1:-}" in
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    pack) shift; do_pack "$@" ;;
    run) shift; do_run "$@"; exit $? ;;
    *) usage ;;
esac
