#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "knobs.h"
#include "libc.h"  /* a new heap struct (10 KiB) is zeroed by a call: glibc's memset, unchecked */
#include "lock.h"
#include "os.h"
#include "prof.h"
#include "remote.h"
#include "secure.h"
#include "size_class.h"
#include "slab.h"

__thread hk_heap_t *hk_tls_heap __attribute__((tls_model("initial-exec"))) = &hk_heap_empty;

hk_slab_t hk_slab_empty;  /* all zero: free == NULL, owner == 0 */
bool hk_heap_counting;
bool hk_heap_bg_on;

static hk_heap_hooks_t hooks;  /* set once at start-up by init.c */

void hk_heap_set_hooks(const hk_heap_hooks_t *h) {
  HK_STORE_RELAXED(hooks.refill, h->refill);
  HK_STORE_RELAXED(hooks.purge, h->purge);
  HK_STORE_RELAXED(hooks.stats, h->stats);
}
/* The learner's hook alone, installed when HAKMEM_LEARN is turned on at run
 * time (hak_ctl_set): off at start, the slow paths skip a NULL hook. */
void hk_heap_set_refill_hook(void (*fn)(void)) { HK_STORE_RELAXED(hooks.refill, fn); }
#define CALL_HOOK(name) do { void (*fn_)(void) = HK_LOAD_RELAXED(hooks.name); if (fn_) fn_(); } while (0)

hk_heap_t hk_heap_empty = {
  .direct = { [0 ... HK_DIRECT_N - 1] = &hk_slab_empty },
  .cur = { [0 ... HK_NCLASS - 1] = &hk_slab_empty },
};

/* The request sizes that small class cls serves: [first, last], its
 * trailer (HK_PAD) included; size 0 goes with the smallest class. */
static unsigned direct_first(unsigned cls) {
  return cls == 0 ? 0 : hk_class_bytes(cls - 1) - HK_PAD + 1;
}
static unsigned direct_last(unsigned cls) { return hk_class_bytes(cls) - HK_PAD; }

static void set_cur(hk_heap_t *h, unsigned cls, hk_slab_t *s) {
  h->cur[cls] = s;
  if (cls < HK_NCLASS_SMALL)
    for (unsigned i = direct_first(cls), last = direct_last(cls); i <= last; i++) h->direct[i] = s;
}

/* ---- background purge: the owner's side -------------------------------------
 * With HAKMEM_BACKGROUND_PURGE the owner holds h->bg_lock in every slow path
 * that touches its partial lists or superslabs (the full malloc path, the
 * free slow path, trim, thread exit); the purge thread only try-locks it.
 * Nested calls (the learner's trim from the refill hook) count depth. The
 * fast paths and the leaf slow path take no lock: they touch only the
 * current slabs (and slabs with live blocks), which the purge never does. */
static void heap_enter(hk_heap_t *h) {
  if (!hk_heap_bg_on || h == &hk_heap_empty || h->bg_depth++ != 0) return;
  for (;;) {
    int free_ = 0;
    if (atomic_compare_exchange_weak_explicit(&h->bg_lock, &free_, 2, memory_order_acquire,
                                              memory_order_relaxed))
      return;
    sched_yield();  /* the purge thread holds it for one pass over this heap */
  }
}
static void heap_leave(hk_heap_t *h) {
  if (!hk_heap_bg_on || h == &hk_heap_empty || h->bg_depth == 0) return;
  if (--h->bg_depth == 0) atomic_store_explicit(&h->bg_lock, 0, memory_order_release);
}

/* ---- heap registry: heap structs live in their own mapped pages ---------- */

static hk_lock_t registry_lock = HK_LOCK_INIT;
static hk_heap_t *registry_all;
static hk_heap_t *registry_free;
static atomic_size_t live_heaps;
static hk_heap_stats_t retired;   /* counters of heaps that went away */

/* A heap going away: its counters join the totals (registry lock held, or
 * a fork child's only thread). */
static void stats_retire(hk_heap_t *h) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    retired.handed[c] += h->st.handed[c];
    retired.refills[c] += h->st.refills[c];
    retired.remote[c] += h->st.remote[c];
  }
  memset(&h->st, 0, sizeof h->st);
}

/* A released heap struct, or the next never-used slot of the mapped chunk
 * (a slot is touched only when handed out: linking all of a fresh 64 KiB
 * chunk at once made every process pay 64 KiB of RSS for one heap). */
static hk_heap_t *registry_alloc(void) {
  static uint8_t *chunk_next, *chunk_end;
  hk_lock(&registry_lock);
  hk_heap_t *h = registry_free;
  if (h) {
    registry_free = h->next_free;
    /* zeroed under the lock: the registry's walkers (stats, the purge
     * thread) follow next_all meanwhile */
    hk_heap_t *keep_all = h->next_all;
    memset(h, 0, sizeof *h);
    h->next_all = keep_all;
  } else {
    if ((size_t)(chunk_end - chunk_next) < sizeof(hk_heap_t)) {
      size_t chunk = HK_HEAP_CHUNK_BYTES;
      uint8_t *mem = hk_os_map_aligned(chunk, HK_PAGE);
      if (mem) chunk_next = mem, chunk_end = mem + chunk;
    }
    if ((size_t)(chunk_end - chunk_next) >= sizeof(hk_heap_t)) {
      h = (hk_heap_t *)chunk_next;
      chunk_next += sizeof(hk_heap_t);
      h->next_all = registry_all;
      registry_all = h;
    }
  }
  hk_unlock(&registry_lock);
  return h;
}

