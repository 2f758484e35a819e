"""The benchmarks: what each runs (the synthetic programs built by CMake in
BUILD/bench, and the real programs redis, python3 and cc), with which
arguments in quick and full mode, and how a run's output becomes a record
(throughput, ops, peak RSS, work digest, the allocator it printed).
"""

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import settings
from allocators import RE_ALLOC, check_allocator, libc_path
from procs import (GDB_DONE, _killpg, clean_env, exit_fields, fail, fail_text, free_port, gdb_backtrace,
                   inject_crash, rc_text, run_program, shell_line, strace_prefix)

PROGRAMS = ["bench_tiny", "bench_random_mixed", "bench_mid", "larson", "bench_xthread",
            "bench_large", "bench_false_sharing", "bench_app", "bench_soak",
            "bench_large_rotate", "bench_phase", "bench_shift", "bench_drift", "bench_burst",
            "bench_bigheap", "bench_arena", "bench_idle", "bench_waves", "bench_lru"]

# the lines of a benchmark program's report (bench_common.h)
RE_TP = re.compile(r"^Throughput = ([0-9.eE+]+) ops/s", re.M)
RE_OPS = re.compile(r"^Ops = (\d+)", re.M)
RE_RSS = re.compile(r"^Peak RSS = (\d+) KiB", re.M)
RE_WORK = re.compile(r"^work: (\S+)", re.M)
# bench_bigheap: the huge-page-backed bytes with every block live
RE_HUGE = re.compile(r"^AnonHugePages = (-?\d+) KiB", re.M)
# memory over time (issue 61): `rss T_MS KIB [PHASE]` samples, and the RSS
# figures a row may report besides its peak (Bench.metrics; lower is better):
# the metric's name -> (the key of a run's value, the line that carries it)
RE_RSS_SAMPLE = re.compile(r"^rss (\d+) (\d+)", re.M)
MEMORY_METRICS = {
    "end_rss": ("end_kib", re.compile(r"^End RSS = (\d+) KiB", re.M)),           # bench_waves, bench_lru
    "idle_end": ("idle_end_kib", re.compile(r"^idle_end_kib (\d+)", re.M)),     # bench_idle
    "light_end": ("light_end_kib", re.compile(r"^light_end_kib (\d+)", re.M)),  # bench_idle
}
SERIES_MAX = 300   # the most RSS samples a run's record keeps (evenly thinned)


def rss_series(out):
    """The `rss T_MS KIB` samples of a run's output as [[t_ms, kib], ...],
    thinned evenly to at most SERIES_MAX (the last kept)."""
    pts = [[int(m.group(1)), int(m.group(2))] for m in RE_RSS_SAMPLE.finditer(out)]
    if len(pts) > SERIES_MAX:
        step = len(pts) / float(SERIES_MAX - 1)
        pts = [pts[int(i * step)] for i in range(SERIES_MAX - 1)] + [pts[-1]]
    return pts


def bin_dir():
    return settings.BIN


def ensure_built(log):
    """The programs are CMake's (bench/CMakeLists.txt, built by `make` into
    BUILD/bench): the harness builds nothing itself, so what it measures is
    what the project's one build system made."""
    missing = [p for p in PROGRAMS if not (settings.BIN / p).exists()]
    if not (settings.BIN / "libbenchprobe.so").exists():
        missing.append("libbenchprobe.so")
    if missing:
        log("%s lacks %s: run `make` (or `cmake --build %s`) first" % (
            settings.BIN, ", ".join(missing), settings.BUILD))
        return False
    return True


class Bench:
    """A synthetic benchmark: one of the programs in BUILD/bench, plain or
    linked with libhakmem.a, run with its quick or full arguments."""
    kind = "synthetic"

    def __init__(self, name, prog, quick, full, op, desc, deterministic=True, static=True,
                 timeout=(120, 600), full_only=False, metrics=(), series=False):
        self.name, self.prog, self.quick, self.full = name, prog, quick, full
        self.op, self.desc, self.deterministic, self.static = op, desc, deterministic, static
        self.timeout = timeout
        self.full_only = full_only
        # memory over time: the MEMORY_METRICS the row reports (each run must
        # print them), and whether its runs keep their `rss` samples
        self.metrics, self.series = tuple(metrics), series

    def available(self):
        return None  # or why this benchmark cannot run here

    def limit(self, mode):
        """The time limit of one run, in seconds."""
        return self.timeout[0 if mode == "quick" else 1]

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
        timeout = self.limit(mode)
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
            if p.rc < 0 and settings.USE_GDB and key not in GDB_DONE and not count_file:
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
        hp = RE_HUGE.search(p.out)
        if hp and int(hp.group(1)) >= 0:
            rec["huge_kib"] = int(hp.group(1))
        for m in self.metrics:
            key, rx = MEMORY_METRICS[m]
            v = rx.search(p.out)
            if not v:
                return fail(rec, "no %s line in the output (the row's %s figure)" % (rx.pattern, m), p)
            rec[key] = int(v.group(1))
        if self.series:
            rec["rss_series"] = rss_series(p.out)
        return rec


