/* The control API (hakmem.h: hak_ctl_get, hak_ctl_set, hak_ctl) and the
 * mallopt() mapping: reads every knob's value in force, changes the few
 * that may change at run time, and acts (purge, flush, stats).
 * docs/ENV_VARS.md, "Changing knobs at run time". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../include/hakmem.h"
#include "bg.h"
#include "ctl.h"
#include "heap_slabs.h"
#include "knobs.h"
#include "large.h"
#include "learner.h"
#include "report.h"
#include "superslab.h"

/* The knobs settable at run time: each is read where it is used, with a
 * relaxed load (a plain move), so a change takes effect at the next read. */
enum { C_PURGE, C_SS_CACHE, C_LARGE_MB, C_LARGE_COUNT, C_HEAP_SPARE, C_STATS, C_LEARN, C_LEARN_LOG,
       C_ABORT, C_NONE };
static const struct { const char *name; int id; } settable[] = {
  { "PURGE_DELAY_MS", C_PURGE },       { "SS_CACHE", C_SS_CACHE },
  { "LARGE_CACHE_MB", C_LARGE_MB },    { "LARGE_CACHE_COUNT", C_LARGE_COUNT },
  { "HEAP_SPARE", C_HEAP_SPARE },      { "STATS", C_STATS },
  { "LEARN", C_LEARN },                { "LEARN_LOG", C_LEARN_LOG },
  { "ABORT_ON_INVALID", C_ABORT },
};

static const char *short_name(const char *name) {
  return strncmp(name, "HAKMEM_", 7) == 0 ? name + 7 : name;
}

static int settable_id(const char *name) {
  const char *n = short_name(name);
  for (size_t i = 0; i < sizeof settable / sizeof settable[0]; i++)
    if (strcmp(n, settable[i].name) == 0) return settable[i].id;
  return C_NONE;
}

static int fail(int e) {
  errno = e;
  return -1;
}

HK_EXPORT int hak_ctl_get(const char *name, long *value) {
  if (!name || !value) return fail(EINVAL);
  hk_heap_start();  /* the knobs are read */
  const char *n = short_name(name);
  long *field, lo, hi;
  if (strcmp(n, "PROFILE") == 0) *value = hk_knobs.profile;
  else if (strcmp(n, "STATS") == 0) *value = HK_LOAD_RELAXED(hk_knobs.stats);
  else if (strcmp(n, "STATS_FILE") == 0 || strcmp(n, "PROF_FILE") == 0) return fail(EINVAL);  /* a string */
  else if (strcmp(n, "PURGE_DELAY_MS") == 0) *value = hk_ss_purge_delay_ms();
  else if (strcmp(n, "LARGE_CACHE_MB") == 0) *value = hk_large_cap(HK_LARGE_CAP_MB);
  else if (strcmp(n, "LARGE_CACHE_COUNT") == 0) *value = hk_large_cap(HK_LARGE_CAP_COUNT);
  else if (strcmp(n, "BACKGROUND_PURGE") == 0) *value = hk_bg_running();
  else if (hk_knob_lookup(name, &field, &lo, &hi)) *value = HK_LOAD_RELAXED(*field);
  else return fail(ENOENT);
  return 0;
}

HK_EXPORT int hak_ctl_set(const char *name, long value) {
  if (!name) return fail(EINVAL);
  hk_heap_start();
  const char *n = short_name(name);
  long *field = NULL, lo = 0, hi = 2;
  bool known = hk_knob_lookup(name, &field, &lo, &hi);
  if (!known && strcmp(n, "STATS") != 0 && strcmp(n, "PROFILE") != 0 && strcmp(n, "STATS_FILE") != 0 &&
      strcmp(n, "PROF_FILE") != 0)
    return fail(ENOENT);
  int id = settable_id(name);
  if (id == C_NONE) return fail(EPERM);   /* read once at start-up */
  if (value < lo || value > hi) return fail(ERANGE);
  switch (id) {
  case C_PURGE:
    HK_STORE_RELAXED(hk_knobs.purge_delay_ms, value);
    hk_ss_pin_purge_delay_ms(value);
    hk_large_pin_cap(HK_LARGE_CAP_DELAY, value);
    hk_bg_wake();  /* its sleep was the old delay */
    break;
  case C_LARGE_MB:
    HK_STORE_RELAXED(hk_knobs.large_cache_mb, value);
    hk_large_pin_cap(HK_LARGE_CAP_MB, value);
    break;
  case C_LARGE_COUNT:
    HK_STORE_RELAXED(hk_knobs.large_cache_count, value);
    hk_large_pin_cap(HK_LARGE_CAP_COUNT, value);
    break;
  case C_STATS:
    HK_STORE_RELAXED(hk_knobs.stats, value);
    HK_STORE_RELAXED(hk_heap_counting, value != 0 || HK_LOAD_RELAXED(hk_knobs.stats_interval_ms) != 0);
    break;
  case C_ABORT:
    HK_STORE_RELAXED(*field, value);
    hk_report_set_abort(value != 0);
    break;
  case C_LEARN:
    HK_STORE_RELAXED(*field, value);
    if (value) {  /* its hooks, if it was off at start (they stay: off, they return) */
      hk_heap_set_refill_hook(hk_learner_small_tick);
      hk_large_set_alloc_hook(hk_learner_slow_tick);
    }
    break;
  default:  /* SS_CACHE, HEAP_SPARE, LEARN_LOG: read where used */
    HK_STORE_RELAXED(*field, value);
    break;
  }
  return 0;
}

HK_EXPORT int hak_ctl(const char *action) {
  if (!action) return fail(EINVAL);
  hk_heap_start();
  if (strcmp(action, "purge") == 0) {
    hk_heap_trim(hk_tls_heap);
    hk_bg_tick(true);
  } else if (strcmp(action, "flush") == 0) {
    hk_heap_trim(hk_tls_heap);
  } else if (strcmp(action, "stats") == 0) {
    hak_stats_print(stderr);
  } else {
    return fail(EINVAL);
  }
  return 0;
}

/* mallopt(): glibc's parameters (malloc.h values; docs/ENV_VARS.md lists
 * what each does here). 1 accepted, 0 not. */
int hk_ctl_mallopt(int param, int value) {
  switch (param) {
  case -5:  /* M_CHECK_ACTION: bit 1 asks to abort on a detected error */
    return hak_ctl_set("ABORT_ON_INVALID", (value & 2) ? 1 : 0) == 0;
  case 1:   /* M_MXFAST */
  case -1:  /* M_TRIM_THRESHOLD */
  case -2:  /* M_TOP_PAD */
  case -3:  /* M_MMAP_THRESHOLD */
  case -4:  /* M_MMAP_MAX */
  case -6:  /* M_PERTURB */
  case -7:  /* M_ARENA_TEST */
  case -8:  /* M_ARENA_MAX */
    return 1;  /* accepted, nothing to change: see docs/ENV_VARS.md */
  default:
    return 0;
  }
}
