#!/usr/bin/env python3
"""layers.py: every dependency between the files of src/ must point down.

docs/ARCHITECTURE.md gives each file of src/ a rank, in the table between
`<!-- layer-ranks` and `<!-- /layer-ranks -->` (the only copy of the ranks).
A file may depend on files of a lower rank, and x.c on its own x.h; anything
else (upward, or sideways within a rank) is a violation. There is no
allow-list: a dependency that must stay means the table changes.

Dependencies are of two kinds:
  include  every `#include "..."` line of every file, #ifdef'd ones too
           (read as text: a configuration that is rarely built counts)
  symbol   compiled with the project's flags under each configuration,
           an undefined symbol of A.o that B.o defines is an edge A.c -> B.c

The folders of src/ are bands of ranks, listed in order on the doc's
`<!-- layer-folders: base pal ... -->` line: every file lives in one of
them, and every dependency stays in its folder or goes to an earlier one
(a FOLDER line otherwise). With --includes-only no file is compiled: the
include edges alone, a check quick enough for `make check`.

Exit 0 and `layers: OK (N files, M edges)` when the tree follows the table;
exit 1 on any violation, table error or file that does not compile.
"""
import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

FLAGS = ("-std=gnu11 -O2 -fPIC -fvisibility=hidden -ftls-model=initial-exec "
         "-fno-plt -fexceptions -fno-builtin-malloc -fno-builtin-free "
         "-fno-builtin-calloc -fno-builtin-realloc").split()
CONFIGS = {
    "default": ["-DNDEBUG"],
    "secure": ["-DNDEBUG", "-DHK_SECURE"],
    "debug": ["-DHK_DEBUG=1"],
    "valgrind": ["-DNDEBUG", "-DHK_VALGRIND"],
}
# each hardening measure alone, as BUILD/measures/ has them (the names: the
# X(name, HK_M_...) entries of src/base/measures.h's list)
_MEASURES_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "base", "measures.h")
for _m in re.findall(r"X\(([a-z]+), HK_M_", open(_MEASURES_H, encoding="utf-8").read()):
    CONFIGS["m-" + _m] = ["-DNDEBUG", "-DHK_M_%s=1" % _m.upper()]
DEFINED = set("TDBRVWGSCui")   # nm types of a global defined symbol
UNDEFINED = set("Uwv")         # and of an undefined one (weak or not)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

errors = 0
out = sys.stdout               # --dot moves the report to stderr


def say(msg):
    print("layers: " + msg, file=out)


def error(msg):
    global errors
    errors += 1
    say(msg)


def rel(path, src):
    return os.path.relpath(path, src)


def read_table(doc, src):
    """{absolute path: (rank, name as written)} from the table of doc."""
    try:
        lines = open(doc, encoding="utf-8").read().splitlines()
    except OSError as e:
        error("cannot read %s: %s" % (doc, e.strerror))
        return {}
    start = [i for i, l in enumerate(lines) if l.startswith("<!-- layer-ranks")]
    end = [i for i, l in enumerate(lines) if l.startswith("<!-- /layer-ranks")]
    if len(start) != 1 or len(end) != 1 or end[0] < start[0]:
        error("%s: no single <!-- layer-ranks --> ... "
              "<!-- /layer-ranks --> block" % doc)
        return {}
    ranks, seen = {}, {}
    for n in range(start[0] + 1, end[0]):
        cells = [c.strip() for c in lines[n].strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] == "rank" or set(cells[0]) <= set("-:"):
            continue           # blank line, header or separator row
        if not cells[0].isdigit():
            error("%s:%d: rank %r is not a number" % (doc, n + 1, cells[0]))
            continue
        for name in re.findall(r"`([^`]+)`", cells[2]):
            path = os.path.normpath(os.path.join(src, name))
            seen[path] = seen.get(path, 0) + 1
            ranks[path] = (int(cells[0]), name)
    for path, count in seen.items():
        if count > 1:
            error("%s is named %d times in the table" % (ranks[path][1], count))
        if not os.path.isfile(path):
            error("%s is in the table but does not exist" % ranks[path][1])
    return ranks


def read_folders(doc):
    """The folders of src/ in their order, from the doc's layer-folders line."""
    try:
        text = open(doc, encoding="utf-8").read()
    except OSError:
        return []              # read_table has said so
    m = re.findall(r"^<!-- layer-folders:([^>]*)-->", text, re.M)
    if len(m) != 1:
        error("%s: no single <!-- layer-folders: ... --> line" % doc)
        return []
    return m[0].split()


