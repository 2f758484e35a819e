#!/usr/bin/env bash
# Heap profiling (HAKMEM_PROF, src/mem/prof.c, docs/PROFILING.md).
#   prof.sh BUILD sites     three sites, fixed seed, default rate: each
#                           site's scaled total within 10% of the truth;
#                           google-pprof --text ranks them in order (live
#                           and allocated); --collapsed has main;churn;site;
#                           HAKMEM_PROF_INTERVAL writes FILE.NNNN.heap;
#                           --base=FILE.0001.heap subtracts (PROFILING.md)
#   prof.sh BUILD leak      HAKMEM_PROF_LEAKS=1 names the leaking site
#   prof.sh BUILD report    tools/hakmem prof runs the program and prints
#                           the paths; the report's flame graph names the sites
#   prof.sh BUILD procs     HAKMEM_PROF_FILE's %p and %% (a fork child: its
#                           own pid; without %p: FILE.PID); tools/hakmem
#                           prof of a program that starts others: one profile
#                           per process, named by its pid, the started
#                           process's pprof command naming its binary (also
#                           after an exec), the others listed with theirs
#   prof.sh BUILD fastpath  malloc and free do not touch the profiler or the
#                           guarded sampler: no symbol of theirs in them
#                           (libhakmem.so), and override.c's code is the same
#                           with their hooks compiled out (HK_NO_PROF,
#                           HK_NO_GUARDED); NOPROF_OBJ: that object
# Exit 77 (skipped) without google-pprof (Debian: google-perftools).
set -euo pipefail
B=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
mode=$2
lib=$B/libhakmem.so
prog=$B/tests/prof_sites
fail() { echo "prof.sh $mode: FAIL: $*" >&2; exit 1; }

if [ "$mode" = fastpath ]; then
  noprof=$3
  shipped=$B/CMakeFiles/hakmem.dir/src/override/override.c.o
  command -v objdump >/dev/null || { echo "no objdump: skipped"; exit 77; }
  for f in malloc free _Znwm _ZdlPv; do
    body=$(objdump -d --no-show-raw-insn --disassemble="$f" "$lib" | sed -n "/<$f>:/,/^\$/p")
    [ -n "$body" ] || fail "no function $f in $lib"
    n=$(printf '%s\n' "$body" | grep -c $'^ *[0-9a-f]*:\t' || true)
    if printf '%s\n' "$body" | grep -i 'prof\|guarded'; then fail "$f refers to the profiler or the guarded sampler"; fi
    echo "$f: $n instructions, no reference to the profiler or the guarded sampler"
  done
  # the same function in two objects, relocations by name, addresses gone
  norm() {
    objdump -dr --no-show-raw-insn --disassemble="$2" "$1" | sed -n "/<$2>:/,/^\$/p" |
      sed -E 's/^ *[0-9a-f]+:\t//; s/^[0-9a-f]+ <//; s/\b[0-9a-f]+ <([^>]*)>/<\1>/g'
  }
  for f in malloc free; do
    a=$(norm "$shipped" $f); b=$(norm "$noprof" $f)
    [ -n "$a" ] && [ -n "$b" ] || fail "$f not found in the objects"
    if [ "$a" != "$b" ]; then
      diff <(printf '%s\n' "$b") <(printf '%s\n' "$a") || true
      fail "$f differs from its build without the profiler's hooks"
    fi
    echo "$f: the same code with and without the profiler ($(printf '%s\n' "$a" | grep -vc '^ *R_X86' ) lines)"
  done
  echo "prof.sh fastpath: OK"
  exit 0
fi

