/* What the two large tiers share: blocks of more than 32 KiB are spans
 * (large_span.c) or blocks in a mapping of their own (large_huge.c); the
 * router between them is the API layer's (alloc.c, hk_large_alloc). Both
 * tiers keep their counters, the learner's events, the upward hooks, the
 * caps and the purge clock here; so do the cache and quarantine of freed
 * mappings, which the clock purges and a fork handler locks. */
#ifndef HK_LARGE_H
#define HK_LARGE_H

#include "base/config.h"
#include "base/measures.h"
#include "base/reuse.h"
#include "backend/span.h"

/* ---- before either tier ------------------------------------------------------ */

/* A large allocation's admission, before the router picks a tier: the
 * learner's epoch clock (the alloc hook), the size limits and the memory
 * budget's gate (its relief: the global caches). false: refused, errno
 * ENOMEM. align: 0 or a power of two. */
bool hk_large_admit(size_t size, size_t align);

/* A block its tier cannot resize where it is (the tier's resize returned
 * NULL with copy set): the router's new block takes its first `copy`
 * bytes, with the alignment `align` (0: any), and the old one is freed. */
typedef struct hk_large_move {
  size_t copy, align;
} hk_large_move_t;

/* ---- counters, events and hooks, for both tiers ------------------------------ */

void hk_large_count_alloc(size_t bytes);
void hk_large_count_free(size_t bytes);
void hk_large_count_resize(size_t old_bytes, size_t new_bytes);
size_t hk_large_count_live(void);
size_t hk_large_count_allocs(void);
size_t hk_large_count_frees(void);
size_t hk_large_bytes_live(void);
size_t hk_large_bytes_cached(void);  /* cached mappings and free resident span pages */

/* Events the learner reads, counted only while it is on (HAKMEM_LEARN or
 * HAKMEM_LEARN_PURGE); the evictions are by the entry cap or the byte cap;
 * a ghost hit is a miss a mapping evicted lately would have served;
 * purges count both tiers' (the cached mappings' and the span tier's);
 * the purged pages of the span tier's clock and of the cache, apart. */
enum { HK_LARGE_ALLOCS, HK_LARGE_HITS, HK_LARGE_GHOST_HITS, HK_LARGE_EVICT_COUNT,
       HK_LARGE_EVICT_BYTES, HK_LARGE_PURGES, HK_LARGE_REFAULTS, HK_LARGE_FAULT_PAGES,
       HK_LARGE_SPAN_PURGED_PAGES, HK_LARGE_CACHE_PURGED_PAGES, HK_LARGE_NEVENTS };
/* The refaults' reuse distances (base/reuse.h), per tier: the span tier's
 * free pages, the cache of freed mappings. Zeroes them. */
void hk_large_take_reuse(unsigned long span[HK_REUSE_NB], unsigned long cache[HK_REUSE_NB]);
void hk_large_note(unsigned ev);
/* The learner's view of a span allocation (large.c says how it is read). */
void hk_large_note_span(const hk_span_note_t *sn);
/* The counts since the last call; zeroes them. */
void hk_large_take_events(unsigned long out[HK_LARGE_NEVENTS]);

/* The secure build: the kind and size a free names must be the block's
 * (kind and size: what the caller says, HK_KIND_ANY and 0 when unknown). */
void hk_large_check_free(void *p, unsigned kind, size_t size, unsigned block_kind, size_t requested);

/* Called at each allocation with its weight (1 per 64 KiB, plus one): the
 * learner's epoch clock. Set once by init.c (docs/ARCHITECTURE.md, "Hooks"). */
void hk_large_set_alloc_hook(void (*fn)(unsigned weight));
/* Called with the bytes of fresh pages a span block is about to fault in
 * that the span tier does not keep free: the other tiers shed as many idle
 * bytes (init.c). hk_large_grow_hook calls it, when set. */
void hk_large_set_grow_hook(void (*fn)(size_t bytes));
void hk_large_grow_hook(size_t bytes);
/* Called at each large block's free, after its bytes left the counts (no
 * lock held): the background purge's auto start looks again at what the
 * program holds (init.c). Set once. */
void hk_large_set_free_hook(void (*fn)(void));

/* First-class heaps (heap_api.c) keep a table of their large blocks: forget
 * is told of every free and resize of a block before it happens (it
 * returns the block's heap, NULL when none); keep puts a resized block back
 * under that heap when it stayed where it was. Set once, by the first heap
 * (docs/ARCHITECTURE.md, "Hooks"); until then a NULL test. The tiers and
 * realloc call them through hk_large_heap_forget and hk_large_heap_keep. */
void hk_large_set_heap_hooks(void *(*forget)(void *p), void (*keep)(void *p, void *heap));
void *hk_large_heap_forget(void *p);
void hk_large_heap_keep(void *p, void *heap);

/* ---- caps and the purge clock -------------------------------------------------- */