class RealProgram(Bench):
    """A real program, preloaded with the allocator and the probe library."""
    kind = "real"
    # the program's own environment (besides the allocator's and the
    # probe's), the processes the probe must have seen, and whether it runs
    # in a temporary directory of its own: python3 and cc differ in these
    extra_env = {}
    exe_filter = None
    in_tmpdir = False

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

    def missing(self, found, package, what):
        """None when the program was found, else why its row is skipped:
        what is missing and the Debian package that brings it."""
        if found:
            return None
        self.packages = [package]
        return "%s: install the Debian package %s (apt-get install -y %s)" % (what, package, package)

    def proved(self, rec, alloc, probe_out, stderr_text, exe_filter):
        """check_probe, recorded in rec: the allocator the probe saw, and the
        rejection when it is not alloc. Returns check_probe's (seen, why)."""
        seen, why = self.check_probe(alloc, probe_out, stderr_text, exe_filter=exe_filter)
        rec["printed_allocator"] = [seen[0][1], seen[0][2]] if seen else None
        if why:
            rec.update(status="rejected", reason=why)
        return seen, why

    def run(self, alloc, mode, count_file=None):
        """One run under alloc (with count_file: under strace, counting OS
        calls): a record of how it ended, rejected unless the probe saw alloc
        in every process; self.result reads the measurement."""
        timeout = self.limit(mode)
        with tempfile.TemporaryDirectory() as td:
            probe = Path(td) / "probe.txt"
            child = self.child_env(alloc, probe)
            child.update(self.extra_env)
            env = clean_env()
            cmd = self.command(alloc, mode)
            rec = {"cmd": shell_line(child, cmd)}
            if count_file:
                cmd = strace_prefix(count_file, child) + cmd
            else:
                env.update(child)
            p = run_program(cmd, env, timeout, cwd=td if self.in_tmpdir else None)
            rec["wall_s"] = round(p.wall, 4)
            rec.update(exit_fields(p.rc, p.timed_out))
            if p.timed_out:
                return fail(rec, "timed out after %d s" % timeout, p)
            if p.rc != 0:
                return fail(rec, rc_text(p.rc), p)
            seen, why = self.proved(rec, alloc, probe, p.err, self.exe_filter)
            if why:
                return rec
            return self.result(rec, p, probe, seen)


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
        timeout = self.limit(mode)
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
            seen, why = self.proved(rec, alloc, probe, err, ["redis"])
            if why:
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


class Python(RealProgram):
    # every object through malloc, the same hashes every run, no .pyc written
    extra_env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    exe_filter = ["python"]

    def __init__(self):
        super().__init__("python3", "one work item (see bench/workloads/py_alloc.py)",
                         "python3 running bench/workloads/py_alloc.py (dicts, lists, strings, JSON, "
                         "sorting) with PYTHONMALLOC=malloc so every object goes through the allocator")
        self.exe = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else (
            shutil.which("python3") or sys.executable)
        self.deterministic = True

    def available(self):
        return self.missing(self.exe, "python3", "python3 not found")

    def params(self, mode):
        return ["4" if mode == "quick" else "12"]

    def command(self, alloc, mode):
        return [self.exe, str(settings.BENCH_SRC / "workloads" / "py_alloc.py")] + self.params(mode)

    def result(self, rec, p, probe, seen):
        tp, ops, w = RE_TP.search(p.out), RE_OPS.search(p.out), RE_WORK.search(p.out)
        if not tp or not ops:
            return fail(rec, "no Throughput line from the script", p)
        rec.update(status="ok", throughput=float(tp.group(1)), ops=int(ops.group(1)),
                   rss_kib=probe_peak_rss(probe, ["python"]) or p.maxrss_kib, work=w.group(1) if w else None)
        return rec


