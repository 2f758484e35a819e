/* Superslab layer: 2 MiB-aligned regions from the OS, each holding a header
 * (this struct, with one descriptor per slab) followed by equal-sized slabs.
 * Any block address finds its slab by masking and shifting.
 *
 *   small superslab: 32 slabs of 64 KiB  (classes <= 1 KiB)
 *   mid   superslab:  8 slabs of 256 KiB (classes <= 32 KiB)
 *   (measure guard: small ones hold 16, in their first MiB: HK_SS_HALF_GUARD)
 *
 * Slab 0 starts after the 8 KiB header. A superslab belongs to one thread
 * heap at a time; when that thread exits it is abandoned and the next heap
 * that needs memory adopts it. Empty superslabs go to a small global cache
 * and are purged after a delay. */
#ifndef HK_SUPERSLAB_H
#define HK_SUPERSLAB_H

#include <stdatomic.h>
#include <stddef.h>
#include "base/config.h"
#include "base/knobs.h"
#include "base/measures.h"
#include "base/reuse.h"
#include "backend/slab_desc.h"

enum { HK_SS_KIND_SMALL = 0, HK_SS_KIND_MID = 1, HK_SS_NKINDS = 2 };

#define HK_SS_MAX_SLABS 32
#define HK_SS_BUNDLED_MAX 64  /* abandoned superslabs a kind may hold before
                                 an exited heap's empty ones go to the cache */
/* descriptors, then (guard pages) a PROT_NONE page, then the slabs */
#define HK_SS_META_SIZE ((size_t)8192)
#define HK_SS_GUARD_SIZE ((size_t)(HK_M_GUARD ? 4096 : 0))
#define HK_SS_HDR_SIZE  (HK_SS_META_SIZE + HK_SS_GUARD_SIZE)
/* guard: a small superslab's slabs fill its first MiB and the second is
 * PROT_NONE, so a stray write 1 MiB past any small block (a wrong stride,
 * an index gone bad), or a contiguous overflow that leaves the slabs,
 * faults there: address space, no memory. Not for mid superslabs: half of
 * their 256 KiB slabs a superslab cost mid-size loops too much speed
 * (issue 42); they keep one guard page at the end. */
#define HK_SS_HALF_GUARD(kind) (HK_M_GUARD && (kind) == HK_SS_KIND_SMALL)
#define HK_SS_HALF (HK_SS_SIZE / 2)

struct hk_heap;

typedef struct hk_superslab {
  uint8_t kind, slab_shift, nslabs, list;  /* list: which list it is on   */
  uint32_t free_mask;       /* bit i: slab i unused                        */
  uint32_t dirty_new, dirty_old;  /* unused slabs not yet purged (2 epochs) */
  uint32_t purged_mask;     /* unused slabs purged since (refault count)   */
  uint32_t warm;            /* slabs used and not purged since: their pages
                               are resident (hk_heap_fresh_slab)           */
  uint64_t warm_cls[2];     /* cached: the classes its warm slabs served;
                               abandoned: also those it holds blocks of   */
  uint16_t touched[HK_SS_MAX_SLABS];  /* warm slab i: pages from its start
                               carved since it turned warm (resident)      */
  uint32_t nused;           /* slabs in use                                */
  bool purged;              /* whole superslab purged while cached         */
  bool half_guard;          /* guard: its second MiB is PROT_NONE (small) */
  bool forked;              /* its heap vanished in fork(): the adopter
                               rebuilds its slabs (hk_slab_rebuild)       */
  bool thp_split;           /* its huge page split by an idle purge: khugepaged
                               kept off until a slab is taken again */
  bool from_span;           /* a chunk lent by the span tier (span_lend.c, "the
                               unified backend"): goes back there, not to
                               the OS */
  bool desc_hi;             /* a descriptor past the header's first page was
                               taken since the header was zeroed: ss_init
                               reads those only then (a read maps a page
                               where the kernel maps no zero page) */
  bool park_due;            /* abandoned: blocks came back since its last
                               park (or it was just abandoned): the purge
                               takes it off the list to park again only then */
  struct hk_heap *heap;            /* owner; NULL when abandoned/cached    */
  struct hk_superslab *next, *prev;
  struct hk_superslab *all_next, *all_prev;  /* every mapped superslab */
  uint64_t stamp_ms;        /* when it entered the cache                   */
  uint32_t bundle;          /* abandoned: nonzero, shared by the superslabs
                               an exited thread's heap held (hk_ss_abandon) */
  uint64_t epoch_ms;        /* its unused slabs' last epoch step: one step
                               per purge delay, whichever clock calls
                               (hk_ss_purge_unused): a slab purged was
                               unused for a purge delay at least */
  uint32_t freed_ms[HK_SS_MAX_SLABS];  /* when each slab was last released
                               (hk_os_now_ms, mod 2^32): a purged slab taken
                               again was unused this long (hk_ss_note_reuse) */
  /* last, after the fields above: the fields and the first
   * HK_SS_DESC_PAGE1 descriptors share the header's first page, and the
   * second is written, or read, only once a slab past them is taken
   * (ss_init, hk_ss_desc_n). With
   * the fields after the 32 descriptors every superslab wrote two pages. */
  hk_slab_t slabs[HK_SS_MAX_SLABS] __attribute__((aligned(128)));
} hk_superslab_t;

