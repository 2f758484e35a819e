/* test_size_class — the size-class tables of src/base/size_class.c against what
 * its header comment and docs/ARCHITECTURE.md promise:
 *
 *   - 72 classes, sizes strictly increasing, each a multiple of 16 (every
 *     block of 16 B or more is 16-byte aligned), the last one 32 KiB;
 *   - 16-byte steps up to 128 B, then 8 classes per power of two up to
 *     32 KiB, evenly spaced, the 8th being the next power of two;
 *   - classes 0..HK_NCLASS_SMALL-1 are the sizes <= 1 KiB, the next is not;
 *   - for every size n from 0 to HK_MID_MAX: hk_class_of(n) is the smallest
 *     class whose size is >= n (>= 1 for n = 0), the table lookup
 *     (hk_class_small, sizes <= 1 KiB) and the bit arithmetic
 *     (hk_class_of_formula) agree, and hk_class_bytes is the table's size;
 *   - every entry of hk_class_small is the smallest class holding 16 * index;
 *   - above 128 B a request wastes at most 12.5% of itself (size_class.c)
 *     and at most 11.1% of its block (docs/ARCHITECTURE.md);
 *   - free's block check (hk_slab_is_block, one multiply and one compare)
 *     is exact for every class: at every byte offset within 2 MiB either
 *     side of a slab's start it says yes exactly at the starts of the first
 *     `carved` blocks (carved = 0, 1, a third, all of a 2 MiB slab);
 *   - the copy measure's slot of an address (hk_slab_slot_of, one
 *     multiply) is offset / size inside a slab's blocks, and at least the
 *     capacity before and past them (2 MiB either side, and far away).
 *
 * Standalone: the tables and inline functions only, no allocator. Build:
 *   cc -std=gnu11 -O2 -Wall -Wextra tests/unit/test_size_class.c src/base/size_class.c
 * (or link libhakmem.a instead of src/base/size_class.c: the tables are in it).
 * Prints "size_class: OK (N sizes, M classes)" and exits 0, or prints each
 * failure (the first 100, then a count) and exits 1. */
#include <stdarg.h>
#include <stdio.h>

#include "mem/freelist.h"
#include "base/size_class.h"

#define MAX_PRINT 100

static long failures;

static void fail(const char *fmt, ...) {
  if (failures++ < MAX_PRINT) {
    va_list ap;
    va_start(ap, fmt);
    fputs("size_class: FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
  }
}

/* The smallest class whose size is >= n, by a linear search of the sizes
 * (independent of both lookups under test); HK_NCLASS if none. */
static unsigned smallest_class(size_t n) {
  for (unsigned c = 0; c < HK_NCLASS; c++)
    if (hk_class_size[c] >= n) return c;
  return HK_NCLASS;
}

static void check_classes(void) {
  if (hk_class_size[0] != 16) fail("class 0 is %u B, not 16", hk_class_size[0]);
  if (hk_class_size[HK_NCLASS - 1] != HK_MID_MAX)
    fail("last class (%d) is %u B, not HK_MID_MAX = %d", HK_NCLASS - 1, hk_class_size[HK_NCLASS - 1],
         HK_MID_MAX);
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    uint32_t sz = hk_class_size[c];
    if (sz % 16 != 0) fail("class %u is %u B: not a multiple of 16", c, sz);
    if (c > 0 && sz <= hk_class_size[c - 1])
      fail("class %u is %u B, not above class %u (%u B)", c, sz, c - 1, hk_class_size[c - 1]);
    /* the promised layout: 16-byte steps up to 128 B ... */
    size_t want;
    if (c < 8) {
      want = 16 * (size_t)(c + 1);
    } else {
      /* ... then 8 per power of two: classes 8k..8k+7 (k >= 1) lie in
       * (2^(k+6), 2^(k+7)], spaced 2^(k+6) / 8 apart */
      unsigned k = c / 8, i = c % 8;
      size_t base = (size_t)1 << (k + 6);
      want = base + (base / 8) * (i + 1);
    }
    if (sz != want) fail("class %u is %u B, the layout says %zu", c, sz, want);
  }
  if (HK_NCLASS_SMALL < 1 || HK_NCLASS_SMALL >= HK_NCLASS) {
    fail("HK_NCLASS_SMALL = %d is out of [1, HK_NCLASS)", HK_NCLASS_SMALL);
  } else {
    if (hk_class_size[HK_NCLASS_SMALL - 1] != HK_SMALL_MAX)
      fail("class %d (the last small one) is %u B, not HK_SMALL_MAX = %d", HK_NCLASS_SMALL - 1,
           hk_class_size[HK_NCLASS_SMALL - 1], HK_SMALL_MAX);
    if (hk_class_size[HK_NCLASS_SMALL] <= HK_SMALL_MAX)
      fail("class %d (the first mid one) is %u B, not above HK_SMALL_MAX", HK_NCLASS_SMALL,
           hk_class_size[HK_NCLASS_SMALL]);
  }
}

