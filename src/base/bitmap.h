/* bitmap.h: bitmaps of 64-bit words that threads share: set, clear,
 * count and walk a range of bits.
 *
 * Every word is read and changed atomically (relaxed), so that one thread
 * may change the bits of its range while another changes other bits of
 * the same word: the span tier's purge clears the resident bits of a range
 * it took off the lists, with the shard's lock dropped, while allocations
 * and frees change their runs' bits under it. Ranges are [i, i + n): bit i
 * is bit i % 64 of word i / 64. No bound is checked: the caller's bitmap
 * holds the range. */
#ifndef HK_BITMAP_H
#define HK_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bits.h"
#include "base/config.h"

/* The bits of word i / 64 that [i, i + n) covers, and their count (at most n). */
static inline uint64_t hk_bitmap_mask(uint32_t i, uint32_t n, uint32_t *k) {
  uint32_t o = i & 63;
  *k = 64 - o < n ? 64 - o : n;
  return (*k == 64 ? ~0ull : ((1ull << *k) - 1)) << o;
}

/* Whether bit i is set. */
static inline bool hk_bitmap_test(const uint64_t *bm, uint32_t i) {
  return __atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED) >> (i & 63) & 1;
}

/* Sets (on) or clears bits [i, i + n). A word the range shares with
 * others takes an atomic or/and; a word it covers whole takes a relaxed
 * store, which is the same under any interleaving (no other range has a
 * bit there, and the result does not depend on what was there) without a
 * locked instruction: a span's growth by 8 MiB covers 32 words. */
HK_INLINE void hk_bitmap_set_part(uint64_t *w, uint64_t m, bool on) {  /* a shared word's bits m */
  if (on) __atomic_fetch_or(w, m, __ATOMIC_RELAXED);
  else __atomic_fetch_and(w, ~m, __ATOMIC_RELAXED);
}
HK_INLINE void hk_bitmap_set(uint64_t *bm, uint32_t i, uint32_t n, bool on) {
  if (!n) return;
  uint32_t k;
  uint64_t m = hk_bitmap_mask(i, n, &k);
  if (k < 64) {  /* the first word, part of it */
    hk_bitmap_set_part(&bm[i >> 6], m, on);
    i += k;
    n -= k;
  }
  for (; n >= 64; i += 64, n -= 64) __atomic_store_n(&bm[i >> 6], on ? ~0ull : 0, __ATOMIC_RELAXED);
  if (n) hk_bitmap_set_part(&bm[i >> 6], (1ull << n) - 1, on);  /* the last word, its first n bits */
}

/* The bits set in word w: a word inside a run is all set or all clear
 * (one compare), else the popcount. */
static inline uint32_t hk_bitmap_word_count(uint64_t w) { return w + 1 <= 1 ? (w ? 64 : 0) : hk_popcount64(w); }

/* The bits set in [i, i + n): a part word at each end, whole words between. */
HK_INLINE uint32_t hk_bitmap_count(const uint64_t *bm, uint32_t i, uint32_t n) {
  if (!n) return 0;
  uint32_t c = 0, k;
  uint64_t m = hk_bitmap_mask(i, n, &k);
  if (k < 64) {
    c += hk_popcount64(__atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED) & m);
    i += k;
    n -= k;
  }
  for (; n >= 64; i += 64, n -= 64) c += hk_bitmap_word_count(__atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED));
  if (n) c += hk_popcount64(__atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED) & ((1ull << n) - 1));
  return c;
}

/* The first run of set bits in [*p, end): true, with the run [*p, *q);
 * false when there is none. Skips clear bits (and runs through set ones)
 * a word at a time. */
static inline bool hk_bitmap_next_run(const uint64_t *bm, uint32_t *p, uint32_t end, uint32_t *q) {
  uint32_t i = *p;
  for (;;) {
    if (i >= end) return false;
    uint64_t w = __atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED) >> (i & 63);
    if (w) { i += (uint32_t)__builtin_ctzll(w); break; }
    i = (i | 63) + 1;
  }
  if (i >= end) return false;
  uint32_t j = i;
  while (j < end) {
    uint64_t z = ~__atomic_load_n(&bm[j >> 6], __ATOMIC_RELAXED) >> (j & 63);
    if (z) { j += (uint32_t)__builtin_ctzll(z); break; }
    j = (j | 63) + 1;
  }
  *p = i;
  *q = j < end ? j : end;
  return true;
}

/* Of bits [i, i + n), clears those whose byte of vec (vec[0] for bit i)
 * has bit 0 clear, as mincore answers for pages: one atomic and a word,
 * not one a bit. */
static inline void hk_bitmap_keep(uint64_t *bm, uint32_t i, uint32_t n, const unsigned char *vec) {
  for (uint32_t x = 0; x < n;) {
    uint32_t k, y = 0;
    uint64_t m = hk_bitmap_mask(i + x, n - x, &k);
    uint64_t r = 0;  /* of the k bits from i + x: those to keep (bit y: bit i + x + y) */
    for (; y + 8 <= k; y += 8) r |= (uint64_t)hk_gather8(vec + x + y) << y;
    for (; y < k; y++) r |= (uint64_t)(vec[x + y] & 1) << y;
    m &= ~(r << ((i + x) & 63));
    if (m) __atomic_fetch_and(&bm[(i + x) >> 6], ~m, __ATOMIC_RELAXED);
    x += k;
  }
}

#endif
