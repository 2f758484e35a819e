/* A heap's slabs and superslabs (heap_slabs.h): lists, fresh and emptied
 * slabs, adoption, the delayed list, the purge of one heap, the hand-over
 * at thread exit. */
#include "heap/heap_slabs.h"

#include <stdatomic.h>
#include <string.h>

#include "base/gate.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "mem/remote.h"
#include "mem/secure.h"
#include "mem/slab_park.h"

/* ---- emptied slabs ------------------------------------------------------------ */

/* Every slab of ss is back: keep one spare per kind, give the rest to the
 * global cache. True when ss left the heap: it may be unmapped already,
 * never touch it. */
static bool heap_ss_empty(hk_heap_t *h, hk_superslab_t *ss) {
  hk_ss_list_t *avail = &h->ss_avail[ss->kind];
  if (h->keep_empty || (long)avail->count <= hk_mem_scale_cap(HK_LOAD_RELAXED(hk_knobs.heap_spare))) return false;  /* the spares */
  hk_ss_list_remove(avail, ss);
  hk_ss_release(ss);
  return true;
}

bool hk_heap_release_slab(hk_heap_t *h, hk_slab_t *s, bool may_leave) {
  hk_superslab_t *ss = hk_slab_ss(s);
  hk_slab_cancel_notify(s);
  bool was_full = ss->free_mask == 0;
  hk_ss_slab_unuse(ss, s);
  if (was_full) {
    hk_ss_list_remove(&h->ss_full[ss->kind], ss);
    hk_ss_list_push(&h->ss_avail[ss->kind], ss, HK_LIST_AVAIL);
  }
  return may_leave && ss->nused == 0 && heap_ss_empty(h, ss);
}

/* An emptied slab stays on its class's partial list until the next purge
 * epoch: a class that empties and refills slabs reuses the same blocks and
 * pages, instead of handing the slab to another class whose blocks would
 * touch its other pages. The blocks other threads freed into a partial
 * slab come home first: a remote free into a slab that is not full only
 * joins its remote list, read when the class refills from that slab, so
 * a class the owner no longer used kept the slabs a consumer thread
 * emptied for as long as the owner ran (purge/remote_active). The list's
 * head shares the cache line of the walk's link. */
unsigned hk_heap_release_empty(hk_heap_t *h) {
  unsigned n = 0;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->partial[c];
    while (s) {
      hk_slab_t *next = s->next;
      hk_heap_collect_remote(h, s);
      if (s->used == 0) {
        hk_partial_remove(h, s);
        hk_heap_release_slab(h, s, true);
        n++;
      }
      s = next;
    }
  }
  return n;
}

/* Class lists in order of live blocks, most first (stable): with parked
 * pages (lowmem), a class whose current slab runs dry looks at the first
 * few for the fullest (refill.c, heap_pick_partial), so that its blocks go
 * where most are live and the sparse slabs drain, to be parked and given
 * back. Left in the order slabs ran dry, the first few were as sparse as
 * any after an LRU cache moved to larger values: its peak (docs/BENCHMARKS.md,
 * "The partial lists in order"). A merge sort of each list, no allocation. */
static hk_slab_t *merge_by_live(hk_slab_t *a, hk_slab_t *b) {
  hk_slab_t head, *t = &head;
  while (a && b) {
    if (hk_slab_live(b) > hk_slab_live(a)) { t->next = b; b = b->next; }
    else { t->next = a; a = a->next; }
    t = t->next;
  }
  t->next = a ? a : b;
  return head.next;
}

void hk_heap_sort_partial(hk_heap_t *h, uint64_t now) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *list = h->partial[c];
    /* one walk: the list's length, and its live blocks and room for a mid
     * class's sparse mark (heap.h: many partial slabs, mostly free) */
    unsigned n = 0;
    size_t live = 0, room = 0;
    for (const hk_slab_t *s = list; s; s = s->next, n++) {
      live += hk_slab_live(s);
      room += s->capacity;
    }
    if (c >= HK_NCLASS_SMALL && !h->api)
      hk_midc_note_sparse(c - HK_NCLASS_SMALL, n >= HK_SPARSE_SLABS && live * HK_SPARSE_SHARE < room, now);
    if (n <= HK_REUSE_SCAN_FULLEST) continue;  /* a list the swap sees whole is left as it is */
    /* bottom-up: runs of 1, 2, 4 ... merged; `parts` holds the run of each size so far */
    hk_slab_t *parts[32] = { 0 };
    while (list) {
      hk_slab_t *run = list;
      list = list->next;
      run->next = NULL;
      unsigned k = 0;
      for (; k < 31 && parts[k]; k++) {
        run = merge_by_live(parts[k], run);
        parts[k] = NULL;
      }
      parts[k] = run;
    }
    hk_slab_t *all = NULL;
    for (unsigned k = 0; k < 32; k++)
      if (parts[k]) all = merge_by_live(parts[k], all);
    /* the links back */
    hk_slab_t *prev = NULL;
    h->partial[c] = all;
    for (hk_slab_t *s = all; s; prev = s, s = s->next) s->prev = prev;
    h->partial_tail[c] = prev;
  }
}

/* ---- frees into full slabs --------------------------------------------------- */

/* Owner freed into s (already on local_free) while s was full. (An emptied
 * slab stays put: hk_heap_release_empty.) */
static void heap_local_slow(hk_heap_t *h, hk_slab_t *s) {
  if (s->state == HK_SLAB_FULL) {
    hk_slab_cancel_notify(s);
    hk_partial_push(h, s);
  }
}

