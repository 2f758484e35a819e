/* Compile-time constants and compiler helpers shared by every layer. */
#ifndef HK_CONFIG_H
#define HK_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define HK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define HK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HK_INLINE      static inline __attribute__((always_inline))
#define HK_NOINLINE    __attribute__((noinline))
#define HK_COLD        __attribute__((cold, noinline))
#define HK_EXPORT      __attribute__((visibility("default")))
/* On internal data read by the fast paths: accessed directly, not via GOT. */
#define HK_HIDDEN      __attribute__((visibility("hidden")))
#define HK_CACHE_LINE  64
/* On a zeroed array of pages (a map, a table, a buffer): it goes after
 * every small variable (the linkers' .lbss, past .bss), so that the small
 * ones share a few pages instead of one page between each two arrays. */
#define HK_BSS_ARRAY   __attribute__((section(".lbss")))

/* Superslab: 2 MiB-aligned region holding slabs and their metadata. */
#define HK_SS_SHIFT    21
#define HK_SS_SIZE     ((size_t)1 << HK_SS_SHIFT)
#define HK_SS_MASK     (HK_SS_SIZE - 1)

/* HAKMEM_BACKGROUND_PURGE=auto starts the purge thread once the program
 * holds this much (superslabs mapped, large blocks live and cached): a
 * program that never held more keeps no thread, and one that did gets its
 * memory back within about a purge delay of freeing it, sleeping or not. */
#define HK_BG_AUTO_BYTES ((size_t)32 << 20)
/* ... and under HAKMEM_PROFILE=lowmem, judged on peak RSS alone: what a
 * thread costs (a stack's few pages) is less than what the purge brings
 * back from a program that held this much (the blocks a waiting thread
 * allocated and others freed: only the purge thread collects them) */
#define HK_BG_AUTO_BYTES_LOWMEM ((size_t)8 << 20)
#define HK_PAGE        ((size_t)4096)

/* Tiers. */
#define HK_SMALL_MAX   1024            /* tiny: 64 KiB slabs      */
#define HK_MID_MAX     (32 * 1024)     /* mid: 256 KiB slabs      */
#define HK_NCLASS      72
#define HK_NCLASS_SMALL 32             /* classes 0..31 are <= 1 KiB */

/* Blocks a slab may hand out aligned: slab starts are 4 KiB aligned. */
#define HK_SLAB_ALIGN_MAX HK_PAGE

/* Fresh blocks are carved at most this many bytes at a time: touching a
 * whole slab up front would cost RSS the program may never use. */
#define HK_CARVE_MAX_BYTES (64u * 1024u)   /* HAKMEM_CARVE_KB is at most 64 */

#define HK_MAX_ALLOC   ((size_t)PTRDIFF_MAX - 2 * HK_SS_SIZE)

/* The one atomic vocabulary (docs/ARCHITECTURE.md, "Shared pieces"):
 * words threads share are plain C types (not _Atomic), and every access
 * that another thread may race with is one of these, named by what it does
 * and its memory order. x is the word itself (not its address); the
 * read-modify-writes return the value before. Fields one thread writes and
 * others may read (ownership, states) are plain moves on x86, but visible
 * to the compiler and to TSan as atomic. */
