/* Measure copy (measures.h): bounds-checked copies into heap blocks.
 *
 * memcpy, memmove, memset, mempcpy, strcpy, stpcpy, strncpy, strcat,
 * strncat and their fortified forms (__memcpy_chk, ...: what -O2
 * -D_FORTIFY_SOURCE=2 calls) are exported here, so a program's calls reach
 * them instead of glibc's. The range a call writes (and, for a copy, the
 * range it reads) is checked before any byte moves:
 *
 *   both ends in memory that is not hakmem's (the chunk map says so): the
 *     call goes straight on to glibc's function (libc.h, found once);
 *   else the range must lie inside one live block, within the size it was
 *     requested with: small and mid blocks by their slab (the slot holding
 *     the address, one multiply) and trailer word (live, canary intact,
 *     requested size: secure.h); large blocks by their span entry or
 *     mapping header (large_huge.c, span.c). Anything else, a freed block or
 *     metadata included, is reported ("hakmem: heap overflow in
 *     memcpy(dst=..., n=...): block ... of N bytes") and the process
 *     aborts; with HAKMEM_ABORT_ON_INVALID=0 the call is not carried out.
 *
 * Cost (callgrind on bench/copy_loop.c; docs/SECURITY.md): a range outside
 * hakmem memory, two chunk-map reads; into a small or mid block more (the
 * slab's slot, its trailer's canary and size); into a span block one
 * head entry when the thread's hint (below) or the range's own page names
 * the block, else the lookup (span.c), the most. The interposer reads the
 * chunk map once; its heap path gets the first bytes' kinds.
 *
 * hakmem's own copies (realloc, calloc, fill on free) never come here:
 * libc.h renames them to glibc's. Copies the compiler inlines (a constant
 * small size) and copies inside glibc (fread, strdup, printf, ...) never
 * reach an interposer at all. Nothing here takes a lock or allocates. */
#define _GNU_SOURCE
#define HK_LIBC_KEEP_NAMES  /* the names are defined here */
#include "base/libc.h"

#include "api/alloc.h"
#include "backend/span.h"
#include "backend/span_arena.h"  /* the span hint reads a head entry */

#if HK_COPY_CHECKS

void __chk_fail(void) __attribute__((noreturn));  /* glibc's: "buffer overflow detected" */

enum { WRITE, READ };

/* Does [p, p + n) lie within the first size bytes from b (p >= b)? */
HK_INLINE bool fits(const void *p, size_t n, const void *b, size_t size) {
  size_t off = (uintptr_t)p - (uintptr_t)b;
  return off <= size && n <= size - off;
}

/* ---- the span hint ------------------------------------------------------------
 * Per thread and role (WRITE, READ), the start of the last span block a
 * range was found in: a string builder's buffer takes copy after copy, and
 * a copy between two big buffers has one of each. A range that misses it
 * may start on its block's first page (a fresh buffer filled from its
 * start): that page's entry is tried the same way before the lookup. One
 * word, stored whole, so that a signal handler's copy in between sees the
 * old start or the new one, never half of each. It holds no size and no
 * state: a range is inside the hinted block when the head entry of the
 * hint's page says, now, that a live block starts there (T_HEAD | T_LIVE)
 * and the range lies within the requested size that entry says. A block
 * freed, resized, or replaced by another whose run starts elsewhere
 * changes that entry, so the hint passes no range the lookup would not
 * (span.c, hk_span_block_of: the same reads without the lock). The hint's
 * entry is read only when the range is in the same 1 GiB arena as the
 * hint, whose chunk the caller saw in the chunk map as a span arena's, so
 * mapped. A miss costs the lookup (its own hint, then the page's entry or
 * a walk back to the block's head). */
static __thread uintptr_t span_hint[2];

/* Does the head entry of page h (a page of p's arena, not before its
 * first block page) say that a live block starts there, and does
 * [p, p + n) lie within its requested size? */
