/* Writes into a block after freeing it (not the link word), then allocates
 * that size until the block is handed out again. argv[1]: block size (default
 * 64), argv[2]: offset written (default 20). Caught at reuse: secure with
 * fill on free (HAKMEM_FREE_FILL=1 or 2: bytes 8 to the trailer word). */
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
