/* API layer: the malloc and free fast paths, inline, used by both the hak_*
 * functions and the overrides. Debug checks and the secure build's measures
 * live in hooks (hk_hook_*, secure.h) that compile to nothing otherwise. */
#ifndef HK_ALLOC_H
#define HK_ALLOC_H

#include "base/chunk_map.h"
#include "heap/heap.h"
#include "heap/heap_slabs.h"
#include "heap/refill.h"
#include "mem/remote.h"
#include "base/report.h"
#include "mem/secure.h"
#include "base/size_class.h"
#include "mem/slab.h"

/* ---- block operations, one row per tier ------------------------------------
 * What free, realloc, malloc_usable_size, hak_owns and the copy checks do
 * with a pointer depends on the tier that owns its chunk: the chunk map says
 * which (one load, chunk_map.h: hk_chunk_tier), and this table says how.
 * A new tier is a chunk value and a row. Slab memory is also handled inline
 * by the two hot callers, free (hk_free_other) and the copy checks
 * (hk_slab_extent), before they look here. */
typedef struct hk_tier {
  /* free p (kind, size: what the caller says; the secure build checks
   * them); reports what is not a live block of the tier */
  void (*free)(void *p, unsigned ck, unsigned kind, size_t size);
  /* the usable size of the live block that starts at p; 0 when none (a
   * zero-size block is live with 0 bytes: owns says so) */
  size_t (*usable)(const void *p, unsigned ck);
  /* does p start a live (or cached) block? Cheap: address arithmetic and
   * a header read, no list walk */
  bool (*owns)(const void *p, unsigned ck);
  /* realloc(p, n) that the tier finishes itself: in place, moved by its
   * own means, or refused (reported: *out NULL, errno EINVAL); true then.
   * false: realloc moves the block (malloc, copy, free) */
  bool (*resize)(void *p, unsigned ck, size_t n, void **out);
  /* the live block holding address p (any byte of it): its start and
   * requested size; false when p is in none (the copy checks) */
  bool (*extent)(const void *p, unsigned ck, const uint8_t **start, size_t *size);
} hk_tier_t;
extern const hk_tier_t hk_tiers[HK_NTIERS] HK_HIDDEN;
HK_INLINE const hk_tier_t *hk_tier_of(unsigned ck) { return &hk_tiers[hk_chunk_tier(ck)]; }

void  *hk_malloc_mid(size_t n, unsigned kind);     /* n > small tier       */
void  *hk_malloc_large(size_t n, unsigned kind);   /* n > HK_MID_MAX       */
/* The large tiers' router (alloc.c): a span or a mapping of its own.
 * align: 0 or a power of two; zero: contents must read as zero; kind:
 * HK_KIND_* (config.h), checked at free in the secure build. NULL: errno
 * ENOMEM. */
void  *hk_large_alloc(size_t size, size_t align, bool zero, unsigned kind);
void   hk_free_other(void *p, unsigned kind, size_t size);  /* all but small */
void   hk_free_mid(void *p);          /* mid slabs, mid cache on (HK_MIDC_ON) */
void   hk_free_remote_checked(hk_slab_t *s, void *p);
void   hk_free_mid_foreign_call(hk_slab_t *s, hk_block_t *b);  /* out of line */
/* a mid block popped from the mid cache with its seal broken (alloc.h):
 * reported; with HAKMEM_ABORT_ON_INVALID=0 the block is left out and
 * another one is handed out */
void  *hk_alloc_mid_written(hk_block_t *b, size_t n, unsigned kind);
/* malloc of mid class cls whose stack is empty (alloc.h) */
void  *hk_alloc_mid_miss(struct hk_heap *h, unsigned cls, size_t n, unsigned kind);
void   hk_free_invalid(void *p, hk_slab_t *s);     /* reports; cold        */
void   hk_free_marked(hk_slab_t *s, void *p);        /* free mark found; cold */
void  *hk_calloc(size_t count, size_t size);
void  *hk_realloc(void *p, size_t n);
void  *hk_aligned(size_t align, size_t n, unsigned kind);  /* align: power of two */
size_t hk_usable(const void *p);
bool   hk_owns_block(const void *p);

