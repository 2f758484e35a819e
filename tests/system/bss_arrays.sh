#!/bin/bash
# bss_arrays.sh LIB — no zeroed object of a page or more in the library's
# .bss: such arrays (a map, a table, a buffer) carry HK_BSS_ARRAY
# (src/base/config.h) and go to .lbss, after every small variable. One left
# in .bss splits the small variables across its pages again: a program then
# keeps a page resident on each side of it (docs/ARCHITECTURE.md, "The
# library's own pages").
set -u
lib=$1
bss=$(readelf -SW "$lib" | sed -n 's/^ *\[ *\([0-9]*\)\] \.bss .*/\1/p')
[ -n "$bss" ] || { echo "bss_arrays: no .bss in $lib"; exit 1; }
# readelf writes sizes from 100000 on in hex
big=$(readelf -sW "$lib" | awk -v ndx="$bss" '$4 == "OBJECT" && $7 == ndx && ($3 ~ /^0x/ || $3 + 0 >= 4096) { print $8 " (" $3 " bytes)" }' | sort -u)
small=$(readelf -sW "$lib" | awk -v ndx="$bss" '$4 == "OBJECT" && $7 == ndx' | wc -l)
if [ -n "$big" ]; then
  echo "bss_arrays: objects of a page or more in .bss of $lib (mark them HK_BSS_ARRAY):"
  printf '%s\n' "$big" | sed 's/^/  /'
  exit 1
fi
[ "$small" -gt 0 ] || { echo "bss_arrays: no object in .bss of $lib: symbols stripped?"; exit 1; }
lbss=$(readelf -SW "$lib" | awk '$2 == ".lbss" { print $6 }')
echo "bss_arrays: $small small objects in .bss, no array; .lbss 0x${lbss:-0} bytes"