static void registry_release(hk_heap_t *h) {
  hk_lock(&registry_lock);
  stats_retire(h);
  h->live = false;
  h->next_free = registry_free;
  registry_free = h;
  hk_unlock(&registry_lock);
  atomic_fetch_sub_explicit(&live_heaps, 1, memory_order_relaxed);
}

/* ---- start-up: what the heap needs before its first slab ------------------ */

static pthread_key_t exit_key;       /* its destructor hands the heap over */
static atomic_int start_state;       /* 0 no, 1 running, 2 done */

static void heap_thread_exit(void *arg) { hk_heap_thread_done((hk_heap_t *)arg); }

/* Nothing here allocates, so no malloc can come back in; a second thread
 * waits for the first. */
void hk_heap_start(void) {
  if (HK_LIKELY(atomic_load_explicit(&start_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&start_state, &expected, 1)) {
    hk_knobs_init();
    hk_list_key_init();
    HK_STORE_RELAXED(hk_heap_counting, hk_knobs.stats != 0 || hk_knobs.stats_interval_ms != 0);
    hk_heap_bg_on = hk_knobs.background_purge != 0;   /* before any heap exists */
    pthread_key_create(&exit_key, heap_thread_exit);
    atomic_store_explicit(&start_state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&start_state, memory_order_acquire) != 2) sched_yield();
}

static hk_heap_t *heap_thread_init(void) {
  hk_heap_start();
  hk_heap_t *h = registry_alloc();   /* zeroed */
  if (!h) return NULL;
  /* every entry, past the last small class's range too (the trailer of the
   * canary measure leaves the top sizes out of every range) */
  for (unsigned i = 0; i < HK_DIRECT_N; i++) h->direct[i] = &hk_slab_empty;
  for (unsigned c = 0; c < HK_NCLASS; c++) h->cur[c] = &hk_slab_empty;
  h->tid = hk_thread_id();
  h->ktid = (int)syscall(SYS_gettid);
  HK_STORE_RELAXED(h->live, true);
  atomic_fetch_add_explicit(&live_heaps, 1, memory_order_relaxed);
  hk_tls_heap = h;
  pthread_setspecific(exit_key, h);  /* may allocate: the heap is in place already */
  return h;
}

size_t hk_heap_count_live(void) { return atomic_load_explicit(&live_heaps, memory_order_relaxed); }

/* The blocks on s->free, counted by walking it (stats only); a bad link
 * or a cycle stops the count: malloc reports the link when it gets there. */
static uint64_t free_list_length(const hk_slab_t *s) {
  uint64_t n = 0;
  for (const hk_block_t *b = s->free; b && n < s->capacity; n++) {
    const hk_block_t *nx = hk_block_next(s, b);
    if (!hk_link_ok(s, b, nx)) return n + 1;
    b = nx;
  }
  return n;
}

/* Is b on a list that starts at `head`? (the free mark's confirmation;
 * at most `most` links, a bad one ends the walk) */
static bool list_holds(const hk_slab_t *s, const hk_block_t *head, const hk_block_t *b, bool global,
                       uint64_t most) {
  for (uint64_t n = 0; head && n < most; n++) {
    if (head == b) return true;
    const hk_block_t *nx = global ? hk_gblock_next(head) : hk_block_next(s, head);
    if (!global && !hk_link_ok(s, head, nx)) return false;
    head = nx;
  }
  return false;
}

bool hk_heap_block_is_free(hk_slab_t *s, const hk_block_t *b) {
  hk_heap_t *h = hk_tls_heap;
  HK_ASSERT(hk_slab_owner(s) == hk_thread_id());
  /* only the owner takes blocks off xfree and delayed; others only push in
   * front of the head read here, so the rest of the chain holds still */
  const hk_block_t *x = HK_XF_LIST(atomic_load_explicit(&s->xfree, memory_order_acquire));
  return list_holds(s, s->free, b, false, s->capacity) || list_holds(s, s->local_free, b, false, s->capacity) ||
         list_holds(s, s->aged, b, false, s->capacity) || list_holds(s, x, b, false, s->capacity) ||
         list_holds(s, atomic_load_explicit(&h->delayed, memory_order_acquire), b, true, UINT64_MAX);
}

void hk_heap_sum_stats(hk_heap_stats_t *acc) {
  hk_lock(&registry_lock);
  for (hk_heap_t *h = registry_all; h; h = h->next_all) {
    if (!h->live) continue;
    for (unsigned c = 0; c < HK_NCLASS; c++) {
      acc->handed[c] += __atomic_load_n(&h->st.handed[c], __ATOMIC_RELAXED);
      acc->refills[c] += __atomic_load_n(&h->st.refills[c], __ATOMIC_RELAXED);
      acc->remote[c] += __atomic_load_n(&h->st.remote[c], __ATOMIC_RELAXED);
    }
  }
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    acc->handed[c] += retired.handed[c];
    acc->refills[c] += retired.refills[c];
    acc->remote[c] += retired.remote[c];
  }
  hk_unlock(&registry_lock);
  /* our own current lists we can walk: those blocks are not out yet */
  hk_heap_t *self = hk_tls_heap;
  if (self == &hk_heap_empty) return;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    uint64_t n = free_list_length(self->cur[c]);
    acc->handed[c] = acc->handed[c] >= n ? acc->handed[c] - n : 0;
  }
}

/* ---- partial lists and superslab lists ------------------------------------ */

/* s (h's) changes state; its owner field says whether it is full
 * (HK_OWNER_FULL) */
