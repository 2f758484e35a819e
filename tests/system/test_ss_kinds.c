/* test_ss_kinds — a cached superslab serves the other kind, and its guard
 * MiB follows (issue 42).
 *
 * With measure guard (the secure build) a small superslab's second MiB is
 * PROT_NONE, so a stray write 1 MiB past a small block faults; a mid
 * superslab uses its whole 2 MiB. The superslab cache hands an empty
 * superslab to either kind, so each switch must open or close that MiB:
 *
 *   1. a thread fills small superslabs with 64-byte blocks, frees them all
 *      and exits: they go to the cache, empty;
 *   2. a thread takes 16 KiB blocks, writing every byte, until one lies
 *      past the first MiB of a superslab of step 1 (small -> mid: a closed
 *      MiB would fault here), frees them and exits;
 *   3. a thread takes 64-byte blocks until one lies in a superslab that
 *      step 2 used past its first MiB (mid -> small).
 *
 * Checked: every block's contents; the mapping at 1 MiB of every superslab
 * seen: with the guard (found at the first small superslab) closed in the
 * small ones ("---p", or a guard marker on every page: /proc/self/pagemap)
 * and writable in the mid ones, without it writable in all;
 * after step 3, with the guard, none of the closed MiB's pages resident
 * (what the mid blocks wrote there was dropped). argv[1] "guard" or "plain"
 * says which the library must have (a library that never closed the MiB
 * would pass as one without the measure). The knobs are read before
 * main: without HAKMEM_SS_CACHE the test runs itself again with a cache
 * big enough, no purge and no guarded sampling. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#define SS ((uintptr_t)2 << 20)
#define HALF ((uintptr_t)1 << 20)
#define SMALL 64
#define MID 16384
#define MAXB 200000
#define MAXSS 64

static void *blk[MAXB];
static uintptr_t small1[MAXSS], mid2[MAXSS];  /* step 1's superslabs; step 2's used past 1 MiB */
static size_t nsmall1, nmid2;
static int guard = -1;  /* the guard MiB: unknown, off, on */

static uintptr_t ss_of(const void *p) { return (uintptr_t)p & ~(SS - 1); }
static int in(const uintptr_t *v, size_t n, uintptr_t x) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}
static void add(uintptr_t *v, size_t *n, uintptr_t x) {
  if (!in(v, *n, x) && *n < MAXSS) v[(*n)++] = x;
}

/* the permissions of the mapping holding a, "" if none */
static void perms_at(uintptr_t a, char out[5]) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  out[0] = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char p[5];
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && a >= lo && a < hi) {
      memcpy(out, p, 5);
      break;
    }
  }
  if (f) fclose(f);
}

/* of the n pages from a, how many carry a guard marker (MADV_GUARD_INSTALL:
 * the mapping stays writable, the page faults): bit 58 of their
 * /proc/self/pagemap entries (Linux 6.14 on); 0 if it cannot be read */
static size_t markers_at(uintptr_t a, size_t n) {
  static uint64_t e[HALF / 4096];
  int fd = open("/proc/self/pagemap", O_RDONLY);
  size_t got = 0, m = 0;
  if (fd >= 0 && n <= sizeof e / sizeof e[0]) {
    ssize_t r = pread(fd, e, n * sizeof e[0], (off_t)(a / 4096 * sizeof e[0]));
    got = r > 0 ? (size_t)r / sizeof e[0] : 0;
  }
  if (fd >= 0) close(fd);
  for (size_t i = 0; i < got; i++) m += e[i] >> 58 & 1;
  return m;
}

/* the MiB at 1 MiB of superslab ss, as a superslab of that kind must have
 * it: closed is PROT_NONE, or a guard marker on every page of it */
static void check_half(uintptr_t ss, int small) {
  char p[5];
  perms_at(ss + HALF, p);
  size_t marked = markers_at(ss + HALF, HALF / 4096);
  int closed = strcmp(p, "---p") == 0 || marked == HALF / 4096;
  /* open: writable, no marker but on its last page (the superslab's own guard) */
  if (!closed && marked > 1) CHECKF(0, "superslab %#lx: %zu of its second MiB's pages are guards", (unsigned long)ss, marked);
  if (guard < 0 && small) guard = closed;
  if (guard == 1 && small) CHECKF(closed, "small superslab %#lx: its second MiB is %s, not a guard", (unsigned long)ss, p);
  else CHECKF(!closed && p[0] == 'r' && p[1] == 'w', "%s superslab %#lx: its second MiB is %s, not open",
              small ? "small" : "mid", (unsigned long)ss, p);
}

/* blk[*n] = a new block of `size` bytes, every byte *n * mul + add (the
 * pattern check_and_free reads back); ++*n */
static unsigned char *alloc_filled(size_t *n, size_t size, unsigned mul, unsigned add) {
  unsigned char *b = malloc(size);
  CHECK_FATAL(b != NULL);
  memset(b, (unsigned char)(*n * mul + add), size);
  blk[(*n)++] = b;
  return b;
}

/* blk[0..n): each block of `size` bytes still holds byte i * mul + add
 * (read every `stride` bytes from its start), then freed */
static void check_and_free(size_t n, size_t size, size_t stride, unsigned mul, unsigned add) {
  for (size_t i = 0; i < n; i++) {
    unsigned char *b = blk[i];
    for (size_t k = 0; k < size; k += stride)
      if (b[k] != (unsigned char)(i * mul + add)) { CHECKF(0, "block %zu of %zu bytes overwritten", i, size); break; }
    free(b);
  }
}

