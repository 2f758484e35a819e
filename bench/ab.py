#!/usr/bin/env python3
"""ab.py ROUNDS LIB_A ENV_A LIB_B ENV_B [ROW...]: two hakmem builds (or one
build under two sets of knobs), interleaved on the quick rows of
bench/benches.py (every row, or the ones named): A B in the first round,
B A in the next, and so on; medians of throughput and peak RSS and their
ratios B/A. The speed rule's check of a change (two builds interleaved on
every row of `make bench`), without the peers.

  python3 bench/ab.py 3 /tmp/old/libhakmem.so "" build/libhakmem.so ""
  python3 bench/ab.py 5 build/libhakmem.so HAKMEM_BACKGROUND_PURGE=off \\
                        build/libhakmem.so "" mid_1t xthread

ENV_A/ENV_B: comma-separated KNOB=VALUE pairs, or "". The programs come
from BENCHBIN (default build/bench). Every run must say
`allocator: hakmem`, or the script stops: a figure names what made it."""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benches  # noqa: E402
from libcopy import small_folio_copy  # noqa: E402


def env_of(lib, pairs):
    env = dict(os.environ)
    env["LD_PRELOAD"] = os.path.abspath(lib)
    for kv in filter(None, pairs.split(",")):
        k, v = kv.split("=", 1)
        env[k] = v
    return env


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    la, ea, lb, eb = sys.argv[2:6]
    la, lb = small_folio_copy(la), small_folio_copy(lb)  # (libcopy.py: both in small folios)
    names = set(sys.argv[6:])
    rows = [b for b in benches.benchmarks("quick")
            if getattr(b, "prog", None) and not getattr(b, "full_only", False)
            and (not names or b.name in names)]
    bindir = os.environ.get("BENCHBIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench"))
    res = {}
    pair = (("A", la, ea), ("B", lb, eb))
    for r in range(rounds):
        for b in rows:
            # A B, then B A: the second of two runs can pay for what the
            # first left behind (large_zeroed read B slower with A always first)
            for tag, lib, e in (pair if r % 2 == 0 else pair[::-1]):
                p = subprocess.run([os.path.join(bindir, b.prog)] + b.args("quick"), env=env_of(lib, e),
                                   capture_output=True, text=True, timeout=600)
                tp = re.search(r"^Throughput = ([0-9.eE+]+)", p.stdout, re.M)
                rss = re.search(r"^Peak RSS = (\d+)", p.stdout, re.M)
                al = re.search(r"^allocator: (\S+)", p.stdout, re.M)
                if not al or al.group(1) != "hakmem":
                    sys.exit("%s %s: not hakmem (%s)" % (b.name, tag, al and al.group(1)))
                if not tp or not rss:
                    print("FAIL %s %s (exit %d)" % (b.name, tag, p.returncode))
                    continue
                res.setdefault((b.name, tag), []).append((float(tp.group(1)), int(rss.group(1))))
    print("%-18s %12s %12s %7s %9s %9s %6s" % ("row", "A ops/s", "B ops/s", "B/A", "A MB", "B MB", "B/A"))
    for b in rows:
        a, bb = res.get((b.name, "A")), res.get((b.name, "B"))
        if not a or not bb:
            continue
        ta, tb = statistics.median(x[0] for x in a), statistics.median(x[0] for x in bb)
        ra, rb = statistics.median(x[1] for x in a) / 1024, statistics.median(x[1] for x in bb) / 1024
        print("%-18s %12.0f %12.0f %7.3f %9.1f %9.1f %6.3f" % (b.name, ta, tb, tb / ta, ra, rb, rb / ra))


if __name__ == "__main__":
    main()
