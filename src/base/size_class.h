/* Size classes: 16-byte steps up to 128 B, then 8 per power of two up to
 * 32 KiB (72 classes). Small sizes by table, larger by bit arithmetic. */
#ifndef HK_SIZE_CLASS_H
#define HK_SIZE_CLASS_H

#include "base/config.h"

extern const uint32_t hk_class_size[HK_NCLASS] HK_HIDDEN;
extern const uint8_t  hk_class_small[HK_SMALL_MAX / 16 + 1] HK_HIDDEN;
extern const uint8_t  hk_class_mid[HK_MID_MAX / 128 + 1] HK_HIDDEN;

/* n in (HK_SMALL_MAX, HK_MID_MAX]: one load */
HK_INLINE unsigned hk_class_of_mid(size_t n) { return hk_class_mid[(n + 127) >> 7]; }

/* n in [0, HK_MID_MAX] */
HK_INLINE unsigned hk_class_of_formula(size_t n) {
  if (n <= 128) return n ? (unsigned)((n - 1) >> 4) : 0;
  size_t s = n - 1;
  unsigned b = 63u - (unsigned)__builtin_clzl(s);
  return 8u + (b - 7u) * 8u + (unsigned)((s >> (b - 3u)) & 7u);
}

HK_INLINE unsigned hk_class_of(size_t n) {
  if (HK_LIKELY(n <= HK_SMALL_MAX)) return hk_class_small[(n + 15) >> 4];
  return hk_class_of_formula(n);
}

HK_INLINE size_t hk_class_bytes(unsigned cls) { return hk_class_size[cls]; }

#endif
