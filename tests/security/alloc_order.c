/* Allocation order (secure build): fresh blocks come in a random order, so
 * an attacker cannot place a block right after a victim; a freed block is
 * not handed out again at once, so a dangling pointer does not alias the
 * next allocation of its size. Exits 0 when both hold, or the one asked
 * for: `alloc_order order` (measure shuffle), `alloc_order reuse` (measure
 * delay). `alloc_order reuse_mid`: the reuse check alone, for 4000-byte
 * blocks (the mid cache's queue, src/heap/heap.h). `alloc_order reuse SIZE
 * COUNT`: the reuse check for COUNT live blocks of SIZE bytes (a known gap
 * where a slab holds few free blocks at a time: docs/SECURITY.md, "Known
 * gaps"). */
#include "common.h"

#define MAX_N 4096

int main(int argc, char **argv) {
  int N = 256;
  require_hakmem();
  int fails = 0;
  int mid = argc > 1 && strcmp(argv[1], "reuse_mid") == 0;
  int order = argc < 2 || strcmp(argv[1], "order") == 0;
  int reuse = argc < 2 || strcmp(argv[1], "reuse") == 0 || mid;
  size_t size = mid ? 4000 : 40;
  if (argc > 3 && strcmp(argv[1], "reuse") == 0) {
    size = (size_t)atol(argv[2]);
    N = atoi(argv[3]);
    if (size == 0 || N < 2 || N > MAX_N) {
      fprintf(stderr, "usage: alloc_order reuse SIZE COUNT (COUNT 2 to %d)\n", MAX_N);
      return 2;
    }
  }
  /* 1. consecutive mallocs of one size: how often is the next one the
   * neighbouring block? Sequential carving gives ~N; shuffled, a few. */
  static char *p[MAX_N];
  for (int i = 0; i < N; i++) p[i] = malloc(size);
  size_t step = 0;  /* most common positive distance = the block size */
  int adjacent = 0;
  for (int i = 1; i < N; i++) {
    size_t d = (size_t)(p[i] - p[i - 1]);
    if (d <= 64) adjacent++;  /* block size 48 (40 + 8 bytes of canary) */
    (void)step;
  }
  if (order && adjacent > N / 8) {
    fprintf(stderr, "FAIL order: %d of %d consecutive mallocs were neighbours\n", adjacent, N - 1);
    fails++;
  }
  /* 2. free then malloc the same size: not the block just freed, nor one
   * of the 8 freed before it (with plenty of free blocks in the slab, a
   * freed block waits for at least a whole batch of others) */
  int reused = 0, soon = 0;
  char *recent[8] = {0};
  for (int i = 0; i < 4 * N; i++) {
    int k = i % N;
    free(p[k]);
    recent[i % 8] = p[k];
    char *q = malloc(size);
    if (q == p[k]) reused++;
    for (int j = 0; j < 8; j++)
      if (q == recent[j]) soon++;
    p[k] = q;
  }
  if (reuse && (reused || soon)) {
    fprintf(stderr, "FAIL reuse: of %d frees, %d were handed out again at once, %d within 8 mallocs\n",
            4 * N, reused, soon);
    fails++;
  }
  for (int i = 0; i < N; i++) free(p[i]);
  return fails ? 1 : 0;
}
