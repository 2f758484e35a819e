/* Heap profiling by call site: see prof.h and docs/PROFILING.md.
 *
 * Sampling: each thread keeps, per size class and one for the large tier,
 * the bytes left to the next sample point; the points form a Poisson
 * process along the bytes allocated (exponential gaps, mean
 * HAKMEM_PROF_SAMPLE), as jemalloc and tcmalloc do. Per-class streams are
 * independent processes of the same rate, so their union samples every byte
 * with the same chance. A block of c bytes holds at least one point with
 * probability q = 1 - exp(-c/R) and is then counted as 1/q objects and c/q
 * bytes: unbiased for any size, and a block much larger than R (q ~ 1) is
 * counted once at its size.
 *
 * The small tiers are sampled without touching the fast path: the slow
 * path, which runs when the free list it handed out is used up, hands out
 * a list cut at the next sample point (refill.c, hk_prof_left), so the allocation
 * that holds the point comes back to the slow path (hk_prof_small). */
#define _GNU_SOURCE
#include "mem/prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../include/hakmem.h"
#include "base/chunk_map.h"
#include "mem/freelist.h"
#include "base/knobs.h"
#include "base/path.h"
#include "base/libc.h"  /* memcpy, memset: glibc's, unchecked (measure copy) */
#include "base/lock.h"
#include "pal/os.h"
#include "base/random.h"
#include "base/report.h"
#include "base/size_class.h"
#include "base/callstack.h"
#include "base/writer.h"

int hk_prof_on;

/* ---- per-thread sampling state ---------------------------------------------- */

#define NSTREAM (HK_NCLASS + 1)  /* one per class, then the large tier */

typedef struct {
  uint64_t rng;
  int busy;                      /* sampling now: a nested malloc is not sampled */
  int ready;
  int64_t left[NSTREAM];         /* bytes to the next sample point */
} prof_tls_t;

static __thread prof_tls_t tls __attribute__((tls_model("initial-exec")));

static double rate;              /* HAKMEM_PROF_SAMPLE, bytes */
static uint64_t seed;
static pid_t start_pid;
static uint64_t thread_seq;

/* ln(u) for u in (0, 1], without libm (a static link needs no -lm): u =
 * m 2^e with m in [1/sqrt 2, sqrt 2), ln m = 2 atanh(t), t = (m-1)/(m+1),
 * |t| < 0.172, whose series is exact to 1e-9 by its 5th term (a gap
 * needs no more) */
static double ln01(double u) {
  uint64_t b;
  memcpy(&b, &u, sizeof b);
  int e = (int)((b >> 52) & 0x7ff) - 1023;
  b = (b & ((1ull << 52) - 1)) | (1023ull << 52);
  double m;
  memcpy(&m, &b, sizeof m);
  if (m > 1.4142135623730951) { m *= 0.5; e++; }
  double t = (m - 1) / (m + 1), t2 = t * t;
  double s = t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9)))));
  return e * 0.69314718055994530942 + 2 * s;
}

/* 1 - e^-x for x >= 0, without libm: the series for small x (no
 * cancellation), else e^-x = 2^-k e^-r with r in [0, ln 2) */
static double one_minus_exp_neg(double x) {
  if (x < 0.5) {
    double term = x, sum = 0;
    for (int n = 1; n <= 20; n++) { sum += term; term *= -x / (n + 1); }
    return sum;
  }
  if (x > 40) return 1.0;
  int k = (int)(x / 0.69314718055994530942);
  double r = x - k * 0.69314718055994530942, term = 1, er = 0;
  for (int n = 1; n <= 25; n++) { er += term; term *= -r / n; }
  return 1.0 - er / (double)(1ull << k);
}

/* an exponential gap of mean `rate`, at least one byte */
static int64_t draw(prof_tls_t *t) {
  double u = ((double)(hk_random_next(&t->rng) >> 11) + 1.0) * 0x1p-53;  /* (0, 1] */
  double g = -ln01(u) * rate;
  if (g > 0x1p62) g = 0x1p62;
  return g < 1.0 ? 1 : (int64_t)g;
}