void hk_heap_free_local_slow(hk_slab_t *s) {
  hk_heap_t *h = hk_tls_heap;
  hk_heap_enter(h);
  heap_local_slow(h, s);
  hk_heap_leave(h);
}

/* ---- the mid pool (heap_slabs.h) -------------------------------------------- */

HK_BSS_ARRAY hk_midp_t hk_midp[HK_NCLASS_MID];
HK_BSS_ARRAY hk_block_t *hk_midp_slots[HK_NCLASS_MID][HK_MIDP_SLOTS];
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(hk_midp, sizeof hk_midp, HK_LOCK_MID_POOL);
}

bool hk_heap_midp_put(unsigned i, hk_block_t *b) {
  hk_midp_t *p = &hk_midp[i];
  hk_lock(&p->lock);
  if (p->cap == 0) {
    size_t c = HK_MIDP_BYTES / hk_class_bytes(HK_NCLASS_SMALL + i);
    p->cap = c < HK_MIDP_SLOTS ? (unsigned)c : HK_MIDP_SLOTS;
  }
  unsigned n = p->n;
  bool ok = n < p->cap;
  if (ok) {
    hk_midp_slots[i][n] = b;
    HK_STORE_RELAXED(p->n, n + 1);  /* malloc's look at n takes no lock */
  }
  hk_unlock(&p->lock);
  return ok;
}

unsigned hk_heap_midp_refill(hk_heap_t *h, unsigned i) {
  HK_ASSERT(HK_MIDC_SHARED && h->midc_n[i] == 0);  /* an empty stack, from its bottom */
  hk_midp_t *p = &hk_midp[i];
  unsigned want = HK_LOAD_RACY(hk_midc_cap[i]) / 2 + 1, k = 0;
  hk_lock(&p->lock);
  unsigned n = p->n;
  while (k < want && n) h->midc[i][k++] = hk_midp_slots[i][--n];
  HK_STORE_RELAXED(p->n, n);
  if (k) p->taken = true;
  hk_unlock(&p->lock);
  h->midc_n[i] = (uint8_t)k;
  return k;
}

static void midp_return(hk_block_t *b) {
  hk_slab_t *s = hk_slab_of(hk_ss_of(b), b);
  if (!hk_remote_push(s, b)) hk_heap_notify(s, b);
}

static uint64_t midp_gate;  /* base/gate.h */

void hk_heap_midp_drain(bool force) {
  if (!force) {  /* one look a purge delay, whichever heap's clock calls */
    uint64_t now = hk_os_now_ms();
    if (!hk_gate_due(&midp_gate, now) || !hk_gate_pass(&midp_gate, now, (uint64_t)hk_ss_purge_delay_ms())) return;
  }
  /* the blocks go back under the pool's lock: a remote push is a CAS or
   * two, and a copy of the pool first would be a memcpy call (layers:
   * copy_check.c's memcpy in the builds with measure copy) */
  for (unsigned i = 0; i < HK_NCLASS_MID; i++) {
    hk_midp_t *p = &hk_midp[i];
    if (HK_LOAD_RACY(p->n) == 0) continue;
    hk_lock(&p->lock);
    if (force || !p->taken) {
      for (unsigned n = p->n; n > 0;) midp_return(hk_midp_slots[i][--n]);
      HK_STORE_RELAXED(p->n, 0u);
    }
    p->taken = false;
    hk_unlock(&p->lock);
  }
}

void hk_heap_midp_fork_prepare(void) {
  for (unsigned i = 0; i < HK_NCLASS_MID; i++) hk_lock(&hk_midp[i].lock);
}
void hk_heap_midp_fork_parent(void) {
  for (unsigned i = HK_NCLASS_MID; i-- > 0;) hk_unlock(&hk_midp[i].lock);
}
/* the child keeps the pooled blocks: they stay out in their slabs, which
 * the adopter of a forked superslab rebuilds around them */
void hk_heap_midp_fork_child(void) {
  for (unsigned i = 0; i < HK_NCLASS_MID; i++) hk_lock_reset(&hk_midp[i].lock);
}

/* ---- the mid cache (heap.h) ------------------------------------------------- */

/* Every block of stack i goes back to its slab. The stack is emptied
 * first (the blocks copied out, the count set), then the blocks pushed:
 * fork() stopping the owner halfway loses blocks (a leak), or lists one in
 * two places, which the fork child's rebuild merges (hk_heap_fork_child). */
static void midc_drop(hk_heap_t *h, unsigned i, unsigned keep) {
  hk_block_t *out[HK_MIDC_SLOTS];
  unsigned n = h->midc_n[i] < HK_MIDC_SLOTS ? h->midc_n[i] : HK_MIDC_SLOTS;
  if (n <= keep) return;
  n -= keep;  /* the oldest go; a queue's newest `keep` stay */
  for (unsigned k = 0; k < n; k++) out[k] = *hk_midc_slot(h, i, k);
  h->midc_head[i] = keep ? (uint8_t)((h->midc_head[i] + n) & (HK_MIDC_SLOTS - 1)) : 0;
  h->midc_n[i] = (uint8_t)keep;
  for (unsigned k = 0; k < n; k++) {
    hk_block_t *b = out[k];
    hk_slab_t *s = hk_slab_of(hk_ss_of(b), b);
    if (hk_slab_owner(s) != h->tid) {  /* another owner's block: a remote free */
      HK_ASSERT(HK_MIDC_SHARED);  /* else only the owner's frees are cached */
      if (hk_heap_midp_wants(s) && hk_heap_midp_put(i, b)) continue;
      if (!hk_remote_push(s, b)) hk_heap_notify(s, b);
      continue;
    }
    hk_slab_push_owner(s, b);
    if (s->state == HK_SLAB_FULL) heap_local_slow(h, s);
  }
}

