/* bench_common.h — shared by every hakmem benchmark (and the preload probe).
 *
 * Each benchmark is a plain malloc/free program. What it must prove, at run
 * time, is WHICH allocator served it: the earlier hakmem measured glibc for
 * weeks because a bench was silently not linked against the allocator.
 *
 *   bc_print_allocator()  finds where the `malloc` this process actually calls
 *                         is defined (dlsym(RTLD_DEFAULT) + dladdr: the same
 *                         global-scope lookup the dynamic linker uses to bind
 *                         our PLT) and prints
 *                             allocator: NAME (PATH)
 *   bc_report()           prints Ops, Time, `Throughput = N ops/s` and the
 *                         peak RSS (VmHWM; getrusage ru_maxrss alongside).
 *   bc_work()             prints a digest of the work done; it depends only on
 *                         the parameters and the seed, never on addresses, so
 *                         the harness can check every allocator did the same
 *                         work (and that nobody corrupted the data).
 *
 * Names: libhakmem -> hakmem, libmimalloc -> mimalloc, libjemalloc -> jemalloc,
 * libtcmalloc -> tcmalloc, libclang_rt.scudo* -> scudo, libc.so -> glibc. When malloc is defined in the
 * executable itself (static link), the name is hakmem only if the executable
 * also exports `hak_version`; anything else is "static-unknown".
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#if defined(__GNUC__)
#define BC_UNUSED __attribute__((unused))
#else
#define BC_UNUSED
#endif

/* ---------------------------------------------------------------- time */

static BC_UNUSED uint64_t bc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ----------------------------------------------------------------- rng */
/* splitmix64 to seed, xorshift64* to draw: cheap, deterministic, the same
 * sequence whatever the allocator. */

typedef struct { uint64_t s; } bc_rng;

static BC_UNUSED uint64_t bc_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static BC_UNUSED void bc_rng_seed(bc_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    r->s = bc_splitmix64(&x);
    if (r->s == 0) r->s = 0x2545F4914F6CDD1Dull;
}

static inline uint64_t bc_rng_next(bc_rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* uniform in [0, n) for n < 2^32 (multiply-shift, no division) */
static inline uint32_t bc_rng_below(bc_rng *r, uint32_t n)
{
    return (uint32_t)(((bc_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* uniform in [lo, hi] */
static inline size_t bc_rng_range(bc_rng *r, size_t lo, size_t hi)
{
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    if (span <= 0xFFFFFFFFull) return lo + bc_rng_below(r, (uint32_t)span);
    return lo + (size_t)(bc_rng_next(r) % span);
}

/* ---------------------------------------------------------- work digest */

static inline uint64_t bc_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static BC_UNUSED void bc_work(uint64_t digest)
{
    printf("work: %016llx\n", (unsigned long long)digest);
}

/* ------------------------------------------------------------ arguments */

/* Set by bc_usage: a bad argument prints it (and exits 2). */
static const char *bc_usage_name, *bc_usage_args, *bc_usage_about;

static BC_UNUSED void bc_print_usage(FILE *f)
{
    fprintf(f, "usage: %s %s\n%s", bc_usage_name ? bc_usage_name : "bench",
            bc_usage_args ? bc_usage_args : "", bc_usage_about ? bc_usage_about : "");
}

/* First thing in main: --help or -h prints the usage on stdout and exits 0;
 * more than max_args arguments print it on stderr and exit 2. args: the
 * argument synopsis; about: what it does and the defaults (lines ending in
 * a newline). */
static BC_UNUSED void bc_usage(int argc, char **argv, int max_args, const char *args,
                               const char *about)
{
    const char *slash = argv[0] ? strrchr(argv[0], '/') : NULL;
    bc_usage_name = slash ? slash + 1 : (argv[0] ? argv[0] : "bench");
    bc_usage_args = args;
    bc_usage_about = about;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bc_print_usage(stdout);
            exit(0);
        }
    }
    if (argc - 1 > max_args) {
        fprintf(stderr, "%s: too many arguments\n", bc_usage_name);
        bc_print_usage(stderr);
        exit(2);
    }
}

static BC_UNUSED uint64_t bc_arg_u64(int argc, char **argv, int i, uint64_t dflt)
{
    if (i >= argc) return dflt;
    char *end = NULL;
    unsigned long long v = strtoull(argv[i], &end, 0);
    if (!end || *end) {
        /* accept k/m/g suffixes: 64k, 32m */
        if (end && (end[0] == 'k' || end[0] == 'K') && !end[1]) return v << 10;
        if (end && (end[0] == 'm' || end[0] == 'M') && !end[1]) return v << 20;
        if (end && (end[0] == 'g' || end[0] == 'G') && !end[1]) return v << 30;
        fprintf(stderr, "bad number for argument %d: '%s'\n", i, argv[i]);
        if (bc_usage_args) bc_print_usage(stderr);
        exit(2);
    }
    return v;
}

/* ------------------------------------------------------------- threads */

#include <sched.h>
#include <pthread.h>

/* Pins the calling thread to one CPU (index taken modulo the CPUs this
 * process may use), so that threads meant to run in parallel do, instead of
 * landing on one core by the scheduler's whim. Returns the CPU or -1. */
static BC_UNUSED int bc_pin_self(int index)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
    int n = CPU_COUNT(&allowed);
    if (n <= 0) return -1;
    int want = index % n, seen = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed)) continue;
        if (seen++ == want) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0 ? c : -1;
        }
    }
    return -1;
}

