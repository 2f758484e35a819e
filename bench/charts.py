"""The charts of a run's results, SVG drawn by hand (no plotting library):
STEM.svg (each allocator's throughput ratio to mimalloc, or glibc, per row)
and STEM-verdicts.svg (hakmem ÷ best peer with its 95% interval per row).
"""

import html
import math

import verdict
from render import fail_word, skip_text


VERDICT_COLOURS = {"ahead": "#2ca02c", "tie": "#7f7f7f", "behind": "#d62728", "FAIL": "#8b0000",
                   "n/a": "#bbbbbb"}


def _log2_xpos(lo, hi, left, width):
    """x of a ratio on a log2 axis from 2**lo to 2**hi drawn over
    [left, left + width]; ratios outside are drawn at the ends."""
    def xpos(r):
        v = max(lo, min(hi, math.log2(r))) if r and r > 0 else lo
        return left + (v - lo) / (hi - lo) * width
    return xpos


def _svg_head(W, height, left, title, subtitle):
    """The opening lines of a chart: the svg element, a white background,
    a bold title and a grey subtitle (both already escaped)."""
    return ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
            'font-size="11">' % (W, height),
            '<rect width="100%" height="100%" fill="white"/>',
            '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>' % (left, title),
            '<text x="%d" y="36" fill="#555">%s</text>' % (left, subtitle)]


def verdicts_svg(res):
    """hakmem ÷ best peer (throughput) per row: a dot at the ratio of
    medians, the 95% bootstrap interval as an error bar, a line at 1, log2
    scale; coloured by verdict (ahead green, tie grey, behind red)."""
    rows = [b for b in res.get("benchmarks", []) if b.get("verdicts") or b.get("skipped")]
    row_h, left, width, top = 22, 170, 520, 62
    # log2 axis: at least 1/4x .. 4x, widened to whole powers of two so that
    # every ratio and interval end is drawn (a 0.057x row is not clipped)
    vals = [x for b in rows for v in [(b.get("verdicts") or {}).get("throughput") or {}]
            for x in [v.get("ratio")] + list(v.get("ci") or []) if x and x > 0]
    lo = min([-2.0] + [math.floor(math.log2(x)) for x in vals])
    hi = max([2.0] + [math.ceil(math.log2(x)) for x in vals])
    height = top + row_h * max(1, len(rows)) + 64
    W = left + width + 230
    xpos = _log2_xpos(lo, hi, left, width)
    o = _svg_head(W, height, left,
                  "hakmem ÷ best peer, throughput (median of runs, log scale; right = hakmem faster)",
                  "%s, %s mode, %s runs each, %s; bars: 95%% bootstrap interval" % (
                      html.escape(str(res.get("date"))), res.get("mode"), res.get("runs"),
                      html.escape(res.get("machine", {}).get("cpu", ""))))
    for t in [2.0 ** e for e in range(int(lo), int(hi) + 1)]:
        x = xpos(t)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>' % (
            x, top - 8, x, height - 45, "#000" if t == 1 else "#ddd", "1.2" if t == 1 else "1"))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>' % (x, height - 32, t))
    y = top
    for b in rows:
        cy = y + row_h // 2
        o.append('<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>' % (
            left - 10, cy + 4, html.escape(b["name"])))
        v = (b.get("verdicts") or {}).get("throughput")
        if not v:
            o.append('<text x="%.1f" y="%d" fill="#999">skipped: %s</text>' % (
                left + 4, cy + 4, html.escape(skip_text(b).replace("`", ""))))
            y += row_h
            continue
        col = VERDICT_COLOURS.get(v["verdict"], "#333")
        if v["verdict"] == "FAIL" or v.get("ratio") is None:
            o.append('<text x="%.1f" y="%d" fill="%s">%s</text>' % (
                xpos(1) + 6, cy + 4, col, html.escape(verdict.verdict_text(v))))
            y += row_h
            continue
        x = xpos(v["ratio"])
        if v.get("ci"):
            xl, xh = xpos(v["ci"][0]), xpos(v["ci"][1])
            o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>' % (
                xl, cy, xh, cy, col))
            for xx in (xl, xh):
                o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>' % (
                    xx, cy - 5, xx, cy + 5, col))
        o.append('<circle cx="%.1f" cy="%d" r="4" fill="%s"><title>%s: hakmem ÷ %s = %.3f%s (%s)</title>'
                 '</circle>' % (x, cy, col, html.escape(b["name"]), html.escape(v.get("peer") or "?"),
                                v["ratio"], " [%.3f, %.3f]" % tuple(v["ci"]) if v.get("ci") else "",
                                html.escape(verdict.verdict_text(v))))
        o.append('<text x="%d" y="%d" fill="%s">%.2f vs %s: %s</text>' % (
            left + width + 12, cy + 4, col, v["ratio"], html.escape(v.get("peer") or "?"),
            html.escape(verdict.verdict_text(v))))
        y += row_h
    lx = left
    for w in ("ahead", "tie", "behind", "FAIL", "n/a"):
        o.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (lx, height - 12, VERDICT_COLOURS[w]))
        o.append('<text x="%d" y="%d">%s</text>' % (lx + 8, height - 8, w))
        lx += 70
    o.append("</svg>")
    return "\n".join(o) + "\n"


