/* double_free_interleaved [SIZE]: free(a); free(b); free(a): the classic
 * fastbin-dup pattern that defeats a "same as the list head?" check.
 * Caught: default (the free mark), secure (the trailer's state). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 48;
  char *a = malloc(launder_size(n)), *b = malloc(launder_size(n));
  free(a);
  free(b);
  free(launder(a));
  return not_caught("interleaved double free a, b, a");
}
