/* span_guard.c: the guard measure of the span tier (the secure build):
 * which pages of an arena are closed, how a block's pages are opened and
 * its guard closed, how a freed block is closed whole, and the quarantine
 * that keeps a freed block's address from the next requests.
 *
 * Every live block's last page, the last page of every free run and the
 * page after an arena's descriptor are PROT_NONE (an arena starts so, and
 * a freed block's guard stays closed), so the pages on both sides of a
 * live block are guards: a write past it or before it faults. Allocating
 * opens the block's pages (one mprotect, which costs only where pages are
 * closed) and closes its last page. A freed block of up to
 * HAKMEM_CLOSE_FREED_KB is closed whole at once, so a write through a
 * dangling pointer faults too; bigger ones are not: closing costs a
 * page-table walk over every resident page, at the free and again at the
 * reuse, which a heap of big blocks pays at every free. Every freed block
 * then waits in the quarantine (below) before its pages can be handed out
 * again. */
#include "backend/span_guard.h"

#include "base/knobs.h"

uint32_t hk_guard_close_pages(void) { return (uint32_t)(hk_knobs.close_freed_kb >> 2); }

/* ---- closed pages ----
 * A page is closed by PROT_NONE (mprotect) or, where the kernel has them,
 * by a guard marker (hk_os_guard), which splits no mapping: mprotect of a
 * block's last page makes one mapping three at every malloc, a cost the
 * secure build's large blocks pay at each call, and vm.max_map_count
 * bounds how many mappings there may be. With markers an arena is opened
 * (mprotect) once, from its first page up to `open_to` as blocks reach
 * further (past it, pages are still the reservation's PROT_NONE), and
 * `closed` says which pages below it carry a marker. A marker drops the
 * page's contents: a freed block closed whole is no longer resident, and
 * comes back zero. The bitmaps change under the arena's shard's lock (but
 * `closed`, below); the calls are made with it dropped. */
static bool markers(void) { return hk_os_guard_markers(); }

/* A freed block closed whole by PROT_NONE is an island in open pages, two
 * more mappings: enough freed blocks not yet reused take the process to
 * vm.max_map_count, and then its own mmap calls fail. Past shut_max
 * islands (of all arenas) a freed block is closed by markers instead (its
 * pages dropped), or, without markers, left open (the quarantine still
 * keeps its address from the next malloc for a while). */
static size_t shut_islands;  /* the arenas' islands summed (atomic: arenas of all shards) */

/* a sixteenth of vm.max_map_count, at least 64: the rest stay the program's */
static size_t shut_max(void) {
  size_t m = hk_os_max_map_count() / 16;
  return m > 64 ? m : 64;
}

static bool shut_at(const hk_arena_t *a, uint32_t i) {
  return i < ARENA_PAGES && hk_bitmap_test(a->shut, i);
}
/* Shut (on) pages [i, i + n), none of them shut, or open a stretch of shut
 * pages: the islands beside it join it, or stay when it opens. */
static void shut_set(hk_arena_t *a, uint32_t i, uint32_t n, bool on) {
  uint32_t beside = (i > 0 && shut_at(a, i - 1)) + shut_at(a, i + n);
  uint32_t before = a->islands;
  a->islands = on ? a->islands + 1 - beside : a->islands - 1 + beside;
  HK_ADD_RELAXED(shut_islands, (size_t)a->islands - before);  /* modulo 2^64 */
  hk_bitmap_set(a->shut, i, n, on);
}

void hk_guard_arena_gone(const hk_arena_t *a) { HK_SUB_RELAXED(shut_islands, a->islands); }

/* A freed block's close: its contents stay (PROT_NONE even with markers: a
 * freed block closed by markers is faulted back in at its reuse, which
 * costs more than the mprotect pair) while shut_max() allows; past it,
 * markers, or nothing without them. Under the lock. */