void hk_heap_aside_current(hk_heap_t *h) {
  if (h == &hk_heap_empty) return;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->cur[c];
    if (s != &hk_slab_empty) hk_slab_set_aside(s);
  }
}

void hk_heap_midc_flush(hk_heap_t *h, bool hold) {
  if (!HK_MIDC_ON || h == &hk_heap_empty) return;
  hk_heap_enter(h);
  for (unsigned i = 0; i < HK_NCLASS_MID; i++)
    if (h->midc_n[i]) midc_drop(h, i, hold ? HK_MIDC_HOLD : 0);
  hk_heap_leave(h);
}

void hk_heap_midc_tick(hk_heap_t *h) {
  uint64_t now = hk_os_now_ms();
  if (!hk_gate_due(&h->next_purge_ms, now)) return;
  hk_heap_enter(h);
  if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) hk_heap_drain_delayed(h);
  hk_heap_purge_now(h, now);
  hk_heap_leave(h);
}

static void heap_push_delayed(hk_heap_t *h, hk_block_t *b) {
  hk_block_t *head = atomic_load_explicit(&h->delayed, memory_order_relaxed);
  do {
    hk_gblock_set_next(b, head);
  } while (!atomic_compare_exchange_weak_explicit(&h->delayed, &head, b, memory_order_release,
                                                  memory_order_relaxed));
}

/* A remote free into a full slab whose owner asked to hear of it
 * (hk_remote_push said so): the block goes to the owner heap's delayed
 * list, which the owner drains in its slow path, bringing the slab back. */
void hk_heap_notify(hk_slab_t *s, hk_block_t *b) {
  hk_heap_t *h = HK_LOAD_ACQUIRE(hk_slab_ss(s)->heap);
  if (HK_LIKELY(h != NULL)) heap_push_delayed(h, b);
  hk_remote_notified(s, b, h != NULL);
}

void hk_heap_drain_delayed(hk_heap_t *h) {
  hk_block_t *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
  while (b) {
    hk_block_t *next = hk_gblock_next(b);
    hk_slab_t *s = hk_slab_of(hk_ss_of(b), b);
    HK_ASSERT(hk_slab_owner(s) == h->tid);
    if (HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls]++;
    hk_sec_on_collected(s, b);
    hk_slab_push_owner(s, b);
    if (s->state == HK_SLAB_FULL) heap_local_slow(h, s);
    b = next;
  }
}

typedef struct { unsigned i; const hk_block_t *b; bool found; } midc_find_t;

static void midc_find_in(hk_heap_t *h, void *arg) {
  midc_find_t *f = arg;
  unsigned n = HK_LOAD_RACY(h->midc_n[f->i]);
  unsigned head = HK_MIDC_FIFO ? HK_LOAD_RACY(h->midc_head[f->i]) : 0;
  for (unsigned k = 0; k < n && k < HK_MIDC_SLOTS && !f->found; k++)
    f->found = HK_LOAD_RACY(h->midc[f->i][(head + k) & (HK_MIDC_SLOTS - 1)]) == f->b;
}

bool hk_heap_block_is_free(hk_slab_t *s, const hk_block_t *b) {
  hk_heap_t *h = hk_tls_heap;
  HK_ASSERT(hk_slab_owner(s) == hk_thread_id());
  /* other threads' stacks and the pool first: a block they flush meanwhile lands on
   * s's remote list or our delayed list, both looked at after */
  if (HK_MIDC_ON && s->cls >= HK_NCLASS_SMALL) {
    midc_find_t f = { s->cls - HK_NCLASS_SMALL, b, false };
    hk_heap_each_other(midc_find_in, &f);
    if (f.found) return true;
    hk_midp_t *p = &hk_midp[f.i];
    bool found = false;
    hk_lock(&p->lock);
    for (unsigned k = 0; k < p->n && !found; k++) found = hk_midp_slots[f.i][k] == b;
    hk_unlock(&p->lock);
    if (found) return true;
  }
  if (hk_slab_holds_free(s, b)) return true;
  if (HK_MIDC_ON && s->cls >= HK_NCLASS_SMALL) {
    unsigned i = s->cls - HK_NCLASS_SMALL;
    for (unsigned k = 0; k < h->midc_n[i]; k++)
      if (*hk_midc_slot(h, i, k) == b) return true;
  }
  /* only the owner takes the delayed list; others push in front of it */
  for (const hk_block_t *d = atomic_load_explicit(&h->delayed, memory_order_acquire); d; d = hk_gblock_next(d))
    if (d == b) return true;
  return false;
}

/* ---- returned slabs (the purge thread, the owner stopped) ------------------------ */

/* The blocks on s's remote list, up to limit + 1 (a longer list, or a
 * broken one, is not all of s's blocks). */
static unsigned xfree_count(const hk_slab_t *s, unsigned limit) {
  unsigned n = 0;
  for (const hk_block_t *b = HK_XF_LIST(atomic_load_explicit(&s->xfree, memory_order_acquire)); b && n <= limit;
       b = hk_block_next(s, b))
    n++;
  return n;
}

/* c's superslab holding b: its index in c, or -1 */
static int chunk_index(const hk_ret_chunk_t *c, const hk_block_t *b) {
  const hk_superslab_t *ss = hk_ss_of(b);
  for (unsigned j = 0; j < c->n; j++)
    if (c->ss[j] == ss) return (int)j;
  return -1;
}