static prof_tls_t *tls_get(void) {
  prof_tls_t *t = &tls;
  if (HK_UNLIKELY(!t->ready)) {
    t->rng = hk_random_stream(seed, HK_ADD_RELAXED(thread_seq, 1));
    for (unsigned i = 0; i < NSTREAM; i++) t->left[i] = draw(t);
    t->ready = 1;
  }
  return t;
}

/* one allocation of c bytes on stream k: does it hold a sample point? */
static bool take(prof_tls_t *t, unsigned k, size_t c) {
  t->left[k] -= (int64_t)c;
  if (t->left[k] >= 0) return false;
  do t->left[k] += draw(t); while (t->left[k] < 0);
  return true;
}

/* ---- stacks ----------------------------------------------------------------- */

#define DEPTH 64
#define NSTACK 16384             /* a power of two */

typedef struct {
  uint64_t hash;
  uint32_t depth, used;
  double aobjs, abytes;          /* allocated, scaled */
  double lobjs, lbytes;          /* live, scaled */
  uintptr_t pc[DEPTH];
} stack_t_;

static stack_t_ *stacks;         /* NSTACK entries, mapped at init */
static unsigned nstacks;
static hk_lock_t prof_lock = HK_LOCK_INIT;
static double total_alloc_bytes, next_dump_at;
static unsigned dump_seq;
static uint64_t samples, dropped;
static size_t live_blocks, live_mapped;  /* sampled blocks now */

static uintptr_t self_lo, self_hi;  /* hakmem's own code: frames skipped */

/* the stack, less hakmem's own frames at its top */
static unsigned capture(uintptr_t *pc) {
  uintptr_t all[DEPTH + 16];
  unsigned n = hk_unwind(all, DEPTH + 16), k = 0;
  while (k < n && all[k] >= self_lo && all[k] < self_hi) k++;
  n = n - k < DEPTH ? n - k : DEPTH;
  memcpy(pc, all + k, n * sizeof *pc);
  return n;
}

static uint64_t stack_hash(const uintptr_t *pc, unsigned n) {
  uint64_t h = 0x84222325cbf29ce4ull ^ n;
  for (unsigned i = 0; i < n; i++) h = (h ^ pc[i]) * 0x100000001b3ull;
  return h | 1;  /* 0: an empty slot */
}

/* The entry of a stack, added if new; NULL when the table is full. Locked. */
static stack_t_ *stack_find(const uintptr_t *pc, unsigned n) {
  uint64_t h = stack_hash(pc, n);
  for (unsigned i = (unsigned)h & (NSTACK - 1), k = 0; k < NSTACK; i = (i + 1) & (NSTACK - 1), k++) {
    stack_t_ *e = &stacks[i];
    if (e->hash == 0) {
      if (nstacks >= NSTACK - NSTACK / 8) return NULL;
      e->hash = h;
      e->depth = n;
      memcpy(e->pc, pc, n * sizeof *pc);
      nstacks++;
      return e;
    }
    if (e->hash == h && e->depth == n && memcmp(e->pc, pc, n * sizeof *pc) == 0) return e;
  }
  return NULL;
}

/* ---- sampled blocks ------------------------------------------------------------
 * A sampled block has a slot of its own: 64 KiB of a 2 MiB chunk marked
 * HK_CHUNK_PROF, the block at offset MIN_OFF (or its alignment, a page at
 * most). What the profiler knows of it is kept beside, in meta[] by slot
 * number, not in the slot: a free then reads nothing of the block's memory
 * (a line the program has long left, a cache miss per sampled free). Chunks
 * are mapped as slots run out and kept, numbered in order; chunk_tab finds
 * a chunk's number from its address. A freed slot's entry keeps saying
 * "freed" (a second free of the block is named a double free) and its
 * pages stay until it is reused. */
#define MIN_OFF ((size_t)64)
#define SLOT_SHIFT 16
#define SLOT ((size_t)1 << SLOT_SHIFT)
#define SLOTS_PER_CHUNK (HK_SS_SIZE / SLOT)
#define NSLOT_MAX 65536u         /* slots at most: 4 GiB of address space */
#define NCHUNK_TAB 4096u         /* a power of two, twice the chunks at most */
_Static_assert(HK_MID_MAX + HK_PAGE <= SLOT, "a mid block at its alignment fits in a slot");
_Static_assert(NCHUNK_TAB >= 2 * (NSLOT_MAX / SLOTS_PER_CHUNK), "chunk table half full at most");

