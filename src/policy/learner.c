/* The learner (learner.h): HAKMEM_LEARN=1 moves the caps within bounds from
 * what the slow paths count, and logs each decision. */
#include "policy/learner.h"

#include <stdio.h>
#include <string.h>

#include "heap/heap_slabs.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "base/lock.h"
#include "base/report.h"
#include "pal/os.h"
#include "backend/superslab.h"

/* The constants below (HK_LEARN_*) are in config.h's slow-path section. */

void hk_learn_init(hk_learner_t *L, const hk_caps_t *start) {
  memset(L, 0, sizeof *L);
  L->caps = *start;
}

static long clampl(long v, long lo, long hi) { return v < lo ? lo : v > hi ? hi : v; }

static void set_cap(long *cap, long v, const char *name, const char *why, hk_learn_log_fn log) {
  if (v == *cap) return;
  if (log) log(name, *cap, v, why);
  *cap = v;
}

void hk_learn_step(hk_learner_t *L, const hk_learn_obs_t *o, const hk_learn_bounds_t *b,
                   hk_learn_log_fn log) {
  char why[160];
  L->epochs++;
  L->purge_large_now = false;
  L->purge_ss_now = false;
  L->trim_small_now = false;

  /* -- small tier: trim when small allocation stopped -------------------- */
  if (L->small_idle_wait < b->min_small_idle) L->small_idle_wait = b->min_small_idle;
  if (o->small_refills == 0) {
    if (L->small_trimmed) {
      L->small_after_trim++;
    } else if (++L->small_idle >= L->small_idle_wait) {
      /* the process goes on (an epoch passed) but no thread refilled a small
       * class: the small tier's empty slabs only hold memory */
      L->trim_small_now = true;
      L->small_trimmed = true;
      L->small_trim_empty = false;
      L->trim_shadow = HK_LEARN_SHADOW_TRIM;  /* the next epoch counts the trim's own purges */
      L->small_after_trim = 0;
      if (log) {
        snprintf(why, sizeof why, "no small refills for %d epochs", L->small_idle);
        log("small_trim", 0, 1, why);
      }
    }
  } else {
    if (L->small_trimmed && !L->small_trim_empty) {
      /* judge the trim: if the small tier had to fault or map memory back
       * as soon as it resumed, the trim cost more than it saved: wait
       * longer next time; after a long idle spell, wait less */
      if (o->refaults + o->ss_os_maps > 0 &&
          L->small_after_trim < HK_LEARN_TRIM_JUDGE * L->small_idle_wait) {
        snprintf(why, sizeof why, "small traffic resumed %d epochs after a trim and refaulted: wait longer",
                 L->small_after_trim);
        set_cap(&L->small_idle_wait,
                clampl(L->small_idle_wait * HK_LEARN_STEP, b->min_small_idle, b->max_small_idle),
                "small_idle_wait", why, log);
      } else if (L->small_after_trim >= HK_LEARN_TRIM_JUDGE * L->small_idle_wait) {
        snprintf(why, sizeof why, "small tier stayed idle %d epochs after a trim: wait less",
                 L->small_after_trim);
        set_cap(&L->small_idle_wait,
                clampl(L->small_idle_wait / HK_LEARN_STEP, b->min_small_idle, b->max_small_idle),
                "small_idle_wait", why, log);
      }
      L->trim_shadow = HK_LEARN_SHADOW_RESUME;  /* its refaults are not the purge delay's doing */
    }
    L->small_trimmed = false;
    L->small_idle = 0;
  }

  /* -- empty-superslab cache: drop it when nobody has taken from it ------- */
  if (o->ss_cache_hits == 0) {
    if (++L->ss_idle_epochs == HK_LEARN_IDLE_EPOCHS && o->ss_cached_bytes > 0) {
      L->purge_ss_now = true;
      if (log) {
        snprintf(why, sizeof why,
                 "superslab cache unused for " HK_STR(HK_LEARN_IDLE_EPOCHS) " epochs, %llu bytes unpurged",
                 (unsigned long long)o->ss_cached_bytes);
        log("ss_cache_purge", 0, 1, why);
      }
    }
  } else {
    L->ss_idle_epochs = 0;
  }

  /* -- large cache --------------------------------------------------------- */
  if (o->large_allocs == 0) {
    L->idle_epochs++;
    L->pending = 0;
    if (L->idle_epochs == HK_LEARN_IDLE_EPOCHS && o->large_cached_bytes > 0) {
      L->purge_large_now = true;  /* large traffic stopped: give its memory back */
      if (log) {
        snprintf(why, sizeof why,
                 "no large allocations for " HK_STR(HK_LEARN_IDLE_EPOCHS) " epochs, %llu bytes cached",
                 (unsigned long long)o->large_cached_bytes);
        log("large_cache_purge", 0, 1, why);
      }
    }
  } else {
    L->idle_epochs = 0;
    L->w_allocs += o->large_allocs;
    L->w_hits += o->large_hits;
    L->w_ghosts += o->large_ghost_hits;
    L->w_evict_count += o->large_evict_count;
    L->w_evict_bytes += o->large_evict_bytes;
  }
  if (L->w_allocs >= HK_LEARN_LARGE_WINDOW) {
    const hk_learn_obs_t *epoch = o;
    hk_learn_obs_t w = *o;
    w.large_allocs = L->w_allocs;
    w.large_hits = L->w_hits;
    w.large_ghost_hits = L->w_ghosts;
    w.large_evict_count = L->w_evict_count;
    w.large_evict_bytes = L->w_evict_bytes;
    L->w_allocs = L->w_hits = L->w_ghosts = L->w_evict_count = L->w_evict_bytes = 0;
    o = &w;
    double hit = (double)o->large_hits / (double)o->large_allocs;
    if (L->pending) {
      /* judge the last growth: keep it only if the hit rate went up */
      L->pending = 0;
      if (hit <= L->hit_before + HK_LEARN_MIN_GAIN) {
        snprintf(why, sizeof why, "hit rate %.3f did not improve on %.3f: back off", hit,
                 L->hit_before);
        set_cap(&L->caps.large_count, L->count_before, "large_cache_count", why, log);
        set_cap(&L->caps.large_mb, L->mb_before, "large_cache_mb", why, log);
        L->cooldown = HK_LEARN_COOLDOWN;
      }
    } else if (L->cooldown > 0) {
      L->cooldown--;
    } else if (hit < HK_LEARN_USELESS_HIT && o->large_ghost_hits == 0 &&
               (L->caps.large_count > b->min_large || L->caps.large_mb > b->min_large_mb)) {
      /* the cache serves nothing and a bigger one would not either: it only
       * holds memory. Shrink it and give its contents back. */
      snprintf(why, sizeof why, "hit rate %.3f and no ghost hits: the cache only holds memory", hit);
      set_cap(&L->caps.large_count, clampl(L->caps.large_count / HK_LEARN_STEP, b->min_large, b->max_large),
              "large_cache_count", why, log);
      set_cap(&L->caps.large_mb,
              clampl(L->caps.large_mb / HK_LEARN_STEP, b->min_large_mb, b->max_large_mb),
              "large_cache_mb", why, log);
      L->purge_large_now = true;
    } else if (hit < b->target_hit_large && o->large_ghost_hits > 0) {
      long count = L->caps.large_count, mb = L->caps.large_mb;
      /* grow both caps: raising one alone just makes the other bind */
      long step = b->step_large > count / HK_LEARN_GROW_DIV ? b->step_large : count / HK_LEARN_GROW_DIV;
      long ncount = clampl(count + step, b->min_large, b->max_large);
      long nmb = clampl(mb + mb / HK_LEARN_GROW_DIV + 1, b->min_large_mb, b->max_large_mb);
      if (ncount != count || nmb != mb) {
        snprintf(why, sizeof why, "hit rate %.3f < target %.3f, %llu ghost hits", hit,
                 b->target_hit_large, (unsigned long long)o->large_ghost_hits);
        L->pending = 1;
        L->hit_before = hit;
        L->count_before = count;
        L->mb_before = mb;
        set_cap(&L->caps.large_count, ncount, "large_cache_count", why, log);
        set_cap(&L->caps.large_mb, nmb, "large_cache_mb", why, log);
      }
    }
    o = epoch;
  }

  /* -- purge delay --------------------------------------------------------- */
  if (L->trim_shadow > 0 && !L->trim_small_now) {
    /* purges and refaults now come from the small-tier trim (its own
     * purges, the refaults as small traffic resumes), which the delay does
     * not govern: do not judge the delay on them */
    L->trim_shadow--;
    L->purge_acc = L->refault_acc = 0;
    L->quiet_epochs = 0;
    goto bounds;
  }
  L->purge_acc = L->purge_acc * HK_LEARN_DECAY + (double)o->purges;
  L->refault_acc = L->refault_acc * HK_LEARN_DECAY + (double)o->refaults;
  if (o->refaults > 0 && L->purge_acc > 0) {
    double kept = 1.0 - L->refault_acc / (L->purge_acc > L->refault_acc ? L->purge_acc : L->refault_acc);
    if (kept < b->target_hit_purge) {
      L->quiet_epochs = 0;
      long d = clampl(L->caps.purge_delay_ms * HK_LEARN_STEP + 1, b->min_purge_ms, b->max_purge_ms);
      snprintf(why, sizeof why, "purged memory reused soon after (recent refaults %.1f, purges %.1f)",
               L->refault_acc, L->purge_acc);
      set_cap(&L->caps.purge_delay_ms, d, "purge_delay_ms", why, log);
    }
  } else if (o->purges > 0) {
    if (o->refaults == 0 && ++L->quiet_epochs >= HK_LEARN_QUIET_EPOCHS) {
      L->quiet_epochs = 0;
      long d = clampl(L->caps.purge_delay_ms / HK_LEARN_STEP, b->min_purge_ms, b->max_purge_ms);
      set_cap(&L->caps.purge_delay_ms, d, "purge_delay_ms",
              "purged memory stayed unused for " HK_STR(HK_LEARN_QUIET_EPOCHS) " epochs", log);
    }
  }
bounds:
  /* keep every cap inside its bounds whatever happened */
  L->caps.large_count = clampl(L->caps.large_count, b->min_large, b->max_large);
  L->caps.large_mb = clampl(L->caps.large_mb, b->min_large_mb, b->max_large_mb);
  L->caps.purge_delay_ms = clampl(L->caps.purge_delay_ms, b->min_purge_ms, b->max_purge_ms);
  L->small_idle_wait = clampl(L->small_idle_wait, b->min_small_idle, b->max_small_idle);
}