bool hk_heap_returned_hint(hk_heap_t *h) {
  if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) return true;
  for (unsigned c = 0; c < HK_NCLASS; c++)
    for (hk_slab_t *sl = HK_LOAD_RACY(h->partial[c]); sl; sl = HK_LOAD_RACY(sl->next))
      if (HK_XF_LIST(atomic_load_explicit(&sl->xfree, memory_order_relaxed))) return true;
  return false;
}

bool hk_heap_returned_look(hk_heap_t *h, hk_ret_chunk_t *c) {
  uint16_t delayed[HK_RET_CHUNK][32];
  memset(delayed, 0, sizeof delayed);
  /* only the owner takes the delayed list (stopped), others push in front:
   * what follows the head read here stays put */
  unsigned nd = 0;
  for (const hk_block_t *d = atomic_load_explicit(&h->delayed, memory_order_acquire); d && nd < (1u << 24);
       d = hk_gblock_next(d), nd++) {
    int j = chunk_index(c, d);
    if (j >= 0) delayed[j][hk_slab_of(c->ss[j], d)->index]++;
  }
  bool any = false;
  for (unsigned j = 0; j < c->n; j++) {
    hk_superslab_t *ss = c->ss[j];
    c->back[j] = 0;
    for (unsigned i = 0; i < ss->nslabs; i++) {
      hk_slab_t *s = &ss->slabs[i];
      if (ss->free_mask & (1u << i) || h->cur[s->cls] == s) continue;
      if (s->state != HK_SLAB_PARTIAL && s->state != HK_SLAB_FULL) continue;
      unsigned out = (unsigned)s->used - s->nparked, back = delayed[j][i];
      if (out == 0) continue;  /* emptied: the purge's other look (bg.c) */
      if (back > out || back + xfree_count(s, out - back) != out) continue;
      if (s->nparked && !hk_slab_parked_clean(s)) continue;
      c->back[j] |= 1u << i;
      any = true;
    }
  }
  return any;
}

void hk_heap_returned_release(hk_heap_t *h, const hk_ret_chunk_t *c) {
  /* their blocks off the delayed list: in front, a push may race
   * (compare-and-swap); further on, nobody else writes the links */
  for (bool again = true; again;) {
    again = false;
    hk_block_t *head = atomic_load_explicit(&h->delayed, memory_order_acquire), *prev = NULL;
    for (hk_block_t *d = head, *next; d; d = next) {
      next = hk_gblock_next(d);
      int j = chunk_index(c, d);
      if (j < 0 || !(c->back[j] >> hk_slab_of(c->ss[j], d)->index & 1)) {
        prev = d;
        continue;
      }
      if (prev) {
        hk_gblock_set_next(prev, next);
      } else if (atomic_compare_exchange_strong_explicit(&h->delayed, &head, next, memory_order_acq_rel,
                                                         memory_order_acquire)) {
        head = next;
      } else {
        again = true;  /* pushed in front meanwhile: from the new head */
        break;
      }
    }
  }
  for (unsigned j = 0; j < c->n; j++)
    for (uint32_t m = c->back[j]; m; m &= m - 1) {
      hk_slab_t *s = &c->ss[j]->slabs[__builtin_ctz(m)];
      hk_slab_take_remote(s);  /* (counted in the look: the slab goes whole) */
      if (HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls] += (uint64_t)s->used - s->nparked;
      s->used = s->nparked;
      if (s->nparked) hk_slab_drop_parked(s);  /* (found clean in the look) */
      if (s->state == HK_SLAB_PARTIAL) hk_partial_remove(h, s);
      hk_heap_release_slab(h, s, false);
    }
}

/* ---- adopting abandoned superslabs, fresh slabs -------------------------------- */

static void heap_adopt(hk_heap_t *h, hk_superslab_t *ss) {
  bool forked = ss->forked;  /* its heap vanished in fork(): rebuild its slabs */
  ss->forked = false;
  HK_STORE_RELEASE(ss->heap, h);
  bool was_full = ss->free_mask == 0;
  hk_ss_list_push(was_full ? &h->ss_full[ss->kind] : &h->ss_avail[ss->kind], ss,
                  was_full ? HK_LIST_FULL : HK_LIST_AVAIL);
  for (unsigned i = 0; i < ss->nslabs; i++) {
    if (ss->free_mask & (1u << i)) continue;
    hk_slab_t *s = &ss->slabs[i];
    HK_STORE_RELAXED(s->owner, h->tid);
    s->next = s->prev = NULL;
    if (forked) hk_slab_rebuild(s);
    hk_heap_collect_remote(h, s);
    if (s->used == 0) {
      hk_heap_slab_state(h, s, HK_SLAB_PARTIAL);  /* so release finds it consistent */
      /* the whole superslab may go to the global cache, which may unmap
       * it at once (a full cache): then it must not be read again */
      if (hk_heap_release_slab(h, s, true)) return;
      continue;
    }
    if (s->free || s->local_free || s->carved < s->capacity || HK_SEC_AGED(s)) {
      hk_partial_push(h, s);
    } else if (hk_slab_want_notify(s)) {
      hk_heap_slab_state(h, s, HK_SLAB_FULL);
    } else {
      hk_slab_collect_remote(s);
      hk_partial_push(h, s);
    }
  }
}

/* The hard limit's relief from a fresh slab (hk_mem_admit): what
 * hak_ctl("purge") gives back from this thread, its emptied and unused
 * slabs, the superslab cache and the large tier's caches. Other threads'
 * heaps are their owners' and the background purge's. */
static void heap_relieve(void *arg) {
  hk_heap_t *h = arg;
  hk_heap_release_empty(h);
  hk_heap_purge_unused(h, true);
  hk_ss_collect(true);
  hk_large_collect(true);
}

