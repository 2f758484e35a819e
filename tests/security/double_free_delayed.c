/* free(a), then other mallocs and frees of the same size, then free(a) again:
 * a is no longer at the head of any free list. Caught: default (the free
 * mark), secure (the trailer's state). */
#include "common.h"

int main(void) {
  char *a = malloc(64);
  char *other[32];
  for (int i = 0; i < 32; i++) other[i] = malloc(64);
  free(a);
  for (int i = 0; i < 32; i++) free(other[i]);
  for (int i = 0; i < 8; i++) other[i] = malloc(64);
  free(launder(a));
  return not_caught("delayed double free");
}
