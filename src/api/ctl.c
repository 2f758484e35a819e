/* The control API (hakmem.h: hak_ctl_get, hak_ctl_set, hak_ctl) and the
 * mallopt() mapping: reads every knob's value in force, changes the few
 * that may change at run time, and acts (purge, flush, stats).
 * docs/ENV_VARS.md, "Changing knobs at run time". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../include/hakmem.h"
#include "policy/bg.h"
#include "api/ctl.h"
#include "heap/heap_slabs.h"
#include "base/knobs.h"
#include "mem/large.h"
#include "policy/learner.h"
#include "base/report.h"
#include "backend/superslab.h"

/* Which knobs may change at run time, and what a change does beyond
 * storing the value, are columns of the knob table (knobs.c): here only the
 * actions. A settable knob is read where it is used, with a relaxed load (a
 * plain move), so a change takes effect at the next read. */

static int fail(int e) {
  errno = e;
  return -1;
}

HK_EXPORT int hak_ctl_get(const char *name, long *value) {
  if (!name || !value) return fail(EINVAL);
  hk_heap_start();  /* the knobs are read */
  hk_knob_info_t k;
  if (!hk_knob_find(name, &k)) return fail(ENOENT);
  if (!k.field) return fail(EINVAL);  /* a string */
  switch (k.act) {  /* where the value in force lives, when not in the knob */
  case HK_KNOB_ACT_PURGE_DELAY: *value = hk_ss_purge_delay_ms(); break;
  case HK_KNOB_ACT_LARGE_MB: *value = hk_large_cap(HK_LARGE_CAP_MB); break;
  case HK_KNOB_ACT_LARGE_COUNT: *value = hk_large_cap(HK_LARGE_CAP_COUNT); break;
  case HK_KNOB_ACT_BG: *value = hk_bg_running(); break;
  default: *value = k.value; break;
  }
  return 0;
}

HK_EXPORT int hak_ctl_set(const char *name, long value) {
  if (!name) return fail(EINVAL);
  hk_heap_start();
  hk_knob_info_t k;
  if (!hk_knob_find(name, &k)) return fail(ENOENT);
  if (!k.runtime) return fail(EPERM);   /* read once at start-up */
  if (!k.field) return fail(EINVAL);    /* a string: not through a long */
  if (value < k.min || value > k.max) return fail(ERANGE);
  HK_STORE_RELAXED(*k.field, value);
  switch (k.act) {
  case HK_KNOB_ACT_PURGE_DELAY:
    hk_ss_pin_purge_delay_ms(value);
    hk_large_pin_cap(HK_LARGE_CAP_DELAY, value);
    hk_bg_wake();  /* its sleep was the old delay */
    break;
  case HK_KNOB_ACT_LARGE_MB: hk_large_pin_cap(HK_LARGE_CAP_MB, value); break;
  case HK_KNOB_ACT_LARGE_COUNT: hk_large_pin_cap(HK_LARGE_CAP_COUNT, value); break;
  case HK_KNOB_ACT_STATS:
    HK_STORE_RELAXED(hk_heap_counting, value != 0 || HK_LOAD_RELAXED(hk_knobs.stats_interval_ms) != 0);
    /* this thread's blocks freed from now on are counted when handed out
     * again; another thread's, from its next slow path on (refill.c) */
    if (value) hk_heap_aside_current(hk_tls_heap);
    break;
  case HK_KNOB_ACT_ABORT: hk_report_set_abort(value != 0); break;
  case HK_KNOB_ACT_LEARN:
    if (value) {  /* its hooks, if it was off at start (they stay: off, they return) */
      hk_heap_set_refill_hook(hk_learner_small_tick);
      hk_large_set_alloc_hook(hk_learner_slow_tick);
    }
    break;
  default:  /* read where it is used */
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