/* Which unused slab a class gets. A slab keeps the pages of the largest
 * class it served, until a purge. When threads come and go, one that took
 * an exited thread's superslab from the cache put its classes on the
 * slabs in its own order, and over the rounds every slab came to hold the
 * pages of the largest (test_midcache churn: 8 threads live at once, each
 * with two blocks of every mid class: RSS grew round after round). So a
 * class takes an unused slab that last
 * served it and kept its pages (warm): in the heap's first few superslabs
 * of its kind, else in a cached superslab among the newest (superslab.c,
 * cache_take: its blocks lie where they lay, on pages resident already);
 * else, in the heap's first superslab, a warm slab of another class, else
 * the lowest. Letting a class take the warm slab of the nearest larger
 * class instead of a cached superslab ended higher: every such move sends
 * the larger class elsewhere.
 *
 * Of the warm slabs of other classes, the one whose resident pages
 * (touched: what was carved since it turned warm) hold HK_FIT_BLOCKS of
 * the class's blocks most tightly, else the one with the most: a class
 * that carves past a slab's resident pages faults in new ones while other
 * slabs' pages wait unused, and each slab's resident extent ratchets up to
 * the most any class carved in it (docs/ARCHITECTURE.md, "Thread exit"). */
#define HK_FIT_BLOCKS 4
static bool warm_match(hk_superslab_t *first, unsigned cls, hk_superslab_t **ssp, unsigned *idx) {
  unsigned looked = 0;
  for (hk_superslab_t *t = first; t && looked < 8; t = t->next, looked++) {
    int i = hk_ss_warm_slab(t, cls);
    if (i >= 0) {
      *ssp = t;
      *idx = (unsigned)i;
      return true;
    }
  }
  return false;
}
static unsigned any_slab(const hk_superslab_t *ss, unsigned cls) {
  uint32_t warm = ss->free_mask & ss->warm;
  if (!warm) return (unsigned)__builtin_ctz(ss->free_mask);
  unsigned want = (unsigned)((hk_class_bytes(cls) * HK_FIT_BLOCKS + HK_PAGE - 1) / HK_PAGE);
  int fit = -1, most = -1;
  for (uint32_t m = warm; m; m &= m - 1) {
    unsigned i = (unsigned)__builtin_ctz(m), t = ss->touched[i];
    if (t >= want && (fit < 0 || t < ss->touched[fit])) fit = (int)i;
    if (most < 0 || t > ss->touched[most]) most = (int)i;
  }
  return (unsigned)(fit >= 0 ? fit : most);
}

/* Before a class takes a slab no class has used (new pages), the heap's
 * emptied slabs go back (every HK_SHED_EVERY_MS at most, on the tier
 * swap's clock): a program whose classes shift (an LRU cache refilled with
 * larger values) reuses the pages its old classes left, instead of
 * faulting in fresh ones while those wait for the purge epoch. Its
 * emptied superslabs stay in the heap, to be taken at once. True when
 * something went back: the caller looks again. */
static HK_NOINLINE bool heap_reuse_emptied(hk_heap_t *h) {
  if (!hk_gate_pass(&h->next_shed_ms, hk_os_now_ms(), HK_SHED_EVERY_MS)) return false;
  bool keep = h->keep_empty;
  h->keep_empty = true;
  unsigned n = hk_heap_release_empty(h);
  h->keep_empty = keep;
  return n != 0;
}

/* A class that fills slab after slab (the two slots before idx in ss hold
 * its slabs, every block carved) in a heap that holds HK_POPULATE_FULL
 * full superslabs of the kind takes a cold slab (no page resident): its
 * pages are faulted in with one system call (MADV_POPULATE_WRITE), not one
 * fault each as carving reaches them. What that may leave resident unused
 * is the class's last slab, small beside what the heap holds. Classes
 * that only churn (their slabs interleaved with other classes', or not
 * carved to the end) keep carving lazily: a whole slab resident for a
 * class that holds two or three of them cost mid-size loops twice their
 * RSS. */
#define HK_POPULATE_FULL 4
static bool class_fills(const hk_heap_t *h, const hk_superslab_t *ss, unsigned idx, unsigned cls) {
  if (idx < 2 || h->ss_full[ss->kind].count < HK_POPULATE_FULL) return false;
  for (unsigned i = idx - 2; i < idx; i++) {
    const hk_slab_t *p = &ss->slabs[i];
    if (((ss->free_mask >> i) & 1) || p->cls != cls || p->carved < p->capacity) return false;
  }
  return true;
}
static HK_NOINLINE void heap_populate(hk_superslab_t *ss, unsigned idx) {
  size_t bytes = hk_ss_slab_area_bytes(ss, idx);
  if (hk_os_populate(hk_ss_slab_area(ss, idx), bytes)) ss->touched[idx] = (uint16_t)(bytes / HK_PAGE);  /* (slab.c's unit) */
}

/* The kind swap: a cold slab about to fault in fresh pages for one kind
 * takes as many bytes from the heap's idle slabs of the other kind (unused,
 * still resident), purged now, not at the purge clock. Slabs move from
 * kind to kind only through the kernel (a small superslab's slabs serve
 * small classes alone); a program whose sizes cross from small to mid (a
 * cache refilled with larger values) otherwise held the peaks of both
 * kinds summed until the purge clock came (docs/ARCHITECTURE.md). */
_Static_assert(HK_SS_NKINDS == 2, "kind ^ 1 is the other kind");
/* not in a heap holding less than this many superslabs of the other kind
 * (8 MiB): a small program makes no purge for a few pages */
