/* libbenchprobe.so — the allocator proof for real programs.
 *
 * A benchmark binary prints its allocator itself (bench_common.h); a real
 * program (redis-server, python3, cc) does not. The harness preloads this
 * small library AFTER the allocator under test; its constructor runs the same
 * detection as the benchmarks and appends one line per process to the file
 * named by $BENCH_PROBE_OUT:
 *     pid=N exe=PATH allocator: NAME (PATH)
 * and, from a destructor at exit, the process's peak RSS:
 *     pid=N exe=PATH peak_rss_kib=N
 * (the global-scope lookup of `malloc` done here is the one the dynamic
 * linker used to bind the program's own calls). It allocates nothing. */
#include "bench_common.h"
#include <fcntl.h>

__attribute__((constructor)) static void bench_probe_init(void)
{
    const char *out = getenv("BENCH_PROBE_OUT");
    if (!out || !*out) return;
    char name[64], path[PATH_MAX], exe[PATH_MAX];
    bc_detect_allocator(name, sizeof name, path, sizeof path);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char line[3 * PATH_MAX];
    int len = snprintf(line, sizeof line, "pid=%d exe=%s allocator: %s (%s)\n", (int)getpid(), exe,
                       name, path);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (len > 0) {
        ssize_t w = write(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
        (void)w;
    }
    close(fd);
}

__attribute__((destructor)) static void bench_probe_fini(void)
{
    const char *out = getenv("BENCH_PROBE_OUT");
    if (!out || !*out) return;
    /* read VmHWM without stdio (no allocation at exit) */
    char buf[4096], exe[PATH_MAX], line[PATH_MAX + 128];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    char *h = strstr(buf, "VmHWM:");
    if (!h) return;
    long kib = strtol(h + 6, NULL, 10);
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[e > 0 ? e : 0] = 0;
    int len = snprintf(line, sizeof line, "pid=%d exe=%s peak_rss_kib=%ld\n", (int)getpid(), exe, kib);
    fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (len > 0) {
        ssize_t w = write(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
        (void)w;
    }
    close(fd);
}
