"""Where a run's results go: the results document (STEM.json) and what is
drawn from it beside it (STEM.md, STEM.svg, STEM-table.md,
STEM-verdicts.svg; --render redraws them), the soak's files, and --publish:
the compact table and its chart between the bench-table markers of the docs
(docs/BENCHMARKS.md), its five-line summary between the bench-summary
markers (README.md).
"""

import json
import os
import sys
from pathlib import Path

import settings
from charts import rss_series_svg, svg_chart, verdicts_svg
from render import compact_summary, compact_table, markdown, soak_markdown
from stats import add_build_comparisons, add_verdicts, rejudge


def load(jpath):
    """A results file as the reports draw it: rows judged again (rejudge),
    verdicts and build comparisons computed from its runs."""
    return add_build_comparisons(add_verdicts(rejudge(json.loads(Path(jpath).read_text()))))


def write_reports(res, stem):
    """A run's STEM.json in the results directory and its drawings beside it;
    returns the paths of the .json, .md and .svg."""
    settings.RESULTS.mkdir(parents=True, exist_ok=True)
    jpath, mpath, spath = (settings.RESULTS / (stem + ext) for ext in (".json", ".md", ".svg"))
    jpath.write_text(json.dumps(res, indent=1, sort_keys=False) + "\n")
    write_rendered(res, jpath)
    return jpath, mpath, spath


def write_rendered(res, jpath):
    """Everything drawn from a results .json, beside it: STEM.md (the report),
    STEM.svg (ratio chart), STEM-table.md (the compact verdicts table that the
    docs include), STEM-verdicts.svg (hakmem ÷ best peer with intervals) and,
    when some row kept its RSS samples, STEM-rss.svg (RSS over time)."""
    jpath = Path(jpath)
    stem = jpath.name[:-len(".json")] if jpath.name.endswith(".json") else jpath.stem
    d = jpath.parent
    out = [d / (stem + ".md"), d / (stem + ".svg"), d / (stem + "-table.md"), d / (stem + "-verdicts.svg")]
    # STEM-rss.svg: RSS over time, when some row kept its samples
    rss = rss_series_svg(res)
    if rss:
        out.append(d / (stem + "-rss.svg"))
        out[4].write_text(rss, encoding="utf-8")
    out[0].write_text(markdown(res, out[1].name, out[4].name if rss else None))
    out[1].write_text(svg_chart(res))
    out[2].write_text("\n".join(compact_table(res, source=jpath.name)) + "\n", encoding="utf-8")
    out[3].write_text(verdicts_svg(res), encoding="utf-8")
    return out


def write_soak(res, stem):
    """A soak's STEM.json and STEM.md; returns the .json's path."""
    settings.RESULTS.mkdir(parents=True, exist_ok=True)
    jpath = settings.RESULTS / (stem + ".json")
    jpath.write_text(json.dumps(res, indent=1) + "\n")
    (settings.RESULTS / (stem + ".md")).write_text(soak_markdown(res))
    return jpath


# --publish: the docs' generated table lives between these markers, its
# summary between the second pair; a target has either pair or both
MARK_BEGIN, MARK_END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
SUM_BEGIN, SUM_END = "<!-- bench-summary:begin -->", "<!-- bench-summary:end -->"
PUBLISH_TO = [settings.ROOT / "docs" / "BENCHMARKS.md", settings.ROOT / "README.md"]
PUBLISH_SVG = settings.ROOT / "docs" / "bench-latest.svg"


def _pair(text, begin, end):
    """'ok' when text has one begin line and, after it, one end line;
    'none' when it has neither; else what it has, in words."""
    nb, ne = text.count(begin), text.count(end)
    if nb == 0 and ne == 0:
        return "none"
    if nb == 1 and ne == 1 and text.index(begin) < text.index(end):
        return "ok"
    return "found %d %s and %d %s" % (nb, begin, ne, end)


def _replace(text, begin, end, block, nl):
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + nl + nl.join(block) + nl + end + tail


def publish(jpath, targets, svg_path):
    """Rewrites the text between MARK_BEGIN and MARK_END of each target with
    the compact table of a results file and a link to its verdicts chart
    (written to svg_path), and the text between SUM_BEGIN and SUM_END with
    its five-line summary. Every target is checked before any is written:
    each pair it has is one begin line, then one end line, and it has at
    least one pair, or nothing is written (exit 2). Bytes outside the
    markers are kept exactly (line endings included)."""
    try:
        res = load(jpath)
    except (OSError, ValueError) as e:
        print("--publish: cannot read %s: %s" % (jpath, e), file=sys.stderr)
        return 2
    texts, bad = {}, []
    for t in targets:
        try:
            with open(t, newline="", encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            bad.append("%s: %s" % (t, e))
            continue
        table, summary = _pair(text, MARK_BEGIN, MARK_END), _pair(text, SUM_BEGIN, SUM_END)
        if (table, summary) == ("none", "none") or "found" in table + summary:
            bad.append("%s: needs one %s line and, after it, one %s line, or the pair %s %s (%s)" % (
                t, MARK_BEGIN, MARK_END, SUM_BEGIN, SUM_END, "; ".join(
                    w for w in (table, summary) if w.startswith("found")) or "found neither"))
            continue
        texts[t] = (text, table == "ok", summary == "ok")
    if bad:
        print("--publish: nothing written:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 2
    svg_path = Path(svg_path)
    svg_path.parent.mkdir(parents=True, exist_ok=True)
    svg_path.write_text(verdicts_svg(res), encoding="utf-8")
    gen = "<!-- generated by `python3 bench/harness.py --publish %s`: edit the results, not this -->" % (
        settings.rel(jpath.resolve()))
    for t, (text, table, summary) in texts.items():
        nl = "\r\n" if "\r\n" in text else "\n"
        if table:
            link = os.path.relpath(svg_path.resolve(), Path(t).resolve().parent)
            block = [gen] + compact_table(res, source=jpath.name) + \
                ["", "![hakmem ÷ best peer, throughput, with 95%% intervals](%s)" % link.replace(os.sep, "/")]
            text = _replace(text, MARK_BEGIN, MARK_END, block, nl)
        if summary:
            text = _replace(text, SUM_BEGIN, SUM_END, [gen] + compact_summary(res), nl)
        with open(t, "w", newline="", encoding="utf-8") as f:
            f.write(text)
        print("published %s into %s (%s)" % (settings.rel(jpath.resolve()), t, " and ".join(
            w for w, on in (("table", table), ("summary", summary)) if on)))
    print("wrote %s" % svg_path)
    return 0
