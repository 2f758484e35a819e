/* hakmem — a general-purpose memory allocator for Linux/x86-64.
 *
 * Linking libhakmem (or preloading libhakmem.so) replaces the whole malloc
 * family. This header adds hakmem's own entry points; they behave like the
 * standard functions of the same name and always use hakmem, whichever
 * malloc the process has. */
#ifndef HAKMEM_H
#define HAKMEM_H

#include <stddef.h>
#include <stdio.h>

#define HAKMEM_VERSION_MAJOR 0
#define HAKMEM_VERSION_MINOR 2
#define HAKMEM_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

void  *hak_malloc(size_t size);
void   hak_free(void *ptr);
void  *hak_calloc(size_t count, size_t size);
void  *hak_realloc(void *ptr, size_t size);
/* alignment: a power of two; otherwise NULL with errno = EINVAL. Alignments
 * up to 128 MiB are honoured; 256 MiB and above give NULL with
 * errno = ENOMEM. */
void  *hak_aligned_alloc(size_t alignment, size_t size);
/* Bytes usable at ptr (>= the size requested); 0 for NULL. */
size_t hak_usable_size(const void *ptr);

/* "MAJOR.MINOR.PATCH" */
const char *hak_version(void);

/* 1 when the process's malloc()/free() are hakmem's (preloaded or linked),
 * 0 when another allocator serves malloc and hakmem is only reachable
 * through the hak_* calls. */
int hak_is_active(void);

/* 1 when ptr is a live-or-cached block that hakmem handed out (cheap,
 * address arithmetic only). Meant for tests and diagnostics. */
int hak_owns(const void *ptr);

/* ---- statistics --------------------------------------------------------
 * Always available: live blocks, slabs, mapped bytes, OS calls, RSS.
 * Counted only with HAKMEM_STATS set (0 otherwise): allocs, frees, refills,
 * remote frees, peaks. Allocations are counted when a thread's fast path
 * receives a batch of blocks; for threads still running, blocks it holds
 * but has not handed out yet count as allocated. */
#define HAK_STATS_CLASSES 72
/* The tiers of purge_window_ms: the slabs of superslabs (small and mid
 * blocks), the span tier's free pages, the cache of freed mappings. */
enum { HAK_TIER_SLABS, HAK_TIER_SPAN, HAK_TIER_CACHE, HAK_STATS_TIERS };
/* The locks of lock_wait_count and lock_wait_ns: the superslab cache, the
 * abandoned superslabs, the list of every superslab, the span arenas'
 * shards (and the secure build's arena openings), the cache of freed mappings, the thread-heap registry, the mid
 * pools, the learner, the stats timeline; OTHER: the rest (first-class
 * heaps, the profiler, call stacks). New names are appended. */
enum { HAK_LOCK_OTHER, HAK_LOCK_SS_CACHE, HAK_LOCK_SS_ABANDONED, HAK_LOCK_SS_ALL, HAK_LOCK_SPAN,
       HAK_LOCK_LARGE_CACHE, HAK_LOCK_HEAPS, HAK_LOCK_MID_POOL, HAK_LOCK_LEARNER, HAK_LOCK_STATS,
       HAK_STATS_LOCKS };

struct hak_class_stats {
  size_t block_size;
  size_t allocs, frees;          /* cumulative                        */
  size_t live_blocks, live_bytes;
  size_t peak_blocks, peak_bytes; /* sampled                           */
  size_t slabs;                   /* slabs of this class in use        */
  size_t refills;                 /* fast-path misses                  */
  size_t remote_frees;            /* frees received from other threads */
};

