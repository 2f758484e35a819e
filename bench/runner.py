"""Running the benchmarks: the machine a run is on, the interleaved loop
(run 1 of every allocator, then run 2, ...) with its progress line, the
work digests compared across allocators, the strace counting runs and their
start-up baseline, and the soak of one allocator with its samples.
"""

import os
import platform
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import settings
from allocators import RE_ALLOC, check_allocator
from benches import benches_by_prog, benchmarks, bin_dir
from procs import (OS_CALLS, _killpg, clean_env, exit_fields, inject_crash, parse_strace, rc_text, run_program,
                   shell_line, strace_prefix)
from render import bench_summary, fmt_rss, fmt_tp
from stats import add_ratios, row_summary, soak_verdict


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
        r = subprocess.run(["git", "-C", str(settings.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True)
        info["git"] = r.stdout.strip() or None
        if str(settings.BUILD).startswith(str(settings.ROOT) + "/"):
            r = subprocess.run(["git", "-C", str(settings.ROOT), "status", "--porcelain", "--", "src", "include"],
                               capture_output=True, text=True)
            info["src_dirty"] = bool(r.stdout.strip())
        else:
            info["hakmem_build"] = str(settings.BUILD)   # --build: not this checkout's build
    except OSError:
        pass
    return info



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


def probe_strace():
    """Whether strace takes --seccomp-bpf (settings.STRACE_SECCOMP)."""
    t = subprocess.run(["strace", "-f", "-qq", "-c", "-o", "/dev/null", "--seccomp-bpf", "true"],
                       capture_output=True)
    settings.STRACE_SECCOMP = t.returncode == 0


def os_call_baseline(allocs):
    """The OS calls of a do-nothing run (bench_tiny 0: process start-up and
    the allocator's initialisation) per allocator label, subtracted from the
    synthetic benchmarks' counts; None where the run failed."""
    baseline = {}
    tiny = benches_by_prog(benchmarks("quick"), "bench_tiny")
    for a in allocs:
        with tempfile.TemporaryDirectory() as td:
            f = Path(td) / "strace.txt"
            env = clean_env()
            child = {"LD_PRELOAD": a.preload} if a.preload else {}
            p = run_program(strace_prefix(f, child) + [str(tiny.binary(a)), "0"], env, 60)
            c = parse_strace(f) if p.rc == 0 else None
            baseline[a.label] = c
    return baseline


def run_all(benches, allocs, mode, runs, count, baseline, res, total, log):
    """Every benchmark's runs, interleaved allocator by allocator, into
    res["benchmarks"] (each row summarized, with its ratios) and
    res["problems"] (every run that failed or was rejected)."""
    prog = Progress(total)
    for b in benches:
        why = b.available()
        entry = {"name": b.name, "kind": b.kind, "desc": b.desc, "op": b.op, "results": {},
                 "args": " ".join(b.args(mode)) if b.kind == "synthetic" else
                 " ".join(getattr(b, "params")(mode))}
        if getattr(b, "metrics", ()):   # memory over time: the row's RSS figures besides its peak
            entry["metrics"] = list(b.metrics)
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
            # each round starts one allocator further on: the run after
            # another allocator's is slower on the big-memory rows (the
            # same hakmem library ran large_zeroed at 893-1142 ops/s right
            # after tcmalloc and 2403-3420 right after itself), so no
            # allocator may hold the first place of every round
            k = i % len(todo)
            for a in todo[k:] + todo[:k]:
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
            entry["results"][a.label] = row_summary(per[a.label])
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
                    entry["results"][a.label] = row_summary(per[a.label])
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
                        entry["results"][a.label] = row_summary(per[a.label], s)
                    continue
                base = baseline.get(a.label) if b.kind == "synthetic" else None
                net = {k: max(0, c[k] - (base or {}).get(k, 0)) for k in OS_CALLS}
                s["os_calls"] = net
                s["os_calls_raw"] = c
                s["os_calls_ops"] = r["ops"]
                s["os_calls_per_op"] = sum(net.values()) / r["ops"] if r["ops"] else None
                log("%s %-18s %-14s count   %s" % (prog.step(), b.name, a.label, " ".join(
                    "%s=%d" % (k, v) for k, v in net.items() if v) or "no OS calls"))
        add_ratios(entry["results"], [(a.label, a.base) for a in todo])
        for a in todo:
            for r in per[a.label]:
                if r["status"] != "ok":
                    res["problems"].append({"bench": b.name, "allocator": a.label, "run": r.get("run"),
                                            "status": r["status"], "reason": r.get("reason"),
                                            "cmd": r.get("cmd"), "stderr_tail": r.get("stderr_tail"),
                                            "exit_status": r.get("exit_status"), "signal": r.get("signal"),
                                            "gdb": r.get("gdb"), "backtrace": r.get("backtrace")})
        log(bench_summary(entry, [a.label for a in allocs]))



# a soak sample (bench_common.h's bc_sample); bench_bigheap adds the last two
RE_SAMPLE = re.compile(r"sample t=([0-9.]+) ops=(\d+) rss_kib=(\d+)(?: cpu=([0-9.]+))?"
                       r"(?: huge_kib=(-?\d+))?(?: live_kib=(\d+))?")

# the soak's workloads (--soak-workloads): the program, and its arguments
# for (seconds, threads, pinned, big-heap MiB)
SOAK_WORKLOADS = {
    # bench_soak: THREADS threads churning 4000 blocks of 16 B-512 KiB each
    "soak": ("bench_soak", lambda sec, th, pin, mib: [sec, th, 1000, 4000, 5, 1 if pin else 0]),
    # bench_bigheap: 4 threads, a MIB working set of 32 KiB-8 MiB blocks
    "big_heap": ("bench_bigheap", lambda sec, th, pin, mib: [4, mib, 0, 7, sec, 1000, 1 if pin else 0]),
}


def run_soak(a, seconds, threads, pinned, thresholds, log, workload="soak", bigheap_mib=1024):
    """One soak of allocator a for `seconds` on one of SOAK_WORKLOADS: the
    program's samples, how it ended and its verdict (soak_verdict's drift, or
    FAIL when it died, ran past its time plus 120 s, or printed another
    allocator). --inject-crash names the workload soak as `soak`, the others
    as `soak_NAME`."""
    rss_limit, tp_limit = thresholds
    prog, argf = SOAK_WORKLOADS[workload]
    binary = bin_dir() / ((prog + "_hakmem_static") if a.static else prog)
    env = clean_env()
    if a.preload:
        env["LD_PRELOAD"] = a.preload
    env.update(a.child_env())
    cmd = inject_crash("soak" if workload == "soak" else "soak_" + workload, a.label,
                       [str(binary)] + [str(x) for x in argf(seconds, threads, pinned, bigheap_mib)])
    log("soak %s: %s for %d s: %s" % (workload, a.label, seconds, shell_line(
        {"LD_PRELOAD": a.preload} if a.preload else {}, cmd)))
    samples, lines, ready_t = [], [], None
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
        m = re.match(r"ready t=([0-9.]+)", line)
        if m:
            ready_t = float(m.group(1))
        m = RE_SAMPLE.match(line)
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
            if m.group(5) is not None and int(m.group(5)) >= 0:
                samples[-1]["huge_kib"] = int(m.group(5))
            if m.group(6) is not None:
                samples[-1]["live_kib"] = int(m.group(6))
            if len(samples) % max(1, int(seconds / 20)) == 0:
                log("  t=%6.0f s  %10s ops/s  %10s ops/CPU-s  RSS %s" % (
                    t, fmt_tp(tp), fmt_tp(tpc), fmt_rss(rss)))
    err = p.stderr.read()
    p.wait()
    timer.cancel()
    entry = {"allocator": a.label, "workload": workload, "cmd": " ".join(cmd), "samples": samples,
             "ready_s": ready_t}   # when the working set was filled (bench_bigheap)
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
        if ready_t is None and workload != "soak":
            ready_t = float("inf")   # it says when its working set is filled: it never did
        entry.update(soak_verdict(samples, rss_limit, tp_limit, ready_t))
    huge = [s["huge_kib"] for s in samples if "huge_kib" in s]
    if huge:
        entry["huge_kib_end"] = huge[-1]
    log("soak %s %s: %s  %s" % (workload, a.label, entry["verdict"], entry.get("reason", "")))
    return entry
