/* test_pages — the page layer under big blocks (src/pal/os.c, src/backend/span.c,
 * docs/ARCHITECTURE.md "Pages"): huge pages, faults, purges outside the lock.
 *
 *   A. calloc's fresh pages are faulted in at once: a 4 MiB calloc read
 *      page by page before it is written takes at most one fault per huge
 *      page (none when populated), not a zero-page fault and a copy per
 *      4 KiB (2048 without it, with HAKMEM_THP=never);
 *   B. span arenas are advised huge pages (HAKMEM_THP spans or always, or
 *      auto under the system's `madvise` mode where no free page is
 *      reported to a hypervisor): an 8 MiB block written whole is backed
 *      by huge pages (hak_stats huge_bytes); with HAKMEM_THP=never, or auto
 *      where free pages are reported, none is (checked where the system's
 *      mode is `madvise`);
 *   C. with huge pages, the purge clock gives back whole huge pages only
 *      (HAKMEM_PURGE_DELAY_MS=0): the bytes madvised when a 6 MiB block
 *      beside a live one is freed are a multiple of 2 MiB, and the live
 *      block's bytes are intact;
 *   D. four threads allocate, fill, check and free 32 KiB - 2 MiB blocks
 *      (calloc'd ones checked zero) while every free purges (run with
 *      HAKMEM_PURGE_DELAY_MS=0 HAKMEM_LARGE_CACHE_MB=0): a range madvised
 *      after another thread got it back reads zeros where its pattern was.
 *   E. huge or plain (span_thp.c): big blocks touched at one page each, freed,
 *      bring the running share of touched chunks (hak_stats thp_density)
 *      under 500 per mille, and the next blocks go to arenas without huge
 *      pages (thp_plain_blocks grows); D then runs there; big blocks
 *      written whole bring it back over 600 and blocks go to huge-page
 *      arenas again, backed by huge pages (under the system's `madvise`).
 *      Under HAKMEM_THP=always no block goes plain; under never nothing
 *      is sampled. A block grown in place across chunks keeps its bytes.
 * `test_pages stress` runs D alone (the torture configurations). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "hakmem.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static struct hak_stats snap(void) {
  static struct hak_stats s;  /* large: not on the stack of every caller */
  hak_stats_read(&s, sizeof s);
  return s;
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

static const char *thp_system(void) {
  static char word[16];
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char buf[128] = "";
  if (f) {
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
  }
  char *b = strchr(buf, '['), *e = b ? strchr(b, ']') : NULL;
  if (b && e && e - b - 1 < (long)sizeof word) memcpy(word, b + 1, (size_t)(e - b - 1));
  return word;
}

static bool knob_is(const char *want) {
  const char *v = getenv("HAKMEM_THP");
  return strcmp(v && *v ? v : "auto", want) == 0;
}

/* Free page reporting to a hypervisor (order 0-10 reported; unset reads -1
 * as 4294967295): HAKMEM_THP=auto then advises no huge page unless the
 * system's mode is `always`. */
static bool page_reporting(void) {
  FILE *f = fopen("/sys/module/page_reporting/parameters/page_reporting_order", "r");
  unsigned long v = 99;
  if (f) {
    if (fscanf(f, "%lu", &v) != 1) v = 99;
    fclose(f);
  }
  return v <= 10;
}
static bool auto_says_none(void) {
  return knob_is("auto") && page_reporting() && strcmp(thp_system(), "always") != 0;
}

/* A: faults of reading, then writing, a fresh calloc'd block */
static void test_calloc_faults(void) {
  size_t n = 4 * MiB;
  unsigned long pop0 = snap().populate_calls;
  unsigned char *p = calloc(1, n);
  CHECK_FATAL(p != NULL);
  long f0 = minflt();
  unsigned sum = 0;
  for (size_t o = 0; o < n; o += 4096) sum += p[o];
  for (size_t o = 0; o < n; o += 4096) p[o] = 1;
  long faults = minflt() - f0;
  CHECK(sum == 0);
  /* populated: 0; huge pages alone: a huge zero page and a huge page each */
  CHECKF(faults <= (long)(2 * (n >> 21) + 8), "%ld faults reading then writing 4 MiB calloc'd", faults);
  CHECKF(snap().populate_calls > pop0, "populate calls %lu -> %lu", pop0, snap().populate_calls);
  free(p);
}

