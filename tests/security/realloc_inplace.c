/* realloc within a block keeps the block, and the overflow checks follow
 * the new size. argv[1]:
 *   ok        100 -> 104 -> 60 bytes: the same pointer each time (both
 *             builds: the 112-byte block holds each size and each fills
 *             at least half of it), the content kept; exit 0
 *   overflow  100 -> 60 bytes, then one byte past the 60: caught at free
 *             (secure: the byte after the new size is checked) */
#include <malloc.h>
#include "common.h"

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  require_hakmem();
  unsigned char *p = malloc(launder_size(100));
  for (int i = 0; i < 100; i++) p[i] = (unsigned char)i;
  if (strcmp(mode, "overflow") == 0) {
    unsigned char *q = realloc(p, launder_size(60));
    q[60] = 'X';  /* the overflow: inside the old size, past the new one */
    free(q);
    return not_caught("one-byte overflow after an in-place shrink");
  }
  size_t sizes[] = { 104, 60 };
  for (int k = 0; k < 2; k++) {
    unsigned char *q = realloc(p, launder_size(sizes[k]));
    if (q != p) {
      fprintf(stderr, "realloc(%zu) moved the block\n", sizes[k]);
      return 1;
    }
    if (malloc_usable_size(q) < sizes[k]) {
      fprintf(stderr, "usable size %zu < %zu\n", malloc_usable_size(q), sizes[k]);
      return 1;
    }
    for (int i = 0; i < 60; i++)
      if (q[i] != (unsigned char)i) { fprintf(stderr, "content lost at %d\n", i); return 1; }
    memset(q + 60, 0xAB, sizes[k] - 60);  /* the whole new size is usable */
  }
  free(p);
  return 0;
}
