/* test_purge — memory that is no longer used goes back to the OS.
 *
 * run_tests.sh runs it with HAKMEM_PURGE_DELAY_MS=0 ("purge as soon as
 * unused"), so that no step depends on the clock.
 *
 *   A. main allocates ~400 MiB (large 1 MiB blocks, mid 8 KiB blocks, tiny
 *      100 B blocks), touches every page, frees everything, calls
 *      malloc_trim(0): RSS must come back to within SLACK of the baseline.
 *   B. 4 threads each allocate and touch ~64 MiB, free it and exit (their
 *      heaps are handed over); main then frees a little and calls
 *      malloc_trim(0): RSS must again be within SLACK of the baseline.
 *   C. same as A without malloc_trim: with a zero purge delay the freed
 *      memory must be purged by the allocator itself, at the latest when
 *      main goes on allocating and freeing (slow paths run), or by the
 *      purge thread beside them (polled up to 2 s).
 * SLACK = 64 MiB: caches of a few superslabs / large blocks are allowed to
 * stay resident; the ~400 MiB that was touched must not.
 *
 *   D. (`test_purge mapcache`, with HAKMEM_LARGE_CACHE_MB of 512 or more
 *      and HAKMEM_PURGE_DELAY_MS=50) blocks past the span tier's 128 MiB
 *      have mappings of their own, which a free caches: two cached
 *      mappings, one purge delay later, are purged by the clock (taken off
 *      the cache, purged with its lock dropped, cached again: large.c,
 *      purge_and_recache) while a second thread takes and gives back a
 *      third, bigger one; they stay cached, their pages go, and a malloc of the
 *      same size gets one back reading zero and writable.
 *
 *   E. (`test_purge remote`, with HAKMEM_BACKGROUND_PURGE=0: only the trim
 *      may give anything back) main fills 48 MiB in three sizes (120 B,
 *      1,000 B, 4,000 B, interleaved), frees one block in 64 itself (its
 *      slabs become partial), and a consumer thread frees all the others
 *      but one in 1,000, checking each block's bytes first. A remote free
 *      into a slab that is not full only joins the slab's remote list;
 *      main's malloc_trim(0) must collect those lists and give the emptied
 *      slabs back: RSS within the kept blocks + SLACK_REMOTE of the
 *      baseline, the kept blocks intact. `test_purge remote_active` (with
 *      HAKMEM_PURGE_DELAY_MS=100) calls no trim: main goes on taking and
 *      freeing blocks of a fourth size, and its own purge clock must
 *      collect those lists and give the slabs back within 3 s (GUARD_MS:
 *      8 s with no knob set, the default purge delay's 5 s and 3 more). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"
#include "block_set.h"

#define SLACK (64 * 1024) /* KiB */


static void *thread_main(void *arg) {
  (void)arg;
  set_t s = alloc_set(32, 24, 8);
  free_set(&s);
  return NULL;
}

static void churn(void) {
  for (int r = 0; r < 200; r++) {
    void *a = malloc(MiB + (size_t)r * 4096), *b = malloc(8 * KiB), *c = malloc(100);
    free(a), free(b), free(c);
  }
}

#define MAP_BLOCK ((size_t)130 << 20)
#define TAKER_BLOCK ((size_t)300 << 20)  /* no cached 130 MiB mapping serves it */
static volatile int taker_stop, taker_rounds;
static void *taker(void *arg) {
  (void)arg;
  for (; !taker_stop; taker_rounds++) {
    unsigned char *p = malloc(TAKER_BLOCK);
    if (!p) break;
    p[0] = 1;
    p[TAKER_BLOCK - 1] = 2;
    free(p);
  }
  return NULL;
}

