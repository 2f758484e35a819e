"""The allocators of a run: which are installed, how each is realised (a
preload, a static link, a variant's knobs, another build's library), and the
proof that a run was served by the allocator it asked for (check_allocator).
"""

import os
import re
from pathlib import Path

import settings

LIBDIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]


def real_path(lib):
    """A library path with its symlinks resolved (a bare name, which the
    dynamic loader looks up itself, unchanged). The programs prove their
    allocator by realpath() of the file malloc lives in; through a symlink
    (build/libhakmem.so, Debian's libmimalloc.so.2, libtcmalloc_minimal.so.4)
    that walk ran libc code that no other call of a small row runs: 64 KiB
    more peak RSS on bench_tiny, paid by those allocators and not by glibc
    or jemalloc, whose files are no symlinks (docs/BENCHMARKS.md, "The
    allocator's proof, through a symlink")."""
    if lib and "/" in lib and os.path.exists(lib):
        return os.path.realpath(lib)
    return lib


class Allocator:
    """How one allocator is realised for a run, and what the run must print."""

    def __init__(self, label, expect, preload=None, static=False, package=None, note="", env=None,
                 expect_file=None, base=None, build=None, expect_path=None):
        self.label = label        # name in the reports
        self.expect = expect      # name the program must print
        self.preload = real_path(preload)  # library to LD_PRELOAD (None: none)
        self.static = static      # use the *_hakmem_static binaries
        self.package = package
        self.note = note
        self.plain_binary = False  # --pretend: static label, plain binary
        self.env = dict(env or {})  # variant knobs (HAKMEM_PROFILE=fast, ...)
        self.expect_file = expect_file  # the printed library's file name must start so
        self.base = base          # a variant: the label it is compared with (hakmem)
        self.build = build        # --build NAME=DIR: NAME ("default" for the plain hakmem)
        self.expect_path = expect_path  # --build NAME=DIR: malloc must be in this very file

    def child_env(self):
        """Environment of a run of this allocator: --hakmem-env, then the
        variant's own knobs."""
        env = {}
        if self.expect == "hakmem":
            env.update(settings.HAKMEM_ENV)
            env.update(self.env)
        return env

    def describe(self):
        if self.static:
            return ("linked with %s" % settings.rel(settings.BUILD / "libhakmem.a")) if not self.plain_binary else \
                "PRETEND: plain binary"
        pre = " ".join("%s=%s" % kv for kv in self.env.items())
        if self.preload:
            return (pre + " " if pre else "") + "LD_PRELOAD=" + self.preload
        return (pre + " " if pre else "") + "no preload"


def find_lib(names):
    for d in LIBDIRS:
        for n in names:
            p = Path(d) / n
            if p.exists():
                return str(p)
    return None


