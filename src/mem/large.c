/* What the two large tiers (large_span.c, large_huge.c) share: their
 * counters, the learner's events and caps, the upward hooks, the admission
 * of an allocation, the purge clock over both, and the cache and quarantine
 * of freed mappings (large.h). */
#include "mem/large.h"

#include <errno.h>
#include <string.h>

#include "base/cap.h"
#include "base/chunk_map.h"
#include "base/collect.h"
#include "base/dlist.h"
#include "base/gate.h"
#include "base/knobs.h"
#include "base/libc.h"  /* the quarantine's memmove: glibc's, unchecked */
#include "base/lock.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "base/report.h"
#include "backend/superslab.h"
#include "base/track.h"

/* ---- counters ------------------------------------------------------------------ */

static size_t live_count, live_bytes;
static size_t total_allocs, total_frees;

void hk_large_count_alloc(size_t bytes) {
  HK_ADD_RELAXED(live_count, 1);
  HK_ADD_RELAXED(total_allocs, 1);
  HK_ADD_RELAXED(live_bytes, bytes);
}
static void (*free_hook)(void);  /* set once by init.c */
void hk_large_set_free_hook(void (*fn)(void)) { HK_STORE_RELAXED(free_hook, fn); }
void hk_large_count_free(size_t bytes) {
  HK_SUB_RELAXED(live_count, 1);
  HK_ADD_RELAXED(total_frees, 1);
  HK_SUB_RELAXED(live_bytes, bytes);
  void (*fn)(void) = HK_LOAD_RELAXED(free_hook);
  if (fn) fn();
}
void hk_large_count_resize(size_t old_bytes, size_t new_bytes) {
  HK_ADD_RELAXED(live_bytes, new_bytes - old_bytes);  /* modulo 2^64 */
}

/* ---- caps ---------------------------------------------------------------------- */

/* The cache's caps, pinned caps (base/cap.h): the knobs' values until the
 * learner sets others; one the control API set the learner leaves. */
static long cap_count = HK_CAP_UNSET, cap_mb = HK_CAP_UNSET, cap_delay_ms = HK_CAP_UNSET;
static long cap_span_ms = HK_CAP_UNSET;  /* the span tier's window (the learner's) */

void hk_large_set_caps(long count, long mb, long purge_delay_ms) {
  hk_cap_learn(&cap_count, count);
  hk_cap_learn(&cap_mb, mb);
  hk_cap_learn(&cap_delay_ms, purge_delay_ms);
}
void hk_large_set_delays(long cache_ms, long span_ms) {
  hk_cap_learn(&cap_delay_ms, cache_ms);
  hk_cap_learn(&cap_span_ms, span_ms);
}
void hk_large_pin_cap(unsigned which, long v) {
  if (which == HK_LARGE_CAP_SPAN_DELAY) { hk_cap_pin(&cap_span_ms, v); return; }
  hk_cap_pin(which == HK_LARGE_CAP_COUNT ? &cap_count : which == HK_LARGE_CAP_MB ? &cap_mb : &cap_delay_ms, v);
  if (which == HK_LARGE_CAP_DELAY) hk_cap_pin(&cap_span_ms, v);  /* one delay pinned: both tiers' */
}
/* the memory budget bends them all under pressure, pinned or not */
static long cache_cap_count(void) { return hk_mem_scale_cap(hk_cap_or(&cap_count, &hk_knobs.large_cache_count)); }
static long cache_cap_mb(void) { return hk_mem_scale_cap(hk_cap_or(&cap_mb, &hk_knobs.large_cache_mb)); }
static long purge_delay(void) { return hk_mem_scale_delay(hk_cap_or(&cap_delay_ms, &hk_knobs.purge_delay_ms)); }
static long span_delay(void) { return hk_mem_scale_delay(hk_cap_or(&cap_span_ms, &hk_knobs.purge_delay_ms)); }
long hk_large_cap(unsigned which) {
  return which == HK_LARGE_CAP_COUNT ? cache_cap_count() : which == HK_LARGE_CAP_MB ? cache_cap_mb()
         : which == HK_LARGE_CAP_SPAN_DELAY ? span_delay() : purge_delay();
}

