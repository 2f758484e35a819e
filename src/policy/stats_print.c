/* Statistics' outputs (stats_print.h): a snapshot printed as the text
 * report, the JSON record of the report and the timeline, and glibc's
 * malloc_stats and malloc_info layouts; HAKMEM_STATS_FILE's name expanded
 * and opened, the timeline's file kept (and reopened by a fork child). */
#define _GNU_SOURCE
#include "policy/stats_print.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "backend/mem_limit.h"
#include "base/knobs.h"
#include "base/path.h"
#include "base/report.h"
#include "base/writer.h"
#include "pal/os.h"

/* The one output buffer (stats_print.h: callers hold stats.c's lock); a
 * report of every class is a few KiB, too much for a slow path's stack. */
HK_BSS_ARRAY static char out_buf[8192];

/* ---- where the outputs go: HAKMEM_STATS_FILE ------------------------------------ */

static int timeline_fd = -1;
static pid_t timeline_pid;     /* the process that opened it (a fork child reopens) */
static bool stats_file_failed; /* said once: the reports go to stderr */

/* HAKMEM_STATS_FILE expanded (base/path.h: %p the pid, %% a %), so that
 * every process of a launcher script gets a file of its own. false (and a
 * message) when the result does not fit. */
static bool stats_path(char *dst, size_t size) {
  if (hk_path_expand(hk_knobs.stats_file, dst, size)) return true;
  hk_message("hakmem: HAKMEM_STATS_FILE=%s is too long once expanded; statistics on stderr\n",
             hk_knobs.stats_file);
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

void hk_stats_timeline_open(void) {
  if (hk_knobs.stats_interval_ms && hk_knobs.stats_file[0]) {
    timeline_fd = open_stats_file("no timeline");
    timeline_pid = getpid();
  }
}

/* A child of fork() writes to a file of its own when the name has %p. */
static void timeline_check_pid(void) {
  if (timeline_fd < 0 || !hk_path_has_pid(hk_knobs.stats_file)) return;
  pid_t me = getpid();
  if (me == timeline_pid) return;
  close(timeline_fd);
  timeline_pid = me;
  timeline_fd = open_stats_file("no timeline");
}

/* ---- the text report ------------------------------------------------------------- */

/* The configuration in the reports: the profile and each knob that differs
 * from its default (`hakmem config` shows them all). */
static void print_config_text(hk_writer_t *w) {
  hk_knob_info_t x;
  hk_write_fmt(w, "  config: profile %s", hk_profile_name());
  bool any = false;
  for (size_t i = 1; hk_knob_get(i, &x); i++) {
    if (hk_knob_is_default(&x)) continue;
    hk_write_fmt(w, "%s%s=", any ? ", " : "; ", x.name);
    if (x.text) hk_write_str(w, x.text);  /* alone: a path may be long */
    else hk_write_fmt(w, "%ld", x.value);
    any = true;
  }
  hk_write_fmt(w, "%s\n", any ? "" : "; every knob at its default");
}

static const char *thp_regions(int thp) {
  return thp == HK_THP_ALL ? "span arenas and superslabs" : thp == HK_THP_SPANS ? "span arenas" : "no region";
}
static const char *thp_knob(void) {
  long v = hk_knobs.thp;
  return v == HK_THP_KNOB_NEVER ? "never" : v == HK_THP_KNOB_ALWAYS ? "always" : v == HK_THP_KNOB_SPANS ? "spans" : "auto";
}

static const char *const pressure_names[] = { "none", "soft", "hard" };

static void print_budget_text(hk_writer_t *w, const struct hak_stats *s) {
  if (!s->mem_limit && !s->mem_limit_soft) {
    hk_write_str(w, "  memory limit: none (no HAKMEM_MEMORY_LIMIT, no cgroup limit)\n");
    return;
  }
  hk_write_fmt(w, "  memory limit: %zu bytes (soft %zu) from %s, action %s; resident %zu, headroom %zu, "
                  "pressure %s; %lu forced purges, %lu over, %lu refused\n",
               s->mem_limit, s->mem_limit_soft, hk_mem_source_name((unsigned)s->mem_limit_source),
               hk_knobs.memory_limit_action == HK_MEM_ACTION_FAIL ? "fail" : "keep", s->mem_resident,
               s->mem_headroom, pressure_names[s->mem_pressure >= 0 && s->mem_pressure <= 2 ? s->mem_pressure : 0],
               s->mem_reliefs, s->mem_over, s->mem_refused);
}

/* 1 - allocated / active: the share of the active pages no live block
 * holds (0 with nothing active). */
static double fragmentation(const struct hak_stats *s) {
  return s->active && s->allocated < s->active ? 1.0 - (double)s->allocated / (double)s->active : 0.0;
}

/* hakmem.h's HAK_LOCK_* in order: the names the report and JSON print */
static const char *const lock_names[HAK_STATS_LOCKS] = {
  "other", "ss_cache", "ss_abandoned", "ss_all", "span", "large_cache", "heaps", "mid_pool", "learner", "stats",
};

/* the purge windows, and the waits of each lock that waited */
static void print_windows_text(hk_writer_t *w, const struct hak_stats *s) {
  hk_write_fmt(w, "  purge windows: slabs %ld ms, span pages %ld ms, cached mappings %ld ms (%s)\n",
               s->purge_window_ms[HAK_TIER_SLABS], s->purge_window_ms[HAK_TIER_SPAN],
               s->purge_window_ms[HAK_TIER_CACHE], hk_knobs.learn_purge ? "learned from reuse" : "fixed");
  hk_write_str(w, "  lock waits by lock:");
  bool any = false;
  for (unsigned i = 0; i < HAK_STATS_LOCKS; i++) {
    if (!s->lock_wait_count[i]) continue;
    hk_write_fmt(w, " %s %lu (%lu us)", lock_names[i], s->lock_wait_count[i], s->lock_wait_ns[i] / 1000);
    any = true;
  }
  hk_write_str(w, any ? "\n" : " none\n");
}

static void print_windows_json(hk_writer_t *w, const struct hak_stats *s) {
  hk_write_fmt(w, "\"purge_windows\": {\"slabs\": %ld, \"span\": %ld, \"cache\": %ld, \"learned\": %d}, \"locks\": {",
               s->purge_window_ms[HAK_TIER_SLABS], s->purge_window_ms[HAK_TIER_SPAN],
               s->purge_window_ms[HAK_TIER_CACHE], hk_knobs.learn_purge ? 1 : 0);
  for (unsigned i = 0; i < HAK_STATS_LOCKS; i++)
    hk_write_fmt(w, "%s\"%s\": {\"waits\": %lu, \"ns\": %lu}", i ? ", " : "", lock_names[i],
                 s->lock_wait_count[i], s->lock_wait_ns[i]);
  hk_write_str(w, "}, ");
}

static void print_text(hk_writer_t *w, const hk_stats_snap_t *snap) {
  const struct hak_stats *s = &snap->s;
  hk_write_fmt(w, "hakmem %s statistics (pid %d)\n", HK_VERSION_STRING, (int)getpid());
  print_config_text(w);
  hk_write_fmt(w, "  live: %zu bytes (peak %zu)   committed: %zu bytes (peak %zu)   RSS: %zu (peak %zu)\n",
               s->live_bytes, s->peak_live_bytes, snap->committed, snap->peak_committed, s->rss_bytes,
               s->peak_rss_bytes);
  hk_write_fmt(w, "  address space: %zu bytes mapped (peak %zu), %zu of them reserved, not memory\n",
               s->mapped_bytes, s->peak_mapped_bytes, s->mapped_bytes - snap->committed);
  hk_write_fmt(w, "  memory: allocated %zu, active %zu, metadata %zu, resident %zu, retained %zu bytes; "
                  "fragmentation %.4f (1 - allocated/active)\n",
               s->allocated, s->active, s->metadata, s->resident, s->retained, fragmentation(s));
  hk_write_fmt(w, "  superslabs: %zu mapped (%zu lent by span arenas), %zu cached, %zu abandoned   thread heaps: %zu\n",
               s->superslabs, s->superslabs_lent, s->superslabs_cached, s->superslabs_abandoned, s->heaps);
  hk_write_fmt(w, "  large/huge: %zu live (%zu bytes), %zu allocs, %zu frees, %zu bytes cached\n",
               s->large_live, s->large_live_bytes, s->large_allocs, s->large_frees, s->large_cached_bytes);
  hk_write_fmt(w, "  OS calls: mmap %lu (%zu bytes), munmap %lu (%zu bytes), madvise %lu (%zu bytes), mremap %lu, "
                  "mprotect %lu, guard markers %lu\n",
               s->mmap_calls, s->mmap_bytes, s->munmap_calls, s->munmap_bytes, s->madvise_calls,
               s->madvise_bytes, s->mremap_calls, s->mprotect_calls, s->guard_calls);
  hk_write_fmt(w, "  pages: huge pages for %s (HAKMEM_THP %s, system %s%s), %zu bytes huge-page backed; "
                  "populate %lu (%zu bytes); lock waits %lu (%lu yields); span shards %d\n",
               thp_regions(s->thp), thp_knob(), hk_os_thp_system()[0] ? hk_os_thp_system() : "unknown",
               hk_os_page_reporting() >= 0 ? ", free pages reported to the hypervisor" : "", s->huge_bytes,
               s->populate_calls, s->populate_bytes, s->lock_waits, s->lock_yields, s->span_shards);
  hk_write_fmt(w, "  big blocks: %zu placed without huge pages; %zu freed sampled, %d per mille of their 2 MiB chunks touched\n",
               s->thp_plain_blocks, s->thp_samples, s->thp_density);
  print_windows_text(w, s);
  print_budget_text(w, s);
  if (!s->counting) {
    hk_write_str(w, "  (allocation counts need HAKMEM_STATS=1)\n");
  } else {
    hk_write_fmt(w, "  allocs %zu, frees %zu, fast-path hit rate %.4f\n", s->allocs, s->frees,
                 s->fast_path_hit_rate);
  }
  hk_write_fmt(w, "  %6s %12s %12s %10s %12s %10s %6s %10s %10s\n", "size", "allocs", "frees", "live",
               "live bytes", "peak", "slabs", "refills", "remote");
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &s->classes[c];
    if (!x->allocs && !x->live_blocks && !x->slabs) continue;
    hk_write_fmt(w, "  %6zu %12zu %12zu %10zu %12zu %10zu %6zu %10zu %10zu\n", x->block_size, x->allocs,
                 x->frees, x->live_blocks, x->live_bytes, x->peak_blocks, x->slabs, x->refills,
                 x->remote_frees);
  }
}

