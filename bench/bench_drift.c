/* bench_drift [MESSAGES] [DEPTH] [START_KB] [SEED]
 *
 * Producer/consumer with drifting sizes: a producer thread builds messages
 * (large buffers, written through) whose size creeps upward, 0.5% per
 * message from START_KB, and hands them to a consumer thread, which keeps
 * the last DEPTH messages and frees the oldest. Defaults 3000 16 256 5.
 *
 * No freed buffer ever fits a later request, so a large-block cache only
 * holds memory: with a fixed cache (by default 128 entries / 64 MiB,
 * src/base/knobs.c) the process carries up to 64 MiB of dead buffers next to its
 * live set. The learner
 * (HAKMEM_LEARN=1) should see the cache serve nothing and shrink it. One op
 * = one malloc or free. */
#include "bench_common.h"

#include <pthread.h>

static unsigned char **ring;
static size_t *lens;
static size_t cap, head, tail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;
static uint64_t consumed_acc, consumer_ops;
static size_t depth;

static void *consumer(void *arg)
{
    (void)arg;
    unsigned char **held = calloc(depth + 1, sizeof *held);
    size_t *hlen = calloc(depth + 1, sizeof *hlen);
    size_t n = 0, pos = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (head == tail && !done) pthread_cond_wait(&cv, &mu);
        if (head == tail && done) { pthread_mutex_unlock(&mu); break; }
        unsigned char *p = ring[tail % cap];
        size_t len = lens[tail % cap];
        tail++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        consumed_acc += p[0] + p[len - 1];
        if (n == depth) {           /* drop the oldest */
            free(held[pos]);
            consumer_ops++;
            n--;
        }
        held[pos] = p;
        hlen[pos] = len;
        pos = (pos + 1) % depth;
        n++;
    }
    for (size_t i = 0; i < depth; i++) if (held[i]) { free(held[i]); consumer_ops++; }
    free(held);
    free(hlen);
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 4, "[MESSAGES] [DEPTH] [START_KB] [SEED]",
             "  Producer/consumer with drifting sizes: a producer thread builds messages\n  (large buffers, written through) whose size creeps upward, 0.5% per\n  message from START_KB, and hands them to a consumer thread, which keeps\n  the last DEPTH messages and frees the oldest. Defaults 3000 16 256 5.\n");
    uint64_t messages = bc_arg_u64(argc, argv, 1, 3000);
    depth = (size_t)bc_arg_u64(argc, argv, 2, 16);
    size_t start_kb = (size_t)bc_arg_u64(argc, argv, 3, 256);
    uint64_t seed = bc_arg_u64(argc, argv, 4, 5);
    if (depth == 0 || depth > 100000 || start_kb < 64) {
        fprintf(stderr, "usage: bench_drift [MESSAGES] [DEPTH] [START_KB] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: drift messages=%llu depth=%zu start_kb=%zu seed=%llu\n",
           (unsigned long long)messages, depth, start_kb, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    cap = 8;
    ring = calloc(cap, sizeof *ring);
    lens = calloc(cap, sizeof *lens);
    pthread_t th;
    pthread_create(&th, NULL, consumer, NULL);
    uint64_t t0 = bc_now_ns();
    double size = (double)start_kb * 1024.0;
    uint64_t ops = 0;
    for (uint64_t m = 0; m < messages; m++) {
        size_t sz = (size_t)size + bc_rng_below(&rng, 4096);
        if (sz > ((size_t)8 << 20)) size = (double)start_kb * 1024.0;  /* wrap around at 8 MiB */
        size *= 1.005;
        unsigned char *p = malloc(sz);
        if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
        memset(p, (int)m, sz);
        ops++;
        pthread_mutex_lock(&mu);
        while (head - tail == cap) pthread_cond_wait(&cv, &mu);
        ring[head % cap] = p;
        lens[head % cap] = sz;
        head++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    uint64_t t1 = bc_now_ns();
    free(ring);
    free(lens);
    bc_work(bc_mix(bc_mix(bc_mix(0, messages), depth), consumed_acc));
    bc_report(ops + consumer_ops, t1 - t0);
    return 0;
}
