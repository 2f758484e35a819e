/* Parked pages: the free pages inside a slab that still holds live blocks
 * go back to the OS (HAKMEM_PARK_PAGES). A slab emptied to a few scattered
 * survivors otherwise keeps every page it ever touched: one survivor pins
 * the whole slab, and a class the program has moved away from (an LRU
 * cache refilled with larger values) holds its peak for good.
 *
 * A page is parked when every block that overlaps it is free: those blocks
 * leave the slab's lists (counted out, in `used` and `nparked`) and the
 * page is purged. They come back (hk_slab_unpark), a carve batch at a
 * time, when the slab has no free block left to hand out and nothing left
 * to carve, before the heap takes a fresh slab.
 *
 * A parked block has no free mark (its page reads as zero), so a second
 * free of it is not caught at the free. It is caught later instead: the
 * free writes a link into the page, and a parked page found resident when
 * its blocks come back is reported (HAKMEM_ABORT_ON_INVALID) and its
 * blocks never handed out again; a listed block on a parked page, found by
 * the next park, is reported as a double free. Not with the measures that
 * order or stamp free blocks (shuffle, canary, delayed reuse): their lists
 * are not rebuilt. */
#ifndef HK_SLAB_PARK_H
#define HK_SLAB_PARK_H

#include "mem/freelist.h"

/* Whether this build parks at all (the measures above), and whether s has
 * parked pages. */
#define HK_PARK_BUILD (!HK_M_CANARY && !HK_M_SHUFFLE && !HK_M_DELAY)
HK_INLINE bool hk_slab_has_parked(const hk_slab_t *s) { return HK_PARK_BUILD && s->parked != 0; }

/* s's owner parks s's free pages; s is not its class's current slab.
 * Remote frees not collected yet count as live (the caller collects them
 * first, hk_heap_park, to count them). Unless forced (a trim), s is looked at
 * only once a quarter more of its blocks are free than at its last look.
 * Returns the bytes purged (0: none, or fewer than HK_PARK_MIN_PAGES pages
 * would go). */
size_t hk_slab_park(hk_slab_t *s, bool force);

/* s's owner takes back its lowest parked pages, a carve batch (and the
 * rest of a block that crosses the last of them): their blocks go onto
 * s->free. False when none came back (every parked page written to:
 * reported). */
bool hk_slab_unpark(hk_slab_t *s);

/* s's counts say it holds no live block, only free and parked ones
 * (used == nparked): they are made those of an empty slab (used 0), for
 * its release. False when a parked page was written to since it was parked
 * (a double free of one of its blocks, which took one from used while a
 * block is still live; or a write after free): reported, the clean pages'
 * blocks taken back, and s must be kept. */
bool hk_slab_unpark_empty(hk_slab_t *s);

/* No parked page of s was written to since it was parked (any thread: it
 * reads the pages' residency and only reads what is resident). */
bool hk_slab_parked_clean(const hk_slab_t *s);

/* hk_slab_unpark_empty's counts alone, for a slab found clean
 * (hk_slab_parked_clean) by a thread that must not touch its lists: the
 * purge thread, while the owner is stopped. */
void hk_slab_drop_parked(hk_slab_t *s);

/* hk_slab_rebuild's part (a fork child's adopter): fork() may have stopped
 * a park halfway (its bits stored, its madvise not made: the pages still
 * hold the old lists) or a take-back (its blocks listed, the bits and
 * counts not yet cleared). The bits stand: their pages are purged again,
 * the blocks on them leave `listed` (a bit per block, the first `carved`),
 * and nparked counts the blocks they keep out. */
void hk_slab_parked_rebuild(hk_slab_t *s, uint64_t *listed, unsigned carved);

/* An abandoned superslab's partial slabs parked (HAKMEM_PARK_IDLE): their
 * remote frees collected first (a slab left with none live becomes
 * unused), then hk_slab_park. The caller holds ss off the abandoned lists
 * (superslab.c's park hook). Bytes purged. */
size_t hk_slab_park_orphan(hk_superslab_t *ss);

#endif
