/* span_purge.c: the purge and aging of the span tier's free runs: the
 * purge clock (free pages a purge delay old), the cap (the oldest free
 * pages, once the kernel has said which are resident) and trim (every
 * free page, and the arenas with nothing live unmapped).
 *
 * Under every shard's lock (hk_arena_lock_all). No system call is made
 * under the locks (the quarantine's purge drops them too,
 * hk_quar_collect): a purge takes the range it will madvise (or ask
 * mincore about) off the lists under the lock, as a "job": its head
 * tagged T_FREED (a free of its start is still a double free), its tail
 * untagged, so that no allocation, resize or
 * neighbouring free can take it or join it. The calls are made with the
 * lock dropped; the range goes back, joined to its neighbours, under the
 * lock again. The range is cut to the pages that need the calls, so that
 * the rest of a long free run (an arena's untouched tail) stays free for
 * others meanwhile. */
#include "backend/span_purge.h"

#include "backend/span_arena.h"
#include "backend/span_guard.h"

typedef struct { hk_arena_t *a; uint32_t at, n, stamp, lo, hi; } job_t;  /* taken: [at, at + n); the calls: [lo, hi) */
enum { JOB_PURGE, JOB_PURGE_HUGE, JOB_CHECK };

/* The first and last marked page of [i, i + n) (*hi past it); false when none. */
static bool marked_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t *lo, uint32_t *hi) {
  uint32_t p = i, q;
  if (!next_marked(a, &p, i + n, &q)) return false;
  *lo = p;
  for (uint32_t r = q; next_marked(a, &r, i + n, &q); r = q) {}
  *hi = q;
  return true;
}

/* The purge an arena gets: whole huge pages only in a huge-page arena (a
 * plain one is purged by its marked pages). */
static unsigned arena_how(const hk_arena_t *a, unsigned how) {
  return how == JOB_PURGE_HUGE && !a->huge ? JOB_PURGE : how;
}

/* The whole huge pages of [i, i + n) that hold a marked page: [*lo, *hi)
 * from the first to the last of them; false when there is none. A huge
 * page that is partly live is left whole (a purge of part of it splits it,
 * and khugepaged may fill it again: RSS grows, jemalloc #1127). */
static bool huge_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t *lo, uint32_t *hi) {
  uint32_t s = (i + HUGE_PAGES - 1) & ~(HUGE_PAGES - 1), e = (i + n) & ~(HUGE_PAGES - 1);
  bool any = false;
  for (uint32_t h = s; h + HUGE_PAGES <= e; h += HUGE_PAGES)
    if (bits_count(a, h, HUGE_PAGES)) {
      if (!any) *lo = h;
      *hi = h + HUGE_PAGES;
      any = true;
    }
  return any;
}

/* The end of the unit of u pages (a power of two) that holds page c, or e. */
static uint32_t unit_end(uint32_t c, uint32_t u, uint32_t e) {
  uint32_t next = (c | (u - 1)) + 1;
  return next < e ? next : e;
}
/* The first stretch of free run [i, i + n) last freed at `before` or
 * earlier (hk_arena_grains_aged: whole huge pages in a huge-page arena,
 * else 64 KiB grains) that holds a marked page: [*lo, *hi) as huge_bounds
 * or marked_bounds give it within the stretch; false when there is none.
 * The purge clock's range. */
static bool aged_bounds(const hk_arena_t *a, uint32_t i, uint32_t n, uint32_t before, bool huge,
                        uint32_t *lo, uint32_t *hi) {
  uint32_t u = huge ? HUGE_PAGES : GRAIN_PAGES;
  uint32_t c = huge ? (i + u - 1) & ~(u - 1) : i;
  uint32_t e = huge ? (i + n) & ~(u - 1) : i + n;
  while (c < e) {
    if (!hk_arena_grains_aged(a, c, unit_end(c, u, e) - c, before)) {
      c = unit_end(c, u, e);
      continue;
    }
    uint32_t from = c;
    while (c < e && hk_arena_grains_aged(a, c, unit_end(c, u, e) - c, before)) c = unit_end(c, u, e);
    if (huge ? huge_bounds(a, from, c - from, lo, hi) : marked_bounds(a, from, c - from, lo, hi)) return true;
  }
  return false;
}

/* Free run i: [lo, hi) of it becomes job j (the rest stays free; the
 * secure build takes the whole run: a free run's last page is its guard,
 * closed, and a cut would leave the front's open). Under the lock. */
static void job_take(hk_arena_t *a, uint32_t i, uint32_t lo, uint32_t hi, job_t *j) {
  uint32_t n = a->e[i].npages, stamp = a->e[i].f.stamp;
  HK_ASSERT(i <= lo && lo < hi && hi <= i + n);
  uint32_t at = GUARD_PAGES ? i : lo, end = GUARD_PAGES ? i + n : hi;
  hk_arena_free_remove(a, i);
  if (at > i) hk_arena_free_insert(a, i, at - i, bits_count(a, i, at - i), stamp);
  if (end < i + n) hk_arena_free_insert(a, end, i + n - end, bits_count(a, end, i + n - end), stamp);
  a->e[at].tag = T_FREED;
  if (end - 1 > at) a->e[end - 1].tag = 0;
  *j = (job_t){ a, at, end - at, stamp, lo, hi };
}

