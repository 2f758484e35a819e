#include "backend/span.h"

#include <errno.h>
#include <string.h>

#include "base/bits.h"
#include "base/chunk_map.h"
#include "base/knobs.h"
#include "base/libc.h"  /* calloc's zeroing: glibc's, unchecked */
#include "base/lock.h"
#include "base/measures.h"
#include "pal/os.h"
#include "base/report.h"
#include "base/track.h"

#define ARENA_SHIFT 30
#define ARENA_SIZE ((size_t)1 << ARENA_SHIFT)
#define ARENA_PAGES ((uint32_t)(ARENA_SIZE / HK_PAGE))
#define PAGE_SHIFT 12
#define HUGE_PAGES ((uint32_t)(HK_SS_SIZE >> PAGE_SHIFT))  /* pages of a huge page (2 MiB chunk) */
#define GRAIN_PAGES 16u  /* the purge clock's unit of age: 64 KiB */
#define ARENA_MAGIC 0x68616b6d656d5350ull /* "hakmemSP" */
#define NBINS 72
#define BIN_SCAN 32   /* free runs looked at per bin */
#define ZERO_RUNS 16
/* The guard measure (secure build): every live block's last page, the last
 * page of every free run and the page after an arena's descriptor are
 * PROT_NONE (an arena starts so, and a freed block's guard stays closed),
 * so the pages on both sides of a live block are guards: a write past it or
 * before it faults. Allocating opens the block's pages (one mprotect, which
 * costs only where pages are closed) and closes its last page. A freed
 * block of up to HAKMEM_CLOSE_FREED_KB (256 KiB) is closed whole at once, so a write
 * through a dangling pointer faults too; bigger ones are not: closing costs
 * a page-table walk over every resident page, twice (bench_large, 64 KiB to
 * 32 MiB blocks, ran at 0.05 of the default build with every freed block
 * closed). Every freed block then waits in the quarantine (below) before its
 * pages can be handed out again. */
static uint32_t close_pages(void) { return (uint32_t)(hk_knobs.close_freed_kb >> 2); }  /* HAKMEM_CLOSE_FREED_KB */
#define GUARD_PAGES (HK_M_GUARD ? 1u : 0u)  /* resident runs calloc zeroes one by one; more: one memset */

/* Boundary tags: only the first (HEAD) and last (TAIL) page of a run have
 * one; a one-page free run has both on one entry. FREED marks the first page
 * of a block that was freed into a larger run, so that a second free of it
 * is still called a double free. */
enum { T_HEAD = 1, T_TAIL = 2, T_LIVE = 4, T_FREE = 8, T_FREED = 16, T_POPULATED = 32 };
/* a live run lent to a superslab (hk_span_take_ss): no block of the
 * program's, so no free, check or resize finds it */
#define KIND_SS 0xfeu
/* T_POPULATED: a live block whose fresh pages calloc faulted in whole (it
 * says nothing of how the program touches its blocks: not sampled). */

typedef struct {
  uint32_t npages;
  uint8_t tag;
  uint8_t kind;  /* live: HK_KIND_* */
  uint16_t bin;  /* free: its bin */
  union {
    struct { uint32_t next, prev, dnext, dprev, stamp, ndirty; } f;  /* free run (head) */
    struct { uint32_t requested; uint64_t fresh; } l;                 /* live block (head) */
  };
} entry_t;
_Static_assert(sizeof(entry_t) == 32, "entry_t is 32 bytes");
_Static_assert(HK_SPAN_MAX < ((size_t)1 << 32), "requested sizes fit 32 bits");

typedef struct hk_arena {
  uint64_t magic;
  struct hk_arena *next;          /* in its shard */
  uint32_t first_page;           /* pages before it hold this descriptor */
  uint32_t shard;                /* whose lock guards it */
  uint32_t bins[NBINS];          /* free runs by size (page index, 0: none) */
  uint32_t dirty_head, dirty_tail; /* free runs with resident pages, in order of freeing */
  uint32_t free_pages;
  uint32_t huge;                 /* advised huge pages (else plain: see "huge or plain") */
  uint64_t born_ms;              /* stamps count from here */
  uint32_t freed_at[ARENA_PAGES / GRAIN_PAGES]; /* per 64 KiB: stamp of its last free (grains_freed) */
  uint64_t bits[ARENA_PAGES / 64]; /* page may be resident (touched, not purged) */
  uint32_t open_to;              /* guard markers: pages from here on are PROT_NONE */
  uint64_t closed[GUARD_PAGES ? ARENA_PAGES / 64 : 1]; /* guard markers: page carries one */
  uint64_t shut[GUARD_PAGES ? ARENA_PAGES / 64 : 1];   /* a freed block's page closed PROT_NONE */
  uint32_t islands;              /* runs of shut pages (shut_set) */
  entry_t e[ARENA_PAGES];
} hk_arena_t;

static size_t arena_count;  /* changed under a shard's lock; read without it (hk_span_take_ss) */

/* The quarantine (guard measure): the last QUAR_RUNS freed blocks (closed
 * when they are at most HAKMEM_CLOSE_FREED_KB), not yet free runs, so that no
 * request gets a just-freed block's address back, whatever its size. At
 * most QUAR_PAGES pages wait, but the newest block always does (a bigger
 * quarantine kept so many pages out of reuse that the cap's purges ran at
 * every free: bench_large 0.32 of the default build). Their pages are
 * purged on the purge clock like those of free runs; trim empties it.
 * One per shard (a block waits in its arena's), under the shard's lock. */
#define QUAR_ON HK_M_GUARD
#define QUAR_RUNS 16u
#define QUAR_PAGES 2048u  /* 8 MiB in all shards: past it the oldest go (the newest always stays) */
typedef struct { hk_arena_t *a; uint32_t i; } quar_t;
static size_t quar_pages;  /* read without the lock by the stats */

/* ---- shards ----
 * Threads meet on a lock per shard rather than on one for all: with one
 * lock, big_heap on 16 CPUs ran at 0.85 of tcmalloc at 16 threads while it
 * led at 4. A shard is a list of arenas and their lock. A thread allocates
 * from its own shard (threads take the shards in turn; a single thread's
 * program uses the first only); a free, resize or check takes the lock of
 * the block's arena's shard. How many (HAKMEM_SPAN_SHARDS): one per CPU
 * the process may run on, at most HK_SPAN_SHARDS (lowmem: one). Shards
 * keep their free runs apart, which costs memory, so a shard maps its
 * first arena when its first block is asked for (address space: pages are
 * touched as blocks are carved); where its own fit is mostly fresh pages
 * it takes another shard's free run with as many resident pages as it
 * needs half of, if there is one; and before it maps another arena it
 * searches the other shards, one lock at a time. The purge clock, the cap,
 * trim and fork take every shard's lock, in order. Measured on 16 CPUs,
 * big_heap (1 GiB) at 16 threads, 5 interleaved runs: one shard 250k
 * ops/s at 1413 MB peak RSS, 8 shards 324k at 1496 MB (tcmalloc 308k,
 * 1422 MB); spreading from one shard to 8 only once the lock was found
 * taken often cost more (1591 MB: the first shard's arena kept the holes
 * and the others carved fresh pages) and was slower (295k). */
typedef struct {
  hk_lock_t lock;
  hk_arena_t *arenas;  /* oldest first */
  size_t dirty;        /* its free resident pages (atomic: others read it) */
  quar_t quar[QUAR_ON ? QUAR_RUNS : 1];
  unsigned quar_first, quar_n;
} __attribute__((aligned(64))) shard_t;
static shard_t shards[HK_SPAN_SHARDS];

static shard_t *shard_of(const hk_arena_t *a) { return &shards[a->shard]; }

/* One per CPU the process may run on, or HAKMEM_SPAN_SHARDS when set. */
static unsigned shards_now(void) {
  static unsigned used;  /* atomic; 0: not yet read (every thread reads the same) */
  unsigned n = HK_LOAD_RELAXED(used);
  if (HK_UNLIKELY(!n)) {
    n = hk_knobs.span_shards > 0 ? (unsigned)hk_knobs.span_shards : hk_os_cpu_count();
    if (n > HK_SPAN_SHARDS) n = HK_SPAN_SHARDS;
    HK_STORE_RELAXED(used, n);
  }
  return n;
}

unsigned hk_span_shards(void) { return shards_now(); }

static __thread unsigned home_seq;  /* the thread's turn + 1; 0: none yet */
static unsigned home_next;
static shard_t *home_shard(void) {
  if (!home_seq) home_seq = 1 + __atomic_fetch_add(&home_next, 1, __ATOMIC_RELAXED);
  return &shards[(home_seq - 1) % shards_now()];
}

static void lock_all(void) {
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) hk_lock(&shards[k].lock);
}
static void unlock_all(void) {
  for (unsigned k = HK_SPAN_SHARDS; k--;) hk_unlock(&shards[k].lock);
}
/* Every arena, shard by shard: next_arena(NULL) is the first (all locks held). */
static hk_arena_t *next_arena(const hk_arena_t *a) {
  if (a && a->next) return a->next;
  for (unsigned k = a ? a->shard + 1 : 0; k < HK_SPAN_SHARDS; k++)
    if (shards[k].arenas) return shards[k].arenas;
  return NULL;
}

/* Changed under a shard's lock; read without it by the stats and the caps,
 * so every access is atomic (relaxed). */
static size_t live_pages, dirty_pages;
static size_t ss_pages;  /* lent to superslabs (not in live_pages) */
/* Blocks carved so far; its value at the small tier's last ask for a
 * superslab (hk_span_take_ss), and whether none was carved between that
 * ask and the one before: the large tier is quiet (hk_span_idle) */