/* B: an 8 MiB block is backed by huge pages when the arenas are advised */
static void test_huge_backed(void) {
  const char *sys = thp_system();
  size_t n = 8 * MiB;
  unsigned char *p = malloc(n);
  CHECK_FATAL(p != NULL);
  memset(p, 0x5a, n);
  struct hak_stats s = snap();
  if (strcmp(sys, "never") == 0) {
    printf("  B: system THP mode never: nothing to check\n");
  } else if (knob_is("never") || auto_says_none()) {
    CHECKF(s.thp == 0, "HAKMEM_THP=%s: thp %d", knob_is("never") ? "never" : "auto with free page reporting", s.thp);
    if (strcmp(sys, "madvise") == 0) CHECKF(s.huge_bytes == 0, "no huge page advised: %zu huge bytes", s.huge_bytes);
  } else {
    CHECKF(s.thp >= 1, "thp %d under system mode %s", s.thp, sys);
    /* an 8 MiB block holds at least 3 whole huge pages; compaction may fail
     * for some, not for all of them on a machine with free memory */
    CHECKF(s.huge_bytes >= 2 * MiB, "%zu bytes huge-page backed (system %s)", s.huge_bytes, sys);
  }
  free(p);
}

/* C: the purge clock gives back whole huge pages; a live neighbour is kept */
static void test_huge_purge(void) {
  struct hak_stats s = snap();
  if (s.thp == 0) {
    printf("  C: no huge pages for spans: nothing to check\n");
    return;
  }
  size_t big = 6 * MiB - 12 * KiB, small = 200 * KiB;
  unsigned char *x = malloc(big), *y = malloc(small);
  CHECK_FATAL(x && y);
  memset(x, 0x11, big);
  memset(y, 0x22, small);
  size_t before = snap().madvise_bytes;
  free(x);  /* HAKMEM_PURGE_DELAY_MS=0: this free runs the purge clock */
  size_t purged = snap().madvise_bytes - before;
  CHECKF(purged % (2 * MiB) == 0, "%zu bytes purged: not whole huge pages", purged);
  bool intact = true;
  for (size_t o = 0; o < small; o++) intact &= y[o] == 0x22;
  CHECK(intact);
  free(y);
}

/* E: the running share of touched chunks sends blocks to plain arenas and back */
#define BIG 24
static bool adaptive(void) {
  return strcmp(thp_system(), "never") != 0 && (knob_is("spans") || (knob_is("auto") && !auto_says_none()));
}

static void touch_blocks(size_t n, bool whole) {
  unsigned char *p[BIG];
  for (unsigned k = 0; k < BIG; k++) {  /* all live at once: each gets fresh chunks */
    p[k] = malloc(n);
    CHECK_FATAL(p[k] != NULL);
    if (whole) memset(p[k], (int)(k + 1), n);
    else p[k][0] = p[k][n - 1] = (unsigned char)(k + 1);
  }
  for (unsigned k = 0; k < BIG; k++) {
    CHECKF(p[k][0] == (unsigned char)(k + 1) && p[k][n - 1] == (unsigned char)(k + 1) &&
           (!whole || p[k][n / 2] == (unsigned char)(k + 1)), "block %u lost its bytes", k);
    free(p[k]);
  }
}

static void test_adapt_sparse(void) {
  struct hak_stats a = snap();
  touch_blocks(16 * MiB, false);
  struct hak_stats b = snap();
  unsigned char *p = malloc(12 * MiB);  /* placed by what the samples said */
  CHECK_FATAL(p != NULL);
  p[0] = 7;
  struct hak_stats c = snap();
  printf("  E: sparse: %zu samples, density %d, plain blocks %zu -> %zu\n", b.thp_samples - a.thp_samples,
         b.thp_density, a.thp_plain_blocks, c.thp_plain_blocks);
  if (adaptive()) {
    CHECKF(b.thp_samples - a.thp_samples >= BIG / 2, "%zu samples of %d sparse blocks", b.thp_samples - a.thp_samples, BIG);
    CHECKF(b.thp_density < 500, "density %d after sparse blocks", b.thp_density);
    CHECKF(c.thp_plain_blocks > b.thp_plain_blocks, "a block after sparse ones placed with huge pages (%zu plain)",
           c.thp_plain_blocks);
  } else {
    CHECKF(c.thp_plain_blocks == a.thp_plain_blocks, "HAKMEM_THP %s: %zu blocks placed plain",
           getenv("HAKMEM_THP") ? getenv("HAKMEM_THP") : "auto", c.thp_plain_blocks - a.thp_plain_blocks);
    if (strcmp(thp_system(), "never") == 0 || knob_is("never") || auto_says_none())
      CHECKF(b.thp_samples == a.thp_samples, "no huge pages, yet %zu samples", b.thp_samples - a.thp_samples);
  }
  /* a block grown in place across chunks keeps its bytes */
  unsigned char *q = malloc(1 * MiB);
  CHECK_FATAL(q != NULL);
  memset(q, 0x3c, 1 * MiB);
  for (size_t n = 3 * MiB / 2; n <= 24 * MiB; n += n / 2) {
    unsigned char *r = realloc(q, n);
    CHECK_FATAL(r != NULL);
    q = r;
    q[n - 1] = 0x3c;
  }
  bool ok = true;
  for (size_t o = 0; o < 1 * MiB; o += 512) ok &= q[o] == 0x3c;
  CHECK(ok);
  free(q);
  free(p);
}

