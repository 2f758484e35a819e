/* test_ss_forked — a superslab whose thread fork() stopped between a
 * slab's state and the superslab's free mask, made sound again in the
 * child (hk_ss_orphan_foreign, src/backend/superslab.c).
 *
 * fork() copies one thread and stops the others wherever they are. A
 * thread taking a slab clears its bit in the free mask before it
 * initializes the descriptor and sets its state (hk_heap_fresh_slab); one
 * giving a slab back sets the state before the bit (hk_ss_slab_unuse); the
 * count of slabs in use moves between the two. The child's adopter then
 * found a slab neither free nor initialized and released it, and the
 * release set the bit of the descriptor's index field, which a descriptor
 * past the header's first page that was never initialized reads as 0:
 * slab 0, in use, was taken again and carved over its live blocks (stop
 * 91: test_fork's children aborted with "double free" or "free list
 * corrupted", about one run in 1,400, always on a block of slab 0).
 *
 * Built on a superslab the library maps, with a made-up owner that the
 * fork child's handler finds gone:
 *   taken    a never-initialized slab's bit cleared, its state unused,
 *            the count not raised
 *   given    an in-use slab's state set unused, its bit not yet set and
 *            the count not lowered
 * After hk_ss_orphan_foreign both slabs read free, slab 0 in use, the
 * count one. And a release of a slab whose index field reads 0 sets its
 * own bit, not slab 0's. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "backend/superslab.h"
#include "heap/heap.h"
#include "mem/slab.h"

static char gone_heap[64];  /* the stopped thread's heap: never dereferenced */

static bool kept(const struct hk_heap *h) { return (const void *)h != (const void *)gone_heap; }

static void take(hk_superslab_t *ss, unsigned i) {  /* what hk_heap_fresh_slab does, in full */
  ss->free_mask &= ~(1u << i);
  ss->nused++;
  hk_slab_init(ss, i, 5, (uintptr_t)gone_heap);
  ss->slabs[i].state = HK_SLAB_PARTIAL;
}

int main(void) {
  free(malloc(16));  /* the library is set up */
  hk_superslab_t *ss = hk_ss_acquire(HK_SS_KIND_SMALL);
  CHECK_FATAL(ss != NULL);
  CHECK_FATAL(ss->nslabs > HK_SS_DESC_PAGE1 + 1);
  HK_STORE_RELAXED(ss->heap, (struct hk_heap *)gone_heap);
  unsigned far = HK_SS_DESC_PAGE1;  /* the first descriptor on the header's second page */
  CHECK_FATAL(ss->slabs[far].index == 0 && ss->slabs[far].state == HK_SLAB_UNUSED);

  take(ss, 0);
  take(ss, 1);
  /* taken: slab `far`'s bit cleared; stopped before its count and init */
  ss->free_mask &= ~(1u << far);
  /* given: slab 1's state unused; stopped before its bit and count */
  ss->slabs[1].state = HK_SLAB_UNUSED;

  hk_ss_orphan_foreign(hk_tls_heap, kept);
  CHECK(ss->forked);
  CHECKF(ss->free_mask & (1u << far), "taken: slab %u, never initialized, not free (mask %#x)", far, ss->free_mask);
  CHECKF(ss->free_mask & 2u, "given: slab 1, unused, not free (mask %#x)", ss->free_mask);
  CHECKF(!(ss->free_mask & 1u), "slab 0, in use, free (mask %#x)", ss->free_mask);
  CHECKF(ss->nused == 1, "slabs in use %u, not 1", ss->nused);

  /* a release through a descriptor whose index field reads 0 */
  unsigned next = far + 1;
  CHECK_FATAL(ss->slabs[next].index == 0);
  ss->free_mask &= ~(1u << next);
  ss->nused++;
  ss->slabs[next].state = HK_SLAB_PARTIAL;
  hk_ss_slab_unuse(ss, &ss->slabs[next]);
  CHECKF(ss->free_mask & (1u << next), "the released slab %u not free (mask %#x)", next, ss->free_mask);
  CHECKF(!(ss->free_mask & 1u), "releasing slab %u freed slab 0 (mask %#x)", next, ss->free_mask);
  CHECKF(ss->nused == 1, "slabs in use %u, not 1", ss->nused);
  return check_done("test_ss_forked");
}