typedef struct {
  uint32_t live;
  uint32_t off;                  /* the block's offset in its slot; 0: never used */
  uint32_t stack;                /* index into stacks; NSTACK: none */
  uint32_t pad;
  size_t size;                   /* usable bytes */
  double weight;                 /* 1/q: objects this sample stands for */
} meta_t;

static meta_t *meta;             /* NSLOT_MAX entries, mapped at init */
static uintptr_t *chunk_tab;          /* chunk address + its number; 0: empty */
static uint8_t **free_slots;     /* NSLOT_MAX entries, mapped at init */
static unsigned nfree, nslots;

static unsigned chunk_home(uintptr_t c) { return (unsigned)(((c >> 21) * 0x9e3779b97f4a7c15ull) >> 52) & (NCHUNK_TAB - 1); }

/* the slot number of address a in a profiler chunk; -1: none of ours */
static long slot_no(uintptr_t a) {
  uintptr_t c = a & ~(uintptr_t)(HK_SS_SIZE - 1);
  for (unsigned i = chunk_home(c), k = 0; k < NCHUNK_TAB; i = (i + 1) & (NCHUNK_TAB - 1), k++) {
    uintptr_t e = HK_LOAD_ACQUIRE(chunk_tab[i]);
    if (e == 0) return -1;
    if ((e & ~(uintptr_t)(HK_SS_SIZE - 1)) == c)
      return (long)((e & (HK_SS_SIZE - 1)) * SLOTS_PER_CHUNK + ((a >> SLOT_SHIFT) & (SLOTS_PER_CHUNK - 1)));
  }
  return -1;
}

/* a free slot, mapping a chunk of them when none is left. Locked. */
static uint8_t *slot_get(void) {
  if (nfree == 0) {
    if (nslots + SLOTS_PER_CHUNK > NSLOT_MAX) return NULL;
    uint8_t *c = hk_os_map_aligned(HK_SS_SIZE, HK_SS_SIZE);
    if (!c) return NULL;
    unsigned i = chunk_home((uintptr_t)c);
    while (HK_LOAD_RELAXED(chunk_tab[i])) i = (i + 1) & (NCHUNK_TAB - 1);
    HK_STORE_RELEASE(chunk_tab[i], (uintptr_t)c + nslots / SLOTS_PER_CHUNK);
    hk_chunk_set(c, HK_CHUNK_PROF);
    for (size_t k = SLOTS_PER_CHUNK; k-- > 0;) free_slots[nfree++] = c + k * SLOT;
    nslots += (unsigned)SLOTS_PER_CHUNK;
  }
  return free_slots[--nfree];
}

/* A sample's stack and weight into the table; its entry (NSTACK: none).
 * Locked. *dump: an interval profile is due. */
static uint32_t record(const uintptr_t *pc, unsigned n, size_t size, double weight, bool *dump) {
  uint32_t idx = NSTACK;
  stack_t_ *e = stack_find(pc, n);
  if (!e) e = stack_find(pc, n ? 1 : 0);  /* full: its innermost frame alone */
  if (e) {
    idx = (uint32_t)(e - stacks);
    e->aobjs += weight;
    e->abytes += weight * (double)size;
    e->lobjs += weight;
    e->lbytes += weight * (double)size;
    samples++;
  } else {
    dropped++;
  }
  total_alloc_bytes += weight * (double)size;
  if (hk_knobs.prof_interval && total_alloc_bytes >= next_dump_at) {
    next_dump_at += (double)hk_knobs.prof_interval;
    *dump = true;
  }
  return idx;
}

/* a sample freed: its share of live comes off. Locked. */
static void unrecord(uint32_t idx, size_t size, double weight) {
  if (idx >= NSTACK) return;
  stacks[idx].lobjs -= weight;
  stacks[idx].lbytes -= weight * (double)size;
}

/* This process's profile: HAKMEM_PROF_FILE with %p the pid and %% a %
 * (base/path.h); a fork child of a name without %p adds .PID, so that its
 * profile lies beside its parent's. false, and dst empty, if too long. */
