/* Slab layer: the block lists of one slab (one size class in one slab of a
 * superslab). The owner thread allocates from `free` and frees into
 * `free` too (last in, first out) without atomics; blocks are carved lazily so untouched memory
 * stays untouched. The links of the lists are in freelist.h, cross-thread
 * frees in remote.h. */
#ifndef HK_SLAB_H
#define HK_SLAB_H

#include "base/chunk_map.h"
#include "mem/freelist.h"
#include "mem/secure.h"

#ifdef HK_DEBUG
/* Debug build: s (owned by the caller, in use) is sound: its owner-side
 * lists have sound links and hold exactly the blocks carved and not out
 * (remote frees not yet collected count as out). Asserts. */
void hk_slab_check(const hk_slab_t *s, uintptr_t owner);
#endif

/* The slab no heap has: every heap's cur[] and direct[] point here when
 * the class has no current slab. free == NULL: the fast path falls
 * through; owner == 0. */
extern hk_slab_t hk_slab_empty HK_HIDDEN;

/* Make slab idx of ss a slab of class cls owned by thread `owner`. */
void hk_slab_init(hk_superslab_t *ss, unsigned idx, unsigned cls, uintptr_t owner);

/* Refill s->free (which must be empty) from local_free, then from remote
 * frees, then by carving fresh blocks. False when the slab is exhausted. */
bool hk_slab_refill(hk_slab_t *s);

/* Carve up to a batch of fresh blocks onto s->free. False if none left. */
bool hk_slab_extend(hk_slab_t *s);
/* Forget the free lists of a slab with no block out and carve afresh. */
bool hk_slab_restart(hk_slab_t *s) __attribute__((noinline));

/* s's owner vanished in fork(), maybe halfway through a list update:
 * make its lists and counts agree again (slab.c). Before the adopter uses it. */
void hk_slab_rebuild(hk_slab_t *s) __attribute__((cold));

/* The blocks on s->free, counted by walking it (stats only); a bad link
 * or a cycle stops the count: malloc reports the link when it gets there. */
uint64_t hk_slab_free_count(const hk_slab_t *s);
/* The free mark's confirmation, the slab's part: is b on one of s's lists
 * of free blocks (its own, its remote frees)? The caller owns s. A walk:
 * rare (a bad link ends it). */
bool hk_slab_holds_free(const hk_slab_t *s, const hk_block_t *b);

/* The live block of slab memory (chunk-map value ck) holding address p,
 * any byte of it: its start and the size it was requested with (the
 * secure build's trailer; else the block size); false when p is in none
 * (an unused slab, a slot never handed out, a freed block where the
 * trailer tells). The copy checks' hot case, and the slab row of the API's
 * table of block operations. */
HK_INLINE bool hk_slab_extent(const void *p, unsigned ck, const uint8_t **start, size_t *size) {
  hk_slab_t *s = hk_slab_at(p, hk_chunk_slab_shift(ck));
  if (HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED) return false;
  size_t i = hk_slab_slot_of(s, p);
  if (i >= HK_LOAD_RELAXED(s->carved)) return false;  /* never handed out, or not a block */
  const uint8_t *b = HK_UNHIDE(s->start) + i * s->block_size;
  *start = b;
  return hk_sec_live_size(s, b, size);
}

/* Pop b, the first block of s->free, for malloc: its link is checked
 * before it is followed. */
HK_INLINE void hk_slab_pop_block(hk_slab_t *s, hk_block_t *b) {
  hk_block_t *nx = hk_block_next(s, b);
  /* (nx is tested for NULL itself, not by comparing the stored word with
   * the key: the key need not stay in a register, and the test is shorter) */
  __asm__("" : "+r"(nx));
  /* (the prefetch: the next malloc of this class reads nx's link, and a
   * block freed long ago is a cache miss there; python3 workload +3%, one
   * instruction) */
  if (HK_M_KEYS) {
    if (HK_UNLIKELY(!hk_link_ok(s, b, nx))) hk_report_list_corrupt(b);
    s->free = nx;
    __builtin_prefetch(nx);
  } else {
    /* hk_link_ok, with nx stored first: the xor may then consume nx's
     * register, and the rare link that leaves the superslab reads it back
     * for the NULL test (the report never returns). One copy less. */
    s->free = nx;
    __builtin_prefetch(nx);
    if (HK_UNLIKELY((((uintptr_t)nx ^ (uintptr_t)b) >> HK_SS_SHIFT) != 0) &&
        *(hk_block_t *volatile *)&s->free != NULL)
      hk_report_list_corrupt(b);
  }
  if (!HK_M_CANARY) hk_mark_store(b, 0);  /* live: no free mark */
  s->used++;
}

