/* bench_large_rotate [ROUNDS] [BATCH] [SIZE_KB] [SEED]
 *
 * A batch job over big buffers: each round allocates BATCH buffers of about
 * SIZE_KB (+-10%, all close enough to reuse each other's memory), writes
 * every page of each, then frees them all. Defaults 200 48 2560 7: 48
 * buffers of ~2.5 MiB, 120 MiB per round.
 *
 * With a fixed large-block cache smaller than a round (hakmem's default, the
 * balanced profile's 128 entries / 64 MiB, holds about half of one; lowmem's
 * 8 / 8 MiB almost nothing; fast's 256 / 256 MiB all of it: src/base/knobs.c)
 * the other buffers are fresh mappings every round: mmap, munmap and a page
 * fault per page. The learner (HAKMEM_LEARN=1) should grow
 * the cache to hold a round. One op = one malloc or free. */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 4, "[ROUNDS] [BATCH] [SIZE_KB] [SEED]",
             "  A batch job over big buffers: each round allocates BATCH buffers of about\n  SIZE_KB (+-10%, all close enough to reuse each other's memory), writes\n  every page of each, then frees them all. Defaults 200 48 2560 7: 48\n  buffers of ~2.5 MiB, 120 MiB per round.\n");
    uint64_t rounds = bc_arg_u64(argc, argv, 1, 200);
    size_t batch = (size_t)bc_arg_u64(argc, argv, 2, 48);
    size_t kb = (size_t)bc_arg_u64(argc, argv, 3, 2560);
    uint64_t seed = bc_arg_u64(argc, argv, 4, 7);
    if (batch == 0 || batch > 100000 || kb < 64) {
        fprintf(stderr, "usage: bench_large_rotate [ROUNDS] [BATCH] [SIZE_KB] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: large_rotate rounds=%llu batch=%zu size_kb=%zu seed=%llu\n",
           (unsigned long long)rounds, batch, kb, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    unsigned char **buf = calloc(batch, sizeof *buf);
    size_t *len = calloc(batch, sizeof *len);
    if (!buf || !len) return 1;
    uint64_t ops = 0, acc = 0;
    uint64_t t0 = bc_now_ns();
    for (uint64_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < batch; i++) {
            size_t base = kb * 1024;
            size_t sz = base - base / 10 + bc_rng_below(&rng, (uint32_t)(base / 5));
            unsigned char *p = malloc(sz);
            if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); return 1; }
            for (size_t off = 0; off < sz; off += 4096) p[off] = (unsigned char)(r + i);
            p[sz - 1] = (unsigned char)i;
            buf[i] = p;
            len[i] = sz;
            ops++;
        }
        for (size_t i = 0; i < batch; i++) {
            acc += buf[i][0] + buf[i][len[i] - 1];
            free(buf[i]);
            ops++;
        }
    }
    uint64_t t1 = bc_now_ns();
    free(buf);
    free(len);
    bc_work(bc_mix(bc_mix(bc_mix(0, rounds), batch), acc));
    bc_report(ops, t1 - t0);
    return 0;
}
