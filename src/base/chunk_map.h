/* Chunk map: one byte per 2 MiB of address space saying what hakmem keeps
 * there. free() reads it to tell its own pointers from foreign ones before
 * touching any metadata: a flat array indexed by address, not a hash. */
#ifndef HK_CHUNK_MAP_H
#define HK_CHUNK_MAP_H

#include "base/config.h"

#define HK_MAP_BITS 26                      /* 2^26 chunks * 2 MiB = 2^47 bytes */
#define HK_MAP_LEN  ((size_t)1 << HK_MAP_BITS)

enum {
  HK_CHUNK_NONE = 0,
  HK_CHUNK_ZERO = 1,        /* zero-size blocks (zero.c, measure zero)    */
  HK_CHUNK_SPAN = 2,        /* an arena of spans (span.c): 1 GiB-aligned  */
  HK_CHUNK_LARGE = 3,       /* a large block's header is k chunks back:   */
  /* value 3 + k, k in [0, 122]: alignments up to 244 MiB (powers of two:
   * 128 MiB; hk_large_alloc refuses more with ENOMEM)                     */
  HK_CHUNK_GUARDED = 126,   /* the pool of sampled guarded blocks (guarded.c) */
  HK_CHUNK_PROF = 127,      /* a sampled block (prof.c, HAKMEM_PROF)      */
  HK_CHUNK_SS = 0x80,       /* a superslab starts here: 0x80 | slab shift */
  HK_CHUNK_SS_SMALL = HK_CHUNK_SS | 16,  /* 64 KiB slabs                  */
  HK_CHUNK_SS_MID = HK_CHUNK_SS | 18,    /* 256 KiB slabs                 */
};
#define HK_CHUNK_LARGE_MAX_BACK 122

/* The map value says both "a superslab" (the top bit: one sign test) and
 * its slab size (the low bits are the slab shift, 16 or 18: a 64-bit shift
 * uses only the count's low 6 bits, so free() shifts by the value as it is),
 * so free() finds the slab without reading the superslab header first. */
HK_INLINE unsigned hk_chunk_ss_value(unsigned ss_kind) { return ss_kind ? HK_CHUNK_SS_MID : HK_CHUNK_SS_SMALL; }
HK_INLINE bool hk_chunk_is_ss(unsigned v) { return (v & HK_CHUNK_SS) != 0; }
HK_INLINE unsigned hk_chunk_slab_shift(unsigned v) { return v & 63u; }
/* Spans and large mappings: the two large tiers' (large_span.c, large_huge.c). */
HK_INLINE bool hk_chunk_is_large(unsigned v) { return v - HK_CHUNK_SPAN <= HK_CHUNK_LARGE_MAX_BACK + 1; }

/* The tier that owns a chunk, by its map value: the row of the API's table
 * of block operations (alloc.h, hk_tiers). A new kind of chunk is a value
 * above and a tier here. */
enum { HK_TIER_FOREIGN, HK_TIER_SLAB, HK_TIER_SPAN, HK_TIER_HUGE, HK_TIER_ZERO, HK_TIER_PROF, HK_TIER_GUARDED, HK_NTIERS };
extern const uint8_t hk_chunk_tiers[256] HK_HIDDEN;
HK_INLINE unsigned hk_chunk_tier(unsigned v) { return hk_chunk_tiers[v & 255]; }

extern uint8_t hk_chunk_map[HK_MAP_LEN] HK_HIDDEN;

HK_INLINE size_t hk_chunk_index(uintptr_t a) { return (a >> HK_SS_SHIFT) & (HK_MAP_LEN - 1); }

HK_INLINE unsigned hk_chunk_kind(const void *p) {
  return __atomic_load_n(&hk_chunk_map[hk_chunk_index((uintptr_t)p)], __ATOMIC_RELAXED);
}
HK_INLINE void hk_chunk_set(const void *p, unsigned kind) {
  __atomic_store_n(&hk_chunk_map[hk_chunk_index((uintptr_t)p)], (uint8_t)kind, __ATOMIC_RELEASE);
}

#endif
