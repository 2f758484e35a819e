/* bench_bigheap [THREADS] [WS_MIB] [STEPS] [SEED] [SECONDS] [SAMPLE_MS] [PIN]
 *
 * A big heap (issue 40): THREADS threads share a working set of WS_MIB MiB of
 * blocks of 32 KiB-8 MiB, each thread its own table of slots. Sizes are
 * skewed: 85% 32-256 KiB, 12% 256 KiB-1 MiB, 3% 1-8 MiB, log-uniform within
 * each octave. Each step picks a random slot (so lifetimes are random) and
 *   - 15%: reallocs its block, growing it by 1.25-2x or shrinking it to
 *     0.5-0.8x (clamped to 32 KiB-8 MiB); the kept part is checked, a grown
 *     tail written;
 *   - else checks and frees it (one in eight is handed to a shared exchange
 *     table instead, and the block found there, another thread's as a rule,
 *     is checked and freed), then allocates a new block: 30% by calloc, whose
 *     memory is READ first (checked to be zero) and written after, as a
 *     program that reads a zeroed table before it fills it; 70% by malloc.
 * Every byte of every block is written: a fill byte derived from the block's
 * key (thread, slot, generation), an 8-byte stamp (key ^ page index) at the
 * start of every 4 KiB page of the block, the key and the size in its first
 * 16 bytes. Before a block is freed (or realloc'd) it is checked, sampled:
 * every page's stamp, one byte at a key-dependent offset of every page, the
 * last byte and the size word; a calloc'd block's every page is checked zero
 * at two words. A mismatch prints where and exits 1.
 *
 * STEPS > 0: every thread runs STEPS steps after filling its slots; the
 * report is the bench_common.h one (one op = one malloc, calloc, realloc or
 * free call; the work digest depends only on the arguments). After the steps,
 * with every block still live, it prints the huge-page-backed bytes of the
 * heap: `AnonHugePages = N KiB` (/proc/self/smaps_rollup) and the RSS then.
 * SECONDS > 0 (soak, `make soak`): the threads run until SECONDS have passed
 * and every SAMPLE_MS the main thread prints
 *     sample t=SECONDS ops=N rss_kib=N cpu=PROCESS_CPU_SECONDS huge_kib=N
 * and once, before the first sample after every thread has filled its slots,
 *     ready t=SECONDS
 * PIN=1 puts every worker on one CPU (the soak's default, see bench_soak.c).
 * Defaults: 4 1024 3000 7 0 1000 0. */
#include "bench_common.h"
#include <pthread.h>
#include <stdatomic.h>

#define MIN_SZ (32u << 10)
#define MAX_SZ (8u << 20)
#define PAGE 4096u
#define XCHG 64

struct slot {
    unsigned char *p;
    size_t n;
    uint64_t key;
    uint32_t gen;
};

struct worker {
    _Alignas(64) atomic_uint_fast64_t ops;
    pthread_t th;
    int id;
    uint64_t digest;
    size_t nslots;
    struct slot *slot;
};

static int g_threads, g_pin;
static uint64_t g_steps, g_seed;
static atomic_int g_stop, g_filled;
static _Atomic(unsigned char *) g_xchg[XCHG];
static pthread_barrier_t g_bar;

/* ---------------------------------------------------------------- sizes */

static size_t draw_size(bc_rng *r)
{
    uint32_t c = bc_rng_below(r, 1000);
    size_t lo;
    if (c < 850) lo = MIN_SZ << bc_rng_below(r, 3);               /* 32 KiB-256 KiB */
    else if (c < 970) lo = (256u << 10) << bc_rng_below(r, 2);    /* 256 KiB-1 MiB */
    else lo = (1u << 20) << bc_rng_below(r, 3);                   /* 1-8 MiB */
    return bc_rng_range(r, lo, 2 * lo);
}

static size_t clamp_size(size_t n)
{
    return n < MIN_SZ ? MIN_SZ : n > MAX_SZ ? MAX_SZ : n;
}

/* ------------------------------------------------------------- patterns */

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

/* high half: a tag from (seed, thread, slot, generation); low half: its hash,
 * so that a block found in the exchange can be told from garbage */
static uint64_t make_key(int thread, size_t slot, uint32_t gen)
{
    uint64_t x = g_seed ^ ((uint64_t)thread << 48) ^ ((uint64_t)slot << 24) ^ gen;
    uint32_t tag = (uint32_t)bc_splitmix64(&x);
    return ((uint64_t)tag << 32) | hash32(tag);
}

static int key_ok(uint64_t key)
{
    return (uint32_t)key == hash32((uint32_t)(key >> 32));
}

