/* test_heaps — first-class heaps (hakmem.h, hak_heap_*).
 *
 *   api        every tier's sizes, calloc's zeros, realloc across the
 *              tiers (contents kept), aligned blocks, NULL and huge sizes
 *              (errno), the per-heap statistics
 *   threads    the creator allocates while three threads free its blocks
 *              and two others allocate from the same heap; every block is
 *              checked before its free; the heap ends with no block live
 *   contention four threads allocate small blocks from one heap in tight
 *              loops, each block stamped and checked
 *   destroy    rounds of a heap filled with blocks of every tier, half of
 *              them freed, destroyed with the rest: the superslabs in use
 *              and the large blocks come back to where they were, and the
 *              mapped bytes stop growing
 *   stale      in a child: free() of a block (small, then large) of a
 *              destroyed heap is reported (HAKMEM_ABORT_ON_INVALID: abort)
 *   fork       fork while another thread allocates from a heap: the child
 *              reads, frees, allocates from and destroys the heaps
 *
 *   test_heaps [api|threads|contention|destroy|stale|fork]   (default: all) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed + i * 7);
}
static int filled(const void *p, size_t n, unsigned seed) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)(seed + i * 7)) return 0;
  return 1;
}
static size_t live_blocks(hak_heap_t *h) {
  struct hak_heap_stats st;
  CHECK(hak_heap_stats(h, &st) == 0);
  return st.blocks;
}

/* ---- api ------------------------------------------------------------------ */