_Static_assert(sizeof(hk_superslab_t) <= HK_SS_META_SIZE, "header fits");
/* the descriptors wholly on the header's first page */
#define HK_SS_DESC_PAGE1 ((unsigned)((HK_PAGE - offsetof(hk_superslab_t, slabs)) / sizeof(hk_slab_t)))
_Static_assert(HK_SS_DESC_PAGE1 >= 16, "the first page holds the descriptors of a half-guarded or mid superslab");
_Static_assert(HK_NCLASS <= 128, "warm_cls holds a bit a class");

HK_INLINE hk_superslab_t *hk_ss_of(const void *p) {
  return (hk_superslab_t *)((uintptr_t)p & ~(uintptr_t)HK_SS_MASK);
}
HK_INLINE hk_slab_t *hk_slab_of(hk_superslab_t *ss, const void *p) {
  return &ss->slabs[((uintptr_t)p & HK_SS_MASK) >> ss->slab_shift];
}
HK_INLINE hk_superslab_t *hk_slab_ss(hk_slab_t *s) { return hk_ss_of(s); }
/* How many of ss's descriptors a loop over every slab reads: those past
 * the header's first page only once one was taken (desc_hi); until then
 * they are an unused slab's zeros, and a read would map their page. */
HK_INLINE unsigned hk_ss_desc_n(const hk_superslab_t *ss) {
  unsigned n = HK_LOAD_RELAXED(ss->nslabs);
  return n > HK_SS_DESC_PAGE1 && !HK_LOAD_RELAXED(ss->desc_hi) ? HK_SS_DESC_PAGE1 : n;
}
/* An unused slab of ss that last served class cls and kept its pages
 * (hk_heap_fresh_slab): its index, or -1. */
HK_INLINE int hk_ss_warm_slab(const hk_superslab_t *ss, unsigned cls) {
  for (uint32_t m = ss->free_mask & ss->warm; m; m &= m - 1) {
    unsigned i = (unsigned)__builtin_ctz(m);
    if (ss->slabs[i].cls == cls) return (int)i;
  }
  return -1;
}
/* The descriptor at byte offset `off` of the descriptors of the superslab
 * at address ss: the two and the descriptors' offset summed by one lea,
 * held as one pointer. (Written in C, the compiler kept the descriptor
 * less that offset for the loads and built the descriptor itself apart
 * for the slow calls: two to four instructions more on the free paths.) */
HK_INLINE hk_slab_t *hk_slab_sum(uintptr_t ss, uintptr_t off) {
#if defined(__x86_64__)
  __asm__("lea %c2(%0,%1), %0" : "+r"(ss) : "r"(off), "i"(offsetof(hk_superslab_t, slabs)));
  return (hk_slab_t *)ss;
#else
  return (hk_slab_t *)(ss + offsetof(hk_superslab_t, slabs) + off);
#endif
}
HK_INLINE uintptr_t hk_slab_off(const void *p, unsigned shift) {
  return (((uintptr_t)p & HK_SS_MASK) >> shift) * sizeof(hk_slab_t);
}
/* Slab of p given its slab shift (from the chunk map): no header read. */
HK_INLINE hk_slab_t *hk_slab_at(const void *p, unsigned shift) {
  return hk_slab_sum((uintptr_t)p & ~(uintptr_t)HK_SS_MASK, hk_slab_off(p, shift));
}
/* The same from the superslab's chunk index (the free fast path has it:
 * one instruction less than masking p again). */
