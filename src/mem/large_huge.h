/* The huge tier: large blocks in a mapping of their own, starting on a
 * 2 MiB boundary with a one-page header (large.h, hk_large_t) that free
 * finds through the chunk map: blocks beyond HK_SPAN_MAX, alignments of a
 * chunk or more, and what the span tier could not serve. A row of the
 * API's tier table (alloc.c), for chunks HK_CHUNK_LARGE + k; freed mappings
 * go to the cache (large.c) or, with the guard measure, its quarantine. */
#ifndef HK_LARGE_HUGE_H
#define HK_LARGE_HUGE_H

#include "mem/large.h"

/* A block of `size` bytes (at least 1; align: 0 or a power of two), or
 * NULL (errno ENOMEM). Admitted already (hk_large_admit). */
void  *hk_large_huge_alloc(size_t size, size_t align, bool zero, unsigned kind);
/* The tier table's row (alloc.h, hk_tier_t); ck: the chunk-map value of
 * p's chunk, HK_CHUNK_LARGE + how many chunks back the header is. Only a
 * mapping's block's first chunk has a chunk-map value: an address in a
 * later one is not found by extent (the caller sees a foreign chunk). */
void   hk_large_huge_free(void *p, unsigned ck, unsigned kind, size_t size);
size_t hk_large_huge_usable(const void *p, unsigned ck);
bool   hk_large_huge_extent(const void *p, unsigned ck, const uint8_t **start, size_t *requested);
/* realloc's part here (size > 32 KiB): p, resized in place; the block's
 * new address, its pages moved without a copy; NULL and mv->copy set: it
 * moves by a copy (hk_large_move_t); NULL and mv->copy 0: refused
 * (reported, errno EINVAL; or ENOMEM). */
void  *hk_large_huge_resize(void *p, unsigned ck, size_t size, hk_large_move_t *mv);

#endif
