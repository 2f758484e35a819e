/* Statistics (stats.h): the snapshot, the figures of hak_stats_read
 * gathered from every layer, with the peaks sampled each time; the
 * timeline's clock; the exit report's call. How a snapshot is printed and
 * where it goes is stats_print.c's. */
#define _GNU_SOURCE
#include "policy/stats.h"

#include <stdatomic.h>
#include <string.h>

#include "../include/hakmem.h"
#include "heap/heap.h"
#include "base/gate.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "mem/guarded.h"
#include "base/libc.h"  /* memcpy/memset: glibc's, not the copy measure's */
#include "base/lock.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "base/report.h"
#include "policy/stats_print.h"
#include "base/size_class.h"
#include "backend/span.h"
#include "backend/superslab.h"

static uint64_t peak_blocks[HK_NCLASS];   /* sampled                         */
static size_t peak_live_bytes;
static size_t peak_committed;             /* sampled, as peak_live_bytes */
static hk_lock_t tick_lock = HK_LOCK_INIT;
__attribute__((constructor)) static void name_locks(void) {  /* the stats' lock waits */
  hk_lock_name(&tick_lock, sizeof tick_lock, HK_LOCK_STATS);
}
static uint64_t tick_gate;  /* base/gate.h */
static uint64_t start_ms;

/* Of the address space hakmem has mapped (`mapped`), the bytes that hold
 * something: the superslabs, the span pages of live large blocks and the
 * free ones kept resident, huge blocks' mappings and their cache. The rest
 * is reserved: address space and no memory, mostly the unused room of the
 * span arenas (1 GiB each, mapped whole at the first large block), and
 * hakmem's own tables. */
static size_t committed_of(const struct hak_stats *s) {
  size_t c = s->superslabs * HK_SS_SIZE + s->large_live_bytes + s->large_cached_bytes;
  return c < s->mapped_bytes ? c : s->mapped_bytes;
}

/* jemalloc's figures (hakmem.h; docs/OBSERVABILITY.md, "Memory figures"),
 * from the figures collected and the committed bytes c:
 *  - allocated: the live blocks' usable bytes (live_bytes);
 *  - active: the slabs in use, each whole (a class up to HK_SMALL_MAX has
 *    64 KiB slabs, a larger one 256 KiB), and the live large blocks' pages;
 *  - metadata: the superslabs' headers, the live thread heaps and the
 *    resident pages of the span arenas' descriptors (page maps);
 *  - resident: the committed bytes less the cached superslabs that were
 *    purged whole; slabs purged in place inside a superslab still count, so
 *    it is an upper bound, and never above the process's RSS when known;
 *  - retained: mapped and not resident. */
static void memory_figures(struct hak_stats *o, size_t c) {
  o->allocated = o->live_bytes;
  size_t active = o->large_live_bytes;
  for (unsigned k = 0; k < HK_NCLASS; k++)
    active += o->classes[k].slabs * (o->classes[k].block_size <= HK_SMALL_MAX ? (size_t)64 << 10 : (size_t)256 << 10);
  o->active = active;
  o->metadata = o->superslabs * HK_SS_META_SIZE + o->heaps * sizeof(hk_heap_t) + hk_span_bytes_meta();
  size_t cached = o->superslabs_cached * HK_SS_SIZE, unpurged = hk_ss_cached_unpurged_bytes();
  size_t purged = cached > unpurged ? cached - unpurged : 0;
  size_t res = c > purged ? c - purged : 0;
  if (o->rss_bytes && res > o->rss_bytes) res = o->rss_bytes;
  o->resident = res;
  o->retained = o->mapped_bytes > res ? o->mapped_bytes - res : 0;
}