#define HK_LOAD_RELAXED(x)      __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define HK_STORE_RELAXED(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define HK_LOAD_ACQUIRE(x)      __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define HK_STORE_RELEASE(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define HK_ADD_RELAXED(x, v)    __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)
#define HK_SUB_RELAXED(x, v)    __atomic_fetch_sub(&(x), (v), __ATOMIC_RELAXED)
#define HK_XCHG_RELAXED(x, v)   __atomic_exchange_n(&(x), (v), __ATOMIC_RELAXED)
/* x becomes v if it holds *old (true); else *old becomes what it holds */
#define HK_CAS_RELAXED(x, old, v) \
  __atomic_compare_exchange_n(&(x), (old), (v), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
/* A word another thread may be writing, read where any value it held is
 * fine (the fast path's reads of a slab's owner and block bound): a plain
 * load, which the compiler can fold into a compare; an atomic one under
 * TSan, which would otherwise report it. */
#if defined(__SANITIZE_THREAD__)
#define HK_LOAD_RACY(x)         __atomic_load_n(&(x), __ATOMIC_RELAXED)
#else
#define HK_LOAD_RACY(x)         (x)
#endif

/* What a block was allocated as, for the secure build's checks at free. */
enum { HK_KIND_MALLOC = 0, HK_KIND_NEW = 1, HK_KIND_NEW_ARRAY = 2, HK_KIND_ANY = 255 };

/* "MAJOR.MINOR.PATCH", from the HAKMEM_VERSION_* of include/hakmem.h, which
 * the file using it includes. */
#define HK_STR2(x) #x
#define HK_STR(x) HK_STR2(x)
#define HK_VERSION_STRING \
  HK_STR(HAKMEM_VERSION_MAJOR) "." HK_STR(HAKMEM_VERSION_MINOR) "." HK_STR(HAKMEM_VERSION_PATCH)

HK_INLINE size_t hk_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* ==== Slow-path constants =================================================
 * The batch sizes, scan depths, epoch masks and thresholds of the slow paths
 * of the heap (heap.c, heap_slabs.c, refill.c), learner.c, superslab.c and
 * large.c, in this one place. Each
 * says why it is there, and which section of docs/BENCHMARKS.md measured its
 * value (docs/SECURITY.md for the secure build's), or "not measured".
 * Tunables a user may set are HAKMEM_* knobs (knobs.c), not these. */

/* -- thread heaps (heap.c, refill.c) -- */
/* Every 16th slow call takes the full path (delayed frees, purge clock), the rest the leaf (no other value tried): docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-65b4e5d-mallocs-slow-path */
#define HK_SLOW_FULL_EVERY 16
/* A swap to another slab needs this many freed blocks there (small classes), else the current one carves: docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-7997b4b-frees-slab-lookup-batch-sizes-carving */
#define HK_MIN_BATCH_SMALL 32u
/* ... or, when fewer blocks make them, this many bytes (small classes), for RSS: docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-7997b4b-frees-slab-lookup-batch-sizes-carving */
#define HK_MIN_BATCH_SMALL_BYTES 8192u
/* A swap to another slab needs this many freed blocks there (mid classes): docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-65b4e5d-mallocs-slow-path */
#define HK_MIN_BATCH_MID 8u
/* ... or, when fewer blocks make them, this many bytes (mid; 8 blocks alone cost memory at the largest mid sizes): docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-65b4e5d-mallocs-slow-path */
#define HK_MIN_BATCH_MID_BYTES 4096u
/* A refill of this many of its own freed blocks is kept, not switched for a richer slab (warm in cache): docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-7997b4b-frees-slab-lookup-batch-sizes-carving */
#define HK_RICH_ENOUGH 16
/* ... as is one of capacity >> this (an eighth of the slab; mid slabs hold 8 to 100 blocks): docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-7997b4b-frees-slab-lookup-batch-sizes-carving */
#define HK_RICH_SLAB_SHIFT 3
/* A slab's free pages are parked (HAKMEM_PARK_PAGES, slab_park.h) only this many at a time at least: each park is a madvise and each page a fault when it comes back: not measured */
#define HK_PARK_MIN_PAGES 2u
/* The park pass runs at every this many ticks of the purge clock: it reads every free block of the slabs it looks at, a cache miss each (a pass at every tick: docs/BENCHMARKS.md#parked-pages) */
#define HK_PARK_DELAYS 4u
/* ... and at every tick once the heap took this many fresh slabs since the last pass: a program moving to new sizes grows while the sizes it left hold free pages: docs/BENCHMARKS.md#the-partial-lists-in-order */
#define HK_PARK_FRESH 16u
/* With parked pages, a mid class is sparse when a heap's partial slabs of it number at least this many ... */
#define HK_SPARSE_SLABS 8u
/* ... and hold live blocks for under 1/this of their room: its cache stops (heap.h, hk_midc_note_sparse): docs/BENCHMARKS.md#the-partial-lists-in-order */
#define HK_SPARSE_SHARE 2u
/* ... for this long after the last look that found it so, ms */
#define HK_MIDC_SPARSE_MS 200u
/* How many partial slabs a swap looks at for freed blocks before carving: not measured */
#define HK_REUSE_SCAN 4
/* ... and with parked pages, the fullest of this many (fewer left sparse slabs undrained, more cost speed): docs/BENCHMARKS.md#the-fullest-slab-first */
#define HK_REUSE_SCAN_FULLEST 16
/* The stats hook (it reads the clock) runs every 32nd counted refill: not measured */
#define HK_STATS_TICK_EVERY 32
/* Guarded samples (guarded.c): the first this many at HAKMEM_GUARDED_RATE, then at most HAKMEM_GUARDED_PER_SEC a second. A sample and its free cost two system calls, a page fault and a TLB shootdown, so a program whose slow path hands out blocks fast (threads freeing each other's) is sampled by time, not by count: docs/SECURITY.md#sampled-guarded-allocations */
#define HK_GUARDED_BURST 32
/* Heap structs are mapped this many bytes at a time: not measured (handing them out one at a time was: docs/BENCHMARKS-history-2026-11-21.md#what-changed-since-7997b4b-frees-slab-lookup-batch-sizes-carving) */
#define HK_HEAP_CHUNK_BYTES (64 * 1024)
_Static_assert((HK_SLOW_FULL_EVERY & (HK_SLOW_FULL_EVERY - 1)) == 0 &&
               (HK_STATS_TICK_EVERY & (HK_STATS_TICK_EVERY - 1)) == 0,
               "used as masks (& (N - 1)): powers of two");

/* -- learner (learner.c) -- */
/* Waits, purge delays and a useless large cache move by this factor per step (doubled or halved): not measured */
#define HK_LEARN_STEP 2
/* Large allocations per judgement of the large cache's hit rate: not measured */
#define HK_LEARN_LARGE_WINDOW 128
/* Slow-path units a thread gathers before it touches the shared epoch counter: not measured */
#define HK_LEARN_TICK_BATCH 16
/* Epochs with no cache hit (superslabs) or no large allocation before that cache is purged: not measured */
#define HK_LEARN_IDLE_EPOCHS 2
/* A trim is judged over this many times the small-tier wait (refaulted sooner: wait longer): not measured */
#define HK_LEARN_TRIM_JUDGE 4
/* Epochs after a trim whose purges are the trim's own, not judged against the purge delay: not measured */
#define HK_LEARN_SHADOW_TRIM 1
/* Epochs after small traffic resumes whose refaults are the trim's, not the delay's: not measured */
#define HK_LEARN_SHADOW_RESUME 3
/* A cache growth is kept only if the hit rate rose by more than this: not measured */
#define HK_LEARN_MIN_GAIN 0.01
/* Windows without a cache change after a growth was backed off: not measured */
#define HK_LEARN_COOLDOWN 8
/* Below this hit rate, with no ghost hits, the large cache only holds memory (shrink it): not measured */
#define HK_LEARN_USELESS_HIT 0.1
/* The large cache grows by a quarter (count: at least the step knob; MiB: + 1): not measured */
#define HK_LEARN_GROW_DIV 4
/* Weight of the past in the purge and refault averages (halved every epoch): not measured */
#define HK_LEARN_DECAY 0.5
/* Epochs of purges with no refault before the purge delay is shortened: not measured */
#define HK_LEARN_QUIET_EPOCHS 4
/* A tier's purge window covers this share (per cent) of the reuse distances it saw: not measured */
#define HK_WINDOW_COVER 90
/* Pages taken again in an epoch before they move a window (2 MiB: fewer are noise, a few blocks): not measured */
#define HK_WINDOW_MIN_PAGES 512
/* A window halves only after it stood this many windows of time: not measured */
#define HK_WINDOW_HOLD 4
/* A learned window is at most this many times the knob's purge delay (and HAKMEM_CAP_MAX_PURGE_MS): not measured */
#define HK_WINDOW_MAX_FACTOR 8
/* The learner never shrinks the large cache below this many entries: not measured */
#define HK_LEARN_MIN_LARGE 2
/* ... nor below this many MiB: not measured */
#define HK_LEARN_MIN_LARGE_MB 4

/* -- purging (superslab.c, large.c) -- */
/* Caches are scanned every purge delay / this (+ 1 ms): a purge comes at most that late: not measured */
#define HK_COLLECT_DIV 2
/* A cached empty superslab is unmapped after this many purge delays: not measured */
#define HK_SS_UNMAP_DELAYS 8

/* -- large blocks (large.c) -- */
/* Sizes of recently evicted mappings remembered, to tell ghost hits (the learner grows the cache): not measured */
#define HK_LARGE_GHOSTS 64
/* A realloc shrinking a large block gives its tail back (a syscall) from this many bytes on: not measured */
#define HK_LARGE_SHRINK_MIN ((size_t)1 << 20)
/* Free resident span bytes may reach live span bytes / this (or the cache
 * cap, when more; lowmem: HK_SPAN_LOWMEM_DIV below): the cap alone, or a divisor of 2,
 * made a program replacing big zeroed buffers slower at the same peak RSS:
 * docs/history/src-comment-figures.md */
#define HK_SPAN_LIVE_DIV 1
/* lowmem: the free resident span bytes a free leaves are the live span
 * bytes / HK_SPAN_LOWMEM_DIV, at least HK_SPAN_LOWMEM_KEEP and at most the
 * cache cap. glibc unmaps a freed block of 128 KiB or more at once; a
 * fixed cap kept the last big blocks a program dropped, and a smaller
 * fixed one purged the blocks a program that churns big buffers reuses
 * next (a divisor of 8 did too): docs/BENCHMARKS.md, "Big blocks a program
 * drops" */
#define HK_SPAN_LOWMEM_DIV 4
#define HK_SPAN_LOWMEM_KEEP ((size_t)256 << 10)
/* The large tier counts as quiet (span_lend.c, hk_span_idle: superslabs may be
 * lent from it and shed its pages) after this many superslabs asked for in
 * a row with no big block carved between: 1 lent a program's pages while
 * its big blocks churned; 8 lowered the peak of a program whose big and
 * small phases take turns: docs/history/src-comment-figures.md */
#define HK_SPAN_QUIET_ASKS 8
/* calloc's fresh span pages up to this many bytes are faulted in at once
 * (MADV_POPULATE_WRITE): past it a block may be a sparse table that is
 * never all touched: not measured */
#define HK_SPAN_POPULATE_MAX ((size_t)16 << 20)
/* The memory budget reads the cgroup's limits at a process's first large
 * block (below), purge tick or stats call, or its slab after this many fresh ones
 * (2 MiB at most): not measured */
#define HK_MEM_UNREAD_SLABS 8
/* ... and its large blocks for this long after the first one (mem_limit.h,
 * hk_mem_limited_large): a 0.6 ms program paid a fifth of its time for the
 * read (docs/BENCHMARKS.md, "The limits' read put off"); 2 ms of faults
 * make a few MiB resident */
#define HK_MEM_UNREAD_NS ((uint64_t)2000000)
/* Huge or plain (span_thp.c): freed blocks of at least HK_THP_BIG bytes are
 * sampled for the share of their 2 MiB chunks the program touched; span
 * blocks go to arenas without huge pages once the samples' running mean
 * falls below HK_THP_PLAIN_PM per mille, and back to huge-page arenas above
 * HK_THP_HUGE_PM: not measured (thresholds) */
#define HK_THP_BIG ((size_t)2 << 20)
#define HK_THP_PLAIN_PM 500
#define HK_THP_HUGE_PM 600
/* Span shards (span_arena.c): at most this many (HAKMEM_SPAN_SHARDS' range
 * too), one per CPU the process may run on (many threads on big blocks
 * ran faster with 8 shards than with 2 or one lock):
 * docs/BENCHMARKS.md#thread-scaling */
#define HK_SPAN_SHARDS 8
/* A purge outside the shard locks takes at most this many runs off the lists at a time: not measured */
#define HK_SPAN_PURGE_BATCH 32
/* Marked page ranges closer than this many pages are purged (or checked) in one call: not measured */
#define HK_SPAN_PURGE_GAP 512
/* Secure build: room reserved past a block, times its size (four times in all; twice and eight times measured): docs/SECURITY.md#against-the-default-build-of-1c27930 */
#define HK_LARGE_RESERVE_TIMES 3
/* ... for blocks under this size; from it on the room is HK_LARGE_RESERVE_MAX: not measured */
#define HK_LARGE_RESERVE_BIG ((size_t)1 << 28)
/* ... at most 1 GiB of room (address space only): not measured */
#define HK_LARGE_RESERVE_MAX ((size_t)1 << 30)

#endif
