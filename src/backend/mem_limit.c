/* The memory budget (mem_limit.h): the limit from the knob or the cgroup,
 * the resident estimate, the pressure signal and the hard limit's gate. */
#include "backend/mem_limit.h"

#include <errno.h>
#include <string.h>

#include "base/gate.h"
#include "base/knobs.h"
#include "base/libc.h"  /* memcpy: glibc's, not the copy measure's */
#include "pal/os.h"

unsigned char hk_mem_on, hk_mem_ready;

static size_t limit_hard, limit_soft;   /* bytes, 0: none (relaxed atomics) */
static unsigned limit_source;
static size_t rss_read;                 /* the last reading of the resident set */
static size_t charged;                  /* admitted since that reading */
static uint64_t rss_gate, cgroup_gate, last_read_ms;  /* gates: base/gate.h */
static unsigned long n_over, n_refused, n_reliefs;
static void (*purge_hook)(void);
/* The folder of the cgroup whose limit binds (set with the limits, read by
 * the one reading the resident set: both under the budget's readings,
 * which may race harmlessly: a torn path reads no file) */
static char group_dir[768];
static uint64_t relief_fruitless_ms;    /* when a relief last left it over */

void hk_mem_set_purge_hook(void (*fn)(void)) { HK_STORE_RELAXED(purge_hook, fn); }

#define CGROUP_ROOT "/sys/fs/cgroup"
#define RSS_EVERY_MS 100
#define RSS_EVERY_PRESSED_MS 10
#define CGROUP_EVERY_MS 1000
/* v1 writes "no limit" as the largest page multiple below 2^63 */
#define V1_UNLIMITED ((size_t)1 << 62)

/* ---- the cgroup ---------------------------------------------------------- */

/* The path of the line "<id>:<controllers>:<path>" whose controllers are
 * want (v2: "" with id 0; v1: a comma list holding "memory"), copied to out;
 * false if none. */
static bool cgroup_path(const char *text, bool v2, char *out, size_t size) {
  for (const char *line = text; *line; ) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    const char *c1 = memchr(line, ':', (size_t)(end - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if (c2) {
      bool match;
      if (v2) {
        match = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
      } else {
        match = false;
        for (const char *w = c1 + 1; w < c2; ) {
          const char *comma = memchr(w, ',', (size_t)(c2 - w));
          const char *we = comma ? comma : c2;
          if (we - w == 6 && memcmp(w, "memory", 6) == 0) match = true;
          w = we + 1;
        }
      }
      size_t n = (size_t)(end - c2 - 1);
      if (match && n + 1 <= size) {
        memcpy(out, c2 + 1, n);
        out[n] = 0;
        return true;
      }
    }
    line = *end ? end + 1 : end;
  }
  return false;
}

/* A limit file's value: bytes, or 0 for none ("max", v1's unlimited,
 * unreadable). *found: the file was there. */
static size_t read_limit(const char *path, bool *found) {
  char buf[64];
  if (!hk_os_read_line(path, buf, sizeof buf)) return 0;
  *found = true;
  size_t v = 0;
  const char *s = buf;
  if (*s < '0' || *s > '9') return 0;  /* "max" */
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (SIZE_MAX - 9) / 10) return 0;
    v = v * 10 + (size_t)(*s - '0');
  }
  return v >= V1_UNLIMITED ? 0 : v;
}

static size_t min_limit(size_t a, size_t b) { return !a ? b : !b ? a : a < b ? a : b; }

/* dir + rel + "/" + file into out; false when it does not fit */
static bool join(char *out, size_t size, const char *dir, const char *rel, const char *file) {
  size_t a = strlen(dir), b = strlen(rel), c = strlen(file);
  if (a + b + c + 2 > size) return false;
  memcpy(out, dir, a);
  memcpy(out + a, rel, b);
  out[a + b] = '/';
  memcpy(out + a + b + 1, file, c + 1);
  return true;
}

/* The smallest hard and soft limits of the cgroup at dir/path and of its
 * ancestors up to dir (a limit of a parent binds its children). A cgroup
 * namespace shows the path from its own root: when dir/path is not there,
 * the limits are looked for at dir itself. False when dir/path/hard_file
 * is nowhere. */