PEERS = [
    ("mimalloc", ["libmimalloc.so.2", "libmimalloc.so"], "libmimalloc2.0"),
    ("jemalloc", ["libjemalloc.so.2", "libjemalloc.so"], "libjemalloc2"),
    ("tcmalloc", ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"], "libtcmalloc-minimal4"),
]


def libc_path():
    return find_lib(["libc.so.6"]) or "/lib/x86_64-linux-gnu/libc.so.6"


def hakmem_so(name="libhakmem.so"):
    p = settings.BUILD / name
    return str(p) if p.exists() else None


# --variants: hakmem under other settings, each compared with the default
VARIANTS = [
    ("hakmem:fast", {"HAKMEM_PROFILE": "fast"}, "libhakmem.so", "HAKMEM_PROFILE=fast"),
    ("hakmem:lowmem", {"HAKMEM_PROFILE": "lowmem"}, "libhakmem.so", "HAKMEM_PROFILE=lowmem"),
    ("hakmem:learn", {"HAKMEM_LEARN": "1"}, "libhakmem.so", "HAKMEM_LEARN=1"),
    ("hakmem:prof", {"HAKMEM_PROF": "1", "HAKMEM_PROF_FILE": "/dev/null"}, "libhakmem.so",
     "HAKMEM_PROF=1 (heap profiling, default rate; the profile to /dev/null)"),
    ("hakmem-secure", {}, "libhakmem-secure.so", "the hardened build (`make secure`)"),
]
VARIANT_LABELS = [v[0] for v in VARIANTS]

# --build NAME=DIR (repeatable, settings.BUILDS): more hakmem builds in the
# same interleaved run, each labelled hakmem:NAME and served by
# DIR/libhakmem.so (the benchmark programs always come from the default
# build: they are plain malloc programs)


def build_label(name):
    return "hakmem:" + name


def build_allocators():
    return [Allocator(build_label(n), "hakmem", preload=str(d / "libhakmem.so"), expect_file="libhakmem.so",
                      build=n, expect_path=str(d / "libhakmem.so"), note="build %s: %s" % (n, d))
            for n, d in settings.BUILDS]


def discover_allocators(args, log):
    """Returns (allocators, skipped) in run order."""
    allocs, skipped = [], []
    so = hakmem_so()
    if so:
        allocs.append(Allocator("hakmem", "hakmem", preload=so, note="preloaded", expect_file="libhakmem.so",
                                build="default" if settings.BUILDS else None))
    else:
        skipped.append({"allocator": "hakmem", "reason": "build/libhakmem.so not found: run `make` first"})
    if args.variants or getattr(args, "lowmem_only", False):
        for label, env, lib, what in VARIANTS:
            if not args.variants and label != "hakmem:lowmem":
                continue
            vso = hakmem_so(lib)
            if vso:
                allocs.append(Allocator(label, "hakmem", preload=vso, env=env, expect_file=lib,
                                        base="hakmem", note="variant: " + what))
            else:
                skipped.append({"allocator": label, "reason": "build/%s not found: run `make%s` first" % (
                    lib, " secure" if "secure" in lib else "")})
    allocs += build_allocators()
    if (settings.BIN / "bench_tiny_hakmem_static").exists():
        allocs.append(Allocator("hakmem-static", "hakmem", static=True, note="static link"))
    else:
        skipped.append({"allocator": "hakmem-static",
                        "reason": "build/bench/*_hakmem_static not built (needs build/libhakmem.a: run `make`)"})
    allocs.append(Allocator("glibc", "glibc", note="system malloc"))
    for name, libs, pkg in PEERS:
        lib = find_lib(libs)
        if lib:
            allocs.append(Allocator(name, name, preload=lib, package=pkg))
        else:
            skipped.append({"allocator": name,
                            "reason": "not installed: apt-get install -y %s" % pkg})
    # --pretend LABEL=HOW: realise LABEL some other way (tests/repo/bench_selftest.sh uses
    # it to prove that a mis-linked run is caught)
    for spec in args.pretend or []:
        label, _, how = spec.partition("=")
        expect = "hakmem" if label.startswith("hakmem") else label
        known = {v[0]: v for v in VARIANTS}
        vfile = known[label][2] if label in known else ("libhakmem.so" if label == "hakmem" else None)
        venv = known[label][1] if label in known else {}
        allocs = [a for a in allocs if a.label != label]
        skipped = [s for s in skipped if s["allocator"] != label]
        if how in ("", "none"):
            a = Allocator(label, expect, note="PRETEND: no preload")
        elif how == "plain":
            a = Allocator(label, expect, static=True, note="PRETEND: plain binary")
            a.plain_binary = True
        else:
            a = Allocator(label, expect, preload=how, note="PRETEND: LD_PRELOAD=" + how)
        a.expect_file, a.env = vfile, dict(venv)
        if label in known:
            a.base = "hakmem"
        named = {b.label: b for b in build_allocators()}
        if label in named:   # hakmem:NAME must be served by NAME's own library
            a.build, a.expect_path, a.expect_file = named[label].build, named[label].expect_path, "libhakmem.so"
        allocs.insert(0, a)
    if args.allocators:
        want = [w.strip() for w in args.allocators.split(",") if w.strip()]
        for w in want:
            if not any(a.label == w for a in allocs) and not any(s["allocator"] == w for s in skipped):
                log("unknown allocator %r (known: hakmem, hakmem-static, glibc, mimalloc, jemalloc, tcmalloc, "
                    "with --variants %s, and hakmem:NAME for each --build NAME=DIR)" % (w, ", ".join(VARIANT_LABELS)))
        # a build named by --build NAME=DIR was asked for: always measured
        builds = {b.label for b in build_allocators()}
        allocs = [a for a in allocs if a.label in want or a.label in builds]
        skipped = [s for s in skipped if s["allocator"] in want or s["allocator"] in builds]
    return allocs, skipped


# the line every benchmark program prints (bench_common.h, probe.c)
RE_ALLOC = re.compile(r"^allocator: (\S+) \((.*)\)\s*$", re.M)


def check_allocator(alloc, printed, binary=None):
    """Returns None when the printed allocator is the one requested, else why not."""
    if not printed:
        return "the program printed no `allocator:` line"
    name, path = printed
    if name != alloc.expect:
        return "printed allocator %s (%s) but %s was requested" % (name, path, alloc.label)
    if alloc.preload and os.path.realpath(alloc.preload) != os.path.realpath(path):
        return "malloc is defined in %s, not in the preloaded %s" % (path, alloc.preload)
    if alloc.expect_path and os.path.realpath(path) != os.path.realpath(alloc.expect_path):
        return "malloc is defined in %s, but %s must be served by its build's %s" % (
            path, alloc.label, alloc.expect_path)
    if alloc.expect_file and not alloc.static and \
            not os.path.basename(os.path.realpath(path)).startswith(alloc.expect_file):
        return "malloc is defined in %s, but %s must be served by %s" % (path, alloc.label, alloc.expect_file)
    if alloc.static and binary and os.path.realpath(binary) != os.path.realpath(path):
        return "malloc is defined in %s, not in the statically linked %s" % (path, binary)
    return None


def allocator_entry(a):
    """An allocator as the results JSON lists it."""
    e = {"label": a.label, "expect": a.expect, "how": a.describe() + (" (%s)" % a.note if a.note else ""),
         "base": a.base}
    if a.build:
        names = [n for n, _ in settings.BUILDS]
        e.update(build=a.build,
                 build_dir=str(settings.BUILD) if a.build == "default" else str(dict(settings.BUILDS)[a.build]),
                 build_order=names.index(a.build) + 1 if a.build in names else 0)
    return e
