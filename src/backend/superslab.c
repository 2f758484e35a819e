/* Superslabs (superslab.h): 2 MiB regions of slabs from the OS, the global
 * cache of empty ones, the abandoned ones, purge of unused slabs. */
#include "backend/superslab.h"

#include <string.h>

#include "base/chunk_map.h"
#include "base/knobs.h"
#include "base/lock.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "base/report.h"
#include "backend/span.h"

/* Global lists, each under its own lock; a thread takes one of them at most
 * once per superslab it acquires, releases or adopts. */
static hk_lock_t cache_lock = HK_LOCK_INIT;
static hk_ss_list_t cache;                 /* empty superslabs, newest first */
static hk_lock_t abandoned_lock = HK_LOCK_INIT;
static hk_ss_list_t abandoned[HK_SS_NKINDS];
static atomic_size_t mapped_count;
static hk_lock_t all_lock = HK_LOCK_INIT;  /* every mapped superslab, for fork */
static hk_superslab_t *all_head;
static _Atomic uint64_t next_collect_ms;
/* cached superslabs not purged (under cache_lock; read without it as a
 * hint: hk_ss_shed returns at once when there are none) */
static size_t cache_unpurged;
#define UNPURGED(d) __atomic_fetch_add(&cache_unpurged, (size_t)(d), __ATOMIC_RELAXED)
/* the tier swap's other half (hk_ss_set_grow_hook) */
static void (*grow_hook)(size_t bytes);

/* OUT_*: off that list while it is purged without the lock; a fork child,
 * where no thread is purging it, puts it back (hk_ss_orphan_foreign). */
enum { LIST_NONE = 0, LIST_CACHE = 100, LIST_ABANDONED = 101, OUT_CACHE = 102, OUT_ABANDONED = 103 };

_Atomic unsigned long hk_ss_events[HK_SS_NEVENTS];
static long purge_delay_ms = -1;           /* -1: the knob's */

