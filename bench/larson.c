/* larson SECONDS MIN MAX CHUNKS ROUNDS SEED THREADS
 *
 * A server simulation after the benchmark of Larson and Krishnan ("Memory
 * allocation for long-running server applications", ISMM 1998), written here
 * from its published description (not from its code):
 *
 *  - the heap starts with THREADS*CHUNKS live blocks of random sizes in
 *    [MIN, MAX], allocated by the main thread;
 *  - THREADS worker "lineages" each own CHUNKS of those slots. A worker does
 *    ROUNDS*CHUNKS replacements: pick one of its slots at random, free the
 *    block there, allocate a new one of random size, write to it;
 *  - then, like a server that hands a connection to a fresh thread, the worker
 *    starts its successor on the same slots and exits. The successor frees the
 *    blocks its predecessor allocated, after the predecessor is gone;
 *  - after SECONDS the lineages stop; throughput = replacements / elapsed.
 *
 * One op = one replacement (one free + one malloc). The run is timed, so the
 * amount of work depends on speed; the random sequence of each lineage does
 * not depend on the allocator.
 * Published parameter sets: 10 2048 32768 10000 1 12345 4 and
 * 5 8 1000 5000 100 4141 2. */
#include "bench_common.h"
#include <pthread.h>
#include <stdatomic.h>

static size_t g_min, g_max, g_chunks;
static uint64_t g_rounds;
static atomic_int g_stop;
static atomic_int g_live;          /* lineages still running */
static atomic_uint_fast64_t g_threads_started;

struct lineage {
    int id;
    unsigned char **slot;          /* CHUNKS slots (a slice of the shared array) */
    size_t *len;
    bc_rng rng;
    uint64_t ops;
    uint64_t acc;
    uint64_t generation;
};

static void *worker(void *arg);

static void start_worker(struct lineage *l)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc;
    while ((rc = pthread_create(&th, &at, worker, l)) != 0) {
        /* EAGAIN: the predecessor threads have not been reaped yet */
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&g_threads_started, 1);
    pthread_attr_destroy(&at);
}

static void *worker(void *arg)
{
    struct lineage *l = arg;
    uint64_t n = g_rounds * g_chunks;
    for (uint64_t i = 0; i < n; i++) {
        if ((i & 1023) == 0 && atomic_load_explicit(&g_stop, memory_order_relaxed)) break;
        uint32_t k = bc_rng_below(&l->rng, (uint32_t)g_chunks);
        unsigned char *old = l->slot[k];
        l->acc += old[0] ^ old[l->len[k] - 1];
        free(old);
        size_t sz = bc_rng_range(&l->rng, g_min, g_max);
        unsigned char *p = malloc(sz);
        if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
        p[0] = (unsigned char)k;
        p[sz - 1] = (unsigned char)sz;
        l->slot[k] = p;
        l->len[k] = sz;
        l->ops++;
    }
    l->generation++;
    if (!atomic_load(&g_stop)) {
        start_worker(l);          /* the successor takes over our blocks */
    } else {
        atomic_fetch_sub(&g_live, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 7, "SECONDS MIN MAX CHUNKS ROUNDS SEED THREADS",
             "  A server simulation after the benchmark of Larson and Krishnan (\"Memory\n  allocation for long-running server applications\", ISMM 1998), written here\n  from its published description (not from its code).\n");
    if (argc < 8) {
        fprintf(stderr, "usage: larson SECONDS MIN MAX CHUNKS ROUNDS SEED THREADS\n"
                        "  e.g. larson 10 2048 32768 10000 1 12345 4\n");
        return 2;
    }
    uint64_t seconds = bc_arg_u64(argc, argv, 1, 10);
    g_min = (size_t)bc_arg_u64(argc, argv, 2, 2048);
    g_max = (size_t)bc_arg_u64(argc, argv, 3, 32768);
    g_chunks = (size_t)bc_arg_u64(argc, argv, 4, 10000);
    g_rounds = bc_arg_u64(argc, argv, 5, 1);
    uint64_t seed = bc_arg_u64(argc, argv, 6, 12345);
    int threads = (int)bc_arg_u64(argc, argv, 7, 4);
    if (g_min == 0 || g_max < g_min || g_chunks == 0 || g_chunks > 0xffffffffu || g_rounds == 0 ||
        threads < 1 || threads > 4096) {
        fprintf(stderr, "larson: bad parameters\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: larson seconds=%llu min=%zu max=%zu chunks=%zu rounds=%llu seed=%llu threads=%d\n",
           (unsigned long long)seconds, g_min, g_max, g_chunks, (unsigned long long)g_rounds,
           (unsigned long long)seed, threads);

    size_t total = (size_t)threads * g_chunks;
    unsigned char **slot = calloc(total, sizeof *slot);
    size_t *len = calloc(total, sizeof *len);
    struct lineage *lin = calloc((size_t)threads, sizeof *lin);
    if (!slot || !len || !lin) return 1;

    /* warm-up: the main thread allocates the whole initial heap */
    bc_rng boot;
    bc_rng_seed(&boot, seed);
    for (size_t i = 0; i < total; i++) {
        size_t sz = bc_rng_range(&boot, g_min, g_max);
        slot[i] = malloc(sz);
        if (!slot[i]) return 1;
        slot[i][0] = (unsigned char)i;
        slot[i][sz - 1] = (unsigned char)sz;
        len[i] = sz;
    }
    for (int t = 0; t < threads; t++) {
        lin[t].id = t;
        lin[t].slot = slot + (size_t)t * g_chunks;
        lin[t].len = len + (size_t)t * g_chunks;
        bc_rng_seed(&lin[t].rng, seed * 7919u + (uint64_t)t + 1);
    }

    atomic_store(&g_live, threads);
    uint64_t t0 = bc_now_ns();
    for (int t = 0; t < threads; t++) start_worker(&lin[t]);
    struct timespec ts = {(time_t)seconds, 0};
    while (nanosleep(&ts, &ts) != 0) {}
    atomic_store(&g_stop, 1);
    while (atomic_load(&g_live) > 0) {
        struct timespec w = {0, 200000};
        nanosleep(&w, NULL);
    }
    uint64_t t1 = bc_now_ns();

    uint64_t ops = 0, h = 0;
    for (int t = 0; t < threads; t++) {
        ops += lin[t].ops;
        h = bc_mix(h, lin[t].acc);
    }
    for (size_t i = 0; i < total; i++) free(slot[i]);
    free(slot);
    free(len);
    free(lin);
    printf("threads created: %llu\n", (unsigned long long)atomic_load(&g_threads_started));
    bc_work(h);   /* informative only: the amount of work depends on speed */
    bc_report(ops, t1 - t0);
    return 0;
}
