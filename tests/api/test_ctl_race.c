/* test_ctl_race — knobs changed at run time while threads allocate.
 *
 *   test_ctl_race [threads] [seconds-ish rounds]
 *
 * Worker threads allocate and free through hak_* (so that the TSan build,
 * which keeps its own malloc, runs it: tests/system/sanitize.sh), freeing a share
 * of their blocks on other threads and pausing now and then in a system
 * call (so that a background purge thread, when on, works on their heaps);
 * one thread meanwhile flips every knob settable at run time (purge delay,
 * cache caps, heap spare, stats, learner) and runs the actions. Every
 * block's contents are checked before it is freed. Run it with
 * HAKMEM_BACKGROUND_PURGE=1 HAKMEM_PURGE_DELAY_MS=1 to race the purge
 * thread too. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#define SLOTS 512
#define XFER 64

static atomic_int stop;
static int rounds = 3000;

/* a hand-off ring between workers: cross-thread frees */
static _Atomic(uintptr_t) ring[XFER];

static size_t pick_size(uint64_t *r) {
  *r = *r * 6364136223846793005ULL + 1442695040888963407ULL;
  unsigned k = (unsigned)(*r >> 33) % 100;
  if (k < 70) return 16 + (*r >> 40) % 1008;           /* small */
  if (k < 95) return 1024 + (*r >> 40) % (31 * 1024);  /* mid */
  return 33 * 1024 + (*r >> 40) % (2 << 20);           /* spans */
}

static void fill(unsigned char *p, size_t n, unsigned char v) {
  p[0] = v;
  p[n - 1] = v;
  if (n > 64) p[n / 2] = v;
}
static int intact(const unsigned char *p, size_t n, unsigned char v) {
  return p[0] == v && p[n - 1] == v && (n <= 64 || p[n / 2] == v);
}

typedef struct { void *p; size_t n; unsigned char v; } slot_t;

static void *worker(void *arg) {
  uint64_t r = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
  slot_t s[SLOTS] = {{0}};
  for (int round = 0; round < rounds; round++) {
    for (int i = 0; i < SLOTS; i++) {
      slot_t *e = &s[(r >> 20) % SLOTS];
      r = r * 6364136223846793005ULL + 1;
      if (e->p) {
        CHECKF(intact(e->p, e->n, e->v), "block %p (%zu B) changed", e->p, e->n);
        if ((r >> 50) % 8 == 0) {
          /* hand it to another thread to free */
          uintptr_t old = atomic_exchange(&ring[(r >> 30) % XFER], (uintptr_t)e->p);
          if (old) hak_free((void *)old);
        } else {
          hak_free(e->p);
        }
        e->p = NULL;
      } else {
        e->n = pick_size(&r);
        e->p = hak_malloc(e->n);
        CHECK_FATAL(e->p);
        e->v = (unsigned char)(r >> 56);
        fill(e->p, e->n, e->v);
      }
    }
    if (round % 50 == 49) {
      /* free most, then pause in the kernel: emptied slabs for the purge */
      for (int i = 0; i < SLOTS; i += 1 + (i & 1)) {
        if (!s[i].p) continue;
        CHECK(intact(s[i].p, s[i].n, s[i].v));
        hak_free(s[i].p);
        s[i].p = NULL;
      }
      struct timespec t = {0, 2000000};
      nanosleep(&t, NULL);
    }
  }
  for (int i = 0; i < SLOTS; i++)
    if (s[i].p) {
      CHECK(intact(s[i].p, s[i].n, s[i].v));
      hak_free(s[i].p);
    }
  return NULL;
}

static void *flipper(void *arg) {
  (void)arg;
  uint64_t r = 12345;
  struct hak_stats st;
  long v;
  while (!atomic_load(&stop)) {
    r = r * 6364136223846793005ULL + 1;
    switch ((r >> 33) % 11) {
    case 0: CHECK(hak_ctl_set("PURGE_DELAY_MS", (long)((r >> 40) % 20)) == 0); break;
    case 1: CHECK(hak_ctl_set("SS_CACHE", (long)((r >> 40) % 8)) == 0); break;
    case 2: CHECK(hak_ctl_set("LARGE_CACHE_MB", (long)((r >> 40) % 64)) == 0); break;
    case 3: CHECK(hak_ctl_set("LARGE_CACHE_COUNT", (long)((r >> 40) % 32)) == 0); break;
    case 4: CHECK(hak_ctl_set("HEAP_SPARE", (long)((r >> 40) % 3)) == 0); break;
    case 5: CHECK(hak_ctl_set("STATS", (long)((r >> 40) % 2)) == 0); break;
    case 6: CHECK(hak_ctl_set("LEARN", (long)((r >> 40) % 2)) == 0); break;
    case 7: CHECK(hak_ctl("purge") == 0); break;
    case 8: CHECK(hak_ctl("flush") == 0); break;
    case 9: CHECK(hak_stats_get(&st) == 0); break;
    case 10: CHECK(hak_ctl_get("PURGE_DELAY_MS", &v) == 0 && v >= 0); break;
    }
    struct timespec t = {0, 200000};
    nanosleep(&t, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) rounds = atoi(argv[2]);
  if (nthreads < 1 || nthreads > 256 || rounds < 1) {
    fprintf(stderr, "usage: test_ctl_race [threads 1-256] [rounds]\n");
    return 2;
  }
  pthread_t f, *t = calloc((size_t)nthreads, sizeof *t);
  CHECK_FATAL(t);
  CHECK_FATAL(pthread_create(&f, NULL, flipper, NULL) == 0);
  for (int i = 0; i < nthreads; i++)
    CHECK_FATAL(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) == 0);
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  atomic_store(&stop, 1);
  pthread_join(f, NULL);
  for (int i = 0; i < XFER; i++) {
    uintptr_t p = atomic_exchange(&ring[i], 0);
    if (p) hak_free((void *)p);
  }
  free(t);
  return check_done("ctl_race");
}
