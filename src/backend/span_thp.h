/* span_thp.h: huge or plain, the span tier's huge-page policy: which
 * arenas (advised huge pages or not) the next block goes to, learnt from
 * what the program touched of the blocks it freed. span.h includes it for
 * hk_span_thp_info; the rest is span.c's. */
#ifndef HK_SPAN_THP_H
#define HK_SPAN_THP_H

#include "base/config.h"

struct hk_arena;

/* Huge or plain: big blocks placed in plain arenas so far, the freed
 * blocks sampled, and the running share of their 2 MiB chunks touched,
 * per mille. */
void hk_span_thp_info(size_t *plain_blocks, size_t *samples, unsigned *density_pm);

/* Whether a block of `pages` pages (calloc's: zero) goes to a huge-page arena. */
bool hk_thp_want_huge(uint32_t pages, bool zero);
/* A block was placed in a huge-page arena or not (counted). */
void hk_thp_placed(bool huge);
/* The fresh chunks of the block whose first page is `head` and that ends
 * at page `to`, among its whole 2 MiB chunks from page `from` on (bit k:
 * its k-th whole chunk; the first 64); 0 for a block too small to be
 * sampled, or when nothing is. Before those pages are marked; under the lock. */
uint64_t hk_thp_fresh_chunks(const struct hk_arena *a, uint32_t head, uint32_t from, uint32_t to);
/* The sample of the block at p, page i of arena a, being freed (the
 * caller's, still live), into the running mean. Without the lock. */
void hk_thp_sample(struct hk_arena *a, uint32_t i, uint8_t *p);

#endif