/* ---- events and hooks ------------------------------------------------------------ */

/* Events the learner reads (hk_large_take_events), only while it is on. */
static unsigned long events[HK_LARGE_NEVENTS];
static void note_n(unsigned ev, unsigned long n) {
  if (HK_UNLIKELY(hk_learn_counting())) HK_ADD_RELAXED(events[ev], n);
}
void hk_large_note(unsigned ev) { note_n(ev, 1); }
static hk_reuse_hist_t span_reuse, cache_reuse;
void hk_large_take_reuse(unsigned long span[HK_REUSE_NB], unsigned long cache[HK_REUSE_NB]) {
  hk_reuse_take(&span_reuse, span);
  hk_reuse_take(&cache_reuse, cache);
}
void hk_large_take_events(unsigned long out[HK_LARGE_NEVENTS]) {
  for (unsigned i = 0; i < HK_LARGE_NEVENTS; i++)
    out[i] = HK_XCHG_RELAXED(events[i], 0);
}

/* The learner's view of a span allocation: a hit when most of its pages
 * were resident; the pages that fault in are what it costs
 * (HK_LARGE_FAULT_PAGES). Pages that faulted in again after the cap purged
 * them are ghost hits (a bigger cap would have kept them: the learner grows
 * it); after the purge clock purged them, refaults (it lengthens the delay). */
static size_t cap_purged_pages, clock_purged_pages;
static bool owed(size_t *pages, size_t n) {
  size_t v = HK_LOAD_RELAXED(*pages);
  if (!v) return false;
  HK_STORE_RELAXED(*pages, v > n ? v - n : 0);
  return true;
}
void hk_large_note_span(const hk_span_note_t *sn) {
  if (HK_LIKELY(!hk_learn_counting())) return;
  hk_large_note(HK_LARGE_ALLOCS);
  if (sn->resident_pages >= sn->fresh_pages) hk_large_note(HK_LARGE_HITS);
  if (sn->fresh_pages == 0) return;
  HK_ADD_RELAXED(events[HK_LARGE_FAULT_PAGES], sn->fresh_pages);
  if (owed(&cap_purged_pages, sn->fresh_pages)) hk_large_note(HK_LARGE_GHOST_HITS);
  else if (owed(&clock_purged_pages, sn->fresh_pages)) {
    hk_large_note(HK_LARGE_REFAULTS);
    hk_reuse_note(&span_reuse, sn->idle_ms, sn->fresh_pages);
  }
}

static void (*alloc_hook)(unsigned weight);  /* set once by init.c */
void hk_large_set_alloc_hook(void (*fn)(unsigned weight)) { HK_STORE_RELAXED(alloc_hook, fn); }
static void (*grow_hook)(size_t bytes);  /* set once by init.c */
void hk_large_set_grow_hook(void (*fn)(size_t bytes)) { HK_STORE_RELAXED(grow_hook, fn); }
void hk_large_grow_hook(size_t bytes) {
  void (*grow)(size_t) = HK_LOAD_RELAXED(grow_hook);
  if (grow) grow(bytes);
}

static void *(*heap_forget)(void *p);         /* set once by heap_api.c */
static void (*heap_keep)(void *p, void *heap);
void hk_large_set_heap_hooks(void *(*forget)(void *p), void (*keep)(void *p, void *heap)) {
  HK_STORE_RELAXED(heap_keep, keep);
  HK_STORE_RELAXED(heap_forget, forget);
}
void *hk_large_heap_forget(void *p) {
  void *(*forget)(void *) = HK_LOAD_RELAXED(heap_forget);
  return HK_UNLIKELY(forget != NULL) ? forget(p) : NULL;
}
void hk_large_heap_keep(void *p, void *heap) { HK_LOAD_RELAXED(heap_keep)(p, heap); }

