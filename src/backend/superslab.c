/* Superslabs (superslab.h): 2 MiB regions of slabs from the OS, the global
 * cache of empty ones, the abandoned ones, purge of unused slabs. */
#include "backend/superslab.h"

#include <string.h>

#include "base/cap.h"
#include "base/chunk_map.h"
#include "base/collect.h"
#include "base/dlist.h"
#include "base/gate.h"
#include "base/knobs.h"
#include "base/lock.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "base/report.h"
#include "backend/span.h"

/* Global lists, each under its own lock; a thread takes one of them at most
 * once per superslab it acquires, releases or adopts. */
static hk_lock_t cache_lock = HK_LOCK_INIT;
static int collect_busy;  /* a collect pass is running (collect.h, hk_pass_begin) */
static hk_ss_list_t cache;                 /* empty superslabs, newest first */
static hk_lock_t abandoned_lock = HK_LOCK_INIT;
static hk_ss_list_t abandoned[HK_SS_NKINDS];
static size_t mapped_count;
static hk_lock_t all_lock = HK_LOCK_INIT;  /* every mapped superslab, for fork */
static hk_superslab_t *all_head;
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(&cache_lock, sizeof cache_lock, HK_LOCK_SS_CACHE);
  hk_lock_name(&abandoned_lock, sizeof abandoned_lock, HK_LOCK_SS_ABANDONED);
  hk_lock_name(&all_lock, sizeof all_lock, HK_LOCK_SS_ALL);
}
static uint64_t collect_gate;             /* hk_ss_collect's clock (base/gate.h) */
/* cached superslabs not purged (under cache_lock; read without it as a
 * hint: hk_ss_shed returns at once when there are none) */
static size_t cache_unpurged;
#define UNPURGED(d) HK_ADD_RELAXED(cache_unpurged, (size_t)(d))
/* the tier swap's other half (hk_ss_set_grow_hook) */
static void (*grow_hook)(size_t bytes);
static void (*orphan_hook)(hk_superslab_t *ss);  /* hk_ss_set_orphan_hook */
static size_t (*park_hook)(hk_superslab_t *ss);  /* hk_ss_set_park_hook */

/* OUT_*: off that list while it is purged without the lock; a fork child,
 * where no thread is purging it, puts it back (hk_ss_orphan_foreign). */
enum { LIST_NONE = 0, LIST_CACHE = 100, LIST_ABANDONED = 101, OUT_CACHE = 102, OUT_ABANDONED = 103 };
/* Superslabs off the cache or the abandoned lists meanwhile: purged
 * without the lock, or on their way to an unmap. The stats count them
 * where they came from (hk_ss_count_cached, hk_ss_count_abandoned): a
 * snapshot taken during another thread's purge counted them in use. One
 * unmapped is dropped beside the mapped count (ss_unmap_counted). A
 * snapshot is still not atomic: one transition between its reads puts it
 * off by one. */
static size_t out_cache, out_abandoned;
#define OUT(var, d) HK_ADD_RELAXED(var, (size_t)(d))

unsigned long hk_ss_events[HK_SS_NEVENTS];
static long purge_delay_ms = HK_CAP_UNSET;  /* a pinned cap (base/cap.h) */

long hk_ss_purge_delay_ms(void) {
  return hk_mem_scale_delay(hk_cap_or(&purge_delay_ms, &hk_knobs.purge_delay_ms));
}
void hk_ss_set_purge_delay_ms(long ms) { hk_cap_learn(&purge_delay_ms, ms); }
void hk_ss_pin_purge_delay_ms(long ms) {
  hk_cap_pin(&purge_delay_ms, ms);
  hk_gate_set(&collect_gate, 0);  /* a shorter delay: now */
}

hk_reuse_hist_t hk_ss_reuse;

void hk_ss_take_events(unsigned long out[HK_SS_NEVENTS]) {
  for (unsigned i = 0; i < HK_SS_NEVENTS; i++)
    out[i] = HK_XCHG_RELAXED(hk_ss_events[i], 0);
}

void hk_ss_list_push(hk_ss_list_t *l, hk_superslab_t *ss, uint8_t id) {
  HK_DL_PUSH(l->head, ss, next, prev);
  /* an atomic store: hk_ss_bundle_room reads the count without the lock */
  HK_STORE_RELAXED(l->count, l->count + 1);
  ss->list = id;
}

void hk_ss_list_remove(hk_ss_list_t *l, hk_superslab_t *ss) {
  HK_DL_UNLINK(l->head, ss, next, prev);
  ss->next = ss->prev = NULL;
  HK_STORE_RELAXED(l->count, l->count - 1);
  ss->list = LIST_NONE;
}

/* What ss_init would write to a descriptor it holds already (its index
 * aside, which only a slab taken reads). */
