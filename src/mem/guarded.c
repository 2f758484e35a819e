/* Sampled guarded allocations: see guarded.h and docs/SECURITY.md.
 *
 * Sampling: each thread keeps, per size class, the allocations left to the
 * class's next sampled one; a gap is drawn uniformly from [1, 2 RATE], so
 * one allocation in RATE is sampled on average, whatever its size (a bug
 * belongs to an allocation site, not to its bytes). The count is kept by
 * the slow path (refill.c, slab_pop), which hands the fast path a list cut
 * where the next sample falls (freelist.h's sample point), as the
 * profiler's is; unlike
 * the profiler's, it does not set the owner's frees aside (that would
 * send every free into a current slab out of line): a block freed and
 * popped again by the fast path before the cut is not counted again, so
 * the rate is one in RATE of the blocks the slow path hands out.
 *
 * The pool: HAKMEM_GUARDED_SLOTS slots in one mapping, marked
 * HK_CHUNK_GUARDED in the chunk map, laid out as
 *   [guard] [slot 0: 8 pages] [guard] [slot 1: 8 pages] [guard] ...
 * every page closed (a guard marker where the kernel has them, else
 * PROT_NONE) but those of a live block. A block ends where its slot's
 * guard page begins (its class's size, a multiple of 16 and of any
 * alignment the class serves, so it is aligned); the bytes of its first
 * page before it (the left slack) hold a pattern that free checks. A free
 * closes the pages (their contents go) and puts the slot at the tail of a
 * queue that malloc takes from the head: the quarantine, as long as the
 * pool allows. What is known of a slot (its block, the stacks) is kept
 * beside, in slot_t, which the signal handler reads.
 *
 * The SIGSEGV handler is installed at the first sample (a program that
 * is never sampled never has one), with the previous action saved: a
 * fault outside the pool goes to it (SA_SIGINFO or plain; SIG_DFL and
 * SIG_IGN: the default action, again at the faulting instruction). It is
 * async-signal-safe: it reads the slot table, /proc/self/maps (to name
 * each frame's object) and writes with write(2), then abort()s. */
#define _GNU_SOURCE
#include "mem/guarded.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/callstack.h"
#include "base/chunk_map.h"
#include "base/knobs.h"
#include "base/libc.h"  /* memset, memcpy: glibc's, unchecked (measure copy) */
#include "base/lock.h"
#include "base/random.h"
#include "base/report.h"
#include "base/size_class.h"
#include "base/writer.h"
#include "pal/os.h"

int hk_guarded_on;

/* ---- per-thread countdowns ------------------------------------------------------ */

typedef hk_guarded_tls_t guarded_tls_t;

__thread hk_guarded_tls_t hk_guarded_tls __attribute__((tls_model("initial-exec")));

static uint64_t rate;            /* HAKMEM_GUARDED_RATE */
static uint64_t per_sec;         /* HAKMEM_GUARDED_PER_SEC */
static uint64_t seed, thread_seq;

/* the allocations before the next sample: uniform in [0, 2 rate - 1] */
static uint32_t draw(guarded_tls_t *t) {
  return (uint32_t)(hk_random_next(&t->rng) % (2 * rate));
}

static guarded_tls_t *tls_get(void) {
  guarded_tls_t *t = &hk_guarded_tls;
  if (HK_UNLIKELY(!t->ready)) {
    t->rng = hk_random_stream(seed, HK_ADD_RELAXED(thread_seq, 1));
    for (unsigned i = 0; i < HK_NCLASS; i++) t->left[i] = draw(t);
    t->ready = 1;
  }
  return t;
}


/* ---- the pool ----------------------------------------------------------------- */

#define SLOT_PAGES 8
#define STRIDE ((SLOT_PAGES + 1) * HK_PAGE)   /* a slot's pages and the guard after them */
#define DEPTH 30
#define FILL 0xa7                              /* the left slack's pattern */
_Static_assert(HK_MID_MAX <= SLOT_PAGES * HK_PAGE, "a mid block fits in a slot");

enum { S_NEVER, S_LIVE, S_FREED };

