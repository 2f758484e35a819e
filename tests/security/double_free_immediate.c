/* free(p); free(p) with nothing in between. Caught: default and secure. */
#include "common.h"

int main(void) {
  char *p = malloc(64);
  memset(p, 'a', 64);
  free(p);
  free(launder(p));
  return not_caught("immediate double free");
}