/* -- purge windows ------------------------------------------------------------ */

void hk_window_step(hk_window_t *w, const hk_window_obs_t *o, const hk_window_bounds_t *b,
                    const char *name, hk_learn_log_fn log) {
  char why[160];
  long max = b->max_ms > b->floor_ms ? b->max_ms : b->floor_ms;
  long ms = clampl(w->ms, b->floor_ms, max);
  uint64_t now = o->now_ms;
  /* "lately": the sums halve every two windows of time (a purge and the
   * reuse it spoiled lie about a window apart) */
  if (now - w->decay_ms >= 2 * (uint64_t)ms) {
    w->purge_acc /= 2;
    w->reuse_acc /= 2;
    w->decay_ms = now;
  }
  /* the pages a window up to the ceiling could have kept */
  unsigned long in = 0;
  for (unsigned k = 0; k < HK_REUSE_NB; k++)
    if (k == 0 || (long)(hk_reuse_upper(k) / 2) < max) in += o->reuse[k];
  w->purge_acc += (double)o->purged_pages;
  w->reuse_acc += (double)in;
  bool reused = w->reuse_acc >= b->reused_share * w->purge_acc;
  if (in >= HK_WINDOW_MIN_PAGES && reused) {
    /* purged memory was taken again: cover nine in ten of those pages'
     * distances (a bucket's upper end: they lie below it) */
    unsigned long seen = 0;
    unsigned k = 0;
    for (; k < HK_REUSE_NB; k++) {
      seen += o->reuse[k];
      if (seen * 100 >= in * (unsigned long)HK_WINDOW_COVER) break;
    }
    /* a distance runs from the stamp, which may lag the last free by up
     * to a purge delay (a slab is stamped when its heap releases it, on
     * its purge clock): the window covers that lag too, or a period just
     * past the bucket's end is purged and faulted in again until the rule
     * below doubles it */
    long want = clampl((long)hk_reuse_upper(k) + b->floor_ms, b->floor_ms, max);
    /* a purged page was unused for the window at least: distances within
     * it were measured short (a slab is stamped when released, after its
     * last free) and reuse goes on under a window that stood two of its
     * lengths (its own purges, not the last one's): double it */
    if (want <= ms && now - w->changed_ms >= 2 * (uint64_t)ms) want = clampl(ms * HK_LEARN_STEP, b->floor_ms, max);
    if (want > ms) {
      if (log) {
        snprintf(why, sizeof why, "%.0f of %.0f pages purged lately taken again, %d%% within %ld ms",
                 w->reuse_acc, w->purge_acc, HK_WINDOW_COVER, want);
        log(name, ms, want, why);
      }
      ms = want;
      w->changed_ms = now;
    }
  } else if (!reused && ms > b->floor_ms && now - w->changed_ms >= HK_WINDOW_HOLD * (uint64_t)ms) {
    /* what was purged lately stayed unused: the window is longer than reuse */
    long to = clampl(ms / HK_LEARN_STEP, b->floor_ms, max);
    if (log) {
      snprintf(why, sizeof why, "%.0f of %.0f pages purged lately taken again", w->reuse_acc, w->purge_acc);
      log(name, ms, to, why);
    }
    ms = to;
    w->changed_ms = now;
  }
  w->ms = ms;
}

