/* test_bits — src/base/bits.h's helpers against the obvious loops:
 *
 *   - hk_popcount64(x) is the number of bits set in x: for 0, ~0, every
 *     single bit, every pair of bits and a million random words;
 *   - hk_gather8(v) has bit j set exactly when bit 0 of v[j] is set, for
 *     all 256 patterns of those bits, with the bytes' other bits (which
 *     mincore leaves undefined) random, and at every alignment of v. */
#include <stdint.h>
#include <string.h>

#include "base/bits.h"
#include "check.h"

static unsigned naive_popcount(uint64_t x) {
  unsigned n = 0;
  for (; x; x >>= 1) n += (unsigned)(x & 1);
  return n;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {  /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

int main(void) {
  CHECK(hk_popcount64(0) == 0);
  CHECK(hk_popcount64(~0ull) == 64);
  for (unsigned i = 0; i < 64; i++)
    for (unsigned j = i; j < 64; j++) {
      uint64_t x = (1ull << i) | (1ull << j);
      CHECKF(hk_popcount64(x) == (i == j ? 1u : 2u), "bits %u and %u: %u", i, j, hk_popcount64(x));
    }
  for (unsigned k = 0; k < 1000000; k++) {
    uint64_t x = next();
    if (k & 1) x &= next();  /* sparser words too */
    unsigned got = hk_popcount64(x), want = naive_popcount(x);
    if (got != want) CHECKF(got == want, "popcount of %#llx: %u, not %u", (unsigned long long)x, got, want);
  }

  unsigned char buf[16];
  for (unsigned off = 0; off < 8; off++)
    for (unsigned pat = 0; pat < 256; pat++)
      for (unsigned rep = 0; rep < 16; rep++) {
        uint64_t noise = next();
        for (unsigned j = 0; j < 8; j++)
          buf[off + j] = (unsigned char)(((noise >> (8 * j)) & 0xfe) | ((pat >> j) & 1));
        unsigned got = hk_gather8(buf + off);
        if (got != pat) CHECKF(got == pat, "gather8 of pattern %#x at offset %u: %#x", pat, off, got);
      }
  return check_done("test_bits");
}
