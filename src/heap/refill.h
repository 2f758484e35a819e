/* The malloc slow path (refill.c): the current slab of class cls ran dry. */
#ifndef HK_REFILL_H
#define HK_REFILL_H

#include "heap/heap.h"

/* A block of class cls for heap h (the empty heap: the calling thread gets
 * its heap first), or NULL with errno set. */
void *hk_heap_alloc_slow(hk_heap_t *h, unsigned cls);

#endif
