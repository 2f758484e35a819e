#!/usr/bin/env python3
"""docs_refs.py: every place a document or the code cites exists.

Read: README.md, CHANGELOG.md, docs/*.md (not docs/history/, which keeps
what was true then), docs/hakmem.1, include/*.h, every file of src/,
tools/hakmem and the tests' tables (tests/**/*.txt). Checked:
  section   `NAME.md, "Label"` (or `NAME.md "Label"`, `NAME.md: "Label"`,
            `NAME.md, section "Label"`): NAME.md exists (at the root or in
            docs/) and has a heading that starts with Label or a bold label
            (**Label**) that does
  link      a Markdown link to a relative path: the file exists; with
            #anchor, a heading of that file has that anchor (GitHub's rule:
            lower case, punctuation dropped, spaces to hyphens)
  path      a `src/...`, `docs/...`, `tests/...`, `bench/...`, `tools/...`,
            `include/...` or `examples/...` file written in a document
            (CHANGELOG.md aside: its paths are as they were): it exists

Exit 0 and "docs_refs: OK (N citations)" when all hold; 1 with one line per
broken citation otherwise.

  --root DIR   check the tree at DIR
  --plant      the self-test: on a copy of the tree, a citation of a section
               that does not exist planted in include/hakmem.h, a link to a
               missing file in README.md and a missing path in a doc must
               each be reported; exit 0 when all three are
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SECTION = re.compile(r'\b([A-Z][A-Z_]*\.md)[,:]?\s+(?:section\s+)?"([^"\n]{2,80})"')
LINK = re.compile(r'\]\(([^)\s]+)\)')
PATH = re.compile(r'(?<![\w./-])((?:src|docs|tests|bench|tools|include|examples)/[\w./-]*\w)')


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path, cache={}):
    """(heading texts, bold labels, anchors) of a Markdown file."""
    if path not in cache:
        heads, bold, anchors = [], [], set()
        in_code = False
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                heads.append(m.group(1))
                a = slug(m.group(1))
                n = 1
                base = a
                while a in anchors:      # GitHub numbers repeated headings
                    a = "%s-%d" % (base, n)
                    n += 1
                anchors.add(a)
            bold += re.findall(r"\*\*([^*]+)\*\*", line)
            anchors.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
        cache[path] = (heads, bold, anchors)
    return cache[path]


def find_doc(root, name):
    for d in ("", "docs"):
        p = os.path.join(root, d, name)
        if os.path.isfile(p):
            return p
    return None


def label_ok(path, label):
    heads, bold, _ = headings(path)
    want = label.rstrip(".").lower()
    for h in heads:
        # "Pages" matches "Pages", "Pages: the span tier", "3. Pages"
        h = re.sub(r"^[\d.]+\s+", "", h).lower()
        if h == want or h.startswith(want + ":") or h.startswith(want + " ") or \
                h.startswith(want + ",") or h.startswith(want + " (") or h.startswith(want + "."):
            return True
    for b in bold:
        b = b.rstrip(".:").lower()
        if b == want or b.startswith(want + ":") or b.startswith(want + " "):
            return True
    return False


def files_to_read(root):
    out = []
    for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "tools/hakmem", "docs/hakmem.1"):
        if os.path.isfile(os.path.join(root, name)):
            out.append(name)
    for d, sub in (("docs", False), ("include", False), ("src", True), ("tests", True)):
        top = os.path.join(root, d)
        for dirpath, dirs, fs in os.walk(top):
            if not sub:
                dirs[:] = []
            for f in sorted(fs):
                if f.endswith((".md", ".h", ".c")) if d != "tests" else f.endswith(".txt"):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return out


PLANTS = [
    ("include/hakmem.h", '/* planted: docs/OBSERVABILITY.md, "No such section of it" */\n',
     'cites OBSERVABILITY.md, "No such section of it"'),
    ("README.md", "\nPlanted: [a link](docs/NO_SUCH_FILE.md).\n", "link to docs/NO_SUCH_FILE.md"),
    ("docs/TESTING.md", "\nPlanted: tests/no_such_test.sh.\n", "names tests/no_such_test.sh"),
]


def plant(root):
    failed = 0
    with tempfile.TemporaryDirectory(prefix="hakmem-docs-refs.") as tmp:
        for rel, text, expect in PLANTS:
            copy = os.path.join(tmp, "tree")
            shutil.rmtree(copy, ignore_errors=True)
            for d in ("docs", "include", "src", "tools", "tests", "bench", "examples"):
                if os.path.isdir(os.path.join(root, d)):
                    shutil.copytree(os.path.join(root, d), os.path.join(copy, d), symlinks=True)
            for f in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md"):
                shutil.copy(os.path.join(root, f), copy)
            with open(os.path.join(copy, rel), "a", encoding="utf-8") as f:
                f.write(text)
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", copy],
                               capture_output=True, text=True)
            if p.returncode != 0 and expect in p.stdout:
                print("docs_refs --plant: caught in %s: %s" % (rel, expect))
            else:
                print("docs_refs --plant: MISSED in %s: %s (exit %d)" % (rel, expect, p.returncode))
                failed += 1
    print("docs_refs --plant: %s" % ("OK" if not failed else "FAILED"))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--plant", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.plant:
        return plant(root)
    bad, n = [], 0
    for rel in files_to_read(root):
        path = os.path.join(root, rel)
        text = open(path, encoding="utf-8", errors="replace").read()
        is_md = rel.endswith(".md")
        for lineno, line in enumerate(text.splitlines(), 1):
            where = "%s:%d" % (rel, lineno)
            for m in SECTION.finditer(line):
                n += 1
                doc = find_doc(root, m.group(1))
                if not doc:
                    bad.append('%s: cites %s, which does not exist' % (where, m.group(1)))
                elif not label_ok(doc, m.group(2)):
                    bad.append('%s: cites %s, "%s": no such heading or bold label' %
                               (where, m.group(1), m.group(2)))
            if not is_md:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target) or target.startswith("#") and not target[1:]:
                    continue            # http:, mailto:, a bare '#'
                n += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(dest):
                    bad.append("%s: link to %s: no such file" % (where, target))
                    continue
                if anchor and dest.endswith(".md"):
                    if anchor not in headings(dest)[2]:
                        bad.append("%s: link to %s: no heading with that anchor" % (where, target))
            if rel == "CHANGELOG.md":
                continue                # its paths are as they were then
            for m in PATH.finditer(line):
                p = m.group(1).rstrip(".")
                if not re.search(r"\.(c|cc|h|md|py|sh|txt|json|cmake|rs|toml|1)$", p):
                    continue            # a program or a test name, not a file
                if re.search(r"FILE|DATE|TIME|MODE|YYYY|X\.Y\.Z|NAME|\*|\{", p):
                    continue            # a pattern, not a path
                n += 1
                if not os.path.exists(os.path.join(root, p)):
                    bad.append("%s: names %s: no such file or folder" % (where, p))
    for b in bad:
        print("docs_refs: " + b)
    if bad:
        print("docs_refs: FAILED (%d of %d citations broken)" % (len(bad), n))
        return 1
    print("docs_refs: OK (%d citations)" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