static bool prof_path(char *dst, size_t size) {
  bool ok = hk_path_expand(hk_knobs.prof_file, dst, size);
  pid_t me = getpid();
  if (ok && me != start_pid && !hk_path_has_pid(hk_knobs.prof_file)) {
    size_t n = strlen(dst);
    int w = snprintf(dst + n, size - n, ".%d", (int)me);
    ok = w > 0 && (size_t)w < size - n;
  }
  if (!ok) dst[0] = 0;
  return ok;
}

#define PROF_PATH_MAX (sizeof hk_knobs.prof_file + 128)

/* FILE.NNNN.heap (FILE, expanded, less its .heap) */
static void dump_due(void) {
  char f[PROF_PATH_MAX], path[PROF_PATH_MAX + 16];
  if (!prof_path(f, sizeof f)) return;
  size_t n = strlen(f);
  if (n >= 5 && strcmp(f + n - 5, ".heap") == 0) n -= 5;
  snprintf(path, sizeof path, "%.*s.%04u.heap", (int)n, f, ++dump_seq);
  hak_prof_dump(path);
}

void hk_prof_dump_next(void) {
  if (hk_prof_on) dump_due();
}

static double weight_of(size_t size) { return 1.0 / one_minus_exp_neg((double)size / rate); }
static double class_weight[HK_NCLASS];  /* weight_of each class's size, set at init */

static void *sample_alloc(prof_tls_t *t, size_t size, size_t align, double weight) {
  size_t off = align > MIN_OFF ? align : MIN_OFF;
  uintptr_t pc[DEPTH];
  t->busy = 1;  /* the unwinder's first use may call malloc */
  unsigned n = capture(pc);
  bool dump = false;
  hk_lock(&prof_lock);
  uint8_t *slot = slot_get();
  if (!slot) {
    hk_unlock(&prof_lock);
    t->busy = 0;
    return NULL;
  }
  uint8_t *p = slot + off;
  meta_t *m = &meta[slot_no((uintptr_t)slot)];
  m->size = size;
  m->weight = weight;
  m->stack = record(pc, n, size, weight, &dump);
  HK_STORE_RELAXED(m->off, (uint32_t)off);
  HK_STORE_RELEASE(m->live, 1);
  live_blocks++;
  live_mapped += SLOT;
  hk_unlock(&prof_lock);
  if (dump) dump_due();
  t->busy = 0;
  return p;
}

void *hk_prof_small(unsigned cls) {
  prof_tls_t *t = tls_get();
  if (t->busy) return NULL;
  size_t c = hk_class_bytes(cls);
  if (!take(t, cls, c)) return NULL;
  /* aligned as the class's blocks are: an aligned malloc picks a class
   * whose size is a multiple of its alignment (up to a page) */
  size_t align = c & -c;
  return sample_alloc(t, c, align < HK_PAGE ? align : HK_PAGE, class_weight[cls]);
}

/* ---- sampled large blocks -------------------------------------------------------
 * Large blocks stay where the large tier put them (its cache and its
 * reuse of zeroed pages matter more for them than for small ones, and a
 * block above the sampling interval is nearly always sampled): their
 * samples are kept by address, and the large tier's free (a slow path)
 * asks for the address. Open addressing, deletion by backward shift. */
#define NLARGE 65536u            /* a power of two */

typedef struct { uintptr_t addr; uint32_t stack; uint32_t pad; size_t size; double weight; } lsample_t;

static lsample_t *ltab;
static unsigned nlarge;

static unsigned lslot(uintptr_t a) { return (unsigned)((a >> 12) * 0x9e3779b97f4a7c15ull >> 48) & (NLARGE - 1); }

void hk_prof_large(void *p, size_t size) {
  prof_tls_t *t = tls_get();
  if (t->busy) return;
  if (!take(t, HK_NCLASS, size ? size : 1)) return;
  uintptr_t pc[DEPTH];
  t->busy = 1;
  unsigned n = capture(pc);
  double weight = weight_of(size);
  bool dump = false;
  hk_lock(&prof_lock);
  if (HK_LOAD_RELAXED(nlarge) < NLARGE / 4 * 3) {
    unsigned i = lslot((uintptr_t)p);
    while (ltab[i].addr && ltab[i].addr != (uintptr_t)p) i = (i + 1) & (NLARGE - 1);
    if (ltab[i].addr) unrecord(ltab[i].stack, ltab[i].size, ltab[i].weight);  /* (missed free) */
    else HK_ADD_RELAXED(nlarge, 1);
    ltab[i] = (lsample_t){ (uintptr_t)p, record(pc, n, size, weight, &dump), 0, size, weight };
  } else {
    dropped++;
  }
  hk_unlock(&prof_lock);
  if (dump) dump_due();
  t->busy = 0;
}

