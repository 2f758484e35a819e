#!/usr/bin/env bash
# attack.sh LIB PROGDIR EXPECT PATTERN ENV PROG [ARGS...]
#
# Runs one attack program of tests/security/ (built by CMake into
# BUILD/security/) under LD_PRELOAD=LIB and checks what happened. One line of
# attacks.txt is one call; ctest runs one per line and build.
#
#   EXPECT   abort: SIGABRT;  trap: SIGABRT, SIGILL or SIGTRAP (a corrupted free
#            list traps when HAKMEM_ABORT_ON_INVALID=0);  segv: SIGSEGV (guard
#            pages: the program's handler, tests/security/common.h, must say
#            the fault address is in a PROT_NONE mapping);  these need
#            PATTERN's report line on stderr.
#            caught: abort with PATTERN's line, or a SIGSEGV in a guard (as
#            segv, no line needed).
#            ok: exit 0 and no "hakmem:" line on stderr.
#            report: exit 0 and PATTERN's line (HAKMEM_ABORT_ON_INVALID=0).
#   PATTERN  a name below (the "hakmem: invalid ..." line expected; COPY and
#            COPY_READ: "hakmem: heap overflow in memcpy(...)", measure copy;
#            ANY: any of them, for a known gap whose catch may come from
#            any check), or -
#   ENV      VAR=VALUE[,VAR=VALUE] for the program, or -
# Prints what happened in one line; exits 0 when it was what EXPECT says.
set -u
if [ $# -lt 6 ]; then
  echo "usage: $0 LIB PROGDIR EXPECT PATTERN ENV PROG [ARGS...]" >&2
  exit 2
fi
lib=$1 dir=$2 expect=$3 pattern=$4 envs=$5 prog=$6
shift 6
unset LD_PRELOAD HAKMEM_FREE_FILL HAKMEM_ABORT_ON_INVALID HAKMEM_VERBOSE HAKMEM_STATS HAKMEM_SECURITY_PEER
# the guarded sampler (on by default: docs/SECURITY.md) is random: an
# attack's victim block, sampled, would change the line's outcome now and
# then; the lines are about the checks every block gets (the sampler's own
# catches: tests/api/test_guarded.c). A line's ENV may turn it on.
export HAKMEM_GUARDED_RATE=0
ulimit -c 0  # the attacks abort: no core files

HEX='0x[0-9a-f]+'
INTERIOR="invalid free\\($HEX\\): not the start of a hakmem block"
MISALIGNED="$INTERIOR \\(interior or misaligned\\)"
# a debug build checks every free first with hk_debug_check_free, whose
# reason for an interior or misaligned pointer is "not a live hakmem block"
# (few processes per call: matrix.sh makes ~2400 of them; ATTACK_DEBUG=0/1,
# when the caller knows whether LIB is a debug build, saves the grep)
if [ "${ATTACK_DEBUG:-}" = 1 ] ||
   { [ -z "${ATTACK_DEBUG:-}" ] && grep -q '^HAKMEM_DEBUG:BOOL=ON' "${lib%/*}/CMakeCache.txt" 2>/dev/null; }; then
  MISALIGNED="invalid free\\($HEX\\): (not the start of a hakmem block \\(interior or misaligned\\)|not a live hakmem block)"
fi
case $pattern in
  -)              regex=- ;;
  DF)             regex="invalid free\\($HEX\\): block already freed \\(double free\\)" ;;
  FOREIGN)        regex="invalid free\\($HEX\\): not allocated by hakmem" ;;
  INTERIOR)       regex=$INTERIOR ;;
  MISALIGNED)     regex=$MISALIGNED ;;
  METADATA)       regex="invalid free\\($HEX\\): (not the start of a hakmem block|not a live hakmem block)" ;;
  OVERFLOW)       regex="invalid free\\($HEX\\): heap overflow" ;;
  UAF)            regex="invalid malloc\\($HEX\\): block was written after it was freed" ;;
  UNDERFLOW)      regex="invalid free\\($HEX\\): heap underflow" ;;
  SIZED)          regex="invalid free\\($HEX\\): sized delete/free_sized with a size" ;;
  FREE_ANY)       regex="invalid free\\($HEX\\): " ;;
  MALLOC_ANY)     regex="invalid malloc\\($HEX\\): " ;;
  LIST)           regex="invalid malloc\\($HEX\\): free list corrupted" ;;
  REALLOC_FOREIGN) regex="invalid realloc\\($HEX\\): not allocated by hakmem" ;;
  REALLOC_FREED)  regex="invalid (free|realloc)\\($HEX\\): block already freed" ;;
  REALLOC_DF)     regex="invalid realloc\\($HEX\\): block already freed \\(double free\\)" ;;
  DELETE_NEW)     regex="invalid free\\($HEX\\): delete of memory from new\\[\\] \\(use delete\\[\\]\\)" ;;
  DELETE_ARRAY)   regex="invalid free\\($HEX\\): delete\\[\\] of memory from new \\(use delete\\)" ;;
  DELETE_MALLOC)  regex="invalid free\\($HEX\\): delete of memory from malloc \\(use free\\)" ;;
  DELARR_MALLOC)  regex="invalid free\\($HEX\\): delete\\[\\] of memory from malloc \\(use free\\)" ;;
  FREE_NEW)       regex="invalid free\\($HEX\\): free of memory from new \\(use delete\\)" ;;
  FREE_NEW_ARRAY) regex="invalid free\\($HEX\\): free of memory from new\\[\\] \\(use delete\\[\\]\\)" ;;
  COPY)           regex="heap overflow in [a-z_]+\\(dst=$HEX, n=[0-9]+\\): (block $HEX of [0-9]+ bytes|not in a live hakmem block)" ;;
  COPY_READ)      regex="heap over-read in [a-z_]+\\(src=$HEX, n=[0-9]+\\): (block $HEX of [0-9]+ bytes|not in a live hakmem block)" ;;
  ANY)            regex="(invalid [a-z_]+\\($HEX\\): |heap (overflow|over-read) in [a-z_]+\\()" ;;
  *) echo "attack.sh: unknown pattern $pattern" >&2; exit 2 ;;