static void slab_set_state(hk_heap_t *h, hk_slab_t *s, uint8_t st) {
  HK_STORE_RELAXED(s->state, st);
  HK_STORE_RELAXED(s->owner, h->tid | (st == HK_SLAB_FULL ? HK_OWNER_FULL : 0));
}

static void partial_push(hk_heap_t *h, hk_slab_t *s) {  /* at the tail */
  slab_set_state(h, s, HK_SLAB_PARTIAL);
  s->next = NULL;
  s->prev = h->partial_tail[s->cls];
  if (s->prev) s->prev->next = s;
  else h->partial[s->cls] = s;
  h->partial_tail[s->cls] = s;
}

static void partial_remove(hk_heap_t *h, hk_slab_t *s) {
  if (s->prev) s->prev->next = s->next;
  else h->partial[s->cls] = s->next;
  if (s->next) s->next->prev = s->prev;
  else h->partial_tail[s->cls] = s->prev;
  s->next = s->prev = NULL;
}

enum { LIST_AVAIL = 1, LIST_FULL = 2 };

/* Every slab of s's superslab is back: keep one spare per kind, give the
 * rest to the global cache. */
/* True when ss left the heap: it may be unmapped already, never touch it. */
static bool heap_ss_empty(hk_heap_t *h, hk_superslab_t *ss) {
  hk_ss_list_t *avail = &h->ss_avail[ss->kind];
  if ((long)avail->count <= HK_LOAD_RELAXED(hk_knobs.heap_spare)) return false;  /* the spares */
  hk_ss_list_remove(avail, ss);
  hk_ss_release(ss);
  return true;
}

/* True when the slab's superslab left the heap (see heap_ss_empty); never
 * when !may_leave (the background purge keeps superslabs where they are:
 * their owner's leaf slow path may still read a slab descriptor). */
static bool heap_slab_release_to(hk_heap_t *h, hk_slab_t *s, bool may_leave) {
  hk_superslab_t *ss = hk_slab_ss(s);
  hk_slab_cancel_notify(s);
  HK_STORE_RELAXED(s->state, HK_SLAB_UNUSED);
  HK_STORE_RELAXED(s->owner, 0);
  s->free = s->local_free = NULL;
  uint32_t bit = 1u << s->index;
  bool was_full = ss->free_mask == 0;
  ss->free_mask |= bit;
  ss->dirty_new |= bit;
  ss->nused--;
  if (was_full) {
    hk_ss_list_remove(&h->ss_full[ss->kind], ss);
    hk_ss_list_push(&h->ss_avail[ss->kind], ss, LIST_AVAIL);
  }
  return may_leave && ss->nused == 0 && heap_ss_empty(h, ss);
}
static bool heap_slab_release(hk_heap_t *h, hk_slab_t *s) { return heap_slab_release_to(h, s, true); }

/* An emptied slab stays on its class's partial list until the next purge
 * epoch (heap_release_empty): a class that empties and refills slabs reuses
 * the same blocks and pages, instead of handing the slab to another class
 * whose blocks would touch its other pages. */
static void heap_release_empty(hk_heap_t *h) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->partial[c];
    while (s) {
      hk_slab_t *next = s->next;
      if (s->used == 0) {
        partial_remove(h, s);
        heap_slab_release(h, s);
      }
      s = next;
    }
  }
}

/* Owner freed into s (already on local_free) while s was full. (An emptied
 * slab stays put: heap_release_empty.) */
static void heap_local_slow(hk_heap_t *h, hk_slab_t *s) {
  if (s->state == HK_SLAB_FULL) {
    hk_slab_cancel_notify(s);
    partial_push(h, s);
  }
}

void hk_heap_free_local_slow(hk_slab_t *s) {
  hk_heap_t *h = hk_tls_heap;
  heap_enter(h);
  heap_local_slow(h, s);
  heap_leave(h);
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
  hk_heap_t *h = atomic_load_explicit(&hk_slab_ss(s)->heap, memory_order_acquire);
  if (HK_LIKELY(h != NULL)) heap_push_delayed(h, b);
  hk_remote_notified(s, b, h != NULL);
}

static void heap_drain_delayed(hk_heap_t *h) {
  hk_block_t *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
  while (b) {
    hk_block_t *next = hk_gblock_next(b);
    hk_slab_t *s = hk_slab_of(hk_ss_of(b), b);
    HK_ASSERT(hk_slab_owner(s) == h->tid);
    if (HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls]++;
    hk_sec_on_collected(s, b);
    hk_slab_push_local(s, b);
    if (s->state == HK_SLAB_FULL) heap_local_slow(h, s);
    b = next;
  }
}

/* ---- adopting abandoned superslabs ---------------------------------------- */

static void heap_adopt(hk_heap_t *h, hk_superslab_t *ss) {
  bool forked = ss->forked;  /* its heap vanished in fork(): rebuild its slabs */
  ss->forked = false;
  atomic_store_explicit(&ss->heap, h, memory_order_release);
  bool was_full = ss->free_mask == 0;
  hk_ss_list_push(was_full ? &h->ss_full[ss->kind] : &h->ss_avail[ss->kind], ss,
                  was_full ? LIST_FULL : LIST_AVAIL);
  for (unsigned i = 0; i < ss->nslabs; i++) {
    if (ss->free_mask & (1u << i)) continue;
    hk_slab_t *s = &ss->slabs[i];
    HK_STORE_RELAXED(s->owner, h->tid);
    s->next = s->prev = NULL;
    if (forked) hk_slab_rebuild(s);
    size_t got = hk_slab_collect_remote(s);
    if (got && HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls] += got;
    if (s->used == 0) {
      slab_set_state(h, s, HK_SLAB_PARTIAL);  /* so release finds it consistent */
      /* the whole superslab may go to the global cache, which may unmap
       * it at once (a full cache): then it must not be read again */
      if (heap_slab_release(h, s)) return;
      continue;
    }
    if (s->free || s->local_free || s->carved < s->capacity || HK_SEC_AGED(s)) {
      partial_push(h, s);
    } else if (hk_slab_want_notify(s)) {
      slab_set_state(h, s, HK_SLAB_FULL);
    } else {
      hk_slab_collect_remote(s);
      partial_push(h, s);
    }
  }
}

