/* The API layer's calls out of line: mid and large malloc, free of what the
 * fast path does not take, realloc, calloc, usable size, the table of block
 * operations per tier (alloc.h), and the hak_* functions of hakmem.h. */
#define _GNU_SOURCE
#include "api/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../include/hakmem.h"
#include "mem/large_huge.h"
#include "mem/large_span.h"
#include "mem/guarded.h"
#include "mem/prof.h"
#include "mem/zero.h"
#include "base/libc.h"  /* realloc's copy and calloc's zeroing: glibc's, unchecked */

void *hk_malloc_large(size_t n, unsigned kind) {
  if (HK_UNLIKELY(n > HK_MAX_ALLOC)) { errno = ENOMEM; return NULL; }
  return hk_large_alloc(n, 0, false, kind);
}

void *hk_malloc_mid(size_t n, unsigned kind) {
  if (HK_M_ZERO && HK_UNLIKELY(n == 0)) return hk_zero_alloc();
  if (HK_LIKELY(n <= HK_MID_MAX - HK_PAD)) return hk_alloc_mid_class(hk_class_of_mid(n + HK_PAD), n, kind);
  return hk_malloc_large(n, kind);
}

/* The current slab ran dry too: another thread's overflow, if any
 * (heap_slabs.h, the mid pool), before the slow path carves. */
static HK_NOINLINE void *alloc_mid_refill(hk_heap_t *h, unsigned cls, size_t n, unsigned kind) {
  unsigned i = cls - HK_NCLASS_SMALL;
  if (HK_MIDC_SHARED && HK_LOAD_RACY(hk_midp[i].n) != 0 && h != &hk_heap_empty) {
    unsigned k = hk_heap_midp_refill(h, i);
    if (k != 0) return hk_alloc_mid_pop(h, cls, k, n, kind);
  }
  return hk_alloc_from(h, h->cur[cls], cls, n, kind);
}

/* The stack is empty: the current slab's free list (a leaf, no frame),
 * then alloc_mid_refill. */
void *hk_alloc_mid_miss(hk_heap_t *h, unsigned cls, size_t n, unsigned kind) {
  /* a queue (HK_MIDC_FIFO) holds its blocks back for 8 frees, so its pop
   * comes too late for the newest, the block a dangling pointer most
   * likely still names: its seal is checked here, while the queue is
   * short (a program's first frees of the class), at no cost to the pop */
  unsigned i = cls - HK_NCLASS_SMALL, k = h->midc_n[i];
  if (HK_MIDC_FIFO && k != 0 && HK_UNLIKELY((*hk_midc_slot(h, i, k - 1))->enc != hk_free_mark)) {
    hk_report_invalid("malloc", *hk_midc_slot(h, i, k - 1), "block was written after it was freed");
    h->midc_n[i] = (uint8_t)(k - 1);  /* left out, never handed out again */
  }
  hk_slab_t *s = h->cur[cls];
  if (HK_LIKELY(s->free != NULL)) return hk_alloc_from(h, s, cls, n, kind);
  return alloc_mid_refill(h, cls, n, kind);
}

void *hk_alloc_mid_written(hk_block_t *b, size_t n, unsigned kind) {
  hk_report_invalid("malloc", b, "block was written after it was freed");
  return hk_malloc_kind(n, kind);  /* b stays out: it is never handed out again */
}

/* another thread's mid block, out of line: the owner's free in
 * hk_free_mid then needs no stack frame */
void hk_free_mid_foreign_call(hk_slab_t *s, hk_block_t *b) { hk_free_mid_foreign(s, b); }

/* free of a block in a mid slab (free's second compare sends it here) */
void hk_free_mid(void *p) {
  hk_free_in_mid_slab(p, hk_slab_at(p, hk_chunk_slab_shift(HK_CHUNK_SS_MID)), HK_KIND_ANY, 0);
}

void hk_free_other(void *p, unsigned kind, size_t size) {
  /* free(NULL) first: programs free optional fields unconditionally
   * (an arena's teardown frees NULL often), and through the foreign tier's
   * table such a free takes twice the instructions it does here */
  if (HK_UNLIKELY(p == NULL)) return;
  unsigned ck = hk_chunk_kind(p);  /* read again: the fast path only compared it */
  if (ck == HK_CHUNK_SS_MID) { hk_free_in_mid_slab(p, hk_slab_at(p, hk_chunk_slab_shift(ck)), kind, size); return; }
  if (hk_chunk_is_ss(ck)) { hk_free_in_slab(p, hk_slab_at(p, hk_chunk_slab_shift(ck)), kind, size); return; }
  hk_tier_of(ck)->free(p, ck, kind, size);
  /* the background purge's start, when this free asked for it (the large
   * tier's free hook, init.c's note_held): the program may go idle next */
  hk_heap_safe_point();
}

