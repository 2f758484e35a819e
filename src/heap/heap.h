/* Thread heaps: the heap struct, the calling thread's heap (one
 * initial-exec TLS load), the registry of every heap struct, start-up,
 * the counters heaps keep and fork. A heap owns superslabs; for each size
 * class it has a current slab (the malloc fast path pops from it) and a
 * list of partial slabs: heap_slabs.h moves slabs between them, refill.h is
 * the malloc slow path, thread.h gives a thread its heap and takes it back. */
#ifndef HK_HEAP_H
#define HK_HEAP_H

#include <sched.h>
#include <stdatomic.h>
#include "base/lock.h"
#include "mem/freelist.h"
#include "base/size_class.h"
#include "mem/slab.h"
#include "backend/superslab.h"

#define HK_DIRECT_N (HK_SMALL_MAX + 1)   /* request sizes 0..1024, one entry each */

/* The mid cache: per mid class, a stack of blocks the owner freed, in front
 * of the slabs. malloc of a mid size pops the block freed last, whichever
 * slab it is in, so a working set spread over many slabs is reused while
 * its lines are still in cache (issue 41: a mid-size loop's blocks otherwise came
 * back only when their slab became current again). At most HK_MIDC_SLOTS
 * blocks a class, and no more than hk_midc_cap[] says (HAKMEM_MID_CACHE_KB
 * of blocks); a block freed onto a full stack goes to its slab. Other
 * threads' frees of the owner's blocks go onto their own stacks (alloc.h,
 * hk_free_mid_foreign). Cached blocks count as out in their slab and
 * carry the free mark: a second free of one finds the mark, and the
 * owner's confirmation walk (hk_heap_block_is_free) looks in every
 * heap's stacks too. Not under memcheck.
 *
 * Builds that check a trailer (measure canary) or delay reuse (delay)
 * cache the owner's frees only: another thread's free goes through the
 * trailer's compare-and-swap to the slab's remote list, and there is no
 * pool. Blocks wait on the stack in the trailer's "freed" state, and a pop
 * checks the canary as a slab pop does. With delay the stack is a queue
 * (HK_MIDC_FIFO): malloc takes the oldest block, and only while more than
 * HK_MIDC_HOLD wait, so a block is handed out again only after that many
 * of its class were freed after it; a free onto a full queue sends the
 * oldest to its slab, where it waits as delay says. (Without a cache the
 * secure build's mid-size loops ran far slower: every block came
 * back cold, through the slab's lists.) */
#define HK_NCLASS_MID (HK_NCLASS - HK_NCLASS_SMALL)
#define HK_MIDC_SLOTS 32
#define HK_MIDC_ON (!HK_TRACKING)
#define HK_MIDC_FIFO (HK_M_DELAY != 0)
#define HK_MIDC_HOLD (HK_MIDC_FIFO ? 8u : 0u)
/* other threads' frees onto the stacks, and the pool (heap_slabs.h) */
#define HK_MIDC_SHARED (!HK_M_CANARY && !HK_M_DELAY)
_Static_assert((HK_MIDC_SLOTS & (HK_MIDC_SLOTS - 1)) == 0, "the queue's ring wraps by a mask");
_Static_assert(2 * HK_MIDC_HOLD <= HK_MIDC_SLOTS, "a queue holds more than it keeps back");
/* A thread whose mid mallocs all hit its cache makes no slow call, which
 * is where the purge clock is read: every 256 pushes it is read there
 * (hk_heap_midc_tick), counted down by a byte that wraps (one subtract in
 * memory and a branch: fewer instructions a push than a masked count). */

/* Counters a heap keeps in its slow paths when counting (HAKMEM_STATS or
 * HAKMEM_STATS_INTERVAL set); the stats read them (hk_heap_sum_stats). */
typedef struct hk_heap_stats {
  uint64_t handed[HK_NCLASS];   /* blocks given to the fast path  */
  uint64_t refills[HK_NCLASS];  /* fast-path misses                */
  uint64_t remote[HK_NCLASS];   /* remote frees collected          */
} hk_heap_stats_t;

