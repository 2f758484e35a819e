/* bench_soak SECONDS [THREADS] [SAMPLE_MS] [WS] [SEED] [PIN] [TOUCH]
 *
 * A long-running mixed workload for `make soak`: THREADS threads churn a
 * working set of WS blocks each (90% 16 B-1 KiB, 9% 1-32 KiB, 1% 32-512 KiB);
 * one replacement in eight goes through a shared exchange table, so blocks
 * are freed by threads that did not allocate them. Every SAMPLE_MS the main
 * thread prints a sample of the current RSS and the ops done so far:
 *     sample t=SECONDS ops=N rss_kib=N cpu=PROCESS_CPU_SECONDS
 * A healthy allocator reaches a plateau: flat RSS, flat throughput. The CPU
 * time lets the harness compute ops per CPU-second, which other load on a
 * shared machine does not disturb as much as ops per wall-second.
 * PIN=1 (default) puts all the workers on one CPU: they still free each
 * other's blocks, but the work per CPU-second no longer depends on whether
 * the scheduler happened to run them side by side, so a drift in it is the
 * allocator's. PIN=0 lets them run anywhere.
 * TOUCH=1 (default) fills every block, as programs do; TOUCH=0 writes only its
 * first and last byte. With TOUCH=0 RSS creeps up for minutes under any
 * allocator that reuses memory: each reuse of a block at a new offset faults
 * in pages the previous tenant never touched, so RSS converges slowly towards
 * the footprint a filling program has from the start (hakmem, 50 s: 35 -> 40
 * MiB with TOUCH=0; 89-96 MiB, no trend, with TOUCH=1). The soak is about
 * the allocator's drift, not that convergence.
 * Defaults: 60 2 1000 4000 5 1 1. One op = one replacement (free + malloc). */
#include "bench_common.h"
#include <pthread.h>
#include <stdatomic.h>

#define XCHG 4096

static int g_threads, g_pin, g_touch;
static size_t g_ws;
static uint64_t g_seed;
static atomic_int g_stop;
static _Atomic(unsigned char *) g_xchg[XCHG];

struct worker {
    _Alignas(64) atomic_uint_fast64_t ops;
    pthread_t th;
    int id;
    uint64_t acc;
};

static size_t pick_size(bc_rng *r)
{
    uint32_t c = bc_rng_below(r, 100);
    if (c < 90) return bc_rng_range(r, 16, 1024);
    if (c < 99) return bc_rng_range(r, 1025, 32768);
    return bc_rng_range(r, 32769, 512 << 10);
}

