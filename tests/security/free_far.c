/* free() of memory from a private mmap (a foreign mapping, far from the
 * heap). Caught: default and secure. */
#include <sys/mman.h>
#include "common.h"

int main(void) {
  size_t len = 4 << 20;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) { perror("mmap"); return 2; }
  /* 2 MiB aligned, like the start of a superslab or a large block */
  char *p = (char *)(((uintptr_t)m + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
  memset(p, 0, 4096);
  free(launder(p + 4096));
  return not_caught("free of a foreign mapping");
}
