"""The text of a run's results: the markdown report (STEM.md), the compact
verdicts table that the docs include (STEM-table.md, --publish), and the
tables and summary lines of the log; numbers formatted for people.
"""

import re

import verdict
from allocators import PEERS
from procs import OS_CALLS

# the Debian package each preloaded peer comes from (its version is the
# peer's), and what a label alone does not say
PEER_PACKAGES = {label: pkg for label, _, pkg in PEERS}
PEER_PROJECT = {"tcmalloc": "gperftools"}


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


def fmt_huge(k):
    """Huge-page-backed KiB: 0 is a figure here, not a missing one."""
    return "0" if k == 0 else fmt_rss(k)


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
    for b, v in with_verdicts(res, L, 5):
        L.append("| %s | %s |" % (b["name"], " | ".join(verdict_cells(v["throughput"]) + verdict_cells(v["rss"]))))
    return L


def rules_table(res, legend=True):
    """The round's two rules, one row per benchmark: the peers that dominate
    the default build (both faster and leaner beyond noise) and the lowmem
    profile's peak RSS against the leanest peer's."""
    L = ["### The round's rules: dominance and lowmem", ""]
    if legend:
        L += ["**Dominance** (the default build): a peer dominates a row when it is both faster and "
              "leaner than %s beyond noise (the 95%% bootstrap interval of each ratio lies wholly on "
              "the peer's side); a row is *not dominated* when no peer does. **lowmem** (`%s`, run "
              "in every `--quick` run and with `--variants`): its median peak RSS ÷ the leanest peer's, *within* when at most "
              "%.2f, *over* when the interval's low end is above it, *over (within noise)* otherwise."
              % (verdict.SUBJECT, verdict.LOWMEM, verdict.LOWMEM_BOUND), ""]
    L += ["| benchmark | dominance | dominated by | leanest peer | lowmem ÷ leanest (peak RSS) [95% CI] | lowmem |",
          "|---|---|---|---|---:|---|"]
    for b in res.get("benchmarks", []):
        r = b.get("round_rules")
        if not r:
            continue
        d, lm = r["dominance"], r["lowmem"]
        dw = d["verdict"] if d["verdict"] not in ("n/a",) else "n/a (%s)" % d.get("reason", "?")
        by = ", ".join("%s (%s, %s)" % (p, fmt_vratio(d["peers"][p]["throughput"][0]),
                                        fmt_vratio(d["peers"][p]["rss"][0])) for p in d["by"]) or "-"
        ratio = fmt_vratio(lm.get("ratio"))
        if lm.get("ci"):
            ratio += " [%s, %s]" % (fmt_vratio(lm["ci"][0]), fmt_vratio(lm["ci"][1]))
        lw = lm["verdict"] if lm["verdict"] != "n/a" else "n/a (%s)" % lm.get("reason", "?")
        L.append("| %s | %s | %s | %s | %s | %s |" % (
            b["name"], "**dominated**" if dw == "dominated" else dw, by, lm.get("peer") or "-", ratio,
            "**%s**" % lw if lw.startswith("over") else lw))
    c = res.get("round_rule_counts") or {}
    L += ["", "Dominance: %s. lowmem: %s." % tuple(
        ", ".join("%d %s" % (n, w) for w, n in sorted((c.get(k) or {}).items())) or "none"
        for k in ("dominance", "lowmem"))]
    return L


def rules_summary(res):
    """One line: the rows a peer dominates, and the lowmem rows over the bound."""
    dom = ["%s (by %s)" % (b["name"], ", ".join(b["round_rules"]["dominance"]["by"]))
           for b in res.get("benchmarks", []) if (b.get("round_rules") or {}).get("dominance", {}).get("by")]
    over = ["%s %.2f" % (b["name"], b["round_rules"]["lowmem"]["ratio"])
            for b in res.get("benchmarks", [])
            if (b.get("round_rules") or {}).get("lowmem", {}).get("verdict", "").startswith("over")]
    return "round rules: dominated rows: %s; lowmem over %.2fx the leanest peer: %s" % (
        ", ".join(dom) or "none", verdict.LOWMEM_BOUND, ", ".join(over) or "none")