void hk_free_invalid(void *p, hk_slab_t *s) {
  if (HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED) hk_report_invalid("free", p, HK_WHY_NOT_LIVE);
  else if (hk_slab_is_slot(s, p) && !hk_slab_is_block(s, p))  /* a block start past `carved` */
    hk_report_invalid("free", p, HK_WHY_NEVER_HANDED);
  else if (!hk_slab_is_block(s, p))
    hk_report_invalid("free", p, HK_WHY_INTERIOR);
  else hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
}

/* free found the free mark in p: a double free, or a free of a block
 * carved and never handed out, unless the program copied the mark into a
 * live block. The owner confirms by walking the slab's lists; another
 * thread cannot walk them safely and takes the mark's word (a random 64-bit
 * value that only a read of a freed block reveals). */
void hk_free_marked(hk_slab_t *s, void *p) {
  if (HK_UNLIKELY(HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED)) { hk_free_invalid(p, s); return; }
  bool owner = hk_slab_owner(s) == hk_thread_id();
  if (!owner || hk_heap_block_is_free(s, (hk_block_t *)p)) {
    hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
    return;
  }
  hk_free_local(s, (hk_block_t *)p);  /* live after all: the mark is in place */
}

void hk_free_remote_checked(hk_slab_t *s, void *p) {
  if (HK_UNLIKELY(HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED)) { hk_free_invalid(p, s); return; }
  if (hk_slab_owner(s) == hk_thread_id()) {  /* the owner's free into its full (or set-aside) slab */
    hk_free_local_aside(s, (hk_block_t *)p);
    return;
  }
  uintptr_t head = atomic_load_explicit(&s->xfree, memory_order_relaxed) & ~(uintptr_t)HK_XF_MASK;
  if (HK_UNLIKELY(head == (uintptr_t)p)) {
    hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
    return;
  }
  if (HK_UNLIKELY(!hk_remote_push(s, (hk_block_t *)p))) hk_heap_notify(s, (hk_block_t *)p);
}

/* the canary measure's halves of malloc and free (alloc.h) */
void *hk_sec_alloc_refill(hk_heap_t *h, unsigned cls, size_t n, unsigned kind) {
  void *b = hk_heap_alloc_slow(h, cls);
  if (b == NULL) return NULL;
  return hk_sec_on_alloc(hk_slab_of(hk_ss_of(b), b), b, n, kind);
}

void hk_sec_free_slow(hk_slab_t *s, void *p, unsigned kind, size_t size, bool owner) {
  if (!hk_sec_free_settle(s, p, kind, size, owner)) return;
  if (!owner) {
    hk_free_remote_checked(s, p);
    return;
  }
  hk_free_local(s, (hk_block_t *)p);
}

void *hk_calloc(size_t count, size_t size) {
  size_t n;
  if (HK_UNLIKELY(__builtin_mul_overflow(count, size, &n))) { errno = ENOMEM; return NULL; }
  if (HK_M_ZERO && n == 0) return hk_zero_alloc();
  if (HK_LIKELY(n <= HK_MID_MAX - HK_PAD)) {
    unsigned cls = hk_class_of(n + HK_PAD);
    void *p = cls >= HK_NCLASS_SMALL ? hk_alloc_mid_class(cls, n, HK_KIND_MALLOC)
                                     : hk_alloc_class(cls, n, HK_KIND_MALLOC);
    if (HK_LIKELY(p != NULL)) memset(p, 0, n);
    return p;
  }
  if (HK_UNLIKELY(n > HK_MAX_ALLOC)) { errno = ENOMEM; return NULL; }
  return hk_large_alloc(n, 0, true, HK_KIND_MALLOC);
}

/* ---- the large tiers' router ----------------------------------------------------
 * A block of more than 32 KiB is a span (large_span.c) when it is one of
 * HK_SPAN_MAX bytes or less, aligned below a chunk: span arenas keep freed
 * pages resident for the next block of any size. Larger ones, chunk
 * alignments, and a span the arenas could not grow for get a mapping of
 * their own (large_huge.c). */
