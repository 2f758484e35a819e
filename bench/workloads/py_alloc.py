"""Allocation-heavy python3 workload for bench/harness.py (real program).

Run with PYTHONMALLOC=malloc so that every object goes through malloc/free
(CPython's own small-object allocator would otherwise absorb most of them).
Deterministic: same seed, same work. Prints Ops, Throughput and a work digest.
    python3 py_alloc.py ROUNDS
"""
import json
import random
import sys
import time
import zlib


def one_round(rnd, r):
    ops = 0
    # a dict of records with strings, lists and nested dicts
    recs = {}
    for i in range(6000):
        key = "user:%d:%s" % (i, "x" * (i % 23))
        recs[key] = {"id": i, "name": "n%06d" % rnd.randrange(1000000),
                     "tags": ["t%d" % rnd.randrange(50) for _ in range(i % 6)],
                     "score": rnd.random(), "blob": "y" * rnd.randrange(8, 400)}
        ops += 1
    # JSON round trip
    text = json.dumps(recs, sort_keys=True)
    back = json.loads(text)
    ops += len(back)
    # string building and splitting
    parts = text.split(",")
    parts.sort(key=len)
    joined = "|".join(p.strip() for p in parts[::3])
    ops += len(parts)
    # churn: delete and re-insert, list comprehension garbage
    keys = list(back)
    rnd.shuffle(keys)
    for k in keys[: len(keys) // 2]:
        del back[k]
        ops += 1
    for i in range(3000):
        back["new:%d:%d" % (r, i)] = [j * 1.5 for j in range(i % 17)]
        ops += 1
    # tuples/sets
    s = {(i % 97, "k%d" % (i % 1013)) for i in range(20000)}
    ops += len(s)
    return ops, zlib.crc32(joined.encode()) ^ len(back) ^ len(s)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rnd = random.Random(20251121)
    ops, digest = 0, 0
    t0 = time.perf_counter()
    for r in range(rounds):
        n, d = one_round(rnd, r)
        ops += n
        digest = (digest * 1000003) ^ d
    t1 = time.perf_counter()
    print("work: %016x" % (digest & 0xFFFFFFFFFFFFFFFF))
    print("Ops = %d" % ops)
    print("Time = %.6f s" % (t1 - t0))
    print("Throughput = %.0f ops/s" % (ops / (t1 - t0)))


if __name__ == "__main__":
    main()