unsigned hk_guard_close_how(void) {
  if (HK_LOAD_RELAXED(shut_islands) < shut_max()) return CLOSE_KEEP;
  return markers() ? CLOSE_GUARD : CLOSE_NONE;
}

bool hk_guard_close_call(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how) {
  if (how == CLOSE_NONE) return false;
  if (how == CLOSE_KEEP) return hk_os_protect_none(page_addr(a, i), (size_t)n << PAGE_SHIFT);
  return hk_os_close_guard(page_addr(a, i), (size_t)n << PAGE_SHIFT);
}

void hk_guard_close_done(hk_arena_t *a, uint32_t i, uint32_t n, unsigned how) {
  if (how == CLOSE_KEEP) shut_set(a, i, n, true);
  else if (markers()) hk_bitmap_set(a->closed, i, n, true);
}

/* (a guard's close changes only `closed`, whose words are atomic: no lock) */
bool hk_guard_close_page(hk_arena_t *a, uint32_t i) {
  if (!hk_guard_close_call(a, i, 1, CLOSE_GUARD)) return false;
  hk_guard_close_done(a, i, 1, CLOSE_GUARD);
  return true;
}

/* ---- opening a block's pages ----
 * The calls are made after the shard's lock is dropped (opening_calls): a
 * block's pages are its own once it is taken, and calls made under the
 * lock keep every other thread that frees or allocates a big block
 * spinning on it. The shut pages' bits are cleared under the lock
 * (opening_plan: they count islands, which the neighbours' bits take part
 * in); the `closed` bits, which only the block's owner reads while it is
 * live, as each call succeeds. One call per run of pages: a call over all
 * of a big block's resident pages, from its first closed page to its
 * last, walks the page tables of the open ones between too. A call that
 * fails (no mapping to spare: vm.max_map_count) is undone under the lock
 * again (opening_undo): the shut runs it did not open are shut again. */

/* With markers an arena is opened up to open_to: the free run's pages up
 * to a block's end and on to the next MiB (markers stay; the arena's last
 * page, the run's guard, never), one call per MiB of growth, not one per
 * block (test_span many). A MiB, not 2: a stray store 1 MiB past the
 * arena's last block then lands in the reservation's PROT_NONE (attack
 * far_write_1m_256k, issue 63; with 2 MiB it landed in opened pages no
 * block held). The call is made under the arena's own opening lock, not
 * the shard's: only the threads whose blocks reach past open_to wait on
 * it, and they need its pages. open_to moves only once the call is done,
 * so a block below it is open; pages past it were in no block that was
 * handed out, so the call opens no page a freed block had shut. */
#define OPEN_STEP (HUGE_PAGES / 2)
static bool open_to_reach(hk_arena_t *a, uint32_t end) {
  if (end <= __atomic_load_n(&a->open_to, __ATOMIC_ACQUIRE)) return true;
  hk_lock_as(&a->open_lock, HK_LOCK_SPAN);  /* (its waits are the span tier's) */
  uint32_t from = a->open_to;
  bool ok = true;
  if (end > from) {
    uint32_t to = (end + OPEN_STEP - 1) & ~(OPEN_STEP - 1);
    if (to > ARENA_PAGES - 1) to = ARENA_PAGES - 1;
    if (to < end) to = end;
    ok = hk_os_commit(page_addr(a, from), (size_t)(to - from) << PAGE_SHIFT);
    if (ok) __atomic_store_n(&a->open_to, to, __ATOMIC_RELEASE);
  }
  hk_unlock(&a->open_lock);
  return ok;
}

void hk_guard_opening_plan(hk_arena_t *a, uint32_t i, uint32_t n, bool last, uint32_t before, opening_t *o) {
  o->ncommit = o->done = 0;
  o->at = i;
  o->n = n;
  o->last = last ? i + n : 0;
  o->before = before;
  if (!markers())  /* PROT_NONE is undone by one mprotect of the block */
    o->commit[o->ncommit++] = (run_t){ i, n };
  for (uint32_t p = i, q; hk_bitmap_next_run(a->shut, &p, i + n, &q); p = q) {
    if (markers()) {
      if (o->ncommit < OPEN_SHUT_RUNS) o->commit[o->ncommit++] = (run_t){ p, q - p };
      else o->commit[o->ncommit - 1].n = q - o->commit[o->ncommit - 1].at;  /* the rest: one call */
    }
    shut_set(a, p, q - p, false);
  }
}