static size_t carve_seq, quiet_seq;
static unsigned quiet_asks;
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
#define SUB(x, v) __atomic_fetch_sub(&(x), (v), __ATOMIC_RELAXED)

static hk_arena_t *arena_of(const void *p) {
  return (hk_arena_t *)((uintptr_t)p & ~(uintptr_t)(ARENA_SIZE - 1));
}
static uint32_t page_of(const hk_arena_t *a, const void *p) {
  return (uint32_t)(((uintptr_t)p - (uintptr_t)a) >> PAGE_SHIFT);
}
static uint8_t *page_addr(hk_arena_t *a, uint32_t i) { return (uint8_t *)a + ((size_t)i << PAGE_SHIFT); }

/* ---- the resident-page bitmap ----
 * Its words are read and changed atomically (relaxed): a run taken off the
 * lists for a purge outside the locks (see "purging") has its bits read
 * and cleared by the purging thread while others change the bits of their
 * runs, which may share a word, under the lock. */

static uint64_t bits_word(const hk_arena_t *a, uint32_t w) { return __atomic_load_n(&a->bits[w], __ATOMIC_RELAXED); }

static void bm_set(uint64_t *bm, uint32_t i, uint32_t n, bool on) {
  while (n) {
    uint32_t w = i >> 6, o = i & 63, k = 64 - o < n ? 64 - o : n;
    uint64_t m = (k == 64 ? ~0ull : ((1ull << k) - 1)) << o;
    if (on) __atomic_fetch_or(&bm[w], m, __ATOMIC_RELAXED);
    else __atomic_fetch_and(&bm[w], ~m, __ATOMIC_RELAXED);
    i += k;
    n -= k;
  }
}
static void bits_set(hk_arena_t *a, uint32_t i, uint32_t n, bool on) { bm_set(a->bits, i, n, on); }
/* Of pages [i, i + n), unmarks those whose vec entry (mincore's) says not
 * resident: one atomic and a word, not one a page (a sparse 32 MiB block
 * is 8192 pages the cap's check finds absent). */
static void bits_keep_resident(hk_arena_t *a, uint32_t i, uint32_t n, const unsigned char *vec) {
  for (uint32_t x = 0; x < n;) {
    uint32_t w = (i + x) >> 6, o = (i + x) & 63, k = 64 - o < n - x ? 64 - o : n - x, y = 0;
    uint64_t r = 0;  /* of the k pages from i + x: resident ones (bit y: page i + x + y) */
    for (; y + 8 <= k; y += 8) r |= (uint64_t)hk_gather8(vec + x + y) << y;
    for (; y < k; y++) r |= (uint64_t)(vec[x + y] & 1) << y;
    uint64_t m = (~r & (k == 64 ? ~0ull : (1ull << k) - 1)) << o;
    if (m) __atomic_fetch_and(&a->bits[w], ~m, __ATOMIC_RELAXED);
    x += k;
  }
}
static uint32_t bits_count(const hk_arena_t *a, uint32_t i, uint32_t n) {
  uint32_t c = 0;
  while (n) {
    uint32_t w = i >> 6, o = i & 63, k = 64 - o < n ? 64 - o : n;
    uint64_t m = (k == 64 ? ~0ull : ((1ull << k) - 1)) << o;
    c += hk_popcount64(bits_word(a, w) & m);
    i += k;
    n -= k;
  }
  return c;
}
/* The first run of set bits of bm in [*p, end): true, with the run [*p, *q);
 * false when there is none. Skips clear bits a word at a time. */
static bool next_set(const uint64_t *bm, uint32_t *p, uint32_t end, uint32_t *q) {
  uint32_t i = *p;
  for (;;) {
    if (i >= end) return false;
    uint64_t w = __atomic_load_n(&bm[i >> 6], __ATOMIC_RELAXED) >> (i & 63);
    if (w) { i += (uint32_t)__builtin_ctzll(w); break; }
    i = (i | 63) + 1;
  }
  if (i >= end) return false;
  uint32_t j = i;
  while (j < end) {
    uint64_t z = ~__atomic_load_n(&bm[j >> 6], __ATOMIC_RELAXED) >> (j & 63);
    if (z) { j += (uint32_t)__builtin_ctzll(z); break; }
    j = (j | 63) + 1;
  }
  *p = i;
  *q = j < end ? j : end;
  return true;
}
/* The first run of marked (maybe resident) pages in [*p, end). */
static bool next_marked(const hk_arena_t *a, uint32_t *p, uint32_t end, uint32_t *q) {
  return next_set(a->bits, p, end, q);
}

/* ---- free runs: bins by size, and the list of those with resident pages ---- */

static unsigned bin_of(uint32_t n) {
  if (n < 8) return n - 1;
  unsigned b = 31u - (unsigned)__builtin_clz(n);
  return 7 + (b - 3) * 4 + ((n >> (b - 2)) & 3);
}

static void dirty_unlink(hk_arena_t *a, uint32_t i) {
  entry_t *e = &a->e[i];
  if (e->f.dprev) a->e[e->f.dprev].f.dnext = e->f.dnext; else a->dirty_head = e->f.dnext;
  if (e->f.dnext) a->e[e->f.dnext].f.dprev = e->f.dprev; else a->dirty_tail = e->f.dprev;
  e->f.dnext = e->f.dprev = 0;
}

static void free_insert(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t ndirty, uint32_t stamp) {
  entry_t *h = &a->e[i], *t = &a->e[i + n - 1];
  t->npages = n;
  t->tag = T_TAIL | T_FREE;
  h->npages = n;
  h->tag = (n == 1 ? T_TAIL : 0) | T_HEAD | T_FREE;
  unsigned b = bin_of(n);
  h->bin = (uint16_t)b;
  h->kind = 0;  /* free run: its pages not yet checked (check_job) */
  h->f.prev = 0;
  h->f.next = a->bins[b];
  if (a->bins[b]) a->e[a->bins[b]].f.prev = i;
  a->bins[b] = i;
  h->f.ndirty = ndirty;
  h->f.stamp = stamp;
  h->f.dnext = h->f.dprev = 0;
  if (ndirty) {
    h->f.dprev = a->dirty_tail;
    if (a->dirty_tail) a->e[a->dirty_tail].f.dnext = i; else a->dirty_head = i;
    a->dirty_tail = i;
  }
  a->free_pages += n;
  ADD(dirty_pages, ndirty);
  ADD(shard_of(a)->dirty, ndirty);
}

/* Takes run i off its lists and clears its tags (they become interior or
 * are rewritten by the caller). Returns its resident pages. */
static uint32_t free_remove(hk_arena_t *a, uint32_t i) {
  entry_t *h = &a->e[i];
  uint32_t n = h->npages, nd = h->f.ndirty;
  if (h->f.prev) a->e[h->f.prev].f.next = h->f.next; else a->bins[h->bin] = h->f.next;
  if (h->f.next) a->e[h->f.next].f.prev = h->f.prev;
  if (nd) dirty_unlink(a, i);
  a->free_pages -= n;
  SUB(dirty_pages, nd);
  SUB(shard_of(a)->dirty, nd);
  a->e[i + n - 1].tag = 0;
  h->tag = 0;
  return nd;
}

/* The free run of at least `want` pages at the lowest address, among the
 * first BIN_SCAN runs of each bin that can hold it. 0 when none. Lowest
 * address first keeps the arena compact: the holes low in it are the pages
 * that were touched (best fit: large_zeroed peak RSS 498 MB, this 476).
 * resident: only runs with at least half of `want` pages resident. */
static uint32_t find_fit(const hk_arena_t *a, uint32_t want, bool resident) {
  uint32_t best = 0;
  for (unsigned b = bin_of(want); b < NBINS; b++) {
    uint32_t seen = 0;
    for (uint32_t i = a->bins[b]; i && seen < BIN_SCAN; i = a->e[i].f.next, seen++)
      if (a->e[i].npages >= want && (!best || i < best) && (!resident || a->e[i].f.ndirty >= want / 2)) best = i;
  }
  return best;
}

static uint32_t now_stamp(const hk_arena_t *a) { return (uint32_t)(hk_os_now_ms() - a->born_ms); }

/* A run joined to a free neighbour keeps the age of its oldest resident
 * pages: stamping the joined run "now" let a run that a busy neighbour
 * kept joining hold its pages forever (the soak's RSS crept up to the cap,
 * 99 -> 108 MiB in 3 minutes). Pages freed just now may then be purged with
 * it: a page stays resident at most one purge delay after its last free. */
static uint32_t oldest_stamp(const hk_arena_t *a, uint32_t run, uint32_t stamp) {
  const entry_t *h = &a->e[run];
  return h->f.ndirty && h->f.stamp < stamp ? h->f.stamp : stamp;
}

/* Pages i .. i + n - 1 are freed at `stamp`: their 64 KiB grains remember
 * it. A run takes its oldest pages' stamp when it joins a neighbour, so a
 * block freed next to an old free run looked old at once, and the clock
 * purged it before the next malloc could reuse it (large_zeroed, purge
 * delay 200 ms: 2.0 GB purged and faulted back in; with these stamps 0.55
 * GB, the teardown's). The clock purges a grain only a purge delay after
 * its last free, whatever run it joined. */
static void grains_freed(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t stamp) {
  for (uint32_t g = i / GRAIN_PAGES; g <= (i + n - 1) / GRAIN_PAGES; g++)
    if (a->freed_at[g] < stamp) a->freed_at[g] = stamp;
}

