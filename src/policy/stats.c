/* Statistics (stats.h): the snapshot of hak_stats_read, the exit report,
 * the JSON Lines timeline, malloc_stats and malloc_info. */
#define _GNU_SOURCE
#include "policy/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../include/hakmem.h"
#include "heap/heap.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "base/libc.h"  /* memcpy/memset: glibc's, not the copy measure's */
#include "base/lock.h"
#include "backend/mem_limit.h"
#include "pal/os.h"
#include "base/report.h"
#include "base/size_class.h"
#include "backend/span.h"
#include "backend/superslab.h"

static uint64_t peak_blocks[HK_NCLASS];   /* sampled                         */
static size_t peak_live_bytes;
static size_t peak_committed;             /* sampled, as peak_live_bytes */
static hk_lock_t tick_lock = HK_LOCK_INIT;
static _Atomic uint64_t next_tick_ms;
static uint64_t start_ms;
static int timeline_fd = -1;
static pid_t timeline_pid;     /* the process that opened it (a fork child reopens) */
static bool stats_file_failed; /* said once: the reports go to stderr */

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

/* HAKMEM_STATS_FILE with %p replaced by the pid and %% by %, so that every
 * process of a launcher script gets a file of its own. false (and a
 * message) when the result does not fit. */
static bool stats_path(char *dst, size_t size) {
  const char *s = hk_knobs.stats_file;
  size_t n = 0;
  for (; *s; s++) {
    char pid[24];
    const char *add = NULL;
    char one[2] = { *s, 0 };
    if (s[0] == '%' && s[1] == 'p') {
      snprintf(pid, sizeof pid, "%d", (int)getpid());
      add = pid;
      s++;
    } else if (s[0] == '%' && s[1] == '%') {
      add = "%";
      s++;
    } else {
      add = one;
    }
    for (; *add; add++) {
      if (n + 1 >= size) {
        hk_message("hakmem: HAKMEM_STATS_FILE=%s is too long once expanded; statistics on stderr\n",
                   hk_knobs.stats_file);
        return false;
      }
      dst[n++] = *add;
    }
  }
  dst[n] = 0;
  return true;
}

static bool path_has_pid(void) {
  for (const char *s = hk_knobs.stats_file; *s; s++) {
    if (s[0] == '%' && s[1] == '%') s++;
    else if (s[0] == '%' && s[1] == 'p') return true;
  }
  return false;
}

/* Opens the expanded HAKMEM_STATS_FILE for appending; on failure says so
 * once (the path and the reason) and returns -1: the caller falls back. */
static int open_stats_file(const char *fallback) {
  char path[sizeof hk_knobs.stats_file + 256];
  if (stats_file_failed) return -1;
  if (!stats_path(path, sizeof path)) { stats_file_failed = true; return -1; }
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    const char *why = strerrordesc_np(e);  /* untranslated, static: no malloc */
    hk_message("hakmem: cannot open HAKMEM_STATS_FILE %s: %s; %s\n", path,
               why ? why : "unknown error", fallback);
    stats_file_failed = true;
  }
  return fd;
}

void hk_stats_init(void) {
  start_ms = hk_os_now_ms();
  if (hk_knobs.stats_interval_ms && hk_knobs.stats_file[0]) {
    timeline_fd = open_stats_file("no timeline");
    timeline_pid = getpid();
  }
}

/* A child of fork() writes to a file of its own when the name has %p. */
static void timeline_check_pid(void) {
  if (timeline_fd < 0 || !path_has_pid()) return;
  pid_t me = getpid();
  if (me == timeline_pid) return;
  close(timeline_fd);
  timeline_pid = me;
  timeline_fd = open_stats_file("no timeline");
}

void hk_stats_collect(struct hak_stats *o) {
  memset(o, 0, sizeof *o);
  o->counting = HK_LOAD_RELAXED(hk_heap_counting);
  uint64_t lv[HK_NCLASS] = {0}, sl[HK_NCLASS] = {0};
  /* other threads' counts, read while they change: a snapshot */
  HK_TSAN_HIDE_BEGIN();
  hk_ss_census(lv, sl);
  hk_heap_sum_cached(lv);  /* blocks in mid caches: out of their slabs, not live */
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
}

/* ---- output: a small buffered writer onto an fd or a FILE, no malloc ---------- */

