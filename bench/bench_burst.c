/* bench_burst [BURSTS] [BURST_MB] [PAUSE_MS] [SEED]
 *
 * Bursty work: every burst builds BURST_MB of small objects (32-512 B),
 * works on them and frees them all; between bursts the program idles for
 * PAUSE_MS doing light work (a few small allocations). Defaults 6 64 1200 3.
 *
 * With the default purge delay (1 s) the memory of one burst is purged during
 * the pause and the next burst faults every page back in. The learner
 * (HAKMEM_LEARN=1) sees purged memory reused soon after and lengthens the
 * delay. Throughput counts burst time only; one op = one malloc or free. */
#include "bench_common.h"

#include <time.h>

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 4, "[BURSTS] [BURST_MB] [PAUSE_MS] [SEED]",
             "  Bursty work: every burst builds BURST_MB of small objects (32-512 B),\n  works on them and frees them all; between bursts the program idles for\n  PAUSE_MS doing light work (a few small allocations). Defaults 6 64 1200 3.\n");
    uint64_t bursts = bc_arg_u64(argc, argv, 1, 6);
    size_t mb = (size_t)bc_arg_u64(argc, argv, 2, 64);
    uint64_t pause_ms = bc_arg_u64(argc, argv, 3, 1200);
    uint64_t seed = bc_arg_u64(argc, argv, 4, 3);
    bc_print_allocator();
    printf("bench: burst bursts=%llu burst_mb=%zu pause_ms=%llu seed=%llu\n",
           (unsigned long long)bursts, mb, (unsigned long long)pause_ms, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    size_t n = (mb << 20) / 280;  /* 272 B on average */
    unsigned char **obj = calloc(n, sizeof *obj);
    if (!obj) return 1;
    uint64_t ops = 0, acc = 0, busy_ns = 0;
    for (uint64_t b = 0; b < bursts; b++) {
        uint64_t t0 = bc_now_ns();
        for (size_t i = 0; i < n; i++) {
            size_t sz = 32 + bc_rng_below(&rng, 481);
            obj[i] = malloc(sz);
            if (!obj[i]) return 1;
            memset(obj[i], (int)i, sz);
            ops++;
        }
        for (size_t i = 0; i < n; i++) { acc += obj[i][0]; free(obj[i]); ops++; }
        busy_ns += bc_now_ns() - t0;
        /* the pause: light work, so a slow path runs now and then */
        uint64_t until = bc_now_ns() + pause_ms * 1000000ull;
        while (bc_now_ns() < until) {
            void *p[64];
            for (int k = 0; k < 64; k++) p[k] = malloc(16 + (size_t)k * 8);
            for (int k = 0; k < 64; k++) free(p[k]);
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
    }
    free(obj);
    bc_work(bc_mix(bc_mix(bc_mix(0, bursts), mb), acc));
    bc_report(ops, busy_ns);
    return 0;
}
