/* free_not_handed_out SIZE OFFSET: free(p + OFFSET) for a fresh block p of
 * SIZE bytes, where p + OFFSET is the start of another block of p's slab
 * that was never handed out: carved and waiting on the free list (OFFSET
 * one block) or not carved yet (OFFSET 4096 for 8 bytes: past the first
 * carve). Caught: default (the free mark; the carved bound), secure. */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
  size_t off = argc > 2 ? strtoul(argv[2], NULL, 0) : 4096;
  char *p = malloc(launder_size(n));
  free(launder(p + off));
  int times = 0;
  for (int i = 0; i < 300; i++)
    if (malloc(launder_size(n)) == p + off) times++;
  fprintf(stderr, "security test: the block was handed out %d times\n", times);
  return not_caught("free of a block never handed out");
}
