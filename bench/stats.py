"""The statistics of a run: each row's summary (median, mean, min, max, CV
and peak RSS of its accepted runs; PASS only when every run was accepted),
its ratios to mimalloc, glibc and the default hakmem, the verdicts against
the best peer and between builds laid over a whole results document (the
comparisons themselves, bootstrap intervals included, are bench/verdict.py's),
and the soak's drift.
"""

import statistics

import verdict


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
    huge = [r["huge_kib"] for r in ok if r.get("huge_kib") is not None]
    if huge:   # bench_bigheap's huge-page-backed bytes
        s["huge_kib"] = int(statistics.median(huge))
    for key in verdict.MEMORY_KEYS:   # memory over time: RSS at the end of a phase
        vals = [r[key] for r in ok if r.get(key) is not None]
        if vals:
            s[key] = int(statistics.median(vals))
    return s


def row_summary(runs, old=None):
    """summarize(runs) with the runs themselves, keeping the OS-call counts
    of the row's earlier summary old."""
    s = summarize(runs)
    s.update({k: v for k, v in (old or {}).items() if k.startswith("os_calls")}, runs=runs)
    return s


def add_ratios(results, rows):
    """The ratios of one benchmark's results (label -> summary) for the rows
    [(label, base)] measured: median throughput ÷ mimalloc's and ÷ glibc's,
    and for a variant (base: the label it is compared with) throughput and
    peak RSS ÷ its base's. Only between rows that passed."""
    for ref, key in (("mimalloc", "ratio_mimalloc"), ("glibc", "ratio_glibc")):
        rr = results.get(ref)
        for label, _ in rows:
            s = results[label]
            if rr and rr.get("status") == "ok" and s.get("status") == "ok" and rr["median"] > 0:
                s[key] = s["median"] / rr["median"]
    # variants: throughput and peak RSS relative to the default hakmem
    for label, base_label in rows:
        if not base_label:
            continue
        s, base = results[label], results.get(base_label)
        if base and base.get("status") == "ok" and s.get("status") == "ok" and base["median"] > 0:
            s["ratio_base"] = s["median"] / base["median"]
            if s.get("rss_kib") and base.get("rss_kib"):
                s["rss_ratio_base"] = s["rss_kib"] / base["rss_kib"]


def overall_verdict(res):
    """The document's verdict: PASS when every row of every benchmark is."""
    return "FAIL" if any(r.get("verdict") != "PASS" for b in res["benchmarks"]
                         for r in b["results"].values()) else "PASS"


def rejudge(res):
    """--render of a results file written before a crash was a verdict: a row
    that kept a median of its surviving runs is judged again (FAIL), and the
    ratios to a row that is now FAIL are dropped."""
    for b in res.get("benchmarks", []):
        rows = b["results"]
        for l, s in list(rows.items()):
            runs = s.get("runs") or []
            if s.get("status") == "ok" and any(r.get("status") != "ok" for r in runs):
                rows[l] = row_summary(runs, s)
            else:
                rows[l].setdefault("verdict", "PASS" if s.get("status") == "ok" else "FAIL")
        bases = {a["label"]: a.get("base") for a in res.get("allocators", [])}
        for l, s in rows.items():
            for key, ref in (("ratio_mimalloc", "mimalloc"), ("ratio_glibc", "glibc"),
                             ("ratio_base", bases.get(l)), ("rss_ratio_base", bases.get(l))):
                if key in s and rows.get(ref, {}).get("status") != "ok":
                    del s[key]
    return res


def add_verdicts(res):
    """Each benchmark row's verdicts against the best peer (bench/verdict.py),
    from the runs the JSON holds: b["verdicts"] = {"subject", "throughput",
    "rss"}, and res["verdict_counts"] (ahead/tie/behind/FAIL/n/a per metric);
    the round's two rules (verdict.round_rules: dominance of the default
    build, the lowmem profile's peak RSS) in b["round_rules"] and their
    counts in res["round_rule_counts"]. Skipped benchmarks get none."""
    vs = []
    for b in res.get("benchmarks", []):
        if b.get("skipped") or not b.get("results"):
            b.pop("verdicts", None)
            continue
        b["verdicts"] = verdict.row_verdicts(b["results"], metrics=b.get("metrics") or ())
        vs.append(b["verdicts"])
        b["round_rules"] = verdict.round_rules(b["results"])
    res["verdict_counts"] = {m: verdict.counts(vs, m) for m in ("throughput", "rss")}
    rr = {"dominance": {}, "lowmem": {}}
    for b in res.get("benchmarks", []):
        for k, v in (b.get("round_rules") or {}).items():
            rr[k][v["verdict"]] = rr[k].get(v["verdict"], 0) + 1
    res["round_rule_counts"] = rr
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


def soak_verdict(samples, rss_limit, tp_limit, ready_t=None):
    """Drift = (end window - start window) / start window, each window the
    median of a tenth of the samples taken after a warm-up (the first 10% of
    the run, at least 10 s, and no earlier than ready_t, when the program
    said its working set was filled) so that filling the working set is not
    counted as growth. Throughput is ops per CPU-second of the process (other load on a
    shared machine disturbs it far less than ops per wall-second, which is
    reported too)."""
    if len(samples) < 6:
        return {"verdict": "FAIL", "reason": "too few samples (%d)" % len(samples)}
    if ready_t is not None and sum(s["t"] >= ready_t for s in samples) < 4:
        return {"verdict": "FAIL", "reason": "too few samples after the working set was filled (%s)" % (
            "at %.0f s" % ready_t if ready_t != float("inf") else "never")}
    total = samples[-1]["t"]
    warm = max(10.0, 0.1 * total, ready_t or 0.0)
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
    # a program that says what it holds (bench_bigheap's live_kib, whose
    # random sizes make it wander): RSS is judged per live byte, so that the
    # drift judged is the allocator's, not the working set's
    what, judged = "RSS drift", out["rss_drift"]
    if all(s.get("live_kib") for s in start + end):
        ls = statistics.median(s["live_kib"] for s in start)
        le = statistics.median(s["live_kib"] for s in end)
        out.update(live_start=ls, live_end=le, live_drift=(le - ls) / ls,
                   rss_per_live_drift=(re_ / le) / (rs / ls) - 1 if rs else 0.0)
        what, judged = "RSS per live byte drift", out["rss_per_live_drift"]
    bad = []
    if judged > rss_limit:
        bad.append("%s %+.1f%% > %+.0f%%" % (what, 100 * judged, 100 * rss_limit))
    if out["tp_drift"] < tp_limit:
        bad.append("throughput drift %+.1f%% < %+.0f%%" % (100 * out["tp_drift"], 100 * tp_limit))
    out["verdict"] = "FAIL" if bad else "PASS"
    out["reason"] = "; ".join(bad) if bad else "%s %+.1f%%, throughput drift %+.1f%%" % (
        what, 100 * judged, 100 * out["tp_drift"])
    if "live_drift" in out:
        out["reason"] += " (RSS drift %+.1f%%, live bytes %+.1f%%)" % (100 * out["rss_drift"],
                                                                      100 * out["live_drift"])
    return out
