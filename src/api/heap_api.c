/* First-class heaps (hakmem.h, hak_heap_*): a heap the program creates,
 * allocates from by name and destroys with every block still in it.
 *
 * A first-class heap is a heap struct of the registry (heap.h) that no
 * thread owns: its owner id is its own address, which no thread's id can
 * be. So every free of one of its blocks, by any thread, creator included,
 * is a remote free (remote.h, the delayed list), and plain free() needs no
 * test for heaps. The hak_heap_* calls take the heap's lock and then act as
 * the heap's owner: they collect those frees in the slow path as a thread
 * does. The lock lets any thread allocate from any heap; its cost is an
 * uncontended lock and unlock per call (the ordinary malloc takes none).
 *
 * Large blocks (> 32 KiB) have no slab to say which heap they are in: a
 * table maps each live one to its heap. The large tier tells us when one is
 * freed or moved (hk_large_set_heap_hooks), so that destroy frees only
 * blocks still live and still the heap's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "../include/hakmem.h"
#include "api/alloc.h"
#include "heap/heap.h"
#include "heap/heap_slabs.h"
#include "mem/large.h"
#include "base/dlist.h"
#include "base/libc.h"  /* calloc's zeroing and realloc's copy: glibc's, unchecked */
#include "api/init.h"
#include "base/lock.h"
#include "pal/os.h"
#include "mem/zero.h"
#include "policy/bg.h"

struct hak_heap {
  hk_heap_t *heap;
  hk_lock_t lock;                  /* every hak_heap_* call on it          */
  struct hak_heap *next, *prev;    /* all heaps (fork takes every lock)    */
  size_t large_blocks, large_bytes;  /* under table_lock                   */
};

/* every heap, for fork; taken before a heap's lock, never after */
static hk_lock_t heaps_lock = HK_LOCK_INIT;
static struct hak_heap *heaps_head;

/* ---- the table of large blocks: block address -> its heap ----------------
 * Open addressing, linear probing, deletion by backward shift; grown to
 * keep it at most half full. Mapped from the OS: it is reached from free(),
 * where malloc must not be called again. */
typedef struct { void *p; struct hak_heap *heap; size_t bytes; } large_entry_t;
static hk_lock_t table_lock = HK_LOCK_INIT;
static large_entry_t *table;
static size_t table_cap, table_count;  /* cap: a power of two, or 0 */

static size_t slot_of(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 20) & (cap - 1);
}

static void table_put(large_entry_t e) {  /* room is there */
  size_t i = slot_of(e.p, table_cap);
  while (table[i].p != NULL) i = (i + 1) & (table_cap - 1);
  table[i] = e;
  table_count++;
}

static bool table_grow(void) {  /* (table_lock held) */
  size_t cap = table_cap ? table_cap * 2 : 1024;
  size_t bytes = hk_align_up(cap * sizeof(large_entry_t), HK_PAGE);
  large_entry_t *t = hk_os_map_aligned(bytes, HK_PAGE);  /* zeroed */
  if (!t) return false;
  large_entry_t *old = table;
  size_t old_cap = table_cap;
  table = t, table_cap = cap, table_count = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].p) table_put(old[i]);
  if (old) hk_os_unmap(old, hk_align_up(old_cap * sizeof(large_entry_t), HK_PAGE));
  return true;
}

static bool table_add(void *p, struct hak_heap *w, size_t bytes) {  /* (table_lock held) */
  if ((table_count + 1) * 2 > table_cap && !table_grow()) return false;
  table_put((large_entry_t){ p, w, bytes });
  w->large_blocks++;
  w->large_bytes += bytes;
  return true;
}

/* removes p's entry; its heap, or NULL when p is none of theirs */
static struct hak_heap *table_remove(const void *p) {  /* (table_lock held) */
  if (table_cap == 0) return NULL;
  size_t mask = table_cap - 1, i = slot_of(p, table_cap);
  while (table[i].p != p) {
    if (table[i].p == NULL) return NULL;
    i = (i + 1) & mask;
  }
  struct hak_heap *w = table[i].heap;
  w->large_blocks--;
  w->large_bytes -= table[i].bytes;
  table_count--;
  /* backward shift: later entries of the run move up unless their home
   * slot lies in (i, j] */
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (table[j].p == NULL) break;
    size_t home = slot_of(table[j].p, table_cap);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      table[i] = table[j];
      i = j;
    }
  }
  table[i].p = NULL;
  return w;
}

