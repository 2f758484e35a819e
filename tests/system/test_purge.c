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
 * stay resident; the ~400 MiB that was touched must not. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
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

int main(void) {
  const char *d = getenv("HAKMEM_PURGE_DELAY_MS");
  if (!d || strcmp(d, "0") != 0)
    fprintf(stderr, "note: HAKMEM_PURGE_DELAY_MS is not 0; phase C may see a delay\n");
  churn();
  long base = check_rss_kib();

  set_t s = alloc_set(256, 128, 32);
  long peak = check_rss_kib();
  free_set(&s);
  int t = malloc_trim(0);
  CHECKF(t == 0 || t == 1, "malloc_trim(0) = %d", t);
  long after_a = check_rss_kib();
  fprintf(stderr, "A: base %ld KiB, peak %ld KiB, after free+trim %ld KiB\n", base, peak, after_a);
  CHECKF(peak > base + 300 * 1024, "the allocations did not raise RSS (%ld -> %ld KiB)", base, peak);
  CHECKF(after_a <= base + SLACK, "after free + malloc_trim RSS %ld KiB, baseline %ld KiB", after_a, base);

  pthread_t th[4];
  for (int i = 0; i < 4; i++) CHECK_FATAL(pthread_create(&th[i], NULL, thread_main, NULL) == 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  long peak_b = check_rss_kib();
  churn();
  malloc_trim(0);
  long after_b = check_rss_kib();
  fprintf(stderr, "B: after 4 threads (256 MiB touched) %ld KiB, after trim %ld KiB\n", peak_b, after_b);
  CHECKF(after_b <= base + SLACK, "memory of exited threads stays resident: %ld KiB, baseline %ld KiB", after_b, base);

  s = alloc_set(256, 128, 32);
  long peak_c = check_rss_kib();
  free_set(&s);
  /* with the purge thread running (HAKMEM_BACKGROUND_PURGE=auto starts it
   * here), a slow path's pass skips while the thread's pass runs, which
   * gives it back a moment later: churn again for up to 2 s (a hang guard) */
  long after_c = 0;
  for (int tries = 0; tries < 200; tries++) {
    churn();
    after_c = check_rss_kib();
    if (after_c <= base + SLACK) break;
    usleep(10000);
  }
  fprintf(stderr, "C: peak %ld KiB, after free (no trim) + churn %ld KiB\n", peak_c, after_c);
  CHECKF(after_c <= base + SLACK, "with HAKMEM_PURGE_DELAY_MS=0, freed memory stays resident: %ld KiB, baseline %ld KiB",
         after_c, base);
  return check_done("test_purge");
}
