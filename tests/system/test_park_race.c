/* The purge thread parks the free pages of an idle owner's partial slabs
 * (HAKMEM_PARK_IDLE, src/policy/bg.c): it holds each slab (its frees go to
 * the remote list) and rewrites its lists while the owner may wake at any
 * moment. This test wakes it all the time: main keeps blocks of every
 * small size scattered over its slabs, then, round after round, sleeps a
 * few ms (the purge thread, on a 1 ms purge delay, finds it idle and
 * stopped), wakes and frees some kept blocks straight into those slabs,
 * mallocs new ones (taking parked pages back), and checks the contents of
 * a slice of what it keeps; a second thread frees main's blocks meanwhile
 * (remote frees into held slabs). Every kept block's bytes are checked at
 * the end. Run with HAKMEM_BACKGROUND_PURGE=on HAKMEM_PURGE_DELAY_MS=1;
 * the debug build checks the heap's lists at its slow paths too.
 * It also checks that parking happened: with one block in thirty kept at
 * the end, RSS asleep comes down to the pages those blocks touch + 48 MiB.
 * `test_park_race heap`: the same with a first-class heap's blocks;
 * `test_park_race exit`: an exited thread's slabs (below);
 * `test_park_race busy`: main computes instead of sleeping between rounds
 * (never blocked: the purge thread's proof is then main's CPU time, and
 * main runs, its fast paths included, beside every park and release;
 * every tenth pause is long enough for its slabs to be held). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hakmem.h"
#include "waiting.h"

#define NBLOCKS 200000
#define ROUNDS 600
#define RANGE 3000

static unsigned char *blk[NBLOCKS];
static size_t len[NBLOCKS];
static unsigned seed_of[NBLOCKS];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *handed[4096];
static unsigned nhanded;
static int done;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static hak_heap_t *heap;  /* mode heap: main's blocks come from a first-class heap */
static int busy;          /* mode busy: main spins where it would sleep */

/* main's pause between rounds: asleep, or (busy) computing */
static void pause_us(long us) {
  if (busy) spin_us(us);
  else sleep_us(us);
}

static void fill(size_t i) {
  /* small classes mostly, mid ones (over 1 KiB) one time in eight */
  len[i] = next_rand() % 8 ? 16 + (size_t)(next_rand() % 1000) : 1100 + (size_t)(next_rand() % 7000);
  blk[i] = heap ? hak_heap_malloc(heap, len[i]) : malloc(len[i]);
  if (!blk[i]) { printf("FAIL: malloc(%zu)\n", len[i]); exit(1); }
  seed_of[i] = (unsigned)next_rand();
  for (size_t k = 0; k < len[i]; k++) blk[i][k] = (unsigned char)(seed_of[i] + k * 7);
}

static int check(size_t i) {
  if (!blk[i]) return 0;
  for (size_t k = 0; k < len[i]; k++)
    if (blk[i][k] != (unsigned char)(seed_of[i] + k * 7)) {
      printf("FAIL: block %zu (%zu bytes) corrupted at byte %zu\n", i, len[i], k);
      return 1;
    }
  return 0;
}

/* every block filled, then one in three kept, scattered: every slab keeps some */
static void fill_keep_third(void) {
  for (size_t i = 0; i < NBLOCKS; i++) fill(i);
  for (size_t i = 0; i < NBLOCKS; i++)
    if (i % 3 != 0) {
      free(blk[i]);
      blk[i] = NULL;
    }
}

/* frees what main hands it, from another thread: remote frees into main's
 * slabs, held or not */
static void *remote_freer(void *arg) {
  (void)arg;
  for (;;) {
    void *batch[4096];
    unsigned n;
    pthread_mutex_lock(&mu);
    n = nhanded;
    memcpy(batch, handed, n * sizeof *batch);
    nhanded = 0;
    int stop = done;
    pthread_mutex_unlock(&mu);
    for (unsigned i = 0; i < n; i++) free(batch[i]);
    if (stop && n == 0) return NULL;
    sleep_us(300);
  }
}

/* the pages the blocks still held touch, in KiB */
static size_t kept_pages_kib(void) {
  static uintptr_t pg[3 * NBLOCKS];
  size_t n = 0;
  for (size_t i = 0; i < NBLOCKS; i++)
    if (blk[i]) pages_add(pg, &n, 3 * NBLOCKS, blk[i], len[i]);
  return pages_kib(pg, n);
}

/* exit: the blocks' thread fills, keeps one in three and exits; its
 * superslabs are abandoned, and the purge thread parks their free pages a
 * purge delay later (superslab.c's park hook) while main frees kept
 * blocks into them (remote frees, no owner) between short sleeps; then
 * a new thread adopts them, takes blocks of every size (parked pages come
 * back) and writes and checks them; every kept block is checked all along */
static void *exit_filler(void *arg) {
  (void)arg;
  fill_keep_third();
  return NULL;
}

static void *exit_adopter(void *arg) {
  int *bad = arg;
  static unsigned char *mine[60000];
  static size_t mlen[60000];
  for (size_t i = 0; i < 60000; i++) {
    mlen[i] = 16 + (size_t)(i * 2654435761u % 3000);
    mine[i] = malloc(mlen[i]);
    if (!mine[i]) { *bad = 1; return NULL; }
    memset(mine[i], (int)(i & 0xff), mlen[i]);
  }
  for (size_t i = 0; i < 60000; i++) {
    for (size_t k = 0; k < mlen[i]; k += 7)
      if (mine[i][k] != (unsigned char)(i & 0xff)) {
        printf("FAIL: the adopter's block %zu corrupted at byte %zu\n", i, k);
        *bad = 1;
        break;
      }
    free(mine[i]);
  }
  return NULL;
}

