/* span.c: the span tier's blocks: a large block is a run of pages carved
 * from an arena (span_arena.c), found again by its page's entry at free,
 * resize and the checks, and given back as a free run that keeps its
 * pages. Where each piece lives: span_arena.c the page map and its shards,
 * span_guard.c the secure build's guards and quarantine, span_thp.c the
 * huge-page policy, span_lend.c the superslabs lent from arenas,
 * span_purge.c the purge clock, the cap and trim. */
#include "backend/span.h"

#include <errno.h>
#include <string.h>

#include "backend/span_arena.h"
#include "backend/span_guard.h"
#include "base/libc.h"  /* calloc's zeroing: glibc's, unchecked */
#include "base/track.h"

#define ZERO_RUNS 16  /* resident runs calloc zeroes one by one; more: one memset */
_Static_assert(HK_SPAN_MAX < ((size_t)1 << 32), "requested sizes fit 32 bits");

unsigned hk_span_shards(void) { return hk_arena_shards_now(); }

/* n live pages leave: freed, or cut from a block's tail. */
static void live_sub(uint32_t n) {
  size_t was = HK_SUB_RELAXED(hk_span_live_pages, n);
  HK_ASSERT(was >= n);
  (void)was;
}

#ifdef HK_DEBUG
/* Whether the live block whose head is entry i ends where its head says:
 * its tail entry tagged, and of the same length. */
static bool live_tail_ok(const hk_arena_t *a, uint32_t i) {
  uint32_t n = a->e[i].npages;
  return n && n <= ARENA_PAGES - i && (a->e[i + n - 1].tag & (T_TAIL | T_LIVE)) == (T_TAIL | T_LIVE) &&
         a->e[i + n - 1].npages == n;
}
#endif

/* ---- allocation ---- */

/* calloc's fresh pages (never touched, or purged) read as zero, but a
 * program that reads them before it writes them maps the shared zero page
 * first (a kernel that has one), then pays a fault, a copy and a TLB
 * shootdown of every thread per 4 KiB when it writes: the shootdowns
 * dominate a threaded program that callocs big blocks. Faulting them in
 * for writing at once costs one call (and one fault per huge page in an
 * arena advised huge pages). A kernel without MADV_POPULATE_WRITE (older
 * than 5.14): one write a page, which maps each page writable before the
 * program can map the zero page. */
static void fault_fresh(uint8_t *p, size_t bytes) {
  if (bytes > HK_SPAN_POPULATE_MAX || hk_os_populate(p, bytes)) return;
  for (size_t o = 0; o < bytes; o += HK_PAGE) ((volatile uint8_t *)p)[o] = 0;
}

