/* test_park MODE — parked pages (HAKMEM_PARK_PAGES=1, src/mem/slab_park.h):
 * the free pages inside a slab that still holds live blocks go back to the
 * OS, and their blocks come back when the slab needs them.
 *
 *   scatter  for small and mid sizes: blocks allocated in a row, all freed
 *            but one in every 16 KiB (scattered survivors) and the last
 *            quarter; one of the row's slabs made its class's current one
 *            (blocks taken until one is the row's, then freed); malloc_trim
 *            parks. The pages between survivors must be gone (mincore),
 *            the current slab's too, the survivors intact. Under lowmem
 *            (HAKMEM_PARK_PAGES unset): blocks taken until one lies on such
 *            a page, which must bring back at most 2 of those pages (one
 *            carve batch, 4 KiB, not the whole slab's). Then as many blocks
 *            again, every one distinct from the others and the survivors,
 *            each filled and checked (the parked blocks came back once).
 *   empty    as scatter, then the survivors freed too: the slabs, holding
 *            only free and parked blocks, must be given back whole at the
 *            next trim (hak_stats_read's count of the class's slabs).
 *   idle     as empty, but the thread then sleeps instead of trimming
 *            (HAKMEM_BACKGROUND_PURGE=on): the purge thread must give
 *            those slabs back while the owner sleeps, within 3 s.
 *   threads  four threads, each freeing half of its neighbour's blocks
 *            (remote frees into slabs their owner parks meanwhile), then
 *            parking its own heap and allocating again, checked; 20 rounds.
 *   fork     parked, then fork: parent and child each take the blocks back
 *            and check them.
 *   churn    an LRU cache's shape once its sizes moved on: for a small
 *            and two mid sizes, 8 MiB of blocks, all but one in ten freed
 *            at random, then 40 replacements per survivor (a random
 *            survivor checked and freed, a new block of the size taken and
 *            filled). New blocks must go where most are live, so that the
 *            sparse slabs drain: after a trim the class's slabs
 *            (hak_stats_read) at most twice what the survivors fill, plus
 *            2. Handed each freed block back (the mid cache), a mid class
 *            kept every slab it had; taken from the first slab with freed
 *            blocks, it kept most.
 *   heap     a first-class heap (hak_heap_new) parked by its own purge
 *            clock, which its slow paths run (HAKMEM_PURGE_DELAY_MS=1):
 *            its pages between survivors gone, then hak_heap_stats must
 *            count the survivors alone, and the survivors intact.
 *
 * scatter and empty also check hak_stats_read's live blocks of each class
 * after the parking: the survivors alone (a parked block counts as out in
 * its slab, but it is free).
 *
 * Run with HAKMEM_PARK_PAGES=1 or HAKMEM_PROFILE=lowmem (its default;
 * tests/CMakeLists.txt); the checks of gone pages fail without it. Not for the secure build (its measures order the
 * free lists: nothing is parked there). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

static const size_t sizes[] = { 48, 64, 200, 1024, 2048, 4000, 12000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void fill(unsigned char *p, size_t size, uint32_t tag) {
  memcpy(p, &tag, sizeof tag);
  memset(p + sizeof tag, (int)(tag * 7u + 1u) & 0xff, size - sizeof tag);
}
static int intact(const unsigned char *p, size_t size, uint32_t tag) {
  uint32_t t;
  memcpy(&t, p, sizeof t);
  if (t != tag) return 0;
  unsigned char c = (unsigned char)((tag * 7u + 1u) & 0xff);
  for (size_t i = sizeof tag; i < size; i++)
    if (p[i] != c) return 0;
  return 1;
}
static int resident(const void *p) {
  unsigned char v = 0;
  if (mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) != 0) return -1;
  return v & 1;
}
/* The row of hak_stats_read's class table for blocks of bs bytes (zero
 * if none): its slabs in use and its live blocks (sampled guarded blocks,
 * which live outside the slabs, included) */
static struct hak_class_stats class_row(size_t bs) {
  struct hak_stats st;
  memset(&st, 0, sizeof st);
  hak_stats_read(&st, sizeof st);
  for (size_t c = 0; c < HAK_STATS_CLASSES; c++)
    if (st.classes[c].block_size == bs) return st.classes[c];
  struct hak_class_stats none;
  memset(&none, 0, sizeof none);
  return none;
}
static size_t class_slabs(size_t bs) { return class_row(bs).slabs; }
static size_t class_live(size_t bs) { return class_row(bs).live_blocks; }
static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

