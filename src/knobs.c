#include "knobs.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "report.h"

hk_knobs_t hk_knobs;

typedef struct {
  const char *name;
  long *value;
  long min, max;
  long def[3];  /* fast, balanced, lowmem */
} hk_knob_def_t;

#define K(name, field, lo, hi, fast, bal, low) { name, &hk_knobs.field, lo, hi, { fast, bal, low } }

/* The one table. docs/ENV_VARS.md documents each row. */
static const hk_knob_def_t knob_table[] = {
  K("HAKMEM_PURGE_DELAY_MS",    purge_delay_ms,    0, 3600000, 5000, 1000, 100),
  K("HAKMEM_SS_CACHE",          ss_cache,          0, 4096,    1024, 256, 16),
  K("HAKMEM_LARGE_CACHE_MB",    large_cache_mb,    0, 65536,   256, 64, 8),
  K("HAKMEM_LARGE_CACHE_COUNT", large_cache_count, 0, 1024,   256, 128, 8),
  K("HAKMEM_CARVE_KB",          carve_kb,          4, 64,      64, 16, 4),
  K("HAKMEM_HEAP_SPARE",        heap_spare,        0, 16,      2, 1, 0),
  K("HAKMEM_VERBOSE",           verbose,           0, 2,       0, 0, 0),
  K("HAKMEM_ABORT_ON_INVALID",  abort_on_invalid,  0, 1,       1, 1, 1),
  K("HAKMEM_FREE_FILL",         free_fill,         0, 2,       0, 0, 0),
  K("HAKMEM_CLOSE_FREED_KB",    close_freed_kb,    0, 131072,  256, 256, 256),
  K("HAKMEM_CHECK_EVERY",       check_every,       0, 1000000, 256, 256, 256),
  K("HAKMEM_STATS_INTERVAL",    stats_interval_ms, 0, 86400000, 0, 0, 0),
  K("HAKMEM_LEARN",             learn,             0, 1,       0, 0, 0),
  K("HAKMEM_LEARN_LOG",         learn_log,         0, 1,       0, 0, 0),
  K("HAKMEM_LEARN_EPOCH",       learn_epoch,       16, 1000000, 256, 256, 256),
  K("HAKMEM_TARGET_HIT_LARGE",  target_hit_large,  0, 1000,    900, 900, 800),
  K("HAKMEM_CAP_STEP_LARGE",    cap_step_large,    1, 256,     16, 8, 4),
  K("HAKMEM_CAP_MAX_LARGE",     cap_max_large,     1, 4096,    1024, 256, 64),
  K("HAKMEM_CAP_MAX_LARGE_MB",  cap_max_large_mb,  1, 65536,   2048, 512, 64),
  K("HAKMEM_TARGET_HIT_PURGE",  target_hit_purge,  0, 1000,    900, 900, 750),
  K("HAKMEM_CAP_MAX_PURGE_MS",  cap_max_purge_ms,  1, 3600000, 60000, 30000, 5000),
  K("HAKMEM_CAP_MIN_PURGE_MS",  cap_min_purge_ms,  0, 3600000, 100, 50, 10),
  K("HAKMEM_SMALL_IDLE_EPOCHS", small_idle_epochs, 1, 1000000, 8, 2, 1),
  K("HAKMEM_CAP_MAX_SMALL_IDLE", cap_max_small_idle, 1, 1000000, 256, 64, 16),
  K("HAKMEM_PROF",              prof,              0, 1,       0, 0, 0),
  K("HAKMEM_PROF_SAMPLE",       prof_sample,       1, 1L << 40, 524288, 524288, 524288),
  K("HAKMEM_PROF_INTERVAL",     prof_interval,     0, 1L << 50, 0, 0, 0),
  K("HAKMEM_PROF_LEAKS",        prof_leaks,        0, 1,       0, 0, 0),
  K("HAKMEM_PROF_SEED",         prof_seed,         0, 0x7fffffffffffffffL, 0, 0, 0),
  K("HAKMEM_BACKGROUND_PURGE",  background_purge,  0, 1,       0, 0, 0),
};
#undef K

#define NKNOBS (sizeof knob_table / sizeof knob_table[0])
/* 1: the environment set the row's value; 2: it gave a bad one (default used) */
static unsigned char knob_src[NKNOBS];
static unsigned char profile_src, stats_src, stats_file_src, prof_file_src;

static bool str_eq(const char *a, const char *b) {
  while (*a && *a == *b) { a++; b++; }
  return *a == *b;
}

/* Decimal, no locale, no allocation; false on anything malformed. */
static bool parse_long(const char *s, long *out) {
  long v = 0;
  if (!*s) return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > (0x7fffffffffffffffL - (*s - '0')) / 10) return false;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return true;
}

static const char *profile_names[3] = { "fast", "balanced", "lowmem" };

