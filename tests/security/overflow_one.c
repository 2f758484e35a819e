/* Writes one byte past the requested size, then frees the block.
 * argv[1]: the size (default 24), argv[2]: an alignment for aligned_alloc
 * (default none: malloc). Caught at free: secure (canary, or the
 * exact slack check when the request is smaller than the block). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 24);
  size_t align = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
  char *p = align ? aligned_alloc(align, n) : malloc(n);
  memset(p, 'a', n);
  p[n] = 'X';  /* the overflow */
  free(p);
  return not_caught("one-byte overflow");
}
