/* test_learner — drives the learner's decision function (src/policy/learner.c,
 * hk_learn_step) with synthetic counters: it must converge, respect every
 * bound, back off when a change does not help, and release memory when a
 * cache only holds it. Linked statically so the internal symbol is there. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/knobs.h"
#include "policy/learner.h"
#include "mem/large.h"
#include "backend/superslab.h"

/* 12's thread: epoch ticks back to back, learn_lock held most of the time */
#define TICK_WEIGHT (1u << 24)  /* past any epoch (HAKMEM_LEARN_EPOCH) */
static volatile int ticking;
static void *ticker(void *arg) {
  (void)arg;
  while (ticking) hk_learner_slow_tick(TICK_WEIGHT);
  return NULL;
}

/* Forks n children while ticker runs; how many children's learners did
 * not tick in four epochs' worth of ticks. */
static int fork_children_frozen(int n) {
  pthread_t t;
  ticking = 1;
  pthread_create(&t, NULL, ticker, NULL);
  int frozen = 0;
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      unsigned long e0 = hk_learner_epochs();
      for (int k = 0; k < 4; k++) hk_learner_slow_tick(TICK_WEIGHT);
      _exit(hk_learner_epochs() > e0 ? 0 : 1);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    frozen += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  ticking = 0;
  pthread_join(t, NULL);
  return frozen;
}

static hk_learn_bounds_t B = {
  .target_hit_large = 0.9, .step_large = 8, .min_large = 2, .max_large = 64,
  .min_large_mb = 4, .max_large_mb = 256,
  .target_hit_purge = 0.9, .min_purge_ms = 50, .max_purge_ms = 8000,
  .min_small_idle = 2, .max_small_idle = 16,
};
static int log_lines;
static void count_log(const char *cap, long from, long to, const char *why) {
  (void)cap; (void)from; (void)to; (void)why;
  log_lines++;
}

static hk_learn_obs_t large_epoch(uint64_t allocs, uint64_t hits, uint64_t ghosts) {
  hk_learn_obs_t o;
  memset(&o, 0, sizeof o);
  o.large_allocs = allocs;
  o.large_hits = hits;
  o.large_ghost_hits = ghosts;
  o.large_evict_count = ghosts;
  o.large_cached_bytes = 1 << 20;
  return o;
}

static void bounds_ok(const hk_learner_t *L) {
  CHECK(L->caps.large_count >= B.min_large && L->caps.large_count <= B.max_large);
  CHECK(L->caps.large_mb >= B.min_large_mb && L->caps.large_mb <= B.max_large_mb);
  CHECK(L->caps.purge_delay_ms >= B.min_purge_ms && L->caps.purge_delay_ms <= B.max_purge_ms);
  CHECK(L->small_idle_wait >= B.min_small_idle && L->small_idle_wait <= B.max_small_idle);
}

/* an epoch of large traffic only (small_refills 0) or with small refills */
static hk_learn_obs_t small_epoch(uint64_t small_refills, uint64_t refaults) {
  hk_learn_obs_t o = large_epoch(16, 16, 0);
  o.small_refills = small_refills;
  o.refaults = refaults;
  return o;
}

/* Runs one phase cycle: `busy` epochs of small traffic (the first one
 * refaulting if `refault_on_resume`), then `idle` epochs without; returns
 * how many trims were asked for. */
static int small_cycle(hk_learner_t *L, int busy, int idle, bool refault_on_resume) {
  int trims = 0;
  for (int e = 0; e < busy; e++) {
    hk_learn_obs_t o = small_epoch(100, e == 0 && refault_on_resume ? 50 : 0);
    hk_learn_step(L, &o, &B, count_log);
    bounds_ok(L);
    CHECK(!L->trim_small_now);
  }
  for (int e = 0; e < idle; e++) {
    hk_learn_obs_t o = small_epoch(0, 0);
    hk_learn_step(L, &o, &B, count_log);
    bounds_ok(L);
    trims += L->trim_small_now;
  }
  return trims;
}

