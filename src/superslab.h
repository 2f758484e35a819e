/* Superslab layer: 2 MiB-aligned regions from the OS, each holding a header
 * (this struct, with one descriptor per slab) followed by equal-sized slabs.
 * Any block address finds its slab by masking and shifting.
 *
 *   small superslab: 32 slabs of 64 KiB  (classes <= 1 KiB)
 *   mid   superslab:  8 slabs of 256 KiB (classes <= 32 KiB)
 *
 * Slab 0 starts after the 8 KiB header. A superslab belongs to one thread
 * heap at a time; when that thread exits it is abandoned and the next heap
 * that needs memory adopts it. Empty superslabs go to a small global cache
 * and are purged after a delay. */
#ifndef HK_SUPERSLAB_H
#define HK_SUPERSLAB_H

#include <stdatomic.h>
#include "config.h"
#include "knobs.h"
#include "measures.h"

/* A free block's first word: the link to the next free block, encoded
 * (see hk_block_next in freelist.h). */
typedef struct hk_block { uintptr_t enc; } hk_block_t;

enum { HK_SS_KIND_SMALL = 0, HK_SS_KIND_MID = 1, HK_SS_NKINDS = 2 };

#define HK_SS_MAX_SLABS 32
/* descriptors, then (guard pages) a PROT_NONE page, then the slabs */
#define HK_SS_META_SIZE ((size_t)8192)
#define HK_SS_GUARD_SIZE ((size_t)(HK_M_GUARD ? 4096 : 0))
#define HK_SS_HDR_SIZE  (HK_SS_META_SIZE + HK_SS_GUARD_SIZE)

/* Where a slab is, seen from its owner heap. */
enum { HK_SLAB_UNUSED = 0, HK_SLAB_CUR, HK_SLAB_PARTIAL, HK_SLAB_FULL };
/* A full slab's owner field is its owner's id with this bit set: the free
 * fast path compares the field with the caller's id, so a free into a full
 * slab, which must bring the slab back to its heap, takes the slow path
 * without a state test on the fast one. Thread ids are aligned. */
#define HK_OWNER_FULL ((uintptr_t)1)

/* Low bits of hk_slab.xfree (the remote-free list head): whether the owner
 * wants to hear about the next remote free (the slab is full). */
enum { HK_XF_NORMAL = 0, HK_XF_NOTIFY = 1, HK_XF_NOTIFYING = 2, HK_XF_MASK = 3 };

typedef struct hk_slab {
  /* line 0: touched by the owner only (others read it) */
  hk_block_t *free;         /* malloc pops here                      */
  hk_block_t *local_free;   /* owner's frees land here               */
  uintptr_t owner;          /* owner's id (| HK_OWNER_FULL); 0: none */
  uint16_t used;            /* blocks out (incl. uncollected remote) */
  uint16_t carved;          /* blocks carved so far (lazy init)      */
  uint8_t state;            /* HK_SLAB_*                             */
  uint8_t cls;
  uint8_t index;            /* in its superslab                      */
  uint8_t batch_kb;         /* owner: KiB the next carve takes       */
  /* free's block check, one multiply and one compare (hk_slab_is_block):
   * p * div_m - start_m < lim exactly when p is the start of one of the
   * first `carved` blocks */
  uint64_t div_m;           /* floor(2^64 / block_size) + 1          */
  uint64_t start_m;         /* start * div_m (mod 2^64)              */
#if HK_SLAB_KEYED
  /* keys or canary: what every malloc and free reads stays on line 0 (line
   * 1 is written by other threads' frees) */
  uint32_t lim;             /* carved * (block_size * div_m mod 2^64) */
  uint32_t avail;           /* block_size - HK_PAD: the trailer word */
  uintptr_t key;            /* this slab's link and canary key       */
  /* line 1: written by other threads */
  _Atomic uintptr_t xfree __attribute__((aligned(HK_CACHE_LINE)));
  uint16_t capacity;        /* blocks in the slab                    */
  uint32_t block_size;
  uint8_t *start;
  struct hk_slab *next, *prev;  /* heap's partial list               */
  hk_block_t *aged;         /* owner: freed before the last refill   */
#else
  uint64_t lim;             /* carved * (block_size * div_m mod 2^64) */
  uint32_t block_size;
  uint32_t avail;           /* block_size (no trailer)               */
  /* line 1: written by other threads */
  _Atomic uintptr_t xfree __attribute__((aligned(HK_CACHE_LINE)));
  uint16_t capacity;        /* blocks in the slab                    */
  uint8_t *start;
  struct hk_slab *next, *prev;  /* heap's partial list               */
  uintptr_t key;            /* unused without keys or canary         */
  hk_block_t *aged;         /* delayed reuse (off: always NULL)      */
#endif
} __attribute__((aligned(HK_CACHE_LINE))) hk_slab_t;

