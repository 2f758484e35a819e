/* test_stress — multi-threaded allocator stress.
 *
 *   test_stress [threads=8] [rounds=4] [ops_per_thread=40000] [seed=12345]
 *
 * Each round creates `threads` threads and joins them. Every thread runs a
 * deterministic (seeded) random mix of malloc / calloc / aligned_alloc /
 * realloc / free over sizes in every tier (mostly tiny, some mid, few large and
 * huge), hands blocks to other threads through lock-free inboxes (the receiver
 * verifies and frees or reallocs them: cross-thread frees), and leaves blocks
 * in a shared "carry" pool that threads of later rounds (and main) free after
 * their allocating thread has exited. Every block is filled with a pattern
 * derived from its address and size, and verified before every free/realloc.
 *
 * Built four ways (tests/CMakeLists.txt): linked to libhakmem.so, linked to
 * libhakmem.a (HK_TEST_STATIC), calling hak_* (STRESS_HAKAPI, for TSan), and
 * plain (HK_TEST_PLAIN, for LD_PRELOAD). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#ifndef HK_TEST_PLAIN
#include "hakmem.h"
#endif

#if defined(STRESS_HAKAPI)
#define T_MALLOC(n) hak_malloc(n)
#define T_CALLOC(a, b) hak_calloc(a, b)
#define T_REALLOC(p, n) hak_realloc(p, n)
#define T_ALIGNED(a, n) hak_aligned_alloc(a, n)
#define T_FREE(p) hak_free(p)
#define T_USABLE(p) hak_usable_size(p)
#define T_NAME "test_stress_hakapi"
#else
#define T_MALLOC(n) malloc(n)
#define T_CALLOC(a, b) calloc(a, b)
#define T_REALLOC(p, n) realloc(p, n)
#define T_ALIGNED(a, n) aligned_alloc(a, n)
#define T_FREE(p) free(p)
#define T_USABLE(p) malloc_usable_size(p)
#if defined(HK_TEST_STATIC)
#define T_NAME "test_stress_static"
#elif defined(HK_TEST_PLAIN)
#define T_NAME "test_stress_plain"
#else
#define T_NAME "test_stress"
#endif
#endif

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* ---------------- patterns ---------------- */
/* Blocks up to SPARSE_LIMIT are patterned in full; bigger ones in the first
 * and last 4 KiB and one word every 512 bytes between (enough to catch an
 * overlapping block or a lost page without spending the run on memset). */
#define SPARSE_LIMIT (64 * KiB)
#define EDGE (4 * KiB)
#define STRIDE 512