typedef struct {
  int fd;
  FILE *fp;
  size_t n;
  char buf[8192];
} sink_t;

static void sink_flush(sink_t *k) {
  if (k->n == 0) return;
  if (k->fp) {
    fwrite(k->buf, 1, k->n, k->fp);
  } else {
    size_t off = 0;
    while (off < k->n) {
      ssize_t w = write(k->fd, k->buf + off, k->n - off);
      if (w <= 0) break;
      off += (size_t)w;
    }
  }
  k->n = 0;
}

static void out(sink_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(sink_t *k, const char *fmt, ...) {
  if (sizeof k->buf - k->n < 512) sink_flush(k);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(k->buf + k->n, sizeof k->buf - k->n, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  if ((size_t)m >= sizeof k->buf - k->n) m = (int)(sizeof k->buf - k->n - 1);
  k->n += (size_t)m;
}

/* The configuration in the reports: the profile and each knob that differs
 * from its default (`hakmem config` shows them all). */
static void print_config_text(sink_t *k) {
  hk_knob_info_t x;
  out(k, "  config: profile %s", hk_profile_name());
  bool any = false;
  for (size_t i = 1; hk_knob_get(i, &x); i++) {
    if (hk_knob_is_default(&x)) continue;
    out(k, "%s%s=", any ? ", " : "; ", x.name);
    if (x.text) out(k, "%s", x.text);  /* alone: a path may be long */
    else out(k, "%ld", x.value);
    any = true;
  }
  out(k, "%s\n", any ? "" : "; every knob at its default");
}

/* JSON string body: quotes, backslashes and control bytes escaped */
static void out_json_str(sink_t *k, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') out(k, "\\%c", c);
    else if (c < 0x20) out(k, "\\u%04x", c);
    else out(k, "%c", c);
  }
}

static void print_config_json(sink_t *k) {
  hk_knob_info_t x;
  out(k, "\"profile\": \"%s\", \"knobs\": {", hk_profile_name());
  bool any = false;
  for (size_t i = 1; hk_knob_get(i, &x); i++) {
    if (hk_knob_is_default(&x)) continue;
    out(k, "%s\"%s\": ", any ? ", " : "", x.name);
    if (x.text) {
      out(k, "\"");
      out_json_str(k, x.text);
      out(k, "\"");
    } else {
      out(k, "%ld", x.value);
    }
    any = true;
  }
  out(k, "}, ");
}

static const char *thp_regions(int thp) {
  return thp == HK_THP_ALL ? "span arenas and superslabs" : thp == HK_THP_SPANS ? "span arenas" : "no region";
}
static const char *thp_knob(void) {
  long v = hk_knobs.thp;
  return v == HK_THP_KNOB_NEVER ? "never" : v == HK_THP_KNOB_ALWAYS ? "always" : v == HK_THP_KNOB_SPANS ? "spans" : "auto";
}

static const char *const pressure_names[] = { "none", "soft", "hard" };

static void print_budget_text(sink_t *k, const struct hak_stats *s) {
  if (!s->mem_limit && !s->mem_limit_soft) {
    out(k, "  memory limit: none (no HAKMEM_MEMORY_LIMIT, no cgroup limit)\n");
    return;
  }
  out(k, "  memory limit: %zu bytes (soft %zu) from %s, action %s; resident %zu, headroom %zu, "
         "pressure %s; %lu forced purges, %lu over, %lu refused\n",
      s->mem_limit, s->mem_limit_soft, hk_mem_source_name((unsigned)s->mem_limit_source),
      hk_knobs.memory_limit_action == HK_MEM_ACTION_FAIL ? "fail" : "keep", s->mem_resident,
      s->mem_headroom, pressure_names[s->mem_pressure >= 0 && s->mem_pressure <= 2 ? s->mem_pressure : 0], s->mem_reliefs,
      s->mem_over, s->mem_refused);
}

static void print_text(sink_t *k, const struct hak_stats *s) {
  out(k, "hakmem %s statistics (pid %d)\n", HK_VERSION_STRING, (int)getpid());
  print_config_text(k);
  size_t committed = committed_of(s);
  out(k, "  live: %zu bytes (peak %zu)   committed: %zu bytes (peak %zu)   RSS: %zu (peak %zu)\n",
      s->live_bytes, s->peak_live_bytes, committed, HK_LOAD_RELAXED(peak_committed), s->rss_bytes,
      s->peak_rss_bytes);
  out(k, "  address space: %zu bytes mapped (peak %zu), %zu of them reserved, not memory\n",
      s->mapped_bytes, s->peak_mapped_bytes, s->mapped_bytes - committed);
  out(k, "  superslabs: %zu mapped (%zu lent by span arenas), %zu cached, %zu abandoned   thread heaps: %zu\n",
      s->superslabs, s->superslabs_lent, s->superslabs_cached, s->superslabs_abandoned, s->heaps);
  out(k, "  large/huge: %zu live (%zu bytes), %zu allocs, %zu frees, %zu bytes cached\n",
      s->large_live, s->large_live_bytes, s->large_allocs, s->large_frees, s->large_cached_bytes);
  out(k, "  OS calls: mmap %lu (%zu bytes), munmap %lu (%zu bytes), madvise %lu (%zu bytes), mremap %lu, "
         "mprotect %lu, guard markers %lu\n",
      s->mmap_calls, s->mmap_bytes, s->munmap_calls, s->munmap_bytes, s->madvise_calls,
      s->madvise_bytes, s->mremap_calls, s->mprotect_calls, s->guard_calls);
  out(k, "  pages: huge pages for %s (HAKMEM_THP %s, system %s%s), %zu bytes huge-page backed; "
         "populate %lu (%zu bytes); lock waits %lu (%lu yields); span shards %d\n",
      thp_regions(s->thp), thp_knob(), hk_os_thp_system()[0] ? hk_os_thp_system() : "unknown",
      hk_os_page_reporting() >= 0 ? ", free pages reported to the hypervisor" : "", s->huge_bytes, s->populate_calls, s->populate_bytes, s->lock_waits, s->lock_yields,
      s->span_shards);
  out(k, "  big blocks: %zu placed without huge pages; %zu freed sampled, %d per mille of their 2 MiB chunks touched\n",
      s->thp_plain_blocks, s->thp_samples, s->thp_density);
  print_budget_text(k, s);
  if (!s->counting) {
    out(k, "  (allocation counts need HAKMEM_STATS=1)\n");
  } else {
    out(k, "  allocs %zu, frees %zu, fast-path hit rate %.4f\n", s->allocs, s->frees,
        s->fast_path_hit_rate);
  }
  out(k, "  %6s %12s %12s %10s %12s %10s %6s %10s %10s\n", "size", "allocs", "frees", "live",
      "live bytes", "peak", "slabs", "refills", "remote");
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &s->classes[c];
    if (!x->allocs && !x->live_blocks && !x->slabs) continue;
    out(k, "  %6zu %12zu %12zu %10zu %12zu %10zu %6zu %10zu %10zu\n", x->block_size, x->allocs,
        x->frees, x->live_blocks, x->live_bytes, x->peak_blocks, x->slabs, x->refills,
        x->remote_frees);
  }
}

