/* Writes 32 bytes past the requested size (through the padding into the next
 * block), then frees the block. argv[1]: the size (default 32).
 * Caught at free: secure (canary / slack check). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 32);
  char *p = malloc(n);
  char *neighbour = malloc(n);  /* somewhere after p, live */
  memset(p, 'a', n);
  /* the overflow, by plain stores: a memset call would be caught at the
   * call by the secure build's measure copy (copy_overflow tests that);
   * this tests what free finds */
  for (volatile char *q = p + n; q < p + n + 32; q++) *q = 'X';
  free(p);
  free(neighbour);
  return not_caught("32-byte overflow");
}