/* Whether pages [i, i + n) (whole grains) were last freed at `before` or earlier. */
static bool grains_aged(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t before) {
  for (uint32_t g = i / GRAIN_PAGES; g <= (i + n - 1) / GRAIN_PAGES; g++)
    if (a->freed_at[g] > before) return false;
  return true;
}

/* ---- closed pages (guard measure) ----
 * A page is closed by PROT_NONE (mprotect) or, where the kernel has them,
 * by a guard marker (hk_os_guard), which splits no mapping: mprotect of a
 * block's last page made one mapping three at every malloc (37% of the
 * secure build's large row), and vm.max_map_count bounds how many there
 * may be. With markers an arena is opened (mprotect) once, from its first
 * page up to `open_to` as blocks reach further (past it, pages are still
 * the reservation's PROT_NONE), and `closed` says which pages below it
 * carry a marker. A marker drops the page's contents: a freed block closed
 * whole is no longer resident, and comes back zero. Under the arena's shard's lock. */
static bool markers(void) { return hk_os_guard_markers(); }

/* A freed block closed whole by PROT_NONE is an island in open pages, two
 * more mappings: a program that freed 40,000 blocks of 100,000 bytes left
 * 65,531, vm.max_map_count, and its own mmap calls failed. Past shut_max
 * islands (of all arenas) a freed block is closed by markers instead (its
 * pages dropped), or, without markers, left open (the quarantine still
 * keeps its address from the next malloc for a while). */
static size_t shut_islands;  /* the arenas' islands summed (atomic: arenas of all shards) */

/* a sixteenth of vm.max_map_count (4,095 by default), at least 64 */
static size_t shut_max(void) {
  size_t m = hk_os_max_map_count() / 16;
  return m > 64 ? m : 64;
}

static bool shut_at(const hk_arena_t *a, uint32_t i) {
  return i < ARENA_PAGES && (a->shut[i >> 6] >> (i & 63) & 1);
}
/* Shut (on) pages [i, i + n), none of them shut, or open a stretch of shut
 * pages: the islands beside it join it, or stay when it opens. */
static void shut_set(hk_arena_t *a, uint32_t i, uint32_t n, bool on) {
  uint32_t beside = (i > 0 && shut_at(a, i - 1)) + shut_at(a, i + n);
  uint32_t before = a->islands;
  a->islands = on ? a->islands + 1 - beside : a->islands - 1 + beside;
  ADD(shut_islands, (size_t)a->islands - before);  /* modulo 2^64 */
  bm_set(a->shut, i, n, on);
}

/* How a freed block is closed whole (close_how), or a block's last page
 * as its guard (CLOSE_GUARD). */
enum { CLOSE_NONE, CLOSE_KEEP, CLOSE_GUARD };

/* A freed block's close: its contents stay (PROT_NONE even with markers: a
 * freed block closed whole and faulted back in at its reuse cost more than
 * the mprotect pair, bench_large 0.85) while shut_max() allows; past it,
 * markers, or nothing without them. Under the lock. */
static unsigned close_how(void) {
  if (HK_LOAD_RELAXED(shut_islands) < shut_max()) return CLOSE_KEEP;
  return markers() ? CLOSE_GUARD : CLOSE_NONE;
}

/* The call that closes pages [i, i + n) (no lock needed: the caller owns them). */
static bool close_call(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how) {
  if (how == CLOSE_NONE) return false;
  if (how == CLOSE_KEEP) return hk_os_protect_none(page_addr(a, i), (size_t)n << PAGE_SHIFT);
  return hk_os_close_guard(page_addr(a, i), (size_t)n << PAGE_SHIFT);
}

/* The bitmaps learn that the call closed them. Under the lock. */
static void close_done(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how) {
  if (how == CLOSE_KEEP) shut_set(a, i, n, true);
  else if (markers()) bm_set(a->closed, i, n, true);
}

/* Pages [i, i + n) closed, under the lock (a free run's guard, a resize). */
static bool close_run(hk_arena_t *a, uint32_t i, uint32_t n, bool keep) {
  unsigned how = keep ? close_how() : CLOSE_GUARD;
  if (!close_call(a, i, n, how)) return false;
  close_done(a, i, n, how);
  return true;
}

/* ---- opening a block's pages ----
 * The calls are made after the shard's lock is dropped (opening_calls): a block's
 * pages are its own once it is taken, and with four threads freeing and
 * allocating big blocks the calls made under the lock kept the others
 * spinning on it (bench_bigheap 4 256 2000 7, secure build: 100,113
 * yields). The shut pages' bits are cleared under the lock (opening_plan:
 * they count islands, which the neighbours' bits take part in); the
 * `closed` bits, which only the block's owner reads while it is live, as
 * each call succeeds. One call per run of pages, as before: a call over
 * all of a big block's resident pages walks their page tables (bench_large,
 * one unguard from the first to the last closed page: 0.83). A call that
 * fails (no mapping to spare: vm.max_map_count) is undone under the lock
 * again (opening_undo): the shut runs it did not open are shut again. */
typedef struct { uint32_t at, n; } run_t;
#define OPEN_SHUT_RUNS 4
typedef struct {
  run_t commit[OPEN_SHUT_RUNS];  /* mprotect read-write: the shut runs (without markers: the block) */
  unsigned ncommit, done;        /* done: commit calls made */
  uint32_t at, n, last;          /* the block's pages [at, at + n); last: its guard (0: none) */
} opening_t;

/* With markers an arena is opened up to open_to: the free run's pages up
 * to `end` and on to the next 2 MiB (markers stay; the arena's last page,
 * the run's guard, never), one call per 2 MiB of growth, not one per block
 * (test_span many). Under the lock: the pages up to open_to may be handed
 * out to any thread. */
static bool open_to_reach(hk_arena_t *a, uint32_t end) {
  if (end <= a->open_to) return true;
  uint32_t to = (end + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1);
  if (to > ARENA_PAGES - 1) to = ARENA_PAGES - 1;
  if (to < end) to = end;
  if (!hk_os_commit(page_addr(a, a->open_to), (size_t)(to - a->open_to) << PAGE_SHIFT)) return false;
  a->open_to = to;
  return true;
}

/* Under the lock: the block's shut pages counted open; *o the calls that
 * open pages [i, i + n) and close page i + n (`last`). False when the
 * arena could not be opened further (nothing changed). */
static bool opening_plan(hk_arena_t *a, uint32_t i, uint32_t n, bool last, opening_t *o) {
  o->ncommit = o->done = 0;
  o->at = i;
  o->n = n;
  o->last = last ? i + n : 0;
  if (!markers()) {  /* PROT_NONE is undone by one mprotect of the block */
    o->commit[o->ncommit++] = (run_t){ i, n };
  } else if (!open_to_reach(a, i + n)) {
    return false;
  }
  for (uint32_t p = i, q; next_set(a->shut, &p, i + n, &q); p = q) {
    if (markers()) {
      if (o->ncommit < OPEN_SHUT_RUNS) o->commit[o->ncommit++] = (run_t){ p, q - p };
      else o->commit[o->ncommit - 1].n = q - o->commit[o->ncommit - 1].at;  /* the rest: one call */
    }
    shut_set(a, p, q - p, false);
  }
  return true;
}

/* The planned calls, in order; false at the first that fails. No lock
 * needed: the block's pages are the caller's. */
static bool opening_calls(hk_arena_t *a, opening_t *o) {
  for (; o->done < o->ncommit; o->done++)
    if (!hk_os_commit(page_addr(a, o->commit[o->done].at), (size_t)o->commit[o->done].n << PAGE_SHIFT)) return false;
  if (markers())
    for (uint32_t p = o->at, q; next_set(a->closed, &p, o->at + o->n, &q); p = q) {
      if (!hk_os_unguard(page_addr(a, p), (size_t)(q - p) << PAGE_SHIFT)) return false;
      bm_set(a->closed, p, q - p, false);
    }
  if (o->last && !close_call(a, o->last, 1, CLOSE_GUARD)) return false;
  if (o->last && markers()) bm_set(a->closed, o->last, 1, true);
  return true;
}

/* Under the lock, after opening_calls failed: the shut runs not opened
 * are shut again (the `closed` bits are still set where markers stayed).
 * The pages then go back to a free run, whose last page the caller closes. */
static void opening_undo(hk_arena_t *a, const opening_t *o) {
  if (!markers()) {  /* one call for the block: the islands it may have left, counted as one */
    if (!o->done) shut_set(a, o->at, o->n, true);
    return;
  }
  for (unsigned k = o->done; k < o->ncommit; k++) shut_set(a, o->commit[k].at, o->commit[k].n, true);
}

/* Pages [i, i + n) opened, under the lock (a resize's growth). */
static bool open_run(hk_arena_t *a, uint32_t i, uint32_t n) {
  opening_t o;
  if (!opening_plan(a, i, n, false, &o)) return false;
  if (opening_calls(a, &o)) return true;
  opening_undo(a, &o);
  return false;
}

