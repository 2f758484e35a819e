#!/usr/bin/env python3
"""src_figures.py: comments in src/ state rules, not benchmark results.

A figure measured on one commit goes stale with the next; a comment states
the rule and why, and the figures belong in the commit message and in
docs/BENCHMARKS.md (or docs/history/). This check reads every comment of
src/**/*.c and src/**/*.h (block and line comments; code, string and
character literals are skipped) and fails on a benchmark figure in one:

  row       a benchmark's name: a row of bench/benches.py (Bench("NAME", ...);
            "random_mixed_%d" also as random_mixed_4096) or a program of
            bench/ by its file's name (bench_mid, larson, cost_loop), except
            the names that are ordinary words (tiny, app, probe: ORDINARY
            below) and a path that cites the file (bench/copy_loop.c)
  ops       a number with ops/s or ops ("324k ops/s", "43M ops")
  size      a size that is a measurement, not a rule. Sizes that are rules
            are written in binary units (32 KiB, 2 MiB, 1 GiB) and pass.
            A size is a measurement when
              - its unit is decimal (kB, KB, MB, GB: the benchmarks report
                RSS in MB), or
              - its number has a decimal fraction (1.27 MiB), or
              - its line has a measurement word: RSS, peak, faster,
                slower, measured (not "not measured"), grew, or a
                before -> after pair
  ratio     a number with x or the sign for times right after it and no
            operand after that (0.93x, 3x slower, 1.4 followed by the sign);
            a product ("8 x 64", "4x4") and a hex literal (0x1f) are not
            ratios
  percent   a percentage with a word of speed or cost in its context:
            faster, slower, cost(s), took, spent, saved, lost, speed,
            slowdown, more, less, fewer, measured, of the time/run/cycles/
            instructions ("3% faster", "cost 2.3%"); a bound ("<= 12.5%
            above") passes
  arrow     a before -> after pair of numbers ("88 -> 75", "63M -> 43M")
  fraction  a number below one with a decimal point followed by "of the"
            with a speed or cost word in its context ("ran at 0.60 of the
            default's speed")
  instr     a count of instructions or simulated misses ("23 instructions
            each", "2 instructions less", "2.1 simulated L1 misses"): what
            callgrind says of one build
  rival     another allocator of bench/allocators.py (mimalloc, jemalloc,
            tcmalloc, glibc) compared: after under/over/than ("still
            under mimalloc's"), or followed by speed/RSS/memory or, within
            30 characters, by a number that is neither an issue's #N nor
            a size ("mimalloc 2448", "mimalloc's mi_heap_malloc 19")

A line's context, for percent and fraction, is the line and the
comment's line before it (a figure's cost word often wraps); the other
kinds look at the line alone. Comments only: code, string and character
literals are skipped.

Exit 0 and "src_figures: OK (N comment lines)" when none is found; 1 with
one line per figure ("file:line: kind: text") otherwise.

  --root DIR   check DIR/src (with DIR/bench for the row names)
  --plant      the self-test: on a copy of src/, one comment of each kind
               is appended to a file and each must be reported, and the
               rules planted beside them (a 2 MiB chunk, a figure inside a
               string literal, a hex literal, a bound) must not be; exit 0
               when all hold
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def find_root(start):
    d = start
    while d != os.path.dirname(d):
        if os.path.isdir(os.path.join(d, "src")) and os.path.isdir(os.path.join(d, "bench")):
            return d
        d = os.path.dirname(d)
    sys.exit("src_figures: no src/ and bench/ above %s (pass --root)" % start)


def comments(text):
    """Yield (line number, text) for each line of each comment of C text."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield line, text[i + 2:j]
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                yield line + k, part
            line += text.count("\n", i, j)
            i = j + 2
        elif c in "\"'":
            # a string or character literal: skip to its closing quote
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


