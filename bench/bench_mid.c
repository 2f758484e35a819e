/* bench_mid THREADS [ITERS] [WS] [MIN] [MAX] [SEED]
 *
 * Mid-size blocks (default 2-32 KiB), Larson-style random replacement, each
 * thread on its own working set of WS slots: ITERS ops per thread, where one
 * op frees a random slot and refills it with a block of a random size (first
 * and last cache line written). Same work per thread whatever the thread
 * count; throughput = all ops / wall time.
 * Defaults: THREADS=1 ITERS=2000000 WS=1000 MIN=2048 MAX=32768 SEED=42. */
#include "bench_common.h"
#include <pthread.h>

static uint64_t g_iters;
static size_t g_ws, g_min, g_max;
static uint64_t g_seed;
static pthread_barrier_t g_bar;

struct worker { pthread_t th; int id; uint64_t digest; int failed; };

static void touch(unsigned char *p, size_t sz, unsigned char v)
{
    size_t n = sz < 64 ? sz : 64;
    memset(p, v, n);
    p[sz - 1] = v;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bc_rng rng;
    bc_rng_seed(&rng, g_seed * 1000003u + (uint64_t)w->id);
    unsigned char **slot = calloc(g_ws, sizeof *slot);
    size_t *len = calloc(g_ws, sizeof *len);
    if (!slot || !len) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < g_ws; i++) {
        size_t sz = bc_rng_range(&rng, g_min, g_max);
        slot[i] = malloc(sz);
        if (!slot[i]) { fprintf(stderr, "malloc failed\n"); exit(1); }
        touch(slot[i], sz, (unsigned char)i);
        len[i] = sz;
    }
    pthread_barrier_wait(&g_bar);
    uint64_t acc = 0;
    for (uint64_t it = 0; it < g_iters; it++) {
        uint32_t k = bc_rng_below(&rng, (uint32_t)g_ws);
        acc += slot[k][0] + slot[k][len[k] - 1];
        free(slot[k]);
        size_t sz = bc_rng_range(&rng, g_min, g_max);
        unsigned char *p = malloc(sz);
        if (!p) { w->failed = 1; break; }
        touch(p, sz, (unsigned char)it);
        slot[k] = p;
        len[k] = sz;
    }
    pthread_barrier_wait(&g_bar);
    for (size_t i = 0; i < g_ws; i++) free(slot[i]);
    free(slot);
    free(len);
    w->digest = bc_mix(acc, rng.s);
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 6, "THREADS [ITERS] [WS] [MIN] [MAX] [SEED]",
             "  Mid-size blocks (default 2-32 KiB), Larson-style random replacement, each\n  thread on its own working set of WS slots: ITERS ops per thread, where one\n  op frees a random slot and refills it with a block of a random size (first\n  and last cache line written). Same work per thread whatever the thread\n  count; throughput = all ops / wall time.\n  Defaults: THREADS=1 ITERS=2000000 WS=1000 MIN=2048 MAX=32768 SEED=42.\n");
    int threads = (int)bc_arg_u64(argc, argv, 1, 1);
    g_iters = bc_arg_u64(argc, argv, 2, 2000000);
    g_ws = (size_t)bc_arg_u64(argc, argv, 3, 1000);
    g_min = (size_t)bc_arg_u64(argc, argv, 4, 2048);
    g_max = (size_t)bc_arg_u64(argc, argv, 5, 32768);
    g_seed = bc_arg_u64(argc, argv, 6, 42);
    if (threads < 1 || threads > 1024 || g_ws == 0 || g_min == 0 || g_max < g_min) {
        fprintf(stderr, "usage: bench_mid THREADS [ITERS] [WS] [MIN] [MAX] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: mid threads=%d iters=%llu ws=%zu min=%zu max=%zu seed=%llu\n", threads,
           (unsigned long long)g_iters, g_ws, g_min, g_max, (unsigned long long)g_seed);

    struct worker *w = calloc((size_t)threads, sizeof *w);
    pthread_barrier_init(&g_bar, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        w[i].id = i;
        if (pthread_create(&w[i].th, NULL, run, &w[i])) { perror("pthread_create"); return 1; }
    }
    pthread_barrier_wait(&g_bar); /* all filled: go */
    uint64_t t0 = bc_now_ns();
    pthread_barrier_wait(&g_bar); /* all done */
    uint64_t t1 = bc_now_ns();
    uint64_t h = bc_mix(bc_mix(0, (uint64_t)threads), g_iters);
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].th, NULL);
        h = bc_mix(h, w[i].digest);
        failed |= w[i].failed;
    }
    if (failed) { fprintf(stderr, "allocation failed\n"); return 1; }
    free(w);
    bc_work(h);
    bc_report(g_iters * (uint64_t)threads, t1 - t0);
    return 0;
}