#ifdef HK_DEBUG
void hk_debug_check_alloc(void *p, unsigned cls);
void hk_debug_check_free(void *p, hk_slab_t *s);
HK_INLINE void hk_hook_alloc(void *p, unsigned cls) { hk_debug_check_alloc(p, cls); }
HK_INLINE void hk_hook_free(void *p, hk_slab_t *s) { hk_debug_check_free(p, s); }
#else
HK_INLINE void hk_hook_alloc(void *p, unsigned cls) { (void)p; (void)cls; }
HK_INLINE void hk_hook_free(void *p, hk_slab_t *s) { (void)p; (void)s; }
#endif

/* canary: an empty free list is refilled out of line and the block
 * checked there too (a tail call: the fast path saves no registers) */
void *hk_sec_alloc_refill(hk_heap_t *h, unsigned cls, size_t n, unsigned kind) __attribute__((noinline));

/* canary: free's check failed, or fill on free is on. Reports, then
 * finishes the free as hk_free_in_slab would (alloc.c). */
void hk_sec_free_slow(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner)
    __attribute__((noinline));

/* The checks every free of p makes; false: the call was finished by
 * hk_sec_free_slow (reported, or fill on free). *lo: the trailer's low word. */
HK_INLINE bool hk_sec_free_begin(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner,
                                 uint32_t *lo) {
  size_t avail = s->avail;
  __builtin_memcpy(lo, (uint8_t *)p + avail, 4);
  if (HK_UNLIKELY(!hk_sec_free_ok(s, p, *lo, avail, kind, size))) {
    hk_sec_free_slow(s, p, kind, size, owner);
    return false;
  }
  return true;
}

/* A free by the owner: checks p and marks it freed. true: the caller pushes
 * p onto local_free; false: the call was finished (reported, or done by
 * hk_sec_free_slow). A block just freed is "freed": the state check also
 * catches the immediate double free. */
HK_INLINE bool hk_sec_on_free_owner(hk_slab_t *s, void *p, unsigned kind, size_t size) {
  if (!HK_M_CANARY) return true;
  uint32_t lo;
  if (!hk_sec_free_begin(s, p, kind, size, true, &lo)) return false;
  lo ^= HK_SEC_LIVE ^ HK_SEC_FREED;
  __builtin_memcpy((uint8_t *)p + s->avail, &lo, 4);
  return true;
}

/* A free by another thread: the same checks, then the trailer goes from
 * "live" to "remote" by one compare-and-swap, so that two racing frees
 * cannot both pass (the owner turns REMOTE into FREED when it collects). */
HK_INLINE bool hk_sec_on_free_remote(hk_slab_t *s, void *p, unsigned kind, size_t size) {
  if (!HK_M_CANARY) return true;
  uint32_t lo;
  if (!hk_sec_free_begin(s, p, kind, size, false, &lo)) return false;
  if (HK_UNLIKELY(!__atomic_compare_exchange_n((uint32_t *)((uint8_t *)p + s->avail), &lo,
                                               lo ^ (HK_SEC_LIVE ^ HK_SEC_REMOTE), false,
                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED))) {
    hk_sec_free_race(p);
    return false;
  }
  return true;
}

/* An owner's free of b, checked: onto the free list; a full slab comes
 * back to its heap's lists (the purge epoch handles an emptied one) */
HK_INLINE void hk_free_local(hk_slab_t *s, hk_block_t *b) {
  hk_slab_push_owner(s, b);
  if (HK_UNLIKELY(s->state == HK_SLAB_FULL)) hk_heap_free_local_slow(s);
}
/* ... out of line, where the owner field sent it (full, or set aside:
 * HK_OWNER_ASIDE): onto local_free */
HK_INLINE void hk_free_local_aside(hk_slab_t *s, hk_block_t *b) {
  hk_slab_push_aside(s, b);
  if (HK_UNLIKELY(s->state == HK_SLAB_FULL)) hk_heap_free_local_slow(s);
}
/* ... when s->owner says the slab is not full */
HK_INLINE void hk_free_local_fast(hk_slab_t *s, hk_block_t *b) {
  HK_ASSERT(s->state != HK_SLAB_FULL);
  hk_slab_push_local(s, b);
}

/* Pop a block from slab s (class cls) of heap h for a request of n bytes. */
HK_INLINE void *hk_alloc_from(hk_heap_t *h, hk_slab_t *s, unsigned cls, size_t n, unsigned kind) {
  hk_block_t *b = s->free;
  if (HK_UNLIKELY(b == NULL)) {
    if (HK_M_CANARY) return hk_sec_alloc_refill(h, cls, n, kind);
    b = hk_heap_alloc_slow(h, cls);
    if (b) hk_track_alloc(b, hk_class_bytes(cls), 0);
    return b;
  }
  hk_slab_pop_block(s, b);
  hk_hook_alloc(b, cls);
  hk_track_alloc(b, hk_class_bytes(cls) - HK_PAD, 0);
  return hk_sec_on_alloc(s, b, n, kind);
}

