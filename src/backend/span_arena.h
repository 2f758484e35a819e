/* span_arena.h: the span tier's page map, for the span files only: 1 GiB
 * arenas, the entry of every page (the boundary tags of the runs), the
 * free-run lists, the resident-page bits and ages, and the shards that
 * hold the arenas under their locks.
 *
 * An arena starts on a 1 GiB boundary, so a pointer masks to its arena and
 * indexes its table by page. Only the first (HEAD) and last (TAIL) page of
 * a run carry a tag; a one-page run has both on one entry. Every field of
 * an arena, and its shard's lists, change under its shard's lock, except
 * where a comment says otherwise. */
#ifndef HK_SPAN_ARENA_H
#define HK_SPAN_ARENA_H

#include "base/bitmap.h"
#include "base/config.h"
#include "base/libc.h"  /* copies the compiler makes (structs, hk_gather8): glibc's, unchecked */
#include "base/lock.h"
#include "base/measures.h"
#include "base/report.h"
#include "pal/os.h"

#define ARENA_SHIFT 30
#define ARENA_SIZE ((size_t)1 << ARENA_SHIFT)
#define ARENA_PAGES ((uint32_t)(ARENA_SIZE / HK_PAGE))
#define PAGE_SHIFT 12
#define HUGE_PAGES ((uint32_t)(HK_SS_SIZE >> PAGE_SHIFT))  /* pages of a huge page (2 MiB chunk) */
#define GRAIN_PAGES 16u  /* the purge clock's unit of age: 64 KiB */
#define ARENA_MAGIC 0x68616b6d656d5350ull /* "hakmemSP" */
#define NBINS 72
/* The guard measure (span_guard.c): every live block and free run ends
 * with a closed page, so a block takes one page more than it asks for. */
#define GUARD_PAGES (HK_M_GUARD ? 1u : 0u)

/* A shard's lock, its holds counted by the debug build's check that no
 * system call is made under it (lock.h, hk_lock_nosys). */
HK_INLINE void hk_shard_lock(hk_lock_t *l) { hk_lock_nosys(l); }
HK_INLINE void hk_shard_unlock(hk_lock_t *l) { hk_unlock_nosys(l); }
/* The guard measure's quarantine (span_guard.c): per shard, the last
 * QUAR_RUNS freed blocks wait before their pages become a free run. */
#define QUAR_ON HK_M_GUARD
#define QUAR_RUNS 16u

enum { T_HEAD = 1, T_TAIL = 2, T_LIVE = 4, T_FREE = 8, T_FREED = 16, T_POPULATED = 32 };
/* T_FREED marks the first page of a block that was freed into a larger
 * run, or that waits in the quarantine or a purge, so that a second free
 * of it is still called a double free. T_POPULATED: a live block whose
 * fresh pages calloc faulted in whole (it says nothing of how the program
 * touches its blocks: not sampled by span_thp.c). */

/* a live run lent to a superslab (span_lend.c): no block of the
 * program's, so no free, check or resize finds it */
#define KIND_SS 0xfeu

typedef struct {
  uint32_t npages;
  uint8_t tag;
  uint8_t kind;  /* live: HK_KIND_*; free: 1 once the cap's mincore check saw it whole (span_purge.c) */
  uint16_t bin;  /* free: its bin */
  union {
    struct { uint32_t next, prev, dnext, dprev, stamp, ndirty; } f;  /* free run (head) */
    struct { uint32_t requested; uint64_t fresh; } l;                 /* live block (head) */
  };
} entry_t;
_Static_assert(sizeof(entry_t) == 32, "entry_t is 32 bytes");

typedef struct hk_arena {
  uint64_t magic;
  struct hk_arena *next;          /* in its shard */
  uint32_t first_page;           /* pages before it hold this descriptor */
  uint32_t shard;                /* whose lock guards it */
  uint32_t bins[NBINS];          /* free runs by size (page index, 0: none) */
  uint32_t dirty_head, dirty_tail; /* free runs with resident pages, in order of freeing */
  uint32_t free_pages;
  uint32_t huge;                 /* advised huge pages (else plain: span_thp.c) */
  uint64_t born_ms;              /* stamps count from here */
  uint32_t freed_at[ARENA_PAGES / GRAIN_PAGES]; /* per 64 KiB: stamp of its last free (hk_arena_grains_freed) */
  uint64_t bits[ARENA_PAGES / 64]; /* page may be resident (touched, not purged) */
  uint32_t open_to;              /* guard markers: pages from here on are PROT_NONE (span_guard.c) */
  hk_lock_t open_lock;           /* guard markers: held across the call that moves open_to */
  uint64_t closed[GUARD_PAGES ? ARENA_PAGES / 64 : 1]; /* guard markers: page carries one */
  uint64_t shut[GUARD_PAGES ? ARENA_PAGES / 64 : 1];   /* a freed block's page closed PROT_NONE */
  uint32_t islands;              /* runs of shut pages (span_guard.c) */
  entry_t e[ARENA_PAGES];
} hk_arena_t;

/* A run of pages: [at, at + n). */
typedef struct { uint32_t at, n; } run_t;

/* A freed block waiting in the quarantine: its arena and first page; busy
 * while the purge clock purges its pages with the locks dropped (it then
 * cannot leave the quarantine: span_guard.c, hk_quar_collect). */
typedef struct { hk_arena_t *a; uint32_t i; uint32_t busy; } quar_t;

/* A shard: a list of arenas and the lock that guards them. */
typedef struct {
  hk_lock_t lock;
  hk_arena_t *arenas;  /* oldest first */
  size_t dirty;        /* its free resident pages (atomic: others read it) */
  quar_t quar[QUAR_ON ? QUAR_RUNS : 1];
  unsigned quar_first, quar_n;
} __attribute__((aligned(64))) shard_t;
extern shard_t hk_arena_shards[HK_SPAN_SHARDS];