HK_INLINE bool span_fits(hk_arena_t *ar, uintptr_t h, const void *p, size_t n) {
  const entry_t *e = &ar->e[page_of(ar, (const void *)h)];
  uint8_t tag = HK_LOAD_RACY(e->tag);
  size_t size = HK_LOAD_RACY(e->l.requested);
  return (tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && fits(p, n, (const void *)h, size);
}
/* [p, p + n) in the hinted block, or in a block that starts on p's page (a
 * copy to the start of a buffer: that block is the hint from now) */
HK_INLINE bool in_hinted_span(const void *p, size_t n, int how) {
  uintptr_t h = span_hint[how], a = (uintptr_t)p;
  hk_arena_t *ar = arena_of(p);
  if (HK_LIKELY(((a ^ h) >> ARENA_SHIFT) == 0) && span_fits(ar, h, p, n)) return true;
  h = a & ~(uintptr_t)(HK_PAGE - 1);
  if (page_of(ar, (const void *)h) < HK_LOAD_RACY(ar->first_page) || !span_fits(ar, h, p, n)) return false;
  span_hint[how] = h;
  return true;
}

/* the span lookup (span.c), which then hints the block it found */
static HK_NOINLINE bool span_block(const uint8_t *p, int how, const uint8_t **start, size_t *size) {
  if (!hk_span_block_of(p, (uint8_t **)start, size)) return false;
  span_hint[how] = (uintptr_t)*start;
  return true;
}

/* The live block holding address p of chunk kind ck: its start and
 * requested size; false when p is in none. Slab memory inline, span blocks
 * by one call (hinted: how, the range's role), the rest by its tier's row
 * (alloc.h). */
HK_INLINE bool block_of(const uint8_t *p, unsigned ck, int how, const uint8_t **start, size_t *size) {
  if (HK_LIKELY(hk_chunk_is_ss(ck))) return hk_slab_extent(p, ck, start, size);
  if (ck == HK_CHUNK_SPAN) return span_block(p, how, start, size);
  return hk_tier_of(ck)->extent(p, ck, start, size);
}

/* The report of a range that failed, naming the block it starts in (or, if
 * it starts in foreign memory, the one it ends in). */
static HK_COLD void report_range(const char *fn, int how, const void *p, size_t n) {
  const uint8_t *a = p, *e = (const uint8_t *)((uintptr_t)p + n - 1), *b = NULL;
  size_t size = 0;
  unsigned ck = hk_chunk_kind(a);
  bool live = ck ? block_of(a, ck, how, &b, &size) : block_of(e, hk_chunk_kind(e), how, &b, &size);
  const char *what = how == WRITE ? "heap overflow" : "heap over-read";
  const char *arg = how == WRITE ? "dst" : "src";
  if (live)
    hk_report_heap("%s in %s(%s=%p, n=%zu): block %p of %zu bytes", what, fn, arg, p, n, (const void *)b, size);
  else
    hk_report_heap("%s in %s(%s=%p, n=%zu): not in a live hakmem block", what, fn, arg, p, n);
}

/* Is [p, p + n) (n > 0) inside the requested size of one live block? A
 * range that starts in memory that is not hakmem's and ends in hakmem's is
 * not. */
HK_INLINE bool in_block(const void *p, size_t n, unsigned ck, int how) {
  const uint8_t *b;
  size_t size;
  return block_of(p, ck, how, &b, &size) && fits(p, n, b, size);
}

/* The chunk kind of the last byte of [p, p + n) (n == 0 reads p - 1's:
 * harmless, the checks pass it) */
HK_INLINE unsigned end_kind(const void *p, size_t n) {
  return hk_chunk_kind((const void *)((uintptr_t)p + n - 1));  /* integers: p may be NULL with n == 0 */
}
/* The chunk kinds of both ends, or-ed: 0 when neither is in hakmem memory */
HK_INLINE unsigned ends_kind(const void *p, size_t n) { return hk_chunk_kind(p) | end_kind(p, n); }

/* The whole check of one range: true when the call may go on; else
 * reported, and false (the call is not made) when the report returns. */
static HK_NOINLINE bool range_full(const char *fn, int how, const void *p, size_t n) {
  unsigned ck = hk_chunk_kind(p);
  if (n == 0 || (ck == 0 ? end_kind(p, n) == 0 : in_block(p, n, ck, how))) return true;
  report_range(fn, how, p, n);
  return false;
}

/* The heap paths' look at one range, without a call or a report (ck: the
 * chunk kind of its first byte, as the interposer read it): true when it
 * passes, both ends outside hakmem memory (the last byte's kind read
 * again: the interposer's test ors it away), inside a live small or mid
 * block, or inside the hinted span block; false sends the call to the
 * whole check (range_full), which passes what this does not see (n == 0,
 * the other tiers, a span block not hinted) and reports the rest. */
HK_INLINE bool quick(const void *p, size_t n, unsigned ck, int how) {
  if (ck == 0) return end_kind(p, n) == 0;
  if (HK_LIKELY(hk_chunk_is_ss(ck))) {
    const uint8_t *b;
    size_t size;
    return hk_slab_extent(p, ck, &b, &size) && fits(p, n, b, size);
  }
  return ck == HK_CHUNK_SPAN && in_hinted_span(p, n, how);
}

/* One range with the lookups quick leaves out (ck: its first byte's chunk
 * kind): true when it passes, without a report (n == 0 is range_full's) */
HK_INLINE bool range_in(const void *p, size_t n, unsigned ck, int how) {
  return ck == 0 ? end_kind(p, n) == 0 : in_block(p, n, ck, how);
}

/* One range: inline while both ends are outside hakmem memory, else
 * quick, then the whole check */
static HK_NOINLINE bool range_heap(const char *fn, int how, const void *p, size_t n, unsigned ck) {
  return HK_LIKELY(quick(p, n, ck, how)) || range_full(fn, how, p, n);
}
HK_INLINE bool range_ok(const char *fn, int how, const void *p, size_t n) {
  unsigned k0 = hk_chunk_kind(p), k1 = end_kind(p, n);
  return HK_LIKELY((k0 | k1) == 0) || range_heap(fn, how, p, n, k0);
}
HK_INLINE bool copy_ok(const char *fn, const void *d, const void *s, size_t n) {
  return range_ok(fn, WRITE, d, n) && range_ok(fn, READ, s, n);
}

/* ---- the interposers ------------------------------------------------------- */

/* The chunk kinds of a range's two ends, read once by the interposer; its
 * heap path gets the first byte's (k0), so that the test of the fast path
 * can or the others into k1 and copy no register */
#define ENDS(p, n, k0, k1) unsigned k0 = hk_chunk_kind(p), k1 = end_kind(p, n)

/* Each copy: both ranges outside hakmem memory, then a tail jump to glibc's
 * function (the fast path: two chunk-map reads per range, no register
 * saved); else FN_heap, out of line, given the kinds it read: quick on
 * both ranges, then the tail jump (no register saved for a small or mid
 * block); else FN_look: the lookups quick leaves out (a span block not
 * hinted, a huge block; it reads the chunk map again, so that FN_heap
 * keeps no kind for it); else FN_full: every check again, and the
 * report. */
#define COPY_PATHS(fn, name, ret)                                                  \
  static HK_NOINLINE void *fn##_full(void *d, const void *s, size_t n) {          \
    if (range_full(name, WRITE, d, n) && range_full(name, READ, s, n))             \
      return hk_libc.fn(d, s, n);                                                  \
    return (void *)(ret);                                                          \
  }                                                                                \
  static HK_NOINLINE void *fn##_look(void *d, const void *s, size_t n) {           \
    if (HK_LIKELY(range_in(d, n, hk_chunk_kind(d), WRITE) &&                       \
                  range_in(s, n, hk_chunk_kind(s), READ)))                          \
      return hk_libc.fn(d, s, n);                                                   \
    return fn##_full(d, s, n);                                                      \
  }                                                                                 \
  static HK_NOINLINE void *fn##_heap(void *d, const void *s, size_t n, unsigned kd, \
                                     unsigned ks) {                                 \
    if (HK_LIKELY(quick(d, n, kd, WRITE) && quick(s, n, ks, READ)))                \
      return hk_libc.fn(d, s, n);                                                   \
    return fn##_look(d, s, n);                                                      \
  }                                                                                 \
  HK_EXPORT void *fn(void *d, const void *s, size_t n) {                            \
    ENDS(d, n, d0, d1);                                                             \
    ENDS(s, n, s0, s1);                                                             \
    if (HK_LIKELY((d0 | d1 | s0 | s1) == 0)) return hk_libc.fn(d, s, n);            \
    return fn##_heap(d, s, n, d0, s0);                                              \
  }
