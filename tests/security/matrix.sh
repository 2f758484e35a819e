#!/usr/bin/env bash
# matrix.sh BUILD [--write] [COLUMN...]
#
# The attack matrix: every line of attacks.txt run on one library per
# hardening measure (src/base/measures.h), beside the default library (none) and
# the secure one (all), and compared with tests/security/matrix.txt, the
# expected result of each cell:
#
#   +   attack.sh passes: the attack is caught as the line expects (for an
#       `ok` line: the program runs clean with the measure on)
#   -   it does not: the measure alone misses it
#
# A cell that was + and is now - is a failure (the measure catches less); a
# cell that was - and is now + fails too, asking for the matrix to be
# updated (the measure catches more): run with --write and commit the file.
# The BUILDS field of attacks.txt is not read here: every line runs on every
# column. COLUMNs: none, all, or measure names (default: every column).
# Libraries: BUILD/libhakmem.so, BUILD/libhakmem-secure.so,
# BUILD/measures/libhakmem-NAME.so (built by `make` with the tests, or
# `make measures`). Exit 0 when every cell run matches.
set -u
here=$(cd "$(dirname "$0")" && pwd)
table=$here/attacks.txt
matrix=${HAKMEM_TEST_MATRIX_FILE:-$here/matrix.txt}  # another file: the planted test
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD [--write] [COLUMN...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
shift
write=0
if [ "${1:-}" = --write ]; then write=1; shift; fi
measures=$(grep -oE 'X\([a-z]+, HK_M_' "$here/../../src/base/measures.h" | sed -E 's/X\(([a-z]+), HK_M_/\1/' | tr '\n' ' ')
all_columns="none $measures all"
columns=${*:-$all_columns}

lib_of() {
  case $1 in
    none) echo "$build/libhakmem.so" ;;
    all)  echo "$build/libhakmem-secure.so" ;;
    *)    echo "$build/measures/libhakmem-$1.so" ;;
  esac
}

for c in $columns; do
  case " $all_columns " in *" $c "*) ;; *) echo "matrix: no column '$c' ($all_columns)" >&2; exit 2 ;; esac
  lib=$(lib_of "$c")
  if [ ! -f "$lib" ]; then echo "matrix: $lib not built (make, or make measures)"; exit 1; fi
  # the library says which measures it has (its HAKMEM_VERBOSE exit line)
  tag=$(env -u LD_PRELOAD HAKMEM_VERBOSE=1 LD_PRELOAD="$lib" /bin/true 2>&1 | grep -o 'hakmem: active ([^)]*)')
  case $c in
    none) want='hakmem: active (pid ' ;;
    all)  want='hakmem: active (secure build, pid ' ;;
    *)    want=" $c" ;;
  esac
  case $tag in
    *"$want"*) ;;
    *) echo "matrix: $lib says '$tag', not the library of column $c"; exit 1 ;;
  esac
done

# the attack lines: NAME EXPECT PATTERN ENV PROGRAM ARGS...
# (a name on two lines, e.g. a secure line and a gap:default one, runs once)
mapfile -t all_lines < <(grep -vE '^[[:space:]]*(#|$)' "$table")
names=() lines=()
for l in "${all_lines[@]}"; do
  read -r _ name _ <<<"$l"
  case " ${names[*]} " in *" $name "*) continue ;; esac
  names+=("$name")
  lines+=("$l")
done

# expected cells: expect[name:column]
declare -A expect
if [ -f "$matrix" ]; then
  header=$(grep -m1 '^attack ' "$matrix")
  read -r -a hcols <<<"$header"
  while read -r name rest; do
    case $name in ''|'#'*|attack) continue ;; esac
    read -r -a cells <<<"$rest"
    for i in "${!cells[@]}"; do expect[$name:${hcols[$((i + 1))]}]=${cells[$i]}; done
  done <"$matrix"
fi

declare -A got
fail=0 ran=0
# every library of the matrix is of this build: attack.sh need not look
if grep -q '^HAKMEM_DEBUG:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then export ATTACK_DEBUG=1
else export ATTACK_DEBUG=0; fi
for c in $columns; do
  lib=$(lib_of "$c")
  caught=0
  for i in "${!lines[@]}"; do
    read -r -a f <<<"${lines[$i]}"
    name=${f[1]}
    if bash "$here/attack.sh" "$lib" "$build/security" "${f[@]:2}" >/dev/null 2>&1; then
      r=+; caught=$((caught + 1))
    else
      r=-
    fi
    got[$name:$c]=$r
    [ "${expect[$name:$c]:-}" = "~" ] && got[$name:$c]='~'  # (kept by --write)
    ran=$((ran + 1))
    [ $write = 1 ] && continue
    want=${expect[$name:$c]:-?}
    if [ "$want" = "?" ]; then
      echo "FAIL $c / $name: no cell in matrix.txt (got $r; run with --write)"
      fail=$((fail + 1))
    elif [ "$want" = "~" ]; then
      :  # either: the address layout decides, not the measure (matrix.txt's header)
    elif [ "$want" != "$r" ]; then
      if [ "$r" = - ]; then
        echo "FAIL $c / $name: the measure no longer catches it (expected +, got -)"
      else
        echo "FAIL $c / $name: the measure now catches it (expected -, got +): update matrix.txt (--write)"
      fi
      fail=$((fail + 1))
    fi
  done
  echo "matrix: $c: $caught of ${#lines[@]} lines pass ($lib)"
done

if [ $write = 1 ]; then
  # keep the cells of columns not run this time
  for c in $all_columns; do
    case " $columns " in *" $c "*) continue ;; esac
    for n in "${names[@]}"; do got[$n:$c]=${expect[$n:$c]:-?}; done
  done
  {
    echo "# The attack matrix (tests/security/matrix.sh, docs/SECURITY.md): each line of"
    echo "# attacks.txt run on the library of one measure (src/base/measures.h), beside the"
    echo "# default library (none) and the secure one (all). + the line passes (the"
    echo "# attack is caught as expected; for an ok line, the program runs clean);"
    echo "# - it does not; ~ either, by where the kernel placed the mappings the attack"
    echo "# reaches (set by hand, kept by --write; not a verdict on the measure)."
    echo "# Written by: bash tests/security/matrix.sh BUILD --write"
    printf '%-28s' attack
    for c in $all_columns; do printf ' %-7s' "$c"; done
    echo
    for n in "${names[@]}"; do
      printf '%-28s' "$n"
      for c in $all_columns; do printf ' %-7s' "${got[$n:$c]}"; done
      echo
    done
  } | sed -e 's/ *$//' >"$matrix"
  echo "matrix: wrote $matrix"
  exit 0
fi
# rows of matrix.txt with no line in attacks.txt
for k in "${!expect[@]}"; do
  n=${k%%:*}
  case " ${names[*]} " in *" $n "*) ;; *) echo "FAIL $n: in matrix.txt but not in attacks.txt"; fail=$((fail + 1)); break ;; esac
done
echo "matrix: $ran cells, $fail mismatches"
[ $fail = 0 ]
