#!/usr/bin/env python3
"""Deterministic synthetic hakmem timeline for tools/report_test.sh.

    python3 tools/testdata/gen_timeline.py > tools/testdata/synthetic.jsonl

Models a program in four phases, one snapshot every 100 ms plus a final one
at exit (same format as HAKMEM_STATS_INTERVAL / HAKMEM_STATS_FILE):

  0.0-2.0 s  growth: small objects (16..128 B) pile up, superslabs are mapped;
  2.0-4.0 s  phase change: most small objects are freed (their slabs stay
             resident for a while -> RSS >> live, fragmentation), the program
             moves to 1-8 KiB objects and a few large (> 32 KiB) buffers;
             at 3.0 s empty small slabs are purged with madvise;
  4.0-5.0 s  steady state, churn without new OS calls;
  5.0-5.6 s  free-everything purge: live bytes go to 0, slabs are madvised
             and superslabs unmapped; RSS falls back to the program's base.
"""
import json
import sys

SLAB_SMALL = 64 << 10
SLAB_MID = 256 << 10
SS = 2 << 20
BASE_RSS = 3 << 20 | 417792  # the program itself

# (cls, size) of the classes this program uses
SMALL = [(0, 16), (1, 32), (2, 48), (3, 64), (7, 128), (15, 256)]
MID = [(31, 1024), (39, 2048), (47, 4096), (55, 8192)]
CLASSES = SMALL + MID
PID = 4242


class Lcg:
    """Tiny fixed PRNG, so the output is the same on every Python version."""

    def __init__(self, seed):
        self.x = seed & 0xFFFFFFFF

    def next(self):
        self.x = (self.x * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.x >> 8

    def below(self, n):
        return self.next() % n

    def frac(self, lo, hi):  # lo + (hi - lo) * k/1000, exact
        return lo + (hi - lo) * self.below(1001) / 1000.0


def main():
    rng = Lcg(20240611)
    st = {c: {"live": 0, "allocs": 0, "frees": 0, "slabs": 0} for c, _ in CLASSES}
    size_of = dict(CLASSES)
    os_c = {"mmap": 0, "munmap": 0, "madvise": 0, "mremap": 0,
            "mmap_bytes": 0, "munmap_bytes": 0, "madvise_bytes": 0}
    superslabs = 0
    large = []  # sizes of live large blocks
    large_cached = 0
    purged_small = False
    lines = []

    def target(cls, t):
        """Target live blocks of a class at time t (ms)."""
        size = size_of[cls]
        if size <= 256:
            peak = {16: 180000, 32: 160000, 48: 60000, 64: 90000, 128: 50000, 256: 12000}[size]
            if t <= 2000:
                return int(peak * t / 2000.0)
            if t <= 2500:  # free most of them
                return int(peak * (1.0 - 0.88 * (t - 2000) / 500.0))
            if t < 5000:
                return int(peak * 0.12)
            return int(peak * 0.12 * max(0.0, 1.0 - (t - 5000) / 300.0))
        peak = {1024: 6000, 2048: 3000, 4096: 1500, 8192: 800}[size]
        if t < 2000:
            return 0
        if t <= 3200:
            return int(peak * (t - 2000) / 1200.0)
        if t < 5000:
            return peak
        return int(peak * max(0.0, 1.0 - (t - 5000) / 300.0))

    t = 0
    times = list(range(0, 5601, 100)) + [5650]
    for t in times:
        # class activity
        for cls, size in CLASSES:
            s = st[cls]
            want = target(cls, t)
            churn = 0 if want == 0 and s["live"] == 0 else int(rng.frac(0.02, 0.08) * max(want, s["live"], 1000))
            if want == 0 and s["live"] == 0 and s["allocs"] == 0:
                continue
            delta = want - s["live"]
            s["allocs"] += max(delta, 0) + churn
            s["frees"] += max(-delta, 0) + churn
            s["live"] = want
            slab = SLAB_SMALL if size <= 1024 else SLAB_MID
            need = -(-want * size // slab)
            if need > s["slabs"]:
                s["slabs"] = need
            elif need < s["slabs"]:
                # freed blocks are scattered: slabs only drain slowly, empty
                # ones are purged at 3.0 s (small) or during the final purge
                if size <= 256 and t >= 3000 and not purged_small:
                    pass
                elif t >= 5000 or (size <= 256 and t >= 3000):
                    s["slabs"] = need
                else:
                    s["slabs"] = max(need, s["slabs"] - max(1, s["slabs"] // 20))
        # large buffers
        if t == 2200:
            large += [1 << 20, 1 << 20, 3 << 20]
            os_c["mmap"] += 3
            os_c["mmap_bytes"] += (1 << 20) * 2 + (3 << 20)
        if t == 2600:
            large.append(6 << 20)
            os_c["mmap"] += 1
            os_c["mmap_bytes"] += 6 << 20
        if t == 3400:
            # grow the 6 MiB buffer in place with mremap
            large[-1] = 8 << 20
            os_c["mremap"] += 1
        if t == 5100:
            large_cached = sum(large[:2])
            freed = sum(large[2:])
            os_c["munmap"] += len(large) - 2
            os_c["munmap_bytes"] += freed
            large = []
        if t == 5650:
            os_c["munmap"] += 2
            os_c["munmap_bytes"] += large_cached
            large_cached = 0

        # small purge at 3.0 s and final purge
        if t == 3000 and not purged_small:
            purged_small = True
            os_c["madvise"] += 14
            os_c["madvise_bytes"] += 14 * SLAB_SMALL * 9
        if 5000 <= t <= 5400:
            os_c["madvise"] += 6
            os_c["madvise_bytes"] += 6 * SLAB_MID

        slab_bytes = sum(st[c]["slabs"] * (SLAB_SMALL if size_of[c] <= 1024 else SLAB_MID)
                         for c in st)
        need_ss = -(-slab_bytes // (SS - (64 << 10))) if slab_bytes else 0
        if t >= 5600:
            need_ss = 0
        if need_ss > superslabs:
            os_c["mmap"] += need_ss - superslabs
            os_c["mmap_bytes"] += (need_ss - superslabs) * SS
            superslabs = need_ss
        elif need_ss < superslabs and t >= 5200:
            os_c["munmap"] += superslabs - need_ss
            os_c["munmap_bytes"] += (superslabs - need_ss) * SS
            superslabs = need_ss

        small_live = sum(st[c]["live"] * size_of[c] for c in st)
        large_live = sum(large)
        live = small_live + large_live
        meta = superslabs * (64 << 10)
        rss = BASE_RSS + slab_bytes + meta + large_live + large_cached // 4
        rss += rng.below(16) * 4096
        mapped = superslabs * SS + large_live + large_cached

        classes = []
        for cls, size in CLASSES:
            s = st[cls]
            if s["allocs"] == 0:
                continue
            classes.append({"cls": cls, "size": size, "live_blocks": s["live"],
                            "live_bytes": s["live"] * size, "slabs": s["slabs"],
                            "allocs": s["allocs"], "frees": s["frees"]})
        snap = {"t_ms": t, "pid": PID, "rss": rss, "live_bytes": live, "mapped": mapped,
                "os": dict(os_c),
                "large": {"live": len(large), "live_bytes": large_live,
                          "cached_bytes": large_cached},
                "classes": classes}
        lines.append(json.dumps(snap, separators=(",", ":")))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
