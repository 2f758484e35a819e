/* test_lib_pages — what a small program keeps resident of libhakmem's code
 * (cmake/hot_text.py, cmake/hot_text.cmake).
 *
 * The kernel maps a file's pages around each one a program touches, up to
 * 64 KiB from the start of that window (fault-around; the window starts
 * at the mapping's start when that is closer). The functions every program
 * runs come first in the library's .text, so a program that starts,
 * allocates and frees small blocks (and a 4 KiB stdio buffer) and prints
 * must have no page of the library's code resident past the first window
 * of its code mapping: a function it runs that the list misses (renamed,
 * split, new) lands further on and fails this, naming the pages; rerun
 * cmake/hot_text.py. The pages are read from /proc/self/pagemap (the
 * present bit needs no privilege). A file not in the page cache maps less,
 * never more, so a cold cache cannot fail it.
 *
 * Only where the build placed the list (tests/CMakeLists.txt registers it
 * then) and with the shared library linked or preloaded; exit 77 without
 * a libhakmem mapping (a static link). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static long window_pages(void) {
  long bytes = 65536;  /* the kernel's default fault_around_bytes */
  FILE *f = fopen("/sys/kernel/debug/fault_around_bytes", "r");
  if (f) {
    if (fscanf(f, "%ld", &bytes) != 1) bytes = 65536;
    fclose(f);
  }
  return bytes / 4096;
}

int main(void) {
  /* a small program's life: small blocks, a few sizes, one stdio buffer */
  void *p[100];
  for (int r = 0; r < 20000; r++) {
    for (int i = 0; i < 100; i++) p[i] = malloc(16 + (size_t)(i % 4) * 48);
    for (int i = 0; i < 100; i++) free(p[i]);
  }
  char *s = calloc(1, 200);
  s = realloc(s, 900);
  snprintf(s, 900, "%d", 42);
  printf("lib_pages: worked %s\n", s);
  free(s);

  FILE *maps = fopen("/proc/self/maps", "r");
  int pm = open("/proc/self/pagemap", O_RDONLY);
  CHECK_FATAL(maps != NULL && pm >= 0);
  char line[512];
  unsigned long lo = 0, hi = 0, off = 0;
  while (fgets(line, sizeof line, maps)) {
    char perm[8];
    unsigned long a, b, o;
    if (sscanf(line, "%lx-%lx %7s %lx", &a, &b, perm, &o) != 4) continue;
    if (strstr(line, "libhakmem") && perm[2] == 'x') {
      lo = a, hi = b, off = o;
      break;
    }
  }
  fclose(maps);
  if (lo == 0) {
    printf("lib_pages: no libhakmem code mapping (static link?): skipped\n");
    return 77;
  }
  long window = window_pages(), present = 0, beyond = 0;
  for (unsigned long a = lo; a < hi; a += 4096) {
    uint64_t e = 0;
    CHECK_FATAL(pread(pm, &e, 8, (off_t)(a / 4096 * 8)) == 8);
    if (!(e >> 63)) continue;
    present++;
    long page = (long)((a - lo) / 4096);
    if (page >= window) {
      beyond++;
      CHECKF(0, "code page %ld (file offset 0x%lx) resident, past the first %ld: "
             "a function this program runs is not in cmake/hot_text.ld (rerun cmake/hot_text.py)",
             page, off + (a - lo), window);
    }
  }
  close(pm);
  printf("lib_pages: %ld of %lu code pages resident, %ld past the first window of %ld\n",
         present, (hi - lo) / 4096, beyond, window);
  CHECKF(present > 0, "no code page resident: pagemap unreadable?");
  return check_done("lib_pages");
}