struct hak_stats {
  int    counting;                /* HAKMEM_STATS is on                */
  size_t live_bytes, peak_live_bytes;
  size_t mapped_bytes, peak_mapped_bytes; /* address space, reserved included:
                                   not memory (rss_bytes is; docs/OBSERVABILITY.md) */
  size_t rss_bytes, peak_rss_bytes;
  size_t superslabs, superslabs_cached, superslabs_abandoned;
  size_t large_live, large_live_bytes, large_cached_bytes;
  size_t large_allocs, large_frees;
  size_t heaps;                   /* live thread heaps                 */
  unsigned long mmap_calls, munmap_calls, madvise_calls, mremap_calls;
  size_t mmap_bytes, munmap_bytes, madvise_bytes;
  size_t allocs, frees;           /* all tiers                         */
  double fast_path_hit_rate;      /* 1 - refills / small allocs        */
  struct hak_class_stats classes[HAK_STATS_CLASSES];
  /* ---- since 0.2: filled by hak_stats_read only (see below) ---- */
  int    profile;                 /* HAKMEM_PROFILE: 0 fast, 1 balanced, 2 lowmem */
  /* ---- since 0.2 too: the page layer (docs/OBSERVABILITY.md, "Pages") ---- */
  int    thp;                     /* regions given huge pages: 0 none, 1 span arenas, 2 superslabs too */
  size_t huge_bytes;              /* backed by huge pages (smaps_rollup AnonHugePages) */
  unsigned long populate_calls;   /* calloc's fresh pages faulted in at once */
  size_t populate_bytes;
  unsigned long lock_waits;       /* global locks found taken */
  unsigned long lock_yields;      /* sched_yield calls of those waits */
  /* ---- since 0.2 too: the memory budget (docs/OBSERVABILITY.md, "Memory budget") ---- */
  size_t mem_limit;               /* the hard limit in force, bytes; 0: none */
  size_t mem_limit_soft;          /* the soft limit; 0: three quarters of mem_limit */
  int    mem_limit_source;        /* 0 none, 1 HAKMEM_MEMORY_LIMIT, 2 cgroup v2, 3 cgroup v1 */
  int    mem_pressure;            /* 0 none, 1 soft, 2 hard */
  size_t mem_resident;            /* hakmem's estimate of the resident set */
  size_t mem_headroom;            /* mem_limit - mem_resident (0: past it, or no limit) */
  unsigned long mem_over;         /* growth past the hard limit after everything was purged */
  unsigned long mem_refused;      /* of them, refused with ENOMEM (HAKMEM_MEMORY_LIMIT_ACTION=fail) */
  unsigned long mem_reliefs;      /* purges forced by the hard limit */
  /* ---- unreleased (the next minor): huge or plain (docs/OBSERVABILITY.md, "Pages") ---- */
  size_t thp_plain_blocks;        /* big blocks placed where no huge page backs them */
  size_t thp_samples;             /* freed big blocks asked which 2 MiB chunks they touched */
  int    thp_density;             /* per mille of those chunks touched (running mean) */
  /* ---- unreleased too: guard pages (docs/OBSERVABILITY.md, "OS calls") ---- */
  unsigned long mprotect_calls;   /* guard pages closed or opened by mprotect */
  unsigned long guard_calls;      /* guard markers put or taken (MADV_GUARD_INSTALL/REMOVE) */
  /* ---- unreleased too: the unified backend (docs/OBSERVABILITY.md, "Pages") ---- */
  size_t superslabs_lent;         /* of `superslabs`, chunks lent by span arenas */
  /* ---- unreleased too: span shards (docs/OBSERVABILITY.md, "Pages") ---- */
  int    span_shards;             /* span arena shards in use, each with its lock */
  /* ---- unreleased too: jemalloc's figures (docs/OBSERVABILITY.md, "Memory figures") ----
   * allocated <= active <= resident <= mapped_bytes; retained = mapped_bytes - resident.
   * Fragmentation: 1 - allocated / active (the report prints it). */
  size_t allocated;               /* bytes of live blocks (their usable sizes: live_bytes) */
  size_t active;                  /* pages of slabs in use and live large blocks */
  size_t metadata;                /* hakmem's own bookkeeping: superslab headers,
                                     thread heaps, the span arenas' page maps (their
                                     resident pages) */
  size_t resident;                /* hakmem's memory that may be resident: superslabs
                                     and large pages, less what was given back
                                     (an upper bound, at most rss_bytes) */
  size_t retained;                /* mapped, not resident: address space kept for reuse */
  /* ---- unreleased too: purge windows, lock waits per lock (docs/OBSERVABILITY.md,
   * "Purge windows and lock waits") ---- */
  long   purge_window_ms[HAK_STATS_TIERS];  /* the purge delay in force per tier
                                     (HAK_TIER_*): learned from reuse
                                     (HAKMEM_LEARN_PURGE), or the knob's */
  unsigned long lock_wait_count[HAK_STATS_LOCKS];  /* per lock (HAK_LOCK_*): acquisitions
                                     that found it taken */
  unsigned long lock_wait_ns[HAK_STATS_LOCKS];     /* the time those waits took, ns */
};

