/* The secure build's hardening measures (see secure.h). Empty otherwise.
 *
 * Costs are kept to a few words per call: the free bitmap is written only by
 * the slab's owner (plain stores; other threads only read it), the freed-
 * memory check and the overflow check compare whole words. */
#include "secure.h"

#ifdef HK_SECURE
#include <stdatomic.h>
#include <string.h>

#include "knobs.h"

#define FILL_WORD  0xDFDFDFDFDFDFDFDFull   /* freed memory                  */
#define SLACK_BYTE 0xDE                    /* between the request and pad   */
#define LIGHT_END  32                      /* fill mode 0 covers [8, 32)    */

static uint32_t canary_of(const hk_slab_t *s, const void *p) {
  uint64_t x = (uint64_t)s->key ^ (uint64_t)(uintptr_t)p;
  x *= 0x9e3779b97f4a7c15ull;
  return (uint32_t)(x >> 32);
}

static uint64_t *bit_word(hk_slab_t *s, uint32_t idx, uint64_t *bit) {
  hk_superslab_t *ss = hk_slab_ss(s);
  *bit = 1ull << (idx & 63);
  return (uint64_t *)&ss->free_bits[s->index][idx >> 6];
}
/* owner only: plain load and store (no lock prefix); others only read */
static void bit_set(uint64_t *w, uint64_t bit) {
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | bit, __ATOMIC_RELAXED);
}
static void bit_clear(uint64_t *w, uint64_t bit) {
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) & ~bit, __ATOMIC_RELAXED);
}
static bool bit_test(uint64_t *w, uint64_t bit) {
  return (__atomic_load_n(w, __ATOMIC_RELAXED) & bit) != 0;
}

static uint64_t fill_word(void) { return hk_knobs.free_fill == 1 ? 0 : FILL_WORD; }

/* bytes [8, end) of a free block carry the fill (the first word is the link) */
static size_t fill_end(const hk_slab_t *s) {
  size_t avail = s->block_size - HK_PAD;
  size_t end = hk_knobs.free_fill == 0 ? LIGHT_END : avail;
  return end < avail ? end : avail;
}
/* mode 0 checks what it fills; modes 1/2 (opt-in, whole blocks) check it all */
static size_t check_end(const hk_slab_t *s) { return fill_end(s); }

static void fill_block(uint8_t *b, size_t end) {
  uint64_t f = fill_word();
  if (HK_LIKELY(end == LIGHT_END)) {  /* the default: three words */
    memcpy(b + 8, &f, 8);
    memcpy(b + 16, &f, 8);
    memcpy(b + 24, &f, 8);
    return;
  }
  size_t i = 8;
  for (; i + 8 <= end; i += 8) memcpy(b + i, &f, 8);
  if (i < end) memset(b + i, (int)(f & 0xff), end - i);
}

static bool fill_intact(const uint8_t *b, size_t end) {
  uint64_t f = fill_word(), x, y, z;
  if (HK_LIKELY(end == LIGHT_END)) {
    memcpy(&x, b + 8, 8);
    memcpy(&y, b + 16, 8);
    memcpy(&z, b + 24, 8);
    return ((x ^ f) | (y ^ f) | (z ^ f)) == 0;
  }
  for (size_t i = 8; i + 8 <= end; i += 8) {
    memcpy(&x, b + i, 8);
    if (x != f) return false;
  }
  return true;
}

/* the first min(delta, 8) bytes after the request hold the slack pattern */
static uint64_t slack_mask(uint32_t delta) {
  return delta >= 8 ? ~0ull : ((1ull << (8 * delta)) - 1);
}
#define SLACK_WORD 0xDEDEDEDEDEDEDEDEull

void hk_sec_slab_init(hk_slab_t *s) {
  static _Atomic uint64_t counter;
  uint64_t x = atomic_fetch_add(&counter, 1) + 0x9e3779b97f4a7c15ull * (uint64_t)(uintptr_t)s;
  x ^= hk_list_key;
  x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 29; x *= 0x94d049bb133111ebull; x ^= x >> 32;
  s->key = (uintptr_t)(x | 1);
  hk_superslab_t *ss = hk_slab_ss(s);
  memset((void *)ss->free_bits[s->index], 0, sizeof ss->free_bits[0]);
}

