/* bench_waves [THREADS] [WAVES] [OPS_PER_THREAD] [SLOTS] [HANDOFF_PERMILLE] [SEED]
 *
 * A randomized workload with threads in waves (issue 61): THREADS threads
 * run at a time; when all of a wave's threads have exited, the next wave
 * starts. Each thread runs OPS_PER_THREAD operations over SLOTS slots of its
 * own; an operation picks a slot at random and
 *   - if it is empty, allocates into it: malloc (55%), calloc (20%, checked
 *     zeroed), aligned_alloc or posix_memalign (25%, alignments 16..4096,
 *     checked aligned);
 *   - else frees it (45%, after checking every byte) or reallocs it (15%,
 *     to a new size, growing or shrinking; the kept prefix is checked).
 * Sizes: 90% under 32 KiB (70% 8 B-1 KiB, 20% 1-32 KiB), 8.5% 32 KiB-1 MiB,
 * (log-uniform above 1 KiB)
 * 1.5% 1-9 MiB. Every byte is written with a pattern of the block's seed and
 * checked before the block is freed. When a thread ends, HANDOFF_PERMILLE of
 * its live blocks are handed to the thread of the same index in the next
 * wave, which adopts them (checks, and later frees them: a free by another
 * thread); the rest it frees itself.
 *
 * The operation count is fixed, so the work digest is the same whatever the
 * allocator. RSS is sampled every 100 ms by the main thread and printed as
 *   rss T_MS KIB
 * lines; at the end `End RSS = N KiB` (after every block was freed).
 * Defaults 4 8 16000 250 250 1; one op = one malloc, calloc,
 * aligned allocation, realloc or free. */
#include "bench_common.h"

#include <stdatomic.h>

#define WV_MAX_THREADS 64

typedef struct {
    unsigned char *p;
    size_t size;
    uint64_t tag;   /* the pattern's seed: byte i is pat(tag, i) */
} wv_block;

typedef struct {
    int index;
    uint64_t seed, ops, slots_n;
    uint32_t handoff_pm;
    wv_block *slots;          /* this thread's slots (adopted blocks included) */
    wv_block *out;            /* handed on: filled at the end */
    size_t out_n;
    wv_block *in;             /* received from the previous wave */
    size_t in_n;
    uint64_t digest, done, bad;
} wv_thread;

/* the pattern: word j of a block is tag + j * K, little-endian bytes */
#define WV_K 0x9E3779B97F4A7C15ull

static inline unsigned char pat(uint64_t tag, size_t i)
{
    return (unsigned char)((tag + (uint64_t)(i >> 3) * WV_K) >> ((i & 7) * 8));
}

/* writes bytes [from, size) of the block */
static void fill(wv_block *b, size_t from)
{
    size_t i = from;
    for (; i < b->size && (i & 7); i++) b->p[i] = pat(b->tag, i);
    for (; i + 8 <= b->size; i += 8) {
        uint64_t w = b->tag + (uint64_t)(i >> 3) * WV_K;
        memcpy(b->p + i, &w, 8);
    }
    for (; i < b->size; i++) b->p[i] = pat(b->tag, i);
}

/* checks bytes [0, n) against the pattern; folds a summary into the digest */
static int check(const wv_block *b, size_t n, uint64_t *digest)
{
    size_t i = 0;
    uint64_t diff = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b->p + i, 8);
        diff |= w ^ (b->tag + (uint64_t)(i >> 3) * WV_K);
    }
    for (; i < n; i++) diff |= (uint64_t)(b->p[i] ^ pat(b->tag, i));
    *digest = bc_mix(*digest, n ^ (b->tag & 0xffff));
    return diff != 0;
}

/* uniform in [lo, hi) on a log scale: a power-of-two octave at random, then
 * uniform inside it */
static size_t log_range(bc_rng *r, unsigned lo_log2, unsigned hi_log2, size_t hi)
{
    unsigned e = lo_log2 + bc_rng_below(r, hi_log2 - lo_log2);
    size_t a = (size_t)1 << e, b = e + 1 == hi_log2 ? hi : (size_t)1 << (e + 1);
    return bc_rng_range(r, a, b - 1);
}

static size_t draw_size(bc_rng *r)
{
    uint32_t k = bc_rng_below(r, 1000);
    if (k < 700) return bc_rng_range(r, 8, 1024);         /* small */
    if (k < 900) return log_range(r, 10, 15, 32767);      /* 1-32 KiB */
    if (k < 985) return log_range(r, 15, 20, 1u << 20);   /* 32 KiB-1 MiB */
    return log_range(r, 20, 22, 9u << 20);                /* 1-9 MiB */
}

