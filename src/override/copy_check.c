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
 * slab's slot, its trailer's canary and size), into a span block the most
 * (its head entry, found from the page or the thread's last one, span.c). The interposer
 * reads the chunk map once; its heap path gets the kinds it read.
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

#if HK_COPY_CHECKS

void __chk_fail(void) __attribute__((noreturn));  /* glibc's: "buffer overflow detected" */

enum { WRITE, READ };

/* The live block holding address p of chunk kind ck: its start and
 * requested size; false when p is in none. Slab memory inline, span blocks
 * by one call (a string builder's buffer: the common large case), the rest
 * by its tier's row (alloc.h). */
HK_INLINE bool block_of(const uint8_t *p, unsigned ck, const uint8_t **start, size_t *size) {
  if (HK_LIKELY(hk_chunk_is_ss(ck))) return hk_slab_extent(p, ck, start, size);
  if (ck == HK_CHUNK_SPAN) return hk_span_block_of(p, (uint8_t **)start, size);
  return hk_tier_of(ck)->extent(p, ck, start, size);
}

/* The report of a range that failed, naming the block it starts in (or, if
 * it starts in foreign memory, the one it ends in). */
static HK_COLD void report_range(const char *fn, int how, const void *p, size_t n) {
  const uint8_t *a = p, *e = (const uint8_t *)((uintptr_t)p + n - 1), *b = NULL;
  size_t size = 0;
  unsigned ck = hk_chunk_kind(a);
  bool live = ck ? block_of(a, ck, &b, &size) : block_of(e, hk_chunk_kind(e), &b, &size);
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
HK_INLINE bool in_block(const void *p, size_t n, unsigned ck) {
  const uint8_t *a = p, *b;
  size_t size;
  if (!block_of(a, ck, &b, &size)) return false;
  size_t off = (uintptr_t)a - (uintptr_t)b;
  return off <= size && n <= size - off;
}

/* The chunk kinds of both ends of [p, p + n), or-ed: 0 when neither is in
 * hakmem memory (n == 0 reads p - 1's: harmless, the checks pass it). */
HK_INLINE unsigned ends_kind(const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;  /* integers: p may be NULL with n == 0 */
  return hk_chunk_kind(p) | hk_chunk_kind((const void *)(a + n - 1));
}

/* The whole check of one range: true when the call may go on; else
 * reported, and false (the call is not made) when the report returns. */
static HK_NOINLINE bool range_full(const char *fn, int how, const void *p, size_t n) {
  if (n == 0 || ends_kind(p, n) == 0 || in_block(p, n, hk_chunk_kind(p))) return true;
  report_range(fn, how, p, n);
  return false;
}
/* ... inline while both ends are outside hakmem memory */
HK_INLINE bool range_ok(const char *fn, int how, const void *p, size_t n) {
  return HK_LIKELY(ends_kind(p, n) == 0) || range_full(fn, how, p, n);
}
HK_INLINE bool copy_ok(const char *fn, const void *d, const void *s, size_t n) {
  return range_ok(fn, WRITE, d, n) && range_ok(fn, READ, s, n);
}

/* The heap paths' look at one range (n > 0; ck: the chunk kind of its
 * first byte, as the interposer read it), without a report: OK outside
 * hakmem memory or inside a live small or mid block (no call), BAD outside
 * any live one (a range that starts outside hakmem memory and ends in it
 * too), LARGE when it starts in the large tier (a call to look). */
enum { R_OK = 0, R_BAD = 1, R_LARGE = 2 };
HK_INLINE int quick(const void *p, size_t n, unsigned ck) {
  if (ck == 0) return hk_chunk_kind((const void *)((uintptr_t)p + n - 1)) == 0 ? R_OK : R_BAD;
  if (HK_LIKELY(hk_chunk_is_ss(ck))) return in_block(p, n, ck) ? R_OK : R_BAD;
  return hk_chunk_is_large(ck) ? R_LARGE : R_BAD;
}
/* The chunk kinds of a range's two ends, read once by the interposer; its
 * heap path gets the first byte's (k0), so that the test of the fast path
 * can or the others into k1 and copy no register */
#define ENDS(p, n, k0, k1) \
  unsigned k0 = hk_chunk_kind(p), k1 = hk_chunk_kind((const void *)((uintptr_t)(p) + (n) - 1))
/* Each interposer: both ranges outside hakmem memory, then a tail jump to
 * glibc's function (the fast path: two chunk-map reads per range, no
 * register saved); else FN_heap, out of line, given the kinds it read,
 * which saves no register either for small and mid blocks; else FN_large
 * (a large block: the call to find it) or FN_full (every check again, and
 * the report). */

/* ---- the interposers ------------------------------------------------------- */

/* A copy's FN_full, FN_large and FN_heap; FN_large looks up the ranges
 * FN_heap found in the large tier (q: R_LARGE for the destination, << 2 for
 * the source), the others passed. */
#define COPY_PATHS(fn, name)                                                      \
  static HK_NOINLINE void *fn##_full(void *d, const void *s, size_t n) {         \
    return copy_ok(name, d, s, n) ? hk_libc.fn(d, s, n) : d;                     \
  }                                                                               \
  static HK_NOINLINE void *fn##_large(void *d, const void *s, size_t n, int q,    \
                                      unsigned kd, unsigned ks) {                   \
    if (HK_LIKELY((!(q & R_LARGE) || in_block(d, n, kd)) &&                        \
                  (!(q & (R_LARGE << 2)) || in_block(s, n, ks))))                  \
      return hk_libc.fn(d, s, n);                                                  \
    return fn##_full(d, s, n);                                                     \
  }                                                                                \
  static HK_NOINLINE void *fn##_heap(void *d, const void *s, size_t n, unsigned kd, \
                                     unsigned ks) {                                 \
    if (n == 0) return hk_libc.fn(d, s, n);                                        \
    int q = quick(d, n, kd) | quick(s, n, ks) << 2;                                \
    if (HK_LIKELY(q == R_OK)) return hk_libc.fn(d, s, n);                          \
    if (q & (R_BAD | R_BAD << 2)) return fn##_full(d, s, n);                       \
    return fn##_large(d, s, n, q, kd, ks);                                         \
  }
