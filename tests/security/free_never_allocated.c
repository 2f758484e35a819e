/* free() of an address that is exactly the start of a block of a live slab,
 * but a block hakmem never handed out (not carved yet): p + 40 blocks, for
 * the first block of a fresh 3000-byte class (3072-byte blocks, 256 KiB
 * slabs). Caught: default (free's bound is the blocks carved so far),
 * secure (the canary: reported, with the reason "heap overflow"). */
#include "common.h"

int main(void) {
  char *p = malloc(3000);
  char *q = p + 40 * 3072;
  if (((uintptr_t)p >> 18) != ((uintptr_t)q >> 18)) {
    fprintf(stderr, "security test: setup: %p and %p are not in one 256 KiB slab\n", (void *)p, (void *)q);
    return 2;
  }
  free(launder(q));
  int times = 0;
  for (int i = 0; i < 200; i++)
    if (malloc(3000) == q) times++;
  fprintf(stderr, "security test: the block was handed out %d times\n", times);
  return not_caught("free of a block never handed out");
}
