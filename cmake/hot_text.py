#!/usr/bin/env python3
"""Regenerate cmake/hot_text.ld: the functions a program runs, placed first.

The kernel maps a shared library's text 64 KiB at a time around each page a
program touches (fault-around), so every 64 KiB window of libhakmem's
158 KiB of code that holds one function a program runs counts in its RSS.
Laid out in source order, a program that only starts up, allocates small
blocks and exits touched all of them. This script runs a set of workloads
under callgrind with the library preloaded, lists the library's functions
each one ran, and writes the list cmake/hot_text.cmake puts at the top
of .text: what the smallest workload ran first, so a small program's code
sits in the first window. A function missing from the list is only placed
later; nothing else depends on the list.

Usage (from the repository root, after a release build with tests and
benchmarks):
    python3 cmake/hot_text.py [BUILD_DIR]      (default: build)
Needs valgrind. Rerun it when functions are renamed or split
(tests/system/hot_text.sh fails when a listed name is gone).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
LIB = os.path.join(BUILD, "libhakmem.so")
BENCH = os.path.join(BUILD, "bench")
OUT = os.path.join(ROOT, "cmake", "hot_text.ld")

# (name, environment, command), the smallest first: start-up and exit,
# small, mid and big blocks, threads and their exit, cross-thread frees,
# fork, a C++ program. What the first one runs comes first, then what each
# next one adds (those run by more workloads first).
WORKLOADS = [
    # the test of this list, as its second run (the one that measures): the
    # first copies the library and runs itself again on the copy, and that
    # run, traced as a child, did not start under valgrind here (its exec
    # failed in valgrind's loader), which left its functions to later
    # workloads and out of the first window
    ("lib_pages", {"LD_PRELOAD": os.path.realpath(LIB), "HK_LIB_PAGES_COPY": os.path.realpath(LIB)},
     [f"{BUILD}/tests/test_lib_pages"]),
    ("tiny", {}, [f"{BENCH}/bench_tiny", "2000", "16", "100"]),
    ("tiny_lowmem", {"HAKMEM_PROFILE": "lowmem"}, [f"{BENCH}/bench_tiny", "2000", "16", "100"]),
    ("random_mixed", {}, [f"{BENCH}/bench_random_mixed", "100000", "400", "16", "1024", "1"]),
    # the same under lowmem, long enough for its purge clock's ticks (the
    # partial lists' order and the mid classes' sparse marks run at each)
    ("random_mixed_lowmem", {"HAKMEM_PROFILE": "lowmem"},
     [f"{BENCH}/bench_random_mixed", "2000000", "400", "16", "1024", "1"]),
    ("mid", {}, [f"{BENCH}/bench_mid", "1", "20000"]),
    ("xthread", {}, [f"{BENCH}/bench_xthread", "1", "20000", "16", "512", "7", "64"]),
    ("large", {}, [f"{BENCH}/bench_large", "0", "8", "64k", "32m", "3", "1"]),
    # big blocks under lowmem (a big free past the span cap purges at once),
    # and the test of them (release/lib_pages_large*, its measuring run)
    ("large_lowmem", {"HAKMEM_PROFILE": "lowmem"}, [f"{BENCH}/bench_large", "0", "8", "64k", "32m", "3", "5"]),
    ("lib_pages_large", {"LD_PRELOAD": os.path.realpath(LIB), "HK_LIB_PAGES_COPY": os.path.realpath(LIB),
                         "HAKMEM_PROFILE": "lowmem"},
     [f"{BUILD}/tests/test_lib_pages", "large"]),
    ("lru", {}, [f"{BENCH}/bench_lru", "64", "6", "10000", "64", "512", "150", "1"]),
    ("thread_churn", {}, [f"{BENCH}/bench_thread_churn", "3", "4", "200", "100", "3", "8", "2", "7"]),
    ("shell", {}, ["/bin/sh", "-c", "echo a | cat > /dev/null; ls / > /dev/null"]),
    ("python3", {}, ["python3", "-c", "import json; json.dumps(list(range(1000)))"]),
    ("cmake", {}, ["cmake", "--version"]),
    # a program of a few hundred thousand blocks: the guarded sampler takes
    # a block now and then and walks its stack (the unwinder, placed after
    # this list: UNWINDER; lowmem takes no stacks by default, so the knob
    # asks for them), and under lowmem the purge thread starts and runs
    # its idle passes. Without them here, that code sat in a
    # third window of its own (64 KiB more of the library resident in a
    # busy program: docs/ARCHITECTURE.md, "The library's own pages")
    ("sampled_lowmem", {"HAKMEM_PROFILE": "lowmem", "HAKMEM_GUARDED_RATE": "100", "HAKMEM_GUARDED_STACKS": "1"},
     [f"{BENCH}/bench_xthread", "1", "100000", "16", "512", "7", "64"]),
    # the test of that (release/lib_pages_busy, its measuring run as above),
    # whose purge thread also gives back and caches an emptied superslab
    ("lib_pages_busy", {"LD_PRELOAD": os.path.realpath(LIB), "HK_LIB_PAGES_COPY": os.path.realpath(LIB),
                        "HAKMEM_PROFILE": "lowmem", "HAKMEM_GUARDED_RATE": "50", "HAKMEM_GUARDED_STACKS": "1",
                        "HAKMEM_BACKGROUND_PURGE": "on", "HAKMEM_PURGE_DELAY_MS": "1"},
     [f"{BUILD}/tests/test_lib_pages", "busy"]),
    # what a program does with a sampled block besides freeing it (realloc,
    # malloc_usable_size): at a high rate, a program that does all of it
    ("python3_sampled", {"HAKMEM_GUARDED_RATE": "5"},
     ["python3", "-c", "import json; json.dumps(list(range(1000)))"]),
]

# libgcc's unwinder, linked in (-static-libgcc): the sampler's stack walks.
# Its objects have one .text each, so they are named by archive member.
UNWINDER = ["unwind-dw2.o", "unwind-dw2-fde-dip.o"]

LINE = re.compile(r"^\s*[0-9,]+ \([ 0-9.]+%\)\s+(\S+):(\S+) \[(.*)\]")


# Runs of each workload: threads and the purge thread make what a run
# reaches vary (a lock wait, a park at a thread's exit); the list is the
# union, so that it changes less from one regeneration to the next (a few
# functions of the purge passes still come and go: after regenerating,
# run release/lib_pages_busy a few dozen times).
RUNS = 3


def functions_run(outdir, name, env, cmd):
    """The library's functions one workload ran (every process it made, in
    each of RUNS runs)."""
    # the sampler draws its blocks at random: at its rarest but where a
    # workload asks for more, or a chance sample would move its code among
    # the first window's (not 0, which leaves out its start-up: no pool)
    e = dict(os.environ, LD_PRELOAD=LIB, HAKMEM_GUARDED_RATE="1000000000")
    e.update(env)
    out = os.path.join(outdir, name + ".%p")
    for _ in range(RUNS):
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        "--callgrind-out-file=" + out] + cmd, env=e,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    found = set()
    for f in os.listdir(outdir):
        if not f.startswith(name + "."):
            continue
        ann = subprocess.run(["callgrind_annotate", "--threshold=100", os.path.join(outdir, f)],
                             capture_output=True, text=True).stdout
        for line in ann.splitlines():
            m = LINE.match(line)
            if m and "libhakmem" in m.group(3) and not m.group(2).startswith("0x"):
                found.add(m.group(2))
    return found


def defined(lib):
    """The library's function symbols (static ones too)."""
    names = set()
    out = subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            names.add(p[2])
    return names