typedef struct hk_heap {
  /* cur[] of the small classes again, indexed by the request size itself:
   * malloc of a small size finds its slab with one load, no arithmetic and
   * no class table (8 KiB a heap; hk_heap_set_cur writes a class's range) */
  hk_slab_t *direct[HK_DIRECT_N];
  hk_slab_t *cur[HK_NCLASS];           /* never NULL: &hk_slab_empty if none */
  uint8_t midc_n[HK_NCLASS_MID];        /* blocks in each mid class's stack   */
  uint8_t midc_head[HK_NCLASS_MID];     /* HK_MIDC_FIFO: the oldest's slot (else 0) */
  uint8_t midc_ticks;                   /* pushes left to the clock's check (wraps: every 256) */
  uint16_t idle_fp;                     /* the purge thread's (in a hole): what the owner's */
  uint32_t idle_fp_ms;                  /* fast paths change (bg.c, owner_activity) as its
                                           last look saw it, and since when */
  uintptr_t tid;                        /* owner thread id                    */
  _Atomic(hk_block_t *) delayed;        /* remote frees into full slabs       */
  /* slabs with blocks to give (not cur), oldest first: the slab waiting
   * longest has gathered the most frees, so it refills the biggest batch */
  hk_slab_t *partial[HK_NCLASS];
  hk_slab_t *partial_tail[HK_NCLASS];
  hk_ss_list_t ss_avail[HK_SS_NKINDS];  /* owned, with unused slabs           */
  hk_ss_list_t ss_full[HK_SS_NKINDS];   /* owned, every slab in use           */
  uint64_t next_purge_ms;
  uint64_t next_shed_ms;                /* the tier swap's clock (hk_heap_shed) */
  uint32_t slow_count;
  uint32_t st_ticks;                    /* refills since the last stats tick  */
  bool live;
  bool keep_empty;                      /* exiting or adopting a bundle: an emptied
                                           superslab stays (heap_ss_empty) */
  uint16_t idle_slow_seen;              /* the purge thread's: slow_count's low bits at
                                           its last look (hk_heap_idle_look); in a hole */
  uint32_t bundle[HK_SS_NKINDS];        /* the exited heap whose superslab this
                                           heap adopted first (hk_heap_fresh_slab) */
  /* a first-class heap (heap_api.c): tid is its own address, no thread
   * owns it; fork keeps it, and it never adopts abandoned superslabs */
  bool api;
  struct hk_heap *next_all;             /* registry of every heap struct      */
  struct hk_heap *next_free;
  hk_heap_stats_t st;                   /* slow-path counters (hk_heap_counting) */
  /* background purge (HAKMEM_BACKGROUND_PURGE): the owner holds bg_lock
   * in every slow path that touches its lists; the purge thread try-locks
   * it (bg.c). 0 free, 1 the purge thread, 2 the owner. */
  atomic_int bg_lock;
  uint32_t bg_depth;                    /* the owner's nesting (hooks re-enter) */
  int ktid;                             /* kernel thread id: /proc/self/task/N */
  uint16_t park_ticks;                  /* purge ticks since the last park pass */
  uint16_t park_fresh;                  /* fresh slabs taken since then (saturates) */
  /* the mid cache's stacks, last: a page is touched only by a class used */
  hk_block_t *midc[HK_NCLASS_MID][HK_MIDC_SLOTS];
} hk_heap_t;

/* How many blocks each mid class's stack holds at most (<= HK_MIDC_SLOTS):
 * HAKMEM_MID_CACHE_KB of blocks, set at start-up (hk_heap_start); 0: off.
 * Read racily by the free path; written by the start-up and the setter.
 * hk_midc_cap for other threads' frees, hk_midc_cap_own for the owner's
 * (the same but while the class is marked sparse, below). */
extern uint8_t hk_midc_cap[HK_NCLASS_MID] HK_HIDDEN;
extern uint8_t hk_midc_cap_own[HK_NCLASS_MID] HK_HIDDEN;
extern uint32_t hk_midc_sparse_until[HK_NCLASS_MID] HK_HIDDEN;
void hk_midc_set_cap(unsigned i, unsigned cap);

/* With parked pages (lowmem): the owner's frees of a mid class some heap
 * found sparse (its partial slabs mostly free, heap_slabs.c) are not
 * cached for a while, so that they go back to their slabs and the class
 * refills from its fullest ones (refill.c): the cache handed each freed
 * block to the next malloc, wherever it lay, and the sparse slabs never
 * drained. Other threads' frees are still cached (without them a
 * producer-consumer program's memory grew by half). `now` in
 * ms; a sparse class is renewed by each look that finds it so, and its
 * cache comes back at the first look after HK_MIDC_SPARSE_MS that does
 * not. hk_midc_sparse: true while class i is marked sparse. */
