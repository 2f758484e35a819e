/* bench_large [ITERS] [WS] [MIN] [MAX] [SEED] [CHAINS] [MODE]
 *
 * Large and huge blocks, 64 KiB - 32 MiB by default.
 *  phase 1, alloc/free cycles: a working set of WS slots; ITERS times, free a
 *    random slot and refill it with a block of a log-uniform random size in
 *    [MIN, MAX]. Each new block has one byte written in each of its first 16
 *    pages and its last byte written (a program uses what it allocates, but
 *    the page-fault cost must not drown the allocator).
 *  phase 2, realloc growth: CHAINS times, start at MIN and grow by 1.5x (plus
 *    a random bit) with realloc up to MAX, writing the new tail, then free.
 * Defaults: 20000 8 64k 32m 3 40. One op = one malloc, free or realloc call.
 *
 * MODE (optional, after CHAINS): "touch" (the default, phases 1 and 2 above)
 * or "zeroed": WS live buffers of a UNIFORM random size in [MIN, MAX] bytes;
 * ITERS times, free one at random and replace it with a new buffer whose
 * every byte is written, as C++ `std::make_unique<char[]>(n)` does
 * (value-initialisation: malloc(n) then memset(p, 0, n); -fno-builtin-malloc
 * keeps the compiler from fusing the two into calloc). Before a buffer is
 * freed its first, middle and last bytes are checked. CHAINS is ignored.
 *   bench_large 2000 20 5m 25m 3 0 zeroed    (harness row large_zeroed)
 * One op = one malloc or free call. */
#include "bench_common.h"

static size_t logu(bc_rng *r, size_t mn, size_t mx)
{
    /* log-uniform: pick a power-of-two band, then uniform inside it */
    int lo = 63 - __builtin_clzll(mn), hi = 63 - __builtin_clzll(mx);
    int b = lo + (int)bc_rng_below(r, (uint32_t)(hi - lo + 1));
    size_t a = (size_t)1 << b, z = a * 2 - 1;
    if (a < mn) a = mn;
    if (z > mx) z = mx;
    return bc_rng_range(r, a, z);
}

static void touch(unsigned char *p, size_t sz, unsigned char v)
{
    for (size_t off = 0; off < sz && off < 16 * 4096; off += 4096) p[off] = v;
    p[sz - 1] = v;
}

