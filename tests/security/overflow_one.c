/* Writes one byte past the requested size, then frees the block.
 * argv[1]: the size (default 24). Caught at free: secure (canary, or the
 * exact slack check when the request is smaller than the block). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 24);
  char *p = malloc(n);
  memset(p, 'a', n);
  p[n] = 'X';  /* the overflow */
  free(p);
  return not_caught("one-byte overflow");
}