/* A row of blocks of one size, most freed. */
typedef struct {
  size_t size, bs, count, stride, keep;  /* bs: the block size (usable) */
  unsigned char **v;   /* live blocks (NULL: freed) */
  uintptr_t *addr;     /* where each one was */
} row_t;

static void row_make(row_t *r, size_t size, size_t bytes) {
  r->size = size;
  r->count = bytes / size;
  r->stride = 4 * 4096 / size < 4 ? 4 : 4 * 4096 / size;
  r->keep = r->count * 3 / 4;
  r->v = calloc(r->count, sizeof *r->v);
  r->addr = calloc(r->count, sizeof *r->addr);
  CHECK_FATAL(r->v && r->addr);
  for (size_t i = 0; i < r->count; i++) {
    r->v[i] = malloc(size);
    CHECK_FATAL(r->v[i] != NULL);
    r->addr[i] = (uintptr_t)r->v[i];
    fill(r->v[i], size, (uint32_t)i);
  }
  r->bs = malloc_usable_size(r->v[0]);
  for (size_t i = 0; i < r->keep; i++)
    if (i % r->stride) {
      free(r->v[i]);
      r->v[i] = NULL;
    }
}

#define MAX_PAGES 512  /* a row's 4 MiB, a page in every 16 KiB, at most */

/* The pages between survivors that freed blocks in a row cover whole, in
 * address order (into `out` unless NULL): how many. */
static size_t row_pages(const row_t *r, uintptr_t *out) {
  size_t n = 0;
  for (size_t i = r->stride / 2; i + r->stride < r->keep; i += r->stride) {
    size_t lo = i - r->stride / 2 + 1, hi = i + r->stride / 2 - 1;
    int row = 1;
    for (size_t j = lo; j < hi; j++) row &= r->addr[j + 1] == r->addr[j] + r->bs;
    if (!row) continue;  /* not one run of addresses: no page to be sure of */
    uintptr_t page = r->addr[i] & ~(uintptr_t)4095;
    if (page < r->addr[lo] || page + 4096 > r->addr[hi] + r->bs) continue;
    if (out && n < MAX_PAGES) out[n] = page;
    n++;
  }
  CHECK_FATAL(n <= MAX_PAGES);
  if (out) qsort(out, n, sizeof *out, cmp_ptr);
  return n;
}

/* Those pages: how many were looked at, how many are gone. */
static uintptr_t looked_at[MAX_PAGES];  /* (no malloc while pages are looked at) */

static void row_gone(const row_t *r, size_t *looked, size_t *gone) {
  size_t n = row_pages(r, looked_at);
  for (size_t k = 0; k < n; k++) *gone += resident((void *)looked_at[k]) == 0;
  *looked += n;
}

static size_t row_survivors(const row_t *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->count; i++) n += r->v[i] != NULL;
  return n;
}

static void row_check(const row_t *r) {
  for (size_t i = 0; i < r->count; i++)
    if (r->v[i]) CHECKF(intact(r->v[i], r->size, (uint32_t)i), "size %zu: survivor %zu changed", r->size, i);
}

/* As many blocks again as the row had: distinct from each other and from
 * the survivors, filled and checked; then everything freed. */
static void row_refill_and_free(row_t *r) {
  size_t n = r->count, live = 0;
  unsigned char **w = calloc(n, sizeof *w);
  uintptr_t *all = calloc(2 * n, sizeof *all);
  CHECK_FATAL(w && all);
  for (size_t i = 0; i < n; i++) {
    w[i] = malloc(r->size);
    CHECK_FATAL(w[i] != NULL);
    fill(w[i], r->size, 0x80000000u | (uint32_t)i);
    all[live++] = (uintptr_t)w[i];
  }
  for (size_t i = 0; i < r->count; i++)
    if (r->v[i]) all[live++] = (uintptr_t)r->v[i];
  qsort(all, live, sizeof *all, cmp_ptr);
  size_t overlaps = 0;
  for (size_t k = 0; k + 1 < live; k++) overlaps += all[k] + r->size > all[k + 1];
  CHECKF(overlaps == 0, "size %zu: %zu blocks overlap another live one", r->size, overlaps);
  for (size_t i = 0; i < n; i++)
    CHECKF(intact(w[i], r->size, 0x80000000u | (uint32_t)i), "size %zu: new block %zu changed", r->size, i);
  row_check(r);
  for (size_t i = 0; i < n; i++) free(w[i]);
  for (size_t i = 0; i < r->count; i++) free(r->v[i]);
  free(w);
  free(all);
  free(r->v);
  free(r->addr);
}