/* ------------------------------------------------- allocator detection */

struct bc_main_span { uintptr_t lo, hi; int found; };

static int bc_main_span_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
    (void)sz;
    struct bc_main_span *s = (struct bc_main_span *)data;
    /* the first object reported is the main program */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    s->lo = lo;
    s->hi = hi;
    s->found = 1;
    return 1; /* stop after the main program */
}

static int bc_in_main_program(const void *addr)
{
    struct bc_main_span s = {0, 0, 0};
    dl_iterate_phdr(bc_main_span_cb, &s);
    return s.found && (uintptr_t)addr >= s.lo && (uintptr_t)addr < s.hi;
}

static const char *bc_name_for_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strstr(base, "libhakmem")) return "hakmem";
    if (strstr(base, "libmimalloc")) return "mimalloc";
    if (strstr(base, "libjemalloc")) return "jemalloc";
    if (strstr(base, "libtcmalloc")) return "tcmalloc";
    if (strncmp(base, "libclang_rt.scudo", 17) == 0) return "scudo";
    if (strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0) return "glibc";
    return "unknown";
}

/* Does the object containing addr define `sym` there (and not merely hold a
 * PLT stub for it)? A non-PIE executable that takes malloc's address (CPython
 * does) exports a "canonical PLT" entry: dlsym(RTLD_DEFAULT) returns the stub
 * in the executable, though every call lands in the library. */
static int bc_defines(void *addr, const char *sym)
{
    Dl_info di;
    const ElfW(Sym) *s = NULL;
    (void)sym; /* aliases (mimalloc: malloc = mi_malloc) may carry another name */
    if (!dladdr1(addr, &di, (void **)&s, RTLD_DL_SYMENT) || !s || !di.dli_sname) return 0;
    return di.dli_saddr == addr && s->st_shndx != SHN_UNDEF;
}

struct bc_find { const char *sym; void *addr; int seen; };

/* Walks the loaded objects in load order (the executable, the preloads, then
 * the libraries: the order of the global lookup scope) and stops at the first
 * one other than the executable that defines sym itself. */
static int bc_find_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
    (void)sz;
    struct bc_find *f = (struct bc_find *)data;
    if (f->seen++ == 0 || !info->dlpi_name || !info->dlpi_name[0]) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *p = dlsym(h, f->sym);
    dlclose(h);
    Dl_info di;
    if (p && dladdr(p, &di) && di.dli_fname && strcmp(di.dli_fname, info->dlpi_name) == 0 &&
        bc_defines(p, f->sym)) {
        f->addr = p;
        return 1;
    }
    return 0;
}

/* Fills name/path for the allocator that serves this process's malloc.
 * Returns a pointer to hak_version() when hakmem serves it, else NULL. */
static BC_UNUSED const char *(*bc_detect_allocator(char *name, size_t nn, char *path, size_t pn))(void)
{
    snprintf(name, nn, "unknown");
    snprintf(path, pn, "?");
    void *fn = dlsym(RTLD_DEFAULT, "malloc");
    if (!fn) return NULL;
    void *hv = dlsym(RTLD_DEFAULT, "hak_version");

    if (bc_in_main_program(fn) && !bc_defines(fn, "malloc")) {
        struct bc_find f = {"malloc", NULL, 0};
        dl_iterate_phdr(bc_find_cb, &f);
        if (f.addr) fn = f.addr;
    }
    if (bc_in_main_program(fn)) {
        /* defined in the executable: a static link */
        ssize_t n = readlink("/proc/self/exe", path, pn - 1);
        if (n > 0) path[n] = 0;
        if (hv && bc_in_main_program(hv)) {
            snprintf(name, nn, "hakmem");
            return (const char *(*)(void))hv;
        }
        snprintf(name, nn, "static-unknown");
        return NULL;
    }

    Dl_info di;
    if (!dladdr(fn, &di) || !di.dli_fname) return NULL;
    char real[PATH_MAX];
    if (realpath(di.dli_fname, real)) snprintf(path, pn, "%s", real);
    else snprintf(path, pn, "%s", di.dli_fname);
    /* name from the file the symbol lives in (as loaded, before symlinks
     * are resolved: libmimalloc.so.2 -> libmimalloc.so.2.0 keeps its name) */
    const char *nm = bc_name_for_path(di.dli_fname);
    if (strcmp(nm, "unknown") == 0) nm = bc_name_for_path(path);
    snprintf(name, nn, "%s", nm);
    if (strcmp(nm, "hakmem") == 0 && hv) {
        Dl_info hi;
        if (dladdr(hv, &hi) && hi.dli_fbase == di.dli_fbase) return (const char *(*)(void))hv;
    }
    return NULL;
}