static void test_api(void) {
  static const size_t sizes[] = { 0, 1, 16, 100, 1024, 1025, 5000, 32 * KiB, 32 * KiB + 1,
                                  100 * KiB, 1 * MiB, 3 * MiB };
  enum { N = sizeof sizes / sizeof sizes[0] };
  hak_heap_t *h = hak_heap_new();
  CHECK_FATAL(h != NULL);
  CHECK(live_blocks(h) == 0);
  void *p[N];
  size_t bytes = 0;
  for (unsigned i = 0; i < N; i++) {
    p[i] = hak_heap_malloc(h, sizes[i]);
    CHECKF(p[i] != NULL, "size %zu", sizes[i]);
    CHECK(hak_owns(p[i]));
    CHECKF(hak_usable_size(p[i]) >= sizes[i], "size %zu", sizes[i]);
    bytes += hak_usable_size(p[i]);
    fill(p[i], sizes[i], i);
  }
  struct hak_heap_stats st;
  CHECK(hak_heap_stats(h, &st) == 0);
  /* (the secure build's malloc(0) is its shared zero-size block: no heap's) */
  size_t want = N - (hak_usable_size(p[0]) == 0);
  CHECKF(st.blocks == want, "blocks %zu, %zu expected", st.blocks, want);
  CHECKF(st.bytes >= bytes - 16 * KiB && st.bytes <= bytes + 16 * KiB, "bytes %zu, usable %zu", st.bytes, bytes);
  for (unsigned i = 0; i < N; i++) {
    CHECKF(filled(p[i], sizes[i], i), "size %zu", sizes[i]);
    free(p[i]);
  }
  CHECK(live_blocks(h) == 0);

  /* calloc: a reused block reads as zero */
  for (unsigned i = 0; i < N; i++) {
    void *d = hak_heap_malloc(h, sizes[i] + 1);
    memset(d, 0xA5, sizes[i] + 1);
    free(d);
    unsigned char *z = hak_heap_calloc(h, 1, sizes[i] + 1);
    CHECK(z != NULL);
    size_t bad = 0;
    for (size_t k = 0; k <= sizes[i]; k++) bad += z[k] != 0;
    CHECKF(bad == 0, "calloc %zu: %zu bytes not zero", sizes[i] + 1, bad);
    free(z);
  }
  errno = 0;
  CHECK(hak_heap_calloc(h, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(hak_heap_malloc(h, SIZE_MAX) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(hak_heap_malloc(h, SIZE_MAX / 2) == NULL && errno == ENOMEM);

  /* realloc through every tier and back, contents kept */
  static const size_t steps[] = { 10, 700, 2000, 30 * KiB, 40 * KiB, 600 * KiB, 3 * MiB, 50 * KiB, 100, 8 };
  void *r = hak_heap_realloc(h, NULL, steps[0]);
  fill(r, steps[0], 99);
  for (unsigned i = 1; i < sizeof steps / sizeof steps[0]; i++) {
    void *q = hak_heap_realloc(h, r, steps[i]);
    CHECKF(q != NULL, "realloc to %zu", steps[i]);
    size_t kept = steps[i - 1] < steps[i] ? steps[i - 1] : steps[i];
    CHECKF(filled(q, kept, 99), "realloc %zu -> %zu", steps[i - 1], steps[i]);
    fill(q, steps[i], 99);
    r = q;
    CHECK(live_blocks(h) == 1);
  }
  errno = 0;
  CHECK(hak_heap_realloc(h, r, SIZE_MAX) == NULL && errno == ENOMEM);
  CHECK(filled(r, steps[9], 99));  /* left as it was */
  CHECK(hak_heap_realloc(h, r, 0) == NULL);  /* freed */
  CHECK(live_blocks(h) == 0);

  /* aligned */
  static const size_t aligns[] = { 8, 32, 64, 256, 4096, 64 * KiB, 2 * MiB };
  for (unsigned i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    void *a = hak_heap_aligned_alloc(h, aligns[i], 3000);
    CHECKF(a && ((uintptr_t)a & (aligns[i] - 1)) == 0, "align %zu", aligns[i]);
    fill(a, 3000, 5);
    CHECK(live_blocks(h) == 1);
    free(a);
  }
  errno = 0;
  CHECK(hak_heap_aligned_alloc(h, 24, 100) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(hak_heap_stats(NULL, &st) == -1 && errno == EINVAL);

  /* a NULL heap is the ordinary malloc */
  void *o = hak_heap_malloc(NULL, 50);
  CHECK(o != NULL && hak_owns(o));
  CHECK(live_blocks(h) == 0);
  free(o);

  /* a block left in the heap is freed by destroy; blocks of another heap
   * are not */
  hak_heap_t *h2 = hak_heap_new();
  void *keep = hak_heap_malloc(h2, 200), *keep_large = hak_heap_malloc(h2, 200 * KiB);
  fill(keep, 200, 1);
  fill(keep_large, 200 * KiB, 2);
  for (unsigned i = 0; i < N; i++) (void)hak_heap_malloc(h, sizes[i]);
  hak_heap_destroy(h);
  CHECK(filled(keep, 200, 1) && filled(keep_large, 200 * KiB, 2));
  CHECK(live_blocks(h2) == 2);
  hak_heap_destroy(h2);
  hak_heap_destroy(NULL);
}

/* ---- threads ---------------------------------------------------------------- */

#define SLOTS 512
#define ROUNDS 200000
static _Atomic(void *) slots[SLOTS];
static atomic_int producing;
static hak_heap_t *shared_heap;

static size_t size_of_slot(unsigned i) {
  return i % 97 == 0 ? 40 * KiB + i : i % 11 == 0 ? 2 * KiB + i * 3 : 8 + i % 300;
}

static void *freer(void *arg) {
  unsigned i = (unsigned)(uintptr_t)arg;
  for (;;) {
    void *p = atomic_exchange(&slots[i % SLOTS], NULL);
    if (p) {
      CHECKF(filled(p, size_of_slot(i % SLOTS), i % SLOTS), "slot %u", i % SLOTS);
      free(p);
    } else if (!atomic_load(&producing)) {
      break;
    }
    i += 7;
  }
  return NULL;
}

static void *side_allocator(void *arg) {
  (void)arg;
  void *mine[64] = { 0 };
  for (unsigned r = 0; r < ROUNDS / 4; r++) {
    unsigned k = r % 64;
    if (mine[k]) {
      CHECK(filled(mine[k], 24 + k * 9, k));
      free(mine[k]);
    }
    mine[k] = hak_heap_malloc(shared_heap, 24 + k * 9);
    fill(mine[k], 24 + k * 9, k);
  }
  for (unsigned k = 0; k < 64; k++) free(mine[k]);
  return NULL;
}

static void test_threads(void) {
  shared_heap = hak_heap_new();
  CHECK_FATAL(shared_heap != NULL);
  atomic_store(&producing, 1);
  pthread_t f[3], a[2];
  for (uintptr_t i = 0; i < 3; i++) pthread_create(&f[i], NULL, freer, (void *)i);
  for (int i = 0; i < 2; i++) pthread_create(&a[i], NULL, side_allocator, NULL);
  for (unsigned r = 0; r < ROUNDS; r++) {
    unsigned i = (r * 13) % SLOTS;
    if (atomic_load_explicit(&slots[i], memory_order_relaxed)) continue;
    void *p = hak_heap_malloc(shared_heap, size_of_slot(i));
    CHECK_FATAL(p != NULL);
    fill(p, size_of_slot(i), i);
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&slots[i], &expected, p)) free(p);
  }
  atomic_store(&producing, 0);
  for (int i = 0; i < 3; i++) pthread_join(f[i], NULL);
  for (int i = 0; i < 2; i++) pthread_join(a[i], NULL);
  for (unsigned i = 0; i < SLOTS; i++) {
    void *p = atomic_exchange(&slots[i], NULL);
    if (p) {
      CHECK(filled(p, size_of_slot(i), i));
      free(p);
    }
  }
  CHECKF(live_blocks(shared_heap) == 0, "%zu blocks live", live_blocks(shared_heap));
  hak_heap_destroy(shared_heap);
}

/* ---- contention: threads allocating from one heap at once -------------------
 * Tight loops of small blocks, each stamped with its thread and index and
 * checked after the batch: two threads handed the same block (a heap used
 * without its lock) overwrite each other's stamps. */
#define C_THREADS 4
#define C_BATCH 2000
static pthread_barrier_t c_start;
static void *contender(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  static _Thread_local uint64_t *mine[C_BATCH];
  pthread_barrier_wait(&c_start);  /* all at once: the point is overlap */
  for (unsigned r = 0; r < 400; r++) {
    for (unsigned i = 0; i < C_BATCH; i++) {
      mine[i] = hak_heap_malloc(shared_heap, 16 + (i % 4) * 16);
      mine[i][0] = id << 32 | i;
    }
    for (unsigned i = 0; i < C_BATCH; i++) {
      CHECKF(mine[i][0] == (id << 32 | i), "thread %u block %u: stamp %#llx", (unsigned)id, i,
             (unsigned long long)mine[i][0]);
      free(mine[i]);
    }
  }
  return NULL;
}

static void test_contention(void) {
  shared_heap = hak_heap_new();
  CHECK_FATAL(shared_heap != NULL);
  pthread_t t[C_THREADS];
  pthread_barrier_init(&c_start, NULL, C_THREADS);
  for (uintptr_t i = 0; i < C_THREADS; i++) pthread_create(&t[i], NULL, contender, (void *)i);
  for (int i = 0; i < C_THREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&c_start);
  CHECKF(live_blocks(shared_heap) == 0, "%zu blocks live", live_blocks(shared_heap));
  hak_heap_destroy(shared_heap);
}

/* ---- destroy: memory comes back -------------------------------------------- */

static size_t ss_in_use(const struct hak_stats *s) {
  return s->superslabs - s->superslabs_cached - s->superslabs_abandoned;
}

/* A snapshot the purge thread may be moving superslabs under (between the
 * cache, the abandoned lists and the OS: each snapshot's reads are not one
 * atomic view): read until two in a row agree on what is in use, 200 ms at
 * most. */
static void read_settled(struct hak_stats *s) {
  struct hak_stats t;
  hak_stats_read(s, sizeof *s);
  for (int k = 0; k < 100; k++) {
    usleep(2000);
    hak_stats_read(&t, sizeof t);
    if (ss_in_use(&t) == ss_in_use(s) && t.large_live == s->large_live) break;
    *s = t;
  }
}

static void test_destroy(void) {
  struct hak_stats base, s;
  size_t mapped_early = 0;
  enum { ROUNDS_D = 24, BLOCKS = 6000 };
  static void *b[BLOCKS];
  /* round -1 is not judged: the baseline is read after it (run alone, the
   * mode's first round made this thread's heap and its superslab) */
  for (int r = -1; r < ROUNDS_D; r++) {
    hak_heap_t *h = hak_heap_new();
    CHECK_FATAL(h != NULL);
    for (unsigned i = 0; i < BLOCKS; i++) {
      size_t n = i % 500 == 0 ? 300 * KiB : i % 50 == 0 ? 40 * KiB : i % 5 == 0 ? 3000 : 16 + i % 400;
      b[i] = hak_heap_malloc(h, n);
      CHECK_FATAL(b[i] != NULL);
      memset(b[i], (int)r, n < 64 ? n : 64);
    }
    for (unsigned i = (unsigned)r & 1u; i < BLOCKS; i += 2) free(b[i]);
    hak_heap_destroy(h);
    if (r < 0) {
      hak_ctl("purge");
      read_settled(&base);
      continue;
    }
    hak_stats_read(&s, sizeof s);
    if (ss_in_use(&s) != ss_in_use(&base)) read_settled(&s);  /* (the purge thread's moves) */
    CHECKF(ss_in_use(&s) == ss_in_use(&base),
           "round %d: %zu superslabs in use, %zu before (mapped, cached, abandoned: %zu %zu %zu; before %zu %zu %zu)",
           r, ss_in_use(&s), ss_in_use(&base), (size_t)s.superslabs, (size_t)s.superslabs_cached,
           (size_t)s.superslabs_abandoned, (size_t)base.superslabs, (size_t)base.superslabs_cached,
           (size_t)base.superslabs_abandoned);
    CHECKF(s.large_live == base.large_live, "round %d: %zu large blocks live, %zu before", r,
           s.large_live, base.large_live);
    if (r == 2) mapped_early = s.mapped_bytes;
  }
  hak_stats_read(&s, sizeof s);
  CHECKF(s.mapped_bytes <= mapped_early + 16 * MiB, "mapped %zu MiB after %u rounds, %zu after 3",
         s.mapped_bytes >> 20, (unsigned)ROUNDS_D, mapped_early >> 20);
  hak_ctl("purge");
  hak_stats_read(&s, sizeof s);
  CHECKF(s.superslabs_cached == 0 || s.mapped_bytes <= base.mapped_bytes + 16 * MiB,
         "after purge: mapped %zu MiB, %zu before", s.mapped_bytes >> 20, base.mapped_bytes >> 20);
}

/* ---- a free of a block of a destroyed heap ---------------------------------- */

static int child_frees_stale(size_t n) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30);
    hak_ctl_set("ABORT_ON_INVALID", 1);
    hak_heap_t *h = hak_heap_new();
    void *p = hak_heap_malloc(h, n);
    hak_heap_destroy(h);
    free(p);  /* reported: abort */
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void test_stale(void) {
  static const size_t sizes[] = { 64, 4000, 100 * KiB, 4 * MiB };
  for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int st = child_frees_stale(sizes[i]);
    CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "size %zu: child status %#x, not an abort",
           sizes[i], st);
  }
}