static hk_arena_t *arena_new(bool huge, shard_t *sh) {
  size_t desc = hk_align_up(sizeof(hk_arena_t), HK_PAGE);
  hk_arena_t *a = GUARD_PAGES ? hk_os_reserve_aligned(ARENA_SIZE, ARENA_SIZE) : hk_os_map_aligned(ARENA_SIZE, ARENA_SIZE);
  if (!a) return NULL;
  if (GUARD_PAGES && !hk_os_commit(a, desc)) {  /* all but the descriptor stays closed */
    hk_os_unmap(a, ARENA_SIZE);
    return NULL;
  }
  /* huge pages (HAKMEM_THP) past the descriptor: its table is touched a
   * page here and there, and huge pages there would make all of it resident */
  size_t huge_from = hk_align_up(desc + GUARD_PAGES * HK_PAGE, HK_SS_SIZE);
  if (huge) hk_os_advise_region((uint8_t *)a + huge_from, ARENA_SIZE - huge_from, false);
  else hk_os_advise_plain((uint8_t *)a + huge_from, ARENA_SIZE - huge_from);
  a->huge = huge;
  a->shard = (uint32_t)(sh - shards);
  a->magic = ARENA_MAGIC;
  a->first_page = (uint32_t)(desc >> PAGE_SHIFT) + GUARD_PAGES;  /* the descriptor's guard */
  a->open_to = a->first_page;
  a->born_ms = hk_os_now_ms();
  free_insert(a, a->first_page, ARENA_PAGES - a->first_page, 0, 0);
  for (size_t c = ((size_t)a->first_page << PAGE_SHIFT) >> HK_SS_SHIFT; c < ARENA_SIZE >> HK_SS_SHIFT; c++)
    hk_chunk_set((uint8_t *)a + (c << HK_SS_SHIFT), HK_CHUNK_SPAN);
  /* last in the list: a malloc takes the first arena with a fit, so the
   * older arenas' freed runs are reused before a newer one's untouched tail
   * (with the newest first, a program past 1 GiB of big blocks that freed
   * half of them went on faulting in fresh pages, and the secure build's
   * guards by mprotect ran out of mappings at half of the freed blocks:
   * test_span spent) */
  hk_arena_t **pa = &sh->arenas;
  while (*pa) pa = &(*pa)->next;
  a->next = NULL;
  *pa = a;
  ADD(arena_count, 1);
  return a;
}

static void arena_unmap(hk_arena_t *a) {
  for (size_t c = 0; c < ARENA_SIZE >> HK_SS_SHIFT; c++)
    hk_chunk_set((uint8_t *)a + (c << HK_SS_SHIFT), HK_CHUNK_NONE);
  hk_os_unmap(a, ARENA_SIZE);
}

/* ---- freeing a run ---- */

/* A run that becomes free at j - len .. j - 1 takes in the free run that
 * starts at page j, if there is one: its pages, resident count and age
 * (oldest_stamp) are added to *len, *nd and *stamp. */
static void join_next(hk_arena_t *a, uint32_t j, uint32_t *len, uint32_t *nd, uint32_t *stamp) {
  if (j >= ARENA_PAGES || (a->e[j].tag & (T_HEAD | T_FREE)) != (T_HEAD | T_FREE)) return;
  uint32_t nn = a->e[j].npages;
  *stamp = oldest_stamp(a, j, *stamp);
  *nd += free_remove(a, j);
  *len += nn;
}

/* Run i of n pages (its head tagged T_FREED, its tail 0, nd of its pages
 * resident) becomes free: joined to the free runs on either side, binned. */
static uint32_t run_release(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t nd, uint32_t stamp) {
  uint32_t start = i, len = n;
  if (i > a->first_page && (a->e[i - 1].tag & (T_TAIL | T_FREE)) == (T_TAIL | T_FREE)) {
    uint32_t pn = a->e[i - 1].npages;
    start = i - pn;
    stamp = oldest_stamp(a, start, stamp);
    nd += free_remove(a, start);
    len += pn;
  }
  join_next(a, i + n, &len, &nd, &stamp);
  free_insert(a, start, len, nd, stamp);
  return start;
}

/* Quarantine (QUAR_ON): freed run i waits in a FIFO; the oldest is
 * released when the FIFO is full or holds too many pages. Its head keeps T_FREED (a
 * second free is a double free) and, in the union, the stamp of its free. */
static void quar_release_oldest(shard_t *sh) {
  quar_t q = sh->quar[sh->quar_first];
  sh->quar_first = (sh->quar_first + 1) % QUAR_RUNS;
  sh->quar_n--;
  entry_t *h = &q.a->e[q.i];
  uint32_t n = h->npages;
  SUB(quar_pages, n);
  run_release(q.a, q.i, n, bits_count(q.a, q.i, n), h->f.stamp);
}
static void quar_push(hk_arena_t *a, uint32_t i, uint32_t stamp) {
  shard_t *sh = shard_of(a);
  if (sh->quar_n == QUAR_RUNS) quar_release_oldest(sh);
  while (sh->quar_n && HK_LOAD_RELAXED(quar_pages) + a->e[i].npages > QUAR_PAGES) quar_release_oldest(sh);
  a->e[i].f.stamp = stamp;
  sh->quar[(sh->quar_first + sh->quar_n++) % QUAR_RUNS] = (quar_t){ a, i };
  ADD(quar_pages, a->e[i].npages);
}

/* ---- allocation ---- */

/* calloc's fresh pages (never touched, or purged) read as zero, but a
 * program that reads them before it writes them maps the shared zero page
 * first, then pays a fault, a copy and a TLB shootdown of every thread per
 * 4 KiB when it writes (24% of a 4-thread run with big calloc'd blocks in
 * flush_tlb_mm_range). Faulting them in for writing at once costs one call
 * (and one fault per huge page in an arena advised huge pages). A kernel
 * without MADV_POPULATE_WRITE (older than 5.14): one write a page, which
 * maps each page writable before the program can map the zero page. */
static void fault_fresh(uint8_t *p, size_t bytes) {
  if (bytes > HK_SPAN_POPULATE_MAX || hk_os_populate(p, bytes)) return;
  for (size_t o = 0; o < bytes; o += HK_PAGE) ((volatile uint8_t *)p)[o] = 0;
}

/* ---- huge or plain ----
 * Huge pages pay where a program touches its blocks densely: one fault per
 * 2 MiB instead of 512 (learner_rotate 12x, large_zeroed 1.5x faster than
 * without). Where it touches a few pages of each big block they cost: each
 * page touched makes 2 MiB resident (large_cycles, 16 pages and the last
 * byte of each block: 124 MB peak RSS against 71 MB, and half the speed;
 * large_realloc 24.7 MB against 2.8). Which it is cannot be told at malloc,
 * so it is measured at free. A block of HK_THP_BIG bytes or more records
 * at allocation (or growth) its `fresh` chunks: the whole 2 MiB chunks
 * none of whose pages may be resident (a chunk an earlier block touched is
 * resident whatever this one does). When it is freed they are asked
 * (mincore, before the lock) what the program touched: in a huge-page
 * arena a touched chunk is resident whole, so the sample is the share of
 * fresh chunks touched; in a plain arena it is the share of their pages
 * resident (never more than the first: a program is not sent back to huge
 * pages by a measure that a sparse program passes). The samples' running
 * mean (1/4 weight each) decides where the next block goes, whatever its
 * size: below HK_THP_PLAIN_PM per mille, to plain arenas (no huge pages);
 * above HK_THP_HUGE_PM, to huge-page arenas (where every program starts).
 * Smaller blocks follow the big ones: a program that touches a few pages
 * of its big blocks touches a few of its 1 MiB blocks too, and packed in a
 * huge page they keep it resident (large_cycles: 81 MB peak RSS and 0.55
 * of the speed with only the big blocks sent to plain arenas, against 71
 * MB). calloc's blocks that are faulted in whole (up to
 * HK_SPAN_POPULATE_MAX) always go to huge-page arenas. Only under
 * HAKMEM_THP=auto: `always` gives every arena huge pages, `never` none.
 * A block keeps its arena when it grows in place. */
static unsigned thp_density = 1000;  /* per mille; racy (a lost update only delays the mean) */
static bool thp_plain;               /* big blocks go to plain arenas */
static size_t thp_plain_blocks, thp_samples;

static bool thp_adaptive(void) {
  return hk_os_thp() != HK_THP_NONE && HK_LOAD_RELAXED(hk_knobs.thp) != HK_THP_KNOB_ALWAYS;
}

/* Whether a block of `pages` pages (calloc's: zero) goes to a huge-page arena. */
static bool want_huge(uint32_t pages, bool zero) {
  if (hk_os_thp() == HK_THP_NONE) return false;
  if ((zero && ((size_t)pages << PAGE_SHIFT) <= HK_SPAN_POPULATE_MAX) || !thp_adaptive()) return true;
  return !HK_LOAD_RELAXED(thp_plain);
}

/* The fresh chunks of the block whose first page is `head` and that ends
 * at page `to`, among its whole 2 MiB chunks from page `from` on (bit k:
 * its k-th whole chunk; the first 64); 0 for a block too small to be
 * sampled, or when nothing is. Before those pages are marked; under the lock. */
static uint64_t fresh_chunks(const hk_arena_t *a, uint32_t head, uint32_t from, uint32_t to) {
  if (((size_t)(to - head) << PAGE_SHIFT) < HK_THP_BIG || !thp_adaptive()) return 0;
  uint32_t first = (head + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1);
  uint32_t lo = (from + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1), hi = to & ~(HUGE_PAGES - 1);
  uint64_t m = 0;
  for (uint32_t c = lo; c + HUGE_PAGES <= hi && (c - first) / HUGE_PAGES < 64; c += HUGE_PAGES)
    if (!bits_count(a, c, HUGE_PAGES)) m |= 1ull << ((c - first) / HUGE_PAGES);
  return m;
}

/* The sample of a block being freed (the caller's, still live) into the
 * running mean. Reads its entry without the lock; a block freed twice at
 * once (a program's bug, reported under the lock after this) only skews a
 * sample. */