HK_INLINE hk_slab_t *hk_slab_in_chunk(uintptr_t chunk, const void *p, unsigned shift) {
  return hk_slab_sum(chunk << HK_SS_SHIFT, hk_slab_off(p, shift));
}

HK_INLINE unsigned hk_kind_of_class(unsigned cls) {
  return cls < HK_NCLASS_SMALL ? HK_SS_KIND_SMALL : HK_SS_KIND_MID;
}
HK_INLINE size_t hk_ss_slab_bytes(const hk_superslab_t *ss) { return (size_t)1 << ss->slab_shift; }
HK_INLINE uint8_t *hk_ss_slab_area(hk_superslab_t *ss, unsigned idx) {
  return (uint8_t *)ss + ((size_t)idx << ss->slab_shift) + (idx == 0 ? HK_SS_HDR_SIZE : 0);
}
/* The bytes of a superslab of this kind that hold slabs. */
HK_INLINE size_t hk_ss_used_bytes(unsigned kind) {
  return HK_SS_HALF_GUARD(kind) ? HK_SS_HALF : HK_SS_SIZE;
}
/* guard: the last page of a whole superslab's last slab is its end guard */
HK_INLINE size_t hk_ss_slab_area_bytes(const hk_superslab_t *ss, unsigned idx) {
  bool last = idx + 1u == (HK_SS_SIZE >> ss->slab_shift);
  return hk_ss_slab_bytes(ss) - (idx == 0 ? HK_SS_HDR_SIZE : 0) - (last ? HK_SS_GUARD_SIZE : 0);
}

/* Doubly-linked superslab lists (owner-local or under a global lock). */
typedef struct { hk_superslab_t *head; size_t count; } hk_ss_list_t;
void hk_ss_list_push(hk_ss_list_t *l, hk_superslab_t *ss, uint8_t id);
void hk_ss_list_remove(hk_ss_list_t *l, hk_superslab_t *ss);

/* A superslab of this kind with every slab unused: from the cache or the OS.
 * Not owned by anyone yet. NULL when the OS refuses. */
hk_superslab_t *hk_ss_acquire(unsigned kind);
/* With cls >= 0: only a cached one, one of whose slabs (*slot) last
 * served class cls and kept its pages (hk_heap_fresh_slab); else NULL. */
hk_superslab_t *hk_ss_acquire_warm(unsigned kind, int cls, unsigned *slot);
/* Give back an empty superslab (all slabs unused); it is cached, purged
 * after the purge delay and unmapped when the cache is over its cap. */
void hk_ss_release(hk_superslab_t *ss);
/* Hand over a superslab whose owner thread is gone. */
void hk_ss_abandon(hk_superslab_t *ss);
/* Take an abandoned superslab of this kind, or NULL. */
hk_superslab_t *hk_ss_take_abandoned(unsigned kind);
/* An exited thread's heap: a new bundle id for its superslabs, and whether
 * the abandoned lists have room for its empty ones too. */
uint32_t hk_ss_new_bundle(void);
bool hk_ss_bundle_room(unsigned kind);
/* An abandoned superslab of `kind` in bundle b holding class cls (a slab
 * with its blocks, or one that served it and kept its pages); NULL: none. */
hk_superslab_t *hk_ss_take_bundled(unsigned kind, uint32_t b, unsigned cls);
/* Purge/unmap cached superslabs idle past the delay (force: all now).
 * Returns bytes given back. Cheap when nothing is due. */
size_t hk_ss_collect(bool force);
/* The tier swap (docs/ARCHITECTURE.md, "Memory budget"): the oldest cached
 * superslabs not purged give back about `bytes` (another tier is about to
 * fault in as many). Bytes given back. */
size_t hk_ss_shed(size_t bytes);
/* Called with the bytes a superslab mapped from the OS
 * is about to fault in: the large tier sheds as many while it is idle.
 * Set once by init.c (docs/ARCHITECTURE.md, "Hooks"). */
