#!/usr/bin/env bash
# ecosystem.sh BUILD_DIR
#
# hakmem as its users meet it, on a build made by `make` (BUILD_DIR: absolute,
# or relative to the current directory or to the source tree):
#
#   install    cmake --install BUILD_DIR into a temporary prefix: libraries
#              (no libgcc_s.so.1 needed, no _Unwind_ symbol exported)
#              with SONAME and links, header, hakmem.pc, CMake package, launcher,
#              README and LICENSE, docs/ with every image and page they link to
#   pkgconfig  examples/ built against the installed copy with pkg-config
#              (Makefile): C and C++, shared and static; each must report
#              hak_is_active=1 (linking -lhakmem first binds malloc to hakmem)
#   cmake      the same through find_package(hakmem): hakmem::hakmem and
#              hakmem::hakmem-static; and the package's version check
#   launcher   bin/hakmem run/stats/version on a plain program ("hakmem:
#              active" at exit, output unchanged, exit status passed on), its
#              error exits (127 missing program or library, 126, 2), through a
#              symlink, and tools/hakmem from the source tree; run --secure
#              with libhakmem-secure.so when BUILD_DIR has it (make secure)
#   debuginfo  the .debug file beside the shared library, the library
#              stripped with a debuglink; gdb resolves hak_malloc to a source
#              line and shows it in a backtrace of a running program
#   rust       examples/rust (a #[global_allocator] over the C API) built
#              offline against the installed copy, HAKMEM_LINK=static, dylib
#              and dynamic (= dylib), and a bad HAKMEM_LINK refused; skipped
#              when cargo is not installed
#
# HAKMEM_TEST_VERBOSE=1 shows each test's log, not only a failed one's.
# Prints "PASS name" / "FAIL name" / "SKIP name (why)" lines, then
# "N passed, N failed"; exits non-zero if anything failed.
set -u
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ -d "$1" ]; then B=$(cd "$1" && pwd)
elif [ -d "$ROOT/$1" ]; then B=$(cd "$ROOT/$1" && pwd)
else
  echo "FAIL ecosystem (no such build directory: $1)"
  exit 1
fi
unset LD_PRELOAD HAKMEM_VERBOSE HAKMEM_STATS HAKMEM_LIB HAKMEM_LINK HAKMEM_LIB_DIR \
      CMAKE_PREFIX_PATH PKG_CONFIG_PATH
export LC_ALL=C

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-ecosystem.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
P=$WORK/prefix          # the install prefix
LOG=$WORK/log

passed=0
failed=0
skipped=0
# check NAME FUNCTION: runs FUNCTION with its output in a log; shows the log on failure
check() {
  local name=$1 fn=$2 t0=$(date +%s)
  : >"$LOG"
  ( set -u; "$fn" ) >"$LOG" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS $name"
    [ "${HAKMEM_TEST_VERBOSE:-0}" = 1 ] && sed -e 's/^/    . /' "$LOG"
    passed=$((passed + 1))
  elif [ $rc -eq 77 ]; then
    echo "SKIP $name ($(tail -n 1 "$LOG"))"
    skipped=$((skipped + 1))
  else
    echo "FAIL $name ($(($(date +%s) - t0))s)"
    sed -e 's/^/    | /' "$LOG" | tail -n 40
    failed=$((failed + 1))
  fi
}
# each test runs in a subshell: fail ends that test only
fail() { echo "$*"; exit 1; }
need_tool() { command -v "$1" >/dev/null || fail "$1 not installed (apt-get install $2)"; }

# runs PROGRAM, which must exit 0 and print hak_is_active=1
expect_active() {
  local out
  out=$("$@" 2>&1) || { echo "$out"; fail "$* exited non-zero"; return 1; }
  echo "$out" | grep -qx 'hak_is_active=1' || { echo "$out"; fail "$*: not running on hakmem"; return 1; }
  echo "ok: $* -> $(echo "$out" | head -n 1), hak_is_active=1"
}
# NEEDED libhakmem.so.0 (shared) or not (static)
expect_linked() { # PROG shared|static
  local needed
  needed=$(readelf -d "$1" | grep NEEDED) || true
  if [ "$2" = shared ]; then
    echo "$needed" | grep -q 'libhakmem\.so\.0\]' || fail "$1 does not need libhakmem.so.0"
  else
    ! echo "$needed" | grep -q libhakmem || fail "$1 needs libhakmem.so but should be static"
  fi
}