void *hk_span_alloc(size_t size, size_t align, bool zero, unsigned kind, hk_span_note_t *note) {
  if (size == 0 || size > HK_SPAN_MAX || align >= HK_SS_SIZE) { errno = ENOMEM; return NULL; }
  uint32_t need = (uint32_t)(hk_align_up(size, HK_PAGE) >> PAGE_SHIFT) + GUARD_PAGES;
  uint32_t al = align > HK_PAGE ? (uint32_t)(align >> PAGE_SHIFT) : 1;
  uint32_t want = need + al - 1;
  run_t runs[ZERO_RUNS];
  unsigned nruns = 0;
  bool zero_all = false;
  bool huge = hk_thp_want_huge(need - GUARD_PAGES, zero);

  shard_t *sh = hk_arena_home_shard();
  hk_shard_lock(&sh->lock);
  uint32_t i = 0;
  hk_arena_t *a = hk_arena_shard_fit(sh, huge, want, false, &i);
  if ((!a || bits_count(a, i, want) < want / 2) && hk_arena_resident_beside(sh, want))
    a = hk_arena_fit_elsewhere(&sh, huge, want, true, &i);
  if (!a && sh->arenas) a = hk_arena_fit_elsewhere(&sh, huge, want, false, &i);
  hk_arena_t *spare = NULL;  /* the new arena mapped here, when another serves instead */
  if (!a) {
    /* a new arena, mapped with the lock dropped; then the first fit
     * again: another thread's new arena, or a run freed meanwhile, may
     * serve, and this one is then unmapped once the lock is dropped (each
     * thread that found none at once mapped one: test_span race) */
    hk_shard_unlock(&sh->lock);
    hk_arena_t *fresh = hk_arena_map(huge, sh);
    hk_shard_lock(&sh->lock);
    a = hk_arena_shard_fit(sh, huge, want, false, &i);
    if (!a && fresh) {
      hk_arena_link(fresh);
      a = hk_arena_shard_fit(sh, huge, want, false, &i);
    } else {
      spare = fresh;
    }
    if (!a) {
      hk_shard_unlock(&sh->lock);
      errno = ENOMEM;
      return NULL;
    }
  }
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  uint32_t nd = hk_arena_free_remove(a, i);
  uint32_t at = (i + al - 1) & ~(al - 1);
  uint32_t idle = now_stamp(a) - a->freed_at[at / GRAIN_PAGES];
  HK_ASSERT(n >= want && at + need <= i + n);
  uint32_t front = at - i, back = i + n - (at + need);
  uint32_t d = nd ? bits_count(a, at, need) : 0;
  uint32_t df = nd && front ? bits_count(a, i, front) : 0;
  HK_ASSERT(d + df <= nd);
  if (front) hk_arena_free_insert(a, i, front, df, stamp);  /* (its last page closed below) */
  if (back) hk_arena_free_insert(a, at + need, back, nd - d - df, stamp);
  entry_t *h = &a->e[at], *t = &a->e[at + need - 1];
  h->npages = t->npages = need;
  t->tag = T_TAIL | T_LIVE;
  h->tag = (need == 1 ? T_TAIL : 0) | T_HEAD | T_LIVE;  /* one page: both tags on one entry */
  if (zero && ((size_t)need << PAGE_SHIFT) <= HK_SPAN_POPULATE_MAX) h->tag |= T_POPULATED;
  h->l.fresh = hk_thp_fresh_chunks(a, at, at, at + need - GUARD_PAGES);
  hk_thp_placed(huge);
  h->kind = (uint8_t)kind;
  h->l.requested = (uint32_t)size;
  if (zero && d) {  /* only resident pages can hold old bytes */
    if (d == need) {
      zero_all = true;
    } else {
      for (uint32_t p = at, q; next_marked(a, &p, at + need, &q); p = q) {
        if (nruns == ZERO_RUNS) { zero_all = true; break; }
        runs[nruns++] = (run_t){ p, q - p };
      }
    }
  }
  bits_set(a, at, need, true);
  HK_ADD_RELAXED(hk_span_live_pages, need);
  HK_ADD_RELAXED(hk_span_carved, 1);
  uint8_t *p = page_addr(a, at);
  /* the block's pages open, its last page closed (it was the run's, closed
   * already, when nothing is left behind it), and the last page of the run
   * left before it closed: planned here, the calls made once the lock is
   * dropped */
  opening_t o;
  if (GUARD_PAGES) hk_guard_opening_plan(a, at, need - GUARD_PAGES, back, front ? at - 1 : 0, &o);
  hk_track_alloc(p, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT, d == 0);
  hk_shard_unlock(&sh->lock);
  if (spare) hk_arena_unmap(spare);  /* never linked: nobody else knows it */
  if (GUARD_PAGES && !hk_guard_opening_calls(a, &o)) {
    /* no mapping to spare (vm.max_map_count): the run goes back, its last
     * page closed while it is still this thread's */
    (void)hk_guard_close_page(a, at + need - 1);
    hk_shard_lock(&sh->lock);
    hk_guard_opening_undo(a, &o);
    hk_track_free(p);
    h->tag = T_FREED;
    t->tag = 0;
    live_sub(need);
    hk_arena_run_release(a, at, need, need, stamp);  /* bits_set marked them all */
    hk_shard_unlock(&sh->lock);
    errno = ENOMEM;
    return NULL;
  }

  if (zero && d < need) fault_fresh(p, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT);

  if (zero_all) memset(p, 0, (size_t)(need - GUARD_PAGES) << PAGE_SHIFT);
  else for (unsigned r = 0; r < nruns; r++) {
    uint32_t e = runs[r].at + runs[r].n < at + need - GUARD_PAGES ? runs[r].at + runs[r].n : at + need - GUARD_PAGES;
    if (e > runs[r].at) memset(page_addr(a, runs[r].at), 0, (size_t)(e - runs[r].at) << PAGE_SHIFT);
  }
  note->resident_pages = d;
  note->fresh_pages = need - d;
  note->idle_ms = idle;
  return p;
}

/* ---- checks ---- */

/* The shard whose lock guards p's arena; NULL when p is in no arena. p is
 * in a chunk the chunk map calls a span's, so its arena is mapped, and an
 * arena's descriptor never changes but under the lock. */
static shard_t *shard_at(const void *p) {
  const hk_arena_t *a = arena_of(p);
  return a->magic == ARENA_MAGIC && a->shard < HK_SPAN_SHARDS ? shard_of(a) : NULL;
}