static BC_UNUSED void bc_print_allocator(void)
{
    char name[64], path[PATH_MAX];
    const char *(*hv)(void) = bc_detect_allocator(name, sizeof name, path, sizeof path);
    printf("allocator: %s (%s)\n", name, path);
    if (hv) {
        int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hak_is_active");
        printf("hakmem_version: %s active=%d\n", hv(), active ? active() : -1);
    }
    fflush(stdout);
}

/* -------------------------------------------------------------- report */

/* Peak RSS of this process in KiB. VmHWM (/proc/self/status) is the high-water
 * mark of this program's own address space. getrusage's ru_maxrss is kept too,
 * but on Linux it also carries over the RSS of the parent at fork/exec time
 * (a 20 MiB Python harness would set a 20 MiB floor), so it is only the
 * fallback. */
static BC_UNUSED long bc_ru_maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss; /* KiB on Linux */
}

static BC_UNUSED long bc_peak_rss_kib(void)
{
    char buf[4096];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        while (fgets(buf, sizeof buf, f))
            if (sscanf(buf, "VmHWM: %ld kB", &kib) == 1) break;
        fclose(f);
    }
    return kib > 0 ? kib : bc_ru_maxrss_kib();
}

/* A phase of small objects (16-256 B) as a program loading its input: n
 * objects built into obj[], replaced at random `replace` times, then all
 * freed. Adds the ops done; returns 0, or 1 when malloc failed. */
static BC_UNUSED int bc_small_phase(bc_rng *rng, unsigned char **obj, size_t n, uint64_t replace,
                                    uint64_t *ops, uint64_t *acc)
{
    for (size_t i = 0; i < n; i++) {
        size_t sz = 16 + bc_rng_below(rng, 241);
        obj[i] = malloc(sz);
        if (!obj[i]) return 1;
        obj[i][0] = (unsigned char)sz;
        obj[i][sz - 1] = (unsigned char)i;
        (*ops)++;
    }
    for (uint64_t k = 0; k < replace; k++) {
        size_t i = bc_rng_below(rng, (uint32_t)n);
        *acc += obj[i][0];
        free(obj[i]);
        size_t sz = 16 + bc_rng_below(rng, 241);
        obj[i] = malloc(sz);
        if (!obj[i]) return 1;
        obj[i][0] = (unsigned char)sz;
        *ops += 2;
    }
    for (size_t i = 0; i < n; i++) { *acc += obj[i][0]; free(obj[i]); (*ops)++; }
    return 0;
}

/* --------------------------------------------------------- soak samples */

/* The current RSS in KiB (/proc/self/statm), for a soak's samples. */
static BC_UNUSED long bc_rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The CPU seconds of the whole process so far. */
static BC_UNUSED double bc_cpu_s(void)
{
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    return (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9;
}

/* Sleeps until bc_now_ns() reaches t (at once when it has). */
static BC_UNUSED void bc_sleep_until(uint64_t t)
{
    uint64_t now = bc_now_ns();
    if (t <= now) return;
    uint64_t d = t - now;
    struct timespec ts = {(time_t)(d / 1000000000ull), (long)(d % 1000000000ull)};
    nanosleep(&ts, NULL);
}

/* One soak sample (bench/runner.py reads it):
 *     sample t=SECONDS ops=N rss_kib=N cpu=PROCESS_CPU_SECONDS[ EXTRA]
 * t counted from t0; extra: more fields, or NULL. */
static BC_UNUSED void bc_sample(uint64_t t0, uint64_t now, uint64_t ops, const char *extra)
{
    printf("sample t=%.3f ops=%llu rss_kib=%ld cpu=%.3f%s%s\n", (double)(now - t0) / 1e9,
           (unsigned long long)ops, bc_rss_kib(), bc_cpu_s(), extra ? " " : "", extra ? extra : "");
    fflush(stdout);
}

static BC_UNUSED void bc_report(uint64_t ops, uint64_t ns)
{
    double secs = (double)ns / 1e9;
    if (secs <= 0) secs = 1e-9;
    printf("Ops = %llu\n", (unsigned long long)ops);
    printf("Time = %.6f s\n", secs);
    printf("Throughput = %.0f ops/s\n", (double)ops / secs);
    printf("Peak RSS = %ld KiB\n", bc_peak_rss_kib());
    printf("ru_maxrss = %ld KiB\n", bc_ru_maxrss_kib());
    fflush(stdout);
}

#endif /* BENCH_COMMON_H */
