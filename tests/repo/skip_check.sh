#!/usr/bin/env bash
# skip_check.sh BUILD_DIR — a missing tool is SKIP, never PASS.
#
# 1. The real valgrind ctest of BUILD_DIR (its registration copied from
#    BUILD_DIR/tests/CTestTestfile.cmake into a scratch directory, so the
#    running suite's logs are not touched), run through tests/run_tests.sh
#    with a PATH that has everything of /usr/bin but valgrind: the summary must
#    say "SKIP valgrind" and "0 passed, 0 failed, 1 skipped".
# 2. The summary itself, on planted tests: one passes, one fails, one exits
#    77 with SKIP_RETURN_CODE 77 and one exits 77 without it (a failure):
#    "1 passed, 2 failed, 1 skipped", exit non-zero.
set -u
B=$(cd "${1:?usage: skip_check.sh BUILD_DIR}" && pwd) || exit 2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-skip.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$W/real" "$W/bin" "$W/plant"
cp "$B/tests/CTestTestfile.cmake" "$W/real/" || exit 1
grep -q 'add_test(\[=\[valgrind\]=\]\|add_test(valgrind' "$W/real/CTestTestfile.cmake" ||
  { echo "FAIL: no valgrind test registered in $B/tests"; exit 1; }
for f in /usr/local/bin/* /usr/bin/*; do
  n=${f##*/}
  [ "$n" = valgrind ] || [ -e "$W/bin/$n" ] || ln -s "$f" "$W/bin/$n"
done
out=$(PATH="$W/bin" bash "$HERE/../run_tests.sh" "$W/real" -- -R '^valgrind$' 2>&1)
rc=$?
echo "$out" | sed 's/^/  real: /' | tail -n 8
echo "$out" | grep -q '^SKIP valgrind' || bad "valgrind hidden: no 'SKIP valgrind' line"
echo "$out" | grep -q '^0 passed, 0 failed, 1 skipped$' || bad "valgrind hidden: summary is not '0 passed, 0 failed, 1 skipped'"
[ $rc -eq 0 ] || bad "valgrind hidden: run_tests.sh exited $rc (a skip is not a failure)"

cat >"$W/plant/CTestTestfile.cmake" <<'EOT'
add_test(plant/pass "true")
add_test(plant/fail "false")
add_test(plant/skip "bash" "-c" "exit 77")
set_tests_properties(plant/skip PROPERTIES SKIP_RETURN_CODE 77)
add_test(plant/77_unregistered "bash" "-c" "exit 77")
EOT
out=$(bash "$HERE/../run_tests.sh" "$W/plant" 2>&1)
rc=$?
echo "$out" | sed 's/^/  plant: /' | grep -E 'PASS|FAIL|SKIP|passed'
echo "$out" | grep -q '^1 passed, 2 failed, 1 skipped$' || bad "planted: summary is not '1 passed, 2 failed, 1 skipped'"
echo "$out" | grep -q '^SKIP plant/skip' || bad "planted: plant/skip not SKIP"
echo "$out" | grep -q '^FAIL plant/77_unregistered' || bad "planted: exit 77 without SKIP_RETURN_CODE is not FAIL"
[ $rc -ne 0 ] || bad "planted: run_tests.sh exited 0 with a failure"
[ $fails -eq 0 ] && echo "skip_check: OK"
[ $fails -eq 0 ]