struct hk_heap;

typedef struct hk_superslab {
  /* first, so that &slabs[i] is the superslab address plus i * 128 */
  hk_slab_t slabs[HK_SS_MAX_SLABS];
  uint8_t kind, slab_shift, nslabs, list;  /* list: which list it is on   */
  uint32_t free_mask;       /* bit i: slab i unused                        */
  uint32_t dirty_new, dirty_old;  /* unused slabs not yet purged (2 epochs) */
  uint32_t purged_mask;     /* unused slabs purged since (refault count)   */
  uint32_t nused;           /* slabs in use                                */
  bool purged;              /* whole superslab purged while cached         */
  bool forked;              /* its heap vanished in fork(): the adopter
                               rebuilds its slabs (hk_slab_rebuild)       */
  _Atomic(struct hk_heap *) heap;  /* owner; NULL when abandoned/cached    */
  struct hk_superslab *next, *prev;
  struct hk_superslab *all_next, *all_prev;  /* every mapped superslab */
  uint64_t stamp_ms;        /* when it entered the cache                   */
} hk_superslab_t;

_Static_assert(sizeof(hk_slab_t) == 128, "slab descriptor is two cache lines");
_Static_assert(sizeof(hk_superslab_t) <= HK_SS_META_SIZE, "header fits");
_Static_assert(!HK_SLAB_KEYED || __builtin_offsetof(hk_slab_t, key) == 56,
               "tests/security/forged_link_metadata.c");

/* the id of s's owner thread (0: none), full or not */
HK_INLINE uintptr_t hk_slab_owner(const hk_slab_t *s) {
  return HK_LOAD_RELAXED(s->owner) & ~HK_OWNER_FULL;
}

HK_INLINE hk_superslab_t *hk_ss_of(const void *p) {
  return (hk_superslab_t *)((uintptr_t)p & ~(uintptr_t)HK_SS_MASK);
}
HK_INLINE hk_slab_t *hk_slab_of(hk_superslab_t *ss, const void *p) {
  return &ss->slabs[((uintptr_t)p & HK_SS_MASK) >> ss->slab_shift];
}
HK_INLINE hk_superslab_t *hk_slab_ss(hk_slab_t *s) { return hk_ss_of(s); }
/* Slab of p given its slab shift (from the chunk map): no header read. */
HK_INLINE hk_slab_t *hk_slab_at(const void *p, unsigned shift) {
  return &hk_ss_of(p)->slabs[((uintptr_t)p & HK_SS_MASK) >> shift];
}

HK_INLINE unsigned hk_kind_of_class(unsigned cls) {
  return cls < HK_NCLASS_SMALL ? HK_SS_KIND_SMALL : HK_SS_KIND_MID;
}
HK_INLINE size_t hk_ss_slab_bytes(const hk_superslab_t *ss) { return (size_t)1 << ss->slab_shift; }
HK_INLINE uint8_t *hk_ss_slab_area(hk_superslab_t *ss, unsigned idx) {
  return (uint8_t *)ss + ((size_t)idx << ss->slab_shift) + (idx == 0 ? HK_SS_HDR_SIZE : 0);
}
/* guard: the last page of the last slab is the superslab's end guard */
HK_INLINE size_t hk_ss_slab_area_bytes(const hk_superslab_t *ss, unsigned idx) {
  return hk_ss_slab_bytes(ss) - (idx == 0 ? HK_SS_HDR_SIZE : 0) - (idx + 1u == ss->nslabs ? HK_SS_GUARD_SIZE : 0);
}