/* The head entry of the live block at p, or NULL with *why set. Under the lock. */
static entry_t *live_head(const void *p, hk_arena_t **ap, const char **why) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  *ap = a;
  if (a->magic != ARENA_MAGIC || ((uintptr_t)p & (HK_PAGE - 1)) || i < a->first_page) {
    *why = HK_WHY_NOT_START;
    return NULL;
  }
  entry_t *h = &a->e[i];
  if ((h->tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && h->kind != KIND_SS) {
    HK_ASSERT(live_tail_ok(a, i));
    return h;
  }
  *why = h->tag & (T_FREE | T_FREED) && h->tag & (T_HEAD | T_FREED) ? HK_WHY_DOUBLE_FREE : HK_WHY_NOT_START;
  return NULL;
}

bool hk_span_check(const char *what, const void *p, size_t *usable, size_t *requested) {
  hk_arena_t *a;
  const char *why = HK_WHY_NOT_START;
  shard_t *sh = shard_at(p);
  entry_t *h = NULL;
  if (sh) {
    hk_shard_lock(&sh->lock);
    h = live_head(p, &a, &why);
    if (h) {
      if (usable) *usable = (size_t)(h->npages - GUARD_PAGES) << PAGE_SHIFT;
      if (requested) *requested = h->l.requested;
    }
    hk_shard_unlock(&sh->lock);
  }
  if (!h && what) hk_report_invalid(what, p, why);
  return h != NULL;
}

/* Measure copy: the live block holding address p (any byte of its pages),
 * read without the lock, so that a copy into a large block takes no lock:
 * a live block's head and tail entries, and the entries between them,
 * change only when the block itself is freed or resized, which the program
 * copying into it does not do meanwhile. A block is found by its head, the
 * entry of p's page or the nearest tagged one before it (the entries inside
 * a run carry no HEAD or TAIL tag); each thread remembers the last head it
 * found, so a run of copies into one big block walks once. */
static __thread struct { hk_arena_t *a; uint32_t head; } copy_hint;

static bool live_run_holds(const hk_arena_t *a, uint32_t h, uint32_t i) {
  const entry_t *e = &a->e[h];
  return h >= a->first_page && h <= i &&
         (HK_LOAD_RACY(e->tag) & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && i - h < HK_LOAD_RACY(e->npages);
}

bool hk_span_block_of(const void *p, uint8_t **start, size_t *requested) {
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p);
  uint32_t h = copy_hint.head;
  /* the hint first: its arena was checked when it was set, and p's chunk
   * is a span arena's (the caller read the chunk map), so `a` is mapped */
  if (copy_hint.a == a && live_run_holds(a, h, i)) goto found;
  if (a->magic != ARENA_MAGIC || i < a->first_page) return false;
  h = i;
  uint8_t tag = HK_LOAD_RACY(a->e[i].tag);
  if (!(tag & T_HEAD)) {
    if (tag & T_TAIL) {
      h = i + 1 - HK_LOAD_RACY(a->e[i].npages);  /* npages == 0 or > i + 1: fails below */
    } else {
      do {
        if (h-- == a->first_page) return false;
        tag = HK_LOAD_RACY(a->e[h].tag);
      } while (!(tag & (T_HEAD | T_TAIL)));
    }
  }
  if (!live_run_holds(a, h, i)) return false;
  copy_hint.a = a;
  copy_hint.head = h;
found:
  *start = page_addr(a, h);
  *requested = HK_LOAD_RACY(a->e[h].l.requested);
  return true;
}

/* ---- free and resize ---- */

