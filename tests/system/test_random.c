/* test_random — a seeded randomized multi-thread test of the malloc family,
 * with a content check of every block.
 *
 *   test_random SEED [OPS] [THREADS_PER_WAVE] [WAVES]
 *
 * Everything is derived from SEED by splitmix64 (one state per thread, from
 * SEED, the wave and the thread's index), so a seed replays the same
 * operation sequence in each thread; only the scheduling, and so which
 * thread collects which handed-over block, differs between runs.
 *
 * Threads run in waves: main creates THREADS_PER_WAVE threads, each does its
 * share of OPS (OPS / (THREADS_PER_WAVE * WAVES) operations; some threads of
 * a wave stop early), then main joins them all. Each thread works on a table
 * of slots with malloc, calloc (zeroed?), realloc (grow and shrink; the
 * prefix kept?), posix_memalign (alignment 8 B to 64 KiB, sometimes to
 * 2 MiB; return code and alignment checked), aligned_alloc, free and
 * malloc_usable_size (>= the request; the slack up to it is written);
 * about one allocation in four (one realloc in eight) is hak_heap_*'s,
 * from one of four first-class heaps all threads share. Sizes
 * span every tier: mostly 1 B - 1 KiB, some 1 - 32 KiB, about 8% 32 KiB -
 * 1 MiB, about 1.5% 1 - 9 MiB. Live bytes are capped: 24 MiB per thread,
 * 32 MiB in the exchange, 32 MiB kept by main, so 8 threads hold at most
 * 256 MiB (peak RSS about 250-300 MiB with the allocator's caches).
 *
 * Every block is filled with a pattern derived from its id and size (all of
 * it up to 4 KiB; beyond, the first and last 64 bytes and a word in every
 * 4 KiB) and checked before it is freed or reallocated. Blocks go between
 * threads through a global exchange (a lock-protected table): a thread
 * deposits one, another takes it, checks it and frees it or keeps it for a
 * while (cross-thread frees and reallocs). Exiting threads deposit some of
 * their live blocks, so their superslabs are abandoned with live blocks and
 * adopted by later threads. After each wave main collects what is left in
 * the exchange, checks and frees it, and keeps some blocks over to the next
 * wave: main frees some of them itself and deposits others for the next
 * wave's threads. Threads call malloc_trim(0) now and then, main between
 * waves, and main may sleep a few ms between waves (purge clocks run out).
 *
 * A mismatch prints the seed, thread, operation, size, address and the
 * command line that replays it, and exits 1 at once (_exit: a corrupted heap
 * may not survive exit). A fatal signal prints the replay line too. At the
 * end: "test_random: seed S, N ops, K threads, M checks, 0 failed".
 *
 * Allocator-agnostic: only the standard malloc family is called, so the test
 * runs on glibc, linked to libhakmem.so or under LD_PRELOAD. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hakmem.h"
#include "waiting.h"

#define NSLOTS 512
#define FULL_LIMIT 4096                     /* blocks up to this: every byte */
#define THREAD_BUDGET ((size_t)24 << 20)   /* live bytes per thread */
#define XCH_CAP 1024                        /* exchange: blocks */
#define XCH_BUDGET ((size_t)32 << 20)      /* exchange: bytes */
#define SURV_CAP 256                        /* kept by main over waves */
#define SURV_BUDGET ((size_t)32 << 20)
#define MAX_THREADS 256

extern char **environ;

/* ---------- PRNG ---------- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t mix64(uint64_t x) {
  uint64_t s = x;
  return splitmix(&s);
}

static uint64_t rnd(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }

/* [lo, hi], log-uniform-ish: a uniform exponent then a uniform mantissa. */
static size_t rnd_log(uint64_t *s, size_t lo, size_t hi) {
  int lb = 63 - __builtin_clzll(lo), hb = 63 - __builtin_clzll(hi);
  int e = lb + (int)rnd(s, (uint64_t)(hb - lb + 1));
  size_t a = (size_t)1 << e, b = ((size_t)2 << e) - 1;
  if (a < lo) a = lo;
  if (b > hi) b = hi;
  return a + (size_t)rnd(s, b - a + 1);
}

/* ---------- global state ---------- */

static uint64_t g_seed;
static long g_ops, g_threads, g_waves;
static char g_replay[4096];        /* formatted at start: signal-safe to print */
static size_t g_replay_len;
static atomic_int g_failing;