void hk_prof_forget(const void *p) {
  if (HK_LOAD_RELAXED(nlarge) == 0) return;
  hk_lock(&prof_lock);
  unsigned i = lslot((uintptr_t)p);
  while (ltab[i].addr && ltab[i].addr != (uintptr_t)p) i = (i + 1) & (NLARGE - 1);
  if (ltab[i].addr) {
    unrecord(ltab[i].stack, ltab[i].size, ltab[i].weight);
    HK_SUB_RELAXED(nlarge, 1);
    /* backward shift: move up every later entry that may sit at the hole */
    for (unsigned j = (i + 1) & (NLARGE - 1); ltab[j].addr; j = (j + 1) & (NLARGE - 1)) {
      unsigned home = lslot(ltab[j].addr);
      if (((j - home) & (NLARGE - 1)) >= ((j - i) & (NLARGE - 1))) {
        ltab[i] = ltab[j];
        i = j;
      }
    }
    ltab[i].addr = 0;
  }
  hk_unlock(&prof_lock);
}

/* The slow path just popped one block of class cls (its bytes are
 * counted): the fast path may hand out the blocks that fit whole in the
 * bytes left to the next point, and the slab's sample point (freelist.h)
 * cuts the list after them (refill.c, with the guarded sampler's point). */
uint64_t hk_prof_left(unsigned cls) { return (uint64_t)tls_get()->left[cls]; }
void hk_prof_consume(unsigned cls, uint64_t bytes) { tls_get()->left[cls] -= (int64_t)bytes; }

/* p's entry when p is the start of a block of ours (live or freed), else NULL */
static meta_t *meta_of(const void *p) {
  long id = slot_no((uintptr_t)p);
  if (id < 0) return NULL;
  meta_t *m = &meta[id];
  uint32_t off = HK_LOAD_RELAXED(m->off);
  return off && off == ((uintptr_t)p & (SLOT - 1)) ? m : NULL;
}

bool hk_prof_free(const char *what, void *p) {
  meta_t *m = meta_of(p);
  if (!m) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return false;
  }
  hk_lock(&prof_lock);  /* (the one atomic here: live is changed under it) */
  if (!HK_LOAD_RELAXED(m->live)) {
    hk_unlock(&prof_lock);
    hk_report_invalid(what, p, HK_WHY_DOUBLE_FREE);
    return false;
  }
  HK_STORE_RELAXED(m->live, 0);
  unrecord(m->stack, m->size, m->weight);
  live_blocks--;
  live_mapped -= SLOT;
  /* (its pages stay: a sampled block is small) */
  free_slots[nfree++] = (uint8_t *)((uintptr_t)p & ~(uintptr_t)(SLOT - 1));
  hk_unlock(&prof_lock);
  return true;
}

size_t hk_prof_usable(const void *p) {
  const meta_t *m = meta_of(p);
  if (!m) return 0;
  return HK_LOAD_ACQUIRE(m->live) ? m->size : 0;
}

void hk_prof_live(size_t *blocks, size_t *mapped) {
  hk_lock(&prof_lock);
  *blocks = live_blocks;
  *mapped = live_mapped;
  hk_unlock(&prof_lock);
}

/* the pages of the free slots go back (malloc_trim); the bytes purged */
size_t hk_prof_trim(void) {
  if (!HK_LOAD_RELAXED(hk_prof_on)) return 0;
  size_t n = 0;
  hk_lock(&prof_lock);
  for (unsigned i = 0; i < nfree; i++) hk_os_purge(free_slots[i], SLOT);
  n = (size_t)nfree * SLOT;
  hk_unlock(&prof_lock);
  return n;
}