#define HK_SWAP_KIND_MIN 4
static HK_NOINLINE void heap_swap_kind(hk_heap_t *h, unsigned kind, size_t want) {
  size_t got = 0;
  for (hk_superslab_t *ss = h->ss_avail[kind ^ 1].head; ss && got < want; ss = ss->next)
    if (ss->dirty_old | ss->dirty_new) got += hk_ss_purge_some(ss, want - got);
}

hk_slab_t *hk_heap_fresh_slab(hk_heap_t *h, unsigned cls, bool *retry) {
  unsigned kind = hk_kind_of_class(cls);
  /* the memory budget: a slab's pages are what may grow here (charged
   * whole: the estimate errs high until the next reading) */
  if (HK_UNLIKELY(hk_mem_limited_slab()) &&
      !hk_mem_admit(kind == HK_SS_KIND_SMALL ? (size_t)1 << 16 : (size_t)1 << 18, heap_relieve, h))
    return NULL;
  hk_superslab_t *ss = h->ss_avail[kind].head;
  if (!ss) {
    hk_superslab_t *a;
    /* (not a first-class heap: its destroy would free the blocks it adopted).
     * The first superslab a heap adopts names the bundle it came in
     * (hk_heap_abandon): the others wait for its classes, below. */
    bool first = h->ss_full[kind].count == 0;
    while (!h->api && (a = hk_ss_take_abandoned(kind)) != NULL) {
      if (first && a->bundle) h->bundle[kind] = a->bundle;
      a->bundle = 0;
      first = false;
      heap_adopt(h, a);
      if (h->partial[cls]) { *retry = true; return NULL; }
      if (h->ss_avail[kind].head) break;
    }
    ss = h->ss_avail[kind].head;
  }
  unsigned idx;
  if (!warm_match(ss, cls, &ss, &idx)) {
    if (heap_reuse_emptied(h)) {
      *retry = true;
      return NULL;
    }
    /* A superslab of the heap's bundle holding this class (a warm slab or
     * one with its blocks): the exited thread's other superslabs, taken as
     * its classes come. A thread often allocates as the one before it did
     * (a pool's workers): each class finds its slab where
     * that thread left it, instead of pulling a cached superslab of its
     * own (the round's threads then spread over more superslabs) or taking
     * another class's slab and faulting in pages past its resident ones. */
    hk_superslab_t *x = h->bundle[kind] ? hk_ss_take_bundled(kind, h->bundle[kind], cls) : NULL;
    if (x) {
      x->bundle = 0;
      h->keep_empty = true;  /* adopted to be used: not straight to the cache */
      heap_adopt(h, x);
      h->keep_empty = false;
      *retry = true;
      return NULL;
    }
    hk_superslab_t *w = hk_ss_acquire_warm(kind, (int)cls, &idx);
    bool matched = w != NULL;
    if (!w && !ss) w = hk_ss_acquire(kind);
    if (!w && !ss) return NULL;
    if (w) {
      HK_STORE_RELEASE(w->heap, h);
      hk_ss_list_push(&h->ss_avail[kind], w, HK_LIST_AVAIL);
      ss = w;
    }
    if (!matched) idx = any_slab(ss, cls);
  }
  uint32_t bit = 1u << idx;
  hk_ss_slab_taken(ss);
  ss->free_mask &= ~bit;
  ss->dirty_new &= ~bit;
  ss->dirty_old &= ~bit;
  if (ss->purged_mask & bit) {
    ss->purged_mask &= ~bit;
    hk_ss_note(HK_SS_REFAULTS);
    hk_ss_note_reuse((uint32_t)hk_os_now_ms() - ss->freed_ms[idx], hk_ss_slab_bytes(ss));
  }
  bool cold = !(ss->warm & bit);
  if (cold) {
    ss->touched[idx] = 0;
    if (h->ss_avail[kind ^ 1].count + h->ss_full[kind ^ 1].count >= HK_SWAP_KIND_MIN)
      heap_swap_kind(h, kind, hk_ss_slab_area_bytes(ss, idx));
  }
  ss->warm |= bit;
  ss->nused++;
  if (ss->free_mask == 0) {
    hk_ss_list_remove(&h->ss_avail[kind], ss);
    hk_ss_list_push(&h->ss_full[kind], ss, HK_LIST_FULL);
  }
  hk_slab_init(ss, idx, cls, h->tid);
  if (h->park_fresh != UINT16_MAX) h->park_fresh++;
  if (cold && HK_LOAD_RELAXED(hk_knobs.populate_slabs) && class_fills(h, ss, idx, cls)) heap_populate(ss, idx);
  return &ss->slabs[idx];
}

/* ---- purge ------------------------------------------------------------------ */

/* Blocks of s not handed out yet go back on local_free (the adopter counts
 * them when it hands them out); they leave h's count of handed blocks. With
 * nothing to count, the two lists join at the shorter one's tail: a current
 * slab's free list may hold a whole carve batch, and walking it, cold, for
 * every class would cost every exiting thread. The splice checks the links
 * it follows either way. */
static void unhand_free_list(hk_heap_t *h, hk_slab_t *s) {
  if (!s->free) return;
  bool counting = HK_LOAD_RACY(hk_heap_counting);
  unsigned n = hk_list_splice(s, s->free, &s->local_free, !counting);
  s->free = NULL;
  if (counting && h->st.handed[s->cls] >= n) h->st.handed[s->cls] -= n;
}

/* Class c's current slab stops being current, its free list unhanded; the
 * slab (&hk_slab_empty when the class had none). */
