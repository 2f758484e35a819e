/* test_learner — drives the learner's decision function (src/learner.c,
 * hk_learn_step) with synthetic counters: it must converge, respect every
 * bound, back off when a change does not help, and release memory when a
 * cache only holds it. Linked statically so the internal symbol is there. */
#include <string.h>

#include "check.h"
#include "../src/learner.h"

static hk_learn_bounds_t B = {
  .target_hit_large = 0.9, .step_large = 8, .min_large = 2, .max_large = 64,
  .min_large_mb = 4, .max_large_mb = 256,
  .target_hit_purge = 0.9, .min_purge_ms = 50, .max_purge_ms = 8000,
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

  CHECK(log_lines > 0);
  return check_done("test_learner");
}
