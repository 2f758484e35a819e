#!/usr/bin/env python3
"""hakmem benchmark harness (Python 3 standard library only).

    python3 bench/harness.py --quick          # make bench       (3 runs each, short)
    python3 bench/harness.py --full           # make bench-full  (10 runs each, seed sizes)
    python3 bench/harness.py --soak [--minutes N]   # make soak
    python3 bench/harness.py --quick --variants --allocators hakmem --only learner
                                              # default hakmem vs its variants

Every benchmark runs under hakmem (LD_PRELOAD of build/libhakmem.so, and the
*_hakmem_static binaries linked against build/libhakmem.a), glibc, and every
peer allocator installed (mimalloc, jemalloc, tcmalloc); allocators are
interleaved run by run (A B C A B C ...). With --variants (on in --full) hakmem
also runs as variants, each labelled and compared with the default hakmem:
hakmem:fast (HAKMEM_PROFILE=fast), hakmem:lowmem (HAKMEM_PROFILE=lowmem),
hakmem:learn (HAKMEM_LEARN=1), hakmem:prof (HAKMEM_PROF=1) and hakmem-secure
(build/libhakmem-secure.so).
Every program proves at run time
which allocator served it (`allocator: NAME (PATH)`, see bench_common.h and
probe.c); a run whose allocator is not the one requested is REJECTED and never
enters the statistics. OS calls (mmap, munmap, madvise, brk, mremap) are
counted with `strace -f -c` in a separate run per benchmark and allocator.

A crash is a verdict: a benchmark row (one benchmark, one allocator) with any
run that died (killed by a signal, non-zero exit, timed out, or output that
fails the allocator proof) is FAIL in every table, with no median of the
runs that survived. A run killed by a signal is re-run once under gdb
(address randomisation on, as in the timed runs) and labelled "reproduced" or
"not reproduced"; the row stays FAIL either way.

Every row also gets a verdict against the best peer (bench/verdict.py): the
ratio of hakmem's median to the best peer's (highest median throughput;
separately lowest median peak RSS), oriented so that > 1 means hakmem is
better, with a 95% bootstrap interval: ahead (interval above 1), behind
(below 1) or tie; FAIL for a FAIL row; n/a with fewer than 2 runs a side.
In the JSON: benchmarks[].verdicts and verdict_counts.

Two or more hakmem builds can share one interleaved run: --build NAME=DIR
(repeatable) adds the allocator hakmem:NAME, LD_PRELOAD of DIR/libhakmem.so
(the only file it needs from DIR), whose every run must print that very file
(realpath) or is rejected; the benchmark programs come from the default build
(plain --build DIR, default build/). The report then gets "Builds compared":
per row, each named build ÷ the first named build (with a single named build:
÷ the default hakmem), throughput and peak RSS, with the same bootstrap
interval: faster/slower (RSS: larger/smaller) beyond noise, or within noise.
In the JSON: benchmarks[].builds_compared and builds.

Results: bench/results/<date>-<mode>.json, .md (tables) and .svg (ratio chart),
and for the docs -table.md (the compact verdicts table) and -verdicts.svg
(hakmem ÷ best peer with its interval per row). --publish RESULTS.json puts
that table, and a link to the chart copied to docs/bench-latest.svg, between
the lines <!-- bench-table:begin --> and <!-- bench-table:end --> of
docs/BENCHMARKS.md and README.md (--publish-to FILE, --publish-svg FILE to
choose), touching nothing outside them; a file without the markers: exit 2,
nothing written.
Exit status: 0 when every run was accepted, 1 when some row is FAIL (a run
failed or was rejected; the reports are written either way), 2 on usage errors.
See docs/BENCHMARKS.md.
"""

import argparse
import atexit
import csv
import datetime
import html
import io
import json
import math
import os
import platform
import re
import shutil
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import verdict  # noqa: E402  (bench/verdict.py: ratios to the best peer with bootstrap intervals)

ROOT = Path(__file__).resolve().parent.parent
BENCH_SRC = ROOT / "bench"
BUILD = ROOT / "build"
BIN = BUILD / "bench"
RESULTS = BENCH_SRC / "results"
LIBDIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]

PROGRAMS = ["bench_tiny", "bench_random_mixed", "bench_mid", "larson", "bench_xthread",
            "bench_large", "bench_false_sharing", "bench_app", "bench_soak",
            "bench_large_rotate", "bench_phase", "bench_shift", "bench_drift", "bench_burst"]
OS_CALLS = ["mmap", "munmap", "madvise", "brk", "mremap"]

# --------------------------------------------------------------- allocators


class Allocator:
    """How one allocator is realised for a run, and what the run must print."""

    def __init__(self, label, expect, preload=None, static=False, package=None, note="", env=None,
                 expect_file=None, base=None, build=None, expect_path=None):
        self.label = label        # name in the reports
        self.expect = expect      # name the program must print
        self.preload = preload    # library to LD_PRELOAD (None: none)
        self.static = static      # use the *_hakmem_static binaries
        self.package = package
        self.note = note
        self.plain_binary = False  # --pretend: static label, plain binary
        self.env = dict(env or {})  # variant knobs (HAKMEM_PROFILE=fast, ...)
        self.expect_file = expect_file  # the printed library's file name must start so
        self.base = base          # a variant: the label it is compared with (hakmem)
        self.build = build        # --build NAME=DIR: NAME ("default" for the plain hakmem)
        self.expect_path = expect_path  # --build NAME=DIR: malloc must be in this very file

    def child_env(self):
        """Environment of a run of this allocator: --hakmem-env, then the
        variant's own knobs."""
        env = {}
        if self.expect == "hakmem":
            env.update(HAKMEM_ENV)
            env.update(self.env)
        return env

    def describe(self):
        if self.static:
            return ("linked with %s" % rel(BUILD / "libhakmem.a")) if not self.plain_binary else \
                "PRETEND: plain binary"
        pre = " ".join("%s=%s" % kv for kv in self.env.items())
        if self.preload:
            return (pre + " " if pre else "") + "LD_PRELOAD=" + self.preload
        return (pre + " " if pre else "") + "no preload"


def find_lib(names):
    for d in LIBDIRS:
        for n in names:
            p = Path(d) / n
            if p.exists():
                return str(p)
    return None


