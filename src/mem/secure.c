/* The out-of-line half of the per-block measures (secure.h, measures.h).
 * Compiled in every build; what a build's measures never call is dead code.
 *
 * The per-call checks are inline (secure.h): one trailer word per block holds
 * the canary, the block's state, the requested size and the kind. What is
 * here is out of line: the reports, fill on free (HAKMEM_FREE_FILL, off by
 * default), carving, remote frees and their collection. The free's own
 * slow half, which pushes the block, is the API layer's (alloc.c). */
#include "mem/secure.h"

#include <stdatomic.h>
#include <string.h>

#include "base/knobs.h"
#include "base/libc.h"  /* fill on free writes freed blocks: glibc's memset, unchecked */
#include "base/random.h"

#define FILL_WORD  0xDFDFDFDFDFDFDFDFull   /* freed memory (HAKMEM_FREE_FILL=2) */

/* HAKMEM_FREE_FILL: 0 off, 1 zero, 2 0xDF. Read from the knobs, which are
 * set once before any slab exists (a copy written at each slab's init was
 * a data race between threads: TSan, secure build) */
#define hk_sec_fill (HK_M_FILL ? (uint8_t)hk_knobs.free_fill : (uint8_t)0)

/* ---- HAKMEM_FREE_FILL: bytes [8, avail) of a freed block (the first word
 * is the link, the last the trailer) ------------------------------------- */

static uint64_t fill_word(void) { return hk_sec_fill == 1 ? 0 : FILL_WORD; }

/* both fills repeat one byte: glibc's memset writes them */
static void fill_range(uint8_t *b, size_t avail) { memset(b + 8, (int)(fill_word() & 0xff), avail - 8); }

/* Four words a step, so the compiler keeps four independent chains (and
 * may use vector registers): a 32 KiB block is read at memory speed. */
static void fill_check(const uint8_t *b, size_t avail) {
  uint64_t f = fill_word(), x0, x1, x2, x3, a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 8;
  for (; i + 32 <= avail; i += 32) {
    memcpy(&x0, b + i, 8);
    memcpy(&x1, b + i + 8, 8);
    memcpy(&x2, b + i + 16, 8);
    memcpy(&x3, b + i + 24, 8);
    a0 |= x0 ^ f;
    a1 |= x1 ^ f;
    a2 |= x2 ^ f;
    a3 |= x3 ^ f;
  }
  for (; i + 8 <= avail; i += 8) {
    memcpy(&x0, b + i, 8);
    a0 |= x0 ^ f;
  }
  if (HK_UNLIKELY((a0 | a1 | a2 | a3) != 0)) hk_report_invalid("malloc", b, "block was written after it was freed");
}

/* ---- slabs ------------------------------------------------------------- */

void hk_sec_slab_key(hk_slab_t *s) {
  static _Atomic uint64_t counter;  /* a new key each time a slab is set up */
  s->key = (uintptr_t)(hk_random(HK_RANDOM_SLAB_KEY, atomic_fetch_add(&counter, 1)) | 1);
}

uint32_t hk_sec_freed_tag(void) { return hk_sec_fill ? HK_SEC_FREED_FILL : HK_SEC_FREED; }

/* Fresh blocks: linked onto s->free in a random order (shuffle, else in
 * address order), each with its trailer "freed" (canary; filled when
 * asked) or, without canary, the free mark. The permutation is built by one
 * inside-out Fisher-Yates pass (no separate identity pass), and one pass
 * over the blocks, last to first, writes each trailer and link: fewer
 * instructions per block carved than shuffling, linking and stamping
 * separately. */
void hk_sec_carve(hk_slab_t *s, uint8_t *first, unsigned n) {
  static __thread uint64_t rng;
  uint16_t order[HK_CARVE_MAX_BYTES / 16];
  uint64_t x = rng ? rng : hk_random(HK_RANDOM_CARVE, (uintptr_t)&rng) | 1;  /* xorshift: never 0 */
  order[0] = 0;
  for (unsigned i = 1; i < n && !HK_M_SHUFFLE; i++) order[i] = (uint16_t)i;
  for (unsigned i = 1; i < n && HK_M_SHUFFLE; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    unsigned j = (unsigned)(((x >> 32) * (i + 1)) >> 32);  /* uniform in [0, i], no division */
    order[i] = order[j];  /* j == i: the next store sets it */
    order[j] = (uint16_t)i;
  }
  rng = x;
  size_t bs = s->block_size, avail = s->avail;
  uintptr_t key = s->key;
  uint32_t tag = hk_sec_freed_tag();
  bool fill = hk_sec_fill != 0;
  hk_block_t *next = s->free;
  for (unsigned i = n; i-- > 0;) {
    uint8_t *p = first + (size_t)order[i] * bs;
    if (fill) fill_range(p, avail);
    if (HK_M_CANARY) hk_sec_trailer_store(p, avail, hk_sec_canary_k(key, p) ^ tag);
    else hk_mark_store((hk_block_t *)p, hk_free_mark);  /* the free mark (freelist.h) */
    hk_link_store((hk_block_t *)p, next, HK_LINK_KEY(s));
    next = (hk_block_t *)p;
  }
  s->free = next;
}

