/* realloc() of a block right after free() (a double free through realloc).
 * argv[1]: size allocated (default 64), argv[2]: size asked of realloc
 * (default the same). Should be reported like free(p); free(p).
 * Found by this test and fixed in 6aebb45: when the new size fitted in place
 * (default build: between half the block and the block; secure: the same
 * size) the freed block came back from realloc unchecked, and malloc later
 * handed the same block out a second time. */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
  size_t m = argc > 2 ? strtoul(argv[2], NULL, 0) : n;
  char *p = malloc(n);
  free(p);
  char *q = realloc(launder(p), m);
  for (int i = 0; i < 100000; i++)
    if (malloc(n) == q) return not_caught("realloc of a freed block; the block is handed out twice");
  return not_caught("realloc of a freed block");
}