typedef struct {
  uint32_t state;                /* S_*; changed under the lock */
  uint32_t size;                 /* the block's bytes (its class's) */
  uintptr_t ptr;                 /* the block */
  int atid, ftid;                /* the threads that allocated and freed it */
  uint32_t an, fn;               /* frames in apc, fpc */
  uintptr_t apc[DEPTH], fpc[DEPTH];
} slot_t;

static uint8_t *pool;            /* the mapping: a guard page, then the slots */
static size_t pool_bytes;        /* rounded up to whole chunks */
static uintptr_t pool_lo, pool_hi;  /* read by the handler */
static slot_t *slots;
static uint32_t *queue;          /* free slots, oldest freed first: a ring */
static uint32_t nslots, qhead, qcount;
static bool markers;             /* guard markers, else PROT_NONE */
static hk_lock_t pool_lock = HK_LOCK_INIT;
static size_t live;
static uint64_t taken, skipped, throttled;
/* the samples the process may take now, in thousandths: HK_GUARDED_BURST
 * at most (config.h), HAKMEM_GUARDED_PER_SEC more a second */
static uint64_t tokens = HK_GUARDED_BURST * 1000ull, tokens_ms;

static uint8_t *slot_end(uint32_t i) { return pool + HK_PAGE + (size_t)i * STRIDE + SLOT_PAGES * HK_PAGE; }

static bool pages_open(void *p, size_t n) { return markers ? hk_os_unguard(p, n) : hk_os_commit(p, n); }
/* closed, their contents dropped */
static bool pages_close(void *p, size_t n) { return markers ? hk_os_guard(p, n) : hk_os_decommit(p, n); }

/* ---- reports (async-signal-safe: the signal handler writes them) --------------- */

typedef struct { hk_writer_t w; char buf[1024]; } out_t;

static void out_init(out_t *o) { hk_writer_to_fd(&o->w, STDERR_FILENO, o->buf, sizeof o->buf); }
static void put(out_t *o, const char *s) { hk_write_str(&o->w, s); }
static void put_hex(out_t *o, uintptr_t v) {
  char b[20];
  int n = 0;
  do { b[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  put(o, "0x");
  while (n) hk_write_bytes(&o->w, &b[--n], 1);
}
static void put_dec(out_t *o, uint64_t v) {
  char b[24];
  int n = 0;
  do { b[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) hk_write_bytes(&o->w, &b[--n], 1);
}

static uintptr_t parse_hex(const char **s) {
  uintptr_t v = 0;
  for (;; (*s)++) {
    char c = **s;
    unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
    if (d == 16) return v;
    v = v * 16 + d;
  }
}

/* " (OBJECT+0xOFFSET)" for pc, from /proc/self/maps (open and read only):
 * what addr2line -e OBJECT takes */
static void put_where(out_t *o, uintptr_t pc) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[1024], line[512];
  size_t n = 0;
  bool done = false;
  ssize_t r;
  while (!done && ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))) {
    for (ssize_t i = 0; i < r && !done; i++) {
      if (buf[i] != '\n') {
        if (n < sizeof line - 1) line[n++] = buf[i];
        continue;
      }
      line[n] = 0;
      n = 0;
      /* START-END PERMS OFFSET DEV INODE   PATH */
      const char *s = line;
      uintptr_t lo = parse_hex(&s);
      if (*s++ != '-') continue;
      uintptr_t hi = parse_hex(&s);
      if (pc < lo || pc >= hi) continue;
      done = true;
      while (*s == ' ') s++;
      while (*s && *s != ' ') s++;  /* perms */
      while (*s == ' ') s++;
      uintptr_t off = parse_hex(&s);
      for (int f = 0; f < 2; f++) {  /* dev, inode */
        while (*s == ' ') s++;
        while (*s && *s != ' ') s++;
      }
      while (*s == ' ') s++;
      if (!*s) break;
      put(o, " (");
      put(o, s);
      put(o, "+");
      put_hex(o, pc - lo + off);
      put(o, ")");
    }
  }
  close(fd);
}

