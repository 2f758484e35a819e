/* test_restart — a small-class slab whose every block came back starts over
 * and carves again in address order (hk_slab_take_local in src/mem/slab.h).
 * Each round allocates N blocks of one size, fills each with its own
 * pattern, checks that no two overlap and that every pattern survived, then
 * frees them all in random order: by another thread (remote frees) in even
 * rounds, by the owner thread in odd ones. Round 0's slabs are fresh and
 * went full, so another thread's first free into each is handed to the
 * owner (hk_heap_notify) and the rest wait on the slab's remote list: the
 * slab must start over all the same. From the second round on, the
 * blocks must come back mostly in ascending address order, one block apart:
 * without the restart they would come back in the shuffled order of the
 * frees (measured: 11-316 of 19999 in order without it, 87-94% with).
 * The secure build shuffles every carve batch; this test is for the
 * default and debug builds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hakmem.h"

enum { N = 20000, SIZE = 40, ROUNDS = 6 };  /* about 15 slabs */

static unsigned char *blk[N];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void shuffle(void) {
  for (int i = N - 1; i > 0; i--) {
    int j = (int)(next_rand() % (uint64_t)(i + 1));
    unsigned char *t = blk[i]; blk[i] = blk[j]; blk[j] = t;
  }
}

static void free_all(void) {
  for (int i = 0; i < N; i++) free(blk[i]);
}

static void *remote_free_all(void *arg) {
  (void)arg;
  free_all();
  return NULL;
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

/* A fresh slab's first malloc carves one batch of 4 KiB. Before,
 * pop_as_cur's restart took the fresh slab for an emptied one and carved
 * it again at twice the batch: the page after the first was written too
 * (every class of every program). 960 B blocks: four in the first page.
 * Not judged where superslabs are on huge pages (all resident). */
static void fresh_slab_one_batch(void) {
  unsigned char *p = malloc(900);  /* class 960 B: nothing took one yet */
  CHECK_FATAL(p != NULL);
  p[0] = 1;
  struct hak_stats s;
  hak_stats_read(&s, sizeof s);
  if (s.thp == 2 || ((uintptr_t)p & 4095) != 0) {
    printf("fresh slab: not judged (%s)\n", s.thp == 2 ? "superslabs on huge pages" : "block not at a page start");
  } else {
    size_t next = check_resident_pages(p + 4096, 4096);
    printf("fresh slab: the page after its first is %s\n", next ? "resident" : "untouched");
    CHECKF(next == 0, "a fresh slab's first malloc wrote the page after its first batch (carved twice)");
  }
  free(p);
}

int main(void) {
  static uintptr_t sorted[N];
  fresh_slab_one_batch();
  for (int round = 0; round < ROUNDS; round++) {
    long stepped = 0;
    for (int i = 0; i < N; i++) {
      blk[i] = malloc(SIZE);
      CHECK_FATAL(blk[i] != NULL);
      memset(blk[i], (i * 7 + round) & 0xff, SIZE);
      if (i > 0 && blk[i] - blk[i - 1] > 0 && blk[i] - blk[i - 1] <= 64) stepped++;
    }
    for (int i = 0; i < N; i++) sorted[i] = (uintptr_t)blk[i];
    qsort(sorted, N, sizeof sorted[0], cmp_ptr);
    long overlaps = 0, bad = 0;
    for (int i = 1; i < N; i++)
      if (sorted[i - 1] + SIZE > sorted[i]) overlaps++;
    for (int i = 0; i < N; i++)
      for (int k = 0; k < SIZE; k++)
        if (blk[i][k] != (unsigned char)((i * 7 + round) & 0xff)) { bad++; break; }
    CHECKF(overlaps == 0, "round %d: %ld overlapping live blocks", round, overlaps);
    CHECKF(bad == 0, "round %d: %ld blocks lost their contents", round, bad);
    if (round > 0) {
      printf("round %d: %ld of %d blocks follow their predecessor in address order\n", round,
             stepped, N - 1);
      /* most neighbours in allocation order are one block apart, ascending
       * (not all: the slab that was current when the frees began still has
       * a block out when its list runs dry, so it hands out its freed
       * blocks in list order) */
      CHECKF(stepped >= N * 3 / 4, "round %d (after %s frees): only %ld of %d blocks follow "
             "their predecessor in address order", round, round % 2 ? "remote" : "owner",
             stepped, N - 1);
    }
    shuffle();
    if (round % 2 == 1) {
      free_all();
    } else {
      pthread_t t;
      CHECK_FATAL(pthread_create(&t, NULL, remote_free_all, NULL) == 0);
      pthread_join(t, NULL);
    }
  }
  return check_done("test_restart");
}