/* The ABI rule of struct hak_stats: fields are only ever appended at its
 * end, never inserted, removed or retyped. A program compiled against an
 * older hakmem.h passes its own sizeof and gets exactly that many bytes;
 * one compiled against a newer header gets the fields this library knows
 * and zeros after them.
 *
 * hak_stats_read: fill the first size bytes of *out (size: the caller's
 * sizeof(struct hak_stats)). Returns how many bytes this library filled
 * (min(size, its own struct size)); 0 if out is NULL or size is 0. */
size_t hak_stats_read(struct hak_stats *out, size_t size);
/* The 0.1 call, kept for the programs built with it: fills the struct as
 * 0.1.0 defined it (everything before `profile`) and returns 0, or -1 if
 * out is NULL. New code calls hak_stats_read(out, sizeof *out). */
int  hak_stats_get(struct hak_stats *out);
/* Human-readable report (the HAKMEM_STATS=1 exit report). */
void hak_stats_print(FILE *out);

/* Heap profiling (HAKMEM_PROF=1, docs/PROFILING.md): write the heap profile
 * so far (google-pprof's heap format) to path. 0, or -1 with errno (EINVAL:
 * profiling is off). */
int  hak_prof_dump(const char *path);
/* ---- first-class heaps (since 0.2) ---------------------------------------
 * A heap the program creates, allocates from by name, and destroys with
 * every block still in it at once (the arena pattern). Its blocks are
 * ordinary blocks: free() them from any thread, usable_size, hak_owns.
 * Any thread may call hak_heap_* on any heap: each call takes the heap's
 * lock (uncontended: one atomic pair). A NULL heap is the calling thread's
 * ordinary malloc. realloc() of a heap block: the result stays in the heap
 * only if it did not move; hak_heap_realloc keeps it there.
 * hak_heap_destroy(h): every block of h still live is freed; no free or
 * call on h may race with it. Freeing a block of a destroyed heap is
 * reported as an invalid free while its memory is not reused; once reused
 * it frees whatever block lies there now (docs/hakmem.1, HEAPS). */
typedef struct hak_heap hak_heap_t;
struct hak_heap_stats {
  size_t blocks;   /* live blocks of the heap */
  size_t bytes;    /* their usable bytes      */
};
hak_heap_t *hak_heap_new(void);                     /* NULL, errno ENOMEM */
void  hak_heap_destroy(hak_heap_t *heap);
void *hak_heap_malloc(hak_heap_t *heap, size_t size);
void *hak_heap_calloc(hak_heap_t *heap, size_t count, size_t size);
void *hak_heap_realloc(hak_heap_t *heap, void *ptr, size_t size);
void *hak_heap_aligned_alloc(hak_heap_t *heap, size_t alignment, size_t size);
int   hak_heap_stats(hak_heap_t *heap, struct hak_heap_stats *out);  /* 0, or -1 EINVAL */

/* ---- control ------------------------------------------------------------
 * name: a knob of docs/ENV_VARS.md, with or without its "HAKMEM_" prefix.
 * Each returns 0, or -1 with errno: EINVAL (NULL, a string knob, an
 * unknown action), ENOENT (no such knob), EPERM (read only at start-up),
 * ERANGE (outside the knob's range).
 *
 * hak_ctl_get: the value in force (the purge delay and large-cache caps as
 *   the learner or hak_ctl_set left them; HAKMEM_BACKGROUND_PURGE: 1 while
 *   the purge thread runs).
 * hak_ctl_set: settable at run time: PURGE_DELAY_MS, SS_CACHE,
 *   LARGE_CACHE_MB, LARGE_CACHE_COUNT, HEAP_SPARE, STATS (0, 1, 2 = json),
 *   LEARN, LEARN_LOG, ABORT_ON_INVALID. A cap set here (purge delay, large
 *   cache caps) is pinned: the learner no longer moves it.
 * hak_ctl: "purge"  give back every unused page now (this thread's heap,
 *                   the caches, abandoned memory; with
 *                   HAKMEM_BACKGROUND_PURGE=1 also other threads' emptied
 *                   slabs, when their owners are blocked in a system call);
 *          "flush"  give back what this thread's heap keeps unused;
 *          "stats"  print the statistics report on stderr. */
int hak_ctl_get(const char *name, long *value);
int hak_ctl_set(const char *name, long value);
int hak_ctl(const char *action);

#ifdef __cplusplus
}
#endif

#endif /* HAKMEM_H */
