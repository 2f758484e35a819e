"""Verdicts against the best peer (issue 20), Python 3 standard library only.

The comparison of two rows' runs (a ratio of medians with its bootstrap
interval, in words); stats.py lays it over every row of a results document
and keeps each row's own summary (median, PASS/FAIL), render.py prints it.

For every benchmark row the harness compares hakmem with the *best peer* on
that row: among the installed allocators that are not hakmem or one of its
variants (every label that starts with "hakmem"; glibc counts as a peer) and
whose row produced a valid result (verdict PASS), the one with the best
median: the highest median throughput, and, separately, the lowest median
peak RSS.

The comparison is a ratio of medians with a 95% percentile bootstrap interval:
the runs of each side are resampled independently, with replacement
(bootstrap_ratio), n_boot times with a fixed seed, so the same runs always
give the same interval.

Both ratios are oriented so that a ratio above 1 means hakmem is better:

    throughput:  hakmem / best peer     (median ops/s; higher is better)
    peak RSS:    best peer / hakmem     (median peak RSS; lower is better,
                                         so the peer's is the numerator)

and one rule (judge) gives the verdict for both:

    ahead   the interval's low end > 1    (hakmem is better)
    behind  the interval's high end < 1   (hakmem is worse)
    tie     the interval contains 1

A row where hakmem's result is FAIL (some run crashed, timed out or was
rejected) keeps FAIL, with no ratio and no interval. With fewer than 2 runs
on either side there is no interval: the verdict is "n/a (need >= 2 runs)".
"""

import random
import statistics

SEED = 20          # issue 20; any fixed value makes the bootstrap reproducible
N_BOOT = 2000
CONF = 0.95
MIN_RUNS = 2
BOOT_MIN_RUNS = 5   # below this, no bootstrap: the range of all run pairings
NEED_RUNS = "n/a (need \u2265 %d runs)" % MIN_RUNS
SUBJECT = "hakmem"

# metric -> (key of the row's median, key of a run's value, higher is better)
METRICS = {"throughput": ("median", "throughput", True),
           "rss": ("rss_kib", "rss_kib", False),
           # memory over time (issue 61): a row's own RSS figures (its
           # "metrics" in the JSON, bench/benches.py's MEMORY_METRICS): the RSS
           # after every block was freed or with a full cache (end_rss), at the
           # end of the idle phase and of the light phase; lower is better
           "end_rss": ("end_kib", "end_kib", False),
           "idle_end": ("idle_end_kib", "idle_end_kib", False),
           "light_end": ("light_end_kib", "light_end_kib", False)}
MEMORY_KEYS = ("end_kib", "idle_end_kib", "light_end_kib")


def bootstrap_ratio(a_runs, b_runs, n_boot=N_BOOT, seed=SEED, conf=CONF):
    """median(a) / median(b) and its `conf` percentile bootstrap interval:
    each of the n_boot replicates resamples a and b independently, with
    replacement, and takes the ratio of their medians. Deterministic given
    the seed. Returns (ratio, (low, high)); (ratio, None) when either side
    has fewer than MIN_RUNS runs; below BOOT_MIN_RUNS runs a side the
    interval is the range of all pairings instead (conservative). Raises ValueError on an empty side or a
    value <= 0 (a ratio of medians needs positive values)."""
    a, b = [float(x) for x in a_runs], [float(x) for x in b_runs]
    if not a or not b:
        raise ValueError("bootstrap_ratio: no runs on one side")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("bootstrap_ratio: values must be > 0")
    ratio = statistics.median(a) / statistics.median(b)
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        return ratio, None
    if len(a) < BOOT_MIN_RUNS or len(b) < BOOT_MIN_RUNS:
        # a bootstrap of 2-4 runs resamples too few values: its interval is
        # too narrow (two runs of one library against a copy of itself came
        # out "faster beyond noise"). Below 5 runs a side the interval is
        # every pairing of runs: [min(a)/max(b), max(a)/min(b)].
        return ratio, (min(a) / max(b), max(a) / min(b))
    rng = random.Random(seed)
    na, nb = len(a), len(b)
    reps = sorted(statistics.median([a[rng.randrange(na)] for _ in range(na)]) /
                  statistics.median([b[rng.randrange(nb)] for _ in range(nb)]) for _ in range(n_boot))
    alpha = (1.0 - conf) / 2
    return ratio, (_quantile(reps, alpha), _quantile(reps, 1.0 - alpha))


