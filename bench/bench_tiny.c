/* bench_tiny [ROUNDS] [SIZE] [BATCH]
 *
 * The tiny fast path: BATCH allocations of SIZE bytes, then BATCH frees (in
 * allocation order), repeated ROUNDS times. Defaults: 10000000 16 100.
 * One op = one malloc or one free call (2*ROUNDS*BATCH ops). */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bc_usage(argc, argv, 3, "[ROUNDS] [SIZE] [BATCH]",
             "  The tiny fast path: BATCH allocations of SIZE bytes, then BATCH frees (in\n  allocation order), repeated ROUNDS times. Defaults: 10000000 16 100.\n  One op = one malloc or one free call (2*ROUNDS*BATCH ops).\n");
    uint64_t rounds = bc_arg_u64(argc, argv, 1, 10000000);
    size_t size = (size_t)bc_arg_u64(argc, argv, 2, 16);
    size_t batch = (size_t)bc_arg_u64(argc, argv, 3, 100);
    if (size == 0 || batch == 0 || batch > 1000000) {
        fprintf(stderr, "usage: bench_tiny [ROUNDS] [SIZE>0] [BATCH]\n");
        return 2;
    }
    bc_print_allocator();
    printf("bench: tiny rounds=%llu size=%zu batch=%zu\n", (unsigned long long)rounds, size, batch);

    unsigned char **ptrs = malloc(batch * sizeof *ptrs);
    if (!ptrs) return 1;
    uint64_t acc = 0;

    uint64_t t0 = bc_now_ns();
    for (uint64_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < batch; i++) {
            unsigned char *p = malloc(size);
            if (!p) { fprintf(stderr, "malloc(%zu) failed\n", size); return 1; }
            p[0] = (unsigned char)i;
            p[size - 1] = (unsigned char)r;
            ptrs[i] = p;
        }
        for (size_t i = 0; i < batch; i++) {
            acc += ptrs[i][0];
            free(ptrs[i]);
        }
    }
    uint64_t t1 = bc_now_ns();

    free(ptrs);
    uint64_t h = bc_mix(bc_mix(bc_mix(0, rounds), size), batch);
    bc_work(bc_mix(h, acc));
    bc_report(2 * rounds * batch, t1 - t0);
    return 0;
}
