#include "mem/large.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/chunk_map.h"
#include "base/knobs.h"
#include "base/libc.h"  /* calloc's zeroing and realloc's copy: glibc's, unchecked */
#include "base/lock.h"
#include "base/measures.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "mem/prof.h"
#include "base/report.h"
#include "backend/span.h"
#include "backend/superslab.h"
#include "base/track.h"

#define LARGE_MAGIC 0x68616b6d656d4c47ull  /* "hakmemLG" */
enum { LARGE_LIVE = 1, LARGE_CACHED = 2 };

typedef struct hk_large {
  uint64_t magic;
  uint8_t *user;          /* the pointer handed out                  */
  size_t map_size;        /* bytes mapped, header included          */
  size_t rw_size;         /* of them readable and writable: the block's
                             pages. The secure build's rest is PROT_NONE:
                             the guard, and room to grow in (below) */
  size_t usable;          /* from user to the end of the mapping     */
  uint32_t state;
  uint32_t zeroed;        /* all past the header reads as zero       */
  uint32_t kind;          /* HK_KIND_* it was allocated as           */
  uint32_t purged;        /* purged while cached (not yet reused)    */
  size_t requested;       /* bytes asked for                         */
  size_t align;           /* alignment asked for (a move keeps it)   */
  uint64_t stamp_ms;      /* when cached                             */
  struct hk_large *next, *prev;
} hk_large_t;

static hk_lock_t cache_lock = HK_LOCK_INIT;
static hk_large_t *cache_head, *cache_tail;   /* newest first */
static size_t cache_count, cache_bytes;
static atomic_size_t live_count, live_bytes;
static atomic_size_t total_allocs, total_frees;

/* The cache's caps: the knobs' values until the learner sets others (-1);
 * one the control API set carries HK_CAP_PIN and the learner leaves it. */
static long cap_count = -1, cap_mb = -1, cap_delay_ms = -1;