def with_verdicts(res, L, blank):
    """The (benchmark, verdicts) of a verdicts table's rows, in order; a
    skipped benchmark has none: its line (the reason, then `blank` empty
    cells) goes into the table L instead."""
    for b in res.get("benchmarks", []):
        v = b.get("verdicts")
        if v:
            yield b, v
        elif b.get("skipped"):
            L.append("| %s | skipped: %s |%s" % (b["name"], skip_text(b), " |" * blank))


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


def markdown(res, svg_name, rss_chart=None):
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
    if any(b.get("round_rules") for b in res["benchmarks"]):
        L += rules_table(res)
        L.append("")
    L += memory_table(res, rss_chart)
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
    L += huge_table(res)
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


def upstream_version(deb):
    """The upstream version in a Debian package version: the epoch, the
    Debian revision and a repack suffix dropped ('5:7.0.15-1~deb12u10' ->
    '7.0.15', '2.0.9+ds-2' -> '2.0.9', '2.10-1' -> '2.10')."""
    v = deb.split(":", 1)[-1]
    if "-" in v:
        v = v.rsplit("-", 1)[0]
    return re.split(r"[+~]", v)[0]


def peer_version(res, label):
    """The version of a peer as the run recorded it: glibc's from the
    machine, a preloaded peer's from its Debian package (dpkg-query at run
    time, machine.packages); None when the run did not record it."""
    m = res.get("machine") or {}
    if label == "glibc":
        return m.get("glibc") or None
    deb = (m.get("packages") or {}).get(PEER_PACKAGES.get(label, ""))
    return upstream_version(deb) if deb else None


def peer_name(res, label):
    """A peer as the tables name it: its label and version ('mimalloc
    2.0.9', 'tcmalloc (gperftools 2.10)'); the label alone when the version
    was not recorded."""
    if not label:
        return "-"
    v = peer_version(res, label)
    if not v:
        return label
    if label in PEER_PROJECT:
        return "%s (%s %s)" % (label, PEER_PROJECT[label], v)
    return "%s %s" % (label, v)


def peers_line(res):
    """One sentence naming every peer of the run with its version and, for
    a preloaded one, the Debian package (and package version) it came from."""
    out = []
    for a in res.get("allocators", []):
        label = a["label"]
        if verdict.is_hakmem(label):
            continue
        v = peer_version(res, label)
        name = "%s, %s %s" % (label, PEER_PROJECT[label], v) if v and label in PEER_PROJECT else \
            peer_name(res, label)
        pkg = PEER_PACKAGES.get(label)
        deb = ((res.get("machine") or {}).get("packages") or {}).get(pkg or "")
        if label == "glibc":
            name += " (the system's malloc)"
        elif deb:
            name += " (Debian's %s %s, preloaded)" % (pkg, deb)
        if name == label:
            name += " (version not recorded)"
        out.append(name)
    return "Peers: %s." % "; ".join(out) if out else ""


def compact_table(res, source=None):
    """The compact verdicts table that the docs include (STEM-table.md,
    --publish): a caption naming the run and every peer with its version,
    then one line per benchmark: the fastest peer (with its version), hakmem
    ÷ that peer [95% CI] and its verdict; the leanest peer, its peak RSS ÷
    hakmem's [95% CI] and that verdict (ahead/tie/behind; FAIL; n/a)."""
    m = res.get("machine", {})
    subj = verdict.SUBJECT + (" " + res["hakmem_version"] if res.get("hakmem_version") else "")
    L = ["%s against the best installed peer on each row: %s mode, %s runs each, %s (%s CPUs), %s%s. %s "
         "Throughput: hakmem ÷ the fastest peer, > 1 when hakmem is faster; peak RSS: the leanest peer ÷ "
         "hakmem, > 1 when hakmem is smaller; [95%% bootstrap interval]; **ahead**/**behind** only when the "
         "interval excludes 1, else tie." % (
             subj, res.get("mode"), res.get("runs"), m.get("cpu", "?"), m.get("cpus"), res.get("date"),
             (", from `%s`" % source if source else "") + (" (%s)" % res["note"] if res.get("note") else ""),
             peers_line(res)), "",
         "| benchmark | fastest peer | hakmem ÷ fastest [95% CI] | verdict | leanest peer | "
         "peak RSS: leanest ÷ hakmem [95% CI] | verdict |",
         "|---|---|---:|---|---|---:|---|"]
    for b, v in with_verdicts(res, L, 6):
        cells = []
        for metric in ("throughput", "rss"):
            peer, ratio, word = verdict_cells(v[metric])
            cells += [peer_name(res, v[metric].get("peer")) if peer != "-" else "-", ratio, word]
        L.append("| %s | %s |" % (b["name"], " | ".join(cells)))
    return L