static bool desc_unused(hk_slab_t *s) {
  return s->free == NULL && s->local_free == NULL && HK_LOAD_RELAXED(s->owner) == 0 && s->used == 0 &&
         s->capacity == 0 && HK_LOAD_RELAXED(s->carved) == 0 && HK_LOAD_RELAXED(s->lim) == 0 &&
         HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED && atomic_load_explicit(&s->xfree, memory_order_relaxed) == 0;
}

static void ss_init(hk_superslab_t *ss, unsigned kind) {
  ss->kind = (uint8_t)kind;
  ss->slab_shift = kind == HK_SS_KIND_SMALL ? 16 : 18;
  ss->nslabs = (uint8_t)(hk_ss_used_bytes(kind) >> ss->slab_shift);
  ss->free_mask = ss->nslabs == 32 ? 0xffffffffu : ((1u << ss->nslabs) - 1);
  ss->nused = 0;
  ss->list = LIST_NONE;
  ss->forked = false;
  HK_STORE_RELAXED(ss->heap, NULL);
  ss->next = ss->prev = NULL;
  /* every descriptor, not only nslabs: a pointer into the guard's half
   * (measure guard) finds an unused slab. Those past the header's first
   * page only when they need it: a fresh superslab's read zero already,
   * and a write there would make every superslab keep a second page that
   * a program of a few slabs never uses. Nor are they read unless one was
   * taken (desc_hi): on a kernel that maps no zero page a read costs the
   * page too. hk_slab_init sets the index of a slab taken. */
  for (unsigned i = 0; i < HK_SS_MAX_SLABS; i++) {
    hk_slab_t *s = &ss->slabs[i];
    if (i >= HK_SS_DESC_PAGE1 && (!ss->desc_hi || desc_unused(s))) continue;
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

static hk_superslab_t *take_abandoned_empty(unsigned kind);

/* A chunk the span tier lends may hold an old block's bytes: its header
 * reads as a fresh mapping's, zero. The first page whole; a descriptor
 * past it only where it is not zero already (a purged page reads zero
 * and stays out of memory). */
static void span_header_zero(hk_superslab_t *ss) {
  static const hk_slab_t zero;
  memset(ss, 0, HK_PAGE);
  for (unsigned i = HK_SS_DESC_PAGE1; i < HK_SS_MAX_SLABS; i++)
    if (memcmp(&ss->slabs[i], &zero, sizeof zero) != 0) memset(&ss->slabs[i], 0, sizeof zero);
}

hk_superslab_t *hk_ss_acquire(unsigned kind) { return hk_ss_acquire_warm(kind, -1, NULL); }

hk_superslab_t *hk_ss_acquire_warm(unsigned kind, int cls, unsigned *slot) {
  hk_superslab_t *ss = NULL;
  hk_lock_nosys(&cache_lock);
  ss = cache_take(kind, cls, slot);
  hk_unlock_nosys(&cache_lock);
  if (!ss && cls >= 0) return NULL;
  if (!ss) ss = take_abandoned_empty(kind);
  if (ss) hk_ss_note(HK_SS_CACHE_HITS);
  bool fresh = !ss;  /* new to the lists: lent by the span tier or mapped */
  if (fresh && (ss = hk_span_take_ss()) != NULL) {  /* a free chunk of the span tier's */
    span_header_zero(ss);  /* as fresh from the OS */
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
    HK_ADD_RELAXED(mapped_count, 1);
    hk_lock_nosys(&all_lock);
    HK_DL_PUSH(all_head, ss, all_next, all_prev);
    hk_unlock_nosys(&all_lock);
  }
  if (ss->purged || ss->kind != kind) ss->warm = 0;
  ss_set_half_guard(ss, HK_SS_HALF_GUARD(kind));
  if (ss->purged) {
    hk_ss_note(HK_SS_REFAULTS);
    if (hk_learn_counting()) {  /* unused since it was cached */
      uint64_t now = hk_os_now_ms();
      hk_ss_note_reuse(now > ss->stamp_ms ? now - ss->stamp_ms : 0, hk_ss_used_bytes(ss->kind) - HK_SS_HDR_SIZE);
    }
  }
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

/* out_of_cache: it was counted in out_cache, dropped beside the mapped
 * count (a snapshot between the two is off by one, not by a lock wait) */
static void ss_unmap_counted(hk_superslab_t *ss, bool out_of_cache) {
  hk_chunk_set(ss, HK_CHUNK_NONE);
  hk_lock_nosys(&all_lock);
  HK_DL_UNLINK(all_head, ss, all_next, all_prev);
  hk_unlock_nosys(&all_lock);
  HK_SUB_RELAXED(mapped_count, 1);
  if (out_of_cache) HK_SUB_RELAXED(out_cache, 1);
  if (ss->from_span) hk_span_give_ss(ss, ss->purged ? HK_SS_HDR_SIZE : HK_SS_SIZE);  /* a free run again */
  else hk_os_unmap(ss, HK_SS_SIZE);
}
static void ss_unmap(hk_superslab_t *ss) { ss_unmap_counted(ss, false); }

static uint32_t ss_all_mask(const hk_superslab_t *ss) {
  return ss->nslabs >= 32 ? 0xffffffffu : (1u << ss->nslabs) - 1;
}

static void cache_put(hk_superslab_t *ss) {
  HK_ASSERT(ss->nused == 0);
  HK_STORE_RELAXED(ss->heap, NULL);
  for (unsigned i = 0, n = hk_ss_desc_n(ss); i < n; i++)  /* (a write only where it changes: HK_SS_DESC_PAGE1) */
    if (HK_LOAD_RELAXED(ss->slabs[i].state) != HK_SLAB_UNUSED) HK_STORE_RELAXED(ss->slabs[i].state, HK_SLAB_UNUSED);
  ss->warm_cls[0] = ss->warm_cls[1] = 0;  /* what cache_take looks at first */
  for (uint32_t m = ss->warm; m; m &= m - 1) {
    unsigned c = ss->slabs[__builtin_ctz(m)].cls;
    ss->warm_cls[c >> 6] |= 1ull << (c & 63);
  }
  ss->stamp_ms = hk_os_now_ms();
  ss->purged = false;
  hk_superslab_t *victim = NULL;
  hk_lock_nosys(&cache_lock);
  hk_ss_list_push(&cache, ss, LIST_CACHE);
  UNPURGED(1);
  if ((long)cache.count > hk_mem_scale_cap(HK_LOAD_RELAXED(hk_knobs.ss_cache))) {
    victim = cache.head;
    while (victim->next) victim = victim->next;  /* oldest */
    hk_ss_list_remove(&cache, victim);
    if (!victim->purged) UNPURGED(-1);
  }
  hk_unlock_nosys(&cache_lock);
  if (victim) ss_unmap(victim);
}

void hk_ss_release(hk_superslab_t *ss) {
  cache_put(ss);
  hk_ss_collect(false);
}

void hk_ss_abandon(hk_superslab_t *ss) {
  HK_STORE_RELEASE(ss->heap, NULL);
  ss->stamp_ms = hk_os_now_ms();
  ss->park_due = true;
  /* the classes it holds blocks of or kept warm: hk_ss_take_bundled */
  ss->warm_cls[0] = ss->warm_cls[1] = 0;
  for (uint32_t m = (~ss->free_mask | ss->warm) & ss_all_mask(ss); m; m &= m - 1) {
    unsigned c = ss->slabs[__builtin_ctz(m)].cls;
    ss->warm_cls[c >> 6] |= 1ull << (c & 63);
  }
  hk_lock_nosys(&abandoned_lock);
  hk_ss_list_push(&abandoned[ss->kind], ss, LIST_ABANDONED);
  hk_unlock_nosys(&abandoned_lock);
}

static uint32_t bundle_seq;
uint32_t hk_ss_new_bundle(void) { return HK_ADD_RELAXED(bundle_seq, 1) + 1; }

/* Empty superslabs wait here under the cache's cap: with the cached ones,
 * no more than HAKMEM_SS_CACHE (0: unmapped at once), and no more than
 * HK_SS_BUNDLED_MAX on a kind's list. */
bool hk_ss_bundle_room(unsigned kind) {
  long cap = hk_mem_scale_cap(HK_LOAD_RELAXED(hk_knobs.ss_cache));
  if (HK_LOAD_RACY(abandoned[kind].count) >= HK_SS_BUNDLED_MAX || cap <= 0) return false;
  long empty = (long)HK_LOAD_RACY(cache.count);
  hk_lock_nosys(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (const hk_superslab_t *ss = abandoned[k].head; ss; ss = ss->next) empty += ss->nused == 0;
  hk_unlock_nosys(&abandoned_lock);
  return empty < cap;
}

/* An empty abandoned superslab (a bundle no new thread took), for a heap
 * that would otherwise map one: of `kind`, else of the other (the cache
 * serves either kind; an exited heap's empty superslabs wait here). */
static bool is_empty(const hk_superslab_t *ss, uint32_t b, unsigned cls) {
  (void)b, (void)cls;
  return ss->nused == 0;
}
static bool in_bundle(const hk_superslab_t *ss, uint32_t b, unsigned cls) {
  return ss->bundle == b && (ss->warm_cls[cls >> 6] >> (cls & 63) & 1);
}
/* The first of the first HK_SS_BUNDLED_MAX superslabs on kind's abandoned
 * list that `fits`, taken off it; NULL: none. Under abandoned_lock. */
static hk_superslab_t *abandoned_take_first(unsigned kind, bool (*fits)(const hk_superslab_t *, uint32_t, unsigned),
                                            uint32_t b, unsigned cls) {
  unsigned looked = 0;
  for (hk_superslab_t *ss = abandoned[kind].head; ss && looked < HK_SS_BUNDLED_MAX; ss = ss->next, looked++)
    if (fits(ss, b, cls)) {
      hk_ss_list_remove(&abandoned[kind], ss);
      return ss;
    }
  return NULL;
}

static hk_superslab_t *take_abandoned_empty(unsigned kind) {
  hk_superslab_t *ss = NULL;
  hk_lock_nosys(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS && !ss; k++) ss = abandoned_take_first(kind ^ k, is_empty, 0, 0);
  hk_unlock_nosys(&abandoned_lock);
  return ss;
}

hk_superslab_t *hk_ss_take_bundled(unsigned kind, uint32_t b, unsigned cls) {
  hk_lock_nosys(&abandoned_lock);
  hk_superslab_t *ss = abandoned_take_first(kind, in_bundle, b, cls);
  hk_unlock_nosys(&abandoned_lock);
  return ss;
}

hk_superslab_t *hk_ss_take_abandoned(unsigned kind) {
  hk_lock_nosys(&abandoned_lock);
  hk_superslab_t *ss = abandoned[kind].head;
  if (ss) hk_ss_list_remove(&abandoned[kind], ss);
  hk_unlock_nosys(&abandoned_lock);
  return ss;
}

/* Unused slabs of a superslab are purged once they stayed unused for a whole
 * epoch (between two calls): dirty_new -> dirty_old -> purged. A superslab
 * backed by a huge page (hk_os_thp() HK_THP_ALL) keeps them until a trim
 * (force): a purge of part of a huge page splits it, and khugepaged may
 * fill it again (RSS grows, jemalloc #1127); it goes back whole, when it
 * empties, from the cache. Except a superslab its heap keeps wholly unused
 * for an epoch (a program that freed it all and went idle): its slabs go
 * back, the huge page split from the header's pages, and khugepaged is
 * told to leave the range (MADV_NOHUGEPAGE) until a slab of it is taken
 * again (hk_ss_slab_taken). */
static bool ss_huge(void) { return hk_os_thp() == HK_THP_ALL; }

/* Purges slabs i..j of ss, from slab i's area up to `to`: their pages go
 * back, the counters count it, and the run is purged and no longer warm.
 * Bytes. (The caller keeps the dirty masks.) */
static size_t purge_run(hk_superslab_t *ss, unsigned i, unsigned j, uint8_t *to) {
  uint8_t *from = hk_ss_slab_area(ss, i);
  size_t n = (size_t)(to - from);
  hk_os_purge(from, n);
  hk_ss_note(HK_SS_PURGES);
  hk_ss_note_n(HK_SS_PURGED_PAGES, (unsigned long)n >> 12);
  uint32_t run = (j - i + 1 == 32) ? 0xffffffffu : (((1u << (j - i + 1)) - 1) << i);
  ss->purged_mask |= run;
  ss->warm &= ~run;
  return n;
}

size_t hk_ss_purge_unused(hk_superslab_t *ss, bool force) {
  bool split = false;
  if (!force) {
    /* one epoch step per purge delay, whichever clock calls (the owner's,
     * the purge thread's): a slab released before one step and purged at
     * the next was unused for the delay at least */
    uint64_t now = hk_os_now_ms();
    if (now - ss->epoch_ms < (uint64_t)hk_ss_purge_delay_ms()) return 0;
    ss->epoch_ms = now;
  }
  if (!force && ss_huge()) {
    uint32_t all = ss->nslabs >= 32 ? 0xffffffffu : (1u << ss->nslabs) - 1;
    uint32_t idle = (ss->dirty_old | ss->purged_mask) & ss->free_mask;
    if (ss->free_mask != all || idle != all || !(ss->dirty_old & ~ss->purged_mask)) {
      ss->dirty_old = (ss->dirty_old | ss->dirty_new) & ss->free_mask;  /* the epochs go on */
      ss->dirty_new = 0;
      return 0;
    }
    split = true;
  }
  uint32_t due = (force ? (ss->dirty_old | ss->dirty_new) : ss->dirty_old) & ss->free_mask;
  size_t bytes = 0;
  while (due) {
    unsigned i = (unsigned)__builtin_ctz(due);
    /* merge runs of adjacent slabs into one madvise */
    unsigned j = i;
    while (j + 1 < ss->nslabs && (due & (1u << (j + 1)))) j++;
    bytes += purge_run(ss, i, j, (uint8_t *)ss + ((size_t)(j + 1) << ss->slab_shift));
    due &= (j + 1 >= 32) ? 0 : ~0u << (j + 1);  /* slabs i..j done (none below i was due) */
  }
  ss->dirty_old = force ? 0 : (ss->dirty_new & ss->free_mask);
  ss->dirty_new = 0;
  if (split && bytes) {
    hk_os_advise_nohuge(ss, HK_SS_SIZE);
    ss->thp_split = true;
  }
  return bytes;
}

size_t hk_ss_purge_some(hk_superslab_t *ss, size_t want) {
  size_t bytes = 0;
  /* superslabs on huge pages are purged whole or not at all (the clock's
   * rule above): a slab's purge would split the huge page under it */
  if (ss_huge()) return 0;
  /* dirty_old first: unused for an epoch already, the clock's next */
  for (int pass = 0; pass < 2 && bytes < want; pass++) {
    uint32_t due = (pass == 0 ? ss->dirty_old : ss->dirty_new) & ss->free_mask & ~ss->purged_mask;
    while (due && bytes < want) {
      unsigned i = (unsigned)__builtin_ctz(due);
      uint32_t bit = 1u << i;
      bytes += purge_run(ss, i, i, hk_ss_slab_area(ss, i) + hk_ss_slab_area_bytes(ss, i));
      due &= ~bit;
      ss->dirty_old &= ~bit;
      ss->dirty_new &= ~bit;
    }
  }
  return bytes;
}

void hk_ss_slab_taken(hk_superslab_t *ss) {
  if (HK_UNLIKELY(ss->thp_split)) {
    ss->thp_split = false;
    hk_os_advise_huge(ss, HK_SS_SIZE);
  }
}

/* Superslabs taken off a global list to be purged without its lock (no
 * system call under a lock others wait on): nobody can take one from the
 * list meanwhile, and each goes back when its purge is done. */
static void list_put_back(hk_lock_t *lock, hk_ss_list_t *lists, hk_superslab_t *batch, uint8_t id) {
  if (!batch) return;
  size_t n = 0;
  hk_lock_nosys(lock);
  while (batch) {
    hk_superslab_t *next = batch->next;
    hk_ss_list_push(&lists[id == LIST_CACHE ? 0 : batch->kind], batch, id);
    batch = next;
    n++;
  }
  if (id == LIST_CACHE) OUT(out_cache, -n);
  else OUT(out_abandoned, -n);
  hk_unlock_nosys(lock);
}

/* A superslab taken off the cache to be unmapped */
static void unmap_out_of_cache(hk_superslab_t *ss) { ss_unmap_counted(ss, true); }

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
    hk_ss_note_n(HK_SS_PURGED_PAGES, cached_area(ss) >> 12);
  }
  list_put_back(&cache_lock, &cache, batch, LIST_CACHE);
  return bytes;
}

/* The cache's collect (base/collect.h): purged after the delay; unmapped
 * after HK_SS_UNMAP_DELAYS (8) delays (or at once on trim, or after the
 * delay when it is a huge page: it goes back whole); the purge is made off
 * the list, the lock dropped. */
typedef struct {
  uint64_t now, delay;
  bool force;
  hk_superslab_t *victims, *purge;  /* to unmap; to purge (OUT_CACHE); linked by next */
} collect_t;

static void collect_pick(void *arg) {
  collect_t *c = arg;
  for (hk_superslab_t *ss = cache.head, *next; ss; ss = next) {
    next = ss->next;
    bool due = !ss->purged && c->now - ss->stamp_ms >= c->delay;
    if (c->force || c->now - ss->stamp_ms >= HK_SS_UNMAP_DELAYS * c->delay || (due && ss_huge())) {
      hk_ss_list_remove(&cache, ss);
      OUT(out_cache, 1);
      if (!ss->purged) UNPURGED(-1);
      ss->list = OUT_CACHE;  /* (a fork child puts it back: still mapped there) */
      ss->next = c->victims;
      c->victims = ss;
    } else if (due) {
      hk_ss_list_remove(&cache, ss);
      OUT(out_cache, 1);
      UNPURGED(-1);
      ss->list = OUT_CACHE;
      ss->next = c->purge;
      c->purge = ss;
    }
  }
}

static size_t collect_release(void *arg) {
  collect_t *c = arg;
  size_t bytes = purge_cached(c->purge);
  for (hk_superslab_t *ss = c->victims, *next; ss; ss = next) {
    next = ss->next;
    if (!ss->purged) bytes += HK_SS_SIZE;
    unmap_out_of_cache(ss);
  }
  return bytes;
}

size_t hk_ss_collect(bool force) {
  uint64_t now = hk_os_now_ms();
  if (!force && !hk_gate_due(&collect_gate, now)) return 0;
  uint64_t delay = (uint64_t)hk_ss_purge_delay_ms();
  uint64_t every = delay ? delay / HK_COLLECT_DIV + 1 : 0;
  if (force) hk_gate_set(&collect_gate, now + every);
  else if (!hk_gate_pass(&collect_gate, now, every)) return 0;  /* another thread is on it */
  if (!hk_pass_begin(&collect_busy, force)) return 0;
  /* exited heaps' superslabs no thread took: unused slabs purged, empty
   * ones to the cache (first: a forced pass then empties them too) */
  size_t bytes = hk_ss_purge_abandoned(force);
  collect_t c = { .now = now, .delay = delay, .force = force };
  bytes += hk_collect(&cache_lock, collect_pick, collect_release, &c);
  hk_pass_end(&collect_busy);
  return bytes;
}

/* The tier swap: the span tier is about to fault in `bytes` (fresh pages
 * for a large block). Cached superslabs the span tier lent go back to it
 * whole, pages kept, where its next blocks reuse them; of those from the
 * OS, the oldest not yet purged give back as many bytes, off the list
 * while they are purged. Memory one tier freed then serves the other,
 * not both tiers' peaks summed (a program whose phases of big buffers and
 * of small objects take turns). */
typedef struct {
  size_t bytes, want;               /* asked for; taken to purge */
  hk_superslab_t *purge, *lent;     /* to purge (OUT_CACHE); to give back to the span tier */
} shed_t;

static void shed_pick(void *arg) {
  shed_t *t = arg;
  hk_superslab_t *ss;
  for (ss = cache.head; ss && ss->next; ss = ss->next) {
  }
  for (hk_superslab_t *prev; ss; ss = prev) {  /* from the oldest */
    prev = ss->prev;
    if (ss->purged || (!ss->from_span && t->want >= t->bytes)) continue;
    hk_ss_list_remove(&cache, ss);
    OUT(out_cache, 1);
    UNPURGED(-1);
    ss->list = OUT_CACHE;
    if (ss->from_span) {
      ss->next = t->lent;
      t->lent = ss;
      continue;
    }
    ss->next = t->purge;
    t->purge = ss;
    t->want += cached_area(ss);
  }
}

/* bytes purged (those given back whole to the span tier are its own) */
static size_t shed_release(void *arg) {
  shed_t *t = arg;
  size_t done = purge_cached(t->purge);
  for (hk_superslab_t *ss = t->lent, *next; ss; ss = next) {
    next = ss->next;
    unmap_out_of_cache(ss);
  }
  return done;
}

size_t hk_ss_shed(size_t bytes) {
  if (!HK_LOAD_RELAXED(cache_unpurged)) return 0;
  shed_t t = { .bytes = bytes };
  return hk_collect(&cache_lock, shed_pick, shed_release, &t);
}

void hk_ss_set_grow_hook(void (*fn)(size_t bytes)) { HK_STORE_RELAXED(grow_hook, fn); }
void hk_ss_set_orphan_hook(void (*fn)(hk_superslab_t *ss)) { HK_STORE_RELAXED(orphan_hook, fn); }
void hk_ss_set_park_hook(size_t (*fn)(hk_superslab_t *ss)) { HK_STORE_RELAXED(park_hook, fn); }

void hk_ss_slab_unuse(hk_superslab_t *ss, hk_slab_t *s) {
  /* the slab's place, not its index field: a descriptor past the header's
   * first page that was never initialized reads index 0 (ss_init) */
  unsigned i = (unsigned)(s - ss->slabs);
  HK_ASSERT(i < ss->nslabs);
  HK_STORE_RELAXED(s->state, HK_SLAB_UNUSED);
  HK_STORE_RELAXED(s->owner, 0);
  s->free = s->local_free = NULL;
  uint32_t bit = 1u << i;
  ss->free_mask |= bit;
  ss->dirty_new |= bit;
  ss->freed_ms[i] = (uint32_t)hk_os_now_ms();
  ss->nused--;
}

/* Blocks freed into ss's slabs by other threads wait on their xfree lists
 * (racy: a hint). */
static bool remote_pending(const hk_superslab_t *ss) {
  for (uint32_t m = ~ss->free_mask & ss_all_mask(ss); m; m &= m - 1)
    if (atomic_load_explicit(&ss->slabs[__builtin_ctz(m)].xfree, memory_order_relaxed) & ~(uintptr_t)HK_XF_MASK)
      return true;
  return false;
}

/* Abandoned superslabs: nobody owns them (their list lock does), so their
 * unused slabs can go: all (force) or those unused for a whole epoch
 * (between two calls: the background purge's clock). Those with slabs to
 * purge leave the list while they are purged (an adopter takes another or
 * maps one) and go back after. */
size_t hk_ss_purge_abandoned(bool force) {
  size_t bytes = 0;
  hk_superslab_t *batch = NULL, *to_cache = NULL;
  uint64_t now = hk_os_now_ms(), delay = (uint64_t)hk_ss_purge_delay_ms();
  void (*orphan)(hk_superslab_t *) = HK_LOAD_RELAXED(orphan_hook);
  size_t (*park)(hk_superslab_t *) = HK_LOAD_RELAXED(park_hook);
  hk_lock_nosys(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++)
    for (hk_superslab_t *ss = abandoned[k].head, *next; ss; ss = next) {
      next = ss->next;
      /* the blocks other threads freed since its owner left come back (a
       * forked one waits for its adopter's rebuild) */
      if (orphan && !ss->forked && ss->nused && remote_pending(ss)) {
        orphan(ss);
        ss->park_due = true;
      }
      if (ss->nused == 0 && (force || now - ss->stamp_ms >= delay)) {
        /* an exited heap's empty superslab no new thread took within the
         * delay: to the cache, whose clock purges and unmaps (and which
         * serves either kind) */
        hk_ss_list_remove(&abandoned[k], ss);
        OUT(out_abandoned, 1);
        ss->list = OUT_ABANDONED;  /* (a fork child puts it back) */
        ss->next = to_cache;
        to_cache = ss;
      } else if (force || (ss->dirty_old | ss->dirty_new) ||
                 /* blocks still out a delay after the abandon: the free
                  * pages among them are parked, once, and again only when
                  * more blocks came back since (taken off the list at
                  * every tick, a superslab holding one block out for good
                  * hid from adopters, and they mapped new ones) */
                 (park && ss->park_due && ss->nused && !ss->forked && now - ss->stamp_ms >= delay)) {
        hk_ss_list_remove(&abandoned[k], ss);
        OUT(out_abandoned, 1);
        ss->list = OUT_ABANDONED;
        ss->next = batch;
        batch = ss;
      }
    }
  hk_unlock_nosys(&abandoned_lock);
  for (hk_superslab_t *ss = batch; ss; ss = ss->next) {
    if (park && ss->nused && !ss->forked && (force || now - ss->stamp_ms >= delay)) {
      ss->park_due = false;
      bytes += park(ss);
    }
    bytes += hk_ss_purge_unused(ss, force);
  }
  list_put_back(&abandoned_lock, abandoned, batch, LIST_ABANDONED);
  for (hk_superslab_t *ss = to_cache, *next; ss; ss = next) {
    next = ss->next;
    ss->list = LIST_NONE;
    OUT(out_abandoned, -1);
    cache_put(ss);
  }
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
  hk_lock_nosys(&all_lock);
  size_t n = 0;
  for (const hk_superslab_t *ss = all_head, *prev = NULL; ss; prev = ss, ss = ss->all_next, n++) {
    HK_ASSERT(((uintptr_t)ss & HK_SS_MASK) == 0);
    HK_ASSERT(ss->all_prev == prev);
  }
  /* counted before it joins, after it leaves: never fewer than listed */
  HK_ASSERT(n <= hk_ss_count_mapped());
  hk_unlock_nosys(&all_lock);
  hk_lock_nosys(&abandoned_lock);
  for (unsigned k = 0; k < HK_SS_NKINDS; k++) {
    check_list(&abandoned[k], LIST_ABANDONED);
    for (const hk_superslab_t *ss = abandoned[k].head; ss; ss = ss->next) {
      HK_ASSERT(ss->kind == k);
      HK_ASSERT(HK_LOAD_RELAXED(ss->heap) == NULL);
    }
  }
  hk_unlock_nosys(&abandoned_lock);
  hk_lock_nosys(&cache_lock);
  check_list(&cache, LIST_CACHE);
  uint64_t now = hk_os_now_ms();
  for (const hk_superslab_t *ss = cache.head; ss; ss = ss->next) {
    HK_ASSERT(ss->nused == 0);
    HK_ASSERT(ss->stamp_ms <= now);
    HK_ASSERT(HK_LOAD_RELAXED(ss->heap) == NULL);
  }
  hk_unlock_nosys(&cache_lock);
}

void hk_ss_check_owned(const hk_ss_list_t *l, uint8_t id, unsigned kind, const struct hk_heap *h) {
  check_list(l, id);
  for (const hk_superslab_t *ss = l->head; ss; ss = ss->next) {
    HK_ASSERT(ss->kind == kind);
    HK_ASSERT(HK_LOAD_RELAXED(ss->heap) == h);
    uint32_t all = ss->nslabs == 32 ? 0xffffffffu : ((1u << ss->nslabs) - 1);
    HK_ASSERT((ss->free_mask & ~all) == 0);
    HK_ASSERT(ss->nused == (uint32_t)__builtin_popcount(all & ~ss->free_mask));
  }
}
#endif

void hk_ss_census(uint64_t live[HK_NCLASS], uint64_t slabs[HK_NCLASS]) {
  hk_lock_nosys(&all_lock);
  for (hk_superslab_t *ss = all_head; ss; ss = ss->all_next) {
    if (ss->list == LIST_CACHE) continue;
    unsigned n = hk_ss_desc_n(ss);
    for (unsigned i = 0; i < n && i < HK_SS_MAX_SLABS; i++) {
      hk_slab_t *s = &ss->slabs[i];
      if (HK_LOAD_RELAXED(s->state) == HK_SLAB_UNUSED) continue;
      unsigned c = HK_LOAD_RELAXED(s->cls);
      if (c >= HK_NCLASS) continue;
      live[c] += hk_slab_live(s);
      slabs[c]++;
    }
  }
  hk_unlock_nosys(&all_lock);
}

size_t hk_ss_cached_unpurged_bytes(void) {
  size_t bytes = 0;
  hk_lock_nosys(&cache_lock);
  for (hk_superslab_t *ss = cache.head; ss; ss = ss->next)
    if (!ss->purged) bytes += HK_SS_SIZE;
  hk_unlock_nosys(&cache_lock);
  return bytes;
}

size_t hk_ss_count_mapped(void) { return HK_LOAD_RELAXED(mapped_count); }
size_t hk_ss_count_cached(void) { return cache.count + HK_LOAD_RELAXED(out_cache); }
size_t hk_ss_count_abandoned(void) {
  return abandoned[0].count + abandoned[1].count + HK_LOAD_RELAXED(out_abandoned);
}

/* A superslab whose thread fork() stopped may disagree with its slabs'
 * states: a slab being taken has its bit cleared before its descriptor is
 * initialized and its state set (hk_heap_fresh_slab), one being given back
 * its state set before its bit (hk_ss_slab_unuse), and the count of slabs
 * in use moves between the two. An adopter that found a slab neither free
 * nor initialized released it through a stale index (slab 0's bit: slab
 * 0 was then taken again while its blocks were live), and a count one too
 * low gives the superslab away with a slab in use. The states decide;
 * the masks and the count follow, and the adopter rebuilds each slab. */
static void mark_forked(hk_superslab_t *ss) {
  ss->forked = true;
  uint32_t unused = 0;
  for (unsigned i = 0, n = hk_ss_desc_n(ss); i < ss->nslabs; i++)
    if (i >= n || HK_LOAD_RELAXED(ss->slabs[i].state) == HK_SLAB_UNUSED) unused |= 1u << i;
  ss->dirty_new = (ss->dirty_new | (unused & ~ss->free_mask)) & unused;  /* (newly unused: purged in time) */
  ss->dirty_old &= unused;
  ss->purged_mask &= unused;
  ss->free_mask = unused;
  ss->nused = (uint32_t)__builtin_popcount(~unused & ss_all_mask(ss));
}

void hk_ss_orphan_foreign(struct hk_heap *self, bool (*kept)(const struct hk_heap *h)) {
  for (hk_superslab_t *ss = all_head; ss; ss = ss->all_next) {
    struct hk_heap *owner = HK_LOAD_RELAXED(ss->heap);
    if (ss->list == OUT_CACHE || ss->list == OUT_ABANDONED) {  /* its purge was cut off by fork() */
      if (ss->list == OUT_CACHE) {
        hk_ss_list_push(&cache, ss, LIST_CACHE), OUT(out_cache, -1);
        continue;
      }
      /* the purge thread may have been parking its slabs (the park hook
       * writes their lists): its adopter rebuilds them, as an owner's */
      mark_forked(ss);
      hk_ss_list_push(&abandoned[ss->kind], ss, LIST_ABANDONED), OUT(out_abandoned, -1);
      continue;
    }
    if (owner == NULL) continue;
    if (owner == self || kept(owner)) {
      /* a thread that was handing us a block mid-fork is gone: leave the
       * NOTIFYING state it would have cleared (the block is lost) */
      for (unsigned i = 0, n = hk_ss_desc_n(ss); i < n; i++) {
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
    mark_forked(ss);
    for (unsigned i = 0, n = hk_ss_desc_n(ss); i < n; i++) {  /* (written where it changes: a copy-on-write page each) */
      hk_slab_t *s = &ss->slabs[i];
      if (HK_LOAD_RELAXED(s->owner) != 0) HK_STORE_RELAXED(s->owner, 0);
      uintptr_t v = atomic_load_explicit(&s->xfree, memory_order_relaxed);
      if (v & 3) atomic_store_explicit(&s->xfree, v & ~(uintptr_t)3, memory_order_relaxed);
    }
    if (ss->list == LIST_CACHE || ss->list == LIST_ABANDONED) continue;
    hk_ss_abandon(ss);
  }
}

void hk_ss_fork_prepare(void) { hk_lock(&all_lock); hk_lock(&abandoned_lock); hk_lock(&cache_lock); }
void hk_ss_fork_parent(void) { hk_unlock(&cache_lock); hk_unlock(&abandoned_lock); hk_unlock(&all_lock); }
void hk_ss_fork_child(void) {
  hk_lock_reset(&cache_lock);
  collect_busy = 0;
  hk_lock_reset(&abandoned_lock);
  hk_lock_reset(&all_lock);
}
