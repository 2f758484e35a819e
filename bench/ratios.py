#!/usr/bin/env python3
"""ratios.py ROUNDS "PROGRAM ARGS" NAME=LIB[:KNOB=V,...] ... : one benchmark
program under several allocators, interleaved (each round in the other
order: A B C, C B A, ...), and each library's throughput as a ratio to the
LAST one's: the median of the per-round ratios, with a bootstrap 95%
interval; the same for peak RSS. Per-round ratios cancel what drifts
between rounds on a shared machine; an interval that holds 1.000 is a tie.

  python3 bench/ratios.py 21 "bench_app 2 200000 11" \\
      secure=build/libhakmem-secure.so \\
      mi_secure=/tmp/mimalloc-ref/libmimalloc-secure.so

PROGRAM is looked up in BENCHBIN (default build/bench). Every run must
print `allocator: NAME (PATH)` with PATH the library it was given, or the
script stops: a figure names what made it."""
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from libcopy import small_folio_copy  # noqa: E402


def parse(spec):
    name, rest = spec.split("=", 1)
    lib, _, knobs = rest.partition(":")
    lib = small_folio_copy(lib)  # (libcopy.py: both sides in small folios)
    env = dict(os.environ, LD_PRELOAD=lib)
    for kv in filter(None, knobs.split(",")):
        k, v = kv.split("=", 1)
        env[k] = v
    return name, os.path.abspath(lib), env


def figure(out, key):
    for line in out.splitlines():
        if line.startswith(key):
            return float(line.split("=", 1)[1].split()[0])
    return None


def interval(ratios, draws=2000):
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws) - 1]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, cmd = int(sys.argv[1]), sys.argv[2].split()
    libs = [parse(s) for s in sys.argv[3:]]
    prog = os.path.join(os.environ.get("BENCHBIN", "build/bench"), cmd[0])
    ops = {n: [] for n, _, _ in libs}
    rss = {n: [] for n, _, _ in libs}
    for r in range(rounds):
        for name, lib, env in (libs if r % 2 == 0 else libs[::-1]):
            out = subprocess.run([prog] + cmd[1:], env=env, capture_output=True, text=True).stdout
            first = out.split("\n", 1)[0]
            got = first[first.find("(") + 1:first.rfind(")")] if first.startswith("allocator: ") else ""
            if not got or os.path.realpath(got) != os.path.realpath(lib):
                sys.exit("%s round %d: allocator line %r, wanted %s" % (name, r + 1, first, lib))
            ops[name].append(figure(out, "Throughput"))
            rss[name].append(figure(out, "Peak RSS") or 0)
    ref = libs[-1][0]
    print("# %s, %d rounds, interleaved; ratios to %s" % (" ".join(cmd), rounds, ref))
    print("%-14s %14s %8s %18s %10s %8s %18s" % ("library", "ops/s (median)", "ratio", "95% interval",
                                                 "RSS MiB", "ratio", "95% interval"))
    for name, _, _ in libs:
        rs = [a / b for a, b in zip(ops[name], ops[ref])]
        lo, hi = interval(rs)
        ms = [a / b if b else 1.0 for a, b in zip(rss[name], rss[ref])]
        mlo, mhi = interval(ms)
        print("%-14s %14.0f %8.3f %8.3f - %.3f %10.1f %8.3f %8.3f - %.3f" % (
            name, statistics.median(ops[name]), statistics.median(rs), lo, hi,
            statistics.median(rss[name]) / 1024, statistics.median(ms), mlo, mhi))


if __name__ == "__main__":
    main()