void *hk_large_alloc(size_t size, size_t align, bool zero, unsigned kind) {
  hk_heap_safe_point();  /* what hk_heap_defer asked for (heap.h) */
  if (!hk_large_admit(size, align)) return NULL;
  size_t n = size ? size : 1;
  void *p = NULL;
  if (n <= HK_SPAN_MAX && align < HK_SS_SIZE) p = hk_large_span_alloc(n, align, zero, kind);
  if (p == NULL) p = hk_large_huge_alloc(n, align, zero, kind);
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on)) && p) hk_prof_large(p, size);
  return p;
}

/* ---- the table of block operations (alloc.h), one row per tier -------------- */

static size_t slab_usable(const void *p, unsigned ck) {
  hk_slab_t *s = hk_slab_at(p, hk_chunk_slab_shift(ck));
  if (HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED || !hk_slab_is_block(s, p)) return 0;
  return HK_M_CANARY ? hk_sec_requested(s, p) : s->block_size;
}
static bool slab_owns(const void *p, unsigned ck) {
  hk_slab_t *s = hk_slab_at(p, hk_chunk_slab_shift(ck));
  return HK_LOAD_RELAXED(s->state) != HK_SLAB_UNUSED && hk_slab_is_block(s, p);
}
/* realloc of a freed block is caught by the checks free() makes; the
 * secure build resizes in place within the block */
static bool slab_resize(void *p, unsigned ck, size_t n, void **out) {
  hk_slab_t *s = hk_slab_at(p, hk_chunk_slab_shift(ck));
  const char *why = NULL;
  if (!slab_owns(p, ck)) {
    why = HK_WHY_NOT_LIVE;
  } else {
    uintptr_t xhead = atomic_load_explicit(&s->xfree, memory_order_relaxed) & ~(uintptr_t)HK_XF_MASK;
    bool mine = hk_slab_owner(s) == hk_thread_id();
    /* (not under memcheck: p may be live, and its word must not become
     * inaccessible; the free at the end of the move still finds the mark) */
    bool marked = !HK_M_CANARY && !HK_TRACKING && hk_mark_load((hk_block_t *)p) == hk_free_mark &&
                  (!mine || hk_heap_block_is_free(s, (hk_block_t *)p));
    if (HK_UNLIKELY((mine && (p == (void *)s->local_free || p == (void *)s->free)) ||
                    xhead == (uintptr_t)p || hk_sec_is_free(s, p) || marked))
      why = HK_WHY_DOUBLE_FREE;
  }
  if (HK_UNLIKELY(why != NULL)) {
    hk_report_invalid("realloc", p, why);
    errno = EINVAL;
    *out = NULL;
    return true;
  }
  if (!hk_sec_resize(s, p, n)) return false;
  *out = p;
  return true;
}

static bool span_owns(const void *p, unsigned ck) { return hk_large_span_usable(p, ck) != 0; }
static bool huge_owns(const void *p, unsigned ck) { return hk_large_huge_usable(p, ck) != 0; }

/* realloc of a large block: in place (or moved without a copy) by its
 * tier, else a new block from the router, a copy and the old block freed;
 * into the slab tiers it moves as any block does (false). A first-class
 * heap's block resized in place (or not at all) stays in its heap; one
 * that moved is the calling thread's (heap_api.c). */
typedef void *large_resize_fn(void *p, unsigned ck, size_t n, hk_large_move_t *mv);
static bool large_resize(large_resize_fn *resize, void *p, unsigned ck, size_t n, void **out) {
  if (n <= HK_MID_MAX) return false;
  void *heap = hk_large_heap_forget(p);
  /* a sampled block's sample ends here: moved or resized, it is not followed */
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) hk_prof_forget(p);
  hk_large_move_t mv = {0, 0};
  void *q = resize(p, ck, n, &mv);
  if (q == NULL && mv.copy != 0) {
    q = hk_large_alloc(n, mv.align, false, HK_KIND_MALLOC);
    if (q != NULL) {
      memcpy(q, p, mv.copy);
      hk_tier_of(ck)->free(p, ck, HK_KIND_ANY, 0);
    }
  }
  if (heap && (q == p || q == NULL)) hk_large_heap_keep(p, heap);
  *out = q;
  return true;
}
static bool span_resize(void *p, unsigned ck, size_t n, void **out) {
  return large_resize(hk_large_span_resize, p, ck, n, out);
}
static bool huge_resize(void *p, unsigned ck, size_t n, void **out) {
  return large_resize(hk_large_huge_resize, p, ck, n, out);
}