size_t hk_span_free(const char *what, void *p, unsigned *kind, size_t *requested) {
  hk_arena_t *a;
  const char *why = NULL;
  shard_t *sh = shard_at(p);
  if (!sh) {
    hk_report_invalid(what, p, HK_WHY_NOT_START);
    return 0;
  }
  hk_thp_sample(arena_of(p), page_of(arena_of(p), p), p);
  hk_shard_lock(&sh->lock);
  entry_t *h = live_head(p, &a, &why);
  if (!h) {
    hk_shard_unlock(&sh->lock);
    hk_report_invalid(what, p, why);
    return 0;
  }
  uint32_t i = page_of(a, p);
  uint32_t n = h->npages;
  uint32_t stamp = now_stamp(a);
  hk_arena_grains_freed(a, i, n, stamp);
  *kind = h->kind;
  *requested = h->l.requested;
  live_sub(n);
  a->e[i + n - 1].tag = 0;
  h->tag = T_FREED;
  if (GUARD_PAGES && n - 1 <= hk_guard_close_pages()) {
    /* closed whole (its last page is closed already), by a call made with
     * the lock dropped: the block, tagged FREED and on no list, is nobody
     * else's meanwhile (a second free of it is a double free); it joins
     * the quarantine once closed, so that no malloc can open it first */
    unsigned how = hk_guard_close_how();
    hk_shard_unlock(&sh->lock);
    bool closed = hk_guard_close_call(a, i, n - 1, how);
    hk_shard_lock(&sh->lock);
    if (closed) hk_guard_close_done(a, i, n - 1, how);
  }
  if (QUAR_ON) hk_quar_push(a, i, stamp);
  else hk_arena_run_release(a, i, n, n, stamp);  /* a live block's pages are all marked */
  hk_track_free(p);  /* before another thread can get these pages */
  hk_shard_unlock(&sh->lock);
  return (size_t)n << PAGE_SHIFT;
}

/* With the guard measure a resize's calls are made with the lock dropped
 * too: a shrunk block's new last page is its own, closed after its tail
 * went back; a grown block takes the pages after it under the lock, opens
 * them after it, and gives them back under the lock again when a call
 * fails (no mapping to spare). */
size_t hk_span_resize(void *p, size_t size) {
  if (size == 0 || size > HK_SPAN_MAX) return 0;
  hk_arena_t *a = arena_of(p);
  uint32_t i = page_of(a, p), need = (uint32_t)(hk_align_up(size, HK_PAGE) >> PAGE_SHIFT) + GUARD_PAGES;
  shard_t *sh = shard_of(a);  /* p passed hk_span_check */
  hk_shard_lock(&sh->lock);
  entry_t *h = &a->e[i];
  HK_ASSERT(a->magic == ARENA_MAGIC && (h->tag & (T_HEAD | T_LIVE)) == (T_HEAD | T_LIVE) && live_tail_ok(a, i));
  uint32_t n = h->npages, j = i + n, was = h->l.requested;
  opening_t o;
  if (need < n) {  /* the tail becomes free (joined to a free run after it; its last page, the old guard, is closed) */
    uint32_t len = n - need, nd = len, stamp = now_stamp(a);
    hk_arena_grains_freed(a, i + need, len, stamp);
    hk_arena_join_next(a, j, &len, &nd, &stamp);
    a->e[j - 1].tag = 0;
    hk_arena_free_insert(a, i + need, len, nd, stamp);
    live_sub(n - need);
  } else if (need > n) {  /* take the head of the free run after it */
    uint32_t extra = need - n;
    if (j >= ARENA_PAGES || (a->e[j].tag & (T_HEAD | T_FREE)) != (T_HEAD | T_FREE) || a->e[j].npages < extra) {
      hk_shard_unlock(&sh->lock);
      return 0;
    }
    uint32_t fn = a->e[j].npages, stamp = a->e[j].f.stamp;
    /* the old last page and all but the last of the new ones open; the new
     * last closes, unless it is the run's (closed already) */
    if (GUARD_PAGES) hk_guard_opening_plan(a, j - 1, extra, fn > extra, 0, &o);
    uint32_t nd = hk_arena_free_remove(a, j);
    uint32_t d = nd ? bits_count(a, j, extra) : 0;
    HK_ASSERT(fn >= extra && d <= nd);
    if (fn > extra) hk_arena_free_insert(a, j + extra, fn - extra, nd - d, stamp);
    h->l.fresh |= hk_thp_fresh_chunks(a, i, i, i + need - GUARD_PAGES);
    bits_set(a, j, extra, true);
    a->e[j - 1].tag = 0;
    HK_ADD_RELAXED(hk_span_live_pages, extra);
  }
  if (need != n) {
    h->npages = need;
    a->e[i + need - 1].npages = need;
    a->e[i + need - 1].tag = T_TAIL | T_LIVE;
    h->tag = (need == 1 ? T_TAIL : 0) | T_HEAD | T_LIVE;
  }
  h->l.requested = (uint32_t)size;
  hk_shard_unlock(&sh->lock);
  if (GUARD_PAGES && need < n) (void)hk_guard_close_page(a, i + need - 1);  /* as it was under the lock: a guard lost */
  if (GUARD_PAGES && need > n && !hk_guard_opening_calls(a, &o)) {
    /* the pages taken go back, the block as it was: the old last page its
     * guard again, the pages' last closed as a free run's, while both are
     * still this thread's */
    uint32_t extra = need - n;
    (void)hk_guard_close_page(a, j - 1);
    (void)hk_guard_close_page(a, j + extra - 1);
    hk_shard_lock(&sh->lock);
    hk_guard_opening_undo(a, &o);
    a->e[j + extra - 1].tag = 0;
    a->e[j - 1].npages = n;
    a->e[j - 1].tag = T_TAIL | T_LIVE;
    h->npages = n;
    h->tag = (n == 1 ? T_TAIL : 0) | T_HEAD | T_LIVE;
    h->l.requested = was;
    a->e[j].tag = T_FREED;
    live_sub(extra);
    hk_arena_run_release(a, j, extra, extra, now_stamp(a));  /* bits_set marked them all */
    hk_shard_unlock(&sh->lock);
    return 0;
  }
  size_t ok = (size_t)(need - GUARD_PAGES) << PAGE_SHIFT;
  hk_track_resize(p, (size_t)(n - GUARD_PAGES) << PAGE_SHIFT, ok);
  return ok;
}

