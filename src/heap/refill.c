/* The malloc slow path: the current slab of a class ran dry. A leaf for
 * the commonest case (blocks set aside wait on local_free), the full
 * path for the rest: remote frees, another partial slab, carving, a fresh
 * slab, the purge clock, the hooks; the samplers' counts and allocations
 * (the guarded sampler's, the profiler's). */
#include "heap/refill.h"

#include <errno.h>
#include <stdatomic.h>

#include "heap/heap_slabs.h"
#include "pal/os.h"
#include "mem/guarded.h"
#include "mem/prof.h"
#include "mem/remote.h"
#include "mem/secure.h"
#include "mem/slab_park.h"
#include "heap/thread.h"

#ifdef HK_DEBUG
HK_INLINE void hk_hook_heap_check(hk_heap_t *h) {
  if (hk_knobs.check_every && h->slow_count % (uint32_t)hk_knobs.check_every == 0) hk_heap_check(h);
}
/* A malloc from inside the slow path (a hook, a library it calls: say
 * pthread_create's calloc) would enter a heap whose lists are half
 * changed: the class's current slab replaced under the caller, a slab
 * lost off every list. Anything that may allocate waits for the top of
 * the slow path (hk_heap_defer). */
static __thread int body_depth;
HK_INLINE void hk_hook_body_enter(void) {
  HK_ASSERT(body_depth == 0);
  body_depth++;
}
HK_INLINE void hk_hook_body_leave(void) { body_depth--; }
#else
HK_INLINE void hk_hook_heap_check(hk_heap_t *h) { (void)h; }
HK_INLINE void hk_hook_body_enter(void) {}
HK_INLINE void hk_hook_body_leave(void) {}
#endif

/* The purge clock: unused memory is given back once a purge delay has
 * passed. The test inline, the work out of line (the full path inlines its
 * body twice). */
HK_INLINE void heap_maybe_purge(hk_heap_t *h) {
  if ((++h->slow_count & (HK_SLOW_FULL_EVERY - 1)) != 0) return;
  uint64_t now = hk_os_now_ms();
  if (now < h->next_purge_ms) return;
  hk_heap_purge_now(h, now);
}

/* s->free was just filled (local_free is empty): every block of the slab
 * that is not out is on it, so the batch is carved - used blocks. Not in
 * when blocks wait on `aged` (delayed reuse): the batch is
 * then counted on the list (carved - used counted far more mallocs than
 * were made). */
static HK_NOINLINE void stats_batch(hk_heap_t *h, hk_slab_t *s) {
  /* the owner's frees into s go aside (local_free) while it is current:
   * a block freed onto s->free and popped again would pass uncounted */
  hk_slab_set_aside(s);
  h->st.handed[s->cls] += HK_SEC_AGED(s) ? hk_slab_free_count(s) : (uint64_t)(s->carved - s->used);
  h->st.refills[s->cls]++;
  /* the hook reads the clock: not every time */
  if ((++h->st_ticks & (HK_STATS_TICK_EVERY - 1)) == 0) HK_HEAP_HOOK(stats);
}

static HK_NOINLINE void *guarded_point(hk_slab_t *s);

/* Every block the slow path hands out goes through here, with the list the
 * fast path gets after it: the guarded sampler's countdown (guarded.h)
 * counts them all at once, a TLS load, a compare and a subtraction, unless
 * its next sample falls among them (guarded_point). A first-class heap's
 * blocks are not sampled (its destroy must find them all). */
HK_INLINE void *slab_pop(hk_heap_t *h, hk_slab_t *s) {
  if (HK_UNLIKELY(HK_LOAD_RACY(hk_heap_counting))) stats_batch(h, s);
  if (HK_GUARDED_BUILD && HK_LOAD_RELAXED(hk_guarded_on) && !h->api) {
    uint32_t *left = &hk_guarded_tls.left[s->cls];
    /* s->free's blocks: every block not out, when nothing waits aside */
    uint32_t n = s->local_free || HK_M_DELAY ? UINT32_MAX : (uint32_t)(s->carved - s->used);
    if (HK_UNLIKELY(n > *left)) return guarded_point(s);
    *left -= n;
  }
  hk_block_t *b = s->free;
  hk_slab_pop_block(s, b);
  return b;
}

