/* bits.h: bit counting and gathering without a call.
 *
 * The x86-64 baseline has no popcnt instruction, so __builtin_popcountll
 * is a call into libgcc (__popcountdi2): a large share of a big-block
 * loop's instructions, counting the span tier's resident-page bitmap. These
 * compile to a few shifts and one multiply each. */
#ifndef HK_BITS_H
#define HK_BITS_H

#include <stdint.h>
#include <string.h>

/* The number of bits set in x. */
static inline unsigned hk_popcount64(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* Bit 0 of each of the 8 bytes at v (mincore's "resident" bit of 8 pages),
 * gathered: bit j of the result is bit 0 of v[j]. The multiply moves byte
 * j's bit to bit 56 + j; no two partial products meet, so nothing carries. */
static inline unsigned hk_gather8(const unsigned char *v) {
  uint64_t w;
  memcpy(&w, v, sizeof w);
  return (unsigned)(((w & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

#endif