/* ---- fork ------------------------------------------------------------------ */

static atomic_int forking;
static hak_heap_t *busy_heap;

static void *busy(void *arg) {
  (void)arg;
  void *ring[32] = { 0 };
  for (unsigned r = 0; atomic_load(&forking); r++) {
    unsigned k = r % 32;
    free(ring[k]);
    ring[k] = hak_heap_malloc(busy_heap, k == 0 ? 50 * KiB : 32 + k * 40);
  }
  for (unsigned k = 0; k < 32; k++) free(ring[k]);
  return NULL;
}

static void *child_thread(void *arg) {  /* allocates enough to adopt abandoned memory */
  (void)arg;
  enum { M = 20000 };
  static void *p[M];
  for (unsigned i = 0; i < M; i++) p[i] = malloc(i % 10 == 0 ? 3000 : 16 + i % 500);
  for (unsigned i = 0; i < M; i++) free(p[i]);
  return NULL;
}

static void test_fork(void) {
  hak_heap_t *h = hak_heap_new();
  busy_heap = hak_heap_new();
  CHECK_FATAL(h && busy_heap);
  enum { NB = 300 };
  void *b[NB];
  for (unsigned i = 0; i < NB; i++) {
    size_t n = i % 100 == 0 ? 200 * KiB : i % 10 == 0 ? 5000 : 16 + i;
    b[i] = hak_heap_malloc(h, n);
    fill(b[i], n < 4096 ? n : 4096, i);
  }
  atomic_store(&forking, 1);
  pthread_t t;
  pthread_create(&t, NULL, busy, NULL);
  for (int f = 0; f < 8; f++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(30);
      int bad = 0;
      /* a new heap and a new thread first: neither may take over what the
       * parent's heaps hold */
      hak_heap_t *n = hak_heap_new();
      pthread_t c;
      pthread_create(&c, NULL, child_thread, NULL);
      pthread_join(c, NULL);
      for (unsigned i = 0; i < NB; i++) {
        size_t n = i % 100 == 0 ? 200 * KiB : i % 10 == 0 ? 5000 : 16 + i;
        bad += !filled(b[i], n < 4096 ? n : 4096, i);
        if (i % 2) free(b[i]);
      }
      for (unsigned i = 0; i < 1000; i++) {
        void *p = hak_heap_malloc(i % 2 ? h : busy_heap, i % 100 == 0 ? 70 * KiB : 8 + i);
        if (!p) bad++;
        else memset(p, 1, 8);
      }
      struct hak_heap_stats st;
      if (hak_heap_stats(h, &st) != 0 || st.blocks != NB / 2 + 500) bad++;
      hak_heap_destroy(h);
      hak_heap_destroy(busy_heap);
      if (!n || !hak_heap_malloc(n, 100)) bad++;
      hak_heap_destroy(n);
      _exit(bad ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %d: child status %#x", f, st);
  }
  atomic_store(&forking, 0);
  pthread_join(t, NULL);
  for (unsigned i = 0; i < NB; i++) {
    size_t n = i % 100 == 0 ? 200 * KiB : i % 10 == 0 ? 5000 : 16 + i;
    CHECK(filled(b[i], n < 4096 ? n : 4096, i));
  }
  CHECK(live_blocks(h) == NB);
  hak_heap_destroy(h);
  hak_heap_destroy(busy_heap);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
#define RUN(name)                                             \
  if (!only || strcmp(only, #name) == 0) {                    \
    test_##name();                                            \
    fprintf(stderr, "test_heaps: %s done\n", #name);          \
  }
  RUN(api)
  RUN(threads)
  RUN(contention)
  RUN(destroy)
  RUN(stale)
  RUN(fork)
  return check_done("test_heaps");
}
