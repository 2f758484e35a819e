/* Free lists: the encoded link in a free block's first word, and the checks
 * every link read makes before it is followed. Below every layer that keeps
 * a list of blocks (slabs, remote frees, the secure build's measures). */
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

#endif