def unwinder_functions():
    """The functions of UNWINDER's objects, which the list leaves to the
    archive-member lines (a name pattern matches no section of theirs)."""
    ar = subprocess.run(["gcc", "-print-file-name=libgcc_eh.a"], capture_output=True, text=True).stdout.strip()
    out = subprocess.run(["nm", ar], capture_output=True, text=True).stdout if ar else ""
    names, member = set(), None
    for line in out.splitlines():
        if line.endswith(":"):
            member = line[:-1]
            continue
        p = line.split()
        if member in UNWINDER and len(p) == 3 and p[1] in "tTwW":
            names.add(p[2])
    return names


def main():
    counts = collections.Counter()
    first = {}  # the first workload (smallest first) that ran it
    with tempfile.TemporaryDirectory() as d:
        for i, (name, env, cmd) in enumerate(WORKLOADS):
            ran = functions_run(d, name, env, cmd)
            print(f"{name:14s} {len(ran):4d} functions", file=sys.stderr)
            counts.update(ran)
            for f in ran:
                first.setdefault(f, i)
    names = defined(os.path.realpath(LIB)) - unwinder_functions()
    hot = sorted((f for f in counts if f in names), key=lambda f: (first[f], -counts[f], f))
    with open(OUT, "w") as o:
        o.write("/* Generated by cmake/hot_text.py: the functions the workloads there ran,\n"
                " * what the smallest ran first, then what each next one adds (see that\n"
                " * script for why),\n"
                " * included at the top of .text by cmake/hot_text.cmake.\n"
                " * crtbeginS.o's code runs at every load and exit, libc_nonshared.a's\n"
                " * (pthread_atfork) at start-up; libgcc's unwinder (the sampler's stack\n"
                " * walks) comes last. */\n")
        o.write("*crtbeginS.o(.text .text.*)\n*libc_nonshared.a:*(.text .text.*)\n")
        for f in hot:
            o.write(f"*(.text.{f} .text.unlikely.{f} .text.startup.{f} .text.exit.{f})\n")
        for m in UNWINDER:
            o.write(f"*libgcc_eh.a:{m}(.text .text.*)\n")
    print(f"wrote {OUT}: {len(hot)} functions", file=sys.stderr)


if __name__ == "__main__":
    main()
