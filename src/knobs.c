#include "knobs.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

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
  K("HAKMEM_BACKGROUND_PURGE",  background_purge,  0, 1,       0, 0, 0),
};
#undef K

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
static void knobs_init_special(void) {
  const char *s = getenv("HAKMEM_STATS");
  if (s) {
    if (str_eq(s, "0") || str_eq(s, "")) hk_knobs.stats = 0;
    else if (str_eq(s, "1") || str_eq(s, "text")) hk_knobs.stats = 1;
    else if (str_eq(s, "json")) hk_knobs.stats = 2;
    else hk_message("hakmem: warning: HAKMEM_STATS=\"%s\" is not 0, 1 or json; using 0\n", s);
  }
  s = getenv("HAKMEM_STATS_FILE");
  if (s && *s) {
    size_t n = 0;
    while (s[n] && n + 1 < sizeof hk_knobs.stats_file) { hk_knobs.stats_file[n] = s[n]; n++; }
    hk_knobs.stats_file[n] = 0;
    if (s[n]) hk_message("hakmem: warning: HAKMEM_STATS_FILE is longer than %zu bytes; truncated\n",
                         sizeof hk_knobs.stats_file - 1);
  }
}

static void knobs_read(void) {
  hk_knobs.profile = HK_PROFILE_BALANCED;
  const char *p = getenv("HAKMEM_PROFILE");
  if (p) {
    bool ok = false;
    for (long i = 0; i < 3; i++)
      if (str_eq(p, profile_names[i])) { hk_knobs.profile = i; ok = true; }
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
    } else {
      hk_message("hakmem: warning: %s=\"%s\" is not an integer in [%ld, %ld]; using %ld\n",
                 k->name, s, k->min, k->max, *k->value);
    }
  }
  knobs_init_special();
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
