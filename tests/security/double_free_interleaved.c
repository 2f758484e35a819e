/* free(a); free(b); free(a): the classic fastbin-dup pattern that defeats a
 * "same as the list head?" check. Caught: secure (free bitmap). */
#include "common.h"

int main(void) {
  char *a = malloc(48), *b = malloc(48);
  free(a);
  free(b);
  free(launder(a));
  return not_caught("interleaved double free a, b, a");
}
