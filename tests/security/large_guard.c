/* Overflows a large block (a whole number of pages, so its end is the end of
 * the mapping's usable part) by one byte. Caught: secure (guard page ->
 * SIGSEGV at the write). */
#include "common.h"

int main(void) {
  size_t n = launder_size(25 * 4096);
  char *p = malloc(n);
  memset(p, 'a', n);
  ((volatile char *)p)[n] = 'X';  /* the overflow */
  free(p);
  return not_caught("overflow past a large block");
}