static inline uint64_t word_at(uint64_t key, size_t off) {
  uint64_t x = key ^ (off * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  return x;
}
static inline unsigned char byte_at(uint64_t key, size_t off) {
  return (unsigned char)(key >> ((off & 7) * 8)) ^ (unsigned char)off;
}

/* mode 0: fill; mode 1: verify offsets < limit. Returns first bad offset or
 * (size_t)-1. The layout depends only on n. */
static size_t pattern(unsigned char *p, size_t n, uint64_t key, int mode, size_t limit) {
  size_t words_end = n & ~(size_t)7;
#define DO_WORD(o)                                                   \
  do {                                                               \
    size_t o_ = (o);                                                 \
    if (mode == 0) {                                                 \
      uint64_t w_ = word_at(key, o_);                                \
      memcpy(p + o_, &w_, 8);                                        \
    } else if (o_ + 8 <= limit) {                                    \
      uint64_t w_;                                                   \
      memcpy(&w_, p + o_, 8);                                        \
      if (w_ != word_at(key, o_)) return o_;                         \
    }                                                                \
  } while (0)
  if (n <= SPARSE_LIMIT) {
    for (size_t o = 0; o < words_end; o += 8) DO_WORD(o);
  } else {
    for (size_t o = 0; o < EDGE; o += 8) DO_WORD(o);
    for (size_t o = EDGE; o < words_end - EDGE; o += STRIDE) DO_WORD(o);
    for (size_t o = words_end - EDGE; o < words_end; o += 8) DO_WORD(o);
  }
#undef DO_WORD
  for (size_t o = words_end; o < n; o++) {
    if (mode == 0)
      p[o] = byte_at(key, o);
    else if (o < limit && p[o] != byte_at(key, o))
      return o;
  }
  return (size_t)-1;
}

typedef struct {
  unsigned char *p;
  size_t n;
  uint64_t key;
  size_t align; /* != 0: from aligned_alloc (free_aligned_sized may free it) */
} blk_t;

#if !defined(STRESS_HAKAPI)
/* C23 sized frees; glibc 2.36 lacks them (weak: NULL there unless hakmem) */
extern void free_sized(void *, size_t) __attribute__((weak));
extern void free_aligned_sized(void *, size_t, size_t) __attribute__((weak));
#endif

static inline uint64_t make_key(const void *p, size_t n, uint64_t salt) {
  return (uint64_t)(uintptr_t)p * 0xD6E8FEB86659FD93ull ^ n ^ (salt << 40);
}

static int g_check_owns __attribute__((unused)); /* hak_owns is meaningful (linked builds) */

static void blk_set(blk_t *b, void *p, size_t n, uint64_t salt) {
  b->p = p;
  b->n = n;
  b->align = 0;
  b->key = make_key(p, n, salt);
  pattern(b->p, n, b->key, 0, 0);
}

static void blk_check(const blk_t *b, const char *where) {
  size_t bad = pattern(b->p, b->n, b->key, 1, b->n);
  CHECKF(bad == (size_t)-1, "%s: block %p size %zu corrupted at offset %zu", where,
         (void *)b->p, b->n, bad);
}

static void blk_release(blk_t *b, const char *where) {
  if (!b->p) return;
  blk_check(b, where);
#if !defined(STRESS_HAKAPI)
  /* a third of the frees tell the allocator the size */
  if (b->key % 3 == 0 && b->align && free_aligned_sized)
    free_aligned_sized(b->p, b->align, b->n);
  else if (b->key % 3 == 0 && !b->align && free_sized)
    free_sized(b->p, b->n);
  else
#endif
    T_FREE(b->p);
  b->p = NULL;
}

static void check_new(void *p, size_t n, size_t align, const char *what) {
  CHECKF(p != NULL, "%s(%zu) returned NULL", what, n);
  if (!p) return;
  size_t a = align > 16 ? align : (n >= 16 ? 16 : 1);
  CHECKF((uintptr_t)p % a == 0, "%s(%zu) = %p not %zu-aligned", what, n, p, a);
  CHECKF(T_USABLE(p) >= n, "%s(%zu): usable %zu", what, n, T_USABLE(p));
#ifndef HK_TEST_PLAIN
  if (g_check_owns) CHECKF(hak_owns(p) == 1, "%s(%zu) = %p: hak_owns() == 0", what, n, p);
#endif
}

/* ---------------- rng ---------------- */
static inline uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static size_t rand_size(uint64_t *s) {
  uint64_t r = rng_next(s);
  unsigned tier = (unsigned)(r % 1000);
  uint64_t v = r >> 16;
  if (tier < 500) return v % 129;                      /* tiny, small end (incl. 0) */
  if (tier < 880) return 129 + v % (1024 - 128);       /* tiny */
  if (tier < 980) return 1025 + v % (32 * KiB - 1024); /* mid */
  if (tier < 998) return 32 * KiB + 1 + v % (MiB - 32 * KiB); /* large */
  return MiB + v % (5 * MiB);                          /* huge */
}

/* ---------------- cross-thread inboxes (lock-free MPSC stacks) ---------------- */
typedef struct msg {
  struct msg *next;
  blk_t b;
} msg_t;

#define MAX_THREADS 1024
static _Atomic(msg_t *) inbox[MAX_THREADS];

static void inbox_push(int to, msg_t *m) {
  msg_t *h = atomic_load_explicit(&inbox[to], memory_order_relaxed);
  do m->next = h;
  while (!atomic_compare_exchange_weak_explicit(&inbox[to], &h, m, memory_order_release,
                                                memory_order_relaxed));
}
static msg_t *inbox_take(int me) {
  return atomic_exchange_explicit(&inbox[me], NULL, memory_order_acquire);
}

/* ---------------- carry pool: blocks that outlive their thread ---------------- */
#define CARRY 512
static pthread_mutex_t carry_mu = PTHREAD_MUTEX_INITIALIZER;
static blk_t carry[CARRY];

static void carry_swap(int idx, blk_t *b) {
  pthread_mutex_lock(&carry_mu);
  blk_t t = carry[idx];
  carry[idx] = *b;
  *b = t;
  pthread_mutex_unlock(&carry_mu);
}

/* ---------------- worker ---------------- */
#define SLOTS 256
static int g_threads, g_rounds, g_ops;
static uint64_t g_seed;
static _Atomic long g_total_ops, g_remote_frees, g_reallocs;

typedef struct {
  int id, round;
} warg_t;

static void alloc_into(blk_t *b, uint64_t *rs, uint64_t salt) {
  size_t n = rand_size(rs);
  unsigned how = (unsigned)(rng_next(rs) % 100);
  size_t align_used = 0;
  void *p;
  if (how < 80) {
    p = T_MALLOC(n);
    check_new(p, n, 0, "malloc");
  } else if (how < 90) {
    size_t cnt = 1 + n / 8;
    p = T_CALLOC(cnt, 8);
    check_new(p, cnt * 8, 0, "calloc");
    if (p) {
      /* zeroed: check the same sparse positions the pattern uses */
      size_t m = cnt * 8, lim = m <= SPARSE_LIMIT ? m : EDGE;
      int ok = 1;
      for (size_t i = 0; i < lim; i++) ok &= ((unsigned char *)p)[i] == 0;
      if (m > SPARSE_LIMIT)
        for (size_t i = 0; i < m; i += 4096) ok &= ((unsigned char *)p)[i] == 0;
      ok &= ((unsigned char *)p)[m - 1] == 0;
      CHECKF(ok, "calloc(%zu, 8) = %p not zeroed", cnt, p);
    }
    n = cnt * 8;
  } else {
    size_t al = (size_t)16 << (rng_next(rs) % 9); /* 16 .. 4096 */
    if (rng_next(rs) % 64 == 0) al = (size_t)1 << (20 + rng_next(rs) % 3); /* 1..4 MiB */
    align_used = al;
    p = T_ALIGNED(al, n);
    check_new(p, n, al, "aligned_alloc");
  }
  if (!p) {
    b->p = NULL;
    return;
  }
  blk_set(b, p, n, salt);
  if (how >= 90) b->align = align_used;
}

static void realloc_blk(blk_t *b, uint64_t *rs, uint64_t salt) {
  size_t n = rand_size(rs);
  /* a third of the time stay near the current size (in-place paths) */
  if (b->n && rng_next(rs) % 3 == 0) n = b->n + (rng_next(rs) % 64) - 32 + (b->n / 8);
  if ((ptrdiff_t)n < 1) n = 1;
  blk_check(b, "before realloc");
  unsigned char *q = T_REALLOC(b->p, n);
  check_new(q, n, 0, "realloc");
  if (!q) return; /* old block still valid */
  size_t keep = b->n < n ? b->n : n;
  size_t bad = pattern(q, b->n, b->key, 1, keep);
  CHECKF(bad == (size_t)-1, "realloc %p(%zu) -> %p(%zu) lost contents at offset %zu",
         (void *)b->p, b->n, (void *)q, n, bad);
  blk_set(b, q, n, salt);
  atomic_fetch_add_explicit(&g_reallocs, 1, memory_order_relaxed);
}

static void drain_inbox(int me, blk_t *slots, uint64_t *rs, uint64_t salt) {
  msg_t *m = inbox_take(me);
  while (m) {
    msg_t *next = m->next;
    if (slots && rng_next(rs) % 4 == 0) {
      /* adopt it: realloc a block another thread allocated */
      int s = (int)(rng_next(rs) % SLOTS);
      blk_release(&slots[s], "adopt: old slot");
      slots[s] = m->b;
      realloc_blk(&slots[s], rs, salt);
    } else {
      blk_release(&m->b, "remote free");
      atomic_fetch_add_explicit(&g_remote_frees, 1, memory_order_relaxed);
    }
    T_FREE(m); /* the node itself was allocated by the sender */
    m = next;
  }
}

static void *worker(void *arg) {
  warg_t *w = arg;
  uint64_t rs = g_seed ^ ((uint64_t)w->round << 32) ^ (uint64_t)w->id * 0x1234567ull;
  uint64_t salt = (uint64_t)w->round * 4096 + (uint64_t)w->id;
  blk_t *slots = T_CALLOC(SLOTS, sizeof(blk_t));
  CHECK_FATAL(slots);
  for (int op = 0; op < g_ops; op++) {
    if ((op & 63) == 0) drain_inbox(w->id, slots, &rs, salt);
    unsigned r = (unsigned)(rng_next(&rs) % 100);
    blk_t *b = &slots[rng_next(&rs) % SLOTS];
    if (r < 50) {
      blk_release(b, "overwrite");
      alloc_into(b, &rs, salt);
    } else if (r < 62) {
      blk_release(b, "free");
    } else if (r < 77) {
      if (b->p) realloc_blk(b, &rs, salt);
      else alloc_into(b, &rs, salt);
    } else if (r < 95) {
      if (!b->p || g_threads < 2) continue;
      int to = (int)(rng_next(&rs) % (unsigned)(g_threads - 1));
      if (to >= w->id) to++;
      msg_t *m = T_MALLOC(sizeof *m);
      check_new(m, sizeof *m, 0, "malloc(msg)");
      if (!m) continue;
      m->b = *b;
      b->p = NULL;
      inbox_push(to, m);
    } else {
      /* trade with the carry pool: take a block some earlier thread left */
      carry_swap((int)(rng_next(&rs) % CARRY), b);
      if (b->p && rng_next(&rs) % 2) realloc_blk(b, &rs, salt);
    }
  }
  drain_inbox(w->id, slots, &rs, salt);
  /* leave a few blocks behind for later rounds, free the rest */
  for (int s = 0; s < SLOTS; s++) {
    if (slots[s].p && s % 16 == 0) carry_swap((int)(rng_next(&rs) % CARRY), &slots[s]);
    blk_release(&slots[s], "thread exit");
  }
  T_FREE(slots);
  atomic_fetch_add_explicit(&g_total_ops, g_ops, memory_order_relaxed);
  return NULL;
}

int main(int argc, char **argv) {
  g_threads = argc > 1 ? atoi(argv[1]) : 8;
  g_rounds = argc > 2 ? atoi(argv[2]) : 4;
  g_ops = argc > 3 ? atoi(argv[3]) : 40000;
  g_seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 12345;
  if (g_threads < 1 || g_threads > MAX_THREADS || g_rounds < 1 || g_ops < 1) {
    fprintf(stderr, "usage: %s [threads] [rounds] [ops_per_thread] [seed]\n", argv[0]);
    return 2;
  }
#if defined(HK_TEST_PLAIN)
  if (hk_plain_expect_active())
    CHECKF(hk_plain_active() == 1, "HAKMEM_TEST_EXPECT_ACTIVE=1 but hakmem is not malloc");
  fprintf(stderr, "%s: malloc is %s\n", T_NAME, hk_plain_active() ? "hakmem" : "not hakmem");
#elif defined(STRESS_HAKAPI)
  g_check_owns = 1;
#else
  CHECKF(hak_is_active() == 1, "%s: hak_is_active() = %d", T_NAME, hak_is_active());
  g_check_owns = 1;
#endif
  pthread_t *tid = T_MALLOC(sizeof(pthread_t) * g_threads);
  warg_t *wa = T_MALLOC(sizeof(warg_t) * g_threads);
  CHECK_FATAL(tid && wa);
  for (int round = 0; round < g_rounds; round++) {
    for (int t = 0; t < g_threads; t++) {
      wa[t].id = t;
      wa[t].round = round;
      int rc = pthread_create(&tid[t], NULL, worker, &wa[t]);
      CHECK_FATAL(rc == 0);
    }
    for (int t = 0; t < g_threads; t++) pthread_join(tid[t], NULL);
    /* messages sent to threads that had already finished: main frees them */
    uint64_t rs = g_seed + (uint64_t)round;
    for (int t = 0; t < g_threads; t++) drain_inbox(t, NULL, &rs, 0);
    /* main frees part of the carry pool (blocks of exited threads) */
    for (int i = round % 4; i < CARRY; i += 4) {
      blk_t b = {0};
      carry_swap(i, &b);
      blk_release(&b, "carry (main)");
    }
  }
  for (int i = 0; i < CARRY; i++) blk_release(&carry[i], "carry (end)");
  T_FREE(tid);
  T_FREE(wa);
  fprintf(stderr, "%s: %d threads x %d rounds, %ld ops, %ld remote frees, %ld reallocs\n",
          T_NAME, g_threads, g_rounds, (long)g_total_ops, (long)g_remote_frees,
          (long)g_reallocs);
  return check_done(T_NAME);
}
