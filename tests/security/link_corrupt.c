/* A use-after-free write puts an attacker's pointer (a global, the classic
 * "malloc returns an arbitrary address" setup) into the link word of a freed
 * block, then the program keeps allocating that size. The encoded link
 * decodes to garbage outside the superslab and malloc stops before following
 * it ("free list corrupted"). Caught: default and secure. */
#include "common.h"

static char target[256];

int main(void) {
  char *a = malloc(48);
  free(a);
  *(void **)launder(a) = target;  /* the forged link */
  for (int i = 0; i < 200000; i++) {
    char *q = malloc(48);
    if ((char *)q >= target && (char *)q < target + sizeof target)
      return not_caught("malloc returned the forged address");
  }
  return not_caught("forged free-list link");
}