static bool cgroup_limits(const char *dir, const char *path, const char *hard_file, const char *soft_file,
                          size_t *hard, size_t *soft, char *group, size_t group_size) {
  char rel[512], file[1024], at_hard[768] = "", at_soft[768] = "";
  size_t n = strlen(path);
  if (n >= sizeof rel) return false;
  memcpy(rel, path, n + 1);
  while (n > 1 && rel[n - 1] == '/') rel[--n] = 0;
  if (strstr(rel, "/..")) rel[0] = 0;  /* outside the namespace's root: the root's own */
  bool any = false;
  for (;;) {
    bool found = false;
    if (!join(file, sizeof file, dir, strcmp(rel, "/") == 0 ? "" : rel, hard_file)) return false;
    size_t h = read_limit(file, &found);
    if (found) {
      any = true;
      /* where the smallest limit is: that cgroup's usage is the budget's */
      const char *level = strcmp(rel, "/") == 0 ? "" : rel;
      if (h && (!*hard || h < *hard)) join(at_hard, sizeof at_hard, dir, level, "");
      *hard = min_limit(*hard, h);
      bool sf = false;
      if (soft_file && join(file, sizeof file, dir, level, soft_file)) {
        size_t sl = read_limit(file, &sf);
        if (sl && (!*soft || sl < *soft)) join(at_soft, sizeof at_soft, dir, level, "");
        *soft = min_limit(*soft, sl);
      }
    }
    char *slash = strrchr(rel, '/');
    if (!slash || slash == rel) {
      if (rel[0] == 0 || strcmp(rel, "/") == 0) break;
      rel[0] = 0;  /* the root itself, last */
      continue;
    }
    *slash = 0;
  }
  if (group && group_size) {
    const char *at = at_hard[0] ? at_hard : at_soft;
    size_t n = strlen(at);
    if (n < group_size) memcpy(group, at, n + 1);
    else group[0] = 0;
  }
  return any;
}

unsigned hk_mem_read_cgroup(const char *proc_cgroup, const char *root, size_t *hard, size_t *soft) {
  return hk_mem_read_cgroup_group(proc_cgroup, root, hard, soft, NULL, 0);
}

/* One hierarchy's limits (v2: memory.max and memory.high; v1: under root's
 * memory/): its source, or -1 when the process's line or the limit file is
 * not there. */
static int hierarchy_limits(const char *text, const char *root, bool v2, size_t *hard, size_t *soft,
                            char *group, size_t group_size) {
  char path[512], dir[512];
  *hard = *soft = 0;
  size_t r = strlen(root);
  if (r + sizeof "/memory" > sizeof dir) return -1;
  memcpy(dir, root, r + 1);
  if (!v2) memcpy(dir + r, "/memory", sizeof "/memory");
  if (!cgroup_path(text, v2, path, sizeof path) ||
      !cgroup_limits(dir, path, v2 ? "memory.max" : "memory.limit_in_bytes",
                     v2 ? "memory.high" : "memory.soft_limit_in_bytes", hard, soft, group, group_size)) {
    *hard = *soft = 0;
    return -1;
  }
  if (!*hard && !*soft) return HK_MEM_SRC_NONE;
  return v2 ? HK_MEM_SRC_CGROUP2 : HK_MEM_SRC_CGROUP1;
}

unsigned hk_mem_read_cgroup_group(const char *proc_cgroup, const char *root, size_t *hard, size_t *soft,
                                  char *group, size_t group_size) {
  char text[2048], path[512];
  *hard = *soft = 0;
  if (group && group_size) group[0] = 0;
  if (!hk_os_read_file(proc_cgroup, text, sizeof text)) return HK_MEM_SRC_NONE;
  /* A controller is bound to one hierarchy: where a v1 line names memory,
   * v2 has no limit of it, and v1 is read first (on such a system v2's
   * probe was an open that fails, a path walk of sysfs). The other is
   * still tried when the first has no limit file. */
  bool v2_first = !cgroup_path(text, false, path, sizeof path);
  int src = hierarchy_limits(text, root, v2_first, hard, soft, group, group_size);
  if (src < 0) src = hierarchy_limits(text, root, !v2_first, hard, soft, group, group_size);
  return src < 0 ? HK_MEM_SRC_NONE : (unsigned)src;
}