/* The list s->free, about to go to the fast path, counted; cut (its
 * owner's frees not set aside: guarded.h) where the next sample falls. */
static void guarded_count(hk_slab_t *s, uint32_t *left) {
  uint32_t n = s->local_free || HK_M_DELAY ? UINT32_MAX : (uint32_t)(s->carved - s->used);
  if (n <= *left) {
    *left -= n;
    return;
  }
  uint64_t size = s->block_size;
  hk_guarded_consume(s->cls, hk_slab_sample_point(s, (uint64_t)*left * size, false) / size);
}

/* slab_pop's block, or the list after it, holds the class's next guarded
 * sample (or the thread's countdowns are not drawn yet): the block is the
 * sampled one (the list stays for the fast path), or it is popped and the
 * list cut before the sample. */
static HK_NOINLINE void *guarded_point(hk_slab_t *s) {
  uint32_t *left = &hk_guarded_tls.left[s->cls];
  void *g = hk_guarded_small(s->cls);
  if (g) {
    guarded_count(s, left);
    return g;
  }
  hk_block_t *b = s->free;
  hk_slab_pop_block(s, b);
  guarded_count(s, left);
  return b;
}

/* s becomes class cls's current slab and hands out its first block */
HK_INLINE void *set_cur_pop(hk_heap_t *h, unsigned cls, hk_slab_t *s) {
  hk_heap_slab_state(h, s, HK_SLAB_CUR);
  hk_heap_set_cur(h, cls, s);
  s->park_recent = 1;  /* in use: not parked at the next pass (hk_heap_park) */
  return slab_pop(h, s);
}
/* ... a slab that was current before: its lists are joined first, or, with
 * every block back, it starts over (hk_slab_become_cur). Its remote frees
 * are collected first, so that a slab another thread emptied starts over
 * too: one that went full hands the first of them to the owner (its free
 * list, through hk_heap_notify) and keeps the rest on its remote list, and
 * without this it handed out the frees' scattered order. */
HK_INLINE void *pop_as_cur(hk_heap_t *h, unsigned cls, hk_slab_t *s) {
  hk_heap_collect_remote(h, s);
  hk_slab_become_cur(s);
  return set_cur_pop(h, cls, s);
}

/* Remote frees of s onto its local_free list, counted for the stats. */
static void heap_collect(hk_heap_t *h, hk_slab_t *s) {
  if (!s->local_free) hk_heap_collect_remote(h, s);
}

static bool heap_refill(hk_heap_t *h, hk_slab_t *s) {
  heap_collect(h, s);
  return hk_slab_refill(s);
}

/* The fewest freed blocks another slab must have to be switched to rather
 * than carving in the current one: a slow call per batch, so not a few;
 * but carving costs memory. Small classes: 32 blocks, 8 KiB of them at
 * most (a fraction of the slow calls of switching at any count, at little
 * memory). Mid classes: 8 blocks, 4 KiB at most (one block of the largest
 * class: more of them cost memory). */
HK_INLINE unsigned heap_min_batch(const hk_slab_t *s) {
  bool mid = s->cls >= HK_NCLASS_SMALL;
  unsigned n = (mid ? HK_MIN_BATCH_MID_BYTES : HK_MIN_BATCH_SMALL_BYTES) / s->block_size,
           most = mid ? HK_MIN_BATCH_MID : HK_MIN_BATCH_SMALL;
  return n < 1u ? 1u : n > most ? most : n;
}