/* The cache's caps (entries, MiB) and purge delay: the knobs' values until
 * the learner sets others. The MiB cap also bounds the span tier's free
 * resident pages (hk_large_span_cap). */
void hk_large_set_caps(long count, long mb, long purge_delay_ms);  /* the learner's */
/* The learner's purge windows (learner.c): the cache's delay and the span
 * tier's free pages' (which, unset, is the cache's). Not over a pin. */
void hk_large_set_delays(long cache_ms, long span_ms);
/* The control API's: sets one cap and pins it (the learner leaves it). */
enum { HK_LARGE_CAP_COUNT, HK_LARGE_CAP_MB, HK_LARGE_CAP_DELAY, HK_LARGE_CAP_SPAN_DELAY };
void hk_large_pin_cap(unsigned which, long v);
long hk_large_cap(unsigned which);   /* in force now */

/* The purge clock of both tiers: cached mappings purged after the delay,
 * free span pages purged down to the span cap (all of both, and the
 * quarantine unmapped, when force). Bytes given back. */
size_t hk_large_collect(bool force);

/* The free resident span bytes allowed now (large.c says why so many). */
size_t hk_large_span_cap(void);
/* Free span pages purged outside the clock: those free for delay_ms, then
 * the oldest until keep_bytes stay resident. */
void hk_large_span_purge(uint64_t delay_ms, size_t keep_bytes);
/* The small tier is about to fault in `bytes`: while the span tier is
 * idle, as many of its free resident bytes go back (superslab.c's grow
 * hook, set by init.c). */
void hk_large_shed(size_t bytes);

/* ---- the cache and quarantine of freed mappings ----------------------------------- */

/* The header of a block in a mapping of its own (large_huge.c): the
 * mapping's first page. The mapping starts on a 2 MiB boundary, the block
 * at the next page or at its alignment; the chunk map says how many chunks
 * back the header is (HK_CHUNK_LARGE + k). */
#define HK_LARGE_MAGIC 0x68616b6d656d4c47ull  /* "hakmemLG" */
enum { HK_LARGE_LIVE = 1, HK_LARGE_CACHED = 2 };
typedef struct hk_large {
  uint64_t magic;
  uint8_t *user;          /* the pointer handed out (HK_HIDE)         */
  size_t map_size;        /* bytes mapped, header included          */
  size_t rw_size;         /* of them readable and writable: the block's
                             pages. The secure build's rest is PROT_NONE:
                             the guard, and room to grow in */
  size_t usable;          /* from user to the end of the pages       */
  uint32_t state;         /* HK_LARGE_LIVE, HK_LARGE_CACHED (cached or
                             quarantined), 0 being unmapped          */
  uint32_t zeroed;        /* all past the header reads as zero       */
  uint32_t kind;          /* HK_KIND_* it was allocated as           */
  uint32_t purged;        /* purged while cached (not yet reused)    */
  size_t requested;       /* bytes asked for                         */
  size_t align;           /* alignment asked for (a move keeps it)   */
  uint64_t stamp_ms;      /* when cached                             */
  struct hk_large *next, *prev;
} hk_large_t;

/* The guard measure (the secure build): a guard page before each block,
 * and past its pages a PROT_NONE tail to grow in; no cache: a freed
 * mapping is closed and quarantined instead. */
#define HK_LARGE_GUARD ((size_t)(HK_M_GUARD ? HK_PAGE : 0))

/* A cached mapping that serves a block of `need` bytes of pages as it is,
 * or (secure build) after its pages are moved to `need`; off the cache
 * (still HK_LARGE_CACHED), or NULL. */
hk_large_t *hk_large_cache_take(size_t need);
/* None served as it is: the cached mapping nearest to `need` (the
 * smallest bigger one, else the biggest smaller one), off the cache, for
 * the caller to reshape (or unmap); NULL when the cache is empty. */
hk_large_t *hk_large_cache_take_nearest(size_t need);
/* Freed mapping h (state HK_LARGE_LIVE, ck: its chunk-map value) into the
 * cache, or unmapped when the cache keeps none like it; entries past the
 * caps are unmapped. The purge clock ticks when it was cached. */
void hk_large_cache_put(hk_large_t *h, unsigned ck);
/* The guard measure: freed mapping h, its pages dropped and closed, waits
 * here before its mapping goes (a write through a dangling pointer faults
 * in it, and no new block gets its address meanwhile). */
void hk_large_quarantine(hk_large_t *h);
/* Move the end of h's readable pages to `need` bytes inside its mapping
 * (secure build: the mappings reserve room); false when the OS refused. */
bool hk_large_set_rw(hk_large_t *h, size_t need);
/* Unmap h (state already 0) and clear its block's chunk-map entry. */
void hk_large_unmap(hk_large_t *h);

/* Both tiers' locks (the cache's, the span arenas'), around fork(). */
void hk_large_fork_prepare(void);
void hk_large_fork_parent(void);
void hk_large_fork_child(void);

#endif
