/* Thread heaps: the registry of heap structs (mapped in their own pages,
 * reused when a thread is gone), start-up, the counters heaps keep, fork.
 * What a heap does with its slabs is heap_slabs.c; the malloc slow path,
 * refill.c; a thread's heap from its first slow path to its exit, thread.c. */
#include "heap/heap.h"

#include <stdatomic.h>
#include <string.h>

#include "base/knobs.h"
#include "base/libc.h"  /* a new heap struct (21 KiB) is zeroed by a call: glibc's memset, unchecked */
#include "base/lock.h"
#include "pal/os.h"
#include "mem/remote.h"

__thread hk_heap_t *hk_tls_heap __attribute__((tls_model("initial-exec"))) = &hk_heap_empty;

bool hk_heap_counting;
bool hk_heap_bg_on;

hk_heap_hooks_t hk_heap_hooks;  /* set once at start-up by init.c */

uint8_t hk_midc_cap[HK_NCLASS_MID];
uint8_t hk_midc_cap_own[HK_NCLASS_MID];
uint32_t hk_midc_sparse_until[HK_NCLASS_MID];

void hk_midc_set_cap(unsigned i, unsigned cap) {
  unsigned least = 2 * HK_MIDC_HOLD;  /* a queue: one that never hands out is no cache */
  if (cap != 0 && cap < least) cap = least;
  if (i >= HK_NCLASS_MID) return;
  uint8_t c = (uint8_t)(cap < HK_MIDC_SLOTS ? cap : HK_MIDC_SLOTS);
  HK_STORE_RELAXED(hk_midc_cap[i], c);
  if (!hk_midc_sparse(i)) HK_STORE_RELAXED(hk_midc_cap_own[i], c);
}

/* (racy between heaps: two looks at once may each write; the last one's
 * stands until the next look, which costs a while of cache or of drain) */
void hk_midc_note_sparse(unsigned i, bool sparse, uint64_t now) {
  uint32_t until = HK_LOAD_RELAXED(hk_midc_sparse_until[i]), t = (uint32_t)now;
  if (sparse) {
    if (until != 0 && (int32_t)(until - t) > (int32_t)(HK_MIDC_SPARSE_MS / 2)) return;  /* renewed lately */
    HK_STORE_RELAXED(hk_midc_sparse_until[i], (t + HK_MIDC_SPARSE_MS) | 1u);  /* (never 0) */
    HK_STORE_RELAXED(hk_midc_cap_own[i], 0);
  } else if (until != 0 && (int32_t)(t - until) >= 0) {
    HK_STORE_RELAXED(hk_midc_sparse_until[i], 0);
    HK_STORE_RELAXED(hk_midc_cap_own[i], HK_LOAD_RELAXED(hk_midc_cap[i]));  /* (the marks leave it as set) */
  }
}

/* HAKMEM_MID_CACHE_KB of blocks per mid class, at least 2 blocks when on.
 * Off under HAKMEM_PROF: the profiler counts a class's bytes in its slow
 * path, which hands the fast path a list cut at the next sample point; a
 * block popped from the cache would be handed out unseen, and a program
 * of mid blocks would go unsampled (prof/sites, prof/report). */
static void midc_caps_init(void) {
  if (!HK_MIDC_ON) return;
  size_t bytes = hk_knobs.prof ? 0 : (size_t)hk_knobs.mid_cache_kb * 1024;
  for (unsigned i = 0; i < HK_NCLASS_MID; i++) {
    size_t n = bytes / hk_class_bytes(HK_NCLASS_SMALL + i);
    hk_midc_set_cap(i, bytes == 0 ? 0 : n < 2 ? 2 : (unsigned)n);
  }
}

void hk_heap_set_hooks(const hk_heap_hooks_t *h) {
  HK_STORE_RELAXED(hk_heap_hooks.refill, h->refill);
  HK_STORE_RELAXED(hk_heap_hooks.purge, h->purge);
  HK_STORE_RELAXED(hk_heap_hooks.stats, h->stats);
  HK_STORE_RELAXED(hk_heap_hooks.deferred, h->deferred);
}

int hk_heap_deferred;
void hk_heap_defer(void) { HK_STORE_RELAXED(hk_heap_deferred, 1); }
/* once per request: the first caller to see it takes it */
HK_COLD void hk_heap_run_deferred(void) {
  if (HK_XCHG_RELAXED(hk_heap_deferred, 0)) HK_HEAP_HOOK(deferred);
}
/* The learner's hook alone, installed when HAKMEM_LEARN is turned on at run
 * time (hak_ctl_set): off at start, the slow paths skip a NULL hook. */
void hk_heap_set_refill_hook(void (*fn)(void)) { HK_STORE_RELAXED(hk_heap_hooks.refill, fn); }

