/* The span tier: large blocks of up to HK_SPAN_MAX bytes carved from the
 * span arenas (backend/span.c), whose freed pages stay resident for the
 * next block of any size. A row of the API's tier table (alloc.c), for
 * chunks HK_CHUNK_SPAN; the router (hk_large_alloc) tries it first. */
#ifndef HK_LARGE_SPAN_H
#define HK_LARGE_SPAN_H

#include "mem/large.h"

/* A block of `size` bytes (1 to HK_SPAN_MAX; align: 0 or a power of two
 * below a chunk); NULL when no arena can hold it (the router then maps
 * one). Admitted already (hk_large_admit). */
void  *hk_large_span_alloc(size_t size, size_t align, bool zero, unsigned kind);
/* The tier table's row (alloc.h, hk_tier_t); ck is HK_CHUNK_SPAN. */
void   hk_large_span_free(void *p, unsigned ck, unsigned kind, size_t size);
size_t hk_large_span_usable(const void *p, unsigned ck);
bool   hk_large_span_extent(const void *p, unsigned ck, const uint8_t **start, size_t *requested);
/* realloc's part here (p: a span block, size > 32 KiB): p, resized in
 * place; NULL and mv->copy set: it moves (hk_large_move_t); NULL and
 * mv->copy 0: refused (reported, errno EINVAL; or ENOMEM). */
void  *hk_large_span_resize(void *p, unsigned ck, size_t size, hk_large_move_t *mv);

#endif