command -v google-pprof >/dev/null || { echo "google-pprof not installed: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/hakmem-prof.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export HAKMEM_PROF=1 HAKMEM_PROF_SEED=20261124 HAKMEM_PROF_FILE=$tmp/p.heap
unset HAKMEM_PROF_SAMPLE HAKMEM_PROF_INTERVAL

# google-pprof's flat MB for each site_* / leak_site line, as "NAME MB"
flat() { google-pprof --text "$@" 2>/dev/null | awk '$6 ~ /^(site_|leak_site|temp_site)/ { print $6, $1 }'; }

if [ "$mode" = sites ]; then
  HAKMEM_PROF_INTERVAL=536870912 LD_PRELOAD=$lib "$prog" sites "$tmp/p.dump" > truth.txt
  # every 512 MiB allocated, a profile: 2.4 GiB in all
  ls p.0001.heap p.0002.heap p.0003.heap p.0004.heap > /dev/null || fail "interval profiles: $(ls)"
  google-pprof --text --alloc_space "$prog" p.0004.heap 2>/dev/null | grep -q site_mid ||
    fail "the 4th interval profile (past 2 GiB) does not name site_mid"
  # --base: the 4th less the 1st (docs/PROFILING.md, "Comparing two
  # profiles"): site_mid first, site_small's difference is the two's
  google-pprof --text --alloc_space --base=p.0001.heap "$prog" p.0004.heap 2>/dev/null > base.txt
  cat base.txt
  [ "$(awk '$6 ~ /^site_/ {print $6; exit}' base.txt)" = site_mid ] || fail "--base: site_mid is not first"
  one() { google-pprof --text --alloc_space "$prog" "$1" 2>/dev/null | awk '$6 == "site_small" {print $1}'; }
  python3 -c 'import sys; a, b, d = map(float, sys.argv[1:]); sys.exit(0 if abs(b - a - d) < 0.2 else 1)' \
    "$(one p.0001.heap)" "$(one p.0004.heap)" "$(awk '$6 == "site_small" {print $1}' base.txt)" ||
    fail "--base: site_small is not p.0004's less p.0001's"
  [ -s p.dump ] || fail "hak_prof_dump wrote nothing"
  [ -s p.heap ] || fail "no profile at exit"
  head -1 p.dump | grep -q '^heap profile: .* @ heapprofile$' || fail "header: $(head -1 p.dump)"
  grep -q '^MAPPED_LIBRARIES:$' p.dump || fail "no MAPPED_LIBRARIES"
  flat --alloc_space "$prog" p.dump > alloc.txt
  flat --inuse_space "$prog" p.dump > live.txt
  cat truth.txt; echo "allocated:"; cat alloc.txt; echo "live:"; cat live.txt
  # within 10% of the truth, every site
  python3 - truth.txt alloc.txt <<'EOF' || fail "a site's scaled total is off by more than 10%"
import sys
truth = {l.split()[1]: float(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("truth")}
got = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[2]) if l.strip()}
bad = 0
for site, mb in truth.items():
    g = got.get(site, 0.0)
    err = (g - mb) / mb
    print("%-10s truth %7.1f MB  profile %7.1f MB  %+5.1f%%" % (site, mb, g, 100 * err))
    if abs(err) > 0.10:
        bad = 1
sys.exit(bad)
EOF
  # ranked in order: pprof sorts by flat
  [ "$(awk '{print $1}' alloc.txt | tr '\n' ' ')" = "site_small site_mid site_large " ] ||
    fail "--alloc_space ranks: $(tr '\n' ' ' < alloc.txt)"
  [ "$(awk '{print $1}' live.txt | tr '\n' ' ')" = "site_small site_mid site_large " ] ||
    fail "--inuse_space ranks: $(tr '\n' ' ' < live.txt)"
  google-pprof --collapsed "$prog" p.dump 2>/dev/null > collapsed.txt
  for s in site_small site_mid site_large; do
    grep -Eq "(^|;)main(<[0-9a-f]*>)?;churn[^;]*;$s(<[0-9a-f]*>)? [0-9]+$" collapsed.txt ||
      fail "--collapsed has no main;churn;$s stack: $(cat collapsed.txt)"
  done
  # everything was freed before exit: nothing live in the exit profile
  google-pprof --text --inuse_space "$prog" p.heap 2>/dev/null | grep -q 'site_' &&
    fail "blocks freed before exit are live in the exit profile"
  echo "prof.sh sites: OK"
elif [ "$mode" = leak ]; then
  HAKMEM_PROF_LEAKS=1 LD_PRELOAD=$lib "$prog" leak > truth.txt 2> err.txt
  cat truth.txt err.txt
  grep -q '^hakmem: prof: leaks: about [0-9]* bytes in [0-9]* blocks from [0-9]* stacks' err.txt ||
    fail "no leak line on stderr"
  [ -s p.heap.leaks ] || fail "no leak profile"
  flat "$prog" p.heap.leaks > leaks.txt
  cat leaks.txt
  [ "$(head -1 leaks.txt | awk '{print $1}')" = leak_site ] || fail "the leak profile does not name leak_site first"
  grep -q temp_site leaks.txt && fail "temp_site (all freed) is in the leak profile"
  mb=$(awk '$1 == "leak_site" {print $2}' leaks.txt)
  python3 -c "import sys; v=float('$mb'); sys.exit(0 if 0.7*64 <= v <= 1.3*64 else 1)" ||
    fail "leak_site: $mb MB, not within 30% of 64"
  echo "prof.sh leak: OK"
elif [ "$mode" = report ]; then
  HAKMEM_LIB=$lib HAKMEM_PROF_DIR=$tmp/out "$src/tools/hakmem" prof -- "$prog" sites "$tmp/p.dump" \
    > out.txt 2> err.txt || { cat err.txt; fail "hakmem prof failed"; }
  cat err.txt
  heap=$(sed -n 's/^hakmem: profile: //p' err.txt)
  page=$(sed -n 's/^hakmem: report:  //p' err.txt)
  [ -s "$heap" ] || fail "no profile at the path printed: '$heap'"
  [ -s "$page" ] || fail "no report at the path printed: '$page'"
  grep -q "id='chart-rss'" "$page" || fail "the report has no timeline chart"
  grep -q "id='chart-flame'" "$page" || fail "the report has no flame graph"
  # the exit profile has nothing live (all freed); the dump made while the
  # sites' blocks were live has them
  python3 "$src/tools/hakmem-report" "${heap%.heap}.jsonl" p.dump --program "$prog" -o r.html
  for s in site_small site_mid site_large; do
    grep -q "<title>$s — " r.html || fail "the flame graph does not name $s"
  done
  echo "prof.sh report: OK"