/* One of the row's slabs becomes its class's current slab, as one does
 * when the program (or a library it calls: glibc's stdio buffer for
 * /proc/self/maps, read at a thread's first stack walk) takes a block of
 * the class after the frees: blocks are taken until one comes from the
 * first half of the freed part (a mid class's cache holds the last frees
 * only), then freed again. A trim parks that slab's free pages too. */
static void row_slab_current(const row_t *r) {
  uintptr_t lo = r->addr[0], hi = r->addr[r->keep / 2];
  size_t n = 0, most = r->count + 4096;
  unsigned char **t = calloc(most, sizeof *t);
  CHECK_FATAL(t != NULL);
  int in_row = 0;
  while (!in_row && n < most) {
    t[n] = malloc(r->size);
    CHECK_FATAL(t[n] != NULL);
    in_row = (uintptr_t)t[n] >= lo && (uintptr_t)t[n] < hi;
    n++;
  }
  CHECKF(in_row, "size %zu: no block of the row's freed part came back in %zu mallocs", r->size, n);
  for (size_t k = 0; k < n; k++) free(t[k]);
  free(t);
}

enum { KEEP_ROWS, EMPTY_TRIM, EMPTY_IDLE };

/* Polls the class's slabs while the thread sleeps (the purge thread's
 * work: it releases a sleeping owner's emptied slabs) until at most
 * `most` are left, 3 s at most. */
static size_t slabs_after_sleep(size_t bs, size_t most) {
  size_t n = class_slabs(bs);
  for (int k = 0; k < 60 && n > most; k++) {
    usleep(50000);
    n = class_slabs(bs);
  }
  return n;
}

static int lowmem;  /* HAKMEM_PROFILE=lowmem, HAKMEM_PARK_PAGES unset: 4 KiB carve batches */

static void scatter(int empty) {
  row_t rows[NSIZES];
  size_t before_live[NSIZES], live[NSIZES];
  for (size_t s = 0; s < NSIZES; s++) {
    void *probe = malloc(sizes[s]);
    CHECK_FATAL(probe != NULL);
    size_t bs = malloc_usable_size(probe);
    free(probe);
    before_live[s] = class_live(bs);  /* the program's own blocks of the class, if any */
  }
  for (size_t s = 0; s < NSIZES; s++) row_make(&rows[s], sizes[s], (size_t)4 << 20);
  for (size_t s = 0; s < NSIZES; s++) row_slab_current(&rows[s]);
  malloc_trim(0);
  for (size_t s = 0; s < NSIZES; s++) live[s] = class_live(rows[s].bs);
  for (size_t s = 0; s < NSIZES; s++) {
    size_t looked = 0, gone = 0;
    row_gone(&rows[s], &looked, &gone);
    printf("park: size %5zu: %zu of %zu pages between survivors gone\n", sizes[s], gone, looked);
    CHECKF(looked >= 8, "size %zu: only %zu pages to look at", sizes[s], looked);
    CHECKF(gone == looked, "size %zu: %zu of %zu free pages between survivors still resident",
           sizes[s], looked - gone, looked);
    size_t want = before_live[s] + row_survivors(&rows[s]);
    CHECKF(live[s] == want,
           "size %zu: the stats count %zu live blocks of the class, the program holds %zu", sizes[s], live[s], want);
    row_check(&rows[s]);
  }
  if (empty == KEEP_ROWS) {
    if (lowmem) {
      /* blocks of each size until one lies on a page looked at: its slab
       * takes its parked pages back a carve batch at a time (lowmem's
       * 4 KiB), not all of them at once */
      for (size_t s = 0; s < NSIZES; s++) {
        static uintptr_t pages[MAX_PAGES];
        size_t looked = 0, gone = 0, n = 0, np = row_pages(&rows[s], pages);
        void **t = calloc(rows[s].count, sizeof *t);
        CHECK_FATAL(t != NULL);
        for (int on_page = 0; !on_page && n < rows[s].count; n++) {
          t[n] = malloc(sizes[s]);
          CHECK_FATAL(t[n] != NULL);
          uintptr_t a = (uintptr_t)t[n];
          for (uintptr_t pg = a & ~(uintptr_t)4095; pg < a + sizes[s] && !on_page; pg += 4096)
            on_page = bsearch(&pg, pages, np, sizeof *pages, cmp_ptr) != NULL;
        }
        row_gone(&rows[s], &looked, &gone);
        printf("park: size %5zu: %zu mallocs brought %zu of the %zu pages back\n", sizes[s], n, looked - gone, looked);
        CHECKF(looked > gone && looked - gone <= 2, "size %zu: %zu parked pages came back at once (of %zu)", sizes[s],
               looked - gone, looked);
        for (size_t k = 0; k < n; k++) free(t[k]);
        free(t);
      }
    }
    for (size_t s = 0; s < NSIZES; s++) row_refill_and_free(&rows[s]);
    return;
  }
  /* the survivors go too: their slabs hold nothing live, only free and
   * parked blocks, and go back whole: the class keeps the slabs of the
   * last quarter only */
  size_t before[NSIZES];
  for (size_t s = 0; s < NSIZES; s++) before[s] = class_slabs(rows[s].bs);
  for (size_t s = 0; s < NSIZES; s++) {
    row_t *r = &rows[s];
    for (size_t i = 0; i < r->keep; i++) {
      free(r->v[i]);
      r->v[i] = NULL;
    }
  }
  if (empty == EMPTY_TRIM) malloc_trim(0);
  for (size_t s = 0; s < NSIZES; s++) {
    size_t after = empty == EMPTY_TRIM ? class_slabs(rows[s].bs) : slabs_after_sleep(rows[s].bs, (before[s] - 1) / 2);
    printf("park: size %5zu: %zu slabs before the survivors were freed, %zu after\n", sizes[s], before[s], after);
    CHECKF(before[s] >= 4 && after * 2 < before[s], "size %zu: %zu of %zu slabs kept with nothing live in 3/4 of them",
           sizes[s], after, before[s]);
  }
  /* (after every check: a refill's slow paths run the thread's own clock) */
  for (size_t s = 0; s < NSIZES; s++) row_refill_and_free(&rows[s]);
}

