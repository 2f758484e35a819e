/* Writes DIST bytes ('X') right before a block, then frees it. argv[1]: the
 * block size (default 8), argv[2]: DIST (default 1), argv[3]: "first" for a
 * block that starts a 64 KiB-aligned slab (the byte before it is the slab
 * before's), else the third block of its size (a block precedes it).
 * Caught at its free: secure (measure under). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 8);
  size_t dist = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
  int first = argc > 3 && strcmp(argv[3], "first") == 0;
  char *a = malloc(n), *b = malloc(n), *p = malloc(n);
  memset(a, 'a', n);
  memset(b, 'b', n);
  for (int i = 0; first && i < 100000; i++) {  /* leaked: the test ends soon */
    uintptr_t u = (uintptr_t)p;
    if ((u & 0xffff) == 0 && (u & 0x1fffff) != 0) break;
    p = malloc(n);
  }
  if (first && ((uintptr_t)p & 0xffff) != 0) return not_caught("no block at a slab start found");
  memset(p, 'p', n);
  /* the underflow, by plain stores (a memset call would be caught at the
   * call by measure copy: copy_overflow tests that; this tests free's check) */
  for (volatile char *q = (char *)launder(p) - dist; q < p; q++) *q = 'X';
  free(p);
  free(b);
  free(a);
  return not_caught("underflow");
}
