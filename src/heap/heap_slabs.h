/* A heap's slabs and superslabs: which list each slab is on (current,
 * partial, full, unused), superslabs owned with unused slabs or full, fresh
 * slabs, emptied slabs given back, abandoned superslabs adopted, remote
 * frees into full slabs (the delayed list), the purge of one heap, and the
 * hand-over of everything when its thread exits. The malloc slow path
 * (refill.c) and the background purge (bg.c) move slabs through here. */
#ifndef HK_HEAP_SLABS_H
#define HK_HEAP_SLABS_H

#include "heap/heap.h"
#include "base/dlist.h"
#include "base/lock.h"
#include "mem/remote.h"

enum { HK_LIST_AVAIL = 1, HK_LIST_FULL = 2 };   /* hk_superslab_t.list */

/* s (h's) changes state; its owner field says whether it is full
 * (HK_OWNER_FULL) */
static inline void hk_heap_slab_state(hk_heap_t *h, hk_slab_t *s, uint8_t st) {
  HK_STORE_RELAXED(s->state, st);
  HK_STORE_RELAXED(s->owner, h->tid | (st == HK_SLAB_FULL ? HK_OWNER_FULL : 0));
}

/* The remote frees of s (h's) collected, and counted for the stats */
static inline size_t hk_heap_collect_remote(hk_heap_t *h, hk_slab_t *s) {
  size_t n = hk_slab_collect_remote(s);
  if (n && HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls] += n;
  return n;
}

static inline void hk_partial_push(hk_heap_t *h, hk_slab_t *s) {  /* at the tail */
  hk_heap_slab_state(h, s, HK_SLAB_PARTIAL);
  HK_DLT_PUSH_TAIL(h->partial[s->cls], h->partial_tail[s->cls], s, next, prev);
}

static inline void hk_partial_remove(hk_heap_t *h, hk_slab_t *s) {
  HK_DLT_UNLINK(h->partial[s->cls], h->partial_tail[s->cls], s, next, prev);
  s->next = s->prev = NULL;
}

/* s (off every list, no block out) goes back to its superslab as unused.
 * True when the superslab left the heap (every slab back, more than the
 * spares: to the global cache, which may unmap it at once: never touch it
 * again); never when !may_leave (the background purge keeps superslabs
 * where they are: their owner's leaf slow path may still read a slab
 * descriptor). */
bool hk_heap_release_slab(hk_heap_t *h, hk_slab_t *s, bool may_leave);
/* Emptied slabs stay on their class's partial list until the next purge
 * epoch; this gives them back, and says how many. */
unsigned hk_heap_release_empty(hk_heap_t *h);
/* Each class's partial list in order of live blocks, most first; each mid
 * class's sparse mark renewed or ended (heap.h); now: ms. */
void hk_heap_sort_partial(hk_heap_t *h, uint64_t now);

/* A new slab of class cls, or NULL: then either the OS said no (errno set),
 * or adopting abandoned memory put slabs on the partial list (*retry). */
hk_slab_t *hk_heap_fresh_slab(hk_heap_t *h, unsigned cls, bool *retry);

/* free slow path: the owner freed into a full slab or emptied a slab. */
void hk_heap_free_local_slow(hk_slab_t *s);

/* The purge clock, read from the mid cache's pushes (every 256th):
 * what the slow path's check does (heap_maybe_purge), delayed frees too. */
void hk_heap_midc_tick(hk_heap_t *h) HK_NOINLINE;
/* Every block of h's mid cache back to its slab (purge, trim, thread exit);
 * hold (the purge epoch): a queue keeps its HK_MIDC_HOLD newest. */
void hk_heap_midc_flush(hk_heap_t *h, bool hold);
/* The owner's frees into h's current slabs go aside (HK_OWNER_ASIDE)
 * until each changes state: counting just began (ctl.c), and the counts
 * are taken per batch that the slow path hands the fast one (refill.c).
 * The caller is h's owner. */
void hk_heap_aside_current(hk_heap_t *h);
/* Remote free of b into the full slab s whose owner asked to hear of it
 * (hk_remote_push returned false): hand b to the owner heap. */
void hk_heap_notify(hk_slab_t *s, hk_block_t *b) __attribute__((noinline));
/* The blocks other threads handed h (hk_heap_notify) back onto their slabs. */
void hk_heap_drain_delayed(hk_heap_t *h);

/* The free mark's confirmation (freelist.h): is b, in slab s that the
 * calling thread owns, on one of the lists of free blocks (s's own, its
 * remote frees, the heap's delayed ones) or in any heap's mid cache? A
 * walk (of other heaps under the registry lock): out of line, rare. */
bool hk_heap_block_is_free(hk_slab_t *s, const hk_block_t *b) __attribute__((cold, noinline));

/* Purge the unused slabs of h's superslabs that stayed unused for a whole
 * epoch (force: all). Bytes purged. */
size_t hk_heap_purge_unused(hk_heap_t *h, bool force);
/* HAKMEM_PARK_PAGES: the free pages of h's partial slabs go back
 * (mem/slab_park.h), at every HK_PARK_DELAYS-th tick of h's purge clock
 * (now: the tick's time) or at once (now 0: a trim). Bytes purged. */
size_t hk_heap_park(hk_heap_t *h, uint64_t now);
/* HAKMEM_PARK_IDLE for a first-class heap (h->api), from the purge
 * thread with the heap's own lock held (heap_api.c): no call on the heap
 * runs, and every free of its blocks is a remote one, so nothing else
 * writes its slabs' lists and no proof that an owner is stopped is needed
 * (bg.c's park_idle). When no call took a slow path since the last tick
 * (idle_slow_seen) and the heap's bg_lock is free (a trim's pass from
 * another thread may hold it): its delayed frees drained, its current
 * slabs with free blocks retired to the partial lists, and their free
 * pages parked. Bytes purged. */