/* ---- the JSON record --------------------------------------------------------------- */

/* JSON string body: quotes, backslashes and control bytes escaped */
static void write_json_str(hk_writer_t *w, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') hk_write_fmt(w, "\\%c", c);
    else if (c < 0x20) hk_write_fmt(w, "\\u%04x", c);
    else hk_write_bytes(w, s, 1);
  }
}

static void print_config_json(hk_writer_t *w) {
  hk_knob_info_t x;
  hk_write_fmt(w, "\"profile\": \"%s\", \"knobs\": {", hk_profile_name());
  bool any = false;
  for (size_t i = 1; hk_knob_get(i, &x); i++) {
    if (hk_knob_is_default(&x)) continue;
    hk_write_fmt(w, "%s\"%s\": ", any ? ", " : "", x.name);
    if (x.text) {
      hk_write_str(w, "\"");
      write_json_str(w, x.text);
      hk_write_str(w, "\"");
    } else {
      hk_write_fmt(w, "%ld", x.value);
    }
    any = true;
  }
  hk_write_str(w, "}, ");
}

/* The JSON record's layout: a reader checks "schema" before it trusts a key.
 * 1: the first numbered one (adds schema, hakmem, profile, knobs); later
 * added, in 1: committed, peak_committed, reserved; allocated, active,
 * metadata, resident, retained, fragmentation. Bump it when a key
 * changes meaning or goes; new keys alone do not need it. */
