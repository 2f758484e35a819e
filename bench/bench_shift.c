/* bench_shift [ROUNDS] [SMALL_MB] [LARGE_MB] [BUF_KB] [SEED]
 *
 * One phase change, small objects then large buffers: a program loads its
 * input into SMALL_MB of small objects (16-256 B, a parse tree: built,
 * edited at random, freed), then settles into a long steady phase over
 * LARGE_MB of large buffers of about BUF_KB (+-10%): ROUNDS times it drops
 * a buffer at random and makes a new one (every page written), each with a
 * small descriptor (48 B) allocated and freed beside it. Defaults
 * 200000 64 64 1024 13.
 *
 * A fixed policy keeps the load phase's emptied slabs resident through the
 * whole steady phase (the steady phase never runs out of small blocks, so
 * the small tier's time-based purge never comes round): peak RSS is about
 * SMALL_MB + LARGE_MB. The learner (HAKMEM_LEARN=1) sees the small tier go
 * idle while large traffic goes on and trims it: peak RSS about
 * max(SMALL_MB, LARGE_MB). One op = one malloc or free. */
#include "bench_common.h"

typedef struct desc { unsigned char *buf; size_t len; uint64_t id; uint64_t pad[3]; } desc_t;

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 5, "[ROUNDS] [SMALL_MB] [LARGE_MB] [BUF_KB] [SEED]",
             "  One phase change, small objects then large buffers: a program loads its\n  input into SMALL_MB of small objects (16-256 B, a parse tree: built,\n  edited at random, freed), then settles into a long steady phase over\n  LARGE_MB of large buffers of about BUF_KB (+-10%): ROUNDS times it drops\n  a buffer at random and makes a new one (every page written), each with a\n  small descriptor (48 B) allocated and freed beside it. Defaults\n  200000 64 64 1024 13.\n");
    uint64_t rounds = bc_arg_u64(argc, argv, 1, 200000);
    size_t small_mb = (size_t)bc_arg_u64(argc, argv, 2, 64);
    size_t large_mb = (size_t)bc_arg_u64(argc, argv, 3, 64);
    size_t buf_kb = (size_t)bc_arg_u64(argc, argv, 4, 1024);
    uint64_t seed = bc_arg_u64(argc, argv, 5, 13);
    if (buf_kb < 64 || large_mb * 1024 < buf_kb) {
        fprintf(stderr, "usage: bench_shift [ROUNDS] [SMALL_MB] [LARGE_MB] [BUF_KB>=64] [SEED]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: shift rounds=%llu small_mb=%zu large_mb=%zu buf_kb=%zu seed=%llu\n",
           (unsigned long long)rounds, small_mb, large_mb, buf_kb, (unsigned long long)seed);
    bc_rng rng;
    bc_rng_seed(&rng, seed);
    size_t nsmall = (small_mb << 20) / 144;  /* 136 B on average + a pointer */
    size_t nbuf = large_mb * 1024 / buf_kb;
    unsigned char **obj = calloc(nsmall ? nsmall : 1, sizeof *obj);
    desc_t **live = calloc(nbuf, sizeof *live);
    if (!obj || !live) return 1;
    uint64_t ops = 0, acc = 0;
    uint64_t t0 = bc_now_ns();
    /* load: build, edit, free */
    if (bc_small_phase(&rng, obj, nsmall, nsmall, &ops, &acc)) return 1;
    /* steady: large buffers, one replaced per round */
    size_t base = buf_kb * 1024;
    for (uint64_t r = 0; r < rounds + nbuf; r++) {
        size_t i = r < nbuf ? (size_t)r : bc_rng_below(&rng, (uint32_t)nbuf);
        if (live[i]) {
            acc += live[i]->buf[0] + live[i]->buf[live[i]->len - 1] + live[i]->id;
            free(live[i]->buf);
            free(live[i]);
            ops += 2;
        }
        desc_t *d = malloc(sizeof *d);
        if (!d) return 1;
        d->len = base - base / 10 + bc_rng_below(&rng, (uint32_t)(base / 5));
        d->buf = malloc(d->len);
        if (!d->buf) { fprintf(stderr, "malloc(%zu) failed\n", d->len); return 1; }
        for (size_t off = 0; off < d->len; off += 4096) d->buf[off] = (unsigned char)(r + off);
        d->buf[d->len - 1] = (unsigned char)r;
        d->id = r;
        live[i] = d;
        ops += 2;
    }
    for (size_t i = 0; i < nbuf; i++) {
        acc += live[i]->buf[0] + live[i]->id;
        free(live[i]->buf);
        free(live[i]);
        ops += 2;
    }
    uint64_t t1 = bc_now_ns();
    free(obj);
    free(live);
    bc_work(bc_mix(bc_mix(bc_mix(0, rounds), small_mb * 1000 + large_mb), acc));
    bc_report(ops, t1 - t0);
    return 0;
}
