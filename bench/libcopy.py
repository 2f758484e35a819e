"""A hakmem library copied a page at a time before it is measured.

The kernel keeps a file in the page cache in large folios when it was
written (or read ahead) in big pieces, and maps a whole folio at a fault:
a library copied with `cp` kept up to 56 KiB more of its code resident
than the same bytes written a page at a time (bench_tiny: 116 against
64 KiB of libhakmem's text, 1.032x the peak RSS of a 1.7 MiB row). Two
builds compared with one of them copied by `cp` then differ by that,
whatever their code (docs/ARCHITECTURE.md, "Large folios"). ab.py and
ratios.py measure copies of every hakmem library written here, so that
both sides are in small folios. Other libraries are left as they are
(a peer's own copy, the system's libc).
"""
import atexit
import os
import shutil
import tempfile

_DIR = []


def small_folio_copy(path):
    """A copy of a hakmem library (same base name), written 4 KiB at a
    time into a directory removed at exit; any other path unchanged."""
    path = os.path.abspath(path)
    if "libhakmem" not in os.path.basename(path):
        return path
    if not _DIR:
        _DIR.append(tempfile.mkdtemp(prefix="hakmem-lib."))
        atexit.register(shutil.rmtree, _DIR[0], True)
    sub = tempfile.mkdtemp(dir=_DIR[0])
    dst = os.path.join(sub, os.path.basename(path))
    with open(path, "rb") as f:
        data = f.read()
    with open(dst, "wb", buffering=0) as f:
        for i in range(0, len(data), 4096):
            f.write(data[i:i + 4096])
    os.chmod(dst, 0o755)
    return dst
