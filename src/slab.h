/* Slab layer: the block lists of one slab (one size class in one slab of a
 * superslab). The owner thread allocates from `free` and frees into
 * `local_free` without atomics; blocks are carved lazily so untouched memory
 * stays untouched. Cross-thread frees are in remote.h. */
#ifndef HK_SLAB_H
#define HK_SLAB_H

#include "superslab.h"

/* Make slab idx of ss a slab of class cls owned by thread `owner`. */
void hk_slab_init(hk_superslab_t *ss, unsigned idx, unsigned cls, uintptr_t owner);

/* Refill s->free (which must be empty) from local_free, then from remote
 * frees, then by carving fresh blocks. False when the slab is exhausted. */
bool hk_slab_refill(hk_slab_t *s);

/* Carve up to a batch of fresh blocks onto s->free. False if none left. */
bool hk_slab_extend(hk_slab_t *s);

/* Blocks in s between start and start + capacity * block_size? */
HK_INLINE bool hk_slab_contains(const hk_slab_t *s, const void *p) {
  return (size_t)((const uint8_t *)p - s->start) < (size_t)s->capacity * s->block_size;
}

#endif