/* ---- fresh slabs ----------------------------------------------------------- */

/* A new slab of class cls, or NULL: then either the OS said no (errno set),
 * or adopting abandoned memory put slabs on the partial list (retry). */
static hk_slab_t *heap_fresh_slab(hk_heap_t *h, unsigned cls, bool *retry) {
  unsigned kind = hk_kind_of_class(cls);
  hk_superslab_t *ss = h->ss_avail[kind].head;
  if (!ss) {
    hk_superslab_t *a;
    while ((a = hk_ss_take_abandoned(kind)) != NULL) {
      heap_adopt(h, a);
      if (h->partial[cls]) { *retry = true; return NULL; }
      if (h->ss_avail[kind].head) break;
    }
    ss = h->ss_avail[kind].head;
    if (!ss) {
      ss = hk_ss_acquire(kind);
      if (!ss) return NULL;
      atomic_store_explicit(&ss->heap, h, memory_order_release);
      hk_ss_list_push(&h->ss_avail[kind], ss, LIST_AVAIL);
    }
  }
  unsigned idx = (unsigned)__builtin_ctz(ss->free_mask);
  uint32_t bit = 1u << idx;
  ss->free_mask &= ~bit;
  ss->dirty_new &= ~bit;
  ss->dirty_old &= ~bit;
  if (ss->purged_mask & bit) {
    ss->purged_mask &= ~bit;
    hk_ss_note(HK_SS_REFAULTS);
  }
  ss->nused++;
  if (ss->free_mask == 0) {
    hk_ss_list_remove(&h->ss_avail[kind], ss);
    hk_ss_list_push(&h->ss_full[kind], ss, LIST_FULL);
  }
  hk_slab_init(ss, idx, cls, h->tid);
  return &ss->slabs[idx];
}

/* ---- debug build: consistency checks -------------------------------------- */

#ifdef HK_DEBUG
/* Every list h owns is sound, and so is every slab on it (hk_slab_check):
 * its superslab lists, each class's current slab and partial list, and
 * the global lists beside them. O(h's free blocks): run every
 * HAKMEM_CHECK_EVERY-th full slow path (hk_hook_heap_check). */
static void heap_check(hk_heap_t *h) {
  unsigned partial_slabs = 0, on_lists = 0;
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_check_owned(&h->ss_avail[k], LIST_AVAIL, k, h);
    hk_ss_check_owned(&h->ss_full[k], LIST_FULL, k, h);
    const hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *ss = lists[l]->head; ss; ss = ss->next) {
        HK_ASSERT(l == 0 ? ss->free_mask != 0 : ss->free_mask == 0);
        for (unsigned i = 0; i < ss->nslabs; i++) {
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
      for (unsigned i = direct_first(c); i <= direct_last(c); i++) HK_ASSERT(h->direct[i] == cur);
    const hk_slab_t *prev = NULL;
    for (hk_slab_t *s = h->partial[c]; s; prev = s, s = s->next, on_lists++) {
      HK_ASSERT(s->cls == c && s->prev == prev);
      HK_ASSERT(HK_LOAD_RELAXED(s->state) == HK_SLAB_PARTIAL);
      HK_ASSERT(atomic_load_explicit(&hk_slab_ss(s)->heap, memory_order_relaxed) == h);
    }
    HK_ASSERT(h->partial_tail[c] == prev);
  }
  /* every partial slab is on its list, once */
  HK_ASSERT(on_lists == partial_slabs);
  hk_ss_check_lists();
}

HK_INLINE void hk_hook_heap_check(hk_heap_t *h) {
  if (hk_knobs.check_every && h->slow_count % (uint32_t)hk_knobs.check_every == 0) heap_check(h);
}
#else
HK_INLINE void hk_hook_heap_check(hk_heap_t *h) { (void)h; }
#endif

/* Purge slabs that stayed unused for a whole purge-delay epoch. The test
 * inline, the work out of line (the full path inlines its body twice). */
static HK_NOINLINE void heap_purge_now(hk_heap_t *h, uint64_t now);
HK_INLINE void heap_maybe_purge(hk_heap_t *h) {
  if ((++h->slow_count & (HK_SLOW_FULL_EVERY - 1)) != 0) return;
  uint64_t now = hk_os_now_ms();
  if (now < h->next_purge_ms) return;
  heap_purge_now(h, now);
}
static HK_NOINLINE void heap_purge_now(hk_heap_t *h, uint64_t now) {
  h->next_purge_ms = now + (uint64_t)hk_ss_purge_delay_ms();
  heap_release_empty(h);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (hk_superslab_t *ss = h->ss_avail[k].head; ss; ss = ss->next)
      if (ss->dirty_old | ss->dirty_new) hk_ss_purge_unused(ss, false);
  hk_ss_collect(false);
  CALL_HOOK(purge);
}

