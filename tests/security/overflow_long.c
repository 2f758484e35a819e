/* A contiguous overflow of DIST bytes (default 1 MiB) past the end of a
 * block, then its free. argv[1]: the block size (default 8), argv[2]: DIST,
 * argv[3]: where the block lies in its superslab: "early" (the overflow
 * ends inside the superslab's slabs: caught at the block's free, which
 * finds its own slack byte or canary overwritten) or "late" (the overflow
 * runs off the slabs' end: it must fault in the guard past them). The
 * slabs end at 2 MiB, or at 1 MiB where the superslab's second MiB is a
 * guard (measure guard: the program looks at the page there: PROT_NONE or
 * a guard marker). Caught:
 * secure (slack/canary at free, or measure guard). */
#include "common.h"

int main(int argc, char **argv) {
  size_t n = launder_size(argc > 1 ? strtoul(argv[1], NULL, 0) : 8);
  size_t dist = argc > 2 ? strtoul(argv[2], NULL, 0) : (size_t)1 << 20;
  int late = argc > 3 && strcmp(argv[3], "late") == 0;
  char *p = malloc(n);
  size_t end = sec_is_guard(((uintptr_t)p & ~(uintptr_t)((2u << 20) - 1)) + (1u << 20)) ? 1u << 20 : 2u << 20;  /* the slabs' end */
  for (int i = 0; i < 1000000; i++) {  /* leaked: the test ends soon */
    size_t off = (uintptr_t)p & ((2u << 20) - 1);
    if (late ? off >= end - dist + 65536 : off + n + dist < end - 65536) break;
    p = malloc(n);
  }
  size_t off = (uintptr_t)p & ((2u << 20) - 1);
  if (late ? off + dist < end : off + n + dist >= end) return not_caught("no block at the place asked for");
  memset(p, 'p', n);
  volatile char *q = (char *)launder(p) + n;  /* the overflow, by plain stores: a memset */
  for (size_t i = 0; i < dist; i++) q[i] = 'X';  /* would be caught at the call (measure copy) */
  free(p);
  return not_caught("long overflow");
}