#define HK_STATS_JSON_SCHEMA 1

static void print_json(hk_writer_t *w, const hk_stats_snap_t *snap, uint64_t t_ms) {
  const struct hak_stats *s = &snap->s;
  hk_write_fmt(w, "{\"schema\": %d, \"hakmem\": \"%s\", ", HK_STATS_JSON_SCHEMA, HK_VERSION_STRING);
  hk_write_fmt(w, "\"t_ms\": %llu, \"pid\": %d, ", (unsigned long long)t_ms, (int)getpid());
  print_config_json(w);
  hk_write_fmt(w, "\"counting\": %d, \"rss\": %zu, \"peak_rss\": %zu, "
                  "\"live_bytes\": %zu, \"peak_live_bytes\": %zu, \"mapped\": %zu, \"peak_mapped\": %zu, "
                  "\"committed\": %zu, \"peak_committed\": %zu, \"reserved\": %zu, "
                  "\"superslabs\": %zu, \"superslabs_lent\": %zu, \"heaps\": %zu, \"allocs\": %zu, \"frees\": %zu, "
                  "\"fast_path_hit_rate\": %.6f, ",
               s->counting, s->rss_bytes, s->peak_rss_bytes,
               s->live_bytes, s->peak_live_bytes, s->mapped_bytes, s->peak_mapped_bytes,
               snap->committed, snap->peak_committed, s->mapped_bytes - snap->committed, s->superslabs,
               s->superslabs_lent, s->heaps, s->allocs, s->frees, s->fast_path_hit_rate);
  hk_write_fmt(w, "\"allocated\": %zu, \"active\": %zu, \"metadata\": %zu, \"resident\": %zu, "
                  "\"retained\": %zu, \"fragmentation\": %.6f, ",
               s->allocated, s->active, s->metadata, s->resident, s->retained, fragmentation(s));
  hk_write_fmt(w, "\"os\": {\"mmap\": %lu, \"munmap\": %lu, \"madvise\": %lu, \"mremap\": %lu, "
                  "\"mmap_bytes\": %zu, \"munmap_bytes\": %zu, \"madvise_bytes\": %zu, \"mprotect\": %lu, \"guard\": %lu}, ",
               s->mmap_calls, s->munmap_calls, s->madvise_calls, s->mremap_calls, s->mmap_bytes,
               s->munmap_bytes, s->madvise_bytes, s->mprotect_calls, s->guard_calls);
  hk_write_fmt(w, "\"pages\": {\"thp\": \"%s\", \"thp_system\": \"%s\", \"page_reporting\": %d, \"huge_regions\": %d, "
                  "\"huge_bytes\": %zu, \"populate\": %lu, \"populate_bytes\": %zu, \"lock_waits\": %lu, \"lock_yields\": %lu, "
                  "\"span_shards\": %d, \"plain_blocks\": %zu, \"samples\": %zu, \"density\": %d}, ",
               thp_knob(), hk_os_thp_system(), hk_os_page_reporting(), s->thp, s->huge_bytes, s->populate_calls,
               s->populate_bytes, s->lock_waits, s->lock_yields, s->span_shards, s->thp_plain_blocks,
               s->thp_samples, s->thp_density);
  print_windows_json(w, s);
  hk_write_fmt(w, "\"budget\": {\"limit\": %zu, \"soft\": %zu, \"source\": \"%s\", \"action\": \"%s\", "
                  "\"resident\": %zu, \"headroom\": %zu, \"pressure\": %d, \"reliefs\": %lu, \"over\": %lu, "
                  "\"refused\": %lu}, ",
               s->mem_limit, s->mem_limit_soft, hk_mem_source_name((unsigned)s->mem_limit_source),
               hk_knobs.memory_limit_action == HK_MEM_ACTION_FAIL ? "fail" : "keep", s->mem_resident,
               s->mem_headroom, s->mem_pressure, s->mem_reliefs, s->mem_over, s->mem_refused);
  hk_write_fmt(w, "\"large\": {\"live\": %zu, \"live_bytes\": %zu, \"cached_bytes\": %zu, \"allocs\": %zu, "
                  "\"frees\": %zu}, \"classes\": [",
               s->large_live, s->large_live_bytes, s->large_cached_bytes, s->large_allocs, s->large_frees);
  bool first = true;
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &s->classes[c];
    if (!x->allocs && !x->live_blocks && !x->slabs) continue;
    hk_write_fmt(w, "%s{\"cls\": %u, \"size\": %zu, \"live_blocks\": %zu, \"live_bytes\": %zu, "
                    "\"peak_blocks\": %zu, \"slabs\": %zu, \"allocs\": %zu, \"frees\": %zu, "
                    "\"refills\": %zu, \"remote_frees\": %zu}",
                 first ? "" : ", ", c, x->block_size, x->live_blocks, x->live_bytes, x->peak_blocks,
                 x->slabs, x->allocs, x->frees, x->refills, x->remote_frees);
    first = false;
  }
  hk_write_str(w, "]}\n");
}

