/* Free lists (freelist.h): the process's link key and free mark, and the
 * report of a corrupted link. */
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