static unsigned char *fresh(bc_rng *r)
{
    size_t sz = pick_size(r);
    unsigned char *p = malloc(sz);
    if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
    if (g_touch) memset(p, (int)(sz & 0xff), sz);  /* as a program that fills its blocks */
    p[0] = (unsigned char)sz;
    p[sz - 1] = 1;
    return p;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bc_rng rng;
    bc_rng_seed(&rng, g_seed * 131u + (uint64_t)w->id);
    if (g_pin) bc_pin_self(0);
    unsigned char **slot = calloc(g_ws, sizeof *slot);
    if (!slot) exit(1);
    for (size_t i = 0; i < g_ws; i++) slot[i] = fresh(&rng);
    uint64_t n = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int j = 0; j < 256; j++) {
            uint32_t k = bc_rng_below(&rng, (uint32_t)g_ws);
            unsigned char *old = slot[k];
            w->acc += old[0];
            if ((bc_rng_next(&rng) & 7) == 0) {
                /* hand our block to whoever comes by; free what was there */
                unsigned char *other = atomic_exchange(&g_xchg[bc_rng_below(&rng, XCHG)], old);
                if (other) free(other);
            } else {
                free(old);
            }
            slot[k] = fresh(&rng);
        }
        n += 256;
        atomic_store_explicit(&w->ops, n, memory_order_relaxed);
    }
    for (size_t i = 0; i < g_ws; i++) free(slot[i]);
    free(slot);
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 7, "SECONDS [THREADS] [SAMPLE_MS] [WS] [SEED] [PIN] [TOUCH]",
             "  A long-running mixed workload for `make soak`: THREADS threads churn a\n  working set of WS blocks each (90% 16 B-1 KiB, 9% 1-32 KiB, 1% 32-512 KiB);\n  one replacement in eight goes through a shared exchange table, so blocks\n  are freed by threads that did not allocate them. Every SAMPLE_MS the main\n  thread prints a sample of the current RSS and the ops done so far:\n      sample t=SECONDS ops=N rss_kib=N cpu=PROCESS_CPU_SECONDS\n  A healthy allocator reaches a plateau: flat RSS, flat throughput. The CPU\n  time lets the harness compute ops per CPU-second, which other load on a\n  shared machine does not disturb as much as ops per wall-second.\n  PIN=1 (default) puts all the workers on one CPU: they still free each\n  other's blocks, but the work per CPU-second no longer depends on whether\n  the scheduler happened to run them side by side, so a drift in it is the\n  allocator's. PIN=0 lets them run anywhere.\n  TOUCH=1 (default) fills every block, as programs do; TOUCH=0 writes only its\n  first and last byte. With TOUCH=0 RSS creeps up for minutes under any\n  allocator that reuses memory: each reuse of a block at a new offset faults\n  in pages the previous tenant never touched, so RSS converges slowly towards\n  the footprint a filling program has from the start (hakmem, 50 s: 35 -> 40\n  MiB with TOUCH=0; 89-96 MiB, no trend, with TOUCH=1). The soak is about\n  the allocator's drift, not that convergence.\n  Defaults: 60 2 1000 4000 5 1 1. One op = one replacement (free + malloc).\n");
    uint64_t seconds = bc_arg_u64(argc, argv, 1, 60);
    g_threads = (int)bc_arg_u64(argc, argv, 2, 2);
    uint64_t sample_ms = bc_arg_u64(argc, argv, 3, 1000);
    g_ws = (size_t)bc_arg_u64(argc, argv, 4, 4000);
    g_seed = bc_arg_u64(argc, argv, 5, 5);
    g_pin = (int)bc_arg_u64(argc, argv, 6, 1);
    g_touch = (int)bc_arg_u64(argc, argv, 7, 1);
    if (g_threads < 1 || g_threads > 1024 || g_ws == 0 || sample_ms == 0) {
        fprintf(stderr, "usage: bench_soak SECONDS [THREADS] [SAMPLE_MS] [WS] [SEED] [PIN] [TOUCH]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: soak seconds=%llu threads=%d sample_ms=%llu ws=%zu seed=%llu pin=%d touch=%d\n",
           (unsigned long long)seconds, g_threads, (unsigned long long)sample_ms, g_ws,
           (unsigned long long)g_seed, g_pin, g_touch);
    fflush(stdout);
    struct worker *w = aligned_alloc(64, sizeof *w * (size_t)g_threads);
    memset(w, 0, sizeof *w * (size_t)g_threads);
    uint64_t t0 = bc_now_ns();
    for (int i = 0; i < g_threads; i++) {
        w[i].id = i;
        pthread_create(&w[i].th, NULL, run, &w[i]);
    }
    uint64_t end = t0 + seconds * 1000000000ull, next = t0;
    uint64_t ops = 0;
    for (;;) {
        next += sample_ms * 1000000ull;
        bc_sleep_until(next);
        uint64_t now = bc_now_ns();
        ops = 0;
        for (int i = 0; i < g_threads; i++) ops += atomic_load(&w[i].ops);
        bc_sample(t0, now, ops, NULL);
        if (now >= end) break;
    }
    atomic_store(&g_stop, 1);
    uint64_t t1 = bc_now_ns();
    ops = 0;
    for (int i = 0; i < g_threads; i++) {
        pthread_join(w[i].th, NULL);
        ops += atomic_load(&w[i].ops);
    }
    for (int i = 0; i < XCHG; i++) free(atomic_load(&g_xchg[i]));
    free(w);
    bc_report(ops, t1 - t0);
    return 0;
}