class Compile(RealProgram):
    exe_filter = ["gcc", "cc1", "as", "cc", "collect"]   # the driver and every tool it starts
    in_tmpdir = True

    def __init__(self):
        super().__init__("cc", "one compilation",
                         "cc -O2 -c of a generated C file (40 functions in quick mode, 200 in full: structs, "
                         "loops, switches); the gcc driver, cc1 and as are all preloaded")
        self.cc = shutil.which("cc") or shutil.which("gcc")

    def available(self):
        return self.missing(self.cc, "gcc", "no C compiler (cc, gcc) found")

    def params(self, mode):
        return ["-O2", "-c"]

    def source(self, mode):
        n = 40 if mode == "quick" else 200
        path = settings.BUILD / "bench-work" / ("cc_input_%d.c" % n)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(generate_c(n))
        return path

    def command(self, alloc, mode):
        return [self.cc] + self.params(mode) + [str(self.source(mode)), "-o", "/dev/null"]

    def result(self, rec, p, probe, seen):
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
    B.append(Bench("big_heap", "bench_bigheap", [4, 256, 2000, 7], [4, 1024, 3000, 7],
                   "one malloc, calloc, realloc or free",
                   "4 threads, a 256 MiB (full: 1 GiB) working set of 32 KiB-8 MiB blocks (85% <= 256 KiB, "
                   "3% 1-8 MiB), random replacement, 15% realloc, 30% calloc read before written, 1 free in "
                   "8 by another thread; every byte written, every page checked; reports AnonHugePages"))
    B.append(Bench("false_sharing", "bench_false_sharing", [4, 10, 1000000, 8], [4, 50, 1000000, 8],
                   "one write to an object", "8 B objects allocated by one thread and written by 4 others"))
    B.append(Bench("thread_churn", "bench_thread_churn", [30, 8, 2000, 100, 3, 8, 2, 7],
                   [100, 8, 2000, 100, 3, 8, 2, 7], "one malloc or free",
                   "rounds of 8 short-lived threads, each ~2100 blocks of 16 B-32 KiB and 3 of "
                   "64 KiB-4 MiB, 8 blocks handed to (and freed by) a thread of the next round"))
    B.append(Bench("app", "bench_app", [2, 200000, 11], [5, 200000, 11], "one malloc/calloc/realloc/free",
                   "build, query, edit, serialize and tear down a 200000-node tree of nodes and strings"))
    # the arena pattern (issue 43): the same tree dropped node by node, or by
    # destroying the heap it was built in (the allocator's own heap API, found
    # with dlsym: hak_heap, mi_heap, jemalloc's arenas; none: one by one)
    B.append(Bench("arena_free", "bench_arena", [40, 100000, 7, "free"], [200, 100000, 7, "free"],
                   "one node built and freed",
                   "a tree of 100000 48 B nodes (half with an 8-120 B string) built, walked and freed "
                   "node by node, repeated"))
    B.append(Bench("arena_destroy", "bench_arena", [40, 100000, 7, "destroy"], [200, 100000, 7, "destroy"],
                   "one node built and dropped",
                   "as arena_free, built in a heap of the allocator's own and dropped by destroying it "
                   "(hak_heap_destroy, mi_heap_destroy, jemalloc arena.<i>.destroy; tcmalloc and glibc "
                   "have none: one by one)", static=False))
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
    # memory over time (issue 61): what RSS is after the work, not how fast
    # the work went. idle_*: fill about 256 MiB (full: 1200 MiB), free it
    # all, idle, then light use; the figures are the RSS at the end of the
    # idle and light phases (throughput there is the fill and free rate)
    for nm, sz, what in (("small", 120, "120 B"), ("mid", 4000, "4000 B"), ("big", "2m", "2 MiB")):
        B.append(Bench("idle_%s" % nm, "bench_idle", [sz, 256, 3000, 2000, 0, 1], [sz, 1200, 8000, 4000, 0, 1],
                       "one malloc or free (fill and free only)",
                       "memory over time: %s blocks fill 256 MiB (full: 1200 MiB), every one freed, then "
                       "idle 3 s (full 8 s) and light use 2 s (4 s); figures: RSS at the end of idle and of "
                       "light use" % what, metrics=("idle_end", "light_end"), series=True))
    B.append(Bench("waves", "bench_waves", [4, 4, 12000, 250, 250, 1], [4, 8, 16000, 250, 250, 1],
                   "one malloc, calloc, aligned alloc, realloc or free",
                   "4 threads at a time in waves that start and exit, random mix: 90% < 32 KiB, 8.5% "
                   "32 KiB-1 MiB, 1.5% 1-9 MiB; malloc, calloc, aligned_alloc/posix_memalign (16-4096), "
                   "realloc; every byte written and checked; a quarter of a thread's live blocks freed by "
                   "the next wave; end RSS after every block is freed", metrics=("end_rss",), series=True))
    B.append(Bench("lru", "bench_lru", [64, 6, 1000000, 64, 512, 150, 1], [64, 8, 1500000, 64, 512, 150, 1],
                   "one get or set",
                   "an LRU cache of 64 MiB (node + value per entry), refilled in phases with values 1.5x "
                   "larger each (64-512 B up to 1.1-8.7 KiB), evicting the least recently used; 60% gets; "
                   "end RSS with the cache full after the refills", metrics=("end_rss",), series=True))
    B.append(Redis())
    B.append(Python())
    B.append(Compile())
    return [b for b in B if not (Q and b.full_only)]


def benches_by_prog(benches, prog):
    for b in benches:
        if getattr(b, "prog", None) == prog:
            return b
    return None
