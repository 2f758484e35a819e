#!/usr/bin/env bash
# static_stress.sh PROG — runs test_stress_static after checking that it is
# really the static variant: it must not depend on libhakmem.so.
set -u
P=${1:?usage: static_stress.sh BUILD/tests/test_stress_static}
if readelf -d "$P" | grep NEEDED | grep -q hakmem; then
  echo "$P is linked against libhakmem.so, not libhakmem.a"
  exit 1
fi
exec "$P" 8