/* The tier's counts: changed under a shard's lock, read without it by the
 * stats, the caps and the lending, so every access is atomic (relaxed). */
extern size_t hk_span_live_pages, hk_span_dirty_pages;
extern size_t hk_span_lent_pages;    /* lent to superslabs (not in live pages) */
extern size_t hk_span_arena_count;
extern size_t hk_span_carved;        /* blocks carved so far (span_lend.c's quiet rule) */

static inline hk_arena_t *arena_of(const void *p) {
  return (hk_arena_t *)((uintptr_t)p & ~(uintptr_t)(ARENA_SIZE - 1));
}
static inline uint32_t page_of(const hk_arena_t *a, const void *p) {
  return (uint32_t)(((uintptr_t)p - (uintptr_t)a) >> PAGE_SHIFT);
}
static inline uint8_t *page_addr(hk_arena_t *a, uint32_t i) { return (uint8_t *)a + ((size_t)i << PAGE_SHIFT); }
static inline shard_t *shard_of(const hk_arena_t *a) {
  HK_ASSERT(a->shard < HK_SPAN_SHARDS);
  return &hk_arena_shards[a->shard];
}
static inline uint32_t now_stamp(const hk_arena_t *a) { return (uint32_t)(hk_os_now_ms() - a->born_ms); }

/* The resident-page bits (base/bitmap.h): a run taken off the lists for a
 * purge outside the locks has its bits read and cleared by the purging
 * thread while others change the bits of their runs, which may share a
 * word, under the lock. */
HK_INLINE uint32_t bits_count(const hk_arena_t *a, uint32_t i, uint32_t n) {
  HK_ASSERT(i + n <= ARENA_PAGES);
  return hk_bitmap_count(a->bits, i, n);
}
HK_INLINE void bits_set(hk_arena_t *a, uint32_t i, uint32_t n, bool on) {
  HK_ASSERT(i + n <= ARENA_PAGES);
  hk_bitmap_set(a->bits, i, n, on);
}
/* The first run of marked (maybe resident) pages in [*p, end). */
static inline bool next_marked(const hk_arena_t *a, uint32_t *p, uint32_t end, uint32_t *q) {
  return hk_bitmap_next_run(a->bits, p, end, q);
}

/* ---- shards (span_arena.c) ---- */
unsigned hk_arena_shards_now(void);   /* in use: one per CPU, or HAKMEM_SPAN_SHARDS */
shard_t *hk_arena_home_shard(void);   /* the calling thread's */
void hk_arena_lock_all(void);         /* every shard's lock, in order */
void hk_arena_unlock_all(void);
/* Every arena, shard by shard: hk_arena_next(NULL) is the first (all locks held). */
hk_arena_t *hk_arena_next(const hk_arena_t *a);

/* ---- free runs ---- */
/* Pages [i, i + n) become a free run (nd of them resident, freed at
 * `stamp`): tagged at both ends, binned, on the dirty list when nd. Its
 * neighbours are no free runs (they were joined, or are not free). */
void hk_arena_free_insert(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t nd, uint32_t stamp);
/* Takes free run i off its lists and clears its tags (they become interior
 * or are rewritten by the caller). Returns its resident pages. */
uint32_t hk_arena_free_remove(hk_arena_t *a, uint32_t i);
/* The free run of at least `want` pages at the lowest address; 0 when none
 * (resident: only runs with at least half of `want` pages resident). */
uint32_t hk_arena_find_fit(const hk_arena_t *a, uint32_t want, bool resident);
/* The first arena of the shard (its lock held) with a fit: *i the run. */
hk_arena_t *hk_arena_shard_fit(shard_t *sh, bool huge, uint32_t want, bool resident, uint32_t *i);
/* A fit in the other shards than *sh, whose lock is held (see span_arena.c):
 * returns with the lock of the arena's shard held (*sh that shard), or
 * NULL with *sh's lock held again. */
hk_arena_t *hk_arena_fit_elsewhere(shard_t **sh, bool huge, uint32_t want, bool resident, uint32_t *i);
/* Whether the other shards than sh hold `want` free resident pages. */
bool hk_arena_resident_beside(const shard_t *sh, uint32_t want);
/* Run i of n pages (its head tagged T_FREED, its tail 0, nd of its pages
 * resident) becomes free: joined to the free runs on either side, binned.
 * Returns the joined run's first page. */
uint32_t hk_arena_run_release(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t nd, uint32_t stamp);
/* The free run that starts at page j, if there is one, joins the run that
 * ends at j: its pages, resident count and age are added to *len, *nd and *stamp. */
void hk_arena_join_next(hk_arena_t *a, uint32_t j, uint32_t *len, uint32_t *nd, uint32_t *stamp);

/* ---- ages ---- */
/* Pages [i, i + n) are freed at `stamp`: their 64 KiB grains remember it. */
void hk_arena_grains_freed(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t stamp);
/* Whether pages [i, i + n) (whole grains) were last freed at `before` or earlier. */
bool hk_arena_grains_aged(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t before);

/* ---- arenas ---- */
/* A new arena for shard sh, advised huge pages or not, one free run, on
 * no list yet: mapped, advised and its descriptor written with no lock
 * held (the calls and the faults); NULL when it cannot be mapped. Then
 * hk_arena_link, under sh's lock, puts it last in the shard's list. */
hk_arena_t *hk_arena_map(bool huge, shard_t *sh);
void hk_arena_link(hk_arena_t *a);
void hk_arena_unmap(hk_arena_t *a);  /* taken off its shard's list already */

#endif
