#!/usr/bin/env bash
# Tests for tools/hakmem-report.
#
#   tools/report_test.sh [--out DIR] [--screenshot PNG]
#
# 1. synthetic timeline (tools/testdata/synthetic.jsonl, regenerated from
#    gen_timeline.py and compared): the page parses with html.parser, has
#    the chart <svg> ids, no external resources or scripts, and shows numbers
#    taken from the data (pid, peaks, final per-class and OS counters);
# 2. edge cases: a one-line timeline, malformed/missing-key lines and two
#    processes in one file, an empty file and one of no records (exit 1, no
#    page), a text report after the timeline, "committed", stdin to stdout;
# 3. a real program's timeline: python3 run under LD_PRELOAD=libhakmem.so with
#    HAKMEM_STATS_INTERVAL/HAKMEM_STATS_FILE (SKIP if the library is not built
#    or writes no timeline); HAKMEM_LIB overrides the library path;
# 4. if chromium is installed (Debian package `chromium`; CHROMIUM overrides
#    the binary), each page is rendered headless to a PNG, which must decode
#    and not be blank, and must show the charts' colours. Otherwise prints
#    "SKIP chromium".
#
# Prints PASS/FAIL/SKIP lines; exits non-zero if anything failed. With
# --out DIR the pages, timelines and screenshots are kept in DIR; with
# --screenshot PNG the real program's screenshot (the synthetic one if the
# real case was skipped) is copied to PNG (docs/report-screenshot.png).
# Needs python3 (standard library only); chromium is optional.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
report="$here/hakmem-report"
data="$here/testdata"

out=""
screenshot=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --screenshot) screenshot="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set/{/^#/p}' "$0"; exit 0 ;;
    *) echo "usage: $0 [--out DIR] [--screenshot PNG]" >&2; exit 2 ;;
  esac
done
if [ -n "$out" ]; then
  mkdir -p "$out" && work=$(cd "$out" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-report-test.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
skip() { echo "SKIP $*"; }

# ---------------------------------------------------------------------------
# Checker (python3, standard library only)
cat > "$work/check.py" <<'PYEOF'
import html.parser, json, re, struct, sys, zlib

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "param", "source", "track", "wbr"}
SVG_SELF = True  # svg children may be self-closed (<line .../>)


