/* Slab descriptors: the 128 bytes of metadata of one slab (its lists'
 * heads, owner, counts, the constants of its block arithmetic), the states
 * a slab goes through, and the arithmetic that tells whether an address is
 * one of its blocks. A superslab's header holds one descriptor per slab
 * (superslab.h); the slab layer (slab.h) works its lists; the free lists'
 * links are freelist.h's. Data and arithmetic only: no function here
 * calls another layer. */
#ifndef HK_SLAB_DESC_H
#define HK_SLAB_DESC_H

#include <stdatomic.h>
#include "base/config.h"
#include "base/measures.h"
#include "base/track.h"

struct hk_block;  /* a free block (freelist.h) */

/* Where a slab is, seen from its owner heap. */
enum { HK_SLAB_UNUSED = 0, HK_SLAB_CUR, HK_SLAB_PARTIAL, HK_SLAB_FULL };
/* A full slab's owner field is its owner's id with this bit set: the free
 * fast path compares the field with the caller's id, so a free into a full
 * slab, which must bring the slab back to its heap, takes the slow path
 * without a state test on the fast one. Thread ids are aligned. */
#define HK_OWNER_FULL ((uintptr_t)1)
/* A first-class heap's id (heap_api.c) carries this bit: no thread's id
 * (a thread control block's address) has it. Its blocks never go onto
 * another thread's mid cache, since its destroy gives their slabs back
 * whatever the caches hold. */
#define HK_OWNER_API ((uintptr_t)2)
/* The owner's frees into this slab go out of line, onto local_free rather
 * than onto the free list malloc pops (slab.h, hk_slab_push_local): the
 * heap profiler sets it on the current slab it has cut a list in
 * (prof.c), so that the blocks malloc's fast path hands out are the ones
 * it counted. Any change of state clears it. */
#define HK_OWNER_ASIDE ((uintptr_t)4)
/* The purge thread holds this partial slab of a stopped owner (bg.c,
 * park_idle): with the bit set the field matches no thread, the owner's
 * included (hk_slab_owner keeps it), so every free into the slab goes to
 * its remote list, and the purge thread alone writes its lists until it
 * clears the bit. Thread ids (thread control blocks) are 64-byte aligned. */
#define HK_OWNER_HELD ((uintptr_t)8)

/* Low bits of hk_slab.xfree (the remote-free list head): whether the owner
 * wants to hear about the next remote free (the slab is full). */
enum { HK_XF_NORMAL = 0, HK_XF_NOTIFY = 1, HK_XF_NOTIFYING = 2, HK_XF_MASK = 3 };

typedef struct hk_slab {
  /* line 0: touched by the owner only (others read it) */
  struct hk_block *free;    /* malloc pops here; owner's frees push  */
  struct hk_block *local_free; /* set aside: collected remote frees, */
                            /* delayed reuse's frees, profiled slabs */
  uintptr_t owner;          /* owner's id (| HK_OWNER_FULL); 0: none */
  uint16_t used;            /* blocks out (incl. uncollected remote, parked) */
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
  uint16_t nparked;         /* owner: blocks of parked pages (slab_park.h) */
  uint32_t block_size;
  uint8_t *start;
  struct hk_slab *next, *prev;  /* heap's partial list               */
  struct hk_block *aged;    /* owner: freed before the last refill   */
  uint64_t parked;          /* owner: bit i, the slab's page i is purged */
  uint16_t park_free;       /* owner: free blocks when last parked or looked at */
  uint8_t park_recent;      /* owner: current since the last park pass */
#else
  uint64_t lim;             /* carved * (block_size * div_m mod 2^64) */
  uint32_t block_size;
  uint32_t avail;           /* block_size (no trailer)               */
  /* line 1: written by other threads */
  _Atomic uintptr_t xfree __attribute__((aligned(HK_CACHE_LINE)));
  uint16_t capacity;        /* blocks in the slab                    */
  uint16_t nparked;         /* owner: blocks of parked pages (slab_park.h) */
  uint16_t park_free;       /* owner: free blocks when last parked or looked at */
  uint8_t park_recent;      /* owner: current since the last park pass */
  uint8_t *start;
  struct hk_slab *next, *prev;  /* heap's partial list               */
  uintptr_t key;            /* unused without keys or canary         */
  struct hk_block *aged;    /* delayed reuse (off: always NULL)      */
  uint64_t parked;          /* owner: bit i, the slab's page i is purged */
#endif
} __attribute__((aligned(HK_CACHE_LINE))) hk_slab_t;