/* The large tier's hooks: p is freed or resized (forget, before it is
 * gone: its address cannot be handed out meanwhile), then stays where it
 * was (keep: resized in place, or the resize failed). */
static void *large_forget(void *p) {
  hk_lock(&table_lock);
  struct hak_heap *w = table_remove(p);
  hk_unlock(&table_lock);
  return w;
}
static void large_keep(void *p, void *tag) {
  hk_lock(&table_lock);
  table_add(p, tag, hk_usable(p));  /* cannot fail: an entry was just removed */
  hk_unlock(&table_lock);
}

/* ---- fork: no call is halfway when fork() copies the process -------------- */

static void fork_prepare(void) {
  hk_lock(&heaps_lock);
  for (struct hak_heap *w = heaps_head; w; w = w->next) hk_lock(&w->lock);
  hk_lock(&table_lock);
}
static void fork_parent(void) {
  hk_unlock(&table_lock);
  for (struct hak_heap *w = heaps_head; w; w = w->next) hk_unlock(&w->lock);
  hk_unlock(&heaps_lock);
}
static void fork_child(void) {  /* heap.c's fork handler kept the heaps */
  hk_lock_reset(&table_lock);
  for (struct hak_heap *w = heaps_head; w; w = w->next) hk_lock_reset(&w->lock);
  hk_lock_reset(&heaps_lock);
}

/* HAKMEM_PARK_IDLE (the purge thread's tick, bg.c): each first-class
 * heap whose lock is free, the pages of its idle slabs parked under the
 * lock (hk_heap_park_api). A heap in a call is passed over; the lock is
 * only tried, after heaps_lock as everywhere. */
static size_t park_idle_heaps(void) {
  size_t bytes = 0;
  hk_lock(&heaps_lock);
  for (struct hak_heap *w = heaps_head; w; w = w->next) {
    if (!hk_trylock(&w->lock)) continue;
    bytes += hk_heap_park_api(w->heap);
    hk_unlock(&w->lock);
  }
  hk_unlock(&heaps_lock);
  return bytes;
}

/* Once, at the first heap: the large tier's hooks and the fork handlers,
 * registered after init.c's, so ours prepare first and take the heaps'
 * locks before the registry's and the span tier's, the order a call on a
 * heap takes them in. init.c's are registered on demand (base/lock.h):
 * here, at once, whatever the threads, and even before init.c's
 * constructor (a library's constructor may make a heap first). */
static void start(void) {
  hk_large_set_heap_hooks(large_forget, large_keep);
  hk_bg_set_api_park(park_idle_heaps);
  hk_init_arm_fork();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- the calls ------------------------------------------------------------ */

HK_EXPORT hak_heap_t *hak_heap_new(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start);
  struct hak_heap *w = hk_malloc_inline(sizeof *w);
  if (!w) return NULL;
  memset(w, 0, sizeof *w);
  hk_heap_t *h = hk_heap_new();
  if (!h) {
    hk_free_inline(w);
    errno = ENOMEM;
    return NULL;
  }
  h->tid = (uintptr_t)h | HK_OWNER_API;  /* no thread's id */
  h->api = true;
  w->heap = h;
  hk_lock(&heaps_lock);
  HK_DL_PUSH(heaps_head, w, next, prev);
  hk_unlock(&heaps_lock);
  return w;
}

/* (w->lock held) */
/* A small or mid block from the heap's current slab of its class. */
HK_INLINE void *heap_pop(struct hak_heap *w, size_t n) {
  unsigned cls = hk_class_of(n + HK_PAD);
  hk_heap_t *h = w->heap;
  return hk_alloc_from(h, h->cur[cls], cls, n, HK_KIND_MALLOC);
}

/* A large block p of the first-class heap w: entered in the table of
 * large blocks, or freed (ENOMEM) when the table cannot grow. */
static void *large_enter(struct hak_heap *w, void *p) {
  if (!p) return NULL;
  hk_lock(&table_lock);
  bool ok = table_add(p, w, hk_usable(p));
  hk_unlock(&table_lock);
  if (ok) return p;
  hk_free_other(p, HK_KIND_ANY, 0);
  errno = ENOMEM;
  return NULL;
}

