/* Sampled guarded allocations (HAKMEM_GUARDED_RATE, docs/SECURITY.md):
 * about one small or mid allocation in HAKMEM_GUARDED_RATE is served from
 * a slot of a pool of its own, on its own pages with a guard page after
 * them, right-aligned so that the first byte past the block faults; its
 * free closes the pages and the slot waits in a quarantine, so a use after
 * free faults too. A fault there, or a bad free of a sampled block, is
 * reported with the block's size and its allocation (and free) stacks,
 * then the process aborts. The pool's chunks are marked HK_CHUNK_GUARDED,
 * which free already reads: no fast path changes. Only the heap's slow
 * path calls in here: it counts every block it hands out, with the list it
 * gives the fast path, on a countdown of its own beside the profiler's,
 * and cuts that list where the next sample falls (refill.c, slab_pop). */
#ifndef HK_GUARDED_H
#define HK_GUARDED_H

#include "base/config.h"
#include "base/size_class.h"
#include "base/measures.h"
#include "base/track.h"

/* Not with the canary (the secure build): a sampled block would need the
 * trailer word its measures keep (kind, sized, slack, fill, copy), which a
 * slot does not have; not with delayed reuse (its generations make every
 * count a walk of the list); not under memcheck. HK_NO_GUARDED compiles it
 * out. */
#if defined(HK_NO_GUARDED) || HK_M_CANARY || HK_M_DELAY || HK_TRACKING
#define HK_GUARDED_BUILD 0
#else
#define HK_GUARDED_BUILD 1
#endif

extern int hk_guarded_on HK_HIDDEN;  /* set once by hk_guarded_init; slow paths test it */

void hk_guarded_init(void);          /* reads the knobs (after hk_knobs_init) */

/* A thread's countdowns: per class, the blocks the slow path may still
 * hand out before the next sampled one. Zero until the thread's first
 * sample point, which draws them (hk_guarded_small). */
typedef struct {
  uint32_t left[HK_NCLASS];
  int busy;                      /* sampling now: a nested malloc is not sampled */
  int ready;
  int warm;                      /* the thread's first stack walk is done */
  int want_warm;                 /* a sample waits for it (hk_guarded_thread_start) */
  uint64_t rng;
} hk_guarded_tls_t;
extern __thread hk_guarded_tls_t hk_guarded_tls __attribute__((tls_model("initial-exec"))) HK_HIDDEN;

/* A thread's first stack walk allocates (glibc finds the thread's stack):
 * not in a sample, where a nested malloc could take the list the sample
 * point is cutting. A sample that finds its thread cold is put off (its
 * countdown stays at 0) and asks for the walk (want_warm), which the slow
 * path makes here at its next full call, before it touches the heap; a
 * sampled free walks at once. So a thread that is never sampled never
 * walks (its heap starts as it would without sampling). */
void hk_guarded_thread_start(void);

/* The heap's slow path, one allocation of class cls (a thread heap's)
 * about to be handed out: counted; the block to hand out when it is the
 * sampled one (the countdown is drawn again), else NULL. */
void *hk_guarded_small(unsigned cls);
/* The slow path handed the fast path a list of n more blocks of class
 * cls: counted. */
HK_INLINE void hk_guarded_consume(unsigned cls, uint64_t n) {
  uint32_t *left = &hk_guarded_tls.left[cls];
  *left = n < *left ? *left - (uint32_t)n : 0;
}

/* blocks of chunk kind HK_CHUNK_GUARDED */
bool   hk_guarded_free(const char *what, void *p);  /* false: reported */
size_t hk_guarded_usable(const void *p);            /* 0: not a live block */
/* sampled blocks live, and samples taken, skipped (pool full) and
 * throttled (more than HAKMEM_GUARDED_PER_SEC a second) */
void   hk_guarded_counts(size_t *live, uint64_t *taken, uint64_t *skipped, uint64_t *throttled);
/* adds the sampled blocks live to their classes' counts (the stats'
 * census: they live outside the slabs, whose counts miss them) */
void   hk_guarded_census(uint64_t live_by_class[HK_NCLASS]);

void hk_guarded_fork_prepare(void);
void hk_guarded_fork_parent(void);
void hk_guarded_fork_child(void);

#endif