/* MODE zeroed: every byte of every new buffer written (make_unique<char[]>) */
static int zeroed(uint64_t iters, size_t ws, size_t mn, size_t mx, uint64_t seed)
{
    printf("bench: large zeroed iters=%llu ws=%zu min=%zu max=%zu seed=%llu\n",
           (unsigned long long)iters, ws, mn, mx, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    unsigned char **slot = calloc(ws, sizeof *slot);
    size_t *len = calloc(ws, sizeof *len);
    if (!slot || !len) return 1;
    uint64_t ops = 0, acc = 0, bytes = 0;

    uint64_t t0 = bc_now_ns();
    for (uint64_t it = 0; it < ws + iters; it++) {
        size_t k = it < ws ? (size_t)it : bc_rng_below(&rng, (uint32_t)ws);
        if (it >= ws) {
            unsigned char *o = slot[k];
            size_t n = len[k];
            if (o[0] != (unsigned char)n || o[n / 2] != 0 || o[n - 1] != (unsigned char)(n >> 8)) {
                fprintf(stderr, "buffer of %zu bytes corrupted\n", n);
                return 1;
            }
            acc += o[0] + o[n - 1];
            free(o);
            ops++;
        }
        size_t sz = bc_rng_range(&rng, mn, mx);
        unsigned char *p = malloc(sz);
        if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
        memset(p, 0, sz);                /* make_unique<char[]>(sz) */
        p[0] = (unsigned char)sz;        /* marks checked before the free */
        p[sz - 1] = (unsigned char)(sz >> 8);
        slot[k] = p;
        len[k] = sz;
        bytes += sz;
        ops++;
    }
    for (size_t i = 0; i < ws; i++) { acc += slot[i][len[i] / 2]; free(slot[i]); ops++; }
    uint64_t t1 = bc_now_ns();
    free(slot);
    free(len);
    printf("zeroed: %.1f GiB written, %.0f replacements/s\n", (double)bytes / (1u << 30),
           (double)iters / ((double)(t1 - t0) / 1e9));
    uint64_t h = bc_mix(bc_mix(bc_mix(bc_mix(0, 0x7a65726fu), iters), ws), bytes);
    bc_work(bc_mix(bc_mix(h, acc), rng.s));
    bc_report(ops, t1 - t0);
    return 0;
}

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 7, "[ITERS] [WS] [MIN] [MAX] [SEED] [CHAINS] [MODE]",
             "  Large and huge blocks, 64 KiB - 32 MiB by default.\n   phase 1, alloc/free cycles: a working set of WS slots; ITERS times, free a\n     random slot and refill it with a block of a log-uniform random size in\n     [MIN, MAX]. Each new block has one byte written in each of its first 16\n     pages and its last byte written (a program uses what it allocates, but\n     the page-fault cost must not drown the allocator).\n   phase 2, realloc growth: CHAINS times, start at MIN and grow by 1.5x (plus\n     a random bit) with realloc up to MAX, writing the new tail, then free.\n  Defaults: 20000 8 64k 32m 3 40. One op = one malloc, free or realloc call.\n");
    uint64_t iters = bc_arg_u64(argc, argv, 1, 20000);
    size_t ws = (size_t)bc_arg_u64(argc, argv, 2, 8);
    size_t mn = (size_t)bc_arg_u64(argc, argv, 3, 64 << 10);
    size_t mx = (size_t)bc_arg_u64(argc, argv, 4, 32 << 20);
    uint64_t seed = bc_arg_u64(argc, argv, 5, 3);
    uint64_t chains = bc_arg_u64(argc, argv, 6, 40);
    const char *mode = argc > 7 ? argv[7] : "touch";
    int zero = strcmp(mode, "zeroed") == 0;
    if (ws == 0 || mn == 0 || mx < mn || ws > 1000000 || (!zero && strcmp(mode, "touch") != 0) ||
        (zero && mn < 16) ||
        argc > 8) {
        fprintf(stderr, "usage: bench_large [ITERS] [WS] [MIN] [MAX] [SEED] [CHAINS] [touch|zeroed]\n");
        return 2;
    }
    bc_print_allocator();
    if (zero) return zeroed(iters, ws, mn, mx, seed);
    printf("bench: large iters=%llu ws=%zu min=%zu max=%zu seed=%llu chains=%llu\n",
           (unsigned long long)iters, ws, mn, mx, (unsigned long long)seed,
           (unsigned long long)chains);

    bc_rng rng;
    bc_rng_seed(&rng, seed);
    unsigned char **slot = calloc(ws, sizeof *slot);
    size_t *len = calloc(ws, sizeof *len);
    if (!slot || !len) return 1;
    uint64_t ops = 0, acc = 0;

    uint64_t t0 = bc_now_ns();
    for (size_t i = 0; i < ws; i++) {
        size_t sz = logu(&rng, mn, mx);
        slot[i] = malloc(sz);
        if (!slot[i]) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
        touch(slot[i], sz, (unsigned char)i);
        len[i] = sz;
        ops++;
    }
    for (uint64_t it = 0; it < iters; it++) {
        uint32_t k = bc_rng_below(&rng, (uint32_t)ws);
        acc += slot[k][0] + slot[k][len[k] - 1];
        free(slot[k]);
        size_t sz = logu(&rng, mn, mx);
        unsigned char *p = malloc(sz);
        if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
        touch(p, sz, (unsigned char)it);
        slot[k] = p;
        len[k] = sz;
        ops += 2;
    }
    for (size_t i = 0; i < ws; i++) { free(slot[i]); ops++; }
    uint64_t t1 = bc_now_ns();

    for (uint64_t c = 0; c < chains; c++) {
        size_t sz = mn;
        unsigned char *p = malloc(sz);
        if (!p) return 1;
        ops++;
        p[0] = (unsigned char)c;
        p[sz - 1] = 1;
        while (sz < mx) {
            size_t nsz = sz + sz / 2 + bc_rng_below(&rng, 4096);
            if (nsz > mx) nsz = mx;
            unsigned char *q = realloc(p, nsz);
            if (!q) { fprintf(stderr, "realloc(%zu) failed\n", nsz); return 1; }
            ops++;
            acc += q[0] + q[sz - 1];    /* old contents must have moved along */
            q[nsz - 1] = (unsigned char)nsz;
            p = q;
            sz = nsz;
        }
        free(p);
        ops++;
    }
    uint64_t t2 = bc_now_ns();
    free(slot);
    free(len);
    printf("phase1 cycles: %.0f ops/s\n", (double)(2 * iters + 2 * ws) / ((double)(t1 - t0) / 1e9));
    printf("phase2 realloc: %.3f s\n", (double)(t2 - t1) / 1e9);
    uint64_t h = bc_mix(bc_mix(bc_mix(0, iters), ws), chains);
    bc_work(bc_mix(bc_mix(h, acc), rng.s));
    bc_report(ops, t2 - t0);
    return 0;
}