static void thp_sample(hk_arena_t *a, uint32_t i, uint8_t *p) {
  if (!thp_adaptive() || a->magic != ARENA_MAGIC || i < a->first_page || ((uintptr_t)p & (HK_PAGE - 1))) return;
  uint8_t tag = HK_LOAD_RACY(a->e[i].tag);
  uint32_t n = HK_LOAD_RACY(a->e[i].npages);
  if ((tag & (T_HEAD | T_LIVE | T_POPULATED)) != (T_HEAD | T_LIVE) || n > ARENA_PAGES - i) return;
  uint64_t fresh = HK_LOAD_RACY(a->e[i].l.fresh);
  if (!fresh) return;
  uintptr_t lo = hk_align_up((uintptr_t)p, HK_SS_SIZE);
  unsigned chunks = 0, touched = 0;
  size_t pages = 0;
  unsigned char vec[HUGE_PAGES];  /* one chunk's pages */
  for (unsigned k = 0; k < 64; k++) {
    if (!(fresh >> k & 1)) continue;
    if (!hk_os_resident((void *)(lo + ((size_t)k << HK_SS_SHIFT)), HK_SS_SIZE, vec)) return;
    chunks++;
    unsigned r = 0;
    for (size_t x = 0; x < sizeof vec; x += 8) {
      uint64_t w;
      memcpy(&w, vec + x, 8);
      r += hk_popcount64(w & 0x0101010101010101ull);
    }
    touched += r != 0;
    pages += r;
  }
  unsigned f = a->huge ? touched * 1000 / chunks : (unsigned)(pages * 1000 / ((size_t)chunks * HUGE_PAGES));
  unsigned d = HK_LOAD_RELAXED(thp_density);
  d = (unsigned)((int)d + ((int)f - (int)d) / 4);
  HK_STORE_RELAXED(thp_density, d);
  ADD(thp_samples, 1);
  if (d < HK_THP_PLAIN_PM) HK_STORE_RELAXED(thp_plain, true);
  else if (d > HK_THP_HUGE_PM) HK_STORE_RELAXED(thp_plain, false);
}

void hk_span_thp_info(size_t *plain_blocks, size_t *samples, unsigned *density_pm) {
  *plain_blocks = HK_LOAD_RELAXED(thp_plain_blocks);
  *samples = HK_LOAD_RELAXED(thp_samples);
  *density_pm = HK_LOAD_RELAXED(thp_density);
}

/* The first arena of the shard with a fit (its lock held): *i the run;
 * resident: a run with at least half of `want` pages resident (find_fit). */
static hk_arena_t *shard_fit(shard_t *sh, bool huge, uint32_t want, bool resident, uint32_t *i) {
  for (hk_arena_t *a = sh->arenas; a; a = a->next)
    if (a->huge == huge && (*i = find_fit(a, want, resident)) != 0) return a;
  return NULL;
}

/* Whether the other shards than sh hold `want` free resident pages. */
static bool resident_beside(const shard_t *sh, uint32_t want) {
  return shards_now() > 1 && HK_LOAD_RELAXED(dirty_pages) - HK_LOAD_RELAXED(sh->dirty) >= want;
}

/* The thread's shard (its lock held) has no fit, or (resident) one of
 * mostly fresh pages: a fit in the other shards, one lock at a time
 * (resident: only shards with `want` free resident pages), then in its
 * own again (a run may have been freed meanwhile). Returns with the lock
 * of the arena's shard held (*sh that shard), or NULL with the home
 * shard's lock held again. */
static hk_arena_t *fit_elsewhere(shard_t **sh, bool huge, uint32_t want, bool resident, uint32_t *i) {
  shard_t *home = *sh;
  unsigned n = shards_now(), h = (unsigned)(home - shards);
  if (n == 1) return NULL;
  hk_unlock(&home->lock);
  for (unsigned k = 1; k < n; k++) {
    shard_t *o = &shards[(h + k) % n];
    if (resident && HK_LOAD_RELAXED(o->dirty) < want) continue;
    hk_lock(&o->lock);
    hk_arena_t *a = shard_fit(o, huge, want, resident, i);
    if (a) {
      *sh = o;
      return a;
    }
    hk_unlock(&o->lock);
  }
  hk_lock(&home->lock);
  return shard_fit(home, huge, want, false, i);
}

void *hk_span_alloc(size_t size, size_t align, bool zero, unsigned kind, hk_span_note_t *note) {
  if (size == 0 || size > HK_SPAN_MAX || align >= HK_SS_SIZE) { errno = ENOMEM; return NULL; }
  uint32_t need = (uint32_t)(hk_align_up(size, HK_PAGE) >> PAGE_SHIFT) + GUARD_PAGES;
  uint32_t al = align > HK_PAGE ? (uint32_t)(align >> PAGE_SHIFT) : 1;
  uint32_t want = need + al - 1;
  run_t runs[ZERO_RUNS];
  unsigned nruns = 0;
  bool zero_all = false;
  bool huge = want_huge(need - GUARD_PAGES, zero);

  shard_t *sh = home_shard();
  hk_lock(&sh->lock);
  uint32_t i = 0;
  hk_arena_t *a = shard_fit(sh, huge, want, false, &i);
  if ((!a || bits_count(a, i, want) < want / 2) && resident_beside(sh, want))
    a = fit_elsewhere(&sh, huge, want, true, &i);
  if (!a && sh->arenas) a = fit_elsewhere(&sh, huge, want, false, &i);
  if (!a) {
    a = arena_new(huge, sh);
    if (a) i = find_fit(a, want, false);
    if (!i) {
      hk_unlock(&sh->lock);
      errno = ENOMEM;
      return NULL;
    }
  }
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  uint32_t nd = free_remove(a, i);
  uint32_t at = (i + al - 1) & ~(al - 1);
  uint32_t front = at - i, back = i + n - (at + need);
  uint32_t d = nd ? bits_count(a, at, need) : 0;
  uint32_t df = nd && front ? bits_count(a, i, front) : 0;
  if (front) free_insert(a, i, front, df, stamp);
  if (GUARD_PAGES && front) close_run(a, at - 1, 1, false);  /* a free run ends closed */
  if (back) free_insert(a, at + need, back, nd - d - df, stamp);
  entry_t *h = &a->e[at], *t = &a->e[at + need - 1];
  h->npages = t->npages = need;
  t->tag = T_TAIL | T_LIVE;
  h->tag = (need == 1 ? T_TAIL : 0) | T_HEAD | T_LIVE;  /* one page: both tags on one entry */
  if (zero && ((size_t)need << PAGE_SHIFT) <= HK_SPAN_POPULATE_MAX) h->tag |= T_POPULATED;
  h->l.fresh = fresh_chunks(a, at, at, at + need - GUARD_PAGES);
  if (!huge && hk_os_thp() != HK_THP_NONE) ADD(thp_plain_blocks, 1);
  h->kind = (uint8_t)kind;
  h->l.requested = (uint32_t)size;
  if (zero && d) {  /* only resident pages can hold old bytes */
    if (d == need) {
      zero_all = true;
    } else {
      for (uint32_t p = at, q; next_marked(a, &p, at + need, &q); p = q) {
        if (nruns == ZERO_RUNS) { zero_all = true; break; }
        runs[nruns++] = (run_t){ p, q - p };
      }
    }
  }
  bits_set(a, at, need, true);
  ADD(live_pages, need);
  ADD(carve_seq, 1);
  uint8_t *p = page_addr(a, at);
  /* the block's pages open, its last page closed (it was the run's, closed
   * already, when nothing is left behind it): planned here, the calls made
   * once the lock is dropped */
  opening_t o;
  bool planned = !GUARD_PAGES || opening_plan(a, at, need - GUARD_PAGES, back, &o);
  if (planned) hk_track_alloc(p, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT, d == 0);
  hk_unlock(&sh->lock);
  if (GUARD_PAGES && (!planned || !opening_calls(a, &o))) {
    hk_lock(&sh->lock);  /* no mapping to spare (vm.max_map_count): give the run back */
    if (planned) {
      opening_undo(a, &o);
      hk_track_free(p);
    }
    close_run(a, at + need - 1, 1, false);
    h->tag = T_FREED;
    t->tag = 0;
    SUB(live_pages, need);
    run_release(a, at, need, need, stamp);  /* bits_set marked them all */
    hk_unlock(&sh->lock);
    errno = ENOMEM;
    return NULL;
  }

  if (zero && d < need) fault_fresh(p, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT);

  if (zero_all) memset(p, 0, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT);
  else for (unsigned r = 0; r < nruns; r++) {
    uint32_t e = runs[r].at + runs[r].n < at + need - GUARD_PAGES ? runs[r].at + runs[r].n : at + need - GUARD_PAGES;
    if (e > runs[r].at) memset(page_addr(a, runs[r].at), 0, (size_t)(e - runs[r].at) << PAGE_SHIFT);
  }
  note->resident_pages = d;
  note->fresh_pages = need - d;
  return p;
}

/* ---- superslabs (the unified backend) ----
 * A superslab may be a 2 MiB chunk of an arena, lent as a live run (its
 * entry KIND_SS, its chunk marked as a superslab's while lent): the pages
 * a phase of big blocks freed then serve the small objects of the next
 * without a fault, and come back as a free run when the superslab leaves
 * the cache (learner_phase: 134 MB peak RSS when each tier kept its own).
 * Only where arenas exist already (a small program maps no arena for its
 * first superslab, nor reads the THP mode for one), and not with guard
 * pages (the arena's closed pages are a block's business) nor under
 * memcheck (a lent chunk is no block of its). */