/* ---- threads ----------------------------------------------------------- */

#define NT 4
#define PER 3000
static unsigned char *handed[NT][PER];
static pthread_barrier_t bar;

static void *worker(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  unsigned char *mine[PER];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < PER; i++) {
      size_t sz = sizes[(size_t)(i + round) % NSIZES];
      mine[i] = malloc(sz);
      CHECK_FATAL(mine[i] != NULL);
      fill(mine[i], sz, (t << 24) | (uint32_t)i);
      handed[t][i] = (i % 2) ? mine[i] : NULL;  /* the odd ones: the neighbour frees them */
    }
    pthread_barrier_wait(&bar);
    unsigned from = (t + 1) % NT;
    for (int i = 1; i < PER; i += 2) {
      size_t sz = sizes[(size_t)(i + round) % NSIZES];
      CHECKF(intact(handed[from][i], sz, (from << 24) | (uint32_t)i), "thread %u: block %d of thread %u changed", t, i, from);
      free(handed[from][i]);
    }
    /* its own even ones: all but every 8th */
    for (int i = 0; i < PER; i += 2)
      if (i % 16) {
        free(mine[i]);
        mine[i] = NULL;
      }
    malloc_trim(0);  /* parks, while the neighbour's frees may still arrive */
    unsigned char *again[PER];
    for (int i = 0; i < PER; i++) {
      size_t sz = sizes[(size_t)i % NSIZES];
      again[i] = malloc(sz);
      CHECK_FATAL(again[i] != NULL);
      fill(again[i], sz, 0x800000u | (t << 16) | (uint32_t)i);
    }
    for (int i = 0; i < PER; i += 16) {
      size_t sz = sizes[(size_t)(i + round) % NSIZES];
      CHECKF(intact(mine[i], sz, (t << 24) | (uint32_t)i), "thread %u: survivor %d changed", t, i);
      free(mine[i]);
    }
    for (int i = 0; i < PER; i++) {
      size_t sz = sizes[(size_t)i % NSIZES];
      CHECKF(intact(again[i], sz, 0x800000u | (t << 16) | (uint32_t)i), "thread %u: block %d changed", t, i);
      free(again[i]);
    }
    pthread_barrier_wait(&bar);
  }
  return NULL;
}

