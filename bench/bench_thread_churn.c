/* bench_thread_churn [ROUNDS] [THREADS] [SMALL] [MID] [LARGE] [HANDOFF] [WARMUP] [SEED]
 *
 * Short-lived threads, created and joined in rounds: ROUNDS times, start
 * THREADS threads, then join them all. Each thread
 *  - first frees the HANDOFF blocks left to it by a thread of the previous
 *    round (thread i takes those of thread i-1): every one of them is freed
 *    by a thread other than the (now dead) one that allocated it;
 *  - allocates SMALL blocks of 16 B-1 KiB, MID of 1-32 KiB and LARGE of
 *    64 KiB-4 MiB (uniform, log-uniform for the large), in a random order,
 *    freeing a random live block after about one allocation in four;
 *  - leaves HANDOFF of its live blocks to the next round and frees the rest.
 * Every block is filled with a pattern (small and mid: every byte; large: one
 * byte per 4 KiB page and the last 64 bytes) that is checked before the
 * free: a mismatch exits 1. After the last round main frees what is left.
 *
 * OS calls per thread lifetime: the first WARMUP rounds are warm-up. When
 * hakmem serves malloc, its counters (hak_stats_get, found with dlsym: the
 * struct is include/hakmem.h's) are read after the warm-up rounds are joined
 * and after the last round is joined, and the difference is printed
 *   os calls after warm-up: mmap=N munmap=N mremap=N madvise=N over K thread
 *   lifetimes (mmap per 100 lifetimes: X)
 * Other allocators: the same line with n/a (the harness's strace column
 * counts every allocator's calls, thread stacks included).
 *
 * The work digest depends only on the arguments: each thread draws from its
 * own generator seeded by (SEED, round, thread), and a round's hand-off is
 * read only after the round that wrote it was joined.
 * Defaults: 50 8 2000 100 3 8 2 7. One op = one malloc or free call. */
#include "bench_common.h"
#include "../include/hakmem.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

struct blk { unsigned char *p; size_t n; unsigned char v; };

static size_t rounds, nthreads, nsmall, nmid, nlarge, handoff, warmup;
static uint64_t seed;
static struct blk *hand[2];      /* hand[r & 1][thread * handoff + j]: written by round r */
static uint64_t *digest, *opcount; /* per (round, thread) */

enum { SMALL, MID, LARGE };

static size_t large_size(bc_rng *r)
{
    /* log-uniform over 64 KiB-4 MiB: a power-of-two band, uniform inside */
    size_t a = (size_t)1 << (16 + bc_rng_below(r, 6));
    return bc_rng_range(r, a, a * 2 - 1);
}

static void fill(struct blk *b)
{
    if (b->n <= 32 * KiB) {
        memset(b->p, b->v, b->n);
        return;
    }
    for (size_t off = 0; off < b->n; off += 4096) b->p[off] = b->v;
    memset(b->p + b->n - 64, b->v, 64);
}

/* 0 when the pattern is intact */
static int check(const struct blk *b)
{
    unsigned char bad = 0;
    if (b->n <= 32 * KiB) {
        for (size_t i = 0; i < b->n; i++) bad |= (unsigned char)(b->p[i] ^ b->v);
    } else {
        for (size_t off = 0; off < b->n; off += 4096) bad |= (unsigned char)(b->p[off] ^ b->v);
        for (size_t i = b->n - 64; i < b->n; i++) bad |= (unsigned char)(b->p[i] ^ b->v);
    }
    return bad != 0;
}

static void release(struct blk *b, uint64_t *h, uint64_t *ops, const char *who)
{
    if (check(b)) {
        fprintf(stderr, "bench_thread_churn: %s block of %zu bytes (pattern %02x) corrupted\n",
                who, b->n, b->v);
        exit(1);
    }
    *h = bc_mix(*h, b->n ^ ((uint64_t)b->v << 40));
    free(b->p);
    b->p = NULL;
    (*ops)++;
}

struct targ { size_t round, idx; };