/* ---- the profile ---------------------------------------------------------------
 * The legacy gperftools heap profile, which google-pprof reads: a header of
 * totals, one line per stack ("live objs: live bytes [alloc objs: alloc
 * bytes] @ pc pc ...", innermost first), then the process's mappings, by
 * which pprof symbolises the addresses afterwards. Counts are already
 * scaled (the "heapprofile" header: pprof scales nothing). */

static long long rnd(double v) { return v <= 0 ? 0 : (long long)(v + 0.5); }

/* leaks: only the stacks with live blocks, each counted by them alone */
static int write_profile(const char *path, bool leaks) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  char out_buf[4096];
  hk_writer_t o;
  hk_writer_to_fd(&o, fd, out_buf, sizeof out_buf);
  double lo = 0, lb = 0, ao = 0, ab = 0;
  for (unsigned i = 0; i < NSTACK; i++) {
    const stack_t_ *e = &stacks[i];
    if (!e->hash) continue;
    lo += e->lobjs; lb += e->lbytes; ao += e->aobjs; ab += e->abytes;
  }
  if (leaks) { ao = lo; ab = lb; }
  hk_write_fmt(&o, "heap profile: %6lld: %8lld [%6lld: %8lld] @ heapprofile\n", rnd(lo), rnd(lb), rnd(ao), rnd(ab));
  for (unsigned i = 0; i < NSTACK; i++) {
    const stack_t_ *e = &stacks[i];
    if (!e->hash || (leaks && rnd(e->lbytes) == 0)) continue;
    hk_write_fmt(&o, "%6lld: %8lld [%6lld: %8lld] @", rnd(e->lobjs), rnd(e->lbytes),
                 rnd(leaks ? e->lobjs : e->aobjs), rnd(leaks ? e->lbytes : e->abytes));
    for (unsigned k = 0; k < e->depth; k++) hk_write_fmt(&o, " 0x%lx", (unsigned long)e->pc[k]);
    hk_write_str(&o, "\n");
  }
  hk_write_str(&o, "\nMAPPED_LIBRARIES:\n");
  int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (mfd >= 0) {
    char buf[4096];
    ssize_t r;
    while ((r = read(mfd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
      if (r > 0) hk_write_bytes(&o, buf, (size_t)r);
    close(mfd);
  }
  int bad = !hk_write_flush(&o);
  if (close(fd) != 0) bad = 1;
  return bad ? -1 : 0;
}

HK_EXPORT int hak_prof_dump(const char *path) {
  if (!hk_prof_on || !path) { errno = EINVAL; return -1; }
  prof_tls_t *t = tls_get();
  int was = t->busy;
  t->busy = 1;  /* (nothing here should allocate; if it does, unsampled) */
  hk_lock(&prof_lock);
  int r = write_profile(path, false);
  hk_unlock(&prof_lock);
  t->busy = was;
  return r;
}

void hk_prof_at_exit(void) {
  if (!hk_prof_on) return;
  char path[PROF_PATH_MAX];
  if (!prof_path(path, sizeof path)) {
    hk_message("hakmem: prof: HAKMEM_PROF_FILE=%s is too long once expanded; no profile\n", hk_knobs.prof_file);
    return;
  }
  prof_tls_t *t = tls_get();
  t->busy = 1;
  hk_lock(&prof_lock);
  int r = write_profile(path, false);
  double lo = 0, lb = 0;
  unsigned nlive = 0;
  for (unsigned i = 0; i < NSTACK; i++)
    if (stacks[i].hash && rnd(stacks[i].lbytes) > 0) { lo += stacks[i].lobjs; lb += stacks[i].lbytes; nlive++; }
  char leak_path[PROF_PATH_MAX + 8];
  int rl = 0;
  if (hk_knobs.prof_leaks) {
    snprintf(leak_path, sizeof leak_path, "%s.leaks", path);
    rl = write_profile(leak_path, true);
  }
  uint64_t ns = samples, nd = dropped;
  hk_unlock(&prof_lock);
  if (r != 0) hk_message("hakmem: prof: cannot write %s\n", path);
  else if (hk_knobs.verbose)
    hk_message("hakmem: prof: %lu samples (%lu dropped) in %s\n", (unsigned long)ns, (unsigned long)nd,
               path);
  if (hk_knobs.prof_leaks) {
    if (rl != 0) hk_message("hakmem: prof: cannot write %s\n", leak_path);
    else if (nlive)
      hk_message("hakmem: prof: leaks: about %lld bytes in %lld blocks from %u stacks live at exit "
                 "(sampled); see: google-pprof --text PROGRAM %s\n", rnd(lb), rnd(lo), nlive, leak_path);
    else hk_message("hakmem: prof: no sampled block live at exit\n");
  }
}

/* ---- start-up and fork ------------------------------------------------------------ */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if ((void *)info->dlpi_addr != arg) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (!self_lo || lo < self_lo) self_lo = lo;
    if (hi > self_hi) self_hi = hi;
  }
  return 1;
}