PEERS = [
    ("mimalloc", ["libmimalloc.so.2", "libmimalloc.so"], "libmimalloc2.0"),
    ("jemalloc", ["libjemalloc.so.2", "libjemalloc.so"], "libjemalloc2"),
    ("tcmalloc", ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"], "libtcmalloc-minimal4"),
]


def libc_path():
    return find_lib(["libc.so.6"]) or "/lib/x86_64-linux-gnu/libc.so.6"


def hakmem_so(name="libhakmem.so"):
    p = BUILD / name
    return str(p) if p.exists() else None


# --variants: hakmem under other settings, each compared with the default
VARIANTS = [
    ("hakmem:fast", {"HAKMEM_PROFILE": "fast"}, "libhakmem.so", "HAKMEM_PROFILE=fast"),
    ("hakmem:lowmem", {"HAKMEM_PROFILE": "lowmem"}, "libhakmem.so", "HAKMEM_PROFILE=lowmem"),
    ("hakmem:learn", {"HAKMEM_LEARN": "1"}, "libhakmem.so", "HAKMEM_LEARN=1"),
    ("hakmem:prof", {"HAKMEM_PROF": "1", "HAKMEM_PROF_FILE": "/dev/null"}, "libhakmem.so",
     "HAKMEM_PROF=1 (heap profiling, default rate; the profile to /dev/null)"),
    ("hakmem-secure", {}, "libhakmem-secure.so", "the hardened build (`make secure`)"),
]
VARIANT_LABELS = [v[0] for v in VARIANTS]

# --build NAME=DIR (repeatable): more hakmem builds in the same interleaved
# run, each labelled hakmem:NAME and served by DIR/libhakmem.so (the benchmark
# programs always come from the default build: they are plain malloc programs)
BUILDS = []   # [(NAME, Path DIR)] in command-line order


def build_label(name):
    return "hakmem:" + name


def build_allocators():
    return [Allocator(build_label(n), "hakmem", preload=str(d / "libhakmem.so"), expect_file="libhakmem.so",
                      build=n, expect_path=str(d / "libhakmem.so"), note="build %s: %s" % (n, d))
            for n, d in BUILDS]


def discover_allocators(args, log):
    """Returns (allocators, skipped) in run order."""
    allocs, skipped = [], []
    so = hakmem_so()
    if so:
        allocs.append(Allocator("hakmem", "hakmem", preload=so, note="preloaded", expect_file="libhakmem.so",
                                build="default" if BUILDS else None))
    else:
        skipped.append({"allocator": "hakmem", "reason": "build/libhakmem.so not found: run `make` first"})
    if args.variants:
        for label, env, lib, what in VARIANTS:
            vso = hakmem_so(lib)
            if vso:
                allocs.append(Allocator(label, "hakmem", preload=vso, env=env, expect_file=lib,
                                        base="hakmem", note="variant: " + what))
            else:
                skipped.append({"allocator": label, "reason": "build/%s not found: run `make%s` first" % (
                    lib, " secure" if "secure" in lib else "")})
    allocs += build_allocators()
    if (bin_dir() / "bench_tiny_hakmem_static").exists():
        allocs.append(Allocator("hakmem-static", "hakmem", static=True, note="static link"))
    else:
        skipped.append({"allocator": "hakmem-static",
                        "reason": "build/bench/*_hakmem_static not built (needs build/libhakmem.a: run `make`)"})
    allocs.append(Allocator("glibc", "glibc", note="system malloc"))
    for name, libs, pkg in PEERS:
        lib = find_lib(libs)
        if lib:
            allocs.append(Allocator(name, name, preload=lib, package=pkg))
        else:
            skipped.append({"allocator": name,
                            "reason": "not installed: apt-get install -y %s" % pkg})
    # --pretend LABEL=HOW: realise LABEL some other way (bench/selftest.sh uses
    # it to prove that a mis-linked run is caught)
    for spec in args.pretend or []:
        label, _, how = spec.partition("=")
        expect = "hakmem" if label.startswith("hakmem") else label
        known = {v[0]: v for v in VARIANTS}
        vfile = known[label][2] if label in known else ("libhakmem.so" if label == "hakmem" else None)
        venv = known[label][1] if label in known else {}
        allocs = [a for a in allocs if a.label != label]
        skipped = [s for s in skipped if s["allocator"] != label]
        if how in ("", "none"):
            a = Allocator(label, expect, note="PRETEND: no preload")
        elif how == "plain":
            a = Allocator(label, expect, static=True, note="PRETEND: plain binary")
            a.plain_binary = True
        else:
            a = Allocator(label, expect, preload=how, note="PRETEND: LD_PRELOAD=" + how)
        a.expect_file, a.env = vfile, dict(venv)
        if label in known:
            a.base = "hakmem"
        named = {b.label: b for b in build_allocators()}
        if label in named:   # hakmem:NAME must be served by NAME's own library
            a.build, a.expect_path, a.expect_file = named[label].build, named[label].expect_path, "libhakmem.so"
        allocs.insert(0, a)
    if args.allocators:
        want = [w.strip() for w in args.allocators.split(",") if w.strip()]
        for w in want:
            if not any(a.label == w for a in allocs) and not any(s["allocator"] == w for s in skipped):
                log("unknown allocator %r (known: hakmem, hakmem-static, glibc, mimalloc, jemalloc, tcmalloc, "
                    "with --variants %s, and hakmem:NAME for each --build NAME=DIR)" % (w, ", ".join(VARIANT_LABELS)))
        # a build named by --build NAME=DIR was asked for: always measured
        builds = {b.label for b in build_allocators()}
        allocs = [a for a in allocs if a.label in want or a.label in builds]
        skipped = [s for s in skipped if s["allocator"] in want or s["allocator"] in builds]
    return allocs, skipped


# ----------------------------------------------------------------- building

def bin_dir():
    return BIN


def ensure_built(log):
    """The programs are CMake's (bench/CMakeLists.txt, built by `make` into
    BUILD/bench): the harness builds nothing itself, so what it measures is
    what the project's one build system made."""
    missing = [p for p in PROGRAMS if not (BIN / p).exists()]
    if not (BIN / "libbenchprobe.so").exists():
        missing.append("libbenchprobe.so")
    if missing:
        log("%s lacks %s: run `make` (or `cmake --build %s`) first" % (BIN, ", ".join(missing), BUILD))
        return False
    return True


# ------------------------------------------------------------ running things

class Proc:
    def __init__(self, rc, out, err, wall, maxrss_kib, timed_out):
        self.rc, self.out, self.err = rc, out, err
        self.wall, self.maxrss_kib, self.timed_out = wall, maxrss_kib, timed_out


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_program(cmd, env, timeout, cwd=None):
    """Runs cmd to completion; returns its output, wall time and the peak RSS
    of the process tree (wait4 rusage)."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env,
                                 cwd=cwd, start_new_session=True)
        except OSError as e:
            return Proc(127, "", "cannot start %s: %s" % (cmd[0], e), 0.0, 0, False)
        timed_out = []
        timer = threading.Timer(timeout, lambda: (timed_out.append(1), _killpg(p.pid)))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        _killpg(p.pid)            # stray children of a crashed program
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode("utf-8", "replace")
        err = fe.read().decode("utf-8", "replace")
    return Proc(p.returncode, out, err, wall, ru.ru_maxrss, bool(timed_out))


def clean_env():
    env = {}
    drop_prefixes = ("LD_", "MALLOC_", "HAKMEM_", "MIMALLOC_", "JE_", "TCMALLOC_", "GLIBC_TUNABLES",
                     "PYTHON")
    for k, v in os.environ.items():
        if k.startswith(drop_prefixes) or k == "MALLOC_CONF":
            continue
        env[k] = v
    env["LC_ALL"] = "C"
    return env


def rc_text(rc):
    if rc < 0:
        try:
            return "killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def exit_fields(rc, timed_out=False):
    """How a process ended, for the JSON: exit_status (None when killed) and
    signal (its name, None when it exited)."""
    d = {"exit_status": None, "signal": None}
    if rc is None:
        return d
    if rc < 0:
        try:
            d["signal"] = signal.Signals(-rc).name
        except ValueError:
            d["signal"] = "signal %d" % -rc
    else:
        d["exit_status"] = rc
    if timed_out:
        d["timed_out"] = True
    return d


# --inject-crash BENCH/LABEL=N (testing aid, bench/selftest.sh): start N of
# that row's program kills itself with SIGSEGV (every start when N is 0)
INJECT = {}
INJECT_DIR = None


def inject_crash(bench, label, cmd):
    """Wraps cmd in a shell that counts its starts in a file and, on the start
    chosen by --inject-crash, kills itself with SIGSEGV instead of running it.
    Every start counts (a gdb re-run too), so a crash on one start only is a
    crash that gdb does not reproduce."""
    n = INJECT.get((bench, label))
    if n is None:
        return cmd
    global INJECT_DIR
    if INJECT_DIR is None:
        INJECT_DIR = tempfile.mkdtemp(prefix="hakmem-inject-")
        atexit.register(shutil.rmtree, INJECT_DIR, True)
    counter = os.path.join(INJECT_DIR, re.sub(r"[^\w.-]", "_", "%s-%s" % (bench, label)))
    script = ('n=$(( $(cat "$0" 2>/dev/null || echo 0) + 1 )); echo $n >"$0"; '
              'if [ %d -eq 0 ] || [ $n -eq %d ]; then kill -SEGV $$; fi; exec "$@"' % (n, n))
    return ["/bin/sh", "-c", script, counter] + cmd


def strace_prefix(outfile, env_for_child):
    cmd = ["strace", "-f", "-qq", "-c", "-o", str(outfile), "-e", "trace=" + ",".join(OS_CALLS)]
    if STRACE_SECCOMP:
        cmd.append("--seccomp-bpf")
    for k, v in env_for_child.items():
        cmd += ["-E", "%s=%s" % (k, v)]
    return cmd


STRACE_SECCOMP = True


def parse_strace(path):
    counts = {c: 0 for c in OS_CALLS}
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in counts and parts[0][0].isdigit():
            try:
                counts[parts[-1]] = int(parts[3])
            except ValueError:
                pass
    return counts


RE_ALLOC = re.compile(r"^allocator: (\S+) \((.*)\)\s*$", re.M)
RE_TP = re.compile(r"^Throughput = ([0-9.eE+]+) ops/s", re.M)
RE_OPS = re.compile(r"^Ops = (\d+)", re.M)
RE_RSS = re.compile(r"^Peak RSS = (\d+) KiB", re.M)
RE_WORK = re.compile(r"^work: (\S+)", re.M)


def check_allocator(alloc, printed, binary=None):
    """Returns None when the printed allocator is the one requested, else why not."""
    if not printed:
        return "the program printed no `allocator:` line"
    name, path = printed
    if name != alloc.expect:
        return "printed allocator %s (%s) but %s was requested" % (name, path, alloc.label)
    if alloc.preload and os.path.realpath(alloc.preload) != os.path.realpath(path):
        return "malloc is defined in %s, not in the preloaded %s" % (path, alloc.preload)
    if alloc.expect_path and os.path.realpath(path) != os.path.realpath(alloc.expect_path):
        return "malloc is defined in %s, but %s must be served by its build's %s" % (
            path, alloc.label, alloc.expect_path)
    if alloc.expect_file and not alloc.static and \
            not os.path.basename(os.path.realpath(path)).startswith(alloc.expect_file):
        return "malloc is defined in %s, but %s must be served by %s" % (path, alloc.label, alloc.expect_file)
    if alloc.static and binary and os.path.realpath(binary) != os.path.realpath(path):
        return "malloc is defined in %s, not in the statically linked %s" % (path, binary)
    return None


# --------------------------------------------------------------- benchmarks

class Bench:
    kind = "synthetic"

    def __init__(self, name, prog, quick, full, op, desc, deterministic=True, static=True,
                 timeout=(120, 600), full_only=False):
        self.name, self.prog, self.quick, self.full = name, prog, quick, full
        self.op, self.desc, self.deterministic, self.static = op, desc, deterministic, static
        self.timeout = timeout
        self.full_only = full_only

    def available(self):
        return None  # or why this benchmark cannot run here

    def args(self, mode):
        return [str(a) for a in (self.quick if mode == "quick" else self.full)]

    def binary(self, alloc):
        d = bin_dir()
        if alloc.static and not alloc.plain_binary:
            return d / (self.prog + "_hakmem_static")
        return d / self.prog

    def applies(self, alloc):
        return self.static or not alloc.static

    def command(self, alloc, mode):
        return inject_crash(self.name, alloc.label, [str(self.binary(alloc))] + self.args(mode))

    def run(self, alloc, mode, count_file=None):
        env = clean_env()
        child = {}
        child.update(alloc.child_env())
        if alloc.preload:
            child["LD_PRELOAD"] = alloc.preload
        cmd = self.command(alloc, mode)
        if count_file:
            cmd = strace_prefix(count_file, child) + cmd
        else:
            env.update(child)
        timeout = self.timeout[0 if mode == "quick" else 1]
        p = run_program(cmd, env, timeout)
        rec = {"cmd": shell_line(child, self.command(alloc, mode)), "wall_s": round(p.wall, 4)}
        rec.update(exit_fields(p.rc, p.timed_out))
        m = RE_ALLOC.search(p.out)
        printed = (m.group(1), m.group(2)) if m else None
        rec["printed_allocator"] = list(printed) if printed else None
        if p.timed_out:
            return fail(rec, "timed out after %d s" % timeout, p)
        if p.rc != 0:
            fail(rec, rc_text(p.rc), p)
            key = (self.name, alloc.label)
            if p.rc < 0 and USE_GDB and key not in GDB_DONE and not count_file:
                GDB_DONE.add(key)
                rec["gdb"], rec["backtrace"] = gdb_backtrace(self.command(alloc, mode), child)
            return rec
        why = check_allocator(alloc, printed, str(self.binary(alloc)))
        if why:
            rec.update(status="rejected", reason=why)
            return rec
        tp, ops, rss = RE_TP.search(p.out), RE_OPS.search(p.out), RE_RSS.search(p.out)
        if not tp or not ops:
            return fail(rec, "no `Throughput =` / `Ops =` line in the output", p)
        w = RE_WORK.search(p.out)
        hv = re.search(r"^hakmem_version: (\S+)", p.out, re.M)
        rec.update(status="ok", throughput=float(tp.group(1)), ops=int(ops.group(1)),
                   rss_kib=int(rss.group(1)) if rss else p.maxrss_kib,
                   work=w.group(1) if w else None)
        if hv:
            rec["hakmem_version"] = hv.group(1)
        return rec


def fail(rec, why, p):
    rec.update(status="failed", reason=why,
               stderr_tail=p.err[-1500:], stdout_tail=p.out[-800:])
    return rec


GDB_DONE = set()
USE_GDB = True
HAKMEM_ENV = {}   # --hakmem-env KEY=VAL: knobs for the hakmem runs only


def gdb_backtrace(cmd, child_env, timeout=180):
    """Re-runs a crashed program under gdb, with address randomisation on as
    in the timed runs (gdb turns it off by default). Returns (label, text):
    "reproduced" with the backtraces of all its threads when it died again
    (the allocator under test preloaded into the program only, not into gdb),
    else "not reproduced" with how it ended. The row is FAIL either way."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "not re-run", "gdb not installed (apt-get install -y gdb)"
    g = [gdb, "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off",
         "-ex", "set disable-randomization off"]
    if child_env:
        g += ["-ex", "set exec-wrapper env " + " ".join("%s=%s" % kv for kv in child_env.items())]
    g += ["-ex", "run", "-ex", "info registers rip", "-ex", "thread apply all bt 25", "--args"] + cmd
    p = run_program(g, clean_env(), timeout)
    text = p.out + p.err
    keep = [l for l in text.splitlines() if l.startswith(("#", "Thread", "Program", "rip", "[Inferior"))
            or "signal" in l]
    died = re.search(r"^Program (received|terminated with) signal", text, re.M)
    label = "reproduced" if died else ("not reproduced (gdb timed out after %d s)" % timeout
                                       if p.timed_out else "not reproduced")
    return label, "\n".join(keep)[-6000:] or text[-3000:]


def shell_line(env, cmd):
    pre = " ".join("%s=%s" % (k, v) for k, v in env.items())
    rel = []
    for c in cmd:
        s = str(c)
        if s.startswith(str(ROOT) + "/"):
            s = s[len(str(ROOT)) + 1:]
        rel.append(s if re.fullmatch(r"[\w./=:,+-]+", s) else "'%s'" % s.replace("'", "'\\''"))
    return (pre + " " if pre else "") + " ".join(rel)


class RealProgram(Bench):
    """A real program, preloaded with the allocator and the probe library."""
    kind = "real"

    def __init__(self, name, op, desc, timeout=(180, 900)):
        super().__init__(name, None, [], [], op, desc, deterministic=False, static=False, timeout=timeout)

    def child_env(self, alloc, probe_out):
        pre = [alloc.preload] if alloc.preload else []
        if alloc.label == "glibc" or (not alloc.preload and alloc.expect == "glibc"):
            # put glibc's malloc first even for programs linked with another
            # allocator (Debian's redis-server is linked with libjemalloc)
            pre = [libc_path()]
        pre.append(str(bin_dir() / "libbenchprobe.so"))
        env = {"LD_PRELOAD": ":".join(pre), "BENCH_PROBE_OUT": str(probe_out)}
        if alloc.expect == "hakmem":
            env.update(alloc.child_env())
            env["HAKMEM_VERBOSE"] = "1"
        return env

    def check_probe(self, alloc, probe_out, stderr_text, exe_filter=None):
        """Every process of the program must have been served by the allocator
        requested; with hakmem, HAKMEM_VERBOSE=1 must also have said so."""
        try:
            lines = Path(probe_out).read_text().splitlines()
        except OSError:
            lines = []
        seen = []
        for ln in lines:
            m = re.match(r"pid=(\d+) exe=(\S*) allocator: (\S+) \((.*)\)$", ln)
            if not m:
                continue
            exe = m.group(2)
            if exe_filter and not any(f in os.path.basename(exe) for f in exe_filter):
                continue
            seen.append((exe, m.group(3), m.group(4)))
        if not seen:
            return None, "the probe library reported no process (was it preloaded?)"
        for exe, name, path in seen:
            why = check_allocator(alloc, (name, path))
            if why:
                return seen, "%s: %s" % (os.path.basename(exe), why)
        if alloc.expect == "hakmem" and "hakmem: active" not in stderr_text:
            return seen, "the probe says hakmem, but HAKMEM_VERBOSE=1 printed no `hakmem: active` line"
        return seen, None


class Redis(RealProgram):
    def __init__(self):
        super().__init__("redis", "one request",
                         "redis-server preloaded with the allocator, driven over 127.0.0.1 by "
                         "redis-benchmark (not preloaded): pipelined SET/GET/INCR/LPUSH/LPOP/"
                         "SADD/HSET/ZADD/MSET with random keys and values")
        self.server = shutil.which("redis-server")
        self.client = shutil.which("redis-benchmark")
        self.cli = shutil.which("redis-cli")

    def available(self):
        # redis-server is in the Debian package redis-server; redis-benchmark
        # and redis-cli in redis-tools
        missing = [c for c, p in (("redis-server", self.server), ("redis-benchmark", self.client),
                                  ("redis-cli", self.cli)) if not p]
        if missing:
            pk = (["redis-server"] if "redis-server" in missing else []) + \
                 (["redis-tools"] if set(missing) & {"redis-benchmark", "redis-cli"} else [])
            self.packages = pk
            return "%s not found: install the Debian package%s %s (apt-get install -y %s)" % (
                ", ".join(missing), "s" if len(pk) > 1 else "", " and ".join(pk), " ".join(pk))
        return None

    def params(self, mode):
        n = 30000 if mode == "quick" else 100000
        return ["-n", str(n), "-c", "20", "-P", "16", "-d", "200", "-r", "200000",
                "-t", "set,get,incr,lpush,lpop,sadd,hset,zadd,mset"]

    def command(self, alloc, mode):
        return [self.server, "--port", "PORT", "--bind", "127.0.0.1", "--save", "''", "--appendonly", "no"]

    def _cli(self, port, *a, timeout=10):
        try:
            return subprocess.run([self.cli, "-h", "127.0.0.1", "-p", str(port)] + list(a),
                                  capture_output=True, text=True, timeout=timeout, env=clean_env())
        except subprocess.TimeoutExpired:
            return None

    def run(self, alloc, mode, count_file=None):
        timeout = self.timeout[0 if mode == "quick" else 1]
        with tempfile.TemporaryDirectory() as td:
            probe = Path(td) / "probe.txt"
            child = self.child_env(alloc, probe)
            port = free_port()
            srv = [self.server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
                   "--logfile", "", "--loglevel", "warning", "--dir", td]
            env = clean_env()
            cmd = srv
            if count_file:
                cmd = strace_prefix(count_file, child) + srv
            else:
                env.update(child)
            rec = {"cmd": shell_line(child, srv) + "  +  redis-benchmark -h 127.0.0.1 -p %d %s" % (
                port, " ".join(self.params(mode))), "wall_s": None}
            se, so = open(Path(td) / "stderr", "wb"), open(Path(td) / "stdout", "wb")
            sp = subprocess.Popen(cmd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, env=env,
                                  start_new_session=True)
            try:
                up = False
                for _ in range(200):
                    if sp.poll() is not None:
                        break
                    r = self._cli(port, "ping", timeout=2)
                    if r and r.stdout.strip() == "PONG":
                        up = True
                        break
                    time.sleep(0.05)
                if not up:
                    rec.update(exit_fields(sp.poll()))
                    return fail_text(rec, "redis-server did not come up (%s)" % (
                        rc_text(sp.returncode) if sp.returncode is not None else "no PONG in 10 s"),
                        Path(td) / "stderr", Path(td) / "stdout")
                info = self._cli(port, "info", "server")
                spid = None
                if info:
                    m = re.search(r"process_id:(\d+)", info.stdout)
                    spid = int(m.group(1)) if m else None
                t0 = time.perf_counter()
                b = run_program([self.client, "-h", "127.0.0.1", "-p", str(port), "--csv"] + self.params(mode),
                                clean_env(), timeout)
                wall = time.perf_counter() - t0
                rec["wall_s"] = round(wall, 4)
                hwm = None
                if spid:
                    try:
                        st = Path("/proc/%d/status" % spid).read_text()
                        m = re.search(r"VmHWM:\s+(\d+) kB", st)
                        hwm = int(m.group(1)) if m else None
                    except OSError:
                        pass
                alive = sp.poll() is None
                self._cli(port, "shutdown", "nosave", timeout=10)
                try:
                    sp.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    _killpg(sp.pid)
                    sp.wait()
            finally:
                if sp.poll() is None:
                    _killpg(sp.pid)
                    sp.wait()
                se.close()
                so.close()
            rec.update(exit_fields(sp.returncode))   # redis-server's
            rec["client_exit_status"] = b.rc
            err = (Path(td) / "stderr").read_text(errors="replace")
            if not alive:
                return fail_text(rec, "redis-server died during the benchmark (%s)" % rc_text(sp.returncode),
                                 Path(td) / "stderr", Path(td) / "stdout")
            if b.rc != 0 or b.timed_out:
                return fail_text(rec, "redis-benchmark failed (%s)" % (
                    "timed out" if b.timed_out else rc_text(b.rc)), Path(td) / "stderr", Path(td) / "stdout",
                    extra=b.err[-800:] + b.out[-800:])
            if sp.returncode not in (0, None) and not count_file:
                return fail_text(rec, "redis-server exited with %s at shutdown" % rc_text(sp.returncode),
                                 Path(td) / "stderr", Path(td) / "stdout")
            seen, why = self.check_probe(alloc, probe, err, exe_filter=["redis"])
            rec["printed_allocator"] = [seen[0][1], seen[0][2]] if seen else None
            if why:
                rec.update(status="rejected", reason=why)
                return rec
            tests, total_n, total_t = {}, 0, 0.0
            n = int(self.params(mode)[1])
            for row in csv.reader(io.StringIO(b.out)):
                if len(row) >= 2 and row[0] != "test":
                    try:
                        rps = float(row[1])
                    except ValueError:
                        continue
                    tests[row[0]] = rps
                    total_n += n
                    total_t += n / rps if rps > 0 else 0
            if not tests or total_t <= 0:
                rec.update(status="failed", reason="no results from redis-benchmark", stdout_tail=b.out[-800:])
                return rec
            rec.update(status="ok", throughput=total_n / total_t, ops=total_n, rss_kib=hwm, tests=tests)
            return rec


def fail_text(rec, why, errf, outf, extra=""):
    def tail(p, n):
        try:
            return Path(p).read_text(errors="replace")[-n:]
        except OSError:
            return ""
    rec.update(status="failed", reason=why, stderr_tail=tail(errf, 1500) + extra, stdout_tail=tail(outf, 500))
    return rec


def probe_peak_rss(probe_out, exe_filter=None):
    """Largest VmHWM reported at exit by the probe over the program's processes."""
    best = None
    try:
        lines = Path(probe_out).read_text().splitlines()
    except OSError:
        return None
    for ln in lines:
        m = re.match(r"pid=\d+ exe=(\S*) peak_rss_kib=(\d+)$", ln)
        if m and (not exe_filter or any(f in os.path.basename(m.group(1)) for f in exe_filter)):
            best = max(best or 0, int(m.group(2)))
    return best


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Python(RealProgram):
    def __init__(self):
        super().__init__("python3", "one work item (see bench/workloads/py_alloc.py)",
                         "python3 running bench/workloads/py_alloc.py (dicts, lists, strings, JSON, "
                         "sorting) with PYTHONMALLOC=malloc so every object goes through the allocator")
        self.exe = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else (
            shutil.which("python3") or sys.executable)
        self.deterministic = True

    def available(self):
        if not self.exe:
            self.packages = ["python3"]
            return "python3 not found: install the Debian package python3 (apt-get install -y python3)"
        return None

    def params(self, mode):
        return ["4" if mode == "quick" else "12"]

    def command(self, alloc, mode):
        return [self.exe, str(BENCH_SRC / "workloads" / "py_alloc.py")] + self.params(mode)

    def run(self, alloc, mode, count_file=None):
        timeout = self.timeout[0 if mode == "quick" else 1]
        with tempfile.TemporaryDirectory() as td:
            probe = Path(td) / "probe.txt"
            child = self.child_env(alloc, probe)
            child["PYTHONMALLOC"] = "malloc"
            child["PYTHONHASHSEED"] = "0"
            child["PYTHONDONTWRITEBYTECODE"] = "1"
            env = clean_env()
            cmd = self.command(alloc, mode)
            rec = {"cmd": shell_line(child, cmd)}
            if count_file:
                cmd = strace_prefix(count_file, child) + cmd
            else:
                env.update(child)
            p = run_program(cmd, env, timeout)
            rec["wall_s"] = round(p.wall, 4)
            rec.update(exit_fields(p.rc, p.timed_out))
            if p.timed_out:
                return fail(rec, "timed out after %d s" % timeout, p)
            if p.rc != 0:
                return fail(rec, rc_text(p.rc), p)
            seen, why = self.check_probe(alloc, probe, p.err, exe_filter=["python"])
            rec["printed_allocator"] = [seen[0][1], seen[0][2]] if seen else None
            if why:
                rec.update(status="rejected", reason=why)
                return rec
            tp, ops, w = RE_TP.search(p.out), RE_OPS.search(p.out), RE_WORK.search(p.out)
            if not tp or not ops:
                return fail(rec, "no Throughput line from the script", p)
            rec.update(status="ok", throughput=float(tp.group(1)), ops=int(ops.group(1)),
                       rss_kib=probe_peak_rss(probe, ["python"]) or p.maxrss_kib, work=w.group(1) if w else None)
            return rec


class Compile(RealProgram):
    def __init__(self):
        super().__init__("cc", "one compilation",
                         "cc -O2 -c of a generated C file (40 functions in quick mode, 200 in full: structs, "
                         "loops, switches); the gcc driver, cc1 and as are all preloaded")
        self.cc = shutil.which("cc") or shutil.which("gcc")

    def available(self):
        if not self.cc:
            self.packages = ["gcc"]
            return "no C compiler (cc, gcc) found: install the Debian package gcc (apt-get install -y gcc)"
        return None

    def params(self, mode):
        return ["-O2", "-c"]

    def source(self, mode):
        n = 40 if mode == "quick" else 200
        path = BUILD / "bench-work" / ("cc_input_%d.c" % n)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(generate_c(n))
        return path

    def command(self, alloc, mode):
        return [self.cc] + self.params(mode) + [str(self.source(mode)), "-o", "/dev/null"]

    def run(self, alloc, mode, count_file=None):
        timeout = self.timeout[0 if mode == "quick" else 1]
        with tempfile.TemporaryDirectory() as td:
            probe = Path(td) / "probe.txt"
            child = self.child_env(alloc, probe)
            env = clean_env()
            cmd = self.command(alloc, mode)
            rec = {"cmd": shell_line(child, cmd)}
            if count_file:
                cmd = strace_prefix(count_file, child) + cmd
            else:
                env.update(child)
            p = run_program(cmd, env, timeout, cwd=td)
            rec["wall_s"] = round(p.wall, 4)
            rec.update(exit_fields(p.rc, p.timed_out))
            if p.timed_out:
                return fail(rec, "timed out after %d s" % timeout, p)
            if p.rc != 0:
                return fail(rec, rc_text(p.rc), p)
            seen, why = self.check_probe(alloc, probe, p.err, exe_filter=["gcc", "cc1", "as", "cc", "collect"])
            rec["printed_allocator"] = [seen[0][1], seen[0][2]] if seen else None
            if why:
                rec.update(status="rejected", reason=why)
                return rec
            rec["processes"] = sorted({os.path.basename(s[0]) for s in seen})
            rec.update(status="ok", throughput=1.0 / p.wall, ops=1,
                       rss_kib=probe_peak_rss(probe) or p.maxrss_kib)
            return rec


def generate_c(n):
    """A deterministic C file that keeps cc1 busy (and allocating) for a while."""
    out = ["/* generated by bench/harness.py: compile-time workload */",
           "#include <stddef.h>", "#include <string.h>"]
    for i in range(n):
        out.append("""
struct s%(i)d { int a[%(m)d]; double d; char name[32]; struct s%(i)d *next; };
static int g%(i)d[64];
int f%(i)d(struct s%(i)d *p, int x)
{
    int s = 0;
    for (int i = 0; i < %(m)d; i++) {
        s += p->a[i] * (x + i) ^ g%(i)d[(i + x) & 63];
        if (s > %(k)d) s -= x * %(j)d;
        else if ((s & 7) == %(j7)d) s += p->name[i & 31];
    }
    switch ((x + s) & 15) {
    case 0: s += %(k)d; break;
    case 1: s ^= %(j)d; break;
    case 2: s = s * 3 + 1; break;
    case 3: if (p->next) s += f%(prev)d((void *)p->next, x - 1); break;
    case 4: memcpy(p->name, "abcdefghijklmnop", 16); break;
    case 5: s -= (int)p->d; break;
    case 6: p->d = s * 0.5 + x; break;
    default: s += x;
    }
    for (struct s%(i)d *q = p; q; q = q->next) s += q->a[(s & 0x7fff) %% %(m)d];
    return s + g%(i)d[s & 63];
}""" % {"i": i, "m": 8 + i % 9, "k": 1000 + i * 7, "j": i % 13 + 1, "j7": i % 7,
        "prev": i - 1 if i > 0 else 0})
    return "\n".join(out) + "\n"


def benchmarks(mode):
    Q = mode == "quick"
    B = []
    B.append(Bench("tiny", "bench_tiny", [500000, 16, 100], [10000000, 16, 100], "one malloc or free",
                   "16 B: 100 allocations then 100 frees, repeated"))
    B.append(Bench("random_mixed", "bench_random_mixed", [20000000, 400, 16, 1024, 1],
                   [20000000, 400, 16, 1024, 1], "one free + one malloc",
                   "400 slots, random sizes 16-1024 B, each op frees a random slot and refills it"))
    for sz in (128, 256, 512, 1024, 2048, 4096):
        quick_too = sz in (128, 4096)
        B.append(Bench("random_mixed_%d" % sz, "bench_random_mixed", [20000000, 400, sz, sz, 1],
                       [20000000, 400, sz, sz, 1], "one free + one malloc",
                       "as random_mixed, fixed size %d B" % sz, full_only=not quick_too))
    B.append(Bench("mid_1t", "bench_mid", [1, 2000000], [1, 4000000], "one free + one malloc",
                   "2-32 KiB blocks, random replacement in 1000 slots, 1 thread"))
    B.append(Bench("mid_4t", "bench_mid", [4, 1000000], [4, 4000000], "one free + one malloc",
                   "as mid_1t, 4 threads (each its own slots)"))
    B.append(Bench("larson_mid", "larson", [1, 2048, 32768, 10000, 1, 12345, 4],
                   [10, 2048, 32768, 10000, 1, 12345, 4], "one free + one malloc",
                   "Larson server simulation, 2-32 KiB, 4 thread lineages, a new thread every 10000 ops",
                   deterministic=False))
    B.append(Bench("larson_small", "larson", [1, 8, 1000, 5000, 100, 4141, 2],
                   [5, 8, 1000, 5000, 100, 4141, 2], "one free + one malloc",
                   "Larson server simulation, 8-1000 B, 2 thread lineages, a new thread every 500000 ops",
                   deterministic=False))
    B.append(Bench("xthread", "bench_xthread", [1, 2000000, 16, 512, 7, 64], [1, 5000000, 16, 512, 7, 64],
                   "one block (malloc by producer + free by consumer)",
                   "a producer->consumer pipeline (2 threads), 16-512 B blocks in batches of 64, every free is remote"))
    B.append(Bench("large_cycles", "bench_large", [5000, 8, "64k", "32m", 3, 0], [20000, 8, "64k", "32m", 3, 0],
                   "one malloc or free", "8 slots of 64 KiB-32 MiB (log-uniform), random replacement"))
    B.append(Bench("large_realloc", "bench_large", [0, 8, "64k", "32m", 3, 5], [0, 8, "64k", "32m", 3, 40],
                   "one malloc, realloc or free", "realloc growth by 1.5x from 64 KiB to 32 MiB, repeated"))
    B.append(Bench("large_zeroed", "bench_large", [500, 20, "5m", "25m", 3, 0, "zeroed"],
                   [2000, 20, "5m", "25m", 3, 0, "zeroed"], "one malloc or free",
                   "20 live buffers of 5-25 MiB, one replaced at random, every byte written "
                   "(make_unique<char[]>)"))
    B.append(Bench("false_sharing", "bench_false_sharing", [4, 10, 1000000, 8], [4, 50, 1000000, 8],
                   "one write to an object", "8 B objects allocated by one thread and written by 4 others"))
    B.append(Bench("thread_churn", "bench_thread_churn", [30, 8, 2000, 100, 3, 8, 2, 7],
                   [100, 8, 2000, 100, 3, 8, 2, 7], "one malloc or free",
                   "rounds of 8 short-lived threads, each ~2100 blocks of 16 B-32 KiB and 3 of "
                   "64 KiB-4 MiB, 8 blocks handed to (and freed by) a thread of the next round"))
    B.append(Bench("app", "bench_app", [2, 200000, 11], [5, 200000, 11], "one malloc/calloc/realloc/free",
                   "build, query, edit, serialize and tear down a 200000-node tree of nodes and strings"))
    # workloads where a fixed default is wrong (the learner's, docs/BENCHMARKS.md)
    B.append(Bench("learner_rotate", "bench_large_rotate", [40], [100], "one malloc or free",
                   "learner: batches of 48 buffers of ~2.5 MiB, allocated, written, freed; the default "
                   "large cache holds half a batch", static=False))
    B.append(Bench("learner_shift", "bench_shift", [200000, 64, 64, 1024, 13], [200000, 64, 64, 1024, 13],
                   "one malloc or free",
                   "learner: phase change, 64 MiB of small objects built and freed, then a long phase "
                   "over 64 MiB of ~1 MiB buffers", static=False))
    B.append(Bench("learner_phase", "bench_phase", [2, 64, 64, 11, 4], [3, 64, 64, 11, 4],
                   "one malloc or free",
                   "learner: cycles of 64 MiB of 2 MiB buffers, then 64 MiB of small objects churned",
                   static=False))
    B.append(Bench("learner_drift", "bench_drift", [1000, 16, 256, 5], [3000, 16, 256, 5],
                   "one malloc or free",
                   "learner: producer/consumer threads, large messages whose size creeps up 0.5% each",
                   static=False, deterministic=False))
    B.append(Bench("learner_burst", "bench_burst", [6, 64, 1200, 3], [6, 64, 1200, 3],
                   "one malloc or free (burst time only)",
                   "learner: bursts of 64 MiB of small objects with 1.2 s pauses", static=False,
                   full_only=True))
    B.append(Redis())
    B.append(Python())
    B.append(Compile())
    return [b for b in B if not (Q and b.full_only)]


# ------------------------------------------------------------------ stats

def run_death(r):
    """One line on how a run that was not accepted ended."""
    what = r.get("reason") or r["status"]
    if r.get("gdb"):
        what += "; under gdb: " + r["gdb"]
    return "run %s: %s" % (r.get("run"), what)


def summarize(runs):
    """A row (one benchmark, one allocator) is PASS only when every one of
    its runs was accepted; a run that died (signal, non-zero exit, timeout,
    or output that fails the allocator proof) makes it FAIL, with no median
    of the runs that survived."""
    ok = [r for r in runs if r["status"] == "ok"]
    s = {"runs_total": len(runs), "runs_ok": len(ok),
         "runs_rejected": sum(r["status"] == "rejected" for r in runs),
         "runs_failed": sum(r["status"] == "failed" for r in runs)}
    if len(ok) < len(runs) or not runs:
        s["status"] = "rejected" if s["runs_rejected"] and not s["runs_failed"] else "failed"
        s["verdict"] = "FAIL"
        s["verdict_reason"] = "%d of %d runs died: %s" % (
            len(runs) - len(ok), len(runs), "; ".join(run_death(r) for r in runs if r["status"] != "ok"))
        return s
    tps = [r["throughput"] for r in ok]
    mean = statistics.fmean(tps)
    s.update(status="ok", verdict="PASS", median=statistics.median(tps), mean=mean, min=min(tps), max=max(tps),
             cv=(statistics.stdev(tps) / mean if len(tps) > 1 and mean > 0 else 0.0))
    rss = [r["rss_kib"] for r in ok if r.get("rss_kib")]
    if rss:
        s["rss_kib"] = int(statistics.median(rss))
        s["rss_kib_max"] = max(rss)
    return s


def rejudge(res):
    """--render of a results file written before a crash was a verdict: a row
    that kept a median of its surviving runs is judged again (FAIL), and the
    ratios to a row that is now FAIL are dropped."""
    for b in res.get("benchmarks", []):
        rows = b["results"]
        for l, s in list(rows.items()):
            runs = s.get("runs") or []
            if s.get("status") == "ok" and any(r.get("status") != "ok" for r in runs):
                ns = summarize(runs)
                ns.update({k: v for k, v in s.items() if k.startswith("os_calls")}, runs=runs)
                rows[l] = ns
            else:
                rows[l].setdefault("verdict", "PASS" if s.get("status") == "ok" else "FAIL")
        bases = {a["label"]: a.get("base") for a in res.get("allocators", [])}
        for l, s in rows.items():
            for key, ref in (("ratio_mimalloc", "mimalloc"), ("ratio_glibc", "glibc"),
                             ("ratio_base", bases.get(l)), ("rss_ratio_base", bases.get(l))):
                if key in s and rows.get(ref, {}).get("status") != "ok":
                    del s[key]
    return res


def fmt_tp(v):
    if v is None:
        return "-"
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def fmt_rss(k):
    if not k:
        return "-"
    if k >= 1024 * 1024:
        return "%.2f GiB" % (k / 1048576)
    if k >= 1024:
        return "%.1f MiB" % (k / 1024)
    return "%d KiB" % k


def fmt_ratio(r):
    if r is None:
        return "-"
    if r >= 100:
        return "%.0f" % r
    if r < 0.1:
        return "%.2g" % r
    return "%.2f" % r


def fmt_calls(v):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    return "%.2g" % v


# ----------------------------------------------------------------- reports

def machine_info():
    info = {"hostname": platform.node(), "kernel": platform.release(), "arch": platform.machine(),
            "cpus": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 1048576, 1)
    except OSError:
        pass
    try:
        info["os"] = dict(l.split("=", 1) for l in Path("/etc/os-release").read_text().splitlines()
                          if "=" in l).get("PRETTY_NAME", "").strip('"')
    except OSError:
        pass
    info["glibc"] = platform.libc_ver()[1]
    vers = {}
    for pkg in ["libmimalloc2.0", "libjemalloc2", "libtcmalloc-minimal4", "redis-server", "gcc", "python3"]:
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
            if r.returncode == 0 and r.stdout:
                vers[pkg] = r.stdout
        except OSError:
            pass
    info["packages"] = vers
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True)
        info["git"] = r.stdout.strip() or None
        if str(BUILD).startswith(str(ROOT) + "/"):
            r = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src", "include"],
                               capture_output=True, text=True)
            info["src_dirty"] = bool(r.stdout.strip())
        else:
            info["hakmem_build"] = str(BUILD)   # --build: not this checkout's build
    except OSError:
        pass
    return info