void hk_stats_collect(struct hak_stats *o) {
  memset(o, 0, sizeof *o);
  o->counting = HK_LOAD_RELAXED(hk_heap_counting);
  uint64_t lv[HK_NCLASS] = {0}, sl[HK_NCLASS] = {0};
  /* other threads' counts, read while they change: a snapshot */
  HK_TSAN_HIDE_BEGIN();
  hk_ss_census(lv, sl);
  hk_heap_sum_cached(lv);  /* blocks in mid caches: out of their slabs, not live */
  hk_guarded_census(lv);   /* sampled blocks: live, outside the slabs */
  hk_heap_stats_t acc = {0};
  hk_heap_sum_stats(&acc);
  HK_TSAN_HIDE_END();

  uint64_t small_allocs = 0, small_refills = 0;
  size_t live_small = 0;
  /* the public struct has a row for each class: a class added below must
   * grow HAK_STATS_CLASSES (an ABI change, hakmem.h) */
  _Static_assert(HK_NCLASS <= HAK_STATS_CLASSES, "hak_stats has a row per size class");
  for (unsigned c = 0; c < HK_NCLASS; c++) {
    struct hak_class_stats *k = &o->classes[c];
    k->block_size = hk_class_bytes(c);
    k->live_blocks = lv[c];
    k->live_bytes = lv[c] * k->block_size;
    k->slabs = sl[c];
    if (o->counting) {
      k->allocs = acc.handed[c];
      k->frees = acc.handed[c] > lv[c] ? acc.handed[c] - lv[c] : 0;
      k->refills = acc.refills[c];
      k->remote_frees = acc.remote[c];
      /* racy max (collectors may run at once): a sample */
      if (lv[c] > HK_LOAD_RELAXED(peak_blocks[c])) HK_STORE_RELAXED(peak_blocks[c], lv[c]);
      k->peak_blocks = HK_LOAD_RELAXED(peak_blocks[c]);
      k->peak_bytes = k->peak_blocks * k->block_size;
    }
    small_allocs += k->allocs;
    small_refills += k->refills;
    live_small += k->live_bytes;
  }
  o->large_live = hk_large_count_live();
  o->large_live_bytes = hk_large_bytes_live();
  o->large_cached_bytes = hk_large_bytes_cached();
  o->large_allocs = hk_large_count_allocs();
  o->large_frees = hk_large_count_frees();
  o->live_bytes = live_small + o->large_live_bytes;
  if (o->live_bytes > HK_LOAD_RELAXED(peak_live_bytes)) HK_STORE_RELAXED(peak_live_bytes, o->live_bytes);
  o->peak_live_bytes = HK_LOAD_RELAXED(peak_live_bytes);
  o->allocs = small_allocs + o->large_allocs;
  o->frees = 0;
  for (unsigned c = 0; c < HK_NCLASS; c++) o->frees += o->classes[c].frees;
  o->frees += o->large_frees;
  o->fast_path_hit_rate = small_allocs ? 1.0 - (double)small_refills / (double)small_allocs : 0.0;
  o->mapped_bytes = atomic_load(&hk_os_stats.mapped_now);
  o->peak_mapped_bytes = atomic_load(&hk_os_stats.mapped_peak);
  o->superslabs = hk_ss_count_mapped();
  HK_TSAN_HIDE_BEGIN();  /* list counts read without their locks: a snapshot */
  o->superslabs_cached = hk_ss_count_cached();
  o->superslabs_abandoned = hk_ss_count_abandoned();
  HK_TSAN_HIDE_END();
  o->heaps = hk_heap_count_live();
  o->mmap_calls = atomic_load(&hk_os_stats.mmap_calls);
  o->munmap_calls = atomic_load(&hk_os_stats.munmap_calls);
  o->madvise_calls = atomic_load(&hk_os_stats.madvise_calls);
  o->mremap_calls = atomic_load(&hk_os_stats.mremap_calls);
  o->mprotect_calls = atomic_load(&hk_os_stats.mprotect_calls);
  o->guard_calls = atomic_load(&hk_os_stats.guard_calls);
  o->superslabs_lent = hk_span_bytes_ss() / HK_SS_SIZE;
  o->mmap_bytes = atomic_load(&hk_os_stats.mmap_bytes);
  o->munmap_bytes = atomic_load(&hk_os_stats.munmap_bytes);
  o->madvise_bytes = atomic_load(&hk_os_stats.madvise_bytes);
  o->rss_bytes = hk_os_rss_bytes();
  o->peak_rss_bytes = hk_os_peak_rss_bytes(o->rss_bytes);
  o->profile = (int)hk_knobs.profile;
  o->thp = (int)hk_os_thp();
  o->huge_bytes = hk_os_huge_bytes();
  unsigned density;
  hk_span_thp_info(&o->thp_plain_blocks, &o->thp_samples, &density);
  o->thp_density = (int)density;
  o->populate_calls = atomic_load(&hk_os_stats.populate_calls);
  o->populate_bytes = atomic_load(&hk_os_stats.populate_bytes);
  o->lock_waits = atomic_load(&hk_lock_counts.waits);
  o->lock_yields = atomic_load(&hk_lock_counts.yields);
  _Static_assert((int)HK_LOCK_NAMES == (int)HAK_STATS_LOCKS && (int)HK_LOCK_STATS == (int)HAK_LOCK_STATS &&
                 (int)HK_LOCK_SPAN == (int)HAK_LOCK_SPAN, "lock.h's names are hakmem.h's");
  for (unsigned i = 0; i < HAK_STATS_LOCKS; i++) {
    o->lock_wait_count[i] = atomic_load(&hk_lock_counts.named_waits[i]);
    o->lock_wait_ns[i] = atomic_load(&hk_lock_counts.named_ns[i]);
  }
  o->purge_window_ms[HAK_TIER_SLABS] = hk_ss_purge_delay_ms();
  o->purge_window_ms[HAK_TIER_SPAN] = hk_large_cap(HK_LARGE_CAP_SPAN_DELAY);
  o->purge_window_ms[HAK_TIER_CACHE] = hk_large_cap(HK_LARGE_CAP_DELAY);
  o->span_shards = (int)hk_span_shards();
  hk_mem_info_t m;
  hk_mem_info(&m);
  o->mem_limit = m.hard;
  o->mem_limit_soft = m.soft;
  o->mem_limit_source = (int)m.source;
  o->mem_pressure = (int)m.pressure;
  o->mem_resident = m.resident;
  o->mem_headroom = m.hard > m.resident ? m.hard - m.resident : 0;
  o->mem_over = m.over;
  o->mem_refused = m.refused;
  o->mem_reliefs = m.reliefs;
  size_t c = committed_of(o);
  if (c > HK_LOAD_RELAXED(peak_committed)) HK_STORE_RELAXED(peak_committed, c);
  memory_figures(o, c);
}