static void put_stack(out_t *o, const char *what, int tid, const uintptr_t *pc, uint32_t n) {
  put(o, "hakmem: guarded: ");
  put(o, what);
  put(o, " by thread ");
  put_dec(o, (uint64_t)tid);
  put(o, ":\n");
  for (uint32_t i = 0; i < n; i++) {
    put(o, "    #");
    put_dec(o, i);
    put(o, " ");
    put_hex(o, pc[i]);
    put_where(o, pc[i]);
    put(o, "\n");
  }
  if (n == 0)
    put(o, HK_LOAD_RELAXED(hk_knobs.guarded_stacks) ? "    (no stack)\n" : "    (no stack: HAKMEM_GUARDED_STACKS=0)\n");
}

/* "... the 64-byte block at 0x..." and its stacks */
static void put_block(out_t *o, const slot_t *m) {
  put_dec(o, m->size);
  put(o, "-byte block at ");
  put_hex(o, m->ptr);
  put(o, m->state == S_FREED ? " (sampled, freed)\n" : " (sampled)\n");
  put_stack(o, "the block was allocated", m->atid, m->apc, m->an);
  if (m->state == S_FREED) put_stack(o, "and freed", m->ftid, m->fpc, m->fn);
}

/* ---- the signal handler ----------------------------------------------------------- */

static struct sigaction prev_segv;
static int handler_set;

/* the slot whose pages (its guard page included) hold address a */
static uint32_t slot_at(uintptr_t a) { return (uint32_t)((a - (uintptr_t)pool - HK_PAGE) / STRIDE); }

static void report_fault(uintptr_t a, const ucontext_t *uc) {
  out_t o;
  out_init(&o);
  bool write = uc && (uc->uc_mcontext.gregs[REG_ERR] & 2);
  const char *access = write ? "write" : "read";
  put(&o, "hakmem: guarded: ");
  uint32_t i = a >= (uintptr_t)pool + HK_PAGE ? slot_at(a) : nslots;
  const slot_t *m = i < nslots ? &slots[i] : NULL;
  if (!m || m->state == S_NEVER) {
    put(&o, "wild ");
    put(&o, access);
    put(&o, " at ");
    put_hex(&o, a);
    put(&o, ", in hakmem's pool of sampled blocks, near no block\n");
  } else {
    uintptr_t p = m->ptr, end = p + m->size;
    bool freed = m->state == S_FREED;
    if (a >= p && a < end) {
      put(&o, "use after free: ");
      put(&o, access);
      put(&o, " at ");
      put_hex(&o, a);
      put(&o, ", ");
      put_dec(&o, a - p);
      put(&o, " bytes into the ");
    } else {
      put(&o, a >= end ? "heap overflow: " : "heap underflow: ");
      if (freed) put(&o, "(after free) ");
      put(&o, access);
      put(&o, " at ");
      put_hex(&o, a);
      put(&o, ", ");
      put_dec(&o, a >= end ? a - end : p - a);
      put(&o, a >= end ? " bytes past the end of the " : " bytes before the ");
    }
    put_block(&o, m);
  }
  if (uc) {
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    put(&o, "hakmem: guarded: the access: instruction ");
    put_hex(&o, pc);
    put_where(&o, pc);
    put(&o, "\n");
  }
  hk_write_flush(&o.w);
}

/* to the action the program had before ours */
static void chain(int sig, siginfo_t *si, void *uc) {
  if (prev_segv.sa_flags & SA_SIGINFO) {
    if (prev_segv.sa_sigaction) {
      prev_segv.sa_sigaction(sig, si, uc);
      return;
    }
  } else if (prev_segv.sa_handler != SIG_DFL && prev_segv.sa_handler != SIG_IGN) {
    prev_segv.sa_handler(sig);
    return;
  }
  /* the default: a fault comes again when the instruction runs again, and
   * ends the process as it would have without us; a signal sent by a
   * process is sent again (blocked until we return) */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  if (si->si_code <= 0) raise(sig);
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
  int e = errno;
  uintptr_t a = (uintptr_t)si->si_addr;
  if (si->si_code > 0 && a >= HK_LOAD_RELAXED(pool_lo) && a < HK_LOAD_RELAXED(pool_hi)) {
    report_fault(a, uc);
    /* a fault cannot be stepped over, whatever HAKMEM_ABORT_ON_INVALID says */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGABRT, &dfl, NULL);
    abort();
  }
  chain(sig, si, uc);
  errno = e;
}