def _listed(rows, metric, most=5, more=True):
    """'name ratio [lo, hi] vs peer, ...' of the first `most` (benchmark,
    verdicts) rows, and (more) how many more there are."""
    s = ", ".join("%s %s [%s, %s] vs %s" % (b["name"], fmt_vratio(v[metric]["ratio"]), fmt_vratio(
        v[metric]["ci"][0]), fmt_vratio(v[metric]["ci"][1]), v[metric]["peer"]) for b, v in rows[:most])
    return s + (" and %d more" % (len(rows) - most) if more and len(rows) > most else "")


def compact_summary(res):
    """Five lines on a run that the README quotes (--publish, between the
    bench-summary markers): the throughput verdicts counted, the rows ahead
    and behind with their ratios and intervals, the peak RSS verdicts
    counted with the furthest behind, and the run with every peer's
    version."""
    rows = [(b, b["verdicts"]) for b in res.get("benchmarks", []) if b.get("verdicts")]
    c = res.get("verdict_counts") or {m: verdict.counts([v for _, v in rows], m) for m in ("throughput", "rss")}

    def counted(m, words):
        d = c.get(m) or {}
        extra = ["%d %s" % (d[k], k) for k in ("FAIL", "n/a") if d.get(k)]
        return ", ".join(["%s %d" % (w, d.get(k, 0)) for k, w in words] + extra)

    def by(m, word, reverse=False):
        return sorted(((b, v) for b, v in rows if v[m]["verdict"] == word and v[m].get("ci")),
                      key=lambda bv: bv[1][m]["ratio"], reverse=reverse)
    ahead, behind = by("throughput", "ahead", True), by("throughput", "behind")
    lean = by("rss", "behind")
    peers = [peer_name(res, a["label"]) for a in res.get("allocators", []) if not verdict.is_hakmem(a["label"])]
    m = res.get("machine", {})
    return [
        "- **Throughput**, against the fastest installed peer on each of %d rows: hakmem is %s "
        "(95%% intervals; a tie is a tie)." % (len(rows), counted("throughput", (
            ("ahead", "ahead on"), ("tie", "tied on"), ("behind", "behind on")))),
        "- **Ahead** (hakmem ÷ peer): %s." % (_listed(ahead, "throughput") or "none"),
        "- **Behind**: %s." % (_listed(behind, "throughput") or "none"),
        "- **Peak RSS**, against the leanest peer: hakmem is %s; the furthest behind (peer ÷ hakmem): %s." % (
            counted("rss", (("ahead", "smaller on"), ("tie", "tied on"), ("behind", "larger on"))),
            _listed(lean, "rss", 3, more=False) or "none"),
        "- **The run**: %s, %s mode, %s runs each, %s CPUs (%s), %s; peers %s." % (
            verdict.SUBJECT + (" " + res["hakmem_version"] if res.get("hakmem_version") else ""),
            res.get("mode"), res.get("runs"), m.get("cpus"), m.get("cpu", "?"),
            str(res.get("date", "?")).split(" ")[0], ", ".join(peers) or "none"),
    ]


def huge_table(res):
    """The huge-page-backed bytes of the rows that report them (big_heap:
    AnonHugePages with every block live), beside their peak RSS; [] when no
    row does."""
    rows = []
    for b in res["benchmarks"]:
        for a in res["allocators"]:
            r = b["results"].get(a["label"])
            if r and r.get("status") == "ok" and r.get("huge_kib") is not None:
                rows.append("| %s | %s | %s | %s |" % (b["name"], a["label"], fmt_huge(r["huge_kib"]),
                                                       fmt_rss(r.get("rss_kib"))))
    if not rows:
        return []
    return ["Huge pages: AnonHugePages of the process (/proc/self/smaps_rollup) after the steps, every "
            "block still live; median of the runs.", "",
            "| benchmark | allocator | huge-page-backed | peak RSS |", "|---|---|---:|---:|"] + rows + [""]


