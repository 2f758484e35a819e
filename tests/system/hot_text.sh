#!/bin/bash
# hot_text.sh LIB LIST — every function cmake/hot_text.ld names is one of the
# library's: a name renamed or gone drops its function out of the first
# window silently (test_lib_pages then fails only if a small program runs
# it). Rerun cmake/hot_text.py when this fails.
set -u
lib=$1 list=$2
names=$(sed -n 's/^\*(\.text\.\([^ ]*\) .*/\1/p' "$list")
[ -n "$names" ] || { echo "hot_text: no function listed in $list"; exit 1; }
defined=$(nm "$lib" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $3 }' | sort -u)
missing=$(comm -23 <(printf '%s\n' $names | sort -u) <(printf '%s\n' "$defined"))
total=$(printf '%s\n' $names | wc -l)
if [ -n "$missing" ]; then
  echo "hot_text: $(printf '%s\n' "$missing" | wc -l) of $total listed functions not in $lib (rerun cmake/hot_text.py):"
  printf '  %s\n' $missing
  exit 1
fi
echo "hot_text: all $total listed functions are in $lib"