/* A free run holding an aligned chunk of `need` pages at least half of
 * whose pages may be resident, among the first DIRTY_SCAN runs of the
 * arena's dirty list: lending the untouched tail of an arena saves no
 * fault and splits the room big blocks are carved from (thread_churn:
 * 19% more peak RSS when any fit was lent). 0 when none. */
#define DIRTY_SCAN 64
static uint32_t find_lendable(hk_arena_t *a, uint32_t need, uint32_t al, uint32_t *at) {
  uint32_t seen = 0;
  for (uint32_t i = a->dirty_head; i && seen < DIRTY_SCAN; i = a->e[i].f.dnext, seen++) {
    if (a->e[i].npages < need || a->e[i].f.ndirty < need / 2) continue;
    for (uint32_t x = (i + al - 1) & ~(al - 1); x + need <= i + a->e[i].npages; x += al)
      if (bits_count(a, x, need) >= need / 2) {
        *at = x;
        return i;
      }
  }
  return 0;
}

/* Idle: free resident pages at least four times the live ones (a phase of
 * big blocks ended), or quiet: HK_SPAN_QUIET_ASKS superslabs asked for in
 * a row with no block carved between. Where big blocks stay live and
 * churn, their freed pages are theirs to reuse: lent to superslabs, the
 * next big blocks faulted in fresh ones (thread_churn, 3 runs each, one
 * batch: before 59 MB peak RSS and 19.3k faults, lent freely 84 MB and
 * 29.4k, with the live share 61 MB and 21.5k). The live share alone
 * stopped learner_phase's lending at 25 of its superslabs: the program's
 * one live big block (its 3.7 MB table of pointers) against 13 MB left
 * free, which then stayed resident beside the superslabs mapped new (88
 * MB peak RSS; quiet after 8 asks, 75 MB and 19.0k faults against 22.7k;
 * a single quiet ask lent thread_churn's pages again, 39.5k faults in one
 * batch). */
bool hk_span_idle(void) {
  size_t dirty = HK_LOAD_RELAXED(dirty_pages);
  return dirty != 0 && (HK_LOAD_RELAXED(quiet_asks) >= HK_SPAN_QUIET_ASKS ||
                        HK_LOAD_RELAXED(live_pages) * 4 <= dirty);
}

void *hk_span_take_ss(void) {
  size_t seq = HK_LOAD_RELAXED(carve_seq);
  HK_STORE_RELAXED(quiet_asks, seq == HK_LOAD_RELAXED(quiet_seq) ? HK_LOAD_RELAXED(quiet_asks) + 1 : 0u);
  HK_STORE_RELAXED(quiet_seq, seq);
  if (GUARD_PAGES || HK_TRACKING || !HK_LOAD_RELAXED(arena_count)) return NULL;
  if (!hk_span_idle()) return NULL;  /* only from an idle tier */
  const uint32_t need = HUGE_PAGES;
  hk_arena_t *a = NULL;
  uint32_t i = 0, at = 0;
  shard_t *sh = NULL;
  for (unsigned k = 0; k < HK_SPAN_SHARDS && !a; k++) {
    sh = &shards[k];
    hk_lock(&sh->lock);
    for (a = sh->arenas; a; a = a->next)
      if ((i = find_lendable(a, need, HUGE_PAGES, &at)) != 0) break;
    if (!a) hk_unlock(&sh->lock);
  }
  if (!a) return NULL;
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  uint32_t nd = free_remove(a, i);
  uint32_t front = at - i, back = i + n - (at + need);
  uint32_t d = nd ? bits_count(a, at, need) : 0;
  uint32_t df = nd && front ? bits_count(a, i, front) : 0;
  if (front) free_insert(a, i, front, df, stamp);
  if (back) free_insert(a, at + need, back, nd - d - df, stamp);
  entry_t *h = &a->e[at], *t = &a->e[at + need - 1];
  h->npages = t->npages = need;
  t->tag = T_TAIL | T_LIVE;
  h->tag = T_HEAD | T_LIVE;
  h->kind = KIND_SS;
  h->l.requested = 0;
  h->l.fresh = 0;
  bits_set(a, at, need, true);
  ADD(ss_pages, need);
  hk_unlock(&sh->lock);
  return page_addr(a, at);
}

void hk_span_give_ss(void *p, size_t kept) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  shard_t *sh = shard_of(a);
  hk_lock(&sh->lock);
  entry_t *h = &a->e[i];
  HK_ASSERT(a->magic == ARENA_MAGIC && (h->tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && h->kind == KIND_SS);
  uint32_t n = h->npages, stamp = now_stamp(a);
  grains_freed(a, i, n, stamp);
  SUB(ss_pages, n);
  a->e[i + n - 1].tag = 0;
  h->tag = T_FREED;
  h->kind = 0;
  uint32_t nd = (uint32_t)(hk_align_up(kept, HK_PAGE) >> PAGE_SHIFT);
  if (nd > n) nd = n;
  bits_set(a, i + nd, n - nd, false);
  run_release(a, i, n, nd, stamp);
  hk_chunk_set(p, HK_CHUNK_SPAN);
  hk_unlock(&sh->lock);
}

size_t hk_span_bytes_ss(void) { return HK_LOAD_RELAXED(ss_pages) << PAGE_SHIFT; }

/* ---- checks ---- */

/* The shard whose lock guards p's arena; NULL when p is in no arena. p is
 * in a chunk the chunk map calls a span's, so its arena is mapped, and an
 * arena's descriptor never changes but under the lock. */
static shard_t *shard_at(const void *p) {
  const hk_arena_t *a = arena_of(p);
  return a->magic == ARENA_MAGIC && a->shard < HK_SPAN_SHARDS ? shard_of(a) : NULL;
}

/* The head entry of the live block at p, or NULL with *why set. Under the lock. */
static entry_t *live_head(const void *p, hk_arena_t **ap, const char **why) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  *ap = a;
  if (a->magic != ARENA_MAGIC || ((uintptr_t)p & (HK_PAGE - 1)) || i < a->first_page) {
    *why = HK_WHY_NOT_START;
    return NULL;
  }
  entry_t *h = &a->e[i];
  if ((h->tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && h->kind != KIND_SS) return h;
  *why = h->tag & (T_FREE | T_FREED) && h->tag & (T_HEAD | T_FREED) ? HK_WHY_DOUBLE_FREE : HK_WHY_NOT_START;
  return NULL;
}

bool hk_span_check(const char *what, const void *p, size_t *usable, size_t *requested) {
  hk_arena_t *a;
  const char *why = HK_WHY_NOT_START;
  shard_t *sh = shard_at(p);
  entry_t *h = NULL;
  if (sh) {
    hk_lock(&sh->lock);
    h = live_head(p, &a, &why);
    if (h) {
      if (usable) *usable = (size_t)(h->npages - GUARD_PAGES) << PAGE_SHIFT;
      if (requested) *requested = h->l.requested;
    }
    hk_unlock(&sh->lock);
  }
  if (!h && what) hk_report_invalid(what, p, why);
  return h != NULL;
}

/* Measure copy: the live block holding address p (any byte of its pages),
 * read without the lock, so that a copy into a large block takes no lock:
 * a live block's head and tail entries, and the entries between them,
 * change only when the block itself is freed or resized, which the program
 * copying into it does not do meanwhile. A block is found by its head, the
 * entry of p's page or the nearest tagged one before it (the entries inside
 * a run carry no HEAD or TAIL tag); each thread remembers the last head it
 * found, so a run of copies into one big block walks once. */
static __thread struct { hk_arena_t *a; uint32_t head; } copy_hint;

static bool live_run_holds(const hk_arena_t *a, uint32_t h, uint32_t i) {
  const entry_t *e = &a->e[h];
  return h >= a->first_page && h <= i &&
         (HK_LOAD_RACY(e->tag) & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && i - h < HK_LOAD_RACY(e->npages);
}

bool hk_span_block_of(const void *p, uint8_t **start, size_t *requested) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  uint32_t h = copy_hint.head;
  /* the hint first: its arena was checked when it was set, and p's chunk
   * is a span arena's (the caller read the chunk map), so `a` is mapped */
  if (copy_hint.a == a && live_run_holds(a, h, i)) goto found;
  if (a->magic != ARENA_MAGIC || i < a->first_page) return false;
  h = i;
  uint8_t tag = HK_LOAD_RACY(a->e[i].tag);
  if (!(tag & T_HEAD)) {
    if (tag & T_TAIL) {
      h = i + 1 - HK_LOAD_RACY(a->e[i].npages);  /* npages == 0 or > i + 1: fails below */
    } else {
      do {
        if (h-- == a->first_page) return false;
        tag = HK_LOAD_RACY(a->e[h].tag);
      } while (!(tag & (T_HEAD | T_TAIL)));
    }
  }
  if (!live_run_holds(a, h, i)) return false;
  copy_hint.a = a;
  copy_hint.head = h;
found:
  *start = page_addr(a, h);
  *requested = HK_LOAD_RACY(a->e[h].l.requested);
  return true;
}

/* ---- free and resize ---- */

