/* Free lists: the encoded link in a free block's first word, the checks
 * every link read makes before it is followed, and the two walks that
 * follow a slab's lists to move part of them: the splice of one list onto
 * another and the sample point's cut. Below every layer that keeps a list
 * of blocks (slabs, remote frees, the secure build's measures, the
 * profiler). */
#ifndef HK_FREELIST_H
#define HK_FREELIST_H

#include "base/report.h"
#include "backend/superslab.h"
#include "base/track.h"

/* A free block's first word: the link to the next free block, encoded
 * (hk_block_next below). */
typedef struct hk_block { uintptr_t enc; } hk_block_t;

/* Free-list links are stored encoded: next ^ key, with a random per-process
 * key. A stray write (small overflow, use after free) then decodes to a
 * pointer outside the superslab, which malloc catches before following it,
 * and a leaked link does not reveal a heap address. */
extern uintptr_t hk_list_key HK_HIDDEN;

/* The key of a slab's lists: the process key, or the slab's own random key
 * (measure keys). */
#define HK_LINK_KEY(s) (HK_M_KEYS ? (s)->key : hk_list_key)

/* A free block's link, stored encoded with key (valgrind: readable only
 * while hakmem reads or writes it). */
HK_INLINE hk_block_t *hk_link_load(const hk_block_t *b, uintptr_t key) {
  hk_track_defined(b, sizeof *b);
  uintptr_t e = b->enc;
  hk_track_noaccess(b, sizeof *b);
  return (hk_block_t *)(e ^ key);
}
HK_INLINE void hk_link_store(hk_block_t *b, const hk_block_t *next, uintptr_t key) {
  hk_track_defined(b, sizeof *b);
  b->enc = (uintptr_t)next ^ key;
  hk_track_noaccess(b, sizeof *b);
}
HK_INLINE hk_block_t *hk_block_next(const hk_slab_t *s, const hk_block_t *b) {
  return hk_link_load(b, HK_LINK_KEY(s));
}
HK_INLINE void hk_block_set_next(const hk_slab_t *s, hk_block_t *b, const hk_block_t *next) {
  hk_link_store(b, next, HK_LINK_KEY(s));
}
/* Lists that mix slabs (a heap's delayed frees) use the process key. */
HK_INLINE hk_block_t *hk_gblock_next(const hk_block_t *b) { return hk_link_load(b, hk_list_key); }
HK_INLINE void hk_gblock_set_next(hk_block_t *b, const hk_block_t *next) {
  hk_link_store(b, next, hk_list_key);
}
/* The free mark: a freed block's second word holds hk_free_mark, a
 * random per-process value (not derived from hk_list_key: reading it out
 * of a freed block tells nothing of the links), which malloc clears. A free
 * that finds it is a double free however long ago the first one was, or a
 * free of a block carved and never handed out (carving marks every block);
 * the owner confirms it out of line by walking the slab's lists (a live
 * block holds the mark only if the program copied it out of a freed one).
 * Not with the canary measure: its trailer state does this. */
extern uintptr_t hk_free_mark HK_HIDDEN;
HK_INLINE uintptr_t hk_mark_load(const hk_block_t *b) {
  hk_track_defined(b + 1, sizeof *b);
  uintptr_t m = b[1].enc;
  hk_track_noaccess(b + 1, sizeof *b);
  return m;
}
HK_INLINE void hk_mark_store(hk_block_t *b, uintptr_t m) {
  hk_track_defined(b + 1, sizeof *b);
  b[1].enc = m;
  hk_track_noaccess(b + 1, sizeof *b);
}

/* A link failed its check: reported, then a trap (a corrupted list cannot be
 * followed, whatever HAKMEM_ABORT_ON_INVALID says). */
void hk_report_list_corrupt(const void *block) __attribute__((cold, noinline, noreturn));
/* Set hk_list_key and hk_free_mark, each from the process's random seed
 * (random.h); before any slab is used. A fork child keeps both. */
void hk_list_key_init(void);

/* A link read from block b of slab s must stay in b's superslab (one xor
 * and shift), or be a block of s itself (measure keys: an attacker who
 * learnt a key still cannot point a list at metadata), or end the list. */
HK_INLINE bool hk_link_ok(const hk_slab_t *s, const hk_block_t *b, const hk_block_t *next) {
  if (HK_M_KEYS) return next == NULL || hk_slab_is_block(s, next);
  return (((uintptr_t)next ^ (uintptr_t)b) >> HK_SS_SHIFT) == 0 || next == NULL;
}

/* The splice: list (not NULL), one of s's lists, goes in front of *onto,
 * another of s's (NULL when empty): list's tail is linked to *onto's head.
 * The one walk to a list's tail that every move of a slab's lists makes
 * (a current slab's lists joined, remote frees collected, the hand-over at
 * thread exit, the sample point's cut), so that a corrupted list is caught
 * the same way wherever it is walked: each link is checked (hk_link_ok)
 * before it is followed, and a list holds at most s->capacity blocks (more
 * is a cycle); either fault is reported (hk_report_list_corrupt, which
 * does not return). Returns the blocks of list.
 * either: the order does not matter. Both lists are walked in step and the
 * one that ends first goes in front, so the walk costs the shorter one's
 * length (the two lists together hold at most s->capacity blocks); returns
 * the blocks walked. A fault in the longer list past that length is not
 * reached: malloc's pop reports it when it gets there. */
HK_INLINE unsigned hk_list_splice(const hk_slab_t *s, hk_block_t *list, hk_block_t **onto, bool either) {
  hk_block_t *a = list, *b = *onto;
  if (either && !b) {
    *onto = list;
    return 0;
  }
  unsigned n = either ? 2 : 1;  /* blocks reached */
  for (;;) {
    hk_block_t *na = hk_block_next(s, a);
    if (!na) {
      hk_block_set_next(s, a, *onto);
      *onto = list;
      return n;
    }
    if (HK_UNLIKELY(!hk_link_ok(s, a, na) || n >= s->capacity)) hk_report_list_corrupt(a);
    a = na;
    n++;
    if (either) {
      hk_block_t *nb = hk_block_next(s, b);
      if (!nb) {
        hk_block_set_next(s, b, list);
        return n;
      }
      if (HK_UNLIKELY(!hk_link_ok(s, b, nb) || n >= s->capacity)) hk_report_list_corrupt(b);
      b = nb;
      n++;
    }
  }
}

/* The sample point: a sampler (the profiler, the guarded sampler) wants
 * the allocation that reaches `bytes` more of class s->cls to come back to
 * the slow path. s is the class's current slab and its owner calls, after
 * the slow path handed out a block of it. The fast path pops s->free to
 * its end, so s->free keeps the blocks that fit whole in `bytes` and is
 * cut before the block that holds the point; the rest goes in front of
 * local_free (still free: handed out after the kept part, at the next
 * refill). aside: the owner's frees into s go aside from now on
 * (hk_slab_set_aside): onto s->free they would be popped before the point
 * and push it later (the profiler's counts must be exact; the guarded
 * sampler's need not, and leaves free's fast path as it is). The walks are
 * the splice's, checked and bounded. Returns the bytes of the blocks
 * s->free keeps, which the fast path hands out before the point. */
uint64_t hk_slab_sample_point(hk_slab_t *s, uint64_t bytes, bool aside);

#endif