void hk_midc_note_sparse(unsigned i, bool sparse, uint64_t now);
HK_INLINE bool hk_midc_sparse(unsigned i) { return HK_LOAD_RELAXED(hk_midc_sparse_until[i]) != 0; }

/* The k-th oldest block of mid class i's stack (k < midc_n[i]): a ring
 * from midc_head in a queue (HK_MIDC_FIFO), from the bottom in a stack. */
HK_INLINE hk_block_t **hk_midc_slot(hk_heap_t *h, unsigned i, unsigned k) {
  return &h->midc[i][HK_MIDC_FIFO ? (h->midc_head[i] + k) & (HK_MIDC_SLOTS - 1) : k];
}

extern __thread hk_heap_t *hk_tls_heap __attribute__((tls_model("initial-exec"))) HK_HIDDEN;
extern hk_heap_t hk_heap_empty HK_HIDDEN;   /* every thread starts here: all cur[] empty */

/* A unique id of the calling thread: its thread control block (%fs:0). */
HK_INLINE uintptr_t hk_thread_id(void) {
#if defined(__x86_64__)
  uintptr_t t;
  __asm__("movq %%fs:0, %0" : "=r"(t));
  return t;
#else
  return (uintptr_t)__builtin_thread_pointer();
#endif
}

extern bool hk_heap_counting HK_HIDDEN;   /* slow paths keep hk_heap_stats_t counters
                                   (relaxed: the control API may flip it) */
/* HAKMEM_BACKGROUND_PURGE: set once, before the first heap exists, so
 * every heap's slow paths agree on taking bg_lock. */
extern bool hk_heap_bg_on HK_HIDDEN;

/* What the slow path lets the layers above the heap do, without calling
 * them by name (docs/ARCHITECTURE.md, "Hooks"). Set once at start-up by
 * init.c; a NULL hook is skipped. */
typedef struct hk_heap_hooks {
  void (*refill)(void);   /* each full slow path (the learner's small-tier tick) */
  void (*purge)(void);    /* the heap's purge clock struck (the large tier's purge) */
  void (*stats)(void);    /* each 32nd counted refill (the stats timeline) */
  void (*deferred)(void); /* work asked for by hk_heap_defer, at a slow path's top */
} hk_heap_hooks_t;
extern hk_heap_hooks_t hk_heap_hooks HK_HIDDEN;
void hk_heap_set_hooks(const hk_heap_hooks_t *hooks);
void hk_heap_set_refill_hook(void (*fn)(void));
#define HK_HEAP_HOOK(name) \
  do { void (*fn_)(void) = HK_LOAD_RELAXED(hk_heap_hooks.name); if (fn_) fn_(); } while (0)

/* Work that may call malloc, asked for from inside a slow path (the
 * background purge's lazy start: pthread_create allocates the new
 * thread's TLS), must not run there: the malloc would enter a heap or a
 * tier whose lists are half changed. hk_heap_defer asks for the deferred
 * hook; the next malloc slow path runs it at its top, before it touches
 * anything (hk_heap_run_deferred), and so does the large tiers' router. */
extern int hk_heap_deferred HK_HIDDEN;
void hk_heap_defer(void);
void hk_heap_run_deferred(void);
/* The safe point itself: a slow path's first test */
static inline void hk_heap_safe_point(void) {
  if (HK_UNLIKELY(HK_LOAD_RELAXED(hk_heap_deferred))) hk_heap_run_deferred();
}

/* What the heap needs before its first slab: the knobs, the free-list key.
 * Idempotent; the first heap of the process calls it. */
void hk_heap_start(void);

/* ---- the current slab of each class ---------------------------------------- */

/* The request sizes that small class cls serves: [first, last], its
 * trailer (HK_PAD) included; size 0 goes with the smallest class. */
static inline unsigned hk_direct_first(unsigned cls) {
  return cls == 0 ? 0 : hk_class_bytes(cls - 1) - HK_PAD + 1;
}
static inline unsigned hk_direct_last(unsigned cls) { return hk_class_bytes(cls) - HK_PAD; }

static inline void hk_heap_set_cur(hk_heap_t *h, unsigned cls, hk_slab_t *s) {
  h->cur[cls] = s;
  if (cls < HK_NCLASS_SMALL)
    for (unsigned i = hk_direct_first(cls), last = hk_direct_last(cls); i <= last; i++) h->direct[i] = s;
}

