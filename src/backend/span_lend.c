/* span_lend.c: the unified backend: a superslab may be a 2 MiB chunk of a
 * span arena, lent as a live run (its entry KIND_SS, its chunk marked as a
 * superslab's while lent), so that the pages a phase of big blocks freed
 * serve the small objects of the next without a fault, and come back as a
 * free run when the superslab leaves the cache: with each tier keeping its
 * own, a program that works in phases holds both phases' memory at once.
 * Only where arenas exist already (a small program maps no arena for its
 * first superslab, nor reads the THP mode for one), and not with guard
 * pages (the arena's closed pages are a block's business) nor under
 * memcheck (a lent chunk is no block of its). */
#include "backend/span_lend.h"

#include "backend/span_arena.h"
#include "base/chunk_map.h"
#include "base/track.h"

/* A free run holding an aligned chunk of `need` pages at least half of
 * whose pages may be resident, among the first DIRTY_SCAN runs of the
 * arena's dirty list: lending the untouched tail of an arena saves no
 * fault and splits the room big blocks are carved from, so the peak grows.
 * 0 when none. */
#define DIRTY_SCAN 64
static uint32_t find_lendable(hk_arena_t *a, uint32_t need, uint32_t al, uint32_t *at) {
  uint32_t seen = 0;
  for (uint32_t i = a->dirty_head; i && seen < DIRTY_SCAN; i = a->e[i].f.dnext, seen++) {
    if (a->e[i].npages < need || a->e[i].f.ndirty < need / 2) continue;
    for (uint32_t x = (i + al - 1) & ~(al - 1); x + need <= i + a->e[i].npages; x += al)
      if (bits_count(a, x, need) >= need / 2) {
        *at = x;
        return i;
      }
  }
  return 0;
}

/* Blocks carved so far at the small tier's last ask for a superslab, and
 * how many asks in a row found none carved between: the large tier is quiet. */
static size_t quiet_seq;
static unsigned quiet_asks;

/* Idle: free resident pages at least four times the live ones (a phase of
 * big blocks ended), or quiet: HK_SPAN_QUIET_ASKS superslabs asked for in
 * a row with no block carved between. Where big blocks stay live and
 * churn, their freed pages are theirs to reuse: lent to superslabs, the
 * next big blocks fault in fresh ones. The live share alone stops the
 * lending of a program that keeps one big block live (a table of
 * pointers) against the pages its phases freed, which then stay resident
 * beside superslabs mapped new; hence the quiet rule, which waits for
 * several asks so that a lull in a churning program does not lend its
 * pages away. */
bool hk_span_idle(void) {
  size_t dirty = HK_LOAD_RELAXED(hk_span_dirty_pages);
  return dirty != 0 && (HK_LOAD_RELAXED(quiet_asks) >= HK_SPAN_QUIET_ASKS ||
                        HK_LOAD_RELAXED(hk_span_live_pages) * 4 <= dirty);
}

void *hk_span_take_ss(void) {
  size_t seq = HK_LOAD_RELAXED(hk_span_carved);
  HK_STORE_RELAXED(quiet_asks, seq == HK_LOAD_RELAXED(quiet_seq) ? HK_LOAD_RELAXED(quiet_asks) + 1 : 0u);
  HK_STORE_RELAXED(quiet_seq, seq);
  if (GUARD_PAGES || HK_TRACKING || !HK_LOAD_RELAXED(hk_span_arena_count)) return NULL;
  if (!hk_span_idle()) return NULL;  /* only from an idle tier */
  const uint32_t need = HUGE_PAGES;
  hk_arena_t *a = NULL;
  uint32_t i = 0, at = 0;
  shard_t *sh = NULL;
  for (unsigned k = 0; k < HK_SPAN_SHARDS && !a; k++) {
    sh = &hk_arena_shards[k];
    hk_shard_lock(&sh->lock);
    for (a = sh->arenas; a; a = a->next)
      if ((i = find_lendable(a, need, HUGE_PAGES, &at)) != 0) break;
    if (!a) hk_shard_unlock(&sh->lock);
  }
  if (!a) return NULL;
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  uint32_t nd = hk_arena_free_remove(a, i);
  uint32_t front = at - i, back = i + n - (at + need);
  uint32_t d = nd ? bits_count(a, at, need) : 0;
  uint32_t df = nd && front ? bits_count(a, i, front) : 0;
  if (front) hk_arena_free_insert(a, i, front, df, stamp);
  if (back) hk_arena_free_insert(a, at + need, back, nd - d - df, stamp);
  entry_t *h = &a->e[at], *t = &a->e[at + need - 1];
  h->npages = t->npages = need;
  t->tag = T_TAIL | T_LIVE;
  h->tag = T_HEAD | T_LIVE;
  h->kind = KIND_SS;
  h->l.requested = 0;
  h->l.fresh = 0;
  bits_set(a, at, need, true);
  HK_ADD_RELAXED(hk_span_lent_pages, need);
  hk_shard_unlock(&sh->lock);
  return page_addr(a, at);
}

void hk_span_give_ss(void *p, size_t kept) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  shard_t *sh = shard_of(a);
  hk_shard_lock(&sh->lock);
  entry_t *h = &a->e[i];
  HK_ASSERT(a->magic == ARENA_MAGIC && (h->tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && h->kind == KIND_SS);
  uint32_t n = h->npages, stamp = now_stamp(a);
  HK_ASSERT(n == HUGE_PAGES && (a->e[i + n - 1].tag & (T_TAIL | T_LIVE)) == (T_TAIL | T_LIVE) &&
            a->e[i + n - 1].npages == n);
  hk_arena_grains_freed(a, i, n, stamp);
  size_t was = HK_SUB_RELAXED(hk_span_lent_pages, n);
  HK_ASSERT(was >= n);
  (void)was;
  a->e[i + n - 1].tag = 0;
  h->tag = T_FREED;
  h->kind = 0;
  uint32_t nd = (uint32_t)(hk_align_up(kept, HK_PAGE) >> PAGE_SHIFT);
  if (nd > n) nd = n;
  bits_set(a, i + nd, n - nd, false);
  hk_arena_run_release(a, i, n, nd, stamp);
  hk_chunk_set(p, HK_CHUNK_SPAN);
  hk_shard_unlock(&sh->lock);
}

size_t hk_span_bytes_ss(void) { return HK_LOAD_RELAXED(hk_span_lent_pages) << PAGE_SHIFT; }