COPY_PATHS(memcpy, "memcpy")
COPY_PATHS(memmove, "memmove")

HK_EXPORT void *memcpy(void *restrict d, const void *restrict s, size_t n) {
  ENDS(d, n, d0, d1);
  ENDS(s, n, s0, s1);
  if (HK_LIKELY((d0 | d1 | s0 | s1) == 0)) return hk_libc.memcpy(d, s, n);
  return memcpy_heap(d, s, n, d0, s0);
}

HK_EXPORT void *memmove(void *d, const void *s, size_t n) {
  ENDS(d, n, d0, d1);
  ENDS(s, n, s0, s1);
  if (HK_LIKELY((d0 | d1 | s0 | s1) == 0)) return hk_libc.memmove(d, s, n);
  return memmove_heap(d, s, n, d0, s0);
}

static HK_NOINLINE void *memset_full(void *d, int c, size_t n) {
  return range_ok("memset", WRITE, d, n) ? hk_libc.memset(d, c, n) : d;
}
static HK_NOINLINE void *memset_large(void *d, int c, size_t n, unsigned kd) {
  if (HK_LIKELY(in_block(d, n, kd))) return hk_libc.memset(d, c, n);
  return memset_full(d, c, n);
}
static HK_NOINLINE void *memset_heap(void *d, int c, size_t n, unsigned kd) {
  if (n == 0) return hk_libc.memset(d, c, n);
  int q = quick(d, n, kd);
  if (HK_LIKELY(q == R_OK)) return hk_libc.memset(d, c, n);
  if (q & R_BAD) return memset_full(d, c, n);
  return memset_large(d, c, n, kd);
}
HK_EXPORT void *memset(void *d, int c, size_t n) {
  ENDS(d, n, d0, d1);
  if (HK_LIKELY((d0 | d1) == 0)) return hk_libc.memset(d, c, n);
  return memset_heap(d, c, n, d0);
}

static HK_NOINLINE void *mempcpy_full(void *d, const void *s, size_t n) {
  return copy_ok("mempcpy", d, s, n) ? hk_libc.mempcpy(d, s, n) : (uint8_t *)d + n;
}
HK_EXPORT void *mempcpy(void *restrict d, const void *restrict s, size_t n) {
  if (HK_LIKELY((ends_kind(d, n) | ends_kind(s, n)) == 0)) return hk_libc.mempcpy(d, s, n);
  return mempcpy_full(d, s, n);
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