static void *worker(void *arg)
{
    wv_thread *t = (wv_thread *)arg;
    bc_rng r;
    bc_rng_seed(&r, t->seed);
    uint64_t d = 0;
    /* adopt the previous wave's blocks: check them, keep them in slots */
    for (size_t k = 0; k < t->in_n; k++) {
        wv_block *b = &t->in[k];
        if (check(b, b->size, &d)) t->bad++;
        size_t s = bc_rng_below(&r, (uint32_t)t->slots_n);
        if (t->slots[s].p) {   /* occupied: the remote block is freed here */
            free(b->p);
            t->done++;
        } else {
            t->slots[s] = *b;
        }
    }
    for (uint64_t op = 0; op < t->ops; op++) {
        size_t s = bc_rng_below(&r, (uint32_t)t->slots_n);
        wv_block *b = &t->slots[s];
        uint32_t k = bc_rng_below(&r, 100);
        if (!b->p) {
            size_t sz = draw_size(&r);
            b->tag = bc_rng_next(&r);
            b->size = sz;
            if (k < 55) {
                b->p = malloc(sz);
                if (!b->p) { t->bad++; continue; }
                fill(b, 0);
            } else if (k < 75) {
                size_t n = 1 + bc_rng_below(&r, 16);
                size_t each = (sz + n - 1) / n;
                b->size = n * each;
                b->p = calloc(n, each);
                if (!b->p) { t->bad++; continue; }
                for (size_t i = 0; i < b->size; i++)
                    if (b->p[i]) { t->bad++; break; }
                fill(b, 0);
            } else {
                size_t al = (size_t)16 << bc_rng_below(&r, 9);   /* 16..4096 */
                void *p = NULL;
                if (k < 88) {
                    b->size = (sz + al - 1) / al * al;   /* C11: a multiple */
                    p = aligned_alloc(al, b->size);
                } else if (posix_memalign(&p, al, sz) != 0) {
                    p = NULL;
                }
                b->p = p;
                if (!p) { t->bad++; continue; }
                if ((uintptr_t)p & (al - 1)) t->bad++;
                fill(b, 0);
            }
            d = bc_mix(d, b->size);
        } else if (k < 75) {
            if (check(b, b->size, &d)) t->bad++;
            free(b->p);
            b->p = NULL;
        } else {
            /* realloc: a new size from the same mix, growing or shrinking */
            size_t sz = draw_size(&r);
            size_t kept = sz < b->size ? sz : b->size;
            unsigned char *q = realloc(b->p, sz);
            if (!q) { t->bad++; continue; }
            b->p = q;
            if (check(b, kept, &d)) t->bad++;
            b->size = sz;
            fill(b, kept);
        }
        t->done++;
    }
    /* the end of the thread: hand some blocks on, free the rest */
    t->out_n = 0;
    for (size_t s = 0; s < t->slots_n; s++) {
        wv_block *b = &t->slots[s];
        if (!b->p) continue;
        if (bc_rng_below(&r, 1000) < t->handoff_pm) {
            t->out[t->out_n++] = *b;
        } else {
            if (check(b, b->size, &d)) t->bad++;
            free(b->p);
            t->done++;
        }
        b->p = NULL;
    }
    t->digest = d;
    return NULL;
}

static atomic_int sampling_stop;

typedef struct { uint64_t t0; } wv_sampler;