static unsigned char fill_byte(uint64_t key)
{
    return (unsigned char)((key >> 40) | 0x80);   /* never 0: a write shows */
}

static uint64_t stamp(uint64_t key, size_t page)
{
    return key ^ ((uint64_t)page * 0x9E3779B97F4A7C15ull);
}

/* the offset of page pg's sampled byte (past the stamp) */
static size_t sample_off(uint64_t key, size_t pg)
{
    return pg * PAGE + 16 + hash32((uint32_t)key ^ (uint32_t)pg) % (PAGE - 16);
}

/* writes bytes [from, to) of a block of `to` bytes with key's pattern, then
 * its header (key, size) */
static void fill(unsigned char *p, size_t from, size_t to, uint64_t key)
{
    memset(p + from, fill_byte(key), to - from);
    for (size_t pg = from / PAGE; pg * PAGE + 8 <= to; pg++) {
        size_t off = pg * PAGE;
        if (off + 8 > from) {
            uint64_t s = stamp(key, pg);
            memcpy(p + off, &s, 8);
        }
    }
    uint64_t n = to;
    memcpy(p + 8, &n, 8);
}

static void mismatch(const char *what, const unsigned char *p, size_t n, size_t off, int thread)
{
    fprintf(stderr, "bench_bigheap: content mismatch (%s) in thread %d: block %p of %zu bytes, "
            "offset %zu\n", what, thread, (const void *)p, n, off);
    exit(1);
}

/* the sampled check of a block of n bytes written with key (see the top) */
static void check(const unsigned char *p, size_t n, uint64_t key, int thread)
{
    unsigned char fb = fill_byte(key);
    uint64_t w;
    memcpy(&w, p + 8, 8);
    if (w != n) mismatch("size word", p, n, 8, thread);
    size_t pages = (n + PAGE - 1) / PAGE;
    for (size_t pg = 0; pg < pages; pg++) {
        size_t off = pg * PAGE;
        if (off + 8 <= n) {
            memcpy(&w, p + off, 8);
            if (w != stamp(key, pg)) mismatch("page stamp", p, n, off, thread);
        }
        size_t s = sample_off(key, pg);
        if (s < n && p[s] != fb) mismatch("page sample", p, n, s, thread);
    }
    size_t last = n - 1, lp = last / PAGE;
    if (last - lp * PAGE >= 16 && p[last] != fb) mismatch("last byte", p, n, last, thread);
}

/* calloc's promise, read before anything is written: two words of every
 * page and the last byte are zero */
static void check_zero(const unsigned char *p, size_t n, uint64_t key, int thread)
{
    size_t pages = (n + PAGE - 1) / PAGE;
    uint64_t w;
    for (size_t pg = 0; pg < pages; pg++) {
        size_t off = pg * PAGE, s = sample_off(key, pg) & ~(size_t)7;
        if (off + 8 <= n) {
            memcpy(&w, p + off, 8);
            if (w) mismatch("calloc not zero", p, n, off, thread);
        }
        if (s + 8 <= n) {
            memcpy(&w, p + s, 8);
            if (w) mismatch("calloc not zero", p, n, s, thread);
        }
    }
    if (p[n - 1]) mismatch("calloc not zero", p, n, n - 1, thread);
}

/* a block from the exchange: its header says what it should hold */
static void check_foreign(const unsigned char *p, int thread)
{
    uint64_t key, n;
    memcpy(&key, p, 8);
    memcpy(&n, p + 8, 8);
    if (!key_ok(key) || n < MIN_SZ || n > MAX_SZ) mismatch("exchanged block header", p, n, 0, thread);
    check(p, (size_t)n, key, thread);
}

/* ---------------------------------------------------------------- steps */

static void *xalloc(size_t n, int zeroed)
{
    void *p = zeroed ? calloc(1, n) : malloc(n);
    if (!p) {
        fprintf(stderr, "bench_bigheap: %s(%zu) failed\n", zeroed ? "calloc" : "malloc", n);
        exit(1);
    }
    return p;
}

static void new_block(struct worker *w, bc_rng *r, size_t k)
{
    struct slot *s = &w->slot[k];
    s->n = draw_size(r);
    s->gen++;
    s->key = make_key(w->id, k, s->gen);
    int zeroed = bc_rng_below(r, 10) < 3;
    s->p = xalloc(s->n, zeroed);
    if (zeroed) check_zero(s->p, s->n, s->key, w->id);
    fill(s->p, 0, s->n, s->key);
    w->digest = bc_mix(w->digest, s->n * 2 + (uint64_t)zeroed);
}

