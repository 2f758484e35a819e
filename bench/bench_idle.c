/* bench_idle [SIZE] [TOTAL_MB] [IDLE_MS] [LIGHT_MS] [KEEP_PERMILLE] [SEED]
 *
 * Memory over time: does an allocator give back what a program freed when
 * the program then goes quiet? The program fills TOTAL_MB with blocks of
 * SIZE bytes (every byte written), frees all but KEEP_PERMILLE of them in a
 * scattered order, then
 *   idle   sleeps IDLE_MS, calling no allocator function at all;
 *   light  for LIGHT_MS makes one malloc(64) and free every 10 ms, sleeping
 *          in between (a service that is up but quiet).
 * RSS is sampled every 100 ms from /proc/self/statm and printed as
 *   rss T_MS KIB PHASE
 * lines (a timeline to draw), then the summary:
 *   live_kib (the blocks kept and the program's own two arrays of n
 *   words), peak_kib, idle_end_kib, light_end_kib, and returned_ms: the
 *   first sample, counted from the end of the frees, at which RSS was at
 *   most the bytes still live + 32 MiB (-1: never).
 * Defaults: 120 1200 8000 4000 0 1 (the shape of issue 61). Throughput is
 * the fill and free rate: one op = one malloc or free. */
#include "bench_common.h"

#include <time.h>

static size_t rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (size_t)(sysconf(_SC_PAGESIZE) / 1024);
}

static void sleep_ms(uint64_t ms)
{
    struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0) {
    }
}

typedef struct {
    uint64_t t0;              /* end of the frees, ns */
    size_t threshold_kib;     /* live + 32 MiB */
    long returned_ms;
    uint64_t next_sample;
} sampler;

static size_t sample(sampler *s, const char *phase)
{
    uint64_t now = bc_now_ns();
    size_t kib = rss_kib();
    long ms = (long)((now - s->t0) / 1000000);
    printf("rss %ld %zu %s\n", ms, kib, phase);
    if (s->returned_ms < 0 && kib <= s->threshold_kib) s->returned_ms = ms;
    return kib;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 6, "[SIZE] [TOTAL_MB] [IDLE_MS] [LIGHT_MS] [KEEP_PERMILLE] [SEED]",
             "  Fill TOTAL_MB with SIZE-byte blocks, free all but KEEP_PERMILLE of them,\n"
             "  then idle IDLE_MS (no allocator call) and run lightly LIGHT_MS (one\n"
             "  malloc/free every 10 ms); RSS every 100 ms. Defaults 120 1200 8000 4000 0 1.\n");
    size_t size = (size_t)bc_arg_u64(argc, argv, 1, 120);
    size_t total_mb = (size_t)bc_arg_u64(argc, argv, 2, 1200);
    uint64_t idle_ms = bc_arg_u64(argc, argv, 3, 8000);
    uint64_t light_ms = bc_arg_u64(argc, argv, 4, 4000);
    uint64_t keep = bc_arg_u64(argc, argv, 5, 0);
    uint64_t seed = bc_arg_u64(argc, argv, 6, 1);
    if (size == 0 || keep > 1000) {
        bc_print_usage(stderr);
        return 2;
    }
    bc_print_allocator();
    printf("bench: idle size=%zu total_mb=%zu idle_ms=%llu light_ms=%llu keep_permille=%llu seed=%llu\n",
           size, total_mb, (unsigned long long)idle_ms, (unsigned long long)light_ms,
           (unsigned long long)keep, (unsigned long long)seed);
    size_t n = (total_mb << 20) / size;
    if (n == 0) n = 1;
    unsigned char **obj = malloc(n * sizeof *obj);
    size_t *order = malloc(n * sizeof *order);
    if (!obj || !order) return 1;
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    uint64_t acc = 0, t_start = bc_now_ns();
    for (size_t i = 0; i < n; i++) {
        obj[i] = malloc(size);
        if (!obj[i]) { printf("malloc failed at block %zu\n", i); return 1; }
        memset(obj[i], (int)(i * 7 + 1), size);
        order[i] = i;
    }
    size_t peak = rss_kib();
    /* a scattered order: neighbours in memory are freed far apart in time */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = bc_rng_below(&rng, (uint32_t)(i + 1 > UINT32_MAX ? UINT32_MAX : i + 1));
        size_t t = order[i]; order[i] = order[j]; order[j] = t;
    }
    /* live: the blocks kept, and this program's own two arrays of n words */
    size_t kept = n * keep / 1000, live = 2 * n * sizeof(void *);
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        unsigned char *p = obj[i];
        if (p[0] != (unsigned char)(i * 7 + 1) || p[size - 1] != (unsigned char)(i * 7 + 1)) {
            printf("block %zu corrupted\n", i);
            return 1;
        }
        acc = bc_mix(acc, p[size / 2]);
        if (k < kept) { live += size; continue; }
        free(p);
        obj[i] = NULL;
    }
    uint64_t t_freed = bc_now_ns();
    size_t after_free = rss_kib();
    if (after_free > peak) peak = after_free;
    /* the ops: every malloc and free; the time: the fill and the frees */
    sampler s = { t_freed, live / 1024 + 32 * 1024, -1, 0 };
    printf("rss 0 %zu freed\n", after_free);
    size_t last = after_free;
    for (uint64_t t = 100; t <= idle_ms; t += 100) {
        sleep_ms(100);
        last = sample(&s, "idle");
    }
    size_t idle_end = last;
    uint64_t light_t0 = bc_now_ns(), next = light_t0 + 100000000ull;
    while (bc_now_ns() - light_t0 < light_ms * 1000000ull) {
        unsigned char *q = malloc(64);
        if (!q) return 1;
        q[0] = 1; q[63] = 2;  /* (not in the digest: the phase is timed) */
        free(q);
        sleep_ms(10);
        if (bc_now_ns() >= next) {
            last = sample(&s, "light");
            next += 100000000ull;
        }
    }
    size_t light_end = last;
    for (size_t k = 0; k < kept; k++) free(obj[order[k]]);
    printf("live_kib %zu\npeak_kib %zu\nidle_end_kib %zu\nlight_end_kib %zu\nreturned_ms %ld\n",
           live / 1024, peak, idle_end, light_end, s.returned_ms);
    bc_report(2 * (uint64_t)n - kept, t_freed - t_start);
    bc_work(acc);
    free(obj);
    free(order);
    return 0;
}