/* Knobs that are not plain integers. */
static void copy_path(const char *name, char *to, size_t size) {
  const char *s = getenv(name);
  if (!s || !*s) return;
  size_t n = 0;
  while (s[n] && n + 1 < size) { to[n] = s[n]; n++; }
  to[n] = 0;
  if (s[n]) hk_message("hakmem: warning: %s is longer than %zu bytes; truncated\n", name, size - 1);
}

static void knobs_init_special(void) {
  copy_path("HAKMEM_PROF_FILE", hk_knobs.prof_file, sizeof hk_knobs.prof_file);
  prof_file_src = hk_knobs.prof_file[0] != 0;
  const char *s = getenv("HAKMEM_STATS");
  if (s) {
    if (str_eq(s, "0") || str_eq(s, "")) hk_knobs.stats = 0;
    else if (str_eq(s, "1") || str_eq(s, "text")) hk_knobs.stats = 1;
    else if (str_eq(s, "json")) hk_knobs.stats = 2;
    if (hk_knobs.stats || str_eq(s, "0") || str_eq(s, "")) stats_src = 1;
    else stats_src = 2, hk_message("hakmem: warning: HAKMEM_STATS=\"%s\" is not 0, 1 or json; using 0\n", s);
  }
  s = getenv("HAKMEM_STATS_FILE");
  if (s && *s) {
    size_t n = 0;
    while (s[n] && n + 1 < sizeof hk_knobs.stats_file) { hk_knobs.stats_file[n] = s[n]; n++; }
    hk_knobs.stats_file[n] = 0;
    stats_file_src = 1;
    if (s[n]) hk_message("hakmem: warning: HAKMEM_STATS_FILE is longer than %zu bytes; truncated\n",
                         sizeof hk_knobs.stats_file - 1);
  }
}

/* ---- names: a HAKMEM_* variable that is no knob is warned about ----------
 * Variables of hakmem's own scripts and tests that are not knobs (they are
 * read by the launcher, the test suite or the examples, never by the
 * library). docs/ENV_VARS.md, "Variables that are not knobs", lists them. */
static const char *const non_knob_prefix = "HAKMEM_TEST_";
static const char *const non_knob_names[] = {
  "HAKMEM_LIB",              /* tools/hakmem: the library to preload      */
  "HAKMEM_PRELOAD_LIB",      /* tests/preload_programs.sh                 */
  "HAKMEM_LINK",             /* examples/rust: static or dylib            */
  "HAKMEM_LIB_DIR",          /* examples/rust: where libhakmem is         */
  "HAKMEM_SECURITY_MATRIX",  /* tests/security.sh                         */
  "HAKMEM_SECURITY_SCUDO",   /* tests/security.sh                         */
  "HAKMEM_SECURITY_PEER",    /* tests/security: the peer allocator        */
  "HAKMEM_SCUDO_LIB",        /* tests/security/peer.sh                    */
  "HAKMEM_PROF_DIR",         /* tools/hakmem prof: where its files go     */
};
/* knobs outside the table (not plain integers) */
static const char *const special_names[] = { "HAKMEM_PROFILE", "HAKMEM_STATS", "HAKMEM_STATS_FILE",
                                              "HAKMEM_PROF_FILE" };

#define NAME_MAX_CMP 64

/* Edit distance (insert, delete, substitute) of two short strings, on the
 * stack: no allocation at start-up. Longer strings are cut at NAME_MAX_CMP. */