static void *step1(void *arg) {
  (void)arg;
  size_t n = 0;
  while (n < MAXB && nsmall1 < 3) {  /* three superslabs' worth */
    unsigned char *b = alloc_filled(&n, SMALL, 7, 1);
    if (!in(small1, nsmall1, ss_of(b))) {
      add(small1, &nsmall1, ss_of(b));
      check_half(ss_of(b), 1);
    }
  }
  check_and_free(n, SMALL, 1, 7, 1);
  return NULL;
}

static void *step2(void *arg) {
  (void)arg;
  size_t n = 0;
  int reused_past_half = 0;
  uintptr_t seen[MAXSS];
  size_t nseen = 0;
  while (n < 4096 && !reused_past_half) {
    unsigned char *b = alloc_filled(&n, MID, 13, 5);  /* every byte: a closed MiB faults */
    uintptr_t ss = ss_of(b);
    if (!in(seen, nseen, ss)) {
      add(seen, &nseen, ss);
      check_half(ss, 0);
    }
    if ((uintptr_t)b + MID > ss + HALF) {
      add(mid2, &nmid2, ss);
      if (in(small1, nsmall1, ss)) reused_past_half = 1;
    }
  }
  CHECKF(reused_past_half, "no superslab of step 1 was used past its first MiB by mid blocks (%zu blocks)", n);
  check_and_free(n, MID, 61, 13, 5);
  return NULL;
}

static void *step3(void *arg) {
  (void)arg;
  size_t n = 0;
  uintptr_t hit = 0;
  while (n < MAXB && !hit) {
    unsigned char *b = alloc_filled(&n, SMALL, 3, 2);
    if (in(mid2, nmid2, ss_of(b))) hit = ss_of(b);
  }
  CHECKF(hit != 0, "no superslab of step 2 served small blocks again (%zu blocks)", n);
  if (hit) {
    check_half(hit, 1);
    if (guard == 1) {  /* what the mid blocks wrote there is gone */
      size_t resident = check_resident_pages((void *)(hit + HALF), HALF - 4096);
      CHECKF(resident == 0, "%zu pages of the closed MiB still resident", resident);
    }
  }
  check_and_free(n, SMALL, SMALL - 1, 3, 2);  /* its first and last bytes */
  return NULL;
}

static void run(void *(*fn)(void *)) {
  pthread_t t;
  CHECK_FATAL(pthread_create(&t, NULL, fn, NULL) == 0);
  CHECK_FATAL(pthread_join(t, NULL) == 0);
}

/* `test_ss_kinds mappings`: a million live 64-byte blocks (79 small
 * superslabs in the secure build, 31 in the default one) add fewer
 * mappings than half a mapping a superslab. With
 * their guards closed by PROT_NONE each secure superslab was three to five
 * mappings, and past vm.max_map_count's 65,530 the guards silently went
 * missing; guard markers split nothing (HAKMEM_GUARD_MARKERS). */
static void mappings(void) {
  enum { N = 1000000 };
  struct hak_stats s0, s1;
  CHECK(hak_stats_get(&s0) == 0);
  size_t before = check_map_count();
  unsigned char **b = malloc(N * sizeof *b);
  CHECK_FATAL(b != NULL);
  for (size_t i = 0; i < N; i++) {
    b[i] = malloc(64);
    CHECK_FATAL(b[i] != NULL);
    b[i][0] = (unsigned char)i;
  }
  size_t after = check_map_count();
  CHECK(hak_stats_get(&s1) == 0);
  size_t ss = s1.superslabs - s0.superslabs, bad = 0;
  for (size_t i = 0; i < N; i++) {
    bad += b[i][0] != (unsigned char)i;
    free(b[i]);
  }
  free(b);
  CHECKF(bad == 0, "%zu of %d blocks overwritten", bad, N);
  CHECKF(ss >= 16, "a million 64-byte blocks took only %zu superslabs", ss);
  CHECKF(after - before < ss / 2, "%zu superslabs added %zu mappings", ss, after - before);
  printf("test_ss_kinds mappings: %zu superslabs, %zu mappings more\n", ss, after - before);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "mappings") == 0) {
    mappings();
    return check_done("test_ss_kinds mappings");
  }
  int want = argc > 1 ? strcmp(argv[1], "guard") == 0 : -1;
  if (!getenv("HAKMEM_SS_CACHE")) {  /* the knobs are read before main */
    const char *env[] = {
      "HAKMEM_SS_CACHE", "64",
      "HAKMEM_PURGE_DELAY_MS", "600000",
      /* every block in a superslab: a sampled one lies in the guarded pool,
       * whose chunks are no superslab (docs/SECURITY.md) */
      "HAKMEM_GUARDED_RATE", "0",
      NULL };
    return check_exec_self(argv, env);
  }
  /* main's own superslabs first, kept live: it takes nothing from the cache */
  void *keep_small = malloc(SMALL), *keep_mid = malloc(MID);
  run(step1);
  run(step2);
  run(step3);
  free(keep_small);
  free(keep_mid);
  if (want >= 0) CHECKF(guard == want, "the guard MiB is %s, this library must have it %s", guard == 1 ? "on" : "off",
                        want ? "on" : "off");
  printf("test_ss_kinds: guard MiB %s; %zu small superslabs, %zu used past 1 MiB by mid blocks\n",
         guard == 1 ? "on" : "off", nsmall1, nmid2);
  return check_done("test_ss_kinds");
}
