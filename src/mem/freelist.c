/* Free lists (freelist.h): the process's link key and free mark, the
 * report of a corrupted link, and the sample point's cut. */
#define _GNU_SOURCE
#include "mem/freelist.h"

#include "base/random.h"

uintptr_t hk_list_key;
uintptr_t hk_free_mark;

/* Both from the process's random seed (random.c), each for its own purpose:
 * the mark, which any freed block shows, tells nothing of the key. */
void hk_list_key_init(void) {
  hk_list_key = (uintptr_t)(hk_random(HK_RANDOM_LIST_KEY, 0) | 1);
  hk_free_mark = (uintptr_t)(hk_random(HK_RANDOM_FREE_MARK, 0) | 1);  /* never 0, what malloc leaves */
}

void hk_report_list_corrupt(const void *block) {
  hk_report_invalid("malloc", block,
                    "free list corrupted (heap overflow or write after free) next to this block");
  __builtin_trap();  /* a corrupted list cannot be followed, whatever the knob says */
}

uint64_t hk_slab_sample_point(hk_slab_t *s, uint64_t bytes, bool aside) {
  if (aside) hk_slab_set_aside(s);
  uint64_t size = s->block_size;
  if (!s->local_free && !HK_M_DELAY) {
    /* every block not out is on s->free: no walk, no division */
    uint64_t all = (uint64_t)(s->carved - s->used) * size;
    if (all <= bytes) return all;
  }
  uint64_t keep = bytes / size, n = 0;
  hk_block_t *last = NULL, *rest = s->free;  /* the last block kept, the first cut off */
  while (rest && n < keep) {
    hk_block_t *nx = hk_block_next(s, rest);
    if (HK_UNLIKELY(!hk_link_ok(s, rest, nx) || ++n > s->capacity)) hk_report_list_corrupt(rest);
    last = rest;
    rest = nx;
  }
  if (!rest) return n * size;  /* the whole list fits */
  if (last) hk_block_set_next(s, last, NULL);
  else s->free = NULL;
  if (s->local_free) hk_list_splice(s, rest, &s->local_free, false);
  else s->local_free = rest;
  return n * size;
}