/* ---- background purge: the owner's side -------------------------------------
 * With HAKMEM_BACKGROUND_PURGE the owner holds h->bg_lock in every slow path
 * that touches its partial lists or superslabs (the full malloc path, the
 * free slow path, trim, thread exit); the purge thread only try-locks it
 * (bg.c). Nested calls (the learner's trim from the refill hook) count
 * depth. The fast paths and the leaf slow path take no lock: they touch
 * only the current slabs (and slabs with live blocks), which the purge
 * never does. */
static inline void hk_heap_enter(hk_heap_t *h) {
  if (!hk_heap_bg_on || h == &hk_heap_empty || h->bg_depth++ != 0) return;
  hk_fork_ready();
  for (;;) {
    int free_ = 0;
    if (atomic_compare_exchange_weak_explicit(&h->bg_lock, &free_, 2, memory_order_acquire,
                                              memory_order_relaxed))
      return;
    sched_yield();  /* the purge thread holds it for one pass over this heap */
  }
}
static inline void hk_heap_leave(hk_heap_t *h) {
  if (!hk_heap_bg_on || h == &hk_heap_empty || h->bg_depth == 0) return;
  if (--h->bg_depth == 0) atomic_store_explicit(&h->bg_lock, 0, memory_order_release);
}

/* ---- background purge: the purge thread's side --------------------------------
 * hk_heap_pin: h's bg_lock for a pass over h, only if free (an owner in a
 * slow path holds it: h is passed over); hk_heap_unpin ends the pass. */
static inline bool hk_heap_pin(hk_heap_t *h) {
  int free_ = 0;
  return atomic_compare_exchange_strong_explicit(&h->bg_lock, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}
static inline void hk_heap_unpin(hk_heap_t *h) { atomic_store_explicit(&h->bg_lock, 0, memory_order_release); }
/* Whether h took no slow path since the purge thread's last look (its
 * slow_count's low 16 bits unchanged: a tick of exactly 65,536k slow paths
 * reads as idle, which costs one pass for nothing); records this look. */
static inline bool hk_heap_idle_look(hk_heap_t *h) {
  uint16_t slow = (uint16_t)HK_LOAD_RACY(h->slow_count);
  bool idle = slow == h->idle_slow_seen;
  h->idle_slow_seen = slow;
  return idle;
}

/* ---- the registry ------------------------------------------------------------ */

/* A heap struct for the calling thread, zeroed and owned by it (its cur[]
 * and direct[] empty), counted live; not yet its hk_tls_heap. NULL when
 * the OS refuses memory. */
hk_heap_t *hk_heap_new(void);
/* h's owner is done with it: its counters join the totals, the struct is
 * free for the next thread. */
void hk_heap_retire(hk_heap_t *h);
/* fn(h, arg) for every live heap but the caller's, with the registry lock
 * held over the whole walk: no heap struct is handed to a new thread
 * meanwhile, and fork() waits for the walk to end. fn makes no system
 * call (hk_lock_nosys). */
void hk_heap_each_other(void (*fn)(hk_heap_t *h, void *arg), void *arg);
/* The purge thread's pass: fn(h, arg) for every live heap but the
 * caller's whose bg_lock it takes (an owner in a slow path holds it: that
 * heap is passed over), one at a time, the bg_lock held over fn and the
 * registry lock only to step the walk. fn may make system calls: threads
 * that start or exit do not wait for them. A heap inside fn is not retired
 * (hk_heap_retire waits for its bg_lock), and a fork waits for fn. */
void hk_heap_each_pinned(void (*fn)(hk_heap_t *h, void *arg), void *arg);

size_t hk_heap_count_live(void);
/* Add every heap's counters into acc, those gone included (racy reads of the
 * live ones: a snapshot), less the blocks the calling thread holds but has
 * not handed out. */
void hk_heap_sum_stats(hk_heap_stats_t *acc);
/* live[c] less the blocks of class c waiting in the mid caches of every
 * live heap (racy reads: a snapshot); what the slab census counts as out */
void hk_heap_sum_cached(uint64_t live[HK_NCLASS]);

void hk_heap_fork_unarmed(void);  /* heap.c: the fork handlers are being registered */
void hk_heap_fork_prepare(void);
void hk_heap_fork_parent(void);
void hk_heap_fork_child(void);

#endif