def write_reports(res, stem):
    RESULTS.mkdir(parents=True, exist_ok=True)
    jpath, mpath, spath = (RESULTS / (stem + ext) for ext in (".json", ".md", ".svg"))
    jpath.write_text(json.dumps(res, indent=1, sort_keys=False) + "\n")
    write_rendered(res, jpath)
    return jpath, mpath, spath


def write_rendered(res, jpath):
    """Everything drawn from a results .json, beside it: STEM.md (the report),
    STEM.svg (ratio chart), STEM-table.md (the compact verdicts table that the
    docs include) and STEM-verdicts.svg (hakmem ÷ best peer with intervals)."""
    jpath = Path(jpath)
    stem = jpath.name[:-len(".json")] if jpath.name.endswith(".json") else jpath.stem
    d = jpath.parent
    out = [d / (stem + ".md"), d / (stem + ".svg"), d / (stem + "-table.md"), d / (stem + "-verdicts.svg")]
    out[0].write_text(markdown(res, out[1].name))
    out[1].write_text(svg_chart(res))
    out[2].write_text("\n".join(compact_table(res, source=jpath.name)) + "\n", encoding="utf-8")
    out[3].write_text(verdicts_svg(res), encoding="utf-8")
    return out


def fail_word(r):
    """FAIL, or FAIL (REJECTED) when no run crashed but some printed the wrong
    allocator (or none)."""
    return "FAIL (REJECTED)" if r.get("status") == "rejected" else "FAIL"