static int exit_mode(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, exit_filler, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  int bad = 0;
  for (int r = 0; r < 150 && !bad; r++) {
    sleep_us(2000 + (long)(next_rand() % 3000));
    for (int j = 0; j < 300; j++) {
      size_t i = (size_t)(next_rand() % (NBLOCKS / 3)) * 3;
      if (!blk[i] || i % 27 == 0) continue;
      if (check(i)) { bad = 1; break; }
      free(blk[i]);
      blk[i] = NULL;
    }
    size_t slice = (size_t)(r % 20) * (NBLOCKS / 20);
    for (size_t i = slice; i < slice + NBLOCKS / 20 && !bad; i++) bad = check(i);
  }
  printf("exit: RSS %ld KiB before the adopter\n", rss_kib());
  if (!bad && (pthread_create(&t, NULL, exit_adopter, &bad) != 0 || pthread_join(t, NULL) != 0)) return 1;
  for (size_t i = 0; i < NBLOCKS && !bad; i++) {
    bad = check(i);
    free(blk[i]);
  }
  if (bad) return 1;
  printf("test_park_race exit: 1 passed, 0 failed\n");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1 && strcmp(argv[1], "exit") == 0) return exit_mode();
  /* heap: the same with a first-class heap's blocks (hak_heap_malloc), each
   * free a remote one, parked under the heap's lock (heap_api.c) while the
   * frees of both threads race the park */
  if (argc > 1 && strcmp(argv[1], "heap") == 0 && !(heap = hak_heap_new())) return 1;
  busy = argc > 1 && strcmp(argv[1], "busy") == 0;
  size_t rss_start = rss_kib();
  fill_keep_third();
  pthread_t t;
  if (pthread_create(&t, NULL, remote_freer, NULL) != 0) return 1;
  int bad = 0;
  size_t prev = 0;
  for (int r = 0; r < ROUNDS && !bad; r++) {
    /* busy: every tenth pause 150 ms, past the 100 ms a running owner's
     * slabs must stay untouched before the purge thread holds them */
    pause_us(busy && r % 10 == 0 ? 150000 : 1000 + (long)(next_rand() % 2000));
    /* the moment it wakes, a burst of frees: first into the slabs of the
     * last round's range, which the purge thread may be parking right now
     * (the owner's free races the park: the hold sends it to the remote
     * list), then most of a new range's blocks, whose pages the next
     * sleep's park takes (a quarter of the frees handed to the other
     * thread: remote frees into held slabs) */
    size_t from = (size_t)(next_rand() % (NBLOCKS - RANGE));
    /* heap: a few blocks at once on waking, from the current slabs (the
     * heap's lock keeps the park from retiring them under this call) */
    for (int j = 0; heap && j < 200; j++) {
      size_t i = (size_t)(next_rand() % NBLOCKS);
      if (!blk[i]) fill(i);
    }
    for (int wave = 0; wave < 2; wave++) {
      size_t lo = wave == 0 ? prev : from;
      for (size_t i = lo; i < lo + RANGE; i++) {
        if (!blk[i] || (wave == 0 ? i % 14 == 0 : i % 7 == 0)) continue;
        if (i % 4 == 0) {
          pthread_mutex_lock(&mu);
          if (nhanded < 4096) {
            handed[nhanded++] = blk[i];
            blk[i] = NULL;
          }
          pthread_mutex_unlock(&mu);
        } else {
          free(blk[i]);
          blk[i] = NULL;
        }
      }
    }
    prev = from;
    /* every third round, new blocks (a slow path: parked pages come back) */
    if (r % 3 == 0)
      for (int j = 0; j < 3000; j++) {
        size_t i = (size_t)(next_rand() % NBLOCKS);
        if (!blk[i]) fill(i);
      }
    /* a slice of everything kept, checked each round */
    size_t slice = (size_t)(r % 20) * (NBLOCKS / 20);
    for (size_t i = slice; i < slice + NBLOCKS / 20 && !bad; i++) bad = check(i);
  }
  pthread_mutex_lock(&mu);
  done = 1;
  pthread_mutex_unlock(&mu);
  pthread_join(t, NULL);
  if (bad) return 1;
  /* all but one in thirty freed, then asleep: the free pages among the
   * kept blocks go back. The goal: RSS at the start, the pages the kept
   * blocks touch, and 48 MiB (the tables, current slabs, caches: without the
   * idle park it stayed at 134 MiB) */
  for (size_t i = 0; i < NBLOCKS; i++)
    if (i % 30 != 0 && blk[i]) {
      if (check(i)) return 1;
      free(blk[i]);
      blk[i] = NULL;
    }
  size_t goal = rss_start + kept_pages_kib() + 48 * 1024, rss = rss_kib();
  for (int k = 0; k < 100 && rss > goal; k++) {
    sleep_us(50000);
    rss = rss_kib();
  }
  printf("RSS asleep %zu KiB, goal %zu KiB (start %zu + kept blocks' pages + 48 MiB)\n", rss, goal, rss_start);
  for (size_t i = 0; i < NBLOCKS; i++) {
    if (check(i)) return 1;
    free(blk[i]);
  }
  if (rss > goal) {
    printf("FAIL: the free pages among the kept blocks did not go back while the program slept\n");
    return 1;
  }
  printf("test_park_race: 1 passed, 0 failed\n");
  return 0;
}
