/* Heap profiling by call site (HAKMEM_PROF=1, docs/PROFILING.md).
 * Allocations are sampled by bytes; a sampled small or mid block is served
 * from a slot in a chunk of the profiler's, whose chunk-map kind
 * (HK_CHUNK_PROF) free already reads, so no fast path changes; a sampled large block stays in
 * the large tier, whose free asks for its address. Only slow paths call in
 * here: the heap's refill (which also trims the free list it hands the fast
 * path so that it runs dry exactly where the next sample falls: refill.c) and
 * the large tier. */
#ifndef HK_PROF_H
#define HK_PROF_H

#include "base/config.h"
#include "base/measures.h"
#include "backend/superslab.h"
#include "base/track.h"

/* Profiling needs blocks without a trailer and untracked by memcheck: the
 * builds with the canary (and what needs it), guard, or valgrind ignore it.
 * HK_NO_PROF compiles the hooks out: `tests/system/prof.sh BUILD fastpath` (ctest
 * prof/fastpath) compares malloc and free with and without them. */
#if defined(HK_NO_PROF) || HK_M_CANARY || HK_M_GUARD || HK_TRACKING
#define HK_PROF_BUILD 0
#else
#define HK_PROF_BUILD 1
#endif

extern int hk_prof_on HK_HIDDEN;  /* set once by hk_prof_init; slow paths test it */

void hk_prof_init(void);          /* reads the knobs (after hk_knobs_init) */
/* heap slow path, class cls: the block to hand out when this allocation is
 * sampled (served from a profiled mapping), NULL otherwise */
void *hk_prof_small(unsigned cls);
/* after the slow path handed out one block of class cls: the bytes the
 * fast path may hand out before the next sample of the class, and then
 * the bytes its list holds (the slab's sample point, freelist.h) */
uint64_t hk_prof_left(unsigned cls);
void hk_prof_consume(unsigned cls, uint64_t bytes);
/* the large tier: p (size bytes) was just allocated; maybe sampled */
void  hk_prof_large(void *p, size_t size);
/* the large tier: p is being freed or moved; its sample, if any, goes */
void  hk_prof_forget(const void *p);

/* blocks of chunk kind HK_CHUNK_PROF */
bool   hk_prof_free(const char *what, void *p);  /* false: reported */
size_t hk_prof_usable(const void *p);            /* 0: not a live block */
/* sampled blocks live and the bytes their slots take (mallinfo) */
void   hk_prof_live(size_t *blocks, size_t *mapped);
/* purge the free slots' pages (malloc_trim); the bytes purged */
size_t hk_prof_trim(void);

/* The profile so far, now, named as the interval dumps are (FILE.NNNN.heap);
 * nothing with profiling off. From a thread not inside malloc. */
void hk_prof_dump_next(void);
void hk_prof_at_exit(void);
void hk_prof_fork_prepare(void);
void hk_prof_fork_parent(void);
void hk_prof_fork_child(void);

#endif
