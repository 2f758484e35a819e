"""Running one program for the harness: its environment, its time limit, how
it ended (exit status or signal), the strace counting prefix, the gdb re-run
of a crash, and the crash injected on purpose (--inject-crash).
"""

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import settings

OS_CALLS = ["mmap", "munmap", "madvise", "brk", "mremap"]


class Proc:
    def __init__(self, rc, out, err, wall, maxrss_kib, timed_out):
        self.rc, self.out, self.err = rc, out, err
        self.wall, self.maxrss_kib, self.timed_out = wall, maxrss_kib, timed_out


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_program(cmd, env, timeout, cwd=None):
    """Runs cmd to completion; returns its output, wall time and the peak RSS
    of the process tree (wait4 rusage)."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env,
                                 cwd=cwd, start_new_session=True)
        except OSError as e:
            return Proc(127, "", "cannot start %s: %s" % (cmd[0], e), 0.0, 0, False)
        timed_out = []
        timer = threading.Timer(timeout, lambda: (timed_out.append(1), _killpg(p.pid)))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        _killpg(p.pid)            # stray children of a crashed program
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode("utf-8", "replace")
        err = fe.read().decode("utf-8", "replace")
    return Proc(p.returncode, out, err, wall, ru.ru_maxrss, bool(timed_out))


def clean_env():
    env = {}
    drop_prefixes = ("LD_", "MALLOC_", "HAKMEM_", "MIMALLOC_", "JE_", "TCMALLOC_", "GLIBC_TUNABLES",
                     "PYTHON")
    for k, v in os.environ.items():
        if k.startswith(drop_prefixes) or k == "MALLOC_CONF":
            continue
        env[k] = v
    env["LC_ALL"] = "C"
    return env


def rc_text(rc):
    if rc < 0:
        try:
            return "killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def exit_fields(rc, timed_out=False):
    """How a process ended, for the JSON: exit_status (None when killed) and
    signal (its name, None when it exited)."""
    d = {"exit_status": None, "signal": None}
    if rc is None:
        return d
    if rc < 0:
        try:
            d["signal"] = signal.Signals(-rc).name
        except ValueError:
            d["signal"] = "signal %d" % -rc
    else:
        d["exit_status"] = rc
    if timed_out:
        d["timed_out"] = True
    return d


# --inject-crash BENCH/LABEL=N (testing aid, tests/repo/bench_selftest.sh): start N of
# that row's program kills itself with SIGSEGV (every start when N is 0)
INJECT_DIR = None


def inject_crash(bench, label, cmd):
    """Wraps cmd in a shell that counts its starts in a file and, on the start
    chosen by --inject-crash, kills itself with SIGSEGV instead of running it.
    Every start counts (a gdb re-run too), so a crash on one start only is a
    crash that gdb does not reproduce."""
    n = settings.INJECT.get((bench, label))
    if n is None:
        return cmd
    global INJECT_DIR
    if INJECT_DIR is None:
        INJECT_DIR = tempfile.mkdtemp(prefix="hakmem-inject-")
        atexit.register(shutil.rmtree, INJECT_DIR, True)
    counter = os.path.join(INJECT_DIR, re.sub(r"[^\w.-]", "_", "%s-%s" % (bench, label)))
    script = ('n=$(( $(cat "$0" 2>/dev/null || echo 0) + 1 )); echo $n >"$0"; '
              'if [ %d -eq 0 ] || [ $n -eq %d ]; then kill -SEGV $$; fi; exec "$@"' % (n, n))
    return ["/bin/sh", "-c", script, counter] + cmd


def strace_prefix(outfile, env_for_child):
    cmd = ["strace", "-f", "-qq", "-c", "-o", str(outfile), "-e", "trace=" + ",".join(OS_CALLS)]
    if settings.STRACE_SECCOMP:
        cmd.append("--seccomp-bpf")
    for k, v in env_for_child.items():
        cmd += ["-E", "%s=%s" % (k, v)]
    return cmd


def parse_strace(path):
    counts = {c: 0 for c in OS_CALLS}
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in counts and parts[0][0].isdigit():
            try:
                counts[parts[-1]] = int(parts[3])
            except ValueError:
                pass
    return counts


def fail(rec, why, p):
    rec.update(status="failed", reason=why,
               stderr_tail=p.err[-1500:], stdout_tail=p.out[-800:])
    return rec


def fail_text(rec, why, errf, outf, extra=""):
    def tail(p, n):
        try:
            return Path(p).read_text(errors="replace")[-n:]
        except OSError:
            return ""
    rec.update(status="failed", reason=why, stderr_tail=tail(errf, 1500) + extra, stdout_tail=tail(outf, 500))
    return rec


GDB_DONE = set()   # the rows whose crash was re-run under gdb already


def gdb_backtrace(cmd, child_env, timeout=180):
    """Re-runs a crashed program under gdb, with address randomisation on as
    in the timed runs (gdb turns it off by default). Returns (label, text):
    "reproduced" with the backtraces of all its threads when it died again
    (the allocator under test preloaded into the program only, not into gdb),
    else "not reproduced" with how it ended. The row is FAIL either way."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "not re-run", "gdb not installed (apt-get install -y gdb)"
    g = [gdb, "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off",
         "-ex", "set disable-randomization off"]
    if child_env:
        g += ["-ex", "set exec-wrapper env " + " ".join("%s=%s" % kv for kv in child_env.items())]
    g += ["-ex", "run", "-ex", "info registers rip", "-ex", "thread apply all bt 25", "--args"] + cmd
    p = run_program(g, clean_env(), timeout)
    text = p.out + p.err
    keep = [l for l in text.splitlines() if l.startswith(("#", "Thread", "Program", "rip", "[Inferior"))
            or "signal" in l]
    died = re.search(r"^Program (received|terminated with) signal", text, re.M)
    label = "reproduced" if died else ("not reproduced (gdb timed out after %d s)" % timeout
                                       if p.timed_out else "not reproduced")
    return label, "\n".join(keep)[-6000:] or text[-3000:]


def shell_line(env, cmd):
    pre = " ".join("%s=%s" % (k, v) for k, v in env.items())
    rel = []
    for c in cmd:
        s = str(c)
        if s.startswith(str(settings.ROOT) + "/"):
            s = s[len(str(settings.ROOT)) + 1:]
        rel.append(s if re.fullmatch(r"[\w./=:,+-]+", s) else "'%s'" % s.replace("'", "'\\''"))
    return (pre + " " if pre else "") + " ".join(rel)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