VERSION=$(sed -n 's/^#define HAKMEM_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
          "$ROOT/include/hakmem.h" | paste -sd.)
SOMAJOR=${VERSION%%.*}

# ---------------------------------------------------------------------------
t_install() {
  cmake --install "$B" --prefix "$P" || fail "cmake --install $B failed (configured before cmake/HakmemInstall.cmake existed? rerun make)"
  [ -f "$B/cmake_install.cmake" ] || fail "no install rules in $B"
  local a
  a=$(find "$P" -name libhakmem.a | head -n 1)
  [ -n "$a" ] || fail "libhakmem.a not installed"
  L=$(dirname "$a")
  echo "libdir: $L"
  local f
  for f in "$L/libhakmem.so.$VERSION" "$L/libhakmem.so.$SOMAJOR" "$L/libhakmem.so" \
           "$P/include/hakmem.h" "$L/pkgconfig/hakmem.pc" \
           "$L/cmake/hakmem/hakmemConfig.cmake" "$L/cmake/hakmem/hakmemConfigVersion.cmake" \
           "$L/cmake/hakmem/hakmemTargets.cmake"; do
    [ -e "$f" ] || fail "not installed: $f" || return 1
  done
  [ -L "$L/libhakmem.so" ] && [ -L "$L/libhakmem.so.$SOMAJOR" ] || fail "SONAME/dev links are not symlinks"
  [ "$(readlink -f "$L/libhakmem.so")" = "$L/libhakmem.so.$VERSION" ] || fail "libhakmem.so does not lead to libhakmem.so.$VERSION"
  readelf -d "$L/libhakmem.so.$VERSION" | grep -q "SONAME.*\[libhakmem\.so\.$SOMAJOR\]" || fail "SONAME is not libhakmem.so.$SOMAJOR"
  # libgcc's unwinder is linked in (CMakeLists.txt, HK_SO_LINK): no
  # libgcc_s.so.1 to load for it, and none of it exported to the program
  if readelf -d "$L/libhakmem.so.$VERSION" | grep NEEDED | grep -q libgcc_s; then fail "libhakmem.so needs libgcc_s"; fi
  if nm -D --defined-only "$L/libhakmem.so.$VERSION" | grep -q ' _Unwind_'; then fail "libhakmem.so exports _Unwind_ symbols"; fi
  [ -x "$P/bin/hakmem" ] || fail "launcher not installed in $P/bin"
  cmp -s "$ROOT/include/hakmem.h" "$P/include/hakmem.h" || fail "installed hakmem.h differs"
  t_install_docs || return 1
  # a second install over the first works and changes nothing that matters
  cmake --install "$B" --prefix "$P" >/dev/null || fail "second cmake --install failed"
  echo "$L" >"$WORK/libdir"
}

# the documentation: README and LICENSE, docs/ beside them, and every file
# or folder an installed page links to or shows (images, examples/, the
# bench/results/ files figures cite, docs/history/), at the same place
# relative to the page: a link of an installed page to anything the source
# tree has and the install has not fails, as does an installed page that is
# not the source's. (A link dead in the source tree too is listed: the
# pages of README and docs/ have none, tests/repo/docs_refs.py sees to that.)
t_install_docs() {
  local D=$P/share/doc/hakmem
  [ -d "$D" ] || fail "no $D"
  cmp -s "$ROOT/LICENSE" "$D/LICENSE" || fail "LICENSE not installed in $D"
  grep -q '^MIT License' "$D/LICENSE" || fail "$D/LICENSE is not the MIT licence"
  [ -f "$D/README.md" ] && [ -f "$D/docs/ENV_VARS.md" ] || fail "README.md and docs/ENV_VARS.md not installed in $D"
  python3 - "$ROOT" "$D" <<'PYEOF' || fail "installed docs: links to what is not installed"
import filecmp, os, re, sys
root, dest = sys.argv[1], sys.argv[2]
link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)")
missing, dead, checked, images, outside = [], [], 0, 0, set()
pages = [os.path.relpath(os.path.join(d, f), dest) for d, _, fs in os.walk(dest) for f in fs
         if f.endswith(".md")]
