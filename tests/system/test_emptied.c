/* Emptied slabs are reused before new pages (issue 61, item 3: the lru
 * row). A program frees every block of one class, then allocates blocks
 * of a larger class: the new blocks must land in the slabs the old class
 * emptied, whose pages are resident, not in slabs no class has used
 * (fresh pages faulted in while the emptied ones wait for the purge
 * epoch).
 *
 *   test_emptied small   256-byte blocks, then 512-byte ones (64 KiB slabs)
 *   test_emptied mid     2048-byte blocks, then 4096-byte ones (256 KiB
 *                        slabs; the mid cache off, so that the freed
 *                        blocks reach their slabs at once)
 *
 *   test_emptied kind    12 MiB of 256-byte blocks, all freed but one in
 *                        each superslab (so the heap keeps its superslabs,
 *                        most of their slabs unused and resident), then
 *                        8 MiB of 2048-byte ones: a small superslab's slabs
 *                        cannot serve a mid class, so the mid blocks take
 *                        fresh pages, and the kind swap must purge as many
 *                        of the small ones (heap_slabs.c): RSS may grow by
 *                        less than half the mid bytes (by all of them
 *                        without the swap)
 *
 *   test_emptied rounds  the same blocks of three small classes built
 *                        and freed six times, each round in another
 *                        order: from the second round on, no more pages
 *                        may be resident where the blocks lie than after
 *                        the first (HK_ROUND_SLACK: 2; none measured). Each class
 *                        refills slabs it emptied, and once it hopped
 *                        from one to the next, carving a batch in each,
 *                        and carved its last slab of the round before
 *                        to its end (hk_slab_room_resident, slab.h)
 *
 * 2 MiB of each. The check: at least three quarters of the new blocks lie
 * in an aligned window (the slab size) that held an old block. The purge
 * delay is a minute, so that the purge epoch cannot be what gives the
 * emptied slabs back; the background purge, guarded sampling and the
 * learned purge windows are off (knobs set by re-executing itself). The
 * 30 ms pause lets the heap's 10 ms clock come due; it is not a speed
 * requirement. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../check.h"

#define BYTES ((size_t)2 << 20)

static int cmp_u(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static int run(size_t old_size, size_t new_size, unsigned shift) {
  size_t n_old = BYTES / old_size, n_new = BYTES / new_size;
  unsigned char **old = malloc(n_old * sizeof *old);
  unsigned char **young = malloc(n_new * sizeof *young);
  uintptr_t *win = malloc(n_old * sizeof *win);
  CHECK(old && young && win);
  if (!old || !young || !win) return 1;
  for (size_t i = 0; i < n_old; i++) {
    old[i] = malloc(old_size);
    CHECK(old[i] != NULL);
    if (!old[i]) return 1;
    memset(old[i], 0xa5, old_size);
    win[i] = (uintptr_t)old[i] >> shift;
  }
  qsort(win, n_old, sizeof *win, cmp_u);
  for (size_t i = 0; i < n_old; i++) free(old[i]);
  struct timespec t = { 0, 30 * 1000000L };
  while (nanosleep(&t, &t) != 0) {
  }
  size_t inside = 0;
  for (size_t i = 0; i < n_new; i++) {
    young[i] = malloc(new_size);
    CHECK(young[i] != NULL);
    if (!young[i]) return 1;
    memset(young[i], 0x5a, new_size);
    uintptr_t w = (uintptr_t)young[i] >> shift;
    if (bsearch(&w, win, n_old, sizeof *win, cmp_u)) inside++;
  }
  printf("%zu-byte blocks after %zu-byte ones: %zu of %zu in emptied slabs\n",
         new_size, old_size, inside, n_new);
  CHECK(inside * 4 >= n_new * 3);
  for (size_t i = 0; i < n_new; i++) {
    for (size_t j = 0; j < new_size; j += 512) CHECK(young[i][j] == 0x5a);
    free(young[i]);
  }
  free(old);
  free(young);
  free(win);
  return 0;
}

/* kind: small blocks emptied but for one a superslab, then mid blocks */
static int run_kind(void) {
  /* 12 MiB of small blocks: over the four superslabs (8 MiB) of the other
   * kind a heap holds before it swaps */
  const size_t old_size = 256, new_size = 2048, old_bytes = (size_t)12 << 20, bytes = (size_t)8 << 20;
  size_t n_old = old_bytes / old_size, n_new = bytes / new_size;
  unsigned char **old = malloc(n_old * sizeof *old);
  unsigned char **young = malloc(n_new * sizeof *young);
  CHECK(old && young);
  if (!old || !young) return 1;
  for (size_t i = 0; i < n_old; i++) {
    old[i] = malloc(old_size);
    CHECK(old[i] != NULL);
    if (!old[i]) return 1;
    memset(old[i], 0xa5, old_size);
  }
  /* one survivor per 2 MiB window (a superslab): the first block seen there */
  uintptr_t kept_win[64];
  size_t nkept = 0;
  for (size_t i = 0; i < n_old; i++) {
    uintptr_t w = (uintptr_t)old[i] >> 21;
    bool seen = false;
    for (size_t k = 0; k < nkept; k++) seen |= kept_win[k] == w;
    if (!seen && nkept < 64) {
      kept_win[nkept++] = w;
      continue;
    }
    free(old[i]);
    old[i] = NULL;
  }
  struct timespec t = { 0, 30 * 1000000L };
  while (nanosleep(&t, &t) != 0) {
  }
  long before = rss_kib();
  for (size_t i = 0; i < n_new; i++) {
    young[i] = malloc(new_size);
    CHECK(young[i] != NULL);
    if (!young[i]) return 1;
    memset(young[i], 0x5a, new_size);
  }
  long after = rss_kib();
  printf("%zu superslabs kept by one 256-byte block each; RSS %ld KiB, then %ld KiB after %zu KiB "
         "of 2048-byte blocks\n", nkept, before, after, bytes >> 10);
  CHECKF(after - before < (long)(bytes >> 10) / 2, "RSS grew %ld KiB for %zu KiB of mid blocks",
         after - before, bytes >> 10);
  for (size_t i = 0; i < n_new; i++) {
    for (size_t j = 0; j < new_size; j += 512) CHECK(young[i][j] == 0x5a);
    free(young[i]);
  }
  for (size_t i = 0; i < n_old; i++)
    if (old[i]) {
      CHECK(old[i][0] == 0xa5 && old[i][old_size - 1] == 0xa5);
      free(old[i]);
    }
  free(old);
  free(young);
  return 0;
}