def _quantile(sorted_vals, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def judge(ci):
    """ahead / behind / tie from an interval of a ratio oriented so that > 1
    means hakmem is better."""
    lo, hi = ci
    if lo > 1.0:
        return "ahead"
    if hi < 1.0:
        return "behind"
    return "tie"


def is_hakmem(label):
    return label.startswith("hakmem")


def _ok(s):
    return bool(s) and s.get("status") == "ok" and s.get("verdict", "PASS") == "PASS"


def run_values(s, metric):
    """The accepted runs' values of a row for a metric (throughput or rss)."""
    key = METRICS[metric][1]
    return [r[key] for r in (s.get("runs") or []) if r.get("status") == "ok" and r.get(key)]


def best_peer(row, metric="throughput"):
    """The label of the best peer on a row (dict label -> result summary, a
    benchmark's "results" in the JSON): the non-hakmem allocator with a valid
    result and the highest median throughput (metric "throughput") or the
    lowest median peak RSS (metric "rss"). None when no peer has one."""
    med, _, higher = METRICS[metric]
    cand = [(s[med], l) for l, s in row.items() if not is_hakmem(l) and _ok(s) and s.get(med)]
    if not cand:
        return None
    # ties on the median: the first label in alphabetical order, so the
    # choice does not depend on the order of the dict
    return sorted(cand, key=lambda c: (-c[0] if higher else c[0], c[1]))[0][1]


def compare(row, metric="throughput", subject=SUBJECT, n_boot=N_BOOT, seed=SEED, conf=CONF):
    """The verdict of `subject` (hakmem) against the best peer on a row for
    one metric: a dict with peer, ratio, ci [low, high], verdict (ahead, tie,
    behind, FAIL or n/a), n [subject runs, peer runs], orientation and, for
    FAIL or n/a, reason."""
    med, _, higher = METRICS[metric]
    out = {"metric": metric, "orientation": "hakmem / peer" if higher else "peer / hakmem",
           "conf": conf, "n_boot": n_boot, "seed": seed, "peer": best_peer(row, metric),
           "ratio": None, "ci": None}
    s = row.get(subject)
    if not s:
        out.update(verdict="n/a", reason="no %s result" % subject)
        return out
    if not _ok(s):
        out.update(verdict="FAIL", reason=s.get("verdict_reason") or "the %s row is FAIL" % subject)
        return out
    if out["peer"] is None:
        out.update(verdict="n/a", reason="no peer with a valid result")
        return out
    h, p = run_values(s, metric), run_values(row[out["peer"]], metric)
    num, den = (h, p) if higher else (p, h)
    return _judge_runs(out, metric, (h, p), num, den, judge, n_boot, seed, conf)


def _judge_runs(out, metric, sides, num, den, word, n_boot, seed, conf):
    """The end of compare and compare_build: n (runs of each side), the
    ratio num / den of the medians, its interval and word(interval); n/a
    without runs, or with too few for an interval."""
    out["n"] = [len(v) for v in sides]
    if not all(sides):
        out.update(verdict="n/a", reason="no %s values" % metric)
        return out
    ratio, ci = bootstrap_ratio(num, den, n_boot=n_boot, seed=seed, conf=conf)
    out["ratio"] = ratio
    if ci is None:
        out.update(verdict="n/a", reason=NEED_RUNS)
        return out
    out["ci"] = [ci[0], ci[1]]
    out["verdict"] = word(ci)
    return out


def row_verdicts(row, subject=SUBJECT, metrics=(), **kw):
    """Both verdicts of a row: {"subject", "throughput": compare(...), "rss": compare(...)},
    and one for each of the row's own memory metrics (end_rss, idle_end, light_end)."""
    out = {"subject": subject, "throughput": compare(row, "throughput", subject, **kw),
           "rss": compare(row, "rss", subject, **kw)}
    for m in metrics:
        out[m] = compare(row, m, subject, **kw)
    return out


def verdict_text(v):
    """The verdict as the report prints it: ahead/tie/behind, FAIL, or n/a (why)."""
    if v["verdict"] == "n/a":
        return v.get("reason", "n/a") if v.get("reason", "").startswith("n/a") else "n/a (%s)" % v.get(
            "reason", "?")
    return v["verdict"]


def counts(verdicts, metric):
    """How many rows are ahead / tie / behind / FAIL / n/a for a metric."""
    c = {"ahead": 0, "tie": 0, "behind": 0, "FAIL": 0, "n/a": 0}
    for v in verdicts:
        c[v[metric]["verdict"]] = c.get(v[metric]["verdict"], 0) + 1
    return c


# --------------------------------------------------------- builds compared
# --build NAME=DIR puts two or more hakmem builds in one interleaved run; each
# row then compares build B with build A, B / A for both metrics (not
# oriented: throughput > 1 is faster, peak RSS > 1 is more memory), with the
# same bootstrap interval and these words:
BUILD_WORDS = {"throughput": ("faster beyond noise", "slower beyond noise", "within noise"),
               "rss": ("larger beyond noise", "smaller beyond noise", "within noise")}


def build_word(ci, metric):
    """The words for an interval of B / A: above 1, below 1, or containing 1."""
    above, below, within = BUILD_WORDS[metric]
    if ci[0] > 1.0:
        return above
    if ci[1] < 1.0:
        return below
    return within


def compare_build(row, a, b, metric, n_boot=N_BOOT, seed=SEED, conf=CONF):
    """Build b against build a on one row for one metric: ratio b / a of the
    medians with its bootstrap interval and verdict (build_word, FAIL when
    either row is FAIL, n/a without runs or with fewer than MIN_RUNS a side)."""
    out = {"metric": metric, "a": a, "b": b, "orientation": "%s / %s" % (b, a), "conf": conf,
           "n_boot": n_boot, "seed": seed, "ratio": None, "ci": None}
    sa, sb = row.get(a), row.get(b)
    if not sa or not sb:
        out.update(verdict="n/a", reason="no %s result" % (a if not sa else b))
        return out
    bad = [l for l, s in ((a, sa), (b, sb)) if not _ok(s)]
    if bad:
        out.update(verdict="FAIL", reason="the %s row is FAIL" % " and ".join(bad))
        return out
    va, vb = run_values(sa, metric), run_values(sb, metric)
    return _judge_runs(out, metric, (va, vb), vb, va, lambda ci: build_word(ci, metric),
                       n_boot, seed, conf)


def build_pairs(allocators):
    """(reference, [compared]) from the run's allocators (the JSON's list of
    {"label", "build", "build_order", ...}): with two or more named builds
    (--build NAME=DIR) the reference is the first named build on the command
    line and every other named build is
    compared with it; with one named build, it is compared with the default
    hakmem (label hakmem). (None, []) when there is nothing to compare."""
    named = [a["label"] for a in sorted((a for a in allocators if a.get("build") and a["build"] != "default"),
                                        key=lambda a: a.get("build_order", 0))]
    labels = [a["label"] for a in allocators]
    if len(named) >= 2:
        return named[0], named[1:]
    if len(named) == 1 and SUBJECT in labels:
        return SUBJECT, named
    return None, []


# ----------------------------------------------------------- the round's rules
# Two rules judge memory against speed (DEVELOPERS.md, round 4):
#  - dominance, for the default build: on no row may a peer be both faster
#    and leaner than hakmem, each beyond noise (the interval of the ratio
#    excludes 1 on the peer's side for throughput and for peak RSS);
#  - the lowmem profile (hakmem:lowmem, --variants) is judged on peak RSS
#    alone: its median within LOWMEM_BOUND times the leanest peer's median.
LOWMEM = "hakmem:lowmem"
LOWMEM_BOUND = 1.10


def dominance(row, subject=SUBJECT, n_boot=N_BOOT, seed=SEED, conf=CONF):
    """Whether a peer dominates `subject` on a row: {"verdict": "not
    dominated" | "dominated" | FAIL | n/a, "by": [peers both faster and leaner
    beyond noise], "peers": {label: {"throughput": [ratio, lo, hi], "rss":
    [ratio, lo, hi]}}}, ratios oriented as compare's (> 1: hakmem better).
    A peer with fewer than MIN_RUNS runs on either metric cannot be judged;
    with no peer judged the verdict is n/a."""
    out = {"subject": subject, "verdict": "n/a", "by": [], "peers": {}}
    s = row.get(subject)
    if not s:
        out["reason"] = "no %s result" % subject
        return out
    if not _ok(s):
        out.update(verdict="FAIL", reason=s.get("verdict_reason") or "the %s row is FAIL" % subject)
        return out
    for label in sorted(row):
        p = row[label]
        if is_hakmem(label) or not _ok(p):
            continue
        got = {}
        for metric in ("throughput", "rss"):
            h, v = run_values(s, metric), run_values(p, metric)
            if len(h) < MIN_RUNS or len(v) < MIN_RUNS:
                break
            num, den = (h, v) if METRICS[metric][2] else (v, h)
            ratio, ci = bootstrap_ratio(num, den, n_boot=n_boot, seed=seed, conf=conf)
            got[metric] = [ratio, ci[0], ci[1]]
        if len(got) < 2:
            continue
        out["peers"][label] = got
        if got["throughput"][2] < 1.0 and got["rss"][2] < 1.0:
            out["by"].append(label)
    if not out["peers"]:
        out["reason"] = "no peer with %d runs of both metrics" % MIN_RUNS
        return out
    out["verdict"] = "dominated" if out["by"] else "not dominated"
    return out


def lowmem_rss(row, variant=LOWMEM, bound=LOWMEM_BOUND, n_boot=N_BOOT, seed=SEED, conf=CONF):
    """The lowmem profile's peak RSS against the leanest peer's:
    {"peer", "ratio" (variant / peer, medians), "ci", "bound", "verdict"}:
    "within" when the ratio is at most `bound`, "over" when the interval's
    low end is above it (beyond noise), "over (within noise)" otherwise;
    FAIL when the variant's row is FAIL; n/a without the variant (run with
    --variants), a peer, or MIN_RUNS runs a side."""
    out = {"variant": variant, "bound": bound, "peer": best_peer(row, "rss"), "ratio": None, "ci": None}
    s = row.get(variant)
    if not s:
        out.update(verdict="n/a", reason="no %s result (--variants)" % variant)
        return out
    if not _ok(s):
        out.update(verdict="FAIL", reason=s.get("verdict_reason") or "the %s row is FAIL" % variant)
        return out
    if out["peer"] is None:
        out.update(verdict="n/a", reason="no peer with a valid result")
        return out
    h, p = run_values(s, "rss"), run_values(row[out["peer"]], "rss")
    if not h or not p:
        out.update(verdict="n/a", reason="no rss values")
        return out
    ratio, ci = bootstrap_ratio(h, p, n_boot=n_boot, seed=seed, conf=conf)
    out["ratio"] = ratio
    if ci is None:
        out.update(verdict="n/a", reason=NEED_RUNS)
        return out
    out["ci"] = [ci[0], ci[1]]
    out["verdict"] = "within" if ratio <= bound else "over" if ci[0] > bound else "over (within noise)"
    return out


def round_rules(row, **kw):
    """Both rules of the round on one row."""
    return {"dominance": dominance(row, **kw), "lowmem": lowmem_rss(row, **kw)}