size_t hk_span_free(const char *what, void *p, unsigned *kind, size_t *requested) {
  hk_arena_t *a;
  const char *why = NULL;
  shard_t *sh = shard_at(p);
  if (!sh) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return 0;
  }
  thp_sample(arena_of(p), page_of(arena_of(p), p), p);
  hk_lock(&sh->lock);
  entry_t *h = live_head(p, &a, &why);
  if (!h) {
    hk_unlock(&sh->lock);
    hk_report_invalid(what, p, why);
    return 0;
  }
  uint32_t i = page_of(a, p);
  uint32_t n = h->npages;
  uint32_t stamp = now_stamp(a);
  grains_freed(a, i, n, stamp);
  *kind = h->kind;
  *requested = h->l.requested;
  SUB(live_pages, n);
  a->e[i + n - 1].tag = 0;
  h->tag = T_FREED;
  if (GUARD_PAGES && n - 1 <= close_pages()) {
    /* closed whole (its last page is closed already), by a call made with
     * the lock dropped: the block, tagged FREED and on no list, is nobody
     * else's meanwhile (a second free of it is a double free); it joins
     * the quarantine once closed, so that no malloc can open it first */
    unsigned how = close_how();
    hk_unlock(&sh->lock);
    bool closed = close_call(a, i, n - 1, how);
    hk_lock(&sh->lock);
    if (closed) close_done(a, i, n - 1, how);
  }
  if (QUAR_ON) quar_push(a, i, stamp);
  else run_release(a, i, n, n, stamp);  /* a live block's pages are all marked */
  hk_track_free(p);  /* before another thread can get these pages */
  hk_unlock(&sh->lock);
  return (size_t)n << PAGE_SHIFT;
}

size_t hk_span_resize(void *p, size_t size) {
  if (size == 0 || size > HK_SPAN_MAX) return 0;
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p), need = (uint32_t)(hk_align_up(size, HK_PAGE) >> PAGE_SHIFT) + GUARD_PAGES;
  shard_t *sh = shard_of(a);  /* p passed hk_span_check */
  hk_lock(&sh->lock);
  entry_t *h = &a->e[i];
  uint32_t n = h->npages, j = i + n;
  size_t ok = 0;
  if (GUARD_PAGES && need < n)  /* the new last page closes (the tail's last, the old one, is closed) */
    close_run(a, i + need - 1, 1, false);
  if (need < n) {  /* the tail becomes free (joined to a free run after it) */
    uint32_t len = n - need, nd = len, stamp = now_stamp(a);
    grains_freed(a, i + need, len, stamp);
    join_next(a, j, &len, &nd, &stamp);
    a->e[j - 1].tag = 0;
    free_insert(a, i + need, len, nd, stamp);
    SUB(live_pages, n - need);
  } else if (need > n) {  /* take the head of the free run after it */
    uint32_t extra = need - n;
    if (j >= ARENA_PAGES || (a->e[j].tag & (T_HEAD | T_FREE)) != (T_HEAD | T_FREE) || a->e[j].npages < extra) {
      hk_unlock(&sh->lock);
      return 0;
    }
    /* the old last page and all but the last of the new ones open, the new last closes */
    if (GUARD_PAGES && (!open_run(a, j - 1, extra) || (a->e[j].npages > extra && !close_run(a, j + extra - 1, 1, false)))) {
      close_run(a, j - 1, 1, false);
      hk_unlock(&sh->lock);
      return 0;
    }
    uint32_t fn = a->e[j].npages, stamp = a->e[j].f.stamp;
    uint32_t nd = free_remove(a, j);
    uint32_t d = nd ? bits_count(a, j, extra) : 0;
    if (fn > extra) free_insert(a, j + extra, fn - extra, nd - d, stamp);
    h->l.fresh |= fresh_chunks(a, i, i, i + need - GUARD_PAGES);
    bits_set(a, j, extra, true);
    a->e[j - 1].tag = 0;
    ADD(live_pages, extra);
  }
  if (need != n) {
    h->npages = need;
    a->e[i + need - 1].npages = need;
    a->e[i + need - 1].tag = T_TAIL | T_LIVE;
    h->tag = (need == 1 ? T_TAIL : 0) | T_HEAD | T_LIVE;
  }
  h->l.requested = (uint32_t)size;
  ok = (size_t)(need - GUARD_PAGES) << PAGE_SHIFT;
  hk_unlock(&sh->lock);
  hk_track_resize(p, (size_t)(n - GUARD_PAGES) << PAGE_SHIFT, ok);
  return ok;
}

/* ---- purging ----
 * Under every shard's lock (lock_all). No system call is made under the
 * locks (but the secure build's quarantine's): a purge takes the range it will madvise (or ask mincore
 * about) off the lists under the lock, as a "job": its head tagged T_FREED
 * (a free of its start is still a double free), its tail untagged, so that
 * no allocation, resize or neighbouring free can take it or join it. The
 * calls are made with the lock dropped; the range goes back, joined to its
 * neighbours, under the lock again. The range is cut to the pages that
 * need the calls, so that the rest of a long free run (an arena's
 * untouched tail) stays free for others meanwhile. */

typedef struct { hk_arena_t *a; uint32_t at, n, stamp, lo, hi; } job_t;  /* taken: [at, at + n); the calls: [lo, hi) */
enum { JOB_PURGE, JOB_PURGE_HUGE, JOB_CHECK };

/* The first and last marked page of [i, i + n) (*hi past it); false when none. */
static bool marked_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t *lo, uint32_t *hi) {
  uint32_t p = i, q;
  if (!next_marked(a, &p, i + n, &q)) return false;
  *lo = p;
  for (uint32_t r = q; next_marked(a, &r, i + n, &q); r = q) {}
  *hi = q;
  return true;
}

/* The purge an arena gets: whole huge pages only in a huge-page arena (a
 * plain one is purged by its marked pages). */
static unsigned arena_how(const hk_arena_t *a, unsigned how) {
  return how == JOB_PURGE_HUGE && !a->huge ? JOB_PURGE : how;
}

/* The whole huge pages of [i, i + n) that hold a marked page: [*lo, *hi)
 * from the first to the last of them; false when there is none. A huge
 * page that is partly live is left whole (a purge of part of it splits it,
 * and khugepaged may fill it again: RSS grows, jemalloc #1127). */
static bool huge_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t *lo, uint32_t *hi) {
  uint32_t s = (i + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1), e = (i + n) & ~(HUGE_PAGES - 1);
  bool any = false;
  for (uint32_t h = s; h + HUGE_PAGES <= e; h += HUGE_PAGES)
    if (bits_count(a, h, HUGE_PAGES)) {
      if (!any) *lo = h;
      *hi = h + HUGE_PAGES;
      any = true;
    }
  return any;
}

/* The end of the unit of u pages (a power of two) that holds page c, or e. */
static uint32_t unit_end(uint32_t c, uint32_t u, uint32_t e) {
  uint32_t next = (c | (u - 1)) + 1;
  return next < e ? next : e;
}
/* The first stretch of free run [i, i + n) last freed at `before` or
 * earlier (grains_aged: whole huge pages in a huge-page arena, else 64 KiB
 * grains) that holds a marked page: [*lo, *hi) as huge_bounds or
 * marked_bounds give it within the stretch; false when there is none. The
 * purge clock's range. */
static bool aged_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t before, bool huge,
                        uint32_t *lo, uint32_t *hi) {
  uint32_t u = huge ? HUGE_PAGES : GRAIN_PAGES;
  uint32_t c = huge ? (i + u - 1) & ~(u - 1) : i;
  uint32_t e = huge ? (i + n) & ~(u - 1) : i + n;
  while (c < e) {
    if (!grains_aged(a, c, unit_end(c, u, e) - c, before)) {
      c = unit_end(c, u, e);
      continue;
    }
    uint32_t from = c;
    while (c < e && grains_aged(a, c, unit_end(c, u, e) - c, before)) c = unit_end(c, u, e);
    if (huge ? huge_bounds(a, from, c - from, lo, hi) : marked_bounds(a, from, c - from, lo, hi)) return true;
  }
  return false;
}

/* Free run i: [lo, hi) of it becomes job j (the rest stays free; the
 * secure build takes the whole run: a free run's last page is its guard,
 * closed, and a cut would leave the front's open). Under the lock. */
static void job_take(hk_arena_t *a, uint32_t i, uint32_t lo, uint32_t hi, job_t *j) {
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  uint32_t at = GUARD_PAGES ? i : lo, end = GUARD_PAGES ? i + n : hi;
  free_remove(a, i);
  if (at > i) free_insert(a, i, at - i, bits_count(a, i, at - i), stamp);
  if (end < i + n) free_insert(a, end, i + n - end, bits_count(a, end, i + n - end), stamp);
  a->e[at].tag = T_FREED;
  if (end - 1 > at) a->e[end - 1].tag = 0;
  *j = (job_t){ a, at, end - at, stamp, lo, hi };
}

/* The job's calls, without the lock: purge its marked pages (a gap of up
 * to HK_SPAN_PURGE_GAP pages between two ranges is purged with them: one
 * call instead of one a range), or its whole huge pages with a marked page,
 * or ask which of its marked pages are resident and unmark the rest. */
static uint32_t job_run(job_t *j, unsigned how, unsigned long *calls) {
  hk_arena_t *a = j->a;
  uint32_t end = j->hi, pages = 0;
  how = arena_how(a, how);
  if (how == JOB_PURGE_HUGE) {  /* [lo, hi) is whole huge pages */
    for (uint32_t h = j->lo; h < end; h += HUGE_PAGES) {
      uint32_t k = h;
      while (k < end && bits_count(a, k, HUGE_PAGES)) k += HUGE_PAGES;  /* consecutive ones: one call */
      if (k == h) continue;
      pages += bits_count(a, h, k - h);
      hk_os_purge(page_addr(a, h), (size_t)(k - h) << PAGE_SHIFT);
      bits_set(a, h, k - h, false);
      (*calls)++;
      h = k;
    }
    return pages;
  }
  for (uint32_t p = j->lo, q; next_marked(a, &p, end, &q); p = q) {
    for (uint32_t r = q, t; next_marked(a, &r, end, &t) && r - q < HK_SPAN_PURGE_GAP; r = t) q = t;
    if (how == JOB_PURGE) {
      pages += bits_count(a, p, q - p);
      hk_os_purge(page_addr(a, p), (size_t)(q - p) << PAGE_SHIFT);
      bits_set(a, p, q - p, false);
      (*calls)++;
      continue;
    }
    unsigned char vec[1024];
    for (uint32_t r = p; r < q; r += sizeof vec) {
      uint32_t k = q - r < sizeof vec ? q - r : (uint32_t)sizeof vec;
      if (hk_os_resident(page_addr(a, r), (size_t)k << PAGE_SHIFT, vec)) bits_keep_resident(a, r, k, vec);
    }
  }
  return pages;
}