long hk_ss_purge_delay_ms(void) {
  long d = HK_LOAD_RELAXED(purge_delay_ms) & ~HK_CAP_PIN;
  return hk_mem_scale_delay(d >= 0 ? d : HK_LOAD_RELAXED(hk_knobs.purge_delay_ms));
}
/* the learner's: a pinned delay stays (one CAS, so a pin is never lost) */
void hk_ss_set_purge_delay_ms(long ms) {
  long old = HK_LOAD_RELAXED(purge_delay_ms);
  while (!(old >= 0 && (old & HK_CAP_PIN)) &&  /* -1: unset, not pinned */
         !__atomic_compare_exchange_n(&purge_delay_ms, &old, ms, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
void hk_ss_pin_purge_delay_ms(long ms) {
  HK_STORE_RELAXED(purge_delay_ms, ms | HK_CAP_PIN);
  atomic_store_explicit(&next_collect_ms, 0, memory_order_relaxed);  /* a shorter delay: now */
}

void hk_ss_take_events(unsigned long out[HK_SS_NEVENTS]) {
  for (unsigned i = 0; i < HK_SS_NEVENTS; i++)
    out[i] = atomic_exchange_explicit(&hk_ss_events[i], 0, memory_order_relaxed);
}

void hk_ss_list_push(hk_ss_list_t *l, hk_superslab_t *ss, uint8_t id) {
  ss->prev = NULL;
  ss->next = l->head;
  if (l->head) l->head->prev = ss;
  l->head = ss;
  l->count++;
  ss->list = id;
}

void hk_ss_list_remove(hk_ss_list_t *l, hk_superslab_t *ss) {
  if (ss->prev) ss->prev->next = ss->next;
  else l->head = ss->next;
  if (ss->next) ss->next->prev = ss->prev;
  ss->next = ss->prev = NULL;
  l->count--;
  ss->list = LIST_NONE;
}

static void ss_init(hk_superslab_t *ss, unsigned kind) {
  ss->kind = (uint8_t)kind;
  ss->slab_shift = kind == HK_SS_KIND_SMALL ? 16 : 18;
  ss->nslabs = (uint8_t)(hk_ss_used_bytes(kind) >> ss->slab_shift);
  ss->free_mask = ss->nslabs == 32 ? 0xffffffffu : ((1u << ss->nslabs) - 1);
  ss->nused = 0;
  ss->list = LIST_NONE;
  ss->forked = false;
  atomic_store_explicit(&ss->heap, NULL, memory_order_relaxed);
  ss->next = ss->prev = NULL;
  /* every descriptor, not only nslabs: a pointer into the guard's half
   * (measure guard) finds an unused slab */
  for (unsigned i = 0; i < HK_SS_MAX_SLABS; i++) {
    hk_slab_t *s = &ss->slabs[i];
    s->free = s->local_free = NULL;
    HK_STORE_RELAXED(s->owner, 0);
    s->used = s->capacity = 0;
    HK_STORE_RELAXED(s->carved, 0);
    HK_STORE_RELAXED(s->lim, 0);
    HK_STORE_RELAXED(s->state, HK_SLAB_UNUSED);
    s->index = (uint8_t)i;
    atomic_store_explicit(&s->xfree, 0, memory_order_relaxed);
  }
}

/* guard: close a small superslab's second MiB (dropping what a mid one
 * left there), or open it again for a mid one (it reads zero); its last
 * page stays closed */
static void ss_set_half_guard(hk_superslab_t *ss, bool on) {
  if (ss->half_guard == on) return;
  uint8_t *half = (uint8_t *)ss + HK_SS_HALF;
  size_t bytes = HK_SS_HALF - HK_SS_GUARD_SIZE;
  if (hk_os_guard_markers()) {
    if (on) hk_os_guard(half, bytes);
    else hk_os_unguard(half, bytes);
  } else if (on) {
    hk_os_decommit(half, bytes);
  } else {
    hk_os_commit(half, bytes);
  }
  ss->half_guard = on;
}

/* A cached superslab for `kind`, off the cache (NULL: none): with cls set,
 * only one among the newest 64 whose slab *slot last served cls and kept
 * its pages (warm_cls says which may: one load a superslab); else the
 * newest of this kind among the newest 64, else the newest. Under
 * cache_lock. */
static hk_superslab_t *cache_take(unsigned kind, int cls, unsigned *slot) {
  hk_superslab_t *ss = cls < 0 ? cache.head : NULL;
  unsigned looked = 0;
  for (hk_superslab_t *c = cache.head; c && looked < 64; c = c->next, looked++) {
    if (c->kind != kind) continue;
    if (cls < 0) { ss = c; break; }
    if (c->purged || !(c->warm_cls[(unsigned)cls >> 6] >> ((unsigned)cls & 63) & 1)) continue;
    int i = hk_ss_warm_slab(c, (unsigned)cls);
    if (i >= 0) {
      *slot = (unsigned)i;
      ss = c;
      break;
    }
  }
  if (ss) {
    hk_ss_list_remove(&cache, ss);
    if (!ss->purged) UNPURGED(-1);
  }
  return ss;
}

hk_superslab_t *hk_ss_acquire(unsigned kind) { return hk_ss_acquire_warm(kind, -1, NULL); }

hk_superslab_t *hk_ss_acquire_warm(unsigned kind, int cls, unsigned *slot) {
  hk_superslab_t *ss = NULL;
  hk_lock(&cache_lock);
  ss = cache_take(kind, cls, slot);
  hk_unlock(&cache_lock);
  if (!ss && cls >= 0) return NULL;
  if (ss) hk_ss_note(HK_SS_CACHE_HITS);
  bool fresh = !ss;  /* new to the lists: lent by the span tier or mapped */
  if (fresh && (ss = hk_span_take_ss()) != NULL) {  /* a free chunk of the span tier's */
    memset(ss, 0, sizeof *ss);  /* as fresh from the OS */
    ss->from_span = true;
    hk_ss_note(HK_SS_SPAN_TAKES);
  } else if (fresh) {
    ss = hk_os_map_aligned(HK_SS_SIZE, HK_SS_SIZE);
    if (!ss) return NULL;
    hk_ss_note(HK_SS_OS_MAPS);
    /* memory about to be faulted in: an idle large tier's pages go first.
     * Not for a purged cached superslab: lowmem purges the cache soon, and
     * shedding then purged the very span pages the next superslabs were
     * lent from (test_span lend under lowmem: 0 lent, against 7) */
    void (*grow)(size_t) = HK_LOAD_RELAXED(grow_hook);
    if (grow) grow(HK_SS_SIZE);
    hk_os_advise_region(ss, HK_SS_SIZE, true);  /* HAKMEM_THP: huge pages, or (never) none */
    /* after the metadata, and the last page: an overflow running off the
     * end. Guard markers split no mapping: with PROT_NONE a secure
     * superslab was three to five mappings, and past about 15,000 of them
     * (vm.max_map_count, 65,530) the calls failed and new superslabs went
     * without their guards */
    if (HK_M_GUARD) {
      hk_os_close_guard((uint8_t *)ss + HK_SS_META_SIZE, HK_SS_GUARD_SIZE);
      hk_os_close_guard((uint8_t *)ss + HK_SS_SIZE - HK_SS_GUARD_SIZE, HK_SS_GUARD_SIZE);
    }
  }
  if (fresh) {
    ss->half_guard = false;
    atomic_fetch_add_explicit(&mapped_count, 1, memory_order_relaxed);
    hk_lock(&all_lock);
    ss->all_prev = NULL;
    ss->all_next = all_head;
    if (all_head) all_head->all_prev = ss;
    all_head = ss;
    hk_unlock(&all_lock);
  }
  if (ss->purged || ss->kind != kind) ss->warm = 0;
  ss_set_half_guard(ss, HK_SS_HALF_GUARD(kind));
  if (ss->purged) hk_ss_note(HK_SS_REFAULTS);
  ss->purged = false;
  /* warm slabs are unused and resident: the owner's purge epoch gives
   * them back if it does not use them (dirty_new -> dirty_old -> purged) */
  ss->dirty_new = ss->warm;
  ss->dirty_old = 0;
  ss->purged_mask = 0;
  ss_init(ss, kind);
  /* (re)announce the slab size: the superslab may have served the other kind */
  HK_ASSERT(hk_chunk_slab_shift(hk_chunk_ss_value(kind)) == ss->slab_shift);
  hk_chunk_set(ss, hk_chunk_ss_value(kind));
  return ss;
}

static void ss_unmap(hk_superslab_t *ss) {
  hk_chunk_set(ss, HK_CHUNK_NONE);
  hk_lock(&all_lock);
  if (ss->all_prev) ss->all_prev->all_next = ss->all_next;
  else all_head = ss->all_next;
  if (ss->all_next) ss->all_next->all_prev = ss->all_prev;
  hk_unlock(&all_lock);
  atomic_fetch_sub_explicit(&mapped_count, 1, memory_order_relaxed);
  if (ss->from_span) hk_span_give_ss(ss, ss->purged ? HK_SS_HDR_SIZE : HK_SS_SIZE);  /* a free run again */
  else hk_os_unmap(ss, HK_SS_SIZE);
}

void hk_ss_release(hk_superslab_t *ss) {
  HK_ASSERT(ss->nused == 0);
  atomic_store_explicit(&ss->heap, NULL, memory_order_relaxed);
  for (unsigned i = 0; i < ss->nslabs; i++) HK_STORE_RELAXED(ss->slabs[i].state, HK_SLAB_UNUSED);
  ss->warm_cls[0] = ss->warm_cls[1] = 0;  /* what cache_take looks at first */
  for (uint32_t m = ss->warm; m; m &= m - 1) {
    unsigned c = ss->slabs[__builtin_ctz(m)].cls;
    ss->warm_cls[c >> 6] |= 1ull << (c & 63);
  }
  ss->stamp_ms = hk_os_now_ms();
  ss->purged = false;
  hk_superslab_t *victim = NULL;
  hk_lock(&cache_lock);
  hk_ss_list_push(&cache, ss, LIST_CACHE);
  UNPURGED(1);
  if ((long)cache.count > hk_mem_scale_cap(HK_LOAD_RELAXED(hk_knobs.ss_cache))) {
    victim = cache.head;
    while (victim->next) victim = victim->next;  /* oldest */
    hk_ss_list_remove(&cache, victim);
    if (!victim->purged) UNPURGED(-1);
  }
  hk_unlock(&cache_lock);
  if (victim) ss_unmap(victim);
  hk_ss_collect(false);
}

void hk_ss_abandon(hk_superslab_t *ss) {
  atomic_store_explicit(&ss->heap, NULL, memory_order_release);
  hk_lock(&abandoned_lock);
  hk_ss_list_push(&abandoned[ss->kind], ss, LIST_ABANDONED);
  hk_unlock(&abandoned_lock);
}

hk_superslab_t *hk_ss_take_abandoned(unsigned kind) {
  hk_lock(&abandoned_lock);
  hk_superslab_t *ss = abandoned[kind].head;
  if (ss) hk_ss_list_remove(&abandoned[kind], ss);
  hk_unlock(&abandoned_lock);
  return ss;
}

/* Unused slabs of a superslab are purged once they stayed unused for a whole
 * epoch (between two calls): dirty_new -> dirty_old -> purged. A superslab
 * backed by a huge page (hk_os_thp() HK_THP_ALL) keeps them until a trim
 * (force): a purge of part of a huge page splits it, and khugepaged may
 * fill it again (RSS grows, jemalloc #1127); it goes back whole, when it
 * empties, from the cache. */
static bool ss_huge(void) { return hk_os_thp() == HK_THP_ALL; }

size_t hk_ss_purge_unused(hk_superslab_t *ss, bool force) {
  if (!force && ss_huge()) {
    ss->dirty_old = ss->dirty_new = 0;
    return 0;
  }
  uint32_t due = (force ? (ss->dirty_old | ss->dirty_new) : ss->dirty_old) & ss->free_mask;
  size_t bytes = 0;
  while (due) {
    unsigned i = (unsigned)__builtin_ctz(due);
    /* merge runs of adjacent slabs into one madvise */
    unsigned j = i;
    while (j + 1 < ss->nslabs && (due & (1u << (j + 1)))) j++;
    uint8_t *from = hk_ss_slab_area(ss, i);
    uint8_t *to = (uint8_t *)ss + ((size_t)(j + 1) << ss->slab_shift);
    hk_os_purge(from, (size_t)(to - from));
    bytes += (size_t)(to - from);
    hk_ss_note(HK_SS_PURGES);
    uint32_t run = (j - i + 1 == 32) ? 0xffffffffu : (((1u << (j - i + 1)) - 1) << i);
    due &= ~run;
    ss->purged_mask |= run;
    ss->warm &= ~run;
  }
  ss->dirty_old = force ? 0 : (ss->dirty_new & ss->free_mask);
  ss->dirty_new = 0;
  return bytes;
}

/* Superslabs taken off a global list to be purged without its lock (no
 * system call under a lock others wait on): nobody can take one from the
 * list meanwhile, and each goes back when its purge is done. */
static void list_put_back(hk_lock_t *lock, hk_ss_list_t *lists, hk_superslab_t *batch, uint8_t id) {
  if (!batch) return;
  hk_lock(lock);
  while (batch) {
    hk_superslab_t *next = batch->next;
    hk_ss_list_push(&lists[id == LIST_CACHE ? 0 : batch->kind], batch, id);
    batch = next;
  }
  hk_unlock(lock);
}

/* What a cached superslab's purge gives back: the slab area only (the
 * header holds the list links, the all-list links and the stamp: issue
 * 17). */
static size_t cached_area(const hk_superslab_t *ss) { return hk_ss_used_bytes(ss->kind) - HK_SS_HDR_SIZE; }

/* Purges a batch taken off the cache (OUT_CACHE, linked by next) with the
 * lock dropped, and puts it back. Bytes purged. */
static size_t purge_cached(hk_superslab_t *batch) {
  size_t bytes = 0;
  for (hk_superslab_t *ss = batch; ss; ss = ss->next) {
    hk_os_purge(hk_ss_slab_area(ss, 0), cached_area(ss));
    bytes += cached_area(ss);
    ss->purged = true;
    hk_ss_note(HK_SS_PURGES);
  }
  list_put_back(&cache_lock, &cache, batch, LIST_CACHE);
  return bytes;
}

size_t hk_ss_collect(bool force) {
  uint64_t now = hk_os_now_ms();
  if (!force && now < atomic_load_explicit(&next_collect_ms, memory_order_relaxed)) return 0;
  uint64_t delay = (uint64_t)hk_ss_purge_delay_ms();
  atomic_store_explicit(&next_collect_ms, now + (delay ? delay / HK_COLLECT_DIV + 1 : 0),
                        memory_order_relaxed);
  size_t bytes = 0;
  /* purged after the delay; unmapped after HK_SS_UNMAP_DELAYS (8) delays (or
   * at once on trim, or after the delay when it is a huge page: it goes back
   * whole); the purge is made off the list, the lock dropped */
  hk_superslab_t *victims = NULL, *purge = NULL;
  hk_lock(&cache_lock);
  for (hk_superslab_t *ss = cache.head, *next; ss; ss = next) {
    next = ss->next;
    bool due = !ss->purged && now - ss->stamp_ms >= delay;
    if (force || now - ss->stamp_ms >= HK_SS_UNMAP_DELAYS * delay || (due && ss_huge())) {
      hk_ss_list_remove(&cache, ss);
      if (!ss->purged) UNPURGED(-1);
      ss->next = victims;
      victims = ss;
    } else if (due) {
      hk_ss_list_remove(&cache, ss);
      UNPURGED(-1);
      ss->list = OUT_CACHE;
      ss->next = purge;
      purge = ss;
    }
  }
  hk_unlock(&cache_lock);
  bytes += purge_cached(purge);
  while (victims) {
    hk_superslab_t *next = victims->next;
    if (!victims->purged) bytes += HK_SS_SIZE;
    ss_unmap(victims);
    victims = next;
  }
  if (force) bytes += hk_ss_purge_abandoned(true);
  return bytes;
}

/* The tier swap: the span tier is about to fault in `bytes` (fresh pages
 * for a large block). Cached superslabs the span tier lent go back to it
 * whole, pages kept, where its next blocks reuse them; of those from the
 * OS, the oldest not yet purged give back as many bytes, off the list
 * while they are purged. Memory one tier freed then serves the other,
 * not both tiers' peaks summed (learner_phase: 64 MiB of big buffers,
 * then 64 MiB of small objects, in turns). */
size_t hk_ss_shed(size_t bytes) {
  if (!HK_LOAD_RELAXED(cache_unpurged)) return 0;
  hk_superslab_t *purge = NULL, *lent = NULL, *ss;
  size_t want = 0;
  hk_lock(&cache_lock);
  for (ss = cache.head; ss && ss->next; ss = ss->next) {
  }
  for (hk_superslab_t *prev; ss; ss = prev) {  /* from the oldest */
    prev = ss->prev;
    if (ss->purged || (!ss->from_span && want >= bytes)) continue;
    hk_ss_list_remove(&cache, ss);
    UNPURGED(-1);
    if (ss->from_span) {
      ss->next = lent;
      lent = ss;
      continue;
    }
    ss->list = OUT_CACHE;
    ss->next = purge;
    purge = ss;
    want += cached_area(ss);
  }
  hk_unlock(&cache_lock);
  size_t done = purge_cached(purge);
  while (lent) {
    hk_superslab_t *next = lent->next;
    ss_unmap(lent);
    lent = next;
  }
  return done;
}

void hk_ss_set_grow_hook(void (*fn)(size_t bytes)) { HK_STORE_RELAXED(grow_hook, fn); }

/* Abandoned superslabs: nobody owns them (their list lock does), so their
 * unused slabs can go: all (force) or those unused for a whole epoch
 * (between two calls: the background purge's clock). Those with slabs to
 * purge leave the list while they are purged (an adopter takes another or
 * maps one) and go back after. */
size_t hk_ss_purge_abandoned(bool force) {
  size_t bytes = 0;
  hk_superslab_t *batch = NULL;
  hk_lock(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (hk_superslab_t *ss = abandoned[k].head, *next; ss; ss = next) {
      next = ss->next;
      if (force || (ss->dirty_old | ss->dirty_new)) {
        hk_ss_list_remove(&abandoned[k], ss);
        ss->list = OUT_ABANDONED;
        ss->next = batch;
        batch = ss;
      }
    }
  hk_unlock(&abandoned_lock);
  for (hk_superslab_t *ss = batch; ss; ss = ss->next) bytes += hk_ss_purge_unused(ss, force);
  list_put_back(&abandoned_lock, abandoned, batch, LIST_ABANDONED);
  return bytes;
}

#ifdef HK_DEBUG
/* A list's links, ids and count. */
static void check_list(const hk_ss_list_t *l, uint8_t id) {
  size_t n = 0;
  for (const hk_superslab_t *ss = l->head, *prev = NULL; ss; prev = ss, ss = ss->next, n++) {
    HK_ASSERT(((uintptr_t)ss & HK_SS_MASK) == 0);
    HK_ASSERT(ss->prev == prev);
    HK_ASSERT(ss->list == id);
    HK_ASSERT(n < l->count);
  }
  HK_ASSERT(n == l->count);
}

void hk_ss_check_lists(void) {
  hk_lock(&all_lock);
  size_t n = 0;
  for (const hk_superslab_t *ss = all_head, *prev = NULL; ss; prev = ss, ss = ss->all_next, n++) {
    HK_ASSERT(((uintptr_t)ss & HK_SS_MASK) == 0);
    HK_ASSERT(ss->all_prev == prev);
  }
  /* counted before it joins, after it leaves: never fewer than listed */
  HK_ASSERT(n <= hk_ss_count_mapped());
  hk_unlock(&all_lock);
  hk_lock(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    check_list(&abandoned[k], LIST_ABANDONED);
    for (const hk_superslab_t *ss = abandoned[k].head; ss; ss = ss->next) {
      HK_ASSERT(ss->kind == k);
      HK_ASSERT(atomic_load_explicit(&ss->heap, memory_order_relaxed) == NULL);
    }
  }
  hk_unlock(&abandoned_lock);
  hk_lock(&cache_lock);
  check_list(&cache, LIST_CACHE);
  uint64_t now = hk_os_now_ms();
  for (const hk_superslab_t *ss = cache.head; ss; ss = ss->next) {
    HK_ASSERT(ss->nused == 0);
    HK_ASSERT(ss->stamp_ms <= now);
    HK_ASSERT(atomic_load_explicit(&ss->heap, memory_order_relaxed) == NULL);
  }
  hk_unlock(&cache_lock);
}

void hk_ss_check_owned(const hk_ss_list_t *l, uint8_t id, unsigned kind, const struct hk_heap *h) {
  check_list(l, id);
  for (const hk_superslab_t *ss = l->head; ss; ss = ss->next) {
    HK_ASSERT(ss->kind == kind);
    HK_ASSERT(atomic_load_explicit(&ss->heap, memory_order_relaxed) == h);
    uint32_t all = ss->nslabs == 32 ? 0xffffffffu : ((1u << ss->nslabs) - 1);
    HK_ASSERT((ss->free_mask & ~all) == 0);
    HK_ASSERT(ss->nused == (uint32_t)__builtin_popcount(all & ~ss->free_mask));
  }
}
#endif

void hk_ss_census(uint64_t live[HK_NCLASS], uint64_t slabs[HK_NCLASS]) {
  hk_lock(&all_lock);
  for (hk_superslab_t *ss = all_head; ss; ss = ss->all_next) {
    if (ss->list == LIST_CACHE) continue;
    unsigned n = __atomic_load_n(&ss->nslabs, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n && i < HK_SS_MAX_SLABS; i++) {
      hk_slab_t *s = &ss->slabs[i];
      if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) == HK_SLAB_UNUSED) continue;
      unsigned c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
      if (c >= HK_NCLASS) continue;
      live[c] += __atomic_load_n(&s->used, __ATOMIC_RELAXED);
      slabs[c]++;
    }
  }
  hk_unlock(&all_lock);
}

size_t hk_ss_cached_unpurged_bytes(void) {
  size_t bytes = 0;
  hk_lock(&cache_lock);
  for (hk_superslab_t *ss = cache.head; ss; ss = ss->next)
    if (!ss->purged) bytes += HK_SS_SIZE;
  hk_unlock(&cache_lock);
  return bytes;
}

size_t hk_ss_count_mapped(void) { return atomic_load_explicit(&mapped_count, memory_order_relaxed); }
size_t hk_ss_count_cached(void) { return cache.count; }
size_t hk_ss_count_abandoned(void) { return abandoned[0].count + abandoned[1].count; }

void hk_ss_orphan_foreign(struct hk_heap *self, bool (*kept)(const struct hk_heap *h)) {
  for (hk_superslab_t *ss = all_head; ss; ss = ss->all_next) {
    struct hk_heap *owner = atomic_load_explicit(&ss->heap, memory_order_relaxed);
    if (ss->list == OUT_CACHE || ss->list == OUT_ABANDONED) {  /* its purge was cut off by fork() */
      if (ss->list == OUT_CACHE) hk_ss_list_push(&cache, ss, LIST_CACHE);
      else hk_ss_list_push(&abandoned[ss->kind], ss, LIST_ABANDONED);
      continue;
    }
    if (owner == NULL) continue;
    if (owner == self || kept(owner)) {
      /* a thread that was handing us a block mid-fork is gone: leave the
       * NOTIFYING state it would have cleared (the block is lost) */
      for (unsigned i = 0; i < ss->nslabs; i++) {
        hk_slab_t *s = &ss->slabs[i];
        uintptr_t v = atomic_load_explicit(&s->xfree, memory_order_relaxed);
        if ((v & 3) == HK_XF_NOTIFYING)
          atomic_store_explicit(&s->xfree, (v & ~(uintptr_t)3) |
                                (s->state == HK_SLAB_FULL ? HK_XF_NOTIFY : HK_XF_NORMAL),
                                memory_order_relaxed);
      }
      continue;
    }
    /* Its owner's lists may have been caught mid-update by fork(): touch
     * nothing but the slabs' ownership; the adopter rebuilds the rest. */
    ss->forked = true;
    for (unsigned i = 0; i < ss->nslabs; i++) {
      hk_slab_t *s = &ss->slabs[i];
      HK_STORE_RELAXED(s->owner, 0);
      uintptr_t v = atomic_load_explicit(&s->xfree, memory_order_relaxed);
      atomic_store_explicit(&s->xfree, v & ~(uintptr_t)3, memory_order_relaxed);
    }
    if (ss->list == LIST_CACHE || ss->list == LIST_ABANDONED) continue;
    hk_ss_abandon(ss);
  }
}

void hk_ss_fork_prepare(void) { hk_lock(&all_lock); hk_lock(&abandoned_lock); hk_lock(&cache_lock); }
void hk_ss_fork_parent(void) { hk_unlock(&cache_lock); hk_unlock(&abandoned_lock); hk_unlock(&all_lock); }
void hk_ss_fork_child(void) {
  hk_lock_reset(&cache_lock);
  hk_lock_reset(&abandoned_lock);
  hk_lock_reset(&all_lock);
}
