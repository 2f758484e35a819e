/* malloc(0). argv[1]:
 *   ok      (default) malloc(0), calloc(0, n) and realloc(NULL, 0) return
 *           distinct pointers, live at once; free, realloc to a real size
 *           and realloc to 0 of them work
 *   read    reads the byte malloc(0) points at
 *   write   writes it
 *   double  frees a malloc(0) pointer twice
 * Caught (read, write: a SIGSEGV in a guard; double: the report): secure
 * (measure zero). */
#include <malloc.h>

#include "common.h"

#define N 1000

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  require_allocator();
  char *p = malloc(launder_size(0));
  if (!p) return not_caught("malloc(0) returned NULL");
  if (strcmp(mode, "read") == 0) {
    volatile char c = *(volatile char *)launder(p);
    (void)c;
    return not_caught("read of malloc(0)'s block");
  }
  if (strcmp(mode, "write") == 0) {
    *(volatile char *)launder(p) = 'X';
    return not_caught("write to malloc(0)'s block");
  }
  if (strcmp(mode, "double") == 0) {
    free(p);
    free(launder(p));
    return not_caught("double free of malloc(0)'s block");
  }
  static char *z[N];
  for (int i = 0; i < N; i++) {
    z[i] = i % 3 == 0 ? malloc(launder_size(0)) : i % 3 == 1 ? calloc(launder_size(0), 8) : realloc(NULL, 0);
    if (!z[i]) return not_caught("a zero-size request returned NULL");
    if (z[i] == p) return not_caught("two live zero-size blocks share a pointer");
    if (malloc_usable_size(z[i]) > 64) return not_caught("usable size of a zero-size block");
  }
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N && j < i + 50; j++)
      if (z[i] == z[j]) return not_caught("two live zero-size blocks share a pointer");
  for (int i = 0; i < N; i += 2) free(z[i]);
  for (int i = 1; i < N; i += 2) {
    if (i % 4 == 1) {
      char *q = realloc(z[i], 100);  /* a real block now */
      if (!q) return not_caught("realloc of a zero-size block failed");
      memset(q, 'q', 100);
      free(q);
    } else if (realloc(z[i], 0) != NULL) {
      return not_caught("realloc(zero-size block, 0) did not free it");
    }
  }
  free(p);
  return 0;
}