static void threads(void) {
  pthread_t th[NT];
  pthread_barrier_init(&bar, NULL, NT);
  for (unsigned t = 0; t < NT; t++) CHECK_FATAL(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) == 0);
  for (unsigned t = 0; t < NT; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&bar);
}

/* ---- fork -------------------------------------------------------------- */

static void forked(void) {
  row_t rows[NSIZES];
  for (size_t s = 0; s < NSIZES; s++) row_make(&rows[s], sizes[s], (size_t)2 << 20);
  malloc_trim(0);
  size_t looked = 0, gone = 0;
  for (size_t s = 0; s < NSIZES; s++) row_gone(&rows[s], &looked, &gone);
  CHECKF(looked > 0 && gone == looked, "%zu of %zu pages between survivors still resident before fork",
         looked - gone, looked);
  pid_t pid = fork();
  CHECK_FATAL(pid >= 0);
  for (size_t s = 0; s < NSIZES; s++) row_refill_and_free(&rows[s]);
  if (pid == 0) _exit(check_failures() ? 1 : 0);
  int st = 0;
  CHECK_FATAL(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %d)", st);
}

/* ---- a first-class heap ------------------------------------------------ */

/* Rows of blocks from a hak_heap, most freed; slow paths of the heap (a
 * class the rows do not use, allocated and freed) until its purge clock
 * has parked a page between survivors (2 s at most). */
typedef struct { uintptr_t a; int freed; } spot_t;
static int cmp_spot(const void *x, const void *y) {
  uintptr_t a = ((const spot_t *)x)->a, b = ((const spot_t *)y)->a;
  return a < b ? -1 : a > b;
}
static void heap_mode(void) {
  hak_heap_t *hp = hak_heap_new();
  CHECK_FATAL(hp != NULL);
  enum { N = 4096, STRIDE = 40, KEEP = N * 3 / 4, MAXP = 64 };  /* 40 blocks: 8 KiB */
  const size_t size = 200;
  unsigned char *v[N];
  static spot_t at[N];
  for (size_t i = 0; i < N; i++) {
    v[i] = hak_heap_malloc(hp, size);
    CHECK_FATAL(v[i] != NULL);
    fill(v[i], size, (uint32_t)i);
  }
  size_t bs = malloc_usable_size(v[0]), held = N;
  for (size_t i = 0; i < N; i++) {
    at[i].a = (uintptr_t)v[i];
    at[i].freed = i < KEEP && i % STRIDE;
    if (at[i].freed) {
      free(v[i]);
      v[i] = NULL;
      held--;
    }
  }
  /* the pages wholly inside a run of freed blocks adjacent in memory */
  qsort(at, N, sizeof *at, cmp_spot);
  uintptr_t pages[MAXP];
  size_t np = 0;
  for (size_t i = 0; i < N && np < MAXP;) {
    if (!at[i].freed) { i++; continue; }
    size_t j = i;
    while (j + 1 < N && at[j + 1].freed && at[j + 1].a == at[j].a + bs) j++;
    uintptr_t lo = (at[i].a + 4095) & ~(uintptr_t)4095, hi = at[j].a + bs;
    for (uintptr_t pg = lo; pg + 4096 <= hi && np < MAXP; pg += 4096) pages[np++] = pg;
    i = j + 1;
  }
  CHECKF(np >= 8, "only %zu pages between survivors to look at", np);
  size_t gone = 0;
  for (int round = 0; round < 2000 && gone == 0; round++) {
    void *tick[64];
    for (int k = 0; k < 64; k++) tick[k] = hak_heap_malloc(hp, 3000);
    for (int k = 0; k < 64; k++) free(tick[k]);
    usleep(1000);
    for (size_t k = 0; k < np; k++) gone += resident((void *)pages[k]) == 0;
  }
  CHECKF(gone > 0, "the heap's purge clock parked none of %zu pages in 2 s (HAKMEM_PURGE_DELAY_MS=1?)", np);
  struct hak_heap_stats hs;
  CHECK(hak_heap_stats(hp, &hs) == 0);
  printf("park: heap: %zu of %zu pages between survivors gone; %zu blocks held, hak_heap_stats counts %zu\n",
         gone, np, held, hs.blocks);
  CHECKF(hs.blocks == held, "hak_heap_stats counts %zu blocks, the program holds %zu", hs.blocks, held);
  for (size_t i = 0; i < N; i++)
    if (v[i]) {
      CHECKF(intact(v[i], size, (uint32_t)i), "survivor %zu changed", i);
      free(v[i]);
    }
  CHECK(hak_heap_stats(hp, &hs) == 0 && hs.blocks == 0);
  hak_heap_destroy(hp);
}

