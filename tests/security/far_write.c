/* One stray store far from a block, in a small program (issue 63): the
 * block alone, then one byte written DIST bytes past its last byte (+D) or
 * DIST bytes before its first (-D), then the block freed and the program's
 * first printf. Unlike single_write, which allocates until the byte lands
 * in a live neighbour, this is the store as a program makes it: wherever
 * it lands (memory no block holds, a freed block, a guard, no mapping).
 * argv[1]: the block size (default 262144); argv[2]: DIST, signed (default
 * +1048576); argv[3]: "memcpy" for a memcpy of DIST + n bytes from the
 * block's start (an overflow by a copy that runs on), "memcpy" with -D:
 * of n + D bytes from p - D into the block's neighbours.
 * Caught when the process dies first: a report, or a SIGSEGV (common.h
 * says whether it hit a guard: attack.sh wants one). Runs on any allocator. */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 262144);
  long d = argc > 2 ? strtol(argv[2], NULL, 0) : 1048576;
  int copy = argc > 3 && strcmp(argv[3], "memcpy") == 0;
  require_allocator();
  char *p = malloc(n);
  if (!p) return not_caught("malloc failed");
  memset(p, 'p', n);
  char *t = d >= 0 ? p + n - 1 + d : p + d;
  fprintf(stderr, "far_write: block %p of %zu bytes, %s at %p\n", (void *)p, n, copy ? "memcpy" : "store",
          (void *)t);
  if (copy) {
    size_t len = n + (size_t)(d >= 0 ? d : -d);
    char *src = malloc(len), *dst = d >= 0 ? p : p + d;
    if (!src) return not_caught("malloc failed");
    memset(src, 'X', len);
    memcpy(launder(dst), src, len);
    free(src);
  } else {
    *(volatile char *)launder(t) = 'X';
  }
  free(p);
  printf("far_write: the program carries on\n");
  fflush(stdout);
  return not_caught(d >= 0 ? "a write far past a block" : "a write far before a block");
}