def result_cell(r, fmt):
    """A table cell for one allocator's result: fmt(r) when the row passed,
    else FAIL (a row with any run that died has no number)."""
    if not r:
        return "n/a"
    if r["status"] != "ok":
        return "**%s**" % fail_word(r)
    return fmt(r)


def ratio_table(res, key, title, ref_label):
    labels = [a["label"] for a in res["allocators"]]
    lines = ["### %s" % title, "",
             "| benchmark | " + " | ".join(labels) + " | %s ops/s |" % ref_label,
             "|---|" + "---:|" * (len(labels) + 1)]
    for b in res["benchmarks"]:
        cells = [result_cell(b["results"].get(l), lambda r: fmt_ratio(r.get(key))) for l in labels]
        ref = b["results"].get(ref_label, {})
        lines.append("| %s | %s | %s |" % (b["name"], " | ".join(cells), fmt_tp(ref.get("median"))))
    return lines


def variant_table(res):
    """Each variant of hakmem against the default hakmem: throughput and peak
    RSS ratios (medians). Empty when no variant ran."""
    var = [a for a in res["allocators"] if a.get("base")]
    if not var:
        return []
    base = var[0]["base"]
    labels = [a["label"] for a in var]
    L = ["### Variants: ratio to default %s (throughput x / peak RSS x)" % base, "",
         "Throughput ratio: higher is better; RSS ratio: lower is better. Each variant's runs are "
         "interleaved with the default's and proved to be served by its own library.", "",
         "| benchmark | %s ops/s | %s RSS | " % (base, base) + " | ".join(labels) + " |",
         "|---|---:|---:|" + "---:|" * len(labels)]
    for b in res["benchmarks"]:
        ref = b["results"].get(base)
        if not ref:
            continue
        cells = [result_cell(b["results"].get(l), lambda r: "%s / %s" % (
            fmt_ratio(r.get("ratio_base")), fmt_ratio(r.get("rss_ratio_base")))) for l in labels]
        ok = ref.get("status") == "ok"
        L.append("| %s | %s | %s | %s |" % (b["name"], fmt_tp(ref.get("median")) if ok else "**%s**" % fail_word(
            ref), fmt_rss(ref.get("rss_kib")) if ok else "-", " | ".join(cells)))
    return L


def add_verdicts(res):
    """Each benchmark row's verdicts against the best peer (bench/verdict.py),
    from the runs the JSON holds: b["verdicts"] = {"subject", "throughput",
    "rss"}, and res["verdict_counts"] (ahead/tie/behind/FAIL/n/a per metric).
    Skipped benchmarks get none."""
    vs = []
    for b in res.get("benchmarks", []):
        if b.get("skipped") or not b.get("results"):
            b.pop("verdicts", None)
            continue
        b["verdicts"] = verdict.row_verdicts(b["results"])
        vs.append(b["verdicts"])
    res["verdict_counts"] = {m: verdict.counts(vs, m) for m in ("throughput", "rss")}
    return res


def add_build_comparisons(res):
    """--build NAME=DIR: each row's builds compared (verdict.compare_build),
    b["builds_compared"] = [{"a", "b", "throughput", "rss"}], and res["builds"]
    (reference, compared, directories, printed versions, counts). Nothing
    when the run has fewer than two hakmem builds."""
    ref, others = verdict.build_pairs(res.get("allocators", []))
    if not ref:
        res.pop("builds", None)
        for b in res.get("benchmarks", []):
            b.pop("builds_compared", None)
        return res
    cnt = {(o, m): {} for o in others for m in ("throughput", "rss")}
    for b in res.get("benchmarks", []):
        if b.get("skipped") or not b.get("results"):
            b.pop("builds_compared", None)
            continue
        b["builds_compared"] = []
        for o in others:
            c = {"a": ref, "b": o}
            for m in ("throughput", "rss"):
                c[m] = verdict.compare_build(b["results"], ref, o, m)
                w = c[m]["verdict"]
                cnt[(o, m)][w] = cnt[(o, m)].get(w, 0) + 1
            b["builds_compared"].append(c)
    dirs = {a["label"]: a.get("build_dir") for a in res["allocators"] if a.get("build")}
    res["builds"] = {"reference": ref, "compared": others, "dirs": dirs,
                     "versions": res.get("build_versions", {}),
                     "counts": {o: {m: cnt[(o, m)] for m in ("throughput", "rss")} for o in others}}
    return res