PALETTE = {"hakmem": "#d62728", "hakmem-static": "#ff7f0e", "glibc": "#7f7f7f", "mimalloc": "#1f77b4",
           "jemalloc": "#2ca02c", "tcmalloc": "#9467bd", "hakmem:fast": "#e377c2", "hakmem:lowmem": "#8c564b",
           "hakmem:learn": "#bcbd22", "hakmem-secure": "#17becf"}


EXTRA_COLOURS = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"]


def colour(label):
    """A label's colour: the palette's, else one of EXTRA_COLOURS picked by
    the label's characters (stable from run to run)."""
    return PALETTE.get(label) or EXTRA_COLOURS[sum(map(ord, label)) % len(EXTRA_COLOURS)]


def svg_chart(res):
    """Horizontal bars of the throughput ratio to mimalloc (or glibc when
    mimalloc is missing), log2 scale centred on 1.0."""
    labels = [a["label"] for a in res["allocators"]]
    key, ref = ("ratio_mimalloc", "mimalloc") if "mimalloc" in labels else ("ratio_glibc", "glibc")
    if ref not in labels and any(a.get("base") for a in res["allocators"]):
        key, ref = "ratio_base", "default hakmem"
    benches = res["benchmarks"]
    bar_h, gap, left, width, top = 11, 10, 180, 560, 60
    lo, hi = -3.0, 3.0  # log2 range: 1/8x .. 8x
    group_h = bar_h * len(labels) + gap
    height = top + group_h * len(benches) + 60
    W = left + width + 170
    xpos = _log2_xpos(lo, hi, left, width)
    o = _svg_head(W, height, left,
                  "Throughput relative to %s (median of runs, log scale; right = faster)" % ref,
                  "%s, %s mode, %s" % (html.escape(res["date"]), res["mode"],
                                       html.escape(res["machine"].get("cpu", ""))))
    for t in (0.125, 0.25, 0.5, 1, 2, 4, 8):
        x = xpos(t)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>' % (
            x, top - 8, x, height - 45, "#000" if t == 1 else "#ddd", "1.2" if t == 1 else "1"))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>' % (x, height - 32, t))
    y = top
    x1 = xpos(1)
    for b in benches:
        o.append('<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>' % (
            left - 34, y + group_h // 2, html.escape(b["name"])))
        for i, l in enumerate(labels):
            r = b["results"].get(l)
            yy = y + i * bar_h
            if not r:
                continue
            if r["status"] != "ok":
                o.append('<text x="%.1f" y="%d" fill="#d00" font-size="9">%s %s</text>' % (
                    x1 + 4, yy + bar_h - 2, html.escape(l), fail_word(r)))
                continue
            v = r.get(key)
            if v is None:
                continue
            x = xpos(v)
            o.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %.3fx</title></rect>' % (
                min(x, x1), yy, max(abs(x - x1), 1), bar_h - 2, colour(l),
                html.escape(b["name"]), html.escape(l), v))
            if v < 2 ** lo:   # clipped on the left: write the value inside the bar
                o.append('<text x="%.1f" y="%d" font-size="9" fill="white" text-anchor="end">%.2f &lt;</text>' % (
                    x1 - 3, yy + bar_h - 3, v))
            else:
                o.append('<text x="%.1f" y="%d" font-size="9" fill="#333" text-anchor="%s">%.2f%s</text>' % (
                    (x + 3) if x >= x1 else (x - 3), yy + bar_h - 3, "start" if x >= x1 else "end", v,
                    " &gt;" if v > 2 ** hi else ""))
        y += group_h
    ly = top
    for l in labels:
        o.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>' % (left + width + 30, ly,
                                                                             colour(l)))
        o.append('<text x="%d" y="%d">%s</text>' % (left + width + 48, ly + 9, html.escape(l)))
        ly += 16
    o.append("</svg>")
    return "\n".join(o) + "\n"


