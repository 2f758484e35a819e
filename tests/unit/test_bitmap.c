/* test_bitmap — src/base/bitmap.h against an array of one bool a bit:
 *
 *   - random ranges set and cleared (hk_bitmap_set) at every offset and
 *     length across word boundaries, and whole words, leave exactly the
 *     bits the array says;
 *   - hk_bitmap_count of random ranges is the array's count;
 *   - hk_bitmap_next_run walks the same runs of set bits as the array,
 *     from any start to any end;
 *   - hk_bitmap_keep clears exactly the bits whose byte says "absent"
 *     (bit 0 clear; the other bits random, as mincore leaves them);
 *   - hk_bitmap_test is the array's bit;
 *   - two threads setting and clearing their own ranges, which share
 *     words at their ends, never change each other's bits (the shared
 *     words need the atomic or/and; the whole ones take a store). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/bitmap.h"
#include "check.h"

#define NBITS 1024u

static uint64_t bm[NBITS / 64];
static bool ref[NBITS];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {  /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* A random range [*i, *i + *n) of the bitmap (n may be 0), often long. */
static void range(uint32_t *i, uint32_t *n) {
  *i = (uint32_t)(next() % NBITS);
  uint32_t room = NBITS - *i;
  *n = (uint32_t)(next() % (next() & 1 ? room + 1 : (room < 80 ? room + 1 : 80)));
}

static bool same(void) {
  for (uint32_t b = 0; b < NBITS; b++)
    if ((bm[b / 64] >> (b % 64) & 1) != ref[b] || hk_bitmap_test(bm, b) != ref[b]) return false;
  return true;
}

/* Two threads, each the owner of every other segment of a bitmap cut at
 * random bits: each sets and clears its own segments whole and reads
 * them back after each change; a lost update at a shared word shows as a
 * bit of its own that is not what it wrote. */
#define SHARED_BITS 4096u
#define SEGS 48u
static uint64_t shared_bm[SHARED_BITS / 64];
static uint32_t seg_at[SEGS + 1];
static unsigned shared_bad[2];

static void *owner(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  uint64_t r = 0x51ed2701u + t;
  for (unsigned round = 0; round < 20000; round++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    unsigned s = 2 * (unsigned)((r >> 33) % (SEGS / 2)) + t;
    bool on = r >> 63;
    uint32_t i = seg_at[s], n = seg_at[s + 1] - i;
    hk_bitmap_set(shared_bm, i, n, on);
    if (hk_bitmap_count(shared_bm, i, n) != (on ? n : 0)) shared_bad[t]++;
    for (unsigned x = t; x < SEGS; x += 2) {  /* the rest of its own, unchanged by the other */
      uint32_t c = hk_bitmap_count(shared_bm, seg_at[x], seg_at[x + 1] - seg_at[x]);
      if (c != 0 && c != seg_at[x + 1] - seg_at[x]) shared_bad[t]++;
    }
  }
  return NULL;
}

static void two_owners(void) {
  seg_at[0] = 0;
  for (unsigned s = 1; s < SEGS; s++) seg_at[s] = seg_at[s - 1] + 1 + (uint32_t)(next() % (2 * SHARED_BITS / SEGS - 1));
  seg_at[SEGS] = SHARED_BITS;
  CHECK(seg_at[SEGS - 1] < SHARED_BITS);
  pthread_t th[2];
  for (unsigned t = 0; t < 2; t++) CHECK(pthread_create(&th[t], NULL, owner, (void *)(uintptr_t)t) == 0);
  for (unsigned t = 0; t < 2; t++) pthread_join(th[t], NULL);
  CHECKF(shared_bad[0] == 0 && shared_bad[1] == 0, "two owners: %u and %u segments changed by the other",
         shared_bad[0], shared_bad[1]);
}

int main(void) {
  for (unsigned k = 0; k < 20000; k++) {
    uint32_t i, n;
    range(&i, &n);
    bool on = next() & 1;
    hk_bitmap_set(bm, i, n, on);
    for (uint32_t b = i; b < i + n; b++) ref[b] = on;
    if (!same()) {
      CHECKF(0, "set [%u, %u) %s: bitmap differs", i, i + n, on ? "on" : "off");
      break;
    }

    range(&i, &n);
    uint32_t want = 0;
    for (uint32_t b = i; b < i + n; b++) want += ref[b];
    uint32_t got = hk_bitmap_count(bm, i, n);
    if (got != want) CHECKF(got == want, "count [%u, %u): %u, not %u", i, i + n, got, want);

    range(&i, &n);
    uint32_t p = i, q, end = i + n, b = i;
    while (hk_bitmap_next_run(bm, &p, end, &q)) {
      uint32_t rb = b;  /* the array's next run from b */
      while (rb < end && !ref[rb]) rb++;
      uint32_t re = rb;
      while (re < end && ref[re]) re++;
      if (p != rb || q != re || p >= q) {
        CHECKF(0, "next_run in [%u, %u) from %u: [%u, %u), not [%u, %u)", i, end, b, p, q, rb, re);
        break;
      }
      b = p = q;
    }
    while (b < end && !ref[b]) b++;
    if (b != end) CHECKF(b == end, "next_run in [%u, %u): none found, but bit %u is set", i, end, b);

    if (k % 8 == 0) {
      unsigned char vec[NBITS];
      range(&i, &n);
      for (uint32_t x = 0; x < n; x++) vec[x] = (unsigned char)((next() & 0xfe) | (next() & 1));
      hk_bitmap_keep(bm, i, n, vec);
      for (uint32_t x = 0; x < n; x++)
        if (!(vec[x] & 1)) ref[i + x] = false;
      if (!same()) {
        CHECKF(0, "keep [%u, %u): bitmap differs", i, i + n);
        break;
      }
    }
  }

  /* whole words and the last bit */
  memset(bm, 0, sizeof bm);
  memset(ref, 0, sizeof ref);
  hk_bitmap_set(bm, 64, 128, true);
  hk_bitmap_set(bm, NBITS - 1, 1, true);
  CHECK(bm[0] == 0 && bm[1] == ~0ull && bm[2] == ~0ull && bm[3] == 0);
  CHECK(hk_bitmap_count(bm, 0, NBITS) == 129);
  uint32_t p = 0, q;
  CHECK(hk_bitmap_next_run(bm, &p, NBITS, &q) && p == 64 && q == 192);
  p = q;
  CHECK(hk_bitmap_next_run(bm, &p, NBITS, &q) && p == NBITS - 1 && q == NBITS);
  p = q;
  CHECK(!hk_bitmap_next_run(bm, &p, NBITS, &q));
  two_owners();
  return check_done("test_bitmap");
}
