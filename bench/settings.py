"""The paths and options of one harness invocation (bench/harness.py).

harness.main() sets them once from the command line; the other modules read
them as settings.NAME at the moment they need them (never `from settings
import NAME`, which would keep the value from before the command line was
read).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_SRC = ROOT / "bench"
BUILD = ROOT / "build"          # --build DIR: the default build
BIN = BUILD / "bench"           # its benchmark programs
RESULTS = BENCH_SRC / "results"  # --out DIR

HAKMEM_ENV = {}   # --hakmem-env KEY=VAL: knobs for the hakmem runs only
BUILDS = []       # --build NAME=DIR (repeatable): [(NAME, Path DIR)] in command-line order
USE_GDB = True    # --no-gdb turns it off: no gdb re-run of a crashed program
INJECT = {}       # --inject-crash BENCH/LABEL=N: {(BENCH, LABEL): N}
STRACE_SECCOMP = True  # strace has --seccomp-bpf (probed before the counting runs)


def rel(p):
    """p relative to the checkout when it is inside it, else as it is."""
    try:
        return str(Path(p).relative_to(ROOT))
    except ValueError:
        return str(p)