/* Runs the jobs (lock dropped) and gives their ranges back (lock taken
 * again): bytes purged. A checked range whose run, joined to its
 * neighbours, has no other resident page is marked checked, so that the
 * cap does not ask the kernel about it again. Called and returns with every lock held. */
static size_t jobs_run(job_t *jobs, unsigned n, unsigned how, unsigned long *calls) {
  if (!n) return 0;
  size_t pages = 0;
  unlock_all();
  for (unsigned k = 0; k < n; k++) pages += job_run(&jobs[k], how, calls);
  lock_all();
  for (unsigned k = 0; k < n; k++) {
    job_t *j = &jobs[k];
    uint32_t nd = bits_count(j->a, j->at, j->n);
    uint32_t h = run_release(j->a, j->at, j->n, nd, j->stamp);
    if (how == JOB_CHECK && j->a->e[h].f.ndirty == nd) j->a->e[h].kind = 1;  /* joined no resident page */
  }
  return pages << PAGE_SHIFT;
}

/* The quarantine's pages (secure build) are purged in place, under the lock. */
static uint32_t purge_marked(hk_arena_t *a, uint32_t i, uint32_t n, unsigned long *calls) {
  uint32_t pages = 0;
  for (uint32_t p = i, q; next_marked(a, &p, i + n, &q); p = q) {
    hk_os_purge(page_addr(a, p), (size_t)(q - p) << PAGE_SHIFT);
    bits_set(a, p, q - p, false);
    pages += q - p;
    (*calls)++;
  }
  return pages;
}

/* The free run with resident pages freed first, of all arenas (joined runs
 * keep older stamps, so this is nearly but not exactly the oldest); with
 * unchecked, the first such run not yet checked. */
static hk_arena_t *oldest(uint32_t *run) {
  hk_arena_t *old = NULL;
  uint64_t old_ms = UINT64_MAX;
  for (hk_arena_t *a = next_arena(NULL); a; a = next_arena(a))
    if (a->dirty_head && a->born_ms + a->e[a->dirty_head].f.stamp < old_ms) {
      old = a;
      old_ms = a->born_ms + a->e[a->dirty_head].f.stamp;
      *run = a->dirty_head;
    }
  return old;
}

/* A block's pages are all marked resident when it is handed out, but a
 * program may touch only a few: before the cap purges anything, the marks
 * of free runs are checked against the kernel's (mincore), oldest first,
 * until what is really resident fits the cap. Without it a heap of big
 * buffers touched at a few pages (large_cycles) looked over the cap and
 * purged pages it then faulted back in. (Checking at every free instead
 * cost more than the faults: mincore walks every page.) A run checked and
 * not changed since is not asked about again. */
static void cap_check(size_t cap_bytes) {
  job_t jobs[HK_SPAN_PURGE_BATCH];
  for (unsigned round = 0; round < 8 && (HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT) > cap_bytes; round++) {
    unsigned n = 0;
    size_t over = (HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT) - cap_bytes, taken = 0;
    for (hk_arena_t *a = next_arena(NULL); a && n < HK_SPAN_PURGE_BATCH && taken < over; a = next_arena(a))
      for (uint32_t i = a->dirty_head, next; i && n < HK_SPAN_PURGE_BATCH && taken < over; i = next) {
        next = a->e[i].f.dnext;
        uint32_t lo, hi;
        if (a->e[i].kind || !marked_bounds(a, i, a->e[i].npages, &lo, &hi)) continue;
        taken += (size_t)a->e[i].f.ndirty << PAGE_SHIFT;
        job_take(a, i, lo, hi, &jobs[n++]);
      }
    if (!n) return;
    unsigned long calls = 0;
    jobs_run(jobs, n, JOB_CHECK, &calls);
  }
}

size_t hk_span_collect(bool force, uint64_t delay_ms, size_t cap_bytes, unsigned long *purges) {
  size_t bytes = 0;
  unsigned long calls = 0;
  if (purges) *purges = 0;
  /* nothing live, free or quarantined (a small program's clock): nothing to
   * do, nor the THP mode read below; a trim still unmaps empty arenas */
  if (!force && !HK_LOAD_RELAXED(live_pages) && !HK_LOAD_RELAXED(dirty_pages) && !HK_LOAD_RELAXED(quar_pages))
    return 0;
  /* arenas advised huge pages: the purge clock gives back whole huge pages
   * only; the cap and trim purge what they must */
  unsigned clock_how = hk_os_thp() != HK_THP_NONE && !force ? JOB_PURGE_HUGE : JOB_PURGE;
  job_t jobs[HK_SPAN_PURGE_BATCH];
  lock_all();
  for (shard_t *sh = shards; QUAR_ON && sh < shards + HK_SPAN_SHARDS; sh++) {
    while (force && sh->quar_n) quar_release_oldest(sh);  /* trim: the quarantine too */
    for (unsigned k = 0; k < sh->quar_n; k++) {  /* quarantined runs keep their address, not their pages */
      quar_t q = sh->quar[(sh->quar_first + k) % QUAR_RUNS];
      entry_t *h = &q.a->e[q.i];
      if (now_stamp(q.a) - h->f.stamp >= delay_ms) bytes += (size_t)purge_marked(q.a, q.i, h->npages, &calls) << PAGE_SHIFT;
    }
  }
  /* the clock: runs free for delay_ms or more (all when force); joined runs
   * keep old stamps, so the dirty lists are not in order: each is walked
   * whole, a batch at a time (a run given back goes to the list's end, and
   * has nothing left to purge) */
  for (unsigned round = 0, n = 1; n && round < 64; round++) {
    n = 0;
    for (hk_arena_t *a = next_arena(NULL); a && n < HK_SPAN_PURGE_BATCH; a = next_arena(a)) {
      uint32_t now = now_stamp(a);
      for (uint32_t i = a->dirty_head, next; i && n < HK_SPAN_PURGE_BATCH; i = next) {
        next = a->e[i].f.dnext;
        uint32_t lo, hi;
        if (!force && now - a->e[i].f.stamp < delay_ms) continue;
        bool huge = arena_how(a, clock_how) == JOB_PURGE_HUGE;
        bool some = force ? marked_bounds(a, i, a->e[i].npages, &lo, &hi)
                          : aged_bounds(a, i, a->e[i].npages, now - (uint32_t)delay_ms, huge, &lo, &hi);
        if (some) job_take(a, i, lo, hi, &jobs[n++]);
      }
    }
    bytes += jobs_run(jobs, n, clock_how, &calls);
  }
  if ((HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT) > cap_bytes) cap_check(cap_bytes);
  /* the cap: the oldest runs' pages, 4 KiB at a time (under the cap a huge
   * page that is partly live is split) */
  for (unsigned round = 0, n = 1; n && round < 64 && (HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT) > cap_bytes; round++) {
    n = 0;
    while (n < HK_SPAN_PURGE_BATCH && (HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT) > cap_bytes) {
      uint32_t i = 0, lo, hi;
      hk_arena_t *a = oldest(&i);
      if (!a) break;
      if (!marked_bounds(a, i, a->e[i].npages, &lo, &hi)) {  /* counted dirty, none marked: cannot be */
        HK_ASSERT(0);
        break;
      }
      job_take(a, i, lo, hi, &jobs[n++]);
    }
    bytes += jobs_run(jobs, n, JOB_PURGE, &calls);
  }
  hk_arena_t *gone = NULL;
  for (unsigned k = 0; force && k < HK_SPAN_SHARDS; k++)  /* arenas with nothing live go back to the OS */
    for (hk_arena_t **pa = &shards[k].arenas; *pa;) {
      hk_arena_t *a = *pa;
      if (a->free_pages == ARENA_PAGES - a->first_page) {
        *pa = a->next;
        SUB(arena_count, 1);
        SUB(shut_islands, a->islands);
        a->next = gone;
        gone = a;
      } else {
        pa = &a->next;
      }
    }
  unlock_all();
  while (gone) {
    hk_arena_t *next = gone->next;
    arena_unmap(gone);
    gone = next;
  }
  if (purges) *purges = calls;
  return bytes;
}

size_t hk_span_bytes_live(void) { return HK_LOAD_RELAXED(live_pages) << PAGE_SHIFT; }
size_t hk_span_bytes_dirty(void) { return HK_LOAD_RELAXED(dirty_pages) << PAGE_SHIFT; }
size_t hk_span_bytes_cached(void) { return (HK_LOAD_RELAXED(dirty_pages) + HK_LOAD_RELAXED(quar_pages)) << PAGE_SHIFT; }

void hk_span_fork_prepare(void) { lock_all(); }
void hk_span_fork_parent(void) { unlock_all(); }
void hk_span_fork_child(void) {
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) hk_lock_reset(&shards[k].lock);
}