/* s's free list is empty and its own frees make a small batch: does the
 * oldest other partial slab of its class hold more freed blocks? Then
 * switching to it gives the bigger batch. With two slabs sharing a working
 * set, each taking back only its own frees since the last refill made the
 * batches halve at every refill (a slow call every few mallocs). A batch of HK_RICH_ENOUGH blocks, or an eighth of the slab
 * (mid slabs hold 8 to 100 blocks), is kept: its blocks were freed lately
 * and are warm in cache (switching at any size cost the python workload
 * more than it saved; at under 16 blocks, the secure build's mid-size
 * loops too). HK_RICH_ENOUGH
 * and HK_RICH_SLAB_SHIFT: config.h. */
HK_INLINE bool heap_other_richer(const hk_heap_t *h, const hk_slab_t *s) {
  /* (parked blocks count as s's: they come back a batch at a time, each
   * batch a refill, and a slab that looked poor for it was left for
   * another, whose pages came back too) */
  unsigned mine = hk_slab_room(s), enough = (unsigned)s->capacity >> HK_RICH_SLAB_SHIFT;
  if (mine >= HK_RICH_ENOUGH || mine >= enough) return false;
  /* racy with the background purge, which may be unlinking o under the
   * heap's bg_lock: any value will do (a wrong guess costs a full slow
   * path, which takes the lock), and o's descriptor stays mapped */
  const hk_slab_t *o = HK_LOAD_RACY(h->partial[s->cls]);
  return o != NULL && (unsigned)(HK_LOAD_RACY(o->carved) - HK_LOAD_RACY(o->used)) > mine;
}

/* Freed blocks only, no carving: memory already touched is reused before
 * fresh pages are (delayed reuse keeps its fresh-first order). */
HK_INLINE bool heap_refill_lists(hk_heap_t *h, hk_slab_t *s) {
  if (HK_M_DELAY) return heap_refill(h, s);
  heap_collect(h, s);
  return hk_slab_take_local(s);
}

HK_INLINE void *heap_alloc_lists(hk_heap_t *h, unsigned cls);

/* The partial slab a swap goes to, from the list's head: the oldest with
 * freed blocks among the first few, so that fresh blocks are carved only
 * when none of them has any; the head when none has. With parked pages
 * (HAKMEM_PARK_PAGES, lowmem), a small class takes the one with the most
 * live blocks among more of them, of those with a batch of freed blocks:
 * blocks go back where most are live, so that the sparse slabs drain, to
 * be given back whole, and their free pages stay parked (an LRU cache
 * refilled with larger values: docs/BENCHMARKS.md, "The fullest slab
 * first"); the purge clock keeps each list in that order (heap_slabs.c,
 * hk_heap_sort_partial), so that the first few are the fullest. Not by
 * default (smaller batches, more slow calls). A mid class only while it
 * is marked sparse (heap.h, hk_midc_note_sparse): always, a mid-size
 * churn's peak rose (a mid slab holds 8 to 100 blocks, and the fullest
 * one's few freed blocks ran out at once). */
HK_INLINE hk_slab_t *heap_pick_partial(hk_heap_t *h, hk_slab_t *head, unsigned batch) {
  bool fullest = HK_PARK_BUILD && HK_LOAD_RELAXED(hk_knobs.park_pages) &&
                 (head->cls < HK_NCLASS_SMALL || hk_midc_sparse(head->cls - HK_NCLASS_SMALL));
  unsigned scan = fullest ? HK_REUSE_SCAN_FULLEST : HK_REUSE_SCAN, k = 0;
  hk_slab_t *first = NULL, *best = NULL;
  for (hk_slab_t *t = head; t && k < scan; t = t->next, k++) {
    /* (fullest first: parked blocks are room too, taken back a batch at a
     * time; counted out, a slab whose free pages the idle park had parked
     * was passed over, and a class's mallocs spread over every partial
     * slab instead of draining the sparse ones: test_park churn, 10 ms) */
    if (!t->free && !heap_refill_lists(h, t) && !(fullest && t->nparked)) continue;
    if (!fullest) return t;
    if (!first) first = t;
    /* (one with fewer freed blocks than a batch would be passed over
     * for fresh ones, below) */
    if (hk_slab_room(t) >= batch && (!best || hk_slab_live(t) > hk_slab_live(best)))
      best = t;
  }
  return best ? best : first ? first : head;
}