static void cap_learn(long *cap, long v) {
  long old = HK_LOAD_RELAXED(*cap);
  while (!(old >= 0 && (old & HK_CAP_PIN)) &&  /* -1: unset, not pinned */
         !__atomic_compare_exchange_n(cap, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
void hk_large_set_caps(long count, long mb, long purge_delay_ms) {
  cap_learn(&cap_count, count);
  cap_learn(&cap_mb, mb);
  cap_learn(&cap_delay_ms, purge_delay_ms);
}
void hk_large_pin_cap(unsigned which, long v) {
  long *cap = which == HK_LARGE_CAP_COUNT ? &cap_count : which == HK_LARGE_CAP_MB ? &cap_mb : &cap_delay_ms;
  HK_STORE_RELAXED(*cap, v | HK_CAP_PIN);
}
static long cap_or(long *cap, long *knob) {
  long v = HK_LOAD_RELAXED(*cap) & ~HK_CAP_PIN;
  return v >= 0 ? v : HK_LOAD_RELAXED(*knob);
}
/* the memory budget bends them all under pressure, pinned or not */
static long cache_cap_count(void) { return hk_mem_scale_cap(cap_or(&cap_count, &hk_knobs.large_cache_count)); }
static long cache_cap_mb(void) { return hk_mem_scale_cap(cap_or(&cap_mb, &hk_knobs.large_cache_mb)); }
static long purge_delay(void) { return hk_mem_scale_delay(cap_or(&cap_delay_ms, &hk_knobs.purge_delay_ms)); }
long hk_large_cap(unsigned which) {
  return which == HK_LARGE_CAP_COUNT ? cache_cap_count() : which == HK_LARGE_CAP_MB ? cache_cap_mb() : purge_delay();
}

/* Events the learner reads (hk_large_take_events), only while it is on. */
static _Atomic unsigned long events[HK_LARGE_NEVENTS];
static void note(unsigned ev) {
  if (HK_UNLIKELY(HK_LOAD_RELAXED(hk_knobs.learn))) atomic_fetch_add_explicit(&events[ev], 1, memory_order_relaxed);
}
void hk_large_take_events(unsigned long out[HK_LARGE_NEVENTS]) {
  for (unsigned i = 0; i < HK_LARGE_NEVENTS; i++)
    out[i] = atomic_exchange_explicit(&events[i], 0, memory_order_relaxed);
}

static void (*alloc_hook)(unsigned weight);  /* set once by init.c */
void hk_large_set_alloc_hook(void (*fn)(unsigned weight)) { HK_STORE_RELAXED(alloc_hook, fn); }
static void (*grow_hook)(size_t bytes);  /* set once by init.c */
void hk_large_set_grow_hook(void (*fn)(size_t bytes)) { HK_STORE_RELAXED(grow_hook, fn); }

static void *(*heap_forget)(void *p);         /* set once by heap_api.c */
static void (*heap_keep)(void *p, void *heap);
void hk_large_set_heap_hooks(void *(*forget)(void *p), void (*keep)(void *p, void *heap)) {
  HK_STORE_RELAXED(heap_keep, keep);
  HK_STORE_RELAXED(heap_forget, forget);
}

/* Sizes of mappings recently evicted from the cache: a miss that one of
 * them would have served is a "ghost hit" (the learner grows the cache). */
static size_t ghost[HK_LARGE_GHOSTS];
static unsigned ghost_pos;

/* A cached mapping serves a request as it is when it is at most twice the
 * size (the block's usable size grows; pages it never touches cost nothing);
 * beyond that it is reshaped with mremap (cache_take_resized). */
static bool fits(size_t have, size_t need) { return have >= need && have - need <= need + HK_PAGE; }

/* secure build: past the pages of its block every large mapping has a
 * PROT_NONE tail, the guard page and room for the block to grow: moving the
 * end of the block's pages is then one mprotect (grow) or one mmap over
 * them (shrink: pages dropped), where cutting and growing the mapping
 * meant an mremap and one or two mprotects to move the guard (bench_large
 * ran at 0.77 of the default build, 0.99 with no guard pages at all). */
#define GUARD ((size_t)(HK_M_GUARD ? HK_PAGE : 0))

/* Blocks up to HK_SPAN_MAX come from spans (span.c), whose freed pages stay
 * resident for the next block of any size; with the guard measure each has
 * a guard page there too. Huge blocks keep a mapping of their own (with the
 * guard measure: its guard page and reserve, below). */

/* The counts of both kinds of block, for the stats. */
static void count_alloc(size_t bytes) {
  atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&total_allocs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&live_bytes, bytes, memory_order_relaxed);
}
static void count_free(size_t bytes) {
  atomic_fetch_sub_explicit(&live_count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&total_frees, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&live_bytes, bytes, memory_order_relaxed);
}

/* The learner's view of a span allocation: a hit when most of its pages
 * were resident; the pages that fault in are what it costs
 * (HK_LARGE_FAULT_PAGES). Pages that faulted in again after the cap purged
 * them are ghost hits (a bigger cap would have kept them: the learner grows
 * it); after the purge clock purged them, refaults (it lengthens the delay). */
static _Atomic size_t cap_purged_pages, clock_purged_pages;
static bool owed(_Atomic size_t *pages, size_t n) {
  size_t v = atomic_load_explicit(pages, memory_order_relaxed);
  if (!v) return false;
  atomic_store_explicit(pages, v > n ? v - n : 0, memory_order_relaxed);
  return true;
}
static void span_noted(const hk_span_note_t *sn) {
  if (HK_LIKELY(!HK_LOAD_RELAXED(hk_knobs.learn))) return;
  note(HK_LARGE_ALLOCS);
  if (sn->resident_pages >= sn->fresh_pages) note(HK_LARGE_HITS);
  if (sn->fresh_pages == 0) return;
  atomic_fetch_add_explicit(&events[HK_LARGE_FAULT_PAGES], sn->fresh_pages, memory_order_relaxed);
  if (owed(&cap_purged_pages, sn->fresh_pages)) note(HK_LARGE_GHOST_HITS);
  else if (owed(&clock_purged_pages, sn->fresh_pages)) note(HK_LARGE_REFAULTS);
}

/* The bytes to map for a block of `need` bytes of pages: the secure build
 * reserves four times that (at most 1 GiB more), up to the next 2 MiB (the
 * chunk is taken anyway). Address space only: bench_large 0.81 of the
 * default build with twice, 0.87 with four times, 0.89 with eight. */
static size_t reserve_for(size_t need) {
  if (!GUARD) return need;
  size_t room = need < HK_LARGE_RESERVE_BIG ? HK_LARGE_RESERVE_TIMES * need : HK_LARGE_RESERVE_MAX;
  return hk_align_up(need + room + GUARD, HK_SS_SIZE);
}

/* Move the end of h's block pages to `need` bytes, inside its mapping
 * (secure build; the default build's mappings have no reserve). */
static bool large_set_rw(hk_large_t *h, size_t need) {
  uint8_t *b = (uint8_t *)h;
  bool ok = true;
  if (need > h->rw_size) ok = hk_os_commit(b + h->rw_size, need - h->rw_size);
  else if (need < h->rw_size) ok = hk_os_decommit(b + need, h->rw_size - need);
  if (ok) h->rw_size = need;
  return ok;
}

/* How cached mapping e serves a block of `need` bytes of pages: 0 as it
 * is, 1 after large_set_rw (one syscall), -1 not at all. */
static int serve_cost(const hk_large_t *e, size_t need) {
  if (fits(e->rw_size, need)) return 0;
  return GUARD && e->map_size >= need + GUARD ? 1 : -1;
}

/* The guard measure puts a PROT_NONE page right before a huge block too
 * (the header's page is before it): the block starts at least two pages
 * into its mapping. */
static size_t user_offset(size_t align) {
  size_t first = HK_PAGE + GUARD;
  return align > first ? align : hk_align_up(first, align);
}

/* guard: a freed huge block waits here, its pages dropped and closed
 * (PROT_NONE), the header's page kept (a second free is a double free),
 * before its mapping goes: a write through a dangling pointer faults in it,
 * and no new block gets its address meanwhile. Under cache_lock. */
#define HUGE_QUAR 8u
static hk_large_t *huge_quar[HK_M_GUARD ? HUGE_QUAR : 1];
static unsigned huge_quar_n;

static hk_large_t *header_of(const void *p, unsigned kind) {
  uintptr_t chunk = (uintptr_t)p & ~(uintptr_t)HK_SS_MASK;
  return (hk_large_t *)(chunk - (uintptr_t)(kind - HK_CHUNK_LARGE) * HK_SS_SIZE);
}

static void cache_unlink(hk_large_t *e) {
  if (e->prev) e->prev->next = e->next; else cache_head = e->next;
  if (e->next) e->next->prev = e->prev; else cache_tail = e->prev;
  e->next = e->prev = NULL;
  cache_count--;
  __atomic_fetch_sub(&cache_bytes, e->rw_size, __ATOMIC_RELAXED);  /* read without the lock by stats */
}

static void large_unmap(hk_large_t *e) {
  hk_chunk_set(HK_UNHIDE(e->user), HK_CHUNK_NONE);
  hk_os_unmap(e, e->map_size);
}

/* A cached mapping of at least `need` bytes of pages and not much more (or,
 * secure build, with room for them). */
static hk_large_t *cache_take(size_t need) {
  hk_lock(&cache_lock);
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
  hk_unlock(&cache_lock);
  note(HK_LARGE_ALLOCS);
  if (best) {
    note(HK_LARGE_HITS);
    if (best->purged) { note(HK_LARGE_REFAULTS); best->purged = 0; }
    if (best_cost == 1 && !large_set_rw(best, need)) {
      best->state = 0;
      large_unmap(best);
      return NULL;
    }
  } else if (ghost_hit) {
    note(HK_LARGE_GHOST_HITS);
  }
  return best;
}

/* Move the first `from` bytes of h, grown to `to`, onto the fresh mapping
 * target of `to` bytes (no copy). NULL leaves h as it was. */
static hk_large_t *large_move(hk_large_t *h, size_t from, uint8_t *target, size_t to) {
  hk_chunk_set(h, HK_CHUNK_NONE);
  if (!hk_os_move(h, from, to, target)) {
    hk_chunk_set(h, HK_CHUNK_LARGE);
    hk_os_unmap(target, to);
    return NULL;
  }
  hk_large_t *n = (hk_large_t *)target;
  n->map_size = to;
  hk_chunk_set(n, HK_CHUNK_LARGE);
  return n;
}

/* Give mapping h exactly `need` bytes of pages: in place, or (growing) by
 * moving its pages, without a copy, to a new 2 MiB-aligned home; a shrink
 * never moves h. Returns the header where it now is, sizes updated; NULL
 * leaves h as it was. Only for mappings whose block starts in their first
 * chunk (HK_CHUNK_LARGE). */
static hk_large_t *reshape_plain(hk_large_t *h, size_t need) {
  size_t old = h->map_size;
  if (hk_os_resize_inplace(h, old, need)) {
    h->map_size = h->rw_size = need;
    return h;
  }
  if (need < old) return NULL;
  uint8_t *target = hk_os_map_aligned(need, HK_SS_SIZE);
  hk_large_t *n = target ? large_move(h, old, target, need) : NULL;
  if (n) n->rw_size = need;
  return n;
}

/* guard pages: within the reserve, one syscall. Past it the block's pages
 * move (mremap, no copy) to a new reservation, grown over all of it, whose
 * reserve is then closed again: the kernel merges the pages the reserve
 * later gives into the block's mapping only if they came with it, and
 * mremap moves only a range that is one mapping (else it says no and
 * realloc copies). The old reserve is unmapped. */
static hk_large_t *reshape_reserved(hk_large_t *h, size_t need) {
  if (need + GUARD <= h->map_size) return large_set_rw(h, need) ? h : NULL;
  size_t old_rw = h->rw_size, old_map = h->map_size, res = reserve_for(need);
  size_t off = (size_t)(HK_UNHIDE(h->user) - (uint8_t *)h);
  uint8_t *target = hk_os_reserve_aligned(res, HK_SS_SIZE);
  if (!target) return NULL;
  hk_os_commit((uint8_t *)h + off - HK_PAGE, HK_PAGE);  /* mremap moves one mapping: the guard opens for it */
  hk_large_t *n = large_move(h, old_rw, target, res);
  hk_os_protect_none((n ? (uint8_t *)n : (uint8_t *)h) + off - HK_PAGE, HK_PAGE);
  if (!n) return NULL;
  hk_os_protect_none(target + need, res - need);
  hk_os_unmap((uint8_t *)h + old_rw, old_map - old_rw);
  n->rw_size = need;
  return n;
}

static hk_large_t *large_reshape(hk_large_t *h, size_t need) {
  return GUARD ? reshape_reserved(h, need) : reshape_plain(h, need);
}

/* No cached mapping of about the right size: reshape one instead of mapping
 * fresh (one mremap, and the pages it keeps are already there): shrink the
 * smallest bigger one, or grow the biggest smaller one in place or by moving
 * its pages (no copy) to a new aligned home. */
static hk_large_t *cache_take_resized(size_t need) {
  hk_lock(&cache_lock);
  hk_large_t *bigger = NULL, *smaller = NULL;
  for (hk_large_t *e = cache_head; e; e = e->next) {
    if (e->rw_size >= need) { if (!bigger || e->rw_size < bigger->rw_size) bigger = e; }
    else if (!smaller || e->rw_size > smaller->rw_size) smaller = e;
  }
  hk_large_t *e = bigger ? bigger : smaller;
  if (e) cache_unlink(e);
  hk_unlock(&cache_lock);
  if (!e) return NULL;
  note(HK_LARGE_HITS);  /* served from the cache, reshaped */
  hk_large_t *n = large_reshape(e, need);
  if (n) return n;
  e->state = 0;
  large_unmap(e);
  return NULL;
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

/* The tier swap: a span block faulted in `fresh` bytes. Where the span
 * tier still keeps as many free pages resident, they were a matter of
 * placement, not of want (thread_churn: each thread's three big blocks
 * faulted some in while freed ones waited; shedding at each, one run
 * purged 506 MB in 395 madvise calls, against 70 MB in 210 without the
 * swap); else the small tier gives back the rest (init.c). */
static void span_grew(size_t fresh) {
  void (*grow)(size_t) = HK_LOAD_RELAXED(grow_hook);
  size_t idle = hk_span_bytes_dirty();
  if (grow && idle < fresh) grow(fresh - idle);
}

static void *large_alloc(size_t size, size_t align, bool zero, unsigned kind) {
  void (*hook)(unsigned) = HK_LOAD_RELAXED(alloc_hook);
  if (HK_UNLIKELY(hook != NULL)) hook((unsigned)(size >> 16) + 1);
  if (size > HK_MAX_ALLOC || align > HK_MAX_ALLOC / 2) { errno = ENOMEM; return NULL; }
  if (size == 0) size = 1;
  if (HK_UNLIKELY(hk_mem_limited()) && !hk_mem_admit(size, relieve_caches, NULL)) { errno = ENOMEM; return NULL; }
  if (size <= HK_SPAN_MAX && align < HK_SS_SIZE) {
    hk_span_note_t sn;
    void *p = hk_span_alloc(size, align, zero, kind, &sn);
    if (p) {
      span_noted(&sn);
      if (sn.fresh_pages) span_grew(sn.fresh_pages * HK_PAGE);
      count_alloc((sn.resident_pages + sn.fresh_pages) * HK_PAGE);
      return p;
    }
  }
  if (align < HK_PAGE) align = HK_PAGE;
  hk_large_t *h;
  uint8_t *user;
  if (align < HK_SS_SIZE) {
    size_t off = user_offset(align);  /* the header page (and guard), or up to the alignment */
    size_t need = hk_align_up(off + size, HK_PAGE);
    h = cache_take(need);
    if (!h) h = cache_take_resized(need);
    if (!h) {
      size_t res = reserve_for(need);
      h = GUARD ? hk_os_reserve_aligned(res, HK_SS_SIZE) : hk_os_map_aligned(res, HK_SS_SIZE);
      if (!h && res > need + GUARD) h = hk_os_reserve_aligned(res = need + GUARD, HK_SS_SIZE);
      if (!h) { errno = ENOMEM; return NULL; }
      if (GUARD && !hk_os_commit(h, need)) {
        hk_os_unmap(h, res);
        errno = ENOMEM;
        return NULL;
      }
      h->map_size = res;
      h->rw_size = need;
      h->zeroed = 1;
      h->purged = 0;
      h->magic = LARGE_MAGIC;
      h->next = h->prev = NULL;
      hk_chunk_set(h, HK_CHUNK_LARGE);
    }
    user = (uint8_t *)h + off;
    if (GUARD) hk_os_protect_none(user - HK_PAGE, HK_PAGE);
  } else {
    /* user lands k chunks past the header; the chunk map says how many */
    size_t need = hk_align_up(size + align, HK_PAGE) + GUARD;
    if ((align >> HK_SS_SHIFT) > HK_CHUNK_LARGE_MAX_BACK) { errno = ENOMEM; return NULL; }
    h = hk_os_map_aligned(need, HK_SS_SIZE);
    if (!h) { errno = ENOMEM; return NULL; }
    if (GUARD) hk_os_protect_none((uint8_t *)h + need - GUARD, GUARD);
    user = (uint8_t *)hk_align_up((uintptr_t)h + HK_PAGE, align);
    if (GUARD) hk_os_protect_none(user - HK_PAGE, HK_PAGE);  /* a chunk or more past the header */
    h->map_size = need;
    h->rw_size = need - GUARD;
    h->zeroed = 1;
    h->magic = LARGE_MAGIC;
    h->next = h->prev = NULL;
    unsigned back = (unsigned)(((uintptr_t)user - (uintptr_t)h) >> HK_SS_SHIFT);
    hk_chunk_set(user, HK_CHUNK_LARGE + back);
  }
  h->user = HK_HIDE(user);
  h->usable = (size_t)((uint8_t *)h + h->rw_size - user);
  h->state = LARGE_LIVE;
  h->kind = kind;
  h->requested = size;
  h->align = align;
  count_alloc(h->rw_size);
  bool was_zero = h->zeroed;
  hk_track_alloc(user, h->usable, was_zero);
  if (zero && !was_zero) memset(user, 0, size);
  h->zeroed = 0;
  return user;
}

static hk_large_t *checked_header(const char *what, const void *p, unsigned kind) {
  hk_large_t *h = header_of(p, kind);
  if (h->magic != LARGE_MAGIC || HK_UNHIDE(h->user) != p) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return NULL;
  }
  if (h->state != LARGE_LIVE) {
    hk_report_invalid(what, p, HK_WHY_DOUBLE_FREE);
    return NULL;
  }
  return h;
}

/* secure build: the kind and size a free names must be the block's */
static void check_kind_size(void *p, unsigned kind, size_t size, unsigned block_kind, size_t requested) {
  if (HK_M_KIND && kind != HK_KIND_ANY && kind != block_kind)
    hk_report_invalid("free", p, hk_why_kind(kind, block_kind));
  if (HK_M_SIZED && size != 0 && size != requested)
    hk_report_invalid("free", p, "sized delete/free_sized with a size the block was not allocated with");
}

/* The live span bytes the cap follows: the most seen since the purge
 * clock's last tick, which sets it back to what is live then. A program
 * that frees most of its big blocks at once (a teardown, a phase's end)
 * keeps their pages until that tick instead of purging them in its frees:
 * large_zeroed's last 20 frees purged 420 MB in 11 calls, 3.5% of its run,
 * pages the clock gives back a tick later anyway. Racy: a lost raise
 * lowers the cap for one free. */
static size_t live_held;
static size_t span_live_held(void) {
  size_t live = hk_span_bytes_live(), held = HK_LOAD_RELAXED(live_held);
  if (live <= held) return held;
  HK_STORE_RELAXED(live_held, live);
  return live;
}

/* Free resident span bytes allowed: the cache cap, or a share of the live
 * span bytes when that is more. Holes between live blocks are what a heap
 * of big buffers reuses; a fixed cap far below the heap purged them at
 * every free and faulted them back at the next malloc (large_zeroed:
 * 12.7 s at 64 MiB, 2.9 s at 256 MiB, docs/BENCHMARKS.md). */
static size_t span_cap(void) {
  size_t cap = (size_t)cache_cap_mb() << 20, share = span_live_held() / HK_SPAN_LIVE_DIV;
  share = (size_t)hk_mem_scale_cap((long)share);  /* memory pressure: release (page layer) */
  return cap > share || cache_cap_mb() == 0 || hk_knobs.profile == HK_PROFILE_LOWMEM ? cap : share;
}

/* Free span pages purged outside the purge clock (the cap at a free, the
 * tier swap): those free for delay_ms, then the oldest until at most
 * keep_bytes stay resident; counted as evictions, and for the learner as
 * cap purges (a later fault on them is a ghost hit). */
static void span_purge_to(uint64_t delay_ms, size_t keep_bytes) {
  unsigned long calls;
  size_t purged = hk_span_collect(false, delay_ms, keep_bytes, &calls);
  while (calls--) note(HK_LARGE_EVICT_BYTES);
  if (HK_LOAD_RELAXED(hk_knobs.learn)) atomic_fetch_add_explicit(&cap_purged_pages, purged / HK_PAGE, memory_order_relaxed);
}

/* The tier swap's other half: the small tier is about to fault in `bytes`
 * (a superslab mapped from the OS); while the large tier
 * is idle (span.c, hk_span_idle), its free resident pages give back as
 * many, the oldest first. Not while big blocks stay live and churn: there
 * their freed pages are what the next big blocks reuse (shedding at every
 * superslab: big_heap's madvise calls went from 0 to 196 and its lock
 * yields from 236 to 927, thread_churn faulted in 2.4 times the pages). */
void hk_large_shed(size_t bytes) {
  if (!hk_span_idle()) return;
  size_t dirty = hk_span_bytes_dirty();
  span_purge_to(UINT64_MAX, dirty > bytes ? dirty - bytes : 0);
}

static void span_free(void *p, unsigned kind, size_t size) {
  unsigned bk;
  size_t cap = span_cap();
  size_t req, bytes = hk_span_free("free", p, &bk, &req);
  if (!bytes) return;
  check_kind_size(p, kind, size, bk, req);
  count_free(bytes);
  /* The cap holds at each tick of the purge clock (hk_large_collect), and
   * at once past twice the cap. Holding it at every free purged the holes
   * a heap of buffers reuses next, and faulted them back in at the next
   * malloc (large_cycles 55k ops/s, the mapping tier 130k; with this rule
   * and span.c's mincore check 165k). */
  if (hk_span_bytes_dirty() > 2 * cap) span_purge_to((uint64_t)purge_delay(), cap);
  hk_large_collect(false);
}

void *hk_large_alloc(size_t size, size_t align, bool zero, unsigned kind) {
  void *p = large_alloc(size, align, zero, kind);
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on)) && p) hk_prof_large(p, size);
  return p;
}