size_t hk_heap_trim(hk_heap_t *h) {
  size_t bytes = 0;
  if (h != &hk_heap_empty) {
    heap_enter(h);
    heap_drain_delayed(h);
    heap_release_empty(h);
    for (unsigned k = 0; k < HK_SS_NKINDS; k++)
      for (hk_superslab_t *ss = h->ss_avail[k].head; ss; ss = ss->next)
        bytes += hk_ss_purge_unused(ss, true);
    heap_leave(h);
  }
  return bytes + hk_ss_collect(true);
}

/* ---- background purge: the purge thread's side --------------------------------
 *
 * The purge thread (HAKMEM_BACKGROUND_PURGE) gives back what a heap keeps
 * unused when its owner has stopped calling malloc, without the owner:
 *
 *  1. It try-locks h->bg_lock (never waits for an owner), so it never runs
 *     beside one of the owner's slow paths (heap_enter).
 *  2. Unused slabs (free_mask) are reached by the owner only through a slow
 *     path (heap_fresh_slab), and hold no block: under the lock they can be
 *     purged at any time (hk_ss_purge_unused, on the same two-tick epoch as
 *     the owner's clock).
 *  3. An emptied slab (used == 0, on a partial list) is reached by the
 *     owner's fast paths only through a free of one of its blocks, and it
 *     has none out; but the owner's last free into it may still be on its
 *     way (used-- seen before the local_free store: plain stores, in any
 *     order, and a thread may be descheduled between them). So the slab is
 *     released only when the owner provably did not run over the whole look:
 *     blocked in a system call (no fast path makes one: every store of its
 *     last free was done before it entered the kernel) before the look and
 *     after it, with the same count of context switches (one that ran in
 *     between switched out again, or is running now). Released slabs stay
 *     in the owner's superslabs (the owner's leaf slow path reads partial
 *     slab descriptors without the lock: they must stay mapped).
 *
 * Without /proc (or with a thread that never blocks) nothing of step 3
 * happens; the owner's own purge clock does it at its next slow path. */

/* Reads /proc/self/task/TID/NAME into buf (NUL-terminated); false on error. */
static bool bg_read_task(int ktid, const char *name, char *buf, size_t size) {
  char path[64];
  size_t n = 0;
  const char *pre = "/proc/self/task/";
  while (*pre) path[n++] = *pre++;
  char digits[16];
  size_t d = 0;
  for (unsigned v = (unsigned)ktid; d == 0 || v; v /= 10) digits[d++] = (char)('0' + v % 10);
  while (d) path[n++] = digits[--d];
  path[n++] = '/';
  while (*name && n + 1 < sizeof path) path[n++] = *name++;
  path[n] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t have = 0;
  for (ssize_t got; have + 1 < size && (got = read(fd, buf + have, size - 1 - have)) > 0;) have += (size_t)got;
  close(fd);
  buf[have] = 0;
  return have > 0;
}

/* Is the thread blocked in a system call now? (/proc/.../syscall: "NR args
 * sp pc" when blocked in one, "-1 sp pc" when blocked elsewhere (a page
 * fault), "running") */
static bool bg_in_syscall(int ktid) {
  char buf[256];
  if (!bg_read_task(ktid, "syscall", buf, sizeof buf)) return false;
  return buf[0] >= '0' && buf[0] <= '9';
}

/* Its voluntary + involuntary context switches; false when unreadable. */
static bool bg_switches(int ktid, unsigned long *out) {
  /* status lists the allowed CPUs: long on big machines. Static: every
   * caller holds registry_lock (hk_heap_bg_purge). */
  static char buf[16384];
  if (!bg_read_task(ktid, "status", buf, sizeof buf)) return false;
  unsigned long sum = 0;
  int found = 0;
  for (const char *p = buf; (p = strstr(p, "ctxt_switches:")) != NULL; found++) {
    p += sizeof "ctxt_switches:" - 1;
    while (*p == ' ' || *p == '\t') p++;
    unsigned long v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (unsigned long)(*p++ - '0');
    sum += v;
  }
  *out = sum;
  return found == 2;
}

#define BG_BATCH 512   /* emptied slabs released per look (more: another look) */

/* One heap (bg_lock held by us). Bytes purged. */
static size_t heap_bg_one(hk_heap_t *h, bool force) {
  size_t bytes = 0;
  hk_slab_t *cand[BG_BATCH];
  for (int round = 0; round < 64; round++) {
    /* a hint first: is any partial slab empty? (no /proc reads otherwise) */
    bool any = false;
    for (unsigned c = 0; c < HK_NCLASS && !any; c++)
      for (hk_slab_t *sl = h->partial[c]; sl; sl = sl->next)
        if (HK_LOAD_RACY(sl->used) == 0) { any = true; break; }
    if (!any) break;
    unsigned long sw1, sw2;
    if (!bg_in_syscall(h->ktid) || !bg_switches(h->ktid, &sw1)) break;
    unsigned n = 0;
    for (unsigned c = 0; c < HK_NCLASS && n < BG_BATCH; c++)
      for (hk_slab_t *sl = h->partial[c]; sl && n < BG_BATCH; sl = sl->next)
        if (sl->used == 0) cand[n++] = sl;
    /* the owner still blocked, and it did not run meanwhile */
    if (!bg_in_syscall(h->ktid) || !bg_switches(h->ktid, &sw2) || sw1 != sw2) break;
    for (unsigned i = 0; i < n; i++) {
      partial_remove(h, cand[i]);
      heap_slab_release_to(h, cand[i], false);
    }
    if (n < BG_BATCH) break;
  }
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (hk_superslab_t *ss = h->ss_avail[k].head; ss; ss = ss->next)
      if (ss->dirty_old | ss->dirty_new) bytes += hk_ss_purge_unused(ss, force);
  return bytes;
}