static void test_adapt_dense(void) {
  touch_blocks(8 * MiB, true);
  struct hak_stats b = snap();
  unsigned char *p = malloc(8 * MiB);
  CHECK_FATAL(p != NULL);
  memset(p, 0x6b, 8 * MiB);
  struct hak_stats c = snap();
  printf("  E: dense: density %d, plain blocks %zu -> %zu, huge-page backed %zu\n", b.thp_density,
         b.thp_plain_blocks, c.thp_plain_blocks, c.huge_bytes);
  if (adaptive()) {
    CHECKF(b.thp_density > 600, "density %d after dense blocks", b.thp_density);
    CHECKF(c.thp_plain_blocks == b.thp_plain_blocks, "a block after dense ones placed plain");
    if (strcmp(thp_system(), "madvise") == 0) CHECKF(c.huge_bytes >= 2 * MiB, "%zu bytes huge-page backed", c.huge_bytes);
  }
  free(p);
}

/* D: threads reuse big blocks while every free purges */
#define THREADS 4
#define SLOTS 24
static unsigned iterations = 1500;

static void *churn(void *arg) {
  uint64_t r = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 7;
  unsigned char *p[SLOTS] = { 0 };
  size_t sz[SLOTS] = { 0 };
  unsigned char tag[SLOTS] = { 0 };
  for (unsigned it = 0; it < iterations; it++) {
    r ^= r << 13; r ^= r >> 7; r ^= r << 17;
    unsigned k = (unsigned)(r % SLOTS);
    if (p[k]) {
      bool ok = true;
      for (size_t o = 0; o < sz[k]; o += 1024) ok &= p[k][o] == tag[k];
      ok &= p[k][sz[k] - 1] == tag[k];
      CHECKF(ok, "block %p of %zu bytes lost its pattern", (void *)p[k], sz[k]);
      free(p[k]);
      p[k] = NULL;
      continue;
    }
    sz[k] = 32 * KiB + (size_t)((r >> 20) % (2 * MiB));
    tag[k] = (unsigned char)((r >> 40) | 1);
    if (r & (1u << 9)) {
      p[k] = calloc(1, sz[k]);
      CHECK_FATAL(p[k] != NULL);
      bool zero = true;
      for (size_t o = 0; o < sz[k]; o += 1024) zero &= p[k][o] == 0;
      CHECKF(zero, "calloc'd block %p of %zu bytes not zero", (void *)p[k], sz[k]);
    } else {
      p[k] = malloc(sz[k]);
      CHECK_FATAL(p[k] != NULL);
    }
    memset(p[k], tag[k], sz[k]);
  }
  for (unsigned k = 0; k < SLOTS; k++) free(p[k]);
  return NULL;
}

static void test_threads(void) {
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) CHECK_FATAL(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0);
  for (unsigned i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "stress") == 0) {
    iterations = 2000;
    test_threads();
    return check_done("test_pages stress");
  }
  printf("test_pages: system THP mode %s, HAKMEM_THP %s\n", thp_system(),
         getenv("HAKMEM_THP") ? getenv("HAKMEM_THP") : "(unset)");
  test_calloc_faults();
  test_huge_backed();
  test_huge_purge();
  test_adapt_sparse();
  test_threads();  /* in arenas without huge pages, where E made them so */
  test_adapt_dense();
  return check_done("test_pages");
}