void hk_large_check_free(void *p, unsigned kind, size_t size, unsigned block_kind, size_t requested) {
  if (HK_M_KIND && kind != HK_KIND_ANY && kind != block_kind)
    hk_report_invalid("free", p, hk_why_kind(kind, block_kind));
  if (HK_M_SIZED && size != 0 && size != requested)
    hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
}

/* The hard limit's relief from a large allocation: the global caches (the
 * superslab cache, cached mappings, free span pages); threads' heaps are
 * their owners' and the background purge's (docs/ARCHITECTURE.md, "Memory
 * budget"). */
static void relieve_caches(void *unused) {
  (void)unused;
  hk_ss_collect(true);
  hk_large_collect(true);
}

bool hk_large_admit(size_t size, size_t align) {
  void (*hook)(unsigned) = HK_LOAD_RELAXED(alloc_hook);
  if (HK_UNLIKELY(hook != NULL)) hook((unsigned)(size >> 16) + 1);
  if (size > HK_MAX_ALLOC || align > HK_MAX_ALLOC / 2) { errno = ENOMEM; return false; }
  if (size == 0) size = 1;
  if (HK_UNLIKELY(hk_mem_limited_large()) && !hk_mem_admit(size, relieve_caches, NULL)) { errno = ENOMEM; return false; }
  return true;
}

/* ---- the span tier's free pages ------------------------------------------------- */

/* The live span bytes the cap follows: the most seen since the purge
 * clock's last tick, which sets it back to what is live then. A program
 * that frees most of its big blocks at once (a teardown, a phase's end)
 * then keeps their pages until that tick instead of purging them in its
 * frees: the tick gives them back anyway, and purging sooner only spends
 * calls on pages that leave a moment later. Racy: a lost raise lowers the
 * cap for one free. */
static size_t live_held;
static size_t span_live_held(void) {
  size_t live = hk_span_bytes_live(), held = HK_LOAD_RELAXED(live_held);
  if (live <= held) return held;
  HK_STORE_RELAXED(live_held, live);
  return live;
}

/* Free resident span bytes allowed: the cache cap, or a share of the live
 * span bytes when that is more. Holes between live blocks are what a heap
 * of big buffers reuses next: a fixed cap far below the heap purged them
 * at every free and faulted them back in at the next malloc. */
static size_t span_cap(void) {
  size_t cap = (size_t)cache_cap_mb() << 20;
  if (hk_knobs.profile == HK_PROFILE_LOWMEM) {  /* (the live bytes now: not the high-water) */
    size_t keep = hk_span_bytes_live() / HK_SPAN_LOWMEM_DIV;
    if (keep < HK_SPAN_LOWMEM_KEEP) keep = HK_SPAN_LOWMEM_KEEP;
    return cap < keep ? cap : keep;
  }
  size_t share = span_live_held() / HK_SPAN_LIVE_DIV;
  share = (size_t)hk_mem_scale_cap((long)share);  /* memory pressure: release (page layer) */
  return cap > share || cache_cap_mb() == 0 ? cap : share;
}
size_t hk_large_span_cap(void) { return span_cap(); }

/* Purged outside the purge clock (the cap at a free, the tier swap):
 * counted as evictions, and for the learner as cap purges (a later fault
 * on them is a ghost hit). */
void hk_large_span_purge(uint64_t delay_ms, size_t keep_bytes) {
  unsigned long calls;
  size_t purged = hk_span_collect(false, delay_ms, keep_bytes, &calls);
  while (calls--) hk_large_note(HK_LARGE_EVICT_BYTES);
  if (hk_learn_counting()) HK_ADD_RELAXED(cap_purged_pages, purged / HK_PAGE);
}

/* The tier swap's other half: the small tier is about to fault in `bytes`
 * (a superslab mapped from the OS); while the span tier is idle (span_lend.c,
 * hk_span_idle), its free resident pages give back as many, the oldest
 * first. Not while big blocks stay live and churn: their freed pages are
 * what the next big blocks reuse, and shedding them at every superslab
 * purged pages those blocks then faulted back in. */