HK_INLINE void *hk_alloc_class(unsigned cls, size_t n, unsigned kind) {
  hk_heap_t *h = hk_tls_heap;
  return hk_alloc_from(h, h->cur[cls], cls, n, kind);
}

/* The mid cache's seal (issue 63): a block that waits on a stack, a queue
 * or the pool holds the free mark in its first word, where a block on its
 * slab's list holds its encoded link, and the pop checks it: a write
 * through a dangling pointer over a cached block's first word is reported
 * when the block is handed out again, as a slab pop reports a corrupted
 * link. (The second word, the free mark, is not checked too: its load
 * and compare were a third of the seal's instructions a pop.) */
HK_INLINE void hk_midc_seal(hk_block_t *b) { b->enc = hk_free_mark; }

/* A block of h's stack of mid class cls (k blocks on it, k > HK_MIDC_HOLD)
 * for a request of n bytes: the top of a stack, the oldest of a queue
 * (heap.h); canary: its trailer checked "freed" and made "live", as a
 * slab pop does. */
HK_INLINE void *hk_alloc_mid_pop(hk_heap_t *h, unsigned cls, unsigned k, size_t n, unsigned kind) {
  unsigned i = cls - HK_NCLASS_SMALL;
  hk_block_t *b = *hk_midc_slot(h, i, HK_MIDC_FIFO ? 0 : k - 1);
  if (HK_MIDC_FIFO) h->midc_head[i] = (uint8_t)((h->midc_head[i] + 1) & (HK_MIDC_SLOTS - 1));
  h->midc_n[i] = (uint8_t)(k - 1);
  if (HK_UNLIKELY(b->enc != hk_free_mark)) return hk_alloc_mid_written(b, n, kind);  /* the seal */
  if (!HK_M_CANARY) hk_mark_store(b, 0);  /* live: no free mark */
  if (HK_UNLIKELY(HK_LOAD_RACY(hk_heap_counting))) h->st.handed[cls]++;
  hk_hook_alloc(b, cls);
  if (HK_M_CANARY) return hk_sec_on_alloc(hk_slab_at(b, hk_chunk_slab_shift(HK_CHUNK_SS_MID)), b, n, kind);
  return b;
}

/* A mid class (HK_NCLASS_SMALL <= cls): the block its owner freed last
 * (a queue: the oldest but HK_MIDC_HOLD), from the mid cache (heap.h);
 * otherwise out of line (hk_alloc_mid_miss: the mid pool, else the
 * class's current slab), so this path needs no stack frame. */
HK_INLINE void *hk_alloc_mid_class(unsigned cls, size_t n, unsigned kind) {
  hk_heap_t *h = hk_tls_heap;
  if (HK_MIDC_ON) {
    unsigned k = h->midc_n[cls - HK_NCLASS_SMALL];
    if (HK_LIKELY(k > HK_MIDC_HOLD)) return hk_alloc_mid_pop(h, cls, k, n, kind);
    return hk_alloc_mid_miss(h, cls, n, kind);
  }
  return hk_alloc_from(h, h->cur[cls], cls, n, kind);
}

/* The owner's free of b, a mid block of slab s, checked and marked: onto
 * its class's stack in the mid cache; a full stack (or the cache off)
 * leaves it to its slab as before. (Draining the older half instead cost
 * more instructions a malloc/free pair, in bursts of frees, than no cache
 * at all; a full stack's bottom stays, its top churns.) */
HK_INLINE void hk_free_mid_local(hk_slab_t *s, hk_block_t *b) {
  hk_heap_t *h = hk_tls_heap;
  hk_midc_seal(b);  /* a block that goes on to its slab gets its link there instead */
  unsigned i = s->cls - HK_NCLASS_SMALL, k = h->midc_n[i];
  if (HK_LIKELY(k < HK_LOAD_RACY(hk_midc_cap_own[i]))) {
    *hk_midc_slot(h, i, k) = b;
    h->midc_n[i] = (uint8_t)(k + 1);
    if (HK_UNLIKELY(--h->midc_ticks == 0)) hk_heap_midc_tick(h);
    return;
  }
  if (HK_MIDC_FIFO && k != 0) {  /* a full queue: the oldest leaves, b joins as the newest */
    hk_block_t *old = *hk_midc_slot(h, i, 0);
    h->midc_head[i] = (uint8_t)((h->midc_head[i] + 1) & (HK_MIDC_SLOTS - 1));
    *hk_midc_slot(h, i, k - 1) = b;
    b = old;
    s = hk_slab_at(old, hk_chunk_slab_shift(HK_CHUNK_SS_MID));
  }
  hk_free_local(s, b);
}

