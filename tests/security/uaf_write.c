/* A write through a dangling pointer into a block just freed, the shape
 * glibc catches by its chunk headers (issue 63): the freed block's first
 * bytes (glibc's fd/bk, hakmem's link and free mark) are overwritten.
 *
 * argv[1]: the block size (default 4096). argv[2]: what follows the free:
 *   write   16 bytes of 'A' stored at the block's start (all of it when
 *           smaller; plain stores), then nothing but the program's own stdout: its first
 *           printf, whose buffer stdio mallocs (4096 bytes for a pipe, a
 *           file or /dev/null), as in a program that prints a result
 *   malloc  the same write, then a malloc of the same size, kept, and
 *           another (the block may come back on either)
 *   zero    the whole block zeroed (a memset call), then as malloc
 * Caught when the process dies first (a report, or a fault in a guard);
 * else NOT CAUGHT. Runs on any allocator (a peer too). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 4096);
  const char *mode = argc > 2 ? argv[2] : "write";
  require_allocator();
  char *p = malloc(n);
  if (!p) return not_caught("malloc failed");
  memset(p, 'p', n);
  char *keep = malloc(n);  /* a live neighbour, as in a real heap */
  free(p);
  char *d = launder(p);
  if (strcmp(mode, "zero") == 0) memset(d, 0, n);
  else  /* the write after free, by plain stores (a memset call is the copy measure's) */
    for (size_t i = 0; i < (n < 16 ? n : 16); i++) ((volatile char *)d)[i] = 'A';
  if (strcmp(mode, "write") != 0) {
    char *a = malloc(n), *b = malloc(n);
    fprintf(stderr, "uaf_write: freed %p, then malloc gave %p and %p\n", (void *)p, (void *)a, (void *)b);
    free(launder(b));
  }
  printf("uaf_write: the program carries on\n");
  fflush(stdout);
  free(keep);
  return not_caught("a write into a freed block");
}