static void churn(void) {
  static const size_t sizes_churn[] = { 200, 1100, 3000 };
  for (size_t k = 0; k < sizeof sizes_churn / sizeof sizes_churn[0]; k++) {
    size_t size = sizes_churn[k], count = ((size_t)8 << 20) / size, live = count / 10;
    unsigned char **v = calloc(count, sizeof *v);
    uint32_t *tag = calloc(count, sizeof *tag);
    CHECK_FATAL(v && tag);
    for (size_t i = 0; i < count; i++) {
      v[i] = malloc(size);
      CHECK_FATAL(v[i] != NULL);
      tag[i] = (uint32_t)i;
      fill(v[i], size, tag[i]);
    }
    size_t bs = malloc_usable_size(v[0]), slab = bs <= 1024 ? (size_t)64 << 10 : (size_t)256 << 10;
    size_t before = class_slabs(bs);
    /* all but `live` freed in a random order: the survivors scattered */
    uint64_t x = 0x9e3779b97f4a7c15ull + size;
    for (size_t i = count; i > live; i--) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      size_t j = (size_t)(x >> 33) % i;
      CHECK(intact(v[j], size, tag[j]));
      free(v[j]);
      v[j] = v[i - 1];
      tag[j] = tag[i - 1];
    }
    uint32_t next = (uint32_t)count;
    for (size_t r = 0; r < 40 * live; r++) {
      if (r % (live / 4) == 0) usleep(2000);  /* the churn spans purge ticks, as a service's does */
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      size_t j = (size_t)(x >> 33) % live;
      CHECK(intact(v[j], size, tag[j]));
      free(v[j]);
      v[j] = malloc(size);
      CHECK_FATAL(v[j] != NULL);
      tag[j] = next++;
      fill(v[j], size, tag[j]);
    }
    malloc_trim(0);
    size_t need = (live * bs + slab - 1) / slab, slabs = class_slabs(bs);
    printf("churn %zu B: %zu slabs at the fill, %zu after the churn, %zu blocks live (%zu slabs' worth)\n", size,
           before, slabs, live, need);
    CHECKF(slabs <= 2 * need + 2, "%zu B: %zu slabs hold %zu live blocks, at most %zu wanted", size, slabs, live,
           2 * need + 2);
    for (size_t i = 0; i < live; i++) {
      CHECK(intact(v[i], size, tag[i]));
      free(v[i]);
    }
    free(v);
    free(tag);
  }
}

int main(int argc, char **argv) {
  /* the output's buffer is no block: taken after a trim, it would bring a
   * parked slab of its class back before the pages are looked at */
  static char out[1 << 14];
  setvbuf(stdout, out, _IOFBF, sizeof out);
  const char *mode = argc > 1 ? argv[1] : "scatter";
  const char *knob = getenv("HAKMEM_PARK_PAGES"), *profile = getenv("HAKMEM_PROFILE");
  int on = knob ? strcmp(knob, "1") == 0 : profile && strcmp(profile, "lowmem") == 0;
  lowmem = !knob && profile && strcmp(profile, "lowmem") == 0;
  if (!on) {
    printf("park: neither HAKMEM_PARK_PAGES=1 nor HAKMEM_PROFILE=lowmem: the checks would fail\n");
    return 1;
  }
  if (strcmp(mode, "scatter") == 0) scatter(KEEP_ROWS);
  else if (strcmp(mode, "empty") == 0) scatter(EMPTY_TRIM);
  else if (strcmp(mode, "idle") == 0) scatter(EMPTY_IDLE);
  else if (strcmp(mode, "threads") == 0) threads();
  else if (strcmp(mode, "fork") == 0) forked();
  else if (strcmp(mode, "heap") == 0) heap_mode();
  else if (strcmp(mode, "churn") == 0) churn();
  else {
    fprintf(stderr, "usage: test_park scatter|empty|idle|threads|fork|heap|churn\n");
    return 2;
  }
  return check_done("park");
}