size_t hk_span_bytes_live(void) { return HK_LOAD_RELAXED(hk_span_live_pages) << PAGE_SHIFT; }
size_t hk_span_bytes_dirty(void) { return HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT; }
/* An arena's descriptor maps about 9 MiB, of which a program touches a
 * page here and there (a block's head and tail entries): its resident
 * pages, not its size, are the memory it costs. A shard's arenas are
 * listed under its lock (the purge clock unmaps arenas that hold
 * nothing), taken only when free, so that the stats never wait (a dump
 * may run in a signal handler); a busy shard gives its last count. The
 * kernel is asked with the lock dropped: an arena unmapped meanwhile
 * answers nothing and counts nothing. */
#define META_BATCH 32
static size_t meta_seen[HK_SPAN_SHARDS];

/* The resident bytes of [p, p + size), size a multiple of the page; a
 * piece the kernel will not answer for (unmapped) counts nothing. */
static size_t resident_bytes(uint8_t *p, size_t size) {
  unsigned char vec[512];
  const size_t step = sizeof vec * HK_PAGE;
  size_t bytes = 0;
  for (size_t off = 0; off < size; off += step) {
    size_t len = size - off < step ? size - off : step;
    if (!hk_os_resident(p + off, len, vec)) continue;
    for (size_t i = 0; i < len / HK_PAGE; i++) bytes += (size_t)(vec[i] & 1) * HK_PAGE;
  }
  return bytes;
}

size_t hk_span_bytes_meta(void) {
  size_t desc = hk_align_up(sizeof(hk_arena_t), HK_PAGE), total = 0;
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) {
    shard_t *sh = &hk_arena_shards[k];
    size_t bytes = 0;
    bool whole = true;
    /* a batch of the list at a time: arenas [from, from + n) */
    for (unsigned from = 0, n = META_BATCH; n == META_BATCH; from += n) {
      uint8_t *seen[META_BATCH];
      if (!hk_trylock_nosys(&sh->lock)) {
        whole = false;
        break;
      }
      hk_arena_t *a = sh->arenas;
      for (unsigned i = 0; a && i < from; i++) a = a->next;
      for (n = 0; a && n < META_BATCH; a = a->next) seen[n++] = (uint8_t *)a;
      hk_unlock_nosys(&sh->lock);
      for (unsigned i = 0; i < n; i++) bytes += resident_bytes(seen[i], desc);
    }
    if (whole) HK_STORE_RELAXED(meta_seen[k], bytes);
    total += HK_LOAD_RELAXED(meta_seen[k]);
  }
  return total;
}
size_t hk_span_bytes_cached(void) { return (HK_LOAD_RELAXED(hk_span_dirty_pages) + hk_quar_pages()) << PAGE_SHIFT; }

/* (not hk_arena_lock_all: held across the fork, not counted by
 * hk_nosys_enter) */
void hk_span_fork_prepare(void) {
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) hk_lock(&hk_arena_shards[k].lock);
}
void hk_span_fork_parent(void) {
  for (unsigned k = HK_SPAN_SHARDS; k--;) hk_unlock(&hk_arena_shards[k].lock);
}
void hk_span_fork_child(void) {
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++) {
    hk_lock_reset(&hk_arena_shards[k].lock);
    /* an opening another thread was making: its call was made or not,
     * and open_to says which */
    for (hk_arena_t *a = hk_arena_shards[k].arenas; a; a = a->next) hk_lock_reset(&a->open_lock);
  }
  hk_quar_fork_child();
}