void hk_learn_trim_result(hk_learner_t *L, size_t bytes) {
  /* a trim that released nothing cost nothing: do not judge it */
  if (bytes == 0) L->small_trim_empty = true;
}

/* ---- glue ----------------------------------------------------------------------- */

static hk_learner_t learner;
static hk_learn_bounds_t bounds;
static hk_window_t windows[HK_NWIN];  /* under learn_lock */
static unsigned long epochs;          /* epoch ticks run (under learn_lock) */
static hk_lock_t learn_lock = HK_LOCK_INIT;
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(&learn_lock, sizeof learn_lock, HK_LOCK_LEARNER);
}
static unsigned long slow_units;
static unsigned long small_refills;   /* small-tier slow paths, all threads */

static void log_stderr(const char *cap, long from, long to, const char *why) {
  hk_message("hakmem-learn: %s %ld -> %ld (%s)\n", cap, from, to, why);
}

/* Always (the control API may turn the learner on later: HAKMEM_LEARN). */
void hk_learner_init(void) {
  bounds.target_hit_large = (double)hk_knobs.target_hit_large / 1000.0;
  bounds.step_large = hk_knobs.cap_step_large;
  bounds.min_large = HK_LEARN_MIN_LARGE;
  bounds.max_large = hk_knobs.cap_max_large;
  bounds.min_large_mb = HK_LEARN_MIN_LARGE_MB;
  bounds.max_large_mb = hk_knobs.cap_max_large_mb;
  bounds.target_hit_purge = (double)hk_knobs.target_hit_purge / 1000.0;
  bounds.min_purge_ms = hk_knobs.cap_min_purge_ms;
  bounds.max_purge_ms = hk_knobs.cap_max_purge_ms;
  if (bounds.max_purge_ms < bounds.min_purge_ms) bounds.max_purge_ms = bounds.min_purge_ms;
  bounds.min_small_idle = hk_knobs.small_idle_epochs;
  bounds.max_small_idle = hk_knobs.cap_max_small_idle;
  if (bounds.max_small_idle < bounds.min_small_idle) bounds.max_small_idle = bounds.min_small_idle;
  /* the caps start where the layers that own them start: at the knobs */
  hk_caps_t start = { .large_count = hk_knobs.large_cache_count, .large_mb = hk_knobs.large_cache_mb,
                      .purge_delay_ms = hk_knobs.purge_delay_ms };
  hk_learn_init(&learner, &start);
}

