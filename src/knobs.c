#include "knobs.h"

#include <stdlib.h>

hk_knobs_t hk_knobs = {
  .purge_delay_ms = 1000,
  .ss_cache = 256,
  .large_cache_mb = 64,
  .large_cache_count = 32,
  .verbose = 0,
  .abort_on_invalid = 1,
  .free_fill = 0,
  .stats = 0,
  .stats_interval_ms = 0,
};

typedef struct {
  const char *name;
  long *value;
  long min, max;
} hk_knob_def_t;

/* The one table. docs/ENV_VARS.md documents each row. */
static const hk_knob_def_t knob_table[] = {
  { "HAKMEM_PURGE_DELAY_MS",    &hk_knobs.purge_delay_ms,    0, 3600000 },
  { "HAKMEM_SS_CACHE",          &hk_knobs.ss_cache,          0, 4096 },
  { "HAKMEM_LARGE_CACHE_MB",    &hk_knobs.large_cache_mb,    0, 65536 },
  { "HAKMEM_LARGE_CACHE_COUNT", &hk_knobs.large_cache_count, 0, 1024 },
  { "HAKMEM_VERBOSE",           &hk_knobs.verbose,           0, 2 },
  { "HAKMEM_ABORT_ON_INVALID",  &hk_knobs.abort_on_invalid,  0, 1 },
  { "HAKMEM_FREE_FILL",         &hk_knobs.free_fill,         0, 2 },
  { "HAKMEM_STATS_INTERVAL",    &hk_knobs.stats_interval_ms, 0, 86400000 },
};

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

static bool str_eq(const char *a, const char *b) {
  while (*a && *a == *b) { a++; b++; }
  return *a == *b;
}

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

void hk_knobs_init(void) {
  knobs_init_special();
  for (size_t i = 0; i < sizeof knob_table / sizeof knob_table[0]; i++) {
    const hk_knob_def_t *k = &knob_table[i];
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
}
