/* Thread heaps: one per thread, reached by one initial-exec TLS load. A heap
 * owns superslabs; for each size class it has a current slab (the malloc
 * fast path pops from it) and a list of partial slabs. Slow paths live here:
 * refill, fresh slabs, adopting abandoned superslabs, thread exit, fork. */
#ifndef HK_HEAP_H
#define HK_HEAP_H

#include <stdatomic.h>
#include "freelist.h"
#include "superslab.h"

#define HK_DIRECT_N (HK_SMALL_MAX + 1)   /* request sizes 0..1024, one entry each */

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
   * no class table (8 KiB a heap; set_cur writes a class's whole range) */
  hk_slab_t *direct[HK_DIRECT_N];
  hk_slab_t *cur[HK_NCLASS];           /* never NULL: &hk_slab_empty if none */
  uintptr_t tid;                        /* owner thread id                    */
  _Atomic(hk_block_t *) delayed;        /* remote frees into full slabs       */
  /* slabs with blocks to give (not cur), oldest first: the slab waiting
   * longest has gathered the most frees, so it refills the biggest batch */
  hk_slab_t *partial[HK_NCLASS];
  hk_slab_t *partial_tail[HK_NCLASS];
  hk_ss_list_t ss_avail[HK_SS_NKINDS];  /* owned, with unused slabs           */
  hk_ss_list_t ss_full[HK_SS_NKINDS];   /* owned, every slab in use           */
  uint64_t next_purge_ms;
  uint32_t slow_count;
  uint32_t st_ticks;                    /* refills since the last stats tick  */
  bool live;
  struct hk_heap *next_all;             /* registry of every heap struct      */
  struct hk_heap *next_free;
  hk_heap_stats_t st;                   /* slow-path counters (hk_heap_counting) */
  /* background purge (HAKMEM_BACKGROUND_PURGE): the owner holds bg_lock
   * in every slow path that touches its lists; the purge thread try-locks
   * it (hk_heap_bg_purge). 0 free, 1 the purge thread, 2 the owner. */
  atomic_int bg_lock;
  uint32_t bg_depth;                    /* the owner's nesting (hooks re-enter) */
  int ktid;                             /* kernel thread id: /proc/self/task/N */
} hk_heap_t;

extern __thread hk_heap_t *hk_tls_heap __attribute__((tls_model("initial-exec"))) HK_HIDDEN;
extern hk_heap_t hk_heap_empty HK_HIDDEN;   /* every thread starts here: all cur[] empty */
extern hk_slab_t hk_slab_empty HK_HIDDEN;   /* free == NULL: the fast path falls through  */

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

extern bool hk_heap_counting;   /* slow paths keep hk_heap_stats_t counters
                                   (relaxed: the control API may flip it) */
/* HAKMEM_BACKGROUND_PURGE: set once, before the first heap exists, so
 * every heap's slow paths agree on taking bg_lock. */
extern bool hk_heap_bg_on;

/* What the slow path lets the layers above the heap do, without calling
 * them by name (docs/ARCHITECTURE.md, "Hooks"). Set once at start-up by
 * init.c; a NULL hook is skipped. */
typedef struct hk_heap_hooks {
  void (*refill)(void);   /* each full slow path (the learner's small-tier tick) */
  void (*purge)(void);    /* the heap's purge clock struck (the large tier's purge) */
  void (*stats)(void);    /* each 32nd counted refill (the stats timeline) */
} hk_heap_hooks_t;
void hk_heap_set_hooks(const hk_heap_hooks_t *hooks);
void hk_heap_set_refill_hook(void (*fn)(void));

/* What the heap needs before its first slab: the knobs, the free-list key,
 * the thread-exit key. Idempotent; the first heap of the process calls it. */
void hk_heap_start(void);

/* malloc slow path for class cls: refill, next partial slab, fresh slab. */
void *hk_heap_alloc_slow(hk_heap_t *h, unsigned cls);
/* free slow path: the owner freed into a full slab or emptied a slab. */
void hk_heap_free_local_slow(hk_slab_t *s);
/* Remote free of b into the full slab s whose owner asked to hear of it
 * (hk_remote_push returned false): hand b to the owner heap. */
void hk_heap_notify(hk_slab_t *s, hk_block_t *b) __attribute__((noinline));

/* The free mark's confirmation (freelist.h): is b, in slab s that the
 * calling thread owns, on one of the lists of free blocks (s's own, its
 * remote frees, the heap's delayed ones)? A walk: out of line, rare. */
bool hk_heap_block_is_free(hk_slab_t *s, const hk_block_t *b) __attribute__((cold, noinline));

/* Thread exit: hand everything over. */
void hk_heap_thread_done(hk_heap_t *h);
/* Give back what the calling thread's heap keeps unused. Bytes purged. */
size_t hk_heap_trim(hk_heap_t *h);
/* The background purge thread's pass over other threads' heaps: a heap
 * whose owner is blocked in a system call, and stayed so over the whole
 * look, gives back its emptied slabs (released, purged one tick later)
 * without its owner (docs/ARCHITECTURE.md, "Background purge"). force:
 * purge the released slabs at once (hak_ctl("purge")). Bytes purged. */
size_t hk_heap_bg_purge(bool force);

size_t hk_heap_count_live(void);
/* Add every heap's counters into acc, those gone included (racy reads of the
 * live ones: a snapshot), less the blocks the calling thread holds but has
 * not handed out. */
void hk_heap_sum_stats(hk_heap_stats_t *acc);
void hk_heap_fork_prepare(void);
void hk_heap_fork_parent(void);
void hk_heap_fork_child(void);

#endif
