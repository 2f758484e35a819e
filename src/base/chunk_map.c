/* The chunk map (chunk_map.h): one byte per 2 MiB of address space, and the
 * tier each of its values belongs to. */
#include "base/chunk_map.h"

/* 64 MiB of .bss: no memory until a chunk is first marked, but for the
 * pages a look-up reads (a foreign pointer's; each page covers 8 GiB of
 * address space), where the kernel maps no zero page. */
HK_BSS_ARRAY uint8_t hk_chunk_map[HK_MAP_LEN];

/* (values the map never holds read as foreign) */
const uint8_t hk_chunk_tiers[256] = {
  [HK_CHUNK_NONE] = HK_TIER_FOREIGN,
  [HK_CHUNK_ZERO] = HK_TIER_ZERO,
  [HK_CHUNK_SPAN] = HK_TIER_SPAN,
  [HK_CHUNK_LARGE ... HK_CHUNK_LARGE + HK_CHUNK_LARGE_MAX_BACK] = HK_TIER_HUGE,
  [HK_CHUNK_GUARDED] = HK_TIER_GUARDED,
  [HK_CHUNK_PROF] = HK_TIER_PROF,
  [HK_CHUNK_SS ... 255] = HK_TIER_SLAB,
};
_Static_assert(HK_CHUNK_LARGE + HK_CHUNK_LARGE_MAX_BACK + 1 == HK_CHUNK_GUARDED, "the large tier's values end below the guarded pool's");
_Static_assert(HK_CHUNK_GUARDED + 1 == HK_CHUNK_PROF, "the guarded pool's value is below the profiler's");