/* once, at the first sample; locked */
static void install_handler(void) {
  if (handler_set) return;
  handler_set = 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, NULL, &prev_segv) != 0) return;
  sa.sa_mask = prev_segv.sa_mask;  /* what the program's handler runs with */
  sigaction(SIGSEGV, &sa, NULL);
}

/* ---- sampled blocks ----------------------------------------------------------- */

/* Stacks are taken once guarded_stacks has run (below), on a thread whose
 * first walk is done (hk_guarded_thread_start); before it, none. libgcc
 * walks them, not the profiler's cached walker: its rule table (128 KiB,
 * hashed by return address) had a sampled program touch a page of it per
 * frame (docs/SECURITY.md, "What it costs"), and at most
 * HAKMEM_GUARDED_PER_SEC walks a second the cache saves nothing. */
static int stacks_ok;
static uint32_t capture(uintptr_t *pc) {
  return HK_LOAD_ACQUIRE(stacks_ok) && hk_guarded_tls.warm ? hk_unwind_with(HK_UNWIND_LIBGCC, pc, DEPTH) : 0;
}

/* the calling thread's first walk (it may allocate: unsampled) */
static void thread_warm(guarded_tls_t *t) {
  int was = t->busy;
  t->busy = 1;
  uintptr_t pc[2];
  hk_unwind_with(HK_UNWIND_LIBGCC, pc, 2);
  t->busy = was;
  t->warm = 1;
}

void hk_guarded_thread_start(void) {
  guarded_tls_t *t = &hk_guarded_tls;
  t->want_warm = 0;
  if (HK_LOAD_ACQUIRE(stacks_ok) && !t->warm) thread_warm(t);
}

/* a token for one sample, if the bucket has one (locked) */
static bool token_take(void) {
  uint64_t now = hk_os_now_ms();
  uint64_t have = tokens;  /* (written under the lock, read without it by sample) */
  if (now > tokens_ms) {
    have += (now - tokens_ms) * per_sec;
    if (have > HK_GUARDED_BURST * 1000ull) have = HK_GUARDED_BURST * 1000ull;
    HK_STORE_RELAXED(tokens_ms, now);
  }
  bool ok = have >= 1000;
  HK_STORE_RELAXED(tokens, ok ? have - 1000 : have);
  return ok;
}

static void *sample(guarded_tls_t *t, unsigned cls) {
  size_t c = hk_class_bytes(cls);
  if (HK_LOAD_RELAXED(qcount) == 0) {  /* every slot live: no walk for nothing */
    HK_ADD_RELAXED(skipped, 1);
    return NULL;
  }
  if (HK_LOAD_RELAXED(tokens) < 1000 && hk_os_now_ms() == HK_LOAD_RELAXED(tokens_ms)) {
    HK_ADD_RELAXED(throttled, 1);  /* (no token, and none comes before the clock ticks) */
    return NULL;
  }
  uintptr_t pc[DEPTH];
  t->busy = 1;  /* the unwinder's first use may call malloc */
  uint32_t n = capture(pc);
  void *p = NULL;
  hk_lock(&pool_lock);
  install_handler();
  if (qcount == 0) {
    HK_ADD_RELAXED(skipped, 1);
  } else if (!token_take()) {
    HK_ADD_RELAXED(throttled, 1);
  } else {
    uint32_t i = queue[qhead];
    uint8_t *end = slot_end(i), *b = end - c;
    uint8_t *first = (uint8_t *)((uintptr_t)b & ~(uintptr_t)(HK_PAGE - 1));
    if (pages_open(first, (size_t)(end - first))) {
      qhead = (qhead + 1) % nslots;
      HK_STORE_RELAXED(qcount, qcount - 1);  /* (read without the lock by sample) */
      memset(first, FILL, (size_t)(b - first));
      slot_t *m = &slots[i];
      m->size = (uint32_t)c;
      m->ptr = (uintptr_t)b;
      m->atid = hk_os_thread_kid();
      m->an = n;
      memcpy(m->apc, pc, n * sizeof *pc);
      m->fn = 0;
      HK_STORE_RELEASE(m->state, S_LIVE);
      live++;
      taken++;
      p = b;
    } else {
      HK_ADD_RELAXED(skipped, 1);
    }
  }
  hk_unlock(&pool_lock);
  t->busy = 0;
  return p;
}