static hk_slab_t *heap_leave_current(hk_heap_t *h, unsigned c) {
  hk_slab_t *s = h->cur[c];
  hk_heap_set_cur(h, c, &hk_slab_empty);
  if (s != &hk_slab_empty) unhand_free_list(h, s);
  return s;
}

/* A trim's park: the current slabs that hold live and free blocks join
 * the partial lists, so that their free pages are parked too (the next
 * malloc of the class takes a slab in its slow path). Left current, a
 * class's slab kept its free pages whenever the program (or glibc for it:
 * the stdio buffer of /proc/self/maps at a thread's first stack walk) took
 * one block of the class after its frees. Emptied ones stay: the shed
 * gives those back. */
static void heap_retire_current(hk_heap_t *h) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->cur[c];
    if (s == &hk_slab_empty || s->used == 0 || (!s->free && !s->local_free)) continue;
    hk_partial_push(h, heap_leave_current(h, c));
  }
}

/* The free pages of h's partial slabs parked (slab_park.h); a partial
 * slab with nothing live left but parked blocks is released as an emptied
 * one is. clock: the purge clock's pass, which passes over a slab its
 * class took blocks from since the last; force: every slab looked at,
 * however few blocks it freed since its last look (a trim). Bytes purged. */
static size_t park_partial(hk_heap_t *h, bool clock, bool force) {
  size_t bytes = 0;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->partial[c];
    while (s) {
      hk_slab_t *next = s->next;
      if (s->nparked != 0 && s->used == s->nparked) {
        if (hk_slab_unpark_empty(s)) {  /* (false: a parked page written, reported) */
          hk_partial_remove(h, s);
          hk_heap_release_slab(h, s, true);
        }
      } else if (s->park_recent && clock) {
        s->park_recent = 0;  /* its class takes blocks from it: parked pages would come back soon */
      } else {
        hk_heap_collect_remote(h, s);  /* (here, for the stats' count) */
        bytes += hk_slab_park(s, force);
      }
      s = next;
    }
  }
  return bytes;
}

/* HAKMEM_PARK_PAGES: the free pages of the heap's partial slabs go back. */
size_t hk_heap_park(hk_heap_t *h, uint64_t now) {
  if (!HK_PARK_BUILD || !HK_LOAD_RELAXED(hk_knobs.park_pages)) return 0;
  if (now != 0) {  /* the clock's pass (0: a trim's, at once) */
    /* every HK_PARK_DELAYS-th tick; at every tick while the heap grows */
    if (++h->park_ticks < HK_PARK_DELAYS && h->park_fresh < HK_PARK_FRESH) return 0;
    h->park_fresh = 0;
    h->park_ticks = 0;
  }
  if (now == 0) heap_retire_current(h);
  return park_partial(h, now != 0, now == 0);
}

size_t hk_heap_park_api(hk_heap_t *h) {
  if (!HK_PARK_BUILD || !HK_LOAD_RELAXED(hk_knobs.park_idle) || !h->api) return 0;
  if (!hk_heap_idle_look(h) || !hk_heap_pin(h)) return 0;
  if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) hk_heap_drain_delayed(h);
  heap_retire_current(h);
  size_t bytes = park_partial(h, false, false);
  hk_heap_unpin(h);
  return bytes;
}

size_t hk_heap_purge_unused(hk_heap_t *h, bool force) {
  size_t bytes = 0;
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (hk_superslab_t *ss = h->ss_avail[k].head; ss; ss = ss->next)
      if (ss->dirty_old | ss->dirty_new) bytes += hk_ss_purge_unused(ss, force);
  return bytes;
}

void hk_heap_purge_now(hk_heap_t *h, uint64_t now) {
  hk_gate_set(&h->next_purge_ms, now + (uint64_t)hk_ss_purge_delay_ms());
  /* so that slabs whose blocks wait there can empty; a queue keeps the
   * blocks it holds back (purge delay 0: alloc_order reuse_mid) */
  hk_heap_midc_flush(h, true);
  if (HK_MIDC_ON) hk_heap_midp_drain(false);
  hk_heap_release_empty(h);
  if (HK_PARK_BUILD && HK_LOAD_RELAXED(hk_knobs.park_pages)) hk_heap_sort_partial(h, now);
  hk_heap_park(h, now);
  hk_heap_purge_unused(h, false);
  hk_ss_collect(false);
  HK_HEAP_HOOK(purge);
  hk_mem_tick();
}

/* A class's current slab with no block out (once the blocks other threads
 * freed into it are home) goes back: it pins its superslab too (a program
 * whose small and big phases take turns peaks lower and faults less: the
 * superslabs go back to the arena the next big blocks are cut from) */
static void heap_release_emptied_current(hk_heap_t *h) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->cur[c];
    if (s == &hk_slab_empty) continue;
    hk_heap_collect_remote(h, s);
    if (s->used == 0) hk_heap_release_slab(h, heap_leave_current(h, c), true);
  }
}

/* Emptied slabs wait for the purge clock, which only the heap's small slow
 * paths read: a thread gone over to big buffers kept them (a program that
 * freed its small objects, then took big buffers, peaked at both summed;
 * lower with the emptied slabs given back, lower still with the unused
 * slabs of the superslabs the heap keeps purged too). */
void hk_heap_shed(hk_heap_t *h) {
  if (h == &hk_heap_empty) return;
  uint64_t now = hk_os_now_ms();
  if (!hk_gate_pass(&h->next_shed_ms, now, HK_SHED_EVERY_MS)) return;
  hk_heap_enter(h);
  hk_heap_release_empty(h);
  heap_release_emptied_current(h);
  hk_heap_purge_unused(h, true);
  hk_heap_leave(h);
}