/* The job's calls, without the lock: purge its marked pages (a gap of up
 * to HK_SPAN_PURGE_GAP pages between two ranges is purged with them: one
 * call instead of one a range), or its whole huge pages with a marked page,
 * or ask which of its marked pages are resident and unmark the rest. */
static uint32_t job_run(job_t *j, unsigned how, unsigned long *calls) {
  hk_arena_t *a = j->a;
  uint32_t end = j->hi, pages = 0;
  how = arena_how(a, how);
  if (how == JOB_PURGE_HUGE) {  /* [lo, hi) is whole huge pages */
    for (uint32_t h = j->lo; h < end; h += HUGE_PAGES) {
      uint32_t k = h;
      while (k < end && bits_count(a, k, HUGE_PAGES)) k += HUGE_PAGES;  /* consecutive ones: one call */
      if (k == h) continue;
      pages += bits_count(a, h, k - h);
      hk_os_purge(page_addr(a, h), (size_t)(k - h) << PAGE_SHIFT);
      bits_set(a, h, k - h, false);
      (*calls)++;
      h = k;
    }
    return pages;
  }
  for (uint32_t p = j->lo, q; next_marked(a, &p, end, &q); p = q) {
    for (uint32_t r = q, t; next_marked(a, &r, end, &t) && r - q < HK_SPAN_PURGE_GAP; r = t) q = t;
    if (how == JOB_PURGE) {
      pages += bits_count(a, p, q - p);
      hk_os_purge(page_addr(a, p), (size_t)(q - p) << PAGE_SHIFT);
      bits_set(a, p, q - p, false);
      (*calls)++;
      continue;
    }
    unsigned char vec[1024];
    for (uint32_t r = p; r < q; r += sizeof vec) {
      uint32_t k = q - r < sizeof vec ? q - r : (uint32_t)sizeof vec;
      if (hk_os_resident(page_addr(a, r), (size_t)k << PAGE_SHIFT, vec)) hk_bitmap_keep(a->bits, r, k, vec);
    }
  }
  return pages;
}

/* Runs the jobs (lock dropped) and gives their ranges back (lock taken
 * again): bytes purged. A checked range whose run, joined to its
 * neighbours, has no other resident page is marked checked, so that the
 * cap does not ask the kernel about it again. Called and returns with every lock held. */
static size_t jobs_run(job_t *jobs, unsigned n, unsigned how, unsigned long *calls) {
  if (!n) return 0;
  size_t pages = 0;
  hk_arena_unlock_all();
  for (unsigned k = 0; k < n; k++) pages += job_run(&jobs[k], how, calls);
  hk_arena_lock_all();
  for (unsigned k = 0; k < n; k++) {
    job_t *j = &jobs[k];
    HK_ASSERT(j->a->e[j->at].tag == T_FREED);
    uint32_t nd = bits_count(j->a, j->at, j->n);
    uint32_t h = hk_arena_run_release(j->a, j->at, j->n, nd, j->stamp);
    if (how == JOB_CHECK && j->a->e[h].f.ndirty == nd) j->a->e[h].kind = 1;  /* joined no resident page */
  }
  return pages << PAGE_SHIFT;
}

/* The free run with resident pages freed first, of all arenas (joined runs
 * keep older stamps, so this is nearly but not exactly the oldest). */
static hk_arena_t *oldest(uint32_t *run) {
  hk_arena_t *old = NULL;
  uint64_t old_ms = UINT64_MAX;
  for (hk_arena_t *a = hk_arena_next(NULL); a; a = hk_arena_next(a))
    if (a->dirty_head && a->born_ms + a->e[a->dirty_head].f.stamp < old_ms) {
      old = a;
      old_ms = a->born_ms + a->e[a->dirty_head].f.stamp;
      *run = a->dirty_head;
    }
  return old;
}

/* A block's pages are all marked resident when it is handed out, but a
 * program may touch only a few: before the cap purges anything, the marks
 * of free runs are checked against the kernel's (mincore), oldest first,
 * until what is really resident fits the cap. Without it a heap of big
 * buffers touched at a few pages looks over the cap and purges pages it
 * then faults back in. (Checking at every free instead costs more than the
 * faults: mincore walks every page.) A run checked and not changed since
 * is not asked about again. */