static void *heap_alloc(struct hak_heap *w, size_t n, bool zero) {
  if (HK_M_ZERO && n == 0) return hk_zero_alloc();
  if (n <= HK_MID_MAX - HK_PAD) {
    void *p = heap_pop(w, n);
    if (zero && p) memset(p, 0, n);
    return p;
  }
  if (n > HK_MAX_ALLOC) { errno = ENOMEM; return NULL; }
  return large_enter(w, hk_large_alloc(n, 0, zero, HK_KIND_MALLOC));
}

/* hak_heap_malloc's rest, out of line: a block that is not small, or a
 * class whose current slab ran dry (w->lock held; released here) ... */
static HK_NOINLINE void *heap_malloc_locked(struct hak_heap *w, size_t n) {
  void *p = hk_is_small_request(n) ? heap_pop(w, n) : heap_alloc(w, n, false);
  hk_unlock(&w->lock);
  return p;
}
/* ... or the lock not taken at once (contended, or the fork handlers not
 * registered yet) */
static HK_NOINLINE void *heap_malloc_slow(struct hak_heap *w, size_t n) {
  hk_lock(&w->lock);
  return heap_malloc_locked(w, n);
}

/* A small block inline, as malloc's fast path pops one (the heap's slab
 * for the size, by direct[]): a leaf with no frame, the rest reached by a
 * tail call, since an arena program allocates block after block through
 * it. Its lock is most of what it costs beyond malloc's pop
 * (docs/BENCHMARKS.md, "Paired classes, the arena rows"). */
HK_EXPORT void *hak_heap_malloc(hak_heap_t *w, size_t n) {
  if (!w) return hk_malloc_inline(n);
  if (HK_LIKELY(hk_is_small_request(n)) && hk_lock_quick(&w->lock)) {
    hk_heap_t *h = w->heap;
    hk_slab_t *s = h->direct[n];
    if (HK_LIKELY(s->free != NULL)) {
      void *p = hk_alloc_from(h, s, s->cls, n, HK_KIND_MALLOC);
      hk_unlock(&w->lock);
      return p;
    }
    return heap_malloc_locked(w, n);
  }
  return heap_malloc_slow(w, n);
}

HK_EXPORT void *hak_heap_calloc(hak_heap_t *w, size_t count, size_t size) {
  if (!w) return hk_calloc(count, size);
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) { errno = ENOMEM; return NULL; }
  hk_lock(&w->lock);
  void *p = heap_alloc(w, n, true);
  hk_unlock(&w->lock);
  return p;
}

HK_EXPORT void *hak_heap_aligned_alloc(hak_heap_t *w, size_t align, size_t n) {
  if (align == 0 || (align & (align - 1)) != 0) { errno = EINVAL; return NULL; }
  if (!w) return hk_aligned(align, n, HK_KIND_MALLOC);
  if (align <= 16) return hak_heap_malloc(w, n);
  void *p = NULL;
  hk_lock(&w->lock);
  if (n <= HK_MID_MAX - HK_PAD && align <= HK_SLAB_ALIGN_MAX) {
    /* a class whose size is a multiple of align: every block of it is
     * aligned (slab starts are page aligned) */
    size_t m = n + HK_PAD > align ? n + HK_PAD : align;
    hk_heap_t *h = w->heap;
    for (unsigned cls = hk_class_of(m); cls < HK_NCLASS; cls++)
      if ((hk_class_bytes(cls) & (align - 1)) == 0) {
        p = hk_alloc_from(h, h->cur[cls], cls, n, HK_KIND_MALLOC);
        goto out;
      }
  }
  if (n > HK_MAX_ALLOC) { errno = ENOMEM; goto out; }
  p = large_enter(w, hk_large_alloc(n, align, false, HK_KIND_MALLOC));
out:
  hk_unlock(&w->lock);
  return p;
}

/* In place while the block is big enough and not twice too big; else a
 * new block of the heap, the contents copied, the old one freed. (The
 * secure build keeps its trailer where the request ended: it moves.) */
HK_EXPORT void *hak_heap_realloc(hak_heap_t *w, void *p, size_t n) {
  if (!w) return hk_realloc(p, n);
  if (p == NULL) return hak_heap_malloc(w, n);
  if (n == 0) { hk_free_inline(p); return NULL; }  /* as realloc() */
  size_t have = hk_usable(p);
  if (have == 0 && !hk_owns_block(p)) {
    hk_report_invalid("realloc", p, HK_WHY_NOT_LIVE);
    errno = EINVAL;
    return NULL;
  }
  if (!HK_M_CANARY && !HK_LARGE_REQUESTED && n <= have && n >= have / 2) return p;
  void *q = hak_heap_malloc(w, n);
  if (q == NULL) return NULL;
  memcpy(q, p, n < have ? n : have);
  hk_free_inline(p);
  return q;
}

