/* The secure build's hardening measures (see secure.h). Empty otherwise.
 *
 * The per-call checks are inline (secure.h): one trailer word per block holds
 * the canary, the block's state, the requested size and the kind. What is
 * here is out of line: the reports, fill on free (HAKMEM_FREE_FILL, off by
 * default), carving, remote frees and their collection. */
#include "secure.h"

#ifdef HK_SECURE
#include <stdatomic.h>
#include <string.h>

#include "knobs.h"

#define FILL_WORD  0xDFDFDFDFDFDFDFDFull   /* freed memory (HAKMEM_FREE_FILL=2) */

uint8_t hk_sec_fill;

static void trailer_store_lo(void *p, size_t avail, uint32_t v) {
  memcpy((uint8_t *)p + avail, &v, 4);
}

/* ---- HAKMEM_FREE_FILL: bytes [8, avail) of a freed block (the first word
 * is the link, the last the trailer) ------------------------------------- */

static uint64_t fill_word(void) { return hk_sec_fill == 1 ? 0 : FILL_WORD; }

static void fill_range(uint8_t *b, size_t avail) {
  uint64_t f = fill_word();
  size_t i = 8;
  for (; i + 8 <= avail; i += 8) memcpy(b + i, &f, 8);
  if (i < avail) memset(b + i, (int)(f & 0xff), avail - i);
}

void hk_sec_fill_block(hk_slab_t *s, void *p) { fill_range(p, s->block_size - HK_PAD); }

void hk_sec_fill_check(hk_slab_t *s, void *p) {
  const uint8_t *b = p;
  size_t avail = s->block_size - HK_PAD;
  uint64_t f = fill_word(), x, acc = 0;
  for (size_t i = 8; i + 8 <= avail; i += 8) {
    memcpy(&x, b + i, 8);
    acc |= x ^ f;
  }
  if (HK_UNLIKELY(acc != 0)) hk_report_invalid("malloc", p, "block was written after it was freed");
}

/* ---- slabs ------------------------------------------------------------- */

void hk_sec_slab_init(hk_slab_t *s) {
  static _Atomic uint64_t counter;
  hk_sec_fill = (uint8_t)hk_knobs.free_fill;  /* knobs are read before any slab */
  uint64_t x = atomic_fetch_add(&counter, 1) + 0x9e3779b97f4a7c15ull * (uint64_t)(uintptr_t)s;
  x ^= hk_list_key;
  x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 29; x *= 0x94d049bb133111ebull; x ^= x >> 32;
  s->key = (uintptr_t)(x | 1);
}

/* fresh blocks: free (trailer in the "freed" state), filled when asked */
void hk_sec_on_carve(hk_slab_t *s, uint8_t *first, unsigned n) {
  size_t bs = s->block_size, avail = bs - HK_PAD;
  for (unsigned i = 0; i < n; i++) {
    uint8_t *p = first + (size_t)i * bs;
    if (hk_sec_fill) fill_range(p, avail);
    uint64_t t = hk_sec_canary(s, p) ^ HK_SEC_FREED;
    memcpy(p + avail, &t, 8);
  }
}

/* ---- reports ----------------------------------------------------------- */

/* malloc popped a block whose trailer is not "freed": the list was forged
 * (or the block was overwritten while free) */
void hk_sec_bad_alloc(hk_slab_t *s, void *p) {
  (void)s;
  hk_report_list_corrupt(p);
}

/* free's fast check failed: tell why. Returns whether the free goes on
 * (HAKMEM_ABORT_ON_INVALID=0 and not a double free). */
bool hk_sec_bad_free(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner) {
  uint8_t *b = p;
  size_t avail = s->block_size - HK_PAD;
  uint32_t c = hk_sec_canary(s, p);
  uint64_t t = hk_sec_trailer_load(b, avail);
  uint32_t lo = (uint32_t)t, delta = (uint32_t)(t >> 32) & 0xffffff;
  if (lo == (c ^ HK_SEC_FREED) || lo == (c ^ HK_SEC_REMOTE)) {
    hk_report_invalid("free", p, "block already freed (double free)");
    return false;
  }
  if (lo != c || delta > avail) {
    hk_report_invalid("free", p, "heap overflow: the canary after this block was overwritten");
  } else {
    size_t n = avail - delta;
    uint64_t v;
    memcpy(&v, b + n, 8);
    if (((v ^ HK_SEC_SLACK) & hk_sec_slack_mask(delta)) != 0)
      hk_report_invalid("free", p, "heap overflow: bytes past the end of this block were overwritten");
    unsigned have = (unsigned)(t >> 56);
    if (kind != HK_KIND_ANY && have != kind) {
      const char *why = kind == HK_KIND_NEW_ARRAY ? "delete[] of memory not from new[]"
                      : kind == HK_KIND_NEW       ? "delete of memory not from new"
                                                  : "free of C++ memory";
      hk_report_invalid("free", p, why);
    }
    if (size != 0 && size != n)
      hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
  }
  /* reported and not aborted: the free goes on, with a sound trailer */
  if (hk_sec_fill) fill_range(b, avail);
  t = (uint64_t)c;
  memcpy(b + avail, &t, 8);
  if (!owner) return hk_sec_remote_mark(s, p, t);
  trailer_store_lo(b, avail, c ^ HK_SEC_FREED);
  return true;
}

/* ---- frees by other threads ------------------------------------------------
 * The freeing thread swaps the trailer from "live" (t) to "remote" with one
 * compare-and-swap, so two racing frees of one block cannot both pass; the
 * owner turns "remote" into "freed" when it collects the block, and an owner
 * free racing with a remote one leaves "freed" where "remote" must be. */
bool hk_sec_remote_mark(hk_slab_t *s, void *p, uint64_t t) {
  size_t avail = s->block_size - HK_PAD;
  uint64_t want = (t & ~0xffffffffull) | (uint32_t)((uint32_t)t ^ HK_SEC_REMOTE);
  uint64_t *w = (uint64_t *)((uint8_t *)p + avail);
  if (HK_LIKELY(__atomic_compare_exchange_n(w, &t, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
    return true;
  hk_report_invalid("free", p, "block already freed (double free)");
  return false;
}

void hk_sec_on_collected(hk_slab_t *s, void *p) {
  size_t avail = s->block_size - HK_PAD;
  uint32_t c = hk_sec_canary(s, p), lo;
  memcpy(&lo, (uint8_t *)p + avail, 4);
  if (HK_UNLIKELY(lo != (c ^ HK_SEC_REMOTE))) hk_report_list_corrupt(p);  /* freed twice, racing */
  trailer_store_lo(p, avail, c ^ HK_SEC_FREED);
}

size_t hk_sec_requested(const hk_slab_t *s, const void *p) {
  size_t avail = s->block_size - HK_PAD;
  uint32_t delta = (uint32_t)(hk_sec_trailer_load(p, avail) >> 32) & 0xffffff;
  return delta <= avail ? avail - delta : 0;
}

bool hk_sec_is_free(hk_slab_t *s, const void *p) {
  size_t avail = s->block_size - HK_PAD;
  uint32_t c = hk_sec_canary(s, p), lo = (uint32_t)hk_sec_trailer_load(p, avail);
  return lo == (c ^ HK_SEC_FREED) || lo == (c ^ HK_SEC_REMOTE);
}
#endif