/* Another thread's free of b, a mid block of slab s (checked and marked):
 * onto the caller's stack too, as tcmalloc's per-thread lists take any
 * block (issue 41: a thread that allocated blocks and then
 * only waits never collects the frees of the threads that got them, and
 * their mallocs took fresh memory for every one). The block stays out in
 * its slab, whose owner's confirmation walks every heap's stacks
 * (hk_heap_block_is_free); a flush sends it back as a remote free. A
 * thread with no heap yet, a full stack, a slab no longer in use or a
 * first-class heap's block (HK_OWNER_API: its destroy must find it): the
 * remote list, as before. */
HK_INLINE void hk_free_mid_foreign(hk_slab_t *s, hk_block_t *b) {
  hk_heap_t *h = hk_tls_heap;
  hk_midc_seal(b);  /* the stack's or the pool's; the remote list links it */
  unsigned i = s->cls - HK_NCLASS_SMALL, k = h->midc_n[i];
  if (HK_LIKELY(k < HK_LOAD_RACY(hk_midc_cap[i]) && h != &hk_heap_empty &&
                HK_LOAD_RELAXED(s->state) != HK_SLAB_UNUSED &&
                !(hk_slab_owner(s) & HK_OWNER_API))) {
    h->midc[i][k] = b;
    h->midc_n[i] = (uint8_t)(k + 1);
    if (HK_UNLIKELY(--h->midc_ticks == 0)) hk_heap_midc_tick(h);
    return;
  }
  /* a full stack: a live owner's block to the pool, where any thread's
   * malloc finds it (its owner may never look at its remote list again);
   * not with the cache off (HAKMEM_MID_CACHE_KB=0, HAKMEM_PROF=1: the
   * profiler would not see pooled blocks handed out) */
  if (HK_LOAD_RACY(hk_midc_cap[i]) != 0 && hk_heap_midp_wants(s) && hk_heap_midp_put(i, b))
    return;
  hk_free_remote_checked(s, b);
}

/* zero: a request of 0 bytes wraps round to the largest size and leaves
 * the small path (hk_malloc_mid serves it) at no extra test */
HK_INLINE bool hk_is_small_request(size_t n) {
  return HK_M_ZERO ? n - 1 < HK_SMALL_MAX - HK_PAD : n <= HK_SMALL_MAX - HK_PAD;
}

HK_INLINE void *hk_malloc_kind(size_t n, unsigned kind) {
  if (HK_LIKELY(hk_is_small_request(n))) {
    hk_heap_t *h = hk_tls_heap;
    hk_slab_t *s = h->direct[n];
    hk_block_t *b = s->free;
    if (HK_LIKELY(b != NULL)) return hk_alloc_from(h, s, s->cls, n, kind);
    return hk_alloc_from(h, s, hk_class_small[(n + HK_PAD + 15) >> 4], n, kind);  /* the slow path */
  }
  return hk_malloc_mid(n, kind);
}
HK_INLINE void *hk_malloc_inline(size_t n) { return hk_malloc_kind(n, HK_KIND_MALLOC); }

/* canary: a free of block p of slab s, checked by its trailer, whose state
 * catches every double free: the owner's onto its slab, or (mid) the mid
 * cache; another thread's to the remote list. */
HK_INLINE void hk_free_in_slab_canary(void *p, hk_slab_t *s, unsigned kind, size_t size, bool mid) {
  hk_block_t *b = (hk_block_t *)p;
  if (hk_slab_owner(s) == hk_thread_id()) {
    if (HK_LIKELY(hk_sec_on_free_owner(s, p, kind, size))) {
      if (mid) hk_free_mid_local(s, b);
      else hk_free_local(s, b);
    }
  } else if (HK_LIKELY(hk_sec_on_free_remote(s, p, kind, size))) {
    hk_free_remote_checked(s, p);
  }
}