void hk_large_shed(size_t bytes) {
  if (!hk_span_idle()) return;
  size_t dirty = hk_span_bytes_dirty();
  hk_large_span_purge(UINT64_MAX, dirty > bytes ? dirty - bytes : 0);
}

/* ---- the cache and quarantine of freed mappings ------------------------------------ */

static hk_lock_t cache_lock = HK_LOCK_INIT;
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(&cache_lock, sizeof cache_lock, HK_LOCK_LARGE_CACHE);
}
static int collect_busy;  /* a collect pass is running (collect.h, hk_pass_begin) */
static hk_large_t *cache_head, *cache_tail;   /* newest first */
static size_t cache_count, cache_bytes;       /* cache_bytes: rw_size summed */

/* Sizes of mappings recently evicted from the cache: a miss that one of
 * them would have served is a "ghost hit" (the learner grows the cache). */
static size_t ghost[HK_LARGE_GHOSTS];
static unsigned ghost_pos;

/* guard: freed mappings wait here, newest last (hk_large_quarantine).
 * Under cache_lock. */
#define QUAR_N (HK_M_GUARD ? 8u : 1u)
static hk_large_t *quar[QUAR_N];
static unsigned quar_n;

/* Debug build: what a cached entry is, and the list's counts and byte
 * total against the list itself (under cache_lock). Only a mapping whose
 * block starts in its first chunk (HK_CHUNK_LARGE) is cached: one whose
 * block is aligned a chunk or more past its header never is. */
static void entry_check(const hk_large_t *e) {
  HK_ASSERT(e->magic == HK_LARGE_MAGIC && e->state == HK_LARGE_CACHED);
  HK_ASSERT(hk_chunk_kind(e) == HK_CHUNK_LARGE);
  HK_ASSERT(e->rw_size >= HK_PAGE && e->rw_size <= e->map_size);
  (void)e;
}
static void cache_check(void) {
#ifdef HK_DEBUG
  size_t n = 0, bytes = 0;
  const hk_large_t *prev = NULL;
  for (const hk_large_t *e = cache_head; e; prev = e, e = e->next) {
    HK_ASSERT(e->prev == prev);
    entry_check(e);
    n++;
    bytes += e->rw_size;
  }
  HK_ASSERT(cache_tail == prev);
  HK_ASSERT(n == cache_count && bytes == HK_LOAD_RELAXED(cache_bytes));
  for (unsigned i = 0; i < quar_n; i++)  /* any alignment; no pages left but the header's */
    HK_ASSERT(quar[i]->magic == HK_LARGE_MAGIC && quar[i]->state == HK_LARGE_CACHED && quar[i]->rw_size == 0);
#endif
}

/* A cached mapping serves a request as it is when it is at most twice the
 * size (the block's usable size grows; pages it never touches cost nothing);
 * beyond that it is reshaped (hk_large_cache_take_nearest). */
static bool fits(size_t have, size_t need) { return have >= need && have - need <= need + HK_PAGE; }

bool hk_large_set_rw(hk_large_t *h, size_t need) {
  uint8_t *b = (uint8_t *)h;
  bool ok = true;
  if (need > h->rw_size) ok = hk_os_commit(b + h->rw_size, need - h->rw_size);
  else if (need < h->rw_size) ok = hk_os_decommit(b + need, h->rw_size - need);
  if (ok) h->rw_size = need;
  return ok;
}

/* How cached mapping e serves a block of `need` bytes of pages: 0 as it
 * is, 1 after hk_large_set_rw (one syscall), -1 not at all. */
static int serve_cost(const hk_large_t *e, size_t need) {
  if (fits(e->rw_size, need)) return 0;
  return HK_LARGE_GUARD && e->map_size >= need + HK_LARGE_GUARD ? 1 : -1;
}