static void *worker(void *arg)
{
    struct targ *t = arg;
    size_t r = t->round, i = t->idx;
    bc_rng rng;
    bc_rng_seed(&rng, bc_mix(bc_mix(seed, r), i));
    uint64_t h = bc_mix(r, i), ops = 0;

    /* blocks of the previous round's thread i-1 */
    if (r > 0) {
        struct blk *in = hand[(r - 1) & 1] + ((i + nthreads - 1) % nthreads) * handoff;
        for (size_t j = 0; j < handoff; j++)
            if (in[j].p) release(&in[j], &h, &ops, "handed-off");
    }

    size_t n = nsmall + nmid + nlarge;
    unsigned char *kind = malloc(n);
    struct blk *live = malloc((n ? n : 1) * sizeof *live);
    if (!kind || !live) { fprintf(stderr, "bench_thread_churn: out of memory\n"); exit(1); }
    ops += 2;
    memset(kind, SMALL, nsmall);
    memset(kind + nsmall, MID, nmid);
    memset(kind + nsmall + nmid, LARGE, nlarge);
    for (size_t j = n; j > 1; j--) {   /* Fisher-Yates */
        size_t k = bc_rng_below(&rng, (uint32_t)j);
        unsigned char x = kind[j - 1]; kind[j - 1] = kind[k]; kind[k] = x;
    }
    size_t nlive = 0;
    for (size_t j = 0; j < n; j++) {
        struct blk b;
        b.n = kind[j] == SMALL ? bc_rng_range(&rng, 16, KiB)
            : kind[j] == MID   ? bc_rng_range(&rng, KiB + 1, 32 * KiB)
                               : large_size(&rng);
        b.v = (unsigned char)(bc_rng_next(&rng) >> 56) | 1;
        b.p = malloc(b.n);
        if (!b.p) { fprintf(stderr, "bench_thread_churn: malloc(%zu) failed\n", b.n); exit(1); }
        ops++;
        fill(&b);
        live[nlive++] = b;
        if (bc_rng_below(&rng, 4) == 0) {
            size_t k = bc_rng_below(&rng, (uint32_t)nlive);
            release(&live[k], &h, &ops, "own");
            live[k] = live[--nlive];
        }
    }
    /* HANDOFF random live blocks to the next round, the rest freed here */
    struct blk *out = hand[r & 1] + i * handoff;
    for (size_t j = 0; j < handoff; j++) {
        if (nlive == 0) { out[j].p = NULL; continue; }
        size_t k = bc_rng_below(&rng, (uint32_t)nlive);
        out[j] = live[k];
        live[k] = live[--nlive];
    }
    while (nlive) release(&live[--nlive], &h, &ops, "own");
    free(live);
    free(kind);
    ops += 2;
    digest[r * nthreads + i] = h;
    opcount[r * nthreads + i] = ops;
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 8, "[ROUNDS] [THREADS] [SMALL] [MID] [LARGE] [HANDOFF] [WARMUP] [SEED]",
             "  Short-lived threads, created and joined in rounds: ROUNDS times, start\n  THREADS threads, then join them all. Each thread\n   - first frees the HANDOFF blocks left to it by a thread of the previous\n     round (thread i takes those of thread i-1): every one of them is freed\n     by a thread other than the (now dead) one that allocated it;\n   - allocates SMALL blocks of 16 B-1 KiB, MID of 1-32 KiB and LARGE of\n     64 KiB-4 MiB (uniform, log-uniform for the large), in a random order,\n     freeing a random live block after about one allocation in four;\n   - leaves HANDOFF of its live blocks to the next round and frees the rest.\n  Every block is filled with a pattern (small and mid: every byte; large: one\n  byte per 4 KiB page and the last 64 bytes) that is checked before the\n  free: a mismatch exits 1. After the last round main frees what is left.\n");
    rounds = (size_t)bc_arg_u64(argc, argv, 1, 50);
    nthreads = (size_t)bc_arg_u64(argc, argv, 2, 8);
    nsmall = (size_t)bc_arg_u64(argc, argv, 3, 2000);
    nmid = (size_t)bc_arg_u64(argc, argv, 4, 100);
    nlarge = (size_t)bc_arg_u64(argc, argv, 5, 3);
    handoff = (size_t)bc_arg_u64(argc, argv, 6, 8);
    warmup = (size_t)bc_arg_u64(argc, argv, 7, 2);
    seed = bc_arg_u64(argc, argv, 8, 7);
    if (rounds == 0 || rounds > 1000000 || nthreads == 0 || nthreads > 1024 || warmup >= rounds ||
        nsmall + nmid + nlarge > 10000000 || handoff > 1000000 || argc > 9) {
        fprintf(stderr, "usage: bench_thread_churn [ROUNDS] [THREADS] [SMALL] [MID] [LARGE] "
                        "[HANDOFF] [WARMUP < ROUNDS] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: thread_churn rounds=%zu threads=%zu small=%zu mid=%zu large=%zu handoff=%zu "
           "warmup=%zu seed=%llu\n", rounds, nthreads, nsmall, nmid, nlarge, handoff, warmup,
           (unsigned long long)seed);

    /* hakmem's counters, only when hakmem serves this process's malloc */
    char name[64], path[PATH_MAX];
    int (*stats_get)(struct hak_stats *) = NULL;
    if (bc_detect_allocator(name, sizeof name, path, sizeof path))
        stats_get = (int (*)(struct hak_stats *))dlsym(RTLD_DEFAULT, "hak_stats_get");

    hand[0] = calloc(nthreads * handoff + 1, sizeof(struct blk));
    hand[1] = calloc(nthreads * handoff + 1, sizeof(struct blk));
    digest = calloc(rounds * nthreads, sizeof *digest);
    opcount = calloc(rounds * nthreads, sizeof *opcount);
    pthread_t *tid = calloc(nthreads, sizeof *tid);
    struct targ *ta = calloc(nthreads, sizeof *ta);
    if (!hand[0] || !hand[1] || !digest || !opcount || !tid || !ta) return 1;

    static struct hak_stats s0, s1; /* large (per-class arrays): not on the stack */
    int have0 = 0;
    uint64_t t0 = bc_now_ns(), tw = t0;
    for (size_t r = 0; r < rounds; r++) {
        if (r == warmup) {
            have0 = stats_get && stats_get(&s0) == 0;
            tw = bc_now_ns();
        }
        for (size_t i = 0; i < nthreads; i++) {
            ta[i].round = r;
            ta[i].idx = i;
            int e = pthread_create(&tid[i], NULL, worker, &ta[i]);
            if (e) { fprintf(stderr, "pthread_create: %s\n", strerror(e)); return 1; }
        }
        for (size_t i = 0; i < nthreads; i++) pthread_join(tid[i], NULL);
    }
    uint64_t t1 = bc_now_ns();
    int have1 = have0 && stats_get(&s1) == 0;

    /* the last round's hand-off, freed by main */
    uint64_t h = bc_mix(bc_mix(bc_mix(0, rounds), nthreads), handoff), ops = 0, tail = 0;
    struct blk *last = hand[(rounds - 1) & 1];
    for (size_t j = 0; j < nthreads * handoff; j++)
        if (last[j].p) release(&last[j], &tail, &ops, "left-over");
    uint64_t t2 = bc_now_ns();
    for (size_t k = 0; k < rounds * nthreads; k++) { h = bc_mix(h, digest[k]); ops += opcount[k]; }
    h = bc_mix(h, tail);

    size_t lives = (rounds - warmup) * nthreads;
    printf("thread lifetimes: %zu (%zu after warm-up), %.0f per second after warm-up\n",
           rounds * nthreads, lives, (double)lives / ((double)(t1 - tw) / 1e9));
    if (have1) {
        unsigned long mm = s1.mmap_calls - s0.mmap_calls;
        printf("os calls after warm-up: mmap=%lu munmap=%lu mremap=%lu madvise=%lu over %zu thread "
               "lifetimes (mmap per 100 lifetimes: %.1f)\n", mm, s1.munmap_calls - s0.munmap_calls,
               s1.mremap_calls - s0.mremap_calls, s1.madvise_calls - s0.madvise_calls, lives,
               100.0 * (double)mm / (double)lives);
    } else {
        printf("os calls after warm-up: mmap=n/a munmap=n/a mremap=n/a madvise=n/a over %zu thread "
               "lifetimes (%s: no hakmem counters)\n", lives, name);
    }
    free(hand[0]);
    free(hand[1]);
    free(digest);
    free(opcount);
    free(tid);
    free(ta);
    bc_work(h);
    bc_report(ops, t2 - t0);
    return 0;
}
