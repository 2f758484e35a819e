/* span_arena.c: the span tier's page map: its arenas, kept in shards, and
 * the free runs they hold (bins by size, the list of those with resident
 * pages, their ages), found and joined by the boundary tags of every run.
 * Blocks are carved from it by span.c, lent by span_lend.c and purged by
 * span_purge.c; the layout is span_arena.h's. */
#include "backend/span_arena.h"

#include "base/chunk_map.h"
#include "base/dlist.h"
#include "base/knobs.h"

#define BIN_SCAN 32   /* free runs looked at per bin */

size_t hk_span_live_pages, hk_span_dirty_pages, hk_span_lent_pages, hk_span_arena_count, hk_span_carved;

/* ---- shards ----
 * Threads meet on a lock per shard rather than on one for all: one lock
 * for every arena serialises a program whose threads all allocate big
 * blocks. A shard is a list of arenas and their lock. A thread allocates
 * from its own shard (threads take the shards in turn; a single thread's
 * program uses the first only); a free, resize or check takes the lock of
 * the block's arena's shard. How many (HAKMEM_SPAN_SHARDS): one per CPU
 * the process may run on, at most HK_SPAN_SHARDS (lowmem: one). Shards
 * keep their free runs apart, which costs memory, so a shard maps its
 * first arena when its first block is asked for (address space: pages are
 * touched as blocks are carved); where its own fit is mostly fresh pages
 * it takes another shard's free run with as many resident pages as it
 * needs half of, if there is one; and before it maps another arena it
 * searches the other shards, one lock at a time. The purge clock, the cap,
 * trim and fork take every shard's lock, in order. Every thread gets its
 * own shard from its first block, not only once a lock is found taken:
 * spreading late leaves the holes in the first shard's arena while the
 * others carve fresh pages, which costs both memory and time. */
shard_t hk_arena_shards[HK_SPAN_SHARDS];
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(hk_arena_shards, sizeof hk_arena_shards, HK_LOCK_SPAN);
}

/* One per CPU the process may run on, or HAKMEM_SPAN_SHARDS when set. */
unsigned hk_arena_shards_now(void) {
  static unsigned used;  /* atomic; 0: not yet read (every thread reads the same) */
  unsigned n = HK_LOAD_RELAXED(used);
  if (HK_UNLIKELY(!n)) {
    n = hk_knobs.span_shards > 0 ? (unsigned)hk_knobs.span_shards : hk_os_cpu_count();
    if (n > HK_SPAN_SHARDS) n = HK_SPAN_SHARDS;
    HK_STORE_RELAXED(used, n);
  }
  return n;
}

static __thread unsigned home_seq;  /* the thread's turn + 1; 0: none yet */
static unsigned home_next;
shard_t *hk_arena_home_shard(void) {
  if (!home_seq) home_seq = 1 + HK_ADD_RELAXED(home_next, 1);
  unsigned k = (home_seq - 1) % hk_arena_shards_now();
  HK_ASSERT(k < HK_SPAN_SHARDS);
  return &hk_arena_shards[k];
}

void hk_arena_lock_all(void) {
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) hk_shard_lock(&hk_arena_shards[k].lock);
}
void hk_arena_unlock_all(void) {
  for (unsigned k = HK_SPAN_SHARDS; k--;) hk_shard_unlock(&hk_arena_shards[k].lock);
}

hk_arena_t *hk_arena_next(const hk_arena_t *a) {
  if (a && a->next) return a->next;
  for (unsigned k = a ? a->shard + 1 : 0; k < HK_SPAN_SHARDS; k++)
    if (hk_arena_shards[k].arenas) return hk_arena_shards[k].arenas;
  return NULL;
}

/* ---- free runs: bins by size, and the list of those with resident pages ---- */

static unsigned bin_of(uint32_t n) {
  if (n < 8) return n - 1;
  unsigned b = 31u - (unsigned)__builtin_clz(n);
  return 7 + (b - 3) * 4 + ((n >> (b - 2)) & 3);
}

