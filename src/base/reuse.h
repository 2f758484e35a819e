/* reuse.h: the one reuse-distance histogram. A tier that gives memory back
 * (the superslab layer's slabs, the span tier's pages, the large tier's
 * cached mappings) counts, each time the program takes purged memory
 * again, how long that memory had been unused: its reuse distance, from
 * when it was freed (or, where the tier keeps no such stamp, from the
 * purge that gave it back, plus the delay it had waited) to now. The
 * learner reads and empties the histogram each epoch and sets the tier's
 * purge delay to cover the distances it saw (learner.c, "purge windows").
 * Each refault counts its pages (4 KiB), so that the share of purged
 * memory taken again can be weighed against the pages purged.
 *
 * Buckets are powers of two of milliseconds: bucket b holds distances in
 * [2^b, 2^(b+1)) ms (bucket 0 also 0 ms), the last everything longer.
 * Rules: a tier counts with hk_reuse_note (one relaxed add: it runs in a
 * slow path that is already faulting pages in); the learner takes the
 * counts with hk_reuse_take, which zeroes them. */
#ifndef HK_REUSE_H
#define HK_REUSE_H

#include "base/config.h"

#define HK_REUSE_NB 20  /* up to 2^19 ms (about 9 minutes) and beyond */

typedef struct { unsigned long n[HK_REUSE_NB]; } hk_reuse_hist_t;

static inline unsigned hk_reuse_bucket(uint64_t ms) {
  unsigned b = ms ? 63u - (unsigned)__builtin_clzll(ms) : 0;
  return b < HK_REUSE_NB ? b : HK_REUSE_NB - 1;
}
/* The distances of bucket b lie below this (ms). */
static inline uint64_t hk_reuse_upper(unsigned b) { return (uint64_t)2 << b; }

static inline void hk_reuse_note(hk_reuse_hist_t *h, uint64_t ms, unsigned long pages) {
  HK_ADD_RELAXED(h->n[hk_reuse_bucket(ms)], pages);
}

static inline void hk_reuse_take(hk_reuse_hist_t *h, unsigned long out[HK_REUSE_NB]) {
  for (unsigned b = 0; b < HK_REUSE_NB; b++) out[b] = HK_XCHG_RELAXED(h->n[b], 0);
}

#endif