/* The owner takes b back (its free, or a remote free it collected): onto
 * local_free. The caller brings a full slab back to its heap. */
HK_INLINE void hk_slab_push_aside(hk_slab_t *s, hk_block_t *b) {
  hk_block_set_next(s, b, s->local_free);
  s->local_free = b;
  s->used--;
}
/* The owner's free of b: onto the free list malloc pops, so the next
 * malloc of the class gets the block freed last, its lines still in cache
 * (onto local_free, its blocks came back only when free ran dry, long
 * after, their lines gone from the cache).
 * With delayed reuse (measure delay) onto local_free: the generations. */
HK_INLINE void hk_slab_push_local(hk_slab_t *s, hk_block_t *b) {
  if (HK_M_DELAY) {
    hk_slab_push_aside(s, b);
    return;
  }
  hk_block_set_next(s, b, s->free);
  s->free = b;
  s->used--;
}
/* The owner's free of b off the fast path (which reaches
 * hk_slab_push_local only when the owner field is the bare id): set aside
 * where the owner field says so (HK_OWNER_ASIDE), and always with delayed
 * reuse (no test: the secure build's free reads no more than before). */
HK_INLINE void hk_slab_push_owner(hk_slab_t *s, hk_block_t *b) {
  if (HK_M_DELAY || (HK_LOAD_RELAXED(s->owner) & HK_OWNER_ASIDE)) hk_slab_push_aside(s, b);
  else hk_slab_push_local(s, b);
}

/* Delayed reuse (measure delay, slab.c): the commonest refill, a change of
 * generation: the blocks freed before the last refill (aged) become the
 * free list, those freed since (local_free) the aged ones. False when
 * nothing is aged, always without the measure. */
HK_INLINE bool hk_slab_take_aged(hk_slab_t *s) {
  hk_block_t *aged = s->aged;
  if (!HK_M_DELAY || !aged) return false;
  s->free = aged;
  s->aged = s->local_free;
  s->local_free = NULL;
  return true;
}

/* Bytes from s's start that are resident: carved since its slab turned
 * warm (superslab.h's touched). */
HK_INLINE size_t hk_slab_resident_bytes(hk_slab_t *s) {
  return (size_t)hk_slab_ss(s)->touched[s->index] * HK_PAGE;
}

/* s's carving has room for a block on resident pages past the page it is
 * on: the slab was carved further before (started over, or left by
 * another class). At the end of the usual carve the rest of the last page
 * is no such room. A batch carved there ends there (slab_carve). */
HK_INLINE bool hk_slab_room_resident(hk_slab_t *s) {
  size_t at = (size_t)s->carved * s->block_size, res = hk_slab_resident_bytes(s);
  return s->carved < s->capacity && at + s->block_size <= res && res > hk_align_up(at, HK_PAGE);
}

/* Move local_free onto the empty s->free. False if there was nothing.
 * A small-class slab whose every block is back (used == 0) starts over
 * instead and carves again in address order: malloc then pops blocks whose
 * links were just written, not a list scattered by frees long ago whose
 * every link is a cache miss (a program that frees a whole structure and
 * builds the next one). Mid classes carve only a few blocks per batch, so
 * they keep the list. Not used with delayed reuse (measure delay). */
HK_INLINE bool hk_slab_take_local(hk_slab_t *s) {
  if (!s->local_free) return false;
  /* not with canary: its carve stamps every block's trailer again, which
   * cost more instructions per malloc than the locality won */
  if (HK_UNLIKELY(s->used == 0) && s->cls < HK_NCLASS_SMALL && !HK_M_CANARY) return hk_slab_restart(s);
  s->free = s->local_free;
  s->local_free = NULL;
  return true;
}

/* s becomes its class's current slab again (refill.c). With every block
 * back, a small-class slab starts over as hk_slab_take_local's does, its
 * list (the owner's frees, last first: hk_slab_push_local) forgotten.
 * Else blocks set aside while it was current before (counting, the
 * profiler: HK_OWNER_ASIDE) join its free list, so that one run of the
 * list hands out all of them: split, each half cost a slow call
 * (test_refill_batch, 512 B x 350: 0.18 slow calls a malloc against 0.11). */
HK_INLINE void hk_slab_become_cur(hk_slab_t *s) {
  if (HK_M_DELAY || !s->free) return;
  if (HK_UNLIKELY(s->used == 0) && s->cls < HK_NCLASS_SMALL && !HK_M_CANARY) {
    s->free = NULL;
    hk_slab_restart(s);
    return;
  }
  hk_block_t *aside = s->local_free;
  if (!aside) return;
  hk_list_splice(s, aside, &s->free, false);  /* (a corrupted list is reported there) */
  s->local_free = NULL;
}

#endif
