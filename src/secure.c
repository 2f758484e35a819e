/* The secure build's hardening measures (see secure.h). Empty otherwise. */
#include "secure.h"

#ifdef HK_SECURE
#include <stdatomic.h>
#include <string.h>

#include "knobs.h"

#define FILL_BYTE   0xDF   /* freed memory            */
#define SLACK_BYTE  0xDE   /* between request and pad */
#define CHECK_BYTES 256    /* freed bytes checked at reuse (fill mode 0) */
#define SLACK_CHECK 64

static uint32_t canary_of(const hk_slab_t *s, const void *p) {
  uint64_t x = (uint64_t)s->key ^ (uint64_t)(uintptr_t)p;
  x *= 0x9e3779b97f4a7c15ull;
  return (uint32_t)(x >> 32);
}

static _Atomic uint64_t *bit_word(hk_slab_t *s, uint32_t idx, uint64_t *bit) {
  hk_superslab_t *ss = hk_slab_ss(s);
  *bit = 1ull << (idx & 63);
  return &ss->free_bits[s->index][idx >> 6];
}

static uint8_t fill_byte(void) { return hk_knobs.free_fill == 1 ? 0 : FILL_BYTE; }

/* bytes [8, end) of a free block carry the fill; the first word is the link */
static size_t fill_end(const hk_slab_t *s) {
  size_t avail = s->block_size - HK_PAD;
  if (hk_knobs.free_fill == 0 && avail > CHECK_BYTES) return CHECK_BYTES;
  return avail;
}

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
  uint8_t fb = fill_byte();
  size_t end = fill_end(s);
  for (unsigned i = 0; i < n; i++) {
    uint8_t *p = first + (size_t)i * s->block_size;
    if (end > 8) memset(p + 8, fb, end - 8);
    uint64_t bit;
    _Atomic uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
    atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
  }
}

void hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  uint8_t *b = p;
  uint32_t idx = hk_slab_block_index(s, p);
  uint64_t bit;
  _Atomic uint64_t *w = bit_word(s, idx, &bit);
  if (!(atomic_fetch_and_explicit(w, ~bit, memory_order_relaxed) & bit))
    hk_report_list_corrupt(p);  /* handing out a block that is not free */
  uint8_t fb = fill_byte();
  size_t end = fill_end(s);
  for (size_t i = 8; i < end; i++)
    if (b[i] != fb) {
      hk_report_invalid("malloc", p, "block was written after it was freed");
      break;
    }
  size_t avail = s->block_size - HK_PAD;
  uint32_t delta = (uint32_t)(avail - n);
  size_t slack = delta < SLACK_CHECK ? delta : SLACK_CHECK;
  memset(b + n, SLACK_BYTE, slack);
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
  _Atomic uint64_t *w = bit_word(s, hk_slab_block_index(s, p), &bit);
  return (atomic_load_explicit(w, memory_order_relaxed) & bit) != 0;
}

bool hk_sec_on_free(hk_slab_t *s, void *p, uint32_t idx, unsigned kind, size_t size) {
  uint8_t *b = p;
  uint64_t bit;
  _Atomic uint64_t *w = bit_word(s, idx, &bit);
  if (atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit) {
    hk_report_invalid("free", p, "block already freed (double free)");
    return false;
  }
  size_t avail = s->block_size - HK_PAD;
  uint32_t c, info;
  memcpy(&c, b + avail, 4);
  memcpy(&info, b + avail + 4, 4);
  uint32_t delta = info & 0xffffff;
  if (c != canary_of(s, p) || delta > avail) {
    hk_report_invalid("free", p, "heap overflow: the canary after this block was overwritten");
  } else {
    size_t n = avail - delta;
    size_t slack = delta < SLACK_CHECK ? delta : SLACK_CHECK;
    for (size_t i = 0; i < slack; i++)
      if (b[n + i] != SLACK_BYTE) {
        hk_report_invalid("free", p, "heap overflow: bytes past the end of this block were overwritten");
        break;
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
  uint8_t fb = fill_byte();
  size_t end = hk_knobs.free_fill == 0 ? fill_end(s) : avail;
  if (end > 8) memset(b + 8, fb, end - 8);
  return true;
}
#endif
