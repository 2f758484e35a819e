/* Large and huge blocks (> 32 KiB): each its own mapping, starting on a
 * 2 MiB boundary with a one-page header, so free() finds the header from the
 * chunk map. Freed mappings go to a small cache (alloc/free cycles and
 * realloc growth make no syscalls) and are purged after a delay. */
#ifndef HK_LARGE_H
#define HK_LARGE_H

#include "base/config.h"

/* align: 0 or a power of two. zero: contents must read as zero.
 * kind: HK_KIND_* (config.h), checked at free in the secure build. */
void  *hk_large_alloc(size_t size, size_t align, bool zero, unsigned kind);
/* ck: the chunk-map value of p's chunk (hk_chunk_is_large); kind and size:
 * what the caller expects (HK_KIND_ANY, 0: unknown). */
void   hk_large_free(void *p, unsigned ck, unsigned kind, size_t size);
size_t hk_large_usable(const void *p, unsigned kind);
/* Measure copy: the live large block holding address p (any byte of its
 * pages; ck: the chunk-map value of p's chunk), its start and requested
 * size; false when p is in none. Takes no lock. Only a huge mapping's first
 * chunk has a chunk-map value: p in a later one is not found here (the
 * caller sees a chunk that is not hakmem's). */
bool   hk_large_block_of(const void *p, unsigned ck, uint8_t **start, size_t *requested);
/* NULL (errno ENOMEM) leaves p untouched. */
void  *hk_large_realloc(void *p, unsigned kind, size_t size);
/* Purge/unmap cached mappings (all when force). Bytes given back. */
size_t hk_large_collect(bool force);

/* The cache's caps (entries, MiB) and purge delay: the knobs' values until
 * the learner sets others. */
void hk_large_set_caps(long count, long mb, long purge_delay_ms);  /* the learner's */
/* The control API's: sets one cap and pins it (the learner leaves it). */
enum { HK_LARGE_CAP_COUNT, HK_LARGE_CAP_MB, HK_LARGE_CAP_DELAY };
void hk_large_pin_cap(unsigned which, long v);
long hk_large_cap(unsigned which);   /* in force now */

/* Events the learner reads, counted only while HAKMEM_LEARN is on; the
 * evictions are by the entry cap or the byte cap; a ghost hit is a miss a
 * mapping evicted lately would have served. */
enum { HK_LARGE_ALLOCS, HK_LARGE_HITS, HK_LARGE_GHOST_HITS, HK_LARGE_EVICT_COUNT,
       HK_LARGE_EVICT_BYTES, HK_LARGE_PURGES, HK_LARGE_REFAULTS, HK_LARGE_FAULT_PAGES,
       HK_LARGE_NEVENTS };
/* The counts since the last call; zeroes them. */
void hk_large_take_events(unsigned long out[HK_LARGE_NEVENTS]);

/* Called at each allocation with its weight (1 per 64 KiB, plus one): the
 * learner's epoch clock. Set once by init.c (docs/ARCHITECTURE.md, "Hooks"). */
void hk_large_set_alloc_hook(void (*fn)(unsigned weight));
/* Called with the bytes of fresh pages a span block is about to fault in:
 * the other tiers shed as many idle bytes (init.c). */
void hk_large_set_grow_hook(void (*fn)(size_t bytes));
/* The small tier is about to fault in `bytes`: while the large tier is
 * idle, as many of its free resident bytes go back (superslab.c's grow
 * hook, set by init.c). */
void hk_large_shed(size_t bytes);

/* First-class heaps (heap_api.c) keep a table of their large blocks: forget
 * is told of every free and resize of a block before it happens (it
 * returns the block's heap, NULL when none); keep puts a resized block back
 * under that heap when it stayed where it was. Set once, by the first heap
 * (docs/ARCHITECTURE.md, "Hooks"); until then a NULL test. */
void hk_large_set_heap_hooks(void *(*forget)(void *p), void (*keep)(void *p, void *heap));

size_t hk_large_count_live(void);
size_t hk_large_count_allocs(void);
size_t hk_large_count_frees(void);
size_t hk_large_bytes_live(void);
size_t hk_large_bytes_cached(void);

void hk_large_fork_prepare(void);
void hk_large_fork_parent(void);
void hk_large_fork_child(void);

#endif