void hk_large_free(void *p, unsigned ck, unsigned kind, size_t size) {
  void *(*forget)(void *) = HK_LOAD_RELAXED(heap_forget);
  if (HK_UNLIKELY(forget != NULL)) forget(p);
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) hk_prof_forget(p);
  if (ck == HK_CHUNK_SPAN) { span_free(p, kind, size); return; }
  hk_large_t *h = checked_header("free", p, ck);
  if (!h) return;
  hk_track_free(p);
  check_kind_size(p, kind, size, h->kind, h->requested);
  count_free(h->rw_size);
  if (GUARD) {  /* no cache: closed at once, into the quarantine */
    h->state = LARGE_CACHED;
    hk_os_decommit((uint8_t *)h + HK_PAGE, h->map_size - HK_PAGE);
    h->rw_size = 0;  /* nothing left to give back but the mapping */
    hk_large_t *old = NULL;
    hk_lock(&cache_lock);
    if (huge_quar_n == HUGE_QUAR) {
      old = huge_quar[0];
      memmove(huge_quar, huge_quar + 1, (HUGE_QUAR - 1) * sizeof huge_quar[0]);
      huge_quar_n--;
    }
    huge_quar[huge_quar_n++] = h;
    hk_unlock(&cache_lock);
    if (old) {
      old->state = 0;
      large_unmap(old);
    }
    return;
  }
  long max_count = cache_cap_count();
  size_t cap_bytes = (size_t)cache_cap_mb() << 20;
  if (ck != HK_CHUNK_LARGE || h->rw_size > cap_bytes / 2 || max_count == 0) {
    h->state = 0;
    large_unmap(h);
    return;
  }
  hk_large_t *victims = NULL;
  hk_lock(&cache_lock);
  h->state = LARGE_CACHED;
  h->stamp_ms = hk_os_now_ms();
  h->prev = NULL;
  h->next = cache_head;
  if (cache_head) cache_head->prev = h; else cache_tail = h;
  cache_head = h;
  cache_count++;
  __atomic_fetch_add(&cache_bytes, h->rw_size, __ATOMIC_RELAXED);
  while ((long)cache_count > max_count || HK_LOAD_RELAXED(cache_bytes) > cap_bytes) {
    hk_large_t *v = cache_tail;
    note((long)cache_count > max_count ? HK_LARGE_EVICT_COUNT : HK_LARGE_EVICT_BYTES);
    ghost[ghost_pos++ % HK_LARGE_GHOSTS] = v->rw_size;
    cache_unlink(v);
    v->next = victims;
    victims = v;
  }
  hk_unlock(&cache_lock);
  while (victims) {  /* syscalls outside the lock */
    hk_large_t *next = victims->next;
    victims->state = 0;
    large_unmap(victims);
    victims = next;
  }
  hk_large_collect(false);
}