size_t hk_heap_trim(hk_heap_t *h) {
  size_t bytes = 0;
  if (h != &hk_heap_empty) {
    hk_heap_enter(h);
    hk_heap_drain_delayed(h);
    hk_heap_midc_flush(h, false);
    if (HK_MIDC_ON) hk_heap_midp_drain(true);
    hk_heap_drain_delayed(h);  /* what the drain handed back to us */
    hk_heap_release_empty(h);
    heap_release_emptied_current(h);
    bytes += hk_heap_park(h, 0);
    bytes += hk_heap_purge_unused(h, true);
    hk_heap_leave(h);
  }
  return bytes + hk_ss_collect(true);
}

/* ---- thread exit: hand everything over ------------------------------------------ */

void hk_heap_abandon(hk_heap_t *h) {
  h->keep_empty = true;  /* its superslabs leave together, as one bundle */
  hk_heap_midc_flush(h, false);
  hk_heap_release_empty(h);
  /* 1. stop notifications: afterwards nobody reads h through a superslab */
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *ss = lists[l]->head; ss; ss = ss->next)
        for (unsigned i = 0; i < ss->nslabs; i++) {
          if (ss->free_mask & (1u << i)) continue;
          hk_slab_cancel_notify(&ss->slabs[i]);
          if (ss->slabs[i].state == HK_SLAB_FULL) hk_partial_push(h, &ss->slabs[i]);
        }
  }
  /* 2. the current slabs join the partial lists (emptied ones go back) */
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = heap_leave_current(h, c);
    if (s == &hk_slab_empty) continue;
    hk_partial_push(h, s);
    if (s->used == 0) { hk_partial_remove(h, s); hk_heap_release_slab(h, s, true); }
  }
  /* 3. the delayed blocks are ours: free them locally (may release slabs) */
  hk_heap_drain_delayed(h);
  /* 4. hand over every superslab, empty ones too, as one bundle: the new
   * thread that adopts one of them takes the others as its classes ask
   * (hk_heap_fresh_slab); empty ones no thread took within a purge delay
   * go on to the cache (superslab.c, hk_ss_purge_abandoned) */
  h->keep_empty = false;
  uint32_t bundle = hk_ss_new_bundle();
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++) {
      hk_superslab_t *ss;
      while ((ss = lists[l]->head) != NULL) {
        hk_ss_list_remove(lists[l], ss);
        /* written only where it changes: an unused slab's descriptor
         * past the header's first page stays unbacked (HK_SS_DESC_PAGE1) */
        for (unsigned i = 0, n = hk_ss_desc_n(ss); i < n; i++) {
          hk_slab_t *s = &ss->slabs[i];
          if (HK_LOAD_RELAXED(s->owner) != 0) HK_STORE_RELAXED(s->owner, 0);
          if (s->next || s->prev) s->next = s->prev = NULL;
        }
        ss->bundle = bundle;
        if (ss->nused == 0 && !hk_ss_bundle_room(k)) hk_ss_release(ss);
        else hk_ss_abandon(ss);
      }
    }
  }
  for (unsigned c = 0; c < HK_NCLASS; c++) h->partial[c] = h->partial_tail[c] = NULL;
}

/* ---- debug build: consistency checks -------------------------------------------- */

#ifdef HK_DEBUG
void hk_heap_check(hk_heap_t *h) {
  unsigned partial_slabs = 0, on_lists = 0;
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_check_owned(&h->ss_avail[k], HK_LIST_AVAIL, k, h);
    hk_ss_check_owned(&h->ss_full[k], HK_LIST_FULL, k, h);
    const hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *ss = lists[l]->head; ss; ss = ss->next) {
        HK_ASSERT(l == 0 ? ss->free_mask != 0 : ss->free_mask == 0);
        for (unsigned i = 0, n = hk_ss_desc_n(ss); i < n; i++) {
          hk_slab_t *s = &ss->slabs[i];
          unsigned st = HK_LOAD_RELAXED(s->state);
          if (ss->free_mask & (1u << i)) { HK_ASSERT(st == HK_SLAB_UNUSED); continue; }
          HK_ASSERT(st == HK_SLAB_CUR || st == HK_SLAB_PARTIAL || st == HK_SLAB_FULL);
          HK_ASSERT(st != HK_SLAB_CUR || h->cur[s->cls] == s);
          partial_slabs += st == HK_SLAB_PARTIAL;
          hk_slab_check(s, h->tid);
        }
      }
  }
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *cur = h->cur[c];
    HK_ASSERT(cur == &hk_slab_empty || (cur->cls == c && HK_LOAD_RELAXED(cur->state) == HK_SLAB_CUR));
    if (c < HK_NCLASS_SMALL)
      for (unsigned i = hk_direct_first(c); i <= hk_direct_last(c); i++) HK_ASSERT(h->direct[i] == cur);
    const hk_slab_t *prev = NULL;
    for (hk_slab_t *s = h->partial[c]; s; prev = s, s = s->next, on_lists++) {
      HK_ASSERT(s->cls == c && s->prev == prev);
      HK_ASSERT(HK_LOAD_RELAXED(s->state) == HK_SLAB_PARTIAL);
      HK_ASSERT(HK_LOAD_RELAXED(hk_slab_ss(s)->heap) == h);
    }
    HK_ASSERT(h->partial_tail[c] == prev);
  }
  /* every partial slab is on its list, once */
  HK_ASSERT(on_lists == partial_slabs);
  hk_ss_check_lists();
}
#endif