_Static_assert(sizeof(hk_slab_t) == 128, "slab descriptor is two cache lines");
_Static_assert(!HK_SLAB_KEYED || __builtin_offsetof(hk_slab_t, key) == 56,
               "tests/security/forged_link_metadata.c");

/* the id of s's owner thread (0: none), full or not */
HK_INLINE uintptr_t hk_slab_owner(const hk_slab_t *s) {
  return HK_LOAD_RELAXED(s->owner) & ~(HK_OWNER_FULL | HK_OWNER_ASIDE);
}

/* The blocks of s the program holds: `used` less the blocks of parked
 * pages, which count as out but are free (slab_park.h). For readers other
 * than the owner (the stats, a first-class heap's count): racy, and held
 * at 0 should a pass change the two between the loads. */
HK_INLINE unsigned hk_slab_live(const hk_slab_t *s) {
  unsigned used = HK_LOAD_RELAXED(s->used), parked = HK_LOAD_RELAXED(s->nparked);
  return used > parked ? used - parked : 0;
}

/* The freed blocks s's owner can take: those carved and not out, and
 * those of parked pages, which come back a batch at a time (slab_park.h).
 * For the owner, or the purge thread holding the heap's bg_lock (the idle
 * park: bg.c), which alone write the three; others read hk_slab_live. */
HK_INLINE unsigned hk_slab_room(const hk_slab_t *s) {
  return (unsigned)(s->carved - s->used + s->nparked);
}

/* The owner's frees into s go aside from now on (HK_OWNER_ASIDE); the
 * caller is s's owner, and a change of state clears it */
HK_INLINE void hk_slab_set_aside(hk_slab_t *s) {
  HK_STORE_RELAXED(s->owner, HK_LOAD_RELAXED(s->owner) | HK_OWNER_ASIDE);
}

/* Is p the start of one of the `carved` blocks of s? One multiply and one
 * compare: with M = floor(2^64 / d) + 1 and e = d * M - 2^64 (1 <= e <= d),
 * an offset n = q * d + r from the slab's start gives n * M = q * e + r * M
 * (mod 2^64): below carved * e exactly when r = 0 and q < carved, for
 * |n| < 2^21 (a slab's span; test_size_class checks every offset). So
 * interior, misaligned and out-of-slab pointers fail, and blocks never
 * carved (never handed out) too. The owner raises `lim` with `carved`;
 * another thread reads it only for a block it was handed, so it sees at
 * least that block's carve. */
HK_INLINE uint64_t hk_slab_div_m(uint32_t d) {
  return UINT64_MAX / d + 1 + ((d & (d - 1)) == 0);  /* floor(2^64 / d) + 1 */
}
HK_INLINE uint64_t hk_slab_offset_m(const hk_slab_t *s, const void *p) {
  return (uint64_t)(uintptr_t)p * s->div_m - s->start_m;
}
HK_INLINE bool hk_slab_is_block(const hk_slab_t *s, const void *p) {
  return hk_slab_offset_m(s, p) < HK_LOAD_RACY(s->lim);
}
/* ... of any block of s, carved or not */
HK_INLINE bool hk_slab_is_slot(const hk_slab_t *s, const void *p) {
  return hk_slab_offset_m(s, p) < (uint64_t)s->capacity * (s->block_size * s->div_m);
}
/* The slot of s holding address p (any byte of it): its index, or at
 * least s->capacity when p is before or past s's blocks (measure copy).
 * The same multiply: with n the offset from the slab's start,
 * floor(n * M / 2^64) is floor(n / d) for n < 2^21, and no less than
 * floor(n / d) >= 2^21 / d >= capacity beyond (a negative offset is a huge
 * one). */
HK_INLINE size_t hk_slab_slot_of(const hk_slab_t *s, const void *p) {
  uint64_t n = (uint64_t)(uintptr_t)p - (uint64_t)(uintptr_t)HK_UNHIDE(s->start);
  return (size_t)(((unsigned __int128)n * s->div_m) >> 64);
}
/* The owner carved blocks: free accepts the first n */
HK_INLINE void hk_slab_set_carved(hk_slab_t *s, unsigned n) {
  HK_STORE_RELAXED(s->carved, (uint16_t)n);
  HK_STORE_RELAXED(s->lim, n * (s->block_size * s->div_m));
}

#endif