size_t hk_heap_bg_purge(bool force) {
  if (!hk_heap_bg_on) return 0;  /* owners take no lock: nothing may be touched */
  size_t bytes = 0;
  hk_heap_t *self = hk_tls_heap;
  /* held over the pass: a heap struct is not handed to a new thread (and
   * zeroed) under us, and fork() waits for the pass to end */
  hk_lock(&registry_lock);
  for (hk_heap_t *h = registry_all; h; h = h->next_all) {
    if (h == self || !HK_LOAD_RELAXED(h->live)) continue;
    int free_ = 0;
    if (!atomic_compare_exchange_strong_explicit(&h->bg_lock, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;  /* its owner is in a slow path: it purges on its own clock */
    HK_TSAN_HIDE_BEGIN();  /* quiescence is the kernel's proof */
    bytes += heap_bg_one(h, force);
    HK_TSAN_HIDE_END();
    atomic_store_explicit(&h->bg_lock, 0, memory_order_release);
  }
  hk_unlock(&registry_lock);
  return bytes;
}

/* ---- malloc slow path ------------------------------------------------------ */

/* s->free was just filled (local_free is empty): every block of the slab
 * that is not out is on it, so the batch is carved - used blocks. Not in
 * when blocks wait on `aged` (delayed reuse): the batch is
 * then counted on the list (bench_mid counted 446,621 mallocs for
 * 300,000). */
static HK_NOINLINE void stats_batch(hk_heap_t *h, hk_slab_t *s) {
  h->st.handed[s->cls] += HK_SEC_AGED(s) ? free_list_length(s) : (uint64_t)(s->carved - s->used);
  h->st.refills[s->cls]++;
  /* the hook reads the clock: not every time */
  if ((++h->st_ticks & (HK_STATS_TICK_EVERY - 1)) == 0) CALL_HOOK(stats);
}

HK_INLINE void *slab_pop(hk_heap_t *h, hk_slab_t *s) {
  if (HK_UNLIKELY(HK_LOAD_RACY(hk_heap_counting))) stats_batch(h, s);
  hk_block_t *b = s->free;
  hk_slab_pop_block(s, b);
  return b;
}

/* s becomes class cls's current slab and hands out its first block */
HK_INLINE void *pop_as_cur(hk_heap_t *h, unsigned cls, hk_slab_t *s) {
  slab_set_state(h, s, HK_SLAB_CUR);
  set_cur(h, cls, s);
  return slab_pop(h, s);
}

/* Remote frees of s onto its local_free list, counted for the stats. */
static void heap_collect(hk_heap_t *h, hk_slab_t *s) {
  if (s->local_free) return;
  size_t n = hk_slab_collect_remote(s);
  if (n && HK_LOAD_RACY(hk_heap_counting)) h->st.remote[s->cls] += n;
}

static bool heap_refill(hk_heap_t *h, hk_slab_t *s) {
  heap_collect(h, s);
  return hk_slab_refill(s);
}

/* The fewest freed blocks another slab must have to be switched to rather
 * than carving in the current one: a slow call per batch, so not a few;
 * but carving costs memory. Small classes: 32 blocks, 8 KiB of them at
 * most (random_mixed_256: 87,557 -> 18,552 slow calls per 1M mallocs, RSS
 * still under mimalloc's). Mid classes: 8 blocks, 4 KiB at most (1 of
 * 4 KiB: random_mixed_4096 kept mimalloc's RSS only with that). */
HK_INLINE unsigned heap_min_batch(const hk_slab_t *s) {
  bool mid = s->cls >= HK_NCLASS_SMALL;
  unsigned n = (mid ? HK_MIN_BATCH_MID_BYTES : HK_MIN_BATCH_SMALL_BYTES) / s->block_size,
           most = mid ? HK_MIN_BATCH_MID : HK_MIN_BATCH_SMALL;
  return n < 1u ? 1u : n > most ? most : n;
}

/* s's free list is empty and its own frees make a small batch: does the
 * oldest other partial slab of its class hold more freed blocks? Then
 * switching to it gives the bigger batch. With two slabs sharing a working
 * set, each taking back only its own frees since the last refill made the
 * batches halve at every refill (random_mixed_256: a slow call every 6
 * mallocs). A batch of HK_RICH_ENOUGH blocks, or an eighth of the slab
 * (mid slabs hold 8 to 100 blocks), is kept: its blocks were freed lately
 * and are warm in cache (switching at any size cost the python3 workload
 * 5%; at under 16 blocks, the secure build's bench_mid 6%). HK_RICH_ENOUGH
 * and HK_RICH_SLAB_SHIFT: config.h. */
HK_INLINE bool heap_other_richer(const hk_heap_t *h, const hk_slab_t *s) {
  unsigned mine = (unsigned)(s->carved - s->used), enough = (unsigned)s->capacity >> HK_RICH_SLAB_SHIFT;
  if (mine >= HK_RICH_ENOUGH || mine >= enough) return false;
  /* racy with the background purge, which may be unlinking o under the
   * heap's bg_lock: any value will do (a wrong guess costs a full slow
   * path, which takes the lock), and o's descriptor stays mapped */
  const hk_slab_t *o = HK_LOAD_RACY(h->partial[s->cls]);
  return o != NULL && (unsigned)(HK_LOAD_RACY(o->carved) - HK_LOAD_RACY(o->used)) > mine;
}

/* Freed blocks only, no carving: memory already touched is reused before
 * fresh pages are (delayed reuse keeps its fresh-first order). */
HK_INLINE bool heap_refill_lists(hk_heap_t *h, hk_slab_t *s) {
  if (HK_M_DELAY) return heap_refill(h, s);
  heap_collect(h, s);
  return hk_slab_take_local(s);
}

HK_INLINE void *heap_alloc_body(hk_heap_t *h, unsigned cls);

/* With the background purge: the same under the heap's bg_lock. */
static HK_NOINLINE void *heap_alloc_guarded(hk_heap_t *h, unsigned cls) {
  heap_enter(h);
  void *b = heap_alloc_body(h, cls);
  heap_leave(h);
  return b;
}

static HK_NOINLINE void *heap_alloc_full(hk_heap_t *h, unsigned cls) {
  if (HK_UNLIKELY(h == &hk_heap_empty)) {
    h = heap_thread_init();
    if (!h) { errno = ENOMEM; return NULL; }
  }
  if (HK_UNLIKELY(hk_heap_bg_on)) return heap_alloc_guarded(h, cls);
  return heap_alloc_body(h, cls);  /* inlined: one test more than before */
}

HK_INLINE void *heap_alloc_body(hk_heap_t *h, unsigned cls) {
  if (atomic_load_explicit(&h->delayed, memory_order_relaxed)) heap_drain_delayed(h);
  heap_maybe_purge(h);
  hk_hook_heap_check(h);

  hk_slab_t *s = h->cur[cls];
  if (s != &hk_slab_empty) {
    if (s->free) return slab_pop(h, s);
    if (!heap_other_richer(h, s) && heap_refill_lists(h, s)) return slab_pop(h, s);
    /* no freed block left here. With another partial slab to go to, swap the two: this one
     * stays partial (its owner's frees go on landing there without a slow
     * call), which spares a full/unfull round trip when slabs run dry and
     * refill in turn. */
    hk_slab_t *next = h->partial[cls];
    if (next) {
      /* the oldest partial slab with freed blocks among the first few, so
       * that fresh blocks are carved only when none of them has any */
      unsigned k = 0;
      for (hk_slab_t *t = next; t && k < HK_REUSE_SCAN; t = t->next, k++)
        if (t->free || heap_refill_lists(h, t)) { next = t; break; }
      /* But a handful of freed blocks is not worth a swap: with every slab
       * holding one or two, each malloc would come here (random_mixed_512:
       * 1.0 slow calls per malloc, a third of mimalloc's speed). Carve
       * here instead, so that batches grow. (Tried: carving in the other
       * slab too when this one is carved to the end, no faster and more
       * memory; a fresh slab then, larson_small took 2,253 of them and 2.6
       * times the memory.) */
      if ((unsigned)(next->carved - next->used) < heap_min_batch(s) && hk_slab_extend(s))
        return slab_pop(h, s);
      partial_remove(h, next);
      partial_push(h, s);
      if (next->free || heap_refill(h, next)) return pop_as_cur(h, cls, next);
      set_cur(h, cls, &hk_slab_empty);
      if (hk_slab_want_notify(next)) slab_set_state(h, next, HK_SLAB_FULL);
      else partial_push(h, next);  /* remote frees arrived meanwhile */
    } else if (hk_slab_extend(s)) {
      return slab_pop(h, s);       /* nothing to reuse: carve fresh blocks here */
    } else if (hk_slab_want_notify(s)) {
      slab_set_state(h, s, HK_SLAB_FULL);
      set_cur(h, cls, &hk_slab_empty);
    } else if (heap_refill(h, s)) {
      return slab_pop(h, s);
    }
  }
  CALL_HOOK(refill);
  for (;;) {
    while ((s = h->partial[cls]) != NULL) {
      partial_remove(h, s);
      if (s->free || heap_refill(h, s)) return pop_as_cur(h, cls, s);
      if (hk_slab_want_notify(s)) slab_set_state(h, s, HK_SLAB_FULL);
      else if (heap_refill(h, s)) return pop_as_cur(h, cls, s);
    }
    bool retry = false;
    s = heap_fresh_slab(h, cls, &retry);
    if (s) break;
    if (!retry) { errno = ENOMEM; return NULL; }
  }
  hk_slab_extend(s);
  return pop_as_cur(h, cls, s);
}

/* The leaf's refill, list moves only: the owner's frees (not when every
 * block is back: that slab starts over, hk_slab_take_local); with delayed
 * reuse a change of generation. */
HK_INLINE bool heap_leaf_refill(hk_slab_t *s) {
  if (HK_M_DELAY) return hk_slab_take_aged(s);
  hk_block_t *b = s->local_free;
  if (b == NULL || s->used == 0) return false;
  s->free = b;
  s->local_free = NULL;
  return true;
}

/* The most common slow call: the current slab's free list ran dry and the
 * owner's own frees wait on local_free. This leaf saves no registers (the
 * full path pushes six: 18 of its 53 instructions per call on
 * random_mixed_256). Every 16th call still goes the full way, which drains
 * remote frees into full slabs and purges on time; so does any case that
 * needs more (an emptied slab's restart, a switch to a richer slab, stats).
 * With delayed reuse (measure delay) the leaf is the change of generation
 * (hk_slab_take_aged), remote frees waiting for the full path as here. */
static void *heap_alloc_slow(hk_heap_t *h, unsigned cls) {
  hk_slab_t *s = h->cur[cls];
  uint32_t tick = h->slow_count + 1;
  if ((tick & (HK_SLOW_FULL_EVERY - 1)) == 0 || HK_UNLIKELY(HK_LOAD_RACY(hk_heap_counting)) ||
      heap_other_richer(h, s) ||
      !heap_leaf_refill(s))
    return heap_alloc_full(h, cls);
  h->slow_count = tick;
  return slab_pop(h, s);
}

/* HAKMEM_PROF: a sampled allocation is served by the profiler; any other
 * leaves the fast path a list that ends before the next sample (prof.h) */
static HK_NOINLINE void *heap_alloc_prof(hk_heap_t *h, unsigned cls) {
  void *b = hk_prof_small(cls);
  if (b) return b;
  b = heap_alloc_slow(h, cls);
  hk_slab_t *s = hk_tls_heap->cur[cls];  /* (h may have been the empty heap) */
  if (b && s != &hk_slab_empty) hk_prof_limit(s);
  return b;
}

void *hk_heap_alloc_slow(hk_heap_t *h, unsigned cls) {
  if (HK_PROF_BUILD && HK_UNLIKELY(HK_LOAD_RELAXED(hk_prof_on))) return heap_alloc_prof(h, cls);
  return heap_alloc_slow(h, cls);
}

/* ---- thread exit and fork ---------------------------------------------------- */

static void heap_abandon(hk_heap_t *h) {
  heap_release_empty(h);
  /* 1. stop notifications: afterwards nobody reads h through a superslab */
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++)
      for (hk_superslab_t *ss = lists[l]->head; ss; ss = ss->next)
        for (unsigned i = 0; i < ss->nslabs; i++) {
          if (ss->free_mask & (1u << i)) continue;
          hk_slab_cancel_notify(&ss->slabs[i]);
          if (ss->slabs[i].state == HK_SLAB_FULL) partial_push(h, &ss->slabs[i]);
        }
  }
  /* 2. the delayed blocks are ours: free them locally (may release slabs) */
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    hk_slab_t *s = h->cur[c];
    set_cur(h, c, &hk_slab_empty);
    if (s == &hk_slab_empty) continue;
    /* blocks not handed out yet go back on local_free: the adopter counts
     * them when it hands them out */
    if (s->free) {
      hk_block_t *tail = s->free;
      uint64_t n = 1;
      for (hk_block_t *nx; (nx = hk_block_next(s, tail)) != NULL; tail = nx) n++;
      hk_block_set_next(s, tail, s->local_free);
      s->local_free = s->free;
      s->free = NULL;
      if (h->st.handed[c] >= n) h->st.handed[c] -= n;
    }
    partial_push(h, s);
    if (s->used == 0) { partial_remove(h, s); heap_slab_release(h, s); }
  }
  heap_drain_delayed(h);
  /* 3. hand over every superslab (empty ones go to the cache) */
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    hk_ss_list_t *lists[2] = { &h->ss_avail[k], &h->ss_full[k] };
    for (int l = 0; l < 2; l++) {
      hk_superslab_t *ss;
      while ((ss = lists[l]->head) != NULL) {
        hk_ss_list_remove(lists[l], ss);
        for (unsigned i = 0; i < ss->nslabs; i++) {
          hk_slab_t *s = &ss->slabs[i];
          HK_STORE_RELAXED(s->owner, 0);
          s->next = s->prev = NULL;
        }
        if (ss->nused == 0) hk_ss_release(ss);
        else hk_ss_abandon(ss);
      }
    }
  }
  for (unsigned c = 0; c < HK_NCLASS; c++) h->partial[c] = h->partial_tail[c] = NULL;
}

