#!/usr/bin/env bash
# peer.sh LIB PROGDIR PROG [ARGS...]
# peer.sh --find-scudo
#
# Runs one attack program of tests/security/ (PROGDIR/PROG, PROGDIR =
# BUILD/security) under LD_PRELOAD of a peer allocator instead of hakmem:
# today scudo, the hardened allocator Android ships (Debian package
# libclang-rt-14-dev: libclang_rt.scudo_standalone-x86_64.so). Information
# for the comparison column of tests/security/by_hand.sh and tests/security/table.sh,
# not a test. Prints one line on stdout, its first word saying what happened:
#
#   caught   a "Scudo ERROR" line (or GWP-ASan's report) on stderr and
#            SIGABRT: the allocator saw it
#   segv     SIGSEGV. Never counted as caught by itself: with gdb installed
#            the program runs again under gdb and the word is followed by
#            where the fault was (and ", GWP-ASan report" when scudo's
#            sampling guard, GWP-ASan, reported it):
#              (guard)     a PROT_NONE mapping of at most 64 KiB next to a
#                          read-write one: a guard page
#              (reserved)  a bigger PROT_NONE mapping: reserved address
#                          space, not a guard put there for this block
#              (NULL)      below 64 KiB: a null pointer (an allocation
#                          that returned NULL)
#              (unmapped)  no mapping at all;  (PERMS) another mapping
#              (?)         gdb saw no SIGSEGV on its run (a second run,
#                          address randomization on as in the first: a
#                          fault that depends on the layout may not recur)
#   missed   the program printed "security test: NOT CAUGHT" (or NOT IGNORED)
#   clean    exit 0 and no "Scudo ERROR" line (a benign program ran fine)
#   n/a      "n/a (hakmem-only test)": exit 3, the program tests hakmem
#            itself (require_hakmem, common.h); "n/a (no free_sized)": the
#            peer has no free_sized (C23) for the program to call
#   error    anything else: "error (exit N)", "error (SIGNAME)", "error
#            (timed out)", a Scudo ERROR without an abort, ...
#
# For segv and error, the command and the program's first stderr line go to
# stderr ("peer.sh: PROG ARGS: ..."). The program runs with
# HAKMEM_SECURITY_PEER=LIB (benign programs check that LIB serves malloc:
# require_allocator, common.h); LD_PRELOAD and the HAKMEM_* knobs of
# attacks.txt are cleared (they are hakmem's); SCUDO_OPTIONS is kept (scudo
# runs with its defaults unless you set it). HAKMEM_TEST_VERBOSE=1 copies the
# program's stderr to stderr. Exit status 0 when a line was printed, 2 on a
# usage error or a missing program or library.
#
# --find-scudo prints the path of the scudo library ($HAKMEM_SCUDO_LIB when
# set, else the newest
# /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so)
# and exits 0, or exits 1 when there is none.
set -u
if [ "${1:-}" = --find-scudo ]; then
  if [ -n "${HAKMEM_SCUDO_LIB:-}" ]; then
    [ -f "$HAKMEM_SCUDO_LIB" ] || exit 1
    echo "$HAKMEM_SCUDO_LIB"
    exit 0
  fi
  found=$(printf '%s\n' /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so |
    grep -v '\*' | sort -V | tail -n 1)
  [ -n "$found" ] && [ -f "$found" ] || exit 1
  echo "$found"
  exit 0