assert "README.md" in pages and len(pages) > 5, pages
for page in pages:
    src = os.path.join(root, page)
    assert os.path.isfile(src) and filecmp.cmp(src, os.path.join(dest, page), shallow=False), \
        "installed page not the source tree's file at the same path: " + page
    for m in link.finditer(open(os.path.join(dest, page), encoding="utf-8").read()):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue
        rel = os.path.normpath(os.path.join(os.path.dirname(page), target))
        checked += 1
        images += m.group(0).startswith("!")
        if rel.startswith(".."):
            missing.append("%s -> %s (outside the installed docs)" % (page, target))
        elif not os.path.exists(os.path.join(dest, rel)):
            (missing if os.path.exists(os.path.join(root, rel)) else dead).append("%s -> %s" % (page, target))
        elif not rel.startswith("docs/") and rel not in ("README.md", "LICENSE", "CHANGELOG.md", "CONTRIBUTING.md"):
            outside.add(rel.split("/")[0])
print("installed docs: %d pages, %d links resolved (%d images), beyond README and docs/: %s"
      % (len(pages), checked, images, " ".join(sorted(outside)) or "none"))
assert images >= 3, "fewer images than the docs show: %d" % images
for m in dead:
    print("dead in the source tree too: " + m)
for m in missing:
    print("not installed: " + m)
sys.exit(1 if missing else 0)
PYEOF
}

t_pkgconfig() {
  need_tool pkg-config pkg-config || return 1
  export PKG_CONFIG_PATH=$L/pkgconfig
  local v
  v=$(pkg-config --modversion hakmem) || fail "pkg-config does not find hakmem"
  [ "$v" = "$VERSION" ] || fail "pkg-config version $v, header $VERSION"
  echo "pkg-config --cflags --libs: $(pkg-config --cflags --libs hakmem)"
  pkg-config --libs hakmem | grep -q -- "-L$L" || fail "pkg-config --libs does not point at $L"
  mkdir -p "$WORK/pc"
  make -s -C "$ROOT/examples" O="$WORK/pc" || fail "examples/Makefile failed"
  local p
  for p in hello_c hello_cxx; do
    expect_linked "$WORK/pc/$p" shared || return 1
    expect_active "$WORK/pc/$p" || return 1
  done
  for p in hello_c_static hello_cxx_static; do
    expect_linked "$WORK/pc/$p" static || return 1
    expect_active "$WORK/pc/$p" || return 1
  done
  # the README's one-liner
  cc "$ROOT/examples/hello.c" -o "$WORK/pc/oneliner" $(pkg-config --cflags --libs hakmem) \
     -Wl,-rpath,"$(pkg-config --variable=libdir hakmem)" || fail "one-liner failed"
  expect_active "$WORK/pc/oneliner"
}

t_cmake() {
  cmake -S "$ROOT/examples" -B "$WORK/cm" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release \
        >"$WORK/cm.log" 2>&1 || { cat "$WORK/cm.log"; fail "configuring examples/ failed"; return 1; }
  local dir
  dir=$(sed -n 's/^hakmem_DIR:PATH=//p' "$WORK/cm/CMakeCache.txt")
  [ "$dir" = "$L/cmake/hakmem" ] || fail "find_package(hakmem) found $dir, not $L/cmake/hakmem"
  cmake --build "$WORK/cm" -j 4 >"$WORK/cm.log" 2>&1 || { cat "$WORK/cm.log"; fail "building examples/ failed"; return 1; }
  local p
  for p in hello_c hello_cxx; do
    expect_linked "$WORK/cm/$p" shared || return 1
    expect_active "$WORK/cm/$p" || return 1
  done
  for p in hello_c_static hello_cxx_static; do
    expect_linked "$WORK/cm/$p" static || return 1
    expect_active "$WORK/cm/$p" || return 1
  done
  # version file: this version and older minors in the same major are
  # compatible (the ABI only grows within a major: docs/RELEASING.md); a
  # newer minor and another major are not
  local want compat minor
  minor=$(echo "$VERSION" | cut -d. -f2)
  for want in "$VERSION:TRUE" "$SOMAJOR.$minor:TRUE" "$SOMAJOR.0:TRUE" \
              "$SOMAJOR.$((minor + 1)):FALSE" "$((SOMAJOR + 1)).0:FALSE"; do
    cat >"$WORK/ver.cmake" <<EOF
set(PACKAGE_FIND_VERSION ${want%%:*})
string(REPLACE "." ";" _v \${PACKAGE_FIND_VERSION})
list(GET _v 0 PACKAGE_FIND_VERSION_MAJOR)
list(GET _v 1 PACKAGE_FIND_VERSION_MINOR)
set(CMAKE_SIZEOF_VOID_P 8)
include("$L/cmake/hakmem/hakmemConfigVersion.cmake")
if(PACKAGE_VERSION_COMPATIBLE)
  message("TRUE")
else()
  message("FALSE")
endif()
EOF
    compat=$(cmake -P "$WORK/ver.cmake" 2>&1)
    [ "$compat" = "${want##*:}" ] || fail "find_package(hakmem ${want%%:*}): compatible=$compat, expected ${want##*:}" || return 1
  done
  echo "version checks ok"
}

