/* The per-block hardening measures (src/base/measures.h turns them on): the
 * hooks the slab, heap and API layers call. Each hook tests the measures it
 * serves and compiles to nothing when they are off. The table of measures,
 * their names and switches is in measures.h; docs/SECURITY.md says what
 * each catches (tests/security/matrix.txt) and costs.
 *
 *   keys      slab keys and the strict link check: freelist.h
 *   canary    the trailer word (canary, state, size, kind): here, secure.c
 *   slack     the byte after the request: here
 *   shuffle   random carving order: hk_sec_carve (secure.c)
 *   delay     delayed reuse: src/mem/slab.c
 *   guard     guard pages: src/backend/superslab.c, src/mem/large.c
 *   kind      C++ kind tags: here (small), src/mem/large.c
 *   sized     sized delete checks: here (small), src/mem/large.c
 *   fill      fill on free (HAKMEM_FREE_FILL): secure.c
 *   under     the byte before a block: here
 *   copy      a block's live state and requested size: here; the
 *             interposers: src/override/copy_check.c */
#ifndef HK_SEC_HOOKS_H
#define HK_SEC_HOOKS_H

#include "mem/freelist.h"

/* canary: the last 8 bytes of every small block are its trailer word, written by
 * malloc and checked by free:
 *
 *   bits  0..31  canary: a hash of the slab key and the block address, whose
 *                low byte is always HK_SEC_SLACK_BYTE, xor a state tag
 *                (below; the "live" tags have a zero low byte)
 *   bits 32..47  the requested size n (n <= avail < 32 KiB)
 *   bits 48..55  kind (HK_KIND_*)
 *   bits 56..63  zero (measure under reads them in the block after)
 *
 * So the overflow check (canary) and the double-free check (state) are one
 * load and one compare, and malloc checks that the block it pops is free (a
 * free list forged to hand out a live block is caught). The byte right
 * after the request (b[n]) holds HK_SEC_SLACK_BYTE: written by malloc when
 * n < avail, and the canary's own low byte when n == avail; free checks
 * that one byte, so a one-byte overflow is caught whatever the slack.
 *
 * The fast paths below handle the tags LIVE and FREED only; everything else
 * (a failed check, fill on free, a racing remote double free) goes to one
 * out-of-line function called as a tail call, so the fast paths save no
 * registers. With HAKMEM_FREE_FILL on, blocks carry the *_FILL tags: their
 * every malloc and free takes the out-of-line path, which fills and checks. */
#define HK_SEC_LIVE       0u
#define HK_SEC_LIVE_FILL  0x1d6e4a00u  /* live, fill on free (HAKMEM_FREE_FILL) */
#define HK_SEC_FREED      0x5ab1f4eeu  /* on a free list of the owner           */
#define HK_SEC_FREED_FILL 0x9f03b2c7u  /* the same, filled                      */
#define HK_SEC_REMOTE     0xc3a7e51du  /* freed by another thread: on xfree     */
#define HK_SEC_SLACK_BYTE 0xDEu
_Static_assert(HK_MID_MAX < 65536, "the requested size fits the trailer's 16 bits");

/* One 32-bit multiply by an immediate whose low byte is zero, so the
 * product's low byte is zero too and the xor sets it to HK_SEC_SLACK_BYTE:
 * the canary's upper 24 bits are a hash of the low 24 bits of
 * key ^ address (a slab spans less than 16 MiB, so they differ for every
 * block of a slab). */
HK_INLINE uint32_t hk_sec_canary_k(uintptr_t key, const void *p) {
  return ((uint32_t)(key ^ (uintptr_t)p) * 0x3779b100u) ^ HK_SEC_SLACK_BYTE;
}
HK_INLINE uint32_t hk_sec_canary(const hk_slab_t *s, const void *p) { return hk_sec_canary_k(s->key, p); }
HK_INLINE uint64_t hk_sec_trailer_load(const void *b, size_t avail) {
  uint64_t t;
  __builtin_memcpy(&t, (const uint8_t *)b + avail, 8);
  return t;
}
HK_INLINE void hk_sec_trailer_store(void *b, size_t avail, uint64_t t) {
  __builtin_memcpy((uint8_t *)b + avail, &t, 8);
}
HK_INLINE uint32_t hk_sec_trailer_n(uint64_t t) { return (uint32_t)(t >> 32) & 0xffff; }