MEMORY_COLUMNS = (("idle_end", "idle_end_kib", "RSS idle end"), ("light_end", "light_end_kib", "RSS light end"),
                  ("end_rss", "end_kib", "end RSS"))


def memory_table(res, chart=None):
    """Memory over time (issue 61): the rows that report RSS figures of their
    own (b["metrics"]: idle_end, light_end, end_rss; lower is better), each
    allocator's medians beside its peak RSS and throughput, and hakmem's
    verdict against the best peer on each figure; [] when no row has any.
    chart: the file name of the RSS-over-time chart, linked when given."""
    rows = [b for b in res["benchmarks"] if b.get("metrics") and b.get("results")]
    if not rows:
        return []
    cols = [c for c in MEMORY_COLUMNS if any(c[0] in b["metrics"] for b in rows)]
    L = ["### Memory over time", "",
         "The figure of these rows is RSS after the work, not throughput: %s; lower is better, median of "
         "the runs. The verdict is hakmem against the best peer on that figure (peer / hakmem, > 1: hakmem "
         "smaller)." % "; ".join({"idle_end": "RSS at the end of the idle phase (no allocator call)",
                                  "light_end": "at the end of the light phase (one malloc/free every 10 ms)",
                                  "end_rss": "end RSS (waves: after every block was freed; lru: with the "
                                             "cache full after the refills)"}[c[0]] for c in cols), "",
         "| benchmark | allocator | %s | peak RSS | median ops/s |" % " | ".join(c[2] for c in cols),
         "|---|---|%s---:|---:|" % ("---:|" * len(cols))]
    for b in rows:
        for a in res["allocators"]:
            r = b["results"].get(a["label"])
            if not r:
                continue
            if r.get("status") != "ok":
                L.append("| %s | %s | **%s** |%s - | - |" % (b["name"], a["label"], fail_word(r),
                                                               " - |" * (len(cols) - 1)))
                continue
            L.append("| %s | %s | %s | %s | %s |" % (
                b["name"], a["label"], " | ".join(fmt_rss(r.get(c[1])) if c[0] in b["metrics"] else "" for c in cols),
                fmt_rss(r.get("rss_kib")), fmt_tp(r.get("median"))))
    L.append("")
    for b in rows:
        vs = b.get("verdicts") or {}
        words = ["%s: %s (%s vs %s)" % (m, verdict.verdict_text(vs[m]), fmt_vratio(vs[m].get("ratio")),
                                        vs[m].get("peer") or "-") for m in b["metrics"] if m in vs]
        if words:
            L.append("- %s: %s" % (b["name"], "; ".join(words)))
    if L[-1] != "":
        L.append("")
    if chart:
        L += ["![RSS over time](%s)" % chart, ""]
    return L


def bench_summary(entry, labels):
    """The log's one line on a benchmark once its runs are done: each row's
    median (and ratio to mimalloc), or FAIL with how many runs died."""
    parts = []
    for label in labels:
        s = entry["results"].get(label)
        if not s:
            continue
        if s.get("status") != "ok":
            parts.append("%s %s (%d of %d runs died)" % (label, fail_word(s), s["runs_total"] - s["runs_ok"],
                                                          s["runs_total"]))
        else:
            rm = s.get("ratio_mimalloc")
            parts.append("%s %s%s%s%s" % (label, fmt_tp(s["median"]), " (%.2fx mi)" % rm if rm else "",
                                           ", huge %s" % fmt_huge(s["huge_kib"]) if s.get("huge_kib") is not None
                                           else "",
                                           "".join(", %s %s" % (c[0], fmt_rss(s[c[1]])) for c in MEMORY_COLUMNS
                                                   if s.get(c[1]) is not None)))
    return "  => %s: %s" % (entry["name"], ", ".join(parts))