t_launcher() {
  local H=$P/bin/hakmem out rc
  # version, and a check that the library loads
  out=$("$H" version) || { echo "$out"; fail "hakmem version failed"; return 1; }
  echo "$out"
  echo "$out" | grep -qx "hakmem $VERSION (this launcher)" || fail "hakmem version does not print $VERSION"
  # the library's own version, from the library: the release's, with the
  # commit it was built from when built from a checkout
  echo "$out" | grep -Eqx "library version: $VERSION(\+git\.[0-9a-f]{7}(\.modified)?)?" ||
    fail "hakmem version does not name the library's own version"
  echo "$out" | grep -q "$L/libhakmem.so" || fail "hakmem version does not use the installed library"
  "$H" help | grep -q 'hakmem run' || fail "hakmem help"
  [ "$("$H" lib)" = "$L/libhakmem.so.$SOMAJOR" ] || fail "hakmem lib: $("$H" lib)"

  # a plain program (sort: glibc malloc unless preloaded): same output, and
  # the exit line proves hakmem served it
  seq 1 20000 | sed 's/$/ line/' | sort -R --random-source=/dev/zero >"$WORK/in.txt"
  sort "$WORK/in.txt" >"$WORK/plain.out" 2>"$WORK/plain.err" || fail "sort failed"
  grep -q 'hakmem: active' "$WORK/plain.err" && fail "plain sort claims hakmem"
  HAKMEM_VERBOSE=1 "$H" run -- sort "$WORK/in.txt" >"$WORK/run.out" 2>"$WORK/run.err" ||
    { cat "$WORK/run.err"; fail "hakmem run -- sort failed"; return 1; }
  cmp -s "$WORK/plain.out" "$WORK/run.out" || fail "hakmem run -- sort: output differs"
  grep -q '^hakmem: active' "$WORK/run.err" || { cat "$WORK/run.err"; fail "hakmem run: no 'hakmem: active' line"; return 1; }
  echo "run: $(grep '^hakmem: active' "$WORK/run.err")"
  # without --, and with the program given by path
  HAKMEM_VERBOSE=1 "$H" run "$(type -P sort)" "$WORK/in.txt" 2>&1 >/dev/null | grep -q '^hakmem: active' ||
    fail "hakmem run PROGRAM (no --) did not preload"
  # stats: statistics on (the report at exit; HAKMEM_VERBOSE left as it is)
  "$H" stats -- sort "$WORK/in.txt" >/dev/null 2>"$WORK/stats.err" || fail "hakmem stats failed"
  grep -q '^hakmem .* statistics (pid ' "$WORK/stats.err" || { cat "$WORK/stats.err"; fail "hakmem stats: no report"; return 1; }
  "$H" stats -- env | grep -qx 'HAKMEM_STATS=1' || fail "hakmem stats does not set HAKMEM_STATS=1"
  # the environment is preloaded for children too, and hakmem comes first
  out=$(LD_PRELOAD=/nonexistent-other.so "$H" run -- env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
  [ "$out" = "$L/libhakmem.so.$SOMAJOR:/nonexistent-other.so" ] || fail "LD_PRELOAD in the child: $out"
  # the program's exit status
  "$H" run -- sh -c 'exit 3'; rc=$?
  [ $rc -eq 3 ] || fail "exit status 3 came back as $rc"

  # errors: exit status and a message naming the problem
  expect_error() { # STATUS PATTERN CMD...
    local want=$1 pat=$2 err
    shift 2
    err=$("$@" 2>&1 >/dev/null); local got=$?
    [ $got -eq "$want" ] || fail "'$*' exited $got, not $want: $err" || return 1
    echo "$err" | grep -q -- "$pat" || fail "'$*' said '$err', expected /$pat/" || return 1
    echo "ok ($got): $* -> $err"
  }
  expect_error 127 "no-such-program-hk: command not found" "$H" run -- no-such-program-hk || return 1
  expect_error 127 "no such file" "$H" run -- "$WORK/missing/prog" || return 1
  expect_error 126 "not executable" "$H" run -- "$WORK/in.txt" || return 1
  expect_error 127 "library not found" env HAKMEM_LIB="$WORK/nope.so" "$H" run -- true || return 1
  expect_error 127 "not an ELF" env HAKMEM_LIB="$WORK/in.txt" "$H" run -- true || return 1
  expect_error 127 "library not found" env HAKMEM_LIB="$WORK/nope.so" "$H" version || return 1
  expect_error 2 "no program given" "$H" run -- || return 1
  expect_error 2 "unknown command" "$H" frobnicate || return 1
  # the valgrind build (docs/VALGRIND.md), installed when it was built
  if [ -f "$B/libhakmem-valgrind.so" ]; then
    [ -f "$L/libhakmem-valgrind.so" ] || fail "libhakmem-valgrind.so built but not installed"
  fi
  # --secure: the hardened build, installed only when it was built (make secure)
  if [ -f "$B/libhakmem-secure.so" ]; then
    [ -f "$L/libhakmem-secure.so" ] || fail "libhakmem-secure.so built but not installed"
    [ -f "$L/libhakmem-secure.so.debug" ] || fail "libhakmem-secure.so.debug not installed"
    HAKMEM_VERBOSE=1 "$H" run --secure -- sort "$WORK/in.txt" 2>"$WORK/secure.err" >"$WORK/secure.out" ||
      { cat "$WORK/secure.err"; fail "hakmem run --secure -- sort failed"; }
    cmp -s "$WORK/plain.out" "$WORK/secure.out" || fail "hakmem run --secure -- sort: output differs"
    grep -q '^hakmem: active' "$WORK/secure.err" || fail "hakmem run --secure: no 'hakmem: active' line"
    [ "$("$H" lib --secure)" = "$L/libhakmem-secure.so" ] || fail "hakmem lib --secure: $("$H" lib --secure)"
    echo "ok: run --secure"
  else
    [ -e "$L/libhakmem-secure.so" ] && fail "libhakmem-secure.so installed but not built"
    expect_error 127 "make secure" "$H" run --secure -- true || return 1
  fi
  expect_error 2 "unknown option" "$H" run --frobnicate -- true || return 1
  # an installed launcher without its library
  mkdir -p "$WORK/lonely/bin" && cp "$H" "$WORK/lonely/bin/hakmem"
  expect_error 127 "libhakmem.so not found" "$WORK/lonely/bin/hakmem" run -- true || return 1

  # through a symlink elsewhere (e.g. ~/bin/hakmem)
  ln -s "$H" "$WORK/hakmem-link"
  HAKMEM_VERBOSE=1 "$WORK/hakmem-link" run -- true 2>&1 | grep -q '^hakmem: active' ||
    fail "launcher run through a symlink did not preload"
  # the source tree's launcher, with the build directory's library
  HAKMEM_LIB=$B/libhakmem.so HAKMEM_VERBOSE=1 "$ROOT/tools/hakmem" run -- true 2>&1 |
    grep -q '^hakmem: active' || fail "tools/hakmem with HAKMEM_LIB did not preload"
  HAKMEM_LIB=$B/libhakmem.so "$ROOT/tools/hakmem" version | grep -qx "hakmem $VERSION (this launcher)" || fail "tools/hakmem version"
}

t_debuginfo() {
  need_tool gdb gdb || return 1
  local so=$L/libhakmem.so.$VERSION dbg=$L/libhakmem.so.$VERSION.debug out
  [ -f "$dbg" ] || fail "no debug file $dbg"
  readelf -S --wide "$dbg" | grep -q '\.debug_info' || fail "$dbg has no .debug_info"
  readelf -S --wide "$so" | grep -q '\.debug_info' && fail "$so still carries its debug info"
  readelf -S --wide "$so" | grep -q '\.gnu_debuglink' || fail "$so has no .gnu_debuglink"
  readelf -p .gnu_debuglink "$so" | grep -q "libhakmem.so.$VERSION.debug" || fail "debuglink names the wrong file"
  # gdb finds the debug file by itself
  out=$(gdb -nx -batch -ex 'info line hak_malloc' "$L/libhakmem.so" 2>&1)
  echo "$out"
  echo "$out" | grep -Eq 'Line [0-9]+ of ".*\.[ch]"' || fail "gdb cannot resolve hak_malloc to a source line"
  # a backtrace through hakmem in a running program
  local prog=$WORK/pc/hello_c
  [ -x "$prog" ] || prog=$WORK/cm/hello_c
  [ -x "$prog" ] || fail "no example program to debug"
  out=$(DEBUGINFOD_URLS= timeout 60 gdb -nx -batch -ex 'set breakpoint pending on' \
        -ex 'break hak_aligned_alloc' -ex run -ex bt "$prog" 2>&1)
  if echo "$out" | grep -q 'ptrace: Operation not permitted'; then
    echo "(gdb may not trace processes here: backtrace not checked)"
    return 0
  fi
  echo "$out" | grep -E '^#[0-9]' | head -n 5
  echo "$out" | grep -Eq '^#0 .*hak_aligned_alloc .* at .*alloc\.c:[0-9]+' ||
    { echo "$out" | tail -n 20; fail "no source line for hak_aligned_alloc in the backtrace"; return 1; }
}

t_rust() {
  if ! command -v cargo >/dev/null; then
    echo "cargo not installed"
    return 77
  fi
  export PKG_CONFIG_PATH=$L/pkgconfig
  # a copy: cargo writes Cargo.lock beside Cargo.toml, in a format that
  # depends on its version
  mkdir -p "$WORK/rust-src"
  cp -r "$ROOT/examples/rust/Cargo.toml" "$ROOT/examples/rust/build.rs" "$ROOT/examples/rust/src" \
        "$WORK/rust-src/" || fail "cannot copy examples/rust"
  cargo --version
  local kind
  # static and dylib, the spellings the docs give; dynamic, the one they
  # once gave, is taken as dylib
  for kind in static dylib dynamic; do
    HAKMEM_LINK=$kind cargo build --offline --quiet --manifest-path "$WORK/rust-src/Cargo.toml" \
      --target-dir "$WORK/rust-$kind" || fail "cargo build --offline ($kind) failed" || return 1
    local exe=$WORK/rust-$kind/debug/hakmem-example
    expect_linked "$exe" "$([ $kind = static ] && echo static || echo shared)" || return 1
    expect_active "$exe" || return 1
  done
  # anything else stops the build, naming the spellings
  local err
  err=$(HAKMEM_LINK=shared cargo build --offline --quiet --manifest-path "$WORK/rust-src/Cargo.toml" \
          --target-dir "$WORK/rust-bad" 2>&1) && fail "HAKMEM_LINK=shared built"
  echo "$err" | grep -q 'HAKMEM_LINK=shared: use "static" or "dylib"' ||
    { echo "$err" | tail -n 5; fail "HAKMEM_LINK=shared: no message naming static and dylib"; }
}

echo "== ecosystem: $B -> $P"
L=
check ecosystem/install t_install
L=$(cat "$WORK/libdir" 2>/dev/null)
if [ -z "$L" ]; then
  echo "FAIL ecosystem (install failed: nothing else to check)"
  failed=$((failed + 1))
else
  check ecosystem/pkgconfig t_pkgconfig
  check ecosystem/cmake     t_cmake
  check ecosystem/launcher  t_launcher
  check ecosystem/debuginfo t_debuginfo
  check ecosystem/rust      t_rust
fi
echo "$passed passed, $failed failed$([ $skipped -eq 0 ] || echo ", $skipped skipped")"
[ $failed -eq 0 ]