/* rounds: one round's blocks, their sizes in a shuffled order */
enum { ROUNDS = 6, R48 = 24000, R80 = 3000, R112 = 2000, RN = R48 + R80 + R112 };
#define HK_ROUND_SLACK 2  /* pages (none measured) */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static size_t rnd(size_t n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (size_t)(rng % n);
}
static void shuffle_sizes(uint16_t *a, size_t n) {
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = rnd(i + 1);
    uint16_t t = a[i]; a[i] = a[j]; a[j] = t;
  }
}
/* resident pages in [lo, hi) (page numbers) */
static size_t resident_pages(uintptr_t lo, uintptr_t hi) {
  static unsigned char vec[1 << 16];
  size_t n = 0;
  for (uintptr_t q = lo; q < hi; q += sizeof vec) {
    size_t k = hi - q < sizeof vec ? (size_t)(hi - q) : sizeof vec;
    CHECK(mincore((void *)(q << 12), k << 12, vec) == 0);
    for (size_t i = 0; i < k; i++) n += vec[i] & 1;
  }
  return n;
}
static int run_rounds(void) {
  static uint16_t sz[RN];
  static unsigned char *p[RN];
  for (size_t i = 0; i < RN; i++) sz[i] = i < R48 ? 48 : i < R48 + R80 ? 80 : 112;
  uintptr_t lo = UINTPTR_MAX, hi = 0;  /* page numbers: where every round's blocks lie */
  size_t first = 0, most = 0;
  for (int r = 0; r < ROUNDS; r++) {
    shuffle_sizes(sz, RN);
    for (size_t i = 0; i < RN; i++) {
      p[i] = malloc(sz[i]);
      CHECK(p[i] != NULL);
      if (!p[i]) return 1;
      memset(p[i], (int)(r * 16 + sz[i] / 16), sz[i]);
      /* whole 2 MiB windows (superslabs): a batch carved past the last
       * block handed out is resident too */
      uintptr_t a = (uintptr_t)p[i] >> 21 << 9, b = ((((uintptr_t)p[i] + sz[i] - 1) >> 21) + 1) << 9;
      if (a < lo) lo = a;
      if (b > hi) hi = b;
    }
    CHECK(hi - lo < ((size_t)64 << 8));  /* 64 MiB: one or two superslabs' blocks */
    size_t n = resident_pages(lo, hi);
    printf("round %d: %zu pages resident in the %zu MiB the blocks lie in\n", r, n, (size_t)(hi - lo) >> 8);
    if (r == 0) first = n;
    if (n > most) most = n;
    /* freed in another order than made: each slab empties at its own time */
    for (size_t i = RN - 1; i > 0; i--) {
      size_t j = rnd(i + 1);
      unsigned char *t = p[i]; p[i] = p[j]; p[j] = t;
      uint16_t u = sz[i]; sz[i] = sz[j]; sz[j] = u;
    }
    for (size_t i = 0; i < RN; i++) {
      CHECK(p[i][0] == (unsigned char)(r * 16 + sz[i] / 16) && p[i][sz[i] - 1] == p[i][0]);
      free(p[i]);
    }
  }
  printf("rounds 1-%d: at most %zu pages more than round 0\n", ROUNDS - 1, most - first);
  CHECKF(most - first <= HK_ROUND_SLACK, "%zu pages more resident than after round 0", most - first);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "small";
  if (!getenv("TEST_EMPTIED_SET")) {
    static const char *const env[] = {
      "TEST_EMPTIED_SET", "1",
      "HAKMEM_PURGE_DELAY_MS", "60000",
      "HAKMEM_BACKGROUND_PURGE", "off",
      "HAKMEM_GUARDED_RATE", "0",
      "HAKMEM_LEARN_PURGE", "0",
      "HAKMEM_MID_CACHE_KB", "0",
      NULL };
    return check_exec_self(argv, env);
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  if (strcmp(mode, "kind") == 0) run_kind();
  else if (strcmp(mode, "rounds") == 0) run_rounds();
  else if (strcmp(mode, "mid") == 0) run(2048, 4096, 18);
  else run(256, 512, 16);
  return check_done("test_emptied");
}
