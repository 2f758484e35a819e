/* Slab layer: the block lists of one slab (one size class in one slab of a
 * superslab). The owner thread allocates from `free` and frees into
 * `local_free` without atomics; blocks are carved lazily so untouched memory
 * stays untouched. Cross-thread frees are in remote.h. */
#ifndef HK_SLAB_H
#define HK_SLAB_H

#include "superslab.h"
#include "track.h"

/* Free-list links are stored encoded: next ^ key, with a random per-process
 * key. A stray write (small overflow, use after free) then decodes to a
 * pointer outside the superslab, which malloc catches before following it,
 * and a leaked link does not reveal a heap address. */
extern uintptr_t hk_list_key HK_HIDDEN;

/* The key of a slab's lists: the process key, or the slab's own random key
 * in the secure build. */
#ifdef HK_SECURE
#define HK_LINK_KEY(s) ((s)->key)
#else
#define HK_LINK_KEY(s) ((void)(s), hk_list_key)
#endif

/* A free block's link, stored encoded with key (valgrind: readable only
 * while hakmem reads or writes it). */
HK_INLINE hk_block_t *hk_link_load(const hk_block_t *b, uintptr_t key) {
  hk_track_defined(b, sizeof *b);
  uintptr_t e = b->enc;
  hk_track_noaccess(b, sizeof *b);
  return (hk_block_t *)(e ^ key);
}
HK_INLINE void hk_link_store(hk_block_t *b, const hk_block_t *next, uintptr_t key) {
  hk_track_defined(b, sizeof *b);
  b->enc = (uintptr_t)next ^ key;
  hk_track_noaccess(b, sizeof *b);
}
HK_INLINE hk_block_t *hk_block_next(const hk_slab_t *s, const hk_block_t *b) {
  return hk_link_load(b, HK_LINK_KEY(s));
}
HK_INLINE void hk_block_set_next(const hk_slab_t *s, hk_block_t *b, const hk_block_t *next) {
  hk_link_store(b, next, HK_LINK_KEY(s));
}
/* Lists that mix slabs (a heap's delayed frees) use the process key. */
HK_INLINE hk_block_t *hk_gblock_next(const hk_block_t *b) { return hk_link_load(b, hk_list_key); }
HK_INLINE void hk_gblock_set_next(hk_block_t *b, const hk_block_t *next) {
  hk_link_store(b, next, hk_list_key);
}
void hk_report_list_corrupt(const void *block) __attribute__((cold, noinline, noreturn));

/* Is p the start of a block of s? Exact division by multiplication:
 * (p - start) = q * block_size with q < capacity. Catches interior,
 * misaligned and out-of-slab pointers with a multiply and a rotate. */
HK_INLINE uint32_t hk_slab_block_index(const hk_slab_t *s, const void *p) {
  uint32_t n = (uint32_t)((uintptr_t)p - (uintptr_t)s->start);
  uint32_t x = n * s->div_inv;
  unsigned k = s->div_shift;
  return (x >> k) | (x << ((32 - k) & 31));  /* >= capacity unless a block */
}
HK_INLINE bool hk_slab_is_block(const hk_slab_t *s, const void *p) {
  return hk_slab_block_index(s, p) < s->capacity;
}

/* A link read from block b of slab s must stay in b's superslab (default
 * build: one xor and shift), or be a block of s itself (secure build: an
 * attacker who learnt a key still cannot point a list at metadata), or end
 * the list. */
HK_INLINE bool hk_link_ok(const hk_slab_t *s, const hk_block_t *b, const hk_block_t *next) {
#ifdef HK_SECURE
  (void)b;
  return next == NULL || hk_slab_is_block(s, next);
#else
  (void)s;
  return (((uintptr_t)next ^ (uintptr_t)b) >> HK_SS_SHIFT) == 0 || next == NULL;
#endif
}

#ifdef HK_DEBUG
/* Debug build: s (owned by the caller, in use) is sound: its owner-side
 * lists have sound links and hold exactly the blocks carved and not out
 * (remote frees not yet collected count as out). Asserts. */
void hk_slab_check(const hk_slab_t *s, uintptr_t owner);
#endif

/* Make slab idx of ss a slab of class cls owned by thread `owner`. */
void hk_slab_init(hk_superslab_t *ss, unsigned idx, unsigned cls, uintptr_t owner);

/* Refill s->free (which must be empty) from local_free, then from remote
 * frees, then by carving fresh blocks. False when the slab is exhausted. */
bool hk_slab_refill(hk_slab_t *s);

/* Fresh blocks are carved at most this many bytes at a time: touching a
 * whole slab up front would cost RSS the program may never use. */
#define HK_CARVE_MAX_BYTES (64u * 1024u)   /* HAKMEM_CARVE_KB is at most 64 */

/* Carve up to a batch of fresh blocks onto s->free. False if none left. */
bool hk_slab_extend(hk_slab_t *s);
/* Forget the free lists of a slab with no block out and carve afresh. */
bool hk_slab_restart(hk_slab_t *s) __attribute__((noinline));

/* Secure build (delayed reuse, slab.c): the commonest refill, a change of
 * generation: the blocks freed before the last refill (aged) become the
 * free list, those freed since (local_free) the aged ones. False when
 * nothing is aged. Never in the default build. */
HK_INLINE bool hk_slab_take_aged(hk_slab_t *s) {
#ifdef HK_SECURE
  hk_block_t *aged = s->aged;
  if (!aged) return false;
  s->free = aged;
  s->aged = s->local_free;
  s->local_free = NULL;
  return true;
#else
  (void)s;
  return false;
#endif
}

/* Move local_free onto the empty s->free. False if there was nothing.
 * A small-class slab whose every block is back (used == 0) starts over
 * instead and carves again in address order: malloc then pops blocks whose
 * links were just written, not a list scattered by frees long ago whose
 * every link is a cache miss (a program that frees a whole structure and
 * builds the next one). Mid classes carve only a few blocks per batch, so
 * they keep the list. Not used by the secure build (delayed reuse). */
HK_INLINE bool hk_slab_take_local(hk_slab_t *s) {
  if (!s->local_free) return false;
  if (HK_UNLIKELY(s->used == 0) && s->cls < HK_NCLASS_SMALL) return hk_slab_restart(s);
  s->free = s->local_free;
  s->local_free = NULL;
  return true;
}

#endif