static uint64_t take(unsigned long *c) { return HK_XCHG_RELAXED(*c, 0); }

/* One epoch of each tier's window (learn_lock held), set in the layer
 * that owns the delay. */
static void step_windows(uint64_t ss_pages, uint64_t span_pages, uint64_t cache_pages,
                         hk_learn_log_fn log) {
  static const char *const names[HK_NWIN] = { "purge_window_slabs", "purge_window_span",
                                                "purge_window_cache" };
  hk_window_obs_t o[HK_NWIN];
  memset(o, 0, sizeof o);
  uint64_t now = hk_os_now_ms();
  for (unsigned t = 0; t < HK_NWIN; t++) o[t].now_ms = now;
  o[HK_WIN_SLABS].purged_pages = ss_pages;
  o[HK_WIN_SPAN].purged_pages = span_pages;
  o[HK_WIN_CACHE].purged_pages = cache_pages;
  hk_reuse_take(&hk_ss_reuse, o[HK_WIN_SLABS].reuse);
  hk_large_take_reuse(o[HK_WIN_SPAN].reuse, o[HK_WIN_CACHE].reuse);
  long floor = HK_LOAD_RELAXED(hk_knobs.purge_delay_ms);
  long max = floor * HK_WINDOW_MAX_FACTOR;
  if (max > hk_knobs.cap_max_purge_ms) max = hk_knobs.cap_max_purge_ms;
  hk_window_bounds_t b = { floor, max, 1.0 - (double)hk_knobs.target_hit_purge / 1000.0 };
  for (unsigned t = 0; t < HK_NWIN; t++) hk_window_step(&windows[t], &o[t], &b, names[t], log);
  hk_ss_set_purge_delay_ms(windows[HK_WIN_SLABS].ms);
  hk_large_set_delays(windows[HK_WIN_CACHE].ms, windows[HK_WIN_SPAN].ms);
}