def builds_table(res, legend=True):
    bl = res.get("builds")
    if not bl:
        return []
    ref = bl["reference"]
    L = ["### Builds compared: each build ÷ %s" % ref, ""]
    if legend:
        L += ["Builds: " + "; ".join("**%s** = `%s`%s" % (l, d, " (%s)" % bl["versions"][l]
                                                          if bl.get("versions", {}).get(l) else "")
                                    for l, d in bl["dirs"].items() if l == ref or l in bl["compared"]) + ".",
              "",
              "Every run of every build is interleaved with the others and proved to be served by its own "
              "`libhakmem.so`. Reference: the first `--build NAME=DIR` on the command line (with only one "
              "named build: the default hakmem). Ratios are build ÷ reference of the medians "
              "(throughput: > 1 is faster; peak RSS: > 1 is more memory), with a %d%% percentile "
              "bootstrap interval (%d resamples, seed %d): **faster/slower beyond noise** (RSS: **larger/"
              "smaller beyond noise**) when the interval excludes 1, else within noise; FAIL when either "
              "row is FAIL; n/a with fewer than %d runs a side." % (
                  round(100 * verdict.CONF), verdict.N_BOOT, verdict.SEED, verdict.MIN_RUNS), ""]
    L += ["| benchmark | build | %s ops/s | build ops/s | throughput ÷ %s [95%% CI] | verdict | "
          "peak RSS ÷ %s [95%% CI] | verdict |" % (ref, ref, ref), "|---|---|---:|---:|---:|---|---:|---|"]
    for b in res.get("benchmarks", []):
        for c in b.get("builds_compared") or []:
            ra, rb = b["results"].get(c["a"], {}), b["results"].get(c["b"], {})
            cells = [b["name"], c["b"], result_cell(ra, lambda r: fmt_tp(r.get("median"))),
                     result_cell(rb, lambda r: fmt_tp(r.get("median")))]
            for m in ("throughput", "rss"):
                v = c[m]
                if v["verdict"] == "FAIL":
                    cells += ["-", "**FAIL**"]
                    continue
                r = fmt_vratio(v.get("ratio"))
                if v.get("ci"):
                    r += " [%s, %s]" % (fmt_vratio(v["ci"][0]), fmt_vratio(v["ci"][1]))
                w = verdict.verdict_text(v)
                cells += [r, "**%s**" % w if "beyond" in w else w]
            L.append("| " + " | ".join(cells) + " |")
    return L


def builds_summary(res):
    bl = res.get("builds")
    if not bl:
        return ""
    out = []
    for o in bl["compared"]:
        c = bl["counts"][o]
        out.append("%s vs %s: throughput %s; peak RSS %s" % (o, bl["reference"], ", ".join(
            "%d %s" % (n, w) for w, n in sorted(c["throughput"].items())), ", ".join(
            "%d %s" % (n, w) for w, n in sorted(c["rss"].items()))))
    return "builds compared (95% bootstrap CI): " + "; ".join(out)


def fmt_vratio(x):
    if x is None:
        return "-"
    if 0.1 <= x < 100:
        return "%.3f" % x
    return fmt_ratio(x)


def verdict_cells(v):
    """(best peer, ratio [CI], verdict) cells of one metric's verdict."""
    if v["verdict"] == "FAIL":
        return [v.get("peer") or "-", "-", "**FAIL**"]
    ratio = fmt_vratio(v.get("ratio"))
    if v.get("ci"):
        ratio += " [%s, %s]" % (fmt_vratio(v["ci"][0]), fmt_vratio(v["ci"][1]))
    word = verdict.verdict_text(v)
    return [v.get("peer") or "-", ratio, "**%s**" % word if word in ("ahead", "behind") else word]


def verdict_table(res, legend=True):
    subj = verdict.SUBJECT
    L = ["### Verdicts against the best peer", ""]
    if legend:
        L += ["Best peer: among the allocators that are not hakmem or a hakmem variant (glibc counts) "
              "and whose row passed, the one with the highest median throughput, and separately the one "
              "with the lowest median peak RSS. Both ratios are oriented so that **> 1 means %s is "
              "better**: throughput is %s ÷ best peer, peak RSS is best peer ÷ %s. The interval is a "
              "%d%% percentile bootstrap of the ratio of medians (%d resamples of each side's runs, "
              "independently, with replacement; seed %d). **ahead**: the interval's low end > 1; "
              "**behind**: its high end < 1; tie: it contains 1. A row where %s is FAIL stays FAIL; "
              "with fewer than %d runs a side there is no interval (n/a)." % (
                  subj, subj, subj, round(100 * verdict.CONF), verdict.N_BOOT, verdict.SEED, subj,
                  verdict.MIN_RUNS), ""]
    L += ["| benchmark | best peer (throughput) | %s ÷ best [95%% CI] | verdict | best peer (RSS) | "
          "best ÷ %s (RSS) [95%% CI] | verdict |" % (subj, subj),
          "|---|---|---:|---|---|---:|---|"]
    for b in res.get("benchmarks", []):
        v = b.get("verdicts")
        if not v:
            if b.get("skipped"):
                L.append("| %s | skipped: %s | | | | | |" % (b["name"], skip_text(b)))
            continue
        L.append("| %s | %s |" % (b["name"], " | ".join(verdict_cells(v["throughput"]) + verdict_cells(v["rss"]))))
    return L


def skip_text(b, long=False):
    """Why a benchmark was skipped, naming the Debian packages to install."""
    pk = b.get("skipped_packages")
    if not pk:
        return b.get("skipped") or "skipped"
    if long:
        return "%s" % b["skipped"]
    return "install %s" % " ".join("`%s`" % p for p in pk)


def verdict_summary(res):
    c = res.get("verdict_counts") or {}

    def one(m):
        d = c.get(m) or {}
        return ", ".join("%d %s" % (d.get(k, 0), k) for k in ("ahead", "tie", "behind", "FAIL", "n/a"))
    return "verdicts against the best peer (%s; 95%% bootstrap CI): throughput: %s; peak RSS: %s" % (
        verdict.SUBJECT, one("throughput"), one("rss"))


def markdown(res, svg_name):
    m = res["machine"]
    L = ["# hakmem benchmarks: %s (%s mode)" % (res["date"], res["mode"]), ""]
    L.append("Machine: %s, %s CPUs, %s GiB RAM, %s, Linux %s, glibc %s." % (
        m.get("cpu", "?"), m.get("cpus"), m.get("memory_gib"), m.get("os", "?"), m.get("kernel"), m.get("glibc")))
    pk = ", ".join("%s %s" % kv for kv in m.get("packages", {}).items())
    if pk:
        L.append("Packages: %s." % pk)
    if m.get("hakmem_build"):
        L.append("hakmem: %s, from the build in %s (benchmarks and harness at git %s)." % (
            res.get("hakmem_version") or "not built", m["hakmem_build"], m.get("git")))
    else:
        L.append("hakmem: %s (git %s%s)." % (res.get("hakmem_version") or "not built", m.get("git"),
                                               ", src/ modified" if m.get("src_dirty") else ""))
    L.append("Command: `%s`; %d runs per allocator, interleaved (A B C A B C ...); %.0f s in all." % (
        res["command"], res["runs"], res["elapsed_s"]))
    if res.get("note"):
        L.append("Note: %s" % res["note"])
    if res.get("hakmem_env"):
        L.append("hakmem runs with: `%s`." % " ".join("%s=%s" % kv for kv in res["hakmem_env"].items()))
    if res.get("interrupted"):
        L.append("**Interrupted**: only the benchmarks finished before the interruption are here.")
    if res["mode"] == "quick":
        L.append("Quick mode: shorter runs than the seed parameters (see the args column); "
                 "`make bench-full` runs the full sizes with 10 runs each.")
    L.append("")
    L.append("Throughput ratios of medians (higher is better; 1.00 = as fast as the reference). "
             "A ratio is computed only from runs whose printed allocator was the one requested.")
    L.append("")
    L.append("A crash is a verdict: a row with any run that died (killed by a signal, non-zero exit, timed "
             "out, or output that fails the allocator proof) is **FAIL**, with no median of the runs "
             "that survived.")
    L.append("")
    failed = [(b["name"], l, r) for b in res["benchmarks"] for l, r in b["results"].items()
              if r.get("status") != "ok"]
    if failed:
        L.append("**Verdict: FAIL**, %d row%s:" % (len(failed), "" if len(failed) == 1 else "s"))
        L.append("")
        for name, l, r in failed:
            L.append("- %s / %s: **%s**: %s" % (name, l, fail_word(r), r.get("verdict_reason", "")))
    else:
        L.append("**Verdict: PASS**: every run of every row was accepted.")
    L.append("")
    if any(b.get("verdicts") for b in res["benchmarks"]):
        L += verdict_table(res)
        L.append("")
        L.append(verdict_summary(res)[0].upper() + verdict_summary(res)[1:] + ".")
        L.append("")
    bt = builds_table(res)
    if bt:
        L += bt + ["", builds_summary(res)[0].upper() + builds_summary(res)[1:] + ".", ""]
    L += ratio_table(res, "ratio_mimalloc", "Ratio to mimalloc", "mimalloc")
    L.append("")
    L += ratio_table(res, "ratio_glibc", "Ratio to glibc", "glibc")
    L.append("")
    vt = variant_table(res)
    if vt:
        L += vt + [""]
    L.append("![ratio chart](%s)" % svg_name)
    L.append("")
    L.append("### Details")
    L.append("")
    L.append("OS calls/op: (mmap+munmap+madvise+brk+mremap) per op, counted with `strace -f -c` in a "
             "separate run; for the synthetic benchmarks the calls of a do-nothing run of the same "
             "allocator (process start-up) are subtracted. RSS: median of the runs' peak RSS.")
    L.append("")
    L.append("| benchmark | allocator | x mimalloc | x glibc | median ops/s | mean | min | max | CV | "
             "peak RSS | OS calls/op | mmap | munmap | madvise | brk | mremap | runs ok |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in res["benchmarks"]:
        for a in res["allocators"]:
            r = b["results"].get(a["label"])
            if not r:
                continue
            oc = r.get("os_calls") or {}
            cells = [b["name"], a["label"]]
            if r["status"] == "ok":
                cells += [fmt_ratio(r.get("ratio_mimalloc")), fmt_ratio(r.get("ratio_glibc")),
                          fmt_tp(r["median"]), fmt_tp(r["mean"]), fmt_tp(r["min"]), fmt_tp(r["max"]),
                          "%.1f%%" % (100 * r["cv"]), fmt_rss(r.get("rss_kib"))]
            else:
                cells += ["**%s**" % fail_word(r)] + ["-"] * 7
            cells.append(fmt_calls(r.get("os_calls_per_op")))
            cells += [str(oc.get(c, "-")) for c in OS_CALLS]
            cells.append("%d/%d" % (r["runs_ok"], r["runs_total"]))
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append("### Benchmarks")
    L.append("")
    L.append("| benchmark | what | one op is | args |")
    L.append("|---|---|---|---|")
    for b in res["benchmarks"]:
        L.append("| %s | %s | %s | `%s` |" % (b["name"], b["desc"], b["op"], b.get("args", "")))
    L.append("")
    L.append("### Allocators")
    L.append("")
    for a in res["allocators"]:
        L.append("- **%s**: %s" % (a["label"], a["how"]))
    for s in res["skipped"]:
        if s.get("bench"):
            continue
        L.append("- %s: skipped, %s" % (s["allocator"], s["reason"]))
    sb = [b for b in res["benchmarks"] if b.get("skipped")]
    if sb:
        L.append("")
        L.append("### Skipped benchmarks")
        L.append("")
        for b in sb:
            L.append("- **%s**: %s" % (b["name"], skip_text(b, long=True)))
    bad = res["problems"]
    L.append("")
    L.append("### Failed and rejected runs")
    L.append("")
    if not bad:
        L.append("None: every run printed the allocator it was asked to measure and exited cleanly.")
    for p in bad:
        L.append("- %s / %s run %s: **%s**: %s  \n  `%s`" % (p["bench"], p["allocator"], p["run"],
                                                           p["status"], p["reason"], p["cmd"]))
        if p.get("gdb"):
            L.append("  re-run under gdb (address randomisation on): **%s**" % p["gdb"])
        if p.get("stderr_tail"):
            tail = p["stderr_tail"].strip().splitlines()[-4:]
            L.append("  stderr: `%s`" % " / ".join(t.strip() for t in tail)[:600])
        if p.get("backtrace"):
            L.append("")
            L.append("  ```")
            L += ["  " + t for t in p["backtrace"].splitlines()[:40]]
            L.append("  ```")
    L.append("")
    return "\n".join(L)


def compact_table(res, source=None):
    """The compact verdicts table that the docs include (STEM-table.md,
    --publish): one line per benchmark: hakmem ÷ mimalloc, the best peer,
    hakmem ÷ best peer [95% CI], the throughput verdict and the peak RSS
    verdict (ahead/tie/behind; FAIL; n/a)."""
    m = res.get("machine", {})
    L = ["hakmem against the best peer, %s mode, %s runs each, %s (%s CPUs), %s%s. Ratios > 1 mean hakmem is "
         "better; [95%% bootstrap interval]; **ahead**/**behind** only when the interval excludes 1." % (
             res.get("mode"), res.get("runs"), m.get("cpu", "?"), m.get("cpus"), res.get("date"),
             (", from `%s`" % source if source else "") + (" (%s)" % res["note"] if res.get("note") else "")), "",
         "| benchmark | hakmem ÷ mimalloc | best peer | hakmem ÷ best [95% CI] | verdict | RSS verdict |",
         "|---|---:|---|---:|---|---|"]
    for b in res.get("benchmarks", []):
        v = b.get("verdicts")
        if not v:
            if b.get("skipped"):
                L.append("| %s | skipped: %s | | | | |" % (b["name"], skip_text(b)))
            continue
        h = b["results"].get(verdict.SUBJECT)
        mi = result_cell(h, lambda r: fmt_ratio(r.get("ratio_mimalloc"))) if h else "-"
        peer, ratio, word = verdict_cells(v["throughput"])
        rv = v["rss"]
        rword = verdict_cells(rv)[2]
        if rv.get("peer") and rv["verdict"] not in ("FAIL",):
            rword += " vs %s" % rv["peer"]
        L.append("| %s | %s | %s | %s | %s | %s |" % (b["name"], mi, peer, ratio, word, rword))
    return L


VERDICT_COLOURS = {"ahead": "#2ca02c", "tie": "#7f7f7f", "behind": "#d62728", "FAIL": "#8b0000",
                   "n/a": "#bbbbbb"}


def _log2_xpos(lo, hi, left, width):
    """x of a ratio on a log2 axis from 2**lo to 2**hi drawn over
    [left, left + width]; ratios outside are drawn at the ends."""
    def xpos(r):
        v = max(lo, min(hi, math.log2(r))) if r and r > 0 else lo
        return left + (v - lo) / (hi - lo) * width
    return xpos


def _svg_head(W, height, left, title, subtitle):
    """The opening lines of a chart: the svg element, a white background,
    a bold title and a grey subtitle (both already escaped)."""
    return ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
            'font-size="11">' % (W, height),
            '<rect width="100%" height="100%" fill="white"/>',
            '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>' % (left, title),
            '<text x="%d" y="36" fill="#555">%s</text>' % (left, subtitle)]


