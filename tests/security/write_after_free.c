/* Writes into a block after freeing it (not the link word), then allocates
 * that size until the block is handed out again. argv[1]: block size (default
 * 64), argv[2]: offset written (default 20). Caught at reuse: secure (fill on
 * free; the first 256 bytes with HAKMEM_FREE_FILL=0, all with 1 or 2). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 64);
  size_t off = argc > 2 ? strtoul(argv[2], NULL, 0) : 20;
  char *a = malloc(n);
  memset(a, 'a', n);
  free(a);
  ((char *)launder(a))[off] = 'X';  /* the write after free */
  for (int i = 0; i < 200000; i++) {
    if (malloc(n) == a) return not_caught("block written after free handed out again");
  }
  return not_caught("write after free (block never reused)");
}