void hk_heap_thread_done(hk_heap_t *h) {
  if (h == NULL || h == &hk_heap_empty || !h->live) return;
  heap_enter(h);
  heap_abandon(h);
  heap_leave(h);
  if (hk_tls_heap == h) hk_tls_heap = &hk_heap_empty;
  registry_release(h);
}

void hk_heap_fork_prepare(void) { hk_lock(&registry_lock); }
void hk_heap_fork_parent(void) { hk_unlock(&registry_lock); }

/* In the child only the forking thread lives. The other heaps' owners are
 * gone (and a new thread may even get one's thread id back): their
 * superslabs become ownerless and adoptable (the adopter first rebuilds
 * each slab: hk_slab_rebuild), their heap structs reusable. Blocks caught
 * in flight by fork() are lost, nothing worse. */
void hk_heap_fork_child(void) {
  hk_lock_reset(&registry_lock);
  hk_heap_t *self = hk_tls_heap;
  /* the child's thread has a kernel id of its own; nobody holds our lock
   * (the purge thread holds a heap's lock only under registry_lock, which
   * fork_prepare took) */
  if (self != &hk_heap_empty) self->ktid = (int)syscall(SYS_gettid);
  hk_ss_orphan_foreign(self);
  for (hk_heap_t *h = registry_all; h; h = h->next_all) {
    if (!h->live || h == self) continue;
    /* blocks other threads handed this heap (whole pushes: a list never
     * caught halfway) go onto their slabs' remote frees, now ownerless,
     * for the adopter to collect: counted back, not leaked */
    hk_block_t *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_relaxed);
    while (b) {
      hk_block_t *next = hk_gblock_next(b);
      hk_remote_push(hk_slab_of(hk_ss_of(b), b), b);
      b = next;
    }
    stats_retire(h);
    h->live = false;
    h->next_free = registry_free;
    registry_free = h;
    atomic_fetch_sub_explicit(&live_heaps, 1, memory_order_relaxed);
  }
}