def rss_series_rows(res):
    """The rows whose runs kept their `rss T_MS KIB` samples (memory over
    time: idle_*, waves, lru), in the document's order."""
    return [b for b in res.get("benchmarks", []) for r in [b.get("results") or {}]
            if any(run.get("rss_series") for s in r.values() for run in (s.get("runs") or []))]


def rss_series_svg(res):
    """RSS over time: one panel per row that kept its samples, one line per
    allocator (its first accepted run), time in seconds across, RSS in MiB
    up (from 0). None when no row kept samples."""
    rows = rss_series_rows(res)
    if not rows:
        return None
    labels = [a["label"] for a in res["allocators"]]
    left, pw, ph, top, gap = 70, 620, 170, 50, 56
    W = left + pw + 170
    height = top + (ph + gap) * len(rows) + 10
    o = _svg_head(W, height, left, "RSS over time (first accepted run of each allocator)",
                  "%s, %s mode, %s" % (html.escape(str(res.get("date"))), res.get("mode"),
                                       html.escape(res.get("machine", {}).get("cpu", ""))))
    y0 = top
    for b in rows:
        lines = {}
        for l in labels:
            s = (b.get("results") or {}).get(l)
            run = next((r for r in (s or {}).get("runs") or [] if r.get("status") == "ok" and r.get("rss_series")),
                       None)
            if run:
                lines[l] = run["rss_series"]
        tmax = max([p[0] for pts in lines.values() for p in pts] + [1])
        kmax = max([p[1] for pts in lines.values() for p in pts] + [1024])
        mib_top = _nice_ceiling(kmax / 1024.0)

        def X(t):
            return left + t / float(tmax) * pw

        def Y(k):
            return y0 + 18 + ph - (k / 1024.0) / mib_top * ph
        o.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (left, y0 + 10, html.escape(b["name"])))
        for i in range(5):
            v = mib_top * i / 4
            yy = Y(v * 1024)
            o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, yy, left + pw, yy))
            o.append('<text x="%d" y="%.1f" text-anchor="end" fill="#555">%g MiB</text>' % (left - 6, yy + 4, v))
        for i in range(6):
            t = tmax * i / 5
            o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.1f s</text>' % (
                X(t), y0 + 18 + ph + 14, t / 1000.0))
        for l, pts in lines.items():
            o.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s %s</title>'
                     '</polyline>' % (colour(l), " ".join("%.1f,%.1f" % (X(t), Y(k)) for t, k in pts),
                                     html.escape(b["name"]), html.escape(l)))
        y0 += ph + gap
    ly = top
    for l in labels:
        o.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>' % (left + pw + 30, ly, colour(l)))
        o.append('<text x="%d" y="%d">%s</text>' % (left + pw + 48, ly + 9, html.escape(l)))
        ly += 16
    o.append("</svg>")
    return "\n".join(o) + "\n"


def _nice_ceiling(x):
    """The smallest of 1, 2, 2.5, 5 x 10^k at least x (an axis' top)."""
    k = 10 ** math.floor(math.log10(max(x, 1e-9)))
    for m in (1, 2, 2.5, 5, 10):
        if m * k >= x:
            return m * k
    return 10 * k
