/* free(p + 1): misaligned. Caught: default and secure. */
#include "common.h"

int main(void) {
  char *p = malloc(32);
  free(launder(p + 1));
  return not_caught("free of p + 1");
}