/* one step on slot k; returns the allocator calls it made */
static uint64_t step(struct worker *w, bc_rng *r)
{
    size_t k = bc_rng_below(r, (uint32_t)w->nslots);
    struct slot *s = &w->slot[k];
    uint32_t c = bc_rng_below(r, 100);
    check(s->p, s->n, s->key, w->id);
    w->digest = bc_mix(w->digest, s->key);
    if (c < 15) {
        size_t m = (c & 1) ? s->n + (size_t)bc_rng_range(r, s->n / 4, s->n)
                           : s->n - (size_t)bc_rng_range(r, s->n / 5, s->n / 2);
        m = clamp_size(m);
        unsigned char *q = realloc(s->p, m);
        if (!q) {
            fprintf(stderr, "bench_bigheap: realloc(%zu) failed\n", m);
            exit(1);
        }
        if (m > s->n) {
            check(q, s->n, s->key, w->id);     /* the copy kept the old bytes */
            fill(q, s->n, m, s->key);
        } else {
            size_t t = (m - 1) & ~(size_t)(PAGE - 1);
            if (m - t < 8) memset(q + t, fill_byte(s->key), m - t);   /* a cut stamp is fill now */
            uint64_t n = m;
            memcpy(q + 8, &n, 8);
            check(q, m, s->key, w->id);
        }
        s->p = q;
        s->n = m;
        w->digest = bc_mix(w->digest, m);
        return 1;
    }
    if (bc_rng_below(r, 8) == 0) {
        /* hand it over; free what another thread left there */
        unsigned char *other = atomic_exchange(&g_xchg[bc_rng_below(r, XCHG)], s->p);
        if (other) {
            check_foreign(other, w->id);
            free(other);
        }
    } else {
        free(s->p);
    }
    new_block(w, r, k);
    return 2;   /* the free (or hand-over, freed by whoever finds it) and the allocation */
}

static void *run(void *arg)
{
    struct worker *w = arg;
    bc_rng rng;
    bc_rng_seed(&rng, g_seed * 1000003u + (uint64_t)w->id);
    if (g_pin) bc_pin_self(0);
    uint64_t ops = 0;
    for (size_t k = 0; k < w->nslots; k++) {
        new_block(w, &rng, k);
        atomic_store_explicit(&w->ops, ++ops, memory_order_relaxed);
    }
    atomic_fetch_add(&g_filled, 1);
    for (uint64_t i = 0; g_steps ? i < g_steps : !atomic_load_explicit(&g_stop, memory_order_relaxed); i++) {
        ops += step(w, &rng);
        atomic_store_explicit(&w->ops, ops, memory_order_relaxed);
    }
    pthread_barrier_wait(&g_bar);   /* every block live: main reads smaps */
    pthread_barrier_wait(&g_bar);
    for (size_t k = 0; k < w->nslots; k++) {
        check(w->slot[k].p, w->slot[k].n, w->slot[k].key, w->id);
        free(w->slot[k].p);
        ops++;
    }
    atomic_store_explicit(&w->ops, ops, memory_order_relaxed);
    return NULL;
}

/* ------------------------------------------------------------ the report */