bool hk_guard_opening_calls(hk_arena_t *a, opening_t *o) {
  if (markers() && !open_to_reach(a, o->at + o->n)) return false;
  for (; o->done < o->ncommit; o->done++)
    if (!hk_os_commit(page_addr(a, o->commit[o->done].at), (size_t)o->commit[o->done].n << PAGE_SHIFT)) return false;
  if (markers())
    for (uint32_t p = o->at, q; hk_bitmap_next_run(a->closed, &p, o->at + o->n, &q); p = q) {
      if (!hk_os_unguard(page_addr(a, p), (size_t)(q - p) << PAGE_SHIFT)) return false;
      hk_bitmap_set(a->closed, p, q - p, false);
    }
  if (o->last && !hk_guard_close_page(a, o->last)) return false;
  /* the free run left before an aligned block ends closed: its last page
   * is nobody's but as a guard (a block carved from that run ends there,
   * or before), so a failed call costs only that guard, as it did under
   * the lock */
  if (o->before) (void)hk_guard_close_page(a, o->before);
  return true;
}

/* (the `closed` bits are still set where markers stayed; the pages then
 * go back to a free run, whose last page the caller closes) */
void hk_guard_opening_undo(hk_arena_t *a, const opening_t *o) {
  if (!markers()) {  /* one call for the block: the islands it may have left, counted as one */
    if (!o->done) shut_set(a, o->at, o->n, true);
    return;
  }
  for (unsigned k = o->done; k < o->ncommit; k++) shut_set(a, o->commit[k].at, o->commit[k].n, true);
}

/* ---- the quarantine ----
 * The last QUAR_RUNS freed blocks of a shard (closed when they are at most
 * HAKMEM_CLOSE_FREED_KB), not yet free runs, so that no request gets a
 * just-freed block's address back, whatever its size. At most QUAR_PAGES
 * pages wait, but the newest block always does: a quarantine that holds
 * more keeps so many pages out of reuse that the cap purges at every free.
 * Their pages are purged on the purge clock like those of free runs; trim
 * empties it. One per shard (a block waits in its arena's), under the
 * shard's lock. A block's head keeps T_FREED (a second free is a double
 * free) and, in the union, the stamp of its free. */
#define QUAR_PAGES 2048u  /* 8 MiB in all shards: past it the oldest go (the newest always stays) */
static size_t quar_pages;  /* read without the lock by the stats */

size_t hk_quar_pages(void) { return HK_LOAD_RELAXED(quar_pages); }

static void quar_release_oldest(shard_t *sh) {
  HK_ASSERT(sh->quar_n && sh->quar_first < QUAR_RUNS);
  quar_t *slot = &sh->quar[sh->quar_first];
  /* its pages are being purged with the locks dropped (hk_quar_collect):
   * that purge takes no lock before it is done, so waiting here cannot
   * deadlock; it lasts one madvise, and only when the ring wraps onto it */
  while (__atomic_load_n(&slot->busy, __ATOMIC_ACQUIRE)) sched_yield();
  quar_t q = *slot;
  sh->quar_first = (sh->quar_first + 1) % QUAR_RUNS;
  sh->quar_n--;
  entry_t *h = &q.a->e[q.i];
  uint32_t n = h->npages;
  HK_ASSERT(h->tag == T_FREED && HK_LOAD_RELAXED(quar_pages) >= n);
  HK_SUB_RELAXED(quar_pages, n);
  hk_arena_run_release(q.a, q.i, n, bits_count(q.a, q.i, n), h->f.stamp);
}