static void cache_unlink(hk_large_t *e) {
  entry_check(e);
  HK_DLT_UNLINK(cache_head, cache_tail, e, next, prev);
  e->next = e->prev = NULL;
  HK_ASSERT(cache_count > 0 && HK_LOAD_RELAXED(cache_bytes) >= e->rw_size);
  cache_count--;
  HK_SUB_RELAXED(cache_bytes, e->rw_size);  /* read without the lock by stats */
}

void hk_large_unmap(hk_large_t *e) {
  hk_chunk_set(HK_UNHIDE(e->user), HK_CHUNK_NONE);
  hk_os_unmap(e, e->map_size);
}

/* Unmap the entries of list v (linked by next), outside the lock; bytes
 * of them that were readable. */
static size_t unmap_all(hk_large_t *v) {
  size_t bytes = 0;
  while (v) {
    hk_large_t *next = v->next;
    bytes += v->rw_size;
    v->state = 0;
    hk_large_unmap(v);
    v = next;
  }
  return bytes;
}

hk_large_t *hk_large_cache_take(size_t need) {
  hk_lock_nosys(&cache_lock);
  cache_check();
  hk_large_t *best = NULL;
  int best_cost = 2;
  size_t best_size = 0;
  for (hk_large_t *e = cache_head; e; e = e->next) {
    int c = serve_cost(e, need);
    size_t sz = c == 0 ? e->rw_size : e->map_size;
    if (c >= 0 && (c < best_cost || (c == best_cost && sz < best_size))) {
      best = e;
      best_cost = c;
      best_size = sz;
      if (c == 0 && sz == need) break;
    }
  }
  if (best) cache_unlink(best);
  bool ghost_hit = false;
  if (!best && HK_LOAD_RELAXED(hk_knobs.learn))
    for (unsigned i = 0; i < HK_LARGE_GHOSTS; i++)
      if (ghost[i] && fits(ghost[i], need)) { ghost_hit = true; ghost[i] = 0; break; }
  cache_check();
  hk_unlock_nosys(&cache_lock);
  hk_large_note(HK_LARGE_ALLOCS);
  if (best) {
    hk_large_note(HK_LARGE_HITS);
    if (best->purged) {
      hk_large_note(HK_LARGE_REFAULTS);
      if (hk_learn_counting()) {  /* unused since it was cached */
        uint64_t now = hk_os_now_ms();
        hk_reuse_note(&cache_reuse, now > best->stamp_ms ? now - best->stamp_ms : 0,
                      (best->rw_size - HK_PAGE) / HK_PAGE);
      }
      best->purged = 0;
    }
    if (best_cost == 1 && !hk_large_set_rw(best, need)) {
      best->state = 0;
      hk_large_unmap(best);
      return NULL;
    }
  } else if (ghost_hit) {
    hk_large_note(HK_LARGE_GHOST_HITS);
  }
  return best;
}

hk_large_t *hk_large_cache_take_nearest(size_t need) {
  hk_lock_nosys(&cache_lock);
  hk_large_t *bigger = NULL, *smaller = NULL;
  for (hk_large_t *e = cache_head; e; e = e->next) {
    if (e->rw_size >= need) { if (!bigger || e->rw_size < bigger->rw_size) bigger = e; }
    else if (!smaller || e->rw_size > smaller->rw_size) smaller = e;
  }
  hk_large_t *e = bigger ? bigger : smaller;
  if (e) cache_unlink(e);
  cache_check();
  hk_unlock_nosys(&cache_lock);
  if (e) hk_large_note(HK_LARGE_HITS);  /* served from the cache, reshaped */
  return e;
}

/* The cache's two caps, read once per change, and the one rule both the
 * put and the purge's recache keep: at most max_count mappings and
 * cap_bytes bytes (under cache_lock). */
typedef struct { long max_count; size_t cap_bytes; } caps_t;
static caps_t cache_caps(void) { return (caps_t){ cache_cap_count(), (size_t)cache_cap_mb() << 20 }; }
static bool cache_within(caps_t c, size_t count, size_t bytes) {
  return (long)count <= c.max_count && bytes <= c.cap_bytes;
}