unsigned long hk_learner_epochs(void) { return HK_LOAD_RELAXED(epochs); }

/* fork(): a thread in an epoch tick holds learn_lock; a child that
 * inherited it held would never tick again (its ticks try-lock), its caps
 * and windows frozen, and would hang at a trim's result (which waits for
 * it). Taken before the superslabs' locks (the tick takes the cache's
 * under it); a thread that waits for it holds no lock fork takes. */
void hk_learner_fork_prepare(void) { hk_lock(&learn_lock); }
void hk_learner_fork_parent(void) { hk_unlock(&learn_lock); }
void hk_learner_fork_child(void) { hk_lock_reset(&learn_lock); }

long hk_learner_window_ms(unsigned tier) {
  return tier < HK_NWIN && hk_knobs.learn_purge ? HK_LOAD_RELAXED(windows[tier].ms) : 0;
}

static __thread unsigned small_pending __attribute__((tls_model("initial-exec")));

/* The hooks stay installed; HAKMEM_LEARN=0 (at start or set at run time)
 * makes them return at once. */
void hk_learner_small_tick(void) {
  if (!hk_learn_counting()) return;
  small_pending++;
  hk_learner_slow_tick(1);
}

void hk_learner_slow_tick(unsigned weight) {
  /* gather units per thread; the shared counter is touched 1 time in
   * HK_LEARN_TICK_BATCH */
  static __thread unsigned pending __attribute__((tls_model("initial-exec")));
  if (!hk_learn_counting()) return;
  pending += weight;
  if (pending < HK_LEARN_TICK_BATCH) return;
  weight = pending;
  pending = 0;
  if (small_pending) {
    HK_ADD_RELAXED(small_refills, small_pending);
    small_pending = 0;
  }
  unsigned long e = (unsigned long)hk_knobs.learn_epoch;
  unsigned long n = HK_ADD_RELAXED(slow_units, weight);
  if ((n + weight) / e == n / e) return;  /* no epoch boundary crossed */
  if (!hk_trylock(&learn_lock)) return;
  epochs++;
  /* what the layers counted this epoch, read through their functions */
  unsigned long ss[HK_SS_NEVENTS], lg[HK_LARGE_NEVENTS];
  hk_ss_take_events(ss);
  hk_large_take_events(lg);
  hk_learn_obs_t o;
  o.large_allocs = lg[HK_LARGE_ALLOCS];
  o.large_hits = lg[HK_LARGE_HITS];
  o.large_ghost_hits = lg[HK_LARGE_GHOST_HITS];
  o.large_evict_count = lg[HK_LARGE_EVICT_COUNT];
  o.large_evict_bytes = lg[HK_LARGE_EVICT_BYTES];
  o.large_cached_bytes = hk_large_bytes_cached();
  o.large_fault_pages = lg[HK_LARGE_FAULT_PAGES];
  o.purges = ss[HK_SS_PURGES] + lg[HK_LARGE_PURGES];
  o.refaults = ss[HK_SS_REFAULTS] + lg[HK_LARGE_REFAULTS];
  o.ss_cache_hits = ss[HK_SS_CACHE_HITS];
  o.ss_cached_bytes = hk_ss_cached_unpurged_bytes();
  o.ss_os_maps = ss[HK_SS_OS_MAPS];
  o.small_refills = take(&small_refills);
  hk_learn_log_fn log = HK_LOAD_RELAXED(hk_knobs.learn_log) ? log_stderr : NULL;
  bool full = HK_LOAD_RELAXED(hk_knobs.learn) != 0, win = hk_knobs.learn_purge != 0;
  bool purge = false, purge_ss = false, trim_small = false;
  if (win) step_windows(ss[HK_SS_PURGED_PAGES], lg[HK_LARGE_SPAN_PURGED_PAGES], lg[HK_LARGE_CACHE_PURGED_PAGES], log);
  if (full) {
    hk_learn_step(&learner, &o, &bounds, log);
    /* the caps go back to the layers that own them (the purge delays to
     * the windows' rule when it is on) */
    hk_caps_t c = learner.caps;
    if (win) {
      hk_large_set_caps(c.large_count, c.large_mb, windows[HK_WIN_CACHE].ms);
    } else {
      hk_large_set_caps(c.large_count, c.large_mb, c.purge_delay_ms);
      hk_ss_set_purge_delay_ms(c.purge_delay_ms);
    }
    purge = learner.purge_large_now;
    purge_ss = learner.purge_ss_now;
    trim_small = learner.trim_small_now;
  }
  hk_unlock(&learn_lock);
  if (purge) hk_large_collect(true);
  if (trim_small) {
    /* this thread's heap (the others' are theirs to touch) and the global
     * superslab cache, where the released superslabs go */
    size_t bytes = hk_heap_trim(hk_tls_heap);
    if (HK_LOAD_RELAXED(hk_knobs.learn_log)) hk_message("hakmem-learn: small tier trimmed, %zu bytes purged\n", bytes);
    if (bytes == 0) {
      hk_lock(&learn_lock);
      hk_learn_trim_result(&learner, bytes);
      hk_unlock(&learn_lock);
    }
  } else if (purge_ss) {
    hk_ss_collect(true);
  }
}