ORDINARY = {"tiny", "app", "probe"}
NUM = r"(?<![\w.])\d+(?:[.,]\d+)*"
OPS = re.compile(NUM + r"\s?[kKMG]?\s?ops\b")
SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?(kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\b")
SIZE_WORDS = re.compile(r"\b(RSS|peak|faster|slower|(?<!not )measured|grew)\b|->")
RATIO = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(x|\u00d7)(?![\w\u00d7])(?!\s*\d)")
PERCENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?%")
PERCENT_WORDS = re.compile(
    r"\b(faster|slower|costs?|took|spent|saved|lost|speed|slowdown|speedup|more|less|fewer|measured)\b"
    r"|\bof the (time|run|cycles|instructions)\b")
PERCENT_WORDS_NOT = re.compile(r"\bnot measured\b")
INSTR = re.compile(NUM + r"\s?(?:simulated \w+ misses|(?:instructions?|instr\.|misses)\b)")
RIVAL = re.compile(r"\b(?:(under|over|than)\s+)?(mimalloc|jemalloc|tcmalloc|glibc)\b(?:'s)?"
                   r"([^#\d]{0,30}(?<![\w.])\d+(?:[.,]\d+)*(?!\.?\d|\s?[KMGT]i?B)|\s+(speed|RSS|memory)\b)?")
ARROW = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*\s?[kKMG]?\s*(->|\u2192)\s*\d")
FRACTION = re.compile(r"(?<![\w.])0\.\d+\s+of\s+the\b")
FRACTION_WORDS = re.compile(r"\b(speed|default's|time|ran|runs?|faster|slower|costs?)\b")


def row_names(root):
    names = set()
    with open(os.path.join(root, "bench", "benches.py"), encoding="utf-8") as f:
        for m in re.finditer(r'Bench\(\s*"([^"]+)"', f.read()):
            names.add(m.group(1))
    for f in os.listdir(os.path.join(root, "bench")):
        if f.endswith(".c"):
            names.add(f[:-2])
    names -= ORDINARY
    if not names:
        sys.exit("src_figures: no benchmark rows read from bench/ (the format moved: update this script)")
    # the row-name template "random_mixed_%d" is written "random_mixed_NNNN" in prose
    return re.compile(r"(?<![\w/])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True))
                      + r")(?:_\d+)?(?![\w])")


def figures(line, prev, rows):
    """The kinds of benchmark figure in one comment line (prev: the
    comment's line before it, for words that wrapped), with what matched."""
    ctx = prev + " " + line
    found = []
    m = rows.search(line)
    if m:
        found.append(("row", m.group(0)))
    m = OPS.search(line)
    if m:
        found.append(("ops", m.group(0)))
    for m in SIZE.finditer(line):
        if m.group(2) in ("kB", "KB", "MB", "GB", "TB") or "." in m.group(1) or SIZE_WORDS.search(line):
            found.append(("size", m.group(0)))
            break
    for m in RATIO.finditer(line):
        if m.group(1) == "0" and m.group(2) == "x":
            continue  # 0x: a hex prefix
        found.append(("ratio", m.group(0)))
        break
    m = PERCENT.search(line)
    if m and PERCENT_WORDS.search(PERCENT_WORDS_NOT.sub("", ctx)):
        found.append(("percent", m.group(0)))
    m = ARROW.search(line)
    if m:
        found.append(("arrow", m.group(0)))
    m = FRACTION.search(line)
    if m and FRACTION_WORDS.search(ctx):
        found.append(("fraction", m.group(0)))
    m = INSTR.search(line)
    if m:
        found.append(("instr", m.group(0)))
    for m in RIVAL.finditer(line):
        if m.group(1) or m.group(3):
            found.append(("rival", m.group(0)))
            break
    return found


def check(root, quiet=False):
    rows = row_names(root)
    src = os.path.join(root, "src")
    bad, nlines = [], 0
    for d, subdirs, files in os.walk(src):
        subdirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            rel = os.path.relpath(path, root)
            prev_ln, prev = -1, ""
            for ln, part in comments(text):
                nlines += 1
                ctx = prev if ln == prev_ln + 1 else ""
                prev_ln, prev = ln, part
                for kind, what in figures(part, ctx, rows):
                    bad.append("%s:%d: %s (%s): %s" % (rel, ln, kind, what, part.strip()))
    if not quiet:
        for b in bad:
            print(b)
        if bad:
            print("src_figures: %d benchmark figures in comments of src/: state the rule and why;"
                  " the figures go in the commit message and docs/BENCHMARKS.md" % len(bad))
        else:
            print("src_figures: OK (%d comment lines)" % nlines)
    return bad


# one comment per kind, each must be reported with that kind
PLANTS = [
    ("row", "/* planted: learner_phase showed it */"),
    ("row", "// planted: as bench_mid does"),
    ("ops", "/* planted: 324k ops/s with 8 shards */"),
    ("size", "/* planted: the peak was 1.27 MB over */"),
    ("size", "/* planted: RSS 64 MiB with the cache */"),
    ("ratio", "/* planted: 0.93\u00d7 of the default */"),
    ("ratio", "/* planted: 3x slower without it */"),
    ("percent", "/* planted: 3% faster */"),
    ("percent", "/* planted: it cost 2.3% */"),
    ("arrow", "/* planted: faults 33 -> 22 per run */"),
    ("fraction", "/* planted: it ran at 0.60 of the default's speed */"),
    ("rival", "/* planted: mimalloc 2448 */"),
    ("percent", "/* planted: switching at any size cost the python workload\n * 5%, so it does not */"),
    ("instr", "/* planted: 23 instructions each through the table */"),
    ("rival", "/* planted: RSS still under mimalloc's */"),
    ("row", "/* planted: as cost_loop and xthread show */"),
]
# rules and code beside them: none may be reported
CLEAN = [
    "/* planted rule: blocks over 32 KiB go to a span; a 2 MiB superslab; a 1 GiB arena */",
    "/* planted rule: classes stay <= 12.5% above 128 B; 0x1f masks; 8 x 64 KiB; 4x4 */",
    'static const char hk_planted_str[] = "learner_phase 3x faster at 1.27 MB /* 324k ops/s */";',
    "/* planted rule: tiny blocks, the app's heap and the probe; bench/copy_loop.c */",
    "/* planted rule: every 256 pushes; RSS grows, jemalloc #1127 */",
    "/* planted rule: a slab (2 MiB at most): not measured */",
    "/* planted rule: a 64 KiB chunk; glibc's memset (21 KiB) as tcmalloc's lists do */",
]


def plant(root):
    failed = False
    with tempfile.TemporaryDirectory(prefix="hakmem-src-figures.") as tmp:
        for d in ("src", "bench"):
            shutil.copytree(os.path.join(root, d), os.path.join(tmp, d), symlinks=True)
        target = os.path.join(tmp, "src", "base", "size_class.c")
        with open(target, encoding="utf-8") as f:
            base = f.read()
        first = base.count("\n") + (0 if base.endswith("\n") else 1) + 1
        body = "".join(text + "\n" for _, text in PLANTS) + "".join(text + "\n" for text in CLEAN)
        with open(target, "a", encoding="utf-8") as f:
            if not base.endswith("\n"):
                f.write("\n")
            f.write(body)
        bad = check(tmp, quiet=True)
        rel = os.path.relpath(target, tmp)
        # each plant is reported on its last line (where a wrapped figure lands)
        at = first - 1
        for kind, text in PLANTS:
            at += text.count("\n") + 1
            where = "%s:%d: %s " % (rel, at, kind)
            if any(b.startswith(where) for b in bad):
                print("src_figures --plant: caught %s: %s" % (kind, text.replace("\n", " ")))
            else:
                print("src_figures --plant: MISSED %s: %s" % (kind, text.replace("\n", " ")))
                failed = True
        for text in CLEAN:
            lines = range(at + 1, at + text.count("\n") + 2)
            at = lines[-1]
            hits = [b for b in bad if any(b.startswith("%s:%d:" % (rel, n)) for n in lines)]
            if hits:
                print("src_figures --plant: WRONGLY reported a rule: %s" % hits[0])
                failed = True
            else:
                print("src_figures --plant: passed a rule: %s" % text)
        # the unplanted tree's own findings are the plain check's business,
        # but a plant must not be the only thing that changed the verdict
        others = [b for b in bad if not b.startswith(rel + ":") or int(b.split(":")[1]) < first]
        if others:
            print("src_figures --plant: (the tree itself has %d findings: run src_figures.py)" % len(others))
    print("src_figures --plant: %s" % ("OK" if not failed else "FAILED"))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root")
    ap.add_argument("--plant", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root) if a.root else find_root(HERE)
    if a.plant:
        return plant(root)
    return 1 if check(root) else 0


if __name__ == "__main__":
    sys.exit(main())