static void mapcache(void) {
  struct hak_stats st;
  unsigned char *a = malloc(MAP_BLOCK), *b = malloc(MAP_BLOCK);
  CHECK_FATAL(a && b);
  for (size_t o = 0; o < MAP_BLOCK; o += 4096) a[o] = b[o] = 7;
  /* the taker's mapping first: with none cached that fits it, it would
   * reshape one of these two (hk_large_cache_take_nearest) */
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, taker, NULL) == 0);
  while (taker_rounds < 2) usleep(1000);
  long full = rss_kib();
  free(a);
  free(b);
  CHECK(hak_stats_get(&st) == 0);
  CHECKF(st.large_cached_bytes >= 2 * MAP_BLOCK, "%zu bytes cached after two %zu-byte mappings were freed",
         (size_t)st.large_cached_bytes, MAP_BLOCK);
  /* the clock runs from the slow paths: a span block's free, past the
   * delay, for up to 3 s (a hang guard) */
  long now = full;
  for (int tries = 0; tries < 300 && now > full - 200 * 1024; tries++) {
    usleep(10000);
    free(malloc(64 << 10));
    now = rss_kib();
  }
  taker_stop = 1;
  pthread_join(t, NULL);
  /* a mapping is off the cache while it is purged, and the purge thread
   * may be purging these two still: RSS fell as its madvise went. A malloc
   * then took the taker's mapping (CI, under load). Wait until the taker's
   * and both of these are cached (up to 3 s, a hang guard). */
  for (int tries = 0; tries < 300; tries++) {
    CHECK(hak_stats_get(&st) == 0);
    if (st.large_cached_bytes >= 2 * MAP_BLOCK + TAKER_BLOCK) break;
    usleep(10000);
  }
  fprintf(stderr, "D: %ld KiB with two mappings touched, %ld KiB after the clock; %zu bytes cached\n", full, now,
          (size_t)st.large_cached_bytes);
  CHECKF(now <= full - 200 * 1024, "two cached mappings not purged: %ld KiB, %ld KiB before", now, full);
  CHECKF(st.large_cached_bytes >= 2 * MAP_BLOCK + TAKER_BLOCK,
         "%zu bytes cached after the purge (the two and the taker's not all cached again)",
         (size_t)st.large_cached_bytes);
  unsigned char *c = malloc(MAP_BLOCK);
  CHECK_FATAL(c);
  CHECKF(c == a || c == b, "malloc(%zu) = %p, not a cached mapping (%p, %p)", MAP_BLOCK, (void *)c, (void *)a,
         (void *)b);
  size_t nonzero = 0;
  for (size_t o = 0; o < MAP_BLOCK; o += 4096) nonzero += c[o] != 0;
  CHECKF(nonzero == 0, "%zu pages of a purged mapping not zero", nonzero);
  memset(c, 3, MAP_BLOCK);
  free(c);
}

#define SLACK_REMOTE (16 * 1024) /* KiB */
#define REMOTE_MIB 48
static const size_t remote_sizes[3] = {120, 1000, 4000};
static void **remote_p;
static size_t remote_n;

static unsigned char remote_byte(size_t i) { return (unsigned char)(i * 7 + 1); }
static int remote_kept(size_t i) { return i % 1000 == 0; }
static int remote_own(size_t i) { return i % 64 == 1; }

static int remote_intact(size_t i) {
  const unsigned char *b = remote_p[i];
  size_t n = remote_sizes[i % 3];
  return b[0] == remote_byte(i) && b[n / 2] == remote_byte(i) && b[n - 1] == remote_byte(i);
}

static void *consumer(void *arg) {
  size_t *bad = arg;
  for (size_t i = 0; i < remote_n; i++) {
    if (remote_kept(i) || remote_own(i)) continue;
    *bad += !remote_intact(i);
    free(remote_p[i]);
  }
  return NULL;
}

/* E's owner, active: 20,000 blocks of 48 B taken and freed, a class of
 * its own, so that its slow paths run the purge clock */
static void churn_small(void) {
  static void *q[20000];
  for (size_t k = 0; k < 20000; k++) CHECK_FATAL((q[k] = malloc(48)) != NULL);
  for (size_t k = 0; k < 20000; k++) free(q[k]);
}