/* The slow path's work on the heap's lists, entered once at a time */
HK_INLINE void *heap_alloc_body(hk_heap_t *h, unsigned cls) {
  hk_hook_body_enter();
  void *b = heap_alloc_lists(h, cls);
  hk_hook_body_leave();
  return b;
}

/* With the background purge: the same under the heap's bg_lock. */
static HK_NOINLINE void *heap_alloc_guarded(hk_heap_t *h, unsigned cls) {
  hk_heap_enter(h);
  void *b = heap_alloc_body(h, cls);
  hk_heap_leave(h);
  return b;
}

static HK_NOINLINE void *heap_alloc_full(hk_heap_t *h, unsigned cls) {
  if (HK_UNLIKELY(h == &hk_heap_empty)) {
    h = hk_thread_heap_init();
    if (!h) { errno = ENOMEM; return NULL; }
  }
  /* a guarded sample waits for this thread's first stack walk: here,
   * while nothing of the heap is half done (it may allocate) */
  if (HK_GUARDED_BUILD && HK_UNLIKELY(hk_guarded_tls.want_warm)) hk_guarded_thread_start();
  hk_heap_safe_point();  /* what hk_heap_defer asked for (heap.h) */
  if (HK_UNLIKELY(hk_heap_bg_on)) return heap_alloc_guarded(h, cls);
  return heap_alloc_body(h, cls);  /* inlined: one test more than before */
}

HK_INLINE void *heap_alloc_lists(hk_heap_t *h, unsigned cls) {
  if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) hk_heap_drain_delayed(h);
  heap_maybe_purge(h);
  hk_hook_heap_check(h);

  hk_slab_t *s = h->cur[cls];
  if (s != &hk_slab_empty) {
    if (s->free) return slab_pop(h, s);
    if (!heap_other_richer(h, s) && heap_refill_lists(h, s)) return slab_pop(h, s);
    /* no freed block left here. With another partial slab to go to, swap the two: this one
     * stays partial (its owner's frees go on landing there without a slow
     * call), which spares a full/unfull round trip when slabs run dry and
     * refill in turn. */
    hk_slab_t *next = h->partial[cls];
    if (next) {
      next = heap_pick_partial(h, next, heap_min_batch(s));
      /* room here on pages resident already (s was started over, or is a
       * warm slab another class left) is carved before a swap to an
       * emptied slab, which would start over and carve one batch: a class
       * that refilled its emptied slabs hopped from one to the next, each
       * left with resident pages uncarved, while its last slab of the
       * round before faulted in fresh ones, and a program that frees a
       * structure and builds the next grew round after round
       * (test_emptied rounds). Freed blocks among live ones are still
       * taken first. */
      if (next->used == 0 && hk_slab_room_resident(s) && hk_slab_extend(s)) return slab_pop(h, s);
      /* But a handful of freed blocks is not worth a swap: with every slab
       * holding one or two, each malloc would come here (a slow call per
       * malloc). Carve
       * here instead, so that batches grow. (Tried: carving in the other
       * slab too when this one is carved to the end, no faster and more
       * memory; a fresh slab then, a program of many short-lived small
       * blocks took thousands of them and more than twice the memory.) */
      if ((unsigned)(next->carved - next->used) < heap_min_batch(s) && hk_slab_extend(s))
        return slab_pop(h, s);
      hk_partial_remove(h, next);
      hk_partial_push(h, s);
      if (next->free || heap_refill(h, next)) return pop_as_cur(h, cls, next);
      hk_heap_set_cur(h, cls, &hk_slab_empty);
      if (hk_slab_want_notify(next)) hk_heap_slab_state(h, next, HK_SLAB_FULL);
      else hk_partial_push(h, next);  /* remote frees arrived meanwhile */
    } else if (hk_slab_extend(s)) {
      return slab_pop(h, s);       /* nothing to reuse: carve fresh blocks here */
    } else if (hk_slab_want_notify(s)) {
      hk_heap_slab_state(h, s, HK_SLAB_FULL);
      hk_heap_set_cur(h, cls, &hk_slab_empty);
    } else if (heap_refill(h, s)) {
      return slab_pop(h, s);
    }
  }
  HK_HEAP_HOOK(refill);
  for (;;) {
    while ((s = h->partial[cls]) != NULL) {
      hk_partial_remove(h, s);
      if (s->free || heap_refill(h, s)) return pop_as_cur(h, cls, s);
      if (hk_slab_want_notify(s)) hk_heap_slab_state(h, s, HK_SLAB_FULL);
      else if (heap_refill(h, s)) return pop_as_cur(h, cls, s);
    }
    bool retry = false;
    s = hk_heap_fresh_slab(h, cls, &retry);
    if (s) break;
    if (!retry) { errno = ENOMEM; return NULL; }
  }
  /* A fresh slab: its first batch, then current. Not pop_as_cur: with no
   * block out and a free list, hk_slab_become_cur takes it for an emptied
   * slab and starts it over, carving it again at twice the batch (every
   * small program's every class: 8 KiB touched, not 4) */
  hk_slab_extend(s);
  return set_cur_pop(h, cls, s);
}

