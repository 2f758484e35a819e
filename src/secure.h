/* Hardening hooks of the secure build (`make secure`, HK_SECURE). Each
 * measure has a name, a switch and a test (docs/SECURITY.md):
 *
 *   slab keys      free-list links encoded with a random key per slab
 *   free bitmap    one bit per block: delayed and interleaved double frees
 *   canary         padding after each small block: overflows found at free
 *   free fill      freed blocks filled (HAKMEM_FREE_FILL); a write after
 *                  free is found when the block is handed out again
 *   shuffle        fresh blocks handed out in random order
 *   delayed reuse  a slab hands out fresh blocks before freed ones
 *   guard pages    after each large block, between superslab metadata and
 *                  blocks
 *   kind tags      delete of new[] memory (and the reverse) and sized
 *                  deletes of the wrong size are reported
 *
 * In the default build every hook here is an empty inline. */
#ifndef HK_SECURE_H
#define HK_SECURE_H

#include "slab.h"

enum { HK_KIND_MALLOC = 0, HK_KIND_NEW = 1, HK_KIND_NEW_ARRAY = 2, HK_KIND_ANY = 255 };

#ifdef HK_SECURE
/* The last 8 bytes of every small block are its trailer word, written by
 * malloc and checked by free:
 *
 *   bits  0..31  canary: a hash of the slab key and the block address,
 *                xor a state tag (live, freed by the owner, freed by another
 *                thread and not yet collected)
 *   bits 32..55  delta: block_size - 8 - requested size
 *   bits 56..63  kind (HK_KIND_*)
 *
 * So the overflow check (canary) and the double-free check (state) are one
 * load and one compare; a block handed out must be in the "freed" state
 * (a free list forged to hand out a live block is caught). Up to 8 bytes
 * between the request and the trailer hold the slack pattern. */
#define HK_PAD 8
#define HK_SEC_LIVE   0u
#define HK_SEC_FREED  0x5ab1f4eeu   /* on a free list of the owner       */
#define HK_SEC_REMOTE 0xc3a7e51du   /* freed by another thread: xfree    */
#define HK_SEC_SLACK  0xDEDEDEDEDEDEDEDEull
/* HAKMEM_FREE_FILL (0 off, 1 zero, 2 0xDF), copied at start-up */
extern uint8_t hk_sec_fill HK_HIDDEN;

HK_INLINE uint32_t hk_sec_canary(const hk_slab_t *s, const void *p) {
  uint64_t x = ((uint64_t)s->key ^ (uint64_t)(uintptr_t)p) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(x >> 32);
}
HK_INLINE uint64_t hk_sec_trailer_load(const void *b, size_t avail) {
  uint64_t t;
  __builtin_memcpy(&t, (const uint8_t *)b + avail, 8);
  return t;
}
/* the mask of the slack bytes a word at the request's end covers */
HK_INLINE uint64_t hk_sec_slack_mask(uint32_t delta) {
  return delta >= 8 ? ~0ull : (1ull << (8 * delta)) - 1;
}

/* out of line, cold */
void hk_sec_bad_alloc(hk_slab_t *s, void *p) __attribute__((cold, noinline, noreturn));
bool hk_sec_bad_free(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner)
    __attribute__((cold, noinline));
void hk_sec_fill_check(hk_slab_t *s, void *p);  /* HAKMEM_FREE_FILL: the check at reuse */
void hk_sec_fill_block(hk_slab_t *s, void *p);  /* HAKMEM_FREE_FILL: the fill at free   */
bool hk_sec_remote_mark(hk_slab_t *s, void *p, uint64_t t);
void hk_sec_on_collected(hk_slab_t *s, void *p);  /* the owner took p back from xfree */
bool hk_sec_is_free(hk_slab_t *s, const void *p);
size_t hk_sec_requested(const hk_slab_t *s, const void *p);
void hk_sec_on_carve(hk_slab_t *s, uint8_t *first, unsigned n);
void hk_sec_slab_init(hk_slab_t *s);

/* p was just popped from s's free list for a request of n bytes */
HK_INLINE void hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  uint8_t *b = p;
  size_t avail = s->block_size - HK_PAD;
  uint32_t c = hk_sec_canary(s, p);
  uint64_t t = hk_sec_trailer_load(b, avail);
  if (HK_UNLIKELY((uint32_t)t != (c ^ HK_SEC_FREED))) hk_sec_bad_alloc(s, p);
  if (HK_UNLIKELY(hk_sec_fill)) hk_sec_fill_check(s, p);
  uint64_t pat = HK_SEC_SLACK, info = (uint64_t)(avail - n) | ((uint64_t)kind << 24);
  __builtin_memcpy(b + n, &pat, 8);  /* n <= avail: the trailer store comes after */
  t = (uint64_t)c | (info << 32);
  __builtin_memcpy(b + avail, &t, 8);
}

/* false: the free was reported and must not go on */
HK_INLINE bool hk_sec_on_free(hk_slab_t *s, void *p, uint32_t idx, unsigned kind, size_t size,
                              bool owner) {
  (void)idx;
  uint8_t *b = p;
  size_t avail = s->block_size - HK_PAD;
  uint32_t c = hk_sec_canary(s, p);
  uint64_t t = hk_sec_trailer_load(b, avail);
  uint32_t delta = (uint32_t)(t >> 32) & 0xffffff;
  if (HK_UNLIKELY((uint32_t)t != c || delta > avail)) return hk_sec_bad_free(s, p, kind, size, owner);
  uint64_t v;
  __builtin_memcpy(&v, b + avail - delta, 8);
  if (HK_UNLIKELY(((v ^ HK_SEC_SLACK) & hk_sec_slack_mask(delta)) != 0 ||
                  (kind != HK_KIND_ANY && (t >> 56) != kind) ||
                  (size != 0 && size != avail - delta)))
    return hk_sec_bad_free(s, p, kind, size, owner);
  if (HK_UNLIKELY(hk_sec_fill)) hk_sec_fill_block(s, p);
  if (!owner) return hk_sec_remote_mark(s, p, t);
  uint32_t f = c ^ HK_SEC_FREED;
  __builtin_memcpy(b + avail, &f, 4);
  return true;
}
#else
#define HK_PAD 0
HK_INLINE void hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  (void)s; (void)p; (void)n; (void)kind;
}
HK_INLINE bool hk_sec_on_free(hk_slab_t *s, void *p, uint32_t idx, unsigned kind, size_t size,
                              bool owner) {
  (void)s; (void)p; (void)idx; (void)kind; (void)size; (void)owner;
  return true;
}
HK_INLINE void hk_sec_on_collected(hk_slab_t *s, void *p) { (void)s; (void)p; }
HK_INLINE bool hk_sec_is_free(hk_slab_t *s, const void *p) { (void)s; (void)p; return false; }
HK_INLINE void hk_sec_on_carve(hk_slab_t *s, uint8_t *first, unsigned n) {
  (void)s; (void)first; (void)n;
}
HK_INLINE void hk_sec_slab_init(hk_slab_t *s) { (void)s; }
#endif

#endif