def log_report(res, skipped):
    """What the log prints at the end of a run, one string per print: the
    tables without their legends, the failed runs, the verdict and the
    summary lines."""
    out = ["", "\n".join(ratio_table(res, "ratio_mimalloc", "Ratio to mimalloc (median throughput)", "mimalloc")),
           "", "\n".join(ratio_table(res, "ratio_glibc", "Ratio to glibc (median throughput)", "glibc")), ""]
    vt = variant_table(res)
    if vt:
        out += ["\n".join(vt), ""]
    if any(b.get("verdicts") for b in res["benchmarks"]):
        out += ["\n".join(verdict_table(res, legend=False)), ""]
    if res.get("builds"):
        out += ["\n".join(builds_table(res, legend=False)), ""]
    if res["problems"]:
        out.append("PROBLEMS (%d runs failed or rejected; their rows are FAIL):" % len(res["problems"]))
        for p in res["problems"]:
            out.append("  %s / %s run %s: %s: %s" % (p["bench"], p["allocator"], p["run"], p["status"], p["reason"]))
            out.append("      %s" % p["cmd"])
            if p.get("gdb"):
                out.append("      re-run under gdb (address randomisation on): %s" % p["gdb"])
            if p.get("backtrace"):
                out.append("      gdb %s:\n" % ("backtrace" if p.get("gdb") == "reproduced" else "output") +
                           "\n".join("        " + t for t in p["backtrace"].splitlines()[:30]))
    for s in skipped:
        out.append("skipped %s: %s" % (s["allocator"], s["reason"]))
    failed = ["%s / %s: %s: %s" % (b["name"], l, fail_word(r), r.get("verdict_reason", ""))
              for b in res["benchmarks"] for l, r in b["results"].items() if r.get("verdict") != "PASS"]
    if failed:
        out.append("VERDICT: FAIL (%d row%s)" % (len(failed), "" if len(failed) == 1 else "s"))
        out += ["  " + f for f in failed]
    else:
        out.append("VERDICT: PASS (every run of every row was accepted)")
    out.append(verdict_summary(res))
    if res.get("round_rule_counts"):
        out.append(rules_summary(res))
    if res.get("builds"):
        out.append(builds_summary(res))
    return out


def soak_markdown(res):
    """The soak's report (STEM.md of --soak): one row per allocator."""
    minutes, th = res["minutes"], res["thresholds"]
    md = ["# hakmem soak: %s" % res["date"], "",
          "Command: `%s`; %.1f minutes per allocator and workload; machine: %s, %s CPUs." % (
              res["command"], minutes, res["machine"].get("cpu"), res["machine"].get("cpus")),
          "Thresholds (from the earlier project's scorecard): RSS drift <= +%.0f%%, throughput drift >= %.0f%%."
          % (100 * th["rss_drift_max"], 100 * th["throughput_drift_min"]), "",
          "Throughput is ops per CPU-second of the soak process (the wall-clock drift is in the last column: "
          "other load on a shared machine moves it).", "",
          "Workloads: soak = bench_soak (small and medium blocks), big_heap = bench_bigheap (a %s MiB "
          "working set of 32 KiB-8 MiB blocks; huge: its AnonHugePages at the last sample; live drift: the "
          "drift of the bytes it holds, and its RSS is judged per live byte)." % (
              res.get("bigheap_mib", "-")), "",
          "| workload | allocator | verdict | RSS start | RSS end | RSS drift | live drift | ops/CPU-s start | "
          "ops/CPU-s end | throughput drift | throughput CV | wall-clock drift | huge | note |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for e in res["soaks"]:
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e.get("workload", "soak"), e["allocator"], e["verdict"], fmt_rss(e.get("rss_start")),
            fmt_rss(e.get("rss_end")),
            "%+.1f%%" % (100 * e["rss_drift"]) if "rss_drift" in e else "-",
            "%+.1f%%" % (100 * e["live_drift"]) if "live_drift" in e else "-",
            fmt_tp(e.get("tp_start")), fmt_tp(e.get("tp_end")),
            "%+.1f%%" % (100 * e["tp_drift"]) if "tp_drift" in e else "-",
            "%.1f%%" % (100 * e["tp_cv"]) if "tp_cv" in e else "-",
            "%+.1f%%" % (100 * e["tp_wall_drift"]) if "tp_wall_drift" in e else "-",
            fmt_huge(e["huge_kib_end"]) if "huge_kib_end" in e else "-", e.get("reason", "")))
    return "\n".join(md) + "\n"