/* A number after "name " at the start of a line of text; 0 if none. */
static size_t stat_field(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *line = text; *line; ) {
    if (strncmp(line, name, n) == 0 && line[n] == ' ') {
      size_t v = 0;
      for (const char *s = line + n + 1; *s >= '0' && *s <= '9'; s++) v = v * 10 + (size_t)(*s - '0');
      return v;
    }
    const char *end = strchr(line, '\n');
    if (!end) break;
    line = end + 1;
  }
  return 0;
}

size_t hk_mem_read_group_usage(const char *group, unsigned source) {
  if (!group || !group[0] || (source != HK_MEM_SRC_CGROUP2 && source != HK_MEM_SRC_CGROUP1)) return 0;
  bool v2 = source == HK_MEM_SRC_CGROUP2;
  char file[1024], text[4096];
  bool found = false;
  if (!join(file, sizeof file, group, "", v2 ? "memory.current" : "memory.usage_in_bytes")) return 0;
  size_t usage = read_limit(file, &found);
  if (!found || !usage) return 0;
  /* the file pages the kernel drops first, without asking anyone: a
   * budget that counted them would purge for page cache */
  size_t inactive = 0;
  if (join(file, sizeof file, group, "", "memory.stat") && hk_os_read_file(file, text, sizeof text))
    inactive = v2 ? stat_field(text, "inactive_file") : stat_field(text, "total_inactive_file");
  return usage > inactive ? usage - inactive : 0;
}

/* ---- the limit in force ------------------------------------------------------ */

static void set_limits(size_t hard, size_t soft, unsigned source) {
  if (hard && soft >= hard) soft = 0;  /* a soft limit at or over the hard one says nothing */
  HK_STORE_RELAXED(limit_hard, hard);
  HK_STORE_RELAXED(limit_soft, soft);
  HK_STORE_RELAXED(limit_source, source);
  HK_STORE_RELAXED(hk_mem_on, (unsigned char)(hard || soft));
}

static void read_cgroup_now(void) {
  size_t hard, soft;
  char group[sizeof group_dir];
  unsigned src = hk_mem_read_cgroup_group("/proc/self/cgroup", CGROUP_ROOT, &hard, &soft, group, sizeof group);
  if (strcmp(group, group_dir) != 0) memcpy(group_dir, group, strlen(group) + 1);
  set_limits(hard, soft, src);
}

/* The resident figure the budget acts on: this process's resident set, or,
 * under a cgroup's limit, the cgroup's usage less its inactive file pages
 * when that is more: every process of the cgroup counts against the limit,
 * and a budget of this process's pages alone let four workers each plan
 * for the whole of it. */
static size_t resident_now(void) {
  size_t rss = hk_os_rss_bytes();
  unsigned src = HK_LOAD_RELAXED(limit_source);
  if (src == HK_MEM_SRC_CGROUP2 || src == HK_MEM_SRC_CGROUP1) {
    size_t group = hk_mem_read_group_usage(group_dir, src);
    if (group > rss) rss = group;
  }
  return rss;
}

static void read_rss(uint64_t now) {
  size_t rss = resident_now();
  HK_STORE_RELAXED(rss_read, rss);
  HK_STORE_RELAXED(charged, 0);
  HK_STORE_RELAXED(last_read_ms, now);
  hk_gate_set(&rss_gate, now + (hk_mem_pressure() ? RSS_EVERY_PRESSED_MS : RSS_EVERY_MS));
}

