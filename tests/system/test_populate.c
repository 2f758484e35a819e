/* A filling class's slabs are faulted in whole (hk_heap_fresh_slab,
 * heap_populate): a class whose two slabs before it in the superslab are
 * carved to the end takes a cold slab with its pages faulted in by one
 * MADV_POPULATE_WRITE, not one fault a page. A class's first slabs are
 * not populated: a program with a few blocks in many classes keeps the
 * page or two each carves.
 *
 *   test_populate on    a few blocks in 24 classes: no populate call; then
 *                       16 MiB of 256-byte and 16 MiB of 4096-byte blocks
 *                       (256 and 64 slabs, taken in a row; a heap
 *                       populates once it holds 4 full superslabs of the
 *                       kind, 8 MiB): at least 8 populate calls
 *   test_populate off   the same under HAKMEM_POPULATE_SLABS=0 or the
 *                       lowmem profile (tests/CMakeLists.txt): no call
 *
 * Every block is written and read back. The calls are hakmem's counters
 * (hak_stats_read: populate_calls); a kernel older than 5.14 refuses the
 * advice, and the counter still counts the one call it refused. The
 * background purge and guarded sampling are off (they take no slab here,
 * but keep the counts to this thread's). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../include/hakmem.h"

static unsigned long populate_calls(void) {
  struct hak_stats s;
  memset(&s, 0, sizeof s);
  hak_stats_read(&s, sizeof s);
  return s.populate_calls;
}

static void fill(size_t size, size_t n, unsigned char **keep) {
  for (size_t i = 0; i < n; i++) {
    keep[i] = malloc(size);
    CHECK(keep[i] != NULL);
    if (!keep[i]) return;
    memset(keep[i], (int)(i & 0xff), size);
  }
}

static void check_free(size_t size, size_t n, unsigned char **keep) {
  for (size_t i = 0; i < n; i++) {
    if (!keep[i]) continue;
    CHECK(keep[i][0] == (unsigned char)(i & 0xff) && keep[i][size - 1] == (unsigned char)(i & 0xff));
    free(keep[i]);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "on";
  if (!getenv("TEST_POPULATE_SET")) {
    static const char *const env[] = {
      "TEST_POPULATE_SET", "1",
      "HAKMEM_BACKGROUND_PURGE", "off",
      "HAKMEM_GUARDED_RATE", "0",
      NULL };
    return check_exec_self(argv, env);
  }
  bool on = strcmp(mode, "off") != 0;
  unsigned long base = populate_calls();

  /* a few blocks in 24 classes: each class's first slab only */
  static unsigned char *few[24][8];
  for (unsigned c = 0; c < 24; c++) fill(16 + 48 * c, 8, few[c]);
  unsigned long small_prog = populate_calls() - base;
  printf("a few blocks in 24 classes: %lu populate calls\n", small_prog);
  CHECK(small_prog == 0);

  size_t n1 = ((size_t)16 << 20) / 256, n2 = ((size_t)16 << 20) / 4096;
  unsigned char **a = malloc(n1 * sizeof *a), **b = malloc(n2 * sizeof *b);
  CHECK(a && b);
  if (!a || !b) return check_done("test_populate");
  fill(256, n1, a);
  fill(4096, n2, b);
  unsigned long grown = populate_calls() - base;
  printf("16 MiB of 256-byte and of 4096-byte blocks: %lu populate calls (%s)\n", grown, on ? "on" : "off");
  if (on) CHECK(grown >= 8);
  else CHECK(grown == 0);
  check_free(256, n1, a);
  check_free(4096, n2, b);
  for (unsigned c = 0; c < 24; c++) check_free(16 + 48 * c, 8, few[c]);
  free(a);
  free(b);
  return check_done("test_populate");
}