/* Whether page i is the last page of a free run; whether page j is the first. */
static bool free_tail_at(const hk_arena_t *a, uint32_t i) {
  return i >= a->first_page && i < ARENA_PAGES && (a->e[i].tag & (T_TAIL | T_FREE)) == (T_TAIL | T_FREE);
}
static bool free_head_at(const hk_arena_t *a, uint32_t j) {
  return j < ARENA_PAGES && (a->e[j].tag & (T_HEAD | T_FREE)) == (T_HEAD | T_FREE);
}

/* A free run's lists (base/dlist.h), its bin's and the dirty list, name
 * runs by their first page: RUN(i) is the links of run i of arena a. */
#define RUN(i) (a->e[i].f)

static void dirty_unlink(hk_arena_t *a, uint32_t i) {
  HK_DLT_UNLINK_AT(RUN, a->dirty_head, a->dirty_tail, i, dnext, dprev);
  RUN(i).dnext = RUN(i).dprev = 0;
}

void hk_arena_free_insert(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t ndirty, uint32_t stamp) {
  HK_ASSERT(n && i >= a->first_page && i + n <= ARENA_PAGES && ndirty <= n);
  HK_ASSERT(a->free_pages + n <= ARENA_PAGES - a->first_page);
  HK_ASSERT(!free_tail_at(a, i - 1) && !free_head_at(a, i + n));  /* free neighbours are joined */
  entry_t *h = &a->e[i], *t = &a->e[i + n - 1];
  t->npages = n;
  t->tag = T_TAIL | T_FREE;
  h->npages = n;
  h->tag = (n == 1 ? T_TAIL : 0) | T_HEAD | T_FREE;
  unsigned b = bin_of(n);
  HK_ASSERT(b < NBINS);
  h->bin = (uint16_t)b;
  h->kind = 0;  /* free run: its pages not yet checked (span_purge.c, cap_check) */
  HK_DL_PUSH_AT(RUN, a->bins[b], i, next, prev);
  h->f.ndirty = ndirty;
  h->f.stamp = stamp;
  h->f.dnext = h->f.dprev = 0;
  if (ndirty) HK_DLT_PUSH_TAIL_AT(RUN, a->dirty_head, a->dirty_tail, i, dnext, dprev);
  a->free_pages += n;
  HK_ADD_RELAXED(hk_span_dirty_pages, ndirty);
  HK_ADD_RELAXED(shard_of(a)->dirty, ndirty);
}

uint32_t hk_arena_free_remove(hk_arena_t *a, uint32_t i) {
  entry_t *h = &a->e[i];
  uint32_t n = h->npages, nd = h->f.ndirty;
  /* a free run's head, its length matching its tail's */
  HK_ASSERT((h->tag & (T_HEAD | T_FREE)) == (T_HEAD | T_FREE) && n && i + n <= ARENA_PAGES);
  HK_ASSERT((a->e[i + n - 1].tag & (T_TAIL | T_FREE)) == (T_TAIL | T_FREE) && a->e[i + n - 1].npages == n);
  HK_ASSERT(nd <= n && a->free_pages >= n && HK_LOAD_RELAXED(shard_of(a)->dirty) >= nd);
  HK_DL_UNLINK_AT(RUN, a->bins[h->bin], i, next, prev);
  if (nd) dirty_unlink(a, i);
  a->free_pages -= n;
  HK_SUB_RELAXED(hk_span_dirty_pages, nd);
  HK_SUB_RELAXED(shard_of(a)->dirty, nd);
  a->e[i + n - 1].tag = 0;
  h->tag = 0;
  return nd;
}

/* Among the first BIN_SCAN runs of each bin that can hold `want` pages.
 * Lowest address first keeps the arena compact: the holes low in it are
 * the pages that were touched, where a best fit spreads blocks over pages
 * never touched and the heap's resident set grows. */
uint32_t hk_arena_find_fit(const hk_arena_t *a, uint32_t want, bool resident) {
  uint32_t best = 0;
  for (unsigned b = bin_of(want); b < NBINS; b++) {
    uint32_t seen = 0;
    for (uint32_t i = a->bins[b]; i && seen < BIN_SCAN; i = a->e[i].f.next, seen++)
      if (a->e[i].npages >= want && (!best || i < best) && (!resident || a->e[i].f.ndirty >= want / 2)) best = i;
  }
  return best;
}