elif [ "$mode" = procs ]; then
  H=$src/tools/hakmem
  real=$(readlink -f "$prog")
  # the interpreter itself, not a launcher shim (pyenv's runs many processes)
  py=$(python3 -c 'import sys; print(sys.executable)')
  fork_prog='import os
x = [bytearray(100) for _ in range(20000)]
pid = os.fork()
if pid == 0:
    y = [bytearray(300) for _ in range(20000)]
    raise SystemExit(0)
os.waitpid(pid, 0)
print(os.getpid(), pid)'
  # %p: each process its pid, a fork child too; %%: a %
  mkdir lib1 && cd lib1
  HAKMEM_PROF_SAMPLE=4096 HAKMEM_PROF_FILE="$tmp/lib1/f-%p-%%.heap" LD_PRELOAD=$lib "$py" -c "$fork_prog" > ../pids
  read -r parent child < ../pids
  [ "$(ls | sort | tr '\n' ' ')" = "$(printf 'f-%s-%%.heap\n' "$parent" "$child" | sort | tr '\n' ' ')" ] ||
    fail "%p: expected f-$parent-%.heap and f-$child-%.heap: $(ls)"
  # without %p a fork child's profile lies beside its parent's, FILE.PID
  cd "$tmp" && mkdir lib2 && cd lib2
  HAKMEM_PROF_SAMPLE=4096 HAKMEM_PROF_FILE="$tmp/lib2/q.heap" LD_PRELOAD=$lib "$py" -c "$fork_prog" > ../pids
  read -r parent child < ../pids
  [ "$(ls | tr '\n' ' ')" = "q.heap q.heap.$child " ] || fail "no %p: expected q.heap q.heap.$child: $(ls)"
  cd "$tmp"
  # a launcher (bash exits by exit(): it writes a profile too) that starts
  # the program twice
  rc=0
  HAKMEM_LIB=$lib HAKMEM_PROF_DIR=$tmp/out HAKMEM_PROF_SAMPLE=65536 "$H" prof -- \
    bash -c "'$prog' leak >/dev/null; '$prog' leak >/dev/null; exit 3" 2> err.txt || rc=$?
  cat err.txt
  [ $rc = 3 ] || fail "the launcher's status 3 came back as $rc"
  heap=$(sed -n 's/^hakmem: profile: //p' err.txt)
  main=${heap%.heap}; main=${main##*.}
  [ "$heap" = "$tmp/out/hakmem-prof.bash.$main.heap" ] && [ -s "$heap" ] ||
    fail "the started process's profile: '$heap'"
  grep -qx "hakmem: text:    google-pprof --text $(readlink -f "$(type -P bash)") $heap" err.txt ||
    fail "the pprof command does not name bash"
  [ "$(grep -c '^hakmem: other: ' err.txt)" = 2 ] || fail "not two other profiles listed"
  pids=" $main "
  while read -r p cmd; do
    p=${p%:}
    f=$tmp/out/hakmem-prof.bash.$p.heap
    [ "$cmd" = "google-pprof --text $real $f" ] || fail "other $p: '$cmd'"
    case $pids in *" $p "*) fail "pid $p twice" ;; esac
    pids="$pids$p "
    # the pid in the name is the process's own (its timeline says so)
    python3 -c 'import json, sys
assert {json.loads(l)["pid"] for l in open(sys.argv[1])} == {int(sys.argv[2])}' \
      "${f%.heap}.jsonl" "$p" || fail "$f: the timeline's pid is not $p"
    # the command printed works: pprof finds the leaking site in it
    $cmd 2>/dev/null | awk '$6 == "leak_site"' | grep -q . || fail "pprof of $f has no leak_site"
  done < <(sed -n 's/^hakmem: other: *//p' err.txt)
  [ "$(ls out/*.heap | wc -l)" = 3 ] || fail "three profiles expected: $(ls out)"
  # the program execs another (its pid stays): the profile is the exec'd
  # program's, named so; the earlier run's files are not listed
  HAKMEM_LIB=$lib HAKMEM_PROF_DIR=$tmp/out "$H" prof -- bash -c "exec '$prog' leak >/dev/null" 2> err2.txt ||
    { cat err2.txt; fail "hakmem prof of an exec failed"; }
  cat err2.txt
  heap=$(sed -n 's/^hakmem: profile: //p' err2.txt)
  grep -qx "hakmem: text:    google-pprof --text $real $heap" err2.txt ||
    fail "after an exec the pprof command does not name $real"
  grep -q '^hakmem: other' err2.txt && fail "the earlier run's profiles are listed"
  echo "prof.sh procs: OK"
else
  fail "no mode $mode"
fi
