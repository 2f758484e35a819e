/* The learned purge windows (issue 61, item 2; src/policy/learner.c,
 * "purge windows"): memory the program takes again within the window
 * stays, memory it does not goes back.
 *
 *   test_reuse learn   bursts of BURST_MB of small blocks, all freed, each
 *                      followed by a pause of three purge delays with a
 *                      little work (one malloc/free every 5 ms). The first
 *                      pauses purge the burst's memory and the next burst
 *                      faults it in again; the learner sees the reuse
 *                      distance and lengthens the slab tier's window, so
 *                      the last pauses purge (madvise) less than an
 *                      eighth of a burst. After the last burst the
 *                      program stays idle: its memory, no longer reused,
 *                      must go back (RSS within start + 32 MiB).
 *   test_reuse fixed   the same under HAKMEM_LEARN_PURGE=0: every pause
 *                      purges the burst (the check above can fail).
 *   test_reuse handoff learn's, with each burst freed by another thread
 *                      while main waits: main's slabs come back whole
 *                      while it is stopped, which the purge thread's
 *                      short clock (HAKMEM_STOPPED_PURGE_MS) gives back
 *                      at once; under the learned windows it must not
 *                      (the next burst takes them again)
 *
 * The figures are counts (bytes madvised per pause, from hak_stats_read)
 * and RSS; the RSS wait is bounded by the window in force + 10 s, a hang
 * guard, not a speed requirement. Run with a short purge delay
 * (HAKMEM_PURGE_DELAY_MS=100, tests/CMakeLists.txt). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../include/hakmem.h"
#include "waiting.h"

#define BURSTS 10
#define CHECKED 3   /* the last pauses, judged */

static size_t madvised(void) {
  struct hak_stats s;
  memset(&s, 0, sizeof s);
  hak_stats_read(&s, sizeof s);
  return s.madvise_bytes;
}

static long delay_ms(void) {
  long v = 1000;
  if (hak_ctl_get("HAKMEM_PURGE_DELAY_MS", &v) != 0) v = 1000;
  return v;
}

/* handoff: the helper frees the burst main hands it */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned char **hand;
static size_t hand_n;
static int hand_state;  /* 0 idle, 1 handed over, 2 freed, 3 corrupted, 4 stop */

static void *helper(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (hand_state != 1 && hand_state != 4) pthread_cond_wait(&cv, &mu);
    if (hand_state == 4) break;
    int st = 2;
    for (size_t i = 0; i < hand_n; i++) {
      if (hand[i][0] != (unsigned char)(i & 0xff)) st = 3;
      free(hand[i]);
    }
    hand_state = st;
    pthread_cond_broadcast(&cv);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

static bool free_by_helper(unsigned char **obj, size_t n) {
  pthread_mutex_lock(&mu);
  hand = obj, hand_n = n, hand_state = 1;
  pthread_cond_broadcast(&cv);
  while (hand_state == 1) pthread_cond_wait(&cv, &mu);
  bool ok = hand_state == 2;
  hand_state = 0;
  pthread_mutex_unlock(&mu);
  return ok;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "learn";
  bool learn = strcmp(mode, "fixed") != 0, handoff = strcmp(mode, "handoff") == 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t th;
  if (handoff && pthread_create(&th, NULL, helper, NULL) != 0) { printf("FAIL: pthread_create\n"); return 1; }
  hak_stats_read(NULL, 0);
  long floor = delay_ms();  /* the knob's delay, before any window moved it */
  size_t base = ((size_t)rss_kib() << 10);
  size_t burst = (size_t)(getenv("BURST_MB") ? atoi(getenv("BURST_MB")) : 48) << 20;
  size_t n = burst / 280;  /* 272 B on average */
  unsigned char **obj = calloc(n, sizeof *obj);
  if (!obj) return 1;
  uint64_t x = 88172645463325252ull;
  size_t late = 0;
  for (int b = 0; b < BURSTS; b++) {
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      size_t sz = 32 + (size_t)(x % 481);
      obj[i] = malloc(sz);
      if (!obj[i]) { printf("FAIL: malloc(%zu)\n", sz); return 1; }
      memset(obj[i], (int)(i & 0xff), sz);
    }
    if (handoff) {
      if (!free_by_helper(obj, n)) { printf("FAIL: a block corrupted\n"); return 1; }
    } else {
      for (size_t i = 0; i < n; i++) {
        if (obj[i][0] != (unsigned char)(i & 0xff)) { printf("FAIL: block %zu corrupted\n", i); return 1; }
        free(obj[i]);
      }
    }
    /* the pause: three of the knob's delays, a little work every 5 ms */
    size_t before = madvised();
    uint64_t until = now_ms() + 3 * (uint64_t)floor;
    while (now_ms() < until) {
      volatile unsigned char *q = malloc(64);
      if (q) q[0] = 1;
      free((void *)q);
      sleep_ms(5);
    }
    size_t purged = madvised() - before;
    printf("burst %d: %zu KiB purged in the pause (window %ld ms)\n", b, purged >> 10, delay_ms());
    if (b >= BURSTS - CHECKED) late += purged;
  }
  free(obj);
  if (handoff) {
    pthread_mutex_lock(&mu);
    hand_state = 4;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
  }
  size_t bound = burst / 8 * CHECKED;
  printf("%s: the last %d pauses purged %zu KiB (bound %zu KiB)\n", mode, CHECKED, late >> 10, bound >> 10);
  int failed = 0;
  if (learn && late > bound) {
    printf("FAIL: memory reused within the window was purged and faulted in again\n");
    failed++;
  }
  if (!learn && late <= bound) {
    printf("FAIL: with HAKMEM_LEARN_PURGE=0 the pauses kept the bursts' memory\n");
    failed++;
  }
  /* idle now: what is no longer reused goes back */
  size_t goal = base + ((size_t)32 << 20);
  uint64_t t0 = now_ms(), guard = (uint64_t)delay_ms() * 2 + 10000;
  for (;;) {
    size_t rss = ((size_t)rss_kib() << 10);
    if (rss <= goal) {
      printf("idle: RSS %zu KiB within %zu KiB after %llu ms\n", rss >> 10, goal >> 10,
             (unsigned long long)(now_ms() - t0));
      break;
    }
    if (now_ms() - t0 > guard) {
      printf("FAIL: idle: RSS %zu KiB still over %zu KiB after %llu ms\n", rss >> 10, goal >> 10,
             (unsigned long long)(now_ms() - t0));
      failed++;
      break;
    }
    sleep_ms(50);
  }
  printf("test_reuse %s: %d passed, %d failed\n", mode, 2 - failed, failed);
  return failed != 0;
}