/* Every slab of h back to its superslab and every superslab to the cache,
 * whatever blocks are out (h->lock and the heap's bg_lock held). */
static void release_slabs(hk_heap_t *h) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_heap_set_cur(h, c, &hk_slab_empty);
    h->partial[c] = h->partial_tail[c] = NULL;
  }
  atomic_store_explicit(&h->delayed, NULL, memory_order_relaxed);
  memset(h->midc_n, 0, sizeof h->midc_n);
  memset(h->midc_head, 0, sizeof h->midc_head);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_full[k], &h->ss_avail[k] };
    for (int l = 0; l < 2; l++) {
      hk_superslab_t *ss;
      while ((ss = lists[l]->head) != NULL) {
        for (unsigned i = 0; i < ss->nslabs; i++)
          if (!(ss->free_mask & (1u << i))) hk_heap_release_slab(h, &ss->slabs[i], false);
        /* (a full one moved itself onto the avail list meanwhile) */
        hk_ss_list_remove(&h->ss_avail[k], ss);
        hk_ss_release(ss);
      }
    }
  }
}

/* The heap's large blocks, still live: out of the table into out[] (at
 * most max); their count. (table_lock held) */
static size_t take_large(struct hak_heap *w, void **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < table_cap && n < max; i++)
    if (table[i].p && table[i].heap == w) out[n++] = table[i].p;
  for (size_t k = 0; k < n; k++) table_remove(out[k]);
  return n;
}

HK_EXPORT void hak_heap_destroy(hak_heap_t *w) {
  if (!w) return;
  hk_lock(&heaps_lock);  /* off the list first: fork no longer sees it */
  HK_DL_UNLINK(heaps_head, w, next, prev);
  hk_unlock(&heaps_lock);
  hk_lock(&w->lock);
  /* the large blocks: no one adds to them while we hold the lock */
  hk_lock(&table_lock);
  size_t want = w->large_blocks;
  hk_unlock(&table_lock);
  while (want) {
    size_t bytes = hk_align_up(want * sizeof(void *), HK_PAGE);
    void **list = hk_os_map_aligned(bytes, HK_PAGE);
    if (!list) break;  /* (out of memory: they stay, as the program's) */
    hk_lock(&table_lock);
    size_t n = take_large(w, list, want);
    want = w->large_blocks;
    hk_unlock(&table_lock);
    for (size_t i = 0; i < n; i++) hk_free_other(list[i], HK_KIND_ANY, 0);
    hk_os_unmap(list, bytes);
  }
  hk_heap_t *h = w->heap;
  hk_heap_enter(h);
  release_slabs(h);
  hk_heap_leave(h);
  hk_heap_retire(h);
  hk_unlock(&w->lock);
  hk_free_inline(w);
}

HK_EXPORT int hak_heap_stats(hak_heap_t *w, struct hak_heap_stats *out) {
  if (!w || !out) { errno = EINVAL; return -1; }
  uint64_t blocks = 0, bytes = 0;
  hk_lock(&w->lock);
  hk_heap_t *h = w->heap;
  hk_heap_enter(h);
  /* every free that reached the heap, counted off its slabs */
  hk_heap_drain_delayed(h);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *ss = lists[l]->head; ss; ss = ss->next)
        for (unsigned i = 0; i < ss->nslabs; i++) {
          if (ss->free_mask & (1u << i)) continue;
          hk_slab_t *s = &ss->slabs[i];
          /* (a full slab whose frees are collected here goes back on its
           * partial list, as the delayed list's drain would do) */
          if (hk_slab_collect_remote(s) && s->state == HK_SLAB_FULL) {
            hk_slab_cancel_notify(s);
            hk_partial_push(h, s);
          }
          unsigned live = hk_slab_live(s);
          blocks += live;
          bytes += (uint64_t)live * (hk_class_bytes(s->cls) - HK_PAD);
        }
  }
  hk_heap_leave(h);
  hk_lock(&table_lock);
  blocks += w->large_blocks;
  bytes += w->large_bytes;
  hk_unlock(&table_lock);
  hk_unlock(&w->lock);
  out->blocks = blocks;
  out->bytes = bytes;
  return 0;
}