void hk_sec_on_carve(hk_slab_t *s, uint8_t *first, unsigned n) {
  size_t end = fill_end(s);
  for (unsigned i = 0; i < n; i++) {
    uint8_t *p = first + (size_t)i * s->block_size;
    fill_block(p, end);
    uint64_t bit;
    uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
    bit_set(w, bit);
  }
}

void hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  uint8_t *b = p;
  uint64_t bit;
  uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
  if (!bit_test(w, bit)) hk_report_list_corrupt(p);  /* handing out a block that is not free */
  bit_clear(w, bit);
  if (HK_UNLIKELY(!fill_intact(b, check_end(s))))
    hk_report_invalid("malloc", p, "block was written after it was freed");
  size_t avail = s->block_size - HK_PAD;
  uint32_t delta = (uint32_t)(avail - n);
  if (delta >= 8) {  /* slack after the request: a word of pattern */
    uint64_t pat = SLACK_WORD;
    memcpy(b + n, &pat, 8);
  } else if (delta) {
    uint64_t pat = SLACK_WORD;
    memcpy(b + n, &pat, delta);
  }
  uint32_t c = canary_of(s, p), info = delta | ((uint32_t)kind << 24);
  memcpy(b + avail, &c, 4);
  memcpy(b + avail + 4, &info, 4);
}

size_t hk_sec_requested(const hk_slab_t *s, const void *p) {
  uint32_t info;
  size_t avail = s->block_size - HK_PAD;
  memcpy(&info, (const uint8_t *)p + avail + 4, 4);
  uint32_t delta = info & 0xffffff;
  return delta <= avail ? avail - delta : 0;
}

bool hk_sec_is_free(hk_slab_t *s, const void *p) {
  uint64_t bit;
  uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
  return bit_test(w, bit);
}

void hk_sec_on_collected(hk_slab_t *s, void *p) {
  uint64_t bit;
  uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
  if (bit_test(w, bit)) hk_report_list_corrupt(p);  /* freed twice by other threads */
  bit_set(w, bit);
}

bool hk_sec_on_free(hk_slab_t *s, void *p, uint32_t idx, unsigned kind, size_t size, bool owner) {
  uint8_t *b = p;
  uint64_t bit;
  uint64_t *w = bit_word(s, idx, &bit);
  if (bit_test(w, bit)) {
    hk_report_invalid("free", p, "block already freed (double free)");
    return false;
  }
  if (owner) bit_set(w, bit);  /* remote frees: the owner sets it on collection */
  size_t avail = s->block_size - HK_PAD;
  uint32_t c, info;
  memcpy(&c, b + avail, 4);
  memcpy(&info, b + avail + 4, 4);
  uint32_t delta = info & 0xffffff;
  if (c != canary_of(s, p) || delta > avail) {
    hk_report_invalid("free", p, "heap overflow: the canary after this block was overwritten");
  } else {
    size_t n = avail - delta;
    if (delta) {
      uint64_t v;  /* the slack word may run into the pad: mask it */
      memcpy(&v, b + n, 8);
      if (((v ^ SLACK_WORD) & slack_mask(delta)) != 0)
        hk_report_invalid("free", p, "heap overflow: bytes past the end of this block were overwritten");
    }
    unsigned have = info >> 24;
    if (kind != HK_KIND_ANY && have != kind) {
      const char *why = kind == HK_KIND_NEW_ARRAY ? "delete[] of memory not from new[]"
                      : kind == HK_KIND_NEW       ? "delete of memory not from new"
                                                  : "free of C++ memory";
      hk_report_invalid("free", p, why);
    }
    if (size != 0 && size != n)
      hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
  }
  fill_block(b, fill_end(s));
  return true;
}
#endif