static void *sampler(void *arg)
{
    wv_sampler *s = (wv_sampler *)arg;
    uint64_t next = s->t0;
    while (!atomic_load(&sampling_stop)) {
        next += 100000000ull;
        bc_sleep_until(next);
        printf("rss %llu %ld\n", (unsigned long long)((bc_now_ns() - s->t0) / 1000000), bc_rss_kib());
        fflush(stdout);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 6, "[THREADS] [WAVES] [OPS_PER_THREAD] [SLOTS] [HANDOFF_PERMILLE] [SEED]",
             "  THREADS threads at a time in WAVES waves that start and exit; each runs\n"
             "  OPS_PER_THREAD random ops over SLOTS slots: malloc, calloc, aligned_alloc/\n"
             "  posix_memalign (16-4096), realloc, free; sizes 90% < 32 KiB, 8.5%\n"
             "  32 KiB-1 MiB, 1.5% 1-9 MiB; every byte written and checked; HANDOFF_PERMILLE\n"
             "  of a thread's live blocks are freed by the next wave. RSS every 100 ms.\n"
             "  Defaults 4 8 16000 250 250 1.\n");
    int nth = (int)bc_arg_u64(argc, argv, 1, 4);
    uint64_t waves = bc_arg_u64(argc, argv, 2, 8);
    uint64_t ops = bc_arg_u64(argc, argv, 3, 16000);
    uint64_t slots = bc_arg_u64(argc, argv, 4, 250);
    uint64_t handoff = bc_arg_u64(argc, argv, 5, 250);
    uint64_t seed = bc_arg_u64(argc, argv, 6, 1);
    if (nth < 1 || nth > WV_MAX_THREADS || slots < 1 || slots > 0xffffffffull || handoff > 1000) {
        bc_print_usage(stderr);
        return 2;
    }
    bc_print_allocator();
    printf("bench: waves threads=%d waves=%llu ops=%llu slots=%llu handoff_permille=%llu seed=%llu\n", nth,
           (unsigned long long)waves, (unsigned long long)ops, (unsigned long long)slots,
           (unsigned long long)handoff, (unsigned long long)seed);
    fflush(stdout);
    wv_thread th[WV_MAX_THREADS];
    /* the bookkeeping arrays come from the allocator under test too (once) */
    wv_block *carry[WV_MAX_THREADS];
    size_t carry_n[WV_MAX_THREADS];
    for (int i = 0; i < nth; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].slots = calloc(slots, sizeof(wv_block));
        th[i].out = calloc(slots, sizeof(wv_block));
        carry[i] = calloc(slots, sizeof(wv_block));
        carry_n[i] = 0;
        if (!th[i].slots || !th[i].out || !carry[i]) return 1;
    }
    uint64_t t0 = bc_now_ns(), total = 0, digest = bc_mix(bc_mix(0, (uint64_t)nth), waves), bad = 0;
    wv_sampler ws = { t0 };
    pthread_t sp;
    int have_sampler = pthread_create(&sp, NULL, sampler, &ws) == 0;
    printf("rss 0 %ld\n", bc_rss_kib());
    for (uint64_t w = 0; w < waves; w++) {
        pthread_t pt[WV_MAX_THREADS];
        for (int i = 0; i < nth; i++) {
            wv_thread *t = &th[i];
            t->index = i;
            t->seed = seed * 1000003ull + w * 64 + (uint64_t)i;
            t->ops = ops;
            t->slots_n = slots;
            t->handoff_pm = (uint32_t)handoff;
            t->in = carry[i];
            t->in_n = carry_n[i];
            t->done = 0;
            t->bad = 0;   /* summed per wave below: not carried over */
            if (pthread_create(&pt[i], NULL, worker, t) != 0) return 1;
        }
        for (int i = 0; i < nth; i++) {
            pthread_join(pt[i], NULL);
            wv_thread *t = &th[i];
            total += t->done;
            bad += t->bad;
            digest = bc_mix(digest, t->digest);
            /* what this thread handed on goes to the same index next wave */
            memcpy(carry[i], t->out, t->out_n * sizeof(wv_block));
            carry_n[i] = t->out_n;
        }
    }
    uint64_t t1 = bc_now_ns();
    /* the last wave's hand-offs: freed by the main thread */
    for (int i = 0; i < nth; i++) {
        for (size_t k = 0; k < carry_n[i]; k++) {
            uint64_t dd = 0;
            if (check(&carry[i][k], carry[i][k].size, &dd)) bad++;
            digest = bc_mix(digest, dd);
            free(carry[i][k].p);
        }
        free(th[i].slots);
        free(th[i].out);
        free(carry[i]);
    }
    atomic_store(&sampling_stop, 1);
    if (have_sampler) pthread_join(sp, NULL);
    long end_kib = bc_rss_kib();
    printf("rss %llu %ld\n", (unsigned long long)((bc_now_ns() - t0) / 1000000), end_kib);
    if (bad) {
        printf("FAILED: %llu bad blocks (corrupted, misaligned, not zeroed or not allocated)\n",
               (unsigned long long)bad);
        return 1;
    }
    printf("End RSS = %ld KiB\n", end_kib);
    bc_work(digest);
    bc_report(total, t1 - t0);
    return 0;
}