COPY_PATHS(memcpy, "memcpy", d)
COPY_PATHS(memmove, "memmove", d)
COPY_PATHS(mempcpy, "mempcpy", (uint8_t *)d + n)

static HK_NOINLINE void *memset_full(void *d, int c, size_t n) {
  return range_full("memset", WRITE, d, n) ? hk_libc.memset(d, c, n) : d;
}
static HK_NOINLINE void *memset_look(void *d, int c, size_t n) {
  if (HK_LIKELY(range_in(d, n, hk_chunk_kind(d), WRITE))) return hk_libc.memset(d, c, n);
  return memset_full(d, c, n);
}
static HK_NOINLINE void *memset_heap(void *d, int c, size_t n, unsigned kd) {
  if (HK_LIKELY(quick(d, n, kd, WRITE))) return hk_libc.memset(d, c, n);
  return memset_look(d, c, n);
}
HK_EXPORT void *memset(void *d, int c, size_t n) {
  ENDS(d, n, d0, d1);
  if (HK_LIKELY((d0 | d1) == 0)) return hk_libc.memset(d, c, n);
  return memset_heap(d, c, n, d0);
}

/* The string copies measure the string first (glibc's strlen), then check
 * and copy that many bytes with glibc's memcpy. */
static char *copy_string(const char *fn, char *d, const char *s, size_t n) {
  if (HK_UNLIKELY(!copy_ok(fn, d, s, n))) return NULL;
  return hk_libc.memcpy(d, s, n);
}