hk_heap_t hk_heap_empty = {
  .direct = { [0 ... HK_DIRECT_N - 1] = &hk_slab_empty },
  .cur = { [0 ... HK_NCLASS - 1] = &hk_slab_empty },
};

/* ---- start-up: what the heap needs before its first slab ------------------ */

static atomic_int start_state;       /* 0 no, 1 running, 2 done */

/* Nothing here allocates, so no malloc can come back in; a second thread
 * waits for the first. */
void hk_heap_start(void) {
  if (HK_LIKELY(atomic_load_explicit(&start_state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&start_state, &expected, 1)) {
    hk_knobs_init();
    hk_list_key_init();
    midc_caps_init();
    HK_STORE_RELAXED(hk_heap_counting, hk_knobs.stats != 0 || hk_knobs.stats_interval_ms != 0);
    /* before any heap exists: on and auto both take bg_lock in every slow
     * path from the start, so that a thread started later may purge any
     * heap (switching it on later would race an owner inside a slow path) */
    hk_heap_bg_on = hk_knobs.background_purge != HK_BG_OFF;
    atomic_store_explicit(&start_state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&start_state, memory_order_acquire) != 2) sched_yield();
}

/* ---- the registry: heap structs live in their own mapped pages ------------ */

static hk_lock_t registry_lock = HK_LOCK_INIT;
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(&registry_lock, sizeof registry_lock, HK_LOCK_HEAPS);
}
/* The registry lock is taken for list moves and walks only: no system
 * call under it (hk_lock_nosys) */
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

/* A heap struct off the free list, zeroed but for what the registry's
 * walkers (stats, the purge thread) may read meanwhile: next_all, which
 * they follow, and live, which says to pass over it (false since its
 * release, until hk_heap_new sets it). Not the mid cache's stacks: a
 * slot is read only below its class's count (midc_n, zeroed), and
 * zeroing them touched three pages a thread that allocates no mid block
 * never would. */
_Static_assert(offsetof(hk_heap_t, midc) + sizeof(((hk_heap_t *)0)->midc) == sizeof(hk_heap_t),
               "the mid cache's stacks are last");
static void heap_zero(hk_heap_t *h) {
  uint8_t *b = (uint8_t *)h;
  size_t live = offsetof(hk_heap_t, live), all = offsetof(hk_heap_t, next_all),
         rest = offsetof(hk_heap_t, next_free), end = offsetof(hk_heap_t, midc);
  memset(b, 0, live);
  memset(b + live + sizeof h->live, 0, all - live - sizeof h->live);
  memset(b + rest, 0, end - rest);
}

/* Heap structs start on a page: the fields a thread touches first (up to
 * the mid cache's stacks, under 12 KiB) then lie on three pages, where a
 * struct that straddled one more boundary touched four. A 64 KiB chunk
 * holds two either way. */
#define HEAP_SLOT hk_align_up(sizeof(hk_heap_t), HK_PAGE)
_Static_assert(offsetof(hk_heap_t, midc) <= 3 * HK_PAGE, "a heap's first fields fit in three pages");

/* A released heap struct, or the next never-used slot of the mapped chunk
 * (a slot is touched only when handed out: linking all of a fresh 64 KiB
 * chunk at once made every process touch the whole chunk for one heap).
 * The lock covers list moves only: the zeroing, the chunk's mmap and a
 * fresh slot's first fault are made out of it. Under it, a thread that
 * starts held it for a time slice when preempted there, while the
 * threads started beside it waited (docs/ARCHITECTURE.md, "No system
 * call under a lock others wait on"). */
static hk_heap_t *registry_alloc(void) {
  static uint8_t *chunk_next, *chunk_end;
  const size_t size = HEAP_SLOT;
  hk_lock_nosys(&registry_lock);
  hk_heap_t *h = registry_free;
  if (h) {
    registry_free = h->next_free;
    hk_unlock_nosys(&registry_lock);
    heap_zero(h);
    return h;
  }
  uint8_t *mem = NULL;
  if ((size_t)(chunk_end - chunk_next) < size) {
    hk_unlock_nosys(&registry_lock);
    mem = hk_os_map_aligned(HK_HEAP_CHUNK_BYTES, HK_PAGE);
    if (!mem) return NULL;
    hk_lock_nosys(&registry_lock);
    if ((size_t)(chunk_end - chunk_next) < size) {  /* (else another thread mapped one meanwhile) */
      chunk_next = mem, chunk_end = mem + HK_HEAP_CHUNK_BYTES;
      mem = NULL;
    }
  }
  h = (hk_heap_t *)chunk_next;
  chunk_next += size;
  hk_unlock_nosys(&registry_lock);
  if (mem) hk_os_unmap(mem, HK_HEAP_CHUNK_BYTES);
  /* fresh zeroed memory, on no list yet: faulted in here (next_all's page
   * and the live flag's, the two the walkers read) */
  HK_STORE_RELAXED(h->live, false);
  h->next_all = NULL;
  hk_lock_nosys(&registry_lock);
  h->next_all = registry_all;
  registry_all = h;
  hk_unlock_nosys(&registry_lock);
  return h;
}