static void cap_check(size_t cap_bytes) {
  job_t jobs[HK_SPAN_PURGE_BATCH];
  for (unsigned round = 0; round < 8 && (HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT) > cap_bytes; round++) {
    unsigned n = 0;
    size_t over = (HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT) - cap_bytes, taken = 0;
    for (hk_arena_t *a = hk_arena_next(NULL); a && n < HK_SPAN_PURGE_BATCH && taken < over; a = hk_arena_next(a))
      for (uint32_t i = a->dirty_head, next; i && n < HK_SPAN_PURGE_BATCH && taken < over; i = next) {
        next = a->e[i].f.dnext;
        uint32_t lo, hi;
        if (a->e[i].kind || !marked_bounds(a, i, a->e[i].npages, &lo, &hi)) continue;
        taken += (size_t)a->e[i].f.ndirty << PAGE_SHIFT;
        job_take(a, i, lo, hi, &jobs[n++]);
      }
    if (!n) return;
    unsigned long calls = 0;
    jobs_run(jobs, n, JOB_CHECK, &calls);
  }
}

/* Every lock held: the arenas with nothing live leave their shards and
 * are returned, linked by `next`, to be unmapped once the locks are dropped. */
static hk_arena_t *take_empty_arenas(void) {
  hk_arena_t *gone = NULL;
  for (unsigned k = 0; k < HK_SPAN_SHARDS; k++)
    for (hk_arena_t **pa = &hk_arena_shards[k].arenas; *pa;) {
      hk_arena_t *a = *pa;
      if (a->free_pages == ARENA_PAGES - a->first_page) {
        *pa = a->next;
        HK_SUB_RELAXED(hk_span_arena_count, 1);
        hk_guard_arena_gone(a);
        a->next = gone;
        gone = a;
      } else {
        pa = &a->next;
      }
    }
  return gone;
}

size_t hk_span_collect(bool force, uint64_t delay_ms, size_t cap_bytes, unsigned long *purges) {
  size_t bytes = 0;
  unsigned long calls = 0;
  if (purges) *purges = 0;
  /* nothing live, free or quarantined (a small program's clock): nothing to
   * do, nor the THP mode read below; a trim still unmaps empty arenas */
  if (!force && !HK_LOAD_RELAXED(hk_span_live_pages) && !HK_LOAD_RELAXED(hk_span_dirty_pages) && !hk_quar_pages())
    return 0;
  /* arenas advised huge pages: the purge clock gives back whole huge pages
   * only; the cap and trim purge what they must */
  unsigned clock_how = hk_os_thp() != HK_THP_NONE && !force ? JOB_PURGE_HUGE : JOB_PURGE;
  job_t jobs[HK_SPAN_PURGE_BATCH];
  hk_arena_lock_all();
  if (QUAR_ON) bytes += hk_quar_collect(force, delay_ms, &calls);  /* trim: the quarantine too */
  /* the clock: runs free for delay_ms or more (all when force); joined runs
   * keep old stamps, so the dirty lists are not in order: each is walked
   * whole, a batch at a time (a run given back goes to the list's end, and
   * has nothing left to purge) */
  for (unsigned round = 0, n = 1; n && round < 64; round++) {
    n = 0;
    for (hk_arena_t *a = hk_arena_next(NULL); a && n < HK_SPAN_PURGE_BATCH; a = hk_arena_next(a)) {
      uint32_t now = now_stamp(a);
      for (uint32_t i = a->dirty_head, next; i && n < HK_SPAN_PURGE_BATCH; i = next) {
        next = a->e[i].f.dnext;
        uint32_t lo, hi;
        if (!force && now - a->e[i].f.stamp < delay_ms) continue;
        bool huge = arena_how(a, clock_how) == JOB_PURGE_HUGE;
        bool some = force ? marked_bounds(a, i, a->e[i].npages, &lo, &hi)
                          : aged_bounds(a, i, a->e[i].npages, now - (uint32_t)delay_ms, huge, &lo, &hi);
        if (some) job_take(a, i, lo, hi, &jobs[n++]);
      }
    }
    bytes += jobs_run(jobs, n, clock_how, &calls);
  }
  if ((HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT) > cap_bytes) cap_check(cap_bytes);
  /* the cap: the oldest runs' pages, 4 KiB at a time (under the cap a huge
   * page that is partly live is split) */
  for (unsigned round = 0, n = 1; n && round < 64 && (HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT) > cap_bytes; round++) {
    n = 0;
    while (n < HK_SPAN_PURGE_BATCH && (HK_LOAD_RELAXED(hk_span_dirty_pages) << PAGE_SHIFT) > cap_bytes) {
      uint32_t i = 0, lo, hi;
      hk_arena_t *a = oldest(&i);
      if (!a) break;
      if (!marked_bounds(a, i, a->e[i].npages, &lo, &hi)) {  /* counted dirty, none marked: cannot be */
        HK_ASSERT(0);
        break;
      }
      job_take(a, i, lo, hi, &jobs[n++]);
    }
    bytes += jobs_run(jobs, n, JOB_PURGE, &calls);
  }
  hk_arena_t *gone = force ? take_empty_arenas() : NULL;  /* arenas with nothing live go back to the OS */
  hk_arena_unlock_all();
  while (gone) {
    hk_arena_t *next = gone->next;
    hk_arena_unmap(gone);
    gone = next;
  }
  if (purges) *purges = calls;
  return bytes;
}