/* Per-seed personality (derived from the seed, printed on failure). */
static int p_xfer;        /* per mille of ops on a live slot that deposit it */
static int p_take;        /* per mille of ops on an empty slot that take one */
static int p_trim_every;  /* a thread calls malloc_trim(0) about once in this */
static int p_early;       /* percent of threads that stop early */
static int p_exit_dep;    /* percent of a thread's live blocks deposited at exit */
static int p_sleep_ms;    /* main sleeps this long between waves */

typedef struct {
  void *p;
  size_t n;
  uint64_t id;
  uint64_t w;     /* pattern word: mix of id and size */
} blk_t;

static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static blk_t xch[XCH_CAP];
static int xn;

/* First-class heaps (hak_heap_*): about one allocation in four comes from
 * one of these, shared by every thread; their blocks go the ways all
 * blocks go (freed here or by another thread, plain realloc). At the end
 * every heap must have no block live, and is destroyed. */
#define NHEAPS 4
static hak_heap_t *g_heaps[NHEAPS];
static size_t xbytes;

typedef struct {
  int wave, idx, gtid;
  uint64_t rng;
  long ops_target, ops_done, checks, opi;
  size_t live;
  uint64_t next_id;
  blk_t slot[NSLOTS];
} thr_t;

/* ---------- failure reporting ---------- */