/* The process the heaps' kernel ids were read in (0: no heap yet). A fork
 * without handlers (lock.h) leaves it the parent's. */
static int heap_pid;

hk_heap_t *hk_heap_new(void) {
  hk_heap_start();
  hk_heap_t *h = registry_alloc();   /* zeroed */
  if (!h) return NULL;
  /* every entry, past the last small class's range too (the trailer of the
   * canary measure leaves the top sizes out of every range) */
  for (unsigned i = 0; i < HK_DIRECT_N; i++) h->direct[i] = &hk_slab_empty;
  for (unsigned c = 0; c < HK_NCLASS; c++) h->cur[c] = &hk_slab_empty;
  h->tid = hk_thread_id();
  h->ktid = hk_os_thread_kid();
  if (HK_LOAD_RELAXED(heap_pid) == 0) HK_STORE_RELAXED(heap_pid, hk_os_pid());
  HK_STORE_RELEASE(h->live, true);  /* after its fields: the purge pass reads them once it sees it */
  atomic_fetch_add_explicit(&live_heaps, 1, memory_order_relaxed);
  return h;
}

/* (registry lock held, or a fork child's only thread) */
static void registry_release_locked(hk_heap_t *h) {
  stats_retire(h);
  h->live = false;
  h->next_free = registry_free;
  registry_free = h;
  atomic_fetch_sub_explicit(&live_heaps, 1, memory_order_relaxed);
}

void hk_heap_retire(hk_heap_t *h) {
  /* not while the purge thread is inside it (hk_heap_each_pinned): the
   * struct would be handed on under it. Entered for good: the next
   * owner's zeroing frees it. */
  hk_heap_enter(h);
  hk_lock_nosys(&registry_lock);
  registry_release_locked(h);
  hk_unlock_nosys(&registry_lock);
}

void hk_heap_each_other(void (*fn)(hk_heap_t *h, void *arg), void *arg) {
  hk_heap_t *self = hk_tls_heap;
  hk_lock_nosys(&registry_lock);
  for (hk_heap_t *h = registry_all; h; h = h->next_all)
    if (h != self && HK_LOAD_RELAXED(h->live)) fn(h, arg);
  hk_unlock_nosys(&registry_lock);
}

/* The purge thread's pass (bg.c) holds pass_lock, and fork's prepare takes
 * it (before registry_lock): a fork never finds the pass inside a heap. */
static hk_lock_t pass_lock = HK_LOCK_INIT;

void hk_heap_each_pinned(void (*fn)(hk_heap_t *h, void *arg), void *arg) {
  hk_heap_t *self = hk_tls_heap;
  hk_lock(&pass_lock);
  hk_lock_nosys(&registry_lock);
  hk_heap_t *h = registry_all;
  hk_unlock_nosys(&registry_lock);
  while (h) {
    /* the registry lock to step and pin only: a struct stays mapped and
     * in the list for good, and its next_all never changes */
    hk_heap_t *pin = NULL;
    hk_lock_nosys(&registry_lock);
    for (; h && !pin; h = h->next_all)
      if (h != self && HK_LOAD_ACQUIRE(h->live) && hk_heap_pin(h)) pin = h;
    hk_unlock_nosys(&registry_lock);
    if (!pin) break;
    fn(pin, arg);
    hk_heap_unpin(pin);
  }
  hk_unlock(&pass_lock);
}

size_t hk_heap_count_live(void) { return atomic_load_explicit(&live_heaps, memory_order_relaxed); }

static void stats_add(hk_heap_stats_t *acc, const hk_heap_stats_t *st) {
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    acc->handed[c] += __atomic_load_n(&st->handed[c], __ATOMIC_RELAXED);
    acc->refills[c] += __atomic_load_n(&st->refills[c], __ATOMIC_RELAXED);
    acc->remote[c] += __atomic_load_n(&st->remote[c], __ATOMIC_RELAXED);
  }
}

