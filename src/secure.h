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
#define HK_PAD 8  /* canary + size delta + kind at the end of small blocks */
void   hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind);
/* false: the free was reported (double free) and must not go on */
bool   hk_sec_on_free(hk_slab_t *s, void *p, uint32_t idx, unsigned kind, size_t size, bool owner);
/* the owner took p back from another thread's free */
void   hk_sec_on_collected(hk_slab_t *s, void *p);
bool   hk_sec_is_free(hk_slab_t *s, const void *p);
size_t hk_sec_requested(const hk_slab_t *s, const void *p);
void   hk_sec_on_carve(hk_slab_t *s, uint8_t *first, unsigned n);
void   hk_sec_slab_init(hk_slab_t *s);
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
