#!/usr/bin/env python3
"""hakmem benchmark harness (Python 3 standard library only).

    python3 bench/harness.py --quick          # make bench       (3 runs each, short)
    python3 bench/harness.py --full           # make bench-full  (10 runs each, seed sizes)
    python3 bench/harness.py --soak [--minutes N]   # make soak (N minutes per workload)
    python3 bench/harness.py --quick --variants --allocators hakmem --only learner
                                              # default hakmem vs its variants

Every benchmark runs under hakmem (LD_PRELOAD of build/libhakmem.so, and the
*_hakmem_static binaries linked against build/libhakmem.a), glibc, and every
peer allocator installed (mimalloc, jemalloc, tcmalloc); allocators are
interleaved run by run, each round starting one further on (A B C, B C A,
...). With --variants (on in --full) hakmem also runs as variants, each
labelled and compared with the default hakmem: hakmem:fast
(HAKMEM_PROFILE=fast), hakmem:lowmem (HAKMEM_PROFILE=lowmem),
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

# The harness in modules (each file's first lines say its one concern):
#   harness.py     this entry point: the command line, and each mode's order of work
#   settings.py    the paths and options of this invocation
#   allocators.py  which allocators, how each is realised, the proof of who served a run
#   benches.py     the benchmarks: their commands, arguments and output
#   procs.py       running one program: environment, time limit, exit, strace, gdb
#   runner.py      the interleaved runs, OS-call counting, the soak's samples
#   stats.py       medians, PASS/FAIL rows, ratios; verdicts over a document
#   verdict.py     ratios to the best peer and between builds, bootstrap intervals
#   render.py      the markdown report, the compact table, the log's tables
#   charts.py      the SVG charts
#   publish.py     the files written, --render, --publish into the docs

import argparse
import datetime
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# bench/ modules (after the path above)
import settings  # noqa: E402
from allocators import VARIANT_LABELS, allocator_entry, build_label, discover_allocators  # noqa: E402
from benches import benchmarks, ensure_built  # noqa: E402
from publish import PUBLISH_SVG, PUBLISH_TO, load, publish, write_rendered, write_reports, write_soak  # noqa: E402
from render import log_report  # noqa: E402
import runner  # noqa: E402
from runner import machine_info, os_call_baseline, probe_strace, run_all, run_soak  # noqa: E402
from stats import add_build_comparisons, add_verdicts, overall_verdict  # noqa: E402

# tests/repo/bench_selftest.sh reads these two as harness.Progress and harness.fmt_dur
Progress, fmt_dur = runner.Progress, runner.fmt_dur


def log(msg):
    print(msg, flush=True)


def main_bench(args):
    mode = "full" if args.full else "quick"
    runs = args.runs or (10 if mode == "full" else 3)
    t_start = time.time()

    if not ensure_built(log):
        return 2
    allocs, skipped = discover_allocators(args, log)
    log("hakmem bench harness: %s mode, %d runs per allocator, interleaved" % (mode, runs))
    if mode == "quick":
        log("  quick mode: shorter runs than the seed sizes (tiny 0.5M rounds instead of 10M, larson 1 s "
            "instead of 10/5 s, ...; see the args column of the report); `make bench-full` runs the seed sizes")
    if settings.HAKMEM_ENV:
        log("  hakmem runs get: %s" % " ".join("%s=%s" % kv for kv in settings.HAKMEM_ENV.items()))
    for a in allocs:
        log("  allocator %-14s %s" % (a.label, a.describe()))
    for s in skipped:
        log("  SKIP %-14s %s" % (s["allocator"], s["reason"]))
    if not allocs:
        log("no allocator to measure")
        return 2

    count = not args.no_count and shutil.which("strace")
    if not args.no_count and not count:
        log("  OS calls not counted: strace not installed (apt-get install -y strace)")
    if count:
        probe_strace()

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
           "hakmem_env": dict(settings.HAKMEM_ENV), "note": args.note}

    # start-up OS calls of a do-nothing run, per allocator
    baseline = os_call_baseline(allocs) if count else {}
    res["os_call_baseline"] = baseline

    total = sum((runs + (1 if count else 0)) * sum(1 for a in allocs if b.applies(a)) for b in benches
                if b.available() is None)
    try:
        run_all(benches, allocs, mode, runs, count, baseline, res, total, log)
    except KeyboardInterrupt:
        res["interrupted"] = True
        log("\ninterrupted: writing the results so far")
    finish(res, args, mode, t_start, skipped)
    return 1 if res["verdict"] == "FAIL" or res["problems"] or res.get("interrupted") else 0


def finish(res, args, mode, t_start, skipped):
    res["elapsed_s"] = round(time.time() - t_start, 1)
    res["verdict"] = overall_verdict(res)
    stem = args.tag or (datetime.datetime.now().strftime("%Y-%m-%d-%H%M") + "-" + mode)
    add_verdicts(res)
    add_build_comparisons(res)
    jp, mp, sp = write_reports(res, stem)
    for line in log_report(res, skipped):
        log(line)
    log("wrote %s, %s, %s (%.0f s)" % (settings.rel(jp), settings.rel(mp), settings.rel(sp), res["elapsed_s"]))


def main_soak(args):
    minutes = args.minutes if args.minutes is not None else 10.0
    seconds = max(10, int(round(minutes * 60)))

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
    workloads = [w.strip() for w in args.soak_workloads.split(",") if w.strip()]
    bad = [w for w in workloads if w not in runner.SOAK_WORKLOADS]
    if bad or not workloads:
        log("soak: unknown workload %s (known: %s)" % (",".join(bad) or "(none)", ",".join(runner.SOAK_WORKLOADS)))
        return 2
    res["workloads"] = workloads
    res["bigheap_mib"] = args.soak_bigheap_mib
    ok_all = True
    for w in workloads:
        for a in allocs:
            entry = run_soak(a, seconds, args.soak_threads, not args.soak_unpinned, (rss_limit, tp_limit), log,
                             workload=w, bigheap_mib=args.soak_bigheap_mib)
            ok_all &= entry["verdict"] == "PASS"
            res["soaks"].append(entry)
    res["verdict"] = "PASS" if ok_all else "FAIL"
    stem = args.tag or (datetime.datetime.now().strftime("%Y-%m-%d-%H%M") + "-soak")
    jpath = write_soak(res, stem)
    log("VERDICT: %s" % res["verdict"])
    log("wrote %s and .md" % settings.rel(jpath))
    return 0 if ok_all else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="short runs, 3 each (default; `make bench`)")
    g.add_argument("--full", action="store_true", help="seed parameters, 10 runs each (`make bench-full`)")
    g.add_argument("--soak", action="store_true", help="long run sampling RSS and throughput (`make soak`)")
    ap.add_argument("--minutes", type=float, help="soak duration per allocator and workload (default 10)")
    ap.add_argument("--runs", type=int, help="runs per allocator and benchmark (default: quick 3, full 10)")
    ap.add_argument("--only", help="comma-separated benchmark names (a prefix like random_mixed selects its family)")
    ap.add_argument("--allocators", help="comma-separated subset: hakmem,hakmem-static,glibc,mimalloc,jemalloc,tcmalloc "
                    "(with --variants also " + ",".join(VARIANT_LABELS) + ")")
    ap.add_argument("--no-count", action="store_true", help="skip the strace run that counts OS calls")
    vg = ap.add_mutually_exclusive_group()
    vg.add_argument("--variants", dest="variants", action="store_true", default=None,
                    help="also run hakmem's variants beside it: " + ", ".join(VARIANT_LABELS) +
                         " (on in --full; --quick runs hakmem:lowmem alone unless --no-variants), each "
                         "reported with its ratio to the default hakmem")
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
                         "tests/repo/bench_selftest.sh uses this")
    ap.add_argument("--inject-crash", action="append", metavar="BENCH/LABEL=N",
                    help="testing aid: start N of benchmark BENCH's program for allocator LABEL (1 = the first; "
                         "0 = every start; a gdb re-run counts as a start) kills itself with SIGSEGV instead; "
                         "synthetic benchmarks and the soak (BENCH soak) only. The row must then be FAIL; "
                         "tests/repo/bench_selftest.sh uses this")
    ap.add_argument("--rss-drift", type=float, default=0.05, help="soak: max RSS drift (default +0.05)")
    ap.add_argument("--tp-drift", type=float, default=-0.05, help="soak: min throughput drift (default -0.05)")
    ap.add_argument("--soak-threads", type=int, default=2, help="soak: worker threads (default 2)")
    ap.add_argument("--soak-workloads", default="soak,big_heap",
                    help="soak: the workloads, each run for --minutes per allocator (default soak,big_heap: "
                         "bench_soak's small and medium blocks, then bench_bigheap's big heap)")
    ap.add_argument("--soak-bigheap-mib", type=int, default=1024,
                    help="soak: the big_heap workload's working set in MiB (default 1024)")
    ap.add_argument("--soak-unpinned", action="store_true",
                    help="soak: let the workers run on any CPU (default: all on one CPU, so that ops per "
                         "CPU-second does not depend on how the scheduler placed them)")
    args = ap.parse_args()
    if args.runs is not None and args.runs < 1:
        ap.error("--runs must be >= 1")
    # the round's lowmem rule (bench/verdict.py, lowmem_rss) is judged in
    # every quick run: without --variants or --no-variants, --quick runs
    # hakmem:lowmem beside hakmem (--full runs every variant)
    args.lowmem_only = args.variants is None and not args.full and not args.soak
    if args.variants is None:
        args.variants = bool(args.full)
    settings.USE_GDB = not args.no_gdb
    for spec in args.inject_crash or []:
        m = re.fullmatch(r"([^/=]+)/([^=]+)=(\d+)", spec)
        if not m:
            ap.error("--inject-crash wants BENCH/LABEL=N, e.g. tiny/glibc=2")
        settings.INJECT[(m.group(1), m.group(2))] = int(m.group(3))
    for kv in args.hakmem_env or []:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            ap.error("--hakmem-env wants KEY=VAL")
        settings.HAKMEM_ENV[k] = v
    if args.out:
        settings.RESULTS = Path(args.out).resolve()
    plain = []
    for spec in args.build or []:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)=(.+)", spec)
        if not m:
            plain.append(spec)
            continue
        name, d = m.group(1), Path(m.group(2)).resolve()
        if build_label(name) in VARIANT_LABELS or name in ("default", "static", "secure"):
            ap.error("--build %s: the name %s is taken (a variant's or the default build's)" % (spec, name))
        if any(n == name for n, _ in settings.BUILDS):
            ap.error("--build %s: build %s given twice" % (spec, name))
        if not (d / "libhakmem.so").exists():
            ap.error("--build %s: %s not found (run `make` there, or copy the library)" % (spec, d / "libhakmem.so"))
        settings.BUILDS.append((name, d))
    if len(plain) > 1:
        ap.error("--build DIR given %d times: one default build (use NAME=DIR for the others)" % len(plain))
    if plain:
        settings.BUILD = Path(plain[0]).resolve()
        settings.BIN = settings.BUILD / "bench"
    if args.render:
        p = Path(args.render)
        print("wrote %s" % ", ".join(str(f) for f in write_rendered(load(p), p)))
        return 0
    if args.publish:
        return publish(Path(args.publish), [Path(f) for f in (args.publish_to or PUBLISH_TO)],
                       Path(args.publish_svg) if args.publish_svg else PUBLISH_SVG)
    if args.soak:
        return main_soak(args)
    return main_bench(args)


if __name__ == "__main__":
    sys.exit(main())
