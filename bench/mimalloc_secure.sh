#!/usr/bin/env bash
# usage: bench/mimalloc_secure.sh [DIR]
#
# The reference for the secure build's cost (issue: "mimalloc's secure mode
# is the reference"): builds the Debian source of the mimalloc that is
# installed (libmimalloc2.0, the peer of every benchmark) twice, as shipped
# (MI_SECURE=OFF) and in its secure mode (MI_SECURE=ON: guard pages,
# encoded free lists, randomised allocation, double-free checks), into DIR
# (default /tmp/mimalloc-ref):
#
#   DIR/libmimalloc.so           the plain build (should run as Debian's)
#   DIR/libmimalloc-secure.so    the secure build
#
# bench/security_cost.sh then puts the reference's secure/plain ratio beside
# hakmem's secure/default one: COST_REF=DIR bash bench/security_cost.sh.
# Needs the Debian archive (a deb-src entry is added for the download only,
# then removed), cmake and a C compiler. Not part of the test suite.
set -eu
case ${1:-} in
  -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "mimalloc_secure.sh: unknown option '$1'" >&2
      sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then
  echo "mimalloc_secure.sh: too many arguments" >&2
  sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2
fi
DIR=${1:-/tmp/mimalloc-ref}
mkdir -p "$DIR/src"
DIR=$(cd "$DIR" && pwd)
VER=$(dpkg-query -W -f='${Version}' libmimalloc2.0 2>/dev/null || true)
[ -n "$VER" ] || { echo "libmimalloc2.0 is not installed (apt-get install libmimalloc2.0)" >&2; exit 2; }
LIST=/etc/apt/sources.list.d/hakmem-mimalloc-src.sources
if [ ! -d "$DIR/src/mimalloc-"* ] 2>/dev/null; then
  # the deb-src twin of the system's Debian entries
  sed -n '/^Types: deb$/,/^$/p' /etc/apt/sources.list.d/debian.sources | sed 's/^Types: deb$/Types: deb-src/' >"$LIST"
  trap 'rm -f "$LIST"' EXIT
  apt-get update -qq >/dev/null
  (cd "$DIR/src" && apt-get source -qq "mimalloc=$VER" >/dev/null 2>&1)
  rm -f "$LIST"
fi
SRC=$(ls -d "$DIR"/src/mimalloc-*/ | head -n 1)
for mode in OFF ON; do
  cmake -S "$SRC" -B "$DIR/build-$mode" -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=$mode \
    -DMI_BUILD_TESTS=OFF -DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF >/dev/null
  cmake --build "$DIR/build-$mode" -j "$(nproc)" >/dev/null
done
cp -L "$DIR/build-OFF/libmimalloc.so" "$DIR/libmimalloc.so"
cp -L "$DIR/build-ON/libmimalloc-secure.so" "$DIR/libmimalloc-secure.so"
echo "mimalloc $VER: $DIR/libmimalloc.so, $DIR/libmimalloc-secure.so"
MIMALLOC_VERBOSE=1 LD_PRELOAD="$DIR/libmimalloc-secure.so" /bin/true 2>&1 | grep -m1 "secure level" || true