/* Doubly-linked superslab lists (owner-local or under a global lock). */
typedef struct { hk_superslab_t *head; size_t count; } hk_ss_list_t;
void hk_ss_list_push(hk_ss_list_t *l, hk_superslab_t *ss, uint8_t id);
void hk_ss_list_remove(hk_ss_list_t *l, hk_superslab_t *ss);

/* A superslab of this kind with every slab unused: from the cache or the OS.
 * Not owned by anyone yet. NULL when the OS refuses. */
hk_superslab_t *hk_ss_acquire(unsigned kind);
/* Give back an empty superslab (all slabs unused); it is cached, purged
 * after the purge delay and unmapped when the cache is over its cap. */
void hk_ss_release(hk_superslab_t *ss);
/* Hand over a superslab whose owner thread is gone. */
void hk_ss_abandon(hk_superslab_t *ss);
/* Take an abandoned superslab of this kind, or NULL. */
hk_superslab_t *hk_ss_take_abandoned(unsigned kind);
/* Purge/unmap cached superslabs idle past the delay (force: all now).
 * Returns bytes given back. Cheap when nothing is due. */
size_t hk_ss_collect(bool force);
/* Purge the unused slabs of ss that were unused for a whole epoch. */
size_t hk_ss_purge_unused(hk_superslab_t *ss, bool force);
/* The unused slabs of abandoned superslabs (all when force). Bytes. */
size_t hk_ss_purge_abandoned(bool force);

#ifdef HK_DEBUG
/* Debug build: the global lists (every mapped superslab, the cache, the
 * abandoned lists) are sound: links both ways, counts, list ids, owners.
 * Asserts. */
void hk_ss_check_lists(void);
/* The same for one heap's superslab list, and each superslab on it. */
void hk_ss_check_owned(const hk_ss_list_t *l, uint8_t id, unsigned kind, const struct hk_heap *h);
#endif

/* How long unused memory is kept before it is purged: HAKMEM_PURGE_DELAY_MS
 * until the learner sets another value (the heap's purge clock reads it too). */
long hk_ss_purge_delay_ms(void);
void hk_ss_set_purge_delay_ms(long ms);   /* the learner's: not over a pin */
void hk_ss_pin_purge_delay_ms(long ms);   /* the control API's: pinned */

/* Events the learner reads, counted only while HAKMEM_LEARN is on:
 * superslabs taken from the cache or mapped fresh, purges, and purged
 * memory used again (a refault; the heap notes its slabs' own). */
enum { HK_SS_CACHE_HITS, HK_SS_OS_MAPS, HK_SS_PURGES, HK_SS_REFAULTS, HK_SS_NEVENTS };
extern _Atomic unsigned long hk_ss_events[HK_SS_NEVENTS];
HK_INLINE void hk_ss_note(unsigned ev) {
  if (HK_UNLIKELY(HK_LOAD_RELAXED(hk_knobs.learn))) atomic_fetch_add_explicit(&hk_ss_events[ev], 1, memory_order_relaxed);
}
/* The counts since the last call; zeroes them. */
void hk_ss_take_events(unsigned long out[HK_SS_NEVENTS]);

/* Live blocks and slabs in use per class, over every mapped superslab
 * (racy reads of other threads' counts: a snapshot). */
void hk_ss_census(uint64_t live[HK_NCLASS], uint64_t slabs[HK_NCLASS]);

size_t hk_ss_count_mapped(void);
size_t hk_ss_cached_unpurged_bytes(void);
size_t hk_ss_count_cached(void);
size_t hk_ss_count_abandoned(void);

/* Fork child: superslabs owned by heaps other than `self` belong to threads
 * that do not exist here; make them ownerless and adoptable. */
void hk_ss_orphan_foreign(struct hk_heap *self);

void hk_ss_fork_prepare(void);
void hk_ss_fork_parent(void);
void hk_ss_fork_child(void);

#endif