/* AnonHugePages of the whole process (smaps_rollup), -1 if unreadable */
static long huge_kib(void)
{
    char buf[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    while (fgets(buf, sizeof buf, f))
        if (sscanf(buf, "AnonHugePages: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

static uint64_t total_ops(struct worker *w)
{
    uint64_t ops = 0;
    for (int i = 0; i < g_threads; i++) ops += atomic_load(&w[i].ops);
    return ops;
}

/* the soak's samples until `seconds` have passed, then the stop */
static void sample_until(struct worker *w, uint64_t t0, uint64_t seconds, uint64_t sample_ms)
{
    uint64_t end = t0 + seconds * 1000000000ull, now = t0;
    int ready = 0;
    for (uint64_t next = t0 + sample_ms * 1000000ull; now < end; next += sample_ms * 1000000ull) {
        bc_sleep_until(next);
        now = bc_now_ns();
        if (!ready && atomic_load(&g_filled) == g_threads) {
            /* every slot filled: the working set is there (the soak's warm-up ends no earlier) */
            ready = 1;
            printf("ready t=%.3f\n", (double)(now - t0) / 1e9);
        }
        char huge[48];
        snprintf(huge, sizeof huge, "huge_kib=%ld", huge_kib());
        bc_sample(t0, now, total_ops(w), huge);
    }
    atomic_store(&g_stop, 1);
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 7, "[THREADS] [WS_MIB] [STEPS] [SEED] [SECONDS] [SAMPLE_MS] [PIN]",
             "  A big heap: THREADS threads, a working set of WS_MIB MiB in blocks of\n"
             "  32 KiB-8 MiB (85% 32-256 KiB, 12% 256 KiB-1 MiB, 3% 1-8 MiB), random\n"
             "  replacement, 15% realloc (grow or shrink), 30% of new blocks by calloc\n"
             "  (read and checked zero before written), one free in eight through a\n"
             "  shared exchange (freed by another thread). Every byte written, every\n"
             "  page's stamp and a sampled byte of it checked before free; exit 1 on a\n"
             "  mismatch. STEPS per thread (one op = one malloc/calloc/realloc/free);\n"
             "  SECONDS > 0 runs that long instead, printing a sample every SAMPLE_MS\n"
             "  (the soak). PIN=1 puts the workers on one CPU.\n"
             "  Defaults: 4 1024 3000 7 0 1000 0.\n");
    g_threads = (int)bc_arg_u64(argc, argv, 1, 4);
    uint64_t ws_mib = bc_arg_u64(argc, argv, 2, 1024);
    g_steps = bc_arg_u64(argc, argv, 3, 3000);
    g_seed = bc_arg_u64(argc, argv, 4, 7);
    uint64_t seconds = bc_arg_u64(argc, argv, 5, 0);
    uint64_t sample_ms = bc_arg_u64(argc, argv, 6, 1000);
    g_pin = (int)bc_arg_u64(argc, argv, 7, 0);
    if (seconds) g_steps = 0;
    if (g_threads < 1 || g_threads > 1024 || ws_mib == 0 || sample_ms == 0 || (!g_steps && !seconds)) {
        bc_print_usage(stderr);
        return 2;
    }
    /* slots per thread: the working set over the mean size (drawn, not
     * derived, so that it follows draw_size) */
    bc_rng mr;
    bc_rng_seed(&mr, 12345);
    uint64_t sum = 0;
    for (int i = 0; i < 100000; i++) sum += draw_size(&mr);
    double mean = (double)sum / 100000;
    size_t nslots = (size_t)((double)(ws_mib << 20) / ((double)g_threads * mean));
    if (nslots < 4) nslots = 4;

    bc_print_allocator();
    printf("bench: bigheap threads=%d ws_mib=%llu slots_per_thread=%zu mean_block=%.0f steps=%llu seed=%llu "
           "seconds=%llu pin=%d\n", g_threads, (unsigned long long)ws_mib, nslots, mean,
           (unsigned long long)g_steps, (unsigned long long)g_seed, (unsigned long long)seconds, g_pin);
    fflush(stdout);
    struct worker *w = aligned_alloc(64, sizeof *w * (size_t)g_threads);
    if (!w) return 1;
    memset(w, 0, sizeof *w * (size_t)g_threads);
    pthread_barrier_init(&g_bar, NULL, (unsigned)g_threads + 1);
    uint64_t t0 = bc_now_ns();
    for (int i = 0; i < g_threads; i++) {
        w[i].id = i;
        w[i].nslots = nslots;
        w[i].slot = calloc(nslots, sizeof *w[i].slot);
        if (!w[i].slot) return 1;
        pthread_create(&w[i].th, NULL, run, &w[i]);
    }
    if (seconds) sample_until(w, t0, seconds, sample_ms);
    pthread_barrier_wait(&g_bar);
    long huge = huge_kib(), rss_live = bc_rss_kib();
    uint64_t live = 0;
    for (int i = 0; i < g_threads; i++)
        for (size_t k = 0; k < nslots; k++) live += w[i].slot[k].n;
    for (int i = 0; i < XCHG; i++) {
        unsigned char *p = atomic_load(&g_xchg[i]);
        uint64_t n = 0;
        if (p) memcpy(&n, p + 8, 8);
        live += n;
    }
    pthread_barrier_wait(&g_bar);
    for (int i = 0; i < g_threads; i++) pthread_join(w[i].th, NULL);
    /* what is left in the exchange */
    uint64_t ops = total_ops(w);
    for (int i = 0; i < XCHG; i++) {
        unsigned char *p = atomic_exchange(&g_xchg[i], NULL);
        if (p) {
            check_foreign(p, -1);
            free(p);
        }
    }
    uint64_t ns = bc_now_ns() - t0;
    uint64_t digest = 0;
    for (int i = 0; i < g_threads; i++) {
        digest = bc_mix(digest, w[i].digest);
        free(w[i].slot);
    }
    printf("AnonHugePages = %ld KiB (huge-page-backed, all blocks live, after the steps)\n", huge);
    printf("Live blocks = %llu KiB, RSS then = %ld KiB\n", (unsigned long long)(live >> 10), rss_live);
    if (g_steps) bc_work(bc_mix(digest, ops));
    bc_report(ops, ns);
    free(w);
    return 0;
}
