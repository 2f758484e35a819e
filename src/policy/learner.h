/* Learner (HAKMEM_LEARN=1): once per epoch (HAKMEM_LEARN_EPOCH slow-path
 * calls, counted only in slow paths) it looks at what the caches did and
 * moves three caps within their bounds:
 *
 *   large cache entries / MiB   grow while misses are "ghost hits" (sizes
 *                               evicted recently); back off when growing
 *                               did not raise the hit rate; purge the cache
 *                               at once when large traffic stops
 *   purge delay                 longer while purged memory is soon reused
 *                               (refaults), shorter while it is not
 *
 *   small tier trim            when small allocation stops for a learned
 *                              number of epochs while the process goes on
 *                              (e.g. a phase of large buffers), its empty
 *                              slabs are released and purged at once; the
 *                              wait doubles when small traffic came back the
 *                              very next epoch, halves after long idle spells
 *
 * Purge windows (HAKMEM_LEARN_PURGE=1, the default; with or without the
 * rest): each tier that gives memory back (the superslab layer's slabs,
 * the span tier's free pages, the large tier's cached mappings) measures
 * how long the memory the program took again after a purge had been
 * unused (its reuse distance: base/reuse.h), by pages. Memory taken again
 * within a window should not have been purged: while a tenth or more of
 * the pages the tier purged lately are taken again
 * (HAKMEM_TARGET_HIT_PURGE), its purge delay grows to cover nine in ten of
 * those pages' distances below the ceiling (doubles, when they lie within
 * it: measured short); while fewer are, and the
 * window has stood for HK_WINDOW_HOLD windows, it halves, down to the
 * knob's delay (HAKMEM_PURGE_DELAY_MS), its floor. "Lately" halves every
 * two windows of time. Memory not taken again goes back one window after
 * it was freed.
 *
 * hk_learn_step and hk_window_step are pure functions of their inputs so
 * tests can drive them with synthetic counters. Nothing here runs on the
 * malloc/free fast path. */
#ifndef HK_LEARNER_H
#define HK_LEARNER_H

#include "base/config.h"
#include "base/reuse.h"

/* The caps the learner moves. Each is owned by the layer that reads it (the
 * large tier: entries, MiB, its purge delay; the superslab layer: the purge
 * delay), which starts it at the knob's value; the learner sets them
 * through that layer's functions after each epoch. */
typedef struct hk_caps {
  long large_count;       /* large cache entries           */
  long large_mb;          /* large cache MiB               */
  long purge_delay_ms;    /* unused memory kept this long  */
} hk_caps_t;

/* One epoch of observations. */
typedef struct hk_learn_obs {
  uint64_t large_allocs, large_hits, large_ghost_hits;
  uint64_t large_evict_count, large_evict_bytes;  /* evictions by either cap */
  uint64_t large_cached_bytes;                     /* at the end of the epoch */
  uint64_t large_fault_pages;                      /* span pages that faulted in (not resident) */
  uint64_t purges, refaults;                       /* purge events; reuse of purged memory soon after */
  uint64_t ss_cache_hits;                          /* superslabs taken from the cache */
  uint64_t ss_os_maps;                             /* superslabs mapped fresh         */
  uint64_t ss_cached_bytes;                        /* unpurged bytes in that cache    */
  uint64_t small_refills;                          /* small-tier slow paths, all threads */
} hk_learn_obs_t;

typedef struct hk_learn_bounds {
  double target_hit_large;   /* 0..1 */
  long step_large, min_large, max_large, min_large_mb, max_large_mb;
  double target_hit_purge;   /* share of purges that must not refault */
  long min_purge_ms, max_purge_ms;
  long min_small_idle, max_small_idle;  /* bounds of the small-tier idle wait (epochs) */
} hk_learn_bounds_t;