void hk_quar_push(hk_arena_t *a, uint32_t i, uint32_t stamp) {
  shard_t *sh = shard_of(a);
  if (sh->quar_n == QUAR_RUNS) quar_release_oldest(sh);
  while (sh->quar_n && HK_LOAD_RELAXED(quar_pages) + a->e[i].npages > QUAR_PAGES) quar_release_oldest(sh);
  a->e[i].f.stamp = stamp;
  sh->quar[(sh->quar_first + sh->quar_n++) % QUAR_RUNS] = (quar_t){ a, i, 0 };
  HK_ADD_RELAXED(quar_pages, a->e[i].npages);
}

/* The quarantine's purge, made with the locks dropped (no system call
 * under a lock others wait on): under every lock, the marked ranges of
 * the blocks due are gathered, a batch at a time, and their slots made
 * busy; the locks are dropped, the ranges purged and unmarked (the bitmap's
 * words are atomic), the slots freed; the locks taken again, and the next
 * batch gathered. A busy block keeps T_FREED and its slot (a push that
 * wraps onto it waits), so nothing can take or join its pages meanwhile.
 * The purge takes no lock before its slots are freed. */
#define QUAR_BATCH 64
typedef struct { quar_t *slot; hk_arena_t *a; uint32_t p, q; } quar_job_t;

static unsigned quar_gather(uint64_t delay_ms, quar_job_t *jobs) {
  unsigned n = 0;
  for (shard_t *sh = hk_arena_shards; sh < hk_arena_shards + HK_SPAN_SHARDS && n < QUAR_BATCH; sh++)
    for (unsigned k = 0; k < sh->quar_n && n < QUAR_BATCH; k++) {
      quar_t *slot = &sh->quar[(sh->quar_first + k) % QUAR_RUNS];
      entry_t *h = &slot->a->e[slot->i];
      if (__atomic_load_n(&slot->busy, __ATOMIC_RELAXED) || now_stamp(slot->a) - h->f.stamp < delay_ms) continue;
      for (uint32_t p = slot->i, q; n < QUAR_BATCH && next_marked(slot->a, &p, slot->i + h->npages, &q); p = q) {
        jobs[n++] = (quar_job_t){ slot, slot->a, p, q };
        __atomic_store_n(&slot->busy, 1, __ATOMIC_RELAXED);
      }
    }
  return n;
}

void hk_quar_fork_child(void) {
  for (shard_t *sh = hk_arena_shards; QUAR_ON && sh < hk_arena_shards + HK_SPAN_SHARDS; sh++)
    for (unsigned k = 0; k < QUAR_RUNS; k++) sh->quar[k].busy = 0;
}

/* Quarantined blocks keep their address, not their pages. */
size_t hk_quar_collect(bool force, uint64_t delay_ms, unsigned long *calls) {
  size_t pages = 0;
  if (!QUAR_ON) return 0;
  for (shard_t *sh = hk_arena_shards; force && sh < hk_arena_shards + HK_SPAN_SHARDS; sh++)
    while (sh->quar_n) quar_release_oldest(sh);
  quar_job_t jobs[QUAR_BATCH];
  for (unsigned round = 0, n; round < 64 && (n = quar_gather(delay_ms, jobs)) != 0; round++) {
    hk_arena_unlock_all();
    for (unsigned k = 0; k < n; k++) {
      hk_os_purge(page_addr(jobs[k].a, jobs[k].p), (size_t)(jobs[k].q - jobs[k].p) << PAGE_SHIFT);
      bits_set(jobs[k].a, jobs[k].p, jobs[k].q - jobs[k].p, false);
      pages += jobs[k].q - jobs[k].p;
      (*calls)++;
    }
    for (unsigned k = 0; k < n; k++) __atomic_store_n(&jobs[k].slot->busy, 0, __ATOMIC_RELEASE);
    hk_arena_lock_all();
  }
  return pages << PAGE_SHIFT;
}
