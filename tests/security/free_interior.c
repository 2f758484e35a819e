/* free(p + 16) of a 64-byte block: aligned, but inside the block.
 * Caught: default and secure. */
#include "common.h"

int main(void) {
  char *p = malloc(64);
  free(launder(p + 16));
  return not_caught("free of p + 16");
}