typedef struct hk_learner {
  hk_caps_t caps;
  /* back-off bookkeeping for the large cache */
  int pending;              /* 1: last epoch grew the cache, judge it now */
  double hit_before;
  long count_before, mb_before;
  int cooldown;             /* epochs before trying to grow again */
  int idle_epochs;          /* epochs without large allocations */
  int ss_idle_epochs;       /* epochs without superslab cache hits */
  bool purge_ss_now;        /* output: drop the empty-superslab cache */
  /* large-cache observations accumulate until a window is big enough */
  uint64_t w_allocs, w_hits, w_ghosts, w_evict_count, w_evict_bytes;
  int quiet_epochs;         /* epochs with purges and no refaults */
  double purge_acc, refault_acc;  /* decaying sums: a purge and the reuse it
                                     spoiled often fall in different epochs */
  bool purge_large_now;     /* output: drop the large cache */
  /* small tier: trim its empty slabs when small allocation stops while the
   * process goes on (the mirror of the large-cache purge) */
  long small_idle_wait;     /* learned: idle epochs before a trim */
  int small_idle;           /* epochs without small refills so far */
  bool small_trimmed;       /* trimmed, small traffic not back yet */
  bool small_trim_empty;    /* that trim released nothing */
  int small_after_trim;     /* idle epochs since the trim */
  int trim_shadow;          /* epochs the purge-delay rule still sits out */
  bool trim_small_now;      /* output: trim the small tier */
  uint64_t epochs;
} hk_learner_t;

typedef void (*hk_learn_log_fn)(const char *cap, long from, long to, const char *why);

/* ---- purge windows ---- */
enum { HK_WIN_SLABS, HK_WIN_SPAN, HK_WIN_CACHE, HK_NWIN };
typedef struct hk_window {
  long ms;                      /* the tier's purge delay (0: not set yet, the floor) */
  double purge_acc, reuse_acc;  /* pages purged, and taken again, lately */
  uint64_t decay_ms;            /* the sums were last halved then */
  uint64_t changed_ms;          /* the window last moved then */
} hk_window_t;
typedef struct hk_window_obs {
  uint64_t now_ms;
  uint64_t purged_pages;             /* the tier's pages purged this epoch */
  unsigned long reuse[HK_REUSE_NB];  /* its refaulted pages' reuse distances */
} hk_window_obs_t;
typedef struct hk_window_bounds {
  long floor_ms, max_ms;  /* the knob's delay; the ceiling */
  double reused_share;    /* the window grows only while at least this share
                             of the purges is taken again (1 - the target
                             of HAKMEM_TARGET_HIT_PURGE) */
} hk_window_bounds_t;
/* One epoch of a tier's window; logs a change under `name`. */
void hk_window_step(hk_window_t *w, const hk_window_obs_t *o, const hk_window_bounds_t *b,
                    const char *name, hk_learn_log_fn log);
/* The window in force for a tier (the glue's, for the stats): 0 when the
 * windows are off. */
long hk_learner_window_ms(unsigned tier);

void hk_learn_init(hk_learner_t *L, const hk_caps_t *start);
/* Decide the caps for the next epoch. Calls log (if any) per change. */
void hk_learn_step(hk_learner_t *L, const hk_learn_obs_t *o, const hk_learn_bounds_t *b,
                   hk_learn_log_fn log);

/* The glue reports what a trim released (0: nothing to judge it by). */
void hk_learn_trim_result(hk_learner_t *L, size_t bytes);

/* ---- glue: the epoch driver, fed by the slow paths through the hooks
 * init.c sets when HAKMEM_LEARN is on (docs/ARCHITECTURE.md, "Hooks") ---- */

void hk_learner_init(void);          /* from the knobs */
/* Every slow-path call when on; weight: units of work (a small refill is 1,
 * a large block 1 per 64 KiB), so epochs follow allocation volume. */
void hk_learner_slow_tick(unsigned weight);
/* The small tier's slow path (a refill): one unit, counted as small traffic. */
void hk_learner_small_tick(void);
unsigned long hk_learner_epochs(void);  /* epoch ticks run so far */
void hk_learner_fork_prepare(void);
void hk_learner_fork_parent(void);
void hk_learner_fork_child(void);

#endif