static void remote(int active) {
  remote_n = 3 * (REMOTE_MIB * MiB / (remote_sizes[0] + remote_sizes[1] + remote_sizes[2]));
  remote_p = malloc(remote_n * sizeof *remote_p);
  CHECK_FATAL(remote_p);
  long base = rss_kib();
  size_t live = 0;
  for (size_t i = 0; i < remote_n; i++) {
    remote_p[i] = malloc(remote_sizes[i % 3]);
    CHECK_FATAL(remote_p[i]);
    memset(remote_p[i], remote_byte(i), remote_sizes[i % 3]);
    if (remote_kept(i)) live += remote_sizes[i % 3];
  }
  long peak = rss_kib();
  for (size_t i = 0; i < remote_n; i++)
    if (remote_own(i)) free(remote_p[i]);
  size_t bad = 0;
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, consumer, &bad) == 0);
  pthread_join(t, NULL);
  CHECKF(bad == 0, "%zu blocks changed before the consumer freed them", bad);
  long before = rss_kib(), after;
  long goal = base + (long)(live / KiB) + SLACK_REMOTE;
  const char *how = "after trim";
  if (active) {  /* the owner's purge clock alone, for up to GUARD_MS (3 s: a hang guard) */
    how = "while the owner ran";
    const char *g = getenv("GUARD_MS");
    long guard = g ? atol(g) : 3000, t0 = now_ms();
    do {
      churn_small();
      sleep_ms(1);
      after = rss_kib();
    } while (after > goal && now_ms() - t0 < guard);
    fprintf(stderr, "E: %ld ms of the owner's churn\n", (long)(now_ms() - t0));
  } else {
    malloc_trim(0);
    after = rss_kib();
  }
  fprintf(stderr, "E: base %ld KiB, peak %ld KiB, after the remote frees %ld KiB, %s %ld KiB (goal %ld)\n", base,
          peak, before, how, after, goal);
  CHECKF(peak > base + (REMOTE_MIB * 3 / 4) * 1024, "the allocations did not raise RSS (%ld -> %ld KiB)", base, peak);
  CHECKF(after <= goal, "blocks another thread freed stay resident %s: %ld KiB, goal %ld KiB", how, after, goal);
  for (size_t i = 0; i < remote_n; i += 1000) {
    CHECKF(remote_intact(i), "kept block %zu changed", i);
    free(remote_p[i]);
  }
  free(remote_p);
}

int main(int argc, char **argv) {
  if (argc > 1 && strncmp(argv[1], "remote", 6) == 0) {
    remote(strcmp(argv[1], "remote_active") == 0);
    return check_done(argv[1]);
  }
  if (argc > 1 && strcmp(argv[1], "mapcache") == 0) {
    mapcache();
    return check_done("test_purge mapcache");
  }
  const char *d = getenv("HAKMEM_PURGE_DELAY_MS");
  if (!d || strcmp(d, "0") != 0)
    fprintf(stderr, "note: HAKMEM_PURGE_DELAY_MS is not 0; phase C may see a delay\n");
  churn();
  long base = rss_kib();

  set_t s = alloc_set(256, 128, 32);
  long peak = rss_kib();
  free_set(&s);
  int t = malloc_trim(0);
  CHECKF(t == 0 || t == 1, "malloc_trim(0) = %d", t);
  long after_a = rss_kib();
  fprintf(stderr, "A: base %ld KiB, peak %ld KiB, after free+trim %ld KiB\n", base, peak, after_a);
  CHECKF(peak > base + 300 * 1024, "the allocations did not raise RSS (%ld -> %ld KiB)", base, peak);
  CHECKF(after_a <= base + SLACK, "after free + malloc_trim RSS %ld KiB, baseline %ld KiB", after_a, base);

  pthread_t th[4];
  for (int i = 0; i < 4; i++) CHECK_FATAL(pthread_create(&th[i], NULL, thread_main, NULL) == 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  long peak_b = rss_kib();
  churn();
  malloc_trim(0);
  long after_b = rss_kib();
  fprintf(stderr, "B: after 4 threads (256 MiB touched) %ld KiB, after trim %ld KiB\n", peak_b, after_b);
  CHECKF(after_b <= base + SLACK, "memory of exited threads stays resident: %ld KiB, baseline %ld KiB", after_b, base);

  s = alloc_set(256, 128, 32);
  long peak_c = rss_kib();
  free_set(&s);
  /* with the purge thread running (HAKMEM_BACKGROUND_PURGE=auto starts it
   * here), a slow path's pass skips while the thread's pass runs, which
   * gives it back a moment later: churn again for up to 2 s (a hang guard) */
  long after_c = 0;
  for (int tries = 0; tries < 200; tries++) {
    churn();
    after_c = rss_kib();
    if (after_c <= base + SLACK) break;
    usleep(10000);
  }
  fprintf(stderr, "C: peak %ld KiB, after free (no trim) + churn %ld KiB\n", peak_c, after_c);
  CHECKF(after_c <= base + SLACK, "with HAKMEM_PURGE_DELAY_MS=0, freed memory stays resident: %ld KiB, baseline %ld KiB",
         after_c, base);
  return check_done("test_purge");
}