hk_arena_t *hk_arena_shard_fit(shard_t *sh, bool huge, uint32_t want, bool resident, uint32_t *i) {
  for (hk_arena_t *a = sh->arenas; a; a = a->next)
    if (a->huge == huge && (*i = hk_arena_find_fit(a, want, resident)) != 0) return a;
  return NULL;
}

bool hk_arena_resident_beside(const shard_t *sh, uint32_t want) {
  return hk_arena_shards_now() > 1 && HK_LOAD_RELAXED(hk_span_dirty_pages) - HK_LOAD_RELAXED(sh->dirty) >= want;
}

/* The thread's shard (its lock held) has no fit, or (resident) one of
 * mostly fresh pages: a fit in the other shards, one lock at a time
 * (resident: only shards with `want` free resident pages), then in its
 * own again (a run may have been freed meanwhile). */
hk_arena_t *hk_arena_fit_elsewhere(shard_t **sh, bool huge, uint32_t want, bool resident, uint32_t *i) {
  shard_t *home = *sh;
  unsigned n = hk_arena_shards_now(), h = (unsigned)(home - hk_arena_shards);
  HK_ASSERT(h < n);
  if (n == 1) return NULL;
  hk_shard_unlock(&home->lock);
  for (unsigned k = 1; k < n; k++) {
    shard_t *o = &hk_arena_shards[(h + k) % n];
    if (resident && HK_LOAD_RELAXED(o->dirty) < want) continue;
    hk_shard_lock(&o->lock);
    hk_arena_t *a = hk_arena_shard_fit(o, huge, want, resident, i);
    if (a) {
      *sh = o;
      return a;
    }
    hk_shard_unlock(&o->lock);
  }
  hk_shard_lock(&home->lock);
  return hk_arena_shard_fit(home, huge, want, false, i);
}

/* ---- ages ---- */

/* A run joined to a free neighbour keeps the age of its oldest resident
 * pages: stamped "now", a run that a busy neighbour kept joining would
 * never age, and its pages would stay resident until the cap. Pages freed
 * just now may then be purged with it: a page stays resident at most one
 * purge delay after its last free. */
static uint32_t oldest_stamp(const hk_arena_t *a, uint32_t run, uint32_t stamp) {
  const entry_t *h = &a->e[run];
  return h->f.ndirty && h->f.stamp < stamp ? h->f.stamp : stamp;
}

/* A run takes its oldest pages' stamp when it joins a neighbour, so a
 * block freed next to an old free run would look old at once, and the
 * clock would purge it before the next malloc could reuse it, to be
 * faulted in again. Each 64 KiB grain therefore keeps the stamp of its
 * last free, and the clock purges a grain only a purge delay after it,
 * whatever run it joined. */
void hk_arena_grains_freed(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t stamp) {
  HK_ASSERT(n && i + n <= ARENA_PAGES);
  for (uint32_t g = i / GRAIN_PAGES; g <= (i + n - 1) / GRAIN_PAGES; g++)
    if (a->freed_at[g] < stamp) a->freed_at[g] = stamp;
}

bool hk_arena_grains_aged(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t before) {
  for (uint32_t g = i / GRAIN_PAGES; g <= (i + n - 1) / GRAIN_PAGES; g++)
    if (a->freed_at[g] > before) return false;
  return true;
}

/* ---- joining ---- */

void hk_arena_join_next(hk_arena_t *a, uint32_t j, uint32_t *len, uint32_t *nd, uint32_t *stamp) {
  if (!free_head_at(a, j)) return;
  uint32_t nn = a->e[j].npages;
  *stamp = oldest_stamp(a, j, *stamp);
  *nd += hk_arena_free_remove(a, j);
  *len += nn;
}

