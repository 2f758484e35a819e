/* The secure build's quarantine purged with the span locks dropped
 * (src/backend/span_guard.c, hk_quar_collect; issue 61 item 2): run with
 * LD_PRELOAD=libhakmem-secure.so, HAKMEM_PURGE_DELAY_MS=0 and the purge
 * thread on, so the clock purges quarantined blocks all the time while
 * four threads free span blocks (each free pushes one into its shard's
 * quarantine of 16, and the ring wraps onto blocks being purged) and
 * calloc them again. Every byte of a block is checked before its free,
 * and a calloc'd block must read zero: a page purged and unmarked in the
 * wrong order, or a block that left the quarantine while its purge ran,
 * shows as old bytes. Then fork() while the clock runs: the child frees
 * and allocates as well (a purge the parent was making is not copied),
 * and must exit. Counts, not timings: the purges are read from the stats
 * (madvise calls) to show the path ran. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../include/hakmem.h"

#define THREADS 4
#define SLOTS 24
#define ROUNDS 3000

static int failed;

static size_t size_of(uint64_t r) { return (size_t)(64 << 10) + (size_t)(r % (448u << 10)); }

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
  return *x;
}

static void work(unsigned seed, int rounds) {
  unsigned char *p[SLOTS] = { 0 };
  size_t sz[SLOTS] = { 0 };
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int r = 0; r < rounds; r++) {
    unsigned k = (unsigned)(next(&x) % SLOTS);
    if (p[k]) {
      unsigned char v = (unsigned char)(k + seed * 7 + 1);
      for (size_t i = 0; i < sz[k]; i += 512)
        if (p[k][i] != v) {
          fprintf(stderr, "FAIL: block %u (%zu bytes) byte %zu is %u, not %u\n", k, sz[k], i, p[k][i], v);
          __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
          break;
        }
      free(p[k]);
    }
    sz[k] = size_of(next(&x));
    p[k] = calloc(1, sz[k]);
    if (!p[k]) { fprintf(stderr, "FAIL: calloc(%zu)\n", sz[k]); __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED); return; }
    for (size_t i = 0; i < sz[k]; i += 512)
      if (p[k][i] != 0) {
        fprintf(stderr, "FAIL: calloc'd block of %zu bytes reads %u at byte %zu\n", sz[k], p[k][i], i);
        __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
        break;
      }
    memset(p[k], (int)(k + seed * 7 + 1), sz[k]);
  }
  for (unsigned k = 0; k < SLOTS; k++) free(p[k]);
}

static void *thread_main(void *arg) {
  work((unsigned)(uintptr_t)arg, ROUNDS);
  return NULL;
}

int main(void) {
  struct hak_stats s0, s1;
  memset(&s0, 0, sizeof s0);
  memset(&s1, 0, sizeof s1);
  hak_stats_read(&s0, sizeof s0);
  pthread_t t[THREADS];
  for (unsigned i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)i);
  /* fork while the others free and the clock purges */
  for (int f = 0; f < 4; f++) {
    pid_t pid = fork();
    if (pid == 0) {
      work(100 + (unsigned)f, 200);
      _exit(failed ? 1 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "FAIL: fork child %d: status %d\n", f, st);
      failed++;
    }
  }
  for (unsigned i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  hak_stats_read(&s1, sizeof s1);
  printf("madvise calls %lu, lock waits %lu\n", s1.madvise_calls - s0.madvise_calls, s1.lock_waits - s0.lock_waits);
  if (s1.madvise_calls == s0.madvise_calls) {
    printf("FAIL: nothing was purged: the test does not test\n");
    failed++;
  }
  printf("test_quar_purge: %s\n", failed ? "FAILED" : "passed");
  return failed != 0;
}
