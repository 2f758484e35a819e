/* span_thp.c: huge or plain, the span tier's huge-page policy.
 *
 * Huge pages pay where a program touches its blocks densely: one fault per
 * 2 MiB instead of 512. Where it touches a few pages of each big block they
 * cost: each page touched makes 2 MiB resident, and the program runs
 * slower for the faults that fill them. Which it is cannot be told at
 * malloc, so it is measured at free. A block of HK_THP_BIG bytes or more
 * records at allocation (or growth) its `fresh` chunks: the whole 2 MiB
 * chunks none of whose pages may be resident (a chunk an earlier block
 * touched is resident whatever this one does). When it is freed they are
 * asked (mincore, before the lock) what the program touched: in a
 * huge-page arena a touched chunk is resident whole, so the sample is the
 * share of fresh chunks touched; in a plain arena it is the share of their
 * pages resident (never more than the first: a program is not sent back
 * to huge pages by a measure that a sparse program passes). The samples'
 * running mean (1/4 weight each) decides where the next block goes,
 * whatever its size: below HK_THP_PLAIN_PM per mille, to plain arenas (no
 * huge pages); above HK_THP_HUGE_PM, to huge-page arenas (where every
 * program starts). Smaller blocks follow the big ones: a program that
 * touches a few pages of its big blocks touches a few of its 1 MiB blocks
 * too, and packed in a huge page they keep it resident. calloc's blocks
 * that are faulted in whole (up to HK_SPAN_POPULATE_MAX) always go to
 * huge-page arenas. Only under HAKMEM_THP=auto: `always` gives every arena
 * huge pages, `never` none. A block keeps its arena when it grows in place. */
#include "backend/span_thp.h"

#include <string.h>

#include "backend/span_arena.h"
#include "base/knobs.h"

static unsigned thp_density = 1000;  /* per mille; racy (a lost update only delays the mean) */
static bool thp_plain;               /* big blocks go to plain arenas */
static size_t thp_plain_blocks, thp_samples;

static bool thp_adaptive(void) {
  return hk_os_thp() != HK_THP_NONE && HK_LOAD_RELAXED(hk_knobs.thp) != HK_THP_KNOB_ALWAYS;
}

bool hk_thp_want_huge(uint32_t pages, bool zero) {
  if (hk_os_thp() == HK_THP_NONE) return false;
  if ((zero && ((size_t)pages << PAGE_SHIFT) <= HK_SPAN_POPULATE_MAX) || !thp_adaptive()) return true;
  return !HK_LOAD_RELAXED(thp_plain);
}

void hk_thp_placed(bool huge) {
  if (!huge && hk_os_thp() != HK_THP_NONE) HK_ADD_RELAXED(thp_plain_blocks, 1);
}

uint64_t hk_thp_fresh_chunks(const hk_arena_t *a, uint32_t head, uint32_t from, uint32_t to) {
  if (((size_t)(to - head) << PAGE_SHIFT) < HK_THP_BIG || !thp_adaptive()) return 0;
  uint32_t first = (head + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1);
  uint32_t lo = (from + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1), hi = to & ~(HUGE_PAGES - 1);
  uint64_t m = 0;
  for (uint32_t c = lo; c + HUGE_PAGES <= hi && (c - first) / HUGE_PAGES < 64; c += HUGE_PAGES)
    if (!bits_count(a, c, HUGE_PAGES)) m |= 1ull << ((c - first) / HUGE_PAGES);
  return m;
}

/* Reads the block's entry without the lock; a block freed twice at once
 * (a program's bug, reported under the lock after this) only skews a
 * sample. */
void hk_thp_sample(hk_arena_t *a, uint32_t i, uint8_t *p) {
  if (!thp_adaptive() || a->magic != ARENA_MAGIC || i < a->first_page || ((uintptr_t)p & (HK_PAGE - 1))) return;
  uint8_t tag = HK_LOAD_RACY(a->e[i].tag);
  uint32_t n = HK_LOAD_RACY(a->e[i].npages);
  if ((tag & (T_HEAD | T_LIVE | T_POPULATED)) != (T_HEAD | T_LIVE) || n > ARENA_PAGES - i) return;
  uint64_t fresh = HK_LOAD_RACY(a->e[i].l.fresh);
  if (!fresh) return;
  uintptr_t lo = hk_align_up((uintptr_t)p, HK_SS_SIZE);
  unsigned chunks = 0, touched = 0;
  size_t pages = 0;
  unsigned char vec[HUGE_PAGES];  /* one chunk's pages */
  for (unsigned k = 0; k < 64; k++) {
    if (!(fresh >> k & 1)) continue;
    if (!hk_os_resident((void *)(lo + ((size_t)k << HK_SS_SHIFT)), HK_SS_SIZE, vec)) return;
    chunks++;
    unsigned r = 0;
    for (size_t x = 0; x < sizeof vec; x += 8) {
      uint64_t w;
      memcpy(&w, vec + x, 8);
      r += hk_popcount64(w & 0x0101010101010101ull);
    }
    touched += r != 0;
    pages += r;
  }
  unsigned f = a->huge ? touched * 1000 / chunks : (unsigned)(pages * 1000 / ((size_t)chunks * HUGE_PAGES));
  unsigned d = HK_LOAD_RELAXED(thp_density);
  d = (unsigned)((int)d + ((int)f - (int)d) / 4);
  HK_STORE_RELAXED(thp_density, d);
  HK_ADD_RELAXED(thp_samples, 1);
  if (d < HK_THP_PLAIN_PM) HK_STORE_RELAXED(thp_plain, true);
  else if (d > HK_THP_HUGE_PM) HK_STORE_RELAXED(thp_plain, false);
}

void hk_span_thp_info(size_t *plain_blocks, size_t *samples, unsigned *density_pm) {
  *plain_blocks = HK_LOAD_RELAXED(thp_plain_blocks);
  *samples = HK_LOAD_RELAXED(thp_samples);
  *density_pm = HK_LOAD_RELAXED(thp_density);
}
