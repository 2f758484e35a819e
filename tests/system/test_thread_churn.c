/* test_thread_churn — thousands of short-lived threads; RSS must stay bounded.
 *
 *   test_thread_churn [threads=4000] [concurrent=8]
 *
 * Each thread allocates a few hundred blocks spread over many size classes
 * (tiny, mid, some large), frees most of them itself, frees some blocks left
 * behind by earlier (now dead) threads, and leaves some of its own in a
 * shared hand-off ring for later threads (or main) to free: blocks outlive
 * the thread that allocated them, and every thread touches many slabs.
 *
 * RSS bound. The live set is bounded by construction: the hand-off ring holds
 * at most RING blocks of <= 32 KiB (RING * 32 KiB = 32 MiB worst case, about
 * 8 MiB on average), each running thread holds < 2 MiB. So after warm-up
 * (the first WARM threads: every size class populated, glibc's thread-stack
 * cache full) RSS should plateau. We allow +64 MiB over the warm-up RSS,
 * or 2x it, whichever is larger. A heap that leaks the slabs of exited
 * threads leaks at least one slab per touched size class per thread: with
 * ~40 classes touched per thread and >= 3000 threads after warm-up that is
 * far above either bound (3000 threads * even 64 KiB = 187 MiB). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define RING 1024
#define PER_THREAD 300

static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  unsigned char *p;
  size_t n;
  unsigned char v;
} ring[RING];
static unsigned ring_pos;

static int check_block(unsigned char *p, size_t n, unsigned char v) {
  if (n == 0) return 1;
  if (p[0] != v || p[n - 1] != v || p[n / 2] != v) return 0;
  return 1;
}

static void ring_put(unsigned char *p, size_t n, unsigned char v) {
  pthread_mutex_lock(&ring_mu);
  unsigned i = ring_pos++ % RING;
  unsigned char *old = ring[i].p;
  size_t on = ring[i].n;
  unsigned char ov = ring[i].v;
  ring[i].p = p, ring[i].n = n, ring[i].v = v;
  pthread_mutex_unlock(&ring_mu);
  if (old) {
    CHECKF(check_block(old, on, ov), "hand-off block %p (%zu B) corrupted", (void *)old, on);
    free(old); /* allocated by another, probably dead, thread */
  }
}

static void *churn(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  unsigned char *mine[PER_THREAD];
  size_t sz[PER_THREAD];
  for (int i = 0; i < PER_THREAD; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n;
    if (i < 48) n = (size_t)16 << (i % 12) | (x % 16); /* walk many classes */
    else if (x % 100 < 90) n = 1 + x % 1024;
    else if (x % 100 < 99) n = 1025 + x % (31 * KiB);
    else n = 64 * KiB + x % (512 * KiB);
    mine[i] = malloc(n);
    CHECK_FATAL(mine[i]);
    sz[i] = n;
    memset(mine[i], (int)(i & 0xff), n);
  }
  for (int i = 0; i < PER_THREAD; i++) {
    CHECKF(check_block(mine[i], sz[i], (unsigned char)(i & 0xff)), "own block %d corrupted", i);
    if (i % 25 == 0 && sz[i] <= 32 * KiB)
      ring_put(mine[i], sz[i], (unsigned char)(i & 0xff));
    else
      free(mine[i]);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int total = argc > 1 ? atoi(argv[1]) : 4000;
  int conc = argc > 2 ? atoi(argv[2]) : 8;
  const int warm = total / 8;
  if (total < 16 || conc < 1 || conc > 256) {
    fprintf(stderr, "usage: %s [threads>=16] [concurrent]\n", argv[0]);
    return 2;
  }
  CHECK(hak_is_active() == 1);
  const int trace = getenv("HAKMEM_TEST_TRACE") != NULL; /* RSS every 1000 threads */
  pthread_t tid[256];
  long rss_warm = -1;
  int made = 0;
  while (made < total) {
    int k = 0;
    for (; k < conc && made < total; k++, made++) {
      int rc = pthread_create(&tid[k], NULL, churn, (void *)(uintptr_t)(made + 1));
      CHECK_FATAL(rc == 0);
    }
    for (int i = 0; i < k; i++) pthread_join(tid[i], NULL);
    if (rss_warm < 0 && made >= warm) rss_warm = rss_kib();
    if (trace && made % 1000 < (unsigned)k)
      fprintf(stderr, "  %6d threads: RSS %ld KiB\n", made, rss_kib());
  }
  long rss_end = rss_kib();
  long bound = rss_warm + 64 * 1024;
  if (bound < 2 * rss_warm) bound = 2 * rss_warm;
  fprintf(stderr, "test_thread_churn: %d threads, RSS after warm-up %ld KiB, at end %ld KiB, bound %ld KiB\n",
          total, rss_warm, rss_end, bound);
  CHECK(rss_warm > 0 && rss_end > 0);
  /* Address space: each hand-off block can keep one exited thread's
   * superslab mapped, the ring RING of them; beyond that (a few for main
   * and the cache) an exited thread's superslabs are adopted or unmapped.
   * (Under a 1 ms purge delay the abandoned ones once hid from adopters
   * at every purge tick: 3,000 mapped, +80 MiB RSS on a kernel that
   * maps no zero page.) */
  struct hak_stats st;
  CHECK(hak_stats_read(&st, sizeof st) > 0);
  fprintf(stderr, "test_thread_churn: %zu superslabs mapped (%zu abandoned)\n", st.superslabs,
          st.superslabs_abandoned);
  CHECKF(st.superslabs <= RING + 64, "%zu superslabs mapped, more than the ring's %d blocks hold",
         st.superslabs, RING);
  CHECKF(rss_end <= bound, "RSS grew from %ld KiB to %ld KiB over %d threads", rss_warm,
         rss_end, total - warm);
  /* everything left in the ring was allocated by dead threads */
  for (int i = 0; i < RING; i++)
    if (ring[i].p) {
      CHECK(check_block(ring[i].p, ring[i].n, ring[i].v));
      free(ring[i].p);
    }
  return check_done("test_thread_churn");
}