HK_EXPORT char *strcpy(char *restrict d, const char *restrict s) {
  copy_string("strcpy", d, s, strlen(s) + 1);
  return d;
}

HK_EXPORT char *stpcpy(char *restrict d, const char *restrict s) {
  size_t n = strlen(s);
  copy_string("stpcpy", d, s, n + 1);
  return d + n;
}

/* writes n bytes (the string, then zeroes); reads the string and its end,
 * or n bytes when it is not shorter */
static char *copy_n(const char *fn, char *d, const char *s, size_t n) {
  size_t len = strnlen(s, n);
  if (HK_UNLIKELY(!range_ok(fn, WRITE, d, n) || !range_ok(fn, READ, s, len < n ? len + 1 : n))) return d;
  return hk_libc.strncpy(d, s, n);
}
HK_EXPORT char *strncpy(char *restrict d, const char *restrict s, size_t n) { return copy_n("strncpy", d, s, n); }

/* writes the string and its end after d's string */
HK_EXPORT char *strcat(char *restrict d, const char *restrict s) {
  copy_string("strcat", d + strlen(d), s, strlen(s) + 1);
  return d;
}

/* writes at most n bytes of s and an end after d's string */
static char *cat_n(const char *fn, char *d, const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *e = d + strlen(d);
  if (HK_UNLIKELY(!range_ok(fn, WRITE, e, len + 1) || !range_ok(fn, READ, s, len < n ? len + 1 : n))) return d;
  hk_libc.memcpy(e, s, len);
  e[len] = 0;
  return d;
}
HK_EXPORT char *strncat(char *restrict d, const char *restrict s, size_t n) { return cat_n("strncat", d, s, n); }

/* ---- the fortified forms: glibc's own check (the size the compiler knows
 * for the destination), then ours ---------------------------------------------- */

HK_EXPORT void *__memcpy_chk(void *restrict d, const void *restrict s, size_t n, size_t dlen) {
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  if (HK_UNLIKELY(!copy_ok("__memcpy_chk", d, s, n))) return d;
  return hk_libc.memcpy(d, s, n);
}

HK_EXPORT void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen) {
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  if (HK_UNLIKELY(!copy_ok("__memmove_chk", d, s, n))) return d;
  return hk_libc.memmove(d, s, n);
}

HK_EXPORT void *__memset_chk(void *d, int c, size_t n, size_t dlen) {
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  if (HK_UNLIKELY(!range_ok("__memset_chk", WRITE, d, n))) return d;
  return hk_libc.memset(d, c, n);
}

HK_EXPORT void *__mempcpy_chk(void *restrict d, const void *restrict s, size_t n, size_t dlen) {
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  if (HK_UNLIKELY(!copy_ok("__mempcpy_chk", d, s, n))) return (uint8_t *)d + n;
  return hk_libc.mempcpy(d, s, n);
}

HK_EXPORT char *__strcpy_chk(char *restrict d, const char *restrict s, size_t dlen) {
  size_t n = strlen(s) + 1;
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  copy_string("__strcpy_chk", d, s, n);
  return d;
}

HK_EXPORT char *__stpcpy_chk(char *restrict d, const char *restrict s, size_t dlen) {
  size_t n = strlen(s);
  if (HK_UNLIKELY(n + 1 > dlen)) __chk_fail();
  copy_string("__stpcpy_chk", d, s, n + 1);
  return d + n;
}

HK_EXPORT char *__strncpy_chk(char *restrict d, const char *restrict s, size_t n, size_t dlen) {
  if (HK_UNLIKELY(n > dlen)) __chk_fail();
  return copy_n("__strncpy_chk", d, s, n);
}

HK_EXPORT char *__strcat_chk(char *restrict d, const char *restrict s, size_t dlen) {
  size_t dl = strlen(d), sl = strlen(s);
  if (HK_UNLIKELY(dl + sl + 1 > dlen)) __chk_fail();
  copy_string("__strcat_chk", d + dl, s, sl + 1);
  return d;
}

HK_EXPORT char *__strncat_chk(char *restrict d, const char *restrict s, size_t n, size_t dlen) {
  if (HK_UNLIKELY(strlen(d) + strnlen(s, n) + 1 > dlen)) __chk_fail();
  return cat_n("__strncat_chk", d, s, n);
}

#endif