/* The out-of-line halves: they finish the call (report, fill, check, and
 * for free the push onto the free list) */
void *hk_sec_alloc_slow(hk_slab_t *s, void *p, size_t n, unsigned kind) __attribute__((noinline));
/* free's check failed, or fill on free is on: report what is wrong and
 * leave a sound trailer (owner: "freed", filled when asked; else "remote").
 * True: the caller finishes the free (pushes p); false: nothing more to do
 * (a double free, reported). */
bool hk_sec_free_settle(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner);
void hk_sec_free_race(void *p) __attribute__((cold, noinline));
bool hk_sec_is_freed(hk_slab_t *s, const void *p);
size_t hk_sec_requested(const hk_slab_t *s, const void *p);
bool hk_sec_resize_checked(hk_slab_t *s, void *p, size_t n);
/* Link n fresh blocks from first onto s->free (shuffle: in a random order;
 * canary: each in the "freed" state, filled when asked). */
void hk_sec_carve(hk_slab_t *s, uint8_t *first, unsigned n);
/* keys and canary: the slab's random key */
void hk_sec_slab_key(hk_slab_t *s);

/* A slab is set up: its key, the bytes before its trailer, no aged list */
HK_INLINE void hk_sec_slab_init(hk_slab_t *s) {
  s->avail = s->block_size - HK_PAD;
  s->aged = NULL;
  if (HK_SLAB_KEYED) hk_sec_slab_key(s);
}

/* p was just popped from s's free list for a request of n bytes: returns p */
HK_INLINE void *hk_sec_on_alloc(hk_slab_t *s, void *p, size_t n, unsigned kind) {
  if (!HK_M_CANARY) return p;
  uint8_t *b = p;
  size_t avail = s->avail;
  uint32_t c = hk_sec_canary(s, p);
  uint32_t lo;
  __builtin_memcpy(&lo, b + avail, 4);
  if (HK_UNLIKELY(lo != (c ^ HK_SEC_FREED))) return hk_sec_alloc_slow(s, p, n, kind);
  if (HK_M_SLACK) b[n] = HK_SEC_SLACK_BYTE;  /* n <= avail: the trailer store comes after */
  uint32_t hi = (uint32_t)n | (kind << 16);
  lo = c ^ HK_SEC_LIVE;
  __builtin_memcpy(b + avail, &lo, 4);
  __builtin_memcpy(b + avail + 4, &hi, 4);
  return p;
}

/* under: the byte before b is zero: the last byte of the trailer of the
 * block before (bits 56..63, never set) or of the room before a slab's
 * first block (slab.c: hk_slab_init keeps it zero). */
#if defined(__SANITIZE_THREAD__)
/* the byte may be in another thread's block, whose owner rewrites its
 * trailer (the byte always as zero) while we read: a benign race that TSan
 * cannot be told about at the plain stores, so its build reads it unseen */
#define HK_SEC_BEFORE_ATTR static __attribute__((no_sanitize_thread, noinline))
#else
#define HK_SEC_BEFORE_ATTR HK_INLINE
#endif
HK_SEC_BEFORE_ATTR bool hk_sec_before_ok(const uint8_t *b) { return !HK_M_UNDER || b[-1] == 0; }

/* The checks of a free of p (kind, size: see hk_free_checked): the trailer
 * t says "live" with the right canary, the byte after the request is
 * intact, kind and size match. */
HK_INLINE bool hk_sec_free_ok(const hk_slab_t *s, const uint8_t *b, uint32_t lo, size_t avail,
                              unsigned kind, size_t size) {
  uint16_t n;
  __builtin_memcpy(&n, b + avail + 4, 2);
  return lo == (hk_sec_canary(s, b) ^ HK_SEC_LIVE) && n <= avail &&
         (!HK_M_SLACK || b[n] == HK_SEC_SLACK_BYTE) &&
         (!HK_M_KIND || kind == HK_KIND_ANY || b[avail + 6] == kind) &&
         (!HK_M_SIZED || size == 0 || size == n) && hk_sec_before_ok(b);
}