void hk_large_cache_put(hk_large_t *h, unsigned ck) {
  HK_ASSERT(h->magic == HK_LARGE_MAGIC && h->state == HK_LARGE_LIVE);
  caps_t caps = cache_caps();
  if (ck != HK_CHUNK_LARGE || h->rw_size > caps.cap_bytes / 2 || caps.max_count == 0) {
    h->state = 0;
    hk_large_unmap(h);
    return;
  }
  hk_large_t *victims = NULL;
  hk_lock_nosys(&cache_lock);
  h->state = HK_LARGE_CACHED;
  h->stamp_ms = hk_os_now_ms();
  HK_DLT_PUSH_HEAD(cache_head, cache_tail, h, next, prev);
  cache_count++;
  HK_ADD_RELAXED(cache_bytes, h->rw_size);
  while (!cache_within(caps, cache_count, HK_LOAD_RELAXED(cache_bytes))) {
    hk_large_t *v = cache_tail;
    hk_large_note((long)cache_count > caps.max_count ? HK_LARGE_EVICT_COUNT : HK_LARGE_EVICT_BYTES);
    ghost[ghost_pos++ % HK_LARGE_GHOSTS] = v->rw_size;
    cache_unlink(v);
    v->next = victims;
    victims = v;
  }
  cache_check();
  hk_unlock_nosys(&cache_lock);
  unmap_all(victims);  /* syscalls outside the lock */
  hk_large_collect(false);
}

void hk_large_quarantine(hk_large_t *h) {
  HK_ASSERT(HK_M_GUARD && h->state == HK_LARGE_CACHED && h->rw_size == 0);
  hk_large_t *old = NULL;
  hk_lock_nosys(&cache_lock);
  if (quar_n == QUAR_N) {
    old = quar[0];
    memmove(quar, quar + 1, (QUAR_N - 1) * sizeof quar[0]);
    quar_n--;
  }
  quar[quar_n++] = h;
  cache_check();
  hk_unlock_nosys(&cache_lock);
  if (old) {
    old->state = 0;
    hk_large_unmap(old);
  }
}

/* ---- the purge clock ---------------------------------------------------------------- */

/* The cache's collect (base/collect.h): a mapping cached for the delay is
 * taken off the list, purged with the lock dropped, and cached again (at
 * the old end: it holds no pages now, so it is the first to be evicted);
 * on trim (force) every one, and the quarantine's, is unmapped. While it
 * is purged no malloc can take it; a fork child loses it (its address
 * space, not memory). */
typedef struct {
  uint64_t now, delay, span_delay;
  bool force;
  size_t bytes;         /* purged */
  hk_large_t *victims;  /* to unmap, linked by next */
  hk_large_t *purge, *purge_tail;  /* to purge and cache again, newest first, linked by next */
  size_t span_bytes;    /* the span tier's purge */
} collect_t;

static void collect_pick(void *arg) {
  collect_t *c = arg;
  cache_check();
  while (c->force && quar_n) {  /* trim: the quarantine too */
    hk_large_t *e = quar[--quar_n];
    e->next = c->victims;
    c->victims = e;
  }
  for (hk_large_t *e = cache_head, *next; e; e = next) {
    next = e->next;
    if (c->force) {  /* trim: give it all back */
      cache_unlink(e);
      e->next = c->victims;
      c->victims = e;
    } else if (!e->zeroed && c->now - e->stamp_ms >= c->delay) {
      cache_unlink(e);
      if (c->purge_tail) c->purge_tail->next = e;
      else c->purge = e;
      c->purge_tail = e;
    }
  }
  cache_check();
}

/* The mappings picked for a purge: purged with no lock held, then cached
 * again, oldest last; any the cache's caps no longer allow are unmapped. */