def verdicts_svg(res):
    """hakmem ÷ best peer (throughput) per row: a dot at the ratio of
    medians, the 95% bootstrap interval as an error bar, a line at 1, log2
    scale; coloured by verdict (ahead green, tie grey, behind red)."""
    rows = [b for b in res.get("benchmarks", []) if b.get("verdicts") or b.get("skipped")]
    row_h, left, width, top = 22, 170, 520, 62
    # log2 axis: at least 1/4x .. 4x, widened to whole powers of two so that
    # every ratio and interval end is drawn (a 0.057x row is not clipped)
    vals = [x for b in rows for v in [(b.get("verdicts") or {}).get("throughput") or {}]
            for x in [v.get("ratio")] + list(v.get("ci") or []) if x and x > 0]
    lo = min([-2.0] + [math.floor(math.log2(x)) for x in vals])
    hi = max([2.0] + [math.ceil(math.log2(x)) for x in vals])
    height = top + row_h * max(1, len(rows)) + 64
    W = left + width + 230
    xpos = _log2_xpos(lo, hi, left, width)
    o = _svg_head(W, height, left,
                  "hakmem ÷ best peer, throughput (median of runs, log scale; right = hakmem faster)",
                  "%s, %s mode, %s runs each, %s; bars: 95%% bootstrap interval" % (
                      html.escape(str(res.get("date"))), res.get("mode"), res.get("runs"),
                      html.escape(res.get("machine", {}).get("cpu", ""))))
    for t in [2.0 ** e for e in range(int(lo), int(hi) + 1)]:
        x = xpos(t)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>' % (
            x, top - 8, x, height - 45, "#000" if t == 1 else "#ddd", "1.2" if t == 1 else "1"))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>' % (x, height - 32, t))
    y = top
    for b in rows:
        cy = y + row_h // 2
        o.append('<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>' % (
            left - 10, cy + 4, html.escape(b["name"])))
        v = (b.get("verdicts") or {}).get("throughput")
        if not v:
            o.append('<text x="%.1f" y="%d" fill="#999">skipped: %s</text>' % (
                left + 4, cy + 4, html.escape(skip_text(b).replace("`", ""))))
            y += row_h
            continue
        col = VERDICT_COLOURS.get(v["verdict"], "#333")
        if v["verdict"] == "FAIL" or v.get("ratio") is None:
            o.append('<text x="%.1f" y="%d" fill="%s">%s</text>' % (
                xpos(1) + 6, cy + 4, col, html.escape(verdict.verdict_text(v))))
            y += row_h
            continue
        x = xpos(v["ratio"])
        if v.get("ci"):
            xl, xh = xpos(v["ci"][0]), xpos(v["ci"][1])
            o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>' % (
                xl, cy, xh, cy, col))
            for xx in (xl, xh):
                o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>' % (
                    xx, cy - 5, xx, cy + 5, col))
        o.append('<circle cx="%.1f" cy="%d" r="4" fill="%s"><title>%s: hakmem ÷ %s = %.3f%s (%s)</title>'
                 '</circle>' % (x, cy, col, html.escape(b["name"]), html.escape(v.get("peer") or "?"),
                                v["ratio"], " [%.3f, %.3f]" % tuple(v["ci"]) if v.get("ci") else "",
                                html.escape(verdict.verdict_text(v))))
        o.append('<text x="%d" y="%d" fill="%s">%.2f vs %s: %s</text>' % (
            left + width + 12, cy + 4, col, v["ratio"], html.escape(v.get("peer") or "?"),
            html.escape(verdict.verdict_text(v))))
        y += row_h
    lx = left
    for w in ("ahead", "tie", "behind", "FAIL", "n/a"):
        o.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (lx, height - 12, VERDICT_COLOURS[w]))
        o.append('<text x="%d" y="%d">%s</text>' % (lx + 8, height - 8, w))
        lx += 70
    o.append("</svg>")
    return "\n".join(o) + "\n"


# --publish: the docs' generated table lives between these markers
MARK_BEGIN, MARK_END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
PUBLISH_TO = [ROOT / "docs" / "BENCHMARKS.md", ROOT / "README.md"]
PUBLISH_SVG = ROOT / "docs" / "bench-latest.svg"


def publish(jpath, targets, svg_path):
    """Rewrites the text between MARK_BEGIN and MARK_END of each target with
    the compact table of a results file and a link to its verdicts chart
    (written to svg_path). Every target is checked before any is written:
    one begin marker, then one end marker, or nothing is written (exit 2).
    Bytes outside the markers are kept exactly (line endings included)."""
    try:
        res = add_build_comparisons(add_verdicts(rejudge(json.loads(jpath.read_text()))))
    except (OSError, ValueError) as e:
        print("--publish: cannot read %s: %s" % (jpath, e), file=sys.stderr)
        return 2
    texts, bad = {}, []
    for t in targets:
        try:
            with open(t, newline="", encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            bad.append("%s: %s" % (t, e))
            continue
        nb, ne = text.count(MARK_BEGIN), text.count(MARK_END)
        if nb != 1 or ne != 1 or text.index(MARK_BEGIN) > text.index(MARK_END):
            bad.append("%s: needs one %s line and, after it, one %s line (found %d and %d)" % (
                t, MARK_BEGIN, MARK_END, nb, ne))
            continue
        texts[t] = text
    if bad:
        print("--publish: nothing written:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 2
    svg_path = Path(svg_path)
    svg_path.parent.mkdir(parents=True, exist_ok=True)
    svg_path.write_text(verdicts_svg(res), encoding="utf-8")
    for t, text in texts.items():
        nl = "\r\n" if "\r\n" in text else "\n"
        link = os.path.relpath(svg_path.resolve(), Path(t).resolve().parent)
        block = ["<!-- generated by `python3 bench/harness.py --publish %s`: edit the results, not this -->"
                 % rel(jpath.resolve())] + compact_table(res, source=jpath.name) + \
                ["", "![hakmem ÷ best peer, throughput, with 95%% intervals](%s)" % link.replace(os.sep, "/")]
        head, rest = text.split(MARK_BEGIN, 1)
        _, tail = rest.split(MARK_END, 1)
        new = head + MARK_BEGIN + nl + nl.join(block) + nl + MARK_END + tail
        with open(t, "w", newline="", encoding="utf-8") as f:
            f.write(new)
        print("published %s into %s" % (rel(jpath.resolve()), t))
    print("wrote %s" % svg_path)
    return 0


PALETTE = {"hakmem": "#d62728", "hakmem-static": "#ff7f0e", "glibc": "#7f7f7f", "mimalloc": "#1f77b4",
           "jemalloc": "#2ca02c", "tcmalloc": "#9467bd", "hakmem:fast": "#e377c2", "hakmem:lowmem": "#8c564b",
           "hakmem:learn": "#bcbd22", "hakmem-secure": "#17becf"}


EXTRA_COLOURS = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"]


def colour(label):
    """A label's colour: the palette's, else one of EXTRA_COLOURS picked by
    the label's characters (stable from run to run)."""
    return PALETTE.get(label) or EXTRA_COLOURS[sum(map(ord, label)) % len(EXTRA_COLOURS)]


def svg_chart(res):
    """Horizontal bars of the throughput ratio to mimalloc (or glibc when
    mimalloc is missing), log2 scale centred on 1.0."""
    labels = [a["label"] for a in res["allocators"]]
    key, ref = ("ratio_mimalloc", "mimalloc") if "mimalloc" in labels else ("ratio_glibc", "glibc")
    if ref not in labels and any(a.get("base") for a in res["allocators"]):
        key, ref = "ratio_base", "default hakmem"
    benches = res["benchmarks"]
    bar_h, gap, left, width, top = 11, 10, 180, 560, 60
    lo, hi = -3.0, 3.0  # log2 range: 1/8x .. 8x
    group_h = bar_h * len(labels) + gap
    height = top + group_h * len(benches) + 60
    W = left + width + 170
    xpos = _log2_xpos(lo, hi, left, width)
    o = _svg_head(W, height, left,
                  "Throughput relative to %s (median of runs, log scale; right = faster)" % ref,
                  "%s, %s mode, %s" % (html.escape(res["date"]), res["mode"],
                                       html.escape(res["machine"].get("cpu", ""))))
    for t in (0.125, 0.25, 0.5, 1, 2, 4, 8):
        x = xpos(t)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>' % (
            x, top - 8, x, height - 45, "#000" if t == 1 else "#ddd", "1.2" if t == 1 else "1"))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>' % (x, height - 32, t))
    y = top
    x1 = xpos(1)
    for b in benches:
        o.append('<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>' % (
            left - 34, y + group_h // 2, html.escape(b["name"])))
        for i, l in enumerate(labels):
            r = b["results"].get(l)
            yy = y + i * bar_h
            if not r:
                continue
            if r["status"] != "ok":
                o.append('<text x="%.1f" y="%d" fill="#d00" font-size="9">%s %s</text>' % (
                    x1 + 4, yy + bar_h - 2, html.escape(l), fail_word(r)))
                continue
            v = r.get(key)
            if v is None:
                continue
            x = xpos(v)
            o.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %.3fx</title></rect>' % (
                min(x, x1), yy, max(abs(x - x1), 1), bar_h - 2, colour(l),
                html.escape(b["name"]), html.escape(l), v))
            if v < 2 ** lo:   # clipped on the left: write the value inside the bar
                o.append('<text x="%.1f" y="%d" font-size="9" fill="white" text-anchor="end">%.2f &lt;</text>' % (
                    x1 - 3, yy + bar_h - 3, v))
            else:
                o.append('<text x="%.1f" y="%d" font-size="9" fill="#333" text-anchor="%s">%.2f%s</text>' % (
                    (x + 3) if x >= x1 else (x - 3), yy + bar_h - 3, "start" if x >= x1 else "end", v,
                    " &gt;" if v > 2 ** hi else ""))
        y += group_h
    ly = top
    for l in labels:
        o.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>' % (left + width + 30, ly,
                                                                             colour(l)))
        o.append('<text x="%d" y="%d">%s</text>' % (left + width + 48, ly + 9, html.escape(l)))
        ly += 16
    o.append("</svg>")
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------- main

def main_bench(args):
    mode = "full" if args.full else "quick"
    runs = args.runs or (10 if mode == "full" else 3)
    t_start = time.time()

    def log(msg):
        print(msg, flush=True)

    if not ensure_built(log):
        return 2
    allocs, skipped = discover_allocators(args, log)
    log("hakmem bench harness: %s mode, %d runs per allocator, interleaved" % (mode, runs))
    if mode == "quick":
        log("  quick mode: shorter runs than the seed sizes (tiny 0.5M rounds instead of 10M, larson 1 s "
            "instead of 10/5 s, ...; see the args column of the report); `make bench-full` runs the seed sizes")
    if HAKMEM_ENV:
        log("  hakmem runs get: %s" % " ".join("%s=%s" % kv for kv in HAKMEM_ENV.items()))
    for a in allocs:
        log("  allocator %-14s %s" % (a.label, a.describe()))
    for s in skipped:
        log("  SKIP %-14s %s" % (s["allocator"], s["reason"]))
    if not allocs:
        log("no allocator to measure")
        return 2

    global STRACE_SECCOMP
    count = not args.no_count and shutil.which("strace")
    if not args.no_count and not count:
        log("  OS calls not counted: strace not installed (apt-get install -y strace)")
    if count:
        t = subprocess.run(["strace", "-f", "-qq", "-c", "-o", "/dev/null", "--seccomp-bpf", "true"],
                           capture_output=True)
        STRACE_SECCOMP = t.returncode == 0

    benches = benchmarks(mode)
    if args.only:
        want = [w.strip() for w in args.only.split(",")]
        benches = [b for b in benches if b.name in want or any(b.name.startswith(w + "_") for w in want)]
    if args.no_real:
        benches = [b for b in benches if b.kind != "real"]

    res = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "mode": mode, "runs": runs,
           "command": "python3 bench/harness.py " + shlex.join(sys.argv[1:]),
           "machine": machine_info(), "allocators": [allocator_entry(a) for a in allocs],
           "skipped": list(skipped), "benchmarks": [], "problems": [], "hakmem_version": None,
           "hakmem_env": dict(HAKMEM_ENV), "note": args.note}

    # start-up OS calls of a do-nothing run, per allocator
    baseline = {}
    if count:
        tiny = benches_by_prog(benchmarks("quick"), "bench_tiny")
        for a in allocs:
            with tempfile.TemporaryDirectory() as td:
                f = Path(td) / "strace.txt"
                env = clean_env()
                child = {"LD_PRELOAD": a.preload} if a.preload else {}
                p = run_program(strace_prefix(f, child) + [str(tiny.binary(a)), "0"], env, 60)
                c = parse_strace(f) if p.rc == 0 else None
                baseline[a.label] = c
    res["os_call_baseline"] = baseline

    total = sum((runs + (1 if count else 0)) * sum(1 for a in allocs if b.applies(a)) for b in benches
                if b.available() is None)
    try:
        run_all(benches, allocs, mode, runs, count, baseline, res, total, log)
    except KeyboardInterrupt:
        res["interrupted"] = True
        log("\ninterrupted: writing the results so far")
    finish(res, args, mode, t_start, skipped, log)
    return 1 if res["verdict"] == "FAIL" or res["problems"] or res.get("interrupted") else 0


