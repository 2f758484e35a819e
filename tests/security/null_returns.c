/* Impossible sizes give NULL and errno ENOMEM, never a small block:
 * malloc(SIZE_MAX), malloc(PTRDIFF_MAX + 1), calloc overflow, realloc huge,
 * reallocarray overflow, aligned_alloc / memalign / posix_memalign huge.
 * Exits 0 when every call behaved (default and secure). */
#include <malloc.h>
#include "common.h"

static int fails;

static void expect_null(const char *what, void *p, int err) {
  if (p != NULL || err != ENOMEM) {
    fprintf(stderr, "FAIL %s: returned %p, errno %d (want NULL, ENOMEM %d)\n", what, p, err, ENOMEM);
    fails++;
  }
}

#define CHECK(what, expr) do { errno = 0; void *r_ = (expr); expect_null(what, r_, errno); } while (0)

int main(void) {
  require_allocator();
  size_t max = launder_size(SIZE_MAX), half = launder_size(SIZE_MAX / 2 + 1);
  CHECK("malloc(SIZE_MAX)", malloc(max));
  CHECK("malloc(SIZE_MAX - 4096)", malloc(max - 4096));
  CHECK("malloc(PTRDIFF_MAX + 1)", malloc(launder_size((size_t)PTRDIFF_MAX + 1)));
  CHECK("calloc(SIZE_MAX/2+1, 2)", calloc(half, 2));
  CHECK("calloc(2, SIZE_MAX/2+1)", calloc(2, half));
  CHECK("calloc(1 << 33, 1 << 33)", calloc(launder_size((size_t)1 << 33), (size_t)1 << 33));
  CHECK("calloc(1, SIZE_MAX)", calloc(1, max));
  CHECK("aligned_alloc(64, SIZE_MAX)", aligned_alloc(64, max));
  CHECK("aligned_alloc(1 MiB, SIZE_MAX - 1 MiB)", aligned_alloc(1 << 20, max - (1 << 20)));
  CHECK("memalign(4096, SIZE_MAX)", memalign(4096, max));

  void *out = (void *)0x1;
  int rc = posix_memalign(&out, 64, max);
  if (rc != ENOMEM || out != (void *)0x1) {
    fprintf(stderr, "FAIL posix_memalign(64, SIZE_MAX): rc %d, out %p\n", rc, out);
    fails++;
  }

  /* realloc huge: NULL, ENOMEM, and the old block still valid and intact */
  char *p = malloc(100);
  memset(p, 'k', 100);
  CHECK("realloc(p, SIZE_MAX)", realloc(p, max));
  CHECK("realloc(p, SIZE_MAX/2+1)", realloc(p, half));
  CHECK("reallocarray(p, SIZE_MAX/2+1, 2)", reallocarray(p, half, 2));
  for (int i = 0; i < 100; i++)
    if (p[i] != 'k') { fprintf(stderr, "FAIL realloc huge damaged the old block\n"); fails++; break; }
  free(p);
  char *big = malloc(100000);
  memset(big, 'm', 100000);
  CHECK("realloc(large, SIZE_MAX)", realloc(big, max));
  if (big[99999] != 'm') { fprintf(stderr, "FAIL realloc huge damaged the old large block\n"); fails++; }
  free(big);
  CHECK("realloc(NULL, SIZE_MAX)", realloc(NULL, max));

  /* the heap is still fine */
  for (int i = 0; i < 1000; i++) free(malloc((size_t)i * 7 + 1));
  return fails ? 1 : 0;
}