void hk_heap_sum_stats(hk_heap_stats_t *acc) {
  hk_lock_nosys(&registry_lock);
  for (hk_heap_t *h = registry_all; h; h = h->next_all)
    if (h->live) stats_add(acc, &h->st);
  stats_add(acc, &retired);
  hk_unlock_nosys(&registry_lock);
  /* our own current lists we can walk: those blocks are not out yet */
  hk_heap_t *self = hk_tls_heap;
  if (self == &hk_heap_empty) return;
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    uint64_t n = hk_slab_free_count(self->cur[c]);
    acc->handed[c] = acc->handed[c] >= n ? acc->handed[c] - n : 0;
  }
}

void hk_heap_sum_cached(uint64_t live[HK_NCLASS]) {
  hk_lock_nosys(&registry_lock);
  for (hk_heap_t *h = registry_all; h; h = h->next_all) {
    if (!h->live) continue;
    for (unsigned i = 0; i < HK_NCLASS_MID; i++) {
      uint64_t n = __atomic_load_n(&h->midc_n[i], __ATOMIC_RELAXED);
      uint64_t *l = &live[HK_NCLASS_SMALL + i];
      *l = *l >= n ? *l - n : 0;
    }
  }
  hk_unlock_nosys(&registry_lock);
}

/* ---- fork ------------------------------------------------------------------ */

/* lock.h: as the handlers are registered. A fork before, which ran
 * none, had one thread, the only one with a heap: in the child that thread
 * is the only one, its kernel id the child's pid. The purge thread (not
 * started yet: it starts armed) must look at that id, not the parent's,
 * which another thread may come to have. */
void hk_heap_fork_unarmed(void) {
  int pid = hk_os_pid();
  hk_lock_nosys(&registry_lock);
  if (heap_pid != 0 && heap_pid != pid)
    for (hk_heap_t *h = registry_all; h; h = h->next_all)
      if (h->live && !h->api) h->ktid = pid;
  heap_pid = pid;
  hk_unlock_nosys(&registry_lock);
}

/* (not counted by hk_nosys_enter: held across the fork) */
void hk_heap_fork_prepare(void) {
  hk_lock(&pass_lock);
  hk_lock(&registry_lock);
}
void hk_heap_fork_parent(void) {
  hk_unlock(&registry_lock);
  hk_unlock(&pass_lock);
}

static bool heap_is_api(const hk_heap_t *h) { return h->api; }

/* In the child only the forking thread lives. The other heaps' owners are
 * gone (and a new thread may even get one's thread id back): their
 * superslabs become ownerless and adoptable (the adopter first rebuilds
 * each slab: hk_slab_rebuild), their heap structs reusable. Blocks caught
 * in flight by fork() are lost, nothing worse. */
void hk_heap_fork_child(void) {
  hk_lock_reset(&pass_lock);
  hk_lock_reset(&registry_lock);
  hk_heap_t *self = hk_tls_heap;
  heap_pid = hk_os_pid();
  /* the child's thread has a kernel id of its own; nobody holds our lock
   * (the purge thread holds a heap's lock only under pass_lock, which
   * fork_prepare took) */
  if (self != &hk_heap_empty) self->ktid = hk_os_thread_kid();
  hk_ss_orphan_foreign(self, heap_is_api);
  for (hk_heap_t *h = registry_all; h; h = h->next_all) {
    if (!h->live || h == self || h->api) continue;  /* a first-class heap lives on */
    /* blocks other threads handed this heap (whole pushes: a list never
     * caught halfway) go onto their slabs' remote frees, now ownerless,
     * for the adopter to collect: counted back, not leaked */
    hk_block_t *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_relaxed);
    while (b) {
      hk_block_t *next = hk_gblock_next(b);
      hk_remote_push(hk_slab_of(hk_ss_of(b), b), b);
      b = next;
    }
    /* its mid cache's blocks go back onto their slabs' local_free, which
     * the adopter rebuilds (hk_slab_rebuild): a block listed twice (a
     * stack caught halfway through a drain) is then listed once. Blocks
     * of slabs that are not rebuilt (ours, or abandoned before the fork:
     * it held them as another thread's frees) are lost instead. */
    for (unsigned i = 0; i < HK_NCLASS_MID; i++) {
      unsigned n = h->midc_n[i] < HK_MIDC_SLOTS ? h->midc_n[i] : HK_MIDC_SLOTS;
      for (unsigned k = 0; k < n; k++) {
        hk_block_t *c = *hk_midc_slot(h, i, k);
        if (!hk_chunk_is_ss(hk_chunk_kind(c))) continue;
        hk_slab_t *s = hk_slab_of(hk_ss_of(c), c);
        if (hk_ss_of(c)->forked && HK_LOAD_RELAXED(s->state) != HK_SLAB_UNUSED && hk_slab_is_block(s, c))
          hk_slab_push_aside(s, c);
      }
      h->midc_n[i] = h->midc_head[i] = 0;
    }
    registry_release_locked(h);
  }
}
