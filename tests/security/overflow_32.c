/* Writes 32 bytes past the requested size (through the padding into the next
 * block), then frees the block. argv[1]: the size (default 32).
 * Caught at free: secure (canary / slack check). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 32);
  char *p = malloc(n);
  char *neighbour = malloc(n);  /* somewhere after p, live */
  memset(p, 'a', n);
  memset(p + n, 'X', 32);  /* the overflow */
  free(p);
  free(neighbour);
  return not_caught("32-byte overflow");
}