def include_edges(files, src, include_dir):
    """{(A, B): [line numbers]}: the quoted includes, searched where cc
    searches them (the file's own folder, then -Iinclude, then -Isrc)."""
    edges = {}
    for a in files:
        text = open(a, encoding="utf-8", errors="replace").read()
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            for d in (os.path.dirname(a), include_dir, src):
                b = os.path.normpath(os.path.join(d, m.group(1)))
                if os.path.isfile(b):
                    break
            else:
                error('%s:%d: include "%s" is not a file' %
                      (rel(a, src), n, m.group(1)))
                continue
            if b != a:
                edges.setdefault((a, b), []).append(n)
    return edges


def compile_one(cc, cflags, c_file, obj):
    """Compile and nm one file: (defined, undefined) symbol sets, or the
    compiler's complaint as a string."""
    p = subprocess.run(cc + FLAGS + cflags + ["-c", c_file, "-o", obj],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr.strip() or "exit status %d" % p.returncode
    p = subprocess.run(["nm", "-P", obj], capture_output=True, text=True)
    if p.returncode != 0:
        return "nm: " + p.stderr.strip()
    defined, undefined = set(), set()
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 2 and f[1] in DEFINED:
            defined.add(f[0])
        elif len(f) >= 2 and f[1] in UNDEFINED:
            undefined.add(f[0])
    return defined, undefined


def symbol_edges(cc, configs, c_files, root):
    """{config: {(A.c, B.c): set of symbols}}; all compiles run at once."""
    jobs, result = {}, {}
    with tempfile.TemporaryDirectory(prefix="hakmem-layers.") as tmp, \
            ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for c in sorted(c_files, key=os.path.getsize, reverse=True):
            for cfg in configs:
                obj = os.path.join(tmp, cfg + "." + os.path.basename(c) + ".o")
                flags = ["-I" + os.path.join(root, "include"),
                         "-I" + os.path.join(root, "src")] + CONFIGS[cfg]
                jobs[cfg, c] = pool.submit(compile_one, cc, flags, c, obj)
        broken = {}            # (file, first error line): [configs]
        for cfg in configs:
            syms, definer = {}, {}
            for c in c_files:
                r = jobs[cfg, c].result()
                if isinstance(r, str):
                    lines = r.splitlines()
                    first = ([l for l in lines if "error" in l] + lines)[0]
                    first = first.replace(os.path.dirname(c) + os.sep, "")
                    broken.setdefault((c, first), []).append(cfg)
                    continue
                syms[c] = r
                for s in r[0]:
                    definer.setdefault(s, []).append(c)
            edges = {}
            for a, (_, undefined) in syms.items():
                for s in undefined:
                    for b in definer.get(s, []):    # nowhere: libc, ignored
                        if b != a:
                            edges.setdefault((a, b), set()).add(s)
            result[cfg] = edges
    # an object we do not have hides its edges: that is a failure too
    for (c, first), cfgs in sorted(broken.items()):
        error("%s does not compile [%s]: %s" %
              (os.path.basename(c), ",".join(cfgs), first))
    return result


def have_valgrind_header(cc):
    p = subprocess.run(cc + ["-E", "-x", "c", "-", "-o", os.devnull],
                       input="#include <valgrind/valgrind.h>\n",
                       capture_output=True, text=True)
    return p.returncode == 0


def main():
    global out
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(here, "..", "..", "src"))
    ap.add_argument("--doc", default=None,
                    help="default: docs/ARCHITECTURE.md next to --src")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--includes-only", action="store_true",
                    help="compile nothing: the include edges only")
    ap.add_argument("--dot", action="store_true",
                    help="print the graph in graphviz dot on stdout")
    args = ap.parse_args()
    if args.dot:
        out = sys.stderr
    src = os.path.abspath(args.src)
    root = os.path.dirname(src)
    doc = args.doc or os.path.join(root, "docs", "ARCHITECTURE.md")
    cc = shlex.split(os.environ.get("CC") or "cc")
    configs = [c for c in args.configs.split(",") if c]
    if args.includes_only:
        configs = []
    for c in configs:
        if c not in CONFIGS:
            ap.error("unknown configuration %r (known: %s)" %
                     (c, ",".join(CONFIGS)))
    if "valgrind" in configs and not args.includes_only and not have_valgrind_header(cc):
        say("note: <valgrind/valgrind.h> not installed, valgrind configuration "
            "skipped")
        configs.remove("valgrind")

    # rule 1: the table and src/ name the same files, each once
    ranks = read_table(doc, src)
    if not ranks:              # no table: every file would be "not in it"
        say("FAILED (no table of ranks)")
        return 1
    src_files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src)
                       for f in fs if f.endswith((".c", ".h")))
    for f in src_files:
        if f not in ranks:
            error("%s is in src/ but not in the table of %s" %
                  (rel(f, src), os.path.basename(doc)))
    files = sorted(set(src_files) | {f for f in ranks if os.path.isfile(f)})
    c_files = [f for f in src_files if f.endswith(".c")]

    # rule 2: the edges
    inc = include_edges(files, src, os.path.join(root, "include"))
    say("includes: %d edges" % len(inc))
    sym = symbol_edges(cc, configs, c_files, root)
    for cfg in configs:
        say("%s: %d symbol edges" % (cfg, len(sym[cfg])))

    # rule 3: every edge points down, or from x.c to x.h
    def allowed(a, b):
        if a not in ranks or b not in ranks:
            return True        # unranked: already an error of rule 1
        if a[:-2] == b[:-2] and a.endswith(".c") and b.endswith(".h"):
            return True
        return ranks[b][0] < ranks[a][0]

    def where(f):
        return "%s (rank %d)" % (rel(f, src), ranks[f][0])

    bad = []                   # ((A, B, 0 include / 1 symbol), message)
    for (a, b), lines in inc.items():
        if not allowed(a, b):
            bad.append(((a, b, 0), 'include "%s" (%s:%s)' % (
                rel(b, src), rel(a, src), ",".join(map(str, lines)))))
    merged = {}                # an edge of several configurations: one line
    for cfg in configs:
        for (a, b), s in sym[cfg].items():
            if not allowed(a, b):
                cfgs, names = merged.setdefault((a, b), ([], set()))
                cfgs.append(cfg)
                names |= s
    for (a, b), (cfgs, names) in merged.items():
        bad.append(((a, b, 1), "[%s]: %s" % (",".join(cfgs),
                                               " ".join(sorted(names)))))
    # bottom-up: the lowest file first, then its edges from the lowest up
    bad.sort(key=lambda v: (ranks[v[0][0]][0], v[0][0], ranks[v[0][1]][0],
                            v[0][1], v[0][2]))
    for (a, b, _), what in bad:
        kind = "UP" if ranks[b][0] > ranks[a][0] else "SIDEWAYS"
        error("%s %s -> %s %s" % (kind, where(a), where(b), what))

    # rule 4: the folders are bands, in order; an edge stays in its folder
    # or goes to an earlier one (include/hakmem.h is below them all)
    folders = read_folders(doc)
    order = {f: i for i, f in enumerate(folders)}
    for f in folders:
        if not os.path.isdir(os.path.join(src, f)):
            error("folder %s/ of the layer-folders line does not exist" % f)

    def folder(f):
        r = rel(f, src)
        if r.startswith(".." + os.sep):
            return -1, r.split(os.sep)[1]   # outside src/: include/
        top = r.split(os.sep)[0] if os.sep in r else ""
        return order.get(top), top

    for f in src_files:
        if folder(f)[0] is None:
            error("%s is not in a folder of the layer-folders line (%s)" %
                  (rel(f, src), " ".join(folders)))
    for (a, b) in sorted(all_edges_of(inc, sym)):
        fa, fb = folder(a), folder(b)
        if fa[0] is not None and fb[0] is not None and fb[0] > fa[0]:
            error("FOLDER %s (%s/) -> %s (%s/): a later folder" %
                  (rel(a, src), fa[1], rel(b, src), fb[1]))

    all_edges = set(inc)
    for cfg in configs:
        all_edges |= set(sym[cfg])
    if args.dot:
        print_dot(ranks, files, inc, sym, allowed, src)
    if errors:
        say("FAILED (%d errors)" % errors)
        return 1
    say("OK (%d files, %d edges)" % (len(files), len(all_edges)))
    return 0


def all_edges_of(inc, sym):
    edges = set(inc)
    for e in sym.values():
        edges |= set(e)
    return edges


def print_dot(ranks, files, inc, sym, allowed, src):
    """The graph, one cluster per rank; includes dashed, calls solid,
    violations red."""
    print("digraph layers {\n  rankdir=BT; node [shape=box, fontsize=10];")
    by_rank = {}
    for f in files:
        by_rank.setdefault(ranks[f][0] if f in ranks else -1, []).append(f)
    for r in sorted(by_rank):
        label = "rank %d" % r if r >= 0 else "not in the table"
        print('  subgraph cluster_%d { label="%s"; rank=same;'
              % (r + 1, label))
        for f in by_rank[r]:
            print('    "%s";' % rel(f, src))
        print("  }")
    calls = {}
    for edges in sym.values():
        for e, s in edges.items():
            calls.setdefault(e, set()).update(s)
    for (a, b), style in ([(e, "dashed") for e in sorted(inc)] +
                          [(e, "solid") for e in sorted(calls)]):
        color = "black" if allowed(a, b) else "red"
        print('  "%s" -> "%s" [style=%s, color=%s];' %
              (rel(a, src), rel(b, src), style, color))
    print("}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet under `| head`
    sys.exit(main())