/* The JSON record's layout: a reader checks "schema" before it trusts a key.
 * 1: the first numbered one (adds schema, hakmem, profile, knobs); later
 * added, in 1: committed, peak_committed, reserved. Bump it when a key
 * changes meaning or goes; new keys alone do not need it. */
#define HK_STATS_JSON_SCHEMA 1

static void print_json(sink_t *k, const struct hak_stats *s, uint64_t t_ms) {
  out(k, "{\"schema\": %d, \"hakmem\": \"%s\", ", HK_STATS_JSON_SCHEMA, HK_VERSION_STRING);
  out(k, "\"t_ms\": %llu, \"pid\": %d, ", (unsigned long long)t_ms, (int)getpid());
  print_config_json(k);
  out(k, "\"counting\": %d, \"rss\": %zu, \"peak_rss\": %zu, "
         "\"live_bytes\": %zu, \"peak_live_bytes\": %zu, \"mapped\": %zu, \"peak_mapped\": %zu, "
         "\"committed\": %zu, \"peak_committed\": %zu, \"reserved\": %zu, "
         "\"superslabs\": %zu, \"superslabs_lent\": %zu, \"heaps\": %zu, \"allocs\": %zu, \"frees\": %zu, "
         "\"fast_path_hit_rate\": %.6f, ",
      s->counting, s->rss_bytes, s->peak_rss_bytes,
      s->live_bytes, s->peak_live_bytes, s->mapped_bytes, s->peak_mapped_bytes,
      committed_of(s), HK_LOAD_RELAXED(peak_committed), s->mapped_bytes - committed_of(s), s->superslabs,
      s->superslabs_lent, s->heaps, s->allocs, s->frees, s->fast_path_hit_rate);
  out(k, "\"os\": {\"mmap\": %lu, \"munmap\": %lu, \"madvise\": %lu, \"mremap\": %lu, "
         "\"mmap_bytes\": %zu, \"munmap_bytes\": %zu, \"madvise_bytes\": %zu, \"mprotect\": %lu, \"guard\": %lu}, ",
      s->mmap_calls, s->munmap_calls, s->madvise_calls, s->mremap_calls, s->mmap_bytes,
      s->munmap_bytes, s->madvise_bytes, s->mprotect_calls, s->guard_calls);
  out(k, "\"pages\": {\"thp\": \"%s\", \"thp_system\": \"%s\", \"page_reporting\": %d, \"huge_regions\": %d, "
         "\"huge_bytes\": %zu, \"populate\": %lu, \"populate_bytes\": %zu, \"lock_waits\": %lu, \"lock_yields\": %lu, "
         "\"span_shards\": %d, \"plain_blocks\": %zu, \"samples\": %zu, \"density\": %d}, ",
      thp_knob(), hk_os_thp_system(), hk_os_page_reporting(), s->thp, s->huge_bytes, s->populate_calls, s->populate_bytes,
      s->lock_waits, s->lock_yields, s->span_shards, s->thp_plain_blocks, s->thp_samples, s->thp_density);
  out(k, "\"budget\": {\"limit\": %zu, \"soft\": %zu, \"source\": \"%s\", \"action\": \"%s\", "
         "\"resident\": %zu, \"headroom\": %zu, \"pressure\": %d, \"reliefs\": %lu, \"over\": %lu, "
         "\"refused\": %lu}, ",
      s->mem_limit, s->mem_limit_soft, hk_mem_source_name((unsigned)s->mem_limit_source),
      hk_knobs.memory_limit_action == HK_MEM_ACTION_FAIL ? "fail" : "keep", s->mem_resident,
      s->mem_headroom, s->mem_pressure, s->mem_reliefs, s->mem_over, s->mem_refused);
  out(k, "\"large\": {\"live\": %zu, \"live_bytes\": %zu, \"cached_bytes\": %zu, \"allocs\": %zu, "
         "\"frees\": %zu}, \"classes\": [",
      s->large_live, s->large_live_bytes, s->large_cached_bytes, s->large_allocs, s->large_frees);
  bool first = true;
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &s->classes[c];
    if (!x->allocs && !x->live_blocks && !x->slabs) continue;
    out(k, "%s{\"cls\": %u, \"size\": %zu, \"live_blocks\": %zu, \"live_bytes\": %zu, "
           "\"peak_blocks\": %zu, \"slabs\": %zu, \"allocs\": %zu, \"frees\": %zu, "
           "\"refills\": %zu, \"remote_frees\": %zu}",
        first ? "" : ", ", c, x->block_size, x->live_blocks, x->live_bytes, x->peak_blocks,
        x->slabs, x->allocs, x->frees, x->refills, x->remote_frees);
    first = false;
  }
  out(k, "]}\n");
}