size_t hk_large_usable(const void *p, unsigned kind) {
  if (kind == HK_CHUNK_SPAN) {
    size_t usable, req;
    if (!hk_span_check(NULL, p, &usable, &req)) return 0;
    return HK_LARGE_REQUESTED ? req : usable;
  }
  hk_large_t *h = header_of(p, kind);
  if (h->magic != LARGE_MAGIC || HK_UNHIDE(h->user) != p || h->state != LARGE_LIVE) return 0;
  return HK_LARGE_REQUESTED ? h->requested : h->usable;
}

bool hk_large_block_of(const void *p, unsigned kind, uint8_t **start, size_t *requested) {
  if (kind == HK_CHUNK_SPAN) return hk_span_block_of(p, start, requested);
  hk_large_t *h = header_of(p, kind);
  uint8_t *u = HK_UNHIDE(HK_LOAD_RACY(h->user));
  if (HK_LOAD_RACY(h->magic) != LARGE_MAGIC || HK_LOAD_RACY(h->state) != LARGE_LIVE ||
      (uintptr_t)p - (uintptr_t)u >= HK_LOAD_RACY(h->usable))
    return false;
  *start = u;
  *requested = h->requested;
  return true;
}

/* A span block grows into the free run after it, or moves (a copy, as
 * every peer does: the run it leaves stays resident for the next block). */