/* The leaf's refill, list moves only: blocks set aside (not when every
 * block is back: that slab starts over, hk_slab_take_local); with delayed
 * reuse a change of generation. */
HK_INLINE bool heap_leaf_refill(hk_slab_t *s) {
  if (HK_M_DELAY) return hk_slab_take_aged(s);
  hk_block_t *b = s->local_free;
  if (b == NULL || s->used == 0) return false;
  s->free = b;
  s->local_free = NULL;
  return true;
}

/* The most common slow call: the current slab's free list ran dry and
 * blocks set aside wait on local_free (the owner's own frees are on the
 * free list already: slab.h). This leaf saves no registers (the
 * full path pushes six, a third of its instructions per call). Every
 * 16th call still goes the full way, which drains
 * remote frees into full slabs and purges on time; so does any case that
 * needs more (an emptied slab's restart, a switch to a richer slab, stats).
 * With delayed reuse (measure delay) the leaf is the change of generation
 * (hk_slab_take_aged), remote frees waiting for the full path as here. */
static void *heap_alloc_slow(hk_heap_t *h, unsigned cls) {
  hk_slab_t *s = h->cur[cls];
  uint32_t tick = h->slow_count + 1;
  if ((tick & (HK_SLOW_FULL_EVERY - 1)) == 0 || HK_UNLIKELY(HK_LOAD_RACY(hk_heap_counting)) ||
      heap_other_richer(h, s) ||
      !heap_leaf_refill(s))
    return heap_alloc_full(h, cls);
  h->slow_count = tick;
  return slab_pop(h, s);
}

/* HAKMEM_PROF: a sampled allocation is served by the profiler; any other
 * leaves the fast path a list that ends before the next sample (prof.h).
 * Its countdown is its own, apart from the guarded sampler's (slab_pop):
 * it counts bytes (its weights need a Poisson process along the bytes) at
 * a rate that would put a mid block in a guarded slot every 16th time, and
 * sets the owner's frees aside. With both on, the profiler's cut comes
 * after the guard's and may leave blocks the guard counted for a later
 * list, which counts them again. */
static HK_NOINLINE void *heap_alloc_prof(hk_heap_t *h, unsigned cls) {
  void *b = hk_prof_small(cls);
  if (b) return b;
  b = heap_alloc_slow(h, cls);
  hk_slab_t *s = hk_tls_heap->cur[cls];  /* (h may have been the empty heap) */
  if (b && s != &hk_slab_empty) hk_prof_consume(cls, hk_slab_sample_point(s, hk_prof_left(cls), true));
  return b;
}

void *hk_heap_alloc_slow(hk_heap_t *h, unsigned cls) {
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) return heap_alloc_prof(h, cls);
  return heap_alloc_slow(h, cls);
}