/* Snapshots are big (72 classes): built in static storage under tick_lock. */
static struct hak_stats tick_snap;
static sink_t tick_sink;

void hk_stats_tick(void) {
  uint64_t now = hk_os_now_ms();
  if (now < atomic_load_explicit(&next_tick_ms, memory_order_relaxed)) return;
  if (!hk_trylock(&tick_lock)) return;  /* someone else is on it: never wait */
  uint64_t iv = hk_knobs.stats_interval_ms ? (uint64_t)hk_knobs.stats_interval_ms : 50;
  atomic_store_explicit(&next_tick_ms, now + iv, memory_order_relaxed);
  hk_stats_collect(&tick_snap);  /* also samples the peaks */
  timeline_check_pid();
  if (timeline_fd >= 0) {
    tick_sink.fd = timeline_fd;
    tick_sink.fp = NULL;
    tick_sink.n = 0;
    print_json(&tick_sink, &tick_snap, now - start_ms);
    sink_flush(&tick_sink);
  }
  hk_unlock(&tick_lock);
}

void hk_stats_at_exit(int report_fd) {
  if (!HK_LOAD_RELAXED(hk_heap_counting)) return;
  hk_lock(&tick_lock);
  hk_stats_collect(&tick_snap);
  uint64_t now = hk_os_now_ms();
  timeline_check_pid();
  if (timeline_fd >= 0) {
    tick_sink.fd = timeline_fd;
    tick_sink.fp = NULL;
    tick_sink.n = 0;
    print_json(&tick_sink, &tick_snap, now - start_ms);
    sink_flush(&tick_sink);
  }
  /* json with a timeline: its last line, just written, is the report; the
   * text report follows the timeline into its file */
  if (hk_knobs.stats && !(hk_knobs.stats == 2 && timeline_fd >= 0)) {
    int fd = timeline_fd >= 0 ? timeline_fd : report_fd, own = -1;
    if (hk_knobs.stats_file[0] && timeline_fd < 0) {
      own = open_stats_file("the report on stderr");
      if (own >= 0) fd = own;
    }
    tick_sink.fd = fd;
    tick_sink.fp = NULL;
    tick_sink.n = 0;
    if (hk_knobs.stats == 2) print_json(&tick_sink, &tick_snap, now - start_ms);
    else print_text(&tick_sink, &tick_snap);
    sink_flush(&tick_sink);
    if (own >= 0) close(own);
  }
  hk_unlock(&tick_lock);
}