/* copy: the block at b is live (its trailer says so, canary intact):
 * true, and *n its requested size. False for a freed block, one never
 * handed out, or one whose trailer was overwritten. */
HK_INLINE bool hk_sec_live_size(const hk_slab_t *s, const uint8_t *b, size_t *n) {
  size_t avail = s->avail;
  uint64_t t = hk_sec_trailer_load(b, avail);
  uint32_t c = hk_sec_canary(s, b), lo = (uint32_t)t;
  *n = hk_sec_trailer_n(t);
  return (lo == (c ^ HK_SEC_LIVE) || lo == (c ^ HK_SEC_LIVE_FILL)) && *n <= avail;
}

/* the slab has blocks waiting for reuse (src/mem/slab.c, delayed reuse) */
#define HK_SEC_AGED(s) (HK_M_DELAY && (s)->aged != NULL)

/* realloc(p, n) keeps p when n fits its block and fills at least half of
 * it (and, canary, p passes free's checks: secure.c) */
HK_INLINE bool hk_sec_resize(hk_slab_t *s, void *p, size_t n) {
  if (HK_M_CANARY) return hk_sec_resize_checked(s, p, n);
  return n <= s->block_size && n >= s->block_size / 2;
}
/* a block on a free list (canary: its trailer says so; else false) */
HK_INLINE bool hk_sec_is_free(hk_slab_t *s, const void *p) {
  return HK_M_CANARY && hk_sec_is_freed(s, p);
}
/* may p, found on an owner list, stay there? (canary: its trailer says
 * freed; a fork can leave a block listed in another state: slab.c) */
bool hk_sec_listed_freed(hk_slab_t *s, const void *p);
HK_INLINE bool hk_sec_listed_ok(hk_slab_t *s, const void *p) {
  return !HK_M_CANARY || hk_sec_listed_freed(s, p);
}
/* Frees by other threads: the freeing thread swaps the trailer from "live"
 * to "remote" with one compare-and-swap (alloc.h), so two racing frees of
 * one block cannot both pass; the owner turns "remote" into "freed" when it
 * collects the block, and an owner free racing with a remote one leaves
 * "freed" where "remote" must be. A collector holds what every block of a
 * collected list needs, read once: the block stores in the walk may alias
 * the slab, so the compiler would read them again per block (about twice
 * the instructions a block collected). Empty without
 * canary. */
/* the tag of a block on an owner's list: "freed", or filled (fill on free) */
uint32_t hk_sec_freed_tag(void);
typedef struct {
  uintptr_t key;
  size_t avail;
  uint32_t flip;  /* "remote" xor the freed tag */
} hk_sec_collector_t;
HK_INLINE hk_sec_collector_t hk_sec_collector(const hk_slab_t *s) {
  hk_sec_collector_t c = {0, 0, 0};
  if (HK_M_CANARY) c = (hk_sec_collector_t){s->key, s->avail, HK_SEC_REMOTE ^ hk_sec_freed_tag()};
  return c;
}
HK_INLINE void hk_sec_collect_one(const hk_sec_collector_t *c, void *p) {
  if (!HK_M_CANARY) return;
  uint8_t *t = (uint8_t *)p + c->avail;
  uint32_t lo;
  __builtin_memcpy(&lo, t, 4);
  if (HK_UNLIKELY(lo != (hk_sec_canary_k(c->key, p) ^ HK_SEC_REMOTE)))
    hk_report_list_corrupt(p);  /* freed twice, racing */
  lo ^= c->flip;
  __builtin_memcpy(t, &lo, 4);
}
/* one block, alone */
HK_INLINE void hk_sec_on_collected(hk_slab_t *s, void *p) {
  hk_sec_collector_t c = hk_sec_collector(s);
  hk_sec_collect_one(&c, p);
}

#endif