def allocator_entry(a):
    e = {"label": a.label, "expect": a.expect, "how": a.describe() + (" (%s)" % a.note if a.note else ""),
         "base": a.base}
    if a.build:
        names = [n for n, _ in BUILDS]
        e.update(build=a.build, build_dir=str(BUILD) if a.build == "default" else str(dict(BUILDS)[a.build]),
                 build_order=names.index(a.build) + 1 if a.build in names else 0)
    return e


def fmt_dur(sec):
    """4m12s, 1h05m, 37s."""
    sec = int(round(max(0.0, sec)))
    if sec >= 3600:
        return "%dh%02dm" % (sec // 3600, sec % 3600 // 60)
    if sec >= 60:
        return "%dm%02ds" % (sec // 60, sec % 60)
    return "%ds" % sec


class Progress:
    """The `[ 37/420 runs, 4m12s elapsed, ~41m left]` prefix of every run's log
    line. Time left: the runs left in the current row at that row's time per
    run so far, plus the runs of the rows after it at the whole run's time per
    run so far (rows differ in cost, so the estimate settles as rows finish)."""

    def __init__(self, total, clock=time.monotonic):
        self.total, self.done, self.clock = total, 0, clock
        self.t0 = clock()
        self.row_t0, self.row_done, self.row_total = self.t0, 0, 0

    def start_row(self, n):
        self.row_t0, self.row_done, self.row_total = self.clock(), 0, n

    def step(self):
        self.done += 1
        self.row_done += 1
        return self.text()

    def left_s(self):
        now = self.clock()
        if not self.done:
            return None
        per = (now - self.t0) / self.done
        row_per = (now - self.row_t0) / self.row_done if self.row_done else per
        in_row = max(0, self.row_total - self.row_done)
        after = max(0, self.total - self.done - in_row)
        return in_row * row_per + after * per

    def text(self):
        left = self.left_s()
        w = len(str(self.total))
        return "[%*d/%d runs, %s elapsed, ~%s left]" % (w, self.done, self.total, fmt_dur(self.clock() - self.t0),
                                                          "?" if left is None else fmt_dur(left))


def run_all(benches, allocs, mode, runs, count, baseline, res, total, log):
    prog = Progress(total)
    for b in benches:
        why = b.available()
        entry = {"name": b.name, "kind": b.kind, "desc": b.desc, "op": b.op, "results": {},
                 "args": " ".join(b.args(mode)) if b.kind == "synthetic" else
                 " ".join(getattr(b, "params")(mode))}
        res["benchmarks"].append(entry)
        if why:
            log("SKIP %s: %s" % (b.name, why))
            sk = {"allocator": "*", "bench": b.name, "reason": why}
            pk = getattr(b, "packages", None)
            if pk:   # the Debian packages that would bring the row back
                sk["packages"] = list(pk)
                sk["install"] = "apt-get install -y " + " ".join(pk)
                entry["skipped_packages"] = list(pk)
            res["skipped"].append(sk)
            entry["skipped"] = why
            continue
        todo = [a for a in allocs if b.applies(a)]
        per = {a.label: [] for a in todo}
        prog.start_row(len(todo) * (runs + (1 if count else 0)))
        for i in range(runs):
            for a in todo:
                r = b.run(a, mode)
                r["run"] = i + 1
                per[a.label].append(r)
                if r["status"] == "ok":
                    msg = "%10s ops/s  RSS %9s" % (fmt_tp(r["throughput"]), fmt_rss(r.get("rss_kib")))
                else:
                    msg = "%s: %s" % (r["status"].upper(), r["reason"])
                    if r.get("gdb"):
                        msg += "; re-run under gdb: %s" % r["gdb"]
                log("%s %-18s %-14s run %2d  %s" % (prog.step(), b.name, a.label, i + 1, msg))
                if r.get("hakmem_version") and not res["hakmem_version"] and a.build in (None, "default"):
                    res["hakmem_version"] = r["hakmem_version"]
                if r.get("hakmem_version") and a.build:
                    res.setdefault("build_versions", {}).setdefault(a.label, r["hakmem_version"])
        for a in todo:
            s = summarize(per[a.label])
            s["runs"] = per[a.label]
            entry["results"][a.label] = s
        # same work whatever the allocator: compare the work digests
        if b.deterministic:
            digests = {}
            for a in todo:
                for r in per[a.label]:
                    if r["status"] == "ok" and r.get("work"):
                        digests.setdefault(r["work"], []).append(a.label)
            if len(digests) > 1:
                ref_d = max(digests, key=lambda d: len(digests[d]))
                for a in todo:
                    for r in per[a.label]:
                        if r["status"] == "ok" and r.get("work") and r["work"] != ref_d:
                            r.update(status="rejected", reason="work digest %s differs from %s (the "
                                     "other allocators): different work or corrupted data" % (r["work"], ref_d))
                    s = summarize(per[a.label])
                    s["runs"] = per[a.label]
                    entry["results"][a.label] = s
        # OS calls: one strace-counted run per allocator
        if count:
            for a in todo:
                with tempfile.TemporaryDirectory() as td:
                    f = Path(td) / "strace.txt"
                    r = b.run(a, mode, count_file=f)
                    c = parse_strace(f) if r["status"] == "ok" else None
                s = entry["results"][a.label]
                if c is None:
                    s["os_calls_error"] = "%s: %s" % (r["status"], r.get("reason", "no strace output"))
                    log("%s %-18s %-14s count   %s" % (prog.step(), b.name, a.label, s["os_calls_error"]))
                    if r["status"] != "ok":
                        # a counting run that died fails the row too, though
                        # it never enters the throughput statistics
                        r["run"] = "count"
                        per[a.label].append(r)
                        keep = {k: v for k, v in s.items() if k.startswith("os_calls")}
                        s = summarize(per[a.label])
                        s.update(keep, runs=per[a.label])
                        entry["results"][a.label] = s
                    continue
                base = baseline.get(a.label) if b.kind == "synthetic" else None
                net = {k: max(0, c[k] - (base or {}).get(k, 0)) for k in OS_CALLS}
                s["os_calls"] = net
                s["os_calls_raw"] = c
                s["os_calls_ops"] = r["ops"]
                s["os_calls_per_op"] = sum(net.values()) / r["ops"] if r["ops"] else None
                log("%s %-18s %-14s count   %s" % (prog.step(), b.name, a.label, " ".join(
                    "%s=%d" % (k, v) for k, v in net.items() if v) or "no OS calls"))
        # ratios
        for ref, key in (("mimalloc", "ratio_mimalloc"), ("glibc", "ratio_glibc")):
            rr = entry["results"].get(ref)
            for a in todo:
                s = entry["results"][a.label]
                if rr and rr.get("status") == "ok" and s.get("status") == "ok" and rr["median"] > 0:
                    s[key] = s["median"] / rr["median"]
        # variants: throughput and peak RSS relative to the default hakmem
        for a in todo:
            if not a.base:
                continue
            s, base = entry["results"][a.label], entry["results"].get(a.base)
            if base and base.get("status") == "ok" and s.get("status") == "ok" and base["median"] > 0:
                s["ratio_base"] = s["median"] / base["median"]
                if s.get("rss_kib") and base.get("rss_kib"):
                    s["rss_ratio_base"] = s["rss_kib"] / base["rss_kib"]
        for a in todo:
            for r in per[a.label]:
                if r["status"] != "ok":
                    res["problems"].append({"bench": b.name, "allocator": a.label, "run": r.get("run"),
                                            "status": r["status"], "reason": r.get("reason"),
                                            "cmd": r.get("cmd"), "stderr_tail": r.get("stderr_tail"),
                                            "exit_status": r.get("exit_status"), "signal": r.get("signal"),
                                            "gdb": r.get("gdb"), "backtrace": r.get("backtrace")})
        print_bench_summary(entry, allocs, log)


def finish(res, args, mode, t_start, skipped, log):
    res["elapsed_s"] = round(time.time() - t_start, 1)
    res["verdict"] = "FAIL" if any(r.get("verdict") != "PASS" for b in res["benchmarks"]
                                   for r in b["results"].values()) else "PASS"
    stem = args.tag or (datetime.datetime.now().strftime("%Y-%m-%d-%H%M") + "-" + mode)
    add_verdicts(res)
    add_build_comparisons(res)
    jp, mp, sp = write_reports(res, stem)
    log("")
    log("\n".join(ratio_table(res, "ratio_mimalloc", "Ratio to mimalloc (median throughput)", "mimalloc")))
    log("")
    log("\n".join(ratio_table(res, "ratio_glibc", "Ratio to glibc (median throughput)", "glibc")))
    log("")
    vt = variant_table(res)
    if vt:
        log("\n".join(vt))
        log("")
    if any(b.get("verdicts") for b in res["benchmarks"]):
        log("\n".join(verdict_table(res, legend=False)))
        log("")
    if res.get("builds"):
        log("\n".join(builds_table(res, legend=False)))
        log("")
    if res["problems"]:
        log("PROBLEMS (%d runs failed or rejected; their rows are FAIL):" % len(res["problems"]))
        for p in res["problems"]:
            log("  %s / %s run %s: %s: %s" % (p["bench"], p["allocator"], p["run"], p["status"], p["reason"]))
            log("      %s" % p["cmd"])
            if p.get("gdb"):
                log("      re-run under gdb (address randomisation on): %s" % p["gdb"])
            if p.get("backtrace"):
                log("      gdb %s:\n" % ("backtrace" if p.get("gdb") == "reproduced" else "output") +
                    "\n".join("        " + t for t in p["backtrace"].splitlines()[:30]))
    for s in skipped:
        log("skipped %s: %s" % (s["allocator"], s["reason"]))
    failed = ["%s / %s: %s: %s" % (b["name"], l, fail_word(r), r.get("verdict_reason", ""))
              for b in res["benchmarks"] for l, r in b["results"].items() if r.get("verdict") != "PASS"]
    if failed:
        log("VERDICT: FAIL (%d row%s)" % (len(failed), "" if len(failed) == 1 else "s"))
        for f in failed:
            log("  " + f)
    else:
        log("VERDICT: PASS (every run of every row was accepted)")
    log(verdict_summary(res))
    if res.get("builds"):
        log(builds_summary(res))
    log("wrote %s, %s, %s (%.0f s)" % (rel(jp), rel(mp), rel(sp), res["elapsed_s"]))


def rel(p):
    try:
        return str(Path(p).relative_to(ROOT))
    except ValueError:
        return str(p)


def benches_by_prog(benches, prog):
    for b in benches:
        if getattr(b, "prog", None) == prog:
            return b
    return None


def print_bench_summary(entry, allocs, log):
    parts = []
    for a in allocs:
        s = entry["results"].get(a.label)
        if not s:
            continue
        if s.get("status") != "ok":
            parts.append("%s %s (%d of %d runs died)" % (a.label, fail_word(s), s["runs_total"] - s["runs_ok"],
                                                          s["runs_total"]))
        else:
            rm = s.get("ratio_mimalloc")
            parts.append("%s %s%s" % (a.label, fmt_tp(s["median"]), " (%.2fx mi)" % rm if rm else ""))
    log("  => %s: %s" % (entry["name"], ", ".join(parts)))


# ------------------------------------------------------------------- soak

def main_soak(args):
    minutes = args.minutes if args.minutes is not None else 10.0
    seconds = max(10, int(round(minutes * 60)))

    def log(msg):
        print(msg, flush=True)

    if not ensure_built(log):
        return 2
    allocs, skipped = discover_allocators(args, log)
    if not args.allocators:
        allocs = [a for a in allocs if a.label == "hakmem"]
        if not allocs:
            log("soak: build/libhakmem.so not found: run `make` first "
                "(or pick another allocator with --allocators glibc)")
            return 2
    rss_limit, tp_limit = args.rss_drift, args.tp_drift
    res = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "mode": "soak", "minutes": minutes,
           "command": "python3 bench/harness.py " + shlex.join(sys.argv[1:]), "machine": machine_info(),
           "thresholds": {"rss_drift_max": rss_limit, "throughput_drift_min": tp_limit}, "soaks": []}
    ok_all = True
    for a in allocs:
        binary = bin_dir() / ("bench_soak_hakmem_static" if a.static else "bench_soak")
        env = clean_env()
        if a.preload:
            env["LD_PRELOAD"] = a.preload
        env.update(a.child_env())
        cmd = inject_crash("soak", a.label, [str(binary), str(seconds), str(args.soak_threads), "1000", "4000",
                                             "5", "0" if args.soak_unpinned else "1"])
        log("soak: %s for %d s: %s" % (a.label, seconds, shell_line({"LD_PRELOAD": a.preload} if a.preload else {},
                                                                     cmd)))
        samples, lines = [], []
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                             start_new_session=True)
        killed = []
        timer = threading.Timer(seconds + 120, lambda: (killed.append(1), _killpg(p.pid)))
        timer.start()
        printed = None
        for line in p.stdout:
            lines.append(line)
            m = RE_ALLOC.match(line)
            if m:
                printed = (m.group(1), m.group(2))
            m = re.match(r"sample t=([0-9.]+) ops=(\d+) rss_kib=(\d+)(?: cpu=([0-9.]+))?", line)
            if m:
                t, ops, rss = float(m.group(1)), int(m.group(2)), int(m.group(3))
                cpu = float(m.group(4)) if m.group(4) else None
                prev = samples[-1] if samples else {"t": 0.0, "ops": 0, "cpu": 0.0}
                dt = t - prev["t"]
                tp = (ops - prev["ops"]) / dt if dt > 0 else 0
                dc = (cpu - prev["cpu"]) if cpu is not None and prev.get("cpu") is not None else None
                tpc = (ops - prev["ops"]) / dc if dc else None
                samples.append({"t": t, "ops": ops, "rss_kib": rss, "cpu": cpu, "tp_wall": tp,
                                "tp": tpc if tpc is not None else tp})
                if len(samples) % max(1, int(seconds / 20)) == 0:
                    log("  t=%6.0f s  %10s ops/s  %10s ops/CPU-s  RSS %s" % (
                        t, fmt_tp(tp), fmt_tp(tpc), fmt_rss(rss)))
        err = p.stderr.read()
        p.wait()
        timer.cancel()
        entry = {"allocator": a.label, "cmd": " ".join(cmd), "samples": samples}
        entry.update(exit_fields(p.returncode, bool(killed)))
        why = check_allocator(a, printed, str(binary))
        # a soak that died is FAIL whatever its samples say
        if killed:
            entry.update(verdict="FAIL", reason="timed out after %d s (killed)" % (seconds + 120))
        elif p.returncode != 0:
            entry.update(verdict="FAIL", reason="%s; stderr: %s" % (rc_text(p.returncode), err[-500:]))
        elif why:
            entry.update(verdict="FAIL", reason="REJECTED: " + why)
        else:
            entry.update(soak_verdict(samples, rss_limit, tp_limit))
        ok_all &= entry["verdict"] == "PASS"
        log("soak %s: %s  %s" % (a.label, entry["verdict"], entry.get("reason", "")))
        res["soaks"].append(entry)
    res["verdict"] = "PASS" if ok_all else "FAIL"
    stem = args.tag or (datetime.datetime.now().strftime("%Y-%m-%d-%H%M") + "-soak")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / (stem + ".json")).write_text(json.dumps(res, indent=1) + "\n")
    md = ["# hakmem soak: %s" % res["date"], "",
          "Command: `%s`; %.1f minutes per allocator; machine: %s, %s CPUs." % (
              res["command"], minutes, res["machine"].get("cpu"), res["machine"].get("cpus")),
          "Thresholds (from the earlier project's scorecard): RSS drift <= +%.0f%%, throughput drift >= %.0f%%."
          % (100 * rss_limit, 100 * tp_limit), "",
          "Throughput is ops per CPU-second of the soak process (the wall-clock drift is in the last column: "
          "other load on a shared machine moves it).", "",
          "| allocator | verdict | RSS start | RSS end | RSS drift | ops/CPU-s start | ops/CPU-s end | "
          "throughput drift | throughput CV | wall-clock drift | note |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for e in res["soaks"]:
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["allocator"], e["verdict"], fmt_rss(e.get("rss_start")), fmt_rss(e.get("rss_end")),
            "%+.1f%%" % (100 * e["rss_drift"]) if "rss_drift" in e else "-",
            fmt_tp(e.get("tp_start")), fmt_tp(e.get("tp_end")),
            "%+.1f%%" % (100 * e["tp_drift"]) if "tp_drift" in e else "-",
            "%.1f%%" % (100 * e["tp_cv"]) if "tp_cv" in e else "-",
            "%+.1f%%" % (100 * e["tp_wall_drift"]) if "tp_wall_drift" in e else "-", e.get("reason", "")))
    (RESULTS / (stem + ".md")).write_text("\n".join(md) + "\n")
    log("VERDICT: %s" % res["verdict"])
    log("wrote %s and .md" % rel(RESULTS / (stem + ".json")))
    return 0 if ok_all else 1