uint32_t hk_arena_run_release(hk_arena_t *a, uint32_t i, uint32_t n, uint32_t nd, uint32_t stamp) {
  HK_ASSERT(n && i >= a->first_page && i + n <= ARENA_PAGES && nd <= n);
  uint32_t start = i, len = n;
  if (i > a->first_page && free_tail_at(a, i - 1)) {
    uint32_t pn = a->e[i - 1].npages;
    HK_ASSERT(pn && pn <= i - a->first_page);
    start = i - pn;
    stamp = oldest_stamp(a, start, stamp);
    nd += hk_arena_free_remove(a, start);
    len += pn;
  }
  hk_arena_join_next(a, i + n, &len, &nd, &stamp);
  hk_arena_free_insert(a, start, len, nd, stamp);
  return start;
}

/* ---- arenas ---- */

hk_arena_t *hk_arena_map(bool huge, shard_t *sh) {
  HK_ASSERT(sh >= hk_arena_shards && sh < hk_arena_shards + HK_SPAN_SHARDS);
  /* read once, here with no lock held: a free asks for the first under
   * the shard's lock (span_guard.c, hk_guard_close_how), an opening's plan
   * for the second */
  if (GUARD_PAGES) {
    (void)hk_os_max_map_count();
    (void)hk_os_guard_markers();
  }
  size_t desc = hk_align_up(sizeof(hk_arena_t), HK_PAGE);
  hk_arena_t *a = GUARD_PAGES ? hk_os_reserve_aligned(ARENA_SIZE, ARENA_SIZE) : hk_os_map_aligned(ARENA_SIZE, ARENA_SIZE);
  if (!a) return NULL;
  if (GUARD_PAGES && !hk_os_commit(a, desc)) {  /* all but the descriptor stays closed */
    hk_os_unmap(a, ARENA_SIZE);
    return NULL;
  }
  /* huge pages (HAKMEM_THP) past the descriptor: its table is touched a
   * page here and there, and huge pages there would make all of it resident */
  size_t huge_from = hk_align_up(desc + GUARD_PAGES * HK_PAGE, HK_SS_SIZE);
  if (huge) hk_os_advise_region((uint8_t *)a + huge_from, ARENA_SIZE - huge_from, false);
  else hk_os_advise_plain((uint8_t *)a + huge_from, ARENA_SIZE - huge_from);
  a->huge = huge;
  a->shard = (uint32_t)(sh - hk_arena_shards);
  a->magic = ARENA_MAGIC;
  a->first_page = (uint32_t)(desc >> PAGE_SHIFT) + GUARD_PAGES;  /* the descriptor's guard */
  a->open_to = a->first_page;
  a->born_ms = hk_os_now_ms();
  hk_arena_free_insert(a, a->first_page, ARENA_PAGES - a->first_page, 0, 0);
  for (size_t c = ((size_t)a->first_page << PAGE_SHIFT) >> HK_SS_SHIFT; c < ARENA_SIZE >> HK_SS_SHIFT; c++)
    hk_chunk_set((uint8_t *)a + (c << HK_SS_SHIFT), HK_CHUNK_SPAN);
  return a;
}

void hk_arena_link(hk_arena_t *a) {
  shard_t *sh = &hk_arena_shards[a->shard];
  /* last in the list: a malloc takes the first arena with a fit, so the
   * older arenas' freed runs are reused before a newer one's untouched tail
   * (with the newest first, a program past 1 GiB of big blocks that freed
   * half of them went on faulting in fresh pages, and the secure build's
   * guards by mprotect ran out of mappings at half of the freed blocks:
   * test_span spent) */
  hk_arena_t **pa = &sh->arenas;
  while (*pa) pa = &(*pa)->next;
  a->next = NULL;
  *pa = a;
  HK_ADD_RELAXED(hk_span_arena_count, 1);
}

void hk_arena_unmap(hk_arena_t *a) {
  for (size_t c = 0; c < ARENA_SIZE >> HK_SS_SHIFT; c++)
    hk_chunk_set((uint8_t *)a + (c << HK_SS_SHIFT), HK_CHUNK_NONE);
  hk_os_unmap(a, ARENA_SIZE);
}
