/* bench_false_sharing [THREADS] [ROUNDS] [WRITES] [OBJSIZE]
 *
 * Cache-line sharing caused by the allocator (after the Hoard benchmarks
 * cache-scratch and cache-thrash). Each round:
 *  1. passive: the main thread allocates THREADS small objects back to back
 *     and hands object i to worker i, which writes it WRITES times. If the
 *     allocator packed them into one cache line, the workers fight over it.
 *  2. the worker frees the object it was given (a remote free) and
 *     allocates its own object of the same size;
 *  3. active: each worker writes its own object WRITES times. An allocator
 *     that hands freed or neighbouring blocks to different threads makes
 *     them share lines again.
 * Defaults: 4 100 100000 8. One op = one write to an object. */
#include "bench_common.h"
#include <pthread.h>

static int g_threads;
static uint64_t g_rounds, g_writes;
static size_t g_size;
static pthread_barrier_t g_bar;
static volatile unsigned char **g_given;

struct worker { pthread_t th; int id; uint64_t acc; };

static uint64_t hammer(volatile unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) p[0]++;
    return p[0];
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bc_pin_self(w->id);   /* spread the workers over the CPUs */
    for (uint64_t r = 0; r < g_rounds; r++) {
        pthread_barrier_wait(&g_bar);            /* objects handed out */
        volatile unsigned char *mine = g_given[w->id];
        w->acc += hammer(mine, g_writes);
        free((void *)mine);
        volatile unsigned char *own = malloc(g_size);
        if (!own) { fprintf(stderr, "malloc failed\n"); exit(1); }
        memset((void *)own, 0, g_size);
        w->acc += hammer(own, g_writes);
        free((void *)own);
        pthread_barrier_wait(&g_bar);            /* round done */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 4, "[THREADS] [ROUNDS] [WRITES] [OBJSIZE]",
             "  Cache-line sharing caused by the allocator (after the Hoard benchmarks\n  cache-scratch and cache-thrash). Each round:\n   1. passive: the main thread allocates THREADS small objects back to back\n      and hands object i to worker i, which writes it WRITES times. If the\n      allocator packed them into one cache line, the workers fight over it.\n   2. the worker frees the object it was given (a remote free) and\n      allocates its own object of the same size;\n   3. active: each worker writes its own object WRITES times. An allocator\n      that hands freed or neighbouring blocks to different threads makes\n      them share lines again.\n  Defaults: 4 100 100000 8. One op = one write to an object.\n");
    g_threads = (int)bc_arg_u64(argc, argv, 1, 4);
    g_rounds = bc_arg_u64(argc, argv, 2, 100);
    g_writes = bc_arg_u64(argc, argv, 3, 100000);
    g_size = (size_t)bc_arg_u64(argc, argv, 4, 8);
    if (g_threads < 1 || g_threads > 1024 || g_size == 0) {
        fprintf(stderr, "usage: bench_false_sharing [THREADS] [ROUNDS] [WRITES] [OBJSIZE]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: false_sharing threads=%d rounds=%llu writes=%llu objsize=%zu\n", g_threads,
           (unsigned long long)g_rounds, (unsigned long long)g_writes, g_size);

    g_given = calloc((size_t)g_threads, sizeof *g_given);
    struct worker *w = calloc((size_t)g_threads, sizeof *w);
    pthread_barrier_init(&g_bar, NULL, (unsigned)g_threads + 1);
    for (int i = 0; i < g_threads; i++) {
        w[i].id = i;
        pthread_create(&w[i].th, NULL, run, &w[i]);
    }
    uint64_t same_line = 0;
    uint64_t t0 = bc_now_ns();
    for (uint64_t r = 0; r < g_rounds; r++) {
        for (int i = 0; i < g_threads; i++) {
            unsigned char *p = malloc(g_size);
            if (!p) return 1;
            memset(p, 0, g_size);
            g_given[i] = p;
            if (i > 0 && ((uintptr_t)g_given[i] >> 6) == ((uintptr_t)g_given[i - 1] >> 6)) same_line++;
        }
        pthread_barrier_wait(&g_bar);
        pthread_barrier_wait(&g_bar);
    }
    uint64_t t1 = bc_now_ns();
    uint64_t h = bc_mix(0, (uint64_t)g_threads);
    for (int i = 0; i < g_threads; i++) {
        pthread_join(w[i].th, NULL);
        h = bc_mix(h, w[i].acc);
    }
    free(w);
    free((void *)g_given);
    printf("neighbours sharing a cache line (passive phase): %llu of %llu\n",
           (unsigned long long)same_line, (unsigned long long)(g_rounds * (uint64_t)(g_threads - 1)));
    bc_work(h);
    bc_report(g_rounds * (uint64_t)g_threads * g_writes * 2, t1 - t0);
    return 0;
}