/* A refused realloc: reported by the tier's free (which says why), EINVAL. */
static bool refuse(void **out) {
  errno = EINVAL;
  *out = NULL;
  return true;
}

static void zero_free(void *p, unsigned ck, unsigned kind, size_t size) {
  (void)ck, (void)kind;
  hk_zero_free("free", p, size);
}
static size_t zero_usable(const void *p, unsigned ck) { (void)p, (void)ck; return 0; }
static bool zero_owns(const void *p, unsigned ck) { (void)ck; return hk_zero_live(p); }
static bool zero_resize(void *p, unsigned ck, size_t n, void **out) {
  (void)ck, (void)n;
  if (hk_zero_live(p)) return false;  /* moves: nothing to copy */
  hk_zero_free("realloc", p, 0);      /* reports why */
  return refuse(out);
}

/* A build without the profiler maps no chunk HK_CHUNK_PROF: this row is
 * then never reached. */
static void prof_free(void *p, unsigned ck, unsigned kind, size_t size) {
  (void)ck, (void)kind, (void)size;
  hk_prof_free("free", p);
}
static size_t prof_usable(const void *p, unsigned ck) { (void)ck; return hk_prof_usable(p); }
static bool prof_owns(const void *p, unsigned ck) { (void)ck; return hk_prof_usable(p) != 0; }
static bool prof_resize(void *p, unsigned ck, size_t n, void **out) {  /* a sampled block moves */
  (void)ck, (void)n;
  if (hk_prof_usable(p) != 0) return false;
  hk_prof_free("realloc", p);  /* reports why */
  return refuse(out);
}

/* The guarded pool (guarded.c): mapped only while sampling is on. */
static void guarded_free(void *p, unsigned ck, unsigned kind, size_t size) {
  (void)ck, (void)kind, (void)size;
  hk_guarded_free("free", p);
}
static size_t guarded_usable(const void *p, unsigned ck) { (void)ck; return hk_guarded_usable(p); }
static bool guarded_owns(const void *p, unsigned ck) { (void)ck; return hk_guarded_usable(p) != 0; }
static bool guarded_resize(void *p, unsigned ck, size_t n, void **out) {  /* a sampled block moves */
  (void)ck, (void)n;
  if (hk_guarded_usable(p) != 0) return false;
  hk_guarded_free("realloc", p);  /* reports why */
  return refuse(out);
}

static void foreign_free(void *p, unsigned ck, unsigned kind, size_t size) {
  (void)ck, (void)kind, (void)size;
  if (p != NULL) hk_report_invalid("free", p, HK_WHY_FOREIGN);
}
static bool foreign_resize(void *p, unsigned ck, size_t n, void **out) {
  (void)ck, (void)n;
  hk_report_invalid("realloc", p, HK_WHY_FOREIGN);
  return refuse(out);
}
/* no bytes of a live block: foreign memory, a zero-size block, a sampled
 * block (the copy checks are in builds without the profiler) */
static bool no_extent(const void *p, unsigned ck, const uint8_t **start, size_t *size) {
  (void)p, (void)ck, (void)start, (void)size;
  return false;
}
static size_t no_usable(const void *p, unsigned ck) { (void)p, (void)ck; return 0; }
static bool no_owns(const void *p, unsigned ck) { (void)p, (void)ck; return false; }

const hk_tier_t hk_tiers[HK_NTIERS] = {
  /* tier             free          usable           owns        resize          extent */
  [HK_TIER_FOREIGN] = { foreign_free, no_usable,       no_owns,    foreign_resize, no_extent },
  /* free: inline in hk_free_other, before the table */
  [HK_TIER_SLAB]    = { NULL,         slab_usable,     slab_owns,  slab_resize,    hk_slab_extent },
  [HK_TIER_SPAN]    = { hk_large_span_free, hk_large_span_usable, span_owns, span_resize, hk_large_span_extent },
  [HK_TIER_HUGE]    = { hk_large_huge_free, hk_large_huge_usable, huge_owns, huge_resize, hk_large_huge_extent },
  [HK_TIER_ZERO]    = { zero_free,    zero_usable,     zero_owns,  zero_resize,    no_extent },
  [HK_TIER_PROF]    = { prof_free,    prof_usable,     prof_owns,  prof_resize,    no_extent },
  [HK_TIER_GUARDED] = { guarded_free, guarded_usable,  guarded_owns, guarded_resize, no_extent },
};