def soak_verdict(samples, rss_limit, tp_limit):
    """Drift = (end window - start window) / start window, each window the
    median of a tenth of the samples taken after a warm-up (the first 10% of
    the run, at least 10 s) so that filling the working set is not counted as
    growth. Throughput is ops per CPU-second of the process (other load on a
    shared machine disturbs it far less than ops per wall-second, which is
    reported too)."""
    if len(samples) < 6:
        return {"verdict": "FAIL", "reason": "too few samples (%d)" % len(samples)}
    total = samples[-1]["t"]
    warm = max(10.0, 0.1 * total)
    body = [s for s in samples[1:] if s["t"] >= warm]
    if len(body) < 4:
        body = samples[len(samples) // 2:]
    k = max(2, len(body) // 10)
    start, end = body[:k], body[-k:]
    rs = statistics.median(s["rss_kib"] for s in start)
    re_ = statistics.median(s["rss_kib"] for s in end)
    ts = statistics.median(s["tp"] for s in start)
    te = statistics.median(s["tp"] for s in end)
    tps = [s["tp"] for s in body]
    tw_s = statistics.median(s["tp_wall"] for s in start)
    tw_e = statistics.median(s["tp_wall"] for s in end)
    out = {"rss_start": rs, "rss_end": re_, "rss_drift": (re_ - rs) / rs if rs else 0.0,
           "tp_start": ts, "tp_end": te, "tp_drift": (te - ts) / ts if ts else 0.0,
           "tp_cv": statistics.stdev(tps) / statistics.fmean(tps) if len(tps) > 1 and statistics.fmean(tps) else 0,
           "rss_peak": max(s["rss_kib"] for s in samples), "warmup_s": warm,
           "tp_wall_start": tw_s, "tp_wall_end": tw_e, "tp_wall_drift": (tw_e - tw_s) / tw_s if tw_s else 0.0,
           "window_samples": k}
    bad = []
    if out["rss_drift"] > rss_limit:
        bad.append("RSS drift %+.1f%% > %+.0f%%" % (100 * out["rss_drift"], 100 * rss_limit))
    if out["tp_drift"] < tp_limit:
        bad.append("throughput drift %+.1f%% < %+.0f%%" % (100 * out["tp_drift"], 100 * tp_limit))
    out["verdict"] = "FAIL" if bad else "PASS"
    out["reason"] = "; ".join(bad) if bad else "RSS drift %+.1f%%, throughput drift %+.1f%%" % (
        100 * out["rss_drift"], 100 * out["tp_drift"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="short runs, 3 each (default; `make bench`)")
    g.add_argument("--full", action="store_true", help="seed parameters, 10 runs each (`make bench-full`)")
    g.add_argument("--soak", action="store_true", help="long run sampling RSS and throughput (`make soak`)")
    ap.add_argument("--minutes", type=float, help="soak duration per allocator (default 10)")
    ap.add_argument("--runs", type=int, help="runs per allocator and benchmark (default: quick 3, full 10)")
    ap.add_argument("--only", help="comma-separated benchmark names (a prefix like random_mixed selects its family)")
    ap.add_argument("--allocators", help="comma-separated subset: hakmem,hakmem-static,glibc,mimalloc,jemalloc,tcmalloc "
                    "(with --variants also " + ",".join(VARIANT_LABELS) + ")")
    ap.add_argument("--no-count", action="store_true", help="skip the strace run that counts OS calls")
    vg = ap.add_mutually_exclusive_group()
    vg.add_argument("--variants", dest="variants", action="store_true", default=None,
                    help="also run hakmem's variants beside it: " + ", ".join(VARIANT_LABELS) +
                         " (on in --full), each reported with its ratio to the default hakmem")
    vg.add_argument("--no-variants", dest="variants", action="store_false", help="no variants, even in --full")
    ap.add_argument("--hakmem-env", action="append", metavar="KEY=VAL",
                    help="environment for the hakmem runs only, e.g. HAKMEM_LEARN=1 (repeatable)")
    ap.add_argument("--render", metavar="JSON", help="rewrite the .md and .svg of an existing results .json")
    ap.add_argument("--publish", metavar="JSON",
                    help="put the compact verdicts table of an existing results .json between the markers "
                         "<!-- bench-table:begin --> and <!-- bench-table:end --> of docs/BENCHMARKS.md and "
                         "README.md (or the --publish-to files), with a link to its chart, written to "
                         "docs/bench-latest.svg (or --publish-svg); nothing outside the markers changes, and "
                         "nothing at all when a file lacks them (exit 2)")
    ap.add_argument("--publish-to", action="append", metavar="FILE",
                    help="with --publish: a markdown file to update instead of docs/BENCHMARKS.md and README.md "
                         "(repeatable)")
    ap.add_argument("--publish-svg", metavar="FILE",
                    help="with --publish: where the verdicts chart goes (default docs/bench-latest.svg)")
    ap.add_argument("--no-gdb", action="store_true", help="do not re-run a crashed benchmark under gdb for a backtrace")
    ap.add_argument("--no-real", action="store_true", help="skip the real programs (redis, python3, cc)")
    ap.add_argument("--tag", help="file name stem for the results (default: DATE-TIME-MODE)")
    ap.add_argument("--out", help="directory for the results (default: bench/results)")
    ap.add_argument("--note", help="a line of text for the report (e.g. which commit hakmem was built from)")
    ap.add_argument("--build", action="append", metavar="DIR | NAME=DIR",
                    help="DIR: the default build directory, holding libhakmem.so (label hakmem) and the "
                    "benchmark programs in bench/ (default: build); e.g. a copy, so that a rebuild during a "
                    "long run cannot mix versions. NAME=DIR (repeatable; NAME of letters, digits, _ . -): one "
                    "more hakmem build in the same interleaved run, labelled hakmem:NAME, preloading "
                    "DIR/libhakmem.so (only that file is needed) and proved to be served by it; the report "
                    "then gets a 'Builds compared' table")
    ap.add_argument("--pretend", action="append", metavar="LABEL=HOW",
                    help="testing aid: realise allocator LABEL differently (HOW: none = no preload, plain = the "
                         "non-static binary, or a library path to preload). The run must then be rejected; "
                         "bench/selftest.sh uses this")
    ap.add_argument("--inject-crash", action="append", metavar="BENCH/LABEL=N",
                    help="testing aid: start N of benchmark BENCH's program for allocator LABEL (1 = the first; "
                         "0 = every start; a gdb re-run counts as a start) kills itself with SIGSEGV instead; "
                         "synthetic benchmarks and the soak (BENCH soak) only. The row must then be FAIL; "
                         "bench/selftest.sh uses this")
    ap.add_argument("--rss-drift", type=float, default=0.05, help="soak: max RSS drift (default +0.05)")
    ap.add_argument("--tp-drift", type=float, default=-0.05, help="soak: min throughput drift (default -0.05)")
    ap.add_argument("--soak-threads", type=int, default=2, help="soak: worker threads (default 2)")
    ap.add_argument("--soak-unpinned", action="store_true",
                    help="soak: let the workers run on any CPU (default: all on one CPU, so that ops per "
                         "CPU-second does not depend on how the scheduler placed them)")
    args = ap.parse_args()
    if args.runs is not None and args.runs < 1:
        ap.error("--runs must be >= 1")
    if args.variants is None:
        args.variants = bool(args.full)
    global USE_GDB
    USE_GDB = not args.no_gdb
    for spec in args.inject_crash or []:
        m = re.fullmatch(r"([^/=]+)/([^=]+)=(\d+)", spec)
        if not m:
            ap.error("--inject-crash wants BENCH/LABEL=N, e.g. tiny/glibc=2")
        INJECT[(m.group(1), m.group(2))] = int(m.group(3))
    for kv in args.hakmem_env or []:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            ap.error("--hakmem-env wants KEY=VAL")
        HAKMEM_ENV[k] = v
    if args.out:
        global RESULTS
        RESULTS = Path(args.out).resolve()
    global BUILD, BIN
    plain = []
    for spec in args.build or []:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)=(.+)", spec)
        if not m:
            plain.append(spec)
            continue
        name, d = m.group(1), Path(m.group(2)).resolve()
        if build_label(name) in VARIANT_LABELS or name in ("default", "static", "secure"):
            ap.error("--build %s: the name %s is taken (a variant's or the default build's)" % (spec, name))
        if any(n == name for n, _ in BUILDS):
            ap.error("--build %s: build %s given twice" % (spec, name))
        if not (d / "libhakmem.so").exists():
            ap.error("--build %s: %s not found (run `make` there, or copy the library)" % (spec, d / "libhakmem.so"))
        BUILDS.append((name, d))
    if len(plain) > 1:
        ap.error("--build DIR given %d times: one default build (use NAME=DIR for the others)" % len(plain))
    if plain:
        BUILD = Path(plain[0]).resolve()
        BIN = BUILD / "bench"
    if args.render:
        p = Path(args.render)
        res = add_build_comparisons(add_verdicts(rejudge(json.loads(p.read_text()))))
        print("wrote %s" % ", ".join(str(f) for f in write_rendered(res, p)))
        return 0
    if args.publish:
        return publish(Path(args.publish), [Path(f) for f in (args.publish_to or PUBLISH_TO)],
                       Path(args.publish_svg) if args.publish_svg else PUBLISH_SVG)
    if args.soak:
        return main_soak(args)
    return main_bench(args)


if __name__ == "__main__":
    sys.exit(main())