fi
if [ $# -lt 3 ]; then
  echo "usage: $0 LIB PROGDIR PROG [ARGS...] | $0 --find-scudo" >&2
  exit 2
fi
lib=$1 dir=$2 prog=$3
shift 3
if [ ! -x "$dir/$prog" ]; then echo "peer.sh: program $dir/$prog not built (run make)" >&2; exit 2; fi
if [ ! -f "$lib" ]; then echo "peer.sh: no library $lib" >&2; exit 2; fi
unset LD_PRELOAD HAKMEM_FREE_FILL HAKMEM_ABORT_ON_INVALID HAKMEM_VERBOSE HAKMEM_STATS
export HAKMEM_SECURITY_PEER=$lib
ulimit -c 0  # the attacks abort: no core files

err=$(mktemp "${TMPDIR:-/tmp}/hakmem-peer.XXXXXX")
trap 'rm -f "$err"' EXIT
# the braces keep bash's "Aborted"/"Segmentation fault" notes off our output
{ timeout -k 5 30 env LD_PRELOAD="$lib" "$dir/$prog" "$@" >/dev/null 2>"$err"; } 2>/dev/null
rc=$?
[ "${HAKMEM_TEST_VERBOSE:-0}" = 1 ] && sed -e 's/^/  stderr: /' "$err" | head -n 20 >&2
sig=""
[ $rc -gt 128 ] && [ $rc -ne 137 ] && sig=$(kill -l $((rc - 128)) 2>/dev/null)
peer_error=$(grep -m1 -E '^Scudo ERROR|GWP-ASan detected a memory error' "$err")

# where a SIGSEGV hit: run the program again under gdb, take the fault
# address and the mapping that holds it (and its neighbours)
segv_where() {
  command -v gdb >/dev/null || return 0
  local out addr lo hi perms prev_hi=-1 prev_perms="" hit="" size
  # shellcheck disable=SC2016  # $_siginfo is gdb's
  out=$(timeout -k 5 60 gdb -nx -q -batch -ex 'set startup-with-shell off' -ex 'set disable-randomization off' \
    -ex "set environment LD_PRELOAD=$lib" -ex run \
    -ex 'p/x (unsigned long)$_siginfo._sifields._sigfault.si_addr' -ex 'info proc mappings' \
    --args "$dir/$prog" "$@" 2>/dev/null </dev/null)
  if ! grep -q 'received signal SIGSEGV' <<<"$out"; then echo " (?)"; return 0; fi
  # shellcheck disable=SC2016  # $1 is gdb's
  addr=$(sed -n 's/^\$1 = 0x\([0-9a-f]*\)$/\1/p' <<<"$out")
  [ -n "$addr" ] || { echo " (?)"; return 0; }
  addr=$((16#$addr))
  if [ "$addr" -lt 65536 ]; then echo " (NULL)"; return 0; fi
  # mapping lines: START END SIZE OFFSET PERMS [FILE]
  while read -r lo hi _ _ perms _; do
    lo=$((lo)) hi=$((hi))
    if [ -n "$hit" ]; then  # the mapping after the one hit
      [ "$lo" -eq "$hi_hit" ] && [[ $perms == rw* ]] && hit=guard
      break
    fi
    if [ "$addr" -ge "$lo" ] && [ "$addr" -lt "$hi" ]; then
      size=$((hi - lo)) hi_hit=$hi
      if [[ $perms != ---* ]]; then echo " ($perms)"; return 0; fi
      if [ "$size" -gt 65536 ]; then echo " (reserved)"; return 0; fi
      hit=small
      [ "$prev_hi" -eq "$lo" ] && [[ $prev_perms == rw* ]] && { hit=guard; break; }
    fi
    prev_hi=$hi prev_perms=$perms
  done < <(grep -E '^ *0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +[-r][-w][-x][ps]' <<<"$out")
  case $hit in
    guard) echo " (guard)" ;;
    small) echo " (PROT_NONE, no read-write neighbour)" ;;
    *)     echo " (unmapped)" ;;
  esac
}

detail=""
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  word=error detail=" (timed out)"
elif [ "$sig" = ABRT ] && [ -n "$peer_error" ]; then
  word=caught
elif [ "$sig" = SEGV ]; then
  word=segv detail=$(segv_where "$@")
  if grep -q 'GWP-ASan detected a memory error' "$err"; then
    detail="${detail%)}, GWP-ASan report)"
    [ "$detail" = ", GWP-ASan report)" ] && detail=" (GWP-ASan report)"
  fi
elif grep -qE '^security test: NOT (CAUGHT|IGNORED)' "$err"; then
  word=missed
elif [ $rc -eq 0 ] && [ -z "$peer_error" ]; then
  word=clean
elif [ $rc -eq 3 ] && grep -q "^security test: hakmem is not this process's malloc" "$err"; then
  word=n/a detail=" (hakmem-only test)"
elif [ $rc -eq 2 ] && grep -q "^no free_sized in this process" "$err"; then
  word=n/a detail=" (no free_sized)"
else
  word=error
  if [ -n "$sig" ]; then detail=" (SIG$sig)"; else detail=" (exit $rc)"; fi
  [ -n "$peer_error" ] && detail="$detail, $peer_error"
fi
if [ $word = error ] || [ $word = segv ]; then
  first=$(grep -m1 . "$err")
  echo "peer.sh: $prog${*:+ $*}: $word$detail; stderr: ${first:-(none)}" >&2
fi
echo "$word$detail"