void hk_ss_set_grow_hook(void (*fn)(size_t bytes));
/* Purge the unused slabs of ss that were unused for a whole epoch. */
size_t hk_ss_purge_unused(hk_superslab_t *ss, bool force);
/* Purge unused resident slabs of ss, those unused longest first, until
 * about `want` bytes are given back (the kind swap, heap_slabs.c); none
 * where superslabs are on huge pages. Bytes. */
size_t hk_ss_purge_some(hk_superslab_t *ss, size_t want);
/* A slab of ss is taken (hk_heap_fresh_slab): a huge page an idle purge
 * split is asked for again. */
void hk_ss_slab_taken(hk_superslab_t *ss);
/* The unused slabs of abandoned superslabs (all when force). Bytes. Each
 * holding remote frees first goes to the orphan hook, under the abandoned
 * lists' lock (no adopter, no fork meanwhile). */
size_t hk_ss_purge_abandoned(bool force);
/* Set once by init.c: the slab layer's collection of an abandoned
 * superslab's remote frees (hk_slab_collect_orphan). */
void hk_ss_set_orphan_hook(void (*fn)(hk_superslab_t *ss));
/* Set once by init.c: the slab layer's park of an abandoned superslab's
 * partial slabs (hk_slab_park_orphan, HAKMEM_PARK_IDLE), called by the
 * same pass a purge delay after the abandon, with ss off the lists (no
 * adopter, no orphan collection meanwhile) and no lock held. Bytes. */
void hk_ss_set_park_hook(size_t (*fn)(hk_superslab_t *ss));
/* Slab s of ss holds no block: it becomes unused (free_mask; its pages are
 * purged on ss's clock unless a slab is taken first). The caller holds ss
 * (its owner, or the abandoned lists' lock). */
void hk_ss_slab_unuse(hk_superslab_t *ss, hk_slab_t *s);

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

/* Events the learner reads, counted only while it is on (HAKMEM_LEARN or
 * HAKMEM_LEARN_PURGE): superslabs taken from the cache or mapped fresh,
 * purges, and purged memory used again (a refault; the heap notes its
 * slabs' own). */
enum { HK_SS_CACHE_HITS, HK_SS_OS_MAPS, HK_SS_PURGES, HK_SS_REFAULTS, HK_SS_SPAN_TAKES,
       HK_SS_PURGED_PAGES, HK_SS_NEVENTS };
extern unsigned long hk_ss_events[HK_SS_NEVENTS];
HK_INLINE void hk_ss_note_n(unsigned ev, unsigned long n) {
  if (HK_UNLIKELY(hk_learn_counting())) HK_ADD_RELAXED(hk_ss_events[ev], n);
}
HK_INLINE void hk_ss_note(unsigned ev) { hk_ss_note_n(ev, 1); }
/* The counts since the last call; zeroes them. */
void hk_ss_take_events(unsigned long out[HK_SS_NEVENTS]);
/* A refault's reuse distance (base/reuse.h): `bytes` taken again had been
 * unused for ms. The learner takes the histogram. */
extern hk_reuse_hist_t hk_ss_reuse;
HK_INLINE void hk_ss_note_reuse(uint64_t ms, size_t bytes) {
  if (hk_learn_counting()) hk_reuse_note(&hk_ss_reuse, ms, bytes >> 12);
}

/* Live blocks and slabs in use per class, over every mapped superslab
 * (racy reads of other threads' counts: a snapshot). */
void hk_ss_census(uint64_t live[HK_NCLASS], uint64_t slabs[HK_NCLASS]);

size_t hk_ss_count_mapped(void);
size_t hk_ss_cached_unpurged_bytes(void);
size_t hk_ss_count_cached(void);
size_t hk_ss_count_abandoned(void);

/* Fork child: superslabs owned by heaps other than `self` belong to threads
 * that do not exist here; make them ownerless and adoptable. Those of a
 * heap for which kept() says true (a first-class heap) stay its own. */
void hk_ss_orphan_foreign(struct hk_heap *self, bool (*kept)(const struct hk_heap *h));

void hk_ss_fork_prepare(void);
void hk_ss_fork_parent(void);
void hk_ss_fork_child(void);

#endif