/* Once, by the first caller (racing first callers each read: the same). */
void hk_mem_init(void) {
  if (HK_LOAD_RELAXED(hk_mem_ready)) return;
  hk_knobs_init();
  long knob = HK_LOAD_RELAXED(hk_knobs.memory_limit);
  if (knob > 0) set_limits((size_t)knob, 0, HK_MEM_SRC_KNOB);
  else read_cgroup_now();
  uint64_t now = hk_os_now_ms();
  hk_gate_set(&cgroup_gate, now + CGROUP_EVERY_MS);
  if (HK_LOAD_RELAXED(hk_mem_on)) read_rss(now);
  HK_STORE_RELEASE(hk_mem_ready, 1);
}

static unsigned slabs_unread;  /* fresh slabs taken before the limits were read */
bool hk_mem_limited_slab(void) {
  if (HK_LIKELY(HK_LOAD_RELAXED(hk_mem_ready))) return HK_LOAD_RELAXED(hk_mem_on) != 0;
  hk_knobs_init();
  if (HK_LOAD_RELAXED(hk_knobs.memory_limit) <= 0 &&
      HK_ADD_RELAXED(slabs_unread, 1) + 1 <= HK_MEM_UNREAD_SLABS)
    return false;
  return hk_mem_limited();
}

/* when the first large block was taken unread (ns; 0: none yet) */
static uint64_t large_unread_ns;
static bool large_window_over(void) {
  uint64_t first = HK_LOAD_RELAXED(large_unread_ns);
  return first != 0 && hk_os_now_ns() - first >= HK_MEM_UNREAD_NS;
}
bool hk_mem_limited_large(void) {
  if (HK_LIKELY(HK_LOAD_RELAXED(hk_mem_ready))) return HK_LOAD_RELAXED(hk_mem_on) != 0;
  hk_knobs_init();
  if (HK_LOAD_RELAXED(hk_knobs.memory_limit) <= 0 &&
      HK_LOAD_RELAXED(hk_knobs.memory_limit_action) != HK_MEM_ACTION_FAIL) {
    if (!HK_LOAD_RELAXED(large_unread_ns)) {
      uint64_t zero = 0;  /* racing first blocks: the first one's time stands */
      HK_CAS_RELAXED(large_unread_ns, &zero, hk_os_now_ns() | 1);
      return false;
    }
    if (!large_window_over()) return false;
  }
  return hk_mem_limited();
}

static size_t estimate(void) { return HK_LOAD_RELAXED(rss_read) + HK_LOAD_RELAXED(charged); }

/* Soft pressure starts at the soft limit, or at three quarters of a hard
 * limit that comes alone; hard pressure a sixteenth below the hard limit. */
static size_t soft_line(void) {
  size_t hard = HK_LOAD_RELAXED(limit_hard), soft = HK_LOAD_RELAXED(limit_soft);
  return soft ? soft : hard - hard / 4;
}

static unsigned pressure_of(size_t est) {
  size_t hard = HK_LOAD_RELAXED(limit_hard), soft = soft_line();
  if (hard && est >= hard - hard / 16) return HK_MEM_HARD;
  if (soft && est >= soft) return HK_MEM_SOFT;
  return HK_MEM_NONE;
}

unsigned hk_mem_pressure(void) {
  if (!HK_LOAD_RELAXED(hk_mem_on)) return HK_MEM_NONE;
  return pressure_of(estimate());
}

/* Soft: an eighth of the delay, a quarter of the cap; hard: a 64th of the
 * delay (not 0: every slow path would purge; the gate gives back what the
 * hard limit needs at once) and no cache at all. */
long hk_mem_scale_delay(long ms) {
  unsigned p = hk_mem_pressure();
  return p == HK_MEM_HARD ? ms / 64 : p == HK_MEM_SOFT ? ms / 8 : ms;
}
long hk_mem_scale_cap(long cap) {
  unsigned p = hk_mem_pressure();
  return p == HK_MEM_HARD ? 0 : p == HK_MEM_SOFT ? cap / 4 : cap;
}