size_t hk_heap_park_api(hk_heap_t *h);
/* The purge clock struck at `now`: emptied slabs given back, unused ones
 * purged, the superslab cache collected, the purge hook called. */
void hk_heap_purge_now(hk_heap_t *h, uint64_t now) HK_NOINLINE;
/* The tier swap: the large tier is about to fault in pages on h's thread
 * (h its own): h's emptied slabs, and its current slabs with no block out,
 * go back now, not at its purge clock, so that superslabs left unused
 * reach the cache (hk_ss_shed), and the unused slabs of those it keeps are
 * purged. At most once per HK_SHED_EVERY_MS. */
#define HK_SHED_EVERY_MS 10
void hk_heap_shed(hk_heap_t *h);
/* Give back what h (the calling thread's) keeps unused. Bytes purged. */
size_t hk_heap_trim(hk_heap_t *h);

/* The purge thread's look at h while h's owner is stopped (bg.c), under
 * h's bg_lock, a few of h's superslabs at a time (the owner must stay
 * stopped through each look): the slabs, none current, whose every block
 * out came back from other threads (on their remote lists and h's delayed
 * list; none live, none in a mid stack or the pool, which count as out
 * too). The owner reaches such a slab through no fast path (it has no
 * block of it to free). Without this, a thread that allocated and then
 * only waits (a loader whose blocks workers free) kept them all for good:
 * only its own slow path collects those lists. */
#define HK_RET_CHUNK 8
typedef struct {
  unsigned n;                        /* superslabs of h, set by the caller */
  hk_superslab_t *ss[HK_RET_CHUNK];
  uint32_t back[HK_RET_CHUNK];       /* their slabs found returned */
} hk_ret_chunk_t;
/* Sets c->back; whether any slab was found. */
bool hk_heap_returned_look(hk_heap_t *h, hk_ret_chunk_t *c);
/* After the look (the owner stopped throughout): their blocks off those
 * lists, the slabs released (unused in their superslabs). */
void hk_heap_returned_release(hk_heap_t *h, const hk_ret_chunk_t *c);
/* A hint, without the owner stopped: remote frees wait on h's delayed
 * list or on a partial slab's remote list. */
bool hk_heap_returned_hint(hk_heap_t *h);

/* Thread exit: hand every slab and superslab of h over (abandoned, or to
 * the cache when empty). h's lists are empty afterwards. */
void hk_heap_abandon(hk_heap_t *h);

/* The mid pool (issue 41): per mid class, blocks a thread
 * freed into another live heap's slabs when its own stack was full. On
 * that heap's remote lists they wait for its owner's slow path, which a
 * thread that allocated once and then only waits never takes: every block
 * it handed out came back there, stranded, and the others' mallocs mapped
 * fresh memory. Here any thread's malloc of the class takes them when its
 * stack and its current slab's free list are empty (alloc.c). Pooled blocks count as out in their slab and carry the
 * free mark, as in a stack (hk_heap_block_is_free looks here too). Blocks
 * nobody took for a whole purge epoch, and all on a trim, go to their
 * slabs' remote lists. */
#define HK_MIDP_SLOTS 512
#define HK_MIDP_BYTES ((size_t)4 << 20)   /* per class */
/* The classes' heads share a page, apart from their slots: malloc's and the
 * drain's looks read every head, and a page only read costs a page of
 * memory on a kernel that maps no zero page (ARCHITECTURE "The library's
 * own pages"). A cache line each, as their locks are taken apart. */
typedef struct {
  _Alignas(64) hk_lock_t lock;
  unsigned n, cap;          /* cap: HK_MIDP_SLOTS or HK_MIDP_BYTES of blocks */
  bool taken;               /* a malloc took from it since the last drain look */
} hk_midp_t;
extern hk_midp_t hk_midp[HK_NCLASS_MID] HK_HIDDEN;
extern hk_block_t *hk_midp_slots[HK_NCLASS_MID][HK_MIDP_SLOTS] HK_HIDDEN;  /* under the head's lock */
/* A block in slab s of another heap may be pooled: that heap is a live
 * thread's (not abandoned: an adopter collects those; not a first-class
 * heap's: its destroy must find its blocks) and s is in use. */
HK_INLINE bool hk_heap_midp_wants(hk_slab_t *s) {
  return HK_LOAD_RELAXED(s->state) != HK_SLAB_UNUSED && !(hk_slab_owner(s) & HK_OWNER_API) &&
         HK_LOAD_RELAXED(hk_slab_ss(s)->heap) != NULL;
}
/* Pool b (a block of class HK_NCLASS_SMALL + i); false when full. */
bool hk_heap_midp_put(unsigned i, hk_block_t *b);
/* h's stack i is empty: move up to half its cap from the pool onto it.
 * Returns how many. */
unsigned hk_heap_midp_refill(hk_heap_t *h, unsigned i);
/* Blocks not taken for a purge delay (all when force) to their slabs. */
void hk_heap_midp_drain(bool force);
void hk_heap_midp_fork_prepare(void);
void hk_heap_midp_fork_parent(void);
void hk_heap_midp_fork_child(void);


#ifdef HK_DEBUG
/* Every list h owns is sound, and so is every slab on it (hk_slab_check).
 * O(h's free blocks): run every HAKMEM_CHECK_EVERY-th full slow path. */
void hk_heap_check(hk_heap_t *h);
#endif

#endif
