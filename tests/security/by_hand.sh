#!/usr/bin/env bash
# by_hand.sh BUILD_DIR — the attack suite of tests/security/attacks.txt by
# hand, outside ctest (which runs the same table as one test per attack and
# build: `ctest --test-dir build -L attack`). Builds nothing: the programs
# and libraries come from `make` (BUILD_DIR/security/, libhakmem.so,
# libhakmem-secure.so).
#
# HAKMEM_SECURITY_MATRIX=1 also runs the secure-only attacks against the
# default build and prints what happened ("INFO ...", not counted).
# HAKMEM_TEST_VERBOSE=1 shows each program's stderr.
# HAKMEM_SECURITY_SCUDO=1 adds a scudo column (off unless asked: scudo is
# a comparison, not part of the suite): each attack program also runs under
# LD_PRELOAD of scudo, Android's hardened allocator (Debian: libclang-rt-14-dev;
# the library is found by tests/security/peer.sh --find-scudo, or named by
# HAKMEM_SECURITY_SCUDO=PATH or HAKMEM_SCUDO_LIB=PATH), once per attack name,
# and "INFO scudo/name: WHAT" says what happened (peer.sh's words: caught,
# segv (WHERE), missed, ok, n/a (hakmem-only test), error (WHAT)), then a
# count. Information: it never makes the script fail.
# by_hand.sh BUILD_DIR --table prints the whole suite as a markdown table
# instead (tests/security/table.sh: every attack on default, secure, scudo).
# Prints "PASS build/name" / "FAIL build/name (what happened)" / "XFAIL ...",
# then "N passed, N failed"; exits non-zero if anything failed.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B=$(cd "${1:?usage: by_hand.sh BUILD_DIR [--table]}" && pwd) || exit 2
[ "${2:-}" = --table ] && exec bash "$HERE/table.sh" "$1"
SCUDO=""
case ${HAKMEM_SECURITY_SCUDO:-0} in
  0|'') ;;
  1) SCUDO=$(bash "$HERE/peer.sh" --find-scudo) ||
       echo "INFO scudo: no libclang_rt.scudo_standalone-x86_64.so found (Debian: libclang-rt-14-dev): no scudo column" ;;
  *) SCUDO=$HAKMEM_SECURITY_SCUDO ;;
esac
[ -n "$SCUDO" ] && echo "INFO scudo column: $SCUDO"
declare -A scudo_seen scudo_count
passed=0 failed=0 xfailed=0
failed_names=()
start=$(date +%s)
run() {  # run BUILD ARGS...: attack.sh's verdict; its report in $OUT
  local lib=$B/libhakmem.so
  [ "$1" = secure ] && lib=$B/libhakmem-secure.so
  shift
  OUT=$(bash "$HERE/attack.sh" "$lib" "$B/security" "$@")
}
while read -r builds name rest; do
  case $builds in ''|'#'*) continue ;; esac
  read -r -a f <<<"$rest"
  gap=0
  case $builds in gap:*) gap=1; builds=${builds#gap:} ;; esac
  [ "$builds" = both ] && builds="default secure"
  for b in default secure; do
    if [[ " $builds " != *" $b "* ]]; then
      if [ "${HAKMEM_SECURITY_MATRIX:-0}" = 1 ]; then
        run "$b" "${f[@]}"
        echo "INFO $b/$name: $(echo "$OUT" | grep '^got:')"
      fi
      continue
    fi
    run "$b" "${f[@]}"; rc=$?
    [ "${HAKMEM_TEST_VERBOSE:-0}" = 1 ] && echo "$OUT" | grep '^  stderr:'
    got=$(echo "$OUT" | grep -v '^  stderr:' | tail -n 1)
    if [ $gap = 1 ]; then
      if [ $rc -eq 0 ]; then echo "XPASS $b/$name (a known gap no longer shows: make it a normal line); $got"
        failed=$((failed + 1)); failed_names+=("$b/$name")
      else echo "XFAIL $b/$name (known gap; $got)"; xfailed=$((xfailed + 1)); fi
    elif [ $rc -eq 0 ]; then
      echo "PASS $b/$name"; passed=$((passed + 1))
    else
      echo "FAIL $b/$name ($got)"; failed=$((failed + 1)); failed_names+=("$b/$name")
    fi
  done
  if [ -n "$SCUDO" ] && [ -z "${scudo_seen[$name]:-}" ]; then
    scudo_seen[$name]=1
    # f: EXPECT PATTERN ENV PROG ARGS...
    what=$(bash "$HERE/peer.sh" "$SCUDO" "$B/security" "${f[@]:3}" 2>/dev/null)
    [ "${f[0]}" = ok ] && [ "$what" = clean ] && what=ok
    echo "INFO scudo/$name: ${what:-error (peer.sh printed nothing)}"
    w=${what%% *}
    scudo_count[${w:-error}]=$((${scudo_count[${w:-error}]:-0} + 1))
  fi
done <"$HERE/attacks.txt"
if [ -n "$SCUDO" ]; then
  summary=""
  for w in caught segv missed ok clean n/a error; do
    [ -n "${scudo_count[$w]:-}" ] && summary="$summary, ${scudo_count[$w]} $w"
  done
  echo "scudo (information, not counted): ${summary#, }"
fi
echo "security tests took $(($(date +%s) - start))s"
[ $failed -ne 0 ] && echo "failed: ${failed_names[*]}"
[ $xfailed -ne 0 ] && echo "$xfailed known gaps (XFAIL, not counted)"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