void *hk_guarded_small(unsigned cls) {
  guarded_tls_t *t = tls_get();
  if (t->left[cls] > 0) {
    t->left[cls]--;
    return NULL;
  }
  if (t->busy) return NULL;
  if (HK_UNLIKELY(!t->warm) && HK_LOAD_ACQUIRE(stacks_ok)) {
    t->want_warm = 1;  /* put off until the slow path has walked (guarded.h) */
    return NULL;
  }
  t->left[cls] = draw(t);
  return sample(t, cls);
}

/* the slot of a block start p, live or freed; NULL when p is none */
static slot_t *slot_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (!pool || a < (uintptr_t)pool + HK_PAGE || a >= (uintptr_t)slot_end(nslots - 1)) return NULL;
  slot_t *m = &slots[slot_at(a)];
  return HK_LOAD_ACQUIRE(m->state) != S_NEVER && m->ptr == a ? m : NULL;
}

/* a bad free or realloc of a sampled block: the block and its stacks, then
 * the report every bad free makes (which aborts, as the knob says) */
static void bad_free(const char *what, void *p, const slot_t *m, const char *why) {
  out_t o;
  out_init(&o);
  put(&o, "hakmem: guarded: ");
  put(&o, what);
  put(&o, "(");
  put_hex(&o, (uintptr_t)p);
  put(&o, "): ");
  put(&o, why);
  put(&o, ": the ");
  put_block(&o, m);
  hk_write_flush(&o.w);
}

bool hk_guarded_free(const char *what, void *p) {
  slot_t *m = slot_of(p);
  if (!m) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return false;
  }
  uintptr_t pc[DEPTH];
  guarded_tls_t *t = tls_get();
  if (!t->warm && HK_LOAD_ACQUIRE(stacks_ok)) thread_warm(t);  /* (free: no list is being cut) */
  int was = t->busy;
  t->busy = 1;
  uint32_t n = capture(pc);
  t->busy = was;
  hk_lock(&pool_lock);
  if (m->state != S_LIVE) {
    slot_t copy = *m;
    hk_unlock(&pool_lock);
    bad_free(what, p, &copy, HK_WHY_DOUBLE_FREE);
    hk_report_invalid(what, p, HK_WHY_DOUBLE_FREE);
    return false;
  }
  /* the left slack: an underflow that stayed in the block's first page */
  uint8_t *b = (uint8_t *)p, *first = (uint8_t *)((uintptr_t)b & ~(uintptr_t)(HK_PAGE - 1));
  size_t bad = 0;
  for (uint64_t *q = (uint64_t *)first; q < (uint64_t *)b; q++)  /* (b is 16-byte aligned) */
    if (*q != FILL * 0x0101010101010101ull) {
      uint8_t *c = (uint8_t *)q;
      while (*c == FILL) c++;
      bad = (size_t)(b - c);
      break;
    }
  m->ftid = hk_os_thread_kid();
  m->fn = n;
  memcpy(m->fpc, pc, n * sizeof *pc);
  HK_STORE_RELEASE(m->state, S_FREED);
  uint8_t *end = b + m->size;
  pages_close(first, (size_t)(end - first));
  uint32_t i = (uint32_t)(m - slots);
  queue[(qhead + qcount) % nslots] = i;
  HK_STORE_RELAXED(qcount, qcount + 1);
  live--;
  slot_t copy = *m;
  hk_unlock(&pool_lock);
  if (bad) {
    out_t o;
    out_init(&o);
    put(&o, "hakmem: guarded: heap underflow found at ");
    put(&o, what);
    put(&o, ": the ");
    put_dec(&o, bad);
    put(&o, " bytes before the block hold bytes written there, before the ");
    put_block(&o, &copy);
    hk_write_flush(&o.w);
    hk_report_invalid(what, p, "heap underflow before a sampled block (written before its start)");
    return false;
  }
  return true;
}