/* ---- public API and glibc-format answers ---------------------------------------- */

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

HK_EXPORT void hak_stats_print(FILE *fp) {
  static struct hak_stats snap;
  static sink_t sink;
  hk_lock(&tick_lock);
  hk_stats_collect(&snap);
  sink.fp = fp ? fp : stderr;
  sink.n = 0;
  print_text(&sink, &snap);
  sink_flush(&sink);
  hk_unlock(&tick_lock);
}

void hk_stats_print_glibc_style(FILE *fp) {
  /* glibc's malloc_stats layout: per arena, then totals */
  static struct hak_stats snap;
  hk_lock(&tick_lock);
  hk_stats_collect(&snap);
  hk_unlock(&tick_lock);
  size_t committed = committed_of(&snap);  /* glibc's "system": memory, not address space */
  fprintf(fp, "Arena 0:\n");
  fprintf(fp, "system bytes     = %10zu\n", committed);
  fprintf(fp, "in use bytes     = %10zu\n", snap.live_bytes);
  fprintf(fp, "Total (incl. mmap):\n");
  fprintf(fp, "system bytes     = %10zu\n", committed);
  fprintf(fp, "in use bytes     = %10zu\n", snap.live_bytes);
  fprintf(fp, "max mmap regions = %10zu\n", snap.large_live);
  fprintf(fp, "max mmap bytes   = %10zu\n", snap.large_live_bytes);
}

int hk_stats_print_xml(FILE *fp) {
  static struct hak_stats snap;
  hk_lock(&tick_lock);
  hk_stats_collect(&snap);
  hk_unlock(&tick_lock);
  /* glibc's "system" is memory taken from the OS (committed), its
   * "aspace" the address space (mapped) */
  size_t committed = committed_of(&snap), peak = HK_LOAD_RELAXED(peak_committed);
  size_t rest = committed > snap.live_bytes ? committed - snap.live_bytes : 0;
  /* glibc's malloc_info layout, one "heap" for all of hakmem */
  fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &snap.classes[c];
    if (!x->live_blocks && !x->slabs) continue;
    fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
            c ? snap.classes[c - 1].block_size + 1 : 1, x->block_size, x->live_bytes,
            x->live_blocks);
  }
  fprintf(fp, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", snap.superslabs, rest);
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
          committed, peak > committed ? peak : committed);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
          snap.mapped_bytes, snap.mapped_bytes);
  fprintf(fp, "</heap>\n");
  fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", snap.superslabs, rest);
  fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", snap.large_live,
          snap.large_live_bytes);
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
          committed, peak > committed ? peak : committed);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
          snap.mapped_bytes, snap.mapped_bytes);
  fprintf(fp, "<hakmem live=\"%zu\" superslabs=\"%zu\" mmap=\"%lu\" munmap=\"%lu\" madvise=\"%lu\"/>\n",
          snap.live_bytes, snap.superslabs, snap.mmap_calls, snap.munmap_calls, snap.madvise_calls);
  fprintf(fp, "</malloc>\n");
  return 0;
}
