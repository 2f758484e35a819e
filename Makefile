# Thin wrapper over CMake. `make` = release build in build/,
# `make debug` = assertions and heap checks in build-debug/.
JOBS    ?= $(shell nproc)
CMAKE   ?= cmake

.PHONY: all lib release debug secure valgrind measures security-matrix install check test test-release test-debug bench bench-full soak clean

all: release

# build-lib/: the library alone (libhakmem.so, libhakmem.a, the launcher
# build-lib/launcher/hakmem), no tests and no benchmarks; then one real
# program run on it, so that you see hakmem ran ("hakmem: active ...").
lib:
	@$(CMAKE) -S . -B build-lib -DCMAKE_BUILD_TYPE=Release -DHAKMEM_BUILD_TESTS=OFF -DHAKMEM_BUILD_BENCH=OFF >/dev/null
	@$(CMAKE) --build build-lib -j $(JOBS)
	@echo "make lib: built build-lib/; a real program on it, ls, with HAKMEM_VERBOSE=1:"
	@HAKMEM_VERBOSE=1 LD_PRELOAD=$(CURDIR)/build-lib/libhakmem.so ls -l build-lib/libhakmem.so build-lib/libhakmem.a

release:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS)

debug:
	@$(CMAKE) -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DHAKMEM_DEBUG=ON >/dev/null
	@$(CMAKE) --build build-debug -j $(JOBS)

# build/libhakmem-secure.so: the hardened build (docs/SECURITY.md)
secure:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS) --target hakmem-secure

# build/libhakmem-valgrind.so: blocks announced to memcheck (docs/VALGRIND.md)
valgrind:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS) --target hakmem-valgrind

# libraries (+ .debug), hakmem.h, hakmem.pc, CMake package, launcher under
# PREFIX, from what is already built: it compiles nothing, so that
# `make lib && sudo make install` compiles as you and only copies as root.
# From build-lib/ (make lib) or build/ (make), whichever was built last;
# INSTALL_FROM=DIR chooses.
PREFIX  ?= /usr/local
INSTALL_FROM ?= $(or $(patsubst %/libhakmem.so,%,$(firstword $(shell ls -tL build-lib/libhakmem.so build/libhakmem.so 2>/dev/null))),build-lib)
install:
	@test -e $(INSTALL_FROM)/libhakmem.so || { echo "make install: nothing built in $(INSTALL_FROM)/: run 'make lib' first (as yourself, not as root)" >&2; exit 1; }
	@echo "make install: from $(INSTALL_FROM)/ into $(DESTDIR)$(PREFIX)"
	@DESTDIR=$(DESTDIR) $(CMAKE) --install $(INSTALL_FROM) --prefix $(PREFIX)

# The quick loop: unit, API, stress and attack tests of the release build
# (ctest label quick; docs/TESTING.md).
check: release
	@env -u LD_PRELOAD ctest --test-dir build -j $(JOBS) -L quick --output-on-failure

# The whole suite, what CI runs: every ctest of the release build (sanitizer
# builds included) and of the debug build, one summary line at the end.
# The attack matrix alone (tests/security/matrix.txt): the attack suite on
# one library per hardening measure (docs/SECURITY.md).
security-matrix: release
	@env -u LD_PRELOAD ctest --test-dir build -j $(JOBS) -L matrix --output-on-failure

# the measure libraries alone (build/measures/)
measures:
	@$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(CMAKE) --build build -j $(JOBS) --target measures

test: release debug
	@HAKMEM_TEST_SANITIZE=1 bash tests/run_tests.sh build build-debug

test-release: release
	@bash tests/run_tests.sh build

test-debug: debug
	@bash tests/run_tests.sh build-debug

bench: release
	@python3 bench/harness.py --quick

bench-full: release
	@python3 bench/harness.py --full

soak: release
	@python3 bench/harness.py --soak $(if $(MINUTES),--minutes $(MINUTES),)

clean:
	rm -rf build build-debug build-lib