static void *span_realloc(void *p, size_t size) {
  size_t usable, req;
  if (!hk_span_check("realloc", p, &usable, &req)) { errno = EINVAL; return NULL; }
  if (size > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  size_t nu = size <= HK_SPAN_MAX ? hk_span_resize(p, size) : 0;
  if (nu) {
    atomic_fetch_add_explicit(&live_bytes, nu - usable, memory_order_relaxed);  /* modulo 2^64 */
    return p;
  }
  void *q = hk_large_alloc(size, 0, false, HK_KIND_MALLOC);
  if (!q) return NULL;
  memcpy(q, p, usable < size ? usable : size);
  span_free(p, HK_KIND_ANY, 0);
  return q;
}

static void *large_realloc(void *p, unsigned kind, size_t size) {
  /* a sampled block's sample ends here: moved or resized, it is not followed */
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) hk_prof_forget(p);
  if (kind == HK_CHUNK_SPAN) return span_realloc(p, size);
  hk_large_t *h = checked_header("realloc", p, kind);
  if (!h) { errno = EINVAL; return NULL; }
  if (size > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  size_t off = (size_t)(HK_UNHIDE(h->user) - (uint8_t *)h);
  size_t need = hk_align_up(off + (size ? size : 1), HK_PAGE);
  if (size <= h->usable) {
    /* shrink in place; give the tail back when it is worth a syscall */
    size_t old_rw = h->rw_size;
    if (old_rw - need >= HK_LARGE_SHRINK_MIN && kind == HK_CHUNK_LARGE && large_reshape(h, need)) {
      atomic_fetch_sub_explicit(&live_bytes, old_rw - need, memory_order_relaxed);
      hk_track_resize(p, h->usable, need - off);
      h->usable = need - off;
    }
    if (HK_LARGE_REQUESTED) h->requested = size;  /* what usable_size and sized delete see */
    return p;
  }
  if (kind == HK_CHUNK_LARGE) {
    /* grow in place, else move the pages (no copy) to a new aligned home */
    size_t old = h->rw_size, old_usable = h->usable;
    hk_large_t *nh = large_reshape(h, need);
    if (nh) {
      uint8_t *q = (uint8_t *)nh + off;
      if (nh == h) {
        hk_track_resize(p, old_usable, need - off);
      } else {
        hk_track_free(p);
        hk_track_alloc(q, need - off, 0);
        hk_track_defined(q, old_usable);  /* moved contents */
      }
      nh->user = HK_HIDE(q);
      nh->usable = need - off;
      if (HK_LARGE_REQUESTED) nh->requested = size;
      atomic_fetch_add_explicit(&live_bytes, need - old, memory_order_relaxed);
      return q;
    }
  }
  void *q = hk_large_alloc(size, h->align > HK_PAGE ? h->align : 0, false, HK_KIND_MALLOC);
  if (!q) return NULL;
  memcpy(q, p, h->usable);
  hk_large_free(p, kind, HK_KIND_ANY, 0);
  return q;
}

/* A first-class heap's block resized in place (or not at all) stays in its
 * heap; one that moved is the calling thread's (heap_api.c). */
void *hk_large_realloc(void *p, unsigned kind, size_t size) {
  void *(*forget)(void *) = HK_LOAD_RELAXED(heap_forget);
  void *heap = HK_UNLIKELY(forget != NULL) ? forget(p) : NULL;
  void *q = large_realloc(p, kind, size);
  if (heap && (q == p || q == NULL)) HK_LOAD_RELAXED(heap_keep)(p, heap);
  return q;
}

size_t hk_large_collect(bool force) {
  static _Atomic uint64_t next_ms;
  uint64_t now = hk_os_now_ms();
  if (!force && now < atomic_load_explicit(&next_ms, memory_order_relaxed)) return 0;
  uint64_t delay = (uint64_t)purge_delay();
  atomic_store_explicit(&next_ms, now + delay / HK_COLLECT_DIV + 1, memory_order_relaxed);
  hk_mem_tick();  /* the budget's clock: the resident set read again */
  HK_STORE_RELAXED(live_held, hk_span_bytes_live());  /* the cap follows what is live now */
  size_t bytes = 0;
  hk_large_t *victims = NULL;
  hk_lock(&cache_lock);
  while (force && huge_quar_n) {  /* trim: the quarantine too */
    hk_large_t *e = huge_quar[--huge_quar_n];
    e->next = victims;
    victims = e;
  }
  for (hk_large_t *e = cache_head, *next; e; e = next) {
    next = e->next;
    if (force) {  /* trim: give it all back */
      cache_unlink(e);
      e->next = victims;
      victims = e;
    } else if (!e->zeroed && now - e->stamp_ms >= delay) {
      hk_os_purge((uint8_t *)e + HK_PAGE, e->rw_size - HK_PAGE);
      bytes += e->rw_size - HK_PAGE;
      e->zeroed = 1;
      e->purged = 1;
      note(HK_LARGE_PURGES);
    }
  }
  hk_unlock(&cache_lock);
  unsigned long calls = 0;
  size_t span_bytes = hk_span_collect(force, delay, span_cap(), &calls);
  bytes += span_bytes;
  while (calls--) note(HK_LARGE_PURGES);
  if (HK_LOAD_RELAXED(hk_knobs.learn) && !force)
    atomic_fetch_add_explicit(&clock_purged_pages, span_bytes / HK_PAGE, memory_order_relaxed);
  while (victims) {
    hk_large_t *next = victims->next;
    bytes += victims->rw_size;
    victims->state = 0;
    large_unmap(victims);
    victims = next;
  }
  return bytes;
}

size_t hk_large_count_allocs(void) { return atomic_load_explicit(&total_allocs, memory_order_relaxed); }
size_t hk_large_count_frees(void) { return atomic_load_explicit(&total_frees, memory_order_relaxed); }
size_t hk_large_count_live(void) { return atomic_load_explicit(&live_count, memory_order_relaxed); }
size_t hk_large_bytes_live(void) { return atomic_load_explicit(&live_bytes, memory_order_relaxed); }
size_t hk_large_bytes_cached(void) { return HK_LOAD_RELAXED(cache_bytes) + hk_span_bytes_cached(); }

void hk_large_fork_prepare(void) { hk_lock(&cache_lock); hk_span_fork_prepare(); }
void hk_large_fork_parent(void) { hk_span_fork_parent(); hk_unlock(&cache_lock); }
void hk_large_fork_child(void) { hk_span_fork_child(); hk_lock_reset(&cache_lock); }