static void purge_and_recache(collect_t *c) {
  for (hk_large_t *e = c->purge; e; e = e->next) {
    hk_os_purge((uint8_t *)e + HK_PAGE, e->rw_size - HK_PAGE);
    c->bytes += e->rw_size - HK_PAGE;
    e->zeroed = 1;
    e->purged = 1;
    hk_large_note(HK_LARGE_PURGES);
    note_n(HK_LARGE_CACHE_PURGED_PAGES, (e->rw_size - HK_PAGE) / HK_PAGE);
  }
  caps_t caps = cache_caps();
  hk_large_t *victims = NULL;
  hk_lock_nosys(&cache_lock);
  for (hk_large_t *e = c->purge, *next; e; e = next) {
    next = e->next;
    e->next = NULL;
    if (!cache_within(caps, cache_count + 1, HK_LOAD_RELAXED(cache_bytes) + e->rw_size)) {
      e->next = victims;
      victims = e;
      continue;
    }
    HK_DLT_PUSH_TAIL(cache_head, cache_tail, e, next, prev);
    cache_count++;
    HK_ADD_RELAXED(cache_bytes, e->rw_size);
  }
  cache_check();
  hk_unlock_nosys(&cache_lock);
  c->purge = c->purge_tail = NULL;
  unmap_all(victims);
}

/* the purged mappings back, the span tier's free pages (its own clock,
 * under its shards' locks), then the unmaps */
static size_t collect_release(void *arg) {
  collect_t *c = arg;
  unsigned long calls = 0;
  if (c->purge) purge_and_recache(c);
  c->span_bytes = hk_span_collect(c->force, c->span_delay, span_cap(), &calls);
  while (calls--) hk_large_note(HK_LARGE_PURGES);
  if (!c->force) note_n(HK_LARGE_SPAN_PURGED_PAGES, c->span_bytes / HK_PAGE);
  return c->bytes + c->span_bytes + unmap_all(c->victims);
}

size_t hk_large_collect(bool force) {
  static uint64_t gate;  /* base/gate.h */
  uint64_t now = hk_os_now_ms();
  if (!force && !hk_gate_due(&gate, now)) return 0;
  uint64_t delay = (uint64_t)purge_delay(), sdelay = (uint64_t)span_delay();
  uint64_t every = (delay < sdelay ? delay : sdelay) / HK_COLLECT_DIV + 1;
  if (force) hk_gate_set(&gate, now + every);
  else if (!hk_gate_pass(&gate, now, every)) return 0;  /* another thread is on it */
  hk_mem_tick();  /* the budget's clock: the resident set read again */
  if (!hk_pass_begin(&collect_busy, force)) return 0;
  HK_STORE_RELAXED(live_held, hk_span_bytes_live());  /* the cap follows what is live now */
  collect_t c = { .now = now, .delay = delay, .span_delay = sdelay, .force = force };
  size_t bytes = hk_collect(&cache_lock, collect_pick, collect_release, &c);
  hk_pass_end(&collect_busy);
  if (hk_learn_counting() && !force) HK_ADD_RELAXED(clock_purged_pages, c.span_bytes / HK_PAGE);
  return bytes;
}

size_t hk_large_count_allocs(void) { return HK_LOAD_RELAXED(total_allocs); }
size_t hk_large_count_frees(void) { return HK_LOAD_RELAXED(total_frees); }
size_t hk_large_count_live(void) { return HK_LOAD_RELAXED(live_count); }
size_t hk_large_bytes_live(void) { return HK_LOAD_RELAXED(live_bytes); }
size_t hk_large_bytes_cached(void) { return HK_LOAD_RELAXED(cache_bytes) + hk_span_bytes_cached(); }

void hk_large_fork_prepare(void) { hk_lock(&cache_lock); hk_span_fork_prepare(); }
void hk_large_fork_parent(void) { hk_span_fork_parent(); hk_unlock(&cache_lock); }
void hk_large_fork_child(void) { hk_span_fork_child(); hk_lock_reset(&cache_lock); collect_busy = 0; }