/* ---- the out-of-line halves of malloc and free -------------------------- */

/* malloc popped p and its trailer is not "freed": fill on free is on (check
 * it), or the list was forged (or the block overwritten while free) */
void *hk_sec_alloc_slow(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  uint8_t *b = p;
  size_t avail = s->avail;
  uint32_t c = hk_sec_canary(s, p);
  if ((uint32_t)hk_sec_trailer_load(b, avail) != (c ^ HK_SEC_FREED_FILL)) hk_report_list_corrupt(p);
  fill_check(b, avail);
  if (HK_M_SLACK) b[n] = HK_SEC_SLACK_BYTE;
  hk_sec_trailer_store(b, avail,
                       (uint64_t)(c ^ HK_SEC_LIVE_FILL) | ((uint64_t)n << 32) | ((uint64_t)kind << 48));
  return p;
}

void hk_sec_free_race(void *p) { hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE); }

/* free's fast check failed, or fill on free is on: report what is wrong,
 * then (unless it was a double free) mark and fill the block for the rest
 * of the free (alloc.c's hk_sec_free_slow pushes it). */
bool hk_sec_free_settle(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner) {
  uint8_t *b = p;
  size_t avail = s->avail;
  uint32_t c = hk_sec_canary(s, p);
  uint64_t t = hk_sec_trailer_load(b, avail);
  uint32_t lo = (uint32_t)t, n = hk_sec_trailer_n(t);
  if (hk_sec_is_freed(s, p)) {
    hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
    return false;
  }
  if ((lo != (c ^ HK_SEC_LIVE) && lo != (c ^ HK_SEC_LIVE_FILL)) || n > avail) {
    hk_report_invalid("free", p, "heap overflow: the canary after this block was overwritten");
  } else {
    if (HK_M_SLACK && b[n] != HK_SEC_SLACK_BYTE)
      hk_report_invalid("free", p, "heap overflow: bytes past the end of this block were overwritten");
    if (!hk_sec_before_ok(b))
      hk_report_invalid("free", p, "heap underflow: the byte before this block was overwritten");
    unsigned have = (unsigned)(t >> 48) & 0xff;
    if (HK_M_KIND && kind != HK_KIND_ANY && have != kind) {
      hk_report_invalid("free", p, hk_why_kind(kind, have));
    }
    if (HK_M_SIZED && size != 0 && size != n)
      hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
  }
  /* the free goes on (nothing wrong but the fill, or reported with
   * HAKMEM_ABORT_ON_INVALID=0): leave a sound trailer */
  uint64_t keep = t & ~0xffffffffull;
  if (owner) {
    if (hk_sec_fill) fill_range(b, avail);
    hk_sec_trailer_store(b, avail, keep | (c ^ hk_sec_freed_tag()));
    return true;
  }
  if (!__atomic_compare_exchange_n((uint64_t *)(b + avail), &t, keep | (c ^ HK_SEC_REMOTE), false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    hk_sec_free_race(p);
    return false;
  }
  if (hk_sec_fill) fill_range(b, avail);  /* after the swap: the block is ours */
  return true;
}

/* realloc(p, n) in place: n fits the block and fills at least half of it,
 * and p passes free's checks (live, canary, the byte after its request);
 * the trailer then takes the new size and b[n] the slack byte. False: p
 * moves (when a check failed, the free after the move reports it). */
bool hk_sec_resize_checked(hk_slab_t *s, void *p, size_t n) {
  size_t avail = s->avail;
  if (n > avail || n < avail / 2) return false;
  uint8_t *b = p;
  uint64_t t = hk_sec_trailer_load(b, avail);
  if (!hk_sec_free_ok(s, b, (uint32_t)t, avail, HK_KIND_ANY, 0)) return false;
  if (HK_M_SLACK) b[n] = HK_SEC_SLACK_BYTE;  /* n == avail: the canary's own low byte */
  hk_sec_trailer_store(b, avail, (t & ~(0xffffull << 32)) | ((uint64_t)n << 32));
  return true;
}

size_t hk_sec_requested(const hk_slab_t *s, const void *p) {
  size_t avail = s->avail;
  uint32_t n = hk_sec_trailer_n(hk_sec_trailer_load(p, avail));
  return n <= avail ? n : 0;
}

bool hk_sec_is_freed(hk_slab_t *s, const void *p) {
  size_t avail = s->avail;
  uint32_t c = hk_sec_canary(s, p), lo = (uint32_t)hk_sec_trailer_load(p, avail);
  return lo == (c ^ HK_SEC_FREED) || lo == (c ^ HK_SEC_FREED_FILL) || lo == (c ^ HK_SEC_REMOTE);
}

bool hk_sec_listed_freed(hk_slab_t *s, const void *p) {
  uint32_t c = hk_sec_canary(s, p);
  return (uint32_t)hk_sec_trailer_load(p, s->avail) == (c ^ hk_sec_freed_tag());
}