static unsigned edit_distance(const char *a, size_t na, const char *b, size_t nb) {
  unsigned row[NAME_MAX_CMP + 1];
  if (na > NAME_MAX_CMP) na = NAME_MAX_CMP;
  if (nb > NAME_MAX_CMP) nb = NAME_MAX_CMP;
  for (size_t j = 0; j <= nb; j++) row[j] = (unsigned)j;
  for (size_t i = 1; i <= na; i++) {
    unsigned diag = row[0];
    row[0] = (unsigned)i;
    for (size_t j = 1; j <= nb; j++) {
      unsigned up = row[j];
      unsigned best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

static size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

/* true when name (n bytes, up to '=') is exactly str */
static bool name_is(const char *name, size_t n, const char *str) {
  size_t i = 0;
  for (; i < n; i++)
    if (str[i] != name[i]) return false;
  return str[i] == 0;
}

static bool name_known(const char *name, size_t n) {
  size_t np = str_len(non_knob_prefix);
  if (n > np) {
    bool pre = true;
    for (size_t i = 0; i < np; i++) pre = pre && name[i] == non_knob_prefix[i];
    if (pre) return true;
  }
  for (size_t i = 0; i < NKNOBS; i++)
    if (name_is(name, n, knob_table[i].name)) return true;
  for (size_t i = 0; i < sizeof special_names / sizeof *special_names; i++)
    if (name_is(name, n, special_names[i])) return true;
  for (size_t i = 0; i < sizeof non_knob_names / sizeof *non_knob_names; i++)
    if (name_is(name, n, non_knob_names[i])) return true;
  return false;
}

const char *hk_knobs_closest(const char *name, size_t n) {
  const char *best = NULL;
  unsigned best_d = ~0u;
  for (size_t i = 0; i < NKNOBS + sizeof special_names / sizeof *special_names; i++) {
    const char *k = i < NKNOBS ? knob_table[i].name : special_names[i - NKNOBS];
    unsigned d = edit_distance(name, n, k, str_len(k));
    if (d < best_d) { best_d = d; best = k; }
  }
  /* a suggestion only when it is near: 3 edits, or a third of the name */
  size_t tail = n > 7 ? n - 7 : n;
  if (best_d <= 3 || best_d * 3 <= tail) return best;
  return NULL;
}

/* Every HAKMEM_* variable of the environment that hakmem does not know is
 * named once, with the closest knob. Reads environ in place: no malloc. */
static void knobs_check_names(void) {
  extern char **environ;
  if (!environ) return;
  static const char prefix[] = "HAKMEM_";
  for (char **e = environ; *e; e++) {
    const char *v = *e;
    size_t i = 0;
    while (prefix[i] && v[i] == prefix[i]) i++;
    if (prefix[i]) continue;
    size_t n = 0;
    while (v[n] && v[n] != '=') n++;
    if (name_known(v, n)) continue;
    const char *near = hk_knobs_closest(v, n);
    int shown = n > 200 ? 200 : (int)n;
    if (near)
      hk_message("hakmem: unknown variable %.*s (did you mean %s?)\n", shown, v, near);
    else
      hk_message("hakmem: unknown variable %.*s (no such knob: `hakmem config` lists them)\n",
                 shown, v);
  }
}

/* ---- the configuration, row by row (hakmem config, the stats reports) ---- */

size_t hk_knobs_count(void) { return 4 + NKNOBS; }

static const char *stats_names[3] = { "0", "1", "json" };

/* a path knob's row: its text, unset by default */
static bool path_knob(hk_knob_info_t *o, const char *name, const char *path, unsigned char src) {
  o->name = name;
  o->text = path;
  o->def_text = "";
  o->src = src;
  return true;
}

bool hk_knob_get(size_t i, hk_knob_info_t *o) {
  o->text = o->def_text = NULL;
  o->value = o->def = o->min = o->max = 0;
  switch (i) {
  case 0:
    o->name = "HAKMEM_PROFILE";
    o->text = profile_names[hk_knobs.profile];
    o->def_text = profile_names[HK_PROFILE_BALANCED];
    o->src = profile_src;
    return true;
  case 1:
    o->name = "HAKMEM_STATS";
    o->text = stats_names[hk_knobs.stats >= 0 && hk_knobs.stats <= 2 ? hk_knobs.stats : 0];
    o->def_text = "0";
    o->src = stats_src;
    return true;
  case 2: return path_knob(o, "HAKMEM_STATS_FILE", hk_knobs.stats_file, stats_file_src);
  case 3: return path_knob(o, "HAKMEM_PROF_FILE", hk_knobs.prof_file, prof_file_src);
  }
  i -= 4;
  if (i >= NKNOBS) return false;
  const hk_knob_def_t *k = &knob_table[i];
  o->name = k->name;
  o->value = *k->value;
  o->def = k->def[hk_knobs.profile];
  o->min = k->min;
  o->max = k->max;
  o->src = knob_src[i];
  return true;
}

bool hk_knob_is_default(const hk_knob_info_t *k) {
  if (k->text) return str_eq(k->text, k->def_text);
  return k->value == k->def;
}

/* A line writer for the configuration: fd, no malloc. */
typedef struct { int fd; size_t n; char buf[480]; } line_t;

static void line_put(line_t *l, const char *s) {
  while (*s) {
    if (l->n + 1 >= sizeof l->buf) {
      l->buf[l->n] = 0;
      hk_message_fd(l->fd, "%s", l->buf);
      l->n = 0;
    }
    l->buf[l->n++] = *s++;
  }
}

static void line_num(line_t *l, long v) {
  char d[24];
  int i = 23;
  d[i] = 0;
  bool neg = v < 0;
  unsigned long u = neg ? 0UL - (unsigned long)v : (unsigned long)v;
  do { d[--i] = (char)('0' + u % 10); u /= 10; } while (u);
  if (neg) d[--i] = '-';
  line_put(l, d + i);
}

static void line_end(line_t *l) {
  line_put(l, "\n");
  l->buf[l->n] = 0;
  hk_message_fd(l->fd, "%s", l->buf);
  l->n = 0;
}

static void line_value(line_t *l, const hk_knob_info_t *k, bool def) {
  if (k->text) line_put(l, def ? k->def_text : k->text);
  else line_num(l, def ? k->def : k->value);
}

/* all: every knob, one a line ("hakmem: config: NAME VALUE (default|set…)");
 * otherwise one line with the profile and the knobs that differ from it. */
void hk_knobs_print(int fd, bool all) {
  line_t l = { fd, 0, {0} };
  hk_knob_info_t k;
  if (!all) {
    line_put(&l, "hakmem: config: profile ");
    line_put(&l, profile_names[hk_knobs.profile]);
    bool any = false;
    for (size_t i = 1; hk_knob_get(i, &k); i++) {
      if (hk_knob_is_default(&k)) continue;
      line_put(&l, any ? ", " : "; ");
      line_put(&l, k.name);
      line_put(&l, "=");
      line_value(&l, &k, false);
      any = true;
    }
    if (!any) line_put(&l, "; every knob at its default");
    line_end(&l);
    return;
  }
  for (size_t i = 0; hk_knob_get(i, &k); i++) {
    line_put(&l, "hakmem: config: ");
    line_put(&l, k.name);
    for (size_t pad = str_len(k.name); pad < 27; pad++) line_put(&l, " ");
    size_t start = l.n;
    line_value(&l, &k, false);
    if (k.text && !k.text[0]) line_put(&l, "(unset)");
    while (l.n >= start && l.n - start < 9) line_put(&l, " ");  /* a column */
    bool def = hk_knob_is_default(&k);
    if (k.src == 2) {
      line_put(&l, " (default: the value given is invalid)");
    } else if (def) {
      line_put(&l, k.src ? " (set, = default)" : " (default)");
    } else {
      line_put(&l, " (set; default ");
      line_value(&l, &k, true);
      if (k.text && !k.def_text[0]) line_put(&l, "unset");
      line_put(&l, ")");
    }
    if (!k.text) {
      line_put(&l, "  [");
      line_num(&l, k.min);
      line_put(&l, ", ");
      line_num(&l, k.max);
      line_put(&l, "]");
    }
    line_end(&l);
  }
}

static void knobs_read(void) {
  hk_knobs.profile = HK_PROFILE_BALANCED;
  const char *p = getenv("HAKMEM_PROFILE");
  if (p) {
    bool ok = false;
    for (long i = 0; i < 3; i++)
      if (str_eq(p, profile_names[i])) { hk_knobs.profile = i; ok = true; }
    profile_src = ok ? 1 : 2;
    if (!ok) hk_message("hakmem: warning: HAKMEM_PROFILE=\"%s\" is not fast, balanced or lowmem; "
                        "using balanced\n", p);
  }
  for (size_t i = 0; i < sizeof knob_table / sizeof knob_table[0]; i++) {
    const hk_knob_def_t *k = &knob_table[i];
    *k->value = k->def[hk_knobs.profile];
    const char *s = getenv(k->name);
    if (!s) continue;
    long v;
    if (parse_long(s, &v) && v >= k->min && v <= k->max) {
      *k->value = v;
      knob_src[i] = 1;
    } else {
      knob_src[i] = 2;
      hk_message("hakmem: warning: %s=\"%s\" is not an integer in [%ld, %ld]; using %ld\n",
                 k->name, s, k->min, k->max, *k->value);
    }
  }
  knobs_init_special();
  knobs_check_names();
  hk_report_set_abort(hk_knobs.abort_on_invalid != 0);
}

/* Once per process, by whoever comes first (the first heap, or init.c's
 * constructor); a second thread waits for the first. Reading the knobs
 * does not allocate, so no malloc comes back in. */
void hk_knobs_init(void) {
  static atomic_int state;  /* 0 no, 1 reading, 2 done */
  if (HK_LIKELY(atomic_load_explicit(&state, memory_order_acquire) == 2)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&state, &expected, 1)) {
    knobs_read();
    atomic_store_explicit(&state, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&state, memory_order_acquire) != 2) sched_yield();
}

const char *hk_profile_name(void) { return profile_names[hk_knobs.profile]; }

/* The row of a knob by name (the HAKMEM_ prefix may be left out), for the
 * control API (ctl.c): its value's address and range. The string knobs
 * (HAKMEM_PROFILE, HAKMEM_STATS, HAKMEM_STATS_FILE) have no row. */
bool hk_knob_lookup(const char *name, long **value, long *min, long *max) {
  static const char prefix[] = "HAKMEM_";
  for (size_t i = 0; i < sizeof knob_table / sizeof knob_table[0]; i++) {
    const hk_knob_def_t *k = &knob_table[i];
    if (!str_eq(name, k->name) && !str_eq(name, k->name + sizeof prefix - 1)) continue;
    *value = k->value;
    *min = k->min;
    *max = k->max;
    return true;
  }
  return false;
}