/* ---- glibc's layouts ---------------------------------------------------------------- */

/* malloc_stats: per arena, then totals; one arena for all of hakmem.
 * glibc's "system" is memory, not address space: the committed bytes. */
static void print_glibc(hk_writer_t *w, const hk_stats_snap_t *snap) {
  const struct hak_stats *s = &snap->s;
  hk_write_str(w, "Arena 0:\n");
  hk_write_fmt(w, "system bytes     = %10zu\n", snap->committed);
  hk_write_fmt(w, "in use bytes     = %10zu\n", s->live_bytes);
  hk_write_str(w, "Total (incl. mmap):\n");
  hk_write_fmt(w, "system bytes     = %10zu\n", snap->committed);
  hk_write_fmt(w, "in use bytes     = %10zu\n", s->live_bytes);
  hk_write_fmt(w, "max mmap regions = %10zu\n", s->large_live);
  hk_write_fmt(w, "max mmap bytes   = %10zu\n", s->large_live_bytes);
}

/* malloc_info: one "heap" for all of hakmem. glibc's "system" is memory
 * taken from the OS (committed), its "aspace" the address space (mapped). */
static void print_xml(hk_writer_t *w, const hk_stats_snap_t *snap) {
  const struct hak_stats *s = &snap->s;
  size_t committed = snap->committed;
  size_t peak = snap->peak_committed > committed ? snap->peak_committed : committed;
  size_t rest = committed > s->live_bytes ? committed - s->live_bytes : 0;
  hk_write_str(w, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
  for (unsigned c = 0; c < HAK_STATS_CLASSES; c++) {
    const struct hak_class_stats *x = &s->classes[c];
    if (!x->live_blocks && !x->slabs) continue;
    hk_write_fmt(w, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
                 c ? s->classes[c - 1].block_size + 1 : 1, x->block_size, x->live_bytes, x->live_blocks);
  }
  hk_write_str(w, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  hk_write_fmt(w, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", s->superslabs, rest);
  hk_write_fmt(w, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
               committed, peak);
  hk_write_fmt(w, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
               s->mapped_bytes, s->mapped_bytes);
  hk_write_str(w, "</heap>\n");
  hk_write_str(w, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  hk_write_fmt(w, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", s->superslabs, rest);
  hk_write_fmt(w, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", s->large_live, s->large_live_bytes);
  hk_write_fmt(w, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
               committed, peak);
  hk_write_fmt(w, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
               s->mapped_bytes, s->mapped_bytes);
  hk_write_fmt(w, "<hakmem live=\"%zu\" superslabs=\"%zu\" mmap=\"%lu\" munmap=\"%lu\" madvise=\"%lu\"/>\n",
               s->live_bytes, s->superslabs, s->mmap_calls, s->munmap_calls, s->madvise_calls);
  hk_write_str(w, "</malloc>\n");
}

/* ---- each output onto its destination ------------------------------------------------ */

void hk_stats_write_timeline(const hk_stats_snap_t *snap, uint64_t t_ms) {
  timeline_check_pid();
  if (timeline_fd < 0) return;
  hk_writer_t w;
  hk_writer_to_fd(&w, timeline_fd, out_buf, sizeof out_buf);
  print_json(&w, snap, t_ms);
  hk_write_flush(&w);
}

/* One report of snap: after the timeline in its file, else into
 * HAKMEM_STATS_FILE, else on fd; fallback names fd in the line that says
 * the file could not be opened. */
static void write_one(const hk_stats_snap_t *snap, uint64_t t_ms, int fd, const char *fallback) {
  int own = -1;
  if (timeline_fd >= 0) {
    fd = timeline_fd;
  } else if (hk_knobs.stats_file[0]) {
    own = open_stats_file(fallback);
    if (own >= 0) fd = own;
  }
  hk_writer_t w;
  hk_writer_to_fd(&w, fd, out_buf, sizeof out_buf);
  if (hk_knobs.stats == 2) print_json(&w, snap, t_ms);
  else print_text(&w, snap);
  hk_write_flush(&w);
  if (own >= 0) close(own);
}

void hk_stats_write_report(const hk_stats_snap_t *snap, uint64_t t_ms, int report_fd) {
  hk_stats_write_timeline(snap, t_ms);
  /* json with a timeline: its last line, just written, is the report; the
   * text report follows the timeline into its file */
  if (!hk_knobs.stats || (hk_knobs.stats == 2 && timeline_fd >= 0)) return;
  write_one(snap, t_ms, report_fd, "the report on stderr");
}

void hk_stats_write_dump(const hk_stats_snap_t *snap, uint64_t t_ms) {
  write_one(snap, t_ms, STDERR_FILENO, "the dump on stderr");
}

void hk_stats_write_text(FILE *fp, const hk_stats_snap_t *snap) {
  hk_writer_t w;
  hk_writer_to_file(&w, fp, out_buf, sizeof out_buf);
  print_text(&w, snap);
  hk_write_flush(&w);
}

void hk_stats_write_glibc(FILE *fp, const hk_stats_snap_t *snap) {
  hk_writer_t w;
  hk_writer_to_file(&w, fp, out_buf, sizeof out_buf);
  print_glibc(&w, snap);
  hk_write_flush(&w);
}

void hk_stats_write_xml(FILE *fp, const hk_stats_snap_t *snap) {
  hk_writer_t w;
  hk_writer_to_file(&w, fp, out_buf, sizeof out_buf);
  print_xml(&w, snap);
  hk_write_flush(&w);
}