static void check_small_table(void) {
  for (unsigned i = 0; i <= HK_SMALL_MAX / 16; i++) {
    size_t n = 16 * (size_t)i;
    unsigned want = smallest_class(n ? n : 1);
    if (hk_class_small[i] != want)
      fail("hk_class_small[%u] (sizes %zu..%zu) is %u (%u B), the smallest class holding them is %u (%u B)", i,
           i ? n - 15 : 0, n, hk_class_small[i], hk_class_small[i] < HK_NCLASS ? hk_class_size[hk_class_small[i]] : 0,
           want, hk_class_size[want]);
  }
}

static void check_sizes(size_t *nsizes) {
  size_t count = 0;
  for (size_t n = 0; n <= HK_MID_MAX; n++, count++) {
    unsigned want = smallest_class(n ? n : 1);
    unsigned got = hk_class_of(n), formula = hk_class_of_formula(n);
    if (got >= HK_NCLASS) {
      fail("hk_class_of(%zu) = %u: no such class", n, got);
      continue;
    }
    if (got != want)
      fail("hk_class_of(%zu) = %u (%u B), the smallest class holding it is %u (%u B)", n, got,
           hk_class_size[got], want, hk_class_size[want]);
    if (formula != got)
      fail("size %zu: the table says class %u, the formula %u", n, got, formula);
    if (n > HK_SMALL_MAX && hk_class_of_mid(n) != got)
      fail("size %zu: hk_class_mid says class %u, the formula %u", n, hk_class_of_mid(n), got);
    if (hk_class_bytes(got) != hk_class_size[got])
      fail("hk_class_bytes(%u) = %zu, the table has %u", got, hk_class_bytes(got), hk_class_size[got]);
    size_t block = hk_class_size[got];
    if (block < n) fail("size %zu got class %u of only %zu B", n, got, block);
    if (n > 128 && block >= n) {
      size_t waste = block - n;
      if (waste * 8 > n) fail("size %zu: %zu B block wastes %zu B, over 12.5%% of the request", n, block, waste);
      if (waste * 9 > block) fail("size %zu: %zu B block wastes %zu B, over 11.1%% of the block", n, block, waste);
    }
  }
  *nsizes = count;
}

static void check_block_test(void) {
  const long span = 2l << 20;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    uint32_t d = (uint32_t)hk_class_bytes(c);
    unsigned cap = (unsigned)(span / d), carved_set[4] = {0, 1, cap / 3, cap};
    uintptr_t start = ((uintptr_t)0x7f1234 << 21) + 12288;
    hk_slab_t s = {0};
    s.block_size = d;
    s.capacity = (uint16_t)(cap > 65535 ? 65535 : cap);
    s.div_m = hk_slab_div_m(d);
    s.start_m = (uint64_t)start * s.div_m;
    for (unsigned k = 0; k < 4; k++) {
      unsigned carved = carved_set[k] > 65535 ? 65535 : carved_set[k];
      hk_slab_set_carved(&s, carved);
      for (long n = -span; n < span; n++) {
        bool want = n >= 0 && n % d == 0 && n / d < (long)carved;
        if (hk_slab_is_block(&s, (void *)(start + n)) != want)
          fail("class %u (%u B), carved %u: offset %ld: block check says %d", c, d, carved, n, !want);
      }
    }
  }
}

static void check_slot_of(void) {
  const long span = 2l << 20;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    uint32_t d = (uint32_t)hk_class_bytes(c);
    long slab = c < HK_NCLASS_SMALL ? 64l << 10 : 256l << 10;
    uintptr_t start = ((uintptr_t)0x7f1234 << 21) + 12288;
    hk_slab_t s = {0};
    s.block_size = d;
    s.capacity = (uint16_t)(slab / d);
    s.div_m = hk_slab_div_m(d);
    s.start = (uint8_t *)start;
    long cap = s.capacity, far[] = { -(1l << 40), -(1l << 30), -(1l << 22), 1l << 22, 1l << 30, 1l << 40 };
    for (long n = -span; n < span; n++) {
      size_t got = hk_slab_slot_of(&s, (void *)(start + n));
      bool inside = n >= 0 && n < cap * d;
      if (inside ? got != (size_t)(n / d) : got < (size_t)cap)
        fail("class %u (%u B): offset %ld: slot %zu", c, d, n, got);
    }
    for (unsigned k = 0; k < sizeof far / sizeof far[0]; k++)
      if (hk_slab_slot_of(&s, (void *)(start + far[k])) < (size_t)cap)
        fail("class %u (%u B): offset %ld: slot inside the slab", c, d, far[k]);
  }
}

int main(void) {
  size_t nsizes = 0;
  check_block_test();
  check_slot_of();
  check_classes();
  check_small_table();
  check_sizes(&nsizes);
  if (failures) {
    if (failures > MAX_PRINT) printf("size_class: ... and %ld more\n", failures - MAX_PRINT);
    printf("size_class: FAILED (%ld failures)\n", failures);
    return 1;
  }
  printf("size_class: OK (%zu sizes, %d classes)\n", nsizes, HK_NCLASS);
  return 0;
}