class Checker(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.svg_ids, self.tags = [], [], [], {}
        self.external = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "svg" and a.get("id"):
            self.svg_ids.append(a["id"])
        for k, v in attrs:
            v = v or ""
            if k in ("src", "href", "xlink:href") and not v.startswith("#"):
                self.external.append("%s %s=%s" % (tag, k, v))
            if k == "style" and "url(" in v and "url(#" not in v:
                self.external.append("%s style=%s" % (tag, v))
            if k.startswith("on"):
                self.external.append("%s %s (event handler)" % (tag, k))
        if tag in ("script", "link", "iframe", "img", "object", "embed"):
            self.external.append("<%s>" % tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        # <x/>: counts as opened and closed
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unbalanced </%s> (open: %s)" % (tag, "/".join(self.stack[-4:])))
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
        else:
            self.stack.pop()


def fmt_bytes(v):
    units = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
             ("PiB", 1 << 50), ("EiB", 1 << 60)]
    name, scale = units[0]
    for u in units:
        if v >= u[1]:
            name, scale = u
    if scale == 1:
        return "%d B" % v
    x = v / scale
    return ("%.0f %s" if x >= 100 else "%.1f %s") % (x, name)


def main_run(path):
    """Snapshots of the process with the most snapshots (as the report orders them)."""
    by_pid, order = {}, []
    for line in open(path, encoding="utf-8", errors="replace"):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if not isinstance(o, dict):
            continue
        pid = o.get("pid")
        if pid not in by_pid:
            by_pid[pid] = []
            order.append(pid)
        by_pid[pid].append(o)
    if not order:
        return None, []
    pid = max(order, key=lambda p: (len(by_pid[p]), -order.index(p)))
    return pid, by_pid[pid]


def cmd_html(page, timeline, ids, extra):
    text = open(page, encoding="utf-8").read()
    c = Checker()
    c.feed(text)
    c.close()
    problems = []
    if c.errors:
        problems += c.errors[:5]
    if c.stack:
        problems.append("unclosed tags at end: %s" % "/".join(c.stack))
    if not text.lstrip().lower().startswith("<!doctype html>"):
        problems.append("no <!DOCTYPE html>")
    for i in ids:
        if i not in c.svg_ids:
            problems.append("no <svg id=%r>" % i)
    if c.external:
        problems.append("external resources/scripts: %s" % ", ".join(c.external[:5]))
    for m in re.findall(r"https?://[^\s'\"<>)]+", text):
        if not m.startswith("http://www.w3.org/"):
            problems.append("external URL %s" % m)
    expect = list(extra)
    if timeline:
        pid, snaps = main_run(timeline)
        if snaps:
            last = snaps[-1]
            if pid is not None:
                expect.append("pid %s" % pid)
            rss = [s.get("rss") for s in snaps if isinstance(s.get("rss"), (int, float))]
            if rss:
                expect.append(fmt_bytes(max(rss)))
            live = [s.get("live_bytes") for s in snaps if isinstance(s.get("live_bytes"), (int, float))]
            if live:
                expect.append(fmt_bytes(max(live)))
            for cl in last.get("classes") or []:
                if not isinstance(cl, dict):
                    continue
                for k in ("live_blocks", "allocs", "frees"):
                    v = cl.get(k)
                    if isinstance(v, int):
                        expect.append("<td>{:,}</td>".format(v))
            osd = last.get("os") or {}
            for k in ("mmap", "munmap", "madvise", "mremap"):
                if isinstance(osd.get(k), int):
                    expect.append("%s (%s)" % (k, "{:,}".format(osd[k])))
    missing = [e for e in expect if e not in text]
    if missing:
        problems.append("numbers/strings from the data not on the page: %s" % missing[:8])
    print("svg ids: %s; %d tags; %d bytes; %d expected strings found"
          % (", ".join(c.svg_ids), sum(c.tags.values()), len(text), len(expect) - len(missing)))
    for p in problems:
        print("  problem: %s" % p)
    return 0 if not problems else 1


def decode_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        typ, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            break
    if hdr is None:
        raise ValueError("no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (0, 2, 4, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)"
                         % (depth, ctype, interlace))
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((a + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def cmd_png(path, colours):
    """colours: name=RRGGBB:min -> at least min pixels within 10 of that colour."""
    try:
        w, h, bpp, rows = decode_png(path)
    except Exception as e:  # truncated or odd file: report, do not crash
        print("  problem: cannot decode %s: %s" % (path, e))
        return 1
    want = []
    for spec in colours:
        name, rest = spec.split("=")
        hexc, mn = rest.split(":")
        want.append((name, tuple(int(hexc[k:k + 2], 16) for k in (0, 2, 4)), int(mn)))
    nonwhite = 0
    distinct = set()
    hits = [0] * len(want)
    for row in rows:
        for x in range(0, w * bpp, bpp):
            if bpp >= 3:
                r, g, b = row[x], row[x + 1], row[x + 2]
            else:
                r = g = b = row[x]
            if r < 235 or g < 235 or b < 235:
                nonwhite += 1
            if len(distinct) < 5000:
                distinct.add((r, g, b))
            for k, (_, (cr, cg, cb), _) in enumerate(want):
                if abs(r - cr) <= 10 and abs(g - cg) <= 10 and abs(b - cb) <= 10:
                    hits[k] += 1
    frac = nonwhite / float(w * h)
    print("png %dx%d: %.1f%% non-white pixels, %s%d distinct colours; %s"
          % (w, h, 100 * frac, ">=" if len(distinct) >= 5000 else "", len(distinct),
             ", ".join("%s %d px" % (n, hits[k]) for k, (n, _, _) in enumerate(want))))
    bad = []
    if frac < 0.02:
        bad.append("page looks blank (%.2f%% non-white)" % (100 * frac))
    if len(distinct) < 16:
        bad.append("only %d distinct colours" % len(distinct))
    for k, (n, _, mn) in enumerate(want):
        if hits[k] < mn:
            bad.append("%s: %d px < %d" % (n, hits[k], mn))
    for b in bad:
        print("  problem: %s" % b)
    return 0 if not bad else 1


def cmd_lines(path, minimum):
    n = 0
    for line in open(path, encoding="utf-8", errors="replace"):
        try:
            if isinstance(json.loads(line), dict):
                n += 1
        except ValueError:
            pass
    print("%d JSON lines" % n)
    return 0 if n >= minimum else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "html":
        # html PAGE TIMELINE|- ID,ID,... [EXPECTED...]
        sys.exit(cmd_html(sys.argv[2], None if sys.argv[3] == "-" else sys.argv[3],
                          [i for i in sys.argv[4].split(",") if i], sys.argv[5:]))
    if cmd == "png":
        sys.exit(cmd_png(sys.argv[2], sys.argv[3:]))
    if cmd == "lines":
        sys.exit(cmd_lines(sys.argv[2], int(sys.argv[3])))
    sys.exit(2)
PYEOF

check() { python3 "$work/check.py" "$@"; }
IDS="chart-rss,chart-classes,chart-oscalls"
# colours the charts use (see PALETTE/HEAT_STOPS in hakmem-report)
RSS_RED="rss-line=d1495b"
LIVE_TEAL="live-line=00798c"
HEAT_DARK="heatmap=253494"
OS_YELLOW="madvise-line=edae49"

# ---------------------------------------------------------------------------
# 1. synthetic timeline
if python3 "$data/gen_timeline.py" > "$work/synthetic.jsonl" &&
   cmp -s "$work/synthetic.jsonl" "$data/synthetic.jsonl"; then
  pass "synthetic: gen_timeline.py reproduces testdata/synthetic.jsonl"
else
  fail "synthetic: gen_timeline.py output differs from testdata/synthetic.jsonl"
fi
if "$report" "$data/synthetic.jsonl" -o "$work/synthetic.html" 2> "$work/synthetic.err"; then
  if check html "$work/synthetic.html" "$data/synthetic.jsonl" "$IDS,chart-frag,chart-classes-area" \
       "pid 4242" "<td>343,483</td>" "53,477,376" "8 KiB" "Peak RSS"; then
    pass "synthetic: page well-formed, charts present, numbers from the data shown"
  else
    fail "synthetic: page checks"
  fi
  if [ -s "$work/synthetic.err" ] && grep -q warning "$work/synthetic.err"; then
    fail "synthetic: unexpected warnings: $(head -3 "$work/synthetic.err")"
  fi
else
  fail "synthetic: hakmem-report exited non-zero: $(cat "$work/synthetic.err")"
fi
# default output name: TIMELINE with .html suffix
cp "$data/synthetic.jsonl" "$work/default.jsonl"
if "$report" "$work/default.jsonl" 2>/dev/null && [ -s "$work/default.html" ]; then
  pass "default output: default.jsonl -> default.html"
else
  fail "default output: default.html not written"
fi

# ---------------------------------------------------------------------------
# 2. edge cases
if "$report" "$data/single.jsonl" -o "$work/single.html" 2> "$work/single.err" &&
   check html "$work/single.html" "$data/single.jsonl" "$IDS" "pid 777" "<td>45,678</td>"; then
  pass "single line: report written and checked"
else
  fail "single line: $(cat "$work/single.err")"
fi
if "$report" "$data/messy.jsonl" -o "$work/messy.html" 2> "$work/messy.err" &&
   check html "$work/messy.html" "$data/messy.jsonl" "$IDS,chart-rss-901,chart-classes-901,chart-oscalls-901" \
     "pid 900" "pid 901" "3 malformed lines skipped"; then
  if [ "$(grep -c 'skipping' "$work/messy.err")" = 3 ]; then
    pass "malformed lines, missing keys, two processes: report written, 3 warnings on stderr"
  else
    fail "malformed lines: expected 3 'skipping' warnings, got: $(cat "$work/messy.err")"
  fi
else
  fail "malformed lines: $(cat "$work/messy.err")"
fi
# nothing to report: exit 1, a message, no page (an empty page would look
# like a report of a program that allocated nothing)
: > "$work/empty.jsonl"
printf 'not json\n{"a": 1}\n[1]\n' > "$work/junk.jsonl"
for f in empty junk; do
  rm -f "$work/$f.html"
  "$report" "$work/$f.jsonl" -o "$work/$f.html" 2> "$work/$f.err"
  rc=$?
  if [ $rc = 1 ] && [ ! -e "$work/$f.html" ] && grep -q "$f.jsonl: no snapshots" "$work/$f.err"; then
    pass "$f timeline: exit 1, '$(tail -1 "$work/$f.err")', no page"
  else
    fail "$f timeline: exit $rc, page $([ -e "$work/$f.html" ] && echo written || echo none): $(cat "$work/$f.err")"
  fi
done
grep -q "junk.jsonl:2: skipping a JSON object with no hakmem statistics" "$work/junk.err" ||
  fail "junk timeline: the object that is no record was not named: $(cat "$work/junk.err")"
# the text exit report after the timeline (HAKMEM_STATS=1, a timeline file):
# skipped quietly; "committed" drawn instead of "mapped" when records have it
{ sed -n 1,3p "$data/synthetic.jsonl" |
    python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); r["committed"] = 3 << 20; r["mapped"] = 1 << 30; print(json.dumps(r))'
  printf 'hakmem 0.1.0 statistics (pid 4242)\n  config: profile balanced\n  live: 1 bytes\n'
} > "$work/mixed.jsonl"
if "$report" "$work/mixed.jsonl" -o "$work/mixed.html" 2> "$work/mixed.err" &&
   ! grep -q skipping "$work/mixed.err" &&
   grep -q "Peak committed</div><div class='v'>3.0 MiB" "$work/mixed.html" &&
   grep -q "committed by hakmem" "$work/mixed.html"; then
  pass "text report after the timeline skipped quietly; committed drawn, not the mapped arena"
else
  fail "mixed timeline: $(cat "$work/mixed.err")"
fi
if "$report" - < "$data/single.jsonl" > "$work/stdin.html" 2>/dev/null &&
   check html "$work/stdin.html" "$data/single.jsonl" "$IDS" >/dev/null; then
  pass "stdin: '-' reads stdin, page on stdout"
else
  fail "stdin: '-' reads stdin, page on stdout"
fi
if ! "$report" "$work/does-not-exist.jsonl" 2>/dev/null; then
  pass "missing input file: non-zero exit"
else
  fail "missing input file: exit status 0"
fi

# ---------------------------------------------------------------------------
# 3. a real program's timeline
lib="${HAKMEM_LIB:-$root/build/libhakmem.so}"
real=""
if [ ! -f "$lib" ]; then
  skip "real program: $lib not built (run make)"
else
  rm -f "$work/real.jsonl"
  # The interpreter itself (not a wrapper such as a pyenv shim, whose helper
  # processes would write to the timeline too), with PYTHONMALLOC=malloc so
  # every object is a malloc() call. Allocation-heavy: many small objects,
  # then a phase change to 1-30 KiB buffers and large ones, then free
  # everything and idle a little so the purge shows.
  py=$(python3 -c 'import sys; print(sys.executable)')
  timeout 120 env HAKMEM_STATS_INTERVAL=20 HAKMEM_STATS_FILE="$work/real.jsonl" \
    HAKMEM_PURGE_DELAY_MS=100 PYTHONMALLOC=malloc LD_PRELOAD="$lib" \
    "$py" - <<'PYEOF' > "$work/real.out" 2>&1
import time, random
rng = random.Random(1)
keep = []
t0 = time.time()
# phase 1: many small objects
for i in range(300000):
    keep.append(("x" * rng.randrange(1, 100), i))
    if i % 50000 == 0:
        time.sleep(0.02)
time.sleep(0.05)
# phase 2: drop most small objects, move to 1-30 KiB buffers and a few large ones
del keep[::2]
del keep[: len(keep) * 3 // 4]
bufs = [bytearray(rng.randrange(1024, 30000)) for _ in range(6000)]
time.sleep(0.05)
big = [bytearray(1 << 22) for _ in range(8)]
time.sleep(0.1)
# phase 3: free everything, then stay a little busy (slow paths run the
# purge) past the purge delay
keep = bufs = big = None
import gc; gc.collect()
end = time.time() + 0.6
while time.time() < end:
    junk = [bytearray(rng.randrange(16, 40000)) for _ in range(20)]
    junk = None
    time.sleep(0.005)
print("done in %.2f s" % (time.time() - t0))
PYEOF
  rc=$?
  if [ $rc -ne 0 ]; then
    fail "real program: python3 under LD_PRELOAD=$lib exited $rc: $(tail -3 "$work/real.out")"
  elif [ ! -s "$work/real.jsonl" ]; then
    skip "real program: $lib wrote no timeline (HAKMEM_STATS_INTERVAL not supported yet?)"
  elif ! check lines "$work/real.jsonl" 2 >/dev/null; then
    fail "real program: timeline has fewer than 2 JSON lines"
  elif "$report" "$work/real.jsonl" -o "$work/real.html" 2> "$work/real.err" &&
       check html "$work/real.html" "$work/real.jsonl" "$IDS"; then
    pass "real program: $(check lines "$work/real.jsonl" 0) -> report checked"
    real=1
  else
    fail "real program: report: $(cat "$work/real.err" 2>/dev/null | head -5)"
  fi
fi

# ---------------------------------------------------------------------------
# 4. headless chromium
chromium="${CHROMIUM:-}"
if [ -z "$chromium" ]; then
  for c in chromium chromium-browser; do
    if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
  done
fi
shoot() {  # shoot PAGE PNG
  local prof
  prof=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-report-chromium.XXXXXX")
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$prof" --screenshot="$2" --window-size=1200,2400 \
    "file://$1" > "$2.log" 2>&1
  local rc=$?
  rm -rf "$prof"
  return $rc
}
if [ -n "$chromium" ] && ! command -v "$chromium" >/dev/null 2>&1; then
  skip "chromium ($chromium not found)"
elif [ -z "$chromium" ]; then
  skip "chromium (not installed: apt-get install chromium)"
else
  pages="synthetic single messy"
  [ -n "$real" ] && pages="$pages real"
  for p in $pages; do
    rm -f "$work/$p.png"
    if ! shoot "$work/$p.html" "$work/$p.png" || [ ! -s "$work/$p.png" ]; then
      fail "chromium $p: no screenshot ($(tail -2 "$work/$p.png.log"))"
      continue
    fi
    case $p in
      synthetic) colours="$RSS_RED:400 $LIVE_TEAL:400 $HEAT_DARK:3000 $OS_YELLOW:300" ;;
      real) colours="$RSS_RED:200 $LIVE_TEAL:200" ;;
      *) colours="$RSS_RED:40 $LIVE_TEAL:40" ;;
    esac
    # shellcheck disable=SC2086
    if check png "$work/$p.png" $colours; then
      pass "chromium $p: rendered $(stat -c %s "$work/$p.png") byte PNG, not blank, charts drawn"
    else
      fail "chromium $p: screenshot checks"
    fi
  done
fi

if [ -n "$screenshot" ]; then
  src="$work/synthetic.png"
  [ -n "$real" ] && [ -s "$work/real.png" ] && src="$work/real.png"
  if [ -s "$src" ] && cp "$src" "$screenshot"; then
    echo "screenshot $(basename "$src") -> $screenshot ($(stat -c %s "$screenshot") bytes)"
  else
    fail "--screenshot: no screenshot to copy (chromium missing?)"
  fi
fi
if [ -n "$out" ]; then echo "outputs kept in $work"; fi
if [ $fails -ne 0 ]; then
  echo "FAIL report_test: $fails failure(s)"
  exit 1
fi
echo "PASS report_test"
