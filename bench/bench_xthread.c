/* bench_xthread [PAIRS] [BLOCKS] [MIN] [MAX] [SEED] [BATCH]
 *
 * Producer/consumer pipelines: PAIRS producer threads each allocate BLOCKS
 * blocks of random sizes in [MIN, MAX], write them, and pass them in batches
 * of BATCH through a bounded single-producer/single-consumer ring to their
 * consumer thread, which reads and frees them. Every block is freed by a
 * thread other than the one that allocated it (remote free). Producer i and
 * consumer i are pinned to different CPUs (when there are two), so that the
 * pipeline really runs in parallel, as it would in a server.
 * Defaults: 2 2000000 16 512 7 64. One op = one block (malloc + remote free). */
#include "bench_common.h"
#include <pthread.h>
#include <stdatomic.h>

#define RING 64                     /* batches in flight per pipeline */

static uint64_t g_blocks;
static size_t g_min, g_max, g_batch;
static uint64_t g_seed;
static pthread_barrier_t g_bar;

struct pipe {
    _Alignas(64) atomic_size_t head; /* written by the producer */
    _Alignas(64) atomic_size_t tail; /* written by the consumer */
    _Alignas(64) unsigned char **slots; /* RING * g_batch pointers */
    int id;
    uint64_t digest;
    size_t most;                     /* most batches in flight, seen by the producer */
    pthread_t prod, cons;
};

static void *producer(void *arg)
{
    struct pipe *p = arg;
    bc_rng rng;
    bc_rng_seed(&rng, g_seed * 31u + (uint64_t)p->id);
    bc_pin_self(2 * p->id);
    pthread_barrier_wait(&g_bar);
    uint64_t made = 0;
    size_t head = 0;
    while (made < g_blocks) {
        while (head - atomic_load_explicit(&p->tail, memory_order_acquire) >= RING) sched_yield();
        unsigned char **b = p->slots + (head % RING) * g_batch;
        size_t n = g_batch;
        if (g_blocks - made < n) n = (size_t)(g_blocks - made);
        for (size_t i = 0; i < g_batch; i++) {
            if (i >= n) { b[i] = NULL; continue; }
            size_t sz = bc_rng_range(&rng, g_min, g_max);
            unsigned char *q = malloc(sz);
            if (!q) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
            q[0] = (unsigned char)sz;
            q[sz - 1] = (unsigned char)(sz >> 8);
            b[i] = q;
        }
        made += n;
        atomic_store_explicit(&p->head, ++head, memory_order_release);
        size_t inflight = head - atomic_load_explicit(&p->tail, memory_order_relaxed);
        if (inflight > p->most) p->most = inflight;
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct pipe *p = arg;
    bc_pin_self(2 * p->id + 1);
    pthread_barrier_wait(&g_bar);
    uint64_t got = 0, acc = 0;
    size_t tail = 0;
    while (got < g_blocks) {
        while (atomic_load_explicit(&p->head, memory_order_acquire) == tail) sched_yield();
        unsigned char **b = p->slots + (tail % RING) * g_batch;
        for (size_t i = 0; i < g_batch; i++) {
            if (!b[i]) continue;
            acc += b[i][0];
            free(b[i]);
            got++;
        }
        atomic_store_explicit(&p->tail, ++tail, memory_order_release);
    }
    p->digest = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 6, "[PAIRS] [BLOCKS] [MIN] [MAX] [SEED] [BATCH]",
             "  Producer/consumer pipelines: PAIRS producer threads each allocate BLOCKS\n  blocks of random sizes in [MIN, MAX], write them, and pass them in batches\n  of BATCH through a bounded single-producer/single-consumer ring to their\n  consumer thread, which reads and frees them. Every block is freed by a\n  thread other than the one that allocated it (remote free). Producer i and\n  consumer i are pinned to different CPUs (when there are two), so that the\n  pipeline really runs in parallel, as it would in a server.\n  Defaults: 2 2000000 16 512 7 64. One op = one block (malloc + remote free).\n");
    int pairs = (int)bc_arg_u64(argc, argv, 1, 2);
    g_blocks = bc_arg_u64(argc, argv, 2, 2000000);
    g_min = (size_t)bc_arg_u64(argc, argv, 3, 16);
    g_max = (size_t)bc_arg_u64(argc, argv, 4, 512);
    g_seed = bc_arg_u64(argc, argv, 5, 7);
    g_batch = (size_t)bc_arg_u64(argc, argv, 6, 64);
    if (pairs < 1 || pairs > 512 || g_min == 0 || g_max < g_min || g_batch == 0 || g_batch > 65536) {
        fprintf(stderr, "usage: bench_xthread [PAIRS] [BLOCKS] [MIN] [MAX] [SEED] [BATCH]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: xthread pairs=%d blocks=%llu min=%zu max=%zu seed=%llu batch=%zu\n", pairs,
           (unsigned long long)g_blocks, g_min, g_max, (unsigned long long)g_seed, g_batch);

    struct pipe *ps = aligned_alloc(64, sizeof(struct pipe) * (size_t)pairs);
    if (!ps) return 1;
    memset(ps, 0, sizeof(struct pipe) * (size_t)pairs);
    pthread_barrier_init(&g_bar, NULL, (unsigned)(2 * pairs + 1));
    for (int i = 0; i < pairs; i++) {
        ps[i].id = i;
        ps[i].slots = calloc(RING * g_batch, sizeof(unsigned char *));
        if (!ps[i].slots) return 1;
        pthread_create(&ps[i].prod, NULL, producer, &ps[i]);
        pthread_create(&ps[i].cons, NULL, consumer, &ps[i]);
    }
    pthread_barrier_wait(&g_bar);
    uint64_t t0 = bc_now_ns();
    uint64_t h = bc_mix(0, g_blocks);
    for (int i = 0; i < pairs; i++) {
        pthread_join(ps[i].prod, NULL);
        pthread_join(ps[i].cons, NULL);
    }
    uint64_t t1 = bc_now_ns();
    size_t most = 0;
    for (int i = 0; i < pairs; i++) {
        h = bc_mix(h, ps[i].digest);
        if (ps[i].most > most) most = ps[i].most;
        free(ps[i].slots);
    }
    /* the blocks a pipeline held at once: a consumer that falls behind
     * lets the producer fill the ring, and peak RSS follows */
    printf("in flight: at most %zu of %d batches\n", most, RING);
    free(ps);
    bc_work(h);
    bc_report(g_blocks * (uint64_t)pairs, t1 - t0);
    return 0;
}