/* Usable size of a live block; 0 for anything else. */
size_t hk_usable(const void *p) {
  unsigned ck = hk_chunk_kind(p);
  return hk_tier_of(ck)->usable(p, ck);
}

bool hk_owns_block(const void *p) {
  unsigned ck = hk_chunk_kind(p);
  return hk_tier_of(ck)->owns(p, ck);
}

void *hk_realloc(void *p, size_t n) {
  if (p == NULL) return hk_malloc_inline(n);
  if (n == 0) { hk_free_inline(p); return NULL; }  /* glibc's behaviour */
  unsigned ck = hk_chunk_kind(p);
  const hk_tier_t *t = hk_tier_of(ck);
  void *q;
  if (t->resize(p, ck, n, &q)) return q;
  size_t have = t->usable(p, ck);
  if (have == 0 && !t->owns(p, ck)) {
    hk_report_invalid("realloc", p, HK_WHY_NOT_LIVE);
    errno = EINVAL;
    return NULL;
  }
  q = hk_malloc_inline(n);
  if (HK_UNLIKELY(q == NULL)) return NULL;
  memcpy(q, p, n < have ? n : have);
  hk_free_inline(p);
  return q;
}

void *hk_aligned(size_t align, size_t n, unsigned kind) {
  if (align <= 16) return hk_malloc_kind(n, kind);
  if (n <= HK_MID_MAX - HK_PAD && align <= HK_SLAB_ALIGN_MAX) {
    /* a class whose size is a multiple of align: slab starts are 4 KiB
     * aligned, so every block of it is aligned */
    size_t m = n + HK_PAD > align ? n + HK_PAD : align;
    for (unsigned cls = hk_class_of(m); cls < HK_NCLASS; cls++)
      if ((hk_class_bytes(cls) & (align - 1)) == 0) return hk_alloc_class(cls, n, kind);
  }
  if (n > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  return hk_large_alloc(n, align, false, kind);
}

#ifdef HK_DEBUG
/* Debug-build heap checks: every block handed out or taken back must be a
 * block boundary inside a live slab of the right class, and not already on
 * the owner's free lists (a bounded scan catches immediate double frees). */
void hk_debug_check_alloc(void *p, unsigned cls) {
  hk_slab_t *s = hk_slab_of(hk_ss_of(p), p);
  HK_ASSERT(hk_chunk_is_ss(hk_chunk_kind(p)));
  HK_ASSERT(s->cls == cls && HK_LOAD_RELAXED(s->state) != HK_SLAB_UNUSED);
  HK_ASSERT(hk_owns_block(p));
  HK_ASSERT(s->used <= s->capacity);
}

void hk_debug_check_free(void *p, hk_slab_t *s) {
  if (!hk_owns_block(p)) { hk_report_invalid("free", p, HK_WHY_NOT_LIVE); return; }
  if (hk_slab_owner(s) != hk_thread_id()) return;
  unsigned n = 0;
  for (hk_block_t *b = s->local_free; b && n < 64; b = hk_block_next(s, b), n++)
    if (b == p) hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
  n = 0;
  for (hk_block_t *b = s->free; b && n < 64; b = hk_block_next(s, b), n++)
    if (b == p) hk_report_invalid("free", p, HK_WHY_DOUBLE_FREE);
}
#endif

/* ---- hakmem.h ----------------------------------------------------------------- */

HK_EXPORT void *hak_malloc(size_t size) { return hk_malloc_inline(size); }
HK_EXPORT void hak_free(void *ptr) { hk_free_inline(ptr); }
HK_EXPORT void *hak_calloc(size_t count, size_t size) { return hk_calloc(count, size); }
HK_EXPORT void *hak_realloc(void *ptr, size_t size) { return hk_realloc(ptr, size); }
HK_EXPORT size_t hak_usable_size(const void *ptr) { return hk_usable(ptr); }

HK_EXPORT void *hak_aligned_alloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) { errno = EINVAL; return NULL; }
  return hk_aligned(alignment, size, HK_KIND_MALLOC);
}

HK_EXPORT const char *hak_version(void) { return HK_VERSION_STRING; }

HK_EXPORT int hak_owns(const void *ptr) { return hk_owns_block(ptr) ? 1 : 0; }