/* The rest of a free of p, in superslab memory: s is the slab p is in.
 * kind: what the caller expects the block to be (HK_KIND_ANY for free());
 * size: the size the caller says it asked for, 0 when unknown. Both are
 * checked only in the secure build. */
HK_INLINE void hk_free_in_slab(void *p, hk_slab_t *s, unsigned kind, size_t size) {
  hk_hook_free(p, s);
  if (HK_UNLIKELY(!hk_slab_is_block(s, p))) { hk_free_invalid(p, s); return; }
  hk_block_t *b = (hk_block_t *)p;
  hk_track_free(p);
  if (HK_M_CANARY) {
    hk_free_in_slab_canary(p, s, kind, size, false);
    return;
  }
  uintptr_t mark = hk_free_mark;
  if (HK_UNLIKELY(hk_mark_load(b) == mark)) {  /* freed already, or never handed out? */
    hk_free_marked(s, p);
    return;
  }
  hk_mark_store(b, mark);
  /* the owner's free into a slab that is not full; the rest (other threads,
   * a full slab: HK_OWNER_FULL) out of line */
  if (HK_LIKELY(HK_LOAD_RACY(s->owner) == hk_thread_id())) hk_free_local_fast(s, b);
  else hk_free_remote_checked(s, p);
}

/* hk_free_in_slab for a mid block (s: its slab): the owner's free goes to
 * the mid cache, full slab or not. Out of line (hk_free_mid). */
HK_INLINE void hk_free_in_mid_slab(void *p, hk_slab_t *s, unsigned kind, size_t size) {
  if (!HK_MIDC_ON) { hk_free_in_slab(p, s, kind, size); return; }
  hk_hook_free(p, s);
  if (HK_UNLIKELY(!hk_slab_is_block(s, p))) { hk_free_invalid(p, s); return; }
  if (HK_M_CANARY) {
    hk_free_in_slab_canary(p, s, kind, size, true);
    return;
  }
  hk_block_t *b = (hk_block_t *)p;
  uintptr_t mark = hk_free_mark;
  if (HK_UNLIKELY(hk_mark_load(b) == mark)) {  /* freed already (maybe cached), or never handed out? */
    hk_free_marked(s, p);
    return;
  }
  hk_mark_store(b, mark);
  if (HK_LIKELY(hk_slab_owner(s) == hk_thread_id())) hk_free_mid_local(s, b);
  else if (HK_MIDC_SHARED) hk_free_mid_foreign_call(s, b);
  else hk_free_remote_checked(s, p);
}

/* A small block's slab is found by a constant shift, so the CPU reads the
 * slab descriptor while the chunk-map byte is still on its way (the branch
 * on it is predicted), instead of waiting for the byte to know the slab
 * size. Mid blocks, large blocks, NULL and foreign pointers: out of line. */
HK_INLINE void hk_free_checked(void *p, unsigned kind, size_t size) {
  /* a racy read the compiler folds into one compare with memory;
   * hk_free_other reads the kind again to act on it */
  size_t chunk = hk_chunk_index((uintptr_t)p);
  if (HK_UNLIKELY(HK_LOAD_RACY(hk_chunk_map[chunk]) != HK_CHUNK_SS_SMALL)) {
    /* a mid block straight to its own leaf (no frame, no second dispatch,
     * no arguments: kind and size are the canary's, whose mid frees take
     * hk_free_other); the byte is compared again off the small path,
     * which stays one compare */
    if (HK_MIDC_ON && !HK_M_CANARY && HK_LOAD_RELAXED(hk_chunk_map[chunk]) == HK_CHUNK_SS_MID) hk_free_mid(p);
    else hk_free_other(p, kind, size);
    return;
  }
  /* The superslab from the chunk index, shifted back: one instruction less
   * than masking p again. Bits of p above the map's reach (47) are dropped
   * there, so such a p gets a real slab of hakmem's; its block check then
   * fails (p is 2^47 k away from any block start), or, with one of the few
   * k for which p * div_m wraps onto a block start, its free-mark read
   * faults, a non-canonical address, as the descriptor read did before. */
  hk_free_in_slab(p, hk_slab_in_chunk(chunk, p, hk_chunk_slab_shift(HK_CHUNK_SS_SMALL)), kind, size);
}
HK_INLINE void hk_free_inline(void *p) { hk_free_checked(p, HK_KIND_ANY, 0); }

#endif