/* ---- the snapshot the outputs print, and when ---------------------------------- */

/* One snapshot in static storage (72 classes: too big for a slow path's
 * stack), used under tick_lock, as is stats_print.c's output buffer. */
HK_BSS_ARRAY static hk_stats_snap_t snap;

static void snap_collect(hk_stats_snap_t *o) {
  hk_stats_collect(&o->s);  /* also samples the peaks */
  o->committed = committed_of(&o->s);
  o->peak_committed = HK_LOAD_RELAXED(peak_committed);
}

void hk_stats_init(void) {
  start_ms = hk_os_now_ms();
  /* the timeline goes only to a file: without one it is not written */
  if (hk_knobs.stats_interval_ms && !hk_knobs.stats_file[0])
    hk_message("hakmem: warning: HAKMEM_STATS_INTERVAL=%ld without HAKMEM_STATS_FILE: no timeline is "
               "written (set HAKMEM_STATS_FILE to a path)\n", hk_knobs.stats_interval_ms);
  hk_stats_timeline_open();
}

/* From slow paths: at most once per HAKMEM_STATS_INTERVAL (50 ms without
 * one, for the peaks), by one thread at a time, the others never waiting. */
void hk_stats_tick(void) {
  uint64_t now = hk_os_now_ms();
  if (!hk_gate_due(&tick_gate, now)) return;
  if (!hk_trylock(&tick_lock)) return;  /* someone else is on it: never wait */
  uint64_t iv = hk_knobs.stats_interval_ms ? (uint64_t)hk_knobs.stats_interval_ms : 50;
  hk_gate_set(&tick_gate, now + iv);  /* the lock is the gate's pass */
  snap_collect(&snap);
  hk_stats_write_timeline(&snap, now - start_ms);
  hk_unlock(&tick_lock);
}

void hk_stats_at_exit(int report_fd) {
  if (!HK_LOAD_RELAXED(hk_heap_counting)) return;
  hk_lock(&tick_lock);
  snap_collect(&snap);
  uint64_t now = hk_os_now_ms();
  hk_stats_write_report(&snap, now - start_ms, report_fd);
  hk_unlock(&tick_lock);
}

void hk_stats_dump(void) {
  hk_lock(&tick_lock);
  snap_collect(&snap);
  hk_stats_write_dump(&snap, hk_os_now_ms() - start_ms);
  hk_unlock(&tick_lock);
}

void hk_stats_fork_prepare(void) { hk_lock(&tick_lock); }
void hk_stats_fork_parent(void) { hk_unlock(&tick_lock); }
void hk_stats_fork_child(void) { hk_lock_reset(&tick_lock); }

/* ---- public API and glibc's introspection ----------------------------------------- */

/* The struct as 0.1.0 shipped it: hak_stats_get's callers were compiled
 * with this size, and get this many bytes, whatever is appended later. */
#define HK_STATS_V1_SIZE offsetof(struct hak_stats, profile)
_Static_assert(HK_STATS_V1_SIZE == 5968, "struct hak_stats: a field was inserted before the end "
               "(append new fields after the last one: the installed ABI)");

HK_EXPORT int hak_stats_get(struct hak_stats *outp) {
  if (!outp) return -1;
  struct hak_stats full;
  hk_stats_collect(&full);
  memcpy(outp, &full, HK_STATS_V1_SIZE);
  return 0;
}

HK_EXPORT size_t hak_stats_read(struct hak_stats *outp, size_t size) {
  if (!outp || !size) return 0;
  struct hak_stats full;
  hk_stats_collect(&full);
  size_t n = size < sizeof full ? size : sizeof full;
  memcpy(outp, &full, n);
  if (size > n) memset((char *)outp + n, 0, size - n);  /* a newer caller's fields: 0 */
  return n;
}

/* The three below write into a FILE under tick_lock: a FILE that allocates
 * as it is written (open_memstream) comes back to hk_stats_tick, which
 * only tries the lock. */
HK_EXPORT void hak_stats_print(FILE *fp) {
  hk_lock(&tick_lock);
  snap_collect(&snap);
  hk_stats_write_text(fp ? fp : stderr, &snap);
  hk_unlock(&tick_lock);
}

void hk_stats_print_glibc_style(FILE *fp) {
  hk_lock(&tick_lock);
  snap_collect(&snap);
  hk_stats_write_glibc(fp, &snap);
  hk_unlock(&tick_lock);
}

int hk_stats_print_xml(FILE *fp) {
  hk_lock(&tick_lock);
  snap_collect(&snap);
  hk_stats_write_xml(fp, &snap);
  hk_unlock(&tick_lock);
  return 0;
}