esac

if [ ! -x "$dir/$prog" ]; then echo "program $dir/$prog not built (run make)"; exit 1; fi
if [ ! -f "$lib" ]; then echo "library $lib not built (run make)"; exit 1; fi
e=()
[ "$envs" != - ] && IFS=, read -r -a e <<<"$envs"
set -o noclobber
err=${TMPDIR:-/tmp}/hakmem-attack.$$.$RANDOM
: >"$err" || exit 2
set +o noclobber
trap 'rm -f "$err"' EXIT
# the braces keep bash's "Aborted"/"Segmentation fault" notes off our output
{ timeout -k 5 30 /usr/bin/env "${e[@]}" LD_PRELOAD="$lib" "$dir/$prog" "$@" >/dev/null 2>"$err"; } 2>/dev/null
rc=$?
# stderr's lines, read by the shell: the first 20 shown, the first
# "hakmem: " line kept
errs=() line=""
while IFS= read -r l || [ -n "$l" ]; do
  errs+=("$l")
  [ -z "$line" ] && [[ $l == "hakmem: "* ]] && line=$l
done <"$err"
for l in "${errs[@]:0:20}"; do echo "  stderr: $l"; done
sig=""
[ $rc -gt 128 ] && sig=$(kill -l $((rc - 128)) 2>/dev/null)
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "timed out"; exit 1; fi
if [ -n "$sig" ]; then result="SIG$sig"; else result="exit $rc"; fi
[ -n "$line" ] && result="$result, $line"
want=$expect
[ "$regex" != - ] && want="$want, /$regex/"
echo "got: $result; expected: $want"
# every report names the caller: the first frame outside libhakmem
called='\(called from 0x[0-9a-f]+: [^)]+\)$'
if [ "$regex" != - ] && [ -n "$line" ] && ! [[ $line =~ $called ]]; then
  echo "the report does not name its caller (called from ADDR: WHERE)"
  exit 1
fi
in_guard() {  # the program's SIGSEGV handler (common.h) found the fault in a PROT_NONE mapping
  local l re='^security test: SIGSEGV at 0x[0-9a-f]+ in a guard'
  for l in "${errs[@]}"; do [[ $l =~ $re ]] && return 0; done
  echo "the fault is not in a guard page"
  return 1
}
case $expect in
  ok)     [ $rc -eq 0 ] && [ -z "$line" ] && exit 0; exit 1 ;;
  report) [ $rc -eq 0 ] || exit 1 ;;
  abort)  [ "$sig" = ABRT ] || exit 1 ;;
  trap)   [ "$sig" = ABRT ] || [ "$sig" = ILL ] || [ "$sig" = TRAP ] || exit 1 ;;
  caught) if [ "$sig" = SEGV ]; then in_guard; exit; fi
          [ "$sig" = ABRT ] || exit 1 ;;
  segv)   [ "$sig" = SEGV ] || exit 1
          in_guard || exit 1 ;;
  *)      echo "attack.sh: unknown expectation $expect" >&2; exit 2 ;;
esac
[ "$regex" = - ] && exit 0
re="^hakmem: $regex"
for l in "${errs[@]}"; do [[ $l =~ $re ]] && exit 0; done
exit 1
