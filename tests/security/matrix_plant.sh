#!/usr/bin/env bash
# matrix_plant.sh BUILD ROW COLUMN FROM:TO
# Runs matrix.sh on COLUMN with a copy of matrix.txt whose cell (ROW,
# COLUMN) is changed from FROM to TO: matrix.sh must fail and name that
# cell, whichever way it moved. Exits 0 when it did.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$1 row=$2 col=$3 from=${4%%:*} to=${4##*:}
copy=$(mktemp "${TMPDIR:-/tmp}/hakmem-matrix.XXXXXX")
trap 'rm -f "$copy"' EXIT
awk -v row="$row" -v col="$col" -v from="$from" -v to="$to" '
  $1 == "attack" { for (i = 2; i <= NF; i++) if ($i == col) c = i }
  $1 == row && c { if ($c != from) { print "cell is " $c > "/dev/stderr"; bad = 1 }; $c = to }
  { print }
  END { exit bad ? 2 : (c ? 0 : 3) }' "$here/matrix.txt" >"$copy" || { echo "matrix_plant: no cell ($row, $col) = $from"; exit 1; }
out=$(HAKMEM_TEST_MATRIX_FILE=$copy bash "$here/matrix.sh" "$build" "$col")
rc=$?
echo "$out"
if [ $rc = 0 ]; then echo "matrix_plant: matrix.sh passed with ($row, $col) changed to $to"; exit 1; fi
if ! grep -q "^FAIL $col / $row: " <<<"$out"; then echo "matrix_plant: matrix.sh failed, but not on ($row, $col)"; exit 1; fi
n=$(grep -c '^FAIL ' <<<"$out")
if [ "$n" != 1 ]; then echo "matrix_plant: $n cells failed, expected 1"; exit 1; fi
echo "matrix_plant: OK, the changed cell ($row, $col) failed the run"
