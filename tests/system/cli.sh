#!/usr/bin/env bash
# tests/system/cli.sh BUILD CASE — the configuration people can see, the stats
# files and the command line (issue 27). One ctest per CASE:
#
#   unknown_names  a misspelt HAKMEM_* variable is warned about once, with the
#                  nearest knob; known knobs and the listed non-knob names are not
#   script_names   every HAKMEM_* name the project's scripts use (tests/ bench/
#                  tools/ .ci/) is a knob, on the library's non-knob list, or on
#                  this file's list of names that are no environment variables:
#                  `make test` prints no "unknown variable" line
#   verbose        HAKMEM_VERBOSE=1: one line at start with the profile and the
#                  knobs off their default; 2: every knob
#   config         `hakmem config`: every knob of src/base/knobs.c once, its value,
#                  default or set, for the environment it runs in; its probe
#                  (and `hakmem version`'s) writes no report, timeline or
#                  profile of the caller's, yet shows the caller's knobs
#   stats_file     HAKMEM_STATS_FILE: %p and %% expanded, one file per process;
#                  an unwritable path named on stderr, then the report on stderr;
#                  the text report follows a timeline into its file
#                  (`hakmem stats -o F -i MS`); HAKMEM_STATS_INTERVAL
#                  without a file: a warning
#   stats_json     the JSON report: JSON Lines, a schema field, the profile and
#                  the knobs; committed and reserved apart from mapped; the text
#                  report has the config line and says what mapped is;
#                  `hakmem stats --json -o FILE -- PROG` and `hakmem report FILE`
#                  (which fails, exit 1, on a file with no record)
#   help           every hakmem verb, tools/hakmem-report and every benchmark
#                  program and script answer --help (exit 0, usage on stdout) and
#                  a bad argument with the usage and exit 2; run, stats and prof
#                  exit 127 for a missing program, 126 for one that cannot be
#                  executed, and warn about one hakmem cannot be preloaded into
#                  (static, set-user-ID)
#   docs           docs/ENV_VARS.md and docs/hakmem.1 list exactly the knobs of
#                  src/base/knobs.c, and the same non-knob names as the library;
#                  each knob's "since" is a release, or "after" the version
#   man_install    `cmake --install` puts the man page in share/man/man1
set -u
B=$(cd "${1:?usage: cli.sh BUILD CASE}" && pwd)
CASE=${2:?usage: cli.sh BUILD CASE}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$B/libhakmem.so
H=$ROOT/tools/hakmem
TRUE=$(type -P true)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
unset LD_PRELOAD HAKMEM_LIB
# start from a clean slate: no knob of the caller's
for v in $(env | sed -n 's/^\(HAKMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HAKMEM_LIB=$LIB
# the interpreter itself, not a launcher shim: a pyenv shim is a script that
# runs dozens of processes, each of which would warn and report
PY=$(python3 -c 'import sys; print(sys.executable)')
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# the rows of the knob table: "KIND NAME WHEN" (NUMBER HAKMEM_SS_CACHE RUN)
KINDS='NUMBER\|SIZE\|KEYWORD\|PATH'
knob_rows() {
  sed -n "s/^ *\($KINDS\)(\"\(HAKMEM_[A-Z0-9_]*\)\", *[a-z_]*, *\(START\|RUN\)(.*/\1 \2 \3/p" "$ROOT/src/base/knobs.c"
}
all_knobs() { knob_rows | awk '{ print $2 }'; }
# the library's list of names that are not knobs (and its prefix)
non_knob_names() {
  sed -n '/^static const char \*const non_knob_names\[\]/,/^};/p' "$ROOT/src/base/knobs.c" |
    sed -n 's/^ *"\(HAKMEM_[A-Z0-9_]*\)".*/\1/p'
}

case_unknown_names() {
  local err
  err=$(cd "$W" && env HAKMEM_PURGE_DELAY=5 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  [ "$err" = "hakmem: unknown variable HAKMEM_PURGE_DELAY (did you mean HAKMEM_PURGE_DELAY_MS?)" ] ||
    fail "misspelt knob: got '$err'"
  err=$(cd "$W" && env HAKMEM_PROFLE=fast HAKMEM_LARGE_CACH_MB=1 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -qx 'hakmem: unknown variable HAKMEM_PROFLE (did you mean HAKMEM_PROFILE?)' ||
    fail "HAKMEM_PROFLE: got '$err'"
  printf '%s\n' "$err" | grep -qx 'hakmem: unknown variable HAKMEM_LARGE_CACH_MB (did you mean HAKMEM_LARGE_CACHE_MB?)' ||
    fail "HAKMEM_LARGE_CACH_MB: got '$err'"
  # far from every knob: named, no suggestion
  err=$(cd "$W" && env HAKMEM_XYZZY_PLUGH_QUUX=1 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -q '^hakmem: unknown variable HAKMEM_XYZZY_PLUGH_QUUX (no such knob' ||
    fail "far name: got '$err'"
  # once per process, however much it allocates and whatever threads it runs
  err=$(cd "$W" && env HAKMEM_PURGE_DELAY=5 LD_PRELOAD="$LIB" "$PY" -c '
import threading
def f(): [bytearray(i % 5000) for i in range(20000)]
t = [threading.Thread(target=f) for _ in range(4)]
[x.start() for x in t]; [x.join() for x in t]' 2>&1)
  [ "$(printf '%s\n' "$err" | grep -c 'unknown variable')" = 1 ] || fail "not once: '$err'"
  # every knob, the special ones, the listed names and a HAKMEM_TEST_ name: silence
  local envs=() n
  for n in $(all_knobs) $(non_knob_names) HAKMEM_TEST_ANYTHING; do envs+=("$n=0"); done
  err=$(cd "$W" && env "${envs[@]}" HAKMEM_STATS_FILE= HAKMEM_PROF_FILE= LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep 'unknown variable' && fail "a known name was warned about"
  # a name that merely starts like a knob is still unknown
  err=$(cd "$W" && env HAKMEM_VERBOSEX=1 HAKMEM_TEST_=1 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -q 'unknown variable HAKMEM_VERBOSEX' || fail "HAKMEM_VERBOSEX not warned"
  printf '%s\n' "$err" | grep -q 'unknown variable HAKMEM_TEST_ ' || fail "bare HAKMEM_TEST_ not warned"
  [ $fails = 0 ] && ok "unknown names warned once, with the nearest knob; known ones silent"
}

# Names in the project's scripts that are not environment variables at all:
# CMake options and variables, C macros, Makefile/Python/launcher variables,
# and the unknown names test_ctl.c hands to hak_ctl_get on purpose.
NOT_ENV="HAKMEM_DEBUG HAKMEM_OVERRIDE HAKMEM_BUILD_BENCH HAKMEM_BUILD_TESTS HAKMEM_MEASURES
HAKMEM_MEASURE_LIBS HAKMEM_MEASURE_NAMES HAKMEM_SPLIT_DEBUGINFO HAKMEM_DEBUGINFO HAKMEM_INSTALL
HAKMEM_TESTS_CHECK_H HAKMEM_VERSION_MAJOR HAKMEM_VERSION_MINOR HAKMEM_VERSION_PATCH HAKMEM_VERSION_
HAKMEM_LAUNCHER_VERSION HAKMEM_LAUNCHER_LIBDIR HAKMEM_ENV HAKMEM_H HAKMEM_C_FLAGS HAKMEM_DEFS
HAKMEM_MEASURE_DEFS HAKMEM_NO_SUCH_KNOB HAKMEM_X"

case_script_names() {
  local names n envs=() err bad=""
  # (not this file: it plants misspelt names on purpose)
  names=$(cd "$ROOT" && grep -rhoE --exclude=cli.sh 'HAKMEM_[A-Z0-9_]+' tests bench tools .ci 2>/dev/null | sort -u)
  [ -n "$names" ] || { fail "no names found in the scripts"; return; }
  for n in $names; do
    case " $(echo $NOT_ENV) " in *" $n "*) continue ;; esac
    envs+=("$n=0")
  done
  # HAKMEM_STATS_FILE=0 would name a file: empty is "unset"
  err=$(cd "$W" && env "${envs[@]}" HAKMEM_STATS_FILE= HAKMEM_PROF_FILE= LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  bad=$(printf '%s\n' "$err" | sed -n 's/^hakmem: unknown variable \([A-Z0-9_]*\).*/\1/p')
  [ -z "$bad" ] || fail "names the scripts use that the library warns about (rename them out of HAKMEM_, or list them in src/base/knobs.c non_knob_names and docs/ENV_VARS.md): $(echo $bad)"
  # the check is alive: one planted name among them is warned about
  err=$(cd "$W" && env "${envs[@]}" HAKMEM_STATS_FILE= HAKMEM_PROF_FILE= HAKMEM_PLANTED_UNKNOWN=1 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -q 'unknown variable HAKMEM_PLANTED_UNKNOWN' || fail "the planted name was not warned about"
  # the not-an-environment-variable list holds no knob and nothing stale
  for n in $NOT_ENV; do
    all_knobs | grep -qx "$n" && fail "$n is a knob, not a non-environment name"
  done
  [ $fails = 0 ] && ok "${#envs[@]} script names set at once: no warning"
}

case_verbose() {
  local err
  err=$(cd "$W" && env HAKMEM_VERBOSE=1 HAKMEM_SS_CACHE=0 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -qx 'hakmem: config: profile balanced; HAKMEM_SS_CACHE=0, HAKMEM_VERBOSE=1' ||
    fail "verbose 1: '$err'"
  err=$(cd "$W" && env HAKMEM_VERBOSE=1 HAKMEM_PROFILE=lowmem HAKMEM_PURGE_DELAY_MS=10 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  # 10 is lowmem's own default: not listed
  printf '%s\n' "$err" | grep -qx 'hakmem: config: profile lowmem; HAKMEM_VERBOSE=1' || fail "verbose 1 lowmem: '$err'"
  [ "$(printf '%s\n' "$err" | grep -c '^hakmem: config:')" = 1 ] || fail "verbose 1: not one line"
  err=$(cd "$W" && env HAKMEM_VERBOSE=2 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  local n
  for n in $(all_knobs); do
    [ "$(printf '%s\n' "$err" | grep -c "^hakmem: config: $n ")" = 1 ] || fail "verbose 2: $n not once"
  done
  err=$(cd "$W" && env LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  [ -z "$err" ] || fail "verbose 0 printed: '$err'"
  [ $fails = 0 ] && ok "verbose 1 one line, 2 every knob, 0 nothing"
}

case_config() {
  local out err n
  out=$("$H" config 2>"$W/err") || fail "hakmem config exited $?"
  for n in $(all_knobs); do
    [ "$(printf '%s\n' "$out" | grep -c "^$n ")" = 1 ] || fail "config: $n not listed once"
  done
  [ "$(printf '%s\n' "$out" | grep -c '^HAKMEM_')" = "$(all_knobs | wc -l)" ] || fail "config: extra rows"
  printf '%s\n' "$out" | grep -q '^HAKMEM_PROFILE  *balanced  *(default)' || fail "config: profile row: $out"
  printf '%s\n' "$out" | grep -q '^HAKMEM_VERBOSE  *0  *(default)' || fail "config: verbose row is not the caller's"
  printf '%s\n' "$out" | grep -E '^HAKMEM_' | grep -v '(default)' && fail "config: a row not default in a clean environment"
  out=$(env HAKMEM_PROFILE=lowmem HAKMEM_SS_CACHE=3 HAKMEM_VERBOSE=1 HAKMEM_CARVE_KB=999 HAKMEM_PURGE_DELAY=1 \
        "$H" config 2>"$W/err")
  printf '%s\n' "$out" | grep -q '^HAKMEM_PROFILE  *lowmem  *(set; default balanced)' || fail "config: lowmem profile"
  printf '%s\n' "$out" | grep -q '^HAKMEM_SS_CACHE  *3  *(set; default 4)' || fail "config: set knob: $out"
  printf '%s\n' "$out" | grep -q '^HAKMEM_PURGE_DELAY_MS  *10  *(default)' || fail "config: lowmem default"
  printf '%s\n' "$out" | grep -q '^HAKMEM_VERBOSE  *1  *(set; default 0)' || fail "config: the caller's verbose"
  printf '%s\n' "$out" | grep -q '^HAKMEM_CARVE_KB  *4  *(default: the value given is invalid)' || fail "config: invalid value"
  grep -q 'unknown variable HAKMEM_PURGE_DELAY (did you mean HAKMEM_PURGE_DELAY_MS?)' "$W/err" ||
    fail "config: the unknown-name warning is not on stderr"
  grep -q 'HAKMEM_CARVE_KB="999"' "$W/err" || fail "config: the bad-value warning is not on stderr"
  # a hard limit alone: the soft limit in force is three quarters of it, not 0
  out=$(env HAKMEM_MEMORY_LIMIT=1G "$H" config 2>"$W/err")
  printf '%s\n' "$out" | grep -q '^# memory limit in force: 1073741824 bytes (soft 805306368, three quarters of the hard limit) from knob' ||
    fail "config: the soft limit of a hard limit alone: $(printf '%s\n' "$out" | grep 'limit in force')"
  HAKMEM_LIB=$W/nope.so "$H" config >/dev/null 2>&1 && fail "config with a missing library succeeded"
  case_config_probe
  [ $fails = 0 ] && ok "hakmem config lists every knob, default or set"
}

# The probe of `hakmem config` and `hakmem version` runs a program under the
# library in the caller's environment: with the knobs that write (a report,
# a timeline, a profile) it must write nothing where the caller can see,
# and config must still show those knobs as the caller set them: each row
# exactly as the library prints it for a program started there.
case_config_probe() {
  local d=$W/probe envs n row lib_rows cfg
  for envs in "HAKMEM_PROF=1" "HAKMEM_PROF=1 HAKMEM_PROF_FILE=mine.heap HAKMEM_PROF_LEAKS=1 HAKMEM_PROF_INTERVAL=1" \
              "HAKMEM_STATS=1" "HAKMEM_STATS=json HAKMEM_STATS_FILE=mine.jsonl" \
              "HAKMEM_STATS=1 HAKMEM_STATS_FILE=$W/probe-abs-%p.txt HAKMEM_STATS_INTERVAL=1" \
              "HAKMEM_STATS=text HAKMEM_STATS_FILE=" "HAKMEM_STATS=2 HAKMEM_PROF=7"; do
    rm -rf "$d" && mkdir "$d"
    cfg=$(cd "$d" && env $envs "$H" config 2>"$W/probe.err") || fail "config ($envs) exited $?"
    (cd "$d" && env $envs "$H" version >"$W/probe.out" 2>>"$W/probe.err") ||
      fail "version ($envs) exited $?: $(cat "$W/probe.err")"
    [ -z "$(ls -A "$d")" ] || fail "config/version ($envs) left files in the working directory: $(ls -A "$d")"
    ls "$W" | grep -q '^probe-abs' && fail "config/version ($envs) wrote the absolute HAKMEM_STATS_FILE"
    grep -Eq 'statistics|^ *live:|hakmem: prof:' "$W/probe.err" &&
      fail "config/version ($envs) printed a report: $(head -3 "$W/probe.err")"
    grep -q 'hakmem-probe' "$W/probe.err" "$W/probe.out" && fail "config/version ($envs) shows its scratch directory"
    # the rows the library prints for a program started with $envs
    lib_rows=$(cd "$d" && env $envs HAKMEM_VERBOSE=2 LD_PRELOAD="$LIB" "$TRUE" 2>&1 |
               sed -n 's/^hakmem: config: \(HAKMEM_[A-Z_]* \)/\1/p' | grep -v '^HAKMEM_VERBOSE ')
    rm -rf "$d" "$W"/probe-abs-* && mkdir "$d"
    for n in $envs; do
      n=${n%%=*}
      row=$(printf '%s\n' "$cfg" | grep "^$n ")
      [ -n "$row" ] && [ "$row" = "$(printf '%s\n' "$lib_rows" | grep "^$n ")" ] ||
        fail "config ($envs): row '$row', the library's '$(printf '%s\n' "$lib_rows" | grep "^$n ")'"
    done
    [ "$(printf '%s\n' "$cfg" | grep '^HAKMEM_' | grep -v '^HAKMEM_VERBOSE ')" = "$lib_rows" ] ||
      fail "config ($envs) differs from the library's rows: $(diff <(printf '%s\n' "$cfg" | grep '^HAKMEM_' | grep -v '^HAKMEM_VERBOSE ') <(echo "$lib_rows") | grep '^[<>]' | head -4)"
  done
  # a value too long for the library is cut as the library cuts it
  local long
  long=$(printf 'x%.0s' $(seq 600))
  cfg=$(cd "$d" && HAKMEM_STATS_FILE=$long "$H" config 2>/dev/null | grep '^HAKMEM_STATS_FILE ')
  [ "$cfg" = "$(cd "$d" && HAKMEM_STATS_FILE=$long HAKMEM_VERBOSE=2 LD_PRELOAD="$LIB" "$TRUE" 2>&1 |
                sed -n 's/^hakmem: config: \(HAKMEM_STATS_FILE \)/\1/p')" ] || fail "a 600-byte HAKMEM_STATS_FILE: '$cfg'"
}

case_stats_file() {
  local err pid f
  (cd "$W" && env HAKMEM_STATS=1 HAKMEM_STATS_FILE="$W/s-%p-%%.txt" LD_PRELOAD="$LIB" sh -c 'echo $$ > pid; exec '"$TRUE")
  pid=$(cat "$W/pid")
  [ -s "$W/s-$pid-%.txt" ] || fail "no $W/s-$pid-%.txt: $(ls "$W")"
  ls "$W" | grep -q 's-%p' && fail "a file named with a literal %p"
  grep -q "^hakmem .* statistics (pid $pid)" "$W/s-$pid-%.txt" || fail "the report is not this process's"
  # two processes: two files
  (cd "$W" && env HAKMEM_STATS=json HAKMEM_STATS_FILE="$W/j-%p.json" LD_PRELOAD="$LIB" sh -c "$TRUE; $TRUE")
  [ "$(ls "$W"/j-*.json | wc -l)" -ge 2 ] || fail "one file per process: $(ls "$W")"
  # a fork child with a timeline writes its own file (it reopens under its pid)
  mkdir "$W/fk"
  (cd "$W/fk" && env HAKMEM_STATS=json HAKMEM_STATS_INTERVAL=1 HAKMEM_STATS_FILE="$W/fk/f-%p.jsonl" \
     LD_PRELOAD="$LIB" "$PY" -c '
import os, sys
x = [bytearray(100) for _ in range(10000)]
pid = os.fork()
if pid == 0:
    y = [bytearray(200) for _ in range(100000)]
    sys.exit(0)
os.waitpid(pid, 0)')
  [ "$(ls "$W/fk" | wc -l)" = 2 ] || fail "fork: expected two timeline files: $(ls "$W/fk")"
  for f in "$W"/fk/f-*.jsonl; do
    python3 -c 'import json, sys, os
pids = set(json.loads(l)["pid"] for l in open(sys.argv[1]))
want = int(os.path.basename(sys.argv[1])[2:-6])
assert pids == {want}, (sys.argv[1], pids)' "$f" || fail "fork: $f holds another process's lines"
  done
  # unwritable: one line naming the path and the error, then the fallback
  err=$(cd "$W" && env HAKMEM_STATS=1 HAKMEM_STATS_FILE="$W/no/such/dir/x-%p" LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -q "^hakmem: cannot open HAKMEM_STATS_FILE $W/no/such/dir/x-[0-9]*: No such file or directory; the report on stderr" ||
    fail "unwritable path: '$err'"
  printf '%s\n' "$err" | grep -q '^hakmem .* statistics' || fail "no fallback report on stderr"
  [ "$(printf '%s\n' "$err" | grep -c 'cannot open')" = 1 ] || fail "not one line"
  # with a timeline too (a directory: root may open anything else): still one line
  err=$(cd "$W" && env HAKMEM_STATS=1 HAKMEM_STATS_INTERVAL=1 HAKMEM_STATS_FILE="$W" LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  [ "$(printf '%s\n' "$err" | grep -c "^hakmem: cannot open HAKMEM_STATS_FILE $W: Is a directory; no timeline")" = 1 ] ||
    fail "timeline on an unwritable path: '$err'"
  [ "$(printf '%s\n' "$err" | grep -c 'cannot open')" = 1 ] || fail "timeline: not one line: '$err'"
  # a timeline without a file to go to: one warning saying so, no file
  mkdir "$W/iv"
  err=$(cd "$W/iv" && env HAKMEM_STATS_INTERVAL=1 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  [ "$err" = "hakmem: warning: HAKMEM_STATS_INTERVAL=1 without HAKMEM_STATS_FILE: no timeline is written (set HAKMEM_STATS_FILE to a path)" ] ||
    fail "HAKMEM_STATS_INTERVAL without HAKMEM_STATS_FILE: '$err'"
  [ -z "$(ls -A "$W/iv")" ] || fail "HAKMEM_STATS_INTERVAL without a file wrote $(ls -A "$W/iv")"
  # a text report with a timeline: the report after the timeline, in its
  # file, not on stderr (hakmem stats -o F -i MS, no --json)
  mkdir "$W/tt"
  "$H" stats -o "$W/tt/F" -i 1 -- "$PY" -c 'import time; time.sleep(0.05)' 2>"$W/tt/err" ||
    fail "hakmem stats -o F -i 1 exited $?"
  grep -q 'statistics' "$W/tt/err" && fail "stats -o F -i: the text report went to stderr"
  grep -q '^{' "$W/tt/F" 2>/dev/null || fail "stats -o F -i: no timeline in F"
  tail -n +2 "$W/tt/F" | grep -q "^hakmem .* statistics (pid " || fail "stats -o F -i: no text report after the timeline in F"
  [ "$(grep -c statistics "$W/tt/F")" = 1 ] || fail "stats -o F -i: not one report in F"
  # -o FILE is where the command was typed, whatever the program's working
  # directory at exit; and the launcher does not force HAKMEM_VERBOSE on it
  mkdir -p "$W/rel/sub"
  (cd "$W/rel" && env -u HAKMEM_VERBOSE "$H" stats -o rel.txt -- "$PY" -c 'import os; os.chdir("sub")' 2>"$W/rel/err") ||
    fail "hakmem stats -o rel.txt exited $?"
  [ -s "$W/rel/rel.txt" ] || fail "stats -o rel.txt: not in the directory it was typed in: $(ls -R "$W/rel")"
  [ -e "$W/rel/sub/rel.txt" ] && fail "stats -o rel.txt: written in the program's directory"
  grep -q 'hakmem: active' "$W/rel/err" && fail "stats: HAKMEM_VERBOSE forced on: $(cat "$W/rel/err")"
  # prof of a program that allocates too little to be sampled says so
  err=$(cd "$W" && HAKMEM_LIB="$LIB" HAKMEM_PROF_DIR="$W/pr" "$H" prof -- "$TRUE" 2>&1 >/dev/null)
  printf '%s\n' "$err" | grep -q 'no allocation was sampled.*HAKMEM_PROF_SAMPLE' ||
    fail "prof of a program with nothing sampled: no hint: '$err'"
  [ $fails = 0 ] && ok "%p and %% expanded; unwritable path reported, report on stderr; text report in the timeline's file; -o relative to the caller; prof's empty-profile hint; an interval without a file warned about"
}

case_stats_json() {
  local f=$W/t.jsonl
  (cd "$W" && env HAKMEM_STATS=json HAKMEM_STATS_INTERVAL=1 HAKMEM_STATS_FILE="$f" HAKMEM_SS_CACHE=7 \
     LD_PRELOAD="$LIB" "$PY" -c '
import time
t = time.time(); x = []
while time.time() - t < 0.3: x = [bytearray(i % 3000) for i in range(3000)]')
  (cd "$W" && env HAKMEM_STATS=json HAKMEM_STATS_FILE="$f" LD_PRELOAD="$LIB" "$TRUE")
  python3 - "$f" <<'EOF' || fail "JSON Lines check"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 3, "expected a timeline and two exit reports, got %d lines" % len(lines)
pids = set()
for i, l in enumerate(lines):
    r = json.loads(l)            # each line one object: JSON Lines
    assert r["schema"] == 1, r.get("schema")
    assert r["profile"] == "balanced", r["profile"]
    assert isinstance(r["knobs"], dict)
    assert "hakmem" in r and "classes" in r and "pid" in r
    pids.add(r["pid"])
assert len(pids) == 2, pids
first = json.loads(lines[0])
assert first["knobs"].get("HAKMEM_SS_CACHE") == 7, first["knobs"]
assert first["knobs"].get("HAKMEM_STATS") == "json", first["knobs"]
assert "HAKMEM_PURGE_DELAY_MS" not in first["knobs"]       # only what differs
for l in lines:
    r = json.loads(l)
    # mapped is address space: committed (what holds memory) and reserved apart
    assert r["committed"] + r["reserved"] == r["mapped"], (r["committed"], r["reserved"], r["mapped"])
    assert 0 <= r["committed"] <= r["peak_committed"], (r["committed"], r["peak_committed"])
assert first["committed"] > 0, first      # python3 allocated
last = json.loads(lines[-1])
assert "HAKMEM_SS_CACHE" not in last["knobs"], last["knobs"]
EOF
  # the text report's config line
  local err
  err=$(cd "$W" && env HAKMEM_STATS=1 HAKMEM_CARVE_KB=8 LD_PRELOAD="$LIB" "$TRUE" 2>&1)
  printf '%s\n' "$err" | grep -qx '  config: profile balanced; HAKMEM_STATS=1, HAKMEM_CARVE_KB=8' ||
    fail "text report config line: '$err'"
  # one large block maps a 1 GiB span arena: the text says what of mapped is
  # memory and what is only reserved, and the numbers add up
  err=$(cd "$W" && env HAKMEM_STATS=1 LD_PRELOAD="$LIB" "$PY" -c 'x = bytearray(1 << 20)' 2>&1)
  local c m r
  c=$(printf '%s\n' "$err" | sed -n 's/^  live: .*   committed: \([0-9]*\) bytes (peak [0-9]*)   RSS: .*/\1/p')
  m=$(printf '%s\n' "$err" | sed -n 's/^  address space: \([0-9]*\) bytes mapped (peak [0-9]*), [0-9]* of them reserved, not memory$/\1/p')
  r=$(printf '%s\n' "$err" | sed -n 's/^  address space: [0-9]* bytes mapped (peak [0-9]*), \([0-9]*\) of them reserved, not memory$/\1/p')
  if [ -n "$c" ] && [ -n "$m" ] && [ -n "$r" ]; then
    [ $((c + r)) = "$m" ] || fail "text report: committed $c + reserved $r is not mapped $m"
    [ "$m" -ge $((1 << 30)) ] && [ "$c" -lt $((256 << 20)) ] ||
      fail "text report: a 1 MiB block should map an arena (mapped $m) and commit little (committed $c)"
  else
    fail "text report: no committed / address space lines: '$(printf '%s\n' "$err" | sed -n 3,4p)'"
  fi
  # the launcher: stats --json -o FILE, then report FILE
  "$H" stats --json -o "$W/run-%p.jsonl" -- sort /dev/null || fail "hakmem stats --json -o exited $?"
  local out
  out=$(ls "$W"/run-*.jsonl 2>/dev/null | head -1)
  [ -n "$out" ] || { fail "hakmem stats -o: no file"; return; }
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["schema"] == 1' "$out" ||
    fail "hakmem stats --json: not JSON"
  "$H" stats --json -i 5 -o "$W/tl.jsonl" -- "$PY" -c 'import time; time.sleep(0.05); x=[bytearray(99) for _ in range(99999)]' ||
    fail "hakmem stats -i exited $?"
  "$H" report "$W/tl.jsonl" -o "$W/tl.html" >/dev/null 2>"$W/rep.err" || fail "hakmem report: $(cat "$W/rep.err")"
  grep -q '<svg' "$W/tl.html" 2>/dev/null || fail "hakmem report wrote no page"
  grep -q "Configuration</div><div class='v'>balanced</div><div class='n'>[^<]*HAKMEM_STATS_INTERVAL=5" "$W/tl.html" ||
    fail "the page does not show the configuration"
  # nothing to report: exit non-zero with a message, no empty page
  : > "$W/empty.jsonl"
  echo 'not a record' > "$W/bad.jsonl"
  local f
  for f in empty bad; do
    "$H" report "$W/$f.jsonl" -o "$W/$f.html" >/dev/null 2>"$W/rep.err" && fail "hakmem report of the $f file exited 0"
    grep -q 'no snapshots' "$W/rep.err" || fail "hakmem report of the $f file said: $(cat "$W/rep.err")"
    [ -e "$W/$f.html" ] && fail "hakmem report of the $f file wrote a page"
  done
  [ $fails = 0 ] && ok "JSON Lines with schema, profile, knobs; text config line; stats -o and report"
}

# expect_help NAME CMD...: exit 0, the usage on stdout naming NAME, stderr empty
expect_help() {
  local name=$1 out rc
  shift
  out=$("$@" 2>"$W/help.err" </dev/null)
  rc=$?
  [ $rc = 0 ] || { fail "$* : exit $rc"; return; }
  [ -n "$out" ] || fail "$* : no usage on stdout"
  printf '%s\n' "$out" | grep -q "$name" || fail "$* : the usage does not name $name"
  [ -s "$W/help.err" ] && fail "$* : wrote to stderr: $(head -2 "$W/help.err")"
}
# expect_bad CMD...: exit 2, a usage on stdout or stderr
expect_bad() {
  local out rc
  out=$("$@" 2>&1 </dev/null)
  rc=$?
  [ $rc = 2 ] || { fail "$* : exit $rc, not 2"; return; }
  printf '%s\n' "$out" | grep -qi "usage" || fail "$* : no usage printed"
}

case_help() {
  local v p name out h
  expect_help hakmem "$H" --help
  expect_help hakmem "$H" help
  for v in run stats config prof report version lib help; do
    expect_help "hakmem $v" "$H" "$v" --help
    expect_help "hakmem $v" "$H" help "$v"
  done
  expect_bad "$H" nosuchverb
  expect_bad "$H" help nosuchverb
  expect_bad "$H" run --bogus true
  expect_bad "$H" run
  expect_bad "$H" stats --bogus true
  expect_bad "$H" stats -o
  expect_bad "$H" stats -i x -o f true
  expect_bad "$H" stats -i 5 true
  expect_bad "$H" stats -i 86400001 -o f true
  expect_help hakmem-report "$H" report --help
  expect_bad "$H" config --bogus
  expect_bad "$H" report
  expect_bad "$H" version --bogus
  # the loaded library's version, and the commit a checkout's build is from
  out=$("$H" version 2>&1) || fail "hakmem version exited $?"
  v=$(printf '%s\n' "$out" | sed -n 's/^library version: //p')
  if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    h=$(git -C "$ROOT" rev-parse --short=7 HEAD)
    case $v in
      *+git.$h|*+git.$h.modified) ;;
      *) fail "hakmem version: the library's version '$v' does not name HEAD ($h): $out" ;;
    esac
  else
    [ -n "$v" ] || fail "hakmem version: no library version: $out"
  fi
  expect_bad "$H" lib --bogus
  expect_bad "$H" run --json true
  expect_bad "$H" prof
  expect_bad "$H" prof --
  expect_bad "$H" prof --secure -- true
  expect_bad "$H" prof -o x true
  expect_bad "$H" prof --bogus true
  # hakmem-report (argparse)
  expect_help hakmem-report python3 "$ROOT/tools/hakmem-report" --help
  expect_bad python3 "$ROOT/tools/hakmem-report" --bogus
  # the benchmark programs: every bench/*.c that builds a program
  for p in "$ROOT"/bench/*.c; do
    name=$(basename "$p" .c)
    [ "$name" = probe ] && continue      # the preload probe is a library
    [ -x "$B/bench/$name" ] || { fail "no $B/bench/$name"; continue; }
    expect_help "$name" "$B/bench/$name" --help
    expect_help "$name" "$B/bench/$name" -h
    expect_bad "$B/bench/$name" 1 2 3 4 5 6 7 8 9 10 11 12
    expect_bad "$B/bench/$name" notanumber
  done
  # and the scripts
  for p in "$ROOT"/bench/*.sh; do
    name=$(basename "$p")
    expect_help "$name" bash "$p" --help
    expect_bad bash "$p" --no-such-option
  done
  # bench_selftest.sh --help does not run the self-test: it prints no ok/FAIL line
  # and makes no harness run (the harness writes into a temporary directory
  # it names: nothing in our own)
  local out
  out=$(cd "$W" && BENCH_BUILD=$W/none bash "$ROOT/tests/repo/bench_selftest.sh" --help 2>&1)
  printf '%s\n' "$out" | grep -qE '^(ok|FAIL) +- ' && fail "bench_selftest.sh --help ran checks"
  case_help_programs
  [ $fails = 0 ] && ok "every verb, hakmem-report, every bench program and script: --help and bad arguments"
}

# expect_exit STATUS PATTERN CMD...: exits STATUS and says PATTERN on stderr
expect_exit() {
  local want=$1 pat=$2 err rc
  shift 2
  err=$("$@" 2>&1 >/dev/null </dev/null)
  rc=$?
  [ $rc = "$want" ] || { fail "$* : exit $rc, not $want: $err"; return; }
  printf '%s\n' "$err" | grep -q -- "$pat" || fail "$* : said '$err', not /$pat/"
}

# run, stats and prof: the exit status of a program that cannot run, and a
# warning for one that runs but cannot have hakmem preloaded
case_help_programs() {
  local v d=$W/progs
  mkdir -p "$d/dir" && echo 'not a program' > "$d/text" && chmod 644 "$d/text"
  for v in run stats prof; do
    expect_exit 126 "not executable" "$H" $v -- "$d/text"
    expect_exit 126 "is a directory" "$H" $v -- "$d/dir"
    expect_exit 127 "no such file" "$H" $v -- "$d/missing"
    expect_exit 127 "command not found" "$H" $v -- no-such-program-hk
  done
  (cd "$d" && "$H" prof -- sh -c 'exit 5' >/dev/null 2>&1); v=$?
  [ $v = 5 ] || fail "prof: a program's status 5 came back as $v"
  [ -z "$(ls "$d" | grep -v '^dir$\|^text$\|^hakmem-prof')" ] || fail "prof: stray files: $(ls "$d")"
  # a static program: said, and its status passed on
  local cc st
  cc=$(type -P cc gcc | head -1)
  if [ -n "$cc" ] && printf 'int main(void) { return 3; }\n' > "$d/st.c" &&
     "$cc" -static -o "$d/st" "$d/st.c" 2>/dev/null && "$cc" -o "$d/dyn" "$d/st.c"; then
    for v in run stats; do
      st=$(HAKMEM_VERBOSE=1 "$H" $v -- "$d/st" 2>&1); local rc=$?
      [ $rc = 3 ] || fail "$v -- static: exit $rc, not 3"
      printf '%s\n' "$st" | grep -q "hakmem: warning: $d/st is statically linked.*runs without hakmem" ||
        fail "$v -- static program: no warning: '$st'"
      printf '%s\n' "$st" | grep -q 'hakmem: active' && fail "$v -- static program: it ran on hakmem after all?"
      st=$(HAKMEM_VERBOSE=1 "$H" $v -- "$d/dyn" 2>&1)
      printf '%s\n' "$st" | grep -q 'warning' && fail "$v -- dynamic program: warned: '$st'"
      printf '%s\n' "$st" | grep -q 'hakmem: active' || fail "$v -- dynamic program: not on hakmem: '$st'"
    done
    st=$(cd "$d" && "$H" prof -- "$d/st" 2>&1)
    printf '%s\n' "$st" | grep -q "statically linked" || fail "prof -- static: no warning: '$st'"
  else
    echo "note: no static C program could be built here; the static-program check is skipped"
  fi
  # set-user-ID to another user: the dynamic linker ignores the preload
  if [ "$(id -u)" = 0 ] && cp "$TRUE" "$d/suid" && chown 65534 "$d/suid" 2>/dev/null && chmod 4755 "$d/suid"; then
    st=$("$H" run -- "$d/suid" 2>&1) || fail "run -- set-user-ID true failed: $st"
    printf '%s\n' "$st" | grep -q "set-user-ID.*runs without hakmem" || fail "run -- set-user-ID: no warning: '$st'"
  fi
  st=$("$H" run -- "$TRUE" 2>&1)
  [ -z "$st" ] || fail "run -- true printed '$st'"
}

case_docs() {
  local doc=$ROOT/docs/ENV_VARS.md man=$ROOT/docs/hakmem.1 n
  [ -f "$man" ] || { fail "no docs/hakmem.1"; return; }
  # the knob tables of ENV_VARS.md: rows "| `HAKMEM_X` |"
  local in_doc in_man in_code
  in_code=$(all_knobs | sort -u)
  # (the knob tables: everything before the list of names that are not knobs)
  in_doc=$(sed '/^## Variables that are not knobs/q' "$doc" | sed -n 's/^| `\(HAKMEM_[A-Z0-9_]*\)` |.*/\1/p' | sort -u)
  in_man=$(sed -n '/^\.SH KNOBS/,/^\.SH [^K]/p' "$man" | sed -n 's/^\.B \(HAKMEM_[A-Z0-9_]*\)$/\1/p' | sort -u)
  [ "$in_code" = "$in_doc" ] || fail "ENV_VARS.md knob rows differ from src/base/knobs.c: $(diff <(echo "$in_code") <(echo "$in_doc") | grep '^[<>]' | tr '\n' ' ')"
  [ "$in_code" = "$in_man" ] || fail "hakmem.1 KNOBS differ from src/base/knobs.c: $(diff <(echo "$in_code") <(echo "$in_man") | grep '^[<>]' | tr '\n' ' ')"
  # defaults and ranges of the number and size rows, in both
  local line name lo hi f b l kind when rt nums=0
  while read -r name lo hi f b l; do
    nums=$((nums + 1))
    grep -q "^| \`$name\` | $f | $b | $l | $lo – $hi |" "$doc" ||
      fail "ENV_VARS.md: $name is not '| $f | $b | $l | $lo – $hi |'"
    sed -n "/^\.B $name\$/,/^\.TP/p" "$man" | grep -q "fast $f, balanced $b, lowmem $l; range $lo to $hi" ||
      fail "hakmem.1: $name is not 'fast $f, balanced $b, lowmem $l; range $lo to $hi'"
  done < <(sed -n 's/^ *\(NUMBER\|SIZE\)("\(HAKMEM_[A-Z0-9_]*\)", *[a-z_]*, *[A-Z]*([A-Z_]*), *\([0-9]*\), *\([0-9]*\), *\([0-9]*\), *\([0-9]*\), *\([0-9]*\)).*/\2 \3 \4 \5 \6 \7/p' "$ROOT/src/base/knobs.c")
  [ "$nums" = "$(knob_rows | grep -c '^\(NUMBER\|SIZE\) ')" ] ||
    fail "only $nums number and size rows of src/base/knobs.c read: a row the pattern above misses"
  # each row's kind and whether it may change at run time: ENV_VARS.md's
  # kind and run time columns, hakmem.1's Kind line
  while read -r kind name when; do
    kind=$(echo "$kind" | tr 'A-Z' 'a-z')
    [ "$when" = RUN ] && rt=yes || rt=no
    line=$(awk -F' [|] ' -v n="| \`$name\`" '$1 == n && NF >= 10 { print $7 " " $8 }' "$doc")
    [ "$line" = "$kind $rt" ] || fail "ENV_VARS.md: $name's kind and run time are '$line', not '$kind $rt'"
    [ "$rt" = yes ] && rt='may change at run time' || rt='read at start-up'
    sed -n "/^\.B $name\$/,/^\.TP/p" "$man" | grep -qx "Kind: $kind; $rt\." ||
      fail "hakmem.1: $name has no line 'Kind: $kind; $rt.'"
  done < <(knob_rows)
  # each row's "since" column (after run time): a release no later than
  # CMakeLists.txt's version, or "after V" for a knob no release has yet,
  # where V is that version (so a release must rename it); a later "(`word`
  # after V)" dates a keyword. hakmem.1 says the same: "Since: CELL."
  local ver since rest v mline
  ver=$(sed -n 's/^project(hakmem VERSION \([0-9.]*\) .*/\1/p' "$ROOT/CMakeLists.txt")
  [ -n "$ver" ] || fail "CMakeLists.txt: no project(hakmem VERSION ...)"
  for name in $(all_knobs); do
    since=$(awk -F' [|] ' -v n="| \`$name\`" '$1 == n && NF >= 10 { print $9 }' "$doc")
    if [[ "$since" =~ ^([0-9]+\.[0-9]+\.[0-9]+)(.*)$ ]]; then
      v=${BASH_REMATCH[1]}; rest=${BASH_REMATCH[2]}
      [ "$(printf '%s\n%s\n' "$v" "$ver" | sort -V | head -1)" = "$v" ] ||
        fail "ENV_VARS.md: $name since $v, after the version $ver"
    elif [[ "$since" =~ ^after\ ([0-9.]+)(.*)$ ]]; then
      v=${BASH_REMATCH[1]}; rest=${BASH_REMATCH[2]}
      [ "$v" = "$ver" ] || fail "ENV_VARS.md: $name is 'after $v', but the version is $ver (a release names its version)"
    else
      fail "ENV_VARS.md: $name's since column is '$since', not a version or 'after VERSION'"; continue
    fi
    if [ -n "$rest" ]; then
      [[ "$rest" =~ ^\ \(\`[a-z]+\`\ after\ ([0-9.]+)\)$ ]] && [ "${BASH_REMATCH[1]}" = "$ver" ] ||
        fail "ENV_VARS.md: $name's since column '$since' is not 'X.Y.Z (\`word\` after $ver)'"
    fi
    mline="Since: $(printf '%s' "$since" | sed 's/`\([^`]*\)`/\\fB\1\\fR/g')."
    sed -n "/^\.B $name\$/,/^\.TP/p" "$man" | grep -qxF "$mline" || fail "hakmem.1: $name has no line '$mline'"
  done
  # the lists of the knobs settable at run time: ENV_VARS.md's table of why,
  # hakmem.1's hak_ctl_set
  local run_code run_doc run_man
  run_code=$(knob_rows | awk '$3 == "RUN" { print $2 }' | sort)
  run_doc=$(sed -n '/^## Changing knobs at run time/,/^#/p' "$doc" | grep '^| `HAKMEM_' | cut -d'|' -f2 |
    grep -o 'HAKMEM_[A-Z0-9_]*' | sort)
  run_man=$(sed -n '/^\.BI "int hak_ctl_set/,/^\.TP/p' "$man" | grep -o '\\fB[A-Z_]*\\fR' |
    sed 's/\\f[BR]//g; s/^/HAKMEM_/' | sort)
  [ "$run_code" = "$run_doc" ] || fail "ENV_VARS.md's run-time table: $(echo $run_doc), not $(echo $run_code)"
  [ "$run_code" = "$run_man" ] || fail "hakmem.1's hak_ctl_set list: $(echo $run_man), not $(echo $run_code)"
  # the non-knob names: the library's list, ENV_VARS.md's and the man page's
  local lib_nk doc_nk man_nk
  lib_nk=$( (non_knob_names; echo 'HAKMEM_TEST_*') | sort -u)
  doc_nk=$(sed -n '/^## Variables that are not knobs/,/^## /p' "$doc" | sed -n 's/^| `\(HAKMEM_[A-Z0-9_*]*\)` |.*/\1/p' | sort -u)
  man_nk=$(sed -n '/^\.SS Variables that are not knobs/,/^\.S[SH] [^V]/p' "$man" | sed -n 's/^\.B \(HAKMEM_[A-Z0-9_*]*\)$/\1/p' | sort -u)
  [ "$lib_nk" = "$doc_nk" ] || fail "ENV_VARS.md non-knob list differs from src/base/knobs.c: $(echo $doc_nk) vs $(echo $lib_nk)"
  [ "$lib_nk" = "$man_nk" ] || fail "hakmem.1 non-knob list differs from src/base/knobs.c: $(echo $man_nk) vs $(echo $lib_nk)"
  # every verb of the launcher's usage is in SYNOPSIS and COMMANDS, and every
  # one but help in EXIT STATUS
  local verbs v sect
  verbs=$("$H" help | sed -n 's/^  hakmem \([a-z]*\) .*/\1/p; s/^  hakmem \([a-z]*\)$/\1/p' | sort -u)
  [ "$(echo $verbs | wc -w)" -ge 8 ] || fail "hakmem help lists too few verbs: $(echo $verbs)"
  for v in $verbs; do
    sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$man" | grep -q "^\.B hakmem $v\$" || fail "hakmem.1 SYNOPSIS: no hakmem $v"
    sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$man" | grep -A1 '^\.TP' | grep -Eq "^\.B[RI]? \"?$v( |\"|\$)" ||
      fail "hakmem.1 COMMANDS: no $v"
    [ "$v" = help ] && continue
    sed -n '/^\.SH "EXIT STATUS"/,/^\.SH /p' "$man" | grep -Eq "^\.BR? $v( ,)?\$" || fail "hakmem.1 EXIT STATUS: no $v"
  done
  # HAKMEM_LINK: the docs give the spellings examples/rust/build.rs names in
  # its error message, and build.rs accepts each of them
  local rs=$ROOT/examples/rust/build.rs spell accepted
  spell=$(sed -n 's/.*panic!("HAKMEM_LINK={other}: use \(.*\)).*/\1/p' "$rs" | grep -o '\\"[a-z]*\\"' | tr -d '\\"')
  accepted=$(grep -E '^ *"[a-z]+"( *\| *"[a-z]+")* *=> *\{' "$rs" | grep -o '"[a-z]*"' | tr -d '"')
  [ "$(echo $spell)" = "static dylib" ] || fail "build.rs's HAKMEM_LINK message names '$(echo $spell)', not static and dylib"
  for n in $spell; do
    printf '%s\n' "$accepted" | grep -qx "$n" || fail "build.rs names HAKMEM_LINK=$n but does not accept it"
    grep '^| `HAKMEM_LINK`' "$doc" | grep -q "\`$n\`" || fail "ENV_VARS.md: HAKMEM_LINK does not give $n"
    sed -n '/^\.B HAKMEM_LINK$/,/^\.TP/p' "$man" | grep -q "\\\\fB$n\\\\fR" || fail "hakmem.1: HAKMEM_LINK does not give $n"
    grep -q "\"HAKMEM_LINK\",.*static or dylib" "$ROOT/src/base/knobs.c" || fail "src/base/knobs.c: HAKMEM_LINK's comment is not 'static or dylib'"
    grep -q "HAKMEM_LINK=$n" "$ROOT/docs/RUST.md" || fail "RUST.md does not show HAKMEM_LINK=$n"
  done
  # the man page has its sections and is well-formed roff
  for n in NAME SYNOPSIS DESCRIPTION COMMANDS KNOBS "CONTROL API" FILES "SEE ALSO"; do
    grep -q "^\.SH \"\?$n\"\?\$" "$man" || fail "hakmem.1: no section $n"
  done
  if command -v groff >/dev/null 2>&1; then
    local warn
    warn=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
    [ -z "$warn" ] || fail "groff warns: $warn"
  fi
  [ $fails = 0 ] && ok "ENV_VARS.md and hakmem.1 agree with src/base/knobs.c"
}

case_man_install() {
  cmake --install "$B" --prefix "$W/prefix" >"$W/install.log" 2>&1 || { fail "install: $(tail -3 "$W/install.log")"; return; }
  local m=$W/prefix/share/man/man1/hakmem.1
  [ -f "$m" ] || { fail "no $m"; return; }
  head -5 "$m" | grep -q '^\.TH HAKMEM 1' || fail "$m: no .TH header"
  if command -v man >/dev/null 2>&1; then
    MANPATH=$W/prefix/share/man man hakmem 2>/dev/null | grep -q 'HAKMEM_PURGE_DELAY_MS' ||
      man -l "$m" 2>/dev/null | grep -q 'HAKMEM_PURGE_DELAY_MS' || echo "note: man could not render it here"
  fi
  # the installed launcher finds it documented: hakmem help names man hakmem
  "$W/prefix/bin/hakmem" help | grep -q 'man hakmem' || fail "installed hakmem help does not point at man hakmem"
  [ $fails = 0 ] && ok "man page installed under share/man/man1"
}

if ! declare -F "case_$CASE" >/dev/null; then
  echo "cli.sh: no case '$CASE'" >&2
  exit 2
fi
"case_$CASE"
[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
