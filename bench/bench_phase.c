/* bench_phase [CYCLES] [LARGE_MB] [SMALL_MB] [SEED] [CHURN]
 *
 * A program with phases: phase A builds LARGE_MB of 2 MiB buffers, works on
 * them and frees them; phase B then builds SMALL_MB of small objects
 * (16-256 B), replaces CHURN x as many at random, and frees them. Repeated
 * CYCLES times. Defaults 3 64 64 11 4.
 *
 * A fixed large-block cache keeps phase A's memory resident (until the purge
 * delay) while phase B grows: peak RSS is about LARGE_MB + SMALL_MB. Memory
 * that phase B cannot use is dead weight; the learner (HAKMEM_LEARN=1) gives
 * it back when large traffic stops. One op = one malloc or free. */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 5, "[CYCLES] [LARGE_MB] [SMALL_MB] [SEED] [CHURN]",
             "  A program with phases: phase A builds LARGE_MB of 2 MiB buffers, works on\n  them and frees them; phase B then builds SMALL_MB of small objects\n  (16-256 B), replaces CHURN x as many at random, and frees them. Repeated\n  CYCLES times. Defaults 3 64 64 11 4.\n");
    uint64_t cycles = bc_arg_u64(argc, argv, 1, 3);
    size_t large_mb = (size_t)bc_arg_u64(argc, argv, 2, 64);
    size_t small_mb = (size_t)bc_arg_u64(argc, argv, 3, 64);
    uint64_t seed = bc_arg_u64(argc, argv, 4, 11);
    bc_print_allocator();
    printf("bench: phase cycles=%llu large_mb=%zu small_mb=%zu seed=%llu churn=%llu\n",
           (unsigned long long)cycles, large_mb, small_mb, (unsigned long long)seed,
           (unsigned long long)bc_arg_u64(argc, argv, 5, 4));
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    uint64_t churn = bc_arg_u64(argc, argv, 5, 4);
    size_t nlarge = large_mb / 2;
    size_t nsmall = (small_mb << 20) / 144;  /* 136 B on average + a pointer */
    unsigned char **big = calloc(nlarge ? nlarge : 1, sizeof *big);
    unsigned char **obj = calloc(nsmall ? nsmall : 1, sizeof *obj);
    if (!big || !obj) return 1;
    uint64_t ops = 0, acc = 0;
    uint64_t t0 = bc_now_ns();
    for (uint64_t c = 0; c < cycles; c++) {
        /* phase A: big buffers, written through */
        for (size_t i = 0; i < nlarge; i++) {
            size_t sz = (2u << 20) - 4096 * bc_rng_below(&rng, 8);
            big[i] = malloc(sz);
            if (!big[i]) return 1;
            memset(big[i], (int)(i + c), sz);
            ops++;
        }
        for (size_t i = 0; i < nlarge; i++) { acc += big[i][100]; free(big[i]); ops++; }
        /* phase B: small objects, built then churned */
        if (bc_small_phase(&rng, obj, nsmall, churn * nsmall, &ops, &acc)) return 1;
    }
    uint64_t t1 = bc_now_ns();
    free(big);
    free(obj);
    bc_work(bc_mix(bc_mix(bc_mix(0, cycles), large_mb), acc));
    bc_report(ops, t1 - t0);
    return 0;
}