static int prof_ready;  /* hk_prof_init set the tables up (prof_start) */

void hk_prof_init(void) {
  if (!hk_knobs.prof) return;
  if (!HK_PROF_BUILD) {
    hk_message("hakmem: warning: HAKMEM_PROF is not supported by this build (canary, guard or valgrind); "
               "profiling is off\n");
    return;
  }
  stacks = hk_os_map_aligned(hk_align_up(NSTACK * sizeof(stack_t_), HK_PAGE), HK_PAGE);
  if (!stacks) {
    hk_message("hakmem: warning: HAKMEM_PROF: no memory for the stack table; profiling is off\n");
    return;
  }
  ltab = hk_os_map_aligned(hk_align_up(NLARGE * sizeof(lsample_t), HK_PAGE), HK_PAGE);
  free_slots = hk_os_map_aligned(hk_align_up(NSLOT_MAX * sizeof *free_slots, HK_PAGE), HK_PAGE);
  meta = hk_os_map_aligned(hk_align_up(NSLOT_MAX * sizeof *meta, HK_PAGE), HK_PAGE);
  chunk_tab = hk_os_map_aligned(hk_align_up(NCHUNK_TAB * sizeof *chunk_tab, HK_PAGE), HK_PAGE);
  if (!ltab || !free_slots || !meta || !chunk_tab) {
    hk_message("hakmem: warning: HAKMEM_PROF: no memory for the sample table; profiling is off\n");
    return;
  }
  rate = (double)hk_knobs.prof_sample;
  for (unsigned c = 0; c < HK_NCLASS; c++) class_weight[c] = weight_of(hk_class_bytes(c));
  seed = hk_knobs.prof_seed ? (uint64_t)hk_knobs.prof_seed : hk_random(HK_RANDOM_PROF, 0);
  next_dump_at = (double)hk_knobs.prof_interval;
  if (!hk_knobs.prof_file[0])
    snprintf(hk_knobs.prof_file, sizeof hk_knobs.prof_file, "hakmem-prof.%d.heap", (int)getpid());
  start_pid = getpid();
  /* hakmem's own frames are left out of stacks; not when it is linked into
   * the program itself (then they are at the top of every stack) */
  Dl_info self;
  if (dladdr((void *)&hk_prof_init, &self) && self.dli_fbase && self.dli_fname && self.dli_fname[0])
    dl_iterate_phdr(find_self, self.dli_fbase);
  prof_ready = 1;  /* sampling starts in prof_start */
}

/* The unwinder's first walk, then sampling on: a constructor of default
 * priority, not hk_init's (101). In a program linked with -static,
 * libgcc's unwinder finds the program's frames only once crtbegin's
 * frame_dummy (a constructor of default priority, linked before hakmem)
 * has registered them, and aborts on a walk before that. Allocations made
 * before it (other libraries' constructors) are not sampled. */
__attribute__((constructor)) static void prof_start(void) {
  if (!prof_ready) return;
  /* the first walk may load and allocate: here, unsampled */
  prof_tls_t *t = tls_get();
  t->busy = 1;
  uintptr_t pc[DEPTH];
  hk_unwind_with(HK_UNWIND_LIBGCC, pc, DEPTH);
  hk_unwind(pc, DEPTH);
  t->busy = 0;
  HK_STORE_RELEASE(hk_prof_on, 1);
}

void hk_prof_fork_prepare(void) { hk_lock(&prof_lock); }
void hk_prof_fork_parent(void) { hk_unlock(&prof_lock); }
void hk_prof_fork_child(void) {
  hk_lock_reset(&prof_lock);
  hk_unwind_fork_child();
}
