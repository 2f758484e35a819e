/* free() of an address in the allocator's own metadata: the header at the
 * start of the 2 MiB superslab that holds a small block. Caught: default and
 * secure (the pointer is not a block of any slab). */
#include "common.h"

int main(void) {
  char *p = malloc(16);
  char *ss = (char *)((uintptr_t)p & ~(uintptr_t)((2u << 20) - 1));
  free(launder(ss + 64));
  return not_caught("free of superslab metadata");
}
