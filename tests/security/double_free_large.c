/* Double free of a large block (> 32 KiB, its own mapping with a header).
 * Caught: default and secure (header state). */
#include "common.h"

int main(void) {
  char *p = malloc(200000);
  memset(p, 'a', 200000);
  free(p);
  free(launder(p));
  return not_caught("large double free");
}
