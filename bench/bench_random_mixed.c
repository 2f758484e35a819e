/* bench_random_mixed ITERS WS MIN MAX SEED
 *
 * A working set of WS slots, each holding a block of a random size in
 * [MIN, MAX]. Each op frees a random slot and refills it with a new block of a
 * new random size (first and last byte written). The fill before and the
 * drain after the timed loop are not timed.
 * Defaults: 20000000 400 16 1024 1. One op = one free + one malloc. */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 5, "ITERS WS MIN MAX SEED",
             "  A working set of WS slots, each holding a block of a random size in\n  [MIN, MAX]. Each op frees a random slot and refills it with a new block of a\n  new random size (first and last byte written). The fill before and the\n  drain after the timed loop are not timed.\n  Defaults: 20000000 400 16 1024 1. One op = one free + one malloc.\n");
    uint64_t iters = bc_arg_u64(argc, argv, 1, 20000000);
    size_t ws = (size_t)bc_arg_u64(argc, argv, 2, 400);
    size_t mn = (size_t)bc_arg_u64(argc, argv, 3, 16);
    size_t mx = (size_t)bc_arg_u64(argc, argv, 4, 1024);
    uint64_t seed = bc_arg_u64(argc, argv, 5, 1);
    if (ws == 0 || mn == 0 || mx < mn || ws > 100000000) {
        fprintf(stderr, "usage: bench_random_mixed ITERS WS MIN MAX SEED\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: random_mixed iters=%llu ws=%zu min=%zu max=%zu seed=%llu\n",
           (unsigned long long)iters, ws, mn, mx, (unsigned long long)seed);

    bc_rng rng;
    bc_rng_seed(&rng, seed);
    unsigned char **slot = calloc(ws, sizeof *slot);
    size_t *len = calloc(ws, sizeof *len);
    if (!slot || !len) return 1;
    for (size_t i = 0; i < ws; i++) {
        size_t sz = bc_rng_range(&rng, mn, mx);
        slot[i] = malloc(sz);
        if (!slot[i]) return 1;
        slot[i][0] = (unsigned char)sz;
        slot[i][sz - 1] = 0x5a;
        len[i] = sz;
    }

    uint64_t acc = 0;
    uint64_t t0 = bc_now_ns();
    for (uint64_t it = 0; it < iters; it++) {
        uint32_t k = bc_rng_below(&rng, (uint32_t)ws);
        unsigned char *old = slot[k];
        acc += old[0] + old[len[k] - 1];
        free(old);
        size_t sz = bc_rng_range(&rng, mn, mx);
        unsigned char *p = malloc(sz);
        if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
        p[0] = (unsigned char)sz;
        p[sz - 1] = 0x5a;
        slot[k] = p;
        len[k] = sz;
    }
    uint64_t t1 = bc_now_ns();

    for (size_t i = 0; i < ws; i++) free(slot[i]);
    free(slot);
    free(len);
    uint64_t h = bc_mix(bc_mix(bc_mix(bc_mix(0, iters), ws), mn), mx);
    bc_work(bc_mix(bc_mix(h, acc), rng.s));
    bc_report(iters, t1 - t0);
    return 0;
}