void hk_mem_tick(void) {
  /* limits nobody has asked for yet are not read here: a small program's
   * purge clock would read them for nothing (hk_mem_limited_slab); large
   * blocks taken unread have them read once their window has passed */
  if (!HK_LOAD_RELAXED(hk_mem_ready)) {
    if (!large_window_over()) return;
    hk_mem_init();
  }
  uint64_t now = hk_os_now_ms();
  /* the cgroup may be given a limit later (a container resized): re-read
   * it unless the knob set one */
  if (HK_LOAD_RELAXED(limit_source) != HK_MEM_SRC_KNOB && hk_gate_pass(&cgroup_gate, now, CGROUP_EVERY_MS))
    read_cgroup_now();
  /* the reading sets the next deadline, by the pressure it finds */
  if (HK_LOAD_RELAXED(hk_mem_on) && hk_gate_pass(&rss_gate, now, RSS_EVERY_PRESSED_MS)) read_rss(now);
}

/* The gate keeps a sixteenth of the hard limit in reserve: the pages that
 * slabs taken before the last reading carve later are in no estimate (a
 * slab is charged when it is taken; the reading then sees only what was
 * touched). Without it the peak went past the limit (test_memlimit's
 * cycle). */
static bool over_hard(size_t bytes) {
  size_t hard = HK_LOAD_RELAXED(limit_hard);
  return hard && estimate() + bytes > hard - hard / 16;
}

bool hk_mem_admit(size_t bytes, void (*relieve)(void *), void *arg) {
  if (!hk_mem_limited()) return true;
  /* Charges of memory reused in place (a large block on free span pages)
   * pile up between readings: past the soft line the estimate is read
   * again, or the pressure would be false (a program reusing large blocks
   * under a limit purged far more than it had to, and ran slower). At most once a
   * millisecond: live data past the limit would read it at every slab. */
  if (HK_UNLIKELY(estimate() + bytes >= soft_line())) {
    uint64_t now = hk_os_now_ms();
    if (now != HK_LOAD_RELAXED(last_read_ms)) read_rss(now);
  }
  if (HK_UNLIKELY(over_hard(bytes))) {
    uint64_t now = hk_os_now_ms();
    /* nor, with keep, is a relief that left it over tried again within
     * 10 ms; fail purges before every refusal (the program may have freed
     * what the last one could not) */
    bool fail = HK_LOAD_RELAXED(hk_knobs.memory_limit_action) == HK_MEM_ACTION_FAIL;
    if (over_hard(bytes) && (fail || now - HK_LOAD_RELAXED(relief_fruitless_ms) >= RSS_EVERY_PRESSED_MS)) {
      HK_ADD_RELAXED(n_reliefs, 1);
      int saved = errno;
      if (relieve) relieve(arg);
      read_rss(hk_os_now_ms());
      void (*hook)(void) = HK_LOAD_RELAXED(purge_hook);
      if (hook && over_hard(bytes)) {
        hook();
        read_rss(hk_os_now_ms());
      }
      errno = saved;
      if (over_hard(bytes)) HK_STORE_RELAXED(relief_fruitless_ms, hk_os_now_ms());
    }
    if (over_hard(bytes)) {
      HK_ADD_RELAXED(n_over, 1);
      if (fail) {
        HK_ADD_RELAXED(n_refused, 1);
        return false;
      }
    }
  }
  HK_ADD_RELAXED(charged, bytes);
  return true;
}

void hk_mem_info(hk_mem_info_t *o) {
  hk_mem_limited();  /* read the limits if nobody has yet */
  o->hard = HK_LOAD_RELAXED(limit_hard);
  o->soft = HK_LOAD_RELAXED(limit_soft);
  o->source = HK_LOAD_RELAXED(limit_source);
  o->action = (unsigned)HK_LOAD_RELAXED(hk_knobs.memory_limit_action);
  o->pressure = hk_mem_pressure();
  o->resident = HK_LOAD_RELAXED(hk_mem_on) ? estimate() : 0;
  o->over = HK_LOAD_RELAXED(n_over);
  o->refused = HK_LOAD_RELAXED(n_refused);
  o->reliefs = HK_LOAD_RELAXED(n_reliefs);
}

const char *hk_mem_source_name(unsigned source) {
  static const char *const names[] = { "none", "knob", "cgroup v2", "cgroup v1" };
  return source < 4 ? names[source] : "none";
}