static void put(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

static void print_replay(void) {
  ssize_t r = write(2, g_replay, g_replay_len);
  (void)r;
}

static void on_signal(int sig) {
  char msg[128];
  const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                   : sig == SIGABRT ? "SIGABRT" : sig == SIGFPE ? "SIGFPE"
                   : sig == SIGILL ? "SIGILL" : "signal";
  /* Only async-signal-safe calls: no stdio. */
  strcpy(msg, "test_random: fatal ");
  strcat(msg, name);
  strcat(msg, "\n");
  put(msg);
  print_replay();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_signals(void) {
  static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

/* Who is failing: thread -1 is main; others count from 0 over all waves. */
typedef struct {
  int wave, thread;
  long opi;
} where_t;

static void fail(where_t at, const char *what, const blk_t *b, size_t off,
                 int expect, int got) {
  if (atomic_exchange(&g_failing, 1)) {   /* one report; the others wait */
    for (;;) pause();
  }
  char who[64];
  if (at.thread < 0)
    snprintf(who, sizeof who, "main thread");
  else
    snprintf(who, sizeof who, "thread %d (number %ld of its wave), op %ld",
             at.thread, at.thread % g_threads, at.opi);
  fprintf(stderr,
          "test_random: FAILED: %s\n"
          "  seed %" PRIu64 ", wave %d, %s\n"
          "  block id %#" PRIx64 ", size %zu, address %p",
          what, g_seed, at.wave, who, b ? b->id : 0, b ? b->n : 0,
          b ? b->p : NULL);
  if (expect >= 0)
    fprintf(stderr, ", offset %zu: expected 0x%02x, found 0x%02x", off,
            expect, got);
  fprintf(stderr, "\n");
  fflush(stderr);
  print_replay();
  _exit(1);
}

/* ---------- block patterns ---------- */

static inline uint8_t pat(uint64_t w, size_t i) {
  return (uint8_t)((w >> ((i & 7) << 3)) + (uint8_t)((i >> 3) * 0x3Bu));
}

static uint64_t pattern_word(uint64_t id, size_t n) {
  return mix64(id * 0x9E3779B97F4A7C15ull ^ (uint64_t)n ^ g_seed);
}

/* The checked ranges of a block of n bytes: all of it up to FULL_LIMIT,
 * else [0, 64), 8 bytes at every 4 KiB, [n - 64, n). */
static void fill(const blk_t *b) {
  uint8_t *p = b->p;
  size_t n = b->n;
  if (n <= FULL_LIMIT) {
    for (size_t i = 0; i < n; i++) p[i] = pat(b->w, i);
    return;
  }
  for (size_t i = 0; i < 64; i++) p[i] = pat(b->w, i);
  for (size_t o = 4096; o + 8 <= n - 64; o += 4096)
    for (size_t i = o; i < o + 8; i++) p[i] = pat(b->w, i);
  for (size_t i = n - 64; i < n; i++) p[i] = pat(b->w, i);
}

/* Check b's pattern at the positions below limit. Returns the checks made. */
static long check_range(where_t at, const blk_t *b, size_t limit,
                        const char *what) {
  const uint8_t *p = b->p;
  size_t n = b->n;
  if (limit > n) limit = n;
#define CK_(i)                                                               \
  do {                                                                       \
    uint8_t e_ = pat(b->w, (i));                                             \
    if (p[(i)] != e_) fail(at, what, b, (i), e_, p[(i)]);                    \
  } while (0)
  if (n <= FULL_LIMIT) {
    for (size_t i = 0; i < limit; i++) CK_(i);
    return 1;
  }
  for (size_t i = 0; i < 64 && i < limit; i++) CK_(i);
  for (size_t o = 4096; o + 8 <= n - 64 && o < limit; o += 4096)
    for (size_t i = o; i < o + 8 && i < limit; i++) CK_(i);
  for (size_t i = n - 64; i < limit; i++) CK_(i);
#undef CK_
  return 1;
}

static long check_block(where_t at, const blk_t *b, const char *what) {
  return check_range(at, b, b->n, what);
}

/* calloc: zero at every checked position, and everywhere up to 64 KiB. */
static void check_zero(where_t at, const blk_t *b) {
  const uint8_t *p = b->p;
  size_t n = b->n;
  if (n <= 65536) {
    for (size_t i = 0; i < n; i++)
      if (p[i]) fail(at, "calloc block not zeroed", b, i, 0, p[i]);
    return;
  }
  for (size_t i = 0; i < 64; i++)
    if (p[i]) fail(at, "calloc block not zeroed", b, i, 0, p[i]);
  for (size_t o = 4096; o + 8 <= n - 64; o += 4096)
    for (size_t i = o; i < o + 8; i++)
      if (p[i]) fail(at, "calloc block not zeroed", b, i, 0, p[i]);
  for (size_t i = n - 64; i < n; i++)
    if (p[i]) fail(at, "calloc block not zeroed", b, i, 0, p[i]);
}

/* ---------- sizes ---------- */

static size_t rand_size(uint64_t *s) {
  uint64_t r = rnd(s, 1000);
  if (r < 750) {                      /* 75%: 1 B - 1 KiB, biased small */
    return rnd(s, 2) ? 1 + rnd(s, 128) : 1 + rnd(s, 1024);
  }
  if (r < 905) return rnd_log(s, 1025, 32768);            /* 15.5%: mid */
  if (r < 985) return rnd_log(s, 32769, (size_t)1 << 20); /* 8%: large */
  return rnd_log(s, ((size_t)1 << 20) + 1, (size_t)9 << 20); /* 1.5%: huge */
}

/* ---------- the exchange ---------- */

static int deposit(const blk_t *b) {
  int ok = 0;
  pthread_mutex_lock(&xlock);
  if (xn < XCH_CAP && xbytes + b->n <= XCH_BUDGET) {
    xch[xn++] = *b;
    xbytes += b->n;
    ok = 1;
  }
  pthread_mutex_unlock(&xlock);
  return ok;
}

static int take(uint64_t *rng, blk_t *out) {
  int ok = 0;
  uint64_t r = splitmix(rng);   /* drawn whatever happens: same sequence */
  pthread_mutex_lock(&xlock);
  if (xn > 0) {
    int i = (int)(r % (uint64_t)xn);
    *out = xch[i];
    xch[i] = xch[--xn];
    xbytes -= out->n;
    ok = 1;
  }
  pthread_mutex_unlock(&xlock);
  return ok;
}

/* ---------- thread ---------- */

static void new_block(thr_t *t, blk_t *b, void *p, size_t n) {
  b->p = p;
  b->n = n;
  b->id = ((uint64_t)t->gtid << 40) | t->next_id++;
  b->w = pattern_word(b->id, n);
}

static void release(thr_t *t, where_t at, blk_t *b, const char *what) {
  t->checks += check_block(at, b, what);
  free(b->p);
  t->live -= b->n;
  b->p = NULL;
}

static void *must(where_t at, void *p, size_t n, const char *what) {
  if (!p) {
    blk_t b = { NULL, n, 0, 0 };
    char m[96];
    snprintf(m, sizeof m, "%s returned NULL (errno %d)", what, errno);
    fail(at, m, &b, 0, -1, 0);
  }
  return p;
}

static void op_alloc(thr_t *t, where_t at, blk_t *b) {
  uint64_t *s = &t->rng;
  size_t n = rand_size(s);
  uint64_t kind = rnd(s, 1000);
  if (t->live + n > THREAD_BUDGET) n = 1 + rnd(s, 256);

  if (kind < (uint64_t)p_take) {                          /* from another thread */
    blk_t x;
    if (take(s, &x)) {
      t->checks += check_block(at, &x, "taken block corrupted");
      if (rnd(s, 100) < 60 || t->live + x.n > THREAD_BUDGET) {
        free(x.p);                                        /* cross-thread free */
      } else {
        *b = x;                                           /* keep it a while */
        t->live += x.n;
      }
      return;
    }
    kind = 0;                                             /* nothing there: malloc */
  }
  if (kind < 600) {
    if (rnd(s, 500) == 0) {                               /* malloc(0): NULL or unique */
      void *z = malloc(0);
      free(z);
    }
    void *p = rnd(s, 4) == 0 ? hak_heap_malloc(g_heaps[rnd(s, NHEAPS)], n) : malloc(n);
    new_block(t, b, must(at, p, n, "malloc"), n);
  } else if (kind < 720) {
    size_t cnt = 1 + rnd(s, 8), each = (n + cnt - 1) / cnt;
    n = cnt * each;
    void *p = rnd(s, 4) == 0 ? hak_heap_calloc(g_heaps[rnd(s, NHEAPS)], cnt, each) : calloc(cnt, each);
    new_block(t, b, must(at, p, n, "calloc"), n);
    check_zero(at, b);
    t->checks++;
  } else if (kind < 860) {
    size_t al;
    int r;
    void *p = (void *)1;
    if (rnd(s, 200) == 0) {                               /* invalid: EINVAL */
      al = sizeof(void *) * 3;
      r = posix_memalign(&p, al, n);
      t->checks++;
      if (r != EINVAL) {
        blk_t e = { p, n, 0, 0 };
        fail(at, "posix_memalign(alignment 24) did not return EINVAL", &e, 0,
             -1, r);
      }
      if (r == 0) free(p);
      p = (void *)1;
    }
    al = rnd(s, 16) ? (size_t)1 << (3 + rnd(s, 14))       /* 8 B .. 64 KiB */
                    : (size_t)1 << (17 + rnd(s, 5));      /* 128 KiB .. 2 MiB */
    r = posix_memalign(&p, al, n);
    t->checks++;
    if (r != 0 || !p || ((uintptr_t)p & (al - 1))) {
      blk_t e = { r == 0 ? p : NULL, n, 0, 0 };
      char m[96];
      snprintf(m, sizeof m, "posix_memalign(alignment %zu) returned %d, %p", al,
               r, r == 0 ? p : NULL);
      fail(at, m, &e, 0, -1, 0);
    }
    new_block(t, b, p, n);
  } else {
    size_t al = (size_t)1 << (3 + rnd(s, 10));            /* 8 B .. 4 KiB */
    n = (n + al - 1) & ~(al - 1);
    void *p = must(at, rnd(s, 4) == 0 ? hak_heap_aligned_alloc(g_heaps[rnd(s, NHEAPS)], al, n)
                                      : aligned_alloc(al, n), n, "aligned_alloc");
    t->checks++;
    if ((uintptr_t)p & (al - 1)) {
      blk_t e = { p, n, 0, 0 };
      char m[96];
      snprintf(m, sizeof m, "aligned_alloc(%zu) misaligned", al);
      fail(at, m, &e, 0, -1, 0);
    }
    new_block(t, b, p, n);
  }
  t->live += b->n;
  fill(b);
}

static void op_realloc(thr_t *t, where_t at, blk_t *b) {
  uint64_t *s = &t->rng;
  uint64_t how = rnd(s, 100);
  size_t n;
  if (how < 40) n = rand_size(s);                          /* anywhere */
  else if (how < 70) n = b->n + 1 + rnd(s, b->n);          /* grow up to 2x */
  else n = 1 + rnd(s, b->n);                               /* shrink */
  if (n > b->n && t->live - b->n + n > THREAD_BUDGET) n = 1 + rnd(s, b->n);

  t->checks += check_block(at, b, "block corrupted before realloc");
  void *p = must(at, rnd(s, 8) == 0 ? hak_heap_realloc(g_heaps[rnd(s, NHEAPS)], b->p, n)
                                    : realloc(b->p, n), n, "realloc");
  blk_t old = *b;
  old.p = p;
  t->checks += check_range(at, &old, n, "realloc lost the block's prefix");
  t->live += n - b->n;
  new_block(t, b, p, n);
  fill(b);
}

static void op_usable(thr_t *t, where_t at, blk_t *b) {
  size_t u = malloc_usable_size(b->p);
  t->checks++;
  if (u < b->n) {
    char m[96];
    snprintf(m, sizeof m, "malloc_usable_size %zu < requested", u);
    fail(at, m, b, 0, -1, 0);
  }
  /* The slack up to the usable size is the program's to write. */
  uint8_t *p = b->p;
  if (u - b->n <= 4096)
    memset(p + b->n, 0xA5, u - b->n);
  else
    p[u - 1] = 0xA5;
  t->checks += check_block(at, b, "block corrupted by a write of its slack");
}

static void *worker(void *arg) {
  thr_t *t = arg;
  where_t at = { t->wave, t->gtid, 0 };
  uint64_t *s = &t->rng;
  long trim = p_trim_every;

  for (t->opi = 0; t->opi < t->ops_target; t->opi++) {
    at.opi = t->opi;
    blk_t *b = &t->slot[rnd(s, NSLOTS)];
    uint64_t r = rnd(s, 1000);
    if (trim > 0 && rnd(s, (uint64_t)trim) == 0) malloc_trim(0);
    if (!b->p) {
      op_alloc(t, at, b);
    } else if (r < (uint64_t)p_xfer) {                     /* hand it over */
      t->checks += check_block(at, b, "block corrupted before deposit");
      if (deposit(b)) {
        t->live -= b->n;
        b->p = NULL;
      } else {
        release(t, at, b, "block corrupted before free");
      }
    } else if (r < 550) {
      release(t, at, b, "block corrupted before free");
    } else if (r < 800) {
      op_realloc(t, at, b);
    } else if (r < 880) {
      op_usable(t, at, b);
    } else {
      t->checks += check_block(at, b, "block corrupted");
    }
  }
  t->ops_done = t->opi;

  /* Exit: deposit some live blocks (the thread's superslabs are abandoned
   * with them), free the rest. */
  at.opi = t->opi;
  for (int i = 0; i < NSLOTS; i++) {
    blk_t *b = &t->slot[i];
    if (!b->p) continue;
    if ((int)rnd(s, 100) < p_exit_dep) {
      t->checks += check_block(at, b, "block corrupted before deposit");
      if (deposit(b)) {
        t->live -= b->n;
        b->p = NULL;
        continue;
      }
    }
    release(t, at, b, "block corrupted before free at thread exit");
  }
  return NULL;
}

/* ---------- main ---------- */

static void format_replay(int argc, char **argv) {
  size_t n = 0, cap = sizeof g_replay;
#define APPEND_(...)                                                         \
  do {                                                                       \
    int k_ = snprintf(g_replay + n, cap - n, __VA_ARGS__);                   \
    if (k_ > 0) n += (size_t)k_ < cap - n ? (size_t)k_ : cap - n - 1;        \
  } while (0)
  APPEND_("test_random: replay: ");
  for (char **e = environ; e && *e; e++)
    if (!strncmp(*e, "HAKMEM_", 7) || !strncmp(*e, "LD_PRELOAD=", 11))
      APPEND_("%s ", *e);
  APPEND_("%s %" PRIu64 " %ld %ld %ld\n", argc > 0 ? argv[0] : "test_random",
          g_seed, g_ops, g_threads, g_waves);
  APPEND_("test_random: seed %" PRIu64 " draws: deposit %d/1000, take %d/1000, "
          "malloc_trim 1/%d ops, %d%% of threads stop early, %d%% of live "
          "blocks deposited at exit, %d ms between waves\n", g_seed, p_xfer,
          p_take, p_trim_every, p_early, p_exit_dep, p_sleep_ms);
#undef APPEND_
  g_replay_len = n;
}

static long parse(const char *s, const char *what, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || *end || v < lo || v > hi) {
    fprintf(stderr, "test_random: bad %s '%s' (%ld..%ld)\n", what, s, lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    fprintf(stderr, "usage: %s SEED [OPS] [THREADS_PER_WAVE] [WAVES]\n",
            argv[0]);
    return 2;
  }
  char *end;
  errno = 0;
  g_seed = strtoull(argv[1], &end, 0);
  if (errno || *end || argv[1][0] == '-') {
    fprintf(stderr, "test_random: bad seed '%s'\n", argv[1]);
    return 2;
  }
  g_ops = argc > 2 ? parse(argv[2], "OPS", 1, 1000000000L) : 200000;
  g_threads = argc > 3 ? parse(argv[3], "THREADS_PER_WAVE", 1, MAX_THREADS) : 8;
  g_waves = argc > 4 ? parse(argv[4], "WAVES", 1, 100000) : 6;
  uint64_t ms = g_seed ^ 0x5EEDull;            /* main's own stream */
  p_xfer = 20 + (int)rnd(&ms, 180);            /* 2% - 20% of live-slot ops */
  p_take = 50 + (int)rnd(&ms, 200);            /* 5% - 25% of empty-slot ops */
  p_trim_every = 1000 + (int)rnd(&ms, 9000);
  p_early = 10 + (int)rnd(&ms, 40);
  p_exit_dep = 5 + (int)rnd(&ms, 45);
  p_sleep_ms = (int)rnd(&ms, 6);
  format_replay(argc, argv);
  install_signals();

  long per = g_ops / (g_threads * g_waves);
  if (per < 1) per = 1;
  thr_t *t = calloc((size_t)g_threads, sizeof *t);
  pthread_t *tid = calloc((size_t)g_threads, sizeof *tid);
  blk_t *surv = calloc(SURV_CAP, sizeof *surv);
  if (!t || !tid || !surv) {
    fprintf(stderr, "test_random: out of memory\n");
    return 1;
  }
  int ns = 0;
  size_t sbytes = 0;
  long total_ops = 0, checks = 0, nthreads = 0;

  for (int i = 0; i < NHEAPS; i++)
    if (!(g_heaps[i] = hak_heap_new())) { fprintf(stderr, "test_random: hak_heap_new failed\n"); return 1; }
  for (int w = 0; w < g_waves; w++) {
    where_t at = { w, -1, 0 };
    /* Survivors of earlier waves: free some, hand some to this wave. */
    for (int i = 0; i < ns;) {
      uint64_t r = rnd(&ms, 100);
      if (r < 60) {
        checks += check_block(at, &surv[i], "surviving block corrupted");
        if (r < 30 || !deposit(&surv[i])) free(surv[i].p);
        sbytes -= surv[i].n;
        surv[i] = surv[--ns];
      } else {
        i++;
      }
    }
    memset(t, 0, (size_t)g_threads * sizeof *t);
    for (int i = 0; i < g_threads; i++) {
      t[i].wave = w;
      t[i].idx = i;
      t[i].gtid = (int)(w * g_threads + i);
      t[i].rng = mix64(g_seed ^ mix64(((uint64_t)w << 32) | (uint64_t)i));
      t[i].ops_target = per;
      if ((int)rnd(&t[i].rng, 100) < p_early)
        t[i].ops_target = (long)rnd(&t[i].rng, (uint64_t)per);
      int e = pthread_create(&tid[i], NULL, worker, &t[i]);
      if (e) {
        fprintf(stderr, "test_random: pthread_create: %s\n", strerror(e));
        return 1;
      }
    }
    for (int i = 0; i < g_threads; i++) {
      pthread_join(tid[i], NULL);
      total_ops += t[i].ops_done;
      checks += t[i].checks;
      nthreads++;
    }
    /* Collect what nobody took: free it or keep it over. */
    blk_t b;
    while (take(&ms, &b)) {
      checks += check_block(at, &b, "uncollected block corrupted");
      if (rnd(&ms, 100) < 30 && ns < SURV_CAP && sbytes + b.n <= SURV_BUDGET) {
        surv[ns++] = b;
        sbytes += b.n;
      } else {
        free(b.p);
      }
    }
    if (rnd(&ms, 3) == 0) malloc_trim(0);
    if (p_sleep_ms) sleep_ms(p_sleep_ms);
  }
  where_t at = { (int)g_waves, -1, 0 };
  for (int i = 0; i < ns; i++) {
    checks += check_block(at, &surv[i], "surviving block corrupted at the end");
    free(surv[i].p);
  }
  free(surv);
  free(tid);
  free(t);
  for (int i = 0; i < NHEAPS; i++) {
    struct hak_heap_stats hs;
    checks++;
    if (hak_heap_stats(g_heaps[i], &hs) != 0 || hs.blocks != 0) {
      char m[96];
      snprintf(m, sizeof m, "heap %d: %zu blocks live with every block freed", i, hs.blocks);
      fail(at, m, NULL, 0, -1, 0);
    }
    hak_heap_destroy(g_heaps[i]);
  }
  malloc_trim(0);
  printf("test_random: seed %" PRIu64 ", %ld ops, %ld threads, %ld checks, "
         "0 failed\n", g_seed, total_ops, nthreads, checks);
  return 0;
}