int main(void) {
  hk_caps_t start = { .large_count = 32, .large_mb = 64, .purge_delay_ms = 1000 };
  hk_learner_t L;

  /* 1. ghost hits and a hit rate that improves with size (the target 0.9 is
   *    met from 60 entries on): grow until it is met, never past the cap */
  hk_learn_init(&L, &start);
  for (int e = 0; e < 200; e++) {
    double hit = L.caps.large_count >= 64 ? 0.95 : 0.3 + 0.01 * (double)L.caps.large_count;
    hk_learn_obs_t o = large_epoch(128, (uint64_t)(hit * 128), hit < 0.9 ? 20 : 0);
    hk_learn_step(&L, &o, &B, count_log);
    bounds_ok(&L);
  }
  CHECKF(L.caps.large_count >= 60 && L.caps.large_count <= 64,
         "count converged to %ld, want 60..64", L.caps.large_count);
  CHECK(L.caps.large_mb > 64);
  long settled = L.caps.large_count, settled_mb = L.caps.large_mb;
  /* target met: no further change */
  for (int e = 0; e < 20; e++) {
    hk_learn_obs_t o = large_epoch(128, 125, 0);
    hk_learn_step(&L, &o, &B, count_log);
  }
  CHECK(L.caps.large_count == settled && L.caps.large_mb == settled_mb);

  /* 2. growth that does not help is undone, then left alone for a while */
  hk_learn_init(&L, &start);
  hk_learn_obs_t o = large_epoch(128, 40, 30);
  hk_learn_step(&L, &o, &B, count_log);
  CHECKF(L.caps.large_count > 32, "grew to %ld", L.caps.large_count);
  hk_learn_step(&L, &o, &B, count_log);  /* same hit rate: back off */
  CHECKF(L.caps.large_count == 32 && L.caps.large_mb == 64, "backed off to %ld/%ld",
         L.caps.large_count, L.caps.large_mb);
  for (int e = 0; e < 8; e++) {
    hk_learn_step(&L, &o, &B, count_log);
    CHECKF(L.caps.large_count == 32, "cooldown epoch %d: %ld", e, L.caps.large_count);
  }
  hk_learn_step(&L, &o, &B, count_log);
  CHECK(L.caps.large_count > 32);  /* tries again after the cooldown */

  /* 3. a cache that serves nothing shrinks to its floor and is purged */
  hk_learn_init(&L, &start);
  int purges = 0;
  for (int e = 0; e < 30; e++) {
    hk_learn_obs_t z = large_epoch(128, 0, 0);
    hk_learn_step(&L, &z, &B, count_log);
    bounds_ok(&L);
    purges += L.purge_large_now;
  }
  CHECKF(L.caps.large_count == B.min_large && L.caps.large_mb == B.min_large_mb,
         "useless cache shrank to %ld/%ld", L.caps.large_count, L.caps.large_mb);
  CHECK(purges > 0);

  /* 4. large traffic stops: the cache is purged once, on the 2nd idle epoch */
  hk_learn_init(&L, &start);
  hk_learn_obs_t idle = large_epoch(0, 0, 0);
  hk_learn_step(&L, &idle, &B, count_log);
  CHECK(!L.purge_large_now);
  hk_learn_step(&L, &idle, &B, count_log);
  CHECK(L.purge_large_now);
  hk_learn_step(&L, &idle, &B, count_log);
  CHECK(!L.purge_large_now);

  /* 5. purge delay: refaults double it up to the cap, quiet epochs halve it */
  hk_learn_init(&L, &start);
  for (int e = 0; e < 20; e++) {
    hk_learn_obs_t p = large_epoch(0, 0, 0);
    p.purges = 10;
    p.refaults = 5;
    hk_learn_step(&L, &p, &B, count_log);
    bounds_ok(&L);
  }
  CHECKF(L.caps.purge_delay_ms == B.max_purge_ms, "delay %ld", L.caps.purge_delay_ms);
  for (int e = 0; e < 100; e++) {
    hk_learn_obs_t p = large_epoch(0, 0, 0);
    p.purges = 10;
    hk_learn_step(&L, &p, &B, count_log);
    bounds_ok(&L);
  }
  CHECKF(L.caps.purge_delay_ms == B.min_purge_ms, "delay %ld", L.caps.purge_delay_ms);

  /* 6. small tier: a long idle spell trims once, after the wait (2 epochs) */
  hk_learn_init(&L, &start);
  CHECK(small_cycle(&L, 5, 1, false) == 0);
  hk_learn_step(&L, &(hk_learn_obs_t){ .large_allocs = 8 }, &B, count_log);
  CHECK(L.trim_small_now);             /* 2nd idle epoch */
  CHECKF(L.small_idle_wait == 2, "wait %ld", L.small_idle_wait);
  CHECK(small_cycle(&L, 0, 20, false) == 0);  /* once per idle spell */

  /* 7. backs off: when small traffic comes back at once and refaults, every
   *    trim doubles the wait, up to its bound; cycles with idle spells shorter
   *    than the wait then trim no more */
  hk_learn_init(&L, &start);
  int trims = 0;
  for (int c = 0; c < 10; c++) trims += small_cycle(&L, 4, 6, true);
  CHECKF(L.small_idle_wait >= 8, "wait after refaulting trims: %ld", L.small_idle_wait);
  int late = small_cycle(&L, 4, 6, true) + small_cycle(&L, 4, 6, true);
  CHECKF(late == 0, "still trimming (%d) with wait %ld", late, L.small_idle_wait);
  CHECK(trims > 0 && trims < 10);
  for (int c = 0; c < 10; c++) small_cycle(&L, 4, 40, true);  /* never past the cap */
  CHECKF(L.small_idle_wait <= B.max_small_idle, "wait %ld", L.small_idle_wait);

  /* 8. ... and converges back: long idle spells after a trim halve the wait
   *    to its floor */
  for (int c = 0; c < 20; c++) small_cycle(&L, 4, 200, false);
  CHECKF(L.small_idle_wait == B.min_small_idle, "wait after long spells %ld", L.small_idle_wait);

  /* 9. a trim that released nothing is not judged */
  hk_learn_init(&L, &start);
  CHECK(small_cycle(&L, 3, 3, false) == 1);
  hk_learn_trim_result(&L, 0);
  small_cycle(&L, 3, 0, true);         /* resumes at once, refaulting */
  CHECKF(L.small_idle_wait == 2, "wait %ld after an empty trim", L.small_idle_wait);

  /* 10. refaults of trimmed memory do not lengthen the purge delay */
  hk_learn_init(&L, &start);
  CHECK(small_cycle(&L, 3, 3, false) == 1);
  for (int e = 0; e < 3; e++) {
    hk_learn_obs_t o = small_epoch(100, 80);
    o.purges = 10;
    hk_learn_step(&L, &o, &B, count_log);
  }
  CHECKF(L.caps.purge_delay_ms == 1000, "delay %ld after trim refaults", L.caps.purge_delay_ms);

  CHECK(log_lines > 0);
  /* the rule between the learner and the control API: a cap the API set
   * (pinned) is not moved by the learner's writes; the others are */
  hk_large_set_caps(40, 50, 600);
  CHECK(hk_large_cap(HK_LARGE_CAP_COUNT) == 40 && hk_large_cap(HK_LARGE_CAP_MB) == 50);
  hk_large_pin_cap(HK_LARGE_CAP_COUNT, 5);
  hk_large_set_caps(100, 200, 300);
  CHECKF(hk_large_cap(HK_LARGE_CAP_COUNT) == 5, "pinned count moved to %ld", hk_large_cap(HK_LARGE_CAP_COUNT));
  CHECK(hk_large_cap(HK_LARGE_CAP_MB) == 200 && hk_large_cap(HK_LARGE_CAP_DELAY) == 300);
  hk_large_pin_cap(HK_LARGE_CAP_COUNT, 6);   /* the API may set it again */
  CHECK(hk_large_cap(HK_LARGE_CAP_COUNT) == 6);
  hk_ss_set_purge_delay_ms(123);
  CHECK(hk_ss_purge_delay_ms() == 123);
  hk_ss_pin_purge_delay_ms(777);
  hk_ss_set_purge_delay_ms(5);
  CHECKF(hk_ss_purge_delay_ms() == 777, "pinned delay moved to %ld", hk_ss_purge_delay_ms());

  /* 11. purge windows (hk_window_step): pages purged and taken again lately
   * lengthen a tier's window to cover 90% of their distances and the
   * stamp's lag (the floor); a block or
   * two is noise; a small share of the pages purged moves nothing;
   * distances past the ceiling (purging was right) move nothing; purges
   * nothing took again halve it after it stood 4 windows, never below the
   * knob's delay; "lately" halves every two windows of time */
  {
    hk_window_bounds_t wb = { .floor_ms = 1000, .max_ms = 8000, .reused_share = 0.1 };
    hk_window_t w = { .ms = 0 };
    hk_window_obs_t wo;
    uint64_t now = 100000;
    memset(&wo, 0, sizeof wo);
    wo.now_ms = now;
    hk_window_step(&w, &wo, &wb, "w", NULL);
    CHECKF(w.ms == 1000, "unset window starts at the floor: %ld", w.ms);
    wo.reuse[hk_reuse_bucket(1200)] = HK_WINDOW_MIN_PAGES - 1;   /* a few slabs: noise */
    hk_window_step(&w, &wo, &wb, "w", NULL);
    CHECKF(w.ms == 1000, "one slab taken again moved the window to %ld", w.ms);
    memset(&wo, 0, sizeof wo);
    wo.now_ms = now += 100;
    wo.purged_pages = 16000;                 /* a burst purged in the pause... */
    hk_window_step(&w, &wo, &wb, "w", NULL);
    memset(&wo, 0, sizeof wo);
    wo.now_ms = now += 300;
    wo.reuse[hk_reuse_bucket(1200)] = 15000;  /* ...and taken again 1.2 s after its free */
    wo.reuse[hk_reuse_bucket(3)] = 100;
    hk_window_step(&w, &wo, &wb, "w", NULL);
    CHECKF(w.ms == 2048 + 1000, "1.2 s reuses: window %ld, want 3048 (the bucket's end + the floor)", w.ms);
    memset(&wo, 0, sizeof wo);
    wo.now_ms = now += 100;
    wo.reuse[hk_reuse_bucket(60000)] = 100000;  /* reused a minute later: past the ceiling */
    hk_window_step(&w, &wo, &wb, "w", NULL);
    CHECKF(w.ms == 3048, "reuses past the ceiling moved the window to %ld", w.ms);
    memset(&wo, 0, sizeof wo);
    wo.now_ms = now += 100;
    wo.reuse[hk_reuse_bucket(7000)] = 100000;   /* within the ceiling: capped at it */
    hk_window_step(&w, &wo, &wb, "w", NULL);
    CHECKF(w.ms == 8000, "7 s reuses: window %ld, want the ceiling 8000", w.ms);
    /* purges nothing takes again, one epoch every 500 ms: it halves to the
     * floor, each step after the window stood 4 windows of time */
    memset(&wo, 0, sizeof wo);
    wo.purged_pages = 5000;
    int steps = 0;
    while (w.ms > 1000 && steps < 1000) {
      wo.now_ms = now += 500;
      hk_window_step(&w, &wo, &wb, "w", NULL);
      steps++;
    }
    CHECKF(w.ms == 1000 && steps > 3 * 4 && steps < 1000, "quiet purges: window %ld after %d epochs", w.ms, steps);
    for (int e = 0; e < 20; e++) {
      wo.now_ms = now += 500;
      hk_window_step(&w, &wo, &wb, "w", NULL);
    }
    CHECKF(w.ms == 1000, "below the floor: %ld", w.ms);
    /* no purges, no reuse (idle, or all kept): nothing moves */
    hk_window_t idle = { .ms = 4096, .changed_ms = now };
    memset(&wo, 0, sizeof wo);
    for (int e = 0; e < 40; e++) {
      wo.now_ms = now += 500;
      hk_window_step(&idle, &wo, &wb, "w", NULL);
    }
    CHECKF(idle.ms == 4096, "an epoch without purges moved the window to %ld", idle.ms);
    /* many pages purged, a few taken again: it stays */
    hk_window_t few = { .ms = 2048, .changed_ms = now };
    hk_window_obs_t fo;
    memset(&fo, 0, sizeof fo);
    fo.purged_pages = 100000;
    fo.reuse[hk_reuse_bucket(3000)] = 200;
    for (int e = 0; e < 6; e++) {
      fo.now_ms = now += 100;
      hk_window_step(&few, &fo, &wb, "w", NULL);
    }
    CHECKF(few.ms == 2048, "200 of 600000 pages taken again moved the window to %ld", few.ms);
    CHECK(hk_reuse_bucket(0) == 0 && hk_reuse_bucket(1) == 0 && hk_reuse_bucket(2) == 1 &&
          hk_reuse_bucket(1023) == 9 && hk_reuse_bucket(1024) == 10 &&
          hk_reuse_bucket(~0ull) == HK_REUSE_NB - 1);
  }
  /* the windows go to the large tier's caps; a pinned delay stays */
  hk_large_set_delays(2000, 3000);
  CHECKF(hk_large_cap(HK_LARGE_CAP_DELAY) == 2000, "cache window %ld", hk_large_cap(HK_LARGE_CAP_DELAY));
  hk_large_pin_cap(HK_LARGE_CAP_DELAY, 500);
  hk_large_set_delays(9000, 9000);
  CHECKF(hk_large_cap(HK_LARGE_CAP_DELAY) == 500, "pinned delay moved to %ld", hk_large_cap(HK_LARGE_CAP_DELAY));

  /* 12. fork() while another thread is in an epoch tick, learn_lock held:
   * without fork handlers most children inherit the lock held and their
   * learner never ticks again (its ticks try-lock); with the learner's
   * handlers, which init.c registers among the library's (this binary
   * links the internal archive, without init.c), every child ticks */
  {
    setenv("HAKMEM_LEARN", "1", 1);  /* the knobs as the library reads them at start */
    hk_knobs_init();
    hk_learner_init();
    int frozen_bare = fork_children_frozen(100);
    pthread_atfork(hk_learner_fork_prepare, hk_learner_fork_parent, hk_learner_fork_child);
    int frozen = fork_children_frozen(100);
    fprintf(stderr, "12: learners frozen in fork children: %d of 100 without the handlers, %d with\n",
            frozen_bare, frozen);
    CHECKF(frozen_bare > 0, "no child caught the lock held: the case shows nothing");
    CHECKF(frozen == 0, "%d of 100 fork children's learners never ticked", frozen);
  }
  return check_done("test_learner");
}