size_t hk_guarded_usable(const void *p) {
  const slot_t *m = slot_of(p);
  return m && HK_LOAD_ACQUIRE(m->state) == S_LIVE ? m->size : 0;
}

void hk_guarded_counts(size_t *nlive, uint64_t *ntaken, uint64_t *nskipped, uint64_t *nthrottled) {
  hk_lock(&pool_lock);
  *nlive = live;
  *ntaken = taken;
  *nskipped = HK_LOAD_RELAXED(skipped);
  *nthrottled = HK_LOAD_RELAXED(throttled);
  hk_unlock(&pool_lock);
}

void hk_guarded_census(uint64_t live_by_class[HK_NCLASS]) {
  if (!pool || !slots) return;
  hk_lock(&pool_lock);
  for (uint32_t i = 0; i < nslots; i++)
    if (slots[i].state == S_LIVE) live_by_class[hk_class_of(slots[i].size)]++;
  hk_unlock(&pool_lock);
}

/* ---- start-up and fork ------------------------------------------------------------ */

void hk_guarded_init(void) {
  if (!HK_GUARDED_BUILD || hk_knobs.guarded_rate <= 0 || hk_knobs.guarded_slots <= 0) return;
  nslots = (uint32_t)hk_knobs.guarded_slots;
  rate = (uint64_t)hk_knobs.guarded_rate;
  per_sec = (uint64_t)hk_knobs.guarded_per_sec;
  size_t need = HK_PAGE + (size_t)nslots * STRIDE;
  pool_bytes = hk_align_up(need, HK_SS_SIZE);
  markers = hk_os_guard_markers();
  pool = markers ? hk_os_map_aligned(pool_bytes, HK_SS_SIZE) : hk_os_reserve_aligned(pool_bytes, HK_SS_SIZE);
  if (pool && markers && !hk_os_guard(pool, pool_bytes)) {
    hk_os_unmap(pool, pool_bytes);
    pool = NULL;
  }
  size_t meta = hk_align_up((size_t)nslots * (sizeof *slots + sizeof *queue), HK_PAGE);
  uint8_t *tab = pool ? hk_os_map_aligned(meta, HK_PAGE) : NULL;
  if (!tab) {
    if (pool) hk_os_unmap(pool, pool_bytes);
    pool = NULL;
    hk_message("hakmem: warning: HAKMEM_GUARDED_RATE: no memory for the pool; sampling is off\n");
    return;
  }
  slots = (slot_t *)tab;
  queue = (uint32_t *)(tab + (size_t)nslots * sizeof *slots);
  for (uint32_t i = 0; i < nslots; i++) queue[i] = i;
  qhead = 0;
  qcount = nslots;
  for (size_t off = 0; off < pool_bytes; off += HK_SS_SIZE) hk_chunk_set(pool + off, HK_CHUNK_GUARDED);
  HK_STORE_RELAXED(pool_lo, (uintptr_t)pool);
  HK_STORE_RELAXED(pool_hi, (uintptr_t)pool + pool_bytes);
  seed = hk_random(HK_RANDOM_GUARDED, 0);
  tokens_ms = hk_os_now_ms();
  HK_STORE_RELEASE(hk_guarded_on, 1);
}

/* Stack walks may start: a constructor of default priority, not hk_init's
 * (101). In a program linked with -static, libgcc finds the program's
 * frames only once crtbegin's frame_dummy, a constructor of default
 * priority linked before hakmem, has registered them; a walk before
 * aborts. Samples taken before this have no stacks; with
 * HAKMEM_GUARDED_STACKS=0 (lowmem) none has, and no thread walks at all
 * (no warm-up either). */
__attribute__((constructor)) static void guarded_stacks(void) {
  hk_knobs_init();
  if (HK_LOAD_RELAXED(hk_knobs.guarded_stacks)) HK_STORE_RELEASE(stacks_ok, 1);
}

void hk_guarded_fork_prepare(void) { hk_lock(&pool_lock); }
void hk_guarded_fork_parent(void) { hk_unlock(&pool_lock); }
void hk_guarded_fork_child(void) {
  hk_lock_reset(&pool_lock);
  hk_unwind_fork_child();
}
